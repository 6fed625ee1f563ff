//! Floating-point draws that are never released as-is.
//!
//! These serve mechanisms whose output is a *selection* or that post-process the draw before
//! release (e.g. Gumbel-max selection in the exponential mechanism, or a Gamma-norm perturbation
//! vector that the caller snaps to a grid). Floating-point caveat (Mironov 2012): the low-order bits
//! of a float sample are not exactly distributed; a mechanism that releases a real number built from
//! these draws must document how it handles that (dpcore's released Laplace/Gaussian noise uses the
//! exact samplers of [`super::exact`] instead).

use ndarray::Array1;
use rand_distr::{Distribution, Gamma, StandardNormal};

use super::rng::{open_unit_f64, DpRng};
use crate::error::{DpError, DpResult};

/// `n` standard exponential variates `-ln U`, `U` uniform on the open unit interval.
pub fn exponential(n: usize, rng: &mut DpRng) -> Array1<f64> {
    Array1::from_shape_fn(n, |_| -open_unit_f64(rng).ln())
}

/// `n` standard Gumbel variates `-ln(-ln U)` (Gumbel-max trick: `argmax_i (s_i + G_i)` is a sample
/// from `softmax(s)`, computed without exponentiating or normalising scores).
pub fn gumbel(n: usize, rng: &mut DpRng) -> Array1<f64> {
    Array1::from_shape_fn(n, |_| -(-open_unit_f64(rng).ln()).ln())
}

/// A vector in ℝ^d with density ∝ `exp(-||b|| / scale)`: its norm is `Gamma(d, scale)` and its
/// direction is uniform on the sphere (normalised standard Gaussian vector).
pub fn gamma_norm_vector(d: usize, scale: f64, rng: &mut DpRng) -> DpResult<Array1<f64>> {
    if d == 0 {
        return Err(DpError::invalid("dim", "must be positive"));
    }
    if !(scale.is_finite() && scale > 0.0) {
        return Err(DpError::invalid(
            "scale",
            format!("must be finite and > 0, got {scale:?}"),
        ));
    }
    let gamma =
        Gamma::new(d as f64, scale).map_err(|e| DpError::invalid("scale", e.to_string()))?;
    let radius: f64 = gamma.sample(rng);
    loop {
        let dir: Array1<f64> = Array1::from_shape_fn(d, |_| StandardNormal.sample(rng));
        let norm = dir.dot(&dir).sqrt();
        if norm > 0.0 {
            return Ok(dir * (radius / norm));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::noise::rng::rng_from_seed;

    #[test]
    fn moments_are_right() {
        let mut rng = rng_from_seed(Some(2));
        let n = 200_000;
        let e = exponential(n, &mut rng);
        assert!((e.mean().unwrap() - 1.0).abs() < 0.02);
        let g = gumbel(n, &mut rng);
        assert!((g.mean().unwrap() - 0.5772156649).abs() < 0.02);
        let d = 5;
        let mut norms = 0.0;
        for _ in 0..20_000 {
            let v = gamma_norm_vector(d, 2.0, &mut rng).unwrap();
            norms += v.dot(&v).sqrt();
        }
        assert!((norms / 20_000.0 - 10.0).abs() < 0.2); // E||b|| = d·scale
        assert!(gamma_norm_vector(0, 1.0, &mut rng).is_err());
        assert!(gamma_norm_vector(2, f64::NAN, &mut rng).is_err());
    }
}

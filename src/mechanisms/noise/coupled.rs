//! Floating-point noise vectors *coupled* to exact continuous ones, with a proven error bound.
//!
//! Objective perturbation and Gamma-norm output perturbation (Chaudhuri et al. 2011) need a noise
//! vector `b ∈ ℝ^d` that enters a computation (an optimisation problem, a sum) before anything is
//! released, so it must be a float. A float sampler has no exactly-known law (Mironov 2012), but
//! the samplers here construct, on the same probability space, an **exact** continuous vector
//! `b_exact` with the target law and a float vector `b` with
//!
//! ```text
//!     ||b − b_exact||₂ ≤ err        (always, not just with high probability)
//! ```
//!
//! and return `(b, err)`. The caller accounts for `err` (dpcore's GLM mechanisms add it to the
//! residual `||θ̂ − θ_exact||` that a small independent exact release then covers), so the
//! floating-point defect is proven to be harmless instead of assumed away.
//!
//! # Constructions
//! * Standard normals: Karney's exact algorithm N gives `g = s·(K + U)` with `U` a lazy uniform.
//!   The float is `ĝ = fl(K + fl(P·2^-64))` where `P` is the 64-digit prefix of `U`, so
//!   `|ĝ − g| ≤ 2^-64 + 2.01·u·|ĝ|` (`u = 2^-53`: the prefix truncation, one rounding of `P`, one
//!   rounding of the sum).
//! * Exponentials: `E = −ln U`, `U` uniform on (0, 1) as an infinite bit string. Its float is
//!   `Û = 2^-(k+1)(1 + f̂)` with `k` the number of leading zero bits and `f̂` the next 52 bits
//!   (truncated), so `1 ≤ U/Û < 1 + 2^-52` and `|ln U − ln Û| < 2^-52`. With the assumption
//!   [`LIBM_LN_ULPS`] on `f64::ln`, `|Ê − E| ≤ 2^-52 + 2·LIBM_LN_ULPS·u·Ê·(1 + 2^-50)`.
//!   (`k ≥ 1022` has probability `2^-1022` and is resampled; that event does not depend on any data.)
//! * Gamma-norm vector, density ∝ `exp(−||b||/scale)`: `b_exact = scale·r·g/||g||` with
//!   `r = Σ_{i≤d} E_i ~ Gamma(d, 1)` and `g` a standard normal vector (uniform direction,
//!   independent of `r`). The float follows the same formula; the error bound propagates the
//!   component bounds through recursive summation (`γ_k = k u/(1 − k u)`), the square root and the
//!   final products with interval arithmetic on the bounds (see [`gamma_norm_vector_coupled`]).
//! * Gaussian vector `N(0, σ² I)`: `b = fl(σ ĝ)`.
//!
//! All error bounds are computed in floating point from the computed quantities and then inflated
//! by `(1 + 64u)` plus the absolute slack of their own rounding, which covers the rounding of the
//! bound computation itself (each bound is a short sum/product of non-negative terms).

use ndarray::Array1;
use rand_core::Rng;

use super::karney::{BitSource, ExactNormal};
use super::rng::DpRng;
use crate::error::{DpError, DpResult};

pub use crate::fp::LIBM_LN_ULPS;
use crate::fp::{gamma_k, UNIT_ROUNDOFF as U};

/// Largest supported dimension: keeps every `γ_k` below 2^-12 so the first-order bounds below
/// are valid with the stated inflation.
pub const MAX_DIM: usize = 1 << 40;

fn check_dim(d: usize) -> DpResult<()> {
    if d == 0 || d > MAX_DIM {
        return Err(DpError::invalid(
            "dim",
            format!("must be in [1, 2^40], got {d}"),
        ));
    }
    Ok(())
}

fn check_scale(scale: f64, name: &'static str) -> DpResult<()> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(DpError::invalid(
            name,
            format!("must be finite and > 0, got {scale:?}"),
        ));
    }
    Ok(())
}

/// Inflate a non-negative bound computed in floating point so that it also covers the rounding
/// of its own computation (a handful of operations, each with relative error ≤ u).
#[inline]
fn inflate(b: f64) -> f64 {
    b * (1.0 + 64.0 * U) + f64::MIN_POSITIVE
}

/// One float standard normal `ĝ` coupled to an exact one `g`: `|ĝ − g| ≤ 2^-64 + 2.01 u |ĝ|`.
#[inline]
fn coupled_normal<R: Rng + ?Sized>(normal: &mut ExactNormal, src: &mut BitSource<'_, R>) -> f64 {
    let draw = normal.sample(src);
    let frac = normal.fraction().approx_f64(src);
    let z = draw.int_part as f64 + frac;
    if draw.negative {
        -z
    } else {
        z
    }
}

/// One float `Û ∈ (0, 1)` coupled to an exact uniform `U` with `1 ≤ U/Û < 1 + 2^-52`.
#[inline]
fn coupled_uniform<R: Rng + ?Sized>(src: &mut BitSource<'_, R>) -> f64 {
    loop {
        // k = number of leading zero digits of U (geometric), capped far beyond any real use.
        let mut k: i32 = 0;
        while k < 1022 && !src.bit() {
            k += 1;
        }
        if k >= 1022 {
            continue; // probability 2^-1022, data-independent
        }
        let f = src.bits(52) as f64 * (1.0 / 4_503_599_627_370_496.0); // 2^-52
                                                                       // 2^-(k+1) (1 + f): exact in binary64 (52-bit mantissa, normal exponent).
        return (1.0 + f) * 2f64.powi(-(k + 1));
    }
}

/// `d` float standard normals and a bound on `||ĝ − g||₂`.
fn normals(d: usize, rng: &mut DpRng) -> (Array1<f64>, f64) {
    let mut src = BitSource::new(rng);
    let mut normal = ExactNormal::new();
    let g: Array1<f64> = Array1::from_shape_fn(d, |_| coupled_normal(&mut normal, &mut src));
    // Σ (2^-64 + 2.01u|ĝ_i|)² ≤ (√d·2^-64 + 2.01u||ĝ||)² by Minkowski.
    let norm_hat = g.dot(&g).sqrt();
    let err = inflate(
        (d as f64).sqrt() * 2f64.powi(-64) + 2.01 * U * norm_hat * (1.0 + gamma_k(d as f64 + 2.0)),
    );
    (g, err)
}

/// A vector `b` with `||b − b_exact||₂ ≤ err`, where `b_exact ~ N(0, σ² I_d)` exactly.
///
/// `b = fl(σ ĝ)` coordinate-wise: `||b − σ g|| ≤ u σ ||ĝ|| + σ ||ĝ − g||`.
pub fn normal_vector_coupled(
    d: usize,
    sigma: f64,
    rng: &mut DpRng,
) -> DpResult<(Array1<f64>, f64)> {
    check_dim(d)?;
    check_scale(sigma, "sigma")?;
    let (g, g_err) = normals(d, rng);
    let norm_hat = g.dot(&g).sqrt() * (1.0 + gamma_k(d as f64 + 2.0));
    let b = g.mapv(|v| sigma * v);
    let err = inflate(U * sigma * norm_hat + sigma * g_err);
    Ok((b, err))
}

/// A vector `b` with `||b − b_exact||₂ ≤ err`, where `b_exact` has density ∝ `exp(−||x||/scale)`
/// on ℝ^d exactly (norm `Gamma(d, scale)`, uniform direction).
///
/// Error propagation (all quantities non-negative; `Ê_i`, `ĝ` as in the module docs):
/// * `r̂ = fl(Σ Ê_i)`: `|r̂ − r| ≤ d·e_E + (2·LIBM_LN_ULPS·u(1+2^-50) + γ_{d−1})·Σ Ê_i`,
///   `e_E = 2^-52` and `Σ Ê_i ≤ r̂(1 + γ_{d−1})`.
/// * `n̂ = fl(√fl(Σ ĝ_i²))`: `|n̂ − ||ĝ||| ≤ (γ_d/2 + 2u)·n̂·(1 + …)`, so
///   `|n̂ − ||g||| ≤ n_err := (γ_d/2 + 2u)(1+2^-40)·n̂ + ||ĝ − g||`.
/// * `f = scale·r/||g||` lies in `[f_lo, f_hi]` from the intervals of `r` and `||g||`, and
///   `f̂ = fl(fl(scale·r̂)/n̂)` is within `2u(1+u)` of `scale·r̂/n̂` (relative).
/// * `b = fl(f̂ ĝ)`: `||b − f g|| ≤ u f̂ ||ĝ|| + |f̂ − f|·||ĝ|| + f_hi ||ĝ − g||`.
///
/// If `n̂ ≤ n_err` (impossible unless the draw of `ĝ` is pathologically tiny) the bound is `+∞`.
pub fn gamma_norm_vector_coupled(
    d: usize,
    scale: f64,
    rng: &mut DpRng,
) -> DpResult<(Array1<f64>, f64)> {
    check_dim(d)?;
    check_scale(scale, "scale")?;
    let df = d as f64;
    // Radius r = Σ E_i ~ Gamma(d, 1).
    let mut r_hat = 0.0f64;
    {
        let mut src = BitSource::new(&mut *rng);
        for _ in 0..d {
            r_hat += -coupled_uniform(&mut src).ln();
        }
    }
    let sum_e = r_hat * (1.0 + gamma_k(df));
    let r_err = inflate(
        df * 2f64.powi(-52)
            + (2.0 * LIBM_LN_ULPS * U * (1.0 + 2f64.powi(-50)) + gamma_k(df)) * sum_e,
    );
    // Direction.
    let (g, g_err) = normals(d, rng);
    let n_hat = g.dot(&g).sqrt();
    let n_err = inflate((gamma_k(df) / 2.0 + 2.0 * U) * (1.0 + 2f64.powi(-40)) * n_hat + g_err);
    let f_hat = scale * r_hat / n_hat;
    let b = g.mapv(|v| f_hat * v);
    if n_hat.partial_cmp(&n_err) != Some(std::cmp::Ordering::Greater) || !f_hat.is_finite() {
        return Ok((b, f64::INFINITY));
    }
    let f_hi = scale * (r_hat + r_err) / (n_hat - n_err) * (1.0 + 8.0 * U);
    let f_lo = (scale * (r_hat - r_err).max(0.0) / (n_hat + n_err)) * (1.0 - 8.0 * U);
    let f_dev = (f_hi - f_hat).max(f_hat - f_lo) + 3.0 * U * f_hat;
    let err = inflate(U * f_hat * n_hat + f_dev * n_hat + f_hi * g_err);
    Ok((b, err))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::noise::rng::rng_from_seed;

    #[test]
    fn moments_and_bounds() {
        let mut rng = rng_from_seed(Some(5));
        let d = 7;
        let reps = 20_000;
        let mut mean_norm = 0.0;
        for _ in 0..reps {
            let (b, err) = gamma_norm_vector_coupled(d, 2.0, &mut rng).unwrap();
            let nb = b.dot(&b).sqrt();
            mean_norm += nb;
            assert!(
                err.is_finite() && err < 1e-12 * (1.0 + nb),
                "err {err} for norm {nb}"
            );
        }
        assert!((mean_norm / reps as f64 - 14.0).abs() < 0.3); // E||b|| = d·scale
        let mut s2 = 0.0;
        for _ in 0..reps {
            let (b, err) = normal_vector_coupled(3, 1.5, &mut rng).unwrap();
            s2 += b.dot(&b);
            assert!(err < 1e-14);
        }
        assert!((s2 / (3.0 * reps as f64) - 2.25).abs() < 0.1);
    }

    #[test]
    fn large_dimension_bound_is_small_relative_to_the_norm() {
        let mut rng = rng_from_seed(Some(6));
        let (b, err) = gamma_norm_vector_coupled(100_000, 1e-3, &mut rng).unwrap();
        let nb = b.dot(&b).sqrt();
        assert!((nb / 100.0 - 1.0).abs() < 0.05); // ≈ d·scale
        assert!(err < 1e-9 * nb, "{err} vs {nb}");
    }

    #[test]
    fn uniform_is_in_the_unit_interval_and_reproducible() {
        let mut a = rng_from_seed(Some(9));
        let mut b = rng_from_seed(Some(9));
        let (x, ex) = gamma_norm_vector_coupled(4, 1.0, &mut a).unwrap();
        let (y, ey) = gamma_norm_vector_coupled(4, 1.0, &mut b).unwrap();
        assert_eq!(x, y);
        assert_eq!(ex, ey);
        let mut r = rng_from_seed(Some(1));
        let mut src = BitSource::new(&mut r);
        for _ in 0..10_000 {
            let u = coupled_uniform(&mut src);
            assert!(u > 0.0 && u < 1.0);
        }
    }

    #[test]
    fn invalid_arguments() {
        let mut rng = rng_from_seed(Some(1));
        assert!(gamma_norm_vector_coupled(0, 1.0, &mut rng).is_err());
        assert!(gamma_norm_vector_coupled(3, f64::NAN, &mut rng).is_err());
        assert!(normal_vector_coupled(3, -1.0, &mut rng).is_err());
    }
}

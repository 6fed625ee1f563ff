//! Random Fourier features (Rahimi & Recht 2007) for the translation-invariant kernels used by
//! `dpcore.PrivateSVM` (Rubinstein et al. 2009, SPEC "PrivateSVM").
//!
//! # Map
//!
//! For a shift-invariant kernel `k(x, z) = κ(x − z)` with `κ(0) = 1`, Bochner's theorem gives
//! `k(x, z) = E_ρ[cos ρᵀ(x − z)]` with `ρ` drawn from the kernel's (normalised) Fourier measure:
//!
//! | kernel      | `k(x, z)`                 | Fourier measure of `ρ`                        |
//! |-------------|---------------------------|-----------------------------------------------|
//! | `rbf`       | `exp(−γ ‖x − z‖²)`        | `N(0, 2γ I)`                                  |
//! | `laplacian` | `exp(−γ ‖x − z‖₁)`        | i.i.d. Cauchy(0, γ) coordinates               |
//!
//! With `D` draws `ρ_1..ρ_D` (the columns of the `d × D` matrix `W`), the feature map is
//!
//! ```text
//! φ̂(x) = D^{-1/2} [cos ρ_1ᵀx, …, cos ρ_Dᵀx, sin ρ_1ᵀx, …, sin ρ_Dᵀx]   ∈ R^{2D}
//! ```
//!
//! so `φ̂(x)·φ̂(z) = (1/D) Σ_j cos ρ_jᵀ(x − z)` (an unbiased estimate of `k(x, z)`, each term in
//! `[−1, 1]`) and `‖φ̂(x)‖ = 1` exactly in exact arithmetic: the RFF kernel has `κ = 1`.
//!
//! The weights are **public** (they are published with the model) and drawn independently of the
//! data, from dpcore's ChaCha20 generator. They are floats drawn with `rand_distr` (RBF) or the
//! inverse CDF of the Cauchy law (Laplacian); no privacy argument depends on their exact law.
//!
//! # Computation
//!
//! [`transform`] cuts the rows of `X` into tiles of [`TILE_ROWS`] rows; rayon parallelises over
//! tiles. Each tile computes `P = X_tile · W` with one GEMM (`matrixmultiply`) and then writes
//! `cos`/`sin` of each entry (one `sin_cos` call), scaled by `D^{-1/2}`, into its rows of the
//! output. Tile boundaries are a fixed constant, so the result is bit-for-bit identical for any
//! number of threads, and each output row is a function of its input row only (the privacy
//! analysis treats the computed feature vector of a record as that record's feature vector).
//! [`transform_cancellable`] polls a [`Cancel`] flag before every `TILE_ROWS × PROJ_COLS` block
//! and returns [`DpError::Interrupted`] (no partial result) once it is set; unset, it computes the
//! very same blocks.

use ndarray::linalg::general_mat_mul;
use ndarray::{s, Array2, ArrayView2, Axis, Zip};
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

use crate::cancel::Cancel;

use crate::error::{DpError, DpResult};
use crate::mechanisms::noise::rng::{open_unit_f64, DpRng};

/// Rows per tile of [`transform`] (fixed: results do not depend on the thread count).
pub const TILE_ROWS: usize = 128;

/// The translation-invariant kernels supported by the random Fourier feature map.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RffKernel {
    /// `exp(−γ ‖x − z‖²)`: `ρ ~ N(0, 2γ I)`.
    Rbf { gamma: f64 },
    /// `exp(−γ ‖x − z‖₁)`: each coordinate of `ρ` is Cauchy(0, γ).
    Laplacian { gamma: f64 },
}

impl RffKernel {
    /// Parse `kernel` (`"rbf"` or `"laplacian"`) with bandwidth `gamma > 0` (finite).
    pub fn from_params(kernel: &str, gamma: f64) -> DpResult<Self> {
        if !(gamma.is_finite() && gamma > 0.0) {
            return Err(DpError::invalid(
                "gamma",
                format!("must be finite and > 0, got {gamma:?}"),
            ));
        }
        match kernel {
            "rbf" => Ok(RffKernel::Rbf { gamma }),
            "laplacian" => Ok(RffKernel::Laplacian { gamma }),
            other => Err(DpError::invalid(
                "kernel",
                format!("must be 'rbf' or 'laplacian', got {other:?}"),
            )),
        }
    }

    /// The exact kernel value `k(x, z)` (reference for tests).
    pub fn value(&self, x: &[f64], z: &[f64]) -> f64 {
        match *self {
            RffKernel::Rbf { gamma } => {
                let d2: f64 = x.iter().zip(z).map(|(a, b)| (a - b) * (a - b)).sum();
                (-gamma * d2).exp()
            }
            RffKernel::Laplacian { gamma } => {
                let d1: f64 = x.iter().zip(z).map(|(a, b)| (a - b).abs()).sum();
                (-gamma * d1).exp()
            }
        }
    }
}

/// Draw the `n_features × n_components` matrix `W` whose columns are i.i.d. from the kernel's
/// Fourier measure (row-major fill order: reproducible for a seeded generator).
pub fn sample_weights(
    n_features: usize,
    n_components: usize,
    kernel: &RffKernel,
    rng: &mut DpRng,
) -> DpResult<Array2<f64>> {
    if n_features == 0 {
        return Err(DpError::invalid("n_features", "must be positive"));
    }
    if n_components == 0 {
        return Err(DpError::invalid("n_components", "must be positive"));
    }
    // Allocate first (fallibly): n_components = 10^9 must be a MemoryError, not an abort.
    let mut w = crate::alloc::zeros2(
        "n_components",
        "the random weights",
        n_features,
        n_components,
    )?;
    match *kernel {
        RffKernel::Rbf { gamma } => {
            let sd = (2.0 * gamma).sqrt();
            w.iter_mut().for_each(|v| {
                let z: f64 = StandardNormal.sample(rng);
                *v = sd * z;
            });
        }
        RffKernel::Laplacian { gamma } => {
            // Cauchy(0, γ) by inversion: γ tan(π (U − ½)), U uniform on the open unit interval.
            w.iter_mut().for_each(|v| {
                let u = open_unit_f64(rng);
                *v = gamma * (std::f64::consts::PI * (u - 0.5)).tan();
            });
        }
    }
    if !w.iter().all(|v| v.is_finite()) {
        // Cannot happen for finite γ (|tan| < 2^54 on the open-unit grid); kept as a guard.
        return Err(DpError::invalid("gamma", "gives non-finite random weights"));
    }
    Ok(w)
}

/// Validate `X` (non-empty, finite) and `W` (non-empty, finite, `d` rows).
pub fn check_inputs(x: ArrayView2<'_, f64>, w: ArrayView2<'_, f64>) -> DpResult<()> {
    if x.ncols() == 0 {
        return Err(DpError::invalid(
            "X",
            format!("must have at least one feature, got shape {:?}", x.shape()),
        ));
    }
    if w.is_empty() {
        return Err(DpError::invalid(
            "weights",
            format!("must not be empty, got shape {:?}", w.shape()),
        ));
    }
    if !w.iter().all(|v| v.is_finite()) {
        return Err(DpError::invalid(
            "weights",
            "contains NaN or infinite values",
        ));
    }
    if x.ncols() != w.nrows() {
        return Err(DpError::invalid(
            "X",
            format!(
                "has {} features, but the random weights expect {}",
                x.ncols(),
                w.nrows()
            ),
        ));
    }
    if !x.iter().all(|v| v.is_finite()) {
        return Err(DpError::invalid("X", "contains NaN or infinite values"));
    }
    Ok(())
}

/// `φ̂(X)`: the `n × 2D` random Fourier feature matrix (see the module docs). Inputs must have
/// passed [`check_inputs`]. An empty `X` (no rows) gives an empty `0 × 2D` matrix.
///
/// # Errors
/// [`DpError::OutOfMemory`] (naming `X`) when the `n × 2D` output cannot be allocated.
pub fn transform(x: ArrayView2<'_, f64>, w: ArrayView2<'_, f64>) -> DpResult<Array2<f64>> {
    transform_cancellable(x, w, Cancel::never())
}

/// [`transform`] polling `cancel` before every block (see the module docs).
///
/// # Errors
/// As [`transform`], and [`DpError::Interrupted`] once `cancel` is set.
pub fn transform_cancellable(
    x: ArrayView2<'_, f64>,
    w: ArrayView2<'_, f64>,
    cancel: &Cancel,
) -> DpResult<Array2<f64>> {
    let n = x.nrows();
    let dc = w.ncols();
    let scale = 1.0 / (dc as f64).sqrt();
    let cols = dc
        .checked_mul(2)
        .ok_or_else(|| DpError::out_of_memory("X", "the random features", None))?;
    let mut out = crate::alloc::zeros2("X", "the random features", n, cols)?;
    if n == 0 {
        return Ok(out);
    }
    out.axis_chunks_iter_mut(Axis(0), TILE_ROWS)
        .into_par_iter()
        .zip(x.axis_chunks_iter(Axis(0), TILE_ROWS).into_par_iter())
        .for_each(|(mut out_tile, x_tile)| {
            let rows = x_tile.nrows();
            // Column blocks keep the per-thread scratch at rows × PROJ_COLS, whatever D is.
            let mut proj = Array2::<f64>::zeros((rows, PROJ_COLS.min(dc)));
            let (mut cos_part, mut sin_part) = out_tile.view_mut().split_at(Axis(1), dc);
            let mut c0 = 0;
            while c0 < dc {
                if cancel.is_cancelled() {
                    return;
                }
                let c1 = (c0 + PROJ_COLS).min(dc);
                let mut pb = proj.slice_mut(s![.., ..c1 - c0]);
                general_mat_mul(1.0, &x_tile, &w.slice(s![.., c0..c1]), 0.0, &mut pb);
                Zip::from(cos_part.slice_mut(s![.., c0..c1]))
                    .and(sin_part.slice_mut(s![.., c0..c1]))
                    .and(&pb)
                    .for_each(|c, s_, &p| {
                        let (sv, cv) = p.sin_cos();
                        *c = cv * scale;
                        *s_ = sv * scale;
                    });
                c0 = c1;
            }
        });
    cancel.check()?;
    Ok(out)
}

/// Columns of `W` projected at once per row tile in [`transform`] (bounds the scratch memory).
const PROJ_COLS: usize = 1024;

/// Convenience used by tests: `φ̂(x)·φ̂(z)` for two single points.
pub fn feature_dot(x: &[f64], z: &[f64], w: ArrayView2<'_, f64>) -> f64 {
    let xs = ArrayView2::from_shape((1, x.len()), x).expect("row shape");
    let zs = ArrayView2::from_shape((1, z.len()), z).expect("row shape");
    let fx = transform(xs, w).expect("one row");
    let fz = transform(zs, w).expect("one row");
    fx.row(0)
        .iter()
        .zip(fz.row(0).iter())
        .map(|(a, b)| a * b)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::noise::rng::rng_from_seed;
    use crate::test_util::rng_points;
    use ndarray::{s, ShapeBuilder};

    #[test]
    fn a_set_cancel_flag_interrupts_the_transform() {
        let k = RffKernel::from_params("rbf", 0.7).unwrap();
        let w = sample_weights(5, 300, &k, &mut rng_from_seed(Some(1))).unwrap();
        let x = rng_points(200, 5, 2);
        let stop = Cancel::new();
        stop.cancel();
        assert_eq!(
            transform_cancellable(x.view(), w.view(), &stop),
            Err(DpError::Interrupted)
        );
        let got = transform_cancellable(x.view(), w.view(), &Cancel::new()).unwrap();
        assert_eq!(got, transform(x.view(), w.view()).unwrap());
    }

    #[test]
    fn rff_rows_have_unit_norm() {
        let k = RffKernel::from_params("rbf", 0.7).unwrap();
        let w = sample_weights(5, 300, &k, &mut rng_from_seed(Some(1))).unwrap();
        let x = rng_points(1000, 5, 2);
        let f = transform(x.view(), w.view()).unwrap();
        assert_eq!(f.shape(), &[1000, 600]);
        for row in f.rows() {
            let nrm: f64 = row.iter().map(|v| v * v).sum::<f64>().sqrt();
            assert!((nrm - 1.0).abs() <= 1e-12);
        }
    }

    #[test]
    fn rff_is_tile_and_thread_independent() {
        let k = RffKernel::from_params("laplacian", 1.3).unwrap();
        let w = sample_weights(4, 37, &k, &mut rng_from_seed(Some(3))).unwrap();
        let x = rng_points(3 * TILE_ROWS + 5, 4, 4);
        let all = transform(x.view(), w.view()).unwrap();
        // each row alone gives the same bits as inside a tile
        for i in [
            0,
            1,
            TILE_ROWS - 1,
            TILE_ROWS,
            2 * TILE_ROWS + 7,
            3 * TILE_ROWS + 4,
        ] {
            let one = transform(x.slice(s![i..i + 1, ..]), w.view()).unwrap();
            assert_eq!(one.row(0), all.row(i));
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let serial = pool.install(|| transform(x.view(), w.view()).unwrap());
        assert_eq!(serial, all);
        // Fortran-ordered input gives the same bits
        let mut xf = Array2::<f64>::zeros(x.dim().f());
        xf.assign(&x);
        assert!(!xf.is_standard_layout());
        assert_eq!(transform(xf.view(), w.view()).unwrap(), all);
    }

    #[test]
    fn rff_approximates_the_kernel() {
        // Hoeffding: each term cos ρᵀ(x − z) ∈ [−1, 1], so P[|mean − k| > t] ≤ 2 exp(−D t²/2).
        // D = 20000, t = 0.04: 2 exp(−16) ≈ 2.3e-7 per pair (fixed seed).
        let dcomp = 20_000;
        let t = 0.04;
        for (name, gamma) in [("rbf", 0.5), ("laplacian", 0.8)] {
            let k = RffKernel::from_params(name, gamma).unwrap();
            let w = sample_weights(3, dcomp, &k, &mut rng_from_seed(Some(11))).unwrap();
            let x = rng_points(6, 3, 12);
            for i in 0..x.nrows() {
                for j in 0..x.nrows() {
                    let xi = x.row(i).to_vec();
                    let xj = x.row(j).to_vec();
                    let est = feature_dot(&xi, &xj, w.view());
                    let exact = k.value(&xi, &xj);
                    assert!((est - exact).abs() <= t, "{name}: {est} vs {exact}");
                }
            }
        }
    }

    #[test]
    fn weights_have_the_fourier_law() {
        // RBF: Var = 2γ; Laplacian: median of |ρ| = γ (Cauchy quartile).
        let k = RffKernel::from_params("rbf", 2.0).unwrap();
        let w = sample_weights(1, 200_000, &k, &mut rng_from_seed(Some(5))).unwrap();
        let var = w.iter().map(|v| v * v).sum::<f64>() / w.len() as f64;
        assert!((var - 4.0).abs() < 0.1, "{var}");
        let k = RffKernel::from_params("laplacian", 3.0).unwrap();
        let w = sample_weights(1, 200_001, &k, &mut rng_from_seed(Some(6))).unwrap();
        let mut a: Vec<f64> = w.iter().map(|v| v.abs()).collect();
        a.sort_by(|p, q| p.partial_cmp(q).unwrap());
        let med = a[a.len() / 2];
        assert!((med - 3.0).abs() < 0.06, "{med}");
    }

    #[test]
    fn rff_validation_names_arguments() {
        assert!(RffKernel::from_params("poly", 1.0)
            .unwrap_err()
            .to_string()
            .starts_with("kernel"));
        assert!(RffKernel::from_params("rbf", 0.0)
            .unwrap_err()
            .to_string()
            .starts_with("gamma"));
        assert!(RffKernel::from_params("rbf", f64::NAN)
            .unwrap_err()
            .to_string()
            .starts_with("gamma"));
        let k = RffKernel::from_params("rbf", 1.0).unwrap();
        let mut rng = rng_from_seed(Some(0));
        assert!(sample_weights(2, 0, &k, &mut rng)
            .unwrap_err()
            .to_string()
            .starts_with("n_components"));
        let w = sample_weights(2, 3, &k, &mut rng).unwrap();
        let x = rng_points(4, 3, 1);
        assert!(check_inputs(x.view(), w.view())
            .unwrap_err()
            .to_string()
            .starts_with("X"));
        let mut x = rng_points(4, 2, 1);
        x[[1, 1]] = f64::NAN;
        assert!(check_inputs(x.view(), w.view())
            .unwrap_err()
            .to_string()
            .starts_with("X"));
    }

    #[test]
    fn seeded_weights_are_reproducible() {
        let k = RffKernel::from_params("rbf", 1.0).unwrap();
        let a = sample_weights(3, 10, &k, &mut rng_from_seed(Some(9))).unwrap();
        let b = sample_weights(3, 10, &k, &mut rng_from_seed(Some(9))).unwrap();
        let c = sample_weights(3, 10, &k, &mut rng_from_seed(Some(10))).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}

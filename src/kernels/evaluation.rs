//! Kernel engine: linear, polynomial and Gaussian RBF kernels evaluated as fused, tiled, parallel
//! loops on `ndarray` views.
//!
//! # Kernels
//!
//! Parameter names follow scikit-learn (`sklearn.metrics.pairwise_kernels`):
//!
//! | kernel   | `K(x, v)`                     | `R_φ²` on the ball `‖z‖ ≤ r` (SPEC, "Kernels") |
//! |----------|-------------------------------|-------------------------------------------------|
//! | `linear` | `<x, v>`                      | `r²`                                            |
//! | `poly`   | `(γ <x, v> + c)^p`            | `(γ r² + c)^p`, requires `c ≥ 0`                |
//! | `rbf`    | `exp(−γ ‖x − v‖²)`            | `1`                                             |
//!
//! with `γ > 0` finite, `p ≥ 1` an integer and `c` finite. `R_φ = max_z ‖φ(z)‖` enters every
//! sensitivity bound of Jain–Thakurta (2013) (`S = 2 L R_φ² / (λ n)`), see
//! [`feature_map_radius_sq`].
//!
//! # Fused prediction without an m×n matrix
//!
//! [`kernel_predict`] returns `f = K(Z, X) μ` for `m` query rows `Z` and `n` support rows `X`
//! without ever holding `K(Z, X)`:
//!
//! * the query rows are cut into tiles of [`TILE_ROWS`] rows and the support rows into chunks of
//!   [`TILE_COLS`] points (both fixed constants, independent of the thread count);
//! * for each (tile, chunk) block, one GEMM (`ndarray::linalg::general_mat_mul`, i.e. the
//!   cache-blocked SIMD kernels of `matrixmultiply`) writes the scaled inner products into a
//!   `TILE_ROWS × TILE_COLS` buffer (256 KiB, it stays in L2);
//! * each buffer row is then mapped through the kernel's scalar function and multiplied by the
//!   matching chunk of `μ` in one fused pass, 16 lanes at a time with branch-free code that
//!   LLVM vectorises (for RBF: `−γ‖z−x‖² = 2γ<z,x> − (γ‖z‖² + γ‖x‖²)` with the row squared
//!   norms precomputed once, clamped at 0 like scikit-learn, then the polynomial
//!   [`exp_fast`](crate::numerics::exp_fast); for poly: `(γ<z,x> + c)^p` by binary
//!   exponentiation), and accumulated into `f`.
//!
//! Rayon parallelises over query tiles (or, when there are few query rows — e.g. one PINP query
//! against a large support set — over waves of support chunks). Each task allocates its scratch
//! buffers once and reuses them for all its blocks. With at most 4 query rows the GEMM is
//! replaced by SIMD dot products in a single streaming pass over the support rows (their RBF
//! norms are computed while each row is in cache): a 1-row GEMM would waste most of its register
//! tile and repack every support chunk.
//!
//! Extra memory is `O(m + n)` (norms, output, a contiguous copy of μ) plus one 256 KiB block
//! buffer per running task, and at most `WAVE_CHUNKS × min(m, 16·TILE_ROWS)` partial sums on the
//! few-rows path: `O((m + n) · tile)` in all cases, a few MiB at most, whatever m and n
//! (`benches/bench_kernels.py` measures ≈ 5 MB at m = n = 10⁴ where the m×n matrix is 800 MB).
//! [`kernel_matrix`] materialises its output by definition, with the same blocks.
//!
//! The linear kernel needs no tiling at all: `K(Z, X) μ = Z (Xᵀ μ)`, computed in `O((m + n) d)`.
//!
//! # Symmetric products
//!
//! [`kernel_matvecs_sym_cancellable`] computes `K'(X, X) v` for several vectors with half the
//! kernel work: each lower-triangle tile (`SYM_TILE × SYM_TILE`, the engine's own blocks) is
//! evaluated once and used for its rows and its columns, tiles scheduled in round-robin rounds so
//! that the result is deterministic (accuracy [`kernel_matvecs_sym_rel_error`], derived in
//! [`crate::fp::sym_kernel_sum_rel_error`]). The logistic fit's certificate uses it (issue 26).
//!
//! # Determinism
//!
//! Results are bit-for-bit identical whatever the number of threads (and whatever the memory
//! layout of the inputs): block boundaries are fixed constants, every output is accumulated over
//! support chunks in increasing order with a fixed summation tree inside each chunk, and the
//! choice between the code paths (query tiles, support waves, direct dot products) depends on the
//! shapes only. The SIMD flavour is chosen once per CPU: AVX2+FMA, AVX2, or portable SSE2 (the
//! last two bit-identical); `matrixmultiply` likewise picks its GEMM kernel per CPU. Results can
//! therefore differ in the last bits *between machines*, never between runs or thread counts on
//! one machine.
//!
//! # Interruption
//!
//! [`kernel_matrix_cancellable`], [`gram_matrix_cancellable`] and [`kernel_predict_cancellable`]
//! poll a [`Cancel`] flag before every `TILE_ROWS × TILE_COLS` block (`65,536 · d` multiply-adds;
//! well under a millisecond per block for `d` up to a few hundred) and return
//! [`DpError::Interrupted`] once it is set — never a partial result. The check does not change
//! the blocks or their order, so uninterrupted results are bit-for-bit those of the plain
//! functions (which pass [`Cancel::never`]).
//!
//! # Numerical accuracy
//!
//! Relative to an exact evaluation, each kernel value carries the rounding error of the inner
//! product (plus, for RBF, the usual cancellation error `≈ γ ε (‖z‖² + ‖x‖²)` of the
//! expanded squared distance — the same formula scikit-learn uses, clamped at 0 like it) and
//! [`exp_fast`](crate::numerics::exp_fast) is within 2 ulp ([`crate::fp::EXP_FAST_ULPS`]) of a
//! correctly rounded `exp` (tested in [`crate::numerics`] against `f64::exp` from the overflow
//! threshold down to underflow to 0). Results agree with scikit-learn to ~1e-16..1e-13
//! relative to `|K| |μ|` on well-scaled data.

// The lane loops (`for l in 0..LANES`) index several arrays in lockstep on purpose: it is the
// shape LLVM turns into one vector instruction per register.
#![allow(clippy::needless_range_loop)]

use ndarray::linalg::general_mat_mul;
use ndarray::parallel::prelude::*;
use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut2, Axis};
use rayon::prelude::*;

use crate::cancel::Cancel;
use crate::error::{DpError, DpResult};
use crate::numerics::{
    exp_lanes, exp_map_in_place, ipow, simd_dispatch, simd_dispatch_fma, MulAdd, EXP_LANES,
};

/// Query rows per tile (rows of one GEMM block).
pub const TILE_ROWS: usize = 64;
/// Support points per chunk (columns of one GEMM block). `TILE_ROWS × TILE_COLS` f64 = 256 KiB.
pub const TILE_COLS: usize = 512;
/// Minimum number of query tiles for which [`kernel_predict`] parallelises over query tiles;
/// below it, it parallelises over support chunks (a shape-only rule, so results never depend
/// on the thread count).
const ROW_PARALLEL_MIN_TILES: usize = 16;
/// Support chunks evaluated concurrently per wave on the few-query-rows path.
const WAVE_CHUNKS: usize = 64;
/// Up to this many query rows, [`kernel_predict`] computes inner products with SIMD dot products
/// (one streaming pass over the support set) instead of GEMM, whose packing and register tiles
/// are wasted on a handful of rows (e.g. one PINP query).
const DIRECT_MAX_ROWS: usize = 4;
/// Support rows per partial sum of `Xᵀ μ` on the linear path.
const LINEAR_BLOCK: usize = 4096;

/// The base kernel family with scikit-learn's parameter names (see [`Kernel`] for the shift).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KernelKind {
    /// `K(x, v) = <x, v>`.
    Linear,
    /// `K(x, v) = (gamma <x, v> + coef0)^degree`.
    Poly { gamma: f64, degree: u32, coef0: f64 },
    /// `K(x, v) = exp(−gamma ‖x − v‖²)`.
    Rbf { gamma: f64 },
}

/// A positive-definite kernel `K'(x, v) = K(x, v) + shift`: a base kernel of [`KernelKind`]
/// plus a public additive `shift = b² ≥ 0` (the regularised intercept of LIBLINEAR: the feature
/// map `φ'(x) = (φ(x), b)` of the augmented kernel, so `f(x) = Σ μ_i K(x_i, x) + b² Σ μ_i`).
///
/// `K'` is again positive semi-definite (a sum of two PSD kernels) with
/// `R_φ'² = R_φ² + b²` ([`feature_map_radius_sq`]), and every evaluation function of this module
/// adds the shift, so every caller (ERM rows and caches, fused predict, GEMM tiles, diagonal,
/// PINP, GP, the exponential mechanism's scorer) gets the same kernel. With `shift = 0` the
/// results are bit-for-bit those of the base kernel (the addition is skipped).
///
/// Build it with the validating constructors [`Kernel::linear`], [`Kernel::poly`],
/// [`Kernel::rbf`] (shift 0), [`Kernel::with_shift`] or [`Kernel::from_params`]. The fields are
/// public so that callers can match on the kind; constructing one directly bypasses validation
/// (the evaluation functions then compute the formula as written, but the privacy bounds of
/// [`feature_map_radius_sq`] re-validate).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Kernel {
    /// The base kernel.
    pub kind: KernelKind,
    /// The public additive shift `b²` (finite, `≥ 0`).
    pub shift: f64,
}

impl From<KernelKind> for Kernel {
    fn from(kind: KernelKind) -> Self {
        Kernel { kind, shift: 0.0 }
    }
}

fn check_shift(shift: f64) -> DpResult<()> {
    if !shift.is_finite() || shift < 0.0 {
        return Err(DpError::invalid(
            "intercept_scaling",
            format!("the kernel shift intercept_scaling² must be finite and >= 0, got {shift:?}"),
        ));
    }
    Ok(())
}

/// `shift = b²` for a public `intercept_scaling` `b`: finite, `0 ≤ b ≤ 1e100` (so `b²` is a
/// finite float); errors name `intercept_scaling`.
pub fn shift_from_intercept_scaling(b: f64) -> DpResult<f64> {
    if !b.is_finite() || !(0.0..=1e100).contains(&b) {
        return Err(DpError::invalid(
            "intercept_scaling",
            format!("must be finite with 0 <= intercept_scaling <= 1e100, got {b:?}"),
        ));
    }
    Ok(b * b)
}

fn check_gamma(gamma: f64) -> DpResult<()> {
    if !gamma.is_finite() || gamma <= 0.0 {
        return Err(DpError::invalid(
            "gamma",
            format!("must be finite and > 0, got {gamma:?}"),
        ));
    }
    Ok(())
}

fn check_coef0(coef0: f64) -> DpResult<()> {
    if !coef0.is_finite() {
        return Err(DpError::invalid(
            "coef0",
            format!("must be finite, got {coef0:?}"),
        ));
    }
    Ok(())
}

impl Kernel {
    /// The linear kernel `<x, v>`.
    pub fn linear() -> Self {
        KernelKind::Linear.into()
    }

    /// The polynomial kernel `(gamma <x, v> + coef0)^degree`; `gamma > 0` finite, `degree ≥ 1`,
    /// `coef0` finite.
    pub fn poly(gamma: f64, degree: u32, coef0: f64) -> DpResult<Self> {
        check_gamma(gamma)?;
        if degree == 0 {
            return Err(DpError::invalid(
                "degree",
                "must be a positive integer, got 0",
            ));
        }
        check_coef0(coef0)?;
        Ok(KernelKind::Poly {
            gamma,
            degree,
            coef0,
        }
        .into())
    }

    /// The Gaussian RBF kernel `exp(−gamma ‖x − v‖²)`; `gamma > 0` finite.
    pub fn rbf(gamma: f64) -> DpResult<Self> {
        check_gamma(gamma)?;
        Ok(KernelKind::Rbf { gamma }.into())
    }

    /// This kernel with the additive shift `shift` (`K + shift`); `shift` finite and `≥ 0`
    /// (errors name `intercept_scaling`, the public parameter whose square it is).
    pub fn with_shift(self, shift: f64) -> DpResult<Self> {
        check_shift(shift)?;
        Ok(Kernel {
            kind: self.kind,
            shift,
        })
    }

    /// Build a kernel from scikit-learn style arguments: `name` is `"linear"`, `"poly"` (alias
    /// `"polynomial"`) or `"rbf"`. Only the parameters the kernel uses are validated (`gamma`,
    /// `degree` and `coef0` are ignored by `linear`; `degree` and `coef0` by `rbf`). Callers
    /// resolve scikit-learn's default `gamma = 1 / n_features` before calling.
    /// `intercept_scaling` `b` (finite, `0 ≤ b ≤ 1e100`) gives the shift `b²`.
    pub fn from_params(
        name: &str,
        gamma: f64,
        degree: i64,
        coef0: f64,
        intercept_scaling: f64,
    ) -> DpResult<Self> {
        let shift = shift_from_intercept_scaling(intercept_scaling)?;
        Self::base_from_params(name, gamma, degree, coef0)?.with_shift(shift)
    }

    fn base_from_params(name: &str, gamma: f64, degree: i64, coef0: f64) -> DpResult<Self> {
        match name {
            "linear" => Ok(Kernel::linear()),
            "poly" | "polynomial" => {
                if degree < 1 || degree > i64::from(u32::MAX) {
                    return Err(DpError::invalid(
                        "degree",
                        format!(
                            "must be a positive integer (at most {}), got {degree}",
                            u32::MAX
                        ),
                    ));
                }
                Kernel::poly(gamma, degree as u32, coef0)
            }
            "rbf" => Kernel::rbf(gamma),
            other => Err(DpError::invalid(
                "kernel",
                format!("unknown kernel {other:?}; expected one of \"linear\", \"poly\", \"rbf\""),
            )),
        }
    }

    /// Re-check the parameters of a kernel (useful when it was built from the public variants).
    pub fn validate(&self) -> DpResult<()> {
        check_shift(self.shift)?;
        match self.kind {
            KernelKind::Linear => Ok(()),
            KernelKind::Poly {
                gamma,
                degree,
                coef0,
            } => Kernel::poly(gamma, degree, coef0).map(|_| ()),
            KernelKind::Rbf { gamma } => check_gamma(gamma),
        }
    }

    /// scikit-learn's name of the kernel (`"linear"`, `"poly"`, `"rbf"`).
    pub fn name(&self) -> &'static str {
        match self.kind {
            KernelKind::Linear => "linear",
            KernelKind::Poly { .. } => "poly",
            KernelKind::Rbf { .. } => "rbf",
        }
    }

    /// `K(x, v) + shift` for one pair of points (for the RBF kernel the squared distance is summed
    /// directly, without the expanded-form cancellation of the batched routines).
    ///
    /// # Panics
    /// If `x` and `v` have different lengths.
    pub fn eval(&self, x: ArrayView1<'_, f64>, v: ArrayView1<'_, f64>) -> f64 {
        assert_eq!(
            x.len(),
            v.len(),
            "Kernel::eval: x and v must have the same length"
        );
        let k = match self.kind {
            KernelKind::Linear => x.dot(&v),
            KernelKind::Poly {
                gamma,
                degree,
                coef0,
            } => ipow(gamma * x.dot(&v) + coef0, degree),
            KernelKind::Rbf { gamma } => {
                let d2: f64 = x.iter().zip(v.iter()).map(|(a, b)| (a - b) * (a - b)).sum();
                (-gamma * d2).exp()
            }
        };
        self.add_shift(k)
    }

    /// `k + shift`, skipped when the shift is 0 (bit-for-bit the base kernel). The one rounding
    /// it adds is `|fl(k + s) − (k + s)| ≤ u·(|k| + s)` ([`crate::fp::shifted_kernel_error`]).
    #[inline(always)]
    pub fn add_shift(&self, k: f64) -> f64 {
        if self.shift == 0.0 {
            k
        } else {
            k + self.shift
        }
    }
}

/// `R_φ² = max_{‖z‖ ≤ data_norm} K(z, z)` for inputs in the Euclidean ball of radius `data_norm`
/// (SPEC, "Kernels"): `data_norm²` (linear), `(gamma data_norm² + coef0)^degree` (poly), `1` (RBF).
///
/// For the polynomial kernel, `K(z, z) = (γ‖z‖² + c)^p` is increasing in `‖z‖` when `c ≥ 0`, so
/// its maximum over the ball is attained on the sphere. With `c < 0` that is false (e.g. `p`
/// even and `γ r² < |c|`), and the kernel is not positive semi-definite in general — there is no
/// feature map φ at all — so a negative `coef0` is rejected rather than returning a value that
/// would under-estimate the sensitivity.
///
/// With a shift `s = b²` ([`Kernel::with_shift`], the regularised intercept) the result is
/// `R_φ'² = R_φ² + s`, rounded up by one ulp so that it bounds the exact sum: the augmented map
/// `φ'(z) = (φ(z), b)` has `‖φ'(z)‖² = K(z, z) + b² ≤ R_φ² + b²` on the ball, which is all the
/// sensitivity bounds (`2 L R_φ'/(λ n)` and friends) use.
///
/// # Errors
/// `data_norm` not finite or `≤ 0`; invalid kernel parameters (including the shift, named
/// `intercept_scaling`); `coef0 < 0` for `poly`; a result that overflows `f64`.
pub fn feature_map_radius_sq(kernel: &Kernel, data_norm: f64) -> DpResult<f64> {
    if !data_norm.is_finite() || data_norm <= 0.0 {
        return Err(DpError::invalid(
            "data_norm",
            format!("must be finite and > 0, got {data_norm:?}"),
        ));
    }
    kernel.validate()?;
    let r2 = match kernel.kind {
        KernelKind::Linear => data_norm * data_norm,
        KernelKind::Poly {
            gamma,
            degree,
            coef0,
        } => {
            if coef0 < 0.0 {
                return Err(DpError::invalid(
                    "coef0",
                    format!(
                        "must be >= 0 to bound the feature map of the polynomial kernel, got \
                         {coef0}: with coef0 < 0, K(z, z) = (gamma ||z||^2 + coef0)^degree is not \
                         maximised on the sphere ||z|| = data_norm and the kernel is not positive \
                         semi-definite, so (gamma data_norm^2 + coef0)^degree is not a valid R_phi^2"
                    ),
                ));
            }
            ipow(gamma * data_norm * data_norm + coef0, degree)
        }
        KernelKind::Rbf { .. } => 1.0,
    };
    let r2 = if kernel.shift == 0.0 {
        r2
    } else {
        crate::fp::next_up(r2 + kernel.shift)
    };
    if !r2.is_finite() {
        return Err(DpError::invalid(
            "data_norm",
            format!(
                "the feature-map radius R_phi overflows for data_norm = {data_norm} and {kernel:?}"
            ),
        ));
    }
    Ok(r2)
}

/// Validate the inputs of [`kernel_predict`] (`mu = Some`) or [`kernel_matrix`] (`mu = None`):
/// non-empty, finite, equal feature counts, `len(mu) = n_support`. Errors name the argument
/// (`Z`, `X`, `mu`) as the Python API does. `O((m + n) d)`, negligible next to the evaluation.
pub fn check_inputs(
    z: ArrayView2<'_, f64>,
    x: ArrayView2<'_, f64>,
    mu: Option<ArrayView1<'_, f64>>,
) -> DpResult<()> {
    check_inputs_cancellable(z, x, mu, Cancel::never())
}

/// Rows scanned for NaN/inf between two polls of the cancel flag in [`check_inputs_cancellable`].
const CHECK_ROWS: usize = 4096;

/// [`check_inputs`] polling `cancel` every [`CHECK_ROWS`] rows (the scan is as long as the
/// evaluation itself when a few query rows meet a large support set).
///
/// # Errors
/// As [`check_inputs`], and [`DpError::Interrupted`] once `cancel` is set.
pub fn check_inputs_cancellable(
    z: ArrayView2<'_, f64>,
    x: ArrayView2<'_, f64>,
    mu: Option<ArrayView1<'_, f64>>,
    cancel: &Cancel,
) -> DpResult<()> {
    for (name, a) in [("Z", &z), ("X", &x)] {
        if a.is_empty() {
            return Err(DpError::invalid(
                name,
                format!("must not be empty, got shape {:?}", a.shape()),
            ));
        }
        for rows in a.axis_chunks_iter(Axis(0), CHECK_ROWS) {
            cancel.check()?;
            if !rows.iter().all(|v| v.is_finite()) {
                return Err(DpError::invalid(name, "contains NaN or infinite values"));
            }
        }
    }
    if x.ncols() != z.ncols() {
        return Err(DpError::invalid(
            "X",
            format!(
                "has {} features, expected {} (the number of features of Z)",
                x.ncols(),
                z.ncols()
            ),
        ));
    }
    if let Some(mu) = mu {
        if mu.len() != x.nrows() {
            return Err(DpError::invalid(
                "mu",
                format!(
                    "must have length {} (the number of rows of X), got {}",
                    x.nrows(),
                    mu.len()
                ),
            ));
        }
        if !mu.iter().all(|v| v.is_finite()) {
            return Err(DpError::invalid("mu", "contains NaN or infinite values"));
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// Vectorisable scalar maps
// ------------------------------------------------------------------------------------------------

simd_dispatch_fma! {
    /// In place: `row[j] ← exp(min(row[j] − (gz + gx[j]), 0))`; `row` holds `2γ<z, x_j>`.
    fn rbf_row<A>(row: &mut [f64], gz: f64, gx: &[f64]) {
        let gx = &gx[..row.len()];
        exp_map_in_place::<A>(row, gx, |v, g| {
            let e = v - (gz + g);
            if e > 0.0 { 0.0 } else { e }
        });
    }
}

simd_dispatch! {
    /// In place: `row[j] ← (row[j] + coef0)^degree`; `row` holds `γ<z, x_j>`.
    fn poly_row(row: &mut [f64], coef0: f64, degree: u32) {
        const B: usize = 64;
        let mut base = [0.0f64; B];
        let mut res = [0.0f64; B];
        for blk in row.chunks_mut(B) {
            let len = blk.len();
            let (base, res) = (&mut base[..len], &mut res[..len]);
            for (b, &v) in base.iter_mut().zip(blk.iter()) {
                *b = v + coef0;
            }
            res.fill(1.0);
            let mut e = degree;
            loop {
                if e & 1 == 1 {
                    for (r, &b) in res.iter_mut().zip(base.iter()) {
                        *r *= b;
                    }
                }
                e >>= 1;
                if e == 0 {
                    break;
                }
                for b in base.iter_mut() {
                    *b *= *b;
                }
            }
            blk.copy_from_slice(res);
        }
    }
}

simd_dispatch! {
    /// `Σ a[j] b[j]` with 8 interleaved partial sums and a fixed reduction tree.
    fn dot(a: &[f64], b: &[f64]) -> f64 {
        let b = &b[..a.len()];
        let mut acc = [0.0f64; 8];
        let (ac, at) = a.split_at(a.len() - a.len() % 8);
        let (bc, bt) = b.split_at(ac.len());
        for (ca, cb) in ac.chunks_exact(8).zip(bc.chunks_exact(8)) {
            for l in 0..8 {
                acc[l] += ca[l] * cb[l];
            }
        }
        let mut tail = 0.0;
        for (x, y) in at.iter().zip(bt) {
            tail += x * y;
        }
        crate::numerics::lanes8_reduce(&acc, tail)
    }
}

/// A kernel's scalar map applied to 16 lanes at once (in place, given the matching `aux`
/// lanes). Named types with `#[inline(always)]` methods (rather than closures) guarantee that the
/// map is inlined into the AVX2 build of its caller.
trait LaneMap {
    fn apply<A: MulAdd>(&self, v: &mut [f64; EXP_LANES], aux: &[f64; EXP_LANES]);
}

/// RBF: `v ← exp(min(v − (gz + aux), 0))`.
struct RbfMap {
    gz: f64,
}

impl LaneMap for RbfMap {
    #[inline(always)]
    fn apply<A: MulAdd>(&self, v: &mut [f64; EXP_LANES], g: &[f64; EXP_LANES]) {
        for l in 0..EXP_LANES {
            let e = v[l] - (self.gz + g[l]);
            v[l] = if e > 0.0 { 0.0 } else { e };
        }
        exp_lanes::<A>(v);
    }
}

/// Polynomial: `v ← (v + coef0)^degree` (binary exponentiation, as [`ipow`]).
struct PolyMap {
    coef0: f64,
    degree: u32,
}

impl LaneMap for PolyMap {
    #[inline(always)]
    fn apply<A: MulAdd>(&self, v: &mut [f64; EXP_LANES], _: &[f64; EXP_LANES]) {
        let mut base = [0.0f64; EXP_LANES];
        for l in 0..EXP_LANES {
            base[l] = v[l] + self.coef0;
            v[l] = 1.0;
        }
        let mut e = self.degree;
        loop {
            if e & 1 == 1 {
                for l in 0..EXP_LANES {
                    v[l] *= base[l];
                }
            }
            e >>= 1;
            if e == 0 {
                break;
            }
            for l in 0..EXP_LANES {
                base[l] *= base[l];
            }
        }
    }
}

/// `Σ_j t(row[j], aux[j]) · mu[j]` with `t` the lane map; the tail is zero-padded and masked.
/// 16 partial sums reduced by a fixed tree: the result depends on the data only.
#[inline(always)]
fn fused_dot<A: MulAdd, M: LaneMap>(row: &[f64], aux: &[f64], mu: &[f64], map: &M) -> f64 {
    const L: usize = EXP_LANES;
    let (aux, mu) = (&aux[..row.len()], &mu[..row.len()]);
    let mut acc = [0.0f64; L];
    let split = row.len() - row.len() % L;
    for ((r, a), m) in row[..split]
        .chunks_exact(L)
        .zip(aux[..split].chunks_exact(L))
        .zip(mu[..split].chunks_exact(L))
    {
        let mut lanes: [f64; L] = r.try_into().expect("exact chunk");
        map.apply::<A>(&mut lanes, a.try_into().expect("exact chunk"));
        for l in 0..L {
            acc[l] = A::madd(lanes[l], m[l], acc[l]);
        }
    }
    let tail = row.len() - split;
    if tail > 0 {
        let (mut lanes, mut a) = ([0.0f64; L], [0.0f64; L]);
        lanes[..tail].copy_from_slice(&row[split..]);
        a[..tail].copy_from_slice(&aux[split..]);
        map.apply::<A>(&mut lanes, &a);
        for l in 0..tail {
            acc[l] = A::madd(lanes[l], mu[split + l], acc[l]);
        }
    }
    let mut width = L;
    while width > 1 {
        width /= 2;
        for l in 0..width {
            acc[l] += acc[l + width];
        }
    }
    acc[0]
}

simd_dispatch_fma! {
    /// `Σ_j exp(min(row[j] − (gz + gx[j]), 0)) · mu[j]` (RBF block row, fused with the product by μ).
    fn rbf_row_dot<A>(row: &[f64], gz: f64, gx: &[f64], mu: &[f64]) -> f64 {
        fused_dot::<A, _>(row, gx, mu, &RbfMap { gz })
    }
}

simd_dispatch_fma! {
    /// `Σ_j (row[j] + coef0)^degree · mu[j]` (polynomial block row, fused with the product by μ).
    fn poly_row_dot<A>(row: &[f64], coef0: f64, degree: u32, mu: &[f64]) -> f64 {
        fused_dot::<A, _>(row, row, mu, &PolyMap { coef0, degree })
    }
}

// ------------------------------------------------------------------------------------------------
// Blocked evaluation
// ------------------------------------------------------------------------------------------------

/// Everything a block evaluation needs, computed once per call.
struct Plan<'a> {
    z: ArrayView2<'a, f64>,
    x: ArrayView2<'a, f64>,
    kernel: Kernel,
    /// GEMM scale: 1 (linear), γ (poly), 2γ (rbf).
    alpha: f64,
    /// RBF only: γ‖z_i‖² and (GEMM mode) γ‖x_j‖²; empty otherwise.
    gz: Vec<f64>,
    gx: Vec<f64>,
    /// Direct mode (at most [`DIRECT_MAX_ROWS`] query rows): inner products by SIMD dot
    /// products instead of GEMM, support norms computed while each support row is in cache;
    /// `zc` holds the query rows contiguously.
    direct: bool,
    zc: Vec<f64>,
}

/// Per-task scratch space, allocated once per rayon task and reused for all its blocks.
struct Scratch {
    /// One block of kernel values, `rows × cols` row-major.
    buf: Vec<f64>,
    /// Direct mode: γ‖x_j‖² of the current chunk.
    gx: Vec<f64>,
    /// Direct mode: a contiguous copy of a non-contiguous support row.
    xrow: Vec<f64>,
}

impl Scratch {
    fn new(d: usize) -> Self {
        Scratch {
            buf: vec![0.0; TILE_ROWS * TILE_COLS],
            gx: vec![0.0; TILE_COLS],
            xrow: vec![0.0; d],
        }
    }
}

/// Run `f` on `row` as a contiguous slice (copied into `buf` when it is strided), so that row
/// reductions give the same bits whatever the memory layout of the input.
#[inline]
fn with_contiguous<R>(
    row: ArrayView1<'_, f64>,
    buf: &mut Vec<f64>,
    f: impl FnOnce(&[f64]) -> R,
) -> R {
    match row.as_slice() {
        Some(sl) => f(sl),
        None => {
            buf.clear();
            buf.extend(row.iter().copied());
            f(buf)
        }
    }
}

/// `out[i] = f(row_i)` in parallel over the rows of `a`, each row seen as a contiguous slice.
fn map_rows(a: ArrayView2<'_, f64>, f: impl Fn(&[f64]) -> f64 + Sync) -> Vec<f64> {
    let mut out = vec![0.0; a.nrows()];
    out.par_iter_mut()
        .zip(a.axis_iter(Axis(0)).into_par_iter())
        .for_each_init(Vec::new, |buf, (o, row)| {
            *o = with_contiguous(row, buf, &f);
        });
    out
}

fn scaled_sq_norms(a: ArrayView2<'_, f64>, gamma: f64) -> Vec<f64> {
    map_rows(a, |r| gamma * dot(r, r))
}

impl<'a> Plan<'a> {
    fn new(z: ArrayView2<'a, f64>, x: ArrayView2<'a, f64>, kernel: Kernel, direct: bool) -> Self {
        let (alpha, gz, gx) = match kernel.kind {
            KernelKind::Linear => (1.0, Vec::new(), Vec::new()),
            KernelKind::Poly { gamma, .. } => (gamma, Vec::new(), Vec::new()),
            KernelKind::Rbf { gamma } => {
                let gx = if direct {
                    Vec::new()
                } else {
                    scaled_sq_norms(x, gamma)
                };
                (2.0 * gamma, scaled_sq_norms(z, gamma), gx)
            }
        };
        let zc = if direct {
            z.iter().copied().collect()
        } else {
            Vec::new()
        };
        Plan {
            z,
            x,
            kernel,
            alpha,
            gz,
            gx,
            direct,
            zc,
        }
    }

    /// Map the scaled inner products of query row `i` against a chunk of support rows (whose
    /// `γ‖x_j‖²` are `gx`, RBF only) to kernel values, in place.
    #[inline]
    fn transform_row(&self, i: usize, row: &mut [f64], gx: &[f64]) {
        match self.kernel.kind {
            KernelKind::Linear => {}
            KernelKind::Poly { degree, coef0, .. } => poly_row(row, coef0, degree),
            KernelKind::Rbf { .. } => rbf_row(row, self.gz[i], gx),
        }
        let shift = self.kernel.shift;
        if shift != 0.0 {
            for v in row.iter_mut() {
                *v += shift;
            }
        }
    }

    /// `out ← α z[r0..r0+rows] x[c0..c0+cols]ᵀ` (scaled inner products) by GEMM.
    fn gemm_into(&self, r0: usize, c0: usize, out: &mut ArrayViewMut2<'_, f64>) {
        let (rows, cols) = out.dim();
        let zt = self.z.slice(s![r0..r0 + rows, ..]);
        let xt = self.x.slice(s![c0..c0 + cols, ..]);
        general_mat_mul(self.alpha, &zt, &xt.t(), 0.0, out);
    }

    /// `out ← K(z[r0..r0+rows], x[c0..c0+cols])` (`out` is `rows × cols`, any strides with
    /// contiguous rows).
    fn block_into(&self, r0: usize, c0: usize, out: &mut ArrayViewMut2<'_, f64>) {
        self.gemm_into(r0, c0, out);
        let gx = if self.gx.is_empty() {
            &[][..]
        } else {
            &self.gx[c0..c0 + out.ncols()]
        };
        for (i, mut row) in out.outer_iter_mut().enumerate() {
            let row = row.as_slice_mut().expect("block rows are contiguous");
            self.transform_row(r0 + i, row, gx);
        }
    }

    /// `Σ_j K(z_i, x_j) μ_j` over a chunk, from the chunk's scaled inner products `row`.
    #[inline]
    fn row_dot(&self, i: usize, row: &[f64], gx: &[f64], mu: &[f64]) -> f64 {
        match self.kernel.kind {
            KernelKind::Linear => dot(row, mu),
            KernelKind::Poly { degree, coef0, .. } => poly_row_dot(row, coef0, degree, mu),
            KernelKind::Rbf { .. } => rbf_row_dot(row, self.gz[i], gx, mu),
        }
    }

    /// Direct mode: `scratch.buf ← α Z x[c0..c0+cols]ᵀ` (all query rows) and, for RBF,
    /// `scratch.gx ← γ‖x_j‖²`, in one pass over the support rows.
    fn direct_block(&self, c0: usize, cols: usize, scratch: &mut Scratch) {
        let (m, d) = self.z.dim();
        let gamma = match self.kernel.kind {
            KernelKind::Rbf { gamma } => Some(gamma),
            _ => None,
        };
        let Scratch { buf, gx, xrow } = scratch;
        for j in 0..cols {
            let xv = self.x.row(c0 + j);
            let xs: &[f64] = match xv.as_slice() {
                Some(sl) => sl,
                None => {
                    for (o, v) in xrow.iter_mut().zip(xv.iter()) {
                        *o = *v;
                    }
                    &xrow[..]
                }
            };
            if let Some(g) = gamma {
                gx[j] = g * dot(xs, xs);
            }
            for i in 0..m {
                buf[i * cols + j] = self.alpha * dot(&self.zc[i * d..(i + 1) * d], xs);
            }
        }
    }

    /// For query rows `r0..r0+acc.len()` and the support chunk starting at `c0` with weights
    /// `mu_chunk`: `acc[i] += Σ_j K(z_i, x_j) μ_j`.
    fn accumulate_block(
        &self,
        r0: usize,
        c0: usize,
        mu_chunk: &[f64],
        scratch: &mut Scratch,
        acc: &mut [f64],
    ) {
        let (rows, cols) = (acc.len(), mu_chunk.len());
        let gx: &[f64] = if self.direct {
            debug_assert!(r0 == 0 && rows == self.z.nrows());
            self.direct_block(c0, cols, scratch);
            &scratch.gx[..cols]
        } else {
            let buf = &mut scratch.buf[..rows * cols];
            let mut blk = ArrayViewMut2::from_shape((rows, cols), buf).expect("buffer");
            self.gemm_into(r0, c0, &mut blk);
            if self.gx.is_empty() {
                &[]
            } else {
                &self.gx[c0..c0 + cols]
            } // empty: not RBF
        };
        for (i, (a, row)) in acc
            .iter_mut()
            .zip(scratch.buf.chunks_exact(cols))
            .enumerate()
        {
            *a += self.row_dot(r0 + i, row, gx, mu_chunk);
        }
    }
}

fn assert_shapes(z: &ArrayView2<'_, f64>, x: &ArrayView2<'_, f64>) {
    assert_eq!(
        z.ncols(),
        x.ncols(),
        "kernel: both point sets must have the same number of features (use check_inputs)"
    );
}

/// `K(A, B)`: the `m × n` kernel matrix between the rows of `a` (`m × d`) and `b` (`n × d`),
/// computed by parallel row tiles (GEMM per block, kernel map applied in place while the block
/// is in cache). Use [`kernel_predict`] when only `K(A, B) μ` is needed.
///
/// # Panics
/// If `a` and `b` have different numbers of columns ([`check_inputs`] reports it as an error).
///
/// # Errors
/// [`DpError::OutOfMemory`] (naming `A`) when the `m × n` output cannot be allocated.
pub fn kernel_matrix(
    a: ArrayView2<'_, f64>,
    b: ArrayView2<'_, f64>,
    kernel: &Kernel,
) -> DpResult<Array2<f64>> {
    kernel_matrix_cancellable(a, b, kernel, Cancel::never())
}

/// [`kernel_matrix`] that polls `cancel` before every `TILE_ROWS × TILE_COLS` block (see
/// [`crate::cancel`]); bit-for-bit the same result when it is not set.
///
/// # Errors
/// As [`kernel_matrix`], and [`DpError::Interrupted`] once `cancel` is set.
pub fn kernel_matrix_cancellable(
    a: ArrayView2<'_, f64>,
    b: ArrayView2<'_, f64>,
    kernel: &Kernel,
    cancel: &Cancel,
) -> DpResult<Array2<f64>> {
    kernel_matrix_tiled(a, b, kernel, cancel, TILE_ROWS)
}

/// [`kernel_matrix`] in blocks of `rows` (rounded down to a multiple of [`TILE_ROWS`], at least
/// one) × [`TILE_COLS`]: bit for bit the same matrix. The GEMM (`matrixmultiply`) sums each entry
/// over fixed `kc`-long chunks of the inner dimension in its micro-kernel, so an entry's value
/// depends only on whether it falls in a full micro-tile or an edge one (which rounds the chunk
/// sums differently when `d > kc`); blocks whose rows start at multiples of [`TILE_ROWS`] put the
/// same entries, the last `m mod 8` rows, in edge tiles as the engine's 64-row blocks do. The
/// kernel map and shift act entry by entry. Tested: `tall_blocks_are_the_engine_blocks_bit_for_bit`.
/// So the accuracy the engine is assumed of ([`crate::fp::KERNEL_SUM_REL_ERROR`]) holds for these
/// entries as for its own.
///
/// # Errors
/// As [`kernel_matrix`].
pub fn kernel_matrix_tall(
    a: ArrayView2<'_, f64>,
    b: ArrayView2<'_, f64>,
    kernel: &Kernel,
    rows: usize,
) -> DpResult<Array2<f64>> {
    kernel_matrix_tiled(a, b, kernel, Cancel::never(), (rows / TILE_ROWS).max(1) * TILE_ROWS)
}

fn kernel_matrix_tiled(
    a: ArrayView2<'_, f64>,
    b: ArrayView2<'_, f64>,
    kernel: &Kernel,
    cancel: &Cancel,
    tile_rows: usize,
) -> DpResult<Array2<f64>> {
    assert_shapes(&a, &b);
    let (m, n) = (a.nrows(), b.nrows());
    let mut out = crate::alloc::zeros2("A", "the kernel matrix", m, n)?;
    if m == 0 || n == 0 {
        return Ok(out);
    }
    let plan = Plan::new(a, b, *kernel, false);
    out.axis_chunks_iter_mut(Axis(0), tile_rows)
        .into_par_iter()
        .enumerate()
        .for_each(|(t, mut tile)| {
            let r0 = t * tile_rows;
            let mut c0 = 0;
            while c0 < n {
                if cancel.is_cancelled() {
                    return;
                }
                let cols = TILE_COLS.min(n - c0);
                let mut blk = tile.slice_mut(s![.., c0..c0 + cols]);
                plan.block_into(r0, c0, &mut blk);
                c0 += cols;
            }
        });
    cancel.check()?;
    Ok(out)
}

/// `K(A, A)` (Gram matrix). Same as `kernel_matrix(a, a, kernel)`, except that the RBF diagonal
/// is exactly 1 (as in scikit-learn, which zeroes the self-distances when `Y is X`).
pub fn gram_matrix(a: ArrayView2<'_, f64>, kernel: &Kernel) -> DpResult<Array2<f64>> {
    gram_matrix_cancellable(a, kernel, Cancel::never())
}

/// [`gram_matrix`] polling `cancel` as [`kernel_matrix_cancellable`] does.
///
/// # Errors
/// As [`kernel_matrix_cancellable`].
pub fn gram_matrix_cancellable(
    a: ArrayView2<'_, f64>,
    kernel: &Kernel,
    cancel: &Cancel,
) -> DpResult<Array2<f64>> {
    let mut out = kernel_matrix_cancellable(a, a, kernel, cancel)?;
    if let KernelKind::Rbf { .. } = kernel.kind {
        out.diag_mut().fill(kernel.add_shift(1.0));
    }
    Ok(out)
}

/// `K(z_i, z_i)` for every row of `z`: `‖z_i‖²` (linear), `(γ‖z_i‖² + c)^p` (poly), `1` (RBF),
/// plus the kernel's shift.
pub fn kernel_diag(z: ArrayView2<'_, f64>, kernel: &Kernel) -> Array1<f64> {
    Array1::from_vec(map_rows(z, |r| {
        kernel.add_shift(match kernel.kind {
            KernelKind::Linear => dot(r, r),
            KernelKind::Poly {
                gamma,
                degree,
                coef0,
            } => ipow(gamma * dot(r, r) + coef0, degree),
            KernelKind::Rbf { .. } => 1.0,
        })
    }))
}

/// `f = K(Z, X) μ` for queries `z` (`m × d`), support points `x` (`n × d`) and weights `mu`
/// (`n`), without materialising `K(Z, X)` (see the module docs for tiling, memory and
/// determinism). The linear kernel uses `Z (Xᵀ μ)`.
///
/// # Panics
/// If the feature counts differ or `mu.len() != x.nrows()` ([`check_inputs`] reports both as
/// errors).
pub fn kernel_predict(
    z: ArrayView2<'_, f64>,
    x: ArrayView2<'_, f64>,
    mu: ArrayView1<'_, f64>,
    kernel: &Kernel,
) -> Array1<f64> {
    predict_impl(z, x, mu, kernel, None, Cancel::never()).expect("never cancelled")
}

/// [`kernel_predict`] that polls `cancel` before every (query tile, support chunk) block (see
/// [`crate::cancel`]); bit-for-bit the same result when it is not set.
///
/// # Errors
/// [`DpError::Interrupted`] once `cancel` is set (no partial result).
///
/// # Panics
/// As [`kernel_predict`].
pub fn kernel_predict_cancellable(
    z: ArrayView2<'_, f64>,
    x: ArrayView2<'_, f64>,
    mu: ArrayView1<'_, f64>,
    kernel: &Kernel,
    cancel: &Cancel,
) -> DpResult<Array1<f64>> {
    predict_impl(z, x, mu, kernel, None, cancel)
}

/// `force_rows`: `Some(true)` forces the query-tile path, `Some(false)` the support-wave path
/// (tests check both give identical bits); `None` chooses by shape. Inputs with at most
/// `DIRECT_MAX_ROWS` query rows always take the direct (GEMM-free) support-wave path.
///
/// A shifted kernel adds `shift · Σ_j μ_j` to every output (`Σ μ_j` summed pairwise once per
/// call): `Σ_j (K_ij + s) μ_j = Σ_j K_ij μ_j + s Σ_j μ_j`. Its rounding is within
/// `γ_{⌈log₂ n⌉+9}·s·Σ|μ_j| + u·|f|`, far inside the engine's documented relative accuracy
/// [`crate::fp::KERNEL_SUM_REL_ERROR`] against `Σ_j (|K_ij| + s)|μ_j|`. With `shift = 0` nothing is
/// added (bit-for-bit the base kernel).
fn predict_impl(
    z: ArrayView2<'_, f64>,
    x: ArrayView2<'_, f64>,
    mu: ArrayView1<'_, f64>,
    kernel: &Kernel,
    force_rows: Option<bool>,
    cancel: &Cancel,
) -> DpResult<Array1<f64>> {
    let mut out = predict_base(z, x, mu, kernel, force_rows, cancel)?;
    if kernel.shift != 0.0 && x.nrows() > 0 {
        let mu_vec: Vec<f64> = mu.iter().copied().collect();
        let offset = kernel.shift * pairwise_sum(&mu_vec);
        out.mapv_inplace(|f| f + offset);
    }
    Ok(out)
}

/// `F[:, k] = K(Z, X) V[:, k]` for `k` weight vectors at once (`vs[k]` of length `n`; returns `k`
/// output vectors of length `m`): each `TILE_ROWS × TILE_COLS` kernel block is evaluated **once**
/// (GEMM + kernel map, shift included) and multiplied by every vector, so a few vectors cost about
/// as much as one (the kernel map dominates). Parallel over query tiles; deterministic (fixed
/// blocks, each output accumulated over support chunks in increasing order with [`dot`]'s fixed
/// tree) — but not bit-for-bit [`kernel_predict`] (which fuses the map and the product and adds
/// the shift separately); same documented accuracy ([`crate::fp::KERNEL_SUM_REL_ERROR`]). The
/// linear kernel takes [`kernel_predict`]'s `O((m + n) d)` path per vector. Polls `cancel` before
/// every block.
///
/// # Errors
/// [`DpError::Interrupted`] once `cancel` is set (no partial result).
///
/// # Panics
/// If the feature counts differ or a vector's length is not `x.nrows()`.
pub fn kernel_matvecs_cancellable(
    z: ArrayView2<'_, f64>,
    x: ArrayView2<'_, f64>,
    vs: &[&[f64]],
    kernel: &Kernel,
    cancel: &Cancel,
) -> DpResult<Vec<Vec<f64>>> {
    assert_shapes(&z, &x);
    let (m, n) = (z.nrows(), x.nrows());
    assert!(vs.iter().all(|v| v.len() == n), "kernel_matvecs: vectors must have length x.nrows()");
    let nv = vs.len();
    if m == 0 || n == 0 || nv == 0 {
        return Ok(vec![vec![0.0; m]; nv]);
    }
    if let KernelKind::Linear = kernel.kind {
        return vs
            .iter()
            .map(|v| {
                cancel.check()?;
                let mu = ArrayView1::from(*v);
                Ok(predict_impl(z, x, mu, kernel, None, cancel)?.to_vec())
            })
            .collect();
    }
    let plan = Plan::new(z, x, *kernel, false);
    // output tile t holds rows r0..r0+rows, vector-major: out[k * rows + i]
    let tiles: Vec<Vec<f64>> = (0..m.div_ceil(TILE_ROWS))
        .into_par_iter()
        .map_init(
            || vec![0.0f64; TILE_ROWS * TILE_COLS],
            |buf, t| {
                let r0 = t * TILE_ROWS;
                let rows = TILE_ROWS.min(m - r0);
                let mut acc = vec![0.0f64; nv * rows];
                let mut c0 = 0;
                while c0 < n {
                    if cancel.is_cancelled() {
                        break;
                    }
                    let cols = TILE_COLS.min(n - c0);
                    let mut blk = ArrayViewMut2::from_shape((rows, cols), &mut buf[..rows * cols])
                        .expect("buffer");
                    plan.block_into(r0, c0, &mut blk);
                    for (i, row) in buf[..rows * cols].chunks_exact(cols).enumerate() {
                        for (k, v) in vs.iter().enumerate() {
                            acc[k * rows + i] += dot(row, &v[c0..c0 + cols]);
                        }
                    }
                    c0 += cols;
                }
                acc
            },
        )
        .collect();
    cancel.check()?;
    let mut out = vec![vec![0.0f64; m]; nv];
    for (t, acc) in tiles.iter().enumerate() {
        let r0 = t * TILE_ROWS;
        let rows = acc.len() / nv;
        for (k, o) in out.iter_mut().enumerate() {
            o[r0..r0 + rows].copy_from_slice(&acc[k * rows..(k + 1) * rows]);
        }
    }
    Ok(out)
}

/// Rows and columns of a square tile of [`kernel_matvecs_sym_cancellable`]: one support chunk of
/// the fused engine.
pub const SYM_TILE: usize = TILE_COLS;

/// Rows per block of [`kernel_matvecs_sym_cancellable`] and of [`kernel_matrix_tall`] (a held
/// Gram's build): taller than [`TILE_ROWS`] so that the GEMM repacks its `SYM_TILE × d` panel
/// less often per FLOP (measured, `d = 784`, 1 thread: 64 × 512 blocks 40.6 GFLOP/s, 256 × 512
/// 48.4). A multiple of [`TILE_ROWS`], so every entry is still bit for bit the engine's: see
/// [`kernel_matrix_tall`].
pub const SYM_ROWS: usize = 256;
const _: () = assert!(SYM_ROWS % TILE_ROWS == 0 && SYM_TILE % SYM_ROWS == 0);

/// Relative accuracy of [`kernel_matvecs_sym_cancellable`]'s outputs for `n` rows against
/// `Σ_j (|K_ij| + s)|v_j|`: [`crate::fp::sym_kernel_sum_rel_error`] for this module's tile shape
/// (the derivation lives there). `1.031e-12` at `n = 6,000`, `1.037e-12` at `n = 20,000`.
pub fn kernel_matvecs_sym_rel_error(n: usize) -> f64 {
    crate::fp::sym_kernel_sum_rel_error(n, SYM_TILE, SYM_ROWS)
}

/// `F[:, k] = K'(X, X) V[:, k]` for `k` weight vectors at once (`vs[k]` of length `n`), using the
/// kernel's **symmetry**: each lower-triangle tile `(I, J)`, `J ≤ I`, of `SYM_TILE × SYM_TILE`
/// rows/columns is evaluated once — in [`SYM_ROWS`]` × SYM_TILE` blocks by the engine's block code
/// (GEMM + kernel map, shift included; bit for bit the values of the blocks of
/// [`kernel_matvecs_cancellable`]`(X, X)`, see [`kernel_matrix_tall`]) — and used twice: its rows' dot products with `v` over
/// the columns of `J` go to the outputs of tile `I`, its columns' sums `Σ_i K_ij v_i` over each
/// block's rows to the outputs of tile `J` (a diagonal tile once, rows only). About half the
/// kernel evaluations of [`kernel_matvecs_cancellable`]`(X, X, ..)`: `n_t (n_t + 1)/2` tiles
/// instead of `n_t²` (`n_t = ⌈n/SYM_TILE⌉`).
///
/// **Schedule and determinism.** The tiles are processed in fixed *rounds* (the circle method of
/// a round-robin tournament over the `n_t` tile indices): within a round no tile index occurs
/// twice, so the round's tiles run in parallel (rayon) on disjoint outputs, and every output
/// receives its partial sums in round order, each partial with a fixed summation tree (the 8-lane
/// [`dot`] for rows, an in-order sum over a block's rows for columns). The result is therefore the
/// same bits whatever the thread count or scheduling (not bit-for-bit
/// [`kernel_matvecs_cancellable`], which sums in another order). With `n_t` even the diagonal tiles
/// form a first round of their own; with `n_t` odd each tile's diagonal fills the round in which
/// it has no partner.
///
/// **Accuracy.** Within [`kernel_matvecs_sym_rel_error`]`(n)` `· Σ_j (|K_ij| + s)|v_j|` of the
/// exact `Σ_j K'_ij v_j` (the engine's assumption [`crate::fp::KERNEL_SUM_REL_ERROR`] per entry —
/// the entries are the engine's own block values, and `K'` is symmetric — plus the rounding
/// depth [`crate::fp::sym_tiles_sum_terms`] of this scheme).
///
/// **Memory.** The `n · nv` outputs, plus per running task one `SYM_ROWS × SYM_TILE` block
/// (1 MiB) and `nv · SYM_TILE` column sums; never an `n × n` matrix. The linear kernel takes
/// [`kernel_matvecs_cancellable`]'s `O(n d)` path (its accuracy, within the bound above). Polls
/// `cancel` before every block and between rounds.
///
/// # Errors
/// [`DpError::Interrupted`] once `cancel` is set (no partial result).
///
/// # Panics
/// If a vector's length is not `x.nrows()`.
pub fn kernel_matvecs_sym_cancellable(
    x: ArrayView2<'_, f64>,
    vs: &[&[f64]],
    kernel: &Kernel,
    cancel: &Cancel,
) -> DpResult<Vec<Vec<f64>>> {
    let n = x.nrows();
    assert!(vs.iter().all(|v| v.len() == n), "kernel_matvecs_sym: vectors must have length x.nrows()");
    if n == 0 || vs.is_empty() {
        return Ok(vec![vec![0.0; n]; vs.len()]);
    }
    if let KernelKind::Linear = kernel.kind {
        return kernel_matvecs_cancellable(x, x, vs, kernel, cancel);
    }
    let plan = Plan::new(x, x, *kernel, false);
    sym_matvecs_with(n, vs, SYM_TILE, SYM_ROWS, &|r0, c0, out| plan.block_into(r0, c0, out), cancel)
}

/// The rounds of [`kernel_matvecs_sym_cancellable`] over `nt` tile indices: every pair `(I, J)`,
/// `J ≤ I < nt`, exactly once, no index twice within a round (circle method: with `p = nt` rounded
/// up to even and `m = p − 1`, round `r < m` pairs `r` with `p − 1` and `(r + i) mod m` with
/// `(r − i) mod m` for `0 < i < p/2`; the dummy `p − 1 = nt` of an odd `nt` stands for `r`'s
/// diagonal; with `nt` even the diagonals are a first round).
fn sym_rounds(nt: usize) -> Vec<Vec<(usize, usize)>> {
    if nt <= 1 {
        return vec![vec![(0, 0)]; nt];
    }
    let p = nt + nt % 2;
    let m = p - 1;
    let mut rounds = Vec::with_capacity(p);
    if nt % 2 == 0 {
        rounds.push((0..nt).map(|t| (t, t)).collect());
    }
    for r in 0..m {
        let mut round = Vec::with_capacity(p / 2);
        round.push(if p - 1 < nt { (p - 1, r) } else { (r, r) });
        for i in 1..p / 2 {
            let (a, b) = ((r + i) % m, (r + m - i) % m);
            round.push((a.max(b), a.min(b)));
        }
        rounds.push(round);
    }
    rounds
}

simd_dispatch! {
    /// `acc[k·c + j] += row[j] · a[k]` for every `k < a.len()`, `j < c = row.len()` (one row's
    /// contribution to the column sums of a block, in the order the rows come).
    fn col_axpy(acc: &mut [f64], row: &[f64], a: &[f64]) {
        let c = row.len();
        for (k, &ak) in a.iter().enumerate() {
            for (o, &r) in acc[k * c..(k + 1) * c].iter_mut().zip(row) {
                *o += r * ak;
            }
        }
    }
}

/// The tiled symmetric product over any symmetric matrix whose blocks `block(r0, c0, out)` writes
/// (`out` is `rows × cols` at rows `r0..`, columns `c0..`): the scheme of
/// [`kernel_matvecs_sym_cancellable`] with square tiles of `tile` rows and blocks of `rows` rows
/// (tests feed it adversarial matrices; the kernel passes the engine's `Plan::block_into`).
#[allow(clippy::type_complexity)]
fn sym_matvecs_with(
    n: usize,
    vs: &[&[f64]],
    tile: usize,
    rows: usize,
    block: &(dyn Fn(usize, usize, &mut ArrayViewMut2<'_, f64>) + Sync),
    cancel: &Cancel,
) -> DpResult<Vec<Vec<f64>>> {
    let nv = vs.len();
    let len = |t: usize| tile.min(n - t * tile);
    let out = sym_tile_rounds(
        n,
        nv,
        tile,
        cancel,
        || (vec![0.0f64; rows * tile], vec![0.0f64; nv * tile], vec![0.0f64; nv]),
        |(buf, colsum, a), ti, tj, oi, oj| {
            let (rows_i, cols) = (len(ti), len(tj));
            let c0 = tj * tile;
            let mut s0 = 0;
            while s0 < rows_i {
                if cancel.is_cancelled() {
                    return;
                }
                let nr = rows.min(rows_i - s0);
                let r0 = ti * tile + s0;
                let b = &mut buf[..nr * cols];
                let mut blk = ArrayViewMut2::from_shape((nr, cols), &mut b[..]).expect("buffer");
                block(r0, c0, &mut blk);
                // rows: one dot per (row, vector) into the outputs of tile I
                for (i, row) in b.chunks_exact(cols).enumerate() {
                    for (k, v) in vs.iter().enumerate() {
                        oi[k * rows_i + s0 + i] += dot(row, &v[c0..c0 + cols]);
                    }
                }
                if ti != tj {
                    // columns: Σ_i K_ij v_i over this block's rows (in order, from 0), then
                    // one addition into the outputs of tile J
                    let cs = &mut colsum[..nv * cols];
                    cs.fill(0.0);
                    for (i, row) in b.chunks_exact(cols).enumerate() {
                        for (ak, v) in a.iter_mut().zip(vs) {
                            *ak = v[r0 + i];
                        }
                        col_axpy(cs, row, a);
                    }
                    for (o, c) in oj.iter_mut().zip(cs.iter()) {
                        *o += c;
                    }
                }
                s0 += nr;
            }
        },
    );
    cancel.check()?;
    Ok(out)
}

/// The driver of a symmetric tiled product over `n` rows and `nv` vectors (square tiles of
/// `tile` rows and columns; [`kernel_matvecs_sym_cancellable`] and `klr_newton`'s products with a
/// held `f32` Gram): for every round of [`sym_rounds`], in order, the round's tiles `(I, J)` run in
/// parallel, each as `task(state, I, J, oi, oj)` with the outputs of tile `I` (`oi`) and, below
/// the diagonal, of tile `J` (`oj`; empty when `I = J`), vector-major (`oi[k · len(I) + i]` is
/// output `k` at row `I · tile + i`). No tile index occurs twice in a round, so the outputs are
/// disjoint and each receives its partial sums in round order: the same bits for any thread
/// count. `state` is per rayon worker (`init`). Stops between rounds once `cancel` is set (the
/// caller checks it: the outputs are then partial).
pub(crate) fn sym_tile_rounds<S>(
    n: usize,
    nv: usize,
    tile: usize,
    cancel: &Cancel,
    init: impl Fn() -> S + Sync + Send,
    task: impl Fn(&mut S, usize, usize, &mut [f64], &mut [f64]) + Sync + Send,
) -> Vec<Vec<f64>> {
    let nt = n.div_ceil(tile);
    let len = |t: usize| tile.min(n - t * tile);
    let mut acc: Vec<Vec<f64>> = (0..nt).map(|t| vec![0.0f64; nv * len(t)]).collect();
    for round in sym_rounds(nt) {
        if cancel.is_cancelled() {
            break;
        }
        // each tile index occurs once per round: its outputs move into that task and back
        let mut tasks: Vec<(usize, usize, Vec<f64>, Vec<f64>)> = round
            .iter()
            .map(|&(ti, tj)| {
                let oi = std::mem::take(&mut acc[ti]);
                let oj = if ti == tj { Vec::new() } else { std::mem::take(&mut acc[tj]) };
                (ti, tj, oi, oj)
            })
            .collect();
        tasks.par_iter_mut().for_each_init(&init, |state, (ti, tj, oi, oj)| task(state, *ti, *tj, oi, oj));
        for (ti, tj, oi, oj) in tasks {
            acc[ti] = oi;
            if ti != tj {
                acc[tj] = oj;
            }
        }
    }
    let mut out = vec![vec![0.0f64; n]; nv];
    for (t, a) in acc.iter().enumerate() {
        let (r0, l) = (t * tile, len(t));
        for (k, o) in out.iter_mut().enumerate() {
            o[r0..r0 + l].copy_from_slice(&a[k * l..(k + 1) * l]);
        }
    }
    out
}

/// `Σ v_i` by recursive pairwise summation (error `≤ γ_{⌈log₂ n⌉+8}·Σ|v_i|`: 8-term leaves; deterministic).
pub(crate) fn pairwise_sum(v: &[f64]) -> f64 {
    if v.len() <= 8 {
        return v.iter().fold(0.0, |a, &b| a + b);
    }
    let (a, b) = v.split_at(v.len() / 2);
    pairwise_sum(a) + pairwise_sum(b)
}

/// The base kernel's part of [`predict_impl`] (no shift).
fn predict_base(
    z: ArrayView2<'_, f64>,
    x: ArrayView2<'_, f64>,
    mu: ArrayView1<'_, f64>,
    kernel: &Kernel,
    force_rows: Option<bool>,
    cancel: &Cancel,
) -> DpResult<Array1<f64>> {
    assert_shapes(&z, &x);
    assert_eq!(
        mu.len(),
        x.nrows(),
        "kernel_predict: mu must have one weight per row of x"
    );
    let (m, n) = (z.nrows(), x.nrows());
    if m == 0 || n == 0 {
        return Ok(Array1::zeros(m));
    }
    if let KernelKind::Linear = kernel.kind {
        // O((m + n) d): no m × n loop to interrupt
        return Ok(linear_predict(z, x, mu));
    }
    let mu: Vec<f64> = mu.iter().copied().collect();
    let d = z.ncols();
    let direct = m <= DIRECT_MAX_ROWS;
    let plan = Plan::new(z, x, *kernel, direct);
    let mut out = vec![0.0f64; m];
    let n_tiles = m.div_ceil(TILE_ROWS);
    let n_chunks = n.div_ceil(TILE_COLS);
    let by_rows =
        !direct && force_rows.unwrap_or(n_tiles >= ROW_PARALLEL_MIN_TILES || n_chunks == 1);
    if by_rows {
        out.par_chunks_mut(TILE_ROWS).enumerate().for_each_init(
            || Scratch::new(d),
            |scratch, (t, acc)| {
                let r0 = t * TILE_ROWS;
                for (c, mu_chunk) in mu.chunks(TILE_COLS).enumerate() {
                    if cancel.is_cancelled() {
                        return;
                    }
                    plan.accumulate_block(r0, c * TILE_COLS, mu_chunk, scratch, acc);
                }
            },
        );
    } else {
        // Few query rows: evaluate up to WAVE_CHUNKS support chunks in parallel, each into its own
        // partial vector (all query rows), then add the partials in chunk order. Since
        // 0 + p = p exactly, this gives the same bits as the query-tile path.
        let mut partials = vec![0.0f64; WAVE_CHUNKS.min(n_chunks) * m];
        let mut c_start = 0;
        while c_start < n_chunks {
            cancel.check()?;
            let wave = WAVE_CHUNKS.min(n_chunks - c_start);
            let parts = &mut partials[..wave * m];
            parts.fill(0.0);
            parts.par_chunks_mut(m).enumerate().for_each_init(
                || Scratch::new(d),
                |scratch, (w, part)| {
                    let c0 = (c_start + w) * TILE_COLS;
                    let mu_chunk = &mu[c0..(c0 + TILE_COLS).min(n)];
                    for (t, acc) in part.chunks_mut(TILE_ROWS).enumerate() {
                        if cancel.is_cancelled() {
                            return;
                        }
                        plan.accumulate_block(t * TILE_ROWS, c0, mu_chunk, scratch, acc);
                    }
                },
            );
            for part in parts.chunks_exact(m) {
                for (o, p) in out.iter_mut().zip(part) {
                    *o += p;
                }
            }
            c_start += wave;
        }
    }
    cancel.check()?;
    Ok(Array1::from_vec(out))
}

/// Linear kernel: `Z (Xᵀ μ)` in `O((m + n) d)`; `Xᵀ μ` is summed over fixed row blocks in order.
fn linear_predict(
    z: ArrayView2<'_, f64>,
    x: ArrayView2<'_, f64>,
    mu: ArrayView1<'_, f64>,
) -> Array1<f64> {
    let d = x.ncols();
    let partials: Vec<Array1<f64>> = x
        .axis_chunks_iter(Axis(0), LINEAR_BLOCK)
        .into_par_iter()
        .zip(mu.axis_chunks_iter(Axis(0), LINEAR_BLOCK).into_par_iter())
        .map(|(xb, mb)| {
            let mut w = Array1::<f64>::zeros(d);
            for (row, &m) in xb.rows().into_iter().zip(mb.iter()) {
                w.scaled_add(m, &row);
            }
            w
        })
        .collect();
    let mut w = Array1::<f64>::zeros(d);
    for p in &partials {
        w += p;
    }
    let w = w.to_vec();
    Array1::from_vec(map_rows(z, |r| dot(r, &w)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{uniform, uniform_points};
    use ndarray::{array, Array2, ShapeBuilder};

    fn naive_matrix(a: &Array2<f64>, b: &Array2<f64>, k: &Kernel) -> Array2<f64> {
        Array2::from_shape_fn((a.nrows(), b.nrows()), |(i, j)| k.eval(a.row(i), b.row(j)))
    }

    /// Elementwise |K|·|μ| scale of the exact result (see tests/kernels/test_kernels.py).
    fn check_close(got: &Array1<f64>, kmat: &Array2<f64>, mu: &Array1<f64>, tol: f64) {
        let want = kmat.dot(mu);
        let scale = kmat.mapv(f64::abs).dot(&mu.mapv(f64::abs));
        for i in 0..want.len() {
            assert!(
                (got[i] - want[i]).abs() <= tol * scale[i] + 1e-300,
                "row {i}: got {} want {} (scale {})",
                got[i],
                want[i],
                scale[i]
            );
        }
    }

    #[test]
    fn constructors_validate() {
        assert!(Kernel::rbf(0.5).is_ok());
        for g in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = Kernel::rbf(g).unwrap_err();
            assert!(e.to_string().starts_with("gamma"), "{e}");
            assert!(Kernel::poly(g, 2, 1.0)
                .unwrap_err()
                .to_string()
                .starts_with("gamma"));
        }
        assert!(Kernel::poly(1.0, 0, 1.0)
            .unwrap_err()
            .to_string()
            .starts_with("degree"));
        assert!(Kernel::poly(1.0, 2, f64::NAN)
            .unwrap_err()
            .to_string()
            .starts_with("coef0"));
        assert!(Kernel::from_params("poly", 1.0, -3, 1.0, 0.0)
            .unwrap_err()
            .to_string()
            .starts_with("degree"));
        assert!(Kernel::from_params("poly", 1.0, 1 << 40, 1.0, 0.0)
            .unwrap_err()
            .to_string()
            .starts_with("degree"));
        assert!(Kernel::from_params("sigmoid", 1.0, 3, 1.0, 0.0)
            .unwrap_err()
            .to_string()
            .starts_with("kernel"));
        assert_eq!(
            Kernel::from_params("linear", f64::NAN, -1, f64::NAN, 0.0).unwrap(),
            Kernel::linear()
        );
        assert_eq!(
            Kernel::from_params("polynomial", 0.5, 2, 0.0, 0.0).unwrap(),
            Kernel::from(KernelKind::Poly {
                gamma: 0.5,
                degree: 2,
                coef0: 0.0
            })
        );
        assert_eq!(
            Kernel::from_params("rbf", 0.5, -7, f64::NAN, 0.0).unwrap(),
            Kernel::from(KernelKind::Rbf { gamma: 0.5 })
        );
        assert!(Kernel::from(KernelKind::Rbf { gamma: -1.0 })
            .validate()
            .is_err());
        assert_eq!(Kernel::rbf(1.0).unwrap().name(), "rbf");
    }

    #[test]
    fn a_set_cancel_flag_interrupts_without_a_partial_result() {
        let a = uniform_points(300, 5, 3);
        let b = uniform_points(700, 5, 4);
        let mu = Array1::from_vec(uniform(700, -2.0, 2.0, 5));
        let k = Kernel::rbf(0.5).unwrap();
        let stop = Cancel::new();
        stop.cancel();
        assert_eq!(
            kernel_matrix_cancellable(a.view(), b.view(), &k, &stop),
            Err(DpError::Interrupted)
        );
        assert_eq!(
            gram_matrix_cancellable(a.view(), &k, &stop),
            Err(DpError::Interrupted)
        );
        for rows in [1usize, 3, 300] {
            let z = a.slice(s![..rows, ..]);
            assert_eq!(
                kernel_predict_cancellable(z, b.view(), mu.view(), &k, &stop),
                Err(DpError::Interrupted)
            );
            // unset flag: the very bits of the plain function
            let got =
                kernel_predict_cancellable(z, b.view(), mu.view(), &k, &Cancel::new()).unwrap();
            assert_eq!(got, kernel_predict(z, b.view(), mu.view(), &k));
        }
        let got = kernel_matrix_cancellable(a.view(), b.view(), &k, &Cancel::new()).unwrap();
        assert_eq!(got, kernel_matrix(a.view(), b.view(), &k).unwrap());
    }

    #[test]
    fn eval_pairs() {
        let x = array![1.0, 2.0, 3.0];
        let v = array![0.5, -1.0, 2.0];
        assert_eq!(Kernel::linear().eval(x.view(), v.view()), 4.5);
        let p = Kernel::poly(0.5, 3, 1.0).unwrap();
        assert!((p.eval(x.view(), v.view()) - 3.25f64.powi(3)).abs() < 1e-12);
        let r = Kernel::rbf(0.1).unwrap();
        assert!((r.eval(x.view(), v.view()) - (-0.1f64 * 10.25).exp()).abs() < 1e-15);
    }

    fn kernels() -> Vec<Kernel> {
        vec![
            Kernel::linear(),
            Kernel::poly(0.3, 3, 1.0).unwrap(),
            Kernel::poly(0.7, 1, -0.5).unwrap(),
            Kernel::poly(0.2, 6, 0.0).unwrap(),
            Kernel::rbf(0.4).unwrap(),
            Kernel::rbf(5.0).unwrap(),
            // the intercept's shift K + b² (issue 23): every engine test also runs shifted
            Kernel::linear().with_shift(0.0625).unwrap(),
            Kernel::poly(0.3, 3, 1.0).unwrap().with_shift(1.0).unwrap(),
            Kernel::rbf(0.4).unwrap().with_shift(0.25).unwrap(),
        ]
    }

    #[test]
    fn matrix_and_predict_match_naive() {
        // sizes straddling the tile sizes
        for &(m, n, d) in &[
            (1, 1, 1),
            (3, 5, 2),
            (1, 1500, 54),
            (4, 2000, 9),
            (5, 600, 3),
            (65, 513, 7),
            (130, 1100, 3),
            (200, 40, 54),
            (1100, 70, 4),
        ] {
            let a = uniform_points(m, d, 10 + m as u64);
            let b = uniform_points(n, d, 20 + n as u64);
            let mu = Array1::from_vec(uniform(n, -2.0, 2.0, 30 + n as u64));
            for k in kernels() {
                let want = naive_matrix(&a, &b, &k);
                let got = kernel_matrix(a.view(), b.view(), &k).unwrap();
                for (g, w) in got.iter().zip(want.iter()) {
                    assert!(
                        (g - w).abs() <= 1e-13 * w.abs().max(1.0),
                        "{k:?}: {g} vs {w}"
                    );
                }
                check_close(
                    &kernel_predict(a.view(), b.view(), mu.view(), &k),
                    &want,
                    &mu,
                    1e-12,
                );
            }
        }
    }

    #[test]
    fn both_parallel_paths_are_bit_identical() {
        for &(m, n) in &[(70, 1500), (300, 2100), (5, 40_000), (1, 3000)] {
            let a = uniform_points(m, 9, 1);
            let b = uniform_points(n, 9, 2);
            let mu = Array1::from_vec(uniform(n, -1.0, 1.0, 3));
            for k in kernels() {
                let never = Cancel::never();
                let p1 =
                    predict_impl(a.view(), b.view(), mu.view(), &k, Some(true), never).unwrap();
                let p2 =
                    predict_impl(a.view(), b.view(), mu.view(), &k, Some(false), never).unwrap();
                let p3 = kernel_predict(a.view(), b.view(), mu.view(), &k);
                assert_eq!(p1, p2, "{k:?}");
                assert_eq!(p1, p3, "{k:?}");
            }
        }
    }

    #[test]
    fn deterministic_across_thread_counts() {
        let a = uniform_points(1100, 13, 4);
        let b = uniform_points(1300, 13, 5);
        let mu = Array1::from_vec(uniform(1300, -1.0, 1.0, 6));
        let a1 = a.slice(s![..2, ..]);
        for k in kernels() {
            let run1 = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| kernel_predict(a1, b.view(), mu.view(), &k))
            };
            assert_eq!(run1(1), run1(3), "{k:?} direct path");
            let run = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| {
                    (
                        kernel_predict(a.view(), b.view(), mu.view(), &k),
                        kernel_matrix(a.view(), b.view(), &k).unwrap(),
                    )
                })
            };
            let (p1, k1) = run(1);
            for t in [2, 3, 5] {
                let (p, km) = run(t);
                assert_eq!(p1, p, "{k:?} predict, {t} threads");
                assert_eq!(k1, km, "{k:?} matrix, {t} threads");
            }
        }
    }

    #[test]
    fn strided_and_fortran_views() {
        let a = uniform_points(90, 12, 7);
        let b = uniform_points(600, 12, 8);
        let mu = Array1::from_vec(uniform(1200, -1.0, 1.0, 9));
        let a_s = a.slice(s![..;2, ..;3]);
        let b_s = b.slice(s![..;-1, ..;3]);
        let mu_s = mu.slice(s![..;2]);
        let mut b_f = Array2::<f64>::zeros((600, 4).f());
        b_f.assign(&b_s);
        for k in kernels() {
            let want = naive_matrix(&a_s.to_owned(), &b_s.to_owned(), &k);
            let got = kernel_predict(a_s, b_s, mu_s, &k);
            check_close(&got, &want, &mu_s.to_owned(), 1e-12);
            assert_eq!(
                kernel_predict(a_s, b_f.view(), mu_s, &k),
                kernel_predict(a_s, b_s, mu_s, &k)
            );
            let km = kernel_matrix(a_s, b_f.view(), &k).unwrap();
            for (g, w) in km.iter().zip(want.iter()) {
                assert!((g - w).abs() <= 1e-13 * w.abs().max(1.0));
            }
        }
    }

    #[test]
    fn direct_path_strided_support() {
        let a = uniform_points(3, 10, 13);
        let b = uniform_points(1400, 20, 14);
        let bs = b.slice(s![.., ..;2]); // non-contiguous rows
        let mu = Array1::from_vec(uniform(1400, -1.0, 1.0, 15));
        for k in kernels() {
            let want = naive_matrix(&a, &bs.to_owned(), &k);
            check_close(
                &kernel_predict(a.view(), bs, mu.view(), &k),
                &want,
                &mu,
                1e-12,
            );
            assert_eq!(
                kernel_predict(a.view(), bs, mu.view(), &k),
                kernel_predict(a.view(), bs.to_owned().view(), mu.view(), &k)
            );
        }
    }

    #[test]
    fn gram_diag_and_symmetry() {
        let a = uniform_points(150, 6, 11);
        for k in kernels() {
            let g = gram_matrix(a.view(), &k).unwrap();
            assert_eq!(g, g.t(), "{k:?} gram is symmetric");
            let diag = kernel_diag(a.view(), &k);
            for i in 0..150 {
                assert!((g[[i, i]] - diag[i]).abs() <= 1e-13 * diag[i].abs().max(1.0));
            }
            if let KernelKind::Rbf { .. } = k.kind {
                assert!(g.diag().iter().all(|&v| v == k.add_shift(1.0)));
            }
        }
    }

    #[test]
    fn rbf_far_points_underflow_to_zero() {
        let a = array![[0.0, 0.0]];
        let b = array![[100.0, 0.0], [0.0, 0.0]];
        let k = Kernel::rbf(1.0).unwrap();
        let km = kernel_matrix(a.view(), b.view(), &k).unwrap();
        assert_eq!(km, array![[0.0, 1.0]]);
        let p = kernel_predict(a.view(), b.view(), array![3.0, 2.0].view(), &k);
        assert_eq!(p[0], 2.0);
    }

    #[test]
    fn empty_inputs() {
        let a = Array2::<f64>::zeros((0, 3));
        let b = uniform_points(4, 3, 1);
        let mu = Array1::<f64>::ones(4);
        let k = Kernel::rbf(1.0).unwrap();
        assert_eq!(kernel_predict(a.view(), b.view(), mu.view(), &k).len(), 0);
        assert_eq!(kernel_matrix(a.view(), b.view(), &k).unwrap().dim(), (0, 4));
        let e = Array2::<f64>::zeros((0, 3));
        assert_eq!(
            kernel_predict(b.view(), e.view(), Array1::zeros(0).view(), &k),
            Array1::<f64>::zeros(4)
        );
        assert!(check_inputs(a.view(), b.view(), None)
            .unwrap_err()
            .to_string()
            .starts_with("Z"));
    }

    #[test]
    fn check_inputs_names_arguments() {
        let z = uniform_points(3, 2, 1);
        let x = uniform_points(4, 2, 2);
        let bad_x = uniform_points(4, 3, 2);
        let mu = Array1::<f64>::ones(4);
        assert!(check_inputs(z.view(), x.view(), Some(mu.view())).is_ok());
        let msg = |r: DpResult<()>| r.unwrap_err().to_string();
        assert!(msg(check_inputs(z.view(), bad_x.view(), None)).starts_with("X"));
        assert!(msg(check_inputs(
            z.view(),
            x.view(),
            Some(Array1::ones(3).view())
        ))
        .starts_with("mu"));
        let mut zn = z.clone();
        zn[[1, 1]] = f64::NAN;
        assert!(msg(check_inputs(zn.view(), x.view(), None)).starts_with("Z"));
        let mut xn = x.clone();
        xn[[0, 0]] = f64::INFINITY;
        assert!(msg(check_inputs(z.view(), xn.view(), None)).starts_with("X"));
        let mut mun = mu.clone();
        mun[2] = f64::NAN;
        assert!(msg(check_inputs(z.view(), x.view(), Some(mun.view()))).starts_with("mu"));
    }

    #[test]
    fn shift_is_added_everywhere_and_zero_is_bit_identical() {
        let a = uniform_points(70, 5, 1);
        let b = uniform_points(600, 5, 2);
        let mu = Array1::from_vec(uniform(600, -2.0, 2.0, 3));
        let z1 = uniform_points(1, 5, 4);
        for base in [
            Kernel::linear(),
            Kernel::poly(0.5, 3, 1.0).unwrap(),
            Kernel::rbf(0.8).unwrap(),
        ] {
            // shift 0: the very same bits as the base kernel, on every path
            let zero = base.with_shift(0.0).unwrap();
            assert_eq!(zero, base);
            assert_eq!(
                kernel_matrix(a.view(), b.view(), &zero).unwrap(),
                kernel_matrix(a.view(), b.view(), &base).unwrap()
            );
            let s = 0.36;
            let k = base.with_shift(s).unwrap();
            // matrix, gram, diag: one rounding of k + s on top of the base value
            let km = kernel_matrix(a.view(), b.view(), &k).unwrap();
            let kb = kernel_matrix(a.view(), b.view(), &base).unwrap();
            for (x, y) in km.iter().zip(kb.iter()) {
                assert_eq!(*x, *y + s);
            }
            let g = gram_matrix(a.view(), &k).unwrap();
            let gb = gram_matrix(a.view(), &base).unwrap();
            for (x, y) in g.iter().zip(gb.iter()) {
                assert_eq!(*x, *y + s);
            }
            let d = kernel_diag(a.view(), &k);
            let db = kernel_diag(a.view(), &base);
            for (x, y) in d.iter().zip(db.iter()) {
                assert_eq!(*x, *y + s);
            }
            // fused predict (GEMM tiles and the direct one-row path): Σ μ_j (K_ij + s)
            let msum: f64 = mu.iter().sum();
            for z in [&a, &z1] {
                let f = kernel_predict(z.view(), b.view(), mu.view(), &k);
                let fb = kernel_predict(z.view(), b.view(), mu.view(), &base);
                let kbz = kernel_matrix(z.view(), b.view(), &base).unwrap();
                for i in 0..z.nrows() {
                    let scale: f64 = kbz
                        .row(i)
                        .iter()
                        .zip(mu.iter())
                        .map(|(kk, m)| (kk.abs() + s) * m.abs())
                        .sum();
                    let want = fb[i] + s * msum;
                    assert!(
                        (f[i] - want).abs() <= crate::fp::KERNEL_SUM_REL_ERROR * scale,
                        "{k:?}: {} vs {want}",
                        f[i]
                    );
                }
            }
            // eval and R_φ'² = R_φ² + b² (rounded up)
            let (x0, x1) = (a.row(0), b.row(0));
            assert_eq!(k.eval(x0, x1), base.eval(x0, x1) + s);
            let r2 = feature_map_radius_sq(&base, 1.5).unwrap();
            let r2s = feature_map_radius_sq(&k, 1.5).unwrap();
            assert!(r2s >= r2 + s && r2s <= (r2 + s) * (1.0 + 4.0 * f64::EPSILON));
        }
        // the augmented feature map: for the linear kernel, K'(x, v) = <(x, b), (v, b)>
        let k = Kernel::from_params("linear", 1.0, 3, 0.0, 0.5).unwrap();
        assert_eq!(k.shift, 0.25);
        assert_eq!(
            k.eval(array![1.0, 2.0].view(), array![3.0, -1.0].view()),
            1.0 * 3.0 + 2.0 * -1.0 + 0.5 * 0.5
        );
        assert_eq!(feature_map_radius_sq(&k, 2.0).unwrap(), 4.25f64.next_up());
        // validation names intercept_scaling
        for b in [-1.0, f64::NAN, f64::INFINITY, 1e101] {
            let e = Kernel::from_params("rbf", 1.0, 3, 0.0, b).unwrap_err();
            assert!(e.to_string().starts_with("intercept_scaling"), "{e}");
        }
        for s in [-0.5, f64::NAN, f64::INFINITY] {
            let e = Kernel::rbf(1.0).unwrap().with_shift(s).unwrap_err();
            assert!(e.to_string().starts_with("intercept_scaling"), "{e}");
            let bad = Kernel {
                kind: KernelKind::Linear,
                shift: s,
            };
            assert!(feature_map_radius_sq(&bad, 1.0).is_err());
        }
    }

    #[test]
    fn feature_map_radii() {
        assert_eq!(feature_map_radius_sq(&Kernel::linear(), 2.0).unwrap(), 4.0);
        assert_eq!(
            feature_map_radius_sq(&Kernel::poly(0.5, 3, 1.0).unwrap(), 2.0).unwrap(),
            27.0
        );
        assert_eq!(
            feature_map_radius_sq(&Kernel::poly(0.5, 2, 0.0).unwrap(), 2.0).unwrap(),
            4.0
        );
        assert_eq!(
            feature_map_radius_sq(&Kernel::rbf(7.0).unwrap(), 3.0).unwrap(),
            1.0
        );
        let e = feature_map_radius_sq(&Kernel::poly(0.5, 2, -1.0).unwrap(), 2.0).unwrap_err();
        assert!(
            e.to_string().starts_with("coef0") && e.to_string().contains("positive semi-definite")
        );
        for r in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(feature_map_radius_sq(&Kernel::linear(), r)
                .unwrap_err()
                .to_string()
                .starts_with("data_norm"));
        }
        assert!(
            feature_map_radius_sq(&Kernel::from(KernelKind::Rbf { gamma: -1.0 }), 1.0).is_err()
        );
        assert!(feature_map_radius_sq(&Kernel::poly(1.0, 400, 1.0).unwrap(), 10.0).is_err());
        // the bound really is the maximum of K(z, z) over the ball
        let k = Kernel::poly(0.3, 4, 0.5).unwrap();
        let z = uniform_points(500, 3, 12);
        let norms = z
            .rows()
            .into_iter()
            .map(|r| r.dot(&r).sqrt())
            .fold(0.0, f64::max);
        let bound = feature_map_radius_sq(&k, norms).unwrap();
        assert!(kernel_diag(z.view(), &k)
            .iter()
            .all(|&v| v <= bound * (1.0 + 1e-12)));
    }

    #[test]
    fn ipow_matches_powi() {
        for p in 1..20u32 {
            for b in [-1.7, 0.3, 1.0, 2.5] {
                let (a, w) = (ipow(b, p), f64::powi(b, p as i32));
                assert!((a - w).abs() <= 1e-14 * w.abs(), "{b}^{p}");
            }
        }
        let mut row = vec![0.5; 100];
        poly_row(&mut row, 1.0, 5);
        assert!(row.iter().all(|&v| v == ipow(1.5, 5)));
    }

    // ---------------------------------------------------------------------------------------------
    // Symmetric multi-vector product (issue 26)
    // ---------------------------------------------------------------------------------------------

    use crate::fp::{gamma_k, sym_tiles_sum_terms, KERNEL_SUM_REL_ERROR};

    use crate::test_util::{dot2, dot2_err};

    #[test]
    fn sym_rounds_cover_the_lower_triangle_once_with_disjoint_tiles() {
        for nt in 1..=17usize {
            let mut seen = vec![0u32; nt * nt];
            for round in sym_rounds(nt) {
                let mut used = vec![false; nt];
                for (i, j) in round {
                    assert!(j <= i && i < nt, "nt = {nt}: ({i}, {j})");
                    seen[i * nt + j] += 1;
                    assert!(!used[i] && !used[j], "nt = {nt}: a tile twice in a round");
                    used[i] = true;
                    used[j] = true;
                }
            }
            for i in 0..nt {
                for j in 0..nt {
                    assert_eq!(seen[i * nt + j], u32::from(j <= i), "nt = {nt}: ({i}, {j})");
                }
            }
        }
    }

    fn sym_vectors(n: usize, nv: usize, seed: u64) -> Vec<Vec<f64>> {
        (0..nv)
            .map(|k| {
                let mut v = uniform(n, -2.0, 2.0, seed + k as u64);
                // exact zeros and a few large weights
                for (j, x) in v.iter_mut().enumerate() {
                    if j % 13 == 5 {
                        *x = 0.0;
                    } else if j % 97 == 1 {
                        *x *= 1e3;
                    }
                }
                v
            })
            .collect()
    }

    #[test]
    fn sym_matvecs_agree_with_the_engine_within_both_bounds() {
        // n below, at, and straddling the tile (and its 64-row blocks); nv = 1 and > 1
        for &(n, d, nv) in &[(1usize, 3usize, 1usize), (37, 4, 2), (512, 5, 1), (513, 3, 3), (1100, 7, 1), (1601, 6, 4)] {
            let x = uniform_points(n, d, 40 + n as u64);
            let vs = sym_vectors(n, nv, 7 * n as u64);
            let refs: Vec<&[f64]> = vs.iter().map(|v| &v[..]).collect();
            for k in kernels() {
                let sym = kernel_matvecs_sym_cancellable(x.view(), &refs, &k, Cancel::never()).unwrap();
                let eng = kernel_matvecs_cancellable(x.view(), x.view(), &refs, &k, Cancel::never()).unwrap();
                let base = kernel_matrix(x.view(), x.view(), &Kernel { shift: 0.0, ..k }).unwrap();
                let rel = kernel_matvecs_sym_rel_error(n);
                assert!(rel > KERNEL_SUM_REL_ERROR);
                for (kk, v) in vs.iter().enumerate() {
                    let mut differs = false;
                    for i in 0..n {
                        let scale: f64 = (0..n).map(|j| (base[[i, j]].abs() + k.shift) * v[j].abs()).sum();
                        let dlt = (sym[kk][i] - eng[kk][i]).abs();
                        assert!(dlt <= (rel + KERNEL_SUM_REL_ERROR) * scale, "{k:?} n = {n} row {i}: {dlt:e}");
                        differs |= dlt != 0.0;
                    }
                    if n > 2 * SYM_TILE && !matches!(k.kind, KernelKind::Linear) {
                        assert!(differs, "{k:?} n = {n}: another summation order");
                    }
                }
            }
        }
    }

    #[test]
    fn tall_blocks_are_the_engine_blocks_bit_for_bit() {
        // an entry's value does not depend on how many TILE_ROWS-multiples of rows its block has:
        // kernel_matrix_tall (the held Gram's build, and the symmetric pass's SYM_ROWS blocks
        // through the same block_into) is kernel_matrix bit for bit, ragged ends and d = 784 (more
        // than one kc chunk) included. (Blocks of other heights are not: with d > kc the GEMM's
        // edge micro-tiles round the chunk sums differently; measured, e.g. 100-row blocks.)
        for &(m, n, d) in &[(1usize, 1usize, 3usize), (70, 33, 5), (300, 530, 17), (257, 600, 784)] {
            let a = uniform_points(m, d, 3 + m as u64);
            let b = uniform_points(n, d, 5 + n as u64);
            for k in kernels() {
                let eng = kernel_matrix(a.view(), b.view(), &k).unwrap();
                for rows in [TILE_ROWS, 2 * TILE_ROWS, SYM_ROWS, 1024] {
                    let tall = kernel_matrix_tall(a.view(), b.view(), &k, rows).unwrap();
                    assert!(
                        eng.iter().zip(tall.iter()).all(|(p, q)| p.to_bits() == q.to_bits()),
                        "{k:?} m {m} n {n} d {d} rows {rows}"
                    );
                }
            }
        }
    }

    #[test]
    fn sym_matvecs_are_bit_identical_across_thread_counts() {
        let x = uniform_points(2100, 9, 3);
        let vs = sym_vectors(2100, 3, 11);
        let refs: Vec<&[f64]> = vs.iter().map(|v| &v[..]).collect();
        for k in kernels() {
            let run = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                pool.install(|| kernel_matvecs_sym_cancellable(x.view(), &refs, &k, Cancel::never()).unwrap())
            };
            let one = run(1);
            for t in [2, 3] {
                let got = run(t);
                for (a, b) in one.iter().zip(&got) {
                    assert!(a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits()), "{k:?}, {t} threads");
                }
            }
            // each vector alone gives its column of the batch, bit for bit (same blocks, same sums)
            let alone = kernel_matvecs_sym_cancellable(x.view(), &refs[1..2], &k, Cancel::never()).unwrap();
            assert_eq!(alone[0], one[1], "{k:?}");
        }
    }

    #[test]
    fn sym_matvecs_cancel_without_a_partial_result() {
        let x = uniform_points(1300, 5, 8);
        let vs = sym_vectors(1300, 2, 9);
        let refs: Vec<&[f64]> = vs.iter().map(|v| &v[..]).collect();
        let k = Kernel::rbf(0.5).unwrap().with_shift(0.25).unwrap();
        let stop = Cancel::new();
        stop.cancel();
        assert_eq!(kernel_matvecs_sym_cancellable(x.view(), &refs, &k, &stop), Err(DpError::Interrupted));
        // interrupted mid-pass (after a few blocks)
        for polls in [1u64, 5, 10] {
            let c = Cancel::after(polls);
            assert_eq!(kernel_matvecs_sym_cancellable(x.view(), &refs, &k, &c), Err(DpError::Interrupted));
        }
        let plain = kernel_matvecs_sym_cancellable(x.view(), &refs, &k, Cancel::never()).unwrap();
        assert_eq!(kernel_matvecs_sym_cancellable(x.view(), &refs, &k, &Cancel::new()).unwrap(), plain);
        // empty inputs
        assert_eq!(kernel_matvecs_sym_cancellable(x.view(), &[], &k, Cancel::never()).unwrap().len(), 0);
        let e = Array2::<f64>::zeros((0, 5));
        assert_eq!(kernel_matvecs_sym_cancellable(e.view(), &[&[][..]], &k, Cancel::never()).unwrap(), vec![Vec::<f64>::new()]);
    }

    /// Cancellation against an exact reference: a polynomial kernel on dyadic points (every kernel
    /// value is exact in binary64, so the reference `Σ_j K'_ij v_j` by Dot2 is the exact result to
    /// within its own tiny error), pairs of equal rows with weights `v, −v(1 + 2⁻³⁰)`: the outputs
    /// are ~1e-9 of `Σ_j (|K_ij| + s)|v_j|`.
    #[test]
    fn sym_matvecs_meet_their_bound_on_cancelling_exact_inputs() {
        let (n, d) = (1538usize, 6usize);
        let raw = uniform(n * d, -8.0, 8.0, 21);
        let mut x = Array2::<f64>::zeros((n, d));
        for i in 0..n {
            for c in 0..d {
                // row 2m + 1 repeats row 2m; entries are multiples of 1/8 in [-1, 1]
                x[[i, c]] = raw[(i - i % 2) * d + c].trunc() / 8.0;
            }
        }
        let w = uniform(n, 0.5, 1.0, 22);
        let v: Vec<f64> = (0..n)
            .map(|j| if j % 2 == 0 { w[j] } else { -w[j - 1] * (1.0 + 2f64.powi(-30)) })
            .collect();
        let k = Kernel::poly(1.0, 3, 1.0).unwrap().with_shift(0.25).unwrap();
        let sym = kernel_matvecs_sym_cancellable(x.view(), &[&v[..]], &k, Cancel::never()).unwrap().pop().unwrap();
        let eng = kernel_matvecs_cancellable(x.view(), x.view(), &[&v[..]], &k, Cancel::never()).unwrap().pop().unwrap();
        let km = kernel_matrix(x.view(), x.view(), &k).unwrap();
        let rel = kernel_matvecs_sym_rel_error(n);
        let depth = sym_tiles_sum_terms(n, SYM_TILE, SYM_ROWS);
        let mut worst = 0.0f64;
        for i in 0..n {
            // the engine's entries are exact here: the kernel at dyadic points, by definition
            let exact_row: Vec<f64> = (0..n).map(|j| k.eval(x.row(i), x.row(j))).collect();
            assert_eq!(km.row(i).to_vec(), exact_row, "row {i}: the entries are exact");
            let (want, abs) = dot2(&exact_row, &v);
            assert!(want.abs() < 1e-6 * abs, "row {i}: cancels");
            let err = (sym[i] - want).abs();
            assert!(err <= rel * abs, "row {i}: {err:e} > {rel:e} · {abs:e}");
            // with exact entries only the summation is left: within γ_k
            assert!(err <= gamma_k(depth) * abs + dot2_err(n, want, abs), "row {i}");
            assert!((eng[i] - want).abs() <= KERNEL_SUM_REL_ERROR * abs);
            worst = worst.max(err / abs);
        }
        assert!(worst > 0.0, "the cancellation is visible");
    }

    /// The summation depth is nearly attained: a symmetric matrix with a 1 on the diagonal and
    /// entries `e` just under `u/64` between tile 0 and the other tiles makes every column-block
    /// sum of a tile-0 output just under half an ulp of the 1 it is added to, so each of the
    /// `8 (n_t − 1)` additions rounds it away (error `≈ 8 (n_t − 1) u` relative to `Σ|terms| ≈ 1`).
    /// A bound of half the depth `k` (or of the engine's depth alone) would be violated.
    #[test]
    fn sym_matvecs_sum_meets_its_depth_and_half_of_it_is_caught() {
        let (n, tile, rows) = (8192usize, SYM_TILE, TILE_ROWS);
        let e = 2f64.powi(-59) * (1.0 - 2f64.powi(-10));
        let g = |i: usize, j: usize| -> f64 {
            if i == j {
                1.0
            } else if (i < tile) != (j < tile) {
                e
            } else if i >= tile && j >= tile {
                // the other tiles: ordinary values (symmetric)
                ((i * 31 + j * 31) % 17) as f64 / 16.0 - 0.5
            } else {
                0.0
            }
        };
        let block = |r0: usize, c0: usize, out: &mut ArrayViewMut2<'_, f64>| {
            for ((i, j), o) in out.indexed_iter_mut() {
                *o = g(r0 + i, c0 + j);
            }
        };
        let v = vec![1.0f64; n];
        let got = sym_matvecs_with(n, &[&v[..]], tile, rows, &block, Cancel::never()).unwrap().pop().unwrap();
        let k = sym_tiles_sum_terms(n, tile, rows);
        assert_eq!(k, 194.0);
        let mut worst = 0.0f64;
        for i in (0..n).step_by(7).chain(0..tile) {
            let row: Vec<f64> = (0..n).map(|j| g(i, j)).collect();
            let (want, abs) = dot2(&row, &v);
            let err = (got[i] - want).abs();
            let r = dot2_err(n, want, abs);
            assert!(err <= gamma_k(k) * abs + r, "row {i}: {err:e} > γ_{k}·{abs:e}");
            if i < tile {
                worst = worst.max((err - r) / abs);
            }
        }
        assert!(worst > gamma_k((k / 2.0).floor()), "worst {worst:e} vs γ_(k/2) {:e}", gamma_k(k / 2.0));
        assert!(worst > gamma_k(crate::fp::lanes8_sum_terms(tile)));
    }
}

//! Certified multinomial kernel logistic regression: the vector-valued `F = (f_1, …, f_K) ∈ H^K`
//! that the joint multi-class private releases perturb (issue 24; Python:
//! `dpcore.kernel_learning.multiclass`).
//!
//! # Problem
//!
//! With labels `y_i ∈ {0, …, K−1}`, per-sample weights `s_i > 0` (class weights; `1` without),
//! a kernel `k` with feature map `φ` (possibly shifted, `k + b²`, for the regularised intercept)
//! and `λ > 0`:
//!
//! ```text
//! P(F) = (1/n) Σ_i s_i ℓ(z_i, y_i) + (λ/2) Σ_k ‖f_k‖²,   z_i = (f_1(x_i), …, f_K(x_i)),
//! ℓ(z, y) = lse(z) − z_y,   lse(z) = log Σ_k e^{z_k}.
//! ```
//!
//! `∇_z ℓ = softmax(z) − e_y`, whose ℓ2 norm is `≤ √2` (`‖p − e_y‖² = (1 − p_y)² + Σ_{k≠y} p_k²
//! ≤ 2(1 − p_y)² ≤ 2`), so `ℓ(·, y)` is `√2`-Lipschitz in the ℓ2 norm of the score vector,
//! whatever `K` (docs/privacy.md, "Multi-class kernel releases").
//!
//! # Dual and certificate
//!
//! The conjugate of `lse` is the negative entropy on the simplex, `lse*(p) = Σ_k p_k log p_k`
//! (`p ∈ Δ_K`), so `ℓ(·, y)* (v) = lse*(v + e_y)`. With one dual point `p_i ∈ Δ_K` per record the
//! Fenchel dual (in the same `(1/n)`-scaled units as `P`) is
//!
//! ```text
//! F(p) = Σ_i M_i φ(x_i),   M_ik = s_i (e_{y_i} − p_i)_k / (λ n)     (representer coefficients)
//! D(p) = −(λ/2) ‖F(p)‖² − (1/n) Σ_i s_i Σ_k p_ik log p_ik .
//! ```
//!
//! Weak duality gives `D(p) ≤ P(F*)` for every feasible `p`; `P` is `λ`-strongly convex in `H^K`,
//! so `gap = P(F(p)) − D(p) ≥ (λ/2) ‖F(p) − F*‖²_{H^K}`. Since `λ‖F(p)‖² = (1/n) Σ_i s_i <e_{y_i}
//! − p_i, z_i>`, the gap is a sum of non-negative per-point Fenchel–Young gaps of `lse`:
//!
//! ```text
//! gap = (1/n) Σ_i s_i [ lse(z_i) − <p_i, z_i> + Σ_k p_ik log p_ik ],   z_i = F(p)(x_i),
//! ```
//!
//! zero iff `p_i = softmax(z_i)`. [`certify`] computes it **from `p` alone**: `M` is formed from
//! `p`, and `z = K(X, X) M` is recomputed, all `K` columns in one pass (each kernel block evaluated
//! once), with the fused kernel engine
//! ([`crate::kernels::evaluation::kernel_matvecs_cancellable`], documented to
//! [`KERNEL_SUM_REL_ERROR`] relative to `Σ_j |K'_ij| |M_jk|`, shift included), independently of the
//! solver. (Until issue 26: one [`crate::kernels::evaluation::kernel_predict`] pass per class.)
//!
//! **The simplex, exactly.** A computed `p_i` does not sum to 1 exactly. [`certify`] uses the
//! entries `p_ik, k ≠ y_i` as given (`≥ 0`, with `Σ_{k≠y_i} p_ik ≤ 1`, else refused) and defines
//! `p_{i y_i} := 1 − Σ_{k≠y_i} p_ik` (a real number in `[0, 1]`): a point of `Δ_K` exactly. The
//! stored coefficients are `M_ik = fl(−c s_i p_ik)` (`k ≠ y_i`) and `M_{i y_i} = fl(c s_i Σ_{k≠y_i}
//! p_ik)` (`c = 1/(λn)`), so each row of the stored `M` is within `γ_{K+2} c s_i √2` (ℓ2) of the
//! exact `M_i(p)`: the released function is within `δ_F = √2 γ_{K+2} c Σ_i s_i sqrt(k(x_i, x_i))`
//! of `F(p)` in `H^K`.
//!
//! **Floating point.** Each recomputed `z_ik` is within `e_ik = KERNEL_SUM_REL_ERROR ·
//! sqrt(k_ii) · Σ_j sqrt(k_jj) |M_jk|` of the stored model's value (Cauchy–Schwarz in feature
//! space), and within `sqrt(k_ii) δ_F` more of `F(p)(x_i)`. The per-point gap term has gradient
//! `softmax(z_i) − p_i` in `z_i` (entries in `[−1, 1]`, summing to 0, ℓ1 norm `≤ 2`), so it moves
//! by at most `2 max_k |δz_ik|`; the scalar evaluation of each term (`K` exponentials, logs,
//! products and sums) is within `γ_{4K+16}(|lse| + Σ_k p_ik |z_ik| + Σ_k |p_ik log p_ik| + 1)`
//! (with the libm accuracy of [`crate::fp::LIBM_LN_ULPS`] folded into the `+16`). All of this is
//! added to the gap. Finally the bound is on `F(p)`; the certificate folds `δ_F` in, reporting
//! `gap' = (sqrt(gap) + δ_F sqrt(λ/2))²`, so that `sqrt(2 gap'/λ) ≥ ‖F_stored − F*‖_{H^K}`.
//!
//! # Solver
//!
//! Newton's method in the primal coefficients `A` (`F = Σ_i A_i φ(x_i)`, `A ∈ R^{n×K}`) with the
//! Newton system solved by conjugate gradients **in the `H^K` inner product** `<U, V>_G = tr(Uᵀ G
//! V)` (`G` the Gram matrix). With `z = G A`, `P_i = softmax(z_i)`, `W_i = diag(P_i) − P_i P_iᵀ`
//! and the coefficient gradient `R = (1/n) S (P − Y) + λ A` (the function-space gradient is `Φ R`),
//! the Newton operator is `T(U) = (1/n) S W(G U) + λ U`, self-adjoint and positive definite for
//! `<·,·>_G`, with eigenvalues in `[λ, λ + max_i s_i k_ii·n⁻¹·‖G‖/2]`. CG keeps `G p` and `G ρ` by
//! recurrence, so each CG iteration costs **one** kernel product `G (T p)` with `K` columns.
//! Inexact Newton (forcing term `min(0.1, ‖g‖^{1/2})`), Armijo backtracking on the exact objective
//! along the direction (`G Δ` is known, no extra product). Each Newton iteration recomputes `z =
//! G A` and `G R` exactly (two products) and estimates the duality gap of `p = softmax(z)` from
//! them (`G M(p) = z − G R/λ`); when the estimate is below the target, the independent
//! certificate [`certify`] decides (never the estimate).
//!
//! **Nyström warm start.** Before the first Newton step a pivoted (incomplete) Cholesky factor
//! `G ≈ L Lᵀ` (`L` `n × r`; at most `n/20` clamped to `[400, 800]` greedy pivots on the largest
//! residual diagonal, Harbrecht, Peters & Schneider 2012, [`pivot_budget`]; stopping early when `max_i s_i/(4 n λ) · trace(G − L Lᵀ) ≤ ½`: the
//! part the factor misses then changes the Newton operator little) spans the functions `e =
//! Φ_piv L_pp^{-T}` (orthonormal in `H`, `L_pp = L[piv]`), whose values at the data are `L`. The
//! problem restricted to `F = e W` (`W ∈ R^{r×K}`) is `min_W (1/n) Σ_i s_i ℓ(L_i W, y_i) +
//! (λ/2)‖W‖²`, solved by damped Newton–CG with no kernel product (`O(n r K)` per CG step); the
//! iteration starts from its coefficients `A₀ = E W` (`E` puts `L_pp^{-T} W` on the pivot rows),
//! `z = G A₀` computed exactly. The certificate is untouched (it is computed from `p` alone).
//! Measured (Letter-26, γ = 8, C = 1, tol 1e-6): 42 kernel products instead of 117 at n = 4,000,
//! 76 instead of 216 at n = 16,000.
//! A per-class preconditioner from the same factor (`λ I + Lᵀ diag(p_k(1 − p_k)) L`, one `r × r`
//! Cholesky per class per Newton step) was tried and dropped: it cut the early CG steps but not the
//! late ones, and its `K n r²` set-up cost more than it saved.
//!
//! Kernel products use the Gram matrix when its `8 n²` bytes fit the cache budget (computed once,
//! products in parallel row blocks), otherwise blocks of `BLOCK_ROWS` kernel rows computed on the
//! fly by [`crate::kernels::evaluation::kernel_matrix`] (never more than `BLOCK_ROWS × n` per
//! worker) and multiplied by the `n × K` right-hand side. Deterministic (fixed block order,
//! disjoint outputs).
//!
//! The hook (progress / Ctrl-C, [`crate::kernel_learning::erm::Progress`]) is called after every
//! kernel product; when it returns `false` the solve is abandoned (`Ok(None)`).

use ndarray::{linalg::general_mat_mul, Array2, ArrayView1, ArrayView2, Axis, Zip};
use rayon::prelude::*;

use crate::cancel::Cancel;
use crate::error::{DpError, DpResult};
use crate::fp::{gamma_k, KERNEL_SUM_REL_ERROR};
use crate::kernel_learning::erm::{Progress, StopReason};
use crate::kernel_learning::klr_newton;
use crate::kernels::evaluation::{self, Kernel};

/// Rows of kernel values computed at once per worker when the Gram matrix does not fit.
const BLOCK_ROWS: usize = 128;
/// The solver asks for the certificate when its estimate is below `STOP_FRACTION · tol`.
const STOP_FRACTION: f64 = 0.5;
/// Maximum CG iterations per Newton step.
const MAX_CG: usize = 2000;
/// Pivots of the Nyström warm start at most: `n/20` within `[MIN_PIVOTS, MAX_PIVOTS]`.
const MIN_PIVOTS: usize = 400;
/// See [`MIN_PIVOTS`].
const MAX_PIVOTS: usize = 800;
/// Newton steps of the Nyström warm start at most.
const MAX_NYSTROM_STEPS: usize = 50;
/// Conjugate-gradient steps per Newton step of the warm start at most.
const MAX_NYSTROM_CG: usize = 200;
/// The warm start stops when its gradient norm has fallen by this factor.
const NYSTROM_RTOL: f64 = 1e-6;

/// Solver options.
#[derive(Debug, Clone, Copy)]
pub struct MulticlassOptions {
    /// Regularisation `λ > 0`.
    pub lam: f64,
    /// Target certified duality gap (absolute, `(1/n)`-scaled objective), `> 0`.
    pub tol: f64,
    /// Maximum number of Newton iterations.
    pub max_iter: u64,
    /// Memory budget for the Gram matrix in bytes (used when `8 n²` fits).
    pub cache_bytes: usize,
}

/// Certificate of a dual point `p` (module docs).
#[derive(Debug, Clone)]
pub struct MulticlassCertificate {
    /// Stored representer coefficients `M` (`n × K`): `F = Σ_i M_i φ(x_i)`.
    pub mu: Array2<f64>,
    /// `z = K(X, X) M` (`n × K`), recomputed with the fused engine.
    pub decision: Array2<f64>,
    /// `P(F)`.
    pub primal: f64,
    /// `D(p)`.
    pub dual: f64,
    /// Certified gap (module docs): `sqrt(2 gap/λ) ≥ ‖F_stored − F*‖_{H^K}`.
    pub gap: f64,
    /// `‖F‖_{H^K} = sqrt(Σ_ik M_ik z_ik)`.
    pub f_norm: f64,
    /// The part of `gap` that is floating-point slack (not solver error).
    pub slack: f64,
}

/// Result of [`fit_with_hook`].
#[derive(Debug, Clone)]
pub struct MulticlassSolution {
    /// Dual point `p` (`n × K`, rows in the simplex; `p_{i y_i}` is `1 − Σ_{k≠y_i} p_ik`).
    pub p: Array2<f64>,
    /// Final certificate (from `p` alone).
    pub cert: MulticlassCertificate,
    /// Newton iterations.
    pub n_iter: u64,
    /// Kernel products (`G V` with `K` columns) performed.
    pub n_matvec: u64,
    /// `cert.gap ≤ tol`.
    pub converged: bool,
    /// Why the solver stopped.
    pub stop_reason: StopReason,
    /// `(Newton iteration, certified gap)` at every certificate.
    pub history: Vec<(u64, f64)>,
    /// Whether the Gram matrix was cached.
    pub full_gram: bool,
}

// ------------------------------------------------------------------------------------------------
// Validation
// ------------------------------------------------------------------------------------------------

fn check_problem(
    x: &ArrayView2<'_, f64>,
    y: &[usize],
    n_classes: usize,
    lam: f64,
) -> DpResult<()> {
    if x.is_empty() {
        return Err(DpError::invalid(
            "X",
            format!("must not be empty, got shape {:?}", x.shape()),
        ));
    }
    if !x.iter().all(|v| v.is_finite()) {
        return Err(DpError::invalid("X", "contains NaN or infinite values"));
    }
    if y.len() != x.nrows() {
        return Err(DpError::invalid(
            "y",
            format!(
                "must have length {} (the number of rows of X), got {}",
                x.nrows(),
                y.len()
            ),
        ));
    }
    if n_classes < 2 {
        return Err(DpError::invalid(
            "n_classes",
            format!("must be >= 2, got {n_classes}"),
        ));
    }
    if let Some(&bad) = y.iter().find(|&&v| v >= n_classes) {
        return Err(DpError::invalid(
            "y",
            format!("class indices must be in [0, {n_classes}), got {bad}"),
        ));
    }
    if !lam.is_finite() || lam <= 0.0 {
        return Err(DpError::invalid(
            "lam",
            format!("must be finite and > 0, got {lam:?}"),
        ));
    }
    Ok(())
}

fn weights_or_ones(s: Option<ArrayView1<'_, f64>>, n: usize) -> DpResult<Vec<f64>> {
    match s {
        None => Ok(vec![1.0; n]),
        Some(s) => {
            if s.len() != n || !s.iter().all(|&v| v.is_finite() && v > 0.0) {
                return Err(DpError::invalid(
                    "sample_weight",
                    format!(
                        "must have length {n} (the number of rows of X) with finite entries > 0"
                    ),
                ));
            }
            Ok(s.to_vec())
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Scalar helpers
// ------------------------------------------------------------------------------------------------

/// `x log x` with `0 log 0 = 0`.
#[inline]
fn xlogx(x: f64) -> f64 {
    if x > 0.0 {
        x * x.ln()
    } else {
        0.0
    }
}

/// `softmax(z)` into `p`; returns `lse(z)`.
#[inline]
fn softmax_into(z: &[f64], p: &mut [f64]) -> f64 {
    let m = z.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let mut sum = 0.0;
    for (pk, &zk) in p.iter_mut().zip(z) {
        *pk = (zk - m).exp();
        sum += *pk;
    }
    let inv = 1.0 / sum;
    p.iter_mut().for_each(|v| *v *= inv);
    m + sum.ln()
}

/// `lse(z)`.
#[inline]
fn lse(z: &[f64]) -> f64 {
    let m = z.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    m + z.iter().map(|&v| (v - m).exp()).sum::<f64>().ln()
}

// ------------------------------------------------------------------------------------------------
// Certificate
// ------------------------------------------------------------------------------------------------

/// The stored coefficients `M` of a dual point `p` (module docs, "The simplex, exactly"), after
/// validating `p`.
fn coefficients(
    p: &ArrayView2<'_, f64>,
    y: &[usize],
    s: &[f64],
    c: f64,
) -> DpResult<(Array2<f64>, Array2<f64>)> {
    let (n, k) = (y.len(), p.ncols());
    if p.nrows() != n || !p.iter().all(|v| v.is_finite() && (0.0..=1.0).contains(v)) {
        return Err(DpError::invalid(
            "p",
            format!("must have shape ({n}, {k}) with entries in [0, 1]"),
        ));
    }
    let mut mu = Array2::<f64>::zeros((n, k));
    let mut pe = p.to_owned();
    for i in 0..n {
        let row = p.row(i);
        let off: f64 = row
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != y[i])
            .map(|(_, &v)| v)
            .sum();
        if off > 1.0 {
            return Err(DpError::invalid(
                "p",
                format!("row {i}: the entries off the label sum to {off} > 1 (not in the simplex)"),
            ));
        }
        let cs = c * s[i];
        for j in 0..k {
            if j != y[i] {
                mu[[i, j]] = -(cs * row[j]);
            }
        }
        mu[[i, y[i]]] = cs * off;
        pe[[i, y[i]]] = 1.0 - off;
    }
    Ok((mu, pe))
}

/// Certificate of the dual point `p` (`n × K`; module docs), computed from `p` alone.
///
/// # Errors
/// Invalid `X`, `y`, `n_classes`, `lam`, weights, or `p` outside the simplex (see the module
/// docs); [`DpError::Interrupted`] once `cancel` is set.
#[allow(clippy::too_many_arguments)]
pub fn certify(
    x: ArrayView2<'_, f64>,
    y: &[usize],
    s: Option<ArrayView1<'_, f64>>,
    p: ArrayView2<'_, f64>,
    kernel: &Kernel,
    lam: f64,
    cancel: &Cancel,
) -> DpResult<MulticlassCertificate> {
    let k = p.ncols();
    check_problem(&x, y, k, lam)?;
    kernel.validate()?;
    let n = x.nrows();
    let s = weights_or_ones(s, n)?;
    let c = 1.0 / (lam * n as f64);
    let (mu, pe) = coefficients(&p, y, &s, c)?;
    let sv: Vec<usize> = (0..n)
        .filter(|&i| mu.row(i).iter().any(|&v| v != 0.0))
        .collect();
    let mut decision = Array2::<f64>::zeros((n, k));
    if !sv.is_empty() {
        let xs = x.select(Axis(0), &sv);
        // all K columns in one pass of the fused engine (each kernel block evaluated once)
        let cols: Vec<Vec<f64>> = (0..k)
            .map(|j| sv.iter().map(|&i| mu[[i, j]]).collect())
            .collect();
        let refs: Vec<&[f64]> = cols.iter().map(|c| c.as_slice()).collect();
        let out = evaluation::kernel_matvecs_cancellable(x, xs.view(), &refs, kernel, cancel)?;
        for (j, col) in out.iter().enumerate() {
            decision.column_mut(j).assign(&ArrayView1::from(col.as_slice()));
        }
    }
    let sqrt_diag: Vec<f64> = evaluation::kernel_diag(x, kernel)
        .iter()
        .map(|v| v.abs().sqrt())
        .collect();
    // Σ_j sqrt(k_jj) |M_jk| per class, and δ_F
    let mut col_abs = vec![0.0f64; k];
    for i in 0..n {
        for j in 0..k {
            col_abs[j] += sqrt_diag[i] * mu[[i, j]].abs();
        }
    }
    let smax = col_abs.iter().fold(0.0f64, |a, &b| a.max(b));
    let g_m = gamma_k((k + 2) as f64);
    let delta_f: f64 = std::f64::consts::SQRT_2
        * g_m
        * c
        * sqrt_diag.iter().zip(&s).map(|(d, w)| d * w).sum::<f64>()
        * 1.01;
    let g_s = gamma_k((4 * k + 16) as f64);
    let inv_n = 1.0 / n as f64;
    let (mut loss_sum, mut ent_sum, mut gap_sum, mut w2, mut slack_sum) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for i in 0..n {
        let zi: Vec<f64> = decision.row(i).to_vec();
        let pi = pe.row(i);
        let l = lse(&zi);
        let pz: f64 = pi.iter().zip(&zi).map(|(a, b)| a * b).sum();
        let pz_abs: f64 = pi.iter().zip(&zi).map(|(a, b)| (a * b).abs()).sum();
        let ent: f64 = pi.iter().map(|&v| xlogx(v)).sum();
        let ent_abs: f64 = pi.iter().map(|&v| xlogx(v).abs()).sum();
        let si = s[i];
        loss_sum += si * (l - zi[y[i]]);
        ent_sum += si * ent;
        gap_sum += si * (l - pz + ent).max(0.0);
        w2 += mu.row(i).iter().zip(&zi).map(|(a, b)| a * b).sum::<f64>();
        let dz = KERNEL_SUM_REL_ERROR * sqrt_diag[i] * smax + sqrt_diag[i] * delta_f;
        slack_sum += si * (2.0 * dz + g_s * (l.abs() + pz_abs + ent_abs + 1.0));
    }
    let w2 = w2.max(0.0);
    let primal = inv_n * loss_sum + 0.5 * lam * w2;
    let dual = -inv_n * ent_sum - 0.5 * lam * w2;
    let slack = inv_n * slack_sum * 1.01 + 1e-15 * (1.0 + primal.abs() + dual.abs());
    let raw = (inv_n * gap_sum).max(primal - dual).max(0.0) + slack;
    let gap = (raw.sqrt() + delta_f * (0.5 * lam).sqrt()).powi(2) * (1.0 + 4.0 * f64::EPSILON);
    Ok(MulticlassCertificate {
        mu,
        decision,
        primal,
        dual,
        gap,
        f_norm: w2.sqrt(),
        slack: gap - (raw - slack),
    })
}

// ------------------------------------------------------------------------------------------------
// Kernel products
// ------------------------------------------------------------------------------------------------

/// `V ↦ G V` for the Gram matrix `G` of `X` (module docs).
enum GramOp<'a> {
    Full(Array2<f64>),
    Blocks { x: ArrayView2<'a, f64>, kernel: Kernel },
}

impl<'a> GramOp<'a> {
    fn new(x: ArrayView2<'a, f64>, kernel: &Kernel, cache_bytes: usize) -> DpResult<Self> {
        let n = x.nrows();
        let bytes = (n as u128) * (n as u128) * 8;
        if bytes <= cache_bytes as u128 {
            Ok(GramOp::Full(evaluation::gram_matrix(x, kernel)?))
        } else {
            Ok(GramOp::Blocks { x, kernel: *kernel })
        }
    }

    /// Row `j` of the Gram matrix.
    fn row(&self, j: usize) -> DpResult<Vec<f64>> {
        match self {
            GramOp::Full(g) => Ok(g.row(j).to_vec()),
            GramOp::Blocks { x, kernel } => {
                let kb = evaluation::kernel_matrix(x.slice(ndarray::s![j..j + 1, ..]), *x, kernel)?;
                Ok(kb.row(0).to_vec())
            }
        }
    }

    fn apply(&self, v: &Array2<f64>) -> DpResult<Array2<f64>> {
        let (n, k) = v.dim();
        let mut out = Array2::<f64>::zeros((n, k));
        match self {
            GramOp::Full(g) => {
                out.axis_chunks_iter_mut(Axis(0), BLOCK_ROWS)
                    .into_par_iter()
                    .enumerate()
                    .for_each(|(b, mut o)| {
                        let r0 = b * BLOCK_ROWS;
                        let gb = g.slice(ndarray::s![r0..r0 + o.nrows(), ..]);
                        general_mat_mul(1.0, &gb, v, 0.0, &mut o);
                    });
            }
            GramOp::Blocks { x, kernel } => {
                let res: Vec<DpResult<()>> = out
                    .axis_chunks_iter_mut(Axis(0), BLOCK_ROWS)
                    .into_par_iter()
                    .enumerate()
                    .map(|(b, mut o)| {
                        let r0 = b * BLOCK_ROWS;
                        let rows = x.slice(ndarray::s![r0..r0 + o.nrows(), ..]);
                        let kb = evaluation::kernel_matrix(rows, *x, kernel)?;
                        general_mat_mul(1.0, &kb, v, 0.0, &mut o);
                        Ok(())
                    })
                    .collect();
                for r in res {
                    r?;
                }
            }
        }
        Ok(out)
    }
}

fn dot(a: &Array2<f64>, b: &Array2<f64>) -> f64 {
    Zip::from(a).and(b).fold(0.0, |acc, &x, &y| acc + x * y)
}

// ------------------------------------------------------------------------------------------------
// Nyström warm start
// ------------------------------------------------------------------------------------------------

/// The warm start's pivot budget for `n` records: `n/20` within `[400, 800]`. Measured (Letter-26,
/// γ = 8, C = 1, tol 1e-6): n = 4,000 — 200 pivots 67 kernel products, 400: 42, 800: 41 (and a
/// slower warm start); n = 16,000 — 400: 117 products (79 s), 800: 76 (52 s), 1,200: 73 (81 s,
/// the `O(n r²)` factor and the `O(n r K)` warm-start steps then cost more than they save).
fn pivot_budget(n: usize) -> usize {
    (n / 20).clamp(MIN_PIVOTS, MAX_PIVOTS)
}

/// A pivoted (incomplete) Cholesky factor `G ≈ L Lᵀ` of the Gram matrix (module docs, "Nyström
/// warm start"): `L` is `n × r`, `L[piv] = L_pp` lower triangular.
struct Nystrom {
    /// `L` (`n × r`).
    l: Array2<f64>,
    /// Pivot rows, in order.
    piv: Vec<usize>,
    /// `L_pp` (`r × r`, lower triangular, row-major).
    lpp: Vec<f64>,
}

impl Nystrom {
    /// Greedy pivots on the largest residual diagonal (Harbrecht, Peters & Schneider 2012): at
    /// most `r_max`, stopping early when `scale · trace(residual) ≤ 0.5` or the largest residual
    /// diagonal is below `1e-12` of the largest kernel diagonal. Deterministic (data only).
    fn new(gram: &GramOp<'_>, diag: &[f64], r_max: usize, scale: f64) -> DpResult<Self> {
        let n = diag.len();
        let mut d: Vec<f64> = diag.iter().map(|v| v.max(0.0)).collect();
        let dmax0 = d.iter().cloned().fold(0.0, f64::max);
        let r_max = r_max.min(n);
        let mut lt = Array2::<f64>::zeros((r_max, n));
        let mut piv = Vec::with_capacity(r_max);
        while piv.len() < r_max {
            let (j, dj, trace) = klr_newton::next_pivot(&d);
            if dj <= 1e-12 * dmax0 || scale * trace <= 0.5 {
                break;
            }
            let r = piv.len();
            let row = gram.row(j)?;
            klr_newton::cholesky_column(&mut lt, r, &row, j, dj, &mut d);
            // exact zeros at the earlier pivots (the residual there vanishes; d there is already 0)
            for &p in &piv {
                lt[[r, p]] = 0.0;
            }
            piv.push(j);
        }
        let r = piv.len();
        let lt = lt.slice(ndarray::s![..r, ..]).to_owned();
        let l = lt.t().as_standard_layout().into_owned();
        let mut lpp = vec![0.0; r * r];
        for a in 0..r {
            for b in 0..=a {
                lpp[a * r + b] = lt[[b, piv[a]]];
            }
        }
        Ok(Nystrom { l, piv, lpp })
    }

    fn rank(&self) -> usize {
        self.piv.len()
    }

    /// `E w` (`n × K`) for `w` (`r × K`): the coefficients of the function `Σ_a e_a w_a` in the
    /// orthonormal basis `e = Φ_piv L_pp^{-T}` of the pivots' span (rows `piv`, back substitution
    /// with `L_ppᵀ`); its values at the data are `G E w = L w`.
    fn embed(&self, w: &Array2<f64>, out: &mut Array2<f64>) {
        let r = self.rank();
        let lpp = &self.lpp;
        let mut col = vec![0.0; r];
        for j in 0..w.ncols() {
            for a in 0..r {
                col[a] = w[[a, j]];
            }
            for a in (0..r).rev() {
                let mut sum = col[a];
                for b in a + 1..r {
                    sum -= lpp[b * r + a] * col[b];
                }
                col[a] = sum / lpp[a * r + a];
            }
            for a in 0..r {
                out[[self.piv[a], j]] += col[a];
            }
        }
    }
}

/// Rows per parallel task of the low-rank products of the warm start.
const LOW_RANK_CHUNK: usize = 512;

/// `L W` (`n × K`) for `L` (`n × r`) and `W` (`r × K`): parallel over fixed row chunks.
fn low_rank_apply(l: &Array2<f64>, w: &Array2<f64>) -> Array2<f64> {
    let mut out = Array2::<f64>::zeros((l.nrows(), w.ncols()));
    out.axis_chunks_iter_mut(Axis(0), LOW_RANK_CHUNK)
        .into_par_iter()
        .zip(l.axis_chunks_iter(Axis(0), LOW_RANK_CHUNK).into_par_iter())
        .for_each(|(mut o, lb)| general_mat_mul(1.0, &lb, w, 0.0, &mut o));
    out
}

/// `Lᵀ Q` (`r × K`) for `L` (`n × r`) and `Q` (`n × K`): per fixed row chunk in parallel, the
/// partial products added in chunk order (deterministic).
fn low_rank_adjoint(l: &Array2<f64>, q: &Array2<f64>) -> Array2<f64> {
    let parts: Vec<Array2<f64>> = l
        .axis_chunks_iter(Axis(0), LOW_RANK_CHUNK)
        .into_par_iter()
        .zip(q.axis_chunks_iter(Axis(0), LOW_RANK_CHUNK).into_par_iter())
        .map(|(lb, qb)| lb.t().dot(&qb))
        .collect();
    let mut out = Array2::<f64>::zeros((l.ncols(), q.ncols()));
    for p in &parts {
        out += p;
    }
    out
}

/// `(1/n) S W(v)`: the curvature of the loss applied row by row, `W_i v_i = p_i ∘ v_i − p_i
/// <p_i, v_i>` (`W_i = diag(p_i) − p_i p_iᵀ`), plus `lam · u`.
fn curvature_plus(pm: &Array2<f64>, v: &Array2<f64>, sw: &[f64], lam: f64, u: &Array2<f64>, out: &mut Array2<f64>) {
    let (n, k) = pm.dim();
    let inv_n = 1.0 / n as f64;
    for i in 0..n {
        let pi = pm.row(i);
        let vi = v.row(i);
        let pv: f64 = pi.iter().zip(vi.iter()).map(|(a, b)| a * b).sum();
        let f = sw[i] * inv_n;
        for j in 0..k {
            out[[i, j]] = f * (pi[j] * (vi[j] - pv)) + lam * u[[i, j]];
        }
    }
}

/// Nyström warm start (module docs): damped Newton–CG on the `r K`-dimensional problem
/// `min_W (1/n) Σ_i s_i ℓ(L_i W, y_i) + (λ/2) ‖W‖²` (the `H^K` problem restricted to the pivots'
/// span, no kernel product); returns the coefficients `E W` of its solution.
fn nystrom_start(ny: &Nystrom, y: &[usize], sw: &[f64], lam: f64, k: usize) -> Array2<f64> {
    let (n, r) = ny.l.dim();
    let inv_n = 1.0 / n as f64;
    let mut w = Array2::<f64>::zeros((r, k));
    let mut out = Array2::<f64>::zeros((n, k));
    if r == 0 {
        return out;
    }
    let mut z = Array2::<f64>::zeros((n, k));
    let mut pm = Array2::<f64>::zeros((n, k));
    let zero_r = Array2::<f64>::zeros((n, k));
    let mut hd_n = Array2::<f64>::zeros((n, k));
    let mut g0 = None;
    for _ in 0..MAX_NYSTROM_STEPS {
        let loss0 = loss_and_softmax(&z, y, sw, &mut pm);
        let mut q = pm.clone();
        for i in 0..n {
            q[[i, y[i]]] -= 1.0;
            let f = sw[i] * inv_n;
            q.row_mut(i).mapv_inplace(|v| v * f);
        }
        let mut g = low_rank_adjoint(&ny.l, &q);
        g.scaled_add(lam, &w);
        let gn = dot(&g, &g).sqrt();
        let g0v = *g0.get_or_insert(gn);
        if gn <= NYSTROM_RTOL * g0v || gn == 0.0 || !gn.is_finite() {
            break;
        }
        let eta = 0.1f64.min((gn / g0v).sqrt());
        // CG on (Lᵀ D L + λ I) V = −g (Euclidean, r × K)
        let mut v = Array2::<f64>::zeros((r, k));
        let mut res = g.mapv(|t| -t);
        let mut dir = res.clone();
        let mut rr = dot(&res, &res);
        let rr0 = rr;
        for _ in 0..MAX_NYSTROM_CG {
            if rr <= eta * eta * rr0 || rr == 0.0 {
                break;
            }
            let ld = low_rank_apply(&ny.l, &dir);
            curvature_plus(&pm, &ld, sw, 0.0, &zero_r, &mut hd_n);
            let mut hd = low_rank_adjoint(&ny.l, &hd_n);
            hd.scaled_add(lam, &dir);
            let dhd = dot(&dir, &hd);
            if dhd <= 0.0 || !dhd.is_finite() {
                break;
            }
            let alpha = rr / dhd;
            v.scaled_add(alpha, &dir);
            res.scaled_add(-alpha, &hd);
            let rr_new = dot(&res, &res);
            let beta = rr_new / rr;
            rr = rr_new;
            dir *= beta;
            dir += &res;
        }
        let dz = low_rank_apply(&ny.l, &v);
        let (ww, wv, vv) = (dot(&w, &w), dot(&w, &v), dot(&v, &v));
        let slope = dot(&g, &v);
        let phi0 = loss0 + 0.5 * lam * ww;
        if !(slope < 0.0) {
            break;
        }
        let mut t = 1.0;
        let mut accepted = false;
        for _ in 0..40 {
            let phi = loss_at(&z, &dz, t, y, sw) + 0.5 * lam * (ww + 2.0 * t * wv + t * t * vv);
            if phi <= phi0 + 1e-4 * t * slope {
                accepted = true;
                break;
            }
            t *= 0.5;
        }
        if !accepted {
            break;
        }
        w.scaled_add(t, &v);
        z = low_rank_apply(&ny.l, &w);
    }
    ny.embed(&w, &mut out);
    out
}

// ------------------------------------------------------------------------------------------------
// Solver
// ------------------------------------------------------------------------------------------------

/// `(1/n) Σ s_i ℓ(z_i, y_i)` and the softmax `P` of `z`.
fn loss_and_softmax(z: &Array2<f64>, y: &[usize], s: &[f64], p: &mut Array2<f64>) -> f64 {
    let n = z.nrows();
    let mut total = 0.0;
    for i in 0..n {
        let zi = z.row(i);
        let zs = zi.as_slice().expect("standard layout");
        let mut pi = p.row_mut(i);
        let l = softmax_into(zs, pi.as_slice_mut().expect("standard layout"));
        total += s[i] * (l - zs[y[i]]);
    }
    total / n as f64
}

/// `(1/n) Σ s_i ℓ(z_i + t d_i, y_i)`.
fn loss_at(z: &Array2<f64>, d: &Array2<f64>, t: f64, y: &[usize], s: &[f64]) -> f64 {
    let n = z.nrows();
    let k = z.ncols();
    let mut buf = vec![0.0; k];
    let mut total = 0.0;
    for i in 0..n {
        for j in 0..k {
            buf[j] = z[[i, j]] + t * d[[i, j]];
        }
        total += s[i] * (lse(&buf) - buf[y[i]]);
    }
    total / n as f64
}

/// Estimated gap of `p = P` given `zm = G M(p)` (module docs; not certified).
fn gap_estimate(zm: &Array2<f64>, p: &Array2<f64>, s: &[f64]) -> f64 {
    let n = zm.nrows();
    let mut g = 0.0;
    for i in 0..n {
        let zi = zm.row(i);
        let pi = p.row(i);
        let l = lse(zi.as_slice().expect("standard layout"));
        let pz: f64 = pi.iter().zip(zi.iter()).map(|(a, b)| a * b).sum();
        let ent: f64 = pi.iter().map(|&v| xlogx(v)).sum();
        g += s[i] * (l - pz + ent).max(0.0);
    }
    g / n as f64
}

/// Fit the multinomial kernel logistic regression (module docs) with a progress / cancellation
/// hook called after every kernel product; `Ok(None)` when the hook asked to stop.
///
/// # Errors
/// Invalid `X`, `y` (class indices `< n_classes`), `n_classes < 2`, `lam`, `tol`, `max_iter`,
/// weights or kernel; an allocation of the Gram matrix that fails.
#[allow(clippy::too_many_arguments)]
pub fn fit_with_hook(
    x: ArrayView2<'_, f64>,
    y: &[usize],
    n_classes: usize,
    s: Option<ArrayView1<'_, f64>>,
    kernel: &Kernel,
    opts: &MulticlassOptions,
    hook: &mut dyn FnMut(&Progress) -> bool,
) -> DpResult<Option<MulticlassSolution>> {
    check_problem(&x, y, n_classes, opts.lam)?;
    if !opts.tol.is_finite() || opts.tol <= 0.0 {
        return Err(DpError::invalid(
            "tol",
            format!("must be finite and > 0, got {:?}", opts.tol),
        ));
    }
    if opts.max_iter == 0 {
        return Err(DpError::invalid("max_iter", "must be >= 1"));
    }
    kernel.validate()?;
    let sw = weights_or_ones(s, x.nrows())?;
    let xs = x.as_standard_layout();
    let xv = xs.view();
    let (n, k) = (xv.nrows(), n_classes);
    let lam = opts.lam;
    let inv_n = 1.0 / n as f64;
    let gram = GramOp::new(xv, kernel, opts.cache_bytes)?;
    let full_gram = matches!(gram, GramOp::Full(_));
    let diag: Vec<f64> = evaluation::kernel_diag(xv, kernel).to_vec();
    let s_max = sw.iter().cloned().fold(0.0, f64::max);
    let ny = Nystrom::new(&gram, &diag, pivot_budget(n), s_max * inv_n / (4.0 * lam))?;

    let mut n_matvec: u64 = 0;
    let mut last_gap = f64::INFINITY;
    let mut stopped = false;
    let mut fire = |n_matvec: u64, gap: f64, exact: bool, stopped: &mut bool| {
        if !*stopped
            && !hook(&Progress {
                iter: n_matvec,
                gap,
                exact,
                active: n,
            })
        {
            *stopped = true;
        }
        !*stopped
    };

    let mut a = nystrom_start(&ny, y, &sw, lam, k);
    let warm = ny.rank() > 0;
    let mut pm = Array2::<f64>::zeros((n, k));
    let mut history = Vec::new();
    let mut n_iter: u64 = 0;
    let mut stop = StopReason::MaxIter;
    let mut best_p: Option<Array2<f64>> = None;
    let mut best_cert: Option<MulticlassCertificate> = None;
    let mut z = Array2::<f64>::zeros((n, k));
    while n_iter < opts.max_iter {
        n_iter += 1;
        if n_iter > 1 || warm {
            z = gram.apply(&a)?;
            n_matvec += 1;
            if !fire(n_matvec, last_gap, false, &mut stopped) {
                return Ok(None);
            }
        }
        let loss0 = loss_and_softmax(&z, y, &sw, &mut pm);
        // R = (1/n) S (P − Y) + λ A
        let mut r = pm.clone();
        for i in 0..n {
            r[[i, y[i]]] -= 1.0;
            let f = sw[i] * inv_n;
            for j in 0..k {
                r[[i, j]] = f * r[[i, j]] + lam * a[[i, j]];
            }
        }
        let gr = gram.apply(&r)?;
        n_matvec += 1;
        let g2 = dot(&r, &gr).max(0.0);
        // gap estimate of p = P with G M(p) = z − G R/λ
        let zm = &z - &(&gr * (1.0 / lam));
        let est = gap_estimate(&zm, &pm, &sw);
        last_gap = est;
        if !fire(n_matvec, est, false, &mut stopped) {
            return Ok(None);
        }
        if est <= STOP_FRACTION * opts.tol || !est.is_finite() {
            let cert = certify(xv, y, Some(ArrayView1::from(&sw[..])), pm.view(), kernel, lam, Cancel::never())?;
            history.push((n_iter, cert.gap));
            last_gap = cert.gap;
            if !fire(n_matvec, cert.gap, true, &mut stopped) {
                return Ok(None);
            }
            let done = cert.gap <= opts.tol;
            let precision = cert.slack >= STOP_FRACTION * opts.tol;
            if best_cert.as_ref().is_none_or(|b| cert.gap < b.gap) {
                best_p = Some(pm.clone());
                best_cert = Some(cert);
            }
            if done {
                stop = StopReason::Converged;
                break;
            }
            if precision {
                stop = StopReason::Precision;
                break;
            }
        }
        // CG in the G inner product: T ΔU = −R
        let eta = 0.1f64.min(g2.sqrt().sqrt());
        let mut rho = r.mapv(|v| -v); // coefficient residual
        let mut rs = gr.mapv(|v| -v); // G ρ
        let mut dir = rho.clone();
        let mut gdir = rs.clone();
        let mut du = Array2::<f64>::zeros((n, k));
        let mut gdu = Array2::<f64>::zeros((n, k));
        let mut rz = dot(&rs, &rho).max(0.0);
        let rz0 = rz;
        let mut tp = Array2::<f64>::zeros((n, k));
        for _ in 0..MAX_CG {
            if rz <= eta * eta * rz0 || rz == 0.0 {
                break;
            }
            // T p = (1/n) S W(G p) + λ p
            curvature_plus(&pm, &gdir, &sw, lam, &dir, &mut tp);
            let gtp = gram.apply(&tp)?;
            n_matvec += 1;
            if !fire(n_matvec, last_gap, false, &mut stopped) {
                return Ok(None);
            }
            let ptp = dot(&gdir, &tp);
            if ptp <= 0.0 || !ptp.is_finite() {
                break;
            }
            let alpha = rz / ptp;
            du.scaled_add(alpha, &dir);
            gdu.scaled_add(alpha, &gdir);
            rho.scaled_add(-alpha, &tp);
            rs.scaled_add(-alpha, &gtp);
            let rz_new = dot(&rs, &rho).max(0.0);
            let beta = rz_new / rz;
            rz = rz_new;
            dir *= beta;
            dir += &rho;
            gdir *= beta;
            gdir += &rs;
        }
        // Armijo on φ(t) = loss(z + tΔz) + (λ/2)(aa + 2t aΔ + t² ΔΔ)
        let aa = dot(&a, &z);
        let ad = dot(&a, &gdu);
        let dd = dot(&du, &gdu);
        let slope = dot(&r, &gdu);
        let phi0 = loss0 + 0.5 * lam * aa;
        if !(slope < 0.0) {
            // no descent direction in floating point: the certificate decides what was reached
            stop = StopReason::Precision;
            break;
        }
        let mut t = 1.0;
        let mut accepted = false;
        for _ in 0..40 {
            let phi = loss_at(&z, &gdu, t, y, &sw) + 0.5 * lam * (aa + 2.0 * t * ad + t * t * dd);
            if phi <= phi0 + 1e-4 * t * slope {
                accepted = true;
                break;
            }
            t *= 0.5;
        }
        if !accepted {
            stop = StopReason::Precision;
            break;
        }
        a.scaled_add(t, &du);
    }
    if stop != StopReason::Converged {
        // final certificate of the last iterate (z = G A exactly)
        let z = gram.apply(&a)?;
        n_matvec += 1;
        loss_and_softmax(&z, y, &sw, &mut pm);
        let cert = certify(xv, y, Some(ArrayView1::from(&sw[..])), pm.view(), kernel, lam, Cancel::never())?;
        history.push((n_iter, cert.gap));
        if !fire(n_matvec, cert.gap, true, &mut stopped) {
            return Ok(None);
        }
        if best_cert.as_ref().is_none_or(|b| cert.gap < b.gap) {
            best_p = Some(pm.clone());
            best_cert = Some(cert);
        }
        let c = best_cert.as_ref().expect("set above");
        if c.gap <= opts.tol {
            stop = StopReason::Converged;
        } else if stop == StopReason::MaxIter && n_iter < opts.max_iter {
            stop = StopReason::Precision;
        }
    }
    let cert = best_cert.expect("at least one certificate");
    let p = best_p.expect("with its dual point");
    let converged = cert.gap <= opts.tol;
    Ok(Some(MulticlassSolution {
        p,
        converged,
        stop_reason: if converged { StopReason::Converged } else { stop },
        cert,
        n_iter,
        n_matvec,
        history,
        full_gram,
    }))
}

/// [`fit_with_hook`] without a hook.
///
/// # Errors
/// As [`fit_with_hook`].
pub fn fit(
    x: ArrayView2<'_, f64>,
    y: &[usize],
    n_classes: usize,
    s: Option<ArrayView1<'_, f64>>,
    kernel: &Kernel,
    opts: &MulticlassOptions,
) -> DpResult<MulticlassSolution> {
    let mut always = |_: &Progress| true;
    Ok(fit_with_hook(x, y, n_classes, s, kernel, opts, &mut always)?
        .expect("a hook that always continues never cancels"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array1;
    use crate::kernel_learning::erm::{self, ErmOptions, Loss};
    use crate::test_util::uniform_points;

    fn opts(lam: f64, tol: f64) -> MulticlassOptions {
        MulticlassOptions {
            lam,
            tol,
            max_iter: 200,
            cache_bytes: 1 << 26,
        }
    }

    fn labels(x: &Array2<f64>, k: usize) -> Vec<usize> {
        x.rows()
            .into_iter()
            .map(|r| (((r[0] + 1.0) * 0.5 * k as f64) as usize).min(k - 1))
            .collect()
    }

    /// `P(F)` of stored coefficients `M`, brute force with the Gram matrix.
    fn primal_brute(g: &Array2<f64>, m: &Array2<f64>, y: &[usize], s: &[f64], lam: f64) -> f64 {
        let z = g.dot(m);
        let n = y.len();
        let mut l = 0.0;
        for i in 0..n {
            let zi: Vec<f64> = z.row(i).to_vec();
            l += s[i] * (lse(&zi) - zi[y[i]]);
        }
        l / n as f64 + 0.5 * lam * dot(m, &z)
    }

    fn hnorm2(g: &Array2<f64>, d: &Array2<f64>) -> f64 {
        dot(d, &g.dot(d))
    }

    #[test]
    fn gap_certifies_random_dual_points() {
        let x = uniform_points(12, 3, 7);
        let y = labels(&x, 3);
        let s = vec![1.0; 12];
        let kernel = Kernel::rbf(0.7).unwrap().with_shift(0.25).unwrap();
        let lam = 0.05;
        let sol = fit(x.view(), &y, 3, None, &kernel, &opts(lam, 1e-10)).unwrap();
        assert!(sol.converged, "gap {}", sol.cert.gap);
        let g = evaluation::gram_matrix(x.view(), &kernel).unwrap();
        let p_star = primal_brute(&g, &sol.cert.mu, &y, &s, lam);
        assert!((p_star - sol.cert.primal).abs() < 1e-10);
        // random dual points: P(F(p)) − P(F*) ≤ gap and ‖F(p) − F*‖² ≤ 2 gap/λ
        for seed in 0..20u64 {
            let u = crate::test_util::uniform(12 * 3, 0.0, 1.0, 100 + seed);
            let mut p = Array2::from_shape_vec((12, 3), u).unwrap();
            for mut row in p.rows_mut() {
                let t: f64 = row.sum();
                row.mapv_inplace(|v| v / t);
            }
            let cert = certify(x.view(), &y, None, p.view(), &kernel, lam, Cancel::never()).unwrap();
            let pf = primal_brute(&g, &cert.mu, &y, &s, lam);
            assert!(pf - p_star <= cert.gap + 1e-12, "{} > {}", pf - p_star, cert.gap);
            let d = &cert.mu - &sol.cert.mu;
            assert!(hnorm2(&g, &d) <= 2.0 * cert.gap / lam + 1e-10);
            assert!(cert.gap >= cert.primal - cert.dual);
            // the decision values are exactly the Gram product
            assert!((&g.dot(&cert.mu) - &cert.decision).iter().all(|v| v.abs() < 1e-12));
        }
    }

    #[test]
    fn binary_case_matches_binary_logistic_at_half_lambda() {
        // K = 2: f_2 − f_1 minimises (1/n) Σ softplus(−y g) + (λ/4)‖g‖², the binary problem at λ/2
        let x = uniform_points(40, 2, 3);
        let y: Vec<usize> = x.rows().into_iter().map(|r| usize::from(r[0] + 0.3 * r[1] > 0.1)).collect();
        let ypm: Array1<f64> = y.iter().map(|&v| if v == 1 { 1.0 } else { -1.0 }).collect();
        let kernel = Kernel::rbf(1.0).unwrap();
        let lam = 0.02;
        let sol = fit(x.view(), &y, 2, None, &kernel, &opts(lam, 1e-10)).unwrap();
        assert!(sol.converged);
        let bin = erm::fit(
            x.view(),
            ypm.view(),
            &kernel,
            Loss::Logistic,
            &ErmOptions { lam: lam / 2.0, tol: 1e-11, max_iter: 10_000_000, cache_bytes: 1 << 26, shrinking: false },
        )
        .unwrap();
        let g_multi: Vec<f64> = (0..40).map(|i| sol.cert.decision[[i, 1]] - sol.cert.decision[[i, 0]]).collect();
        for i in 0..40 {
            assert!((g_multi[i] - bin.cert.decision[i]).abs() < 1e-5, "{} vs {}", g_multi[i], bin.cert.decision[i]);
        }
        // and f_1 = −f_2 at the optimum
        for i in 0..40 {
            assert!((sol.cert.decision[[i, 0]] + sol.cert.decision[[i, 1]]).abs() < 1e-5);
        }
        // the optimal values agree: P_multi(F*) = P_bin(g*) (‖f1‖² + ‖f2‖² = ‖g‖²/2)
        assert!((sol.cert.primal - bin.cert.primal).abs() < 1e-9);
    }

    #[test]
    fn weights_equal_duplicated_records() {
        // weight 2 on record 0 of n records = the record duplicated among n + 1 at λ n/(n+1)
        let n = 15;
        let x = uniform_points(n, 2, 11);
        let y = labels(&x, 3);
        let kernel = Kernel::rbf(1.5).unwrap();
        let lam = 0.03;
        let mut s = vec![1.0; n];
        s[0] = 2.0;
        let sv = Array1::from(s.clone());
        let w = fit(x.view(), &y, 3, Some(sv.view()), &kernel, &opts(lam, 1e-10)).unwrap();
        let mut xd = Array2::<f64>::zeros((n + 1, 2));
        xd.slice_mut(ndarray::s![..n, ..]).assign(&x);
        xd.row_mut(n).assign(&x.row(0));
        let mut yd = y.clone();
        yd.push(y[0]);
        let d = fit(xd.view(), &yd, 3, None, &kernel, &opts(lam * n as f64 / (n + 1) as f64, 1e-10)).unwrap();
        for i in 0..n {
            for j in 0..3 {
                assert!((w.cert.decision[[i, j]] - d.cert.decision[[i, j]]).abs() < 1e-5);
            }
        }
        // the weighted dual variables stay in the simplex and |M_ik| ≤ s_i/(λ n)·√2 per row
        let c = 1.0 / (lam * n as f64);
        for i in 0..n {
            let r = w.cert.mu.row(i);
            assert!(r.dot(&r).sqrt() <= s[i] * c * 2f64.sqrt() * (1.0 + 1e-12));
        }
    }

    #[test]
    fn missing_class_and_gram_paths_agree() {
        // class 3 of 4 absent from the data: trains; the block path equals the cached Gram path
        let x = uniform_points(300, 3, 5);
        let y: Vec<usize> = labels(&x, 3);
        let kernel = Kernel::rbf(0.5).unwrap();
        let a = fit(x.view(), &y, 4, None, &kernel, &opts(1e-3, 1e-9)).unwrap();
        let mut o = opts(1e-3, 1e-9);
        o.cache_bytes = 0;
        let b = fit(x.view(), &y, 4, None, &kernel, &o).unwrap();
        assert!(a.full_gram && !b.full_gram);
        assert!(a.converged && b.converged);
        let d = &a.cert.decision - &b.cert.decision;
        assert!(d.iter().all(|v| v.abs() < 1e-3));
        // the absent class is never predicted and has negative scores
        for i in 0..300 {
            let r = a.cert.decision.row(i);
            let arg = (0..4).max_by(|&p, &q| r[p].total_cmp(&r[q])).unwrap();
            assert_ne!(arg, 3);
        }
    }

    #[test]
    fn nystrom_start_with_all_pivots_solves_the_problem() {
        // with r = n pivots the Nyström problem is the problem itself: E W must be (nearly) optimal,
        // with values G E W = L W
        let n = 40;
        let x = uniform_points(n, 2, 21);
        let y = labels(&x, 3);
        let sw = vec![1.0; n];
        let kernel = Kernel::rbf(1.0).unwrap().with_shift(0.25).unwrap();
        let lam = 0.01;
        let gram = GramOp::new(x.view(), &kernel, 1 << 26).unwrap();
        let diag = evaluation::kernel_diag(x.view(), &kernel).to_vec();
        let ny = Nystrom::new(&gram, &diag, n, 1e12).unwrap();
        assert!(ny.rank() >= 30, "rank {}", ny.rank());
        let g = evaluation::gram_matrix(x.view(), &kernel).unwrap();
        let approx = ny.l.dot(&ny.l.t());
        let scale = g.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!((&g - &approx).iter().all(|v| v.abs() < 1e-6 * scale));
        let a0 = nystrom_start(&ny, &y, &sw, lam, 3);
        let z = gram.apply(&a0).unwrap();
        let mut pm = Array2::<f64>::zeros((n, 3));
        loss_and_softmax(&z, &y, &sw, &mut pm);
        let cert = certify(x.view(), &y, None, pm.view(), &kernel, lam, Cancel::never()).unwrap();
        assert!(cert.gap < 1e-7, "gap {}", cert.gap);
    }

    #[test]
    fn warm_start_cuts_kernel_products() {
        // small λ, overlapping classes: 119 products from a cold start (measured), 49 warm
        let x = uniform_points(400, 2, 9);
        let y = labels(&x, 5);
        let kernel = Kernel::rbf(4.0).unwrap().with_shift(0.25).unwrap();
        let sol = fit(x.view(), &y, 5, None, &kernel, &opts(1e-4, 1e-8)).unwrap();
        assert!(sol.converged);
        assert!(sol.n_matvec <= 80, "{} products", sol.n_matvec);
        // deterministic
        let again = fit(x.view(), &y, 5, None, &kernel, &opts(1e-4, 1e-8)).unwrap();
        assert_eq!(sol.cert.mu, again.cert.mu);
    }

    #[test]
    fn rejects_bad_inputs() {
        let x = uniform_points(5, 2, 1);
        let kernel = Kernel::linear();
        let o = opts(0.1, 1e-6);
        assert!(fit(x.view(), &[0, 1, 2, 0, 1], 2, None, &kernel, &o).is_err());
        assert!(fit(x.view(), &[0, 1, 0, 0], 2, None, &kernel, &o).is_err());
        assert!(fit(x.view(), &[0, 1, 0, 0, 1], 1, None, &kernel, &o).is_err());
        let p = Array2::from_elem((5, 3), 0.9);
        assert!(certify(x.view(), &[0, 1, 0, 0, 1], None, p.view(), &kernel, 0.1, Cancel::never()).is_err());
    }
}

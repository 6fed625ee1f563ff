//! Newton–CG solver of the (weighted) kernel logistic regression of [`crate::kernel_learning::erm`]:
//! the mode of a Gaussian-process classifier (Rasmussen & Williams, *GPML*, Algorithm 3.1).
//!
//! # Iteration
//!
//! In the `y`-signed latent values `u = y ∘ f` and with `Q̃ = C · diag(y) K diag(y)` (`C = 1/(λ n)`,
//! `K` the (shifted) kernel), the `n`-scaled primal is, for representer coefficients `v` with
//! `u = Q̃ v`,
//!
//! ```text
//! Ψ(v) = Σ_i s_i log(1 + e^{−u_i}) + ½ vᵀ u          (= n · P(w),  w = C Σ_i v_i y_i φ(x_i))
//! ```
//!
//! Its gradient in `u` is `−a` with `a_i = s_i σ(−u_i)` and its curvature `W = diag(s_i σ(u_i)
//! σ(−u_i))`. One damped Newton step (GPML 3.1) from `(u, v)`:
//!
//! ```text
//! β = W u + a,   B = I + W^{½} Q̃ W^{½}  (eigenvalues in [1, 1 + C · max s · λmax(K) / 4]),
//! z = B⁻¹ W^{½} Q̃ β,     v⁺ = β − W^{½} z,     u⁺ = Q̃ v⁺ = Q̃ β − Q̃ W^{½} z,
//! ```
//!
//! then `(u, v) ← (u, v) + t (u⁺ − u, v⁺ − v)` with `t = 1, ½, ¼, …` until `Ψ` does not increase
//! (damping for the rare non-descent steps far from the optimum). `B z = r` is solved by conjugate
//! gradients (one kernel matrix–vector product per step; `Q̃ W^{½} z` is accumulated from the same
//! products) to the relative residual `η = min(½, sqrt(gap / ln 2))` (Eisenstat–Walker-style
//! forcing: loose while far, tight once Newton converges quadratically; at least [`MIN_CG`] steps),
//! preconditioned by
//! `I + U Uᵀ` with `U = C^{½} W^{½} diag(y) L` (Woodbury, an `r × r` Cholesky per Newton step) for
//! a pivoted (incomplete) Cholesky factor `K ≈ L Lᵀ` with `r ≤ 400` greedy pivots (Harbrecht,
//! Peters & Schneider 2012), `r` kernel rows and `O(n r²)` work, computed once (and resumed for
//! more pivots when Newton is slow: "Growing the factor"). With a held Gram the columns are made
//! in candidate blocks ([`ColumnBlock`]): the same greedy run and the same bits as one column at a
//! time, but the factor's rows are read once per block (memory-bound axpys before: 17.1 s of a
//! 70 s fit growing to 1,600 pivots at n = 20,000, 1 thread; 6× faster at n = 8,000, 1,200 pivots).
//!
//! # Warm start
//!
//! The pivoted Cholesky factor gives a Nyström model `K ≈ L Lᵀ` (`r` columns) whose logistic
//! regression is `r`-dimensional: `min_w Σ_i s_i log(1 + e^{−(Φw)_i}) + ½‖w‖²` with `Φ = C^{½}
//! diag(y) L` (substitute `w = C^{½} Lᵀ diag(y) v` in `Ψ`). It is solved by damped Newton with no
//! kernel product (`O(n r²)` per step: its Hessian `I + ΦᵀWΦ` is the preconditioner's `r × r`
//! system), and the iteration starts from its dual candidate `a₀ = s σ(−Φ w*)`: one product gives
//! `Q̃ a₀`, the exact gap of `a₀` (checked like every other candidate) and the exact state `(u, v) =
//! (Q̃ a₀, a₀)`. Measured (Adult, n = 20,000, C = 0.01, class weights 1:10): the gap of the first
//! candidate is 5e-3 instead of ~10, and the solve takes 12 products instead of 39.
//!
//! # Growing the factor
//!
//! The factor starts with at most [`MAX_PIVOTS`] pivots. Where the kernel's spectrum decays
//! slowly and `C` is large (poly-3 on 784 dense columns at `C = 1`; Adult rbf at `C = 10`), the
//! Nyström model misses much of `Q̃`: the warm start's state `(Q̃ a₀, a₀)` is then far from the
//! optimum in the directions it misses and Newton spends tens of damped steps there (each with a
//! check and a few CG steps; the CG solves themselves stay accurate). So a solve whose last check
//! still has a gap above [`GROW_GAP`] after [`NEWTON_STEPS_GROW`] Newton steps asks for four times
//! the pivots (at most `n/10` within `[MAX_PIVOTS, MAX_GROWN_PIVOTS]` and the cache budget, and only
//! while its own pivoted Cholesky run would go on: [`Pivots::can_grow`]); the run is **resumed**
//! ([`Pivots::extend`]: bit for bit the rows a longer run computes), the Nyström model is solved
//! again from the shorter one's optimum, and the solve starts again from its (checked) warm
//! start. Measured (1 thread): highdim poly C = 1, n = 10,000: 224 → 61 products; Adult rbf
//! C = 10, n = 6,000: 652 → 177 products; the fits that converge within a few Newton steps (Adult
//! at the selection's C, highdim rbf) do not grow. After 4 Newton steps rather than 8 (measured,
//! 1 thread: highdim poly C = 1, n = 20,000: 57 → 41 products, 33.0 → 31.0 s; Adult n = 6,000 rbf
//! C = 10 5.57 → 5.04 s, poly C = 10 43.6 → 26.5 s; the other highdim n = 6,000 and Adult rows
//! and the selection unchanged). In a path the shared run is resumed for the longest request and
//! each `λ` takes its own prefix (the factor a single fit would grow). Four times rather than
//! twice (measured, highdim poly C = 1, n = 20,000, 1 thread: the damped phase at 800 pivots was
//! as slow as at 400; 400 → 1,600 directly: 86 → 57 products).
//! At most [`MAX_GROWN_PIVOTS`] = 1,200 (measured on that fit after the `f32` preconditioner Grams
//! and growth after 4 Newton steps, 1 thread: 1,600 pivots 41 products, 30.4 s; 1,200: 49, 27.8 s;
//! 1,000: 65, 29.0 s — each preconditioner build costs `O(n r²)`, about 8 products at 1,600).
//! The first Newton step after a warm start takes the Nyström solve's last Hessian factor as its
//! preconditioner instead of building one only when the curvature it was built for is close to the
//! iterate's ([`NYSTROM_PRECOND_MAX_CHANGE`]; taken always, it was neutral on that fit, 44.3 vs
//! 43.6 s, and mixed on Adult: rbf faster, poly slower). Measured and dropped: reusing
//! preconditioners across Newton steps (the loose early CG solves of a stale one gave poor Newton
//! steps: 59 → 625 products, highdim poly C = 1, n = 6,000).
//!
//! The CG forcing term uses the smaller of the candidate's gap and the iterate's own primal–dual
//! gap `Ψ(v)/n − D(best dual point)/n` (`u = Q̃ v` exact): after a good start the candidate `s σ(−u)`
//! can be far worse than `v`, and a loose solve would waste the start.
//!
//! # Dual point and certificate
//!
//! Every Newton iteration starts with an exact check: the dual candidate `a = s ∘ σ(−u)` (with `b
//! = s − a = s ∘ σ(u)` computed from the logits, so both are accurate near 0 and `s`: the dual's
//! entropy needs both) is feasible (`a ∈ [0, s]`), its own decision values `Q̃ a` are recomputed
//! in `f64` and the exact duality gap of `a` decides, as in the other solvers (stop at
//! [`stop_target`], which leaves room for the certificate's floating-point slack [`fp_slack`]).
//! The returned `a` (and `b`) is certified afterwards by
//! [`certify_weighted_cancellable`](crate::kernel_learning::erm::certify_weighted_cancellable),
//! independently of all of this (summed from the held `f64` Gram when there is one:
//! [`PathEngine::gram64`]; `erm`, "Certificate from a held Gram"; otherwise by the symmetric kernel
//! pass, `erm`, "Certificate from the symmetric kernel pass"). The same product gives the Newton right-hand side: the step is
//! solved for the increment, `(I + W Q̃) δv = g` with `g = a − v` and `Q̃ g = Q̃ a − u` (`u = Q̃ v`
//! is maintained from the products), i.e. `δv = g − W^{½} z`, `B z = W^{½} Q̃ g`, `δu = Q̃ g −
//! Q̃ W^{½} z`. The right-hand side vanishes at the optimum, so the CG tolerance `η` is relative to
//! the current error (a tolerance relative to the full `Q̃ β` of GPML's form stalls: measured).
//! At a fixed point `g = 0` and `Q̃ a = u` with `Q̃ a` exact, so rounding drift of the maintained
//! `u` (e.g. from `f32` products) cannot move the point the iteration converges to.
//!
//! # Kernel products
//!
//! When the Gram matrix fits the cache budget (and the memory the machine can give now,
//! [`crate::alloc::memory_limit_bytes`]; a refused allocation takes the next path) it is computed
//! once, in `f64` (`8 n²` bytes) or else `f32` (`4 n²` bytes) — its lower triangle by row batches
//! (the engine's block code, in [`evaluation::SYM_ROWS`]-row blocks: the engine's entries bit for bit),
//! the upper one mirrored (issue 26: about half the kernel work; measured
//! at `n = 6,000`, `d = 784`, 1 thread: a 6-product fit 2.0 s → 1.5 s with the certificate from it) — and every product is a parallel
//! dense matrix–vector product (with the `f32` Gram reading only its lower triangle:
//! [`gram_products_sym`]). Exact checks use the `f32` Gram never: with it, each candidate's
//! gap is first *estimated* from the `f32` product (which also gives the Newton right-hand side),
//! and only when the estimate is below the stopping target is the candidate checked exactly by
//! the fused engine; if that check fails, the exact product is the right-hand side. (The error of
//! the `f32` fixed point is `O(ε_f32)` in `Q̃ a`, so its true gap is `O(ε_f32²)`: one exact check
//! normally ends the solve.) Otherwise every product
//! is computed by the fused tiled engine
//! ([`kernel_matvecs_cancellable`](crate::kernels::evaluation::kernel_matvecs_cancellable),
//! `O(n)` extra memory) in batches of 1024 rows, with the progress / cancellation hook polled
//! between batches (about every 0.1 s).
//!
//! # Iterations
//!
//! An *iteration* of this solver (`n_iter`, `max_iter`) is one product with the kernel matrix
//! (`n²` kernel evaluations): each exact check and each conjugate-gradient step. The pivoted
//! Cholesky factor (`r` kernel rows) and the warm start are not counted; `f32` products
//! are. With `max_iter` reached the last checked dual point is returned (the last exactly checked
//! one without an `f32` Gram; with it, possibly an estimated one): its certificate is computed
//! afterwards as always.
//!
//! # Paths
//!
//! A regularisation path (several `λ`, same data, kernel and weights; [`PathEngine`],
//! [`fit_path_with_hook`](crate::kernel_learning::erm::fit_path_with_hook)) shares the kernel
//! products (the Gram matrix, built once) and the pivoted Cholesky factor (run once for the
//! largest `C`; each `λ` takes the row prefix its own run would stop at, bit for bit). The solve
//! of each `λ` is a resumable state machine ([`LamSolve`]: it names the product it needs next and
//! takes it), and all `λ` run **in lock-step** ([`run_lock_step`]): each round collects the
//! products the unfinished `λ` ask for and computes them in one pass over the Gram matrix (one
//! per kind with an `f32` Gram: the `f32` products and the exact ones), so a path makes as many
//! passes as its slowest `λ` needs products, not their sum. Each column of a batched product is
//! computed exactly as alone ([`gram_products`], the fused engine: per-vector sums in a fixed
//! order), so given its warm start every `λ`'s iterates, `n_iter`, `max_iter` count and dual
//! point are bit for bit those of a path of that `λ` alone — which is what a single fit is
//! ([`fit_weighted_with_hook`](crate::kernel_learning::erm::fit_weighted_with_hook) fits the
//! logistic loss as a path of one `λ`: with an `f32` Gram its confirming exact check is then the
//! certificate's own pass, one full kernel pass less). The Nyström warm
//! start and the preconditioner of each Newton step depend on the `λ` and its iterate and are
//! computed per `λ`. Measured (Adult, n = 20,000, 10 values of `C`, `f32` Gram, loaded 2-core
//! machine): one 10-vector pass takes about 3× one single-vector pass (per-vector arithmetic
//! from cache; the Gram is read once), 0.5 s against 1.0–1.8 s before; the path's remaining
//! per-`λ` cost is the `O(n r²)` preconditioner Gram of each Nyström and Newton step.
//!
//! The Nyström warm starts are solved **along the path**: by increasing `C`, each from the
//! optimum `w'` of the one before (at `C'`), scaled by `(C'/C)^{½}` so that it has the same
//! latent values `Φw` (unless that start is worse than `w = 0`), and with chord steps
//! ([`nystrom_start`]). Measured (Adult, n = 20,000, 10 candidates, 2 threads): 45 → 15 Hessian
//! builds of the Nyström solves, 1.58 → 0.63 s, and the same products for every `λ`. At the same
//! latent values the curvature `W` is the same, so the Hessian `I + C LᵀWL` of the start is the
//! neighbour's last one rescaled, `I + (C/C')(H' − I)` ([`Precond::rescaled`]: an `r × r`
//! Cholesky, no `O(n r²)` build; exact when that Hessian was built at the neighbour's optimum, a
//! chord step otherwise): 15 → 9 builds (the path 6.05 → 5.84 s). So the solve of a `λ` in a
//! path is not bit for bit its single fit (except the smallest `C`, whose start is the single
//! fit's): its Nyström start is the same optimum only to the Nyström solve's tolerance. Each `λ`
//! is still solved to its own `tol` and certified from its own dual point alone, which is all a
//! fit's guarantee (and the privacy proof of a release) uses; its iterates do not depend on which
//! other `λ` are still iterating (lock-step), only on the path's `C`.
//!
//! Deterministic: every product has fixed blocks and summation order, the pivots depend on the
//! data only.

#![allow(clippy::needless_range_loop)]

use ndarray::linalg::general_mat_mul;
use ndarray::{s, Array2, ArrayView2, Axis};
use rayon::prelude::*;

use crate::cancel::Cancel;
use crate::kernel_learning::erm::{
    fp_slack, sigmoid, softplus, stop_target, xlogx, ErmOptions, Progress, SolverOut, Ticker,
};
use crate::kernel_learning::kernel_cache::{RowCache, RowRef};
use crate::kernels::evaluation::{self, Kernel};
use crate::numerics::{lanes8_reduce, simd_dispatch, simd_dispatch_fma};

/// Largest number of pivots of the preconditioner's incomplete Cholesky factor (to begin with:
/// a solve still far after [`NEWTON_STEPS_GROW`] Newton steps grows it up to [`MAX_GROWN_PIVOTS`]).
pub(crate) const MAX_PIVOTS: usize = 400;
/// Largest number of pivots a warm start may grow the factor to (`n / 10` at most).
const MAX_GROWN_PIVOTS: usize = 1200;
/// Newton steps after a warm start before the factor may grow (module docs, "Growing the factor").
const NEWTON_STEPS_GROW: usize = 4;
/// The (`1/n`-scaled) gap of the last check above which a solve still that far after
/// [`NEWTON_STEPS_GROW`] Newton steps grows the factor and starts again from its warm start.
const GROW_GAP: f64 = 0.1;
/// Query rows per batch of a fused product (the hook is polled between batches).
const BATCH_ROWS: usize = 1024;
/// Rows per parallel task of a dense Gram product.
const GRAM_CHUNK: usize = 64;
/// Conjugate-gradient steps per Newton step at most.
const MAX_CG: usize = 300;
/// Conjugate-gradient steps per Newton step at least (unless the residual vanishes): with the
/// Nyström preconditioner one step often meets the relative-residual test while the step is still
/// poor in the directions the preconditioner misses (measured, Adult n = 5,000, C = 1: 92
/// products with one or two steps per Newton step, 29 with at least three).
const MIN_CG: usize = 3;
/// Halvings of the Newton step at most.
const MAX_HALVINGS: usize = 40;
/// Newton steps of the Nyström warm start at most.
const MAX_NYSTROM_STEPS: usize = 60;
/// A Nyström Newton step reuses the last Hessian factor (a *chord* step, no `O(n r²)` build) when
/// the squared decrement it gives at the new point is at most this fraction of the last step's
/// ([`nystrom_start`]: the last step converged fast, so the Hessian barely moved).
const NYSTROM_CHORD_RATIO: f64 = 1e-2;
/// The first Newton step after a warm start takes the Nyström solve's last Hessian factor as its
/// preconditioner (no `O(n r²)` build) when that factor's scaling `t = C^{½} W^{½} y` (at the
/// Nyström optimum) is within this relative distance (`‖t − t'‖₂ ≤ · ‖t'‖₂`) of the iterate's:
/// `I + U Uᵀ` then changes by about twice that. Measured (2 threads): in the Adult n = 20,000
/// 10-candidate path the distances were 0.004–0.064 (and 0.048 in its one fit): 35 → 24 builds,
/// 96 instead of 101 products, selection 7.7 → 7.2 s; the first warm starts of the other fits
/// measured (Adult n = 6,000 rbf and poly at C = 1, 10; highdim n = 6,000 at C = 1) were at
/// 0.10–0.76 and keep their build (reusing there anyway: Adult poly C = 1 27 → 34 products, rbf
/// C = 10 149 → 157; poly C = 10 953 → 841); a grown warm start of highdim poly at 0.08 reused it
/// (43 → 46 products, 1.48 vs 1.49 s).
const NYSTROM_PRECOND_MAX_CHANGE: f64 = 0.1;

enum Gram {
    None,
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// Products with `diag(y) K diag(y)`.
struct Ops<'x> {
    x: ArrayView2<'x, f64>,
    kernel: Kernel,
    y: Vec<f64>,
    gram: Gram,
    n: usize,
}

/// `Σ_j row_j v_j` with 8 partial sums and a fixed reduction tree.
#[inline]
fn dot8<T: Copy + Into<f64>>(row: &[T], v: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let split = row.len() - row.len() % 8;
    for (r, w) in row[..split].chunks_exact(8).zip(v[..split].chunks_exact(8)) {
        for l in 0..8 {
            acc[l] += r[l].into() * w[l];
        }
    }
    let mut tail = 0.0;
    for (r, w) in row[split..].iter().zip(&v[split..]) {
        tail += (*r).into() * w;
    }
    lanes8_reduce(&acc, tail)
}

/// The rows `r0..r0 + rows` of a dense row-major Gram times every vector of `vs`: `out[i · nv + k]
/// = Σ_j G_{r0+i, j} v_k[j]` with [`dot8`]'s lanes and reduction tree, the lane sums run over
/// the columns in blocks of [`GRAM_COLS`] (same order as one sweep, so the same bits).
macro_rules! gram_rows {
    ($name:ident, $t:ty) => {
        simd_dispatch! {
            fn $name(g: &[$t], n: usize, r0: usize, vs: &[&[f64]], out: &mut [f64]) {
                let nv = vs.len();
                let rows = out.len() / nv;
                let split = n - n % 8;
                let mut acc = vec![[0.0f64; 8]; rows * nv];
                let mut j0 = 0;
                while j0 < split {
                    let j1 = (j0 + GRAM_COLS).min(split);
                    // four rows at a time share each load of the vector (register blocking)
                    let quad = rows - rows % 4;
                    for i in (0..quad).step_by(4) {
                        let row = |q: usize| &g[(r0 + i + q) * n + j0..(r0 + i + q) * n + j1];
                        let (g0, g1, g2, g3) = (row(0), row(1), row(2), row(3));
                        for (k, v) in vs.iter().enumerate() {
                            let mut a0 = acc[i * nv + k];
                            let mut a1 = acc[(i + 1) * nv + k];
                            let mut a2 = acc[(i + 2) * nv + k];
                            let mut a3 = acc[(i + 3) * nv + k];
                            let w = &v[j0..j1];
                            for c in (0..w.len()).step_by(8) {
                                let (w8, r0_, r1_, r2_, r3_) =
                                    (&w[c..c + 8], &g0[c..c + 8], &g1[c..c + 8], &g2[c..c + 8], &g3[c..c + 8]);
                                for l in 0..8 {
                                    a0[l] += (r0_[l] as f64) * w8[l];
                                    a1[l] += (r1_[l] as f64) * w8[l];
                                    a2[l] += (r2_[l] as f64) * w8[l];
                                    a3[l] += (r3_[l] as f64) * w8[l];
                                }
                            }
                            acc[i * nv + k] = a0;
                            acc[(i + 1) * nv + k] = a1;
                            acc[(i + 2) * nv + k] = a2;
                            acc[(i + 3) * nv + k] = a3;
                        }
                    }
                    for i in quad..rows {
                        let row = &g[(r0 + i) * n + j0..(r0 + i) * n + j1];
                        for (k, v) in vs.iter().enumerate() {
                            let mut a = acc[i * nv + k];
                            for (r, w) in row.chunks_exact(8).zip(v[j0..j1].chunks_exact(8)) {
                                for l in 0..8 {
                                    a[l] += (r[l] as f64) * w[l];
                                }
                            }
                            acc[i * nv + k] = a;
                        }
                    }
                    j0 = j1;
                }
                for (i, o) in out.chunks_exact_mut(nv).enumerate() {
                    let row = &g[(r0 + i) * n + split..(r0 + i + 1) * n];
                    for (k, v) in vs.iter().enumerate() {
                        let mut tail = 0.0;
                        for (r, w) in row.iter().zip(&v[split..]) {
                            tail += (*r as f64) * w;
                        }
                        o[k] = lanes8_reduce(&acc[i * nv + k], tail);
                    }
                }
            }
        }
    };
}
gram_rows!(gram_rows_f32, f32);
gram_rows!(gram_rows_f64, f64);

/// A dense Gram's entry type ([`gram_products`]).
trait GramEntry: Copy + Into<f64> + Sync {
    fn rows(g: &[Self], n: usize, r0: usize, vs: &[&[f64]], out: &mut [f64]);
}
impl GramEntry for f32 {
    fn rows(g: &[f32], n: usize, r0: usize, vs: &[&[f64]], out: &mut [f64]) {
        gram_rows_f32(g, n, r0, vs, out)
    }
}
impl GramEntry for f64 {
    fn rows(g: &[f64], n: usize, r0: usize, vs: &[&[f64]], out: &mut [f64]) {
        gram_rows_f64(g, n, r0, vs, out)
    }
}

/// Columns per block of [`gram_products`]: a multiple of 8 (the lanes of [`dot8`]), so that the
/// vectors' blocks stay in cache across the rows of a chunk.
const GRAM_COLS: usize = 2048;

/// `out[k][i] = Σ_j G_ij v_k[j]` for a dense row-major `n × n` Gram (parallel over row chunks),
/// each entry bit for bit [`dot8`]`(row_i, v_k)` whatever the number of vectors (the 8 lane sums
/// of each `(i, k)` run over the columns in the same order, block after block of [`GRAM_COLS`]
/// columns, AVX2 build when the CPU has it: the same IEEE operations), so one pass over `G`
/// serves every vector (the path in lock-step) while each block of the vectors is reused from
/// cache by all the rows of a chunk.
fn gram_products<T: GramEntry>(g: &[T], n: usize, vs: &[&[f64]]) -> Vec<Vec<f64>> {
    let nv = vs.len();
    let mut flat = vec![0.0f64; n * nv]; // row-major n × nv
    flat.par_chunks_mut(GRAM_CHUNK * nv)
        .enumerate()
        .for_each(|(c, out)| T::rows(g, n, c * GRAM_CHUNK, vs, out));
    (0..nv)
        .map(|k| (0..n).map(|i| flat[i * nv + k]).collect())
        .collect()
}

/// Rows and columns of a square tile of [`gram_products_sym`].
const SYM_GRAM_TILE: usize = 512;

simd_dispatch_fma! {
    /// One tile `(I, J)` of [`gram_products_sym`]: rows `r0..r0 + rows` of a mirrored row-major
    /// `f32` Gram against its columns `c0..c0 + cols`. For every vector `k`: `oi[k · rows + i] +=`
    /// the 8-lane dot product (lanes and tree of [`dot8`], multiply–adds fused where the CPU has
    /// FMA) of row `i` with `v_k[c0..]`, and, with `cs` (`J < I`), `cs[k · cols + j] += Σ_i G_ij
    /// v_k[r0 + i]` (the rows in order). Four rows at a time: their dots share each load of the
    /// vector, then their column terms are added (a second pass over the four rows, from L1: fewer
    /// live registers than one fused pass, measured faster). Each vector's operations are the same
    /// whatever the others (a batched column is its product alone, bit for bit).
    fn sym_tile_f32<A>(
        g: &[f32],
        n: usize,
        rs: (usize, usize),
        cs_: (usize, usize),
        vs: &[&[f64]],
        oi: &mut [f64],
        cs: Option<&mut [f64]>,
    ) {
        let ((r0, rows), (c0, cols), mut cs) = (rs, cs_, cs);
        let split = cols - cols % 8;
        let row = |i: usize| &g[(r0 + i) * n + c0..(r0 + i) * n + c0 + cols];
        let mut i = 0;
        while i < rows {
            let q = (rows - i).min(4);
            let gs: [&[f32]; 4] = std::array::from_fn(|t| row(i + t.min(q - 1)));
            for (k, v) in vs.iter().enumerate() {
                let w = &v[c0..c0 + cols];
                let mut a = [[0.0f64; 8]; 4];
                for ((((w8, y0), y1), y2), y3) in w[..split]
                    .chunks_exact(8)
                    .zip(gs[0][..split].chunks_exact(8))
                    .zip(gs[1][..split].chunks_exact(8))
                    .zip(gs[2][..split].chunks_exact(8))
                    .zip(gs[3][..split].chunks_exact(8))
                {
                    for l in 0..8 {
                        a[0][l] = A::madd(y0[l] as f64, w8[l], a[0][l]);
                        a[1][l] = A::madd(y1[l] as f64, w8[l], a[1][l]);
                        a[2][l] = A::madd(y2[l] as f64, w8[l], a[2][l]);
                        a[3][l] = A::madd(y3[l] as f64, w8[l], a[3][l]);
                    }
                }
                for t in 0..q {
                    let mut tail = 0.0;
                    for j in split..cols {
                        tail = A::madd(gs[t][j] as f64, w[j], tail);
                    }
                    oi[k * rows + i + t] += lanes8_reduce(&a[t], tail);
                }
                if let Some(cs) = cs.as_deref_mut() {
                    let c = &mut cs[k * cols..(k + 1) * cols];
                    if q == 4 {
                        // the four rows' terms in row order, one load and store of each sum
                        let b: [f64; 4] = std::array::from_fn(|t| v[r0 + i + t]);
                        for ((((o, &x0), &x1), &x2), &x3) in c.iter_mut().zip(gs[0]).zip(gs[1]).zip(gs[2]).zip(gs[3]) {
                            let s = A::madd(x0 as f64, b[0], *o);
                            let s = A::madd(x1 as f64, b[1], s);
                            let s = A::madd(x2 as f64, b[2], s);
                            *o = A::madd(x3 as f64, b[3], s);
                        }
                    } else {
                        for t in 0..q {
                            let b = v[r0 + i + t];
                            for (o, &x) in c.iter_mut().zip(gs[t]) {
                                *o = A::madd(x as f64, b, *o);
                            }
                        }
                    }
                }
            }
            i += q;
        }
    }
}

/// `out[k] = G v_k` for a **mirrored** row-major `n × n` `f32` Gram (the products whose results
/// are only estimates: module docs, "Kernel products"), reading only its lower triangle: the
/// square tiles `(I, J)`, `J ≤ I`, of [`SYM_GRAM_TILE`] rows/columns, each read once and used for
/// the rows of `I` (8-lane dots) and, below the diagonal, the columns of `J` (column sums over the
/// tile's rows, added once into `J`'s outputs) — half the memory traffic of [`gram_products`]
/// (measured, n = 12,000, 1 thread: one vector 0.029 s against 0.034 s, ten vectors 0.091 s against
/// 0.116 s; the products are then about as bound by arithmetic as by memory). The tiles run in
/// the rounds of the certificate pass (no tile index twice in a round: disjoint outputs in
/// parallel), so every output gets its partial sums in a fixed order: the same bits for any
/// thread count, and each column of a batch is its vector's product alone, bit for bit
/// ([`evaluation::sym_tile_rounds`], the certificate pass's driver). Not bit for bit
/// [`gram_products`] (another summation order).
fn gram_products_sym(g: &[f32], n: usize, vs: &[&[f64]]) -> Vec<Vec<f64>> {
    let (nv, tile) = (vs.len(), SYM_GRAM_TILE);
    let len = |t: usize| tile.min(n - t * tile);
    evaluation::sym_tile_rounds(
        n,
        nv,
        tile,
        Cancel::never(),
        || vec![0.0f64; nv * tile],
        |colsum, ti, tj, oi, oj| {
            let (r, c) = ((ti * tile, len(ti)), (tj * tile, len(tj)));
            if ti == tj {
                sym_tile_f32(g, n, r, c, vs, oi, None);
            } else {
                let cs = &mut colsum[..nv * c.1];
                cs.fill(0.0);
                sym_tile_f32(g, n, r, c, vs, oi, Some(&mut cs[..]));
                for (o, x) in oj.iter_mut().zip(cs.iter()) {
                    *o += x;
                }
            }
        },
    )
}

/// `out[k] = G v_k` for a held row-major `n × n` `f64` Gram matrix `g`: [`gram_products`] (each
/// entry bit for bit [`dot8`]), what the certificate sums its decision values with when the solver
/// held the `f64` Gram ([`crate::kernel_learning::erm`], accuracy [`crate::fp::gram_sum_rel_error`]).
pub(crate) fn gram_matvecs(g: &[f64], n: usize, vs: &[&[f64]]) -> Vec<Vec<f64>> {
    assert_eq!(g.len(), n * n, "gram_matvecs: an n × n Gram");
    assert!(vs.iter().all(|v| v.len() == n), "gram_matvecs: vectors of length n");
    gram_products(g, n, vs)
}

impl<'x> Ops<'x> {
    /// The Gram matrix when it fits `cache_bytes` (`f64`, else `f32`), built in row blocks with
    /// the hook polled between blocks; `None` when cancelled.
    fn new(
        x: ArrayView2<'x, f64>,
        kernel: &Kernel,
        y: &[f64],
        cache_bytes: usize,
        ticker: &mut Ticker<'_>,
    ) -> Option<Self> {
        let n = x.nrows();
        let nn = (n as u128) * (n as u128);
        // within the budget and within the memory the machine can give now (the memory cap rules
        // of crate::alloc: never ask the allocator for more than memory_limit_bytes); a refused
        // allocation falls back to the next path (f32 Gram, then fused products)
        let limit = crate::alloc::memory_limit_bytes().ok().flatten().map(u128::from);
        let fits = |bytes: u128| bytes <= cache_bytes as u128 && limit.is_none_or(|l| bytes <= l);
        let mut g64: Vec<f64> = Vec::new();
        let mut g32: Vec<f32> = Vec::new();
        let wide = fits(nn * 8) && g64.try_reserve_exact(n * n).is_ok();
        let narrow = !wide && fits(nn * 4) && g32.try_reserve_exact(n * n).is_ok();
        if wide || narrow {
            // K' is symmetric: each batch of rows computes its columns up to the batch's end only
            // (the lower triangle and the diagonal blocks, ~½ the kernel work), and the rest is
            // mirrored (every entry is still the engine's block value, of (i, j) or of (j, i))
            if wide {
                g64.resize(n * n, 0.0);
            } else {
                g32.resize(n * n, 0.0);
            }
            // tall blocks (less GEMM packing per FLOP), as many as the threads can share
            let rows = (BATCH_ROWS / rayon::current_num_threads().max(1)).min(evaluation::SYM_ROWS);
            let mut r0 = 0;
            while r0 < n {
                let r1 = (r0 + BATCH_ROWS).min(n);
                let mut blk = evaluation::kernel_matrix_tall(x.slice(s![r0..r1, ..]), x.slice(s![..r1, ..]), kernel, rows)
                    .expect("a block of at most BATCH_ROWS × n fits");
                if let evaluation::KernelKind::Rbf { .. } = kernel.kind {
                    // exact self-similarity, as the Gram matrix and the row cache
                    for i in r0..r1 {
                        blk[[i - r0, i]] = kernel.add_shift(1.0);
                    }
                }
                for (i, row) in blk.outer_iter().enumerate() {
                    let at = (r0 + i) * n;
                    let row = row.to_slice().expect("a standard-layout block");
                    if wide {
                        g64[at..at + r1].copy_from_slice(row);
                    } else {
                        for (o, &v) in g32[at..at + r1].iter_mut().zip(row) {
                            *o = v as f32;
                        }
                    }
                }
                r0 = r1;
                if !ticker.tick(|| progress(0, f64::NAN, n)) {
                    return None;
                }
            }
            if wide {
                mirror_lower(&mut g64, n);
            } else {
                mirror_lower(&mut g32, n);
            }
        }
        let gram = if wide {
            Gram::F64(g64)
        } else if narrow {
            Gram::F32(g32)
        } else {
            Gram::None
        };
        Some(Ops {
            x,
            kernel: *kernel,
            y: y.to_vec(),
            gram,
            n,
        })
    }

    fn has_gram(&self) -> bool {
        !matches!(self.gram, Gram::None)
    }

    /// `y ∘ K (y ∘ v_k)` for every `v_k`; `exact` products never use an `f32` Gram. `None` when
    /// the hook asked to stop.
    fn products(
        &self,
        vs: &[&[f64]],
        exact: bool,
        ticker: &mut Ticker<'_>,
        make: &dyn Fn() -> Progress,
    ) -> Option<Vec<Vec<f64>>> {
        let n = self.n;
        #[cfg(test)]
        tests::PASSES.with(|c| c.set(c.get() + 1));
        let signed: Vec<Vec<f64>> = vs
            .iter()
            .map(|v| v.iter().zip(&self.y).map(|(a, b)| a * b).collect())
            .collect();
        let refs: Vec<&[f64]> = signed.iter().map(|v| &v[..]).collect();
        let mut out = match (&self.gram, exact) {
            (Gram::F64(g), _) => gram_products(g, n, &refs),
            (Gram::F32(g), false) => gram_products_sym(g, n, &refs),
            _ => {
                let mut out = vec![vec![0.0; n]; vs.len()];
                let mut r0 = 0;
                while r0 < n {
                    let r1 = (r0 + BATCH_ROWS).min(n);
                    let part = evaluation::kernel_matvecs_cancellable(
                        self.x.slice(s![r0..r1, ..]),
                        self.x,
                        &refs,
                        &self.kernel,
                        Cancel::never(),
                    )
                    .expect("never cancelled");
                    for (o, p) in out.iter_mut().zip(part) {
                        o[r0..r1].copy_from_slice(&p);
                    }
                    r0 = r1;
                    if !ticker.tick(make) {
                        return None;
                    }
                }
                out
            }
        };
        if !ticker.tick(make) {
            return None;
        }
        for o in out.iter_mut() {
            for (v, yi) in o.iter_mut().zip(&self.y) {
                *v *= yi;
            }
        }
        Some(out)
    }
}

/// `g[i][j] = g[j][i]` for every `j > i` of a row-major `n × n` matrix (the upper triangle from the
/// lower one), in 64 × 64 tiles (cache-friendly; sequential, so deterministic).
fn mirror_lower<T: Copy>(g: &mut [T], n: usize) {
    const TILE: usize = 64;
    for i0 in (0..n).step_by(TILE) {
        for j0 in (i0..n).step_by(TILE) {
            for i in i0..(i0 + TILE).min(n) {
                for j in j0.max(i + 1)..(j0 + TILE).min(n) {
                    g[i * n + j] = g[j * n + i];
                }
            }
        }
    }
}

fn progress(iter: u64, gap: f64, n: usize) -> Progress {
    Progress {
        iter,
        gap,
        exact: false,
        active: n,
    }
}

/// The next greedy pivot of a pivoted Cholesky run on the residual diagonal `d`: `(j, d_j, Σ d)` with
/// `j` the first index of the largest residual (shared by this solver and the K-class one).
pub(crate) fn next_pivot(d: &[f64]) -> (usize, f64, f64) {
    let (j, dj) = d
        .iter()
        .enumerate()
        .fold((0, f64::NEG_INFINITY), |(bj, bv), (i, &v)| if v > bv { (i, v) } else { (bj, bv) });
    (j, dj, d.iter().sum())
}

/// Candidates per [`ColumnBlock`]: the largest residual diagonals when a block starts.
const BLOCK_CANDIDATES: usize = 48;
/// Columns per chunk of [`ColumnBlock::new`]'s update (its candidates' chunks stay in cache).
const BLOCK_COLS: usize = 256;

/// The next pivoted-Cholesky columns with a held Gram, computed in a block: the greedy run is
/// unchanged (each pivot is still the largest residual diagonal, [`next_pivot`]), and so are the bits
/// of every column, but the rows already made are read once per block instead of once per column.
///
/// A block starts at pivot `r₀` with the [`BLOCK_CANDIDATES`] indices of largest residual diagonal
/// (the pivot among them) and their kernel rows, from which it subtracts `L_m[j] L_m` for every
/// row `m < r₀` of the factor, `m` ascending — the operations [`cholesky_column`] makes, in its
/// order, for each entry (one pass over the factor for all the candidates). A pivot of the greedy
/// run that is one of the candidates takes its row, subtracts the rows `r₀ ≤ m < r` made since in
/// the same way, and becomes the column ([`finish_column`]): bit for bit `cholesky_column`. A pivot
/// outside the candidates starts a new block. So the factor does not depend on where blocks start
/// (a resumed run is still bit for bit a longer one).
struct ColumnBlock {
    /// `(index, row)`: the candidates' kernel rows, less the factor's rows before `start`.
    cands: Vec<(usize, Option<Vec<f64>>)>,
    start: usize,
}

impl ColumnBlock {
    fn new(lt: &Array2<f64>, start: usize, d: &[f64], pivot: usize, gram_row: &dyn Fn(usize) -> Vec<f64>) -> Self {
        #[cfg(test)]
        tests::BLOCKS.with(|c| c.set(c.get() + 1));
        // the largest residual diagonals (ties: the lower index), the pivot first
        let mut idx: Vec<usize> = (0..d.len()).filter(|&i| i != pivot && d[i] > 0.0).collect();
        let b = (BLOCK_CANDIDATES - 1).min(idx.len());
        if b < idx.len() {
            idx.select_nth_unstable_by(b, |&p, &q| d[q].total_cmp(&d[p]).then(p.cmp(&q)));
            idx.truncate(b);
        }
        idx.insert(0, pivot);
        let mut rows: Vec<Vec<f64>> = idx.iter().map(|&j| gram_row(j)).collect();
        let n = d.len();
        if start > 0 && n > 0 {
            let coefs: Vec<Vec<f64>> = idx.iter().map(|&j| (0..start).map(|m| lt[[m, j]]).collect()).collect();
            let done = lt.slice(s![..start, ..]);
            // rows as column chunks: every chunk updated by one task (deterministic)
            let mut chunks: Vec<Vec<&mut [f64]>> = (0..n.div_ceil(BLOCK_COLS)).map(|_| Vec::new()).collect();
            for row in rows.iter_mut() {
                for (c, part) in row.chunks_mut(BLOCK_COLS).enumerate() {
                    chunks[c].push(part);
                }
            }
            chunks.into_par_iter().enumerate().for_each(|(c, mut parts)| {
                let c0 = c * BLOCK_COLS;
                subtract_rows(done, &coefs, c0, &mut parts);
            });
        }
        ColumnBlock { cands: idx.into_iter().zip(rows.into_iter().map(Some)).collect(), start }
    }

    /// Whether the pivot `j` is a candidate not taken yet.
    fn holds(&self, j: usize) -> bool {
        self.cands.iter().any(|(i, row)| *i == j && row.is_some())
    }

    /// The candidate `j`'s row less every factor row `m < r` (the column before its scaling).
    fn take(&mut self, lt: &Array2<f64>, r: usize, j: usize) -> Vec<f64> {
        let slot = self.cands.iter_mut().find(|(i, row)| *i == j && row.is_some()).expect("a held candidate");
        let mut out = slot.1.take().expect("not taken");
        subtract_factor_rows(lt.view(), self.start, r, j, &mut out);
        out
    }
}

simd_dispatch! {
    /// `parts[k] −= Σ_m coefs[k][m] · done[m][c0..]` for `m` ascending, one product and one
    /// subtraction at a time (each entry: [`cholesky_column`]'s operations, in its order).
    fn subtract_rows(done: ArrayView2<'_, f64>, coefs: &[Vec<f64>], c0: usize, parts: &mut [&mut [f64]]) {
        let len = parts.first().map_or(0, |p| p.len());
        let row = |m: usize| &done.row(m).to_slice().expect("contiguous")[c0..c0 + len];
        let r = done.nrows();
        let quad = r - r % 4;
        // four factor rows per sweep: each entry loaded and stored once per four subtractions,
        // still one product and one subtraction at a time, m ascending
        for m in (0..quad).step_by(4) {
            let (l0, l1, l2, l3) = (row(m), row(m + 1), row(m + 2), row(m + 3));
            for (part, cf) in parts.iter_mut().zip(coefs) {
                let (c0_, c1_, c2_, c3_) = (cf[m], cf[m + 1], cf[m + 2], cf[m + 3]);
                for ((((o, &a0), &a1), &a2), &a3) in part.iter_mut().zip(l0).zip(l1).zip(l2).zip(l3) {
                    let mut v = *o;
                    v -= c0_ * a0;
                    v -= c1_ * a1;
                    v -= c2_ * a2;
                    v -= c3_ * a3;
                    *o = v;
                }
            }
        }
        for m in quad..r {
            let lm = row(m);
            for (part, cf) in parts.iter_mut().zip(coefs) {
                let cm = cf[m];
                for (o, &l) in part.iter_mut().zip(lm) {
                    *o -= cm * l;
                }
            }
        }
    }
}

/// Row `r` of `lt` becomes `out / √d_j` and the residual diagonal `d` is updated (`d_j = 0`): the
/// end of every pivoted-Cholesky column, from its `out` (the kernel row less `L_m[j] L_m` for every
/// `m < r`, [`subtract_factor_rows`]).
fn finish_column(lt: &mut Array2<f64>, r: usize, mut out: Vec<f64>, j: usize, dj: f64, d: &mut [f64]) {
    let inv = 1.0 / dj.sqrt();
    out.par_chunks_mut(2048).for_each(|o| {
        for v in o.iter_mut() {
            *v *= inv;
        }
    });
    let mut col = lt.row_mut(r);
    let col = col.as_slice_mut().expect("contiguous");
    col.copy_from_slice(&out);
    for (dv, &l) in d.iter_mut().zip(col.iter()) {
        *dv = (*dv - l * l).max(0.0);
    }
    d[j] = 0.0;
}

/// One pivoted-Cholesky step: row `r` of `lt` (`Lᵀ`, the first `r` rows done) becomes the column
/// `(K_j − Σ_m L_mj L_m) / √d_j` from the kernel row `row = K_j`, and the residual diagonal `d`
/// is updated (`d_j = 0`). Parallel over fixed column chunks: deterministic (shared by this solver
/// and the K-class one).
pub(crate) fn cholesky_column(lt: &mut Array2<f64>, r: usize, row: &[f64], j: usize, dj: f64, d: &mut [f64]) {
    let mut out = row.to_vec();
    subtract_factor_rows(lt.view(), 0, r, j, &mut out);
    finish_column(lt, r, out, j, dj, d);
}

/// `out −= L_m[j] L_m` for the factor rows `m0 ≤ m < r`, `m` ascending, one product and one
/// subtraction at a time per entry (parallel over fixed column chunks: deterministic). The order
/// every pivoted-Cholesky column is made in ([`cholesky_column`], [`ColumnBlock::take`]).
fn subtract_factor_rows(lt: ArrayView2<'_, f64>, m0: usize, r: usize, j: usize, out: &mut [f64]) {
    let coefs: Vec<f64> = (m0..r).map(|m| lt[[m, j]]).collect();
    out.par_chunks_mut(2048).enumerate().for_each(|(c, o)| {
        let c0 = c * 2048;
        for (k, &cm) in coefs.iter().enumerate() {
            let lm = &lt.row(m0 + k).to_slice().expect("contiguous")[c0..c0 + o.len()];
            for (oi, &l) in o.iter_mut().zip(lm) {
                *oi -= cm * l;
            }
        }
    });
}

/// Pivoted (incomplete) Cholesky `K ≈ L Lᵀ`: rows of the returned factor are the columns of `L`.
/// Greedy pivots on the largest residual diagonal; stops after `r_max` pivots, when `scale · Σ
/// residual diagonal ≤ 0.5` (the preconditioned system's residual part is then small), or when
/// the largest residual diagonal is below `1e-12 · max_i K_ii`. The run can be resumed for more
/// pivots ([`Pivots::extend`]). `None` when cancelled.
fn pivoted_cholesky(
    ops: &Ops<'_>,
    diag: &[f64],
    r_max: usize,
    scale: f64,
    ticker: &mut Ticker<'_>,
) -> Option<Pivots> {
    let d: Vec<f64> = diag.iter().map(|v| v.max(0.0)).collect();
    let dmax0 = d.iter().cloned().fold(0.0, f64::max);
    let mut piv = Pivots { lt: Array2::<f64>::zeros((0, d.len())), states: Vec::new(), dmax0, d, scale };
    piv.extend(ops, r_max, ticker)?;
    Some(piv)
}

/// A pivoted Cholesky factor with the residual state `(largest residual diagonal, trace)` seen
/// before each pivot: the factor the same greedy run would have stopped at for a smaller `scale`
/// is a row prefix of it (the pivot order does not depend on `scale`, only the stopping test), and
/// so is the factor of the same run stopped after fewer pivots: a run resumed for more pivots
/// ([`extend`](Self::extend)) computes bit for bit the rows a longer run would have.
pub(crate) struct Pivots {
    lt: Array2<f64>,
    states: Vec<(f64, f64)>,
    dmax0: f64,
    /// The residual diagonal after the pivots made.
    d: Vec<f64>,
    /// The `scale` of the run's stopping test.
    scale: f64,
}

impl Pivots {
    fn stops(&self, state: (f64, f64), scale: f64) -> bool {
        state.0 <= 1e-12 * self.dmax0 || scale * state.1 <= 0.5
    }

    /// Resumes the greedy run up to `r_max` pivots in all (or its stopping test). `None` when
    /// cancelled (the factor is then left as it was).
    fn extend(&mut self, ops: &Ops<'_>, r_max: usize, ticker: &mut Ticker<'_>) -> Option<()> {
        let n = self.d.len();
        let r0 = self.lt.nrows();
        let target = r_max.min(n);
        if target <= r0 || self.states.len() > r0 {
            return Some(()); // enough pivots, or the run has stopped on its test
        }
        let mut lt = Array2::<f64>::zeros((target, n));
        lt.slice_mut(s![..r0, ..]).assign(&self.lt);
        let mut d = self.d.clone();
        let mut states = self.states.clone();
        let mut rows = if ops.has_gram() {
            None
        } else {
            Some(RowCache::new(ops.x, &ops.kernel, 0, true))
        };
        let mut r = r0;
        // with a held Gram: the candidate block of the next pivots (ColumnBlock)
        let mut block: Option<ColumnBlock> = None;
        let gram_row = |j: usize| -> Vec<f64> {
            match &ops.gram {
                Gram::F64(g) => g[j * n..(j + 1) * n].to_vec(),
                Gram::F32(g) => g[j * n..(j + 1) * n].iter().map(|&v| v as f64).collect(),
                Gram::None => unreachable!("only with a held Gram"),
            }
        };
        while r < target {
            let (j, dj, trace) = next_pivot(&d);
            states.push((dj, trace));
            if self.stops((dj, trace), self.scale) {
                break;
            }
            if let Some(rc) = rows.as_mut() {
                let row: Vec<f64> = match rc.row(j) {
                    RowRef::F64(row) => row.to_vec(),
                    RowRef::F32(row) => row.iter().map(|&v| v as f64).collect(),
                };
                cholesky_column(&mut lt, r, &row, j, dj, &mut d);
            } else {
                if !block.as_ref().is_some_and(|b| b.holds(j)) {
                    block = Some(ColumnBlock::new(&lt, r, &d, j, &gram_row));
                }
                let out = block.as_mut().expect("just made").take(&lt, r, j);
                finish_column(&mut lt, r, out, j, dj, &mut d);
            }
            r += 1;
            if !ticker.tick(|| progress(0, f64::NAN, n)) {
                return None;
            }
        }
        self.lt = if r == target { lt } else { lt.slice(s![..r, ..]).to_owned() };
        self.d = d;
        self.states = states;
        Some(())
    }

    /// Number of pivots [`pivoted_cholesky`] would keep for `scale` (`≤` the one it was run with).
    fn cut(&self, scale: f64) -> usize {
        self.states
            .iter()
            .position(|&st| self.stops(st, scale))
            .unwrap_or(self.states.len())
            .min(self.lt.nrows())
    }

    /// Whether the run with `scale` stopped after `r` pivots would have gone on (its stopping test
    /// did not stop it there): bit for bit the same answer for a longer shared run.
    fn can_grow(&self, scale: f64, r: usize) -> bool {
        self.states.iter().position(|&st| self.stops(st, scale)).map_or(true, |p| p > r)
    }

    /// The factor for `scale`: bit-for-bit what [`pivoted_cholesky`] returns when run with it.
    #[cfg(test)]
    fn factor(&self, scale: f64) -> Array2<f64> {
        self.lt.slice(s![..self.cut(scale), ..]).to_owned()
    }
}

/// Column blocks of [`lower_gram`] (the fixed summation order of its entries).
const GRAM_BLOCKS: usize = 4;
/// Row blocks per side of [`lower_gram`]'s grid.
const GRAM_ROW_BLOCKS: usize = 4;

/// `I + A Aᵀ` for `A` (`r × n`) on and below the diagonal blocks (the entries above are not
/// computed: zero or partial), as the fixed sum `I + Σ_b A_b A_bᵀ` over [`GRAM_BLOCKS`] column
/// blocks, each block product a GEMM per pair of row blocks on or below the diagonal.
fn lower_gram(a: ArrayView2<'_, f64>) -> Array2<f64> {
    let (r, n) = a.dim();
    let bw = n.div_ceil(GRAM_BLOCKS).max(1);
    let rh = r.div_ceil(GRAM_ROW_BLOCKS).max(1);
    let rows = |i: usize| ((i * rh).min(r), ((i + 1) * rh).min(r));
    let tasks: Vec<(usize, usize, usize)> = (0..GRAM_BLOCKS)
        .flat_map(|b| (0..GRAM_ROW_BLOCKS).flat_map(move |i| (0..=i).map(move |j| (b, i, j))))
        .collect();
    let blocks: Vec<Array2<f64>> = tasks
        .par_iter()
        .map(|&(b, i, j)| {
            let (c0, c1) = ((b * bw).min(n), ((b + 1) * bw).min(n));
            let ((i0, i1), (j0, j1)) = (rows(i), rows(j));
            let mut out = Array2::<f64>::zeros((i1 - i0, j1 - j0));
            general_mat_mul(1.0, &a.slice(s![i0..i1, c0..c1]), &a.slice(s![j0..j1, c0..c1]).t(), 0.0, &mut out);
            out
        })
        .collect();
    let mut m = Array2::<f64>::eye(r);
    for b in 0..GRAM_BLOCKS {
        for (&(bb, i, j), blk) in tasks.iter().zip(&blocks) {
            if bb == b {
                let ((i0, i1), (j0, j1)) = (rows(i), rows(j));
                let mut dst = m.slice_mut(s![i0..i1, j0..j1]);
                dst += blk;
            }
        }
    }
    m
}

/// Columns per `f32` GEMM of [`lower_gram_f32`] (the block results are summed in `f64`).
const F32_GRAM_COLS: usize = 256;
/// Largest bound on `‖Ĝ − G‖₂` (from [`crate::fp::f32_blocked_gram_rel_error`] and `‖U‖_F²`) for
/// which [`scaled_gram`] takes the `f32` product: `I + Ĝ` then stays `⪰ ½ I + G` (the preconditioner
/// `I − U (I + Ĝ)⁻¹ Uᵀ` positive definite, the Nyström Newton step a descent direction), with
/// room for the rounding of `‖U‖_F²` itself.
const F32_GRAM_MAX_ERROR: f64 = 0.5;

/// [`lower_gram`] from `f32` factors: `I + A Aᵀ` on and below the diagonal blocks as the `f64`
/// sum, column block by column block in order, of the `f32` GEMMs of [`F32_GRAM_COLS`] columns
/// (twice the `f64` GEMM's rate; measured at `r = 1,600`, `n = 20,000`: 1.23 → 0.63 s). Each
/// entry is within [`crate::fp::f32_blocked_gram_rel_error`] `· Σ_k |A_ik||A_jk|` of the exact
/// product of the `f64` values `a` was rounded from. Deterministic: each block of the grid is one
/// task.
fn lower_gram_f32(a: ArrayView2<'_, f32>) -> Array2<f64> {
    let (r, n) = a.dim();
    let rh = r.div_ceil(GRAM_ROW_BLOCKS).max(1);
    let rows = |i: usize| ((i * rh).min(r), ((i + 1) * rh).min(r));
    let tasks: Vec<(usize, usize)> = (0..GRAM_ROW_BLOCKS).flat_map(|i| (0..=i).map(move |j| (i, j))).collect();
    let blocks: Vec<Array2<f64>> = tasks
        .par_iter()
        .map(|&(i, j)| {
            let ((i0, i1), (j0, j1)) = (rows(i), rows(j));
            let mut out = Array2::<f64>::zeros((i1 - i0, j1 - j0));
            let mut part = Array2::<f32>::zeros((i1 - i0, j1 - j0));
            let mut c0 = 0;
            while c0 < n {
                let c1 = (c0 + F32_GRAM_COLS).min(n);
                general_mat_mul(1.0, &a.slice(s![i0..i1, c0..c1]), &a.slice(s![j0..j1, c0..c1]).t(), 0.0, &mut part);
                out.zip_mut_with(&part, |o, &p| *o += f64::from(p));
                c0 = c1;
            }
            out
        })
        .collect();
    let mut m = Array2::<f64>::eye(r);
    for (&(i, j), blk) in tasks.iter().zip(&blocks) {
        let ((i0, i1), (j0, j1)) = (rows(i), rows(j));
        let mut dst = m.slice_mut(s![i0..i1, j0..j1]);
        dst += blk;
    }
    m
}

/// The scratch of the preconditioners' `Uᵀ` (`r × n`): `f32` normally, `f64` when [`scaled_gram`]
/// must take the `f64` product (only one of them is held at a time).
#[derive(Default)]
pub(crate) struct PrecondScratch {
    narrow: Vec<f32>,
    wide: Vec<f64>,
}

/// `I + UᵀU` with `Uᵀ = lt · diag(t)` (`r × n`) on and below the diagonal blocks: by the `f32`
/// GEMMs of [`lower_gram_f32`] when their worst-case error is small against the identity —
/// `‖Ĝ − G‖₂ ≤ ‖ |Ĝ − G| ‖₂ ≤ e ‖ |U|ᵀ|U| ‖₂ ≤ e ‖U‖_F²` with `e` =
/// [`crate::fp::f32_blocked_gram_rel_error`] at most [`F32_GRAM_MAX_ERROR`] — and else by the
/// `f64` GEMMs of [`lower_gram`]. The matrix only shapes the preconditioner and the Nyström warm
/// start's Newton steps (every gap is checked exactly and certified independently), so its
/// accuracy decides the speed of a solve, never its result's validity.
fn scaled_gram(lt: ArrayView2<'_, f64>, t: &[f64], scratch: &mut PrecondScratch) -> Array2<f64> {
    let (r, n) = lt.dim();
    if n == 0 || r == 0 {
        return Array2::<f64>::eye(r);
    }
    scratch.wide = Vec::new();
    if scratch.narrow.len() < r * n {
        scratch.narrow.resize(r * n, 0.0);
    }
    let buf = &mut scratch.narrow[..r * n];
    let sq: Vec<f64> = buf
        .par_chunks_mut(n)
        .zip(lt.axis_iter(Axis(0)))
        .map(|(out, row)| {
            let mut sq = 0.0;
            for ((o, &l), &ti) in out.iter_mut().zip(row.iter()).zip(t) {
                let v = l * ti;
                *o = v as f32;
                sq += v * v;
            }
            sq
        })
        .collect();
    let frob: f64 = sq.iter().sum();
    let e = crate::fp::f32_blocked_gram_rel_error(F32_GRAM_COLS, n.div_ceil(F32_GRAM_COLS));
    if e * frob <= F32_GRAM_MAX_ERROR {
        let ut = ArrayView2::from_shape((r, n), &buf[..]).expect("r × n");
        return lower_gram_f32(ut);
    }
    #[cfg(test)]
    tests::WIDE_GRAMS.with(|c| c.set(c.get() + 1));
    scratch.narrow = Vec::new();
    scratch.wide.resize(r * n, 0.0);
    let buf = &mut scratch.wide[..];
    buf.par_chunks_mut(n).zip(lt.axis_iter(Axis(0))).for_each(|(out, row)| {
        for ((o, &l), &ti) in out.iter_mut().zip(row.iter()).zip(t) {
            *o = l * ti;
        }
    });
    let ut = ArrayView2::from_shape((r, n), &buf[..]).expect("r × n");
    lower_gram(ut)
}

/// Columns per block of [`blocked_cholesky`].
const CHOL_BLOCK: usize = 64;
/// Rows per parallel task of [`blocked_cholesky`]'s block-column updates.
const CHOL_ROWS: usize = 256;

/// The lower Cholesky factor (row-major `r × r`) of a matrix `m ⪰ I` whose lower triangle is
/// given, left-looking by blocks of [`CHOL_BLOCK`] columns: each block column is first updated
/// by one GEMM with the factor's columns before it (`m[J.., J] − L[J.., ..J] L[J, ..J]ᵀ`, row
/// chunks in parallel: deterministic), then factored column by column with [`dot8`] inner
/// products within the block. A pivot below 1 (impossible in exact arithmetic since `m ⪰ I`) is
/// raised to 1, so the factor is always of a positive definite matrix. (The unblocked [`dot8`]
/// loop, one inner product per entry, was 3 % of the highdim poly C = 1, n = 20,000 fit at 1
/// thread, about 0.12 s per preconditioner at r = 1,600; with the block updates at the GEMM's rate
/// the fit took 32.9 → 32.0 s.)
fn blocked_cholesky(m: &Array2<f64>) -> Vec<f64> {
    let r = m.nrows();
    let mut l = Array2::<f64>::zeros((r, r));
    let mut j0 = 0;
    while j0 < r {
        let j1 = (j0 + CHOL_BLOCK).min(r);
        let b = j1 - j0;
        // S = m[j0.., j0..j1] − L[j0.., ..j0] L[j0..j1, ..j0]ᵀ (only the entries on and below the
        // diagonal are read)
        let mut sblk = m.slice(s![j0.., j0..j1]).to_owned();
        if j0 > 0 {
            let right = l.slice(s![j0..j1, ..j0]).to_owned();
            let done = l.slice(s![j0.., ..j0]);
            sblk.axis_chunks_iter_mut(Axis(0), CHOL_ROWS)
                .into_par_iter()
                .zip(done.axis_chunks_iter(Axis(0), CHOL_ROWS).into_par_iter())
                .for_each(|(mut out, left)| general_mat_mul(-1.0, &left, &right.t(), 1.0, &mut out));
        }
        // the diagonal block, column by column
        for j in 0..b {
            for i in j..b {
                let (ri, rj) = (l.slice(s![j0 + i, j0..j0 + j]), l.slice(s![j0 + j, j0..j0 + j]));
                let sum = sblk[[i, j]] - dot8(ri.as_slice().expect("row-major"), rj.as_slice().expect("row-major"));
                l[[j0 + i, j0 + j]] = if i == j { sum.max(1.0).sqrt() } else { sum / l[[j0 + j, j0 + j]] };
            }
        }
        // the rows below it, each on its own (a triangular solve with the diagonal block)
        let (top, mut below) = l.view_mut().split_at(Axis(0), j1);
        let diag = top.slice(s![j0..j1, j0..j1]);
        below
            .axis_chunks_iter_mut(Axis(0), CHOL_ROWS)
            .into_par_iter()
            .zip(sblk.slice(s![b.., ..]).axis_chunks_iter(Axis(0), CHOL_ROWS).into_par_iter())
            .for_each(|(mut rows, srows)| {
                for (mut row, srow) in rows.outer_iter_mut().zip(srows.outer_iter()) {
                    let seg = &mut row.as_slice_mut().expect("row-major")[j0..j1];
                    for j in 0..b {
                        let dj = diag.row(j);
                        let dj = dj.as_slice().expect("row-major");
                        seg[j] = (srow[j] - dot8(&seg[..j], &dj[..j])) / dj[j];
                    }
                }
            });
        j0 = j1;
    }
    l.into_raw_vec_and_offset().0
}

/// Preconditioner `(I + U Uᵀ)⁻¹ = I − U (I + UᵀU)⁻¹ Uᵀ` with `U = diag(t) Lᵀᵀ` (`t = C^{½} W^{½}
/// y`), from the `r × r` Cholesky factor of `I + UᵀU`.
///
/// `Uᵀ = Lᵀ diag(t)` is not stored: its entries `lt[m][i] · t[i]` are recomputed (the same rounded
/// products) where [`apply`](Self::apply) reads them, so a preconditioner holds `O(n + r²)` memory
/// beside the shared factor (a path in lock-step holds one per `λ`).
struct Precond {
    t: Vec<f64>,
    /// Lower Cholesky factor of `I + Uᵀ U` (row-major `r × r`).
    chol: Vec<f64>,
    r: usize,
    /// `I + UᵀU` itself (its lower triangle) when kept ([`Precond::rescaled`]).
    gram: Option<Array2<f64>>,
}

impl Precond {
    /// For the factor `lt` (`Lᵀ`, `r × n`, rows contiguous; [`apply`](Self::apply) takes the same
    /// one). `scratch`: reused for `Uᵀ` (`r × n`) while `I + UᵀU` is computed ([`scaled_gram`]; one
    /// buffer for all the preconditioners of a solve or a path: no fresh pages per Newton step).
    fn new(lt: ArrayView2<'_, f64>, t: &[f64], scratch: &mut PrecondScratch) -> Self {
        Self::build(lt, t, scratch, false)
    }

    /// [`new`](Self::new), keeping `I + UᵀU` when `keep_gram` (for [`rescaled`](Self::rescaled)).
    fn build(lt: ArrayView2<'_, f64>, t: &[f64], scratch: &mut PrecondScratch, keep_gram: bool) -> Self {
        let r = lt.nrows();
        let m = scaled_gram(lt, t, scratch);
        // Cholesky (M ⪰ I, or ⪰ ½ I + UᵀU from the f32 GEMMs: always positive definite)
        let chol = blocked_cholesky(&m);
        Precond { t: t.to_vec(), chol, r, gram: keep_gram.then_some(m) }
    }

    /// The preconditioner of `t · ratio^{½}` from the kept `I + UᵀU` (`None` without it): `I + ratio ·
    /// UᵀU` and its Cholesky factor, `O(r³)` instead of the `O(n r²)` build. (A Nyström Hessian at
    /// `C'` is the one at `C = ratio · C'` for the same latent values: "Paths" in the module docs.)
    fn rescaled(&self, ratio: f64) -> Option<Precond> {
        let g = self.gram.as_ref()?;
        let m = Array2::from_shape_fn(g.dim(), |(i, j)| {
            let e = if i == j { 1.0 } else { 0.0 };
            e + ratio * (g[[i, j]] - e)
        });
        let chol = blocked_cholesky(&m);
        let sr = ratio.sqrt();
        Some(Precond { t: self.t.iter().map(|v| v * sr).collect(), chol, r: self.r, gram: Some(m) })
    }

    /// `w ← (I + UᵀU)⁻¹ w` (`r`-vector) by the stored Cholesky factor.
    fn solve_small(&self, w: &mut [f64]) {
        let r = self.r;
        for i in 0..r {
            let mut sum = w[i];
            for k in 0..i {
                sum -= self.chol[i * r + k] * w[k];
            }
            w[i] = sum / self.chol[i * r + i];
        }
        for i in (0..r).rev() {
            let mut sum = w[i];
            for k in i + 1..r {
                sum -= self.chol[k * r + i] * w[k];
            }
            w[i] = sum / self.chol[i * r + i];
        }
    }

    /// `out = (I + U Uᵀ)⁻¹ v` (`lt`: the factor the preconditioner was built from, or a longer run
    /// of it: its first `r` rows are read).
    fn apply(&self, lt: ArrayView2<'_, f64>, v: &[f64]) -> Vec<f64> {
        apply_many(&[self], lt, &[v]).pop().expect("one output")
    }
}

/// `out_k = (I + U_k U_kᵀ)⁻¹ v_k` for several preconditioners (each with its own `t` and `r`, all
/// from prefixes of the one factor `lt`; one of them is [`Precond::apply`]), reading each row of
/// `lt` once for all of them (a path in lock-step applies one per `λ` after every pass, each
/// reading the `r × n` factor twice; measured, Adult n = 20,000, 10-candidate selection: 9.2 →
/// 9.0 s): `w = Uᵀ v` by [`dot8_scaled`], the `r × r` solve, `out = v − U w` in column chunks.
/// Every output is bit for bit that of its preconditioner alone (per entry the same sums and the
/// same subtractions in the same order, whatever the others).
fn apply_many(pres: &[&Precond], lt: ArrayView2<'_, f64>, vs: &[&[f64]]) -> Vec<Vec<f64>> {
    let rmax = pres.iter().map(|p| p.r).max().unwrap_or(0);
    let row = |m: usize| lt.row(m).to_slice().expect("contiguous");
    let wrows: Vec<Vec<f64>> = (0..rmax)
        .into_par_iter()
        .map(|m| {
            pres.iter()
                .zip(vs)
                .map(|(p, v)| if m < p.r { dot8_scaled(row(m), &p.t, v) } else { 0.0 })
                .collect()
        })
        .collect();
    let mut outs: Vec<Vec<f64>> = vs.iter().map(|v| v.to_vec()).collect();
    let ws: Vec<Vec<f64>> = pres
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let mut w: Vec<f64> = (0..p.r).map(|m| wrows[m][k]).collect();
            p.solve_small(&mut w);
            w
        })
        .collect();
    let n = lt.ncols();
    let mut chunks: Vec<Vec<&mut [f64]>> = (0..n.div_ceil(2048)).map(|_| Vec::new()).collect();
    for o in outs.iter_mut() {
        for (c, part) in o.chunks_mut(2048).enumerate() {
            chunks[c].push(part);
        }
    }
    chunks.into_par_iter().enumerate().for_each(|(c, mut parts)| {
        let c0 = c * 2048;
        for m in 0..rmax {
            let r = row(m);
            for ((o, p), w) in parts.iter_mut().zip(pres).zip(&ws) {
                if m < p.r {
                    let (wm, tc, rc) = (w[m], &p.t[c0..c0 + o.len()], &r[c0..c0 + o.len()]);
                    for ((oi, &l), &ti) in o.iter_mut().zip(rc).zip(tc) {
                        *oi -= wm * (l * ti);
                    }
                }
            }
        }
    });
    outs
}

/// [`dot8`]`(row ∘ t, v)` without storing `row ∘ t`: each `row[j] · t[j]` is rounded as the stored
/// product would be, then summed in `dot8`'s lanes and order (the same bits).
fn dot8_scaled(row: &[f64], t: &[f64], v: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let split = row.len() - row.len() % 8;
    for ((r, s), w) in row[..split].chunks_exact(8).zip(t[..split].chunks_exact(8)).zip(v[..split].chunks_exact(8)) {
        for l in 0..8 {
            acc[l] += (r[l] * s[l]) * w[l];
        }
    }
    let mut tail = 0.0;
    for ((r, s), w) in row[split..].iter().zip(&t[split..]).zip(&v[split..]) {
        tail += (r * s) * w;
    }
    lanes8_reduce(&acc, tail)
}

fn dotv(a: &[f64], b: &[f64]) -> f64 {
    dot8(a, b)
}

/// `Ψ = Σ s softplus(−u) + ½ vᵀu` (the `n`-scaled primal).
fn psi(u: &[f64], v: &[f64], sw: &[f64]) -> f64 {
    let loss: f64 = u.iter().zip(sw).map(|(&ui, &si)| si * softplus(-ui)).sum();
    loss + 0.5 * dotv(v, u)
}

/// `f = C^{½} y ∘ (L w)` for the pivoted factor `lt = Lᵀ` (`r × n`): the latent values of the
/// Nyström model with coefficients `w` (parallel over fixed column chunks: deterministic).
fn nystrom_latent(lt: ArrayView2<'_, f64>, y: &[f64], sc: f64, w: &[f64]) -> Vec<f64> {
    let n = lt.ncols();
    let mut f = vec![0.0f64; n];
    f.par_chunks_mut(2048).enumerate().for_each(|(ch, o)| {
        let c0 = ch * 2048;
        for (m, &wm) in w.iter().enumerate() {
            let row = &lt.row(m).to_slice().expect("contiguous")[c0..c0 + o.len()];
            for (oi, &l) in o.iter_mut().zip(row) {
                *oi += wm * l;
            }
        }
        for (k, oi) in o.iter_mut().enumerate() {
            *oi *= sc * y[c0 + k];
        }
    });
    f
}

/// Warm start (module docs): the latent values `u₀ = Φ w*` of the optimum of the Nyström model
/// `K ≈ L Lᵀ`, an `r`-dimensional weighted logistic regression
/// `min_w Σ_i s_i log(1 + e^{−(Φw)_i}) + ½‖w‖²` with features `Φ = C^{½} diag(y) L`, solved by
/// damped Newton (Hessian `I + ΦᵀWΦ`: the preconditioner's `r × r` system, `O(n r²)` per step)
/// until its Newton decrement is below `n · tol`, from the coefficients `w0` (a shorter factor's optimum, padded with zeros: a resumed
/// run's factor starts with the same columns, so the model is the same; or, in a path, the
/// optimum of the next smaller `C`, scaled to the same latent values: "Paths" in the module docs),
/// unless that start is worse than `w = 0`. A step reuses the last Hessian factor (a chord step,
/// `O(n r)`) when the squared decrement it gives is at most [`NYSTROM_CHORD_RATIO`] times the last
/// step's, or below the stopping test (measured, Adult n = 20,000, 10-candidate path: 45 Hessian
/// builds, 1.58 s → 15 with the neighbour's start and chord steps, 0.63 s; one fit 5 → 4 builds;
/// the products of every solve unchanged); the first step with the factor `h0` when given (the
/// path's neighbour's, rescaled). No kernel product. Returns `(u₀, w*)` and the last Hessian
/// factor (for the first Newton step: [`NYSTROM_PRECOND_MAX_CHANGE`]); `None` when cancelled.
#[allow(clippy::too_many_arguments)]
fn nystrom_start(
    lt: ArrayView2<'_, f64>,
    y: &[f64],
    sw: &[f64],
    c: f64,
    tol: f64,
    w0: &[f64],
    h0: Option<Precond>,
    ticker: &mut Ticker<'_>,
    scratch: &mut PrecondScratch,
) -> Option<(Vec<f64>, Vec<f64>, Option<Precond>)> {
    let (r, n) = lt.dim();
    let sc = c.sqrt();
    let mut w = vec![0.0f64; r];
    let k0 = w0.len().min(r);
    w[..k0].copy_from_slice(&w0[..k0]);
    let mut f = if k0 > 0 { nystrom_latent(lt, y, sc, &w) } else { vec![0.0f64; n] };
    let obj = |f: &[f64], w: &[f64]| -> f64 {
        let loss: f64 = f.iter().zip(sw).map(|(&fi, &si)| si * softplus(-fi)).sum();
        loss + 0.5 * dotv(w, w)
    };
    if r == 0 {
        return Some((f, w, None));
    }
    let mut cur = obj(&f, &w);
    // the first step's Hessian factor when given (for this start: the first step takes it)
    let mut hess: Option<Precond> = h0.filter(|h| h.r == r);
    if k0 > 0 {
        // a start worse than w = 0 (another λ's optimum, scaled) is not taken
        let zero = vec![0.0f64; n];
        let cold = obj(&zero, &vec![0.0f64; r]);
        if cur.is_nan() || cur > cold {
            w.iter_mut().for_each(|v| *v = 0.0);
            f = zero;
            cur = cold;
            hess = None;
        }
    }
    let mut dec_last = f64::INFINITY;
    for _ in 0..MAX_NYSTROM_STEPS {
        // gradient w − Φᵀ a (a = s σ(−f)), Hessian I + Φᵀ W Φ (W = s σ(f) σ(−f))
        let ya: Vec<f64> = f
            .iter()
            .zip(sw)
            .zip(y)
            .map(|((&fi, &si), &yi)| sc * yi * si * sigmoid(-fi))
            .collect();
        let grad: Vec<f64> = (0..r)
            .into_par_iter()
            .map(|m| w[m] - dot8(lt.row(m).to_slice().expect("contiguous"), &ya))
            .collect();
        // a chord step with the last Hessian factor while the last step converged fast (also the
        // stopping test: no O(n r²) build only to find the decrement below tol); else Newton's
        // (step, squared decrement: 2 × the predicted decrease) with the factor `h`
        let solve = |h: &Precond| {
            let mut step = grad.clone();
            h.solve_small(&mut step);
            let dec = dotv(&grad, &step);
            (step, dec)
        };
        let chord = hess
            .as_ref()
            .map(solve)
            .filter(|&(_, d)| d <= 2.0 * tol * n as f64 || d <= NYSTROM_CHORD_RATIO * dec_last);
        let (step, dec) = match chord {
            Some(sd) => sd,
            None => {
                let t: Vec<f64> = f
                    .iter()
                    .zip(sw)
                    .zip(y)
                    .map(|((&fi, &si), &yi)| sc * yi * (si * sigmoid(fi) * sigmoid(-fi)).sqrt())
                    .collect();
                let h = hess.insert(Precond::build(lt, &t, scratch, true));
                solve(h)
            }
        };
        dec_last = dec;
        if dec.is_nan() || dec <= 2.0 * tol * n as f64 {
            break;
        }
        let mut tt = 1.0;
        let mut accepted = false;
        for _ in 0..MAX_HALVINGS {
            let wt: Vec<f64> = w.iter().zip(&step).map(|(a, d)| a - tt * d).collect();
            let ft = nystrom_latent(lt, y, sc, &wt);
            let ot = obj(&ft, &wt);
            if ot <= cur - 0.25 * tt * dec {
                w = wt;
                f = ft;
                cur = ot;
                accepted = true;
                break;
            }
            tt *= 0.5;
        }
        if !ticker.tick(|| progress(0, f64::NAN, n)) {
            return None;
        }
        if !accepted {
            break;
        }
    }
    Some((f, w, hess))
}

/// What the candidates of a regularisation path share (module docs, "Paths"): the kernel products
/// (the Gram matrix, built once) and the pivoted Cholesky factor, run once for the largest `C`;
/// every `λ` takes the row prefix its own run would have stopped at.
pub(crate) struct PathEngine<'x> {
    ops: Ops<'x>,
    piv: Pivots,
}

impl<'x> PathEngine<'x> {
    /// `None` when cancelled.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        x: ArrayView2<'x, f64>,
        kernel: &Kernel,
        y: &[f64],
        sw: &[f64],
        diag: &[f64],
        lams: &[f64],
        cache_bytes: usize,
        ticker: &mut Ticker<'_>,
    ) -> Option<Self> {
        let n = y.len();
        let s_max = sw.iter().cloned().fold(0.0, f64::max);
        let c_max = lams.iter().map(|&l| 1.0 / (l * n as f64)).fold(0.0, f64::max);
        let ops = Ops::new(x, kernel, y, cache_bytes, ticker)?;
        let r_max = pivot_budget(n, cache_bytes);
        let piv = pivoted_cholesky(&ops, diag, r_max, c_max * s_max / 4.0, ticker)?;
        Some(PathEngine { ops, piv })
    }

    pub(crate) fn full_gram(&self) -> bool {
        self.ops.has_gram()
    }

    /// The `f64` Gram matrix (row-major `n × n`) when that is what the path holds.
    pub(crate) fn gram64(&self) -> Option<&[f64]> {
        match &self.ops.gram {
            Gram::F64(g) => Some(g),
            _ => None,
        }
    }

    /// The solves of every `λ` of `opts` (each `opts[k].lam`), each exactly as alone with these
    /// shared parts, prepared (their Nyström warm starts) for [`run`](Self::run). `defer`: see
    /// [`LamSolve`]. `None` when cancelled.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start<'a>(
        &self,
        y: &'a [f64],
        sw: &'a [f64],
        diag: &[f64],
        opts: &[ErmOptions],
        ticker: &mut Ticker<'_>,
        defer: bool,
    ) -> Option<PathSolves<'a>> {
        let mut scratch = PrecondScratch::default(); // one r × n buffer for every preconditioner of the path
        // by increasing C (stable): each Nyström solve starts from the last one's optimum
        let mut order: Vec<usize> = (0..opts.len()).collect();
        order.sort_by(|&i, &j| opts[j].lam.total_cmp(&opts[i].lam));
        let mut states: Vec<Option<LamSolve<'a>>> = (0..opts.len()).map(|_| None).collect();
        let mut last: Option<usize> = None;
        for k in order {
            let prev = last.and_then(|j| states[j].as_ref()).map(|p| (p.c, &p.w[..], p.nystrom_hessian.as_ref()));
            let st = LamSolve::new(&self.ops, &self.piv, y, sw, diag, &opts[k], defer, ticker, &mut scratch, prev);
            if ticker.stopped {
                return None;
            }
            states[k] = Some(st);
            last = Some(k);
        }
        let mut states: Vec<LamSolve<'a>> = states.into_iter().map(|s| s.expect("every λ started")).collect();
        for st in &mut states {
            if let Some(h) = st.nystrom_hessian.as_mut() {
                h.gram = None; // only the next λ's start needed it
            }
        }
        Some(PathSolves { states, scratch })
    }

    /// Runs the unfinished solves **in lock-step** ([`run_lock_step`]): every pass over the kernel
    /// matrix serves every `λ` still iterating. `false` when cancelled.
    pub(crate) fn run(&mut self, solves: &mut PathSolves<'_>, ticker: &mut Ticker<'_>) -> bool {
        run_lock_step(&self.ops, &mut self.piv, &mut solves.states, ticker, &mut solves.scratch)
    }
}

/// The solves of a path ([`PathEngine::start`], [`PathEngine::run`]).
pub(crate) struct PathSolves<'a> {
    states: Vec<LamSolve<'a>>,
    scratch: PrecondScratch,
}

impl PathSolves<'_> {
    /// The dual point solve `k` stopped at (`a` and `b = s − a`, from the logits) and whether it
    /// stopped on an unchecked `f32` estimate (`defer`).
    pub(crate) fn point(&self, k: usize) -> (&[f64], &[f64], bool) {
        let st = &self.states[k];
        (&st.best_a, &st.best_b, st.deferred)
    }

    /// Resumes solve `k`, which stopped on an unchecked `f32` estimate that its certificate did not
    /// confirm, without deferring: next is the exact check a solve without `defer` makes of that
    /// candidate, and on from there exactly as that solve (same iterates, counted on). `false`
    /// (nothing changed) when the solve did not defer or has no product left (`max_iter`).
    pub(crate) fn resume_exact(&mut self, k: usize) -> bool {
        self.states[k].resume_exact()
    }

    /// Per `λ`: the solver output (whether it deferred: [`point`](Self::point)).
    pub(crate) fn finish(self) -> Vec<SolverOut> {
        self.states.into_iter().map(LamSolve::finish).collect()
    }
}

/// Largest number of pivots of the preconditioner for `n` rows and the cache budget (the factor
/// and the preconditioner's scratch: `16 n` bytes per pivot).
fn pivot_budget(n: usize, cache_bytes: usize) -> usize {
    #[cfg(test)]
    if let Some((r0, _)) = tests::PIVOT_CAPS.with(|c| c.get()) {
        return r0.min(n);
    }
    MAX_PIVOTS.min(n).min(pivot_memory_cap(n, cache_bytes))
}

/// Largest number of pivots a warm start may grow to ([`LamSolve`], "Growing the factor"):
/// `n / 10` within `[MAX_PIVOTS, MAX_GROWN_PIVOTS]`, within the cache budget.
fn grown_pivot_budget(n: usize, cache_bytes: usize) -> usize {
    #[cfg(test)]
    if let Some((_, r1)) = tests::PIVOT_CAPS.with(|c| c.get()) {
        return r1.min(n);
    }
    (n / 10).clamp(MAX_PIVOTS, MAX_GROWN_PIVOTS).min(n).min(pivot_memory_cap(n, cache_bytes))
}

fn pivot_memory_cap(n: usize, cache_bytes: usize) -> usize {
    (cache_bytes / (16 * n.max(1))).max(32)
}

/// Drives the solves `states` (one per `λ`) in lock-step: each round collects the product every
/// unfinished solve asks for ([`LamSolve::request`]), computes them in **one** pass over the kernel
/// matrix per kind (with an `f32` Gram, the `f32` products and the exact ones separately; otherwise
/// all together: one product is then the same computation whatever it was asked as), and hands each
/// solve its own column ([`LamSolve::consume`]). Every column of a batched product is computed
/// exactly as alone ([`gram_products`], [`evaluation::kernel_matvecs_cancellable`]: per-vector sums
/// in a fixed order), so each solve's iterates are bit for bit those of its solve alone from the
/// same warm start. The hook is
/// polled between the blocks of each pass and called at every exact check. `false` when cancelled
/// (the states are then left where they stopped).
fn run_lock_step(
    ops: &Ops<'_>,
    piv: &mut Pivots,
    states: &mut [LamSolve<'_>],
    ticker: &mut Ticker<'_>,
    scratch: &mut PrecondScratch,
) -> bool {
    let n = ops.n;
    let narrow = matches!(ops.gram, Gram::F32(_));
    loop {
        if ticker.stopped {
            return false;
        }
        // the solves whose warm start asks for a longer factor: one resumed run serves all of them
        let grow = states.iter().filter_map(|s| s.wants_pivots()).max();
        if let Some(r) = grow {
            #[cfg(test)]
            tests::GROWS.with(|c| c.set(c.get() + 1));
            #[cfg(test)]
            tests::GROWN_TO.with(|c| c.borrow_mut().push(r));
            if piv.extend(ops, r, ticker).is_none() {
                return false;
            }
            for s in states.iter_mut() {
                if s.wants_pivots().is_some() {
                    s.regrow(piv, ticker, scratch, None);
                }
            }
            if ticker.stopped {
                return false;
            }
        }
        // (solve index, wants the exact product) of every unfinished solve
        let wants: Vec<(usize, bool)> = states
            .iter()
            .enumerate()
            .filter_map(|(k, s)| s.request().map(|(_, exact)| (k, exact && narrow)))
            .collect();
        if wants.is_empty() {
            return true;
        }
        // progress: the products made so far and the worst current gap of the active solves
        let iter: u64 = wants.iter().map(|&(k, _)| states[k].iter).sum();
        let gap = wants.iter().map(|&(k, _)| states[k].gap).fold(f64::NAN, f64::max);
        for kind in [false, true] {
            let group: Vec<usize> = wants.iter().filter(|w| w.1 == kind).map(|w| w.0).collect();
            if group.is_empty() {
                continue;
            }
            let vs: Vec<&[f64]> = group.iter().map(|&k| states[k].request().expect("active").0).collect();
            let Some(prods) = ops.products(&vs, kind || !narrow, ticker, &|| progress(iter, gap, n)) else {
                return false;
            };
            for (k, prod) in group.into_iter().zip(prods) {
                states[k].consume(prod, piv, ticker, scratch);
            }
            // the conjugate-gradient steps' preconditioners, one read of the factor for all
            let waiting: Vec<usize> = (0..states.len()).filter(|&k| states[k].pending_apply().is_some()).collect();
            if !waiting.is_empty() {
                let pzs = {
                    let (pres, res): (Vec<&Precond>, Vec<&[f64]>) =
                        waiting.iter().map(|&k| states[k].pending_apply().expect("waiting")).unzip();
                    apply_many(&pres, piv.lt.view(), &res)
                };
                for (k, pz) in waiting.into_iter().zip(pzs) {
                    states[k].finish_apply(pz);
                }
            }
        }
    }
}

/// The conjugate-gradient part of one Newton step (module docs, "Dual point and certificate"):
/// `B z = W^{½} Q̃ g` for the step `δv = g − W^{½} z`, `δu = Q̃ g − Q̃ W^{½} z`.
struct Cg {
    /// `W^{½}`.
    sq: Vec<f64>,
    /// `g = a − v`.
    gvec: Vec<f64>,
    /// `Q̃ g = Q̃ a − u`.
    kg: Vec<f64>,
    pre: Precond,
    eta: f64,
    rhs_norm: f64,
    z: Vec<f64>,
    /// `Q̃ W^{½} z`.
    kz: Vec<f64>,
    res: Vec<f64>,
    p: Vec<f64>,
    rz: f64,
    steps: usize,
    /// The vector whose product the next step needs: `W^{½} p`.
    sp: Vec<f64>,
}

/// Where a [`LamSolve`] is: each phase but `Done` waits for one kernel product.
enum Phase {
    /// The exact check of the warm start's dual candidate `a₀` (`b₀ = s − a₀`).
    Warm { a: Vec<f64>, b: Vec<f64> },
    /// The (with an `f32` Gram: estimated) check of the dual candidate `a = s σ(−u)`.
    Check { a: Vec<f64>, b: Vec<f64> },
    /// The exact check of a candidate whose `f32` estimate met the stopping `target`.
    Confirm { a: Vec<f64>, b: Vec<f64>, target: f64 },
    /// A conjugate-gradient step.
    Cg(Box<Cg>),
    /// A conjugate-gradient step whose residual waits for its preconditioner (applied by the driver
    /// for every such solve at once: [`apply_many`], [`LamSolve::finish_apply`]).
    CgApply(Box<Cg>),
    /// Newton is still far after [`NEWTON_STEPS_GROW`] steps: the warm start is solved again on a factor
    /// grown to `r` pivots (the driver resumes the shared run, [`LamSolve::regrow`]).
    Grow { r: usize },
    Done,
}

/// The Newton–CG iteration of one `λ` (module docs) on prepared kernel products `ops` and pivoted
/// factor `lt`, as a resumable state machine: [`request`](Self::request) names the kernel product
/// it needs next (and whether it must be exact), [`consume`](Self::consume) takes it and runs the
/// iteration up to the next product. Driven alone (a path of one `λ`) or with other `λ` in lock-step
/// ([`PathEngine::solve_all`]); the iterates do not depend on which.
///
/// With `defer` and an `f32` Gram, the solve stops as soon as the `f32` estimate of a candidate's
/// gap meets the stopping target, *without* its exact check: the caller then certifies it exactly
/// (several candidates in one fused pass, [`fit_path_with_hook`](crate::kernel_learning::erm::fit_path_with_hook))
/// and, if the certificate misses `tol`, resumes it from that candidate's exact check
/// ([`PathSolves::resume_exact`]): from there on exactly a solve without `defer`.
struct LamSolve<'a> {
    /// Pivots of the factor in use (a row prefix of the shared one).
    r: usize,
    /// Largest number of pivots the warm start may grow to ([`grown_pivot_budget`]).
    r_cap: usize,
    /// The stopping scale `C · max s / 4` of this `λ`'s own pivoted Cholesky run.
    scale: f64,
    /// The coefficients of the last Nyström optimum (warm start of the next one).
    w: Vec<f64>,
    /// Newton steps since the last warm start.
    newton_steps: usize,
    y: &'a [f64],
    sw: &'a [f64],
    sqrt_diag: Vec<f64>,
    opts: ErmOptions,
    defer: bool,
    /// Products are `f32` estimates unless asked exact.
    narrow: bool,
    n: usize,
    c: f64,
    history: Vec<(u64, f64)>,
    /// Kernel products consumed (`n_iter`).
    iter: u64,
    u: Vec<f64>,
    v: Vec<f64>,
    best_a: Vec<f64>,
    best_b: Vec<f64>,
    /// The best `n`-scaled dual objective seen (forcing term).
    best_dual: f64,
    /// The gap of the last check (NaN before the first).
    gap: f64,
    phase: Phase,
    /// Stopped on an unchecked `f32` estimate (`defer`).
    deferred: bool,
    /// The stopping target of the deferred candidate's check (for [`resume_exact`](Self::resume_exact)).
    deferred_target: f64,
    /// The last Hessian factor of the Nyström warm start, until the first Newton step after it
    /// ([`NYSTROM_PRECOND_MAX_CHANGE`]).
    nystrom_hessian: Option<Precond>,
}

impl<'a> LamSolve<'a> {
    /// Prepares the solve of `opts.lam`: the Nyström warm start (no kernel product; the hook is
    /// polled), its Newton iteration started from `neighbour = (C', w', H')`, the Nyström optimum
    /// of another `λ` of the path and its last Hessian factor (rescaled to this `C`), when given. Cancelled: `Done` at the cold start `a = s/2` (the
    /// caller sees `ticker.stopped`).
    #[allow(clippy::too_many_arguments)]
    fn new(
        ops: &Ops<'_>,
        piv: &Pivots,
        y: &'a [f64],
        sw: &'a [f64],
        diag: &[f64],
        opts: &ErmOptions,
        defer: bool,
        ticker: &mut Ticker<'_>,
        scratch: &mut PrecondScratch,
        neighbour: Option<(f64, &[f64], Option<&Precond>)>,
    ) -> Self {
        let n = y.len();
        let c = 1.0 / (opts.lam * n as f64);
        let u = vec![0.0f64; n];
        let v = vec![0.0f64; n];
        let (best_a, best_b) = half(&u, sw);
        let scale = c * sw.iter().cloned().fold(0.0, f64::max) / 4.0;
        let mut s = LamSolve {
            r: piv.cut(scale),
            r_cap: grown_pivot_budget(n, opts.cache_bytes),
            scale,
            w: Vec::new(),
            newton_steps: 0,
            y,
            sw,
            sqrt_diag: diag.iter().map(|v| v.abs().sqrt()).collect(),
            opts: *opts,
            defer,
            narrow: matches!(ops.gram, Gram::F32(_)),
            n,
            c,
            history: Vec::new(),
            iter: 0,
            u,
            v,
            best_a,
            best_b,
            best_dual: f64::NEG_INFINITY,
            gap: f64::NAN,
            phase: Phase::Done,
            deferred: false,
            deferred_target: f64::NAN,
            nystrom_hessian: None,
        };
        // the Nyström solve starts from the neighbour's optimum w' (at C'), scaled to the same
        // latent values Φw = C^{½} diag(y) L w
        let mut h0 = None;
        if let Some((c0, w0, h)) = neighbour {
            let f = (c0 / c).sqrt();
            s.w = w0.iter().map(|v| v * f).collect();
            // ... and its first step from the neighbour's last Hessian, rescaled to this C (the
            // same latent values, so the same curvature W)
            h0 = h.and_then(|h| h.rescaled(c / c0));
        }
        // warm start: the dual candidate of the Nyström optimum, checked exactly; its product
        // makes the state (u, v) = (Q̃ a₀, a₀) exact
        s.regrow(piv, ticker, scratch, h0);
        s
    }

    /// The Nyström warm start on the first `r` pivots of `piv` (`r` the pivots asked for by
    /// [`Phase::Grow`], else the current ones), within this `λ`'s own run ([`Pivots::cut`]); next:
    /// its exact check; its first step with the factor `h0` when given ([`nystrom_start`]).
    /// Cancelled: `Done`.
    fn regrow(&mut self, piv: &Pivots, ticker: &mut Ticker<'_>, scratch: &mut PrecondScratch, h0: Option<Precond>) {
        let r = match self.phase {
            Phase::Grow { r } => r,
            _ => self.r,
        };
        self.r = r.min(piv.cut(self.scale));
        self.newton_steps = 0;
        self.phase = Phase::Done;
        let lt = piv.lt.slice(s![..self.r, ..]);
        self.nystrom_hessian = None;
        if let Some((f0, w, h)) = nystrom_start(lt, self.y, self.sw, self.c, self.opts.tol, &self.w, h0, ticker, scratch) {
            let (a, b) = half(&f0, self.sw);
            self.w = w;
            self.nystrom_hessian = h;
            self.phase = Phase::Warm { a, b };
        }
    }

    /// The number of pivots this solve waits for ([`Phase::Grow`]).
    fn wants_pivots(&self) -> Option<usize> {
        match self.phase {
            Phase::Grow { r } => Some(r),
            _ => None,
        }
    }

    /// The vector whose product `y ∘ K (y ∘ ·)` the solve needs next, and whether it must be exact
    /// (never from an `f32` Gram); `None` once the solve has finished.
    fn request(&self) -> Option<(&[f64], bool)> {
        match &self.phase {
            Phase::Warm { a, .. } | Phase::Check { a, .. } => Some((a, !self.narrow)),
            Phase::Confirm { a, .. } => Some((a, true)),
            Phase::Cg(cg) => Some((&cg.sp, false)),
            Phase::Grow { .. } | Phase::Done | Phase::CgApply(_) => None,
        }
    }

    /// The preconditioner and residual of a step waiting for [`apply_many`].
    fn pending_apply(&self) -> Option<(&Precond, &[f64])> {
        match &self.phase {
            Phase::CgApply(cg) => Some((&cg.pre, &cg.res)),
            _ => None,
        }
    }

    /// The rest of a conjugate-gradient step from its preconditioned residual `pz`.
    fn finish_apply(&mut self, pz: Vec<f64>) {
        let Phase::CgApply(mut cg) = std::mem::replace(&mut self.phase, Phase::Done) else {
            unreachable!("finish_apply: no step waits")
        };
        let rz_new = dotv(&cg.res, &pz);
        let beta_cg = rz_new / cg.rz;
        cg.rz = rz_new;
        for i in 0..self.n {
            cg.p[i] = pz[i] + beta_cg * cg.p[i];
        }
        self.cg_next(cg);
    }

    /// See [`PathSolves::resume_exact`]: the phase a solve without `defer` enters from the same
    /// check (`Confirm`, when a product is left), so the rest is bit for bit that solve.
    fn resume_exact(&mut self) -> bool {
        if !self.deferred || self.iter >= self.opts.max_iter {
            return false;
        }
        #[cfg(test)]
        tests::RESUMES.with(|c| c.set(c.get() + 1));
        self.defer = false;
        self.deferred = false;
        self.phase = Phase::Confirm { a: self.best_a.clone(), b: self.best_b.clone(), target: self.deferred_target };
        true
    }

    /// The solver output (`a`, `s − a`, iterations, history).
    fn finish(self) -> SolverOut {
        (
            ndarray::Array1::from_vec(self.best_a),
            Some(ndarray::Array1::from_vec(self.best_b)),
            self.iter,
            self.history,
        )
    }

    /// The `n`-scaled dual objective `Σ s H(a/s) − ½ aᵀ Q̃ a` of a dual point with `q = Q̃ a`: the
    /// best one seen bounds the primal suboptimality of the iterate, `Ψ(v) − best` (forcing term).
    fn dual_of(&self, a: &[f64], b: &[f64], q: &[f64]) -> f64 {
        let sw = self.sw;
        let mut acc = 0.0;
        for i in 0..self.n {
            let (ri, qi) = (a[i] / sw[i], b[i] / sw[i]);
            acc -= sw[i] * (xlogx(ri) + xlogx(qi)) + 0.5 * a[i] * q[i];
        }
        acc
    }

    /// The exact duality gap of `a` from `q = Q̃ a`.
    fn gap_of(&self, a: &[f64], b: &[f64], q: &[f64]) -> f64 {
        let sw = self.sw;
        let mut acc = 0.0;
        for i in 0..self.n {
            let (ri, qi) = (a[i] / sw[i], b[i] / sw[i]);
            acc += sw[i] * (ri * q[i] + softplus(-q[i]) + xlogx(ri) + xlogx(qi)).max(0.0);
        }
        acc * (1.0 / self.n as f64)
    }

    /// Takes the product asked for by [`request`](Self::request) and runs the iteration up to the
    /// next product (or the end). The hook is called at every check, as by a single fit.
    fn consume(&mut self, prod: Vec<f64>, piv: &Pivots, ticker: &mut Ticker<'_>, scratch: &mut PrecondScratch) {
        let c = self.c;
        let n = self.n;
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Done | Phase::Grow { .. } | Phase::CgApply(_) => {
                unreachable!("a finished or waiting solve asks for no product")
            }
            Phase::Warm { a: a0, b: b0 } => {
                self.iter += 1;
                let ka: Vec<f64> = prod.iter().map(|v| c * v).collect();
                self.gap = self.gap_of(&a0, &b0, &ka);
                self.best_dual = self.best_dual.max(self.dual_of(&a0, &b0, &ka));
                if !self.narrow {
                    self.history.push((self.iter, self.gap));
                }
                // a warm start on a grown factor replaces the iterate only where it is better (Ψ)
                if self.iter == 1 || psi(&ka, &a0, self.sw) < psi(&self.u, &self.v, self.sw) {
                    self.v = a0.clone();
                    self.u = ka;
                }
                self.best_a = a0;
                self.best_b = b0;
                let slack = fp_slack(&self.sqrt_diag, self.sw, self.best_a.iter().map(|v| c * v));
                if !ticker.fire(Progress { iter: self.iter, gap: self.gap, exact: !self.narrow, active: n })
                    || (!self.narrow && self.gap <= stop_target(self.opts.tol, slack))
                    || self.iter >= self.opts.max_iter
                {
                    return;
                }
                self.start_check();
            }
            Phase::Check { a, b } => {
                // (with an f32 Gram the check is first estimated by the f32 product, and made exact
                // by a fused f64 product only when the estimate says stop)
                self.iter += 1;
                let ka: Vec<f64> = prod.iter().map(|v| c * v).collect();
                self.gap = self.gap_of(&a, &b, &ka);
                let slack = fp_slack(&self.sqrt_diag, self.sw, a.iter().map(|v| c * v));
                let target = stop_target(self.opts.tol, slack);
                if self.defer && self.narrow && self.gap <= target {
                    // the caller checks this candidate exactly (its certificate, batched)
                    self.best_a = a;
                    self.best_b = b;
                    self.deferred = true;
                    self.deferred_target = target;
                    return;
                }
                if self.narrow && self.gap <= target && self.iter < self.opts.max_iter {
                    self.phase = Phase::Confirm { a, b, target };
                    return;
                }
                let exact = !self.narrow;
                self.after_check(a, b, ka, exact, target, piv, ticker, scratch);
            }
            Phase::Confirm { a, b, target } => {
                self.iter += 1;
                let ka: Vec<f64> = prod.iter().map(|v| c * v).collect();
                self.gap = self.gap_of(&a, &b, &ka);
                self.after_check(a, b, ka, true, target, piv, ticker, scratch);
            }
            Phase::Cg(mut cg) => {
                self.iter += 1;
                cg.steps += 1;
                let kp: Vec<f64> = prod.iter().map(|v| c * v).collect();
                let ap: Vec<f64> = cg.p.iter().zip(&cg.sq).zip(&kp).map(|((pi, s), k)| pi + s * k).collect();
                let pap = dotv(&cg.p, &ap);
                if pap.is_nan() || pap <= 0.0 {
                    self.newton_step(&cg);
                    return;
                }
                let alpha = cg.rz / pap;
                for i in 0..n {
                    cg.z[i] += alpha * cg.p[i];
                    cg.kz[i] += alpha * kp[i];
                    cg.res[i] -= alpha * ap[i];
                }
                // the preconditioner: applied by the driver, with every other λ's (apply_many)
                self.phase = Phase::CgApply(cg);
            }
        }
    }

    /// Next: the check of the dual candidate `a = s σ(−u)` (its decision values `Q̃ a` also give
    /// the Newton right-hand side).
    fn start_check(&mut self) {
        let (a, b) = half(&self.u, self.sw);
        self.phase = Phase::Check { a, b };
    }

    /// After the check of `a` (`ka = Q̃ a`, exact or an `f32` estimate): record it, stop, or set up
    /// the Newton step.
    #[allow(clippy::too_many_arguments)]
    fn after_check(
        &mut self,
        a: Vec<f64>,
        b: Vec<f64>,
        ka: Vec<f64>,
        exact: bool,
        target: f64,
        piv: &Pivots,
        ticker: &mut Ticker<'_>,
        scratch: &mut PrecondScratch,
    ) {
        let (n, c, sw, y) = (self.n, self.c, self.sw, self.y);
        if exact {
            self.history.push((self.iter, self.gap));
        }
        self.best_dual = self.best_dual.max(self.dual_of(&a, &b, &ka));
        self.best_a = a;
        self.best_b = b;
        if !ticker.fire(Progress { iter: self.iter, gap: self.gap, exact, active: n }) {
            return;
        }
        if (exact && self.gap <= target) || self.iter >= self.opts.max_iter {
            return;
        }
        // Newton still far after NEWTON_STEPS_GROW steps: a warm start on a longer factor
        if self.newton_steps >= NEWTON_STEPS_GROW
            && self.gap > GROW_GAP
            && self.r < self.r_cap
            && piv.can_grow(self.scale, self.r)
        {
            self.phase = Phase::Grow { r: (4 * self.r).min(self.r_cap) };
            return;
        }
        self.newton_steps += 1;
        // Newton step (I + W Q̃) δv = a − v (with u = Q̃ v): δv = g − W^{½} z, B z = W^{½} Q̃ g,
        // g = a − v, Q̃ g = Q̃ a − u; the right-hand side vanishes at the optimum, so the CG
        // tolerance is relative to the current error, as inexact Newton needs
        let (u, v) = (&self.u, &self.v);
        let wdiag: Vec<f64> = u.iter().zip(sw).map(|(&ui, &si)| si * sigmoid(ui) * sigmoid(-ui)).collect();
        let gvec: Vec<f64> = self.best_a.iter().zip(v).map(|(p, q)| p - q).collect();
        let kg: Vec<f64> = ka.iter().zip(u).map(|(p, q)| p - q).collect();
        let sq: Vec<f64> = wdiag.iter().map(|w| w.sqrt()).collect();
        let rhs: Vec<f64> = sq.iter().zip(&kg).map(|(s, k)| s * k).collect();
        let tvec: Vec<f64> = sq.iter().zip(y).map(|(s, yi)| c.sqrt() * s * yi).collect();
        let lt = piv.lt.slice(s![..self.r, ..]);
        // the first step after a warm start: the Nyström solve's last Hessian factor when its
        // scaling is close to the iterate's (NYSTROM_PRECOND_MAX_CHANGE), else a new build
        let close = |p: &Precond| {
            let d: f64 = tvec.iter().zip(&p.t).map(|(a, b)| (a - b) * (a - b)).sum();
            d.sqrt() <= NYSTROM_PRECOND_MAX_CHANGE * dotv(&tvec, &tvec).sqrt()
        };
        let first = self.newton_steps == 1;
        let pre = match self.nystrom_hessian.take() {
            Some(p) if first && p.r == self.r && close(&p) => {
                #[cfg(test)]
                tests::NYSTROM_PRECONDS.with(|c| c.set((c.get().0 + 1, c.get().1)));
                p
            }
            _ => {
                #[cfg(test)]
                if first {
                    tests::NYSTROM_PRECONDS.with(|c| c.set((c.get().0, c.get().1 + 1)));
                }
                Precond::new(lt, &tvec, scratch)
            }
        };
        // forcing term from the smaller of the candidate's gap and the iterate's primal-dual gap
        // Ψ(v)/n − best dual/n: after a good (warm) start the candidate a = s σ(−u) can be much
        // worse than the iterate v, whose Newton step must then be solved accurately (measured:
        // η from the candidate's gap alone wastes 3–4 Newton steps after the Nyström start)
        let pd = ((psi(u, v, sw) - self.best_dual) * (1.0 / n as f64)).max(0.0);
        let eta = (self.gap.min(pd) / std::f64::consts::LN_2).sqrt().clamp(1e-11, 0.5);
        let rhs_norm = dotv(&rhs, &rhs).sqrt();
        let res = rhs;
        let pz = pre.apply(lt, &res);
        let rz = dotv(&res, &pz);
        let cg = Cg {
            sq,
            gvec,
            kg,
            pre,
            eta,
            rhs_norm,
            z: vec![0.0f64; n],
            kz: vec![0.0f64; n],
            res,
            p: pz,
            rz,
            steps: 0,
            sp: Vec::new(),
        };
        self.cg_next(Box::new(cg));
    }

    /// Another conjugate-gradient step (asks for `Q̃ W^{½} p`), or the Newton step when the
    /// residual test, [`MAX_CG`] or `max_iter` (one product kept for the exact check) says stop.
    fn cg_next(&mut self, mut cg: Box<Cg>) {
        let more = cg.steps < MAX_CG
            && !(cg.rhs_norm == 0.0
                || (cg.steps >= MIN_CG && dotv(&cg.res, &cg.res).sqrt() <= cg.eta * cg.rhs_norm))
            && self.iter + 1 < self.opts.max_iter;
        if more {
            cg.sp = cg.sq.iter().zip(&cg.p).map(|(s, pi)| s * pi).collect();
            self.phase = Phase::Cg(cg);
        } else {
            self.newton_step(&cg);
        }
    }

    /// The damped Newton step from the conjugate-gradient solution: `t = 1, ½, …` until `Ψ` does
    /// not increase; then the next check, or the end when no decrease is representable (the last
    /// checked point is reported honestly).
    fn newton_step(&mut self, cg: &Cg) {
        let sw = self.sw;
        let dv: Vec<f64> = cg.gvec.iter().zip(&cg.sq).zip(&cg.z).map(|((gg, s), zz)| gg - s * zz).collect();
        let du: Vec<f64> = cg.kg.iter().zip(&cg.kz).map(|(k, q)| k - q).collect();
        let psi0 = psi(&self.u, &self.v, sw);
        let mut t = 1.0;
        for _ in 0..MAX_HALVINGS {
            let ut: Vec<f64> = self.u.iter().zip(&du).map(|(a, d)| a + t * d).collect();
            let vt: Vec<f64> = self.v.iter().zip(&dv).map(|(a, d)| a + t * d).collect();
            if psi(&ut, &vt, sw) <= psi0 + 1e-13 * psi0.abs().max(1.0) {
                self.u = ut;
                self.v = vt;
                self.start_check();
                return;
            }
            t *= 0.5;
        }
        self.phase = Phase::Done;
    }
}

/// The dual candidate `(a, b) = (s σ(−u), s σ(u))` of latent values `u` (both from the logits, so
/// both are accurate near 0 and `s`).
fn half(u: &[f64], sw: &[f64]) -> (Vec<f64>, Vec<f64>) {
    (
        u.iter().zip(sw).map(|(&ui, &si)| si * sigmoid(-ui)).collect(),
        u.iter().zip(sw).map(|(&ui, &si)| si * sigmoid(ui)).collect(),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::kernel_learning::erm::{fit_weighted_with_hook, Loss};
    use crate::cancel::Cancel;
    use ndarray::{Array1, Array2};

    thread_local! {
        /// Passes over the kernel matrix (calls of `Ops::products`) made by this thread.
        pub(super) static PASSES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        /// `(initial, grown)` pivot budgets replacing [`pivot_budget`] / [`grown_pivot_budget`].
        pub(super) static PIVOT_CAPS: std::cell::Cell<Option<(usize, usize)>> = const { std::cell::Cell::new(None) };
        /// Resumptions of a pivoted Cholesky run ("Growing the factor") made by this thread.
        pub(super) static GROWS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        /// Deferred solves resumed without deferring, by this thread.
        pub(crate) static RESUMES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        /// The pivot counts the factor was grown to, in order.
        pub(crate) static GROWN_TO: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
        /// Candidate blocks of the pivoted Cholesky runs ([`super::ColumnBlock`]).
        pub(super) static BLOCKS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        /// `I + UᵀU` products [`super::scaled_gram`] took in `f64` (its `f32` error bound too large).
        pub(super) static WIDE_GRAMS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        /// First Newton steps that took the Nyström solve's Hessian factor, and that built their own.
        pub(super) static NYSTROM_PRECONDS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
    }

    pub(crate) fn data(n: usize, d: usize, seed: u64) -> (Array2<f64>, Array1<f64>) {
        let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let x = Array2::from_shape_fn((n, d), |_| next());
        let y = Array1::from_iter((0..n).map(|i| {
            let r = x.row(i);
            if r[0] + 0.5 * r[1] + 0.3 * next() > 0.0 { 1.0 } else { -1.0 }
        }));
        (x, y)
    }

    fn fit_s(
        x: &Array2<f64>,
        y: &Array1<f64>,
        s: Option<&Array1<f64>>,
        k: &Kernel,
        o: &ErmOptions,
    ) -> crate::kernel_learning::erm::ErmSolution {
        let mut always = |_: &Progress| true;
        fit_weighted_with_hook(x.view(), y.view(), s.map(|s| s.view()), k, Loss::Logistic, o, &mut always)
            .unwrap()
            .unwrap()
    }

    #[test]
    fn converges_on_every_product_path_weighted_or_not() {
        // f64 Gram, f32 Gram (CG products) + fused exact checks, fused engine only
        let (x, y) = data(500, 4, 3);
        let s = y.mapv(|v| if v > 0.0 { 10.0 } else { 1.0 });
        let k = Kernel::rbf(1.0).unwrap().with_shift(0.25).unwrap();
        let n = 500usize;
        for c in [0.003, 0.06, 1.0] {
            let lam = 1.0 / (c * n as f64);
            for cache in [8 * n * n, 4 * n * n, 8 * n * 40] {
                for w in [None, Some(&s)] {
                    let o = ErmOptions { lam, tol: 1e-8, max_iter: 100_000, cache_bytes: cache, shrinking: true };
                    let sol = fit_s(&x, &y, w, &k, &o);
                    assert!(sol.converged, "C {c} cache {cache} w {}: {:?}", w.is_some(), sol.history);
                    assert_eq!(sol.full_gram, cache >= 4 * n * n);
                    // a handful of Newton steps, not thousands of sweeps
                    assert!(sol.n_iter < 400, "C {c}: {} products", sol.n_iter);
                    let sw = w.cloned().unwrap_or_else(|| Array1::from_elem(n, 1.0));
                    for i in 0..n {
                        let u = y[i] * sol.cert.decision[i];
                        assert!(sol.a[i] > 0.0 && sol.a[i] < sw[i]);
                        assert!((sol.a[i] - sw[i] * sigmoid(-u)).abs() <= 1e-4 * sw[i]);
                    }
                }
            }
        }
    }

    #[test]
    fn certificate_bounds_the_distance_to_a_brute_force_optimum() {
        // tiny problem solved independently: plain gradient descent on the primal in β (f = K β),
        // run to machine precision; the certified gap must bound ‖w − w*‖ ≤ sqrt(2 gap / λ)
        let (x, y) = data(30, 2, 9);
        let n = 30;
        let s = Array1::from_iter((0..n).map(|i| if i % 3 == 0 { 2.5 } else { 1.0 }));
        let k = Kernel::rbf(2.0).unwrap().with_shift(0.25).unwrap();
        let lam = 0.05;
        let g = evaluation::gram_matrix(x.view(), &k).unwrap();
        // functional gradient descent w ← w − η ∇P(w) in β (w = Σ β_i φ(x_i)): ∇P = Σ_i inner_i φ(x_i),
        // P is λ-strongly convex and (λ + max s · λmax(K) / (4 n))-smooth, λmax(K) ≤ trace
        let mut beta = Array1::<f64>::zeros(n);
        let smooth = lam + 2.5 * g.diag().sum() / (4.0 * n as f64);
        for _ in 0..20_000 {
            let f = g.dot(&beta);
            let inner = Array1::from_iter((0..n).map(|i| {
                -y[i] * s[i] * sigmoid(-y[i] * f[i]) / n as f64 + lam * beta[i]
            }));
            beta = &beta - &(inner / smooth);
        }
        let f_star = g.dot(&beta);
        let o = ErmOptions { lam, tol: 1e-10, max_iter: 10_000, cache_bytes: 1 << 20, shrinking: true };
        let sol = fit_s(&x, &y, Some(&s), &k, &o);
        assert!(sol.converged, "{:?}", sol.history);
        let bound = (2.0 * sol.cert.gap / lam).sqrt();
        // |f(x_i) − f*(x_i)| ≤ ‖w − w*‖ sqrt(K'_ii)
        let kmax = 1.25f64.sqrt();
        for i in 0..n {
            assert!((sol.cert.decision[i] - f_star[i]).abs() <= bound * kmax + 1e-7, "{i}");
        }
        // and the certificate of a perturbed dual point bounds its own suboptimality
        let a2 = Array1::from_iter(sol.a.iter().zip(&s).map(|(&a, &w)| 0.8 * a + 0.1 * w));
        let c2 = crate::kernel_learning::erm::certify_weighted_cancellable(
            x.view(), y.view(), Some(s.view()), a2.view(), None, &k, Loss::Logistic, lam, Cancel::never(),
        )
        .unwrap();
        assert!(c2.primal - sol.cert.primal <= c2.gap + sol.cert.gap && c2.gap > 100.0 * sol.cert.gap);
    }

    #[test]
    fn unit_weights_are_the_unweighted_problem_and_deterministic() {
        let (x, y) = data(300, 3, 5);
        let ones = Array1::from_elem(300, 1.0);
        let k = Kernel::rbf(1.5).unwrap();
        for cache in [1 << 30, 300 * 8 * 10] {
            let o = ErmOptions { lam: 1e-3, tol: 1e-9, max_iter: 10_000, cache_bytes: cache, shrinking: true };
            let a = fit_s(&x, &y, None, &k, &o);
            let b = fit_s(&x, &y, Some(&ones), &k, &o);
            let c = fit_s(&x, &y, None, &k, &o);
            assert!(a.converged);
            assert_eq!(a.a, b.a);
            assert_eq!(a.a, c.a);
            assert_eq!(a.cert.gap.to_bits(), b.cert.gap.to_bits());
            assert_eq!(a.n_iter, b.n_iter);
        }
    }

    #[test]
    fn the_first_product_checks_the_nystrom_optimum_not_the_zero_start() {
        // one product (max_iter = 1) is the exact check of the warm start: the optimum of the
        // Nyström model (no kernel product), far better than the cold start a = s / 2
        let (x, y) = data(600, 3, 11);
        let n = 600usize;
        let s = y.mapv(|v| if v > 0.0 { 10.0 } else { 1.0 });
        let k = Kernel::rbf(1.0).unwrap().with_shift(0.25).unwrap();
        for c in [0.1, 1.0] {
            for w in [None, Some(&s)] {
                let lam = 1.0 / (c * n as f64);
                let o = ErmOptions { lam, tol: 1e-8, max_iter: 1, cache_bytes: 8 * n * 40, shrinking: true };
                let sol = fit_s(&x, &y, w, &k, &o);
                assert_eq!(sol.n_iter, 1);
                let sw = w.cloned().unwrap_or_else(|| Array1::from_elem(n, 1.0));
                let half = sw.mapv(|v| 0.5 * v);
                let cold = crate::kernel_learning::erm::certify_weighted_cancellable(
                    x.view(), y.view(), w.map(|s| s.view()), half.view(), None, &k, Loss::Logistic, lam,
                    Cancel::never(),
                )
                .unwrap();
                assert!(sol.cert.gap < 0.01 * cold.gap, "C {c}: warm {} cold {}", sol.cert.gap, cold.gap);
            }
        }
    }

    #[test]
    fn an_f32_gram_is_checked_exactly_only_to_stop() {
        // with the f32 Gram the Newton steps run on f32 products; a fused f64 (exact) check is
        // made only when the f32 estimate says stop: one exact check in the history, and the
        // certified result is as good as the all-f64 solve
        let (x, y) = data(500, 4, 12);
        let n = 500usize;
        let s = y.mapv(|v| if v > 0.0 { 10.0 } else { 1.0 });
        let k = Kernel::rbf(1.0).unwrap().with_shift(0.25).unwrap();
        for c in [0.01, 1.0] {
            let lam = 1.0 / (c * n as f64);
            let o = ErmOptions { lam, tol: 1e-8, max_iter: 100_000, cache_bytes: 4 * n * n, shrinking: true };
            let narrow = fit_s(&x, &y, Some(&s), &k, &o);
            let wide = fit_s(&x, &y, Some(&s), &k, &ErmOptions { cache_bytes: 8 * n * n, ..o });
            assert!(narrow.converged && wide.converged);
            assert!(narrow.history.len() <= 3, "C {c}: {:?}", narrow.history);
            for i in 0..n {
                assert!((narrow.cert.decision[i] - wide.cert.decision[i]).abs() <= 1e-3);
            }
        }
    }

    /// `sol` and `alone` are certified solutions of the same problem (`λ`-strongly convex primal):
    /// each within `(2 gap/λ)^{½}` of the optimum in the RKHS norm, so their decision values
    /// differ by at most the sum times `K'(x_i, x_i)^{½}` (plus the certificates' float slack).
    fn assert_within_certified_distance(
        sol: &crate::kernel_learning::erm::ErmSolution,
        alone: &crate::kernel_learning::erm::ErmSolution,
        lam: f64,
        diag: &[f64],
    ) {
        let radius = (2.0 * sol.cert.gap.max(0.0) / lam).sqrt() + (2.0 * alone.cert.gap.max(0.0) / lam).sqrt();
        for (i, &d) in diag.iter().enumerate() {
            let diff = (sol.cert.decision[i] - alone.cert.decision[i]).abs();
            let bound = radius * d.abs().sqrt() + 1e-10 * (1.0 + alone.cert.decision[i].abs());
            assert!(diff <= bound, "row {i}: {diff} > {bound}");
        }
    }

    #[test]
    fn a_path_gives_each_lambda_a_certified_point_of_its_own_problem() {
        // one call for several λ (f32 Gram, f64 Gram, fused products; weighted or not): every λ
        // converges to its own tol; the smallest C (whose Nyström solve starts cold, as a single
        // fit's) with the same dual point as its single fit (bit for bit where the single fit stops
        // at its first exact check, which is the case here) and a certificate equal to the single
        // fit's up to the engine's rounding; the others (Nyström solves started from the next
        // smaller C's optimum) within the certified distance of their single fit
        use crate::kernel_learning::erm::fit_path_with_hook;
        let (x, y) = data(600, 4, 21);
        let n = 600usize;
        let s = y.mapv(|v| if v > 0.0 { 4.0 } else { 1.0 });
        let k = Kernel::rbf(1.0).unwrap().with_shift(0.25).unwrap();
        let diag = evaluation::kernel_diag(x.view(), &k).to_vec();
        let cs = [0.3, 0.003, 0.03, 3.0];
        let lams: Vec<f64> = cs.iter().map(|c| 1.0 / (c * n as f64)).collect();
        let tols: Vec<f64> = lams.iter().map(|l| 1e-10 / l).collect();
        let (mut same, mut near) = (0, 0);
        for cache in [4 * n * n, 8 * n * n, 8 * n * 40] {
            for w in [None, Some(&s)] {
                let mut always = |_: &Progress| true;
                let path = fit_path_with_hook(
                    x.view(), y.view(), w.map(|s| s.view()), &k, &lams, &tols, 100_000, cache, &mut always,
                )
                .unwrap()
                .unwrap();
                assert_eq!(path.len(), lams.len());
                for (j, sol) in path.iter().enumerate() {
                    let o = ErmOptions { lam: lams[j], tol: tols[j], max_iter: 100_000, cache_bytes: cache, shrinking: true };
                    let alone = fit_s(&x, &y, w, &k, &o);
                    assert!(sol.converged && alone.converged, "C {} cache {cache}", cs[j]);
                    assert!(sol.cert.gap <= tols[j]);
                    assert_eq!(sol.full_gram, alone.full_gram);
                    if cs[j] == 0.003 {
                        same += 1;
                        assert_eq!(sol.a, alone.a, "C {} cache {cache} w {}", cs[j], w.is_some());
                        assert_eq!(sol.cert.mu, alone.cert.mu);
                        let rel = (sol.cert.gap - alone.cert.gap).abs() / alone.cert.gap;
                        assert!(rel < 1e-3, "C {}: {} vs {}", cs[j], sol.cert.gap, alone.cert.gap);
                        for i in 0..n {
                            let d = (sol.cert.decision[i] - alone.cert.decision[i]).abs();
                            assert!(d <= 1e-11 * (1.0 + alone.cert.decision[i].abs()), "{i}: {d}");
                        }
                        // the exact check a single fit makes is saved (batched into the certificates)
                        assert!(sol.n_iter <= alone.n_iter);
                    } else {
                        near += 1;
                        assert_within_certified_distance(sol, &alone, lams[j], &diag);
                    }
                }
            }
        }
        assert_eq!((same, near), (6, 18));
    }

    #[test]
    fn a_nystrom_solve_from_the_neighbours_optimum_or_with_chord_steps_reaches_the_same_optimum() {
        // the path's warm start (another C's optimum, scaled) and the chord steps change the
        // Nyström solve's iterates, not its optimum (to the solve's tolerance)
        let (x, y) = data(500, 4, 23);
        let n = 500usize;
        let k = Kernel::rbf(1.0).unwrap().with_shift(0.25).unwrap();
        let diag = evaluation::kernel_diag(x.view(), &k).to_vec();
        let yv = y.to_vec();
        let sw = vec![1.0; n];
        let mut always = |_: &Progress| true;
        let mut t = Ticker::new(&mut always);
        let ops = Ops::new(x.view(), &k, &yv, 8 * n * n, &mut t).unwrap();
        let piv = pivoted_cholesky(&ops, &diag, 60, 10.0 * 1.0 / 4.0, &mut t).unwrap();
        let lt = piv.lt.view();
        let mut scratch = PrecondScratch::default();
        let (c0, c1, tol) = (1.0, 10.0, 1e-12);
        let (_, w0, h0) = nystrom_start(lt, &yv, &sw, c0, tol, &[], None, &mut t, &mut scratch).unwrap();
        let (f_cold, w_cold, _) = nystrom_start(lt, &yv, &sw, c1, tol, &[], None, &mut t, &mut scratch).unwrap();
        let scaled: Vec<f64> = w0.iter().map(|v| v * (c0 / c1).sqrt()).collect();
        let (f_warm, w_warm, _) = nystrom_start(lt, &yv, &sw, c1, tol, &scaled, None, &mut t, &mut scratch).unwrap();
        // both optima of the same strongly convex problem, to a squared decrement of 2 n tol
        for (a, b) in w_cold.iter().zip(&w_warm) {
            assert!((a - b).abs() <= 1e-5, "{a} vs {b}");
        }
        for (a, b) in f_cold.iter().zip(&f_warm) {
            assert!((a - b).abs() <= 1e-4 * (1.0 + a.abs()), "{a} vs {b}");
        }
        // the same from the neighbour's last Hessian rescaled to C (the path's first step)
        let h = h0.expect("a Hessian was built").rescaled(c1 / c0).expect("its Gram is kept");
        let (f_h, _, _) = nystrom_start(lt, &yv, &sw, c1, tol, &scaled, Some(h), &mut t, &mut scratch).unwrap();
        for (a, b) in f_cold.iter().zip(&f_h) {
            assert!((a - b).abs() <= 1e-4 * (1.0 + a.abs()), "{a} vs {b}");
        }
        // a start worse than w = 0 is not taken: the cold solve's result, bit for bit
        let bad: Vec<f64> = w_cold.iter().map(|v| -50.0 * v).collect();
        let (f_bad, _, _) = nystrom_start(lt, &yv, &sw, c1, tol, &bad, None, &mut t, &mut scratch).unwrap();
        assert_eq!(f_bad, f_cold);
    }

    #[test]
    fn blocked_pivot_columns_are_the_column_by_column_run_bit_for_bit() {
        // the greedy run with cholesky_column, one kernel row at a time (the reference)
        fn reference(g: &[f64], n: usize, diag: &[f64], r_max: usize) -> (Array2<f64>, Vec<f64>) {
            let mut d: Vec<f64> = diag.iter().map(|v| v.max(0.0)).collect();
            let dmax0 = d.iter().cloned().fold(0.0, f64::max);
            let mut lt = Array2::<f64>::zeros((r_max, n));
            let mut r = 0;
            while r < r_max {
                let (j, dj, _) = next_pivot(&d);
                if dj <= 1e-12 * dmax0 {
                    break;
                }
                cholesky_column(&mut lt, r, &g[j * n..(j + 1) * n], j, dj, &mut d);
                r += 1;
            }
            (lt.slice(s![..r, ..]).to_owned(), d)
        }
        let n = 700;
        let mut always = |_: &Progress| true;
        let mut t = Ticker::new(&mut always);
        for (seed, k) in [
            (3u64, Kernel::rbf(0.5).unwrap()),
            (4, Kernel::poly(1.0, 3, 1.0).unwrap().with_shift(0.25).unwrap()),
            (5, Kernel::rbf(20.0).unwrap()),
        ] {
            let (x, y) = data(n, 5, seed);
            let diag = evaluation::kernel_diag(x.view(), &k).to_vec();
            for cache in [8 * n * n, 4 * n * n] {
                let ops = Ops::new(x.view(), &k, &y.to_vec(), cache, &mut t).unwrap();
                let g: Vec<f64> = match &ops.gram {
                    Gram::F64(g) => g.clone(),
                    Gram::F32(g) => g.iter().map(|&v| v as f64).collect(),
                    Gram::None => unreachable!("it fits"),
                };
                BLOCKS.with(|c| c.set(0));
                let piv = pivoted_cholesky(&ops, &diag, 300, 1e12, &mut t).unwrap();
                let blocks = BLOCKS.with(|c| c.get());
                let (lt, d) = reference(&g, n, &diag, 300);
                assert_eq!(piv.lt.nrows(), lt.nrows(), "{k:?}");
                assert!(piv.lt.iter().zip(lt.iter()).all(|(a, b)| a.to_bits() == b.to_bits()), "{k:?} {cache}");
                assert!(piv.d.iter().zip(&d).all(|(a, b)| a.to_bits() == b.to_bits()));
                // blocks served several pivots, and pivots outside a block started new ones
                let r = piv.lt.nrows() as u64;
                assert!(blocks > 1 && blocks < r, "{k:?}: {blocks} blocks for {r} pivots");
            }
        }
    }

    #[test]
    fn the_first_newton_step_takes_the_nystrom_hessian_only_where_the_curvature_is_close() {
        // rbf at a small C (the Nyström model is accurate: the curvature at its optimum is the
        // iterate's, to a few %) takes it; poly-3 at a large C with 8 pivots (a poor model) builds
        // its own; both converge to tol
        let (x, y) = data(500, 4, 31);
        let n = 500usize;
        let cache = 8 * n * n;
        for (k, c, caps, taken) in [
            (Kernel::rbf(1.0).unwrap().with_shift(0.25).unwrap(), 0.1, None, true),
            (Kernel::poly(1.0, 3, 1.0).unwrap(), 100.0, Some((8, 8)), false),
        ] {
            PIVOT_CAPS.with(|p| p.set(caps));
            NYSTROM_PRECONDS.with(|p| p.set((0, 0)));
            let o = ErmOptions { lam: 1.0 / (c * n as f64), tol: 1e-8, max_iter: 100_000, cache_bytes: cache, shrinking: true };
            let sol = fit_s(&x, &y, None, &k, &o);
            PIVOT_CAPS.with(|p| p.set(None));
            assert!(sol.converged && sol.cert.gap <= 1e-8, "{k:?}: {} after {}", sol.cert.gap, sol.n_iter);
            let (took, built) = NYSTROM_PRECONDS.with(|p| p.get());
            assert_eq!((took > 0, built > 0), (taken, !taken), "{k:?}: took {took}, built {built}");
        }
    }

    #[test]
    fn a_slow_newton_grows_the_factor_in_a_path_too() {
        // small budgets stand in for n = 10,000 (400 pivots, then up to 1,000): a poly-3 kernel at
        // a large C, whose Nyström model with 8 pivots misses much of the kernel (measured: 4,912
        // products with 8 pivots, 86 growing to 64, 6 with 64 from the start)
        let (x, y) = data(400, 4, 11);
        let n = 400usize;
        let k = Kernel::poly(1.0, 3, 1.0).unwrap();
        let diag = evaluation::kernel_diag(x.view(), &k).to_vec();
        let cs = [100.0, 10.0];
        let lams: Vec<f64> = cs.iter().map(|c| 1.0 / (c * n as f64)).collect();
        let cache = 8 * n * n;
        let fit = |caps: Option<(usize, usize)>, lam: f64| {
            PIVOT_CAPS.with(|c| c.set(caps));
            GROWS.with(|c| c.set(0));
            let o = ErmOptions { lam, tol: 1e-8, max_iter: 100_000, cache_bytes: cache, shrinking: true };
            let sol = fit_s(&x, &y, None, &k, &o);
            (sol, GROWS.with(|c| c.get()))
        };
        let (fixed, g0) = fit(Some((8, 8)), lams[0]);
        GROWN_TO.with(|c| c.borrow_mut().clear());
        let (grown, g1) = fit(Some((8, 64)), lams[0]);
        assert_eq!(g0, 0);
        assert!(g1 >= 1, "the factor never grew");
        // four times the pivots per growth round, within the cap
        assert_eq!(GROWN_TO.with(|c| c.borrow().clone())[0], 32);
        assert!(fixed.converged && grown.converged);
        assert!(3 * grown.n_iter < fixed.n_iter, "{} vs {} products", grown.n_iter, fixed.n_iter);
        // the path (one shared run resumed for the longest request): the smaller C is its single
        // fit bit for bit, the larger one (its Nyström solves started from the smaller C's
        // optimum) a point certified to the same tol, and it still grows the factor
        let singles: Vec<_> = lams.iter().map(|&l| fit(Some((8, 64)), l).0).collect();
        PIVOT_CAPS.with(|c| c.set(Some((8, 64))));
        GROWS.with(|c| c.set(0));
        let mut always = |_: &Progress| true;
        let path = crate::kernel_learning::erm::fit_path_with_hook(
            x.view(), y.view(), None, &k, &lams, &[1e-8, 1e-8], 100_000, cache, &mut always,
        )
            .unwrap()
            .unwrap();
        PIVOT_CAPS.with(|c| c.set(None));
        assert!(GROWS.with(|c| c.get()) >= 1, "the path never grew the factor");
        assert_eq!(path[1].a, singles[1].a);
        assert_eq!(path[1].n_iter, singles[1].n_iter);
        assert!(path[0].converged && path[0].cert.gap <= 1e-8);
        assert!(path[0].n_iter < fixed.n_iter / 3, "{} products", path[0].n_iter);
        assert_within_certified_distance(&path[0], &singles[0], lams[0], &diag);
    }

    #[test]
    fn a_single_fit_with_an_f32_gram_is_the_solve_without_deferral_less_one_check() {
        // a single fit defers its f32-confirmed candidate to the certificate's pass; where that
        // misses tol it resumes from the candidate's exact check: either way the dual point is
        // bit for bit the one of a solve that never defers (one product fewer when accepted)
        let (x, y) = data(300, 5, 21);
        let n = 300usize;
        let k = Kernel::rbf(1.0).unwrap().with_shift(0.25).unwrap();
        let diag = evaluation::kernel_diag(x.view(), &k).to_vec();
        let yv = y.to_vec();
        let sw = vec![1.0; n];
        let cache = 4 * n * n; // the f32 Gram
        let (mut accepted, mut resumed) = (0, 0);
        for c in [0.1, 1.0, 10.0] {
            for tol in [1e-6, 1e-9, 1e-11, 1e-12, 3e-13] {
                let lam = 1.0 / (c * n as f64);
                let o = ErmOptions { lam, tol, max_iter: 100_000, cache_bytes: cache, shrinking: true };
                RESUMES.with(|r| r.set(0));
                let sol = fit_s(&x, &y, None, &k, &o);
                let did_resume = RESUMES.with(|r| r.get()) > 0;
                let mut always = |_: &Progress| true;
                let mut t = Ticker::new(&mut always);
                let mut engine = PathEngine::new(x.view(), &k, &yv, &sw, &diag, &[lam], cache, &mut t).unwrap();
                assert!(engine.full_gram() && engine.gram64().is_none());
                let mut solves = engine.start(&yv, &sw, &diag, &[o], &mut t, false).unwrap();
                assert!(engine.run(&mut solves, &mut t));
                assert!(!solves.point(0).2);
                let (a, _, it, _) = solves.finish().pop().unwrap();
                assert_eq!(sol.a, a, "C {c} tol {tol}");
                if did_resume {
                    resumed += 1;
                    assert_eq!(sol.n_iter, it, "C {c} tol {tol}");
                } else {
                    accepted += 1;
                    assert!(sol.n_iter + 1 == it || sol.n_iter == it, "C {c} tol {tol}: {} vs {it}", sol.n_iter);
                }
            }
        }
        assert!(accepted > 0 && resumed > 0, "accepted {accepted}, resumed {resumed}");
    }

    #[test]
    fn each_column_of_a_batched_gram_product_is_the_single_dot_bit_for_bit() {
        // lock-step needs every column of a batched product computed exactly as alone; sizes with
        // a ragged row chunk, a ragged column block and a tail beyond the 8 lanes
        for n in [5usize, 77, 2 * GRAM_COLS + 13] {
            let (x, _) = data(n, 3, 40 + n as u64);
            let k = Kernel::rbf(1.0).unwrap();
            let g64: Vec<f64> = evaluation::gram_matrix(x.view(), &k).unwrap().iter().cloned().collect();
            let g32: Vec<f32> = g64.iter().map(|&v| v as f32).collect();
            let vs: Vec<Vec<f64>> = (0..5).map(|s| data(n, 2, 7 + s).0.column(0).to_vec()).collect();
            let refs: Vec<&[f64]> = vs.iter().map(|v| &v[..]).collect();
            let wide = gram_products(&g64, n, &refs);
            let narrow = gram_products(&g32, n, &refs);
            for (kk, v) in vs.iter().enumerate() {
                let one = gram_products(&g64, n, &[&v[..]]);
                assert_eq!(one[0], wide[kk]);
                for i in 0..n {
                    assert_eq!(wide[kk][i].to_bits(), dot8(&g64[i * n..(i + 1) * n], v).to_bits(), "n {n} i {i}");
                    assert_eq!(narrow[kk][i].to_bits(), dot8(&g32[i * n..(i + 1) * n], v).to_bits(), "n {n} i {i}");
                }
            }
        }
    }

    #[test]
    fn the_lower_blocks_of_the_preconditioner_gram_are_the_full_gemm_bit_for_bit() {
        // M = I + A Aᵀ computed by blocks on and below the diagonal: its lower triangle is bit for
        // bit that of the full column-block GEMMs (the form it replaced), ragged sizes included
        for (r, n) in [(1usize, 7usize), (3, 50), (37, 301), (400, 2003)] {
            let (x, _) = data(n, r.max(2), 90 + r as u64);
            let a = x.t().slice(s![..r, ..]).to_owned();
            let bw = n.div_ceil(GRAM_BLOCKS).max(1);
            let mut full = Array2::<f64>::eye(r);
            for b in 0..GRAM_BLOCKS {
                let (c0, c1) = ((b * bw).min(n), ((b + 1) * bw).min(n));
                let blk = a.slice(s![.., c0..c1]);
                let mut m = Array2::<f64>::zeros((r, r));
                general_mat_mul(1.0, &blk, &blk.t(), 0.0, &mut m);
                full += &m;
            }
            let low = lower_gram(a.view());
            for i in 0..r {
                for j in 0..=i {
                    assert_eq!(low[[i, j]].to_bits(), full[[i, j]].to_bits(), "r {r} n {n} ({i}, {j})");
                }
            }
        }
    }

    #[test]
    fn the_symmetric_f32_product_is_the_row_product_to_rounding_and_batch_and_thread_invariant() {
        // lower-triangle tiles used twice: the same products as the row-by-row dot8 up to the
        // summation order; each batched column is its vector alone, and 1, 2 or 3 threads give
        // the same bits (ragged tiles, n below, at and past SYM_GRAM_TILE, a 4-row remainder)
        for n in [1usize, 5, 512, 513, 1203] {
            let (x, _) = data(n, 4, 31 + n as u64);
            let k = Kernel::rbf(0.7).unwrap();
            let gm = evaluation::kernel_matrix(x.view(), x.view(), &k).unwrap();
            let g32: Vec<f32> = gm.iter().map(|&v| v as f32).collect();
            let vs: Vec<Vec<f64>> = (0..3).map(|s| (0..n).map(|j| ((j * 37 + s * 11) % 29) as f64 / 7.0 - 2.0).collect()).collect();
            let refs: Vec<&[f64]> = vs.iter().map(|v| &v[..]).collect();
            let rows = gram_products(&g32, n, &refs);
            let run = |t: usize, r: &[&[f64]]| {
                rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap().install(|| gram_products_sym(&g32, n, r))
            };
            let sym = run(1, &refs);
            for (kk, v) in vs.iter().enumerate() {
                for i in 0..n {
                    let abs: f64 = (0..n).map(|j| (g32[i * n + j] as f64 * v[j]).abs()).sum();
                    assert!((sym[kk][i] - rows[kk][i]).abs() <= 1e-13 * abs, "n {n} row {i}");
                }
                assert_eq!(run(2, &refs[kk..kk + 1])[0], sym[kk], "n {n}: vector {kk} alone");
            }
            for t in [2, 3] {
                assert_eq!(run(t, &refs), sym, "n {n}: {t} threads");
            }
        }
    }

    #[test]
    fn batched_preconditioner_applications_are_each_apply_bit_for_bit() {
        // preconditioners of different prefixes r (0 included) and scalings t of one factor, applied
        // together with apply_many: each output is its preconditioner's alone, bit for bit (ragged
        // 2048-chunks)
        let n = 2 * 2048 + 301;
        let (x, _) = data(n, 40, 5);
        let lt = x.t().as_standard_layout().into_owned();
        let mut scratch = PrecondScratch::default();
        let pres: Vec<Precond> = [40usize, 0, 17, 40, 1]
            .iter()
            .enumerate()
            .map(|(k, &r)| {
                let t: Vec<f64> = (0..n).map(|i| 0.1 + ((i * (k + 3)) % 13) as f64 / 20.0).collect();
                Precond::new(lt.slice(s![..r, ..]), &t, &mut scratch)
            })
            .collect();
        let vs: Vec<Vec<f64>> = (0..pres.len()).map(|k| (0..n).map(|i| ((i * 7 + k) % 23) as f64 - 11.0).collect()).collect();
        let refs: Vec<&Precond> = pres.iter().collect();
        let vr: Vec<&[f64]> = vs.iter().map(|v| &v[..]).collect();
        let many = apply_many(&refs, lt.view(), &vr);
        for (k, (p, v)) in pres.iter().zip(&vs).enumerate() {
            let one = p.apply(lt.view(), v); // alone: a batch of one
            assert!(one.iter().zip(&many[k]).all(|(a, b)| a.to_bits() == b.to_bits()), "preconditioner {k}");
        }
    }

    #[test]
    fn the_blocked_cholesky_is_the_column_cholesky_to_rounding() {
        // I + A Aᵀ (only its lower triangle given): the blocked factor agrees with the plain
        // column-by-column one and reproduces the matrix, across block edges; deterministic
        for r in [1usize, 5, CHOL_BLOCK, CHOL_BLOCK + 1, 3 * CHOL_BLOCK + 7, CHOL_ROWS + 2 * CHOL_BLOCK + 3] {
            let (x, _) = data(2 * r + 3, r.max(2), 11 + r as u64);
            let a = x.t().slice(s![..r, ..]).to_owned();
            let mut m = lower_gram(a.view());
            for i in 0..r {
                for j in i + 1..r {
                    m[[i, j]] = f64::NAN; // never read
                }
            }
            let got = blocked_cholesky(&m);
            let mut want = vec![0.0; r * r];
            for i in 0..r {
                for j in 0..=i {
                    let sum = m[[i, j]] - (0..j).map(|k| want[i * r + k] * want[j * r + k]).sum::<f64>();
                    want[i * r + j] = if i == j { sum.max(1.0).sqrt() } else { sum / want[j * r + j] };
                }
            }
            let scale = (0..r).map(|i| m[[i, i]]).fold(1.0f64, f64::max);
            for i in 0..r {
                for j in 0..r {
                    if j > i {
                        assert_eq!(got[i * r + j], 0.0, "r {r}: upper ({i}, {j})");
                        continue;
                    }
                    assert!((got[i * r + j] - want[i * r + j]).abs() <= 1e-12 * scale.sqrt(), "r {r} ({i}, {j})");
                    let llt: f64 = (0..=j).map(|k| got[i * r + k] * got[j * r + k]).sum();
                    assert!((llt - m[[i, j]]).abs() <= 1e-12 * scale, "r {r}: L Lᵀ at ({i}, {j})");
                }
            }
            let two = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap().install(|| blocked_cholesky(&m));
            assert!(got.iter().zip(&two).all(|(p, q)| p.to_bits() == q.to_bits()), "r {r}: thread count");
        }
    }

    #[test]
    fn the_f32_preconditioner_gram_is_within_its_bound_and_falls_back_to_f64() {
        // I + UᵀU (Uᵀ = lt · diag(t)) from the f32 GEMMs: within f32_blocked_gram_rel_error of the
        // exact product of |U|; with ‖U‖_F² too large for F32_GRAM_MAX_ERROR, the f64 GEMMs (bit
        // for bit lower_gram) take over
        for (r, n) in [(1usize, 7usize), (37, 301), (150, 2 * F32_GRAM_COLS + 77)] {
            let (x, _) = data(n, r.max(2), 70 + r as u64);
            let lt = x.t().slice(s![..r, ..]).to_owned();
            let t: Vec<f64> = (0..n).map(|i| 0.2 + ((i * 7) % 11) as f64 / 40.0).collect();
            let ut = Array2::from_shape_fn((r, n), |(m, i)| lt[[m, i]] * t[i]);
            let mut scratch = PrecondScratch::default();
            let wide0 = WIDE_GRAMS.with(|c| c.get());
            let m = scaled_gram(lt.view(), &t, &mut scratch);
            assert_eq!(WIDE_GRAMS.with(|c| c.get()), wide0, "r {r} n {n}: the f32 product");
            assert!(scratch.wide.is_empty() && scratch.narrow.len() == r * n);
            let e = crate::fp::f32_blocked_gram_rel_error(F32_GRAM_COLS, n.div_ceil(F32_GRAM_COLS));
            let mut worst = 0.0f64;
            for i in 0..r {
                for j in 0..=i {
                    let (exact, abs) = crate::test_util::dot2(&ut.row(i).to_vec(), &ut.row(j).to_vec());
                    let abs_abs: f64 = ut.row(i).iter().zip(ut.row(j)).map(|(a, b)| (a * b).abs()).sum();
                    let want = exact + f64::from(u8::from(i == j));
                    let err = (m[[i, j]] - want).abs();
                    assert!(err <= e * abs_abs * (1.0 + 1e-12) + 1e-15 * abs.max(1.0), "r {r} n {n} ({i}, {j}): {err:e}");
                    worst = worst.max(err / abs_abs.max(1e-300));
                }
            }
            assert!(worst > 0.0 || r == 1, "r {r} n {n}: f32 rounding is visible");
            // scaled up past the bound: the f64 product, exactly lower_gram's
            let big: Vec<f64> = t.iter().map(|v| v * 1e4).collect();
            let m = scaled_gram(lt.view(), &big, &mut scratch);
            assert_eq!(WIDE_GRAMS.with(|c| c.get()), wide0 + 1, "r {r} n {n}: the f64 fallback");
            assert!(scratch.narrow.is_empty());
            let ub = Array2::from_shape_fn((r, n), |(m, i)| lt[[m, i]] * big[i]);
            let low = lower_gram(ub.view());
            for i in 0..r {
                for j in 0..=i {
                    assert_eq!(m[[i, j]].to_bits(), low[[i, j]].to_bits(), "r {r} n {n} ({i}, {j})");
                }
            }
        }
    }

    #[test]
    fn a_path_solves_its_lambdas_in_lock_step() {
        // every pass over the kernel matrix serves every λ still iterating: the path makes as many
        // passes as its slowest λ needs products (plus the resumed checks), not the sum over λ
        use crate::kernel_learning::erm::fit_path_with_hook;
        let (x, y) = data(500, 4, 33);
        let n = 500usize;
        let k = Kernel::rbf(1.0).unwrap().with_shift(0.25).unwrap();
        let cs = [0.3, 0.003, 0.03, 3.0, 30.0];
        let lams: Vec<f64> = cs.iter().map(|c| 1.0 / (c * n as f64)).collect();
        let tols: Vec<f64> = lams.iter().map(|l| 1e-10 / l).collect();
        for cache in [4 * n * n, 8 * n * n, 8 * n * 40] {
            let mut always = |_: &Progress| true;
            PASSES.with(|c| c.set(0));
            let path = fit_path_with_hook(x.view(), y.view(), None, &k, &lams, &tols, 100_000, cache, &mut always)
                .unwrap()
                .unwrap();
            let passes = PASSES.with(|c| c.get());
            let most = path.iter().map(|s| s.n_iter).max().unwrap();
            let total: u64 = path.iter().map(|s| s.n_iter).sum();
            assert!(path.iter().all(|s| s.converged));
            assert!(passes <= most, "cache {cache}: {passes} passes for products {:?}",
                path.iter().map(|s| s.n_iter).collect::<Vec<_>>());
            assert!(passes < total, "cache {cache}");
        }
        // a cancelled path returns nothing, wherever the hook stops it (the Gram build, a warm
        // start, a round of products, an exact check)
        let calls_total = {
            let mut calls = 0u32;
            let mut count = |_: &Progress| {
                calls += 1;
                true
            };
            fit_path_with_hook(x.view(), y.view(), None, &k, &lams, &tols, 100_000, 8 * n * 40, &mut count)
                .unwrap()
                .unwrap();
            calls
        };
        assert!(calls_total > 5);
        for after in [1u32, 2, calls_total / 2, calls_total] {
            let mut calls = 0u32;
            let mut hook = |_: &Progress| {
                calls += 1;
                calls < after
            };
            let r = fit_path_with_hook(x.view(), y.view(), None, &k, &lams, &tols, 100_000, 8 * n * 40, &mut hook)
                .unwrap();
            assert!(r.is_none(), "cancelled at call {after} of {calls_total}");
        }
    }

    #[test]
    fn max_iter_counts_kernel_products_and_cancel_returns_nothing() {
        let (x, y) = data(400, 3, 6);
        let k = Kernel::rbf(1.0).unwrap();
        let base = ErmOptions { lam: 1.0 / 400.0, tol: 1e-10, max_iter: 3, cache_bytes: 400 * 8 * 10, shrinking: true };
        let sol = fit_s(&x, &y, None, &k, &base);
        assert!(!sol.converged && sol.n_iter <= 3);
        assert_eq!(sol.stop_reason, crate::kernel_learning::erm::StopReason::MaxIter);
        // the returned point is the last exactly checked one: its certificate is that check's gap
        // plus the float slack
        let last = sol.history[sol.history.len() - 2].1;
        assert!(sol.cert.gap >= last && sol.cert.gap <= last * 1.01 + 1e-9);
        // (exact checks always call the hook: the warm start's, then one per Newton step)
        for after in [1u32, 2, 3] {
            let mut calls = 0u32;
            let mut hook = |_: &Progress| {
                calls += 1;
                calls < after
            };
            let o = ErmOptions { max_iter: 1000, ..base };
            let r = fit_weighted_with_hook(x.view(), y.view(), None, &k, Loss::Logistic, &o, &mut hook).unwrap();
            assert!(r.is_none(), "cancelled at call {after}");
        }
    }

    #[test]
    fn the_held_gram_is_the_lower_triangle_mirrored_and_the_engine_gram_otherwise() {
        // three row batches (BATCH_ROWS = 1024): the upper triangle is mirrored, not recomputed
        let n = 2 * BATCH_ROWS + 100;
        let (x, y) = data(n, 6, 41);
        for k in [Kernel::rbf(2.0).unwrap().with_shift(0.25).unwrap(), Kernel::poly(0.7, 3, 1.0).unwrap()] {
            let full = evaluation::gram_matrix(x.view(), &k).unwrap();
            let mut always = |_: &Progress| true;
            let mut t = Ticker::new(&mut always);
            for cache in [n * n * 8, n * n * 4] {
                let ops = Ops::new(x.view(), &k, &y.to_vec(), cache, &mut t).unwrap();
                let g: Vec<f64> = match &ops.gram {
                    Gram::F64(g) => g.clone(),
                    Gram::F32(g) => g.iter().map(|&v| v as f64).collect(),
                    Gram::None => unreachable!("it fits"),
                };
                for i in 0..n {
                    for j in 0..n {
                        let (v, w) = (g[i * n + j], full[[i, j]]);
                        assert_eq!(v.to_bits(), g[j * n + i].to_bits(), "symmetric");
                        // the engine's value of (i, j) or (j, i): identical up to its own rounding
                        let tol = if cache == n * n * 8 { 1e-14 } else { 1e-7 };
                        assert!((v - w).abs() <= tol * w.abs().max(1.0), "{k:?} ({i}, {j}): {v} vs {w}");
                        if j <= i && cache == n * n * 8 {
                            assert_eq!(v.to_bits(), w.to_bits(), "the lower triangle is computed");
                        }
                    }
                }
            }
        }
    }
}

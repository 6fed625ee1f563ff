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
//! Peters & Schneider 2012), `r` kernel rows and `O(n r²)` work, computed once.
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
//! independently of all of this. The same product gives the Newton right-hand side: the step is
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
//! once, in `f64` (`8 n²` bytes) or else `f32` (`4 n²` bytes), and every product is a parallel
//! dense matrix–vector product. Exact checks use the `f32` Gram never: with it, each candidate's
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
//! Cholesky factor (`r ≤ 400` kernel rows) and the warm start are not counted; `f32` products
//! are. With `max_iter` reached the last checked dual point is returned (the last exactly checked
//! one without an `f32` Gram; with it, possibly an estimated one): its certificate is computed
//! afterwards as always.
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

/// Largest number of pivots of the preconditioner's incomplete Cholesky factor.
pub(crate) const MAX_PIVOTS: usize = 400;
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
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail
}

/// `out[k][i] = Σ_j G_ij v_k[j]` for a dense row-major `n × n` Gram (parallel over row chunks).
fn gram_products<T: Copy + Into<f64> + Sync>(g: &[T], n: usize, vs: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let nv = vs.len();
    let mut flat = vec![0.0f64; n * nv]; // row-major n × nv
    flat.par_chunks_mut(GRAM_CHUNK * nv)
        .enumerate()
        .for_each(|(c, out)| {
            let r0 = c * GRAM_CHUNK;
            for (i, o) in out.chunks_exact_mut(nv).enumerate() {
                let row = &g[(r0 + i) * n..(r0 + i + 1) * n];
                for (k, v) in vs.iter().enumerate() {
                    o[k] = dot8(row, v);
                }
            }
        });
    (0..nv)
        .map(|k| (0..n).map(|i| flat[i * nv + k]).collect())
        .collect()
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
            let mut r0 = 0;
            while r0 < n {
                let r1 = (r0 + BATCH_ROWS).min(n);
                let blk = evaluation::kernel_matrix(x.slice(s![r0..r1, ..]), x, kernel)
                    .expect("a block of at most BATCH_ROWS × n fits");
                let mut blk = blk;
                if let evaluation::KernelKind::Rbf { .. } = kernel.kind {
                    // exact self-similarity, as the Gram matrix and the row cache
                    for i in r0..r1 {
                        blk[[i - r0, i]] = kernel.add_shift(1.0);
                    }
                }
                if wide {
                    g64.extend(blk.iter());
                } else {
                    g32.extend(blk.iter().map(|&v| v as f32));
                }
                r0 = r1;
                if !ticker.tick(|| progress(0, f64::NAN, n)) {
                    return None;
                }
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
        vs: &[Vec<f64>],
        exact: bool,
        ticker: &mut Ticker<'_>,
        make: &dyn Fn() -> Progress,
    ) -> Option<Vec<Vec<f64>>> {
        let n = self.n;
        let signed: Vec<Vec<f64>> = vs
            .iter()
            .map(|v| v.iter().zip(&self.y).map(|(a, b)| a * b).collect())
            .collect();
        let mut out = match (&self.gram, exact) {
            (Gram::F64(g), _) => gram_products(g, n, &signed),
            (Gram::F32(g), false) => gram_products(g, n, &signed),
            _ => {
                let refs: Vec<&[f64]> = signed.iter().map(|v| &v[..]).collect();
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

fn progress(iter: u64, gap: f64, n: usize) -> Progress {
    Progress {
        iter,
        gap,
        exact: false,
        active: n,
    }
}

/// Pivoted (incomplete) Cholesky `K ≈ L Lᵀ`: rows of the returned `r × n` array are the columns
/// of `L`. Greedy pivots on the largest residual diagonal; stops after `r_max` pivots, when
/// `scale · Σ residual diagonal ≤ 0.5` (the preconditioned system's residual part is then small),
/// or when the largest residual diagonal is below `1e-12 · max_i K_ii`. `None` when cancelled.
fn pivoted_cholesky(
    x: ArrayView2<'_, f64>,
    kernel: &Kernel,
    ops: &Ops<'_>,
    diag: &[f64],
    r_max: usize,
    scale: f64,
    ticker: &mut Ticker<'_>,
) -> Option<Array2<f64>> {
    let n = diag.len();
    let mut d: Vec<f64> = diag.iter().map(|v| v.max(0.0)).collect();
    let dmax0 = d.iter().cloned().fold(0.0, f64::max);
    let mut lt = Array2::<f64>::zeros((r_max.min(n), n));
    let mut rows = if ops.has_gram() {
        None
    } else {
        Some(RowCache::new(x, kernel, 0, true))
    };
    let mut r = 0;
    while r < lt.nrows() {
        let (j, dj) = d
            .iter()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |(bj, bv), (i, &v)| if v > bv { (i, v) } else { (bj, bv) });
        let trace: f64 = d.iter().sum();
        if dj <= 1e-12 * dmax0 || scale * trace <= 0.5 {
            break;
        }
        let row: Vec<f64> = match (&ops.gram, rows.as_mut()) {
            (Gram::F64(g), _) => g[j * n..(j + 1) * n].to_vec(),
            (Gram::F32(g), _) => g[j * n..(j + 1) * n].iter().map(|&v| v as f64).collect(),
            (Gram::None, Some(rc)) => match rc.row(j) {
                RowRef::F64(row) => row.to_vec(),
                RowRef::F32(row) => row.iter().map(|&v| v as f64).collect(),
            },
            (Gram::None, None) => unreachable!("a row cache without a Gram"),
        };
        let coefs: Vec<f64> = (0..r).map(|m| lt[[m, j]]).collect();
        let inv = 1.0 / dj.sqrt();
        let (done, mut rest) = lt.view_mut().split_at(Axis(0), r);
        let done = done.view();
        let mut col = rest.row_mut(0);
        let col = col.as_slice_mut().expect("contiguous");
        col.par_chunks_mut(2048).enumerate().for_each(|(c, out)| {
            let c0 = c * 2048;
            out.copy_from_slice(&row[c0..c0 + out.len()]);
            for (m, &cm) in coefs.iter().enumerate() {
                let lm = &done.row(m).to_slice().expect("contiguous")[c0..c0 + out.len()];
                for (o, &l) in out.iter_mut().zip(lm) {
                    *o -= cm * l;
                }
            }
            for o in out.iter_mut() {
                *o *= inv;
            }
        });
        for (dv, &l) in d.iter_mut().zip(col.iter()) {
            *dv = (*dv - l * l).max(0.0);
        }
        d[j] = 0.0;
        r += 1;
        if !ticker.tick(|| progress(0, f64::NAN, n)) {
            return None;
        }
    }
    Some(lt.slice(s![..r, ..]).to_owned())
}

/// Preconditioner `(I + U Uᵀ)⁻¹ = I − U (I + UᵀU)⁻¹ Uᵀ` with `U = diag(t) Lᵀᵀ` (`t = C^{½} W^{½}
/// y`), from the `r × r` Cholesky factor of `I + UᵀU`.
struct Precond {
    /// `Uᵀ` (`r × n`).
    ut: Array2<f64>,
    /// Lower Cholesky factor of `I + Uᵀ U` (row-major `r × r`).
    chol: Vec<f64>,
    r: usize,
}

impl Precond {
    fn new(lt: &Array2<f64>, t: &[f64]) -> Self {
        let (r, n) = lt.dim();
        let mut ut = lt.clone();
        ut.axis_iter_mut(Axis(0)).into_par_iter().for_each(|mut row| {
            for (v, &ti) in row.iter_mut().zip(t) {
                *v *= ti;
            }
        });
        // M = I + Uᵀ U, as a fixed sum of column-block GEMMs computed in parallel (deterministic)
        const BLOCKS: usize = 4;
        let bw = n.div_ceil(BLOCKS).max(1);
        let parts: Vec<Array2<f64>> = (0..BLOCKS)
            .into_par_iter()
            .map(|b| {
                let (c0, c1) = ((b * bw).min(n), ((b + 1) * bw).min(n));
                let blk = ut.slice(s![.., c0..c1]);
                let mut m = Array2::<f64>::zeros((r, r));
                general_mat_mul(1.0, &blk, &blk.t(), 0.0, &mut m);
                m
            })
            .collect();
        let mut m = Array2::<f64>::eye(r);
        for p in &parts {
            m += p;
        }
        // Cholesky (M ⪰ I: always positive definite)
        let mut chol = vec![0.0; r * r];
        for i in 0..r {
            for j in 0..=i {
                let mut sum = m[[i, j]];
                for k in 0..j {
                    sum -= chol[i * r + k] * chol[j * r + k];
                }
                if i == j {
                    chol[i * r + i] = sum.max(1.0).sqrt();
                } else {
                    chol[i * r + j] = sum / chol[j * r + j];
                }
            }
        }
        Precond { ut, chol, r }
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

    /// `out = (I + U Uᵀ)⁻¹ v`.
    fn apply(&self, v: &[f64]) -> Vec<f64> {
        let r = self.r;
        if r == 0 {
            return v.to_vec();
        }
        let mut w: Vec<f64> = self
            .ut
            .axis_iter(Axis(0))
            .into_par_iter()
            .map(|row| dot8(row.as_slice().expect("contiguous"), v))
            .collect();
        self.solve_small(&mut w);
        let mut out = v.to_vec();
        let ut = &self.ut;
        out.par_chunks_mut(2048).enumerate().for_each(|(c, o)| {
            let c0 = c * 2048;
            for (m, &wm) in w.iter().enumerate() {
                let row = &ut.row(m).to_slice().expect("contiguous")[c0..c0 + o.len()];
                for (oi, &u) in o.iter_mut().zip(row) {
                    *oi -= wm * u;
                }
            }
        });
        out
    }
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
fn nystrom_latent(lt: &Array2<f64>, y: &[f64], sc: f64, w: &[f64]) -> Vec<f64> {
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
/// `K ≈ L Lᵀ`, an `r`-dimensional weighted logistic regression `min_w Σ_i s_i log(1 + e^{−(Φw)_i})
/// + ½‖w‖²` with features `Φ = C^{½} diag(y) L`, solved by damped Newton (Hessian `I + ΦᵀWΦ`:
/// the preconditioner's `r × r` system, `O(n r²)` per step) until its Newton decrement is below
/// `n · tol`. No kernel product. `None` when cancelled.
fn nystrom_start(
    lt: &Array2<f64>,
    y: &[f64],
    sw: &[f64],
    c: f64,
    tol: f64,
    ticker: &mut Ticker<'_>,
) -> Option<Vec<f64>> {
    let (r, n) = lt.dim();
    let sc = c.sqrt();
    let mut w = vec![0.0f64; r];
    let mut f = vec![0.0f64; n];
    let obj = |f: &[f64], w: &[f64]| -> f64 {
        let loss: f64 = f.iter().zip(sw).map(|(&fi, &si)| si * softplus(-fi)).sum();
        loss + 0.5 * dotv(w, w)
    };
    if r == 0 {
        return Some(f);
    }
    let mut cur = obj(&f, &w);
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
        let t: Vec<f64> = f
            .iter()
            .zip(sw)
            .zip(y)
            .map(|((&fi, &si), &yi)| sc * yi * (si * sigmoid(fi) * sigmoid(-fi)).sqrt())
            .collect();
        let hess = Precond::new(lt, &t);
        let mut step = grad.clone();
        hess.solve_small(&mut step);
        let dec = dotv(&grad, &step); // squared Newton decrement: 2 × the predicted decrease
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
    Some(f)
}

/// The kernel logistic regression by Newton–CG (module docs). `y ∈ {−1, +1}ⁿ`, weights `sw > 0`,
/// `diag = K_ii`. Returns `(a, Some(s − a), iterations, history)`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve(
    x: ArrayView2<'_, f64>,
    kernel: &Kernel,
    y: &[f64],
    sw: &[f64],
    diag: &[f64],
    opts: &ErmOptions,
    ticker: &mut Ticker<'_>,
    full_gram: &mut bool,
) -> SolverOut {
    let n = y.len();
    let c = 1.0 / (opts.lam * n as f64);
    let inv_n = 1.0 / n as f64;
    let sqrt_diag: Vec<f64> = diag.iter().map(|v| v.abs().sqrt()).collect();
    let s_max = sw.iter().cloned().fold(0.0, f64::max);
    let mut history = Vec::new();
    let mut iter: u64 = 0;
    // the dual candidate of u = 0 (returned as is if the solve is cancelled right away)
    let half = |u: &[f64]| -> (Vec<f64>, Vec<f64>) {
        (
            u.iter().zip(sw).map(|(&ui, &si)| si * sigmoid(-ui)).collect(),
            u.iter().zip(sw).map(|(&ui, &si)| si * sigmoid(ui)).collect(),
        )
    };
    let mut u = vec![0.0f64; n];
    let mut v = vec![0.0f64; n];
    let (mut best_a, mut best_b) = half(&u);
    let done = |a: Vec<f64>, b: Vec<f64>, iter: u64, history: Vec<(u64, f64)>| -> SolverOut {
        (ndarray::Array1::from_vec(a), Some(ndarray::Array1::from_vec(b)), iter, history)
    };
    let Some(ops) = Ops::new(x, kernel, y, opts.cache_bytes, ticker) else {
        return done(best_a, best_b, iter, history);
    };
    *full_gram = ops.has_gram();
    // products with an f32 Gram are not exact: the checks are estimated first (loop below)
    let narrow = matches!(ops.gram, Gram::F32(_));
    let r_max = MAX_PIVOTS.min(n).min((opts.cache_bytes / (16 * n.max(1))).max(32));
    let Some(lt) = pivoted_cholesky(x, kernel, &ops, diag, r_max, c * s_max / 4.0, ticker) else {
        return done(best_a, best_b, iter, history);
    };
    // the n-scaled dual objective Σ s H(a/s) − ½ aᵀ Q̃ a of a dual point with q = Q̃ a: the best
    // one seen bounds the primal suboptimality of the iterate, Ψ(v) − best (forcing term below)
    let dual_of = |a: &[f64], b: &[f64], q: &[f64]| -> f64 {
        let mut acc = 0.0;
        for i in 0..n {
            let (ri, qi) = (a[i] / sw[i], b[i] / sw[i]);
            acc -= sw[i] * (xlogx(ri) + xlogx(qi)) + 0.5 * a[i] * q[i];
        }
        acc
    };
    let mut best_dual: f64;
    let gap_of = |a: &[f64], b: &[f64], q: &[f64]| -> f64 {
        let mut acc = 0.0;
        for i in 0..n {
            let (ri, qi) = (a[i] / sw[i], b[i] / sw[i]);
            acc += sw[i] * (ri * q[i] + softplus(-q[i]) + xlogx(ri) + xlogx(qi)).max(0.0);
        }
        acc * inv_n
    };
    let mut gap: f64;
    // warm start: the dual candidate of the Nyström optimum, checked exactly; its product makes
    // the state (u, v) = (Q̃ a₀, a₀) exact
    let Some(f0) = nystrom_start(&lt, y, sw, c, opts.tol, ticker) else {
        return done(best_a, best_b, iter, history);
    };
    {
        let (a0, b0) = half(&f0);
        let Some(prods) =
            ops.products(std::slice::from_ref(&a0), !narrow, ticker, &|| progress(iter, f64::NAN, n))
        else {
            return done(best_a, best_b, iter, history);
        };
        iter += 1;
        let ka: Vec<f64> = prods[0].iter().map(|v| c * v).collect();
        gap = gap_of(&a0, &b0, &ka);
        best_dual = dual_of(&a0, &b0, &ka);
        if !narrow {
            history.push((iter, gap));
        }
        v = a0.clone();
        u = ka;
        best_a = a0;
        best_b = b0;
        let slack = fp_slack(&sqrt_diag, sw, best_a.iter().map(|v| c * v));
        if !ticker.fire(Progress { iter, gap, exact: !narrow, active: n })
            || (!narrow && gap <= stop_target(opts.tol, slack))
            || iter >= opts.max_iter
        {
            return done(best_a, best_b, iter, history);
        }
    }
    loop {
        // exact check of the dual candidate a = s σ(−u) (its decision values Q̃ a also give the
        // Newton right-hand side)
        // (with an f32 Gram the check is first estimated by the f32 product, and made exact by a
        // fused f64 product only when the estimate says stop)
        let (a, b) = half(&u);
        let g = gap;
        let Some(prods) = ops.products(std::slice::from_ref(&a), !narrow, ticker, &|| progress(iter, g, n)) else {
            break;
        };
        iter += 1;
        let mut ka: Vec<f64> = prods[0].iter().map(|v| c * v).collect();
        gap = gap_of(&a, &b, &ka);
        let slack = fp_slack(&sqrt_diag, sw, a.iter().map(|v| c * v));
        let target = stop_target(opts.tol, slack);
        let mut exact = !narrow;
        if narrow && gap <= target && iter < opts.max_iter {
            let g = gap;
            let Some(prods) = ops.products(std::slice::from_ref(&a), true, ticker, &|| progress(iter, g, n)) else {
                break;
            };
            iter += 1;
            ka = prods[0].iter().map(|v| c * v).collect();
            gap = gap_of(&a, &b, &ka);
            exact = true;
        }
        if exact {
            history.push((iter, gap));
        }
        best_dual = best_dual.max(dual_of(&a, &b, &ka));
        best_a = a;
        best_b = b;
        if !ticker.fire(Progress {
            iter,
            gap,
            exact,
            active: n,
        }) {
            break;
        }
        if (exact && gap <= target) || iter >= opts.max_iter {
            break;
        }
        // Newton step (I + W Q̃) δv = a − v (with u = Q̃ v): δv = g − W^{½} z, B z = W^{½} Q̃ g,
        // g = a − v, Q̃ g = Q̃ a − u; the right-hand side vanishes at the optimum, so the CG
        // tolerance is relative to the current error, as inexact Newton needs
        let wdiag: Vec<f64> = u
            .iter()
            .zip(sw)
            .map(|(&ui, &si)| si * sigmoid(ui) * sigmoid(-ui))
            .collect();
        let gvec: Vec<f64> = best_a.iter().zip(&v).map(|(p, q)| p - q).collect();
        let kg: Vec<f64> = ka.iter().zip(&u).map(|(p, q)| p - q).collect();
        let sq: Vec<f64> = wdiag.iter().map(|w| w.sqrt()).collect();
        let rhs: Vec<f64> = sq.iter().zip(&kg).map(|(s, k)| s * k).collect();
        let tvec: Vec<f64> = sq.iter().zip(y).map(|(s, yi)| c.sqrt() * s * yi).collect();
        let pre = Precond::new(&lt, &tvec);
        // forcing term from the smaller of the candidate's gap and the iterate's primal-dual gap
        // Ψ(v)/n − best dual/n: after a good (warm) start the candidate a = s σ(−u) can be much
        // worse than the iterate v, whose Newton step must then be solved accurately (measured:
        // η from the candidate's gap alone wastes 3–4 Newton steps after the Nyström start)
        let pd = ((psi(&u, &v, sw) - best_dual) * inv_n).max(0.0);
        let eta = (gap.min(pd) / std::f64::consts::LN_2).sqrt().clamp(1e-11, 0.5);
        let rhs_norm = dotv(&rhs, &rhs).sqrt();
        let mut z = vec![0.0f64; n];
        let mut kz = vec![0.0f64; n]; // Q̃ W^{½} z
        let mut res = rhs.clone();
        let mut pz = pre.apply(&res);
        let mut p = pz.clone();
        let mut rz = dotv(&res, &pz);
        let mut cg_steps = 0usize;
        let mut stopped = false;
        for _ in 0..MAX_CG {
            if rhs_norm == 0.0 || (cg_steps >= MIN_CG && dotv(&res, &res).sqrt() <= eta * rhs_norm) {
                break;
            }
            if iter + 1 >= opts.max_iter {
                break; // keep one product for the exact check of the result
            }
            let sp: Vec<f64> = sq.iter().zip(&p).map(|(s, pi)| s * pi).collect();
            let Some(kp) = ops.products(&[sp], false, ticker, &|| progress(iter, g, n)) else {
                stopped = true;
                break;
            };
            iter += 1;
            cg_steps += 1;
            let kp: Vec<f64> = kp[0].iter().map(|v| c * v).collect();
            let ap: Vec<f64> = p
                .iter()
                .zip(&sq)
                .zip(&kp)
                .map(|((pi, s), k)| pi + s * k)
                .collect();
            let pap = dotv(&p, &ap);
            if pap.is_nan() || pap <= 0.0 {
                break;
            }
            let alpha = rz / pap;
            for i in 0..n {
                z[i] += alpha * p[i];
                kz[i] += alpha * kp[i];
                res[i] -= alpha * ap[i];
            }
            pz = pre.apply(&res);
            let rz_new = dotv(&res, &pz);
            let beta_cg = rz_new / rz;
            rz = rz_new;
            for i in 0..n {
                p[i] = pz[i] + beta_cg * p[i];
            }
        }
        if stopped {
            break;
        }
        let dv: Vec<f64> = gvec.iter().zip(&sq).zip(&z).map(|((gg, s), zz)| gg - s * zz).collect();
        let du: Vec<f64> = kg.iter().zip(&kz).map(|(k, q)| k - q).collect();
        // damped step: t = 1, 1/2, ... until Ψ does not increase
        let psi0 = psi(&u, &v, sw);
        let mut t = 1.0;
        let mut accepted = false;
        for _ in 0..MAX_HALVINGS {
            let ut: Vec<f64> = u.iter().zip(&du).map(|(a, d)| a + t * d).collect();
            let vt: Vec<f64> = v.iter().zip(&dv).map(|(a, d)| a + t * d).collect();
            if psi(&ut, &vt, sw) <= psi0 + 1e-13 * psi0.abs().max(1.0) {
                u = ut;
                v = vt;
                accepted = true;
                break;
            }
            t *= 0.5;
        }
        if !accepted {
            break; // no decrease representable: report the last certified point honestly
        }
    }
    done(best_a, best_b, iter, history)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel_learning::erm::{fit_weighted_with_hook, Loss};
    use crate::cancel::Cancel;
    use ndarray::{Array1, Array2};

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
}

//! LRU cache of kernel rows `K(x_i, ·)` for the dual coordinate-descent solvers of
//! [`crate::kernel_learning::erm`].
//!
//! Rows are computed on demand (only rows of coordinates that actually move are ever needed —
//! about the number of support vectors) and kept in an LRU cache within a memory budget (all rows
//! when the `4 n²`- or `8 n²`-byte Gram matrix fits), stored in `f32` (as LIBSVM: half the memory
//! and bandwidth) or `f64`. A row `X x_i` is computed from a transposed copy of `X` over the
//! nonzeros of `x_i` only (`O(nnz(x_i) · n)`, sparse-aware like LIBSVM), in parallel over fixed
//! column chunks, then mapped through the kernel (RBF with [`exp_fast_slice`], polynomial by
//! binary exponentiation). Row evaluation writes disjoint entries in a fixed order, so rows are
//! deterministic whatever the thread count.
//!
//! [`RowCache::exact_q`] recomputes `Q α` from scratch in `f64` with the fused kernel engine
//! ([`crate::kernels::evaluation::kernel_predict`]), independently of the cached rows.

use ndarray::linalg::general_mat_mul;
use ndarray::parallel::prelude::*;
use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut2, Axis};
use rayon::prelude::*;

use crate::cancel::Cancel;
use crate::error::DpResult;
use crate::kernels::evaluation::{self, Kernel, KernelKind};
use crate::numerics::{exp_fast_slice, ipow};

/// Kernel rows `K(x_i, ·)` (full length `n`), computed on demand and kept in an LRU cache of
/// `cache_bytes / (w n)` rows (all `n` rows when the Gram matrix fits: then nothing is evicted),
/// stored in `f32` (`w = 4`, the hinge solver's default, as LIBSVM) or `f64` (`w = 8`).
///
/// A row is `X x_i` followed by the kernel map, always evaluated in `f64` (rounded once when
/// stored as `f32`). `X x_i` is computed as `Σ_{k: x_ik ≠ 0} x_ik · Xᵀ[k, ·]` from a transposed
/// copy of `X`: `O(nnz(x_i) · n)`, i.e. sparse-aware for one-hot data such as Adult (as LIBSVM's
/// sparse dot products), and a contiguous SIMD-friendly axpy otherwise. Long rows are split into
/// fixed column chunks evaluated in parallel (deterministic). Fresh row memory is never
/// zero-filled: every entry is written exactly once from a stack accumulator.
///
/// The rows only drive the solver's maintained gradient; every exact check ([`RowCache::exact_q`])
/// and the certificate recompute decision values in `f64` with the fused kernel engine.
pub struct RowCache<'x> {
    n: usize,
    x: ArrayView2<'x, f64>,
    kernel: Kernel,
    cache_bytes: usize,
    /// `Xᵀ` (d × n, row-major).
    xt: Vec<f64>,
    /// CSR of `X`: nonzero columns and values of each row.
    indptr: Vec<usize>,
    indices: Vec<usize>,
    values: Vec<f64>,
    /// `γ ‖x_i‖²` (RBF only).
    gsq: Vec<f64>,
    slot_of: Vec<u32>,
    owner: Vec<usize>,
    stamp: Vec<u64>,
    /// One allocation per cached row (growing one big buffer would copy it on reallocation);
    /// exactly one of the two is used, according to `wide`.
    data32: Vec<Vec<f32>>,
    data64: Vec<Vec<f64>>,
    wide: bool,
    cap: usize,
    clock: u64,
    /// Dense data (at least half the entries nonzero): rows missed together are computed as one
    /// GEMM-shaped block (see [`RowCache::prefetch`]).
    dense: bool,
    /// Rows computed so far (profiling counter: compare with the rows the solver used).
    computed: u64,
    /// Rows the solver read (profiling counter, with `computed`: a prefetched row never read was
    /// wasted work).
    used: u64,
    read: Vec<bool>,
    /// Passes over `X` (one per single row computed, one per block).
    passes: u64,
    /// The dual point of the last exact check and its decision values.
    last_exact: Option<(Array1<f64>, Array1<f64>)>,
    /// Profiling counters (`--features solver-stats`): rows evicted, seconds computing rows,
    /// seconds in exact checks.
    pub stats: CacheStats,
}

/// Profiling counters of a [`RowCache`] (filled only with `--features solver-stats`).
#[derive(Debug, Default, Clone, Copy)]
pub struct CacheStats {
    /// Cached rows evicted to make room.
    pub evictions: u64,
    /// Seconds spent computing kernel rows (single rows and blocks).
    pub row_secs: f64,
    /// Seconds spent in exact checks ([`RowCache::exact_q`]).
    pub exact_secs: f64,
}

/// A cached kernel row.
pub enum RowRef<'a> {
    /// A row stored in `f32` (each entry rounded once from its `f64` value).
    F32(&'a [f32]),
    /// A row stored in `f64`.
    F64(&'a [f64]),
}

/// Storage type of cached rows (`f32` or `f64`).
pub trait RowElem: Copy + Send + Sync {
    /// The stored value of a computed `f64` entry.
    fn from_f64(v: f64) -> Self;
    /// The stored value as `f64` (exact).
    fn to_f64(self) -> f64;
}
impl RowElem for f32 {
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
}
impl RowElem for f64 {
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
}

/// Marker of an uncached row in [`RowCache::slots`].
pub const NO_SLOT: u32 = u32::MAX;
/// Columns per parallel task when computing one kernel row (also the stack accumulator length).
const ROW_CHUNK: usize = 2048;
/// Rows computed together by [`RowCache::prefetch`] on dense data.
pub const BLOCK_ROWS: usize = 32;
/// Columns (rows of `X`) per GEMM tile and parallel task of a block of rows.
const GEMM_TILE: usize = 512;

impl<'x> RowCache<'x> {
    /// An empty cache for the rows of `K(X, X)` within `cache_bytes`, stored in `f64` when `wide`
    /// (`f32` otherwise).
    pub fn new(x: ArrayView2<'x, f64>, kernel: &Kernel, cache_bytes: usize, wide: bool) -> Self {
        let (n, d) = x.dim();
        let mut xt = vec![0.0; d * n];
        let mut indptr = Vec::with_capacity(n + 1);
        let (mut indices, mut values) = (Vec::new(), Vec::new());
        indptr.push(0);
        for (i, row) in x.rows().into_iter().enumerate() {
            for (k, &v) in row.iter().enumerate() {
                xt[k * n + i] = v;
                if v != 0.0 {
                    indices.push(k);
                    values.push(v);
                }
            }
            indptr.push(indices.len());
        }
        let gsq = match kernel.kind {
            KernelKind::Rbf { gamma } => (0..n)
                .map(|i| {
                    gamma
                        * values[indptr[i]..indptr[i + 1]]
                            .iter()
                            .map(|v| v * v)
                            .sum::<f64>()
                })
                .collect(),
            _ => Vec::new(),
        };
        let mut r = RowCache {
            n,
            x,
            kernel: *kernel,
            cache_bytes,
            xt,
            indptr,
            indices,
            values,
            gsq,
            slot_of: vec![NO_SLOT; n],
            owner: Vec::new(),
            stamp: Vec::new(),
            data32: Vec::new(),
            data64: Vec::new(),
            wide,
            cap: 0,
            clock: 0,
            dense: false,
            computed: 0,
            used: 0,
            read: vec![false; n],
            passes: 0,
            last_exact: None,
            stats: CacheStats::default(),
        };
        r.dense = n >= 2 && 2 * r.values.len() >= n * d;
        r.set_wide(wide);
        r
    }

    /// Switch the storage precision (drops every cached row).
    pub fn set_wide(&mut self, wide: bool) {
        self.wide = wide;
        let w = if wide { 8 } else { 4 };
        self.cap = (self.cache_bytes / (w * self.n.max(1))).clamp(2, self.n.max(2));
        self.slot_of.iter_mut().for_each(|s| *s = NO_SLOT);
        self.owner = Vec::new();
        self.stamp = Vec::new();
        self.data32 = Vec::new();
        self.data64 = Vec::new();
    }

    /// Whether rows are stored in `f64` (`f32` otherwise).
    pub fn is_wide(&self) -> bool {
        self.wide
    }

    /// Whether every row fits in the cache.
    pub fn holds_all(&self) -> bool {
        self.cap >= self.n
    }

    /// Compute row `i` into `out` (length n; every entry is written).
    fn compute<T: RowElem>(&self, i: usize, out: &mut [std::mem::MaybeUninit<T>]) {
        let n = self.n;
        let (lo, hi) = (self.indptr[i], self.indptr[i + 1]);
        let idx = &self.indices[lo..hi];
        let val = &self.values[lo..hi];
        let kernel = self.kernel;
        let gsq = &self.gsq[..];
        let xt = &self.xt;
        let fill = |c0: usize, chunk: &mut [std::mem::MaybeUninit<T>]| {
            let len = chunk.len();
            let mut acc = [0.0f64; ROW_CHUNK];
            let acc = &mut acc[..len];
            for (&k, &v) in idx.iter().zip(val) {
                let col = &xt[k * n + c0..k * n + c0 + len];
                for (o, &c) in acc.iter_mut().zip(col) {
                    *o += v * c;
                }
            }
            map_kernel(&kernel, gsq, i, c0, acc);
            for (o, &v) in chunk.iter_mut().zip(acc.iter()) {
                o.write(T::from_f64(v));
            }
        };
        if n * (idx.len() + 4) >= 1 << 16 {
            out.par_chunks_mut(ROW_CHUNK)
                .enumerate()
                .for_each(|(c, chunk)| fill(c * ROW_CHUNK, chunk));
        } else {
            for (c, chunk) in out.chunks_mut(ROW_CHUNK).enumerate() {
                fill(c * ROW_CHUNK, chunk);
            }
        }
    }

    /// Write row `i` into `buf` (resized to `n`; a fresh buffer is never zero-filled): computed
    /// here, or converted from its already computed `f64` values `block_row`.
    fn write_into<T: RowElem>(&self, i: usize, block_row: Option<&[f64]>, buf: &mut Vec<T>) {
        let n = self.n;
        let fill = |out: &mut [std::mem::MaybeUninit<T>]| match block_row {
            None => self.compute(i, out),
            Some(r) => {
                for (o, &v) in out.iter_mut().zip(r) {
                    o.write(T::from_f64(v));
                }
            }
        };
        if buf.len() == n {
            fill(as_uninit(&mut buf[..]));
        } else {
            buf.clear();
            buf.reserve_exact(n);
            fill(&mut buf.spare_capacity_mut()[..n]);
            // SAFETY: `fill` wrote all `n` entries of the spare capacity.
            unsafe { buf.set_len(n) };
        }
    }

    /// A slot for the uncached row `i`: a new one while the cache has room, otherwise the least
    /// recently used row's (evicted). Its contents are stale until [`RowCache::store`].
    fn claim_slot(&mut self, i: usize) -> usize {
        let slot = if self.owner.len() < self.cap {
            self.owner.push(i);
            self.stamp.push(0);
            if self.wide {
                self.data64.push(Vec::new());
            } else {
                self.data32.push(Vec::new());
            }
            self.owner.len() - 1
        } else {
            let (lru, _) = self
                .stamp
                .iter()
                .enumerate()
                .min_by_key(|&(_, t)| *t)
                .expect("cache has slots");
            self.slot_of[self.owner[lru]] = NO_SLOT;
            self.owner[lru] = i;
            self.stats.evictions += 1;
            lru
        };
        self.slot_of[i] = slot as u32;
        self.clock += 1;
        self.stamp[slot] = self.clock;
        slot
    }

    /// Fill `slot` with row `i` (see [`RowCache::write_into`]).
    fn store(&mut self, slot: usize, i: usize, block_row: Option<&[f64]>) {
        if self.wide {
            let mut buf = std::mem::take(&mut self.data64[slot]);
            self.write_into(i, block_row, &mut buf);
            self.data64[slot] = buf;
        } else {
            let mut buf = std::mem::take(&mut self.data32[slot]);
            self.write_into(i, block_row, &mut buf);
            self.data32[slot] = buf;
        }
        self.computed += 1;
    }

    /// Slot of row `i` (from the cache, or computed and cached, evicting the least recently used
    /// row); marks it most recently used.
    fn ensure(&mut self, i: usize) -> usize {
        if !self.read[i] {
            self.read[i] = true;
            self.used += 1;
        }
        let s = self.slot_of[i];
        if s != NO_SLOT {
            let s = s as usize;
            self.clock += 1;
            self.stamp[s] = self.clock;
            return s;
        }
        #[cfg(feature = "solver-stats")]
        let t0 = std::time::Instant::now();
        let slot = self.claim_slot(i);
        self.store(slot, i, None);
        self.passes += 1;
        #[cfg(feature = "solver-stats")]
        {
            self.stats.row_secs += t0.elapsed().as_secs_f64();
        }
        slot
    }

    /// Whether row `i` is cached.
    pub fn is_cached(&self, i: usize) -> bool {
        self.slot_of[i] != NO_SLOT
    }

    /// Rows computed so far (each cache miss, prefetched rows included).
    pub fn rows_computed(&self) -> u64 {
        self.computed
    }

    /// Passes over `X` so far: one per row computed alone, one per block of rows
    /// ([`RowCache::prefetch`]) — the cost of kernel rows on dense data.
    pub fn x_passes(&self) -> u64 {
        self.passes
    }

    /// Distinct rows read by the solver so far.
    pub fn rows_used(&self) -> u64 {
        self.used
    }

    /// How many rows [`RowCache::prefetch`] computes together: [`BLOCK_ROWS`] on dense data, at
    /// most a quarter of the cache (so a block never evicts the rows the solver just used); 1 on
    /// sparse data (whose rows the sparse-aware single-row path computes in `O(nnz · n)`).
    pub fn block_len(&self) -> usize {
        if self.dense {
            BLOCK_ROWS.min(self.cap / 4).max(1)
        } else {
            1
        }
    }

    /// Compute and cache the uncached rows among `ids` (the first [`RowCache::block_len`]
    /// entries; a repeated id is computed once) in one GEMM-shaped block: `X_B Xᵀ` by
    /// column tiles (`matrixmultiply` through ndarray, in parallel over fixed tiles:
    /// deterministic), then the kernel map. `X` is read once for the whole block instead of once
    /// per row, which is what a row costs on dense data. `ids[0]` ends most recently used.
    pub fn prefetch(&mut self, ids: &[usize]) {
        let take = ids.len().min(self.block_len());
        let mut todo: Vec<usize> = Vec::with_capacity(take);
        for &i in &ids[..take] {
            if !self.is_cached(i) && !todo.contains(&i) {
                todo.push(i);
            }
        }
        if todo.len() < 2 {
            for &i in &todo {
                self.ensure(i);
            }
            return;
        }
        #[cfg(feature = "solver-stats")]
        let t0 = std::time::Instant::now();
        let block = self.block_rows(&todo);
        self.passes += 1;
        for (r, &i) in todo.iter().enumerate().rev() {
            let slot = self.claim_slot(i);
            let row = block.row(r);
            self.store(
                slot,
                i,
                Some(row.as_slice().expect("block rows are contiguous")),
            );
        }
        #[cfg(feature = "solver-stats")]
        {
            self.stats.row_secs += t0.elapsed().as_secs_f64();
        }
    }

    /// `K(X_ids, X)` (`ids.len() × n`, `f64`) through GEMM tiles of [`GEMM_TILE`] columns.
    fn block_rows(&self, ids: &[usize]) -> Array2<f64> {
        let (n, d) = self.x.dim();
        let xb = self.x.select(Axis(0), ids);
        let mut out = Array2::<f64>::zeros((ids.len(), n));
        let (x, kernel, gsq) = (self.x, self.kernel, &self.gsq[..]);
        let work = |c: usize, mut tile: ArrayViewMut2<'_, f64>| {
            let c0 = c * GEMM_TILE;
            let len = tile.ncols();
            general_mat_mul(1.0, &xb, &x.slice(s![c0..c0 + len, ..]).t(), 0.0, &mut tile);
            for (r, mut row) in tile.outer_iter_mut().enumerate() {
                let row = row.as_slice_mut().expect("tile rows are contiguous");
                map_kernel(&kernel, gsq, ids[r], c0, row);
            }
        };
        if ids.len() * n * (d + 4) >= 1 << 18 {
            out.axis_chunks_iter_mut(Axis(1), GEMM_TILE)
                .into_par_iter()
                .enumerate()
                .for_each(|(c, t)| work(c, t));
        } else {
            for (c, t) in out.axis_chunks_iter_mut(Axis(1), GEMM_TILE).enumerate() {
                work(c, t);
            }
        }
        out
    }

    fn get(&self, slot: usize) -> RowRef<'_> {
        if self.wide {
            RowRef::F64(&self.data64[slot])
        } else {
            RowRef::F32(&self.data32[slot])
        }
    }

    /// Row `i` (from the cache, or computed and cached, evicting the least recently used row).
    pub fn row(&mut self, i: usize) -> RowRef<'_> {
        let slot = self.ensure(i);
        self.get(slot)
    }

    /// Which rows are cached (`slots()[i] != NO_SLOT` when row `i` is; [`NO_SLOT`]), or `None`
    /// when every row fits (then nothing is ever evicted and the solver need not prefer cached
    /// rows: see `prefer_cached` in [`crate::kernel_learning::erm`]).
    pub fn slots(&self) -> Option<&[u32]> {
        (!self.holds_all()).then_some(&self.slot_of[..])
    }

    /// [`RowCache::row`] with [`RowCache::slots`] (the cache state after fetching row `i`).
    pub fn row_with_slots(&mut self, i: usize) -> (RowRef<'_>, Option<&[u32]>) {
        let slot = self.ensure(i);
        (self.get(slot), self.slots())
    }

    /// [`RowCache::row_pair`] with [`RowCache::slots`] (the cache state after fetching both rows).
    pub fn row_pair_with_slots(&mut self, i: usize, j: usize) -> (RowRef<'_>, RowRef<'_>, Option<&[u32]>) {
        let si = self.ensure(i);
        let sj = self.ensure(j);
        debug_assert!(i == j || si != sj);
        (self.get(si), self.get(sj), self.slots())
    }

    /// Rows `i` and `j` together (both cached: the cache always holds at least two rows, and
    /// fetching `j` never evicts the just-used row `i`). Both have the same storage type.
    pub fn row_pair(&mut self, i: usize, j: usize) -> (RowRef<'_>, RowRef<'_>) {
        let si = self.ensure(i);
        let sj = self.ensure(j);
        debug_assert!(i == j || si != sj);
        (self.get(si), self.get(sj))
    }

    /// `q = Q α` recomputed from scratch in `f64` from the dual point `a = (α / C)` clipped to
    /// `[0, s_i]` — the point the solver would return — by [`decision_from_dual`] (the fused
    /// kernel engine over the support), independently of the cached rows and of any maintained
    /// gradient. The point and its decision values are kept ([`RowCache::take_exact`]): when
    /// the solver stops right after this check, the certificate of that same point reuses them
    /// instead of recomputing the identical values.
    pub fn exact_q(&mut self, y: &[f64], alpha: &[f64], c: f64, s: &[f64]) -> Vec<f64> {
        #[cfg(feature = "solver-stats")]
        let t0 = std::time::Instant::now();
        let a: Array1<f64> = alpha
            .iter()
            .zip(s)
            .map(|(&v, &w)| (v / c).clamp(0.0, w))
            .collect();
        let (_, f) = decision_from_dual(self.x, ArrayView1::from(y), a.view(), c, &self.kernel, Cancel::never())
            .expect("never cancelled");
        let q = f.iter().zip(y).map(|(&fj, &yj)| fj * yj).collect();
        self.last_exact = Some((a, f));
        #[cfg(feature = "solver-stats")]
        {
            self.stats.exact_secs += t0.elapsed().as_secs_f64();
        }
        q
    }

    /// `q = Q α` summed from the cached `f64` rows (`O(n · |support|)` instead of the engine's
    /// `O(n · |support| · d)`), with `Σ_i |α_i K_ij|` per entry (the scale of its rounding), or
    /// `None` unless the rows are `f64` and every row of the support (`α_i ≠ 0`) is cached. Each
    /// row is the kernel evaluated in `f64` (to rounding, as the engine), so this is `Q α`
    /// recomputed from `α`; the solver uses it only when that rounding is negligible against its
    /// target and still confirms a stop with [`RowCache::exact_q`], whose values the
    /// certificate reuses.
    pub fn q_from_rows(&self, y: &[f64], alpha: &[f64]) -> Option<(Vec<f64>, Vec<f64>)> {
        if !self.wide {
            return None;
        }
        let n = self.n;
        let mut f = vec![0.0f64; n];
        let mut scale = vec![0.0f64; n];
        for i in 0..n {
            if alpha[i] == 0.0 {
                continue;
            }
            let s = self.slot_of[i];
            if s == NO_SLOT {
                return None;
            }
            let coef = alpha[i] * y[i];
            let row = &self.data64[s as usize];
            for ((fj, sj), &k) in f.iter_mut().zip(scale.iter_mut()).zip(row.iter()) {
                let t = coef * k;
                *fj += t;
                *sj += t.abs();
            }
        }
        let q = f.iter().zip(y).map(|(&fj, &yj)| fj * yj).collect();
        Some((q, scale))
    }

    /// The dual point of the last [`RowCache::exact_q`] and its decision values.
    pub fn take_exact(&mut self) -> Option<(Array1<f64>, Array1<f64>)> {
        self.last_exact.take()
    }
}

/// `μ = y ∘ (C a)` and the decision values `f = K(X, X_sv) μ_sv` on all rows of `X`, summed over
/// the support (`μ_i ≠ 0`) by the fused kernel engine
/// ([`crate::kernels::evaluation::kernel_predict_cancellable`], bit-reproducible). The one
/// computation behind both the hinge solver's exact checks and the certificate
/// ([`crate::kernel_learning::erm::certify`]), so that equal `a` give bit-identical `f`.
///
/// # Errors
/// [`crate::error::DpError::Interrupted`] once `cancel` is set.
pub(crate) fn decision_from_dual(
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    a: ArrayView1<'_, f64>,
    c: f64,
    kernel: &Kernel,
    cancel: &Cancel,
) -> DpResult<(Array1<f64>, Array1<f64>)> {
    let n = x.nrows();
    let mu: Array1<f64> = Array1::from_iter(y.iter().zip(a.iter()).map(|(&yi, &ai)| yi * (c * ai)));
    let sv: Vec<usize> = (0..n).filter(|&i| mu[i] != 0.0).collect();
    let decision = if sv.is_empty() {
        Array1::zeros(n)
    } else {
        let xs = x.select(Axis(0), &sv);
        let ms = mu.select(Axis(0), &sv);
        evaluation::kernel_predict_cancellable(x, xs.view(), ms.view(), kernel, cancel)?
    };
    Ok((mu, decision))
}

/// Map the inner products `acc[c] = <x_i, x_{c0 + c}>` to kernel values in place (RBF from
/// `γ‖x‖²` in `gsq`, clamped at distance 0, exactly 1 on the diagonal; the intercept's shift).
fn map_kernel(kernel: &Kernel, gsq: &[f64], i: usize, c0: usize, acc: &mut [f64]) {
    let len = acc.len();
    match kernel.kind {
        KernelKind::Linear => {}
        KernelKind::Poly {
            gamma,
            degree,
            coef0,
        } => {
            for o in acc.iter_mut() {
                *o = gamma * *o + coef0;
            }
            ipow_slice(acc, degree);
        }
        KernelKind::Rbf { gamma } => {
            let gi = gsq[i];
            for (o, &gj) in acc.iter_mut().zip(&gsq[c0..c0 + len]) {
                *o = -(gi + gj - 2.0 * gamma * *o).max(0.0);
            }
            exp_fast_slice(acc);
            if (c0..c0 + len).contains(&i) {
                acc[i - c0] = 1.0;
            }
        }
    }
    // the intercept's shift K + b² (skipped at 0: bit-for-bit the base kernel)
    if kernel.shift != 0.0 {
        for o in acc.iter_mut() {
            *o += kernel.shift;
        }
    }
}

/// View an initialised slice as possibly-uninitialised (for overwriting in place).
fn as_uninit<T>(v: &mut [T]) -> &mut [std::mem::MaybeUninit<T>] {
    // SAFETY: `MaybeUninit<T>` has the layout of `T`; the callers only write `T` values.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), v.len()) }
}

/// `v ← v^p` element-wise by binary exponentiation ([`ipow`]; vectorisable, `powi` is a library
/// call).
fn ipow_slice(v: &mut [f64], p: u32) {
    if p == 1 {
        return;
    }
    for x in v.iter_mut() {
        *x = ipow(*x, p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    #[test]
    fn cached_rows_carry_the_intercept_shift() {
        let (n, d) = (300, 4);
        let x = Array2::from_shape_fn((n, d), |(i, j)| ((i * 7 + j * 13) % 17) as f64 / 40.0 - 0.2);
        for base in [
            Kernel::linear(),
            Kernel::poly(0.7, 2, 1.0).unwrap(),
            Kernel::rbf(1.3).unwrap(),
        ] {
            for s in [0.0, 0.25, 1.0] {
                let k = base.with_shift(s).unwrap();
                let want = evaluation::gram_matrix(x.view(), &k).unwrap();
                let mut cache = RowCache::new(x.view(), &k, 1 << 20, true);
                for i in [0, 1, 150, 299] {
                    let RowRef::F64(row) = cache.row(i) else {
                        panic!("wide cache")
                    };
                    for (j, (&g, &w)) in row.iter().zip(want.row(i).iter()).enumerate() {
                        // the base rows agree with the engine to rounding; the shift adds exactly s
                        assert!((g - w).abs() <= 1e-13 * w.abs().max(1.0), "{k:?} {i} {j}");
                    }
                    if s > 0.0 {
                        let mut c0 = RowCache::new(x.view(), &base, 1 << 20, true);
                        let RowRef::F64(r0) = c0.row(i) else { panic!() };
                        for (&g, &b) in row.iter().zip(r0.iter()) {
                            assert_eq!(g, b + s);
                        }
                    }
                }
            }
        }
    }

    fn dense(n: usize, d: usize) -> Array2<f64> {
        let mut x = Array2::from_shape_fn((n, d), |(i, j)| {
            (((i * 31 + j * 17 + i * j) % 23) as f64 - 11.0) / 11.0 + 0.01
        });
        for mut r in x.rows_mut() {
            let norm = r.dot(&r).sqrt();
            r.mapv_inplace(|v| v / norm.max(1.0));
        }
        x
    }

    #[test]
    fn block_rows_agree_with_the_engine_and_the_single_row_path() {
        // n > GEMM_TILE: several column tiles (in parallel); dense, so blocks are used
        let (n, d) = (1200, 37);
        let x = dense(n, d);
        for k in [
            Kernel::linear(),
            Kernel::poly(0.7, 3, 1.0).unwrap(),
            Kernel::rbf(1.3).unwrap(),
            Kernel::rbf(1.3).unwrap().with_shift(0.25).unwrap(),
        ] {
            let want = evaluation::gram_matrix(x.view(), &k).unwrap();
            let mut cache = RowCache::new(x.view(), &k, 1 << 30, true);
            let mut single = RowCache::new(x.view(), &k, 1 << 30, true);
            assert_eq!(cache.block_len(), BLOCK_ROWS);
            // more ids than a block, and one repeated: the first BLOCK_ROWS are taken, once each
            let mut ids: Vec<usize> = (0..BLOCK_ROWS + 8).map(|t| (t * 37 + 5) % n).collect();
            ids[3] = ids[1];
            cache.prefetch(&ids);
            assert_eq!(cache.x_passes(), 1, "{k:?}");
            let taken: std::collections::BTreeSet<usize> = ids[..BLOCK_ROWS].iter().copied().collect();
            assert_eq!(cache.rows_computed(), taken.len() as u64);
            for &i in &ids {
                assert_eq!(cache.is_cached(i), taken.contains(&i));
            }
            for &i in &taken {
                let RowRef::F64(got) = cache.row(i) else { panic!("wide") };
                let got = got.to_vec();
                let RowRef::F64(one) = single.row(i) else { panic!("wide") };
                for j in 0..n {
                    let w = want[[i, j]];
                    assert!((got[j] - w).abs() <= 1e-13 * w.abs().max(1.0), "{k:?} {i} {j}");
                    assert!((got[j] - one[j]).abs() <= 1e-13 * w.abs().max(1.0), "{k:?} {i} {j}");
                }
                if let evaluation::KernelKind::Rbf { .. } = k.kind {
                    assert_eq!(got[i], 1.0 + k.shift);
                }
            }
            // reading the prefetched rows computed nothing more
            assert_eq!(cache.rows_computed(), taken.len() as u64);
            assert_eq!(cache.x_passes(), 1);
        }
    }

    #[test]
    fn blocks_respect_the_cache_and_sparse_data_keeps_single_rows() {
        let (n, d) = (400, 12);
        let x = dense(n, d);
        let k = Kernel::rbf(0.9).unwrap();
        // room for 40 f32 rows: blocks of 10, and a block never evicts the row just used
        let mut cache = RowCache::new(x.view(), &k, 40 * 4 * n, false);
        assert_eq!(cache.block_len(), 10);
        let _ = cache.row(7);
        for b in 0..20 {
            let ids: Vec<usize> = (0..10).map(|t| 10 + 10 * b + t).collect();
            cache.prefetch(&ids);
            assert!(cache.is_cached(ids[0]));
            let _ = cache.row(7);
            assert!(ids.iter().all(|&i| cache.is_cached(i)), "block {b}");
        }
        assert_eq!(cache.rows_computed(), 1 + 200);
        // one-hot-like data (fewer than half the entries nonzero): the sparse single-row path
        let xs = Array2::from_shape_fn((300, 10), |(i, j)| if (i + j) % 5 == 0 { 0.5 } else { 0.0 });
        let mut sparse = RowCache::new(xs.view(), &k, 1 << 30, false);
        assert_eq!(sparse.block_len(), 1);
        sparse.prefetch(&[3, 4, 5]);
        assert!(sparse.is_cached(3) && !sparse.is_cached(4) && sparse.x_passes() == 1);
    }

    #[test]
    fn q_from_cached_rows_matches_the_exact_engine() {
        let (n, d) = (500, 9);
        let x = dense(n, d);
        let y: Vec<f64> = (0..n).map(|i| if (i * 7) % 3 == 0 { 1.0 } else { -1.0 }).collect();
        let c = 0.3;
        let s = vec![1.0; n];
        let alpha: Vec<f64> = (0..n).map(|i| if i % 4 == 0 { c * ((i % 11) as f64 / 10.0) } else { 0.0 }).collect();
        for k in [Kernel::poly(0.8, 3, 1.0).unwrap(), Kernel::rbf(1.1).unwrap().with_shift(0.25).unwrap()] {
            let mut narrow = RowCache::new(x.view(), &k, 1 << 30, false);
            let mut wide = RowCache::new(x.view(), &k, 1 << 30, true);
            for i in (0..n).filter(|&i| alpha[i] != 0.0) {
                let _ = narrow.row(i);
                if i != 8 {
                    let _ = wide.row(i);
                }
            }
            // f32 rows, or a support row missing: no shortcut
            assert!(narrow.q_from_rows(&y, &alpha).is_none());
            assert!(wide.q_from_rows(&y, &alpha).is_none());
            let _ = wide.row(8);
            let (fast, abs) = wide.q_from_rows(&y, &alpha).unwrap();
            assert!(fast.iter().zip(&abs).all(|(q, a)| q.abs() <= *a * (1.0 + 1e-12)));
            let exact = wide.exact_q(&y, &alpha, c, &s);
            let scale: f64 = alpha.iter().sum::<f64>() * 3.0f64.powi(3);
            for j in 0..n {
                assert!((fast[j] - exact[j]).abs() <= 1e-13 * scale, "{k:?} {j}");
            }
            // the exact check keeps its point and values for the certificate
            let (a, f) = wide.take_exact().unwrap();
            assert_eq!(a.len(), n);
            assert!(f.iter().zip(&y).zip(&exact).all(|((&fj, &yj), &qj)| fj * yj == qj));
            assert!(wide.take_exact().is_none());
        }
    }
}

//! Exponential mechanism over a ν-net of a Euclidean ball, streamed with Gumbel-max.
//!
//! This is the sampling primitive of the non-interactive TDIL learner (Jain & Thakurta 2013,
//! Algorithm 3; SPEC "Non-interactive model — TDIL"): every round draws a point `z` of a ν-net `S`
//! of the ball `{‖z‖ ≤ r} ⊂ ℝ^d` with probability `∝ exp(κ·|score(z)|)`. `|S| ≈ (4/ν)^d` is huge,
//! so `S` is never materialised: the sampler streams over the net's index space in fixed chunks,
//! in parallel, with one ChaCha20 stream per chunk, and keeps only each chunk's running maximum.
//!
//! * [`BallNet`] — the net: definition, exact [`BallNet::count`], [`BallNet::estimate`],
//!   [`BallNet::points`] (small nets only).
//! * [`Scorer`] — `score(z) = <z, u>` ([`Scorer::Linear`], the fast path) or
//!   `Σ_j coef_j K(z, p_j)` ([`Scorer::KernelSum`], scored in blocks by the fused kernel engine).
//! * [`sample`] — one exact-in-distribution (up to the floating-point bound below) sample.
//! * [`sample_many`] — many independent samples on a small net (privacy audits, tests), returned
//!   as canonical indices.
//! * [`exact_log_probs`], [`scores`] — reference quantities on small nets.
//! * [`key_error_bound`] — the floating-point slack `η` of every Gumbel key.
//!
//! # The net
//!
//! Parameters: dimension `d ≥ 1`, covering radius `ν > 0`, ball radius `r > 0`. Cubic grid of
//! spacing `h = (2ν/√d)·(1 − 2⁻³²)`; grid points `g = i·h` for integer vectors `i`. Every point of
//! `ℝ^d` is within `h√d/2 < ν` of its nearest grid point. Kept: the integer vectors with
//! `‖i‖² ≤ T`, where the integer `T = ⌊((r + ν)/h)²·(1 + 2⁻⁴⁰)⌋` is computed once; from then on
//! membership is an exact integer comparison (no floating-point decision anywhere else), and
//! `T ≥ ((r+ν)/h)²` holds despite the rounding of the float computation (its relative error is a
//! few ulps, far below 2⁻⁴⁰), so every grid point with `‖g‖ ≤ r + ν` is kept (a few more may be
//! kept too, which is harmless). `half = ⌊√T⌋` bounds every coordinate. The net point of `i` is
//! the projection of `g` onto the ball, `P(g) = g·min(1, r/‖g‖)`.
//!
//! **Covering.** Let `x` be in the ball and `g` its nearest grid point: `‖x − g‖ ≤ h√d/2 < ν`, so
//! `‖g‖ ≤ ‖x‖ + ν ≤ r + ν` and `g` is kept. Projection onto a convex set is 1-Lipschitz and
//! `P(x) = x`, hence `‖x − P(g)‖ = ‖P(x) − P(g)‖ ≤ ‖x − g‖ < ν`. (Several grid points may project
//! to the same net point; this is harmless because the mechanism is over the index space.)
//!
//! Floating point: the stored coordinates are `z_j = (i_j·h)·f` with `f = 1` when
//! `‖i‖² ≤ T_in = ⌊(r/h)²·(1 − 2⁻⁴⁰)⌋` (clearly inside: no projection), otherwise
//! `f = min(1, r/(h·√‖i‖²)·(1 − 2⁻⁴⁸))`. The slack factors make every stored point satisfy
//! `‖z‖ ≤ r` despite rounding (for `d` up to a few hundred), and keep the covering radius at most
//! `ν(1 − 2⁻³²) + r·2⁻⁴⁷ + O(d·2⁻⁵³(r+ν))`, i.e. `≤ ν` whenever `r ≤ 2¹⁴·ν`. Which points are
//! projected is decided by the exact integer test `‖i‖² ≤ T_in`, the same everywhere.
//!
//! **Order and counts.** A *row* is a value of the first `d − 1` integer coordinates (for
//! `d = 1` there is one row); its admissible last coordinates are the contiguous range
//! `|i_d| ≤ ⌊√(T − Σ_{j<d} i_j²)⌋` (exact integer square root). The canonical order of the net is
//! lexicographic in `i` (rows in lexicographic order, then `i_d` ascending); [`BallNet::points`]
//! and the canonical indices of [`sample_many`] use it. [`BallNet::count`] sums the row ranges
//! (cost `O(#rows)`, in parallel); [`BallNet::estimate`] is `V_d·T^{d/2}` (volume of the ball of
//! radius `√T` in grid units), usable when even the rows are too many to walk. Nets whose bounding
//! index box `(2·half + 1)^d` exceeds `2⁶³ − 1` are refused, so every index fits an `i64`.
//!
//! **Chunks.** The index space is cut into chunks that depend only on `(d, T)`: a chunk is a run
//! of `U` consecutive values of coordinate `p` under a fixed prefix `(i_1, …, i_p)` (all net points
//! below it), with the depth `p` and the width `U` chosen so that a chunk holds about
//! [`CHUNK_TARGET`] points (for `p = d − 1` a chunk is a block of at most `U = 4096` consecutive
//! points of one row). Chunks are enumerated lazily in canonical order; the chunk's *id* is the
//! position of its first index vector in the bounding box (`Σ_j (i_j + half)·(2·half+1)^{d−1−j}`),
//! unique and independent of everything else.
//!
//! # The mechanism: streaming Gumbel-max
//!
//! With `a_z = κ·|score(z)|` and `G_z` i.i.d. standard Gumbel, `argmax_z (a_z + G_z)` is distributed
//! as `P(z) = e^{a_z} / Σ_y e^{a_y}` (the exponential mechanism) without ever exponentiating or
//! normalising. [`sample`] draws one fresh 256-bit key from the caller's generator; chunk `c`
//! draws its Gumbel variables from ChaCha20 with that key, main stream number = the chunk's id and
//! auxiliary stream number = id + 2⁶³ (the construction of
//! [`crate::mechanisms::noise::derive_streams`], with non-consecutive stream numbers). Chunks
//! are processed in *waves* of [`WAVE_CHUNKS`] chunks in parallel; each chunk returns its best
//! candidate, and the reduction takes the largest key, ties going to the earlier chunk (inside a
//! chunk, the earlier candidate: a candidate replaces the running best only if its key is strictly
//! larger). Hence the output is a function of the key, the net and the scores only: bit-identical
//! whatever the number of threads or the wave size (tested). Between waves, on the calling thread,
//! the progress hook is called (at most every [`HOOK_INTERVAL`], and once at the end); if it returns
//! `false` the sampler stops and returns `None`.
//!
//! Exponents: `exponent_bound` is a public bound the caller declares on `κ·|score(z)|` over the
//! net (for TDIL, `κ·R_φ·‖w_t − w*‖` bounds it). Every computed `a_z` is checked; if one exceeds the
//! bound (or is not finite) the call fails naming `exponent_bound` — values are never clamped.
//! Bounds above [`MAX_EXPONENT_BOUND`] = 10¹² are refused (the key slack below grows with it).
//! The exponents themselves are floating-point evaluations of the score; the guarantee below is
//! relative to the exponential mechanism *with the computed exponents*; their deviation from the
//! real-number exponents (a relative `O(d·2⁻⁵³)` for the linear score, the accuracy of
//! [`crate::kernels::evaluation::kernel_predict`] for kernel sums) belongs in the caller's
//! sensitivity slack.
//!
//! # Floating-point safety of the Gumbel keys
//!
//! The Gumbel variable is `G = −ln E` with `E ~ Exp(1)`, and `E` is sampled with full relative
//! precision at both ends of its range. Each candidate takes one 16-bit *lane* of its chunk's main
//! stream: bit 15 is a fair *branch* bit, bits 14…0 are the first 15 bits of a uniform
//! `U ∈ (0, 1)` in binary. Its other bits come from the chunk's auxiliary stream, at positions
//! fixed by the candidate's number `j` in the chunk (see `Streams`): 51 *mantissa* bits `m` (word
//! `j`), and, if the 15 bits are all zero, further bits of `U` (words `2⁶² + j·2²⁰ + t`).
//!
//! * `k` = the number of leading zero bits of `U`: counted in the 15 lane bits and, if all are
//!   zero, continued across the auxiliary continuation words. `k` is exactly geometric,
//!   `P(k) = 2^{−k−1}`, and independent of `m`. Then `U = 2^{−k−1}(1 + (m + θ)/2⁵¹)` with
//!   `θ ~ U(0,1)` is exactly uniform on `(0, 1)`; the computation uses the midpoint `θ = ½` of the
//!   implied dyadic interval, `U_c = 2^{−k−1}(1 + f)`, `f = (m + ½)·2⁻⁵¹` (exact in binary64), so
//!   `|U_c − U| ≤ 2⁻⁵²·U`. (The bits of `U` after its leading one that the lane may hold are not
//!   used — discarding independent random bits changes no distribution.)
//! * Branch A (bit 0, probability ½): `W = U/2` is uniform on `(0, ½)` and `E = −ln(1 − W)`
//!   (`ln_1p`), which is `Exp(1)` conditioned on `E < ln 2`. Branch B: `V = U/2` is uniform on
//!   `(0, ½)` and `E = −ln V`, `Exp(1)` conditioned on `E > ln 2`. Mixed with weights ½ each: `E`
//!   is exactly `Exp(1)`.
//! * Relative error: branch A, `W·φ'(W)/φ(W) ≤ 1/(2 ln 2) < 1.45` for `φ(W) = −ln(1 − W)` on
//!   `(0, ½)`, so the midpoint error contributes `≤ 1.45·2⁻⁵²` and `ln_1p` (≤ 2 ulp) `2·2⁻⁵²`;
//!   branch B, `|Δ ln V| ≤ 2⁻⁵²` against `E ≥ ln 2` gives `1.45·2⁻⁵²`, plus `ln` (≤ 2 ulp). So the
//!   computed `E_c = E(1 + ξ)` with `|ξ| ≤ 3.45·2⁻⁵² < 2⁻⁵⁰` under this coupling of the float
//!   sampler with the continuous one. (Named assumption [`crate::fp::LIBM_LN_ULPS`] = 2: the
//!   platform's `ln` and `ln_1p` are accurate to 2 ulp; glibc, musl and LLVM's libm document < 1.) For `k > 1000`, where `U_c` would
//!   approach the subnormal range, the same quantities are evaluated in the log domain
//!   (`−ln U_c = (k+1) ln 2 − ln_1p(f)`), with the same relative accuracy.
//! * Key error. The key is `key_c = fl(a + G_c)`, `G_c = fl(−ln E_c)`. With
//!   `|ln E_c − ln E| = |ln(1 + ξ)| ≤ 1.01·2⁻⁵⁰`, the error of `ln` (`≤ LIBM_LN_ULPS` ulp, i.e.
//!   `≤ 2·2⁻⁵²|G_c|`) and the rounding of the sum (`≤ 2⁻⁵³(a + |G_c|)`):
//!   `|key_c − (a + G)| ≤ 2⁻⁴⁸ + 2⁻⁵³·B + (2·2⁻⁵² + 2⁻⁵³)|G_c| ≤ η`,
//!   `η = 2⁻⁴⁸ + 2⁻⁵¹·B + 2⁻⁵⁰·746` ([`key_error_bound`]; `5·2⁻⁵³ < 2⁻⁵⁰`) whenever `|G| ≤ 746`,
//!   where `B` is the declared `exponent_bound ≥ a`. (Until issue 12 the bound assumed a 1-ulp
//!   `ln` and read `2⁻⁴⁸ + 2⁻⁵¹(B + 746)`, which that assumption's own module contradicted.)
//!
//! **Claim.** `e^{−2η}·P_exact(z) ≤ P_float(z) ≤ e^{2η}·P_exact(z)`. Proof: under the coupling every
//! computed key is within `η` of the exact key `K_y = a_y + G_y`. If `z` wins in floating point then
//! `K_z + η ≥ key_c(z) ≥ key_c(y) ≥ K_y − η` for all `y`, so
//! `P_float(z) ≤ P(K_z + 2η ≥ K_y ∀y) = e^{a_z+2η}/(e^{a_z+2η} + Σ_{y≠z} e^{a_y}) ≤ e^{2η} P_exact(z)`
//! (Gumbel-max with `a_z` raised by `2η`; ties have probability 0 for the continuous keys).
//! Conversely, if `K_z − 2η > K_y` for all `y ≠ z`, then `key_c(z) ≥ K_z − η > K_y + η ≥ key_c(y)`
//! and `z` wins, so `P_float(z) ≥ e^{a_z−2η}/(e^{a_z−2η} + Σ_{y≠z} e^{a_y}) ≥ e^{−2η} P_exact(z)`.
//! Consequently, if the exact mechanism is `ε_em`-DP (the exponents of neighbouring data sets give
//! `P_exact(z|D) ≤ e^{ε_em} P_exact(z|D')`), the floating-point sampler is `(ε_em + 4η)`-DP.
//! The coupling bound needs `|G| ≤ 746`; that can only fail if some candidate draws more than
//! 1000 leading zero bits (probability `≤ |S|·2⁻¹⁰⁰⁰ < 2⁻⁹³⁶`; this event also covers the safety
//! caps of the leading-zero count), which enters as an additive `δ_fp < 2⁻⁹³⁶` — far below any δ a
//! user can set (TDIL is (ε, δ)-DP anyway). Named assumption: ChaCha20 output is indistinguishable
//! from uniform bits.
//!
//! # The skip test (exact speed-up)
//!
//! A candidate can only become its chunk's best if `key_c > M`, the running best key (initialised
//! to the best key of the previous waves, which it must beat anyway). The lane alone gives the
//! branch and `k` (or says `k ≥ 15`), and `G_c` is bounded by a function of `(branch, k)` only:
//!
//! * branch A: `U_c ≥ 2^{−k−1}` so `W_c ≥ 2^{−k−2}`; `E_c ≥ W_c(1 − 2⁻⁵¹)` (`−ln(1−W) > W`, `ln_1p`
//!   ≤ 2 ulp), so `G_c ≤ (k+2)·ln 2 + 2⁻⁴⁷ ≤ t_A(k) = (k+2)·ln 2 + 10⁻⁹`;
//! * branch B: `V_c < 2^{−k−1}` so `E > (k+1) ln 2` and `G_c ≤ t_B(k) = −ln((k+1)·ln 2) + 10⁻⁹`;
//! * `k ≥ 15` (all 15 bits zero, probability 2⁻¹⁵): no bound (`t = +∞`), always evaluated.
//!
//! If `fl(a + t) < M` then, rounding being monotone, `key_c = fl(a + G_c) ≤ fl(a + t) < M`: the
//! candidate would not have replaced the best, so it is skipped — no auxiliary bits, no logarithm.
//! Every candidate consumes exactly one lane whether it is skipped or not, and an evaluated
//! candidate reads only its own auxiliary words, so **the output is bit-identical with and without
//! the skip test** (tested), not merely equal in distribution. Because the best of `n` Gumbel keys
//! grows like `ln n`, after a few hundred candidates nearly every candidate is skipped even for a
//! flat score (`a` constant): the typical cost is a quarter of a 64-bit ChaCha20 word, a `lzcnt`,
//! a table load, an add and a compare (plus, on the linear path, one multiply-add for the score).
//! The tests are done 8 candidates at a time without branches; a block with a possible winner is
//! re-walked one candidate at a time.
//!
//! # Cost
//!
//! Linear scorer (chunks in parallel): per row `d − 1` multiply-adds for the base and an integer
//! square root, then per point one multiply-add (`base + g_d·u_d`), and for projected (boundary)
//! points one square root and one division more — computed in windows of [`ROW_BLOCK`] points as
//! straight vectorisable loops — plus the skip test and a quarter of a ChaCha20 word. The hot loop
//! is compiled for AVX2 as well as for the baseline and chosen at run time (identical results).
//! Kernel scorer: chunks one after the other; each chunk's points are built in blocks of
//! [`KERNEL_BLOCK`] rows and scored with the parallel
//! [`kernel_predict`](crate::kernels::evaluation::kernel_predict) (fused, tiled, never more than a
//! 64×512 block of kernel values per thread in memory), whose cost dominates. Memory is
//! `O(WAVE_CHUNKS·d + threads·ROW_BLOCK)` (linear) or `O(KERNEL_BLOCK·d)` plus the kernel engine's
//! scratch (kernel sums), independent of `|S|`. `benches/expmech.rs` and
//! `benches/bench_expmech.py` measure the throughput.
//!
//! # Layout
//!
//! * `net` — the net: [`BallNet`], [`NetCount`], the integer helpers, the canonical enumeration
//!   and the chunks.
//! * `scoring` — [`Scorer`] and the per-chunk scoring of candidates in blocks.
//! * `gumbel` — the Gumbel keys: ChaCha20 lanes and auxiliary words, the Gumbel variable, the
//!   skip table and [`key_error_bound`].
//! * `scan` — the running Gumbel-max with the skip test, the scan of one chunk, the waves.
//! * this file — the constants, the result types and the entry points [`sample`], [`scores`],
//!   [`exact_log_probs`], [`sample_many`].

// `!(a <= b)` is used on purpose throughout: it is true for NaN, which must be refused (or must
// not be skipped) exactly like a value above the bound.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod gumbel;
mod net;
mod scan;
mod scoring;
#[cfg(test)]
mod tests;

use std::time::{Duration, Instant};

use ndarray::Array1;
use rand_core::Rng;
use rayon::prelude::*;

use crate::error::{DpError, DpResult};
use crate::mechanisms::noise::DpRng;

pub use gumbel::key_error_bound;
pub use net::{BallNet, NetCount};
pub use scoring::Scorer;

use gumbel::{skip_table, Streams};
use net::Chunk;
use scan::{map_wave, scan_chunk, ChunkBest, ChunkOut, Gumbel};

/// Largest accepted `exponent_bound` (the key slack `η` grows linearly with it).
pub const MAX_EXPONENT_BOUND: f64 = 1e12;
/// Target number of net points per chunk.
pub const CHUNK_TARGET: usize = 4096;
/// Chunks processed in parallel between two hook calls (linear scorer).
pub const WAVE_CHUNKS: usize = 256;
/// Chunks per wave with a kernel-sum scorer (each chunk is a few milliseconds of kernel work).
pub const KERNEL_WAVE_CHUNKS: usize = 16;
/// Points of a linear-scorer window (at most this many consecutive points of one row).
pub const ROW_BLOCK: usize = 64;
/// Rows of one kernel-scoring block (one parallel
/// [`kernel_predict`](crate::kernels::evaluation::kernel_predict) call).
pub const KERNEL_BLOCK: usize = 4096;
/// Minimum wall time between two progress-hook calls.
pub const HOOK_INTERVAL: Duration = Duration::from_millis(100);
/// Largest net accepted by [`sample_many`], [`scores`] and [`exact_log_probs`].
pub const SMALL_NET_MAX_POINTS: u64 = 1 << 22;

// ------------------------------------------------------------------------------------------------
// Sampling
// ------------------------------------------------------------------------------------------------

/// Result of [`sample`].
#[derive(Debug, Clone, PartialEq)]
pub struct EmResult {
    /// Integer coordinates `i` of the sampled net point.
    pub coords: Vec<i64>,
    /// The net point `P(i·h)`.
    pub point: Array1<f64>,
    /// Its score (`<z, u>` or `Σ_j coef_j K(z, p_j)`, as computed by the scan).
    pub score: f64,
    /// Number of candidates scored (= the number of net points).
    pub n_scored: u64,
}

/// Progress report passed to the hook of [`sample`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Candidates scored so far.
    pub n_scored: u64,
    /// Chunks processed so far.
    pub n_chunks: u64,
}

/// Internal switches (tests): the skip test and the wave size.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScanOptions {
    pub skip: bool,
    /// `None`: [`WAVE_CHUNKS`] (linear) or [`KERNEL_WAVE_CHUNKS`] (kernel sums).
    pub wave_chunks: Option<usize>,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            skip: true,
            wave_chunks: None,
        }
    }
}

fn check_kappa_bound(kappa: f64, exponent_bound: f64) -> DpResult<()> {
    if !(kappa.is_finite() && kappa >= 0.0) {
        return Err(DpError::invalid(
            "kappa",
            format!("must be finite and >= 0, got {kappa:?}"),
        ));
    }
    if !(exponent_bound.is_finite() && exponent_bound >= 0.0) {
        return Err(DpError::invalid(
            "exponent_bound",
            format!("must be finite and >= 0, got {exponent_bound:?}"),
        ));
    }
    if exponent_bound > MAX_EXPONENT_BOUND {
        return Err(DpError::invalid(
            "exponent_bound",
            format!(
                "must be <= {MAX_EXPONENT_BOUND:e} (the floating-point key slack grows with it), \
                 got {exponent_bound:?}"
            ),
        ));
    }
    Ok(())
}

fn bound_violation(a: f64, coords: &[i64], exponent_bound: f64) -> DpError {
    DpError::invalid(
        "exponent_bound",
        format!(
            "kappa*|score| = {a} at the net point with integer coordinates {coords:?} exceeds the \
             declared exponent_bound = {exponent_bound}; the bound must hold on the whole net \
             (exponents are never clamped)"
        ),
    )
}

/// One sample of the exponential mechanism `P(z) ∝ exp(κ·|score(z)|)` over the net, streamed
/// with Gumbel-max (see the module docs for chunks, streams, determinism, the floating-point
/// bound and the skip test). Draws one 256-bit key from `rng`. `hook` is called on the calling
/// thread between waves of chunks (at most every [`HOOK_INTERVAL`], and once at the end); when it
/// returns `false` the scan stops and `Ok(None)` is returned.
///
/// # Errors
/// Invalid `kappa` (finite, ≥ 0), `exponent_bound` (finite, in `[0, 10¹²]`) or scorer; a
/// computed `κ·|score|` above `exponent_bound` anywhere on the net (named `exponent_bound`).
pub fn sample(
    net: &BallNet,
    scorer: &Scorer<'_>,
    kappa: f64,
    exponent_bound: f64,
    rng: &mut DpRng,
    hook: &mut dyn FnMut(&Progress) -> bool,
) -> DpResult<Option<EmResult>> {
    sample_opts(
        net,
        scorer,
        kappa,
        exponent_bound,
        rng,
        hook,
        ScanOptions::default(),
    )
}

pub(crate) fn sample_opts(
    net: &BallNet,
    scorer: &Scorer<'_>,
    kappa: f64,
    exponent_bound: f64,
    rng: &mut DpRng,
    hook: &mut dyn FnMut(&Progress) -> bool,
    opts: ScanOptions,
) -> DpResult<Option<EmResult>> {
    check_kappa_bound(kappa, exponent_bound)?;
    scorer.validate(net.d)?;
    let mut key = [0u8; 32];
    rng.fill_bytes(&mut key);
    let table = skip_table();
    let mut chunks = net.chunks();
    let mut best: Option<ChunkBest> = None;
    let mut progress = Progress {
        n_scored: 0,
        n_chunks: 0,
    };
    let mut last = Instant::now();
    let wave_len = opts.wave_chunks.unwrap_or(match scorer {
        Scorer::Linear { .. } => WAVE_CHUNKS,
        Scorer::KernelSum { .. } => KERNEL_WAVE_CHUNKS,
    });
    let wave_len = wave_len.max(1);
    loop {
        let wave: Vec<Chunk> = chunks.by_ref().take(wave_len).collect();
        if wave.is_empty() {
            break;
        }
        let threshold = best.as_ref().map_or(f64::NEG_INFINITY, |b| b.key);
        let outs: Vec<ChunkOut> = map_wave(net, scorer, &wave, |cs, ch| {
            scan_chunk(
                cs,
                ch,
                kappa,
                exponent_bound,
                &key,
                threshold,
                &table,
                opts.skip,
            )
        });
        for o in outs {
            progress.n_scored += o.n;
            progress.n_chunks += 1;
            if let Some((a, coords)) = o.violation {
                return Err(bound_violation(a, &coords, exponent_bound));
            }
            if let Some(b) = o.best {
                if best.as_ref().is_none_or(|g| b.key > g.key) {
                    best = Some(b);
                }
            }
        }
        if last.elapsed() >= HOOK_INTERVAL {
            if !hook(&progress) {
                return Ok(None);
            }
            last = Instant::now();
        }
    }
    if !hook(&progress) {
        return Ok(None);
    }
    let b = best.expect("a net has at least one point and the first candidate always wins");
    Ok(Some(EmResult {
        point: net.point(&b.coords),
        coords: b.coords,
        score: b.score,
        n_scored: progress.n_scored,
    }))
}

/// Scores of every net point in canonical order (small nets only).
///
/// # Errors
/// Invalid scorer; more than `max_points` points (named `max_points`).
pub fn scores(net: &BallNet, scorer: &Scorer<'_>, max_points: u64) -> DpResult<Array1<f64>> {
    scorer.validate(net.d)?;
    let too_many = || {
        DpError::invalid(
            "max_points",
            format!(
                "the net has more than {max_points} points (estimate {:.3e}); only small nets \
                 are scored exhaustively",
                net.estimate()
            ),
        )
    };
    if net.estimate() > 2.0 * max_points as f64 + 1e6 {
        return Err(too_many());
    }
    let mut out: Vec<f64> = Vec::new();
    let mut chunks = net.chunks();
    loop {
        let wave: Vec<Chunk> = chunks.by_ref().take(WAVE_CHUNKS).collect();
        if wave.is_empty() {
            break;
        }
        let parts: Vec<Vec<f64>> = map_wave(net, scorer, &wave, |cs, ch| {
            let mut v = Vec::new();
            cs.visit_blocks(ch, |blk| v.extend_from_slice(blk.scores()));
            v
        });
        for p in parts {
            out.extend_from_slice(&p);
        }
        if out.len() as u64 > max_points {
            return Err(too_many());
        }
    }
    Ok(Array1::from_vec(out))
}

/// Log-probabilities of the exact exponential mechanism, `a_z − logsumexp(a)` with
/// `a_z = κ·|score(z)|`, in canonical order (small nets; reference for tests).
pub fn exact_log_probs(
    net: &BallNet,
    scorer: &Scorer<'_>,
    kappa: f64,
    max_points: u64,
) -> DpResult<Array1<f64>> {
    check_kappa_bound(kappa, 0.0)?;
    let a = scores(net, scorer, max_points)?.mapv(|s| kappa * s.abs());
    let m = a.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lse = m + a.iter().map(|&v| (v - m).exp()).sum::<f64>().ln();
    Ok(a.mapv(|v| v - lse))
}

/// `n_samples` independent samples of the exponential mechanism on a small net (at most
/// [`SMALL_NET_MAX_POINTS`] points), returned as **canonical indices** (row numbers of
/// [`BallNet::points`]). For privacy audits and tests. The exponents are computed once (same
/// scorer code as [`sample`]); samples run in parallel, sample `i` drawing from the streams `i`
/// and `i + 2⁶³` of one fresh key drawn from `rng` (so the output does not depend on the thread
/// count), each a full Gumbel-max scan over the net in canonical order with the same key
/// computation and skip test as [`sample`].
///
/// # Errors
/// As [`sample`]; a net larger than [`SMALL_NET_MAX_POINTS`] (named `nu`).
pub fn sample_many(
    net: &BallNet,
    scorer: &Scorer<'_>,
    kappa: f64,
    exponent_bound: f64,
    n_samples: usize,
    rng: &mut DpRng,
) -> DpResult<Vec<u64>> {
    sample_many_opts(net, scorer, kappa, exponent_bound, n_samples, rng, true)
}

pub(crate) fn sample_many_opts(
    net: &BallNet,
    scorer: &Scorer<'_>,
    kappa: f64,
    exponent_bound: f64,
    n_samples: usize,
    rng: &mut DpRng,
    skip: bool,
) -> DpResult<Vec<u64>> {
    check_kappa_bound(kappa, exponent_bound)?;
    let sc = scores(net, scorer, SMALL_NET_MAX_POINTS).map_err(|e| match e {
        DpError::InvalidArgument {
            name: "max_points",
            reason,
        } => DpError::invalid(
            "nu",
            format!("sample_many is for small nets only: {reason}"),
        ),
        other => other,
    })?;
    let coords_of = |i: usize| -> Vec<i64> {
        // Only used for the error message: walk the net to the i-th point.
        net.points(SMALL_NET_MAX_POINTS)
            .map(|(c, _)| c.row(i).to_vec())
            .unwrap_or_default()
    };
    let mut a = Vec::with_capacity(sc.len());
    for (i, &s) in sc.iter().enumerate() {
        let v = kappa * s.abs();
        if !(v <= exponent_bound) {
            return Err(bound_violation(v, &coords_of(i), exponent_bound));
        }
        a.push(v);
    }
    let mut key = [0u8; 32];
    rng.fill_bytes(&mut key);
    let table = skip_table();
    let mut out = vec![0u64; n_samples];
    out.par_iter_mut().enumerate().for_each(|(i, slot)| {
        let mut st = Streams::new(&key, i as u64);
        let mut g = Gumbel {
            best_key: f64::NEG_INFINITY,
            skip,
            table: &table,
            j: 0,
        };
        *slot = g
            .scan(&mut st, &a)
            .expect("the first candidate always wins") as u64;
    });
    Ok(out)
}

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
//! auxiliary stream number = id + 2⁶³ (the construction of [`crate::noise::derive_streams`], with
//! non-consecutive stream numbers). Chunks
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
//! [`crate::kernels::kernel_predict`] for kernel sums) belongs in the caller's sensitivity slack.
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
//! [`KERNEL_BLOCK`] rows and scored with the parallel [`kernel_predict`] (fused, tiled, never more
//! than a 64×512 block of kernel values per thread in memory), whose cost dominates. Memory is
//! `O(WAVE_CHUNKS·d + threads·ROW_BLOCK)` (linear) or `O(KERNEL_BLOCK·d)` plus the kernel engine's
//! scratch (kernel sums), independent of `|S|`. `benches/expmech.rs` and
//! `benches/bench_expmech.py` measure the throughput.

// `!(a <= b)` is used on purpose throughout: it is true for NaN, which must be refused (or must
// not be skipped) exactly like a value above the bound.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use std::time::{Duration, Instant};

use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use rand_core::{Rng, SeedableRng};
use rayon::prelude::*;

use crate::error::{DpError, DpResult};
use crate::kernels::{kernel_predict, Kernel};
use crate::noise::DpRng;

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
/// Rows of one kernel-scoring block (one parallel [`kernel_predict`] call).
pub const KERNEL_BLOCK: usize = 4096;
/// Minimum wall time between two progress-hook calls.
pub const HOOK_INTERVAL: Duration = Duration::from_millis(100);
/// Largest net accepted by [`sample_many`], [`scores`] and [`exact_log_probs`].
pub const SMALL_NET_MAX_POINTS: u64 = 1 << 22;

use crate::fp::{
    BALL_PROJ_SHRINK as PROJ_SHRINK, LIBM_LN_ULPS, NET_INNER_SLACK as T_IN_SLACK,
    NET_SPACING_SHRINK as H_SHRINK, NET_THRESHOLD_SLACK as T_SLACK,
};
/// `((r+ν)/h)²` above this is refused before any integer conversion.
const MAX_RHO_SQ: f64 = 1.2676506002282294e30; // 2^100
/// Leading-zero counts above this switch to log-domain evaluation (see module docs).
const K_DIRECT_MAX: u64 = 1000;
/// Safety cap of the leading-zero count (a run of 16384 zero bits: probability 2^-16384).
const K_CAP: u64 = 16384;

// ------------------------------------------------------------------------------------------------
// Integer helpers
// ------------------------------------------------------------------------------------------------

/// `⌊√x⌋`, exact (float estimate corrected with integer arithmetic). `x < 2^102`.
#[inline]
fn isqrt(x: u128) -> u64 {
    if x < 1 << 52 {
        // exact: x is exact in f64 and a correctly rounded sqrt below 2^26 cannot round up
        // across an integer (checked against the integer correction in the tests)
        return (x as u64 as f64).sqrt() as u64;
    }
    let mut r = (x as f64).sqrt() as u128;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r as u64
}

#[inline(always)]
fn sq(c: i64) -> u128 {
    let a = c.unsigned_abs() as u128;
    a * a
}

/// `ln` of the volume of the unit ball in `ℝ^j` (recursion `V_j = V_{j−2}·2π/j`).
fn ln_unit_ball_volume(j: usize) -> f64 {
    let mut v = if j % 2 == 0 { 0.0 } else { 2f64.ln() };
    let mut i = if j % 2 == 0 { 2 } else { 3 };
    while i <= j {
        v += (2.0 * std::f64::consts::PI / i as f64).ln();
        i += 2;
    }
    v
}

/// `V_j·R^j` by products only (deterministic IEEE operations, no libm), saturating at 1e300.
fn ball_points_estimate(j: usize, radius: f64) -> f64 {
    let mut v = [1.0f64, 2.0];
    let mut out = 1.0f64;
    for i in 1..=j {
        let vi = if i == 1 {
            2.0
        } else {
            let prev = v[i % 2];
            prev * 2.0 * std::f64::consts::PI / i as f64
        };
        v[i % 2] = vi;
        let mut p = vi;
        for _ in 0..i {
            p *= radius;
            if p > 1e300 {
                p = 1e300;
            }
        }
        out = p;
    }
    out
}

// ------------------------------------------------------------------------------------------------
// The net
// ------------------------------------------------------------------------------------------------

/// The ν-net of the ball of radius `r` in `ℝ^d` (see the module docs for the construction, the
/// covering proof, the canonical order and the chunks).
#[derive(Debug, Clone)]
pub struct BallNet {
    d: usize,
    nu: f64,
    radius: f64,
    h: f64,
    /// Kept index vectors: `‖i‖² ≤ t`.
    t: u128,
    /// Not projected: `‖i‖² ≤ t_in`.
    t_in: u128,
    half: u64,
    /// `(2·half + 1)^j` for `j = 0..d`.
    box_pows: Vec<u128>,
    /// Chunk depth `p` (`0 ≤ p ≤ d − 1`) and width `U`.
    depth: usize,
    width: u64,
}

/// Exact counts returned by [`BallNet::count_limited`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetCount {
    /// Number of net points (index vectors).
    pub points: u64,
    /// Number of rows (values of the first `d − 1` coordinates).
    pub rows: u64,
}

/// A chunk of the index space (see the module docs).
#[derive(Debug, Clone)]
struct Chunk {
    /// The fixed first `p` coordinates.
    prefix: Vec<i64>,
    /// `Σ prefix²`.
    s: u128,
    /// Range `a..=b` of coordinate `p`.
    a: i64,
    b: i64,
    /// Position of the first index vector in the bounding box (the ChaCha stream number).
    id: u64,
}

/// Odometer state over index vectors (coordinates, partial sums of squares, per-level limits).
struct Odo {
    c: Vec<i64>,
    /// `s[j] = Σ_{i<j} c_i²`.
    s: Vec<u128>,
    lim: Vec<i64>,
}

impl BallNet {
    /// Build the net; errors name the parameter (`d`, `nu`, `radius`).
    ///
    /// # Errors
    /// `d = 0`; `nu` or `radius` not finite or `≤ 0`; a net whose bounding index box
    /// `(2·half + 1)^d` exceeds `2⁶³ − 1` (reported against `nu`: too fine for `radius` and `d`).
    pub fn new(d: usize, nu: f64, radius: f64) -> DpResult<Self> {
        if d == 0 {
            return Err(DpError::invalid("d", "must be >= 1, got 0"));
        }
        if !(nu.is_finite() && nu > 0.0) {
            return Err(DpError::invalid(
                "nu",
                format!("must be finite and > 0, got {nu:?}"),
            ));
        }
        if !(radius.is_finite() && radius > 0.0) {
            return Err(DpError::invalid(
                "radius",
                format!("must be finite and > 0, got {radius:?}"),
            ));
        }
        let h = 2.0 * nu / (d as f64).sqrt() * H_SHRINK;
        let rho = (radius + nu) / h;
        let rho_sq = rho * rho;
        if !(h.is_normal() && rho_sq.is_finite() && rho_sq <= MAX_RHO_SQ) {
            return Err(DpError::invalid(
                "nu",
                format!(
                    "nu = {nu} is too small for radius = {radius} and d = {d}: the net's index \
                     space overflows (((radius + nu)/h)^2 = {rho_sq:e} with h = 2 nu/sqrt(d))"
                ),
            ));
        }
        let t = (rho_sq * T_SLACK).floor() as u128;
        let rin = radius / h;
        let t_in = ((rin * rin * T_IN_SLACK).floor() as u128).min(t);
        let half = isqrt(t);
        let base = 2 * half as u128 + 1;
        let mut box_pows = Vec::with_capacity(d + 1);
        let mut p: u128 = 1;
        box_pows.push(p);
        for _ in 0..d {
            p = match p.checked_mul(base) {
                Some(v) if v <= i64::MAX as u128 => v,
                _ => {
                    return Err(DpError::invalid(
                        "nu",
                        format!(
                            "nu = {nu} is too small for radius = {radius} and d = {d}: the \
                             bounding index box (2*half + 1)^d with half = {half} exceeds 2^63 - 1"
                        ),
                    ))
                }
            };
            box_pows.push(p);
        }
        let mut net = BallNet {
            d,
            nu,
            radius,
            h,
            t,
            t_in,
            half,
            box_pows,
            depth: 0,
            width: 1,
        };
        net.plan_chunks();
        Ok(net)
    }

    /// Choose the chunk depth `p` and width `U` from `(d, T)` only: the largest `p` whose full
    /// slabs hold at least [`CHUNK_TARGET`] points (estimated), and `U` units of coordinate `p`.
    fn plan_chunks(&mut self) {
        let d = self.d;
        let rad = (self.t as f64).sqrt() + 0.5;
        let target = CHUNK_TARGET as f64;
        let mut depth = 0;
        for p in (0..d).rev() {
            if ball_points_estimate(d - p, rad) >= target {
                depth = p;
                break;
            }
        }
        let per_unit = ball_points_estimate(d - depth - 1, rad).max(1.0);
        let extent = 2 * self.half + 1;
        let width = ((target / per_unit).floor() as u64).clamp(1, extent);
        self.depth = depth;
        self.width = width;
    }

    /// Dimension `d`.
    pub fn dim(&self) -> usize {
        self.d
    }
    /// Covering radius `ν`.
    pub fn nu(&self) -> f64 {
        self.nu
    }
    /// Ball radius `r`.
    pub fn radius(&self) -> f64 {
        self.radius
    }
    /// Grid spacing `h = (2ν/√d)(1 − 2⁻³²)`.
    pub fn spacing(&self) -> f64 {
        self.h
    }
    /// `half = ⌊√T⌋`: every integer coordinate satisfies `|i_j| ≤ half`.
    pub fn half(&self) -> u64 {
        self.half
    }
    /// `T`: the index vector `i` is in the net iff `‖i‖² ≤ T`.
    pub fn threshold(&self) -> u128 {
        self.t
    }
    /// Size `(2·half + 1)^d` of the bounding index box (`≤ 2⁶³ − 1`).
    pub fn box_size(&self) -> u64 {
        self.box_pows[self.d] as u64
    }

    /// Volume estimate of the number of net points, `V_d·T^{d/2}` (`+inf` if it overflows).
    pub fn estimate(&self) -> f64 {
        let ln = ln_unit_ball_volume(self.d) + 0.5 * self.d as f64 * (self.t.max(1) as f64).ln();
        ln.exp().max(1.0)
    }

    /// Volume estimate of the number of rows, `V_{d−1}·T^{(d−1)/2}` (1 for `d = 1`).
    pub fn estimate_rows(&self) -> f64 {
        let j = self.d - 1;
        let ln = ln_unit_ball_volume(j) + 0.5 * j as f64 * (self.t.max(1) as f64).ln();
        ln.exp().max(1.0)
    }

    /// Whether the integer vector `coords` indexes a net point (`‖i‖² ≤ T`).
    pub fn contains(&self, coords: &[i64]) -> bool {
        coords.len() == self.d && coords.iter().map(|&c| sq(c)).sum::<u128>() <= self.t
    }

    /// Projection factor `f` for `‖i‖² = sqn` (1 inside, `min(1, r/‖g‖·(1 − 2⁻⁴⁸))` outside).
    #[inline]
    fn factor(&self, sqn: u128) -> f64 {
        if sqn <= self.t_in {
            1.0
        } else {
            let x = if sqn <= u64::MAX as u128 {
                sqn as u64 as f64
            } else {
                sqn as f64
            };
            self.factor_outside(x)
        }
    }

    /// The projection factor of a point with `‖i‖² = sqf > T_in` (given as a float).
    #[inline(always)]
    fn factor_outside(&self, sqf: f64) -> f64 {
        let f = self.radius / (self.h * sqf.sqrt()) * PROJ_SHRINK;
        if f < 1.0 {
            f
        } else {
            1.0
        }
    }

    /// The net point of the index vector `coords` (written into `out`).
    ///
    /// # Panics
    /// If the lengths differ from `d`.
    pub fn point_into(&self, coords: &[i64], out: &mut [f64]) {
        assert!(coords.len() == self.d && out.len() == self.d);
        let f = self.factor(coords.iter().map(|&c| sq(c)).sum());
        for (o, &c) in out.iter_mut().zip(coords) {
            *o = (c as f64 * self.h) * f;
        }
    }

    /// Snap a point `z` of the ball to the net: the nearest grid vector `i = round(z/h)` and its
    /// net point (projected into the ball as every net point is). For `‖z‖ ≤ radius` the grid
    /// vector lies within the net's threshold (`‖i h‖ ≤ radius + h√d/2 < radius + ν`).
    ///
    /// # Errors
    /// `z` of the wrong length or with a non-finite coordinate, or a coordinate whose grid index
    /// does not fit in `i64` (all named `z`).
    pub fn snap(&self, z: &[f64]) -> DpResult<(Vec<i64>, Array1<f64>)> {
        if z.len() != self.d {
            return Err(DpError::invalid("z", format!("must have length d = {}, got {}", self.d, z.len())));
        }
        let mut coords = Vec::with_capacity(self.d);
        for &v in z {
            let c = (v / self.h).round();
            if !(c.is_finite() && c.abs() < 2f64.powi(62)) {
                return Err(DpError::invalid("z", format!("coordinate {v:e} is not a finite point of the ball")));
            }
            coords.push(c as i64);
        }
        let point = self.point(&coords);
        Ok((coords, point))
    }

    /// The net point of the index vector `coords`.
    pub fn point(&self, coords: &[i64]) -> Array1<f64> {
        let mut out = Array1::zeros(self.d);
        self.point_into(coords, out.as_slice_mut().expect("contiguous"));
        out
    }

    // ---- enumeration ----

    fn odo(&self) -> Odo {
        Odo {
            c: vec![0; self.d],
            s: vec![0; self.d + 1],
            lim: vec![0; self.d],
        }
    }

    /// Set coordinates `from..to` to their lexicographically first admissible values.
    #[inline]
    fn odo_first(&self, o: &mut Odo, from: usize, to: usize) {
        for i in from..to {
            let l = isqrt(self.t - o.s[i]) as i64;
            o.lim[i] = l;
            o.c[i] = -l;
            o.s[i + 1] = o.s[i] + sq(l);
        }
    }

    /// Advance coordinates `from..to` to the next admissible values; `false` when exhausted.
    #[inline]
    fn odo_next(&self, o: &mut Odo, from: usize, to: usize) -> bool {
        let mut j = to;
        while j > from {
            j -= 1;
            if o.c[j] < o.lim[j] {
                o.c[j] += 1;
                o.s[j + 1] = o.s[j] + sq(o.c[j]);
                self.odo_first(o, j + 1, to);
                return true;
            }
        }
        false
    }

    /// Chunks in canonical order.
    fn chunks(&self) -> ChunkIter<'_> {
        ChunkIter {
            net: self,
            odo: self.odo(),
            started: false,
            done: false,
            a: 0,
            lim: -1,
        }
    }

    /// The row segments of a chunk, in canonical order.
    #[inline(always)]
    fn rows<'o>(&self, ch: &Chunk, o: &'o mut Odo) -> Rows<'_, 'o> {
        let p = self.depth;
        o.c[..p].copy_from_slice(&ch.prefix);
        o.s[p] = ch.s;
        Rows {
            net: self,
            o,
            cp: ch.a,
            b: ch.b,
            fresh: true,
            done: false,
        }
    }

    /// Call `f(row_prefix, Σ row_prefix², lo, hi)` for every row segment of the chunk, in order.
    #[inline(always)]
    fn for_each_row(&self, ch: &Chunk, o: &mut Odo, mut f: impl FnMut(&[i64], u128, i64, i64)) {
        let mut rows = self.rows(ch, o);
        while let Some((s, lo, hi)) = rows.next_row() {
            f(rows.prefix(), s, lo, hi);
        }
    }

    /// The interior part `[ilo, ihi]` (no projection) of the row segment `[lo, hi]` with prefix
    /// sum `s`; `ilo > ihi` when empty.
    #[inline(always)]
    fn interior_range(&self, s: u128, lo: i64, hi: i64) -> (i64, i64) {
        match self.interior(s) {
            Some(l) if lo.max(-l) <= hi.min(l) => (lo.max(-l), hi.min(l)),
            _ => (hi + 1, hi),
        }
    }

    /// Interior range `[-l, l]` of a row with prefix sum `s` (empty: `None`).
    #[inline(always)]
    fn interior(&self, s: u128) -> Option<i64> {
        if s <= self.t_in {
            Some(isqrt(self.t_in - s) as i64)
        } else {
            None
        }
    }

    /// Exact number of net points (sum of the row ranges, in parallel).
    pub fn count(&self) -> u64 {
        self.count_limited(u64::MAX).expect("no row limit").points
    }

    /// Exact point and row counts, walking at most about `max_rows` rows.
    ///
    /// # Errors
    /// Names `max_rows` once more than `max_rows` rows have been walked (checked between waves of
    /// chunks, so the work done is bounded by `max_rows` plus one wave).
    pub fn count_limited(&self, max_rows: u64) -> DpResult<NetCount> {
        let mut it = self.chunks();
        let mut total = NetCount { points: 0, rows: 0 };
        loop {
            let wave: Vec<Chunk> = it.by_ref().take(WAVE_CHUNKS).collect();
            if wave.is_empty() {
                return Ok(total);
            }
            let parts: Vec<NetCount> = wave
                .par_iter()
                .map(|ch| {
                    let mut o = self.odo();
                    let mut n = NetCount { points: 0, rows: 0 };
                    self.for_each_row(ch, &mut o, |_, _, lo, hi| {
                        n.points += (hi - lo) as u64 + 1;
                        n.rows += 1;
                    });
                    n
                })
                .collect();
            for p in parts {
                total.points += p.points;
                total.rows += p.rows;
            }
            if total.rows > max_rows {
                return Err(DpError::invalid(
                    "max_rows",
                    format!(
                        "the net has more than {max_rows} rows (estimate {:.3e} rows, {:.3e} \
                         points); raise the limit or use the estimate",
                        self.estimate_rows(),
                        self.estimate()
                    ),
                ));
            }
        }
    }

    /// Materialise the net in canonical order: integer coordinates (`n × d`) and net points
    /// (`n × d`). For tests and small nets only.
    ///
    /// # Errors
    /// Names `max_points` if the net has more points.
    pub fn points(&self, max_points: u64) -> DpResult<(Array2<i64>, Array2<f64>)> {
        let too_many = || {
            DpError::invalid(
                "max_points",
                format!(
                    "the net has more than {max_points} points (estimate {:.3e}); it is only \
                     materialised for small nets",
                    self.estimate()
                ),
            )
        };
        if self.estimate() > 2.0 * max_points as f64 + 1e6 {
            return Err(too_many());
        }
        let d = self.d;
        let mut coords: Vec<i64> = Vec::new();
        let mut pts: Vec<f64> = Vec::new();
        let mut n: u64 = 0;
        let mut o = self.odo();
        for ch in self.chunks() {
            let mut over = false;
            self.for_each_row(&ch, &mut o, |prefix, s, lo, hi| {
                if over {
                    return;
                }
                n += (hi - lo) as u64 + 1;
                if n > max_points {
                    over = true;
                    return;
                }
                for c in lo..=hi {
                    let f = self.factor(s + sq(c));
                    for &pc in prefix {
                        coords.push(pc);
                        pts.push((pc as f64 * self.h) * f);
                    }
                    coords.push(c);
                    pts.push((c as f64 * self.h) * f);
                }
            });
            if over {
                return Err(too_many());
            }
        }
        let n = n as usize;
        Ok((
            Array2::from_shape_vec((n, d), coords).expect("shape"),
            Array2::from_shape_vec((n, d), pts).expect("shape"),
        ))
    }
}

/// The row segments of one chunk (a lending iterator over the odometer state).
struct Rows<'n, 'o> {
    net: &'n BallNet,
    o: &'o mut Odo,
    /// Current value of coordinate `p` and its last value.
    cp: i64,
    b: i64,
    fresh: bool,
    done: bool,
}

impl Rows<'_, '_> {
    /// The next row segment `(Σ prefix², lo, hi)`; its prefix is [`Rows::prefix`].
    #[inline(always)]
    fn next_row(&mut self) -> Option<(u128, i64, i64)> {
        let net = self.net;
        let (d, p) = (net.d, net.depth);
        if self.done {
            return None;
        }
        if p == d - 1 {
            // the chunk is one segment of one row
            self.done = true;
            return Some((self.o.s[p], self.cp, self.b));
        }
        if self.fresh {
            self.fresh = false;
            self.o.c[p] = self.cp;
            self.o.s[p + 1] = self.o.s[p] + sq(self.cp);
            net.odo_first(self.o, p + 1, d - 1);
        } else if !net.odo_next(self.o, p + 1, d - 1) {
            if self.cp >= self.b {
                self.done = true;
                return None;
            }
            self.cp += 1;
            self.o.c[p] = self.cp;
            self.o.s[p + 1] = self.o.s[p] + sq(self.cp);
            net.odo_first(self.o, p + 1, d - 1);
        }
        let s_row = self.o.s[d - 1];
        let l = isqrt(net.t - s_row) as i64;
        Some((s_row, -l, l))
    }

    #[inline(always)]
    fn prefix(&self) -> &[i64] {
        &self.o.c[..self.net.d - 1]
    }
}

/// Lazy enumeration of the chunks in canonical order.
struct ChunkIter<'n> {
    net: &'n BallNet,
    odo: Odo,
    started: bool,
    done: bool,
    /// Next start of coordinate `p` and its limit under the current prefix.
    a: i64,
    lim: i64,
}

impl Iterator for ChunkIter<'_> {
    type Item = Chunk;

    fn next(&mut self) -> Option<Chunk> {
        if self.done {
            return None;
        }
        let net = self.net;
        let p = net.depth;
        if !self.started {
            self.started = true;
            net.odo_first(&mut self.odo, 0, p);
            self.lim = isqrt(net.t - self.odo.s[p]) as i64;
            self.a = -self.lim;
        } else if self.a > self.lim {
            if !net.odo_next(&mut self.odo, 0, p) {
                self.done = true;
                return None;
            }
            self.lim = isqrt(net.t - self.odo.s[p]) as i64;
            self.a = -self.lim;
        }
        let a = self.a;
        let b = (a as i128 + net.width as i128 - 1).min(self.lim as i128) as i64;
        self.a = b + 1;
        let half = net.half as i128;
        let d = net.d;
        let mut id: u128 = 0;
        for (j, &c) in self.odo.c[..p].iter().enumerate() {
            id += (c as i128 + half) as u128 * net.box_pows[d - 1 - j];
        }
        id += (a as i128 + half) as u128 * net.box_pows[d - 1 - p];
        Some(Chunk {
            prefix: self.odo.c[..p].to_vec(),
            s: self.odo.s[p],
            a,
            b,
            id: id as u64,
        })
    }
}

// ------------------------------------------------------------------------------------------------
// Scorers
// ------------------------------------------------------------------------------------------------

/// The score whose absolute value, times `κ`, is the exponent of the mechanism.
#[derive(Debug, Clone)]
pub enum Scorer<'a> {
    /// `score(z) = <z, u>` (`u` has length `d`): the linear kernel with `w_t − w*` collapsed to a
    /// `d`-vector.
    Linear { u: ArrayView1<'a, f64> },
    /// `score(z) = Σ_j coef_j K(z, points_j)` (`points` is `n × d`, `coef` has length `n`; `n = 0`
    /// gives the zero score).
    KernelSum {
        kernel: Kernel,
        points: ArrayView2<'a, f64>,
        coef: ArrayView1<'a, f64>,
    },
}

impl Scorer<'_> {
    /// Check shapes against the net's dimension and finiteness; errors name `u`, `points`,
    /// `coef` or the kernel parameter.
    pub fn validate(&self, d: usize) -> DpResult<()> {
        match self {
            Scorer::Linear { u } => {
                if u.len() != d {
                    return Err(DpError::invalid(
                        "u",
                        format!("must have length d = {d}, got {}", u.len()),
                    ));
                }
                if !u.iter().all(|v| v.is_finite()) {
                    return Err(DpError::invalid("u", "contains NaN or infinite values"));
                }
            }
            Scorer::KernelSum {
                kernel,
                points,
                coef,
            } => {
                kernel.validate()?;
                if points.ncols() != d {
                    return Err(DpError::invalid(
                        "points",
                        format!("must have d = {d} columns, got shape {:?}", points.shape()),
                    ));
                }
                if coef.len() != points.nrows() {
                    return Err(DpError::invalid(
                        "coef",
                        format!(
                            "must have length {} (the number of rows of points), got {}",
                            points.nrows(),
                            coef.len()
                        ),
                    ));
                }
                if !points.iter().all(|v| v.is_finite()) {
                    return Err(DpError::invalid(
                        "points",
                        "contains NaN or infinite values",
                    ));
                }
                if !coef.iter().all(|v| v.is_finite()) {
                    return Err(DpError::invalid("coef", "contains NaN or infinite values"));
                }
            }
        }
        Ok(())
    }
}

/// A block of scored candidates, in canonical order.
enum Block<'b> {
    /// A run of one row: last coordinates `c0, c0 + 1, …` under `prefix`.
    Run {
        prefix: &'b [i64],
        c0: i64,
        scores: &'b [f64],
    },
    /// Arbitrary points (`coords` is `n × d`, row-major).
    Points {
        d: usize,
        coords: &'b [i64],
        scores: &'b [f64],
    },
}

impl Block<'_> {
    #[inline(always)]
    fn scores(&self) -> &[f64] {
        match self {
            Block::Run { scores, .. } | Block::Points { scores, .. } => scores,
        }
    }

    /// Integer coordinates of the `l`-th candidate.
    fn coords(&self, l: usize) -> Vec<i64> {
        match self {
            Block::Run { prefix, c0, .. } => {
                let mut v = prefix.to_vec();
                v.push(c0 + l as i64);
                v
            }
            Block::Points { d, coords, .. } => coords[l * d..(l + 1) * d].to_vec(),
        }
    }
}

/// Scores every point of a chunk, block by block, in canonical order.
struct ChunkScorer<'s, 'a> {
    net: &'s BallNet,
    scorer: &'s Scorer<'a>,
    /// Linear: `u` as a contiguous vector.
    u: Vec<f64>,
    /// Kernel: block buffers.
    blk_coords: Vec<i64>,
    blk_points: Vec<f64>,
    odo: Odo,
}

impl<'s, 'a> ChunkScorer<'s, 'a> {
    fn new(net: &'s BallNet, scorer: &'s Scorer<'a>) -> Self {
        let (u, blk) = match scorer {
            Scorer::Linear { u } => (u.iter().copied().collect(), 0),
            Scorer::KernelSum { .. } => (Vec::new(), KERNEL_BLOCK * net.d),
        };
        ChunkScorer {
            net,
            scorer,
            u,
            blk_coords: Vec::with_capacity(blk),
            blk_points: Vec::with_capacity(blk),
            odo: net.odo(),
        }
    }

    /// Call `f` on consecutive blocks covering the chunk in canonical order (linear: runs of at
    /// most [`ROW_BLOCK`] points of one row, all interior or all projected; kernel: at most
    /// [`KERNEL_BLOCK`] points). The block structure depends on the chunk only.
    #[inline(always)]
    fn visit_blocks<F: FnMut(Block<'_>)>(&mut self, ch: &Chunk, mut f: F) {
        let net = self.net;
        match self.scorer {
            Scorer::Linear { .. } => {
                let u = &self.u[..];
                let (h, d) = (net.h, net.d);
                let ud = u[d - 1];
                let mut buf = [0.0f64; ROW_BLOCK];
                net.for_each_row(ch, &mut self.odo, |prefix, s, lo, hi| {
                    let row = LinearRow::new(prefix, u, h, ud);
                    let (ilo, ihi) = net.interior_range(s, lo, hi);
                    let mut c0 = lo;
                    while c0 <= hi {
                        let len = linear_window(net, &row, s, c0, hi, ilo, ihi, &mut buf);
                        f(Block::Run {
                            prefix,
                            c0,
                            scores: &buf[..len],
                        });
                        c0 += len as i64;
                    }
                });
            }
            Scorer::KernelSum {
                kernel,
                points,
                coef,
            } => {
                let d = net.d;
                let mut bc = std::mem::take(&mut self.blk_coords);
                let mut bp = std::mem::take(&mut self.blk_points);
                bc.clear();
                bp.clear();
                net.for_each_row(ch, &mut self.odo, |prefix, s, lo, hi| {
                    for c in lo..=hi {
                        let fac = net.factor(s + sq(c));
                        for &pc in prefix {
                            bc.push(pc);
                            bp.push((pc as f64 * net.h) * fac);
                        }
                        bc.push(c);
                        bp.push((c as f64 * net.h) * fac);
                        if bc.len() == KERNEL_BLOCK * d {
                            kernel_block(d, kernel, *points, *coef, &mut bc, &mut bp, &mut f);
                        }
                    }
                });
                kernel_block(d, kernel, *points, *coef, &mut bc, &mut bp, &mut f);
                self.blk_coords = bc;
                self.blk_points = bp;
            }
        }
    }
}

/// Per-row constants of the linear scorer: `score = base + (c·h)·u_d` (times the projection
/// factor for projected points).
struct LinearRow {
    base: f64,
    h: f64,
    ud: f64,
}

impl LinearRow {
    #[inline(always)]
    fn new(prefix: &[i64], u: &[f64], h: f64, ud: f64) -> Self {
        let mut base = 0.0;
        for (&c, &uj) in prefix.iter().zip(u) {
            base += (c as f64 * h) * uj;
        }
        LinearRow { base, h, ud }
    }
}

/// Scores of the window `c0 ..= min(hi, c0 + ROW_BLOCK − 1)` of a row segment whose interior part
/// is `[ilo, ihi]`, written to `buf`; returns the window length. The window is cut into its
/// projected / interior / projected parts (no square root for interior points).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn linear_window(
    net: &BallNet,
    row: &LinearRow,
    s: u128,
    c0: i64,
    hi: i64,
    ilo: i64,
    ihi: i64,
    buf: &mut [f64; ROW_BLOCK],
) -> usize {
    let len = ((hi - c0) as u64 + 1).min(ROW_BLOCK as u64) as usize;
    let c1 = c0 + len as i64 - 1;
    let (a, b) = (ilo.max(c0), ihi.min(c1));
    if a > b {
        linear_scores(net, row, s, c0, true, &mut buf[..len]);
    } else {
        let (i0, i1) = ((a - c0) as usize, (b - c0) as usize + 1);
        linear_scores(net, row, s, c0, true, &mut buf[..i0]);
        linear_scores(net, row, s, a, false, &mut buf[i0..i1]);
        linear_scores(net, row, s, b + 1, true, &mut buf[i1..len]);
    }
    len
}

/// Linear scores of the run `c0, c0 + 1, …` (`out.len()` points) of a row with prefix sum
/// `s_row`: all interior (one multiply-add each) or all projected (one square root and one
/// division more). Written as straight loops over `f64` lanes so that LLVM vectorises them;
/// `c0 + l` is exact in `f64` (`|c| ≤ 2⁵⁰`), and so is `‖i‖²` when `T < 2⁵³`, so the values
/// are the same as those of [`BallNet::factor`] on the integer `‖i‖²`.
#[inline(always)]
fn linear_scores(
    net: &BallNet,
    row: &LinearRow,
    s_row: u128,
    c0: i64,
    boundary: bool,
    out: &mut [f64],
) {
    let cf0 = c0 as f64;
    let (base, h, ud) = (row.base, row.h, row.ud);
    if !boundary {
        for (l, o) in out.iter_mut().enumerate() {
            let cf = cf0 + l as f64;
            *o = base + (cf * h) * ud;
        }
    } else if net.t < (1u128 << 53) {
        let sf = s_row as u64 as f64;
        for (l, o) in out.iter_mut().enumerate() {
            let cf = cf0 + l as f64;
            *o = (base + (cf * h) * ud) * net.factor_outside(sf + cf * cf);
        }
    } else {
        for (l, o) in out.iter_mut().enumerate() {
            let c = c0 + l as i64;
            *o = (base + (c as f64 * h) * ud) * net.factor(s_row + sq(c));
        }
    }
}

/// Score the buffered block of points with the fused kernel engine, report it, clear the block.
fn kernel_block<F: FnMut(Block<'_>)>(
    d: usize,
    kernel: &Kernel,
    points: ArrayView2<'_, f64>,
    coef: ArrayView1<'_, f64>,
    bc: &mut Vec<i64>,
    bp: &mut Vec<f64>,
    f: &mut F,
) {
    let n = bc.len() / d;
    if n == 0 {
        return;
    }
    let z = ArrayView2::from_shape((n, d), &bp[..]).expect("block shape");
    let sc = kernel_predict(z, points, coef, kernel);
    f(Block::Points {
        d,
        coords: bc,
        scores: sc.as_slice().expect("contiguous"),
    });
    bc.clear();
    bp.clear();
}

// ------------------------------------------------------------------------------------------------
// Gumbel keys
// ------------------------------------------------------------------------------------------------

/// `η = 2⁻⁴⁸ + 2⁻⁵¹·exponent_bound + 2⁻⁵⁰·746` (for [`LIBM_LN_ULPS`] ≤ 2; the `ln` error
/// coefficient `(2·LIBM_LN_ULPS + 1)·2⁻⁵³` is rounded up to `2⁻⁵⁰`): every computed Gumbel key is within `η` of the exact
/// key (see the module docs), so the floating-point sampler's probabilities are within a factor
/// `e^{±2η}` of the exact exponential mechanism's and it is `(ε_em + 4η)`-DP when the exact
/// mechanism is `ε_em`-DP.
pub fn key_error_bound(exponent_bound: f64) -> f64 {
    const _: () = assert!(LIBM_LN_ULPS <= 2.0, "key_error_bound's ln coefficient assumes LIBM_LN_ULPS <= 2");
    (2f64).powi(-48) + (2f64).powi(-51) * exponent_bound + (2f64).powi(-50) * 746.0
}

/// Main-stream lanes per buffer refill (a lane is 16 bits: one candidate).
const LANE_BUF: usize = 256;
/// Candidates tested per branch-free block.
const SCAN_BLOCK: usize = 8;
/// Stream-number bit separating a chunk's auxiliary stream from the main streams (chunk ids and
/// sample numbers are `< 2⁶³`).
const AUX_STREAM_BIT: u64 = 1 << 63;
/// log2 of the auxiliary continuation words reserved per candidate.
const AUX_WORDS_LOG2: u32 = 20;
/// First auxiliary word of the continuation region (64-bit word index).
const AUX_CONT_BASE: u64 = 1 << 62;

/// The two ChaCha20 streams of one chunk (or one [`sample_many`] sample).
///
/// * main stream: consecutive little-endian 16-bit lanes, exactly one per candidate in order
///   (bit 15 = branch bit, bits 14…0 = the first 15 bits of `U`);
/// * auxiliary stream, addressed by the candidate's number `j` (its position in the chunk):
///   64-bit word `j` supplies its 51 mantissa bits; words `2⁶² + j·2²⁰ + t` (`t = 0, 1, …`)
///   continue the leading-zero count of `U` when its 15 main-stream bits are all zero (probability
///   2⁻¹⁵). Auxiliary words are read (by seeking, or by stepping forward when the next evaluated
///   candidate is close) only when a candidate is evaluated, so what a candidate sees never
///   depends on which other candidates were skipped.
struct Streams {
    main: DpRng,
    aux: DpRng,
    /// Index of the auxiliary word the next `aux.next_u64()` returns (`u64::MAX`: unknown).
    aux_next: u64,
    buf: [u16; LANE_BUF],
    pos: usize,
}

impl Streams {
    /// Main stream `stream` and auxiliary stream `stream | 2⁶³` of ChaCha20 keyed with `key`.
    fn new(key: &[u8; 32], stream: u64) -> Self {
        debug_assert!(stream < AUX_STREAM_BIT);
        let mut main = DpRng::from_seed(*key);
        main.set_stream(stream);
        let mut aux = DpRng::from_seed(*key);
        aux.set_stream(stream | AUX_STREAM_BIT);
        Streams {
            main,
            aux,
            aux_next: 0,
            buf: [0; LANE_BUF],
            pos: LANE_BUF,
        }
    }

    /// Make sure `n ≤ 256` lanes are buffered; the rest of the buffer is discarded otherwise
    /// (discarding fresh random bits never biases anything, and the pattern depends only on the
    /// sequence of calls — never on the skip test or the thread count).
    #[inline(always)]
    fn ensure(&mut self, n: usize) {
        if self.pos + n > LANE_BUF {
            self.refill();
        }
    }

    #[inline(always)]
    fn next_lane(&mut self) -> u16 {
        self.ensure(1);
        let x = self.buf[self.pos];
        self.pos += 1;
        x
    }

    #[inline(never)]
    fn refill(&mut self) {
        // SAFETY: `[u16; 256]` is 512 initialised bytes with no invalid bit patterns, and `u8`
        // has alignment 1.
        let bytes: &mut [u8] =
            unsafe { std::slice::from_raw_parts_mut(self.buf.as_mut_ptr().cast::<u8>(), 512) };
        self.main.fill_bytes(bytes);
        for x in self.buf.iter_mut() {
            *x = u16::from_le(*x); // little-endian lanes on every platform (a no-op on x86)
        }
        self.pos = 0;
    }

    /// Auxiliary 64-bit word number `idx`.
    #[inline]
    fn aux_word(&mut self, idx: u64) -> u64 {
        if idx >= self.aux_next && idx - self.aux_next < 64 {
            while self.aux_next < idx {
                self.aux.next_u64();
                self.aux_next += 1;
            }
        } else {
            self.aux.set_word_pos(u128::from(idx) << 1); // in 32-bit words
        }
        self.aux_next = idx + 1;
        self.aux.next_u64()
    }
}

/// Upper bounds of the computed Gumbel variable given the lane: index `branch·16 + k`, `k` the
/// number of leading zeros among the 15 bits of `U` (`k = 15`: all zero, no bound).
type SkipTable = [f64; 32];

fn skip_table() -> SkipTable {
    let mut t = [f64::INFINITY; 32];
    let ln2 = std::f64::consts::LN_2;
    for k in 0..15 {
        t[k] = (k as f64 + 2.0) * ln2 + 1e-9;
        t[16 + k] = -((k as f64 + 1.0) * ln2).ln() + 1e-9;
    }
    t
}

/// Index into [`SkipTable`] of a lane: `branch·16 + k`.
#[inline(always)]
fn skip_index(x: u16) -> usize {
    // bits 14..0 of x move to 31..17; the sentinel at bit 16 caps the count at 15 (all zero)
    let k = ((u32::from(x) << 17) | (1u32 << 16)).leading_zeros() as usize;
    (usize::from(x) >> 15) * 16 + k
}

/// `2^-e` for `0 ≤ e ≤ 1022` (exact).
#[inline]
fn pow2_neg(e: u64) -> f64 {
    f64::from_bits((1023 - e) << 52)
}

/// The Gumbel variable `G = −ln E` of candidate number `j` with main-stream lane `x` (the
/// mantissa and, if the 15 bits of `U` are zero, the continuation of the leading-zero count come
/// from `j`'s auxiliary words). See the module docs.
#[inline(never)]
fn gumbel_eval(x: u16, j: u64, st: &mut Streams) -> f64 {
    let m = st.aux_word(j) >> 13;
    let geo = x & 0x7FFF;
    let k: u64 = if geo != 0 {
        u64::from(((u32::from(geo) << 17) | (1u32 << 16)).leading_zeros())
    } else {
        let base = AUX_CONT_BASE + (j << AUX_WORDS_LOG2);
        let mut k = 15u64;
        for t in 0..(1u64 << AUX_WORDS_LOG2) {
            let w = st.aux_word(base + t);
            if w != 0 {
                k += u64::from(w.leading_zeros());
                break;
            }
            k += 64;
            if k >= K_CAP {
                break;
            }
        }
        k.min(K_CAP)
    };
    gumbel_from_parts(x >> 15 == 1, k, m)
}

/// `G` from the branch, the leading-zero count `k` of `U` and the 51 mantissa bits `m`.
#[inline]
fn gumbel_from_parts(branch_b: bool, k: u64, m: u64) -> f64 {
    let f = (m as f64 + 0.5) * (1.0 / (1u64 << 51) as f64);
    if k <= K_DIRECT_MAX {
        // U/2 = (1 + f)·2^{-k-2}: W (branch A) or V (branch B), exact in binary64.
        let half_u = (1.0 + f) * pow2_neg(k + 2);
        let e = if branch_b {
            -half_u.ln()
        } else {
            -(-half_u).ln_1p()
        };
        -e.ln()
    } else {
        // −ln(U/2) in the log domain; branch A: E = W(1 + O(W)), W < 2^-1000.
        let l = (k + 2) as f64 * std::f64::consts::LN_2 - f.ln_1p();
        if branch_b {
            -l.ln()
        } else {
            l
        }
    }
}

/// Running Gumbel-max over the candidates of one chunk (or one [`sample_many`] sample).
struct Gumbel<'t> {
    best_key: f64,
    skip: bool,
    table: &'t SkipTable,
    /// Number of candidates offered so far (the next candidate's number `j`).
    j: u64,
}

impl Gumbel<'_> {
    /// Offer the candidates with exponents `a` in order; returns the position in `a` of the last
    /// one that became the new best (key strictly larger than the running best), if any. Blocks
    /// of 8 candidates are tested without branches; only a block with a possible winner is
    /// re-walked candidate by candidate, with the running best updated in order (so the result
    /// is the same as testing one by one).
    #[inline(always)]
    fn scan(&mut self, st: &mut Streams, a: &[f64]) -> Option<usize> {
        let mut last = None;
        let mut blocks = a.chunks_exact(SCAN_BLOCK);
        let mut i = 0;
        for blk in blocks.by_ref() {
            st.ensure(SCAN_BLOCK);
            let mut x = [0u16; SCAN_BLOCK];
            x.copy_from_slice(&st.buf[st.pos..st.pos + SCAN_BLOCK]);
            st.pos += SCAN_BLOCK;
            let mut hit = !self.skip;
            for l in 0..SCAN_BLOCK {
                hit |= !(blk[l] + self.table[skip_index(x[l])] < self.best_key);
            }
            if hit {
                for l in 0..SCAN_BLOCK {
                    if self.test(st, blk[l], x[l], self.j + l as u64) {
                        last = Some(i + l);
                    }
                }
            }
            self.j += SCAN_BLOCK as u64;
            i += SCAN_BLOCK;
        }
        for &v in blocks.remainder() {
            let x = st.next_lane();
            if self.test(st, v, x, self.j) {
                last = Some(i);
            }
            self.j += 1;
            i += 1;
        }
        last
    }

    /// Skip test, then (if not skipped) evaluation of candidate `j`.
    #[inline(always)]
    fn test(&mut self, st: &mut Streams, a: f64, x: u16, j: u64) -> bool {
        if self.skip && a + self.table[skip_index(x)] < self.best_key {
            return false;
        }
        self.evaluate(st, a, x, j)
    }

    #[inline(never)]
    fn evaluate(&mut self, st: &mut Streams, a: f64, x: u16, j: u64) -> bool {
        let key = a + gumbel_eval(x, j, st);
        if key > self.best_key {
            self.best_key = key;
            true
        } else {
            false
        }
    }
}

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

/// `f` on every chunk of a wave, results in chunk order. Linear scorer: chunks in parallel.
/// Kernel sums: chunks one after the other on the calling thread, each block scored by the
/// parallel [`kernel_predict`] (4096-row blocks keep both threads busy; running the parallel
/// engine inside a parallel chunk loop would only add scheduling and scratch-allocation overhead).
fn map_wave<T: Send>(
    net: &BallNet,
    scorer: &Scorer<'_>,
    wave: &[Chunk],
    f: impl Fn(&mut ChunkScorer<'_, '_>, &Chunk) -> T + Sync,
) -> Vec<T> {
    match scorer {
        Scorer::Linear { .. } => wave
            .par_iter()
            .map_init(|| ChunkScorer::new(net, scorer), |cs, ch| f(cs, ch))
            .collect(),
        Scorer::KernelSum { .. } => {
            let mut cs = ChunkScorer::new(net, scorer);
            wave.iter().map(|ch| f(&mut cs, ch)).collect()
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

/// Best candidate of a chunk.
struct ChunkBest {
    key: f64,
    coords: Vec<i64>,
    score: f64,
}

struct ChunkOut {
    n: u64,
    best: Option<ChunkBest>,
    violation: Option<(f64, Vec<i64>)>,
}

/// Scan one chunk: score its candidates, check the exponent bound, run the Gumbel-max over its
/// streams. Compiled twice — for AVX2 (+ LZCNT) and for the baseline — and dispatched on the CPU;
/// both builds perform the same IEEE operations (Rust never contracts `a·b + c` into an FMA), so
/// they return identical results.
#[allow(clippy::too_many_arguments)]
fn scan_chunk(
    cs: &mut ChunkScorer<'_, '_>,
    ch: &Chunk,
    kappa: f64,
    exponent_bound: f64,
    key: &[u8; 32],
    threshold: f64,
    table: &SkipTable,
    skip: bool,
) -> ChunkOut {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,lzcnt")]
        #[allow(clippy::too_many_arguments)]
        unsafe fn avx2(
            cs: &mut ChunkScorer<'_, '_>,
            ch: &Chunk,
            kappa: f64,
            exponent_bound: f64,
            key: &[u8; 32],
            threshold: f64,
            table: &SkipTable,
            skip: bool,
        ) -> ChunkOut {
            scan_chunk_impl(cs, ch, kappa, exponent_bound, key, threshold, table, skip)
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("lzcnt") {
            // SAFETY: the CPU supports AVX2 and LZCNT (checked just above).
            return unsafe { avx2(cs, ch, kappa, exponent_bound, key, threshold, table, skip) };
        }
    }
    scan_chunk_impl(cs, ch, kappa, exponent_bound, key, threshold, table, skip)
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn scan_chunk_impl(
    cs: &mut ChunkScorer<'_, '_>,
    ch: &Chunk,
    kappa: f64,
    exponent_bound: f64,
    key: &[u8; 32],
    threshold: f64,
    table: &SkipTable,
    skip: bool,
) -> ChunkOut {
    let mut sc = ChunkScan {
        st: Streams::new(key, ch.id),
        g: Gumbel {
            best_key: threshold,
            skip,
            table,
            j: 0,
        },
        kappa,
        exponent_bound,
        n: 0,
        best: None,
        violation: None,
    };
    match cs.scorer {
        Scorer::Linear { .. } => {
            // the hot path, written as plain loops (no closures) so that all of it is compiled
            // into the AVX2 build of the caller
            let net = cs.net;
            let u = &cs.u[..];
            let (h, ud) = (net.h, u[net.d - 1]);
            let mut buf = [0.0f64; ROW_BLOCK];
            let mut abuf = [0.0f64; ROW_BLOCK];
            let mut rows = net.rows(ch, &mut cs.odo);
            while let Some((s, lo, hi)) = rows.next_row() {
                let prefix = rows.prefix();
                let row = LinearRow::new(prefix, u, h, ud);
                let (ilo, ihi) = net.interior_range(s, lo, hi);
                let mut c0 = lo;
                while c0 <= hi {
                    let len = linear_window(net, &row, s, c0, hi, ilo, ihi, &mut buf);
                    sc.block(
                        &Block::Run {
                            prefix,
                            c0,
                            scores: &buf[..len],
                        },
                        &mut abuf[..len],
                    );
                    c0 += len as i64;
                }
            }
        }
        Scorer::KernelSum { .. } => {
            let mut abuf = vec![0.0f64; KERNEL_BLOCK];
            cs.visit_blocks(ch, |blk| {
                let len = blk.scores().len();
                sc.block(&blk, &mut abuf[..len]);
            });
        }
    }
    ChunkOut {
        n: sc.n,
        violation: sc.violation,
        best: sc.best.map(|(coords, score)| ChunkBest {
            key: sc.g.best_key,
            coords,
            score,
        }),
    }
}

/// State of the scan of one chunk.
struct ChunkScan<'t> {
    st: Streams,
    g: Gumbel<'t>,
    kappa: f64,
    exponent_bound: f64,
    n: u64,
    best: Option<(Vec<i64>, f64)>,
    violation: Option<(f64, Vec<i64>)>,
}

impl ChunkScan<'_> {
    /// Exponents of a block (`a` has the block's length), bound check, Gumbel-max.
    #[inline(always)]
    fn block(&mut self, blk: &Block<'_>, a: &mut [f64]) {
        let sc = blk.scores();
        let mut bad = false;
        for (ai, &v) in a.iter_mut().zip(sc) {
            let e = self.kappa * v.abs();
            *ai = e;
            bad |= !(e <= self.exponent_bound);
        }
        self.n += sc.len() as u64;
        if bad && self.violation.is_none() {
            let l = a
                .iter()
                .position(|&e| !(e <= self.exponent_bound))
                .expect("a violation");
            self.violation = Some((a[l], blk.coords(l)));
        }
        if let Some(l) = self.g.scan(&mut self.st, a) {
            self.best = Some((blk.coords(l), sc[l]));
        }
    }
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

// ------------------------------------------------------------------------------------------------
// Tests
// ------------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use crate::noise::rng_from_seed;
    use ndarray::array;

    fn never_stop() -> impl FnMut(&Progress) -> bool {
        |_| true
    }

    /// Deterministic uniform values in [-1, 1) (xorshift64*).
    fn uniform(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                s ^= s >> 12;
                s ^= s << 25;
                s ^= s >> 27;
                ((s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64) * 2.0
                    - 1.0
            })
            .collect()
    }

    /// Brute-force enumeration of the net's index vectors in lexicographic order.
    fn brute(net: &BallNet) -> Vec<Vec<i64>> {
        let d = net.dim();
        let hf = net.half() as i64;
        let mut out = Vec::new();
        let mut c = vec![-hf; d];
        loop {
            if net.contains(&c) {
                out.push(c.clone());
            }
            let mut j = d;
            loop {
                if j == 0 {
                    return out;
                }
                j -= 1;
                if c[j] < hf {
                    c[j] += 1;
                    for x in c.iter_mut().skip(j + 1) {
                        *x = -hf;
                    }
                    break;
                }
            }
        }
    }

    #[test]
    fn isqrt_is_exact() {
        for x in 0u128..5000 {
            let r = isqrt(x) as u128;
            assert!(r * r <= x && (r + 1) * (r + 1) > x);
        }
        // the f64 fast path around every square below 2^52 (sampled) and at its upper end
        let mut q: u128 = 1;
        while q * q < 1 << 52 {
            for x in [q * q - 1, q * q, q * q + 1] {
                let r = isqrt(x) as u128;
                assert!(r * r <= x && (r + 1) * (r + 1) > x, "{x}");
            }
            q += 1 + q / 1000;
        }
        for q in [(1u128 << 26) - 1, 1 << 26] {
            for x in [q * q - 1, q * q, q * q + 1] {
                let r = isqrt(x) as u128;
                assert!(r * r <= x && (r + 1) * (r + 1) > x, "{x}");
            }
        }
        for &x in &[
            (1u128 << 100) - 1,
            1u128 << 100,
            (1u128 << 62) + 12345,
            u64::MAX as u128,
        ] {
            let r = isqrt(x) as u128;
            assert!(r * r <= x && (r + 1) * (r + 1) > x, "{x}");
        }
    }

    #[test]
    fn validation_names_parameters() {
        let msg = |r: DpResult<BallNet>| r.unwrap_err().to_string();
        assert!(msg(BallNet::new(0, 0.1, 1.0)).starts_with("d"));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(msg(BallNet::new(2, bad, 1.0)).starts_with("nu"));
            assert!(msg(BallNet::new(2, 0.1, bad)).starts_with("radius"));
        }
        assert!(msg(BallNet::new(3, 1e-12, 1.0)).starts_with("nu"));
        assert!(msg(BallNet::new(1, 1e-300, 1e300)).starts_with("nu"));
        assert!(msg(BallNet::new(40, 0.01, 1.0)).starts_with("nu"));
        // a single point (the origin) in high dimension is fine
        let n = BallNet::new(3, 100.0, 1.0).unwrap();
        assert_eq!(n.count(), 1);
        assert_eq!(n.points(10).unwrap().1, Array2::<f64>::zeros((1, 3)));
        let net = BallNet::new(2, 0.3, 1.0).unwrap();
        let u = array![1.0, 2.0, 3.0];
        let sc = Scorer::Linear { u: u.view() };
        let mut rng = rng_from_seed(Some(1));
        let e = |k: f64, b: f64, sc: &Scorer<'_>, rng: &mut DpRng| {
            sample(&net, sc, k, b, rng, &mut never_stop())
                .unwrap_err()
                .to_string()
        };
        assert!(e(1.0, 10.0, &sc, &mut rng).starts_with("u"));
        let u2 = array![1.0, 2.0];
        let sc2 = Scorer::Linear { u: u2.view() };
        assert!(e(f64::NAN, 10.0, &sc2, &mut rng).starts_with("kappa"));
        assert!(e(-1.0, 10.0, &sc2, &mut rng).starts_with("kappa"));
        assert!(e(1.0, -1.0, &sc2, &mut rng).starts_with("exponent_bound"));
        assert!(e(1.0, 2e12, &sc2, &mut rng).starts_with("exponent_bound"));
        assert!(e(1.0, f64::INFINITY, &sc2, &mut rng).starts_with("exponent_bound"));
        let p = Array2::<f64>::zeros((3, 3));
        let c = Array1::<f64>::zeros(3);
        let ks = Scorer::KernelSum {
            kernel: Kernel::rbf(1.0).unwrap(),
            points: p.view(),
            coef: c.view(),
        };
        assert!(e(1.0, 1.0, &ks, &mut rng).starts_with("points"));
        let p = Array2::<f64>::zeros((3, 2));
        let c = Array1::<f64>::zeros(2);
        let ks = Scorer::KernelSum {
            kernel: Kernel::rbf(1.0).unwrap(),
            points: p.view(),
            coef: c.view(),
        };
        assert!(e(1.0, 1.0, &ks, &mut rng).starts_with("coef"));
        let c3 = Array1::<f64>::zeros(3);
        let ks = Scorer::KernelSum {
            kernel: Kernel::Rbf { gamma: -1.0 },
            points: p.view(),
            coef: c3.view(),
        };
        assert!(e(1.0, 1.0, &ks, &mut rng).starts_with("gamma"));
    }

    #[test]
    fn enumeration_matches_brute_force_and_counts() {
        for &(d, nu, r) in &[
            (1, 0.3, 1.0),
            (1, 0.01, 2.0),
            (2, 0.2, 1.0),
            (2, 0.05, 1.0),
            (3, 0.25, 1.0),
            (3, 0.1, 0.5),
            (4, 0.3, 1.0),
            (5, 0.5, 1.0),
            (2, 5.0, 1.0),
        ] {
            let net = BallNet::new(d, nu, r).unwrap();
            let want = brute(&net);
            let (coords, pts) = net.points(1 << 22).unwrap();
            assert_eq!(coords.nrows(), want.len(), "d={d} nu={nu}");
            for (row, w) in coords.rows().into_iter().zip(&want) {
                assert_eq!(row.to_vec(), *w);
            }
            assert_eq!(net.count(), want.len() as u64);
            let nc = net.count_limited(u64::MAX).unwrap();
            assert_eq!(nc.points, want.len() as u64);
            let est = net.estimate();
            assert!(est > 0.3 * want.len() as f64 && est < 3.0 * want.len() as f64 + 10.0);
            // every net point is in the ball and is the projection of its grid point
            for (c, p) in coords.rows().into_iter().zip(pts.rows()) {
                let n2: f64 = p.iter().map(|v| v * v).sum();
                assert!(n2.sqrt() <= r, "point outside the ball: {n2}");
                assert_eq!(net.point(c.as_slice().unwrap()), p.to_owned());
            }
            assert_eq!(net.count_limited(nc.rows).unwrap(), nc);
            assert!(net
                .count_limited(nc.rows - 1)
                .unwrap_err()
                .to_string()
                .starts_with("max_rows"));
        }
        let net = BallNet::new(3, 0.01, 1.0).unwrap();
        assert!(net
            .points(1000)
            .unwrap_err()
            .to_string()
            .starts_with("max_points"));
    }

    #[test]
    fn chunks_partition_the_net_in_order() {
        for &(d, nu, r) in &[
            (1, 1e-4, 1.0),
            (2, 1e-3, 1.0),
            (3, 0.02, 1.0),
            (4, 0.1, 1.0),
            (6, 0.3, 1.0),
        ] {
            let net = BallNet::new(d, nu, r).unwrap();
            let mut ids = Vec::new();
            let mut total = 0u64;
            let mut o = net.odo();
            let mut prev: Option<Vec<i64>> = None;
            for ch in net.chunks() {
                ids.push(ch.id);
                let mut size = 0;
                net.for_each_row(&ch, &mut o, |prefix, _, lo, hi| {
                    size += (hi - lo + 1) as u64;
                    let mut first = prefix.to_vec();
                    first.push(lo);
                    if let Some(p) = &prev {
                        assert!(*p < first, "rows out of order");
                    }
                    let mut last = prefix.to_vec();
                    last.push(hi);
                    prev = Some(last);
                });
                assert!(
                    size >= 1 && size <= 4 * CHUNK_TARGET as u64,
                    "chunk size {size}"
                );
                total += size;
            }
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids increase");
            assert_eq!(total, net.count());
            assert!(ids.iter().all(|&i| i < net.box_size()));
        }
    }

    /// Covering: random points of the ball (incl. the sphere) are within ν of a net point.
    #[test]
    fn covering_property() {
        for d in 1..=4usize {
            for &(nu, r) in &[(0.3, 1.0), (0.17, 0.8), (0.5, 2.0)] {
                let net = BallNet::new(d, nu, r).unwrap();
                let (_, pts) = net.points(1 << 20).unwrap();
                let dirs = uniform(400 * d, 7 + d as u64);
                let rads = uniform(400, 11 + d as u64);
                for i in 0..400 {
                    let v = &dirs[i * d..(i + 1) * d];
                    let nv = v.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-12);
                    let rad = if i % 4 == 0 {
                        r
                    } else {
                        r * (rads[i] * 0.5 + 0.5).powf(1.0 / d as f64)
                    };
                    let x: Vec<f64> = v.iter().map(|t| t / nv * rad).collect();
                    let best = pts
                        .rows()
                        .into_iter()
                        .map(|p| {
                            p.iter()
                                .zip(&x)
                                .map(|(a, b)| (a - b) * (a - b))
                                .sum::<f64>()
                        })
                        .fold(f64::INFINITY, f64::min)
                        .sqrt();
                    assert!(best <= nu, "d={d} nu={nu}: distance {best}");
                }
            }
        }
    }

    #[test]
    fn key_error_bound_formula() {
        assert_eq!(
            key_error_bound(0.0),
            2f64.powi(-48) + 746.0 * 2f64.powi(-50)
        );
        assert!(key_error_bound(1e12) < 5e-4);
    }

    /// The skip table bounds the computed G for every lane (exhaustively), at random and at the
    /// extreme mantissas.
    #[test]
    fn skip_table_bounds_gumbel() {
        let t = skip_table();
        let mut st = Streams::new(&[3; 32], 0);
        for x in 0..=u16::MAX {
            let idx = skip_index(x);
            let k = (idx % 16) as u64;
            assert_eq!(idx / 16, usize::from(x >> 15));
            let geo = x & 0x7FFF;
            assert_eq!(geo == 0, k == 15);
            if geo != 0 {
                assert!(geo >= 1 << (14 - k) && u32::from(geo) < 1u32 << (15 - k));
            }
            let g = gumbel_eval(x, u64::from(x), &mut st);
            assert!(
                g.is_finite() && g <= t[idx],
                "x={x:#x}: G={g} > bound {}",
                t[idx]
            );
            if k < 15 {
                for m in [0u64, (1 << 51) - 1] {
                    let g = gumbel_from_parts(x >> 15 == 1, k, m);
                    assert!(g <= t[idx], "x={x:#x} m={m}: G={g} > bound {}", t[idx]);
                }
            }
        }
    }

    /// G is standard Gumbel: Kolmogorov–Smirnov at α = 1e-6, plus the relative accuracy of E
    /// against the uniform it came from.
    #[test]
    fn gumbel_lanes_are_gumbel() {
        let mut st = Streams::new(&[5; 32], 1);
        let n = 400_000;
        let mut g: Vec<f64> = (0..n)
            .map(|j| {
                let x = st.next_lane();
                gumbel_eval(x, j as u64, &mut st)
            })
            .collect();
        g.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let mut dmax: f64 = 0.0;
        for (i, &x) in g.iter().enumerate() {
            let cdf = (-(-x).exp()).exp();
            dmax = dmax
                .max((cdf - i as f64 / n as f64).abs())
                .max((cdf - (i + 1) as f64 / n as f64).abs());
        }
        let crit = ((2.0f64 / 1e-6).ln() / (2.0 * n as f64)).sqrt();
        assert!(dmax < crit, "KS {dmax} >= {crit}");
        // relative accuracy: exp(-G) = E, and W = 1 - e^{-E} (branch A) / V = e^{-E} (branch B)
        for &(b, k, m) in &[
            (0u64, 0u64, 0u64),
            (0, 5, 777),
            (0, 11, (1 << 51) - 1),
            (1, 0, 3),
            (1, 7, 99),
            (0, 40, 5),
            (1, 900, 5),
            (0, 900, 5),
        ] {
            let f = (m as f64 + 0.5) / (1u64 << 51) as f64;
            let half_u = (1.0 + f) * 2f64.powi(-(k as i32) - 2);
            let gv = gumbel_from_parts(b == 1, k, m);
            let e = (-gv).exp();
            let back = if b == 1 { (-e).exp() } else { -(-e).exp_m1() };
            let rel = ((back - half_u) / half_u).abs();
            let tol = if b == 1 { 1e-13 * (1.0 + e) } else { 1e-13 };
            assert!(rel < tol, "b={b} k={k}: rel {rel}");
        }
        // the log-domain path joins the direct one continuously
        for b in [false, true] {
            let lo = gumbel_from_parts(b, K_DIRECT_MAX, 1 << 50);
            let hi = gumbel_from_parts(b, K_DIRECT_MAX + 1, 1 << 50);
            let f = ((1u64 << 50) as f64 + 0.5) / (1u64 << 51) as f64;
            let e = |k: u64| (k + 2) as f64 * std::f64::consts::LN_2 - f.ln_1p();
            let step = if b {
                (e(K_DIRECT_MAX + 1) / e(K_DIRECT_MAX)).ln()
            } else {
                std::f64::consts::LN_2
            };
            assert!(((lo - hi).abs() - step).abs() < 1e-9, "{b}: {lo} {hi}");
        }
    }

    fn chi_square_threshold(dof: usize) -> f64 {
        // Wilson–Hilferty upper 1e-6 quantile (z = 4.7534), plus a 5% margin.
        let k = dof as f64;
        let z = 4.753_424_3;
        1.05 * k * (1.0 - 2.0 / (9.0 * k) + z * (2.0 / (9.0 * k)).sqrt()).powi(3)
    }

    /// Pearson chi-square of observed counts against probabilities, merging cells with expected
    /// count < 5 (in ascending order of expectation).
    fn chi_square(counts: &[u64], logp: &[f64]) -> (f64, usize) {
        let n: u64 = counts.iter().sum();
        let mut cells: Vec<(f64, f64)> = logp
            .iter()
            .zip(counts)
            .map(|(&lp, &c)| (lp.exp() * n as f64, c as f64))
            .collect();
        cells.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
        let mut merged: Vec<(f64, f64)> = Vec::new();
        let (mut e, mut o) = (0.0, 0.0);
        for (ce, co) in cells {
            e += ce;
            o += co;
            if e >= 5.0 {
                merged.push((e, o));
                e = 0.0;
                o = 0.0;
            }
        }
        if e > 0.0 || o > 0.0 {
            if let Some(last) = merged.last_mut() {
                last.0 += e;
                last.1 += o;
            } else {
                merged.push((e, o));
            }
        }
        let stat = merged.iter().map(|(e, o)| (o - e) * (o - e) / e).sum();
        (stat, merged.len().saturating_sub(1).max(1))
    }

    fn scorers_for(d: usize) -> (Array1<f64>, Array2<f64>, Array1<f64>) {
        let u = Array1::from_vec(uniform(d, 3)) * 3.0;
        let p = Array2::from_shape_vec((7, d), uniform(7 * d, 4)).unwrap();
        let c = Array1::from_vec(uniform(7, 5)) * 2.0;
        (u, p, c)
    }

    /// sample() called repeatedly and sample_many() both match the exact probabilities, with and
    /// without the skip test.
    #[test]
    fn samples_follow_the_exact_mechanism() {
        for &(d, nu, kappa) in &[(1usize, 0.03, 3.0), (2, 0.25, 6.0), (2, 0.25, 0.3)] {
            let net = BallNet::new(d, nu, 1.0).unwrap();
            let (u, p, c) = scorers_for(d);
            let kern = Kernel::rbf(1.5).unwrap();
            let scs = [
                Scorer::Linear { u: u.view() },
                Scorer::KernelSum {
                    kernel: kern,
                    points: p.view(),
                    coef: c.view(),
                },
            ];
            let n_pts = net.count() as usize;
            assert!((30..400).contains(&n_pts), "{n_pts}");
            for sc in &scs {
                let lp = exact_log_probs(&net, sc, kappa, 1 << 20).unwrap();
                let bound = 100.0;
                for (skip, n_samples) in [(true, 60_000), (false, 15_000)] {
                    let mut rng = rng_from_seed(Some(42));
                    let idx = sample_many_opts(&net, sc, kappa, bound, n_samples, &mut rng, skip)
                        .unwrap();
                    let mut counts = vec![0u64; n_pts];
                    for i in idx {
                        counts[i as usize] += 1;
                    }
                    let (stat, dof) = chi_square(&counts, lp.as_slice().unwrap());
                    assert!(
                        stat < chi_square_threshold(dof),
                        "many d={d} kappa={kappa} skip={skip}: {stat} dof {dof}"
                    );
                }
                // sample(): map coords to canonical indices
                let (coords, _) = net.points(1 << 20).unwrap();
                let index_of = |c: &[i64]| {
                    coords
                        .rows()
                        .into_iter()
                        .position(|r| r.as_slice().unwrap() == c)
                        .unwrap()
                };
                let mut rng = rng_from_seed(Some(7));
                let mut counts = vec![0u64; n_pts];
                let opts = ScanOptions {
                    skip: true,
                    wave_chunks: Some(1),
                };
                for _ in 0..6000 {
                    let r = sample_opts(&net, sc, kappa, bound, &mut rng, &mut never_stop(), opts)
                        .unwrap()
                        .unwrap();
                    counts[index_of(&r.coords)] += 1;
                    assert_eq!(r.n_scored, n_pts as u64);
                }
                let (stat, dof) = chi_square(&counts, lp.as_slice().unwrap());
                assert!(
                    stat < chi_square_threshold(dof),
                    "sample d={d} kappa={kappa}: {stat} dof {dof}"
                );
            }
        }
    }

    fn run_sample(
        net: &BallNet,
        sc: &Scorer<'_>,
        kappa: f64,
        seed: u64,
        opts: ScanOptions,
    ) -> EmResult {
        let mut rng = rng_from_seed(Some(seed));
        sample_opts(net, sc, kappa, 1e6, &mut rng, &mut never_stop(), opts)
            .unwrap()
            .unwrap()
    }

    /// Output independent of the thread count, the wave size and the skip test (bit-identical).
    #[test]
    fn deterministic_across_threads_waves_and_skip() {
        let cases: Vec<(usize, f64)> = vec![(2, 0.01), (3, 0.05), (5, 0.25)];
        for (d, nu) in cases {
            let net = BallNet::new(d, nu, 1.0).unwrap();
            let (u, p, c) = scorers_for(d);
            let kern = Kernel::rbf(0.7).unwrap();
            let lin = Scorer::Linear { u: u.view() };
            let ks = Scorer::KernelSum {
                kernel: kern,
                points: p.view(),
                coef: c.view(),
            };
            let n = net.count();
            assert!(n > 10_000, "{n}");
            for (sc, kappa) in [(&lin, 40.0), (&lin, 0.0), (&ks, 5.0)] {
                let pool = |t: usize| {
                    rayon::ThreadPoolBuilder::new()
                        .num_threads(t)
                        .build()
                        .unwrap()
                };
                for seed in 0..3u64 {
                    let base = pool(1).install(|| {
                        run_sample(
                            &net,
                            sc,
                            kappa,
                            seed,
                            ScanOptions {
                                skip: false,
                                wave_chunks: None,
                            },
                        )
                    });
                    assert_eq!(base.n_scored, n);
                    for (t, skip, wave) in [
                        (2, true, None),
                        (1, true, Some(3)),
                        (2, true, Some(1)),
                        (2, false, Some(7)),
                    ] {
                        let r = pool(t).install(|| {
                            run_sample(
                                &net,
                                sc,
                                kappa,
                                seed,
                                ScanOptions {
                                    skip,
                                    wave_chunks: wave,
                                },
                            )
                        });
                        assert_eq!(r, base, "d={d} threads={t} skip={skip} wave={wave:?}");
                    }
                    let other = run_sample(&net, sc, kappa, seed + 100, ScanOptions::default());
                    assert!(net.contains(&other.coords));
                }
            }
        }
    }

    #[test]
    fn sample_many_is_thread_independent_and_skip_identical() {
        let net = BallNet::new(2, 0.1, 1.0).unwrap();
        let u = array![2.0, -1.0];
        let sc = Scorer::Linear { u: u.view() };
        let run = |t: usize, skip: bool| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .unwrap()
                .install(|| {
                    let mut rng = rng_from_seed(Some(3));
                    sample_many_opts(&net, &sc, 4.0, 10.0, 1000, &mut rng, skip).unwrap()
                })
        };
        let a = run(1, true);
        assert_eq!(a, run(2, true));
        assert_eq!(a, run(2, false));
    }

    #[test]
    fn result_is_consistent() {
        let net = BallNet::new(3, 0.05, 1.0).unwrap();
        let u = array![0.5, -2.0, 1.0];
        let sc = Scorer::Linear { u: u.view() };
        let r = run_sample(&net, &sc, 30.0, 1, ScanOptions::default());
        assert!(net.contains(&r.coords));
        assert_eq!(r.point, net.point(&r.coords));
        assert!((r.score - r.point.dot(&u)).abs() < 1e-12);
        // a sharp mechanism puts the sample near the maximiser of |<z,u>| (the direction ±u/|u|)
        let align = r.point.dot(&u).abs() / u.dot(&u).sqrt();
        assert!(align > 0.8, "{align}");
        let p = Array2::from_shape_vec((2, 3), vec![0.3, 0.1, 0.0, -0.2, 0.5, 0.1]).unwrap();
        let c = array![1.0, -0.5];
        let k = Kernel::rbf(2.0).unwrap();
        let ks = Scorer::KernelSum {
            kernel: k,
            points: p.view(),
            coef: c.view(),
        };
        let r = run_sample(&net, &ks, 10.0, 2, ScanOptions::default());
        let want: f64 = p
            .rows()
            .into_iter()
            .zip(c.iter())
            .map(|(row, &cj)| cj * k.eval(r.point.view(), row))
            .sum();
        assert!((r.score - want).abs() < 1e-12);
    }

    #[test]
    fn exponent_bound_is_enforced_never_clamped() {
        let net = BallNet::new(2, 0.2, 1.0).unwrap();
        let u = array![3.0, 4.0]; // max |<z,u>| = 5 on the unit ball
        let sc = Scorer::Linear { u: u.view() };
        let mut rng = rng_from_seed(Some(1));
        let e = sample(&net, &sc, 2.0, 9.0, &mut rng, &mut never_stop()).unwrap_err();
        assert!(e.to_string().starts_with("exponent_bound"), "{e}");
        assert!(sample(&net, &sc, 2.0, 10.0, &mut rng, &mut never_stop())
            .unwrap()
            .is_some());
        let e = sample_many(&net, &sc, 2.0, 9.0, 10, &mut rng).unwrap_err();
        assert!(e.to_string().starts_with("exponent_bound"), "{e}");
        // overflow to inf is refused too
        let big = array![1e308, 1e308];
        let sc = Scorer::Linear { u: big.view() };
        assert!(sample(&net, &sc, 1e10, 1e12, &mut rng, &mut never_stop()).is_err());
    }

    #[test]
    fn hook_can_cancel_and_sees_progress() {
        let net = BallNet::new(2, 0.001, 1.0).unwrap();
        let u = array![1.0, 0.0];
        let sc = Scorer::Linear { u: u.view() };
        let mut rng = rng_from_seed(Some(1));
        let mut calls = Vec::new();
        let r = sample(&net, &sc, 1.0, 2.0, &mut rng, &mut |p: &Progress| {
            calls.push(*p);
            true
        })
        .unwrap()
        .unwrap();
        assert_eq!(calls.last().unwrap().n_scored, r.n_scored);
        assert_eq!(r.n_scored, net.count());
        let mut stop = |_: &Progress| false;
        assert!(sample(&net, &sc, 1.0, 2.0, &mut rng, &mut stop)
            .unwrap()
            .is_none());
    }
}

//! Exact multinomial sampling from a probability vector.
//!
//! Given `p ∈ ℝ^P` (non-negative, summing to 1 within `sum_tol`) and `m ≥ 0`, draw `m` i.i.d.
//! indices and return them as `(distinct indices ascending, counts)` ([`multinomial_counts`]) or as
//! the sorted multiset, optionally uniformly shuffled ([`multinomial_draws`]). One algorithm, no
//! floating-point arithmetic on the sampling path.
//!
//! # What is sampled, exactly
//!
//! Let `N = 2^100` ([`QUANT_BITS`]) and `q_j = ⌊p_j · N⌋`, computed exactly from the bits of the
//! double `p_j` ([`quantize`]: mantissa shift, no rounding). Let `T = Σ_j q_j` (exact, `u128`) and
//! `C_j = Σ_{i<j} q_i`. Index `j` is drawn with probability **exactly** `q_j / T`:
//!
//! 1. `u` is an exactly uniform integer in `[0, T)` (Lemire, *Fast random integer generation in an
//!    interval*, ACM TOMACS 2019): a uniform 128-bit `x` is accepted unless the low half of `x·T`
//!    (mod 2^128) is below `t = 2^128 mod T`, and then `u = ⌊x·T / 2^128⌋`. Proof: `x` is accepted
//!    with `u(x) = u` iff the multiple `x·T` of `T` lies in `[u·2^128 + t, (u + 1)·2^128)`, a
//!    half-open interval of length `2^128 − t = ⌊2^128/T⌋·T`, which contains exactly `⌊2^128/T⌋`
//!    multiples of `T`; so every `u` has the same number of accepted `x`. The rejection
//!    probability is below `T / 2^128 < 2^-27`.
//! 2. `u` selects the unique `j` with `C_j ≤ u < C_j + q_j`, so `P[j] = q_j / T`; entries with
//!    `q_j = 0` (in particular `p_j = 0`) are never selected.
//! 3. `m` independent `u`'s give `m` i.i.d. indices. The map `u ↦ j(u)` is non-decreasing, so the
//!    sorted uniforms merged once against the running prefix sums `C_j` give the sorted multiset of
//!    indices; the counts are therefore exactly `Multinomial(m, (q_j / T)_j)`. A uniformly random
//!    permutation of the sorted multiset (exact Fisher–Yates) has the law of the i.i.d. sequence.
//!    (Accepted `x` are sorted instead of `u`: `x ↦ ⌊x·T/2^128⌋` is non-decreasing, and the top
//!    bits of `x` give perfectly balanced buckets.)
//!
//! Randomness: the only assumption is the one named in [`crate::mechanisms::noise::rng`] — ChaCha20
//! output is treated as independent fair bits.
//!
//! # Relative error bound (proof)
//!
//! Let `S = Σ_j p_j` (exact real sum of the doubles) and, for `p_j > 0`, `q_j = p_j N − f_j` with
//! `f_j ∈ [0, 1)`. Then `T = S N − F` with `F = Σ f_j ∈ [0, P)`. Write `δ_j = f_j / (p_j N)
//! ∈ [0, 2^-100 / p_j)` and `Δ = F / (S N) ∈ [0, D)` with `D = P · 2^-100 / S`. The ratio of the
//! sampled probability to the intended one is
//!
//! ```text
//!     r_j = (q_j / T) / (p_j / S) = (1 − δ_j) / (1 − Δ).
//! ```
//!
//! Upper side: `r_j − 1 = (Δ − δ_j)/(1 − Δ) ≤ Δ/(1 − Δ) < D/(1 − D)`. Lower side: `1/(1 − Δ) ≥ 1`,
//! so `r_j ≥ 1 − δ_j > 1 − 2^-100/p_j`. Hence, for every `p_j > 0` and `D < 1`,
//!
//! ```text
//!     |r_j − 1| < max(2^-100 / p_j, D / (1 − D)) ≤ 2^-100 / p_j + D + 2 D²     (D ≤ 1/2),
//! ```
//!
//! using `D/(1 − D) = D + D²/(1 − D) ≤ D + 2D²`. Entries with `p_j = 0` have probability exactly 0.
//! [`probability_error_bound`] returns the uniform bound
//!
//! ```text
//!     ε(p) = 1.01 · (2^-100 / p_min + D̂ + 2 D̂²),      D̂ = P · 2^-100 / Ŝ,
//! ```
//!
//! with `p_min` the smallest positive entry and `Ŝ` the floating-point sum; the factor 1.01 covers
//! the rounding of `Ŝ` (relative error `≤ (P − 1) 2^-53 < 2^-13` for `P < 2^40`) and of the three
//! floating-point operations. It returns `+∞` when some `0 < p_j < 2^-100` (such an entry may get
//! `q_j = 0`: probability 0, relative error 1) or when `D̂ ≥ 1/2`. For a vector the samplers
//! accept (`S ≈ 1`) with `p_min ≥ 10^-20` and `P ≤ 10^9`, `ε(p) < 10^-9`.
//!
//! # The sum check
//!
//! `p` is accepted when every entry is finite and `≥ 0` and `|T · 2^-100 − 1| ≤ sum_tol` (one
//! rounding of the exact integer `T` to a double). `T · 2^-100` is the exact sum of the quantised
//! entries and differs from `S` by less than `P · 2^-100`. `sum_tol` must lie in `[0, 1)`, so every
//! accepted entry is `< 2` and every partial sum fits in `u128`.
//!
//! # Algorithm and cost
//!
//! * Pass 1 (parallel over blocks of [`BLOCK`] entries): validation and the exact block sums of
//!   `q`; no `P`-length array is stored (only `⌈P / BLOCK⌉` block sums).
//! * Draws: `m` accepted `x` from up to 32 ChaCha streams given by [`derive_streams`] (the number
//!   of streams and their sizes depend only on `m`). Each stream histograms the top `kb` bits of
//!   its draws (`2^kb ≈ m / 1024` buckets); the output is laid out bucket-major and each stream
//!   scatters its draws into its own pieces; each bucket is then counting-sorted on the next bits
//!   and finished by an insertion sort (expected `O(1)` work per element): `O(m)` expected.
//! * Pass 2 (parallel over blocks that received a draw): the block's sorted `u`'s are merged against
//!   the running prefix sums of `q` inside the block, recomputed from `p`; a block is read only up
//!   to its last draw.
//!
//! The chunking depends only on `P` and `m`, and the output is a function of the sorted multiset,
//! so results are bit-identical for any number of rayon threads. Memory: about `32·m` bytes for
//! the draws plus `16·m` for the output; an `m` whose `48·(m + 1)` bytes the allocator refuses
//! up front is a `ValueError` naming `m` (a heuristic: the operating system may still overcommit).

use std::borrow::Cow;

use ndarray::ArrayView1;
use rand_core::Rng;
use rayon::prelude::*;

use crate::error::{DpError, DpResult};
use crate::mechanisms::noise::rng::{derive_streams, next_u128, DpRng};
use crate::numerics::simd_dispatch;

/// `q_j = ⌊p_j · 2^QUANT_BITS⌋`.
pub const QUANT_BITS: u32 = 100;

/// Default tolerance on `|Σ p − 1|`.
pub const DEFAULT_SUM_TOL: f64 = 1e-9;

/// Entries per block of pass 1 / pass 2 (block sums are the only per-`p` storage).
pub const BLOCK: usize = 8192;

/// Minimum number of draws per random stream.
const GEN_MIN: usize = 1 << 16;
/// Maximum number of random streams (more draws per stream beyond `32 · GEN_MIN`).
const MAX_GEN_CHUNKS: usize = 32;
/// Target number of draws per first-level bucket.
const BUCKET_TARGET: usize = 1024;
/// Cap on the number of first-level bucket bits.
const MAX_BUCKET_BITS: u32 = 32;

/// `2^-100` as a double (exact).
const TWO_POW_M100: f64 = f64::from_bits(((1023 - QUANT_BITS) as u64) << 52);

/// `⌊x · 2^100⌋` exactly, from the bits of `x`, for finite `0 ≤ x < 2` (`-0.0` gives 0).
///
/// `x = mant · 2^e` with an integer mantissa (`< 2^53`); the result is `mant` shifted by
/// `e + 100` (left: exact; right: the floor). For `x < 2`, `e + 100 ≤ 48`, so the result is
/// `< 2^101`.
#[inline]
pub fn quantize(x: f64) -> u128 {
    debug_assert!((0.0..2.0).contains(&x), "quantize: x = {x} out of [0, 2)");
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (mant, exp) = if biased == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), biased - 1075)
    };
    let shift = exp + QUANT_BITS as i32;
    if shift >= 0 {
        (mant as u128) << shift
    } else if shift > -64 {
        (mant >> (-shift) as u32) as u128
    } else {
        0
    }
}

/// `2^50 − 1`: `q = (a << 50) | b` with `a = q >> 50`, `b = q & SPLIT_MASK`.
const SPLIT_MASK: u64 = (1u64 << 50) - 1;

/// [`quantize`] in split form `(q >> 50, q & (2^50 − 1))`, with 64-bit operations only and no
/// branches (vectorisable), plus whether `x ∈ [0, 2)` (for other `x` the pair is meaningless).
///
/// With `x = mant · 2^(E − 1075)` (`E` the biased exponent, subnormals as `E = 1`), `q` is `mant`
/// shifted left by `sh = E − 975` when `sh ≥ 0` (`sh ≤ 48` for `x < 2`), right by `−sh` otherwise.
/// `t = mant >> min(−sh, 63)` (right shift only for `sh < 0`; `mant < 2^53`, so shifts by 53..63
/// give the correct 0), then `q = t << ls` with `ls = max(sh, 0)`: `a = t >> (50 − ls)` and
/// `b = (t << ls) mod 2^50`.
#[inline(always)]
fn split_quantize(x: f64) -> (u64, u64, bool) {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i64;
    let mant = (bits & ((1u64 << 52) - 1)) | (((biased != 0) as u64) << 52);
    let sh = biased.max(1) - 975;
    let ls = sh.clamp(0, 50) as u32;
    let rs = (-sh).clamp(0, 63) as u32;
    let t = mant >> rs;
    let a = t >> (50 - ls);
    let b = (t << ls) & SPLIT_MASK;
    let ok = (0.0..2.0).contains(&x);
    (a, b, ok)
}

// The two passes below run compiled for AVX2 when the CPU has it, the portable build otherwise
// (`crate::numerics::simd_dispatch!`); their integer results are identical.
simd_dispatch! {
    /// `(Σ a, Σ b, all x ∈ [0, 2))` over `xs` in split form (`len ≤ 2^13`, so neither sum wraps
    /// when every entry is valid).
    fn split_sums(xs: &[f64]) -> (u64, u64, bool) {
        let (mut sa, mut sb, mut ok) = (0u64, 0u64, true);
        for &x in xs {
            let (a, b, o) = split_quantize(x);
            sa = sa.wrapping_add(a);
            sb = sb.wrapping_add(b);
            ok &= o;
        }
        (sa, sb, ok)
    }
}

simd_dispatch! {
    /// Every entry of `xs` (all valid) as the two 64-bit halves of `q` (`lo`, `hi`); returns the
    /// split sums `(Σ a, Σ b)` of the batch.
    fn quantize_into(xs: &[f64], lo: &mut [u64], hi: &mut [u64]) -> (u64, u64) {
        let (mut sa, mut sb) = (0u64, 0u64);
        for ((&x, lo), hi) in xs.iter().zip(lo.iter_mut()).zip(hi.iter_mut()) {
            let (a, b, _) = split_quantize(x);
            // q = a·2^50 + b with b < 2^50: low word (a << 50) | b, high word a >> 14.
            *lo = (a << 50) | b;
            *hi = a >> 14;
            sa = sa.wrapping_add(a);
            sb = sb.wrapping_add(b);
        }
        (sa, sb)
    }
}

#[inline(always)]
fn join(a: u64, b: u64) -> u128 {
    ((a as u128) << 50) + b as u128
}

/// `(⌊a·b / 2^128⌋, a·b mod 2^128)`.
#[inline]
fn mul_wide(a: u128, b: u128) -> (u128, u128) {
    const M: u128 = u64::MAX as u128;
    let (a1, a0) = (a >> 64, a & M);
    let (b1, b0) = (b >> 64, b & M);
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 64) + (p01 & M) + (p10 & M);
    let lo = (mid << 64) | (p00 & M);
    let hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
    (hi, lo)
}

/// A uniform 128-bit `x` accepted by Lemire's test for the range `[0, n)`: `⌊x·n / 2^128⌋` is then
/// exactly uniform on `[0, n)` (module docs, step 1). `n > 0`.
#[inline]
fn accepted_x<R: Rng + ?Sized>(rng: &mut R, n: u128) -> u128 {
    debug_assert!(n > 0);
    loop {
        let x = next_u128(rng);
        let lo = x.wrapping_mul(n);
        // `2^128 mod n < n`: the division is only needed when `lo < n` (probability n / 2^128).
        if lo >= n || lo >= n.wrapping_neg() % n {
            return x;
        }
    }
}

/// Exactly uniform integer in `[0, n)` for `n > 0` (Lemire's nearly divisionless method).
#[inline]
pub fn uniform_u128_below<R: Rng + ?Sized>(rng: &mut R, n: u128) -> u128 {
    mul_wide(accepted_x(rng, n), n).0
}

/// Exactly uniform integer in `[0, n)` for `n > 0` (Lemire, 64-bit).
#[inline]
fn uniform_u64_below<R: Rng + ?Sized>(rng: &mut R, n: u64) -> u64 {
    debug_assert!(n > 0);
    loop {
        let prod = rng.next_u64() as u128 * n as u128;
        let lo = prod as u64;
        if lo >= n || lo >= n.wrapping_neg() % n {
            return (prod >> 64) as u64;
        }
    }
}

/// The `bits` bits of `x` just below its top `skip` bits (`skip + bits ≤ 64`; 0 when `bits = 0`).
#[inline]
fn bucket_key(x: u128, skip: u32, bits: u32) -> usize {
    debug_assert!(skip + bits <= 64);
    if bits == 0 {
        0
    } else {
        (((x >> 64) as u64) << skip >> (64 - bits)) as usize
    }
}

/// `⌈log2 n⌉` for `n ≥ 1`.
#[inline]
fn ceil_log2(n: usize) -> u32 {
    if n <= 1 {
        0
    } else {
        usize::BITS - (n - 1).leading_zeros()
    }
}

/// A double formatted like Python's `repr` (`nan`, `inf`, `-inf`, `0.5`, `1e-300`).
fn show(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        format!("{x:?}")
    }
}

fn bad_entry(p: &[f64], i: usize) -> DpError {
    DpError::invalid(
        "p",
        format!(
            "p[{i}] = {}: every probability must be finite and >= 0",
            show(p[i])
        ),
    )
}

/// Check `sum_tol ∈ [0, 1)`.
pub fn check_sum_tol(sum_tol: f64) -> DpResult<()> {
    if sum_tol.is_finite() && (0.0..1.0).contains(&sum_tol) {
        Ok(())
    } else {
        Err(DpError::invalid(
            "sum_tol",
            format!("must be finite and lie in [0, 1), got {}", show(sum_tol)),
        ))
    }
}

/// Result of the validation/quantisation pass over one block.
struct BlockScan {
    sum: u128,
    first_bad: Option<usize>,
    first_large: Option<usize>,
}

fn scan_block(base: usize, xs: &[f64]) -> BlockScan {
    let (sa, sb, ok) = split_sums(xs);
    if ok {
        return BlockScan {
            sum: join(sa, sb),
            first_bad: None,
            first_large: None,
        };
    }
    let mut sum = 0u128;
    let mut first_large = None;
    for (i, &x) in xs.iter().enumerate() {
        if (0.0..2.0).contains(&x) {
            sum += quantize(x);
        } else if x.is_finite() && x > 0.0 {
            first_large.get_or_insert(base + i);
        } else {
            return BlockScan {
                sum,
                first_bad: Some(base + i),
                first_large,
            };
        }
    }
    BlockScan {
        sum,
        first_bad: None,
        first_large,
    }
}

/// A validated probability vector with the exact prefix sums of its quantised entries at block
/// boundaries.
pub struct Quantized<'a> {
    p: &'a [f64],
    /// `block_starts[b] = Σ_{j < b·BLOCK} q_j`; the last entry is `T`.
    block_starts: Vec<u128>,
}

impl Quantized<'_> {
    /// `T = Σ_j q_j`.
    pub fn total(&self) -> u128 {
        *self.block_starts.last().expect("at least one block")
    }
}

/// Pass 1: validate `p` (non-empty, entries finite and `≥ 0`, `|T·2^-100 − 1| ≤ sum_tol`) and
/// compute the exact block sums of `q`. Errors name `p` (with the first offending index) or
/// `sum_tol`.
pub fn prepare(p: &[f64], sum_tol: f64) -> DpResult<Quantized<'_>> {
    check_sum_tol(sum_tol)?;
    if p.is_empty() {
        return Err(DpError::invalid(
            "p",
            "must be a non-empty probability vector, got length 0",
        ));
    }
    let scans: Vec<BlockScan> = p
        .par_chunks(BLOCK)
        .enumerate()
        .map(|(b, xs)| scan_block(b * BLOCK, xs))
        .collect();
    if let Some(i) = scans.iter().find_map(|s| s.first_bad) {
        return Err(bad_entry(p, i));
    }
    if let Some(i) = scans.iter().find_map(|s| s.first_large) {
        return Err(DpError::invalid(
            "p",
            format!(
                "must sum to 1 within sum_tol = {sum_tol:e}, but p[{i}] = {} alone exceeds 1 + sum_tol",
                show(p[i])
            ),
        ));
    }
    let mut block_starts = Vec::with_capacity(scans.len() + 1);
    let mut acc = 0u128;
    block_starts.push(0);
    for s in &scans {
        acc = acc.checked_add(s.sum).ok_or_else(|| {
            DpError::invalid(
                "p",
                format!("must sum to 1 within sum_tol = {sum_tol:e}, got a sum above 2^27"),
            )
        })?;
        block_starts.push(acc);
    }
    let sum = acc as f64 * TWO_POW_M100;
    let within = (sum - 1.0).abs() <= sum_tol;
    if !within {
        return Err(DpError::invalid(
            "p",
            format!(
                "must sum to 1 within sum_tol = {sum_tol:e} (|sum - 1| <= sum_tol), got sum {} \
                 (exact sum of the entries truncated to multiples of 2^-100)",
                show(sum)
            ),
        ));
    }
    Ok(Quantized { p, block_starts })
}

/// The exact quantised weights `(q, T)` (`q_j = ⌊p_j · 2^100⌋`, `T = Σ q_j`) after the same
/// validation as the samplers: index `j` is drawn with probability exactly `q_j / T`.
pub fn quantized_weights(p: ArrayView1<'_, f64>, sum_tol: f64) -> DpResult<(Vec<u128>, u128)> {
    let p = contiguous(&p);
    let q = prepare(&p, sum_tol)?;
    Ok((p.iter().map(|&x| quantize(x)).collect(), q.total()))
}

/// `(draws per stream, number of streams, first-level bucket bits)`: a function of `m` only.
fn gen_plan(m: usize) -> (usize, usize, u32) {
    let g = GEN_MIN.max(m.div_ceil(MAX_GEN_CHUNKS));
    let n_chunks = m.div_ceil(g);
    let kb = ceil_log2(m.div_ceil(BUCKET_TARGET)).min(MAX_BUCKET_BITS);
    (g, n_chunks, kb)
}

/// One stream's accepted draws (in generation order) and their first-level bucket histogram.
fn gen_chunk(rng: &mut DpRng, len: usize, n: u128, kb: u32) -> (Vec<u128>, Vec<usize>) {
    let raw: Vec<u128> = (0..len).map(|_| accepted_x(rng, n)).collect();
    let mut hist = vec![0usize; 1usize << kb];
    for &x in &raw {
        hist[bucket_key(x, 0, kb)] += 1;
    }
    (raw, hist)
}

fn insertion_sort(v: &mut [u128]) {
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && v[j - 1] > x {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
    }
}

/// Sort one first-level bucket in place (counting sort on the next bits through `scratch`, then
/// insertion sort of the nearly sorted result) and map each `x` to its uniform `⌊x·n / 2^128⌋`.
fn sort_bucket(v: &mut [u128], kb: u32, n: u128, scratch: &mut Vec<u128>) {
    let len = v.len();
    if len > 32 {
        let b2 = ceil_log2(len).min(64 - kb);
        let mut pos = vec![0usize; (1usize << b2) + 1];
        for &x in v.iter() {
            pos[bucket_key(x, kb, b2) + 1] += 1;
        }
        for i in 1..pos.len() {
            pos[i] += pos[i - 1];
        }
        scratch.clear();
        scratch.resize(len, 0);
        for &x in v.iter() {
            let s = bucket_key(x, kb, b2);
            scratch[pos[s]] = x;
            pos[s] += 1;
        }
        v.copy_from_slice(scratch);
    }
    insertion_sort(v);
    for x in v.iter_mut() {
        *x = mul_wide(*x, n).0;
    }
}

/// `m` i.i.d. exactly uniform integers in `[0, n)`, sorted ascending, followed by the sentinel
/// `u128::MAX` (length `m + 1`).
///
/// Each stream generates its accepted `x` and histograms their top `kb` bits; the output is laid
/// out bucket-major (bucket `k`: stream 0's share, stream 1's share, ...) and every stream
/// scatters its draws into its own pieces; then every bucket is sorted in place. The layout
/// depends only on the draws, and the sorted result only on their multiset.
fn sorted_uniforms(n: u128, m: usize, rng: &mut DpRng) -> Vec<u128> {
    if m == 0 {
        return vec![u128::MAX];
    }
    let (g, n_chunks, kb) = gen_plan(m);
    let nb = 1usize << kb;
    let streams = derive_streams(rng, n_chunks);
    let chunks: Vec<(Vec<u128>, Vec<usize>)> = streams
        .into_par_iter()
        .enumerate()
        .map(|(c, mut s)| gen_chunk(&mut s, g.min(m - c * g), n, kb))
        .collect();
    let mut out = vec![0u128; m + 1];
    out[m] = u128::MAX;
    {
        let mut pieces: Vec<Vec<&mut [u128]>> =
            (0..n_chunks).map(|_| Vec::with_capacity(nb)).collect();
        let mut rest = &mut out[..m];
        for k in 0..nb {
            for (c, (_, hist)) in chunks.iter().enumerate() {
                let (head, tail) = std::mem::take(&mut rest).split_at_mut(hist[k]);
                pieces[c].push(head);
                rest = tail;
            }
        }
        pieces
            .into_par_iter()
            .zip(&chunks)
            .for_each(|(mut mine, (raw, _))| {
                let mut fill = vec![0usize; nb];
                for &x in raw {
                    let k = bucket_key(x, 0, kb);
                    mine[k][fill[k]] = x;
                    fill[k] += 1;
                }
            });
    }
    let sizes = (0..nb).map(|k| chunks.iter().map(|(_, hist)| hist[k]).sum::<usize>());
    let buckets = split_lengths(&mut out[..m], sizes);
    drop(chunks);
    buckets
        .into_par_iter()
        .for_each_init(Vec::new, |scratch, v| sort_bucket(v, kb, n, scratch));
    out
}

/// Entries per mini-batch of the merge (quantised together, vectorised).
const MINI: usize = 256;

/// Merge one block's sorted uniforms against the running prefix sums of the block, calling
/// `emit(index, count)` for every drawn index in ascending order. `us[..n]` (`n = us.len() - 1 ≥ 1`) are the block's uniforms, all in
/// `[start, start + Σ_block q)`; `us[n]` is a sentinel `≥` the block's end. The block is quantised
/// in mini-batches of [`MINI`] entries; a mini-batch without a uniform is skipped after its sum.
fn merge_block(
    xs: &[f64],
    base: usize,
    start: u128,
    us: &[u128],
    mut emit: impl FnMut(i64, usize),
) {
    let n = us.len() - 1;
    let mut lo = [0u64; MINI];
    let mut hi = [0u64; MINI];
    let mut k = 0usize;
    let mut next = us[0];
    let mut end = start;
    for (ci, chunk) in xs.chunks(MINI).enumerate() {
        let (sa, sb) = quantize_into(chunk, &mut lo, &mut hi);
        let batch_end = end + join(sa, sb);
        if next >= batch_end {
            end = batch_end;
            continue;
        }
        for (i, (&ql, &qh)) in lo[..chunk.len()].iter().zip(&hi[..chunk.len()]).enumerate() {
            end += ((qh as u128) << 64) | ql as u128;
            if next < end {
                let k0 = k;
                k += 1;
                while us[k] < end {
                    k += 1;
                }
                next = us[k];
                emit((base + ci * MINI + i) as i64, k - k0);
            }
        }
        debug_assert_eq!(end, batch_end);
        if k == n {
            break;
        }
    }
    debug_assert_eq!(
        k, n,
        "every uniform of the block lies below the block's end"
    );
}

/// The blocks that received uniforms, as `(block, lo, hi)` with `us[lo..hi]` the block's uniforms
/// (`us[..m]` sorted, `us[m] = u128::MAX`). The ranges are consecutive and cover `0..m`.
fn block_ranges(q: &Quantized<'_>, us: &[u128]) -> Vec<(usize, usize, usize)> {
    let m = us.len() - 1;
    let starts = &q.block_starts;
    let bounds: Vec<usize> = starts
        .iter()
        .map(|&s| us[..m].partition_point(|&u| u < s))
        .collect();
    debug_assert_eq!(bounds[starts.len() - 1], m);
    (0..starts.len() - 1)
        .filter(|&b| bounds[b] < bounds[b + 1])
        .map(|b| (b, bounds[b], bounds[b + 1]))
        .collect()
}

/// Split `v` into consecutive pieces of the given lengths.
fn split_lengths<T>(mut v: &mut [T], lengths: impl Iterator<Item = usize>) -> Vec<&mut [T]> {
    lengths
        .map(|len| {
            let (head, tail) = std::mem::take(&mut v).split_at_mut(len);
            v = tail;
            head
        })
        .collect()
}

/// Pass 2 for one block (`us[lo..=hi]` includes the next uniform or the sentinel).
fn merge_range(
    q: &Quantized<'_>,
    us: &[u128],
    (b, lo, hi): (usize, usize, usize),
    emit: impl FnMut(i64, usize),
) {
    let first = b * BLOCK;
    let last = (first + BLOCK).min(q.p.len());
    merge_block(
        &q.p[first..last],
        first,
        q.block_starts[b],
        &us[lo..=hi],
        emit,
    );
}

/// Pass 2, counts: the distinct indices and counts of the sorted uniforms `us[..m]` (all `< T`),
/// `us[m] = u128::MAX`. Each block writes at the offset of its first uniform (it has at most as
/// many distinct indices as uniforms); the pieces are then compacted in order.
fn merge_counts(q: &Quantized<'_>, us: &[u128]) -> (Vec<i64>, Vec<i64>) {
    let m = us.len() - 1;
    let ranges = block_ranges(q, us);
    let mut idx = vec![0i64; m];
    let mut cnt = vec![0i64; m];
    let lens = || ranges.iter().map(|&(_, lo, hi)| hi - lo);
    let widths: Vec<usize> = split_lengths(&mut idx, lens())
        .into_par_iter()
        .zip(split_lengths(&mut cnt, lens()))
        .zip(&ranges)
        .map(|((is, cs), &r)| {
            let mut w = 0;
            merge_range(q, us, r, |j, c| {
                is[w] = j;
                cs[w] = c as i64;
                w += 1;
            });
            w
        })
        .collect();
    let mut dst = 0;
    for (&(_, lo, _), w) in ranges.iter().zip(widths) {
        idx.copy_within(lo..lo + w, dst);
        cnt.copy_within(lo..lo + w, dst);
        dst += w;
    }
    idx.truncate(dst);
    cnt.truncate(dst);
    if dst < m / 2 {
        idx.shrink_to_fit();
        cnt.shrink_to_fit();
    }
    (idx, cnt)
}

/// Pass 2, draws: the sorted multiset of indices (each block fills the positions of its uniforms).
fn merge_draws(q: &Quantized<'_>, us: &[u128]) -> Vec<i64> {
    let m = us.len() - 1;
    let ranges = block_ranges(q, us);
    let mut out = vec![0i64; m];
    split_lengths(&mut out, ranges.iter().map(|&(_, lo, hi)| hi - lo))
        .into_par_iter()
        .zip(&ranges)
        .for_each(|(piece, &r)| {
            let mut pos = 0;
            merge_range(q, us, r, |j, c| {
                piece[pos..pos + c].fill(j);
                pos += c;
            });
        });
    out
}

fn contiguous<'a>(p: &'a ArrayView1<'_, f64>) -> Cow<'a, [f64]> {
    match p.as_slice() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(p.to_vec()),
    }
}

/// Refuse an `m` whose working memory (`48·(m + 1)` bytes) the allocator cannot even reserve,
/// instead of aborting the process later.
fn check_memory(m: usize) -> DpResult<()> {
    let too_large = || {
        DpError::invalid(
            "m",
            format!("too large: {m} draws need about 48·m bytes of memory"),
        )
    };
    let bytes = m
        .checked_add(1)
        .and_then(|v| v.checked_mul(48))
        .ok_or_else(too_large)?;
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(bytes).map_err(|_| too_large())
}

/// Pass 1, the sorted uniforms (length `m + 1` with the sentinel), or `None` when `m = 0`.
fn prepare_and_draw<'a>(
    p: &'a [f64],
    m: usize,
    sum_tol: f64,
    rng: &mut DpRng,
) -> DpResult<(Quantized<'a>, Option<Vec<u128>>)> {
    let q = prepare(p, sum_tol)?;
    check_memory(m)?;
    let us = (m > 0).then(|| sorted_uniforms(q.total(), m, rng));
    Ok((q, us))
}

/// `m` i.i.d. draws from `p` (index `j` with probability exactly `q_j / T`, module docs) as
/// `(indices, counts)`: the distinct drawn indices ascending and their counts (summing to `m`).
///
/// Consumes 256 bits of `rng` when `m > 0` (nothing when `m = 0`). Errors name `p` or `sum_tol`.
pub fn multinomial_counts(
    p: ArrayView1<'_, f64>,
    m: usize,
    sum_tol: f64,
    rng: &mut DpRng,
) -> DpResult<(Vec<i64>, Vec<i64>)> {
    let p = contiguous(&p);
    match prepare_and_draw(&p, m, sum_tol, rng)? {
        (q, Some(us)) => Ok(merge_counts(&q, &us)),
        (_, None) => Ok((Vec::new(), Vec::new())),
    }
}

/// The `m` i.i.d. draws themselves: the sorted multiset of indices (`shuffle = false`), or a
/// uniformly random permutation of it (exact Fisher–Yates with Lemire's exact bounded integers),
/// which has the law of the i.i.d. sequence. For the same generator state the multiset equals
/// [`multinomial_counts`]' output.
pub fn multinomial_draws(
    p: ArrayView1<'_, f64>,
    m: usize,
    shuffle: bool,
    sum_tol: f64,
    rng: &mut DpRng,
) -> DpResult<Vec<i64>> {
    let p = contiguous(&p);
    let mut out = match prepare_and_draw(&p, m, sum_tol, rng)? {
        (q, Some(us)) => merge_draws(&q, &us),
        (_, None) => Vec::new(),
    };
    if shuffle {
        for i in (1..out.len()).rev() {
            let j = uniform_u64_below(rng, i as u64 + 1) as usize;
            out.swap(i, j);
        }
    }
    Ok(out)
}

/// The uniform relative error bound `ε(p) ≥ max_{p_j > 0} |(q_j/T)/(p_j/S) − 1|` of the module
/// docs: `1.01 · (2^-100/p_min + D + 2D²)`, `D = P·2^-100/S`; `+∞` when some `0 < p_j < 2^-100`
/// or `D ≥ 1/2`. Requires finite entries `≥ 0` with a positive sum (no sum tolerance: the bound is
/// relative to `p / S`). Errors name `p`.
pub fn probability_error_bound(p: ArrayView1<'_, f64>) -> DpResult<f64> {
    let p = contiguous(&p);
    if p.is_empty() {
        return Err(DpError::invalid(
            "p",
            "must be a non-empty probability vector, got length 0",
        ));
    }
    // (sum, min positive, first bad index) per block, reduced in block order.
    let parts: Vec<(f64, f64, Option<usize>)> = p
        .par_chunks(BLOCK)
        .enumerate()
        .map(|(b, xs)| {
            let mut sum = 0.0;
            let mut min_pos = f64::INFINITY;
            for (i, &x) in xs.iter().enumerate() {
                if !(x.is_finite() && x >= 0.0) {
                    return (sum, min_pos, Some(b * BLOCK + i));
                }
                sum += x;
                if x > 0.0 && x < min_pos {
                    min_pos = x;
                }
            }
            (sum, min_pos, None)
        })
        .collect();
    if let Some(i) = parts.iter().find_map(|t| t.2) {
        return Err(bad_entry(&p, i));
    }
    let sum: f64 = parts.iter().map(|t| t.0).sum();
    let min_pos = parts.iter().map(|t| t.1).fold(f64::INFINITY, f64::min);
    // Entries are finite and >= 0: the sum is >= 0 (possibly +inf), never NaN.
    if sum == 0.0 {
        return Err(DpError::invalid(
            "p",
            "must have a positive entry (all entries are 0)",
        ));
    }
    if min_pos < TWO_POW_M100 {
        return Ok(f64::INFINITY);
    }
    let d = p.len() as f64 * TWO_POW_M100 / sum;
    if d >= 0.5 {
        return Ok(f64::INFINITY);
    }
    Ok(1.01 * (TWO_POW_M100 / min_pos + d + 2.0 * d * d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::noise::rng::rng_from_seed;
    use crate::test_util::uniform;
    use ndarray::Array1;
    use num_bigint::BigUint;

    fn view(p: &[f64]) -> ArrayView1<'_, f64> {
        ArrayView1::from(p)
    }

    fn normalised(w: &[f64]) -> Vec<f64> {
        let s: f64 = w.iter().sum();
        w.iter().map(|x| x / s).collect()
    }

    /// Upper 1e-7 quantile of chi-square(k), Wilson–Hilferty (as in noise::exact's tests).
    fn chi2_crit(k: usize) -> f64 {
        let k = k as f64;
        let z = 5.2;
        k * (1.0 - 2.0 / (9.0 * k) + z * (2.0 / (9.0 * k)).sqrt()).powi(3)
    }

    /// Pearson statistic against exact probabilities `q/T`, pooling cells with expectation < 20.
    fn chi_square(counts: &[u64], q: &[u128], t: u128, m: u64) -> (f64, usize) {
        let (mut stat, mut dof, mut po, mut pe) = (0.0, 0usize, 0.0, 0.0);
        for (&c, &qj) in counts.iter().zip(q) {
            let e = qj as f64 / t as f64 * m as f64;
            if e < 20.0 {
                po += c as f64;
                pe += e;
            } else {
                stat += (c as f64 - e).powi(2) / e;
                dof += 1;
            }
        }
        if pe > 0.0 {
            stat += (po - pe).powi(2) / pe;
            dof += 1;
        }
        (stat, dof - 1)
    }

    #[test]
    fn quantize_is_the_exact_floor() {
        let two100 = f64::from_bits((1023u64 + 100) << 52);
        let mut xs = vec![
            0.0,
            -0.0,
            1.0,
            0.5,
            1.5,
            f64::from_bits(1),
            f64::MIN_POSITIVE,
            TWO_POW_M100,
            TWO_POW_M100 / 2.0,
        ];
        xs.push(3.0 * TWO_POW_M100 * 0.999);
        xs.push(f64::from_bits(2.0f64.to_bits() - 1));
        xs.extend(
            uniform(2000, 0.0, 1.0, 1)
                .iter()
                .enumerate()
                .map(|(i, u)| u * 2f64.powi(-((i % 140) as i32))),
        );
        for &x in &xs {
            let q = quantize(x);
            let (a, b, ok) = split_quantize(x);
            assert!(ok && join(a, b) == q, "split form, x = {x:e}");
            // Independent oracle 1: multiplying by a power of two is exact for these x.
            assert_eq!(q, (x * two100) as u128, "x = {x:e}");
            // Independent oracle 2: q ≤ x·2^100 < q + 1 in exact big-integer arithmetic,
            // x = mant·2^e from frexp-free decoding via integer scaling.
            let (mant, e) = {
                let mut e = 0i32;
                let mut y = x;
                while y != y.trunc() {
                    y *= 2.0;
                    e -= 1;
                }
                (y as u64, e) // exact: y is an integer < 2^53·2
            };
            let sh = e + 100;
            let lhs = BigUint::from(mant);
            if sh >= 0 {
                assert_eq!(BigUint::from(q), lhs << sh as usize);
            } else {
                let k = (-sh) as usize;
                assert!(BigUint::from(q) << k <= lhs);
                assert!(lhs < (BigUint::from(q) + 1u32) << k);
            }
        }
    }

    #[test]
    fn split_form_flags_invalid_entries_and_block_sums_are_exact() {
        for x in [
            f64::NAN,
            -1.0,
            -f64::MIN_POSITIVE,
            2.0,
            3.5,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert!(!split_quantize(x).2, "x = {x}");
        }
        let xs: Vec<f64> = uniform(BLOCK, 0.0, 1.0, 7)
            .iter()
            .enumerate()
            .map(|(i, u)| u * 2f64.powi(-((i % 120) as i32)))
            .collect();
        let (sa, sb, ok) = split_sums(&xs);
        assert!(ok);
        assert_eq!(join(sa, sb), xs.iter().map(|&x| quantize(x)).sum::<u128>());
        let ones = vec![f64::from_bits(2.0f64.to_bits() - 1); BLOCK]; // largest valid entries
        let (sa, sb, ok) = split_sums(&ones);
        assert!(ok);
        assert_eq!(join(sa, sb), BLOCK as u128 * quantize(ones[0]));
    }

    #[test]
    fn absurd_m_is_refused() {
        let err = multinomial_counts(
            view(&[0.5, 0.5]),
            usize::MAX / 2,
            DEFAULT_SUM_TOL,
            &mut rng_from_seed(Some(1)),
        );
        assert!(err.unwrap_err().to_string().starts_with("m: too large"));
    }

    #[test]
    fn mul_wide_matches_bigint() {
        let v = uniform(400, 0.0, 1.0, 2);
        for w in v.chunks(4) {
            let a = ((w[0] * 2f64.powi(64)) as u128) << 64 | (w[1] * 2f64.powi(64)) as u128;
            let b = ((w[2] * 2f64.powi(40)) as u128) << 64 | (w[3] * 2f64.powi(64)) as u128;
            for (a, b) in [
                (a, b),
                (u128::MAX, b),
                (a, u128::MAX),
                (u128::MAX, u128::MAX),
                (a, 1),
            ] {
                let (hi, lo) = mul_wide(a, b);
                let full = BigUint::from(a) * BigUint::from(b);
                assert_eq!((BigUint::from(hi) << 128usize) + BigUint::from(lo), full);
            }
        }
    }

    #[test]
    fn uniform_below_is_uniform() {
        let mut rng = rng_from_seed(Some(3));
        for n in [1u128, 2, 7, 1000] {
            let m = 200_000u64;
            let mut counts = vec![0u64; n as usize];
            for _ in 0..m {
                counts[uniform_u128_below(&mut rng, n) as usize] += 1;
            }
            let q = vec![1u128; n as usize];
            if n > 1 {
                let (stat, dof) = chi_square(&counts, &q, n, m);
                assert!(stat < chi2_crit(dof.max(5)), "n={n}: chi2={stat}");
            }
            let mut c64 = vec![0u64; n as usize];
            for _ in 0..m {
                c64[uniform_u64_below(&mut rng, n as u64) as usize] += 1;
            }
            if n > 1 {
                let (stat, dof) = chi_square(&c64, &q, n, m);
                assert!(stat < chi2_crit(dof.max(5)), "u64 n={n}: chi2={stat}");
            }
        }
        // large n: values stay below n
        let n = (1u128 << 100) + 12345;
        for _ in 0..1000 {
            assert!(uniform_u128_below(&mut rng, n) < n);
        }
    }

    #[test]
    fn bucket_sort_equals_reference_sort() {
        for &m in &[1usize, 5, 33, 1000, 5000, 70_000, 200_000] {
            let n = (1u128 << 100) - 977;
            let got = sorted_uniforms(n, m, &mut rng_from_seed(Some(m as u64)));
            // Reference: the same streams, plain generation and a comparison sort.
            let (g, n_chunks, _) = gen_plan(m);
            let mut parent = rng_from_seed(Some(m as u64));
            let mut streams = derive_streams(&mut parent, n_chunks);
            let mut all = Vec::new();
            for (c, s) in streams.iter_mut().enumerate() {
                for _ in 0..g.min(m - c * g) {
                    all.push(mul_wide(accepted_x(s, n), n).0);
                }
            }
            all.sort_unstable();
            all.push(u128::MAX);
            assert_eq!(got, all, "m={m}");
        }
    }

    fn check_counts(p: &[f64], m: usize, seed: u64) {
        let (q, t) = quantized_weights(view(p), DEFAULT_SUM_TOL).unwrap();
        let (idx, cnt) =
            multinomial_counts(view(p), m, DEFAULT_SUM_TOL, &mut rng_from_seed(Some(seed)))
                .unwrap();
        assert_eq!(cnt.iter().sum::<i64>(), m as i64);
        assert!(idx.windows(2).all(|w| w[0] < w[1]));
        assert!(cnt.iter().all(|&c| c > 0));
        let mut full = vec![0u64; p.len()];
        for (&i, &c) in idx.iter().zip(&cnt) {
            assert!(q[i as usize] > 0, "index {i} with q = 0 drawn");
            full[i as usize] = c as u64;
        }
        let (stat, dof) = chi_square(&full, &q, t, m as u64);
        assert!(stat < chi2_crit(dof.max(5)), "chi2={stat} dof={dof}");
    }

    #[test]
    fn counts_match_the_exact_distribution() {
        check_counts(&normalised(&[1.0, 2.0, 3.0, 4.0, 0.0, 10.0]), 300_000, 1);
        let zipf: Vec<f64> = (1..=500).map(|k| 1.0 / k as f64).collect();
        check_counts(&normalised(&zipf), 400_000, 2);
        // crosses block boundaries and several random streams / buckets
        let w = uniform(2 * BLOCK + 7, 0.0, 1.0, 3);
        check_counts(&normalised(&w), 600_000, 3);
    }

    #[test]
    fn thread_count_does_not_change_the_output() {
        let p = normalised(&uniform(5 * BLOCK + 3, 0.0, 1.0, 4));
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                let c = multinomial_counts(
                    view(&p),
                    300_000,
                    DEFAULT_SUM_TOL,
                    &mut rng_from_seed(Some(9)),
                )
                .unwrap();
                let d = multinomial_draws(
                    view(&p),
                    1000,
                    true,
                    DEFAULT_SUM_TOL,
                    &mut rng_from_seed(Some(9)),
                )
                .unwrap();
                (c, d)
            })
        };
        let one = run(1);
        assert_eq!(one, run(3));
        assert_eq!(one, run(2));
    }

    #[test]
    fn draws_agree_with_counts_and_shuffle_permutes() {
        let p = normalised(&[0.0, 1.0, 5.0, 0.0, 2.0]);
        let (idx, cnt) =
            multinomial_counts(view(&p), 5000, DEFAULT_SUM_TOL, &mut rng_from_seed(Some(5)))
                .unwrap();
        let sorted = multinomial_draws(
            view(&p),
            5000,
            false,
            DEFAULT_SUM_TOL,
            &mut rng_from_seed(Some(5)),
        )
        .unwrap();
        let mut expanded = Vec::new();
        for (&i, &c) in idx.iter().zip(&cnt) {
            expanded.extend(std::iter::repeat_n(i, c as usize));
        }
        assert_eq!(sorted, expanded);
        let mut shuffled = multinomial_draws(
            view(&p),
            5000,
            true,
            DEFAULT_SUM_TOL,
            &mut rng_from_seed(Some(5)),
        )
        .unwrap();
        assert_ne!(shuffled, sorted);
        shuffled.sort_unstable();
        assert_eq!(shuffled, sorted);
        // m = 0 and m = 1
        let (i0, c0) =
            multinomial_counts(view(&p), 0, DEFAULT_SUM_TOL, &mut rng_from_seed(Some(5))).unwrap();
        assert!(i0.is_empty() && c0.is_empty());
        let (i1, c1) =
            multinomial_counts(view(&p), 1, DEFAULT_SUM_TOL, &mut rng_from_seed(Some(5))).unwrap();
        assert_eq!(c1, vec![1]);
        assert!([1, 2, 4].contains(&i1[0]));
    }

    #[test]
    fn non_contiguous_views_work() {
        let a = Array1::from_vec(vec![0.25, 9.0, 0.25, 9.0, 0.5, 9.0]);
        let v = a.slice(ndarray::s![..;2]);
        let (q, t) = quantized_weights(v, 0.0).unwrap();
        assert_eq!(q, vec![1u128 << 98, 1u128 << 98, 1u128 << 99]);
        assert_eq!(t, 1u128 << 100);
        let (idx, _) = multinomial_counts(v, 100, 0.0, &mut rng_from_seed(Some(1))).unwrap();
        assert!(idx.iter().all(|&i| i < 3));
    }

    #[test]
    fn tiny_entries_have_exact_weights() {
        let tiny = TWO_POW_M100 / 2.0; // q = 0: never drawn
        let small = 3.0 * TWO_POW_M100; // q = 3
        let p = vec![0.5, tiny, small, 0.5 - small];
        let (q, t) = quantized_weights(view(&p), DEFAULT_SUM_TOL).unwrap();
        assert_eq!(q[1], 0);
        assert_eq!(q[2], 3);
        assert_eq!(t, q.iter().sum::<u128>());
        let (idx, _) = multinomial_counts(
            view(&p),
            100_000,
            DEFAULT_SUM_TOL,
            &mut rng_from_seed(Some(2)),
        )
        .unwrap();
        assert!(!idx.contains(&1));
        assert_eq!(probability_error_bound(view(&p)).unwrap(), f64::INFINITY);
    }

    #[test]
    fn error_bound_values() {
        let p = normalised(&[1.0, 2.0, 3.0, 4.0]);
        let b = probability_error_bound(view(&p)).unwrap();
        let d = 4.0 * TWO_POW_M100 / p.iter().sum::<f64>();
        let expect = 1.01 * (TWO_POW_M100 / p[0] + d + 2.0 * d * d);
        assert!((b - expect).abs() <= 1e-15 * expect);
        assert!(b < 1.2e-29 && b > 1.1e-29);
        assert_eq!(
            probability_error_bound(view(&[0.0, 1.0])).unwrap(),
            1.01 * (TWO_POW_M100 + 2.0 * TWO_POW_M100 + 8.0 * TWO_POW_M100 * TWO_POW_M100)
        );
        assert!(probability_error_bound(view(&[0.0, 0.0])).is_err());
        assert!(probability_error_bound(view(&[0.5, f64::NAN])).is_err());
        assert!(probability_error_bound(view(&[])).is_err());
    }

    #[test]
    fn validation_names_the_parameter() {
        let mut r = rng_from_seed(Some(0));
        let err = |p: &[f64], tol: f64, r: &mut DpRng| {
            multinomial_counts(view(p), 3, tol, r)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(&[0.5, f64::NAN, 0.5], 1e-9, &mut r),
            "p: p[1] = nan: every probability must be finite and >= 0"
        );
        assert!(err(&[0.5, 0.5, f64::INFINITY], 1e-9, &mut r).starts_with("p: p[2] = inf"));
        assert!(err(&[0.5, -0.0, -0.25, 0.75], 1e-9, &mut r).starts_with("p: p[2] = -0.25"));
        assert!(err(&[0.25, 0.25], 1e-9, &mut r).contains("got sum 0.5"));
        assert!(err(&[0.6, 0.5], 1e-9, &mut r).contains("got sum 1.1"));
        assert!(err(&[3.0, -2.0], 1e-9, &mut r).starts_with("p: p[1] = -2.0"));
        assert!(err(&[3.0, 0.0], 1e-9, &mut r).contains("p[0] = 3.0 alone exceeds"));
        assert!(err(&[], 1e-9, &mut r).contains("non-empty"));
        assert!(err(&[1.0], f64::NAN, &mut r).starts_with("sum_tol"));
        assert!(err(&[1.0], 1.0, &mut r).starts_with("sum_tol"));
        assert!(err(&[1.0], -1e-3, &mut r).starts_with("sum_tol"));
        // a bad entry in a later block is found; the first one is reported
        let mut p = vec![1.0 / (3 * BLOCK) as f64; 3 * BLOCK];
        p[2 * BLOCK + 5] = -1.0;
        p[BLOCK + 1] = f64::NAN;
        assert!(err(&p, 1e-9, &mut r).starts_with(&format!("p: p[{}] = nan", BLOCK + 1)));
        // within the tolerance, slightly off sums are accepted
        assert!(multinomial_counts(view(&[0.5, 0.5 + 1e-10]), 3, 1e-9, &mut r).is_ok());
        assert!(multinomial_counts(view(&[0.5, 0.5 + 1e-8]), 3, 1e-9, &mut r).is_err());
    }
}

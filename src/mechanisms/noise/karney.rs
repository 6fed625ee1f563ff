//! Exact Gaussian releases calibrated by the *analytic* Gaussian mechanism.
//!
//! # What is released
//! For a value `x` (an `f64`, i.e. a dyadic rational), a noise standard deviation `σ > 0` (also an
//! `f64`) and a grid `g = 2^k`, one coordinate of the release is the grid point `j·g` with
//!
//! ```text
//!     j = ⌊(x + σ·Z)/g + ½⌋,        Z ~ N(0, 1),
//! ```
//!
//! the continuous Gaussian mechanism `x + σZ` rounded to the nearest multiple of `g`. Ties
//! (`(x + σZ)/g` a half-integer) have probability zero, so the rounding convention is immaterial;
//! formally it is "round half up". The integer `j` is sampled **exactly** from its true law
//!
//! ```text
//!     P[j] = Φ(((j+½)g − x)/σ) − Φ(((j−½)g − x)/σ)
//! ```
//!
//! using only uniformly random bits and exact integer arithmetic — no floating-point inverse-CDF,
//! no Box–Muller, nothing whose rounding could leak the low-order bits of `x` (Mironov, *On
//! significance of the least significant bits for differential privacy*, CCS 2012).
//!
//! # How
//! 1. `Z = s·(K + U)` is drawn by Karney's **algorithm N** (C. F. F. Karney, *Sampling exactly from
//!    the normal distribution*, ACM TOMS 42(1), 2016, arXiv:1303.6257; reference implementation
//!    `ExactNormal.hpp` of his RandomLib), in base 2:
//!    * N1 — `K ≥ 0` with probability `e^{-K/2}(1 − e^{-1/2})`: count successes of algorithm H;
//!    * N2 — accept with probability `e^{-K(K−1)/2}` (`K(K−1)` more successes of H), else restart;
//!    * N3 — `U` uniform on `[0, 1)`, kept as a *lazy* binary expansion ([`LazyUniform`]) whose
//!      digits are drawn only when a comparison needs them;
//!    * N4 — accept with probability `e^{-U(2K+U)/2}` by `K + 1` runs of algorithm B, else restart;
//!    * N5 — a fair sign `s`.
//!
//!    Algorithm H returns true with probability `e^{-1/2}`: von Neumann's method — find the
//!    largest `n` with `½ > U₁ > U₂ > … > U_n` and return `n` even. Algorithm B returns true with
//!    probability `e^{-U·p}`, `p = (2K + U)/(2K + 2)`: the largest `n` with `U > z₁ > … > z_n` such
//!    that `n` independent events of probability `p` also succeed (each event: with probability
//!    `2K/(2K+2)` yes, `1/(2K+2)` no, `1/(2K+2)` "`r < U`" for a fresh uniform `r`), return `n` even;
//!    `P[n ≥ N] = (U p)^N / N!`, so `P[n even] = e^{-Up}` and `(e^{-Up})^{K+1} = e^{-U(2K+U)/2}`.
//!    Every step is a fair coin, an exact uniform integer, or a comparison of lazy uniforms, so
//!    the accepted `(s, K, U)` has *exactly* the standard normal law. The digits of `U` that were
//!    never looked at did not influence anything, so given the history they are still i.i.d. fair
//!    bits and may be drawn later.
//! 2. With the first `d` digits `P` of `U` known, `U ∈ (P/2^d, (P+1)/2^d)` (a.s. open), and
//!    `W = x/g + ½ + (σ/g)·s·(K + U)` is monotone in `U`, so `W` lies in an open interval with
//!    exactly computable dyadic endpoints. If that interval contains no integer, `j = ⌊W⌋` is
//!    decided; otherwise one more digit of `U` is drawn. `x/g + ½ = I + f` is split once per value
//!    into an integer `I` and a dyadic fraction `f ∈ [0, 1)`, and `j = I + ⌊f + (σ/g)·s(K + U)⌋`.
//!    The endpoints are compared in `i128` when every intermediate provably fits (checked
//!    arithmetic), and in arbitrary precision (`num-bigint`) otherwise — e.g. for `|x| ≪ g`, whose
//!    exact binary expansion relative to `g` has hundreds of digits. First the sampler draws, in
//!    one go, enough digits for the interval to be narrower than `¼` (drawing a digit earlier than
//!    strictly needed changes no law: undrawn digits are i.i.d. fair bits either way); after that
//!    the expected number of extra digits is O(1). The digits of `U` come from the generator in a
//!    fixed order whatever `x` is, so under one seed the release is exactly `⌊x/g + ½ + σZ/g⌋` for
//!    one fixed `Z` (the Python tests check the resulting translation equivariance).
//!
//! # Privacy (the caller's calibration, `dpcore.mechanisms.noise.gaussian_plan(method="analytic")`)
//! `x + σZ` is the continuous Gaussian mechanism, and `j·g` is a deterministic function of it
//! (post-processing; converting `j·g` to `f64` is a deterministic function of the integer `j`).
//! Coordinates use independent normals, so on a vector with L2 sensitivity `Δ` the release is
//! at least as private as `N(v, σ²I)`, which by rotation invariance is `(ε, δ)`-DP iff
//! `Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) ≤ δ` (Balle & Wang 2018, Thm 8). No sensitivity
//! inflation from snapping, no zCDP conversion.
//!
//! # Parallelism
//! As in [`super::grid`]: coordinates are processed in chunks of [`CHUNK`], chunk `i` drawing from
//! ChaCha stream `i` of a key taken from the caller's generator, so the output does not depend on
//! the number of threads. The `_cancellable` variants poll a [`Cancel`] flag before every chunk
//! (as [`super::grid`] does) and return [`DpError::Interrupted`], never a partial release.

use ndarray::{Array1, Array2, ArrayView1};
use num_bigint::BigInt;
use rand_core::Rng;
use rayon::prelude::*;

use super::grid::{check_exponent, pow2, unsnap, CHUNK};
use super::rng::{derive_streams, DpRng};
use crate::cancel::Cancel;
use crate::error::{DpError, DpResult};

/// Largest admissible `|x| / g`: larger values are not on a usable grid.
pub const MAX_VALUE_UNITS_LOG2: i32 = 100;
/// Largest admissible `σ / g` is `2^MAX_SIGMA_UNITS_LOG2` (a finer grid is pointless).
pub const MAX_SIGMA_UNITS_LOG2: i32 = 64;
/// Smallest admissible `σ / g` is `2^MIN_SIGMA_UNITS_LOG2` (a coarser grid hides the noise).
pub const MIN_SIGMA_UNITS_LOG2: i32 = -32;

// ------------------------------------------------------------------------------------------------
// random bits
// ------------------------------------------------------------------------------------------------

/// Fair random bits, taken one at a time from buffered 64-bit words of a generator.
pub struct BitSource<'a, R: Rng + ?Sized> {
    rng: &'a mut R,
    /// The next `left` bits are the top bits of `buf` (the lower bits are zero).
    buf: u64,
    left: u32,
}

impl<'a, R: Rng + ?Sized> BitSource<'a, R> {
    /// A bit source drawing from `rng` (unused buffered bits are simply dropped when it goes).
    pub fn new(rng: &'a mut R) -> Self {
        BitSource {
            rng,
            buf: 0,
            left: 0,
        }
    }

    /// One fair bit.
    #[inline]
    pub fn bit(&mut self) -> bool {
        if self.left == 0 {
            self.buf = self.rng.next_u64();
            self.left = 64;
        }
        let b = self.buf >> 63;
        self.buf <<= 1;
        self.left -= 1;
        b == 1
    }

    /// `n` fair bits (`1 ≤ n ≤ 64`) as an integer in `[0, 2^n)`, first bit most significant.
    #[inline]
    pub fn bits(&mut self, n: u32) -> u64 {
        debug_assert!((1..=64).contains(&n));
        if n <= self.left {
            let v = self.buf >> (64 - n);
            self.buf = if n == 64 { 0 } else { self.buf << n };
            self.left -= n;
            v
        } else {
            let have = self.left;
            let hi = if have == 0 {
                0
            } else {
                self.buf >> (64 - have)
            };
            self.buf = self.rng.next_u64();
            self.left = 64;
            let rest = n - have;
            let lo = self.bits(rest);
            if have == 0 {
                lo
            } else {
                (hi << rest) | lo
            }
        }
    }

    /// Exact uniform integer in `[0, m)`, `m ≥ 1`, by rejection on `⌈log₂ m⌉` bits.
    #[inline]
    pub fn uniform_below(&mut self, m: u64) -> u64 {
        debug_assert!(m >= 1);
        if m == 1 {
            return 0;
        }
        let b = 64 - (m - 1).leading_zeros();
        loop {
            let v = self.bits(b);
            if v < m {
                return v;
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------
// lazy uniforms
// ------------------------------------------------------------------------------------------------

/// A uniform number in `[0, 1)` known through a prefix of its binary expansion; further digits are
/// drawn (fair bits) only when asked for.
#[derive(Debug, Clone, Default)]
pub struct LazyUniform {
    /// Digit `i` (weight `2^-(i+1)`) is bit `63 − i mod 64` of `words[i / 64]`; bits past `n` are 0.
    words: Vec<u64>,
    n: u64,
}

impl LazyUniform {
    /// Forget all digits (a fresh uniform); keeps the allocation.
    #[inline]
    pub fn reset(&mut self) {
        self.words.clear();
        self.n = 0;
    }

    /// Number of digits drawn so far.
    #[inline]
    pub fn len(&self) -> u64 {
        self.n
    }

    /// True when no digit has been drawn.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    #[inline]
    fn get(&self, i: u64) -> bool {
        (self.words[(i >> 6) as usize] >> (63 - (i & 63))) & 1 == 1
    }

    #[inline]
    fn push_bit(&mut self, b: bool) {
        let off = self.n & 63;
        if off == 0 {
            self.words.push(0);
        }
        if b {
            *self.words.last_mut().expect("a word was pushed") |= 1u64 << (63 - off);
        }
        self.n += 1;
    }

    /// Digit `i`, drawing digits up to `i` if needed.
    #[inline]
    pub fn digit<R: Rng + ?Sized>(&mut self, i: u64, src: &mut BitSource<'_, R>) -> bool {
        while self.n <= i {
            let b = src.bit();
            self.push_bit(b);
        }
        self.get(i)
    }

    /// Draw `count` more digits.
    pub fn extend<R: Rng + ?Sized>(&mut self, count: u64, src: &mut BitSource<'_, R>) {
        let mut rem = count;
        while rem > 0 {
            let off = (self.n & 63) as u32;
            if off == 0 {
                self.words.push(0);
            }
            let room = 64 - off;
            let take = if rem < room as u64 { rem as u32 } else { room };
            let v = src.bits(take);
            *self.words.last_mut().expect("a word exists") |= v << (64 - off - take);
            self.n += take as u64;
            rem -= take as u64;
        }
    }

    /// The known digits as the integer `P` with `U ∈ [P/2^n, (P+1)/2^n)`, if `n ≤ 128`.
    #[inline]
    pub fn prefix_u128(&self) -> Option<u128> {
        match self.n {
            0 => Some(0),
            n if n <= 128 => {
                let hi = self.words[0] as u128;
                let lo = self.words.get(1).copied().unwrap_or(0) as u128;
                Some(((hi << 64) | lo) >> (128 - n))
            }
            _ => None,
        }
    }

    /// The known digits as an arbitrary-precision integer `P` (see [`Self::prefix_u128`]).
    pub fn prefix_big(&self) -> BigInt {
        let mut acc = BigInt::from(0u8);
        for w in &self.words {
            acc = (acc << 64u32) + BigInt::from(*w);
        }
        let unused = self.words.len() as u64 * 64 - self.n;
        acc >> unused
    }

    /// `U` to about 53 significant bits, drawing digits until 64 are known (tests and diagnostics
    /// only; never released).
    pub fn approx_f64<R: Rng + ?Sized>(&mut self, src: &mut BitSource<'_, R>) -> f64 {
        if self.n < 64 {
            self.extend(64 - self.n, src);
        }
        self.words[0] as f64 * (1.0 / 18_446_744_073_709_551_616.0)
    }
}

/// `a < b` for two lazy uniforms, drawing digits of both until they differ (terminates with
/// probability one; `a = b` has probability zero).
#[inline]
fn less<R: Rng + ?Sized>(
    a: &mut LazyUniform,
    b: &mut LazyUniform,
    src: &mut BitSource<'_, R>,
) -> bool {
    let mut i = 0u64;
    loop {
        let da = a.digit(i, src);
        let db = b.digit(i, src);
        if da != db {
            return db;
        }
        i += 1;
    }
}

// ------------------------------------------------------------------------------------------------
// Karney's exact standard normal
// ------------------------------------------------------------------------------------------------

/// One exact standard normal `s·(K + U)`; `U` stays in the sampler ([`ExactNormal::fraction`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NormalDraw {
    /// `s = −1`.
    pub negative: bool,
    /// `K`, the integer part of `|Z|`.
    pub int_part: u64,
}

/// Karney's algorithm N with its scratch uniforms (reused across draws, so no allocation in the
/// steady state). One per thread.
#[derive(Debug, Clone, Default)]
pub struct ExactNormal {
    x: LazyUniform,
    p: LazyUniform,
    q: LazyUniform,
    r: LazyUniform,
}

impl ExactNormal {
    /// A sampler with empty scratch space.
    pub fn new() -> Self {
        Self::default()
    }

    /// The fractional part `U` of the last draw (lazy; more digits may be drawn from it).
    pub fn fraction(&mut self) -> &mut LazyUniform {
        &mut self.x
    }

    /// Algorithm H: true with probability `e^{-1/2}`.
    fn exp_minus_half<R: Rng + ?Sized>(&mut self, src: &mut BitSource<'_, R>) -> bool {
        let (p, q) = (&mut self.p, &mut self.q);
        p.reset();
        if p.digit(0, src) {
            return true; // U₁ ≥ ½: n = 0
        }
        loop {
            q.reset();
            if !less(q, p, src) {
                return false; // n odd
            }
            p.reset();
            if !less(p, q, src) {
                return true; // n even
            }
        }
    }

    /// True with probability `e^{-n/2}`.
    fn exp_minus_half_pow<R: Rng + ?Sized>(&mut self, n: u64, src: &mut BitSource<'_, R>) -> bool {
        for _ in 0..n {
            if !self.exp_minus_half(src) {
                return false;
            }
        }
        true
    }

    /// Algorithm B: true with probability `exp(−U(2K + U)/(2K + 2))` for the current `U` (`self.x`).
    fn algorithm_b<R: Rng + ?Sized>(&mut self, k: u64, src: &mut BitSource<'_, R>) -> bool {
        let m = 2 * k + 2;
        let (x, y, z, r) = (&mut self.x, &mut self.p, &mut self.q, &mut self.r);
        let mut n = 0u64;
        loop {
            z.reset();
            let below = if n == 0 {
                less(z, x, src)
            } else {
                less(z, y, src)
            };
            if !below {
                break;
            }
            // An event of probability (2K + U)/(2K + 2).
            let c = src.uniform_below(m);
            if c == m - 1 {
                break; // probability 1/(2K+2): fails
            }
            if c == m - 2 {
                // probability 1/(2K+2): succeeds iff r < U
                r.reset();
                if !less(r, x, src) {
                    break;
                }
            }
            std::mem::swap(y, z);
            n += 1;
        }
        n % 2 == 0
    }

    /// One exact standard normal (Karney 2016, algorithm N).
    pub fn sample<R: Rng + ?Sized>(&mut self, src: &mut BitSource<'_, R>) -> NormalDraw {
        loop {
            // N1: K with probability e^{-K/2}(1 − e^{-1/2}).
            let mut k = 0u64;
            while self.exp_minus_half(src) {
                k += 1;
            }
            // N2: accept with probability e^{-K(K−1)/2}.
            if !self.exp_minus_half_pow(k.saturating_mul(k.saturating_sub(1)), src) {
                continue;
            }
            // N3–N4: U uniform, accepted with probability e^{-U(2K+U)/2} = (B's probability)^{K+1}.
            self.x.reset();
            let mut accepted = true;
            for _ in 0..=k {
                if !self.algorithm_b(k, src) {
                    accepted = false;
                    break;
                }
            }
            if !accepted {
                continue;
            }
            // N5: the sign.
            let negative = src.bit();
            return NormalDraw {
                negative,
                int_part: k,
            };
        }
    }
}

// ------------------------------------------------------------------------------------------------
// exact rounding to the grid
// ------------------------------------------------------------------------------------------------

/// `v = m · 2^e` exactly (`m` signed, `|m| < 2^53`), for finite `v`.
fn decompose(v: f64) -> (i64, i64) {
    let bits = v.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i64;
    let frac = (bits & ((1u64 << 52) - 1)) as i64;
    let (m, e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1i64 << 52), exp - 1075)
    };
    (if bits >> 63 == 1 { -m } else { m }, e)
}

/// `x/g + ½ = int_part + frac / 2^frac_bits` exactly, with `0 ≤ frac < 2^frac_bits` and `frac`
/// odd (or zero with `frac_bits = 0`).
#[derive(Debug, Clone)]
struct Offset {
    int_part: i128,
    frac: Frac,
    frac_bits: u64,
}

/// The numerator of the fractional part: `u128` when `frac_bits ≤ 120` (the `i128` fast path),
/// arbitrary precision otherwise (`|x| ≪ g`).
#[derive(Debug, Clone)]
enum Frac {
    Small(u128),
    Big(BigInt),
}

impl Offset {
    fn new(x: f64, exponent: i32) -> DpResult<Offset> {
        if !x.is_finite() {
            return Err(DpError::invalid(
                "value",
                format!("must be finite, got {x:?}"),
            ));
        }
        // Scaling by a power of two is exact unless it overflows (→ inf, rejected) or underflows
        // (→ tiny, accepted), so this comparison is exact.
        if x.abs() * pow2(-exponent) > 2f64.powi(MAX_VALUE_UNITS_LOG2) {
            return Err(DpError::invalid(
                "value",
                format!("{x:e} is too large relative to the noise granularity 2^{exponent} (|value|/g must be ≤ 2^{MAX_VALUE_UNITS_LOG2})"),
            ));
        }
        let (m, e) = decompose(x);
        let t = e - exponent as i64;
        if m == 0 || t >= 0 {
            // x/g is an integer (|x/g| ≤ 2^100, so t ≤ 100 when m ≠ 0): x/g + ½ = x/g + 1/2^1.
            let int_part = if m == 0 { 0 } else { (m as i128) << t };
            return Ok(Offset {
                int_part,
                frac: Frac::Small(1),
                frac_bits: 1,
            });
        }
        // x/g + ½ = (2m + 2^sh) / 2^(sh+1) with sh = −t ≥ 1.
        let sh = (-t) as u64;
        let bits = sh + 1;
        if bits <= 120 {
            let num = 2 * m as i128 + (1i128 << sh);
            let int_part = num >> bits; // floor
            let frac = (num - (int_part << bits)) as u128;
            return Ok(match frac {
                0 => Offset {
                    int_part,
                    frac: Frac::Small(0),
                    frac_bits: 0,
                },
                f => {
                    let tz = f.trailing_zeros() as u64;
                    Offset {
                        int_part,
                        frac: Frac::Small(f >> tz),
                        frac_bits: bits - tz,
                    }
                }
            });
        }
        // sh ≥ 120 > 54 ≥ bit length of 2m: 0 < 2m + 2^sh < 2^(sh+1), so the integer part is 0.
        let num = BigInt::from(2 * m) + (BigInt::from(1u8) << sh);
        let tz = num.trailing_zeros().expect("num > 0");
        let (num, frac_bits) = (num >> tz, bits - tz);
        let frac = match u128::try_from(&num) {
            Ok(f) if frac_bits <= 120 => Frac::Small(f),
            _ => Frac::Big(num),
        };
        Ok(Offset {
            int_part: 0,
            frac,
            frac_bits,
        })
    }

    fn frac_big(&self) -> BigInt {
        match &self.frac {
            Frac::Small(f) => BigInt::from(*f),
            Frac::Big(f) => f.clone(),
        }
    }
}

/// `σ/g = mant · 2^-shift` exactly, `mant` odd.
#[derive(Debug, Clone, Copy)]
struct GridScale {
    mant: u64,
    shift: i64,
}

impl GridScale {
    fn new(sigma: f64, exponent: i32) -> DpResult<GridScale> {
        check_exponent(exponent)?;
        if !(sigma.is_finite() && sigma > 0.0) {
            return Err(DpError::invalid(
                "sigma",
                format!("must be finite and > 0, got {sigma:?}"),
            ));
        }
        let units = sigma * pow2(-exponent); // exact unless it over/underflows (then rejected)
        if !(units <= 2f64.powi(MAX_SIGMA_UNITS_LOG2) && units >= 2f64.powi(MIN_SIGMA_UNITS_LOG2)) {
            return Err(DpError::invalid(
                "sigma",
                format!(
                    "sigma / 2^grid_exponent = {sigma} / 2^{exponent} must lie in [2^{MIN_SIGMA_UNITS_LOG2}, 2^{MAX_SIGMA_UNITS_LOG2}]"
                ),
            ));
        }
        let (m, e) = decompose(sigma);
        let tz = m.trailing_zeros() as i64;
        Ok(GridScale {
            mant: (m >> tz) as u64,
            shift: exponent as i64 - (e + tz),
        })
    }

    /// An integer `≥ log₂(σ/g)`.
    fn log2_ceil(&self) -> i64 {
        (64 - self.mant.leading_zeros()) as i64 - self.shift
    }
}

enum Decision {
    Done(i128),
    NeedDigit,
}

/// `v · 2^s` as an `i128` below `2^125`, if it fits.
#[inline]
fn shl_fit(v: u128, s: i64) -> Option<i128> {
    let len = 128 - v.leading_zeros() as i64;
    if s < 0 || len + s > 125 {
        return None;
    }
    Some((v << s) as i128)
}

/// The decision in `i128` arithmetic; `None` when some intermediate would not fit.
///
/// With `d` digits `P` of `U`, `D(u) = f + s·(σ/g)(K + u)` for `u ∈ (P/2^d, (P+1)/2^d)` lies in
/// the open interval `(lo, hi)` (in units of `2^-L`); `⌊D⌋` is decided iff `hi ≤ (⌊lo⌋ + 1)`.
fn decide_fast(
    off: &Offset,
    sc: &GridScale,
    draw: NormalDraw,
    frac: &LazyUniform,
) -> Option<Decision> {
    let fnum = match off.frac {
        Frac::Small(f) => f,
        Frac::Big(_) => return None,
    };
    let d = frac.len();
    let p = frac.prefix_u128()?;
    if d > 120 {
        return None;
    }
    let k = draw.int_part as u128;
    if k != 0 && (128 - k.leading_zeros()) as u64 + d > 126 {
        return None;
    }
    let base = (k << d) | p;
    let a_lo = (sc.mant as u128).checked_mul(base)?;
    let a_hi = (sc.mant as u128).checked_mul(base + 1)?;
    let ea = sc.shift + d as i64; // σ/g·(K + P/2^d) = a_lo / 2^ea
    let fb = off.frac_bits as i64;
    let l = fb.max(ea).max(0);
    if l > 124 {
        return None;
    }
    let nf = shl_fit(fnum, l - fb)?;
    let na_lo = shl_fit(a_lo, l - ea)?;
    let na_hi = shl_fit(a_hi, l - ea)?;
    let (lo, hi) = if draw.negative {
        (nf - na_hi, nf - na_lo)
    } else {
        (nf + na_lo, nf + na_hi)
    };
    let unit = 1i128 << l;
    let floor_lo = lo & !(unit - 1);
    if hi - floor_lo <= unit {
        Some(Decision::Done(off.int_part.saturating_add(lo >> l)))
    } else {
        Some(Decision::NeedDigit)
    }
}

/// The same decision in arbitrary precision.
fn decide_big(off: &Offset, sc: &GridScale, draw: NormalDraw, frac: &LazyUniform) -> Decision {
    let d = frac.len();
    let base = (BigInt::from(draw.int_part) << d) + frac.prefix_big();
    let mant = BigInt::from(sc.mant);
    let a_lo = &mant * &base;
    let a_hi = &mant * (base + 1u8);
    let ea = sc.shift + d as i64;
    let fb = off.frac_bits as i64;
    let l = fb.max(ea).max(0);
    let nf = off.frac_big() << (l - fb) as u64;
    let na_lo = a_lo << (l - ea) as u64;
    let na_hi = a_hi << (l - ea) as u64;
    let (lo, hi) = if draw.negative {
        (&nf - na_hi, nf - na_lo)
    } else {
        (&nf + na_lo, nf + na_hi)
    };
    let jd = &lo >> l as u64; // floor
    let floor_lo = &jd << l as u64;
    if hi - floor_lo <= BigInt::from(1u8) << l as u64 {
        let jd = i128::try_from(&jd).unwrap_or(if lo.sign() == num_bigint::Sign::Minus {
            i128::MIN
        } else {
            i128::MAX
        });
        Decision::Done(off.int_part.saturating_add(jd))
    } else {
        Decision::NeedDigit
    }
}

/// One exact `j` for a prepared value (see module docs).
fn sample_index<R: Rng + ?Sized>(
    off: &Offset,
    sc: &GridScale,
    normal: &mut ExactNormal,
    src: &mut BitSource<'_, R>,
) -> i128 {
    let draw = normal.sample(src);
    let frac = normal.fraction();
    // Interval width (σ/g)·2^-d ≤ ¼ before the first test.
    let need = sc.log2_ceil() + 2;
    if (frac.len() as i64) < need {
        frac.extend((need - frac.len() as i64) as u64, src);
    }
    loop {
        let decision = match decide_fast(off, sc, draw, frac) {
            Some(d) => d,
            None => decide_big(off, sc, draw, frac),
        };
        match decision {
            Decision::Done(j) => return j,
            Decision::NeedDigit => frac.extend(1, src),
        }
    }
}

// ------------------------------------------------------------------------------------------------
// public API
// ------------------------------------------------------------------------------------------------

/// One exact `j = ⌊(x + σZ)/2^exponent + ½⌋`, `Z ~ N(0, 1)` (see module docs).
pub fn sample_rounded_gaussian(
    x: f64,
    sigma: f64,
    exponent: i32,
    rng: &mut DpRng,
) -> DpResult<i128> {
    let sc = GridScale::new(sigma, exponent)?;
    let off = Offset::new(x, exponent)?;
    let mut src = BitSource::new(rng);
    Ok(sample_index(&off, &sc, &mut ExactNormal::new(), &mut src))
}

/// One exact standard normal as `(negative, K, U to 64 digits)`, evaluated to an `f64` (tests and
/// diagnostics only: a float normal must never be released).
pub fn standard_normal_f64(rng: &mut DpRng) -> f64 {
    let mut src = BitSource::new(rng);
    let mut normal = ExactNormal::new();
    let draw = normal.sample(&mut src);
    let u = normal.fraction().approx_f64(&mut src);
    let z = draw.int_part as f64 + u;
    if draw.negative {
        -z
    } else {
        z
    }
}

fn prepare(
    values: ArrayView1<f64>,
    sigma: f64,
    exponent: i32,
) -> DpResult<(Vec<Offset>, GridScale)> {
    let sc = GridScale::new(sigma, exponent)?;
    if values.is_empty() {
        return Err(DpError::invalid("value", "must not be empty"));
    }
    let xs = values.to_vec();
    let prepared: Vec<DpResult<Offset>> =
        xs.par_iter().map(|&x| Offset::new(x, exponent)).collect();
    // Sequential collection reports the first invalid coordinate, whatever the thread count.
    let offsets = prepared.into_iter().collect::<DpResult<Vec<_>>>()?;
    Ok((offsets, sc))
}

/// `reps` independent draws of every prepared value, mapped by `f`; chunked and streamed so the
/// result is the same for any number of threads.
fn par_indices<T: Send + Default + Clone>(
    offsets: &[Offset],
    reps: usize,
    sc: &GridScale,
    rng: &mut DpRng,
    f: impl Fn(i128) -> T + Sync,
    cancel: &Cancel,
) -> DpResult<Vec<T>> {
    let d = offsets.len();
    let total = d * reps;
    let mut out = vec![T::default(); total];
    let streams = derive_streams(rng, total.div_ceil(CHUNK));
    out.par_chunks_mut(CHUNK)
        .zip(streams.into_par_iter())
        .enumerate()
        .for_each(|(c, (chunk, mut stream))| {
            if cancel.is_cancelled() {
                return;
            }
            let mut src = BitSource::new(&mut stream);
            let mut normal = ExactNormal::new();
            let start = c * CHUNK;
            for (i, slot) in chunk.iter_mut().enumerate() {
                let off = &offsets[(start + i) % d];
                *slot = f(sample_index(off, sc, &mut normal, &mut src));
            }
        });
    cancel.check()?;
    Ok(out)
}

/// One release of `values`: coordinate `i` is `j_i · 2^exponent` with `j_i` exactly
/// `round((values[i] + σ Z_i) / 2^exponent)` (see module docs).
pub fn release_analytic(
    values: ArrayView1<f64>,
    sigma: f64,
    exponent: i32,
    rng: &mut DpRng,
) -> DpResult<Array1<f64>> {
    release_analytic_cancellable(values, sigma, exponent, rng, Cancel::never())
}

/// [`release_analytic`] polling `cancel` before every chunk.
///
/// # Errors
/// As [`release_analytic`], and [`DpError::Interrupted`] once `cancel` is set.
pub fn release_analytic_cancellable(
    values: ArrayView1<f64>,
    sigma: f64,
    exponent: i32,
    rng: &mut DpRng,
    cancel: &Cancel,
) -> DpResult<Array1<f64>> {
    let (offsets, sc) = prepare(values, sigma, exponent)?;
    Ok(Array1::from(par_indices(
        &offsets,
        1,
        &sc,
        rng,
        |j| unsnap(j, exponent),
        cancel,
    )?))
}

/// `n_samples` independent releases of the same `values` (row `i` is release `i`), for empirical
/// audits: every row has exactly the law of [`release_analytic`].
pub fn release_analytic_repeated(
    values: ArrayView1<f64>,
    n_samples: usize,
    sigma: f64,
    exponent: i32,
    rng: &mut DpRng,
) -> DpResult<Array2<f64>> {
    release_analytic_repeated_cancellable(values, n_samples, sigma, exponent, rng, Cancel::never())
}

/// [`release_analytic_repeated`] polling `cancel` before every chunk.
///
/// # Errors
/// As [`release_analytic_repeated`], and [`DpError::Interrupted`] once `cancel` is set.
pub fn release_analytic_repeated_cancellable(
    values: ArrayView1<f64>,
    n_samples: usize,
    sigma: f64,
    exponent: i32,
    rng: &mut DpRng,
    cancel: &Cancel,
) -> DpResult<Array2<f64>> {
    if n_samples == 0 {
        return Err(DpError::invalid("n_samples", "must be positive"));
    }
    let (offsets, sc) = prepare(values, sigma, exponent)?;
    let d = offsets.len();
    let flat = par_indices(
        &offsets,
        n_samples,
        &sc,
        rng,
        |j| unsnap(j, exponent),
        cancel,
    )?;
    Ok(Array2::from_shape_vec((n_samples, d), flat).expect("shape matches length"))
}

/// `n` exact grid indices `j` for one value (distribution tests).
pub fn sample_indices(
    x: f64,
    sigma: f64,
    exponent: i32,
    n: usize,
    rng: &mut DpRng,
) -> DpResult<Vec<i128>> {
    let sc = GridScale::new(sigma, exponent)?;
    let off = Offset::new(x, exponent)?;
    par_indices(
        std::slice::from_ref(&off),
        n,
        &sc,
        rng,
        |j| j,
        Cancel::never(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::noise::rng::rng_from_seed;
    use ndarray::array;

    const ALPHA: f64 = 1e-6;

    /// Standard normal CDF to ~1e-16 absolute (and good relative accuracy in the tails):
    /// Marsaglia's series `Φ(z) = ½ + φ(z)·Σ z^{2n+1}/(2n+1)!!` for |z| < 3, and the continued
    /// fraction `1 − Φ(z) = φ(z)/(z + 1/(z + 2/(z + 3/(z + …))))` beyond.
    fn phi(z: f64) -> f64 {
        let pdf = (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
        if z.abs() < 3.0 {
            let (mut term, mut sum, mut n) = (z, z, 1.0);
            while term.abs() > 1e-18 * sum.abs().max(1e-300) {
                n += 2.0;
                term *= z * z / n;
                sum += term;
            }
            0.5 + pdf * sum
        } else {
            let a = z.abs();
            // Evaluate the continued fraction backwards from depth 200.
            let mut cf = a;
            for k in (1..=200).rev() {
                cf = a + k as f64 / cf;
            }
            let tail = pdf / cf;
            if z > 0.0 {
                1.0 - tail
            } else {
                tail
            }
        }
    }

    /// Upper-α quantile of χ²(k) by Wilson–Hilferty (α = 1e-6: z = 4.7534).
    fn chi2_crit(k: usize) -> f64 {
        let k = k as f64;
        let z = 4.7534;
        k * (1.0 - 2.0 / (9.0 * k) + z * (2.0 / (9.0 * k)).sqrt()).powi(3)
    }

    /// Pearson χ² of the draws `js` against `P[j] = Φ(((j+½)g − x)/σ) − Φ(((j−½)g − x)/σ)`,
    /// cells with expectation < 20 pooled; returns (statistic, dof).
    fn chi_square_rounded(js: &[i128], x_units: f64, s_units: f64) -> (f64, usize) {
        let n = js.len() as f64;
        let centre = x_units.round() as i128;
        let half = (12.0 * s_units).ceil() as i128 + 2;
        let (lo, hi) = (centre - half, centre + half);
        let mut counts = vec![0u64; (hi - lo + 1) as usize];
        let mut outside = 0u64;
        for &j in js {
            if j < lo || j > hi {
                outside += 1;
            } else {
                counts[(j - lo) as usize] += 1;
            }
        }
        let mut stat = 0.0;
        let mut dof = 0usize;
        let (mut pool_o, mut pool_e) = (outside as f64, 0.0);
        let mut inside_p = 0.0;
        for (i, &c) in counts.iter().enumerate() {
            let j = (lo + i as i128) as f64;
            let p = phi((j + 0.5 - x_units) / s_units) - phi((j - 0.5 - x_units) / s_units);
            inside_p += p;
            let e = p * n;
            if e < 20.0 {
                pool_o += c as f64;
                pool_e += e;
            } else {
                stat += (c as f64 - e).powi(2) / e;
                dof += 1;
            }
        }
        pool_e += (1.0 - inside_p).max(0.0) * n;
        if pool_e > 1e-9 {
            stat += (pool_o - pool_e).powi(2) / pool_e;
            dof += 1;
        } else {
            assert_eq!(pool_o, 0.0, "draws where the law has no mass");
        }
        (stat, dof - 1)
    }

    #[test]
    fn phi_is_accurate() {
        // Reference values (Marsaglia's series in 50-digit decimal arithmetic, rounded to the nearest double).
        assert!((phi(0.0) - 0.5).abs() < 1e-16);
        assert!((phi(1.0) - 0.8413447460685429).abs() < 3e-16);
        assert!((phi(-2.5) - 0.006209665325776135).abs() < 3e-16);
        assert!((phi(2.9) - 0.998134186699616).abs() < 3e-16);
        assert!(((phi(-4.0) - 3.1671241833119924e-05) / 3.167e-5).abs() < 1e-13);
        assert!(((phi(-8.0) - 6.220960574271784e-16) / 6.22e-16).abs() < 1e-12);
    }

    #[test]
    fn bit_source_and_lazy_uniform_bookkeeping() {
        let mut rng = rng_from_seed(Some(1));
        let mut src = BitSource::new(&mut rng);
        let mut u = LazyUniform::default();
        let mut bits = Vec::new();
        for i in 0..150u64 {
            bits.push(u.digit(i, &mut src));
        }
        u.extend(77, &mut src);
        for i in 150..227u64 {
            bits.push(u.digit(i, &mut src));
        }
        assert_eq!(u.len(), 227);
        for (i, &b) in bits.iter().enumerate() {
            assert_eq!(u.get(i as u64), b);
        }
        // prefix_u128 and prefix_big agree with the digits.
        let mut v = LazyUniform::default();
        v.extend(100, &mut src);
        let p = v.prefix_u128().unwrap();
        for i in 0..100u64 {
            assert_eq!((p >> (99 - i)) & 1 == 1, v.get(i));
        }
        assert_eq!(BigInt::from(p), v.prefix_big());
        // bits() and uniform_below() are uniform.
        let n = 200_000;
        let mut counts = [0u64; 6];
        for _ in 0..n {
            counts[src.uniform_below(6) as usize] += 1;
        }
        for c in counts {
            let e = n as f64 / 6.0;
            assert!((c as f64 - e).abs() < 6.0 * (e * 5.0 / 6.0).sqrt());
        }
        let ones: u32 = (0..10_000).map(|_| src.bits(37).count_ones()).sum();
        let e = 10_000.0 * 37.0 / 2.0;
        assert!((ones as f64 - e).abs() < 6.0 * (10_000.0f64 * 37.0 / 4.0).sqrt());
    }

    #[test]
    fn exp_minus_half_has_probability_e_to_minus_half() {
        let mut rng = rng_from_seed(Some(2));
        let mut src = BitSource::new(&mut rng);
        let mut normal = ExactNormal::new();
        let n = 400_000;
        let hits = (0..n).filter(|_| normal.exp_minus_half(&mut src)).count() as f64;
        let p = (-0.5f64).exp();
        assert!((hits / n as f64 - p).abs() < 5.3 * (p * (1.0 - p) / n as f64).sqrt());
    }

    #[test]
    fn standard_normal_passes_ks() {
        let mut rng = rng_from_seed(Some(3));
        let n = 300_000;
        let mut z: Vec<f64> = (0..n).map(|_| standard_normal_f64(&mut rng)).collect();
        z.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let mut dn = 0f64;
        for (i, &v) in z.iter().enumerate() {
            let f = phi(v);
            dn = dn
                .max((f - i as f64 / n as f64).abs())
                .max(((i + 1) as f64 / n as f64 - f).abs());
        }
        // Dvoretzky–Kiefer–Wolfowitz (Massart): P[D_n > t] ≤ 2 exp(−2 n t²).
        let crit = ((2.0 / ALPHA).ln() / (2.0 * n as f64)).sqrt();
        assert!(dn < crit, "KS D = {dn}, critical {crit}");
        // Moments as a second, cheap check.
        let m2 = z.iter().map(|v| v * v).sum::<f64>() / n as f64;
        assert!(
            (m2 - 1.0).abs() < 6.0 * (2.0 / n as f64).sqrt(),
            "E Z² = {m2}"
        );
    }

    #[test]
    fn rounded_gaussian_matches_the_exact_cell_probabilities() {
        // (x/g, σ/g, grid exponent): small σ/g so that every cell is resolved by the test.
        let cases: [(f64, f64, i32); 6] = [
            (0.37, 1.3, 0),
            (-2.71, 0.45, 0),
            (5.5, 2.0, 0), // x on a cell boundary of the grid of exponent 0
            (0.125, 0.8, 3),
            (1e-30, 0.6, 0), // |x| ≪ g: hundreds of fraction digits, arbitrary-precision path
            (-0.5 + 2f64.powi(-40), 1.1, -2),
        ];
        for (case, &(xu, su, k)) in cases.iter().enumerate() {
            let g = 2f64.powi(k);
            let (x, sigma) = (xu * g, su * g);
            let mut rng = rng_from_seed(Some(100 + case as u64));
            let js = sample_indices(x, sigma, k, 400_000, &mut rng).unwrap();
            let (stat, dof) = chi_square_rounded(&js, xu, su);
            eprintln!(
                "case {case}: χ² = {stat:.1}, dof = {dof}, critical {:.1}",
                chi2_crit(dof.max(1))
            );
            assert!(
                stat < chi2_crit(dof.max(1)),
                "case {case}: χ² = {stat}, dof = {dof}"
            );
        }
    }

    #[test]
    fn fine_grid_release_matches_the_normal_cdf() {
        // σ/g = 2^40·1.37: the release is N(x, σ²) up to a 2^-40σ grid.
        let (x, sigma, k) = (-3.25, 1.37, -40);
        let v = array![x];
        let out =
            release_analytic_repeated(v.view(), 200_000, sigma, k, &mut rng_from_seed(Some(5)))
                .unwrap();
        let mut z: Vec<f64> = out.iter().map(|y| (y - x) / sigma).collect();
        z.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let n = z.len() as f64;
        let mut dn = 0f64;
        for (i, &v) in z.iter().enumerate() {
            let f = phi(v);
            dn = dn
                .max((f - i as f64 / n).abs())
                .max(((i + 1) as f64 / n - f).abs());
        }
        let crit = ((2.0 / ALPHA).ln() / (2.0 * n)).sqrt();
        assert!(dn < crit, "KS D = {dn}, critical {crit}");
        for y in out.iter() {
            let u = y * 2f64.powi(40);
            assert_eq!(u, u.round(), "release off the grid");
        }
    }

    #[test]
    fn fast_and_arbitrary_precision_decisions_agree() {
        let mut rng = rng_from_seed(Some(6));
        let mut src = BitSource::new(&mut rng);
        let mut normal = ExactNormal::new();
        let xs = [0.37, -1234.5678, 1e-9, 3.0e5, -7.25];
        let mut checked = 0;
        for &(sigma, k) in &[(1.3, 0), (0.001, -20), (3.7, -39), (1e4, -30), (2.5, 1)] {
            let sc = GridScale::new(sigma, k).unwrap();
            for &x in &xs {
                let off = match Offset::new(x, k) {
                    Ok(o) => o,
                    Err(_) => continue,
                };
                for _ in 0..300 {
                    let draw = normal.sample(&mut src);
                    let frac = normal.fraction();
                    for _ in 0..70 {
                        if let Some(fast) = decide_fast(&off, &sc, draw, frac) {
                            let big = decide_big(&off, &sc, draw, frac);
                            match (fast, big) {
                                (Decision::Done(a), Decision::Done(b)) => assert_eq!(a, b),
                                (Decision::NeedDigit, Decision::NeedDigit) => {}
                                _ => panic!(
                                    "fast and big decisions differ (x={x}, σ={sigma}, k={k})"
                                ),
                            }
                            checked += 1;
                        }
                        frac.extend(1, &mut src);
                    }
                }
            }
        }
        assert!(checked > 10_000);
    }

    #[test]
    fn offsets_are_exact() {
        // x/g + ½ = I + f for a few hand-checked cases.
        let o = Offset::new(0.37 * 8.0, 3).unwrap(); // x/g = 0.37 (as a double) → I = 0
        assert_eq!(o.int_part, 0);
        let o = Offset::new(-2.75, 0).unwrap(); // −2.75 + ½ = −2.25 = −3 + 3/4
        assert_eq!(
            (o.int_part, o.frac_big(), o.frac_bits),
            (-3, BigInt::from(3), 2)
        );
        let o = Offset::new(6.0, 1).unwrap(); // 3 + ½
        assert_eq!((o.int_part, o.frac_bits), (3, 1));
        let o = Offset::new(1.5, 0).unwrap(); // 2 + 0
        assert_eq!(
            (o.int_part, o.frac_big(), o.frac_bits),
            (2, BigInt::from(0), 0)
        );
        let o = Offset::new(-1e-300, 0).unwrap(); // ½ − tiny = 0 + (2^sh − m)/2^(sh+1)
        assert_eq!(o.int_part, 0);
        assert!(o.frac_bits > 1000 && matches!(o.frac, Frac::Big(_)));
        // The i128 and arbitrary-precision constructions agree at the boundary (sh ≈ 119..121).
        for e in [-118, -119, -120, -121, -122] {
            let x = -3.0 * 2f64.powi(e); // m·2^(e') with sh around 120
            let o = Offset::new(x, 0).unwrap();
            // x + ½ = int + frac/2^bits, reconstructed exactly in arbitrary precision.
            let lhs = (BigInt::from(-3) << 200u32 >> (-e) as u32) + (BigInt::from(1) << 199u32);
            let rhs = (BigInt::from(o.int_part) << 200u32) + (o.frac_big() << (200 - o.frac_bits));
            assert_eq!(lhs, rhs, "e = {e}");
        }
        let s = GridScale::new(1.5, -2).unwrap(); // 6 = 3·2^1
        assert_eq!((s.mant, s.shift), (3, -1));
    }

    #[test]
    fn releases_are_reproducible_and_thread_count_independent() {
        let v = array![0.0, 1.0, -2.5, 1e-12];
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                release_analytic_repeated(v.view(), 3000, 0.9, -30, &mut rng_from_seed(Some(9)))
                    .unwrap()
            })
        };
        let one = run(1);
        assert_eq!(one, run(2));
        assert_eq!(one, run(3));
        assert_eq!(one.shape(), &[3000, 4]);
        let a = release_analytic(v.view(), 0.9, -30, &mut rng_from_seed(Some(10))).unwrap();
        let b = release_analytic(v.view(), 0.9, -30, &mut rng_from_seed(Some(10))).unwrap();
        assert_eq!(a, b);
        let c = release_analytic(v.view(), 0.9, -30, &mut rng_from_seed(Some(11))).unwrap();
        assert_ne!(a, c);
        let s1 = sample_rounded_gaussian(0.5, 2.0, -10, &mut rng_from_seed(Some(12))).unwrap();
        let s2 = sample_rounded_gaussian(0.5, 2.0, -10, &mut rng_from_seed(Some(12))).unwrap();
        assert_eq!(s1, s2);
    }

    #[test]
    fn a_set_cancel_flag_interrupts_the_release() {
        let v = Array1::from_elem(3 * CHUNK, 0.25);
        let stop = Cancel::new();
        stop.cancel();
        let mut rng = rng_from_seed(Some(4));
        assert_eq!(
            release_analytic_cancellable(v.view(), 1.0, -8, &mut rng, &stop),
            Err(DpError::Interrupted)
        );
        assert_eq!(
            release_analytic_repeated_cancellable(v.view(), 2, 1.0, -8, &mut rng, &stop),
            Err(DpError::Interrupted)
        );
        let a = release_analytic_cancellable(
            v.view(),
            1.0,
            -8,
            &mut rng_from_seed(Some(5)),
            &Cancel::new(),
        )
        .unwrap();
        assert_eq!(
            a,
            release_analytic(v.view(), 1.0, -8, &mut rng_from_seed(Some(5))).unwrap()
        );
    }

    #[test]
    fn rejects_bad_parameters() {
        let v = array![1.0];
        let mut rng = rng_from_seed(Some(1));
        let name = |r: DpResult<Array1<f64>>| match r {
            Err(DpError::InvalidArgument { name, .. }) => name,
            Err(DpError::OutOfMemory { name, .. }) => name,
            Err(DpError::Interrupted) => "interrupted",
            Ok(_) => "ok",
        };
        assert_eq!(
            name(release_analytic(v.view(), f64::NAN, 0, &mut rng)),
            "sigma"
        );
        assert_eq!(name(release_analytic(v.view(), 0.0, 0, &mut rng)), "sigma");
        assert_eq!(name(release_analytic(v.view(), -1.0, 0, &mut rng)), "sigma");
        assert_eq!(
            name(release_analytic(v.view(), f64::INFINITY, 0, &mut rng)),
            "sigma"
        );
        assert_eq!(
            name(release_analytic(v.view(), 1.0, -70, &mut rng)),
            "sigma"
        ); // σ/g = 2^70
        assert_eq!(name(release_analytic(v.view(), 1.0, 40, &mut rng)), "sigma"); // σ/g = 2^-40
        assert_eq!(
            name(release_analytic(v.view(), 1.0, 2000, &mut rng)),
            "grid_exponent"
        );
        assert_eq!(
            name(release_analytic(array![f64::NAN].view(), 1.0, 0, &mut rng)),
            "value"
        );
        assert_eq!(
            name(release_analytic(array![1e40].view(), 1.0, 0, &mut rng)),
            "value"
        );
        assert_eq!(
            name(release_analytic(
                Array1::<f64>::zeros(0).view(),
                1.0,
                0,
                &mut rng
            )),
            "value"
        );
        assert!(release_analytic_repeated(v.view(), 0, 1.0, 0, &mut rng).is_err());
        assert!(sample_rounded_gaussian(f64::INFINITY, 1.0, 0, &mut rng).is_err());
    }
}

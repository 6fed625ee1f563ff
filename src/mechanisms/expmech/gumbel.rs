//! Gumbel keys: the two ChaCha20 [`Streams`] of a chunk (16-bit lanes plus addressed auxiliary
//! words), the Gumbel variable of a candidate ([`gumbel_eval`], [`gumbel_from_parts`]), the skip
//! table bounding it from the lane alone, and the key error bound [`key_error_bound`] (see the
//! parent module's docs: "Floating-point safety of the Gumbel keys" and "The skip test").

use rand_core::{Rng, SeedableRng};

use crate::fp::LIBM_LN_ULPS;
use crate::mechanisms::noise::DpRng;

/// Leading-zero counts above this switch to log-domain evaluation (see module docs).
pub(super) const K_DIRECT_MAX: u64 = 1000;
/// Safety cap of the leading-zero count (a run of 16384 zero bits: probability 2^-16384).
const K_CAP: u64 = 16384;

// ------------------------------------------------------------------------------------------------
// Gumbel keys
// ------------------------------------------------------------------------------------------------

/// `η = 2⁻⁴⁸ + 2⁻⁵¹·exponent_bound + 2⁻⁵⁰·746` (for [`LIBM_LN_ULPS`] ≤ 2; the `ln` error
/// coefficient `(2·LIBM_LN_ULPS + 1)·2⁻⁵³` is rounded up to `2⁻⁵⁰`): every computed Gumbel key is within `η` of the exact
/// key (see the module docs), so the floating-point sampler's probabilities are within a factor
/// `e^{±2η}` of the exact exponential mechanism's and it is `(ε_em + 4η)`-DP when the exact
/// mechanism is `ε_em`-DP.
pub fn key_error_bound(exponent_bound: f64) -> f64 {
    const _: () = assert!(
        LIBM_LN_ULPS <= 2.0,
        "key_error_bound's ln coefficient assumes LIBM_LN_ULPS <= 2"
    );
    (2f64).powi(-48) + (2f64).powi(-51) * exponent_bound + (2f64).powi(-50) * 746.0
}

/// Main-stream lanes per buffer refill (a lane is 16 bits: one candidate).
const LANE_BUF: usize = 256;
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
///
/// [`sample_many`]: super::sample_many
pub(super) struct Streams {
    main: DpRng,
    aux: DpRng,
    /// Index of the auxiliary word the next `aux.next_u64()` returns (`u64::MAX`: unknown).
    aux_next: u64,
    pub(super) buf: [u16; LANE_BUF],
    pub(super) pos: usize,
}

impl Streams {
    /// Main stream `stream` and auxiliary stream `stream | 2⁶³` of ChaCha20 keyed with `key`.
    pub(super) fn new(key: &[u8; 32], stream: u64) -> Self {
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
    pub(super) fn ensure(&mut self, n: usize) {
        if self.pos + n > LANE_BUF {
            self.refill();
        }
    }

    #[inline(always)]
    pub(super) fn next_lane(&mut self) -> u16 {
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
pub(super) type SkipTable = [f64; 32];

pub(super) fn skip_table() -> SkipTable {
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
pub(super) fn skip_index(x: u16) -> usize {
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
pub(super) fn gumbel_eval(x: u16, j: u64, st: &mut Streams) -> f64 {
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
pub(super) fn gumbel_from_parts(branch_b: bool, k: u64, m: u64) -> f64 {
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

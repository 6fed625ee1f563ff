//! Deterministic inputs shared by the unit tests (compiled for `cargo test` only).

use ndarray::Array2;

use crate::fp::{gamma_k, UNIT_ROUNDOFF};
use crate::mechanisms::noise::rng::{open_unit_f64, rng_from_seed};

/// `n` deterministic values in `[lo, hi)` from xorshift64* (no RNG dependency).
pub(crate) fn uniform(n: usize, lo: f64, hi: f64, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            let u = (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
            lo + (hi - lo) * u
        })
        .collect()
}

/// An `n × d` matrix of xorshift64* values in `[-1, 1)`.
pub(crate) fn uniform_points(n: usize, d: usize, seed: u64) -> Array2<f64> {
    Array2::from_shape_vec((n, d), uniform(n * d, -1.0, 1.0, seed)).expect("n·d values")
}

/// An `n × d` matrix of ChaCha-drawn values in `(-1, 1)` (the crate's own seeded RNG).
pub(crate) fn rng_points(n: usize, d: usize, seed: u64) -> Array2<f64> {
    let mut rng = rng_from_seed(Some(seed));
    Array2::from_shape_simple_fn((n, d), || 2.0 * open_unit_f64(&mut rng) - 1.0)
}

/// `(Σ x_i y_i, Σ |x_i y_i|)`, the sum by Ogita–Rump–Oishi's Dot2 (TwoProduct by FMA, TwoSum): as if
/// computed in twice the working precision, within [`dot2_err`] of the exact sum (the reference the
/// float-bound tests compare the crate's sums with).
pub(crate) fn dot2(x: &[f64], y: &[f64]) -> (f64, f64) {
    let (mut p, mut s, mut abs) = (0.0f64, 0.0f64, 0.0f64);
    for (&a, &b) in x.iter().zip(y) {
        let h = a * b;
        let r = a.mul_add(b, -h); // exact: a·b = h + r
        let q0 = p + h;
        let z = q0 - p;
        let q = (p - (q0 - z)) + (h - z); // exact: p + h = q0 + q
        p = q0;
        s += q + r;
        abs += h.abs();
    }
    (p + s, abs)
}

/// [`dot2`]'s error bound for `n` terms, its result `want` and `abs = Σ|x_i y_i|`: `u|want| +
/// 2 γ_n² Σ|x_i y_i|` (Ogita, Rump & Oishi 2005: `|dot2 − exact| ≤ u|exact| + γ_n² Σ|x_i y_i|`, here
/// with a factor 2 of margin on the second term), the allowance both float-bound tests gave the reference.
pub(crate) fn dot2_err(n: usize, want: f64, abs: f64) -> f64 {
    UNIT_ROUNDOFF * want.abs() + 2.0 * gamma_k(n as f64).powi(2) * abs
}

//! Deterministic inputs shared by the unit tests (compiled for `cargo test` only).

use ndarray::Array2;

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

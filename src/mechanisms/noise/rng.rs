//! ChaCha20 random number generators.
//!
//! Privacy assumption named here: the noise of every mechanism is only as unpredictable as its
//! generator. The default generator is ChaCha20 keyed from the operating system's CSPRNG
//! (`rand::make_rng`), i.e. cryptographically secure. An explicit `u64` seed gives bit-for-bit
//! reproducible output **for research and tests only** — anyone who knows the seed knows the noise.
//!
//! Parallel code never shares one generator between threads: [`derive_streams`] draws a fresh
//! 256-bit key from the parent and gives chunk `i` the ChaCha stream `i` of that key (a distinct
//! nonce), so the streams are independent and the output does not depend on how rayon schedules
//! the chunks.

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};

/// The generator used by all of dpcore.
pub type DpRng = ChaCha20Rng;

/// OS-seeded (secure) generator when `seed` is `None`, reproducible generator otherwise.
pub fn rng_from_seed(seed: Option<u64>) -> DpRng {
    match seed {
        Some(s) => DpRng::seed_from_u64(s),
        None => rand::make_rng::<DpRng>(),
    }
}

/// `k` independent generators for parallel chunks, derived deterministically from `parent`.
pub fn derive_streams(parent: &mut DpRng, k: usize) -> Vec<DpRng> {
    let mut key = [0u8; 32];
    parent.fill_bytes(&mut key);
    (0..k)
        .map(|i| {
            let mut child = DpRng::from_seed(key);
            child.set_stream(i as u64);
            child
        })
        .collect()
}

/// A uniformly random `u128`.
#[inline]
pub fn next_u128<R: Rng + ?Sized>(rng: &mut R) -> u128 {
    ((rng.next_u64() as u128) << 64) | rng.next_u64() as u128
}

/// A uniform double in the open interval (0, 1): `(k + 0.5) / 2^53` with `k` uniform in [0, 2^53).
#[inline]
pub fn open_unit_f64<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let k = rng.next_u64() >> 11;
    (k as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_is_reproducible_and_os_seeded_differs() {
        let a: Vec<u64> = {
            let mut r = rng_from_seed(Some(7));
            (0..4).map(|_| r.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut r = rng_from_seed(Some(7));
            (0..4).map(|_| r.next_u64()).collect()
        };
        assert_eq!(a, b);
        let mut o1 = rng_from_seed(None);
        let mut o2 = rng_from_seed(None);
        assert_ne!(o1.next_u64(), o2.next_u64());
    }

    #[test]
    fn streams_are_distinct_and_deterministic() {
        let mut p1 = rng_from_seed(Some(1));
        let mut p2 = rng_from_seed(Some(1));
        let mut s1 = derive_streams(&mut p1, 3);
        let mut s2 = derive_streams(&mut p2, 3);
        let first: Vec<u64> = s1.iter_mut().map(|r| r.next_u64()).collect();
        let again: Vec<u64> = s2.iter_mut().map(|r| r.next_u64()).collect();
        assert_eq!(first, again);
        assert_ne!(first[0], first[1]);
        assert_ne!(first[1], first[2]);
    }

    #[test]
    fn open_unit_is_inside_the_open_interval() {
        let mut r = rng_from_seed(Some(3));
        for _ in 0..10_000 {
            let u = open_unit_f64(&mut r);
            assert!(u > 0.0 && u < 1.0);
        }
    }
}

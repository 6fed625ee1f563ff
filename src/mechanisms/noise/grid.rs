//! Released-noise mechanisms on a power-of-two grid.
//!
//! A release of `x ∈ ℝ^d` is `(round(x / g) + Y) · g` where `g = 2^k`, `round` is
//! round-half-away-from-zero and `Y ∈ ℤ^d` has i.i.d. exact discrete Laplace or discrete Gaussian
//! coordinates ([`super::exact`]). The released numbers are exact multiples of `g`; converting
//! the integer `round(x/g) + Y` to `f64` is a deterministic post-processing of that integer.
//!
//! Privacy bookkeeping (done by the caller, `dpcore.mechanisms.noise`): snapping changes each coordinate by
//! at most `g/2`, so for neighbouring inputs `|round(a_j) − round(a'_j)| ≤ |a_j − a'_j|/g + 1`.
//! Hence an L1 sensitivity `Δ₁` becomes at most `⌊Δ₁/g⌋ + d` grid units and an L2 sensitivity
//! `Δ₂` at most `Δ₂/g + √d` grid units. The caller calibrates the discrete noise for these
//! inflated integer sensitivities; nothing here depends on the data except the snapped values.
//!
//! Parallelism: coordinates are processed in fixed-size chunks, chunk `i` drawing from ChaCha
//! stream `i` of a key taken from the caller's generator ([`super::rng::derive_streams`]), so
//! the output is identical for any number of threads.
//!
//! Interruption: the `_cancellable` variants poll a [`Cancel`] flag before every chunk (a few
//! milliseconds of exact sampling at most) and return [`DpError::Interrupted`] — no partial release
//! — once it is set. The streams are derived before any chunk runs, so an unset flag changes
//! nothing: the output is bit-for-bit that of the plain functions.

use ndarray::{Array1, Array2, ArrayView1};
use rayon::prelude::*;

use super::exact::{discrete_gaussian, discrete_laplace, MAX_PARAM};
use super::rng::{derive_streams, DpRng};
use crate::cancel::Cancel;
use crate::error::{DpError, DpResult};

/// Coordinates per parallel chunk (fixed, so results do not depend on the thread count).
pub const CHUNK: usize = 4096;

/// Smallest / largest admissible grid exponent `k` in `g = 2^k`.
pub const MIN_EXPONENT: i32 = -1000;
/// See [`MIN_EXPONENT`].
pub const MAX_EXPONENT: i32 = 1000;

/// Exact discrete noise on ℤ, in grid units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DiscreteNoise {
    /// `P[Y = y] ∝ exp(-|y| / τ)`, `τ = num/den`.
    Laplace { num: u128, den: u128 },
    /// `P[Y = y] ∝ exp(-y² / (2σ²))`, `σ² = num/den`.
    Gaussian { num: u128, den: u128 },
}

impl DiscreteNoise {
    /// Check the rational parameter is positive and small enough for exact integer arithmetic.
    pub fn validate(&self) -> DpResult<()> {
        let (num, den, name) = match *self {
            DiscreteNoise::Laplace { num, den } => (num, den, "scale"),
            DiscreteNoise::Gaussian { num, den } => (num, den, "sigma2"),
        };
        if num == 0 || den == 0 {
            return Err(DpError::invalid(
                name,
                "numerator and denominator must be positive",
            ));
        }
        if num > MAX_PARAM || den > MAX_PARAM {
            return Err(DpError::invalid(
                name,
                "numerator and denominator must be at most 2^120",
            ));
        }
        if let DiscreteNoise::Gaussian { num, den } = *self {
            // 2·num·den·t² must fit in u128 (t ≈ √(num/den)): require num²·den ≤ 2^124 roughly.
            let t = super::exact::isqrt(num / den) + 1;
            let fits = 2u128
                .checked_mul(num)
                .and_then(|v| v.checked_mul(den))
                .and_then(|v| v.checked_mul(t))
                .and_then(|v| v.checked_mul(t))
                .is_some();
            if !fits {
                return Err(DpError::invalid(
                    name,
                    "variance too large for exact sampling (2·num·den·t² ≥ 2^128)",
                ));
            }
        }
        Ok(())
    }

    /// One exact draw.
    #[inline]
    pub fn sample(&self, rng: &mut DpRng) -> i128 {
        match *self {
            DiscreteNoise::Laplace { num, den } => discrete_laplace(rng, num, den),
            DiscreteNoise::Gaussian { num, den } => discrete_gaussian(rng, num, den),
        }
    }
}

/// `2^e` exactly, for `MIN_EXPONENT ≤ e ≤ MAX_EXPONENT`.
pub fn pow2(e: i32) -> f64 {
    debug_assert!((MIN_EXPONENT..=MAX_EXPONENT).contains(&e));
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// The one check of a grid exponent's range (used by every grid sampler, exact and Karney's).
pub(crate) fn check_exponent(exponent: i32) -> DpResult<()> {
    if !(MIN_EXPONENT..=MAX_EXPONENT).contains(&exponent) {
        return Err(DpError::invalid(
            "grid_exponent",
            format!("must lie in [{MIN_EXPONENT}, {MAX_EXPONENT}], got {exponent}"),
        ));
    }
    Ok(())
}

/// `round(x / 2^exponent)` as an integer (round half away from zero). `x / 2^k` is exact in
/// binary floating point, so this is the exact nearest grid index.
pub fn snap(x: f64, exponent: i32) -> DpResult<i128> {
    if !x.is_finite() {
        return Err(DpError::invalid(
            "value",
            format!("must be finite, got {x:?}"),
        ));
    }
    let scaled = (x * pow2(-exponent)).round();
    if scaled.abs().partial_cmp(&2f64.powi(120)) != Some(std::cmp::Ordering::Less) {
        return Err(DpError::invalid(
            "value",
            format!("{x:e} is too large relative to the noise granularity 2^{exponent}"),
        ));
    }
    Ok(scaled as i128)
}

/// The real number `k · 2^exponent`, rounded to the nearest `f64` and saturated at `±f64::MAX`
/// (post-processing of the exact integer release, so it costs no privacy; a released value is
/// never ±inf even when a value near the float range meets a large noise draw).
#[inline]
pub fn unsnap(k: i128, exponent: i32) -> f64 {
    ((k as f64) * pow2(exponent)).clamp(-f64::MAX, f64::MAX)
}

fn noisy_flat(
    base: &[i128],
    reps: usize,
    exponent: i32,
    noise: &DiscreteNoise,
    rng: &mut DpRng,
    cancel: &Cancel,
) -> DpResult<Vec<f64>> {
    let d = base.len();
    let total = d * reps;
    let mut out = vec![0f64; total];
    let n_chunks = total.div_ceil(CHUNK);
    let streams = derive_streams(rng, n_chunks);
    out.par_chunks_mut(CHUNK)
        .zip(streams.into_par_iter())
        .enumerate()
        .for_each(|(c, (chunk, mut stream))| {
            if cancel.is_cancelled() {
                return;
            }
            let start = c * CHUNK;
            for (j, slot) in chunk.iter_mut().enumerate() {
                let b = base[(start + j) % d];
                let y = noise.sample(&mut stream);
                *slot = unsnap(b.saturating_add(y), exponent);
            }
        });
    cancel.check()?;
    Ok(out)
}

fn snap_all(values: ArrayView1<f64>, exponent: i32) -> DpResult<Vec<i128>> {
    if values.is_empty() {
        return Err(DpError::invalid("value", "must not be empty"));
    }
    values.iter().map(|&x| snap(x, exponent)).collect()
}

/// One release of `values` (see module docs).
pub fn release(
    values: ArrayView1<f64>,
    exponent: i32,
    noise: &DiscreteNoise,
    rng: &mut DpRng,
) -> DpResult<Array1<f64>> {
    release_cancellable(values, exponent, noise, rng, Cancel::never())
}

/// [`release`] polling `cancel` before every chunk (see the module docs).
///
/// # Errors
/// As [`release`], and [`DpError::Interrupted`] once `cancel` is set.
pub fn release_cancellable(
    values: ArrayView1<f64>,
    exponent: i32,
    noise: &DiscreteNoise,
    rng: &mut DpRng,
    cancel: &Cancel,
) -> DpResult<Array1<f64>> {
    check_exponent(exponent)?;
    noise.validate()?;
    let base = snap_all(values, exponent)?;
    Ok(Array1::from(noisy_flat(
        &base, 1, exponent, noise, rng, cancel,
    )?))
}

/// `n_samples` independent releases of the same `values` (row `i` is release `i`). Used to audit a
/// mechanism empirically: every row has exactly the law of [`release`].
pub fn release_repeated(
    values: ArrayView1<f64>,
    n_samples: usize,
    exponent: i32,
    noise: &DiscreteNoise,
    rng: &mut DpRng,
) -> DpResult<Array2<f64>> {
    release_repeated_cancellable(values, n_samples, exponent, noise, rng, Cancel::never())
}

/// [`release_repeated`] polling `cancel` before every chunk (see the module docs).
///
/// # Errors
/// As [`release_repeated`], and [`DpError::Interrupted`] once `cancel` is set.
pub fn release_repeated_cancellable(
    values: ArrayView1<f64>,
    n_samples: usize,
    exponent: i32,
    noise: &DiscreteNoise,
    rng: &mut DpRng,
    cancel: &Cancel,
) -> DpResult<Array2<f64>> {
    check_exponent(exponent)?;
    noise.validate()?;
    if n_samples == 0 {
        return Err(DpError::invalid("n_samples", "must be positive"));
    }
    let base = snap_all(values, exponent)?;
    let d = base.len();
    let flat = noisy_flat(&base, n_samples, exponent, noise, rng, cancel)?;
    Ok(Array2::from_shape_vec((n_samples, d), flat).expect("shape matches length"))
}

/// Draw `n` raw discrete-noise integers (for distribution tests and composite mechanisms).
pub fn sample_integers(n: usize, noise: &DiscreteNoise, rng: &mut DpRng) -> DpResult<Vec<i64>> {
    sample_integers_cancellable(n, noise, rng, Cancel::never())
}

/// [`sample_integers`] polling `cancel` before every chunk (see the module docs).
///
/// # Errors
/// As [`sample_integers`], and [`DpError::Interrupted`] once `cancel` is set.
pub fn sample_integers_cancellable(
    n: usize,
    noise: &DiscreteNoise,
    rng: &mut DpRng,
    cancel: &Cancel,
) -> DpResult<Vec<i64>> {
    noise.validate()?;
    let n_chunks = n.div_ceil(CHUNK);
    let streams = derive_streams(rng, n_chunks);
    let mut out = vec![0i64; n];
    out.par_chunks_mut(CHUNK)
        .zip(streams.into_par_iter())
        .for_each(|(chunk, mut stream)| {
            if cancel.is_cancelled() {
                return;
            }
            for slot in chunk.iter_mut() {
                let y = noise.sample(&mut stream);
                *slot = y.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
            }
        });
    cancel.check()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::noise::rng::rng_from_seed;
    use ndarray::array;

    #[test]
    fn a_set_cancel_flag_interrupts_every_release() {
        let v = Array1::from_elem(3 * CHUNK, 0.25);
        let noise = DiscreteNoise::Laplace { num: 3, den: 1 };
        let stop = Cancel::new();
        stop.cancel();
        let mut rng = rng_from_seed(Some(4));
        assert_eq!(
            release_cancellable(v.view(), -4, &noise, &mut rng, &stop),
            Err(DpError::Interrupted)
        );
        assert_eq!(
            release_repeated_cancellable(v.view(), 2, -4, &noise, &mut rng, &stop),
            Err(DpError::Interrupted)
        );
        assert_eq!(
            sample_integers_cancellable(10, &noise, &mut rng, &stop),
            Err(DpError::Interrupted)
        );
        let a = release_cancellable(
            v.view(),
            -4,
            &noise,
            &mut rng_from_seed(Some(5)),
            &Cancel::new(),
        )
        .unwrap();
        assert_eq!(
            a,
            release(v.view(), -4, &noise, &mut rng_from_seed(Some(5))).unwrap()
        );
    }

    #[test]
    fn snapping_is_exact() {
        assert_eq!(snap(1.5, 0).unwrap(), 2);
        assert_eq!(snap(-1.5, 0).unwrap(), -2);
        assert_eq!(snap(0.3, -2).unwrap(), 1); // 0.3 / 0.25 = 1.2
        assert_eq!(unsnap(5, -2), 1.25);
        assert!(snap(f64::NAN, 0).is_err());
        assert!(snap(1e300, -100).is_err());
    }

    #[test]
    fn releases_lie_on_the_grid_and_are_reproducible() {
        let noise = DiscreteNoise::Laplace {
            num: 1 << 20,
            den: 1,
        };
        let v = array![0.1, -3.7, 1e6];
        let a = release(v.view(), -20, &noise, &mut rng_from_seed(Some(5))).unwrap();
        let b = release(v.view(), -20, &noise, &mut rng_from_seed(Some(5))).unwrap();
        assert_eq!(a, b);
        for x in a.iter() {
            let k = x * 2f64.powi(20);
            assert_eq!(k, k.round());
        }
    }

    #[test]
    fn repeated_releases_are_independent_of_thread_count() {
        let noise = DiscreteNoise::Gaussian {
            num: 1 << 40,
            den: 1,
        };
        let v = array![0.0, 1.0];
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                release_repeated(v.view(), 5000, -20, &noise, &mut rng_from_seed(Some(9))).unwrap()
            })
        };
        assert_eq!(run(1), run(2));
    }

    #[test]
    fn rejects_bad_parameters() {
        let v = array![1.0];
        let mut rng = rng_from_seed(Some(1));
        assert!(release(
            v.view(),
            0,
            &DiscreteNoise::Laplace { num: 0, den: 1 },
            &mut rng
        )
        .is_err());
        assert!(release(
            v.view(),
            2000,
            &DiscreteNoise::Laplace { num: 1, den: 1 },
            &mut rng
        )
        .is_err());
        assert!(release(
            v.view(),
            0,
            &DiscreteNoise::Gaussian {
                num: u128::MAX >> 4,
                den: 1
            },
            &mut rng
        )
        .is_err());
        assert!(release_repeated(
            v.view(),
            0,
            0,
            &DiscreteNoise::Laplace { num: 1, den: 1 },
            &mut rng
        )
        .is_err());
    }
}

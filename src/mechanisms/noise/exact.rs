//! Exact samplers on the integers (Canonne, Kamath & Steinke 2020, Algorithms 1–3).
//!
//! Everything here uses integer arithmetic on `u128` and uniformly random bits only, so the output
//! distribution is *exactly* the stated one (no floating-point approximation anywhere). Parameters
//! are rationals `num / den` with `u128` parts; callers keep them below [`MAX_PARAM`] so that every
//! intermediate product fits.
//!
//! The only deviation from exactness is documented in [`discrete_gaussian`]: a proposal whose
//! acceptance test would overflow `u128` is rejected. With the parameters dpcore uses
//! (σ ≤ 2^28 in grid units) this needs a discrete-Laplace proposal beyond 2^36, an event of
//! probability below e^-256, and rejecting it only removes that far tail.

use rand_core::Rng;

use super::rng::next_u128;

/// Largest numerator/denominator accepted by the samplers (keeps `den · k` and squares in `u128`).
pub const MAX_PARAM: u128 = 1u128 << 120;

/// Uniform integer in `[0, n)`, by rejection on the smallest enclosing power of two. `n > 0`.
#[inline]
pub fn uniform_below<R: Rng + ?Sized>(rng: &mut R, n: u128) -> u128 {
    debug_assert!(n > 0);
    if n.is_power_of_two() {
        return next_u128(rng) & (n - 1);
    }
    let bits = 128 - (n - 1).leading_zeros();
    let mask = if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    };
    loop {
        let x = next_u128(rng) & mask;
        if x < n {
            return x;
        }
    }
}

/// Exact `Bernoulli(num / den)`, `num ≤ den`, `den > 0`.
#[inline]
pub fn bernoulli_rational<R: Rng + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    debug_assert!(den > 0 && num <= den);
    uniform_below(rng, den) < num
}

/// A fair coin.
#[inline]
pub fn fair_coin<R: Rng + ?Sized>(rng: &mut R) -> bool {
    rng.next_u32() & 1 == 1
}

/// Exact `Bernoulli(exp(-γ))` for `γ = num/den ∈ [0, 1]` (CKS Algorithm 1, the von Neumann
/// series): draw `A_k ~ Bernoulli(γ/k)` for `k = 1, 2, …` until the first failure at index `K`;
/// `P[K odd] = exp(-γ)`.
fn bernoulli_exp_neg_unit<R: Rng + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    debug_assert!(num <= den && den > 0);
    let mut k: u128 = 1;
    loop {
        // Bernoulli(num / (den·k)); if den·k overflowed we use the product of two independent
        // Bernoullis, Bernoulli(num/den) · Bernoulli(1/k), which has the same law.
        let success = match den.checked_mul(k) {
            Some(dk) => bernoulli_rational(rng, num, dk),
            None => bernoulli_rational(rng, num, den) && bernoulli_rational(rng, 1, k),
        };
        if !success {
            break;
        }
        k += 1;
    }
    k % 2 == 1
}

/// Exact `Bernoulli(exp(-num/den))` for any `num/den ≥ 0` (CKS Algorithm 1): `exp(-γ) =
/// exp(-1)^⌊γ⌋ · exp(-(γ - ⌊γ⌋))`, each factor an independent exact Bernoulli.
pub fn bernoulli_exp_neg<R: Rng + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    debug_assert!(den > 0);
    let whole = num / den;
    let frac = num % den;
    let mut i: u128 = 0;
    while i < whole {
        if !bernoulli_exp_neg_unit(rng, 1, 1) {
            return false;
        }
        i += 1;
    }
    bernoulli_exp_neg_unit(rng, frac, den)
}

/// Exact discrete Laplace on ℤ with scale `τ = num/den`: `P[Y = y] ∝ exp(-|y| / τ)`
/// (CKS Algorithm 2). `X = U + num·V` with `U` uniform on `[0, num)` accepted with probability
/// `exp(-U/num)` and `V ~ Geometric(1 - e^{-1})` has `P[X = x] ∝ exp(-x/num)`; then
/// `Y = ⌊X / den⌋` has `P[Y = y] ∝ exp(-y·den/num)`, and a fair sign (rejecting "−0") symmetrises it.
pub fn discrete_laplace<R: Rng + ?Sized>(rng: &mut R, num: u128, den: u128) -> i128 {
    debug_assert!(num > 0 && den > 0 && num <= MAX_PARAM && den <= MAX_PARAM);
    loop {
        let u = uniform_below(rng, num);
        if !bernoulli_exp_neg(rng, u, num) {
            continue;
        }
        let mut v: u128 = 0;
        while bernoulli_exp_neg_unit(rng, 1, 1) {
            v += 1;
        }
        let x = match num.checked_mul(v).and_then(|nv| nv.checked_add(u)) {
            Some(x) => x,
            // v > 2^8 at least: probability < e^-256. Unreachable in practice; resample.
            None => continue,
        };
        let y = x / den;
        let negative = fair_coin(rng);
        if negative && y == 0 {
            continue;
        }
        let y = i128::try_from(y).unwrap_or(i128::MAX);
        return if negative { -y } else { y };
    }
}

/// Integer square root: the largest `r` with `r² ≤ n`.
pub fn isqrt(n: u128) -> u128 {
    if n < 2 {
        return n;
    }
    let mut r = (n as f64).sqrt() as u128;
    // Correct the floating-point estimate in both directions.
    while r.checked_mul(r).is_none_or(|rr| rr > n) {
        r -= 1;
    }
    while (r + 1).checked_mul(r + 1).is_some_and(|rr| rr <= n) {
        r += 1;
    }
    r
}

/// Exact discrete Gaussian on ℤ with variance parameter `σ² = num/den`:
/// `P[Y = y] ∝ exp(-y² / (2σ²))` (CKS Algorithm 3). Proposal: discrete Laplace with integer scale
/// `t = ⌊σ⌋ + 1`; accept with probability `exp(-(|y| − σ²/t)² / (2σ²))`, i.e. `exp(-γ)` with
/// `γ = (|y|·t·den − num)² / (2·num·den·t²)`, evaluated exactly in integers.
pub fn discrete_gaussian<R: Rng + ?Sized>(rng: &mut R, num: u128, den: u128) -> i128 {
    debug_assert!(num > 0 && den > 0);
    let t = isqrt(num / den) + 1;
    let gamma_den = 2u128
        .checked_mul(num)
        .and_then(|v| v.checked_mul(den))
        .and_then(|v| v.checked_mul(t))
        .and_then(|v| v.checked_mul(t))
        .expect("discrete_gaussian: 2·num·den·t² must fit in u128 (caller keeps σ² small enough)");
    loop {
        let y = discrete_laplace(rng, t, 1);
        let ay = y.unsigned_abs();
        let scaled = match ay.checked_mul(t).and_then(|v| v.checked_mul(den)) {
            Some(v) => v,
            None => continue, // far tail (see module docs): reject
        };
        let diff = scaled.abs_diff(num);
        let gamma_num = match diff.checked_mul(diff) {
            Some(v) => v,
            None => continue, // far tail (see module docs): reject
        };
        if bernoulli_exp_neg(rng, gamma_num, gamma_den) {
            return y;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::noise::rng::rng_from_seed;

    /// Pearson chi-square statistic of observed counts against expected probabilities; cells with
    /// small expectation are pooled into the last cell.
    fn chi_square(counts: &[u64], probs: &[f64], n: u64) -> (f64, usize) {
        let mut stat = 0.0;
        let mut dof = 0usize;
        let (mut pool_o, mut pool_e) = (0.0, 0.0);
        for (c, p) in counts.iter().zip(probs) {
            let e = p * n as f64;
            if e < 20.0 {
                pool_o += *c as f64;
                pool_e += e;
            } else {
                stat += (*c as f64 - e).powi(2) / e;
                dof += 1;
            }
        }
        if pool_e > 0.0 {
            stat += (pool_o - pool_e).powi(2) / pool_e;
            dof += 1;
        }
        (stat, dof - 1)
    }

    /// Upper 1e-7 quantile of chi-square(k) by the Wilson–Hilferty approximation (conservative
    /// enough for k ≥ 5; z = 5.2 gives ≈ 1e-7).
    fn chi2_crit(k: usize) -> f64 {
        let k = k as f64;
        let z = 5.2;
        k * (1.0 - 2.0 / (9.0 * k) + z * (2.0 / (9.0 * k)).sqrt()).powi(3)
    }

    #[test]
    fn bernoulli_exp_neg_matches_exp() {
        let mut rng = rng_from_seed(Some(11));
        for &(num, den) in &[(1u128, 3u128), (1, 1), (5, 2), (0, 1), (7, 10)] {
            let n = 200_000u64;
            let hits = (0..n)
                .filter(|_| bernoulli_exp_neg(&mut rng, num, den))
                .count() as f64;
            let p = (-(num as f64) / den as f64).exp();
            let sd = (p * (1.0 - p) / n as f64).sqrt();
            assert!(
                (hits / n as f64 - p).abs() <= 5.5 * sd + 1e-12,
                "γ={num}/{den}"
            );
        }
    }

    #[test]
    fn discrete_laplace_matches_pmf() {
        let mut rng = rng_from_seed(Some(12));
        for &(num, den) in &[(3u128, 1u128), (5, 2), (1, 3)] {
            let tau = num as f64 / den as f64;
            let r = (-1.0 / tau).exp();
            let z = (1.0 + r) / (1.0 - r);
            let half = 60i128;
            let n = 300_000u64;
            let mut counts = vec![0u64; (2 * half + 1) as usize];
            for _ in 0..n {
                let y = discrete_laplace(&mut rng, num, den).clamp(-half, half);
                counts[(y + half) as usize] += 1;
            }
            let probs: Vec<f64> = (-half..=half)
                .map(|y| r.powi(y.unsigned_abs() as i32) / z)
                .collect();
            let (stat, dof) = chi_square(&counts, &probs, n);
            assert!(stat < chi2_crit(dof.max(1)), "τ={tau}: χ²={stat} dof={dof}");
        }
    }

    #[test]
    fn discrete_gaussian_matches_pmf() {
        let mut rng = rng_from_seed(Some(13));
        for &(num, den) in &[(4u128, 1u128), (9, 4), (50, 1)] {
            let s2 = num as f64 / den as f64;
            let half = 60i128;
            let w: Vec<f64> = (-half..=half)
                .map(|y| (-(y * y) as f64 / (2.0 * s2)).exp())
                .collect();
            let z: f64 = w.iter().sum();
            let probs: Vec<f64> = w.iter().map(|v| v / z).collect();
            let n = 300_000u64;
            let mut counts = vec![0u64; w.len()];
            for _ in 0..n {
                let y = discrete_gaussian(&mut rng, num, den).clamp(-half, half);
                counts[(y + half) as usize] += 1;
            }
            let (stat, dof) = chi_square(&counts, &probs, n);
            assert!(stat < chi2_crit(dof.max(1)), "σ²={s2}: χ²={stat} dof={dof}");
        }
    }

    #[test]
    fn large_parameters_do_not_overflow() {
        let mut rng = rng_from_seed(Some(14));
        // σ ≈ 2^27 in grid units, as used by the Gaussian mechanism.
        let s2: u128 = 1u128 << 54;
        let mut sum = 0f64;
        let mut sumsq = 0f64;
        let n = 20_000;
        for _ in 0..n {
            let y = discrete_gaussian(&mut rng, s2, 1) as f64 / (1u64 << 27) as f64;
            sum += y;
            sumsq += y * y;
        }
        let var = sumsq / n as f64 - (sum / n as f64).powi(2);
        assert!((var - 1.0).abs() < 0.06, "var={var}");
        // Laplace with τ ≈ 2^40 as a rational with large parts.
        let num: u128 = (1u128 << 70) + 12345;
        let den: u128 = (1u128 << 30) - 7;
        let tau = num as f64 / den as f64;
        let mut abs_sum = 0f64;
        for _ in 0..n {
            abs_sum += (discrete_laplace(&mut rng, num, den) as f64).abs() / tau;
        }
        let mean_abs = abs_sum / n as f64;
        assert!((mean_abs - 1.0).abs() < 0.05, "E|Y|/τ={mean_abs}");
    }

    #[test]
    fn isqrt_is_exact() {
        for n in [
            0u128,
            1,
            2,
            3,
            4,
            15,
            16,
            17,
            1 << 54,
            (1 << 54) + 1,
            u64::MAX as u128,
            u128::MAX,
        ] {
            let r = isqrt(n);
            assert!(r.checked_mul(r).unwrap() <= n);
            assert!((r + 1).checked_mul(r + 1).is_none_or(|v| v > n));
        }
    }
}

//! Shared floating-point building blocks of the core: the CPU-feature dispatch macros, the
//! multiply-add flavours, the branch-free vectorisable `exp` and integer powers.
//!
//! * `simd_dispatch!` / `simd_dispatch_fma!` (crate-internal macros) compile a function body for
//!   AVX2 (and AVX2+FMA) and run that build when the CPU has the features
//!   (`is_x86_feature_detected!`), the portable build otherwise. Used by
//!   [`crate::kernels::evaluation`] (kernel maps, dot products) and
//!   [`crate::mechanisms::multinomial`] (quantisation passes).
//! * [`exp_fast`] / [`exp_fast_slice`]: Cody–Waite range reduction and a degree-13 polynomial,
//!   within [`crate::fp::EXP_FAST_ULPS`] = 2 ulp of a correctly rounded `exp` (tested below against
//!   `f64::exp` from the overflow threshold down to underflow to 0). The kernel engine's RBF loops
//!   ([`crate::kernels::evaluation`]) and the kernel rows of
//!   [`crate::kernel_learning::kernel_cache`] use it.
//! * `ipow`: `b^p` by binary exponentiation (polynomial kernels).
//! * `lanes8_reduce`: the fixed reduction tree of the 8-lane dot products (the kernel engine's and
//!   `kernel_learning::klr_newton`'s), whose depth [`crate::fp::lanes8_sum_terms`] counts.
//!
//! Nothing here depends on the thread count; the FMA flavour is fixed by the CPU, so results are
//! identical across runs on one machine and may differ in the last bits between machines (see
//! [`crate::kernels::evaluation`], "Determinism").

// The lane loops (`for l in 0..LANES`) index several arrays in lockstep on purpose: it is the
// shape LLVM turns into one vector instruction per register.
#![allow(clippy::needless_range_loop)]

// ------------------------------------------------------------------------------------------------
// CPU-feature dispatch and multiply-add flavours
// ------------------------------------------------------------------------------------------------

/// Defines `fn $name(..)` that runs `$body` compiled for AVX2 when the CPU has it, and the
/// portable (SSE2) build otherwise. Both builds execute the same IEEE operations in the same
/// order (Rust never contracts `a * b + c` into an FMA), so results are bit-identical. The body
/// may return a value or nothing.
macro_rules! simd_dispatch {
    ($(#[$m:meta])* fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$m])*
        fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn generic($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2")]
                unsafe fn avx2($($arg: $ty),*) $(-> $ret)? { generic($($arg),*) }
                if std::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU supports AVX2 (checked just above).
                    return unsafe { avx2($($arg),*) };
                }
            }
            generic($($arg),*)
        }
    };
}
pub(crate) use simd_dispatch;

/// Like [`simd_dispatch!`] for bodies generic over the multiply-add flavour `$A: MulAdd`: the
/// AVX2+FMA build uses fused multiply-adds ([`Fused`]), the AVX2 and portable builds do not
/// ([`Unfused`]; these two are bit-identical). The flavour is fixed by the CPU, so results are
/// identical across runs and thread counts on one machine.
macro_rules! simd_dispatch_fma {
    ($(#[$m:meta])* fn $name:ident<$A:ident>($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$m])*
        fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn generic<$A: $crate::numerics::MulAdd>($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2_fma($($arg: $ty),*) $(-> $ret)? { generic::<$crate::numerics::Fused>($($arg),*) }
                #[target_feature(enable = "avx2")]
                unsafe fn avx2($($arg: $ty),*) $(-> $ret)? { generic::<$crate::numerics::Unfused>($($arg),*) }
                if std::is_x86_feature_detected!("avx2") {
                    if std::is_x86_feature_detected!("fma") {
                        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
                        return unsafe { avx2_fma($($arg),*) };
                    }
                    // SAFETY: the CPU supports AVX2 (checked just above).
                    return unsafe { avx2($($arg),*) };
                }
            }
            generic::<$crate::numerics::Unfused>($($arg),*)
        }
    };
}
pub(crate) use simd_dispatch_fma;

/// `a·b + c`, either rounded twice ([`Unfused`]) or once ([`Fused`], only used where the CPU has
/// FMA instructions: elsewhere `f64::mul_add` is a slow library call).
pub(crate) trait MulAdd {
    fn madd(a: f64, b: f64, c: f64) -> f64;
}

/// `a·b + c` with two roundings.
pub(crate) struct Unfused;
/// `a·b + c` with one rounding (FMA).
pub(crate) struct Fused;

impl MulAdd for Unfused {
    #[inline(always)]
    fn madd(a: f64, b: f64, c: f64) -> f64 {
        a * b + c
    }
}

impl MulAdd for Fused {
    #[inline(always)]
    fn madd(a: f64, b: f64, c: f64) -> f64 {
        a.mul_add(b, c)
    }
}

// ------------------------------------------------------------------------------------------------
// Vectorisable exp
// ------------------------------------------------------------------------------------------------

/// `ln 2 = LN2_HI + LN2_LO` (fdlibm's split): `LN2_HI` has 21 trailing zero bits, so `n·LN2_HI`
/// is exact for `|n| < 2²¹`.
const LN2_HI: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000); // 6.93147180369123816490e-01
const LN2_LO: f64 = f64::from_bits(0x3DEA_39EF_3579_3C76); // 1.90821492927058770002e-10
/// 1.5·2⁵²: adding it rounds to an integer (round-to-nearest-even) and parks it in the low bits.
const ROUND_SHIFT: f64 = 6_755_399_441_055_744.0;
/// `ROUND_SHIFT + 1023`: the low 12 bits of `n + EXP_SHIFT` are the biased exponent of 2ⁿ.
const EXP_SHIFT: f64 = 6_755_399_441_056_767.0;
/// Below this every result underflows to +0 (exp(−745.2) < 2⁻¹⁰⁷⁵), above it overflows to +inf.
const EXP_LO: f64 = -746.0;
const EXP_HI: f64 = 710.0;

/// `2ⁿ` for an integer-valued `n` in `[-1022, 1023]` (branch-free, vectorisable).
#[inline(always)]
fn pow2i(n: f64) -> f64 {
    f64::from_bits((n + EXP_SHIFT).to_bits() << 52)
}

/// Taylor coefficients `1/k!`, k = 13 down to 2 (correctly rounded).
const EXP_POLY: [f64; 12] = [
    1.605_904_383_682_161_3e-10,
    2.087_675_698_786_81e-9,
    2.505_210_838_544_172e-8,
    2.755_731_922_398_589e-7,
    2.755_731_922_398_589_3e-6,
    2.480_158_730_158_73e-5,
    1.984_126_984_126_984e-4,
    1.388_888_888_888_889e-3,
    8.333_333_333_333_333e-3,
    4.166_666_666_666_666_4e-2,
    1.666_666_666_666_666_6e-1,
    0.5,
];

/// Branch-free `exp(x)`, written so that LLVM vectorises loops calling it.
///
/// Cody–Waite range reduction `x = n ln2 + r`, `|r| ≤ ln2/2 (+ε)` with a two-part `ln 2`
/// (`n·LN2_HI` is exact for `|n| < 2²¹`); `exp(r) = 1 + (r + r² q(r))` with the degree-13 Taylor
/// polynomial (truncation error < 6e-18 relative, far below half an ulp); scaling by
/// `2ⁿ = 2^{n1} 2^{n2}` with `n1 ≈ n/2` so that the exponent is built exactly over the whole range
/// — results that are subnormal are rounded once, results below `2⁻¹⁰⁷⁵` are `+0`, above
/// `f64::MAX` are `+inf`. Within 2 ulp of a correctly rounded exp for every finite input (the
/// named assumption [`crate::fp::EXP_FAST_ULPS`]; checked against `f64::exp` in the unit tests);
/// `exp_fast(0) = 1` exactly; NaN propagates.
///
/// [`exp_fast_slice`] and the RBF kernel loops of [`crate::kernels::evaluation`] evaluate the same
/// operations on 16 lanes at a time (independent dependency chains for the out-of-order core), with
/// fused multiply-adds on CPUs that have them (equally accurate; bit-identical to `exp_fast` on
/// CPUs without FMA).
#[inline(always)]
pub fn exp_fast(x: f64) -> f64 {
    exp_fast_with::<Unfused>(x)
}

/// [`exp_fast`] with the given multiply-add flavour.
#[inline(always)]
pub(crate) fn exp_fast_with<A: MulAdd>(x: f64) -> f64 {
    // Clamping keeps n in [-1076, 1024]; comparisons (not min/max) let NaN through.
    let x = if x < EXP_LO { EXP_LO } else { x };
    let x = if x > EXP_HI { EXP_HI } else { x };
    let n = (x * std::f64::consts::LOG2_E + ROUND_SHIFT) - ROUND_SHIFT;
    let r = A::madd(-n, LN2_LO, A::madd(-n, LN2_HI, x));
    let mut q = EXP_POLY[0];
    for &c in &EXP_POLY[1..] {
        q = A::madd(q, r, c);
    }
    let p = 1.0 + A::madd(r * r, q, r);
    let n1 = (n * 0.5 + ROUND_SHIFT) - ROUND_SHIFT; // in [-538, 512]
    let n2 = n - n1; // in [-538, 512]
    (p * pow2i(n1)) * pow2i(n2)
}

/// Lanes of [`exp_lanes`]: 16 f64 = 4 AVX2 registers of independent work per step.
pub(crate) const EXP_LANES: usize = 16;

/// `exp_fast` on 16 values at once, step by step across the lanes so that each step is one
/// vector instruction per register and the polynomial's dependency chains interleave.
/// Bit-identical to `exp_fast_with::<A>` lane by lane (same operations, same order).
#[inline(always)]
pub(crate) fn exp_lanes<A: MulAdd>(x: &mut [f64; EXP_LANES]) {
    let mut n = [0.0f64; EXP_LANES];
    let mut r = [0.0f64; EXP_LANES];
    let mut q = [EXP_POLY[0]; EXP_LANES];
    for l in 0..EXP_LANES {
        let v = if x[l] < EXP_LO { EXP_LO } else { x[l] };
        x[l] = if v > EXP_HI { EXP_HI } else { v };
    }
    for l in 0..EXP_LANES {
        n[l] = (x[l] * std::f64::consts::LOG2_E + ROUND_SHIFT) - ROUND_SHIFT;
    }
    for l in 0..EXP_LANES {
        r[l] = A::madd(-n[l], LN2_LO, A::madd(-n[l], LN2_HI, x[l]));
    }
    for &c in &EXP_POLY[1..] {
        for l in 0..EXP_LANES {
            q[l] = A::madd(q[l], r[l], c);
        }
    }
    for l in 0..EXP_LANES {
        let p = 1.0 + A::madd(r[l] * r[l], q[l], r[l]);
        let n1 = (n[l] * 0.5 + ROUND_SHIFT) - ROUND_SHIFT;
        let n2 = n[l] - n1;
        x[l] = (p * pow2i(n1)) * pow2i(n2);
    }
}

/// `row[j] ← exp(f(row[j], aux[j]))` in place: 16 lanes at a time, scalar tail
/// (`aux` is at least as long as `row`).
#[inline(always)]
pub(crate) fn exp_map_in_place<A: MulAdd>(
    row: &mut [f64],
    aux: &[f64],
    f: impl Fn(f64, f64) -> f64,
) {
    let aux = &aux[..row.len()];
    let split = row.len() - row.len() % EXP_LANES;
    let (body, tail) = row.split_at_mut(split);
    let (aux_body, aux_tail) = aux.split_at(split);
    for (chunk, a) in body
        .chunks_exact_mut(EXP_LANES)
        .zip(aux_body.chunks_exact(EXP_LANES))
    {
        let chunk: &mut [f64; EXP_LANES] = chunk.try_into().expect("exact chunk");
        let a: &[f64; EXP_LANES] = a.try_into().expect("exact chunk");
        let mut lanes = [0.0f64; EXP_LANES];
        for l in 0..EXP_LANES {
            lanes[l] = f(chunk[l], a[l]);
        }
        exp_lanes::<A>(&mut lanes);
        *chunk = lanes;
    }
    for (v, &a) in tail.iter_mut().zip(aux_tail) {
        *v = exp_fast_with::<A>(f(*v, a));
    }
}

/// `exp` of every element in place, vectorised (16 lanes, AVX2 and FMA when available); within
/// 2 ulp ([`crate::fp::EXP_FAST_ULPS`]) of a correctly rounded exp like [`exp_fast`]
/// (bit-identical to it on CPUs without FMA).
pub fn exp_fast_slice(values: &mut [f64]) {
    simd_dispatch_fma! {
        fn exp_in_place<A>(values: &mut [f64]) {
            const ZEROS: [f64; 256] = [0.0; 256];
            for block in values.chunks_mut(ZEROS.len()) {
                exp_map_in_place::<A>(block, &ZEROS, |v, _| v);
            }
        }
    }
    exp_in_place(values)
}

// ------------------------------------------------------------------------------------------------
// Integer powers
// ------------------------------------------------------------------------------------------------

/// `b^p` by binary exponentiation (the same multiplication sequence as the polynomial-kernel loops
/// of [`crate::kernels::evaluation`] and the kernel rows of
/// [`crate::kernel_learning::kernel_cache`]).
#[inline(always)]
pub(crate) fn ipow(b: f64, p: u32) -> f64 {
    let (mut base, mut res, mut e) = (b, 1.0, p);
    loop {
        if e & 1 == 1 {
            res *= base;
        }
        e >>= 1;
        if e == 0 {
            return res;
        }
        base *= base;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fp::EXP_FAST_ULPS;
    use crate::test_util::uniform;

    fn ulp_diff(a: f64, b: f64) -> u64 {
        assert!(a >= 0.0 && b >= 0.0);
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    /// Test points: the whole finite range incl. the subnormal tail, the RBF range densely, tiny
    /// arguments, and the boundaries of the reduction intervals.
    fn exp_test_points() -> Vec<f64> {
        let mut xs = uniform(400_000, -746.0, 710.0, 1);
        xs.extend(uniform(400_000, -50.0, 0.0, 2));
        xs.extend(uniform(100_000, -1e-3, 1e-3, 3));
        for k in -1075i32..=1023 {
            let x = k as f64 * std::f64::consts::LN_2;
            for dx in [
                -1e-12,
                0.0,
                1e-12,
                0.5 * std::f64::consts::LN_2,
                -0.5 * std::f64::consts::LN_2,
            ] {
                xs.push(x + dx);
            }
        }
        xs.extend([
            -745.0, -744.44, -708.4, -708.39, 709.0, 709.78, 1e-300, -1e-300, 5e-324,
        ]);
        xs
    }

    fn assert_exp_accurate(xs: &[f64], got: &[f64], what: &str) {
        for (&x, &a) in xs.iter().zip(got) {
            let b = x.exp();
            if b.is_infinite() {
                assert!(a.is_infinite(), "{what}({x}) = {a}, want inf");
                continue;
            }
            let u = ulp_diff(a, b);
            assert!(
                u as f64 <= EXP_FAST_ULPS,
                "{what}({x}) = {a:e}, std = {b:e}: {u} ulp"
            );
        }
    }

    #[test]
    fn exp_fast_matches_std_over_wide_range() {
        let xs = exp_test_points();
        let scalar: Vec<f64> = xs.iter().map(|&x| exp_fast(x)).collect();
        assert_exp_accurate(&xs, &scalar, "exp_fast");
        // the FMA flavour (evaluated here through f64::mul_add, same operations)
        let fused: Vec<f64> = xs.iter().map(|&x| exp_fast_with::<Fused>(x)).collect();
        assert_exp_accurate(&xs, &fused, "exp_fast_with::<Fused>");
        // whatever flavour this CPU dispatches to
        let mut sliced = xs.clone();
        exp_fast_slice(&mut sliced);
        assert_exp_accurate(&xs, &sliced, "exp_fast_slice");
    }

    #[test]
    fn exp_lanes_are_bit_identical_to_scalar() {
        let mut xs = uniform(100_003, -760.0, 720.0, 21);
        xs.extend([
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -745.2,
            709.78,
            1e-300,
        ]);
        let check = |got: &[f64], want: &dyn Fn(f64) -> f64| {
            for (&x, &g) in xs.iter().zip(got) {
                let w = want(x);
                assert!(
                    g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                    "x = {x}: {g} vs {w}"
                );
            }
        };
        for block in [256usize, 37] {
            let mut un = xs.clone();
            let mut fu = xs.clone();
            let zeros = vec![0.0; block];
            for (cu, cf) in un.chunks_mut(block).zip(fu.chunks_mut(block)) {
                exp_map_in_place::<Unfused>(cu, &zeros, |v, _| v);
                exp_map_in_place::<Fused>(cf, &zeros, |v, _| v);
            }
            check(&un, &exp_fast);
            check(&fu, &exp_fast_with::<Fused>);
        }
        #[cfg(target_arch = "x86_64")]
        if !std::is_x86_feature_detected!("fma") {
            let mut got = xs.clone();
            exp_fast_slice(&mut got);
            check(&got, &exp_fast);
        }
    }

    #[test]
    fn exp_fast_special_values() {
        assert_eq!(exp_fast(0.0), 1.0);
        assert_eq!(exp_fast(-0.0), 1.0);
        assert_eq!(exp_fast(-745.2), 0.0);
        assert_eq!(exp_fast(-1000.0), 0.0);
        assert_eq!(exp_fast(f64::NEG_INFINITY), 0.0);
        assert_eq!(exp_fast(-746.0), 0.0);
        assert_eq!(exp_fast(710.0), f64::INFINITY);
        assert_eq!(exp_fast(f64::INFINITY), f64::INFINITY);
        assert!(exp_fast(f64::NAN).is_nan());
        assert!(exp_fast(709.78).is_finite());
        // smallest subnormal region
        assert_eq!(exp_fast(-744.44), (-744.44f64).exp());
        for x in [0.0, -1000.0, f64::NEG_INFINITY, 710.0, f64::INFINITY] {
            assert_eq!(exp_fast_with::<Fused>(x), exp_fast(x));
        }
        assert!(exp_fast_with::<Fused>(f64::NAN).is_nan());
        let mut v = vec![-1.0, 0.0, 1.0, -800.0];
        exp_fast_slice(&mut v);
        assert_eq!(v[1], 1.0);
        assert_eq!(v[3], 0.0);
        assert!(ulp_diff(v[0], (-1.0f64).exp()) as f64 <= EXP_FAST_ULPS);
        assert!(ulp_diff(v[2], 1.0f64.exp()) as f64 <= EXP_FAST_ULPS);
    }
}

/// The 8 lane sums and the tail of an 8-lane dot product reduced by the fixed tree `((a₀ + a₁) +
/// (a₂ + a₃)) + ((a₄ + a₅) + (a₆ + a₇)) + tail`: one definition for every such product, so that
/// they share its bits and the rounding depth [`crate::fp::lanes8_sum_terms`] counts (3 levels and
/// the tail).
#[inline(always)]
pub(crate) fn lanes8_reduce(a: &[f64; 8], tail: f64) -> f64 {
    ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])) + tail
}

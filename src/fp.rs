//! Every floating-point assumption the core's privacy arguments rely on — the one home on the
//! Rust side (the Python side is `dpcore/_internal/fp.py`; the constants both languages share are asserted
//! equal by `tests/test_fp.py`).
//!
//! | name | value | meaning and source |
//! |---|---|---|
//! | [`UNIT_ROUNDOFF`] | 2⁻⁵³ | `u` of IEEE-754 binary64, round to nearest (Higham 2002, §2.2) |
//! | [`gamma_k`] | `k·u/(1−k·u)` | `k` chained roundings (Higham 2002, Lemma 3.1); `+inf` when `k·u ≥ ½` |
//! | [`UNIT_ROUNDOFF_F32`], [`gamma_k_f32`] | 2⁻²⁴, `k·u₃₂/(1−k·u₃₂)` | the same for IEEE-754 binary32 (the `f32` GEMMs of solver internals; never a privacy bound) |
//! | [`f32_blocked_gram_rel_error`] | `γ₃₂(k + 3) + γ(b)(1 + γ₃₂(k + 3))` | entry accuracy of a Gram `A Aᵀ` whose `f64` factors are rounded to `f32`, multiplied by an `f32` GEMM over column blocks of `k` and the `b` block products summed in `f64` (the preconditioner's `r × r` systems of `kernel_learning::klr_newton`) |
//! | [`LIBM_LN_ULPS`] | 2 | `f64::ln`/`ln_1p` (the platform libm) accurate to 2 ulp on `(0, ∞)`; glibc, musl and Apple document < 1 ulp |
//! | [`EXP_FAST_ULPS`] | 2 | the SIMD `exp` of `numerics` vs a correctly rounded `exp` (tested exhaustively on sampled inputs in `numerics`) |
//! | [`KERNEL_SUM_REL_ERROR`] | 1e-12 | relative accuracy of a recomputed kernel decision value `Σ_j K_ij μ_j` against `Σ_j |K_ij||μ_j|` (engine ~1e-13; 10× margin) |
//! | [`lanes8_sum_terms`] | `⌊n/8⌋ + 9` | the `k` of `γ_k` for a sum of `n` products with 8 lane accumulators, a 3-level tree and a tail (the held-Gram products of `kernel_learning::klr_newton`) |
//! | [`gram_sum_rel_error`] | `E + γ_k(1 + E)` | relative accuracy of a decision value summed from a held `f64` Gram matrix (`E` = [`KERNEL_SUM_REL_ERROR`] per entry, `k` = [`lanes8_sum_terms`]`(n)`) |
//! | [`sym_tiles_sum_terms`] | `max(lanes8_sum_terms(T), R) + 1 + ⌈T/R⌉(⌈n/T⌉ − 1)` | the `k` of `γ_k` for a decision value of the symmetric multi-vector kernel product (square tiles of `T` rows/columns, `R`-row blocks, lower triangle evaluated once and used twice; `kernels::evaluation::kernel_matvecs_sym_cancellable`) |
//! | [`sym_kernel_sum_rel_error`] | `E + γ_k(1 + E)` | relative accuracy of a decision value from that symmetric product (`E` = [`KERNEL_SUM_REL_ERROR`] per entry, `k` = [`sym_tiles_sum_terms`]); `1.037e-12` at `n = 20,000` (512-row tiles, 256-row blocks) |
//! | [`GAP_EVAL_SLACK`] | 1e-15 | absolute-and-relative slack `GAP_EVAL_SLACK · (1 + |P| + |D|)` a certified duality gap adds for the roundings of its own evaluation (the loss, entropy and norm sums of `kernel_learning::erm`'s certificate, each far below it at the sizes that fit in memory) |
//! | [`shifted_kernel_error`] | `e + u·(K + e + s)` | the shifted kernel `K + s` (intercept, `s = b² ≥ 0`) adds one rounding: `|fl(k̂ + s) − (k + s)| ≤ e + u·(|k̂| + s)` for a base value `k̂` within `e` of `k`, `|k| ≤ K` |
//! | [`RADIUS_TOL`] | 2⁻⁴⁰ | relative amount by which a record may exceed its declared L2 bound |
//! | [`NET_SPACING_SHRINK`] | 1 − 2⁻³² | the ε-net spacing `h = 2ν/√d` is shrunk by this factor so that its covering radius `h√d/2` stays strictly below `ν` |
//! | [`NET_THRESHOLD_SLACK`] | 1 + 2⁻⁴⁰ | makes the net's index threshold `T` an upper bound of `((r + ν)/h)²` despite rounding |
//! | [`NET_INNER_SLACK`] | 1 − 2⁻⁴⁰ | makes `T_in` a lower bound of `(r/h)²` (points certainly inside the ball) |
//! | [`BALL_PROJ_SHRINK`] | 1 − 2⁻⁴⁸ | projected net points are pulled in by this factor so that rounding never leaves the ball |
//!
//! Where two modules assumed different values, the strictest one is kept: the exponential mechanism
//! used to assume `ln` accurate to 1 ulp while the coupled samplers assumed 2; both now use
//! [`LIBM_LN_ULPS`] = 2 (the Gumbel-key slack [`crate::mechanisms::expmech::key_error_bound`] grew
//! accordingly, see its docs).

/// Unit roundoff of IEEE-754 binary64 with round-to-nearest.
pub const UNIT_ROUNDOFF: f64 = 1.0 / 9_007_199_254_740_992.0; // 2^-53

/// Unit roundoff of IEEE-754 binary32 with round-to-nearest (Higham 2002, §2.2). Used only where
/// an `f32` computation must be bounded for a solver's own correctness (a preconditioner that stays
/// positive definite), never in a certificate or a privacy bound.
pub const UNIT_ROUNDOFF_F32: f64 = 1.0 / 16_777_216.0; // 2^-24

/// Named assumption: `f64::ln` and `f64::ln_1p` (the platform libm) are accurate to within this
/// many ulps. glibc, musl and Apple's libm document < 1 ulp for `log`; we assume 2 to be safe.
pub const LIBM_LN_ULPS: f64 = 2.0;

/// Accuracy of the SIMD `exp` in [`crate::numerics`] against a correctly rounded `exp` (tested).
pub const EXP_FAST_ULPS: f64 = 2.0;

/// Relative accuracy assumed of a recomputed kernel decision value: `|δf_i| ≤ KERNEL_SUM_REL_ERROR ·
/// Σ_j |K_ij| |μ_j|` (the fused engine is documented at ~1e-13; a 10× margin).
pub const KERNEL_SUM_REL_ERROR: f64 = 1e-12;

/// Rounding depth of `Σ_{j<n} g_j v_j` summed as `klr_newton`'s `dot8` / `gram_products` do: 8 lane
/// accumulators (lane `l` takes the products `j ≡ l mod 8` of the first `8⌊n/8⌋` terms, starting
/// from `0.0`), the tree `((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))`, then `+ tail` (the
/// last `n mod 8 ≤ 7` products summed in order). A lane term undergoes its product's rounding, at
/// most `⌊n/8⌋` lane additions, 3 tree additions and the tail addition: `⌊n/8⌋ + 5`; a tail term its
/// product, at most 7 tail additions and the final one: `9`. Both are `≤ ⌊n/8⌋ + 9`, so the computed
/// sum is within `γ_{⌊n/8⌋+9} · Σ_j |g_j v_j|` of the exact one (Higham 2002, Lemma 3.1 and §3.1:
/// a term that passes through `k` roundings carries a factor `1 + θ_k`, `|θ_k| ≤ γ_k`). Splitting the
/// lane sums into column blocks that continue the same accumulators changes nothing.
#[inline]
pub fn lanes8_sum_terms(n: usize) -> f64 {
    (n / 8) as f64 + 9.0
}

/// Relative accuracy of a kernel decision value `f_i = Σ_j K'_ij μ_j` summed from a **held `f64`
/// Gram matrix** (`K' = K + s`, the shifted kernel) with the 8-lane sum of [`lanes8_sum_terms`],
/// against `Σ_j (|K_ij| + s)|μ_j|` — the same scale as [`KERNEL_SUM_REL_ERROR`]:
///
/// * each entry `Ĝ_ij` is computed by the engine's own block code (GEMM inner products, kernel map,
///   shift), the code of the fused multi-vector engine that [`KERNEL_SUM_REL_ERROR`] is assumed of;
///   applied to the one-hot weights `μ = e_j`, for which that engine's sum is exactly `Ĝ_ij` (every
///   other term is an exact zero), the assumption says `|Ĝ_ij − K'_ij| ≤ E (|K_ij| + s)` with
///   `E = KERNEL_SUM_REL_ERROR`. (An RBF diagonal overwritten with `fl(1 + s)` is within
///   `u (1 + s)`, far inside it.)
/// * the sum: `|fl(Σ_j Ĝ_ij μ_j) − Σ_j Ĝ_ij μ_j| ≤ γ_k Σ_j |Ĝ_ij||μ_j| ≤ γ_k (1 + E) Σ_j (|K_ij| + s)|μ_j|`
///   with `k` = [`lanes8_sum_terms`]`(n)`.
///
/// Total: `E + γ_k (1 + E)`, above [`KERNEL_SUM_REL_ERROR`] (e.g. `1.08e-12` at `n = 6,000`,
/// `1.23e-12` at `n = 16,384`): a certificate summed from the Gram uses this bound, not `E`. `+inf`
/// where `γ_k` has no first-order bound.
#[inline]
pub fn gram_sum_rel_error(n: usize) -> f64 {
    KERNEL_SUM_REL_ERROR + gamma_k(lanes8_sum_terms(n)) * (1.0 + KERNEL_SUM_REL_ERROR)
}

/// Rounding depth of one output of the **symmetric** multi-vector product `K'(X, X) v`
/// (`kernels::evaluation::kernel_matvecs_sym_cancellable`): the `n` rows are cut into square tiles
/// of `tile` rows and columns (`n_t = ⌈n/tile⌉`); each lower-triangle tile `(I, J)`, `J ≤ I`, is
/// evaluated once, in blocks of at most `rows` rows of tile `I` times all columns of tile `J`, and
/// each output element is an accumulator that starts at `0.0` and receives, one addition each,
///
/// * as a **row** of tile `t`: for every `J ≤ t`, the 8-lane dot product (`klr_newton`'s and the
///   engine's `dot`: [`lanes8_sum_terms`]) of its block row with `v` over the `≤ tile` columns of
///   `J` — `t + 1` additions, each term of which went through `≤ lanes8_sum_terms(tile)` roundings
///   before;
/// * as a **column** of tile `t`: for every `I > t` and every `rows`-row block of `I`
///   (`≤ ⌈tile/rows⌉` of them), that block's column sum `Σ_i K_ij v_i`, summed in order from `0.0`
///   (a term: its product and at most `rows − 1` further additions: `≤ rows` roundings).
///
/// So the accumulator takes at most `A = (t + 1) + ⌈tile/rows⌉ (n_t − 1 − t) ≤ 1 + ⌈tile/rows⌉
/// (n_t − 1)` additions (the largest at `t = 0` since `⌈tile/rows⌉ ≥ 1`), and every product reaches
/// the output through at most `max(lanes8_sum_terms(tile), rows) + A` roundings: the computed
/// output is within `γ_k Σ_j |K̂_ij v_j|` of the exact sum of the products of the values used, with
/// `k` this number (Higham 2002, Lemma 3.1 and §3.1: a term that passes through `k` roundings
/// carries a factor `1 + θ_k`, `|θ_k| ≤ γ_k`; the order in which the blocks arrive does not enter).
/// E.g. `tile = 512`, `rows = 256` (the engine's shape): `257 + 2 (n_t − 1)`, `279` at `n = 6,000`,
/// `335` at `n = 20,000`; `rows = 64`: `74 + 8 (n_t − 1)`, `162` and `386` (the held Gram's
/// [`lanes8_sum_terms`] is `759` and `2,509` there).
#[inline]
pub fn sym_tiles_sum_terms(n: usize, tile: usize, rows: usize) -> f64 {
    let (tile, rows) = (tile.max(1), rows.max(1));
    let n_t = n.div_ceil(tile).max(1);
    let inner = lanes8_sum_terms(tile).max(rows as f64);
    inner + 1.0 + tile.div_ceil(rows) as f64 * (n_t - 1) as f64
}

/// Relative accuracy of a decision value `f_i = Σ_j K'_ij v_j` from the symmetric multi-vector
/// kernel product (`kernels::evaluation::kernel_matvecs_sym_cancellable`, tiles `tile × tile`,
/// blocks of `rows` rows) against `Σ_j (|K_ij| + s)|v_j|`, the scale of [`KERNEL_SUM_REL_ERROR`]:
///
/// * each entry the sum uses is a value `Ĝ_ij` that the engine's own block code computed, in the
///   very blocks of the fused multi-vector engine (`kernel_matvecs_cancellable(X, X)`: rows from a
///   multiple of `rows`, columns from a multiple of `tile`) that [`KERNEL_SUM_REL_ERROR`] `= E` is
///   assumed of; at the one-hot weights `v = e_j` that engine's sum for row `i` is exactly `Ĝ_ij`
///   (every other product is an exact zero), so `|Ĝ_ij − K'_ij| ≤ E (|K_ij| + s)`. A tile `(I, J)`,
///   `J < I`, is used twice: its row `i` gives the entries `(i, j)` of the outputs of tile `I`, its
///   column `j` the entries `(j, i)` of the outputs of tile `J`, i.e. output `j` uses `Ĝ_ij` for
///   `K'_ji`; the exact kernel is symmetric (`K'_ji = K'_ij`), so the same bound holds.
/// * the sum: `|fl(Σ_j Ĝ v_j) − Σ_j Ĝ v_j| ≤ γ_k Σ_j |Ĝ||v_j| ≤ γ_k (1 + E) Σ_j (|K_ij| + s)|v_j|`
///   with `k` = [`sym_tiles_sum_terms`]`(n, tile, rows)`.
///
/// Total: `E + γ_k (1 + E)` (`1.031e-12` at `n = 6,000`, `1.037e-12` at `n = 20,000` for `512 ×
/// 512` tiles of 256-row blocks, the engine's shape; `1.018e-12` and `1.043e-12` with 64-row
/// blocks): above [`KERNEL_SUM_REL_ERROR`], so a certificate summed this way uses this bound. `+inf` where `γ_k` has no first-order bound.
#[inline]
pub fn sym_kernel_sum_rel_error(n: usize, tile: usize, rows: usize) -> f64 {
    KERNEL_SUM_REL_ERROR + gamma_k(sym_tiles_sum_terms(n, tile, rows)) * (1.0 + KERNEL_SUM_REL_ERROR)
}

/// Slack a certified duality gap adds for the roundings of its own evaluation: `GAP_EVAL_SLACK ·
/// (1 + |P| + |D|)` with `P`, `D` the computed primal and dual objectives (the certificate of
/// `kernel_learning::erm`; the decision values' own error is bounded separately, by the `rel` of
/// [`KERNEL_SUM_REL_ERROR`] and its siblings).
pub const GAP_EVAL_SLACK: f64 = 1e-15;

/// Relative amount by which a record may exceed its declared L2 bound (`dpcore._internal.fp.RADIUS_TOL`).
pub const RADIUS_TOL: f64 = 1.0 / (1u64 << 40) as f64;

/// `h = (2ν/√d)·NET_SPACING_SHRINK`: the covering radius `h√d/2` stays strictly below `ν`.
pub const NET_SPACING_SHRINK: f64 = 1.0 - 1.0 / (1u64 << 32) as f64;
/// Relative slack making the net threshold `T` an upper bound of `((r + ν)/h)²` despite rounding.
pub const NET_THRESHOLD_SLACK: f64 = 1.0 + 1.0 / (1u64 << 40) as f64;
/// Relative slack making `T_in` a lower bound of `(r/h)²` (points clearly inside the ball).
pub const NET_INNER_SLACK: f64 = 1.0 - 1.0 / (1u64 << 40) as f64;
/// Projected points are pulled in by this factor so that rounding never leaves the ball.
pub const BALL_PROJ_SHRINK: f64 = 1.0 - 1.0 / (1u64 << 48) as f64;

/// Higham's `γ_k = k·u/(1 − k·u)`: the relative error bound of `k` chained roundings; `+inf` when
/// `k·u ≥ ½` (no first-order bound; unreachable for sizes that fit in memory).
#[inline]
pub fn gamma_k(k: f64) -> f64 {
    gamma_of(k, UNIT_ROUNDOFF)
}

/// [`gamma_k`] for binary32: `k·u₃₂/(1 − k·u₃₂)`, `+inf` when `k·u₃₂ ≥ ½`.
#[inline]
pub fn gamma_k_f32(k: f64) -> f64 {
    gamma_of(k, UNIT_ROUNDOFF_F32)
}

/// `k·u/(1 − k·u)` for the unit roundoff `u`, `+inf` when `k·u ≥ ½`.
#[inline]
fn gamma_of(k: f64, u: f64) -> f64 {
    let ku = k * u;
    if ku < 0.5 {
        ku / (1.0 - ku)
    } else {
        f64::INFINITY
    }
}

/// Relative accuracy of an entry of `G = A Aᵀ` (`A` in `f64`, `r × n`) computed as the `f64` sum,
/// in a fixed order, of `blocks` products `fl32(A_b) fl32(A_b)ᵀ` of column blocks of at most `cols`
/// columns, each an `f32` GEMM: `|Ĝ_ij − G_ij| ≤ e · Σ_k |A_ik||A_jk|` with `e` this value.
///
/// * A block term `A_ik A_jk` passes through the two input roundings to `f32`, its product and at
///   most `cols − 1` additions inside its block whatever the GEMM's summation order or its use of
///   fused multiply–adds (any summation tree of `cols` terms gives each term at most `cols − 1`
///   additions; an FMA rounds once for two operations), plus one for the GEMM's scaling by
///   `α = 1`, which is exact: at most `cols + 3` binary32 roundings, `γ₃₂(cols + 3)` (Higham 2002,
///   Lemma 3.1 and §3.1).
/// * The block results (exact in `f64`) are summed in `f64` from `0.0`: at most `blocks` roundings
///   of binary64, `γ(blocks)`, on a value already within `1 + γ₃₂(cols + 3)`.
#[inline]
pub fn f32_blocked_gram_rel_error(cols: usize, blocks: usize) -> f64 {
    let e32 = gamma_k_f32(cols as f64 + 3.0);
    e32 + gamma_k(blocks as f64) * (1.0 + e32)
}

/// The smallest float strictly above a finite `x` (`f64::next_up`; `+inf` stays `+inf`): rounds
/// a computed privacy bound (e.g. `R_φ² + b²`) up past the rounding of its last operation.
#[inline]
pub fn next_up(x: f64) -> f64 {
    x.next_up()
}

/// Worst-case absolute error of one evaluation of the shifted kernel `K + s` (the regularised
/// intercept, `s = b² ≥ 0`) when the base value `k̂ = fl(K(z, x))` is within `base_error` of the
/// exact `K(z, x)` and `|K(z, x)| ≤ k_abs_max`: the addition is one rounding,
/// `|fl(k̂ + s) − (k̂ + s)| ≤ u·(|k̂| + s)` (Higham 2002, Thm 2.2), so the total is
/// `base_error + u·(k_abs_max + base_error + s)`; exactly `base_error` when `s = 0` (no addition is
/// made). Mirrored by `dpcore._internal.fp.shifted_kernel_error`.
#[inline]
pub fn shifted_kernel_error(base_error: f64, k_abs_max: f64, shift: f64) -> f64 {
    if shift == 0.0 {
        base_error
    } else {
        base_error + UNIT_ROUNDOFF * (k_abs_max + base_error + shift)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_are_what_the_docs_say() {
        assert_eq!(UNIT_ROUNDOFF, 2f64.powi(-53));
        assert_eq!(RADIUS_TOL, 2f64.powi(-40));
        assert_eq!(NET_SPACING_SHRINK, 1.0 - 2f64.powi(-32));
        assert_eq!(BALL_PROJ_SHRINK, 1.0 - 2f64.powi(-48));
        assert_eq!(gamma_k(0.0), 0.0);
        assert!((gamma_k(10.0) - 10.0 * UNIT_ROUNDOFF).abs() < 1e-29);
        assert_eq!(gamma_k(2f64.powi(52)), f64::INFINITY);
    }

    #[test]
    fn shifted_kernel_error_bounds_the_addition() {
        assert_eq!(shifted_kernel_error(1e-15, 1.0, 0.0), 1e-15);
        // the exact rounding error of k + s against the bound
        for &(k, s) in &[
            (0.1f64, 0.3f64),
            (1.0 / 3.0, 1.0),
            (-0.7, 0.25),
            (123.456, 1e-9),
        ] {
            // Knuth's TwoSum: k + s = got + err exactly
            let got = k + s;
            let bb = got - k;
            let exact_err = ((k - (got - bb)) + (s - bb)).abs();
            assert!(exact_err <= shifted_kernel_error(0.0, k.abs(), s));
        }
        assert_eq!(next_up(1.0), 1.0 + f64::EPSILON);
    }

    #[test]
    fn gram_sum_rel_error_is_what_the_docs_say() {
        assert_eq!(lanes8_sum_terms(0), 9.0);
        assert_eq!(lanes8_sum_terms(7), 9.0);
        assert_eq!(lanes8_sum_terms(6000), 759.0);
        let e = gram_sum_rel_error(6000);
        assert!(e > KERNEL_SUM_REL_ERROR && (e - 1.084e-12).abs() < 1e-15, "{e}");
        assert!((gram_sum_rel_error(16384) - 1.228e-12).abs() < 1e-15);
        assert!(gram_sum_rel_error(1 << 20) < 1.6e-11);
        assert_eq!(gram_sum_rel_error(1 << 60), f64::INFINITY);
    }

    #[test]
    fn sym_kernel_sum_rel_error_is_what_the_docs_say() {
        // one tile: the row dot (lanes8_sum_terms(512) = 73) and one addition into the output
        assert_eq!(sym_tiles_sum_terms(1, 512, 64), 74.0);
        assert_eq!(sym_tiles_sum_terms(512, 512, 64), 74.0);
        // a second tile: 8 column blocks more
        assert_eq!(sym_tiles_sum_terms(513, 512, 64), 82.0);
        assert_eq!(sym_tiles_sum_terms(6000, 512, 64), 162.0);
        assert_eq!(sym_tiles_sum_terms(20_000, 512, 64), 386.0);
        assert_eq!(sym_tiles_sum_terms(8192, 512, 64), 194.0);
        // rows above the lane depth: the column sums are the deeper part
        assert_eq!(sym_tiles_sum_terms(1000, 64, 100), 100.0 + 1.0 + 15.0);
        let e = sym_kernel_sum_rel_error(6000, 512, 64);
        assert!(e > KERNEL_SUM_REL_ERROR && (e - 1.018e-12).abs() < 1e-15, "{e}");
        let e = sym_kernel_sum_rel_error(20_000, 512, 64);
        assert!((e - 1.043e-12).abs() < 1e-15, "{e}");
        // below the held Gram's bound at the same n (a shallower sum)
        assert!(sym_kernel_sum_rel_error(20_000, 512, 64) < gram_sum_rel_error(20_000));
        assert_eq!(
            sym_kernel_sum_rel_error(20_000, 512, 64),
            KERNEL_SUM_REL_ERROR + gamma_k(386.0) * (1.0 + KERNEL_SUM_REL_ERROR)
        );
        assert_eq!(sym_kernel_sum_rel_error(1 << 62, 512, 64), f64::INFINITY);
        // the engine's 256-row blocks
        assert_eq!(sym_tiles_sum_terms(6000, 512, 256), 279.0);
        assert_eq!(sym_tiles_sum_terms(20_000, 512, 256), 335.0);
        assert!((sym_kernel_sum_rel_error(6000, 512, 256) - 1.031e-12).abs() < 1e-15);
        assert!((sym_kernel_sum_rel_error(20_000, 512, 256) - 1.037e-12).abs() < 1e-15);
    }
}

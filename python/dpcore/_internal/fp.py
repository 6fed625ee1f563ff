"""Every floating-point assumption dpcore's privacy proofs rely on — the one home on the Python side.

A sensitivity bound, a certified solver residual or a noise calibration computed in binary64 is
only as good as the assumptions about the arithmetic that produced it. Each assumption is a
named constant here, documented with its source; every module that relies on one imports it from
here (never a local copy), so the values cannot drift apart. The Rust core has the same role
played by ``src/fp.rs``; the constants shared by both languages are asserted equal by the tests
(``tests/test_fp.py``).

Where two modules used different values for the same assumption, the strictest one was kept:
the smaller radius tolerance (2⁻⁴⁰ rather than 1e-12) and the less accurate libm (2 ulp for
``ln``/``log``, 4 ulp for numpy's ``exp``/``log``/``expit``).

=================  ============  ========================================================================
name               value         meaning and source
=================  ============  ========================================================================
UNIT_ROUNDOFF      2⁻⁵³          u of IEEE-754 binary64, round to nearest (Higham 2002, §2.2, Thm 2.2)
gamma_k(k)         k·u/(1−k·u)   Higham's bound on k chained roundings (Higham 2002, Lemma 3.1);
                                 sums and dot products of k terms in any order (recursive, pairwise,
                                 blocked, with or without FMA) err by at most γ_k·Σ|terms| (§3.1, §4.2)
SUM_BLOCK_ROWS     4096          rows per BLAS call in dpcore's blocked pairwise sums ``Xᵀs``
                                 (:mod:`dpcore._internal.summation`, in memory and on Dask)
blocked_sum_terms  min(n, b +    the ``k`` of γ_k for those sums: a term's product and ≤ b − 1 additions
(n, b)             2⌈log₂n⌉+1)   inside its BLAS block, ≤ ⌈log₂ n⌉ in the pairwise tree over blocks, ≤
                                 ⌈log₂ n⌉ more over Dask partitions and one multiplication (a Dask
                                 intercept coordinate); Higham 2002, §4.2: the error of any summation
                                 tree is ≤ γ_D Σ|terms| with D its depth. A function of the public n only
LIBM_LN_ULPS       2             the platform ``ln``/``log``/``log1p`` is accurate to 2 ulp (glibc,
                                 musl, Apple libm document < 1 ulp; 2 for margin). Rust: LIBM_LN_ULPS
NUMPY_EXP_ULPS     4             numpy/scipy ``exp``, ``log``, ``expit`` on float64 within 4 ulp (numpy
                                 uses SIMD kernels documented at ≤ 4 ulp; scipy's expit is 1/(1+exp))
KERNEL_EXP_ULPS    2             dpcore's Rust SIMD ``exp`` in kernel evaluation (tested ≤ 2 ulp
                                 against ``f64::exp`` in src/numerics.rs). Rust: EXP_FAST_ULPS
KERNEL_SUM_REL_E.  1e-12         relative accuracy of a Rust kernel decision value vs Σ|K_ij||μ_j|
                                 (KernelSVM's certified gap). Rust: KERNEL_SUM_REL_ERROR. For a
                                 shifted kernel K + s (intercept, s = b²) against Σ(|K_ij| + s)|μ_j|
                                 (the engine adds s·Σμ_j, summed pairwise: γ_{log₂n+9}·sΣ|μ_j|)
shifted_kernel_    e + u·(K+e+s)  one evaluation of the shifted kernel K + s: a base value within e of
error(e, K, s)                   K(z, x), |K(z, x)| ≤ K, plus one rounding of the addition,
                                 |fl(k + s) − (k + s)| ≤ u·(|k| + s). Rust: fp::shifted_kernel_error
RADIUS_TOL         2⁻⁴⁰          a record may exceed its declared L2 bound by this relative amount
                                 (user-side normalisation rounds); every sensitivity bound is computed
                                 for the bound inflated by (1 + RADIUS_TOL), so nothing is lost
BALL_SHRINK        1 − 2⁻⁴⁰      clipping / rescaling into a ball lands this far inside it, so the
                                 recomputed norm (any summation order, ≤ γ_d relative) stays ≤ radius
BUDGET_GRID_BITS   40            privacy parameters a mechanism calibrates for (ε, δ) are first rounded
                                 *down* onto floats of 40 significant bits (:func:`budget_grid_down`),
                                 off-grid values by at least 2⁻⁴⁰ relative, so budgets that add up in
                                 decimals fit (10 × 0.1 in 1.0) although ``float(0.1) > 1/10``
SLACK              1e-12         relative slack for rounding a privacy-relevant scalar (a noise scale,
                                 a sensitivity) in the safe direction after a few float operations
                                 (each ≤ u relative: 1e-12 ≫ 10·u); see :func:`round_up`
RANGE_SLACK        1e-6          absolute slack on the public range of SimplexERM's exponents −g/λ
                                 (covers the float error of the bound b, ≤ γ_{d+4}·b)
EM_FP_REL_ERROR    2⁻⁴⁵          LinearBallEM: a sampled point's float error relative to the radius
EM_FP_REJECT_ERROR 2⁻⁴⁰          LinearBallEM: probability that one float acceptance decision is wrong
CERTIFY_MARGIN     2             a certified solver is asked for ``tol`` only if ``tol`` >= this many times the
                                 public float floor of its certificate; ``tol="auto"`` is exactly that
                                 value (:func:`auto_tol`): the smallest tolerance every release accepts
kernel_gap_floor   1e-12·R²L²/λ  public floor of the kernel ERM certificate's float slack
(λ, R², L)                       (KERNEL_SUM_REL_ERROR·R_φ'²·L²/λ; |μ_j| ≤ L/(λn))
PARAM_RANGE        1e±100        accepted range of scale hyper-parameters (λ, C, norm bounds): derived
                                 constants (1/(λn), λ², C/n) stay normal floats
=================  ============  ========================================================================

A bound that needs more than these (e.g. γ_k with k·u ≥ ½) is not available: :func:`gamma_k`
returns ``inf`` for such k (one behaviour everywhere; unreachable in practice, since k ≥ 2⁵² terms
do not fit in memory), and callers that need a finite bound refuse with an error naming the
public parameter that made k so large.
"""

from __future__ import annotations

import math

__all__ = [
    "UNIT_ROUNDOFF",
    "BUDGET_GRID_BITS",
    "budget_grid_down",
    "gamma_k",
    "SUM_BLOCK_ROWS",
    "blocked_sum_terms",
    "LIBM_LN_ULPS",
    "NUMPY_EXP_ULPS",
    "KERNEL_EXP_ULPS",
    "KERNEL_SUM_REL_ERROR",
    "RADIUS_TOL",
    "BALL_SHRINK",
    "SLACK",
    "RANGE_SLACK",
    "EM_FP_REL_ERROR",
    "EM_FP_REJECT_ERROR",
    "FP_ASSUMPTION",
    "round_up",
    "shifted_kernel_error",
    "round_down",
    "PARAM_RANGE",
    "CERTIFY_MARGIN",
    "kernel_gap_floor",
    "auto_tol",
    "multiclass_gap_floor",
    "MAX_NOISE_SCALE",
]

#: Unit roundoff of IEEE-754 binary64 with round-to-nearest (Higham 2002, §2.2).
UNIT_ROUNDOFF = 2.0**-53
#: Accuracy (ulps) assumed of the platform ``ln``/``log``/``log1p`` (Rust: ``fp::LIBM_LN_ULPS``).
LIBM_LN_ULPS = 2
#: Accuracy (ulps) assumed of numpy/scipy ``exp``/``log``/``expit`` on float64.
NUMPY_EXP_ULPS = 4
#: Accuracy (ulps) of dpcore's Rust SIMD ``exp`` used in kernel evaluation (Rust: ``fp::EXP_FAST_ULPS``).
KERNEL_EXP_ULPS = 2
#: Relative accuracy of a kernel decision value computed by the Rust engine, against
#: ``Σ_j |K_ij||μ_j|`` (Rust: ``fp::KERNEL_SUM_REL_ERROR``; the certified KernelSVM gap relies on it).
KERNEL_SUM_REL_ERROR = 1e-12
#: Relative amount by which a record may exceed its declared L2 bound (Rust: ``fp::RADIUS_TOL``).
RADIUS_TOL = 2.0**-40
#: Factor that puts a clipped / rescaled vector safely inside its ball (Rust: ``fp::BALL_SHRINK``).
BALL_SHRINK = 1.0 - 2.0**-40
#: Relative slack for rounding a privacy-relevant scalar in the safe direction.
SLACK = 1e-12
#: Absolute slack on the public range of SimplexERM's exponents.
RANGE_SLACK = 1e-6
#: LinearBallEM: assumed float error of a sampled point, relative to the radius.
EM_FP_REL_ERROR = 2.0**-45
#: LinearBallEM: assumed probability that one float acceptance decision is wrong.
EM_FP_REJECT_ERROR = 2.0**-40

#: A certified solver is asked to certify ``tol`` only if ``tol ≥ CERTIFY_MARGIN ×`` the public
#: floating-point floor of its certificate (the worst case over the declared domain): below that, no
#: point's computed certificate can be trusted to reach ``tol``, whatever the data. ``tol="auto"`` is
#: ``CERTIFY_MARGIN ×`` the floor (:func:`auto_tol`).
CERTIFY_MARGIN = 2.0

#: Accepted range of positive scale hyper-parameters (λ, C, norm bounds): inside it, their
#: products with n ≤ 2⁵³, their squares and reciprocals stay normal floats, so no derived constant
#: (1/(λn), λ², C/n) overflows, underflows or turns into NaN. Outside it a ValueError names the
#: parameter.
PARAM_RANGE = (1e-100, 1e100)
#: Largest scale of a continuous noise vector (Gamma-norm, normal): the draws are at most a few
#: times ``dim + 50·sqrt(dim)`` (≤ 2⁴⁴ for any dim that fits in memory) times the scale, except with
#: probability below 2⁻¹⁰⁰⁰, so the sample stays below the float range 2¹⁰²⁴.
MAX_NOISE_SCALE = 2.0**900

#: The arithmetic every certificate and calibration in dpcore assumes, in one sentence.
FP_ASSUMPTION = (
    "IEEE-754 binary64 arithmetic with round-to-nearest (u = 2^-53) for +, -, *, / and sqrt; "
    f"the platform log within {LIBM_LN_ULPS} ulp; numpy/scipy exp, log and expit within "
    f"{NUMPY_EXP_ULPS} ulp; dot products and sums of k terms have error <= gamma_k * (sum of absolute "
    "values of the terms) whatever their summation order (true for recursive, pairwise and blocked "
    "summation, with or without FMA)"
)


def gamma_k(k: float) -> float:
    """Higham's ``γ_k = k·u / (1 − k·u)``: the relative error bound of ``k`` chained roundings.

    Returns ``inf`` when ``k·u ≥ ½`` (no first-order bound; see the module docstring).
    """
    ku = float(k) * UNIT_ROUNDOFF
    if not ku < 0.5:
        return math.inf
    return ku / (1.0 - ku)


#: Rows per BLAS call in dpcore's blocked pairwise sums (:mod:`dpcore._internal.summation`): a public constant
#: of their error bound :func:`blocked_sum_terms`.
SUM_BLOCK_ROWS = 4096


def blocked_sum_terms(n: int, block: int = SUM_BLOCK_ROWS) -> int:
    """``k = min(n, block + 2⌈log₂ n⌉ + 1)``: the roundings on any term's path in a blocked pairwise sum of ``n`` terms.

    The sums of :func:`dpcore._internal.summation.blocked_xt` (in memory) and of the Dask GLM solver err by at most
    ``γ_k Σ|terms|`` per coordinate with this ``k`` (Higham 2002, §4.2: a sum evaluated by any tree of additions
    errs by at most ``γ_D Σ|terms|``, ``D`` the tree's depth, products included): a term's product and at most
    ``block − 1`` additions inside its BLAS call (any order, FMA or not), at most ``⌈log₂ n⌉`` additions in the
    balanced tree over the blocks, at most ``⌈log₂ n⌉`` more in the tree over Dask partitions, and one
    multiplication (the Dask intercept coordinate ``scaling·Σ s``). ``k = n`` bounds any order, so the minimum
    holds. A function of the public ``n`` only, whatever the chunking.

    >>> blocked_sum_terms(10**7), blocked_sum_terms(1000)
    (4145, 1000)
    """
    n, block = int(n), int(block)
    return min(n, block + 2 * max(n - 1, 1).bit_length() + 1)


def shifted_kernel_error(base_error: float, k_abs_max: float, shift: float) -> float:
    """Worst-case absolute error of one evaluation of the shifted kernel ``K + s`` (intercept, ``s = b² ≥ 0``).

    The base value ``k̂`` is within ``base_error`` of ``K(z, x)`` and ``|K(z, x)| ≤ k_abs_max``; the addition is one
    rounding, ``|fl(k̂ + s) − (k̂ + s)| ≤ u·(|k̂| + s)``, so the total is ``base_error + u·(k_abs_max + base_error +
    s)`` — exactly ``base_error`` when ``s = 0`` (the engine skips the addition). Rust: ``fp::shifted_kernel_error``.
    """
    if shift == 0.0:
        return float(base_error)
    return float(base_error) + UNIT_ROUNDOFF * (float(k_abs_max) + float(base_error) + float(shift))


def round_up(x: float, rel: float = SLACK) -> float:
    """``x·(1 + rel)`` rounded up by one more ulp: a safe upper bound of a positive computed scalar."""
    return math.nextafter(float(x) * (1.0 + rel), math.inf)


def round_down(x: float, rel: float = SLACK) -> float:
    """``x·(1 − rel)`` rounded down by one more ulp: a safe lower bound of a positive computed scalar."""
    return math.nextafter(float(x) * (1.0 - rel), -math.inf)


#: Significant bits of the grid onto which dpcore's mechanisms round the ε and δ they calibrate for.
BUDGET_GRID_BITS = 40


def budget_grid_down(x: float) -> float:
    """``x`` rounded *down* onto the budget grid (floats of :data:`BUDGET_GRID_BITS` significant bits).

    A value already on the grid is returned unchanged (so the rounding is idempotent: a parameter
    validated twice is calibrated and charged at the same value); any other ``x > 0`` becomes the
    largest grid float ``<= x·(1 − 2⁻⁴⁰)`` (exact rational arithmetic). Never larger than ``x``, so a
    mechanism calibrated at the result is at least as private as one calibrated at ``x``; the noise
    grows by a relative 2⁻³⁹ at most.

    Why: ``float(0.1) = 0.1000000000000000055…`` and ten of them exceed 1.0 in exact arithmetic; an
    exact accountant must refuse the tenth spend of a mechanism calibrated at ``float(0.1)``. On the
    grid, an off-grid spend ``fl(q)`` of a decimal ``q`` is charged at most ``q·(1 − 2⁻⁴⁰)(1 + 2⁻⁵³)
    < q``, so spends whose decimals add up to a budget on the grid (1, 2, 0.5, 10, …) always fit, and
    to an off-grid budget ``fl(Q)`` whenever the off-grid spends make up at least ``2⁻¹² Q``
    (the 2⁻⁴⁰ shortfall then covers the ≤ 2⁻⁵³ relative rounding of ``Q``).

    >>> budget_grid_down(0.5), budget_grid_down(0.1) < 0.1, budget_grid_down(budget_grid_down(0.1)) == budget_grid_down(0.1)
    (0.5, True, True)
    """
    from fractions import Fraction

    x = float(x)
    if not (x > 0.0) or math.isinf(x):
        return x
    m, e = math.frexp(x)                      # x = m·2^e, 0.5 <= m < 1
    scaled = math.ldexp(m, BUDGET_GRID_BITS)  # exact
    if scaled == math.floor(scaled):
        return x
    k = math.floor(Fraction(x) * (1 - Fraction(1, 2 ** BUDGET_GRID_BITS)) * Fraction(2) ** (BUDGET_GRID_BITS - e))
    return math.ldexp(float(k), e - BUDGET_GRID_BITS)


def kernel_gap_floor(lam: float, r_phi_sq: float, lipschitz: float = 1.0) -> float:
    """Public floor ``KERNEL_SUM_REL_ERROR·R_φ'²·L²/λ`` of the kernel ERM certificate's float slack.

    The certified duality gap of :class:`~dpcore.KernelSVM` / :class:`~dpcore.KernelLogisticRegression` carries
    the slack ``KERNEL_SUM_REL_ERROR·mean_i sqrt(K'_ii)·Σ_j sqrt(K'_jj)|μ_j|``, at most this value on rows with
    ``K'(x, x) ≤ R_φ'²`` (``|μ_j| ≤ L/(λn)``). A function of public quantities only.

    >>> float(f"{kernel_gap_floor(1e-3, 1.25):.12g}")
    1.25e-09
    """
    return KERNEL_SUM_REL_ERROR * float(r_phi_sq) * float(lipschitz) * float(lipschitz) / float(lam)


def multiclass_gap_floor(lam: float, n_classes: int, r_phi_sq: float, max_class_weight: float = 1.0) -> float:
    """Public floor of the multi-class kernel certificate (``src/kernel_learning/multiclass.rs``): the kernel-sum
    slack ``2·KERNEL_SUM_REL_ERROR·w²R²/λ`` plus the scalar slack ``γ_{4K+16}·(3|z| + log K + 1)·w`` with
    ``|z| ≤ √2·w·R²/λ`` (``R² = R_φ'²``, ``w`` the largest class weight, ``K`` classes).

    >>> 5e-10 < multiclass_gap_floor(1e-3, 26, 1.25) < 1e-8
    True
    """
    lam, r2, w, K = float(lam), float(r_phi_sq), float(max_class_weight), int(n_classes)
    zmax = math.sqrt(2.0) * w * r2 / lam
    return 2.0 * KERNEL_SUM_REL_ERROR * w * w * r2 / lam + gamma_k(4 * K + 16) * w * (3.0 * zmax + math.log(K) + 1.0)


def auto_tol(floor: float) -> float:
    """``tol="auto"``: :data:`CERTIFY_MARGIN` times a solver's public float ``floor`` (its smallest certifiable
    tolerance, with headroom). The same public inputs give the same value for every dataset.

    >>> auto_tol(1.25e-09)
    2.5e-09
    """
    return CERTIFY_MARGIN * float(floor)


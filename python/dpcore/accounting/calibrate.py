"""Noise calibration and privacy composition.

Every function here is pure Python + scipy, validates its inputs (clear ``ValueError`` /
``TypeError`` naming the parameter) and, wherever a value is found numerically, returns the end of
the search bracket that is *guaranteed* to satisfy the privacy inequality being solved: a noise
scale is never rounded down, a per-step budget is never rounded up.

Formulas and sources
--------------------
* Laplace mechanism (Dwork, McSherry, Nissim, Smith 2006): ``b = Δ₁ / ε`` gives ε-DP.
* Classic Gaussian mechanism (Dwork & Roth 2014, Thm A.1): ``σ = Δ₂ sqrt(2 ln(1.25/δ)) / ε`` gives
  (ε, δ)-DP **only for ε < 1**.
* Analytic Gaussian mechanism (Balle & Wang 2018, Thm 8): ``N(0, σ²)`` with L2 sensitivity Δ is
  (ε, δ)-DP iff ``Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) ≤ δ``; σ is found by bisection.
* zCDP → (ε, δ) (Canonne, Kamath, Steinke 2020, Cor. 13): ρ-zCDP implies (ε, δ)-DP with
  ``δ = inf_{α>1} exp((α−1)(αρ−ε)) / (α−1) · (1 − 1/α)^α``.  The multivariate (discrete) Gaussian
  with L2 sensitivity Δ and scale σ is ``Δ²/(2σ²)``-zCDP (CKS 2020, Thm 14; Bun & Steinke 2016).
* Basic composition (Dwork et al. 2006): the ε's and δ's add up.
* Advanced composition (Dwork, Rothblum, Vadhan 2010, Thm III.3): k-fold adaptive composition of
  (ε, δ)-DP mechanisms is ``(sqrt(2k ln(1/δ'))·ε + kε(e^ε − 1), kδ + δ')``-DP for every δ' > 0.
"""

from __future__ import annotations

import functools
import inspect
import math
import sys
import numbers
from fractions import Fraction
from typing import Iterable, Optional, Tuple

from scipy import special

from dpcore._internal.exact import float_down, float_up
from dpcore._internal.validation import check_delta, check_epsilon, check_positive, check_sensitivity

__all__ = [
    "laplace_scale",
    "gaussian_sigma_classic",
    "gaussian_delta",
    "gaussian_sigma_analytic",
    "gaussian_sigma",
    "zcdp_delta",
    "zcdp_rho",
    "zcdp_epsilon",
    "compose_basic",
    "compose_advanced",
    "advanced_per_step_epsilon",
    "per_step_epsilon",
]

#: Relative width of the final bisection bracket.
_RTOL = 1e-12
_MAX_ITER = 4000
_SQRT2 = math.sqrt(2.0)
_LOG_HALF = math.log(0.5)


# ----------------------------------------------------------------------------------------------
# small helpers
# ----------------------------------------------------------------------------------------------
def _check_k(k, name: str = "k") -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer, got {type(k).__name__}")
    k = int(k)
    if k < 1:
        raise ValueError(f"{name} must be a positive integer, got {k}")
    return k


def _div_down(epsilon: float, k: int) -> float:
    """Largest float q with ``k * Fraction(q) <= Fraction(epsilon)`` (exact basic composition)."""
    return float_down(Fraction(epsilon) / k)


def _representable(value: float, what: str, **params) -> float:
    """``value`` if it is a positive finite float, else a ``ValueError`` naming the user's parameters.

    Extreme but valid inputs (ε = 1e-308, Δ = 1e308) give noise scales or composed budgets that
    overflow or underflow a float; they are refused here instead of returning inf/0/NaN.
    """
    if math.isfinite(value) and value > 0.0:
        return value
    args = ", ".join(f"{k}={v!r}" for k, v in params.items())
    raise ValueError(f"{args}: the {what} ({value!r}) is not representable as a positive finite float")


def _named_errors(what: str):
    """Decorator for the public functions: a float64 overflow or failed bracket inside the computation (a bare
    ``OverflowError``/``ArithmeticError`` from ``math``, ``Fraction`` or a bisection) becomes a ``ValueError``
    whose message starts with the call's arguments (``sensitivity=5e-324, epsilon=...: ...``), like
    :func:`_representable`. Input validation runs first and keeps its own messages."""

    def wrap(func):
        sig = inspect.signature(func)

        @functools.wraps(func)
        def guarded(*args, **kwargs):
            try:
                return func(*args, **kwargs)
            except ArithmeticError as exc:  # OverflowError, ZeroDivisionError, FloatingPointError, bracket failures
                bound = sig.bind(*args, **kwargs)
                shown = ", ".join(f"{k}={v!r:.40}" for k, v in bound.arguments.items())
                raise ValueError(f"{shown}: the {what} cannot be computed in float64 ({exc}); these parameters are "
                                 f"too extreme") from None

        return guarded

    return wrap


def _bisect(pred, lo: float, hi: float, *, rtol: float = _RTOL) -> Tuple[float, float]:
    """Bisect a monotone predicate with ``pred(lo) != pred(hi)`` down to relative width ``rtol``.

    Returns the final bracket (lo, hi); the invariant ``pred(lo) == pred(lo_initial)`` and
    ``pred(hi) == pred(hi_initial)`` is maintained, so the caller returns the side it trusts.
    Works on a geometric scale (both ends must be > 0).
    """
    p_lo = pred(lo)
    for _ in range(_MAX_ITER):
        if hi - lo <= rtol * hi:
            break
        mid = math.sqrt(lo) * math.sqrt(hi) if hi / lo > 4.0 else 0.5 * (lo + hi)
        if not (lo < mid < hi):
            break
        if pred(mid) == p_lo:
            lo = mid
        else:
            hi = mid
    return lo, hi


# ----------------------------------------------------------------------------------------------
# Laplace and Gaussian calibration
# ----------------------------------------------------------------------------------------------
@_named_errors("Laplace scale")
def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """Scale of the Laplace mechanism.

    ``b = Δ / ε``: adding ``Lap(b)`` noise to a query with L1 sensitivity Δ is ε-DP
    (Dwork, McSherry, Nissim, Smith 2006).

    Parameters
    ----------
    sensitivity : float
        L1 sensitivity Δ > 0 of the released quantity.
    epsilon : float
        Privacy parameter ε > 0.

    Returns
    -------
    float
        The noise scale ``b``.

    Examples
    --------
    >>> from dpcore.accounting.calibrate import laplace_scale
    >>> laplace_scale(1.0, 0.5)
    2.0
    """
    sensitivity = check_sensitivity(sensitivity)
    epsilon = check_epsilon(epsilon, grid=False)
    return _representable(sensitivity / epsilon, "Laplace scale sensitivity/epsilon",
                          sensitivity=sensitivity, epsilon=epsilon)


@_named_errors("Gaussian sigma")
def gaussian_sigma_classic(sensitivity: float, epsilon: float, delta: float) -> float:
    """Classic Gaussian-mechanism calibration (Dwork & Roth 2014, Thm A.1).

    ``σ = Δ sqrt(2 ln(1.25/δ)) / ε``.  The proof needs **ε < 1**: for ε ≥ 1 the formula is not a
    valid calibration and this function refuses (use :func:`gaussian_sigma_analytic`, which is also
    tighter for every ε).

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity Δ > 0.
    epsilon : float
        0 < ε < 1.
    delta : float
        0 < δ < 1.

    Returns
    -------
    float
        Standard deviation σ of the Gaussian noise.

    Raises
    ------
    ValueError
        If ε ≥ 1 or δ = 0 (or any input is invalid).

    Examples
    --------
    >>> from dpcore.accounting.calibrate import gaussian_sigma_classic
    >>> round(gaussian_sigma_classic(1.0, 0.5, 1e-5), 4)
    9.6896
    """
    sensitivity = check_sensitivity(sensitivity)
    epsilon = check_epsilon(epsilon, grid=False)
    delta = check_delta(delta, allow_zero=False, grid=False)
    if epsilon >= 1.0:
        raise ValueError(
            f"epsilon must be < 1 for the classic Gaussian mechanism (the bound "
            f"sigma = sensitivity*sqrt(2 ln(1.25/delta))/epsilon is only proven for epsilon < 1), "
            f"got {epsilon!r}; use gaussian_sigma_analytic (method='analytic') instead"
        )
    return _representable(sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon, "Gaussian sigma",
                          sensitivity=sensitivity, epsilon=epsilon, delta=delta)


def _log_gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """``log δ(σ)`` of the analytic Gaussian mechanism, computed without cancellation.

    With ``r = Δ/σ``, ``a = r/2 − ε/r`` and ``b = −r/2 − ε/r = a − r`` one has ``b² = a² + 2ε``
    exactly, so for ``a < 0`` (the small-δ regime) ``e^ε Φ(b) = ½ e^{−a²/2} erfcx(−b/√2)`` and

        δ = ½ e^{−a²/2} (erfcx(−a/√2) − erfcx(−b/√2)),

    which has no overflow (no ``e^ε``) and no underflow before taking the log.  For ``a ≥ 0`` we
    use ``δ = Φ(a) (1 − exp(ε + log Φ(b) − log Φ(a)))`` with ``log_ndtr``/``expm1``.  When the gap
    ``r`` is so small relative to ``|a|`` that the erfcx difference loses its relative accuracy,
    the conservative bound ``δ ≤ Φ(a) − Φ(b) ≤ r·φ(a)`` is returned instead (never an
    under-estimate).
    """
    r = sensitivity / sigma
    if r == math.inf:
        return 0.0  # σ → 0: δ → 1
    if r == 0.0:
        return -math.inf  # σ → ∞: δ → 0
    a = 0.5 * r - epsilon / r
    if a == -math.inf:
        return -math.inf
    b = a - r
    if a < 0.0:
        x, h = -a / _SQRT2, r / _SQRT2  # δ = ½ e^{−a²/2} (erfcx(x) − erfcx(x + h))
        if h > 1e-4 * x:
            diff = float(special.erfcx(x) - special.erfcx(x + h))
            if diff > 0.0:
                return _LOG_HALF - 0.5 * a * a + math.log(diff)
        # Tiny gap: erfcx is convex, so erfcx(x) − erfcx(x + h) ≤ h·(−erfcx'(x)) with
        # −erfcx'(x) = 2/√π − 2x·erfcx(x); a relative slack covers the rounding of that difference.
        g = (2.0 / math.sqrt(math.pi) - 2.0 * x * float(special.erfcx(x))) * (1.0 + 1e-12 * (1.0 + x * x))
        if math.isfinite(g) and g > 0.0 and h * g > 0.0:
            return _LOG_HALF - 0.5 * a * a + math.log(h * g)
        # last resort: Φ(a) − e^ε Φ(b) ≤ Φ(a) − Φ(b) ≤ (a − b) φ(a)   (φ increasing on (−∞, 0])
        return math.log(r) - 0.5 * a * a - 0.5 * math.log(2.0 * math.pi)
    la = float(special.log_ndtr(a))
    lb = float(special.log_ndtr(b))
    t = epsilon + lb - la
    if not t < 0.0:  # pragma: no cover - mathematically t < 0; stay conservative under rounding
        return la
    return la + math.log(-math.expm1(t))


@_named_errors("Gaussian delta")
def gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """Exact δ(ε) of the Gaussian mechanism (Balle & Wang 2018, Thm 8).

    ``N(0, σ²)`` noise on a query with L2 sensitivity Δ is (ε, δ)-DP if and only if

        δ ≥ Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ).

    Evaluated in a numerically stable form (scaled complementary error function, ``log_ndtr``), so
    tiny δ (down to the underflow threshold) keep full relative accuracy and large ε do not
    overflow.

    Parameters
    ----------
    sigma : float
        Noise standard deviation σ > 0.
    sensitivity : float
        L2 sensitivity Δ > 0.
    epsilon : float
        ε > 0.

    Returns
    -------
    float
        The smallest δ for which the mechanism is (ε, δ)-DP.

    Examples
    --------
    The exact δ at the analytic σ is the target δ (up to the bisection's tolerance):

    >>> from dpcore.accounting.calibrate import gaussian_delta, gaussian_sigma_analytic
    >>> sigma = gaussian_sigma_analytic(1.0, 1.0, 1e-5)
    >>> bool(gaussian_delta(sigma, 1.0, 1.0) <= 1e-5)
    True
    """
    sigma = check_positive(sigma, "sigma")
    sensitivity = check_sensitivity(sensitivity)
    epsilon = check_epsilon(epsilon, grid=False)
    return math.exp(_log_gaussian_delta(sigma, sensitivity, epsilon))


@_named_errors("Gaussian sigma")
def gaussian_sigma_analytic(sensitivity: float, epsilon: float, delta: float) -> float:
    """Analytic Gaussian mechanism calibration (Balle & Wang 2018, Alg. 1).

    Returns a σ with ``gaussian_delta(σ, Δ, ε) ≤ δ`` (guaranteed: bisection on the monotone
    function ``σ ↦ δ(σ)`` keeps the upper end of the bracket, which always satisfies the
    inequality) and within relative distance ~1e-12 of the optimal σ.  Valid for every ε > 0,
    including ε ≥ 1, and always at least as tight as the classic calibration.

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity Δ > 0.
    epsilon : float
        ε > 0.
    delta : float
        0 < δ < 1 (δ = 0 is impossible for Gaussian noise).

    Returns
    -------
    float
        Noise standard deviation σ.

    Examples
    --------
    The analytic σ is smaller than the classic one, and also valid for ε ≥ 1:

    >>> from dpcore.accounting.calibrate import gaussian_sigma_analytic, gaussian_sigma_classic
    >>> round(gaussian_sigma_analytic(1.0, 0.5, 1e-5), 4), round(gaussian_sigma_classic(1.0, 0.5, 1e-5), 4)
    (7.0318, 9.6896)
    >>> round(gaussian_sigma_analytic(1.0, 2.0, 1e-5), 4)
    1.9938
    """
    sensitivity = check_sensitivity(sensitivity)
    epsilon = check_epsilon(epsilon, grid=False)
    delta = check_delta(delta, allow_zero=False, grid=False)
    log_target = math.log(delta)

    def ok(s: float) -> bool:
        return _log_gaussian_delta(s, sensitivity, epsilon) <= log_target

    # Initial guess: the classic formula with ε clipped (a valid upper bound for ε < 1).
    hi = sensitivity * math.sqrt(2.0 * (math.log(1.25) - log_target)) / epsilon
    # the classic σ is within a factor ~2 of the analytic one; both ends must be normal floats
    _representable(hi if hi >= 2.0**-1000 else 0.0, "Gaussian sigma", sensitivity=sensitivity,
                   epsilon=epsilon, delta=delta)
    if hi > 2.0**1000:
        _representable(math.inf, "Gaussian sigma", sensitivity=sensitivity, epsilon=epsilon, delta=delta)
    while not ok(hi):
        hi *= 2.0
        if not math.isfinite(hi):  # pragma: no cover - δ(σ) → 0 as σ → ∞
            raise ArithmeticError("could not bracket the analytic Gaussian sigma")
    lo = hi
    while ok(lo):
        lo *= 0.5
        if lo == 0.0:  # pragma: no cover - δ(σ) → 1 as σ → 0
            raise ArithmeticError("could not bracket the analytic Gaussian sigma")
    _, hi = _bisect(ok, lo, hi)
    return hi


# ----------------------------------------------------------------------------------------------
# concentrated DP
# ----------------------------------------------------------------------------------------------
def _zcdp_log_delta_at(t: float, rho: float, epsilon: float) -> float:
    """log of the CKS Cor. 13 expression at α = 1 + t (valid upper bound on log δ for every t > 0).

    log[exp((α−1)(αρ−ε)) / (α−1) · (1−1/α)^α]
        = t(ρ(1+t) − ε) − log t + (1+t)(log t − log1p(t))
        = t(ρ(1+t) − ε) − t·log1p(1/t) − log1p(t)          (stable for all t > 0).
    """
    return t * (rho * (1.0 + t) - epsilon) - t * math.log1p(1.0 / t) - math.log1p(t)


def _zcdp_log_delta(rho: float, epsilon: float) -> float:
    """min over α of the CKS bound, log scale.

    The exponent f(α) is strictly convex on (1, ∞) (f'' = 2ρ + 1/(α(α−1)) > 0) with
    f'(α) = 2ρα − ρ − ε + log(1 − 1/α); we bisect f' = 0 in t = α − 1 and evaluate f at the final
    point.  Any α gives a valid bound, so a slightly sub-optimal root is safe.
    """

    def fprime_nonneg(t: float) -> bool:
        return rho * (1.0 + 2.0 * t) - epsilon - math.log1p(1.0 / t) >= 0.0

    hi = min(max(1.0, (rho + epsilon) / (2.0 * rho)), 1e300)
    while not fprime_nonneg(hi):
        if hi >= 1e300:  # ρ negligible next to ε: evaluate at the largest t (still a valid bound)
            return min(_zcdp_log_delta_at(hi, rho, epsilon), 0.0)
        hi = min(hi * 2.0, 1e300)
    lo = min(1.0, hi)
    while fprime_nonneg(lo):
        lo *= 0.5
        if lo < 1e-300:  # pragma: no cover
            break
    lo, hi = _bisect(fprime_nonneg, lo, hi, rtol=1e-10)
    return min(_zcdp_log_delta_at(lo, rho, epsilon), _zcdp_log_delta_at(hi, rho, epsilon), 0.0)


@_named_errors("zCDP delta")
def zcdp_delta(rho: float, epsilon: float) -> float:
    """δ of the (ε, δ)-DP guarantee implied by ρ-zCDP (Canonne, Kamath, Steinke 2020, Cor. 13).

        δ = inf_{α>1} exp((α−1)(αρ−ε)) / (α−1) · (1 − 1/α)^α

    computed in log space; the minimising α is found by bisection on the derivative of the
    (strictly convex) exponent, and the bound is evaluated at that α — any α gives a valid upper
    bound, so the result is never smaller than the true infimum by more than rounding.  Capped at 1.

    Parameters
    ----------
    rho : float
        zCDP parameter ρ > 0.
    epsilon : float
        ε > 0.

    Returns
    -------
    float
        δ in (0, 1].

    Examples
    --------
    >>> from dpcore.accounting.calibrate import zcdp_delta
    >>> f"{zcdp_delta(0.1, 2.0):.3e}"
    '4.325e-06'
    """
    rho = check_positive(rho, "rho")
    epsilon = check_epsilon(epsilon, grid=False)
    return math.exp(_zcdp_log_delta(rho, epsilon))


@_named_errors("zCDP rho")
def zcdp_rho(epsilon: float, delta: float) -> float:
    """Largest ρ such that ρ-zCDP implies (ε, δ)-DP via :func:`zcdp_delta`.

    Bisection on the increasing map ``ρ ↦ zcdp_delta(ρ, ε)``, returning the lower (safe) end of
    the final bracket, so ``zcdp_delta(zcdp_rho(ε, δ), ε) ≤ δ`` always holds.  Used by the discrete
    Gaussian mechanism: σ = Δ / sqrt(2ρ) (CKS 2020, Thm 14).

    Parameters
    ----------
    epsilon : float
        ε > 0.
    delta : float
        0 < δ < 1.

    Returns
    -------
    float
        ρ > 0.

    Examples
    --------
    >>> from dpcore.accounting.calibrate import zcdp_delta, zcdp_rho
    >>> rho = zcdp_rho(1.0, 1e-6)
    >>> round(rho, 5), bool(zcdp_delta(rho, 1.0) <= 1e-6)
    (0.02436, True)
    """
    epsilon = check_epsilon(epsilon, grid=False)
    delta = check_delta(delta, allow_zero=False, grid=False)
    log_target = math.log(delta)

    def ok(rho: float) -> bool:
        return _zcdp_log_delta(rho, epsilon) <= log_target

    # Bun–Steinke: ρ-zCDP ⇒ (ρ + 2 sqrt(ρ ln(1/δ)), δ)-DP; invert for a starting point.
    L = -math.log(delta)
    lo = (epsilon / (math.sqrt(L + epsilon) + math.sqrt(L))) ** 2  # = (sqrt(L+ε) − sqrt(L))²
    if not lo > 0.0:
        raise ValueError(f"epsilon={epsilon!r} is too small to calibrate a zCDP level (rho underflows)")
    while not ok(lo):
        lo *= 0.5
        if lo == 0.0:  # pragma: no cover
            raise ArithmeticError("could not bracket zCDP rho")
    hi = lo
    while ok(hi):
        hi *= 2.0
        if not math.isfinite(hi):  # pragma: no cover
            raise ArithmeticError("could not bracket zCDP rho")
    lo, _ = _bisect(ok, lo, hi)
    return lo


@_named_errors("zCDP epsilon")
def zcdp_epsilon(rho: float, delta: float) -> float:
    """Smallest ε (up to relative 1e-12, rounded up) such that ρ-zCDP implies (ε, δ)-DP.

    Bisection on ``ε ↦ zcdp_delta(ρ, ε)`` (decreasing), returning the upper end of the bracket,
    so ``zcdp_delta(ρ, zcdp_epsilon(ρ, δ)) ≤ δ`` always holds.  Equivalent to CKS 2020 Cor. 13 in
    the form ``ε = inf_α αρ + (ln(1/δ) + (α−1) ln(1−1/α) − ln α)/(α−1)`` and never larger than the
    Bun–Steinke bound ``ρ + 2 sqrt(ρ ln(1/δ))``.

    Parameters
    ----------
    rho : float
        ρ > 0.
    delta : float
        0 < δ < 1.

    Returns
    -------
    float
        ε > 0.

    Examples
    --------
    >>> from dpcore.accounting.calibrate import zcdp_epsilon, zcdp_rho
    >>> eps = zcdp_epsilon(zcdp_rho(1.0, 1e-6), 1e-6)  # round trip
    >>> bool(abs(eps - 1.0) < 1e-9)
    True
    """
    rho = check_positive(rho, "rho")
    delta = check_delta(delta, allow_zero=False, grid=False)
    log_target = math.log(delta)

    def ok(eps: float) -> bool:
        return _zcdp_log_delta(rho, eps) <= log_target

    hi = rho + 2.0 * math.sqrt(rho * -math.log(delta))
    while not ok(hi):
        hi *= 2.0
        if not math.isfinite(hi):
            _representable(hi, "epsilon", rho=rho, delta=delta)
    lo = hi
    while ok(lo):
        lo *= 0.5
        if lo < 1e-300:
            return hi  # any positive ε works (δ ≥ the ε → 0 limit)
    _, hi = _bisect(ok, lo, hi)
    return hi


@_named_errors("Gaussian sigma")
def gaussian_sigma(sensitivity: float, epsilon: float, delta: float, method: str = "analytic") -> float:
    """Gaussian noise standard deviation for (ε, δ)-DP with L2 sensitivity Δ.

    Parameters
    ----------
    sensitivity, epsilon, delta : float
        Δ > 0, ε > 0, 0 < δ < 1.
    method : {"analytic", "classic", "zcdp"}
        * ``"analytic"`` — :func:`gaussian_sigma_analytic` (Balle & Wang 2018; tightest, any ε).
        * ``"classic"`` — :func:`gaussian_sigma_classic` (ε < 1 only).
        * ``"zcdp"`` — ``Δ / sqrt(2 ρ)`` with ``ρ = zcdp_rho(ε, δ)``: the calibration that is valid
          for the *discrete* Gaussian (CKS 2020, Thm 14 + Cor. 13).

    Returns
    -------
    float
        σ.

    Examples
    --------
    >>> from dpcore.accounting.calibrate import gaussian_sigma
    >>> [round(gaussian_sigma(1.0, 0.5, 1e-6, method=m), 3) for m in ("analytic", "classic", "zcdp")]
    [8.058, 10.598, 8.677]
    """
    if method == "analytic":
        return gaussian_sigma_analytic(sensitivity, epsilon, delta)
    if method == "classic":
        return gaussian_sigma_classic(sensitivity, epsilon, delta)
    if method == "zcdp":
        sensitivity = check_sensitivity(sensitivity)
        rho = zcdp_rho(epsilon, delta)
        # round the result up by one ulp so that Δ²/(2σ²) ≤ ρ despite float rounding
        return _representable(math.nextafter(sensitivity / math.sqrt(2.0 * rho), math.inf), "Gaussian sigma",
                              sensitivity=sensitivity, epsilon=epsilon, delta=delta)
    raise ValueError(f"method must be one of 'analytic', 'classic', 'zcdp', got {method!r}")


# ----------------------------------------------------------------------------------------------
# composition
# ----------------------------------------------------------------------------------------------
@_named_errors("composed budget")
def compose_basic(epsilons: Iterable[float], deltas: Optional[Iterable[float]] = None) -> Tuple[float, float]:
    """Basic (sequential) composition: ``(Σ ε_i, Σ δ_i)`` (Dwork et al. 2006).

    The sums are computed exactly (``fractions.Fraction``) and rounded *up* to the next float, so
    the reported total is never smaller than the true one.

    Parameters
    ----------
    epsilons : sequence of float
        Per-mechanism ε_i > 0 (at least one).
    deltas : sequence of float, optional
        Per-mechanism δ_i in [0, 1), same length; default all zero.

    Returns
    -------
    (float, float)
        Total (ε, δ).

    Examples
    --------
    >>> from dpcore.accounting.calibrate import compose_basic
    >>> compose_basic([0.5, 0.25, 0.25], [1e-6, 0.0, 1e-6])
    (1.0, 2e-06)
    """
    if isinstance(epsilons, (str, bytes)) or not hasattr(epsilons, "__iter__"):
        raise TypeError(f"epsilons must be a sequence of floats, got {type(epsilons).__name__}")
    if deltas is not None and (isinstance(deltas, (str, bytes)) or not hasattr(deltas, "__iter__")):
        raise TypeError(f"deltas must be a sequence of floats, got {type(deltas).__name__}")
    eps_list = [check_epsilon(e, f"epsilons[{i}]", grid=False) for i, e in enumerate(epsilons)]
    if not eps_list:
        raise ValueError("epsilons must contain at least one value")
    if deltas is None:
        delta_list = [0.0] * len(eps_list)
    else:
        delta_list = [check_delta(d, f"deltas[{i}]", grid=False) for i, d in enumerate(deltas)]
        if len(delta_list) != len(eps_list):
            raise ValueError(
                f"deltas must have the same length as epsilons ({len(eps_list)}), "
                f"got {len(delta_list)}"
            )
    eps_total = sum((Fraction(e) for e in eps_list), Fraction(0))
    delta_total = sum((Fraction(d) for d in delta_list), Fraction(0))
    return float_up(eps_total), float_up(delta_total)


def _advanced_epsilon(eps0: float, k: int, delta_prime: float) -> float:
    """sqrt(2k ln(1/δ'))·ε0 + k·ε0·(e^{ε0} − 1) (single shared evaluation; +inf on overflow)."""
    try:
        return math.sqrt(2.0 * k * -math.log(delta_prime)) * eps0 + k * eps0 * math.expm1(eps0)
    except OverflowError:
        return math.inf


@_named_errors("composed budget")
def compose_advanced(epsilon: float, delta: float, k: int, delta_prime: float) -> Tuple[float, float]:
    """The better of advanced (Dwork, Rothblum, Vadhan 2010, Thm III.3) and basic composition.

    The k-fold adaptive composition of (ε, δ)-DP mechanisms is (ε', kδ + δ')-DP with

        ε' = sqrt(2k ln(1/δ'))·ε + k·ε·(e^ε − 1),

    and (kε, kδ)-DP by basic composition. Advanced composition is worse than basic for few steps or
    a large ε (e.g. k = 10, ε = 1, δ' = 1e-6: ε' = 33.8 > kε = 10), so the function returns the basic
    total ``(kε, kδ)`` (rounded up, exact) whenever ``kε ≤ ε'`` and ``(ε', kδ + δ')`` otherwise: never
    worse than basic composition. (Until dpcore 0.x it returned ε' unconditionally; the callers in
    dpcore, SimplexERM's draw count and TDIL's round budget, already took the minimum themselves, so
    their outputs do not change.)

    Parameters
    ----------
    epsilon : float
        Per-step ε > 0.
    delta : float
        Per-step δ in [0, 1).
    k : int
        Number of steps (≥ 1).
    delta_prime : float
        Slack 0 < δ' < 1 (not charged when basic composition wins).

    Returns
    -------
    (float, float)
        Total (ε, δ): ``min`` of the two compositions in ε.

    Examples
    --------
    >>> from dpcore.accounting.calibrate import compose_advanced
    >>> compose_advanced(1.0, 0.0, 10, 1e-6)  # basic composition wins
    (10.0, 0.0)
    >>> eps, delta = compose_advanced(0.1, 1e-7, 100, 1e-6)  # advanced wins: 6.31 < 10
    >>> round(eps, 2), delta
    (6.31, 1.1e-05)
    >>> eps, delta = compose_advanced(0.01, 0.0, 1000, 1e-6)
    >>> round(eps, 4), delta  # basic composition would give ε = 10
    (1.7628, 1e-06)
    """
    epsilon = check_epsilon(epsilon, grid=False)
    delta = check_delta(delta, grid=False)
    k = _check_k(k)
    delta_prime = check_delta(delta_prime, "delta_prime", allow_zero=False, grid=False)
    basic_exact = k * Fraction(epsilon)
    basic_eps = float_up(basic_exact) if basic_exact <= Fraction(sys.float_info.max) else math.inf
    adv = _advanced_epsilon(epsilon, k, delta_prime)
    if basic_eps <= adv and math.isfinite(basic_eps):
        return basic_eps, float_up(k * Fraction(delta))
    eps_total = _representable(adv, "composed epsilon", epsilon=epsilon, k=k, delta_prime=delta_prime)
    delta_total = float_up(k * Fraction(delta) + Fraction(delta_prime))
    return eps_total, delta_total


@_named_errors("per-step epsilon")
def advanced_per_step_epsilon(epsilon: float, k: int, delta_prime: float) -> float:
    """Largest per-step ε0 whose k-fold advanced composition stays within ε.

    Solves ``sqrt(2k ln(1/δ')) ε0 + k ε0 (e^{ε0} − 1) ≤ ε`` by bisection (the left side is
    increasing in ε0) and returns the lower end of the bracket, so the inequality is guaranteed
    to hold (as evaluated by :func:`compose_advanced`).  The total δ is ``kδ0 + δ'``.

    Parameters
    ----------
    epsilon : float
        Total ε > 0.
    k : int
        Number of steps (≥ 1).
    delta_prime : float
        Slack 0 < δ' < 1.

    Returns
    -------
    float
        ε0 > 0.

    Examples
    --------
    >>> from dpcore.accounting.calibrate import advanced_per_step_epsilon, compose_advanced
    >>> eps0 = advanced_per_step_epsilon(1.0, 1000, 1e-6)
    >>> round(eps0, 6), bool(compose_advanced(eps0, 0.0, 1000, 1e-6)[0] <= 1.0)
    (0.005812, True)
    """
    epsilon = check_epsilon(epsilon, grid=False)
    k = _check_k(k)
    delta_prime = check_delta(delta_prime, "delta_prime", allow_zero=False, grid=False)

    def ok(e0: float) -> bool:
        return _advanced_epsilon(e0, k, delta_prime) <= epsilon

    hi = epsilon
    while ok(hi):
        hi *= 2.0
    lo = hi
    while not ok(lo):
        lo *= 0.5
        if lo == 0.0:
            _representable(0.0, "per-step epsilon", epsilon=epsilon, k=k, delta_prime=delta_prime)
    lo, _ = _bisect(ok, lo, hi)
    return lo


@_named_errors("per-step epsilon")
def per_step_epsilon(epsilon: float, k: int, delta_prime: Optional[float] = None) -> float:
    """Per-step ε for k adaptively composed mechanisms with total budget ε.

    Without ``delta_prime``: plain composition, ``ε/k`` rounded *down* so that k steps sum to at
    most ε exactly.  With ``delta_prime``: ``max(advanced_per_step_epsilon(ε, k, δ'), ε/k)`` —
    both are valid, the advanced one costs an extra δ' (so the total is ``(ε, kδ0 + δ')``), and
    plain composition wins for small k.

    Parameters
    ----------
    epsilon : float
        Total ε > 0.
    k : int
        Number of steps (≥ 1).
    delta_prime : float, optional
        Advanced-composition slack 0 < δ' < 1.

    Returns
    -------
    float
        ε0 > 0.

    Examples
    --------
    >>> from dpcore.accounting.calibrate import per_step_epsilon
    >>> per_step_epsilon(1.0, 4)
    0.25
    >>> bool(per_step_epsilon(1.0, 1000, delta_prime=1e-6) > 1.0 / 1000)  # advanced composition wins
    True
    """
    epsilon = check_epsilon(epsilon, grid=False)
    k = _check_k(k)
    basic = _div_down(epsilon, k)
    if basic == 0.0:
        raise ValueError(f"epsilon/k = {epsilon!r}/{k} underflows to 0; no usable per-step epsilon")
    if delta_prime is None:
        return basic
    return max(advanced_per_step_epsilon(epsilon, k, delta_prime), basic)

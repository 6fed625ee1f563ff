"""Randomness and floating-point-safe noise mechanisms.

Randomness
----------
Every function takes ``random_state``:

* ``None`` (default) — a fresh ChaCha20 generator keyed from the operating system's CSPRNG. This is
  the only setting fit for protecting real data.
* an ``int`` in ``[0, 2**64)`` — a reproducible generator, **for research and tests only**: anyone
  who knows the seed can subtract the noise.
* a :class:`ChaChaRng` — used as is (its state advances), e.g. to draw several releases from one
  seeded stream.

Parallel sampling in the Rust core gives each fixed-size chunk its own ChaCha stream derived from the
generator, so results are identical for any number of threads.

Released noise (Mironov 2012)
-----------------------------
Adding a floating-point Laplace/Gaussian sample to a float leaks the input through the low-order
bits of the result. dpcore never does that. Every released number is an exact multiple of a
power-of-two granularity ``g = 2**k``, and the integer multiple is sampled *exactly* (uniform
random bits and integer arithmetic only); converting it to a float is post-processing.

Laplace and the ``method="zcdp"`` Gaussian snap first and add exact discrete noise::

    (round(x / g) + Y) * g,      Y ∈ Z^d exact discrete noise,

with ``Y`` sampled by the Canonne–Kamath–Steinke (2020) algorithms with rational parameters.

Laplace (pure ε, L1 sensitivity Δ₁)
    Granularity ``g`` = largest power of two ≤ ``b · 2**-40`` with ``b = Δ₁/ε``. Snapping moves each
    coordinate by at most ``g/2``, so the integer query ``round(x/g)`` has L1 sensitivity at most
    ``Δ_int = floor(Δ₁/g) + d`` grid units (inflation ``≤ 1 + d · 2**-40/ε`` relative). ``ε`` is
    rounded *down* to ``ε'`` with 30 significant bits and ``Y_j`` is discrete Laplace with scale
    ``τ = Δ_int/ε'``: the release is ``ε'``-DP ≤ ``ε``-DP. Effective scale ``τ·g ≈ Δ₁/ε``.

Gaussian, ``method="analytic"`` (the default; (ε, δ), L2 sensitivity Δ₂)
    The release is the continuous Gaussian mechanism rounded to the grid, coordinate-wise::

        j · g,    j = round((x + σ Z) / g),    Z ~ N(0, I_d),

    with ``σ ≥`` :func:`dpcore.accounting.calibrate.gaussian_sigma_analytic` ``(Δ₂, ε, δ)`` (Balle & Wang 2018,
    Thm 8; the plan re-checks ``gaussian_delta(σ, Δ₂, ε) ≤ δ`` and records it as ``delta_used``)
    and ``g = 2**(floor(log2 σ) − 40)``, so ``σ/g ∈ [2**40, 2**41)``.

    *Privacy.* ``x ↦ x + σZ`` is (ε, δ)-DP for every pair with ``‖x − x'‖₂ ≤ Δ₂`` (by rotation
    invariance the d-dimensional privacy loss is the one-dimensional one along ``x − x'``), and the
    release is a deterministic function of ``x + σZ`` (rounding, then float conversion), so it is
    (ε, δ)-DP by post-processing — with the analytic curve verbatim: no grid inflation of the
    sensitivity (rounding comes *after* the noise), no zCDP conversion. About 8% less σ than the
    zCDP route.

    *Exactness.* ``Z = s·(K + U)`` is drawn by Karney's algorithm N (*Sampling exactly from the
    normal distribution*, ACM TOMS 2016) from fair random bits, with ``U`` a lazily generated
    binary expansion; ``j`` is then decided by exact dyadic comparisons of ``x/g + σ/g·Z`` with
    the cell boundaries ``j ± ½``, drawing further digits of ``U`` until the cell is certain
    (:mod:`dpcore._core`, ``src/mechanisms/noise/karney.rs``). Hence, for the float ``x`` and float ``σ``
    (both exact dyadic rationals), ``P[j] = Φ(((j+½)g − x)/σ) − Φ(((j−½)g − x)/σ)`` *exactly*.
    Ties have probability zero (formally: round half up).

    *Why no Mironov leak.* The output is a deterministic function of the exactly distributed
    integer ``j``; its law depends on ``x`` only through the formula above, i.e. exactly as in the
    idealised rounded mechanism — no float rounding of a noisy value ever happens.

Gaussian, ``method="zcdp"`` ((ε, δ), L2 sensitivity Δ₂)
    The multivariate discrete Gaussian ``N_Z(0, σ²)^d`` on an integer query with L2 sensitivity
    ``Δ`` is ``Δ²/(2σ²)``-zCDP (CKS 2020, Thm 14), and ``ρ``-zCDP implies ``(ε, δ)``-DP with the
    CKS Cor. 13 conversion (:func:`dpcore.accounting.calibrate.zcdp_rho` gives the largest admissible ``ρ``).
    Granularity ``g`` = largest power of two ≤ ``σ₀ · 2**-26`` with ``σ₀ = Δ₂/sqrt(2ρ)``; the L2
    sensitivity after snapping is at most ``Δ₂/g + sqrt(d)`` grid units (relative inflation
    ``≤ sqrt(d) · 2**-26 / sqrt(2ρ)``), and ``σ²`` (in grid units) is rounded *up* to an integer.
    Costs roughly 5–10% more σ than the analytic route; kept for zCDP accounting and comparison.

The chosen granularity, integer sensitivity and effective noise scale are exposed by
:func:`laplace_plan` / :func:`gaussian_plan` so that every number can be checked.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Optional, Union, overload, Any, TYPE_CHECKING

import numpy as np

from dpcore import _core
from dpcore._internal.exact import float_up
from dpcore._internal.validation import check_count, check_delta, check_epsilon, check_sensitivity
from dpcore._internal.fp import MAX_NOISE_SCALE
from dpcore._internal.types import ArrayLike, NDArray, RandomState
from dpcore.accounting.events import epsilon_delta_event, gaussian_event, zcdp_event
from dpcore.accounting.calibrate import gaussian_delta, gaussian_sigma_analytic, zcdp_delta, zcdp_rho

if TYPE_CHECKING:
    from dpcore.accounting import BudgetAccountant

ChaChaRng = _core.ChaChaRng

__all__ = [
    "ChaChaRng",
    "check_random_state",
    "grid_release",
    "LaplacePlan",
    "GaussianPlan",
    "laplace_plan",
    "gaussian_plan",
    "laplace_mechanism",
    "gaussian_mechanism",
    "private_proportion",
    "sample_laplace_mechanism",
    "sample_gaussian_mechanism",
    "discrete_laplace",
    "discrete_gaussian",
    "gamma_norm_vector",
    "gumbel",
    "exponential",
    "LAPLACE_GRID_BITS",
    "GAUSSIAN_GRID_BITS",
    "ANALYTIC_GRID_BITS",
    "GAUSSIAN_METHODS",
]


#: The Laplace grid is ``2**LAPLACE_GRID_BITS`` times finer than the noise scale.
LAPLACE_GRID_BITS = 40
#: The Gaussian grid is ``2**GAUSSIAN_GRID_BITS`` times finer than the noise standard deviation
#: (bounded so that the exact sampler's integer arithmetic fits in 128 bits).
GAUSSIAN_GRID_BITS = 26
#: The analytic-Gaussian grid is ``2**ANALYTIC_GRID_BITS`` times finer than σ (``σ/g ∈ [2**40, 2**41)``).
ANALYTIC_GRID_BITS = 40
#: Calibrations of the Gaussian mechanism (see the module docstring).
GAUSSIAN_METHODS = ("analytic", "zcdp")
#: Grid exponents supported by the exact samplers.
_MIN_GRID_EXPONENT, _MAX_GRID_EXPONENT = -1000, 1000
#: Significant bits kept when rounding ε down to a rational for the discrete Laplace scale.
_EPSILON_BITS = 30
_MAX_PARAM = 1 << 120


def check_random_state(random_state: RandomState = None) -> "ChaChaRng":
    """Return a :class:`ChaChaRng` for ``random_state``.

    Parameters
    ----------
    random_state : None, int or ChaChaRng
        ``None`` gives an OS-seeded (secure) generator; an ``int`` in ``[0, 2**64)`` gives a
        reproducible generator for research and tests only; a ``ChaChaRng`` is returned as is.

    Raises
    ------
    TypeError
        For any other type (in particular ``numpy.random.Generator``/``RandomState``, whose
        generators are not cryptographically secure).
    ValueError
        For integers outside ``[0, 2**64)``.

    Examples
    --------
    >>> from dpcore.mechanisms import check_random_state
    >>> rng = check_random_state(7)  # reproducible: research and tests only
    >>> rng.next_u64() == check_random_state(7).next_u64()
    True
    >>> type(check_random_state(None)).__name__  # OS-seeded ChaCha20, the secure default
    'ChaChaRng'
    """
    if random_state is None:
        return ChaChaRng()
    if isinstance(random_state, ChaChaRng):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        seed = int(random_state)
        if not 0 <= seed < 2**64:
            raise ValueError(f"random_state must lie in [0, 2**64), got {seed}")
        return ChaChaRng(seed)
    raise TypeError(
        "random_state must be None (secure OS seeding), an int seed (reproducible, research/tests "
        f"only) or a dpcore.mechanisms.noise.ChaChaRng; got {type(random_state).__name__}"
    )


def _floor_log2(x: float) -> int:
    """``floor(log2(x))`` exactly, for finite ``x > 0``."""
    _, exponent = math.frexp(x)
    return exponent - 1


def _check_noise_scale(value, name: str) -> float:
    """A continuous noise scale ``0 < value ≤ MAX_NOISE_SCALE`` (larger draws could overflow a float)."""

    value = check_sensitivity(value, name)
    if value > MAX_NOISE_SCALE:
        raise ValueError(f"{name}={value!r} exceeds MAX_NOISE_SCALE = 2^900: noise draws could overflow a float")
    return value


def _check_dim(dim) -> int:
    return check_count(dim, "dim")


@dataclass(frozen=True)
class LaplacePlan:
    """Calibration of one Laplace release (see the module docstring for the proof sketch).

    Attributes
    ----------
    sensitivity, epsilon, dim : the declared L1 sensitivity, budget and vector length.
    grid_exponent : ``k`` with granularity ``g = 2**k``.
    granularity : ``g``.
    integer_sensitivity : ``floor(Δ₁/g) + dim``, the L1 sensitivity of the snapped query (grid units).
    epsilon_used : ``ε' ≤ ε`` actually guaranteed (ε rounded down to 30 significant bits).
    scale_num, scale_den : the discrete Laplace scale ``τ = Δ_int/ε'`` in grid units, as a fraction.
    scale : effective real-valued Laplace scale ``τ·g`` per coordinate.
    sensitivity_inflation : ``Δ_int·g/Δ₁ ≥ 1``, the relative cost of snapping.
    """

    sensitivity: float
    epsilon: float
    dim: int
    grid_exponent: int
    granularity: float
    integer_sensitivity: int
    epsilon_used: float
    scale_num: int
    scale_den: int
    scale: float
    sensitivity_inflation: float

    def noise_args(self) -> tuple:
        """``(noise, num, den)`` for the Rust grid sampler: discrete Laplace with scale num/den."""
        return ("laplace", self.scale_num, self.scale_den)

    def dp_event(self) -> "_dpe.DpEvent":
        """The dp_accounting event of this release: pure ``ε' = epsilon_used``."""
        return epsilon_delta_event(float(self.epsilon_used), 0.0)


@dataclass(frozen=True)
class GaussianPlan:
    """Calibration of one Gaussian release (see the module docstring for the proof sketch).

    Attributes
    ----------
    sensitivity, epsilon, delta, dim : the declared L2 sensitivity, budget and vector length.
    rho : ``method="zcdp"``: the zCDP parameter targeted (largest ρ with ρ-zCDP ⇒ (ε, δ)-DP);
        ``nan`` for ``method="analytic"`` (no zCDP step).
    rho_used : ``method="zcdp"``: ``Δ_units²/(2σ_u²) ≤ rho``, the zCDP level actually guaranteed;
        ``nan`` for ``method="analytic"``.
    grid_exponent, granularity : ``g = 2**grid_exponent``.
    sensitivity_units : ``method="zcdp"``: upper bound ``Δ₂/g + sqrt(dim)`` on the snapped query's
        L2 sensitivity; ``method="analytic"``: ``Δ₂/g`` (rounded up; nothing is snapped before the
        noise).
    sigma2_units : ``method="zcdp"``: integer variance parameter of the discrete Gaussian in grid
        units; ``0`` for ``method="analytic"`` (the noise is continuous, rounded afterwards).
    sigma : effective real-valued standard deviation per coordinate (``sqrt(sigma2_units)·g`` for
        ``"zcdp"``; the σ of the continuous Gaussian, ``≥ gaussian_sigma_analytic(Δ₂, ε, δ)``, for
        ``"analytic"``).
    sensitivity_inflation : ``sensitivity_units·g/Δ₂ ≥ 1`` (exactly ``1.0`` for ``"analytic"``).
    method : ``"analytic"`` or ``"zcdp"``.
    delta_used : the δ actually guaranteed at ``epsilon`` (``≤ delta``):
        ``gaussian_delta(sigma, Δ₂, ε)`` for ``"analytic"``, ``zcdp_delta(rho_used, ε)`` for ``"zcdp"``.
    """

    sensitivity: float
    epsilon: float
    delta: float
    dim: int
    rho: float
    rho_used: float
    grid_exponent: int
    granularity: float
    sensitivity_units: float
    sigma2_units: int
    sigma: float
    sensitivity_inflation: float
    method: str = "zcdp"
    delta_used: float = math.nan

    def noise_args(self) -> tuple:
        """``(noise, num, den)`` for the Rust grid sampler: discrete Gaussian with σ² = num/den.

        Only for ``method="zcdp"``: an analytic plan is sampled by ``_core.analytic_release`` from
        ``(sigma, grid_exponent)``.
        """
        if self.method != "zcdp":
            raise ValueError(
                f"noise_args() describes the discrete-Gaussian grid sampler of method='zcdp'; this plan has "
                f"method={self.method!r} (continuous Gaussian with sigma={self.sigma!r} rounded to 2**{self.grid_exponent})"
            )
        return ("gaussian", self.sigma2_units, 1)

    def dp_event(self) -> "_dpe.DpEvent":
        """The dp_accounting event of this release: ``GaussianDpEvent(σ/Δ₂)`` (analytic) or ρ-zCDP."""
        if self.method == "analytic":
            return gaussian_event(self.sigma, self.sensitivity)
        return zcdp_event(self.rho_used)


def _check_method(method) -> str:
    if not isinstance(method, str) or method not in GAUSSIAN_METHODS:
        raise ValueError(f"method must be one of {GAUSSIAN_METHODS}, got {method!r}")
    return method


def _check_grid_exponent(k: int, sensitivity: float, scale_name: str, scale: float) -> None:
    """The exact samplers work on grids ``2**k`` with ``k`` in a fixed range: refuse (naming the
    user's ``sensitivity``, never the internal exponent) a noise scale outside it."""
    if not _MIN_GRID_EXPONENT <= k <= _MAX_GRID_EXPONENT:
        raise ValueError(
            f"sensitivity={sensitivity:.6g} gives a noise scale {scale_name}={scale:.3g} outside the range the "
            f"exact samplers support (about 2**{_MIN_GRID_EXPONENT + 40} to 2**{_MAX_GRID_EXPONENT}); rescale "
            "the released quantity"
        )


def laplace_plan(sensitivity: float, epsilon: float, dim: int = 1) -> LaplacePlan:
    """Calibrate the grid Laplace mechanism for L1 sensitivity ``sensitivity`` and budget ``epsilon``.

    Parameters
    ----------
    sensitivity : float
        Declared L1 sensitivity Δ₁ > 0 of the released vector under replace-one adjacency.
    epsilon : float
        Privacy budget ε > 0.
    dim : int, default 1
        Length of the released vector.

    Returns
    -------
    LaplacePlan
    """
    sensitivity = check_sensitivity(sensitivity)
    epsilon = check_epsilon(epsilon, grid=False)  # a plan is calibrated for what it is given (see laplace_mechanism)
    dim = _check_dim(dim)
    b = sensitivity / epsilon
    if not math.isfinite(b) or b == 0.0:
        raise ValueError(f"sensitivity/epsilon = {b!r} is not a usable noise scale")
    k = _floor_log2(b) - LAPLACE_GRID_BITS
    _check_grid_exponent(k, sensitivity, "sensitivity/epsilon", b)
    g = Fraction(2) ** k
    delta_int = math.floor(Fraction(sensitivity) / g) + dim
    # ε' = M / 2**s ≤ ε with 2**29 ≤ M < 2**30.
    s = _EPSILON_BITS - 1 - _floor_log2(epsilon)
    eps_used = Fraction(math.floor(Fraction(epsilon) * Fraction(2) ** s)) / Fraction(2) ** s
    assert 0 < eps_used <= Fraction(epsilon)
    tau = Fraction(delta_int) / eps_used
    if tau.numerator > _MAX_PARAM or tau.denominator > _MAX_PARAM:
        raise ValueError(
            f"dim={dim} with sensitivity={sensitivity} and epsilon={epsilon} needs a noise scale "
            "beyond the exact sampler's 120-bit range"
        )
    return LaplacePlan(
        sensitivity=sensitivity,
        epsilon=epsilon,
        dim=dim,
        grid_exponent=k,
        granularity=float(g),
        integer_sensitivity=delta_int,
        epsilon_used=float(eps_used),
        scale_num=tau.numerator,
        scale_den=tau.denominator,
        scale=float(tau * g),
        sensitivity_inflation=float_up(delta_int * g / Fraction(sensitivity)),
    )


def gaussian_plan(
    sensitivity: float, epsilon: float, delta: float, dim: int = 1, method: str = "analytic"
) -> GaussianPlan:
    """Calibrate the Gaussian mechanism for L2 sensitivity and ``(epsilon, delta)``.

    Parameters
    ----------
    sensitivity : float
        Declared L2 sensitivity Δ₂ > 0 of the released vector under replace-one adjacency.
    epsilon : float
        ε > 0.
    delta : float
        δ in (0, 1).
    dim : int, default 1
        Length of the released vector.
    method : {"analytic", "zcdp"}, default "analytic"
        ``"analytic"``: continuous Gaussian with the Balle–Wang analytic σ, sampled exactly and
        rounded to a grid ``σ·2**-40`` fine. ``"zcdp"``: discrete Gaussian on a snapped grid,
        calibrated through zCDP (CKS 2020). See the module docstring for both proofs.

    Returns
    -------
    GaussianPlan
    """

    sensitivity = check_sensitivity(sensitivity)
    epsilon = check_epsilon(epsilon, grid=False)
    delta = check_delta(delta, allow_zero=False, grid=False)
    dim = _check_dim(dim)
    method = _check_method(method)
    if method == "analytic":
        sigma = gaussian_sigma_analytic(sensitivity, epsilon, delta)
        delta_used = gaussian_delta(sigma, sensitivity, epsilon)
        while not delta_used <= delta:  # defensive: the bisection already keeps the safe end
            sigma = math.nextafter(sigma, math.inf)
            delta_used = gaussian_delta(sigma, sensitivity, epsilon)
        k = _floor_log2(sigma) - ANALYTIC_GRID_BITS
        _check_grid_exponent(k, sensitivity, "sigma", sigma)
        g = Fraction(2) ** k
        return GaussianPlan(
            sensitivity=sensitivity,
            epsilon=epsilon,
            delta=delta,
            dim=dim,
            rho=math.nan,
            rho_used=math.nan,
            grid_exponent=k,
            granularity=float(g),
            sensitivity_units=float_up(Fraction(sensitivity) / g),
            sigma2_units=0,
            sigma=sigma,
            sensitivity_inflation=1.0,
            method="analytic",
            delta_used=delta_used,
        )
    rho = float(zcdp_rho(epsilon, delta))
    if not (rho > 0.0 and math.isfinite(rho)):
        raise ValueError(f"(epsilon={epsilon}, delta={delta}) gives no usable zCDP level")
    sigma0 = sensitivity / math.sqrt(2.0 * rho)
    k = _floor_log2(sigma0) - GAUSSIAN_GRID_BITS
    _check_grid_exponent(k, sensitivity, "sigma", sigma0)
    g = Fraction(2) ** k
    sqrt_dim_up = Fraction(math.nextafter(math.sqrt(dim), math.inf))  # ≥ sqrt(dim)
    delta_units = Fraction(sensitivity) / g + sqrt_dim_up
    sigma2 = math.ceil(delta_units**2 / (2 * Fraction(rho)))
    rho_used = delta_units**2 / (2 * Fraction(sigma2))
    assert rho_used <= Fraction(rho)
    rho_used_up = float_up(rho_used)
    return GaussianPlan(
        sensitivity=sensitivity,
        epsilon=epsilon,
        delta=delta,
        dim=dim,
        rho=rho,
        rho_used=rho_used_up,
        grid_exponent=k,
        granularity=float(g),
        sensitivity_units=float_up(delta_units),
        sigma2_units=sigma2,
        sigma=math.sqrt(sigma2) * float(g),
        sensitivity_inflation=float_up(delta_units * g / Fraction(sensitivity)),
        method="zcdp",
        delta_used=zcdp_delta(rho_used_up, epsilon),
    )


def _as_values(value) -> tuple[np.ndarray, tuple, bool]:
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"value must be numeric, got dtype {arr.dtype}")
    shape, scalar = arr.shape, arr.ndim == 0
    flat = np.ascontiguousarray(arr, dtype=np.float64).reshape(-1)
    if flat.size == 0:
        raise ValueError("value must not be empty")
    if not np.isfinite(flat).all():
        raise ValueError("value contains NaN or infinite entries")
    return flat, shape, scalar


def grid_release(flat: np.ndarray, plan: Union[LaplacePlan, GaussianPlan], random_state: RandomState,
                 n_samples: Optional[int] = None) -> np.ndarray:
    """Release the float64 vector ``flat`` with a calibrated plan's exact sampler (no charge).

    The building block every mechanism in dpcore releases through (the estimators validate, calibrate and
    charge first): snapped value plus exact discrete noise on the plan's grid, or, for an analytic
    Gaussian plan, the exactly rounded continuous Gaussian. ``n_samples`` rows if given (audits).
    Only the arguments' types and finiteness are checked here; the privacy guarantee is the plan's, for
    the sensitivity the caller calibrated it with.
    """
    if not isinstance(plan, (LaplacePlan, GaussianPlan)):
        raise TypeError(f"plan must be a LaplacePlan or GaussianPlan (from laplace_plan / "
                        f"gaussian_plan), got {type(plan).__name__}")
    if n_samples is not None:
        n_samples = check_count(n_samples, "n_samples", bytes_per_unit=8 * max(1, np.size(flat)))
    flat, _, _ = _as_values(flat)
    rng = check_random_state(random_state)
    if isinstance(plan, GaussianPlan) and plan.method == "analytic":
        return _core.analytic_release(flat, plan.sigma, plan.grid_exponent, rng, n_samples)
    return _core.grid_release(flat, plan.grid_exponent, *plan.noise_args(), rng, n_samples)


def _release(value, plan_for, random_state, accountant, epsilon: float, delta: float, label: str):
    """Validate, calibrate, charge the accountant, then release (nothing is sampled before the charge)."""
    flat, shape, scalar = _as_values(value)
    plan = plan_for(flat.size)
    rng = check_random_state(random_state)
    if accountant is not None:

        # charge what the plan is calibrated for: ε and δ on the budget grid (check_epsilon/check_delta)
        accountant.spend(plan.epsilon, getattr(plan, "delta", delta), event=plan.dp_event(), label=label)
    out = grid_release(flat, plan, rng)
    return float(out[0]) if scalar else out.reshape(shape)


def _sample_releases(value, plan_for, n_samples, random_state) -> np.ndarray:
    flat, _, scalar = _as_values(value)
    n_samples = _check_n_samples(n_samples, per_sample=flat.size)
    out = grid_release(flat, plan_for(flat.size), random_state, n_samples)
    return out[:, 0] if scalar else out


def private_proportion(y: ArrayLike, positive: Any, epsilon: float, *, random_state: RandomState = None,
                       accountant: Optional[BudgetAccountant] = None) -> float:
    """ε-DP fraction of the entries of ``y`` equal to ``positive`` (n = len(y) is public).

    Replace-one changes the count by at most 1, so the count is released with the exact grid Laplace
    mechanism of sensitivity 1 and divided by n; the result is clipped to [0, 1] (post-processing).
    Used to set the decision threshold of a private model on imbalanced data
    (:meth:`dpcore.KernelRelease.calibrate_prior`).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore.mechanisms.noise import private_proportion
    >>> y = np.array([1] * 70 + [-1] * 930)
    >>> round(private_proportion(y, 1, 1.0, random_state=0), 2)
    0.07
    """
    arr = np.asarray(y)
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise ValueError(f"y must be a non-empty 1-D array of labels, got shape {arr.shape}")
    count = float(np.count_nonzero(arr == positive))
    noisy = float(laplace_mechanism(count, 1.0, epsilon, random_state=random_state, accountant=accountant))
    return min(1.0, max(0.0, noisy / arr.shape[0]))


@overload
def laplace_mechanism(value: float, sensitivity: float, epsilon: float, *, random_state: RandomState = None,
                      accountant: Optional[BudgetAccountant] = None) -> float: ...
@overload
def laplace_mechanism(value: ArrayLike, sensitivity: float, epsilon: float, *, random_state: RandomState = None,
                      accountant: Optional[BudgetAccountant] = None) -> NDArray[np.float64]: ...
def laplace_mechanism(
    value: Union[float, ArrayLike],
    sensitivity: float,
    epsilon: float,
    *,
    random_state: RandomState = None,
    accountant: Optional[BudgetAccountant] = None,
) -> float | NDArray[np.float64]:
    """Release ``value`` with ε-DP Laplace noise, sampled exactly on a power-of-two grid.

    Parameters
    ----------
    value : float or array_like
        The exact query answer (scalar or array; the sensitivity refers to the flattened vector).
    sensitivity : float
        Declared L1 sensitivity Δ₁ of ``value`` under replace-one adjacency.
    epsilon : float
        Privacy budget ε > 0.
    random_state : None, int or ChaChaRng
        See :func:`check_random_state` (``None`` is the secure default).
    accountant : BudgetAccountant, optional
        Charged ``(epsilon, 0)`` before anything is sampled.

    Returns
    -------
    float or numpy.ndarray
        Same shape as ``value``; every entry is an exact multiple of the plan's granularity.

    Examples
    --------
    Release a proportion over n = 1000 records (sensitivity 1/n) with ε = 0.5:

    >>> from dpcore import BudgetAccountant, laplace_mechanism
    >>> acc = BudgetAccountant(epsilon=1.0)
    >>> noisy = laplace_mechanism(0.42, 1.0 / 1000, 0.5, accountant=acc, random_state=0)
    >>> bool(abs(noisy - 0.42) < 0.1), acc.remaining()
    (True, (0.5, 0.0))
    """
    epsilon = check_epsilon(epsilon)  # onto the budget grid: calibrated for and charged (budgets that add up fit)
    return _release(
        value,
        lambda dim: laplace_plan(sensitivity, epsilon, dim),
        random_state,
        accountant,
        epsilon,
        0.0,
        "laplace_mechanism",
    )


@overload
def gaussian_mechanism(value: float, sensitivity: float, epsilon: float, delta: float, *, method: str = "analytic",
                       random_state: RandomState = None, accountant: Optional[BudgetAccountant] = None) -> float: ...
@overload
def gaussian_mechanism(value: ArrayLike, sensitivity: float, epsilon: float, delta: float, *,
                       method: str = "analytic", random_state: RandomState = None,
                       accountant: Optional[BudgetAccountant] = None) -> NDArray[np.float64]: ...
def gaussian_mechanism(
    value: Union[float, ArrayLike],
    sensitivity: float,
    epsilon: float,
    delta: float,
    *,
    method: str = "analytic",
    random_state: RandomState = None,
    accountant: Optional[BudgetAccountant] = None,
) -> float | NDArray[np.float64]:
    """Release ``value`` with (ε, δ)-DP Gaussian noise on a power-of-two grid, sampled exactly.

    Parameters
    ----------
    value : float or array_like
        The exact query answer (scalar or array; the sensitivity refers to the flattened vector).
    sensitivity : float
        Declared L2 sensitivity Δ₂ of ``value`` under replace-one adjacency.
    epsilon : float
        ε > 0.
    delta : float
        δ in (0, 1).
    method : {"analytic", "zcdp"}, default "analytic"
        ``"analytic"``: ``round_g(value + σZ)`` with the Balle–Wang analytic σ, ``Z`` sampled exactly
        (Karney 2016) and the grid cell decided exactly. ``"zcdp"``: snapped value plus exact
        discrete Gaussian noise calibrated through zCDP (≈ 8% more σ). See :func:`gaussian_plan`.
    random_state : None, int or ChaChaRng
        See :func:`check_random_state` (``None`` is the secure default).
    accountant : BudgetAccountant, optional
        Charged ``(epsilon, delta)`` before anything is sampled.

    Returns
    -------
    float or numpy.ndarray
        Same shape as ``value``; every entry is an exact multiple of the plan's granularity.

    Examples
    --------
    Release a mean vector (L2 sensitivity 2/n for rows in the unit ball, n = 1000):

    >>> import numpy as np
    >>> from dpcore import gaussian_mechanism
    >>> mean = np.array([0.1, -0.2, 0.3])
    >>> noisy = gaussian_mechanism(mean, 2.0 / 1000, 1.0, 1e-6, random_state=0)
    >>> noisy.shape, bool(np.abs(noisy - mean).max() < 0.1)
    ((3,), True)
    """
    _check_method(method)
    epsilon, delta = check_epsilon(epsilon), check_delta(delta, allow_zero=False)  # the budget grid, as Laplace
    return _release(
        value,
        lambda dim: gaussian_plan(sensitivity, epsilon, delta, dim, method=method),
        random_state,
        accountant,
        epsilon,
        delta,
        "gaussian_mechanism",
    )


def _check_n_samples(n_samples, name: str = "n_samples", per_sample: int = 1) -> int:
    return check_count(n_samples, name, bytes_per_unit=8 * max(per_sample, 1))


def sample_laplace_mechanism(value: ArrayLike, sensitivity: float, epsilon: float, n_samples: int, *,
                             random_state: RandomState = None) -> np.ndarray:
    """``n_samples`` independent releases of :func:`laplace_mechanism` on ``value`` (for auditing).

    Every row has exactly the law of one ``laplace_mechanism(value, sensitivity, epsilon)`` call.
    Returns shape ``(n_samples,)`` for a scalar ``value`` and ``(n_samples, value.size)`` otherwise.
    No budget is charged: this is a tool for empirical privacy audits, not for releasing data.
    """
    return _sample_releases(value, lambda dim: laplace_plan(sensitivity, epsilon, dim), n_samples, random_state)


def sample_gaussian_mechanism(
    value: ArrayLike,
    sensitivity: float,
    epsilon: float,
    delta: float,
    n_samples: int,
    *,
    method: str = "analytic",
    random_state: RandomState = None,
) -> np.ndarray:
    """``n_samples`` independent releases of :func:`gaussian_mechanism` on ``value`` (for auditing).

    Every row has exactly the law of one ``gaussian_mechanism(value, sensitivity, epsilon, delta,
    method=method)`` call. Returns shape ``(n_samples,)`` for a scalar ``value`` and
    ``(n_samples, value.size)`` otherwise. No budget is charged.
    """
    _check_method(method)
    return _sample_releases(
        value, lambda dim: gaussian_plan(sensitivity, epsilon, delta, dim, method=method), n_samples, random_state
    )


def _check_rational(num, den, name: str) -> tuple[int, int]:
    for v in (num, den):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v <= 0 or v > _MAX_PARAM:
            raise ValueError(f"{name}_num and {name}_den must be integers in [1, 2**120], got {num!r}/{den!r}")
    return int(num), int(den)


def discrete_laplace(scale_num: int, scale_den: int = 1, size: int = 1, *, random_state: RandomState = None
                    ) -> np.ndarray:
    """Exact i.i.d. discrete Laplace integers, ``P[Y=y] ∝ exp(-|y| / (scale_num/scale_den))``.

    Examples
    --------
    >>> from dpcore.mechanisms import discrete_laplace
    >>> y = discrete_laplace(3, size=5, random_state=0)
    >>> y.shape, y.dtype
    ((5,), dtype('int64'))
    """
    num, den = _check_rational(scale_num, scale_den, "scale")
    return _core.discrete_samples("laplace", num, den, _check_n_samples(size, "size"), check_random_state(random_state))


def discrete_gaussian(sigma2_num: int, sigma2_den: int = 1, size: int = 1, *, random_state: RandomState = None
                     ) -> np.ndarray:
    """Exact i.i.d. discrete Gaussian integers, ``P[Y=y] ∝ exp(-y² / (2·sigma2_num/sigma2_den))``.

    Examples
    --------
    >>> from dpcore.mechanisms import discrete_gaussian
    >>> y = discrete_gaussian(4, size=1000, random_state=0)  # variance parameter 4
    >>> y.shape, bool(abs(y.var() - 4.0) < 1.0)
    ((1000,), True)
    """
    num, den = _check_rational(sigma2_num, sigma2_den, "sigma2")
    t = math.isqrt(num // den) + 1
    if 2 * num * den * t * t >= 2**128:  # the exact sampler's integer range (src/mechanisms/noise/grid.rs)
        raise ValueError(f"sigma2_num/sigma2_den = {num}/{den}: variance too large for exact sampling "
                         "(2·num·den·t² must stay below 2^128)")
    return _core.discrete_samples("gaussian", num, den, _check_n_samples(size, "size"), check_random_state(random_state))


def gamma_norm_vector(dim: int, scale: float, *, random_state: RandomState = None) -> np.ndarray:
    """A vector with density ∝ ``exp(-||b||/scale)`` on R^dim: ``Gamma(dim, scale)`` norm, uniform direction.

    Floating-point sample (not released as is): a mechanism that releases a perturbed real vector
    built from it must snap the result and document its own floating-point analysis.
    """
    dim = _check_dim(dim)
    scale = check_sensitivity(scale, "scale")
    return _core.gamma_norm_vector(dim, _check_noise_scale(scale, "scale"), check_random_state(random_state))


def gamma_norm_vector_coupled(dim: int, scale: float, *, random_state: RandomState = None) -> tuple[np.ndarray, float]:
    """A float Gamma-norm vector ``b`` and a proven bound ``err`` on its distance to an exact one.

    On the same probability space there is an exact random vector ``b_exact`` with density
    ∝ ``exp(-||b||/scale)`` on R^dim (norm ``Gamma(dim, scale)``, uniform direction) such that
    ``||b - b_exact||₂ ≤ err`` *always*. ``b_exact = scale·(Σ E_i)·g/||g||`` with exact
    exponentials ``E_i = -ln U_i`` (full-precision uniforms) and Karney's exact normals ``g``; the
    bound propagates the component errors through the float formula (see ``src/mechanisms/noise/coupled.rs``;
    it assumes ``f64::ln`` is accurate to 2 ulps, ``LIBM_LN_ULPS``).

    Use it for noise that enters a computation before anything is released; the mechanism must
    account for ``err`` (dpcore's GLM mechanisms add it to the residual covered by an exact release).

    Parameters
    ----------
    dim : int
        Dimension ``d ≥ 1``.
    scale : float
        Scale ``> 0`` (``E||b_exact|| = dim·scale``).
    random_state : None, int or ChaChaRng
        See :func:`check_random_state`.

    Returns
    -------
    b : numpy.ndarray of shape (dim,)
    err : float
    """
    dim = _check_dim(dim)
    scale = check_sensitivity(scale, "scale")
    b, err = _core.gamma_norm_vector_coupled(dim, _check_noise_scale(scale, "scale"), check_random_state(random_state))
    return b, float(err)


def normal_vector_coupled(dim: int, sigma: float, *, random_state: RandomState = None) -> tuple[np.ndarray, float]:
    """A float ``N(0, sigma² I)`` vector ``b`` and a proven bound ``err`` on its distance to an exact one.

    ``b = fl(sigma·ĝ)`` with ``ĝ`` the float rounding of Karney's exact normals ``g``; the exact
    vector ``b_exact = sigma·g`` satisfies ``||b - b_exact||₂ ≤ err`` always. See
    :func:`gamma_norm_vector_coupled` for how mechanisms use the bound.

    Parameters
    ----------
    dim : int
        Dimension ``d ≥ 1``.
    sigma : float
        Standard deviation ``> 0``.
    random_state : None, int or ChaChaRng
        See :func:`check_random_state`.

    Returns
    -------
    b : numpy.ndarray of shape (dim,)
    err : float
    """
    dim = _check_dim(dim)
    sigma = check_sensitivity(sigma, "sigma")
    b, err = _core.normal_vector_coupled(dim, _check_noise_scale(sigma, "sigma"), check_random_state(random_state))
    return b, float(err)


def gumbel(size: int, *, random_state: RandomState = None) -> np.ndarray:
    """Standard Gumbel variates (for Gumbel-max selection; never released as values)."""
    return _core.gumbel(_check_n_samples(size, "size"), check_random_state(random_state))


def exponential(size: int, *, random_state: RandomState = None) -> np.ndarray:
    """Standard exponential variates (never released as values)."""
    return _core.exponential(_check_n_samples(size, "size"), check_random_state(random_state))

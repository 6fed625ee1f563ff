r"""Private ``StandardScaler`` and ``MinMaxScaler`` with declared (or privately estimated) per-feature bounds.

StandardScaler: proof sketch
----------------------------
Per feature ``k`` the records are clipped to the clip range ``[a_k, b_k]`` (declared ``bounds``, or
privately estimated quantiles inside it), with centre ``c_k = (a_k + b_k)/2`` and half-width
``h_k = (b_k − a_k)/2``. The released statistics are the normalised first and second moments

    m1_k = (1/n) Σ_i (x_ik − c_k) / (2 h_k)   ∈ [−1/2, 1/2],
    m2_k = (1/n) Σ_i (x_ik − c_k)² / h_k²     ∈ [0, 1],

a vector of length ``2d``. With ``u = (x − c)/h ∈ [−1, 1]`` one record contributes
``(u/2, u²)/n`` to the pair ``(m1_k, m2_k)``; replacing it by ``u'`` (``n`` public, replace-one)
changes the pair by ``(|u' − u|/2, |u'² − u²|)/n = |u' − u|·(1/2, |u' + u|)/n``, whose

* L1 norm is at most ``25/16 · 1/n`` (maximal at ``u' = 1, u = −1/4``: ``(5/4)·(5/4)``), and
* squared L2 norm at most ``(71 + 8√2)/64 · 1/n² ≈ 1.28618/n²`` (maximal at ``u' = 1``,
  ``u = (√2 − 2)/4``).

One record changes every feature, so the vector has L1 sensitivity ``Δ₁ = 25d/(16n)`` and L2
sensitivity ``Δ₂ = sqrt(1.2863·d)/n``. *Floating point*: ``u`` is clipped to ``[−1, 1]`` after it
is computed, ``u/2`` is exact and ``u²`` is within a relative ``u_r = 2^-53`` (unit roundoff), and
each column sum is correctly rounded (``math.fsum``) and divided by ``n`` once, so every computed
coordinate is within ``2.01·u_r`` of the exact mean of the computed terms: the calibration adds
``9·d·u_r`` to ``Δ₁`` and ``6·sqrt(d)·u_r`` to ``Δ₂`` (each term ``u²`` moves by ``2u_r`` more, absorbed
in the rounded-up constant). The vector is released with :func:`dpcore.laplace_mechanism`'s plan
(``noise="laplace"``, pure ε) or :func:`dpcore.gaussian_mechanism`'s (``noise="gaussian"``, (ε, δ),
analytic calibration) — exact samplers on a power-of-two grid. Everything after the release is
post-processing: ``mean = c + 2h·m1``, ``var = h²·m2 − (mean − c)²``, and the scale
``sqrt(max(var, h²·τ))`` with the public floor ``τ`` = the noise standard deviation of ``m2``
(a variance below it is mostly noise; never below ``SCALE_FLOOR²``), so a constant column gets a
finite scale, never a division by 0. With ``estimate_bounds=True`` the clip range costs
``bounds_share·ε`` (pure, :mod:`.quantiles`) and the moments the rest: basic composition gives the
step's (ε, δ).

MinMaxScaler
------------
With declared ``bounds`` it is a public, data-independent affine map (clip to the bounds, map them
onto ``feature_range``): no privacy cost (``dp_event_`` is a no-op). With ``estimate_bounds=True``
the clip range is released by :class:`~dpcore.preprocessing.PrivateQuantiles` at ``quantiles`` inside
the declared ``bounds``, costing ``epsilon``.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

import numpy as np
from dp_accounting import dp_event as _dpe
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from dpcore._internal.cloning import PerCloneSeedMixin
from dpcore._internal.validation import check_delta, check_int, check_probability, check_scale
from dpcore.accounting.events import compose_events, epsilon_delta_event, plan_event
from dpcore.mechanisms.noise import (GaussianPlan, LaplacePlan, check_random_state, gaussian_plan, grid_release,
                                     laplace_plan)
from dpcore._internal.fp import UNIT_ROUNDOFF
from dpcore.preprocessing._common import (
    charge, check_accountant, check_bounds, check_data, check_epsilon_param, check_random_state_param,
)
from dpcore.preprocessing.quantiles import (
    MAX_BINS, _check_quantiles, check_quantile_budget, ordered_bounds, private_quantiles,
)
from dpcore._internal.types import RandomState

__all__ = ["StandardScaler", "MinMaxScaler", "SCALE_FLOOR", "moments_plan", "release_moments"]

#: Public floor of the released scale, relative to the half-width of the clip range.
SCALE_FLOOR = 2.0**-10
#: The variance is floored at this multiple of the noise standard deviation of the released variance.
VAR_FLOOR_NOISE = 1.0
_NOISES = ("laplace", "gaussian")


def moments_plan(noise: str, n: int, d: int, epsilon: float, delta: float) -> Union[LaplacePlan, GaussianPlan]:
    """The Laplace/Gaussian plan of the ``2d`` normalised moments (module docstring: sensitivities)."""
    u = UNIT_ROUNDOFF
    if noise == "laplace":
        return laplace_plan(25.0 * d / (16.0 * n) + 9.0 * d * u, epsilon, 2 * d)
    return gaussian_plan(math.sqrt(1.2863 * d) / n + 6.0 * math.sqrt(d) * u, epsilon, delta, 2 * d)


def moment_terms(X: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """The exact-as-computed normalised moments ``(m1, m2)`` of ``X`` clipped to ``[lower, upper]`` (length 2d)."""
    c, h = 0.5 * (lower + upper), 0.5 * (upper - lower)
    v = np.clip((np.clip(X, lower, upper) - c) / h, -1.0, 1.0)
    n = X.shape[0]
    m1 = [math.fsum(col) / n for col in (0.5 * v).T]
    m2 = [math.fsum(col) / n for col in (v * v).T]
    return np.asarray(m1 + m2, dtype=np.float64)


def release_moments(X: np.ndarray, lower: np.ndarray, upper: np.ndarray, plan: Union[LaplacePlan, GaussianPlan],
                    rng: RandomState, n_samples: Optional[int] = None) -> np.ndarray:
    """The noisy normalised moments (``n_samples`` independent rows if given: audits). No charge here."""
    return grid_release(moment_terms(X, lower, upper), plan, rng, n_samples)


def _check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


class StandardScaler(PerCloneSeedMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    r"""Differentially private standardisation: ``(clip(x) − mean_) / scale_`` with noisy mean and variance.

    A drop-in replacement for :class:`sklearn.preprocessing.StandardScaler` in a private pipeline
    (scikit-learn's leaks the mean and the scale of the training data). The per-feature range is
    public: declared in ``bounds`` and used as the clip range, or (``estimate_bounds=True``) the
    public search range inside which the clip range is estimated privately. The moments are
    released with exact Laplace or Gaussian noise (module docstring: sensitivities and proof;
    docs/privacy.md). The clip range is also applied by ``transform``.

    Parameters
    ----------
    epsilon : float, default=1.0
        ε > 0 of the whole step (bounds estimation included).
    delta : float, optional
        δ in (0, 1) for ``noise="gaussian"``; must be ``None`` or 0 for ``noise="laplace"``.
    bounds : (lower, upper)
        Declared public per-feature range (scalars or one entry per feature). Required.
    estimate_bounds : bool, default=True
        Estimate the clip range privately as the ``quantiles`` of each feature inside ``bounds``
        (costs ``bounds_share·epsilon``; recommended whenever the declared range is much wider than
        the data, e.g. a top-coded income column). ``False``: ``bounds`` is the clip range.
    quantiles : (float, float), default=(0.05, 0.95)
        Quantile levels of the estimated clip range (levels nearer 0 and 1 need more ε·n: the
        exponential mechanism tells a 1 % quantile from an empty tail of the range only when
        ``ε_q·n/100`` is large).
    bounds_margin : float, default=0.5
        The estimated range ``[q_lo, q_hi]`` is widened on each side by ``bounds_margin·(q_hi − q_lo)``
        (then cut to ``bounds``): post-processing, so that the 5–95 % range of a normal column becomes
        about ±3.3 standard deviations.
    bounds_share : float, default=0.3
        Share of ``epsilon`` for the bounds when ``estimate_bounds=True``, in (0, 1).
    noise : {"laplace", "gaussian"}, default="laplace"
        Laplace: pure ε-DP, L1 sensitivity ``25d/(16n)``. Gaussian: (ε, δ)-DP, L2 sensitivity
        ``sqrt(1.2863·d)/n`` (better for many features).
    n_bins : int, default=1024
        Grid of the quantile mechanism (``estimate_bounds=True``).
    accountant : BudgetAccountant, optional
        Charged the step's (ε, δ) before the data are read; ``None``: the default accountant, if any.
    random_state : None, int or ChaChaRng
        ``None`` (secure, default), an ``int`` (reproducible: research and tests only) or a generator.
        With an int, clone k of this estimator (made by ``OneVsRestClassifier``, ``cross_val_score``, ...) gets
        the seed derived from the int and k: distinct, reproducible noise streams; ``None`` stays ``None``, a
        ``ChaChaRng`` cannot be cloned (docs/sklearn.md). Use ``None`` for private use.

    Attributes
    ----------
    mean_, var_, scale_ : ndarray of shape (n_features,)
        Released mean, variance (clipped at 0) and scale (``sqrt(var_)`` floored at
        ``SCALE_FLOOR·(upper_ − lower_)/2``).
    lower_, upper_ : ndarray of shape (n_features,)
        The clip range (declared, or privately estimated).
    dp_event_ : dp_accounting.DpEvent
        The step's mechanism (the moments' Laplace/Gaussian event, composed with the bounds' event).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import BudgetAccountant
    >>> from dpcore.preprocessing import StandardScaler
    >>> X = np.random.default_rng(0).normal(3.0, 5.0, size=(20000, 4))
    >>> acc = BudgetAccountant(epsilon=1.0)
    >>> sc = StandardScaler(epsilon=0.5, bounds=(-100, 100), accountant=acc, random_state=0).fit(X)
    >>> np.round(sc.mean_, 0), np.round(sc.scale_, 0)    # true mean 3, standard deviation 5
    (array([3., 3., 3., 3.]), array([5., 5., 5., 5.]))
    >>> bool(np.all(sc.lower_ > -100))                   # privately estimated clip range
    True
    >>> acc.remaining()
    (0.5, 0.0)
    """

    _parameter_constraints: dict = {k: ["no_validation"] for k in (
        "epsilon", "delta", "bounds", "estimate_bounds", "quantiles", "bounds_margin", "bounds_share", "noise", "n_bins",
        "accountant", "random_state")}

    def __init__(self, *, epsilon: float = 1.0, delta: Optional[float] = None, bounds: Any = None,
                 estimate_bounds: bool = True, quantiles: Sequence[float] = (0.05, 0.95),
                 bounds_margin: float = 0.5, bounds_share: float = 0.3, noise: str = "laplace", n_bins: int = 1024,
                 accountant: Any = None, random_state: Any = None) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.estimate_bounds = estimate_bounds
        self.quantiles = quantiles
        self.bounds_margin = bounds_margin
        self.bounds_share = bounds_share
        self.noise = noise
        self.n_bins = n_bins
        self.accountant = accountant
        self.random_state = random_state

    # -- parameters ------------------------------------------------------------------------------
    def _check_params(self, d: Optional[int]) -> dict:
        epsilon = check_epsilon_param(self.epsilon)
        if not isinstance(self.noise, str) or self.noise not in _NOISES:
            raise ValueError(f"noise must be one of {_NOISES}, got {self.noise!r}")
        if self.noise == "gaussian":
            if self.delta is None:
                raise ValueError("delta must be given (in (0, 1)) for noise='gaussian'")
            delta = check_delta(self.delta, allow_zero=False)
        else:
            delta = 0.0 if self.delta is None else check_delta(self.delta)
            if delta != 0.0:
                raise ValueError(f"delta={self.delta!r} is not used by noise='laplace' (pure ε-DP): pass "
                                 "delta=None, or noise='gaussian'")
        estimate = _check_bool(self.estimate_bounds, "estimate_bounds")
        levels = _check_quantiles(self.quantiles)
        if levels.shape[0] != 2:
            raise ValueError(f"quantiles must be a pair (low, high) of levels, got {self.quantiles!r}")
        share = check_probability(self.bounds_share, "bounds_share")
        margin = float(check_scale(self.bounds_margin, "bounds_margin"))
        n_bins = check_int(self.n_bins, "n_bins", minimum=1, maximum=MAX_BINS)
        lower, upper = check_bounds(self.bounds, d)
        check_accountant(self.accountant)
        check_random_state_param(self.random_state)
        eps_bounds = epsilon * share if estimate else 0.0
        eps_stats = epsilon - eps_bounds
        if estimate and d is not None:
            check_quantile_budget(eps_bounds, 2, d, n_bins, name="bounds_share*epsilon")
        return dict(epsilon=epsilon, delta=delta, estimate=estimate, levels=levels, n_bins=n_bins, lower=lower,
                    upper=upper, eps_bounds=eps_bounds, eps_stats=eps_stats, margin=margin)

    def _plan(self, p: dict, n: int, d: int):
        return moments_plan(self.noise, n, d, p["eps_stats"], p["delta"])

    # -- fit / transform ---------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None) -> "StandardScaler":
        """Release the clip range (if estimated) and the noisy moments of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite numbers (NaN/inf are refused, naming ``X``).
        y : ignored

        Returns
        -------
        self
        """
        self._check_params(None)
        X = check_data(self, X, reset=True)
        n, d = X.shape
        p = self._check_params(d)
        plan = self._plan(p, n, d)
        events = [plan_event(plan)]
        if p["estimate"]:
            events.insert(0, epsilon_delta_event(p["eps_bounds"], 0.0))
        event = compose_events(*events)
        rng = check_random_state(self.random_state)
        # the accountant is charged the step's (ε, δ) claim (basic composition of its parts); dp_event_ keeps
        # the exact mechanism (a Gaussian event composes better under PLD/RDP accounting downstream)
        charge(self.accountant, p["epsilon"], p["delta"], epsilon_delta_event(p["epsilon"], p["delta"]),
               f"StandardScaler({self.noise}, d={d})")
        self.dp_event_ = event
        lower, upper = p["lower"], p["upper"]
        if p["estimate"]:
            q = private_quantiles(X, p["levels"], lower, upper, p["eps_bounds"], p["n_bins"], rng)
            lo_q, hi_q = ordered_bounds(q, lower, upper, p["n_bins"])
            width = hi_q - lo_q
            lower, upper = np.maximum(lo_q - p["margin"] * width, lower), np.minimum(hi_q + p["margin"] * width, upper)
        c, h = 0.5 * (lower + upper), 0.5 * (upper - lower)
        noisy = release_moments(X, lower, upper, plan, rng)
        m1n, m2n = np.clip(noisy[:d], -0.5, 0.5), np.clip(noisy[d:], 0.0, 1.0)
        self.lower_, self.upper_ = lower, upper
        self.mean_ = c + 2.0 * h * m1n
        self.var_ = np.maximum(h * h * m2n - (self.mean_ - c) ** 2, 0.0)
        # public floor: the noise standard deviation of the released variance (a variance below it is
        # mostly noise), and never below SCALE_FLOOR·h
        noise_sd = float(plan.scale * math.sqrt(2.0) if self.noise == "laplace" else plan.sigma)
        self.scale_ = np.sqrt(np.maximum(self.var_, h * h * max(VAR_FLOOR_NOISE * noise_sd, SCALE_FLOOR**2)))
        self.noise_scale_ = noise_sd
        return self

    def transform(self, X: Any) -> np.ndarray:
        """``(clip(X, lower_, upper_) − mean_) / scale_`` (row by row; no privacy cost).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self, "mean_")
        X = check_data(self, X, reset=False)
        return (np.clip(X, self.lower_, self.upper_) - self.mean_) / self.scale_

    def inverse_transform(self, X: Any) -> np.ndarray:
        """``X · scale_ + mean_`` (post-processing).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self, "mean_")
        X = check_data(self, X, reset=False)
        return X * self.scale_ + self.mean_

    def _spends_budget(self) -> bool:
        return True

    def _needs_delta(self) -> bool:
        return self.noise == "gaussian"


class MinMaxScaler(PerCloneSeedMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    r"""Map each feature's declared (or privately estimated) range onto ``feature_range``, clipping.

    With declared ``bounds`` this is public pre-processing: ``x ↦ lo_f + (clip(x) − a)(hi_f − lo_f)/(b − a)``
    depends on each row alone, costs nothing and ``dp_event_`` is a ``NoOpDpEvent``. With
    ``estimate_bounds=True`` the range ``[a, b]`` is the private ``quantiles`` of each feature inside the
    declared ``bounds`` (:class:`PrivateQuantiles`, ε-DP, charged to ``accountant``).

    Parameters
    ----------
    bounds : (lower, upper)
        Declared public per-feature range (scalars or one entry per feature). Required.
    feature_range : (float, float), default=(0.0, 1.0)
        Target range.
    estimate_bounds : bool, default=False
        Estimate the range privately inside ``bounds`` (needs ``epsilon``).
    quantiles : (float, float), default=(0.01, 0.99)
        Levels of the estimated range.
    epsilon : float, optional
        ε > 0 for ``estimate_bounds=True``; ignored (no cost) otherwise.
    n_bins : int, default=1024
        Grid of the quantile mechanism.
    accountant : BudgetAccountant, optional
        Charged ``(epsilon, 0)`` when the bounds are estimated; ``None``: the default accountant, if any.
    random_state : None, int or ChaChaRng
        ``None`` (secure, default), an ``int`` (reproducible: research and tests only) or a generator.
        With an int, clone k of this estimator (made by ``OneVsRestClassifier``, ``cross_val_score``, ...) gets
        the seed derived from the int and k: distinct, reproducible noise streams; ``None`` stays ``None``, a
        ``ChaChaRng`` cannot be cloned (docs/sklearn.md). Use ``None`` for private use.

    Attributes
    ----------
    lower_, upper_ : ndarray of shape (n_features,)
        The range mapped onto ``feature_range``.
    dp_event_ : dp_accounting.DpEvent
        ``NoOpDpEvent`` (declared bounds) or ``EpsilonDeltaDpEvent(epsilon, 0)``.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore.preprocessing import MinMaxScaler
    >>> X = np.array([[17.0, 0.0], [90.0, 99999.0], [120.0, 5.0]])
    >>> MinMaxScaler(bounds=([17, 0], [90, 99999])).fit_transform(X).round(3)
    array([[0., 0.],
           [1., 1.],
           [1., 0.]])
    """

    _parameter_constraints: dict = {k: ["no_validation"] for k in (
        "bounds", "feature_range", "estimate_bounds", "quantiles", "epsilon", "n_bins", "accountant",
        "random_state")}

    def __init__(self, *, bounds: Any = None, feature_range: Sequence[float] = (0.0, 1.0),
                 estimate_bounds: bool = False, quantiles: Sequence[float] = (0.01, 0.99),
                 epsilon: Optional[float] = None, n_bins: int = 1024, accountant: Any = None,
                 random_state: Any = None) -> None:
        self.bounds = bounds
        self.feature_range = feature_range
        self.estimate_bounds = estimate_bounds
        self.quantiles = quantiles
        self.epsilon = epsilon
        self.n_bins = n_bins
        self.accountant = accountant
        self.random_state = random_state

    def _check_params(self, d: Optional[int]) -> dict:
        lower, upper = check_bounds(self.bounds, d)
        fr = check_bounds(self.feature_range, None, name="feature_range")
        if fr[0].ndim != 0:
            raise ValueError(f"feature_range must be a pair of numbers, got {self.feature_range!r}")
        estimate = _check_bool(self.estimate_bounds, "estimate_bounds")
        levels = _check_quantiles(self.quantiles)
        if levels.shape[0] != 2:
            raise ValueError(f"quantiles must be a pair (low, high) of levels, got {self.quantiles!r}")
        n_bins = check_int(self.n_bins, "n_bins", minimum=1, maximum=MAX_BINS)
        epsilon = 0.0
        if estimate:
            if self.epsilon is None:
                raise ValueError("epsilon must be given (> 0) for estimate_bounds=True")
            epsilon = check_epsilon_param(self.epsilon)
            if d is not None:
                check_quantile_budget(epsilon, 2, d, n_bins)
        elif self.epsilon is not None:
            check_epsilon_param(self.epsilon)
        check_accountant(self.accountant)
        check_random_state_param(self.random_state)
        return dict(lower=lower, upper=upper, fr=(float(fr[0]), float(fr[1])), estimate=estimate, levels=levels,
                    n_bins=n_bins, epsilon=epsilon)

    def fit(self, X: Any, y: Any = None) -> "MinMaxScaler":
        """Fix the range: declared (free) or privately estimated (charges ``epsilon`` first).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite numbers (NaN/inf are refused, naming ``X``).
        y : ignored

        Returns
        -------
        self
        """
        self._check_params(None)
        X = check_data(self, X, reset=True)
        d = X.shape[1]
        p = self._check_params(d)
        lower, upper = p["lower"], p["upper"]
        if p["estimate"]:
            rng = check_random_state(self.random_state)
            event: _dpe.DpEvent = epsilon_delta_event(p["epsilon"], 0.0)
            charge(self.accountant, p["epsilon"], 0.0, event, f"MinMaxScaler(d={d})")
            q = private_quantiles(X, p["levels"], lower, upper, p["epsilon"], p["n_bins"], rng)
            lower, upper = ordered_bounds(q, lower, upper, p["n_bins"])
        else:
            event = _dpe.NoOpDpEvent()
        self.dp_event_ = event
        self.lower_, self.upper_ = lower, upper
        self._fr = p["fr"]
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Clip to ``[lower_, upper_]`` and map onto ``feature_range`` (row by row; no privacy cost).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self, "lower_")
        X = check_data(self, X, reset=False)
        lo_f, hi_f = self._fr
        t = (np.clip(X, self.lower_, self.upper_) - self.lower_) / (self.upper_ - self.lower_)
        return np.clip(lo_f + t * (hi_f - lo_f), lo_f, hi_f)

    def _spends_budget(self) -> bool:
        return bool(self.estimate_bounds)

    def _needs_delta(self) -> bool:
        return False

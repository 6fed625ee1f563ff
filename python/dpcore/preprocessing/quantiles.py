r"""Private per-feature quantiles and bounds: the exponential mechanism over a public grid.

Mechanism (Smith 2011, *Privacy-preserving statistical estimation with optimal convergence rates*,
STOC; the same idea as diffprivlib's ``tools.quantile``, McSherry & Talwar 2007 for the exponential
mechanism). For one feature with declared public range ``[lo, hi]`` and the public grid
``c_j = lo + j (hi − lo)/m`` (``j = 0..m``), the candidates are the ``m`` cells ``[c_k, c_{k+1}]``.
With the records clipped to ``[lo, hi]``, cell ``k`` covers the ranks ``[A_k, B_k]``,
``A_k = #{i : x_i < c_k}``, ``B_k = #{i : x_i ≤ c_{k+1}}``. For the quantile ``q`` (target rank
``t = q n``; ``n`` is public under replace-one adjacency) the score of cell ``k`` is the distance
of ``t`` to its rank range, scaled and capped:

    s_k = min(ε_em/2 · dist(t, [A_k, B_k]), L),      L = 40 ln 2,

and cell ``k`` is chosen with probability ``exp(−s_k) / Σ_l exp(−s_l)``. The released value is a
cell edge, rounded outward: ``c_k`` for a level ``q < 1/2``, ``c_{k+1}`` otherwise (so a point
mass at an end of the range, e.g. a column that is mostly 0, stays inside the clip range).
The rank ranges overlap and cover ``[0, n]`` (``A_0 = 0``, ``B_{m−1} = n``, ``A_{k+1} ≤ B_k``), so
some cell has score 0: the largest weight is exactly 1.

*Privacy (ε_em-DP).* Replacing one record changes every count ``A_k``, ``B_k`` by at most 1, so the
distance of ``t`` to ``[A_k, B_k]`` by at most 1 and ``ε_em/2·dist`` by at most ``ε_em/2``;
``min(·, L)`` with a constant is 1-Lipschitz, so every ``s_k`` moves by at most ``ε_em/2``. Each
weight ``exp(−s_k)`` and the normaliser therefore change
by a factor at most ``e^{ε_em/2}``, and every probability by at most ``e^{ε_em}`` (McSherry–Talwar).
The cap ``L`` keeps every weight within ``[2^-40, 1]``, which is what makes the
floating-point analysis below relative (it changes nothing else: a candidate whose rank is that far
from ``t`` had probability below ``2^-40`` anyway).

*Exact sampling, floating point.* The weights ``w_k = exp(−s_k) ∈ [2^-40, 1]`` are computed in float64
and normalised; the index is drawn by the exact multinomial sampler
(:func:`dpcore.mechanisms.multinomial_draws`: probability exactly ``floor(p_k 2^100)/T``). The
released number is a public grid point: no noise is ever added to a float. The only
inexactness is in the computed probabilities: with unit roundoff ``u`` and numpy's ``exp`` within
``NUMPY_EXP_ULPS`` ulp (:mod:`dpcore._internal.fp`), every computed probability is within a relative
``η = (6L + NUMPY_EXP_ULPS + m + 4)·u + (m + 1)·2^-60`` of the exact one (argument error ``≤ 6uL``,
``exp``, the sum of ``m + 1`` terms in ``[2^-40, 1]``, the division, the 100-bit quantisation of a
probability ``≥ 2^-40/(m+1)``). Hence each released index has probability ratio at most
``e^{ε_em}((1+η)/(1−η))^2 ≤ e^{ε_em + 5η}`` between neighbours, and the mechanism runs at
``ε_em = ε_q − 5η`` so that the claimed ``ε_q`` holds. The ``d·k`` quantiles of a fit (``d``
features, ``k`` quantile levels) each get ``ε_q = ε/(d k)`` (basic composition: ε-DP in total).
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from dpcore._internal.cloning import PerCloneSeedMixin
from dpcore._internal.fp import NUMPY_EXP_ULPS, UNIT_ROUNDOFF
from dpcore._internal.validation import check_int
from dpcore.accounting.events import epsilon_delta_event
from dpcore.mechanisms.multinomial import multinomial_draws
from dpcore.mechanisms.noise import check_random_state
from dpcore.preprocessing._common import (
    charge, check_accountant, check_bounds, check_data, check_epsilon_param, check_random_state_param,
)

__all__ = ["PrivateQuantiles", "quantile_em_slack", "SCORE_CAP"]

#: Cap ``L`` on the exponential-mechanism score (weights stay within ``[2^-40, 1]``).
SCORE_CAP = 40.0 * math.log(2.0)
#: Largest grid size accepted (``n_bins``).
MAX_BINS = 1 << 20


def quantile_em_slack(n_bins: int) -> float:
    """``5η``: the ε the float computation of one grid exponential mechanism may cost (module docstring)."""
    u = UNIT_ROUNDOFF
    eta = (6.0 * SCORE_CAP + NUMPY_EXP_ULPS + n_bins + 4) * u + (n_bins + 1) * 2.0**-60
    return 5.0 * eta


def _check_quantiles(quantiles: Any) -> np.ndarray:
    try:
        q = np.asarray(quantiles, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"quantiles must be a sequence of numbers in [0, 1], got {quantiles!r}") from None
    if q.ndim != 1 or q.shape[0] == 0:
        raise ValueError(f"quantiles must be a non-empty 1-D sequence of levels in [0, 1], got {quantiles!r}")
    if not (np.isfinite(q).all() and np.all((q >= 0.0) & (q <= 1.0))):
        raise ValueError(f"quantiles must lie in [0, 1], got {quantiles!r}")
    if np.any(np.diff(q) <= 0):
        raise ValueError(f"quantiles must be strictly increasing, got {quantiles!r}")
    return q


def em_quantile_column(x: np.ndarray, lo: float, hi: float, levels: np.ndarray, eps_em: float, n_bins: int,
                       rng, n_samples: Optional[int] = None) -> np.ndarray:
    """One feature: the grid exponential mechanism for each level (module docstring). ``x`` finite.

    Returns the ``k`` released values, or ``(n_samples, k)`` independent releases (audits). No charge here.
    """
    grid = lo + (hi - lo) * (np.arange(n_bins + 1, dtype=np.float64) / n_bins)
    grid[0], grid[-1] = lo, hi
    xs = np.sort(np.clip(x, lo, hi))
    a = np.searchsorted(xs, grid[:-1], side="left").astype(np.float64)   # #{x < c_k}
    b = np.searchsorted(xs, grid[1:], side="right").astype(np.float64)   # #{x <= c_{k+1}}
    n = xs.shape[0]
    out = np.empty((1 if n_samples is None else n_samples, levels.shape[0]))
    for k, q in enumerate(levels):
        t = q * n
        dist = np.maximum(np.maximum(a - t, t - b), 0.0)
        scores = np.minimum(0.5 * eps_em * dist, SCORE_CAP)
        p = np.exp(-scores)
        p /= p.sum()
        j = multinomial_draws(p, 1 if n_samples is None else n_samples, shuffle=True, random_state=rng)
        out[:, k] = grid[j] if q < 0.5 else grid[j + 1]
    return out[0] if n_samples is None else out


def em_epsilon(eps_q: float, n_bins: int) -> float:
    """``ε_em = ε_q − 5η``: the exponent the mechanism runs at so that it is ``ε_q``-DP (module docstring)."""
    return eps_q - quantile_em_slack(n_bins)


def private_quantiles(X: np.ndarray, levels: np.ndarray, lower: np.ndarray, upper: np.ndarray, epsilon: float,
                      n_bins: int, rng) -> np.ndarray:
    """``(k, d)`` private quantiles of the columns of a validated ``X`` (no charge; callers charge first)."""
    d = X.shape[1]
    eps_q = epsilon / (d * levels.shape[0])
    eps_em = em_epsilon(eps_q, n_bins)
    if not eps_em > 0.0:  # pragma: no cover - guarded by _plan_epsilon
        raise ValueError("epsilon is too small for the quantile grid")
    return np.stack([em_quantile_column(X[:, j], float(lower[j]), float(upper[j]), levels, eps_em, n_bins, rng)
                     for j in range(d)], axis=1)


def check_quantile_budget(epsilon: float, n_levels: int, d: int, n_bins: int, name: str = "epsilon") -> None:
    """Refuse (before any charge) a budget too small to cover the float slack of each quantile."""
    eps_q = epsilon / (d * n_levels)
    if not eps_q > 2.0 * quantile_em_slack(n_bins):
        raise ValueError(f"{name}={epsilon!r} split over {d * n_levels} quantiles leaves {eps_q:.3g} each, below "
                         f"the floating-point slack {quantile_em_slack(n_bins):.3g} of the grid mechanism")


def ordered_bounds(q: np.ndarray, lower: np.ndarray, upper: np.ndarray, n_bins: int) -> Tuple[np.ndarray, np.ndarray]:
    """Post-processing: the first/last estimated quantile as a clip range with ``lo' < hi'`` inside [lo, hi]."""
    lo_hat, hi_hat = q[0].copy(), q[-1].copy()
    step = (upper - lower) / n_bins
    bad = ~(lo_hat < hi_hat)
    hi_hat = np.where(bad, np.minimum(lo_hat + step, upper), hi_hat)
    lo_hat = np.where(bad & ~(lo_hat < hi_hat), hi_hat - step, lo_hat)
    return lo_hat, hi_hat


class PrivateQuantiles(PerCloneSeedMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    r"""ε-DP per-feature quantiles over a declared public range; ``transform`` clips to the outer ones.

    The private bounds estimator of :mod:`dpcore.preprocessing`: each feature's quantiles at
    ``quantiles`` are released by the exponential mechanism over a public grid of ``n_bins + 1``
    points of the declared range ``bounds`` (Smith 2011; module docstring: proof and floating-point
    analysis). ``epsilon`` is split equally over the ``d × len(quantiles)`` releases (basic
    composition), charged to ``accountant`` before anything is computed from the data.

    Parameters
    ----------
    quantiles : sequence of float, default=(0.01, 0.99)
        Strictly increasing levels in [0, 1].
    bounds : (lower, upper)
        Declared public range of every feature (scalars or one entry per feature). Records are
        clipped to it; it is never read off the data.
    epsilon : float, default=1.0
        ε > 0 of the whole fit (pure ε-DP).
    n_bins : int, default=1024
        Grid resolution: the quantiles are multiples of ``(upper − lower)/n_bins`` above ``lower``.
    accountant : BudgetAccountant, optional
        Charged ``(epsilon, 0)`` before the data are read; ``None``: the default accountant
        (:meth:`dpcore.BudgetAccountant.default`), if any.
    random_state : None, int or ChaChaRng
        ``None`` (secure, default), an ``int`` (reproducible: research and tests only) or a generator.
        With an int, clone k of this estimator (made by ``OneVsRestClassifier``, ``cross_val_score``, ...) gets
        the seed derived from the int and k: distinct, reproducible noise streams; ``None`` stays ``None``, a
        ``ChaChaRng`` cannot be cloned (docs/sklearn.md). Use ``None`` for private use.

    Attributes
    ----------
    quantiles_ : ndarray of shape (len(quantiles), n_features)
        The released quantiles.
    lower_, upper_ : ndarray of shape (n_features,)
        The clip range of ``transform``: first and last released quantile (made ``lower_ < upper_``
        by post-processing).
    dp_event_ : dp_accounting.DpEvent
        ``EpsilonDeltaDpEvent(epsilon, 0)``.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore.preprocessing import PrivateQuantiles
    >>> X = np.random.default_rng(0).normal(3.0, 5.0, size=(2000, 2))
    >>> pq = PrivateQuantiles((0.05, 0.5, 0.95), bounds=(-50, 50), epsilon=1.0, random_state=0).fit(X)
    >>> np.round(pq.quantiles_[1], 0)          # medians, true value 3
    array([3., 3.])
    >>> bool(np.all(pq.transform(X) <= pq.upper_))
    True
    """

    _parameter_constraints: dict = {
        "quantiles": ["array-like"], "bounds": ["no_validation"], "epsilon": ["no_validation"],
        "n_bins": ["no_validation"], "accountant": ["no_validation"], "random_state": ["no_validation"],
    }

    def __init__(self, quantiles: Sequence[float] = (0.01, 0.99), *, bounds: Any = None, epsilon: float = 1.0,
                 n_bins: int = 1024, accountant: Any = None, random_state: Any = None) -> None:
        self.quantiles = quantiles
        self.bounds = bounds
        self.epsilon = epsilon
        self.n_bins = n_bins
        self.accountant = accountant
        self.random_state = random_state

    def _check_params(self, d: Optional[int]) -> dict:
        levels = _check_quantiles(self.quantiles)
        epsilon = check_epsilon_param(self.epsilon)
        n_bins = check_int(self.n_bins, "n_bins", minimum=1, maximum=MAX_BINS)
        lower, upper = check_bounds(self.bounds, d)
        check_accountant(self.accountant)
        check_random_state_param(self.random_state)
        if d is not None:
            check_quantile_budget(epsilon, levels.shape[0], d, n_bins)
        return dict(levels=levels, epsilon=epsilon, n_bins=n_bins, lower=lower, upper=upper)

    def fit(self, X: Any, y: Any = None) -> "PrivateQuantiles":
        """Release the quantiles of every column of ``X`` (charges ``epsilon`` first).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite numbers (NaN/inf are refused: declare a value for missing entries upstream).
        y : ignored

        Returns
        -------
        self
        """
        self._check_params(None)
        X = check_data(self, X, reset=True)
        p = self._check_params(X.shape[1])
        rng = check_random_state(self.random_state)
        event = epsilon_delta_event(p["epsilon"], 0.0)
        charge(self.accountant, p["epsilon"], 0.0, event, f"PrivateQuantiles(d={X.shape[1]})")
        self.dp_event_ = event
        self.quantiles_ = private_quantiles(X, p["levels"], p["lower"], p["upper"], p["epsilon"], p["n_bins"], rng)
        self.lower_, self.upper_ = ordered_bounds(self.quantiles_, p["lower"], p["upper"], p["n_bins"])
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Clip every column to ``[lower_, upper_]`` (row by row; no privacy cost).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self, "quantiles_")
        X = check_data(self, X, reset=False)
        return np.clip(X, self.lower_, self.upper_)

    def _spends_budget(self) -> bool:
        return True

    def _needs_delta(self) -> bool:
        return False

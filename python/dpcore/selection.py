r"""Private hyper-parameter selection for the kernel learners (Papernot & Steinke 2022).

Choosing λ, the kernel or γ by an exact arg-max of a score computed on the private data is not
private; neither is reporting every candidate's score. :class:`PrivateGridSearch` selects with the
**repeat-and-select** algorithm of Papernot & Steinke ("Hyperparameter tuning with Rényi
differential privacy", ICLR 2022; Liu & Talwar 2019 for the geometric case):

1. A *base mechanism* ``Q`` draws one candidate uniformly from the grid, trains it privately and
   scores it privately, and outputs ``(candidate, released model, noisy score)``.
2. ``Q`` is run ``K`` times, ``K`` drawn (exactly, from dpcore's generator) from the truncated
   negative binomial law with ``shape`` η and mean ``mean_runs`` (η = 1: geometric,
   ``P[K = k] = γ(1 − γ)^(k−1)``, ``γ = 1/mean_runs``). Only the run with the best noisy score is
   output — never ``K``, the other candidates or their scores.

The base mechanism (one run)
----------------------------
The rows of the training data are split by a public permutation (from ``random_state``) into a
training part A and a validation part B. The candidate ``KernelSVM`` is fitted on A (not private)
and released with :class:`dpcore.TDDL` (``noise="gp"``) over the public points ``Z``, calibrated so
that its two Gaussian stages together are ``μ``-GDP; its accuracy on B (sensitivity ``1/|B|``
under replace-one) is released with exact Gaussian noise ``σ = 1/(|B| μ)`` (also ``μ``-GDP). A
neighbouring dataset differs in one row, which lies in A (the model moves, the score is
post-processing of the model with B fixed) or in B (only the score moves), so ``Q`` is ``μ``-GDP
for every candidate, i.e. ``(λ, λμ²/2)``-RDP for all orders λ (Mironov 2017; Dong, Roth & Su 2022).

Privacy of the selection
------------------------
Papernot & Steinke, Thm 2: the RDP of repeat-and-select with a TNB number of runs, computed by
Google's ``dp_accounting`` (``RepeatAndSelectDpEvent`` of a ``GaussianDpEvent`` with noise
multiplier ``1/μ``, :class:`dp_accounting.rdp.RdpAccountant`), converted to ``(ε, δ)``. dpcore picks
the largest ``μ`` whose selection is ``(ε, δ)``-DP (bisection on the accountant's answer, safe side).

Hyper-parameters chosen on the private data without this step are not private; the grid itself, ``Z``,
the split, ``mean_runs`` and ``shape`` are public. Wall-clock time grows with ``K`` (outside dpcore's
threat model, as for every solver).
"""

from __future__ import annotations

import itertools
import math
import numbers
from dataclasses import dataclass
from typing import Optional

import numpy as np

from . import _core
from ._params import ParamsMixin
from ._validation import check_array, check_delta, check_epsilon, check_positive
from .noise import check_random_state

__all__ = ["PrivateGridSearch", "SelectionPrivacy", "selection_epsilon", "selection_mu"]


def _accountant_epsilon(mu: float, mean_runs: float, shape: float, delta: float) -> float:
    from dp_accounting import dp_event
    from dp_accounting.rdp import RdpAccountant

    event = dp_event.RepeatAndSelectDpEvent(dp_event.GaussianDpEvent(1.0 / mu), float(mean_runs), float(shape))
    acc = RdpAccountant()
    acc.compose(event)
    return float(acc.get_epsilon(delta))


def selection_epsilon(mu: float, delta: float, *, mean_runs: float, shape: float = 1.0) -> float:
    """ε at ``delta`` of repeat-and-select over a ``mu``-GDP base mechanism (dp_accounting RDP)."""
    mu = check_positive(mu, "mu")
    delta = check_delta(delta, allow_zero=False)
    if not (isinstance(mean_runs, numbers.Real) and mean_runs >= 1):
        raise ValueError(f"mean_runs must be >= 1, got {mean_runs!r}")
    return _accountant_epsilon(mu, mean_runs, shape, delta)


def selection_mu(epsilon: float, delta: float, *, mean_runs: float, shape: float = 1.0) -> float:
    """Largest ``μ`` (to relative 1e-6, rounded down) with ``selection_epsilon(μ) ≤ epsilon``."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    lo, hi = 1e-6, 1.0
    while selection_epsilon(hi, delta, mean_runs=mean_runs, shape=shape) <= epsilon:
        lo, hi = hi, hi * 2.0
        if hi > 1e6:
            break
    if selection_epsilon(lo, delta, mean_runs=mean_runs, shape=shape) > epsilon:
        raise ValueError(f"epsilon={epsilon!r} is too small for repeat-and-select with mean_runs={mean_runs}")
    while hi - lo > 1e-6 * hi:
        mid = 0.5 * (lo + hi)
        if selection_epsilon(mid, delta, mean_runs=mean_runs, shape=shape) <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo


def _uniform_below(rng, m: int) -> int:
    """Exactly uniform integer in ``[0, m)`` from the 64-bit stream (rejection sampling)."""
    limit = (1 << 64) - ((1 << 64) % m)
    while True:
        x = int(rng.next_u64())
        if x < limit:
            return x % m


def _geometric_runs(rng, mean_runs: int) -> int:
    """``K ≥ 1`` with ``P[K = k] = γ(1 − γ)^(k−1)``, ``γ = 1/mean_runs``, exactly (Bernoulli trials)."""
    k = 1
    while _uniform_below(rng, mean_runs) != 0:
        k += 1
    return k


@dataclass(frozen=True)
class SelectionPrivacy:
    """The public record of a :class:`PrivateGridSearch` run."""

    epsilon: float
    delta: float
    mu: float
    mean_runs: int
    shape: float
    epsilon_accounted: float
    n_candidates: int
    n_train: int
    n_validation: int
    score_sigma: float
    candidate_epsilon: float
    candidate_delta: float


class PrivateGridSearch(ParamsMixin):
    """Private selection of a kernel learner's hyper-parameters and release of the selected model.

    See :mod:`dpcore.selection` for the algorithm and its proof.

    Parameters
    ----------
    param_grid : dict of lists
        Candidate :class:`dpcore.KernelSVM` parameters (e.g. ``{"lam": [...], "gamma": [...]}``);
        every combination is a candidate.
    epsilon, delta : float
        The guarantee of the whole selection (all runs and the released model).
    Z : array of shape (T, d)
        Public points of the TDDL-gp release (e.g. unlabelled public data).
    data_radius : float
        Declared bound on ``||x||`` (training rows and ``Z``).
    base_params : dict, optional
        Fixed ``KernelSVM`` parameters (default ``{"kernel": "rbf", "tol": 1e-8}``).
    validation_fraction : float, default 0.3
        Share of the rows (public permutation) used to score candidates.
    mean_runs : int, optional
        Mean number of runs ``E[K]`` (default: the number of candidates). Larger means try more
        candidates but cost more: at ε = 1, δ = 1e-6 a single release is 0.237-GDP, and the per-run μ
        is 0.148 / 0.123 / 0.111 for mean 2 / 5 / 10.
    random_state : None, int or ChaChaRng
    accountant : BudgetAccountant, optional
        Charged ``(ε, δ)`` once, before any training.

    Attributes
    ----------
    best_params_ : dict
    best_score_ : float
        The selected run's *noisy* validation accuracy (private).
    release_ : KernelRelease
        The selected candidate's private model.
    privacy_ : SelectionPrivacy
    """

    _PARAMS = ("param_grid", "epsilon", "delta", "Z", "data_radius", "base_params", "validation_fraction",
               "mean_runs", "random_state", "accountant")

    def __init__(self, param_grid, epsilon, delta, *, Z, data_radius, base_params=None, validation_fraction=0.3,
                 mean_runs=None, random_state=None, accountant=None):
        self.param_grid = param_grid
        self.epsilon = epsilon
        self.delta = delta
        self.Z = Z
        self.data_radius = data_radius
        self.base_params = base_params
        self.validation_fraction = validation_fraction
        self.mean_runs = mean_runs
        self.random_state = random_state
        self.accountant = accountant

    def _candidates(self) -> list:
        grid = self.param_grid
        if not isinstance(grid, dict) or not grid:
            raise ValueError("param_grid must be a non-empty dict of lists")
        keys = sorted(grid)
        for k in keys:
            if not isinstance(grid[k], (list, tuple)) or not grid[k]:
                raise ValueError(f"param_grid[{k!r}] must be a non-empty list")
        return [dict(zip(keys, vals)) for vals in itertools.product(*(grid[k] for k in keys))]

    def fit(self, X, y):
        """Select privately and release the selected model (charges ``(ε, δ)`` once)."""
        from .erm import KernelSVM
        from .tddl import TDDL

        cands = self._candidates()
        epsilon = check_epsilon(self.epsilon)
        delta = check_delta(self.delta, allow_zero=False)
        vf = check_positive(self.validation_fraction, "validation_fraction")
        if not vf < 1.0:
            raise ValueError(f"validation_fraction must lie in (0, 1), got {vf!r}")
        mean_runs = len(cands) if self.mean_runs is None else self.mean_runs
        if isinstance(mean_runs, bool) or not isinstance(mean_runs, numbers.Integral) or mean_runs < 1:
            raise ValueError(f"mean_runs must be a positive integer, got {mean_runs!r}")
        X = check_array(X, "X")
        n = X.shape[0]
        n_val = int(math.floor(vf * n))
        if n_val < 1 or n - n_val < 1:
            raise ValueError(f"validation_fraction={vf} leaves no training or validation rows for n={n}")
        y = np.asarray(y)
        if y.shape[0] != n:
            raise ValueError(f"y must have length {n}, got {y.shape[0]}")
        Z = check_array(self.Z, "Z", n_features=X.shape[1])
        radius = check_positive(self.data_radius, "data_radius")
        base = {"kernel": "rbf", "tol": 1e-8} if self.base_params is None else dict(self.base_params)
        rng = check_random_state(self.random_state)
        # every candidate's solver tolerance must be certifiable for the declared domain (public
        # floor KERNEL_SUM_REL_ERROR·R_φ²/λ, dpcore._kernel_model.public_error_bound): raised here,
        # before anything is charged, instead of refusing in the middle of the runs
        cands = [_certifiable(dict(base, **p), radius) for p in cands]
        # -- calibration (public): the base mechanism is μ-GDP
        selection_delta = delta
        mu = selection_mu(epsilon, selection_delta, mean_runs=mean_runs, shape=1.0) * (1.0 - 1e-6)
        eps_acc = selection_epsilon(mu, selection_delta, mean_runs=mean_runs, shape=1.0)
        # the candidate release: (ε_c, δ_c) of a μ_c-GDP curve with μ_c < μ; checked below on the
        # actual calibration (both TDDL stages together)
        cand_delta = 1e-10
        cand_eps = _gdp_epsilon(mu * 0.999, cand_delta)
        score_sigma = 1.0 / (n_val * mu)
        if self.accountant is not None:
            self.accountant.spend(epsilon, delta, label=f"PrivateGridSearch({len(cands)} candidates)")
        # -- public split
        perm = np.arange(n)
        for i in range(n - 1, 0, -1):  # Fisher–Yates with exact uniform draws
            j = _uniform_below(rng, i + 1)
            perm[i], perm[j] = perm[j], perm[i]
        val, tr = perm[:n_val], perm[n_val:]
        K = _geometric_runs(rng, mean_runs)
        best = None
        for _ in range(K):
            params = cands[_uniform_below(rng, len(cands))]
            model = KernelSVM(**params).fit(X[tr], y[tr])
            tddl = TDDL(model, cand_eps, cand_delta, radius, noise="gp", random_state=rng)
            cal = tddl.prepare(Z)["cal"]
            mu_c = math.hypot(cal.weight_sensitivity / cal.noise_scale, 2.0 * cal.gp_residual_bound / cal.gp_residual_sigma)
            if not mu_c <= mu:  # public numbers; cannot happen with the 0.999 margin
                raise RuntimeError(f"candidate release is {mu_c:.6g}-GDP > mu={mu:.6g}")
            tddl.fit(Z)
            acc = float(np.mean(tddl.predict(X[val]) == y[val]))
            noisy = float(_core.analytic_release(np.array([acc]), score_sigma,
                                                 math.floor(math.log2(score_sigma)) - 40, rng)[0])
            if best is None or noisy > best[0]:
                best = (noisy, {k: v for k, v in params.items() if k in self._grid_keys()}, tddl.release_)
        del K  # never part of the output
        self.best_score_, self.best_params_, self.release_ = best[0], dict(best[1]), best[2]
        self.privacy_ = SelectionPrivacy(
            epsilon=epsilon, delta=delta, mu=mu, mean_runs=int(mean_runs), shape=1.0, epsilon_accounted=eps_acc,
            n_candidates=len(cands), n_train=int(tr.size), n_validation=int(n_val), score_sigma=score_sigma,
            candidate_epsilon=cand_eps, candidate_delta=cand_delta)
        return self

    def _grid_keys(self):
        return set(self.param_grid)

    def predict(self, X):
        return self.release_.predict(X)

    def decision_function(self, X):
        return self.release_.decision_function(X)

    def score(self, X, y) -> float:
        return self.release_.score(X, y)


def _certifiable(params: dict, radius: float) -> dict:
    """``params`` with ``tol`` raised to ``4·KERNEL_SUM_REL_ERROR·R_φ²/λ`` where needed (public)."""
    from ._fp import KERNEL_SUM_REL_ERROR, RADIUS_TOL
    from .erm import KernelSVM

    probe = KernelSVM(**params)
    lam = check_positive(probe.lam, "lam")
    kernel = probe.kernel
    gamma = 1.0 if probe.gamma is None else probe.gamma  # rbf/poly default gamma is 1/d: use the given one
    r2 = _core.feature_map_radius_sq(radius * (1.0 + RADIUS_TOL), kernel, float(gamma), int(probe.degree),
                                     float(probe.coef0)) if kernel != "linear" else (radius * (1.0 + RADIUS_TOL)) ** 2
    floor = 4.0 * KERNEL_SUM_REL_ERROR * r2 / lam
    return dict(params, tol=max(float(probe.tol), floor))


def _gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest ε with ``δ_μ(ε) ≤ delta`` for ``μ``-GDP (the analytic Gaussian curve with Δ/σ = μ)."""
    from .calibrate import gaussian_delta

    lo, hi = 0.0, max(1.0, mu * mu)
    while gaussian_delta(1.0 / mu, 1.0, hi) > delta:
        hi *= 2.0
    while hi - lo > 1e-12 * hi:
        mid = 0.5 * (lo + hi)
        if mid > 0 and gaussian_delta(1.0 / mu, 1.0, mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi

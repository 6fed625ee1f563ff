r"""Private hyper-parameter selection for the kernel learners.

Choosing λ (C), the kernel or γ by an exact arg-max of a score computed on the private data is not
private; neither is reporting every candidate's score. :class:`PrivateGridSearch` trains and
releases candidates privately, scores each release privately and outputs only the best release,
its parameters and its noisy score.

The base mechanism (one candidate)
----------------------------------
The candidate :class:`dpcore.KernelSVM` is fitted on the whole training set ``D`` (not private) and
released with :class:`dpcore.TDDL` (``noise="gp"``) over the public points ``Z``, calibrated so that
its two Gaussian stages together are ``μ_r``-GDP. Its accuracy **on the training set itself**,
``a(D) = mean_i 1[r(x_i) = y_i]`` for the release ``r``, is released with exact grid Gaussian noise
``σ = 1/(n μ_s)``. Given the release, ``a`` has sensitivity ``1/n`` under replace-one (one term of the
mean changes), so by adaptive composition of Gaussian mechanisms (Dong, Roth & Su 2022, Cor. 3.3) the
pair (release, noisy score) is ``μ``-GDP with ``μ² = μ_r² + μ_s²`` (``μ_s² = score_share·μ²``). No
validation split is needed: the score is a private statistic of a private release (and, by the
generalisation property of DP, an unbiased-enough proxy of its test accuracy).

Candidates across families (issue 23)
-------------------------------------
A candidate is a kernel learner (:class:`dpcore.KernelSVM` or :class:`dpcore.KernelLogisticRegression`, released
with TDDL-gp as above) **or** the private linear model :class:`dpcore.OutputPerturbation` with Gaussian noise
(Output-Gauss, logistic loss and the regularised intercept by default) on the identity map or on public
:class:`dpcore.RandomFourierFeatures` (``feature_map``; their weights are drawn independently of the data, from
the map's own ``random_state``, reading only ``X``'s shape). Output-Gauss releases the float minimiser through one
exact Gaussian mechanism of L2 sensitivity ``Δ = 2LR/(Λn) + 2ρ`` (:mod:`dpcore.glm.perturbation`), i.e. it is
exactly ``Δ/σ``-GDP; it is calibrated at the same ``(ε_c, δ_c)`` point of the ``0.999·μ_r``-GDP curve as the
kernel releases, so ``Δ/σ ≤ μ_r`` (checked on its public calibration record) and a linear run (release, then its
noisy score) is ``μ``-GDP like every other run: the composition above is unchanged.
:class:`dpcore.ObjectivePerturbation` is refused as a candidate: its (ε, δ) guarantee is not a Gaussian-DP curve.
Class weights (``class_weight``) and the class-prior threshold are trained into the kernel candidates. The linear
candidate is trained unweighted (weights would multiply its Output-Gauss sensitivity by ``max_k w_k``); with class
weights ``w`` (declared, or released privately as below) its decision values are shifted by the **prior
correction** ``log(w₊/w₋)`` (King & Zeng 2001, Eq. 7: the intercept of a logistic model fitted with class
weights ``w`` is, to first order, the unweighted one plus ``log(w₊/w₋)``; the slope is unchanged), a function of
the public weights and the private release only, i.e. post-processing at no privacy cost. It moves the linear
candidate's threshold (accuracy, balanced accuracy, ``predict``), never its AUC. ``param_grid=None`` is data-independent: three
:class:`dpcore.KernelLogisticRegression` candidates at ``C = auto·{1/3, 1, 3}`` (the logistic loss's rule) plus
**one linear candidate** at the same rule, ``C = auto_C_for_mu(μ_r, R² + 1)`` (intercept
scaling 1), so that where a linear model is better the selection can pick it.

Multi-class candidates (issue 24)
---------------------------------
With ``K >= 3`` declared classes (``base_params={"classes": [...]}``) or any multi-class family in the grid
(:data:`MULTICLASS_ESTIMATORS`), every candidate is a :class:`dpcore.MulticlassKernelLogisticRegression` released
jointly with :class:`dpcore.MulticlassTDDL` (one GP, K paths; its two Gaussian stages together ``μ_r``-GDP, checked
on the public calibration record of a stand-in of the model before the charge) or a
:class:`dpcore.MulticlassOutputPerturbation` (one Gaussian release of the ``K × p`` weights, ``Δ/σ ≤ μ_r``), on the
identity or on public random Fourier features. The score is ``"accuracy"`` only: the count of correct labels
``#{i: r(x_i) = y_i}`` of the release ``r`` on the training rows has replace-one sensitivity **1 whatever K** (given
``r``, one ``{0, 1}`` term per record, each a function of its own record; replacing record ``k`` changes term ``k``
alone; tight), so the mean has ``1/n`` and the composition above is unchanged (:func:`multiclass_accuracy`).
``"roc_auc"`` and ``"balanced_accuracy"`` are refused (two-class pair sums; no K-class sensitivity proof here).
No class proportion is released (``prior_epsilon_share`` is not spent), ``class_weight="balanced"`` is refused, a
public dict applies to every candidate (``L = √2·max_k w_k`` for both families, and the default grid's rule uses it). ``param_grid=None``: three kernel candidates at ``C = auto·{1/3, 1,
3}`` of :func:`~dpcore.kernel_learning.multiclass_release.multiclass_auto_lam`'s rule (``L = √2·max_k w_k``) at each
run's ``μ_r``, plus one multinomial linear candidate at the same rule for the linear map (``R'² = R² + 0.25``).

Scores (``scoring``)
--------------------
Every run's score is computed on the training rows from the candidate's release ``r`` (given ``r``, a function of
``D`` alone) and released with exact grid Gaussian noise ``σ = Δ_s/μ_s``:

* ``"accuracy"`` (default): the mean accuracy, ``Δ_s = 1/n`` (one term of the mean changes).
* ``"roc_auc"``: ``S_auc = Σ_{i∈P} Σ_{j∈N} [1(f_i > f_j) + ½·1(f_i = f_j)] = n₊n₋·AUC`` on the decision
  values ``f = r(x)``; ``"balanced_accuracy"``: ``S_bal = Σ_{i∈P} Σ_{j∈N} ½[1(ŷ_i = +) + 1(ŷ_j = −)] =
  ½(n₋·TP + n₊·TN) = n₊n₋·BA`` (``BA = ½(TP/n₊ + TN/n₋)``). *Sensitivity* ``Δ_s = n − 1``: both are sums of
  one term in ``[0, 1]`` per (positive, negative) pair, each term a function of its two rows only. Replacing row
  ``k`` leaves every pair without ``k`` unchanged, removes ``k``'s pairs (at most ``n − 1`` terms, sum in
  ``[0, n − 1]``) and adds the new row's (again ``[0, n − 1]``), so ``|ΔS| ≤ n − 1``; it is attained (one top
  positive among ``n − 1`` negatives replaced by a negative). Every candidate shares the same ``n₊n₋``, so the
  arg-max of the noisy ``S`` selects by AUC / balanced accuracy without releasing ``n₊`` (``best_score_`` is the
  noisy ``S``, never normalised). ``S`` is computed exactly (``2S`` an integer, sort-based ``O(n log n)``).
  A training set with one class has ``S ≡ 0``: every score is pure noise and the selection is uniform-like —
  no exception.

*Utility.* The noise on ``S`` has sd ``(n − 1)/μ_s``, i.e. ``(n − 1)/(μ_s n₊n₋) ≈ 1/(μ_s n_min)`` in AUC units
(``n_min = min(n₊, n₋)``), against ``1/(μ_s n)`` for accuracy; with ``m`` candidates the arg-max loses about
``σ·sqrt(2 log m)``. At ``n = 20,000``, 5 % positives (``n_min = 1,000``), ε = 1 and the default grid
(``μ ≈ 0.12``, ``μ_s ≈ 0.026``) that is ≈ 0.04 of AUC per candidate: the AUC score separates candidates that
differ by a few points of AUC, and a larger ``score_share`` buys a finer selection at the release's expense.

Selection strategies
--------------------
``"exhaustive"`` (default; best for small grids): every one of the ``m`` candidates is run once and
the best noisy score is kept. The ``m`` runs compose to ``√m·μ``-GDP exactly (GDP composition); the
arg-max is post-processing. Accounted with dp_accounting's PLD accountant
(``SelfComposedDpEvent(GaussianDpEvent(1/μ), m)``).

``"repeat_and_select"`` (large grids): Papernot & Steinke ("Hyperparameter tuning with Rényi
differential privacy", ICLR 2022; Liu & Talwar 2019 for the geometric case). The base mechanism runs
on a candidate drawn uniformly from the grid; it is repeated ``K`` times, ``K`` geometric with mean
``mean_runs`` (``P[K = k] = γ(1 − γ)^(k−1)``, ``γ = 1/mean_runs``, sampled exactly by Bernoulli trials
from dpcore's generator); only the best run is output, never ``K``, the other candidates or their
scores. Thm 2 of the paper via dp_accounting's RDP accountant (``RepeatAndSelectDpEvent``). Its cost
per run does not grow with ``m``, but ``P[K = 1] = 1/mean_runs``: with probability ``1/mean_runs``
a single random candidate is output.

The class proportion (optional, before the runs)
-----------------------------------------------
With ``prior_epsilon_share = s > 0`` the fraction of training labels equal to the declared positive
class is released once with the exact Laplace mechanism (count sensitivity 1, ``ε_p = s·ε``,
:func:`dpcore.mechanisms.noise.private_proportion`). Each candidate's release is then thresholded with
:meth:`dpcore.KernelRelease.calibrate_prior` — a function of that proportion, the release and the
public points ``Z`` only, i.e. post-processing — before it is scored. Composed with the runs
(``LaplaceDpEvent(1/ε_p)``) in the same dp_accounting accountant.

Class weights (optional, before the runs)
-----------------------------------------
``class_weight`` (a public dict) is applied to every candidate: the candidate's loss is then
``(max_k w_k)``-Lipschitz and its TDDL release is calibrated with that constant. With
``class_weight="balanced"`` the weights are released privately first, with
:func:`dpcore.private_class_weights` (class counts plus exact discrete Laplace noise, ``ε_w``-DP with
``ε_w = class_weight_epsilon_share·ε``; balanced weights clipped to ``[1/M, M]``, ``M =
max_class_weight``), and every candidate is trained with these public weights (post-processing of the
noisy counts). The runs (and the prior) are calibrated for ``ε − ε_w`` and composed with the weights'
release by basic composition: the whole selection stays ``(ε, δ)``-DP. Candidates whose own
``class_weight`` is ``"balanced"`` (weights read off the data) are refused before anything is charged.

Calibration
-----------
dpcore picks the largest per-candidate ``μ`` whose whole procedure (prior + runs) is ``(ε, δ)``-DP by
bisection on the accountant's ε (safe side), then shrinks it by ``1 − 1e-6``; each TDDL release is
checked, on its public calibration record, to be at most ``μ_r``-GDP. Empirical audit of the selection
layer (worst-case neighbours shift every candidate's score; output = the released best score, which
also catches a score noise calibrated with the wrong sensitivity): ``tests/kernel_learning/test_selection.py``.

Time (issue 26)
---------------
With ``"exhaustive"`` the :class:`dpcore.KernelLogisticRegression` candidates that differ only in
``lam``/``C``/``tol`` are fitted together, before the runs, as one regularisation path
(:func:`dpcore.kernel_learning.svm.fit_logistic_path`: one Gram matrix, one preconditioner factor, one pass of
the kernel engine for all the certificates), and the candidates' TDDL releases share ``K(Z, Z)`` and its GP
factor (public). The path solves the candidates' Nyström warm starts one from the next (by increasing ``C``), so a
candidate's model is not bit for bit its own fit's (except at the smallest ``C``) but another point certified to
the same ``tol``. *Privacy is unchanged*: each candidate's model is certified to its own ``tol`` from its own dual
point, and a release's calibration covers every model so certified (the residual is accounted from the public
``tol``, whatever the solver's path to the point), so every run is the same mechanism with the same calibration;
which candidates are grouped depends on the public grid only. Only the wall-clock time (and the last digits of
the models) change.

Hyper-parameters chosen on the private data without this step are not private; the grid, ``Z``,
``mean_runs`` and the strategy are public. Everything public is validated and calibrated before the budget is
charged (every candidate's TDDL calibration is computed on a stand-in of its model that carries the declared
parameters and the validated ``X`` only), so a refusal never depends on the private data after a charge;
``mean_runs`` is capped by :data:`MAX_MEAN_RUNS` (the expected number of trained candidates). Wall-clock time grows with the number of runs (outside
dpcore's threat model, as for every solver).
"""

from __future__ import annotations

import itertools
import logging
import math
import numbers
from dataclasses import dataclass
from typing import Any, overload, Literal, Mapping, Optional, Sequence, Union, TYPE_CHECKING

import numpy as np
from sklearn.base import BaseEstimator

from dpcore import _core
from dpcore._internal.cloning import PerCloneSeedMixin
from dpcore._internal.tags import binary_classifier_tags
from dpcore._internal.labels import (check_classes, check_multiclass_classes, decision_labels, default_classes,
                                     encode_binary_labels, encode_multiclass_labels)
from dpcore._internal.validation import (check_array, check_delta, check_epsilon, check_positive, check_scale, check_tol,
                                         refuse_fit_params)
from dpcore.kernel_learning._model import check_in_domain
from dpcore.kernels.evaluation import check_intercept_scaling, check_kernel_domain, check_kernel_params
from dpcore.kernel_learning.gp import auto_C_for_mu, feature_radius_sq
from dpcore.accounting.events import compose_events, epsilon_delta_event, make_accountant
from dpcore.mechanisms.noise import check_random_state
from dpcore._internal.fp import auto_tol, kernel_gap_floor
from dpcore.exceptions import NotFittedError
from dpcore.kernel_learning.svm import (HINGE_AUTO_TOL_MIN, PATH_PARAMS, KernelLogisticRegression, KernelSVM,
                                        fit_logistic_path, resolve_lam)
from dpcore.kernel_learning.multiclass import MulticlassKernelLogisticRegression
from dpcore.kernel_learning.multiclass_release import MulticlassTDDL, multiclass_min_tol
from dpcore.accounting.calibrate import gaussian_delta
from dpcore.mechanisms.noise import laplace_plan, private_proportion
from dpcore.kernel_learning.tddl import TDDL, BatchPredictions
from dpcore.kernel_learning.release import ReleaseDecisions
from dpcore._internal.class_weight import (DEFAULT_MAX_CLASS_WEIGHT, check_max_class_weight, multiclass_class_weights,
                                           resolve_class_weight)
from dpcore.mechanisms.class_weights import class_count_noise_scale, private_class_weights
from dpcore._internal.defaults import DEFAULT_INTERCEPT_SCALING
from dpcore._internal.types import ArrayLike, DaskArray, DaskArrayLike, NDArray, Self, ClassWeight, RandomState
from dpcore._internal.progress import check_verbose, progress_bar

if TYPE_CHECKING:
    from dpcore.accounting import BudgetAccountant

logger = logging.getLogger(__name__)

__all__ = ["PrivateGridSearch", "SelectionPrivacy", "selection_epsilon", "selection_mu", "score_sensitivity",
           "multiclass_accuracy"]

_STRATEGIES = ("exhaustive", "repeat_and_select")
#: ``param_grid=None``: C = auto·f for these f (``dpcore.kernel_learning.gp.auto_lam``'s rule at the run's μ_r).
AUTO_GRID_FACTORS = (1.0 / 3.0, 1.0, 3.0)

#: The private scores :class:`PrivateGridSearch` can select by (``scoring=``).
SCORINGS = ("accuracy", "balanced_accuracy", "roc_auc")

#: The families a candidate may come from (``"estimator"`` in ``param_grid``): the kernel learners, released with
#: TDDL-gp, and the linear Output-Gauss GLM (:class:`dpcore.OutputPerturbation`, Gaussian noise).
KERNEL_ESTIMATORS = ("KernelSVM", "KernelLogisticRegression")
LINEAR_ESTIMATORS = ("OutputPerturbation",)

#: The families of a multi-class selection (``K >= 3`` declared classes, or any of these in the grid): the certified
#: multinomial kernel model, released jointly with :class:`dpcore.MulticlassTDDL` (one GP, K paths), and the private
#: multinomial linear model :class:`dpcore.MulticlassOutputPerturbation` (one Gaussian release of the K × p weights).
MULTICLASS_ESTIMATORS = ("MulticlassKernelLogisticRegression", "MulticlassOutputPerturbation")

#: Parameters of a linear candidate that the selection sets itself (its share of the budget, the declared domain,
#: the Gaussian noise that makes the run μ-GDP, the randomness) and that a grid may therefore not set.
_LINEAR_RESERVED = ("epsilon", "delta", "data_norm", "noise", "random_state", "accountant", "verbose", "clip")
#: Defaults of a linear candidate (the loss that ranks best under noise, with the regularised intercept).
LINEAR_DEFAULTS = {"loss": "logistic", "fit_intercept": True}


def score_sensitivity(scoring: str, n: int) -> float:
    """Replace-one sensitivity of the (unnormalised) private score of ``n`` scored rows, given the release.

    ``"accuracy"``: the mean accuracy, ``1/n``. ``"balanced_accuracy"`` and ``"roc_auc"``: the pair sums
    ``S_bal = ½(n₋·TP + n₊·TN) = n₊n₋·BA`` and ``S_auc = Σ_{i∈P} Σ_{j∈N} [1(f_i > f_j) + ½·1(f_i = f_j)] =
    n₊n₋·AUC``, sums of one term in ``[0, 1]`` per (positive, negative) pair; replacing one row removes its own
    terms (at most ``n − 1``, all ``≥ 0``) and adds at most ``n − 1`` new ones, so ``|ΔS| ≤ n − 1`` (tight).
    ``n = 1``: ``S ≡ 0``; 1 is returned (any positive value is safe).

    Examples
    --------
    >>> from dpcore.kernel_learning.selection import score_sensitivity
    >>> score_sensitivity("accuracy", 1000), score_sensitivity("roc_auc", 1000)
    (0.001, 999.0)
    """
    scoring = _check_scoring(scoring)
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if scoring == "accuracy":
        return 1.0 / int(n)
    return float(max(int(n) - 1, 1))


def _check_scoring(scoring) -> str:
    if not isinstance(scoring, str) or scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {SCORINGS}, got {scoring!r:.60}")
    return scoring


def twice_pair_score(scoring: str, positive: ArrayLike, *, decision: ArrayLike | None = None,
                     predicted_positive: ArrayLike | None = None) -> int:
    """``2·S`` (an exact integer) of the pair-sum scores, from boolean labels ``positive``.

    ``"roc_auc"``: ``2·S_auc = Σ_{i∈P} (2·#{j∈N: f_j < f_i} + #{j∈N: f_j = f_i})`` from the decision values
    (sort-based, ``O(n log n)``). ``"balanced_accuracy"``: ``2·S_bal = n₋·TP + n₊·TN`` from the predicted
    labels. A single-class ``positive`` gives 0 (no pair).
    """
    positive = np.asarray(positive, dtype=bool)
    n_pos = int(positive.sum())
    n_neg = int(positive.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        return 0
    if scoring == "roc_auc":
        f = np.asarray(decision, dtype=np.float64)
        if not np.all(np.isfinite(f)):  # a release's decision values are finite; defensive
            raise RuntimeError("a candidate's decision values are not finite")
        neg = np.sort(f[~positive])
        fp = f[positive]
        below = np.searchsorted(neg, fp, side="left").astype(np.int64)
        at_or_below = np.searchsorted(neg, fp, side="right").astype(np.int64)
        return int(below.sum()) + int(at_or_below.sum())
    if scoring == "balanced_accuracy":
        pp = np.asarray(predicted_positive, dtype=bool)
        tp = int(np.count_nonzero(pp & positive))
        tn = int(np.count_nonzero(~pp & ~positive))
        return n_neg * tp + n_pos * tn
    raise ValueError(f"scoring must be 'roc_auc' or 'balanced_accuracy' here, got {scoring!r}")


def _selection_event(mu: float, strategy: str, n_candidates: int, mean_runs: float, prior_epsilon: float):
    from dp_accounting import dp_event

    base = dp_event.GaussianDpEvent(1.0 / mu)
    if strategy == "exhaustive":
        event = dp_event.SelfComposedDpEvent(base, int(n_candidates))
    else:
        event = dp_event.RepeatAndSelectDpEvent(base, float(mean_runs), 1.0)
    if prior_epsilon > 0:  # the label proportion (Laplace, sensitivity 1) released before the runs
        event = dp_event.ComposedDpEvent([dp_event.LaplaceDpEvent(1.0 / prior_epsilon), event])
    return event


#: Largest accepted ``epsilon`` of :class:`PrivateGridSearch` (beyond it the per-run calibration leaves the range
#: where its numbers are computed reliably; no meaningful guarantee needs more).
MAX_EPSILON = 1000.0

#: Largest accepted ``mean_runs`` (``"repeat_and_select"``): the expected number of trained and released candidates.
#: A public cap, so that a huge value is refused before anything is charged instead of running for ever.
MAX_MEAN_RUNS = 10_000


def _check_strategy(strategy, n_candidates, mean_runs):
    if not isinstance(strategy, str) or strategy not in _STRATEGIES:
        raise ValueError(f"strategy must be one of {_STRATEGIES}, got {strategy!r}")
    if isinstance(n_candidates, bool) or not isinstance(n_candidates, numbers.Integral) or n_candidates < 1:
        raise ValueError(f"n_candidates must be a positive integer, got {n_candidates!r}")
    if strategy == "repeat_and_select":
        if isinstance(mean_runs, bool) or not isinstance(mean_runs, numbers.Integral) or not (
                1 <= mean_runs <= MAX_MEAN_RUNS):
            raise ValueError(f"mean_runs must be an integer in [1, {MAX_MEAN_RUNS}] (MAX_MEAN_RUNS: the expected "
                             f"number of trained candidates), got {mean_runs!r:.40}")


def selection_epsilon(mu: float, delta: float, *, n_candidates: int, strategy: str = "exhaustive",
                      mean_runs: Optional[int] = None, prior_epsilon: float = 0.0) -> float:
    """ε at ``delta`` of a selection whose every run is ``mu``-GDP (dp_accounting: PLD or RDP).

    ``prior_epsilon > 0`` adds the ε-DP Laplace release of the class proportion before the runs.

    Examples
    --------
    >>> from dpcore.kernel_learning.selection import selection_epsilon
    >>> round(selection_epsilon(0.118, 1e-6, n_candidates=4), 2)
    1.0
    >>> round(selection_epsilon(0.123, 1e-6, n_candidates=4, strategy="repeat_and_select", mean_runs=4), 2)
    0.97
    """
    mu = check_positive(mu, "mu")
    delta = check_delta(delta, allow_zero=False)
    _check_strategy(strategy, n_candidates, mean_runs)
    if not (isinstance(prior_epsilon, numbers.Real) and 0.0 <= prior_epsilon < math.inf):
        raise ValueError(f"prior_epsilon must be finite and >= 0, got {prior_epsilon!r}")
    event = _selection_event(mu, strategy, n_candidates, mean_runs, float(prior_epsilon))
    # dpcore's accountants (accounting.events: ADD_OR_REMOVE_ONE with replace-one multipliers, PLD interval 1e-4);
    # repeat-and-select is supported by the RDP accountant only
    acc = make_accountant("pld" if strategy == "exhaustive" else "rdp")
    acc.compose(event)
    return float(acc.get_epsilon(delta))


def selection_mu(epsilon: float, delta: float, *, n_candidates: int, strategy: str = "exhaustive",
                 mean_runs: Optional[int] = None, prior_epsilon: float = 0.0) -> float:
    """Largest per-run ``μ`` (to relative 1e-6, rounded down) with ``selection_epsilon(μ) ≤ epsilon``.

    Examples
    --------
    >>> from dpcore.kernel_learning.selection import selection_mu
    >>> round(selection_mu(1.0, 1e-6, n_candidates=4), 3)
    0.118
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)

    def eps_of(m):
        return selection_epsilon(m, delta, n_candidates=n_candidates, strategy=strategy, mean_runs=mean_runs,
                                 prior_epsilon=prior_epsilon)

    # The answer's bracket [lo, hi] (eps_of(lo) <= epsilon < eps_of(hi)) is found from a guess and closed by the
    # Anderson–Björck false-position method instead of bisection: the same contract (largest μ to relative 1e-6,
    # rounded down; every candidate μ is checked by the accountant itself) in about 8 accountant calls instead of
    # ~26 (a PLD composition each: 0.05–0.2 s). The guess is the μ whose m-fold self-composition is exactly
    # ε-tight μ√m-GDP (the prior and the PLD's pessimistic discretisation only lower the answer).
    mu_floor, mu_cap = 1e-6, 1e6
    guess = min(max(_gdp_mu(epsilon, delta) / math.sqrt(n_candidates if strategy == "exhaustive"
                                                        else float(mean_runs)), mu_floor), mu_cap)
    f_guess = eps_of(guess) - epsilon
    if f_guess <= 0.0:
        lo, f_lo = guess, f_guess
        hi = min(guess * 1.02, mu_cap)
        f_hi = eps_of(hi) - epsilon
        while f_hi <= 0.0 and hi < mu_cap:
            lo, f_lo = hi, f_hi
            hi = min(hi * 2.0, mu_cap)
            f_hi = eps_of(hi) - epsilon
        if f_hi <= 0.0:
            return lo
    else:
        hi, f_hi = guess, f_guess
        lo = max(guess * 0.98, mu_floor)
        f_lo = eps_of(lo) - epsilon
        while f_lo > 0.0 and lo > mu_floor:
            hi, f_hi = lo, f_lo
            lo = max(lo * 0.5, mu_floor)
            f_lo = eps_of(lo) - epsilon
        if f_lo > 0.0:
            raise ValueError(f"epsilon={epsilon!r} is too small for this selection at delta={delta!r}"
                             + (f" after the prior's {prior_epsilon:g}" if prior_epsilon else ""))
    side = 0
    while hi - lo > 1e-6 * hi:
        x = (lo * f_hi - hi * f_lo) / (f_hi - f_lo) if f_hi != f_lo else 0.5 * (lo + hi)
        # stay strictly inside, and aim a hair past the estimate on the side that has not moved (the bracket
        # then closes from both sides: the last step usually lands within the 1e-6 window)
        w = hi - lo
        x = min(max(x + (0.4e-6 * hi if side < 0 else -0.4e-6 * hi if side > 0 else 0.0), lo + 1e-3 * w),
                hi - 1e-3 * w)
        f_x = eps_of(x) - epsilon
        if f_x <= 0.0:
            if side == -1:  # lo moved twice in a row: Anderson–Björck scaling of the stale end
                m_ab = 1.0 - f_x / f_lo if f_lo != 0.0 else 0.5
                f_hi *= m_ab if m_ab > 0.0 else 0.5
            lo, f_lo, side = x, f_x, -1
        else:
            if side == 1:
                m_ab = 1.0 - f_x / f_hi
                f_lo *= m_ab if m_ab > 0.0 else 0.5
            hi, f_hi, side = x, f_x, 1
    return lo


def _gdp_mu(epsilon: float, delta: float) -> float:
    """The ``μ`` of a ``μ``-GDP mechanism that is exactly ``(epsilon, delta)``-DP (analytic Gaussian curve)."""
    lo, hi = 1e-9, 1.0
    while gaussian_delta(1.0 / hi, 1.0, epsilon) < delta and hi < 1e6:
        lo, hi = hi, hi * 2.0
    while hi - lo > 1e-9 * hi:
        mid = 0.5 * (lo + hi)
        if gaussian_delta(1.0 / mid, 1.0, epsilon) < delta:
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


def _noisy_scores(values: np.ndarray, sigma: float, rng) -> np.ndarray:
    """``values`` plus independent exact grid Gaussian noise of standard deviation ``sigma`` (dpcore's sampler)."""
    v = np.ascontiguousarray(values, dtype=np.float64)
    return np.asarray(_core.analytic_release(v, sigma, math.floor(math.log2(sigma)) - 40, rng), dtype=np.float64)


def _noisy_score(value: float, sigma: float, rng) -> float:
    """``value`` plus exact grid Gaussian noise of standard deviation ``sigma`` (dpcore's sampler)."""
    return float(_noisy_scores(np.array([value]), sigma, rng)[0])


def _select_best(run, indices):
    """``(score, i, payload)`` of the first best ``run(i)`` over ``indices`` (post-processing)."""
    best = None
    for i in indices:
        score, payload = run(i)
        if best is None or score > best[0]:
            best = (score, i, payload)
    return best


def _repeat_and_select(rng, n_candidates: int, mean_runs: int, run):
    """Papernot–Steinke repeat-and-select with a geometric number of runs.

    ``run(i)`` is the base mechanism on candidate ``i`` and returns ``(noisy_score, payload)``. ``K``
    runs on uniformly drawn candidates; returns ``(score, i, payload)`` of the first best run. ``K``,
    the other runs and their scores are discarded (never part of the output).
    """
    k = _geometric_runs(rng, mean_runs)
    return _select_best(run, [_uniform_below(rng, n_candidates) for _ in range(k)])


@dataclass(frozen=True)
class SelectionPrivacy:
    """The public record of a :class:`PrivateGridSearch` run.

    Examples
    --------
    A fitted :class:`PrivateGridSearch` exposes it as ``privacy_`` (see that class's example);
    every field is public:

    >>> import dataclasses
    >>> from dpcore.kernel_learning import SelectionPrivacy
    >>> [f.name for f in dataclasses.fields(SelectionPrivacy)][:4]
    ['epsilon', 'delta', 'strategy', 'mu']
    """

    epsilon: float
    delta: float
    strategy: str
    mu: float
    release_mu: float
    score_mu: float
    score_sigma: float
    mean_runs: int
    epsilon_accounted: float
    n_candidates: int
    n_samples: int
    candidate_epsilon: float
    candidate_delta: float
    prior_epsilon: float
    class_weight_epsilon: float = 0.0
    scoring: str = "accuracy"
    score_sensitivity: float = math.nan


class PrivateGridSearch(PerCloneSeedMixin, BaseEstimator):
    """Private selection of a kernel learner's hyper-parameters and release of the selected model.

    See :mod:`dpcore.kernel_learning.selection` for the algorithm and its proof.

    Parameters
    ----------
    param_grid : dict of lists, list of such dicts, or None
        Candidate parameters (e.g. ``{"lam": [...], "gamma": [...]}``); every combination is a candidate (of every
        dict, for a list, as in scikit-learn's ``GridSearchCV``). An ``"estimator"`` entry names the family:
        ``"KernelSVM"`` (the default), ``"KernelLogisticRegression"`` (both on ``base_params``, released with
        TDDL-gp) or ``"OutputPerturbation"`` (the private linear model with Gaussian noise, on
        :data:`LINEAR_DEFAULTS`: logistic loss and intercept; any parameter of it except ``epsilon``, ``delta``,
        ``data_norm``, ``noise``, ``random_state``, ``accountant``, ``verbose``, ``clip``, plus ``"feature_map"``:
        ``None`` or a :class:`dpcore.RandomFourierFeatures`, cloned and fitted on ``X``'s shape if unfitted);
        names or the classes themselves. ``None``: three :class:`dpcore.KernelLogisticRegression` values of λ
        (the recommended kernel model, docs/choosing.md), ``C = 1/(nλ)``
        at 1/3, 1 and 3 times the data-independent logistic rule of :func:`dpcore.kernel_learning.gp.auto_lam` evaluated
        at each run's ``μ_r`` (:data:`AUTO_GRID_FACTORS`; kernel parameters from ``base_params``), plus one
        ``OutputPerturbation`` at the same rule for the linear map (``R_φ² = data_norm² + 1``).
    epsilon, delta : float
        The guarantee of the whole selection (all runs, the prior and the released model);
        ``0 < epsilon ≤`` :data:`MAX_EPSILON` (1000).
    Z : array of shape (T, d)
        Public points of the TDDL-gp release (e.g. unlabelled public data).
    data_norm : float
        Declared bound on ``||x||`` (training rows and ``Z``).
    base_params : dict, optional
        Fixed ``KernelSVM`` parameters (default ``{"kernel": "rbf", "tol": "auto"}``: the smallest tolerance certifiable on the declared domain).
    strategy : {"exhaustive", "repeat_and_select"}, default "exhaustive"
        Run every candidate once (cost ``√m`` in μ) or Papernot–Steinke repeat-and-select with a
        geometric number of runs (cost independent of ``m``; better for large grids).
    score_share : float, default 0.05
        Share of each run's ``μ²`` spent on the noisy training-set accuracy (the rest on the release).
    prior_epsilon_share : float, default 0.05
        Share of ``epsilon`` spent on the class proportion (:func:`dpcore.mechanisms.noise.private_proportion`,
        released once before the runs); every candidate's release is then thresholded with
        :meth:`dpcore.KernelRelease.calibrate_prior` (post-processing) — the remedy for a kernel model
        without a bias on imbalanced data. ``0`` disables it.
    class_weight : dict, "balanced" or None, default None
        Class weights applied to every candidate. A dict is public (each weight ``<= max_class_weight``);
        ``"balanced"`` spends ``class_weight_epsilon_share·epsilon`` on :func:`dpcore.private_class_weights`
        before the runs (see the module docstring). ``None``: the candidates' own parameters (a public dict
        in ``base_params`` or ``param_grid`` is allowed; ``"balanced"`` there is refused).
    max_class_weight : float, default 10
        Public cap ``M`` on the weights (the released weights of ``"balanced"`` lie in ``[1/M, M]``).
    class_weight_epsilon_share : float, default 0.05
        Share of ``epsilon`` spent on the private class weights (``class_weight="balanced"`` only), in ``(0, 1)``.
    scoring : {"accuracy", "balanced_accuracy", "roc_auc"}, default "accuracy"
        The private score every run releases (on the training rows, given its release): the mean accuracy
        (sensitivity ``1/n``), or the pair sums ``S = n₊n₋·BA`` / ``n₊n₋·AUC`` (sensitivity ``n − 1``, see
        the module docstring and :func:`score_sensitivity`). Prefer ``"roc_auc"`` or ``"balanced_accuracy"``
        on imbalanced data. A multi-class selection (``K >= 3`` declared classes or multi-class
        candidates: ``"MulticlassKernelLogisticRegression"``, ``"MulticlassOutputPerturbation"``) accepts
        ``"accuracy"`` only (the count of correct labels has sensitivity 1 whatever K; module docstring).
    mean_runs : int, optional
        ``"repeat_and_select"`` only: mean number of runs ``E[K]`` (default: the number of candidates); at most
        :data:`MAX_MEAN_RUNS` (10,000).
    verbose : bool or int, default=False
        Show tqdm progress bars (stderr) during long calls; ``False``/``0`` shows nothing. Progress and the
        :mod:`logging` messages are for the curator only and never part of a release.
        ``"exhaustive"``: the bar counts the candidates. ``"repeat_and_select"``: it shows the elapsed time
        only — the random number of runs ``K`` is part of the mechanism's secret randomness (the guarantee
        holds for the selection with ``K`` hidden), so it is neither shown nor logged.
    random_state : None, int or ChaChaRng
        With an int, clone k of this estimator (made by ``OneVsRestClassifier``, ``cross_val_score``, ...) gets
        the seed derived from the int and k: distinct, reproducible noise streams; ``None`` stays ``None``, a
        ``ChaChaRng`` cannot be cloned (docs/sklearn.md). Use ``None`` for private use.
    accountant : BudgetAccountant, optional
        Charged ``(ε, δ)`` once, before any training — and only after everything public has been validated and
        calibrated: the parameters, ``Z`` (in the declared ball), ``X``'s shape and domain, ``y``'s labels (in the
        declared ``classes``) and every candidate's TDDL calibration. Every such refusal leaves it unchanged.

    Notes
    -----
    The class prior is the proportion of ``classes_[1]`` of the *sorted* declared label set
    (:mod:`dpcore._internal.labels`: ``classes_ = np.sort(classes)``), the class every release predicts for
    ``f > 0`` and :meth:`dpcore.KernelRelease.calibrate_prior` thresholds for, whatever order ``classes`` is
    declared in. All candidates must declare the same label set.

    Attributes
    ----------
    best_params_ : dict
    best_score_ : float
        The selected run's *noisy* score (private): the training-set accuracy, or the pair sum ``S``
        (``≈ n₊n₋·metric``; the normaliser ``n₊n₋`` is not released) for ``"roc_auc"`` / ``"balanced_accuracy"``.
    release_ : KernelRelease, OutputPerturbation or MappedLinearModel
        The selected candidate's private model (a linear candidate on random features: the map and the model).
    candidates_ : list of dict
        The (public) grid actually searched, e.g. the data-independent one for ``param_grid=None``; the
        ``"estimator"`` entries by class name.
    privacy_ : SelectionPrivacy
    class_weight_ : dict
        The (public) class weights every candidate was trained with (all 1 without class weights).

    Examples
    --------
    >>> import numpy as np
    >>> import dpcore
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.7, 0.7, size=(2000, 2))
    >>> y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    >>> Z = rng.uniform(-0.7, 0.7, size=(200, 2))
    >>> grid = {"lam": [1e-3, 1e-2, 1e-1]}
    >>> sel = dpcore.PrivateGridSearch(grid, 2.0, 1e-6, Z=Z, data_norm=1.0,
    ...                                base_params={"kernel": "rbf", "gamma": 5.0}, random_state=0).fit(X, y)
    >>> sel.best_params_["lam"] in grid["lam"], sel.score(X, y) > 0.8
    (True, True)

    Kernel and linear candidates together, scored by AUC (the default grid would add a linear candidate too):

    >>> grid = [{"estimator": ["KernelSVM"], "lam": [1e-2], "gamma": [5.0]},
    ...         {"estimator": ["OutputPerturbation"], "lam": [1e-3]}]
    >>> sel = dpcore.PrivateGridSearch(grid, 2.0, 1e-6, Z=Z, data_norm=1.0, scoring="roc_auc",
    ...                                random_state=0).fit(X, y)
    >>> sel.best_params_["estimator"], sel.privacy_.score_sensitivity   # XOR: the kernel; Δ = n − 1
    ('KernelSVM', 1999.0)

    K >= 3 declared classes: the data-independent K-class grid (three multinomial kernel models around
    ``multiclass_auto_lam``'s rule and one multinomial linear model), scored by the count of correct labels:

    >>> centers = np.array([[0.5, 0.0], [-0.25, 0.43], [-0.25, -0.43]])
    >>> y3 = rng.integers(0, 3, size=1000)
    >>> X3 = np.clip(centers[y3] + 0.15 * rng.standard_normal((1000, 2)), -0.7, 0.7)
    >>> Z3 = rng.uniform(-0.7, 0.7, size=(100, 2))
    >>> sel = dpcore.PrivateGridSearch(None, 1.0, 1e-6, Z=Z3, data_norm=1.0, random_state=0,
    ...                                base_params={"classes": [0, 1, 2], "gamma": 2.0}).fit(X3, y3)
    >>> len(sel.candidates_), sel.score(X3, y3) > 0.9, sel.privacy_.score_sensitivity  # Δ = 1/n
    (4, True, 0.001)
    """


    def __sklearn_tags__(self):
        return binary_classifier_tags(super().__sklearn_tags__())

    def __init__(self, param_grid: Union[None, Mapping[str, Sequence[Any]], Sequence[Mapping[str, Sequence[Any]]]],
                 epsilon: float, delta: float, *, Z: ArrayLike, data_norm: float,
                 base_params: Optional[Mapping[str, Any]] = None,
                 strategy: Literal["exhaustive", "repeat_and_select"] = "exhaustive", score_share: float = 0.05,
                 prior_epsilon_share: float = 0.05, mean_runs: Optional[int] = None, class_weight: ClassWeight = None,
                 max_class_weight: float = DEFAULT_MAX_CLASS_WEIGHT, class_weight_epsilon_share: float = 0.05,
                 scoring: Literal["accuracy", "balanced_accuracy", "roc_auc"] = "accuracy",
                 verbose: bool | int = False, random_state: RandomState = None,
                 accountant: Optional[BudgetAccountant] = None) -> None:
        self.param_grid = param_grid
        self.epsilon = epsilon
        self.delta = delta
        self.Z = Z
        self.data_norm = data_norm
        self.base_params = base_params
        self.strategy = strategy
        self.score_share = score_share
        self.prior_epsilon_share = prior_epsilon_share
        self.mean_runs = mean_runs
        self.class_weight = class_weight
        self.max_class_weight = max_class_weight
        self.class_weight_epsilon_share = class_weight_epsilon_share
        self.scoring = scoring
        self.verbose = verbose
        self.random_state = random_state
        self.accountant = accountant

    def _candidates(self) -> list:
        """Every combination of the grid(s): a list of dicts (``"estimator"`` a name or class where given)."""
        grid = self.param_grid
        grids = [grid] if isinstance(grid, dict) else grid
        if not isinstance(grids, (list, tuple)) or not grids:
            raise ValueError("param_grid must be a non-empty dict of lists, a non-empty list of such dicts, or None; "
                             f"got {type(grid).__name__}")
        out = []
        for g in grids:
            if not isinstance(g, dict) or not g:
                raise ValueError("param_grid must be a non-empty dict of lists (or a list of such dicts)")
            for k in g:
                if not isinstance(k, str):
                    raise ValueError(f"param_grid: parameter names must be strings, got {k!r:.40}")
            keys = sorted(g)
            for k in keys:
                if not isinstance(g[k], (list, tuple)) or not g[k]:
                    raise ValueError(f"param_grid[{k!r}] must be a non-empty list")
            out += [dict(zip(keys, vals)) for vals in itertools.product(*(g[k] for k in keys))]
        return out

    def fit(self, X: ArrayLike, y: ArrayLike, **fit_params: Any) -> Self:
        """Select privately and release the selected model (charges ``(ε, δ)`` once)."""
        refuse_fit_params(type(self).__name__, fit_params)
        if self._is_multiclass():
            return self._fit_multiclass(X, y)

        # -- everything public (and X's shape/domain/labels: refusing out-of-domain input is covered, the bounds
        #    are declared) is validated and calibrated here, before anything is charged
        check_verbose(self.verbose)
        scoring = _check_scoring(self.scoring)
        raw = None if self.param_grid is None else self._candidates()
        if raw is not None:  # resolve every "estimator" entry and check its parameter names now (cheap refusals)
            raw = [_resolve_estimator(c) for c in raw]
            for kind, cls, p in raw:
                if kind == "kernel" and "feature_map" in p:
                    raise ValueError("param_grid: feature_map applies to the linear candidates (OutputPerturbation) "
                                     f"only, not to {cls.__name__}")
                if kind == "linear":
                    _check_linear_params(cls, {k: v for k, v in p.items() if k != "feature_map"})
        m = len(AUTO_GRID_FACTORS) + 1 if raw is None else len(raw)
        epsilon, delta, strategy, mean_runs = self._check_budget_params(m)
        if self.base_params is not None and not isinstance(self.base_params, dict):
            raise TypeError(f"base_params must be a dict of KernelSVM parameters or None, got "
                            f"{type(self.base_params).__name__}")
        if self.accountant is not None and not callable(getattr(self.accountant, "spend", None)):
            raise TypeError(f"accountant must be a dpcore.BudgetAccountant or None, got {type(self.accountant).__name__}")
        radius = check_scale(self.data_norm, "data_norm")
        X = check_array(X, "X")
        n = X.shape[0]
        Z = check_in_domain(check_array(self.Z, "Z", n_features=X.shape[1], estimator="X (the training rows)"),
                            radius, "Z", clip=False)
        X = check_in_domain(X, radius, "X", clip=False)
        base = {"kernel": "rbf", "tol": "auto"} if self.base_params is None else dict(self.base_params)
        rng = check_random_state(self.random_state)
        # -- class weights (public dict, or "balanced": released privately with ε_w, basic composition); they
        #    apply to the kernel candidates (OutputPerturbation has no class weights)
        cw_max = check_max_class_weight(self.max_class_weight)
        cw_balanced = isinstance(self.class_weight, str) and self.class_weight == "balanced"
        cw_eps = 0.0
        if cw_balanced:
            share = self.class_weight_epsilon_share
            if isinstance(share, bool) or not isinstance(share, numbers.Real):
                raise TypeError(f"class_weight_epsilon_share must be a real number in (0, 1), got "
                                f"{type(share).__name__}")
            if not 0.0 < share < 1.0:
                raise ValueError(f"class_weight_epsilon_share must lie in (0, 1), got {share!r:.40}")
            cw_eps = float(share) * epsilon
            class_count_noise_scale(cw_eps)  # calibratable (public), else refused here
            if "class_weight" in base or (raw is not None and any("class_weight" in c[2] for c in raw)):
                raise ValueError("class_weight='balanced' (released privately) conflicts with a class_weight in "
                                 "base_params or param_grid; declare it in one place")
        elif self.class_weight is not None:  # validated with every candidate below (_public_lipschitz)
            base = dict(base, class_weight=self.class_weight, max_class_weight=cw_max)
        eps_runs = epsilon - cw_eps  # basic composition with the class weights' ε_w-DP release
        # -- calibration (public): the prior is ε_p-DP (Laplace), every run μ-GDP
        prior_eps = float(self.prior_epsilon_share) * eps_runs
        if prior_eps > 0:  # the class proportion's exact Laplace release must be calibratable (public)
            try:
                laplace_plan(1.0, prior_eps, dim=1)
            except ValueError as exc:
                raise ValueError(f"prior_epsilon_share={self.prior_epsilon_share!r}: the class proportion's epsilon "
                                 f"{prior_eps!r} cannot be calibrated ({exc}); use 0 or a larger share") from None
        mu = selection_mu(eps_runs, delta, n_candidates=m, strategy=strategy, mean_runs=mean_runs,
                          prior_epsilon=prior_eps) * (1.0 - 1e-6)
        eps_acc = selection_epsilon(mu, delta, n_candidates=m, strategy=strategy, mean_runs=mean_runs,
                                    prior_epsilon=prior_eps)
        mu_s = mu * math.sqrt(float(self.score_share))
        mu_r = math.sqrt(mu * mu - mu_s * mu_s)
        # the candidate release: (ε_c, δ_c) of a μ_c-GDP curve with μ_c < μ_r; checked below on the
        # actual calibration (both TDDL stages together; the Output-Gauss GLM's single Gaussian release)
        cand_delta = 1e-10
        cand_eps = _gdp_epsilon(mu_r * 0.999, cand_delta)
        sens = score_sensitivity(scoring, n)
        score_sigma = _representable_sigma(sens, mu_s)
        if raw is None:  # the data-independent grid: around gp.auto_lam at this run's μ_r, plus one linear model
            # the recommended kernel model (issue 23, item 3): KernelLogisticRegression, whose decision values do not
            # collapse onto a margin under imbalance, at the logistic loss's C = auto rule
            probe = KernelLogisticRegression(**base)
            kname, kgamma, kdegree, kcoef0 = check_kernel_params(probe.kernel, probe.gamma, probe.degree,
                                                                probe.coef0, X.shape[1])
            l0 = cw_max if cw_balanced else _public_lipschitz(KernelLogisticRegression, base,
                                                              _common_classes([(KernelLogisticRegression, base)], y))
            c0 = auto_C_for_mu(mu_r, feature_radius_sq(radius, kname, kgamma, kdegree, kcoef0,
                                                        n_features=X.shape[1],
                                                        intercept_scaling=probe.intercept_scaling), l0, loss="logistic")
            c_lin = auto_C_for_mu(mu_r, feature_radius_sq(radius, "linear", None, 3, 0.0, intercept_scaling=1.0), 1.0,
                                  loss="logistic")
            raw = [("kernel", KernelLogisticRegression, {"lam": 1.0 / (n * c0 * f)}) for f in AUTO_GRID_FACTORS]
            raw.append(("linear", _output_perturbation(), {"lam": 1.0 / (n * c_lin)}))
            public_keys = {"estimator", "lam"}
        else:
            public_keys = set().union(*(set(g) for g in ([self.param_grid] if isinstance(self.param_grid, dict)
                                                           else self.param_grid)))
        # the candidates' public grid (what candidates_ shows): estimators by name
        shown = [{k: (cls.__name__ if k == "estimator" else v) for k, v in dict(p, estimator=cls).items()
                  if k in public_keys} for _, cls, p in raw]
        # full parameters: kernel candidates on base_params; linear ones on LINEAR_DEFAULTS (+ base's classes)
        cands = []
        for kind, cls, p in raw:
            if kind == "kernel":
                cands.append(_Candidate(kind, cls, dict(base, **p), None))
            else:
                q = dict(LINEAR_DEFAULTS, **({"classes": base["classes"]} if "classes" in base else {}))
                q.update({k: v for k, v in p.items() if k != "feature_map"})
                cands.append(_Candidate(kind, cls, _check_linear_params(cls, q), p.get("feature_map")))
        # one declared label set for every candidate; y's labels checked against it (an input error about a
        # record only); the prior is released for classes_[1] of the SORTED set — the class calibrate_prior and
        # every release predict for f > 0 (dpcore._internal.labels: one convention, whatever the declared order)
        classes_ = _common_classes([(c.cls, c.params) for c in cands], y)
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"y must be a 1-D array of length {n}, got shape {y.shape}")
        declared = cands[0].cls(**cands[0].params).classes
        _, y_pm = encode_binary_labels(y, classes_ if declared is not None else None, n)
        # y in the encoding of classes_ (the default rule maps 0/-1/False and 1/True per label), so the private
        # class weights, the prior and every candidate's fit read the same two labels
        y = np.where(y_pm > 0, classes_[1], classes_[0])
        positive = classes_[1]
        factor_cache: dict = {}  # K(Z, Z) and its GP factor per kernel (public), shared by the candidates' TDDLs
        for i, c in enumerate(cands):
            if c.kind == "kernel":
                # its class weights must be public (a declared dict, or "balanced" released privately below); its
                # Lipschitz constant max_k w_k (M for the privately released weights) enters the float floor;
                # every solver tolerance must be certifiable for the declared domain (public floor
                # KERNEL_SUM_REL_ERROR·R_φ²/λ, dpcore.kernel_learning._model.public_error_bound): raised here,
                # before anything is charged, instead of refusing in the middle of the runs
                L = cw_max if cw_balanced else _public_lipschitz(c.cls, c.params, classes_)
                c.params = _certifiable(c.cls, c.params, radius, X.shape[1], lipschitz=L, n_samples=n)
                # its TDDL-gp calibration, on a public stand-in of its model (declared parameters and the validated
                # X, no solution): every check and number TDDL.prepare makes on public inputs, so that nothing
                # about Z, the kernel parameters (e.g. gamma=1e308) or the budget is refused after the charge
                stand_in = TDDL(_public_stand_in(c.cls, c.params, X, lipschitz=L), cand_eps, cand_delta,
                                data_norm=radius, noise="gp")
                stand_in._factor_cache = factor_cache
                cal = stand_in.prepare(Z)["cal"]
                _check_candidate_gdp(cal, mu_r)
            else:
                # the public feature map (fitted on X's shape only), the features, and the GLM's whole calibration
                # (its _prepare: parameters, the features' domain, labels; no noise, no charge)
                c.feature_map, F = _fit_feature_map(c.feature_map, X, i)
                c.features = F
                glm = c.cls(**c.params, epsilon=cand_eps, delta=cand_delta, noise="gaussian",
                            data_norm=radius if c.feature_map is None else RFF_FEATURE_NORM)
                _check_linear_gdp(glm._prepare(F, y).cal, mu_r)
                c.params = glm.get_params()
        # the runs' event as calibrated; the class proportion (exact grid Laplace) as its ε (accounting.events)
        self.dp_event_ = _selection_event(mu, strategy, m, mean_runs, 0.0)
        if prior_eps > 0:
            self.dp_event_ = compose_events(epsilon_delta_event(prior_eps), self.dp_event_)
        if cw_eps > 0:
            self.dp_event_ = compose_events(epsilon_delta_event(cw_eps), self.dp_event_)
        if self.accountant is not None:
            self.accountant.spend(epsilon, delta, event=self.dp_event_,
                                  label=f"PrivateGridSearch({m} candidates, {strategy}, {scoring})")
        logger.info("PrivateGridSearch: charged (epsilon=%.6g, delta=%.3g) for %d candidates (%s, %s)", epsilon,
                    delta, m, strategy, scoring)
        released_weights = None
        if cw_balanced:  # ε_w-DP public weights (post-processing gives every kernel candidate the same dict)
            weights = released_weights = dict(private_class_weights(y, classes_.tolist(), cw_eps,
                                                                    max_class_weight=cw_max, random_state=rng))
            for c in cands:
                if c.kind == "kernel":
                    c.params = dict(c.params, class_weight=weights, max_class_weight=cw_max)
        p_hat = private_proportion(y, positive, prior_eps, random_state=rng) if prior_eps > 0 else None

        def linear_offset() -> float:
            """``log(w₊/w₋)`` of the public class weights every kernel candidate is trained with (0 without)."""
            cw = released_weights if cw_balanced else self.class_weight
            if not isinstance(cw, dict):
                return 0.0
            w = resolve_class_weight(cw, classes_, None, max_class_weight=cw_max)[0]
            return float(math.log(w[classes_[1].item()] / w[classes_[0].item()]))
        is_pos = y == positive

        def score_of(decision, predicted, rows_x):
            """The candidate's private score statistic on the training rows (given the release)."""
            if scoring == "accuracy":
                return float(np.mean(predicted == y))
            return 0.5 * twice_pair_score(scoring, is_pos, decision=decision if scoring == "roc_auc" else None,
                                          predicted_positive=(predicted == positive) if scoring != "roc_auc"
                                          else None)

        # the kernel logistic candidates that differ only in lam/C/tol are fitted together, before the runs
        # (a regularisation path: one Gram matrix, one preconditioner factor, one pass for the certificates; each
        # still certified to its own tol, so every run is the same mechanism; only the wall-clock time changes)
        prefit, batches = self._fit_paths(cands, X, y) if strategy == "exhaustive" else ({}, {})
        # every kernel release is over the same public Z: its decision values on X come from one K(X, Z)
        decisions = ReleaseDecisions(X) if self._path_fits else None
        # ... and the class-prior thresholds their values on Z from one K(Z, Z) (post-processing of the release)
        z_decisions = ReleaseDecisions(Z) if self._path_fits and p_hat is not None else None

        def run(i):
            c = cands[i]
            if c.kind == "kernel":
                model = prefit.pop(i) if i in prefit else c.cls(**c.params).fit(X, y)
                tddl = TDDL(model, cand_eps, cand_delta, data_norm=radius, noise="gp", random_state=rng)
                if self._path_fits:
                    tddl._factor_cache = factor_cache
                if i in batches:  # the clean predictions K(Z, X)μ of the whole path in one kernel pass
                    tddl._batch_predictions = batches[i]
                prep = tddl.prepare(Z)
                _check_candidate_gdp(prep["cal"], mu_r)
                release = tddl._fit_prepared(prep).release_
                if p_hat is not None:  # post-processing of (p_hat, release) with public points
                    release = release.calibrate_prior(p_hat) if z_decisions is None else release._with_prior(
                        p_hat, z_decisions.decision_function(release._bare()))
                f = release.decision_function(X) if decisions is None else decisions.decision_function(release)
                dec = f if scoring == "roc_auc" else None
                pred = None if scoring == "roc_auc" else decision_labels(f, release.classes_)
            else:
                glm = c.cls(**dict(c.params, random_state=rng)).fit(c.features, y)
                _check_linear_gdp(glm.privacy_, mu_r)
                shift = linear_offset()  # the prior correction of the public class weights (post-processing)
                release = glm if c.feature_map is None and shift == 0.0 else MappedLinearModel(
                    c.feature_map, glm, offset=shift)
                dec = release.decision_function(X) if scoring == "roc_auc" else None
                pred = None if scoring == "roc_auc" else release.predict(X)
            return _noisy_score(score_of(dec, pred, X), score_sigma, rng), release

        if strategy == "exhaustive":
            with progress_bar(self.verbose, total=m, desc="PrivateGridSearch candidates", unit="cand") as bar:
                def counted(i):
                    out = run(i)
                    bar.update(1)
                    return out

                score, best_i, release = _select_best(counted, range(m))
        else:
            # K (the number of runs) is secret randomness of the mechanism: the bar shows elapsed time only
            with progress_bar(self.verbose, desc="PrivateGridSearch (repeat and select)",
                              bar_format="{desc}: {elapsed}"):
                score, best_i, release = _repeat_and_select(rng, m, mean_runs, run)
        for c in cands:  # the features are a copy of the training rows' image: not kept
            c.features = None
        self.best_score_ = score
        self.candidates_ = shown  # public grid
        self.best_params_ = dict(self.candidates_[best_i])
        self.release_ = release
        self.privacy_ = SelectionPrivacy(
            epsilon=epsilon, delta=delta, strategy=strategy, mu=mu, release_mu=mu_r, score_mu=mu_s,
            score_sigma=score_sigma, mean_runs=int(mean_runs), epsilon_accounted=eps_acc, n_candidates=m,
            n_samples=n, candidate_epsilon=cand_eps, candidate_delta=cand_delta, prior_epsilon=prior_eps,
            class_weight_epsilon=cw_eps, scoring=scoring, score_sensitivity=sens)
        best = cands[best_i]  # its class weights: public (declared, or released privately above; 1 for linear)
        cw_best = best.params.get("class_weight") if best.kind == "kernel" else None
        self.class_weight_ = resolve_class_weight(cw_best, classes_, None, max_class_weight=best.params.get(
            "max_class_weight", DEFAULT_MAX_CLASS_WEIGHT))[0]
        return self

    #: Test hook for deliberately broken copies (the multi-class audit); must stay 1.0.
    _score_sensitivity_factor = 1.0

    #: Fit the kernel logistic candidates that differ only in ``lam``/``C``/``tol`` as one regularisation path
    #: (:func:`dpcore.kernel_learning.svm.fit_logistic_path`; ``"exhaustive"`` only) and share the GP factor of
    #: ``Z`` between the candidates' TDDL releases. ``False`` fits and releases every candidate alone (the old code
    #: path; ``benches/bench_selection.py`` compares both).
    _path_fits = True

    def _fit_paths(self, cands: list, X: np.ndarray, y: np.ndarray) -> tuple:
        """``({candidate index: fitted model}, {candidate index: BatchPredictions of its group})`` for the kernel
        logistic candidates of groups (of at least two) that share every parameter but ``lam``/``C``/``tol``,
        each group fitted by one :func:`~dpcore.kernel_learning.svm.fit_logistic_path` call. The groups are a
        function of the public grid only; a model is certified to its ``tol`` as its own ``fit`` is (the path's
        docstring); the group's clean TDDL predictions ``K(Z, X)μ`` are computed in one kernel pass."""
        if not self._path_fits:
            return {}, {}
        groups: dict = {}
        for i, c in enumerate(cands):
            if c.kind == "kernel" and c.cls is KernelLogisticRegression:
                key = repr(sorted((k, repr(v)) for k, v in c.params.items() if k not in PATH_PARAMS))
                groups.setdefault(key, []).append(i)
        out, batches = {}, {}
        for idx in groups.values():
            if len(idx) < 2:
                continue
            models = fit_logistic_path([cands[i].cls(**cands[i].params) for i in idx], X, y)
            out.update(zip(idx, models))
            batch = BatchPredictions(models)
            batches.update((i, batch) for i in idx)
        return out, batches

    def _declared_classes_lists(self) -> list:
        """Every ``classes`` declared in ``base_params`` or the grid (unvalidated; for routing only)."""
        out = []
        if isinstance(self.base_params, dict) and self.base_params.get("classes") is not None:
            out.append(self.base_params["classes"])
        grids = [self.param_grid] if isinstance(self.param_grid, dict) else (
            self.param_grid if isinstance(self.param_grid, (list, tuple)) else [])
        for g in grids:
            if isinstance(g, dict) and isinstance(g.get("classes"), (list, tuple)):
                out += [c for c in g["classes"] if c is not None]
        return out

    def _is_multiclass(self) -> bool:
        """Route to the K-class selection: a multi-class family in the grid, or ``K >= 3`` declared classes (public
        parameters only)."""
        for c in self._declared_classes_lists():
            try:
                if len(c) >= 3:
                    return True
            except TypeError:
                pass
        if self.param_grid is None:
            return False
        grids = [self.param_grid] if isinstance(self.param_grid, dict) else self.param_grid
        if not isinstance(grids, (list, tuple)):
            return False
        for g in grids:
            if isinstance(g, dict) and isinstance(g.get("estimator"), (list, tuple)):
                for e in g["estimator"]:
                    if (isinstance(e, str) and e in MULTICLASS_ESTIMATORS) or getattr(e, "__name__", None) in \
                            MULTICLASS_ESTIMATORS:
                        return True
        return False

    def _fit_multiclass(self, X: ArrayLike, y: ArrayLike) -> Self:
        """The K-class selection (module docstring, "Multi-class candidates"); everything public is validated and
        every candidate calibrated before the one charge."""
        check_verbose(self.verbose)
        scoring = _check_scoring(self.scoring)
        if scoring != "accuracy":
            raise ValueError(f"scoring={scoring!r} is not available for a multi-class selection (K >= 3 declared "
                             "classes or multi-class candidates): the pair-sum scores and their sensitivity n - 1 are "
                             "defined for two classes only and no K-class proof is implemented; use "
                             "scoring='accuracy' (the count of correct labels, sensitivity 1 whatever K)")
        if isinstance(self.class_weight, str):
            raise ValueError("class_weight='balanced' is not available for a multi-class selection (the private class "
                             "weights are released for the binary candidates only); declare a public dict "
                             "{class: weight} or release the weights yourself with dpcore.private_class_weights")
        if self.class_weight is not None and not isinstance(self.class_weight, dict):
            raise TypeError(f"class_weight must be None, 'balanced' or a dict, got {type(self.class_weight).__name__}")
        raw = None if self.param_grid is None else [_resolve_estimator(c) for c in self._candidates()]
        if raw is not None:
            binary = sorted({cls.__name__ for kind, cls, _ in raw if not kind.startswith("mc_")})
            if binary:
                raise ValueError(f"param_grid: {binary} are binary models and cannot be candidates of a multi-class "
                                 f"selection (K >= 3 declared classes or multi-class candidates); use "
                                 f"{MULTICLASS_ESTIMATORS}")
            for kind, cls, p in raw:
                if kind == "mc_kernel" and "feature_map" in p:
                    raise ValueError("param_grid: feature_map applies to the linear candidates only")
                if kind == "mc_linear":
                    _check_linear_params(cls, {k: v for k, v in p.items() if k != "feature_map"})
        m = len(AUTO_GRID_FACTORS) + 1 if raw is None else len(raw)
        epsilon, delta, strategy, mean_runs = self._check_budget_params(m)
        if self.base_params is not None and not isinstance(self.base_params, dict):
            raise TypeError(f"base_params must be a dict of MulticlassKernelLogisticRegression parameters or None, "
                            f"got {type(self.base_params).__name__}")
        if self.accountant is not None and not callable(getattr(self.accountant, "spend", None)):
            raise TypeError(f"accountant must be a dpcore.BudgetAccountant or None, got {type(self.accountant).__name__}")
        radius = check_scale(self.data_norm, "data_norm")
        X = check_array(X, "X")
        n, d = X.shape
        Z = check_in_domain(check_array(self.Z, "Z", n_features=d, estimator="X (the training rows)"),
                            radius, "Z", clip=False)
        X = check_in_domain(X, radius, "X", clip=False)
        base = {"kernel": "rbf", "tol": 1e-8} if self.base_params is None else dict(self.base_params)
        if self.class_weight is not None:
            base = dict(base, class_weight=self.class_weight, max_class_weight=check_max_class_weight(
                self.max_class_weight))
        if "classes" not in base and raw is None:
            raise ValueError("base_params['classes']: a multi-class selection needs the declared label set, e.g. "
                             "base_params={'classes': [0, 1, 2], ...}")
        rng = check_random_state(self.random_state)
        # -- calibration (public): every run μ-GDP; no class proportion is released for K classes
        mu = selection_mu(epsilon, delta, n_candidates=m, strategy=strategy, mean_runs=mean_runs) * (1.0 - 1e-6)
        eps_acc = selection_epsilon(mu, delta, n_candidates=m, strategy=strategy, mean_runs=mean_runs)
        mu_s = mu * math.sqrt(float(self.score_share))
        mu_r = math.sqrt(mu * mu - mu_s * mu_s)
        cand_delta = 1e-10
        cand_eps = _gdp_epsilon(mu_r * 0.999, cand_delta)
        sens = score_sensitivity("accuracy", n) * self._score_sensitivity_factor
        score_sigma = _representable_sigma(sens, mu_s)
        MOP = _multiclass_output_perturbation()
        if raw is None:  # the data-independent K-class grid: multiclass_auto_lam's rule at μ_r, plus one linear model
            probe = MulticlassKernelLogisticRegression(**{k: v for k, v in base.items() if k != "estimator"})
            kname, kgamma, kdegree, kcoef0 = check_kernel_params(probe.kernel, probe.gamma, probe.degree,
                                                                probe.coef0, d)
            classes_ = check_multiclass_classes(base["classes"], "base_params['classes']")
            w_max = float(probe._class_weights(classes_).max())
            r2 = feature_radius_sq(radius, kname, kgamma, kdegree, kcoef0, n_features=d,
                                   intercept_scaling=check_intercept_scaling(probe.intercept_scaling))
            c0 = auto_C_for_mu(mu_r, r2, math.sqrt(2.0) * w_max, loss="multinomial")
            r2_lin = feature_radius_sq(radius, "linear", None, 3, 0.0, intercept_scaling=DEFAULT_INTERCEPT_SCALING)
            c_lin = auto_C_for_mu(mu_r, r2_lin, math.sqrt(2.0) * w_max, loss="multinomial")
            raw = [("mc_kernel", MulticlassKernelLogisticRegression, {"lam": 1.0 / (n * c0 * f)})
                   for f in AUTO_GRID_FACTORS]
            raw.append(("mc_linear", MOP, {"lam": 1.0 / (n * c_lin)}))
            public_keys = {"estimator", "lam"}
        else:
            public_keys = set().union(*(set(g) for g in ([self.param_grid] if isinstance(self.param_grid, dict)
                                                           else self.param_grid)))
        shown = [{k: (cls.__name__ if k == "estimator" else v) for k, v in dict(p, estimator=cls).items()
                  if k in public_keys} for _, cls, p in raw]
        cands = []
        for kind, cls, p in raw:
            if kind == "mc_kernel":
                cands.append(_Candidate(kind, cls, dict(base, **p), None))
            else:
                q = dict(LINEAR_DEFAULTS, **{k: base[k] for k in ("classes", "class_weight", "max_class_weight")
                                             if k in base})
                q.pop("loss")  # the multinomial model's own default loss ("multinomial")
                q.update({k: v for k, v in p.items() if k != "feature_map"})
                cands.append(_Candidate(kind, cls, _check_linear_params(cls, q), p.get("feature_map")))
        # one declared label set (K >= 2 labels, sorted) for every candidate; y's labels checked against it
        sets = []
        for c in cands:
            declared = c.params.get("classes")
            if declared is None:
                raise ValueError(f"classes: every candidate of a multi-class selection must declare its label set "
                                 f"({c.cls.__name__} has none); set base_params['classes']")
            sets.append(check_multiclass_classes(declared, "classes"))
        for other in sets[1:]:
            if not np.array_equal(other, sets[0]):
                raise ValueError(f"param_grid: every candidate must declare the same classes, got "
                                 f"{sets[0].tolist()!r} and {other.tolist()!r}")
        classes_, idx = encode_multiclass_labels(y, sets[0].tolist(), n)
        K = classes_.shape[0]
        y = classes_[idx]
        for i, c in enumerate(cands):
            if c.kind == "mc_kernel":
                c.params = _multiclass_certifiable(c.params, X, radius, classes_)
                cal = MulticlassTDDL(_multiclass_stand_in(c.params, X, classes_), cand_eps, cand_delta,
                                     data_norm=radius).prepare(Z)["cal"]
                _check_multiclass_candidate_gdp(cal, mu_r)
            else:
                c.feature_map, F = _fit_feature_map(c.feature_map, X, i)
                c.features = F
                glm = c.cls(**dict(c.params, epsilon=cand_eps, delta=cand_delta,
                                   data_norm=radius if c.feature_map is None else RFF_FEATURE_NORM))
                w_lin = multiclass_class_weights(glm.class_weight, classes_, glm.max_class_weight)
                cal = glm._calibrate(n, F.shape[1], K, float(w_lin.max()))
                _check_linear_domain(F, glm)
                _check_multiclass_linear_gdp(cal, mu_r)
                c.params = glm.get_params()
        self.dp_event_ = _selection_event(mu, strategy, m, mean_runs, 0.0)
        if self.accountant is not None:
            self.accountant.spend(epsilon, delta, event=self.dp_event_,
                                  label=f"PrivateGridSearch({m} multi-class candidates, {strategy}, accuracy)")
        logger.info("PrivateGridSearch: charged (epsilon=%.6g, delta=%.3g) for %d multi-class candidates (%s, K=%d)",
                    epsilon, delta, m, strategy, K)

        def run(i):
            c = cands[i]
            if c.kind == "mc_kernel":
                model = c.cls(**c.params).fit(X, y)
                rel = MulticlassTDDL(model, cand_eps, cand_delta, data_norm=radius, random_state=rng)
                _check_multiclass_candidate_gdp(rel.prepare(Z)["cal"], mu_r)
                release = rel.fit(Z)
                pred = release.predict(X)
            else:
                glm = c.cls(**dict(c.params, random_state=rng)).fit(c.features, y)
                _check_multiclass_linear_gdp(glm.privacy_, mu_r)
                pred = glm.predict(c.features)
                release = glm if c.feature_map is None else MappedLinearModel(c.feature_map, glm)
            return _noisy_score(multiclass_accuracy(pred, y), score_sigma, rng), release

        if strategy == "exhaustive":
            with progress_bar(self.verbose, total=m, desc="PrivateGridSearch candidates", unit="cand") as bar:
                def counted(i):
                    out = run(i)
                    bar.update(1)
                    return out

                score, best_i, release = _select_best(counted, range(m))
        else:
            with progress_bar(self.verbose, desc="PrivateGridSearch (repeat and select)",
                              bar_format="{desc}: {elapsed}"):
                score, best_i, release = _repeat_and_select(rng, m, mean_runs, run)
        for c in cands:
            c.features = None
        self.best_score_ = score
        self.candidates_ = shown
        self.best_params_ = dict(self.candidates_[best_i])
        self.release_ = release
        self.classes_ = classes_
        self.privacy_ = SelectionPrivacy(
            epsilon=epsilon, delta=delta, strategy=strategy, mu=mu, release_mu=mu_r, score_mu=mu_s,
            score_sigma=score_sigma, mean_runs=int(mean_runs), epsilon_accounted=eps_acc, n_candidates=m,
            n_samples=n, candidate_epsilon=cand_eps, candidate_delta=cand_delta, prior_epsilon=0.0,
            class_weight_epsilon=0.0, scoring="accuracy", score_sensitivity=sens)
        best = cands[best_i]
        self.class_weight_ = dict(zip(classes_.tolist(), multiclass_class_weights(
            best.params.get("class_weight"), classes_, best.params.get("max_class_weight", DEFAULT_MAX_CLASS_WEIGHT)
        ).tolist()))
        return self

    def _check_budget_params(self, m: int) -> tuple:
        """``(epsilon, delta, strategy, mean_runs)`` validated for ``m`` candidates, and the two shares (public
        parameters only; shared by the binary and the K-class selection)."""
        epsilon = check_epsilon(self.epsilon)
        if epsilon > MAX_EPSILON:
            raise ValueError(f"epsilon must be at most {MAX_EPSILON:g} (MAX_EPSILON), got {epsilon!r}")
        delta = check_delta(self.delta, allow_zero=False)
        strategy = self.strategy
        mean_runs = m if self.mean_runs is None else self.mean_runs
        _check_strategy(strategy, m, mean_runs)
        for name in ("score_share", "prior_epsilon_share"):
            v = getattr(self, name)
            interval = "(0, 1)" if name == "score_share" else "[0, 1)"
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise TypeError(f"{name} must be a real number in {interval}, got {type(v).__name__}")
            lo_ok = v > 0.0 if name == "score_share" else v >= 0.0
            if not (lo_ok and v < 1.0):
                raise ValueError(f"{name} must lie in {interval}, got {v!r:.40}")
        return epsilon, delta, strategy, mean_runs

    def _check_fitted(self) -> None:
        if not hasattr(self, "release_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call fit first.")

    @overload
    def predict(self, X: DaskArrayLike) -> DaskArray: ...
    @overload
    def predict(self, X: ArrayLike) -> NDArray[Any]: ...
    def predict(self, X: ArrayLike | DaskArrayLike) -> NDArray[Any] | DaskArray:
        """Class labels of the selected private release (post-processing; lazy on a Dask ``X``)."""
        self._check_fitted()
        return self.release_.predict(X)

    @overload
    def decision_function(self, X: DaskArrayLike) -> DaskArray: ...
    @overload
    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]: ...
    def decision_function(self, X: ArrayLike | DaskArrayLike) -> NDArray[np.float64] | DaskArray:
        """Decision values of the selected private release (post-processing; lazy on a Dask ``X``)."""
        self._check_fitted()
        return self.release_.decision_function(X)

    def score(self, X: ArrayLike | DaskArrayLike, y: ArrayLike | DaskArrayLike) -> float:
        """Mean accuracy of the selected private release on ``(X, y)`` (post-processing; Dask inputs accepted)."""
        self._check_fitted()
        return self.release_.score(X, y)


def _check_candidate_gdp(cal, mu_r: float) -> None:
    """The candidate release's two Gaussian stages together are at most ``mu_r``-GDP (public numbers)."""
    mu_c = math.hypot(cal.weight_sensitivity / cal.noise_scale, 2.0 * cal.gp_residual_bound / cal.gp_residual_sigma)
    if not mu_c <= mu_r:  # cannot happen with the 0.999 margin
        raise RuntimeError(f"candidate release is {mu_c:.6g}-GDP > {mu_r:.6g}")


def _representable_sigma(sensitivity: float, mu_s: float) -> float:
    sigma = sensitivity / mu_s
    if not (math.isfinite(sigma) and sigma > 0.0 and math.isfinite(math.log2(sigma))):
        raise ValueError(f"epsilon: the score noise sigma = sensitivity/mu_s = {sigma!r} is not representable; "
                         "use a larger epsilon or score_share")
    return sigma


class _Candidate:
    """One candidate: its family (``"kernel"`` / ``"linear"``), estimator class, full parameters, public feature
    map (linear only) and, during ``fit`` only, the training rows' features."""

    def __init__(self, kind: str, cls: type, params: dict, feature_map) -> None:
        self.kind, self.cls, self.params, self.feature_map = kind, cls, params, feature_map
        self.features = None


def _output_perturbation() -> type:
    # dpcore.glm sits above dpcore.kernel_learning (glm._solver uses KernelSVM): imported where needed
    from dpcore.glm.perturbation import OutputPerturbation
    return OutputPerturbation


def _multiclass_output_perturbation() -> type:
    from dpcore.glm.multiclass import MulticlassOutputPerturbation
    return MulticlassOutputPerturbation


def _resolve_estimator(params: dict) -> tuple:
    """``(kind, class, params without "estimator")`` of one grid entry; the estimator is a class or its name."""
    spec = params.get("estimator", KernelSVM)
    rest = {k: v for k, v in params.items() if k != "estimator"}
    kernels = {"KernelSVM": KernelSVM, "KernelLogisticRegression": KernelLogisticRegression}
    linear = {"OutputPerturbation": _output_perturbation()}
    mc_kernels = {"MulticlassKernelLogisticRegression": MulticlassKernelLogisticRegression}
    mc_linear = {"MulticlassOutputPerturbation": _multiclass_output_perturbation()}
    for table, kind in ((kernels, "kernel"), (linear, "linear"), (mc_kernels, "mc_kernel"), (mc_linear, "mc_linear")):
        for name, cls in table.items():
            if spec is cls or (isinstance(spec, str) and spec == name):
                return kind, cls, rest
    if (isinstance(spec, str) and spec == "ObjectivePerturbation") or getattr(spec, "__name__", None) == \
            "ObjectivePerturbation":
        raise ValueError("param_grid['estimator']: ObjectivePerturbation cannot be a candidate: its (ε, δ) guarantee "
                         "is not a Gaussian-DP curve, so its runs do not compose in the selection's GDP accounting; "
                         "use 'OutputPerturbation' (Gaussian output noise, exactly μ-GDP)")
    raise ValueError(f"param_grid['estimator'] must be one of {KERNEL_ESTIMATORS + LINEAR_ESTIMATORS} or, for K >= 3 "
                     f"declared classes, {MULTICLASS_ESTIMATORS} (a name or "
                     f"the class), got {spec!r:.60}")


def _check_linear_params(cls: type, params: dict) -> dict:
    """A linear candidate's parameters: known to ``cls``, none of the reserved ones, ``noise`` Gaussian."""
    reserved = sorted(k for k in params if k in _LINEAR_RESERVED)
    if reserved:
        raise ValueError(f"param_grid: {reserved} of a linear candidate are set by PrivateGridSearch (its share of "
                         "the budget, the declared data_norm, Gaussian noise, the randomness); remove them")
    known = set(cls._get_param_names())
    unknown = sorted(k for k in params if k not in known)
    if unknown:
        raise ValueError(f"param_grid: {unknown} are not parameters of {cls.__name__} (a linear candidate; "
                         "class_weight applies to the kernel candidates only)")
    return dict(params)


#: Public bound on the norm of a :class:`dpcore.RandomFourierFeatures` row (``κ = 1``; the GLM accepts computed
#: norms up to a relative ``RADIUS_TOL`` above it).
RFF_FEATURE_NORM = 1.0


def _fit_feature_map(feature_map, X: np.ndarray, i: int):
    """``(fitted map or None, features of X)``: ``None`` (the identity) or a :class:`dpcore.RandomFourierFeatures`
    (its public weights are drawn from its own ``random_state``, reading X's shape only; a fitted one is used as
    is)."""
    if feature_map is None:
        return None, X
    from sklearn.base import clone

    from dpcore.kernels.random_features import RandomFourierFeatures
    if not isinstance(feature_map, RandomFourierFeatures):
        raise ValueError(f"param_grid['feature_map'] (candidate {i}) must be None or a dpcore.RandomFourierFeatures, "
                         f"got {type(feature_map).__name__}")
    if hasattr(feature_map, "random_weights_"):
        if feature_map.n_features_in_ != X.shape[1]:
            raise ValueError(f"param_grid['feature_map'] (candidate {i}) was fitted on {feature_map.n_features_in_} "
                             f"features, X has {X.shape[1]}")
        fm = feature_map
    else:
        # an unfitted copy with the declared seed, on every call (pinned in case RandomFourierFeatures ever takes
        # the per-clone seeds of dpcore._internal.cloning; today its clone copies an int as it is)
        fm = clone(feature_map).set_params(random_state=feature_map.random_state).fit(X[:1])
    return fm, np.ascontiguousarray(fm.transform(X))


def _check_linear_gdp(cal, mu_r: float) -> None:
    """The Output-Gauss release (one Gaussian mechanism on the float minimiser) is at most ``mu_r``-GDP."""
    if not (cal.mechanism == "output" and cal.noise == "gaussian"):
        raise RuntimeError("a linear candidate must be Output-Gauss")
    mu_c = cal.residual_sensitivity / cal.release_scale
    if not mu_c <= mu_r:  # cannot happen with the 0.999 margin
        raise RuntimeError(f"linear candidate release is {mu_c:.6g}-GDP > {mu_r:.6g}")


class MappedLinearModel:
    """A selected linear candidate: ``model`` applied to ``feature_map.transform(X)``, its decision values shifted
    by ``offset``.

    Both parts are public or private releases (the map's weights are drawn independently of the data;
    ``feature_map=None`` is the identity). ``offset`` is public (the prior correction ``log(w₊/w₋)`` of public class
    weights, see :class:`PrivateGridSearch`): labels are ``classes_[1]`` where the shifted value is ``> 0``.

    Examples
    --------
    See :class:`PrivateGridSearch` (``release_`` when a linear candidate on random features is selected).
    """

    def __init__(self, feature_map: Any, model: Any, *, offset: float = 0.0) -> None:
        self.feature_map = feature_map
        self.model = model
        self.offset = float(offset)
        self.classes_ = model.classes_

    def _map(self, X: ArrayLike) -> Any:
        return X if self.feature_map is None else self.feature_map.transform(X)

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Decision values of the linear model on the mapped rows, plus ``offset``."""
        return np.asarray(self.model.decision_function(self._map(X)), dtype=np.float64) + self.offset

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Class labels: ``classes_[1]`` where the shifted decision value is positive."""
        if self.offset == 0.0:
            return np.asarray(self.model.predict(self._map(X)))
        return np.asarray(self.classes_)[(self.decision_function(X) > 0).astype(np.intp)]

    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """Mean accuracy on ``(X, y)``."""
        return float(np.mean(self.predict(X) == np.asarray(y)))


def _common_classes(cands: list, y) -> np.ndarray:
    """The declared label set (sorted, ``dpcore._internal.labels``) shared by every ``(class, params)``;
    ``classes=None`` is the default rule, whose ``classes_`` follows the dtype of ``y`` only (never its values)."""
    dtype = np.asarray(y).dtype
    sets = [default_classes(dtype) if cls(**p).classes is None else check_classes(cls(**p).classes) for cls, p in cands]
    for s in sets[1:]:
        if not np.array_equal(s, sets[0]):
            raise ValueError(f"param_grid: every candidate must declare the same classes, got {sets[0].tolist()!r} "
                             f"and {s.tolist()!r}")
    return sets[0]


def _public_lipschitz(cls: type, params: dict, classes_: np.ndarray) -> float:
    """``max_k w_k`` of a candidate's declared class weights; ``"balanced"`` (read off the data) is refused."""
    probe = cls(**params)
    cw, public, _, w_max = resolve_class_weight(probe.class_weight, classes_, None,
                                                max_class_weight=probe.max_class_weight)
    if not public:
        raise ValueError("param_grid/base_params: class_weight='balanced' computes the weights from the training "
                         "labels (every record), which no privacy proof covers; PrivateGridSearch refuses before "
                         "anything is charged. Use PrivateGridSearch(class_weight='balanced') to release them "
                         "privately, or declare a dict")
    return float(w_max)


def _public_stand_in(cls: type, params: dict, X: np.ndarray, *, lipschitz: float = 1.0) -> KernelSVM:
    """A :class:`KernelSVM` with ``params`` carrying only what :meth:`TDDL.prepare` checks before any noise: the
    declared parameters (validated as ``KernelSVM.fit`` validates them, with its overflow check of ``X``), the
    validated ``X`` (shape and domain) and no solution (``mu_ = 0``, certificate 0, ``lipschitz_ = 1`` as
    ``KernelSVM.fit`` sets it). The TDDL calibration is a function of these public quantities only."""
    model = cls(**params)
    n, d = X.shape
    lam, _, _, _, name, gamma, degree, coef0 = model._validate_params(d, n)
    b = check_intercept_scaling(model.intercept_scaling)
    check_kernel_domain(X, "X", name, gamma, degree, coef0, n_terms=n, intercept_scaling=b)
    model.X_fit_, model.mu_, model.n_samples_fit_, model.lam_ = X, np.zeros(n), n, lam
    model.lipschitz_, model.w_error_bound_ = float(lipschitz), 0.0
    model.kernel_params_ = {"kernel": name, "gamma": gamma, "degree": degree, "coef0": coef0,
                            "intercept_scaling": b}
    return model


def _certifiable(cls: type, params: dict, radius: float, n_features: int, *, lipschitz: float = 1.0,
                 n_samples: int) -> dict:
    """``params`` with ``tol`` raised to ``4·KERNEL_SUM_REL_ERROR·R_φ²·L²/λ`` where needed, or set to it for
    ``tol="auto"`` (public: ``R_φ²`` of the declared ``data_norm``, ``L`` the largest class weight).

    Also refuses, naming the parameters, what would fail only after the charge: kernel parameters whose public
    constants overflow (``gamma·(2·data_norm)²``, ``R_φ²``), and a tolerance (raised or declared) ``≥ 1`` — the
    hinge loss's duality gap at ``w = 0`` on every dataset, so the solver would stop at the zero model.
    """
    probe = cls(**params)
    lam = resolve_lam(probe.lam, probe.C, n_samples)
    tol = check_tol(probe.tol, "tol")
    coef0 = probe.coef0
    if isinstance(coef0, numbers.Real) and not isinstance(coef0, bool):
        try:
            float(coef0)
        except OverflowError:
            raise ValueError(f"coef0 must be finite, got a number too large for a float64 ({coef0!r:.40})") from None
    name, gamma, degree, coef0 = check_kernel_params(probe.kernel, probe.gamma, probe.degree, probe.coef0, n_features)
    if name != "linear" and not math.isfinite(gamma * 4.0 * radius * radius):
        raise ValueError(f"gamma={gamma!r}: gamma·(2·data_norm)² overflows float64 (kernel values of the declared "
                         "domain cannot be computed); use a smaller gamma")
    try:
        r2 = feature_radius_sq(radius, name, gamma, degree, coef0, n_features=n_features,
                               intercept_scaling=check_intercept_scaling(probe.intercept_scaling))
    except ValueError as exc:
        raise ValueError(f"degree, gamma, coef0: {exc}") from None
    if not (math.isfinite(r2) and r2 > 0.0):
        raise ValueError(f"degree, gamma, coef0: the feature-map radius R_phi² = {r2!r} of the declared domain is "
                         "not a positive finite float")
    # twice the smallest tolerance TDDL accepts (auto_tol of the floor): headroom for its R_phi² at data_norm·(1 +
    # RADIUS_TOL); tol="auto" is this value for the declared data_norm, a declared float is raised to it
    floor = 2.0 * auto_tol(kernel_gap_floor(lam, r2, lipschitz))
    if tol == "auto":  # the hinge's dual coordinate descent: at least HINGE_AUTO_TOL_MIN (degenerate problems)
        tol = max(floor, HINGE_AUTO_TOL_MIN) if getattr(cls, "_loss", "") == "hinge" else floor
    tol = max(tol, floor)
    if not tol < 1.0:
        raise ValueError(f"tol: the candidate's solver tolerance {tol:.3g} (declared, or raised to the certifiable "
                         f"floor 4·KERNEL_SUM_REL_ERROR·R_phi²/lam = {floor:.3g}) is >= 1, the duality gap of the zero "
                         "model on every dataset: nothing would be learnt; use a smaller tol, a larger lam or "
                         "smaller gamma/coef0/degree")
    return dict(params, tol=tol)


def _gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest ε with ``δ_μ(ε) ≤ delta`` for ``μ``-GDP (the analytic Gaussian curve with Δ/σ = μ)."""

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


def multiclass_accuracy(predicted: ArrayLike, y: ArrayLike) -> float:
    """The multi-class selection's score statistic: the mean accuracy ``a = (1/n)·#{i: ŷ_i = y_i}`` on the training
    rows, for predictions ``ŷ`` of a candidate's release.

    *Sensitivity* (replace-one, given the release): the count ``#{i: ŷ_i = y_i}`` is a sum of one term in
    ``{0, 1}`` per record, each a function of its own record only (``ŷ_i = r(x_i)`` for the fixed release ``r``);
    replacing record ``k`` changes term ``k`` only, so the count moves by at most 1 **whatever the number of classes
    K** and ``a`` by ``1/n`` (``n`` is public under replace-one). Attained: a record every candidate classifies
    correctly replaced by one with a label no candidate predicts.

    Examples
    --------
    >>> from dpcore.kernel_learning.selection import multiclass_accuracy
    >>> multiclass_accuracy(["a", "b", "c", "a"], ["a", "b", "b", "a"])
    0.75
    """
    p, t = np.asarray(predicted), np.asarray(y)
    if p.shape != t.shape or p.ndim != 1:
        raise ValueError(f"predicted and y must be 1-D arrays of one length, got shapes {p.shape} and {t.shape}")
    return float(np.count_nonzero(p == t)) / max(int(t.shape[0]), 1)


def _multiclass_certifiable(params: dict, X: np.ndarray, radius: float, classes_: np.ndarray) -> dict:
    """Validate a K-class kernel candidate's declared parameters as :meth:`MulticlassKernelLogisticRegression.fit`
    does (before any charge) and raise ``tol`` to :func:`~dpcore.kernel_learning.multiclass_release.multiclass_min_tol`
    on the declared domain where needed (public numbers only)."""
    probe = MulticlassKernelLogisticRegression(**params)
    n, d = X.shape
    lam = resolve_lam(probe.lam, probe.C, n)
    tol = check_tol(probe.tol, "tol")
    check_positive(probe.cache_size, "cache_size")
    max_iter = 200 if probe.max_iter is None else probe.max_iter
    if isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be an integer >= 1 or None, got {probe.max_iter!r}")
    name, gamma, degree, coef0 = check_kernel_params(probe.kernel, probe.gamma, probe.degree, probe.coef0, d)
    b = check_intercept_scaling(probe.intercept_scaling)
    w_max = float(probe._class_weights(classes_).max())
    check_kernel_domain(X, "X", name, gamma, degree, coef0, n_terms=n, intercept_scaling=b)
    try:
        r2 = feature_radius_sq(radius, name, gamma, degree, coef0, n_features=d, intercept_scaling=b)
    except ValueError as exc:
        raise ValueError(f"degree, gamma, coef0: {exc}") from None
    if not (math.isfinite(r2) and r2 > 0.0):
        raise ValueError(f"degree, gamma, coef0: the feature-map radius R_phi'² = {r2!r} of the declared domain is "
                         "not a positive finite float")
    floor = multiclass_min_tol(lam, int(classes_.shape[0]), r2 * (1.0 + 1e-9), max_class_weight=max(1.0, w_max))
    tol = 2.0 * floor if tol == "auto" else max(tol, floor)  # "auto": twice the release's floor (headroom)
    if not tol < 1.0:
        raise ValueError(f"tol: the candidate's solver tolerance {tol:.3g} (declared, or raised to the certifiable "
                         "floor) is >= 1: nothing would be learnt; use a smaller tol or a larger lam")
    return dict(params, tol=tol)


class _MulticlassStandIn:
    """What :meth:`MulticlassTDDL.prepare` reads of a K-class model, from public inputs only: the declared
    parameters, the validated ``X`` and no solution (``mu_ = 0``, certificate 0)."""

    _multiclass_stand_in = True


def _multiclass_stand_in(params: dict, X: np.ndarray, classes_: np.ndarray) -> _MulticlassStandIn:
    probe = MulticlassKernelLogisticRegression(**params)
    n, d = X.shape
    name, gamma, degree, coef0 = check_kernel_params(probe.kernel, probe.gamma, probe.degree, probe.coef0, d)
    s = _MulticlassStandIn()
    s.X_fit_, s.n_samples_fit_ = X, n
    s.lam = s.lam_ = resolve_lam(probe.lam, probe.C, n)
    s.tol = s.tol_ = float(probe.tol)  # resolved by _multiclass_certifiable (a float)
    s.mu_ = np.zeros((n, int(classes_.shape[0])))
    s.lipschitz_ = math.sqrt(2.0) * float(probe._class_weights(classes_).max())
    s.kernel_params_ = {"kernel": name, "gamma": gamma, "degree": degree, "coef0": coef0,
                        "intercept_scaling": check_intercept_scaling(probe.intercept_scaling)}
    s.classes_, s.w_error_bound_ = classes_, 0.0
    return s


def _check_multiclass_candidate_gdp(cal, mu_r: float) -> None:
    """The joint K-class release's two Gaussian stages together are at most ``mu_r``-GDP (public numbers)."""
    mu_c = math.hypot(cal.sensitivity / cal.noise_scale, 2.0 * cal.gp_residual_bound / cal.gp_residual_sigma)
    if not mu_c <= mu_r:  # cannot happen with the 0.999 margin
        raise RuntimeError(f"multi-class candidate release is {mu_c:.6g}-GDP > {mu_r:.6g}")


def _check_multiclass_linear_gdp(cal, mu_r: float) -> None:
    """The K-class Output-Gauss release (one Gaussian mechanism on the K × p weights) is at most ``mu_r``-GDP."""
    mu_c = cal.sensitivity / cal.noise_scale
    if not mu_c <= mu_r:  # cannot happen with the 0.999 margin
        raise RuntimeError(f"multi-class linear candidate release is {mu_c:.6g}-GDP > {mu_r:.6g}")


def _check_linear_domain(F: np.ndarray, glm) -> None:
    """Refuse, before any charge, features outside the linear candidate's declared ball (its ``fit``'s own check)."""
    from dpcore.glm._data import project_rows
    project_rows(np.asarray(F, dtype=np.float64), data_norm=float(glm.data_norm), clip=bool(glm.clip))

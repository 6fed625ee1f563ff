"""Private selection across families, scored on AUC / balanced accuracy (issue 23, item 4)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcore
from dpcore import BudgetAccountant
from dpcore.audit import audit
from dpcore.kernel_learning.selection import (
    PrivateGridSearch, _noisy_score, _select_best, score_sensitivity, selection_mu, twice_pair_score,
)


# -- the two pair-sum scores: exact identities and sensitivity n − 1 (brute force, exact integers) ---------------
def _brute(values, labels, threshold):
    """``2·S_auc`` and ``2·S_bal`` over every (positive, negative) pair, and the normalised metrics (Fractions)."""
    P = [i for i, l in enumerate(labels) if l]
    N = [j for j, l in enumerate(labels) if not l]
    s_auc = sum(2 * (values[i] > values[j]) + (values[i] == values[j]) for i in P for j in N)
    s_bal = sum((values[i] > threshold) + (values[j] <= threshold) for i in P for j in N)  # 2·½[...]
    return s_auc, s_bal, P, N


def _fast(values, labels, threshold):
    v, pos = np.asarray(values, dtype=float), np.asarray(labels, dtype=bool)
    return (twice_pair_score("roc_auc", pos, decision=v),
            twice_pair_score("balanced_accuracy", pos, predicted_positive=v > threshold))


_rows = st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=9)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(rows=_rows, new=st.tuples(st.integers(0, 3), st.booleans()), k=st.integers(0, 8), threshold=st.integers(0, 3))
def test_pair_scores_are_exact_and_have_sensitivity_n_minus_1(rows, new, k, threshold):
    values, labels = [r[0] for r in rows], [r[1] for r in rows]
    n = len(rows)
    a_auc, a_bal, P, N = _brute(values, labels, threshold)
    assert _fast(values, labels, threshold) == (a_auc, a_bal)
    if P and N:  # S = n₊n₋ · metric exactly (the normaliser is never released)
        auc = Fraction(sum(Fraction(2 * (values[i] > values[j]) + (values[i] == values[j]), 2)
                           for i in P for j in N), len(P) * len(N))
        tp = sum(values[i] > threshold for i in P)
        tn = sum(values[j] <= threshold for j in N)
        bal = (Fraction(tp, len(P)) + Fraction(tn, len(N))) / 2
        assert Fraction(a_auc, 2) == len(P) * len(N) * auc
        assert Fraction(a_bal, 2) == len(P) * len(N) * bal
    # the neighbour: row k (mod n) replaced by any (value, label)
    k %= n
    v2, l2 = list(values), list(labels)
    v2[k], l2[k] = new
    b_auc, b_bal, _, _ = _brute(v2, l2, threshold)
    assert _fast(v2, l2, threshold) == (b_auc, b_bal)
    bound = 2 * score_sensitivity("roc_auc", n)  # on 2·S
    assert score_sensitivity("balanced_accuracy", n) == score_sensitivity("roc_auc", n) == max(n - 1, 1)
    assert abs(a_auc - b_auc) <= bound and abs(a_bal - b_bal) <= bound


def test_sensitivity_n_minus_1_is_attained():
    # one top-scored positive among n − 1 negatives, replaced by a negative: S_auc goes from n − 1 to 0
    n = 7
    v = [9.0] + [0.0] * (n - 1)
    assert twice_pair_score("roc_auc", np.array([1] + [0] * (n - 1), bool), decision=np.array(v)) == 2 * (n - 1)
    assert twice_pair_score("roc_auc", np.zeros(n, bool), decision=np.array(v)) == 0
    assert twice_pair_score("balanced_accuracy", np.ones(n, bool), predicted_positive=np.ones(n, bool)) == 0


# -- empirical audit of the selection layer with the AUC score ----------------------------------------------------
# Worst-case neighbours (D: one positive scored above n − 1 negatives by every candidate; D': that row replaced by
# a negative): every candidate's S_auc moves by the full sensitivity n − 1. The statistic is computed by the real
# scoring code (twice_pair_score), the noise by _noisy_score and the arg-max by _select_best; output = the released
# best score. A broken copy calibrates the AUC noise with sensitivity 1 (as for a count) instead of n − 1.
_N, _MC = 6, 3


def _auc_selection_sampler(mu, sensitivity):
    decision = np.array([1.0] + [0.0] * (_N - 1))

    def sampler(pos_first, n, seed):
        rng = dpcore.mechanisms.noise.check_random_state(seed)
        labels = np.array([pos_first] + [False] * (_N - 1))
        value = 0.5 * twice_pair_score("roc_auc", labels, decision=decision)
        sigma = sensitivity / mu

        def run(i):
            return _noisy_score(value, sigma, rng), None

        return np.array([_select_best(run, range(_MC))[0] for _ in range(n)])
    return sampler


def test_audit_auc_selection_and_catch_sensitivity_one():
    eps, delta = 1.0, 1e-6
    mu = selection_mu(eps, delta, n_candidates=_MC)
    sens = score_sensitivity("roc_auc", _N)
    assert sens == _N - 1
    thresholds = np.linspace(0.0, 5.0, 11) * sens / mu  # fixed before sampling (multiples of the score's σ)
    res = audit(_auc_selection_sampler(mu, sens), True, False, n_samples=200_000, thresholds=thresholds,
                delta=delta, random_state=41)
    res.assert_private(eps)
    broken = audit(_auc_selection_sampler(mu, 1.0), True, False, n_samples=200_000,
                   thresholds=np.linspace(0.0, 5.0, 11) / mu, delta=delta, random_state=42)
    assert broken.epsilon_lower_bound > eps, str(broken)


# -- the estimator across families ------------------------------------------------------------------------------
def _linear_task(n, seed, d=30):
    """Linearly separable, high-dimensional, small n (about 29 % positive)."""
    rng = np.random.default_rng(seed)
    w = np.random.default_rng(99).normal(size=d)
    w /= np.linalg.norm(w)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1)[:, None] * 1.0001
    return X, np.where(X @ w > 0.1, 1, -1)


def _xor(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None] * 1.0001
    return X, np.where(X[:, 0] * X[:, 1] > 0, 1, -1)


def _auc(y, f):
    from sklearn.metrics import roc_auc_score
    return roc_auc_score(y, f)


def test_default_grid_picks_the_linear_candidate_on_a_linear_task():
    X, y = _linear_task(1500, 0)
    Z, Xt, yt = _linear_task(200, 1)[0], *_linear_task(3000, 2)
    acc = BudgetAccountant(2.0, 1e-6, accounting="basic")
    g = PrivateGridSearch(None, 2.0, 1e-6, Z=Z, data_norm=1.0, base_params={"kernel": "rbf", "gamma": 1.0,
                          "tol": 1e-6}, scoring="roc_auc", random_state=0, accountant=acc).fit(X, y)
    assert acc.spent == pytest.approx((2.0, 1e-6)) and len(acc) == 1
    assert g.best_params_["estimator"] == "OutputPerturbation"
    assert isinstance(g.release_, dpcore.OutputPerturbation)
    assert g.privacy_.scoring == "roc_auc" and g.privacy_.score_sensitivity == 1499
    assert g.privacy_.score_sigma == pytest.approx(1499 / g.privacy_.score_mu)
    # the selected model is the private linear one (at the run's share of the budget): far above chance
    assert _auc(yt, g.decision_function(Xt)) > 0.8


def test_default_grid_picks_a_kernel_candidate_on_a_non_linear_task():
    X, y = _xor(1500, 0)
    Z, Xt, yt = _xor(200, 1)[0], *_xor(3000, 2)
    g = PrivateGridSearch(None, 2.0, 1e-6, Z=Z, data_norm=1.0, base_params={"kernel": "rbf", "gamma": 5.0,
                          "tol": 1e-6}, scoring="balanced_accuracy", random_state=0).fit(X, y)
    assert g.best_params_["estimator"] == "KernelLogisticRegression"  # the default grid's kernel model
    lin = dpcore.OutputPerturbation(epsilon=2.0, delta=1e-6, lam=g.candidates_[-1]["lam"], data_norm=1.0,
                                    random_state=0).fit(X, y)  # the private linear model, whole budget
    assert _auc(yt, g.decision_function(Xt)) > 0.9 > 0.6 > _auc(yt, lin.decision_function(Xt))


def test_user_grid_across_families_with_random_features_and_auc():
    X, y = _xor(1200, 3)
    Z, Xt, yt = _xor(150, 4)[0], *_xor(2000, 5)
    rff = dpcore.RandomFourierFeatures(n_components=100, gamma=5.0, random_state=7)
    grid = [{"estimator": [dpcore.KernelSVM], "lam": [1e-2], "gamma": [5.0]},
            {"estimator": ["OutputPerturbation"], "lam": [1e-3], "feature_map": [None, rff]}]
    g = PrivateGridSearch(grid, 4.0, 1e-6, Z=Z, data_norm=1.0, scoring="roc_auc", random_state=1).fit(X, y)
    assert [c["estimator"] for c in g.candidates_] == ["KernelSVM", "OutputPerturbation", "OutputPerturbation"]
    assert g.privacy_.n_candidates == 3
    assert not hasattr(rff, "random_weights_")  # the user's map is cloned, never fitted in place
    assert _auc(yt, g.decision_function(Xt)) > 0.85  # a non-linear candidate (kernel or RFF) is selected
    assert g.best_params_ != g.candidates_[1]


def test_single_class_validation_still_selects_with_every_scoring():
    X, _ = _xor(300, 6)
    Z = _xor(40, 7)[0]
    for scoring in ("roc_auc", "balanced_accuracy"):
        g = PrivateGridSearch(None, 1.0, 1e-6, Z=Z, data_norm=1.0, scoring=scoring, random_state=0,
                              base_params={"kernel": "rbf", "gamma": 1.0, "tol": 1e-6}).fit(X, -np.ones(300))
        assert math.isfinite(g.best_score_) and g.best_params_ in g.candidates_  # S ≡ 0: noise only


def _refused(exc, match, X, y, grid, **kw):
    acc = BudgetAccountant(10.0, 1e-3, accounting="basic")
    with pytest.raises(exc, match=match):
        PrivateGridSearch(grid, 1.0, 1e-6, Z=_xor(20, 9)[0], data_norm=1.0, accountant=acc, random_state=0,
                          **kw).fit(X, y)
    assert acc.spent == (0.0, 0.0) and len(acc) == 0


def test_scoring_and_candidates_are_validated_before_anything_is_charged():
    X, y = _xor(200, 8)
    lam = {"lam": [0.1]}
    for bad in ("auc", "ROC_AUC", None, 1, ["roc_auc"]):
        _refused(ValueError, "scoring", X, y, lam, scoring=bad)
    _refused(ValueError, "estimator", X, y, {"estimator": ["SVC"], "lam": [0.1]})
    _refused(ValueError, "estimator", X, y, {"estimator": [object], "lam": [0.1]})
    _refused(ValueError, "ObjectivePerturbation", X, y, {"estimator": [dpcore.ObjectivePerturbation]})
    _refused(ValueError, "param_grid.*epsilon", X, y, {"estimator": ["OutputPerturbation"], "epsilon": [5.0]})
    _refused(ValueError, "param_grid.*noise", X, y, {"estimator": ["OutputPerturbation"], "noise": ["gamma"]})
    _refused(ValueError, "param_grid.*class_weight", X, y,
             {"estimator": ["OutputPerturbation"], "class_weight": [{-1: 1, 1: 2}]})
    _refused(ValueError, "feature_map", X, y, {"lam": [0.1], "feature_map": [None]})
    _refused(ValueError, "feature_map", X, y, {"estimator": ["OutputPerturbation"], "feature_map": ["rff"]})
    _refused(ValueError, "param_grid", X, y, [])
    _refused(ValueError, "param_grid", X, y, [{"lam": [0.1]}, {}])
    _refused(ValueError, "lam", X, y, {"estimator": ["OutputPerturbation"], "lam": [-1.0]})
    _refused(ValueError, "loss", X, y, {"estimator": ["OutputPerturbation"], "loss": ["squared"]})
    # the linear candidate's own domain and label checks run before the charge too
    _refused(ValueError, "X", X * 3.0, y, {"estimator": ["OutputPerturbation"]})
    _refused(ValueError, "y", X, np.where(y > 0, 2, -1), {"estimator": ["OutputPerturbation"]})


def _imbalanced_linear_task(n, seed, d=10):
    """Noisy linear labels, about 6 % positive: an unweighted private linear model predicts the majority."""
    rng = np.random.default_rng(seed)
    w = np.random.default_rng(98).normal(size=d)
    w /= np.linalg.norm(w)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1)[:, None] * 1.0001
    return X, np.where(X @ w + 0.15 * rng.normal(size=n) > 0.55, 1, -1)


def test_linear_candidate_gets_the_prior_correction_of_the_class_weights():
    """The linear candidate is trained unweighted; the public (here private-released) class weights shift its
    decision values by log(w₊/w₋) — post-processing: AUC unchanged, balanced accuracy up (issue 23)."""
    from sklearn.metrics import balanced_accuracy_score

    from dpcore.kernel_learning.selection import MappedLinearModel
    X, y = _imbalanced_linear_task(4000, 0)
    Z, Xt, yt = _imbalanced_linear_task(200, 1)[0], *_imbalanced_linear_task(4000, 2)
    grid = [{"estimator": ["OutputPerturbation"], "lam": [1e-3]}]
    kw = dict(Z=Z, data_norm=1.0, scoring="balanced_accuracy", random_state=0)
    plain = PrivateGridSearch(grid, 4.0, 1e-6, **kw).fit(X, y)
    g = PrivateGridSearch(grid, 4.0, 1e-6, class_weight="balanced", **kw).fit(X, y)
    assert isinstance(plain.release_, dpcore.OutputPerturbation)
    assert isinstance(g.release_, MappedLinearModel) and g.release_.feature_map is None
    w = g.release_  # the offset is the prior correction of the weights the run released (public numbers)
    glm = w.model
    assert w.offset > 1.0  # ≈ log(94/6) ≈ 2.75 (weights capped at max_class_weight = 10)
    np.testing.assert_allclose(w.decision_function(Xt), glm.decision_function(Xt) + w.offset)
    np.testing.assert_array_equal(w.predict(Xt), np.where(glm.decision_function(Xt) + w.offset > 0, 1, -1))
    assert w.score(Xt, yt) == pytest.approx(np.mean(w.predict(Xt) == yt))
    assert balanced_accuracy_score(yt, plain.predict(Xt)) < 0.6
    assert balanced_accuracy_score(yt, g.predict(Xt)) > 0.8
    # a declared dict gives the same rule with its own weights
    d = PrivateGridSearch(grid, 4.0, 1e-6, class_weight={-1: 1.0, 1: 4.0}, **kw).fit(X, y)
    assert d.release_.offset == pytest.approx(math.log(4.0))

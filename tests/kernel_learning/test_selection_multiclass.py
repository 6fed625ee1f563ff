"""PrivateGridSearch over multi-class candidates (issue 24): K >= 3 declared classes, the joint K-class kernel
release and the private multinomial linear model as candidates, scored by the count of correct labels (sensitivity 1
whatever K), everything validated before the one charge, and an audit of the score on a K = 3 worst-case pair that
passes the honest code and catches a copy calibrated with half the sensitivity."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpcore
from dpcore import BudgetAccountant, PrivateGridSearch
from dpcore.audit import audit
from dpcore.kernel_learning.selection import _gdp_epsilon, _noisy_scores, multiclass_accuracy
from dpcore.mechanisms.noise import check_random_state

_CENTERS = np.array([[0.5, 0.0], [-0.25, 0.43], [-0.25, -0.43]])


def _blobs(n, seed, sd=0.15):
    r = np.random.default_rng(seed)
    y = r.integers(0, 3, size=n)
    return np.clip(_CENTERS[y] + sd * r.standard_normal((n, 2)), -0.7, 0.7), y


def test_default_grid_selects_and_releases_a_k3_model_and_charges_once():
    X, y = _blobs(1500, 0)
    Z = _blobs(150, 1)[0]
    Xt, yt = _blobs(2000, 2)
    acc = BudgetAccountant(1.0, 1e-6)
    g = PrivateGridSearch(None, 1.0, 1e-6, Z=Z, data_norm=1.0, base_params={"classes": [0, 1, 2], "gamma": 2.0},
                          random_state=0, accountant=acc).fit(X, y)
    assert acc.spent == pytest.approx((1.0, 1e-6)) and len(acc) == 1
    # data-independent K-class grid: three kernel models around multiclass_auto_lam's rule, one linear model
    names = [c["estimator"] for c in g.candidates_]
    assert names == ["MulticlassKernelLogisticRegression"] * 3 + ["MulticlassOutputPerturbation"]
    lams = [c["lam"] for c in g.candidates_[:3]]
    assert lams[0] / lams[1] == pytest.approx(3.0) and lams[1] / lams[2] == pytest.approx(3.0)
    p = g.privacy_
    assert p.scoring == "accuracy" and p.prior_epsilon == 0.0 and p.epsilon_accounted <= 1.0
    assert p.score_sensitivity == pytest.approx(1.0 / 1500)  # the count's sensitivity 1, as a mean
    assert p.score_sigma == pytest.approx(p.score_sensitivity / p.score_mu)
    assert g.best_params_ in g.candidates_
    assert g.decision_function(Xt).shape == (2000, 3)
    assert g.score(Xt, yt) > 0.9 and set(np.unique(g.predict(Xt))) <= {0, 1, 2}
    assert g.classes_.tolist() == [0, 1, 2] and g.class_weight_ == {0: 1.0, 1: 1.0, 2: 1.0}


def test_explicit_c_grid_and_linear_candidate_with_string_labels():
    X, yi = _blobs(1200, 3)
    labels = np.array(["ant", "bee", "cat"])
    y = labels[yi]
    Z = _blobs(100, 4)[0]
    n = X.shape[0]
    grid = [{"estimator": ["MulticlassKernelLogisticRegression"], "lam": [1.0 / (n * c) for c in (0.01, 0.1)],
             "gamma": [2.0]},
            {"estimator": ["MulticlassOutputPerturbation"], "lam": [1e-2]}]
    g = PrivateGridSearch(grid, 2.0, 1e-6, Z=Z, data_norm=1.0, base_params={"classes": list(labels)},
                          strategy="repeat_and_select", random_state=1).fit(X, y)
    assert g.privacy_.n_candidates == 3 and g.best_params_ in g.candidates_
    assert set(g.predict(X[:50])) <= set(labels.tolist())
    assert g.score(X, y) > 0.85


@pytest.mark.parametrize("change, match", [
    (dict(scoring="roc_auc"), "scoring='roc_auc' is not available for a multi-class"),
    (dict(scoring="balanced_accuracy"), "scoring='balanced_accuracy' is not available for a multi-class"),
    (dict(class_weight="balanced"), "class_weight='balanced' is not available for a multi-class"),
    (dict(param_grid={"estimator": ["KernelLogisticRegression"], "lam": [0.1]}), "binary models"),
    (dict(param_grid=[{"estimator": ["MulticlassKernelLogisticRegression"], "lam": [0.1]},
                      {"estimator": ["MulticlassOutputPerturbation"], "lam": [0.1], "classes": [[0, 1, 3]]}]),
     "same classes"),
    (dict(param_grid={"estimator": ["MulticlassKernelLogisticRegression"], "lam": [0.1]}, base_params={}),
     "classes: every candidate"),
    (dict(base_params={"gamma": 2.0}), "outside the declared classes=None"),  # K undeclared: the binary rule refuses y
    (dict(base_params={"classes": [0, 1, 2], "gamma": -1.0}), "gamma"),
    (dict(base_params={"classes": [0, 1, 2], "class_weight": {0: 50.0}}), "max_class_weight"),
    (dict(Z=np.full((5, 2), 0.9)), "Z"),
    (dict(y=np.r_[np.zeros(299, int), [7]]), "outside the declared"),
    (dict(epsilon=-1.0), "epsilon"),
    (dict(param_grid={"estimator": ["MulticlassOutputPerturbation"], "lam": [0.1], "epsilon": [1.0]},
          base_params={"classes": [0, 1, 2]}), "set by PrivateGridSearch"),
])
def test_everything_is_validated_before_any_budget_is_charged(change, match):
    X, y = _blobs(300, 5)
    kw = dict(param_grid=None, epsilon=1.0, delta=1e-6, Z=_blobs(30, 6)[0], data_norm=1.0,
              base_params={"classes": [0, 1, 2], "gamma": 2.0}, random_state=0)
    y = change.pop("y", y)
    kw.update(change)
    acc = BudgetAccountant(10.0, 1e-3)
    with pytest.raises((ValueError, TypeError), match=match):
        PrivateGridSearch(**kw, accountant=acc).fit(X, y)
    assert acc.spent == (0.0, 0.0) and len(acc) == 0


def test_multiclass_accuracy_is_the_count_over_n():
    assert multiclass_accuracy(np.array([0, 1, 2, 2]), np.array([0, 1, 1, 2])) == 0.75
    with pytest.raises(ValueError, match="1-D"):
        multiclass_accuracy(np.zeros((2, 2)), np.zeros((2, 2)))


# -- audit of the multi-class selection score ------------------------------------------------------------------------
# Worst case for the scores (given the candidates' releases, adaptive composition): record 0 is classified as class
# 0 by every candidate; D labels it 0 (every candidate correct), D' relabels it 2 (every candidate wrong), so every
# candidate's count of correct labels drops by exactly 1 whatever K. The audited output is the vector of the m noisy
# scores (the arg-max and the released best score are post-processing of it), projected on u = 1/√m: Gaussian with
# shift √m·(1/n)/σ = √m·μ_s, the GDP parameter the proof composes; the claim is its ε at δ. σ comes from a real
# PrivateGridSearch fit (honest, or the broken copy with half the sensitivity).
_N, _EPS, _DELTA = 30, 2.0, 1e-6


class _HalfSensitivity(PrivateGridSearch):
    _score_sensitivity_factor = 0.5


def _calibrated_sigma(cls):
    X, y = _blobs(_N, 7)
    grid = [{"estimator": ["MulticlassKernelLogisticRegression"], "lam": [0.1], "gamma": [2.0]},
            {"estimator": ["MulticlassOutputPerturbation"], "lam": [0.1]}]
    g = cls(grid, _EPS, _DELTA, Z=_blobs(10, 8)[0], data_norm=1.0, base_params={"classes": [0, 1, 2]},
            score_share=0.5, random_state=0).fit(X, y)
    return g.privacy_


def test_audit_multiclass_selection_score_k3_worst_pair_and_catch_half_sensitivity():
    pred = np.random.default_rng(9).integers(0, 3, size=(2, _N))  # the two candidates' fixed predictions
    pred[:, 0] = 0
    yA = np.random.default_rng(10).integers(0, 3, size=_N)
    yA[0] = 0
    yB = yA.copy()
    yB[0] = 2  # a label no candidate predicts for record 0
    m = pred.shape[0]
    aA = np.array([multiclass_accuracy(p, yA) for p in pred])
    aB = np.array([multiclass_accuracy(p, yB) for p in pred])
    assert np.allclose(aA - aB, 1.0 / _N)  # every candidate's score moves by the sensitivity

    honest, broken = _calibrated_sigma(PrivateGridSearch), _calibrated_sigma(_HalfSensitivity)
    assert honest.score_sigma == pytest.approx(1.0 / (_N * honest.score_mu))
    assert broken.score_sigma == pytest.approx(honest.score_sigma / 2)
    mu_scores = math.sqrt(m) * honest.score_mu
    claim = _gdp_epsilon(mu_scores, _DELTA)  # the m scores together are √m·μ_s-GDP

    def sampler(sigma):
        def s(values, n, seed):
            rng = check_random_state(seed)
            return _noisy_scores(np.tile(values, n), sigma, rng).reshape(n, m)
        return s

    u = np.ones(m) / math.sqrt(m)
    mid = float(u @ (aA + aB)) / 2
    thresholds = mid + honest.score_sigma * np.linspace(0.0, 4.0, 17)  # fixed before sampling (public σ, the pair)
    res = audit(sampler(honest.score_sigma), aA, aB, n_samples=1_000_000, direction=u, thresholds=thresholds,
                delta=_DELTA, random_state=41)
    res.assert_private(claim)
    bro = audit(sampler(broken.score_sigma), aA, aB, n_samples=1_000_000, direction=u,
                thresholds=mid + broken.score_sigma * np.linspace(0.0, 4.0, 17), delta=_DELTA, random_state=42)
    assert bro.epsilon_lower_bound > claim, (str(bro), claim)


def test_public_class_weights_apply_to_every_candidate_and_the_default_grid():
    X, y = _blobs(900, 12)
    Z = _blobs(80, 13)[0]
    cw = {1: 3.0}
    plain = PrivateGridSearch(None, 1.0, 1e-6, Z=Z, data_norm=1.0, base_params={"classes": [0, 1, 2], "gamma": 2.0},
                              random_state=0).fit(X, y)
    wtd = PrivateGridSearch(None, 1.0, 1e-6, Z=Z, data_norm=1.0, base_params={"classes": [0, 1, 2], "gamma": 2.0},
                            class_weight=cw, random_state=0).fit(X, y)
    # the data-independent grid's C rule uses L = √2·max_k w_k for both families: every λ is 3× larger
    for a, b in zip(plain.candidates_, wtd.candidates_):
        assert b["lam"] == pytest.approx(3.0 * a["lam"], rel=1e-9)
    assert wtd.class_weight_ == {0: 1.0, 1: 3.0, 2: 1.0}
    assert wtd.score(X, y) > 0.8


def test_three_labels_on_a_binary_estimator_point_to_the_multiclass_models():
    """A 3-class y with the default (binary) label rule: the error names the multi-class models (issue 24)."""
    X = np.random.default_rng(0).normal(size=(30, 3)) / 4
    y = np.arange(30) % 3
    with pytest.raises(ValueError, match="MulticlassKernelLogisticRegression.*MulticlassOutputPerturbation"):
        dpcore.ObjectivePerturbation(epsilon=1.0, delta=1e-6, data_norm=1.0).fit(X, y)

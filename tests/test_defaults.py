"""Defaults that give a useful model (issue 14): every estimator constructed with only its required privacy
parameters (ε, δ, the declared bounds and, for the kernel releases, public points) beats the majority class on
bundled Adult at ε = 1. Fixed seeds; the margins are several standard deviations of the seed spread."""

from __future__ import annotations

import numpy as np
import pytest

import dpcore
from dpcore.datasets import load_adult
from dpcore.kernel_learning.gp import auto_lam


@pytest.fixture(scope="module")
def adult():
    tr, te = load_adult("train"), load_adult("test")
    Q, yq = te.X[1000:6000], te.y[1000:6000]
    majority = max(np.mean(yq == 1), np.mean(yq == -1))
    return tr.X, tr.y, te.X[:1000], Q, yq, majority


LINEAR = {
    "PrivateSVM": lambda s: dpcore.PrivateSVM(epsilon=1.0, random_state=s),
    "PrivateSVM-linear": lambda s: dpcore.PrivateSVM(epsilon=1.0, kernel="linear", data_norm=1.0, random_state=s),
    "ObjectivePerturbation": lambda s: dpcore.ObjectivePerturbation(epsilon=1.0, delta=1e-6, data_norm=1.0,
                                                                    random_state=s),
    "OutputPerturbation": lambda s: dpcore.OutputPerturbation(epsilon=1.0, delta=1e-6, data_norm=1.0,
                                                              random_state=s),
}


@pytest.mark.parametrize("name", sorted(LINEAR))
def test_linear_estimators_with_defaults_beat_the_majority_class(adult, name):
    """Mean over three seeds (PrivateSVM's Laplace release varies by ±2 points from seed to seed)."""
    X, y, _, Q, yq, majority = adult
    assert np.mean([LINEAR[name](s).fit(X, y).score(Q, yq) for s in range(3)]) > majority + 0.01


def test_kernel_releases_with_data_independent_C_beat_the_majority_class(adult):
    X, y, Z, Q, yq, majority = adult
    n = 10_000
    kern = dict(kernel="poly", gamma=1.0, degree=3, coef0=1.0)
    # the recommended model (issue 23, item 3): KernelLogisticRegression at auto_lam's default (logistic) rule
    svm = dpcore.KernelLogisticRegression(lam=auto_lam(n, 1.0, 1e-6, data_norm=1.0, **kern), tol=1e-8,
                                          **kern).fit(X[:n], y[:n])
    tddl = dpcore.TDDL(svm, 1.0, 1e-6, data_norm=1.0, random_state=0).fit(Z)
    assert tddl.score(Q, yq) > majority + 0.01
    svc = dpcore.GPService(svm, 1.0, 1e-6, data_norm=1.0, max_exact_queries=Q.shape[0], random_state=0)
    assert np.mean(svc.predict(Q) == yq) > majority + 0.01
    sel = dpcore.PrivateGridSearch(None, 1.0, 1e-6, Z=Z, data_norm=1.0, base_params=dict(tol=1e-8, **kern),
                                   random_state=0).fit(X[:n], y[:n])
    assert sel.score(Q, yq) > majority + 0.01


@pytest.mark.xfail(strict=True, reason="known shortfall (issue 14 note): with its defaults SimplexERM fits the two "
                   "labels as classification (task='auto' without label_bound), but at a λ that affordable draws "
                   "allow the entropic regulariser keeps w near 0 and the model is the majority classifier on Adult "
                   "for every loss, with or without a constant feature, even at ε = 1e4")
def test_simplex_erm_with_defaults_beats_the_majority_class(adult):
    X, y, _, Q, yq, majority = adult
    est = dpcore.SimplexERM(1.0, 1e-6, lam=0.05, data_norm_inf=14**-0.5, random_state=0).fit(X, y)
    assert est.score(Q, yq) > majority + 0.01


@pytest.mark.xfail(strict=True, reason="the paper's PINP (kept as the reference algorithm) answers 0 for every "
                   "query at these n: its sparse-vector noise scale is 10⁵–10⁶; use GPService")
def test_pinp_beats_the_majority_class(adult):
    X, y, _, Q, yq, majority = adult
    n = 10_000
    svm = dpcore.KernelSVM(lam=auto_lam(n, 1.0, 1e-6, data_norm=1.0), tol=1e-8).fit(X[:n], y[:n])
    pinp = dpcore.PINP(svm, 1.0, 1e-6, beta=0.05, n_queries=1000, data_norm=1.0, random_state=0)
    try:
        f = pinp.predict(Q[:1000])
    except dpcore.PINPBudgetExhausted as exc:
        f = np.concatenate([exc.answers, np.zeros(1000 - exc.n_answered)])
    assert np.mean(np.where(f > 0, 1, -1) == yq[:1000]) > majority + 0.01

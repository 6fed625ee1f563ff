"""Every estimator / release exposes the DpEvent it charged (``dp_event_``), and the event is no weaker
than the declared (ε, δ): its dp_accounting ε at the declared δ is ≤ ε (up to the PLD's pessimism)."""

from __future__ import annotations

import math

import dp_accounting as dpa
import numpy as np
import pytest

import dpcore
from dpcore.accounting import BudgetAccountant
from dpcore.accounting import events as ev
from dpcore.glm import OutputPerturbation
from dpcore.private_svm import PrivateSVM


def _unit_ball(rng, n, d):
    X = rng.normal(size=(n, d))
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None] * rng.uniform(0, 1, size=(n, 1)) ** (1 / d)


@pytest.fixture(scope="module")
def svm():
    rng = np.random.default_rng(1)
    X = _unit_ball(rng, 200, 3)
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1.0, -1.0)
    return dpcore.KernelSVM(lam=0.01, kernel="rbf", gamma=2.0, tol=1e-9).fit(X, y), X, y


def _within(event, eps, delta):
    got = ev.event_epsilon(event, delta, "pld")
    assert got <= eps * (1 + 1e-6) + 1e-9
    return got


@pytest.mark.parametrize("noise, norm_bound, kind", [("gp", "private", dpa.GaussianDpEvent),
                                                     ("gaussian", "public", dpa.GaussianDpEvent),
                                                     ("gaussian", "private", dpa.ComposedDpEvent),
                                                     ("laplace", "private", ev.EpsilonDeltaDpEvent)])
def test_tddl_event(svm, noise, norm_bound, kind):
    m, _, _ = svm
    Z = _unit_ball(np.random.default_rng(6), 15, 3)
    acc = BudgetAccountant(5.0, 1e-5)
    t = dpcore.TDDL(m, 1.0, 1e-6, data_norm=1.0, noise=noise, norm_bound=norm_bound, random_state=0,
                    accountant=acc).fit(Z)
    assert isinstance(t.dp_event_, kind) and acc.log[-1].event == t.dp_event_
    got = _within(t.dp_event_, 1.0, 1e-6)
    if kind is not ev.EpsilonDeltaDpEvent:
        assert got > 0.9  # tight: the Gaussian description loses nothing against the calibration


def test_gaussian_and_laplace_mechanism_events():
    acc = BudgetAccountant(10.0, 1e-5)
    dpcore.gaussian_mechanism(np.zeros(3), 0.5, 1.0, 1e-6, random_state=0, accountant=acc)
    dpcore.gaussian_mechanism(0.0, 0.5, 1.0, 1e-6, method="zcdp", random_state=0, accountant=acc)
    dpcore.laplace_mechanism(0.0, 0.5, 1.0, random_state=0, accountant=acc)
    g, z, lap = (r.event for r in acc.log)
    assert isinstance(g, dpa.GaussianDpEvent) and isinstance(z, dpa.ZCDpEvent)
    assert lap == ev.EpsilonDeltaDpEvent(1.0, 0.0)
    assert 0.999 < _within(g, 1.0, 1e-6)
    assert ev.event_epsilon(z, 1e-6, "rdp") <= 1.0 * 1.1  # RDP's zCDP conversion is close to the calibration


def test_gp_service_private_svm_and_glm_events(svm):
    m, X, y = svm
    s = dpcore.GPService(m, 1.0, 1e-6, data_norm=1.0, max_exact_queries=10, random_state=0)
    assert isinstance(s.dp_event_, dpa.GaussianDpEvent)
    assert 0.99 < _within(s.dp_event_, 1.0, 1e-6)
    psvm = PrivateSVM(C=7.0 / 200, epsilon=0.5, n_components=20, random_state=0).fit(X, y)
    assert psvm.dp_event_ == ev.EpsilonDeltaDpEvent(0.5, 0.0)
    glm = OutputPerturbation(epsilon=1.0, delta=1e-5, lam=4.0, data_norm=1.0, loss="huber_svm",
                             fit_intercept=False, classes=[-1, 1]).fit(X, y)
    assert glm.dp_event_ == ev.EpsilonDeltaDpEvent(glm.privacy_.epsilon, glm.privacy_.delta)
    assert not math.isinf(ev.event_epsilon(glm.dp_event_, 1e-5))

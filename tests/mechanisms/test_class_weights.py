"""Tests of dpcore.private_class_weights: calibration, validation before the charge, and its privacy audit
(the tight event of two discrete Laplace counts on a worst-case neighbouring pair; a copy with half the noise
is caught)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dpcore
from dpcore import BudgetAccountant
from dpcore.audit import audit
from dpcore.mechanisms import class_weights as cwmod
from dpcore.mechanisms import private_class_weights


def test_weights_are_balanced_clipped_and_charged():
    y = np.array([1] * 100 + [-1] * 900)
    acc = BudgetAccountant(epsilon=2.0)
    w = private_class_weights(y, (-1, 1), 1.0, accountant=acc, random_state=0)
    assert set(w) == {-1, 1} and w.epsilon_ == 1.0 and w.max_class_weight == 10.0
    assert acc.spent == pytest.approx((1.0, 0.0)) and w.dp_event_.epsilon == 1.0
    n1, n0 = w.noisy_counts_[1], w.noisy_counts_[-1]
    assert abs(n1 - 100) <= 40 and abs(n0 - 900) <= 40
    assert w[1] == 1000 / (2 * n1) and w[-1] == 1000 / (2 * n0)
    # clipping to [1/M, M] (post-processing): a class with (noisy) count <= 50 gets M = 10 at n = 1000
    tiny = private_class_weights(np.array([1] * 2 + [-1] * 998), (-1, 1), 50.0, random_state=1)
    assert tiny[1] == 10.0 and tiny[-1] == pytest.approx(1000 / (2 * tiny.noisy_counts_[-1]))
    capped = private_class_weights(np.array([1] * 2 + [-1] * 998), (-1, 1), 50.0, max_class_weight=3,
                                   random_state=1)
    assert capped[1] == 3.0
    # more than two classes, any label type; the returned dict is public: KernelSVM accepts it
    w3 = private_class_weights(["a", "b", "c", "a"], ["a", "b", "c"], 5.0, random_state=2)
    assert set(w3) == {"a", "b", "c"}
    X = np.random.default_rng(0).uniform(-0.5, 0.5, (1000, 2))
    m = dpcore.KernelSVM(lam=1e-2, class_weight=w).fit(X, y)
    assert m.class_weight_public_ and m.lipschitz_ == max(w.values())


def test_noise_scale_is_two_over_epsilon():
    assert cwmod.class_count_noise_scale(1.0) == Fraction(2)
    assert cwmod.class_count_noise_scale(0.5) == Fraction(4)
    t = cwmod.class_count_noise_scale(0.3)
    assert t >= Fraction(2) / Fraction(0.3) and float(t) == pytest.approx(2 / 0.3, rel=1e-8)


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(y=[], classes=(-1, 1), epsilon=1.0), ValueError, "y"),
    (dict(y=[1, 2], classes=(-1, 1), epsilon=1.0), ValueError, "declared classes"),
    (dict(y=[1], classes=(1,), epsilon=1.0), ValueError, "two distinct"),
    (dict(y=[1], classes=(1, 1), epsilon=1.0), ValueError, "two distinct"),
    (dict(y=[1], classes="ab", epsilon=1.0), TypeError, "classes"),
    (dict(y=[1], classes=(-1, 1), epsilon=0.0), ValueError, "epsilon"),
    (dict(y=[1], classes=(-1, 1), epsilon=1.0, max_class_weight=0.5), ValueError, "max_class_weight"),
    (dict(y=[1], classes=(-1, 1), epsilon=1.0, max_class_weight=np.inf), ValueError, "max_class_weight"),
])
def test_invalid_input_is_refused_before_the_charge(kwargs, exc, match):
    acc = BudgetAccountant(epsilon=10.0)
    with pytest.raises(exc, match=match):
        private_class_weights(accountant=acc, **kwargs)
    assert acc.spent == (0.0, 0.0)


# ------------------------------------------------------------------------------ audit
def _pair(n=200, k=20):
    """Neighbours: one record of class 1 replaced by one of class -1 (two counts change by 1)."""
    yA = np.array([1] * k + [-1] * (n - k))
    yB = yA.copy()
    yB[0] = -1
    return yA, yB


def _sampler(y, n, seed):
    rng = dpcore.check_random_state(seed)
    out = np.empty((n, 2))
    for i in range(n):
        w = private_class_weights(y, (-1, 1), 1.0, random_state=rng)
        out[i] = (w.noisy_counts_[1], w.noisy_counts_[-1])
    return out


def _events(k, n):
    # E = {ñ_1 >= k, ñ_-1 <= n - k}: P_A(E) / P_B(E) = e^{1/t} · e^{1/t} = e^{ε} exactly (t = 2/ε); fixed
    # before sampling from the public pair
    return {"tight": lambda out: (out[:, 0] >= k) & (out[:, 1] <= n - k)}


def test_audit_private_class_weights_and_catch_half_noise(monkeypatch):
    yA, yB = _pair()
    res = audit(_sampler, yA, yB, n_samples=40_000, events=_events(20, 200), random_state=5)
    res.assert_private(1.0)
    assert res.epsilon_lower_bound > 0.7, str(res)  # the event is tight: the audit is not vacuous
    monkeypatch.setattr(cwmod, "class_count_noise_scale", lambda eps: Fraction(1) / Fraction(eps))  # half noise
    broken = audit(_sampler, yA, yB, n_samples=40_000, events=_events(20, 200), random_state=6)
    assert broken.epsilon_lower_bound > 1.3, str(broken)
    with pytest.raises(AssertionError, match="refuted"):
        broken.assert_private(1.0)

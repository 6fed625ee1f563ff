"""Class weights for K classes on the private multinomial linear model (issue 24, item 4 of the final part):
``class_weight`` dict on :class:`dpcore.MulticlassOutputPerturbation`, Lipschitz constant ``√2·max_k w_k``
(one-vs-rest: ``√K·max_k w_k``), the sensitivity and the data-independent λ follow it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcore import BudgetAccountant, MulticlassOutputPerturbation
from dpcore.kernel_learning.multiclass_release import multiclass_auto_lam


def test_weighted_solve_is_sklearns_class_weighted_multinomial_solution():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    n, lam = 300, 0.02
    X = rng.uniform(-0.5, 0.5, size=(n, 2))
    y = rng.integers(0, 3, size=n)
    cw = {0: 1.0, 1: 4.0, 2: 2.5}
    est = MulticlassOutputPerturbation(1.0, 1e-6, lam=lam, data_norm=1.0, classes=[0, 1, 2], class_weight=cw,
                                       tol=1e-12)
    Xt = np.hstack([X, np.full((n, 1), 0.5)])
    sw = np.array([cw[k] for k in y])
    W, g, _ = est._solve(Xt, y, 3, lam, 1e-12, sw=sw)
    assert g <= 1e-11
    sk = LogisticRegression(C=1.0 / (lam * n), fit_intercept=False, class_weight=cw, tol=1e-14, max_iter=100_000)
    sk.fit(Xt, y)
    np.testing.assert_allclose(W, sk.coef_, atol=1e-5)
    W1, _, _ = est._solve(Xt, y, 3, lam, 1e-12)
    assert np.linalg.norm(W - W1) > 1e-2  # the weights matter


@pytest.mark.parametrize("loss", ["multinomial", "ovr"])
def test_weighted_replace_one_sensitivity_bound_holds(loss):
    """||W*_D − W*_D'||_F ≤ 2 L w_max R'/(λn) on adversarial neighbours (record moved into the heaviest class)."""
    rng = np.random.default_rng(11)
    n, d, K, lam, b = 25, 3, 4, 0.3, 0.5
    cw = {0: 1.0, 1: 3.0, 2: 0.5, 3: 1.5}
    w = np.array([cw[k] for k in range(K)])
    est = MulticlassOutputPerturbation(1.0, 1e-6, lam=lam, data_norm=1.0, classes=list(range(K)), loss=loss,
                                       class_weight=cw, tol=1e-12)
    worst = 0.0
    for trial in range(20):
        X = rng.normal(size=(n, d))
        X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        y = rng.integers(0, K, size=n)
        X2, y2 = X.copy(), y.copy()
        X2[-1] = -X[-1] / np.linalg.norm(X[-1])
        y2[-1] = 1 if y[-1] != 1 else (trial % 3 + 2) % K
        sol = []
        for A, t in ((X, y), (X2, y2)):
            W, g, _ = est._solve(np.hstack([A, np.full((n, 1), b)]), t, K, lam, 1e-12, sw=w[t])
            assert g <= 1e-11
            sol.append(W)
        L = (math.sqrt(2.0) if loss == "multinomial" else math.sqrt(K)) * w.max()
        ratio = float(np.linalg.norm(sol[0] - sol[1])) / (2 * L * math.sqrt(1 + b * b) / (lam * n))
        assert ratio <= 1.0
        worst = max(worst, ratio)
    assert worst > 0.05


def test_calibration_uses_sqrt2_times_the_largest_weight():
    X = np.array([[0.5, 0.0], [-0.5, 0.0], [0.0, 0.5], [0.0, -0.5]])
    y = [0, 1, 2, 3]
    kw = dict(lam=0.1, data_norm=1.0, classes=[0, 1, 2, 3], random_state=0)
    plain = MulticlassOutputPerturbation(1.0, 1e-6, **kw).fit(X, y)
    wtd = MulticlassOutputPerturbation(1.0, 1e-6, class_weight={2: 3.0, 0: 0.5}, **kw).fit(X, y)
    assert wtd.privacy_.lipschitz == pytest.approx(3.0 * math.sqrt(2.0))
    assert wtd.class_weight_ == {0: 0.5, 1: 1.0, 2: 3.0, 3: 1.0} and plain.class_weight_ == {k: 1.0 for k in range(4)}
    Rp = math.sqrt(1.25)
    assert wtd.privacy_.sensitivity == pytest.approx(2 * 3 * math.sqrt(2) * Rp / (0.1 * 4)
                                                     + 2 * wtd.privacy_.residual_bound, rel=1e-9)
    assert wtd.privacy_.noise_scale / plain.privacy_.noise_scale == pytest.approx(3.0, rel=1e-3)
    ovr = MulticlassOutputPerturbation(1.0, 1e-6, loss="ovr", class_weight={1: 2.0}, **kw).fit(X, y)
    assert ovr.privacy_.lipschitz == pytest.approx(2.0 * math.sqrt(4))
    # the data-independent λ of a weighted model: the auto rule with L = √2·max_k w_k (public numbers only)
    assert multiclass_auto_lam(1000, 1.0, 1e-6, data_norm=1.0, kernel="linear", max_class_weight=3.0) == \
        pytest.approx(3.0 * multiclass_auto_lam(1000, 1.0, 1e-6, data_norm=1.0, kernel="linear"))


@pytest.mark.parametrize("cw, match, exc", [
    ("balanced", "class_weight", ValueError),
    ({5: 1.0}, "class_weight", ValueError),
    ({1: 100.0}, "max_class_weight", ValueError),
    ({1: -1.0}, "class_weight", ValueError),
    ({1: float("nan")}, "class_weight", ValueError),
    ([1.0, 2.0, 3.0], "class_weight", TypeError),
])
def test_class_weight_validated_before_any_charge(cw, match, exc):
    X = np.array([[0.5, 0.0], [-0.5, 0.0], [0.0, 0.5]])
    acc = BudgetAccountant(10.0, 1e-3)
    with pytest.raises(exc, match=match):
        MulticlassOutputPerturbation(1.0, 1e-6, lam=0.1, data_norm=1.0, classes=[0, 1, 2], class_weight=cw,
                                     accountant=acc).fit(X, [0, 1, 2])
    assert acc.spent == (0.0, 0.0) and len(acc) == 0

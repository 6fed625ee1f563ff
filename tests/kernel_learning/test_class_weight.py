"""Class weights (issue 23, item 2): the weighted kernel ERM and its certificate, the sensitivity the weights
imply in the private mechanisms (calibration and an audit that catches a copy ignoring the weights), the
refusal of data-derived ("balanced") weights before any charge, and PrivateGridSearch(class_weight=...)."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest
from scipy import optimize
from sklearn.metrics import balanced_accuracy_score

import dpcore
from dpcore import _core
from dpcore import PINP, TDDL, TDIL, BudgetAccountant, GPService, KernelLogisticRegression, KernelSVM
from dpcore.audit import audit
from dpcore.kernel_learning.selection import PrivateGridSearch


def _toy(n=300, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.7, 0.7, (n, 3))
    y = np.where(X[:, 0] + 0.4 * rng.normal(size=n) > 0.5, 1, -1)
    return X, y


def _imbalanced(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.7, 0.7, (n, 2))
    y = np.where(X[:, 0] + 0.15 * rng.normal(size=n) > 0.63, 1, -1)  # ~8 % positive
    return X, y


# ------------------------------------------------------------------------------ weights of 1 = unweighted
# (sha256 of mu_, duality gap, updates) of the unweighted fits. First pinned before class weights existed
# (dpcore at 7f2aa3e); re-pinned in issue 26, whose hinge solver keeps f64 rows from the start when the f64
# Gram matrix fits the cache and confirms exact checks differently (a different, equally certified
# trajectory); the poly pin no longer matched before issue 26 either (8800 updates). The weighted fits are
# also compared with the unweighted fit of the same run.
PINNED = {
    ("KernelSVM", "rbf"): ("fd3893e91da123d2", "0x1.3da2bd6cd8580p-29", 4702),
    ("KernelSVM", "poly"): ("73e5c286fba9128b", "0x1.bae774c066cd5p-29", 8516),
}
# The logistic solver was replaced (issue 23: Newton-CG instead of dual coordinate descent), so its old pin
# no longer applies; weights of 1 must still give the unweighted fit bit-for-bit (checked against class_weight=None).


@pytest.mark.parametrize("cls,kernel", [(KernelSVM, "rbf"), (KernelSVM, "poly"), (KernelLogisticRegression, "rbf")])
@pytest.mark.parametrize("class_weight", [None, {1: 1.0}, {-1: 1, 1: 1.0}])
def test_unit_weights_are_bit_for_bit_the_unweighted_fit(cls, kernel, class_weight):
    X, y = _toy()
    kw = dict(gamma=2.0) if kernel == "rbf" else dict(degree=3)
    m = cls(lam=1e-3, tol=1e-8, kernel=kernel, class_weight=class_weight, intercept_scaling=0.0,
            **kw).fit(X, y)  # pinned before the intercept existed (b = 0)
    got = (hashlib.sha256(m.mu_.tobytes()).hexdigest()[:16], m.duality_gap_.hex(), m.n_iter_)
    ref = cls(lam=1e-3, tol=1e-8, kernel=kernel, intercept_scaling=0.0, **kw).fit(X, y)
    assert got == (hashlib.sha256(ref.mu_.tobytes()).hexdigest()[:16], ref.duality_gap_.hex(), ref.n_iter_)
    assert m.converged_ and m.duality_gap_ <= 1e-8
    if cls is not KernelLogisticRegression:
        assert got == PINNED[(cls.__name__, kernel)]
    assert m.lipschitz_ == 1.0 and m.class_weight_ == {-1: 1.0, 1: 1.0} and m.class_weight_public_


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_explicit_unit_sample_weights_in_the_core_are_bit_for_bit(loss):
    X, y = _toy(200, 5)
    args = (np.ascontiguousarray(X), y.astype(np.float64), loss, "rbf", 2.0, 3, 1.0, 0.5, 1e-3, 1e-8, 10**7, 2**28, True)
    a = _core.erm_fit(*args)
    b = _core.erm_fit(*args, sample_weight=np.ones(200))
    for key in ("a", "mu", "decision"):
        assert np.array_equal(a[key], b[key])
    assert a["gap"] == b["gap"] and a["n_iter"] == b["n_iter"]


# ------------------------------------------------------------------------------ utility on an imbalanced task
@pytest.mark.parametrize("cls", [KernelSVM, KernelLogisticRegression])
def test_weights_improve_balanced_accuracy_on_an_imbalanced_task(cls):
    X, y = _imbalanced()
    Xt, yt = _imbalanced(4000, 1)
    assert 0.04 < np.mean(y > 0) < 0.15
    plain = cls(lam=3e-3, kernel="rbf", gamma=2.0).fit(X, y)
    heavy = cls(lam=3e-3, kernel="rbf", gamma=2.0, class_weight={1: 8.0}).fit(X, y)
    bal = cls(lam=3e-3, kernel="rbf", gamma=2.0, class_weight="balanced").fit(X, y)
    b0 = balanced_accuracy_score(yt, plain.predict(Xt))
    b1 = balanced_accuracy_score(yt, heavy.predict(Xt))
    b2 = balanced_accuracy_score(yt, bal.predict(Xt))
    assert b1 > b0 + 0.1 and b2 > b0 + 0.1, (b0, b1, b2)
    assert heavy.lipschitz_ == 8.0 and heavy.class_weight_ == {-1: 1.0, 1: 8.0} and heavy.class_weight_public_
    assert not bal.class_weight_public_
    n1 = int(np.sum(y > 0))
    assert bal.class_weight_[1] == pytest.approx(len(y) / (2 * n1)) and bal.lipschitz_ == bal.class_weight_[1]
    # the dual box is [0, w_{y_i}] and |mu_i| <= w_{y_i} / (lam n)
    w = np.where(y > 0, 8.0, 1.0)
    assert np.all(heavy.box_duals_ <= w) and np.any(heavy.box_duals_[y > 0] > 1.0)
    assert np.all(np.abs(heavy.mu_) <= w / (heavy.lam * len(y)) * (1 + 1e-12))


# ------------------------------------------------------------------------------ honest certificate
def _primal(loss, K, y, s, beta, lam):
    f = K @ beta
    u = y * f
    ell = np.maximum(0.0, 1.0 - u) if loss == "hinge" else np.logaddexp(0.0, -u)
    return float(np.mean(s * ell) + 0.5 * lam * beta @ f)


@pytest.mark.parametrize("cls,loss", [(KernelSVM, "hinge"), (KernelLogisticRegression, "logistic")])
def test_weighted_certificate_is_honest_against_a_slow_reference(cls, loss):
    X, y = _imbalanced(80, 7)
    y = y.astype(np.float64)
    lam, n = 0.02, 80
    cw = {-1: 0.5, 1: 6.0}
    s = np.where(y > 0, 6.0, 0.5)
    K = dpcore.kernel_matrix(X, X, kernel="rbf", gamma=2.0)
    m = cls(lam=lam, kernel="rbf", gamma=2.0, tol=1e-7, class_weight=cw, intercept_scaling=0.0).fit(X, y)
    C = 1.0 / (lam * n)
    if loss == "hinge":
        # the weighted dual, maximised by L-BFGS-B over its box [0, s_i] (independent of dpcore's solver)
        Q = (y[:, None] * y[None, :]) * K

        def neg_dual(a):
            g = Q @ a
            return 0.5 * lam * C * C * a @ g - a.sum() / n, lam * C * C * g - 1.0 / n

        res = optimize.minimize(neg_dual, np.zeros(n), jac=True, method="L-BFGS-B",
                                bounds=[(0.0, si) for si in s], options=dict(ftol=1e-15, gtol=1e-10, maxiter=5_000))
        beta_ref = y * C * res.x
        dual_ref = -res.fun
    else:
        def primal(beta):
            f = K @ beta
            u = y * f
            sig = 0.5 * (1.0 - np.tanh(0.5 * u))  # sigma(-u)
            val = np.mean(s * np.logaddexp(0.0, -u)) + 0.5 * lam * beta @ f
            return val, K @ (-(s * sig * y) / n + lam * beta)

        res = optimize.minimize(primal, np.zeros(n), jac=True, method="L-BFGS-B",
                                options=dict(ftol=1e-15, gtol=1e-10, maxiter=5_000))
        beta_ref = res.x
        dual_ref = -math.inf
    P_model = _primal(loss, K, y, s, m.mu_, lam)
    P_ref = _primal(loss, K, y, s, beta_ref, lam)
    assert P_model == pytest.approx(m.primal_objective_, rel=1e-9, abs=1e-12)
    # P(w) - P(w*) <= gap (P(w_ref) >= P(w*)), and weak duality across the two solutions
    assert P_model - P_ref <= m.duality_gap_ + 1e-12
    assert m.dual_objective_ <= P_ref + 1e-12 and dual_ref <= P_model + 1e-12
    assert m.duality_gap_ <= 1e-7
    # ||w - w_ref|| <= w_error_bound_ + ||w_ref - w*|| (the reference's own bound from its primal value)
    d = m.mu_ - beta_ref
    dist = math.sqrt(max(0.0, d @ K @ d))
    ref_err = math.sqrt(2.0 * max(0.0, P_ref - m.dual_objective_) / lam)
    assert dist <= m.w_error_bound_ + ref_err + 1e-9
    # the weights matter: the unweighted certificate of the weighted model's duals is refused (box [0, 1])
    with pytest.raises(ValueError, match="a"):
        _core.erm_certificate(np.ascontiguousarray(X), y, m.box_duals_, loss, "rbf", 2.0, 3, 1.0, 0.0, lam)
    cert = _core.erm_certificate(np.ascontiguousarray(X), y, m.box_duals_, loss, "rbf", 2.0, 3, 1.0, 0.0, lam,
                                 sample_weight=s)
    assert cert["gap"] == pytest.approx(m.duality_gap_, rel=1e-12)


def test_class_weight_validation():
    X, y = _toy(40)
    for cw, exc, match in [({2: 3.0}, ValueError, "key 2"), ({1: 0.0}, ValueError, "> 0"),
                           ({1: math.nan}, ValueError, "finite"), ({1: 11.0}, ValueError, "max_class_weight"),
                           ({1: "3"}, TypeError, "real"), ("uniform", ValueError, "balanced"), ([1, 2], TypeError, "dict")]:
        with pytest.raises(exc, match=match):
            KernelSVM(class_weight=cw).fit(X, y)
    with pytest.raises(ValueError, match="max_class_weight"):
        KernelSVM(class_weight={1: 2.0}, max_class_weight=0.5).fit(X, y)
    m = KernelSVM(class_weight={1: 50.0}, max_class_weight=50).fit(X, y)
    assert m.lipschitz_ == 50.0


# ------------------------------------------------------------------------------ mechanisms use L = max w
def test_tddl_and_gpservice_calibrate_with_the_largest_weight():
    """The sensitivity is affine in L (2 L R_phi / (lam n) plus the public solver term) and L = max_k w_k."""
    X, y = _toy(200, 9)
    kw = dict(lam=1e-2, kernel="rbf", gamma=2.0, tol=1e-8)
    models = [KernelSVM(**kw).fit(X, y), KernelSVM(class_weight={1: 2.0}, **kw).fit(X, y),
              KernelSVM(class_weight={1: 4.0, -1: 0.5}, **kw).fit(X, y)]
    assert [m.lipschitz_ for m in models] == [1.0, 2.0, 4.0]
    Z = np.random.default_rng(0).uniform(-0.5, 0.5, (30, 3))
    for cals in ([TDDL(m, 1.0, 1e-6, data_norm=1.5).prepare(Z)["cal"] for m in models],
                 [GPService(m, 1.0, 1e-6, data_norm=1.5, random_state=0).privacy_ for m in models]):
        assert [c.lipschitz for c in cals] == [1.0, 2.0, 4.0]
        d = [c.weight_sensitivity for c in cals]
        assert d[2] - d[0] == pytest.approx(3.0 * (d[1] - d[0]), rel=1e-9)
        R = cals[0].r_phi if hasattr(cals[0], "r_phi") else math.sqrt(cals[0].r_phi_sq)
        assert d[1] - d[0] == pytest.approx(2.0 * R / (1e-2 * 200), rel=1e-6)
        assert cals[2].noise_scale / cals[0].noise_scale == pytest.approx(d[2] / d[0], rel=1e-6)
        assert d[2] > 3.9 * d[0]


class _WeightedExact:
    """Exact weighted hinge SVM with the linear kernel on 1-D points when every margin is < 1:
    mu_i = w_{y_i} y_i / (lam n) (stationarity with the hinge in its linear part; gap 0)."""

    tol = 1e-300
    _loss = "hinge"
    classes_ = np.array([-1.0, 1.0])
    class_weight_public_ = True

    def __init__(self, X, y, lam, weights):
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        n = X.shape[0]
        s = np.where(y > 0, weights[1], weights[-1])
        self.X_fit_, self.n_samples_fit_, self.lam = X, n, float(lam)
        self.lipschitz_ = float(max(weights.values()))
        self.mu_ = s * y / (lam * n)
        self.kernel_params_ = dict(kernel="linear", gamma=1.0, degree=3, coef0=1.0)
        f = X @ (X.T @ self.mu_)
        assert np.all(y * f < 1.0)
        self.duality_gap_ = self.w_error_bound_ = 0.0
        self.w_norm_ = float(np.sqrt(self.mu_ @ f))

    def decision_function(self, Z):
        return np.asarray(Z) @ (self.X_fit_.T @ self.mu_)


W_HEAVY = 4.0


def _weighted_worst_pair(n=40):
    """Replace one record of the heavy class (weight 4) at x = +1 by one at x = -1: the decision value at z = 1
    moves by exactly 2 w R^2 / (lam n), the sensitivity with L = max w."""
    weights = {1: W_HEAVY, -1: 1.0}
    lam = 2.0 * W_HEAVY
    XA = np.ones((n, 1))
    XB = XA.copy()
    XB[-1] = -1.0
    y = np.ones(n)
    return _WeightedExact(XA, y, lam, weights), _WeightedExact(XB, y, lam, weights)


class _IgnoresWeightsTDDL(TDDL):
    """Deliberately broken copy: calibrated for the unweighted Lipschitz constant 1 instead of max w = 4."""

    _sensitivity_factor = 1.0 / W_HEAVY


def _tddl_sampler(cls, Z, **kw):
    def sampler(model, n, seed):
        t = cls(model, random_state=seed, **kw)
        prep = t.prepare(Z)
        return t._noisy_predictions(prep, dpcore.mechanisms.noise.check_random_state(seed), n)
    return sampler


def test_audit_weighted_tddl_on_a_worst_case_pair_and_catch_a_copy_ignoring_the_weights():
    mA, mB = _weighted_worst_pair()
    T = 4
    Z = np.ones((T, 1))
    kw = dict(epsilon=1.0, delta=1e-5, data_norm=1.0, noise="gaussian", norm_bound="public")
    cal = TDDL(mA, **kw).prepare(Z)["cal"]
    vA, vB = mA.decision_function(Z), mB.decision_function(Z)
    # the pair attains the weighted sensitivity sqrt(T) * 2 w R^2 / (lam n) on Z (tight)
    assert np.linalg.norm(vA - vB) == pytest.approx(cal.sensitivity, rel=1e-6)
    assert cal.sensitivity == pytest.approx(math.sqrt(T) * 2 * W_HEAVY / (mA.lam * 40), rel=1e-6)
    u = (vA - vB) / np.linalg.norm(vA - vB)
    mid = float(u @ (vA + vB) / 2)
    thresholds = mid + cal.noise_scale * np.linspace(0.0, 4.0, 9)  # fixed before sampling
    res = audit(_tddl_sampler(TDDL, Z, **kw), mA, mB, n_samples=1_000_000, direction=u, thresholds=thresholds,
                delta=1e-5, random_state=21)
    res.assert_private(1.0)
    broken = audit(_tddl_sampler(_IgnoresWeightsTDDL, Z, **kw), mA, mB, n_samples=1_000_000, direction=u,
                   thresholds=thresholds, delta=1e-5, random_state=22)
    assert broken.epsilon_lower_bound > 1.5, str(broken)
    with pytest.raises(AssertionError, match="refuted"):
        broken.assert_private(1.0)


# ------------------------------------------------------------------------------ refusal of data-derived weights
def test_private_mechanisms_refuse_balanced_weights_before_any_charge():
    X, y = _toy(150, 11)
    X = X / 1.5
    model = KernelSVM(lam=1e-2, kernel="rbf", gamma=2.0, tol=1e-8, class_weight="balanced").fit(X, y)
    Z = np.random.default_rng(1).uniform(-0.3, 0.3, (10, 3))
    acc = BudgetAccountant(100.0, 1e-3)
    for make in [
        lambda: TDDL(model, 1.0, 1e-6, data_norm=1.0, accountant=acc).fit(Z),
        lambda: TDDL(model, 1.0, 1e-6, data_norm=1.0, noise="laplace", norm_bound="public", accountant=acc).fit(Z),
        lambda: GPService(model, 1.0, 1e-6, data_norm=1.0, accountant=acc),
        lambda: PINP(model, 1.0, 1e-6, data_norm=1.0, n_queries=10, accountant=acc),
        lambda: TDIL(model, 1.0, 1e-6, data_norm=1.0, accountant=acc).fit(),
        lambda: PrivateGridSearch({"lam": [1e-2]}, 1.0, 1e-6, Z=Z, data_norm=1.0,
                                  base_params={"kernel": "rbf", "gamma": 2.0, "class_weight": "balanced"},
                                  accountant=acc).fit(X, y),
        lambda: PrivateGridSearch({"class_weight": [None, "balanced"]}, 1.0, 1e-6, Z=Z, data_norm=1.0,
                                  accountant=acc).fit(X, y),
    ]:
        with pytest.raises(ValueError, match="balanced"):
            make()
        assert acc.spent == (0.0, 0.0)
    # the same weights declared as a (public) dict are accepted
    public = KernelSVM(lam=1e-2, kernel="rbf", gamma=2.0, tol=1e-8, class_weight=dict(model.class_weight_)).fit(X, y)
    assert np.array_equal(public.mu_, model.mu_)
    TDDL(public, 1.0, 1e-6, data_norm=1.0, accountant=acc, random_state=0).fit(Z)
    assert acc.spent[0] > 0.9


# ------------------------------------------------------------------------------ PrivateGridSearch
def test_private_grid_search_with_privately_released_balanced_weights():
    X, y = _imbalanced(1500, 3)
    Z = np.random.default_rng(2).uniform(-0.7, 0.7, (100, 2))
    acc = BudgetAccountant(2.0, 1e-6)
    sel = PrivateGridSearch({"lam": [1e-3, 1e-2]}, 2.0, 1e-6, Z=Z, data_norm=1.0,
                            base_params={"kernel": "rbf", "gamma": 3.0, "tol": 1e-8}, class_weight="balanced",
                            prior_epsilon_share=0.0, random_state=0, accountant=acc).fit(X, y)
    assert acc.spent == pytest.approx((2.0, 1e-6))  # the weights' share is inside the total ε
    assert sel.privacy_.class_weight_epsilon == pytest.approx(0.1)
    cw = sel.class_weight_
    n1 = int(np.sum(y > 0))
    assert set(cw) == {-1, 1} and 1.0 / 10 <= min(cw.values()) and max(cw.values()) <= 10.0
    assert cw[1] == pytest.approx(len(y) / (2 * n1), rel=0.5)  # ε_w = 0.1: counts within a few tens
    assert sel.release_.calibration["lipschitz"] == pytest.approx(max(cw.values()))
    # a public dict is applied to every candidate
    sel2 = PrivateGridSearch({"lam": [1e-2]}, 2.0, 1e-6, Z=Z, data_norm=1.0,
                             base_params={"kernel": "rbf", "gamma": 3.0, "tol": 1e-8}, class_weight={1: 5.0},
                             prior_epsilon_share=0.0, random_state=0).fit(X, y)
    assert sel2.class_weight_ == {-1: 1.0, 1: 5.0} and sel2.privacy_.class_weight_epsilon == 0.0
    assert sel2.release_.calibration["lipschitz"] == 5.0
    with pytest.raises(ValueError, match="class_weight_epsilon_share"):
        PrivateGridSearch({"lam": [1e-2]}, 2.0, 1e-6, Z=Z, data_norm=1.0, class_weight="balanced",
                          class_weight_epsilon_share=1.0, accountant=acc).fit(X, y)
    with pytest.raises(ValueError, match="max_class_weight"):
        PrivateGridSearch({"lam": [1e-2]}, 2.0, 1e-6, Z=Z, data_norm=1.0, class_weight={1: 20.0}).fit(X, y)

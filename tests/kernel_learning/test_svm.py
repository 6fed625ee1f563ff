"""Tests of the certified kernel ERM (dpcore.KernelSVM / KernelLogisticRegression).

Oracles are independent: liblinear (scikit-learn's LinearSVC / LogisticRegression) on the same
linear problem, and for non-linear kernels on an exact finite feature map of the training set
(K = L L^T by eigendecomposition). The certificate is checked without trusting any oracle's
accuracy: P(w) - P(w_oracle) <= P(w) - P(w*) <= duality_gap_, and ||w_oracle - w*|| is itself
certified by weak duality with dpcore's dual objective.
"""

from __future__ import annotations

import logging
import math
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpcore
from dpcore import KernelLogisticRegression, KernelSVM, kernel_matrix
from dpcore.kernel_learning.svm import ConvergenceWarning

sklearn = pytest.importorskip("sklearn")
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402


def make_data(n, d, seed, noise=0.4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))  # unit ball
    score = X[:, 0] - 0.7 * X[:, 1 % d] ** 2 + noise * rng.normal(size=n)
    y = np.where(score > np.median(score), 1.0, -1.0)
    return X, y


def feature_map(X, **kp):
    """Exact finite feature map of the training set: Phi Phi^T = K (tiny negative eigenvalues clipped)."""
    K = kernel_matrix(X, **kp)
    K = 0.5 * (K + K.T)
    ev, V = np.linalg.eigh(K)
    ev = np.clip(ev, 0.0, None)
    return V * np.sqrt(ev)


def primal(loss, u, w_sq, lam):
    if loss == "hinge":
        lo = np.maximum(0.0, 1.0 - u)
    else:
        lo = np.logaddexp(0.0, -u)
    return lo.mean() + 0.5 * lam * w_sq


def oracle(loss, Phi, y, lam):
    n = Phi.shape[0]
    C = 1.0 / (lam * n)
    if loss == "hinge":
        m = LinearSVC(loss="hinge", dual=True, fit_intercept=False, C=C, tol=1e-12, max_iter=10**6, random_state=0)
    else:
        m = LogisticRegression(fit_intercept=False, C=C, tol=1e-12, max_iter=10**5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.fit(Phi, y)
    w = m.coef_.ravel()
    if loss == "logistic":
        # polish liblinear/lbfgs's answer with exact Newton steps on the smooth primal
        for _ in range(30):
            u = y * (Phi @ w)
            s = 0.5 * (1.0 - np.tanh(0.5 * u))  # sigma(-u)
            grad = -(Phi.T @ (y * s)) / n + lam * w
            H = (Phi.T * (s * (1.0 - s))) @ Phi / n + lam * np.eye(Phi.shape[1])
            step = np.linalg.solve(H, grad)
            w = w - step
            if np.linalg.norm(step) <= 1e-15 * (1.0 + np.linalg.norm(w)):
                break
    return w


ESTIMATORS = {"hinge": KernelSVM, "logistic": KernelLogisticRegression}


def check_against_oracle(est, X, y, Phi, loss, lam):
    """Certificate checks against a (possibly inexact) oracle on the feature map Phi."""
    w = Phi.T @ est.mu_
    w_o = oracle(loss, Phi, y, lam)
    P = primal(loss, y * (Phi @ w), w @ w, lam)
    P_o = primal(loss, y * (Phi @ w_o), w_o @ w_o, lam)
    slack = 1e-9 * (1 + abs(P))
    # reported objectives are those of the returned w
    assert P == pytest.approx(est.primal_objective_, rel=1e-8, abs=1e-10)
    assert est.w_norm_ == pytest.approx(math.sqrt(w @ w), rel=1e-7, abs=1e-9)
    # (2) P(w) - P(w*) <= gap, with P(w*) <= P(w_oracle)
    assert P - P_o <= est.duality_gap_ + slack
    # weak duality: dpcore's dual objective lower-bounds every primal value
    assert est.dual_objective_ <= P_o + slack
    # ||w - w*|| <= w_error_bound_, and ||w_o - w*|| <= sqrt(2 (P_o - D) / lam)
    oracle_err = math.sqrt(2.0 * max(0.0, P_o - est.dual_objective_ + slack) / lam)
    assert np.linalg.norm(w - w_o) <= est.w_error_bound_ + oracle_err + 1e-7
    return w, w_o


# ---------------------------------------------------------------------------------------------
# (1) independent oracles
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_linear_kernel_matches_liblinear(loss):
    X, y = make_data(300, 6, 0)
    lam = 0.01
    est = ESTIMATORS[loss](lam=lam, intercept_scaling=0.0, kernel="linear", tol=1e-10).fit(X, y)
    assert est.converged_ and est.duality_gap_ <= 1e-10 and est.n_iter_ > 0
    w, w_o = check_against_oracle(est, X, y, X, loss, lam)
    assert np.linalg.norm(w - w_o) <= 1e-5 * np.linalg.norm(w_o)
    np.testing.assert_allclose(est.decision_function(X), X @ w_o, rtol=0, atol=1e-5 * np.abs(X @ w_o).max())


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
@pytest.mark.parametrize(
    "kp",
    [dict(kernel="rbf", gamma=2.0), dict(kernel="poly", gamma=1.0, degree=3, coef0=1.0)],
    ids=["rbf", "poly"],
)
def test_nonlinear_kernels_match_feature_map_oracle(loss, kp):
    X, y = make_data(200, 3, 1)
    lam = 0.005
    est = ESTIMATORS[loss](lam=lam, intercept_scaling=0.0, tol=1e-9, **kp).fit(X, y)
    assert est.converged_ and est.duality_gap_ <= 1e-9
    Phi = feature_map(X, **kp)
    w, w_o = check_against_oracle(est, X, y, Phi, loss, lam)
    f, f_o = Phi @ w, Phi @ w_o
    np.testing.assert_allclose(est.train_decision_, f, atol=1e-8 * (1 + np.abs(f).max()))
    np.testing.assert_allclose(est.decision_function(X), f_o, atol=1e-4 * np.abs(f_o).max())


def test_hinge_dual_structure():
    X, y = make_data(150, 2, 2)
    lam = 0.02
    est = KernelSVM(lam=lam, intercept_scaling=0.0, kernel="rbf", gamma=1.5, tol=1e-9).fit(X, y)
    n = len(y)
    a = est.box_duals_
    assert np.all((a >= 0) & (a <= 1))
    np.testing.assert_allclose(est.mu_, y * a / (lam * n))
    assert est.C_ == pytest.approx(1 / (lam * n))
    # KKT: margin violators at the upper bound, well-classified points at 0
    u = y * est.train_decision_
    assert np.all(a[u < 1 - 1e-3] > 1 - 1e-3)
    assert np.all(a[u > 1 + 1e-3] < 1e-3)
    assert est.n_samples_fit_ == n and est.X_fit_.shape == X.shape
    assert est.lipschitz_ == 1.0
    assert est.kernel_params_ == {"kernel": "rbf", "gamma": 1.5, "degree": 3, "coef0": 1.0, "intercept_scaling": 0.0}
    assert est.w_error_bound_ == pytest.approx(math.sqrt(2 * est.duality_gap_ / lam))
    assert est.w_norm_ == pytest.approx(math.sqrt(est.mu_ @ kernel_matrix(X, kernel="rbf", gamma=1.5) @ est.mu_))


def test_logistic_stationarity_and_proba():
    X, y = make_data(120, 3, 3)
    est = KernelLogisticRegression(lam=0.01, kernel="poly", gamma=1.0, degree=2, tol=1e-9).fit(X, y)
    a = est.box_duals_
    assert np.all((a > 0) & (a < 1))
    u = y * est.train_decision_
    np.testing.assert_allclose(a, 1.0 / (1.0 + np.exp(u)), atol=1e-4)
    p = est.predict_proba(X)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_array_equal(p[:, 1] > 0.5, est.predict(X) == est.classes_[1])


# ---------------------------------------------------------------------------------------------
# (3) convergence, shrinking, cache
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_shrinking_and_small_cache_give_the_same_solution(loss):
    X, y = make_data(400, 4, 4)
    lam, kp = 2e-3, dict(kernel="rbf", gamma=3.0)
    ref = ESTIMATORS[loss](lam=lam, tol=1e-9, **kp).fit(X, y)
    assert ref.converged_ and ref.n_iter_ > 0
    # full Gram is 400^2 * 8 B = 1.28 MB; 0.1 MB holds ~33 rows
    for kw in [dict(shrinking=False), dict(cache_size=0.1), dict(cache_size=0.1, shrinking=False)]:
        est = ESTIMATORS[loss](lam=lam, tol=1e-9, **kp, **kw).fit(X, y)
        assert est.converged_ and est.duality_gap_ <= 1e-9
        # both within their certified radius of w*, so of each other
        diff = est.mu_ - ref.mu_
        K = kernel_matrix(X, **kp)
        dist = math.sqrt(max(0.0, diff @ K @ diff))
        assert dist <= est.w_error_bound_ + ref.w_error_bound_ + 1e-9


def test_max_iter_reports_the_honest_gap():
    X, y = make_data(300, 3, 5)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        est = KernelSVM(lam=1e-3, intercept_scaling=0.0, kernel="rbf", gamma=2.0, max_iter=20).fit(X, y)
    assert not est.converged_ and est.stop_reason_ == "max_iter" and est.n_iter_ == 20
    assert est.duality_gap_ > est.tol_
    # the reported gap is the true gap of the returned point
    Phi = feature_map(X, kernel="rbf", gamma=2.0)
    w = Phi.T @ est.mu_
    P = primal("hinge", y * (Phi @ w), w @ w, 1e-3)
    assert P == pytest.approx(est.primal_objective_, rel=1e-9)
    D = est.box_duals_.mean() - 0.5 * 1e-3 * (w @ w)
    assert D == pytest.approx(est.dual_objective_, rel=1e-9, abs=1e-12)
    assert est.duality_gap_ >= P - D - 1e-12


def test_tolerance_is_respected():
    X, y = make_data(250, 3, 6)
    for tol in [1e-3, 1e-5, 1e-8]:
        est = KernelSVM(lam=1e-3, kernel="poly", gamma=1.0, degree=3, tol=tol).fit(X, y)
        assert est.converged_ and est.duality_gap_ <= tol


# ---------------------------------------------------------------------------------------------
# (4) property-based certificate
# ---------------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(4, 40),
    d=st.integers(1, 4),
    seed=st.integers(0, 2**31 - 1),
    lam_exp=st.floats(-4, 0),
    loss=st.sampled_from(["hinge", "logistic"]),
    kern=st.sampled_from(["linear", "rbf", "poly"]),
)
def test_certificate_property(n, d, seed, lam_exp, loss, kern):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    y[0], y[1] = -1.0, 1.0
    lam = 10.0**lam_exp
    kp = {"linear": dict(kernel="linear"), "rbf": dict(kernel="rbf", gamma=1.0),
          "poly": dict(kernel="poly", gamma=0.5, degree=2, coef0=1.0)}[kern]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = ESTIMATORS[loss](lam=lam, tol=1e-7, **kp).fit(X, y)
    assert est.duality_gap_ >= 0 and est.primal_objective_ - est.dual_objective_ <= est.duality_gap_ + 1e-12
    if est.converged_:
        assert est.duality_gap_ <= 1e-7
    Phi = np.hstack([feature_map(X, **kp), np.full((n, 1), 0.5)])  # default intercept_scaling b = 0.5: phi' = (phi, b)
    check_against_oracle(est, X, y, Phi, loss, lam)


# ---------------------------------------------------------------------------------------------
# (5) validation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(lam=0.0), "lam"),
        (dict(lam=-1.0), "lam"),
        (dict(lam=float("nan")), "lam"),
        (dict(tol=0.0), "tol"),
        (dict(max_iter=0), "max_iter"),
        (dict(cache_size=-1), "cache_size"),
        (dict(cache_size="big"), "cache_size"),
        (dict(kernel="sigmoid"), "kernel"),
        (dict(gamma=-1.0), "gamma"),
        (dict(kernel="poly", degree=0), "degree"),
    ],
)
def test_invalid_parameters(kwargs, match):
    X, y = make_data(20, 2, 7)
    with pytest.raises(ValueError, match=match):
        KernelSVM(**kwargs).fit(X, y)


def test_invalid_data():
    X, y = make_data(20, 2, 8)
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="^X"):
        KernelSVM().fit(Xn, y)
    Xi = X.copy()
    Xi[0, 0] = np.inf
    with pytest.raises(ValueError, match="^X"):
        KernelLogisticRegression().fit(Xi, y)
    with pytest.raises(ValueError, match="^X"):
        KernelSVM().fit(X[0], y)
    with pytest.raises(ValueError, match="^y"):
        KernelSVM().fit(X, y[:-1])
    with pytest.raises(ValueError, match=r"^y contains .*outside the declared classes=None"):
        KernelSVM().fit(X, np.arange(20) % 3)
    with pytest.raises(ValueError, match="^y contains 1 label"):
        KernelSVM().fit(X, np.where(np.arange(20) == 7, 2, y))
    with pytest.raises(ValueError, match="^y"):
        KernelSVM().fit(X, np.where(y > 0, np.nan, 1.0))
    est = KernelSVM(kernel="linear").fit(X, y)
    with pytest.raises(ValueError, match="^X"):
        est.predict(np.ones((3, 5)))
    with pytest.raises(ValueError, match="not fitted"):
        KernelSVM().predict(X)


# ---------------------------------------------------------------------------------------------
# (6) labels, predict, score, params
# ---------------------------------------------------------------------------------------------


def test_string_labels_predict_score():
    X, y = make_data(200, 3, 9)
    labels = np.where(y > 0, "yes", "no")
    est = KernelSVM(lam=1e-3, kernel="rbf", gamma=2.0, classes=["yes", "no"]).fit(X, labels)
    assert list(est.classes_) == ["no", "yes"]
    pred = est.predict(X)
    assert pred.dtype == labels.dtype and set(pred) <= {"no", "yes"}
    np.testing.assert_array_equal(pred == "yes", est.decision_function(X) > 0)
    assert est.score(X, labels) == pytest.approx(np.mean(pred == labels))
    assert est.score(X, labels) > 0.8
    # same solution as with ±1 labels ("yes" = classes_[1] -> +1)
    ref = KernelSVM(lam=1e-3, kernel="rbf", gamma=2.0).fit(X, y)
    np.testing.assert_array_equal(est.mu_, ref.mu_)


def test_get_set_params_and_clone():
    from sklearn.base import clone

    est = KernelSVM(lam=0.1, kernel="poly", degree=2)
    p = est.get_params()
    assert p["lam"] == 0.1 and p["degree"] == 2 and p["shrinking"] is True
    assert set(p) == {"lam", "C", "kernel", "gamma", "degree", "coef0", "tol", "max_iter",
                      "cache_size", "shrinking", "classes", "class_weight", "max_class_weight", "verbose",
                      "intercept_scaling"}
    est.set_params(lam=0.5, gamma=2.0)
    assert est.lam == 0.5 and est.gamma == 2.0
    with pytest.raises(ValueError, match="Invalid parameter"):
        est.set_params(nu=1.0)
    c = clone(est)
    assert c.get_params() == est.get_params() and c is not est
    assert "lam=0.5" in repr(est)


def test_gamma_default_and_verbose(capsys, caplog):
    X, y = make_data(60, 4, 10)
    with caplog.at_level(logging.DEBUG, logger="dpcore.kernel_learning.svm"):
        est = KernelSVM(verbose=True).fit(X, y)
    assert est.kernel_params_["gamma"] == 1.0  # issue 25: data-independent 1.0 ("auto" is 1 / n_features)
    out = capsys.readouterr()
    assert out.out == "" and "KernelSVM" in out.err  # a progress bar on stderr, nothing printed
    assert "exact duality gap" in caplog.text and "duality gap" in caplog.records[-1].getMessage()


def test_pickle_roundtrip():
    X, y = make_data(80, 2, 11)
    est = KernelLogisticRegression(lam=0.01).fit(X, y)
    est2 = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(est.decision_function(X), est2.decision_function(X))


# ---------------------------------------------------------------------------------------------
# (7) determinism
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_deterministic(loss):
    X, y = make_data(300, 5, 12)
    a = ESTIMATORS[loss](lam=1e-3, kernel="rbf", gamma=1.0, cache_size=0.3).fit(X, y)
    b = ESTIMATORS[loss](lam=1e-3, kernel="rbf", gamma=1.0, cache_size=0.3).fit(X, y)
    np.testing.assert_array_equal(a.mu_, b.mu_)
    assert a.duality_gap_ == b.duality_gap_ and a.n_iter_ == b.n_iter_


def test_certificate_recomputed_independently():
    from dpcore import _core

    X, y = make_data(150, 3, 13)
    lam, kp = 1e-2, ("rbf", 2.0, 3, 1.0, 0.0)
    est = KernelSVM(lam=lam, intercept_scaling=0.0, kernel="rbf", gamma=2.0, tol=1e-8).fit(X, y)
    c = _core.erm_certificate(X, y, est.box_duals_, "hinge", *kp, lam)
    assert c["gap"] == est.duality_gap_ and np.array_equal(c["mu"], est.mu_)
    # a worse feasible point gets a larger certified gap that still bounds its suboptimality
    a2 = np.clip(est.box_duals_ * 0.5 + 0.2, 0, 1)
    c2 = _core.erm_certificate(X, y, a2, "hinge", *kp, lam)
    assert c2["gap"] > est.duality_gap_
    assert c2["primal"] - est.primal_objective_ <= c2["gap"] + est.duality_gap_
    with pytest.raises(ValueError, match="^a"):
        _core.erm_certificate(X, y, a2 + 1.0, "hinge", *kp, lam)
    # the model does not alias the caller's array
    X[0, 0] = 99.0
    assert est.X_fit_[0, 0] != 99.0


def test_exported():
    assert dpcore.KernelSVM is KernelSVM and "KernelLogisticRegression" in dpcore.__all__


# ---------------------------------------------------------------------------------------------
# (8) progress and interruption
# ---------------------------------------------------------------------------------------------

# A hard problem (tiny lam, noisy labels, tol near the float64 floor): an uninterrupted fit takes
# well over 10 s on 2 cores, so every interruption below lands while the solver runs.
def _long_problem():
    X, y = make_data(3000, 5, 0, noise=1.0)
    est = KernelSVM(lam=1e-7, kernel="rbf", gamma=5.0, tol=1e-9, max_iter=10**9)
    return X, y, est


def test_ctrl_c_interrupts_fit_promptly_and_leaves_it_unfitted(python_sigint):
    import _thread
    import threading
    import time

    X, y, est = _long_problem()
    est.fit(X[:200], y[:200])  # an earlier fit must not survive an interrupted refit
    assert hasattr(est, "mu_")
    lock, state = threading.Lock(), {"running": True, "sent": None}

    def fire():
        with lock:
            if state["running"]:
                state["sent"] = time.perf_counter()
                _thread.interrupt_main()

    timer = threading.Timer(0.2, fire)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            try:
                est.fit(X, y)
            finally:
                with lock:
                    state["running"] = False
                raised = time.perf_counter()
    finally:
        timer.cancel()
        timer.join()
    assert state["sent"] is not None
    # the solver polls for signals every ~0.1 s; an unhonoured interrupt would only surface
    # after the whole (> 10 s) solve, so this bound is generous, not a timing benchmark
    assert raised - state["sent"] < 5.0
    for attr in ("mu_", "X_fit_", "duality_gap_", "classes_", "_mu_sv"):
        assert not hasattr(est, attr)
    with pytest.raises(dpcore.kernel_learning.svm.NotFittedError):
        est.predict(X[:3])


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_progress_callback_exception_abandons_the_solve(loss):
    from dpcore import _core

    class Stop(Exception):
        pass

    X, y = make_data(400, 4, 14)
    calls = []

    def progress(it, gap, exact, active):
        calls.append((it, gap, exact, active))
        raise Stop

    with pytest.raises(Stop):
        _core.erm_fit(X, y, loss, "rbf", 1.0, 3, 0.0, 0.0, 1e-6, 1e-12, 10**9, 2**20, True, progress)
    # deterministic: the first exact gap check at the latest calls the hook
    assert len(calls) == 1
    it, gap, exact, active = calls[0]
    # it = 0 is possible for the logistic loss: its warm start (the Nyström optimum) is checked exactly before any
    # kernel product, and a loaded machine reaches the ~0.1 s poll there first
    assert it >= (1 if loss == "hinge" else 0) and gap >= 0.0 and 1 <= active <= 400


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_progress_reports_exact_checks_and_result_is_unchanged(loss):
    from dpcore import _core

    X, y = make_data(300, 4, 15)
    args = (X, y, loss, "rbf", 1.0, 3, 0.0, 0.0, 1e-3, 1e-8, 10**7, 2**20, True)
    calls = []
    res = _core.erm_fit(*args, lambda *a: calls.append(a))
    ref = _core.erm_fit(*args)
    exact = [(it, gap) for it, gap, ex, _ in calls if ex]
    # every exact check of the solver is reported (the final certificate is added after)
    assert exact == [tuple(h) for h in res["history"][:-1]]
    assert np.array_equal(res["a"], ref["a"]) and res["gap"] == ref["gap"]


def test_verbose_progress_bar(capsys, caplog):
    X, y = make_data(200, 3, 16)
    with caplog.at_level(logging.DEBUG, logger="dpcore"):
        est = KernelLogisticRegression(lam=1e-3, verbose=True).fit(X, y)
    out = capsys.readouterr()
    assert out.out == "" and "KernelLogisticRegression" in out.err and est.converged_
    assert "exact duality gap" in caplog.text


def test_logistic_cache_size_auto_holds_the_float32_gram(caplog):
    # cache_size="auto" (the default) gives the logistic solver the float32 Gram matrix beyond the old
    # 200 MB default (4 n**2 bytes up to 2 GiB): n = 8000 needs 512 MB in float64, 256 MB in float32
    assert KernelLogisticRegression().cache_size == "auto" and KernelSVM().cache_size == "auto"
    X, y = make_data(8000, 2, 21)
    paths = {}
    for cache in ("auto", 200.0):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="dpcore.kernel_learning.svm"):
            m = KernelLogisticRegression(lam=1.0 / 80.0, gamma=1.0, tol=1e-8, cache_size=cache).fit(X, y)
        assert m.converged_
        paths[cache] = ("full Gram" in caplog.text, m.decision_function(X[:50]))
    assert paths["auto"][0] and not paths[200.0][0]
    # same problem, certified on both paths
    np.testing.assert_allclose(paths["auto"][1], paths[200.0][1], atol=1e-3)


def test_logistic_certificate_from_the_held_float64_gram():
    """Issue 26: with the float64 Gram held, KernelLogisticRegression sums its certificate from that Gram
    (no second kernel pass). The certificate agrees with the engine's independent recomputation within both
    float bounds, certifies the same point, and the release built on the model does not depend on which one."""
    import copy

    from dpcore import TDDL, _core
    from dpcore._internal.fp import KERNEL_SUM_REL_ERROR, gamma_k

    X, y = make_data(400, 30, 41)
    n, lam, tol = 400, 1e-3, 1e-8
    kp = dict(kernel="poly", gamma=0.5, degree=3, coef0=1.0)
    b = 0.5  # intercept_scaling: the shifted kernel K + b**2
    m = KernelLogisticRegression(lam=lam, tol=tol, intercept_scaling=b, cache_size=200.0, **kp).fit(X, y)
    assert m.converged_ and m.duality_gap_ <= tol
    c = _core.erm_certificate(X, y, m.box_duals_, "logistic", "poly", 0.5, 3, 1.0, b, lam)
    np.testing.assert_array_equal(c["mu"], m.mu_)
    # another summation of the same K'mu (the engine's values are not reused) ...
    assert not np.array_equal(c["decision"], m.train_decision_)
    # ... within E_engine + E_gram (fp::gram_sum_rel_error = E + gamma_{n//8+9} (1 + E)) of each other
    rel = KERNEL_SUM_REL_ERROR + (KERNEL_SUM_REL_ERROR + gamma_k(n // 8 + 9) * (1.0 + KERNEL_SUM_REL_ERROR))
    scale = (np.abs(kernel_matrix(X, **kp)) + b * b) @ np.abs(m.mu_)
    assert np.all(np.abs(c["decision"] - m.train_decision_) <= rel * scale)
    # both certify the point; their gaps differ by at most the two float slacks
    sd = np.sqrt(np.asarray(_core.kernel_diag(X, "poly", 0.5, 3, 1.0, b)))
    slack = 2.01 * KERNEL_SUM_REL_ERROR * sd.mean() * np.sum(sd * np.abs(m.mu_))
    assert c["gap"] <= tol and abs(c["gap"] - m.duality_gap_) <= slack + 1e-15
    assert m.w_error_bound_ <= math.sqrt(2 * tol / lam)
    # the release calibrates with the public tol: the same output whichever certificate the model carries
    engine_model = copy.deepcopy(m)
    engine_model.duality_gap_ = float(c["gap"])
    engine_model.w_error_bound_ = math.sqrt(2.0 * engine_model.duality_gap_ / lam)
    Z = np.random.default_rng(3).uniform(-0.5, 0.5, size=(60, 30)) / math.sqrt(30)
    outs = [TDDL(mod, 1.0, 1e-6, data_norm=1.0, noise="gaussian", random_state=5).fit(Z).predict(X[:20])
            for mod in (m, engine_model)]
    np.testing.assert_array_equal(outs[0], outs[1])

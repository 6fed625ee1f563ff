"""Multi-class kernel logistic regression (issue 24): labels, certificate, K = 2 consistency, weights,
scikit-learn conventions."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpcore
from dpcore import KernelLogisticRegression, MulticlassKernelLogisticRegression
from dpcore.exceptions import ConvergenceWarning, NotFittedError


def _blobs(n=300, K=3, seed=0, spread=0.12):
    rng = np.random.default_rng(seed)
    ang = 2 * np.pi * np.arange(K) / K
    centers = 0.5 * np.column_stack([np.cos(ang), np.sin(ang)])
    y = rng.integers(0, K, size=n)
    X = centers[y] + spread * rng.standard_normal((n, 2))
    return X, y


def test_three_classes_fit_predict_proba_and_certificate():
    X, y = _blobs()
    labels = np.array(["x", "y", "z"])
    clf = MulticlassKernelLogisticRegression(lam=1e-3, gamma=2.0, classes=["z", "x", "y"], tol=1e-8).fit(X, labels[y])
    assert clf.classes_.tolist() == ["x", "y", "z"]
    assert clf.converged_ and clf.duality_gap_ <= 1e-8
    assert clf.w_error_bound_ == pytest.approx(math.sqrt(2 * clf.duality_gap_ / 1e-3))
    f = clf.decision_function(X)
    assert f.shape == (300, 3)
    np.testing.assert_allclose(f, clf.train_decision_, rtol=0, atol=1e-9)
    p = clf.predict_proba(X)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.log(p), clf.predict_log_proba(X), atol=1e-12)
    assert clf.score(X, labels[y]) > 0.95
    # rows of mu sum to zero (the intercept/score shift is regularised away) and obey |M_i| <= √2/(λn)
    np.testing.assert_allclose(clf.mu_.sum(axis=1), 0.0, atol=1e-15)
    assert np.all(np.linalg.norm(clf.mu_, axis=1) <= math.sqrt(2) / (1e-3 * 300) * (1 + 1e-12))
    assert clf.lipschitz_ == pytest.approx(math.sqrt(2))
    np.testing.assert_allclose(clf.intercept_, 0.25 * clf.mu_.sum(axis=0))


def test_missing_class_still_trains_and_is_never_predicted():
    X, y = _blobs(K=3)
    clf = MulticlassKernelLogisticRegression(lam=1e-3, gamma=2.0, classes=[0, 1, 2, 3], tol=1e-8).fit(X, y)
    assert clf.converged_ and clf.decision_function(X).shape == (300, 4)
    assert 3 not in set(clf.predict(X).tolist())
    # a single-class training set trains like any other
    one = MulticlassKernelLogisticRegression(lam=1e-2, classes=[0, 1, 2], tol=1e-8).fit(X, np.zeros(300, int))
    assert one.converged_ and set(one.predict(X).tolist()) == {0}


def test_k2_matches_binary_logistic_at_half_lambda():
    """K = 2: f_2 − f_1 solves the binary logistic problem at λ/2 (Rust docs); decision_function is (m,)."""
    X, y = _blobs(n=200, K=2, seed=3, spread=0.4)
    ypm = np.where(y == 1, 1, -1)
    multi = MulticlassKernelLogisticRegression(lam=2e-3, gamma=1.0, classes=[-1, 1], tol=1e-9,
                                               intercept_scaling=0.5).fit(X, ypm)
    binary = KernelLogisticRegression(lam=1e-3, gamma=1.0, classes=[-1, 1], tol=1e-9,
                                      intercept_scaling=0.5).fit(X, ypm)
    g = multi.decision_function(X)
    assert g.shape == (200,)
    np.testing.assert_allclose(g, binary.decision_function(X), atol=2e-4)
    assert (multi.predict(X) == binary.predict(X)).mean() > 0.99


def test_class_weights_equal_duplicated_records():
    X, y = _blobs(n=60, seed=5, spread=0.3)
    w = MulticlassKernelLogisticRegression(lam=0.01, classes=[0, 1, 2], class_weight={1: 2.0}, tol=1e-10).fit(X, y)
    dup = np.flatnonzero(y == 1)
    Xd, yd = np.vstack([X, X[dup]]), np.concatenate([y, y[dup]])
    nd = len(yd)
    d = MulticlassKernelLogisticRegression(lam=0.01 * 60 / nd, classes=[0, 1, 2], tol=1e-10).fit(Xd, yd)
    # both fits are certified: each is within w_error_bound_ of F* in H^K, so within that times sqrt(k'(x, x))
    # = sqrt(1.25) at every x (rbf, b = 0.5)
    bound = (w.w_error_bound_ + d.w_error_bound_) * math.sqrt(1.25)
    assert bound < 1e-3
    np.testing.assert_allclose(w.decision_function(X), d.decision_function(X), atol=bound)
    assert w.lipschitz_ == pytest.approx(2 * math.sqrt(2)) and w.class_weight_ == {0: 1.0, 1: 2.0, 2: 1.0}


def test_block_path_equals_cached_gram():
    X, y = _blobs(n=400, seed=7)
    a = MulticlassKernelLogisticRegression(lam=1e-3, classes=[0, 1, 2], tol=1e-9).fit(X, y)
    b = MulticlassKernelLogisticRegression(lam=1e-3, classes=[0, 1, 2], tol=1e-9, cache_size=0.1).fit(X, y)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-4)


@pytest.mark.parametrize("kw, match, exc", [
    (dict(classes=None), "classes", TypeError),
    (dict(classes=[0]), "classes", ValueError),
    (dict(classes=[0, 0, 1]), "distinct", ValueError),
    (dict(classes=[0, 1, 2], lam=0.0), "lam", ValueError),
    (dict(classes=[0, 1, 2], tol=-1.0), "tol", ValueError),
    (dict(classes=[0, 1, 2], max_iter=0), "max_iter", ValueError),
    (dict(classes=[0, 1, 2], class_weight="balanced"), "class_weight", ValueError),
    (dict(classes=[0, 1, 2], class_weight={5: 1.0}), "class_weight", ValueError),
    (dict(classes=[0, 1, 2], class_weight={1: 100.0}), "max_class_weight", ValueError),
    (dict(classes=[0, 1]), "outside the declared classes", ValueError),
])
def test_validation_names_the_parameter(kw, match, exc):
    X, y = _blobs(n=30)
    with pytest.raises(exc, match=match):
        MulticlassKernelLogisticRegression(**kw).fit(X, y)


def test_not_fitted_nan_and_shapes():
    clf = MulticlassKernelLogisticRegression(classes=[0, 1, 2])
    with pytest.raises(NotFittedError):
        clf.predict(np.zeros((2, 2)))
    X, y = _blobs(n=30)
    with pytest.raises(ValueError, match="X"):
        clf.fit(np.where(np.arange(60).reshape(30, 2) == 3, np.nan, X), y)
    clf.fit(X, y)
    with pytest.raises(ValueError):
        clf.predict(np.zeros((2, 3)))


def test_max_iter_reached_warns_with_honest_gap():
    X, y = _blobs(n=200, seed=1, spread=0.3)
    with pytest.warns(ConvergenceWarning, match="gap"):
        clf = MulticlassKernelLogisticRegression(lam=1e-5, classes=[0, 1, 2], tol=1e-12, max_iter=1).fit(X, y)
    assert not clf.converged_ and clf.duality_gap_ > 1e-12


def test_certificate_is_recomputed_from_the_dual_point():
    X, y = _blobs(n=80, seed=2)
    clf = MulticlassKernelLogisticRegression(lam=1e-2, classes=[0, 1, 2], tol=1e-9).fit(X, y)
    kp = clf.kernel_params_
    c = dpcore._core.multiclass_certificate(clf.X_fit_, y.astype(np.int64), clf.dual_point_, kp["kernel"], kp["gamma"],
                                            kp["degree"], kp["coef0"], kp["intercept_scaling"], 1e-2)
    assert c["gap"] == clf.duality_gap_
    # a perturbed dual point has a larger gap (the certificate is not a function of the solver's state)
    p = clf.dual_point_.copy()
    p[:, 0] = 0.5 * p[:, 0]
    c2 = dpcore._core.multiclass_certificate(clf.X_fit_, y.astype(np.int64), p, kp["kernel"], kp["gamma"],
                                             kp["degree"], kp["coef0"], kp["intercept_scaling"], 1e-2)
    assert c2["gap"] > 100 * c["gap"]


def test_sklearn_check_estimator_k3():
    from sklearn.utils.estimator_checks import check_estimator

    from dpcore._internal.tags import LABEL_CHECKS
    from dpcore.kernel_learning.multiclass import MULTICLASS_EXPECTED_FAILED_CHECKS
    est = MulticlassKernelLogisticRegression(classes=[0, 1, 2], lam=1e-2, tol=1e-6)
    expected = {**LABEL_CHECKS, **MULTICLASS_EXPECTED_FAILED_CHECKS}
    res = check_estimator(est, expected_failed_checks=expected, on_fail=None)
    failed = {r["check_name"] for r in res if r["status"] == "failed"}
    assert failed == set(), failed
    assert {r["check_name"] for r in res if r["status"] == "passed"} >= {"check_classifiers_classes",
                                                                         "check_supervised_y_2d"} - set(expected)


def test_nystrom_warm_start_cuts_kernel_products_and_stays_deterministic():
    # issue 26: small λ, five overlapping classes; from a cold start the solver needed 160 kernel products
    # (measured), warm-started from the Nyström problem 73; the certificate is unchanged in kind
    X, y = _blobs(n=600, K=5, seed=3, spread=0.3)
    X = X / max(1.0, np.linalg.norm(X, axis=1).max())
    kw = dict(lam=1e-4, gamma=4.0, classes=list(range(5)), tol=1e-8)
    a = MulticlassKernelLogisticRegression(**kw).fit(X, y)
    assert a.converged_ and a.duality_gap_ <= 1e-8
    assert a.n_kernel_products_ <= 110, a.n_kernel_products_
    b = MulticlassKernelLogisticRegression(**kw).fit(X, y)
    np.testing.assert_array_equal(a.mu_, b.mu_)

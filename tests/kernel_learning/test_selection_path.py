"""Issue 26, item 2: the kernel logistic candidates of a selection fitted as one regularisation path.

The path (``fit_logistic_path``, ``_core.erm_fit_path``) must give every candidate the model its own fit gives,
certified to its own tol, and ``PrivateGridSearch`` must select and release the same model as with every candidate
fitted alone (deterministic seeds).
"""

import math

import numpy as np
import pytest

import dpcore
from dpcore.kernel_learning.svm import KernelLogisticRegression, fit_logistic_path


def _data(n=600, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.6, 0.6, size=(n, 3))
    y = np.where(X[:, 0] * X[:, 1] + 0.1 * rng.standard_normal(n) > 0, 1, -1)
    return X, y


# cache_size 2 MB: the float32 Gram (1.44 MB) but not the float64 one (2.88 MB) at n = 600; "auto": float64 Gram;
# 0.3 MB: no Gram (fused products)
@pytest.mark.parametrize("cache_size", [2.0, "auto", 0.3])
@pytest.mark.parametrize("class_weight", [None, {1: 3.0}])
def test_path_gives_each_model_a_certified_point_of_its_own_fit(cache_size, class_weight):
    X, y = _data()
    Cs = [3.0, 0.03, 0.3, 30.0]
    kw = dict(kernel="rbf", gamma=2.0, cache_size=cache_size, class_weight=class_weight)
    path = fit_logistic_path([KernelLogisticRegression(C=C, **kw) for C in Cs], X, y)
    for C, m in zip(Cs, path):
        alone = KernelLogisticRegression(C=C, **kw).fit(X, y)
        assert m.converged_ and alone.converged_
        assert m.duality_gap_ <= m.tol_ == alone.tol_
        assert m.lam_ == alone.lam_ and m.C_ == alone.C_ and m.lipschitz_ == alone.lipschitz_
        if C == min(Cs):
            # the smallest C starts its Nyström solve cold, as its own fit: the same dual point, bit for bit
            np.testing.assert_array_equal(m.mu_, alone.mu_)
            assert m.duality_gap_ == pytest.approx(alone.duality_gap_, rel=1e-3)
            np.testing.assert_allclose(m.train_decision_, alone.train_decision_, rtol=1e-10, atol=1e-12)
            assert m.n_iter_ <= alone.n_iter_
            np.testing.assert_array_equal(m.predict(X), alone.predict(X))
        else:
            # the others start it from the next smaller C's optimum: another point certified to the same tol,
            # so within (2 gap / λ)^½ of the optimum in the RKHS of K' = K + intercept_scaling² (k'(x, x) =
            # 1 + 0.25 for rbf): their decision values differ by at most the two radii times k'(x, x)^½
            radius = math.sqrt(2 * m.duality_gap_ / m.lam_) + math.sqrt(2 * alone.duality_gap_ / alone.lam_)
            diff = np.abs(m.train_decision_ - alone.train_decision_)
            assert np.all(diff <= radius * math.sqrt(1.25) + 1e-10 * (1 + np.abs(alone.train_decision_)))
    # one read-only copy of the training rows for the whole path (not the caller's array)
    assert all(m.X_fit_ is path[0].X_fit_ for m in path) and path[0].X_fit_ is not X
    assert not path[0].X_fit_.flags.writeable
    np.testing.assert_array_equal(path[0].X_fit_, X)


def test_path_refuses_models_that_differ_beyond_lambda():
    X, y = _data(100)
    with pytest.raises(ValueError, match="models"):
        fit_logistic_path([KernelLogisticRegression(C=1.0), KernelLogisticRegression(C=2.0, gamma=3.0)], X, y)
    with pytest.raises(ValueError, match="models"):
        fit_logistic_path([], X, y)
    with pytest.raises(ValueError, match="models"):
        fit_logistic_path([dpcore.KernelSVM(C=1.0)], X, y)


@pytest.mark.parametrize("cache_size", [2.0, "auto"])
@pytest.mark.parametrize("class_weight", [None, "balanced"])
def test_selection_with_the_path_selects_and_releases_the_same_model(cache_size, class_weight):
    X, y = _data()
    Z = np.random.default_rng(7).uniform(-0.6, 0.6, size=(80, 3))
    grid = [{"estimator": ["KernelLogisticRegression"], "C": [0.3, 3.0, 30.0, 300.0]},
            {"estimator": ["OutputPerturbation"], "lam": [1e-2]}]
    out = {}
    for path in (False, True):
        sel = dpcore.PrivateGridSearch(grid, 8.0, 1e-6, Z=Z, data_norm=1.0, scoring="roc_auc",
                                       base_params={"kernel": "rbf", "gamma": 2.0, "cache_size": cache_size},
                                       class_weight=class_weight, random_state=5)
        sel._path_fits = path
        out[path] = sel.fit(X, y)
    old, new = out[False], out[True]
    assert new.best_params_ == old.best_params_ and new.candidates_ == old.candidates_
    assert new.privacy_ == old.privacy_ and new.class_weight_ == old.class_weight_
    assert new.best_score_ == pytest.approx(old.best_score_, rel=1e-9, abs=1e-6)
    np.testing.assert_allclose(new.decision_function(X), old.decision_function(X), rtol=1e-7, atol=1e-9)


def _path_models(n=300, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.6, 0.6, size=(n, 3))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] > 0, 1, -1)
    models = fit_logistic_path([KernelLogisticRegression(C=c, kernel="rbf", gamma=2.0, tol="auto")
                                for c in (0.1, 1.0, 10.0)], X, y)
    return X, y, models, rng


def test_batch_predictions_are_each_models_kernel_predict_within_the_engine_accuracy():
    # one kernel pass for the whole path (kernel_predict_many) gives each model's K(Z, X)μ to the engine's
    # documented accuracy KERNEL_SUM_REL_ERROR · Σ_j |K_tj μ_j| (the bound TDDL's calibration relies on)
    from dpcore import _core
    from dpcore._internal.fp import KERNEL_SUM_REL_ERROR
    from dpcore.kernel_learning.tddl import BatchPredictions
    from dpcore.kernels.evaluation import kernel_args

    X, y, models, rng = _path_models()
    Z = rng.uniform(-0.6, 0.6, size=(40, 3))
    batch = BatchPredictions(models)
    k = dict(models[0].kernel_params_)
    for m in models:
        got = batch.predictions(m, Z, k)
        alone = _core.kernel_predict(Z, m.X_fit_, m.mu_, *kernel_args(k))
        bound = KERNEL_SUM_REL_ERROR * (np.abs(_core.kernel_matrix(Z, m.X_fit_, *kernel_args(k))) @ np.abs(m.mu_))
        assert np.all(np.abs(got - alone) <= 2 * bound)
    other = KernelLogisticRegression(C=1.0, kernel="rbf", gamma=2.0).fit(X, y)
    assert batch.predictions(other, Z, k) is None  # not one of the batch: its TDDL computes it alone


def test_kernel_predict_many_checks_its_arguments():
    from dpcore import _core

    X, y, models, rng = _path_models(n=50)
    Z = rng.uniform(-0.6, 0.6, size=(5, 3))
    with pytest.raises(ValueError, match="mus"):
        _core.kernel_predict_many(Z, X, np.ones((2, 49)), "rbf", 2.0, 3, 0.0, 0.0)
    with pytest.raises(ValueError, match="mu"):
        _core.kernel_predict_many(Z, X, np.full((2, 50), np.nan), "rbf", 2.0, 3, 0.0, 0.0)
    out = _core.kernel_predict_many(Z, X, np.asfortranarray(np.stack([m.mu_ for m in models])), "rbf", 2.0, 3,
                                    0.0, 0.0)
    assert out.shape == (3, 5)


def test_release_decisions_match_decision_function_and_fall_back_beyond_the_budget():
    from dpcore import TDDL
    from dpcore.kernel_learning.release import ReleaseDecisions

    X, y, models, rng = _path_models()
    Z = rng.uniform(-0.6, 0.6, size=(40, 3))
    rels = [TDDL(m, 1.0, 1e-6, data_norm=1.0, noise="gp", random_state=i).fit(Z).release_
            for i, m in enumerate(models)]
    rels[1] = rels[1].calibrate_prior(0.3)  # an intercept
    shared = ReleaseDecisions(X)
    tiny = ReleaseDecisions(X, max_bytes=8)
    for r in rels:
        np.testing.assert_allclose(shared.decision_function(r), r.decision_function(X), rtol=1e-11, atol=1e-12)
        np.testing.assert_array_equal(tiny.decision_function(r), r.decision_function(X))


def test_interpolation_reuses_the_cholesky_factor_bit_for_bit():
    from dpcore.kernel_learning.tddl import _interpolate

    rng = np.random.default_rng(0)
    A = rng.standard_normal((30, 30))
    K = A @ A.T
    cache: dict = {}
    for seed in range(3):
        yv = np.random.default_rng(seed).standard_normal(30)
        a_cached, _ = _interpolate(K, yv, 1e-3, cache)
        a_alone, _ = _interpolate(K, yv, 1e-3)
        np.testing.assert_array_equal(a_cached, a_alone)
    assert len(cache) == 1

"""Issue 26, item 2: the kernel logistic candidates of a selection fitted as one regularisation path.

The path (``fit_logistic_path``, ``_core.erm_fit_path``) must give every candidate the model its own fit gives,
certified to its own tol, and ``PrivateGridSearch`` must select and release the same model as with every candidate
fitted alone (deterministic seeds).
"""

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
def test_path_gives_each_model_of_its_own_fit(cache_size, class_weight):
    X, y = _data()
    Cs = [3.0, 0.03, 0.3, 30.0]
    kw = dict(kernel="rbf", gamma=2.0, cache_size=cache_size, class_weight=class_weight)
    path = fit_logistic_path([KernelLogisticRegression(C=C, **kw) for C in Cs], X, y)
    for C, m in zip(Cs, path):
        alone = KernelLogisticRegression(C=C, **kw).fit(X, y)
        assert m.converged_ and alone.converged_
        assert m.duality_gap_ <= m.tol_ == alone.tol_
        np.testing.assert_array_equal(m.mu_, alone.mu_)  # the same dual point, bit for bit
        assert m.duality_gap_ == pytest.approx(alone.duality_gap_, rel=1e-3)
        np.testing.assert_allclose(m.train_decision_, alone.train_decision_, rtol=1e-10, atol=1e-12)
        assert m.lam_ == alone.lam_ and m.C_ == alone.C_ and m.lipschitz_ == alone.lipschitz_
        assert m.n_iter_ <= alone.n_iter_
        np.testing.assert_array_equal(m.predict(X), alone.predict(X))


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

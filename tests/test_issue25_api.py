"""Issue 25, item 1: defaults that fit — ``tol="auto"``, scikit-learn's ``C``, a data-independent ``gamma`` and
SimplexERM's default ``lam``.

Deterministic: fixed seeds, and every assertion is about public quantities or exact equalities."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dpcore
from dpcore.exceptions import ConvergenceWarning


def _data(n=200, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1, -1)
    return X, y


def _neighbour(X, y, seed=1):
    """Replace the first record by another row of the unit ball with the other label."""
    rng = np.random.default_rng(seed)
    X2, y2 = X.copy(), y.copy()
    v = rng.normal(size=X.shape[1])
    X2[0] = 0.9 * v / np.linalg.norm(v)
    y2[0] = -y[0]
    return X2, y2


# -- tol="auto" -----------------------------------------------------------------------------------

def test_objective_perturbation_fits_with_defaults_at_20000_features():
    """Was refused: ``tol=1e-10 is below what float64 can certify … use tol >= …``."""
    rng = np.random.default_rng(0)
    n, p = 120, 20_000
    X = rng.normal(size=(n, p))
    X /= np.linalg.norm(X, axis=1)[:, None]
    y = np.where(X[:, 0] > 0, 1, -1)
    clf = dpcore.ObjectivePerturbation(epsilon=1.0, delta=1e-6, lam=1e-3, data_norm=1.0, random_state=0).fit(X, y)
    assert clf.get_params()["tol"] == "auto"
    assert clf.tol_ == clf.privacy_.tol and 1e-10 < clf.tol_ < 1e-6
    # "auto" is the smallest value the public pre-check accepts: a bit less is refused before any charge
    with pytest.raises(ValueError, match="tol="):
        dpcore.ObjectivePerturbation(epsilon=1.0, delta=1e-6, lam=1e-3, data_norm=1.0, tol=0.9 * clf.tol_,
                                     random_state=0).fit(X, y)


@pytest.mark.parametrize("cls", [dpcore.KernelSVM, dpcore.KernelLogisticRegression])
def test_kernel_erm_default_tol_certifies_at_small_lam(cls):
    """At λ = 1e-7 the old default ``tol=1e-6`` lay below the float floor ``1e-12·R_φ'²/λ = 1.25e-5``: the fit
    stopped with ``stop_reason_="precision"`` and a ConvergenceWarning. ``"auto"`` is twice that floor."""
    X, y = _data(n=60)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = cls(lam=1e-7, gamma=1.0).fit(X, y)
    assert clf.converged_ and clf.stop_reason_ == "converged"
    assert clf.tol_ == pytest.approx(2 * 1e-12 * 1.25 / 1e-7, rel=1e-9)  # above the hinge's minimum 1e-8
    assert clf.duality_gap_ <= clf.tol_


def test_kernel_svm_default_tol_on_a_standard_task():
    X, y = _data(n=400)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = dpcore.KernelSVM().fit(X, y)
    assert clf.tol_ == dpcore.KernelSVM(tol="auto").fit(X[::-1], y[::-1]).tol_
    assert clf.score(X, y) > 0.8 and clf.duality_gap_ <= clf.tol_ == 1e-8  # hinge: max(2.5e-9, 1e-8)


def _auto_tols(make, X, y):
    return make().fit(X, y).tol_


@pytest.mark.parametrize("name, make", [
    ("KernelSVM", lambda: dpcore.KernelSVM(lam=1e-3)),
    ("KernelSVM-poly-weights", lambda: dpcore.KernelSVM(lam=1e-3, kernel="poly", class_weight={1: 3.0})),
    ("KernelLogisticRegression", lambda: dpcore.KernelLogisticRegression(lam=1e-3, kernel="linear")),
    ("ObjectivePerturbation", lambda: dpcore.ObjectivePerturbation(epsilon=1.0, delta=1e-6, data_norm=1.0,
                                                                   random_state=0)),
    ("ObjectivePerturbation-gamma", lambda: dpcore.ObjectivePerturbation(epsilon=1.0, noise="gamma", data_norm=1.0,
                                                                         random_state=0)),
    ("OutputPerturbation-hinge", lambda: dpcore.OutputPerturbation(epsilon=1.0, delta=1e-6, data_norm=1.0,
                                                                   loss="hinge", random_state=0)),
    ("OutputPerturbation-huber", lambda: dpcore.OutputPerturbation(epsilon=1.0, delta=1e-6, data_norm=1.0,
                                                                   loss="huber_svm", random_state=0)),
])
def test_auto_tol_is_the_same_on_neighbouring_datasets(name, make):
    X, y = _data()
    X2, y2 = _neighbour(X, y)
    t1, t2 = _auto_tols(make, X, y), _auto_tols(make, X2, y2)
    assert t1 == t2 and 0.0 < t1 < 1e-6


def test_multiclass_auto_tol_is_public():
    X, y = _data(n=150)
    yk = np.digitize(X[:, 1], [-0.2, 0.2])  # 3 classes
    X2, y2 = _neighbour(X, y)
    yk2 = yk.copy()
    yk2[0] = (yk[0] + 1) % 3
    klr = lambda: dpcore.MulticlassKernelLogisticRegression(classes=[0, 1, 2], gamma=1.0)  # noqa: E731
    a, b = klr().fit(X, yk), klr().fit(X2, yk2)
    assert a.tol_ == b.tol_ == pytest.approx(dpcore.kernel_learning.multiclass_min_tol(1e-3, 3, 1.25), rel=1e-12)
    assert a.duality_gap_ <= a.tol_
    glm = lambda: dpcore.MulticlassOutputPerturbation(epsilon=1.0, delta=1e-6, lam=1e-2, data_norm=1.0,  # noqa: E731
                                                      classes=[0, 1, 2], random_state=0)
    a, b = glm().fit(X, yk), glm().fit(X2, yk2)
    assert a.tol_ == b.tol_ == a.privacy_.tol and a.privacy_ == b.privacy_


@pytest.mark.parametrize("make", [
    lambda tol: dpcore.KernelSVM(lam=1e-3, tol=tol),
    lambda tol: dpcore.KernelLogisticRegression(lam=1e-3, tol=tol),
    lambda tol: dpcore.ObjectivePerturbation(epsilon=1.0, delta=1e-6, data_norm=1.0, tol=tol, random_state=0),
    lambda tol: dpcore.OutputPerturbation(epsilon=1.0, delta=1e-6, data_norm=1.0, tol=tol, random_state=0),
])
def test_explicit_float_tol_still_works_and_bad_tol_is_named(make):
    X, y = _data()
    assert make(1e-7).fit(X, y).tol_ == 1e-7
    for bad in ("tight", -1.0, float("nan"), None):
        with pytest.raises((ValueError, TypeError), match="tol"):
            make(bad).fit(X, y)


def test_releases_calibrate_with_the_fitted_tol():
    """TDDL reads ``tol_``: a model fitted with ``tol="auto"`` gives the noise of the same model at the explicit
    value, and that noise is smaller than at the old default ``tol=1e-6``."""
    X, y = _data(n=300)
    Z = np.random.default_rng(5).normal(size=(20, X.shape[1]))
    Z /= np.maximum(1.0, np.linalg.norm(Z, axis=1))[:, None]

    def sigma(model):
        return dpcore.TDDL(model, 1.0, 1e-6, data_norm=1.0, noise="gaussian", random_state=0).fit(Z).privacy_.noise_scale

    auto = dpcore.KernelLogisticRegression(lam=1e-3, gamma=1.0).fit(X, y)
    explicit = dpcore.KernelLogisticRegression(lam=1e-3, gamma=1.0, tol=auto.tol_).fit(X, y)
    old = dpcore.KernelLogisticRegression(lam=1e-3, gamma=1.0, tol=1e-6).fit(X, y)
    assert sigma(auto) == sigma(explicit) < sigma(old)


def test_private_grid_search_resolves_auto_tol_on_the_declared_domain():
    from dpcore.kernel_learning.selection import _certifiable

    params = _certifiable(dpcore.KernelLogisticRegression, {"lam": 1e-3, "gamma": 1.0, "tol": "auto"}, 1.0, 4,
                          n_samples=100)
    assert params["tol"] == pytest.approx(4 * 1e-12 * 1.25 / 1e-3, rel=1e-12)
    assert _certifiable(dpcore.KernelSVM, {"lam": 1e-3, "tol": "auto"}, 1.0, 4, n_samples=100)["tol"] == 1e-8
    assert _certifiable(dpcore.KernelSVM, {"lam": 1e-3, "tol": 1e-6}, 1.0, 4, n_samples=100)["tol"] == 1e-6


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_private_svm_auto_tol_is_public(loss):
    X, y = _data()
    X2, y2 = _neighbour(X, y)
    make = lambda: dpcore.PrivateSVM(epsilon=1.0, kernel="linear", data_norm=1.0, loss=loss, random_state=0)  # noqa: E731
    a, b = make().fit(X, y), make().fit(X2, y2)
    assert make().get_params()["tol"] == "auto"
    assert a.tol_ == b.tol_ == a.privacy_.tol and a.privacy_ == b.privacy_
    assert 0.0 < a.tol_ < 1e-10


# -- C with scikit-learn's meaning ------------------------------------------------------------------

@pytest.mark.parametrize("cls", [dpcore.KernelSVM, dpcore.KernelLogisticRegression])
def test_kernel_learners_take_sklearn_C(cls):
    """Was: ``KernelSVM(C=1.0)`` → ``unexpected keyword argument 'C'``. SVC's C is lam = 1/(C n)."""
    X, y = _data(n=100)
    by_C = cls(C=2.0, kernel="linear", tol=1e-9).fit(X, y)
    by_lam = cls(lam=1.0 / (2.0 * 100), kernel="linear", tol=1e-9).fit(X, y)
    assert by_C.lam_ == pytest.approx(by_lam.lam_, rel=1e-15) and by_C.C_ == 2.0
    np.testing.assert_allclose(by_C.mu_, by_lam.mu_, rtol=1e-9, atol=1e-12)
    assert cls().fit(X, y).lam_ == 1e-3 and "C" in cls().get_params()
    with pytest.raises(ValueError, match="C and lam"):
        cls(C=1.0, lam=1e-3).fit(X, y)
    for bad in (0.0, -1.0, float("inf")):
        with pytest.raises(ValueError, match="C"):
            cls(C=bad).fit(X, y)


def test_multiclass_kernel_learner_takes_C_and_releases_read_lam_():
    X, y = _data(n=120)
    yk = np.digitize(X[:, 1], [-0.2, 0.2])
    m = dpcore.MulticlassKernelLogisticRegression(C=5.0, gamma=1.0, classes=[0, 1, 2]).fit(X, yk)
    assert m.lam_ == pytest.approx(1.0 / 600) and m.C_ == 5.0 and m.lam is None
    with pytest.raises(ValueError, match="C and lam"):
        dpcore.MulticlassKernelLogisticRegression(C=5.0, lam=1e-3, classes=[0, 1, 2]).fit(X, yk)
    rel = dpcore.MulticlassTDDL(m, 1.0, 1e-6, data_norm=1.0, random_state=0).fit(X[:5])
    assert rel.privacy_.lam == m.lam_


def test_tddl_and_grid_search_accept_a_model_given_by_C():
    X, y = _data(n=200)
    Z = X[:10]
    svm = dpcore.KernelSVM(C=5.0, gamma=1.0).fit(X, y)
    a = dpcore.TDDL(svm, 1.0, 1e-6, data_norm=1.0, noise="gaussian", random_state=0).fit(Z).privacy_
    same = dpcore.KernelSVM(lam=svm.lam_, gamma=1.0).fit(X, y)
    b = dpcore.TDDL(same, 1.0, 1e-6, data_norm=1.0, noise="gaussian", random_state=0).fit(Z).privacy_
    assert a.noise_scale == b.noise_scale
    sel = dpcore.PrivateGridSearch({"C": [0.5, 5.0]}, 2.0, 1e-6, Z=Z, data_norm=1.0, random_state=0).fit(X, y)
    assert sel.best_params_["C"] in (0.5, 5.0)


# -- gamma ------------------------------------------------------------------------------------------

def test_gamma_default_is_one_and_auto_is_one_over_n_features():
    """Was: ``gamma=None`` meant 1/n_features (0.0013 on 784 pixels: a nearly linear kernel on the unit ball)."""
    X, y = _data(n=80, d=50)
    for cls in (dpcore.KernelSVM, dpcore.KernelLogisticRegression):
        assert cls().get_params()["gamma"] == 1.0
        assert cls().fit(X, y).kernel_params_["gamma"] == 1.0
        assert cls(gamma="auto").fit(X, y).kernel_params_["gamma"] == 1.0 / 50
        with pytest.raises(ValueError, match="scale"):
            cls(gamma="scale").fit(X, y)
    yk = np.digitize(X[:, 1], [-0.05, 0.05])
    m = dpcore.MulticlassKernelLogisticRegression(classes=[0, 1, 2]).fit(X, yk)
    assert m.kernel_params_["gamma"] == 1.0
    K = dpcore.kernel_matrix(X[:3], X[:4])
    np.testing.assert_allclose(K, np.exp(-((X[:3, None, :] - X[None, :4, :]) ** 2).sum(-1)), rtol=1e-12)
    assert dpcore.RandomFourierFeatures().get_params()["gamma"] == 1.0


# -- SimplexERM's default lam ------------------------------------------------------------------------

def test_simplex_erm_default_lam_is_a_public_rule():
    """Was: ``SimplexERM(epsilon=...)`` → ``missing 1 required keyword-only argument: 'lam'``."""
    from dpcore.glm._simplex_calibration import simplex_auto_lam

    X, y = _data(n=600, d=5)
    X2, y2 = _neighbour(X, y)
    make = lambda: dpcore.SimplexERM(epsilon=10.0, data_norm_inf=1.0, random_state=0)  # noqa: E731
    assert make().get_params()["lam"] == "auto"
    a, b = make().fit(X, y), make().fit(X2, y2)
    assert a.lam_ == b.lam_ == a.privacy_.lam and a.privacy_ == b.privacy_
    # the rule itself: (8 L L_g^2 R^5 / (eps n log P))^(1/3), squared loss on +-1 labels: L = R + 1 = 2, L_g = 1
    rule = (8 * 2.0 * 1.0 * 1.0 / (10.0 * 600 * np.log(10))) ** (1 / 3)
    assert a.lam_ == pytest.approx(max(rule, 1.01 * 2 * 2.0 / (60 * np.log(2) - np.log(10) - 1e-6)), rel=1e-12)
    assert a.lam_ == simplex_auto_lam(n=600, epsilon=10.0, n_coords=10, lipschitz=2.0, smoothness=1.0, r_eff=1.0)
    # larger n (public) gives a smaller lam, at the paper's n^(-1/3) rate while above the sampler's floor
    assert simplex_auto_lam(n=8000, epsilon=0.1, n_coords=10, lipschitz=2.0, smoothness=1.0, r_eff=1.0) == \
        pytest.approx(0.5 * simplex_auto_lam(n=1000, epsilon=0.1, n_coords=10, lipschitz=2.0, smoothness=1.0,
                                             r_eff=1.0), rel=1e-12)
    assert a.score(X, y) > 0.6
    assert dpcore.SimplexERM(epsilon=10.0, lam=1.0, data_norm_inf=1.0, random_state=0).fit(X, y).lam_ == 1.0

"""KernelRelease (issue 22, item 4): every field validated in the constructor (the one check ``load`` also goes
through), and one validation path for every prediction entry point (numpy and Dask)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpcore
from dpcore import TDDL, TDIL, KernelRelease, KernelSVM, PrivateGridSearch
from dpcore.exceptions import NotFittedError

RBF = dict(kernel="rbf", gamma=1.0, degree=3, coef0=1.0)
GOOD = dict(points=np.eye(2), mu=np.array([1.0, -1.0]), kernel=RBF, classes=[-1, 1], mechanism="TDDL",
            epsilon=1.0, delta=1e-6, calibration={"noise_scale": 0.5}, data_norm=1.0, intercept=0.0)


def _make(**changes):
    f = dict(GOOD, **changes)
    return KernelRelease(f.pop("points"), f.pop("mu"), f.pop("kernel"), **f)


def test_good_release_is_accepted():
    rel = _make()
    assert rel.classes_.tolist() == [-1, 1] and rel.epsilon == 1.0 and rel.kernel == RBF


@pytest.mark.parametrize("changes, exc, name", [
    (dict(epsilon=-1.0), ValueError, "epsilon"),
    (dict(epsilon=0.0), ValueError, "epsilon"),
    (dict(epsilon=math.nan), ValueError, "epsilon"),
    (dict(epsilon=math.inf), ValueError, "epsilon"),
    (dict(epsilon="1"), TypeError, "epsilon"),
    (dict(delta=1.5), ValueError, "delta"),
    (dict(delta=-0.1), ValueError, "delta"),
    (dict(delta=math.nan), ValueError, "delta"),
    (dict(data_norm=-3.0), ValueError, "data_norm"),
    (dict(data_norm=0.0), ValueError, "data_norm"),
    (dict(data_norm=math.nan), ValueError, "data_norm"),
    (dict(mu=np.array([1e308, 1e308])), ValueError, "mu"),          # Σ|μ| overflows: infinite predictions
    (dict(mu=np.array([math.inf, 1.0])), ValueError, "mu"),
    (dict(mu=np.array([1.0, 2.0, 3.0])), ValueError, "mu"),
    (dict(mu=np.array(["a", "b"])), TypeError, "mu"),
    (dict(points=np.array([[math.nan, 0.0], [0.0, 1.0]])), ValueError, "points"),
    (dict(points=np.ones(2)), ValueError, "points"),
    (dict(points=np.ones((2, 0))), ValueError, "points"),
    (dict(classes=[1]), ValueError, "classes"),                        # one class
    (dict(classes=[0, 1, 2]), ValueError, "classes"),                  # three classes
    (dict(classes=[1, 1]), ValueError, "classes"),
    (dict(classes=[1, -1]), ValueError, "classes"),                    # not dpcore's (sorted) order
    (dict(classes=["yes", "no"]), ValueError, "classes"),
    (dict(calibration={}), ValueError, "calibration"),                 # empty calibration record
    (dict(calibration=None), ValueError, "calibration"),
    (dict(calibration=[1, 2]), ValueError, "calibration"),
    (dict(mechanism=""), ValueError, "mechanism"),
    (dict(mechanism=3), ValueError, "mechanism"),
    (dict(intercept=math.nan), ValueError, "intercept"),
    (dict(intercept=10**400), ValueError, "intercept"),
    (dict(kernel=dict(RBF, kernel="sigmoid")), ValueError, "kernel"),
    (dict(kernel=dict(RBF, gamma=-1.0)), ValueError, "gamma"),
    (dict(kernel=dict(RBF, gamma=None)), ValueError, "kernel"),
    (dict(kernel=dict(kernel="rbf")), ValueError, "kernel"),
    (dict(kernel=dict(RBF, degree=0)), ValueError, "degree"),
    (dict(kernel=dict(RBF, coef0=math.inf)), ValueError, "coef0"),
    (dict(kernel="rbf"), TypeError, "kernel"),
    (dict(kernel=dict(kernel="poly", gamma=1e10, degree=40, coef0=1.0)), ValueError, "mu"),   # |f| up to 1e400
])
def test_constructor_validates_every_field(changes, exc, name):
    with pytest.raises(exc, match=f"^{name}"):
        _make(**changes)


def test_load_goes_through_the_same_validation(tmp_path, monkeypatch):
    rel = _make()
    path = tmp_path / "r.json"
    rel.save(path)
    seen = []
    original = KernelRelease._validate_public

    def spy(**fields):
        seen.append(fields)
        return original(**fields)

    monkeypatch.setattr(KernelRelease, "_validate_public", staticmethod(spy))
    back = KernelRelease.load(path)
    assert len(seen) == 1 and back.classes_.tolist() == [-1, 1]


# ------------------------------------------------------------------ predictions: one validation path
@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.7, 0.7, size=(400, 2))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    svm = KernelSVM(lam=1e-2, kernel="rbf", gamma=2.0, tol=1e-8).fit(X, y)
    Z = rng.uniform(-0.7, 0.7, size=(50, 2))
    tddl = TDDL(svm, 1.0, 1e-6, data_norm=1.0, random_state=0).fit(Z)
    lin = KernelSVM(lam=1e-2, kernel="linear", tol=1e-9).fit(X, np.where(X[:, 0] + 0.5 * X[:, 1] > 0.1, 1, -1))
    tdil = TDIL(lin, 50.0, 1e-6, calibration="tight", net_radius=0.02, random_state=4).fit()
    return dict(X=X, y=y, tddl=tddl, tdil=tdil)


def _huge_rows():
    return np.array([[1e308, 1e308], [0.1, 0.2], [-1e308, 3.0]])


@pytest.mark.parametrize("who", ["release", "tddl"])
def test_predictions_on_overflowing_rows_are_refused_naming_X(fitted, who):
    # decision_function returned NaN and predict said -1 for rows of 1e308, where kernel_predict refuses them
    obj = fitted["tddl"].release_ if who == "release" else fitted[who]
    Q = _huge_rows()
    with pytest.raises(ValueError, match="^X"):
        obj.decision_function(Q)
    with pytest.raises(ValueError, match="^X"):
        obj.predict(Q)
    with pytest.raises(ValueError, match="^X"):
        obj.score(Q, np.ones(Q.shape[0]))
    assert np.isfinite(obj.decision_function(Q[1:2])).all()


def test_linear_release_predictions_are_finite_or_refused(fitted):
    obj = fitted["tdil"]  # linear kernel: f = <q, w> may be finite on huge rows (as kernel_predict's); never NaN
    for Q in (_huge_rows(), -_huge_rows(), np.full((2, 2), 1.7e308)):
        try:
            f = obj.decision_function(Q)
        except ValueError as e:
            assert str(e).startswith("X"), str(e)
        else:
            assert np.isfinite(f).all(), f


def test_predictions_on_overflowing_rows_are_refused_on_dask(fitted):
    da = pytest.importorskip("dask.array")
    rel = fitted["tddl"].release_
    Q = da.from_array(np.vstack([fitted["X"][:10], _huge_rows()]), chunks=5)
    for call in (rel.decision_function, rel.predict):
        lazy = call(Q)
        with pytest.raises(ValueError, match="^X"):
            lazy.compute(scheduler="synchronous")


def test_intercept_overflow_is_refused_not_inf():
    rel = _make(mu=np.array([1e303, 0.0]), intercept=1.79e308, kernel=dict(RBF, kernel="linear"))
    assert np.isfinite(rel.decision_function(np.array([[1.0, 0.0]]))).all()
    with pytest.raises(ValueError, match="^X"):  # f = 1e308 (finite) + intercept: was inf
        rel.decision_function(np.array([[1e5, 0.0]]))


def test_private_grid_search_predictions_check_fitted():
    sel = PrivateGridSearch({"lam": [1e-2]}, 1.0, 1e-6, Z=np.zeros((3, 2)), data_norm=1.0)
    for call in (sel.predict, sel.decision_function):
        with pytest.raises(NotFittedError, match="not fitted"):
            call(np.zeros((2, 2)))

"""dpcore's estimators are scikit-learn estimators: the common checks, and the ecosystem tools.

Every estimator of an ``(X, y)`` problem runs scikit-learn's ``parametrize_with_checks``; the only
expected failures are inherent to differential privacy, listed with their reasons by
``dpcore._internal.tags.expected_failed_checks`` (and docs/sklearn.md). The instances declare
``classes=(0, 1)`` — the label pair scikit-learn's checks use for binary classifiers — and a data
bound with ``clip=True`` (scikit-learn's test data are not normalised), exactly as a user declares
the public parameters of their data. The estimators that are not ``(X, y)`` learners (TDDL and TDIL
release a *given* model over public points, PINP/GPService are query services, PrivateFTRL is an
online learner over cost vectors, the ldp servers fit on privatised reports) are not run through
the checks; they are covered for get_params/set_params/clone below.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.calibration import CalibratedClassifierCV
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

import dpcore
from dpcore._internal.tags import expected_failed_checks

ESTIMATORS = [
    # scikit-learn's check_class_weight_classifiers uses the weights {0: 1000, 1: 1e-4}: a weight above the default
    # public cap max_class_weight = 10 must be allowed explicitly (it is refused, not clipped, otherwise)
    dpcore.KernelSVM(classes=(0, 1), max_class_weight=1000.0),
    dpcore.KernelLogisticRegression(classes=(0, 1), max_class_weight=1000.0),
    dpcore.OutputPerturbation(1.0, 1e-5, data_norm=1.0, clip=True, classes=(0, 1), random_state=0),
    dpcore.OutputPerturbation(1.0, 1e-5, data_norm=1.0, loss="squared", label_bound=10.0, clip=True,
                              random_state=0),
    dpcore.ObjectivePerturbation(1.0, 1e-5, data_norm=1.0, clip=True, classes=(0, 1), random_state=0),
    dpcore.PrivateSVM(data_norm=1.0, clip=True, classes=(0, 1), random_state=0),
    dpcore.SimplexERM(100.0, lam=1.0, data_norm_inf=1.0, clip=True, classes=(0, 1), random_state=0),
    dpcore.SimplexERM(100.0, lam=1.0, data_norm_inf=1.0, loss="squared", label_bound=10.0, clip=True,
                      random_state=0),
]


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_common_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpcore.exceptions.DpcoreWarning)
        check(estimator)


def test_expected_failures_are_dp_inherent_and_documented():
    seen = {}
    for est in ESTIMATORS:
        for check, reason in expected_failed_checks(est).items():
            assert reason.startswith(("DP-inherent", "No intercept")), (check, reason)
            seen[check] = reason
    # the non-private solvers fail only the declared-label-set checks; declared without the intercept, also the
    # class-weight one (a model-class limitation, not DP)
    labels_only = {"check_estimators_dtypes", "check_classifier_data_not_an_array", "check_classifiers_classes",
                   "check_fit2d_1feature"}
    assert set(expected_failed_checks(ESTIMATORS[0])) == labels_only
    no_bias = clone(ESTIMATORS[0]).set_params(intercept_scaling=0.0)
    assert set(expected_failed_checks(no_bias)) == labels_only | {"check_class_weight_classifiers"}
    seen.update(expected_failed_checks(no_bias))
    with open(_docs("sklearn.md"), encoding="utf-8") as fh:
        doc = fh.read()
    for check in seen:
        assert check in doc, f"{check} is not listed in docs/sklearn.md"


def _docs(name):
    import pathlib

    return pathlib.Path(__file__).resolve().parents[1] / "docs" / name


# -- the ecosystem ------------------------------------------------------------------------------

def _data(n=300, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1, -1)
    return X / np.linalg.norm(X, axis=1).max(), y


def test_type_predicates():
    assert is_classifier(dpcore.KernelSVM())
    assert is_classifier(dpcore.PrivateSVM())
    assert is_classifier(dpcore.ObjectivePerturbation())
    assert is_regressor(dpcore.OutputPerturbation(loss="squared", label_bound=1.0))
    assert is_classifier(dpcore.SimplexERM(1.0, lam=1.0, data_norm_inf=1.0))
    assert is_classifier(dpcore.PrivateGridSearch(None, 1.0, 1e-6, Z=np.zeros((2, 2)), data_norm=1.0))
    assert is_regressor(dpcore.SimplexERM(1.0, lam=1.0, data_norm_inf=1.0, loss="squared", label_bound=1.0))


def test_cross_val_score_pipeline_is_finite():
    """The issue's example returned [nan nan nan]."""
    X, y = _data(n=3000)
    pipe = make_pipeline(dpcore.RandomFourierFeatures(n_components=50, gamma=1.0, random_state=0),
                         dpcore.ObjectivePerturbation(1.0, 1e-5, data_norm=1.0, random_state=0))
    scores = cross_val_score(pipe, X, y, cv=3, error_score="raise")
    assert scores.shape == (3,) and np.isfinite(scores).all()
    assert scores.mean() > 0.6


def test_grid_search_non_private_tuning():
    X, y = _data()
    search = GridSearchCV(dpcore.KernelSVM(kernel="rbf"), {"lam": [1e-3, 1e-1]}, cv=3, error_score="raise")
    search.fit(X, y)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert search.best_params_["lam"] in (1e-3, 1e-1)
    assert search.score(X, y) > 0.8


def test_calibrated_classifier_on_kernel_svm():
    X, y = _data()
    cal = CalibratedClassifierCV(dpcore.KernelSVM(), cv=3).fit(X, y)
    proba = cal.predict_proba(X)
    assert proba.shape == (X.shape[0], 2) and np.allclose(proba.sum(axis=1), 1.0)


@pytest.mark.parametrize("make", [
    lambda: dpcore.ObjectivePerturbation(1.0, 1e-5, data_norm=1.0, random_state=0),
    lambda: dpcore.OutputPerturbation(1.0, 1e-5, data_norm=1.0, random_state=0),
])
def test_predict_proba_of_private_logistic_models(make):
    X, y = _data()
    clf = make().fit(X, y)
    proba = clf.predict_proba(X)
    assert proba.shape == (X.shape[0], 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.classes_[proba.argmax(axis=1)], clf.predict(X))
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X)), proba, rtol=1e-12)


def test_proba_and_decision_function_only_where_they_mean_something():
    assert not hasattr(dpcore.ObjectivePerturbation(loss="huber_svm"), "predict_proba")
    assert not hasattr(dpcore.PrivateSVM(), "predict_proba")
    reg = dpcore.OutputPerturbation(loss="squared", label_bound=1.0)
    assert not hasattr(reg, "decision_function") and not hasattr(reg, "predict_proba")


def test_feature_names_in_from_dataframe():
    pd = pytest.importorskip("pandas")
    X, y = _data()
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    for est in (dpcore.KernelSVM(), dpcore.PrivateSVM(data_norm=1.0, random_state=0),
                dpcore.ObjectivePerturbation(1.0, 1e-5, data_norm=1.0, random_state=0),
                dpcore.SimplexERM(1e3, lam=1.0, data_norm_inf=1.0, random_state=0)):
        est.fit(df, y)
        np.testing.assert_array_equal(est.feature_names_in_, df.columns.to_numpy(dtype=object))
        with pytest.warns(UserWarning, match="feature names"):
            est.predict(X)  # fitted with names, predicted without
        est.fit(X, y)
        assert not hasattr(est, "feature_names_in_")


@pytest.mark.parametrize("est", [dpcore.KernelSVM(), dpcore.PrivateSVM(data_norm=1.0)])
def test_sparse_refused_with_a_message_that_says_sparse(est):
    from scipy import sparse

    X, y = _data()
    with pytest.raises(TypeError, match="sparse"):
        est.fit(sparse.csr_matrix(X), y)


@pytest.mark.parametrize("est", [
    dpcore.TDDL(dpcore.KernelSVM(), 1.0, 1e-6, data_norm=1.0),
    dpcore.TDIL(dpcore.KernelSVM(), 1.0, 1e-6),
    dpcore.PrivateFTRL(10, 1.0, data_norm_inf=1.0),
    dpcore.PrivateGridSearch({"lam": [0.1]}, 1.0, 1e-6, Z=np.zeros((2, 2)), data_norm=1.0),
    dpcore.RandomFourierFeatures(),
])
def test_other_estimators_clone_and_params(est):
    params = est.get_params()
    twin = clone(est)
    assert type(twin) is type(est)
    assert set(twin.get_params()) == set(params)
    assert repr(est).startswith(type(est).__name__ + "(")



def test_kernel_svm_dual_coef_has_scikit_learns_meaning():
    """dual_coef_ = y_i α_i over the support (α ∈ [0, C]); the decision function is dual_coef_ @ K."""
    from sklearn.metrics.pairwise import rbf_kernel

    X, y = _data(n=200)
    m = dpcore.KernelSVM(lam=0.01, kernel="rbf", gamma=1.0, intercept_scaling=0.0).fit(X, y)  # K without the shift
    assert m.dual_coef_.shape == (1, m.support_.size)
    assert np.all(np.abs(m.dual_coef_) <= m.C_ * (1 + 1e-12))
    np.testing.assert_array_equal(m.support_vectors_, X[m.support_])
    f = (m.dual_coef_ @ rbf_kernel(m.support_vectors_, X[:10], gamma=1.0)).ravel()
    np.testing.assert_allclose(f, m.decision_function(X[:10]), rtol=1e-9, atol=1e-12)
    ypm = np.where(y == m.classes_[1], 1.0, -1.0)
    np.testing.assert_allclose(m.mu_, ypm * m.box_duals_ * m.C_, rtol=1e-15, atol=0)

"""Every fitted estimator, transformer and release round-trips through pickle with identical predictions
(issue 15); live interactive sessions refuse (tests/kernel_learning/test_state.py)."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import dpcore
from dpcore import ldp

RNG = np.random.default_rng(0)
X = RNG.uniform(-0.5, 0.5, size=(300, 3))
Y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1, -1)
Q = RNG.uniform(-0.5, 0.5, size=(25, 3))


def _svm():
    return dpcore.KernelSVM(lam=0.05, tol=1e-8).fit(X, Y)


def _ldp_mean():
    d, n = 8, 2000
    Xm = np.zeros((n, d))
    Xm[:, 0] = 0.5
    proto = ldp.MeanEstimationProtocol(d, n, 4.0, 1e-6, projection_dim=16, n_groups=5, projection_seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ldp.LDPMeanEstimator(proto).fit(ldp.simulate(Xm, None, proto, random_state=0))


CASES = {
    "KernelSVM": (_svm, "decision_function"),
    "KernelLogisticRegression": (lambda: dpcore.KernelLogisticRegression(lam=0.05, tol=1e-8).fit(X, Y),
                                 "decision_function"),
    "TDDL": (lambda: dpcore.TDDL(_svm(), 1.0, 1e-6, data_norm=1.0, random_state=0).fit(Q), "decision_function"),
    "KernelRelease": (lambda: dpcore.TDDL(_svm(), 1.0, 1e-6, data_norm=1.0, random_state=0).fit(Q).release_,
                      "decision_function"),
    "ObjectivePerturbation": (lambda: dpcore.ObjectivePerturbation(epsilon=1.0, delta=1e-6, data_norm=1.0,
                                                                   random_state=0).fit(X, Y), "decision_function"),
    "OutputPerturbation": (lambda: dpcore.OutputPerturbation(epsilon=1.0, delta=1e-6, data_norm=1.0,
                                                             random_state=0).fit(X, Y), "decision_function"),
    "PrivateSVM-rbf": (lambda: dpcore.PrivateSVM(epsilon=1.0, n_components=20, data_norm=1.0,
                                                 random_state=0).fit(X, Y), "decision_function"),
    "PrivateSVM-linear": (lambda: dpcore.PrivateSVM(epsilon=1.0, kernel="linear", data_norm=1.0,
                                                    random_state=0).fit(X, Y), "decision_function"),
    "SimplexERM": (lambda: dpcore.SimplexERM(5.0, lam=0.5, data_norm_inf=1.0, loss="logistic",
                                             random_state=0).fit(X, Y), "decision_function"),
    "RandomFourierFeatures": (lambda: dpcore.RandomFourierFeatures(n_components=10, random_state=0).fit(X),
                              "transform"),
    "RandomFourierFeatures-secure": (lambda: dpcore.RandomFourierFeatures(n_components=10).fit(X), "transform"),
    "LDPMeanEstimator": (_ldp_mean, None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fitted_objects_round_trip_through_pickle(name):
    make, method = CASES[name]
    obj = make()
    back = pickle.loads(pickle.dumps(obj))
    assert type(back) is type(obj)
    if method is None:
        np.testing.assert_array_equal(back.mean_, obj.mean_)
    else:
        np.testing.assert_array_equal(getattr(back, method)(Q), getattr(obj, method)(Q))


def test_column_vector_y_is_accepted_with_scikit_learns_warning():
    from sklearn.exceptions import DataConversionWarning

    est = dpcore.ObjectivePerturbation(epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0)
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        a = est.fit(X, Y[:, None]).coef_
    np.testing.assert_array_equal(a, est.fit(X, Y).coef_)

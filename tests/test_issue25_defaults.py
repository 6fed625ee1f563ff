"""Issue 25, item 1 (labels and defaults that fit) and item 3 (exact budgets): the defaults a newcomer hits first.

Fixed seeds throughout; the accuracy margins are far from the seed spread."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.model_selection import cross_val_score

import dpcore


def _data(n=600, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y01 = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(np.int64)
    return X, y01


CLASSIFIERS = {
    "ObjectivePerturbation": lambda: dpcore.ObjectivePerturbation(epsilon=1.0, delta=1e-6, data_norm=1.0,
                                                                  random_state=0),
    "OutputPerturbation": lambda: dpcore.OutputPerturbation(epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0),
    "PrivateSVM": lambda: dpcore.PrivateSVM(epsilon=1.0, kernel="linear", data_norm=1.0, random_state=0),
    "SimplexERM": lambda: dpcore.SimplexERM(epsilon=10.0, lam=1.0, data_norm_inf=1.0, random_state=0),
    "KernelSVM": lambda: dpcore.KernelSVM(),
    "KernelLogisticRegression": lambda: dpcore.KernelLogisticRegression(),
}


# -- 1. default labels ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
@pytest.mark.parametrize("encoding, expected", [
    ("01", [-1, 1]), ("pm1", [-1, 1]), ("bool", [False, True]), ("uint8", [0, 1]), ("float", [-1.0, 1.0])])
def test_default_classes_accept_the_usual_binary_encodings(name, encoding, expected):
    X, y01 = _data()
    y = {"01": y01, "pm1": 2 * y01 - 1, "bool": y01.astype(bool), "uint8": y01.astype(np.uint8),
         "float": y01.astype(np.float64)}[encoding]
    est = CLASSIFIERS[name]().fit(X, y)
    assert est.classes_.tolist() == expected
    assert est.classes_.dtype.kind == ("b" if encoding == "bool" else "u" if encoding == "uint8" else
                                       "f" if encoding == "float" else "i")
    assert set(est.predict(X).tolist()) <= set(expected)
    # score compares through the default rule: 1/True positive, 0/-1/False negative
    acc = est.score(X, y)
    assert acc == pytest.approx(np.mean((est.predict(X) == est.classes_[1]) == (y01 == 1)))
    assert acc > 0.6


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_default_rule_is_per_label_so_neighbours_see_the_same_mapping(name):
    """Replacing 0 by -1 (both negative) changes nothing; a one-class training set trains; classes_ is the same."""
    X, y01 = _data()
    a = CLASSIFIERS[name]().fit(X, y01)
    y_mixed = y01.copy()
    y_mixed[np.flatnonzero(y01 == 0)[0]] = -1
    b = CLASSIFIERS[name]().fit(X, y_mixed)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    assert a.classes_.tolist() == b.classes_.tolist()
    one = CLASSIFIERS[name]().fit(X, np.ones(X.shape[0], dtype=np.int64))
    assert one.classes_.tolist() == [-1, 1]


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
@pytest.mark.parametrize("bad", [2, 0.5, "yes"])
def test_default_rule_refuses_other_labels_naming_classes(name, bad):
    X, y01 = _data(n=50)
    y = y01.astype(object)
    y[3] = bad
    with pytest.raises(ValueError, match="classes"):
        CLASSIFIERS[name]().fit(X, y)


def test_cross_val_score_with_01_labels():
    X, y01 = _data()
    scores = cross_val_score(dpcore.ObjectivePerturbation(epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0),
                             X, y01, cv=3)
    assert np.all(np.isfinite(scores)) and scores.mean() > 0.7


def test_declared_classes_still_return_the_declared_labels():
    X, y01 = _data()
    est = dpcore.ObjectivePerturbation(epsilon=1.0, delta=1e-6, data_norm=1.0, classes=(0, 1), random_state=0)
    assert set(est.fit(X, y01).predict(X).tolist()) <= {0, 1}
    with pytest.raises(ValueError, match="classes"):
        est.fit(X, 2 * y01 - 1)  # -1 is outside the declared pair

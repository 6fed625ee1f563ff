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


# -- 7. exact budgets (item 3, first bullet) --------------------------------------------------------

from fractions import Fraction  # noqa: E402

from dpcore._internal.fp import BUDGET_GRID_BITS, budget_grid_down  # noqa: E402
from dpcore.accounting import BudgetAccountant  # noqa: E402
from dpcore.exceptions import BudgetExceededError  # noqa: E402


def _on_grid(x):
    import math

    m, _ = math.frexp(x)
    return math.ldexp(m, BUDGET_GRID_BITS).is_integer()


@pytest.mark.parametrize("accounting", ["basic", "filter"])
def test_ten_laplace_releases_of_epsilon_01_fit_a_budget_of_1(accounting):
    acc = BudgetAccountant(1.0, accounting=accounting)
    for seed in range(10):
        dpcore.laplace_mechanism(0.0, sensitivity=1.0, epsilon=0.1, accountant=acc, random_state=seed)
    with pytest.raises(BudgetExceededError):
        dpcore.laplace_mechanism(0.0, sensitivity=1.0, epsilon=1e-9, accountant=acc, random_state=0)


@pytest.mark.parametrize("budget, spends", [
    (1.0, [0.1] * 10), (1.0, [0.2] * 5), (1.0, [0.1, 0.2, 0.7]), (1.0, [0.01] * 100), (0.3, [0.1, 0.2]),
    (0.3, [0.25, 0.05]), (2.0, [0.3] * 6 + [0.2]), (0.7, [0.1] * 7), (1.0, [1 / 3] * 3)])
def test_budgets_that_add_up_fit_when_estimators_spend(budget, spends):
    X, y01 = _data(n=200)
    acc = BudgetAccountant(budget, 1e-5, accounting="basic")
    for eps in spends:
        dpcore.PrivateSVM(epsilon=eps, kernel="linear", data_norm=1.0, accountant=acc, random_state=0).fit(X, y01)
    assert acc.remaining()[0] < 1e-9


def test_budget_grid_is_idempotent_never_larger_and_exact_sums_fit():
    rng = np.random.default_rng(0)
    for x in np.concatenate([rng.uniform(1e-6, 10, 2000), [0.1, 0.3, 1 / 3, 0.5, 1.0, 1e-300, 7.0]]):
        g = budget_grid_down(float(x))
        assert 0 < g <= x and _on_grid(g) and budget_grid_down(g) == g
        assert g == x or Fraction(g) <= Fraction(float(x)) * (1 - Fraction(1, 2 ** 40))
        assert g >= x * (1 - 2.0 ** -38)
    # every split of a k/100 budget into decimals with two places fits exactly
    for total in range(1, 201):
        E = total / 100
        for a in range(1, total):
            parts = [budget_grid_down(a / 100), budget_grid_down((total - a) / 100)]
            assert sum(Fraction(p) for p in parts) <= Fraction(E), (E, a)


def test_direct_spends_stay_exact_and_the_refusal_explains_the_float():
    """The accountant charges what it is told (it cannot know how an outside mechanism was calibrated)."""
    acc = BudgetAccountant(1.0, accounting="basic")
    for _ in range(9):
        acc.spend(0.1)
    with pytest.raises(BudgetExceededError, match="budget_grid_down|grid"):
        acc.spend(0.1)
    acc.spend(budget_grid_down(0.1))


# -- 3. GPService follows scikit-learn -------------------------------------------------------------

def test_gpservice_predict_labels_decision_function_values_and_score():
    import warnings

    from sklearn.metrics import accuracy_score

    X, y01 = _data(n=300)
    svm = dpcore.KernelSVM(lam=0.01, kernel="rbf", gamma=1.0, tol=1e-8).fit(X, y01)
    svc = dpcore.GPService(svm, 1.0, 1e-6, data_norm=1.0, random_state=0)
    f = svc.decision_function(X[:40])
    assert f.dtype == np.float64 and len(set(f.tolist())) > 2
    labels = svc.predict(X[:40])
    assert labels.tolist() == np.where(f > 0, svm.classes_[1], svm.classes_[0]).tolist()
    y_pm = 2 * y01[:40] - 1
    assert accuracy_score(y_pm, labels) == svc.score(X[:40], y01[:40]) == svc.score(X[:40], y_pm)
    with pytest.warns(DeprecationWarning, match="predict_labels"):
        assert np.array_equal(svc.predict_labels(X[:40]), labels)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        svc.predict(X[:3]), svc.decision_function(X[:3])


# -- 4. PrivateSVM's default calibration is the proven tight one ----------------------------------------

def test_private_svm_defaults_to_the_tight_calibration():
    X, y01 = _data(n=300)
    default = dpcore.PrivateSVM(epsilon=1.0, random_state=0).fit(X, y01)
    spec = dpcore.PrivateSVM(epsilon=1.0, calibration="spec", random_state=0).fit(X, y01)
    assert default.calibration == "tight" and default.privacy_.calibration == "tight"
    # under C="auto" the tight calibration doubles C at the same noise-to-margin ratio (spec halves it)
    assert default.privacy_.C == pytest.approx(2 * spec.privacy_.C, rel=1e-12)
    fixed_t = dpcore.PrivateSVM(C=0.1, epsilon=1.0, random_state=0).fit(X, y01).privacy_
    fixed_s = dpcore.PrivateSVM(C=0.1, epsilon=1.0, calibration="spec", random_state=0).fit(X, y01).privacy_
    assert fixed_t.sensitivity_l1 < 0.51 * fixed_s.sensitivity_l1 + 1e-9


# -- 2. every missing required public parameter in one message ---------------------------------------

@pytest.mark.parametrize("cls", [dpcore.ObjectivePerturbation, dpcore.OutputPerturbation])
def test_all_missing_parameters_are_reported_at_once(cls):
    X, y01 = _data(n=50)
    acc = dpcore.BudgetAccountant(10.0, 1e-3)
    with pytest.raises(ValueError, match=r"^delta, data_norm must be given: .*delta: .*data_norm: ") as e:
        cls(accountant=acc).fit(X, y01)
    assert "classes" not in str(e.value)  # 0/1 labels need no declaration any more
    with pytest.raises(ValueError, match=r"^delta, data_norm, label_bound must be given"):
        cls(loss="squared", accountant=acc).fit(X, y01.astype(float))
    with pytest.raises(ValueError, match=r"^data_norm must be given"):
        cls(delta=1e-6, accountant=acc).fit(X, y01)
    assert acc.spent == (0.0, 0.0)  # refused before anything is charged
    cls(delta=1e-6, data_norm=1.0, accountant=acc).fit(X, y01)


def test_missing_parameters_private_svm_and_simplex():
    X, y01 = _data(n=50)
    with pytest.raises(ValueError, match=r"^data_norm must be given: PrivateSVM"):
        dpcore.PrivateSVM(kernel="linear").fit(X, y01)
    with pytest.raises(ValueError, match=r"^label_bound must be given: SimplexERM"):
        dpcore.SimplexERM(1.0, lam=1.0, data_norm_inf=1.0, task="regression").fit(X, y01.astype(float))


def test_class_weight_keys_in_the_users_encoding_under_the_default_rule():
    X, y01 = _data(n=200)
    a = dpcore.KernelSVM(class_weight={0: 3.0, 1: 1.0}).fit(X, y01)
    b = dpcore.KernelSVM(class_weight={-1: 3.0, 1: 1.0}).fit(X, 2 * y01 - 1)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    assert a.classes_.tolist() == [-1, 1]


def test_private_grid_search_with_01_labels():
    X, y01 = _data(n=300)
    Z = X[:40]
    def fit(y):
        return dpcore.PrivateGridSearch({"lam": [1e-2, 1e-3]}, 1.0, 1e-6, Z=Z, data_norm=1.0,
                                        base_params=dict(kernel="rbf", gamma=1.0, tol=1e-8), random_state=0).fit(X, y)

    a, b = fit(y01), fit(2 * y01 - 1)  # the default rule: the same labels in two encodings, the same release
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    assert a.score(X, y01) == b.score(X, 2 * y01 - 1)


# ---------------------------------------------------------------------------------------------- item 4: sample_weight
@pytest.mark.parametrize("make", [
    lambda: dpcore.ObjectivePerturbation(epsilon=1.0, delta=1e-6, data_norm=1.0),
    lambda: dpcore.OutputPerturbation(epsilon=1.0, delta=1e-6, data_norm=1.0),
    lambda: dpcore.PrivateSVM(epsilon=1.0),
    lambda: dpcore.KernelSVM(),
    lambda: dpcore.KernelLogisticRegression(),
], ids=["ObjectivePerturbation", "OutputPerturbation", "PrivateSVM", "KernelSVM", "KernelLogisticRegression"])
def test_sample_weight_is_refused_naming_the_public_estimator(make):
    """Before: ``_GLMPerturbation.fit() got an unexpected keyword argument 'sample_weight'`` (a private class)."""
    from sklearn.utils.validation import has_fit_parameter

    est = make()
    X = np.random.default_rng(0).uniform(-0.5, 0.5, size=(30, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    with pytest.raises(TypeError, match=rf"^{type(est).__name__}\.fit\(\).*sample_weight is not supported.*class_weight"):
        est.fit(X, y, sample_weight=np.ones(30))
    assert not hasattr(est, "classes_")  # refused before anything is validated, fitted or charged
    assert not has_fit_parameter(est, "sample_weight")  # meta-estimators do not route weights to it

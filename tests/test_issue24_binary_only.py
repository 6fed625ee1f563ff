"""Issue 24, item 4: TDIL, PINP and SimplexERM stay binary and refuse K > 2 classes clearly, before any charge."""

import numpy as np
import pytest

import dpcore
from dpcore import BudgetAccountant, MulticlassKernelLogisticRegression


@pytest.fixture(scope="module")
def mc_model():
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.7, 0.7, size=(60, 2))
    y = rng.integers(0, 3, 60)
    return MulticlassKernelLogisticRegression(lam=0.1, classes=[0, 1, 2]).fit(X, y)


def _refused(fn, *alternatives):
    acc = BudgetAccountant(10.0, 1e-3)
    with pytest.raises(ValueError) as exc:
        fn(acc)
    msg = str(exc.value)
    assert "classes" in msg and "binary" in msg, msg
    for alt in alternatives:
        assert alt in msg, msg
    assert acc.spent == (0.0, 0.0)
    return msg


def test_pinp_refuses_multiclass_model(mc_model):
    msg = _refused(lambda acc: dpcore.PINP(mc_model, 1.0, 1e-6, data_norm=1.0, n_queries=5, accountant=acc),
                   "MulticlassGPService", "MulticlassTDDL")
    assert "K = 3" in msg


def test_tdil_refuses_multiclass_model(mc_model):
    _refused(lambda acc: dpcore.TDIL(mc_model, 1.0, 1e-6, data_norm=1.0, accountant=acc).fit(),
             "MulticlassTDDL", "MulticlassGPService")
    with pytest.raises(ValueError, match="MulticlassTDDL"):
        dpcore.TDIL(mc_model, 1.0, 1e-6, data_norm=1.0).plan()


def test_binary_kernel_releases_point_to_multiclass(mc_model):
    # TDDL and GPService share the model check: they name their K-class versions too
    Z = np.zeros((3, 2))
    _refused(lambda acc: dpcore.TDDL(mc_model, 1.0, 1e-6, data_norm=1.0, accountant=acc).fit(Z), "MulticlassTDDL")


def _simplex_data():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1.0, 1.0, size=(200, 3))
    return X, rng.integers(0, 3, 200)


def test_simplex_refuses_three_declared_classes():
    X, y = _simplex_data()
    msg = _refused(lambda acc: dpcore.SimplexERM(epsilon=1.0, delta=1e-6, data_norm_inf=1.0, classes=[0, 1, 2],
                                                 loss="logistic", accountant=acc).fit(X, y),
                   "MulticlassOutputPerturbation")
    assert "K = 3" in msg


def test_simplex_refuses_a_third_label():
    X, y = _simplex_data()
    for classes in (None, (0, 1)):
        _refused(lambda acc: dpcore.SimplexERM(epsilon=1.0, delta=1e-6, data_norm_inf=1.0, classes=classes,
                                               loss="logistic", accountant=acc).fit(X, y),
                 "MulticlassOutputPerturbation")


@pytest.mark.parametrize("cls, alt", [(dpcore.PINP, "MulticlassGPService"), (dpcore.TDIL, "MulticlassTDDL"),
                                      (dpcore.SimplexERM, "MulticlassOutputPerturbation")])
def test_docstring_says_why_binary(cls, alt):
    doc = cls.__doc__
    notes = doc[doc.index("Notes\n"):doc.index("Examples\n")]
    assert "binary" in notes and alt in notes

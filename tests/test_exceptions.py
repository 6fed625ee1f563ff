"""One exception hierarchy (dpcore.exceptions): every error class derives from DpcoreError, every budget refusal
from BudgetError, and the scikit-learn-facing ones from scikit-learn's classes."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning as SkConvergenceWarning
from sklearn.exceptions import NotFittedError as SkNotFittedError

import dpcore
from dpcore import exceptions as E


def test_every_exception_and_warning_lives_in_dpcore_exceptions():
    import pkgutil, importlib

    classes = {}
    for m in pkgutil.walk_packages(dpcore.__path__, "dpcore."):
        if m.name.startswith("dpcore.demo"):
            continue
        mod = importlib.import_module(m.name)
        for name, obj in vars(mod).items():
            if inspect.isclass(obj) and issubclass(obj, (Exception, Warning)) and obj.__module__.startswith("dpcore"):
                classes[obj] = obj.__module__
    assert classes and set(classes.values()) == {"dpcore.exceptions"}, classes
    assert {c.__name__ for c in classes} == set(E.__all__)


def test_hierarchy():
    for c in (E.BudgetExceededError, E.PINPBudgetExhausted, E.FTRLHorizonExceeded, E.ProtocolBudgetError):
        assert issubclass(c, E.BudgetError) and issubclass(c, E.DpcoreError)
    for c in (E.ConvergenceError, E.SimplexCertificationError, E.TDILCostError, E.StateRollbackError,
              E.NotFittedError):
        assert issubclass(c, E.DpcoreError) and not issubclass(c, E.BudgetError)
    assert issubclass(E.NotFittedError, SkNotFittedError) and issubclass(E.ConvergenceWarning, SkConvergenceWarning)
    assert issubclass(E.ConvergenceWarning, E.DpcoreWarning) and issubclass(E.RecoveryRadiusWarning, E.DpcoreWarning)
    # builtin bases kept for callers that catch them
    assert issubclass(E.BudgetExceededError, RuntimeError) and issubclass(E.ProtocolBudgetError, ValueError)


def test_raised_errors_are_catchable_by_their_base():
    acc = dpcore.BudgetAccountant(1.0, 0.0)
    acc.spend(0.9, 0.0)
    with pytest.raises(E.BudgetError):
        acc.spend(0.2, 0.0)
    with pytest.raises(SkNotFittedError):
        dpcore.KernelSVM().decision_function(np.zeros((1, 2)))
    with pytest.raises(E.DpcoreError):
        dpcore.KernelSVM().predict(np.zeros((1, 2)))

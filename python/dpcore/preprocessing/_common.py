"""Shared validation for :mod:`dpcore.preprocessing` (public parameters and data, checked before any charge)."""

from __future__ import annotations

import numbers
from typing import Any, Optional, Tuple

import numpy as np
from dp_accounting import dp_event as _dpe

from dpcore._internal.validation import check_array, check_epsilon
from dpcore.accounting.accountant import BudgetAccountant
from dpcore.mechanisms.noise import ChaChaRng, check_random_state

__all__ = ["check_bounds", "check_data", "resolve_accountant", "check_accountant", "check_random_state_param",
           "charge", "check_epsilon_param"]


def check_accountant(accountant: Any) -> None:
    if accountant is not None and not isinstance(accountant, BudgetAccountant):
        raise TypeError(f"accountant must be a dpcore.BudgetAccountant or None, got {type(accountant).__name__}")


def resolve_accountant(accountant: Optional[BudgetAccountant]) -> Optional[BudgetAccountant]:
    """The accountant a step charges: its own, else the default one (``with acc:`` / ``set_default``)."""
    return accountant if accountant is not None else BudgetAccountant.default()


def check_random_state_param(random_state: Any) -> None:
    """Type/range of ``random_state`` (the generator itself is created at fit time)."""
    if random_state is None or isinstance(random_state, ChaChaRng):
        return
    check_random_state(random_state)  # raises TypeError/ValueError naming random_state


def check_epsilon_param(epsilon: Any, name: str = "epsilon") -> float:
    return check_epsilon(epsilon, name)


def _as_bound_vector(value: Any, name: str, d: Optional[int]) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number or a 1-D array of numbers, got {value!r}") from None
    if arr.ndim > 1:
        raise ValueError(f"{name} must be a number or a 1-D array (one entry per feature), got shape {arr.shape}")
    if arr.ndim == 1 and d is not None and arr.shape[0] != d:
        raise ValueError(f"{name} has {arr.shape[0]} entries but X has {d} features")
    if arr.ndim == 1 and arr.shape[0] == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite, got {value!r}")
    return arr


def check_bounds(bounds: Any, d: Optional[int] = None, name: str = "bounds") -> Tuple[np.ndarray, np.ndarray]:
    """``bounds = (lower, upper)``: scalars or per-feature vectors with ``lower < upper`` (public, declared).

    With ``d`` given, both are broadcast to length ``d``.
    """
    if bounds is None:
        raise ValueError(f"{name} must be given as (lower, upper): the public per-feature range is declared, "
                         "never derived from the data")
    if isinstance(bounds, (str, bytes)) or not hasattr(bounds, "__len__") or len(bounds) != 2:
        raise ValueError(f"{name} must be a pair (lower, upper) of numbers or per-feature arrays, got {bounds!r}")
    lower = _as_bound_vector(bounds[0], f"{name}[0] (lower)", d)
    upper = _as_bound_vector(bounds[1], f"{name}[1] (upper)", d)
    if lower.ndim == 1 and upper.ndim == 1 and lower.shape != upper.shape:
        raise ValueError(f"{name}: lower and upper have different lengths ({lower.shape[0]} and {upper.shape[0]})")
    if d is not None:
        lower, upper = np.broadcast_to(lower, (d,)).copy(), np.broadcast_to(upper, (d,)).copy()
    if not np.all(lower < upper):
        raise ValueError(f"{name}: every lower bound must be < its upper bound, got lower={lower!r}, upper={upper!r}")
    if not np.all(np.isfinite(upper - lower)):
        raise ValueError(f"{name}: upper - lower overflows a float64")
    return lower, upper


def check_data(estimator: Any, X: Any, *, reset: bool) -> np.ndarray:
    """``X`` as a finite float64 2-D array (NaN/inf refused, naming ``X``); sets/checks ``n_features_in_``."""
    from dpcore._internal.validation import check_feature_names, record_feature_names

    n_features = None if reset else getattr(estimator, "n_features_in_", None)
    arr = check_array(X, "X", n_features=n_features, estimator=type(estimator).__name__)
    if reset:
        record_feature_names(estimator, X)
    else:
        check_feature_names(estimator, X)
    return np.asarray(arr, dtype=np.float64)


def charge(accountant: Optional[BudgetAccountant], epsilon: float, delta: float, event: _dpe.DpEvent,
           label: str) -> None:
    """Charge ``accountant`` (or the default one) ``(epsilon, delta)`` for ``event``; nothing drawn before."""
    acc = resolve_accountant(accountant)
    if acc is not None:
        acc.spend(epsilon, delta, event=event, label=label)


def is_int_like(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)

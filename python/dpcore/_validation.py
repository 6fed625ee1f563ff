"""Input validation shared by every dpcore mechanism.

Every check raises :class:`ValueError` (or :class:`TypeError` for wrong types) whose message starts
with the public name of the offending parameter, so users know exactly what to fix. Nothing here
clips or repairs data silently.
"""

from __future__ import annotations

import math
import numbers
from typing import Optional

import numpy as np

__all__ = [
    "check_epsilon",
    "check_delta",
    "check_sensitivity",
    "check_positive",
    "check_probability",
    "check_array",
    "check_vector",
]


def _as_real(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value


def check_epsilon(epsilon, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float; it must be finite and strictly positive."""
    value = _as_real(epsilon, name)
    if value <= 0.0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return value


def check_delta(delta, name: str = "delta", *, allow_zero: bool = True) -> float:
    """Return ``delta`` as a float; it must lie in [0, 1) (or (0, 1) when ``allow_zero`` is False)."""
    value = _as_real(delta, name)
    if not (0.0 <= value < 1.0) or (not allow_zero and value == 0.0):
        interval = "[0, 1)" if allow_zero else "(0, 1)"
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")
    return value


def check_positive(value, name: str) -> float:
    """Return ``value`` as a float; it must be finite and strictly positive."""
    value = _as_real(value, name)
    if value <= 0.0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return value


def check_sensitivity(sensitivity, name: str = "sensitivity") -> float:
    """Return ``sensitivity`` as a float; it must be finite and strictly positive."""
    return check_positive(sensitivity, name)


def check_probability(value, name: str, *, open_interval: bool = True) -> float:
    """Return ``value`` as a float in (0, 1) (or [0, 1] when ``open_interval`` is False)."""
    value = _as_real(value, name)
    ok = (0.0 < value < 1.0) if open_interval else (0.0 <= value <= 1.0)
    if not ok:
        interval = "(0, 1)" if open_interval else "[0, 1]"
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")
    return value


def check_array(
    array,
    name: str,
    *,
    ndim: int = 2,
    n_features: Optional[int] = None,
    dtypes=(np.float64, np.float32),
) -> np.ndarray:
    """Validate a numeric array without copying when it already has an accepted dtype.

    Raises ``ValueError`` naming ``name`` for the wrong number of dimensions, an empty array, a
    feature count different from ``n_features``, or any NaN/inf entry. Integer and boolean input is
    converted to float64; any other dtype is a ``TypeError``.
    """
    arr = np.asarray(array)
    if arr.dtype not in dtypes:
        if arr.dtype.kind in "biu":
            arr = arr.astype(np.float64)
        elif arr.dtype.kind == "f":
            arr = arr.astype(np.float64)
        else:
            raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if n_features is not None and ndim == 2 and arr.shape[1] != n_features:
        raise ValueError(
            f"{name} has {arr.shape[1]} features, expected {n_features} (shape {arr.shape})"
        )
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def check_vector(array, name: str, *, length: Optional[int] = None) -> np.ndarray:
    """Validate a finite, non-empty 1-D float array (optionally of a given length)."""
    arr = check_array(array, name, ndim=1)
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name} must have length {length}, got {arr.shape[0]}")
    return arr

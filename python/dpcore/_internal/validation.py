"""Input validation shared by every dpcore mechanism.

Every check raises :class:`ValueError` (or :class:`TypeError` for wrong types) whose message starts
with the public name of the offending parameter, so users know exactly what to fix. Nothing here
clips or repairs data silently.
"""

from __future__ import annotations

import math
import numbers
import warnings
from functools import partial
from typing import Mapping, Any, Callable, Optional, Sequence, Tuple

import numpy as np
from sklearn.utils.validation import validate_data
from sklearn.exceptions import DataConversionWarning

from dpcore._internal.dask import as_dask_array, column_schema, is_dask_collection, map_row_blocks, require_dask
from dpcore._internal.fp import PARAM_RANGE, budget_grid_down
from dpcore._internal.types import DaskArray, NDArray
from dpcore import _core

__all__ = [
    "check_epsilon",
    "check_delta",
    "check_sensitivity",
    "check_positive",
    "check_tol",
    "check_probability",
    "check_array",
    "check_rows",
    "map_rows",
    "check_X",
    "check_vector",
    "check_count",
    "check_int",
    "memory_limit_bytes",
    "check_scale",
]


def _as_real(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        value = float(value)
    except OverflowError:  # an int (or Fraction) beyond the float range
        raise ValueError(f"{name} must be finite, got a number too large for a float64 ({value!r:.40})") from None
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value


def refuse_fit_params(owner: str, fit_params: Mapping[str, Any]) -> None:
    """Refuse extra ``fit`` keyword arguments with a message naming the public estimator (issue 25).

    ``sample_weight`` in particular: per-record weights change the sensitivity of every private release and no
    declared bound covers them. The estimators take ``**fit_params`` only to say so (scikit-learn's
    ``has_fit_parameter(est, "sample_weight")`` stays ``False``, so meta-estimators do not pass weights).
    """
    if not fit_params:
        return
    names = sorted(fit_params)
    why = ""
    if "sample_weight" in fit_params:
        why = (" sample_weight is not supported: per-record weights change the sensitivity of the private release "
               "and no declared bound covers them. Use class_weight (a public dict, capped by max_class_weight) "
               "where the estimator has it, or dpcore.private_class_weights to release balanced weights privately.")
    raise TypeError(f"{owner}.fit() got unexpected keyword argument(s) {names}.{why}")


def check_required(owner: str, missing: Sequence[Tuple[str, str]]) -> None:
    """Raise one ``ValueError`` naming *every* required public parameter that was not given.

    ``missing`` lists ``(name, why)`` for each parameter left at ``None`` that has no safe
    data-independent default (a declared bound on the data, a δ); empty: nothing to report. Called
    at the start of parameter validation, before any budget is charged, so a user fixing a
    constructor sees the whole list at once instead of one error per attempt.
    """
    if not missing:
        return
    names = ", ".join(name for name, _ in missing)
    parts = "; ".join(f"{name}: {why}" for name, why in missing)
    example = ", ".join(f"{name}=..." for name, _ in missing)
    raise ValueError(f"{names} must be given: {owner} has no safe data-independent default for "
                     f"{'it' if len(missing) == 1 else f'these {len(missing)} public parameters'} ({parts}). "
                     f"Declare {'it' if len(missing) == 1 else 'them'}, e.g. {owner}({example}, ...)")


def check_epsilon(epsilon, name: str = "epsilon", *, grid: bool = True) -> float:
    """Return ``epsilon`` as a float; it must be finite and strictly positive.

    ``grid=True`` (what a mechanism calibrates for and charges): rounded *down* onto the budget grid
    (:func:`dpcore._internal.fp.budget_grid_down`, idempotent), so that budgets that add up, fit.
    ``grid=False`` (a budget, a composition of spends already made, an event describing a mechanism
    run elsewhere): the value as given — rounding those down would understate a privacy loss.
    """
    value = _as_real(epsilon, name)
    if value <= 0.0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return budget_grid_down(value) if grid else value


def check_delta(delta, name: str = "delta", *, allow_zero: bool = True, grid: bool = True) -> float:
    """Return ``delta`` as a float; it must lie in [0, 1) (or (0, 1) when ``allow_zero`` is False).
    ``grid``: as in :func:`check_epsilon`."""
    value = _as_real(delta, name)
    if not (0.0 <= value < 1.0) or (not allow_zero and value == 0.0):
        interval = "[0, 1)" if allow_zero else "(0, 1)"
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")
    return budget_grid_down(value) if grid else value


def check_scale(value, name: str) -> float:
    """A positive scale hyper-parameter (λ, C, a norm bound) within ``dpcore._internal.fp.PARAM_RANGE``."""

    value = check_positive(value, name)
    lo, hi = PARAM_RANGE
    if not lo <= value <= hi:
        raise ValueError(f"{name} must lie in [{lo:g}, {hi:g}] (derived constants such as 1/({name}·n) "
                         f"must be representable floats), got {value!r}")
    return value


def check_positive(value, name: str) -> float:
    """Return ``value`` as a float; it must be finite and strictly positive."""
    value = _as_real(value, name)
    if value <= 0.0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return value


def check_tol(value, name: str = "tol"):
    """``"auto"`` (returned as is) or a finite float ``> 0`` (a ``ValueError`` naming ``name`` otherwise)."""
    if isinstance(value, str):
        if value != "auto":
            raise ValueError(f'{name} must be "auto" or a finite float > 0, got {value!r}')
        return value
    return check_positive(value, name)


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
    estimator: Optional[str] = None,
) -> np.ndarray:
    """Validate a numeric array without copying when it already has an accepted dtype.

    Raises ``ValueError`` naming ``name`` for the wrong number of dimensions, an empty array, a
    feature count different from ``n_features``, or any NaN/inf entry. Integer and boolean input is
    converted to float64; any other dtype is a ``TypeError``, and so is a scipy.sparse matrix (the
    message says "sparse"; estimators that support sparse input use :func:`check_X`).
    """
    if _is_sparse(array):
        raise TypeError(
            f"{name} is a scipy.sparse matrix, which this function does not support; pass a dense array "
            f"(e.g. {name}.toarray())"
        )
    arr = np.asarray(array)
    if arr.dtype not in dtypes:
        if arr.dtype.kind in "biuf":
            arr = arr.astype(np.float64)
        elif arr.dtype.kind == "c":
            raise ValueError(f"Complex data not supported: {name} has dtype {arr.dtype}")
        elif arr.dtype.kind == "O":  # e.g. a list of Python numbers mixed with other objects
            try:
                arr = arr.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"{name} must be a numeric array, got dtype object with non-numeric "
                                f"entries ({exc})") from None
        else:
            raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    if arr.ndim != ndim:
        hint = (" Reshape your data either using array.reshape(-1, 1) if your data has a single feature or "
                "array.reshape(1, -1) if it contains a single sample.") if ndim == 2 and arr.ndim == 1 else ""
        raise ValueError(f"{name} must be a {ndim}-D array, got shape {arr.shape}.{hint}")
    if arr.size == 0:
        what = "feature(s)" if ndim == 2 and arr.shape[0] > 0 else "sample(s)"
        raise ValueError(f"{name} must not be empty: 0 {what} (shape={arr.shape}) while a minimum of 1 "
                         f"is required.")
    if n_features is not None and ndim == 2 and arr.shape[1] != n_features:
        raise ValueError(_n_features_message(name, arr.shape, n_features, estimator))
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def check_rows(X, name: str, *, n_features: Optional[int] = None,
               estimator: Optional[str] = None) -> NDArray[Any] | DaskArray:
    """:func:`check_array` for the rows a prediction maps over, which may also be a Dask array or DataFrame.

    An in-memory ``X`` is validated completely (:func:`check_array`). A Dask ``X`` becomes a float64 Dask array with
    one column chunk and known row counts (:func:`dpcore._internal.dask.as_dask_array`; a DataFrame's are counted)
    and only its metadata is checked now — numeric, 2-D, non-empty, ``n_features`` — with the messages of
    :func:`check_array`; its values (NaN/inf) are checked block by block when computed, by :func:`map_rows`.
    """
    if not is_dask_collection(X):
        return check_array(X, name, n_features=n_features, estimator=estimator)
    X = as_dask_array(X, name, ndim=2)
    if X.shape[0] == 0 or X.shape[1] == 0:
        what = "feature(s)" if X.shape[0] > 0 else "sample(s)"
        raise ValueError(f"{name} must not be empty: 0 {what} (shape={X.shape}) while a minimum of 1 "
                         f"is required.")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(_n_features_message(name, X.shape, n_features, estimator))
    return X


def map_rows(func: Callable[..., np.ndarray], X: Any, *shared: Any, name: Optional[str], n_cols: Optional[int] = None,
             dtype: Any = np.float64) -> Any:
    """``func(X, *shared)`` for rows ``X`` returned by :func:`check_rows` (or outputs computed from them).

    In memory, ``func`` is called once. On a Dask array it is mapped lazily over the row blocks
    (:func:`dpcore._internal.dask.map_row_blocks`; ``n_cols``/``dtype`` describe ``func``'s output), each block first
    validated by :func:`check_array` under ``name`` (the value checks :func:`check_rows` leaves to compute time);
    ``name=None`` for arrays that need no check (e.g. decision values mapped to labels). ``func`` must treat rows
    independently, so that the blocks of a Dask array give the in-memory result.
    """
    if not is_dask_collection(X):
        return func(X, *shared)
    check = None if name is None else partial(check_array, name=name)
    return map_row_blocks(func, X, *shared, n_cols=n_cols, dtype=dtype, check=check)


def _is_sparse(array) -> bool:
    from scipy import sparse

    return sparse.issparse(array)


def _n_features_message(name: str, shape, n_features: int, estimator: Optional[str]) -> str:
    """scikit-learn's wording ("X has 1 features, but KernelSVM is expecting 4 features as input")."""
    who = estimator if estimator else "the fitted model"
    return f"{name} has {shape[1]} features, but {who} is expecting {n_features} features as input (shape {shape})"


def check_X(X, name: str = "X", *, n_features: Optional[int] = None, accept_sparse: bool = False,
            estimator: Optional[str] = None):
    """The one validation of a feature matrix at every public entry point (fit, predict,
    decision_function, transform, score, releases).

    Dense input goes through :func:`check_array` (2-D, non-empty, numeric, finite, the expected
    number of features). With ``accept_sparse=True`` a scipy.sparse matrix is returned as float64
    CSR after the same checks on its shape and stored values; otherwise sparse input is a
    ``TypeError`` whose message says "sparse". Every message starts with ``name``.
    """
    if not _is_sparse(X):
        return check_array(X, name, n_features=n_features, estimator=estimator)
    if not accept_sparse:
        check_array(X, name)  # raises the "sparse" TypeError
    from scipy import sparse

    if X.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a numeric sparse matrix, got dtype {X.dtype}")
    if not (X.format == "csr" and X.dtype == np.float64):  # already CSR float64: no copy
        X = sparse.csr_matrix(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        what = "sample(s)" if X.shape[0] == 0 else "feature(s)"
        raise ValueError(f"{name} must not be empty: 0 {what} (shape={X.shape}) while a minimum of 1 is required.")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(_n_features_message(name, X.shape, n_features, estimator))
    if not np.isfinite(X.data).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return X


def check_vector(array, name: str, *, length: Optional[int] = None) -> np.ndarray:
    """Validate a finite, non-empty 1-D float array (optionally of a given length)."""
    arr = check_array(array, name, ndim=1)
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name} must have length {length}, got {arr.shape[0]}")
    return arr


def check_int(value, name: str, *, minimum: int = 1, maximum: Optional[int] = None) -> int:
    """Return ``value`` as a Python int in ``[minimum, maximum]``; ``TypeError``/``ValueError`` naming ``name``.

    Booleans and non-integral numbers (``2.0``, ``"3"``) are a ``TypeError``; the bounds are checked on the exact
    integer, so a huge value (``2**70``) is a ``ValueError`` naming ``name``, never an ``OverflowError`` from a later
    conversion to a machine integer.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if value < minimum or (maximum is not None and value > maximum):
        upper = "" if maximum is None else f" and <= {maximum}"
        raise ValueError(f"{name} must be an integer >= {minimum}{upper}, got {value!r}")
    return value


def memory_limit_bytes() -> Optional[int]:
    """The largest output (bytes) dpcore will allocate now, or ``None`` where unknown.

    The memory available on this machine at the call (Linux ``MemAvailable``: what can be had without swapping;
    it changes as other processes run), lowered by the user's cap, the environment variable
    ``DPCORE_MAX_MEMORY_BYTES`` (a positive integer number of bytes, read at every call, so
    ``os.environ["DPCORE_MAX_MEMORY_BYTES"] = "8000000000"`` takes effect at once). The Rust core applies the same
    limit to its own allocations (``src/alloc.rs``); an invalid cap is a ``ValueError`` naming the variable.
    """
    return _core.memory_limit_bytes()


def check_count(value, name: str, *, minimum: int = 1, bytes_per_unit: int = 8) -> int:
    """Return ``value`` as an int ``>= minimum`` that sizes an output of ``bytes_per_unit`` bytes per unit.

    A count whose output does not fit in the memory available now (:func:`memory_limit_bytes`: ``MemAvailable``
    lowered by ``DPCORE_MAX_MEMORY_BYTES``, the same limit the Rust core applies) is a ``MemoryError`` naming
    ``name`` and its value before anything is allocated — never an interpreter abort, a machine filled until the
    OOM killer, or an ``OverflowError`` from converting to a machine integer. ``bytes_per_unit`` may itself depend
    on ``value`` (e.g. ``8·T`` for a ``T × T`` matrix sized by ``T``): the message shows ``value``, not the product.
    """
    value = check_int(value, name, minimum=minimum)
    limit = memory_limit_bytes()
    need = value * bytes_per_unit
    if need > 2**63 - 1 or (limit is not None and need > limit):
        raise MemoryError(
            f"{name}={value}: the output needs {need / 2**30:.3g} GiB, more than "
            + ("this machine's address space" if limit is None else
               f"the memory available now ({limit / 2**30:.3g} GiB; the environment variable "
               f"DPCORE_MAX_MEMORY_BYTES lowers this limit)"))
    return value


def record_feature_names(estimator, X) -> None:
    """Set ``feature_names_in_`` (string column names of a DataFrame ``X``; removed otherwise) and
    ``n_features_in_`` exactly as scikit-learn's ``validate_data`` does. Call at the end of a
    successful ``fit`` with the caller's original ``X`` (already validated). Column names are schema,
    not records: they are public metadata of the release. A Dask ``X`` is read through its columns only."""
    validate_data(estimator, column_schema(X) if is_dask_collection(X) else X, skip_check_array=True, reset=True)


def check_feature_names(estimator, X) -> None:
    """At prediction: scikit-learn's warning when ``X``'s column names differ from those seen in
    ``fit`` (or are present/absent only in one of them). Call after ``X`` itself was validated.
    A Dask ``X`` is checked through its columns only (a Dask DataFrame's names; none for a Dask
    array, as for a numpy array), without computing anything."""
    validate_data(estimator, column_schema(X) if is_dask_collection(X) else X, skip_check_array=True, reset=False)


def as_1d_target(y, name: str = "y") -> np.ndarray:
    """``y`` as a 1-D array; a column vector ``(n, 1)`` is accepted with scikit-learn's
    ``DataConversionWarning`` (as ``sklearn.utils.column_or_1d(warn=True)``). Other shapes are left for
    the caller's own check."""
    if y is None:
        raise ValueError(f"{name} is None: this estimator requires y to be passed, but the target y is None")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn(f"A column-vector {name} was passed when a 1d array was expected. Please change the shape "
                      f"of {name} to (n_samples,), for example using ravel().", DataConversionWarning, stacklevel=3)
        y = y[:, 0]
    return y


def as_dask_target(y: Any, chunks: Any) -> Any:
    """``y`` (numpy, list, Dask array or Series; labels of any dtype) as a 1-D Dask array with the row ``chunks``
    of ``X`` (or of predictions): shape and length checked, naming ``y``."""
    da = require_dask()
    if hasattr(y, "to_dask_array"):
        y = y.to_dask_array(lengths=True)
    if not isinstance(y, da.Array):
        y = np.asarray(as_1d_target(y))
        if y.ndim != 1:
            raise ValueError(f"y must be a 1-D array, got shape {y.shape}")
        y = da.from_array(y, chunks=(chunks,))
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D array, got shape {y.shape}")
    if any(np.isnan(c) for c in y.chunks[0]):
        raise ValueError("y has unknown chunk sizes; call y.compute_chunk_sizes() first")
    n = sum(chunks)
    if y.shape[0] != n:
        raise ValueError(f"y must have length {n} (the number of rows of X), got {y.shape[0]}")
    if tuple(y.chunks[0]) != tuple(chunks):
        y = y.rechunk({0: tuple(chunks)})
    return y

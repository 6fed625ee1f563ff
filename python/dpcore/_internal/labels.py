"""Binary label sets as declared public parameters.

Why the label set must be public
--------------------------------
Under replace-one adjacency, ``D`` (``n − 1`` records of class +1 and one of class −1) and ``D'``
(that record relabelled +1) are neighbours. If ``fit`` inferred the label set from the data
(``np.unique(y)``), it would release a model on ``D`` and refuse ``D'`` ("y must contain exactly
two classes") — the refusal alone distinguishes the two with certainty (ε = ∞). Worse, relabelling
one record from 0 to 2 would turn the inferred set {0, 1} into {1, 2} and flip every other label.

So every binary classifier in dpcore takes ``classes`` — the two admissible label values — as a
declared, data-independent parameter (default :data:`DEFAULT_CLASSES`, the ±1 convention of the
bundled data sets and of the papers). The ±1 encoding is fixed by ``classes`` alone: with
``classes_ = np.sort(classes)``, ``classes_[1]`` is +1 and ``classes_[0]`` is −1. A label outside
the declared set is an input error about that record only (the set of admissible datasets is
fixed in advance, so the refusal does not depend on the other records); a training set that
happens to contain only one of the two classes is admissible and trains like any other.
"""

from __future__ import annotations

import numbers
from typing import Any, Sequence, Tuple

import numpy as np
from sklearn.utils.multiclass import type_of_target

from dpcore._internal.validation import as_1d_target

__all__ = ["DEFAULT_CLASSES", "check_classes", "encode_binary_labels", "decision_labels", "check_multiclass_classes",
           "encode_multiclass_labels"]

#: The declared label set used when ``classes`` is not given: the ±1 convention of the papers and
#: of ``dpcore.datasets``.
DEFAULT_CLASSES: Tuple[int, int] = (-1, 1)


def check_classes(classes: Sequence[Any], name: str = "classes") -> np.ndarray:
    """Validate a declared binary label set and return it sorted (``classes_``).

    ``classes`` must hold exactly two distinct, mutually comparable, non-missing labels (numbers,
    strings or booleans). Raises ``ValueError``/``TypeError`` naming ``name``.
    """
    if classes is None or isinstance(classes, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of two labels, e.g. (-1, 1), got {classes!r}")
    try:
        items = list(classes)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of two labels, e.g. (-1, 1), got {classes!r}") from None
    if len(items) != 2:
        raise ValueError(f"{name} must list exactly two labels, got {len(items)}: {classes!r}")
    for c in items:
        if c is None or (isinstance(c, (float, np.floating)) and not np.isfinite(c)):
            raise ValueError(f"{name} must not contain None, NaN or infinite labels, got {classes!r}")
    kinds = {"number" if isinstance(c, (numbers.Real, np.number, np.bool_)) else
             "string" if isinstance(c, (str, np.str_)) else type(c).__name__ for c in items}
    if len(kinds) != 1 or not kinds <= {"number", "string"}:
        raise TypeError(f"{name} must hold two numbers or two strings, got {classes!r}")
    arr = np.asarray(items)
    if arr.ndim != 1 or arr.dtype.kind not in "biufUS":
        raise TypeError(
            f"{name} must hold two numbers or two strings of the same kind, got {classes!r} (dtype {arr.dtype})"
        )
    if arr[0] == arr[1]:
        raise ValueError(f"{name} must list two distinct labels, got {classes!r}")
    return np.sort(arr)


def decision_labels(f: np.ndarray, classes: np.ndarray, threshold: float = 0.0) -> np.ndarray:
    """The predicted labels of decision values ``f``: ``classes[1]`` where ``f > threshold``, else ``classes[0]``."""
    return classes[(f > threshold).astype(np.intp)]


def encode_binary_labels(y, classes: Sequence[Any], n: int, *, name: str = "y",
                         classes_name: str = "classes") -> Tuple[np.ndarray, np.ndarray]:
    """Map ``y`` onto ±1 through the declared label set.

    Returns ``(classes_, y_pm)`` with ``classes_ = np.sort(classes)`` and ``y_pm[i] = +1`` iff
    ``y[i] == classes_[1]``. ``y`` must be 1-D (or a column vector of shape ``(n, 1)``) of length
    ``n``; every label must belong to ``classes`` — otherwise ``ValueError`` naming ``name`` (with
    a few offending values and the fix). Any subset of ``classes`` is accepted, including a single
    class. Nothing here depends on which labels happen to occur.
    """
    classes_ = check_classes(classes, classes_name)
    y = as_1d_target(y, name)
    if y.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of labels, got shape {y.shape}")
    if y.shape[0] != n:
        raise ValueError(f"{name} must have length {n} (the number of rows of X), got {y.shape[0]}")
    is_pos = _equals(y, classes_[1])
    is_neg = _equals(y, classes_[0])
    known = is_pos | is_neg
    if not known.all():
        bad = y[~known][:3].tolist()
        raise ValueError(
            f"{name} contains {int((~known).sum())} label(s) outside the declared {classes_name}="
            f"{classes_.tolist()!r} (e.g. {bad!r}); the label set is a public parameter — pass "
            f"{classes_name}=[a, b] listing the two labels your data use" + _label_kind_note(y)
        )
    return classes_, np.where(is_pos, 1.0, -1.0)


def _label_kind_note(y: np.ndarray) -> str:
    """scikit-learn's wording for the two common causes of labels outside the declared set
    (a continuous target, or more than two classes), so tools that match on it recognise them."""
    try:
        kind = type_of_target(y)
    except (ValueError, TypeError):
        return ""
    if kind == "continuous":
        return " (Unknown label type: continuous; a regression target?)"
    if kind == "multiclass":
        return " (Only binary classification is supported.)"
    return ""


def _equals(y: np.ndarray, label) -> np.ndarray:
    """Element-wise ``y == label`` that never raises on mixed types (object arrays, None, strings)."""
    if y.dtype.kind == "O":
        out = np.fromiter((_scalar_eq(v, label) for v in y), dtype=bool, count=y.shape[0])
        return out
    if (y.dtype.kind in "biuf") != (np.asarray(label).dtype.kind in "biuf"):
        return np.zeros(y.shape[0], dtype=bool)
    with np.errstate(invalid="ignore"):
        return np.asarray(y == label, dtype=bool).reshape(y.shape[0])


def _scalar_eq(v, label) -> bool:
    if v is None:
        return False
    try:
        return bool(v == label)
    except Exception:  # noqa: BLE001 - exotic objects compare as "not this label"
        return False


# ----------------------------------------------------------------------------------------------
# K-class label sets (issue 24): the same rule as the binary one above, for K >= 2 declared labels
# ----------------------------------------------------------------------------------------------
def check_multiclass_classes(classes: Sequence[Any], name: str = "classes") -> np.ndarray:
    """Validate a declared label set of ``K >= 2`` distinct labels and return it sorted (``classes_``).

    The set is a public parameter, never read off the data (module docstring): ``None`` is refused
    (``TypeError``) rather than inferred. Labels must be numbers (bools count as numbers) or strings,
    all of one kind, none missing/NaN/infinite. Raises ``ValueError``/``TypeError`` naming ``name``.
    """
    if classes is None or isinstance(classes, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of K >= 2 labels declared in advance, e.g. "
                        f"classes=[0, 1, 2], got {classes!r} (the label set is a public parameter)")
    try:
        items = list(classes)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of K >= 2 labels, e.g. (0, 1, 2), got {classes!r}") from None
    if len(items) < 2:
        raise ValueError(f"{name} must list at least two labels, got {len(items)}: {classes!r}")
    for c in items:
        if c is None or (isinstance(c, (float, np.floating)) and not np.isfinite(c)):
            raise ValueError(f"{name} must not contain None, NaN or infinite labels, got {classes!r}")
    kinds = {"number" if isinstance(c, (numbers.Real, np.number, np.bool_)) else
             "string" if isinstance(c, (str, np.str_)) else type(c).__name__ for c in items}
    if len(kinds) != 1 or not kinds <= {"number", "string"}:
        raise TypeError(f"{name} must hold numbers or strings (all of one kind), got {classes!r}")
    arr = np.asarray(items)
    if arr.ndim != 1 or arr.dtype.kind not in "biufUS":
        raise TypeError(f"{name} must hold labels of one kind, got {classes!r} (dtype {arr.dtype})")
    arr = np.sort(arr)
    if np.any(arr[1:] == arr[:-1]):
        raise ValueError(f"{name} must list distinct labels, got {classes!r}")
    return arr


def encode_multiclass_labels(y, classes: Sequence[Any], n: int, *, name: str = "y",
                             classes_name: str = "classes") -> Tuple[np.ndarray, np.ndarray]:
    """Map ``y`` onto class indices ``0..K-1`` of the declared, sorted ``classes_``.

    Returns ``(classes_, idx)`` with ``classes_[idx[i]] == y[i]``. A label outside ``classes`` is a
    ``ValueError`` naming ``name`` (about that record only); any subset of the classes is accepted,
    including a single one — nothing depends on which labels happen to occur.
    """
    classes_ = check_multiclass_classes(classes, classes_name)
    y = as_1d_target(y, name)
    if y.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of labels, got shape {y.shape}")
    if y.shape[0] != n:
        raise ValueError(f"{name} must have length {n} (the number of rows of X), got {y.shape[0]}")
    idx = np.full(y.shape[0], -1, dtype=np.int64)
    for k, c in enumerate(classes_):
        idx[_equals(y, c)] = k
    unknown = idx < 0
    if unknown.any():
        bad = y[unknown][:3].tolist()
        note = " (Unknown label type: continuous; a regression target?)" if _label_kind_note(y).startswith(
            " (Unknown") else ""
        raise ValueError(
            f"{name} contains {int(unknown.sum())} label(s) outside the declared {classes_name}="
            f"{classes_.tolist()!r} (e.g. {bad!r}); the label set is a public parameter — pass "
            f"{classes_name}=[...] listing every label your data may use{note}")
    return classes_, idx

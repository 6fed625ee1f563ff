"""Binary label sets as declared public parameters.

Why the label set must be public
--------------------------------
Under replace-one adjacency, ``D`` (``n − 1`` records of class +1 and one of class −1) and ``D'``
(that record relabelled +1) are neighbours. If ``fit`` inferred the label set from the data
(``np.unique(y)``), it would release a model on ``D`` and refuse ``D'`` ("y must contain exactly
two classes") — the refusal alone distinguishes the two with certainty (ε = ∞). Worse, relabelling
one record from 0 to 2 would turn the inferred set {0, 1} into {1, 2} and flip every other label.

So every binary classifier in dpcore takes ``classes`` — the two admissible label values — as a
declared, data-independent parameter. The ±1 encoding is fixed by ``classes`` alone: with
``classes_ = np.sort(classes)``, ``classes_[1]`` is +1 and ``classes_[0]`` is −1. A label outside
the declared set is an input error about that record only (the set of admissible datasets is
fixed in advance, so the refusal does not depend on the other records); a training set that
happens to contain only one of the two classes is admissible and trains like any other.

The default rule (``classes=None``, :data:`DEFAULT_CLASSES`)
-------------------------------------------------------------
Without a declared pair, the usual binary encodings are accepted by a fixed rule that looks at
each label alone: a label equal to ``1`` (or ``True``, or ``1.0``) is the positive class (+1); a
label equal to ``0``, ``-1`` (or ``False``, ``0.0``, ``-1.0``) is the negative class (−1); any
other label is refused with an error naming ``classes``. So y in {0, 1}, {−1, 1} and
{False, True} train unchanged, the mapping never depends on which labels occur (neighbouring
datasets see the same mapping; a single-class training set trains like any other), and a dataset
that mixes 0 and −1 is simply read as negatives.

``classes_`` (what ``predict`` returns) must not depend on the labels either — "does y contain a
−1 or a 0?" is a fact about the records (an all-positive dataset is a neighbour of one holding a
0 *and* of one holding a −1), so it cannot choose the negative label. It is fixed by the *dtype*
of ``y`` (a public property of the column, the same for neighbouring datasets):
:func:`default_classes` gives ``[False, True]`` for a boolean ``y``, ``[0, 1]`` for an unsigned
integer ``y`` (which cannot hold −1), and ``[-1, 1]`` (in ``y``'s dtype) otherwise — dpcore's and
the papers' ±1 convention. So with a signed-integer or float ``y`` in {0, 1}, ``predict`` answers
−1 for the negative class; ``score`` (and therefore ``cross_val_score``/``GridSearchCV`` with
their default scoring) compares through the same rule and is right for either encoding. Declare
``classes=(0, 1)`` to get 0/1 predictions back (e.g. for ``accuracy_score(y, clf.predict(X))``).
"""

from __future__ import annotations

import numbers
from typing import Any, Sequence, Tuple

import numpy as np
from sklearn.utils.multiclass import type_of_target

from dpcore._internal.validation import as_1d_target

__all__ = ["DEFAULT_CLASSES", "PM_CLASSES", "check_classes", "default_classes", "encode_binary_labels",
           "decision_labels", "default_rule_codes", "check_multiclass_classes", "encode_multiclass_labels"]

#: The default of every classifier's ``classes``: ``None``, the fixed default rule (1/True positive; 0, −1, False
#: negative; ``classes_`` by the dtype of ``y``, see :func:`default_classes`).
DEFAULT_CLASSES = None
#: The ±1 convention of the papers and of ``dpcore.datasets`` (``classes_`` of a numeric signed ``y`` under the
#: default rule, and of a kernel release that declares none).
PM_CLASSES: Tuple[int, int] = (-1, 1)
#: Where a binary-only estimator sends K-class users (error messages of :func:`check_classes` and of labels outside
#: the declared pair; the kernel releases' model check).
MULTICLASS_NOTE = ("Only binary classification is supported by this estimator; for K >= 3 classes declare them "
                   "with the multi-class models: MulticlassKernelLogisticRegression + MulticlassTDDL / "
                   "MulticlassGPService, MulticlassOutputPerturbation, or PrivateGridSearch(base_params={'classes': "
                   "[...]}).")
#: The wording of the default rule in error messages and docs.
DEFAULT_RULE_DOC = "classes=None: a label equal to 1 or True is positive; 0, -1 or False negative"


def default_classes(dtype) -> np.ndarray:
    """``classes_`` under the default rule, from the dtype of ``y`` only (never its values).

    ``[False, True]`` for a boolean dtype, ``[0, 1]`` for an unsigned integer dtype, otherwise
    ``[-1, 1]`` — in ``y``'s dtype for signed integers and floats, as ``int64`` for anything else
    (object arrays, lists of Python ints).

    >>> default_classes(np.dtype(bool)).tolist(), default_classes(np.dtype(np.uint8)).tolist()
    ([False, True], [0, 1])
    >>> default_classes(np.dtype(np.float32))
    array([-1.,  1.], dtype=float32)
    """
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.array([False, True])
    if dtype.kind == "u":
        return np.array([0, 1], dtype=dtype)
    if dtype.kind in "if":
        return np.array([-1, 1], dtype=dtype)
    return np.array([-1, 1], dtype=np.int64)


def default_rule_codes(y: np.ndarray) -> np.ndarray:
    """±1 codes of ``y`` under the default rule (``nan`` for a label the rule does not know)."""
    is_pos = _equals(y, 1)
    is_neg = _equals(y, 0) | _equals(y, -1)
    return np.where(is_pos, 1.0, np.where(is_neg, -1.0, np.nan))


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
        more = f" (K = {len(items)} classes; {MULTICLASS_NOTE})" if len(items) > 2 else ""
        raise ValueError(f"{name} must list exactly two labels, got {len(items)}: {classes!r}{more}")
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
    """Map ``y`` onto ±1 through the declared label set (or, with ``classes=None``, the default rule).

    Returns ``(classes_, y_pm)`` with ``classes_ = np.sort(classes)`` and ``y_pm[i] = +1`` iff
    ``y[i] == classes_[1]``. ``y`` must be 1-D (or a column vector of shape ``(n, 1)``) of length
    ``n``; every label must belong to ``classes`` — otherwise ``ValueError`` naming ``name`` (with
    a few offending values and the fix). Any subset of ``classes`` is accepted, including a single
    class. Nothing here depends on which labels happen to occur. With ``classes=None``: the default
    rule (module docstring), ``classes_ = default_classes(y.dtype)``.
    """
    classes_ = None if classes is None else check_classes(classes, classes_name)
    y = as_1d_target(y, name)
    if y.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of labels, got shape {y.shape}")
    if y.shape[0] != n:
        raise ValueError(f"{name} must have length {n} (the number of rows of X), got {y.shape[0]}")
    if classes_ is None:
        codes = default_rule_codes(y)
        unknown = np.isnan(codes)
        if unknown.any():
            bad = y[unknown][:3].tolist()
            raise ValueError(
                f"{name} contains {int(unknown.sum())} label(s) outside the declared {classes_name}=None, the "
                f"default label rule (e.g. {bad!r}; {DEFAULT_RULE_DOC}); the label set is a public parameter — pass "
                f"{classes_name}=[a, b] listing the two labels your data use" + _label_kind_note(y)
            )
        return default_classes(y.dtype), codes
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
        return f" ({MULTICLASS_NOTE})"
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


def is_rule_pair(classes_) -> bool:
    """Whether ``classes_`` is one the default rule produces (a numeric/boolean pair ``[0 or -1, 1]``)."""
    c = np.asarray(classes_)
    return (c.shape == (2,) and c.dtype.kind in "biuf" and bool(c[1] == 1) and bool(c[0] == 0 or c[0] == -1))


def label_agreement(pred: np.ndarray, y, classes_) -> np.ndarray:
    """Element-wise "the predicted label is the true one", as ``score`` counts it.

    For a ``classes_`` of the default rule (``[-1, 1]``, ``[0, 1]``, ``[False, True]``) labels are
    compared through the rule (1/True positive; 0, −1, False negative), so a model fitted with the
    default on 0/1 labels scores right although it predicts −1 for the negative class; otherwise
    labels are compared as they are.
    """
    pred = np.asarray(pred)
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if is_rule_pair(classes_):
        return default_rule_codes(pred.reshape(-1)) == default_rule_codes(y.reshape(-1))
    return np.asarray(pred == y)


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

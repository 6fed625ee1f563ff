"""Bundled real data with public, data-independent pre-processing.

dpcore ships the UCI Adult (Census Income) and UCI Statlog (Shuttle) data sets inside the package
(``dpcore/datasets/data``), so the loaders work from an installed wheel without network access:
:func:`load_adult` and :func:`load_shuttle` (see ``dpcore.datasets._shuttle`` for the declared
Shuttle ranges and the fixed public train/test split).

Privacy assumptions of the pre-processing (named explicitly, as every private mechanism downstream
relies on them):

* **Declared schema.** The category list of every categorical column is copied from the UCI
  documentation (``adult.names``); the range of every numeric column is a declared constant
  (:data:`ADULT_NUMERIC_RANGES`). Nothing is estimated from the records.
* **Declared domain.** Numeric values are clipped to their declared range (``clip=True``, the
  default; this *is* public pre-processing that the caller asks for) and mapped to ``[0, 1]``;
  categoricals are one-hot encoded. Every encoded row is divided by the public constant
  :data:`ADULT_NORM_BOUND` ``= sqrt(#numeric + #categorical columns) = sqrt(14)``, an upper bound
  on the norm of *any* encoded row, so ``||x||_2 <= 1`` holds by construction (never by dividing
  by a data-derived maximum). The declared bound on ||x||_2 is therefore ``data_norm = 1.0``.
* **Row independence.** The encoding of a row depends only on that row: encoding one record
  alone gives exactly the same vector as encoding it inside the full data set.

Data attribution:

* Becker, B. & Kohavi, R. (1996). *Adult* [Dataset]. UCI Machine Learning Repository.
  https://doi.org/10.24432/C5XW20 — licensed under CC BY 4.0.
* *Statlog (Shuttle)* [Dataset]. UCI Machine Learning Repository. https://doi.org/10.24432/C5WS31
  — licensed under CC BY 4.0 (anomaly-detection version: the CSV shipped in the PyPI package
  ``river`` 0.26.1, bundled unmodified). The 7-class version (``load_shuttle(..., binary=False)``):
  the class column of those rows and the 8,903 rows of class 'High' they lack, extracted from
  ``data/Shuttle.rda`` of the R package mlbench 2.1-3 (Debian ``r-cran-mlbench``; the same UCI data,
  CC BY 4.0) by ``scripts/make_shuttle_classes.py`` (``shuttle_classes.csv.gz``, ``shuttle_high.csv.gz``).
"""

from __future__ import annotations

import functools
import gzip
import math
from importlib import resources
from typing import Dict, Iterable, List, Sequence, Tuple

import numpy as np
from numpy.typing import ArrayLike

from dpcore.datasets import _adult_schema as _schema
from dpcore.datasets._common import Bunch, check_subset as _check_subset, encoded_bunch
from dpcore.datasets._letter import load_letter  # UCI Letter Recognition (Slate 1991, doi:10.24432/C5ZP40), CC BY 4.0
from dpcore.datasets._shuttle import (
    SHUTTLE_CLASSES,
    SHUTTLE_DESCRIPTION,
    SHUTTLE_FEATURES,
    SHUTTLE_NORM_BOUND,
    SHUTTLE_RANGES,
    SHUTTLE_SPLIT_SEED,
    SHUTTLE_TEST_FRACTION,
    encode_shuttle,
    encode_shuttle_labels,
    load_shuttle,
    load_shuttle_raw,
)

__all__ = [
    "Bunch",
    "load_adult",
    "load_adult_raw",
    "encode_adult",
    "encode_adult_labels",
    "adult_feature_names",
    "ADULT_CATEGORIES",
    "ADULT_NUMERIC_RANGES",
    "ADULT_NORM_BOUND",
    "ADULT_DESCRIPTION",
    "load_shuttle",
    "load_shuttle_raw",
    "encode_shuttle",
    "encode_shuttle_labels",
    "SHUTTLE_FEATURES",
    "SHUTTLE_RANGES",
    "SHUTTLE_NORM_BOUND",
    "SHUTTLE_SPLIT_SEED",
    "SHUTTLE_TEST_FRACTION",
    "SHUTTLE_DESCRIPTION",
    "SHUTTLE_CLASSES",
    "load_letter",
]

ADULT_CATEGORIES: Dict[str, Tuple[str, ...]] = dict(_schema.CATEGORIES)
ADULT_NUMERIC_RANGES: Dict[str, Tuple[float, float, str]] = dict(_schema.NUMERIC_RANGES)

#: Public bound on the Euclidean norm of an encoded (unscaled) Adult row: each of the 6 numeric
#: features lies in [0, 1] and each of the 8 categorical blocks has at most one 1.
ADULT_NORM_BOUND: float = math.sqrt(len(_schema.NUMERIC_COLUMNS) + len(_schema.CATEGORICAL_COLUMNS))

# Divisor actually used: the public bound inflated by 2^-40 (relative) so that floating-point
# rounding can never push a row norm above 1.0 (the worst-case row has norm exactly sqrt(14)).
_ROW_DIVISOR = ADULT_NORM_BOUND * (1.0 + 2.0**-40)

_FILES = {"train": "adult.data.gz", "test": "adult.test.gz"}
_MISSING_MODES = ("indicator", "zero")

ADULT_DESCRIPTION = """\
UCI Adult (Census Income) data set
==================================

Binary classification: does a person earn more than $50K a year (1994 US Census extract)?
train (adult.data): 32,561 rows; test (adult.test): 16,281 rows; 14 attributes
(6 numeric, 8 categorical); about 24% positive (>50K). Missing values ('?') occur in
workclass, occupation and native-country.

dpcore encoding (public, data-independent): numeric columns clipped to declared ranges
(age 17-90, fnlwgt 1e3-1e7 on a log scale, education-num 1-16, capital-gain 0-99999 and
capital-loss 0-99999 on a log1p scale, hours-per-week 1-99) and mapped to [0, 1]; categorical
columns one-hot over the category lists of adult.names ('?' -> its own indicator column, or
an all-zero block with missing="zero"); each row divided by the public bound sqrt(14) so that
||x||_2 <= 1 (data_norm = 1.0). Labels: >50K -> +1, <=50K -> -1.

Source: Becker, B. & Kohavi, R. (1996). Adult [Dataset].
UCI Machine Learning Repository. https://doi.org/10.24432/C5XW20
Licence: Creative Commons Attribution 4.0 International (CC BY 4.0). The files bundled with dpcore are unmodified copies (gzip-compressed)
of adult.data and adult.test.
"""


def adult_feature_names(missing: str = "indicator") -> List[str]:
    """Names of the columns produced by :func:`encode_adult` (numeric first, then one-hot blocks).

    Examples
    --------
    >>> from dpcore.datasets import adult_feature_names
    >>> names = adult_feature_names()
    >>> names[0], len(names)
    ('age', 113)
    """
    _check_missing(missing)
    return _schema.feature_names(missing)


# --------------------------------------------------------------------------------------------
# Raw file parsing
# --------------------------------------------------------------------------------------------


def _check_missing(missing) -> str:
    if missing not in _MISSING_MODES:
        raise ValueError(f"missing must be one of {_MISSING_MODES}, got {missing!r}")
    return missing


@functools.lru_cache(maxsize=None)
def _read_raw_file(filename: str) -> Tuple[Tuple[Tuple[str, ...], ...], Tuple[str, ...]]:
    """Parse one bundled file into (rows of 14 stripped strings, labels without trailing '.')."""
    resource = resources.files(__name__).joinpath("data", filename)
    with resource.open("rb") as fh, gzip.open(fh, "rt", encoding="ascii") as text:
        lines = text.read().splitlines()
    rows: List[Tuple[str, ...]] = []
    labels: List[str] = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip() or line.startswith("|"):
            # blank lines and the junk first line of adult.test ("|1x3 Cross validator")
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != len(_schema.RAW_COLUMNS):
            raise ValueError(
                f"{filename}, line {lineno}: expected {len(_schema.RAW_COLUMNS)} fields, "
                f"got {len(fields)}"
            )
        label = fields[-1].rstrip(".")
        if label not in (_schema.POSITIVE_LABEL, _schema.NEGATIVE_LABEL):
            raise ValueError(f"{filename}, line {lineno}: unknown income label {fields[-1]!r}")
        rows.append(tuple(fields[:-1]))
        labels.append(label)
    return tuple(rows), tuple(labels)


def _raw_rows(subset: str) -> Tuple[List[Tuple[str, ...]], List[str]]:
    names = ("train", "test") if subset == "all" else (subset,)
    rows: List[Tuple[str, ...]] = []
    labels: List[str] = []
    for name in names:
        r, y = _read_raw_file(_FILES[name])
        rows.extend(r)
        labels.extend(y)
    return rows, labels


def load_adult_raw(subset: str = "train") -> Bunch:
    """Load the raw UCI Adult records, as strings, exactly as in the files.

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        ``"train"`` is ``adult.data`` (32,561 rows), ``"test"`` is ``adult.test`` (16,281 rows),
        ``"all"`` is train followed by test.

    Returns
    -------
    Bunch
        ``data``: object array of shape (n, 14) with the stripped field strings (``'?'`` for
        missing); ``target``: object array of ``'>50K'`` / ``'<=50K'`` (the trailing ``'.'`` of
        ``adult.test`` removed); ``feature_names``: the 14 column names; ``description``.

    Examples
    --------
    >>> from dpcore.datasets import load_adult_raw
    >>> raw = load_adult_raw("test")
    >>> raw.data.shape, len(raw.feature_names)
    ((16281, 14), 14)
    """
    _check_subset(subset)
    rows, labels = _raw_rows(subset)
    data = np.empty((len(rows), len(_schema.FEATURE_COLUMNS)), dtype=object)
    data[:] = rows
    return Bunch(
        data=data,
        target=np.array(labels, dtype=object),
        feature_names=list(_schema.FEATURE_COLUMNS),
        description=ADULT_DESCRIPTION,
        subset=subset,
    )


# --------------------------------------------------------------------------------------------
# Public, data-independent encoding
# --------------------------------------------------------------------------------------------


def _encode_numeric(values: Sequence, column: str, clip: bool) -> np.ndarray:
    low, high, scale = _schema.NUMERIC_RANGES[column]
    try:
        v = np.array([float(x) for x in values], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"rows: column {column!r} must be numeric ({exc})") from None
    bad = ~np.isfinite(v)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"rows: column {column!r} has a non-finite value at row {i}")
    outside = (v < low) | (v > high)
    if outside.any():
        if not clip:
            i = int(np.flatnonzero(outside)[0])
            raise ValueError(
                f"rows: column {column!r} value {v[i]!r} at row {i} lies outside the declared "
                f"range [{low:g}, {high:g}]; pass clip=True to clip to the declared range"
            )
        v = np.clip(v, low, high)
    if scale == "linear":
        g, g_lo, g_hi = v, low, high
    elif scale == "log":
        g, g_lo, g_hi = np.log(v), math.log(low), math.log(high)
    elif scale == "log1p":
        g, g_lo, g_hi = np.log1p(v), math.log1p(low), math.log1p(high)
    else:  # pragma: no cover - schema constant
        raise AssertionError(scale)
    # clip again to absorb rounding of the transform; the result lies in [0, 1] exactly
    return np.clip((g - g_lo) / (g_hi - g_lo), 0.0, 1.0)


def _encode_categorical(values: Sequence, column: str, missing: str) -> np.ndarray:
    cats = _schema.CATEGORIES[column]
    index = {c: j for j, c in enumerate(cats)}
    width = len(cats) + (1 if missing == "indicator" else 0)
    out = np.zeros((len(values), width), dtype=np.float64)
    for i, raw in enumerate(values):
        val = str(raw).strip()
        if val == _schema.MISSING_TOKEN:
            if missing == "indicator":
                out[i, len(cats)] = 1.0
            continue
        j = index.get(val)
        if j is None:
            raise ValueError(
                f"rows: column {column!r} has value {val!r} at row {i}, which is not in the "
                f"declared category list (adult.names) and is not the missing token '?'"
            )
        out[i, j] = 1.0
    return out


def _as_rows(rows) -> List[Sequence]:
    if isinstance(rows, np.ndarray):
        if rows.ndim == 1:
            rows = rows[None, :]
        if rows.ndim != 2:
            raise ValueError(f"rows must be 2-dimensional, got ndim={rows.ndim}")
        rows = rows.tolist()
    else:
        rows = list(rows)
        if rows and isinstance(rows[0], str):
            raise ValueError("rows must be a sequence of records (sequences of 14 fields)")
        if rows and not isinstance(rows[0], (list, tuple, np.ndarray)):
            raise ValueError("rows must be a sequence of records (sequences of 14 fields)")
    width = len(_schema.FEATURE_COLUMNS)
    for i, r in enumerate(rows):
        if len(r) != width:
            raise ValueError(
                f"rows: record {i} has {len(r)} fields, expected {width} "
                f"({', '.join(_schema.FEATURE_COLUMNS)})"
            )
    return rows


def encode_adult(rows: ArrayLike, *, clip: bool = True, missing: str = "indicator") -> np.ndarray:
    """Encode raw Adult records into the unit ball with a public, data-independent map.

    Parameters
    ----------
    rows : array-like of shape (n, 14) or (14,)
        Raw records in the column order of :func:`load_adult_raw` (numbers may be strings or
        numbers; missing categoricals are ``'?'``).
    clip : bool, default=True
        Clip numeric values to their declared ranges (:data:`ADULT_NUMERIC_RANGES`). This is
        public pre-processing the caller opts into; with ``clip=False`` a value outside its
        declared range raises :class:`ValueError` instead.
    missing : {"indicator", "zero"}, default="indicator"
        Encoding of ``'?'``: its own indicator column at the end of the block, or an all-zero
        block.

    Returns
    -------
    X : ndarray of shape (n, d), float64
        ``d = 6 + 99 + 8 = 113`` with ``missing="indicator"`` (105 with ``"zero"``);
        ``||X[i]||_2 <= 1`` for every row, by construction.

    Examples
    --------
    Encoding depends on each row alone (public, data-independent pre-processing):

    >>> import numpy as np
    >>> from dpcore.datasets import adult_feature_names, encode_adult, load_adult_raw
    >>> raw = load_adult_raw("test")
    >>> X = encode_adult(raw.data[:3])
    >>> X.shape[1] == len(adult_feature_names()), bool(np.all(np.linalg.norm(X, axis=1) <= 1.0))
    (True, True)
    >>> np.array_equal(encode_adult(raw.data[:1]), X[:1])
    True
    """
    _check_missing(missing)
    rows = _as_rows(rows)
    n = len(rows)
    columns = {name: [r[j] for r in rows] for j, name in enumerate(_schema.FEATURE_COLUMNS)}
    blocks = [
        _encode_numeric(columns[c], c, bool(clip))[:, None] for c in _schema.NUMERIC_COLUMNS
    ]
    blocks += [_encode_categorical(columns[c], c, missing) for c in _schema.CATEGORICAL_COLUMNS]
    if n == 0:
        return np.zeros((0, len(_schema.feature_names(missing))), dtype=np.float64)
    X = np.hstack(blocks)
    X /= _ROW_DIVISOR
    return X


def encode_adult_labels(labels: Iterable) -> np.ndarray:
    """Map income labels to ``{-1.0, +1.0}`` (``'>50K'`` -> +1; a trailing ``'.'`` is ignored).

    Examples
    --------
    >>> from dpcore.datasets import encode_adult_labels
    >>> encode_adult_labels(["<=50K", ">50K.", ">50K"])
    array([-1.,  1.,  1.])
    """
    out = []
    for i, lab in enumerate(labels):
        s = str(lab).strip().rstrip(".")
        if s == _schema.POSITIVE_LABEL:
            out.append(1.0)
        elif s == _schema.NEGATIVE_LABEL:
            out.append(-1.0)
        else:
            raise ValueError(f"labels: unknown income label {lab!r} at position {i}")
    return np.array(out, dtype=np.float64)


def load_adult(
    subset: str = "train",
    *,
    as_frame: bool = False,
    clip: bool = True,
    missing: str = "indicator",
) -> Bunch:
    """Load UCI Adult, encoded into the unit ball with public pre-processing.

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        ``"train"`` (32,561 rows), ``"test"`` (16,281 rows) or ``"all"`` (train then test).
    as_frame : bool, default=False
        Return ``X`` as a :class:`pandas.DataFrame` and ``y`` as a :class:`pandas.Series`
        (requires pandas).
    clip : bool, default=True
        Clip numeric values to the declared ranges (public pre-processing; see
        :func:`encode_adult`). With ``clip=False`` out-of-range values raise.
    missing : {"indicator", "zero"}, default="indicator"
        Encoding of missing categoricals (``'?'``).

    Returns
    -------
    Bunch
        ``X`` (n, d) float64 with ``||x||_2 <= 1`` per row; ``y`` (n,) in ``{-1.0, +1.0}``
        (``>50K`` = +1); ``feature_names``; ``data_norm`` = 1.0 (the declared bound on ||x||_2);
        ``norm_bound`` = sqrt(14) (the public bound the rows were divided by); ``subset``;
        ``description`` (with licence and attribution).

    Examples
    --------
    >>> from dpcore.datasets import load_adult
    >>> data = load_adult("train")
    >>> data.X.shape, data.data_norm
    ((32561, 113), 1.0)
    """
    _check_subset(subset)
    _check_missing(missing)
    rows, labels = _raw_rows(subset)
    X = encode_adult(rows, clip=clip, missing=missing)
    y = encode_adult_labels(labels)
    names = _schema.feature_names(missing)
    return encoded_bunch(X, y, names, label_name="income", as_frame=as_frame, data_norm=1.0,
                         norm_bound=ADULT_NORM_BOUND, subset=subset, description=ADULT_DESCRIPTION)

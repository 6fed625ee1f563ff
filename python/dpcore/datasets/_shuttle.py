"""UCI Statlog (Shuttle), bundled, with public and data-independent pre-processing into the unit ball.

Every constant here is declared, not estimated from the records when the data is loaded:

* :data:`SHUTTLE_RANGES`: one declared range ``[low, high]`` per attribute. The UCI documentation
  of Statlog (Shuttle) gives no attribute ranges (the 9 attributes are anonymised numerical
  sensor readings). The declared ranges are round numbers that enclose every value of the
  published benchmark (the min/max of this public data set are public knowledge). They are
  fixed constants: loading, clipping and scaling never look at other records. For *private*
  data of the same kind, the ranges have to come from the sensor specification.
* Each value is clipped to its declared range (``clip=True``, the default; ``clip=False`` raises
  instead), centred at the midpoint of the range and divided by its half-width, so it lies in
  ``[-1, 1]``. Every row is then divided by :data:`SHUTTLE_NORM_BOUND` ``= sqrt(9) = 3``, an upper
  bound on the norm of *any* encoded row, so ``||x||_2 <= 1`` by construction (declared domain
  radius 1.0).
* The train/test split is a fixed public permutation (legacy ``numpy.random.RandomState`` with the
  public seed :data:`SHUTTLE_SPLIT_SEED`; that generator's stream is frozen by NumPy's
  compatibility policy): the first 80% of the permuted rows are ``"train"``, the last 20% are
  ``"test"``. It depends only on the row count and the seed, never on the values.
"""

from __future__ import annotations

import functools
import gzip
import io
import math
from importlib import resources
from typing import Dict, Tuple

import numpy as np
from numpy.typing import ArrayLike

from dpcore.datasets._common import Bunch, check_subset as _check_subset, encoded_bunch, split_rows

__all__ = [
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
]

_FILE = "shuttle.csv.gz"
_LABEL = "anomaly"
#: The Statlog class of every row of _FILE (same order) and the 8,903 rows of class 'High' that _FILE lacks
#: (built by scripts/make_shuttle_classes.py from mlbench's data/Shuttle.rda; provenance in SHUTTLE_DESCRIPTION).
_CLASS_FILE = "shuttle_classes.csv.gz"
_HIGH_FILE = "shuttle_high.csv.gz"

#: The 7 declared classes of :func:`load_shuttle` with ``binary=False`` (mlbench's names of the Statlog classes
#: 1..7: Rad Flow, Fpv Close, Fpv Open, High, Bypass, Bpv Close, Bpv Open), sorted.
SHUTTLE_CLASSES: Tuple[str, ...] = ("Bpv.Close", "Bpv.Open", "Bypass", "Fpv.Close", "Fpv.Open", "High", "Rad.Flow")

#: Attribute names as in the bundled CSV (the UCI attributes are unnamed numerical readings).
SHUTTLE_FEATURES: Tuple[str, ...] = tuple(f"f{j}" for j in range(1, 10))

#: Declared range ``(low, high)`` of every attribute: round numbers enclosing the published
#: Statlog (Shuttle) value ranges (f1 27..126, f2 -4821..5075, f3 21..149, f4 -3939..3830,
#: f5 -188..436, f6 -26739..15164, f7 -48..105, f8 -353..270, f9 -356..266 in the bundled file).
SHUTTLE_RANGES: Dict[str, Tuple[float, float]] = {
    "f1": (20.0, 130.0),
    "f2": (-5000.0, 5100.0),
    "f3": (20.0, 150.0),
    "f4": (-4000.0, 4000.0),
    "f5": (-200.0, 450.0),
    "f6": (-27000.0, 16000.0),
    "f7": (-50.0, 110.0),
    "f8": (-360.0, 280.0),
    "f9": (-360.0, 270.0),
}

#: Public bound on the norm of an encoded row before the final division: 9 coordinates in [-1, 1].
SHUTTLE_NORM_BOUND: float = math.sqrt(len(SHUTTLE_FEATURES))

#: Public seed of the fixed train/test permutation.
SHUTTLE_SPLIT_SEED: int = 20130616

#: Fraction of the (permuted) rows in the ``"test"`` subset (the last ones).
SHUTTLE_TEST_FRACTION: float = 0.2

# The public bound inflated by 2^-40 (relative) so that rounding can never push a norm above 1.0.
_ROW_DIVISOR = SHUTTLE_NORM_BOUND * (1.0 + 2.0**-40)

SHUTTLE_DESCRIPTION = """\
UCI Statlog (Shuttle) data set, anomaly-detection version
========================================================

Binary classification: is a space-shuttle sensor record anomalous? 49,097 rows, 9 numerical
attributes (f1..f9), 3,511 anomalies (7.2%). This is the version of the ODDS benchmark as shipped by
the PyPI package `river` 0.26.1: the Statlog classes 2, 3, 5, 6, 7 are the anomalies (label 1),
class 1 is normal (label 0), class 4 is removed.

dpcore split (public, fixed): a permutation of the 49,097 rows by
numpy.random.RandomState(20130616); the first 39,278 permuted rows are "train", the last 9,819
are "test"; "all" is train followed by test.

dpcore encoding (public, data-independent): every attribute clipped to its declared range
(SHUTTLE_RANGES: f1 20..130, f2 -5000..5100, f3 20..150, f4 -4000..4000, f5 -200..450,
f6 -27000..16000, f7 -50..110, f8 -360..280, f9 -360..270; every value of the bundled file lies
inside), centred at the midpoint and scaled to [-1, 1], and each row divided by sqrt(9) = 3 so that
||x||_2 <= 1 (data_norm = 1.0). Labels: anomaly -> +1, normal -> -1.

Multi-class version (load_shuttle(..., binary=False)): the 7 Statlog classes on all 58,000 rows (the 49,097
rows above plus the 8,903 rows of class 'High'): Rad.Flow 45,586, High 8,903, Bypass 3,267, Fpv.Open 171,
Fpv.Close 50, Bpv.Open 13, Bpv.Close 10 (heavily imbalanced: report balanced accuracy and macro-F1). Its own
fixed split: a permutation of the 58,000 rows by the same seed, first 46,400 "train", last 11,600 "test". The
class column of the 49,097 rows (shuttle_classes.csv.gz) and the 'High' rows (shuttle_high.csv.gz) were
extracted from data/Shuttle.rda of the R package mlbench 2.1-3 (Debian r-cran-mlbench 2.1-3-1; the same UCI
data) by scripts/make_shuttle_classes.py, which checks that every bundled row has exactly one class there,
that anomaly == (class != Rad.Flow), and that the union is the 58,000 (row, class) pairs of the RDA.

Source: Statlog (Shuttle) [Dataset]. UCI Machine Learning Repository.
https://doi.org/10.24432/C5WS31 (original data: NASA, donated by Jason Catlett).
Licence: Creative Commons Attribution 4.0 International (CC BY 4.0). The file bundled with dpcore
(shuttle.csv.gz) is an unmodified copy of the CSV shipped in the PyPI package `river` 0.26.1.
"""


@functools.lru_cache(maxsize=None)
def _read_file() -> Tuple[np.ndarray, np.ndarray]:
    """Parse the bundled CSV into (values (n, 9) float64, anomaly (n,) int64), in file order."""
    raw = resources.files(__package__).joinpath("data", _FILE).read_bytes()
    text = gzip.decompress(raw).decode("ascii")
    header, _, body = text.partition("\n")
    expected = ",".join(SHUTTLE_FEATURES + (_LABEL,))
    if header.strip() != expected:
        raise ValueError(f"{_FILE}: unexpected header {header.strip()!r} (expected {expected!r})")
    table = np.loadtxt(io.StringIO(body), delimiter=",", dtype=np.int64, ndmin=2)
    if table.shape[1] != len(SHUTTLE_FEATURES) + 1:
        raise ValueError(f"{_FILE}: expected {len(SHUTTLE_FEATURES) + 1} columns, got {table.shape[1]}")
    labels = table[:, -1]
    if not np.isin(labels, (0, 1)).all():
        raise ValueError(f"{_FILE}: the {_LABEL!r} column must be 0 or 1")
    values = table[:, :-1].astype(np.float64)
    values.setflags(write=False)
    labels.setflags(write=False)
    return values, labels


def _rows(subset: str) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    return split_rows(*_read_file(), subset, seed=SHUTTLE_SPLIT_SEED, test_fraction=SHUTTLE_TEST_FRACTION)


def _read_gz_lines(name: str) -> Tuple[str, str]:
    raw = resources.files(__package__).joinpath("data", name).read_bytes()
    header, _, body = gzip.decompress(raw).decode("ascii").partition("\n")
    return header.strip(), body


@functools.lru_cache(maxsize=None)
def _read_multiclass() -> Tuple[np.ndarray, np.ndarray]:
    """The 58,000 Statlog rows: (values (58000, 9) float64, class names (58000,)), the bundled rows first."""
    values, anomaly = _read_file()
    header, body = _read_gz_lines(_CLASS_FILE)
    classes = np.array(body.split(), dtype=object)
    if header != "class" or classes.shape[0] != values.shape[0] or not np.isin(classes, SHUTTLE_CLASSES).all():
        raise ValueError(f"{_CLASS_FILE}: expected one declared class per row of {_FILE}")
    if not np.array_equal(classes != "Rad.Flow", anomaly == 1):
        raise ValueError(f"{_CLASS_FILE}: classes disagree with the anomaly flag of {_FILE}")
    header, body = _read_gz_lines(_HIGH_FILE)
    if header != ",".join(SHUTTLE_FEATURES):
        raise ValueError(f"{_HIGH_FILE}: unexpected header {header!r}")
    high = np.loadtxt(io.StringIO(body), delimiter=",", dtype=np.int64, ndmin=2).astype(np.float64)
    X = np.vstack([values, high])
    y = np.concatenate([classes, np.full(high.shape[0], "High", dtype=object)]).astype(str)
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y


def load_shuttle_raw(subset: str = "train") -> "Bunch":
    """Load the raw Statlog (Shuttle) records (unscaled integers as float64) of one subset.

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        See :func:`load_shuttle` for the fixed split.

    Returns
    -------
    Bunch
        ``data`` (n, 9) float64 raw attribute values; ``target`` (n,) int64 ``anomaly`` column
        (1 = anomaly); ``row_index`` (n,) the row numbers in the bundled file (0-based, header
        excluded); ``feature_names``; ``subset``; ``description``.

    Examples
    --------
    >>> from dpcore.datasets import load_shuttle_raw
    >>> raw = load_shuttle_raw("test")
    >>> raw.data.shape[1] == len(raw.feature_names)
    True
    """
    _check_subset(subset)
    values, labels, idx = _rows(subset)
    return Bunch(
        data=values.copy(),
        target=labels.copy(),
        row_index=idx,
        feature_names=list(SHUTTLE_FEATURES),
        subset=subset,
        description=SHUTTLE_DESCRIPTION,
    )


def encode_shuttle(rows: ArrayLike, *, clip: bool = True) -> np.ndarray:
    """Encode raw Shuttle records into the unit ball with a public, data-independent map.

    Parameters
    ----------
    rows : array-like of shape (n, 9) or (9,)
        Raw attribute values in the order f1..f9.
    clip : bool, default=True
        Clip every value to its declared range (:data:`SHUTTLE_RANGES`); public pre-processing the
        caller opts into. With ``clip=False`` a value outside its declared range raises
        :class:`ValueError`.

    Returns
    -------
    X : ndarray of shape (n, 9), float64
        ``X[:, j] = ((v_j - mid_j) / half_j) / 3`` with ``mid_j``, ``half_j`` the midpoint and
        half-width of the declared range; every coordinate in ``[-1/3, 1/3]`` and
        ``||X[i]||_2 <= 1``, by construction.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore.datasets import encode_shuttle, load_shuttle_raw
    >>> X = encode_shuttle(load_shuttle_raw("test").data[:5])
    >>> X.shape, bool(np.all(np.linalg.norm(X, axis=1) <= 1.0))
    ((5, 9), True)
    """
    try:
        V = np.array(rows, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"rows must be numeric ({exc})") from None
    if V.ndim == 1:
        V = V[None, :]
    if V.ndim != 2 or V.shape[1] != len(SHUTTLE_FEATURES):
        raise ValueError(
            f"rows must have shape (n, {len(SHUTTLE_FEATURES)}) (columns {', '.join(SHUTTLE_FEATURES)}), "
            f"got {np.shape(rows)}"
        )
    bad = ~np.isfinite(V)
    if bad.any():
        i, j = (int(a[0]) for a in np.nonzero(bad))
        raise ValueError(f"rows: column {SHUTTLE_FEATURES[j]!r} has a non-finite value at row {i}")
    low = np.array([SHUTTLE_RANGES[c][0] for c in SHUTTLE_FEATURES])
    high = np.array([SHUTTLE_RANGES[c][1] for c in SHUTTLE_FEATURES])
    outside = (V < low) | (V > high)
    if outside.any():
        if not clip:
            i, j = (int(a[0]) for a in np.nonzero(outside))
            c = SHUTTLE_FEATURES[j]
            raise ValueError(
                f"rows: column {c!r} value {V[i, j]!r} at row {i} lies outside the declared range "
                f"[{low[j]:g}, {high[j]:g}]; pass clip=True to clip to the declared range"
            )
        V = np.clip(V, low, high)
    mid, half = 0.5 * (low + high), 0.5 * (high - low)
    # clip again to absorb the rounding of the affine map: each coordinate lies in [-1, 1] exactly
    X = np.clip((V - mid) / half, -1.0, 1.0)
    X /= _ROW_DIVISOR
    return X


def encode_shuttle_labels(anomaly: ArrayLike) -> np.ndarray:
    """Map the ``anomaly`` column (0/1) to ``{-1.0, +1.0}`` (anomaly = +1).

    Examples
    --------
    >>> from dpcore.datasets import encode_shuttle_labels
    >>> encode_shuttle_labels([0, 1, 0])
    array([-1.,  1., -1.])
    """
    a = np.asarray(anomaly)
    if a.ndim != 1:
        raise ValueError(f"anomaly must be 1-D, got shape {a.shape}")
    ok = (a == 0) | (a == 1)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise ValueError(f"anomaly: labels must be 0 or 1, got {a[i]!r} at position {i}")
    return np.where(a == 1, 1.0, -1.0)


def load_shuttle(subset: str = "train", *, as_frame: bool = False, clip: bool = True,
                 binary: bool = True) -> "Bunch":
    """Load UCI Statlog (Shuttle), encoded into the unit ball with public pre-processing.

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        Fixed public split of the 49,097 rows: a permutation by
        ``numpy.random.RandomState(SHUTTLE_SPLIT_SEED)``; ``"train"`` is the first 39,278
        permuted rows, ``"test"`` the last 9,819 (20%, rounded), ``"all"`` train followed by test.
        Rows are returned in permuted order (so a prefix of ``"train"`` is a uniform sample).
    as_frame : bool, default=False
        Return ``X`` as a :class:`pandas.DataFrame` and ``y`` as a :class:`pandas.Series`
        (requires pandas).
    clip : bool, default=True
        Clip values to the declared ranges :data:`SHUTTLE_RANGES` (public pre-processing, see
        :func:`encode_shuttle`). With ``clip=False`` an out-of-range value raises (the bundled data
        lies inside the declared ranges, so both settings give the same result on it).
    binary : bool, default=True
        ``True``: the anomaly version (49,097 rows, class 'High' removed, anomaly = +1). ``False``: the 7
        Statlog classes on all 58,000 rows (``y`` the class names, ``classes`` = :data:`SHUTTLE_CLASSES`), with
        its own fixed split by the same seed (46,400 train, 11,600 test); provenance in the description.

    Returns
    -------
    Bunch
        ``X`` (n, 9) float64 with ``||x||_2 <= 1`` per row; ``y`` (n,) in ``{-1.0, +1.0}``
        (anomaly = +1), or the class names with ``binary=False`` (then also ``classes``); ``feature_names``; ``data_norm`` = 1.0 (the declared bound on ||x||_2);
        ``norm_bound`` = 3 (the public bound the rows were divided by); ``subset``;
        ``description`` (with licence and attribution).

    Examples
    --------
    >>> from dpcore.datasets import load_shuttle
    >>> data = load_shuttle("train")
    >>> data.X.shape, data.data_norm
    ((39278, 9), 1.0)
    >>> seven = load_shuttle("test", binary=False)
    >>> seven.X.shape, len(seven.classes), sorted(set(seven.y.tolist())) == list(seven.classes)
    ((11600, 9), 7, True)
    """
    _check_subset(subset)
    if not isinstance(binary, (bool, np.bool_)):
        raise TypeError(f"binary must be a bool, got {binary!r}")
    names = list(SHUTTLE_FEATURES)
    if not binary:
        values, classes, _ = split_rows(*_read_multiclass(), subset, seed=SHUTTLE_SPLIT_SEED,
                                        test_fraction=SHUTTLE_TEST_FRACTION)
        X = encode_shuttle(values, clip=clip)
        out = encoded_bunch(X, np.asarray(classes).astype(str), names, label_name="class", as_frame=as_frame,
                            data_norm=1.0, norm_bound=SHUTTLE_NORM_BOUND, subset=subset,
                            description=SHUTTLE_DESCRIPTION)
        out["classes"] = np.array(SHUTTLE_CLASSES)
        return out
    values, labels, _ = _rows(subset)
    X = encode_shuttle(values, clip=clip)
    y = encode_shuttle_labels(labels)
    return encoded_bunch(X, y, names, label_name="anomaly", as_frame=as_frame, data_norm=1.0,
                         norm_bound=SHUTTLE_NORM_BOUND, subset=subset, description=SHUTTLE_DESCRIPTION)

"""UCI Letter Recognition, bundled, binarised (A–M vs N–Z), with public pre-processing into the unit ball.

Every constant here is declared, not estimated from the records when the data is loaded:

* :data:`LETTER_RANGE`: every one of the 16 attributes is an integer in ``[0, 15]`` — this is the
  range given by the UCI documentation of the data set ("scaled to fit into a range of integer
  values from 0 through 15"), a public and data-independent declaration.
* Each value is clipped to the declared range (``clip=True``, the default; ``clip=False`` raises
  instead), centred at 7.5 and divided by 7.5, so it lies in ``[-1, 1]``. Every row is then divided
  by :data:`LETTER_NORM_BOUND` ``= sqrt(16) = 4``, an upper bound on the norm of *any* encoded row,
  so ``||x||_2 <= 1`` by construction (declared domain radius 1.0).
* Labels: the 26 letters are binarised by a public rule, ``A``–``M`` -> −1 and ``N``–``Z`` -> +1
  (10,060 of 20,000 positive, 50.3%, in the bundled file).
* The train/test split is a fixed public permutation (legacy ``numpy.random.RandomState`` with the
  public seed :data:`LETTER_SPLIT_SEED`, whose stream is frozen by NumPy's compatibility policy):
  the first 80% of the permuted rows are ``"train"``, the last 20% are ``"test"``. It depends only
  on the row count and the seed, never on the values. (The UCI documentation's customary split —
  the first 16,000 rows of the file for training — is *not* used: a permutation makes every prefix
  of ``"train"`` a uniform sample, which the experiments rely on.)
"""

from __future__ import annotations

import functools
import gzip
import io
import math
from importlib import resources
from typing import Tuple

import numpy as np

from dpcore.datasets._common import Bunch, check_subset as _check_subset, encoded_bunch, split_rows

__all__ = [
    "load_letter",
    "load_letter_raw",
    "encode_letter",
    "encode_letter_labels",
    "LETTER_FEATURES",
    "LETTER_RANGE",
    "LETTER_NORM_BOUND",
    "LETTER_SPLIT_SEED",
    "LETTER_TEST_FRACTION",
    "LETTER_POSITIVE",
    "LETTER_DESCRIPTION",
]

_FILE = "letter.csv.gz"
_LABEL = "lettr"

#: Attribute names as in the bundled CSV (mlbench's spelling of the UCI names x-box, y-box, ...).
LETTER_FEATURES: Tuple[str, ...] = (
    "x.box", "y.box", "width", "high", "onpix", "x.bar", "y.bar", "x2bar", "y2bar", "xybar",
    "x2ybr", "xy2br", "x.ege", "xegvy", "y.ege", "yegvx",
)

#: Declared range ``(low, high)`` of every attribute (UCI documentation: integers 0 through 15).
LETTER_RANGE: Tuple[float, float] = (0.0, 15.0)

#: Public bound on the norm of an encoded row before the final division: 16 coordinates in [-1, 1].
LETTER_NORM_BOUND: float = math.sqrt(len(LETTER_FEATURES))

#: Public seed of the fixed train/test permutation.
LETTER_SPLIT_SEED: int = 19910301

#: Fraction of the (permuted) rows in the ``"test"`` subset (the last ones).
LETTER_TEST_FRACTION: float = 0.2

#: Letters mapped to the label +1 (the others, A–M, are −1).
LETTER_POSITIVE: Tuple[str, ...] = tuple("NOPQRSTUVWXYZ")

_LETTERS = tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")

# The public bound inflated by 2^-40 (relative) so that rounding can never push a norm above 1.0.
_ROW_DIVISOR = LETTER_NORM_BOUND * (1.0 + 2.0**-40)

LETTER_DESCRIPTION = """\
UCI Letter Recognition data set, binarised (A-M vs N-Z)
=======================================================

Black-and-white rectangular pixel displays of the 26 capital letters in 20 fonts, randomly
distorted; 20,000 rows, 16 integer attributes (statistical moments and edge counts, each scaled by
the donors to an integer 0..15). dpcore binarises the class by a public rule: letters A-M -> -1,
N-Z -> +1 (10,060 positive, 50.3%).

dpcore split (public, fixed): a permutation of the 20,000 rows by
numpy.random.RandomState(19910301); the first 16,000 permuted rows are "train", the last 4,000
are "test"; "all" is train followed by test.

dpcore encoding (public, data-independent): every attribute clipped to the declared range 0..15
(UCI documentation; every value of the bundled file lies inside), centred at 7.5 and scaled to
[-1, 1], and each row divided by sqrt(16) = 4 so that ||x||_2 <= 1 (data_norm = 1.0).

Source: Slate, D. (1991). Letter Recognition [Dataset]. UCI Machine Learning Repository.
https://doi.org/10.24432/C5ZP40 (P. W. Frey & D. J. Slate, "Letter Recognition Using Holland-style
Adaptive Classifiers", Machine Learning 6(2), 1991).
Licence: Creative Commons Attribution 4.0 International (CC BY 4.0). The file bundled with dpcore
(letter.csv.gz) is an unmodified copy of the CSV converted from LetterRecognition.rda of the Debian
package r-cran-mlbench 2.1-3.
"""


@functools.lru_cache(maxsize=None)
def _read_file() -> Tuple[np.ndarray, np.ndarray]:
    """Parse the bundled CSV into (values (n, 16) float64, letters (n,) str), in file order."""
    raw = resources.files(__package__).joinpath("data", _FILE).read_bytes()
    text = gzip.decompress(raw).decode("ascii")
    header, _, body = text.partition("\n")
    expected = ",".join((_LABEL,) + LETTER_FEATURES)
    if header.strip() != expected:
        raise ValueError(f"{_FILE}: unexpected header {header.strip()!r} (expected {expected!r})")
    lines = [ln for ln in body.splitlines() if ln.strip()]
    letters = np.array([ln.split(",", 1)[0].strip().strip('"') for ln in lines])
    if not np.isin(letters, _LETTERS).all():
        bad = letters[~np.isin(letters, _LETTERS)][0]
        raise ValueError(f"{_FILE}: the {_LABEL!r} column must be a capital letter, got {bad!r}")
    values = np.loadtxt(io.StringIO("\n".join(ln.split(",", 1)[1] for ln in lines)), delimiter=",",
                        dtype=np.float64, ndmin=2)
    if values.shape != (len(lines), len(LETTER_FEATURES)):
        raise ValueError(f"{_FILE}: expected {len(LETTER_FEATURES) + 1} columns, got {values.shape[1] + 1}")
    values.setflags(write=False)
    letters.setflags(write=False)
    return values, letters


def _rows(subset: str) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    return split_rows(*_read_file(), subset, seed=LETTER_SPLIT_SEED, test_fraction=LETTER_TEST_FRACTION)


def load_letter_raw(subset: str = "train") -> "Bunch":
    """Load the raw Letter Recognition records (integers 0..15 as float64) of one subset.

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        See :func:`load_letter` for the fixed split.

    Returns
    -------
    Bunch
        ``data`` (n, 16) float64 raw attribute values; ``target`` (n,) the letters ``'A'``..``'Z'``;
        ``row_index`` (n,) the row numbers in the bundled file (0-based, header excluded);
        ``feature_names``; ``subset``; ``description``.
    """
    _check_subset(subset)
    values, letters, idx = _rows(subset)
    return Bunch(
        data=values.copy(),
        target=letters.copy(),
        row_index=idx,
        feature_names=list(LETTER_FEATURES),
        subset=subset,
        description=LETTER_DESCRIPTION,
    )


def encode_letter(rows, *, clip: bool = True) -> np.ndarray:
    """Encode raw Letter records into the unit ball with a public, data-independent map.

    Parameters
    ----------
    rows : array-like of shape (n, 16) or (16,)
        Raw attribute values in the order of :data:`LETTER_FEATURES`.
    clip : bool, default=True
        Clip every value to the declared range ``[0, 15]`` (:data:`LETTER_RANGE`); public
        pre-processing the caller opts into. With ``clip=False`` a value outside it raises
        :class:`ValueError`.

    Returns
    -------
    X : ndarray of shape (n, 16), float64
        ``X[:, j] = ((v_j - 7.5) / 7.5) / 4``; every coordinate in ``[-1/4, 1/4]`` and
        ``||X[i]||_2 <= 1``, by construction.
    """
    try:
        V = np.array(rows, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"rows must be numeric ({exc})") from None
    if V.ndim == 1:
        V = V[None, :]
    if V.ndim != 2 or V.shape[1] != len(LETTER_FEATURES):
        raise ValueError(
            f"rows must have shape (n, {len(LETTER_FEATURES)}) (columns {', '.join(LETTER_FEATURES)}), "
            f"got {np.shape(rows)}"
        )
    bad = ~np.isfinite(V)
    if bad.any():
        i, j = (int(a[0]) for a in np.nonzero(bad))
        raise ValueError(f"rows: column {LETTER_FEATURES[j]!r} has a non-finite value at row {i}")
    low, high = LETTER_RANGE
    outside = (V < low) | (V > high)
    if outside.any():
        if not clip:
            i, j = (int(a[0]) for a in np.nonzero(outside))
            raise ValueError(
                f"rows: column {LETTER_FEATURES[j]!r} value {V[i, j]!r} at row {i} lies outside the "
                f"declared range [{low:g}, {high:g}]; pass clip=True to clip to the declared range"
            )
        V = np.clip(V, low, high)
    mid, half = 0.5 * (low + high), 0.5 * (high - low)
    X = np.clip((V - mid) / half, -1.0, 1.0)
    X /= _ROW_DIVISOR
    return X


def encode_letter_labels(letters) -> np.ndarray:
    """Map letters to ``{-1.0, +1.0}``: ``'A'``..``'M'`` -> −1, ``'N'``..``'Z'`` -> +1."""
    a = np.asarray(letters)
    if a.ndim != 1:
        raise ValueError(f"letters must be 1-D, got shape {a.shape}")
    s = np.array([str(v).strip() for v in a.tolist()], dtype=object)
    ok = np.isin(s, _LETTERS)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise ValueError(f"letters: labels must be capital letters 'A'..'Z', got {a[i]!r} at position {i}")
    return np.where(np.isin(s, LETTER_POSITIVE), 1.0, -1.0)


def load_letter(subset: str = "train", *, as_frame: bool = False, clip: bool = True, binary: bool = True) -> "Bunch":
    """Load UCI Letter Recognition, binarised A–M (−1) vs N–Z (+1) (or its 26 letters), encoded into the unit ball.

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        Fixed public split of the 20,000 rows: a permutation by
        ``numpy.random.RandomState(LETTER_SPLIT_SEED)``; ``"train"`` is the first 16,000 permuted
        rows, ``"test"`` the last 4,000, ``"all"`` train followed by test. Rows are returned in
        permuted order (so a prefix of ``"train"`` is a uniform sample).
    as_frame : bool, default=False
        Return ``X`` as a :class:`pandas.DataFrame` and ``y`` as a :class:`pandas.Series`
        (requires pandas).
    clip : bool, default=True
        Clip values to the declared range ``[0, 15]`` (public pre-processing, see
        :func:`encode_letter`). With ``clip=False`` an out-of-range value raises (the bundled data
        lies inside the declared range, so both settings give the same result on it).
    binary : bool, default=True
        ``True``: the binarised labels of the existing experiments. ``False`` (issue 24): the original
        26 classes, ``y`` the letters ``'A'``..``'Z'`` (declare ``classes=LETTER_CLASSES`` /
        ``list(string.ascii_uppercase)``); ``classes`` in the bunch lists them.

    Returns
    -------
    Bunch
        ``X`` (n, 16) float64 with ``||x||_2 <= 1`` per row; ``y`` (n,) in ``{-1.0, +1.0}``
        (N–Z = +1), or the letters with ``binary=False``; ``feature_names``; ``data_norm`` = 1.0 (the declared bound on ||x||_2);
        ``norm_bound`` = 4 (the public bound the rows were divided by); ``subset``;
        ``description`` (with licence and attribution).

    Examples
    --------
    >>> from dpcore.datasets import load_letter
    >>> data = load_letter("train")
    >>> data.X.shape, data.data_norm
    ((16000, 16), 1.0)
    >>> letters = load_letter("test", binary=False)
    >>> letters.y[:3].tolist(), len(letters.classes)
    (['J', 'F', 'W'], 26)
    """
    _check_subset(subset)
    if not isinstance(binary, (bool, np.bool_)):
        raise TypeError(f"binary must be a bool, got {binary!r}")
    values, letters, _ = _rows(subset)
    X = encode_letter(values, clip=clip)
    names = list(LETTER_FEATURES)
    if binary:
        y = encode_letter_labels(letters)
        label_name = "letter_N_to_Z"
    else:
        y = np.asarray(letters).astype(str)
        label_name = "letter"
    out = encoded_bunch(X, y, names, label_name=label_name, as_frame=as_frame, data_norm=1.0,
                        norm_bound=LETTER_NORM_BOUND, subset=subset, description=LETTER_DESCRIPTION)
    if not binary:
        out["classes"] = np.array(LETTER_CLASSES)
    return out


#: The 26 declared classes of :func:`load_letter` with ``binary=False``.
LETTER_CLASSES = tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")

"""Tests of dpcore.datasets.load_letter: bundled UCI Letter Recognition, binarised A–M vs N–Z."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from importlib import resources

import numpy as np
import pytest

from dpcore import datasets
from dpcore.datasets import load_letter
from dpcore.datasets._letter import (
    LETTER_FEATURES,
    LETTER_NORM_BOUND,
    LETTER_RANGE,
    LETTER_SPLIT_SEED,
    encode_letter,
    encode_letter_labels,
    load_letter_raw,
)

N, N_TEST, N_POS = 20_000, 4_000, 10_060  # N_POS: letters N..Z in the bundled file


@pytest.fixture(scope="module")
def letter_all():
    return load_letter("all")


def test_exported():
    assert "load_letter" in datasets.__all__ and datasets.load_letter is load_letter


def test_shapes_and_split(letter_all):
    tr, te = load_letter("train"), load_letter("test")
    assert tr.X.shape == (N - N_TEST, 16) and te.X.shape == (N_TEST, 16)
    assert tr.y.shape == (N - N_TEST,) and te.y.shape == (N_TEST,)
    assert letter_all.X.shape == (N, 16)
    np.testing.assert_array_equal(letter_all.X, np.vstack([tr.X, te.X]))
    np.testing.assert_array_equal(letter_all.y, np.concatenate([tr.y, te.y]))
    assert tr.feature_names == list(LETTER_FEATURES) and len(LETTER_FEATURES) == 16
    assert tr.X.dtype == np.float64 and tr.y.dtype == np.float64 and tr.subset == "train"
    # the split partitions the file's rows and is fixed by the public seed alone
    rtr, rte = load_letter_raw("train"), load_letter_raw("test")
    rows = np.concatenate([rtr.row_index, rte.row_index])
    np.testing.assert_array_equal(np.sort(rows), np.arange(N))
    np.testing.assert_array_equal(rows, np.random.RandomState(LETTER_SPLIT_SEED).permutation(N))
    # the first record of the file (UCI: "T,2,8,3,5,1,8,13,0,6,6,10,8,0,8,0,8") and where it went
    al = load_letter_raw("all")
    j = int(np.flatnonzero(al.row_index == 0)[0])
    np.testing.assert_array_equal(al.data[j], [2, 8, 3, 5, 1, 8, 13, 0, 6, 6, 10, 8, 0, 8, 0, 8])
    assert al.target[j] == "T" and letter_all.y[j] == 1.0


def test_ranges_norms_and_scaling(letter_all):
    X = letter_all.X
    assert np.all(np.isfinite(X)) and letter_all.data_norm == 1.0
    assert LETTER_NORM_BOUND == 4.0 and letter_all.norm_bound == 4.0
    assert np.linalg.norm(X, axis=1).max() <= 1.0
    assert np.abs(X).max() <= 0.25
    raw = load_letter_raw("all").data
    lo, hi = LETTER_RANGE
    assert (lo, hi) == (0.0, 15.0)
    assert raw.min() >= lo and raw.max() <= hi and np.all(raw == np.round(raw))  # integers 0..15
    np.testing.assert_allclose(X, (raw - 7.5) / 7.5 / 4.0, rtol=1e-12, atol=1e-15)
    # declared corners: midpoint -> 0, endpoints -> +-1/4, worst-case row -> norm <= 1
    np.testing.assert_array_equal(encode_letter(np.full(16, 7.5)), np.zeros((1, 16)))
    for v in (lo, hi):
        x = encode_letter(np.full(16, v))[0]
        assert np.allclose(np.abs(x), 0.25) and 1.0 - 1e-9 < np.linalg.norm(x) <= 1.0


def test_labels_and_class_balance(letter_all):
    y = letter_all.y
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert int((y > 0).sum()) == N_POS
    raw = load_letter_raw("all")
    np.testing.assert_array_equal(encode_letter_labels(raw.target), y)
    expected = np.where(np.array([c >= "N" for c in raw.target]), 1.0, -1.0)
    np.testing.assert_array_equal(y, expected)
    for subset in ("train", "test"):
        assert 0.48 < (load_letter(subset).y > 0).mean() < 0.52  # balanced in both subsets
    np.testing.assert_array_equal(encode_letter_labels(["A", "M", "N", "Z"]), [-1.0, -1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="letters"):
        encode_letter_labels(["A", "a"])


def test_split_deterministic_and_returns_copies():
    a, b = load_letter("train"), load_letter("train")
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    a.X[:] = 0.0
    a.y[:] = 0.0
    load_letter_raw("train").data[:] = 0.0
    c = load_letter("train")
    np.testing.assert_array_equal(c.X, b.X)
    np.testing.assert_array_equal(c.y, b.y)
    # the same in a fresh interpreter, whatever the global numpy random state
    code = ("import numpy as np; np.random.seed(7); from dpcore.datasets import load_letter; "
            "d = load_letter('test'); print(repr(float(d.X.sum())), int((d.y > 0).sum()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    te = load_letter("test")
    assert out.stdout.split() == [repr(float(te.X.sum())), str(int((te.y > 0).sum()))]


def test_encoding_is_row_wise(letter_all):
    raw = load_letter_raw("all").data
    for i in np.random.default_rng(0).choice(raw.shape[0], 20, replace=False):
        np.testing.assert_array_equal(encode_letter(raw[i]), letter_all.X[i:i + 1])


def test_clipping():
    row = np.full(16, 7.5)
    row[3] = 40.0
    clipped = row.copy()
    clipped[3] = 15.0
    np.testing.assert_array_equal(encode_letter(row), encode_letter(clipped))
    with pytest.raises(ValueError, match="'high'.*declared range"):
        encode_letter(row, clip=False)
    np.testing.assert_array_equal(load_letter("test", clip=False).X, load_letter("test").X)


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="subset"):
        load_letter("validation")
    with pytest.raises(ValueError, match="rows"):
        encode_letter(np.zeros((2, 15)))
    bad = np.zeros(16)
    bad[0] = np.inf
    with pytest.raises(ValueError, match="'x.box'.*non-finite"):
        encode_letter(bad)


def test_description_mentions_licence_and_source():
    d = load_letter("test")
    for needle in ("CC BY 4.0", "Creative Commons Attribution 4.0", "10.24432/C5ZP40", "Letter Recognition",
                   "UCI Machine Learning Repository", "mlbench", "A-M", "N-Z"):
        assert needle in d.description


def test_as_frame():
    pd = pytest.importorskip("pandas", reason="as_frame=True needs pandas")
    d = load_letter("test", as_frame=True)
    assert isinstance(d.X, pd.DataFrame) and isinstance(d.y, pd.Series)
    assert list(d.X.columns) == list(LETTER_FEATURES)
    np.testing.assert_array_equal(d.X.to_numpy(), load_letter("test").X)


def test_package_data(tmp_path):
    import dpcore

    pkg_dir = os.path.dirname(os.path.realpath(dpcore.__file__))
    res = resources.files("dpcore.datasets").joinpath("data", "letter.csv.gz")
    assert res.is_file() and os.path.realpath(str(res)).startswith(pkg_dir)
    code = "from dpcore.datasets import load_letter; print(load_letter('all').X.shape[0])"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(N)


def test_bundled_letter_is_unmodified_copy(shared_datasets_dir):
    bundled = resources.files("dpcore.datasets").joinpath("data", "letter.csv.gz").read_bytes()
    shared = (shared_datasets_dir / "letter.csv.gz").read_bytes()
    assert hashlib.sha256(bundled).hexdigest() == hashlib.sha256(shared).hexdigest()

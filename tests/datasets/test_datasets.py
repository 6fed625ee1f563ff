"""Tests of dpcore.datasets: bundled UCI Adult and its public, data-independent encoding."""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
import sys
from importlib import resources

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore import datasets
from dpcore.datasets import (
    ADULT_CATEGORIES,
    ADULT_NORM_BOUND,
    ADULT_NUMERIC_RANGES,
    adult_feature_names,
    encode_adult,
    encode_adult_labels,
    load_adult,
    load_adult_raw,
)

N_TRAIN, N_TEST = 32_561, 16_281
POS_TRAIN, POS_TEST = 7_841, 3_846  # '>50K' counts in adult.data / adult.test
N_NUMERIC = len(ADULT_NUMERIC_RANGES)
N_CATEGORICAL = len(ADULT_CATEGORIES)
D_INDICATOR = N_NUMERIC + sum(len(c) for c in ADULT_CATEGORIES.values()) + N_CATEGORICAL


@pytest.fixture(scope="module")
def adult_all():
    return load_adult("all")


@pytest.fixture(scope="module")
def raw_all():
    return load_adult_raw("all")


def test_row_counts_and_shapes():
    tr, te, al = load_adult("train"), load_adult("test"), load_adult("all")
    assert tr.X.shape == (N_TRAIN, D_INDICATOR) == (N_TRAIN, 113)
    assert te.X.shape == (N_TEST, 113)
    assert al.X.shape == (N_TRAIN + N_TEST, 113)
    assert tr.y.shape == (N_TRAIN,) and te.y.shape == (N_TEST,)
    np.testing.assert_array_equal(al.X, np.vstack([tr.X, te.X]))
    assert len(tr.feature_names) == tr.X.shape[1] and len(set(tr.feature_names)) == tr.X.shape[1]
    assert tr.X.dtype == np.float64 and tr.y.dtype == np.float64


def test_every_row_in_unit_ball(adult_all):
    X = adult_all.X
    assert np.all(np.isfinite(X))
    norms = np.linalg.norm(X, axis=1)
    assert norms.max() <= 1.0
    assert adult_all.data_norm == 1.0
    # the public bound is sqrt(#numeric + #categorical) = sqrt(14), not a data-derived maximum
    assert adult_all.norm_bound == pytest.approx(math.sqrt(14))
    assert norms.max() < 0.95  # real rows do not reach the worst case: the bound is not data-fitted
    # numeric block in [0, 1/sqrt(14)], one-hot entries exactly 0 or 1/sqrt(14) (up to the tiny
    # safety factor of the divisor)
    scaled = X * ADULT_NORM_BOUND
    assert scaled.min() >= 0.0 and scaled.max() <= 1.0
    onehot = scaled[:, N_NUMERIC:]
    assert np.all((onehot == 0.0) | (np.abs(onehot - 1.0) < 1e-9))
    # with missing="indicator" each categorical block has exactly one active column
    assert np.all(np.abs(onehot.sum(axis=1) - N_CATEGORICAL) < 1e-8)


def test_labels():
    tr, te = load_adult("train"), load_adult("test")
    assert set(np.unique(tr.y)) == {-1.0, 1.0} and set(np.unique(te.y)) == {-1.0, 1.0}
    assert int((tr.y > 0).sum()) == POS_TRAIN and int((te.y > 0).sum()) == POS_TEST
    assert 0.23 < (tr.y > 0).mean() < 0.25  # ~24% positive (>50K)
    raw = load_adult_raw("test")
    assert set(raw.target) == {">50K", "<=50K"}  # trailing '.' of adult.test removed
    np.testing.assert_array_equal(encode_adult_labels(raw.target), te.y)


def test_raw_rows():
    tr, te = load_adult_raw("train"), load_adult_raw("test")
    assert tr.data.shape == (N_TRAIN, 14) and te.data.shape == (N_TEST, 14)
    assert list(tr.data[0]) == ["39", "State-gov", "77516", "Bachelors", "13", "Never-married",
                                "Adm-clerical", "Not-in-family", "White", "Male", "2174", "0", "40",
                                "United-States"]
    # the junk first line of adult.test ("|1x3 Cross validator") is skipped
    assert list(te.data[0][:4]) == ["25", "Private", "226802", "11th"] and te.target[0] == "<=50K"
    assert tr.feature_names[0] == "age" and tr.feature_names[-1] == "native-country"
    n_missing = sum(int((tr.data[:, j] == "?").sum()) for j in range(14))
    assert n_missing == 1836 + 1843 + 583  # workclass, occupation, native-country


def test_deterministic_and_returns_copies():
    a, b = load_adult("train"), load_adult("train")
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    a.X[:] = 0.0
    a.y[:] = 0.0
    c = load_adult("train")
    np.testing.assert_array_equal(c.X, b.X)
    np.testing.assert_array_equal(c.y, b.y)


def test_encoding_is_row_wise_and_data_independent(adult_all, raw_all):
    rng = np.random.default_rng(0)
    has_missing = np.flatnonzero((raw_all.data == "?").any(axis=1))
    rows = np.concatenate([rng.choice(raw_all.data.shape[0], 40, replace=False), has_missing[:10]])
    for i in rows:
        alone = encode_adult(raw_all.data[i])  # one record on its own
        np.testing.assert_array_equal(alone, adult_all.X[i:i + 1])
        as_list = encode_adult([list(raw_all.data[i])])
        np.testing.assert_array_equal(as_list, adult_all.X[i:i + 1])
    # a subset encodes to the corresponding rows of the full encoding
    np.testing.assert_array_equal(encode_adult(raw_all.data[rows]), adult_all.X[rows])


def test_missing_values():
    raw = load_adult_raw("train")
    i = int(np.flatnonzero(raw.data[:, 1] == "?")[0])  # workclass missing
    names = adult_feature_names()
    x = encode_adult(raw.data[i])[0]
    assert x[names.index("workclass=?")] > 0
    assert all(x[names.index(f"workclass={c}")] == 0 for c in ADULT_CATEGORIES["workclass"])
    z = load_adult("train", missing="zero")
    names_z = adult_feature_names("zero")
    assert z.X.shape == (N_TRAIN, 105) and z.feature_names == names_z
    assert np.linalg.norm(z.X, axis=1).max() <= 1.0
    block = [names_z.index(f"workclass={c}") for c in ADULT_CATEGORIES["workclass"]]
    assert np.all(z.X[i, block] == 0.0)


def test_declared_ranges_and_clipping():
    base = ["39", "State-gov", "77516", "Bachelors", "13", "Never-married", "Adm-clerical",
            "Not-in-family", "White", "Male", "2174", "0", "40", "United-States"]
    names = adult_feature_names()
    old = list(base)
    old[0] = "120"  # above the declared age range 17-90
    np.testing.assert_array_equal(encode_adult([old]), encode_adult([base[:0] + ["90"] + base[1:]]))
    assert encode_adult([old])[0, names.index("age")] * ADULT_NORM_BOUND == pytest.approx(1.0)
    with pytest.raises(ValueError, match="'age'.*declared range"):
        encode_adult([old], clip=False)
    low = list(base)
    low[11] = "-5"  # capital-loss below 0
    with pytest.raises(ValueError, match="capital-loss"):
        encode_adult([low], clip=False)
    # worst case of the declared domain: every numeric at its maximum -> norm exactly at the bound
    top = list(base)
    for col, (lo, hi, _) in ADULT_NUMERIC_RANGES.items():
        top[datasets._schema.FEATURE_COLUMNS.index(col)] = str(hi)
    x = encode_adult([top])[0]
    assert np.linalg.norm(x) <= 1.0 and np.linalg.norm(x) > 1.0 - 1e-9
    assert load_adult("train", clip=False).X.shape == (N_TRAIN, 113)  # real data is in range


def test_bad_input_is_rejected_with_named_parameter():
    base = ["39", "State-gov", "77516", "Bachelors", "13", "Never-married", "Adm-clerical",
            "Not-in-family", "White", "Male", "2174", "0", "40", "United-States"]
    bad = list(base)
    bad[8] = "Martian"
    with pytest.raises(ValueError, match="'race'.*Martian"):
        encode_adult([bad])
    with pytest.raises(ValueError, match="rows"):
        encode_adult([base[:13]])
    nan = list(base)
    nan[0] = "nan"
    with pytest.raises(ValueError, match="'age'.*non-finite"):
        encode_adult([nan])
    with pytest.raises(ValueError, match="subset"):
        load_adult("validation")
    with pytest.raises(ValueError, match="missing"):
        load_adult("train", missing="drop")
    with pytest.raises(ValueError, match="labels"):
        encode_adult_labels([">50K", "rich"])


_numeric = [st.integers(int(lo) - 50, int(hi) + 50) for lo, hi, _ in ADULT_NUMERIC_RANGES.values()]


@st.composite
def _records(draw):
    rec = []
    num = iter(_numeric)
    cats = dict(ADULT_CATEGORIES)
    for col in datasets._schema.FEATURE_COLUMNS:
        if col in cats:
            rec.append(draw(st.sampled_from(cats[col] + ("?",))))
        else:
            rec.append(str(draw(next(num))))  # may lie outside the declared range: clipped
    return rec


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(_records(), min_size=1, max_size=8))
def test_property_any_declared_record_lands_in_unit_ball(records):
    X = encode_adult(records)
    assert X.shape == (len(records), 113)
    assert np.all(np.linalg.norm(X, axis=1) <= 1.0)
    for i, r in enumerate(records):  # batch encoding == row-by-row encoding
        np.testing.assert_array_equal(encode_adult([r])[0], X[i])


def test_description_and_attribution():
    d = load_adult("test")
    for needle in ("CC BY 4.0", "10.24432/C5XW20", "Becker", "Kohavi", "UCI Machine Learning Repository"):
        assert needle in d.description
    assert d.subset == "test"


def test_as_frame():
    pd = pytest.importorskip("pandas", reason="as_frame=True needs pandas (in requirements-dev.txt)")
    d = load_adult("test", as_frame=True)
    assert isinstance(d.X, pd.DataFrame) and isinstance(d.y, pd.Series)
    assert list(d.X.columns) == d.feature_names and d.X.shape == (N_TEST, 113)
    np.testing.assert_array_equal(d.X.to_numpy(), load_adult("test").X)


def test_package_data_ships_with_the_package(tmp_path):
    """The data is read from the installed package (importlib.resources), not from ../shared."""
    import dpcore

    pkg_dir = os.path.dirname(os.path.realpath(dpcore.__file__))
    for name in ("adult.data.gz", "adult.test.gz"):
        res = resources.files("dpcore.datasets").joinpath("data", name)
        assert res.is_file()
        assert os.path.realpath(str(res)).startswith(pkg_dir)
        assert "shared" not in os.path.relpath(os.path.realpath(str(res)), pkg_dir)
    # a fresh interpreter in an unrelated directory finds the data too
    code = ("from dpcore.datasets import load_adult; d = load_adult('test'); "
            "print(d.X.shape[0])")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == str(N_TEST)


def test_bundled_files_are_unmodified_copies(shared_datasets_dir):
    for name in ("adult.data.gz", "adult.test.gz"):
        bundled = resources.files("dpcore.datasets").joinpath("data", name).read_bytes()
        shared = (shared_datasets_dir / name).read_bytes()
        assert hashlib.sha256(bundled).hexdigest() == hashlib.sha256(shared).hexdigest()


# ------------------------------------------------------------------------------------------------
# UCI Statlog (Shuttle): bundled copy, declared ranges, fixed public split
# ------------------------------------------------------------------------------------------------

from dpcore.datasets import (  # noqa: E402
    SHUTTLE_FEATURES,
    SHUTTLE_NORM_BOUND,
    SHUTTLE_RANGES,
    SHUTTLE_SPLIT_SEED,
    encode_shuttle,
    encode_shuttle_labels,
    load_shuttle,
    load_shuttle_raw,
)

SHUTTLE_N, SHUTTLE_POS = 49_097, 3_511
SHUTTLE_N_TEST = 9_819  # round(0.2 * 49,097)


@pytest.fixture(scope="module")
def shuttle_all():
    return load_shuttle("all")


def test_shuttle_shapes_and_split(shuttle_all):
    tr, te = load_shuttle("train"), load_shuttle("test")
    assert tr.X.shape == (SHUTTLE_N - SHUTTLE_N_TEST, 9) and te.X.shape == (SHUTTLE_N_TEST, 9)
    assert tr.y.shape == (SHUTTLE_N - SHUTTLE_N_TEST,) and te.y.shape == (SHUTTLE_N_TEST,)
    assert shuttle_all.X.shape == (SHUTTLE_N, 9)
    np.testing.assert_array_equal(shuttle_all.X, np.vstack([tr.X, te.X]))
    np.testing.assert_array_equal(shuttle_all.y, np.concatenate([tr.y, te.y]))
    assert tr.feature_names == list(SHUTTLE_FEATURES) == [f"f{j}" for j in range(1, 10)]
    assert tr.X.dtype == np.float64 and tr.y.dtype == np.float64 and tr.subset == "train"
    # the split is a partition of the file's rows, fixed by the public seed alone
    rtr, rte = load_shuttle_raw("train"), load_shuttle_raw("test")
    rows = np.concatenate([rtr.row_index, rte.row_index])
    np.testing.assert_array_equal(np.sort(rows), np.arange(SHUTTLE_N))
    np.testing.assert_array_equal(rows, np.random.RandomState(SHUTTLE_SPLIT_SEED).permutation(SHUTTLE_N))
    # the first rows of the bundled file, and where they went
    first = np.array([50, 21, 77, 0, 28, 0, 27, 48, 22], dtype=np.float64)
    al = load_shuttle_raw("all")
    j = int(np.flatnonzero(al.row_index == 0)[0])
    np.testing.assert_array_equal(al.data[j], first)
    assert al.target[j] == 1


def test_shuttle_rows_in_unit_ball_and_centred_scaling(shuttle_all):
    X = shuttle_all.X
    assert np.all(np.isfinite(X)) and shuttle_all.data_norm == 1.0
    assert np.linalg.norm(X, axis=1).max() <= 1.0
    assert SHUTTLE_NORM_BOUND == 3.0 and shuttle_all.norm_bound == 3.0
    assert np.abs(X).max() <= 1.0 / 3.0
    raw = load_shuttle_raw("all").data
    for j, name in enumerate(SHUTTLE_FEATURES):
        lo, hi = SHUTTLE_RANGES[name]
        assert lo < hi
        # every published value lies in its declared range (nothing is clipped on the bundled data)
        assert raw[:, j].min() >= lo and raw[:, j].max() <= hi
        expected = (raw[:, j] - 0.5 * (lo + hi)) / (0.5 * (hi - lo)) / 3.0
        np.testing.assert_allclose(X[:, j], expected, rtol=1e-12, atol=1e-15)
    # the declared corners: midpoint -> 0, endpoints -> +-1/3, worst-case row -> norm <= 1
    lo = np.array([SHUTTLE_RANGES[c][0] for c in SHUTTLE_FEATURES])
    hi = np.array([SHUTTLE_RANGES[c][1] for c in SHUTTLE_FEATURES])
    np.testing.assert_array_equal(encode_shuttle(0.5 * (lo + hi)), np.zeros((1, 9)))
    for corner in (lo, hi):
        x = encode_shuttle(corner)[0]
        assert np.allclose(np.abs(x), 1.0 / 3.0) and 1.0 - 1e-9 < np.linalg.norm(x) <= 1.0


def test_shuttle_labels(shuttle_all):
    assert set(np.unique(shuttle_all.y)) == {-1.0, 1.0}
    assert int((shuttle_all.y > 0).sum()) == SHUTTLE_POS  # anomaly = +1 (7.2%)
    raw = load_shuttle_raw("all")
    np.testing.assert_array_equal(encode_shuttle_labels(raw.target), shuttle_all.y)
    for subset in ("train", "test"):
        assert 0.06 < (load_shuttle(subset).y > 0).mean() < 0.08
    with pytest.raises(ValueError, match="anomaly"):
        encode_shuttle_labels([0, 1, 2])


def test_shuttle_deterministic_and_returns_copies():
    a, b = load_shuttle("train"), load_shuttle("train")
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    a.X[:] = 0.0
    a.y[:] = 0.0
    load_shuttle_raw("train").data[:] = 0.0
    c = load_shuttle("train")
    np.testing.assert_array_equal(c.X, b.X)
    np.testing.assert_array_equal(c.y, b.y)
    # the same in a fresh interpreter (the split does not depend on any global random state)
    code = ("import numpy as np; np.random.seed(1); from dpcore.datasets import load_shuttle; "
            "d = load_shuttle('test'); print(repr(float(d.X.sum())), int((d.y > 0).sum()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    te = load_shuttle("test")
    assert out.stdout.split() == [repr(float(te.X.sum())), str(int((te.y > 0).sum()))]


def test_shuttle_encoding_is_row_wise(shuttle_all):
    raw = load_shuttle_raw("all").data
    rng = np.random.default_rng(0)
    for i in rng.choice(raw.shape[0], 30, replace=False):
        np.testing.assert_array_equal(encode_shuttle(raw[i]), shuttle_all.X[i:i + 1])
        np.testing.assert_array_equal(encode_shuttle([list(raw[i])]), shuttle_all.X[i:i + 1])


def test_shuttle_clipping():
    lo = np.array([SHUTTLE_RANGES[c][0] for c in SHUTTLE_FEATURES])
    hi = np.array([SHUTTLE_RANGES[c][1] for c in SHUTTLE_FEATURES])
    mid = 0.5 * (lo + hi)
    row = mid.copy()
    row[5] = 1e6  # f6 far above its declared range
    clipped = mid.copy()
    clipped[5] = hi[5]
    x = encode_shuttle(row)
    np.testing.assert_array_equal(x, encode_shuttle(clipped))  # clip=True is the default
    assert x[0, 5] == pytest.approx(1.0 / 3.0) and np.linalg.norm(x) <= 1.0
    with pytest.raises(ValueError, match="'f6'.*declared range"):
        encode_shuttle(row, clip=False)
    low = mid.copy()
    low[0] = lo[0] - 1.0  # f1 just below its range
    with pytest.raises(ValueError, match="'f1'"):
        encode_shuttle(low, clip=False)
    assert encode_shuttle(low)[0, 0] == pytest.approx(-1.0 / 3.0)
    # the bundled data lies inside the declared ranges: clip=False loads it unchanged
    np.testing.assert_array_equal(load_shuttle("test", clip=False).X, load_shuttle("test").X)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.lists(st.integers(-10**6, 10**6), min_size=9, max_size=9), min_size=1, max_size=8))
def test_property_any_shuttle_record_lands_in_unit_ball(records):
    X = encode_shuttle(records)
    assert X.shape == (len(records), 9)
    assert np.all(np.linalg.norm(X, axis=1) <= 1.0) and np.abs(X).max() <= 1.0 / 3.0
    for i, r in enumerate(records):
        np.testing.assert_array_equal(encode_shuttle(r)[0], X[i])


def test_shuttle_bad_input_is_rejected_with_named_parameter():
    with pytest.raises(ValueError, match="subset"):
        load_shuttle("validation")
    with pytest.raises(ValueError, match="rows"):
        encode_shuttle(np.zeros((2, 8)))
    bad = np.zeros(9)
    bad[2] = np.nan
    with pytest.raises(ValueError, match="'f3'.*non-finite"):
        encode_shuttle(bad)
    with pytest.raises(ValueError, match="rows"):
        encode_shuttle([["a"] * 9])


def test_shuttle_description_attribution_and_package_data(tmp_path):
    d = load_shuttle("test")
    for needle in ("CC BY 4.0", "10.24432/C5WS31", "Statlog (Shuttle)", "UCI Machine Learning Repository",
                   "river"):
        assert needle in d.description
    assert "10.24432/C5WS31" in datasets.__doc__
    import dpcore

    pkg_dir = os.path.dirname(os.path.realpath(dpcore.__file__))
    res = resources.files("dpcore.datasets").joinpath("data", "shuttle.csv.gz")
    assert res.is_file() and os.path.realpath(str(res)).startswith(pkg_dir)
    code = "from dpcore.datasets import load_shuttle; print(load_shuttle('all').X.shape[0])"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == str(SHUTTLE_N)


def test_shuttle_as_frame():
    pd = pytest.importorskip("pandas", reason="as_frame=True needs pandas (in requirements-dev.txt)")
    d = load_shuttle("test", as_frame=True)
    assert isinstance(d.X, pd.DataFrame) and isinstance(d.y, pd.Series)
    assert list(d.X.columns) == list(SHUTTLE_FEATURES)
    np.testing.assert_array_equal(d.X.to_numpy(), load_shuttle("test").X)


def test_bundled_shuttle_is_unmodified_copy(shared_datasets_dir):
    bundled = resources.files("dpcore.datasets").joinpath("data", "shuttle.csv.gz").read_bytes()
    shared = (shared_datasets_dir / "shuttle.csv.gz").read_bytes()
    assert hashlib.sha256(bundled).hexdigest() == hashlib.sha256(shared).hexdigest()

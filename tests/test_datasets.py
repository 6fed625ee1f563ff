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
    assert adult_all.radius == 1.0
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

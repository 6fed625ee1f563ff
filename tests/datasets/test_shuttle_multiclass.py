"""Shuttle-7 (issue 24): the 7 Statlog classes on all 58,000 rows, consistent with the bundled anomaly version."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from dpcore.datasets import SHUTTLE_CLASSES, load_shuttle, load_shuttle_raw
from dpcore.datasets._shuttle import _read_file, _read_multiclass

STATLOG_COUNTS = {"Rad.Flow": 45586, "High": 8903, "Bypass": 3267, "Fpv.Open": 171, "Fpv.Close": 50,
                  "Bpv.Open": 13, "Bpv.Close": 10}  # UCI Statlog (Shuttle): 58,000 rows (43,500 + 14,500)


def test_seven_classes_with_the_statlog_counts():
    X, y = _read_multiclass()
    assert X.shape == (58000, 9)
    assert dict(collections.Counter(y.tolist())) == STATLOG_COUNTS
    assert tuple(sorted(STATLOG_COUNTS)) == SHUTTLE_CLASSES


def test_consistent_with_the_bundled_anomaly_version():
    X, y = _read_multiclass()
    values, anomaly = _read_file()
    n = values.shape[0]
    np.testing.assert_array_equal(X[:n], values)            # the bundled rows first, in file order
    np.testing.assert_array_equal(y[:n] != "Rad.Flow", anomaly == 1)
    assert not np.any(y[:n] == "High") and np.all(y[n:] == "High")  # ODDS removed Statlog class 4


def test_load_shuttle_multiclass_split_and_encoding():
    tr, te, al = (load_shuttle(s, binary=False) for s in ("train", "test", "all"))
    assert tr.X.shape == (46400, 9) and te.X.shape == (11600, 9)
    np.testing.assert_array_equal(al.X, np.vstack([tr.X, te.X]))
    assert np.all(np.linalg.norm(al.X, axis=1) <= 1.0)
    assert list(tr.classes) == list(SHUTTLE_CLASSES) and set(tr.y.tolist()) <= set(SHUTTLE_CLASSES)
    assert dict(collections.Counter(al.y.tolist())) == STATLOG_COUNTS
    # the binary version is unchanged
    b = load_shuttle("train")
    assert b.X.shape == (39278, 9) and set(np.unique(b.y).tolist()) == {-1.0, 1.0}
    np.testing.assert_array_equal(load_shuttle_raw("train").data.shape, (39278, 9))
    with pytest.raises(TypeError, match="binary"):
        load_shuttle("train", binary="no")

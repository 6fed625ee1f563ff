"""``random_state`` inside cloning meta-estimators (issue 25 item 1, documented in docs/sklearn.md): ``clone``
copies an int seed into every clone, so the clones draw the same noise stream; with the default ``None`` every
clone seeds its own ChaCha20 from the OS and the clones' noises differ. Deterministic in outcome: with ``None``
two OS-seeded draws of continuous noise coincide with probability 0 (the released values lie on a 2⁻⁴⁰-fine grid
of the noise scale: a collision has probability far below 1e-6)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.multioutput import MultiOutputClassifier

from dpcore import ObjectivePerturbation, OutputPerturbation, PrivateSVM


def _data(n=300, d=3):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = (X[:, 0] > 0).astype(int)  # {0, 1}: the default label rule
    return X, y


ESTIMATORS = [
    lambda rs: ObjectivePerturbation(epsilon=1.0, delta=1e-6, lam=0.05, data_norm=1.0, random_state=rs),
    lambda rs: OutputPerturbation(epsilon=1.0, delta=1e-6, lam=0.05, data_norm=1.0, random_state=rs),
    lambda rs: PrivateSVM(epsilon=1.0, kernel="linear", data_norm=1.0, C=1.0, random_state=rs),
]


@pytest.mark.parametrize("make", ESTIMATORS, ids=["objective", "output", "private_svm"])
def test_clones_share_an_int_stream_and_not_the_os_seeded_one(make):
    X, y = _data()
    a, b = clone(make(7)), clone(make(7))
    assert np.array_equal(a.fit(X, y).coef_, b.fit(X, y).coef_)  # an int: every clone draws the same noise
    a, b = clone(make(None)), clone(make(None))
    assert a.random_state is None and b.random_state is None
    assert not np.array_equal(a.fit(X, y).coef_, b.fit(X, y).coef_)  # None: independent OS-seeded streams


def test_meta_estimator_clones_with_default_random_state_draw_independent_noise():
    # two identical target columns: MultiOutputClassifier fits one clone per column on the same data, so the two
    # fitted models differ only by their noise
    X, y = _data()
    Y = np.column_stack([y, y])
    base = dict(epsilon=1.0, delta=1e-6, lam=0.05, data_norm=1.0)
    same = MultiOutputClassifier(ObjectivePerturbation(**base, random_state=3)).fit(X, Y)
    assert np.array_equal(same.estimators_[0].coef_, same.estimators_[1].coef_)  # the documented pitfall
    fresh = MultiOutputClassifier(ObjectivePerturbation(**base)).fit(X, Y)  # random_state=None (default)
    assert not np.array_equal(fresh.estimators_[0].coef_, fresh.estimators_[1].coef_)


@pytest.mark.parametrize("cls", [ObjectivePerturbation, OutputPerturbation, PrivateSVM])
def test_the_pitfall_is_documented(cls):
    from pathlib import Path

    doc = cls.__doc__.split("    random_state : ", 1)[1].split("\n    accountant", 1)[0]
    assert "clone" in doc and "None" in doc and "same noise stream" in doc, doc
    guide = (Path(__file__).resolve().parents[1] / "docs" / "sklearn.md").read_text(encoding="utf-8")
    assert "`random_state` in cloning meta-estimators" in guide

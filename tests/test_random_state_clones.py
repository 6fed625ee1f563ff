"""``random_state`` inside cloning meta-estimators (issue 25 item 1, docs/sklearn.md).

scikit-learn's ``clone`` copies parameters as they are; dpcore's estimators override the clone hook
(``dpcore._internal.cloning.PerCloneSeedMixin``) so that clone ``k`` of an estimator with an int seed gets the derived
seed ``derive_clone_seed(seed, k)``: the clones of ``OneVsRestClassifier`` / ``MultiOutputClassifier`` /
``cross_val_score`` draw different, reproducible noise streams. ``None`` stays ``None`` (every clone seeds its own
ChaCha20 from the OS) and a ``ChaChaRng`` still refuses to be cloned.

Deterministic in outcome: the int-seeded cases are fixed seeds; with ``None`` two OS-seeded draws of continuous noise
coincide with probability 0 (the released values lie on a 2⁻⁴⁰-fine grid of the noise scale: a collision has
probability far below 1e-6).
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.multiclass import OneVsRestClassifier
from sklearn.multioutput import MultiOutputClassifier

import dpcore
from dpcore import ObjectivePerturbation, OutputPerturbation, PrivateSVM
from dpcore._internal.cloning import PerCloneSeedMixin, derive_clone_seed
from dpcore.mechanisms import ChaChaRng

ROOT = Path(__file__).resolve().parents[1]


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
IDS = ["objective", "output", "private_svm"]


@pytest.mark.parametrize("make", ESTIMATORS, ids=IDS)
def test_clones_of_an_int_seed_draw_different_reproducible_streams(make):
    X, y = _data()
    est = make(7)
    params, state = est.get_params(), pickle.dumps(est)
    a, b = clone(est), clone(est)
    assert (a.random_state, b.random_state) == (derive_clone_seed(7, 0), derive_clone_seed(7, 1))
    assert len({7, a.random_state, b.random_state}) == 3
    assert not np.array_equal(a.fit(X, y).coef_, b.fit(X, y).coef_)  # different noise streams
    # est itself is unchanged by cloning: same params, same pickle, same fit as an uncloned twin
    assert est.get_params() == params and pickle.dumps(est) == state and est.random_state == 7
    assert np.array_equal(est.fit(X, y).coef_, make(7).fit(X, y).coef_)
    # reproducible: a fresh estimator's clones repeat the seeds (and the models) in the same order
    twin = make(7)
    a2, b2 = clone(twin), clone(twin)
    assert (a2.random_state, b2.random_state) == (a.random_state, b.random_state)
    assert np.array_equal(a2.fit(X, y).coef_, a.coef_) and np.array_equal(b2.fit(X, y).coef_, b.coef_)


@pytest.mark.parametrize("make", ESTIMATORS, ids=IDS)
def test_os_seeded_default_and_chacha_are_untouched(make):
    X, y = _data()
    est = make(None)
    a, b = clone(est), clone(est)
    assert a.random_state is None and b.random_state is None
    assert not np.array_equal(a.fit(X, y).coef_, b.fit(X, y).coef_)  # None: independent OS-seeded streams
    with pytest.raises(TypeError):
        clone(make(ChaChaRng(3)))  # a generator refuses to be copied, as before


def test_invalid_int_seed_is_copied_so_fit_still_refuses_it():
    for bad in (-1, 2**64, True):
        est = ObjectivePerturbation(epsilon=1.0, delta=1e-6, lam=0.05, data_norm=1.0, random_state=bad)
        assert clone(est).random_state is bad
    with pytest.raises(ValueError, match="random_state"):
        clone(ObjectivePerturbation(epsilon=1.0, delta=1e-6, lam=0.05, data_norm=1.0, random_state=-1)).fit(*_data())


def test_numpy_int_seed_is_derived_like_an_int():
    est = ObjectivePerturbation(epsilon=1.0, delta=1e-6, lam=0.05, data_norm=1.0, random_state=np.int64(7))
    assert clone(est).random_state == derive_clone_seed(7, 0)


def _seeds_in_fresh_process():
    code = ("from sklearn.base import clone\n"
            "from dpcore import ObjectivePerturbation\n"
            "e = ObjectivePerturbation(epsilon=1.0, delta=1e-6, lam=0.05, data_norm=1.0, random_state=11)\n"
            "c = clone(e)\n"
            "print(c.random_state, clone(c).random_state, clone(clone(e)).random_state)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**__import__("os").environ, "PYTHONPATH": str(Path(dpcore.__file__).parents[1])})
    return out.stdout.split()


def test_clone_of_clone_reproducible_across_runs():
    first, second = _seeds_in_fresh_process(), _seeds_in_fresh_process()
    assert first == second
    s0 = derive_clone_seed(11, 0)
    assert [int(v) for v in first] == [s0, derive_clone_seed(s0, 0), derive_clone_seed(derive_clone_seed(11, 1), 0)]


@pytest.mark.parametrize("meta", [OneVsRestClassifier, MultiOutputClassifier])
def test_meta_estimator_clones_with_an_int_seed_draw_different_noise(meta):
    X, y = _data()
    base = dict(epsilon=1.0, delta=1e-6, lam=0.05, data_norm=1.0)
    if meta is MultiOutputClassifier:
        # two identical target columns: one clone per column on the same data, so the fitted models differ only by
        # their noise
        Y = np.column_stack([y, y])
    else:
        # three classes, each binary problem on the same X; compare the seeds and that the models differ
        Y = np.where(X[:, 1] > 0.3, 2, y)
    fit = meta(ObjectivePerturbation(**base, random_state=3)).fit(X, Y)
    seeds = [e.random_state for e in fit.estimators_]
    assert seeds == [derive_clone_seed(3, k) for k in range(len(seeds))]
    if meta is MultiOutputClassifier:
        assert not np.array_equal(fit.estimators_[0].coef_, fit.estimators_[1].coef_)
    again = meta(ObjectivePerturbation(**base, random_state=3)).fit(X, Y)  # reproducible
    for e1, e2 in zip(fit.estimators_, again.estimators_):
        assert np.array_equal(e1.coef_, e2.coef_)
    fresh = meta(ObjectivePerturbation(**base)).fit(X, Y)  # random_state=None (default)
    assert all(e.random_state is None for e in fresh.estimators_)


def test_every_estimator_with_random_state_uses_the_shared_mixin():
    import inspect

    from sklearn.base import BaseEstimator

    import importlib

    classes = {}
    for pkg in ("dpcore", "dpcore.glm", "dpcore.kernel_learning", "dpcore.kernels", "dpcore.preprocessing",
                "dpcore.private_svm", "dpcore.ldp"):
        mod = importlib.import_module(pkg)
        classes.update({n: getattr(mod, n) for n in mod.__all__ if inspect.isclass(getattr(mod, n))})
    assert {"ObjectivePerturbation", "PrivateSVM", "StandardScaler", "TDDL", "RandomFourierFeatures"} <= set(classes)
    missing = []
    for n, cls in classes.items():
        if cls is dpcore.RandomFourierFeatures:  # public weights, not noise: an int is copied (as RBFSampler's)
            assert not issubclass(cls, PerCloneSeedMixin)
            continue
        if issubclass(cls, BaseEstimator) and "random_state" in inspect.signature(cls).parameters \
                and not issubclass(cls, PerCloneSeedMixin):
            missing.append(n)
    assert not missing, missing


@pytest.mark.parametrize("cls", [ObjectivePerturbation, OutputPerturbation, PrivateSVM])
def test_the_rule_is_documented(cls):
    doc = cls.__doc__.split("    random_state : ", 1)[1].split("\n    accountant", 1)[0]
    assert "clone" in doc and "derived" in doc and "None" in doc, doc
    guide = (ROOT / "docs" / "sklearn.md").read_text(encoding="utf-8")
    assert "`random_state` in cloning meta-estimators" in guide and "derive_clone_seed" in guide


def test_private_grid_search_feature_map_keeps_its_declared_seed():
    # PrivateGridSearch copies an unfitted RandomFourierFeatures from param_grid before fitting it: the copy must use
    # the seed the user declared (never a per-clone derived one), the same on every call
    from dpcore.kernel_learning.selection import _fit_feature_map

    X, _ = _data(20, 3)
    rff = dpcore.RandomFourierFeatures(n_components=8, random_state=5)
    want = dpcore.RandomFourierFeatures(n_components=8, random_state=5).fit(X[:1]).random_weights_
    for _ in range(2):
        fm, F = _fit_feature_map(rff, X, 0)
        assert fm.random_state == 5 and np.array_equal(fm.random_weights_, want)
    assert rff.random_state == 5 and not hasattr(rff, "random_weights_")

"""Tests of dpcore.kernels.random_features.RandomFourierFeatures (Rust transform): kernel approximation with a
Hoeffding tolerance (false-failure probability <= 1e-6 per test, fixed seeds), exact unit row norms,
determinism, the Fourier laws of the weights, the scikit-learn API and validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpcore import _core
from dpcore.kernel_learning.svm import NotFittedError
from dpcore.kernels.random_features import RandomFourierFeatures


def _hoeffding_t(n_components: int, n_pairs: int, fail: float = 1e-6) -> float:
    """t with n_pairs · 2 exp(−D t²/2) ≤ fail: each term cos ρᵀ(x − z) lies in [−1, 1]."""
    return math.sqrt(2.0 * math.log(2.0 * n_pairs / fail) / n_components)


@pytest.mark.parametrize("kernel,gamma", [("rbf", 0.5), ("rbf", 3.0), ("laplacian", 0.7)])
def test_features_approximate_the_kernel_within_hoeffding(kernel, gamma):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 5)) * 0.5
    Z = np.vstack([X[:3] + 0.05 * rng.normal(size=(3, 5)), rng.normal(size=(5, 5)) * 0.5])
    D = 4000
    rff = RandomFourierFeatures(n_components=D, kernel=kernel, gamma=gamma, random_state=1).fit(X)
    est = rff.transform(X) @ rff.transform(Z).T
    exact = rff.kernel_value(X, Z)
    t = _hoeffding_t(D // 2, est.size)  # D columns = D/2 frequencies
    assert np.max(np.abs(est - exact)) <= t, (np.max(np.abs(est - exact)), t)
    # and the kernel values span a useful range (the test is not vacuous)
    assert exact.max() > 0.5 and exact.min() < 0.2


def test_row_norms_are_one():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1000, 7)) * 10.0
    for kernel in ("rbf", "laplacian"):
        F = RandomFourierFeatures(n_components=666, kernel=kernel, gamma=2.0, random_state=2).fit_transform(X)
        assert F.shape == (1000, 666)
        np.testing.assert_allclose(np.linalg.norm(F, axis=1), 1.0, rtol=0, atol=1e-12)
        # odd n_components: k columns, the last sin dropped, norms still <= 1 (κ = 1 bounds them)
        F = RandomFourierFeatures(n_components=333, kernel=kernel, gamma=2.0, random_state=2).fit_transform(X)
        assert F.shape == (1000, 333) and F.flags.c_contiguous
        assert np.linalg.norm(F, axis=1).max() <= 1.0 + 1e-12


def test_map_matches_the_formula():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 4))
    rff = RandomFourierFeatures(n_components=100, gamma=0.3, random_state=3).fit(X)
    P = X @ rff.random_weights_
    assert rff.random_weights_.shape == (4, 50)
    ref = np.hstack([np.cos(P), np.sin(P)]) / math.sqrt(50)
    np.testing.assert_allclose(rff.transform(X), ref, rtol=0, atol=1e-13)
    odd = RandomFourierFeatures(n_components=101, gamma=0.3, random_state=3).fit(X)
    P = X @ odd.random_weights_
    ref = np.hstack([np.cos(P), np.sin(P)[:, :-1]]) / math.sqrt(51)
    np.testing.assert_allclose(odd.transform(X), ref, rtol=0, atol=1e-13)


def test_determinism_and_layouts():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(517, 6))
    a = RandomFourierFeatures(n_components=40, random_state=7).fit(X)
    b = RandomFourierFeatures(n_components=40, random_state=7).fit(X)
    c = RandomFourierFeatures(n_components=40, random_state=8).fit(X)
    np.testing.assert_array_equal(a.random_weights_, b.random_weights_)
    assert not np.array_equal(a.random_weights_, c.random_weights_)
    Fa = a.transform(X)
    np.testing.assert_array_equal(Fa, a.transform(X))
    np.testing.assert_array_equal(Fa, a.transform(np.asfortranarray(X)))
    np.testing.assert_array_equal(Fa[::2], a.transform(X[::2]))  # strided view, rows independent
    np.testing.assert_array_equal(Fa[5:6], a.transform(X[5:6]))
    np.testing.assert_allclose(a.transform(X.astype(np.float32)), a.transform(X.astype(np.float32).astype(np.float64)))
    # OS-seeded weights differ between fits
    assert not np.array_equal(RandomFourierFeatures(n_components=40).fit(X).random_weights_,
                              RandomFourierFeatures(n_components=40).fit(X).random_weights_)


def test_weights_follow_the_fourier_measures():
    X = np.zeros((1, 1))
    w = RandomFourierFeatures(n_components=100_000, kernel="rbf", gamma=1.5, random_state=4).fit(X).random_weights_.ravel()
    # normality (KS) and variance 2γ (chi-square interval at 1e-7)
    assert stats.kstest(w / math.sqrt(3.0), "norm").pvalue > 1e-7
    lo, hi = stats.chi2.ppf([5e-8, 1 - 5e-8], w.size) / w.size
    assert lo <= np.mean(w**2) / 3.0 <= hi
    w = RandomFourierFeatures(n_components=100_000, kernel="laplacian", gamma=0.8, random_state=5).fit(X).random_weights_.ravel()
    assert stats.kstest(w, stats.cauchy(scale=0.8).cdf).pvalue > 1e-7


def test_sklearn_protocol():
    sklearn_base = pytest.importorskip("sklearn.base")
    rff = RandomFourierFeatures(n_components=12, kernel="laplacian", gamma=0.5, random_state=3)
    assert rff.get_params() == dict(n_components=12, kernel="laplacian", gamma=0.5, random_state=3)
    c = sklearn_base.clone(rff)  # public weights, not noise: an int seed is copied as is (not derived per clone)
    assert c.get_params() == rff.get_params() and not hasattr(c, "random_weights_")
    rff.set_params(n_components=5)
    X = np.ones((3, 2))
    assert rff.fit_transform(X).shape == (3, 5)  # k columns, as scikit-learn's RBFSampler
    assert rff.n_features_in_ == 2 and rff.random_weights_.shape == (2, 3) and rff.n_output_features_ == 5
    with pytest.raises(ValueError, match="Invalid parameter"):
        rff.set_params(bogus=1)
    assert "RandomFourierFeatures(" in repr(rff)


@pytest.mark.parametrize("kwargs,match", [
    (dict(n_components=0), "n_components"),
    (dict(n_components=-3), "n_components"),
    (dict(n_components=2.5), "n_components"),
    (dict(n_components=True), "n_components"),
    (dict(kernel="poly"), "kernel"),
    (dict(kernel=None), "kernel"),
    (dict(gamma=0.0), "gamma"),
    (dict(gamma=-1.0), "gamma"),
    (dict(gamma=float("nan")), "gamma"),
    (dict(gamma=float("inf")), "gamma"),
])
def test_parameter_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RandomFourierFeatures(**kwargs).fit(np.ones((2, 2)))


def test_data_validation():
    rff = RandomFourierFeatures(n_components=4, random_state=0)
    with pytest.raises(NotFittedError):
        rff.transform(np.ones((2, 2)))
    X = np.ones((3, 2))
    X[1, 1] = np.nan
    with pytest.raises(ValueError, match="X.*NaN"):
        rff.fit(X)
    rff.fit(np.ones((3, 2)))
    with pytest.raises(ValueError, match="X.*NaN"):
        rff.transform(X)
    with pytest.raises(ValueError, match="X has 3 features"):
        rff.transform(np.ones((2, 3)))
    with pytest.raises(ValueError, match="X must be a 2-D"):
        rff.transform(np.ones(2))
    with pytest.raises(ValueError, match="empty"):
        rff.transform(np.ones((0, 2)))
    with pytest.raises(TypeError):
        rff.transform(np.array([["a", "b"]]))
    # the Rust layer names its arguments too
    with pytest.raises(ValueError, match="^X"):
        _core.rff_transform(np.ones((2, 3)), rff.random_weights_)
    with pytest.raises(ValueError, match="^n_components"):
        _core.rff_sample_weights(2, 0, "rbf", 1.0, _core.ChaChaRng(0))


from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402


@parametrize_with_checks([RandomFourierFeatures(n_components=10, random_state=0)])
def test_scikit_learn_estimator_checks(estimator, check):
    """Every scikit-learn estimator check passes (no expected failures)."""
    check(estimator)


def test_feature_names_and_set_output():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(np.random.default_rng(0).uniform(-0.5, 0.5, size=(6, 3)), columns=["a", "b", "c"])
    rff = RandomFourierFeatures(n_components=5, random_state=0).fit(X)
    assert list(rff.feature_names_in_) == ["a", "b", "c"]
    assert list(rff.get_feature_names_out()) == [f"randomfourierfeatures{i}" for i in range(5)]
    out = rff.set_output(transform="pandas").transform(X)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == list(rff.get_feature_names_out())
    np.testing.assert_array_equal(out.to_numpy(), rff.set_output(transform="default").transform(X.to_numpy()))

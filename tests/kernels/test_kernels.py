"""Tests of dpcore.kernels.evaluation against scikit-learn's pairwise_kernels.

Accuracy criterion: elementwise ``|ours - sklearn| <= 1e-10 * scale`` with ``scale`` the natural
condition scale of ``K @ mu`` — the expansion evaluated on absolute values, which bounds the
rounding error of any evaluation order:

* linear: ``|Z| |X|^T |mu|``
* poly:   ``(gamma |Z| |X|^T + |coef0|)^degree |mu|``
* rbf:    ``K |mu|`` (all entries are positive)

Memory: ``kernel_predict`` never materialises the m x n matrix (it works on 64 x 512 blocks); this
is not asserted here (RSS measurements are not reliable in a test) but measured by
``benches/bench_kernels.py``, which reports the peak extra RSS of both implementations.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics.pairwise import pairwise_kernels

from dpcore.kernels.evaluation import feature_map_radius, kernel_matrix, kernel_predict

TOL = 1e-10
HYP = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _params(kernel, gamma, degree, coef0, d):
    g = 1.0 if gamma is None else 1.0 / d if gamma == "auto" else gamma  # issue 25: None is 1.0
    return dict(gamma=g, degree=degree, coef0=coef0)


def sk_kernel(A, B, kernel, gamma=None, degree=3, coef0=1.0):
    p = _params(kernel, gamma, degree, coef0, A.shape[1])
    if kernel == "linear":
        return pairwise_kernels(A, B, metric="linear")
    if kernel == "rbf":
        return pairwise_kernels(A, B, metric="rbf", gamma=p["gamma"])
    return pairwise_kernels(A, B, metric="poly", **p)


def scale_matrix(A, B, kernel, gamma=None, degree=3, coef0=1.0):
    p = _params(kernel, gamma, degree, coef0, A.shape[1])
    G = np.abs(A) @ np.abs(B).T
    if kernel == "linear":
        return G
    if kernel == "poly":
        return (p["gamma"] * G + abs(p["coef0"])) ** p["degree"]
    return sk_kernel(A, B, kernel, gamma, degree, coef0)


def assert_predict_close(got, Z, X, mu, kernel, gamma=None, degree=3, coef0=1.0):
    K = sk_kernel(Z, X, kernel, gamma, degree, coef0)
    want = K @ mu
    scale = scale_matrix(Z, X, kernel, gamma, degree, coef0) @ np.abs(mu)
    err = np.abs(got - want)
    assert got.shape == want.shape and got.dtype == np.float64
    assert np.all(err <= TOL * scale + 1e-300), (np.max(err / (scale + 1e-300)), kernel)


def data(m, n, d, seed=0, spread=1.0):
    rng = np.random.default_rng(seed)
    Z = rng.uniform(-spread, spread, size=(m, d))
    X = rng.uniform(-spread, spread, size=(n, d))
    mu = rng.normal(size=n)
    return Z, X, mu


kernel_st = st.sampled_from(["linear", "poly", "rbf"])


@HYP
@given(
    m=st.integers(1, 150),
    n=st.integers(1, 1100),
    d=st.integers(1, 60),
    kernel=kernel_st,
    gamma=st.one_of(st.none(), st.floats(0.01, 2.0)),
    degree=st.integers(1, 5),
    coef0=st.floats(-2.0, 2.0),
    spread=st.floats(0.01, 3.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_predict_matches_sklearn(m, n, d, kernel, gamma, degree, coef0, spread, seed):
    Z, X, mu = data(m, n, d, seed, spread)
    got = kernel_predict(Z, X, mu, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0)
    assert_predict_close(got, Z, X, mu, kernel, gamma, degree, coef0)


@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf"])
@pytest.mark.parametrize("m,n", [(1100, 600), (1, 5000), (3, 1), (64, 512), (65, 1025), (200, 3)])
def test_predict_tile_boundaries(kernel, m, n):
    # m = 1100 takes the query-tile parallel path, small m the support-wave / direct paths
    Z, X, mu = data(m, n, 54, seed=m + n)
    got = kernel_predict(Z, X, mu, kernel=kernel)
    assert_predict_close(got, Z, X, mu, kernel)


@HYP
@given(
    m=st.integers(1, 80),
    n=st.integers(1, 700),
    d=st.integers(1, 30),
    kernel=kernel_st,
    gamma=st.one_of(st.none(), st.floats(0.01, 2.0)),
    degree=st.integers(1, 4),
    coef0=st.floats(-2.0, 2.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_matrix_matches_sklearn(m, n, d, kernel, gamma, degree, coef0, seed):
    A, B, _ = data(m, n, d, seed)
    got = kernel_matrix(A, B, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0)
    want = sk_kernel(A, B, kernel, gamma, degree, coef0)
    scale = scale_matrix(A, B, kernel, gamma, degree, coef0)
    assert got.shape == (m, n) and got.dtype == np.float64
    assert np.all(np.abs(got - want) <= TOL * scale + 1e-300)


@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf"])
def test_gram_matrix(kernel):
    A, _, _ = data(300, 1, 7, seed=3)
    got = kernel_matrix(A, kernel=kernel, gamma="auto")  # 1 / n_features (the default is 1.0 since issue 25)
    want = pairwise_kernels(A, metric=kernel, filter_params=True, gamma=1 / 7, degree=3, coef0=1.0)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got, got.T)
    if kernel == "rbf":
        assert np.all(np.diag(got) == 1.0)


def test_polynomial_alias_and_defaults():
    Z, X, mu = data(20, 30, 5)
    a = kernel_predict(Z, X, mu, kernel="polynomial", gamma=0.3, degree=2, coef0=0.5)
    b = kernel_predict(Z, X, mu, kernel="poly", gamma=0.3, degree=2, coef0=0.5)
    np.testing.assert_array_equal(a, b)
    # defaults: rbf with gamma = 1 (issue 25; "auto" is 1 / n_features)
    np.testing.assert_array_equal(kernel_predict(Z, X, mu), kernel_predict(Z, X, mu, gamma=1.0))
    np.testing.assert_array_equal(kernel_predict(Z, X, mu, gamma="auto"), kernel_predict(Z, X, mu, gamma=0.2))
    # degree given as an integral float (scikit-learn style) is accepted
    np.testing.assert_array_equal(kernel_predict(Z, X, mu, kernel="poly", degree=3.0),
                                  kernel_predict(Z, X, mu, kernel="poly", degree=3))


@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf"])
def test_float32_input(kernel):
    Z, X, mu = data(40, 700, 9, seed=5)
    Z32, X32, mu32 = Z.astype(np.float32), X.astype(np.float32), mu.astype(np.float32)
    got = kernel_predict(Z32, X32, mu32, kernel=kernel)
    assert got.dtype == np.float64
    # float32 is converted exactly to float64 once: same result as the converted arrays
    ref = kernel_predict(Z32.astype(np.float64), X32.astype(np.float64), mu32.astype(np.float64),
                         kernel=kernel)
    np.testing.assert_array_equal(got, ref)
    assert_predict_close(got, Z32.astype(np.float64), X32.astype(np.float64),
                         mu32.astype(np.float64), kernel)
    # mixed dtypes
    np.testing.assert_array_equal(kernel_predict(Z32, X, mu, kernel=kernel),
                                  kernel_predict(Z32.astype(np.float64), X, mu, kernel=kernel))
    K = kernel_matrix(Z32, X32, kernel=kernel)
    assert K.dtype == np.float64
    np.testing.assert_array_equal(K, kernel_matrix(Z32.astype(np.float64), X32.astype(np.float64),
                                                   kernel=kernel))


def test_integer_input_is_converted():
    Z = np.array([[1, 2], [3, 4]])
    X = np.array([[0, 1], [1, 0], [2, 2]])
    mu = np.array([1, -1, 2])
    got = kernel_predict(Z, X, mu, kernel="linear")
    np.testing.assert_array_equal(got, (Z @ X.T) @ mu)


@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf"])
@pytest.mark.parametrize("m", [3, 50, 1100])
def test_fortran_order_and_strided_views(kernel, m):
    Z, X, mu = data(m, 1300, 12, seed=m)
    ref = kernel_predict(Z, X, mu, kernel=kernel)
    # Fortran order: zero-copy, same blocks, same bits
    got_f = kernel_predict(np.asfortranarray(Z), np.asfortranarray(X), mu, kernel=kernel)
    np.testing.assert_array_equal(got_f, ref)
    # non-contiguous views (negative and non-unit strides) on both axes and on mu
    big_Z = np.repeat(Z, 2, axis=0)[::2]
    Zs, Xs, mus = big_Z[::-1, 1::2], X[::-2, ::2], np.repeat(mu, 3)[::3][::-2]
    assert not Zs.flags.c_contiguous and not Xs.flags.c_contiguous and not mus.flags.c_contiguous
    got = kernel_predict(Zs, Xs, mus, kernel=kernel)
    assert_predict_close(got, np.ascontiguousarray(Zs), np.ascontiguousarray(Xs),
                         np.ascontiguousarray(mus), kernel)
    np.testing.assert_array_equal(
        got, kernel_predict(Zs.copy(), Xs.copy(), mus.copy(), kernel=kernel))
    Km = kernel_matrix(Zs, Xs, kernel=kernel)
    np.testing.assert_allclose(Km, kernel_matrix(Zs.copy(), Xs.copy(), kernel=kernel), rtol=1e-15)


def test_read_only_and_broadcast_input():
    Z, X, mu = data(10, 20, 3)
    for a in (Z, X, mu):
        a.flags.writeable = False
    got = kernel_predict(Z, X, mu)
    mu_b = np.broadcast_to(np.float64(0.5), (20,))
    np.testing.assert_allclose(kernel_predict(Z, X, mu_b), kernel_predict(Z, X, np.full(20, 0.5)),
                               rtol=1e-15)
    assert got.shape == (10,)


def test_results_do_not_depend_on_thread_count():
    code = (
        "import numpy as np, sys; from dpcore import kernel_predict\n"
        "rng = np.random.default_rng(7); Z = rng.normal(size=(1500, 20)); X = rng.normal(size=(1700, 20))\n"
        "mu = rng.normal(size=1700); z1 = Z[:2]\n"
        "out = [kernel_predict(a, X, mu, kernel=k) for k in ('rbf', 'poly', 'linear') for a in (Z, Z[:300], z1)]\n"
        "sys.stdout.write(np.concatenate(out).tobytes().hex())\n"
    )
    outs = []
    for threads in ("1", "2", "3"):
        env = dict(os.environ, RAYON_NUM_THREADS=threads)
        res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             check=True)
        outs.append(res.stdout)
    assert outs[0] == outs[1] == outs[2]


# ---------------------------------------------------------------------------------------------
# Validation: every error names the offending argument
# ---------------------------------------------------------------------------------------------

def _bad(**over):
    Z, X, mu = data(4, 6, 3)
    args = dict(Z=Z, X=X, mu=mu)
    args.update(over)
    return args


def _nan_at(a, idx):
    a = a.copy()
    a[idx] = np.nan
    return a


@pytest.mark.parametrize(
    "over,name",
    [
        (dict(Z=_nan_at(data(4, 6, 3)[0], (1, 1))), "Z"),
        (dict(X=np.full((6, 3), np.inf)), "X"),
        (dict(mu=_nan_at(data(4, 6, 3)[2], 2)), "mu"),
        (dict(Z=np.ones(3)), "Z"),
        (dict(X=np.ones((6, 3, 1))), "X"),
        (dict(mu=np.ones((6, 1))), "mu"),
        (dict(Z=np.ones((0, 3))), "Z"),
        (dict(X=np.ones((0, 3)), mu=np.ones(0)), "X"),
        (dict(X=np.ones((6, 4))), "X"),
        (dict(mu=np.ones(5)), "mu"),
        (dict(mu=np.ones(0)), "mu"),
    ],
)
def test_predict_rejects_bad_arrays(over, name):
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        kernel_predict(**_bad(**over))


@pytest.mark.parametrize(
    "kw,name",
    [
        (dict(kernel="sigmoid"), "kernel"),
        (dict(kernel="RBF"), "kernel"),
        (dict(kernel=None), "kernel"),
        (dict(gamma=0.0), "gamma"),
        (dict(gamma=-1.0), "gamma"),
        (dict(gamma=np.nan), "gamma"),
        (dict(gamma=np.inf), "gamma"),
        (dict(kernel="poly", degree=0), "degree"),
        (dict(kernel="poly", degree=-2), "degree"),
        (dict(kernel="poly", degree=2.5), "degree"),
        (dict(kernel="poly", degree=2**40), "degree"),
        (dict(kernel="poly", coef0=np.nan), "coef0"),
        (dict(kernel="poly", coef0=-np.inf), "coef0"),
        # explicitly given parameters are validated even when the kernel ignores them
        (dict(kernel="linear", gamma=-1.0), "gamma"),
        (dict(kernel="rbf", degree=0), "degree"),
    ],
)
def test_rejects_bad_kernel_params(kw, name):
    Z, X, mu = data(4, 6, 3)
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        kernel_predict(Z, X, mu, **kw)
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        kernel_matrix(Z, X, **kw)


@pytest.mark.parametrize("kw", [dict(gamma="1"), dict(degree=True), dict(degree="3"), dict(coef0="1")])
def test_rejects_wrong_param_types(kw):
    Z, X, mu = data(4, 6, 3)
    with pytest.raises(TypeError, match=rf"^{next(iter(kw))}\b"):
        kernel_predict(Z, X, mu, kernel="poly", **kw)


def test_matrix_rejects_bad_arrays():
    A, B, _ = data(4, 6, 3)
    with pytest.raises(ValueError, match=r"^B\b"):
        kernel_matrix(A, np.ones((6, 2)))
    with pytest.raises(ValueError, match=r"^A\b"):
        kernel_matrix(_nan_at(A, (0, 0)), B)
    with pytest.raises(ValueError, match=r"^B\b"):
        kernel_matrix(A, _nan_at(B, (0, 0)))
    with pytest.raises(ValueError, match=r"^A\b"):
        kernel_matrix(np.ones((0, 3)))
    with pytest.raises(TypeError, match=r"^A\b"):
        kernel_matrix(np.array([["a", "b"]]))


def test_core_binding_validates_too():
    # the private extension validates on its own (shapes, finiteness, parameters)
    from dpcore import _core

    Z, X, mu = data(4, 6, 3)
    with pytest.raises(ValueError, match=r"^X\b"):
        _core.kernel_predict(Z, np.ones((6, 2)), mu, "rbf", 1.0, 3, 1.0, 0.0)
    with pytest.raises(ValueError, match=r"^mu\b"):
        _core.kernel_predict(Z, X, np.ones(5), "rbf", 1.0, 3, 1.0, 0.0)
    with pytest.raises(ValueError, match=r"^Z\b"):
        _core.kernel_predict(_nan_at(Z, (0, 0)), X, mu, "rbf", 1.0, 3, 1.0, 0.0)
    with pytest.raises(ValueError, match=r"^gamma\b"):
        _core.kernel_matrix(Z, None, "rbf", -1.0, 3, 1.0, 0.0)
    with pytest.raises(ValueError, match=r"^kernel\b"):
        _core.kernel_matrix(Z, X, "cosine", 1.0, 3, 1.0, 0.0)
    np.testing.assert_array_equal(_core.kernel_diag(Z, "rbf", 0.5, 3, 1.0, 0.0), np.ones(4))
    np.testing.assert_allclose(_core.kernel_diag(Z, "linear", 1.0, 3, 1.0, 0.0), (Z * Z).sum(1),
                               rtol=1e-15)


# ---------------------------------------------------------------------------------------------
# Feature-map radius R_phi (SPEC, "Kernels")
# ---------------------------------------------------------------------------------------------

def test_feature_map_radius_values():
    assert feature_map_radius(3.0, kernel="linear") == 3.0
    assert feature_map_radius(2.0, kernel="rbf", gamma=5.0) == 1.0
    assert feature_map_radius(2.0, kernel="rbf") == 1.0  # gamma irrelevant
    r = feature_map_radius(2.0, kernel="poly", gamma=0.5, degree=3, coef0=1.0)
    assert r == pytest.approx(np.sqrt(27.0), rel=1e-15)
    r = feature_map_radius(1.5, kernel="poly", gamma="auto", degree=2, coef0=0.25, n_features=4)
    assert r == pytest.approx(np.sqrt((1.5**2 / 4 + 0.25) ** 2), rel=1e-15)
    assert feature_map_radius(1.0, kernel="poly", gamma=1.0, degree=4, coef0=0.0) == 1.0


@pytest.mark.parametrize(
    "kw",
    [dict(kernel="linear"), dict(kernel="rbf", gamma=0.7),
     dict(kernel="poly", gamma=0.3, degree=3, coef0=0.5), dict(kernel="poly", gamma=2.0, degree=2, coef0=0.0)],
)
def test_feature_map_radius_is_the_max_of_k_zz_over_the_ball(kw):
    rng = np.random.default_rng(11)
    radius = 1.7
    Zs = rng.normal(size=(200, 6))
    Zs *= (radius * rng.uniform(0, 1, size=(200, 1)) ** (1 / 6)) / np.linalg.norm(Zs, axis=1, keepdims=True)
    Zs[0] *= radius / np.linalg.norm(Zs[0])  # one point on the sphere attains the bound
    R = feature_map_radius(radius, **kw, n_features=6)
    diag = np.diag(kernel_matrix(Zs, **kw))
    assert np.all(diag <= R**2 * (1 + 1e-12))
    assert diag[0] == pytest.approx(R**2, rel=1e-12)


@pytest.mark.parametrize(
    "args,kw,name,exc",
    [
        ((0.0,), dict(kernel="linear"), "data_norm", ValueError),
        ((-1.0,), dict(kernel="rbf"), "data_norm", ValueError),
        ((np.inf,), dict(kernel="rbf"), "data_norm", ValueError),
        ((np.nan,), dict(kernel="rbf"), "data_norm", ValueError),
        ((1.0,), dict(kernel="poly", gamma=1.0, coef0=-0.5), "coef0", ValueError),
        ((1.0,), dict(kernel="poly", gamma="auto"), "gamma", ValueError),  # gamma="auto" without n_features
        ((1.0,), dict(kernel="poly", gamma="auto", n_features=0), "n_features", ValueError),
        ((1.0,), dict(kernel="poly", gamma=1.0, degree=0), "degree", ValueError),
        ((1.0,), dict(kernel="poly", gamma=1.0, degree=4000), "data_norm", ValueError),  # overflow
        ((1.0,), dict(kernel="tanh"), "kernel", ValueError),
        (("1",), dict(kernel="rbf"), "data_norm", TypeError),
    ],
)
def test_feature_map_radius_errors(args, kw, name, exc):
    with pytest.raises(exc, match=rf"^{name}\b"):
        feature_map_radius(*args, **kw)


def test_negative_coef0_message_explains():
    with pytest.raises(ValueError, match="positive semi-definite"):
        feature_map_radius(1.0, kernel="poly", gamma=1.0, degree=2, coef0=-1.0)

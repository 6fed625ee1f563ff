"""Issue 26, item 3: the in-memory certified GLM solver sums ``Xᵀs`` by blocks added pairwise, with the certified
bound ``γ_k``, ``k = blocked_sum_terms(n)`` — the same code and the same ``k`` as the Dask path."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import sparse

from dpcore import ObjectivePerturbation, OutputPerturbation
from dpcore._internal.fp import SUM_BLOCK_ROWS, blocked_sum_terms, gamma_k
from dpcore._internal.summation import blocked_xt
from dpcore.glm._losses import make_loss
from dpcore.glm._solver import GLMObjective


def _exact_xt(X, s, scaling=None):
    """Exact ``Xᵀs`` (rationals), rounded once, and ``Σ_i |s_i x_ij|`` per coordinate."""
    cols = [X[:, j] for j in range(X.shape[1])]
    if scaling is not None:
        cols.append(np.full(X.shape[0], scaling))
    exact, mags = [], []
    for c in cols:
        exact.append(sum((Fraction(float(a)) * Fraction(float(b)) for a, b in zip(c, s)), Fraction(0)))
        mags.append(math.fsum(abs(float(a) * float(b)) for a, b in zip(c, s)))
    return exact, np.array(mags)


def _assert_within(v, X, s, k, scaling=None):
    exact, mags = _exact_xt(X, s, scaling)
    bound = gamma_k(k) * mags * (1 + 1e-12) + 1e-300
    err = np.array([abs(Fraction(float(a)) - e) for a, e in zip(v, exact)], dtype=float)
    assert (err <= bound).all(), (err, bound)


def _ill_conditioned(rng, n, d):
    """Terms spanning 2⁻⁶⁰..2⁶⁰ with cancelling pairs: the exact sum is tiny against Σ|terms| (condition ~1e30)."""
    X = rng.normal(size=(n, d)) * np.exp2(rng.integers(-60, 60, size=(n, d)))
    s = rng.normal(size=n) * np.exp2(rng.integers(-30, 30, size=n))
    half = n // 2
    X[half:2 * half] = X[:half]
    s[half:2 * half] = -s[:half] * (1 + 2.0**-40)  # near-cancelling
    return X, s


@settings(max_examples=60, deadline=None, derandomize=True)
@given(n=st.integers(1, 300), d=st.integers(1, 3), block=st.integers(1, 9), seed=st.integers(0, 2**32 - 1),
       intercept=st.booleans())
def test_blocked_sum_is_a_true_bound(n, d, block, seed, intercept):
    """Any n, any block size, any tree shape: the float sum is within γ_k Σ|terms| of the exact rational sum."""
    rng = np.random.default_rng(seed)
    X, s = _ill_conditioned(rng, n, d)
    scaling = 0.7 if intercept else None
    v = blocked_xt(X, s, scaling, block=block)
    _assert_within(v, X, s, blocked_sum_terms(n, block), scaling)


def test_blocked_sum_bound_at_the_real_block_size_dense_sparse_and_matrix():
    """The production block size, n spanning several blocks (k < n): dense, CSR and several vectors at once."""
    rng = np.random.default_rng(7)
    n = 3 * SUM_BLOCK_ROWS + 517
    X, s = _ill_conditioned(rng, n, 2)
    k = blocked_sum_terms(n)
    assert k == SUM_BLOCK_ROWS + 2 * 14 + 1 < n
    _assert_within(blocked_xt(X, s), X, s, k)
    Xs = sparse.csr_matrix(np.where(rng.random(X.shape) < 0.5, X, 0.0))
    _assert_within(blocked_xt(Xs, s), Xs.toarray(), s, k)
    S = np.column_stack([s, s[::-1]])
    V = blocked_xt(X, S)
    assert V.shape == (2, 2)
    _assert_within(V[:, 0], X, s, k)  # each column within the same bound (GEMM and GEMV may differ in the bits)
    _assert_within(V[:, 1], X, s[::-1], k)


def test_in_memory_objective_sums_blockwise_with_the_shared_bound():
    """GLMObjective's Xᵀs is the blocked sum, and its certificate uses k = blocked_sum_terms(n) (was k = n)."""
    rng = np.random.default_rng(1)
    n = 2 * SUM_BLOCK_ROWS + 99
    X, s = _ill_conditioned(rng, n, 3)
    obj = GLMObjective(X, np.ones(n), make_loss("logistic"), 0.1)
    assert obj.sum_terms() == blocked_sum_terms(n) < n
    _assert_within(obj._xt(s), X, s, obj.sum_terms())
    # up to one block, nothing changes: the single product, bit for bit
    Xm = X[:SUM_BLOCK_ROWS]
    assert np.array_equal(GLMObjective(Xm, np.ones(SUM_BLOCK_ROWS), make_loss("logistic"), 0.1)._xt(s[:SUM_BLOCK_ROWS]),
                          Xm.T @ s[:SUM_BLOCK_ROWS])


@pytest.mark.parametrize("n", [10**6, 10**7])
@pytest.mark.parametrize("cls", [ObjectivePerturbation, OutputPerturbation])
def test_tol_1e10_certifies_in_memory_at_ten_million_rows(cls, n):
    """The public floor with the blocked bound (d = 20 + intercept, λ = 10/n^0.75): tol = 1e-10, refused before from
    n ≈ 10⁶ (k = n), is accepted; tol='auto' resolves far below it. Calibration only (no 10⁷ rows in a test)."""
    lam = 10 / n**0.75
    est = cls(1.0, 1e-7, lam=lam, data_norm=1.0, tol=1e-10)
    p = est._validate_params()
    cal = est._calibrate(n, 20, 21, p)
    assert cal.tol == 1e-10
    with pytest.raises(ValueError, match="below what float64 can certify"):  # the old rule (one BLAS call, k = n)
        est._calibrate(n, 20, 21, dict(p, sum_terms=n))
    auto = cls(1.0, 1e-7, lam=lam, data_norm=1.0, tol="auto")
    cal_auto = auto._calibrate(n, 20, 21, auto._validate_params())
    assert cal_auto.tol < 1e-11

"""Tests of exact multinomial sampling (:mod:`dpcore.mechanisms.multinomial`, ``src/mechanisms/multinomial.rs``).

* exactness of the quantisation: ``q_j == floor(Fraction(p_j) * 2**100)`` for random doubles of
  every magnitude (subnormals included);
* distribution: Pearson chi-square goodness of fit of the counts against the *exact* sampled law
  ``q_j / T`` (Python big-integer arithmetic) for a uniform small vector, a Zipf vector, a vector
  with zeros, one with tiny entries and one crossing the Rust core's block and stream boundaries;
  cells with expected count < 5 are pooled and the p-value threshold ``ALPHA = 1e-7`` is fixed in
  advance (false-failure probability <= 1e-7 per test, < 1e-6 for the file); the shuffled draws
  are tested the same way on pairs of consecutive draws (the i.i.d. sequence law);
* structure: counts sum to m, indices strictly increasing, zeros never drawn, m = 0 and 1,
  determinism for a seed, identical output for 1, 2 and 3 rayon threads (subprocesses),
  ``draws == repeat(indices, counts)``, non-contiguous / float32 / integer input;
* validation: every bad argument raises naming the parameter;
* the error bound: equal in Python and Rust, >= the exact relative error (Fractions), inf when an
  entry is below 2**-100, <= 1e-9 when min p >= 1e-20 (hypothesis, Dirichlet vectors).
"""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import chi2

from dpcore import _core
from dpcore.mechanisms.multinomial import (
    multinomial_counts,
    multinomial_draws,
    probability_error_bound,
    quantized_weights,
)
from dpcore.mechanisms.noise import ChaChaRng

ALPHA = 1e-7  # p-value threshold of every chi-square test, fixed before sampling
BLOCK = 8192  # entries per block of the Rust core (src/mechanisms/multinomial.rs)
HYP = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _exact_probs(p):
    q, t = quantized_weights(p)
    return np.array([qj / t for qj in q]), q, t


def _chi_square_pvalue(observed, probs, m):
    """Pearson statistic with cells of expected count < 5 pooled; returns (p-value, dof)."""
    observed = np.asarray(observed, dtype=float)
    expected = np.asarray(probs, dtype=float) * m
    big = expected >= 5.0
    obs = list(observed[big])
    exp = list(expected[big])
    if (~big).any() and expected[~big].sum() > 0:
        obs.append(observed[~big].sum())
        exp.append(expected[~big].sum())
    obs, exp = np.array(obs), np.array(exp)
    stat = float(((obs - exp) ** 2 / exp).sum())
    dof = len(obs) - 1
    return float(chi2.sf(stat, dof)), dof


def _full_counts(idx, cnt, size):
    full = np.zeros(size, dtype=np.int64)
    full[idx] = cnt
    return full


def _check_structure(idx, cnt, m, size):
    assert idx.dtype == np.int64 and cnt.dtype == np.int64
    assert idx.shape == cnt.shape
    assert int(cnt.sum()) == m
    assert (cnt >= 1).all()
    assert (np.diff(idx) > 0).all()
    if idx.size:
        assert 0 <= idx[0] and idx[-1] < size


def _zipf(n, s=1.1):
    w = 1.0 / np.arange(1, n + 1) ** s
    return w / w.sum()


def _with_zeros():
    rng = np.random.default_rng(3)
    w = rng.random(60)
    w[::3] = 0.0
    return w / w.sum()


def _tiny():
    p = np.array([0.4, 1e-35, 2.0**-101, 3 * 2.0**-100, 1e-6, 0.0, 5e-324, 0.3])
    p[-1] = 1.0 - p[:-1].sum()
    return p


def _boundary():
    rng = np.random.default_rng(4)
    w = rng.random(3 * BLOCK + 11)
    return w / w.sum()


# ---------------------------------------------------------------------------------------------
# the exact quantisation
# ---------------------------------------------------------------------------------------------


def test_quantized_weights_are_exact_floors():
    rng = np.random.default_rng(0)
    mags = 2.0 ** rng.integers(-1074, 0, 400).astype(float)
    p = rng.random(400) * mags
    p = p / (2.0 * p.sum())
    p = np.concatenate([p, [0.0, -0.0, 5e-324, 2.0**-100, 2.0**-101, 3 * 2.0**-100 * 0.999]])
    p[0] = 0.0
    p[0] = 1.0 - p.sum()
    q, t = quantized_weights(p)
    for x, qj in zip(p, q):
        assert qj == math.floor(Fraction(float(x)) * 2**100)
    assert t == sum(q)
    assert q[-2] == 0 and q[-3] == 1 and q[-1] == 2 and q[-4] == 0
    # the helper in _core validates like the samplers
    with pytest.raises(ValueError, match=r"p\[1\] = nan"):
        quantized_weights([0.5, np.nan, 0.5])


# ---------------------------------------------------------------------------------------------
# distribution
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, p, m",
    [
        ("uniform", np.full(10, 0.1), 200_000),
        ("zipf", _zipf(2000), 400_000),
        ("zeros", _with_zeros(), 200_000),
        ("tiny", _tiny(), 300_000),
        ("block boundaries", _boundary(), 1_000_000),
    ],
)
def test_counts_fit_the_exact_law(name, p, m):
    probs, q, _ = _exact_probs(p)
    idx, cnt = multinomial_counts(p, m, random_state=12345)
    _check_structure(idx, cnt, m, p.size)
    zero = np.array([qj == 0 for qj in q])
    assert not zero[idx].any(), f"{name}: an index with q_j = 0 was drawn"
    pval, dof = _chi_square_pvalue(_full_counts(idx, cnt, p.size), probs, m)
    assert dof >= 1
    assert pval > ALPHA, f"{name}: chi-square p-value {pval:.3g} (dof {dof})"


def test_shuffled_draws_have_the_iid_sequence_law():
    p = np.array([0.2, 0.3, 0.5])
    probs, _, _ = _exact_probs(p)
    m = 200_000
    x = multinomial_draws(p, m, shuffle=True, random_state=7)
    assert x.shape == (m,) and x.dtype == np.int64
    assert (np.diff(x) < 0).any()
    pairs = x[0::2] * 3 + x[1::2]  # non-overlapping consecutive pairs: i.i.d. with product law
    observed = np.bincount(pairs, minlength=9)
    pval, _ = _chi_square_pvalue(observed, np.outer(probs, probs).ravel(), m // 2)
    assert pval > ALPHA


# ---------------------------------------------------------------------------------------------
# structure, determinism, threads
# ---------------------------------------------------------------------------------------------


def test_zero_entries_are_never_drawn():
    p = np.zeros(50_000)
    p[[3, 17, 20_000, 49_999]] = [0.1, 0.2, 0.3, 0.4]
    idx, cnt = multinomial_counts(p, 100_000, random_state=1)
    assert set(idx.tolist()) == {3, 17, 20_000, 49_999}
    _check_structure(idx, cnt, 100_000, p.size)


def test_m_zero_and_one():
    p = _zipf(100)
    idx, cnt = multinomial_counts(p, 0, random_state=0)
    assert idx.shape == (0,) and cnt.shape == (0,) and idx.dtype == np.int64
    assert multinomial_draws(p, 0, random_state=0).shape == (0,)
    idx, cnt = multinomial_counts(p, 1, random_state=0)
    assert cnt.tolist() == [1] and 0 <= idx[0] < 100
    d = multinomial_draws(p, 1, shuffle=True, random_state=0)
    assert d.tolist() == idx.tolist()
    # m = 0 still validates p
    with pytest.raises(ValueError, match="p: "):
        multinomial_counts([0.5, 0.2], 0)


def test_determinism_and_generator_state():
    p = _boundary()
    a = multinomial_counts(p, 50_000, random_state=99)
    b = multinomial_counts(p, 50_000, random_state=99)
    c = multinomial_counts(p, 50_000, random_state=100)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    assert not np.array_equal(a[0], c[0])
    rng = ChaChaRng(5)
    first = multinomial_counts(p, 1000, random_state=rng)
    second = multinomial_counts(p, 1000, random_state=rng)
    assert not np.array_equal(first[0], second[0])
    # default: OS-seeded, differs between calls
    assert not np.array_equal(multinomial_draws(p, 1000), multinomial_draws(p, 1000))


def test_draws_match_counts_for_the_same_state():
    p = _with_zeros()
    idx, cnt = multinomial_counts(p, 30_000, random_state=8)
    sorted_draws = multinomial_draws(p, 30_000, random_state=8)
    assert np.array_equal(sorted_draws, np.repeat(idx, cnt))
    shuffled = multinomial_draws(p, 30_000, shuffle=True, random_state=8)
    assert not np.array_equal(shuffled, sorted_draws)
    assert np.array_equal(np.sort(shuffled), sorted_draws)


def test_input_layouts_and_dtypes():
    p = _boundary()
    ref = multinomial_counts(p, 20_000, random_state=3)
    holder = np.zeros(2 * p.size)
    holder[::2] = p
    strided = holder[::2]
    assert not strided.flags.c_contiguous
    got = multinomial_counts(strided, 20_000, random_state=3)
    assert all(np.array_equal(u, v) for u, v in zip(ref, got))
    # the core itself also accepts a strided view (copied once)
    got_core = _core.multinomial_counts(strided, 20_000, ChaChaRng(0))
    _check_structure(*got_core, 20_000, p.size)
    assert multinomial_counts([0, 1, 0], 5, random_state=0)[0].tolist() == [1]
    assert multinomial_counts(np.array([0.5, 0.5], dtype=np.float32), 5, random_state=0)[1].sum() == 5
    assert multinomial_counts([0.25, 0.75], np.int64(4), random_state=0)[1].sum() == 4
    big_endian = np.array([0.25, 0.75], dtype=">f8")
    assert multinomial_counts(big_endian, 4, random_state=0)[1].sum() == 4


_THREAD_SCRIPT = """
import hashlib, sys
import numpy as np
from dpcore.mechanisms.multinomial import multinomial_counts, multinomial_draws
rng = np.random.default_rng(4)
w = rng.random(5 * 8192 + 3)
p = w / w.sum()
h = hashlib.sha256()
for a in multinomial_counts(p, 300_000, random_state=2024):
    h.update(a.tobytes())
h.update(multinomial_draws(p, 100_000, shuffle=True, random_state=2025).tobytes())
print(h.hexdigest())
"""


def test_identical_output_for_any_number_of_threads():
    ns = {}
    exec(_THREAD_SCRIPT.replace("print(h.hexdigest())", "digest = h.hexdigest()"), ns)
    here = ns["digest"]
    for threads in ("1", "3"):
        env = dict(os.environ, RAYON_NUM_THREADS=threads)
        out = subprocess.run(
            [sys.executable, "-c", _THREAD_SCRIPT], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == here, f"RAYON_NUM_THREADS={threads} changed the output"


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------

_GOOD = np.array([0.25, 0.25, 0.5])


@pytest.mark.parametrize(
    "p, m, kwargs, exc, pattern",
    [
        ([0.5, 0.2, 0.3, np.nan], 3, {}, ValueError, r"^p: p\[3\] = nan: "),
        ([0.5, np.inf, 0.5], 3, {}, ValueError, r"^p: p\[1\] = inf: "),
        ([0.5, 0.6, -0.1], 3, {}, ValueError, r"^p: p\[2\] = -0\.1: "),
        ([0.25, 0.25], 3, {}, ValueError, r"^p: must sum to 1 .*got sum 0\.5"),
        ([0.6, 0.5], 3, {}, ValueError, r"^p: must sum to 1 .*got sum 1\.1"),
        ([5.0, 0.0], 3, {}, ValueError, r"^p: must sum to 1 .*p\[0\] = 5\.0"),
        ([[0.5, 0.5]], 3, {}, ValueError, r"^p must be a 1-D array"),
        ([], 3, {}, ValueError, r"^p must be a non-empty"),
        (["a", "b"], 3, {}, TypeError, r"^p must be a numeric array"),
        (_GOOD, -1, {}, ValueError, r"^m must be an integer >= 0"),
        (_GOOD, 3.0, {}, TypeError, r"^m must be an integer"),
        (_GOOD, True, {}, TypeError, r"^m must be an integer"),
        (_GOOD, "3", {}, TypeError, r"^m must be an integer"),
        (_GOOD, 3, {"sum_tol": np.nan}, ValueError, r"^sum_tol"),
        (_GOOD, 3, {"sum_tol": 1.0}, ValueError, r"^sum_tol"),
        (_GOOD, 3, {"sum_tol": -1e-9}, ValueError, r"^sum_tol"),
        (_GOOD, 3, {"random_state": np.random.default_rng(0)}, TypeError, r"random_state"),
        (_GOOD, 3, {"random_state": -1}, ValueError, r"random_state"),
    ],
)
def test_validation_names_the_parameter(p, m, kwargs, exc, pattern):
    with pytest.raises(exc, match=pattern):
        multinomial_counts(p, m, **kwargs)
    with pytest.raises(exc, match=pattern):
        multinomial_draws(p, m, **kwargs)


def test_validation_in_the_core_and_tolerance():
    rng = ChaChaRng(0)
    with pytest.raises(ValueError, match=r"^m: "):
        _core.multinomial_counts(_GOOD, -2, rng)
    with pytest.raises(ValueError, match=r"^sum_tol: "):
        _core.multinomial_draws(_GOOD, 2, rng, False, 2.0)
    with pytest.raises(ValueError, match=r"^p: p\[1\] = -2\.0"):
        _core.multinomial_counts(np.array([3.0, -2.0]), 2, rng)
    with pytest.raises(ValueError, match=r"^m: too large"):
        multinomial_counts(_GOOD, 2**62)
    with pytest.raises(ValueError, match=r"^m must be below 2\*\*63"):
        multinomial_counts(_GOOD, 2**63)
    with pytest.raises(TypeError, match="shuffle"):
        multinomial_draws(_GOOD, 3, shuffle=1)
    # a bad entry in a later block is reported, the first one when several
    p = np.full(3 * BLOCK, 1.0 / (3 * BLOCK))
    p[2 * BLOCK + 5] = -1.0
    p[BLOCK + 1] = np.nan
    with pytest.raises(ValueError, match=rf"^p: p\[{BLOCK + 1}\] = nan"):
        multinomial_counts(p, 3)
    # sums within the tolerance are accepted; outside are not
    multinomial_counts([0.5, 0.5 + 1e-10], 3, random_state=0)
    with pytest.raises(ValueError, match="got sum"):
        multinomial_counts([0.5, 0.5 + 1e-8], 3, random_state=0)
    multinomial_counts([0.5, 0.5 + 1e-8], 3, random_state=0, sum_tol=1e-7)
    multinomial_counts([0.25, 0.75], 3, random_state=0, sum_tol=0.0)


# ---------------------------------------------------------------------------------------------
# the error bound
# ---------------------------------------------------------------------------------------------


def _exact_max_relative_error(p):
    """max over p_j > 0 of |(q_j/T) / (p_j/S) - 1| in exact rational arithmetic."""
    q, t = quantized_weights(p, sum_tol=0.5)
    fr = [Fraction(float(x)) for x in p]
    s = sum(fr)
    return max(abs(Fraction(qj, t) / (x / s) - 1) for qj, x in zip(q, fr) if x > 0)


def test_error_bound_values():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    d = 4 * 2.0**-100 / float(np.sum(p))
    expected = 1.01 * (2.0**-100 / 0.1 + d + 2 * d * d)
    assert probability_error_bound(p) == pytest.approx(expected, rel=1e-15)
    assert _core.multinomial_error_bound(p) == pytest.approx(expected, rel=1e-12)
    assert _exact_max_relative_error(p) <= expected
    # an entry of 3 * 2**-100 has q = 3 exactly, but one just below 4 * 2**-100 also gets q = 3
    # and loses almost 1/4 of its mass: the bound (1.01/3, from the smallest entry) covers it
    p = np.array([0.5, 4 * 2.0**-100 * (1 - 2.0**-50), 3 * 2.0**-100, 0.0])
    p[3] = 0.5 - p[1] - p[2]
    bound = probability_error_bound(p)
    exact = _exact_max_relative_error(p)
    assert 0.24 < exact <= bound < 0.34
    # entries below 2**-100 may get probability 0: no finite bound
    assert probability_error_bound([0.5, 2.0**-101, 0.5]) == math.inf
    assert _core.multinomial_error_bound(np.array([0.5, 2.0**-101, 0.5])) == math.inf
    assert probability_error_bound([0.0, 1.0]) < 1e-29
    with pytest.raises(ValueError, match="positive entry"):
        probability_error_bound([0.0, 0.0])
    with pytest.raises(ValueError, match=r"^p: p\[1\] = nan"):
        probability_error_bound([0.5, np.nan])
    with pytest.raises(ValueError, match=r"^p must be a 1-D"):
        probability_error_bound(np.ones((2, 2)))


@HYP
@given(
    size=st.integers(1, 25),
    alpha=st.sampled_from([0.05, 0.3, 1.0, 5.0]),
    n_zero=st.integers(0, 5),
    m=st.integers(0, 3000),
    seed=st.integers(0, 2**32 - 1),
)
def test_dirichlet_property(size, alpha, n_zero, m, seed):
    gen = np.random.default_rng(seed)
    p = gen.dirichlet(np.full(size, alpha))
    if n_zero and size > 1:
        p[gen.choice(size, min(n_zero, size - 1), replace=False)] = 0.0
        if p.sum() == 0.0:
            p[0] = 1.0
        p = p / p.sum()
    idx, cnt = multinomial_counts(p, m, random_state=seed)
    _check_structure(idx, cnt, m, size)
    assert (p[idx] > 0).all()
    draws = multinomial_draws(p, m, random_state=seed)
    assert np.array_equal(draws, np.repeat(idx, cnt))
    bound = probability_error_bound(p)
    assert bound == pytest.approx(_core.multinomial_error_bound(p), rel=1e-12)
    positive = p[p > 0]
    if positive.min() >= 1e-20:
        assert math.isfinite(bound) and bound <= 1e-9
    if math.isfinite(bound):
        assert _exact_max_relative_error(p) <= bound

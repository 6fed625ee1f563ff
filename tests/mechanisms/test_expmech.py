"""Tests of the streaming exponential mechanism over a nu-net of the ball (``dpcore._core`` net_* / em_*).

* covering: every point of the ball (random directions and radii, including the sphere) is within
  nu of a net point (hypothesis property test, scipy cKDTree);
* the net's enumeration: count == number of points, canonical (lexicographic) order, points in the
  ball, the projection of the grid points;
* distribution: chi-square goodness of fit at alpha = 1e-6 of ``em_sample_many_*`` (and of repeated
  ``em_sample_*`` calls) against the exact exponential-mechanism probabilities computed
  independently with numpy from ``net_points`` (logsumexp), on nets of ~50-300 points, linear and
  RBF kernel-sum scores, a sharp and a flat kappa, with and without the skip test. Cells with an
  expected count below 5 are merged; the threshold ``chi2.isf(1e-6, dof)`` is fixed from the
  expected counts before sampling. Each test's false-failure probability is <= 1e-6.
* the skip test changes nothing: outputs are bit-identical with and without it;
* validation errors name the parameter; a violated ``exponent_bound`` is refused, never clamped;
* progress callback and Ctrl-C.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.spatial import cKDTree
from scipy.special import logsumexp
from scipy.stats import chi2

from dpcore import _core

ALPHA = 1e-6
HYP = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# ---------------------------------------------------------------------------------------------
# the net
# ---------------------------------------------------------------------------------------------


def _ball_points(rng, n, d, r):
    """Random points of the ball: uniform directions; radii uniform in volume, a quarter exactly r."""
    v = rng.standard_normal((n, d))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    rad = r * rng.random(n) ** (1.0 / d)
    rad[: n // 4] = r
    return v * rad[:, None]


@HYP
@given(
    d=st.sampled_from([1, 2, 3]),
    nu_frac=st.floats(0.08, 0.8),
    r=st.floats(0.2, 5.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_every_ball_point_is_within_nu_of_the_net(d, nu_frac, r, seed):
    nu = nu_frac * r
    coords, pts = _core.net_points(d, nu, r, 10**6)
    assert len(coords) == _core.net_count(d, nu, r, 10**6)
    tree = cKDTree(pts)
    x = _ball_points(np.random.default_rng(seed), 2000, d, r)
    dist, _ = tree.query(x)
    assert dist.max() <= nu * (1 + 1e-9), (dist.max(), nu)


@pytest.mark.parametrize("d,nu,r", [(1, 0.05, 1.0), (2, 0.1, 1.0), (3, 0.2, 2.0), (4, 0.3, 1.0)])
def test_net_structure(d, nu, r):
    info = _core.net_info(d, nu, r)
    h, half, t = info["h"], info["half"], info["threshold"]
    assert h <= 2 * nu / np.sqrt(d)
    coords, pts = _core.net_points(d, nu, r, 10**6)
    n = len(coords)
    assert n == _core.net_count(d, nu, r, 10**6)
    assert 0.5 * n < info["count_estimate"] < 2 * n + 10
    # canonical order: lexicographic and without duplicates
    keys = [tuple(c) for c in coords]
    assert keys == sorted(keys) and len(set(keys)) == n
    # membership is ||i||^2 <= T, and every admissible vector of the box is present
    sq = (coords.astype(np.int64) ** 2).sum(axis=1)
    assert sq.max() <= t and np.abs(coords).max() <= half
    grid = np.stack(np.meshgrid(*[np.arange(-half, half + 1)] * d, indexing="ij"), -1).reshape(-1, d)
    assert (((grid**2).sum(1)) <= t).sum() == n
    # every grid point of norm <= r + nu is kept; the net point is its projection on the ball
    g = coords * h
    gn = np.linalg.norm(g, axis=1)
    inside = ((grid * h) ** 2).sum(1) <= (r + nu) ** 2
    assert np.all(((grid**2).sum(1) <= t)[inside])
    assert np.all(np.linalg.norm(pts, axis=1) <= r)
    proj = g * np.minimum(1.0, r / np.maximum(gn, 1e-300))[:, None]
    assert np.allclose(pts, proj, rtol=1e-12, atol=1e-12 * r)


def test_net_validation():
    for args, name in [
        ((0, 0.1, 1.0), "d"),
        ((2, 0.0, 1.0), "nu"),
        ((2, -1.0, 1.0), "nu"),
        ((2, float("nan"), 1.0), "nu"),
        ((2, 0.1, 0.0), "radius"),
        ((2, 0.1, float("inf")), "radius"),
        ((3, 1e-12, 1.0), "nu"),  # index space overflows 2^63
        ((40, 0.01, 1.0), "nu"),
    ]:
        with pytest.raises(ValueError, match=f"^{name}"):
            _core.net_info(*args)
    with pytest.raises(ValueError, match="^max_points"):
        _core.net_points(3, 0.01, 1.0, 1000)
    with pytest.raises(ValueError, match="^max_rows"):
        _core.net_count(3, 0.01, 1.0, 100)
    assert _core.net_count(3, 0.01, 1.0, 10**6) > 10**6


# ---------------------------------------------------------------------------------------------
# the mechanism against the exact probabilities
# ---------------------------------------------------------------------------------------------

RBF_GAMMA = 1.5


def _scorer(kind, d, seed=0):
    rng = np.random.default_rng(100 + d + seed)
    if kind == "linear":
        u = rng.standard_normal(d)
        return {"u": 2.0 * u / np.linalg.norm(u)}  # max |<z, u>| = 2 on the unit ball
    return {"points": rng.uniform(-0.8, 0.8, (5, d)), "coef": rng.uniform(-1.0, 1.0, 5)}


def _exact_scores(kind, pts, sc):
    if kind == "linear":
        return pts @ sc["u"]
    d2 = ((pts[:, None, :] - sc["points"][None, :, :]) ** 2).sum(-1)
    return np.exp(-RBF_GAMMA * d2) @ sc["coef"]


def _bound(kind, sc, kappa):
    """A valid public bound of kappa*|score| on the unit ball."""
    m = 2.0 if kind == "linear" else np.abs(sc["coef"]).sum()
    return kappa * m * (1 + 1e-9)


def _many(kind, d, nu, sc, kappa, n, rng, skip=True):
    if kind == "linear":
        return _core.em_sample_many_linear(d, nu, 1.0, sc["u"], kappa, _bound(kind, sc, kappa), n, rng, _skip_trick=skip)
    return _core.em_sample_many_kernel(
        d, nu, 1.0, sc["points"], sc["coef"], "rbf", RBF_GAMMA, 3, 0.0, 0.0, kappa, _bound(kind, sc, kappa), n, rng,
        _skip_trick=skip,
    )


def _one(kind, d, nu, sc, kappa, rng):
    if kind == "linear":
        return _core.em_sample_linear(d, nu, 1.0, sc["u"], kappa, _bound(kind, sc, kappa), rng)
    return _core.em_sample_kernel(
        d, nu, 1.0, sc["points"], sc["coef"], "rbf", RBF_GAMMA, 3, 0.0, 0.0, kappa, _bound(kind, sc, kappa), rng
    )


def _merged_cells(expected):
    """Group cells (ascending expected count) so that every group expects >= 5 draws."""
    order = np.argsort(expected, kind="stable")
    groups, cur, acc = [], [], 0.0
    for i in order:
        cur.append(i)
        acc += expected[i]
        if acc >= 5.0:
            groups.append(cur)
            cur, acc = [], 0.0
    if cur:
        if groups:
            groups[-1].extend(cur)
        else:
            groups.append(cur)
    return groups


def _chi_square_test(counts, logp, n):
    expected = np.exp(logp) * n
    groups = _merged_cells(expected)
    dof = len(groups) - 1
    assert dof >= 1
    threshold = chi2.isf(ALPHA, dof)  # fixed from the expected counts alone
    e = np.array([expected[g].sum() for g in groups])
    o = np.array([counts[g].sum() for g in groups])
    stat = ((o - e) ** 2 / e).sum()
    return stat, threshold, dof


# (d, nu) -> ~100-300 points: d=1 nu=0.01 -> 101 points, d=2 nu=0.1 -> 185 points
NETS = [(1, 0.01), (2, 0.1)]
# kappa * max|score| ~ 40 (sharp: the skip test prunes almost everything) or ~0.4 (flat)
KAPPAS = {"sharp": 20.0, "flat": 0.2}


@pytest.mark.parametrize("skip", [True, False], ids=["skip", "noskip"])
@pytest.mark.parametrize("sharpness", ["sharp", "flat"])
@pytest.mark.parametrize("kind", ["linear", "rbf"])
@pytest.mark.parametrize("d,nu", NETS)
def test_sample_many_matches_exact_probabilities(d, nu, kind, sharpness, skip):
    sc = _scorer(kind, d)
    coords, pts = _core.net_points(d, nu, 1.0, 10**6)
    n_pts = len(pts)
    assert 50 <= n_pts <= 300
    kappa = KAPPAS[sharpness] * (1.0 if kind == "linear" else 2.0 / np.abs(sc["coef"]).sum())
    a = kappa * np.abs(_exact_scores(kind, pts, sc))
    logp = a - logsumexp(a)
    n = 200_000 if skip else 30_000
    idx = _many(kind, d, nu, sc, kappa, n, _core.ChaChaRng(7 + d), skip=skip)
    assert idx.dtype == np.int64 and idx.shape == (n,)
    assert idx.min() >= 0 and idx.max() < n_pts
    counts = np.bincount(idx, minlength=n_pts)
    stat, threshold, dof = _chi_square_test(counts, logp, n)
    assert stat < threshold, (stat, threshold, dof)


@pytest.mark.parametrize("kind", ["linear", "rbf"])
def test_single_samples_match_exact_probabilities(kind):
    d, nu = 1, 0.02  # 51 points
    sc = _scorer(kind, d, seed=1)
    coords, pts = _core.net_points(d, nu, 1.0, 10**6)
    kappa = 3.0
    a = kappa * np.abs(_exact_scores(kind, pts, sc))
    logp = a - logsumexp(a)
    rng = _core.ChaChaRng(3)
    n = 4000
    counts = np.zeros(len(pts), dtype=np.int64)
    index = {tuple(c): i for i, c in enumerate(coords)}
    for _ in range(n):
        c, z, score, n_scored = _one(kind, d, nu, sc, kappa, rng)
        i = index[tuple(c)]
        counts[i] += 1
        assert n_scored == len(pts)
    np.testing.assert_allclose(z, pts[i], rtol=0, atol=0)
    assert abs(score - _exact_scores(kind, pts[i : i + 1], sc)[0]) < 1e-12
    stat, threshold, dof = _chi_square_test(counts, logp, n)
    assert stat < threshold, (stat, threshold, dof)


@pytest.mark.parametrize("kind", ["linear", "rbf"])
def test_skip_test_is_exact_bit_for_bit(kind):
    d, nu = 2, 0.1
    sc = _scorer(kind, d)
    for kappa in (0.0, 0.3, 30.0):
        a = _many(kind, d, nu, sc, kappa, 3000, _core.ChaChaRng(11), skip=True)
        b = _many(kind, d, nu, sc, kappa, 3000, _core.ChaChaRng(11), skip=False)
        np.testing.assert_array_equal(a, b)
    # and for the streamed single sample on a net of ~3e4 points (several chunks)
    for seed in range(3):
        r1 = _one_net(kind, sc, _core.ChaChaRng(seed), skip=True)
        r2 = _one_net(kind, sc, _core.ChaChaRng(seed), skip=False)
        np.testing.assert_array_equal(r1[0], r2[0])
        assert r1[2] == r2[2]


def _one_net(kind, sc, rng, skip):
    d, nu, kappa = 2, 0.008, 8.0
    b = _bound(kind, sc, kappa)
    if kind == "linear":
        return _core.em_sample_linear(d, nu, 1.0, sc["u"], kappa, b, rng, _skip_trick=skip)
    return _core.em_sample_kernel(
        d, nu, 1.0, sc["points"], sc["coef"], "rbf", RBF_GAMMA, 3, 0.0, 0.0, kappa, b, rng, _skip_trick=skip
    )


def test_reproducible_with_seed_and_fresh_otherwise():
    sc = _scorer("linear", 3)
    run = lambda rng: _core.em_sample_linear(3, 0.05, 1.0, sc["u"], 5.0, 10.0, rng)  # noqa: E731
    a, b = run(_core.ChaChaRng(5)), run(_core.ChaChaRng(5))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    # the generator advances: successive calls differ (with overwhelming probability)
    rng = _core.ChaChaRng(5)
    draws = {tuple(run(rng)[0]) for _ in range(20)}
    assert len(draws) > 1
    # OS-seeded generators work too
    c, z, s, n = run(_core.ChaChaRng())
    assert np.linalg.norm(z) <= 1.0 and n == _core.net_count(3, 0.05, 1.0, 10**6)


def test_key_error_bound():
    assert _core.em_key_error_bound(0.0) == pytest.approx(2.0**-48 + 746 * 2.0**-51, rel=1e-15)
    assert _core.em_key_error_bound(1e12) < 1e-3


# ---------------------------------------------------------------------------------------------
# validation and refusal
# ---------------------------------------------------------------------------------------------


def test_sample_validation_names_parameters():
    rng = _core.ChaChaRng(0)
    u = np.array([1.0, 0.0])
    ok = dict(d=2, nu=0.2, radius=1.0, u=u, kappa=1.0, exponent_bound=2.0, rng=rng)
    cases = [
        (dict(u=np.ones(3)), "u"),
        (dict(u=np.array([np.nan, 0.0])), "u"),
        (dict(kappa=-1.0), "kappa"),
        (dict(kappa=float("inf")), "kappa"),
        (dict(exponent_bound=-1.0), "exponent_bound"),
        (dict(exponent_bound=2e12), "exponent_bound"),
        (dict(exponent_bound=float("nan")), "exponent_bound"),
        (dict(nu=0.0), "nu"),
        (dict(d=0), "d"),
    ]
    for over, name in cases:
        with pytest.raises(ValueError, match=f"^{name}"):
            _core.em_sample_linear(**{**ok, **over})
    with pytest.raises(TypeError):
        _core.em_sample_linear(**{**ok, "rng": 3})
    pts, coef = np.zeros((3, 2)), np.ones(3)
    kok = dict(d=2, nu=0.2, radius=1.0, points=pts, coef=coef, kernel="rbf", gamma=1.0, degree=3, coef0=0.0, intercept_scaling=0.0,
               kappa=1.0, exponent_bound=3.0, rng=rng)
    for over, name in [
        (dict(points=np.zeros((3, 3))), "points"),
        (dict(points=np.full((3, 2), np.inf)), "points"),
        (dict(coef=np.ones(2)), "coef"),
        (dict(coef=np.array([1.0, np.nan, 0.0])), "coef"),
        (dict(kernel="sigmoid"), "kernel"),
        (dict(gamma=0.0), "gamma"),
        (dict(kernel="poly", degree=0), "degree"),
    ]:
        with pytest.raises(ValueError, match=f"^{name}"):
            _core.em_sample_kernel(**{**kok, **over})
    # an empty support set is the zero score (uniform sampling)
    c, z, s, n = _core.em_sample_kernel(**{**kok, "points": np.zeros((0, 2)), "coef": np.zeros(0)})
    assert s == 0.0
    # sample_many is for small nets only
    with pytest.raises(ValueError, match="^nu"):
        _core.em_sample_many_linear(3, 0.002, 1.0, np.ones(3), 1.0, 10.0, 5, rng)


def test_violated_exponent_bound_is_refused_not_clamped():
    rng = _core.ChaChaRng(0)
    u = np.array([3.0, 4.0])  # max |<z, u>| over the unit ball = 5 (attained by net points)
    kappa = 2.0
    coords, pts = _core.net_points(2, 0.05, 1.0, 10**6)
    true_max = kappa * np.abs(pts @ u).max()
    assert true_max > 9.9
    with pytest.raises(ValueError, match="^exponent_bound") as e:
        _core.em_sample_linear(2, 0.05, 1.0, u, kappa, 9.0, rng)
    assert "exceeds the declared exponent_bound" in str(e.value)
    with pytest.raises(ValueError, match="^exponent_bound"):
        _core.em_sample_many_linear(2, 0.05, 1.0, u, kappa, 9.0, 10, rng)
    c, z, s, n = _core.em_sample_linear(2, 0.05, 1.0, u, kappa, 10.0, rng)
    assert kappa * abs(s) <= 10.0
    pts_k = np.array([[0.0, 0.0]])
    for fn in (
        lambda b: _core.em_sample_kernel(2, 0.05, 1.0, pts_k, np.array([4.0]), "rbf", 1.0, 3, 0.0, 0.0, 1.0, b, rng),
        lambda b: _core.em_sample_many_kernel(2, 0.05, 1.0, pts_k, np.array([4.0]), "rbf", 1.0, 3, 0.0, 0.0, 1.0, b, 5, rng),
    ):
        with pytest.raises(ValueError, match="^exponent_bound"):
            fn(3.99)  # the net contains the origin, where the score is 4
        fn(4.0)


# ---------------------------------------------------------------------------------------------
# progress and interruption
# ---------------------------------------------------------------------------------------------


def test_progress_callback_and_its_exception():
    calls = []
    n = _core.net_count(2, 0.001, 1.0, 10**7)
    out = _core.em_sample_linear(2, 0.001, 1.0, np.array([1.0, 1.0]), 1.0, 2.0, _core.ChaChaRng(1),
                                 progress=lambda s, c: calls.append((s, c)))
    assert out[3] == n and calls and calls[-1][0] == n
    assert all(a[0] <= b[0] for a, b in zip(calls, calls[1:]))

    class Stop(Exception):
        pass

    def stop(s, c):
        raise Stop

    with pytest.raises(Stop):
        _core.em_sample_linear(2, 0.001, 1.0, np.array([1.0, 1.0]), 1.0, 2.0, _core.ChaChaRng(1), progress=stop)


def test_ctrl_c_interrupts_a_long_scan(python_sigint):
    import _thread
    import threading

    d, nu = 3, 0.001  # ~3e9 candidates: many seconds, far longer than the interrupt delay
    total = _core.net_info(d, nu, 1.0)["count_estimate"]
    assert total > 1e9
    seen = []
    lock, state = threading.Lock(), {"running": True}

    def fire():
        with lock:
            if state["running"]:
                _thread.interrupt_main()

    timer = threading.Timer(0.3, fire)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            try:
                _core.em_sample_linear(d, nu, 1.0, np.ones(d), 1.0, 2.0, _core.ChaChaRng(2),
                                       progress=lambda s, c: seen.append(s))
            finally:
                with lock:
                    state["running"] = False
    finally:
        timer.cancel()
        timer.join()
    # interrupted mid-scan (the signal is polled between waves, about every 0.1 s)
    assert not seen or max(seen) < 0.5 * total

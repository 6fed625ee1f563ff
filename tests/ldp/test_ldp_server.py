"""Server-side behaviour of the non-interactive LDP estimators (Zheng, Mou & Wang 2017): the zero-estimate
warning of Algorithm 2's recovery radius, the noise-aware ridge of Algorithm 4 (``alpha="auto"``) and the
batched Algorithm-1 path of ``simulate`` (a ``GaussianChannel``). Fixed seeds throughout; the statistical
checks have a false-failure probability ≤ 1e-7 each (were the seeds changed)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from dpcore import ldp

from dpcore.mechanisms import noise
from dpcore.ldp import _records as LR
from dpcore.ldp.kernel import auto_alpha


# ------------------------------------------------------------------------------ Algorithm 2: zero by radius
def _sparse_mean_data(n=20_000, d=200, seed=3):
    """Rows in the unit ball around a 3-sparse mean (||mu||_2 ≈ 0.62, ||mu||_1 = 1)."""
    rng = np.random.default_rng(seed)
    mu = np.zeros(d)
    mu[[1, d // 3, 2 * d // 3]] = [0.5, -0.3, 0.2]
    E = rng.normal(size=(n, d))
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    X = mu + 0.3 * E * rng.uniform(0.0, 1.0, size=(n, 1))
    assert np.linalg.norm(X, axis=1).max() < 1.0
    return X, mu


def _mean_protocol(n, d, tau, **kw):
    return ldp.MeanEstimationProtocol(d, n, 4.0, 1e-6, projection_dim=64, n_groups=10, tau=tau,
                                      projection_seed=11, **kw)


def test_paper_radius_warns_and_estimate_is_zero():
    X, mu = _sparse_mean_data()
    n, d = X.shape
    proto = _mean_protocol(n, d, "paper")
    Y = ldp.simulate(X, None, proto, random_state=5)
    with pytest.warns(ldp.RecoveryRadiusWarning, match="tau=None") as rec:
        est = ldp.LDPMeanEstimator(proto).fit(Y)
    assert len(rec) == 1 and issubclass(ldp.RecoveryRadiusWarning, UserWarning)
    u_l1 = float(np.abs(est.projected_mean_).sum())
    assert proto.tau_ >= u_l1 and proto.tau_ > 50 * u_l1  # the paper's constant is far above ||u||_1 here
    assert est.zero_by_radius_ is True
    assert est.tau_used_ == proto.tau_
    assert np.array_equal(est.mean_, np.zeros(d)) and np.array_equal(est.coef_, np.zeros(d))
    # the shortcut is the LP's own answer: z = 0 is feasible, hence the unique minimiser of ||z||_1
    z, tau = ldp.l1_recovery(proto.projection, est.projected_mean_, proto.tau_)
    assert tau == proto.tau_ and np.abs(z).max() <= 1e-9


def test_default_radius_does_not_warn_and_recovers():
    X, mu = _sparse_mean_data()
    n, d = X.shape
    proto = _mean_protocol(n, d, None)
    Y = ldp.simulate(X, None, proto, random_state=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ldp.RecoveryRadiusWarning)
        est = ldp.LDPMeanEstimator(proto).fit(Y)
    assert est.zero_by_radius_ is False
    assert proto.tau_ < float(np.abs(est.projected_mean_).sum())
    err = float(np.linalg.norm(est.mean_ - mu))
    print(f"\nAlg. 2, tau=None: l2 error {err:.3f} (zero estimate: {np.linalg.norm(mu):.3f})")
    assert err < 0.7 * np.linalg.norm(mu)  # informative (ℓ1 recovery shrinks towards 0 by design)


def test_same_reports_paper_vs_default_radius():
    """Same reports, same G: only the radius differs, so the zero estimate is caused by τ alone."""
    X, _ = _sparse_mean_data(n=5_000, d=60, seed=8)
    n, d = X.shape
    paper, default = _mean_protocol(n, d, "paper"), _mean_protocol(n, d, None)
    assert np.array_equal(paper.projection, default.projection)
    Y = ldp.simulate(X, None, default, random_state=2)
    with pytest.warns(ldp.RecoveryRadiusWarning, match=f"here {default.tau_:.4g}"):
        e1 = ldp.LDPMeanEstimator(paper).fit(Y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ldp.RecoveryRadiusWarning)
        e2 = ldp.LDPMeanEstimator(default).fit(Y)
    assert np.array_equal(e1.projected_mean_, e2.projected_mean_)
    assert e1.zero_by_radius_ and not e2.zero_by_radius_ and np.abs(e2.mean_).sum() > 0


def test_warning_messages_for_default_and_float_radius():
    X, _ = _sparse_mean_data(n=2_000, d=40, seed=4)
    n, d = X.shape
    # the paper's m = ⌈18 ln(1/δ)⌉ = 249 groups of 8 users: even the default radius swallows the signal
    proto = ldp.MeanEstimationProtocol(d, n, 1.0, 1e-6, projection_dim=64, projection_seed=1)
    assert proto.m == 249
    Y = ldp.simulate(X, None, proto, random_state=0)
    with pytest.warns(ldp.RecoveryRadiusWarning, match="More users"):
        est = ldp.LDPMeanEstimator(proto).fit(Y)
    assert est.zero_by_radius_ and not np.any(est.mean_)
    u_l1 = float(np.abs(est.projected_mean_).sum())
    # a float radius at exactly ||u||_1 (z = 0 feasible, boundary included) and just below it
    p_eq = ldp.MeanEstimationProtocol(d, n, 1.0, 1e-6, projection_dim=64, projection_seed=1, tau=u_l1)
    with pytest.warns(ldp.RecoveryRadiusWarning, match="smaller tau"):
        assert ldp.LDPMeanEstimator(p_eq).fit(Y).zero_by_radius_
    p_lt = ldp.MeanEstimationProtocol(d, n, 1.0, 1e-6, projection_dim=64, projection_seed=1, tau=0.5 * u_l1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ldp.RecoveryRadiusWarning)
        est = ldp.LDPMeanEstimator(p_lt).fit(Y)
    assert not est.zero_by_radius_ and np.abs(est.mean_).sum() > 0


# ------------------------------------------------------------------------------ Algorithm 4: alpha="auto"
def _krr_problem(n=16_000, D=10, eps=16.0, seed=21):
    f = lambda X: 0.8 * np.sin(2.5 * X[:, 0]) + 0.3 * np.cos(3.0 * X[:, 1])  # noqa: E731
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    y = np.clip(f(X) + 0.1 * rng.normal(size=n), -1, 1)
    Xt = np.random.default_rng(seed + 1).uniform(-1, 1, size=(1000, 2))
    proto = ldp.KernelRidgeProtocol(2, n, eps, 1e-6, n_components=D, gamma=2.0, rff_seed=seed)
    Z, v = ldp.simulate(X, y, proto, random_state=seed)
    return proto, Z, v, Xt, f(Xt)


def test_auto_alpha_is_the_documented_public_rule():
    proto, Z, v, _, _ = _krr_problem(n=4_000, D=7)
    est = ldp.LDPKernelRidge(proto)
    assert est.alpha == "auto" and est.get_params()["alpha"] == "auto"
    est.fit(Z, v)
    expected = proto.x_channel.sigma**2 * math.sqrt((7 + 1) / 4_000)
    assert est.alpha_ == pytest.approx(expected, rel=1e-14)
    assert auto_alpha(proto) == est.alpha_
    # the fitted system is the documented one
    n = Z.shape[0]
    lhs = (est.Q_ / n + est.alpha_ * np.eye(7)) @ est.coef_
    np.testing.assert_allclose(lhs, Z.T @ v / n, rtol=1e-9, atol=1e-12)
    # an explicit float is used as given (ints too)
    assert ldp.LDPKernelRidge(proto, alpha=0.25).fit(Z, v).alpha_ == 0.25
    assert ldp.LDPKernelRidge(proto, alpha=2).fit(Z, v).alpha_ == 2.0
    with pytest.raises(TypeError, match="KernelRidgeProtocol"):
        auto_alpha(ldp.MeanEstimationProtocol(5, 20, 1.0, 1e-5, projection_dim=3))


def test_auto_alpha_beats_fixed_small_alpha():
    proto, Z, v, Xt, ft = _krr_problem()
    mse = {a: float(np.mean((ldp.LDPKernelRidge(proto, alpha=a).fit(Z, v).predict(Xt) - ft) ** 2))
           for a in ("auto", 1e-3)}
    null = float(np.mean(ft**2))
    print(f"\nAlg. 4 test MSE: auto {mse['auto']:.4f}, alpha=1e-3 {mse[1e-3]:.4g}, predicting 0 {null:.4f}")
    assert mse["auto"] < 0.5 * null  # learns the function
    assert mse["auto"] < 0.1 * mse[1e-3]  # 1e-3 is far below the noise level of the debiased Gram


@pytest.mark.parametrize("alpha", [0.0, -1.0, float("nan"), float("inf"), "bogus", "AUTO", None, True, [0.1]])
def test_invalid_alpha_raises_naming_alpha(alpha):
    proto, Z, v, _, _ = _krr_problem(n=200, D=3)
    with pytest.raises(ValueError, match="alpha"):
        ldp.LDPKernelRidge(proto, alpha=alpha).fit(Z, v)


# ------------------------------------------------------------------------------ simulate: Algorithm 1 batched
def _ball_rows(n, d, radius, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X * (radius * rng.uniform(0.0, 1.0, size=(n, 1)) / np.linalg.norm(X, axis=1, keepdims=True))


@pytest.mark.parametrize("radius, calibration, eps", [(1.0, "analytic", 2.0), (2.5, "analytic", 8.0),
                                                      (1.0, "classic", 0.5)])
def test_simulate_channel_is_the_client_release(radius, calibration, eps):
    d = 6
    ch = ldp.gaussian_channel(d, eps, 1e-6, data_norm=radius, calibration=calibration)
    X = _ball_rows(300, d, radius, 1)
    R = ldp.simulate(X, None, ch, random_state=77)
    assert R.shape == X.shape
    # bit-identical to the batched row release the experiments used
    assert np.array_equal(R, LR.release_rows(X, ch, noise.check_random_state(77)))
    # one row: bit-identical to the client function with the same parameters and seed
    one = ldp.simulate(X[:1], None, ch, random_state=9)[0]
    z = ldp.privatize_vector(X[0], eps, 1e-6, data_norm=radius, calibration=calibration, random_state=9)
    assert np.array_equal(one, z)


def test_simulate_channel_law():
    """Each report is x + N(0, σ² I): coordinate means and variances of the residuals, exact tests
    (z and χ² quantiles) with Bonferroni over 2·d·2 tails at total level 1e-7."""
    n, d = 40_000, 4
    ch = ldp.gaussian_channel(d, 1.0, 1e-5)
    X = _ball_rows(n, d, 1.0, 2)
    res = ldp.simulate(X, None, ch, random_state=123) - X
    level = 1e-7 / (4 * d)
    zmax = stats.norm.isf(level)
    zs = res.mean(axis=0) / (ch.sigma / math.sqrt(n))
    assert np.all(np.abs(zs) < zmax), zs
    q = (res**2).sum(axis=0) / ch.sigma**2  # χ²_n per coordinate (the 2^-40 grid rounding is negligible)
    assert np.all(q > stats.chi2.ppf(level, n)) and np.all(q < stats.chi2.isf(level, n)), q / n
    # independent coordinates and rows: correlation of neighbouring coordinates ~ N(0, 1/n)
    c = np.corrcoef(res.T)[np.triu_indices(d, 1)]
    assert np.all(np.abs(c) * math.sqrt(n) < stats.norm.isf(1e-7 / (2 * c.size))), c


def test_simulate_channel_validation():
    ch = ldp.gaussian_channel(5, 1.0, 1e-5, data_norm=2.0)
    X = _ball_rows(30, 5, 2.0, 3)
    big = X.copy()
    big[7] *= 1.6 / np.linalg.norm(big[7]) * 2.0  # norm 3.2 > radius 2
    with pytest.raises(ValueError, match="row 7 has L2 norm"):
        ldp.simulate(big, None, ch, random_state=0)
    clipped = ldp.simulate(big, None, ch, random_state=0, clip=True)
    assert clipped.shape == big.shape
    zc = ldp.privatize_vector(big[7], 1.0, 1e-5, data_norm=2.0, clip=True, random_state=4)
    one = ldp.simulate(big[7:8], None, ch, random_state=4, clip=True)[0]
    np.testing.assert_allclose(one, zc, rtol=0, atol=1e-9)  # same clipping (norm summation may differ by an ulp)
    with pytest.raises(ValueError, match="y must be None"):
        ldp.simulate(X, np.zeros(30), ch, random_state=0)
    with pytest.raises(ValueError, match="y must be None"):
        ldp.simulate(X, 0.0, ch, random_state=0)
    with pytest.raises(ValueError, match="features"):
        ldp.simulate(X[:, :4], None, ch, random_state=0)
    with pytest.raises(ValueError, match="NaN"):
        bad = X.copy()
        bad[0, 0] = np.nan
        ldp.simulate(bad, None, ch, random_state=0)
    with pytest.raises(TypeError):
        ldp.simulate(X.astype(str), None, ch, random_state=0)
    with pytest.raises(TypeError, match="GaussianChannel"):
        ldp.simulate(X, None, "channel", random_state=0)
    mp = ldp.MeanEstimationProtocol(5, 30, 1.0, 1e-5, projection_dim=3)
    with pytest.raises(ValueError, match="y must be None"):
        ldp.simulate(X / 2.0, np.zeros(30), mp, random_state=0)

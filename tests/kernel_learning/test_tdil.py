"""Tests of dpcore.TDIL (Jain & Thakurta 2013, Algorithm 3): calibration (paper constants, the
corrected EM scale, the tight variant), an audit of the exponential-mechanism step on a
neighbouring pair (the paper's printed scale is caught), the linear-kernel log-concave-mixture
sampler (exact t-marginal, agreement with the generic net sampler), cost refusal, end-to-end
behaviour, accountant, persistence."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

import dpcore
from dpcore import BudgetAccountant, KernelRelease, _core
from dpcore.audit import audit
from dpcore.mechanisms.exponential import LinearBallEM, snap_to_net, t_logpdf
from dpcore.mechanisms.noise import ChaChaRng
from dpcore.kernel_learning.tdil import TDIL, TDILCostError, tdil_calibration


class LinearExact:
    """Closed-form exact linear-kernel SVM optimum when λ > max ||x||² (all margins < 1)."""

    tol = 1e-300
    _loss = "hinge"
    classes_ = np.array([-1.0, 1.0])

    def __init__(self, X, y, lam):
        X = np.asarray(X, dtype=np.float64)
        n = X.shape[0]
        self.X_fit_, self.n_samples_fit_, self.lam, self.lipschitz_ = X, n, float(lam), 1.0
        self.mu_ = np.asarray(y, dtype=np.float64) / (lam * n)
        self.kernel_params_ = dict(kernel="linear", gamma=1.0, degree=3, coef0=1.0)
        w = self.mu_ @ X
        assert np.all(y * (X @ w) < 1.0)
        self.duality_gap_ = 0.0
        self.w_error_bound_ = 0.0
        self.w_norm_ = float(np.linalg.norm(w))


def ball(rng, m, d):
    Z = rng.normal(size=(m, d))
    return Z / np.maximum(1.0, np.linalg.norm(Z, axis=1))[:, None]


# ------------------------------------------------------------------------------ calibration
def test_paper_constants_and_corrected_em_scale():
    n, lam, eps, delta, beta, d = 100_000, 0.01, 1.0, 1e-6, 0.05, 2
    c = tdil_calibration(n=n, d=d, lam=lam, lipschitz=1.0, r_phi_sq=1.0, feature_lipschitz=1.0, w_error_bound=0.0,
                         fp_error=0.0, epsilon=eps, delta=delta, beta=beta, norm_bound=10.0)
    log_d = math.log(4 / delta)
    B = math.floor(n * eps / (100 * log_d))
    assert c.B == B
    eps0 = n * eps * lam / (10 * math.sqrt(B) * log_d)
    assert c.epsilon0 == pytest.approx(eps0, rel=1e-12)
    assert c.sigma == pytest.approx(4 / eps0 * math.log(2 * B / beta), rel=1e-12)
    assert c.eta == pytest.approx(c.sigma / 4, rel=1e-12)
    assert c.net_radius_paper == pytest.approx(d / (eps0 * n), rel=1e-12)
    S = 2 / (lam * n)
    assert c.sensitivity == pytest.approx(S, rel=1e-9)
    # corrected EM factor = printed factor × S
    assert c.kappa == pytest.approx(c.epsilon0_printed_em_scale * S, rel=1e-9)
    assert c.epsilon_em == pytest.approx(eps0 * S / 2, rel=1e-6) and c.epsilon_laplace == pytest.approx(2 * eps0 * S, rel=1e-9)
    assert c.epsilon_spent <= eps
    tight = tdil_calibration(n=n, d=d, lam=lam, lipschitz=1.0, r_phi_sq=1.0, feature_lipschitz=1.0, w_error_bound=0.0,
                             fp_error=0.0, epsilon=eps, delta=delta, beta=beta, norm_bound=10.0, mode="tight")
    assert tight.epsilon_spent == pytest.approx(eps, rel=1e-6) and tight.epsilon_spent <= eps
    assert tight.epsilon0 > c.epsilon0 and tight.sigma < c.sigma
    with pytest.raises(ValueError, match="B ="):
        tdil_calibration(n=100, d=d, lam=lam, lipschitz=1.0, r_phi_sq=1.0, feature_lipschitz=1.0, w_error_bound=0.0,
                         fp_error=0.0, epsilon=eps, delta=delta, beta=beta, norm_bound=10.0)


# ------------------------------------------------------------------------------ EM audit
def _em_pair(n=40, lam=2.0):
    """x = 1 (d = 1) everywhere; B has balanced labels (w*_B = 0), A one label flipped
    (w*_A = 2/(λn) = S): the worst case of the score sensitivity, and B's EM is uniform."""
    X = np.ones((n, 1))
    yB = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    yA = yB.copy()
    yA[1] = 1.0
    return LinearExact(X, yA, lam), LinearExact(X, yB, lam)


def test_audit_of_the_exponential_mechanism_step_and_the_printed_scale_is_caught():
    """One EM step of TDIL (w_t = 0) with the score κ|<z, w_t − w*>|: with κ from the calibration
    it is 2κS-DP. κ is set so that the claim 2κS is 1 (via ε); the paper's printed factor
    (1/S = λn/2 = 40 times larger here) is a broken copy and must be caught."""
    mA, mB = _em_pair()
    S = 2 / (2.0 * 40)
    kappa = 0.5 / S  # claim: 2κS = 1
    d, nu, r = 1, 0.05, 1.0
    _, pts = _core.net_points(d, nu, r, 10_000)
    eb = kappa * 1.0 * 2.0 + 1.0  # |score| ≤ κ·r·||w*||, ||w*|| ≤ 1/λ = 0.5

    def sampler_for(k):
        def sampler(model, n, seed):
            u = -(model.mu_ @ model.X_fit_)
            idx = _core.em_sample_many_linear(d, nu, r, np.ascontiguousarray(u), k, eb * k / kappa, n, ChaChaRng(seed))
            return np.abs(pts[np.asarray(idx), 0])
        return sampler

    thresholds = np.linspace(0.0, 0.95, 20)  # on |z|, fixed before sampling
    res = audit(sampler_for(kappa), mA, mB, n_samples=200_000, thresholds=thresholds, random_state=5)
    res.assert_private(1.0 + 4 * float(_core.em_key_error_bound(eb)))
    assert res.epsilon_lower_bound > 0.1  # the pair is informative: the honest EM is not flat
    broken = audit(sampler_for(kappa * 40), mA, mB, n_samples=200_000, thresholds=thresholds, random_state=6)
    assert broken.epsilon_lower_bound > 1.5, str(broken)
    with pytest.raises(AssertionError, match="refuted"):
        broken.assert_private(1.0)


# ------------------------------------------------------------------------------ linear special path
@pytest.mark.parametrize("a,d", [(0.0, 3), (3.0, 2), (40.0, 4), (0.7, 1), (300.0, 3)])
def test_t_marginal_is_exact(a, d):
    s = LinearBallEM(ChaChaRng(3))
    ts = np.array([s.sample_t(a, d, 1.0) for _ in range(20_000)])
    ref = lambda t: np.exp(t_logpdf(t, a, d, 1.0) - a)  # noqa: E731
    Z = integrate.quad(ref, 0, 1, limit=400, points=[0.9, 0.99, 0.999])[0]
    grid = np.linspace(0, 1, 2001)
    pdf = ref(grid)
    cdf_grid = np.concatenate([[0], np.cumsum((pdf[1:] + pdf[:-1]) / 2 * np.diff(grid))]) / Z
    res = stats.kstest(ts, lambda x: np.interp(x, grid, cdf_grid))
    # α = 1e-6 critical value of the KS statistic for m = 20,000, plus the trapezoid error
    assert res.statistic < math.sqrt(-math.log(0.5e-6) / 2) / math.sqrt(len(ts)) + 2e-3


def test_continuous_sampler_agrees_with_the_generic_net_sampler():
    """Small problem: both samplers target exp(κ|<z, u>|) on the disc; compare |<z, û>| by a
    two-sample KS test at α = 1e-6 (the net's discretisation is far below the test's resolution)."""
    d, nu, r = 2, 0.01, 1.0
    u = np.array([3.0, -1.0])
    kappa = 1.5
    m = 20_000
    _, pts = _core.net_points(d, nu, r, 10**6)
    idx = _core.em_sample_many_linear(d, nu, r, u, kappa, kappa * np.linalg.norm(u) + 1, m, ChaChaRng(1))
    uh = u / np.linalg.norm(u)
    net_t = np.abs(pts[np.asarray(idx)] @ uh)
    s = LinearBallEM(ChaChaRng(2))
    cont = np.array([s.sample(u, kappa, r) for _ in range(m)])
    snapped = np.array([snap_to_net(z, nu, r)[1] for z in cont])
    assert np.all(np.linalg.norm(snapped - cont, axis=1) <= nu * (1 + 1e-9))
    res = stats.ks_2samp(net_t, np.abs(snapped @ uh))
    assert res.statistic < 2.72 * math.sqrt(2 / m)  # α = 1e-6 critical value


def test_snap_returns_net_points():
    d, nu, r = 2, 0.1, 1.0
    coords, pts = _core.net_points(d, nu, r, 10**5)
    known = {tuple(c) for c in np.asarray(coords)}
    rng = np.random.default_rng(0)
    for z in ball(rng, 200, d):
        c, p = snap_to_net(z, nu, r)
        assert tuple(c) in known
        assert np.linalg.norm(p) <= r + 1e-12 and np.linalg.norm(p - z) <= nu * (1 + 1e-9)


# ------------------------------------------------------------------------------ end to end
@pytest.fixture(scope="module")
def svm2d():
    rng = np.random.default_rng(0)
    X = ball(rng, 3000, 2)
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0.1, 1.0, -1.0)
    return dpcore.KernelSVM(lam=0.01, kernel="linear", tol=1e-9).fit(X, y)


def test_fit_release_reproducible_and_persisted(svm2d, tmp_path):
    kw = dict(calibration="tight", net_radius=0.02, random_state=4)
    a = TDIL(svm2d, 50.0, 1e-6, **kw).fit()
    b = TDIL(svm2d, 50.0, 1e-6, **kw).fit()
    assert a.privacy_.epsilon_spent <= 50.0
    assert len(a.trace_) == a.privacy_.B
    # the trace holds only functions of the release (no EM score <z, w_t - w*>)
    assert all(set(t) == {"round", "update"} for t in a.trace_)
    assert sum(t["update"] for t in a.trace_) == a.n_updates_
    np.testing.assert_array_equal(a.release_.mu, b.release_.mu)
    assert a.release_.points.shape[0] == a.n_updates_
    assert np.all(np.linalg.norm(a.release_.points, axis=1) <= 1 + 1e-12)
    p = tmp_path / "tdil.json"
    a.save(p)
    r = KernelRelease.load(p)
    assert r.mechanism == "TDIL" and r.calibration["net_size"] == a.net_size_
    Q = ball(np.random.default_rng(1), 100, 2)
    np.testing.assert_array_equal(r.decision_function(Q), a.decision_function(Q))
    # the continuous sampler needs a model without intercept (its score |<z, u>| has no intercept coordinate)
    X0 = svm2d.X_fit_
    svm0 = dpcore.KernelSVM(lam=0.01, kernel="linear", tol=1e-9, intercept_scaling=0.0).fit(
        X0, np.where(X0[:, 0] + 0.5 * X0[:, 1] > 0.1, 1.0, -1.0))
    c = TDIL(svm0, 50.0, 1e-6, calibration="tight", sampler="continuous", net_radius=0.02, random_state=4).fit()
    assert c.privacy_.delta_fp == pytest.approx(1e-7) and c.privacy_.epsilon_spent <= 50.0
    assert c.delta_fp_used_ <= c.privacy_.delta_fp and c.stop_reason_ == "completed"


def test_cost_refusal_happens_before_any_charge(svm2d):
    acc = BudgetAccountant(10.0, 1e-5)
    t = TDIL(svm2d, 1.0, 1e-6, net_radius=1e-4, max_candidates=1e6, accountant=acc)
    with pytest.raises(TDILCostError, match="max_candidates"):
        t.fit()
    assert acc.spent == (0.0, 0.0)
    ok = TDIL(svm2d, 1.0, 1e-6, net_radius=0.05, accountant=acc, random_state=0).fit()
    assert acc.spent == pytest.approx((1.0, 1e-6)) and ok.privacy_.B >= 1


def test_validation(svm2d):
    with pytest.raises(ValueError, match="epsilon"):
        TDIL(svm2d, 0.0, 1e-6).plan()
    with pytest.raises(ValueError, match="delta"):
        TDIL(svm2d, 1.0, 1.0).plan()
    with pytest.raises(ValueError, match="beta"):
        TDIL(svm2d, 1.0, 1e-6, beta=1.5).plan()
    with pytest.raises(ValueError, match="calibration"):
        TDIL(svm2d, 1.0, 1e-6, calibration="loose").plan()
    with pytest.raises(ValueError, match="net_radius"):
        TDIL(svm2d, 1.0, 1e-6, net_radius=-1.0).plan()
    with pytest.raises(ValueError, match="X_fit_"):
        TDIL(svm2d, 1.0, 1e-6, data_norm=0.5).plan()
    rbf = dpcore.KernelSVM(lam=0.1, kernel="rbf", gamma=1.0, tol=1e-9).fit(svm2d.X_fit_[:200], np.sign(svm2d.X_fit_[:200, 0]) + (svm2d.X_fit_[:200, 0] == 0))
    with pytest.raises(ValueError, match="linear kernel"):
        TDIL(rbf, 1.0, 1e-6, sampler="continuous").plan()
    with pytest.raises(dpcore.kernel_learning.svm.NotFittedError):
        TDIL(svm2d, 1.0, 1e-6).predict(np.zeros((1, 2)))

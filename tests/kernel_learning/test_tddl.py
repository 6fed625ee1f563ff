"""Tests of dpcore.TDDL (Jain & Thakurta 2013, Algorithm 2): exact constrained least squares,
sensitivity fuzzing with real solvers, calibration, privacy audits (with broken copies caught),
norm bounds, validation, accountant, persistence."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from scipy import optimize

from dpcore._internal.fp import budget_grid_down
import dpcore
from dpcore import TDDL, BudgetAccountant, BudgetExceededError, KernelRelease
from dpcore.audit import audit
from dpcore.accounting.calibrate import per_step_epsilon
from dpcore.kernel_learning.tddl import ball_constrained_lstsq

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("_pinp_worker", HERE / "_pinp_worker.py")
W = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(W)


ExactModel = W.ExactModel


def rbf(A, B, gamma=1.0):
    return np.exp(-gamma * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))


# ------------------------------------------------------------------------------ least squares
def test_lstsq_unconstrained_interpolates_and_matches_min_norm_lstsq():
    rng = np.random.default_rng(0)
    Z = W.unit_ball(rng, 30, 3)
    K = rbf(Z, Z, 2.0)
    y = rng.normal(size=30)
    alpha, info = ball_constrained_lstsq(K, y, 1e6)
    assert not info["constrained"] and info["rho"] == 0.0
    ref = np.linalg.lstsq(K, y, rcond=None)[0]
    np.testing.assert_allclose(K @ alpha, K @ ref, atol=1e-6)
    # rank-deficient K (duplicated points): predictions are the least-squares fit
    Z2 = np.vstack([Z[:5], Z[:5]])
    K2 = rbf(Z2, Z2)
    y2 = rng.normal(size=10)
    a2, info2 = ball_constrained_lstsq(K2, y2, 1e6)
    assert info2["rank"] == 5
    np.testing.assert_allclose(K2 @ a2, K2 @ np.linalg.lstsq(K2, y2, rcond=None)[0], atol=1e-8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), T=st.integers(2, 10), frac=st.floats(0.05, 0.95))
def test_lstsq_constrained_is_the_exact_optimum(seed, T, frac):
    rng = np.random.default_rng(seed)
    Z = W.unit_ball(rng, T, 2)
    K = rbf(Z, Z, 3.0)
    y = rng.normal(size=T) * 3
    free, info0 = ball_constrained_lstsq(K, y, math.inf)
    C = frac * info0["norm"]
    alpha, info = ball_constrained_lstsq(K, y, C)
    norm = math.sqrt(max(alpha @ K @ alpha, 0.0))
    assert info["constrained"]
    assert norm <= C * (1 + 1e-7) and norm >= C * (1 - 1e-6)  # αᵀKα recomputed with roundoff
    obj = lambda a: float(np.sum((K @ a - y) ** 2))  # noqa: E731
    # independent solver: SLSQP on the representer form from several starts
    best = math.inf
    for s in range(3):
        a0 = np.random.default_rng(s).normal(size=T) * 1e-3
        res = optimize.minimize(obj, a0, method="SLSQP", constraints=[dict(type="ineq", fun=lambda a: C * C - a @ K @ a)],
                                options=dict(maxiter=500, ftol=1e-14))
        if res.success and res.x @ K @ res.x <= C * C * (1 + 1e-7):
            best = min(best, obj(res.x))
    assert obj(alpha) <= best + 1e-7 * max(1.0, best)


def test_lstsq_validation_and_zero_radius():
    K = np.eye(3)
    with pytest.raises(ValueError, match="K must be"):
        ball_constrained_lstsq(np.eye(2), np.ones(3), 1.0)
    with pytest.raises(ValueError, match="radius"):
        ball_constrained_lstsq(K, np.ones(3), -1.0)
    a, info = ball_constrained_lstsq(K, np.ones(3), 0.0)
    assert np.all(a == 0) and info["norm"] == 0.0


# ------------------------------------------------------------------------------ sensitivity
def _svm(X, y, lam):
    return dpcore.KernelSVM(lam=lam, kernel="rbf", gamma=1.0, tol=1e-9).fit(X, y)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), lam=st.sampled_from([0.05, 0.2, 1.0]))
def test_sensitivity_bounds_hold_for_real_neighbouring_fits(seed, lam):
    """Noise-free: prediction differences of two real fits on neighbouring data are within the
    claimed per-point (Laplace) and L2 (Gaussian) sensitivities, and ||w|| within the norm one."""
    rng = np.random.default_rng(seed)
    n, T = 30, 12
    X = W.unit_ball(rng, n, 2)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    y[:2] = [-1.0, 1.0]
    X2, y2 = X.copy(), y.copy()
    j = int(rng.integers(n))
    X2[j] = W.unit_ball(rng, 1, 2)[0]
    y2[j] = -y[j]
    if len(set(y2)) < 2:
        return
    mA, mB = _svm(X, y, lam), _svm(X2, y2, lam)
    Z = W.unit_ball(rng, T, 2)
    if seed % 2:
        Z[: T // 2] = X[j]  # points where the change is largest
    tg = TDDL(mA, 1.0, 1e-6, data_norm=1.0, noise="gaussian", norm_bound="private")
    tl = TDDL(mA, 1.0, 1e-6, data_norm=1.0, noise="laplace")
    cg, cl = tg.prepare(Z)["cal"], tl.prepare(Z)["cal"]
    diff = mA.decision_function(Z) - mB.decision_function(Z)
    assert np.max(np.abs(diff)) <= cl.sensitivity
    assert np.linalg.norm(diff) <= cg.sensitivity
    assert abs(mA.w_norm_ - mB.w_norm_) <= cg.norm_sensitivity


# ------------------------------------------------------------------------------ calibration
def test_calibration_numbers():
    m = ExactModel(np.full((40, 1), 0.5), np.ones(40), 2.0, 1.0)
    Z = np.full((8, 1), 0.5)
    lap = TDDL(m, 1.0, 1e-6, data_norm=1.0, noise="laplace", norm_bound="public").prepare(Z)["cal"]
    S = 2 * 1 * 1 / (2.0 * 40)
    assert lap.sensitivity == pytest.approx(S, rel=1e-9) and lap.sensitivity >= S
    e0 = lap.epsilon_per_point
    assert e0 == per_step_epsilon(lap.epsilon_predictions, 8, 1e-6)
    adv = math.sqrt(2 * 8 * math.log(1e6)) * e0 + 8 * e0 * math.expm1(e0)
    assert min(adv, 8 * e0) <= 1.0
    assert lap.noise_scale == pytest.approx(S / e0, rel=1e-6)
    gau = TDDL(m, 1.0, 1e-6, data_norm=1.0, noise="gaussian", norm_bound="private", norm_epsilon_share=0.25).prepare(Z)["cal"]
    # Z = 8 copies of one point: K_ZZ = all-ones, λ_max = 8, so Δ₂ = sqrt(8)·S (tight)
    assert gau.lambda_max_upper == pytest.approx(8.0, rel=1e-9) and gau.lambda_max_upper >= 8.0
    assert gau.sensitivity == pytest.approx(math.sqrt(8) * S, rel=1e-9)
    assert gau.epsilon_norm == pytest.approx(0.25) and gau.epsilon_predictions == pytest.approx(0.75)
    # δ is calibrated for on the budget grid (issue 25: dpcore._internal.fp.budget_grid_down)
    plan = dpcore.mechanisms.noise.gaussian_plan(gau.sensitivity, gau.epsilon_predictions, budget_grid_down(1e-6), dim=8)
    assert gau.noise_scale == plan.sigma
    # public norm bound: min(2 L R/λ, sqrt(2 ℓ(0)/λ)) + err
    assert gau.norm_bound_public == pytest.approx(min(2 / 2.0, math.sqrt(2 / 2.0)), rel=1e-6)


# ------------------------------------------------------------------------------ audits
_worst_pair = W.worst_pair


class _HalfNoiseTDDL(TDDL):
    """Deliberately broken copy: half the sensitivity, i.e. half the noise."""

    _sensitivity_factor = 0.5


def _tddl_sampler(cls, Z, **kw):
    def sampler(model, n, seed):
        t = cls(model, random_state=seed, **kw)
        prep = t.prepare(Z)
        return t._noisy_predictions(prep, dpcore.mechanisms.noise.check_random_state(seed), n)
    return sampler


def test_audit_gaussian_release_on_the_worst_case_pair_and_catch_half_noise():
    """Z = T copies of the changed training point makes ||v_A − v_B||₂ = Δ₂ exactly, so the
    projection on the difference direction is a tight 1-D Gaussian mechanism."""
    mA, mB = _worst_pair()
    T = 4
    Z = np.full((T, 1), 0.5)
    kw = dict(epsilon=1.0, delta=1e-5, data_norm=1.0, noise="gaussian", norm_bound="public")
    cal = TDDL(mA, **kw).prepare(Z)["cal"]
    vA, vB = mA.decision_function(Z), mB.decision_function(Z)
    assert np.linalg.norm(vA - vB) == pytest.approx(cal.sensitivity, rel=1e-6)
    u = (vA - vB) / np.linalg.norm(vA - vB)
    mid = float(u @ (vA + vB) / 2)
    thresholds = mid + cal.noise_scale * np.linspace(0.0, 4.0, 9)  # fixed before sampling
    res = audit(_tddl_sampler(TDDL, Z, **kw), mA, mB, n_samples=1_000_000, direction=u, thresholds=thresholds,
                delta=1e-5, random_state=11)
    res.assert_private(1.0)
    broken = audit(_tddl_sampler(_HalfNoiseTDDL, Z, **kw), mA, mB, n_samples=1_000_000, direction=u,
                   thresholds=thresholds, delta=1e-5, random_state=12)
    assert broken.epsilon_lower_bound > 1.1, str(broken)
    with pytest.raises(AssertionError, match="refuted"):
        broken.assert_private(1.0)


def test_audit_laplace_release_and_catch_half_noise():
    mA, mB = _worst_pair()
    Z = np.full((1, 1), 0.5)  # T = 1: the single point gets the whole ε
    kw = dict(epsilon=1.0, delta=1e-6, data_norm=1.0, noise="laplace", norm_bound="public")
    cal = TDDL(mA, **kw).prepare(Z)["cal"]
    vA = float(mA.decision_function(Z)[0])
    thresholds = vA + cal.noise_scale * np.linspace(-0.5, 3.0, 8)
    sampler = lambda cls: (lambda m, n, s: _tddl_sampler(cls, Z, **kw)(m, n, s)[:, 0])  # noqa: E731
    res = audit(sampler(TDDL), mA, mB, n_samples=200_000, thresholds=thresholds, random_state=3)
    res.assert_private(cal.epsilon_predictions)
    broken = audit(sampler(_HalfNoiseTDDL), mA, mB, n_samples=200_000, thresholds=thresholds, random_state=4)
    assert broken.epsilon_lower_bound > 1.2, str(broken)


# ------------------------------------------------------------------------------ behaviour
@pytest.fixture(scope="module")
def svm():
    rng = np.random.default_rng(1)
    X = W.unit_ball(rng, 200, 3)
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1.0, -1.0)
    return dpcore.KernelSVM(lam=0.01, kernel="rbf", gamma=2.0, tol=1e-9).fit(X, y), X, y


def test_huge_epsilon_reproduces_the_model_on_Z(svm):
    m, X, _ = svm
    Z = W.unit_ball(np.random.default_rng(2), 40, 3)
    t = TDDL(m, 1e9, 1e-6, data_norm=1.0, noise="gaussian", norm_bound="public", random_state=0).fit(Z)
    np.testing.assert_allclose(t.decision_function(Z), m.decision_function(Z), atol=2e-3)  # σ ∝ 1/sqrt(ε) for huge ε
    assert np.array_equal(t.release_.points, Z)  # expansion over the public points only
    assert not np.isin(t.release_.points, X).all(axis=1).any()


def test_norm_bounds(svm):
    m, _, _ = svm
    Z = W.unit_ball(np.random.default_rng(3), 30, 3)
    pub = TDDL(m, 1.0, 1e-6, data_norm=1.0, noise="gaussian", norm_bound="public", random_state=0).fit(Z)
    assert pub.norm_bound_ == pytest.approx(min(2 / m.lam, math.sqrt(2 / m.lam)), rel=1e-3)
    assert pub.release_.norm() <= pub.norm_bound_ * (1 + 1e-9)
    dec = TDDL(m, 1.0, 1e-6, data_norm=1.0, noise="gaussian", norm_bound=0.5, random_state=0).fit(Z)
    assert dec.norm_bound_ == 0.5 and dec.release_.norm() <= 0.5 * (1 + 1e-9)
    # private: at large ε the bound is just above ||w|| (w.p. ≥ 1 − norm_beta)
    prv = TDDL(m, 1e4, 1e-6, data_norm=1.0, noise="gaussian", norm_bound="private", random_state=0).fit(Z)
    assert m.w_norm_ <= prv.norm_bound_ <= m.w_norm_ + 0.05


def test_same_seed_reproducible_default_secure(svm):
    m, _, _ = svm
    Z = W.unit_ball(np.random.default_rng(4), 20, 3)
    a = TDDL(m, 1.0, 1e-6, data_norm=1.0, random_state=7).fit(Z).release_.mu
    b = TDDL(m, 1.0, 1e-6, data_norm=1.0, random_state=7).fit(Z).release_.mu
    c = TDDL(m, 1.0, 1e-6, data_norm=1.0).fit(Z).release_.mu
    d = TDDL(m, 1.0, 1e-6, data_norm=1.0).fit(Z).release_.mu
    assert np.array_equal(a, b) and not np.array_equal(c, d)


def test_accountant_charged_before_noise(svm):
    m, _, _ = svm
    Z = W.unit_ball(np.random.default_rng(5), 10, 3)
    acc = BudgetAccountant(1.5, 1e-5, accounting="basic")  # the declared (ε, δ) are charged
    TDDL(m, 1.0, 1e-6, data_norm=1.0, accountant=acc, random_state=0).fit(Z)
    assert acc.spent == pytest.approx((1.0, 1e-6))
    t = TDDL(m, 1.0, 1e-6, data_norm=1.0, accountant=acc, random_state=0)
    with pytest.raises(BudgetExceededError):
        t.fit(Z)
    assert not hasattr(t, "release_")


def test_save_load_round_trip_and_tamper(svm, tmp_path):
    m, _, _ = svm
    Z = W.unit_ball(np.random.default_rng(6), 15, 3)
    t = TDDL(m, 2.0, 1e-6, data_norm=1.0, random_state=0).fit(Z)
    p = tmp_path / "rel.json"
    t.save(p)
    r = TDDL.load(p)
    assert isinstance(r, KernelRelease) and r.mechanism == "TDDL"
    assert (r.epsilon, r.delta) == (2.0, budget_grid_down(1e-6))  # as calibrated and charged (the budget grid)
    assert r.calibration["noise"] == "gp" and r.calibration["norm_bound_mode"] == "none"  # the default
    Q = W.unit_ball(np.random.default_rng(7), 50, 3)
    np.testing.assert_array_equal(r.decision_function(Q), t.decision_function(Q))
    np.testing.assert_array_equal(r.predict(Q), t.predict(Q))
    doc = json.loads(p.read_text())
    doc["epsilon"] = 0.5
    p.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="checksum"):
        KernelRelease.load(p)


def test_validation(svm):
    m, X, y = svm
    Z = W.unit_ball(np.random.default_rng(8), 10, 3)
    cases = [
        (dict(epsilon=0.0), "epsilon"), (dict(epsilon=float("nan")), "epsilon"), (dict(delta=1.0), "delta"),
        (dict(delta=0.0), "delta"), (dict(data_norm=-1.0), "data_norm"), (dict(noise="cauchy"), "noise"),
        (dict(norm_bound="maybe"), "norm_bound"), (dict(norm_bound=-2.0), "norm_bound"),
        (dict(norm_epsilon_share=1.0), "norm_epsilon_share"), (dict(norm_beta=0.0), "norm_beta"),
    ]
    base = dict(epsilon=1.0, delta=1e-6, data_norm=1.0)
    for kw, name in cases:
        with pytest.raises(ValueError, match=name):
            TDDL(m, **{**base, **kw}).fit(Z)
    with pytest.raises(ValueError, match="2-D"):
        TDDL(m, **base).fit(Z[0])
    with pytest.raises(ValueError, match="Z"):
        TDDL(m, **base).fit(np.ones((3, 2)))
    with pytest.raises(ValueError, match="NaN|finite"):
        TDDL(m, **base).fit(np.full((3, 3), np.nan))
    far = Z * 3
    with pytest.raises(ValueError, match="outside the declared domain"):
        TDDL(m, **base).fit(far)
    clipped = TDDL(m, **base, clip=True, random_state=0).fit(far)
    assert np.all(np.linalg.norm(clipped.release_.points, axis=1) <= 1 + 1e-12)
    with pytest.raises(ValueError, match="X_fit_"):
        TDDL(m, **{**base, "data_norm": 0.5}).fit(Z * 0.5)
    loose = dpcore.KernelSVM(lam=0.01, kernel="rbf", gamma=2.0, tol=1e-9).fit(X, y)
    loose.w_error_bound_ = 1.0  # certificate worse than the declared tolerance allows
    with pytest.raises(ValueError, match="did not reach its declared tolerance"):
        TDDL(loose, **base).fit(Z)
    with pytest.raises(dpcore.kernel_learning.svm.NotFittedError):
        TDDL(m, **base).predict(Z)
    assert TDDL(m, **base).set_params(epsilon=2.0).get_params()["epsilon"] == 2.0
    with pytest.raises(ValueError, match="Invalid parameter"):
        TDDL(m, **base).set_params(eps=2.0)


@pytest.mark.parametrize("noise,norm_bound", [("gp", None), ("gaussian", "private"), ("laplace", "public")])
def test_a_model_without_support_vectors_releases_like_any_other(noise, norm_bound):
    """mu all zero (possible on private data) must not raise after the charge (it used to: the kernel engine
    refused an empty X): the release is the noisy zero function."""
    import dpcore

    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(50, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    model = dpcore.KernelSVM(lam=0.1, tol=1e-8).fit(X, y)
    model.mu_ = np.zeros_like(model.mu_)
    acc = dpcore.BudgetAccountant(10.0, 1e-3)
    kw = dict(noise=noise) if norm_bound is None else dict(noise=noise, norm_bound=norm_bound)
    rel = dpcore.TDDL(model, 1.0, 1e-6, data_norm=1.0, random_state=0, accountant=acc, **kw).fit(X[:20]).release_
    assert np.isfinite(rel.decision_function(X)).all() and acc.spent[0] > 0

"""TDDL's default noise: the RKHS Gaussian-process mechanism (Hall, Rinaldo & Wasserman 2013; dpcore.kernel_learning.gp).

Checks the jitter lemma, the calibration numbers, that the released noise has covariance σ²·L̂L̂ᵀ
(chi-square / KS at α = 1e-6 on a small problem, fixed seed), and an empirical audit on the worst-case
neighbouring pair that catches two broken copies: σ/2, and *independent* per-point noise of the same
per-answer variance (the failure the GP correlation prevents, exposed by repeated public points).
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import linalg, stats

import dpcore
from dpcore import TDDL
from dpcore.audit import audit
from dpcore._internal.fp import budget_grid_down
from dpcore.accounting.calibrate import gaussian_sigma_analytic
from dpcore.kernel_learning.gp import gp_factor, gp_residual_bound

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("_pinp_worker", HERE / "_pinp_worker.py")
W = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(W)


ExactModel = W.ExactModel


_worst_pair = W.worst_pair


def test_jitter_lemma_holds_and_the_factor_dominates_the_kernel_matrix():
    rng = np.random.default_rng(0)
    for Z in (W.unit_ball(rng, 60, 3), np.full((20, 3), 0.3), np.vstack([W.unit_ball(rng, 10, 3)] * 3)):
        K = dpcore.kernel_matrix(Z, kernel="rbf", gamma=2.0)
        f = gp_factor(K, r_phi_sq=1.0, kernel_error=1e-15)
        assert f.margin > 0 and f.tau > 0 and f.tau < 1e-9  # a tiny jitter, even for rank-deficient K
        M = f.L @ f.L.T
        # L̂L̂ᵀ − K ⪰ margin·I up to the rounding of this check itself
        assert np.linalg.eigvalsh(M - 0.5 * (K + K.T)).min() >= f.margin - 1e-13
    with pytest.raises(ValueError, match="could not be factorised"):
        gp_factor(np.full((3, 3), np.nan), r_phi_sq=1.0, kernel_error=0.0)


def test_calibration_numbers():
    mA, _ = _worst_pair()
    Z = W.unit_ball(np.random.default_rng(1), 12, 1) * 0.9
    t = TDDL(mA, 1.0, 1e-6, data_norm=1.0)  # noise="gp" is the default
    prep = t.prepare(Z)
    cal = prep["cal"]
    assert cal.noise == "gp" and cal.norm_bound_mode == "none" and cal.epsilon_norm == 0.0
    dw = cal.weight_sensitivity
    assert dw == pytest.approx(2 * 1.0 / (mA.lam * 40), rel=1e-9)  # 2 L R_φ/(λ n), exact model: err = 0
    eps1, d1 = cal.epsilon_predictions * (1 - 1e-3), budget_grid_down(1e-6) * (1 - 1e-3)  # δ on the budget grid
    assert cal.noise_scale == gaussian_sigma_analytic(dw, eps1, d1)
    assert cal.epsilon_residual == pytest.approx(1e-3 * cal.epsilon_predictions, rel=1e-9)
    assert cal.epsilon_residual + eps1 <= 1.0 and cal.delta_residual + d1 <= 1e-6
    rho = gp_residual_bound(T=12, sigma=cal.noise_scale, row_norm_max=prep["factor"].row_norm_max,
                            prediction_error=cal.fp_error, value_bound=1.0 / mA.lam + cal.fp_error)
    assert cal.gp_residual_bound == rho and 0 < rho < 1e-10
    assert cal.gp_residual_sigma < 1e-7 * cal.noise_scale  # the float stage costs nothing visible
    # no √λ_max(K_ZZ), no √T: the noise does not grow with the number of public points
    big = TDDL(mA, 1.0, 1e-6, data_norm=1.0).prepare(W.unit_ball(np.random.default_rng(2), 300, 1) * 0.9)["cal"]
    assert big.noise_scale == cal.noise_scale


def test_released_noise_has_covariance_sigma2_LLt():
    """Whitened residuals L̂⁻¹(ŷ − v)/σ are i.i.d. N(0, 1): KS on every coordinate and on the χ²_T of
    the whole vector, α = 1e-6 each (fixed seed)."""
    mA, _ = _worst_pair()
    Z = np.array([[0.5], [0.45], [-0.2], [0.5], [0.9]])  # includes a repeated point
    t = TDDL(mA, 1.0, 1e-6, data_norm=1.0, random_state=0)
    prep = t.prepare(Z)
    Y = t._noisy_predictions(prep, dpcore.mechanisms.noise.check_random_state(5), 100_000)
    v = mA.decision_function(Z)
    Wh = linalg.solve_triangular(prep["factor"].L, (Y - v).T, lower=True).T / prep["cal"].noise_scale
    for j in range(Z.shape[0]):
        assert stats.kstest(Wh[:, j], "norm").pvalue > 1e-6, j
    assert stats.kstest((Wh**2).sum(axis=1), "chi2", args=(Z.shape[0],)).pvalue > 1e-6
    C = np.corrcoef((Y - v).T)
    assert C[0, 3] > 0.999999  # the repeated point gets (almost exactly) the same noise
    assert 0.5 < C[0, 1] < 1.0  # nearby points: strongly correlated, not identical


class _HalfNoise(TDDL):
    _sensitivity_factor = 0.5


class _IndependentNoise(TDDL):
    """Broken copy: independent per-point noise with the *same* per-answer variance σ²·M_tt."""

    def _noisy_predictions(self, prep, rng, n_samples=None):
        cal, k = prep["cal"], prep["info"]["kernel"]
        v = dpcore.kernel_predict(prep["Z"], prep["X_sv"], prep["mu_sv"], **k)
        sd = cal.noise_scale * np.sqrt(np.einsum("ij,ij->i", prep["factor"].L, prep["factor"].L))
        xi = np.asarray(dpcore._core.analytic_release(np.zeros(v.size), 1.0, -40, dpcore.mechanisms.noise.check_random_state(rng),
                                                      n_samples)).reshape(-1, v.size)
        return v + sd * xi


def _sampler(cls, Z, **kw):
    def sampler(model, n, seed):
        t = cls(model, random_state=seed, **kw)
        prep = t.prepare(Z)
        return t._noisy_predictions(prep, dpcore.mechanisms.noise.check_random_state(seed), n)
    return sampler


def test_audit_gp_release_on_the_worst_case_pair_and_catch_broken_copies():
    """Z = 4 copies of the changed training point: the GP noise is (up to the jitter) the same on all
    copies, so the mean of the copies is a tight 1-D Gaussian mechanism with sensitivity Δw·R_φ at
    std σR_φ; independent noise of the same per-answer variance averages down by √4 and is caught."""
    mA, mB = _worst_pair()
    T = 4
    Z = np.full((T, 1), 0.5)
    kw = dict(epsilon=1.0, delta=1e-5, data_norm=1.0)
    cal = TDDL(mA, **kw).prepare(Z)["cal"]
    vA, vB = mA.decision_function(Z), mB.decision_function(Z)
    u = np.ones(T) / math.sqrt(T)
    mid = float(u @ (vA + vB) / 2)
    sd = cal.noise_scale * math.sqrt(T)  # std of u·ŷ under the GP (k(z, z) = 1)
    thresholds = mid + sd * np.linspace(0.0, 4.0, 9)  # fixed before sampling
    res = audit(_sampler(TDDL, Z, **kw), mA, mB, n_samples=1_000_000, direction=u, thresholds=thresholds,
                delta=1e-5, random_state=21)
    res.assert_private(1.0)
    for broken_cls, seed in ((_HalfNoise, 22), (_IndependentNoise, 23)):
        broken = audit(_sampler(broken_cls, Z, **kw), mA, mB, n_samples=1_000_000, direction=u,
                       thresholds=thresholds, delta=1e-5, random_state=seed)
        assert broken.epsilon_lower_bound > 1.1, (broken_cls.__name__, str(broken))
        with pytest.raises(AssertionError, match="refuted"):
            broken.assert_private(1.0)


def test_gp_release_is_reproducible_saved_and_interpolates():
    rng = np.random.default_rng(3)
    X = W.unit_ball(rng, 200, 3)
    y = np.where(X[:, 0] + 0.2 * rng.normal(size=200) > 0, 1, -1)
    m = dpcore.KernelSVM(lam=0.05, kernel="rbf", gamma=1.0, tol=1e-8).fit(X, y)
    Z = W.unit_ball(np.random.default_rng(4), 50, 3)
    a = TDDL(m, 1e6, 1e-6, data_norm=1.0, random_state=1).fit(Z)
    b = TDDL(m, 1e6, 1e-6, data_norm=1.0, random_state=1).fit(Z)
    np.testing.assert_array_equal(a.release_.mu, b.release_.mu)
    # at huge ε the released model reproduces the non-private predictions (interpolation from Z)
    Q = W.unit_ball(np.random.default_rng(5), 300, 3)
    assert np.mean(a.predict(Q) == m.predict(Q)) > 0.95
    assert math.isnan(a.norm_bound_) and a.lstsq_info_["ridge"] > 0
    with pytest.raises(ValueError, match="ridge"):
        TDDL(m, 1.0, 1e-6, data_norm=1.0, ridge=-1.0).fit(Z)


def test_prior_calibration_is_post_processing_of_a_private_proportion():
    from dpcore.mechanisms.noise import private_proportion

    y = np.array([1] * 50 + [-1] * 950)
    ps = [private_proportion(y, 1, 1.0, random_state=s) for s in range(200)]
    assert all(0.0 <= p <= 1.0 for p in ps) and abs(np.mean(ps) - 0.05) < 0.005
    acc = dpcore.BudgetAccountant(1.0)
    private_proportion(y, 1, 0.5, accountant=acc, random_state=0)
    assert acc.spent == (0.5, 0.0)
    with pytest.raises(ValueError, match="1-D"):
        private_proportion(np.zeros((2, 2)), 1, 1.0)
    rng = np.random.default_rng(3)
    X = W.unit_ball(rng, 200, 3)
    yy = np.where(X[:, 0] > 0.6, 1, -1)
    m = dpcore.KernelSVM(lam=0.05, kernel="rbf", gamma=1.0, tol=1e-8).fit(X, yy)
    rel = TDDL(m, 2.0, 1e-6, data_norm=1.0, random_state=0).fit(W.unit_ball(np.random.default_rng(4), 100, 3)).release_
    cal = rel.calibrate_prior(0.2)
    f = cal.decision_function(rel.points)
    assert abs(np.mean(f > 0) - 0.2) <= 0.02 and cal.intercept != 0.0
    np.testing.assert_allclose(cal.decision_function(X) - rel.decision_function(X), cal.intercept)
    with pytest.raises(ValueError, match="proportion"):
        rel.calibrate_prior(1.5)


def test_release_with_intercept_round_trips(tmp_path):
    rel = dpcore.KernelRelease(np.eye(2), np.array([1.0, -1.0]), dict(kernel="rbf", gamma=1.0, degree=3, coef0=1.0),
                               mechanism="TDDL", epsilon=1.0, delta=1e-6, data_norm=1.0, intercept=0.25,
                               calibration={"test": True})
    rel.save(tmp_path / "r.json")
    back = dpcore.KernelRelease.load(tmp_path / "r.json")
    assert back.intercept == 0.25
    np.testing.assert_array_equal(back.decision_function(np.eye(2)), rel.decision_function(np.eye(2)))


@pytest.mark.parametrize("loss, rho", [("hinge", 0.5), ("logistic", 0.25)])
def test_auto_lam_balances_the_gp_noise_against_the_margin(loss, rho):
    from dpcore._internal.defaults import AUTO_NOISE_RATIO, DEFAULT_INTERCEPT_SCALING
    from dpcore.kernel_learning.gp import auto_lam, feature_radius_sq

    assert AUTO_NOISE_RATIO[loss] == rho
    mu = 1.0 / gaussian_sigma_analytic(1.0, 1.0, 1e-6)
    b2 = DEFAULT_INTERCEPT_SCALING ** 2  # the models' default bias: R_φ'² = R_φ² + b²
    for kernel, kw, r2 in (("rbf", {}, 1.0 + b2), ("poly", dict(gamma=1.0, degree=3, coef0=1.0), 8.0 + b2)):
        lam = auto_lam(20_000, 1.0, 1e-6, data_norm=1.0, kernel=kernel, loss=loss, **kw)
        C = 1.0 / (20_000 * lam)
        assert C == pytest.approx(rho * mu / (2 * r2), rel=1e-9)
        # per-answer GP noise σR_φ = 2 L R_φ² C / μ is ρ margins (hinge) / logits (logistic)
        assert 2 * r2 * C / mu == pytest.approx(rho)
        assert auto_lam(40_000, 1.0, 1e-6, data_norm=1.0, kernel=kernel, loss=loss, **kw) == pytest.approx(lam / 2)
    # the default is the recommended model's: logistic, with the models' default bias
    assert auto_lam(1000, 1.0, 1e-6, data_norm=1.0) == auto_lam(1000, 1.0, 1e-6, data_norm=1.0, loss="logistic",
                                                                 intercept_scaling=DEFAULT_INTERCEPT_SCALING)
    with pytest.raises(ValueError, match="loss"):
        auto_lam(1000, 1.0, 1e-6, data_norm=1.0, loss="squared")
    # more privacy budget: less regularisation
    assert auto_lam(1000, 2.0, 1e-6, data_norm=1.0) < auto_lam(1000, 0.5, 1e-6, data_norm=1.0)
    assert feature_radius_sq(1.0, "poly", "auto", 3, 1.0, n_features=4) == pytest.approx((0.25 + 1) ** 3, rel=1e-9)
    for kw, match in ((dict(n_samples=0), "n_samples"), (dict(kernel="poly", gamma="auto"), "n_features"),
                      (dict(kernel="cosine"), "kernel"), (dict(epsilon=-1.0), "epsilon"),
                      (dict(data_norm=0.0), "data_norm")):
        args = dict(n_samples=100, epsilon=1.0, delta=1e-6, data_norm=1.0) | kw
        with pytest.raises(ValueError, match=match):
            auto_lam(args.pop("n_samples"), args.pop("epsilon"), args.pop("delta"), **args)


def test_auto_lam_gives_a_useful_release_without_tuning():
    """XOR in the unit disc (needs the kernel): TDDL-gp at ε = 1 with λ from the rule, nothing tuned."""
    from dpcore.kernel_learning.gp import auto_lam

    rng = np.random.default_rng(11)

    def draw(n):
        X = rng.uniform(-0.7, 0.7, size=(n, 2))
        return X, np.where(X[:, 0] * X[:, 1] > 0, 1, -1)

    X, y = draw(4000)
    Z, _ = draw(300)
    Xt, yt = draw(2000)
    lam = auto_lam(4000, 1.0, 1e-6, data_norm=1.0, kernel="rbf")
    svm = dpcore.KernelSVM(lam=lam, kernel="rbf", gamma=5.0, tol=1e-6).fit(X, y)
    rel = TDDL(svm, 1.0, 1e-6, data_norm=1.0, random_state=0).fit(Z).release_
    assert rel.score(Xt, yt) > 0.85 and svm.score(Xt, yt) - rel.score(Xt, yt) < 0.1  # chance: 0.5

"""GPService: lazily sampled RKHS GP path, unlimited queries (issue 13, part 2).

Repeated queries are identical, incremental answers have the joint law of one batch (covariance
σ²·L̂L̂ᵀ, KS/χ² at α = 1e-6), the posterior-mean phase adds no noise, state survives a reload and
continues the same path, concurrent callers are serialised, and the audit on the worst-case pair
catches σ/2 and a copy that answers repeated queries with fresh noise.
"""

from __future__ import annotations

import importlib.util
import math
import threading
from pathlib import Path

import numpy as np
import pytest
from scipy import linalg, stats

import dpcore
from dpcore import BudgetAccountant, GPService
from dpcore.audit import audit
from dpcore.accounting.calibrate import gaussian_sigma_analytic

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("_pinp_worker", HERE / "_pinp_worker.py")
W = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(W)


ExactModel = W.ExactModel


_worst_pair = W.worst_pair


@pytest.fixture(scope="module")
def model():
    return W.build_model()


def test_calibration_is_the_gdp_split_of_the_analytic_sigma(model):
    s = GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=50, random_state=0)
    c = s.privacy_
    sigma_total = gaussian_sigma_analytic(c.weight_sensitivity, 1.0, 1e-6)
    assert c.mu == pytest.approx(c.weight_sensitivity / sigma_total, rel=1e-12)
    mu1, mu2 = c.weight_sensitivity / c.noise_scale, 2 * c.residual_bound / c.residual_sigma
    assert mu1**2 + mu2**2 <= c.mu**2  # stage 1 and stage 2 together stay within μ-GDP
    assert c.noise_scale <= sigma_total * 1.0000006
    assert 0 < c.jitter < 1e-8 and c.residual_sigma < 1e-6 * c.noise_scale


def test_repeated_queries_are_identical_and_batches_extend_one_path(model):
    s = GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=100, random_state=1)
    Q = W.unit_ball(np.random.default_rng(0), 10, 3)
    a = s.decision_function(Q)
    assert np.array_equal(s.decision_function(Q[::-1]), a[::-1])  # cached, in the caller's order
    b = s.decision_function(np.vstack([Q[3:4], W.unit_ball(np.random.default_rng(1), 5, 3), Q[3:4]]))
    assert b[0] == a[3] == b[-1] and s.n_distinct == 15 and s.n_answered == 27
    # the stored path is one Gaussian vector: whitened noise is consistent with the factor
    assert s._L.shape == (15, 15) and np.allclose(np.tril(s._L), s._L)


def test_incremental_answers_have_covariance_sigma2_LLt(model):
    """One point at a time, 3,000 services on the same 4 points (two of them close): the whitened
    noise L̂⁻¹(y − v)/σ is i.i.d. N(0, 1) (KS per coordinate and χ²₄, α = 1e-6)."""
    Q = np.array([[0.5, 0.0, 0.0], [0.45, 0.05, 0.0], [-0.3, 0.2, 0.1], [0.0, 0.0, 0.9]])
    v = model.decision_function(Q)
    rows = []
    for seed in range(3000):
        s = GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=4, random_state=seed)
        rows.append([s.decision_function(Q[i:i + 1])[0] for i in range(4)])
    Y = np.asarray(rows)
    Wh = linalg.solve_triangular(s._L, (Y - v).T, lower=True).T / s.privacy_.noise_scale
    for j in range(4):
        assert stats.kstest(Wh[:, j], "norm").pvalue > 1e-6, j
    assert stats.kstest((Wh**2).sum(axis=1), "chi2", args=(4,)).pvalue > 1e-6
    assert np.corrcoef((Y - v).T)[0, 1] > 0.9  # nearby queries: strongly correlated noise


def test_posterior_mean_phase_adds_no_noise(model):
    s = GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=20, random_state=2)
    Q = W.unit_ball(np.random.default_rng(3), 20, 3)
    s.decision_function(Q)
    new = W.unit_ball(np.random.default_rng(4), 7, 3)
    a = s.decision_function(new)
    b = s.decision_function(new)  # deterministic: a function of the released path only
    assert np.array_equal(a, b) and s.n_distinct == 20
    # on an answered point the posterior mean is (almost) the released answer
    assert np.allclose(s._posterior_mean(Q[:3]), s.decision_function(Q[:3]), atol=1e-3)


def test_validation_memory_and_budget(model):
    with pytest.raises(MemoryError, match="^max_exact_queries"):
        GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=10**9)
    with pytest.raises(ValueError, match="epsilon"):
        GPService(model, 0.0, 1e-6, data_norm=1.0)
    with pytest.raises(ValueError, match="delta"):
        GPService(model, 1.0, 0.0, data_norm=1.0)
    s = GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=10, random_state=0)
    with pytest.raises(ValueError, match="outside the declared domain"):
        s.decision_function(np.array([[2.0, 0.0, 0.0]]))
    with pytest.raises(ValueError, match="X contains NaN"):
        s.decision_function(np.array([[np.nan, 0.0, 0.0]]))
    assert s.n_distinct == 0  # refused queries consume nothing
    acc = BudgetAccountant(1.5, 1e-5, accounting="basic")  # the declared (ε, δ) are charged
    GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=10, accountant=acc)
    assert acc.spent == pytest.approx((1.0, 1e-6))


def test_state_survives_reload_and_continues_the_same_path(model, tmp_path):
    path = tmp_path / "gp.json"
    s = GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=50, state_path=path, random_state=5)
    Q1 = W.unit_ball(np.random.default_rng(6), 8, 3)
    a1 = s.decision_function(Q1)
    seq = s.state_seq
    s.close()
    r = GPService.load(path, model, min_seq=seq, random_state=7)
    assert np.array_equal(r.decision_function(Q1), a1) and r.n_distinct == 8
    Q2 = W.unit_ball(np.random.default_rng(8), 4, 3)
    r.decision_function(Q2)
    assert r.n_distinct == 12 and r.state_seq == seq + 1
    r.close()
    with pytest.raises(dpcore.StateRollbackError, match="min_seq"):
        GPService.load(path, model, min_seq=seq + 5)
    with pytest.raises(FileExistsError):
        GPService(model, 1.0, 1e-6, data_norm=1.0, state_path=path)


def test_concurrent_callers_are_serialised(model):
    s = GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=200, random_state=9)
    Q = W.unit_ball(np.random.default_rng(10), 40, 3)
    out, errors = {}, []

    def work(i):
        try:
            out[i] = s.decision_function(Q)
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and s.n_distinct == 40
    assert all(np.array_equal(out[0], out[i]) for i in range(8))  # one path, whoever asked first


class _HalfNoise(GPService):
    _sensitivity_factor = 0.5


class _FreshNoise(GPService):
    """Broken copy: every query, repeated or not, gets fresh independent noise of the same variance
    (no cache, no correlation) — what a per-query Gaussian mechanism without the GP path would do."""

    def _sample_sessions(self, X, n_samples, random_state):
        cols = [GPService._sample_sessions(self, X[i:i + 1], n_samples, int(random_state) + 7919 * i)
                for i in range(X.shape[0])]
        return np.hstack(cols)


def _sampler(cls, T):
    def sampler(model, n, seed):
        s = cls(model, 1.0, 1e-5, data_norm=1.0, max_exact_queries=T, random_state=0)
        return s._sample_sessions(np.full((T, 1), 0.5), n, seed)  # the same query asked T times
    return sampler


def test_audit_service_on_the_worst_case_pair_and_catch_broken_copies():
    mA, mB = _worst_pair()
    T = 4
    c = GPService(mA, 1.0, 1e-5, data_norm=1.0, max_exact_queries=T).privacy_
    fa, fb = float(mA.decision_function(np.full((1, 1), 0.5))[0]), float(mB.decision_function(np.full((1, 1), 0.5))[0])
    u = np.ones(T) / math.sqrt(T)
    mid = math.sqrt(T) * (fa + fb) / 2
    thresholds = mid + c.noise_scale * math.sqrt(T) * np.linspace(0.0, 4.0, 9)  # fixed before sampling
    res = audit(_sampler(GPService, T), mA, mB, n_samples=1_000_000, direction=u, thresholds=thresholds,
                delta=1e-5, random_state=31)
    res.assert_private(1.0)
    for cls, seed in ((_HalfNoise, 32), (_FreshNoise, 33)):
        broken = audit(_sampler(cls, T), mA, mB, n_samples=1_000_000, direction=u, thresholds=thresholds,
                       delta=1e-5, random_state=seed)
        assert broken.epsilon_lower_bound > 1.1, (cls.__name__, str(broken))
        with pytest.raises(AssertionError, match="refuted"):
            broken.assert_private(1.0)


def test_session_sampler_matches_real_sessions(model):
    """The audit's vectorised sampler has the law of real sessions (two-sample KS, α = 1e-6)."""
    q = W.unit_ball(np.random.default_rng(12), 2, 3)
    X = np.vstack([q, q[:1]])
    real = np.array([GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=5, random_state=s).decision_function(X)
                     for s in range(2000)])
    fake = GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=5)._sample_sessions(X, 20_000, 3)
    assert np.array_equal(fake[:, 0], fake[:, 2]) and np.array_equal(real[:, 0], real[:, 2])
    for j in range(2):
        assert stats.ks_2samp(real[:, j], fake[:, j]).pvalue > 1e-6


def test_calibrate_prior_sets_a_post_processing_threshold(model):
    s = GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=200, random_state=4)
    P = W.unit_ball(np.random.default_rng(5), 100, 3)
    assert getattr(s, "threshold_", 0.0) == 0.0
    f = s.decision_function(P)
    s.calibrate_prior(0.2, P)
    assert s.n_distinct == 100  # the calibration points were already on the path: nothing new released
    assert s.threshold_ == pytest.approx(np.quantile(f, 0.8))
    labels = s.predict(P)
    assert np.mean(labels == s.classes_[1]) == pytest.approx(0.2, abs=0.011)
    assert np.array_equal(s.decision_function(P), f)  # decision values unchanged
    with pytest.raises(ValueError, match="proportion"):
        s.calibrate_prior(1.5, P)

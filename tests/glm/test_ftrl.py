"""Tests of dpcore.PrivateFTRL (Jain & Thakurta 2014 §5.2): calibration of λ (pure, advanced,
sampler condition), regret within the Shalev-Shwartz bound, horizon enforcement, an audit of the
released index sequence that also catches a deliberately broken copy (λ/4), the sampled
distribution of the real partial_fit path, batching invariance, accountant and validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpcore._internal.cloning import derive_clone_seed
from dpcore import BudgetAccountant, BudgetExceededError
from dpcore._internal.fp import budget_grid_down
from dpcore.audit import audit
from dpcore.accounting.calibrate import per_step_epsilon
from dpcore.glm.ftrl import FTRLHorizonExceeded, PrivateFTRL, ftrl_calibration
from dpcore.mechanisms.multinomial import multinomial_draws
from dpcore.mechanisms.noise import check_random_state


def _softmax(v):
    e = np.exp(v - v.max())
    return e / e.sum()


# ------------------------------------------------------------------------------ calibration
def test_lambda_calibration_pure_advanced_and_explicit():
    cal = ftrl_calibration(horizon=10, epsilon=1.0, data_norm_inf=1.0, n_features=5)
    assert cal.composition == "pure" and cal.epsilon_step == per_step_epsilon(1.0, 10)
    assert cal.lam == pytest.approx(40.0, rel=1e-9) and cal.lam >= 40.0  # 4 R T / ε
    assert cal.per_round_epsilon <= cal.epsilon_step and cal.per_round_epsilon >= 4.0 / cal.lam
    assert 10 * cal.per_round_epsilon <= 1.0
    adv = ftrl_calibration(horizon=10_000, epsilon=1.0, delta=1e-6, data_norm_inf=0.5, n_features=5)
    step = per_step_epsilon(1.0, 10_000, budget_grid_down(1e-6))  # δ on the budget grid (issue 25)
    assert adv.composition == "advanced" and adv.epsilon_step == step and step > 1e-4
    assert adv.lam == pytest.approx(4 * 0.5 / step, rel=1e-6) and adv.lam >= 4 * 0.5 / step
    # explicit λ: larger is fine, smaller than the minimum is refused with the minimum in the message
    assert ftrl_calibration(horizon=10, epsilon=1.0, data_norm_inf=1.0, n_features=5, lam=100.0).lam == 100.0
    with pytest.raises(ValueError, match=r"lam=39.0 violates the privacy condition.*lam >= 40"):
        PrivateFTRL(10, 1.0, data_norm_inf=1.0, lam=39.0, n_features=5).predict()
    # very long horizons: the sampler's public probability bound exp(-2(T-1)R/λ)/p >= 2^-60 binds
    long = ftrl_calibration(horizon=10**6, epsilon=1.0, delta=1e-6, data_norm_inf=1.0, n_features=10)
    assert long.lam_sampler_min > long.lam_privacy_min and long.lam == long.lam_sampler_min
    assert long.p_min >= 2.0**-60 * (1 - 1e-6)
    with pytest.raises(ValueError, match="lam=.* is too small for exact sampling"):
        ftrl_calibration(horizon=10**6, epsilon=1.0, delta=1e-6, data_norm_inf=1.0, n_features=10,
                         lam=long.lam_privacy_min * 1.01)


# ------------------------------------------------------------------------------ regret
def test_regret_within_the_entropic_ftrl_bound_on_a_stochastic_sequence():
    rng = np.random.default_rng(0)
    T, p = 2000, 10
    X = rng.uniform(-1, 1, (T, p))
    X[:, 3] = np.clip(X[:, 3] - 0.4, -1, 1)  # expert 3 is better on average
    learner = PrivateFTRL(T, 30.0, 1e-6, data_norm_inf=1.0, random_state=1)
    learner.partial_fit(X)
    r = learner.regret_
    lam = learner.lam_
    assert r.rounds == T and r.best_expert == 3
    assert r.bound == pytest.approx(lam * math.log(p) + T / lam)
    assert r.regret_expected <= r.bound  # deterministic (Shalev-Shwartz 2011, Cor. 2.14)
    azuma = 2.0 * math.sqrt(2 * T * math.log(1e6))  # realised − expected is a bounded-increment martingale
    assert r.regret_realized <= r.bound + azuma
    uniform_regret = float(X.mean(axis=1).sum()) - r.best_expert_cost
    assert r.regret_expected < 0.5 * uniform_regret  # it learns (far better than playing uniformly)
    # the expected cost is Σ <x_t, θ_t> with θ_t = softmax(−S_{t−1}/λ)
    S = np.vstack([np.zeros(p), np.cumsum(X, axis=0)[:-1]])
    expected = sum(float(x @ _softmax(-s / lam)) for x, s in zip(X, S))
    assert r.expected_cost == pytest.approx(expected, rel=1e-9)
    assert r.realized_cost == pytest.approx(float(X[np.arange(T), learner.indices_].sum()))


# ------------------------------------------------------------------------------ horizon
def test_horizon_is_enforced_atomically():
    X = np.zeros((5, 3))
    learner = PrivateFTRL(3, 1.0, data_norm_inf=1.0, random_state=0)
    learner.partial_fit(X[:2])
    with pytest.raises(FTRLHorizonExceeded, match="horizon=3") as exc:
        learner.partial_fit(X[:2])
    assert (exc.value.rounds_done, exc.value.rounds_requested) == (2, 2) and learner.t_ == 2
    learner.partial_fit(X[0])  # a single round as a 1-D row
    assert learner.t_ == 3 and learner.indices_.shape == (3,)
    with pytest.raises(FTRLHorizonExceeded):
        learner.predict()
    with pytest.raises(FTRLHorizonExceeded):
        learner.partial_fit(X[:1])


# ------------------------------------------------------------------------------ privacy audit
class _BrokenFTRL(PrivateFTRL):
    """Deliberately broken copy: λ four times too small."""

    _lam_factor = 0.25


def _ftrl_sampler(cls, T, p, **kw):
    def sampler(X, n, seed):
        learner = cls(T, n_features=p, **kw)
        learner._ensure_started(p)
        rng = check_random_state(seed)
        S = np.zeros(p)
        out = np.empty((n, T), dtype=np.int64)
        for t in range(T):  # rounds are independent given the costs: n draws per round
            out[:, t] = multinomial_draws(learner._distribution(S), n, shuffle=True, random_state=rng)
            S = S + X[t]
        return (out[:, 1:] == 1).sum(axis=1)  # picks of the most-affected expert after the change
    return sampler


def test_audit_released_indices_on_a_first_round_change_and_catch_lambda_over_4():
    T, p = 5, 2
    A = np.zeros((T, p))
    A[0] = [1.0, -1.0]
    B = A.copy()
    B[0] = [-1.0, 1.0]
    kw = dict(epsilon=1.0, data_norm_inf=1.0)
    thresholds = np.arange(T) - 0.5  # every count threshold, fixed before sampling
    res = audit(_ftrl_sampler(PrivateFTRL, T, p, **kw), A, B, n_samples=300_000, thresholds=thresholds,
                random_state=3)
    res.assert_private(1.0)
    assert res.epsilon_lower_bound > 0.3, str(res)  # true loss (T−1)·2R/λ = 0.4
    broken = audit(_ftrl_sampler(_BrokenFTRL, T, p, **kw), A, B, n_samples=300_000, thresholds=thresholds,
                   random_state=4)
    assert broken.epsilon_lower_bound > 1.3, str(broken)  # true loss 1.6
    with pytest.raises(AssertionError, match="refuted"):
        broken.assert_private(1.0)


def test_partial_fit_draws_follow_the_ftrl_iterate():
    """The real protocol path: round-2 actions of independent learners ~ softmax(−x_1/λ)."""
    x1 = np.array([[0.5, -1.0, 1.0]])
    N = 4000
    counts = np.zeros(3, dtype=np.int64)
    for seed in range(N):
        learner = PrivateFTRL(2, 0.5, data_norm_inf=1.0, random_state=seed)
        learner.partial_fit(x1)
        counts[learner.predict()] += 1
    probs = _softmax(-x1[0] / learner.lam_)
    for j in range(3):
        lo, hi = stats.binom.ppf([1e-7, 1 - 1e-7], N, probs[j])
        assert lo <= counts[j] <= hi


# ------------------------------------------------------------------------------ protocol
def test_batches_equal_one_batch_and_predict_does_not_change_the_sequence():
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (40, 6))
    one = PrivateFTRL(40, 2.0, 1e-6, data_norm_inf=1.0, random_state=9).partial_fit(X)
    many = PrivateFTRL(40, 2.0, 1e-6, data_norm_inf=1.0, random_state=9)
    many.partial_fit(X[:1])
    a = many.predict()
    assert many.predict() == a  # the pending draw is fixed until the round is played
    many.partial_fit(X[1:13]).partial_fit(X[13:14]).partial_fit(X[14:])
    assert np.array_equal(one.indices_, many.indices_) and many.indices_[1] == a
    assert one.regret_ == many.regret_
    other = PrivateFTRL(40, 2.0, 1e-6, data_norm_inf=1.0).partial_fit(X)
    again = PrivateFTRL(40, 2.0, 1e-6, data_norm_inf=1.0).partial_fit(X)
    assert not np.array_equal(other.indices_, again.indices_) or not np.array_equal(other.indices_, one.indices_)


def test_accountant_charged_once_at_the_first_partial_fit():
    acc = BudgetAccountant(1.5, 1e-5)
    learner = PrivateFTRL(10, 1.0, 1e-6, data_norm_inf=1.0, n_features=4, accountant=acc, random_state=0)
    learner.predict()  # round 1 is drawn from the uniform distribution: no data used, no charge
    assert len(acc) == 0
    learner.partial_fit(np.zeros((3, 4)))
    learner.partial_fit(np.zeros((3, 4)))
    assert acc.spent == pytest.approx((1.0, 1e-6)) and len(acc) == 1
    second = PrivateFTRL(10, 1.0, 1e-6, data_norm_inf=1.0, accountant=acc, random_state=0)
    with pytest.raises(BudgetExceededError):
        second.partial_fit(np.zeros((1, 4)))
    assert second.t_ == 0 and second.indices_.shape == (0,)


def test_validation_matrix():
    X = np.zeros((2, 3))
    base = dict(horizon=5, epsilon=1.0, data_norm_inf=1.0)
    cases = [
        (dict(horizon=0), "horizon"), (dict(horizon=2.5), "horizon"), (dict(epsilon=0.0), "epsilon"),
        (dict(epsilon=float("inf")), "epsilon"), (dict(delta=1.0), "delta"), (dict(data_norm_inf=0.0), "data_norm_inf"),
        (dict(lam=-1.0), "lam"), (dict(n_features=4), "n_features"), (dict(clip="no"), "clip"),
    ]
    for kw, name in cases:
        with pytest.raises(ValueError, match=name):
            PrivateFTRL(**{**base, **kw}).partial_fit(X)
    with pytest.raises(ValueError, match="NaN"):
        PrivateFTRL(**base).partial_fit(np.full((1, 3), np.nan))
    with pytest.raises(ValueError, match="outside the declared domain"):
        PrivateFTRL(**base).partial_fit(X + 2.0)
    clipped = PrivateFTRL(**base, clip=True, random_state=0).partial_fit(X + 2.0)
    assert clipped.regret_.best_expert_cost == pytest.approx(2.0)
    learner = PrivateFTRL(**base, random_state=0).partial_fit(X)
    with pytest.raises(ValueError, match="features"):
        learner.partial_fit(np.zeros((1, 4)))
    with pytest.raises(ValueError, match="n_features is unknown"):
        PrivateFTRL(**base).predict()
    with pytest.raises(ValueError, match="2-D"):
        PrivateFTRL(**base).partial_fit(np.zeros((1, 1, 3)))
    from dpcore.kernel_learning.svm import NotFittedError

    with pytest.raises(NotFittedError):
        PrivateFTRL(**base).indices_


def test_get_params_clone_and_frozen_after_start():
    sklearn_base = pytest.importorskip("sklearn.base")
    learner = PrivateFTRL(50, 2.0, 1e-6, data_norm_inf=0.5, lam=None, random_state=4)
    c = sklearn_base.clone(learner)  # an int seed: the clone gets its own derived seed (issue 25)
    assert c.get_params() == {**learner.get_params(), "random_state": derive_clone_seed(4, 0)}
    assert c.get_params()["horizon"] == 50
    learner.set_params(epsilon=3.0)
    with pytest.raises(ValueError, match="Invalid parameter"):
        learner.set_params(eta=1.0)
    learner.partial_fit(np.zeros((1, 2)))
    with pytest.raises(ValueError, match="cannot change"):
        learner.set_params(epsilon=10.0)
    assert "PrivateFTRL(" in repr(learner)

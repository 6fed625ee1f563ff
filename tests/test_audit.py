"""Empirical privacy audits (dpcore.audit) of dpcore's noise mechanisms.

Every audit below uses a fixed seed, so outcomes are deterministic; in addition each assertion that
a *correct* mechanism passes has false-failure probability ≤ α = 1e-6 by construction (Clopper–
Pearson + Bonferroni / sample splitting), and every assertion that a *broken* copy is caught was
sized analytically (expected counts) to hold with a margin of many standard deviations:

=========================  ============  ==========================  ===========================
mechanism (n = 10^6)       claimed ε     expected bound, correct     expected bound, broken copy
=========================  ============  ==========================  ===========================
Laplace, Δ = 1             0.5 / 1 / 2   0.48 / 0.98 / 1.97          0.98 / 1.97 / 3.92 (2ε true)
Laplace, 0.8 × scale       1             0.98                        1.22 (1.25 true)
Gaussian, δ = 1e-3         1             0.73                        1.71 (half σ), 1.73 (2Δ)
Gaussian, δ = 1e-5         2             1.19                        2.64 (half σ), 2.64 (2Δ)
=========================  ============  ==========================  ===========================

Thresholds are always derived from the *claimed* mechanism's analytic noise scale before sampling.
The Gaussian rows audit the ``method="zcdp"`` (discrete Gaussian) route, whose σ the table assumes;
the default ``method="analytic"`` route is audited in ``test_noise_analytic.py``.
"""

import math

import numpy as np
import pytest
from scipy import stats

from dpcore import audit

from dpcore.accounting import calibrate

from dpcore.mechanisms import noise
from dpcore.audit import AuditResult, clopper_pearson, epsilon_lower_bound

ALPHA = 1e-6
N = 10**6


# ----------------------------------------------------------------------------- helpers
def _ref_laplace(scale):
    """Continuous numpy Laplace reference sampler — for testing the harness only (never a release)."""

    def sampler(value, n, seed):
        value = np.asarray(value, dtype=float)
        rng = np.random.default_rng(seed)
        return value + rng.laplace(0.0, scale, size=(n,) + value.shape)

    return sampler


def _laplace_thresholds(sensitivity, epsilon, num=21):
    """Thresholds from the claimed mechanism's tails: between 3 scales below 0 and 3 beyond Δ."""
    b = calibrate.laplace_scale(sensitivity, epsilon)
    return np.linspace(-3.0 * b, sensitivity + 3.0 * b, num)


def _gaussian_thresholds(sensitivity, epsilon, delta, num=41):
    sigma = noise.gaussian_plan(sensitivity, epsilon, delta, method="zcdp").sigma
    return sensitivity / 2.0 + sigma * np.linspace(-5.0, 5.0, num)


def _laplace_sampler(sensitivity, epsilon):
    def sampler(value, n, seed):
        return noise.sample_laplace_mechanism(value, sensitivity, epsilon, n, random_state=seed)

    return sampler


def _gaussian_sampler(sensitivity, epsilon, delta):
    def sampler(value, n, seed):
        return noise.sample_gaussian_mechanism(value, sensitivity, epsilon, delta, n, method="zcdp", random_state=seed)

    return sampler


# ----------------------------------------------------------------------------- Clopper–Pearson
def test_clopper_pearson_edge_cases():
    n, a = 1000, 1e-3
    lo, hi = clopper_pearson(0, n, a)
    assert lo == 0.0
    assert hi == pytest.approx(1.0 - a ** (1.0 / n), rel=1e-10)
    lo, hi = clopper_pearson(n, n, a)
    assert hi == 1.0
    assert lo == pytest.approx(a ** (1.0 / n), rel=1e-10)
    lo, hi = clopper_pearson(1, 1, 0.5)
    assert lo == pytest.approx(0.5) and hi == 1.0


def test_clopper_pearson_known_value():
    # textbook: k = 5, n = 10, two-sided 95% interval (0.1871, 0.8129)
    lo, hi = clopper_pearson(5, 10, 0.025)
    assert lo == pytest.approx(0.18709, abs=1e-5)
    assert hi == pytest.approx(0.81291, abs=1e-5)
    # symmetry
    lo2, hi2 = clopper_pearson(3, 17, 1e-4)
    lo3, hi3 = clopper_pearson(14, 17, 1e-4)
    assert lo2 == pytest.approx(1 - hi3, rel=1e-12) and hi2 == pytest.approx(1 - lo3, rel=1e-12)


@pytest.mark.parametrize("n", [1, 7, 50, 400])
@pytest.mark.parametrize("alpha", [0.2, 0.01, 1e-6])
def test_clopper_pearson_exact_coverage(n, alpha):
    """Exact coverage (no simulation): for every p, P_k[lo(k) > p] ≤ α and P_k[hi(k) < p] ≤ α."""
    ks = np.arange(n + 1)
    bounds = np.array([clopper_pearson(int(k), n, alpha) for k in ks])
    for p in np.concatenate([np.linspace(1e-4, 1 - 1e-4, 97), bounds[:, 0][1:], bounds[:, 1][:-1]]):
        pmf = stats.binom.pmf(ks, n, p)
        assert pmf[bounds[:, 0] > p].sum() <= alpha * (1 + 1e-9)
        assert pmf[bounds[:, 1] < p].sum() <= alpha * (1 + 1e-9)


@pytest.mark.parametrize(
    "args,exc,name",
    [((-1, 10, 0.1), ValueError, "k"), ((11, 10, 0.1), ValueError, "k"), ((0, 0, 0.1), ValueError, "n"),
     ((1, 10, 0.0), ValueError, "alpha"), ((1, 10, 1.0), ValueError, "alpha"), ((1.5, 10, 0.1), TypeError, "k")],
)
def test_clopper_pearson_validation(args, exc, name):
    with pytest.raises(exc, match=name):
        clopper_pearson(*args)


# ----------------------------------------------------------------------------- ε lower bound
def test_epsilon_lower_bound_formula():
    k_a, k_b, n = 500_000, 100_000, 10**6
    a = 1e-6
    p_a = stats.beta.ppf(a / 2, k_a, n - k_a + 1)
    p_b = stats.beta.isf(a / 2, k_b + 1, n - k_b)
    got = epsilon_lower_bound(k_a, n, k_b, n, alpha=a)
    assert got == pytest.approx(math.log(p_a / p_b), rel=1e-10)
    assert 1.55 < got < math.log(5.0)
    # with δ
    got_d = epsilon_lower_bound(k_a, n, k_b, n, delta=0.01, alpha=a)
    assert got_d == pytest.approx(math.log((p_a - 0.01) / p_b), rel=1e-10)
    assert got_d < got


def test_epsilon_lower_bound_vacuous_and_monotone():
    assert epsilon_lower_bound(100, 1000, 100, 1000) == 0.0
    assert epsilon_lower_bound(10, 1000, 500, 1000) == 0.0  # p_a < p_b
    assert epsilon_lower_bound(0, 1000, 0, 1000) == 0.0
    assert epsilon_lower_bound(500, 1000, 10, 1000, delta=0.9) == 0.0  # δ swallows p_a
    b1 = epsilon_lower_bound(5000, 10**5, 1000, 10**5, alpha=1e-2)
    b2 = epsilon_lower_bound(5000, 10**5, 1000, 10**5, alpha=1e-9)
    assert b1 > b2 > 0
    # k_b = 0 is fine: the upper bound on p_b is still positive
    assert 0 < epsilon_lower_bound(1000, 1000, 0, 1000) < math.inf


def test_epsilon_lower_bound_validation():
    with pytest.raises(ValueError, match="k_a"):
        epsilon_lower_bound(11, 10, 1, 10)
    with pytest.raises(ValueError, match="n_b"):
        epsilon_lower_bound(1, 10, 0, 0)
    with pytest.raises(ValueError, match="delta"):
        epsilon_lower_bound(1, 10, 1, 10, delta=1.0)
    with pytest.raises(ValueError, match="alpha"):
        epsilon_lower_bound(1, 10, 1, 10, alpha=0.0)


# ----------------------------------------------------------------------------- harness (reference sampler)
def test_harness_reference_sampler_pass_and_fail():
    eps, n = 1.0, 200_000
    thr = _laplace_thresholds(1.0, eps)
    ok = audit.audit(_ref_laplace(1.0 / eps), 0.0, 1.0, n_samples=n, thresholds=thr, random_state=1)
    assert isinstance(ok, AuditResult)
    assert 0.8 < ok.epsilon_lower_bound <= eps
    assert ok.check(eps) and ok.n_tests == 4 * thr.size and ok.n == n and ok.alpha == ALPHA
    ok.assert_private(eps)
    bad = audit.audit(_ref_laplace(0.5 / eps), 0.0, 1.0, n_samples=n, thresholds=thr, random_state=1)
    assert bad.epsilon_lower_bound > 1.8
    assert not bad.check(eps)
    with pytest.raises(AssertionError, match="privacy claim refuted"):
        bad.assert_private(eps)
    assert "s >" in bad.event and bad.count_num > bad.count_den


def test_harness_is_reproducible_and_uses_independent_seeds():
    seen = []

    def sampler(value, n, seed):
        seen.append(seed)
        assert isinstance(seed, int) and 0 <= seed < 2**64
        return _ref_laplace(1.0)(value, n, seed)

    r1 = audit.audit(sampler, 0.0, 1.0, n_samples=10_000, thresholds=[0.5], random_state=7)
    r2 = audit.audit(sampler, 0.0, 1.0, n_samples=10_000, thresholds=[0.5], random_state=7)
    assert r1 == r2
    assert seen[0] != seen[1] and seen[:2] == seen[2:]
    audit.audit(sampler, 0.0, 1.0, n_samples=10_000, thresholds=[0.5], random_state=np.random.SeedSequence(3))
    assert seen[4] != seen[5]


def test_harness_user_events_and_result_fields():
    events = {"far right": lambda out: out > 2.0, "left": lambda out: out < -0.5}
    res = audit.audit(_ref_laplace(1.0), 0.0, 1.0, n_samples=100_000, events=events, random_state=3)
    assert res.n_tests == 8
    assert "far right" in res.event or "left" in res.event
    assert res.epsilon_lower_bound <= 1.0
    assert res.counts == (res.count_num, res.count_den)
    assert 0 <= res.p_num_lower <= res.count_num / res.n
    assert res.count_den / res.n <= res.p_den_upper <= 1
    assert "epsilon >=" in str(res)


def test_harness_validation():
    s = _ref_laplace(1.0)
    with pytest.raises(ValueError, match="thresholds"):
        audit.audit(s, 0.0, 1.0, n_samples=100)
    with pytest.raises(ValueError, match="n_samples"):
        audit.audit(s, 0.0, 1.0, n_samples=0, thresholds=[0.0])
    with pytest.raises(ValueError, match="selection"):
        audit.audit(s, 0.0, 1.0, n_samples=100, thresholds=[0.0], selection="best")
    with pytest.raises(ValueError, match="alpha"):
        audit.audit(s, 0.0, 1.0, n_samples=100, thresholds=[0.0], alpha=0.0)
    with pytest.raises(ValueError, match="delta"):
        audit.audit(s, 0.0, 1.0, n_samples=100, thresholds=[0.0], delta=1.0)
    with pytest.raises(ValueError, match="thresholds must be finite"):
        audit.audit(s, 0.0, 1.0, n_samples=100, thresholds=[np.nan])
    with pytest.raises(ValueError, match="n_samples=100 rows"):
        audit.audit(lambda v, n, seed: np.zeros(n + 1), 0.0, 1.0, n_samples=100, thresholds=[0.0])
    with pytest.raises(ValueError, match="statistic= .* or a projection direction="):
        audit.audit(s, np.zeros(3), np.ones(3), n_samples=100, thresholds=[0.0])
    with pytest.raises(ValueError, match="direction has length 2"):
        audit.audit(s, np.zeros(3), np.ones(3), n_samples=100, thresholds=[0.0], direction=[1.0, 0.0])
    with pytest.raises(ValueError, match="boolean mask"):
        audit.audit(s, 0.0, 1.0, n_samples=100, events=[lambda out: out])
    with pytest.raises(TypeError, match="random_state"):
        audit.audit(s, 0.0, 1.0, n_samples=100, thresholds=[0.0], random_state="seed")
    res = audit.audit(s, 0.0, 1.0, n_samples=100, thresholds=[0.0])
    with pytest.raises(ValueError, match="claimed_epsilon"):
        res.check(float("nan"))


# ----------------------------------------------------------------------------- Laplace mechanism
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_laplace_mechanism_passes_audit(eps):
    sens = 1.0
    res = audit.audit(
        _laplace_sampler(sens, eps), 0.0, sens, n_samples=N,
        thresholds=_laplace_thresholds(sens, eps), alpha=ALPHA, random_state=100 + int(10 * eps),
    )
    res.assert_private(eps)
    # the audit is also tight: a correct Laplace mechanism is nearly refuted at 0.95 ε
    assert res.epsilon_lower_bound > 0.9 * eps


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_laplace_audit_catches_half_noise(eps):
    sens = 1.0
    broken = _laplace_sampler(sens / 2.0, eps)  # noise scale Δ/(2ε) while claiming sensitivity Δ
    res = audit.audit(
        broken, 0.0, sens, n_samples=N, thresholds=_laplace_thresholds(sens, eps), alpha=ALPHA,
        random_state=200 + int(10 * eps),
    )
    assert res.epsilon_lower_bound > 1.8 * eps, res
    with pytest.raises(AssertionError):
        res.assert_private(eps)


def test_laplace_audit_catches_mildly_too_small_noise():
    # 80% of the required scale: true ε = 1.25 while claiming 1 (expected bound ≈ 1.22)
    sens, eps = 1.0, 1.0
    res = audit.audit(
        _laplace_sampler(0.8 * sens, eps), 0.0, sens, n_samples=N,
        thresholds=_laplace_thresholds(sens, eps), alpha=ALPHA, random_state=250,
    )
    assert res.epsilon_lower_bound > 1.1 * eps, res
    assert not res.check(eps)


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_laplace_audit_catches_doubled_sensitivity(eps):
    sens = 1.0
    res = audit.audit(
        _laplace_sampler(sens, eps), 0.0, 2.0 * sens, n_samples=N,
        thresholds=_laplace_thresholds(sens, eps), alpha=ALPHA, random_state=300 + int(10 * eps),
    )
    assert res.epsilon_lower_bound > 1.8 * eps, res
    assert not res.check(eps)


def test_laplace_audit_other_sensitivity_and_offset():
    # Δ = 3 around a non-zero value: the claim only depends on the difference
    sens, eps = 3.0, 1.0
    thr = 10.0 + _laplace_thresholds(sens, eps)
    res = audit.audit(_laplace_sampler(sens, eps), 10.0, 10.0 + sens, n_samples=N, thresholds=thr,
                      random_state=401)
    res.assert_private(eps)
    bad = audit.audit(_laplace_sampler(sens / 2, eps), 10.0, 10.0 + sens, n_samples=N, thresholds=thr,
                      random_state=402)
    assert bad.epsilon_lower_bound > 1.8 * eps


# ----------------------------------------------------------------------------- Gaussian mechanism
@pytest.mark.parametrize("eps,delta", [(0.5, 1e-5), (1.0, 1e-5), (1.0, 1e-3), (2.0, 1e-5)])
def test_gaussian_mechanism_passes_audit(eps, delta):
    sens = 1.0
    res = audit.audit(
        _gaussian_sampler(sens, eps, delta), 0.0, sens, n_samples=N,
        thresholds=_gaussian_thresholds(sens, eps, delta), delta=delta, alpha=ALPHA,
        random_state=500 + int(10 * eps) + int(-math.log10(delta)),
    )
    res.assert_private(eps)
    assert res.epsilon_lower_bound > 0.3 * eps  # the audit does see the signal


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-3), (2.0, 1e-5)])
def test_gaussian_audit_catches_half_sigma(eps, delta):
    sens = 1.0
    broken = _gaussian_sampler(sens / 2.0, eps, delta)  # σ calibrated for Δ/2
    res = audit.audit(
        broken, 0.0, sens, n_samples=N, thresholds=_gaussian_thresholds(sens, eps, delta),
        delta=delta, alpha=ALPHA, random_state=600 + int(10 * eps),
    )
    assert res.epsilon_lower_bound > 1.2 * eps, res
    assert not res.check(eps)


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-3), (2.0, 1e-5)])
def test_gaussian_audit_catches_doubled_sensitivity(eps, delta):
    sens = 1.0
    res = audit.audit(
        _gaussian_sampler(sens, eps, delta), 0.0, 2.0 * sens, n_samples=N,
        thresholds=_gaussian_thresholds(sens, eps, delta) + sens / 2.0,  # centred between 0 and 2Δ
        delta=delta, alpha=ALPHA, random_state=700 + int(10 * eps),
    )
    assert res.epsilon_lower_bound > 1.2 * eps, res
    assert not res.check(eps)


# ----------------------------------------------------------------------------- sample splitting
def test_split_selection_passes_and_catches():
    sens, eps = 1.0, 1.0
    thr = _laplace_thresholds(sens, eps, num=61)  # many candidates cost nothing with splitting
    ok = audit.audit(_laplace_sampler(sens, eps), 0.0, sens, n_samples=N, thresholds=thr,
                     selection="split", random_state=801)
    assert ok.selection == "split" and ok.n_tests == 1 and ok.n == N // 2
    ok.assert_private(eps)
    bad = audit.audit(_laplace_sampler(sens / 2, eps), 0.0, sens, n_samples=N, thresholds=thr,
                      selection="split", random_state=802)
    assert bad.epsilon_lower_bound > 1.8 * eps
    assert not bad.check(eps)


def test_split_selection_gaussian():
    sens, eps, delta = 1.0, 1.0, 1e-3
    thr = _gaussian_thresholds(sens, eps, delta, num=81)
    ok = audit.audit(_gaussian_sampler(sens, eps, delta), 0.0, sens, n_samples=N, thresholds=thr,
                     delta=delta, selection="split", random_state=803)
    ok.assert_private(eps)
    bad = audit.audit(_gaussian_sampler(sens / 2, eps, delta), 0.0, sens, n_samples=N, thresholds=thr,
                      delta=delta, selection="split", random_state=804)
    assert bad.epsilon_lower_bound > 1.2 * eps


# ----------------------------------------------------------------------------- vector outputs
def test_vector_gaussian_with_direction():
    d, sens, eps, delta = 4, 1.0, 1.0, 1e-3
    u = np.ones(d) / math.sqrt(d)  # unit direction: ||b − a||₂ = Δ
    a, b = np.zeros(d), sens * u
    sigma = noise.gaussian_plan(sens, eps, delta, dim=d, method="zcdp").sigma
    thr = sens / 2.0 + sigma * np.linspace(-5.0, 5.0, 41)
    n = N // 2
    ok = audit.audit(_gaussian_sampler(sens, eps, delta), a, b, n_samples=n, thresholds=thr, direction=u,
                     delta=delta, random_state=901)
    ok.assert_private(eps)
    bad = audit.audit(_gaussian_sampler(sens / 2, eps, delta), a, b, n_samples=n, thresholds=thr,
                      direction=u, delta=delta, random_state=902)
    assert bad.epsilon_lower_bound > 1.2 * eps, bad


def test_vector_laplace_with_statistic():
    d, sens, eps = 3, 1.0, 1.0
    a = np.array([0.0, 5.0, -2.0])
    b = a + np.array([sens, 0.0, 0.0])  # ||b − a||₁ = Δ
    first = lambda out: out[:, 0]  # noqa: E731
    thr = _laplace_thresholds(sens, eps)
    n = N // 2
    ok = audit.audit(_laplace_sampler(sens, eps), a, b, n_samples=n, thresholds=thr, statistic=first,
                     random_state=903)
    ok.assert_private(eps)
    bad = audit.audit(_laplace_sampler(sens / 2, eps), a, b, n_samples=n, thresholds=thr, statistic=first,
                      random_state=904)
    assert bad.epsilon_lower_bound > 1.8 * eps, bad

"""Tests of dpcore.mechanisms.noise: exact samplers, grid mechanisms, calibration plans, randomness handling.

All randomness is seeded, so outcomes are deterministic; statistical tests use α = 1e-6.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import dpcore
from dpcore.accounting import calibrate
from dpcore.mechanisms import noise
from dpcore.accounting.accountant import BudgetAccountant, BudgetExceededError

ALPHA = 1e-6


# --------------------------------------------------------------------------- randomness


def test_check_random_state_types():
    secure = noise.check_random_state(None)
    assert not secure.seeded
    seeded = noise.check_random_state(123)
    assert seeded.seeded
    assert noise.check_random_state(seeded) is seeded
    assert noise.check_random_state(np.int64(5)).seeded
    with pytest.raises(TypeError, match="random_state"):
        noise.check_random_state(np.random.default_rng(0))
    with pytest.raises(TypeError, match="random_state"):
        noise.check_random_state(1.5)
    with pytest.raises(TypeError, match="random_state"):
        noise.check_random_state(True)
    with pytest.raises(ValueError, match="random_state"):
        noise.check_random_state(-1)
    with pytest.raises(ValueError, match="random_state"):
        noise.check_random_state(2**64)


def test_seeded_releases_are_reproducible_and_secure_ones_are_not():
    a = dpcore.laplace_mechanism(np.zeros(5), 1.0, 1.0, random_state=7)
    b = dpcore.laplace_mechanism(np.zeros(5), 1.0, 1.0, random_state=7)
    np.testing.assert_array_equal(a, b)
    c = dpcore.laplace_mechanism(np.zeros(5), 1.0, 1.0)
    d = dpcore.laplace_mechanism(np.zeros(5), 1.0, 1.0)
    assert not np.array_equal(c, d)
    g1 = dpcore.gaussian_mechanism(np.zeros(5), 1.0, 1.0, 1e-6, random_state=7)
    g2 = dpcore.gaussian_mechanism(np.zeros(5), 1.0, 1.0, 1e-6, random_state=7)
    np.testing.assert_array_equal(g1, g2)


def test_shared_generator_advances():
    rng = noise.ChaChaRng(3)
    a = dpcore.laplace_mechanism(0.0, 1.0, 1.0, random_state=rng)
    b = dpcore.laplace_mechanism(0.0, 1.0, 1.0, random_state=rng)
    assert a != b


# --------------------------------------------------------------------------- plans


@pytest.mark.parametrize("sensitivity", [1e-6, 0.37, 1.0, 250.0])
@pytest.mark.parametrize("epsilon", [0.01, 0.3, 1.0, 7.0])
@pytest.mark.parametrize("dim", [1, 10, 100_000])
def test_laplace_plan_is_exactly_private_and_tight(sensitivity, epsilon, dim):
    plan = noise.laplace_plan(sensitivity, epsilon, dim)
    g = Fraction(2) ** plan.grid_exponent
    assert Fraction(plan.granularity) == g
    # Integer sensitivity after snapping covers the real one plus one grid unit per coordinate.
    assert plan.integer_sensitivity >= Fraction(sensitivity) / g + dim - 1
    assert plan.integer_sensitivity == math.floor(Fraction(sensitivity) / g) + dim
    # The discrete Laplace scale gives exactly epsilon_used <= epsilon.
    tau = Fraction(plan.scale_num, plan.scale_den)
    eps_guaranteed = Fraction(plan.integer_sensitivity) / tau
    assert eps_guaranteed <= Fraction(epsilon)
    assert float(eps_guaranteed) == pytest.approx(epsilon, rel=2**-28)
    # Granularity is 2^-40 of the noise scale; inflation negligible.
    assert plan.granularity <= sensitivity / epsilon * 2.0**-40
    assert 1.0 <= plan.sensitivity_inflation <= 1.0 + 2 * dim * 2.0**-40 / epsilon + 1e-15
    assert plan.scale == pytest.approx(sensitivity / epsilon, rel=1e-6 + 4 * dim * 2.0**-40 / epsilon)


@pytest.mark.parametrize("epsilon,delta", [(0.1, 1e-6), (1.0, 1e-5), (1.0, 1e-9), (5.0, 1e-6)])
@pytest.mark.parametrize("dim", [1, 1000])
def test_gaussian_plan_meets_its_zcdp_target(epsilon, delta, dim):
    plan = noise.gaussian_plan(2.0, epsilon, delta, dim, method="zcdp")
    g = Fraction(2) ** plan.grid_exponent
    # Exact upper bound on the snapped query's L2 sensitivity in grid units: Δ/g + sqrt(d).
    units_needed = Fraction(2.0) / g + Fraction(math.nextafter(math.sqrt(dim), math.inf))
    assert Fraction(plan.sensitivity_units) >= units_needed
    rho_actual = units_needed**2 / (2 * plan.sigma2_units)
    assert rho_actual <= Fraction(plan.rho)
    assert calibrate.zcdp_delta(float(rho_actual), epsilon) <= delta
    assert plan.sigma >= 2.0 / math.sqrt(2 * plan.rho)
    assert plan.sensitivity_inflation < 1.0 + 1e-3
    # The zCDP route is more conservative than the analytic continuous Gaussian, but not by much.
    analytic = calibrate.gaussian_sigma_analytic(2.0, epsilon, delta)
    assert analytic <= plan.sigma <= 1.35 * analytic


# --------------------------------------------------------------------------- released values


def test_releases_lie_on_the_grid_and_keep_shape():
    x = np.array([[0.1, -2.5], [3.0, 1e3]])
    plan = noise.laplace_plan(1.0, 0.5, x.size)
    out = dpcore.laplace_mechanism(x, 1.0, 0.5, random_state=1)
    assert out.shape == x.shape and out.dtype == np.float64
    units = out / plan.granularity
    np.testing.assert_array_equal(units, np.round(units))
    s = dpcore.laplace_mechanism(3.0, 1.0, 0.5, random_state=1)
    assert isinstance(s, float)
    gplan = noise.gaussian_plan(1.0, 1.0, 1e-6, 4)
    gout = dpcore.gaussian_mechanism(x, 1.0, 1.0, 1e-6, random_state=1)
    gunits = gout / gplan.granularity
    np.testing.assert_array_equal(gunits, np.round(gunits))


def test_low_order_bits_of_the_input_do_not_reach_the_output():
    # Mironov's attack reads the input from the low-order bits of x + float-noise. With snapping,
    # inputs that round to the same grid point give bit-identical outputs under the same noise.
    x = 0.3
    y = np.nextafter(0.3, 1.0)
    for mech in (
        lambda v: dpcore.laplace_mechanism(v, 1.0, 1.0, random_state=11),
        lambda v: dpcore.gaussian_mechanism(v, 1.0, 1.0, 1e-6, method="zcdp", random_state=11),
    ):
        assert mech(x) == mech(y)


def test_laplace_noise_matches_the_continuous_laplace_cdf():
    value, sens, eps = 1.25, 1.0, 0.7
    plan = noise.laplace_plan(sens, eps)
    out = noise.sample_laplace_mechanism(value, sens, eps, 200_000, random_state=2024)
    assert out.shape == (200_000,)
    res = stats.kstest(out - value, stats.laplace(scale=plan.scale).cdf)
    assert res.pvalue > ALPHA


def test_gaussian_noise_matches_the_continuous_normal_cdf():
    value, sens, eps, delta = -4.0, 2.0, 1.0, 1e-6
    plan = noise.gaussian_plan(sens, eps, delta)
    out = noise.sample_gaussian_mechanism(value, sens, eps, delta, 200_000, random_state=2025)
    res = stats.kstest(out - value, stats.norm(scale=plan.sigma).cdf)
    assert res.pvalue > ALPHA


def test_vector_releases_have_independent_coordinates():
    plan = noise.laplace_plan(1.0, 1.0, 3)
    out = noise.sample_laplace_mechanism(np.zeros(3), 1.0, 1.0, 50_000, random_state=5)
    assert out.shape == (50_000, 3)
    corr = np.corrcoef(out.T)
    # |r| for independent coordinates is ~N(0, 1/n); 6 sd is far beyond α = 1e-6.
    assert np.all(np.abs(corr[np.triu_indices(3, 1)]) < 6 / math.sqrt(50_000))
    for j in range(3):
        assert stats.kstest(out[:, j], stats.laplace(scale=plan.scale).cdf).pvalue > ALPHA


def _chi_square_pvalue(samples, support, pmf):
    counts = np.array([(samples == k).sum() for k in support], dtype=float)
    tail = len(samples) - counts.sum()
    expected = len(samples) * pmf
    expected_tail = len(samples) - expected.sum()
    obs = np.append(counts, tail)
    exp = np.append(expected, expected_tail)
    keep = exp >= 5
    obs = np.append(obs[keep], obs[~keep].sum())
    exp = np.append(exp[keep], exp[~keep].sum())
    if exp[-1] < 1e-9:
        obs, exp = obs[:-1], exp[:-1]
    return stats.chisquare(obs, exp).pvalue


def test_discrete_laplace_is_exact():
    num, den = 7, 3
    y = noise.discrete_laplace(num, den, 300_000, random_state=31)
    assert y.dtype == np.int64
    support = np.arange(-40, 41)
    r = math.exp(-den / num)
    pmf = (1 - r) / (1 + r) * r ** np.abs(support)
    assert _chi_square_pvalue(y, support, pmf) > ALPHA


def test_discrete_gaussian_is_exact():
    num, den = 9, 2
    y = noise.discrete_gaussian(num, den, 300_000, random_state=32)
    wide = np.arange(-200, 201)
    w = np.exp(-(wide.astype(float) ** 2) / (2 * num / den))
    pmf_all = w / w.sum()
    support = np.arange(-20, 21)
    pmf = pmf_all[200 - 20 : 200 + 21]
    assert _chi_square_pvalue(y, support, pmf) > ALPHA


def test_auxiliary_draws_match_their_laws():
    g = noise.gumbel(100_000, random_state=41)
    assert stats.kstest(g, stats.gumbel_r.cdf).pvalue > ALPHA
    e = noise.exponential(100_000, random_state=42)
    assert stats.kstest(e, stats.expon.cdf).pvalue > ALPHA
    rng = noise.ChaChaRng(43)
    vecs = np.array([noise.gamma_norm_vector(4, 0.5, random_state=rng) for _ in range(20_000)])
    norms = np.linalg.norm(vecs, axis=1)
    assert stats.kstest(norms, stats.gamma(a=4, scale=0.5).cdf).pvalue > ALPHA
    directions = vecs / norms[:, None]
    # Uniform direction: mean of each coordinate ~ N(0, 1/(4n)).
    assert np.all(np.abs(directions.mean(axis=0)) < 6 * math.sqrt(1 / (4 * 20_000)))


# --------------------------------------------------------------------------- validation and accounting


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: dpcore.laplace_mechanism(np.nan, 1.0, 1.0), "value"),
        (lambda: dpcore.laplace_mechanism([1.0, np.inf], 1.0, 1.0), "value"),
        (lambda: dpcore.laplace_mechanism([], 1.0, 1.0), "value"),
        (lambda: dpcore.laplace_mechanism(["a"], 1.0, 1.0), "value"),
        (lambda: dpcore.laplace_mechanism(1.0, 0.0, 1.0), "sensitivity"),
        (lambda: dpcore.laplace_mechanism(1.0, -1.0, 1.0), "sensitivity"),
        (lambda: dpcore.laplace_mechanism(1.0, 1.0, 0.0), "epsilon"),
        (lambda: dpcore.laplace_mechanism(1.0, 1.0, float("nan")), "epsilon"),
        (lambda: dpcore.gaussian_mechanism(1.0, 1.0, 1.0, 0.0), "delta"),
        (lambda: dpcore.gaussian_mechanism(1.0, 1.0, 1.0, 1.0), "delta"),
        (lambda: dpcore.gaussian_mechanism(1.0, 1.0, -1.0, 1e-6), "epsilon"),
        (lambda: dpcore.gaussian_mechanism(1.0, np.inf, 1.0, 1e-6), "sensitivity"),
        (lambda: noise.sample_laplace_mechanism(0.0, 1.0, 1.0, 0), "n_samples"),
        (lambda: noise.discrete_laplace(0, 1), "scale"),
        (lambda: noise.discrete_gaussian(1, 2**121), "sigma2"),
        (lambda: noise.gamma_norm_vector(0, 1.0), "dim"),
        (lambda: noise.gamma_norm_vector(3, -1.0), "scale"),
    ],
)
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_value_too_large_for_the_grid_is_rejected():
    with pytest.raises(ValueError, match="value"):
        dpcore.laplace_mechanism(1e300, 1e-200, 1.0)


def test_accountant_is_charged_before_release_and_overspend_samples_nothing():
    acc = BudgetAccountant(epsilon=1.0, delta=1e-5, accounting="basic")
    dpcore.laplace_mechanism(0.0, 1.0, 0.4, accountant=acc)
    dpcore.gaussian_mechanism(0.0, 1.0, 0.5, 1e-6, accountant=acc)
    eps_spent, delta_spent = acc.spent
    assert eps_spent == pytest.approx(0.9) and delta_spent == pytest.approx(1e-6)
    rng = noise.ChaChaRng(99)
    with pytest.raises(BudgetExceededError):
        dpcore.laplace_mechanism(0.0, 1.0, 0.2, accountant=acc, random_state=rng)
    # The generator was not touched: its next output equals a fresh generator's first output.
    assert rng.next_u64() == noise.ChaChaRng(99).next_u64()
    assert acc.spent[0] == pytest.approx(0.9)


# ------------------------------------------------------------------ coupled float noise vectors
def test_coupled_gamma_norm_vector_has_the_gamma_norm_law_and_a_tiny_error_bound():
    """KS test of the norms against Gamma(d, scale) and of a fixed-direction projection's sign
    symmetry; the returned error bound is always a tiny fraction of the norm."""
    d, scale, n = 6, 0.5, 4000
    draws = [noise.gamma_norm_vector_coupled(d, scale, random_state=noise.ChaChaRng(1000 + i)) for i in range(n)]
    norms = np.array([np.linalg.norm(b) for b, _ in draws])
    errs = np.array([e for _, e in draws])
    assert np.all(errs < 1e-13 * (1 + norms))
    assert stats.kstest(norms, stats.gamma(d, scale=scale).cdf).pvalue > 1e-7
    # Uniform direction: the first coordinate of b/||b|| has the law of a Beta-based marginal,
    # (u+1)/2 ~ Beta((d-1)/2, (d-1)/2).
    u = np.array([b[0] for b, _ in draws]) / norms
    assert stats.kstest((u + 1) / 2, stats.beta((d - 1) / 2, (d - 1) / 2).cdf).pvalue > 1e-7


def test_coupled_normal_vector_is_standard_normal_and_reproducible():
    b, err = noise.normal_vector_coupled(20_000, 2.0, random_state=3)
    assert err < 1e-12
    assert stats.kstest(b / 2.0, "norm").pvalue > 1e-7
    b2, err2 = noise.normal_vector_coupled(20_000, 2.0, random_state=3)
    assert np.array_equal(b, b2) and err == err2


@pytest.mark.parametrize("call", [
    lambda: noise.gamma_norm_vector_coupled(0, 1.0),
    lambda: noise.gamma_norm_vector_coupled(3, np.nan),
    lambda: noise.normal_vector_coupled(3, 0.0),
    lambda: noise.normal_vector_coupled(-1, 1.0),
])
def test_coupled_vectors_validate(call):
    with pytest.raises((ValueError, TypeError), match="dim|scale|sigma"):
        call()

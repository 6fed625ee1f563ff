"""Tests of the analytic-Gaussian release (``dpcore.mechanisms.noise.gaussian_plan(method="analytic")``, the
default of :func:`dpcore.gaussian_mechanism`): the continuous Gaussian mechanism rounded to a
power-of-two grid, with the normal sampled exactly (Karney 2016) and the grid cell decided exactly.

All randomness is seeded, so outcomes are deterministic; every statistical assertion about a
correct sampler has false-failure probability ≤ α = 1e-6 by construction. The audit of the broken
copy (half σ) was sized from the expected counts (binomial simulation of the audit statistic):

=====================  =========  ==========================  =============================
(Δ, ε, δ)              claimed ε  lower bound, correct copy   lower bound, half-σ copy
=====================  =========  ==========================  =============================
(1, 1, 1e-5), n = 1e6  1          0.63 ± 0.02                 1.44 ± 0.04  (asserted > 1.2)
(1, 1, 1e-3), d = 3,   1          0.82 ± 0.02                 1.91 ± 0.03  (asserted > 1.2)
n = 5e5, projected
=====================  =========  ==========================  =============================
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import dpcore
from dpcore import _core, audit
from dpcore.accounting import calibrate
from dpcore.mechanisms import noise
from dpcore.accounting.accountant import BudgetAccountant

ALPHA = 1e-6


def _chi_square_pvalue(samples: np.ndarray, support: np.ndarray, pmf: np.ndarray) -> float:
    """Pearson χ² p-value of integer ``samples`` against ``pmf`` on ``support`` (rest = one tail
    cell); cells with expectation < 5 are pooled."""
    n = len(samples)
    counts = np.array([(samples == k).sum() for k in support], dtype=float)
    obs = np.append(counts, n - counts.sum())
    exp = np.append(n * pmf, n * max(0.0, 1.0 - pmf.sum()))
    keep = exp >= 5
    obs = np.append(obs[keep], obs[~keep].sum())
    exp = np.append(exp[keep], exp[~keep].sum())
    if exp[-1] < 1e-9:
        assert obs[-1] == 0, "draws where the law has no mass"
        obs, exp = obs[:-1], exp[:-1]
    exp *= obs.sum() / exp.sum()  # absorb the ~1e-16 rounding of the Φ-differences
    return stats.chisquare(obs, exp).pvalue


# --------------------------------------------------------------------------- the plan


@pytest.mark.parametrize("sensitivity", [1e-6, 1.0, 250.0])
@pytest.mark.parametrize("epsilon,delta", [(0.1, 1e-6), (1.0, 1e-5), (1.0, 1e-9), (5.0, 1e-6)])
def test_analytic_plan_is_private_and_tight(sensitivity, epsilon, delta):
    plan = noise.gaussian_plan(sensitivity, epsilon, delta)
    assert plan.method == "analytic"
    sigma_opt = calibrate.gaussian_sigma_analytic(sensitivity, epsilon, delta)
    assert sigma_opt <= plan.sigma <= sigma_opt * (1 + 1e-12)
    assert calibrate.gaussian_delta(plan.sigma, sensitivity, epsilon) <= delta
    assert plan.delta_used == calibrate.gaussian_delta(plan.sigma, sensitivity, epsilon) <= delta
    # g = 2^(floor(log2 σ) − 40): σ/g in [2^40, 2^41), exactly.
    g = Fraction(2) ** plan.grid_exponent
    assert Fraction(plan.granularity) == g
    assert 2**40 <= Fraction(plan.sigma) / g < 2**41
    assert plan.grid_exponent == math.frexp(plan.sigma)[1] - 1 - noise.ANALYTIC_GRID_BITS
    # No snapping before the noise: no sensitivity inflation; the zCDP-only fields are blank.
    assert plan.sensitivity_inflation == 1.0
    assert Fraction(plan.sensitivity_units) >= Fraction(sensitivity) / g
    assert math.isnan(plan.rho) and math.isnan(plan.rho_used) and plan.sigma2_units == 0
    # The analytic route needs less noise than the zCDP route (which stays available).
    zplan = noise.gaussian_plan(sensitivity, epsilon, delta, method="zcdp")
    assert zplan.method == "zcdp" and zplan.noise_args()[0] == "gaussian"
    assert 1.0 < zplan.sigma / plan.sigma < 1.25
    assert zplan.delta_used <= delta * (1 + 1e-9)


def test_analytic_sigma_does_not_depend_on_the_dimension():
    # Rotation invariance: only the L2 sensitivity matters, so σ is the same for any dim.
    p1 = noise.gaussian_plan(1.0, 1.0, 1e-5, dim=1)
    p2 = noise.gaussian_plan(1.0, 1.0, 1e-5, dim=10_000)
    assert p1.sigma == p2.sigma and p1.grid_exponent == p2.grid_exponent and p2.dim == 10_000


def test_default_method_is_analytic_and_methods_differ():
    assert noise.gaussian_plan(1.0, 1.0, 1e-5).method == "analytic"
    x = np.array([0.25, -1.0, 3.0])
    a = dpcore.gaussian_mechanism(x, 1.0, 1.0, 1e-5, random_state=3)
    b = dpcore.gaussian_mechanism(x, 1.0, 1.0, 1e-5, method="analytic", random_state=3)
    c = dpcore.gaussian_mechanism(x, 1.0, 1.0, 1e-5, method="zcdp", random_state=3)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    s = noise.sample_gaussian_mechanism(0.0, 1.0, 1.0, 1e-5, 10, random_state=4)
    t = noise.sample_gaussian_mechanism(0.0, 1.0, 1.0, 1e-5, 10, method="analytic", random_state=4)
    np.testing.assert_array_equal(s, t)


def test_noise_args_is_only_for_the_zcdp_grid_sampler():
    with pytest.raises(ValueError, match="zcdp"):
        noise.gaussian_plan(1.0, 1.0, 1e-5).noise_args()


# --------------------------------------------------------------------------- exact distribution


@pytest.mark.parametrize(
    "x_units,sigma_units,k",
    [
        (0.37, 1.3, 0),
        (-2.71, 0.45, 0),
        (5.5, 2.0, 0),  # x on a cell boundary
        (0.125, 0.8, 3),
        (1e-30, 0.6, 0),  # |x| ≪ g: hundreds of binary digits, arbitrary-precision decisions
        (1000.0 + 2.0**-30, 3.1, -5),
    ],
)
def test_grid_indices_have_the_exact_rounded_normal_law(x_units, sigma_units, k):
    g = 2.0**k
    x, sigma = x_units * g, sigma_units * g
    n = 300_000
    out = _core.analytic_release(np.array([x]), sigma, k, noise.ChaChaRng(17), n)
    assert out.shape == (n, 1)
    j = out[:, 0] / g
    np.testing.assert_array_equal(j, np.round(j))
    j = j.astype(np.int64)
    centre = round(x_units)
    support = np.arange(centre - int(12 * sigma_units) - 2, centre + int(12 * sigma_units) + 3)
    # P[j] = Φ(((j+½)g − x)/σ) − Φ(((j−½)g − x)/σ), evaluated on the upper or lower tail for accuracy.
    hi = (support + 0.5 - x_units) / sigma_units
    lo = (support - 0.5 - x_units) / sigma_units
    pmf = np.where(lo > 0, stats.norm.sf(lo) - stats.norm.sf(hi), stats.norm.cdf(hi) - stats.norm.cdf(lo))
    assert _chi_square_pvalue(j, support, pmf) > ALPHA


def test_one_seed_gives_the_exact_rounding_of_x_plus_sigma_z():
    # The random bits (hence every digit of Z) do not depend on x, so under one seed the release
    # is exactly g·⌊x/g + ½ + σZ/g⌋: shifting x by m grid steps shifts it by exactly m·g, and
    # sub-grid shifts move it monotonically by at most one step each — no float artefacts of x.
    eps, delta = 1.0, 1e-5
    g = noise.gaussian_plan(1.0, eps, delta).granularity
    base = 0.3

    def release(x):
        return dpcore.gaussian_mechanism(x, 1.0, eps, delta, random_state=21)

    r0 = release(base)
    for m in (1, -7, 2**20):
        assert release(base + m * g) == r0 + m * g
    outs = np.array([release(base + g * t) for t in np.linspace(0.0, 3.0, 25)])
    steps = np.diff(outs) / g
    assert set(np.unique(steps)) <= {0.0, 1.0}
    assert outs[-1] - outs[0] == 3 * g
    assert release(np.nextafter(base, 1.0)) - r0 in (0.0, g)


def test_fine_grid_releases_match_the_continuous_normal():
    value, sens, eps, delta = -4.0, 2.0, 1.0, 1e-6
    plan = noise.gaussian_plan(sens, eps, delta)
    out = noise.sample_gaussian_mechanism(value, sens, eps, delta, 200_000, random_state=2026)
    assert out.shape == (200_000,)
    units = out / plan.granularity
    np.testing.assert_array_equal(units, np.round(units))
    assert stats.kstest(out, stats.norm(loc=value, scale=plan.sigma).cdf).pvalue > ALPHA


def test_vector_releases_shape_determinism_and_independence():
    x = np.array([[0.1, -2.5, 7.0], [3.0, 1e3, -1e-9]])
    a = dpcore.gaussian_mechanism(x, 1.0, 0.5, 1e-6, random_state=11)
    b = dpcore.gaussian_mechanism(x, 1.0, 0.5, 1e-6, random_state=11)
    c = dpcore.gaussian_mechanism(x, 1.0, 0.5, 1e-6, random_state=12)
    assert a.shape == x.shape and a.dtype == np.float64
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    plan = noise.gaussian_plan(1.0, 0.5, 1e-6, x.size)
    units = a / plan.granularity
    np.testing.assert_array_equal(units, np.round(units))
    s = dpcore.gaussian_mechanism(2.0, 1.0, 0.5, 1e-6, random_state=1)
    assert isinstance(s, float)
    rng = noise.ChaChaRng(5)
    assert dpcore.gaussian_mechanism(0.0, 1.0, 1.0, 1e-5, random_state=rng) != dpcore.gaussian_mechanism(
        0.0, 1.0, 1.0, 1e-5, random_state=rng
    )
    # Rows are independent releases; coordinates are independent N(x_i, σ²).
    v = np.array([0.0, 5.0, -3.0])
    out = noise.sample_gaussian_mechanism(v, 1.0, 1.0, 1e-5, 50_000, random_state=13)
    assert out.shape == (50_000, 3)
    corr = np.corrcoef(out.T)
    assert np.all(np.abs(corr[np.triu_indices(3, 1)]) < 6 / math.sqrt(50_000))
    sigma = noise.gaussian_plan(1.0, 1.0, 1e-5, 3).sigma
    for i in range(3):
        assert stats.kstest(out[:, i], stats.norm(loc=v[i], scale=sigma).cdf).pvalue > ALPHA
    # Same seed, same n: identical (parallel chunks use per-chunk streams).
    again = noise.sample_gaussian_mechanism(v, 1.0, 1.0, 1e-5, 50_000, random_state=13)
    np.testing.assert_array_equal(out, again)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: noise.gaussian_plan(1.0, 1.0, 1e-5, method="exact"), "method"),
        (lambda: noise.gaussian_plan(1.0, 1.0, 1e-5, method=None), "method"),
        (lambda: dpcore.gaussian_mechanism(1.0, 1.0, 1.0, 1e-5, method="classic"), "method"),
        (lambda: noise.sample_gaussian_mechanism(1.0, 1.0, 1.0, 1e-5, 10, method="Analytic"), "method"),
        (lambda: dpcore.gaussian_mechanism(np.nan, 1.0, 1.0, 1e-5), "value"),
        (lambda: dpcore.gaussian_mechanism([1.0, np.inf], 1.0, 1.0, 1e-5), "value"),
        (lambda: dpcore.gaussian_mechanism(1e300, 1e-200, 1.0, 1e-5), "value"),  # |x|/g > 2^100
        (lambda: dpcore.gaussian_mechanism(1.0, 0.0, 1.0, 1e-5), "sensitivity"),
        (lambda: dpcore.gaussian_mechanism(1.0, 1.0, 0.0, 1e-5), "epsilon"),
        (lambda: dpcore.gaussian_mechanism(1.0, 1.0, 1.0, 0.0), "delta"),
        (lambda: noise.gaussian_plan(1e-300, 1.0, 1e-5), "sigma"),  # σ below the supported grid range
        (lambda: _core.analytic_release(np.zeros(2), float("nan"), 0, noise.ChaChaRng(1)), "sigma"),
        (lambda: _core.analytic_release(np.zeros(2), -1.0, 0, noise.ChaChaRng(1)), "sigma"),
        (lambda: _core.analytic_release(np.zeros(2), 1.0, -80, noise.ChaChaRng(1)), "sigma"),  # σ/g = 2^80
        (lambda: _core.analytic_release(np.zeros(2), 1.0, 5000, noise.ChaChaRng(1)), "grid_exponent"),
        (lambda: _core.analytic_release(np.zeros(0), 1.0, 0, noise.ChaChaRng(1)), "value"),
        (lambda: _core.analytic_release(np.zeros(1), 1.0, 0, noise.ChaChaRng(1), 0), "n_samples"),
    ],
)
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_bad_method_charges_nothing():
    acc = BudgetAccountant(epsilon=1.0, delta=1e-5, accounting="basic")
    with pytest.raises(ValueError, match="method"):
        dpcore.gaussian_mechanism(0.0, 1.0, 0.5, 1e-6, method="nope", accountant=acc)
    assert acc.spent == (0.0, 0.0)
    dpcore.gaussian_mechanism(0.0, 1.0, 0.5, 1e-6, accountant=acc)
    assert acc.spent[0] == pytest.approx(0.5) and acc.spent[1] == pytest.approx(1e-6)


# --------------------------------------------------------------------------- empirical privacy audit


def _sampler(sensitivity, epsilon, delta):
    """The default (analytic) Gaussian mechanism calibrated for ``sensitivity``."""

    def sampler(value, n, seed):
        return noise.sample_gaussian_mechanism(value, sensitivity, epsilon, delta, n, random_state=seed)

    return sampler


def _thresholds(sensitivity, epsilon, delta, num=41):
    """Fixed before sampling, from the *claimed* mechanism's σ."""
    sigma = noise.gaussian_plan(sensitivity, epsilon, delta).sigma
    return sensitivity / 2.0 + sigma * np.linspace(-5.0, 5.0, num)


def test_analytic_gaussian_passes_audit_and_auditor_catches_half_sigma():
    sens, eps, delta = 1.0, 1.0, 1e-5
    thr = _thresholds(sens, eps, delta)
    ok = audit.audit(_sampler(sens, eps, delta), 0.0, sens, n_samples=10**6, thresholds=thr,
                     delta=delta, alpha=ALPHA, random_state=1001)
    ok.assert_private(eps)
    assert ok.epsilon_lower_bound > 0.3 * eps, ok  # the audit does see the signal
    broken = _sampler(sens / 2.0, eps, delta)  # σ calibrated for Δ/2: half the noise
    bad = audit.audit(broken, 0.0, sens, n_samples=10**6, thresholds=thr, delta=delta, alpha=ALPHA,
                      random_state=1002)
    assert bad.epsilon_lower_bound > 1.2 * eps, bad
    assert not bad.check(eps)


def test_analytic_gaussian_vector_audit_along_the_difference():
    d, sens, eps, delta = 3, 1.0, 1.0, 1e-3
    n = 5 * 10**5
    u = np.ones(d) / math.sqrt(d)  # ||b − a||₂ = Δ
    a, b = np.full(d, 2.0), 2.0 + sens * u
    sigma = noise.gaussian_plan(sens, eps, delta, dim=d).sigma
    thr = float(a @ u) + sens / 2.0 + sigma * np.linspace(-5.0, 5.0, 41)
    ok = audit.audit(_sampler(sens, eps, delta), a, b, n_samples=n, thresholds=thr, direction=u,
                     delta=delta, alpha=ALPHA, random_state=1003)
    ok.assert_private(eps)
    bad = audit.audit(_sampler(sens / 2.0, eps, delta), a, b, n_samples=n, thresholds=thr, direction=u,
                      delta=delta, alpha=ALPHA, random_state=1004)
    assert bad.epsilon_lower_bound > 1.2 * eps, bad

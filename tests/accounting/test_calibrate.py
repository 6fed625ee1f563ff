"""Tests for dpcore.accounting.calibrate: closed forms, numerical guarantees and input validation."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize, special, stats

from dpcore.accounting import calibrate as cal  # ----------------------------------------------------------------------------- references
def _gaussian_delta_quad(sigma, sens, eps):
    """Independent reference: δ = ∫ (p(x) − e^ε q(x))_+ dx with p = N(0,σ²), q = N(Δ,σ²).

    The privacy loss log p/q = Δ(Δ − 2x)/(2σ²) exceeds ε iff x < Δ/2 − εσ²/Δ.
    """
    t = sens / 2.0 - eps * sigma * sigma / sens

    def f(x):
        lp = stats.norm.logpdf(x, 0.0, sigma)
        lq = stats.norm.logpdf(x, sens, sigma)
        return math.exp(lp) * -math.expm1(eps + lq - lp)

    # integrate over a window of the relevant tail in pieces for accuracy
    lo = t - 40.0 * sigma
    val, _ = integrate.quad(f, lo, t, epsabs=0.0, epsrel=1e-13, limit=1000)
    return val


def _zcdp_log_f(a, rho, eps):
    return (a - 1.0) * (a * rho - eps) - np.log(a - 1.0) + a * np.log1p(-1.0 / a)


def _zcdp_delta_grid(rho, eps):
    """CKS Cor. 13 minimised over a fine grid of α, refined with Brent (independent of dpcore)."""
    a = 1.0 + np.logspace(-9, 9, 200001)
    f = _zcdp_log_f(a, rho, eps)
    i = int(np.argmin(f))
    lo, hi = math.log(a[max(i - 1, 0)] - 1.0), math.log(a[min(i + 1, a.size - 1)] - 1.0)
    res = optimize.minimize_scalar(
        lambda u: _zcdp_log_f(1.0 + math.exp(u), rho, eps), bounds=(lo, hi), method="bounded",
        options={"xatol": 1e-12},
    )
    return min(1.0, math.exp(min(f[i], res.fun)))


# ----------------------------------------------------------------------------- Laplace
def test_laplace_scale():
    assert cal.laplace_scale(1.0, 0.5) == 2.0
    assert cal.laplace_scale(3.0, 2.0) == 1.5


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_laplace_scale_rejects_bad_epsilon(bad):
    with pytest.raises(ValueError, match="epsilon"):
        cal.laplace_scale(1.0, bad)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_laplace_scale_rejects_bad_sensitivity(bad):
    with pytest.raises(ValueError, match="sensitivity"):
        cal.laplace_scale(bad, 1.0)


def test_type_errors_name_parameter():
    with pytest.raises(TypeError, match="epsilon"):
        cal.laplace_scale(1.0, "1")
    with pytest.raises(TypeError, match="sensitivity"):
        cal.gaussian_sigma_analytic(None, 1.0, 1e-5)


# ----------------------------------------------------------------------------- classic Gaussian
def test_classic_gaussian_formula():
    got = cal.gaussian_sigma_classic(2.0, 0.5, 1e-5)
    assert got == pytest.approx(2.0 * math.sqrt(2.0 * math.log(1.25e5)) / 0.5, rel=1e-15)


@pytest.mark.parametrize("eps", [1.0, 1.5, 10.0])
def test_classic_gaussian_refuses_large_epsilon(eps):
    with pytest.raises(ValueError, match="epsilon must be < 1"):
        cal.gaussian_sigma_classic(1.0, eps, 1e-5)


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-9, math.nan])
def test_classic_gaussian_refuses_bad_delta(delta):
    with pytest.raises(ValueError, match="delta"):
        cal.gaussian_sigma_classic(1.0, 0.5, delta)


# ----------------------------------------------------------------------------- analytic Gaussian
@pytest.mark.parametrize(
    "sigma,sens,eps",
    [(1.0, 1.0, 1.0), (3.73, 1.0, 1.0), (7.0, 1.0, 0.5), (0.134, 1.0, 50.0), (500.0, 1.0, 0.01),
     (3.7, 1.0, 10.0), (2.0, 5.0, 0.3)],
)
def test_gaussian_delta_matches_independent_integral(sigma, sens, eps):
    ref = _gaussian_delta_quad(sigma, sens, eps)
    assert cal.gaussian_delta(sigma, sens, eps) == pytest.approx(ref, rel=1e-9)


def test_gaussian_delta_matches_direct_formula_moderate_regime():
    for sigma, eps in [(0.5, 0.1), (1.0, 1.0), (2.0, 3.0), (4.0, 0.7)]:
        direct = stats.norm.cdf(0.5 / sigma - eps * sigma) - math.exp(eps) * stats.norm.cdf(
            -0.5 / sigma - eps * sigma
        )
        assert cal.gaussian_delta(sigma, 1.0, eps) == pytest.approx(direct, rel=1e-10)


def test_gaussian_delta_tiny_and_huge_epsilon_are_finite():
    # tiny δ: the naive formula cancels to 0 or goes negative; ours keeps relative accuracy
    d = cal.gaussian_delta(3.7048918566257876, 1.0, 10.0)
    assert 9.9e-301 < d < 1.01e-300
    # ε large enough that e^ε overflows a double
    d = cal.gaussian_delta(0.05, 1.0, 800.0)
    assert 0.0 <= d < 1.0 and math.isfinite(d)


def test_gaussian_delta_is_decreasing_in_sigma():
    sig = np.geomspace(0.05, 50, 200)
    ds = [cal.gaussian_delta(s, 1.0, 1.0) for s in sig]
    assert all(a >= b for a, b in zip(ds, ds[1:]))


@pytest.mark.parametrize(
    "eps,delta",
    [(0.01, 1e-10), (0.1, 1e-5), (0.5, 1e-5), (1.0, 1e-5), (1.0, 1e-12), (3.0, 1e-6), (10.0, 1e-300),
     (50.0, 1e-3), (0.5, 0.5)],
)
def test_analytic_sigma_guarantee_and_tightness(eps, delta):
    sigma = cal.gaussian_sigma_analytic(1.0, eps, delta)
    assert cal.gaussian_delta(sigma, 1.0, eps) <= delta  # guaranteed side
    assert cal.gaussian_delta(sigma * (1 - 1e-9), 1.0, eps) > delta  # and tight
    if delta > 1e-200:
        assert _gaussian_delta_quad(sigma, 1.0, eps) <= delta * (1 + 1e-9)


def test_analytic_sigma_scales_with_sensitivity_and_beats_classic():
    s1 = cal.gaussian_sigma_analytic(1.0, 0.5, 1e-5)
    s3 = cal.gaussian_sigma_analytic(3.0, 0.5, 1e-5)
    assert s3 == pytest.approx(3 * s1, rel=1e-10)
    assert s1 < cal.gaussian_sigma_classic(1.0, 0.5, 1e-5)
    # Balle & Wang (2018), Fig. 1 regime: for ε = 1, δ = 1e-5 the analytic σ ≈ 3.73
    assert cal.gaussian_sigma_analytic(1.0, 1.0, 1e-5) == pytest.approx(3.7306, abs=1e-3)


@settings(max_examples=60, deadline=None)
@given(
    eps=st.floats(1e-3, 20.0),
    log10_delta=st.floats(-15.0, -1.0),
    sens=st.floats(1e-3, 1e3),
)
def test_analytic_sigma_property(eps, log10_delta, sens):
    delta = 10.0**log10_delta
    sigma = cal.gaussian_sigma_analytic(sens, eps, delta)
    assert cal.gaussian_delta(sigma, sens, eps) <= delta


def test_analytic_sigma_validation():
    with pytest.raises(ValueError, match="delta"):
        cal.gaussian_sigma_analytic(1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="epsilon"):
        cal.gaussian_sigma_analytic(1.0, -1.0, 1e-5)
    with pytest.raises(ValueError, match="sigma"):
        cal.gaussian_delta(0.0, 1.0, 1.0)


# ----------------------------------------------------------------------------- zCDP
@pytest.mark.parametrize("rho", [1e-6, 0.01, 0.1, 1.0, 10.0])
@pytest.mark.parametrize("eps", [1e-3, 0.1, 1.0, 5.0])
def test_zcdp_delta_is_the_infimum(rho, eps):
    got = cal.zcdp_delta(rho, eps)
    ref = _zcdp_delta_grid(rho, eps)
    # as tight as an independent minimisation (any α is a valid bound, so "tighter" is impossible
    # beyond rounding)
    assert got == pytest.approx(ref, rel=1e-8)


def test_zcdp_delta_beats_simple_bound_and_is_capped():
    rho, eps = 0.1, 2.0
    assert cal.zcdp_delta(rho, eps) <= math.exp(-((eps - rho) ** 2) / (4 * rho))
    assert cal.zcdp_delta(100.0, 1.0) == 1.0


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-6), (1.0, 1e-5), (2.0, 1e-9), (10.0, 1e-3), (0.5, 0.3)])
def test_zcdp_rho_is_largest_safe(eps, delta):
    rho = cal.zcdp_rho(eps, delta)
    assert cal.zcdp_delta(rho, eps) <= delta
    assert cal.zcdp_delta(rho * (1 + 1e-9), eps) > delta
    # at least as good as the Bun–Steinke conversion ε = ρ + 2 sqrt(ρ ln(1/δ))
    assert rho + 2 * math.sqrt(rho * math.log(1 / delta)) >= eps * (1 - 1e-12)


@pytest.mark.parametrize("rho,delta", [(0.01, 1e-6), (0.5, 1e-5), (3.0, 1e-9)])
def test_zcdp_epsilon_inverse(rho, delta):
    eps = cal.zcdp_epsilon(rho, delta)
    assert cal.zcdp_delta(rho, eps) <= delta
    assert cal.zcdp_delta(rho, eps * (1 - 1e-9)) > delta
    assert eps <= rho + 2 * math.sqrt(rho * math.log(1 / delta))
    assert cal.zcdp_rho(eps, delta) == pytest.approx(rho, rel=1e-8)


def test_zcdp_gaussian_sigma():
    eps, delta = 1.0, 1e-5
    sigma = cal.gaussian_sigma(2.0, eps, delta, method="zcdp")
    rho = cal.zcdp_rho(eps, delta)
    assert 2.0**2 / (2 * sigma**2) <= rho
    assert sigma == pytest.approx(2.0 / math.sqrt(2 * rho), rel=1e-12)
    # the zCDP conversion is valid for the discrete Gaussian but looser than the analytic one
    assert sigma > cal.gaussian_sigma(2.0, eps, delta)


def test_gaussian_sigma_dispatch():
    assert cal.gaussian_sigma(1.0, 0.5, 1e-5) == cal.gaussian_sigma_analytic(1.0, 0.5, 1e-5)
    assert cal.gaussian_sigma(1.0, 0.5, 1e-5, method="classic") == cal.gaussian_sigma_classic(1.0, 0.5, 1e-5)
    with pytest.raises(ValueError, match="method"):
        cal.gaussian_sigma(1.0, 0.5, 1e-5, method="moments")
    with pytest.raises(ValueError, match="epsilon must be < 1"):
        cal.gaussian_sigma(1.0, 2.0, 1e-5, method="classic")


@pytest.mark.parametrize(
    "fn,args,name",
    [
        (cal.zcdp_delta, (0.0, 1.0), "rho"),
        (cal.zcdp_delta, (1.0, math.nan), "epsilon"),
        (cal.zcdp_rho, (1.0, 0.0), "delta"),
        (cal.zcdp_rho, (-1.0, 1e-5), "epsilon"),
        (cal.zcdp_epsilon, (math.inf, 1e-5), "rho"),
        (cal.zcdp_epsilon, (1.0, 1.0), "delta"),
    ],
)
def test_zcdp_validation(fn, args, name):
    with pytest.raises(ValueError, match=name):
        fn(*args)


# ----------------------------------------------------------------------------- composition
def test_compose_basic_exact_and_rounded_up():
    eps, delta = cal.compose_basic([0.1] * 10, [1e-7] * 10)
    assert Fraction(eps) >= 10 * Fraction(0.1)
    assert Fraction(delta) >= 10 * Fraction(1e-7)
    assert eps == pytest.approx(1.0) and delta == pytest.approx(1e-6)
    assert cal.compose_basic([0.5, 0.25]) == (0.75, 0.0)


def test_compose_basic_validation():
    with pytest.raises(ValueError, match=r"epsilons\[1\]"):
        cal.compose_basic([0.1, -0.1])
    with pytest.raises(ValueError, match=r"deltas\[0\]"):
        cal.compose_basic([0.1], [1.0])
    with pytest.raises(ValueError, match="same length"):
        cal.compose_basic([0.1, 0.2], [0.0])
    with pytest.raises(ValueError, match="at least one"):
        cal.compose_basic([])


def test_compose_advanced_formula():
    eps, delta = cal.compose_advanced(0.01, 1e-7, 100, 1e-6)
    expected = math.sqrt(200 * math.log(1e6)) * 0.01 + 100 * 0.01 * math.expm1(0.01)
    assert eps == pytest.approx(expected, rel=1e-14)
    assert delta == pytest.approx(100 * 1e-7 + 1e-6, rel=1e-14)


def test_compose_advanced_never_worse_than_basic():
    # k = 10, ε = 1, δ' = 1e-6: advanced gives 33.8; basic (10, 0) is returned
    assert cal._advanced_epsilon(1.0, 10, 1e-6) > 33.0
    assert cal.compose_advanced(1.0, 0.0, 10, 1e-6) == (10.0, 0.0)
    e, d = cal.compose_advanced(1.0, 1e-7, 10, 1e-6)
    assert e == 10.0 and Fraction(d) >= 10 * Fraction(1e-7) and d == pytest.approx(1e-6, rel=1e-12)  # no δ' charged
    for eps0, k, dp in [(0.1, 100, 1e-6), (1e-3, 10**6, 1e-9), (2.0, 3, 0.5), (0.3, 17, 1e-12)]:
        e, d = cal.compose_advanced(eps0, 1e-8, k, dp)
        basic = k * Fraction(eps0)
        assert Fraction(e) <= max(basic, Fraction(cal._advanced_epsilon(eps0, k, dp))) * (1 + Fraction(1, 10**15))
        assert e <= float(basic) * (1 + 1e-15)
        if e == cal._advanced_epsilon(eps0, k, dp):
            assert d >= k * 1e-8 + dp
        else:
            assert Fraction(e) >= basic and d >= k * 1e-8


def test_compose_advanced_validation():
    with pytest.raises(ValueError, match="k must be a positive integer"):
        cal.compose_advanced(0.1, 0.0, 0, 1e-6)
    with pytest.raises(TypeError, match="k must be a positive integer"):
        cal.compose_advanced(0.1, 0.0, 2.5, 1e-6)
    with pytest.raises(ValueError, match="delta_prime"):
        cal.compose_advanced(0.1, 0.0, 5, 0.0)


@settings(max_examples=100, deadline=None)
@given(
    eps=st.floats(1e-4, 50.0),
    k=st.integers(1, 10**6),
    log10_dp=st.floats(-15.0, -0.1),
)
def test_advanced_per_step_epsilon_guaranteed_and_tight(eps, k, log10_dp):
    dp = 10.0**log10_dp
    e0 = cal.advanced_per_step_epsilon(eps, k, dp)
    assert e0 > 0
    total, _ = cal.compose_advanced(e0, 0.0, k, dp)
    assert total <= eps
    assert cal._advanced_epsilon(e0, k, dp) <= eps
    # tight for the advanced formula (compose_advanced itself returns min(basic, advanced))
    assert cal._advanced_epsilon(e0 * (1 + 1e-9), k, dp) > eps


@settings(max_examples=100, deadline=None)
@given(eps=st.floats(1e-6, 100.0), k=st.integers(1, 10**7))
def test_per_step_epsilon_basic_fits_exactly(eps, k):
    e0 = cal.per_step_epsilon(eps, k)
    assert k * Fraction(e0) <= Fraction(eps)
    assert e0 == pytest.approx(eps / k, rel=1e-15)


def test_per_step_epsilon_takes_the_better_composition():
    # many steps: advanced composition wins
    adv = cal.advanced_per_step_epsilon(1.0, 1000, 1e-6)
    assert cal.per_step_epsilon(1.0, 1000, 1e-6) == adv > 1.0 / 1000
    # few steps: plain composition wins
    assert cal.per_step_epsilon(1.0, 3, 1e-6) == cal.per_step_epsilon(1.0, 3) > cal.advanced_per_step_epsilon(1.0, 3, 1e-6)
    with pytest.raises(ValueError, match="delta_prime"):
        cal.per_step_epsilon(1.0, 10, 1.5)


# ----------------------------------------------------------------------------- extreme inputs
def test_gaussian_delta_tiny_gap_regime_is_conservative_and_tight():
    # ε = 1e-8 and σ ≈ 3e8 Δ: erfcx(x) − erfcx(x + h) with h/x ~ 1e-9 cannot be formed directly
    eps, sens = 1e-8, 1.0
    for sigma in [2.5e8, 3.06e8, 4e8]:
        r = sens / sigma
        a = 0.5 * r - eps / r
        x, h = -a / math.sqrt(2), r / math.sqrt(2)
        nodes, weights = np.polynomial.legendre.leggauss(8)
        u = x + h * (nodes + 1) / 2
        g = 2 / math.sqrt(math.pi) - 2 * u * special.erfcx(u)
        ref = 0.5 * math.exp(-0.5 * a * a) * h / 2 * float(weights @ g)
        got = cal.gaussian_delta(sigma, sens, eps)
        assert ref * (1 - 1e-9) <= got <= ref * (1 + 1e-6)
    s = cal.gaussian_sigma_analytic(1.0, 1e-8, 1e-12)
    assert cal.gaussian_delta(s, 1.0, 1e-8) <= 1e-12


@pytest.mark.parametrize(
    "fn,args",
    [
        (cal.gaussian_delta, (1e300, 1.0, 1.0)), (cal.gaussian_delta, (1e-300, 1.0, 1.0)),
        (cal.gaussian_delta, (1.0, 1.0, 1e300)), (cal.gaussian_delta, (3.0, 1.0, 700.0)),
        (cal.gaussian_sigma_analytic, (1.0, 1e-300, 0.5)), (cal.gaussian_sigma_analytic, (1.0, 1e300, 0.5)),
        (cal.gaussian_sigma_analytic, (1e-300, 1.0, 1e-5)), (cal.gaussian_sigma_analytic, (1e300, 1.0, 1e-5)),
        (cal.gaussian_sigma_analytic, (1.0, 1.0, 1e-320)), (cal.gaussian_sigma_analytic, (1.0, 1.0, 0.999999)),
        (cal.zcdp_delta, (1e-320, 1.0)), (cal.zcdp_delta, (1e300, 1.0)), (cal.zcdp_delta, (1.0, 1e300)),
        (cal.zcdp_rho, (1e300, 1e-5)), (cal.zcdp_rho, (1.0, 1e-320)), (cal.zcdp_rho, (1.0, 0.999999)),
        (cal.zcdp_epsilon, (1e-300, 0.5)), (cal.zcdp_epsilon, (1e300, 1e-5)), (cal.zcdp_epsilon, (1.0, 1e-320)),
        (cal.advanced_per_step_epsilon, (1e-300, 10, 1e-6)), (cal.advanced_per_step_epsilon, (1e300, 10, 1e-6)),
        (cal.advanced_per_step_epsilon, (1.0, 10**15, 1e-300)), (cal.per_step_epsilon, (1e308, 7)),
    ],
)
def test_extreme_inputs_terminate_with_finite_values(fn, args):
    v = fn(*args)
    assert math.isfinite(v) and v >= 0.0


def test_extreme_inputs_that_cannot_be_calibrated_raise():
    with pytest.raises(ValueError, match="epsilon"):
        cal.zcdp_rho(1e-300, 0.5)
    with pytest.raises(ValueError, match="underflows"):
        cal.per_step_epsilon(5e-324, 3)
    # the tiny-ε advanced composition is bisected properly (no product underflow)
    e0 = cal.advanced_per_step_epsilon(1e-300, 10, 1e-6)
    assert e0 == pytest.approx(1e-300 / math.sqrt(20 * math.log(1e6)), rel=1e-9)


# ---------------------------------------------------------------------------------------------- issue 22, item 6
_EXTREME = [5e-324, 1e-300, 2.2e-308, 1e-16, 0.5, 1 - 1e-16, 1.0, 2.0, 700.0, 1e16, 1e308, 1.7976931348623157e308,
            0.0, -1.0, math.inf, math.nan, 2**70, 10**400]
_ARITY = {"laplace_scale": 2, "gaussian_sigma_classic": 3, "gaussian_delta": 3, "gaussian_sigma_analytic": 3,
          "gaussian_sigma": 3, "zcdp_delta": 2, "zcdp_rho": 2, "zcdp_epsilon": 2, "compose_advanced": 4,
          "advanced_per_step_epsilon": 3, "per_step_epsilon": 3}


@pytest.mark.parametrize("args", [
    (5e-324, 5e-324, 0.5),          # bare ArithmeticError: could not bracket the analytic Gaussian sigma
    (5e-324, 1e308, 1 - 1e-16),     # method="zcdp": could not bracket zCDP rho
])
def test_gaussian_sigma_never_raises_a_bare_arithmetic_error(args):
    for method in ("analytic", "zcdp"):
        try:
            cal.gaussian_sigma(*args, method=method)
        except ValueError as e:
            assert str(e).startswith(("sensitivity", "epsilon", "delta")), str(e)


@pytest.mark.parametrize("args", [(1e308, 1 - 1e-16), (1.7976931348623157e308, 1e-300),
                                  (1.7976931348623157e308, 5e-324)])
def test_zcdp_rho_extremes_are_value_errors_naming_epsilon(args):
    # were ArithmeticError("could not bracket zCDP rho") and OverflowError(34, 'Numerical result out of range')
    with pytest.raises(ValueError, match="^epsilon="):
        cal.zcdp_rho(*args)


def test_integers_beyond_the_float_range_are_value_errors_naming_the_parameter():
    with pytest.raises(ValueError, match="^epsilon must be finite"):
        cal.laplace_scale(1.0, 10**400)  # was OverflowError: int too large to convert to float
    with pytest.raises(ValueError, match="^sensitivity must be finite"):
        cal.gaussian_sigma_analytic(10**400, 1.0, 1e-6)
    with pytest.raises(ValueError, match="^epsilon=0.5"):
        cal.compose_advanced(0.5, 0.5, 10**400, 1e-6)  # was OverflowError: integer division result too large


def test_extreme_float_sweep_refuses_only_with_named_value_or_type_errors():
    """Every public function on every combination of extreme floats: a result, or a ValueError/TypeError whose
    message starts with the name of an argument (never OverflowError/ArithmeticError/ZeroDivisionError)."""
    import inspect
    import itertools

    vals = [5e-324, 1e-300, 1 - 1e-16, 1.0, 1e308, 1.7976931348623157e308, -1.0, 2**70]
    for fname, k in _ARITY.items():
        f = getattr(cal, fname)
        params = list(inspect.signature(f).parameters)[:k]
        for args in itertools.product(vals, repeat=k):
            try:
                out = f(*args)
            except (ValueError, TypeError) as e:
                assert any(str(e).startswith(p) for p in params), (fname, args, str(e))
            else:
                for v in (out if isinstance(out, tuple) else (out,)):
                    assert math.isfinite(v) and v >= 0.0, (fname, args, out)

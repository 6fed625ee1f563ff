"""The default accounting is a privacy filter (valid for adaptively chosen parameters), issue 22 item 5.

The adaptive counterexample: Laplace(ε = 0.5); then Laplace(ε = 7.4) if its output is <= 0, else a
Gaussian with μ = 2. Each branch alone composes to (7.896, 1e-3) by PLD, which the old default
("basic OR PLD of the accepted events") accepted; the adaptive mechanism's exact δ at ε = 7.896 is
1.21e-3 > D (computed below). The filter must refuse it; PLD stays available for a sequence declared
in advance (``plan``).
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from dp_accounting import dp_event as de
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate
from scipy.stats import norm

from dpcore.accounting import BudgetAccountant
from dpcore.accounting import calibrate as cal
from dpcore.accounting import events as ev
from dpcore.exceptions import BudgetExceededError

E, D = 7.896, 1e-3
LAP_HALF = (0.5, 0.0, de.LaplaceDpEvent(2.0))                    # Laplace, sensitivity 1, ε = 0.5
LAP_BIG = (7.4, 0.0, de.LaplaceDpEvent(1.0 / 7.4))               # Laplace, ε = 7.4
GAUSS_MU2 = (7.6, 1e-3, ev.gdp_event(2.0))                       # 2-GDP is (7.59, 1e-3)-DP: declared honestly


def _adaptive_delta(eps: float) -> float:
    """Exact δ(ε) of the adaptive pair: x: Lap(0, 2) then branch; x': Lap(1, 2) then branch (shift 1)."""
    # first output y <= 0 (probability 1/2 under x): privacy loss exactly 0.5, then Laplace ε = 7.4
    # (δ(ε') = 1 − exp((ε' − 7.4)/2) for 0 <= ε' <= 7.4)
    lap = 0.5 * max(0.0, 1.0 - math.exp((eps - 0.5 - 7.4) / 2.0))

    def gauss_delta(e):  # μ-GDP hockey stick, μ = 2
        return norm.cdf(-e / 2.0 + 1.0) - math.exp(e) * norm.cdf(-e / 2.0 - 1.0)

    def integrand(y):  # y > 0: loss (|y − 1| − |y|)/2, then the Gaussian
        return 0.25 * math.exp(-y / 2.0) * gauss_delta(eps - (abs(y - 1.0) - abs(y)) / 2.0)

    g = integrate.quad(integrand, 0.0, 1.0, epsabs=1e-15)[0] + integrate.quad(integrand, 1.0, math.inf,
                                                                              epsabs=1e-15)[0]
    return lap + g


def test_adaptive_counterexample_exceeds_delta():
    assert _adaptive_delta(E) == pytest.approx(1.21 * D, rel=0.01)  # the outside check's number


@pytest.mark.parametrize("second", [LAP_BIG, GAUSS_MU2], ids=["laplace-branch", "gaussian-branch"])
def test_default_refuses_each_branch_of_the_adaptive_counterexample(second):
    acc = BudgetAccountant(E, D)
    assert acc.accounting == "filter"
    acc.spend(*LAP_HALF[:2], event=LAP_HALF[2])
    with pytest.raises(BudgetExceededError):
        acc.spend(*second[:2], event=second[2])
    assert len(acc) == 1


@pytest.mark.parametrize("second", [LAP_BIG, GAUSS_MU2], ids=["laplace-branch", "gaussian-branch"])
def test_pld_accepts_a_branch_declared_in_advance_only(second):
    acc = BudgetAccountant(E, D, accounting="pld")
    with pytest.raises(ValueError, match="plan"):
        acc.spend(*LAP_HALF[:2], event=LAP_HALF[2])    # pld without a plan: refused, nothing recorded
    assert len(acc) == 0
    acc.plan([LAP_HALF, second])                       # the whole (non-adaptive) sequence fits by PLD
    acc.spend(*LAP_HALF[:2], event=LAP_HALF[2])
    other = GAUSS_MU2 if second is LAP_BIG else LAP_BIG
    with pytest.raises(ValueError, match="plan"):       # the other branch was not declared: refused
        acc.spend(*other[:2], event=other[2])
    acc.spend(*second[:2], event=second[2])
    with pytest.raises(ValueError, match="plan"):       # the plan is used up
        acc.spend(0.001)
    assert len(acc) == 2 and acc.spent[0] <= E
    with pytest.raises(ValueError, match="plan"):
        acc.plan([LAP_HALF])                           # one plan per accountant


def test_plan_that_does_not_fit_is_refused():
    acc = BudgetAccountant(1.0, 1e-6, accounting="rdp")
    with pytest.raises(BudgetExceededError):
        acc.plan([(0.8, 0.0, None), (0.8, 0.0, None)])
    acc.plan([ev.gdp_event(0.1), (0.1, 0.0, None)])
    acc.spend(0.5, 1e-7, event=ev.gdp_event(0.1))
    acc.spend(0.1)


# ------------------------------------------------------------------ exact arithmetic, basic first
def test_pure_spends_add_up_exactly():
    acc = BudgetAccountant(1.0)
    for _ in range(4):
        acc.spend(0.25)
    assert acc.spent == (1.0, 0.0) and acc.remaining() == (0.0, 0.0)
    with pytest.raises(BudgetExceededError):
        acc.spend(1e-300)


def test_approximate_spends_add_up_exactly_to_the_delta_budget():
    acc = BudgetAccountant(1.0, 1e-6)
    acc.spend(0.5, 5e-7)
    acc.spend(0.5, 5e-7)
    assert acc.spent == (1.0, 1e-6)


# ------------------------------------------------------------------ the Rényi part
SIGMA = cal.gaussian_sigma(1.0, 0.1, 1e-7)
EVENT = ev.gaussian_event(SIGMA, 1.0)


def test_100_gaussian_releases_fit_under_the_filter():
    acc = BudgetAccountant(1.5, 1e-5)
    for _ in range(100):
        acc.spend(0.1, 1e-7, event=EVENT)
    eps, delta = acc.spent
    rho = 100 / (2 * (SIGMA) ** 2)
    # the filter's certificate: min over its orders of ρα + log(K/δ_R)/(α − 1), δ_R = D/2
    orders = [float(a) for a in BudgetAccountant.FILTER_ORDERS]
    expect = min(rho * a + math.log(len(orders) / 5e-6) / (a - 1) for a in orders)
    assert eps == pytest.approx(expect, rel=1e-9) and 1.3 < eps < 1.4
    assert delta == 5e-6


def test_gaussian_in_a_pure_budget_is_refused_and_refusal_records_nothing():
    acc = BudgetAccountant(100.0)
    with pytest.raises(BudgetExceededError):
        acc.spend(1.0, 1e-6, event=EVENT)
    assert len(acc) == 0 and acc.spent == (0.0, 0.0)


def test_remaining_pure_spend_fits_after_gaussians():
    acc = BudgetAccountant(2.0, 1e-5)
    for _ in range(50):
        acc.spend(0.1, 1e-7, event=EVENT)
    rem, _ = acc.remaining()
    assert rem > 0
    with pytest.raises(BudgetExceededError):
        acc.check(2.0)
    acc.spend(rem)  # guaranteed (a larger pure spend may still fit through the Rényi route)
    assert acc.spent[0] <= 2.0


@pytest.mark.parametrize("event", [
    de.ComposedDpEvent([de.LaplaceDpEvent(4.0), ev.gdp_event(0.3)]),
    de.SelfComposedDpEvent(ev.gdp_event(0.1), 10),
    de.RepeatAndSelectDpEvent(ev.gdp_event(0.2), 3.0, 1.0),
    ev.zcdp_event(0.01),
    ev.compose_events(ev.epsilon_delta_event(0.1, 1e-9), ev.gdp_event(0.2)),
    de.NoOpDpEvent(),
    de.UnsupportedDpEvent(),
    de.PoissonSampledDpEvent(0.1, ev.gdp_event(0.5)),  # not charged by its curve: the declared (ε, δ)
])
def test_every_event_type_gets_a_charge(event):
    acc = BudgetAccountant(50.0, 1e-5)
    acc.spend(1.0, 1e-7, event=event)
    eps, delta = acc.spent
    assert 0 <= eps <= 50.0 and delta <= 1e-5


def test_declared_fallback_for_unsupported_events():
    acc = BudgetAccountant(1.0, 1e-6)
    acc.spend(0.6, 1e-7, event=de.UnsupportedDpEvent())
    acc.spend(0.3, 1e-7, event=de.UnsupportedDpEvent())
    with pytest.raises(BudgetExceededError):
        acc.spend(0.2, 0.0, event=de.UnsupportedDpEvent())
    assert acc.spent == (pytest.approx(0.9), pytest.approx(2e-7))


# ------------------------------------------------------------------ properties
_ev = st.one_of(
    st.tuples(st.just("gauss"), st.sampled_from([0.05, 0.1, 0.3, 1.0]), st.sampled_from([1e-8, 1e-7, 1e-6])),
    st.tuples(st.just("pure"), st.sampled_from([0.05, 0.1, 0.4]), st.just(0.0)),
    st.tuples(st.just("approx"), st.sampled_from([0.05, 0.2]), st.sampled_from([1e-8, 1e-7])),
)


def _make(kind, eps, delta):
    if kind == "gauss":
        return ev.gaussian_event(cal.gaussian_sigma(1.0, eps, delta), 1.0), eps, delta
    return ev.epsilon_delta_event(eps, delta), eps, delta


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seq=st.lists(_ev, min_size=1, max_size=30),
       budget=st.sampled_from([(0.5, 1e-6), (1.0, 1e-5), (2.0, 0.0), (1.5, 3e-7)]))
def test_filter_invariants(seq, budget):
    """Whatever the sequence: spent within the budget, refusals record nothing, and pure/approximate
    (ε, δ) spends alone are accepted exactly as basic composition accepts them."""
    E, D = budget
    acc = BudgetAccountant(E, D)
    basic = BudgetAccountant(E, D, accounting="basic")
    only_declared = True
    for kind, eps, delta in seq:
        event, eps, delta = _make(kind, eps, delta)
        only_declared = only_declared and kind != "gauss"
        before = (acc.spent, len(acc))
        try:
            acc.spend(eps, delta, event=event)
            ok = True
        except BudgetExceededError:
            ok = False
            assert (acc.spent, len(acc)) == before
        try:
            basic.spend(eps, delta, event=event)
            ok_basic = True
        except BudgetExceededError:
            ok_basic = False
        if only_declared:
            assert ok == ok_basic
        e_spent, d_spent = acc.spent
        assert Fraction(e_spent) <= Fraction(E) and Fraction(d_spent) <= Fraction(D)

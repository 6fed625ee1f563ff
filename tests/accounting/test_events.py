"""dpcore.accounting.events: the adjacency convention, the builders and the split into accountant / basic parts."""

from __future__ import annotations

import math
from fractions import Fraction

import dp_accounting as dpa
import pytest
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant

from dpcore.accounting import calibrate as cal
from dpcore.accounting import events as ev
from dpcore.mechanisms.noise import gaussian_plan, laplace_plan

GRID = [(0.1, 1e-7), (0.5, 1e-5), (1.0, 1e-6), (3.0, 1e-9), (8.0, 1e-3)]


@pytest.mark.parametrize("eps, delta", GRID)
def test_gaussian_at_dpcore_sigma_comes_back_at_epsilon(eps, delta):
    # one Gaussian at dpcore's analytic σ for (ε, δ), replace-one sensitivity Δ: the PLD accountant (pessimistic,
    # an upper bound) returns the analytic curve itself: ε' ≥ ε up to 1e-9 relative, and not above it by
    # more than the PLD's discretisation; a wrong convention would be off by a factor ~2 either way
    for sens in (1.0, 0.37):
        sigma = cal.gaussian_sigma(sens, eps, delta)
        e_pld = ev.event_epsilon(ev.gaussian_event(sigma, sens), delta, "pld")
        assert eps * (1 - 1e-9) <= e_pld <= eps * (1 + 1e-6) + 1e-9
        e_rdp = ev.event_epsilon(ev.gaussian_event(sigma, sens), delta, "rdp")
        assert eps <= e_rdp <= 1.25 * eps  # RDP is an upper bound too, looser for a single release


def test_replace_one_in_dp_accounting_means_sensitivity_two():
    # why dpcore composes under ADD_OR_REMOVE_ONE: dp_accounting's REPLACE_ONE shifts the Gaussian by 2 units
    sigma = cal.gaussian_sigma(1.0, 1.0, 1e-6)
    rep = PLDAccountant(dpa.NeighboringRelation.REPLACE_ONE)
    rep.compose(dpa.GaussianDpEvent(sigma))
    two = PLDAccountant(dpa.NeighboringRelation.ADD_OR_REMOVE_ONE)
    two.compose(dpa.GaussianDpEvent(sigma / 2.0))
    assert rep.get_epsilon(1e-6) == pytest.approx(two.get_epsilon(1e-6), rel=1e-3)
    assert rep.get_epsilon(1e-6) > 1.8
    assert ev.NEIGHBORING_RELATION == dpa.NeighboringRelation.ADD_OR_REMOVE_ONE
    assert ev.make_accountant("pld").neighboring_relation == dpa.NeighboringRelation.ADD_OR_REMOVE_ONE
    # RDP ignores the relation for the Gaussian (unit shift either way)
    a, b = RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE), ev.make_accountant("rdp")
    a.compose(dpa.GaussianDpEvent(sigma))
    b.compose(dpa.GaussianDpEvent(sigma))
    assert a.get_epsilon(1e-6) == b.get_epsilon(1e-6)


def test_gdp_event_is_the_gaussian_curve():
    for mu in (0.1, 0.5, 1.0, 2.0):
        e = ev.event_epsilon(ev.gdp_event(mu), 1e-6)
        assert cal.gaussian_delta(1.0 / mu, 1.0, e) <= 1e-6 * (1 + 1e-6)
        assert cal.gaussian_delta(1.0 / mu, 1.0, e * (1 - 1e-4)) > 1e-6


def test_builders_round_the_multiplier_down_and_validate():
    assert ev.gaussian_event(4.0, 2.0) == dpa.GaussianDpEvent(2.0)
    m = ev.gaussian_event(1.0, 3.0).noise_multiplier
    assert Fraction(m) <= Fraction(1.0) / Fraction(3.0)
    assert Fraction(ev.gdp_event(3.0).noise_multiplier) <= Fraction(1, 3)
    with pytest.raises(ValueError, match="sigma"):
        ev.gaussian_event(0.0, 1.0)
    with pytest.raises(ValueError, match="sensitivity"):
        ev.gaussian_event(1.0, -1.0)
    with pytest.raises(ValueError, match="mu"):
        ev.gdp_event(math.inf)
    with pytest.raises(ValueError, match="epsilon"):
        ev.epsilon_delta_event(0.0)
    with pytest.raises(ValueError, match="delta"):
        ev.epsilon_delta_event(1.0, 1.0)
    with pytest.raises(ValueError, match="count"):
        ev.self_compose(ev.gdp_event(1.0), 0)
    with pytest.raises(TypeError, match="events\\[1\\]"):
        ev.compose_events(ev.gdp_event(1.0), 0.5)
    with pytest.raises(ValueError, match="accounting"):
        ev.make_accountant("basic")
    with pytest.raises(ValueError, match="accounting"):
        ev.event_epsilon(ev.gdp_event(1.0), 1e-6, "zcdp")


def test_plan_event():
    lap = laplace_plan(2.0, 0.5, dim=3)
    assert ev.plan_event(lap) == ev.EpsilonDeltaDpEvent(lap.epsilon_used, 0.0)
    g = gaussian_plan(2.0, 1.0, 1e-6, dim=4)
    assert g.method == "analytic"
    assert ev.plan_event(g) == ev.gaussian_event(g.sigma, 2.0)
    z = gaussian_plan(2.0, 1.0, 1e-6, dim=4, method="zcdp")
    assert ev.plan_event(z) == dpa.ZCDpEvent(z.rho_used)
    with pytest.raises(TypeError, match="plan"):
        ev.plan_event(object())


def test_split_event():
    g, p = ev.gdp_event(1.0), ev.epsilon_delta_event(0.25, 1e-9)
    parts, e, d = ev.split_event(ev.self_compose(ev.compose_events(g, p, dpa.NoOpDpEvent()), 4))
    assert parts == [(g, 4)] and e == 4 * Fraction(0.25) and d == 4 * Fraction(1e-9)
    # PLD cannot do repeat-and-select nor zCDP: the caller falls back to the declared (ε, δ)
    assert ev.split_event(dpa.dp_event.RepeatAndSelectDpEvent(g, 3.0, 1.0), "pld") is None
    assert ev.split_event(dpa.ZCDpEvent(0.1), "pld") is None
    assert ev.split_event(dpa.dp_event.RepeatAndSelectDpEvent(g, 3.0, 1.0), "rdp") is not None
    assert ev.split_event(dpa.UnsupportedDpEvent(), "rdp") is None
    # RDP: a pure event may also be described as zCDP (ε²/2)
    parts, e, _ = ev.split_event(ev.epsilon_delta_event(0.5), "rdp", pure_as_zcdp=True)
    assert e == 0 and parts[0][0].rho == pytest.approx(0.125)
    assert ev.event_epsilon(dpa.UnsupportedDpEvent(), 1e-6) == math.inf


def test_composed_epsilon_basic_part_and_delta_split():
    p = ev.epsilon_delta_event(0.3, 4e-6)
    # only basic parts: exactly the sums
    assert ev.composed_epsilon([(p, 0.3, 4e-6)] * 2, 1e-5) == 2 * Fraction(0.3)
    assert ev.composed_epsilon([(p, 0.3, 4e-6)] * 3, 1e-5) is None  # Σδ = 1.2e-5 > D
    # Gaussian + basic part: the Gaussian is composed at δ_rest = D − Σδ_basic
    g = ev.gdp_event(0.5)
    total = ev.composed_epsilon([(g, 10.0, 1e-6), (p, 0.3, 4e-6)], 1e-5)
    assert float(total) == pytest.approx(ev.event_epsilon(g, 6e-6) + 0.3, rel=1e-6)
    # an event the accountant cannot describe counts as its declared (ε, δ)
    rs = dpa.dp_event.RepeatAndSelectDpEvent(g, 3.0, 1.0)
    assert ev.composed_epsilon([(rs, 0.7, 1e-6)], 1e-5, "pld") == Fraction(0.7)
    # rdp: the better of the two descriptions of pure events
    many = [(ev.epsilon_delta_event(0.05), 0.05, 0.0)] * 400
    assert float(ev.composed_epsilon(many, 1e-6, "rdp")) < 0.5 * 20.0

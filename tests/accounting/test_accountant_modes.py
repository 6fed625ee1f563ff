"""BudgetAccountant(accounting="pld" | "rdp" | "basic"): a planned sequence for PLD/RDP, refusals, threads, the
100-release numbers. (The default "filter" is tested in test_filter.py.)"""

from __future__ import annotations

import pickle
import threading
from fractions import Fraction

import dp_accounting as dpa
import pytest
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.accounting import BudgetAccountant
from dpcore.accounting import calibrate as cal
from dpcore.accounting import events as ev
from dpcore.exceptions import BudgetExceededError
from dpcore.mechanisms.noise import gaussian_mechanism, laplace_mechanism

SIGMA = cal.gaussian_sigma(1.0, 0.1, 1e-7)  # one release at (0.1, 1e-7), Δ₂ = 1
EVENT = ev.gaussian_event(SIGMA, 1.0)


def _direct(accountant) -> float:
    accountant.compose(dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(SIGMA), 100))
    return accountant.get_epsilon(1e-5)


@pytest.mark.parametrize("accounting, direct", [("pld", lambda: _direct(PLDAccountant())),
                                                ("rdp", lambda: _direct(RdpAccountant()))])
def test_100_releases_match_dp_accounting(accounting, direct):
    acc = BudgetAccountant(1.0, 1e-5, accounting=accounting)
    acc.plan([(0.1, 1e-7, EVENT)] * 100)
    for _ in range(100):
        acc.spend(0.1, 1e-7, event=EVENT, label="release")
    eps, delta = acc.spent
    assert eps == pytest.approx(direct(), rel=0.02)
    assert eps <= 1.0 and delta == 1e-5
    assert len(acc) == 100 and acc.log[0].event == EVENT


def test_100_releases_basic_charges_the_sum():
    acc = BudgetAccountant(1.0, 1e-5, accounting="basic")
    n = 0
    while (n + 1) * Fraction(0.1) <= 1:  # exact: 10 × float(0.1) > 1, so 9 fit
        acc.spend(0.1, 1e-7, event=EVENT)
        n += 1
    with pytest.raises(BudgetExceededError):
        acc.spend(0.1, 1e-7, event=EVENT)
    assert len(acc) == n == 9


def test_accept_refuse_boundary_of_a_plan():
    n = 1
    while ev.composed_epsilon([(EVENT, 0.1, 1e-7)] * (n + 1), 1e-6) <= Fraction(0.5):
        n += 1
    assert n > 10  # basic composition alone would stop at 5 (ε) / 10 (δ)
    with pytest.raises(BudgetExceededError):
        BudgetAccountant(0.5, 1e-6, accounting="pld").plan([(0.1, 1e-7, EVENT)] * (n + 1))
    acc = BudgetAccountant(0.5, 1e-6, accounting="pld")
    acc.plan([(0.1, 1e-7, EVENT)] * n)
    for _ in range(n):
        acc.spend(0.1, 1e-7, event=EVENT)
    before = (acc.spent, acc.remaining(), acc.log, len(acc))
    with pytest.raises(ValueError, match="plan"):
        acc.spend(0.1, 1e-7, event=EVENT)
    assert (acc.spent, acc.remaining(), acc.log, len(acc)) == before
    assert acc.spent[0] <= 0.5


def test_remaining_per_step_fits():
    acc = BudgetAccountant(2.0, 1e-5)
    for _ in range(50):
        acc.spend(0.1, 1e-7, event=EVENT)
    step = acc.remaining_per_step(7)
    for _ in range(7):
        acc.spend(step)
    assert acc.remaining()[0] < 1e-9
    with pytest.raises(ValueError, match="delta_prime"):
        acc.remaining_per_step(3, delta_prime=1e-6)


def test_pure_budget_with_laplace_and_pure_events():
    for accounting in ("filter", "basic"):
        acc = BudgetAccountant(1.0, accounting=accounting)
        for i in range(8):
            laplace_mechanism(float(i), 1.0, 0.125, random_state=i, accountant=acc)
        with pytest.raises(BudgetExceededError):
            laplace_mechanism(0.0, 1.0, 0.125, random_state=0, accountant=acc)
        assert acc.spent == (1.0, 0.0) and acc.remaining() == (0.0, 0.0)
        assert isinstance(acc.log[0].event, ev.EpsilonDeltaDpEvent)
    # a Gaussian can never enter a pure budget
    for accounting in ("filter", "basic"):
        with pytest.raises(BudgetExceededError):
            BudgetAccountant(100.0, accounting=accounting).spend(1.0, 1e-6, event=EVENT)
    for accounting in ("pld", "rdp"):
        with pytest.raises(BudgetExceededError):
            BudgetAccountant(100.0, accounting=accounting).plan([EVENT])


def test_gaussian_mechanism_charges_its_gaussian_event():
    acc = BudgetAccountant(1.0, 1e-5)
    for i in range(30):
        gaussian_mechanism(1.0, 2.0, 0.1, 1e-7, random_state=i, accountant=acc)
    # calibrated for ε and δ on the budget grid (issue 25)
    from dpcore._internal.fp import budget_grid_down as g

    assert acc.log[0].event == ev.gaussian_event(cal.gaussian_sigma(2.0, g(0.1), g(1e-7)), 2.0)
    assert (acc.log[0].epsilon, acc.log[0].delta) == (g(0.1), g(1e-7))
    assert acc.spent[0] < 0.8  # the filter; basic composition: 3.0


def test_event_validation():
    acc = BudgetAccountant(1.0, 1e-5)
    with pytest.raises(TypeError, match="event"):
        acc.spend(0.1, 1e-7, event="gaussian")
    with pytest.raises(ValueError, match="delta=0"):
        acc.spend(0.1, 0.0, event=EVENT)
    with pytest.raises(ValueError, match="accounting"):
        BudgetAccountant(1.0, accounting="advanced")
    assert len(acc) == 0
    acc.spend(0.1)
    assert acc.log[0].event == ev.EpsilonDeltaDpEvent(0.1, 0.0)
    assert "accounting='filter'" in repr(acc)


def test_unsupported_event_in_a_plan_needs_its_declared_budget():
    rs = dpa.dp_event.RepeatAndSelectDpEvent(ev.gdp_event(0.2), 3.0, 1.0)  # RDP only
    acc = BudgetAccountant(1.0, 1e-6, accounting="pld")
    with pytest.raises(ValueError, match="cannot compose"):
        acc.plan([rs])
    acc.plan([(0.6, 1e-7, rs), (0.3, 1e-7, dpa.UnsupportedDpEvent())])
    with pytest.raises(ValueError, match="plan"):
        acc.spend(0.7, 1e-7, event=rs)  # more than planned
    acc.spend(0.6, 1e-7, event=rs)
    acc.spend(0.3, 1e-7, event=dpa.UnsupportedDpEvent())
    assert acc.spent == (pytest.approx(0.9), pytest.approx(2e-7))


def test_pickle_keeps_events_and_mode():
    acc = BudgetAccountant(1.0, 1e-5, accounting="rdp")
    acc.plan([(0.1, 1e-7, EVENT)] * 30)
    for _ in range(20):
        acc.spend(0.1, 1e-7, event=EVENT)
    copy = pickle.loads(pickle.dumps(acc))
    assert copy.accounting == "rdp" and copy.spent == acc.spent and copy.log == acc.log and copy.restored


def test_thread_safety_concurrent_gaussian_spends():
    sequential = BudgetAccountant(0.4, 1e-6)
    n_seq = 0
    while True:
        try:
            sequential.spend(0.1, 1e-7, event=EVENT)
        except BudgetExceededError:
            break
        n_seq += 1
    acc = BudgetAccountant(0.4, 1e-6)
    accepted, refused = [], []
    barrier = threading.Barrier(6)

    def worker():
        barrier.wait()
        for _ in range(6):
            try:
                acc.spend(0.1, 1e-7, event=EVENT)
                accepted.append(1)
            except BudgetExceededError:
                refused.append(1)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(accepted) == n_seq == len(acc) and len(refused) == 36 - n_seq and n_seq > 4
    assert acc.spent == sequential.spent


# ------------------------------------------------------------------ a planned sequence is never looser than basic
_event = st.one_of(
    st.tuples(st.just("gauss"), st.sampled_from([0.05, 0.1, 0.3, 1.0]), st.sampled_from([1e-8, 1e-7, 1e-6])),
    st.tuples(st.just("pure"), st.sampled_from([0.05, 0.1, 0.4]), st.just(0.0)),
    st.tuples(st.just("approx"), st.sampled_from([0.05, 0.2]), st.sampled_from([1e-8, 1e-7])),
)


def _make(kind, eps, delta):
    if kind == "gauss":
        return ev.gaussian_event(cal.gaussian_sigma(1.0, eps, delta), 1.0), eps, delta
    return ev.epsilon_delta_event(eps, delta), eps, delta


@settings(max_examples=30, deadline=None, derandomize=True)
@given(seq=st.lists(_event, min_size=1, max_size=25), accounting=st.sampled_from(["pld", "rdp"]),
       budget=st.sampled_from([(0.5, 1e-6), (1.0, 1e-5), (2.0, 0.0), (1.5, 3e-7)]))
def test_plan_never_looser_than_basic(seq, accounting, budget):
    E, D = budget
    items = [_make(*x) for x in seq]
    fits_basic = (sum(Fraction(e) for _, e, _ in items) <= Fraction(E)
                  and sum(Fraction(d) for _, _, d in items) <= Fraction(D))
    composed = ev.composed_epsilon(items, D, accounting)
    expect = fits_basic or (composed is not None and composed <= Fraction(E))
    acc = BudgetAccountant(E, D, accounting=accounting)
    try:
        acc.plan([(e, d, event) for event, e, d in items])
        got = True
    except BudgetExceededError:
        got = False
    assert got == expect
    if got:
        for event, e, d in items:
            acc.spend(e, d, event=event)
        assert acc.spent[0] <= E and len(acc) == len(items)

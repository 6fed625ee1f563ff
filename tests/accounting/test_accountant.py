"""Tests for dpcore.accounting.accountant.BudgetAccountant: exact ledger, atomic spends, thread safety."""

import dataclasses
import math
import threading
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.accounting.accountant import BudgetAccountant, BudgetExceededError, BudgetRecord


def _exact_totals(acc):
    recs = acc.log
    return sum((Fraction(r.epsilon) for r in recs), Fraction(0)), sum(
        (Fraction(r.delta) for r in recs), Fraction(0)
    )


# ----------------------------------------------------------------------------- basics
def test_basic_spend_and_remaining():
    acc = BudgetAccountant(1.0, 1e-6)
    acc.spend(0.25, label="a")
    acc.spend(0.25, 5e-7, label="b")
    assert acc.remaining() == (0.5, 5e-7)
    assert acc.spent == (0.5, 5e-7)
    assert [r.label for r in acc.log] == ["a", "b"]
    assert len(acc) == 2
    assert acc.records == acc.log
    assert "BudgetAccountant(epsilon=1.0" in repr(acc) and "2 spends" in repr(acc)


def test_exact_remainder_can_be_spent_and_then_nothing_more():
    acc = BudgetAccountant(1.0)
    for _ in range(3):
        acc.spend(0.1)
    eps_left, _ = acc.remaining()
    with pytest.raises(BudgetExceededError):
        acc.spend(math.nextafter(eps_left, math.inf))  # one ulp more never fits
    acc.spend(eps_left)  # the rounded-down remainder always fits
    e, _ = _exact_totals(acc)
    assert Fraction(0) <= Fraction(1.0) - e < Fraction(1e-16)
    with pytest.raises(BudgetExceededError):
        acc.spend(1e-15)


def test_ten_tenths_do_not_fit_in_one():
    # Fraction(0.1) > 1/10, so ten spends of 0.1 exceed 1.0 exactly: the 10th is refused.
    acc = BudgetAccountant(1.0)
    for _ in range(9):
        acc.spend(0.1)
    with pytest.raises(BudgetExceededError):
        acc.spend(0.1)
    assert len(acc) == 9


def test_error_message_and_ledger_unchanged():
    acc = BudgetAccountant(1.0, 1e-6)
    acc.spend(0.75, 1e-6, label="first")
    before = (acc.log, acc.spent, acc.remaining())
    with pytest.raises(BudgetExceededError) as info:
        acc.spend(0.5, label="too much")
    msg = str(info.value)
    assert "too much" in msg and "0.5" in msg and "0.25" in msg
    assert info.value.requested == (0.5, 0.0)
    assert info.value.remaining == (0.25, 0.0)
    assert info.value.label == "too much"
    # δ exhausted too
    with pytest.raises(BudgetExceededError, match="delta"):
        acc.spend(0.1, 1e-9)
    assert (acc.log, acc.spent, acc.remaining()) == before
    assert isinstance(info.value, RuntimeError)


def test_check_does_not_spend():
    acc = BudgetAccountant(1.0)
    acc.check(1.0)
    assert acc.remaining() == (1.0, 0.0) and len(acc) == 0
    with pytest.raises(BudgetExceededError, match="probe"):
        acc.check(1.5, label="probe")
    with pytest.raises(BudgetExceededError):
        acc.check(0.5, 1e-9)  # pure-DP budget: any δ > 0 is refused


def test_records_are_immutable_copies():
    acc = BudgetAccountant(1.0)
    acc.spend(0.5, label="x")
    log = acc.log
    log.clear()
    assert len(acc.log) == 1
    rec = acc.log[0]
    assert isinstance(rec, BudgetRecord)
    assert rec.epsilon == 0.5 and rec.delta == 0.0 and rec.label == "x" and rec.timestamp > 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.epsilon = 0.0


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize("eps", [0.0, -1.0, math.nan, math.inf])
def test_constructor_rejects_bad_epsilon(eps):
    with pytest.raises(ValueError, match="epsilon"):
        BudgetAccountant(eps)


@pytest.mark.parametrize("delta", [-1e-9, 1.0, 2.0, math.nan])
def test_constructor_rejects_bad_delta(delta):
    with pytest.raises(ValueError, match="delta"):
        BudgetAccountant(1.0, delta)


def test_constructor_type_errors():
    with pytest.raises(TypeError, match="epsilon"):
        BudgetAccountant("1.0")
    with pytest.raises(TypeError, match="delta"):
        BudgetAccountant(1.0, None)


@pytest.mark.parametrize("eps,delta,name", [(0.0, 0.0, "epsilon"), (-0.1, 0.0, "epsilon"), (math.nan, 0.0, "epsilon"),
                                            (0.1, -1e-9, "delta"), (0.1, 1.0, "delta"), (0.1, math.nan, "delta")])
def test_spend_rejects_bad_values_without_recording(eps, delta, name):
    acc = BudgetAccountant(1.0, 0.5)
    with pytest.raises(ValueError, match=name):
        acc.spend(eps, delta)
    with pytest.raises(ValueError, match=name):
        acc.check(eps, delta)
    assert len(acc) == 0 and acc.remaining() == (1.0, 0.5)


def test_remaining_per_step_validation():
    acc = BudgetAccountant(1.0)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="k must be a positive integer"):
            acc.remaining_per_step(bad)
    with pytest.raises(ValueError, match="per_step_epsilon"):
        acc.remaining_per_step(10, delta_prime=1e-6)


def test_remaining_per_step_exhausted_budget():
    acc = BudgetAccountant(1.0)
    acc.spend(1.0)
    with pytest.raises(BudgetExceededError):
        acc.remaining_per_step(3)


# ----------------------------------------------------------------------------- properties
_spend = st.one_of(
    st.floats(min_value=1e-12, max_value=2.0, allow_nan=False),
    st.floats(min_value=5e-324, max_value=1e-9),  # tiny (incl. subnormal) spends
    st.just("rest"),  # exactly the remaining ε (as reported, rounded down)
    st.just("rest+"),  # one ulp more than the reported remainder
)


@settings(max_examples=200, deadline=None)
@given(
    budget=st.floats(min_value=1e-6, max_value=10.0),
    dbudget=st.one_of(st.just(0.0), st.floats(min_value=1e-12, max_value=0.5)),
    spends=st.lists(st.tuples(_spend, st.floats(min_value=0.0, max_value=0.2)), max_size=40),
)
def test_random_spend_sequences_never_exceed_budget(budget, dbudget, spends):
    acc = BudgetAccountant(budget, dbudget)
    for eps, delta in spends:
        if isinstance(eps, str):
            rest = acc.remaining()[0]
            if rest == 0.0:
                continue
            eps = rest if eps == "rest" else math.nextafter(rest, math.inf)
        before = (acc.log, acc.spent, acc.remaining())
        try:
            acc.spend(eps, delta)
        except BudgetExceededError:
            assert (acc.log, acc.spent, acc.remaining()) == before
            exact_e, exact_d = _exact_totals(acc)
            # refused only when it genuinely would not fit
            assert exact_e + Fraction(eps) > Fraction(budget) or exact_d + Fraction(delta) > Fraction(dbudget)
        exact_e, exact_d = _exact_totals(acc)
        assert exact_e <= Fraction(budget) and exact_d <= Fraction(dbudget)
        rem_e, rem_d = acc.remaining()
        assert Fraction(rem_e) <= Fraction(budget) - exact_e
        assert Fraction(rem_d) <= Fraction(dbudget) - exact_d
        sp_e, sp_d = acc.spent
        assert Fraction(sp_e) >= exact_e and Fraction(sp_d) >= exact_d


@settings(max_examples=200, deadline=None)
@given(
    budget=st.floats(min_value=1e-9, max_value=100.0),
    pre=st.lists(st.floats(min_value=1e-12, max_value=0.3), max_size=5),
    k=st.integers(min_value=1, max_value=10**4),
)
def test_remaining_per_step_always_fits_k_times(budget, pre, k):
    acc = BudgetAccountant(budget)
    for e in pre:
        try:
            acc.spend(e)
        except BudgetExceededError:
            pass
    try:
        step = acc.remaining_per_step(k)
    except BudgetExceededError:
        return
    assert step > 0
    already = _exact_totals(acc)[0]
    assert k * Fraction(step) <= Fraction(budget) - already
    # and it is the largest such float
    assert k * Fraction(math.nextafter(step, math.inf)) > Fraction(budget) - already
    for _ in range(min(k, 300)):
        acc.spend(step)
    e, _ = _exact_totals(acc)
    assert e <= Fraction(budget)


# ----------------------------------------------------------------------------- concurrency
def test_concurrent_spends_never_exceed_budget_and_accept_the_maximum():
    budget = 1.0
    step = 0.001  # Fraction(0.001) > 1/1000, so exactly 999 spends fit
    max_fit = 0
    total = Fraction(0)
    while total + Fraction(step) <= Fraction(budget):
        total += Fraction(step)
        max_fit += 1
    acc = BudgetAccountant(budget)
    n_threads, per_thread = 8, 200  # 1600 attempts, far more than fit
    accepted = [0] * n_threads
    rejected = [0] * n_threads
    barrier = threading.Barrier(n_threads)

    def worker(i):
        barrier.wait()
        for _ in range(per_thread):
            try:
                acc.spend(step, label=f"t{i}")
                accepted[i] += 1
            except BudgetExceededError:
                rejected[i] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(accepted) == max_fit == len(acc)
    assert sum(accepted) + sum(rejected) == n_threads * per_thread
    e, _ = _exact_totals(acc)
    assert e <= Fraction(budget)


def test_concurrent_mixed_sizes_exact_total():
    acc = BudgetAccountant(2.0, 1e-5)
    sizes = [0.003, 0.007, 0.0011, 0.05]
    barrier = threading.Barrier(4)

    def worker(i):
        barrier.wait()
        for _ in range(300):
            try:
                acc.spend(sizes[i], 1e-8)
            except BudgetExceededError:
                pass

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    e, d = _exact_totals(acc)
    assert e <= Fraction(2.0) and d <= Fraction(1e-5)
    # the ledger is full: the smallest size no longer fits (in ε or δ)
    with pytest.raises(BudgetExceededError):
        acc.spend(min(sizes), 1e-8)


def test_copies_share_the_budget_and_pickles_are_read_only():
    """An accountant is one shared budget: copies (and sklearn.clone of an estimator holding it) are the
    same object; an unpickled in-memory accountant is a read-only record, and resume() refuses too (two live
    copies could spend the remaining budget twice: a ledger= file is the way to continue a budget)."""
    import copy
    import pickle

    import numpy as np
    from sklearn.base import clone

    import dpcore
    from dpcore.exceptions import BudgetError, RestoredAccountantError

    acc = BudgetAccountant(1.0, 1e-6)
    acc.spend(0.25, label="first")
    assert copy.copy(acc) is acc and copy.deepcopy(acc) is acc
    est = dpcore.ObjectivePerturbation(epsilon=0.5, delta=1e-7, data_norm=1.0, accountant=acc)
    assert clone(est).accountant is acc

    restored = pickle.loads(pickle.dumps(acc))
    assert restored is not acc and restored.restored and not acc.restored
    assert restored.spent == acc.spent and [r.label for r in restored.log] == ["first"]
    for call in (lambda: restored.spend(0.1), lambda: restored.check(0.1)):
        with pytest.raises(RestoredAccountantError, match="read-only") as exc:
            call()
        assert isinstance(exc.value, BudgetError)
    assert restored.spent == acc.spent  # nothing recorded
    acc.spend(0.25)  # the original is unaffected
    with pytest.raises(RestoredAccountantError, match="ledger"):
        restored.resume()
    assert restored.restored and acc.remaining()[0] == 0.5

    # a fitted estimator holding an accountant pickles; its copy carries the read-only ledger
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(100, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    fitted = dpcore.ObjectivePerturbation(epsilon=0.5, delta=1e-7, data_norm=1.0, accountant=acc,
                                          random_state=0).fit(X, y)
    back = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(back.coef_, fitted.coef_)
    assert back.accountant.restored and back.accountant.spent == acc.spent

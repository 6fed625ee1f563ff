"""BudgetAccountant(ledger=path): one budget shared by handles, pickles and processes; state sequence numbers;
in-memory copies stay read-only (issue 22 item 5 / issue 25's n_jobs)."""

from __future__ import annotations

import multiprocessing as mp
import pickle
import sqlite3
from fractions import Fraction

import numpy as np
import pytest
from dp_accounting import dp_event as de

import dpcore
from dpcore.accounting import BudgetAccountant
from dpcore.accounting import calibrate as cal
from dpcore.accounting import events as ev
from dpcore.accounting.accountant import _decode_event, _encode_event
from dpcore.exceptions import BudgetExceededError, RestoredAccountantError, StateRollbackError

GAUSS = ev.gaussian_event(cal.gaussian_sigma(1.0, 0.1, 1e-7), 1.0)


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "budget.sqlite")


def test_ledger_persists_and_refuses_another_budget(path):
    acc = BudgetAccountant(1.0, 1e-6, ledger=path)
    acc.spend(0.25, label="a")
    acc.spend(0.5, 1e-7, event=GAUSS, label="b")
    again = BudgetAccountant(1.0, 1e-6, ledger=path)
    assert again.spent == acc.spent and [r.label for r in again.log] == ["a", "b"]
    assert again.log[1].event == GAUSS and again.ledger == acc.ledger
    for kwargs in ({"epsilon": 2.0, "delta": 1e-6}, {"epsilon": 1.0, "delta": 1e-5},
                   {"epsilon": 1.0, "delta": 1e-6, "accounting": "basic"},
                   {"epsilon": 1.0, "delta": 1e-6, "rdp_delta": 1e-7}):
        with pytest.raises(ValueError, match="another budget"):
            BudgetAccountant(ledger=path, **kwargs)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT COUNT(*) FROM spends").fetchone()[0] == 2


def test_handles_share_one_budget_and_a_refusal_records_nothing(path):
    a = BudgetAccountant(1.0, ledger=path)
    b = BudgetAccountant(1.0, ledger=path)
    a.spend(0.5)
    b.spend(0.5)
    for acc in (a, b):
        with pytest.raises(BudgetExceededError):
            acc.spend(1e-3)
        assert acc.spent == (1.0, 0.0) and len(acc) == 2


def test_pickle_reopens_the_same_ledger_and_double_spend_fails(path):
    """The scenario of the issue: an original and two unpickled copies each try to spend the whole budget."""
    acc = BudgetAccountant(3.0, ledger=path)
    c1, c2 = pickle.loads(pickle.dumps(acc)), pickle.loads(pickle.dumps(acc))
    assert not c1.restored and c1.resume() is c1
    spent = 0
    for handle in (acc, c1, c2):
        try:
            handle.spend(3.0)
            spent += 1
        except BudgetExceededError:
            pass
    assert spent == 1 and acc.spent == (3.0, 0.0) == c2.spent


def test_unpickling_never_creates_a_fresh_budget(path):
    import os

    acc = BudgetAccountant(1.0, ledger=path)
    acc.spend(1.0)
    blob = pickle.dumps(acc)
    acc._ledger.close()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    with pytest.raises(FileNotFoundError, match="fresh budget"):
        pickle.loads(blob)


def test_in_memory_copies_cannot_double_spend():
    acc = BudgetAccountant(3.0)
    c1, c2 = pickle.loads(pickle.dumps(acc)), pickle.loads(pickle.dumps(acc))
    acc.spend(3.0)
    for copy in (c1, c2):
        with pytest.raises(RestoredAccountantError):
            copy.resume()
        with pytest.raises(RestoredAccountantError):
            copy.spend(3.0)
        with pytest.raises(RestoredAccountantError):
            copy.record_state("s", 0)
    assert acc.spent == (3.0, 0.0) and len(c1) == len(c2) == 0


def _spender(args):
    path, n = args
    acc = BudgetAccountant(1.0, 1e-5, ledger=path)
    ok = 0
    for _ in range(n):
        try:
            acc.spend(0.1, 1e-7, event=GAUSS, label="worker")
            ok += 1
        except BudgetExceededError:
            pass
    return ok


def test_two_processes_charge_one_budget(path):
    seq = BudgetAccountant(1.0, 1e-5)
    n_seq = 0
    while True:
        try:
            seq.spend(0.1, 1e-7, event=GAUSS)
            n_seq += 1
        except BudgetExceededError:
            break
    BudgetAccountant(1.0, 1e-5, ledger=path)  # create
    with mp.get_context("spawn").Pool(2) as pool:
        accepted = pool.map(_spender, [(path, n_seq), (path, n_seq)])
    acc = BudgetAccountant(1.0, 1e-5, ledger=path)
    assert sum(accepted) == n_seq == len(acc)  # the sequential count, split between the processes
    assert acc.spent == seq.spent and acc.spent[0] <= 1.0


def _data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(200, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    return X, y


def test_cross_val_score_n_jobs_2_charges_one_budget(path):
    from sklearn.model_selection import cross_val_score

    X, y = _data()
    acc = BudgetAccountant(1.0, 1e-6, ledger=path)
    est = dpcore.ObjectivePerturbation(epsilon=0.5, delta=1e-7, data_norm=1.0, accountant=acc, random_state=0)
    scores = cross_val_score(est, X, y, cv=4, n_jobs=2, error_score=np.nan)
    assert np.sum(np.isfinite(scores)) == 2  # two fits of (0.5, 1e-7) fit a budget of 1.0; two are refused
    assert len(acc) == 2 and acc.spent[0] <= 1.0
    # an in-memory accountant: the workers' copies are read-only, nothing is charged twice
    mem = BudgetAccountant(1.0, 1e-6)
    est = dpcore.ObjectivePerturbation(epsilon=0.5, delta=1e-7, data_norm=1.0, accountant=mem, random_state=0)
    with pytest.raises(ValueError, match="read-only"):  # every fit failed (sklearn's message carries the cause)
        cross_val_score(est, X, y, cv=4, n_jobs=2, error_score=np.nan)
    assert len(mem) == 0


# ------------------------------------------------------------------ state sequence numbers
@pytest.mark.parametrize("ledger", [False, True])
def test_record_state(ledger, path):
    acc = BudgetAccountant(1.0, ledger=path if ledger else None)
    assert acc.state_seq("svc") is None
    acc.record_state("svc", 0)
    acc.record_state("svc", 1)
    acc.record_state("other", 4)  # first seen at a later number (a state loaded with this accountant)
    for bad in (1, 0):  # numbers only go up: a rollback or a second session committing the same number
        with pytest.raises(StateRollbackError, match=rf"'svc'.*{bad}.*1"):
            acc.record_state("svc", bad)
    acc.record_state("svc", 3)  # a jump (a record lost between the durable write and the ledger) is fine
    with pytest.raises(StateRollbackError, match=r"'svc'.*2.*3"):
        acc.record_state("svc", 2)
    assert acc.state_seq("svc") == 3 and acc.state_seq("other") == 4
    with pytest.raises(ValueError, match="seq"):
        acc.record_state("svc", -1)
    with pytest.raises(ValueError, match="seq"):
        acc.record_state("svc", True)
    with pytest.raises(TypeError, match="state_id"):
        acc.record_state("", 2)
    if ledger:
        other = pickle.loads(pickle.dumps(acc))
        assert other.state_seq("svc") == 3
        other.record_state("svc", 4)
        with pytest.raises(StateRollbackError):  # the first handle's session is behind: refused
            acc.record_state("svc", 4)
        assert acc.state_seq("svc") == 4


def _stepper(args):
    path, n = args
    acc = BudgetAccountant(1.0, ledger=path)
    ok = 0
    for _ in range(n):
        cur = acc.state_seq("svc")
        try:
            acc.record_state("svc", 0 if cur is None else cur + 1)
            ok += 1
        except StateRollbackError:
            pass
    return ok


def test_record_state_two_processes_never_commit_one_number_twice(path):
    BudgetAccountant(1.0, ledger=path)
    with mp.get_context("spawn").Pool(2) as pool:
        ok = pool.map(_stepper, [(path, 60), (path, 60)])
    assert BudgetAccountant(1.0, ledger=path).state_seq("svc") == sum(ok) - 1


# ------------------------------------------------------------------ events in the ledger
EVENTS = [GAUSS, de.LaplaceDpEvent(2.0), ev.zcdp_event(0.01), ev.epsilon_delta_event(0.1, 1e-9),
          ev.compose_events(ev.epsilon_delta_event(0.1), ev.gdp_event(0.3)), ev.self_compose(GAUSS, 7),
          de.RepeatAndSelectDpEvent(ev.gdp_event(0.2), 3.0, 1.0), de.NoOpDpEvent(), de.UnsupportedDpEvent()]


@pytest.mark.parametrize("event", EVENTS)
def test_event_codec_round_trip(event, path):
    assert _decode_event(_encode_event(event)) == event
    acc = BudgetAccountant(100.0, 1e-5, ledger=path)
    acc.spend(1.0, 1e-7, event=event)
    assert BudgetAccountant(100.0, 1e-5, ledger=path).log[0].event == event


def test_unknown_event_refused_before_recording(path):
    acc = BudgetAccountant(100.0, 1e-5, ledger=path)
    with pytest.raises(TypeError, match="PoissonSampledDpEvent"):
        acc.spend(1.0, 1e-7, event=de.PoissonSampledDpEvent(0.1, GAUSS))
    assert len(acc) == 0


def test_plan_is_stored_in_the_ledger(path):
    acc = BudgetAccountant(1.0, 1e-5, accounting="pld", ledger=path)
    acc.plan([(0.1, 1e-7, GAUSS)] * 3)
    other = BudgetAccountant(1.0, 1e-5, accounting="pld", ledger=path)
    other.spend(0.1, 1e-7, event=GAUSS)
    acc.spend(0.1, 1e-7, event=GAUSS)
    with pytest.raises(ValueError, match="plan"):
        other.plan([GAUSS])
    other.spend(0.1, 1e-7, event=GAUSS)
    with pytest.raises(ValueError, match="plan"):
        acc.spend(0.1, 1e-7, event=GAUSS)
    assert len(acc) == 3 and Fraction(acc.spent[0]) <= 1


# ------------------------------------------------------------------ the default accountant (issue 25)
def test_default_accountant_context_manager_and_set_default():
    import threading

    assert BudgetAccountant.default() is None
    outer, inner, glob = BudgetAccountant(1.0), BudgetAccountant(2.0), BudgetAccountant(3.0)
    with outer as a:
        assert a is outer and BudgetAccountant.default() is outer
        with inner:
            assert BudgetAccountant.default() is inner
        assert BudgetAccountant.default() is outer
    assert BudgetAccountant.default() is None
    BudgetAccountant.set_default(glob)
    try:
        seen = []
        t = threading.Thread(target=lambda: seen.append(BudgetAccountant.default()))
        t.start()
        t.join()
        assert seen == [glob] and BudgetAccountant.default() is glob
        with inner:
            assert BudgetAccountant.default() is inner
        assert BudgetAccountant.default() is glob
        with pytest.raises(TypeError, match="accountant"):
            BudgetAccountant.set_default("acc")
    finally:
        BudgetAccountant.set_default(None)
    assert BudgetAccountant.default() is None

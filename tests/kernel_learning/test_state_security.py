"""State you can trust (issue 22, items 1–3): faults never give one point two noisy answers, one live session
per state whatever the path spelling, authenticated and secret state files.

Each test here failed on the code before the issue (lock file beside the state, rename-replace writes,
points appended before the commit, unkeyed SHA-256 checksums).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import dpcore
from dpcore import GPService, PINP
from dpcore._internal import state as _state
from dpcore.exceptions import StateAliasError, StateAuthenticationError, StateInUseError

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _forgery import forge_all, forge_release  # noqa: E402
from _pinp_worker import SESSION, build_model, unit_ball  # noqa: E402

#: Stages of a write, and whether the commit is durable once the stage is reached.
STAGES = {
    "file": [("journal_written", False), ("journal_synced", False), ("journal_renamed", True),
             ("main_written", True), ("main_synced", True), ("journal_removed", True)],
    "sqlite": [("sqlite_written", False), ("sqlite_committed", True)],
}
FAULTS = [(b, s, d) for b in STAGES for s, d in STAGES[b]]


@pytest.fixture(scope="module")
def model():
    return build_model()


def _path(tmp_path, backend, name="s"):
    return str(tmp_path / (name + (".db" if backend == "sqlite" else ".json")))


def _make(kind, model, path, **kw):
    if kind == "PINP":
        return PINP(model, **SESSION, state_path=path, random_state=1, **kw)
    return GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=60, state_path=path, random_state=1, **kw)


def _load(kind, path, model, **kw):
    return (PINP if kind == "PINP" else GPService).load(path, model, **kw)


class _Fault:
    """Raise ``exc`` the first time a write reaches ``stage``."""

    def __init__(self, stage, exc):
        self.stage, self.exc, self.fired = stage, exc, False

    def __call__(self, name):
        if name == self.stage and not self.fired:
            self.fired = True
            raise self.exc


@pytest.fixture
def fault():
    def install(stage, exc):
        _state.FAULT_HOOK = _Fault(stage, exc)
        return _state.FAULT_HOOK
    yield install
    _state.FAULT_HOOK = None


# ----------------------------------------------------------------------------- 1. faults: no double noise
@pytest.mark.parametrize("exc", [OSError(28, "No space left on device"), KeyboardInterrupt()],
                         ids=["disk-full", "ctrl-c"])
@pytest.mark.parametrize("backend,stage,durable", FAULTS)
def test_gp_service_fault_at_every_write_stage_never_answers_a_point_twice(model, tmp_path, fault, backend, stage,
                                                                            durable, exc):
    path = _path(tmp_path, backend)
    svc = _make("GPService", model, path)
    rng = np.random.default_rng(0)
    svc.decision_function(unit_ball(rng, 3, 3))
    Z = unit_ball(rng, 4, 3)
    before = svc.n_distinct
    hook = fault(stage, exc)
    with pytest.raises(type(exc)):
        svc.decision_function(Z)
    assert hook.fired
    _state.FAULT_HOOK = None
    # durable commit: kept (charged); otherwise rolled back (never returned, never charged)
    assert svc.n_distinct == before + (4 if durable else 0)
    a = svc.decision_function(Z)  # the retry: the stored answers if the commit landed, else one fresh answer
    assert np.array_equal(svc.decision_function(Z), a)
    seq, n = svc.state_seq, svc.n_distinct
    svc.close()
    again = GPService.load(path, model, min_seq=seq)
    assert again.n_distinct == n  # memory and disk agree
    assert np.array_equal(again.decision_function(Z), a)  # one answer per point, the one returned
    again.close()


@pytest.mark.parametrize("exc", [OSError(5, "Input/output error"), KeyboardInterrupt()], ids=["io-error", "ctrl-c"])
@pytest.mark.parametrize("backend,stage,durable", FAULTS)
def test_pinp_fault_at_every_write_stage_charges_only_what_could_be_returned(model, tmp_path, fault, backend, stage,
                                                                              durable, exc):
    path = _path(tmp_path, backend)
    p = _make("PINP", model, path)
    rng = np.random.default_rng(0)
    p.predict(unit_ball(rng, 5, 3))
    before = (p.n_answered, p.n_updates)
    fault(stage, exc)
    with pytest.raises(type(exc)):
        p.predict(unit_ball(rng, 7, 3))
    _state.FAULT_HOOK = None
    if durable:
        assert p.n_answered == before[0] + 7
    else:  # the failed batch is rolled back: not charged in memory, and nothing on disk
        assert (p.n_answered, p.n_updates) == before
    p.predict(unit_ball(rng, 2, 3))
    live = (p.n_answered, p.n_updates, p.state_seq)
    p.close()
    q = PINP.load(path, model, min_seq=live[2])
    assert (q.n_answered, q.n_updates, q.state_seq) == live
    q.close()


def test_interrupt_in_the_rust_batch_is_not_charged_later(model):
    """A batch interrupted before its answers exist is not charged at the next commit (no state file:
    the in-memory counters are the charge)."""
    p = PINP(model, **SESSION, random_state=1)
    rng = np.random.default_rng(0)
    p.predict(unit_ball(rng, 3, 3))
    before = (p.n_answered, p.n_updates)

    def interrupted(chunk, bar):
        p._session.answer(chunk, p._info["X"], p._info["mu"])  # the Rust batch ran ...
        raise KeyboardInterrupt  # ... and the caller was interrupted before it returned

    p._answer_and_commit = interrupted
    with pytest.raises(KeyboardInterrupt):
        p.predict(unit_ball(rng, 6, 3))
    assert (p.n_answered, p.n_updates) == before
    del p._answer_and_commit
    p.predict(unit_ball(rng, 1, 3))
    assert p.n_answered == before[0] + 1


# ----------------------------------------------------------------------------- 2. one live session per state
_SECOND = textwrap.dedent("""
    import sys; sys.path.insert(0, {here!r})
    from _pinp_worker import SESSION, build_model
    import dpcore
    m = build_model()
    cls = dpcore.PINP if {kind!r} == "PINP" else dpcore.GPService
    try:
        cls.load({path!r}, m).close()
        print("LOADED")
    except Exception as e:
        print(type(e).__name__)
""")


def _second_process(kind, path):
    out = subprocess.run([sys.executable, "-c", _SECOND.format(here=str(HERE), kind=kind, path=str(path))],
                         capture_output=True, text=True, timeout=120)
    return out.stdout.strip() or out.stderr[-2000:]


@pytest.mark.parametrize("kind", ["PINP", "GPService"])
@pytest.mark.parametrize("backend", ["file", "sqlite"])
def test_hard_link_symlink_and_deleted_lock_never_give_two_live_sessions(model, tmp_path, kind, backend):
    path = _path(tmp_path, backend)
    svc = _make(kind, model, path)
    Z = unit_ball(np.random.default_rng(1), 3, 3)
    svc.predict(Z)
    # a symbolic link and a '..' spelling meet the same lock (another process)
    link = tmp_path / ("alias" + Path(path).suffix)
    os.symlink(path, link)
    assert _second_process(kind, link) == "StateInUseError"
    odd = tmp_path / "sub"
    odd.mkdir()
    assert _second_process(kind, str(odd / ".." / Path(path).name)) == "StateInUseError"
    # there is no lock file to delete: whatever else sits beside the state, the lock is on the state itself
    for extra in tmp_path.iterdir():
        if extra.name.endswith(".lock"):
            extra.unlink()
    assert not list(tmp_path.glob("*.lock"))
    assert _second_process(kind, path) == "StateInUseError"
    # a hard link: refused by the other process, and the live session stops committing while it exists
    hard = tmp_path / ("hard" + Path(path).suffix)
    os.link(path, hard)
    assert _second_process(kind, hard) in ("StateInUseError", "StateAliasError")
    with pytest.raises(StateAliasError, match="hard links"):
        svc.predict(unit_ball(np.random.default_rng(2), 2, 3))
    hard.unlink()
    svc.predict(unit_ball(np.random.default_rng(3), 2, 3))
    svc.close()
    os.link(path, hard)
    with pytest.raises(StateAliasError, match="hard links"):  # refused at load too, before anything is rebuilt
        _load(kind, path, model)
    hard.unlink()
    _load(kind, path, model).close()


@pytest.mark.parametrize("backend", ["file", "sqlite"])
def test_a_session_created_through_a_symlink_writes_the_target(model, tmp_path, backend):
    target = _path(tmp_path, backend, "target")
    link = tmp_path / ("link" + Path(target).suffix)
    os.symlink(target, link)
    p = PINP(model, **SESSION, state_path=link, random_state=1)
    p.predict(unit_ball(np.random.default_rng(0), 5, 3))
    n = p.n_answered
    assert os.path.islink(link)  # the write did not replace the link with a second state
    with pytest.raises(StateInUseError):
        PINP.load(target, model)
    p.close()
    q = PINP.load(target, model)
    assert q.n_answered == n
    q.close()


@pytest.mark.parametrize("backend", ["file", "sqlite"])
def test_a_removed_or_replaced_state_stops_the_live_session(model, tmp_path, backend):
    path = _path(tmp_path, backend)
    p = _make("PINP", model, path)
    p.predict(unit_ball(np.random.default_rng(0), 3, 3))
    n = p.n_answered
    os.rename(path, path + ".moved")
    with pytest.raises(StateAliasError, match="removed"):
        p.predict(unit_ball(np.random.default_rng(1), 3, 3))
    assert p.n_answered == n  # rolled back: nothing returned, nothing charged
    p.close()


def test_gp_service_standby_is_refused_before_rebuilding_the_factor(model, tmp_path, monkeypatch):
    path = _path(tmp_path, "file")
    svc = _make("GPService", model, path)
    svc.decision_function(unit_ball(np.random.default_rng(0), 6, 3))

    def no_rebuild(*a, **k):
        raise AssertionError("the factor was rebuilt before the lock was checked")

    monkeypatch.setattr(GPService, "_extend_factor", no_rebuild)
    with pytest.raises(StateInUseError):
        GPService.load(path, model)
    monkeypatch.undo()
    svc.close()


# ----------------------------------------------------------------------------- 3. authenticated, secret files
@pytest.mark.parametrize("kind", ["PINP", "GPService"])
def test_every_forgery_of_a_sealed_state_is_refused(tmp_path, kind):
    tried, rejected, accepted = forge_all(kind, tmp_path, "sealed")
    assert tried >= 25 and rejected == tried, accepted


@pytest.mark.parametrize("kind", ["PINP", "GPService"])
def test_unauthenticated_opt_out_still_validates_every_field(tmp_path, kind):
    """Without a key, only what is consistent with the public parameters and the model can load: the
    documented residue is a consistent older state (counters zeroed with the updates emptied) — that is
    what a key or a ledger is for."""
    tried, rejected, accepted = forge_all(kind, tmp_path, "unauthenticated")
    allowed = {"counters zeroed, points and alphas emptied [plain, checksum recomputed]",
               "seq forged upwards [plain, checksum recomputed]"}
    assert set(accepted) <= allowed, accepted


@pytest.mark.parametrize("kind", ["PINP", "GPService"])
def test_state_files_are_secret_and_need_their_key(model, tmp_path, kind):
    path = _path(tmp_path, "file")
    svc = _make(kind, model, path)
    svc.predict(unit_ball(np.random.default_rng(0), 3, 3))
    svc.close()
    raw = Path(path).read_bytes()
    assert raw.startswith(b"DPCORE-SEALED-1\n") and b"answers" not in raw and b"points" not in raw
    for f in (path, path + ".key"):
        assert stat.S_IMODE(os.stat(f).st_mode) == 0o600
    assert not hasattr(svc, "fingerprint")  # no unkeyed hash of the training data on the object
    with pytest.raises(StateAuthenticationError, match="fails authentication"):
        _load(kind, path, model, state_key=b"x" * 32)
    with pytest.raises(StateAuthenticationError, match="sealed"):
        _load(kind, path, model, state_key="unauthenticated")
    os.chmod(path + ".key", 0o644)
    with pytest.raises(ValueError, match="chmod 600"):
        _load(kind, path, model)
    os.chmod(path + ".key", 0o600)
    os.chmod(path, 0o640)
    with pytest.raises(ValueError, match="chmod 600"):
        _load(kind, path, model)
    os.chmod(path, 0o600)
    key_path = path + ".key"
    os.rename(key_path, key_path + ".gone")
    with pytest.raises(FileNotFoundError, match="key file"):
        _load(kind, path, model)
    os.rename(key_path + ".gone", key_path)
    _load(kind, path, model).close()


def test_user_key_and_keyed_fingerprint(model, tmp_path):
    key = os.urandom(32)
    path = _path(tmp_path, "sqlite")
    svc = _make("GPService", model, path, state_key=key)
    Z = unit_ball(np.random.default_rng(0), 3, 3)
    a = svc.decision_function(Z)
    svc.close()
    assert not os.path.exists(path + ".key")
    with pytest.raises(FileNotFoundError, match="key file"):
        GPService.load(path, model)  # the default key file does not exist: the user's key is needed
    r = GPService.load(path, model, state_key=key)
    assert np.array_equal(r.decision_function(Z), a)
    r.close()
    with pytest.raises(ValueError, match="at least 32 bytes"):
        _make("GPService", model, _path(tmp_path, "file", "short"), state_key=b"short")
    with pytest.raises(TypeError, match="state_key"):
        _make("GPService", model, _path(tmp_path, "file", "bad"), state_key=3.5)


def test_gp_service_signed_zero_is_one_point(model):
    svc = GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=10, random_state=0)
    z = np.array([[0.0, 0.25, -0.0]])
    a = svc.decision_function(z)
    b = svc.decision_function(np.array([[-0.0, 0.25, 0.0]]))
    assert svc.n_distinct == 1 and np.array_equal(a, b)


@pytest.mark.parametrize("kind", ["PINP", "GPService"])
@pytest.mark.parametrize("backend", ["file", "sqlite"])
def test_a_ledger_detects_a_state_rolled_back_on_disk(model, tmp_path, kind, backend):
    """Someone who controls the state's disk (and its key file) puts an older sealed copy back between
    sessions: undetectable from the file alone, refused by load given the accountant whose SQLite ledger
    recorded the state's commits (another process, another handle of the same ledger)."""
    import pickle

    ledger = str(tmp_path / "budget.sqlite")
    acc = dpcore.BudgetAccountant(1e9, 1e-3, ledger=ledger)
    path = _path(tmp_path, backend)
    svc = _make(kind, model, path, accountant=acc)
    rng = np.random.default_rng(0)
    svc.predict(unit_ball(rng, 3, 3))
    svc.close()
    old = Path(path).read_bytes() if backend == "file" else None
    if backend == "sqlite":
        import shutil
        import sqlite3

        sqlite3.connect(path).execute("PRAGMA wal_checkpoint(FULL)").close()
        shutil.copyfile(path, path + ".old")
    svc = _load(kind, path, model, accountant=acc)
    svc.predict(unit_ball(rng, 3, 3))
    svc.close()
    if backend == "file":
        with open(path, "r+b") as f:  # in place: same inode, same mode
            f.truncate(0)
            f.write(old)
    else:
        import sqlite3

        row = sqlite3.connect(path + ".old").execute("SELECT seq, doc FROM dpcore_state").fetchone()
        con = sqlite3.connect(path)
        con.execute("UPDATE dpcore_state SET seq = ?, doc = ? WHERE id = 1", row)
        con.commit()
        con.close()
    other_handle = pickle.loads(pickle.dumps(acc))  # e.g. the accountant of a restarted process
    with pytest.raises(dpcore.StateRollbackError, match="ledger"):
        _load(kind, path, model, accountant=other_handle)
    _load(kind, path, model).close()  # without a ledger the older copy is indistinguishable (documented)


def test_verbose_pinp_interrupted_in_a_later_chunk_charges_nothing(model, tmp_path, monkeypatch):
    """With verbose the batch runs in chunks; an interrupt in chunk 2 rolls back chunk 1 too (one commit per
    batch): nothing was returned, so nothing is charged, in memory or on disk."""
    import dpcore.kernel_learning.pinp as pinp_mod

    monkeypatch.setattr(pinp_mod, "_PROGRESS_CHUNK", 4)
    path = _path(tmp_path, "file")
    p = PINP(model, **SESSION, state_path=path, random_state=1, verbose=1)
    rng = np.random.default_rng(0)
    p.predict(unit_ball(rng, 3, 3))
    before = (p.n_answered, p.n_updates, p.state_seq)
    real = p._session
    calls = {"n": 0}

    class Session:
        def __getattr__(self, name):
            return getattr(real, name)

        def answer(self, *a):
            calls["n"] += 1
            if calls["n"] == 2:
                raise KeyboardInterrupt
            return real.answer(*a)

    p._session = Session()
    with pytest.raises(KeyboardInterrupt):
        p.predict(unit_ball(rng, 10, 3))
    p._session = real
    assert calls["n"] == 2 and (p.n_answered, p.n_updates, p.state_seq) == before
    p.close()
    q = PINP.load(path, model)
    assert (q.n_answered, q.n_updates, q.state_seq) == before
    q.close()


@pytest.mark.parametrize("mode", ["plain", "sealed"])
def test_kernel_release_forgeries(tmp_path, mode):
    """A release is public: without a key every field is validated (only a different but valid release — μ
    scaled, a relabelled mechanism — can pass); saved with key= every forgery is refused."""
    tried, rejected, accepted = forge_release(tmp_path, mode)
    if mode == "sealed":
        assert tried >= 40 and rejected == tried, accepted
    else:
        assert set(accepted) <= {"mu x10 [plain, checksum recomputed]", "mechanism unknown [plain, checksum recomputed]"}


@pytest.mark.parametrize("kind", ["PINP", "GPService", "TDDL"])
def test_an_unfitted_model_is_a_not_fitted_error(kind):
    """Issue 25: an unfitted model passed to a private mechanism says so (it used to say 'model has no
    w_error_bound_')."""
    model = dpcore.KernelSVM(lam=0.1)
    with pytest.raises(dpcore.exceptions.NotFittedError, match="not fitted"):
        if kind == "PINP":
            PINP(model, 1.0, 1e-6, data_norm=1.0, n_queries=10)
        elif kind == "GPService":
            GPService(model, 1.0, 1e-6, data_norm=1.0)
        else:
            dpcore.TDDL(model, 1.0, 1e-6, data_norm=1.0).fit(np.zeros((3, 2)))


def test_norm_errors_print_enough_digits(model):
    """Issue 25: a row of norm 1.0000000026 (float32 input) was reported as 'norm 1'."""
    X = np.array([[1.0000000026, 0.0, 0.0]])
    with pytest.raises(ValueError, match=r"1\.00000000"):
        GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=5, random_state=0).decision_function(X)


def test_docs_say_live_services_cannot_be_cloned():
    """Issue 25: docs/sklearn.md claimed PINP and GPService support clone; they refuse copies on purpose."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "sklearn.md").read_text(encoding="utf-8")
    assert "except `PINP` and `GPService` support `get_params`/`set_params`/`clone`" in doc

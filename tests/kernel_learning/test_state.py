"""Durable state under faults (issue 12, part 4): kill sweep, threads + a second process, tampering and rollback.

The kill sweep's size is ``DPCORE_KILL_SWEEP`` kills per backend (default 24 here; the benchmark
``benches/bench_pinp_crash.py`` runs the full sweep of >= 100 kills per backend and reports both).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import dpcore
from dpcore import PINP, KernelRelease, StateRollbackError

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _pinp_crash import run_gp_kill_sweep, run_kill_sweep  # noqa: E402
from _pinp_worker import SESSION, build_model, unit_ball  # noqa: E402

N_KILLS = int(os.environ.get("DPCORE_KILL_SWEEP", "24"))


@pytest.fixture(scope="module")
def model():
    return build_model()


def queries(m, seed):
    return unit_ball(np.random.default_rng(seed), m, 3)


@pytest.mark.parametrize("backend", ["file", "sqlite"])
def test_kill_sweep_never_loses_progress_or_regains_budget(backend, tmp_path):
    stats = run_kill_sweep(N_KILLS, tmp_path, backend=backend, seed=7)
    assert stats["kills"] == N_KILLS and stats["write_kills"] == N_KILLS // 2
    assert all(v > 0 for v in stats["stages"].values()), stats  # every write stage was hit
    assert stats["max_answered"] > 0 and stats["leftover_temp_files"] <= 1, stats


@pytest.mark.parametrize("backend", ["file", "sqlite"])
def test_gp_service_kill_sweep_continues_the_same_path(backend, tmp_path):
    stats = run_gp_kill_sweep(N_KILLS // 2, tmp_path, backend=backend, seed=11)
    assert stats["kills"] == N_KILLS // 2 and stats["checked_answers"] > 0 and stats["max_distinct"] > 0, stats


@pytest.mark.parametrize("suffix", [".json", ".db"])
def test_eight_threads_and_a_second_process_share_one_state_safely(model, tmp_path, suffix):
    path = tmp_path / ("t" + suffix)
    p = PINP(model, **SESSION, state_path=path, random_state=8)
    errors, results = [], []

    def work(i):
        try:
            for j in range(10):
                results.append(p.predict(queries(3, seed=100 * i + j)).shape[0])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    second = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(HERE)!r})
        from _pinp_worker import SESSION, build_model
        from dpcore import PINP
        m = build_model()
        try:
            PINP.load({str(path)!r}, m)
            print("LOADED")
        except RuntimeError as e:
            print("LOCKED" if "in use" in str(e) else "OTHER " + str(e))
        try:
            PINP(m, **SESSION, state_path={str(path)!r})
            print("CREATED")
        except (FileExistsError, RuntimeError) as e:
            print("REFUSED")
    """)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    out = subprocess.run([sys.executable, "-c", second], capture_output=True, text=True, timeout=120)
    for t in threads:
        t.join()
    assert not errors and sum(results) == 240 == p.n_answered
    assert out.stdout.split() == ["LOCKED", "REFUSED"], (out.stdout, out.stderr[-2000:])
    seq = p.state_seq
    assert seq == 80  # one commit at creation + one per batch, none lost or duplicated
    p.close()
    # the second process may now resume, and continues the counters
    resume = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(HERE)!r})
        import numpy as np
        from _pinp_worker import build_model, unit_ball
        from dpcore import PINP
        q = PINP.load({str(path)!r}, build_model(), min_seq={seq})
        q.predict(unit_ball(np.random.default_rng(0), 4, 3))
        print(q.n_answered, q.state_seq)
    """)
    out = subprocess.run([sys.executable, "-c", resume], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["244", str(seq + 1)], (out.stdout, out.stderr[-2000:])


def _read_file_doc(path):
    return json.loads(Path(path).read_text())


@pytest.mark.parametrize("suffix", [".json", ".sqlite"])
def test_rollback_is_detected_while_live_and_with_min_seq(model, tmp_path, suffix):
    path = str(tmp_path / ("s" + suffix))
    p = PINP(model, **SESSION, state_path=path, random_state=1)
    p.predict(queries(5, 1))
    old_seq = p.state_seq
    backup = str(tmp_path / ("backup" + suffix))
    shutil.copyfile(path, backup)
    if suffix == ".sqlite":  # include the WAL: the copy must be the database as of old_seq
        sqlite3.connect(path).execute("PRAGMA wal_checkpoint(FULL)").close()
        shutil.copyfile(path, backup)
    p.predict(queries(5, 2))
    p.predict(queries(5, 3))
    new_seq, answered = p.state_seq, p.n_answered
    assert new_seq == old_seq + 2
    # someone puts the older copy back while the service runs: the next commit refuses
    if suffix == ".sqlite":
        con = sqlite3.connect(path)
        row = sqlite3.connect(backup).execute("SELECT seq, doc FROM dpcore_state").fetchone()
        con.execute("UPDATE dpcore_state SET seq = ?, doc = ? WHERE id = 1", row)
        con.commit()
        con.close()
    else:
        shutil.copyfile(backup, path)
    with pytest.raises(StateRollbackError, match="changed behind this session"):
        p.predict(queries(5, 4))
    p.close()
    # at load time the file alone cannot tell; the recorded sequence number can
    with pytest.raises(StateRollbackError, match="min_seq"):
        PINP.load(path, model, min_seq=new_seq)
    q = PINP.load(path, model)  # undetectable without min_seq (documented threat model)
    assert q.state_seq == old_seq and q.n_answered < answered
    q.close()


def test_edited_or_truncated_state_is_refused(model, tmp_path):
    """The explicit unauthenticated opt-out still detects accidents (checksum); sealed states: test_state_security.py."""
    path = tmp_path / "e.json"
    p = PINP(model, **SESSION, state_path=path, random_state=1, state_key="unauthenticated")
    p.predict(queries(5, 1))
    p.close()
    good = path.read_bytes()
    doc = json.loads(good)
    doc["n_answered"] = 0  # hand an answered budget back
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="checksum"):
        PINP.load(path, model, state_key="unauthenticated")
    path.write_bytes(good[: len(good) // 2])
    with pytest.raises(ValueError, match="corrupted or truncated"):
        PINP.load(path, model, state_key="unauthenticated")
    path.write_bytes(good)
    PINP.load(path, model, state_key="unauthenticated").close()
    # an SQLite state edited behind the store's back
    db = tmp_path / "e.db"
    p = PINP(model, **SESSION, state_path=db, random_state=1, state_key="unauthenticated")
    p.predict(queries(5, 1))
    p.close()
    con = sqlite3.connect(db)
    seq, text = con.execute("SELECT seq, doc FROM dpcore_state").fetchone()
    d = json.loads(text)
    d["n_answered"] = 0
    con.execute("UPDATE dpcore_state SET doc = ? WHERE id = 1", (json.dumps(d),))
    con.commit()
    con.close()
    with pytest.raises(ValueError, match="checksum"):
        PINP.load(db, model, state_key="unauthenticated")


def test_old_format_state_is_refused(model, tmp_path):
    path = tmp_path / "v1.json"
    path.write_text(json.dumps({"format": "dpcore.kernel_learning.pinp.state/1", "checksum": "x"}))
    os.chmod(path, 0o600)
    with pytest.raises(ValueError, match="format"):
        PINP.load(path, model, state_key="unauthenticated")
    with pytest.raises(ValueError, match="not an authenticated"):  # with a key, an unsealed file is refused
        PINP.load(path, model, state_key=b"k" * 32)


def test_kernel_release_tampering_is_refused(tmp_path):
    rel = KernelRelease(np.eye(2), np.array([1.0, -1.0]), dict(kernel="rbf", gamma=1.0, degree=3, coef0=1.0),
                        classes=np.array([-1, 1]), mechanism="tddl", epsilon=1.0, delta=0.0, calibration={"test": True},
                        data_norm=1.0)
    path = tmp_path / "r.json"
    rel.save(path)
    raw = path.read_bytes()
    path.write_bytes(raw[:-10])
    with pytest.raises(ValueError, match="corrupted or truncated"):
        KernelRelease.load(path)
    doc = json.loads(raw)
    doc["epsilon"] = 0.001
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="checksum"):
        KernelRelease.load(path)


@pytest.mark.parametrize("kind", ["PINP", "GPService"])
def test_live_services_refuse_pickle_and_copy(kind):
    """A copy of a live interactive mechanism would answer from the same calibrated state as the original
    (the budget spent twice); persistence is state_path= + load."""
    import copy
    import pickle

    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(60, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    model = dpcore.KernelSVM(lam=0.1, tol=1e-8).fit(X, y)
    if kind == "PINP":
        svc = dpcore.PINP(model, 1e6, 1e-6, data_norm=1.0, n_queries=10, random_state=0)
    else:
        svc = dpcore.GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=10, random_state=0)
    for call in (lambda: pickle.dumps(svc), lambda: copy.copy(svc), lambda: copy.deepcopy(svc)):
        with pytest.raises(TypeError, match="state_path"):
            call()

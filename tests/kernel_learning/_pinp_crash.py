"""The PINP crash-safety kill sweep, shared by tests/kernel_learning/test_state.py (small) and benches/bench_pinp_crash.py (full).

A worker process (tests/kernel_learning/_pinp_worker.py) answers batches of queries against a durable PINP session
and prints its counters after every batch that ``predict`` *returned*. The sweep SIGKILLs it
``n_kills`` times, each time at a different moment:

* half the kills are **during a write**: the worker kills itself when the k-th commit reaches one
  stage of the store's write (file: journal written / fsynced / renamed, state overwritten / fsynced, journal removed;
  SQLite: row written before COMMIT / after COMMIT), k = 1..6;
* the other half are **timed**: after the worker has returned 0–7 batches, plus a random delay of
  0–3 ms (so the kill lands anywhere in compute, commit or print).

After every kill the state is loaded (with ``min_seq`` = the sequence number seen after the
previous kill: no rollback) and checked against what the caller had received — ``n_answered`` and
``n_updates`` never below the last returned counters, ``remaining_updates`` never above — and
against the previous kill: no counter ever goes backwards, so no budget is ever regained. The
next worker resumes the same state.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
WORKER = HERE / "_pinp_worker.py"

STAGES = {
    "file": ("journal_written", "journal_synced", "journal_renamed", "main_written", "main_synced", "journal_removed"),
    "sqlite": ("sqlite_written", "sqlite_committed"),
}


def _counters(line: str):
    a, u, r, s = line.split()
    return int(a), int(u), int(r), int(s)


def _run_and_kill(args, *, during_write: bool, wait: int, rng, timeout: float):
    """Start a worker; kill it after ``wait`` returned batches plus 0–3 ms, or let it kill itself during
    the chosen write. Returns ``(lines, done)``: every line printed before the kill (READY excluded)."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
    lines, done = [], False
    try:
        first = proc.stdout.readline().strip()
        if first == "READY" and not during_write:
            deadline = time.time() + timeout
            while len(lines) < wait and time.time() < deadline:
                line = proc.stdout.readline().strip()
                if not line:
                    break
                if line == "DONE":
                    done = True
                    break
                lines.append(line)
            time.sleep(float(rng.uniform(0.0, 0.003)))
            os.kill(proc.pid, signal.SIGKILL)
        elif first == "READY":
            proc.wait(timeout=timeout)  # it kills itself during the chosen write
        rest = proc.stdout.read()
    finally:
        proc.kill()
        proc.wait()
        err = proc.stderr.read()
        proc.stderr.close()
        proc.stdout.close()
    for line in rest.splitlines():
        line = line.strip()
        if line == "DONE":
            done = True
        elif line and line != "READY":
            lines.append(line)
    if proc.returncode not in (-signal.SIGKILL, 0):
        raise AssertionError(f"worker failed (exit {proc.returncode}): {err[-2000:]}")
    return lines, done


def run_kill_sweep(n_kills: int, directory, *, backend: str = "file", seed: int = 0, timeout: float = 60.0) -> dict:
    """Run the sweep; raise AssertionError on the first violation; return summary statistics."""
    sys.path.insert(0, str(HERE))
    from _pinp_worker import build_model  # noqa: E402

    from dpcore import PINP
    from dpcore._internal.state import open_state_store
    from dpcore.kernel_learning.pinp import _STATE_FORMAT

    directory = Path(directory)
    path = str(directory / ("sweep.db" if backend == "sqlite" else "sweep.json"))
    model = build_model()
    rng = np.random.default_rng(seed)
    stages = STAGES[backend]
    prev = None  # (n_answered, n_updates, remaining_updates, seq) loaded after the previous kill
    stats = dict(backend=backend, kills=0, write_kills=0, timed_kills=0, sessions=1, max_answered=0,
                 max_updates=0, stages={s: 0 for s in stages}, seconds=0.0)
    t0 = time.perf_counter()
    for i in range(n_kills):
        exists = prev is not None
        mode = "resume" if exists else "create"
        args = [sys.executable, str(WORKER), path, mode, str(1000 + i), backend]
        during_write = i % 2 == 1
        if during_write:
            stage = stages[(i // 2) % len(stages)]
            args += [stage, str(int(rng.integers(1, 7)))]
            stats["stages"][stage] += 1
        lines, done = _run_and_kill(args, during_write=during_write, wait=int(rng.integers(0, 8)), rng=rng,
                                    timeout=timeout)
        received = _counters(lines[-1]) if lines else None
        stats["kills"] += 1
        stats["write_kills" if during_write else "timed_kills"] += 1
        if not exists and not open_state_store(path, _STATE_FORMAT, backend).exists():
            # killed during the very first commit, before the state existed: nothing was answered
            assert received is None, (i, received)
            continue
        q = PINP.load(path, model, min_seq=None if prev is None else prev[3])  # rollback → StateRollbackError
        try:
            now = (q.n_answered, q.n_updates, q.remaining_updates, q.state_seq)
        finally:
            q.close()
        if received is not None:  # nothing the caller received is lost
            assert now[0] >= received[0] and now[1] >= received[1] and now[2] <= received[2], (i, received, now)
            assert now[3] >= received[3], (i, received, now)
        if prev is not None:  # no counter goes backwards, no budget is regained
            assert now[0] >= prev[0] and now[1] >= prev[1] and now[2] <= prev[2] and now[3] >= prev[3], (i, prev, now)
        prev = now
        stats["max_answered"] = max(stats["max_answered"], now[0])
        stats["max_updates"] = max(stats["max_updates"], now[1])
        if done or now[2] == 0:  # budget exhausted: start a fresh session on a fresh state
            for p in (path, path + "-wal", path + "-shm"):
                if os.path.exists(p):
                    os.unlink(p)
            prev = None
            stats["sessions"] += 1
    stats["seconds"] = time.perf_counter() - t0
    stats["leftover_temp_files"] = len(list(directory.glob(".*.dpcore-*.tmp")))
    return stats


def run_gp_kill_sweep(n_kills: int, directory, *, backend: str = "file", seed: int = 0, timeout: float = 60.0) -> dict:
    """The same sweep for :class:`dpcore.GPService`: after every kill the reloaded service holds at least
    the distinct points the caller had received answers for, its sequence number never goes back, and
    the last received answers are returned again, identically (the path continues, nothing is resampled)."""
    sys.path.insert(0, str(HERE))
    from _pinp_worker import build_model  # noqa: E402

    from dpcore import GPService
    from dpcore._internal.state import open_state_store
    from dpcore.kernel_learning.gp_service import _STATE_FORMAT

    directory = Path(directory)
    path = str(directory / ("gp.db" if backend == "sqlite" else "gp.json"))
    model = build_model()
    rng = np.random.default_rng(seed)
    stages = STAGES[backend]
    prev = None  # (n_distinct, seq)
    stats = dict(backend=backend, kills=0, write_kills=0, timed_kills=0, max_distinct=0, checked_answers=0,
                 seconds=0.0)
    t0 = time.perf_counter()
    for i in range(n_kills):
        mode = "gp-resume" if prev is not None else "gp-create"
        args = [sys.executable, str(WORKER), path, mode, str(2000 + i), backend]
        during_write = i % 2 == 1
        if during_write:
            args += [stages[(i // 2) % len(stages)], str(int(rng.integers(1, 5)))]
        lines, _ = _run_and_kill(args, during_write=during_write, wait=int(rng.integers(0, 6)), rng=rng,
                                 timeout=timeout)
        stats["kills"] += 1
        stats["write_kills" if during_write else "timed_kills"] += 1
        if prev is None and not open_state_store(path, _STATE_FORMAT, backend).exists():
            assert not lines, (i, lines)
            continue
        svc = GPService.load(path, model, state_backend=backend, min_seq=None if prev is None else prev[1])
        try:
            now = (svc.n_distinct, svc.state_seq)
            if lines:
                head, qs, ans = lines[-1].split(" | ")
                n_d, seq = (int(v) for v in head.split())
                assert now[0] >= n_d and now[1] >= seq, (i, head, now)
                Z = np.array([float(v) for v in qs.split()]).reshape(-1, 3)
                a = np.array([float(v) for v in ans.split()])
                assert np.array_equal(svc.decision_function(Z), a), (i, "answers changed after reload")
                assert svc.state_seq == now[1]  # cached answers commit nothing
                stats["checked_answers"] += a.size
            if prev is not None:
                assert now[0] >= prev[0] and now[1] >= prev[1], (i, prev, now)
        finally:
            svc.close()
        prev = now
        stats["max_distinct"] = max(stats["max_distinct"], now[0])
    stats["seconds"] = time.perf_counter() - t0
    return stats

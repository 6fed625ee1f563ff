"""Benchmark-style run of the full PINP crash-safety kill sweep (issue 12, part 4).

The same sweep as ``tests/kernel_learning/test_state.py`` (see ``tests/kernel_learning/_pinp_crash.py`` for what is killed when
and what is checked after every kill), at full size: by default 120 SIGKILLs per backend, half of
them during a write (every stage of the file and SQLite writes), half at random moments of the
run. Any violation raises AssertionError; otherwise prints one summary line per backend.
This is a benchmark, not a test: nothing here asserts a time. Usage::

    python benches/bench_pinp_crash.py                 # 120 kills per backend, file and sqlite
    python benches/bench_pinp_crash.py --kills 300 --backend sqlite
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "kernel_learning"))
from _pinp_crash import run_gp_kill_sweep, run_kill_sweep  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=120)
    ap.add_argument("--backend", choices=["file", "sqlite", "both"], default="both")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--service", choices=["pinp", "gp", "both"], default="both")
    args = ap.parse_args()
    backends = ["file", "sqlite"] if args.backend == "both" else [args.backend]
    for backend in backends:
        if args.service in ("gp", "both"):
            with tempfile.TemporaryDirectory() as d:
                g = run_gp_kill_sweep(args.kills, d, backend=backend, seed=args.seed)
            print(f"GPService {backend:6s}: {g['kills']} kills ({g['write_kills']} during a write, {g['timed_kills']} "
                  f"timed), up to {g['max_distinct']} distinct points, {g['checked_answers']} answers re-checked "
                  f"identical after reload, 0 violations, {g['seconds']:.1f} s")
        if args.service == "gp":
            continue
        with tempfile.TemporaryDirectory() as d:
            s = run_kill_sweep(args.kills, d, backend=backend, seed=args.seed)
        stages = ", ".join(f"{k} {v}" for k, v in s["stages"].items())
        print(f"PINP {backend:6s}: {s['kills']} kills ({s['write_kills']} during a write: {stages}; "
              f"{s['timed_kills']} timed), {s['sessions']} session(s), up to {s['max_answered']} answers and "
              f"{s['max_updates']} updates, 0 violations, {s['seconds']:.1f} s "
              f"({s['seconds'] / s['kills']:.2f} s per kill), leftover temp files {s['leftover_temp_files']}")


if __name__ == "__main__":
    main()

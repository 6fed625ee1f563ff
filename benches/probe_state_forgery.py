"""The forged-state table of issue 22 (item 3): rejected / tried per object and mode, from one run.

Runs the forgery catalogue of ``tests/kernel_learning/_forgery.py`` (the edits the outside probe found, each
written as plain JSON with a recomputed checksum and, for sealed states, sealed under a made-up key; plus bit
flips, truncation, another state's sealed file and a state of another kind under the same key) against a
fresh state of each service, in the default sealed mode and in the explicit ``state_key="unauthenticated"``
opt-out, and prints the table beside the numbers measured on the code before the issue (unkeyed SHA-256
checksum: PINP 22 of 35 forgeries rejected, GPService 12 of 23, KernelRelease 12 of 29). A benchmark, not a test (the test suite runs
the same catalogue: tests/kernel_learning/test_state_security.py). Usage::

    python benches/probe_state_forgery.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "kernel_learning"))
from _forgery import forge_all, forge_release  # noqa: E402

BEFORE = {"PINP": "22 / 35", "GPService": "12 / 23", "KernelRelease": "12 / 29"}


def main() -> None:
    print("| object | before (unkeyed SHA-256) | sealed (default) | unauthenticated opt-out | accepted in the opt-out |")
    print("|---|---|---|---|---|")
    for kind in ("PINP", "GPService"):
        row = [kind, BEFORE[kind]]
        accepted_plain: list = []
        for mode in ("sealed", "unauthenticated"):
            with tempfile.TemporaryDirectory() as d:
                tried, rejected, accepted = forge_all(kind, d, mode)
            row.append(f"{rejected} / {tried}")
            if mode == "unauthenticated":
                accepted_plain = accepted
        row.append("; ".join(a.split(" [")[0] for a in accepted_plain) or "none")
        print("| " + " | ".join(row) + " |")
    cells = []
    for mode in ("sealed", "plain"):
        with tempfile.TemporaryDirectory() as d:
            tried, rejected, accepted = forge_release(d, mode)
        cells.append((f"{rejected} / {tried}", accepted))
    print(f"| KernelRelease | {BEFORE['KernelRelease']} | {cells[0][0]} (save/load key=) | {cells[1][0]} (no key) | "
          + ("; ".join(a.split(" [")[0] for a in cells[1][1]) or "none") + " |")


if __name__ == "__main__":
    main()

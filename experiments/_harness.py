"""The one harness every experiment script (``experiments/*.py``) uses.

The scripts are run as ``python experiments/<script>.py`` from any directory; each puts this folder on
``sys.path`` and imports what it needs with ``from _harness import ...``. Nothing here is private
machinery of dpcore: it is reproducibility, bookkeeping and output of the experiments.

* :func:`derive_seed`: the only way a script turns its public base seed (``--seed``) into the seed of
  one random choice.
* :class:`Data`, :func:`load_data`: a bundled dataset (``dpcore.datasets``) as training rows, the
  remaining training rows (validation) and the test split.
* :func:`majority_rate`, :func:`accuracy`, :func:`public_sample`: measurements shared by the scripts;
  :func:`classification_metrics` (ROC AUC, balanced accuracy, accuracy) and :func:`thin_positives` (a
  public, seeded rule that makes a task imbalanced).
* :func:`mean_std`, :func:`group_rows`, :func:`fmt`, :func:`fmt_pm`, :func:`cell`, :func:`lookup`,
  :func:`find`, :func:`failures_and_timings`: summaries and markdown tables (missing values print ``—``).
* :func:`experiment_parser`, :func:`configure`, :func:`parse_choices`, :func:`run_stages`,
  :class:`RunLog`, :func:`progress`: the shared flags (``--quick``, ``--seed``, ``--runs``, ``--outdir``,
  ``--stages``, ``--datasets``, ``--render``), stages (Ctrl-C keeps the partial results), a run's rows
  and notes, progress bars.
* :func:`output_prefix`, :func:`write_json`, :func:`write_text`, :func:`pyplot`, :func:`save_figure`,
  :func:`git_state`, :func:`environment`: the files in ``experiments/results`` and their provenance.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

import dpcore
from dpcore.datasets import load_adult, load_letter, load_shuttle

HERE = os.path.dirname(os.path.abspath(__file__))
#: Where the scripts write by default (``--outdir``).
DEFAULT_OUTDIR = os.path.join(HERE, "results")
LOADERS = {"adult": load_adult, "shuttle": load_shuttle, "letter": load_letter}
MISSING = "—"


# ------------------------------------------------------------------------------------------------
# seeds
# ------------------------------------------------------------------------------------------------


def derive_seed(base_seed: int, *parts) -> int:
    """A reproducible 64-bit seed for one random choice, derived from the public base seed.

    ``sha256("|".join(str(p) for p in (base_seed,) + parts))``, first 8 bytes little-endian: an int in
    ``[0, 2**64)`` (what dpcore's ``random_state`` accepts; ``numpy.random.default_rng`` too). The parts
    name the choice (stage, dataset, method, ε, run, ...), so cells are independent of each other and
    of the order they run in.
    """
    digest = hashlib.sha256("|".join(str(p) for p in (base_seed,) + parts).encode()).digest()
    return int.from_bytes(digest[:8], "little")


# ------------------------------------------------------------------------------------------------
# data and measurements
# ------------------------------------------------------------------------------------------------


@dataclass
class Data:
    """A bundled dataset: ``X, y`` the training rows used, ``X_val, y_val`` the other training rows
    (never fitted on), ``X_test, y_test`` the test split; labels ±1, rows in the ball of radius
    ``data_norm`` (public pre-processing of ``dpcore.datasets``)."""

    name: str
    X: np.ndarray
    y: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    data_norm: float

    @property
    def majority(self) -> float:
        """Majority-class rate of the test split."""
        return majority_rate(self.y_test)

    @cached_property
    def X_all(self) -> np.ndarray:
        """Every row, training then test (a population to sample from)."""
        return np.vstack([self.X, self.X_val, self.X_test])


def load_data(name: str, n: Optional[int] = None, *, order_seed: Optional[int] = None) -> Data:
    """Dataset ``name`` (adult, shuttle, letter): the first ``n`` training rows (all if None) in the
    split's order, or in the public permutation ``default_rng(order_seed)`` when given."""
    loader = LOADERS[name]
    tr, te = loader("train"), loader("test")
    X, y = np.asarray(tr.X, dtype=np.float64), np.asarray(tr.y, dtype=np.float64)
    order = np.arange(y.shape[0]) if order_seed is None else np.random.default_rng(order_seed).permutation(y.shape[0])
    n = y.shape[0] if n is None else min(n, y.shape[0])
    fit, val = order[:n], order[n:]
    return Data(name, X[fit], y[fit], X[val], y[val], np.asarray(te.X, dtype=np.float64),
                np.asarray(te.y, dtype=np.float64), float(tr.data_norm))


def majority_rate(y: np.ndarray) -> float:
    """Accuracy of the majority-class predictor on ±1 labels."""
    p = float(np.mean(y > 0))
    return max(p, 1.0 - p)


def accuracy(decision: np.ndarray, y: np.ndarray) -> float:
    """Sign accuracy: ``f > 0`` → +1, else −1 (dpcore's convention; ±1 labels pass through unchanged)."""
    return float(np.mean(np.where(np.asarray(decision) > 0, 1.0, -1.0) == y))


def public_sample(m: int, T: int, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """``T`` of ``m`` row indices without replacement (public points) and the sorted rest (scored)."""
    pub = np.random.default_rng(seed).choice(m, size=T, replace=False)
    return pub, np.setdiff1d(np.arange(m), pub, assume_unique=True)


def classification_metrics(y: np.ndarray, scores: np.ndarray, labels: Optional[np.ndarray] = None) -> dict:
    """ROC AUC of the real-valued ``scores`` and balanced accuracy and accuracy of ``labels`` (±1; the sign
    of ``scores`` when None) against ±1 labels ``y``. AUC is NaN when ``y`` has one class or the scores are
    constant (a model that ranks nothing)."""
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score

    y = np.asarray(y, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    pred = np.where(scores > 0, 1.0, -1.0) if labels is None else np.where(np.asarray(labels) > 0, 1.0, -1.0)
    two = np.unique(y).size == 2
    auc = float(roc_auc_score(y, scores)) if two and np.ptp(scores) > 0 and np.all(np.isfinite(scores)) else float("nan")
    bacc = float(balanced_accuracy_score(y, pred)) if two else float("nan")
    return dict(auc=auc, bacc=bacc, acc=float(np.mean(pred == y)))


def thin_positives(y: np.ndarray, rate: float, seed: int) -> np.ndarray:
    """Indices (sorted) of the rows kept when the +1 class is subsampled so that it is ``rate`` of the result.

    A public rule: every −1 row is kept, and ``k = min(#pos, round(rate/(1 − rate)·#neg))`` of the +1 rows,
    chosen uniformly without replacement by ``numpy.random.default_rng(seed)``. It depends on the labels'
    counts and the seed only.
    """
    y = np.asarray(y)
    pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y <= 0)
    k = min(pos.size, int(round(rate / (1.0 - rate) * neg.size)))
    kept = np.random.default_rng(seed).choice(pos, size=k, replace=False)
    return np.sort(np.concatenate([neg, kept]))


# ------------------------------------------------------------------------------------------------
# summaries and table cells
# ------------------------------------------------------------------------------------------------


def mean_std(values: Iterable[Optional[float]]) -> Tuple[float, float]:
    """Mean and standard deviation (ddof = 1; 0 for one value) over the finite values; NaN if none."""
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    if v.size == 0:
        return float("nan"), float("nan")
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def group_rows(rows: Iterable[dict], key: Callable[[dict], tuple], *, by_text: bool = True
               ) -> List[Tuple[tuple, List[dict]]]:
    """Rows grouped by ``key(row)``, sorted by the keys' text (``by_text``, for mixed None/str/number
    keys) or by the keys themselves."""
    groups: Dict[tuple, List[dict]] = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r)
    return sorted(groups.items(), key=(lambda kv: tuple(str(k) for k in kv[0])) if by_text else (lambda kv: kv[0]))


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt(x, spec: str = ".3g") -> str:
    """``format(x, spec)``, or ``—`` for None/NaN."""
    return MISSING if _missing(x) else format(x, spec)


def fmt_pm(mean, std=None, spec: str = ".1f", scale: float = 1.0) -> str:
    """``mean ± std`` (both times ``scale``), just the mean when ``std`` is None, ``—`` when missing."""
    if _missing(mean):
        return MISSING
    text = format(scale * mean, spec)
    return text if std is None else f"{text} ± {format(scale * std, spec)}"


def cell(row: Optional[dict], key: str, spec: str = ".1f", scale: float = 100.0) -> str:
    """``row[key_mean] ± row[key_std]`` of a summary row (default: a rate in %), ``—`` if absent."""
    if row is None or f"{key}_mean" not in row:
        return MISSING
    return fmt_pm(row[f"{key}_mean"], row.get(f"{key}_std"), spec, scale)


def failures_and_timings(title: str, failures: Sequence[dict], describe: Callable[[dict], str],
                         timings: Dict[str, float]) -> List[str]:
    """Closing markdown lines: up to 10 failures (``- describe(r): error``) and the seconds per stage."""
    lines = []
    if failures:
        lines += [f"## {title}: {len(failures)}\n"] + [f"- {describe(r)}: {r['error']}" for r in failures[:10]] + [""]
    return lines + ["Timings (s): " + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()) + "\n"]


def lookup(rows: Iterable[dict], **kw) -> List[dict]:
    """The rows whose fields equal every given value."""
    return [r for r in rows if all(r.get(k) == v for k, v in kw.items())]


def find(rows: Iterable[dict], **kw) -> Optional[dict]:
    """The first row of :func:`lookup`, or None."""
    return next(iter(lookup(rows, **kw)), None)


# ------------------------------------------------------------------------------------------------
# command line, stages, progress
# ------------------------------------------------------------------------------------------------


def experiment_parser(doc: str, default_seed: int, *, quick: Optional[str] = "small sizes: smoke test",
                      runs: Optional[int] = None, stages: Optional[Sequence[str]] = None,
                      datasets: Optional[Sequence[str]] = None, render: Optional[str] = None
                      ) -> argparse.ArgumentParser:
    """A parser with the flags the scripts share; the description is the docstring's first paragraph.

    Always ``--seed`` (public base seed), ``--runs`` and ``--outdir``; ``--quick`` unless ``quick`` is
    None; ``--stages``/``--datasets`` (comma-separated subsets, parsed to tuples, all by default) when
    their choices are given; ``--render RESULTS_JSON`` (tables and plots from a saved ``render`` file).
    """
    p = argparse.ArgumentParser(description=doc.strip().split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    if quick is not None:
        p.add_argument("--quick", action="store_true", help=quick)
    p.add_argument("--seed", type=int, default=default_seed, help="public base seed of every random choice")
    p.add_argument("--runs", type=int, default=runs,
                   help="runs per cell" + (" (None: the configuration's)" if runs is None else ""))
    p.add_argument("--outdir", default=DEFAULT_OUTDIR, help="where the results are written")
    for flag, choices in (("--stages", stages), ("--datasets", datasets)):  # parsed to tuples
        if choices is not None:
            p.add_argument(flag, default=",".join(choices), help="comma-separated subset of " + ",".join(choices),
                           type=lambda text, choices=tuple(choices): parse_choices(text, choices))
    if render is not None:
        p.add_argument("--render", metavar="RESULTS_JSON", default=None,
                       help=f"only re-write the tables and plots from a saved {render} (no fitting)")
    return p


def configure(config_cls, args: argparse.Namespace, quick: dict, *, min_runs: int = 1):
    """``config_cls(seed=args.seed)`` (a frozen dataclass) with the ``quick`` overrides under ``--quick``,
    then ``--stages`` and ``--datasets`` (where the configuration has them) and ``--runs``."""
    cfg = config_cls(seed=args.seed)
    if getattr(args, "quick", False):
        cfg = replace(cfg, **quick)
    given = {k: getattr(args, k) for k in ("stages", "datasets") if getattr(args, k, None) is not None and hasattr(cfg, k)}
    if args.runs is not None:
        if args.runs < min_runs:
            raise SystemExit(f"--runs must be >= {min_runs}")
        given["runs"] = args.runs
    return replace(cfg, **given)


def parse_choices(text: str, choices: Sequence[str]) -> Tuple[str, ...]:
    """A comma-separated subset of ``choices``, as a tuple in the order given."""
    chosen = tuple(s.strip() for s in text.split(",") if s.strip())
    bad = [s for s in chosen if s not in choices]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown {bad}; choose from {','.join(choices)}")
    return chosen


def run_stages(stages: Sequence[Tuple[str, Callable[[], None]]], timings: Dict[str, float]) -> bool:
    """Run ``(name, fn)`` in order, seconds per stage into ``timings``; True when Ctrl-C stopped them
    (the script then writes its partial results and exits with status 130)."""
    try:
        for name, fn in stages:
            t0 = time.perf_counter()
            fn()
            timings[name] = time.perf_counter() - t0
            print(f"stage {name}: {timings[name]:.0f} s", flush=True)
    except KeyboardInterrupt:
        print("\ninterrupted: writing partial results", file=sys.stderr)
        return True
    return False


class RunLog:
    """What one run records: ``rows`` (:meth:`add`), ``notes``, seconds per stage, the start time."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.rows: List[dict] = []
        self.notes: List[str] = []
        self.timings: Dict[str, float] = {}
        self.started = time.time()

    def add(self, **row) -> None:
        self.rows.append(row)

    def run(self, stages: Sequence[Tuple[str, Callable[[], None]]]) -> int:
        """:func:`run_stages`; the exit status (130 and a note when Ctrl-C stopped them, else 0)."""
        if run_stages(stages, self.timings):
            self.notes.append("INTERRUPTED: partial results")
            return 130
        return 0


def progress(iterable=None, *, total: Optional[int] = None, desc: str = "", unit: str = "it"):
    """A tqdm progress bar on stderr (off when stderr is not a terminal, e.g. a log file)."""
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit, dynamic_ncols=True, disable=None)


# ------------------------------------------------------------------------------------------------
# outputs and provenance
# ------------------------------------------------------------------------------------------------


def output_prefix(outdir: str, name: str, quick: bool) -> str:
    """``outdir/name`` or ``outdir/name_quick`` (the directory is created)."""
    os.makedirs(outdir, exist_ok=True)
    return os.path.join(outdir, f"{name}_quick" if quick else name)


def write_json(path: str, doc) -> str:
    """``doc`` as indented JSON (numpy scalars as floats)."""
    with open(path, "w") as fh:
        json.dump(doc, fh, indent=1, default=float)
    return path


def write_text(path: str, text: str) -> str:
    with open(path, "w") as fh:
        fh.write(text)
    return path


def pyplot():
    """``matplotlib.pyplot`` on the file-only Agg backend (matplotlib: the ``demo`` extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: str, dpi: int = 110, rect=None) -> str:
    """Lay out (``tight_layout(rect=rect)``), save and close ``fig``."""
    fig.tight_layout(rect=rect)
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return path


def git_state() -> dict:
    """Commit and locally modified files of the source tree a run used (empty outside git)."""
    root = os.path.dirname(HERE)
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True,
                               timeout=10).stdout.splitlines()
        return dict(commit=head, modified=[line.strip() for line in dirty])
    except (OSError, subprocess.SubprocessError):
        return {}


def environment(git: Optional[dict] = None) -> dict:
    """Versions, platform and source tree of a run (``git``: :func:`git_state` at its start)."""
    return dict(dpcore=dpcore.__version__, numpy=np.__version__, python=sys.version.split()[0],
                platform=platform.platform(), cpu_count=os.cpu_count(), git=git if git is not None else git_state())

"""Benchmark: private selection over many kernel candidates (issue 26, item 2).

Not a test. On the first ``n`` rows of UCI Adult (``dpcore.datasets.load_adult``; public points ``Z`` = the first
``--n-public`` test rows), times in one run:

* **one fit** of ``KernelLogisticRegression`` (rbf, ``gamma = 1``, ``tol="auto"``) at the largest ``C`` of the grid
  (the baseline of the issue's target: the selection in at most 2x this time);
* **the selection**: ``PrivateGridSearch`` over ``C = auto·f`` for ``--candidates`` factors ``f`` (3^-2 … 3^2),
  the kernel logistic candidates fitted as one regularisation path solved in lock-step
  (``dpcore.kernel_learning.svm.fit_logistic_path``), their TDDL releases sharing the GP factor of ``Z`` and one
  batched pass for their clean predictions, and their scores one ``K(X, Z)``;
* **every candidate alone** (unless ``--skip-alone``): the same selection with ``_path_fits = False`` (each
  candidate fitted and released on its own, as before issue 26), which must pick the same candidate;
* with ``--before PYTHONPATH``: one fit and the selection of another dpcore tree (e.g. a checkout of an older
  commit with its built ``_core``), in a child process of the same run.

Times on a shared machine move with its load (``os.getloadavg`` is printed): compare the ratios of one run.

Usage::

    python benches/bench_selection.py --quick        # CI size: n = 2,000, 200 public points
    python benches/bench_selection.py                # full size: n = 20,000, 2,000 public points
    python benches/bench_selection.py --skip-alone --before /path/to/old/python
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

import dpcore
from dpcore.datasets import load_adult
from dpcore.kernel_learning.gp import auto_C_for_mu, feature_radius_sq
from dpcore.kernel_learning.selection import selection_mu


def _setup(args):
    tr, te = load_adult("train"), load_adult("test")
    X, y = np.ascontiguousarray(tr.X[: args.n]), tr.y[: args.n]
    Z = np.ascontiguousarray(te.X[: args.n_public])
    m = args.candidates
    # C = auto at this selection's per-run release μ_r (score_share 0.05, prior 5 % of ε: the defaults)
    mu = selection_mu(args.epsilon * 0.95, 1e-6, n_candidates=m, prior_epsilon=args.epsilon * 0.05 * 0.95)
    mu_r = mu * math.sqrt(0.95)
    c_auto = auto_C_for_mu(mu_r, feature_radius_sq(1.0, "rbf", 1.0, 3, 1.0, n_features=X.shape[1],
                                                   intercept_scaling=0.5))
    factors = 3.0 ** np.linspace(-2.0, 2.0, m)
    grid = {"estimator": ["KernelLogisticRegression"], "C": [float(c_auto * f) for f in factors]}
    base = {"kernel": "rbf", "gamma": 1.0, "tol": "auto"}
    return X, y, Z, grid, base


def _time_one(X, y, grid, base):
    t = time.perf_counter()
    one = dpcore.KernelLogisticRegression(C=max(grid["C"]), **base).fit(X, y)
    return time.perf_counter() - t, one


def _time_selection(X, y, Z, grid, base, args, path=True):
    sel = dpcore.PrivateGridSearch(grid, args.epsilon, 1e-6, Z=Z, data_norm=1.0, base_params=base,
                                   scoring="roc_auc", random_state=args.seed)
    sel._path_fits = path
    t = time.perf_counter()
    sel.fit(X, y)
    return time.perf_counter() - t, sel


def _child(args) -> None:
    """One fit and the (default) selection in this interpreter (``--before``: the old tree), as JSON."""
    X, y, Z, grid, base = _setup(args)
    t_one, one = _time_one(X, y, grid, base)
    t_sel, sel = _time_selection(X, y, Z, grid, base, args)
    print(json.dumps(dict(one=t_one, sel=t_sel, C=sel.best_params_["C"], score=sel.best_score_,
                          iters=int(one.n_iter_))))


def _in_subprocess(args, pythonpath: str) -> dict:
    env = dict(os.environ, PYTHONPATH=pythonpath)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--n", str(args.n), "--n-public",
           str(args.n_public), "--candidates", str(args.candidates), "--epsilon", repr(args.epsilon),
           "--seed", str(args.seed)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="CI size: n = 2000, 200 public points")
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--n-public", type=int, default=2_000)
    p.add_argument("--candidates", type=int, default=10)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--before", default=None, metavar="PYTHONPATH",
                   help="also time one fit and the selection of another dpcore tree (e.g. a checkout of the "
                        "commit before a change, with its built _core) in a child process, in the same run")
    p.add_argument("--skip-alone", action="store_true",
                   help="skip the in-process selection with every candidate fitted alone (_path_fits = False)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.n, args.n_public = 2_000, 200
    if args.child:
        return _child(args)
    X, y, Z, grid, base = _setup(args)
    n, m = X.shape[0], args.candidates
    print(f"Adult n = {n}, d = {X.shape[1]}, |Z| = {Z.shape[0]}, {m} candidates C = "
          f"{', '.join(f'{c:.3g}' for c in grid['C'])}; load average {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} cores", flush=True)
    old = None
    if args.before:
        old = _in_subprocess(args, args.before)
        print(f"before ({args.before}): one fit {old['one']:.2f} s, selection {old['sel']:.2f} s = "
              f"{old['sel'] / old['one']:.2f} x one fit (selected C = {old['C']:.3g}, noisy score "
              f"{old['score']:.6g}); load {os.getloadavg()[0]:.2f}", flush=True)
    t_one, one = _time_one(X, y, grid, base)
    print(f"one fit at C = {max(grid['C']):.3g}: {t_one:.2f} s ({one.n_iter_} kernel products, gap "
          f"{one.duality_gap_:.2e} <= tol {one.tol_:.2e})", flush=True)
    res = {}
    for name, path in ((("alone", False),) if not args.skip_alone else ()) + (("path", True),):
        res[name] = _time_selection(X, y, Z, grid, base, args, path)
        t, sel = res[name]
        print(f"selection ({name:5s}): {t:.2f} s = {t / t_one:.2f} x one fit (selected C = "
              f"{sel.best_params_['C']:.3g}, noisy score {sel.best_score_:.6g}); load {os.getloadavg()[0]:.2f}",
              flush=True)
    ta, sa = res["path"]
    print("\n| n | tree | one fit | selection | selection / one fit |")
    print("|---|---|---|---|---|")
    if old is not None:
        print(f"| {n} | before | {old['one']:.1f} s | {old['sel']:.1f} s | {old['sel'] / old['one']:.2f}x |")
    if "alone" in res:
        print(f"| {n} | this, every candidate alone | {t_one:.1f} s | {res['alone'][0]:.1f} s | "
              f"{res['alone'][0] / t_one:.2f}x |")
    print(f"| {n} | this | {t_one:.1f} s | {ta:.1f} s | {ta / t_one:.2f}x |")
    if "alone" in res:
        sb = res["alone"][1]
        print(f"same selected candidate alone/path: {sb.best_params_ == sa.best_params_}; noisy scores "
              f"{sb.best_score_:.9g} / {sa.best_score_:.9g}")
    if old is not None:
        print(f"same selected candidate before/this (C to 1e-5; C = auto moves with the per-run μ, found to "
              f"relative 1e-6): {math.isclose(old['C'], sa.best_params_['C'], rel_tol=1e-5)}")


if __name__ == "__main__":
    main()

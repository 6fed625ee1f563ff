"""Benchmark: the certified kernel logistic-regression solver vs the hinge solver (issue 23).

Not a test. For each data set, ``n``, ``C`` (``lam = 1 / (C n)``) and class weighting, fits
``dpcore.KernelSVM`` (hinge) and ``dpcore.KernelLogisticRegression`` on the first ``n`` rows with the
same kernel (rbf, ``gamma = 1``, default intercept), the same ``tol`` (default ``1e-8``) and the same
kernel cache, and prints the wall time of each, the logistic/hinge ratio measured in the same run, the
certified duality gaps and the iteration counts. ``--sklearn`` adds scikit-learn's
``LogisticRegression`` on the explicit (precomputed) kernel matrix ``K + b**2`` (features ``K``, no
separate intercept; it solves the primal in the kernel-feature space, a different parameterisation
of a *different* problem: its penalty is ``||beta||**2``, not ``beta^T K beta``, so only its time is
comparable, and only at small ``n``: it materialises the ``n x n`` matrix).

Usage::

    python benches/bench_klr_solver.py                              # Adult, n = 5000, C in {0.003, 0.01, 0.06, 1}
    python benches/bench_klr_solver.py --data adult shuttle letter --n 20000 --weights both
    python benches/bench_klr_solver.py --n 5000 --C 0.06 --sklearn
    python benches/bench_klr_solver.py --logistic-max-iter 20000000   # cap a slow solver
    python benches/bench_klr_solver.py --data adult letter shuttle --n 20000 --C 0.003 0.01 0.06 \
        --weights both --json after.json --before benches/klr_solver_before.json

Letter has 16,000 training rows: ``--n 20000`` uses all of them. ``--json`` writes the rows; ``--before``
reads such a file (e.g. ``benches/klr_solver_before.json``, the Newton-CG solver as first merged, without
the Nystrom warm start) and adds its logistic time and product count beside each matching row. Times on a
shared machine move with its load: compare the hinge/logistic ratio of one run and the product counts.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

import dpcore
from dpcore.exceptions import ConvergenceWarning
from dpcore.datasets import load_adult, load_letter, load_shuttle

LOADERS = {"adult": load_adult, "shuttle": load_shuttle, "letter": load_letter}


def fit(cls, X, y, lam, tol, cw, cache, max_iter):
    est = cls(lam=lam, kernel="rbf", gamma=1.0, tol=tol, class_weight=cw, cache_size=cache, max_iter=max_iter)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    dt = time.perf_counter() - t0
    return est, dt, any(issubclass(w.category, ConvergenceWarning) for w in caught)


def sklearn_time(X, y, C, cw):
    from sklearn.linear_model import LogisticRegression

    t0 = time.perf_counter()
    K = dpcore.kernel_matrix(X, X, kernel="rbf", gamma=1.0) + 0.25
    LogisticRegression(C=C, fit_intercept=False, class_weight=cw, tol=1e-10, max_iter=10_000).fit(K, y)
    return time.perf_counter() - t0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", nargs="+", default=["adult"], choices=sorted(LOADERS))
    p.add_argument("--n", nargs="+", type=int, default=[5000])
    p.add_argument("--C", nargs="+", type=float, default=[0.003, 0.01, 0.06, 1.0])
    p.add_argument("--weights", choices=["none", "pos10", "both"], default="none")
    p.add_argument("--tol", type=float, default=1e-8)
    p.add_argument("--cache", type=lambda v: v if v == "auto" else float(v), default="auto",
                   help='cache_size in MB or "auto" (the default: 200 MB for the hinge, the float32 Gram up to 2 GiB '
                        'for the logistic loss), both solvers')
    p.add_argument("--logistic-max-iter", type=int, default=None)
    p.add_argument("--skip-hinge", action="store_true")
    p.add_argument("--sklearn", action="store_true", help="also time scikit-learn on the explicit kernel")
    p.add_argument("--json", default=None, help="write the rows to this JSON file")
    p.add_argument("--before", default=None, help="JSON rows of an earlier run to show beside this one")
    args = p.parse_args(argv)
    before = {}
    if args.before:
        with open(args.before) as fh:
            for r in json.load(fh)["rows"]:
                before[(r["data"], r["n"], r["C"], r["cw"])] = r
    rows = []
    cws = {"none": [None], "pos10": [{-1: 1.0, 1: 10.0}], "both": [None, {-1: 1.0, 1: 10.0}]}[args.weights]
    print(f"dpcore {dpcore.__version__}; rbf gamma=1, intercept_scaling default, tol={args.tol:g}, "
          f"cache_size={args.cache!r}")
    hdr = (f"{'data':8s} {'n':>6s} {'C':>6s} {'cw':>5s} | {'hinge s':>8s} {'gap':>8s} | {'logistic s':>10s} "
           f"{'gap':>8s} {'iters':>9s} {'conv':>5s} | {'log/hinge':>9s}"
           + (f" | {'before s':>9s} {'iters':>6s} {'log/hinge':>9s}" if args.before else "")
           + (" | sklearn s" if args.sklearn else ""))
    print(hdr)
    print("-" * len(hdr))
    for name in args.data:
        b = LOADERS[name]()
        for n in args.n:
            X, y = b.X[:n], b.y[:n]
            for C in args.C:
                lam = 1.0 / (C * X.shape[0])
                for cw in cws:
                    if args.skip_hinge:
                        th, hgap = float("nan"), float("nan")
                    else:
                        h, th, _ = fit(dpcore.KernelSVM, X, y, lam, args.tol, cw, args.cache, None)
                        hgap = h.duality_gap_
                    lr, tl, warned = fit(dpcore.KernelLogisticRegression, X, y, lam, args.tol, cw, args.cache,
                                         args.logistic_max_iter)
                    row = (f"{name:8s} {X.shape[0]:6d} {C:6g} {'10' if cw else '-':>5s} | {th:8.2f} {hgap:8.1e} | "
                           f"{tl:10.2f} {lr.duality_gap_:8.1e} {lr.n_iter_:9d} {str(not warned):>5s} | "
                           f"{tl / th:9.2f}")
                    rec = {"data": name, "n": int(X.shape[0]), "C": C, "cw": 10 if cw else None, "hinge_s": th,
                           "hinge_gap": hgap, "logistic_s": tl, "logistic_gap": float(lr.duality_gap_),
                           "iters": int(lr.n_iter_), "converged": not warned}
                    if args.before:
                        b = before.get((name, rec["n"], C, rec["cw"]))
                        row += (f" | {b['logistic_s']:9.2f} {b['iters']:6d} {b['logistic_s'] / b['hinge_s']:9.2f}"
                                if b else f" | {'-':>9s} {'-':>6s} {'-':>9s}")
                    if args.sklearn:
                        rec["sklearn_s"] = sklearn_time(X, y, C, cw)
                        row += f" | {rec['sklearn_s']:9.2f}"
                    rows.append(rec)
                    print(row, flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"dpcore": dpcore.__version__, "tol": args.tol, "cache_mb": args.cache, "rows": rows}, fh,
                      indent=1)


if __name__ == "__main__":
    main()

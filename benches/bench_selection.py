"""Benchmark: private selection over many kernel candidates (issue 26, item 2).

Not a test. On the first ``n`` rows of UCI Adult (``dpcore.datasets.load_adult``; public points ``Z`` = the first
``--n-public`` test rows), times side by side in one process:

* **one fit** of ``KernelLogisticRegression`` (rbf, ``gamma = 1``, ``tol="auto"``) at the largest ``C`` of the grid;
* **the selection before**: ``PrivateGridSearch`` over ``C = auto·f`` for ``--candidates`` factors ``f`` (3^-2 … 3^2),
  every candidate fitted alone and every TDDL computing its own ``K(Z, Z)`` factor (the old code path,
  ``PrivateGridSearch._path_fits = False``);
* **the selection after**: the same selection with the regularisation path (one Gram matrix, one preconditioner
  factor, one certificate pass for all candidates; ``dpcore.kernel_learning.svm.fit_logistic_path``) and the
  shared GP factor of ``Z``.

It prints each time, the ratios to the one fit, and checks that both selections picked the same candidate with the
same noisy score (same seed). Times on a shared machine move with its load (``os.getloadavg`` is printed): compare
the ratios of one run.

Usage::

    python benches/bench_selection.py --quick        # CI size: n = 2,000, 200 public points
    python benches/bench_selection.py                # full size: n = 20,000, 2,000 public points
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

import dpcore
from dpcore.datasets import load_adult
from dpcore.kernel_learning.gp import auto_C_for_mu, feature_radius_sq
from dpcore.kernel_learning.selection import selection_mu


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="CI size: n = 2000, 200 public points")
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--n-public", type=int, default=2_000)
    p.add_argument("--candidates", type=int, default=10)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.quick:
        args.n, args.n_public = 2_000, 200
    tr, te = load_adult("train"), load_adult("test")
    X, y = np.ascontiguousarray(tr.X[: args.n]), tr.y[: args.n]
    Z = np.ascontiguousarray(te.X[: args.n_public])
    n, m = X.shape[0], args.candidates
    # C = auto at this selection's per-run release μ_r (score_share 0.05, prior 5 % of ε: the defaults)
    mu = selection_mu(args.epsilon * 0.95, 1e-6, n_candidates=m, prior_epsilon=args.epsilon * 0.05 * 0.95)
    mu_r = mu * math.sqrt(0.95)
    c_auto = auto_C_for_mu(mu_r, feature_radius_sq(1.0, "rbf", 1.0, 3, 1.0, n_features=X.shape[1],
                                                   intercept_scaling=0.5))
    factors = 3.0 ** np.linspace(-2.0, 2.0, m)
    grid = {"estimator": ["KernelLogisticRegression"], "C": [float(c_auto * f) for f in factors]}
    base = {"kernel": "rbf", "gamma": 1.0, "tol": "auto"}
    print(f"Adult n = {n}, d = {X.shape[1]}, |Z| = {Z.shape[0]}, {m} candidates C = "
          f"{', '.join(f'{c:.3g}' for c in grid['C'])}; load average {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} cores", flush=True)

    t = time.perf_counter()
    one = dpcore.KernelLogisticRegression(C=max(grid["C"]), **base).fit(X, y)
    t_one = time.perf_counter() - t
    print(f"one fit at C = {max(grid['C']):.3g}: {t_one:.2f} s ({one.n_iter_} kernel products, gap "
          f"{one.duality_gap_:.2e} <= tol {one.tol_:.2e})", flush=True)

    res = {}
    for name, path in (("before", False), ("after", True)):
        sel = dpcore.PrivateGridSearch(grid, args.epsilon, 1e-6, Z=Z, data_norm=1.0, base_params=base,
                                       scoring="roc_auc", random_state=args.seed)
        sel._path_fits = path
        t = time.perf_counter()
        sel.fit(X, y)
        res[name] = (time.perf_counter() - t, sel)
        print(f"selection {name:6s}: {res[name][0]:.2f} s = {res[name][0] / t_one:.2f} x one fit "
              f"(selected C = {sel.best_params_['C']:.3g}, noisy score {sel.best_score_:.6g}); load "
              f"{os.getloadavg()[0]:.2f}", flush=True)
    (tb, sb), (ta, sa) = res["before"], res["after"]
    same = sb.best_params_ == sa.best_params_
    print(f"\n| n | one fit | selection before | after | before / one fit | after / one fit | speed-up |")
    print(f"|---|---|---|---|---|---|---|")
    print(f"| {n} | {t_one:.1f} s | {tb:.1f} s | {ta:.1f} s | {tb / t_one:.2f}x | {ta / t_one:.2f}x | "
          f"{tb / ta:.2f}x |")
    print(f"same selected candidate: {same}; noisy scores {sb.best_score_:.9g} / {sa.best_score_:.9g}")


if __name__ == "__main__":
    main()

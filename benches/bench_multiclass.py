"""Benchmark: the certified multinomial kernel logistic regression vs scikit-learn's SVC on Letter-26 (issue 24).

Not a test. For each ``n`` (the public first ``n`` rows of Letter's 16,000-row training split, 26 classes) and each
``C`` fits, in one run on the same machine,

* :class:`dpcore.MulticlassKernelLogisticRegression` (rbf, γ = 8 as ``experiments/multiclass_accuracy.py`` uses for
  Letter-26, the default regularised intercept b = 0.5, a certified duality gap ``<= tol``, Gram matrix cached) —
  one joint K-class problem; and
* :class:`sklearn.svm.SVC` ``(kernel="rbf", gamma=8, C)`` — LIBSVM, one-vs-one (325 binary problems), no
  certificate, its default ``tol=1e-3`` and ``cache_size=2000``;

and prints wall times, the test accuracy on Letter's 4,000 test rows and the time ratio dpcore/SVC side by side.
``C = auto`` is the data-independent C of the private release at ε = 1, δ = 1e-6
(:func:`~dpcore.kernel_learning.multiclass_release.multiclass_auto_lam`; fitted at the public ``tol`` the release uses,
2 × ``multiclass_min_tol``); ``C = 1`` the non-private model's best C of the experiments (``tol = 1e-6``). The two
``C`` mean the same weight of the data term (``C = 1/(λn)``), but the losses differ (multinomial logistic vs
pairwise hinge), so compare times at equal ``C`` and read the accuracy beside them.

Usage::

    python benches/bench_multiclass.py --quick      # n = 4,000 (the CI size)
    python benches/bench_multiclass.py              # n = 4,000 and 16,000 (all rows)

Times on a shared machine move with its load: compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import dpcore
from dpcore.datasets import load_letter
from dpcore.kernel_learning.multiclass_release import multiclass_auto_lam, multiclass_min_tol

GAMMA = 8.0
R_PHI_SQ = 1.25  # rbf R_φ² = 1 plus the intercept b² = 0.25


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="n = 4,000 only")
    p.add_argument("--n", type=int, nargs="+", default=[4000, 16000])
    p.add_argument("--C", nargs="+", default=["auto", "1"], help="'auto' or numbers")
    p.add_argument("--cache-mb", type=float, default=2000.0)
    p.add_argument("--json", default=None, help="write the rows to this file")
    args = p.parse_args(argv)
    sizes = [4000] if args.quick else args.n
    from sklearn.svm import SVC

    tr, te = load_letter("train", binary=False), load_letter("test", binary=False)
    classes = list(tr.classes)
    rows = []
    print(f"{'n':>6} {'C':>8} | {'dpcore s':>9} {'acc':>6} {'gap':>8} {'Newton':>6} {'prod':>5} | {'SVC s':>8} {'acc':>6} "
          f"{'n_SV':>6} | {'dpcore/SVC':>10}", flush=True)
    for n in sizes:
        X, y = tr.X[:n], tr.y[:n]
        for c_arg in args.C:
            if c_arg == "auto":
                lam = multiclass_auto_lam(n, 1.0, 1e-6, data_norm=1.0)
                tol = 2.0 * multiclass_min_tol(lam, len(classes), R_PHI_SQ * (1.0 + 1e-6))
            else:
                lam, tol = 1.0 / (n * float(c_arg)), 1e-6
            C = 1.0 / (n * lam)
            t0 = time.perf_counter()
            m = dpcore.MulticlassKernelLogisticRegression(lam=lam, gamma=GAMMA, classes=classes, tol=tol,
                                                          cache_size=args.cache_mb).fit(X, y)
            t_dp = time.perf_counter() - t0
            acc_dp = float(np.mean(m.predict(te.X) == te.y))
            t0 = time.perf_counter()
            svc = SVC(kernel="rbf", gamma=GAMMA, C=C, cache_size=args.cache_mb).fit(X, y)
            t_svc = time.perf_counter() - t0
            acc_svc = float(np.mean(svc.predict(te.X) == te.y))
            row = dict(n=n, C=C, C_arg=c_arg, tol=tol, dpcore_seconds=t_dp, dpcore_accuracy=acc_dp,
                       dpcore_gap=m.duality_gap_, dpcore_newton=m.n_iter_, dpcore_products=m.n_kernel_products_,
                       svc_seconds=t_svc, svc_accuracy=acc_svc, svc_support=int(svc.support_.shape[0]),
                       ratio=t_dp / t_svc)
            rows.append(row)
            print(f"{n:>6} {c_arg if c_arg != 'auto' else f'auto={C:.3g}':>8} | {t_dp:>9.1f} {acc_dp:>6.3f} "
                  f"{m.duality_gap_:>8.1e} {m.n_iter_:>6} {m.n_kernel_products_:>5} | {t_svc:>8.1f} {acc_svc:>6.3f} {row['svc_support']:>6} | "
                  f"{row['ratio']:>10.2f}", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=2)
    return rows


if __name__ == "__main__":
    main()

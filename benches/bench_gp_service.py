"""Benchmark: GPService against the floor of exact GP sampling, and a query arriving alone.

The floor of answering a batch of m new points exactly is (a) the model's predictions on the batch
(dpcore's fused kernel engine, ``kernel_predict`` against the n support points) plus (b) LAPACK's
Cholesky factorisation of the batch's m × m kernel matrix (scipy). The script prints both, the
service's time for the same first batch and the ratio (target ≤ 1.3), then the cost of single
queries arriving one at a time after t answered points (one O(t²) triangular solve each). Ratios
are from this run only. This is a benchmark, not a test: nothing here asserts a time. Usage::

    python benches/bench_gp_service.py                     # n = 20,000 support points, m = 10,000
    python benches/bench_gp_service.py --n 5000 --m 2000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import linalg

import dpcore


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--m", type=int, default=10_000)
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--singles", type=int, default=200)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.n, args.d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None] * 1.0001
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=args.n) > 0, 1, -1)
    t = time.perf_counter()
    svm = dpcore.KernelSVM(lam=1.0 / (args.n * 0.01), kernel="rbf", gamma=1.0, tol=1e-8).fit(X, y)
    print(f"KernelSVM fit n={args.n}: {time.perf_counter() - t:.1f} s, {np.count_nonzero(svm.mu_)} support points")
    Q = rng.normal(size=(args.m, args.d))
    Q /= np.maximum(1.0, np.linalg.norm(Q, axis=1))[:, None] * 1.0001
    Xs, mu = svm.X_fit_[svm.mu_ != 0], svm.mu_[svm.mu_ != 0]

    t = time.perf_counter()
    dpcore.kernel_predict(Q, Xs, mu, kernel="rbf", gamma=1.0)
    t_pred = time.perf_counter() - t
    t = time.perf_counter()
    K = dpcore.kernel_matrix(Q, kernel="rbf", gamma=1.0)
    K[np.diag_indices(args.m)] += 1e-10
    linalg.cholesky(K, lower=True, check_finite=False)
    t_chol = time.perf_counter() - t
    del K
    service = dpcore.GPService(svm, 1.0, 1e-6, data_norm=1.0, max_exact_queries=args.m + args.singles, random_state=0)
    t = time.perf_counter()
    service.decision_function(Q)
    t_service = time.perf_counter() - t
    floor = t_pred + t_chol
    print(f"batch of m={args.m} new points: kernel_predict {t_pred:.2f} s + kernel matrix & Cholesky {t_chol:.2f} s "
          f"= floor {floor:.2f} s; GPService.predict {t_service:.2f} s; ratio {t_service / floor:.2f}")
    singles = rng.normal(size=(args.singles, args.d))
    singles /= np.maximum(1.0, np.linalg.norm(singles, axis=1))[:, None] * 1.0001
    t = time.perf_counter()
    for i in range(args.singles):
        service.decision_function(singles[i:i + 1])
    t_single = (time.perf_counter() - t) / args.singles
    t = time.perf_counter()
    dpcore.kernel_predict(singles[:1], Xs, mu, kernel="rbf", gamma=1.0)
    t_one_pred = time.perf_counter() - t
    print(f"single new query after t={args.m} answered points: {1e3 * t_single:.1f} ms each "
          f"(its kernel prediction alone: {1e3 * t_one_pred:.2f} ms; the rest is the O(t²) solve and bookkeeping)")
    t = time.perf_counter()
    service.decision_function(Q[:100])
    print(f"100 repeated queries: {1e3 * (time.perf_counter() - t):.2f} ms")


if __name__ == "__main__":
    main()

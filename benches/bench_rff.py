"""Benchmark: dpcore.kernels.random_features.RandomFourierFeatures.transform vs scikit-learn's RBFSampler.transform,
and one PrivateSVM fit at the size the accuracy experiments use.

Both transforms compute ``cos``-type features of ``X @ W`` (sklearn: ``sqrt(2/D) cos(X W + b)``
with D outputs; dpcore: ``(D/2)^{-1/2} [cos X W, sin X W]``, D outputs from D/2 frequencies). Both
are run with ``n_components = D`` (same output width D; dpcore's GEMM is ``n × d × D/2`` vs
``n × d × D`` — half, but one ``sin_cos`` per pair of outputs instead of one ``cos`` per output) and
dpcore also with ``n_components = 2D`` (same number of frequencies). Thread counts are matched: BLAS via threadpoolctl, dpcore via
``RAYON_NUM_THREADS`` (set before import). Best of ``--repeats``; ratios are from this run only.

This is a benchmark, not a test: nothing here asserts a time. Usage::

    python benches/bench_rff.py                       # n = 20,000, d = 100, D = 1000, 2 threads
    python benches/bench_rff.py --n 5000 --threads 1
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def _best(f, repeats):
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--D", type=int, default=1000, help="output width (sklearn n_components)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--svm-n", type=int, default=30_000, help="rows of the PrivateSVM fit (0: skip)")
    ap.add_argument("--svm-components", type=int, default=500)
    args = ap.parse_args()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
        os.environ[var] = str(args.threads)

    import numpy as np
    from sklearn.kernel_approximation import RBFSampler
    from threadpoolctl import threadpool_limits

    from dpcore.private_svm.estimator import PrivateSVM
    from dpcore.kernels.random_features import RandomFourierFeatures

    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.n, args.d)) / np.sqrt(args.d)
    print(f"n = {args.n}, d = {args.d}, output width D = {args.D}, threads = {args.threads}, "
          f"best of {args.repeats}", file=sys.stderr)
    with threadpool_limits(args.threads):
        sk = RBFSampler(gamma=0.5, n_components=args.D, random_state=0).fit(X)
        t_sk = _best(lambda: sk.transform(X), args.repeats)
        half = RandomFourierFeatures(n_components=args.D, gamma=0.5, random_state=0).fit(X)
        t_half = _best(lambda: half.transform(X), args.repeats)
        full = RandomFourierFeatures(n_components=2 * args.D, gamma=0.5, random_state=0).fit(X)
        t_full = _best(lambda: full.transform(X), args.repeats)
        print(f"{'implementation':<44}{'time (s)':>10}{'sklearn/dpcore':>16}")
        print(f"{'sklearn RBFSampler (D cos outputs)':<44}{t_sk:>10.4f}{1.0:>16.2f}")
        print(f"{'dpcore RFF, D/2 frequencies (D outputs)':<44}{t_half:>10.4f}{t_sk / t_half:>16.2f}")
        print(f"{'dpcore RFF, D frequencies (2D outputs)':<44}{t_full:>10.4f}{t_sk / t_full:>16.2f}")
        if args.svm_n:
            Xs = rng.normal(size=(args.svm_n, args.d)) / np.sqrt(args.d)
            ys = np.where(Xs[:, 0] + 0.3 * rng.normal(size=args.svm_n) > 0, 1, -1)
            t = time.perf_counter()
            clf = PrivateSVM(C=1000.0 / args.svm_n, epsilon=1.0, n_components=args.svm_components, gamma=0.5,
                             random_state=0).fit(Xs, ys)
            t_svm = time.perf_counter() - t
            print(f"PrivateSVM fit n={args.svm_n} d={args.d} n_components={args.svm_components} C=1000/n: "
                  f"{t_svm:.2f} s")


if __name__ == "__main__":
    main()

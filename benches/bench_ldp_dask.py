"""Local DP at population scale on Dask: simulated users end to end on a LocalCluster (issue 16).

For n = 1e4 … --max-n users (one point per decade, or --per-decade), for Algorithm 2 (ℓ1 mean
estimation) and Algorithm 3 (sparse linear regression):

1. the users' raw data are generated partition by partition (synthetic, public generator);
2. ``ldp.simulate(..., chunks=...)`` releases every user's report in its partition, with a ChaCha
   stream derived from (seed, partition);
3. the server estimator fits from the Dask reports by map-reduce of its exact sufficient statistics
   (the reports are never gathered: each worker sends its block's sums).

Printed: the protocol parameters, wall time of 2–3 (one graph), peak RSS per worker (psutil, sampled
every 0.2 s in the workers), the estimation error, and the slope of log(error) vs log(n) fitted by least
squares (the paper predicts error ∝ n^(-1/2) at fixed ε, i.e. slope −0.5).

Not a test. Run:  PYTHONPATH=python python benches/bench_ldp_dask.py [--max-n 1e7] [--workers 2]
"""

from __future__ import annotations

import argparse
import math
import threading
import time
import warnings

import numpy as np


def _rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


class PeakMemory:
    """Sample every worker's RSS (psutil, run in the worker) in a background thread; keep the maxima."""

    def __init__(self, client, every: float = 0.2) -> None:
        self.client, self.every = client, every
        self.peak: dict = {}
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                for w, r in self.client.run(_rss).items():
                    self.peak[w] = max(self.peak.get(w, 0), r)
            except Exception:  # noqa: BLE001 - a worker busy or restarting: skip the sample
                pass
            self._stop.wait(self.every)

    def __enter__(self) -> "PeakMemory":
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._t.join()
        for w, r in self.client.run(_rss).items():
            self.peak[w] = max(self.peak.get(w, 0), r)


def _mean_users(n: int, d: int, chunk: int, seed: int):
    """Each user holds one coordinate k ~ π (support: the first 5), scaled to 0.5: E x = 0.5 π, ||x||_2 = 0.5."""
    import dask.array as da

    pi = np.zeros(d)
    pi[:5] = [0.4, 0.25, 0.15, 0.12, 0.08]

    def block(b, block_info=None):
        i = block_info[None]["chunk-location"][0]
        rng = np.random.default_rng([seed, i])
        k = rng.choice(d, size=b.shape[0], p=pi)
        out = np.zeros((b.shape[0], d))
        out[np.arange(b.shape[0]), k] = 0.5
        return out

    X = da.zeros((n, d), chunks=(chunk, d)).map_blocks(block, dtype=np.float64)
    return X, 0.5 * pi


def _regression_users(n: int, d: int, chunk: int, seed: int):
    """x uniform on the sphere of radius 0.5 (so ||Φᵀx|| ≈ 0.5 is rarely clipped at R = 1),
    y = <w*, x> + N(0, 0.05²) clipped to [−1, 1], ||w*||_1 = 1."""
    import dask.array as da

    w = np.zeros(d)
    w[:3] = [0.5, -0.3, 0.2]

    def block(b, block_info=None):
        i = block_info[None]["chunk-location"][0]
        rng = np.random.default_rng([seed, i])
        x = rng.standard_normal((b.shape[0], d))
        x *= 0.5 / np.linalg.norm(x, axis=1, keepdims=True)
        y = np.clip(x @ w + 0.05 * rng.standard_normal(b.shape[0]), -1.0, 1.0)
        return np.column_stack([x, y])

    XY = da.zeros((n, d + 1), chunks=(chunk, d + 1)).map_blocks(block, dtype=np.float64)
    return XY[:, :d], XY[:, d], w


def _regression_limit(proto, w_true: np.ndarray) -> np.ndarray:
    """The n → ∞ limit of Algorithm 3's estimate at a FIXED projection dim m: the debiased objective tends to
    ½ wᵀ AᵀA Σ AᵀA w − wᵀ AᵀA Σ w* (A = Φᵀ, Σ = E xxᵀ = 0.25/d I for x on the sphere of radius 0.5; the
    clip at R = 1 is ignored: ||Ax|| ≈ 0.5). AᵀA ≠ I (JL distortion ~ sqrt(d/m)) biases it away from w*; the
    paper's m grows with n, which removes that bias. Error vs this limit isolates the 1/sqrt(n) part."""
    from dpcore.ldp._solvers import l1_ball_qp

    A = proto.projection
    d = A.shape[1]
    S = 0.25 / d * np.eye(d)
    AtA = A.T @ A
    w, _, _ = l1_ball_qp(AtA @ S @ AtA, AtA @ S @ w_true, proto.l1_radius, tol=1e-13, max_iter=200000)
    return w


def run(args) -> None:
    from dask.distributed import Client, LocalCluster

    from dpcore import ldp
    from dpcore.ldp._stats import LEAF_ROWS

    ns = []
    n = args.min_n
    while n <= args.max_n * (1 + 1e-9):
        ns.append(int(round(n)))
        n *= 10 ** (1.0 / args.per_decade)
    chunk = args.chunk
    if chunk % LEAF_ROWS:
        raise SystemExit(f"--chunk must be a multiple of LEAF_ROWS={LEAF_ROWS}")
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit=args.memory_limit) as cluster, Client(cluster) as client:
        print(f"LocalCluster: {args.workers} worker processes x 1 thread, partitions of {chunk} users "
              f"(multiple of LEAF_ROWS={LEAF_ROWS}); baseline worker RSS "
              + ", ".join(f"{r / 2**20:.0f} MiB" for r in client.run(_rss).values()))
        results = {}
        for task in args.tasks:
            print()
            rows = []
            for n in ns:
                c = min(chunk, n)
                if task == "mean":
                    d = args.mean_dim
                    proto = ldp.MeanEstimationProtocol(dim=d, n_users=n, epsilon=args.mean_epsilon, delta=args.delta,
                                                       projection_dim=args.mean_p, n_groups=args.mean_groups)
                    if n == ns[0]:
                        print(f"[mean] Algorithm 2: d={d}, epsilon={args.mean_epsilon}, delta={args.delta}, "
                              f"p={proto.p} (projection_dim), m={proto.m} groups, sigma={proto.channel.sigma:.4g}, "
                              f"tau=default (expected-error rule); users hold 0.5·e_k, k ~ pi; truth mu = 0.5·pi, 5-sparse")
                    X, truth = _mean_users(n, d, c, args.seed)
                    t0 = time.perf_counter()
                    with PeakMemory(client) as mem, warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        Y = ldp.simulate(X, None, proto, random_state=args.seed, chunks=c)
                        est = ldp.LDPMeanEstimator(proto).fit(Y)
                    dt = time.perf_counter() - t0
                    err = float(np.linalg.norm(est.mean_ - truth))
                    extra = "zero by radius" if est.zero_by_radius_ else ""
                else:
                    d = args.reg_dim
                    proto = ldp.SparseRegressionProtocol(dim=d, n_users=n, epsilon=args.reg_epsilon, delta=args.delta,
                                                         projection_dim=args.reg_m, l1_radius=1.0)
                    if n == ns[0]:
                        print(f"[regression] Algorithm 3: d={d}, epsilon={args.reg_epsilon}, delta={args.delta}, "
                              f"m={proto.m} (projection_dim), l1_radius=1, sigma_x={proto.x_channel.sigma:.4g}, "
                              f"sigma_y={proto.y_channel.sigma:.4g}; x on the sphere of radius 0.5; truth: w*=(0.5,-0.3,0.2,0,...)")
                    X, y, truth = _regression_users(n, d, c, args.seed)
                    t0 = time.perf_counter()
                    with PeakMemory(client) as mem:
                        Z, v = ldp.simulate(X, y, proto, random_state=args.seed, chunks=c)
                        est = ldp.LDPSparseRegression(proto).fit(Z, v)
                    dt = time.perf_counter() - t0
                    err = float(np.linalg.norm(est.coef_ - truth))
                    limit = _regression_limit(proto, truth)
                    err_lim = float(np.linalg.norm(est.coef_ - limit))
                    extra = f"error vs n=inf limit={err_lim:.4g}  gap {est.gap_:.1e}"
                peak = max(mem.peak.values()) / 2**20
                rows.append((n, dt, peak, err, err_lim if task == "regression" else err))
                print(f"  n={n:>10,d}  partitions={math.ceil(n / c):>4d}  time={dt:8.2f} s  "
                      f"peak RSS/worker={peak:7.0f} MiB  error={err:.4g}  {extra}", flush=True)
                if dt > args.time_limit:
                    print(f"  (stopping {task}: {dt:.0f} s > --time-limit {args.time_limit:.0f} s)")
                    break
            results[task] = rows
            if len(rows) >= 2:
                ln = np.log([r[0] for r in rows])
                for col, what in ((3, "error vs truth"), (4, "error vs the n=inf limit of the estimator")):
                    if task == "mean" and col == 4:
                        continue
                    slope, icpt = np.polyfit(ln, np.log([r[col] for r in rows]), 1)
                    print(f"  fit ({what}): log(error) = {slope:.3f} log(n) + {icpt:.2f}   (theory: slope -0.5)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--min-n", type=float, default=1e4)
    ap.add_argument("--max-n", type=float, default=1e7)
    ap.add_argument("--per-decade", type=int, default=1, help="points per decade of n")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="6GiB", help="per worker")
    ap.add_argument("--chunk", type=int, default=2**18, help="users per partition (multiple of LEAF_ROWS)")
    ap.add_argument("--mean-epsilon", type=float, default=4.0)
    ap.add_argument("--reg-epsilon", type=float, default=16.0)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--mean-dim", type=int, default=16)
    ap.add_argument("--mean-p", type=int, default=20)
    ap.add_argument("--mean-groups", type=int, default=5, help="median-of-means groups m")
    ap.add_argument("--reg-dim", type=int, default=5)
    ap.add_argument("--reg-m", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=600.0, help="stop a task after a point slower than this")
    ap.add_argument("--tasks", nargs="+", default=["mean", "regression"], choices=["mean", "regression"])
    run(ap.parse_args())


if __name__ == "__main__":
    main()

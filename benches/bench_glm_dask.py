"""Private kernel learning beyond one machine: ObjectivePerturbation on random Fourier features over Dask (issue 16).

Synthetic data with a real non-linear structure (generated block by block on the workers, never on the
client): ``z ~ N(0, I_5)``, ``x = z / 4`` clipped to the unit ball (rarely active), label
``y = sign(sin(2 z₀) + ½ z₁² − ½ + ½ z₂ z₃ + 0.3 ξ)``, ``ξ ~ N(0, 1)``. A linear model reaches about 0.6
on it, the Bayes rule about 0.9.

For each n and number of random features d̂ (``--components``):

1. ``RandomFourierFeatures(n_components=d̂, gamma=…)`` (public weights, drawn without the data) maps the
   Dask array ``X`` to ``Φ`` lazily; with ``--persist-gb`` large enough ``Φ`` is persisted on the workers
   (else every solver pass recomputes it from ``X`` in its block);
2. ``ObjectivePerturbation(ε=1, δ, lam=λ(n), data_norm=1)`` fits on ``(Φ, y)`` by map-reduce (each pass
   sends θ to the workers and brings back one d̂-vector per block);
3. the **non-private reference** is the same regularised objective minimised by the same certified
   solver without noise (same λ, same features), and a private **linear** model (ObjectivePerturbation
   on ``x``) shows what the kernel buys.

Printed per row: test accuracy (10⁵ fresh points) of the private, non-private and private linear models,
wall time of the private fit (solver only; feature persist time separately), passes over the data, and peak
RSS per worker; then the passes and time of the non-private solve, and with ``--baseline`` the same solve by the
solver before issue 26 (L-BFGS-B + Newton–CG, every gradient a pass) beside it, with the ratio of times. ``--speedup`` repeats the largest private fit with 1 and with 2 workers.

Public choices, fixed before looking at any data (no tuning on the private data): ``λ(n) = 10/n^0.75`` (between
the 1/n of an unregularised fit and the 1/√n of the risk bound: objective perturbation's noise term scales as
d̂/(nλε)), ``gamma = 8`` (``k(x, x') = exp(−8 ||x − x'||²)`` = ``exp(−||z − z'||²/2)``, unit bandwidth in z),
δ = 1/n^1.1, ``tol = 1e-10`` (the default).

Not a test. Run:  PYTHONPATH=python python benches/bench_glm_dask.py [--n 1e4 1e5 1e6] [--components 500]
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_ldp_dask import PeakMemory, _rss  # noqa: E402  (sibling script: worker RSS sampling)

D_RAW = 5
GAMMA = 8.0


def _points(n: int, rng: np.random.Generator):
    z = rng.standard_normal((n, D_RAW))
    x = z / 4.0
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = np.where(norms > 1.0, x / norms, x)
    f = np.sin(2 * z[:, 0]) + 0.5 * z[:, 1] ** 2 - 0.5 + 0.5 * z[:, 2] * z[:, 3] + 0.3 * rng.standard_normal(n)
    return x, np.where(f > 0, 1, -1)


def _block(b, seed, block_info=None):
    i = block_info[None]["chunk-location"][0]
    x, y = _points(b.shape[0], np.random.default_rng([seed, i]))
    return np.column_stack([x, y])


def dataset(n: int, chunk: int, seed: int):
    import dask.array as da

    XY = da.zeros((n, D_RAW + 1), chunks=(chunk, D_RAW + 1)).map_blocks(_block, seed, dtype=np.float64)
    return XY[:, :D_RAW], XY[:, D_RAW]


def lam_of(n: int) -> float:
    return 10.0 / n**0.75


def tol_of(n: int) -> float:
    """Solver tolerance: dpcore's default 1e-10 at every n. (Certifiable because the Dask solver's blocked pairwise
    sums keep the public float floor nearly independent of n: 1.5e-12 at 10⁷ instead of 1.6e-9 with one BLAS sum.)"""
    return 1e-10


def nonprivate(Phi, y, lam: float, tol: float, baseline: bool = False):
    """argmin (1/n) Σ logistic + (λ/2)||θ||² (intercept column 1, as the private fit) by the same certified solver.

    ``baseline``: the solver before issue 26 (L-BFGS-B, then Newton–CG with one pass per Hessian-vector product and
    per line-search trial; the exact-Newton phase switched off). Returns ``(θ, passes incl. the certificate, s)``."""
    from dpcore.glm import _solver
    from dpcore.glm._dask import BlockSpec, DaskGLMObjective, dask_design
    from dpcore.glm._losses import make_loss

    loss = make_loss("logistic")
    design = dask_design(Phi, y, BlockSpec(loss=loss, classes=(-1, 1), data_norm=1.0, clip=True, scaling=1.0))
    obj = DaskGLMObjective(design, loss, lam)
    if baseline:  # as before issue 26: every gradient is a pass (no reuse of the last pass's gradient)
        obj.grad = lambda theta, z=None: obj.fun_grad(theta)[1]
    saved = _solver.NEWTON_MAX_DIM
    _solver.NEWTON_MAX_DIM = 0 if baseline else saved
    try:
        t0 = time.perf_counter()
        theta, _ = _solver.solve_smooth(obj, tol=tol, max_iter=1000, radius=2.0)
        _solver.certify_smooth(obj, theta, radius=2.0)
        return theta, obj.passes, time.perf_counter() - t0
    finally:
        _solver.NEWTON_MAX_DIM = saved


class PassCounter(logging.Handler):
    """Reads the solver's pass count from dpcore's INFO log line (the count is not stored on the model: it
    depends on the data)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.last = -1

    def emit(self, record: logging.LogRecord) -> None:
        m = re.search(r"\((\d+) passes over the Dask blocks\)", record.getMessage())
        if m:
            self.last = int(m.group(1))


def run(args) -> None:
    from dask.distributed import Client, LocalCluster, wait

    from dpcore import ObjectivePerturbation, RandomFourierFeatures

    warnings.filterwarnings("ignore", message="Port .* is already in use")
    test_x, test_y = _points(100_000, np.random.default_rng(12345))
    passes = PassCounter()
    logging.getLogger("dpcore.glm.perturbation").addHandler(passes)
    logging.getLogger("dpcore.glm.perturbation").setLevel(logging.INFO)
    workers = args.workers
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit=None) as cluster, Client(cluster) as client:
        print(f"LocalCluster: {workers} worker processes x 1 thread, blocks of {args.chunk} rows; idle RSS "
              + ", ".join(f"{r / 2**20:.0f} MiB" for r in client.run(_rss).values()), flush=True)
        print(f"{'n':>9} {'d̂':>5} {'persist':>7} | {'acc DP':>6} {'acc non-DP':>10} {'acc DP lin':>10} | "
              f"{'fit s':>7} {'passes':>6} {'feat s':>6} | peak RSS/worker MiB | non-DP solve: Newton passes, s | "
              "baseline (L-BFGS-B + Newton-CG) passes, s, ratio of times", flush=True)
        for n in args.n:
            n = int(n)
            X, y = dataset(n, args.chunk, seed=n)
            X, y = X.persist(), y.persist()
            wait([X, y])
            lam, delta, tol = lam_of(n), 1.0 / n**1.1, tol_of(n)
            lin = ObjectivePerturbation(args.epsilon, delta, lam=lam, tol=tol, data_norm=1.0,
                                        random_state=1).fit(X, y)
            acc_lin = lin.score(test_x, test_y)
            for k in args.components:
                rff = RandomFourierFeatures(n_components=k, gamma=GAMMA, random_state=0).fit(test_x[:1])
                Phi = rff.transform(X)
                persist = n * k * 8 / 2**30 <= args.persist_gb
                t0 = time.perf_counter()
                if persist:
                    Phi = Phi.persist()
                    wait(Phi)
                t_feat = time.perf_counter() - t0
                test_phi = rff.transform(test_x)
                with PeakMemory(client) as mem:
                    t0 = time.perf_counter()
                    est = ObjectivePerturbation(args.epsilon, delta, lam=lam, tol=tol, data_norm=1.0,
                                                random_state=2)
                    est.fit(Phi, y)
                    t_fit = time.perf_counter() - t0
                acc = est.score(test_phi, test_y)
                theta, np_passes, np_t = nonprivate(Phi, y, lam, tol)
                acc_np = float(np.mean(np.where(test_phi @ theta[:-1] + theta[-1] > 0, 1, -1) == test_y))
                rss = ", ".join(f"{v / 2**20:.0f}" for v in mem.peak.values())
                row = (f"{n:>9} {k:>5} {str(persist):>7} | {acc:6.4f} {acc_np:10.4f} {acc_lin:10.4f} | "
                       f"{t_fit:7.1f} {passes.last:>6} {t_feat:6.1f} | {rss} | {np_passes} passes {np_t:.1f} s")
                if args.baseline:
                    _, b_passes, b_t = nonprivate(Phi, y, lam, tol, baseline=True)
                    row += f" | {b_passes} passes {b_t:.1f} s, Newton/baseline {np_t / b_t:.2f}"
                print(row, flush=True)
                del Phi
    if args.speedup:
        n, k = int(max(args.n)), int(max(args.components))
        times = {}
        for workers in (1, 2):
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                              memory_limit=None) as cluster, Client(cluster):
                X, y = dataset(n, args.chunk, seed=n)
                rff = RandomFourierFeatures(n_components=k, gamma=GAMMA, random_state=0).fit(test_x[:1])
                Phi = rff.transform(X)
                if n * k * 8 / 2**30 <= args.persist_gb:
                    Phi = Phi.persist()
                y = y.persist()
                wait([Phi, y])
                t0 = time.perf_counter()
                ObjectivePerturbation(args.epsilon, 1.0 / n**1.1, lam=lam_of(n), tol=tol_of(n), data_norm=1.0,
                                      random_state=2).fit(Phi, y)
                times[workers] = time.perf_counter() - t0
        print(f"speed-up at n={n}, d̂={k}: 1 worker {times[1]:.1f} s, 2 workers {times[2]:.1f} s, "
              f"ratio {times[1] / times[2]:.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=float, nargs="*", default=[1e4, 1e5, 1e6])
    ap.add_argument("--components", type=int, nargs="*", default=[500])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=50_000, help="rows per block")
    ap.add_argument("--persist-gb", type=float, default=6.0,
                    help="persist Φ on the workers when n·d̂·8 bytes is at most this (else recomputed per pass)")
    ap.add_argument("--speedup", action="store_true", help="also time the largest fit with 1 and 2 workers")
    ap.add_argument("--baseline", action="store_true",
                    help="also solve the non-private objective with the solver before issue 26 (passes and time)")
    run(ap.parse_args())


if __name__ == "__main__":
    main()

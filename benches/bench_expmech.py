"""Benchmark: dpcore's streaming exponential mechanism vs a vectorised numpy Gumbel-max.

One exponential-mechanism sample over the nu-net of the unit ball, ``P(z) ∝ exp(kappa |score(z)|)``,
for the linear score ``<z, u>`` (d = 2, 4, 6) and an RBF kernel sum over 100 support points
(d = 3). Both sides score and Gumbel-test every net point:

* dpcore: ``_core.em_sample_linear`` / ``_core.em_sample_kernel`` (Rust, rayon threads, ChaCha20
  streams, floating-point-safe Gumbel keys with the exact skip test); every call enumerates the
  net itself.
* numpy: the same net (identical points in the same canonical order — checked), enumerated in
  chunks of at most ``--chunk`` points so memory stays bounded: rows of the first d-1 integer
  coordinates are precomputed once (NOT timed, the most favourable set-up for numpy), then per
  chunk the points are built with ``np.repeat``, projected onto the ball, scored (``P @ u`` or
  ``exp(-gamma ||z - p||^2) @ coef``), perturbed with ``Generator.gumbel`` and reduced with
  ``argmax``. (This baseline is only a speed reference: its naive float Gumbel is not the
  floating-point-safe sampler.)

Reported: best-of-``--repeats`` wall time per sample, candidates (net points) per second and the
speed ratio, measured in one run. dpcore uses rayon's default thread count (``RAYON_NUM_THREADS``
to pin it); numpy's ``gumbel``/``exp`` are single-threaded, its matrix products may use BLAS threads
(``--threads`` limits them with threadpoolctl). This is a benchmark, not a test: nothing is asserted
about time.

Usage::

    python benches/bench_expmech.py               # all cases
    python benches/bench_expmech.py --repeats 5 --cases linear
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

from dpcore import _core

RBF_GAMMA = 1.0


def _net_rows(d, nu, radius):
    """Rows of the net (first d-1 integer coordinates, lexicographic) with their last-coordinate
    half-ranges, from the same integer threshold T as dpcore (``net_info``)."""
    info = _core.net_info(d, nu, radius)
    t, half = info["threshold"], info["half"]
    prefixes = np.zeros((1, 0), dtype=np.int64)
    sums = np.zeros(1, dtype=np.int64)
    for _ in range(d - 1):
        lim = np.floor(np.sqrt(t - sums)).astype(np.int64)
        # exact integer square roots
        lim -= (lim * lim > t - sums)
        lim += ((lim + 1) * (lim + 1) <= t - sums)
        counts = 2 * lim + 1
        rep = np.repeat(np.arange(len(sums)), counts)
        starts = np.cumsum(counts) - counts
        c = np.arange(counts.sum()) - np.repeat(starts, counts) - np.repeat(lim, counts)
        prefixes = np.concatenate([prefixes[rep], c[:, None]], axis=1)
        sums = sums[rep] + c * c
    last = np.floor(np.sqrt(t - sums)).astype(np.int64)
    last -= (last * last > t - sums)
    last += ((last + 1) * (last + 1) <= t - sums)
    assert np.abs(prefixes).max(initial=0) <= half
    return info, prefixes, sums, last


class NumpyEM:
    """Chunked, vectorised Gumbel-max exponential mechanism over the same net."""

    def __init__(self, d, nu, radius, chunk):
        self.d, self.nu, self.radius, self.chunk = d, nu, radius, chunk
        self.info, self.prefixes, self.sums, self.last = _net_rows(d, nu, radius)
        self.h = self.info["h"]
        self.t_in = math.floor((radius / self.h) ** 2 * (1 - 2.0**-40))
        self.counts = 2 * self.last + 1
        self.n_points = int(self.counts.sum())
        # row blocks with at most `chunk` points each (a row longer than `chunk` is its own block)
        bounds, acc, start = [], 0, 0
        for i, c in enumerate(self.counts):
            if acc + c > chunk and i > start:
                bounds.append((start, i))
                start, acc = i, 0
            acc += c
        bounds.append((start, len(self.counts)))
        self.blocks = bounds

    def points(self, r0, r1):
        counts = self.counts[r0:r1]
        rep = np.repeat(np.arange(r0, r1), counts)
        starts = np.cumsum(counts) - counts
        c = np.arange(counts.sum()) - np.repeat(starts, counts) - np.repeat(self.last[r0:r1], counts)
        coords = np.concatenate([self.prefixes[rep], c[:, None]], axis=1)
        sq = self.sums[rep] + c * c
        g = coords * self.h
        proj = self.radius / (self.h * np.sqrt(np.maximum(sq, 1).astype(float))) * (1 - 2.0**-48)
        f = np.where(sq <= self.t_in, 1.0, np.minimum(1.0, proj))
        return coords, g * f[:, None]

    def sample(self, score_fn, kappa, rng):
        best_key, best = -np.inf, None
        for r0, r1 in self.blocks:
            coords, z = self.points(r0, r1)
            keys = kappa * np.abs(score_fn(z)) + rng.gumbel(size=len(z))
            i = int(np.argmax(keys))
            if keys[i] > best_key:
                best_key, best = keys[i], coords[i]
        return best


def _time(fn, repeats):
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _check_same_net(d, nu):
    em = NumpyEM(d, nu, 1.0, 1 << 30)
    coords, pts = em.points(0, len(em.counts))
    c2, p2 = _core.net_points(d, nu, 1.0, 10**7)
    assert np.array_equal(coords, c2), "numpy net differs from dpcore's"
    assert np.allclose(pts, p2, rtol=1e-12, atol=1e-15)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--chunk", type=int, default=1 << 18, help="numpy points per chunk")
    p.add_argument("--threads", type=int, default=None, help="BLAS threads for numpy (default: unchanged)")
    p.add_argument("--cases", nargs="+", default=["linear", "rbf"], choices=["linear", "rbf"])
    p.add_argument("--seed", type=int, default=0)
    opts = p.parse_args()

    from contextlib import nullcontext

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        threadpool_limits = None
    limit = (threadpool_limits(limits=opts.threads) if (opts.threads and threadpool_limits) else nullcontext())

    # the numpy enumeration reproduces dpcore's net exactly (order and points)
    for d, nu in [(1, 0.01), (2, 0.05), (3, 0.1), (4, 0.2), (6, 0.5)]:
        _check_same_net(d, nu)

    rng_np = np.random.default_rng(opts.seed)
    rng = _core.ChaChaRng(opts.seed)
    cases = []
    if "linear" in opts.cases:
        # nets of ~3-5 million points; kappa * max|score| = 50
        for d, nu in [(2, 7e-4), (4, 0.04), (6, 0.15)]:
            u = rng_np.standard_normal(d)
            u /= np.linalg.norm(u)
            cases.append((f"linear d={d}", d, nu, "linear", {"u": u}, 50.0, 50.0 * 1.001))
    if "rbf" in opts.cases:
        d, nu = 3, 0.03
        pts = rng_np.uniform(-0.5, 0.5, (100, d))
        coef = rng_np.uniform(-0.1, 0.1, 100)
        kappa = 5.0
        cases.append(("rbf d=3 n=100", d, nu, "rbf", {"points": pts, "coef": coef}, kappa,
                      kappa * np.abs(coef).sum() * 1.001))

    threads = os.environ.get("RAYON_NUM_THREADS", str(os.cpu_count()))
    print(f"exponential mechanism over the nu-net of the unit ball: one sample = every net point scored "
          f"and Gumbel-tested; best of {opts.repeats}; dpcore threads = {threads}; numpy chunk = {opts.chunk}")
    header = (f"{'case':<15} {'nu':>7} {'net points':>11} {'dpcore [s]':>11} {'numpy [s]':>10} "
              f"{'dpcore cand/s':>14} {'numpy cand/s':>13} {'speed-up':>9}")
    print(header)
    print("-" * len(header))
    with limit:
        for name, d, nu, kind, sc, kappa, bound in cases:
            em = NumpyEM(d, nu, 1.0, opts.chunk)
            n = _core.net_count(d, nu, 1.0, 10**9)
            assert n == em.n_points
            if kind == "linear":
                u = sc["u"]

                def run_dp():
                    return _core.em_sample_linear(d, nu, 1.0, u, kappa, bound, rng)

                def score(z):
                    return z @ u
            else:
                P, coef = sc["points"], sc["coef"]
                pn = (P * P).sum(1)

                def run_dp():
                    return _core.em_sample_kernel(d, nu, 1.0, P, coef, "rbf", RBF_GAMMA, 3, 0.0, 0.0, kappa, bound, rng)

                def score(z):
                    d2 = (z * z).sum(1)[:, None] + pn[None, :] - 2.0 * (z @ P.T)
                    np.maximum(d2, 0.0, out=d2)
                    return np.exp(-RBF_GAMMA * d2) @ coef

            out = run_dp()
            assert out[3] == n
            t_dp = _time(run_dp, opts.repeats)
            t_np = _time(lambda: em.sample(score, kappa, rng_np), opts.repeats)
            print(f"{name:<15} {nu:>7g} {n:>11,d} {t_dp:>11.4f} {t_np:>10.4f} {n / t_dp / 1e6:>11.1f} M/s "
                  f"{n / t_np / 1e6:>9.1f} M/s {t_np / t_dp:>8.1f}x", flush=True)


if __name__ == "__main__":
    main()

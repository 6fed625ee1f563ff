"""Benchmark: throughput of dpcore's exact Gaussian releases vs each other and a float baseline.

Prints, measured in one run (samples per second, best of ``--repeats``):

* ``gaussian_mechanism(method="analytic")`` — continuous Gaussian with the analytic σ, sampled
  exactly (Karney's algorithm N) and rounded exactly to a grid 2^-40·σ fine;
* ``gaussian_mechanism(method="zcdp")`` — snapped value plus an exact discrete Gaussian
  (Canonne–Kamath–Steinke 2020) with σ ≈ 2^26 grid units;
* ``numpy.random.Generator.normal`` + add — the *unsafe* floating-point baseline (Mironov 2012),
  for scale only;

each on a vector of ``--dim`` coordinates (one release; the Rust core parallelises over chunks of
4096 coordinates) and as ``--reps`` repeated releases of a scalar (the audit path). Also prints σ of
both calibrations for a few (Δ, ε, δ). This is a benchmark, not a test: nothing is asserted. Usage::

    python benches/bench_noise.py                  # dim = 10^6, 2 threads
    python benches/bench_noise.py --threads 1 --dim 200000
"""

from __future__ import annotations

import argparse
import os
import time


def best_rate(fn, n: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return n / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dim", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=1_000_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("RAYON_NUM_THREADS", str(args.threads))

    import numpy as np

    from dpcore.mechanisms import noise
    print(f"{os.environ['RAYON_NUM_THREADS']} rayon threads; dim = {args.dim}, reps = {args.reps}\n")
    print("σ per coordinate (Δ = 1):")
    print(f"{'ε':>6} {'δ':>8} {'analytic σ':>12} {'zcdp σ':>12} {'zcdp/analytic':>14}")
    for eps, delta in [(1.0, 1e-5), (0.1, 1e-6), (1.0, 1e-9), (5.0, 1e-6)]:
        a = noise.gaussian_plan(1.0, eps, delta).sigma
        z = noise.gaussian_plan(1.0, eps, delta, method="zcdp").sigma
        print(f"{eps:>6g} {delta:>8g} {a:>12.6f} {z:>12.6f} {z / a:>14.4f}")

    sens, eps, delta = 1.0, 1.0, 1e-5
    rng = np.random.default_rng(0)
    x = rng.normal(size=args.dim)
    seed = noise.ChaChaRng(1)
    sigma = noise.gaussian_plan(sens, eps, delta).sigma
    gen = np.random.default_rng(1)

    rows = []
    for label, fn, n in [
        ("analytic, vector", lambda: noise.gaussian_mechanism(x, sens, eps, delta, random_state=seed), args.dim),
        ("zcdp, vector", lambda: noise.gaussian_mechanism(x, sens, eps, delta, method="zcdp", random_state=seed), args.dim),
        ("numpy float (unsafe), vector", lambda: x + gen.normal(0.0, sigma, size=args.dim), args.dim),
        ("analytic, repeated scalar",
         lambda: noise.sample_gaussian_mechanism(0.3, sens, eps, delta, args.reps, random_state=seed), args.reps),
        ("zcdp, repeated scalar",
         lambda: noise.sample_gaussian_mechanism(0.3, sens, eps, delta, args.reps, method="zcdp", random_state=seed),
         args.reps),
    ]:
        rows.append((label, best_rate(fn, n, args.repeats)))

    base = rows[0][1]
    print(f"\nthroughput at (Δ, ε, δ) = ({sens:g}, {eps:g}, {delta:g}):")
    print(f"{'release':<32} {'samples/s':>14} {'vs analytic':>12}")
    for label, rate in rows:
        print(f"{label:<32} {rate:>14,.0f} {rate / base:>12.2f}")


if __name__ == "__main__":
    main()

"""Benchmark: dpcore's exact multinomial sampler vs numpy's multinomial and weighted choice.

``m`` i.i.d. draws from a probability vector ``p`` of length ``P`` (default ``P = 10**7``,
``m`` in ``{10**2, 10**6}``), three ways, all timed in the same run on the same ``p``:

* dpcore: :func:`dpcore.mechanisms.multinomial.multinomial_counts` (Rust, rayon threads; exact law
  ``floor(p_j 2**100) / T``, validation of every entry and of the sum included) — and
  :func:`~dpcore.mechanisms.multinomial.multinomial_draws` with ``shuffle=True`` for the draws themselves;
* ``numpy.random.Generator.multinomial(m, p)`` — the count vector (conditional binomials,
  single-threaded, floating point);
* ``numpy.random.Generator.choice(P, size=m, p=p)`` — the draws (cumsum + search,
  single-threaded, floating point).

Reported: the median of ``--repeats`` wall times per call and the ratio numpy / dpcore. dpcore uses
rayon's default thread count (``RAYON_NUM_THREADS`` pins it); numpy's samplers are single-threaded.
This is a benchmark, not a test: nothing is asserted about time.

Usage::

    python benches/bench_multinomial.py
    python benches/bench_multinomial.py --size 1000000 --m 100 10000 1000000 --repeats 7
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from dpcore import _core
from dpcore.mechanisms.multinomial import multinomial_counts, multinomial_draws


def _median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=10**7, help="P, the length of p")
    ap.add_argument("--m", type=int, nargs="+", default=[10**2, 10**6], help="numbers of draws")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    opts = ap.parse_args()

    gen = np.random.default_rng(opts.seed)
    w = gen.random(opts.size)
    p = w / w.sum()
    rng = _core.ChaChaRng(opts.seed)

    # sanity: same total, indices in range
    idx, cnt = multinomial_counts(p, 1000, random_state=rng)
    assert cnt.sum() == 1000 and idx[-1] < opts.size

    threads = os.environ.get("RAYON_NUM_THREADS", str(os.cpu_count()))
    print(f"m i.i.d. draws from p of length P = {opts.size:,}; median of {opts.repeats}; "
          f"dpcore threads = {threads}; numpy {np.__version__} (single-threaded)")
    header = (f"{'m':>9} {'dpcore counts':>14} {'np.multinomial':>15} {'ratio':>7} "
              f"{'dpcore draws':>13} {'np.choice':>10} {'ratio':>7}")
    print(header)
    print("-" * len(header))
    for m in opts.m:
        t_counts = _median_time(lambda: multinomial_counts(p, m, random_state=rng), opts.repeats)
        t_multi = _median_time(lambda: gen.multinomial(m, p), opts.repeats)
        t_draws = _median_time(lambda: multinomial_draws(p, m, shuffle=True, random_state=rng), opts.repeats)
        t_choice = _median_time(lambda: gen.choice(opts.size, size=m, p=p), opts.repeats)
        print(f"{m:>9,} {t_counts * 1e3:>11.1f} ms {t_multi * 1e3:>12.1f} ms {t_multi / t_counts:>6.1f}x "
              f"{t_draws * 1e3:>10.1f} ms {t_choice * 1e3:>7.1f} ms {t_choice / t_draws:>6.1f}x", flush=True)


if __name__ == "__main__":
    main()

"""The in-memory certified GLM solver at 10⁶–10⁷ rows: blocked pairwise sums against one BLAS call (issue 26, item 3).

Synthetic data, generated block by block (``d = 20``, rows uniform in direction with norm ``U(0, 1)^{1/2}`` inside
the unit ball, labels ``y = sign(<w, x> + 0.3 ξ)``), ``ObjectivePerturbation`` (logistic, Gaussian, ε = 1,
δ = n^−1.1, ``λ = 10/n^0.75``, intercept). For each n, side by side in one process:

* **public floor and ``tol="auto"``** (functions of n, d, λ only) with the old bound ``k = n`` (one BLAS call, any
  order) and the blocked bound ``k = blocked_sum_terms(n)`` (blocks of 4,096 rows added pairwise), and whether
  ``tol = 1e-10`` (the old default) is certifiable under each;
* **a fit** with ``tol="auto"`` under each rule — the baseline emulates the old code exactly
  (``GLMObjective._xt = Xᵀs`` in one call, ``k = n``) — printing the resolved ``tol_``, the certified gradient
  norm, the fit's wall time and the public residual bound ρ (the residual release's noise is ∝ ρ);
* **one gradient evaluation** (``Xᵀs``) timed both ways, as a ratio (blocked / one call), best of 3.

Not a test. ``--ci`` runs n = 10⁵ only (seconds); the default is n ∈ {10⁶, 10⁷} (10⁷ × 21 float64 = 1.7 GB, ×2
with the design copy).

Run:  PYTHONPATH=python python benches/bench_glm_scale.py [--ci] [--n 1e6 1e7] [--no-fit]
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import time
from contextlib import contextmanager

import numpy as np

D = 20
BLOCK = 1_000_000


def dataset(n: int, seed: int = 0):
    """``(X, y)`` generated in blocks of 10⁶ rows (bounded temporaries)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(D)
    w /= np.linalg.norm(w)
    X = np.empty((n, D))
    y = np.empty(n, dtype=np.int8)
    for lo in range(0, n, BLOCK):
        hi = min(n, lo + BLOCK)
        r = np.random.default_rng([seed, lo])
        z = r.standard_normal((hi - lo, D))
        z *= (r.random((hi - lo, 1)) ** 0.5 * (1 - 1e-9)) / np.linalg.norm(z, axis=1, keepdims=True)
        X[lo:hi] = z
        y[lo:hi] = np.where(z @ w * 4 + 0.3 * r.standard_normal(hi - lo) > 0, 1, -1)
    return X, y


@contextmanager
def one_blas_call():
    """The code as it was before issue 26: ``Xᵀs`` in one BLAS call and the certificate's ``k = n``."""
    from dpcore.glm import perturbation
    from dpcore.glm._solver import GLMObjective

    old_xt, old_terms, old_opt = GLMObjective._xt, GLMObjective.sum_terms, perturbation._GLMPerturbation._opt_residual

    def opt(self, *a, sum_terms=None, **k):
        return old_opt(self, *a, sum_terms=a[0] if sum_terms is None else sum_terms, **k)

    GLMObjective._xt = lambda self, s: np.asarray(self.XT @ s, dtype=np.float64).ravel()
    GLMObjective.sum_terms = lambda self: self.n
    perturbation._GLMPerturbation._opt_residual = opt
    try:
        yield
    finally:
        GLMObjective._xt, GLMObjective.sum_terms = old_xt, old_terms
        perturbation._GLMPerturbation._opt_residual = old_opt


def public(n: int, tol):
    """``(tol_, fp floor, ρ)`` of the calibration, or the refusal message."""
    from dpcore import ObjectivePerturbation

    est = ObjectivePerturbation(1.0, 1.0 / n**1.1, lam=10.0 / n**0.75, data_norm=1.0, tol=tol)
    try:
        cal = est._calibrate(n, D, D + 1, est._validate_params())
    except ValueError as e:
        return None, str(e).split(";")[0]
    return cal, ""


class CertLog(logging.Handler):
    """Reads the certified gradient norm from dpcore's INFO log line (it is not stored on the model: data-dependent)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.last = float("nan")

    def emit(self, record: logging.LogRecord) -> None:
        m = re.search(r"certified gradient norm (\S+)", record.getMessage())
        if m:
            self.last = float(m.group(1))


CERT = CertLog()


def fit(X, y, n):
    from dpcore import ObjectivePerturbation

    est = ObjectivePerturbation(1.0, 1.0 / n**1.1, lam=10.0 / n**0.75, data_norm=1.0, tol="auto", random_state=1)
    t0 = time.perf_counter()
    est.fit(X, y)
    return est, time.perf_counter() - t0


def grad_time(X, reps: int = 3):
    from dpcore.glm._losses import make_loss
    from dpcore.glm._solver import GLMObjective

    obj = GLMObjective(X, np.ones(X.shape[0]), make_loss("logistic"), 1e-3)
    s = np.random.default_rng(0).standard_normal(X.shape[0])
    best = {}
    for name in ("one call", "blocked"):
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            (obj._xt(s) if name == "blocked" else np.asarray(obj.XT @ s).ravel())
            ts.append(time.perf_counter() - t0)
        best[name] = min(ts)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=float, nargs="*", default=[1e6, 1e7])
    ap.add_argument("--ci", action="store_true", help="n = 1e5 only")
    ap.add_argument("--no-fit", action="store_true", help="public floors only (no data, no fit)")
    args = ap.parse_args()
    ns = [100_000] if args.ci else [int(n) for n in args.n]
    log = logging.getLogger("dpcore.glm.perturbation")
    log.addHandler(CERT)
    log.setLevel(logging.INFO)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; d = {D} (+ intercept), "
          "lam = 10/n^0.75, ObjectivePerturbation(logistic, gaussian, eps=1, delta=n^-1.1)", flush=True)
    print(f"{'n':>9} {'rule':>9} | {'k':>9} {'fp floor':>9} {'tol=auto':>9} {'tol=1e-10':>10} | "
          f"{'tol_':>9} {'||g|| cert':>10} {'rho':>9} {'fit s':>7} {'acc':>6}", flush=True)
    for n in ns:
        from dpcore._internal.fp import blocked_sum_terms

        data = None if args.no_fit else dataset(n)
        for rule in ("one call", "blocked"):
            ctx = one_blas_call() if rule == "one call" else contextmanager(lambda: (yield))()
            with ctx:
                cal, _ = public(n, "auto")
                c10, why = public(n, 1e-10)
                ok = "certifies" if c10 is not None else "REFUSED"
                row = (f"{n:>9} {rule:>9} | {n if rule == 'one call' else blocked_sum_terms(n):>9} "
                       f"{cal.fp_bound:9.2e} {cal.tol:9.2e} {ok:>10} | ")
                if data is not None:
                    est, t = fit(*data, n)
                    acc = est.score(*data) if n <= 10**6 else est.score(data[0][:10**6], data[1][:10**6])
                    row += (f"{est.tol_:9.2e} {CERT.last:10.2e} {est.privacy_.residual_bound:9.2e} "
                            f"{t:7.1f} {acc:6.4f}")
            print(row, flush=True)
        if data is not None:
            g = grad_time(data[0])
            print(f"{n:>9} one Xᵀs: one call {g['one call'] * 1e3:.1f} ms, blocked {g['blocked'] * 1e3:.1f} ms, "
                  f"ratio blocked/one call {g['blocked'] / g['one call']:.2f}", flush=True)
        del data


if __name__ == "__main__":
    main()

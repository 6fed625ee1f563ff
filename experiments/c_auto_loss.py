"""Which loss and which C = auto constant rank best under GP noise (issue 23, item 3).

For each task of ``imbalanced_accuracy.py`` (public rules, same splits and seeds), fit the non-private kernel model
with the library's default bias and either no class weights or the private balanced weights (capped at M = 10,
5 % of ε, as in ``imbalanced_accuracy.py``), at

    C = ρ · μ(ε', δ) / (2 L R_φ'²)      (the form of ``auto_lam``: GP noise sd per answer = ρ logits / margins)

for ρ in ``--rhos`` and both losses, and answer the scored test rows with ``GPService`` and ``TDDL`` (noise="gp",
T public points). Prints AUC, balanced accuracy and accuracy of the non-private model and of both private paths,
one row per (task, loss, weights, ρ). ρ is chosen here on the bundled public benchmarks only — never on a user's
data — and the chosen constant is what ``auto_lam`` uses (see ``dpcore/_internal/defaults.py``).

Usage::

    .venv/bin/python experiments/c_auto_loss.py --quick                        # CI size
    .venv/bin/python experiments/c_auto_loss.py --runs 2 --n 20000            # the table in experiments/README.md
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dpcore  # noqa: E402
from dpcore.accounting.calibrate import gaussian_sigma_analytic  # noqa: E402
from dpcore._internal.defaults import DEFAULT_INTERCEPT_SCALING  # noqa: E402
import imbalanced_accuracy as ia  # noqa: E402
from _harness import classification_metrics, derive_seed  # noqa: E402

LEARNERS = {"hinge": dpcore.KernelSVM, "logistic": dpcore.KernelLogisticRegression}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--tasks", default="adult,adult-5,letter,letter-A,shuttle-rare")
    p.add_argument("--losses", default="logistic,hinge")
    p.add_argument("--rhos", default="0.125,0.25,0.5,1")
    p.add_argument("--weights", default="none,10", help="none and/or caps M of the private balanced weights")
    p.add_argument("--eps", type=float, default=1.0)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--T", type=int, default=1000)
    p.add_argument("--n-test", type=int, default=5000)
    p.add_argument("--noise-seeds", type=int, default=1,
                   help="private answers drawn per fitted model (metrics averaged): separates the noise from the fit")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    if a.quick:
        a.n, a.T, a.n_test, a.tasks, a.rhos = 2000, 200, 500, "adult-5,letter-A", "0.25,0.5"
    cfg = ia.Config(n=a.n, T=a.T, n_test=a.n_test, runs=a.runs, epsilons=(a.eps,))
    b = DEFAULT_INTERCEPT_SCALING
    rows = []
    for task in a.tasks.split(","):
        d = ia.load_task(task, a.n)
        c = ia.Context(cfg, d)
        for run in range(a.runs):
            c.eps, c.run = a.eps, run
            for wname in a.weights.split(","):
                M = None if wname == "none" else float(wname)
                eps, ex = c.weighted(M, {})
                L = ia.public_lipschitz(ex)
                mu = 1.0 / gaussian_sigma_analytic(1.0, eps, cfg.delta)
                for loss in a.losses.split(","):
                    for rho in (float(r) for r in a.rhos.split(",")):
                        C = rho * mu / (2.0 * L * (1.0 + b * b))  # rbf: R_φ² = 1
                        lam = 1.0 / (c.n * C)
                        t0 = time.perf_counter()
                        m = LEARNERS[loss](lam=lam, tol=ia.public_tol(lam, ex), cache_size=ia.CACHE_MB, **ia.KERNEL,
                                           **ex).fit(d.X, d.y)
                        fit_s = time.perf_counter() - t0
                        out = dict(task=task, run=run, weights=wname, loss=loss, rho=rho, C=C, fit_seconds=fit_s,
                                   gap=float(m.duality_gap_))
                        f = m.decision_function(c.Q)
                        out["nonprivate"] = classification_metrics(c.yq, f, m.predict(c.Q))
                        out["decision_sd"] = float(np.std(f))
                        acc = {"GPService": [], "TDDL": []}
                        for k in range(a.noise_seeds):
                            seed = derive_seed(cfg.seed, task, "c-auto", loss, wname, rho, run, k)
                            svc = dpcore.GPService(m, eps, cfg.delta, data_norm=1.0, max_exact_queries=c.Q.shape[0],
                                                   random_state=seed)
                            s = svc.decision_function(c.Q)
                            out["noise_sd"] = float(svc.privacy_.noise_scale)
                            acc["GPService"].append(classification_metrics(c.yq, s, np.where(s > 0, 1.0, -1.0)))
                            rel = dpcore.TDDL(m, eps, cfg.delta, data_norm=1.0, random_state=seed + 1).fit(c.Z).release_
                            r = rel.decision_function(c.Q)
                            acc["TDDL"].append(classification_metrics(c.yq, r, np.where(r > 0, 1.0, -1.0)))
                        for key, vals in acc.items():
                            out[key] = {mk: float(np.mean([v[mk] for v in vals])) for mk in vals[0]}
                        rows.append(out)
                        print(f"{task:12s} run {run} w={wname:4s} {loss:8s} rho={rho:<6g} C={C:.4g} fit {fit_s:5.1f}s "
                              f"sd(f)={out['decision_sd']:.3f} | "
                              + " | ".join(f"{k} AUC {out[k]['auc']:.3f} bal {out[k]['bacc']:.3f}"
                                           for k in ("nonprivate", "GPService", "TDDL")), flush=True)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as fh:
            json.dump(dict(args=vars(a), rows=rows), fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

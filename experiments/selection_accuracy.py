"""Private selection of C on Adult (issue 13, part 3): how close does a privately selected kernel model get
to the best non-private one?

``PrivateGridSearch`` (ε = 1, δ = 1e-6 for the selection *and* the released model) on n = 20,000 Adult rows,
degree-3 polynomial kernel (γ = 1, coef0 = 1), T = 1,000 public points (the first test rows), scored on 5,000
further test rows; 5 seeds. Grids: the data-independent default (``param_grid=None``: C = auto·{1/3, 1, 3}) and
given C grids; strategies exhaustive and repeat-and-select. The reference is the best non-private KernelSVM
over C ∈ {0.001, 0.003, 0.01, 0.03, 0.1} on the same test rows (an oracle choice on test data: not private,
only a yardstick). Usage::

    .venv/bin/python experiments/selection_accuracy.py            # ~6 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import dpcore
from dpcore.datasets import load_adult

HERE = Path(__file__).resolve().parent
KERNEL = dict(kernel="poly", gamma=1.0, degree=3, coef0=1.0)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-6)
    p.add_argument("--outdir", default=str(HERE / "results"))
    args = p.parse_args(argv)
    tr, te = load_adult("train"), load_adult("test")
    n = args.n
    X, y = tr.X[:n], tr.y[:n]
    Z, Q, yq = te.X[:1000], te.X[1000:6000], te.y[1000:6000]
    ref = {}
    for C in (0.001, 0.003, 0.01, 0.03, 0.1):
        svm = dpcore.KernelSVM(lam=1.0 / (n * C), tol=1e-7, **KERNEL).fit(X, y)
        ref[C] = float(np.mean(np.where(svm.decision_function(Q) > 0, 1, -1) == yq))
    print("non-private KernelSVM:", {c: round(a, 4) for c, a in ref.items()}, flush=True)
    configs = [("exhaustive", None), ("exhaustive", [0.001, 0.003, 0.01]),
               ("exhaustive", [0.001, 0.003, 0.01, 0.03]), ("repeat_and_select", [0.001, 0.003, 0.01])]
    rows = []
    for strategy, Cs in configs:
        grid = None if Cs is None else {"lam": [1.0 / (n * c) for c in Cs]}
        accs, sel, t0 = [], [], time.time()
        for s in range(args.runs):
            g = dpcore.PrivateGridSearch(grid, args.epsilon, args.delta, Z=Z, data_norm=1.0,
                                         base_params=dict(KERNEL, tol=1e-7), strategy=strategy,
                                         random_state=100 + s).fit(X, y)
            accs.append(g.score(Q, yq))
            sel.append(1.0 / (n * g.best_params_["lam"]))
        grid_C = [1.0 / (n * c["lam"]) for c in g.candidates_]
        row = dict(strategy=strategy, grid_C=grid_C, auto=Cs is None, mean=float(np.mean(accs)),
                   std=float(np.std(accs)), selected_C=sel, mu=g.privacy_.mu, seconds=(time.time() - t0) / args.runs)
        rows.append(row)
        print(f"{strategy} grid {'auto ' if Cs is None else ''}{[round(c, 5) for c in grid_C]}: "
              f"{row['mean']:.4f} ± {row['std']:.4f}, selected {[round(c, 5) for c in sel]}, per-run μ {row['mu']:.3f}, "
              f"{row['seconds']:.0f} s per selection", flush=True)
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "selection_results.json").write_text(json.dumps(dict(config=vars(args), nonprivate=ref, rows=rows), indent=1))


if __name__ == "__main__":
    main()

"""Private selection of C on Adult (issue 13, part 3): how close does a privately selected kernel model get
to the best non-private one?

``PrivateGridSearch`` (ε = 1, δ = 1e-6 for the selection *and* the released model) on n = 20,000 Adult rows,
degree-3 polynomial kernel (γ = 1, coef0 = 1), T = 1,000 public points (the first test rows), scored on 5,000
further test rows; 5 seeds. Grids: the data-independent default (``param_grid=None``: C = auto·{1/3, 1, 3}) and
given C grids; strategies exhaustive and repeat-and-select. The reference is the best non-private KernelSVM
over C ∈ {0.001, 0.003, 0.01, 0.03, 0.1} on the same test rows (an oracle choice on test data: not private,
only a yardstick). Mean ± std (ddof = 1) over the runs; every selection's seed is derived from the public base
seed ``--seed`` and (strategy, grid, run). Usage::

    .venv/bin/python experiments/selection_accuracy.py            # ~6 minutes on 2 cores
"""

from __future__ import annotations

import os
import sys
import time

import dpcore

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _harness.py sits next to this script
from _harness import (  # noqa: E402
    accuracy, derive_seed, experiment_parser, load_data, mean_std, output_prefix, write_json
)

DEFAULT_SEED = 20260101  # public base seed of every random choice
KERNEL = dict(kernel="poly", gamma=1.0, degree=3, coef0=1.0)


def main(argv=None):
    p = experiment_parser(__doc__, DEFAULT_SEED, quick=None, runs=5)
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-6)
    args = p.parse_args(argv)
    d = load_data("adult", args.n)
    n, X, y = d.y.shape[0], d.X, d.y
    Z, Q, yq = d.X_test[:1000], d.X_test[1000:6000], d.y_test[1000:6000]
    ref = {}
    for C in (0.001, 0.003, 0.01, 0.03, 0.1):
        svm = dpcore.KernelSVM(lam=1.0 / (n * C), tol=1e-7, **KERNEL).fit(X, y)
        ref[C] = accuracy(svm.decision_function(Q), yq)
    print("non-private KernelSVM:", {c: round(a, 4) for c, a in ref.items()}, flush=True)
    configs = [("exhaustive", None), ("exhaustive", [0.001, 0.003, 0.01]),
               ("exhaustive", [0.001, 0.003, 0.01, 0.03]), ("repeat_and_select", [0.001, 0.003, 0.01])]
    rows = []
    for strategy, Cs in configs:
        grid = None if Cs is None else {"lam": [1.0 / (n * c) for c in Cs]}
        accs, sel, t0 = [], [], time.time()
        for run in range(args.runs):
            g = dpcore.PrivateGridSearch(grid, args.epsilon, args.delta, Z=Z, data_norm=1.0,
                                         base_params=dict(KERNEL, tol=1e-7), strategy=strategy,
                                         random_state=derive_seed(args.seed, "selection", strategy,
                                                                  "auto" if Cs is None else Cs, run)).fit(X, y)
            accs.append(g.score(Q, yq))
            sel.append(1.0 / (n * g.best_params_["lam"]))
        grid_C = [1.0 / (n * c["lam"]) for c in g.candidates_]
        mean, std = mean_std(accs)
        row = dict(strategy=strategy, grid_C=grid_C, auto=Cs is None, mean=mean, std=std, selected_C=sel,
                   mu=g.privacy_.mu, seconds=(time.time() - t0) / args.runs)
        rows.append(row)
        print(f"{strategy} grid {'auto ' if Cs is None else ''}{[round(c, 5) for c in grid_C]}: "
              f"{row['mean']:.4f} ± {row['std']:.4f}, selected {[round(c, 5) for c in sel]}, per-run μ {row['mu']:.3f}, "
              f"{row['seconds']:.0f} s per selection", flush=True)
    write_json(output_prefix(args.outdir, "selection", False) + "_results.json",
               dict(config=vars(args), nonprivate=ref, rows=rows))


if __name__ == "__main__":
    main()

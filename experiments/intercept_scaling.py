"""Issue 23, item 1: choose the default ``intercept_scaling`` b from a measurement (public data only).

Adult made imbalanced by a public rule (positives thinned to ≈ 6 % with a fixed seed), rbf γ = 1,
KernelLogisticRegression at the data-independent C = auto of ``auto_lam`` *for the shifted kernel*
(R_φ'² = 1 + b²), released with ``GPService`` at ε = 1, δ = 1e-6 on held-out rows. For b ∈ {0, 0.25, 0.5, 1}:
non-private and private AUC / balanced accuracy, mean over seeds. Usage::

    .venv/bin/python experiments/intercept_scaling.py [n_train] [n_test] [runs]
"""

from __future__ import annotations

import sys

import numpy as np
from sklearn.metrics import balanced_accuracy_score, roc_auc_score

import dpcore
from dpcore.kernel_learning.gp import auto_lam


def imbalanced_adult(seed: int = 0, pos_keep: float = 0.2):
    d = dpcore.datasets.load_adult("all")
    X, y = d.X, np.where(d.y > 0, 1, -1)
    rng = np.random.default_rng(seed)  # public thinning rule: keep 20 % of the positives
    keep = (y < 0) | (rng.random(len(y)) < pos_keep)
    X, y = X[keep], y[keep]
    perm = rng.permutation(len(y))
    return X[perm], y[perm]


def main(n=4000, m=2000, runs=2, eps=1.0, delta=1e-6):
    X, y = imbalanced_adult()
    Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:n + m], y[n:n + m]
    print(f"imbalanced Adult: n = {n}, test {m}, positives {np.mean(ytr > 0):.3f}; rbf gamma = 1, "
          f"C = auto, GPService eps = {eps}, runs = {runs}")
    print("| b | R_phi'^2 | C | non-private AUC | non-private bal. acc | GPService AUC | GPService bal. acc |")
    print("|---|---|---|---|---|---|---|")
    for b in (0.0, 0.25, 0.5, 1.0):
        lam = auto_lam(n, eps, delta, data_norm=1.0, kernel="rbf", gamma=1.0, intercept_scaling=b)
        model = dpcore.KernelLogisticRegression(lam=lam, kernel="rbf", gamma=1.0, tol=1e-6,
                                                intercept_scaling=b).fit(Xtr, ytr)
        f = model.decision_function(Xte)
        auc0, bal0 = roc_auc_score(yte, f), balanced_accuracy_score(yte, np.where(f > 0, 1, -1))
        aucs, bals = [], []
        for r in range(runs):
            svc = dpcore.GPService(model, eps, delta, data_norm=1.0, random_state=1000 + r)
            g = svc.decision_function(Xte)
            aucs.append(roc_auc_score(yte, g))
            bals.append(balanced_accuracy_score(yte, np.where(g > 0, 1, -1)))
        print(f"| {b} | {1 + b * b:.4g} | {1 / (lam * n):.4g} | {auc0:.3f} | {bal0:.3f} | "
              f"{np.mean(aucs):.3f} ± {np.std(aucs):.3f} | {np.mean(bals):.3f} ± {np.std(bals):.3f} |", flush=True)


if __name__ == "__main__":
    a = [int(v) for v in sys.argv[1:]]
    main(*a)

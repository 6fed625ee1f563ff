"""Multi-class private kernel learning (issue 24, item 6): the joint K-class GP release against the private
linear one-vs-rest baseline and the non-private model, on Letter-26 and scikit-learn's digits.

Methods (each on the same held-out rows; the first ``T`` test rows are the public points of the release and
are not scored):

* ``joint GP (MulticlassTDDL)`` — :class:`dpcore.MulticlassTDDL` on a certified
  :class:`dpcore.MulticlassKernelLogisticRegression` (one GP, K paths, sensitivity ``2√2 R_φ'/(λn)``);
  λ = 1/(n·C) with the public C of the table below (rbf; C = 0.1 as the binary Letter experiments; not tuned on
  the test data, not privately selected — say so when quoting);
* ``OvR ObjectivePerturbation (ε/K)`` — K private binary logistic regressions (objective perturbation, raw
  features, intercept, λ = 1e-3), each at ``(ε/K, δ/K)`` (basic composition), argmax of the K decision values;
* ``non-private`` — the multi-class kernel model itself.

Not yet run here: GPService for K classes (not implemented in this session), Shuttle-7 (labels not bundled).

Metrics: accuracy, balanced accuracy, macro-F1, mean ± std (ddof = 1) over ``--runs`` runs (noise seeds
derived from the public base seed). Usage::

    .venv/bin/python experiments/multiclass_accuracy.py --quick     # digits + Letter-26 at n = 2,000, 2 runs
    .venv/bin/python experiments/multiclass_accuracy.py             # full: Letter-26 n = 16,000, 5 runs
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

import dpcore
from dpcore.datasets import load_letter

DEFAULT_SEED = 20260101
EPSILONS = (0.5, 1.0, 2.0, 5.0)
#: public model settings (rbf γ, C); λ = 1/(n C)
SETTINGS = {"letter26": dict(gamma=8.0, C=0.1), "digits": dict(gamma=4.0, C=0.1)}


def _data(name, quick):
    if name == "letter26":
        tr, te = load_letter("train", binary=False), load_letter("test", binary=False)
        n = 2000 if quick else tr.X.shape[0]
        return tr.X[:n], tr.y[:n], te.X, te.y, list(tr.classes)
    d = load_digits()
    X = d.data / (16.0 * 8.0)  # public map into the unit ball: pixels in [0, 16], 64 pixels
    perm = np.random.RandomState(0).permutation(X.shape[0])
    cut = int(0.7 * X.shape[0])
    return X[perm[:cut]], d.target[perm[:cut]], X[perm[cut:]], d.target[perm[cut:]], list(range(10))


def _metrics(y, pred):
    return dict(acc=accuracy_score(y, pred), bacc=balanced_accuracy_score(y, pred),
                f1=f1_score(y, pred, average="macro"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--T", type=int, default=500, help="public points of the release (first T test rows)")
    ap.add_argument("--datasets", default="digits,letter26")
    ap.add_argument("--epsilons", default=",".join(map(str, EPSILONS)))
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--cache-mb", type=float, default=2500.0)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = ap.parse_args(argv)
    runs = args.runs or (2 if args.quick else 5)
    eps_list = [float(e) for e in args.epsilons.split(",")]
    results = {}
    for name in args.datasets.split(","):
        X, y, Xt, yt, classes = _data(name, args.quick)
        K, n = len(classes), X.shape[0]
        T = min(args.T, Xt.shape[0] // 3)  # digits: 540 test rows -> 180 public points, 360 scored
        Z, Q, yq = Xt[:T], Xt[T:], yt[T:]
        cfg = SETTINGS[name]
        lam = 1.0 / (n * cfg["C"])
        t0 = time.time()
        model = dpcore.MulticlassKernelLogisticRegression(lam=lam, gamma=cfg["gamma"], classes=classes, tol=1e-6,
                                                          cache_size=args.cache_mb).fit(X, y)
        fit_s = time.time() - t0
        base = _metrics(yq, model.predict(Q))
        print(f"[{name}] n={n} K={K} lam={lam:.3g}: fit {fit_s:.1f} s ({model.n_iter_} Newton, "
              f"{model.n_kernel_products_} kernel products, gap {model.duality_gap_:.2e}); non-private acc "
              f"{base['acc']:.4f}", flush=True)
        res = {"n": n, "K": K, "lam": lam, "fit_seconds": fit_s, "non-private": base, "eps": {}}
        for eps in eps_list:
            rows = {"joint GP (MulticlassTDDL)": [], "OvR ObjectivePerturbation (eps/K)": []}
            sig = None
            for r in range(runs):
                seed = args.seed + 1000 * r + int(100 * eps)
                rel = dpcore.MulticlassTDDL(model, eps, args.delta, data_norm=1.0, random_state=seed).fit(Z)
                sig = rel.privacy_.noise_scale
                rows["joint GP (MulticlassTDDL)"].append(_metrics(yq, rel.predict(Q)))
                scores = np.empty((Q.shape[0], K))
                for k, c in enumerate(classes):
                    yk = np.where(np.asarray(y) == c, 1, -1)
                    lin = dpcore.ObjectivePerturbation(eps / K, args.delta / K, lam=1e-3, data_norm=1.0,
                                                       loss="logistic", fit_intercept=True,
                                                       random_state=seed + 7 + k).fit(X, yk)
                    scores[:, k] = lin.decision_function(Q)
                rows["OvR ObjectivePerturbation (eps/K)"].append(_metrics(yq, np.asarray(classes)[scores.argmax(1)]))
            summ = {}
            for meth, lst in rows.items():
                summ[meth] = {m: (float(np.mean([d[m] for d in lst])),
                                  float(np.std([d[m] for d in lst], ddof=1)) if len(lst) > 1 else 0.0)
                              for m in ("acc", "bacc", "f1")}
                a = summ[meth]["acc"]
                print(f"[{name}] eps={eps:g} {meth}: acc {a[0]:.4f} ± {a[1]:.4f}, bacc "
                      f"{summ[meth]['bacc'][0]:.4f}, macro-F1 {summ[meth]['f1'][0]:.4f}", flush=True)
            summ["sigma_joint"] = sig
            res["eps"][str(eps)] = summ
        results[name] = res
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "multiclass_accuracy" + ("_quick" if args.quick else "") + ".json")
    with open(path, "w") as fh:
        json.dump(results, fh, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()

"""Multi-class private learning (issue 24): joint K-class kernel releases against the private linear models and the
non-private model, on Letter-26, digits and Shuttle-7.

Methods (each on the same held-out rows; the first ``T`` test rows are the public points of the TDDL release and
are not scored by any method):

* ``joint GP (MulticlassTDDL)`` — :class:`dpcore.MulticlassTDDL` on a certified
  :class:`dpcore.MulticlassKernelLogisticRegression` (one GP, K paths, sensitivity ``2√2 R_φ'/(λn)``), at the
  data-independent λ of :func:`dpcore.kernel_learning.multiclass_release.multiclass_auto_lam` for each ε
  (``--C auto``, the default; ``--C 0.1`` reproduces the first-half tables);
* ``GPService`` — :class:`dpcore.MulticlassGPService` on the same model, answering the scored rows themselves
  (one lazily sampled K-path GP; no public points needed);
* ``multinomial linear (raw)`` / ``multinomial linear (RFF)`` — :class:`dpcore.MulticlassOutputPerturbation`
  (multinomial logistic regression, Gaussian output perturbation, Frobenius sensitivity ``2√2 R'/(λn)``) on the
  raw features and on public random Fourier features (:class:`dpcore.RandomFourierFeatures`, D = ``--rff``,
  the kernel's γ, rows in the unit ball), λ by the same auto rule with ``L = √2`` (linear kernel: ``R = 1``);
* ``OvR joint`` — ``MulticlassOutputPerturbation(loss="ovr")``: the K binary logistic problems "k vs rest"
  fitted jointly and released by ONE Gaussian output perturbation of the K × p matrix at ``(ε, δ)`` (Frobenius
  sensitivity ``√K`` × the binary ``2R'/(λn)``: each row gets the noise of a binary release at ``μ/√K``-GDP);
  λ by the auto rule with ``L = √K``. (Output, not objective perturbation: the objective-perturbation Jacobian
  term is not a Gaussian mechanism and does not compose as GDP.)
* ``OvR ObjPert eps/K`` — K independent ``ObjectivePerturbation(ε/K, δ/K)`` (basic composition; first-half
  baseline);
* ``non-private (same lambda)`` — the multi-class kernel model at the λ of ε = 1; ``non-private (best C)`` — the
  best of a C grid **chosen on the scored test rows** (an optimistic, non-private reference).

Metrics: accuracy, balanced accuracy, macro-F1, mean ± std (ddof = 1) over ``--runs`` runs (noise seeds
derived from the public base seed). Fitted kernel models are cached (pickle) in ``--cache`` (default
``/tmp/dpcore-multiclass-models``) so that a second run does not refit. Usage::

    .venv/bin/python experiments/multiclass_accuracy.py --quick       # digits + Letter-26 at n = 2,000, 2 runs
    .venv/bin/python experiments/multiclass_accuracy.py                # full: 5 runs
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import pickle
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

import dpcore
from dpcore.datasets import load_letter
from dpcore.kernel_learning.gp import auto_lam
from dpcore.kernel_learning.multiclass_release import multiclass_auto_lam, multiclass_min_tol

DEFAULT_SEED = 20260101
EPSILONS = (0.5, 1.0, 2.0, 5.0)
DELTA = 1e-6
#: public model settings: rbf γ (Shuttle: as experiments/gp_accuracy.py), the sample size cap (Shuttle: 46,400 train rows need a
#: 17 GB Gram matrix; its first n_max rows — a uniform sample, the split is a public permutation — are used by every method)
SETTINGS = {"letter26": dict(gamma=8.0, n_max=None), "digits": dict(gamma=4.0, n_max=None),
            "shuttle7": dict(gamma=4.0, n_max=8000)}
#: C grid of the non-private reference (best C chosen on the scored test rows)
C_GRID = (0.01, 0.1, 1.0)


def _data(name, quick):
    if name == "letter26":
        tr, te = load_letter("train", binary=False), load_letter("test", binary=False)
        n = 2000 if quick else tr.X.shape[0]
        return tr.X[:n], tr.y[:n], te.X, te.y, list(tr.classes)
    if name == "shuttle7":
        from dpcore.datasets import load_shuttle
        tr, te = load_shuttle("train", binary=False), load_shuttle("test", binary=False)
        n = 2000 if quick else min(tr.X.shape[0], SETTINGS[name]["n_max"])
        return tr.X[:n], tr.y[:n], te.X, te.y, list(tr.classes)
    d = load_digits()
    X = d.data / (16.0 * 8.0)  # public map into the unit ball: pixels in [0, 16], 64 pixels
    perm = np.random.RandomState(0).permutation(X.shape[0])
    cut = int(0.7 * X.shape[0])
    return X[perm[:cut]], d.target[perm[:cut]], X[perm[cut:]], d.target[perm[cut:]], list(range(10))


def _metrics(y, pred):
    return dict(acc=accuracy_score(y, pred), bacc=balanced_accuracy_score(y, pred),
                f1=f1_score(y, pred, average="macro"))


def kernel_model(name, X, y, classes, lam, gamma, cache_dir, cache_mb, tol=1e-6):
    """Fit (or load from the cache) the certified K-class kernel model at λ."""
    key = hashlib.sha256(np.ascontiguousarray(X).tobytes() + np.asarray(y).astype(str).tobytes()).hexdigest()[:12]
    path = os.path.join(cache_dir, f"{name}_n{X.shape[0]}_{key}_lam{lam:.9g}_g{gamma:g}_tol{tol:g}.pkl")
    if os.path.exists(path):
        with open(path, "rb") as fh:
            return pickle.load(fh), 0.0
    t0 = time.time()
    m = dpcore.MulticlassKernelLogisticRegression(lam=lam, gamma=gamma, classes=classes, tol=tol,
                                                  cache_size=cache_mb).fit(X, y)
    secs = time.time() - t0
    m.fit_seconds_ = secs
    os.makedirs(cache_dir, exist_ok=True)
    with open(path + ".tmp", "wb") as fh:
        pickle.dump(m, fh)
    os.replace(path + ".tmp", path)
    print(f"  [{name}] fitted lam={lam:.4g} (C={1 / (lam * X.shape[0]):.4g}) in {secs:.0f} s: {m.n_iter_} Newton, "
          f"{m.n_kernel_products_} products, gap {m.duality_gap_:.2e}", flush=True)
    return m, secs


def _summ(lst):
    return {m: (float(np.mean([d[m] for d in lst])), float(np.std([d[m] for d in lst], ddof=1)) if len(lst) > 1
                else 0.0) for m in ("acc", "bacc", "f1")}


def run_dataset(name, args, eps_list, runs, methods):
    X, y, Xt, yt, classes = _data(name, args.quick)
    K, n = len(classes), X.shape[0]
    T = min(args.T, Xt.shape[0] // 3)  # digits: 540 test rows -> 180 public points, 360 scored
    Z, Q, yq = Xt[:T], Xt[T:], yt[T:]
    if args.max_scored and Q.shape[0] > args.max_scored:
        Q, yq = Q[:args.max_scored], yq[:args.max_scored]
    gamma = SETTINGS[name]["gamma"]
    res = {"n": n, "K": K, "T": T, "scored": int(Q.shape[0]), "gamma": gamma, "eps": {}, "fits": {}}

    def lam_for(eps):
        return multiclass_auto_lam(n, eps, DELTA, data_norm=1.0) if args.C == "auto" else 1.0 / (n * float(args.C))

    # the kernel models: one per ε (auto rule) and the C grid of the non-private reference
    lams = {f"eps={e:g}": lam_for(e) for e in eps_list}
    if "nonprivate" in methods:
        lams.update({f"C={c:g}": 1.0 / (n * c) for c in C_GRID})
    models = {}
    for tag, lam in lams.items():
        # the public tol of a model that will be released: 2 × the smallest the releases accept (the solver term
        # 2 sqrt(2 tol/λ) of the sensitivity then stays a few % of 2√2 R'/(λn); tol = 1e-6 nearly doubled it)
        tol = 2.0 * multiclass_min_tol(lam, K, 1.25 * (1.0 + 1e-6)) if tag.startswith("eps=") else 1e-6
        m, secs = kernel_model(name, X, y, classes, lam, gamma, args.cache, args.cache_mb, tol=tol)
        models[tag] = m
        res["fits"][tag] = dict(lam=lam, C=1.0 / (lam * n), tol=tol, seconds=getattr(m, "fit_seconds_", secs),
                                newton=m.n_iter_, products=m.n_kernel_products_, gap=m.duality_gap_)
    if args.fit_only:
        return res
    if "nonprivate" in methods:
        scored = {tag: _metrics(yq, m.predict(Q)) for tag, m in models.items()}
        best = max((t for t in scored if t.startswith("C=")) , key=lambda t: scored[t]["acc"])
        res["non-private (best C)"] = dict(scored[best], C=res["fits"][best]["C"], grid=list(C_GRID))
        res["non-private (per eps lambda)"] = {t: scored[t] for t in scored if t.startswith("eps=")}
        print(f"[{name}] n={n} K={K}: non-private best {best} acc {scored[best]['acc']:.4f}; at the auto λ: "
              + ", ".join(f"{t} {scored[t]['acc']:.4f}" for t in scored if t.startswith("eps=")), flush=True)
    rff_maps = {}
    for eps in eps_list:
        rows = {}
        model = models[f"eps={eps:g}"]
        lam_lin = multiclass_auto_lam(n, eps, DELTA, data_norm=1.0, kernel="linear")
        info = {"C": 1.0 / (model.lam * n), "C_linear": 1.0 / (lam_lin * n), "tol": model.tol_}
        for r in range(runs):
            seed = args.seed + 1000 * r + int(100 * eps)
            if "tddl" in methods:
                rel = dpcore.MulticlassTDDL(model, eps, DELTA, data_norm=1.0, random_state=seed).fit(Z)
                info["sigma_joint"] = rel.privacy_.noise_scale
                info["sensitivity_joint"] = rel.privacy_.sensitivity
                info["w_error_bound_public"] = rel.privacy_.w_error_bound
                rows.setdefault("joint GP (MulticlassTDDL)", []).append(_metrics(yq, rel.predict(Q)))
            if "service" in methods:
                svc = dpcore.MulticlassGPService(model, eps, DELTA, data_norm=1.0, random_state=seed + 1,
                                                 max_exact_queries=max(Q.shape[0], 1))
                info["sigma_service"] = svc.privacy_.noise_scale
                rows.setdefault("GPService (K paths)", []).append(_metrics(yq, svc.predict(Q)))
            if "linear" in methods:
                lin = dpcore.MulticlassOutputPerturbation(eps, DELTA, lam=lam_lin, data_norm=1.0, classes=classes,
                                                          random_state=seed + 2).fit(X, y)
                rows.setdefault("multinomial linear (raw)", []).append(_metrics(yq, lin.predict(Q)))
            if "rff" in methods:
                if r not in rff_maps:  # public map, drawn from a public seed (no data)
                    rff_maps[r] = dpcore.RandomFourierFeatures(n_components=args.rff, gamma=gamma,
                                                               random_state=args.seed + r).fit(X[:1])
                fm = rff_maps[r]
                PX, PQ = _rff(fm, X), _rff(fm, Q)
                lin = dpcore.MulticlassOutputPerturbation(eps, DELTA, lam=lam_lin, data_norm=1.0, classes=classes,
                                                          random_state=seed + 3).fit(PX, y)
                rows.setdefault("multinomial linear (RFF)", []).append(_metrics(yq, lin.predict(PQ)))
            if "ovr_joint" in methods:
                lam_ovr = auto_lam(n, eps, DELTA, data_norm=1.0, kernel="linear", lipschitz=math.sqrt(K),
                                   intercept_scaling=0.5)
                ovr = dpcore.MulticlassOutputPerturbation(eps, DELTA, lam=lam_ovr, data_norm=1.0, classes=classes,
                                                          loss="ovr", random_state=seed + 4).fit(X, y)
                rows.setdefault("OvR joint (output pert., sqrt(K) sens.)", []).append(_metrics(yq, ovr.predict(Q)))
            if "ovr_split" in methods:
                scores = np.empty((Q.shape[0], K))
                for k, c in enumerate(classes):
                    yk = np.where(np.asarray(y) == c, 1, -1)
                    lin = dpcore.ObjectivePerturbation(eps / K, DELTA / K, lam=1e-3, data_norm=1.0,
                                                       loss="logistic", fit_intercept=True,
                                                       random_state=seed + 7 + k).fit(X, yk)
                    scores[:, k] = lin.decision_function(Q)
                rows.setdefault("OvR ObjPert eps/K", []).append(_metrics(yq, np.asarray(classes)[scores.argmax(1)]))
        summ = {meth: _summ(lst) for meth, lst in rows.items()}
        for meth, s in summ.items():
            print(f"[{name}] eps={eps:g} {meth}: acc {s['acc'][0]:.4f} ± {s['acc'][1]:.4f}, bacc "
                  f"{s['bacc'][0]:.4f}, macro-F1 {s['f1'][0]:.4f}", flush=True)
        summ.update(info)
        res["eps"][str(eps)] = summ
    return res


def _rff(fm, X):
    """Public random Fourier features (||φ(x)|| = 1 up to rounding; shrunk by 2⁻⁴⁰ into the unit ball)."""
    return fm.transform(X) * (1.0 - 2.0**-40)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--T", type=int, default=500, help="public points of the TDDL release (first T test rows)")
    ap.add_argument("--max-scored", type=int, default=None, help="cap on the scored test rows")
    ap.add_argument("--datasets", default="digits,letter26,shuttle7")
    ap.add_argument("--methods", default="nonprivate,tddl,service,linear,rff,ovr_joint,ovr_split")
    ap.add_argument("--epsilons", default=",".join(map(str, EPSILONS)))
    ap.add_argument("--C", default="auto", help="'auto' (multiclass_auto_lam per ε) or a fixed public C")
    ap.add_argument("--rff", type=int, default=1000, help="random Fourier features of the RFF linear model")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--cache-mb", type=float, default=2500.0)
    ap.add_argument("--cache", default="/tmp/dpcore-multiclass-models")
    ap.add_argument("--fit-only", action="store_true", help="only fit (and cache) the kernel models")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    ap.add_argument("--tag", default="")
    args = ap.parse_args(argv)
    runs = args.runs or (2 if args.quick else 5)
    eps_list = [float(e) for e in args.epsilons.split(",")]
    methods = set(args.methods.split(","))
    results = {"runs": runs, "delta": DELTA, "C": args.C}
    for name in args.datasets.split(","):
        results[name] = run_dataset(name, args, eps_list, runs, methods)
    if args.fit_only:
        return
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "multiclass_accuracy" + ("_quick" if args.quick else "") + args.tag + ".json")
    with open(path, "w") as fh:
        json.dump(results, fh, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()

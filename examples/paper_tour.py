"""A paper-by-paper tour of dpcore on UCI Adult: ``python examples/paper_tour.py`` (``--quick``: about a minute).

This was the main job before the GP mechanism; the main job is now ``python -m dpcore.demo``.

What it does, on the bundled UCI Adult data (public pre-processing into the unit ball):

1. **Non-private kernel baseline.** Fits scikit-learn's :class:`~sklearn.kernel_ridge.KernelRidge`
   (no intercept, ``alpha = λ·n``, i.e. the regularised ERM
   ``(1/n) Σ ½(y_i − <w, φ(x_i)>)² + (λ/2)||w||²``) on a subsample with ±1 labels, takes its dual
   coefficients as ``μ`` (so ``w* = Σ μ_i φ(x_i)``), and evaluates the test decision values with
   dpcore's fused Rust engine :func:`dpcore.kernel_predict` (no m×n kernel matrix). It checks that
   they match ``KernelRidge.predict`` to 1e-8, and reports test accuracy, the timing of both, and
   a learning curve over n. This model is **not private**: it is the ``w*`` that the private
   kernel learners of dpcore perturb.
2. **Private statistics under a budget.** Releases, under one :class:`dpcore.BudgetAccountant`,
   the fraction of ``>50K`` earners (Laplace, sensitivity 1/n under replace-one adjacency) and the
   mean encoded feature vector (Gaussian, L2 sensitivity 2/n since every row has ``||x|| ≤ 1``),
   prints true vs private values and the remaining budget, and shows that an over-spend is refused
   before anything is computed.
3. **Empirical privacy audit.** Samples the Laplace release on a neighbouring pair of Adult
   training sets (one record replaced) and computes a Clopper–Pearson lower bound on ε
   (:func:`dpcore.audit.audit`, α = 1e-6, thresholds fixed before sampling); the bound must not
   exceed the claimed ε. The same audit on a deliberately broken copy (half the noise) shows that
   the auditor catches it.
4. **PINP** (Jain & Thakurta 2013, interactive): a certified :class:`dpcore.KernelSVM` served as a
   private prediction service on Adult test queries, one session per ε.
5. **TDDL** (semi-interactive): the same kind of model released through its noised predictions on
   public points, per ε.
6. **Private GLMs** (Jain & Thakurta 2014): output/objective perturbation (Gaussian and Gamma noise)
   and SimplexERM on the full train split.
7. **PrivateSVM** (Rubinstein et al.): linear SVM on published random Fourier features, weights
   released with exact Laplace noise (``calibration="tight"``), per ε.
8. **Local DP** (Zheng, Mou & Wang 2017): every Adult user privatises their own record; the server
   estimates the mean feature vector (basic private vector, averaged) and fits Chebyshev logistic
   regression from the reports only.

Results are printed as a table and saved under ``--outdir`` (``results.json`` and
``demo_adult.png``). Randomness is secure (OS-seeded) unless ``--seed`` is given.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

__all__ = ["main", "build_parser"]


# ------------------------------------------------------------------------------------------------
# command line
# ------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python examples/paper_tour.py",
        description=(
            "dpcore end-to-end demo on UCI Adult: non-private kernel baseline checked against "
            "scikit-learn, private statistics under a budget accountant, and an empirical "
            "privacy audit."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--quick", action="store_true",
                   help="small sizes for a fast smoke run (overrides the size options below)")
    p.add_argument("--outdir", default="artifacts", help="directory for results.json and the plot")
    p.add_argument("--n-train", type=int, default=5000,
                   help="training subsample size for the kernel baseline")
    p.add_argument("--n-test", type=int, default=0,
                   help="number of test rows to predict (0 = the full test set, 16,281)")
    p.add_argument("--kernel", choices=("poly", "rbf", "linear"), default="poly")
    p.add_argument("--degree", type=int, default=3, help="polynomial degree")
    p.add_argument("--gamma", type=float, default=1.0, help="kernel gamma (poly / rbf)")
    p.add_argument("--coef0", type=float, default=1.0, help="polynomial coef0")
    p.add_argument("--lam", type=float, default=1e-3,
                   help="regularisation λ of the ERM; KernelRidge alpha = λ·n")
    p.add_argument("--epsilon", type=float, default=1.0, help="total privacy budget ε")
    p.add_argument("--delta", type=float, default=1e-6, help="total privacy budget δ")
    p.add_argument("--audit-epsilon", type=float, default=1.0,
                   help="ε claimed by the audited Laplace release")
    p.add_argument("--audit-samples", type=int, default=1_000_000,
                   help="samples per dataset of the neighbouring pair in the audit")
    p.add_argument("--pinp-n", type=int, default=10_000,
                   help="training size of the dpcore.KernelSVM model served by PINP")
    p.add_argument("--pinp-lam", type=float, default=1e-3, help="regularisation λ of the PINP model")
    p.add_argument("--pinp-queries", type=int, default=2000,
                   help="number of Adult test rows sent to PINP as queries (T)")
    p.add_argument("--pinp-epsilons", type=float, nargs="+", default=[0.1, 0.5, 1.0, 2.0, 5.0],
                   help="privacy budgets ε of the PINP sessions (one fresh session each)")
    p.add_argument("--pinp-delta", type=float, default=1e-6, help="δ of each PINP session")
    p.add_argument("--pinp-beta", type=float, default=0.05, help="failure probability β of PINP")
    p.add_argument("--tddl-n", type=int, default=30_000,
                   help="training size of the dpcore.KernelSVM model released by TDDL")
    p.add_argument("--tddl-C", type=float, default=0.001,
                   help="SVM penalty C of the TDDL model (λ = 1/(n·C), the paper's setting)")
    p.add_argument("--tddl-points", type=int, default=1000,
                   help="number T of public (unlabelled) Adult test rows sent to TDDL")
    p.add_argument("--tddl-epsilons", type=float, nargs="+", default=[0.1, 0.5, 1.0, 2.0, 5.0],
                   help="privacy budgets ε of the TDDL releases (one release each)")
    p.add_argument("--glm-lam", type=float, default=1e-3,
                   help="regularisation Λ of the private GLMs (step 6)")
    p.add_argument("--glm-epsilons", type=float, nargs="+", default=[0.1, 0.5, 1.0, 2.0, 5.0],
                   help="privacy budgets ε of the private GLM fits (step 6; one fit each)")
    p.add_argument("--svm-n", type=int, default=30_000,
                   help="training size of PrivateSVM (step 7)")
    p.add_argument("--svm-C", type=float, default=0.01,
                   help="SVM penalty C of PrivateSVM in LIBSVM units (dpcore's C = n·C_LIBSVM)")
    p.add_argument("--svm-components", type=int, default=200, help="random Fourier features d̂ of PrivateSVM")
    p.add_argument("--svm-epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.0, 5.0],
                   help="privacy budgets ε of the PrivateSVM fits (step 7; one fit each)")
    p.add_argument("--ldp-epsilons", type=float, nargs="+", default=[1.0, 4.0, 16.0, 64.0],
                   help="per-user budgets ε of the local-DP runs (step 8)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed for reproducible research runs (default: secure OS randomness)")
    p.add_argument("--no-plot", action="store_true", help="do not write the plot")
    return p


def _apply_quick(args: argparse.Namespace) -> None:
    if args.quick:
        args.n_train = min(args.n_train, 400)
        args.n_test = 1000 if args.n_test == 0 else min(args.n_test, 1000)
        args.audit_samples = min(args.audit_samples, 20_000)
        args.pinp_n = min(args.pinp_n, 600)
        args.pinp_queries = min(args.pinp_queries, 200)
        args.tddl_n = min(args.tddl_n, 2000)
        args.tddl_points = min(args.tddl_points, 200)
        args.glm_epsilons = [1.0]
        args.svm_n = min(args.svm_n, 2000)
        args.svm_components = min(args.svm_components, 50)
        args.svm_epsilons = [1.0]
        args.ldp_epsilons = [4.0]


def _validate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if args.n_train < 10:
        parser.error("--n-train must be >= 10")
    if args.n_test < 0:
        parser.error("--n-test must be >= 0")
    for name in ("epsilon", "audit_epsilon", "gamma", "lam"):
        v = getattr(args, name)
        if not (math.isfinite(v) and v > 0):
            parser.error(f"--{name.replace('_', '-')} must be finite and > 0, got {v}")
    if not (0.0 <= args.delta < 1.0):
        parser.error(f"--delta must lie in [0, 1), got {args.delta}")
    if args.audit_samples < 1000:
        parser.error("--audit-samples must be >= 1000")
    if args.pinp_n < 10 or args.pinp_queries < 1:
        parser.error("--pinp-n must be >= 10 and --pinp-queries >= 1")
    if not (math.isfinite(args.pinp_lam) and args.pinp_lam > 0):
        parser.error("--pinp-lam must be finite and > 0")
    if any(not (math.isfinite(e) and e > 0) for e in args.pinp_epsilons):
        parser.error("--pinp-epsilons must all be finite and > 0")
    if args.tddl_n < 10 or args.tddl_points < 1:
        parser.error("--tddl-n must be >= 10 and --tddl-points >= 1")
    if not (math.isfinite(args.tddl_C) and args.tddl_C > 0):
        parser.error("--tddl-C must be finite and > 0")
    if any(not (math.isfinite(e) and e > 0) for e in args.tddl_epsilons):
        parser.error("--tddl-epsilons must all be finite and > 0")
    if not (0.0 < args.pinp_delta < 1.0 and 0.0 < args.pinp_beta < 1.0):
        parser.error("--pinp-delta and --pinp-beta must lie in (0, 1)")
    if args.svm_n < 10 or args.svm_components < 1:
        parser.error("--svm-n must be >= 10 and --svm-components >= 1")
    if not (math.isfinite(args.svm_C) and args.svm_C > 0):
        parser.error("--svm-C must be finite and > 0")
    for name in ("glm_epsilons", "svm_epsilons", "ldp_epsilons"):
        if any(not (math.isfinite(e) and e > 0) for e in getattr(args, name)):
            parser.error(f"--{name.replace('_', '-')} must all be finite and > 0")


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------


def _section(title: str) -> None:
    print(f"\n== {title} ==", flush=True)


def _seed_stream(seed: Optional[int]):
    """Independent child seeds for each random step (None → every step uses secure OS randomness)."""
    if seed is None:
        return lambda: None
    ss = np.random.SeedSequence(seed)

    def nxt() -> int:
        return int(ss.spawn(1)[0].generate_state(1, dtype=np.uint32)[0])

    return nxt


def _table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    cells = [[str(h) for h in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[j]) for r in cells) for j in range(len(header))]
    line = "-+-".join("-" * w for w in widths)
    out = [" | ".join(c.ljust(w) for c, w in zip(cells[0], widths)), line]
    out += [" | ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cells[1:]]
    return "\n".join(out)


def _kernel_kwargs(args) -> Dict[str, Any]:
    """Kernel parameters, valid for both dpcore and scikit-learn (identical conventions)."""
    if args.kernel == "poly":
        return dict(kernel="poly", gamma=args.gamma, degree=args.degree, coef0=args.coef0)
    if args.kernel == "rbf":
        return dict(kernel="rbf", gamma=args.gamma)
    return dict(kernel="linear")


def _chunked_predict(model, Z: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """KernelRidge.predict in row chunks (it materialises K(Z, X); chunking bounds its memory)."""
    return np.concatenate([model.predict(Z[i:i + chunk]) for i in range(0, Z.shape[0], chunk)])


# ------------------------------------------------------------------------------------------------
# steps
# ------------------------------------------------------------------------------------------------


def _step_kernel_baseline(args, train, test, next_seed, tqdm) -> Dict[str, Any]:
    import dpcore
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.metrics.pairwise import pairwise_kernels

    _section("1. Non-private kernel baseline (scikit-learn KernelRidge vs dpcore.kernel_predict)")
    rng = np.random.default_rng(next_seed())
    n_all = train.X.shape[0]
    n = min(args.n_train, n_all)
    idx = rng.choice(n_all, size=n, replace=False)
    X, y = train.X[idx], train.y[idx]
    m = test.X.shape[0] if args.n_test == 0 else min(args.n_test, test.X.shape[0])
    tidx = np.arange(test.X.shape[0]) if m == test.X.shape[0] else np.sort(rng.choice(test.X.shape[0], m, replace=False))
    Z, yz = test.X[tidx], test.y[tidx]
    kw = _kernel_kwargs(args)
    skw = dict(kw)  # same parameter names and conventions in scikit-learn
    print(f"kernel={args.kernel} {kw}, λ={args.lam:g}, n_train={n}, n_test={m}")

    # The Gram matrix from dpcore's engine must equal scikit-learn's (a correctness cross-check).
    k = min(n, 500)
    K_dp = np.asarray(dpcore.kernel_matrix(X[:k], X, **kw))
    K_sk = pairwise_kernels(X[:k], X, metric=skw["kernel"], filter_params=True,
                            **{a: b for a, b in skw.items() if a != "kernel"})
    gram_err = float(np.max(np.abs(K_dp - K_sk)))
    print(f"kernel_matrix ({k}x{n}) max |dpcore - sklearn| = {gram_err:.2e}")

    # learning curve over n (non-private), final point = the main model
    sizes = sorted({s for s in (n // 8, n // 4, n // 2, n) if s >= 10})
    curve: List[Dict[str, Any]] = []
    model = None
    for s in tqdm(sizes, desc="kernel ridge learning curve", unit="fit"):
        km = KernelRidge(alpha=args.lam * s, **skw)
        t0 = time.perf_counter()
        km.fit(X[:s], y[:s])
        t_fit = time.perf_counter() - t0
        mu = np.ascontiguousarray(km.dual_coef_, dtype=np.float64).ravel()
        f = np.asarray(dpcore.kernel_predict(Z, X[:s], mu, **kw))
        acc = float(np.mean(np.where(f >= 0, 1.0, -1.0) == yz))
        curve.append(dict(n=int(s), test_accuracy=acc, fit_seconds=t_fit))
        model = km
    mu = np.ascontiguousarray(model.dual_coef_, dtype=np.float64).ravel()

    t0 = time.perf_counter()
    f_dp = np.asarray(dpcore.kernel_predict(Z, X, mu, **kw))
    t_dp = time.perf_counter() - t0
    t0 = time.perf_counter()
    f_sk = _chunked_predict(model, Z)
    t_sk = time.perf_counter() - t0
    max_err = float(np.max(np.abs(f_dp - f_sk)))
    scale = float(np.max(np.abs(f_sk)))
    if not max_err <= 1e-8 * max(1.0, scale):
        raise RuntimeError(
            f"dpcore.kernel_predict disagrees with KernelRidge.predict: max abs difference "
            f"{max_err:.3e} > 1e-8 (scale {scale:.3g})"
        )
    acc = float(np.mean(np.where(f_dp >= 0, 1.0, -1.0) == yz))
    w_norm = math.sqrt(max(float(mu @ np.asarray(dpcore.kernel_predict(X, X, mu, **kw))), 0.0))
    majority = float(max(np.mean(yz > 0), np.mean(yz < 0)))
    print(_table(
        [
            ["test accuracy (sign of f)", f"{acc:.4f}", f"majority class: {majority:.4f}"],
            ["max |f_dpcore - f_sklearn|", f"{max_err:.2e}", "required <= 1e-8"],
            ["predict time dpcore.kernel_predict", f"{t_dp * 1e3:.1f} ms", f"{m}x{n}, fused, no kernel matrix"],
            ["predict time KernelRidge.predict", f"{t_sk * 1e3:.1f} ms", "chunks of 2048 rows"],
            ["speed-up (sklearn / dpcore)", f"{t_sk / max(t_dp, 1e-12):.2f}x", "one run, same machine"],
            ["||w*|| = sqrt(mu^T K mu)", f"{w_norm:.4f}", "RKHS norm of the non-private model"],
        ],
        ["quantity", "value", "note"],
    ))
    print("learning curve (non-private): " + ", ".join(f"n={c['n']}: {c['test_accuracy']:.4f}" for c in curve))
    return dict(
        kernel=kw, lam=args.lam, n_train=int(n), n_test=int(m), test_accuracy=acc,
        majority_accuracy=majority, max_abs_diff_vs_sklearn=max_err, gram_max_abs_diff=gram_err,
        w_norm=w_norm, predict_seconds_dpcore=t_dp, predict_seconds_sklearn=t_sk, learning_curve=curve,
    )


def _step_private_statistics(args, train, next_seed) -> Dict[str, Any]:
    import dpcore

    _section("2. Private statistics of the training set under a budget accountant")
    X, y = train.X, train.y
    n = X.shape[0]
    acc = dpcore.BudgetAccountant(epsilon=args.epsilon, delta=args.delta)
    eps_frac = args.epsilon / 2
    eps_mean = args.epsilon / 2
    print(f"budget (ε, δ) = ({args.epsilon:g}, {args.delta:g}); n = {n}; replace-one adjacency; "
          f"rows in the unit ball (public pre-processing)")

    true_frac = float(np.mean(y > 0))
    priv_frac = float(dpcore.laplace_mechanism(
        true_frac, 1.0 / n, eps_frac, random_state=next_seed(), accountant=acc))

    true_mean = X.mean(axis=0)
    if args.delta > 0:
        priv_mean = np.asarray(dpcore.gaussian_mechanism(
            true_mean, 2.0 / n, eps_mean, args.delta, random_state=next_seed(), accountant=acc),
            dtype=np.float64)
        mean_mech = f"Gaussian (ε={eps_mean:g}, δ={args.delta:g}, L2 sensitivity 2/n)"
    else:
        priv_mean = None
        mean_mech = "skipped (δ = 0: the Gaussian mechanism needs δ > 0)"

    refused = None
    try:
        dpcore.laplace_mechanism(true_frac, 1.0 / n, args.epsilon, random_state=next_seed(), accountant=acc)
    except dpcore.BudgetExceededError as exc:
        refused = str(exc)
    eps_left, delta_left = acc.remaining()

    rows = [["fraction >50K", "Laplace (ε=%g, sensitivity 1/n)" % eps_frac,
             f"{true_frac:.5f}", f"{priv_frac:.5f}", f"{abs(priv_frac - true_frac):.2e}"]]
    res: Dict[str, Any] = dict(n=int(n), budget=[args.epsilon, args.delta],
                               fraction_positive=dict(true=true_frac, private=priv_frac, epsilon=eps_frac))
    if priv_mean is not None:
        l2 = float(np.linalg.norm(priv_mean - true_mean))
        rows.append(["mean feature vector (d=%d)" % X.shape[1], mean_mech, f"||m||={np.linalg.norm(true_mean):.4f}",
                     f"||m~||={np.linalg.norm(priv_mean):.4f}", f"L2 {l2:.2e}"])
        res["mean_features"] = dict(true=true_mean.tolist(), private=priv_mean.tolist(), l2_error=l2,
                                    epsilon=eps_mean, delta=args.delta)
    print(_table(rows, ["statistic", "mechanism", "true", "private", "error"]))
    if priv_mean is not None:
        top = np.argsort(-true_mean)[:6]
        print(_table([[train.feature_names[j], f"{true_mean[j]:.5f}", f"{priv_mean[j]:.5f}"] for j in top],
                     ["feature (largest means)", "true mean", "private mean"]))
    print(f"over-spend attempt (ε={args.epsilon:g} more): "
          + ("refused before any computation: " + refused if refused else "NOT refused (unexpected)"))
    print(f"remaining budget: ε = {eps_left:.6g}, δ = {delta_left:.3g}; ledger: "
          + "; ".join(f"(ε={r.epsilon:g}, δ={r.delta:g})" for r in acc.log))
    res.update(remaining=[eps_left, delta_left], overspend_refused=refused is not None)
    if refused is None:
        raise RuntimeError("BudgetAccountant did not refuse an over-spend")
    return res


def _step_audit(args, train, next_seed, tqdm) -> Dict[str, Any]:
    from dpcore import audit as dp_audit
    from dpcore.mechanisms import noise
    _section("3. Empirical privacy audit of the Laplace release on a neighbouring pair")
    y = train.y
    n = y.shape[0]
    eps = args.audit_epsilon
    sens = 1.0 / n
    # neighbouring datasets: D, and D' = D with one >50K record replaced by a <=50K record
    j = int(np.flatnonzero(y > 0)[0])
    y_prime = y.copy()
    y_prime[j] = -1.0

    def frac(labels: np.ndarray) -> float:
        return float(np.mean(labels > 0))

    a, b = frac(y), frac(y_prime)
    assert abs(a - b) <= sens * (1 + 1e-12)
    scale = sens / eps
    # thresholds fixed BEFORE sampling, from public quantities only (the mechanism's scale and
    # the two inputs' true values): a grid over a ± 6 scales.
    thresholds = np.linspace(min(a, b) - 3 * scale, max(a, b) + 3 * scale, 25)

    results = {}
    for label, noise_mult in tqdm([("correct", 1.0), ("broken (half noise)", 0.5)],
                                  desc="privacy audit", unit="mechanism"):
        def sampler(labels, n_samples, random_state=None, _m=noise_mult):
            return noise.sample_laplace_mechanism(frac(labels), sens * _m, eps, n_samples,
                                                  random_state=random_state)

        res = dp_audit.audit(sampler, y, y_prime, n_samples=args.audit_samples,
                             thresholds=thresholds, alpha=1e-6, random_state=next_seed())
        results[label] = res
    lb_ok = float(results["correct"].epsilon_lower_bound)
    lb_bad = float(results["broken (half noise)"].epsilon_lower_bound)
    print(_table(
        [
            ["correct Laplace (scale 1/(nε))", f"{eps:g}", f"{lb_ok:.4f}", "PASS" if lb_ok <= eps else "FAIL"],
            ["broken copy (half the noise)", f"{eps:g} (true {2 * eps:g})", f"{lb_bad:.4f}",
             "caught" if lb_bad > eps else "not caught at this sample size"],
        ],
        ["mechanism", "claimed ε", "ε lower bound (α=1e-6)", "verdict"],
    ))
    print(f"{args.audit_samples} samples per dataset, {thresholds.size} thresholds fixed before sampling")
    if lb_ok > eps:
        raise RuntimeError(f"privacy audit failed: lower bound {lb_ok:.4f} > claimed ε {eps}")
    return dict(claimed_epsilon=eps, n_samples=int(args.audit_samples), alpha=1e-6,
                n_thresholds=int(thresholds.size), epsilon_lower_bound=lb_ok,
                broken_epsilon_lower_bound=lb_bad, broken_caught=bool(lb_bad > eps))


def _step_pinp(args, train, test, next_seed, tqdm) -> Dict[str, Any]:
    """Train dpcore.KernelSVM, then serve private predictions with PINP for several ε.

    Every ε gets a fresh PINP session on the same model and the same T test queries (each session
    is (ε, δ)-DP on its own; they are alternatives to compare, not one composed release).
    """
    import dpcore
    from dpcore.kernel_learning.pinp import PINPBudgetExhausted, pinp_calibration

    _section("4. Private interactive predictions: dpcore.KernelSVM served by PINP (Algorithm 1)")
    rng = np.random.default_rng(next_seed())
    idx = rng.choice(train.X.shape[0], size=min(args.pinp_n, train.X.shape[0]), replace=False)
    X, y = train.X[idx], train.y[idx]
    q = rng.choice(test.X.shape[0], size=min(args.pinp_queries, test.X.shape[0]), replace=False)
    Z, yz = test.X[q], test.y[q]
    kw = _kernel_kwargs(args)
    t0 = time.perf_counter()
    model = dpcore.KernelSVM(lam=args.pinp_lam, **kw).fit(X, y)
    fit_s = time.perf_counter() - t0
    f_star = model.decision_function(Z)
    acc_np = float(np.mean(np.where(f_star > 0, 1, -1) == yz))
    majority = float(max(np.mean(yz > 0), np.mean(yz < 0)))
    print(f"KernelSVM(lam={args.pinp_lam:g}, {args.kernel}) on n={len(y)}: fit {fit_s:.2f} s, "
          f"certified duality gap {model.duality_gap_:.1e} (||w - w*|| <= {model.w_error_bound_:.1e}), "
          f"||w*|| = {model.w_norm_:.3f}, accuracy on the T={len(yz)} queries {acc_np:.4f} "
          f"(majority {majority:.4f}); scikit-learn's C = 1/(λn) = {1.0 / (args.pinp_lam * len(y)):.3g}")

    rows, sessions = [], []
    for eps in tqdm(args.pinp_epsilons, desc="PINP sessions", unit="ε", leave=False):
        rec: Dict[str, Any] = dict(epsilon=eps, delta=args.pinp_delta, beta=args.pinp_beta)
        try:
            session = dpcore.PINP(model, eps, args.pinp_delta, beta=args.pinp_beta, n_queries=len(yz), data_norm=1.0,
                                  random_state=next_seed())
        except ValueError as exc:  # e.g. B < 1: the paper's scale cannot support one update
            rec.update(status=f"refused: {exc}")
            sessions.append(rec)
            rows.append([f"{eps:g}", "refused", "-", "-", "-", "-", "-", "-"])
            continue
        try:
            answers = session.predict(Z)
            status = "ok"
        except PINPBudgetExhausted as exc:
            answers, status = exc.answers, f"stopped after {len(exc.answers)} answers: {exc.reason}"
        m = len(answers)
        err = np.abs(answers - f_star[:m])
        acc = float(np.mean(np.where(answers > 0, 1, -1) == yz[:m]))
        agree = float(np.mean(np.sign(answers) == np.sign(f_star[:m])))
        rec.update(status=status, answered=m, updates=session.n_updates, B=session.B_,
                   noise_scale=session.noise_scale_, sigma=session.sigma_,
                   error_bound=session.error_bound_, theorem3_rate=session.theorem3_rate_,
                   accuracy=acc, agreement_with_nonprivate=agree,
                   max_abs_error=float(err.max()), median_abs_error=float(np.median(err)),
                   fraction_zero_answers=float(np.mean(answers == 0.0)))
        sessions.append(rec)
        rows.append([f"{eps:g}", f"{acc:.4f}", f"{agree:.3f}", f"{session.n_updates}/{session.B_}",
                     f"{session.noise_scale_:.3g}", f"{err.max():.3g}", f"{session.error_bound_:.3g}",
                     f"{rec['fraction_zero_answers']:.2f}"])
    print(_table(rows, ["ε", "PINP accuracy", "sign agreement w/ w*", "updates/B", "Laplace scale 1/ε0",
                        "max |ŷ - f*|", "error bound (1-β)", "answers = 0"]))
    print(f"non-private accuracy on the same queries: {acc_np:.4f}; majority class {majority:.4f}. "
          "Answers equal to 0 carry no information (no update was ever triggered).")

    # Where would PINP become useful? The calibration is a pure function of public quantities,
    # so the noise scale can be computed for larger n at the same λ, kernel, ε = 1.
    r2 = dpcore.feature_map_radius(1.0, n_features=X.shape[1], **kw) ** 2
    typical = float(np.median(np.abs(f_star)))
    scaling = []
    for n_big in (len(y), 30_000, 100_000, 500_000, 10**6, 10**7, 10**8):
        row = dict(n=n_big)
        for label, C in (("C=2LR/λ", None), ("C=||w*||", float(model.w_norm_))):
            try:
                cal = pinp_calibration(n=n_big, lam=args.pinp_lam, lipschitz=1.0, r_phi_sq=r2,
                                       w_error_bound=0.0, epsilon=1.0, delta=args.pinp_delta,
                                       beta=args.pinp_beta, n_queries=len(yz), norm_bound=C)
                row[label] = dict(noise_scale=cal.noise_scale, sigma=cal.sigma, B=cal.B)
            except ValueError:
                row[label] = None
        scaling.append(row)

    def fmt(c):
        return "B < 1" if c is None else f"{c['noise_scale']:.3g} (B={c['B']})"

    print(f"\nPINP noise scale 1/ε0 at ε = 1 as n grows (same λ = {args.pinp_lam:g}, kernel, T), "
          f"vs the median |f*(z)| = {typical:.3f} of the predictions:")
    print(_table([[f"{r['n']:,}", fmt(r["C=2LR/λ"]), fmt(r["C=||w*||"])] for r in scaling],
                 ["n", "public C = 2LR_φ/λ", "declared C = ||w*|| (not private)"]))
    return dict(n_train=len(y), lam=args.pinp_lam, n_queries=len(yz), fit_seconds=fit_s,
                duality_gap=model.duality_gap_, w_error_bound=model.w_error_bound_,
                w_norm=model.w_norm_, nonprivate_accuracy=acc_np, majority_accuracy=majority,
                median_abs_prediction=typical, sessions=sessions, scaling=scaling)


def _step_tddl(args, train, test, next_seed, tqdm) -> Dict[str, Any]:
    """Train dpcore.KernelSVM, then release it privately with TDDL over public test points.

    Each ε is a separate (ε, δ) release of the same model (alternatives to compare). The public
    points are T unlabelled test rows; accuracy is measured on the *other* test rows.
    """
    import dpcore

    _section("5. Semi-interactive private release: dpcore.KernelSVM released by TDDL (Algorithm 2)")
    rng = np.random.default_rng(next_seed())
    idx = rng.choice(train.X.shape[0], size=min(args.tddl_n, train.X.shape[0]), replace=False)
    X, y = train.X[idx], train.y[idx]
    perm = rng.permutation(test.X.shape[0])
    T = min(args.tddl_points, test.X.shape[0] - 1)
    Z, rest = test.X[perm[:T]], perm[T:]
    Q, yq = test.X[rest], test.y[rest]
    lam = 1.0 / (len(y) * args.tddl_C)
    kw = _kernel_kwargs(args)
    t0 = time.perf_counter()
    model = dpcore.KernelSVM(lam=lam, tol=1e-9, **kw).fit(X, y)
    fit_s = time.perf_counter() - t0
    acc_np = model.score(Q, yq)
    majority = float(max(np.mean(yq > 0), np.mean(yq < 0)))
    print(f"KernelSVM(lam=1/(n·{args.tddl_C:g}) = {lam:.3g}, {args.kernel}) on n={len(y)}: fit {fit_s:.1f} s, "
          f"certified gap {model.duality_gap_:.1e}; public points T = {T}; accuracy on the other "
          f"{len(yq)} test rows {acc_np:.4f} (majority {majority:.4f})")
    rows, releases = [], []
    for eps in tqdm(args.tddl_epsilons, desc="TDDL releases", unit="ε", leave=False):
        for noise in ("gaussian", "laplace"):
            t1 = time.perf_counter()
            rel = dpcore.TDDL(model, eps, args.delta, data_norm=1.0, noise=noise, norm_bound="private",
                              random_state=next_seed()).fit(Z)
            acc = rel.score(Q, yq)
            cal = rel.privacy_
            agree = float(np.mean(np.sign(rel.decision_function(Q)) == np.sign(model.decision_function(Q))))
            releases.append(dict(epsilon=eps, noise=noise, method=cal.noise_method, accuracy=acc,
                                 agreement_with_nonprivate=agree,
                                 noise_scale=cal.noise_scale, sensitivity=cal.sensitivity,
                                 norm_bound=rel.norm_bound_, seconds=time.perf_counter() - t1))
            rows.append([f"{eps:g}", noise, f"{acc:.4f}", f"{agree:.3f}", f"{cal.noise_scale:.3g}",
                         f"{cal.sensitivity:.3g}", f"{rel.norm_bound_:.3g}"])
    print(_table(rows, ["ε", "noise", "TDDL accuracy", "sign agreement w/ w*", "noise σ / scale",
                        "sensitivity (L2 / per point)", "norm bound C (private)"]))
    gcal = next((r for r in releases if r["noise"] == "gaussian"), None)
    print(f"non-private accuracy {acc_np:.4f}; ||w*|| = {model.w_norm_:.3f}; δ = {args.delta:g}; the norm bound "
          f"spends 10% of ε. Gaussian: one Gaussian release ({gcal['method'] if gcal else '-'}) of the T "
          "predictions with L2 sensitivity sqrt(λ_max(K_ZZ))·Δw; Laplace: per-point noise with advanced composition (the paper).")
    # persistence: the release is a public object (points, α, kernel, privacy parameters)
    path = os.path.join(args.outdir, "tddl_release.json")
    os.makedirs(args.outdir, exist_ok=True)
    rel.save(path)
    loaded = dpcore.KernelRelease.load(path)
    same = bool(np.array_equal(loaded.predict(Q), rel.predict(Q)))
    print(f"saved the last release to {path} and reloaded it: identical predictions = {same}")
    return dict(n_train=len(y), lam=lam, C=args.tddl_C, n_points=T, fit_seconds=fit_s,
                nonprivate_accuracy=acc_np, majority_accuracy=majority, w_norm=model.w_norm_,
                releases=releases, reload_identical=same)


def _step_glm(args, train, test, next_seed, tqdm) -> Dict[str, Any]:
    """Private logistic regression on the full Adult train split (Jain & Thakurta 2014).

    Output-Gauss, Objective-Gauss (Gaussian noise: dimension-independent excess risk) and Objective
    with Gamma noise (Chaudhuri et al. 2011), each a separate (ε, δ) fit; plus SimplexERM
    (entropy-regularised least squares over the signed simplex, released by sampling m indices).
    The non-private baseline is the same regularised objective solved to a certified gradient norm.
    """
    import dpcore
    from dpcore.glm._losses import make_loss
    from dpcore.glm._solver import GLMObjective, solve_smooth

    _section("6. Private GLMs: output / objective perturbation and SimplexERM (Jain & Thakurta 2014)")
    X, y, Xt, yt = train.X, train.y, test.X, test.y
    lam = args.glm_lam
    Xa = np.hstack([X, np.ones((X.shape[0], 1))])
    theta = solve_smooth(GLMObjective(Xa, y, make_loss("logistic"), lam), tol=1e-10, max_iter=5000)[0]
    acc_np = float(np.mean(np.where(Xt @ theta[:-1] + theta[-1] >= 0, 1.0, -1.0) == yt))
    print(f"non-private L2-regularised logistic regression (Λ = {lam:g}, regularised intercept), n = {len(y)}: "
          f"test accuracy {acc_np:.4f}")
    variants = [("Output-Gauss", dpcore.OutputPerturbation, "gaussian"),
                ("Objective-Gauss", dpcore.ObjectivePerturbation, "gaussian"),
                ("Objective (Gamma)", dpcore.ObjectivePerturbation, "gamma")]
    rows, fits = [], []
    for eps in tqdm(args.glm_epsilons, desc="private GLM fits", unit="ε", leave=False):
        for label, cls, noise in variants:
            t0 = time.perf_counter()
            est = cls(epsilon=eps, delta=args.delta, lam=lam, data_norm=train.data_norm, loss="logistic", noise=noise,
                      random_state=next_seed()).fit(X, y)
            acc = est.score(Xt, yt)
            pr = est.privacy_
            fits.append(dict(method=label, epsilon=eps, accuracy=acc, claimed=(pr.epsilon, pr.delta),
                             noise_scale=pr.noise_scale, seconds=time.perf_counter() - t0))
            rows.append([label, f"{eps:g}", f"{acc:.4f}", f"({pr.epsilon:g}, {pr.delta:.1e})", f"{pr.noise_scale:.3g}"])
    print(_table(rows, ["mechanism", "ε", "test accuracy", "claimed (ε, δ)", "noise scale"]))
    # SimplexERM: the ℓ∞ bound of an Adult row is 1/√14 by the public encoding (each feature in [0, 1]).
    r_inf = 1.0 / np.sqrt(14.0)
    simplex = []
    for eps in args.glm_epsilons:
        est = dpcore.SimplexERM(epsilon=eps, delta=args.delta, lam=0.05, data_norm_inf=r_inf, loss="squared",
                                task="classification", random_state=next_seed()).fit(X, y)
        simplex.append(dict(epsilon=eps, accuracy=est.score(Xt, yt), n_draws=int(est.n_draws_),
                            support=int(est.support_.size)))
    print("SimplexERM (entropy λ = 0.05, signed simplex, squared loss thresholded at 0): " + ", ".join(
        f"ε={r['epsilon']:g}: {r['accuracy']:.4f} (m={r['n_draws']})" for r in simplex))
    print(f"majority class {max(np.mean(yt > 0), np.mean(yt < 0)):.4f}; δ = {args.delta:g}; Gamma variants claim "
          "(ε, δ) because their float implementation is certified with a tiny δ (see dpcore.glm.perturbation).")
    return dict(lam=lam, nonprivate_accuracy=acc_np, fits=fits, simplex=simplex)


def _step_private_svm(args, train, test, next_seed, tqdm) -> Dict[str, Any]:
    """PrivateSVM with random Fourier features on Adult (Rubinstein et al.), one pure ε-DP fit per ε.

    The non-private reference is the same certified SVM on the same public features; the features
    (random frequencies) are public and published with the model.
    """
    import dpcore

    _section("7. PrivateSVM with random Fourier features (Rubinstein et al.)")
    n = min(args.svm_n, train.X.shape[0])
    X, y, Xt, yt = train.X[:n], train.y[:n], test.X, test.y
    kw = dict(C=args.svm_C, kernel="rbf", n_components=2 * args.svm_components, gamma=args.gamma, calibration="tight")
    rows, fits = [], []
    for eps in tqdm(args.svm_epsilons, desc="PrivateSVM fits", unit="ε", leave=False):
        t0 = time.perf_counter()
        est = dpcore.PrivateSVM(epsilon=eps, random_state=next_seed(), **kw).fit(X, y)
        pr = est.privacy_
        fits.append(dict(epsilon=eps, accuracy=est.score(Xt, yt), noise_scale=pr.release_scale,
                         sensitivity_l1=pr.sensitivity_l1, sensitivity_l1_spec=pr.sensitivity_l1_spec,
                         seconds=time.perf_counter() - t0))
        rows.append([f"{eps:g}", f"{fits[-1]['accuracy']:.4f}", f"{pr.release_scale:.3g}",
                     f"{pr.sensitivity_l1:.3g} (SPEC {pr.sensitivity_l1_spec:.3g})", f"{fits[-1]['seconds']:.2f}"])
    print(f"n = {n}, RBF γ = {args.gamma:g}, d̂ = {args.svm_components} random features (F = {2 * args.svm_components}), "
          f"C = {args.svm_C:g}·n, tight calibration (half the SPEC constant, proven in dpcore.private_svm.estimator)")
    print(_table(rows, ["ε", "test accuracy", "Laplace scale", "L1 sensitivity", "seconds"]))
    return dict(n_train=n, C=args.svm_C, n_components=2 * args.svm_components, fits=fits)


def _step_local_dp(args, train, test, next_seed, tqdm) -> Dict[str, Any]:
    """Non-interactive local DP on Adult (Zheng, Mou & Wang 2017): users privatise their own rows.

    ``ldp.simulate`` runs every user's client function (exactly the law of one device's report);
    the server sees the reports only. Each ε is a separate protocol with its own users' budget.
    """
    from dpcore import ldp

    _section("8. Local DP: each Adult user privatises their own record (Zheng, Mou & Wang 2017)")
    X, y, Xt, yt = train.X, train.y, test.X, test.y
    n, d = X.shape
    true_mean = X.mean(axis=0)
    mean_rows, logit_rows = [], []
    for eps in tqdm(args.ldp_epsilons, desc="local-DP runs", unit="ε", leave=False):
        ch = ldp.gaussian_channel(d, eps, args.delta)
        est = ldp.simulate(X, None, ch, random_state=next_seed()).mean(axis=0)
        mean_rows.append(dict(epsilon=eps, sigma=ch.sigma, l2_error=float(np.linalg.norm(est - true_mean))))
        proto = ldp.LogisticProtocol(dim=d, n_users=n, epsilon=eps, delta=args.delta)
        clf = ldp.LDPLogisticRegression(proto).fit(ldp.simulate(X, y, proto, random_state=next_seed()))
        logit_rows.append(dict(epsilon=eps, accuracy=float(np.mean(clf.predict(Xt) == yt)),
                               copies=proto.budget().n_releases))
    print(f"n = {n} users, d = {d}, δ = {args.delta:g} per user; ||true mean|| = {np.linalg.norm(true_mean):.3f}")
    print(_table([[f"{m['epsilon']:g}", f"{m['sigma']:.3g}", f"{m['l2_error']:.4f}", f"{lg['accuracy']:.4f}",
                   str(lg["copies"])] for m, lg in zip(mean_rows, logit_rows)],
                 ["ε per user", "σ per coordinate", "mean: ℓ2 error", "logistic: test accuracy", "releases/user"]))
    print(f"majority class {max(np.mean(yt > 0), np.mean(yt < 0)):.4f}. Local DP adds noise of the size of the "
          "signal to every report: useful accuracy needs many more users or a large ε (experiments/README.md).")
    return dict(n_users=n, mean=mean_rows, logistic=logit_rows)


def _plot(results: Dict[str, Any], train, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, grid = plt.subplots(2, 4, figsize=(21, 9.2))
    axes = grid[0]
    ax = axes[0]
    curve = results["kernel"]["learning_curve"]
    ax.plot([c["n"] for c in curve], [c["test_accuracy"] for c in curve], "o-", label="KernelRidge μ, dpcore predict")
    ax.axhline(results["kernel"]["majority_accuracy"], color="grey", ls="--", label="majority class")
    ax.set_xscale("log")
    ax.set_xlabel("training size n")
    ax.set_ylabel("test accuracy")
    ax.set_title("Non-private kernel baseline (Adult)")
    ax.legend(fontsize=8)

    ax = axes[1]
    mf = results["private"].get("mean_features")
    if mf is not None:
        t, p = np.asarray(mf["true"]), np.asarray(mf["private"])
        ax.scatter(t, p, s=10)
        lo, hi = min(t.min(), p.min()), max(t.max(), p.max())
        ax.plot([lo, hi], [lo, hi], color="grey", lw=1)
        ax.set_title(f"Private mean features (ε={mf['epsilon']:g}, δ={mf['delta']:g}), L2 err {mf['l2_error']:.1e}",
                     fontsize=9)
    else:
        ax.set_title("Gaussian release skipped (δ = 0)")
    ax.set_xlabel("true mean")
    ax.set_ylabel("private mean")

    ax = axes[2]
    au = results["audit"]
    bars = ax.bar(["correct", "broken\n(half noise)"], [au["epsilon_lower_bound"], au["broken_epsilon_lower_bound"]],
                  color=["tab:green", "tab:red"])
    ax.axhline(au["claimed_epsilon"], color="black", ls="--", label=f"claimed ε = {au['claimed_epsilon']:g}")
    ax.bar_label(bars, fmt="%.3f")
    ax.set_ylabel("empirical ε lower bound (Clopper–Pearson, α=1e-6)")
    ax.set_title(f"Audit of the Laplace release ({au['n_samples']} samples)")
    ax.legend(fontsize=8)

    pp = results["pinp"]
    served = [r for r in pp["sessions"] if "accuracy" in r]
    ax = grid[1][0]
    if served:
        ax.plot([r["epsilon"] for r in served], [r["accuracy"] for r in served], "o-", label="PINP (private)")
    ax.axhline(pp["nonprivate_accuracy"], color="tab:green", ls="-", label="KernelSVM (non-private)")
    ax.axhline(pp["majority_accuracy"], color="grey", ls="--", label="majority class")
    ax.set_xscale("log")
    ax.set_xlabel("ε")
    ax.set_ylabel("accuracy on the T queries")
    ax.set_title(f"PINP accuracy vs ε (Adult, n={pp['n_train']}, T={pp['n_queries']})")
    ax.legend(fontsize=8)
    ax = grid[1][1]
    if served:
        eps = [r["epsilon"] for r in served]
        ax.plot(eps, [r["max_abs_error"] for r in served], "o-", label="observed max |ŷ − f*|")
        ax.plot(eps, [r["error_bound"] for r in served], "s--", label="bound (prob. 1−β)")
        ax.plot(eps, [r["noise_scale"] for r in served], "^:", label="Laplace scale 1/ε0")
    ax.axhline(pp["median_abs_prediction"], color="grey", lw=1, label="median |f*|")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ε")
    ax.set_title("PINP error vs its bound")
    ax.legend(fontsize=8)
    ax = grid[1][2]
    for label, style in (("C=2LR/λ", "o-"), ("C=||w*||", "s--")):
        pts = [(r["n"], r[label]["noise_scale"]) for r in pp["scaling"] if r[label] is not None]
        if pts:
            ax.plot(*zip(*pts), style, label=f"noise scale, {label}")
    ax.axhline(pp["median_abs_prediction"], color="grey", lw=1, label="median |f*|")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training size n (same λ, ε = 1)")
    ax.set_title("Where PINP becomes useful")
    ax.legend(fontsize=8)
    td = results.get("tddl")
    ax = grid[1][3]
    if td:
        for noise, style in (("gaussian", "o-"), ("laplace", "s--")):
            pts = [(r["epsilon"], r["accuracy"]) for r in td["releases"] if r["noise"] == noise]
            ax.plot(*zip(*pts), style, label=f"TDDL {noise}")
        ax.axhline(td["nonprivate_accuracy"], color="tab:green", label="KernelSVM (non-private)")
        ax.axhline(td["majority_accuracy"], color="grey", ls="--", label="majority class")
        ax.set_xscale("log")
        ax.set_xlabel("ε")
        ax.set_ylabel("test accuracy")
        ax.set_title(f"TDDL accuracy vs ε (n={td['n_train']}, T={td['n_points']})")
        ax.legend(fontsize=8)
    gl = results.get("glm")
    ax = grid[0][3]
    if gl:
        for method, style in (("Output-Gauss", "o-"), ("Objective-Gauss", "s-"), ("Objective (Gamma)", "^--")):
            pts = [(r["epsilon"], r["accuracy"]) for r in gl["fits"] if r["method"] == method]
            ax.plot(*zip(*pts), style, label=method)
        ax.plot([r["epsilon"] for r in gl["simplex"]], [r["accuracy"] for r in gl["simplex"]], "d:",
                label="SimplexERM (sampling)")
        ax.axhline(gl["nonprivate_accuracy"], color="tab:green", label="logistic regression (non-private)")
        ax.axhline(results["tddl"]["majority_accuracy"], color="grey", ls="--", label="majority class")
        ax.set_xscale("log")
        ax.set_xlabel("ε")
        ax.set_ylabel("test accuracy")
        ax.set_title("Private GLMs vs ε (Adult, full train split)")
        ax.legend(fontsize=8)
    else:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------------------------------------
# entry point
# ------------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> Dict[str, Any]:
    from tqdm.auto import tqdm

    import dpcore
    from dpcore.datasets import load_adult

    t_start = time.perf_counter()
    next_seed = _seed_stream(args.seed)
    print(f"dpcore {dpcore.__version__} demo on UCI Adult"
          f" ({'seed ' + str(args.seed) if args.seed is not None else 'secure OS randomness'})")
    _section("0. Data (bundled UCI Adult, public pre-processing into the unit ball)")
    train, test = load_adult("train"), load_adult("test")
    for name, d in (("train", train), ("test", test)):
        norms = np.linalg.norm(d.X, axis=1)
        print(f"{name}: X {d.X.shape}, max ||x|| = {norms.max():.4f} (declared data_norm {d.data_norm}), "
              f"positive rate {np.mean(d.y > 0):.4f}")

    results: Dict[str, Any] = dict(dpcore_version=dpcore.__version__, seed=args.seed, quick=bool(args.quick))
    results["kernel"] = _step_kernel_baseline(args, train, test, next_seed, tqdm)
    results["private"] = _step_private_statistics(args, train, next_seed)
    results["audit"] = _step_audit(args, train, next_seed, tqdm)
    results["pinp"] = _step_pinp(args, train, test, next_seed, tqdm)
    results["tddl"] = _step_tddl(args, train, test, next_seed, tqdm)
    results["glm"] = _step_glm(args, train, test, next_seed, tqdm)
    results["private_svm"] = _step_private_svm(args, train, test, next_seed, tqdm)
    results["local_dp"] = _step_local_dp(args, train, test, next_seed, tqdm)

    os.makedirs(args.outdir, exist_ok=True)
    json_path = os.path.join(args.outdir, "results.json")
    with open(json_path, "w", encoding="utf-8") as fh:
        json.dump(results, fh, indent=2)
    _section("Summary")
    k, p, a, pp = results["kernel"], results["private"], results["audit"], results["pinp"]
    served = [r for r in pp["sessions"] if "accuracy" in r]
    print(_table(
        [
            ["non-private kernel test accuracy", f"{k['test_accuracy']:.4f}", f"n={k['n_train']}, {args.kernel}"],
            ["dpcore vs sklearn predictions", f"{k['max_abs_diff_vs_sklearn']:.1e}", "max abs diff"],
            ["private fraction >50K", f"{p['fraction_positive']['private']:.5f}", f"true {p['fraction_positive']['true']:.5f}"],
            ["budget remaining (ε, δ)", f"({p['remaining'][0]:.3g}, {p['remaining'][1]:.3g})", f"of ({args.epsilon:g}, {args.delta:g})"],
            ["audit ε lower bound", f"{a['epsilon_lower_bound']:.4f}", f"claimed ε {a['claimed_epsilon']:g}"],
            ["audit of broken copy", f"{a['broken_epsilon_lower_bound']:.4f}", "caught" if a["broken_caught"] else "not caught"],
            ["KernelSVM accuracy (PINP queries)", f"{pp['nonprivate_accuracy']:.4f}", f"n={pp['n_train']}, gap {pp['duality_gap']:.1e}"],
        ] + [
            [f"PINP accuracy, ε={r['epsilon']:g}", f"{r['accuracy']:.4f}", f"{r['updates']} updates, noise {r['noise_scale']:.3g}"]
            for r in served
        ] + [
            ["KernelSVM accuracy (TDDL test rows)", f"{results['tddl']['nonprivate_accuracy']:.4f}",
             f"n={results['tddl']['n_train']}, λ={results['tddl']['lam']:.3g}"],
        ] + [
            [f"TDDL {r['noise']} accuracy, ε={r['epsilon']:g}", f"{r['accuracy']:.4f}", f"noise {r['noise_scale']:.3g}"]
            for r in results["tddl"]["releases"]
        ] + [
            ["logistic regression, non-private", f"{results['glm']['nonprivate_accuracy']:.4f}",
             f"Λ={results['glm']['lam']:g}, full train split"],
        ] + [
            [f"{r['method']} accuracy, ε={r['epsilon']:g}", f"{r['accuracy']:.4f}", f"noise {r['noise_scale']:.3g}"]
            for r in results["glm"]["fits"]
        ] + [
            [f"SimplexERM accuracy, ε={r['epsilon']:g}", f"{r['accuracy']:.4f}", f"m={r['n_draws']} draws"]
            for r in results["glm"]["simplex"]
        ] + [
            [f"PrivateSVM accuracy, ε={r['epsilon']:g}", f"{r['accuracy']:.4f}", f"Laplace scale {r['noise_scale']:.3g}"]
            for r in results["private_svm"]["fits"]
        ] + [
            [f"local DP, ε={m['epsilon']:g} per user", f"{lg['accuracy']:.4f}", f"logistic acc.; mean ℓ2 err {m['l2_error']:.3f}"]
            for m, lg in zip(results["local_dp"]["mean"], results["local_dp"]["logistic"])
        ],
        ["result", "value", "note"],
    ))
    print(f"wrote {json_path}")
    if not args.no_plot:
        png = os.path.join(args.outdir, "demo_adult.png")
        _plot(results, train, png)
        print(f"wrote {png}")
    print(f"total time {time.perf_counter() - t_start:.1f} s")
    return results


def _missing_demo_dependencies(need_plot: bool) -> List[str]:
    import importlib.util

    wanted = {"scikit-learn": "sklearn"}
    if need_plot:
        wanted["matplotlib"] = "matplotlib"
    return [dist for dist, mod in wanted.items() if importlib.util.find_spec(mod) is None]


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the demo; returns the process exit code (0 ok, 130 interrupted)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _apply_quick(args)
    _validate(args, parser)
    missing = _missing_demo_dependencies(need_plot=not args.no_plot)
    if missing:
        print(f"error: the demo needs {', '.join(missing)}; install them with "
              f"`pip install 'dpcore[demo]'` (or pip install {' '.join(missing)})", file=sys.stderr)
        return 1
    try:
        run(args)
    except KeyboardInterrupt:
        print("\ninterrupted by user (Ctrl-C); partial results were not written", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

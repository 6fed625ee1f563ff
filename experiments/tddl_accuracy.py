#!/usr/bin/env python
"""TDDL accuracy on real data: Jain & Thakurta (2013), Fig. 2a "in spirit", on UCI Adult and Shuttle.

Everything private goes through the library: :class:`dpcore.KernelSVM` fits the non-private
``w* = Σ μ_i φ(x_i)`` (no bias, certified duality gap) and :class:`dpcore.TDDL` releases ``ŵ`` over
``T`` public points sampled from the test split. Nothing of the mechanism is re-implemented here.

Stages (all on by default; ``--stages`` selects):

``baseline``  non-private accuracy of the kernel SVM over a grid of C (validation = training rows
              not used for fitting, and test), the solver error ``sqrt(2 tol/λ)`` against the
              sensitivity ``2 L R_φ/(λ n)``, and which C the private runs use (C = 0.001 as in the
              paper; if that baseline is degenerate — it removes less than 10% of the
              majority-class error on validation — also the best C of {0.01, 0.1} by validation
              accuracy, ties within 0.1 point going to the smaller C). Also an investigation of the
              Adult baseline (C grid, scikit-learn's SVC *with* an unregularised bias, γ).
``eps``       accuracy vs ε ∈ {0.01, …, 5} for {gaussian, laplace} × {private, public} norm bound,
              per dataset × kernel × C, T = 1000, n = 30,000, 5 runs; plus the supplementary
              C ∈ {0.002, 0.01} for Adult poly-3 (``Config.extra_C``).
``T``         accuracy vs T at ε = 1 (Adult, poly-3, private norm bound).
``n``         accuracy vs n at ε = 1, T = 1000 (Adult, poly-3, λ = 1/(n C), private norm bound).

Each run draws a fresh public sample (without replacement, from the test split) and fresh noise;
accuracy is measured on the rest of the test split. All randomness is derived from one public base
seed (``--seed``), so the whole experiment is reproducible. Fitted SVMs are cached per
(dataset, kernel, n, C); TDDL caches the eigendecomposition of K_ZZ per public sample.

Outputs (``--outdir``, default ``experiments/results``): ``tddl_results.json`` (every release with
its calibration, the summaries and timings), ``tddl_results.md`` (tables) and
``tddl_accuracy_vs_eps.png``, ``tddl_accuracy_vs_T.png``, ``tddl_accuracy_vs_n.png``. ``--quick``
(tiny sizes, < 2 minutes, for smoke tests) writes ``tddl_quick_*`` instead.

Usage::

    .venv/bin/python experiments/tddl_accuracy.py --quick
    .venv/bin/python experiments/tddl_accuracy.py            # full run, 14-28 min on 2 cores
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field, replace
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

import dpcore
from dpcore.kernel_learning.svm import ConvergenceWarning

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _harness.py sits next to this script
from _harness import (  # noqa: E402
    Data, accuracy, cell, configure, derive_seed, environment, experiment_parser,
    failures_and_timings, find, fmt, fmt_pm, git_state, group_rows, load_data, lookup,
    majority_rate, mean_std, output_prefix, progress, public_sample, pyplot, run_stages,
    save_figure, write_json, write_text
)

DEFAULT_SEED = 20130616
DATASET_LABELS = {"adult": "Adult", "shuttle": "Shuttle"}
KERNEL_LABELS = {"poly": "poly-3 (γ<x,v>+1)^3, γ=1", "rbf": "RBF exp(-γ||x-v||²), γ=1"}
VARIANTS = [("gaussian", "private"), ("gaussian", "public"), ("laplace", "private"), ("laplace", "public")]


# ------------------------------------------------------------------------------------------------
# configuration
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    mode: str = "full"
    seed: int = DEFAULT_SEED
    datasets: Tuple[str, ...] = ("adult", "shuttle")
    kernels: Tuple[str, ...] = ("poly", "rbf")
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 1.0
    n: int = 30_000
    T: int = 1000
    epsilons: Tuple[float, ...] = (0.01, 0.05, 0.1, 0.5, 1.0, 2.0, 5.0)
    delta: float = 1e-6
    noises: Tuple[str, ...] = ("gaussian", "laplace")
    norms: Tuple[str, ...] = ("private", "public")
    norm_epsilon_share: float = 0.1
    runs: int = 5
    C_paper: float = 0.001
    C_alternatives: Tuple[float, ...] = (0.01, 0.1)
    # degenerate baseline: removes less than this fraction of the majority-class error on validation,
    # i.e. (acc − majority) / (1 − majority) < degenerate_margin ("≈ majority class")
    degenerate_margin: float = 0.10
    tie_margin: float = 0.001  # C alternatives within this of the best: take the smaller C
    tol_per_C: float = 1e-7  # tol = tol_per_C · C (= 1e-10 at the paper's C = 0.001)
    sweep_epsilon: float = 1.0
    T_sweep: Tuple[int, ...] = (100, 250, 500, 1000, 2000)
    n_sweep: Tuple[int, ...] = (2000, 5000, 10_000, 20_000, 30_000)
    extra_C: Tuple[float, ...] = (0.002, 0.01)  # supplementary ε sweep of sweep_dataset × sweep_kernel
    sweep_dataset: str = "adult"
    sweep_kernel: str = "poly"
    investigate_C: Tuple[float, ...] = (0.001, 0.0015, 0.002, 0.005, 0.01, 1.0 / 60.0, 0.1)
    investigate_svc_C: Tuple[float, ...] = (0.001, 0.01)
    investigate_gamma: Tuple[float, ...] = (0.5, 2.0, 4.0)
    stages: Tuple[str, ...] = ("baseline", "eps", "T", "n")

    @property
    def n_max(self) -> int:
        return max((self.n,) + tuple(self.n_sweep))

    def tol(self, C: float) -> float:
        return self.tol_per_C * C


QUICK = dict(
    mode="quick", n=2000, T=200, epsilons=(0.1, 1.0, 5.0), runs=2, T_sweep=(100, 200),
    n_sweep=(1000, 2000), extra_C=(0.01,), investigate_C=(0.001, 0.01), investigate_svc_C=(0.001,),
    investigate_gamma=(2.0,),
)


# ------------------------------------------------------------------------------------------------
# data and models
# ------------------------------------------------------------------------------------------------


def load(name: str, cfg: Config) -> Data:
    """The first ``n_max`` training rows (prefixes = nested training sets) of Adult in a fixed public
    permutation, of Shuttle in its order (``load_shuttle``'s split is already a fixed permutation); the
    other training rows are validation rows (C selection only)."""
    return load_data(name, cfg.n_max, order_seed=derive_seed(cfg.seed, "adult-train-order") if name == "adult" else None)


class ModelCache:
    """Fitted KernelSVMs per (dataset, kernel, n, C), with fit metadata."""

    def __init__(self, cfg: Config, data: Dict[str, Data]):
        self.cfg, self.data = cfg, data
        self.models: Dict[tuple, dpcore.KernelSVM] = {}
        self.meta: Dict[tuple, dict] = {}

    def get(self, dataset: str, kernel: str, n: int, C: float, *, gamma: Optional[float] = None):
        cfg = self.cfg
        gamma = cfg.gamma if gamma is None else gamma
        d = self.data[dataset]
        n = min(n, d.y.shape[0])
        key = (dataset, kernel, n, float(C), float(gamma))
        if key in self.models:
            return self.models[key], self.meta[key]
        lam = 1.0 / (n * C)
        model = dpcore.KernelSVM(lam=lam, kernel=kernel, gamma=gamma, degree=cfg.degree, coef0=cfg.coef0,
                                 tol=cfg.tol(C))
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            model.fit(d.X[:n], d.y[:n])
        fit_s = time.perf_counter() - t0
        r_phi = float(dpcore.feature_map_radius(d.data_norm, kernel=kernel, gamma=gamma, degree=cfg.degree,
                                                coef0=cfg.coef0))
        solver_err = math.sqrt(2.0 * cfg.tol(C) / lam)
        sens = 2.0 * 1.0 * r_phi / (lam * n)
        meta = dict(
            dataset=dataset, kernel=kernel, gamma=gamma, n=n, C=float(C), lam=lam, tol=cfg.tol(C),
            fit_seconds=fit_s, n_support=int(model.support_.shape[0]), w_norm=float(model.w_norm_),
            duality_gap=float(model.duality_gap_), converged=bool(model.converged_),
            w_error_certified=float(model.w_error_bound_), solver_error_public=solver_err,
            r_phi=r_phi, sensitivity_w=sens, solver_error_over_sensitivity=solver_err / sens,
            warnings=[str(w.message) for w in caught],
            val_acc=accuracy(model.decision_function(d.X_val), d.y_val) if d.y_val.size else float("nan"),
            val_majority=majority_rate(d.y_val) if d.y_val.size else float("nan"),
            test_acc=accuracy(model.decision_function(d.X_test), d.y_test),
            test_majority=majority_rate(d.y_test),
        )
        self.models[key], self.meta[key] = model, meta
        return model, meta


def public_split(d: Data, T: int, run: int, cfg: Config):
    """``T`` public points sampled without replacement from the test split; the rest is for scoring."""
    pub, rest = public_sample(d.y_test.shape[0], T, derive_seed(cfg.seed, d.name, "public-sample", T, run))
    return d.X_test[pub], d.X_test[rest], d.y_test[rest]


# ------------------------------------------------------------------------------------------------
# one release
# ------------------------------------------------------------------------------------------------


def release(model, Z, Q, yQ, dec_Q, *, eps: float, noise: str, norm: str, seed: int, cfg: Config,
            data_norm: float) -> dict:
    t0 = time.perf_counter()
    tddl = dpcore.TDDL(model, eps, cfg.delta, data_norm=data_norm, noise=noise, norm_bound=norm,
                       norm_epsilon_share=cfg.norm_epsilon_share, random_state=seed)
    tddl.fit(Z)
    fit_s = time.perf_counter() - t0
    f = tddl.decision_function(Q)
    cal = tddl.privacy_
    info = tddl.lstsq_info_
    return dict(
        accuracy=accuracy(f, yQ),
        agreement=float(np.mean((f > 0) == (dec_Q > 0))),  # same label as the non-private model
        noise_scale=cal.noise_scale, sensitivity=cal.sensitivity, weight_sensitivity=cal.weight_sensitivity,
        w_error_bound=cal.w_error_bound, lambda_max_upper=cal.lambda_max_upper,
        epsilon_predictions=cal.epsilon_predictions, epsilon_per_point=cal.epsilon_per_point,
        noise_method=cal.noise_method, norm_bound=float(tddl.norm_bound_),
        norm_bound_public=cal.norm_bound_public, norm_noise_scale=cal.norm_noise_scale,
        release_norm=float(info["norm"]), rho=float(info["rho"]), constrained=bool(info["constrained"]),
        rank=int(info["rank"]), seconds=fit_s,
    )


# ------------------------------------------------------------------------------------------------
# experiment state (results accumulate here; written even when interrupted)
# ------------------------------------------------------------------------------------------------


@dataclass
class State:
    cfg: Config
    records: List[dict] = field(default_factory=list)  # one per release
    runs: List[dict] = field(default_factory=list)  # one per (stage, model, public sample)
    selection: Dict[str, List[float]] = field(default_factory=dict)
    investigation: List[dict] = field(default_factory=list)
    timings: Dict[str, float] = field(default_factory=dict)
    interrupted: bool = False
    git: dict = field(default_factory=dict)  # source tree at the start of the run


def run_releases(state: State, cache: ModelCache, data: Dict[str, Data], stage: str,
                 jobs: Sequence[Tuple[str, str, int, float, int]], epsilons: Sequence[float],
                 variants: Sequence[Tuple[str, str]], bar) -> None:
    """``jobs``: (dataset, kernel, n, C, T); every job runs ``cfg.runs`` public samples × ε × variants."""
    cfg = state.cfg
    for dataset, kernel, n, C, T in jobs:
        d = data[dataset]
        model, meta = cache.get(dataset, kernel, n, C)
        for run in range(cfg.runs):
            Z, Q, yQ = public_split(d, T, run, cfg)
            dec_Q = model.decision_function(Q)
            dec_Z = model.decision_function(Z)
            base = dict(stage=stage, dataset=dataset, kernel=kernel, n=meta["n"], C=C, lam=meta["lam"], T=T,
                        run=run)
            state.runs.append(dict(base, nonprivate_accuracy=accuracy(dec_Q, yQ), majority=majority_rate(yQ),
                                   pred_rms_Z=float(np.sqrt(np.mean(dec_Z ** 2))), n_scored=int(yQ.shape[0])))
            for eps in epsilons:
                for noise, norm in variants:
                    bar.set_postfix_str(f"{dataset} {kernel} n={meta['n']} C={C:g} T={T} run={run} "
                                        f"ε={eps:g} {noise}/{norm}", refresh=False)
                    seed = derive_seed(cfg.seed, stage, dataset, kernel, meta["n"], C, T, run, eps, noise, norm)
                    try:
                        rec = release(model, Z, Q, yQ, dec_Q, eps=eps, noise=noise, norm=norm, seed=seed,
                                      cfg=cfg, data_norm=d.data_norm)
                    except ValueError as exc:  # e.g. a model whose certificate misses its tol
                        rec = dict(error=str(exc))
                    state.records.append(dict(base, epsilon=eps, noise=noise, norm=norm, seed=seed, **rec))
                    bar.update(1)


# ------------------------------------------------------------------------------------------------
# stages
# ------------------------------------------------------------------------------------------------


def stage_baseline(state: State, cache: ModelCache, data: Dict[str, Data]) -> None:
    """Fit the C grid, decide the C values of the private runs, investigate the Adult baseline."""
    cfg = state.cfg
    grid = (cfg.C_paper,) + tuple(cfg.C_alternatives)
    todo = [(ds, k, C) for ds in cfg.datasets for k in cfg.kernels for C in grid]
    for ds, k, C in progress(todo, desc="baseline SVM fits", unit="fit"):
        cache.get(ds, k, cfg.n, C)
    for ds in cfg.datasets:
        for k in cfg.kernels:
            state.selection[f"{ds}/{k}"] = select_C(cfg, cache, ds, k)
    if "adult" in cfg.datasets:
        investigate_adult(state, cache, data["adult"])


def is_degenerate(acc: float, majority: float, cfg: Config) -> bool:
    """"≈ majority class": the model removes less than ``degenerate_margin`` of the majority-class error."""
    return (acc - majority) / max(1.0 - majority, 1e-12) < cfg.degenerate_margin


def select_C(cfg: Config, cache: ModelCache, dataset: str, kernel: str) -> List[float]:
    _, paper = cache.get(dataset, kernel, cfg.n, cfg.C_paper)
    if not is_degenerate(paper["val_acc"], paper["val_majority"], cfg):
        return [cfg.C_paper]
    alts = [(C, cache.get(dataset, kernel, cfg.n, C)[1]["val_acc"]) for C in cfg.C_alternatives]
    best = max(acc for _, acc in alts)
    chosen = min(C for C, acc in alts if acc >= best - cfg.tie_margin)
    return [cfg.C_paper, chosen]


def investigate_adult(state: State, cache: ModelCache, d: Data) -> None:
    """Why is the Adult baseline at C = 0.001 so weak? C grid, an unregularised bias, γ."""
    cfg = state.cfg
    items = [("dpcore", C, cfg.gamma) for C in cfg.investigate_C]
    items += [("dpcore", cfg.C_paper, g) for g in cfg.investigate_gamma]
    items += [("sklearn-SVC", C, cfg.gamma) for C in cfg.investigate_svc_C]
    n = min(cfg.n, d.y.shape[0])
    for what, C, g in progress(items, desc="Adult baseline investigation", unit="fit"):
        row = dict(solver=what, kernel="poly", n=n, C=C, lam=1.0 / (n * C), gamma=g)
        if what == "dpcore":
            _, meta = cache.get("adult", "poly", n, C, gamma=g)
            row.update(bias=False, test_acc=meta["test_acc"], val_acc=meta["val_acc"],
                       n_support=meta["n_support"], seconds=meta["fit_seconds"])
        else:
            try:
                from sklearn.svm import SVC
            except ImportError:  # pragma: no cover - scikit-learn is a test/demo extra
                row.update(bias=True, error="scikit-learn not installed")
                state.investigation.append(row)
                continue
            t0 = time.perf_counter()
            svc = SVC(C=C, kernel="poly", degree=cfg.degree, gamma=g, coef0=cfg.coef0, tol=1e-3,
                      cache_size=2000).fit(d.X[:n], d.y[:n])
            row.update(bias=True, intercept=float(svc.intercept_[0]),
                       test_acc=accuracy(svc.decision_function(d.X_test), d.y_test),
                       val_acc=accuracy(svc.decision_function(d.X_val), d.y_val) if d.y_val.size else None,
                       n_support=int(svc.support_.shape[0]), seconds=time.perf_counter() - t0)
        state.investigation.append(row)


def selected_Cs(state: State, dataset: str, kernel: str) -> List[float]:
    key = f"{dataset}/{kernel}"
    if key not in state.selection:
        cfg = state.cfg
        state.selection[key] = [cfg.C_paper]
    return state.selection[key]


def eps_Cs(state: State, dataset: str, kernel: str) -> List[float]:
    """C values of the ε sweep: the selected ones, plus the supplementary ones for the sweep pair."""
    cfg = state.cfg
    Cs = list(state.selection.get(f"{dataset}/{kernel}", []))
    if (dataset, kernel) == (cfg.sweep_dataset, cfg.sweep_kernel):
        Cs += [C for C in cfg.extra_C if C not in Cs]
    return Cs


def stage_eps(state: State, cache: ModelCache, data: Dict[str, Data]) -> None:
    cfg = state.cfg
    jobs = [(ds, k, cfg.n, C, cfg.T) for ds in cfg.datasets for k in cfg.kernels for C in selected_Cs(state, ds, k)]
    if cfg.sweep_dataset in cfg.datasets and cfg.sweep_kernel in cfg.kernels:
        chosen = selected_Cs(state, cfg.sweep_dataset, cfg.sweep_kernel)
        jobs += [(cfg.sweep_dataset, cfg.sweep_kernel, cfg.n, C, cfg.T) for C in cfg.extra_C if C not in chosen]
    variants = [(a, b) for a, b in VARIANTS if a in cfg.noises and b in cfg.norms]
    with progress(total=len(jobs) * cfg.runs * len(cfg.epsilons) * len(variants), desc="accuracy vs ε", unit="release") as bar:
        run_releases(state, cache, data, "eps", jobs, cfg.epsilons, variants, bar)


def stage_T(state: State, cache: ModelCache, data: Dict[str, Data]) -> None:
    cfg = state.cfg
    ds, k = cfg.sweep_dataset, cfg.sweep_kernel
    jobs = [(ds, k, cfg.n, C, T) for C in selected_Cs(state, ds, k) for T in cfg.T_sweep]
    variants = [(noise, "private") for noise in cfg.noises]
    with progress(total=len(jobs) * cfg.runs * len(variants), desc="accuracy vs T", unit="release") as bar:
        run_releases(state, cache, data, "T", jobs, (cfg.sweep_epsilon,), variants, bar)


def stage_n(state: State, cache: ModelCache, data: Dict[str, Data]) -> None:
    cfg = state.cfg
    ds, k = cfg.sweep_dataset, cfg.sweep_kernel
    jobs = [(ds, k, n, C, cfg.T) for C in selected_Cs(state, ds, k) for n in cfg.n_sweep]
    variants = [(noise, "private") for noise in cfg.noises]
    with progress(total=len(jobs) * cfg.runs * len(variants), desc="accuracy vs n", unit="release") as bar:
        run_releases(state, cache, data, "n", jobs, (cfg.sweep_epsilon,), variants, bar)


# ------------------------------------------------------------------------------------------------
# summaries, tables, plots
# ------------------------------------------------------------------------------------------------


def summarise(state: State) -> dict:
    """Mean ± std (ddof=1, over runs) per stage × dataset × kernel × n × C × T × ε × noise × norm."""
    base = dict(group_rows(state.runs, lambda r: (r["stage"], r["dataset"], r["kernel"], r["n"], r["C"], r["T"])))
    rows = []
    for key, recs in group_rows([r for r in state.records if "error" not in r],
                                lambda r: (r["stage"], r["dataset"], r["kernel"], r["n"], r["C"], r["T"], r["epsilon"],
                                           r["noise"], r["norm"])):
        stage, ds, k, n, C, T, eps, noise, norm = key
        b = base[(stage, ds, k, n, C, T)]
        acc_m, acc_s = mean_std([r["accuracy"] for r in recs])
        agr_m, agr_s = mean_std([r["agreement"] for r in recs])
        np_m, np_s = mean_std([r["nonprivate_accuracy"] for r in b])
        row = dict(stage=stage, dataset=ds, kernel=k, n=n, C=C, T=T, epsilon=eps, noise=noise, norm=norm,
                   runs=len(recs), accuracy_mean=acc_m, accuracy_std=acc_s, agreement_mean=agr_m,
                   agreement_std=agr_s, nonprivate_mean=np_m, nonprivate_std=np_s,
                   majority_mean=mean_std([r["majority"] for r in b])[0],
                   pred_rms_Z=mean_std([r["pred_rms_Z"] for r in b])[0])
        for name in ("noise_scale", "sensitivity", "weight_sensitivity", "w_error_bound", "lambda_max_upper",
                     "norm_bound", "norm_bound_public", "release_norm", "rho", "seconds"):
            row[name + "_mean"] = mean_std([r[name] for r in recs])[0]
        rows.append(row)
    return dict(rows=rows, failures=[r for r in state.records if "error" in r])


def goal_check(state: State, summary: dict) -> List[dict]:
    """The issue's target: Gaussian, private norm bound, ε = 1, Adult, n = 30,000 within 2.5 points."""
    cfg = state.cfg
    out = []
    for kernel in cfg.kernels:
        for C in eps_Cs(state, "adult", kernel):
            rows = lookup(summary["rows"], stage="eps", dataset="adult", kernel=kernel, n=min(cfg.n, 30_000), C=C,
                           epsilon=1.0, noise="gaussian", norm="private")
            if not rows:
                continue
            r = rows[0]
            gap = r["nonprivate_mean"] - r["accuracy_mean"]
            out.append(dict(kernel=kernel, C=C, n=r["n"], private=r["accuracy_mean"], private_std=r["accuracy_std"],
                            nonprivate=r["nonprivate_mean"], majority=r["majority_mean"], gap_points=100 * gap,
                            within_2_5_points=bool(gap <= 0.025),
                            degenerate_baseline=is_degenerate(r["nonprivate_mean"], r["majority_mean"], cfg),
                            private_minus_majority_points=100 * (r["accuracy_mean"] - r["majority_mean"])))
    return out


def markdown(state: State, cache: ModelCache, summary: dict, goal: List[dict], total_s: float) -> str:
    cfg = state.cfg
    L = []
    L.append(f"# TDDL accuracy ({cfg.mode} run)\n")
    L.append(f"dpcore {dpcore.__version__}; base seed {cfg.seed}; δ = {cfg.delta:g}; runs = {cfg.runs} per cell "
             f"(mean ± std over runs, ddof = 1, in %); accuracy on the test split minus the T public points. "
             f"Kernels: {', '.join(KERNEL_LABELS[k] for k in cfg.kernels)}; λ = 1/(n·C); KernelSVM tol = "
             f"{cfg.tol_per_C:g}·C. Private norm bound: {cfg.norm_epsilon_share:g}·ε spent on ||w||. "
             f"Wall-clock: {total_s / 60:.1f} min"
             + (" (INTERRUPTED: partial results)" if state.interrupted else "") + ".\n")
    # -- baseline
    metas = sorted(cache.meta.values(), key=lambda m: (m["dataset"], m["kernel"], m["gamma"], m["n"], m["C"]))
    if metas:
        L.append("## Non-private kernel SVM (no bias)\n")
        L.append("| dataset | kernel | γ | n | C | λ | val acc | val majority | test acc | test majority | #SV | "
                 "‖w‖ | tol | solver err √(2tol/λ) | Δw = 2LR_φ/(λn) | err/Δw | fit s |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for m in metas:
            L.append(f"| {m['dataset']} | {m['kernel']} | {m['gamma']:g} | {m['n']} | {m['C']:.4g} | {m['lam']:.3g} | "
                     f"{100 * m['val_acc']:.2f} | {100 * m['val_majority']:.2f} | {100 * m['test_acc']:.2f} | "
                     f"{100 * m['test_majority']:.2f} | {m['n_support']} | {m['w_norm']:.3f} | {m['tol']:.0e} | "
                     f"{m['solver_error_public']:.2e} | {m['sensitivity_w']:.2e} | "
                     f"{m['solver_error_over_sensitivity']:.3f} | {m['fit_seconds']:.1f} |")
        L.append("")
    if state.selection:
        L.append("C values of the private runs (C = 0.001 as in the paper; plus the best of "
                 f"{list(cfg.C_alternatives)} on validation when the C = 0.001 baseline is degenerate, i.e. "
                 f"removes less than {100 * cfg.degenerate_margin:g}% of the majority-class error on validation; "
                 f"ties within {100 * cfg.tie_margin:g} point go to the smaller C):\n")
        for key, Cs in state.selection.items():
            L.append(f"- {key}: C ∈ {{{', '.join(f'{C:g}' for C in Cs)}}}")
        if cfg.extra_C and "eps" in cfg.stages:
            L.append(f"- supplementary ε sweep for {cfg.sweep_dataset}/{cfg.sweep_kernel}: C ∈ "
                     f"{{{', '.join(f'{C:g}' for C in cfg.extra_C)}}}: between the paper's C and the selected one (noise ∝ C)")
        L.append("")
    if state.investigation:
        L.append("## Adult baseline investigation (poly-3, test accuracy)\n")
        L.append("| solver | bias | γ | n | C | λ | val acc | test acc | #SV | s |")
        L.append("|---|---|---|---|---|---|---|---|---|---|")
        for r in state.investigation:
            if "error" in r:
                L.append(f"| {r['solver']} | yes | {r['gamma']:g} | {r['n']} | {r['C']:.4g} | {r['lam']:.3g} | "
                         f"{r['error']} | | | |")
                continue
            va = "—" if r.get("val_acc") is None else f"{100 * r['val_acc']:.2f}"
            L.append(f"| {r['solver']} | {'yes' if r['bias'] else 'no'} | {r['gamma']:g} | {r['n']} | {r['C']:.4g} | "
                     f"{r['lam']:.3g} | {va} | {100 * r['test_acc']:.2f} | {r['n_support']} | {r['seconds']:.0f} |")
        L.append("")
    rows = summary["rows"]
    # -- ε sweep
    eps_rows = lookup(rows, stage="eps")
    if eps_rows:
        L.append(f"## Accuracy vs ε (n = {cfg.n:,} or all of train, T = {cfg.T}; accuracy in %)\n")
        for ds in cfg.datasets:
            for k in cfg.kernels:
                for C in eps_Cs(state, ds, k):
                    panel = lookup(eps_rows, dataset=ds, kernel=k, C=C)
                    if not panel:
                        continue
                    r0 = panel[0]
                    L.append(f"### {DATASET_LABELS[ds]}, {KERNEL_LABELS[k]}, C = {C:g} (λ = {1 / (r0['n'] * C):.3g}, "
                             f"n = {r0['n']:,})\n")
                    L.append(f"non-private {cell(r0, 'nonprivate')}, majority class "
                             f"{100 * r0['majority_mean']:.1f}, RMS of w*'s predictions on Z {r0['pred_rms_Z']:.3f}\n")
                    L.append("| noise / norm bound | " + " | ".join(f"ε={e:g}" for e in cfg.epsilons) + " |")
                    L.append("|---|" + "---|" * len(cfg.epsilons))
                    for noise, norm in VARIANTS:
                        cells = []
                        for e in cfg.epsilons:
                            cells.append(cell(find(panel, epsilon=e, noise=noise, norm=norm), "accuracy"))
                        L.append(f"| {noise} / {norm} | " + " | ".join(cells) + " |")
                    L.append("")
                    L.append("Noise scale per coordinate (Gaussian σ or Laplace ν) and mean norm bound C used:\n")
                    L.append("| noise / norm bound | " + " | ".join(f"ε={e:g}" for e in cfg.epsilons) + " |")
                    L.append("|---|" + "---|" * len(cfg.epsilons))
                    for noise, norm in VARIANTS:
                        cells = []
                        for e in cfg.epsilons:
                            rr = lookup(panel, epsilon=e, noise=noise, norm=norm)
                            cells.append(f"{rr[0]['noise_scale_mean']:.3g} / C={rr[0]['norm_bound_mean']:.3g}"
                                         if rr else "—")
                        L.append(f"| {noise} / {norm} | " + " | ".join(cells) + " |")
                    L.append("")
        L.append(f"### Calibration at ε = {cfg.sweep_epsilon:g} (mean over runs)\n")
        L.append("| dataset | kernel | C | noise / norm | Δw (incl. 2·err) | solver err | sensitivity | "
                 "λ_max upper (K_ZZ) | noise scale | RMS w*(Z) | norm bound C | public C | ‖ŵ‖ | agreement with w* |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in lookup(eps_rows, epsilon=cfg.sweep_epsilon):
            L.append(f"| {r['dataset']} | {r['kernel']} | {r['C']:g} | {r['noise']} / {r['norm']} | "
                     f"{r['weight_sensitivity_mean']:.3e} | {r['w_error_bound_mean']:.2e} | {r['sensitivity_mean']:.3g} | "
                     f"{fmt(r['lambda_max_upper_mean'], '.4g')} | {r['noise_scale_mean']:.3g} | {r['pred_rms_Z']:.3f} | "
                     f"{r['norm_bound_mean']:.3f} | {r['norm_bound_public_mean']:.3f} | {r['release_norm_mean']:.3f} | "
                     f"{cell(r, 'agreement')} |")
        L.append("")
    # -- T and n sweeps
    for stage, var, label in (("T", "T", "T"), ("n", "n", "n")):
        srows = lookup(rows, stage=stage)
        if not srows:
            continue
        values = sorted({r[var] for r in srows})
        other = f"n = {srows[0]['n']:,}" if stage == "T" else f"T = {srows[0]['T']}"
        L.append(f"## Accuracy vs {label} ({DATASET_LABELS[cfg.sweep_dataset]}, {KERNEL_LABELS[cfg.sweep_kernel]}, "
                 f"ε = {cfg.sweep_epsilon:g}, private norm bound, {other if stage == 'T' else other}; %)\n")
        L.append("| C | row | " + " | ".join(f"{label}={v:,}" for v in values) + " |")
        L.append("|---|---|" + "---|" * len(values))
        for C in sorted({r["C"] for r in srows}):
            for noise in cfg.noises:
                cells = []
                for v in values:
                    cells.append(cell(find(srows, C=C, noise=noise, **{var: v}), "accuracy"))
                L.append(f"| {C:g} | {noise} | " + " | ".join(cells) + " |")
            for name, key in (("non-private", "nonprivate"), ("σ or ν (gaussian / laplace)", None),
                              ("majority", "majority")):
                cells = []
                for v in values:
                    rr = lookup(srows, C=C, **{var: v})
                    if not rr:
                        cells.append("—")
                    elif key == "nonprivate":
                        cells.append(cell(rr[0], "nonprivate"))
                    elif key == "majority":
                        cells.append(f"{100 * rr[0]['majority_mean']:.1f}")
                    else:
                        g = [x for x in rr if x["noise"] == "gaussian"]
                        l = [x for x in rr if x["noise"] == "laplace"]
                        cells.append(f"{fmt(g[0]['noise_scale_mean'] if g else None)} / "
                                     f"{fmt(l[0]['noise_scale_mean'] if l else None)}")
                L.append(f"| {C:g} | {name} | " + " | ".join(cells) + " |")
        L.append("")
    if goal:
        L.append("## Goal check: Gaussian, private norm bound, ε = 1, Adult, within 2.5 points of non-private?\n")
        L.append("| kernel | C | n | private | non-private | majority | gap (points) | within 2.5? | "
                 f"baseline degenerate (< {100 * cfg.degenerate_margin:g}% of the majority error removed)? |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        for g in goal:
            L.append(f"| {g['kernel']} | {g['C']:g} | {g['n']:,} | {fmt_pm(g['private'], g['private_std'], scale=100)} | "
                     f"{100 * g['nonprivate']:.1f} | {100 * g['majority']:.1f} | {g['gap_points']:.1f} | "
                     f"{'yes' if g['within_2_5_points'] else 'no'} | "
                     f"{'yes (the check is vacuous)' if g['degenerate_baseline'] else 'no'} |")
        L.append("")
    L += failures_and_timings("Refused releases", summary["failures"],
                              lambda r: f"{r['dataset']} {r['kernel']} n={r['n']} C={r['C']:g}", state.timings)
    return "\n".join(L)


def _ylim(ax, values: Sequence[float]) -> None:
    """Honest y-range: all points and error bars, at least 10 points wide, inside [0, 100]."""
    v = [x for x in values if x is not None and math.isfinite(x)]
    if not v:
        return
    lo, hi = min(v) - 2.0, max(v) + 2.0
    if hi - lo < 10.0:
        mid = 0.5 * (lo + hi)
        lo, hi = mid - 5.0, mid + 5.0
    ax.set_ylim(max(lo, 0.0), min(hi, 100.5))


def plots(state: State, summary: dict, prefix: str) -> List[str]:
    plt = pyplot()
    import matplotlib.ticker

    cfg = state.cfg
    rows = summary["rows"]
    written = []
    style = {("gaussian", "private"): ("C0", "o", "-"), ("gaussian", "public"): ("C0", "s", "--"),
             ("laplace", "private"): ("C3", "^", "-"), ("laplace", "public"): ("C3", "v", "--")}
    # -- accuracy vs ε
    panels = [(ds, C, k) for ds in cfg.datasets for k in cfg.kernels for C in eps_Cs(state, ds, k)
              if lookup(rows, stage="eps", dataset=ds, kernel=k, C=C)]
    if panels:
        row_keys = sorted({(ds, eps_Cs(state, ds, k).index(C)) for ds, C, k in panels},
                          key=lambda x: (cfg.datasets.index(x[0]), x[1]))
        nrows, ncols = len(row_keys), len(cfg.kernels)
        fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 3.6 * nrows), squeeze=False)
        for ax in axes.ravel():
            ax.set_visible(False)
        for ds, C, k in panels:
            i = row_keys.index((ds, eps_Cs(state, ds, k).index(C)))
            ax = axes[i, cfg.kernels.index(k)]
            ax.set_visible(True)
            panel = lookup(rows, stage="eps", dataset=ds, kernel=k, C=C)
            _ylim(ax, [100 * (r["accuracy_mean"] + sgn * r["accuracy_std"]) for r in panel for sgn in (-1, 1)]
                  + [100 * panel[0]["nonprivate_mean"], 100 * panel[0]["majority_mean"]])
            for noise, norm in VARIANTS:
                rr = sorted(lookup(panel, noise=noise, norm=norm), key=lambda r: r["epsilon"])
                if not rr:
                    continue
                c, mk, ls = style[(noise, norm)]
                ax.errorbar([r["epsilon"] for r in rr], [100 * r["accuracy_mean"] for r in rr],
                            yerr=[100 * r["accuracy_std"] for r in rr], color=c, marker=mk, ls=ls, ms=4, capsize=2,
                            label=f"TDDL {noise}, {norm} ‖w‖ bound")
            ax.axhline(100 * panel[0]["nonprivate_mean"], color="k", lw=1.2, label="non-private SVM")
            ax.axhline(100 * panel[0]["majority_mean"], color="gray", lw=1, ls=":", label="majority class")
            ax.set_xscale("log")
            ax.set_xlabel("ε  (δ = 1e-6)")
            ax.set_ylabel("test accuracy (%)")
            ax.set_title(f"{DATASET_LABELS[ds]}, {k}, C={C:g}, n={panel[0]['n']:,}, T={panel[0]['T']}", fontsize=9)
            ax.grid(alpha=0.3)
        handles, labels = next(ax for ax in axes.ravel() if ax.get_visible()).get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8)
        written.append(save_figure(fig, f"{prefix}_accuracy_vs_eps.png", dpi=120,
                                   rect=(0, 0.75 / (3.6 * nrows), 1, 1)))  # ~0.75 inch for the legend
    # -- T and n sweeps
    for stage, var, xlabel in (("T", "T", "number of public points T"), ("n", "n", "training set size n")):
        srows = lookup(rows, stage=stage)
        if not srows:
            continue
        Cs = sorted({r["C"] for r in srows})
        fig, axes = plt.subplots(1, len(Cs), figsize=(5.2 * len(Cs), 3.8), squeeze=False)
        for ax, C in zip(axes[0], Cs):
            cc = lookup(srows, C=C)
            _ylim(ax, [100 * (r["accuracy_mean"] + sgn * r["accuracy_std"]) for r in cc for sgn in (-1, 1)]
                  + [100 * r[k] for r in cc for k in ("nonprivate_mean", "majority_mean")])
            for noise in cfg.noises:
                rr = sorted(lookup(cc, noise=noise), key=lambda r: r[var])
                c, mk, ls = style[(noise, "private")]
                ax.errorbar([r[var] for r in rr], [100 * r["accuracy_mean"] for r in rr],
                            yerr=[100 * r["accuracy_std"] for r in rr], color=c, marker=mk, ls=ls, ms=4, capsize=2,
                            label=f"TDDL {noise}, private ‖w‖ bound")
            g = sorted(lookup(cc, noise=cfg.noises[0]), key=lambda r: r[var])
            ax.plot([r[var] for r in g], [100 * r["nonprivate_mean"] for r in g], "k-", lw=1.2, label="non-private SVM")
            ax.plot([r[var] for r in g], [100 * r["majority_mean"] for r in g], color="gray", ls=":", label="majority")
            ax.set_xscale("log")
            ticks = sorted({r[var] for r in cc})
            ax.set_xticks(ticks)
            ax.set_xticklabels([f"{t:,}" for t in ticks], fontsize=8)
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_xlabel(xlabel)
            ax.set_ylabel("test accuracy (%)")
            fixed = f"n={g[0]['n']:,}" if stage == "T" else f"T={g[0]['T']}"
            ax.set_title(f"{DATASET_LABELS[cfg.sweep_dataset]}, {cfg.sweep_kernel}, C={C:g}, ε={cfg.sweep_epsilon:g}, "
                         f"{fixed}", fontsize=9)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        written.append(save_figure(fig, f"{prefix}_accuracy_vs_{stage}.png", dpi=120))
    return written


def write_outputs(state: State, cache: ModelCache, outdir: str, total_s: float) -> List[str]:
    prefix = output_prefix(outdir, "tddl", state.cfg.mode == "quick")
    summary = summarise(state)
    goal = goal_check(state, summary)
    doc = dict(
        config=asdict(state.cfg), interrupted=state.interrupted, total_seconds=total_s, timings=state.timings,
        environment=environment(state.git), models=list(cache.meta.values()), selection=state.selection,
        investigation=state.investigation, goal_check=goal, summary=summary["rows"], runs=state.runs,
        releases=state.records,
    )
    return [write_json(prefix + "_results.json", doc),
            write_text(prefix + "_results.md", markdown(state, cache, summary, goal, total_s))] + plots(state, summary, prefix)


# ------------------------------------------------------------------------------------------------
# main
# ------------------------------------------------------------------------------------------------


def render(path: str, outdir: str) -> int:
    """Re-create the markdown and the plots from a saved results file."""
    with open(path) as fh:
        doc = json.load(fh)
    conf = {k: tuple(v) if isinstance(v, list) else v for k, v in doc["config"].items()}
    state = State(Config(**conf), records=doc["releases"], runs=doc["runs"], selection=doc["selection"],
                  investigation=doc["investigation"], timings=doc["timings"], interrupted=doc["interrupted"])

    class _Saved:
        meta = {i: m for i, m in enumerate(doc["models"])}

    prefix = output_prefix(outdir, "tddl", state.cfg.mode == "quick")
    summary = summarise(state)
    paths = [write_text(prefix + "_results.md", markdown(state, _Saved, summary, goal_check(state, summary),
                                                          doc["total_seconds"]))]
    paths += plots(state, summary, prefix)
    print("re-rendered:\n  " + "\n  ".join(paths))
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = experiment_parser(__doc__, DEFAULT_SEED, quick="tiny sizes (n=2000, T=200, 3 ε, 2 runs): smoke test, < 2 min",
                             stages=("baseline", "eps", "T", "n"), datasets=tuple(DATASET_LABELS),
                             render="tddl_*results.json").parse_args(argv)
    if args.render:
        return render(args.render, args.outdir)
    cfg = configure(Config, args, QUICK, min_runs=1)
    if cfg.sweep_dataset not in cfg.datasets:
        cfg = replace(cfg, stages=tuple(s for s in cfg.stages if s not in ("T", "n")))

    t_start = time.perf_counter()
    state = State(cfg, git=git_state())
    data = {name: load(name, cfg) for name in cfg.datasets}
    cache = ModelCache(cfg, data)
    stage_fns = dict(baseline=stage_baseline, eps=stage_eps, T=stage_T, n=stage_n)
    state.interrupted = run_stages([(name, lambda fn=stage_fns[name]: fn(state, cache, data))
                                    for name in ("baseline", "eps", "T", "n") if name in cfg.stages], state.timings)
    total = time.perf_counter() - t_start
    state.timings["total"] = total
    paths = write_outputs(state, cache, args.outdir, total)
    print(f"wall-clock {total / 60:.1f} min; wrote:\n  " + "\n  ".join(paths))
    for g in goal_check(state, summarise(state)):
        print(f"goal (Adult, {g['kernel']}, C={g['C']:g}, n={g['n']}, Gaussian/private, ε=1): private "
              f"{100 * g['private']:.1f}% vs non-private {100 * g['nonprivate']:.1f}% (gap {g['gap_points']:.1f} "
              f"points; majority {100 * g['majority']:.1f}%) -> {'within' if g['within_2_5_points'] else 'NOT within'} "
              "2.5 points" + (" (degenerate baseline)" if g["degenerate_baseline"] else ""))
    return 130 if state.interrupted else 0


if __name__ == "__main__":
    sys.exit(main())

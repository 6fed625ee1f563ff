#!/usr/bin/env python
"""Private GLMs on real data: Jain & Thakurta (2014), Figure 1 "in spirit", plus a diffprivlib anchor.

Everything private goes through the library (:class:`dpcore.OutputPerturbation`,
:class:`dpcore.ObjectivePerturbation`, :class:`dpcore.SimplexERM`, :class:`dpcore.TDDL`); nothing of
a mechanism is re-implemented here. The non-private baselines use dpcore's own certified solvers
(:mod:`dpcore.glm._solver`, :class:`dpcore.glm.simplex.EntropicSimplexProblem`) on the same objective.

Data (public pre-processing, ``dpcore.datasets``, rows in the unit ball, labels ±1):
Shuttle (``load_shuttle``: 9 dense features; it plays Cod-RNA's role) and Adult (``load_adult``:
113 one-hot/numeric features, the higher-dimensional case). Train = the official/fixed train
split, test = the test split.

Stages (``--stages``; all by default):

``eps``     accuracy vs ε for Output (Gamma), Objective (Gamma), Output-Gauss, Objective-Gauss and
            the non-private baseline, on both datasets (Huber-SVM loss, h = 0.5, as the paper's
            SVMs; Λ = ``--lam``; intercept as a regularised feature).
``dim``     accuracy vs dimension p on Shuttle padded with zero features up to 10^5 (sparse), at a
            fixed ε: the Gaussian variants should stay flat, the Gamma variants degrade.
``simplex`` SimplexERM (entropy-regularised least squares over the signed simplex, thresholded at 0,
            paper §6) vs its non-private solution and vs Objective / Objective-Gauss as p grows.
``tddl``    issue 4's Fig. 2b: linear-kernel TDDL (Jain & Thakurta 2013) vs objective perturbation as
            the dimension grows (padded Shuttle).
``dpl``     side by side with diffprivlib's ``LogisticRegression`` (objective perturbation) at equal ε:
            accuracy and fit time (logistic loss for every method).

Each configuration is run ``--runs`` times (default 20) with fresh noise; all randomness derives from
one public base seed. Outputs: ``results/glm_results.json``, ``results/glm_results.md`` and plots
``results/glm_*.png``. ``--quick`` (small sizes, few runs) writes ``glm_quick_*``. Ctrl-C writes the
partial results and exits with status 130.

Usage::

    .venv/bin/python experiments/glm_accuracy.py --quick
    .venv/bin/python experiments/glm_accuracy.py            # full run
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import types
import warnings
from dataclasses import asdict, dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
from scipy import sparse

import dpcore
from dpcore.glm._losses import make_loss
from dpcore.glm._solver import GLMObjective, solve_smooth
from dpcore.glm.simplex import EntropicSimplexProblem

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _harness.py sits next to this script
from _harness import (  # noqa: E402
    Data, RunLog, accuracy, configure, derive_seed, experiment_parser, find, fmt_pm, group_rows,
    load_data, mean_std, output_prefix, progress, pyplot, save_figure, write_json, write_text
)

DEFAULT_SEED = 20140621
GLM_METHODS = ("output-gamma", "objective-gamma", "output-gauss", "objective-gauss")
METHOD_LABELS = {
    "output-gamma": "Output (Gamma)",
    "objective-gamma": "Objective (Gamma)",
    "output-gauss": "Output-Gauss",
    "objective-gauss": "Objective-Gauss",
    "nonprivate": "non-private",
    "simplex": "Sampling (SimplexERM)",
    "simplex-nonprivate": "entropic ERM, non-private",
    "tddl-linear": "TDDL, linear kernel",
    "nonprivate-svm": "linear SVM (hinge), non-private",
    "nonprivate-huber": "Huber-SVM, non-private",
    "diffprivlib": "diffprivlib LogisticRegression",
}


@dataclass(frozen=True)
class Config:
    mode: str = "full"
    seed: int = DEFAULT_SEED
    runs: int = 20
    lam: float = 1e-3
    delta: float = 1e-6
    huber_width: float = 0.5
    eps_grid: Tuple[float, ...] = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
    dim_eps: float = 1.0
    dims: Tuple[int, ...] = (9, 100, 1_000, 10_000, 100_000)
    simplex_lam: float = 0.05
    simplex_eps: float = 1.0
    tddl_n: int = 10_000
    tddl_T: int = 500
    tddl_dims: Tuple[int, ...] = (9, 100, 1_000)
    tddl_C: float = 0.01
    dpl_eps: Tuple[float, ...] = (0.1, 0.5, 1.0, 2.0, 5.0)
    n_train: Optional[int] = None  # None: the whole train split


QUICK = dict(mode="quick", runs=2, eps_grid=(0.1, 1.0), dims=(9, 1_000), tddl_n=2_000, tddl_T=100, tddl_dims=(9, 100),
             dpl_eps=(1.0,), n_train=5_000)


# ------------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------------


def pad(X: np.ndarray, p: int):
    """Append ``p - d`` zero features (sparse CSR when p > d; the original array when p == d)."""
    n, d = X.shape
    if p < d:
        raise ValueError(f"cannot pad {d} features down to {p}")
    if p == d:
        return X
    return sparse.hstack([sparse.csr_matrix(X), sparse.csr_matrix((n, p - d))], format="csr")


# ------------------------------------------------------------------------------------------------
# methods
# ------------------------------------------------------------------------------------------------


def glm_estimator(method: str, eps: float, cfg: Config, seed: int, loss: str = "huber_svm"):
    mech, noise = method.split("-")
    noise = {"gauss": "gaussian", "gamma": "gamma"}[noise]
    cls = dpcore.OutputPerturbation if mech == "output" else dpcore.ObjectivePerturbation
    return cls(epsilon=eps, delta=cfg.delta, lam=cfg.lam, data_norm=1.0, loss=loss, noise=noise,
               huber_width=cfg.huber_width, fit_intercept=True, random_state=seed)


def nonprivate_glm(X, y, cfg: Config, loss: str = "huber_svm") -> Tuple[np.ndarray, float]:
    """Certified non-private minimiser of the same objective (intercept as a regularised feature)."""
    Xa = sparse.hstack([sparse.csr_matrix(X), np.ones((X.shape[0], 1))], format="csr") if sparse.issparse(X) \
        else np.hstack([X, np.ones((X.shape[0], 1))])
    obj = GLMObjective(Xa, y, make_loss(loss, huber_width=cfg.huber_width), cfg.lam)
    theta = solve_smooth(obj, tol=1e-9, max_iter=5000)[0]
    return theta[:-1], float(theta[-1])


def predict_linear(X, coef, intercept) -> np.ndarray:
    z = X @ coef + intercept
    return np.where(z >= 0, 1.0, -1.0)


def score_nonprivate(state: "State", X, y, Xt, yt, loss: str = "huber_svm", **row) -> None:
    """Record the certified non-private solution's test accuracy (run 0) and its solve time."""
    t0 = time.perf_counter()
    coef, b0 = nonprivate_glm(X, y, state.cfg, loss=loss)
    state.add(**row, eps=None, run=0, acc=accuracy(predict_linear(Xt, coef, b0), yt), fit_s=time.perf_counter() - t0)


def score_private(state: "State", est, X, y, Xt, yt, **row):
    """Fit the private estimator ``est`` on (X, y) and record its test accuracy and fit time; returns it."""
    t0 = time.perf_counter()
    est.fit(X, y)
    state.add(**row, acc=accuracy(est.predict(Xt), yt), fit_s=time.perf_counter() - t0)
    return est


# ------------------------------------------------------------------------------------------------
# state / running
# ------------------------------------------------------------------------------------------------


State = RunLog  # rows, notes, start time of a run


def stage_eps(state: State, data: Dict[str, Data]) -> None:
    cfg = state.cfg
    for name, d in data.items():
        score_nonprivate(state, d.X, d.y, d.X_test, d.y_test, stage="eps", dataset=name, method="nonprivate")
        bar = progress(total=len(cfg.eps_grid) * len(GLM_METHODS) * cfg.runs, desc=f"eps {name}")
        for eps in cfg.eps_grid:
            for method in GLM_METHODS:
                for run in range(cfg.runs):
                    est = glm_estimator(method, eps, cfg, derive_seed(cfg.seed, "eps", name, method, eps, run))
                    score_private(state, est, d.X, d.y, d.X_test, d.y_test, stage="eps", dataset=name, method=method,
                                  eps=eps, run=run)
                    bar.update()
        bar.close()


def stage_dim(state: State, data: Dict[str, Data]) -> None:
    cfg = state.cfg
    d = data["shuttle"]
    bar = progress(total=len(cfg.dims) * (len(GLM_METHODS) * cfg.runs + 1), desc="dim shuttle")
    for p in cfg.dims:
        X, Xt = pad(d.X, p), pad(d.X_test, p)
        score_nonprivate(state, X, d.y, Xt, d.y_test, stage="dim", dataset="shuttle", method="nonprivate", p=p)
        bar.update()
        for method in GLM_METHODS:
            for run in range(cfg.runs):
                est = glm_estimator(method, cfg.dim_eps, cfg, derive_seed(cfg.seed, "dim", method, p, run))
                score_private(state, est, X, d.y, Xt, d.y_test, stage="dim", dataset="shuttle", method=method, p=p,
                              eps=cfg.dim_eps, run=run)
                bar.update()
    bar.close()


#: Public ℓ∞ bound of Shuttle rows: every attribute is mapped to [−1, 1] by its *declared* range and
#: each row is divided by √9 (``load_shuttle``), so |x_ij| ≤ 1/3 — from the encoding, not the data.
SHUTTLE_LINF = 1.0 / 3.0


def simplex_estimator(cfg: Config, seed: int):
    return dpcore.SimplexERM(epsilon=cfg.simplex_eps, delta=cfg.delta, lam=cfg.simplex_lam, data_norm_inf=SHUTTLE_LINF,
                             loss="squared", task="classification", random_state=seed)


def stage_simplex(state: State, data: Dict[str, Data]) -> None:
    cfg = state.cfg
    d = data["shuttle"]
    methods = ("objective-gamma", "objective-gauss")
    bar = progress(total=len(cfg.dims) * (cfg.runs * (1 + len(methods)) + 1), desc="simplex shuttle")
    for p in cfg.dims:
        X, Xt = pad(d.X, p), pad(d.X_test, p)
        # Non-private entropic ERM over the same signed simplex, thresholded at 0.
        t0 = time.perf_counter()
        proto = simplex_estimator(cfg, 0)
        prob = EntropicSimplexProblem(X, d.y, loss="squared", lam=cfg.simplex_lam, data_norm_inf=SHUTTLE_LINF,
                                      label_bound=1.0, signed=proto.signed, scale=proto.scale)
        w = prob.weights(prob.solve(tau_tol=1e-6).theta)
        state.add(stage="simplex", dataset="shuttle", method="simplex-nonprivate", p=p, eps=None, run=0,
                  acc=accuracy(np.where(Xt @ w >= 0, 1.0, -1.0), d.y_test), fit_s=time.perf_counter() - t0)
        bar.update()
        for run in range(cfg.runs):
            est = score_private(state, simplex_estimator(cfg, derive_seed(cfg.seed, "simplex", p, run)), X, d.y, Xt,
                                d.y_test, stage="simplex", dataset="shuttle", method="simplex", p=p,
                                eps=cfg.simplex_eps, run=run)
            state.rows[-1]["m"] = int(est.n_draws_)
            bar.update()
        for method in methods:
            for run in range(cfg.runs):
                est = glm_estimator(method, cfg.simplex_eps, cfg, derive_seed(cfg.seed, "simplex-glm", method, p, run))
                score_private(state, est, X, d.y, Xt, d.y_test, stage="simplex", dataset="shuttle", method=method,
                              p=p, eps=cfg.simplex_eps, run=run)
                bar.update()
    bar.close()


def stage_tddl(state: State, data: Dict[str, Data]) -> None:
    """Fig. 2b of Jain & Thakurta (2013): linear-kernel TDDL vs objective perturbation vs dimension.

    The linear kernel's values are unchanged by zero padding, so TDDL's release is dimension
    independent by construction; it is run on the padded (dense) data up to ``tddl_dims`` to measure
    it (dense n × p copies beyond that do not fit in memory). Objective perturbation (Gamma and Gauss)
    runs on the same n rows, padded (sparse) up to ``dims``, at the same ε, with the Huber-SVM loss
    (it needs a smooth loss; the kernel SVM uses the hinge) and its own regularisation Λ = ``lam``
    as in the other stages.
    """
    cfg = state.cfg
    d = data["shuttle"]
    n, T = cfg.tddl_n, cfg.tddl_T
    X, y = d.X[:n], d.y[:n]
    dims = sorted(set(cfg.tddl_dims) | set(cfg.dims))
    bar = progress(total=len(cfg.tddl_dims) * cfg.runs + len(dims) * cfg.runs * 2, desc="tddl shuttle")
    lam = 1.0 / (n * cfg.tddl_C)
    for p in dims:
        # the same public split of the test rows into T public points and the evaluation rows, per run
        splits = [np.random.default_rng(derive_seed(cfg.seed, "tddl-split", run)).permutation(d.X_test.shape[0])
                  for run in range(cfg.runs)]
        if p in cfg.tddl_dims:
            Xp = np.hstack([X, np.zeros((n, p - X.shape[1]))])
            Xtp = np.hstack([d.X_test, np.zeros((d.X_test.shape[0], p - d.X_test.shape[1]))])
            svm = dpcore.KernelSVM(lam=lam, kernel="linear", tol=1e-7 * cfg.tddl_C).fit(Xp, y)
            state.add(stage="tddl", dataset="shuttle", method="nonprivate-svm", p=p, eps=None, run=0,
                      acc=accuracy(svm.predict(Xtp), d.y_test), fit_s=None)
            for run, idx in enumerate(splits):
                Z, rest = idx[:T], idx[T:]
                t0 = time.perf_counter()
                rel = dpcore.TDDL(svm, cfg.dim_eps, cfg.delta, data_norm=1.0, noise="gaussian", norm_bound="private",
                                  random_state=derive_seed(cfg.seed, "tddl", p, run)).fit(Xtp[Z])
                state.add(stage="tddl", dataset="shuttle", method="tddl-linear", p=p, eps=cfg.dim_eps, run=run,
                          acc=accuracy(rel.predict(Xtp[rest]), d.y_test[rest]), fit_s=time.perf_counter() - t0)
                bar.update()
        Xs, Xts = pad(X, p), pad(d.X_test, p)
        score_nonprivate(state, Xs, y, Xts, d.y_test, stage="tddl", dataset="shuttle", method="nonprivate-huber", p=p)
        for run, idx in enumerate(splits):
            rest = idx[T:]
            for method in ("objective-gamma", "objective-gauss"):
                est = glm_estimator(method, cfg.dim_eps, cfg, derive_seed(cfg.seed, "tddl-glm", method, p, run))
                score_private(state, est, Xs, y, Xts[rest], d.y_test[rest], stage="tddl", dataset="shuttle",
                              method=method, p=p, eps=cfg.dim_eps, run=run)
                bar.update()
    bar.close()


def import_diffprivlib():
    """diffprivlib(-fix) 0.6.x imports its tree models at package import, which fail against
    scikit-learn ≥ 1.6 (``sklearn.tree._tree.DOUBLE`` was removed). Its LogisticRegression does not
    use them, so the experiment stubs that one module before importing (recorded in the results)."""
    if "diffprivlib.models.forest" not in sys.modules:
        stub = types.ModuleType("diffprivlib.models.forest")
        stub.RandomForestClassifier = stub.DecisionTreeClassifier = None
        sys.modules["diffprivlib.models.forest"] = stub
    import diffprivlib
    from diffprivlib.models import LogisticRegression

    return diffprivlib.__version__, LogisticRegression


def stage_dpl(state: State, data: Dict[str, Data]) -> None:
    cfg = state.cfg
    try:
        version, DPLR = import_diffprivlib()
    except ImportError as exc:
        state.notes.append(f"diffprivlib stage skipped: {exc!r} (pip install diffprivlib-fix)")
        return
    state.notes.append(f"diffprivlib {version} (forest module stubbed, see import_diffprivlib)")
    methods = ("objective-gamma", "objective-gauss", "output-gauss", "diffprivlib")
    for name, d in data.items():
        n = d.X.shape[0]
        score_nonprivate(state, d.X, d.y, d.X_test, d.y_test, loss="logistic", stage="dpl", dataset=name,
                         method="nonprivate")
        bar = progress(total=len(cfg.dpl_eps) * len(methods) * cfg.runs, desc=f"dpl {name}")
        for eps in cfg.dpl_eps:
            for method in methods:
                for run in range(cfg.runs):
                    seed = derive_seed(cfg.seed, "dpl", name, method, eps, run)
                    if method == "diffprivlib":
                        # Same regularised objective: diffprivlib minimises (1/n)Σℓ + ||w||²/(2nC).
                        est = DPLR(epsilon=eps, data_norm=1.0, C=1.0 / (n * cfg.lam), random_state=seed % 2**32,
                                   max_iter=1000)
                    else:
                        est = glm_estimator(method, eps, cfg, seed, loss="logistic")
                    t0 = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        if method == "diffprivlib":
                            est.fit(d.X, np.where(d.y > 0, 1, 0))
                            pred = np.where(est.predict(d.X_test) == 1, 1.0, -1.0)
                        else:
                            est.fit(d.X, d.y)
                            pred = est.predict(d.X_test)
                    state.add(stage="dpl", dataset=name, method=method, eps=eps, run=run, acc=accuracy(pred, d.y_test),
                              fit_s=time.perf_counter() - t0)
                    bar.update()
        bar.close()


STAGES: Dict[str, Callable[[State, Dict[str, Data]], None]] = {
    "eps": stage_eps, "dim": stage_dim, "simplex": stage_simplex, "tddl": stage_tddl, "dpl": stage_dpl,
}


# ------------------------------------------------------------------------------------------------
# summaries, tables, plots
# ------------------------------------------------------------------------------------------------


def summarise(rows: List[dict]) -> List[dict]:
    out = []
    for (stage, dataset, method, eps, p), rs in group_rows(
            rows, lambda r: (r["stage"], r["dataset"], r["method"], r.get("eps"), r.get("p"))):
        acc_mean, acc_std = mean_std(r["acc"] for r in rs)
        fits = [r["fit_s"] for r in rs if r.get("fit_s") is not None]
        out.append(dict(stage=stage, dataset=dataset, method=method, eps=eps, p=p, runs=len(rs),
                        acc_mean=acc_mean, acc_std=acc_std, fit_s_median=float(np.median(fits)) if fits else None,
                        m_median=float(np.median([r["m"] for r in rs])) if "m" in rs[0] else None))
    return out


def _cell(s: Optional[dict]) -> str:
    """Accuracy in %: mean ± sd over runs, the mean alone for a single (non-private) run."""
    return "—" if s is None else fmt_pm(s["acc_mean"], None if s["runs"] == 1 else s["acc_std"], scale=100)


def markdown(state: State, summary: List[dict], majority: Dict[str, float]) -> str:
    cfg = state.cfg
    lines = [f"# Private GLMs ({cfg.mode} run)", "",
             f"Config: `{json.dumps(asdict(cfg))}`", "",
             f"Total time {time.time() - state.started:.0f} s on {os.cpu_count()} cores, "
             f"dpcore {dpcore.__version__}, Python {platform.python_version()}. Accuracy in % (mean ± sd over runs).", ""]
    for note in state.notes:
        lines += [f"* {note}"]
    stages = {s["stage"] for s in summary}
    if "eps" in stages:
        for ds in sorted({s["dataset"] for s in summary if s["stage"] == "eps"}):
            base = find(summary, stage="eps", dataset=ds, method="nonprivate")
            lines += ["", f"## Accuracy vs ε — {ds} (Huber-SVM, Λ = {cfg.lam}, δ = {cfg.delta}; "
                          f"non-private {_cell(base)}, majority class {100 * majority[ds]:.1f})", "",
                      "| ε | " + " | ".join(METHOD_LABELS[m] for m in GLM_METHODS) + " |",
                      "|---|" + "---|" * len(GLM_METHODS)]
            for eps in cfg.eps_grid:
                cells = [_cell(find(summary, stage="eps", dataset=ds, method=m, eps=eps)) for m in GLM_METHODS]
                lines.append(f"| {eps:g} | " + " | ".join(cells) + " |")
    for stage, methods, title in (
        ("dim", ("nonprivate",) + GLM_METHODS, f"Accuracy vs padded dimension p — Shuttle, ε = {cfg.dim_eps}"),
        ("simplex", ("simplex-nonprivate", "simplex", "objective-gamma", "objective-gauss"),
         f"SimplexERM vs p — Shuttle, ε = {cfg.simplex_eps}, entropy λ = {cfg.simplex_lam}"),
        ("tddl", ("nonprivate-svm", "tddl-linear", "nonprivate-huber", "objective-gamma", "objective-gauss"),
         f"Linear TDDL vs objective perturbation vs p (issue 4, Fig. 2b) — Shuttle n = {cfg.tddl_n}, T = {cfg.tddl_T}, "
         f"TDDL: kernel SVM C = {cfg.tddl_C}; objective: Huber-SVM Λ = {cfg.lam}; ε = {cfg.dim_eps}"),
    ):
        if stage not in stages:
            continue
        dims = sorted({s["p"] for s in summary if s["stage"] == stage})
        lines += ["", f"## {title}", "", "| p | " + " | ".join(METHOD_LABELS[m] for m in methods) + " |",
                  "|---|" + "---|" * len(methods)]
        for p in dims:
            cells = [_cell(find(summary, stage=stage, method=m, p=p)) for m in methods]
            lines.append(f"| {p:,} | " + " | ".join(cells) + " |")
        if stage == "simplex":
            ms = [(s["p"], s["m_median"]) for s in summary if s["stage"] == "simplex" and s["method"] == "simplex"]
            lines.append("")
            lines.append("Draws m per p: " + ", ".join(f"p={p:,}: m={m:,.0f}" for p, m in sorted(ms)))
    if "dpl" in stages:
        methods = ("objective-gamma", "objective-gauss", "output-gauss", "diffprivlib")
        for ds in sorted({s["dataset"] for s in summary if s["stage"] == "dpl"}):
            base = find(summary, stage="dpl", dataset=ds, method="nonprivate")
            lines += ["", f"## Side by side with diffprivlib — {ds} (logistic loss, Λ = {cfg.lam}; accuracy %, median fit time; "
                          f"non-private {_cell(base)})",
                      "", "| ε | " + " | ".join(METHOD_LABELS[m] for m in methods) + " |", "|---|" + "---|" * len(methods)]
            for eps in cfg.dpl_eps:
                cells = []
                for m in methods:
                    s = find(summary, stage="dpl", dataset=ds, method=m, eps=eps)
                    cells.append("—" if s is None else f"{_cell(s)} ({1000 * s['fit_s_median']:.0f} ms)")
                lines.append(f"| {eps:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plots(state: State, summary: List[dict], prefix: str) -> List[str]:
    plt = pyplot()
    cfg = state.cfg
    written = []
    stages = {s["stage"] for s in summary}

    def curve(ax, xs, rows, label, **kw):
        if not rows:
            return
        m = np.array([100 * r["acc_mean"] for r in rows])
        sd = np.array([100 * r["acc_std"] for r in rows])
        ax.errorbar(xs, m, yerr=sd, marker="o", capsize=3, label=label, **kw)

    if "eps" in stages:
        dsets = sorted({s["dataset"] for s in summary if s["stage"] == "eps"})
        fig, axes = plt.subplots(1, len(dsets), figsize=(6 * len(dsets), 4.2), squeeze=False)
        for ax, ds in zip(axes[0], dsets):
            for m in GLM_METHODS:
                rows = [find(summary, stage="eps", dataset=ds, method=m, eps=e) for e in cfg.eps_grid]
                rows = [r for r in rows if r]
                curve(ax, [r["eps"] for r in rows], rows, METHOD_LABELS[m])
            base = find(summary, stage="eps", dataset=ds, method="nonprivate")
            if base:
                ax.axhline(100 * base["acc_mean"], color="k", ls="--", label="non-private")
            ax.set_xscale("log")
            ax.set_xlabel("ε")
            ax.set_ylabel("test accuracy (%)")
            ax.set_title(f"{ds}: accuracy vs ε")
            ax.legend(fontsize=8)
        written.append(save_figure(fig, f"{prefix}_accuracy_vs_eps.png"))
    for stage, methods, title in (
        ("dim", ("nonprivate",) + GLM_METHODS, f"Shuttle padded: accuracy vs p (ε = {cfg.dim_eps})"),
        ("simplex", ("simplex-nonprivate", "simplex", "objective-gamma", "objective-gauss"),
         f"Shuttle padded: SimplexERM vs p (ε = {cfg.simplex_eps})"),
        ("tddl", ("nonprivate-svm", "tddl-linear", "nonprivate-huber", "objective-gamma", "objective-gauss"),
         f"Shuttle padded: linear TDDL vs objective perturbation (ε = {cfg.dim_eps})"),
    ):
        if stage not in stages:
            continue
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        for m in methods:
            rows = sorted([s for s in summary if s["stage"] == stage and s["method"] == m], key=lambda s: s["p"])
            curve(ax, [r["p"] for r in rows], rows, METHOD_LABELS[m], ls="--" if "nonprivate" in m else "-")
        ax.set_xscale("log")
        ax.set_xlabel("dimension p (zero-padded)")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(title)
        ax.legend(fontsize=8)
        written.append(save_figure(fig, f"{prefix}_{stage}_vs_p.png"))
    return written


def write_outputs(state: State, data: Dict[str, Data], outdir: str) -> List[str]:
    prefix = output_prefix(outdir, "glm", state.cfg.mode == "quick")
    summary = summarise(state.rows)
    majority = {k: v.majority for k, v in data.items()}
    doc = dict(config=asdict(state.cfg), notes=state.notes, majority=majority, summary=summary, rows=state.rows,
               total_s=time.time() - state.started)
    return [write_json(prefix + "_results.json", doc),
            write_text(prefix + "_results.md", markdown(state, summary, majority))] + plots(state, summary, prefix)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = experiment_parser(__doc__, DEFAULT_SEED, quick="small sizes, 2 runs: smoke test, ~1 min", stages=tuple(STAGES),
                           datasets=("shuttle", "adult"))
    ap.add_argument("--merge", default=None,
                    help="results JSON of an earlier run: keep its rows for the stages not re-run now")
    args = ap.parse_args(argv)
    cfg = configure(Config, args, QUICK)
    stages, names = args.stages, list(args.datasets)
    if any(s in stages for s in ("dim", "simplex", "tddl")) and "shuttle" not in names:
        names.append("shuttle")
    data = {name: load_data(name, cfg.n_train) for name in names}
    state = State(cfg)
    if args.merge:
        with open(args.merge) as f:
            old = json.load(f)
        if old["config"] != json.loads(json.dumps(asdict(cfg))):
            ap.error("--merge: the earlier run used a different configuration")
        state.rows = [r for r in old["rows"] if r["stage"] not in stages]
        state.notes = [n for n in old["notes"] if not n.startswith("INTERRUPTED")]
        state.started -= float(old.get("total_s", 0.0))
        state.notes.append(f"stages {', '.join(stages)} re-run and merged into the earlier results")
    status = state.run([(s, lambda s=s: STAGES[s](state, data)) for s in stages])
    state.notes = list(dict.fromkeys(state.notes))  # a merged run's stages add their notes again
    for path in write_outputs(state, data, args.outdir):
        print("wrote", path)
    return status


if __name__ == "__main__":
    sys.exit(main())

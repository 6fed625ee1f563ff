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

import argparse
import hashlib
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
from dpcore.datasets import load_adult, load_shuttle
from dpcore.glm.simplex import EntropicSimplexProblem

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

    @staticmethod
    def quick(seed: int = DEFAULT_SEED) -> "Config":
        return Config(mode="quick", seed=seed, runs=2, eps_grid=(0.1, 1.0), dims=(9, 1_000), tddl_n=2_000,
                      tddl_T=100, tddl_dims=(9, 100), dpl_eps=(1.0,), n_train=5_000)


def derive_seed(cfg: Config, *parts) -> int:
    h = hashlib.sha256(repr((cfg.seed,) + parts).encode()).digest()
    return int.from_bytes(h[:8], "little") >> 1


# ------------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------------


@dataclass
class Data:
    name: str
    X: np.ndarray
    y: np.ndarray
    Xt: np.ndarray
    yt: np.ndarray

    @property
    def majority(self) -> float:
        return float(max(np.mean(self.yt == 1), np.mean(self.yt == -1)))


def load_data(name: str, cfg: Config) -> Data:
    loader = {"shuttle": load_shuttle, "adult": load_adult}[name]
    tr, te = loader("train"), loader("test")
    X, y = np.asarray(tr.X, float), np.asarray(tr.y, float)
    if cfg.n_train is not None:
        X, y = X[: cfg.n_train], y[: cfg.n_train]
    return Data(name, X, y, np.asarray(te.X, float), np.asarray(te.y, float))


def pad(X: np.ndarray, p: int):
    """Append ``p - d`` zero features (sparse CSR when p > d; the original array when p == d)."""
    n, d = X.shape
    if p < d:
        raise ValueError(f"cannot pad {d} features down to {p}")
    if p == d:
        return X
    return sparse.hstack([sparse.csr_matrix(X), sparse.csr_matrix((n, p - d))], format="csr")


def accuracy(pred: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.asarray(pred) == y))


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


# ------------------------------------------------------------------------------------------------
# state / running
# ------------------------------------------------------------------------------------------------


class State:
    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.rows: List[dict] = []
        self.notes: List[str] = []
        self.started = time.time()

    def add(self, **row):
        self.rows.append(row)


def _bar(total: int, desc: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, leave=False, disable=not sys.stderr.isatty())


def stage_eps(state: State, data: Dict[str, Data]) -> None:
    cfg = state.cfg
    for name, d in data.items():
        t0 = time.perf_counter()
        coef, b0 = nonprivate_glm(d.X, d.y, cfg)
        acc = accuracy(predict_linear(d.Xt, coef, b0), d.yt)
        state.add(stage="eps", dataset=name, method="nonprivate", eps=None, run=0, acc=acc,
                  fit_s=time.perf_counter() - t0)
        bar = _bar(len(cfg.eps_grid) * len(GLM_METHODS) * cfg.runs, f"eps {name}")
        for eps in cfg.eps_grid:
            for method in GLM_METHODS:
                for run in range(cfg.runs):
                    est = glm_estimator(method, eps, cfg, derive_seed(cfg, "eps", name, method, eps, run))
                    t0 = time.perf_counter()
                    est.fit(d.X, d.y)
                    state.add(stage="eps", dataset=name, method=method, eps=eps, run=run,
                              acc=accuracy(est.predict(d.Xt), d.yt), fit_s=time.perf_counter() - t0)
                    bar.update()
        bar.close()


def stage_dim(state: State, data: Dict[str, Data]) -> None:
    cfg = state.cfg
    d = data["shuttle"]
    bar = _bar(len(cfg.dims) * (len(GLM_METHODS) * cfg.runs + 1), "dim shuttle")
    for p in cfg.dims:
        X, Xt = pad(d.X, p), pad(d.Xt, p)
        t0 = time.perf_counter()
        coef, b0 = nonprivate_glm(X, d.y, cfg)
        state.add(stage="dim", dataset="shuttle", method="nonprivate", p=p, eps=None, run=0,
                  acc=accuracy(predict_linear(Xt, coef, b0), d.yt), fit_s=time.perf_counter() - t0)
        bar.update()
        for method in GLM_METHODS:
            for run in range(cfg.runs):
                est = glm_estimator(method, cfg.dim_eps, cfg, derive_seed(cfg, "dim", method, p, run))
                t0 = time.perf_counter()
                est.fit(X, d.y)
                state.add(stage="dim", dataset="shuttle", method=method, p=p, eps=cfg.dim_eps, run=run,
                          acc=accuracy(est.predict(Xt), d.yt), fit_s=time.perf_counter() - t0)
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
    bar = _bar(len(cfg.dims) * (cfg.runs * (1 + len(methods)) + 1), "simplex shuttle")
    for p in cfg.dims:
        X, Xt = pad(d.X, p), pad(d.Xt, p)
        # Non-private entropic ERM over the same signed simplex, thresholded at 0.
        t0 = time.perf_counter()
        proto = simplex_estimator(cfg, 0)
        prob = EntropicSimplexProblem(X, d.y, loss="squared", lam=cfg.simplex_lam, data_norm_inf=SHUTTLE_LINF,
                                      label_bound=1.0, signed=proto.signed, scale=proto.scale)
        w = prob.weights(prob.solve(tau_tol=1e-6).theta)
        state.add(stage="simplex", dataset="shuttle", method="simplex-nonprivate", p=p, eps=None, run=0,
                  acc=accuracy(np.where(Xt @ w >= 0, 1.0, -1.0), d.yt), fit_s=time.perf_counter() - t0)
        bar.update()
        for run in range(cfg.runs):
            est = simplex_estimator(cfg, derive_seed(cfg, "simplex", p, run))
            t0 = time.perf_counter()
            est.fit(X, d.y)
            state.add(stage="simplex", dataset="shuttle", method="simplex", p=p, eps=cfg.simplex_eps, run=run,
                      acc=accuracy(est.predict(Xt), d.yt), fit_s=time.perf_counter() - t0,
                      m=int(est.n_draws_))
            bar.update()
        for method in methods:
            for run in range(cfg.runs):
                est = glm_estimator(method, cfg.simplex_eps, cfg, derive_seed(cfg, "simplex-glm", method, p, run))
                t0 = time.perf_counter()
                est.fit(X, d.y)
                state.add(stage="simplex", dataset="shuttle", method=method, p=p, eps=cfg.simplex_eps, run=run,
                          acc=accuracy(est.predict(Xt), d.yt), fit_s=time.perf_counter() - t0)
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
    bar = _bar(len(cfg.tddl_dims) * cfg.runs + len(dims) * cfg.runs * 2, "tddl shuttle")
    lam = 1.0 / (n * cfg.tddl_C)
    for p in dims:
        # the same public split of the test rows into T public points and the evaluation rows, per run
        splits = [np.random.default_rng(derive_seed(cfg, "tddl-split", run)).permutation(d.Xt.shape[0])
                  for run in range(cfg.runs)]
        if p in cfg.tddl_dims:
            Xp = np.hstack([X, np.zeros((n, p - X.shape[1]))])
            Xtp = np.hstack([d.Xt, np.zeros((d.Xt.shape[0], p - d.Xt.shape[1]))])
            svm = dpcore.KernelSVM(lam=lam, kernel="linear", tol=1e-7 * cfg.tddl_C).fit(Xp, y)
            state.add(stage="tddl", dataset="shuttle", method="nonprivate-svm", p=p, eps=None, run=0,
                      acc=accuracy(svm.predict(Xtp), d.yt), fit_s=None)
            for run, idx in enumerate(splits):
                Z, rest = idx[:T], idx[T:]
                t0 = time.perf_counter()
                rel = dpcore.TDDL(svm, cfg.dim_eps, cfg.delta, 1.0, noise="gaussian", norm_bound="private",
                                  random_state=derive_seed(cfg, "tddl", p, run)).fit(Xtp[Z])
                state.add(stage="tddl", dataset="shuttle", method="tddl-linear", p=p, eps=cfg.dim_eps, run=run,
                          acc=accuracy(rel.predict(Xtp[rest]), d.yt[rest]), fit_s=time.perf_counter() - t0)
                bar.update()
        Xs, Xts = pad(X, p), pad(d.Xt, p)
        coef, b0 = nonprivate_glm(Xs, y, cfg)
        state.add(stage="tddl", dataset="shuttle", method="nonprivate-huber", p=p, eps=None, run=0,
                  acc=accuracy(predict_linear(Xts, coef, b0), d.yt), fit_s=None)
        for run, idx in enumerate(splits):
            rest = idx[T:]
            for method in ("objective-gamma", "objective-gauss"):
                est = glm_estimator(method, cfg.dim_eps, cfg, derive_seed(cfg, "tddl-glm", method, p, run))
                t0 = time.perf_counter()
                est.fit(Xs, y)
                state.add(stage="tddl", dataset="shuttle", method=method, p=p, eps=cfg.dim_eps, run=run,
                          acc=accuracy(est.predict(Xts[rest]), d.yt[rest]), fit_s=time.perf_counter() - t0)
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
        t0 = time.perf_counter()
        coef, b0 = nonprivate_glm(d.X, d.y, cfg, loss="logistic")
        state.add(stage="dpl", dataset=name, method="nonprivate", eps=None, run=0,
                  acc=accuracy(predict_linear(d.Xt, coef, b0), d.yt), fit_s=time.perf_counter() - t0)
        bar = _bar(len(cfg.dpl_eps) * len(methods) * cfg.runs, f"dpl {name}")
        for eps in cfg.dpl_eps:
            for method in methods:
                for run in range(cfg.runs):
                    seed = derive_seed(cfg, "dpl", name, method, eps, run)
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
                            pred = np.where(est.predict(d.Xt) == 1, 1.0, -1.0)
                        else:
                            est.fit(d.X, d.y)
                            pred = est.predict(d.Xt)
                    state.add(stage="dpl", dataset=name, method=method, eps=eps, run=run, acc=accuracy(pred, d.yt),
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
    groups: Dict[tuple, List[dict]] = {}
    for r in rows:
        key = (r["stage"], r["dataset"], r["method"], r.get("eps"), r.get("p"))
        groups.setdefault(key, []).append(r)
    out = []
    for (stage, dataset, method, eps, p), rs in sorted(groups.items(), key=lambda kv: tuple(str(k) for k in kv[0])):
        accs = np.array([r["acc"] for r in rs])
        fits = [r["fit_s"] for r in rs if r.get("fit_s") is not None]
        out.append(dict(stage=stage, dataset=dataset, method=method, eps=eps, p=p, runs=len(rs),
                        acc_mean=float(accs.mean()), acc_std=float(accs.std(ddof=1)) if len(accs) > 1 else 0.0,
                        fit_s_median=float(np.median(fits)) if fits else None,
                        m_median=float(np.median([r["m"] for r in rs])) if "m" in rs[0] else None))
    return out


def _cell(s: Optional[dict]) -> str:
    if s is None:
        return "–"
    if s["runs"] == 1:
        return f"{100 * s['acc_mean']:.1f}"
    return f"{100 * s['acc_mean']:.1f} ± {100 * s['acc_std']:.1f}"


def _find(summary, **kw) -> Optional[dict]:
    for s in summary:
        if all(s.get(k) == v for k, v in kw.items()):
            return s
    return None


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
            base = _find(summary, stage="eps", dataset=ds, method="nonprivate")
            lines += ["", f"## Accuracy vs ε — {ds} (Huber-SVM, Λ = {cfg.lam}, δ = {cfg.delta}; "
                          f"non-private {_cell(base)}, majority class {100 * majority[ds]:.1f})", "",
                      "| ε | " + " | ".join(METHOD_LABELS[m] for m in GLM_METHODS) + " |",
                      "|---|" + "---|" * len(GLM_METHODS)]
            for eps in cfg.eps_grid:
                cells = [_cell(_find(summary, stage="eps", dataset=ds, method=m, eps=eps)) for m in GLM_METHODS]
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
            cells = [_cell(_find(summary, stage=stage, method=m, p=p)) for m in methods]
            lines.append(f"| {p:,} | " + " | ".join(cells) + " |")
        if stage == "simplex":
            ms = [(s["p"], s["m_median"]) for s in summary if s["stage"] == "simplex" and s["method"] == "simplex"]
            lines.append("")
            lines.append("Draws m per p: " + ", ".join(f"p={p:,}: m={m:,.0f}" for p, m in sorted(ms)))
    if "dpl" in stages:
        methods = ("objective-gamma", "objective-gauss", "output-gauss", "diffprivlib")
        for ds in sorted({s["dataset"] for s in summary if s["stage"] == "dpl"}):
            base = _find(summary, stage="dpl", dataset=ds, method="nonprivate")
            lines += ["", f"## Side by side with diffprivlib — {ds} (logistic loss, Λ = {cfg.lam}; accuracy %, median fit time; "
                          f"non-private {_cell(base)})",
                      "", "| ε | " + " | ".join(METHOD_LABELS[m] for m in methods) + " |", "|---|" + "---|" * len(methods)]
            for eps in cfg.dpl_eps:
                cells = []
                for m in methods:
                    s = _find(summary, stage="dpl", dataset=ds, method=m, eps=eps)
                    cells.append("–" if s is None else f"{_cell(s)} ({1000 * s['fit_s_median']:.0f} ms)")
                lines.append(f"| {eps:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plots(state: State, summary: List[dict], prefix: str) -> List[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
                rows = [_find(summary, stage="eps", dataset=ds, method=m, eps=e) for e in cfg.eps_grid]
                rows = [r for r in rows if r]
                curve(ax, [r["eps"] for r in rows], rows, METHOD_LABELS[m])
            base = _find(summary, stage="eps", dataset=ds, method="nonprivate")
            if base:
                ax.axhline(100 * base["acc_mean"], color="k", ls="--", label="non-private")
            ax.set_xscale("log")
            ax.set_xlabel("ε")
            ax.set_ylabel("test accuracy (%)")
            ax.set_title(f"{ds}: accuracy vs ε")
            ax.legend(fontsize=8)
        fig.tight_layout()
        path = f"{prefix}_accuracy_vs_eps.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
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
        fig.tight_layout()
        path = f"{prefix}_{stage}_vs_p.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def write_outputs(state: State, data: Dict[str, Data], outdir: str) -> List[str]:
    os.makedirs(outdir, exist_ok=True)
    prefix = os.path.join(outdir, "glm_quick" if state.cfg.mode == "quick" else "glm")
    summary = summarise(state.rows)
    majority = {k: v.majority for k, v in data.items()}
    with open(prefix + "_results.json", "w") as f:
        json.dump(dict(config=asdict(state.cfg), notes=state.notes, majority=majority, summary=summary,
                       rows=state.rows, total_s=time.time() - state.started), f, indent=1)
    with open(prefix + "_results.md", "w") as f:
        f.write(markdown(state, summary, majority))
    return [prefix + "_results.json", prefix + "_results.md"] + plots(state, summary, prefix)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--stages", default="eps,dim,simplex,tddl,dpl")
    ap.add_argument("--datasets", default="shuttle,adult")
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--merge", default=None,
                    help="results JSON of an earlier run: keep its rows for the stages not re-run now")
    ap.add_argument("--outdir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = ap.parse_args(argv)
    cfg = Config.quick(args.seed) if args.quick else Config(seed=args.seed)
    if args.runs is not None:
        from dataclasses import replace

        cfg = replace(cfg, runs=args.runs)
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = set(stages) - set(STAGES)
    if unknown:
        ap.error(f"unknown stages {sorted(unknown)}; choose from {sorted(STAGES)}")
    names = [s.strip() for s in args.datasets.split(",") if s.strip()]
    if any(s in stages for s in ("dim", "simplex", "tddl")) and "shuttle" not in names:
        names.append("shuttle")
    data = {name: load_data(name, cfg) for name in names}
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
    status = 0
    try:
        for s in stages:
            t0 = time.time()
            STAGES[s](state, {k: v for k, v in data.items()})
            print(f"stage {s}: {time.time() - t0:.0f} s", flush=True)
    except KeyboardInterrupt:
        print("interrupted: writing partial results", file=sys.stderr)
        state.notes.append("INTERRUPTED: partial results")
        status = 130
    for path in write_outputs(state, data, args.outdir):
        print("wrote", path)
    return status


if __name__ == "__main__":
    sys.exit(main())

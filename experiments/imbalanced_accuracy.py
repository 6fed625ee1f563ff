"""Imbalanced and held-out-style tasks (issue 23): AUC, balanced accuracy and accuracy of dpcore's private
kernel paths against the non-private kernel models and the private linear model.

Six tasks built from the bundled data by public rules only (every seed is written below and derived with
``_harness.derive_seed``), with the loaders' own public pre-processing into the unit ball:

* ``adult``   — ``load_adult`` (24 % positive); ``adult-5``: the same rows with the positive class thinned to
  5 % of each split (``_harness.thin_positives``, seed ``derive_seed(THIN_SEED, "adult-5", split)``).
* ``shuttle`` — ``load_shuttle`` (the bundled ODDS/river file: Statlog classes 2, 3, 5, 6, 7 = "anomaly",
  7.2 %); ``shuttle-rare``: those rare classes vs the rest, thinned to 1 % of each split (the bundled file has
  the anomaly flag only, not the seven Statlog classes, so "rare classes vs the rest" *is* the binary task;
  thinning makes it a distinct, harder imbalanced task).
* ``letter``  — ``load_letter`` (A–M vs N–Z, 50 %); ``letter-A``: letter ``A`` vs the rest (≈ 4 %), read with
  ``dpcore.datasets._letter.load_letter_raw`` (same fixed split) and encoded with ``encode_letter`` (the
  loader's own pre-processing).

Training rows: the first ``n`` (20,000) rows of the public permutation ``default_rng(ORDER_SEED)`` of the
task's train split, keeping at least ``VAL_MIN`` rows as a validation split (used only to choose the best C of
the non-private models: a *non-private* selection, marked so). Test split: a public permutation of the task's
test split; its first ``T`` rows are the public (unlabelled) points of TDDL / PrivateGridSearch, the next
``n_test`` are scored. Kernel: rbf γ = 1 (R_φ = 1) on every task (not tuned per task).

Models: one row per ``(name, constructor)`` in :data:`MODELS`. A row whose constructor passes a parameter the
library does not have yet (e.g. ``intercept_scaling``, ``class_weight`` of issue 23) is marked "n/a (not
implemented)" instead of failing, so the script runs unchanged before and after those land. AUC of a private
release or service is computed from its (noisy) decision values; balanced accuracy and accuracy from its labels
(``predict``, which for GPService honours ``calibrate_prior``). The decision-value stage
compares the spread (sd over the scored test rows) of the non-private hinge and logistic decision functions at
the same C with the GP noise sd of ``GPService`` at that ε.

Usage::

    .venv/bin/python experiments/imbalanced_accuracy.py --quick        # CI size: 1 seed, n = 2,000, ε = 1
    .venv/bin/python experiments/imbalanced_accuracy.py                # 5 seeds, ε ∈ {0.5, 1, 2}
    .venv/bin/python experiments/imbalanced_accuracy.py --epsilons 1 --runs 2 --skip klr   # a subset
    .venv/bin/python experiments/imbalanced_accuracy.py --epsilons 1 --runs 2 --skip svm,select,rff,linear \
        --datasets adult-5,letter-A --val-grid 0.01 --tag klr       # the slow logistic rows, written apart
    .venv/bin/python experiments/imbalanced_accuracy.py --render experiments/results/imbalanced_results.json
"""

from __future__ import annotations

import inspect
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

import dpcore
from dpcore.datasets import load_adult, load_letter, load_shuttle
from dpcore.datasets._letter import encode_letter, load_letter_raw  # not re-exported by dpcore.datasets
from dpcore._internal.fp import KERNEL_SUM_REL_ERROR  # the solver's float floor (what the library refuses below)
from dpcore.kernel_learning.gp import auto_lam
from dpcore.mechanisms.noise import private_proportion

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _harness.py sits next to this script
from _harness import (  # noqa: E402
    Data, RunLog, classification_metrics, derive_seed, environment, experiment_parser, fmt_pm, git_state,
    mean_std, output_prefix, parse_choices, progress, thin_positives, write_json, write_text
)

DEFAULT_SEED = 20260123  # public base seed of every random choice (noise, features, proportions)
THIN_SEED = 23050        # public seed of the positive-class thinning
ORDER_SEED = 23001       # public seed of the train/test orders
VAL_MIN = 2000           # rows always kept out of training for the validation split
TASKS = ("adult", "adult-5", "shuttle", "shuttle-rare", "letter", "letter-A")
KERNEL = dict(kernel="rbf", gamma=1.0)   # one public kernel for every task (R_φ = 1)
TOL = 1e-8                               # solver tolerance as in README / docs (public solver error √(2·tol/λ))
C_FIXED = 0.01                           # the README / issue's fixed C
PRIOR_SHARE = 0.05                       # share of ε spent on the class proportion of the "+ prior" rows
NA = "n/a (not implemented)"
WEIGHT_SHARE = 0.05                      # share of ε spent on private_class_weights (the release gets the rest)
#: Kernel cache of the solvers (MB): a whole 20,000 × 20,000 Gram matrix (3.2 GB) — speed only, not results
#: (KernelLogisticRegression's dual coordinate descent re-evaluates kernel columns every epoch otherwise).
CACHE_MB = 3300.0


@dataclass(frozen=True)
class Config:
    seed: int = DEFAULT_SEED
    runs: int = 5
    epsilons: Tuple[float, ...] = (0.5, 1.0, 2.0)
    delta: float = 1e-6
    n: int = 20_000
    T: int = 1000
    n_test: int = 5000
    val_grid: Tuple[float, ...] = (0.001, 0.01, 0.1, 1.0)
    rff: int = 400
    datasets: Tuple[str, ...] = TASKS
    skip: Tuple[str, ...] = ()


QUICK = dict(runs=1, epsilons=(1.0,), n=2000, T=200, n_test=500, val_grid=(0.01, 0.1), rff=100)


# ------------------------------------------------------------------------------------------------
# tasks (public rules only)
# ------------------------------------------------------------------------------------------------


def _split(name: str, X, y, Xt, yt, n: int) -> Data:
    order = np.random.default_rng(derive_seed(ORDER_SEED, name, "train")).permutation(y.shape[0])
    n_fit = min(n, y.shape[0] - VAL_MIN)
    fit, val = order[:n_fit], order[n_fit:]
    t_order = np.random.default_rng(derive_seed(ORDER_SEED, name, "test")).permutation(yt.shape[0])
    return Data(name, X[fit], y[fit], X[val], y[val], Xt[t_order], yt[t_order], 1.0)


def _arrays(bunch):
    return np.asarray(bunch.X, dtype=np.float64), np.asarray(bunch.y, dtype=np.float64)


def _thinned(name: str, loader, rate: float):
    out = []
    for split in ("train", "test"):
        X, y = _arrays(loader(split))
        keep = thin_positives(y, rate, derive_seed(THIN_SEED, name, split))
        out += [X[keep], y[keep]]
    return out


def load_task(name: str, n: int) -> Data:
    """Task ``name`` of :data:`TASKS` (labels ±1, rows in the unit ball by the loaders' pre-processing)."""
    if name in ("adult", "shuttle", "letter"):
        loader = {"adult": load_adult, "shuttle": load_shuttle, "letter": load_letter}[name]
        X, y = _arrays(loader("train"))
        Xt, yt = _arrays(loader("test"))
    elif name == "adult-5":
        X, y, Xt, yt = _thinned(name, load_adult, 0.05)
    elif name == "shuttle-rare":
        X, y, Xt, yt = _thinned(name, load_shuttle, 0.01)
    elif name == "letter-A":
        tr, te = load_letter_raw("train"), load_letter_raw("test")
        X, Xt = encode_letter(tr.data), encode_letter(te.data)
        y, yt = (np.where(b.target == "A", 1.0, -1.0) for b in (tr, te))
    else:
        raise ValueError(f"unknown task {name!r}")
    return _split(name, X, y, Xt, yt, n)


# ------------------------------------------------------------------------------------------------
# models: a table of (name, group, constructor)
# ------------------------------------------------------------------------------------------------


class NotImplementedRow(Exception):
    """A constructor passed a parameter the library does not have (yet)."""


def make(cls, **params):
    """``cls(**params)``, or :class:`NotImplementedRow` when ``cls`` does not accept one of ``params``."""
    accepted = inspect.signature(cls).parameters
    if not any(p.kind == p.VAR_KEYWORD for p in accepted.values()):
        missing = sorted(k for k in params if k not in accepted)
        if missing:
            raise NotImplementedRow(f"{cls.__name__} has no parameter {', '.join(missing)}")
    try:
        return cls(**params)
    except TypeError as exc:
        if "unexpected keyword" in str(exc):
            raise NotImplementedRow(str(exc)) from None
        raise


LEARNERS = {"hinge": dpcore.KernelSVM, "logistic": dpcore.KernelLogisticRegression}
#: The library's default ``intercept_scaling`` b (None: a library without the bias): the "C = auto" rows that
#: do not name b follow it, and their λ uses the shifted kernel's ``R_φ'² = R_φ² + b²``.
_B_PARAM = inspect.signature(dpcore.KernelSVM).parameters.get("intercept_scaling")
DEFAULT_B: Optional[float] = None if _B_PARAM is None else float(_B_PARAM.default)
#: Whether ``auto_lam`` has a rule per loss (issue 23, item 3: logistic ρ = 1/4, hinge ρ = 1/2).
_LOSS_PARAM = "loss" in inspect.signature(auto_lam).parameters


def public_lipschitz(extra: dict) -> float:
    """L of the model ``extra`` describes: the largest public class weight; ``"balanced"`` read off the data
    (non-private rows only): the cap ``max_class_weight``, as PrivateGridSearch does; else 1."""
    cw = extra.get("class_weight")
    if isinstance(cw, dict):
        return max(float(v) for v in cw.values())
    return float(extra.get("max_class_weight", 10.0)) if cw == "balanced" else 1.0


def public_tol(lam: float, extra: dict) -> float:
    """``TOL``, raised where the private paths could not certify it: the library refuses a tolerance below
    ``2·KERNEL_SUM_REL_ERROR·R_φ'²·L²/λ`` (the solver's float floor; L = 10 weights multiply it by 100), so
    a weighted model gets ``4×`` that floor (public quantities only; unweighted rows keep ``TOL``)."""
    b = extra.get("intercept_scaling", DEFAULT_B) or 0.0
    floor = KERNEL_SUM_REL_ERROR * (1.0 + b * b) * public_lipschitz(extra) ** 2 / lam  # rbf: R_φ² = 1
    return max(TOL, 4.0 * floor)


class Context:
    """One task: its data, the fitted non-private models (cached per parameters), the seeds."""

    def __init__(self, cfg: Config, data: Data):
        self.cfg, self.d = cfg, data
        self.n = data.y.shape[0]
        self.Z = data.X_test[:cfg.T]
        self.Q = data.X_test[cfg.T:cfg.T + cfg.n_test]
        self.yq = data.y_test[cfg.T:cfg.T + cfg.n_test]
        self._fits: Dict[tuple, object] = {}
        self.fit_seconds: Dict[str, float] = {}
        self.eps = self.run = None

    def lam(self, C, loss: str = "hinge", **extra) -> float:
        """λ = 1/(n·C); ``C = "auto"``: the library's data-independent rule (of ``loss``) at the release's ε."""
        if C == "auto":
            return self.lam_auto(self.eps, loss, **extra)
        return 1.0 / (self.n * C)

    def lam_auto(self, eps: float, loss: str = "hinge", **extra) -> float:
        """``auto_lam`` for the model ``extra`` describes: the shifted kernel's ``R_φ'² = R_φ² + b²`` (b the
        row's ``intercept_scaling``, else the library's default), ``L`` = the largest public class weight and the
        rule of ``loss`` (a library without per-loss rules: its single rule)."""
        b = extra.get("intercept_scaling", DEFAULT_B)
        kw = {} if b is None else dict(intercept_scaling=b)  # None: a library without the bias (before)
        if _LOSS_PARAM:
            kw["loss"] = loss
        return auto_lam(self.n, eps, self.cfg.delta, data_norm=1.0, lipschitz=public_lipschitz(extra), **kw,
                        **KERNEL)

    def model(self, loss: str, C, **extra):
        return self.model_lam(loss, self.lam(C, loss, **extra), **extra)

    def model_lam(self, loss: str, lam: float, **extra):
        key = (loss, lam, repr(sorted(extra.items())))  # repr: a class_weight dict is not hashable
        if key not in self._fits:
            est = make(LEARNERS[loss], lam=lam, tol=public_tol(lam, extra), cache_size=CACHE_MB, **KERNEL, **extra)
            t0 = time.perf_counter()
            self._fits[key] = est.fit(self.d.X, self.d.y)
            self.fit_seconds[f"{loss} λ={lam:.3g} {extra}"] = time.perf_counter() - t0
        return self._fits[key]

    def best_C(self, loss: str) -> float:
        """The C of ``cfg.val_grid`` with the best validation AUC (ties: the smaller C). Non-private."""
        aucs = [classification_metrics(self.d.y_val, self.model(loss, C).decision_function(self.d.X_val))["auc"]
                for C in self.cfg.val_grid]
        aucs = [a if np.isfinite(a) else -1.0 for a in aucs]
        return self.cfg.val_grid[int(np.argmax(aucs))]

    def seed(self, *what) -> int:
        return derive_seed(self.cfg.seed, self.d.name, *what, self.eps, self.run)

    def weights(self, M: float) -> dict:
        """Balanced class weights released by ``private_class_weights`` with ``WEIGHT_SHARE·ε`` (pure ε-DP,
        capped at ``M``): a public dict, the same for every row of this (task, ε, run, M)."""
        fn = getattr(dpcore, "private_class_weights", None)
        if fn is None:
            raise NotImplementedRow("dpcore has no private_class_weights")
        return dict(fn(self.d.y, (-1.0, 1.0), WEIGHT_SHARE * self.eps, max_class_weight=M,
                       random_state=self.seed("class-weights", M)))

    def weighted(self, M: Optional[float], extra: dict) -> Tuple[float, dict]:
        """(ε of the release, the model's parameters): with ``M``, the release gets ``(1 − WEIGHT_SHARE)·ε``
        and the model the private weights (basic composition: ε in total)."""
        if M is None:
            return self.eps, extra
        return (1 - WEIGHT_SHARE) * self.eps, dict(extra, class_weight=self.weights(M), max_class_weight=M)

    def proportion(self, eps: float) -> float:
        """The class proportion released with ``eps`` (Laplace, sensitivity 1/n): public afterwards."""
        return private_proportion(self.d.y, 1.0, eps, random_state=self.seed("class-proportion"))


Result = Tuple[np.ndarray, np.ndarray]  # (decision values for AUC, ±1 labels)


def nonprivate(loss: str, C, *, weights: Optional[float] = None, **extra) -> Callable[[Context], Result]:
    """The non-private model; ``weights=M``: with the private rows' public class weights (capped at M) and
    their λ (C = auto at the release's ε = 0.95·ε, L = the largest weight) — the same fitted model."""
    def run(c: Context) -> Result:
        eps, ex = c.weighted(weights, extra)
        if weights is not None and C == "auto":
            m = c.model_lam(loss, c.lam_auto(eps, loss, **ex), **ex)
        else:
            m = c.model(loss, c.best_C(loss) if C == "best" else C, **ex)
        return m.decision_function(c.Q), m.predict(c.Q)
    return run


def tddl(loss: str, C, *, prior: bool = False, weights: Optional[float] = None, **extra) -> Callable[[Context], Result]:
    """TDDL noise="gp" (the default) over the T public points; ``prior``: 95 % of ε for the release, 5 % for
    the class proportion, threshold by ``KernelRelease.calibrate_prior`` (basic composition: ε in total);
    ``weights=M``: 95 % of ε for the release, 5 % for ``private_class_weights`` capped at M."""
    def run(c: Context) -> Result:
        eps, ex = c.weighted(weights, extra)
        eps = (1 - PRIOR_SHARE) * c.eps if prior else eps
        lam = c.lam_auto(eps, loss, **ex) if C == "auto" else c.lam(C)
        m = c.model_lam(loss, lam, **ex)
        wseed = () if weights is None else ("weights", weights)
        rel = make(dpcore.TDDL, model=m, epsilon=eps, delta=c.cfg.delta, data_norm=1.0,
                   random_state=c.seed("TDDL", loss, C, prior, *wseed)).fit(c.Z).release_
        if prior:
            rel = rel.calibrate_prior(c.proportion(PRIOR_SHARE * c.eps))
        return rel.decision_function(c.Q), rel.predict(c.Q)
    return run


def gpservice(loss: str, C, *, prior: bool = False, weights: Optional[float] = None,
              **extra) -> Callable[[Context], Result]:
    """GPService answering the scored rows; ``prior``: as :func:`tddl`, the threshold set on the public points
    by ``GPService.calibrate_prior`` (its answers there are part of the service's release); ``weights``: as
    :func:`tddl`."""
    def run(c: Context) -> Result:
        eps, ex = c.weighted(weights, extra)
        eps = (1 - PRIOR_SHARE) * c.eps if prior else eps
        lam = c.lam_auto(eps, loss, **ex) if C == "auto" else c.lam(C)
        m = c.model_lam(loss, lam, **ex)
        wseed = () if weights is None else ("weights", weights)
        svc = make(dpcore.GPService, model=m, epsilon=eps, delta=c.cfg.delta, data_norm=1.0,
                   max_exact_queries=c.Q.shape[0] + (c.Z.shape[0] if prior else 0),
                   random_state=c.seed("GPService", loss, C, prior, *wseed))
        if prior:
            svc.calibrate_prior(c.proportion(PRIOR_SHARE * c.eps), c.Z)
        return svc.decision_function(c.Q), svc.predict(c.Q)
    return run


def grid_search(**params) -> Callable[[Context], Result]:
    """PrivateGridSearch with its defaults (grid, kernel, shares) over the T public points."""
    def run(c: Context) -> Result:
        g = make(dpcore.PrivateGridSearch, param_grid=None, epsilon=c.eps, delta=c.cfg.delta, Z=c.Z,
                 data_norm=1.0, random_state=c.seed("PrivateGridSearch"), **params).fit(c.d.X, c.d.y)
        return g.decision_function(c.Q), g.predict(c.Q)
    return run


def private_svm(c: Context) -> Result:
    """PrivateSVM on published random Fourier features (the issue's setting: d̂ = 400, tight, C = auto)."""
    m = make(dpcore.PrivateSVM, epsilon=c.eps, kernel="rbf", n_components=c.cfg.rff, gamma=KERNEL["gamma"],
             calibration="tight", random_state=c.seed("PrivateSVM")).fit(c.d.X, c.d.y)
    return m.decision_function(c.Q), m.predict(c.Q)


def linear(c: Context) -> Result:
    """The floor: private linear logistic regression (objective perturbation, Gaussian noise, intercept)."""
    m = make(dpcore.ObjectivePerturbation, epsilon=c.eps, delta=c.cfg.delta, lam=1e-3, data_norm=1.0,
             loss="logistic", noise="gaussian", fit_intercept=True,
             random_state=c.seed("ObjectivePerturbation")).fit(c.d.X, c.d.y)
    return m.decision_function(c.Q), m.predict(c.Q)


BIAS = dict(intercept_scaling=1.0)                              # issue 23, item 1 (rows written before it landed)
BALANCED = dict(intercept_scaling=1.0, class_weight="balanced")  # issue 23, item 2 (idem; refused by private paths)
NO_BIAS = dict(intercept_scaling=0.0)   # the old hinge paths pinned: comparable with the before-numbers
BIAS05 = dict(intercept_scaling=0.5)    # the library's default b, named
WEIGHT_CAPS = (3.0, 10.0)               # max_class_weight M of the private balanced weights


@dataclass(frozen=True)
class Row:
    name: str
    kind: str    # "non-private", "private kernel", "private linear"
    group: str   # for --skip: svm, klr, select, rff, linear, future, after, after-klr, select-family
    run: Callable[[Context], Result] = field(repr=False)


#: The models, one row each. Add rows here (e.g. when a parameter of issue 23 lands); rows using a parameter
#: the library does not accept print "n/a (not implemented)".
MODELS: Tuple[Row, ...] = (
    Row("KernelSVM (non-private), C = auto", "non-private", "svm", nonprivate("hinge", "auto")),
    Row("KernelSVM (non-private), C = 0.01", "non-private", "svm", nonprivate("hinge", C_FIXED)),
    Row("KernelSVM (non-private), best C on validation", "non-private", "svm", nonprivate("hinge", "best")),
    Row("KernelLogReg (non-private), C = auto", "non-private", "klr", nonprivate("logistic", "auto")),
    Row("KernelLogReg (non-private), C = 0.01", "non-private", "klr", nonprivate("logistic", C_FIXED)),
    Row("KernelLogReg (non-private), best C on validation", "non-private", "klr", nonprivate("logistic", "best")),
    Row("KernelLogReg + bias (non-private), C = auto", "non-private", "future", nonprivate("logistic", "auto", **BIAS)),
    Row("KernelLogReg + bias + balanced (non-private), C = auto", "non-private", "future",
        nonprivate("logistic", "auto", **BALANCED)),
    Row("KernelSVM + bias + balanced (non-private), C = auto", "non-private", "future",
        nonprivate("hinge", "auto", **BALANCED)),
    Row("TDDL-gp (KernelSVM, C = auto)", "private kernel", "svm", tddl("hinge", "auto")),
    Row("GPService (KernelSVM, C = auto)", "private kernel", "svm", gpservice("hinge", "auto")),
    Row("TDDL-gp (KernelSVM, C = 0.01)", "private kernel", "svm", tddl("hinge", C_FIXED)),
    Row("GPService (KernelSVM, C = 0.01)", "private kernel", "svm", gpservice("hinge", C_FIXED)),
    Row("TDDL-gp + prior (KernelSVM, C = auto)", "private kernel", "svm", tddl("hinge", "auto", prior=True)),
    Row("GPService + prior (KernelSVM, C = auto)", "private kernel", "svm", gpservice("hinge", "auto", prior=True)),
    Row("TDDL-gp (KernelLogReg, C = auto)", "private kernel", "klr", tddl("logistic", "auto")),
    Row("GPService (KernelLogReg, C = auto)", "private kernel", "klr", gpservice("logistic", "auto")),
    Row("TDDL-gp (KernelLogReg + bias + balanced, C = auto)", "private kernel", "future",
        tddl("logistic", "auto", **BALANCED)),
    Row("GPService (KernelLogReg + bias + balanced, C = auto)", "private kernel", "future",
        gpservice("logistic", "auto", **BALANCED)),
    # ---- after issue 23's bias and class weights (group "after") ----
    Row("KernelSVM, b = 0 (non-private), C = auto", "non-private", "after", nonprivate("hinge", "auto", **NO_BIAS)),
    Row("TDDL-gp (KernelSVM, b = 0, C = auto)", "private kernel", "after", tddl("hinge", "auto", **NO_BIAS)),
    Row("GPService (KernelSVM, b = 0, C = auto)", "private kernel", "after", gpservice("hinge", "auto", **NO_BIAS)),
    Row("KernelSVM, b = 0.5 (non-private), C = auto", "non-private", "after", nonprivate("hinge", "auto", **BIAS05)),
    Row("TDDL-gp (KernelSVM, b = 0.5, C = auto)", "private kernel", "after", tddl("hinge", "auto", **BIAS05)),
    Row("GPService (KernelSVM, b = 0.5, C = auto)", "private kernel", "after", gpservice("hinge", "auto", **BIAS05)),
    Row("KernelSVM, b = 0.5, data-balanced weights ≤ 10 (non-private), C = auto(L = 10)", "non-private", "after",
        nonprivate("hinge", "auto", weights=None, class_weight="balanced", max_class_weight=10.0, **BIAS05)),
    *(r for M in WEIGHT_CAPS for r in (
        Row(f"KernelSVM, b = 0.5, private weights M = {M:g} (non-private, same weights), C = auto",
            "non-private, private weights", "after", nonprivate("hinge", "auto", weights=M, **BIAS05)),
        Row(f"TDDL-gp (KernelSVM, b = 0.5, private weights M = {M:g}, C = auto)", "private kernel", "after",
            tddl("hinge", "auto", weights=M, **BIAS05)),
        Row(f"GPService (KernelSVM, b = 0.5, private weights M = {M:g}, C = auto)", "private kernel", "after",
            gpservice("hinge", "auto", weights=M, **BIAS05)),
    )),
    Row("KernelLogReg, b = 0.5, private weights M = 10 (non-private, same weights), C = auto",
        "non-private, private weights", "after-klr", nonprivate("logistic", "auto", weights=10.0, **BIAS05)),
    Row("TDDL-gp (KernelLogReg, b = 0.5, private weights M = 10, C = auto)", "private kernel", "after-klr",
        tddl("logistic", "auto", weights=10.0, **BIAS05)),
    Row("GPService (KernelLogReg, b = 0.5, private weights M = 10, C = auto)", "private kernel", "after-klr",
        gpservice("logistic", "auto", weights=10.0, **BIAS05)),
    Row("PrivateGridSearch (defaults)", "private kernel", "select", grid_search()),
    # ---- issue 23, item 4: selection across families (default grid: 3 hinge KernelSVM + 1 linear Output-Gauss) ----
    Row("PrivateGridSearch (defaults, scoring = accuracy)", "selected", "select-family", grid_search()),
    Row("PrivateGridSearch (defaults, scoring = roc_auc)", "selected", "select-family",
        grid_search(scoring="roc_auc")),
    Row("PrivateGridSearch (defaults, scoring = balanced_accuracy)", "selected", "select-family",
        grid_search(scoring="balanced_accuracy")),
    Row("PrivateGridSearch (defaults, balanced accuracy, private weights M = 10)", "selected", "select-family",
        grid_search(scoring="balanced_accuracy", class_weight="balanced", max_class_weight=10.0)),
    # ---- issue 23, item 3: the recommended path (logistic, bias 0.5, private weights M = 10, logistic C = auto rule)
    #      and the default selection (logistic kernels + linear, by AUC) ----
    Row("default: KernelLogReg, private weights M = 10 (non-private, same weights)", "non-private, private weights",
        "default", nonprivate("logistic", "auto", weights=10.0)),
    Row("default: KernelLogReg (non-private, unweighted), C = auto", "non-private", "default",
        nonprivate("logistic", "auto")),
    Row("default: TDDL-gp (KernelLogReg, private weights M = 10)", "private kernel", "default",
        tddl("logistic", "auto", weights=10.0)),
    Row("default: GPService (KernelLogReg, private weights M = 10)", "private kernel", "default",
        gpservice("logistic", "auto", weights=10.0)),
    Row("default: GPService (KernelLogReg, unweighted)", "private kernel", "default", gpservice("logistic", "auto")),
    Row("default: PrivateGridSearch (logistic kernels + linear, roc_auc, private weights M = 10)", "selected",
        "default", grid_search(scoring="roc_auc", class_weight="balanced", max_class_weight=10.0)),
    Row("PrivateSVM (RFF, tight, C = auto)", "private kernel", "rff", private_svm),
    Row("ObjectivePerturbation (linear logistic, intercept)", "private linear", "linear", linear),
)
GROUPS = ("svm", "klr", "future", "select", "rff", "linear", "after", "after-klr", "select-family", "default")


# ------------------------------------------------------------------------------------------------
# runs
# ------------------------------------------------------------------------------------------------


def run_task(cfg: Config, name: str, log: RunLog) -> None:
    t0 = time.perf_counter()
    c = Context(cfg, load_task(name, cfg.n))
    log.notes.append(f"{name}: n = {c.n}, validation {c.d.y_val.shape[0]}, scored test rows {c.Q.shape[0]}, "
                     f"positive rate train {np.mean(c.d.y > 0):.4f} / scored test {np.mean(c.yq > 0):.4f}")
    rows = [r for r in MODELS if r.group not in cfg.skip]
    bar = progress(total=len(cfg.epsilons) * cfg.runs * len(rows), desc=name, unit="model")
    for eps in cfg.epsilons:
        c.eps = eps
        for run in range(cfg.runs):
            c.run = run
            for r in rows:
                if r.kind == "non-private" and run > 0:   # deterministic: measured once per ε
                    bar.update(1)
                    continue
                base = dict(task=name, eps=eps, run=run, model=r.name, kind=r.kind, group=r.group)
                t1 = time.perf_counter()
                try:
                    scores, labels = r.run(c)
                    log.add(**base, **classification_metrics(c.yq, scores, labels),
                            seconds=time.perf_counter() - t1)
                except NotImplementedRow as exc:
                    log.add(**base, status=NA, error=str(exc))
                except Exception as exc:  # noqa: BLE001 - a refusal or a bug is recorded, the run goes on
                    log.add(**base, status="failed", error=f"{type(exc).__name__}: {exc}")
                bar.update(1)
        spread(c, log)
    bar.close()
    log.add(task=name, kind="task", n=c.n, n_val=int(c.d.y_val.shape[0]), n_scored=int(c.Q.shape[0]),
            pos_train=float(np.mean(c.d.y > 0)), pos_test=float(np.mean(c.yq > 0)),
            C_auto={str(e): 1.0 / (c.n * c.lam_auto(e)) for e in cfg.epsilons},  # the hinge rule, b = default
            best_C={loss: (c.best_C(loss) if ("svm" if loss == "hinge" else "klr") not in cfg.skip else None)
                    for loss in ("hinge", "logistic")},
            fit_seconds=c.fit_seconds, seconds=time.perf_counter() - t0)


def spread(c: Context, log: RunLog) -> None:
    """Decision-value spread of the non-private hinge and logistic models at the same C vs the GP noise sd."""
    Qk = c.Q[:500]
    b2 = (DEFAULT_B or 0.0) ** 2   # the rows here follow the library's default bias: k(x, x) + b²
    r_phi = float(np.sqrt(np.mean(np.diag(dpcore.kernel_matrix(Qk, Qk, **KERNEL))) + b2))
    for C in (C_FIXED, "auto"):
        for loss in ("hinge", "logistic"):
            if ("svm" if loss == "hinge" else "klr") in c.cfg.skip:
                continue
            m = c.model(loss, C)
            f = m.decision_function(c.Q)
            try:  # the noise scale only (no query is answered)
                svc = dpcore.GPService(m, c.eps, c.cfg.delta, data_norm=1.0, random_state=0)
                noise_sd, error = float(svc.privacy_.noise_scale) * r_phi, None
            except ValueError as exc:  # e.g. the solver did not certify its tolerance: GPService refuses
                noise_sd, error = float("nan"), f"{type(exc).__name__}: {exc}"
            log.add(task=c.d.name, kind="spread", eps=c.eps, loss=loss, C=1.0 / (c.n * c.lam(C)),
                    C_rule=str(C), dec_mean=float(np.mean(f)), dec_sd=float(np.std(f)), noise_sd=noise_sd,
                    auc=classification_metrics(c.yq, f)["auc"], error=error)


# ------------------------------------------------------------------------------------------------
# tables
# ------------------------------------------------------------------------------------------------


def summarise(rows: List[dict]) -> Dict[tuple, dict]:
    out: Dict[tuple, dict] = {}
    for r in rows:
        if r.get("kind") in ("task", "spread"):
            continue
        out.setdefault((r["task"], r["eps"], r["model"]), []).append(r)
    summary = {}
    for key, rs in out.items():
        ok = [r for r in rs if "auc" in r]
        if ok:
            summary[key] = {k: mean_std(r[k] for r in ok) for k in ("auc", "bacc", "acc")}
            summary[key]["runs"] = len(ok)
            if len(ok) < len(rs):
                summary[key]["note"] = f"{len(rs) - len(ok)} failed"
        else:
            summary[key] = {"status": rs[0].get("status", "failed"), "error": rs[0].get("error", "")}
    return summary


def _cell(s: Optional[dict], k: str) -> str:
    if s is None:
        return "—"
    if "status" in s:
        return s["status"] if s["status"] == NA else "failed"
    m, sd = s[k]
    return fmt_pm(m, sd if s["runs"] > 1 else None, ".3f")


def render(doc: dict) -> str:
    cfg, rows = doc["config"], doc["rows"]
    S = summarise(rows)
    tasks = [t for t in TASKS if any(k[0] == t for k in S)]
    models = [m.name for m in MODELS if any(k[2] == m.name for k in S)]
    git = doc.get("environment", {}).get("git", {})
    lines = [f"Config: n = {cfg['n']}, T = {cfg['T']}, scored test rows ≤ {cfg['n_test']}, δ = {cfg['delta']}, "
             f"runs = {cfg['runs']}, ε ∈ {list(cfg['epsilons'])}, kernel {KERNEL}, tol = {TOL}, "
             f"validation grid C ∈ {list(cfg['val_grid'])}, RFF d̂ = {cfg['rff']}, base seed {cfg['seed']}, "
             f"skipped groups {list(cfg['skip']) or 'none'}; library commit {git.get('commit', '?')}"
             + (f" (modified: {', '.join(git['modified'])})" if git.get("modified") else ""), ""]
    for note in doc.get("notes", []):
        lines.append(f"- {note}")
    lines.append("")
    for eps in cfg["epsilons"]:
        lines += [f"### ε = {eps:g}: ROC AUC / balanced accuracy / accuracy (mean ± sd over runs)", "",
                  "| model | " + " | ".join(tasks) + " |", "|---|" + "---|" * len(tasks)]
        for m in models:
            cells = []
            for t in tasks:
                s = S.get((t, eps, m))
                if s is not None and "status" in s:
                    cells.append(_cell(s, "auc"))
                else:
                    cells.append(" / ".join(_cell(s, k) for k in ("auc", "bacc", "acc")) if s else "—")
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
        lines.append("")
    task_rows = {r["task"]: r for r in rows if r.get("kind") == "task"}
    if task_rows:
        lines += ["### Tasks", "", "| task | n | validation | scored | positive rate train / test | C = auto per ε | "
                  "best validation C (hinge / logistic) |", "|---|---|---|---|---|---|---|"]
        for t in tasks:
            r = task_rows.get(t)
            if r:
                ca = ", ".join(f"{e}: {float(v):.3g}" for e, v in r["C_auto"].items())
                lines.append(f"| {t} | {r['n']} | {r['n_val']} | {r['n_scored']} | {r['pos_train']:.3f} / "
                             f"{r['pos_test']:.3f} | {ca} | {r['best_C']['hinge']} / {r['best_C']['logistic']} |")
        lines.append("")
    sp = [r for r in rows if r.get("kind") == "spread"]
    if sp:
        lines += ["### Decision-value spread (non-private, scored test rows) vs GP noise sd", "",
                  "| task | ε | C | loss | mean f | sd f | GP noise sd | noise / spread | non-private AUC |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in sp:
            lines.append(f"| {r['task']} | {r['eps']:g} | {r['C']:.3g} ({r['C_rule']}) | {r['loss']} | "
                         f"{r['dec_mean']:.3f} | {r['dec_sd']:.3f} | {r['noise_sd']:.3f} | "
                         f"{r['noise_sd'] / r['dec_sd'] if r['dec_sd'] > 0 else float('inf'):.2f} | {r['auc']:.3f} |"
                         + (" GPService refused: solver tolerance not certified |" if r.get("error") else ""))
        lines.append("")
    for eps in cfg["epsilons"]:  # compact: the means only, AUC (balanced accuracy)
        lines += [f"### ε = {eps:g}, compact: mean ROC AUC (mean balanced accuracy)", "",
                  "| model | " + " | ".join(tasks) + " |", "|---|" + "---|" * len(tasks)]
        for m in models:
            cells = []
            for t in tasks:
                s = S.get((t, eps, m))
                cells.append("—" if s is None else "n/a" if s.get("status") == NA else "failed" if "status" in s
                             else f"{s['auc'][0]:.3f} ({s['bacc'][0]:.3f})")
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
        lines.append("")
    fails = [r for r in rows if r.get("status") == "failed"]
    if fails:
        lines += [f"### Failures: {len(fails)}", ""] + [f"- {r['task']} ε={r['eps']} run {r['run']} {r['model']}: "
                                                        f"{r['error']}" for r in fails[:20]] + [""]
    if doc.get("timings"):
        lines.append("Timings (s): " + ", ".join(f"{k} {v:.0f}" for k, v in doc["timings"].items()) + "\n")
    return "\n".join(lines)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None) -> int:
    p = experiment_parser(__doc__, DEFAULT_SEED, quick="CI size: 1 seed, n = 2,000, ε = 1 (under a minute)",
                          datasets=TASKS, render="imbalanced_results.json")
    p.add_argument("--epsilons", type=float, nargs="+", default=None, help="default 0.5 1 2 (--quick: 1)")
    p.add_argument("--n", type=int, default=None, help="training rows (default 20,000; --quick 2,000)")
    p.add_argument("--skip", type=lambda s: parse_choices(s, GROUPS), default=(),
                   help="comma-separated model groups not to run: " + ",".join(GROUPS))
    p.add_argument("--val-grid", type=float, nargs="+", default=None,
                   help="C grid of the non-private validation selection (default 0.001 0.01 0.1 1)")
    p.add_argument("--tag", default="", help="suffix of the output files (imbalanced_<tag>_results.*)")
    p.add_argument("--merge", nargs="+", metavar="RESULTS_JSON", default=None,
                   help="render several saved runs (e.g. one per --skip group) as one table into "
                        "<outdir>/imbalanced_combined_results.md (no fitting)")
    args = p.parse_args(argv)
    if args.merge:
        import json

        docs = []
        for path in args.merge:
            with open(path) as fh:
                docs.append(json.load(fh))
        cfg = dict(docs[0]["config"])
        cfg["epsilons"] = sorted({e for d in docs for e in d["config"]["epsilons"]})
        cfg["skip"] = sorted(set.intersection(*(set(d["config"]["skip"]) for d in docs)))
        doc = dict(config=cfg, rows=[r for d in docs for r in d["rows"]],
                   notes=[f"merged from {', '.join(os.path.basename(x) for x in args.merge)} (runs: "
                          + ", ".join(str(d['config']['runs']) for d in docs) + "; commits: "
                          + ", ".join(d.get('environment', {}).get('git', {}).get('commit', '?')[:7] for d in docs)
                          + ")"] + [n for d in docs for n in d.get("notes", [])], environment=docs[0].get("environment", {}))
        text = render(doc)
        write_text(output_prefix(args.outdir, "imbalanced_combined", False) + "_results.md", text)
        print(text)
        return 0
    if args.render:
        import json

        with open(args.render) as fh:
            doc = json.load(fh)
        path = args.render.replace(".json", ".md")
        write_text(path, render(doc))
        print(render(doc))
        return 0
    cfg = Config(seed=args.seed)
    if args.quick:
        cfg = Config(seed=args.seed, **QUICK)
    over = dict(datasets=args.datasets, skip=args.skip)
    if args.runs is not None:
        over["runs"] = args.runs
    if args.epsilons:
        over["epsilons"] = tuple(args.epsilons)
    if args.n:
        over["n"] = args.n
    if args.val_grid:
        over["val_grid"] = tuple(args.val_grid)
    from dataclasses import asdict, replace

    cfg = replace(cfg, **over)
    git = git_state()
    log = RunLog(cfg)
    # `kill <pid>` behaves like Ctrl-C (a background job ignores SIGINT): the finished tasks are written
    signal.signal(signal.SIGTERM, _interrupt)
    status = log.run([(t, (lambda t=t: run_task(cfg, t, log))) for t in cfg.datasets])
    prefix = output_prefix(args.outdir, "imbalanced" + (f"_{args.tag}" if args.tag else ""), args.quick)
    doc = dict(config=asdict(cfg), rows=log.rows, notes=log.notes, timings=log.timings,
               environment=environment(git))
    write_json(prefix + "_results.json", doc)
    text = render(doc)
    write_text(prefix + "_results.md", text)
    print(text)
    return status


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""PrivateSVM (Rubinstein et al. 2009) accuracy vs ε on Adult and Shuttle, against the non-private SVM
and against TDDL (Jain & Thakurta 2013) at equal ε (issue 6).

Everything private goes through the library: :class:`dpcore.PrivateSVM` (output perturbation of the
SVM in a finite feature space: RBF random Fourier features, κ = 1, or the linear map on the unit
ball, κ = 1; exact grid Laplace noise, pure ε-DP), :class:`dpcore.KernelSVM` (exact RBF kernel,
non-private) and :class:`dpcore.TDDL` (Gaussian noise, private norm bound, (ε, δ)-DP). Nothing of a
mechanism is re-implemented here.

PrivateSVM is run with both of its sensitivity calibrations (``calibration=``): ``"spec"`` (the
SPEC's/paper's L1 bound ``4LCκ√F/n``, the default) and ``"tight"`` (``2LCκ√F/n``, proven in
:mod:`dpcore.private_svm.estimator`; half the noise at the same ε). Both add the same solver-residual term and
are pure ε-DP; the two variants of a feature map share the certified solve of the run and differ
only in the release (methods ``psvm-*`` and ``psvm-*-tight``).

One solve per run, fresh noise per ε and calibration
----------------------------------------------------
``PrivateSVM.fit`` draws the public RFF frequencies, solves the certified SVM (deterministic) and adds
the noise. The certified solve takes well under a second to about a second at n = 30,000 here (see the
timings table of the results), but refitting once per (ε, calibration) would repeat the identical
deterministic solve 14 times per run and feature map. The script therefore calls the *same* code path
``fit`` uses, split in its three steps — ``PrivateSVM._prepare`` (features + public calibration),
``._solve`` (certified w*) and ``._release`` (exact grid Laplace release of w* for the calibration of
the given ε) — solving once per (dataset, feature map, C, run) and releasing at every (ε, calibration)
with a fresh noise seed: for each release the estimator's ``epsilon`` and ``calibration`` are set and
``_prepare`` recomputes the public calibration exactly as ``fit`` does (the calibration used is checked
and recorded with each release). The RFF draw of run ``r`` is fixed by the run seed (independent of C,
ε and the calibration). Checks at the start of the run (recorded in the JSON as
``equivalence_checks``) fit ``PrivateSVM.fit`` publicly, with each calibration, with the run's ChaCha20
seed and verify that it releases bit-for-bit the vector of the split path. The non-private RFF baseline
is the certified w* itself (exactly the vector PrivateSVM perturbs).

Regularisation
--------------
C is quoted in LIBSVM units as in the TDDL experiment: KernelSVM's λ = 1/(n·C); PrivateSVM's
objective ½||w||² + (C_P/n) Σ hinge is the same minimiser for C_P = n·C. PrivateSVM's Laplace scale
per coordinate is then b = 4·L·C_P·κ·√F/(ε n) = 4·C·√F/ε (``"spec"``; ``2·C·√F/ε`` for ``"tight"``)
— independent of n at fixed C (plus the small solver-residual term of both).

* PrivateSVM runs at **C = 0.01, fixed before the run** (not selected on private data). It is not a
  data-independent choice in the strict sense: the TDDL experiment on the same data had shown that the
  paper's C = 0.001 gives a majority-class RBF SVM on both datasets, and that 0.01 is within ~1.5
  points of the best non-private C on both. The ``csweep`` stage reports the non-private validation /
  test accuracy of the RFF and linear SVMs at C ∈ {0.001, 0.01, 0.1} (one RFF draw) to show what
  selection by (non-private!) validation accuracy would pick; hyper-parameter selection on the private
  training data is itself not private and is *not* used for the private runs.
* TDDL runs at C = 0.001 (the paper's value, as the TDDL experiment) and at C = 0.01 (equal C with
  PrivateSVM), RBF γ = 1, n = 30,000, T = 1000 public points sampled from the test split,
  noise="gaussian", norm_bound="private" (10% of ε), δ = 1e-6. PrivateSVM is pure ε-DP (δ = 0).

Every method is scored on the same rows: in run r, the test split minus TDDL's T public points of run r.

Stages (``--stages``; all by default): ``main`` (PrivateSVM RFF d̂ ∈ {50, 200} and linear, each with
the spec and the tight calibration, TDDL, the non-private baselines, ε ∈ {0.1, 0.5, 1, 2, 5, 10, 50},
10 runs) and ``csweep`` (non-private C sensitivity, run last). All randomness derives from one public
base seed (the TDDL experiment's, so the training prefix and the public samples coincide with it).
Ctrl-C writes partial results and exits with status 130.

Outputs (``--outdir``, default ``experiments/results``): ``private_svm_results.json`` (every release
with its calibration), ``private_svm_results.md`` (tables), ``private_svm_accuracy_vs_eps.png``.
``--quick`` (n = 2000, T = 200, 2 runs, 3 ε; < 1 minute) writes ``private_svm_quick_*``.

Usage::

    .venv/bin/python experiments/private_svm_accuracy.py --quick
    .venv/bin/python experiments/private_svm_accuracy.py            # full run, ~5 min on 2 cores
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

import dpcore
from dpcore.kernel_learning.svm import ConvergenceWarning
from dpcore.glm.perturbation import ConvergenceError
from dpcore.mechanisms.noise import ChaChaRng

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _harness.py sits next to this script
from _harness import (  # noqa: E402
    Data, accuracy, cell, configure, derive_seed, environment, experiment_parser,
    failures_and_timings, find, fmt, fmt_pm, git_state, group_rows, load_data, lookup,
    majority_rate, mean_std, output_prefix, progress, public_sample, pyplot, run_stages,
    save_figure, write_json, write_text
)

DEFAULT_SEED = 20130616  # the TDDL experiment's: same training prefix and public samples
DATASET_LABELS = {"adult": "Adult", "shuttle": "Shuttle"}


# ------------------------------------------------------------------------------------------------
# configuration
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    mode: str = "full"
    seed: int = DEFAULT_SEED
    datasets: Tuple[str, ...] = ("adult", "shuttle")
    n: int = 30_000
    T: int = 1000
    gamma: float = 1.0
    epsilons: Tuple[float, ...] = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 50.0)
    delta: float = 1e-6  # TDDL only; PrivateSVM is pure ε-DP
    runs: int = 10
    n_components: Tuple[int, ...] = (50, 200)
    calibrations: Tuple[str, ...] = ("spec", "tight")  # PrivateSVM's sensitivity calibrations (one solve)
    C_psvm: float = 0.01  # LIBSVM units; PrivateSVM's C = n·C_psvm
    C_tddl: Tuple[float, ...] = (0.001, 0.01)
    norm_epsilon_share: float = 0.1
    tol_per_C: float = 1e-7  # solver tol = tol_per_C·C (TDDL experiment's rule; 1e-9 at C = 0.01)
    max_iter: Optional[int] = None  # PrivateSVM default: 10,000 DCD epochs per round, 1,000 L-BFGS iterations
    csweep_C: Tuple[float, ...] = (0.001, 0.01, 0.1)
    csweep_components: Tuple[int, ...] = (200,)
    stages: Tuple[str, ...] = ("main", "csweep")

    def tol(self, C: float) -> float:
        return self.tol_per_C * C


QUICK = dict(mode="quick", n=2000, T=200, epsilons=(0.5, 5.0, 50.0), runs=2, n_components=(50,),
             csweep_C=(0.01, 0.1), csweep_components=(50,))


# ------------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------------


def load(name: str, cfg: Config) -> Data:
    """As the TDDL experiment: the first n rows of Adult in a fixed public permutation, of Shuttle in its
    (already random) order; the other training rows are validation rows (csweep diagnostics only)."""
    return load_data(name, cfg.n, order_seed=derive_seed(cfg.seed, "adult-train-order") if name == "adult" else None)


def public_split(d: Data, T: int, run: int, cfg: Config):
    """TDDL's T public points (test split, without replacement; as the TDDL experiment) and the scored rest."""
    return public_sample(d.y_test.shape[0], T, derive_seed(cfg.seed, d.name, "public-sample", T, run))


# ------------------------------------------------------------------------------------------------
# PrivateSVM: one certified solve, releases at every ε
# ------------------------------------------------------------------------------------------------


def method_name(kernel: str, D: int, calibration: str = "spec") -> str:
    base = f"psvm-rff{D}" if kernel == "rbf" else "psvm-linear"
    return base if calibration == "spec" else f"{base}-{calibration}"


def method_calibration(m: str) -> str:
    """PrivateSVM method → its calibration (the spec variant keeps the historical name)."""
    return "tight" if m.endswith("-tight") else "spec"


def method_label(m: str) -> str:
    if m.startswith("psvm"):
        base = m[:-len("-tight")] if m.endswith("-tight") else m
        label = f"PrivateSVM RFF d̂={base[len('psvm-rff'):]}" if base.startswith("psvm-rff") else "PrivateSVM linear"
        return f"{label}, {method_calibration(m)}"
    if m.startswith("tddl-C"):
        return f"TDDL RBF, C={m[len('tddl-C'):]}"
    return m


def make_psvm(cfg: Config, kernel: str, D: int, C: float, n: int, eps: float, random_state=None,
              calibration: str = "spec"):
    kw = dict(n_components=2 * D, gamma=cfg.gamma) if kernel == "rbf" else dict(data_norm=1.0)
    return dpcore.PrivateSVM(C=C, epsilon=eps, kernel=kernel, tol=cfg.tol(C), max_iter=cfg.max_iter,
                             random_state=random_state, calibration=calibration, **kw)


def rff_seed(cfg: Config, ds: str, kernel: str, D: int, run: int) -> int:
    # independent of C and ε: the RFF draw of a run is shared by every C and ε
    return derive_seed(cfg.seed, ds, "psvm-rff", kernel, D, run if kernel == "rbf" else 0)


@dataclass
class Solved:
    est: object
    prep: object
    theta: np.ndarray
    cert: object
    solve_s: float
    prepare_s: float


def psvm_solve(cfg: Config, d: Data, kernel: str, D: int, C: float, run: int) -> Solved:
    """Features, public calibration and the certified w* (no noise): ``PrivateSVM.fit`` up to the release."""
    rng = ChaChaRng(rff_seed(cfg, d.name, kernel, D, run))
    est = make_psvm(cfg, kernel, D, C, d.y.shape[0], cfg.epsilons[0], random_state=rng)
    t0 = time.perf_counter()
    prep = est._prepare(d.X, d.y, rng)
    t1 = time.perf_counter()
    theta, cert = est._solve(prep)
    t2 = time.perf_counter()
    return Solved(est, prep, theta, cert, t2 - t1, t1 - t0)


def psvm_release(s: Solved, eps: float, seed: int, d: Data, calibration: str = "spec"):
    """``PrivateSVM``'s exact grid Laplace release of w* at ε with the given calibration.

    The public calibration is recomputed by the library (``_prepare``, as in ``fit``) for the
    estimator's parameters with ``epsilon`` and ``calibration`` set; both are set on every call.
    """
    s.est.set_params(epsilon=eps, calibration=calibration)
    t0 = time.perf_counter()
    prep = s.est._prepare(d.X, d.y, None, random_features=s.prep.rff)
    if prep.cal.calibration != calibration or prep.cal.epsilon != eps:  # pragma: no cover - sanity
        raise RuntimeError(f"calibration {prep.cal.calibration!r} at ε={prep.cal.epsilon}, expected {calibration!r}")
    w = s.est._release(prep, s.theta, ChaChaRng(seed))
    return w, prep.cal, time.perf_counter() - t0


def features(s: Solved, X: np.ndarray) -> np.ndarray:
    return X if s.prep.rff is None else s.prep.rff.transform(X)


def equivalence_check(cfg: Config, d: Data, kernel: str, D: int, C: float, calibration: str = "spec") -> dict:
    """Public ``PrivateSVM.fit`` vs the split path with the same ChaCha20 stream: identical release?

    The split path is the script's own: solve with a spec-calibrated estimator (the solve does not
    depend on the calibration), then :func:`psvm_release` with ``calibration``, continuing the same
    ChaCha20 stream — as ``fit`` does with one ``calibration``-estimator.
    """
    seed = rff_seed(cfg, d.name, kernel, D, 0)
    eps = cfg.epsilons[len(cfg.epsilons) // 2]
    t0 = time.perf_counter()
    pub = make_psvm(cfg, kernel, D, C, d.y.shape[0], eps, random_state=seed, calibration=calibration).fit(d.X, d.y)
    fit_s = time.perf_counter() - t0
    rng = ChaChaRng(seed)
    est = make_psvm(cfg, kernel, D, C, d.y.shape[0], eps, random_state=rng)
    prep = est._prepare(d.X, d.y, rng)
    theta, _ = est._solve(prep)
    est.set_params(epsilon=eps, calibration=calibration)
    prep2 = est._prepare(d.X, d.y, None, random_features=prep.rff)
    w = est._release(prep2, theta, rng)
    key = ("calibration", "epsilon", "sensitivity_l1", "release_scale", "release_granularity")
    same = bool(np.array_equal(w, pub.coef_)) and bool(
        prep.rff is None or np.array_equal(prep.rff.random_weights_, pub.random_features_.random_weights_)) and all(
        getattr(prep2.cal, k) == getattr(pub.privacy_, k) for k in key)
    return dict(dataset=d.name, method=method_name(kernel, D, calibration), C=C, epsilon=eps,
                calibration=calibration, sensitivity_l1=pub.privacy_.sensitivity_l1, identical=same,
                public_fit_seconds=fit_s)


# ------------------------------------------------------------------------------------------------
# state
# ------------------------------------------------------------------------------------------------


@dataclass
class State:
    cfg: Config
    records: List[dict] = field(default_factory=list)  # one per private release
    runs: List[dict] = field(default_factory=list)  # one per (dataset, method, run): non-private + w* scale
    models: List[dict] = field(default_factory=list)  # KernelSVM fits
    csweep: List[dict] = field(default_factory=list)
    checks: List[dict] = field(default_factory=list)
    timings: Dict[str, float] = field(default_factory=dict)
    interrupted: bool = False
    git: dict = field(default_factory=dict)


def fit_kernel_svm(cfg: Config, d: Data, C: float):
    n = d.y.shape[0]
    lam = 1.0 / (n * C)
    model = dpcore.KernelSVM(lam=lam, kernel="rbf", gamma=cfg.gamma, tol=cfg.tol(C))
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(d.X, d.y)
    fit_s = time.perf_counter() - t0
    meta = dict(dataset=d.name, C=C, lam=lam, n=n, tol=cfg.tol(C), fit_seconds=fit_s,
                n_support=int(model.support_.shape[0]), w_norm=float(model.w_norm_),
                duality_gap=float(model.duality_gap_), converged=bool(model.converged_),
                test_acc=accuracy(model.decision_function(d.X_test), d.y_test),
                warnings=[str(w.message) for w in caught])
    return model, meta


def stage_main(state: State, data: Dict[str, Data]) -> None:
    cfg = state.cfg
    configs = [("rbf", D) for D in cfg.n_components] + [("linear", 0)]
    n_psvm = len(configs) * len(cfg.calibrations)
    n_rel = len(cfg.datasets) * cfg.runs * len(cfg.epsilons) * (n_psvm + len(cfg.C_tddl))
    for ds in cfg.datasets:  # the public fit and the split path must agree (cheapest config)
        for calibration in cfg.calibrations:
            state.checks.append(equivalence_check(cfg, data[ds], "rbf", min(cfg.n_components), cfg.C_psvm,
                                                  calibration))
            print(f"equivalence check {ds} {calibration}: identical = {state.checks[-1]['identical']}",
                  file=sys.stderr)
    with progress(total=n_rel, desc="PrivateSVM + TDDL releases", unit="release") as bar:
        for ds in cfg.datasets:
            d = data[ds]
            models = {}
            for C in cfg.C_tddl:
                bar.set_postfix_str(f"{ds} KernelSVM C={C:g}", refresh=True)
                models[C], meta = fit_kernel_svm(cfg, d, C)
                meta["val_acc"] = accuracy(models[C].decision_function(d.X_val), d.y_val) if d.y_val.size else None
                state.models.append(meta)
            linear_solved = None
            for run in range(cfg.runs):
                pub, rest = public_split(d, cfg.T, run, cfg)
                Z, Q, yQ = d.X_test[pub], d.X_test[rest], d.y_test[rest]
                maj = majority_rate(yQ)
                # -- PrivateSVM
                for kernel, D in configs:
                    m = method_name(kernel, D)
                    ms = [method_name(kernel, D, c) for c in cfg.calibrations]
                    bar.set_postfix_str(f"{ds} {m} run={run} solving", refresh=True)
                    if kernel == "linear" and linear_solved is not None:
                        s = linear_solved  # no random features: w* is the same in every run
                        solve_s = 0.0
                    else:
                        try:
                            s = psvm_solve(cfg, d, kernel, D, cfg.C_psvm, run)
                        except ConvergenceError as exc:
                            for mc in ms:
                                state.runs.append(dict(dataset=ds, method=mc, run=run, error=str(exc)))
                            bar.update(len(cfg.epsilons) * len(ms))
                            continue
                        solve_s = s.solve_s
                        if kernel == "linear":
                            linear_solved = s
                    PQ = features(s, Q)
                    dec_np = PQ @ s.theta
                    F = s.theta.shape[0]
                    w_norm = float(np.linalg.norm(s.theta))
                    row = dict(dataset=ds, method=m, kernel=kernel, n_components=D, C=cfg.C_psvm,
                               C_psvm=s.prep.cal.C, n=s.prep.n, run=run, F=F, majority=maj, n_scored=int(yQ.size),
                               nonprivate_accuracy=accuracy(dec_np, yQ), w_norm=w_norm,
                               w_rms_coord=w_norm / math.sqrt(F), w_max_abs=float(np.max(np.abs(s.theta))),
                               decision_rms=float(np.sqrt(np.mean(dec_np ** 2))),
                               solve_seconds=solve_s, prepare_seconds=s.prepare_s, certificate=s.cert.as_dict())
                    if run == 0 and d.y_val.size:
                        row["nonprivate_val_accuracy"] = accuracy(features(s, d.X_val) @ s.theta, d.y_val)
                    for calibration, mc in zip(cfg.calibrations, ms):
                        # one certified solve per run and feature map, shared by the calibrations (the
                        # solve does not depend on it): its time is counted once, on the first of them
                        first = mc == ms[0]
                        state.runs.append(dict(row, method=mc, calibration=calibration,
                                               solve_seconds=solve_s if first else 0.0,
                                               solve_shared_with=None if first else ms[0]))
                        for eps in cfg.epsilons:
                            bar.set_postfix_str(f"{ds} {mc} run={run} ε={eps:g}", refresh=False)
                            # spec keeps its historical seed label (method name without suffix)
                            seed = derive_seed(cfg.seed, ds, mc, cfg.C_psvm, "noise", run, eps)
                            w, cal, rel_s = psvm_release(s, eps, seed, d, calibration)
                            dec = PQ @ w
                            state.records.append(dict(
                                dataset=ds, method=mc, calibration=cal.calibration, run=run, epsilon=eps,
                                delta=0.0, seed=seed, accuracy=accuracy(dec, yQ),
                                agreement=float(np.mean((dec > 0) == (dec_np > 0))),
                                noise_scale=cal.release_scale, noise_scale_spec=cal.noise_scale_spec,
                                sensitivity_l1=cal.sensitivity_l1, sensitivity_l1_spec=cal.sensitivity_l1_spec,
                                epsilon_used=cal.epsilon_used, noise_norm=float(np.linalg.norm(w - s.theta)),
                                release_seconds=rel_s, fit_seconds=s.prepare_s + solve_s + rel_s))
                            bar.update(1)
                # -- TDDL at equal ε (Gaussian, private norm bound)
                for C in cfg.C_tddl:
                    model = models[C]
                    m = f"tddl-C{C:g}"
                    dec_np = model.decision_function(Q)
                    dec_Z = model.decision_function(Z)
                    state.runs.append(dict(dataset=ds, method=m, kernel="rbf", n_components=0, C=C, n=d.y.shape[0],
                                           run=run, majority=maj, n_scored=int(yQ.size),
                                           nonprivate_accuracy=accuracy(dec_np, yQ), w_norm=float(model.w_norm_),
                                           decision_rms=float(np.sqrt(np.mean(dec_np ** 2))),
                                           pred_rms_Z=float(np.sqrt(np.mean(dec_Z ** 2)))))
                    for eps in cfg.epsilons:
                        bar.set_postfix_str(f"{ds} {m} run={run} ε={eps:g}", refresh=False)
                        seed = derive_seed(cfg.seed, ds, m, "noise", run, eps)
                        t0 = time.perf_counter()
                        try:
                            tddl = dpcore.TDDL(model, eps, cfg.delta, data_norm=d.data_norm, noise="gaussian", norm_bound="private",
                                               norm_epsilon_share=cfg.norm_epsilon_share, random_state=seed)
                            with warnings.catch_warnings():
                                warnings.simplefilter("ignore", UserWarning)  # zero-model warning at tiny ε
                                tddl.fit(Z)
                        except (ValueError, ConvergenceError) as exc:
                            state.records.append(dict(dataset=ds, method=m, run=run, epsilon=eps, error=str(exc)))
                            bar.update(1)
                            continue
                        rel_s = time.perf_counter() - t0
                        dec = tddl.decision_function(Q)
                        cal = tddl.privacy_
                        state.records.append(dict(
                            dataset=ds, method=m, run=run, epsilon=eps, delta=cfg.delta, seed=seed,
                            accuracy=accuracy(dec, yQ), agreement=float(np.mean((dec > 0) == (dec_np > 0))),
                            noise_scale=cal.noise_scale, sensitivity=cal.sensitivity,
                            lambda_max_upper=cal.lambda_max_upper, norm_bound=float(tddl.norm_bound_),
                            release_seconds=rel_s, fit_seconds=rel_s))
                        bar.update(1)


def stage_csweep(state: State, data: Dict[str, Data]) -> None:
    """Non-private C sensitivity (one RFF draw, run 0): what (non-private) validation would choose."""
    cfg = state.cfg
    configs = [("rbf", D) for D in cfg.csweep_components] + [("linear", 0)]
    todo = [(ds, k, D, C) for ds in cfg.datasets for k, D in configs for C in cfg.csweep_C]
    with progress(total=len(todo), desc="non-private C sweep", unit="solve") as bar:
        for ds, kernel, D, C in todo:
            d = data[ds]
            bar.set_postfix_str(f"{ds} {method_name(kernel, D)} C={C:g}", refresh=True)
            row = dict(dataset=ds, method=method_name(kernel, D), C=C)
            try:
                s = psvm_solve(cfg, d, kernel, D, C, 0)
            except ConvergenceError as exc:
                row["error"] = str(exc)
            else:
                F = s.theta.shape[0]
                b1 = psvm_release(s, 1.0, 0, d)[1].release_scale  # public calibration at ε = 1
                b1t = psvm_release(s, 1.0, 0, d, "tight")[1].release_scale
                row.update(C_psvm=s.prep.cal.C, F=F, solve_seconds=s.solve_s,
                           val_acc=accuracy(features(s, d.X_val) @ s.theta, d.y_val) if d.y_val.size else None,
                           test_acc=accuracy(features(s, d.X_test) @ s.theta, d.y_test),
                           w_norm=float(np.linalg.norm(s.theta)), w_rms_coord=float(np.linalg.norm(s.theta)) / math.sqrt(F),
                           noise_scale_eps1=b1, noise_scale_eps1_tight=b1t,
                           val_majority=majority_rate(d.y_val) if d.y_val.size else None,
                           test_majority=majority_rate(d.y_test))
            state.csweep.append(row)
            bar.update(1)


# ------------------------------------------------------------------------------------------------
# summaries, tables, plots
# ------------------------------------------------------------------------------------------------


def summarise(state: State) -> dict:
    rows = []
    for (ds, m, eps), recs in group_rows([r for r in state.records if "error" not in r],
                                          lambda r: (r["dataset"], r["method"], r["epsilon"]), by_text=False):
        a = mean_std([r["accuracy"] for r in recs])
        rows.append(dict(dataset=ds, method=m, epsilon=eps, n_runs=len(recs), accuracy_mean=a[0], accuracy_std=a[1],
                         agreement_mean=mean_std([r["agreement"] for r in recs])[0],
                         noise_scale=mean_std([r["noise_scale"] for r in recs])[0],
                         fit_seconds_mean=mean_std([r["fit_seconds"] for r in recs])[0],
                         release_seconds_mean=mean_std([r["release_seconds"] for r in recs])[0]))
    methods = []
    for (ds, m), rr in group_rows([r for r in state.runs if "error" not in r], lambda r: (r["dataset"], r["method"]),
                                  by_text=False):
        row = dict(dataset=ds, method=m, n_runs=len(rr))
        for k in ("nonprivate_accuracy", "majority", "w_norm", "w_rms_coord", "w_max_abs", "decision_rms", "pred_rms_Z",
                  "solve_seconds", "nonprivate_val_accuracy"):
            vals = [r[k] for r in rr if k in r and r[k] is not None]
            if k == "solve_seconds":
                vals = [v for v in vals if v > 0]  # the linear w* is solved once and reused
            row[k + "_mean"], row[k + "_std"] = mean_std(vals) if vals else (float("nan"), float("nan"))
        for k in ("C", "C_psvm", "F", "n"):
            if k in rr[0]:
                row[k] = rr[0][k]
        methods.append(row)
    failures = [r for r in state.records + state.runs if "error" in r]
    return dict(rows=rows, methods=methods, failures=failures)


def method_order(cfg: Config) -> List[str]:
    configs = [("rbf", D) for D in cfg.n_components] + [("linear", 0)]
    return ([method_name(k, D, c) for k, D in configs for c in cfg.calibrations]
            + [f"tddl-C{C:g}" for C in cfg.C_tddl])


def solve_owner(cfg: Config, m: str) -> str:
    """The PrivateSVM method whose row carries the (shared) solve time of ``m``'s feature map."""
    base = m[:-len("-tight")] if m.endswith("-tight") else m
    return base if cfg.calibrations[0] == "spec" else f"{base}-{cfg.calibrations[0]}"


def csweep_label(m: str) -> str:
    """The C sweep is non-private (no calibration): the feature map only."""
    return method_label(m).rsplit(", ", 1)[0]


def markdown(state: State, summary: dict, total_s: float) -> str:
    cfg = state.cfg
    rows, methods = summary["rows"], summary["methods"]
    L = [f"# PrivateSVM accuracy vs ε ({cfg.mode} run{', INTERRUPTED: partial results' if state.interrupted else ''})\n"]
    L.append(
        f"dpcore {dpcore.__version__}; base seed {cfg.seed}; n = {cfg.n:,} (public prefix of the train split); "
        f"{cfg.runs} runs per cell (mean ± std over runs, ddof = 1, in %); every method is scored on the test split "
        f"minus TDDL's T = {cfg.T} public points of the run. RBF γ = {cfg.gamma:g}. C in LIBSVM units "
        f"(λ = 1/(n·C); PrivateSVM's C_P = n·C). PrivateSVM: C = {cfg.C_psvm:g} fixed a priori, no intercept, "
        f"hinge, tol = {cfg.tol_per_C:g}·C, max_iter = {'default' if cfg.max_iter is None else cfg.max_iter}, "
        f"pure ε-DP (δ = 0), exact grid Laplace release "
        f"with calibration ∈ {{{', '.join(cfg.calibrations)}}} (spec: L1 sensitivity 4LCκ√F/n, tight: 2LCκ√F/n, "
        f"both + 2ρ√F for the solver residual; one certified solve per run shared by both); the RFF draw is fixed per "
        f"run, the noise is fresh per (run, ε, calibration). TDDL: KernelSVM RBF, C ∈ {{{', '.join(f'{c:g}' for c in cfg.C_tddl)}}}, "
        f"noise = gaussian, private norm bound ({cfg.norm_epsilon_share:g}·ε), (ε, δ = {cfg.delta:g})-DP. "
        f"Wall-clock: {total_s / 60:.1f} min.\n")
    if state.checks:
        L.append("Equivalence of the split path (one solve, release per ε) with the public `PrivateSVM.fit`: "
                 + "; ".join(f"{c['dataset']} {c['method']} ε={c['epsilon']:g}: "
                             f"{'identical release' if c['identical'] else 'MISMATCH'} (public fit {c['public_fit_seconds']:.1f} s)"
                             for c in state.checks) + "\n")
    for ds in cfg.datasets:
        mm = {r["method"]: r for r in lookup(methods, dataset=ds)}
        if not mm:
            continue
        some = next(iter(mm.values()))
        L.append(f"## {DATASET_LABELS[ds]} (n = {some.get('n', cfg.n):,}; majority class on the scored rows "
                 f"{100 * some['majority_mean']:.1f}%)\n")
        L.append("### Test accuracy (%) vs ε\n")
        L.append("| method | δ | " + " | ".join(f"ε={e:g}" for e in cfg.epsilons) + " | non-private (same features / model) |")
        L.append("|---|---|" + "---|" * len(cfg.epsilons) + "---|")
        for m in method_order(cfg):
            if m not in mm:
                continue
            cells = []
            for e in cfg.epsilons:
                cells.append(cell(find(rows, dataset=ds, method=m, epsilon=e), "accuracy"))
            delta = "0" if m.startswith("psvm") else f"{cfg.delta:g}"
            L.append(f"| {method_label(m)} | {delta} | " + " | ".join(cells) + " | "
                     f"{cell(mm[m], 'nonprivate_accuracy')} |")
        exact = [x for x in state.models if x["dataset"] == ds]
        if exact:
            L.append("")
            L.append("Non-private exact-kernel SVM (`KernelSVM`, RBF, full test split): " + ", ".join(
                f"C = {x['C']:g}: {100 * x['test_acc']:.2f}% (‖w‖ = {x['w_norm']:.3g}, {x['n_support']:,} SVs, "
                f"fit {x['fit_seconds']:.1f} s)" for x in exact) + ".")
        L.append("")
        # -- noise vs |w|
        L.append("### Noise scale vs the scale of w*\n")
        L.append("PrivateSVM: Laplace scale b per coordinate of w (b ∝ 1/ε; here b at ε = 1 and the ε at which b equals "
                 "the RMS coordinate of w*); the noise adds a term ⟨η, φ(x)⟩ of std ≈ √2·b·‖φ(x)‖ (‖φ(x)‖ = 1 for RFF, "
                 "≤ 1 linear) to every decision value, to be compared with the RMS decision value of w*. "
                 "TDDL: Gaussian σ on each of the T predictions ⟨w*, φ(z_t)⟩ (then averaged by the least-squares fit).\n")
        L.append("| method | F | ‖w*‖ | RMS w*_j | max abs w*_j | RMS ⟨w*, φ(x)⟩ (test) | noise scale at ε=1 | "
                 "decision noise std at ε=1 | ε where b = RMS w*_j | ε where decision noise std = RMS decision |")
        L.append("|---|---|---|---|---|---|---|---|---|---|")
        for m in method_order(cfg):
            if m not in mm:
                continue
            r = mm[m]
            at1 = lookup(rows, dataset=ds, method=m, epsilon=1.0)
            if at1:
                ns1 = at1[0]["noise_scale"]
            else:  # scale ∝ 1/ε
                rr = lookup(rows, dataset=ds, method=m)
                ns1 = rr[0]["noise_scale"] * rr[0]["epsilon"] if rr and m.startswith("psvm") else float("nan")
            if m.startswith("psvm"):
                dec_std = math.sqrt(2.0) * ns1
                L.append(f"| {method_label(m)} | {r.get('F', '—')} | {fmt(r['w_norm_mean'])} | {fmt(r['w_rms_coord_mean'])} | "
                         f"{fmt(r['w_max_abs_mean'])} | {fmt(r['decision_rms_mean'])} | b = {fmt(ns1)} | {fmt(dec_std)} | "
                         f"{fmt(ns1 / r['w_rms_coord_mean'])} | {fmt(dec_std / r['decision_rms_mean'])} |")
            else:
                L.append(f"| {method_label(m)} | ∞ (T = {cfg.T} coords released) | {fmt(r['w_norm_mean'])} | — | — | "
                         f"{fmt(r['decision_rms_mean'])} (on Z: {fmt(r['pred_rms_Z_mean'])}) | σ = {fmt(ns1)} | {fmt(ns1)} | — | "
                         f"≈ {fmt(ns1 / r['pred_rms_Z_mean'])} (σ ∝ 1/ε only roughly: (ε, δ) Gaussian) |")
        L.append("")
        L.append("Noise scale per coordinate by ε (PrivateSVM b; TDDL σ):\n")
        L.append("| method | " + " | ".join(f"ε={e:g}" for e in cfg.epsilons) + " |")
        L.append("|---|" + "---|" * len(cfg.epsilons))
        for m in method_order(cfg):
            if m not in mm:
                continue
            cells = [fmt((lookup(rows, dataset=ds, method=m, epsilon=e) or [dict(noise_scale=None)])[0]["noise_scale"])
                     for e in cfg.epsilons]
            L.append(f"| {method_label(m)} | " + " | ".join(cells) + " |")
        L.append("")
        # -- timings
        L.append("### Timings (s, mean per run / release)\n")
        L.append("| method | certified solve (once per run) | release per ε | one public `fit` (solve + release) |")
        L.append("|---|---|---|---|")
        for m in method_order(cfg):
            if m not in mm:
                continue
            rr = lookup(rows, dataset=ds, method=m)
            rel = mean_std([r["release_seconds_mean"] for r in rr])[0]
            if m.startswith("psvm"):
                owner = solve_owner(cfg, m)  # the calibrations of a feature map share one solve
                solve = mm[owner]["solve_seconds_mean"] if owner in mm else float("nan")
                solve_cell = (fmt_pm(solve, mm[owner]["solve_seconds_std"], ".2f") if owner == m
                              else f"shared with {method_label(owner)}")
                L.append(f"| {method_label(m)} | {solve_cell} | {fmt(rel, '.3f')} | ≈ {fmt(solve + rel, '.2f')} |")
            else:
                fit = [x["fit_seconds"] for x in state.models if x["dataset"] == ds and f"tddl-C{x['C']:g}" == m]
                L.append(f"| {method_label(m)} | KernelSVM fit {fmt(fit[0] if fit else None, '.1f')} (once) | "
                         f"{fmt(rel, '.3f')} (TDDL.fit) | — |")
        L.append("")
    if state.csweep:
        L.append("## Non-private C sensitivity (one RFF draw; NOT used to choose the private runs' C)\n")
        L.append("Selecting C by validation accuracy on the private training data is itself not private; this table only "
                 "shows what such a (non-private) selection would pick and what it costs in noise (b ∝ C).\n")
        L.append("| dataset | method | C | C_P = n·C | val acc | val majority | test acc | ‖w*‖ | RMS w*_j | b at ε=1 (spec) | "
                 "b at ε=1 (tight) | solve s |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in state.csweep:
            if "error" in r:
                L.append(f"| {r['dataset']} | {csweep_label(r['method'])} | {r['C']:g} | — | error: {r['error'][:60]} ||||||||")
                continue
            L.append(f"| {r['dataset']} | {csweep_label(r['method'])} | {r['C']:g} | {r['C_psvm']:g} | "
                     f"{fmt(100 * r['val_acc'] if r['val_acc'] is not None else None, '.2f')} | "
                     f"{fmt(100 * r['val_majority'] if r['val_majority'] is not None else None, '.2f')} | "
                     f"{100 * r['test_acc']:.2f} | {r['w_norm']:.3g} | {r['w_rms_coord']:.3g} | {r['noise_scale_eps1']:.3g} | "
                     f"{fmt(r.get('noise_scale_eps1_tight'))} | {r['solve_seconds']:.1f} |")
        L.append("")
    L += failures_and_timings(
        "Failures", summary["failures"],
        lambda r: f"{r.get('dataset')} {r.get('method')} run={r.get('run')} ε={r.get('epsilon')}", state.timings)
    return "\n".join(L)


def plots(state: State, summary: dict, prefix: str) -> List[str]:
    plt = pyplot()
    cfg = state.cfg
    rows, methods = summary["rows"], summary["methods"]
    dss = [ds for ds in cfg.datasets if lookup(rows, dataset=ds)]
    if not dss:
        return []
    fig, axes = plt.subplots(1, len(dss), figsize=(6.2 * len(dss), 4.6), squeeze=False)
    colors = {f"psvm-rff{D}": c for D, c in zip(cfg.n_components, ("C0", "C2", "C4"))}
    colors["psvm-linear"] = "C1"
    for m in list(colors):
        colors[f"{m}-tight"] = colors[m]  # same colour, dash-dot line and triangles
    for C, c in zip(cfg.C_tddl, ("C3", "C5", "C6")):
        colors[f"tddl-C{C:g}"] = c
    for ax, ds in zip(axes[0], dss):
        mm = {r["method"]: r for r in lookup(methods, dataset=ds)}
        for m in method_order(cfg):
            rr = sorted(lookup(rows, dataset=ds, method=m), key=lambda r: r["epsilon"])
            if not rr:
                continue
            ls = "--" if m.startswith("tddl") else ("-." if m.endswith("-tight") else "-")
            mk = "s" if m.startswith("tddl") else ("^" if m.endswith("-tight") else "o")
            ax.errorbar([r["epsilon"] for r in rr], [100 * r["accuracy_mean"] for r in rr],
                        yerr=[100 * r["accuracy_std"] for r in rr], color=colors.get(m), ls=ls, marker=mk, ms=4,
                        capsize=2, label=method_label(m) + (f" (δ={cfg.delta:g})" if m.startswith("tddl") else " (δ=0)"))
        # non-private lines
        big = f"psvm-rff{max(cfg.n_components)}"
        if big in mm:
            ax.axhline(100 * mm[big]["nonprivate_accuracy_mean"], color=colors[big], lw=1, ls=":",
                       label=f"non-private RFF d̂={max(cfg.n_components)} SVM (same C)")
        if "psvm-linear" in mm:
            ax.axhline(100 * mm["psvm-linear"]["nonprivate_accuracy_mean"], color="C1", lw=1, ls=":",
                       label="non-private linear SVM (same C)")
        for C in cfg.C_tddl:
            m = f"tddl-C{C:g}"
            if m in mm:
                ax.axhline(100 * mm[m]["nonprivate_accuracy_mean"], color="k", lw=1.2 if C == cfg.C_psvm else 0.8,
                           ls="-" if C == cfg.C_psvm else "-.", label=f"non-private exact RBF KernelSVM, C={C:g}")
        some = next(iter(mm.values()))
        ax.axhline(100 * some["majority_mean"], color="gray", lw=1, ls=":", label="majority class")
        ax.set_xscale("log")
        ax.set_xlabel("ε")
        ax.set_ylabel("test accuracy (%)")
        lo = min([100 * (r["accuracy_mean"] - r["accuracy_std"]) for r in lookup(rows, dataset=ds)]
                 + [100 * some["majority_mean"]]) - 2
        ax.set_ylim(max(0.0, lo), 100.5)
        ax.set_title(f"{DATASET_LABELS[ds]}: n={some.get('n', cfg.n):,}, PrivateSVM C={cfg.C_psvm:g}, "
                     f"TDDL T={cfg.T}, {cfg.runs} runs", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5, loc="lower right")
    return [save_figure(fig, f"{prefix}_accuracy_vs_eps.png", dpi=120)]


def write_outputs(state: State, outdir: str, total_s: float) -> List[str]:
    prefix = output_prefix(outdir, "private_svm", state.cfg.mode == "quick")
    summary = summarise(state)
    doc = dict(
        config=asdict(state.cfg), interrupted=state.interrupted, total_seconds=total_s, timings=state.timings,
        environment=environment(state.git), equivalence_checks=state.checks, kernel_svm_models=state.models,
        csweep=state.csweep, summary=summary["rows"], methods=summary["methods"], runs=state.runs,
        releases=state.records,
    )
    return [write_json(prefix + "_results.json", doc),
            write_text(prefix + "_results.md", markdown(state, summary, total_s))] + plots(state, summary, prefix)


def render(path: str, outdir: str) -> int:
    with open(path) as fh:
        doc = json.load(fh)
    conf = {k: tuple(v) if isinstance(v, list) else v for k, v in doc["config"].items()}
    state = State(Config(**conf), records=doc["releases"], runs=doc["runs"], models=doc["kernel_svm_models"],
                  csweep=doc["csweep"], checks=doc["equivalence_checks"], timings=doc["timings"],
                  interrupted=doc["interrupted"])
    prefix = output_prefix(outdir, "private_svm", state.cfg.mode == "quick")
    summary = summarise(state)
    paths = [write_text(prefix + "_results.md", markdown(state, summary, doc["total_seconds"]))]
    paths += plots(state, summary, prefix)
    print("re-rendered:\n  " + "\n  ".join(paths))
    return 0


# ------------------------------------------------------------------------------------------------
# main
# ------------------------------------------------------------------------------------------------


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = experiment_parser(__doc__, DEFAULT_SEED, quick="n=2000, T=200, 2 runs, 3 ε: smoke test, < 1 min",
                             stages=("main", "csweep"), datasets=tuple(DATASET_LABELS),
                             render="private_svm_*results.json").parse_args(argv)
    if args.render:
        return render(args.render, args.outdir)
    cfg = configure(Config, args, QUICK, min_runs=2)

    t_start = time.perf_counter()
    state = State(cfg, git=git_state())
    data = {name: load(name, cfg) for name in cfg.datasets}
    stages = [(name, lambda fn=fn: fn(state, data))
              for name, fn in (("main", stage_main), ("csweep", stage_csweep)) if name in cfg.stages]
    state.interrupted = run_stages(stages, state.timings)
    total = time.perf_counter() - t_start
    state.timings["total"] = total
    paths = write_outputs(state, args.outdir, total)
    print(f"wall-clock {total / 60:.1f} min; wrote:\n  " + "\n  ".join(paths))
    return 130 if state.interrupted else 0


if __name__ == "__main__":
    sys.exit(main())

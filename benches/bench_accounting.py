"""Benchmark: the ε charged by dpcore's BudgetAccountant under basic / advanced / RDP / PLD composition.

(a) 100 Gaussian releases, each calibrated by dpcore for (ε, δ) = (0.1, 1e-7) (replace-one Δ₂ = 1),
    composed at δ = 1e-5: ε charged by dpcore's ``accounting="basic"``, ``calibrate.compose_advanced``
    (δ' = 1e-6, so its total δ is 1.1e-5), ``accounting="rdp"`` and ``accounting="pld"``, next to
    dp_accounting's own RDP / PLD accountants run directly on the same events, with ratios.
(b) A pipeline on synthetic data: a TDDL release (``noise="gp"``) of a KernelSVM, a private norm
    statistic (``gaussian_mechanism`` on the mean clipped norm, sensitivity 1/n), and a private
    selection (``PrivateGridSearch`` over three λ), each run charging a fresh accountant per
    accounting mode; prints the ε charged (the accountant's ``spent``: basic at the δs spent so far,
    RDP/PLD at the whole δ budget D = Σδ, so the last row compares all three at the same δ).

This is a benchmark script, not a test: it prints tables and asserts nothing. Usage::

    python benches/bench_accounting.py            # about a minute
"""

from __future__ import annotations

import time

import numpy as np
from dp_accounting import GaussianDpEvent, SelfComposedDpEvent
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant

import dpcore
from dpcore.accounting import BudgetAccountant
from dpcore.accounting.calibrate import compose_advanced, compose_basic, gaussian_sigma
from dpcore.accounting.events import gaussian_event
from dpcore.mechanisms.noise import gaussian_mechanism

MODES = ("basic", "rdp", "pld")


def hundred_releases() -> None:
    eps0, delta0, k, delta = 0.1, 1e-7, 100, 1e-5
    sigma = gaussian_sigma(1.0, eps0, delta0)
    event = gaussian_event(sigma, 1.0)
    charged = {}
    for mode in MODES:
        acc = BudgetAccountant(100.0, delta, accounting=mode)
        t = time.perf_counter()
        for _ in range(k):
            acc.spend(eps0, delta0, event=event)
        charged[mode] = (acc.spent, time.perf_counter() - t)
    direct = {}
    for name, acc in (("rdp", RdpAccountant()), ("pld", PLDAccountant())):
        acc.compose(SelfComposedDpEvent(GaussianDpEvent(sigma), k))
        direct[name] = acc.get_epsilon(delta)
    adv = compose_advanced(eps0, delta0, k, 1e-6)
    basic = compose_basic([eps0] * k, [delta0] * k)
    print(f"(a) {k} Gaussian releases at (eps, delta) = ({eps0}, {delta0}), sigma/Delta = {sigma:.4f}; target delta = {delta}")
    print(f"{'composition':<38}{'epsilon':>10}{'delta':>10}{'vs dp_acc.':>12}{'time [s]':>10}")
    print(f"{'dpcore basic (exact sums)':<38}{charged['basic'][0][0]:>10.4f}{charged['basic'][0][1]:>10.2g}{'':>12}"
          f"{charged['basic'][1]:>10.2f}")
    print(f"{'dpcore compose_advanced (delta=1e-6)':<38}{adv[0]:>10.4f}{adv[1]:>10.2g}{'':>12}{'':>10}")
    for mode in ("rdp", "pld"):
        (e, d), dt = charged[mode]
        print(f"{'dpcore BudgetAccountant ' + repr(mode):<38}{e:>10.4f}{d:>10.2g}{e / direct[mode]:>12.4f}{dt:>10.2f}")
    for mode in ("rdp", "pld"):
        print(f"{'dp_accounting ' + mode.upper() + ' (direct)':<38}{direct[mode]:>10.4f}{delta:>10.2g}{1.0:>12.4f}")
    print(f"basic / pld = {basic[0] / charged['pld'][0][0]:.1f}x, advanced / pld = {adv[0] / charged['pld'][0][0]:.1f}x")


def pipeline() -> None:
    rng = np.random.default_rng(0)
    n = 2000
    X = rng.uniform(-0.7, 0.7, size=(n, 2))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    Z = rng.uniform(-0.7, 0.7, size=(200, 2))
    grid = {"lam": [1e-3, 1e-2, 1e-1]}
    base = {"kernel": "rbf", "gamma": 5.0}
    budget = (10.0, 1e-7 + 1e-8 + 1e-6)  # D = the declared δs summed: the last row compares at one δ
    steps = (("TDDL gp (0.5, 1e-7)", 0.5, 1e-7), ("norm statistic, Gaussian (0.1, 1e-8)", 0.1, 1e-8),
             ("PrivateGridSearch, 3 lam (1.0, 1e-6)", 1.0, 1e-6))
    print(f"\n(b) pipeline, n = {n}, budget (E, D) = {budget}; epsilon charged (spent at D) after each step")
    print(f"{'step':<40}" + "".join(f"{m:>10}" for m in MODES))
    rows = {s[0]: [] for s in steps}
    times = []
    for mode in MODES:
        acc = BudgetAccountant(*budget, accounting=mode)
        t = time.perf_counter()
        model = dpcore.KernelSVM(lam=1e-2, **base).fit(X, y)
        dpcore.TDDL(model, 0.5, 1e-7, data_norm=1.0, noise="gp", random_state=0, accountant=acc).fit(Z)
        rows[steps[0][0]].append(acc.spent[0])
        norms = np.minimum(np.linalg.norm(X, axis=1), 1.0)
        gaussian_mechanism(float(norms.mean()), 1.0 / n, 0.1, 1e-8, random_state=1, accountant=acc)
        rows[steps[1][0]].append(acc.spent[0])
        dpcore.PrivateGridSearch(grid, 1.0, 1e-6, Z=Z, data_norm=1.0, base_params=base, random_state=0,
                                 accountant=acc).fit(X, y)
        rows[steps[2][0]].append(acc.spent[0])
        times.append(time.perf_counter() - t)
        if mode == "pld":
            events = [r.event for r in acc.log]
    for name, vals in rows.items():
        print(f"{name:<40}" + "".join(f"{v:>10.4f}" for v in vals))
    print(f"{'run time [s]':<40}" + "".join(f"{t:>10.1f}" for t in times))
    print("events:", "; ".join(type(e).__name__ + ("" if not hasattr(e, "noise_multiplier") else
                                                     f"({e.noise_multiplier:.4g})") for e in events))


def main() -> None:
    t = time.perf_counter()
    hundred_releases()
    pipeline()
    print(f"\ntotal {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()

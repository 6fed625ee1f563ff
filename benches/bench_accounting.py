"""Benchmark: the ε charged by dpcore's BudgetAccountant — the privacy filter (default since issue 22) against
the old default (basic OR PLD of the accepted events, valid only for a sequence fixed in advance), basic,
advanced and RDP composition.

(a) 100 Gaussian releases, each calibrated by dpcore for (ε, δ) = (0.1, 1e-7) (replace-one Δ₂ = 1),
    composed at δ = 1e-5: ε charged by ``accounting="basic"``, ``calibrate.compose_advanced``
    (δ' = 1e-6, so its total δ is 1.1e-5), ``accounting="rdp"`` / ``"pld"`` with the sequence declared by
    ``plan()`` (= the old default's number), and the default ``"filter"``, next to dp_accounting's own
    RDP / PLD accountants run directly on the same events, with ratios.
(b) dpcore's own pipelines on synthetic data: a TDDL release (``noise="gp"``), a private norm statistic
    (``gaussian_mechanism``), a private selection (``PrivateGridSearch`` over three λ), a GPService and an
    ObjectivePerturbation GLM fit, each charging a ``"filter"`` and a ``"basic"`` accountant; prints after
    each step the ε charged by basic, by the old default (``min(Σε, PLD of the recorded events at D)``,
    recomputed from the filter's log — the old rule's own number for that sequence) and by the filter.

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
from dpcore.accounting.events import composed_epsilon, gaussian_event
from dpcore.mechanisms.noise import gaussian_mechanism

MODES = ("basic", "rdp", "pld", "filter")


def hundred_releases() -> None:
    eps0, delta0, k, delta = 0.1, 1e-7, 100, 1e-5
    sigma = gaussian_sigma(1.0, eps0, delta0)
    event = gaussian_event(sigma, 1.0)
    charged = {}
    for mode in MODES:
        acc = BudgetAccountant(100.0, delta, accounting=mode)
        t = time.perf_counter()
        if mode in ("pld", "rdp"):  # a sequence declared in advance
            acc.plan([(eps0, delta0, event)] * k)
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
        name = f"dpcore {mode!r} + plan" + (" (= old default)" if mode == "pld" else "")
        print(f"{name:<38}{e:>10.4f}{d:>10.2g}{e / direct[mode]:>12.4f}{dt:>10.2f}")
    (e, d), dt = charged["filter"]
    print(f"{'dpcore filter (new default, adaptive)':<38}{e:>10.4f}{d:>10.2g}{e / direct['pld']:>12.4f}{dt:>10.2f}")
    for mode in ("rdp", "pld"):
        print(f"{'dp_accounting ' + mode.upper() + ' (direct)':<38}{direct[mode]:>10.4f}{delta:>10.2g}{1.0:>12.4f}")
    print(f"basic / pld = {basic[0] / charged['pld'][0][0]:.1f}x, advanced / pld = {adv[0] / charged['pld'][0][0]:.1f}x, "
          f"filter / pld = {charged['filter'][0][0] / charged['pld'][0][0]:.2f}x")


def _old_default(log, delta_budget: float) -> float:
    """The old default's ε for the recorded sequence: min(Σε, PLD of the events at D) (exact basic if tighter)."""
    from fractions import Fraction

    entries = [(r.event, r.epsilon, r.delta) for r in log]
    basic = sum(Fraction(r.epsilon) for r in log)
    composed = composed_epsilon(entries, delta_budget, "pld")
    return float(min(basic, composed) if composed is not None else basic)


def pipeline() -> None:
    rng = np.random.default_rng(0)
    n = 2000
    X = rng.uniform(-0.7, 0.7, size=(n, 2))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    Z = rng.uniform(-0.7, 0.7, size=(200, 2))
    Q = rng.uniform(-0.7, 0.7, size=(50, 2))
    grid = {"lam": [1e-3, 1e-2, 1e-1]}
    base = {"kernel": "rbf", "gamma": 5.0}
    steps = (("TDDL gp (0.5, 1e-7)", 0.5, 1e-7), ("norm statistic, Gaussian (0.1, 1e-8)", 0.1, 1e-8),
             ("PrivateGridSearch, 3 lam (1.0, 1e-6)", 1.0, 1e-6), ("GPService, 50 queries (0.5, 1e-7)", 0.5, 1e-7),
             ("ObjectivePerturbation (0.5, 1e-7)", 0.5, 1e-7))
    budget = (100.0, 1e-5)
    print(f"\n(b) pipelines, n = {n}, budget (E, D) = {budget}; cumulative epsilon charged after each step "
          "(spent: basic at the δs spent so far; old default and filter at D)")
    print(f"{'step':<40}{'basic':>10}{'old (pld)':>11}{'filter':>10}{'filter/old':>11}")
    accs = {m: BudgetAccountant(*budget, accounting=m) for m in ("basic", "filter")}
    model = dpcore.KernelSVM(lam=1e-2, **base).fit(X, y)
    norms = np.minimum(np.linalg.norm(X, axis=1), 1.0)
    t = time.perf_counter()
    for i, (name, _, _) in enumerate(steps):
        for acc in accs.values():
            if i == 0:
                dpcore.TDDL(model, 0.5, 1e-7, data_norm=1.0, noise="gp", random_state=0, accountant=acc).fit(Z)
            elif i == 1:
                gaussian_mechanism(float(norms.mean()), 1.0 / n, 0.1, 1e-8, random_state=1, accountant=acc)
            elif i == 2:
                dpcore.PrivateGridSearch(grid, 1.0, 1e-6, Z=Z, data_norm=1.0, base_params=base, random_state=0,
                                         accountant=acc).fit(X, y)
            elif i == 3:
                dpcore.GPService(model, 0.5, 1e-7, data_norm=1.0, random_state=0, accountant=acc).decision_function(Q)
            else:
                dpcore.ObjectivePerturbation(epsilon=0.5, delta=1e-7, data_norm=1.0, random_state=0,
                                             accountant=acc).fit(X, y)
        old = _old_default(accs["filter"].log, budget[1])
        f = accs["filter"].spent[0]
        print(f"{name:<40}{accs['basic'].spent[0]:>10.4f}{old:>11.4f}{f:>10.4f}{f / old:>11.2f}")
    print(f"{'run time [s]':<40}{time.perf_counter() - t:>10.1f}")
    print("events:", "; ".join(type(r.event).__name__ for r in accs["filter"].log))


def main() -> None:
    t = time.perf_counter()
    hundred_releases()
    pipeline()
    print(f"\ntotal {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()

"""Privacy budget accounting: a privacy filter by default, valid when parameters are chosen adaptively.

:class:`BudgetAccountant` keeps a ledger of spends against a fixed total budget (E, D). Every spend
carries its declared (ε, δ) and a dp_accounting ``DpEvent`` describing the mechanism
(:mod:`dpcore.accounting.events`). The ledger lives in memory, or in an SQLite file shared by every
process that opens it (``ledger=``).

Composition (``accounting=``)
-----------------------------
``"filter"`` (default)
    A **privacy filter** (Rogers, Roth, Ullman & Vadhan 2016): the composition of every accepted
    spend is (E, D)-DP even when the analyst chooses each mechanism *and its privacy parameters* from
    the outputs of the earlier ones. Construction and proof below.
``"basic"``
    Exact basic composition (Σε ≤ E, Σδ ≤ D in :class:`fractions.Fraction` of the floats passed). A
    valid filter (Rogers et al. 2016, Thm 3.6).
``"pld"``, ``"rdp"``
    dp_accounting's PLD (pessimistic, interval 1e-4) / RDP composition — proven only for a sequence
    whose parameters are fixed in advance. So they are **opt-in for a declared sequence**:
    :meth:`BudgetAccountant.plan` declares the whole list once (accepted iff its basic *or*
    dp_accounting composition fits: both are certificates of one fixed list, chosen before any
    output), after which each spend must be the next planned event; anything else is refused before
    it is recorded, and spending without a plan is refused.

The filter
----------
Fixed at construction: the budget (E, D), the Rényi orders ``A = FILTER_ORDERS`` (K = 24 of them,
1.25 … 512) and ``δ_R = rdp_delta`` (default D/2). Every accepted step t is routed, when it is
accepted and from public information only, to one of two groups:

* **P** (declared): charged its declared (ε_t, δ_t);
* **R** (Rényi): charged a curve ``c_t(α)``, α ∈ A, and a δ part ``δ'_t``, from its event's leaves
  (``Composed``/``SelfComposed`` are walked): ``GaussianDpEvent(m)`` → α/(2m²) (exact rational;
  dpcore's multipliers are relative to the replace-one shift); ``ZCDpEvent(ρ, ξ)`` → ξ + αρ;
  ``LaplaceDpEvent`` and ``RepeatAndSelectDpEvent`` of those → dp_accounting's RDP at the orders
  (Mironov 2017, Prop. 6; Papernot & Steinke 2022, Thm 2), rounded up by ``SLACK``;
  ``EpsilonDeltaDpEvent(ε, δ)`` → the RDP of ε-randomised response, ``min(ε, αε²/2, D_α(RR_ε))``,
  plus ``δ'`` += δ; ``NoOpDpEvent`` → 0. Any other event (``UnsupportedDpEvent``, sub-sampled events
  whose curve dp_accounting gives for add/remove neighbours only, …) is charged as
  ``EpsilonDeltaDpEvent`` of its *declared* (ε, δ) — sound, not tight.

A spend is accepted iff, with the new step routed to P or to R (tried in that order for events
without a Rényi leaf, R first otherwise), the accepted steps satisfy

    ``Σ_P δ_t + [R ≠ ∅]·(δ_R + Σ_R δ'_t) ≤ D``  and
    ``Σ_P ε_t + [R ≠ ∅]·min_{α∈A} (Σ_R c_t(α) + log(K/δ_R)/(α − 1)) ≤ E``,

all in exact rationals (the logarithm rounded up by ``SLACK``). With R empty this is exact basic
composition, so pure and approximate (ε, δ) spends add up exactly (4 × 0.25 fit in 1). ``δ_R`` is
taken when the first step enters R (``min(δ_R, D − Σ_P δ)``, fixed from then on).

*Proof sketch* (fix neighbours x, x'; the analyst, its choices and the routing are functions of
the past outputs). (i) An (ε, δ)-DP step, for the pair (x, x'), is a randomised post-processing of
the 4-point pair of Kairouz, Oh & Viswanath (2015, Thm 2.1 / the dominance used for their Thm 3.3):
with probability δ a "bad" point of infinite loss, otherwise ε-randomised response. Release that
point too (post-processing back to the real output loses nothing). P[some accepted step hits its
bad point] ≤ E[Σ δ_t] over accepted steps (each δ_t is predictable), which is ≤ D − [R≠∅]δ_R on
every path by the test. (ii) On the complement, a P step's loss is ≤ ε_t: the P group's loss is
≤ Σ_P ε_t surely. (iii) For each α, ``Z_t = 1{no bad} · exp((α−1) Σ_{s≤t, s∈R} (ℓ_s − c_s(α)))`` is a
non-negative supermartingale under x (E[e^{(α−1)ℓ_s} | past] = e^{(α−1)D_α} ≤ e^{(α−1)c_s(α)}, and the
randomised-response core of an (ε, δ) step has D_α(RR_ε); Feldman & Zrnic 2021, Thm 3.1's argument,
and Whitehouse, Ramdas, Rogers & Wu 2023 for the approximate part). Z = 1 until the first R step τ;
by Ville's inequality conditioned on the past at τ, P[∃t: Z_t ≥ K/δ_R] ≤ δ_R/K, and a union bound
over the K orders costs δ_R — charged only on paths where τ happens (a predictable charge).
(iv) Outside these events, at the last accepted step, for the α of the last acceptance test,
``L ≤ Σ_P ε + Σ_R c(α) + log(K/δ_R)/(α−1) ≤ E``; so P_x[L ≥ E] ≤ D and the whole interaction is
(E, D)-DP (P_x[S] ≤ e^E P_x'[S] + P_x[L ≥ E]). The test at each acceptance only involves the
accepted steps plus the new one, the set of α that fit only shrinks, refusals release nothing and
depend on public numbers only: the filter is valid under full adaptivity. "Accept if P **or** R
fits" is not a union of two certificates: each step's route is fixed when it is accepted, and one
certificate (the sum above) covers every path.

*Price.* Against PLD for a known sequence the filter pays the Rényi→(ε, δ) conversion, the
log K of the union over orders and the δ_R share: 100 Gaussian releases each (0.1, 1e-7)-DP at
D = 1e-5 cost ε = 1.37 (PLD, non-adaptive: 0.894; basic: 10); ``benches/bench_accounting.py``.

Other rules
-----------
Mechanisms call :meth:`BudgetAccountant.spend` **before** computing anything from the data; an
over-spend raises :class:`BudgetExceededError` and records nothing. :meth:`BudgetAccountant.check`
performs the same test without spending. All operations are thread-safe (one lock around every
check-and-record); with ``ledger=`` every spend is one SQLite ``BEGIN IMMEDIATE`` transaction (read
the accepted spends, test, insert), so processes sharing the file share one budget.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import math
import numbers
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from dp_accounting import dp_event as _dpe

from dpcore._internal.exact import float_down, float_up
from dpcore._internal.fp import budget_grid_down, round_up
from dpcore._internal.validation import check_delta, check_epsilon
from dpcore.accounting.events import EpsilonDeltaDpEvent, _check_accounting, composed_epsilon, split_event
from dpcore.exceptions import BudgetExceededError, RestoredAccountantError, StateRollbackError

__all__ = ["BudgetAccountant", "BudgetExceededError", "BudgetRecord"]

#: Rényi orders of the filter (fixed: the union bound over them costs log K in the conversion).
FILTER_ORDERS: Tuple[Fraction, ...] = tuple(Fraction(a) for a in (
    "5/4", "3/2", "7/4", "2", "9/4", "5/2", "3", "7/2", "4", "5", "6", "8", "10", "12", "16", "20", "24",
    "32", "48", "64", "96", "128", "256", "512"))
_K = len(FILTER_ORDERS)
_LEDGER_VERSION = "1"
# the default accountant: the innermost ``with accountant:`` block (per thread / task), else set_default()'s
_ACTIVE: contextvars.ContextVar[Tuple["BudgetAccountant", ...]] = contextvars.ContextVar("dpcore_accountants",
                                                                                         default=())
_DEFAULT_LOCK = threading.Lock()
_DEFAULT: List[Optional["BudgetAccountant"]] = [None]


def _grid_hint(requested, remaining) -> str:
    """When the refusal is only the binary rounding of a decimal (float(0.1) > 1/10), say so."""
    try:
        eps, rem = float(requested[0]), float(remaining[0])
    except (TypeError, ValueError, IndexError):
        return ""
    if not (0.0 < eps and eps > rem >= eps * (1.0 - 2.0 ** -40)):
        return ""
    return (f" (only the binary rounding of epsilon: float({eps!r}) is slightly above its decimal value; "
            f"dpcore's mechanisms calibrate for and charge budget_grid_down({eps!r}) = "
            f"{budget_grid_down(eps)!r} from dpcore._internal.fp so that budgets that add up fit; charge that "
            f"if your mechanism is calibrated for it)")


@dataclass(frozen=True)
class BudgetRecord:
    """One accepted spend: ``epsilon``, ``delta``, ``label``, wall-clock ``timestamp`` (``time.time()``)
    and the ``event`` (dp_accounting ``DpEvent``) describing the mechanism.

    Examples
    --------
    >>> from dpcore import BudgetAccountant
    >>> acc = BudgetAccountant(epsilon=1.0, delta=1e-6)
    >>> acc.spend(0.5, 1e-7, label="counts")
    >>> rec = acc.records[0]
    >>> rec.epsilon, rec.delta, rec.label
    (0.5, 1e-07, 'counts')
    """

    epsilon: float
    delta: float
    label: str
    timestamp: float
    event: Optional[_dpe.DpEvent] = None


# ---------------------------------------------------------------------------------------- charges
def _rr_rdp(alpha: Fraction, eps: float) -> Fraction:
    """Upper bound on D_α of ε-randomised response (the core of every (ε, δ) pair; KOV 2015)."""
    e = Fraction(eps)
    best = min(e, alpha * e * e / 2)  # ε-DP ⇒ D_α ≤ ε and ≤ αε²/2 (Bun & Steinke 2016, Prop. 3.3)
    a = float(alpha)
    # D_α(RR_ε) = log((e^{αε} + e^{(1−α)ε}) / (1 + e^ε)) / (α − 1), evaluated stably, rounded up
    val = (_logaddexp(a * eps, (1.0 - a) * eps) - _logaddexp(0.0, eps)) / (a - 1.0)
    if math.isfinite(val) and val >= 0.0:
        best = min(best, Fraction(round_up(val)) + Fraction(2.0 ** -1000))
    return best


def _logaddexp(x: float, y: float) -> float:
    m = max(x, y)
    return m + math.log1p(math.exp(min(x, y) - m))


def _rdp_curve_from_dp_accounting(event: _dpe.DpEvent) -> Optional[List[Fraction]]:
    from dp_accounting.rdp import RdpAccountant

    acc = RdpAccountant(orders=[float(a) for a in FILTER_ORDERS])
    if not acc.supports(event):
        return None
    acc.compose(event)
    out = []
    for v in acc._rdp:  # noqa: SLF001 -- the RDP vector at our orders (dp_accounting has no public getter)
        v = float(v)
        if not (math.isfinite(v) and v >= 0.0):
            return None
        out.append(Fraction(round_up(v)))
    return out


def _is_rdp_leaf(e: _dpe.DpEvent) -> bool:
    if isinstance(e, _dpe.LaplaceDpEvent):
        return True
    if isinstance(e, _dpe.RepeatAndSelectDpEvent):
        inner = e.event
        return isinstance(inner, (_dpe.GaussianDpEvent, _dpe.LaplaceDpEvent, _dpe.ZCDpEvent))
    return False


@dataclass(frozen=True)
class _Charge:
    curve: Tuple[Fraction, ...]
    delta: Fraction
    renyi: bool  # some leaf has a genuine Rényi curve (Gaussian, zCDP, Laplace, repeat-and-select)


def _filter_charge(event: _dpe.DpEvent, epsilon: float, delta: float) -> _Charge:
    """The R-route charge of a spend (module docstring); falls back to the declared (ε, δ)."""
    curve = [Fraction(0)] * _K
    dd = [Fraction(0)]
    renyi = [False]

    def add(vals, count):
        for i, v in enumerate(vals):
            curve[i] += count * v

    def walk(e: _dpe.DpEvent, count: int) -> bool:
        if isinstance(e, _dpe.NoOpDpEvent):
            return True
        if isinstance(e, _dpe.SelfComposedDpEvent):
            return isinstance(e.count, numbers.Integral) and e.count >= 0 and walk(e.event, count * int(e.count))
        if isinstance(e, _dpe.ComposedDpEvent):
            return all(walk(x, count) for x in e.events)
        if isinstance(e, _dpe.GaussianDpEvent):
            m = float(e.noise_multiplier)
            if not (math.isfinite(m) and m > 0.0):
                return False
            m2 = Fraction(m) ** 2
            add([a / (2 * m2) for a in FILTER_ORDERS], count)
            renyi[0] = True
            return True
        if isinstance(e, _dpe.ZCDpEvent):
            rho, xi = float(e.rho), float(e.xi)
            if not (math.isfinite(rho) and math.isfinite(xi) and rho >= 0.0 and xi >= 0.0):
                return False
            add([Fraction(xi) + a * Fraction(rho) for a in FILTER_ORDERS], count)
            renyi[0] = True
            return True
        if isinstance(e, EpsilonDeltaDpEvent):
            add([_rr_rdp(a, float(e.epsilon)) for a in FILTER_ORDERS], count)
            dd[0] += count * Fraction(e.delta)
            return True
        if _is_rdp_leaf(e):
            vals = _rdp_curve_from_dp_accounting(e)
            if vals is None:
                return False
            add(vals, count)
            renyi[0] = True
            return True
        return False

    if walk(event, 1):
        return _Charge(tuple(curve), dd[0], renyi[0])
    return _Charge(tuple(_rr_rdp(a, epsilon) for a in FILTER_ORDERS), Fraction(delta), False)


# ---------------------------------------------------------------------------------------- folds
class _Fold:
    """The state of the accepted spends under one accounting (a pure function of them, in order)."""

    def __init__(self, epsilon: float, delta: float, accounting: str, rdp_delta: Fraction) -> None:
        self.E, self.D = Fraction(epsilon), Fraction(delta)
        self.delta_float = delta
        self.accounting = accounting
        self.rdp_delta = rdp_delta
        self.eps_p = Fraction(0)      # Σε of the P (declared) route; = Σε of everything under basic/pld/rdp
        self.delta_p = Fraction(0)
        self.renyi = False            # some step routed to R
        self.delta_r = Fraction(0)    # δ_R fixed when the first step entered R
        self.curve = [Fraction(0)] * _K
        self.delta_rsteps = Fraction(0)
        self.entries: List[Tuple[Any, float, float]] = []  # (event, ε, δ) for the PLD/RDP composition
        self.plan: Optional[List[Tuple[Any, Optional[float], Optional[float]]]] = None
        self._composed: Optional[Fraction] = None
        self._composed_valid = True
        self._log_cache: Dict[Fraction, Fraction] = {}

    # ---- filter helpers
    def _log_term(self, delta_r: Fraction) -> Fraction:
        if delta_r not in self._log_cache:
            d = float_down(delta_r)
            self._log_cache[delta_r] = Fraction(round_up(math.log(_K) - math.log(d)))
        return self._log_cache[delta_r]

    def _renyi_eps(self, curve: Sequence[Fraction], delta_r: Fraction) -> Fraction:
        lg = self._log_term(delta_r)
        return min(c + lg / (a - 1) for c, a in zip(curve, FILTER_ORDERS))

    def _filter_state_ok(self, eps_p, delta_p, renyi, delta_r, curve, delta_rsteps) -> bool:
        d = delta_p + (delta_r + delta_rsteps if renyi else 0)
        if d > self.D:
            return False
        e = eps_p + (self._renyi_eps(curve, delta_r) if renyi else 0)
        return e <= self.E

    def _try_route(self, route: str, epsilon: float, delta: float, charge: _Charge) -> bool:
        if route == "P":
            return self._filter_state_ok(self.eps_p + Fraction(epsilon), self.delta_p + Fraction(delta),
                                         self.renyi, self.delta_r, self.curve, self.delta_rsteps)
        delta_r = self.delta_r if self.renyi else min(self.rdp_delta, self.D - self.delta_p)
        if delta_r <= 0:
            return False
        curve = [c + x for c, x in zip(self.curve, charge.curve)]
        return self._filter_state_ok(self.eps_p, self.delta_p, True, delta_r, curve,
                                     self.delta_rsteps + charge.delta)

    # ---- the decision
    def test(self, epsilon: float, delta: float, event: Any, charge: Optional[_Charge]) -> Optional[str]:
        """The route ("P", "R" or "plan") under which the new spend fits, or None (nothing changes)."""
        if self.accounting == "basic":
            ok = self.eps_p + Fraction(epsilon) <= self.E and self.delta_p + Fraction(delta) <= self.D
            return "P" if ok else None
        if self.accounting == "filter":
            assert charge is not None
            routes = ("R", "P") if charge.renyi and self.D > 0 else ("P", "R")
            for route in routes:
                if self._try_route(route, epsilon, delta, charge):
                    return route
            return None
        raise AssertionError("planned accounting is tested by _match_plan")

    def match_plan(self, epsilon: float, delta: float, event: Any) -> None:
        """Raise ValueError unless (ε, δ, event) is the next planned spend (pld/rdp)."""
        if self.plan is None:
            raise ValueError(
                f"accounting={self.accounting!r} composes a sequence declared in advance: call "
                "accountant.plan([...]) with every spend first (its dp_accounting composition is proven only "
                "for parameters fixed before any output), or use the default accounting='filter', which is "
                "valid for adaptively chosen parameters")
        k = len(self.entries)
        if k >= len(self.plan):
            raise ValueError(f"the plan of this accountant ({len(self.plan)} spends) is used up; spend "
                             f"({epsilon!r}, {delta!r}) was not planned")
        p_event, p_eps, p_delta = self.plan[k]
        if p_event != event or (p_eps is not None and (Fraction(epsilon) > Fraction(p_eps)
                                                       or Fraction(delta) > Fraction(p_delta))):
            raise ValueError(f"spend {k} does not match the plan: planned event {p_event!r} "
                             f"(epsilon={p_eps!r}, delta={p_delta!r}), got event {event!r} "
                             f"(epsilon={epsilon!r}, delta={delta!r})")

    def add(self, epsilon: float, delta: float, event: Any, route: str, charge: Optional[_Charge]) -> None:
        if route == "R":
            assert charge is not None
            if not self.renyi:
                self.delta_r = min(self.rdp_delta, self.D - self.delta_p)
                self.renyi = True
            self.curve = [c + x for c, x in zip(self.curve, charge.curve)]
            self.delta_rsteps += charge.delta
        else:
            self.eps_p += Fraction(epsilon)
            self.delta_p += Fraction(delta)
        self.entries.append((event, epsilon, delta))
        self._composed_valid = False

    # ---- reporting
    def _composition(self) -> Optional[Fraction]:
        if not self._composed_valid:
            self._composed = (composed_epsilon(self.entries, self.delta_float, self.accounting)
                              if self.entries else None)
            self._composed_valid = True
        return self._composed

    def spent(self) -> Tuple[Fraction, Fraction]:
        if self.accounting == "filter":
            if not self.renyi:
                return self.eps_p, self.delta_p
            return (self.eps_p + self._renyi_eps(self.curve, self.delta_r),
                    self.delta_p + self.delta_r + self.delta_rsteps)
        if self.accounting in ("pld", "rdp"):
            composed = self._composition()
            if composed is not None and composed < self.eps_p:
                return composed, self.D
        return self.eps_p, self.delta_p

    def remaining(self) -> Tuple[Fraction, Fraction]:
        e, d = self.spent()
        return max(self.E - e, Fraction(0)), max(self.D - d, Fraction(0))


# ---------------------------------------------------------------------------------------- event codec
_FLOAT_FIELDS = {
    "gaussian": (_dpe.GaussianDpEvent, ("noise_multiplier",)),
    "laplace": (_dpe.LaplaceDpEvent, ("noise_multiplier",)),
    "zcdp": (_dpe.ZCDpEvent, ("rho", "xi")),
    "epsilon_delta": (EpsilonDeltaDpEvent, ("epsilon", "delta")),
}


def _encode_event(e: Any) -> Any:
    """JSON-able form of the event types dpcore uses (floats as exact hex); TypeError for others."""
    for name, (cls, fields) in _FLOAT_FIELDS.items():
        if type(e) is cls:
            return {"type": name, **{f: float(getattr(e, f)).hex() for f in fields}}
    if type(e) is _dpe.ComposedDpEvent:
        return {"type": "composed", "events": [_encode_event(x) for x in e.events]}
    if type(e) is _dpe.SelfComposedDpEvent:
        return {"type": "self_composed", "event": _encode_event(e.event), "count": int(e.count)}
    if type(e) is _dpe.RepeatAndSelectDpEvent:
        return {"type": "repeat_and_select", "event": _encode_event(e.event), "mean": float(e.mean).hex(),
                "shape": float(e.shape).hex()}
    if type(e) is _dpe.NoOpDpEvent:
        return {"type": "noop"}
    if type(e) is _dpe.UnsupportedDpEvent:
        return {"type": "unsupported"}
    raise TypeError(f"event of type {type(e).__name__} cannot be stored in a ledger (dpcore stores Gaussian, "
                    "Laplace, zCDP, EpsilonDelta, Composed, SelfComposed, RepeatAndSelect, NoOp and Unsupported "
                    "events); describe it as epsilon_delta_event(epsilon, delta)")


def _decode_event(d: Any) -> Any:
    if not isinstance(d, dict) or "type" not in d:
        raise ValueError(f"ledger: malformed event {d!r}")
    t = d["type"]
    if t in _FLOAT_FIELDS:
        cls, fields = _FLOAT_FIELDS[t]
        return cls(*[float.fromhex(d[f]) for f in fields])
    if t == "composed":
        return _dpe.ComposedDpEvent([_decode_event(x) for x in d["events"]])
    if t == "self_composed":
        return _dpe.SelfComposedDpEvent(_decode_event(d["event"]), int(d["count"]))
    if t == "repeat_and_select":
        return _dpe.RepeatAndSelectDpEvent(_decode_event(d["event"]), float.fromhex(d["mean"]),
                                           float.fromhex(d["shape"]))
    if t == "noop":
        return _dpe.NoOpDpEvent()
    if t == "unsupported":
        return _dpe.UnsupportedDpEvent()
    raise ValueError(f"ledger: unknown event type {t!r}")


def _encode_plan(plan) -> str:
    return json.dumps([[_encode_event(e), None if pe is None else float(pe).hex(),
                        None if pd is None else float(pd).hex()] for e, pe, pd in plan], sort_keys=True)


def _decode_plan(text: str):
    return [(_decode_event(e), None if pe is None else float.fromhex(pe), None if pd is None else float.fromhex(pd))
            for e, pe, pd in json.loads(text)]


# ---------------------------------------------------------------------------------------- SQLite ledger
class _SQLiteLedger:
    """An SQLite file holding one budget: meta (budget, accounting, plan), spends, state sequence numbers."""

    def __init__(self, path: Any, meta: Dict[str, str], *, must_exist: bool = False) -> None:
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise TypeError(f"ledger must be None or a path, got {type(path).__name__}")
        self.path = os.path.abspath(os.fsdecode(path))
        if must_exist and not os.path.isfile(self.path):  # never start a fresh budget behind an unpickled handle
            raise FileNotFoundError(f"ledger {self.path!r} no longer exists: refusing to create a fresh budget "
                                    "for an unpickled accountant")
        self._conn: Optional[sqlite3.Connection] = None
        self._pid = -1
        with self.transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.execute("CREATE TABLE IF NOT EXISTS spends (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                         "epsilon TEXT NOT NULL, delta TEXT NOT NULL, event TEXT NOT NULL, label TEXT NOT NULL, "
                         "timestamp REAL NOT NULL, route TEXT NOT NULL)")
            conn.execute("CREATE TABLE IF NOT EXISTS states (state_id TEXT PRIMARY KEY, seq INTEGER NOT NULL)")
            stored = dict(conn.execute("SELECT key, value FROM meta WHERE key != 'plan'").fetchall())
            if not stored and must_exist:
                raise FileNotFoundError(f"ledger {self.path!r} holds no budget: refusing to create a fresh one "
                                        "for an unpickled accountant")
            if not stored:
                conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", sorted(meta.items()))
            elif stored != meta:
                raise ValueError(
                    f"ledger {self.path!r} holds another budget: stored {stored}, requested {meta}; a ledger's "
                    "budget and accounting are fixed when it is created")

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():  # never reuse a connection across fork()
            conn = sqlite3.connect(self.path, timeout=600.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None


# ---------------------------------------------------------------------------------------- the accountant
class BudgetAccountant:
    """Thread- and process-safe (ε, δ) budget ledger; a privacy filter valid under adaptive parameters.

    Parameters
    ----------
    epsilon : float
        Total ε budget E, finite and > 0.
    delta : float, default 0.0
        Total δ budget D in [0, 1).  With D = 0 only pure-DP spends are accepted.
    accounting : {"filter", "pld", "rdp", "basic"}, default "filter"
        How spends compose (module docstring). ``"filter"``: exact basic composition for declared
        (ε, δ) spends, a Rényi filter for Gaussian / zCDP / Laplace events — valid when every
        mechanism and its parameters are chosen from earlier outputs. ``"basic"``: exact basic
        composition. ``"pld"`` / ``"rdp"``: dp_accounting's composition of a sequence declared with
        :meth:`plan` before the first spend.
    ledger : None or path, default None
        ``None``: the ledger lives in this object. A path: an SQLite file (created if absent, WAL,
        ``synchronous=FULL``) holding the budget, the accounting and every spend; each spend is one
        ``BEGIN IMMEDIATE`` transaction (read the accepted spends, test, insert), so every accountant
        opened on the file — in any process, or unpickled there — charges the same budget. Opening an
        existing ledger with another budget or accounting is refused.
    rdp_delta : float, optional
        ``"filter"`` only: the δ share taken for the Rényi→(ε, δ) conversion when the first Gaussian-
        type spend arrives; default ``D/2``. Must be in (0, D].

    Examples
    --------
    >>> acc = BudgetAccountant(1.0, 1e-6)
    >>> acc.spend(0.5, label="mean")
    >>> acc.remaining()
    (0.5, 1e-06)
    >>> acc.spend(0.6)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    dpcore.accounting.accountant.BudgetExceededError: privacy budget exceeded

    100 Gaussian releases each (0.1, 1e-7)-DP cost ε = 1.37 at δ = 1e-5 under the (adaptive) filter
    (basic composition would charge ε = 10):

    >>> from dpcore.accounting.calibrate import gaussian_sigma
    >>> from dpcore.accounting.events import gaussian_event
    >>> acc = BudgetAccountant(1.5, 1e-5)
    >>> event = gaussian_event(gaussian_sigma(1.0, 0.1, 1e-7), 1.0)
    >>> for _ in range(100):
    ...     acc.spend(0.1, 1e-7, event=event)
    >>> eps, delta = acc.spent
    >>> round(eps, 2), delta
    (1.37, 5e-06)

    A sequence fixed in advance can use dp_accounting's PLD instead (0.89 for the same releases):

    >>> acc = BudgetAccountant(1.0, 1e-5, accounting="pld")
    >>> acc.plan([(0.1, 1e-7, event)] * 100)
    >>> for _ in range(100):
    ...     acc.spend(0.1, 1e-7, event=event)
    >>> round(acc.spent[0], 2)
    0.89

    Notes
    -----
    ``spent`` / ``remaining()``: ``"basic"``: ``(Σε, Σδ)`` and ``(E − Σε, D − Σδ)``. ``"filter"``: the
    certificate of the accepted spends (module docstring): ``Σ_P ε + min_α(…)`` and
    ``Σ_P δ + δ_R + Σ_R δ'``. ``"pld"``/``"rdp"``: the tighter of ``(Σε, Σδ)`` and ``(ε_acc, D)``.
    ``remaining()`` is rounded down: a pure spend (``EpsilonDeltaDpEvent(ε, 0)``) of the remaining ε
    always fits.

    Copies and pickles. An accountant is one shared budget, like an open file: ``copy.copy`` /
    ``copy.deepcopy`` (and ``sklearn.base.clone`` of an estimator given ``accountant=``) return the
    *same* accountant. With ``ledger=``, a pickle (also joblib's copies to worker processes) re-opens
    the same ledger: every copy charges the one budget (``cross_val_score(..., n_jobs=2)`` is safe).
    Without a ledger, ``pickle`` stores a **read-only** record (``restored`` is True; :meth:`check`,
    :meth:`spend` and :meth:`record_state` raise :class:`~dpcore.exceptions.RestoredAccountantError`),
    and :meth:`resume` refuses too: two live copies of an in-memory ledger could spend the remaining
    budget twice. Use ``ledger=`` to continue a budget after a restart.
    """

    #: The Rényi orders of ``accounting="filter"`` (fixed; the union over them costs ``log K``).
    FILTER_ORDERS = FILTER_ORDERS

    def __init__(self, epsilon: float, delta: float = 0.0, *, accounting: str = "filter",
                 ledger: Any = None, rdp_delta: Optional[float] = None, _must_exist: bool = False) -> None:
        self._epsilon = check_epsilon(epsilon, "epsilon", grid=False)
        self._delta = check_delta(delta, "delta", grid=False)
        self._accounting = _check_accounting(accounting)
        if rdp_delta is None:
            rdp = Fraction(self._delta) / 2
        else:
            if self._accounting != "filter":
                raise ValueError(f"rdp_delta applies to accounting='filter' only, got accounting={accounting!r}")
            rdp = (rdp_delta if isinstance(rdp_delta, Fraction)  # exact, from a pickle
                   else Fraction(check_delta(rdp_delta, "rdp_delta", allow_zero=False, grid=False)))
            if not Fraction(0) < rdp <= Fraction(self._delta):
                raise ValueError(f"rdp_delta must be in (0, delta]; got rdp_delta={float(rdp)!r}, "
                                 f"delta={self._delta!r}")
        self._rdp_delta = rdp
        self._lock = threading.RLock()
        self._restored = False
        self._fold = _Fold(self._epsilon, self._delta, self._accounting, rdp)
        self._records: List[BudgetRecord] = []
        self._states: Dict[str, int] = {}
        self._ledger: Optional[_SQLiteLedger] = None
        self._last_id = 0
        if ledger is not None:
            self._ledger = _SQLiteLedger(ledger, self._meta(), must_exist=_must_exist)
            with self._lock:
                self._sync()

    def _meta(self) -> Dict[str, str]:
        return {"version": _LEDGER_VERSION, "epsilon": self._epsilon.hex(), "delta": self._delta.hex(),
                "accounting": self._accounting, "rdp_delta": f"{self._rdp_delta.numerator}/{self._rdp_delta.denominator}"}

    # ------------------------------------------------------------------ ledger sync
    def _sync_rows(self, conn: sqlite3.Connection) -> None:
        """Fold the spends other handles committed since our last look (lock and transaction held)."""
        if self._fold.plan is None and self._accounting in ("pld", "rdp"):
            row = conn.execute("SELECT value FROM meta WHERE key = 'plan'").fetchone()
            if row is not None:
                self._fold.plan = _decode_plan(row[0])
        rows = conn.execute("SELECT id, epsilon, delta, event, label, timestamp, route FROM spends WHERE id > ? "
                            "ORDER BY id", (self._last_id,)).fetchall()
        for rid, e, d, ev_json, label, ts, route in rows:
            eps, delta = float.fromhex(e), float.fromhex(d)
            event = _decode_event(json.loads(ev_json))
            charge = _filter_charge(event, eps, delta) if route == "R" else None
            self._fold.add(eps, delta, event, route, charge)
            self._records.append(BudgetRecord(eps, delta, label, ts, event))
            self._last_id = rid

    def _sync(self) -> None:
        if self._ledger is not None:
            with self._ledger.transaction() as conn:
                self._sync_rows(conn)

    @contextlib.contextmanager
    def _txn(self) -> Iterator[Optional[sqlite3.Connection]]:
        if self._ledger is None:
            yield None
            return
        with self._ledger.transaction() as conn:
            self._sync_rows(conn)
            yield conn

    @property
    def ledger(self) -> Optional[str]:
        """The absolute path of the SQLite ledger, or None for an in-memory ledger."""
        return None if self._ledger is None else self._ledger.path

    # ------------------------------------------------------------------ copies and pickles
    def __copy__(self) -> "BudgetAccountant":
        return self  # one shared budget (see Notes)

    def __deepcopy__(self, memo) -> "BudgetAccountant":
        return self

    def __getstate__(self) -> dict:
        with self._lock:
            if self._ledger is not None:
                return {"_ledger_path": self._ledger.path, "epsilon": self._epsilon, "delta": self._delta,
                        "accounting": self._accounting, "rdp_delta": self._rdp_delta}
            state = {k: v for k, v in self.__dict__.items() if k not in ("_lock", "_ledger")}
            state["_records"] = list(self._records)
            state["_states"] = dict(self._states)
        return state

    def __setstate__(self, state: dict) -> None:
        if "_ledger_path" in state:  # another handle on the same ledger: not read-only
            rdp = state["rdp_delta"]
            self.__init__(state["epsilon"], state["delta"], accounting=state["accounting"],  # type: ignore[misc]
                          ledger=state["_ledger_path"],
                          rdp_delta=rdp if state["accounting"] == "filter" and rdp > 0 else None, _must_exist=True)
            return
        if "_fold" not in state:
            raise RestoredAccountantError(
                "this pickle holds a BudgetAccountant from an older dpcore version; its ledger cannot be "
                "restored into the privacy-filter accountant: create a new accountant")
        self.__dict__.update(state)
        self._lock = threading.RLock()
        self._ledger = None
        self._restored = True  # read-only: see Notes

    @property
    def restored(self) -> bool:
        """True for an in-memory accountant unpickled from another (read-only)."""
        return self._restored

    def resume(self) -> "BudgetAccountant":
        """Return this accountant if it can spend; an unpickled in-memory copy cannot.

        With ``ledger=`` every handle (original, copies, unpickled) spends from the one ledger, so
        there is nothing to resume. An in-memory ledger unpickled from another accountant stays
        read-only: nothing tells whether the original (or another copy) still spends, and two live
        copies would spend the remaining budget twice. Continue a budget across restarts with
        ``ledger=``.

        Raises
        ------
        RestoredAccountantError
            For an unpickled in-memory accountant.

        Examples
        --------
        >>> import os, pickle, tempfile
        >>> from dpcore import BudgetAccountant
        >>> path = os.path.join(tempfile.mkdtemp(), "budget.sqlite")
        >>> acc = BudgetAccountant(epsilon=1.0, ledger=path)
        >>> acc.spend(0.25)
        >>> restored = pickle.loads(pickle.dumps(acc)).resume()   # e.g. a checkpoint after a restart
        >>> restored.remaining()
        (0.75, 0.0)
        """
        with self._lock:
            self._refuse_if_restored("resume")
        return self

    def _refuse_if_restored(self, label: str) -> None:
        if self._restored:
            what = f" for {label!r}" if label else ""
            raise RestoredAccountantError(
                f"this BudgetAccountant was restored from a pickle and is a read-only record{what}: "
                "spending from it could spend the remaining budget a second time. Use the original "
                "accountant, or an accountant with ledger= (an SQLite file every copy shares)")

    # ------------------------------------------------------------------ properties
    @property
    def epsilon(self) -> float:
        """Total ε budget."""
        return self._epsilon

    @property
    def delta(self) -> float:
        """Total δ budget."""
        return self._delta

    @property
    def accounting(self) -> str:
        """``"filter"``, ``"pld"``, ``"rdp"`` or ``"basic"``."""
        return self._accounting

    @property
    def spent(self) -> Tuple[float, float]:
        """(ε, δ) spent so far, each rounded *up* to a float (see Notes)."""
        with self._lock:
            self._sync()
            e, d = self._fold.spent()
            return float_up(e), float_up(d)

    @property
    def log(self) -> List[BudgetRecord]:
        """A copy of the list of accepted spends (immutable :class:`BudgetRecord` objects)."""
        with self._lock:
            self._sync()
            return list(self._records)

    records = log

    def __len__(self) -> int:
        with self._lock:
            self._sync()
            return len(self._records)

    # ------------------------------------------------------------------ core
    def _validate(self, epsilon, delta, event, label) -> Tuple[float, float, Any, str, Optional[str]]:
        epsilon, delta = check_epsilon(epsilon, "epsilon", grid=False), check_delta(delta, "delta", grid=False)
        if event is None:
            event = EpsilonDeltaDpEvent(epsilon, delta)
        elif not isinstance(event, _dpe.DpEvent):
            raise TypeError(f"event must be a dp_accounting DpEvent or None, got {type(event).__name__}")
        if delta == 0.0 and self._accounting != "basic":
            split = split_event(event, "rdp" if self._accounting == "filter" else self._accounting)
            if split is not None and any(isinstance(leaf, (_dpe.GaussianDpEvent, _dpe.ZCDpEvent))
                                         for leaf, _ in split[0]):
                raise ValueError(f"event {event!r} describes a Gaussian (never pure DP) but delta=0 was declared")
        encoded = json.dumps(_encode_event(event), sort_keys=True) if self._ledger is not None else None
        return epsilon, delta, event, str(label), encoded

    def _decide(self, epsilon: float, delta: float, event: Any, label: str):
        """(route, charge) if the spend fits now; raises otherwise (lock and transaction held)."""
        if self._accounting in ("pld", "rdp"):
            self._fold.match_plan(epsilon, delta, event)
            return "plan", None
        charge = _filter_charge(event, epsilon, delta) if self._accounting == "filter" else None
        route = self._fold.test(epsilon, delta, event, charge)
        if route is None:
            e, d = self._fold.remaining()
            raise BudgetExceededError((epsilon, delta), (float_down(e), float_down(d)), label,
                                      _grid_hint((epsilon, delta), (float_down(e), float_down(d))))
        return route, charge

    def check(self, epsilon: float, delta: float = 0.0, *, event: Any = None, label: str = "") -> None:
        """Raise :class:`BudgetExceededError` if spending (ε, δ) now would exceed the budget.

        Same arguments and test as :meth:`spend`; nothing is recorded.  (A later :meth:`spend` may
        still fail if another thread or process spends in between; :meth:`spend` is the atomic operation.)

        Examples
        --------
        >>> from dpcore import BudgetAccountant, BudgetExceededError
        >>> acc = BudgetAccountant(epsilon=1.0)
        >>> acc.check(0.5)                 # would fit: nothing happens, nothing is recorded
        >>> try:
        ...     acc.check(1.5)
        ... except BudgetExceededError:
        ...     print("would not fit")
        would not fit
        """
        epsilon, delta, event, label, _ = self._validate(epsilon, delta, event, label)
        with self._lock:
            self._refuse_if_restored(label)
            with self._txn():
                self._decide(epsilon, delta, event, label)

    def spend(self, epsilon: float, delta: float = 0.0, *, event: Any = None, label: str = "") -> None:
        """Atomically check and record a spend of (ε, δ) by the mechanism ``event``.

        Parameters
        ----------
        epsilon : float
            ε > 0 (finite): an (ε, δ) guarantee of the mechanism.
        delta : float, default 0.0
            δ in [0, 1).
        event : dp_accounting.DpEvent, optional
            The mechanism (:mod:`dpcore.accounting.events`); it must be at least as private as the
            declared (ε, δ) says. ``None``: ``EpsilonDeltaDpEvent(ε, δ)``.
        label : str
            Free-text description stored in the ledger.

        Raises
        ------
        BudgetExceededError
            If the spend does not fit (module docstring); the ledger is left unchanged.
        ValueError, TypeError
            On invalid ε / δ / event, an event a file ledger cannot store, or (``"pld"``/``"rdp"``) a
            spend that is not the next planned one (ledger unchanged).

        Examples
        --------
        >>> from dpcore import BudgetAccountant
        >>> acc = BudgetAccountant(epsilon=1.0, delta=1e-6)
        >>> acc.spend(0.4, label="histogram")
        >>> acc.spend(0.6, 1e-6, label="mean")
        >>> acc.remaining()
        (0.0, 0.0)
        """
        epsilon, delta, event, label, encoded = self._validate(epsilon, delta, event, label)
        with self._lock:
            self._refuse_if_restored(label)
            ts = time.time()
            with self._txn() as conn:
                route, charge = self._decide(epsilon, delta, event, label)
                if conn is not None:
                    cur = conn.execute("INSERT INTO spends (epsilon, delta, event, label, timestamp, route) "
                                       "VALUES (?, ?, ?, ?, ?, ?)",
                                       (epsilon.hex(), delta.hex(), encoded, label, ts, route))
                    rid = cur.lastrowid
            # committed (or in memory): now part of the folded state
            self._fold.add(epsilon, delta, event, route, charge)
            self._records.append(BudgetRecord(epsilon, delta, label, ts, event))
            if self._ledger is not None:
                self._last_id = int(rid)

    def plan(self, spends: Sequence[Any]) -> None:
        """Declare, before the first spend, the whole sequence an ``"pld"``/``"rdp"`` accountant will accept.

        dp_accounting's PLD / RDP composition is proven for mechanisms whose parameters are fixed in
        advance. The plan is accepted iff its exact basic composition (when every item declares
        (ε, δ)) **or** its dp_accounting composition fits (E, D) — a choice made before any output,
        so either certificate is valid. Afterwards each :meth:`spend` must be the next planned item
        (same event; declared ε, δ not above the planned ones); anything else raises ValueError
        before it is recorded. One plan per accountant (shared by every handle on a ledger).

        Parameters
        ----------
        spends : sequence
            Each item a ``DpEvent`` (one dp_accounting can compose) or a tuple ``(epsilon, delta, event)``
            (``event`` may be None: ``EpsilonDeltaDpEvent(epsilon, delta)``).

        Raises
        ------
        BudgetExceededError
            If the planned sequence does not fit.
        ValueError
            Under ``"filter"``/``"basic"``, on a second plan, after a spend, or on an invalid item.

        Examples
        --------
        >>> from dpcore import BudgetAccountant
        >>> from dpcore.accounting.events import gdp_event
        >>> acc = BudgetAccountant(2.0, 1e-6, accounting="pld")
        >>> acc.plan([gdp_event(0.1)] * 10)
        >>> acc.spend(0.3, 1e-7, event=gdp_event(0.1))
        >>> len(acc)
        1
        """
        if self._accounting not in ("pld", "rdp"):
            raise ValueError(f"plan() is for accounting='pld' or 'rdp' (a sequence declared in advance); this "
                             f"accountant uses {self._accounting!r}, which needs no plan")
        if isinstance(spends, (str, bytes)) or not hasattr(spends, "__iter__"):
            raise TypeError(f"spends must be a sequence of DpEvents or (epsilon, delta, event) tuples, "
                            f"got {type(spends).__name__}")
        items: List[Tuple[Any, Optional[float], Optional[float]]] = []
        for i, item in enumerate(list(spends)):
            if isinstance(item, _dpe.DpEvent):
                if split_event(item, self._accounting) is None:
                    raise ValueError(f"spends[{i}]: {self._accounting.upper()} cannot compose {item!r}; "
                                     "declare it as (epsilon, delta, event)")
                items.append((item, None, None))
            elif isinstance(item, tuple) and len(item) == 3:
                e = check_epsilon(item[0], f"spends[{i}] epsilon", grid=False)
                d = check_delta(item[1], f"spends[{i}] delta", grid=False)
                event = EpsilonDeltaDpEvent(e, d) if item[2] is None else item[2]
                if not isinstance(event, _dpe.DpEvent):
                    raise TypeError(f"spends[{i}] event must be a DpEvent or None, got {type(event).__name__}")
                items.append((event, e, d))
            else:
                raise TypeError(f"spends[{i}] must be a DpEvent or an (epsilon, delta, event) tuple, got {item!r}")
        if not items:
            raise ValueError("spends must not be empty")
        encoded = _encode_plan(items) if self._ledger is not None else None
        with self._lock:
            self._refuse_if_restored("plan")
            with self._txn() as conn:
                if self._fold.plan is not None or self._fold.entries:
                    raise ValueError("this accountant already has a plan (or spends): one plan per accountant, "
                                     "declared before the first spend")
                fits_basic = all(pe is not None for _, pe, _ in items) and (
                    sum(Fraction(pe) for _, pe, _ in items) <= self._fold.E
                    and sum(Fraction(pd) for _, _, pd in items) <= self._fold.D)
                if not fits_basic:
                    composed = composed_epsilon([(e, 0.0 if pe is None else pe, 0.0 if pd is None else pd)
                                                 for e, pe, pd in items], self._delta, self._accounting)
                    if composed is None or composed > self._fold.E:
                        total = float_up(composed) if composed is not None else math.inf
                        raise BudgetExceededError((total, self._delta), (self._epsilon, self._delta),
                                                  f"plan of {len(items)} spends")
                if conn is not None:
                    conn.execute("INSERT INTO meta (key, value) VALUES ('plan', ?)", (encoded,))
            self._fold.plan = items

    # ------------------------------------------------------------------ state sequence numbers
    def record_state(self, state_id: str, seq: int) -> None:
        """Record that the stateful object ``state_id`` committed its sequence number ``seq``.

        One transaction: each number recorded for ``state_id`` must exceed the stored one (the numbers
        only go up; a jump is allowed, for a commit whose record was lost in a crash between the durable
        write and this call, and for a state first seen by this accountant at load). With ``ledger=`` the
        numbers live in the shared ledger, so a state file rolled back (or forked: two sessions
        committing the same number) by someone who controls the disk is detected by its next commit and
        by ``load``.

        Raises
        ------
        StateRollbackError
            If ``seq`` is not the next number (naming the state id, the stored and the given number).

        Examples
        --------
        >>> from dpcore import BudgetAccountant
        >>> acc = BudgetAccountant(1.0)
        >>> acc.record_state("gp-service", 0)
        >>> acc.record_state("gp-service", 1)
        >>> acc.state_seq("gp-service")
        1
        """
        if not isinstance(state_id, str) or not state_id:
            raise TypeError(f"state_id must be a non-empty str, got {state_id!r}")
        if isinstance(seq, bool) or not isinstance(seq, numbers.Integral) or not 0 <= seq < 2 ** 63:
            raise ValueError(f"seq must be an integer in [0, 2**63), got {seq!r}")
        seq = int(seq)
        with self._lock:
            self._refuse_if_restored(state_id)
            with self._txn() as conn:
                if conn is not None:
                    row = conn.execute("SELECT seq FROM states WHERE state_id = ?", (state_id,)).fetchone()
                    stored = None if row is None else int(row[0])
                else:
                    stored = self._states.get(state_id)
                if stored is not None and seq <= stored:
                    raise StateRollbackError(
                        f"state {state_id!r}: sequence number {seq} does not follow the recorded {stored} "
                        f"(expected > {stored}); the state was rolled back or is used by two sessions")
                if conn is not None:
                    conn.execute("INSERT OR REPLACE INTO states (state_id, seq) VALUES (?, ?)", (state_id, seq))
            self._states[state_id] = seq

    def state_seq(self, state_id: str) -> Optional[int]:
        """The last sequence number recorded for ``state_id`` by :meth:`record_state`, or None.

        Examples
        --------
        >>> from dpcore import BudgetAccountant
        >>> BudgetAccountant(1.0).state_seq("pinp") is None
        True
        """
        if not isinstance(state_id, str) or not state_id:
            raise TypeError(f"state_id must be a non-empty str, got {state_id!r}")
        with self._lock:
            if self._ledger is None:
                return self._states.get(state_id)
            with self._txn() as conn:
                assert conn is not None
                row = conn.execute("SELECT seq FROM states WHERE state_id = ?", (state_id,)).fetchone()
            return None if row is None else int(row[0])

    # ------------------------------------------------------------------ the default accountant
    def __enter__(self) -> "BudgetAccountant":
        """``with acc:`` makes ``acc`` the default accountant (:meth:`default`) inside the block."""
        _ACTIVE.set(_ACTIVE.get() + (self,))
        return self

    def __exit__(self, *exc: Any) -> None:
        stack = _ACTIVE.get()
        if stack and stack[-1] is self:
            _ACTIVE.set(stack[:-1])

    @classmethod
    def set_default(cls, accountant: Optional["BudgetAccountant"]) -> None:
        """Make ``accountant`` the process-wide default accountant (``None`` clears it).

        As in diffprivlib, fits that are given no ``accountant=`` are meant to charge the default one
        (the innermost ``with acc:`` block, else this one). **Which estimators consult it is decided
        by each estimator** (wiring them is issue 25): until an estimator's docstring says so, pass
        ``accountant=`` explicitly. There is no implicit default budget: with none set, :meth:`default`
        is ``None``.

        Examples
        --------
        >>> from dpcore import BudgetAccountant
        >>> acc = BudgetAccountant(1.0)
        >>> BudgetAccountant.set_default(acc)
        >>> BudgetAccountant.default() is acc
        True
        >>> BudgetAccountant.set_default(None)
        """
        if accountant is not None and not isinstance(accountant, BudgetAccountant):
            raise TypeError(f"accountant must be a BudgetAccountant or None, got {type(accountant).__name__}")
        with _DEFAULT_LOCK:
            _DEFAULT[0] = accountant

    @classmethod
    def default(cls) -> Optional["BudgetAccountant"]:
        """The default accountant: the innermost ``with acc:`` block's, else :meth:`set_default`'s, else None.

        Examples
        --------
        >>> from dpcore import BudgetAccountant
        >>> BudgetAccountant.default() is None
        True
        >>> with BudgetAccountant(1.0, 1e-6) as acc:
        ...     BudgetAccountant.default() is acc
        True
        """
        stack = _ACTIVE.get()
        if stack:
            return stack[-1]
        with _DEFAULT_LOCK:
            return _DEFAULT[0]

    # ------------------------------------------------------------------ remaining
    def remaining(self) -> Tuple[float, float]:
        """(ε, δ) still available, each rounded *down* (a pure spend of the remaining ε always fits).

        Examples
        --------
        >>> from dpcore import BudgetAccountant
        >>> acc = BudgetAccountant(epsilon=1.0, delta=1e-6)
        >>> acc.spend(0.25)
        >>> acc.remaining()
        (0.75, 1e-06)
        """
        with self._lock:
            self._sync()
            e, d = self._fold.remaining()
            return float_down(e), float_down(d)

    def remaining_per_step(self, k: int, *, delta_prime: Any = None) -> float:
        """Largest float ε_step such that ``k`` pure spends of ε_step are guaranteed to fit.

        ``k · Fraction(ε_step) ≤ ε_remaining`` exactly, with ε_remaining from :meth:`remaining`
        (pure spends fit by the same test). The δ budget is not split; pass the per-step δ you need
        to :meth:`spend`. Gaussian steps usually fit far more than this split suggests: declare them
        with ``event=`` and let the accountant compose them.

        Parameters
        ----------
        k : int
            Number of planned spends (≥ 1).
        delta_prime : None
            Not supported: a ValueError points to
            :func:`dpcore.accounting.calibrate.per_step_epsilon` for advanced composition.

        Raises
        ------
        BudgetExceededError
            If the remaining ε is exhausted (no positive ε_step exists).

        Examples
        --------
        >>> from dpcore import BudgetAccountant
        >>> acc = BudgetAccountant(epsilon=1.0)
        >>> acc.remaining_per_step(4)
        0.25
        """
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        k = int(k)
        if delta_prime is not None:
            raise ValueError(
                "delta_prime is not supported by BudgetAccountant.remaining_per_step: pure steps are split "
                "by basic composition. For advanced composition use "
                "dpcore.accounting.calibrate.per_step_epsilon(epsilon, k, delta_prime) and spend the composed "
                "total (epsilon, k*delta0 + delta_prime) once, or declare each step's event= (e.g. a "
                "Gaussian) and let the accountant compose them."
            )
        with self._lock:
            self._sync()
            eps_rem, d_rem = self._fold.remaining()
            step = float_down(eps_rem / k)
            if step <= 0.0:
                raise BudgetExceededError((0.0, 0.0), (float_down(eps_rem), float_down(d_rem)), f"{k} steps")
            return step

    def __repr__(self) -> str:
        with self._lock:
            self._sync()
            e, d = self._fold.spent()
            eps_spent, delta_spent = float_up(e), float_up(d)
            n = len(self._records)
        where = "" if self._ledger is None else f", ledger={self._ledger.path!r}"
        return (
            f"BudgetAccountant(epsilon={self._epsilon!r}, delta={self._delta!r}, accounting={self._accounting!r}"
            f"{where}; spent epsilon={eps_spent!r}, delta={delta_spent!r} in {n} spend{'s' if n != 1 else ''})"
        )

"""dp_accounting ``DpEvent`` descriptions of dpcore's mechanisms, and the accountants that compose them.

Every release in dpcore is described, as tightly as its privacy proof allows, by a
:class:`dp_accounting.DpEvent` (Google's ``dp_accounting`` library), and composed by dp_accounting's
privacy-loss-distribution (PLD) or Rényi (RDP) accountant in
:class:`dpcore.accounting.BudgetAccountant`. Nothing here sees data: an event holds public numbers only
(a noise multiplier σ/Δ, an ε, a δ).

Adjacency convention (read this before building an event by hand)
------------------------------------------------------------------
dpcore's neighbouring datasets differ by **replacing** one record, and every sensitivity in dpcore
(Δ₁, Δ₂) is the replace-one sensitivity: ``‖f(D) − f(D')‖ ≤ Δ`` for every replace-one pair. A
Gaussian release ``f(D) + σZ`` is then, for each pair, the shifted-Gaussian pair ``N(0, σ²)`` vs
``N(Δ, σ²)`` (after rotating ``f(D) − f(D')`` onto the first axis), i.e. the pair with noise
multiplier ``σ/Δ`` and a *unit* shift. dp_accounting 0.6 (read from its source,
``pld/pld_privacy_accountant.py``, ``pld/privacy_loss_distribution.py``,
``rdp/rdp_privacy_accountant.py``) treats its ``NeighboringRelation`` as follows for events
without sub-sampling:

* PLD, ``GaussianDpEvent(m)`` under ``ADD_OR_REMOVE_ONE``: the pair ``N(0, m²)`` vs ``N(1, m²)``
  (both directions; symmetric). Under ``REPLACE_ONE``: ``AdjacencyType.REPLACE``, i.e. the pair
  ``N(−1, m²)`` vs ``N(1, m²)`` — a shift of **2**, because dp_accounting's unit is the
  add/remove sensitivity and a replacement is a removal plus an addition. (One ``GaussianDpEvent(2)``
  at δ = 1e-6: ε = 2.25 under ADD_OR_REMOVE_ONE, 4.89 under REPLACE_ONE.)
* PLD, ``LaplaceDpEvent(m)``: only ``ADD_OR_REMOVE_ONE`` (``REPLACE_ONE`` is refused), pair
  ``Lap(0, m)`` vs ``Lap(1, m)``.
* RDP, ``GaussianDpEvent`` / ``LaplaceDpEvent``: the relation is ignored; unit-shift pair
  (RDP ``α/(2m²)`` for the Gaussian).

Since dpcore's multiplier is already relative to the replace-one shift Δ, the pair that dominates a
dpcore release is the *unit-shift* pair, which is exactly what the accountants compute under
``ADD_OR_REMOVE_ONE``. dpcore therefore always composes with
``neighboring_relation=NEIGHBORING_RELATION = ADD_OR_REMOVE_ONE`` and multipliers ``σ/Δ_replace``. This
is correct and not loose: the accountant's pair *is* the worst-case pair of the release (Gaussian and
Laplace privacy losses depend on the pair only through the shift). Using ``REPLACE_ONE`` would be
sound but charge the Gaussian as if its sensitivity were 2Δ. The label ``ADD_OR_REMOVE_ONE`` is
bookkeeping only: the guarantee proven is for dpcore's replace-one neighbours, because adaptive
composition of mechanisms with dominating pairs ``(P_i, Q_i)`` is dominated by ``(⊗P_i, ⊗Q_i)``
whatever the neighbouring relation the pairs were derived for (Zhu, Dong & Wang 2022, Thm 10).
``tests/accounting/test_events.py`` checks numerically that one Gaussian at dpcore's analytic σ for
(ε, δ) comes back at ε' ≤ ε (and within 1% of it) at the same δ.

Which event for which release
-----------------------------
* :func:`gaussian_event`: a release that *is* a continuous Gaussian of standard deviation σ on a
  replace-one L2 sensitivity Δ₂, possibly post-processed (dpcore's ``method="analytic"`` samples the
  continuous Gaussian exactly and rounds to the grid *afterwards*: post-processing) →
  ``GaussianDpEvent(σ/Δ₂)`` (rounded down).
* :func:`gdp_event`: a mechanism proven μ-GDP (Dong, Roth & Su 2022) → ``GaussianDpEvent(1/μ)``: the
  trade-off curve of μ-GDP is the unit-shift Gaussian's with multiplier 1/μ.
* :func:`zcdp_event`: ρ-zCDP (dpcore's discrete Gaussian, ``method="zcdp"``) → ``ZCDpEvent(ρ)``
  (RDP only; PLD composes it by its (ε, δ)).
* :func:`epsilon_delta_event`: everything else — a release whose proof gives (ε, δ) only (grid
  snapping slack, float-error terms, the exponential mechanism, output/objective perturbation,
  dpcore's *discrete* Laplace on a 2⁻⁴⁰ grid, whose privacy-loss distribution is not the continuous
  Laplace's and whose exact PLD has ~2⁴⁰ support points). :class:`EpsilonDeltaDpEvent` is dpcore's
  own ``DpEvent`` (dp_accounting 0.6 has none); neither accountant supports it, and
  :class:`~dpcore.accounting.BudgetAccountant` composes it by basic composition (see
  :func:`split_event`); under RDP a pure ε event is described as ``ZCDpEvent(ε²/2)`` (ε-DP ⇒
  ½ε²-zCDP, Bun & Steinke 2016, Prop. 1.4) in addition.

PLD accountants use dp_accounting's pessimistic estimates (its default, an upper bound on every
hockey-stick divergence) with value discretisation interval ``PLD_DISCRETIZATION = 1e-4``.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any, List, Optional, Tuple

import attr
from dp_accounting import dp_event as _dpe
from dp_accounting.privacy_accountant import NeighboringRelation, PrivacyAccountant

from dpcore._internal.exact import float_down
from dpcore._internal.validation import check_delta, check_epsilon, check_positive

__all__ = ["ACCOUNTINGS", "EpsilonDeltaDpEvent", "NEIGHBORING_RELATION", "PLD_DISCRETIZATION", "compose_events",
           "composed_epsilon",
           "epsilon_delta_event", "event_epsilon", "gaussian_event", "gdp_event", "make_accountant", "plan_event",
           "self_compose", "split_event", "zcdp_event"]

#: dp_accounting relation under which dpcore's replace-one multipliers are composed (module docstring).
NEIGHBORING_RELATION = NeighboringRelation.ADD_OR_REMOVE_ONE
#: Value discretisation interval of every PLD accountant dpcore creates (pessimistic estimates).
PLD_DISCRETIZATION = 1e-4
#: Accounting modes of :class:`dpcore.accounting.BudgetAccountant` (``"filter"``, the default, is the
#: privacy filter valid under fully adaptive parameters; ``"pld"``/``"rdp"`` compose a planned sequence).
ACCOUNTINGS = ("filter", "pld", "rdp", "basic")


@attr.s(frozen=True, slots=True, auto_attribs=True)
class EpsilonDeltaDpEvent(_dpe.DpEvent):
    """A mechanism known only to be (ε, δ)-DP (replace-one), as a dp_accounting ``DpEvent``.

    dp_accounting's accountants do not support it; :class:`dpcore.accounting.BudgetAccountant`
    composes it by basic composition (and, under RDP, a pure ε event also as ``ZCDpEvent(ε²/2)``).

    Examples
    --------
    >>> from dpcore.accounting.events import EpsilonDeltaDpEvent
    >>> EpsilonDeltaDpEvent(0.5, 1e-6)
    EpsilonDeltaDpEvent(epsilon=0.5, delta=1e-06)
    """

    epsilon: float
    delta: float = 0.0


def _check_accounting(accounting: Any) -> str:
    if accounting not in ACCOUNTINGS:
        raise ValueError(f"accounting must be one of {ACCOUNTINGS}, got {accounting!r}")
    return str(accounting)


def epsilon_delta_event(epsilon: float, delta: float = 0.0) -> EpsilonDeltaDpEvent:
    """The event of an (ε, δ)-DP mechanism with no tighter proven description.

    Parameters
    ----------
    epsilon : float
        ε > 0.
    delta : float, default 0.0
        δ in [0, 1).

    Returns
    -------
    EpsilonDeltaDpEvent

    Examples
    --------
    >>> from dpcore.accounting.events import epsilon_delta_event
    >>> epsilon_delta_event(1.0)
    EpsilonDeltaDpEvent(epsilon=1.0, delta=0.0)
    """
    return EpsilonDeltaDpEvent(check_epsilon(epsilon, grid=False), check_delta(delta, grid=False))


def gaussian_event(sigma: float, sensitivity: float) -> _dpe.GaussianDpEvent:
    """The event of a continuous Gaussian release of std ``sigma`` on a replace-one L2 ``sensitivity``.

    The noise multiplier ``σ/Δ₂`` is rounded *down* (a smaller multiplier is a weaker claim).

    Parameters
    ----------
    sigma : float
        Standard deviation σ > 0 of the (exactly sampled) Gaussian noise per coordinate.
    sensitivity : float
        Replace-one L2 sensitivity Δ₂ > 0 of the released vector.

    Returns
    -------
    dp_accounting.GaussianDpEvent

    Examples
    --------
    >>> from dpcore.accounting.events import gaussian_event
    >>> gaussian_event(4.0, 2.0)
    GaussianDpEvent(noise_multiplier=2.0)
    """
    sigma = check_positive(sigma, "sigma")
    sensitivity = check_positive(sensitivity, "sensitivity")
    return _dpe.GaussianDpEvent(float_down(Fraction(sigma) / Fraction(sensitivity)))


def gdp_event(mu: float) -> _dpe.GaussianDpEvent:
    """The event of a μ-GDP mechanism: ``GaussianDpEvent(1/μ)`` (multiplier rounded down).

    Parameters
    ----------
    mu : float
        μ > 0.

    Returns
    -------
    dp_accounting.GaussianDpEvent

    Examples
    --------
    >>> from dpcore.accounting.events import gdp_event
    >>> gdp_event(0.5)
    GaussianDpEvent(noise_multiplier=2.0)
    """
    mu = check_positive(mu, "mu")
    return _dpe.GaussianDpEvent(float_down(1 / Fraction(mu)))


def zcdp_event(rho: float) -> _dpe.ZCDpEvent:
    """The event of a ρ-zCDP mechanism (e.g. dpcore's discrete Gaussian): ``ZCDpEvent(ρ)``.

    Parameters
    ----------
    rho : float
        ρ > 0.

    Returns
    -------
    dp_accounting.ZCDpEvent

    Examples
    --------
    >>> from dpcore.accounting.events import zcdp_event
    >>> zcdp_event(0.125)
    ZCDpEvent(rho=0.125, xi=0.0)
    """
    return _dpe.ZCDpEvent(check_positive(rho, "rho"))


def plan_event(plan: Any) -> _dpe.DpEvent:
    """The event of one release through a :mod:`dpcore.mechanisms.noise` plan.

    ``GaussianPlan`` with ``method="analytic"`` → :func:`gaussian_event` ``(σ, Δ₂)`` (continuous Gaussian
    sampled exactly, rounded afterwards); ``method="zcdp"`` → :func:`zcdp_event` ``(rho_used)``;
    ``LaplacePlan`` → :func:`epsilon_delta_event` ``(epsilon_used)`` (exact *discrete* Laplace on a
    fine grid; see the module docstring).

    Parameters
    ----------
    plan : LaplacePlan or GaussianPlan
        From :func:`dpcore.mechanisms.noise.laplace_plan` / :func:`~dpcore.mechanisms.noise.gaussian_plan`.

    Returns
    -------
    dp_accounting.DpEvent

    Examples
    --------
    >>> from dpcore.mechanisms.noise import gaussian_plan, laplace_plan
    >>> from dpcore.accounting.events import plan_event
    >>> plan_event(laplace_plan(1.0, 0.5))
    EpsilonDeltaDpEvent(epsilon=0.5, delta=0.0)
    >>> type(plan_event(gaussian_plan(1.0, 1.0, 1e-6))).__name__
    'GaussianDpEvent'
    """
    # the plans live one layer up (dpcore.mechanisms.noise) and describe their own event: no upward import here
    fn = getattr(plan, "dp_event", None)
    if not callable(fn):
        raise TypeError(f"plan must be a LaplacePlan or GaussianPlan, got {type(plan).__name__}")
    return fn()


def compose_events(*events: _dpe.DpEvent) -> _dpe.DpEvent:
    """Adaptive composition of ``events`` (a ``ComposedDpEvent``; one event is returned as is).

    Parameters
    ----------
    *events : dp_accounting.DpEvent
        At least one.

    Returns
    -------
    dp_accounting.DpEvent

    Examples
    --------
    >>> from dpcore.accounting.events import compose_events, gdp_event, epsilon_delta_event
    >>> compose_events(gdp_event(1.0), epsilon_delta_event(0.1))
    ComposedDpEvent(events=[GaussianDpEvent(noise_multiplier=1.0), EpsilonDeltaDpEvent(epsilon=0.1, delta=0.0)])
    """
    if not events:
        raise ValueError("events must contain at least one DpEvent")
    for i, e in enumerate(events):
        if not isinstance(e, _dpe.DpEvent):
            raise TypeError(f"events[{i}] must be a dp_accounting DpEvent, got {type(e).__name__}")
    return events[0] if len(events) == 1 else _dpe.ComposedDpEvent(list(events))


def self_compose(event: _dpe.DpEvent, count: int) -> _dpe.DpEvent:
    """``count`` adaptive repetitions of ``event`` (``SelfComposedDpEvent``).

    Parameters
    ----------
    event : dp_accounting.DpEvent
    count : int
        ≥ 1.

    Returns
    -------
    dp_accounting.DpEvent

    Examples
    --------
    >>> from dpcore.accounting.events import gdp_event, self_compose
    >>> self_compose(gdp_event(1.0), 3)
    SelfComposedDpEvent(event=GaussianDpEvent(noise_multiplier=1.0), count=3)
    """
    if not isinstance(event, _dpe.DpEvent):
        raise TypeError(f"event must be a dp_accounting DpEvent, got {type(event).__name__}")
    if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 1:
        raise ValueError(f"count must be a positive integer, got {count!r}")
    return event if count == 1 else _dpe.SelfComposedDpEvent(event, int(count))


def make_accountant(accounting: str = "pld") -> PrivacyAccountant:
    """A fresh dp_accounting accountant with dpcore's conventions.

    ``"pld"``: ``PLDAccountant(NEIGHBORING_RELATION, value_discretization_interval=PLD_DISCRETIZATION)``
    (pessimistic estimates); ``"rdp"``: ``RdpAccountant(neighboring_relation=NEIGHBORING_RELATION)``
    with dp_accounting's default orders.

    Parameters
    ----------
    accounting : {"pld", "rdp"}

    Returns
    -------
    dp_accounting.PrivacyAccountant

    Examples
    --------
    >>> from dpcore.accounting.events import gdp_event, make_accountant
    >>> acc = make_accountant("pld")
    >>> _ = acc.compose(gdp_event(1.0))
    >>> round(acc.get_epsilon(1e-6), 1)
    4.9
    """
    if accounting == "pld":
        from dp_accounting.pld import PLDAccountant

        return PLDAccountant(NEIGHBORING_RELATION, value_discretization_interval=PLD_DISCRETIZATION)
    if accounting == "rdp":
        from dp_accounting.rdp import RdpAccountant

        return RdpAccountant(neighboring_relation=NEIGHBORING_RELATION)
    raise ValueError(f"accounting must be 'pld' or 'rdp' for a dp_accounting accountant, got {accounting!r}")


def split_event(event: _dpe.DpEvent, accounting: str = "pld", *, pure_as_zcdp: bool = False
                ) -> Optional[Tuple[List[Tuple[_dpe.DpEvent, int]], Fraction, Fraction]]:
    """Split ``event`` into the part the ``accounting`` accountant supports and a basic-composition part.

    Walks ``ComposedDpEvent`` / ``SelfComposedDpEvent`` trees. Leaves the accountant supports go to the
    first list as ``(leaf, count)``; :class:`EpsilonDeltaDpEvent` leaves the accountant does not
    support add ``count·ε``, ``count·δ`` (exact) to the basic part; ``NoOpDpEvent`` adds nothing.
    With ``pure_as_zcdp`` (``"rdp"`` only) a pure ``EpsilonDeltaDpEvent(ε, 0)`` becomes ``ZCDpEvent(ε²/2)``
    (ε-DP ⇒ ½ε²-zCDP, Bun & Steinke 2016, Prop. 1.4). Returns ``None``
    if some leaf is neither (e.g. ``UnsupportedDpEvent``, or ``RepeatAndSelectDpEvent`` under
    PLD): the caller then treats the whole event as its declared (ε, δ).

    Parameters
    ----------
    event : dp_accounting.DpEvent
    accounting : {"pld", "rdp"}
    pure_as_zcdp : bool, default False

    Returns
    -------
    (list of (DpEvent, int), Fraction, Fraction) or None

    Examples
    --------
    >>> from dpcore.accounting.events import split_event, gdp_event, epsilon_delta_event, compose_events
    >>> parts, e, d = split_event(compose_events(gdp_event(1.0), epsilon_delta_event(0.25, 1e-9)))
    >>> parts, float(e), float(d)
    ([(GaussianDpEvent(noise_multiplier=1.0), 1)], 0.25, 1e-09)
    """
    accountant = make_accountant(accounting)
    supported: List[Tuple[_dpe.DpEvent, int]] = []
    eps, delta = Fraction(0), Fraction(0)

    def walk(e: _dpe.DpEvent, count: int) -> bool:
        nonlocal eps, delta
        if isinstance(e, _dpe.NoOpDpEvent):
            return True
        if isinstance(e, _dpe.SelfComposedDpEvent):
            return walk(e.event, e.count * count)
        if isinstance(e, _dpe.ComposedDpEvent):
            return all(walk(x, count) for x in e.events)
        if isinstance(e, EpsilonDeltaDpEvent):
            if pure_as_zcdp and accounting == "rdp" and e.delta == 0.0:
                supported.append((_dpe.ZCDpEvent(float(e.epsilon) ** 2 / 2.0 * (1.0 + 1e-15)), count))
            else:
                eps += count * Fraction(e.epsilon)
                delta += count * Fraction(e.delta)
            return True
        if isinstance(e, _dpe.DpEvent) and accountant.supports(e):
            supported.append((e, count))
            return True
        return False

    if not isinstance(event, _dpe.DpEvent):
        raise TypeError(f"event must be a dp_accounting DpEvent, got {type(event).__name__}")
    return (supported, eps, delta) if walk(event, 1) else None


def _supported_epsilon(parts: List[Tuple[_dpe.DpEvent, int]], delta: float, accounting: str) -> float:
    """ε of the composition of ``parts`` at ``delta`` by the dp_accounting accountant (0 if empty)."""
    if not parts:
        return 0.0
    if not delta > 0.0:
        delta = 0.0
    acc = make_accountant(accounting)
    acc.compose(_dpe.ComposedDpEvent([_dpe.SelfComposedDpEvent(e, c) if c > 1 else e for e, c in parts]))
    eps = float(acc.get_epsilon(delta))
    return eps if eps >= 0.0 else 0.0  # a PLD may return a tiny negative ε; ε ≥ 0 is always valid


def composed_epsilon(events: List[Tuple[_dpe.DpEvent, float, float]], delta: float,
                     accounting: str = "pld") -> Optional[Fraction]:
    """ε (exact upper bound) at ``delta`` of the adaptive composition of ``events`` by dpcore's rule.

    ``events`` are ``(event, ε_declared, δ_declared)``. Each event is split (:func:`split_event`); an
    event with a part neither the accountant nor basic composition can describe counts as its declared
    (ε, δ) (basic part). The supported parts are composed by the dp_accounting accountant at
    ``δ_rest = delta − Σδ_basic`` and ``Σε_basic`` is added. Under ``"rdp"`` the result is the smaller of
    the two valid variants (pure events in the basic part, or as ``ZCDpEvent(ε²/2)``). ``None`` if no
    finite bound exists (e.g. ``Σδ_basic > delta``, or a Gaussian at ``delta = 0``).

    Parameters
    ----------
    events : list of (DpEvent, float, float)
    delta : float
        δ budget in [0, 1).
    accounting : {"pld", "rdp"}

    Returns
    -------
    fractions.Fraction or None

    Examples
    --------
    >>> from dpcore.accounting.events import composed_epsilon, gdp_event
    >>> round(float(composed_epsilon([(gdp_event(0.1), 0.5, 1e-7)] * 100, 1e-6)), 1)
    4.9
    """
    best: Optional[Fraction] = None
    for pure_as_zcdp in ((False, True) if accounting == "rdp" else (False,)):
        parts: List[Tuple[_dpe.DpEvent, int]] = []
        e_basic, d_basic = Fraction(0), Fraction(0)
        for event, eps_declared, delta_declared in events:
            split = split_event(event, accounting, pure_as_zcdp=pure_as_zcdp)
            if split is None:
                split = ([], Fraction(eps_declared), Fraction(delta_declared))
            for leaf, count in split[0]:
                for i, (known, c) in enumerate(parts):
                    if known == leaf:
                        parts[i] = (known, c + count)
                        break
                else:
                    parts.append((leaf, count))
            e_basic += split[1]
            d_basic += split[2]
        if d_basic > Fraction(delta):
            continue
        eps_s = _supported_epsilon(parts, float_down(Fraction(delta) - d_basic), accounting)
        if not math.isfinite(eps_s):
            continue
        total = Fraction(eps_s) + e_basic
        best = total if best is None else min(best, total)
    return best


def event_epsilon(event: _dpe.DpEvent, delta: float, accounting: str = "pld") -> float:
    """ε at ``delta`` of ``event`` under dpcore's composition (``math.inf`` if none is available).

    The supported part (see :func:`split_event`) is composed by the dp_accounting accountant at
    ``delta − δ_basic`` and the basic part's ``ε_basic`` is added (basic composition of the two
    groups; see :func:`composed_epsilon`). An event with a part neither can describe gives ``math.inf``.

    Parameters
    ----------
    event : dp_accounting.DpEvent
    delta : float
        Target δ in [0, 1).
    accounting : {"pld", "rdp"}

    Returns
    -------
    float

    Examples
    --------
    >>> from dpcore.accounting.events import event_epsilon, gdp_event, self_compose
    >>> round(event_epsilon(self_compose(gdp_event(0.1), 100), 1e-6), 1)  # 100 × 0.1-GDP = 1-GDP
    4.9
    """
    accounting = _check_accounting(accounting)
    if accounting not in ("pld", "rdp"):
        raise ValueError(f"accounting must be 'pld' or 'rdp' for event_epsilon, got {accounting!r}")
    delta = check_delta(delta)
    if not isinstance(event, _dpe.DpEvent):
        raise TypeError(f"event must be a dp_accounting DpEvent, got {type(event).__name__}")
    if split_event(event, accounting) is None:
        return math.inf
    total = composed_epsilon([(event, 0.0, 0.0)], delta, accounting)
    if total is None:
        return math.inf
    f = float(total)
    return f if Fraction(f) >= total else math.nextafter(f, math.inf)

"""Privacy budget accounting.

:class:`BudgetAccountant` keeps a ledger of spends against a fixed total budget (E, D). Every spend
carries its declared (ε, δ) and a dp_accounting ``DpEvent`` describing the mechanism
(:mod:`dpcore.accounting.events`).

Composition (``accounting=``)
-----------------------------
``"basic"``
    Basic (sequential) composition: mechanisms (ε_i, δ_i)-DP run on the same data compose to
    (Σε_i, Σδ_i) (Dwork et al. 2006), whatever the adaptivity between them. Kept in exact rational
    arithmetic (:class:`fractions.Fraction` of the floats passed), so rounding can never let the
    recorded total exceed the budget.
``"pld"`` (default), ``"rdp"``
    A spend is accepted iff the accepted spends plus the new one fit the budget under **either**
    (a) the exact basic test above, **or** (b) dp_accounting's composition of their events: the
    parts the PLD (resp. RDP) accountant supports are composed by it at ``δ_rest = D − Σδ_basic`` and
    the remaining (``EpsilonDeltaDpEvent``) parts' ``Σε_basic`` is added, and the spend is accepted if
    ``ε_accountant(δ_rest) + Σε_basic ≤ E`` (exact comparison of the floats;
    :func:`dpcore.accounting.events.composed_epsilon`). δ split: the basic part gets exactly its own
    Σδ_basic, the accountant part the rest of D.

*Soundness of "either".* Let S be the accepted spends after any sequence of calls. The last
acceptance tested S itself (all accepted + the new one), so S satisfies (a) or (b). (a) makes the
composition of S (E, D)-DP by basic composition. (b) does too: each mechanism's (replace-one)
dominating pair is the one its event describes (module docstring of :mod:`dpcore.accounting.events`),
adaptive composition is dominated by the product of the pairs (Zhu, Dong & Wang 2022, Thm 10), the
product factors into the accountant group (whose hockey-stick divergence at e^{ε_acc} is ≤ δ_rest by
dp_accounting's pessimistic PLD, resp. the RDP conversion) and the basic group ((Σε_basic,
Σδ_basic)-DP), and basic composition of the two groups gives (ε_acc + Σε_basic, δ_rest + Σδ_basic)
⊆ (E, D). Either valid guarantee suffices. Refusals depend on public numbers only and record nothing.

*Never looser than basic.* With the same history, a spend that basic accounting accepts passes
test (a), so ``"pld"``/``"rdp"`` accept it too; by induction over a sequence of calls, the
``"pld"``/``"rdp"`` accountant accepts every spend the ``"basic"`` one accepts up to the first
refusal of the latter (``tests/accounting/test_accountant_modes.py`` checks this with hypothesis).

*Scope.* Test (b) certifies the composition of the accepted events as a list fixed by public
information, as dp_accounting's own use does (e.g. a DP-SGD schedule); the mechanisms may be chosen
adaptively, but if the *privacy parameters* of later spends are chosen from earlier *outputs*, only
basic composition is a proven privacy filter for such fully adaptive parameters (Rogers, Roth,
Ullman & Vadhan 2016) — use ``accounting="basic"`` there. (Every estimator in dpcore fixes its
parameters from public inputs.)

Mechanisms call :meth:`BudgetAccountant.spend` **before** computing anything from the data; an
over-spend raises :class:`BudgetExceededError` and records nothing.  :meth:`BudgetAccountant.check`
performs the same test without spending, so a pipeline can fail early.  All operations are
thread-safe (one lock around every check-and-record, including the dp_accounting computation).
"""

from __future__ import annotations

import numbers
import threading
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, List, Optional, Tuple

from dp_accounting import dp_event as _dpe

from dpcore._internal.exact import float_down, float_up
from dpcore.accounting.events import EpsilonDeltaDpEvent, _check_accounting, composed_epsilon, split_event
from dpcore._internal.validation import check_delta, check_epsilon
from dpcore.exceptions import BudgetExceededError, RestoredAccountantError

__all__ = ["BudgetAccountant", "BudgetExceededError", "BudgetRecord"]


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


class BudgetAccountant:
    """Thread-safe (ε, δ) budget ledger composing by dp_accounting's PLD/RDP or basic composition.

    Parameters
    ----------
    epsilon : float
        Total ε budget E, finite and > 0.
    delta : float, default 0.0
        Total δ budget D in [0, 1).  With D = 0 only pure-DP spends are accepted.
    accounting : {"pld", "rdp", "basic"}, default "pld"
        How spends compose (module docstring): ``"basic"`` is exact basic composition; ``"pld"`` /
        ``"rdp"`` accept a spend if basic composition *or* dp_accounting's PLD (pessimistic, value
        discretisation 1e-4) / RDP composition of the events fits, so they are never looser than
        ``"basic"``.

    Examples
    --------
    >>> acc = BudgetAccountant(1.0, 1e-6)
    >>> acc.spend(0.5, label="mean")
    >>> acc.remaining()
    (0.5, 1e-06)
    >>> acc.spend(0.6)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    dpcore.accounting.accountant.BudgetExceededError: privacy budget exceeded

    100 Gaussian releases each (0.1, 1e-7)-DP fit a budget of (1, 1e-5) under PLD accounting (basic
    composition would charge ε = 10):

    >>> from dpcore.accounting.calibrate import gaussian_sigma
    >>> from dpcore.accounting.events import gaussian_event
    >>> acc = BudgetAccountant(1.0, 1e-5)
    >>> event = gaussian_event(gaussian_sigma(1.0, 0.1, 1e-7), 1.0)
    >>> for _ in range(100):
    ...     acc.spend(0.1, 1e-7, event=event)
    >>> eps, delta = acc.spent
    >>> round(eps, 2), delta
    (0.89, 1e-05)

    Notes
    -----
    ``spent`` / ``remaining()``. Under ``"basic"``: ``(Σε, Σδ)`` and ``(E − Σε, D − Σδ)``. Under
    ``"pld"``/``"rdp"``: ``spent`` is the tighter of the two valid guarantees of the accepted spends
    — ``(ε_acc, D)`` from the dp_accounting composition (ε at the full δ budget) if ``ε_acc < Σε``,
    else ``(Σε, Σδ)`` — and ``remaining() = (E − spent_ε, D − spent_δ)``, rounded down: a pure spend
    (``EpsilonDeltaDpEvent(ε, 0)``) of the remaining ε always fits. ``remaining_per_step(k)`` splits
    that remaining ε into k equal pure spends, which are all guaranteed to fit; Gaussian spends
    usually fit far more (compose them through the accountant instead of splitting ε).

    Copies and pickles. An accountant is one shared budget, like an open file:
    ``copy.copy``/``copy.deepcopy`` (and therefore ``sklearn.base.clone`` of an estimator given
    ``accountant=``) return the *same* accountant, so spends through the copy are charged to the
    one budget. ``pickle`` stores the ledger (budgets, spends, records); the unpickled accountant is
    **read-only** (``restored`` is True): :meth:`check` and :meth:`spend` raise
    :class:`~dpcore.exceptions.RestoredAccountantError`, because two live copies of a ledger would
    let the remaining budget be spent twice. Pickling a fitted estimator that holds an accountant
    therefore works and carries a read-only record of what was spent. Where the original is gone
    (a checkpoint restored after a restart), :meth:`resume` makes the restored copy spendable.
    """

    def __init__(self, epsilon: float, delta: float = 0.0, *, accounting: str = "pld") -> None:
        self._epsilon = check_epsilon(epsilon, "epsilon")
        self._delta = check_delta(delta, "delta")
        self._accounting = _check_accounting(accounting)
        # accepted (event, ε, δ) for the dp_accounting composition, and its cached exact ε (or None)
        self._events: List[Tuple[Any, float, float]] = []
        self._composed: Optional[Fraction] = None
        self._composed_valid = True
        self._eps_budget = Fraction(self._epsilon)
        self._delta_budget = Fraction(self._delta)
        self._eps_spent = Fraction(0)
        self._delta_spent = Fraction(0)
        self._records: List[BudgetRecord] = []
        self._lock = threading.Lock()
        self._restored = False

    # ------------------------------------------------------------------ copies and pickles
    def __copy__(self) -> "BudgetAccountant":
        return self  # one shared budget (see Notes)

    def __deepcopy__(self, memo) -> "BudgetAccountant":
        return self

    def __getstate__(self) -> dict:
        with self._lock:
            state = {k: v for k, v in self.__dict__.items() if k != "_lock"}
            state["_records"] = list(self._records)
        return state

    def __setstate__(self, state: dict) -> None:
        state.setdefault("_accounting", "basic")  # pickles from before accounting= composed by basic only
        state.setdefault("_events", [])
        state.setdefault("_composed", None)
        state.setdefault("_composed_valid", False)
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._restored = True  # read-only until resume(): see Notes

    @property
    def restored(self) -> bool:
        """True for an accountant unpickled and not resumed (read-only)."""
        return self._restored

    def resume(self) -> "BudgetAccountant":
        """Make an unpickled accountant spendable again and return it.

        Only correct where the original accountant no longer spends (e.g. a checkpoint restored
        after the curator's process ended); otherwise the remaining budget would be spent twice.

        Examples
        --------
        >>> import pickle
        >>> from dpcore import BudgetAccountant
        >>> acc = BudgetAccountant(epsilon=1.0)
        >>> acc.spend(0.25)
        >>> restored = pickle.loads(pickle.dumps(acc)).resume()   # e.g. a checkpoint after a restart
        >>> restored.remaining()
        (0.75, 0.0)
        """
        with self._lock:
            self._restored = False
        return self

    def _refuse_if_restored(self, label: str) -> None:
        if self._restored:
            what = f" for {label!r}" if label else ""
            raise RestoredAccountantError(
                f"this BudgetAccountant was restored from a pickle and is a read-only record{what}: "
                "spending from it could spend the remaining budget a second time. Use the original "
                "accountant, create a new one, or call resume() if the original no longer exists")

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
        """``"pld"``, ``"rdp"`` or ``"basic"``."""
        return self._accounting

    @property
    def spent(self) -> Tuple[float, float]:
        """(ε, δ) spent so far, each rounded *up* to a float (the tighter valid guarantee; see Notes)."""
        with self._lock:
            e, d = self._spent_exact()
            return float_up(e), float_up(d)

    @property
    def log(self) -> List[BudgetRecord]:
        """A copy of the list of accepted spends (immutable :class:`BudgetRecord` objects)."""
        with self._lock:
            return list(self._records)

    records = log

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    # ------------------------------------------------------------------ core
    @staticmethod
    def _validate(epsilon, delta) -> Tuple[float, float]:
        return check_epsilon(epsilon, "epsilon"), check_delta(delta, "delta")

    def _composition(self) -> Optional[Fraction]:
        """Exact ε of the dp_accounting composition of the accepted events at D (cached; lock held)."""
        if not self._composed_valid:
            self._composed = (composed_epsilon(self._events, self._delta, self._accounting)
                              if self._events and self._accounting != "basic" else None)
            self._composed_valid = True
        return self._composed

    def _spent_exact(self) -> Tuple[Fraction, Fraction]:
        """The tighter of (Σε, Σδ) and (ε_acc, D) (lock held)."""
        if self._accounting != "basic":
            composed = self._composition()
            if composed is not None and composed < self._eps_spent:
                return composed, self._delta_budget
        return self._eps_spent, self._delta_spent

    def _remaining_exact(self) -> Tuple[Fraction, Fraction]:
        e, d = self._spent_exact()
        return max(self._eps_budget - e, Fraction(0)), max(self._delta_budget - d, Fraction(0))

    def _remaining_floats(self) -> Tuple[float, float]:
        e, d = self._remaining_exact()
        return float_down(e), float_down(d)

    def _fits(self, epsilon: float, delta: float) -> bool:
        return (
            self._eps_spent + Fraction(epsilon) <= self._eps_budget
            and self._delta_spent + Fraction(delta) <= self._delta_budget
        )

    def _fits_composed(self, entry: Tuple[Any, float, float]) -> Tuple[bool, Optional[Fraction]]:
        """Test (b): dp_accounting composition of the accepted events + ``entry`` (lock held)."""
        if self._accounting == "basic":
            return False, None
        composed = composed_epsilon(self._events + [entry], self._delta, self._accounting)
        return composed is not None and composed <= self._eps_budget, composed

    def _event(self, event: Any, epsilon: float, delta: float) -> Any:
        if event is None:
            return EpsilonDeltaDpEvent(epsilon, delta)
        if not isinstance(event, _dpe.DpEvent):
            raise TypeError(f"event must be a dp_accounting DpEvent or None, got {type(event).__name__}")
        if delta == 0.0 and self._accounting != "basic":
            split = split_event(event, self._accounting)
            if split is not None and any(isinstance(leaf, (_dpe.GaussianDpEvent, _dpe.ZCDpEvent))
                                         for leaf, _ in split[0]):
                raise ValueError(f"event {event!r} describes a Gaussian (never pure DP) but delta=0 was declared")
        return event

    def _test(self, epsilon: float, delta: float, event: Any) -> Tuple[bool, bool, Optional[Fraction]]:
        """(accepted, by_basic, composed ε incl. the new spend if computed) (lock held)."""
        if self._fits(epsilon, delta):
            return True, True, None
        ok, composed = self._fits_composed((event, epsilon, delta))
        return ok, False, composed

    def check(self, epsilon: float, delta: float = 0.0, *, event: Any = None, label: str = "") -> None:
        """Raise :class:`BudgetExceededError` if spending (ε, δ) now would exceed the budget.

        Same arguments and test as :meth:`spend`; nothing is recorded.  (A later :meth:`spend` may
        still fail if another thread spends in between; :meth:`spend` is the atomic operation.)

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
        epsilon, delta = self._validate(epsilon, delta)
        event = self._event(event, epsilon, delta)
        with self._lock:
            self._refuse_if_restored(str(label))
            ok, _, _ = self._test(epsilon, delta, event)
            if not ok:
                raise BudgetExceededError((epsilon, delta), self._remaining_floats(), str(label))

    def spend(self, epsilon: float, delta: float = 0.0, *, event: Any = None, label: str = "") -> None:
        """Atomically check and record a spend of (ε, δ) by the mechanism ``event``.

        Parameters
        ----------
        epsilon : float
            ε > 0 (finite): an (ε, δ) guarantee of the mechanism (used by basic composition).
        delta : float, default 0.0
            δ in [0, 1).
        event : dp_accounting.DpEvent, optional
            The mechanism (:mod:`dpcore.accounting.events`), composed by the PLD/RDP accountant; it must be
            at least as private as the declared (ε, δ) says. ``None``: ``EpsilonDeltaDpEvent(ε, δ)``.
        label : str
            Free-text description stored in the ledger.

        Raises
        ------
        BudgetExceededError
            If neither basic composition nor the dp_accounting composition of all accepted spends
            and this one fits (E, D); the ledger is left unchanged.
        ValueError, TypeError
            On invalid ε / δ / event (ledger unchanged).

        Examples
        --------
        >>> from dpcore import BudgetAccountant
        >>> acc = BudgetAccountant(epsilon=1.0, delta=1e-6)
        >>> acc.spend(0.4, label="histogram")
        >>> acc.spend(0.6, 1e-6, label="mean")
        >>> acc.remaining()
        (0.0, 0.0)
        """
        epsilon, delta = self._validate(epsilon, delta)
        event = self._event(event, epsilon, delta)
        label = str(label)
        with self._lock:
            self._refuse_if_restored(label)
            ok, by_basic, composed = self._test(epsilon, delta, event)
            if not ok:
                raise BudgetExceededError((epsilon, delta), self._remaining_floats(), label)
            self._eps_spent += Fraction(epsilon)
            self._delta_spent += Fraction(delta)
            self._events.append((event, epsilon, delta))
            if by_basic:
                self._composed_valid = False
            else:
                self._composed, self._composed_valid = composed, True
            self._records.append(BudgetRecord(epsilon, delta, label, time.time(), event))

    def remaining(self) -> Tuple[float, float]:
        """(ε, δ) still available, each rounded *down* (a pure spend of the remaining ε always fits).

        See the class Notes for the meaning under ``"pld"``/``"rdp"``.

        Examples
        --------
        >>> from dpcore import BudgetAccountant
        >>> acc = BudgetAccountant(epsilon=1.0, delta=1e-6)
        >>> acc.spend(0.25)
        >>> acc.remaining()
        (0.75, 1e-06)
        """
        with self._lock:
            return self._remaining_floats()

    def remaining_per_step(self, k: int, *, delta_prime: Any = None) -> float:
        """Largest float ε_step such that ``k`` pure spends of ε_step are guaranteed to fit.

        ``k · Fraction(ε_step) ≤ ε_remaining`` exactly, with ε_remaining from :meth:`remaining`
        (under ``"pld"``/``"rdp"`` the remaining ε after the tighter composition; pure spends then fit by
        the same test). The δ budget is not split; pass the per-step δ you need to :meth:`spend`.
        Gaussian (or other dp_accounting-described) steps usually fit far more than this split suggests:
        declare them with ``event=`` and let the accountant compose them.

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
                "Gaussian) and let the PLD/RDP accountant compose them."
            )
        with self._lock:
            eps_rem, _ = self._remaining_exact()
            step = float_down(eps_rem / k)
            if step <= 0.0:
                raise BudgetExceededError((0.0, 0.0), self._remaining_floats(), f"{k} steps")
            return step

    def __repr__(self) -> str:
        with self._lock:
            e, d = self._spent_exact()
            eps_spent, delta_spent = float_up(e), float_up(d)
            n = len(self._records)
        return (
            f"BudgetAccountant(epsilon={self._epsilon!r}, delta={self._delta!r}, accounting={self._accounting!r}; "
            f"spent epsilon={eps_spent!r}, delta={delta_spent!r} in {n} spend{'s' if n != 1 else ''})"
        )

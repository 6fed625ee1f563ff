"""Privacy budget accounting.

:class:`BudgetAccountant` keeps a ledger of (ε, δ) spends against a fixed total budget under
**basic (sequential) composition**: a sequence of (ε_i, δ_i)-DP mechanisms run on the same data is
(Σε_i, Σδ_i)-DP (Dwork et al. 2006), whatever the adaptivity between them.

The ledger is kept in exact rational arithmetic (:class:`fractions.Fraction` of the float values
the caller passed), so rounding can never let the recorded total exceed the budget: a spend is
accepted iff the *exact* sum of all accepted spends stays ≤ the *exact* budget.  Floats reported
back to the user are rounded in the safe direction (``remaining`` down, ``spent`` up).

Mechanisms call :meth:`BudgetAccountant.spend` **before** computing anything from the data; an
over-spend raises :class:`BudgetExceededError` and records nothing.  :meth:`BudgetAccountant.check`
performs the same test without spending, so a pipeline can fail early.  All operations are
thread-safe.

Advanced composition is *not* applied automatically: a user who wants it computes the per-step ε
with :func:`dpcore.accounting.calibrate.per_step_epsilon` (or the total with
:func:`dpcore.accounting.calibrate.compose_advanced`) and spends the composed total once.
"""

from __future__ import annotations

import numbers
import threading
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import List, Tuple

from dpcore._internal.exact import float_down, float_up
from dpcore._internal.validation import check_delta, check_epsilon
from dpcore.exceptions import BudgetExceededError, RestoredAccountantError

__all__ = ["BudgetAccountant", "BudgetExceededError", "BudgetRecord"]


@dataclass(frozen=True)
class BudgetRecord:
    """One accepted spend: ``epsilon``, ``delta``, ``label`` and wall-clock ``timestamp`` (``time.time()``).

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


class BudgetAccountant:
    """Thread-safe (ε, δ) budget ledger with basic composition and exact arithmetic.

    Parameters
    ----------
    epsilon : float
        Total ε budget, finite and > 0.
    delta : float, default 0.0
        Total δ budget in [0, 1).  With δ = 0 only pure-DP spends are accepted.

    Examples
    --------
    >>> acc = BudgetAccountant(1.0, 1e-6)
    >>> acc.spend(0.5, label="mean")
    >>> acc.remaining()
    (0.5, 1e-06)
    >>> acc.spend(0.6)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    dpcore.accounting.accountant.BudgetExceededError: privacy budget exceeded

    Notes
    -----
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

    def __init__(self, epsilon: float, delta: float = 0.0) -> None:
        self._epsilon = check_epsilon(epsilon, "epsilon")
        self._delta = check_delta(delta, "delta")
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
    def spent(self) -> Tuple[float, float]:
        """(ε, δ) spent so far, each rounded *up* to a float."""
        with self._lock:
            return float_up(self._eps_spent), float_up(self._delta_spent)

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

    def _remaining_exact(self) -> Tuple[Fraction, Fraction]:
        return self._eps_budget - self._eps_spent, self._delta_budget - self._delta_spent

    def _remaining_floats(self) -> Tuple[float, float]:
        e, d = self._remaining_exact()
        return float_down(e), float_down(d)

    def _fits(self, epsilon: float, delta: float) -> bool:
        return (
            self._eps_spent + Fraction(epsilon) <= self._eps_budget
            and self._delta_spent + Fraction(delta) <= self._delta_budget
        )

    def check(self, epsilon, delta=0.0, *, label: str = "") -> None:
        """Raise :class:`BudgetExceededError` if spending (ε, δ) now would exceed the budget.

        Nothing is recorded.  (A later :meth:`spend` may still fail if another thread spends in
        between; :meth:`spend` is the atomic operation.)

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
        with self._lock:
            self._refuse_if_restored(str(label))
            if not self._fits(epsilon, delta):
                raise BudgetExceededError((epsilon, delta), self._remaining_floats(), str(label))

    def spend(self, epsilon, delta=0.0, *, label: str = "") -> None:
        """Atomically check and record a spend of (ε, δ).

        Parameters
        ----------
        epsilon : float
            ε > 0 (finite).
        delta : float, default 0.0
            δ in [0, 1).
        label : str
            Free-text description stored in the ledger.

        Raises
        ------
        BudgetExceededError
            If the exact total would exceed the ε or δ budget; the ledger is left unchanged.
        ValueError, TypeError
            On invalid ε / δ (ledger unchanged).

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
        label = str(label)
        with self._lock:
            self._refuse_if_restored(label)
            if not self._fits(epsilon, delta):
                raise BudgetExceededError((epsilon, delta), self._remaining_floats(), label)
            self._eps_spent += Fraction(epsilon)
            self._delta_spent += Fraction(delta)
            self._records.append(BudgetRecord(epsilon, delta, label, time.time()))

    def remaining(self) -> Tuple[float, float]:
        """(ε, δ) still available, each rounded *down* to a float (so spending it always fits).

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

    def remaining_per_step(self, k, *, delta_prime=None) -> float:
        """Largest float ε_step such that ``k`` spends of ε_step are guaranteed to fit.

        Uses basic composition, exactly: ``k · Fraction(ε_step) ≤ ε_remaining``.  (The δ budget is
        not split; pass the per-step δ you need to :meth:`spend` yourself.)

        Parameters
        ----------
        k : int
            Number of planned spends (≥ 1).
        delta_prime : None
            Not supported — this ledger composes sequentially.  For advanced composition compute
            the per-step ε with :func:`dpcore.accounting.calibrate.per_step_epsilon` (or the composed total
            with :func:`dpcore.accounting.calibrate.compose_advanced`) and spend the composed total
            ``(ε, kδ0 + δ')`` once; a ValueError explains this if ``delta_prime`` is given.

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
                "delta_prime is not supported by BudgetAccountant.remaining_per_step: the ledger uses "
                "basic composition. For advanced composition use "
                "dpcore.accounting.calibrate.per_step_epsilon(epsilon, k, delta_prime) and spend the composed "
                "total (epsilon, k*delta0 + delta_prime) once."
            )
        with self._lock:
            eps_rem, _ = self._remaining_exact()
            step = float_down(eps_rem / k)
            if step <= 0.0:
                raise BudgetExceededError((0.0, 0.0), self._remaining_floats(), f"{k} steps")
            return step

    def __repr__(self) -> str:
        with self._lock:
            eps_spent, delta_spent = float_up(self._eps_spent), float_up(self._delta_spent)
            n = len(self._records)
        return (
            f"BudgetAccountant(epsilon={self._epsilon!r}, delta={self._delta!r}; "
            f"spent epsilon={eps_spent!r}, delta={delta_spent!r} in {n} spend{'s' if n != 1 else ''})"
        )

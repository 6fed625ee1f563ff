"""Every exception and warning class of dpcore, in one hierarchy.

::

    DpcoreError(Exception)
    ├── BudgetError                          a privacy budget or a calibrated limit refuses the request
    │   ├── BudgetExceededError  (RuntimeError)  the accountant's (ε, δ) ledger would be over-spent
    │   ├── PINPBudgetExhausted  (RuntimeError)  a PINP session used up its B updates / T queries
    │   ├── FTRLHorizonExceeded  (RuntimeError)  more PrivateFTRL rounds than the public horizon
    │   └── ProtocolBudgetError  (ValueError)    a local-DP user would send more than its (ε, δ)
    ├── ConvergenceError         (RuntimeError)  a certified solver did not reach its tolerance
    │   └── SimplexCertificationError            SimplexERM could not certify τ ≤ tol
    ├── TDILCostError            (ValueError)    a TDIL run would exceed the configured cost limit
    ├── StateRollbackError       (ValueError)    stored service state is older / changed: refuse
    └── NotFittedError           (scikit-learn's NotFittedError: ValueError, AttributeError)

    DpcoreWarning(UserWarning)
    ├── ConvergenceWarning       (scikit-learn's ConvergenceWarning)
    └── RecoveryRadiusWarning    a local-DP mean estimate is identically zero

Every refusal is decided from public quantities (declared bounds, calibrated limits, public
iteration bounds) and happens before anything is charged or released, unless its docstring says
otherwise. Catch :class:`DpcoreError` for all of dpcore's errors, :class:`BudgetError` for every
budget refusal.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np
from sklearn.exceptions import ConvergenceWarning as _SklearnConvergenceWarning
from sklearn.exceptions import NotFittedError as _SklearnNotFittedError

__all__ = [
    "DpcoreError", "BudgetError", "BudgetExceededError", "RestoredAccountantError", "PINPBudgetExhausted", "FTRLHorizonExceeded",
    "ProtocolBudgetError", "ConvergenceError", "SimplexCertificationError", "TDILCostError",
    "StateRollbackError", "NotFittedError", "DpcoreWarning", "ConvergenceWarning", "RecoveryRadiusWarning",
]


class DpcoreError(Exception):
    """Base class of every exception raised by dpcore on purpose."""


class BudgetError(DpcoreError):
    """Base class of every refusal because a privacy budget or a calibrated limit is used up."""


class BudgetExceededError(BudgetError, RuntimeError):
    """A spend would exceed the remaining privacy budget (nothing was recorded).

    Attributes
    ----------
    requested : tuple of float
        The (ε, δ) that was requested.
    remaining : tuple of float
        The (ε, δ) left in the budget at the time of the request (rounded down).
    label : str
        The label of the rejected spend.
    """

    def __init__(self, requested: Tuple[float, float], remaining: Tuple[float, float], label: str = ""):
        self.requested = requested
        self.remaining = remaining
        self.label = label
        what = f" for {label!r}" if label else ""
        super().__init__(
            f"privacy budget exceeded{what}: requested epsilon={requested[0]!r}, "
            f"delta={requested[1]!r}, but only epsilon={remaining[0]!r}, "
            f"delta={remaining[1]!r} remain"
        )


class RestoredAccountantError(BudgetError, RuntimeError):
    """A spend or check on a :class:`~dpcore.BudgetAccountant` restored from a pickle.

    An unpickled accountant is a read-only copy of the ledger: spending from it would spend the
    remaining budget a second time while the original is still in use. Call
    :meth:`~dpcore.BudgetAccountant.resume` on it only where the original no longer exists (e.g. a
    curator's checkpoint after a restart).
    """


class PINPBudgetExhausted(BudgetError, RuntimeError):
    """A PINP session refused (part of) a batch: ``B`` updates or ``T`` queries are used up.

    Nothing was over-spent: the session stopped exactly at its calibrated limit.

    Attributes
    ----------
    reason : {"updates", "queries"}
        Which limit was reached.
    answers : numpy.ndarray
        The answers produced for the leading queries of the batch before the limit was reached
        (already committed to the state file, if any). The remaining queries were not answered.
    n_answered : int
        ``len(answers)``.
    """

    def __init__(self, reason: str, answers: np.ndarray, message: str):
        super().__init__(message)
        self.reason = reason
        self.answers = answers
        self.n_answered = int(answers.shape[0])


class FTRLHorizonExceeded(BudgetError, RuntimeError):
    """More rounds were requested than the public ``horizon`` the guarantee was calibrated for.

    Attributes: ``horizon``, ``rounds_done``, ``rounds_requested``. Nothing of the offending batch
    was processed.
    """

    def __init__(self, horizon: int, rounds_done: int, rounds_requested: int):
        self.horizon = horizon
        self.rounds_done = rounds_done
        self.rounds_requested = rounds_requested
        super().__init__(
            f"FTRLHorizonExceeded: the privacy guarantee covers horizon={horizon} rounds; {rounds_done} are done "
            f"and {rounds_requested} more were requested. Nothing of this request was processed; start a new "
            "PrivateFTRL (with its own budget) for further rounds."
        )


class ProtocolBudgetError(BudgetError, ValueError):
    """A local-DP protocol's user would send more than its declared (ε, δ) allows."""


class ConvergenceError(DpcoreError, RuntimeError):
    """The certified solver did not reach its tolerance ``tol`` within ``max_iter`` iterations.

    dpcore's private GLMs refuse to release anything in that case: the privacy proof needs a
    certified bound on the distance to the exact minimiser.
    """


class SimplexCertificationError(ConvergenceError):
    """The solver could not certify ``τ ≤ tol`` (nothing was charged or released).

    Raised by :meth:`dpcore.SimplexERM.fit` (and ``EntropicSimplexProblem.solve`` with
    ``require=True``) when ``max_iter`` is reached or the certificate hits the floating-point floor
    before the certified log-probability error ``τ`` of the released distribution is below
    ``tol``. Increase ``max_iter`` or ``tol`` (``tol`` costs ``2·tol`` of every draw's ε).
    """


class TDILCostError(DpcoreError, ValueError):
    """The TDIL run would score more candidates / kernel evaluations than the configured limit."""


class StateRollbackError(DpcoreError, ValueError):
    """The stored state is older than (or was changed behind) this session: refusing to continue."""


class NotFittedError(DpcoreError, _SklearnNotFittedError):
    """The estimator is used before :meth:`fit` (also scikit-learn's ``NotFittedError``)."""


class DpcoreWarning(UserWarning):
    """Base class of dpcore's warnings."""


class ConvergenceWarning(DpcoreWarning, _SklearnConvergenceWarning):
    """The solver stopped at ``max_iter`` before its certified duality gap reached ``tol``."""


class RecoveryRadiusWarning(DpcoreWarning):
    """The recovery radius τ of Algorithm 2 is at least ``||u||_1``: the estimate is identically zero.

    Emitted by :meth:`dpcore.ldp.LDPMeanEstimator.fit` (see :mod:`dpcore.ldp.mean`, "Zero estimates")."""

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
    ├── StateAuthenticationError (ValueError)    a state or release file fails its key / is invalid
    ├── StateAliasError          (ValueError)    a state file with several names (hard links) or replaced
    ├── StateInUseError          (RuntimeError)  another live session holds the state's lock
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
    "StateRollbackError", "StateAuthenticationError", "StateAliasError", "StateInUseError", "NotFittedError", "DpcoreWarning", "ConvergenceWarning", "RecoveryRadiusWarning",
]


class DpcoreError(Exception):
    """Base class of every exception raised by dpcore on purpose.

    Examples
    --------
    Every exception dpcore raises on purpose derives from it, so one ``except`` clause catches
    them all:

    >>> from dpcore import BudgetAccountant, DpcoreError
    >>> acc = BudgetAccountant(epsilon=1.0)
    >>> try:
    ...     acc.spend(2.0)
    ... except DpcoreError as exc:
    ...     print(type(exc).__name__)
    BudgetExceededError
    """


class BudgetError(DpcoreError):
    """Base class of every refusal because a privacy budget or a calibrated limit is used up.

    Examples
    --------
    >>> from dpcore.exceptions import BudgetError, BudgetExceededError, PINPBudgetExhausted
    >>> issubclass(BudgetExceededError, BudgetError), issubclass(PINPBudgetExhausted, BudgetError)
    (True, True)
    """


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

    Examples
    --------
    >>> from dpcore import BudgetAccountant, BudgetExceededError
    >>> acc = BudgetAccountant(epsilon=1.0, delta=1e-6)
    >>> acc.spend(0.75, label="mean")
    >>> try:
    ...     acc.spend(0.5, label="histogram")
    ... except BudgetExceededError as exc:
    ...     print(exc.requested, exc.remaining, exc.label)
    (0.5, 0.0) (0.25, 1e-06) histogram
    >>> acc.remaining()  # the refused spend recorded nothing
    (0.25, 1e-06)
    """

    def __init__(self, requested: Tuple[float, float], remaining: Tuple[float, float], label: str = "",
                 hint: str = "") -> None:
        self.requested = requested
        self.remaining = remaining
        self.label = label
        what = f" for {label!r}" if label else ""
        super().__init__(
            f"privacy budget exceeded{what}: requested epsilon={requested[0]!r}, "
            f"delta={requested[1]!r}, but only epsilon={remaining[0]!r}, "
            f"delta={remaining[1]!r} remain" + hint
        )


class RestoredAccountantError(BudgetError, RuntimeError):
    """A spend or check on a :class:`~dpcore.BudgetAccountant` restored from a pickle.

    An unpickled in-memory accountant is a read-only copy of the ledger: spending from it would spend
    the remaining budget a second time while the original is still in use, and
    :meth:`~dpcore.BudgetAccountant.resume` refuses too. An accountant with ``ledger=`` (an SQLite file)
    unpickles to another handle on the same ledger instead, which is how a budget continues after a restart.

    Examples
    --------
    >>> import pickle
    >>> from dpcore import BudgetAccountant, RestoredAccountantError
    >>> copy = pickle.loads(pickle.dumps(BudgetAccountant(epsilon=1.0)))
    >>> try:
    ...     copy.spend(0.1)
    ... except RestoredAccountantError:
    ...     print("refused: the original ledger may still be in use")
    refused: the original ledger may still be in use
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

    Examples
    --------
    A session calibrated for two queries answers two, then refuses:

    >>> import numpy as np
    >>> from dpcore import KernelSVM, PINP, PINPBudgetExhausted
    >>> X = np.array([[0.6, 0.0], [0.0, 0.6], [-0.6, 0.0], [0.0, -0.6]])
    >>> svm = KernelSVM(lam=1.0, kernel="rbf", gamma=1.0).fit(X, [1, 1, -1, -1])
    >>> session = PINP(svm, epsilon=1.0, delta=1e-6, data_norm=1.0, n_queries=2, norm_bound=100.0,
    ...                random_state=0)
    >>> try:
    ...     session.predict(X[:3])
    ... except PINPBudgetExhausted as exc:
    ...     print(exc.reason, exc.n_answered)
    queries 2
    """

    def __init__(self, reason: str, answers: np.ndarray, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.answers = answers
        self.n_answered = int(answers.shape[0])


class FTRLHorizonExceeded(BudgetError, RuntimeError):
    """More rounds were requested than the public ``horizon`` the guarantee was calibrated for.

    Attributes: ``horizon``, ``rounds_done``, ``rounds_requested``. Nothing of the offending batch
    was processed.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import FTRLHorizonExceeded, PrivateFTRL
    >>> ftrl = PrivateFTRL(horizon=2, epsilon=1.0, data_norm_inf=1.0, n_features=3, random_state=0)
    >>> costs = np.full((3, 3), 0.5)
    >>> try:
    ...     ftrl.partial_fit(costs)
    ... except FTRLHorizonExceeded as exc:
    ...     print(exc.horizon, exc.rounds_done, exc.rounds_requested)
    2 0 3
    """

    def __init__(self, horizon: int, rounds_done: int, rounds_requested: int) -> None:
        self.horizon = horizon
        self.rounds_done = rounds_done
        self.rounds_requested = rounds_requested
        super().__init__(
            f"FTRLHorizonExceeded: the privacy guarantee covers horizon={horizon} rounds; {rounds_done} are done "
            f"and {rounds_requested} more were requested. Nothing of this request was processed; start a new "
            "PrivateFTRL (with its own budget) for further rounds."
        )


class ProtocolBudgetError(BudgetError, ValueError):
    """A local-DP protocol's user would send more than its declared (ε, δ) allows.

    Examples
    --------
    Raised when a local-DP protocol's composed per-user budget would exceed its declared (ε, δ);
    it is both a :class:`BudgetError` and a ``ValueError``:

    >>> from dpcore.exceptions import BudgetError, ProtocolBudgetError
    >>> issubclass(ProtocolBudgetError, BudgetError), issubclass(ProtocolBudgetError, ValueError)
    (True, True)
    """


class ConvergenceError(DpcoreError, RuntimeError):
    """The certified solver did not reach its tolerance ``tol`` within ``max_iter`` iterations.

    dpcore's private GLMs refuse to release anything in that case: the privacy proof needs a
    certified bound on the distance to the exact minimiser.

    Examples
    --------
    >>> from dpcore.exceptions import ConvergenceError, SimplexCertificationError
    >>> issubclass(SimplexCertificationError, ConvergenceError), issubclass(ConvergenceError, RuntimeError)
    (True, True)
    """


class SimplexCertificationError(ConvergenceError):
    """The solver could not certify ``τ ≤ tol`` (nothing was charged or released).

    Raised by :meth:`dpcore.SimplexERM.fit` (and ``EntropicSimplexProblem.solve`` with
    ``require=True``) when ``max_iter`` is reached or the certificate hits the floating-point floor
    before the certified log-probability error ``τ`` of the released distribution is below
    ``tol``. Increase ``max_iter`` or ``tol`` (``tol`` costs ``2·tol`` of every draw's ε).

    Examples
    --------
    It is a :class:`ConvergenceError`, so code that handles solver failures in general catches it:

    >>> from dpcore.exceptions import ConvergenceError, SimplexCertificationError
    >>> issubclass(SimplexCertificationError, ConvergenceError)
    True
    """


class TDILCostError(DpcoreError, ValueError):
    """The TDIL run would score more candidates / kernel evaluations than the configured limit.

    Examples
    --------
    :meth:`dpcore.TDIL.plan` counts the work without drawing any randomness; a run above the
    configured limit is refused:

    >>> import numpy as np
    >>> from dpcore import KernelSVM, TDIL
    >>> from dpcore.exceptions import TDILCostError
    >>> X = np.random.default_rng(0).uniform(-0.7, 0.7, size=(2000, 2))
    >>> svm = KernelSVM(lam=0.1, kernel="linear").fit(X, np.sign(X[:, 0]))
    >>> try:
    ...     TDIL(svm, epsilon=1.0, delta=1e-6, max_candidates=10).plan()
    ... except TDILCostError:
    ...     print("refused before any work")
    refused before any work
    """


class StateRollbackError(DpcoreError, ValueError):
    """The stored state is older than (or was changed behind) this session: refusing to continue.

    Examples
    --------
    Raised by the ``load`` of a durable service (:meth:`dpcore.PINP.load`,
    :meth:`dpcore.GPService.load`) when the stored state is older than the sequence number the
    caller recorded (``min_seq``) or was changed behind the session's back:

    >>> from dpcore.exceptions import DpcoreError, StateRollbackError
    >>> issubclass(StateRollbackError, DpcoreError), issubclass(StateRollbackError, ValueError)
    (True, True)
    """


class StateAuthenticationError(DpcoreError, ValueError):
    """A state or release file is forged, edited, truncated, sealed under another key, or holds invalid fields.

    Examples
    --------
    Raised by ``load`` of :class:`dpcore.PINP`, :class:`dpcore.GPService` and
    :class:`dpcore.KernelRelease` before anything of the file is used:

    >>> from dpcore.exceptions import StateAuthenticationError
    >>> issubclass(StateAuthenticationError, ValueError)
    True
    """


class StateAliasError(DpcoreError, ValueError):
    """A state file has more than one name (hard link), or its path no longer names the session's file.

    Two names of one state would let two sessions answer from it independently; the state is refused
    (at load) or the session stops committing (while live).

    Examples
    --------
    >>> from dpcore.exceptions import StateAliasError, DpcoreError
    >>> issubclass(StateAliasError, DpcoreError)
    True
    """


class StateInUseError(DpcoreError, RuntimeError):
    """Another live session (this process or another) holds the lock of the state file.

    The lock is an exclusive ``flock`` on the state file itself, held for the whole session, so
    every path spelling of the file (symbolic links, ``..``) meets the same lock.

    Examples
    --------
    >>> from dpcore.exceptions import StateInUseError
    >>> issubclass(StateInUseError, RuntimeError)
    True
    """


class NotFittedError(DpcoreError, _SklearnNotFittedError):
    """The estimator is used before :meth:`fit` (also scikit-learn's ``NotFittedError``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.exceptions import NotFittedError as SklearnNotFittedError
    >>> from dpcore import KernelSVM
    >>> from dpcore.exceptions import NotFittedError
    >>> try:
    ...     KernelSVM().predict(np.zeros((1, 2)))
    ... except NotFittedError as exc:
    ...     print(isinstance(exc, SklearnNotFittedError))
    True
    """


class DpcoreWarning(UserWarning):
    """Base class of dpcore's warnings.

    Examples
    --------
    Silence (or escalate) every dpcore warning at once:

    >>> import warnings
    >>> from dpcore.exceptions import ConvergenceWarning, DpcoreWarning
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", DpcoreWarning)
    ...     try:
    ...         warnings.warn("gap above tol", ConvergenceWarning)
    ...     except DpcoreWarning as w:
    ...         print(type(w).__name__)
    ConvergenceWarning
    """


class ConvergenceWarning(DpcoreWarning, _SklearnConvergenceWarning):
    """The solver stopped at ``max_iter`` before its certified duality gap reached ``tol``.

    Examples
    --------
    It is also scikit-learn's ``ConvergenceWarning``, so filters written for scikit-learn apply:

    >>> from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning
    >>> from dpcore.exceptions import ConvergenceWarning
    >>> issubclass(ConvergenceWarning, SklearnConvergenceWarning)
    True
    """


class RecoveryRadiusWarning(DpcoreWarning):
    """The recovery radius τ of Algorithm 2 is at least ``||u||_1``: the estimate is identically zero.

    Emitted by :meth:`dpcore.ldp.LDPMeanEstimator.fit` (see :mod:`dpcore.ldp.mean`, "Zero estimates").

    Examples
    --------
    >>> import warnings
    >>> from dpcore.exceptions import RecoveryRadiusWarning
    >>> warnings.filterwarnings("ignore", category=RecoveryRadiusWarning)  # e.g. in a batch job
    """

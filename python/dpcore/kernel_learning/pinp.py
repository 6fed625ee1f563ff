"""PINP — private interactive predictions from a kernel ERM model (Jain & Thakurta 2013, Alg. 1).

See :class:`PINP` for the mechanism, its calibration, proof sketch and honest utility notes.
"""

from __future__ import annotations

import logging
import math
import numbers
import threading
from dataclasses import asdict, dataclass
from typing import Any, Dict, Literal, Optional, Tuple, Union, overload, TYPE_CHECKING

import numpy as np

from dpcore import _core
from dpcore.kernels.evaluation import kernel_args
from dpcore.kernels.evaluation import kernel_matrix, kernel_predict
from dpcore.mechanisms.noise import laplace_plan
from dpcore.accounting.events import epsilon_delta_event
from dpcore._internal.validation import (check_array, check_delta, check_epsilon, check_int, check_positive,
                                         check_probability)
from dpcore.kernel_learning._model import (  # noqa: F401  (re-exported names used by tests)
    RADIUS_TOL as _RADIUS_TOL, SLACK as _SLACK, b64, fingerprint_material,
    model_info, seed_from, unb64, check_in_domain, public_error_bound,
)

from dpcore._internal.dask import refuse_dask
from dpcore._internal.sealing import KEYFILE, StateKeyLike
from dpcore._internal.state import DurableSession, StateRollbackError, check_params_doc  # noqa: F401
from dpcore.exceptions import PINPBudgetExhausted, StateAuthenticationError
from dpcore._internal.progress import check_verbose, progress_bar
from dpcore._internal.types import ArrayLike, KernelModel, RandomState, StateBackend, StrPath

if TYPE_CHECKING:
    from dpcore.accounting import BudgetAccountant

logger = logging.getLogger(__name__)

__all__ = ["PINP", "PINPBudgetExhausted", "PINPCalibration", "pinp_calibration", "StateRollbackError"]

#: Largest accepted ``n_queries`` (2⁵³: every count up to it is an exact float64; the Rust session counts in u64).
#: Larger values are a ``ValueError`` naming ``n_queries``, never an ``OverflowError`` of a later conversion.
MAX_N_QUERIES = 2**53

#: Why queries cannot be a Dask collection: answers draw fresh noise in query order from one generator (a blockwise
#: map would need a random stream per block, and a recomputed block must not draw again);
#: each answer also consumes the session's query and update budget in order.
_NO_DASK = "PINP answers draw fresh noise, in query order, from the session's one generator"

#: Version 2 adds the sequence number ``seq`` (rollback detection); version-1 files are refused.
_STATE_FORMAT = "dpcore.pinp.state/3"
#: The parameters a state stores (``load`` refuses any other set).
_PARAM_KEYS = ("epsilon", "delta", "beta", "n_queries", "data_norm", "norm_bound", "clip")
#: Queries per Rust call with ``verbose``: a multiple of the session's own chunk (256, src/kernel_learning/pinp.rs).
_PROGRESS_CHUNK = 4096


@dataclass(frozen=True)
class PINPCalibration:
    """Every number of a PINP calibration (see :class:`PINP` for the formulas).

    ``B`` is the integer update budget; ``epsilon_round`` = ε/(200 √B log(4/δ)) is the ε of the
    per-round Laplace mechanism of Theorem 9 and ``epsilon0 = 1/noise_scale``; ``sensitivity`` is
    the sensitivity the noise is calibrated for (S + 2 R_φ·err + grid slack);
    ``scale_num/scale_den`` the exact discrete Laplace scale in grid units.

    Examples
    --------
    The calibration of a session is public (it uses no data beyond ``n`` and the declared bounds):

    >>> import numpy as np
    >>> from dpcore import KernelSVM, PINP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.7, 0.7, size=(200, 2)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> svm = KernelSVM(lam=0.1, kernel="rbf", gamma=1.0, tol=1e-8).fit(X, y)
    >>> cal = PINP(svm, 1.0, 1e-6, data_norm=1.0, n_queries=10, norm_bound=100.0, random_state=0).privacy_
    >>> cal.n, cal.n_queries, cal.B >= 1
    (200, 10, True)
    """

    n: int
    lam: float
    lipschitz: float
    r_phi: float
    r_phi_sq: float
    w_error_bound: float
    sensitivity_exact: float
    sensitivity_certified: float
    sensitivity: float
    norm_bound: float
    B_raw: float
    B: int
    epsilon: float
    delta: float
    beta: float
    n_queries: int
    epsilon_round: float
    epsilon_round_used: float
    grid_exponent: int
    granularity: float
    integer_sensitivity: int
    scale_num: int
    scale_den: int
    noise_scale: float
    epsilon0: float
    epsilon0_printed: float
    sigma: float
    eta: float
    error_bound: float
    theorem3_rate: float


def pinp_calibration(
    *,
    n: int,
    lam: float,
    lipschitz: float,
    r_phi_sq: float,
    w_error_bound: float,
    epsilon: float,
    delta: float,
    beta: float,
    n_queries: int,
    norm_bound: Optional[float] = None,
    sensitivity_factor: float = 1.0,
) -> PINPCalibration:
    """Calibrate PINP (see :class:`PINP`). Pure function of public quantities.

    ``sensitivity_factor`` exists only so that tests can build deliberately broken copies
    (e.g. ``0.5`` = the printed formula's sensitivity); it must be 1 in any real use.

    Raises
    ------
    ValueError
        Invalid parameters, or ``B < 1`` (the privacy/accuracy scale cannot support even one update).
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"n (the model's n_samples_fit_) must be a positive integer, got {n!r}")
    n, T = int(n), check_int(n_queries, "n_queries", maximum=MAX_N_QUERIES)
    lam = check_positive(lam, "lam")
    L = check_positive(lipschitz, "lipschitz")
    r2 = check_positive(r_phi_sq, "r_phi_sq")
    w_err = float(w_error_bound)
    if not (math.isfinite(w_err) and w_err >= 0.0):
        raise ValueError(f"w_error_bound must be finite and >= 0, got {w_error_bound!r}")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    beta = check_probability(beta, "beta")
    R = math.sqrt(r2)
    C = 2.0 * L * R / lam if norm_bound is None else check_positive(norm_bound, "norm_bound")

    log_t = math.log(2.0 * T / beta)
    log_d = math.log(4.0 / delta)
    B_raw = n * lam * epsilon * C * C / (200.0 * L * R * math.sqrt(2.0 * log_t) * log_d)
    if not B_raw >= 1.0:
        raise ValueError(
            f"PINP cannot be calibrated: the update budget B = n*lam*eps*C^2 / (200 L R_phi "
            f"sqrt(2 log(2T/beta)) log(4/delta)) = {B_raw:.4g} < 1 (n={n}, lam={lam:g}, "
            f"epsilon={epsilon:g}, C={C:g}, R_phi={R:g}, T={T}, beta={beta:g}, delta={delta:g}). "
            "With the paper's constants the mechanism needs n*lam*epsilon large compared with "
            "200*R_phi*log(4/delta)*sqrt(2 log(2T/beta))/C^2: use more data, a larger lambda "
            "or epsilon, fewer queries, or a larger (public) norm_bound."
        )
    B = int(math.floor(B_raw))
    S = 2.0 * L * r2 / (lam * n) * (1.0 + _SLACK)
    S_cert = (S + 2.0 * R * w_err) * (1.0 + _SLACK)
    eps_round = epsilon / (200.0 * math.sqrt(B) * log_d) * (1.0 - _SLACK)
    plan = laplace_plan(S_cert * sensitivity_factor, eps_round, dim=1)
    g = plan.granularity
    sens = plan.integer_sensitivity * g  # <= S_cert + g
    noise_scale = plan.scale
    eps0 = 1.0 / noise_scale
    sigma = 4.0 * noise_scale * log_t * (1.0 + _SLACK)
    eta = sigma / (4.0 * r2)
    eps0_printed = n * epsilon * lam / (200.0 * L * r2 * math.sqrt(B) * log_d)
    error_bound = sigma + noise_scale * log_t + g / 2.0 + R * w_err
    rate = C * r2 * math.sqrt(L * math.log(T / beta)) * math.log(1.0 / delta) ** 2 / math.sqrt(n * epsilon * lam)
    return PINPCalibration(
        n=n, lam=lam, lipschitz=L, r_phi=R, r_phi_sq=r2, w_error_bound=w_err,
        sensitivity_exact=S, sensitivity_certified=S_cert, sensitivity=sens, norm_bound=C,
        B_raw=B_raw, B=B, epsilon=epsilon, delta=delta, beta=beta, n_queries=T,
        epsilon_round=eps_round, epsilon_round_used=plan.epsilon_used,
        grid_exponent=plan.grid_exponent, granularity=g, integer_sensitivity=plan.integer_sensitivity,
        scale_num=plan.scale_num, scale_den=plan.scale_den, noise_scale=noise_scale,
        epsilon0=eps0, epsilon0_printed=eps0_printed, sigma=sigma, eta=eta,
        error_bound=error_bound, theorem3_rate=rate,
    )


class PINP(DurableSession):
    r"""Private interactive non-linear predictions (Jain & Thakurta 2013, Algorithm 1).

    A trusted learner holds a kernel ERM solution ``w* = Σ_i μ_i φ(x_i)`` and answers a stream of
    prediction queries ``z_1, z_2, ...`` with (ε, δ)-differential privacy for the training set.
    ``predict(Z)`` answers the rows of ``Z`` in order, exactly as Algorithm 1::

        â_t = <w*, φ(z_t)> + ζ_t,       ζ_t = exact discrete Laplace of scale 1/ε0 (grid 2^k)
        d̂_t = â_t − Σ_{τ<t} α_τ K(z_t, z_τ)
        |d̂_t| > σ:  α_t = η·sign(d̂_t), counter += 1, answer â_t
        otherwise:   α_t = 0,                          answer Σ_{τ<t} α_τ K(z_t, z_τ)

    The session answers at most ``T = n_queries`` queries and makes at most ``B`` updates; after
    the ``B``-th update every further query is refused (:class:`PINPBudgetExhausted`).

    **Calibration (all logs natural).**
    ``R_φ² = max_{||z||≤r} K(z, z)`` for the declared ``data_norm`` r; the model's λ, L, n.

    * Sensitivity (supplement eq. 3): ``S = 2 L R_φ² / (λ n)``. The solver is inexact, so its
      certificate ``||w − w*|| ≤ err`` is added: ``S_cert = S + 2 R_φ·err`` with the public
      ``err = sqrt(2 tol/λ)`` from the model's declared tolerance (checked against its
      certificate ``model.w_error_bound_``, which itself depends on the data and is never used
      in the calibration; a model without certificate is refused).
    * ``C = norm_bound`` (default ``2 L R_φ / λ``, which bounds ``||w*||`` by optimality);
      ``B = ⌊n λ ε C² / (200 L R_φ sqrt(2 log(2T/β)) log(4/δ))⌋``, refused if ``B < 1``.
    * Theorem 9 (GRU 2011 Thm 4.1): ``ε0 = ε / (200 √B S_eff log(4/δ))``. Implemented as a
      Laplace release of the snapped prediction with per-round budget
      ``ε_round = ε/(200 √B log(4/δ))`` (rounded down to 30 bits) and the snapped integer
      sensitivity ``⌊S_cert/g⌋ + 1`` grid units, i.e. ``S_eff = sensitivity_ ≤ S_cert + g``
      (``dpcore.mechanisms.noise.laplace_plan``); ``noise_scale_ = 1/epsilon0_``.
    * ``σ = (4/ε0) log(2T/β)``, ``η = σ / (4 R_φ²)``.

    **Proof sketch.**
    (1) For datasets differing in one record, λ-strong convexity and L-Lipschitzness give
    ``||w*_G − w*_G'|| ≤ 2 L R_φ/(λ n)`` (supplement eq. 3), hence
    ``|<w*_G − w*_G', φ(z)>| ≤ S`` for every z in the domain — this needs every training point and
    every query inside ``||x|| ≤ r`` (enforced: out-of-domain training points are refused, queries
    refused or, with ``clip=True``, projected onto the ball). The released model ``w`` satisfies
    ``||w − w*|| ≤ err``, so its predictions have sensitivity ≤ ``S_cert``. (2) Snapping
    ``round(f/g)`` changes the sensitivity to at most ``⌊S_cert/g⌋ + 1`` grid units, and the
    exact discrete Laplace with scale ``(⌊S_cert/g⌋+1)/ε_round`` makes each noisy answer an
    ``ε_round``-DP release of that integer, i.e. the continuous-Laplace calibration
    ``Lap(S_eff/ε_round) = Lap(1/ε0)`` of Theorem 9 with sensitivity ``S_eff``, with no
    floating-point sampling (Mironov 2012). (3) Theorem 9 (GRU Thm 4.1, the sparse-vector /
    IDC analysis: only update rounds pay, at most B of them, and the answers and decisions of
    every round are functions of ``â_t`` and public data) gives (ε, δ)-DP for the whole
    interaction of at most T queries and B updates; the session enforces both limits, persists
    its counters before returning answers, and the accountant (if any) is charged (ε, δ) once at
    construction, before any answer.

    **Discrepancy with the paper.** Algorithm 1 as printed (and SPEC) sets
    ``ε0 = n ε λ / (200 L R_φ² √B log(4/δ))``, which is Theorem 9 with ``S = L R_φ²/(λ n)`` — half
    the sensitivity of eq. (3). We follow Theorem 9 with the true ``S_eff``: the noise is (at
    least) twice that of the printed formula. Both values are exposed: ``epsilon0_`` (used) and
    ``epsilon0_printed_`` (reference only).

    **C is a utility parameter.** In the GRU analysis privacy depends only on ε0 (through S, B,
    ε, δ) and on the enforced limits B and T; ``||w*|| ≤ C`` is used only in the utility
    proof (the potential argument bounding the number of updates by B). A ``norm_bound`` below
    ``||w*||`` is the user's declaration: privacy holds, but the session may run out of updates
    early (a warning is issued when the model exposes ``w_norm_``). C must be public — never set
    it from the data (``B`` and hence the noise depend on it).

    **Error bound (``error_bound_``).**
    With probability ≥ 1 − β, simultaneously for every answered query,
    ``|ŷ_t − <w*, φ(z_t)>| ≤ σ + log(2T/β)/ε0 + g/2 + R_φ·err``. Derivation: ``ζ_t = g(Y_t) +``
    snapping error, ``|snap error| ≤ g/2``, and for discrete Laplace of scale τ,
    ``P(|Y| ≥ k) = 2p^k/(1+p) ≤ 2 p^k`` (``p = e^{−1/τ}``); with ``k = ⌈τ log(2T/β)⌉`` this is
    ``≤ β/T``, so by a union bound over ≤ T rounds ``|ζ_t| ≤ log(2T/β)/ε0 + g/2`` for all t.
    Update rounds answer ``â_t`` (error ``|ζ_t|``); non-update rounds answer ``â_t − d̂_t`` with
    ``|d̂_t| ≤ σ`` (error ``≤ σ + |ζ_t|``); ``R_φ·err`` converts from the model's ``w`` to the exact
    ``w*``. The paper's Theorem 3 is only ``O(C R_φ² sqrt(L log(T/β)) log²(1/δ) / sqrt(n ε λ))``;
    that expression without constant is ``theorem3_rate_``.

    **Utility, honestly.**
    The constants (200, √B, log(4/δ)·log(2T/β)) are loose. For Adult-like settings
    (n = 30,000, λn = 1000, R_φ² = 8, L = 1, ε = 1, δ = 1e-6, β = 0.05, T = 1000) the calibration
    gives B = 727, ε0 ≈ 7.6e-4 (noise scale ≈ 1312) and σ ≈ 5.6e4, while the predictions
    themselves are O(1): updates essentially never happen and each answer is either 0 or pure
    noise. Meaningful answers need ``n ε`` in the millions. The mechanism is implemented exactly,
    not tuned; see the utility notes in the project docs.

    Parameters
    ----------
    model : fitted kernel ERM
        Any object with ``mu_``, ``X_fit_``, ``n_samples_fit_`` (training-set size n), ``lam``,
        ``lipschitz_``, ``w_error_bound_`` (certificate ``||w − w*||``), ``kernel_params_``
        (dict kernel/gamma/degree/coef0) and optionally ``w_norm_``, e.g.
        ``dpcore.KernelSVM`` / ``dpcore.KernelLogisticRegression``.
    epsilon, delta : float
        Privacy budget of the whole session (ε > 0, δ ∈ (0, 1)).
    beta : float
        Failure probability of the error bound, in (0, 1).
    n_queries : int
        T, the maximal number of queries the session answers (part of the calibration); at most
        :data:`MAX_N_QUERIES` (2⁵³).
    data_norm : float
        Public bound r on the norm of every training point and query.
    norm_bound : float, optional
        Public C ≥ ||w*|| (default ``2 L R_φ/λ``).
    clip : bool, default False
        Project out-of-domain queries onto the ball instead of raising ``ValueError``
        (training points are never clipped).
    state_path : str or path, optional
        Where the session state (calibration, keyed model fingerprint, update points, α's, counters,
        sequence number) is committed durably before answers are returned; resume with
        :meth:`load`. Refused if a state is stored there. An exclusive lock on the state file itself,
        held for the session, keeps two live sessions from sharing one state whatever the path
        spelling; a state with several hard links is refused. A batch whose commit fails is rolled
        back (never returned, never charged). See :mod:`dpcore._internal.state` for the crash-safety
        argument, the rollback checks and the threat model.
    state_backend : {"auto", "file", "sqlite"}, default "auto"
        ``"file"``: one file rewritten in place under a redo journal (the file keeps its inode, so its
        lock holds). ``"sqlite"``: a row of an SQLite database in WAL mode with ``synchronous=FULL``
        (for services run for real). ``"auto"``: SQLite for paths ending in ``.sqlite``, ``.sqlite3``
        or ``.db``, a file otherwise.
    state_key : "keyfile", bytes, path or "unauthenticated", default "keyfile"
        Key of the sealed (authenticated, encrypted) state: ``"keyfile"`` creates a random key in
        ``<state_path>.key`` (mode 0600); bytes (>= 32) or the path of a key file use that key;
        ``"unauthenticated"`` opts out (plain JSON, unkeyed checksum). The state is as secret as the
        training data (the update points are queries, the α's and counters depend on the data).
    verbose : bool or int, default=False
        Show tqdm progress bars (stderr) during long calls; ``False``/``0`` shows nothing. Progress and the
        :mod:`logging` messages are for the curator only and never part of a release.
        The bar of :meth:`predict` counts the queries of the batch (answered in chunks of 4096, the state
        committed after each).
    random_state : None, int or ChaChaRng
        ``None`` (default): OS-seeded ChaCha20. An int: reproducible, research/tests only.
    accountant : BudgetAccountant, optional
        Charged (ε, δ) once, at construction. With a ``state_path`` it also records every committed
        sequence number of the state, so that :meth:`load` with the same accountant refuses a rollback.

    Attributes
    ----------
    B_, epsilon0_, epsilon0_printed_, sigma_, eta_, sensitivity_, noise_scale_, grid_exponent_,
    norm_bound_, r_phi_, error_bound_, theorem3_rate_ : calibrated numbers (see above).
    privacy_ : PINPCalibration with every intermediate number.
    n_answered, n_updates, remaining_updates, remaining_queries : session counters.
    state_seq : sequence number of the last committed state (record it outside the state's
        storage and pass it to ``load(min_seq=...)`` to detect a rollback).

    Notes
    -----
    PINP is binary only: a model with ``K > 2`` declared ``classes`` (e.g. a
    :class:`~dpcore.MulticlassKernelLogisticRegression`) is refused with a ``ValueError`` naming ``classes``,
    before anything is charged. Why: Algorithm 1 and its proof are about one scalar decision function. Each
    answer is ``<w*, φ(z)>`` plus Laplace noise calibrated on the sensitivity of that scalar, and the number of
    updates is bounded by the multiplicative-weights argument on the potential ``||w_t − w*||²`` of one function
    in ``H``, which drops by a fixed amount at each update ``w_{t+1} = w_t + η·sign(d̂_t)φ(z_t)``. A K-class
    version would need K noisy answers per query and a vector-valued potential and update rule. That is another
    mechanism, and neither its proof nor its calibration exists here. For K classes use
    :class:`~dpcore.MulticlassGPService` (unlimited K-class score queries at one (ε, δ)) or
    :class:`~dpcore.MulticlassTDDL` (one joint release of all K functions).

    Examples
    --------
    The paper's calibration needs ``n·λ·ε`` large; a public ``norm_bound`` (a utility parameter,
    never read from the data) makes this tiny session affordable:

    >>> import numpy as np
    >>> from dpcore import KernelSVM, PINP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.7, 0.7, size=(200, 2)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> svm = KernelSVM(lam=0.1, kernel="rbf", gamma=1.0, tol=1e-8).fit(X, y)
    >>> session = PINP(svm, epsilon=1.0, delta=1e-6, data_norm=1.0, n_queries=10, norm_bound=100.0,
    ...                random_state=0)
    >>> answers = session.predict(X[:4])
    >>> answers.shape, session.n_answered, session.remaining_queries
    ((4,), 4, 6)
    """

    #: Test hook for deliberately broken copies; must stay 1.0.
    _sensitivity_factor = 1.0

    def __init__(self, model: KernelModel, epsilon: float, delta: float, *, data_norm: float, n_queries: int,
                 beta: float = 0.05, norm_bound: Optional[float] = None, clip: bool = False,
                 state_path: Optional[StrPath] = None, state_backend: StateBackend = "auto",
                 state_key: StateKeyLike = KEYFILE, verbose: bool | int = False, random_state: RandomState = None,
                 accountant: Optional[BudgetAccountant] = None) -> None:
        check_verbose(verbose)
        self.verbose = verbose
        params = dict(epsilon=epsilon, delta=delta, beta=beta, n_queries=n_queries,
                      data_norm=data_norm, norm_bound=norm_bound, clip=bool(clip))
        self._setup(model, params, random_state)
        self._init_state(state_path, state_backend, state_key, accountant)
        self._state_path = None if self._store is None else self._store.path
        self.dp_event_ = epsilon_delta_event(self.privacy_.epsilon, self.privacy_.delta)  # Laplace rounds, (ε, δ)
        if accountant is not None:
            try:
                accountant.spend(self.privacy_.epsilon, self.privacy_.delta, event=self.dp_event_, label="PINP")
            except BaseException:
                self._release_lock()
                raise
            logger.info("PINP: charged (epsilon=%.6g, delta=%.3g) for a session of at most %d queries and %d updates",
                        self.privacy_.epsilon, self.privacy_.delta, self.privacy_.n_queries, self.privacy_.B)
        if self._state_path is not None:
            self._commit()

    _STATE_FORMAT = _STATE_FORMAT
    _WHO = "PINP session"

    # ------------------------------------------------------------------ setup
    def _setup(self, model, params: dict, random_state) -> None:
        self._lock = threading.Lock()
        self._state_path = None
        self._store = getattr(self, "_store", None)
        self._seq = None
        info = model_info(model)
        # Calibrate with the solver's *public* error bound sqrt(2 tol/λ) (as TDDL/TDIL do), never
        # with the model's own certificate w_error_bound_, which depends on the private data.
        r = check_positive(params["data_norm"], "data_norm")
        k = info["kernel"]
        r_eff = r * (1.0 + _RADIUS_TOL)
        r2 = _core.feature_map_radius_sq(r_eff, *kernel_args(k))
        info["w_err"] = public_error_bound(model, info["lam"], "PINP", r_phi_sq=r2, lipschitz=info["L"])
        norms = np.linalg.norm(info["X"], axis=1)
        bad = np.flatnonzero(norms > r_eff)
        if bad.size:
            raise ValueError(
                f"model.X_fit_: {bad.size} training point(s) lie outside the declared domain "
                f"||x|| <= data_norm = {r} (largest norm {float(norms.max())!r}, e.g. row {bad[0]}). "
                "The sensitivity bound requires every training point in the domain; training points "
                "are never clipped silently: clip the training data to the ball and retrain."
            )
        cal = pinp_calibration(
            n=info["n"], lam=info["lam"], lipschitz=info["L"], r_phi_sq=r2, w_error_bound=info["w_err"],
            epsilon=params["epsilon"], delta=params["delta"], beta=params["beta"],
            n_queries=params["n_queries"], norm_bound=params["norm_bound"],
            sensitivity_factor=self._sensitivity_factor,
        )
        # No warning about ``||w|| > norm_bound`` here: it would depend on the private model (a
        # neighbour can cross the threshold). Theorem 3's utility needs ||w*|| <= C; the curator can
        # compare ``model.w_norm_`` with ``privacy_.norm_bound`` privately, outside the service.
        seed, seeded = seed_from(random_state)
        params = dict(epsilon=cal.epsilon, delta=cal.delta, beta=cal.beta, n_queries=cal.n_queries,
                      data_norm=r, norm_bound=None if params["norm_bound"] is None else cal.norm_bound,
                      clip=bool(params["clip"]))
        self._info, self._params, self._radius, self._r_eff = info, params, r, r_eff
        self.privacy_ = cal
        self._seeded = seeded
        self._session = _core.PinpSession(
            info["X"].shape[1], *kernel_args(k), cal.grid_exponent,
            cal.scale_num, cal.scale_den, cal.sigma, cal.eta, cal.B, cal.n_queries, seed,
        )

    def _release_lock(self) -> None:
        store = getattr(self, "_store", None)
        if store is not None:
            store.release()

    def close(self) -> None:
        """Release the state-file lock (the session object stays usable only without a state file)."""
        self._release_lock()
        self._closed = self._state_path is not None

    def __del__(self):
        self._release_lock()

    # ------------------------------------------------------------------ persistence
    def _fingerprint_material(self) -> bytes:
        return fingerprint_material(self._info)

    def _state_doc(self) -> dict:
        points, alphas, n_answered = self._session.snapshot()
        doc = dict(
            params=self._params,
            calibration=asdict(self.privacy_),
            dim=int(self._info["X"].shape[1]),
            n_answered=int(n_answered),
            n_updates=int(alphas.shape[0]),
            points=b64(points),
            alphas=b64(alphas),
        )
        return doc

    @classmethod
    def load(cls, state_path: StrPath, model: KernelModel, *, min_seq: Optional[int] = None,
             state_backend: StateBackend = "auto", state_key: StateKeyLike = KEYFILE,
             accountant: Optional[BudgetAccountant] = None, verbose: bool | int = False,
             random_state: RandomState = None) -> "PINP":
        """Resume the session persisted in ``state_path`` for ``model``.

        The state file is opened and locked first (a second live session is refused before anything
        else), authenticated under ``state_key`` (the key it was created with), and every field is
        validated: the calibration is recomputed from the stored parameters and must equal the stored
        one; the keyed model fingerprint (μ, ``X_fit_``, kernel parameters, λ, L, n, certificate) must
        match; the counters must be consistent (``n_updates ≤ B``, ``n_updates ≤ n_answered ≤ T``), the
        update points must lie in the domain and every α must be ``±η``. The accountant is not charged again (the session's (ε, δ) was charged when it was
        created). ``random_state`` seeds the resumed session's generator (default: OS entropy).
        ``verbose``: as in the constructor (not stored in the state).

        ``min_seq``: the last :attr:`state_seq` the caller recorded elsewhere; a stored state with a
        smaller sequence number (an older copy put back) raises :class:`StateRollbackError`, and so
        does a state older than what ``accountant``'s ledger recorded for it. An edited, truncated or
        forged state fails authentication (:class:`dpcore.exceptions.StateAuthenticationError`).

        Examples
        --------
        >>> import os, tempfile
        >>> import numpy as np
        >>> from dpcore import KernelSVM, PINP
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.7, 0.7, size=(200, 2)); y = np.where(X[:, 0] > 0, 1, -1)
        >>> svm = KernelSVM(lam=0.1, kernel="rbf", gamma=1.0, tol=1e-8).fit(X, y)
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = os.path.join(tmp.name, "pinp.json")
        >>> session = PINP(svm, 1.0, 1e-6, data_norm=1.0, n_queries=10, norm_bound=100.0, state_path=path,
        ...                random_state=0)
        >>> _ = session.predict(X[:3]); seq = session.state_seq; session.close()
        >>> resumed = PINP.load(path, svm, min_seq=seq)       # e.g. after a restart
        >>> resumed.n_answered, resumed.remaining_queries
        (3, 7)
        >>> resumed.close(); tmp.cleanup()
        """
        check_verbose(verbose)
        store, doc = cls._open_for_load(state_path, state_backend, state_key, min_seq, accountant)
        path = store.path
        try:
            self = cls.__new__(cls)
            self._store = None
            self.verbose = verbose
            self._setup(model, check_params_doc(doc.get("params"), _PARAM_KEYS, path), random_state)
            self._adopt_loaded(store, doc, accountant)
            if asdict(self.privacy_) != doc.get("calibration"):
                raise ValueError("the recomputed calibration differs from the stored one; refusing to resume")
            cal, d = self.privacy_, int(self._info["X"].shape[1])
            n_updates, n_answered = doc.get("n_updates"), doc.get("n_answered")
            if doc.get("dim") != d or type(n_updates) is not int or type(n_answered) is not int \
                    or not 0 <= n_updates <= cal.B or not n_updates <= n_answered <= cal.n_queries:
                raise StateAuthenticationError(f"{path!r}: stored counters are invalid (dim {doc.get('dim')!r}, "
                                               f"n_updates {n_updates!r}, n_answered {n_answered!r})")
            points = unb64(doc.get("points"), "points")
            alphas = unb64(doc.get("alphas"), "alphas")
            if points.size != n_updates * d or alphas.size != n_updates:
                raise StateAuthenticationError(f"{path!r} is inconsistent (update counts)")
            points = points.reshape(n_updates, d)
            if not np.isfinite(points).all() or not np.all(np.abs(alphas) == cal.eta):
                raise StateAuthenticationError(f"{path!r}: stored update points must be finite and every alpha "
                                               "must be +-eta")
            if n_updates:
                check_in_domain(points, self._radius, "stored points", clip=False, what="stored point(s)")
            self._session.restore(points, alphas, n_answered)
            self._state_path = path
        except BaseException:
            store.release()
            raise
        return self

    # ------------------------------------------------------------------ queries
    def _check_queries(self, X) -> np.ndarray:
        refuse_dask(X, "X", _NO_DASK)
        d = self._info["X"].shape[1]
        X = np.asarray(X)
        if X.ndim == 1:
            raise ValueError(f"X must be a 2-D array of shape (m, {d}); reshape a single query with X[None, :]")
        X = check_array(X, "X", n_features=d)
        return check_in_domain(X, self._radius, "X", clip=self._params["clip"], what="query point(s)")

    @overload
    def predict(self, X: ArrayLike, *, return_details: Literal[False] = ...
               ) -> np.ndarray: ...
    @overload
    def predict(self, X: ArrayLike, *, return_details: Literal[True]) -> Tuple[np.ndarray, Dict[str, Any]]: ...
    @overload
    def predict(self, X: ArrayLike, *, return_details: bool = ...
                ) -> Union[np.ndarray, Tuple[np.ndarray, Dict[str, Any]]]: ...

    def predict(self, X: ArrayLike, *, return_details: bool = False
                ) -> Union[np.ndarray, Tuple[np.ndarray, Dict[str, Any]]]:
        """Answer the rows of ``X`` in order (Algorithm 1). Thread-safe; calls are serialised.

        Parameters
        ----------
        X : array of shape (m, d)
            Queries, each with ``||z|| <= data_norm`` (or projected when ``clip=True``). In memory:
            a Dask ``X`` is a ``TypeError`` (every answer draws fresh noise in query order from the
            session's one generator; a blockwise map would need a random stream per block).
        return_details : bool, default False
            Also return a dict with the integer noise draws (grid units), the update signs and the
            grid exponent. **Not private** (with the answers it reveals the exact predictions);
            only allowed for sessions with a reproducible seed (research/tests).

        Returns
        -------
        answers : ndarray of shape (m,)
        details : dict (only with ``return_details=True``)

        Raises
        ------
        PINPBudgetExhausted
            When B updates or T queries are used up before the end of the batch; its ``answers``
            attribute holds the answers for the leading queries (already committed).

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import KernelSVM, PINP
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.7, 0.7, size=(200, 2)); y = np.where(X[:, 0] > 0, 1, -1)
        >>> svm = KernelSVM(lam=0.1, kernel="rbf", gamma=1.0, tol=1e-8).fit(X, y)
        >>> session = PINP(svm, 1.0, 1e-6, data_norm=1.0, n_queries=10, norm_bound=100.0, random_state=0)
        >>> session.predict(X[:3]).shape, session.remaining_queries
        ((3,), 7)
        """
        if return_details and not self._seeded:
            raise ValueError(
                "return_details=True reveals the noise (hence the exact predictions): only allowed for "
                "sessions created with a reproducible random_state (research/tests)"
            )
        X = self._check_queries(X)
        with self._lock:
            if getattr(self, "_closed", False):
                raise RuntimeError("this PINP session was closed")
            answers, noise, updates, stop = self._answer(X)
            if answers.shape[0] < X.shape[0]:
                cal = self.privacy_
                if stop == "updates":
                    msg = (f"PINP update budget exhausted: all B = {cal.B} updates are used; the session "
                           f"refuses every further query ({answers.shape[0]} of {X.shape[0]} queries of "
                           "this batch were answered)")
                else:
                    msg = (f"PINP query budget exhausted: T = {cal.n_queries} queries answered; "
                           f"{answers.shape[0]} of {X.shape[0]} queries of this batch were answered")
                raise PINPBudgetExhausted(stop, answers, msg)
        if return_details:
            return answers, dict(noise=noise, updates=updates, grid_exponent=self.privacy_.grid_exponent)
        return answers

    def _answer(self, X: np.ndarray) -> tuple:
        """The batch through the Rust session, then ONE commit (:meth:`_guarded`: a batch whose commit does not
        become durable — a failed write, an interrupt in any chunk — is rolled back whole, so an answer is
        charged iff it could have been returned). With ``verbose``, the session is called on consecutive chunks
        of ``_PROGRESS_CHUNK`` queries (a multiple of the Rust session's own chunk, so the answers are the same
        bit for bit) with a progress bar over the queries."""
        with progress_bar(getattr(self, "verbose", False), total=X.shape[0], desc="PINP queries",
                          unit="query") as bar:
            return self._guarded(lambda: self._answer_and_commit(X, bar), self._session.snapshot(), self._restore)

    def _answer_and_commit(self, X: np.ndarray, bar) -> tuple:
        m = X.shape[0]
        step = _PROGRESS_CHUNK if check_verbose(getattr(self, "verbose", False)) else max(m, 1)
        parts, stop = [], None
        for start in range(0, max(m, 1), step):
            chunk = X[start:start + step]
            answers, noise, updates, stop = self._session.answer(chunk, self._info["X"], self._info["mu"])
            parts.append((answers, noise, updates))
            bar.update(answers.shape[0])
            if answers.shape[0] < chunk.shape[0]:
                break
        out = parts[0] if len(parts) == 1 else tuple(np.concatenate([p[i] for p in parts]) for i in range(3))
        if self._store is not None and out[0].shape[0] > 0:
            self._commit()
        return (*out, stop)

    def _restore(self, snap: tuple) -> None:
        """Undo a batch whose commit did not become durable (or that was interrupted): counters, updates."""
        self._session.restore(*snap)

    def _sample_sessions(self, Z, n_sessions: int, seed: int) -> np.ndarray:
        """Audit helper (NOT private): answers of ``n_sessions`` independent fresh sessions with
        this calibration and model on the same queries; refused queries are NaN. Session ``s``
        uses the generator of ``random_state=seeds[s]`` with ``seeds`` drawn from
        ``numpy.random.SeedSequence(seed)``. Does not touch this session's state or budget."""
        Z = self._check_queries(Z)
        seeds = np.random.SeedSequence(int(seed)).generate_state(int(n_sessions), dtype=np.uint64)
        return self._sample_sessions_seeds(Z, seeds)

    def _sample_sessions_seeds(self, Z, seeds) -> np.ndarray:
        Z = self._check_queries(Z)
        k = self._info["kernel"]
        exact = kernel_predict(Z, self._info["X"], self._info["mu"], **k)
        gram = kernel_matrix(Z, Z, **k)
        return self._session.sample_sessions(exact, gram, np.ascontiguousarray(seeds, dtype=np.uint64))

    # ------------------------------------------------------------------ attributes
    @property
    def n_answered(self) -> int:
        return int(self._session.n_answered)

    @property
    def n_updates(self) -> int:
        return int(self._session.n_updates)

    @property
    def remaining_updates(self) -> int:
        return self.privacy_.B - self.n_updates

    @property
    def remaining_queries(self) -> int:
        return self.privacy_.n_queries - self.n_answered

    @property
    def state_path(self) -> Optional[StrPath]:
        return self._state_path

    @property
    def state_seq(self) -> Optional[int]:
        """Sequence number of the last committed state (``None`` without ``state_path``)."""
        return self._seq

    @property
    def B_(self) -> int:
        return self.privacy_.B

    @property
    def epsilon0_(self) -> float:
        return self.privacy_.epsilon0

    @property
    def epsilon0_printed_(self) -> float:
        return self.privacy_.epsilon0_printed

    @property
    def sigma_(self) -> float:
        return self.privacy_.sigma

    @property
    def eta_(self) -> float:
        return self.privacy_.eta

    @property
    def sensitivity_(self) -> float:
        return self.privacy_.sensitivity

    @property
    def noise_scale_(self) -> float:
        return self.privacy_.noise_scale

    @property
    def grid_exponent_(self) -> int:
        return self.privacy_.grid_exponent

    @property
    def norm_bound_(self) -> float:
        return self.privacy_.norm_bound

    @property
    def r_phi_(self) -> float:
        return self.privacy_.r_phi

    @property
    def error_bound_(self) -> float:
        return self.privacy_.error_bound

    @property
    def theorem3_rate_(self) -> float:
        return self.privacy_.theorem3_rate

    def __repr__(self) -> str:
        c = self.privacy_
        return (f"PINP(epsilon={c.epsilon:g}, delta={c.delta:g}, T={c.n_queries}, B={c.B}, "
                f"answered={self.n_answered}, updates={self.n_updates})")

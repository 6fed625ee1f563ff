r"""GPService — an interactive private prediction service with unlimited queries (the RKHS GP mechanism).

A trusted curator holds a certified kernel model ``ŵ`` (:class:`dpcore.KernelSVM` /
:class:`dpcore.KernelLogisticRegression`). :class:`GPService` answers prediction queries ``f(q)``
privately, in order, for as many queries as anyone asks, at a one-time cost of ``(ε, δ)``: it
releases, lazily, one sample path of ``ŵ + σ·G`` where ``G`` is a Gaussian process with the model's
own kernel as covariance (Hall, Rinaldo & Wasserman 2013; the proof for a fixed set of points is in
:mod:`dpcore.kernel_learning.gp`).

Lazy, consistent sampling
-------------------------
The answered distinct points ``Q = (q_1, …, q_t)`` keep a lower-triangular factor ``L̂`` of
``K̂_QQ + τI`` and the exact standard normals ``ξ`` used so far; the noise on ``q_j`` is
``σ (L̂ ξ)_j``. A batch of ``m`` new points ``P`` extends the factor by the block Cholesky step
``L₂₁ = K_PQ L̂⁻ᵀ`` (one triangular solve, ``O(t² m)``), ``L₂₂ = chol(K_PP + τI − L₂₁L₂₁ᵀ)``, draws
``m`` new exact normals and answers ``v_P + σ(L₂₁ ξ_old + L₂₂ ξ_new)`` — the conditional
distribution of the path at ``P`` given every earlier released value. A repeated query returns the
identical stored answer. A query arriving alone costs one ``O(t²)`` triangular solve, never a
refactorisation.

Privacy
-------
The released vector over all exact-phase answers is ``A(D) = Φ_Qᵀŵ_D + σ L̂ ξ`` (then rounded, below)
with the assembled ``L̂``. Lemma 1 of :mod:`dpcore.kernel_learning.gp` holds for it with the *public* jitter ``τ``
fixed at construction for ``T_max = max_exact_queries`` points (the blocked algorithm is Cholesky
with another ordering of the same operations; dpcore uses the bound ``γ_{2T+2}`` for it and checks the
margin after every batch), so ``L̂L̂ᵀ ⪰ K_QQ``. Queries may be chosen adaptively from earlier answers:
each batch is a Gaussian mechanism whose whitened sensitivity ``μ_b`` satisfies ``Σ_b μ_b² ≤
(Δ/σ)²`` on every path (the Mahalanobis norm of ``Φ_Qᵀ(ŵ_D − ŵ_D')`` splits over the conditional
blocks), and fully adaptive composition of Gaussian-DP mechanisms with such a budget is
``(Δ/σ)``-GDP (Smith & Thakurta 2022, "Fully adaptive composition for Gaussian differential
privacy"; Dong, Roth & Su 2022). ``μ``-GDP is exactly the analytic Gaussian curve, so ``σ`` is
calibrated with :func:`dpcore.accounting.calibrate.gaussian_sigma_analytic`.

The float error of the computed answers (≤ ``ρ`` per answer, public, :func:`dpcore.kernel_learning.gp.gp_residual_bound`
with ``T_max``) is covered by an exact analytic-Gaussian grid release of every answer with
``σ₂ = 2ρ·sqrt(T_max)/μ₂`` (GDP ``μ₂`` over all answers together); stage 1 gets
``μ₁ = μ·sqrt(1 − 10⁻⁶)`` and stage 2 ``μ₂ = μ·10⁻³``, so ``μ₁² + μ₂² = μ²``.

After ``max_exact_queries`` distinct points the service answers new points by the **posterior
mean** ``K(q, Q)(K̂_QQ + ridge·I)⁻¹ŷ`` of the released path — a function of released values only
(post-processing, no further privacy cost, no new noise). ``max_exact_queries`` is memory-checked
(``8·T_max²`` bytes for the factor).

Durable state (``state_path``) as for :class:`dpcore.PINP` (:mod:`dpcore._internal.state`): the points,
normals, answers and batch boundaries of a batch are committed before its answers are returned or
become part of the in-memory path; a batch whose commit fails is rolled back (never returned, never
charged), a batch whose commit became durable is kept (a retry returns its stored answers). A
reloaded service recomputes the factor batch by batch and checks its SHA-256 against the stored one
(the continuation must use exactly the factor that produced the earlier answers; a machine whose
LAPACK gives different bits refuses to continue rather than silently change the path), and checks
every stored answer against the model, the factor and the normals (an edited answer is refused).

**The state file is as secret as the training data**: it stores the exact normals ``ξ`` next to the
answers, so the non-private predictions ``f(Q)`` come back from the file alone. It is sealed
(ChaCha20-Poly1305) under ``state_key`` (default: a 0600 key file beside it) and created 0600; the
model fingerprint in it is keyed (an unkeyed hash of the data would let anyone test a candidate
dataset against it).
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import warnings
from dataclasses import asdict, dataclass
from typing import Optional, TYPE_CHECKING

import numpy as np
from scipy import linalg

from dpcore import _core
from dpcore.kernels.evaluation import kernel_args
from dpcore._internal.fp import UNIT_ROUNDOFF, gamma_k
from dpcore.accounting.events import gdp_event
from dpcore.kernel_learning._model import (
    RADIUS_TOL, SLACK, b64, fingerprint_material, model_info, unb64, check_in_domain, check_mu_l1,
    kernel_eval_error, prediction_fp_bound, public_error_bound,
)
from dpcore._internal.dask import refuse_dask
from dpcore._internal.labels import decision_labels, label_agreement
from dpcore._internal.sealing import KEYFILE, StateKeyLike
from dpcore._internal.state import DurableSession, check_params_doc
from dpcore.exceptions import StateAuthenticationError
from dpcore._internal.validation import check_array, check_count, check_delta, check_epsilon, check_positive
from dpcore.accounting.calibrate import gaussian_sigma_analytic
from dpcore.kernel_learning.gp import XI_GRID_EXPONENT, XI_NORM_SLACK, gp_residual_bound
from dpcore.mechanisms.noise import ANALYTIC_GRID_BITS, check_random_state
from dpcore._internal.progress import check_verbose, progress_bar
from dpcore._internal.types import ArrayLike, KernelModel, RandomState, StateBackend, StrPath

if TYPE_CHECKING:
    from dpcore.accounting import BudgetAccountant

logger = logging.getLogger(__name__)

__all__ = ["GPService", "GPServiceCalibration"]

#: Why queries cannot be a Dask collection: answers draw fresh noise in query order from one generator (a blockwise
#: map would need a random stream per block, and a recomputed block must not draw again);
#: each new point also extends the released sample path in order.
_NO_DASK = "GPService answers draw fresh noise, in query order, from the session's one generator"

_STATE_FORMAT = "dpcore.gp_service.state/2"
#: New points are added to the path in blocks of at most this many (one block Cholesky step each: a 1024² factor
#: takes a few ms, so an interrupt is seen quickly; a batch of 9,000 new points used to run one 9,000² LAPACK call).
_BLOCK_POINTS = 1024
#: The parameters a state stores (``load`` refuses any other set).
_PARAM_KEYS = ("epsilon", "delta", "data_norm", "max_exact_queries", "ridge", "clip")
#: A stored answer may differ from its recomputation by the float residual (2ρ) plus this many sd of the
#: stage-2 release (P[|N(0,1)| > 50] < 10⁻⁵⁴⁴ per answer) plus two grid steps.
_ANSWER_CHECK_SDS = 50.0
#: μ₂/μ: the share of the GDP budget of the exact stage-2 release that covers the float residual.
_RESIDUAL_MU_SHARE = 1e-3


@dataclass(frozen=True)
class GPServiceCalibration:
    """Every public number of a :class:`GPService` (formulas in the module docstring).

    Examples
    --------
    >>> import numpy as np, dpcore
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2)); X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    >>> y = np.where(X[:, 0] > 0, 1, -1)
    >>> svm = dpcore.KernelSVM(lam=0.01, kernel="rbf", gamma=1.0, tol=1e-8).fit(X, y)
    >>> cal = dpcore.GPService(svm, 1.0, 1e-6, data_norm=1.0, random_state=0).privacy_
    >>> cal.epsilon, cal.delta, cal.n  # ε, δ as calibrated: rounded down onto the budget grid (docs/privacy.md)
    (1.0, 9.999999999975306e-07, 300)
    """

    epsilon: float
    delta: float
    n: int
    lam: float
    lipschitz: float
    r_phi: float
    w_error_bound: float
    weight_sensitivity: float
    mu: float
    noise_scale: float
    jitter: float
    max_exact_queries: int
    prediction_fp_error: float
    residual_bound: float
    residual_sigma: float
    residual_grid_exponent: int
    ridge: float


def _jitter(T: int, r2: float, e_k: float) -> float:
    u = UNIT_ROUNDOFF
    return 2.0 * (T * e_k + u * (r2 + e_k) + gamma_k(2 * T + 2) * T * (r2 + e_k) * 1.01) * (1.0 + 1e-6) + 1e-300


def _service_calibration(*, epsilon: float, delta: float, n: int, lam: float, lipschitz: float, r2: float,
                         err: float, fp: float, e_k: float, T_max: int, value_bound: float, n_paths: int,
                         ridge, sensitivity_factor: float) -> dict:
    """The numbers of a GP service's calibration (module docstring, "Calibration"), shared by :class:`GPService`
    (one path) and :class:`~dpcore.kernel_learning.multiclass_service.MulticlassGPService` (``n_paths = K``):
    all from public parameters and the public bounds ``err`` (solver), ``fp`` (prediction rounding) and ``e_k``
    (kernel rounding).

    * ``weight_sensitivity`` Δ_w = (2 L R/(λ n)(1 + s) + 2 err)(1 + s) (replace-one, certified solver residual);
    * the total GDP ``mu`` = Δ_w/σ_total of the analytic Gaussian at (ε, δ), split into the path's μ₁ and the float
      residual's μ₂ = 1e-3·μ (squares add up to at most μ²);
    * the path noise σ = Δ_w/μ₁, the jitter τ, the residual bound ρ (times √n_paths: every path's residual in one
      vector) and the residual release σ₂ = 2ρ/μ₂ on the grid 2^(⌊log₂ σ₂⌋ − ANALYTIC_GRID_BITS);
    * the interpolation ridge (``ridge=None``: 1e-6·R² + τ).
    """
    R = math.sqrt(r2)
    dw = (2.0 * lipschitz * R / (lam * n) * (1.0 + SLACK) + 2.0 * err) * (1.0 + SLACK) * sensitivity_factor
    mu = dw / gaussian_sigma_analytic(dw, epsilon, delta)
    mu1 = mu * math.sqrt(1.0 - _RESIDUAL_MU_SHARE**2) * (1.0 - SLACK)
    mu2 = mu * _RESIDUAL_MU_SHARE * (1.0 - SLACK)
    sigma = dw / mu1
    tau = _jitter(T_max, r2, e_k)
    row_max = math.sqrt((r2 + e_k + tau) * (1.0 + 2.0 * gamma_k(2 * T_max + 2)))
    rho = gp_residual_bound(T=T_max, sigma=sigma, row_norm_max=row_max, prediction_error=fp,
                            value_bound=value_bound) * math.sqrt(n_paths)  # ||δ||₂ over all T_max answers
    sigma2 = 2.0 * rho / mu2
    k2 = math.floor(math.log2(sigma2)) - ANALYTIC_GRID_BITS  # grid σ₂·2⁻⁴⁰, as dpcore.mechanisms.noise
    ridge = 1e-6 * r2 + tau if ridge is None else check_positive(ridge, "ridge")
    return dict(r_phi=R, weight_sensitivity=dw, mu=mu, noise_scale=sigma, jitter=tau, residual_bound=rho,
                residual_sigma=sigma2, residual_grid_exponent=k2, ridge=ridge)


class GPService(DurableSession):
    """Private predictions of a kernel model, unlimited queries, one ``(ε, δ)`` (see the module docstring).

    Parameters
    ----------
    model : fitted kernel ERM
        A certified :class:`dpcore.KernelSVM` / :class:`dpcore.KernelLogisticRegression` (or a model
        exposing the same attributes).
    epsilon, delta : float
        The guarantee of the whole service, whatever is asked (ε > 0, 0 < δ < 1).
    data_norm : float
        Public bound on ``||x||`` of every training point and every query.
    max_exact_queries : int, default 10_000
        Distinct points answered with fresh GP noise; afterwards new points get the posterior mean
        of the released path (post-processing). Needs ``8·max_exact_queries²`` bytes.
    ridge : float, optional
        Ridge of the posterior-mean phase (default ``1e-6·R_φ² + τ``).
    clip : bool, default False
        Project queries outside the ball onto it instead of raising ``ValueError``.
    state_path, state_backend : optional
        Durable state (as :class:`dpcore.PINP`); resume with :meth:`load`. **The state file is as secret
        as the training data** (it holds the exact normals next to the answers).
    state_key : "keyfile", bytes, path or "unauthenticated", default "keyfile"
        Key of the sealed (authenticated, encrypted) state: ``"keyfile"`` creates a random key in
        ``<state_path>.key`` (mode 0600); bytes (>= 32) or the path of a key file use that key;
        ``"unauthenticated"`` opts out (plain JSON, unkeyed checksum). See :mod:`dpcore._internal.sealing`.
    verbose : bool or int, default=False
        Show tqdm progress bars (stderr) during long calls; ``False``/``0`` shows nothing. Progress and the
        :mod:`logging` messages are for the curator only and never part of a release.
        The bar of :meth:`predict` counts the queries of the batch.
    random_state : None, int or ChaChaRng
        ``None`` (default): OS-seeded ChaCha20; an int: reproducible (research/tests only).
    accountant : BudgetAccountant, optional
        Charged ``(ε, δ)`` once, at construction. With a ``state_path`` it also records every committed
        sequence number of the state (:meth:`dpcore.BudgetAccountant.record_state`), so that a state
        rolled back on disk is refused by :meth:`load` given the same accountant.

    Examples
    --------
    >>> import numpy as np, dpcore
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2)); X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    >>> y = np.where(X[:, 0] > 0, 1, -1)
    >>> svm = dpcore.KernelSVM(lam=0.01, kernel="rbf", gamma=1.0, tol=1e-8).fit(X, y)
    >>> service = dpcore.GPService(svm, 1.0, 1e-6, data_norm=1.0, random_state=0)
    >>> a = service.predict(X[:5]); b = service.predict(X[:5])
    >>> bool(np.array_equal(a, b)), service.n_distinct
    (True, 5)
    """

    #: Shape of one answer (a scalar decision value; ``(K,)`` scores for :class:`MulticlassGPService`).
    _answer_shape: tuple = ()

    #: Test hook for deliberately broken copies; must stay 1.0.
    _sensitivity_factor = 1.0

    def __init__(self, model: KernelModel, epsilon: float, delta: float, *, data_norm: float,
                 max_exact_queries: int = 10_000, ridge: Optional[float] = None, clip: bool = False,
                 state_path: Optional[StrPath] = None, state_backend: StateBackend = "auto",
                 state_key: StateKeyLike = KEYFILE, verbose: bool | int = False, random_state: RandomState = None,
                 accountant: Optional[BudgetAccountant] = None) -> None:
        check_verbose(verbose)
        self.verbose = verbose
        params = dict(epsilon=epsilon, delta=delta, data_norm=data_norm, max_exact_queries=max_exact_queries,
                      ridge=ridge, clip=bool(clip))
        self._store = None
        self._setup(model, params, random_state)
        self._init_state(state_path, state_backend, state_key, accountant)
        self.dp_event_ = gdp_event(self.privacy_.mu)  # μ-GDP under fully adaptive queries (module docstring)
        if accountant is not None:
            try:
                accountant.spend(self.privacy_.epsilon, self.privacy_.delta, event=self.dp_event_, label="GPService")
            except BaseException:
                if self._store is not None:
                    self._store.release()
                raise
            logger.info("GPService: charged (epsilon=%.6g, delta=%.3g) once for every future query",
                        self.privacy_.epsilon, self.privacy_.delta)
        if self._store is not None:
            self._commit()

    # ------------------------------------------------------------------ setup and calibration
    _STATE_FORMAT = _STATE_FORMAT
    _WHO = "GPService"

    def _setup(self, model, params: dict, random_state) -> None:
        self._lock = threading.Lock()
        self._seq = None
        info = model_info(model, "GPService")
        clip = params["clip"]
        if not isinstance(clip, (bool, np.bool_)):
            raise TypeError(f"clip must be a bool, got {type(clip).__name__}")
        epsilon = check_epsilon(params["epsilon"])
        delta = check_delta(params["delta"], allow_zero=False)
        r = check_positive(params["data_norm"], "data_norm")
        T_max = check_count(params["max_exact_queries"], "max_exact_queries", bytes_per_unit=0)
        check_count(T_max, "max_exact_queries", bytes_per_unit=8 * T_max)  # the factor: 8·T_max² bytes
        k = info["kernel"]
        r_eff = r * (1.0 + RADIUS_TOL)
        r2 = _core.feature_map_radius_sq(r_eff, *kernel_args(k))
        X = check_in_domain(info["X"], r, "model.X_fit_", clip=False)
        n, lam, L = info["n"], info["lam"], info["L"]
        err = public_error_bound(model, lam, "GPService", r_phi_sq=r2, lipschitz=L)
        check_mu_l1(info["mu"], L / lam, "GPService")
        d = X.shape[1]
        fp = prediction_fp_bound(n=X.shape[0], mu_l1_bound=L / lam, r_phi_sq=r2, kernel=k, radius=r_eff, d=d)
        e_k = kernel_eval_error(k, r_eff, d) + 2.0 * UNIT_ROUNDOFF * r2
        cal = _service_calibration(epsilon=epsilon, delta=delta, n=n, lam=lam, lipschitz=L, r2=r2, err=err, fp=fp,
                                   e_k=e_k, T_max=T_max, value_bound=(L / lam) * r2 + fp, n_paths=1,
                                   ridge=params["ridge"], sensitivity_factor=self._sensitivity_factor)
        self.privacy_ = GPServiceCalibration(
            epsilon=epsilon, delta=delta, n=n, lam=lam, lipschitz=L, w_error_bound=err, max_exact_queries=T_max,
            prediction_fp_error=fp, **cal)
        self._rng = check_random_state(random_state)
        self.classes_ = np.asarray(getattr(model, "classes_", np.array([-1, 1])))
        self._info, self._radius, self._kernel, self._e_k, self._r2 = info, r, k, e_k, r2
        self._params = dict(params, epsilon=epsilon, delta=delta, data_norm=r, max_exact_queries=T_max,
                            ridge=params["ridge"])
        sv = info["mu"] != 0.0
        self._X_sv = np.ascontiguousarray(X[sv])
        self._mu_sv = np.ascontiguousarray(info["mu"][sv])
        # path state
        self._Q = np.zeros((0, d))
        self._buf = np.zeros((0, 0))  # the factor L̂ lives in its leading t × t block
        self._s2 = 0.0
        self._xi = np.zeros(0)
        self._y = np.zeros(0)
        self._batches: list = []
        self._index: dict = {}
        self._n_answered = 0
        self._posterior = None

    # ------------------------------------------------------------------ the path
    @property
    def _L(self) -> np.ndarray:
        t = self._Q.shape[0]
        return self._buf[:t, :t]

    def _kern(self, A, B):
        k = self._kernel
        return _core.kernel_matrix(np.ascontiguousarray(A), np.ascontiguousarray(B), *kernel_args(k))

    def _extend_factor(self, P: np.ndarray) -> tuple:
        """``(L₂₁, L₂₂)`` of the block Cholesky step for new points ``P`` (public computation)."""
        tau, t = self.privacy_.jitter, self._Q.shape[0]
        A = self._kern(P, P)  # only its lower triangle is read by the factorisation
        if t:
            K_pq = self._kern(P, self._Q)
            if P.shape[0] <= 32:  # Rust forward substitution on the buffer: O(t² m), no copy of L̂
                L21 = np.asarray(_core.gp_forward_substitution(self._buf, t, np.ascontiguousarray(K_pq.T))).T
            else:  # LAPACK on a contiguous copy (the copy is O(t²), the solve O(t² m))
                L21 = linalg.solve_triangular(np.ascontiguousarray(self._L), K_pq.T, lower=True,
                                              check_finite=False).T
            A -= L21 @ L21.T
        else:
            L21 = np.zeros((P.shape[0], 0))
        A[np.diag_indices(P.shape[0])] += tau
        try:
            L22 = linalg.cholesky(A, lower=True, check_finite=True)
        except (linalg.LinAlgError, ValueError):
            raise RuntimeError("GPService: the conditional covariance of the new points is not positive definite "
                               "despite the certified jitter (non-finite kernel values?)") from None
        return L21, L22

    def _append(self, P, L21, L22, xi_new, y_new) -> None:
        t, m = self._Q.shape[0], P.shape[0]
        T = t + m
        if T > self._buf.shape[0]:  # amortised growth (×2, capped at max_exact_queries)
            cap = min(max(2 * self._buf.shape[0], T, 64), max(self.privacy_.max_exact_queries, T))
            buf = np.zeros((cap, cap))
            buf[:t, :t] = self._buf[:t, :t]
            self._buf = buf
        rows = np.einsum("ij,ij->i", L21, L21) + np.einsum("ij,ij->i", L22, L22)
        s2 = max(self._s2, float(np.max(rows)) * (1.0 + gamma_k(T + 2)))
        c = self.privacy_
        margin = c.jitter - (T * self._e_k + UNIT_ROUNDOFF * (self._r2 + self._e_k + c.jitter)
                             + gamma_k(2 * T + 2) * T * s2 * (1.0 + gamma_k(T)))
        if not margin > 0.0:  # cannot happen for T ≤ T_max (public computation, checked anyway)
            raise RuntimeError(f"GPService: jitter margin {margin:.3g} <= 0 after {T} points")
        self._buf[t:T, :t] = L21
        self._buf[t:T, t:T] = L22
        self._s2 = s2
        self._Q = np.vstack([self._Q, P])
        self._xi = np.concatenate([self._xi, xi_new])
        self._y = np.concatenate([self._y, y_new])
        self._batches.append(m)
        for j in range(m):
            self._index.setdefault(P[j].tobytes(), t + j)
        self._posterior = None

    def _answer_new(self, P: np.ndarray) -> np.ndarray:
        c = self.privacy_
        L21, L22 = self._extend_factor(P)
        m = P.shape[0]
        xi_new = np.asarray(_core.analytic_release(np.zeros(m), 1.0, XI_GRID_EXPONENT, self._rng), dtype=np.float64)
        xi_all = np.concatenate([self._xi, xi_new])
        T_max = c.max_exact_queries
        if not float(xi_all @ xi_all) * (1.0 + gamma_k(xi_all.size + 1)) <= (math.sqrt(T_max) + XI_NORM_SLACK) ** 2:
            raise RuntimeError("GPService: ||xi|| exceeded its public bound (probability < 1e-300); nothing released")
        k = self._kernel
        v = _core.kernel_predict(P, self._X_sv, self._mu_sv, *kernel_args(k)) \
            if self._X_sv.shape[0] else np.zeros(m)
        noise = c.noise_scale * (L21 @ self._xi + L22 @ xi_new)
        y_new = np.asarray(_core.analytic_release(np.ascontiguousarray(v + noise), c.residual_sigma,
                                                  c.residual_grid_exponent, self._rng), dtype=np.float64)
        self._append(P, L21, L22, xi_new, y_new)
        return y_new

    def _answer_and_commit(self, P: np.ndarray) -> None:
        """Extend the path by the new points ``P`` in blocks of at most ``_BLOCK_POINTS`` (each one block Cholesky
        step: the conditional law given everything before it, so the path's law is the same; between blocks Python
        sees Ctrl-C, and LAPACK never runs for long), then commit once (the caller rolls back on failure)."""
        for start in range(0, P.shape[0], _BLOCK_POINTS):
            self._answer_new(P[start:start + _BLOCK_POINTS])
        if self._store is not None:
            self._commit()

    def _snapshot(self) -> tuple:
        return (self._Q, self._buf, self._s2, self._xi, self._y, len(self._batches), self._posterior)

    def _restore(self, snap: tuple) -> None:
        """Undo the in-memory extension of a batch whose commit did not become durable."""
        Q, buf, s2, xi, y, nb, posterior = snap
        t = Q.shape[0]
        for key in [k for k, j in self._index.items() if j >= t]:
            del self._index[key]
        self._Q, self._buf, self._s2, self._xi, self._y, self._posterior = Q, buf, s2, xi, y, posterior
        del self._batches[nb:]

    def _posterior_mean(self, P: np.ndarray) -> np.ndarray:
        if self._posterior is None:
            A = self._kern(self._Q, self._Q)
            A = 0.5 * (A + A.T)
            A[np.diag_indices(A.shape[0])] += self.privacy_.ridge
            self._posterior = linalg.cho_solve(linalg.cho_factor(A, lower=True), self._y)
        if self._Q.shape[0] == 0:
            return np.zeros(P.shape[0])
        k = self._kernel
        return _core.kernel_predict(P, self._Q, self._posterior, *kernel_args(k))

    def _sample_sessions(self, X, n_samples: int, random_state) -> np.ndarray:
        """``n_samples`` independent fresh sessions answering the query sequence ``X`` (for audits).

        Row ``i`` has the law of the answers of a new service asked ``X`` (repeated points get the
        same answer; the distinct points, at most ``max_exact_queries``, form one batch). Does not
        touch this service's path, state or budget.
        """
        X = self._check_queries(X)
        keys = [row.tobytes() for row in X]
        first: dict = {}
        for i, kb in enumerate(keys):
            first.setdefault(kb, len(first))
        order = sorted(first, key=first.get)
        P = np.vstack([X[keys.index(kb)] for kb in order])[: self.privacy_.max_exact_queries]
        saved = (self._Q, self._buf)
        self._Q, self._buf = np.zeros((0, X.shape[1])), np.zeros((0, 0))
        try:
            _, L = self._extend_factor(P)
        finally:
            self._Q, self._buf = saved
        c, m = self.privacy_, P.shape[0]
        rng = check_random_state(random_state)
        xi = np.asarray(_core.analytic_release(np.zeros(m), 1.0, XI_GRID_EXPONENT, rng, int(n_samples)),
                        dtype=np.float64).reshape(-1, m)
        if not np.all(np.einsum("ij,ij->i", xi, xi) * (1.0 + gamma_k(m + 1))
                      <= (math.sqrt(c.max_exact_queries) + XI_NORM_SLACK) ** 2):
            raise RuntimeError("GPService: ||xi|| exceeded its public bound (probability < 1e-300)")
        k = self._kernel
        v = _core.kernel_predict(P, self._X_sv, self._mu_sv, *kernel_args(k)) \
            if self._X_sv.shape[0] else np.zeros(m)
        y = v + c.noise_scale * (xi @ L.T)
        y = np.asarray(_core.analytic_release(np.ascontiguousarray(y).ravel(), c.residual_sigma,
                                              c.residual_grid_exponent, rng), dtype=np.float64).reshape(-1, m)
        return y[:, [first[kb] for kb in keys]]

    # ------------------------------------------------------------------ public API
    def _check_queries(self, X) -> np.ndarray:
        refuse_dask(X, "X", _NO_DASK)
        d = self._info["X"].shape[1]
        X = np.asarray(X) if not hasattr(X, "tocsr") else X
        if getattr(X, "ndim", 2) == 1:
            raise ValueError(f"X must be a 2-D array of shape (m, {d}); reshape a single query with X[None, :]")
        X = check_array(X, "X", n_features=d)
        X = check_in_domain(X, self._radius, "X", clip=self._params["clip"], what="query point(s)")
        return X + 0.0  # −0.0 → +0.0: one point, one key (the kernel does not tell them apart)

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """Private decision values (answers) ``f(x) + σG(x)`` for the rows of ``X``, in order. Thread-safe (serialised).

        Points answered before get their stored answer; new points (up to ``max_exact_queries``
        distinct ones) extend the released path; beyond that, new points get its posterior mean.
        ``X`` must be in memory: a Dask ``X`` is a ``TypeError`` (the answers draw fresh noise in
        query order from the service's one generator; a blockwise map would need a random stream
        per block). A :class:`dpcore.KernelRelease` (e.g. TDDL with ``noise="gp"``) predicts on Dask.

        Examples
        --------
        >>> import numpy as np, dpcore
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(300, 2)); X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        >>> y = np.where(X[:, 0] > 0.5, 1, -1)                  # imbalanced
        >>> svm = dpcore.KernelSVM(lam=0.01, kernel="rbf", gamma=1.0, tol=1e-8).fit(X, y)
        >>> service = dpcore.GPService(svm, 1.0, 1e-6, data_norm=1.0, random_state=0)
        >>> a = service.decision_function(X[:3])
        >>> bool(np.array_equal(a, service.decision_function(X[:3])))   # repeated queries: identical answers
        True
        """
        return self._answers(X)

    def _answers(self, X: ArrayLike) -> np.ndarray:
        """The answers to the rows of ``X`` (shape ``(m,) + _answer_shape``): stored answers for points seen
        before, the released path for new points up to ``max_exact_queries``, the posterior mean beyond.
        Shared by the binary and the K-class service (one code path: one durable state machine)."""
        name = type(self).__name__
        X = self._check_queries(X)
        with self._lock:
            if getattr(self, "_closed", False):
                raise RuntimeError(f"this {name} was closed")
            keys = [row.tobytes() for row in X]
            new, seen = [], set()
            for i, kb in enumerate(keys):
                if kb not in self._index and kb not in seen:
                    seen.add(kb)
                    new.append(i)
            room = self.privacy_.max_exact_queries - self._Q.shape[0]
            exact_new = new[:max(room, 0)]
            # the bar counts the queries of the batch: the new points on the exact path (one block Cholesky
            # step), then the repeated ones and those beyond max_exact_queries (posterior mean)
            with progress_bar(getattr(self, "verbose", False), total=X.shape[0], desc=f"{name} queries",
                              unit="query") as bar:
                if exact_new:
                    self._guarded(lambda: self._answer_and_commit(X[exact_new]), self._snapshot(), self._restore)
                    bar.update(len(exact_new))
                out = np.empty((X.shape[0],) + self._answer_shape)
                rest = []
                for i, kb in enumerate(keys):
                    j = self._index.get(kb)
                    if j is None:
                        rest.append(i)
                    else:
                        out[i] = self._y[j]
                if rest:
                    out[rest] = self._posterior_mean(X[rest])
                bar.update(X.shape[0] - bar.n)
            if len(exact_new) < len(new):
                logger.info("%s: %d new query point(s) beyond max_exact_queries=%d answered by the posterior mean",
                            name, len(new) - len(exact_new), self.privacy_.max_exact_queries)
            self._n_answered += X.shape[0]
            return out

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Predicted labels: ``classes_[1]`` where the private decision value is > ``threshold_``, else
        ``classes_[0]`` (post-processing of :meth:`decision_function`; scikit-learn's convention).

        ``threshold_`` is 0 unless set by :meth:`calibrate_prior`. (Before issue 25 ``predict`` returned the
        decision values; they are :meth:`decision_function`.)

        Examples
        --------
        >>> import numpy as np, dpcore
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(300, 2)); X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        >>> y = np.where(X[:, 0] > 0.5, 1, -1)                  # imbalanced
        >>> svm = dpcore.KernelSVM(lam=0.01, kernel="rbf", gamma=1.0, tol=1e-8).fit(X, y)
        >>> service = dpcore.GPService(svm, 1.0, 1e-6, data_norm=1.0, random_state=0)
        >>> labels = service.predict(X[:6])       # threshold_ = 0 unless calibrate_prior was called
        >>> set(labels.tolist()) <= {-1, 1}
        True
        """
        return decision_labels(self.decision_function(X), self.classes_, getattr(self, "threshold_", 0.0))

    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """Mean accuracy of :meth:`predict` on ``(X, y)`` (the queries are answered like any others: they join
        the released path and use up ``max_exact_queries``).

        Examples
        --------
        >>> import numpy as np, dpcore
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(300, 2)); X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        >>> y = np.where(X[:, 0] > 0, 1, -1)
        >>> svm = dpcore.KernelSVM(lam=0.01, kernel="rbf", gamma=1.0, tol=1e-8).fit(X, y)
        >>> service = dpcore.GPService(svm, 1.0, 1e-6, data_norm=1.0, random_state=0)
        >>> 0.0 <= service.score(X[:50], y[:50]) <= 1.0
        True
        """
        refuse_dask(y, "y", _NO_DASK)
        pred = self.predict(X)
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.shape != pred.shape:
            raise ValueError(f"y must have one label per row of X ({pred.shape[0]}), got shape {y.shape}")
        return float(np.mean(label_agreement(pred, y, self.classes_)))

    def predict_labels(self, X: ArrayLike) -> np.ndarray:
        """Deprecated alias of :meth:`predict` (the labels), kept for code written before issue 25.

        Examples
        --------
        >>> import warnings, numpy as np, dpcore
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(300, 2)); X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        >>> svm = dpcore.KernelSVM(lam=0.01, kernel="rbf", gamma=1.0, tol=1e-8).fit(X, np.where(X[:, 0] > 0, 1, -1))
        >>> service = dpcore.GPService(svm, 1.0, 1e-6, data_norm=1.0, random_state=0)
        >>> with warnings.catch_warnings(record=True) as w:
        ...     warnings.simplefilter("always")
        ...     labels = service.predict_labels(X[:3])
        >>> w[0].category.__name__, bool(np.array_equal(labels, service.predict(X[:3])))
        ('DeprecationWarning', True)
        """
        warnings.warn("GPService.predict_labels is deprecated: predict now returns the labels (scikit-learn's "
                      "convention) and decision_function the private decision values", DeprecationWarning,
                      stacklevel=2)
        return self.predict(X)

    def calibrate_prior(self, proportion: float, points: ArrayLike) -> "GPService":
        """Set ``threshold_`` so that ``classes_[1]`` is predicted on the fraction ``proportion`` of ``points``.

        The imbalance remedy of :meth:`dpcore.KernelRelease.calibrate_prior` for the service: the
        public ``points`` are answered through the service (they join the released path like any
        query, using up to ``len(points)`` of ``max_exact_queries``; no privacy cost beyond the
        service's), and ``threshold_`` is the ``(1 − proportion)``-quantile of those answers — a
        function of released answers and of a *privately released* ``proportion`` (e.g.
        :func:`dpcore.mechanisms.noise.private_proportion`, whose budget the caller accounts for), i.e.
        post-processing. Decision values (:meth:`decision_function`) are unchanged; :meth:`predict` uses
        the threshold. After :meth:`load`, calling it again with the same arguments gives the same
        threshold (the stored answers are returned again).

        Examples
        --------
        >>> import numpy as np, dpcore
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(300, 2)); X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        >>> y = np.where(X[:, 0] > 0.5, 1, -1)                  # imbalanced
        >>> svm = dpcore.KernelSVM(lam=0.01, kernel="rbf", gamma=1.0, tol=1e-8).fit(X, y)
        >>> service = dpcore.GPService(svm, 1.0, 1e-6, data_norm=1.0, random_state=0)
        >>> p = dpcore.mechanisms.private_proportion(y, 1, 0.05, random_state=0)  # its own ε
        >>> public_points = rng.normal(size=(50, 2)) / 3
        >>> service = service.calibrate_prior(p, public_points)
        >>> service.predict(X[:4]).shape
        (4,)
        """
        p = float(proportion)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"proportion must lie in [0, 1], got {proportion!r}")
        refuse_dask(points, "points", _NO_DASK)
        f = self.decision_function(points)
        self.threshold_ = float(np.quantile(f, 1.0 - p)) if f.size else 0.0
        return self

    @property
    def n_distinct(self) -> int:
        """Distinct points on the released exact path."""
        return int(self._Q.shape[0])

    @property
    def n_answered(self) -> int:
        """Answers returned by this object (repeated and posterior-mean answers included)."""
        return self._n_answered

    @property
    def state_seq(self) -> int:
        return self._seq

    # ------------------------------------------------------------------ persistence
    def _factor_hash(self) -> str:
        return hashlib.sha256(np.ascontiguousarray(self._L).tobytes()).hexdigest()

    def _fingerprint_material(self) -> bytes:
        return fingerprint_material(self._info)

    def _state_doc(self) -> dict:
        return dict(params=self._params, calibration=asdict(self.privacy_), dim=int(self._Q.shape[1]),
                    batches=list(self._batches), points=b64(self._Q), xi=b64(self._xi), answers=b64(self._y),
                    factor_sha256=self._factor_hash())

    @classmethod
    def load(cls, state_path: StrPath, model: KernelModel, *, min_seq: Optional[int] = None,
             state_backend: StateBackend = "auto", state_key: StateKeyLike = KEYFILE,
             accountant: Optional[BudgetAccountant] = None, verbose: bool | int = False,
             random_state: RandomState = None) -> "GPService":
        """Resume a service: same model (fingerprint), same calibration, the same factor bit for bit.

        The state file is opened and locked first (a second live session is refused before anything is
        rebuilt), authenticated under ``state_key`` (the key it was created with), and every field is
        validated: the parameters recompute the stored calibration exactly, the model matches the keyed
        fingerprint, the points lie in the domain, the factor is rebuilt bit for bit, and every stored
        answer is checked against the model, the factor and the normals. ``min_seq`` (the last
        :attr:`state_seq` recorded elsewhere) or an ``accountant`` whose ledger recorded this state
        refuse an older copy (:class:`dpcore.StateRollbackError`). ``verbose``: as in the constructor.

        Examples
        --------
        >>> import numpy as np, dpcore
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(300, 2)); X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        >>> y = np.where(X[:, 0] > 0, 1, -1)
        >>> svm = dpcore.KernelSVM(lam=0.01, kernel="rbf", gamma=1.0, tol=1e-8).fit(X, y)
        >>> import os, tempfile
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = os.path.join(tmp.name, "gp.json")
        >>> service = dpcore.GPService(svm, 1.0, 1e-6, data_norm=1.0, state_path=path, random_state=0)
        >>> a = service.predict(X[:3]); seq = service.state_seq; service.close()
        >>> resumed = dpcore.GPService.load(path, svm, min_seq=seq)
        >>> bool(np.array_equal(resumed.predict(X[:3]), a))   # the same path: stored answers again
        True
        >>> resumed.close(); tmp.cleanup()
        """
        check_verbose(verbose)
        store, doc = cls._open_for_load(state_path, state_backend, state_key, min_seq, accountant)
        try:
            self = cls.__new__(cls)
            self._store = None
            self.verbose = verbose
            params = check_params_doc(doc.get("params"), _PARAM_KEYS, store.path)
            self._setup(model, params, random_state)
            self._adopt_loaded(store, doc, accountant)
            if asdict(self.privacy_) != doc.get("calibration"):
                raise ValueError("the recomputed calibration differs from the stored one; refusing to resume")
            self._rebuild(doc, store.path)
        except BaseException:
            store.release()
            raise
        return self

    def _rebuild(self, doc: dict, where: str) -> None:
        """Re-derive the path from a loaded document, validating every field (``load``)."""
        c, d = self.privacy_, self._info["X"].shape[1]
        if doc.get("dim") != d:
            raise StateAuthenticationError(f"{where}: stored dim {doc.get('dim')!r} is not the model's {d}")
        batches = doc.get("batches")
        if (not isinstance(batches, list) or len(batches) > c.max_exact_queries
                or not all(type(m) is int and m > 0 for m in batches) or sum(batches) > c.max_exact_queries):
            raise StateAuthenticationError(f"{where}: stored batches are invalid")
        t = sum(batches)
        Q = unb64(doc.get("points"), "points")
        xi, y = unb64(doc.get("xi"), "xi"), unb64(doc.get("answers"), "answers")
        if Q.size != t * d or xi.size != t or y.size != t:
            raise StateAuthenticationError(f"{where}: stored points/xi/answers do not match the batches ({t} points)")
        Q = Q.reshape(t, d)
        if not (np.isfinite(Q).all() and np.isfinite(xi).all() and np.isfinite(y).all()):
            raise StateAuthenticationError(f"{where}: stored points/xi/answers must be finite")
        check_in_domain(Q, self._radius, "stored points", clip=False, what="stored point(s)")
        if not float(xi @ xi) * (1.0 + gamma_k(t + 1)) <= (math.sqrt(c.max_exact_queries) + XI_NORM_SLACK) ** 2:
            raise StateAuthenticationError(f"{where}: stored normals exceed their public bound")
        start = 0
        for m in batches:
            P = Q[start:start + m]
            L21, L22 = self._extend_factor(P)
            self._append(P, L21, L22, xi[start:start + m], y[start:start + m])
            start += m
        if self._factor_hash() != doc.get("factor_sha256"):
            raise ValueError("the factor recomputed on this machine differs from the one that produced the stored "
                             "answers (different LAPACK/BLAS bits); refusing to continue the path")
        if t:  # every answer is the model's value plus σ·(L̂ξ) plus the stage-2 grid noise (sd σ₂, public bound)
            k = self._kernel
            v = _core.kernel_predict(Q, self._X_sv, self._mu_sv, *kernel_args(k)) \
                if self._X_sv.shape[0] else np.zeros(t)
            gap = np.abs(y - (v + c.noise_scale * (self._L @ xi)))
            bound = 2.0 * c.residual_bound + _ANSWER_CHECK_SDS * c.residual_sigma \
                + 2.0 * math.ldexp(1.0, c.residual_grid_exponent)
            if not np.all(gap <= bound):
                raise StateAuthenticationError(f"{where}: {int(np.sum(~(gap <= bound)))} stored answer(s) do not "
                                               "match the model, the factor and the normals (edited answers)")

    def close(self) -> None:
        if self._store is not None:
            self._store.release()
            self._closed = True

    def __del__(self):
        store = getattr(self, "_store", None)
        if store is not None:
            store.release()

    def __repr__(self) -> str:
        c = self.privacy_
        return (f"GPService(epsilon={c.epsilon:g}, delta={c.delta:g}, sigma={c.noise_scale:.3g}, "
                f"distinct={self.n_distinct}/{c.max_exact_queries})")

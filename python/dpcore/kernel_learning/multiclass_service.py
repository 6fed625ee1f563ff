r"""MulticlassGPService — private K-class predictions, unlimited queries: one lazily sampled GP, K paths (issue 24).

The interactive counterpart of :class:`dpcore.MulticlassTDDL`: a trusted curator holds a certified
:class:`dpcore.MulticlassKernelLogisticRegression` ``F̂ = (f̂_1, …, f̂_K)`` and answers score queries
``F̂(q) + σ(G_1(q), …, G_K(q))`` for as many points as anyone asks, at a one-time cost of ``(ε, δ)``, where
``G_1, …, G_K`` are independent Gaussian processes with the model's (shifted) kernel as covariance.

Mechanism and proof sketch
--------------------------
Everything of :mod:`dpcore.kernel_learning.gp_service` (lazy, consistent sampling by block Cholesky steps,
the public jitter ``τ`` for ``T_max = max_exact_queries`` points, the posterior-mean phase beyond ``T_max``,
the exact stage-2 grid release of the float residual) with **one** factor ``L̂`` over the answered points and
``K`` columns of exact standard normals ``Ξ`` (a ``t × K`` matrix): the answers are
``Y = V + σ L̂ Ξ`` with ``V = (f̂_k(q_j))_{j,k}``.

*Sensitivity.* The columns of ``Y`` are independent ``N(v_k, σ² M)``, ``M = L̂L̂ᵀ ⪰ K_QQ``; whitening every
column by ``M^{-1/2}`` gives one spherical Gaussian mechanism on ``R^{tK}`` whose mean moves between
neighbouring datasets by ``(Σ_k x_kᵀ M⁻¹ x_k)^{1/2} ≤ ||F̂_D − F̂_D'||_{H^K} ≤ Δ = 2 L R_φ'/(λn) + 2 err`` with
``L = √2·max_k w_k`` (Lemmas M1–M4 of docs/privacy.md, "Multi-class kernel releases"; ``err = sqrt(2 tol/λ)``
the public solver error). Adaptive queries: each batch is a Gaussian mechanism on the ``K`` columns of its
conditional block, and the squared whitened sensitivities of the batches add up to at most ``(Δ/σ)²`` on every
path (the Mahalanobis norm splits over the conditional blocks, column by column), so fully adaptive GDP
composition (Smith & Thakurta 2022) makes the whole service ``(Δ/σ)``-GDP, exactly as the binary service:
**the calibration is the binary one with ``L = √2``: per-class noise √2 times the binary service's, for
every K**.

*Floating point.* Per column the computed answers are within the binary service's public ``ρ`` of the
exact stage-1 values on the noise-only event ``||ξ_k|| ≤ sqrt(T_max) + 40`` for every ``k`` (probability
``≥ 1 − K e^{−800}``, checked before anything is released), so the ``T_max × K`` residual is ``≤ √K ρ`` and
the stage-2 exact grid release uses L2 sensitivity ``2√K ρ`` with ``μ₂ = 10⁻³ μ`` (``μ₁² + μ₂² ≤ μ²``).

Durable state (``state_path``, :meth:`load`) exactly as :class:`dpcore.GPService` (sealed, locked, rollback-
checked; the factor rebuilt bit for bit; every stored answer checked against the model, the factor and the
normals), with the ``t × K`` normals and answers and its own state format (a binary state is never loaded as a
K-class one, nor the reverse). **The state file is as secret as the training data.** The class-prior remedy
(``calibrate_prior``) is binary-only.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass
from typing import NoReturn

import numpy as np
from scipy import linalg

from dpcore import _core
from dpcore._internal.fp import UNIT_ROUNDOFF, gamma_k
from dpcore._internal.validation import check_array, check_count, check_delta, check_epsilon, check_positive
from dpcore.exceptions import NotFittedError, StateAuthenticationError
from dpcore.kernel_learning._model import (
    RADIUS_TOL, check_in_domain, fitted_lam, kernel_eval_error, prediction_fp_bound, public_error_bound,
    unb64,
)
from dpcore.kernel_learning.gp import XI_GRID_EXPONENT, XI_NORM_SLACK
from dpcore.kernel_learning.gp_service import (
    _ANSWER_CHECK_SDS, GPService, GPServiceCalibration, _service_calibration,
)
from dpcore.kernel_learning.multiclass import MulticlassKernelLogisticRegression
from dpcore.kernel_learning.multiclass_release import check_multiclass_tol
from dpcore.kernels.evaluation import kernel_args
from dpcore.mechanisms.noise import check_random_state
from dpcore._internal.types import ArrayLike

logger = logging.getLogger(__name__)

__all__ = ["MulticlassGPService", "MulticlassGPServiceCalibration"]

_STATE_FORMAT_K = "dpcore.gp_service.multiclass.state/1"


@dataclass(frozen=True)
class MulticlassGPServiceCalibration(GPServiceCalibration):
    """Every public number of a :class:`MulticlassGPService` (as :class:`dpcore.GPServiceCalibration`, with
    ``lipschitz = √2·max_k w_k``, ``residual_bound`` the ``√K ρ`` of all K columns, and ``n_classes``).

    Examples
    --------
    >>> import numpy as np, dpcore
    >>> X = np.array([[0.5], [-0.5], [0.0]]); y = [0, 1, 2]
    >>> m = dpcore.MulticlassKernelLogisticRegression(lam=0.1, classes=[0, 1, 2], tol=1e-8).fit(X, y)
    >>> cal = dpcore.MulticlassGPService(m, 1.0, 1e-6, data_norm=1.0, random_state=0).privacy_
    >>> cal.n_classes, round(cal.lipschitz ** 2, 12)
    (3, 2.0)
    """

    n_classes: int = 2


class MulticlassGPService(GPService):
    """Private K-class scores, unlimited queries, one ``(ε, δ)``: one GP factor, K noise paths (module docstring).

    Parameters
    ----------
    model : MulticlassKernelLogisticRegression
        Fitted and certified (public ``tol``), ideally at
        ``lam = multiclass_auto_lam(n, ε, δ, data_norm=...)``.
    epsilon, delta : float
        The guarantee of the whole service, whatever is asked (ε > 0, 0 < δ < 1).
    data_norm : float
        Public bound on ``||x||`` of every training point and every query.
    max_exact_queries : int, default 10_000
        Distinct points answered with fresh GP noise (``8·max_exact_queries²`` bytes for the factor);
        afterwards new points get the posterior mean of the released paths (post-processing).
    ridge : float, optional
        Ridge of the posterior-mean phase (default ``1e-6·R_φ'² + τ``).
    clip : bool, default False
        Project queries outside the ball onto it instead of raising ``ValueError``.
    state_path, state_backend, state_key : optional
        Durable state, as :class:`dpcore.GPService` (resume with :meth:`load`). **The state file is as secret as
        the training data** (it holds the exact normals next to the answers).
    verbose : bool or int, default=False
        Progress bar of :meth:`predict` (queries of the batch); curator only.
    random_state : None, int or ChaChaRng
        ``None`` (default): OS-seeded ChaCha20; an int: reproducible (research/tests only).
    accountant : BudgetAccountant, optional
        Charged ``(ε, δ)`` once, at construction (after every validation).

    Attributes
    ----------
    privacy_ : MulticlassGPServiceCalibration
    classes_ : ndarray of shape (K,)
    dp_event_ : the ``μ``-GDP event charged.

    Examples
    --------
    >>> import numpy as np, dpcore
    >>> rng = np.random.default_rng(0)
    >>> centers = np.array([[0.5, 0.0], [-0.25, 0.43], [-0.25, -0.43]])
    >>> y = rng.integers(0, 3, size=2000)
    >>> X = np.clip(centers[y] + 0.1 * rng.standard_normal((2000, 2)), -0.7, 0.7)
    >>> lam = dpcore.multiclass_auto_lam(2000, 2.0, 1e-6, data_norm=1.0)
    >>> m = dpcore.MulticlassKernelLogisticRegression(lam=lam, gamma=2.0, classes=[0, 1, 2], tol=1e-6).fit(X, y)
    >>> service = dpcore.MulticlassGPService(m, 2.0, 1e-6, data_norm=1.0, random_state=0)
    >>> s = service.decision_function(X[:5])                           # private (m, K) scores
    >>> s.shape, bool(np.array_equal(s, service.decision_function(X[:5])))  # repeated queries: the same answers
    ((5, 3), True)
    >>> service.score(X[:300], y[:300]) > 0.8                          # accuracy of predict (the labels)
    True
    """

    _WHO = "MulticlassGPService"
    #: A K-class state is never loaded as a binary one (nor the reverse).
    _STATE_FORMAT = _STATE_FORMAT_K

    # ------------------------------------------------------------------ setup and calibration
    def _setup(self, model, params: dict, random_state) -> None:
        self._lock = threading.Lock()
        self._seq = None
        m = model
        if not isinstance(m, MulticlassKernelLogisticRegression) and not getattr(m, "_multiclass_stand_in", False):
            raise TypeError(f"model must be a MulticlassKernelLogisticRegression, got {type(m).__name__} (binary "
                            "models: dpcore.GPService)")
        if not hasattr(m, "mu_"):
            raise NotFittedError("MulticlassGPService: the model is not fitted yet; call model.fit(X, y) first")
        clip = params["clip"]
        if not isinstance(clip, (bool, np.bool_)):
            raise TypeError(f"clip must be a bool, got {type(clip).__name__}")
        epsilon = check_epsilon(params["epsilon"])
        delta = check_delta(params["delta"], allow_zero=False)
        r = check_positive(params["data_norm"], "data_norm")
        T_max = check_count(params["max_exact_queries"], "max_exact_queries", bytes_per_unit=0)
        check_count(T_max, "max_exact_queries", bytes_per_unit=8 * T_max)  # the factor: 8·T_max² bytes
        X = np.ascontiguousarray(check_array(m.X_fit_, "model.X_fit_"), dtype=np.float64)
        mu = np.ascontiguousarray(np.asarray(m.mu_, dtype=np.float64))
        if mu.ndim != 2 or mu.shape[0] != X.shape[0] or mu.shape[1] < 2 or not np.isfinite(mu).all():
            raise ValueError(f"model.mu_ must be a finite (n, K) array with K >= 2, got shape {mu.shape}")
        k = dict(m.kernel_params_)
        r_eff = r * (1.0 + RADIUS_TOL)
        r2 = _core.feature_map_radius_sq(r_eff, *kernel_args(k))
        X = check_in_domain(X, r, "model.X_fit_", clip=False)
        n, lam, K, d = int(m.n_samples_fit_), float(fitted_lam(m)), mu.shape[1], X.shape[1]
        w_max = float(m.lipschitz_) / math.sqrt(2.0)  # lipschitz_ = √2·max_k w_k
        L = math.sqrt(2.0) * w_max
        check_multiclass_tol(m, w_max=w_max, r_phi_sq=r2, lam=lam, n_classes=K)
        err = public_error_bound(m, lam, "MulticlassGPService", r_phi_sq=r2, lipschitz=L)
        l1 = np.abs(mu).sum(axis=0)
        if not np.all(l1 <= (w_max / lam) * (1.0 + 1e-9)):
            raise ValueError(f"model.mu_ has a class with sum_i |mu_ik| = {float(l1.max()):.6g} > max_w/lam = "
                             f"{w_max / lam:.6g}: not the dual solution of the multinomial problem")
        fp = prediction_fp_bound(n=n, mu_l1_bound=w_max / lam, r_phi_sq=r2, kernel=k, radius=r_eff, d=d)
        e_k = kernel_eval_error(k, r_eff, d) + 2.0 * UNIT_ROUNDOFF * r2
        cal = _service_calibration(epsilon=epsilon, delta=delta, n=n, lam=lam, lipschitz=L, r2=r2, err=err, fp=fp,
                                   e_k=e_k, T_max=T_max, value_bound=(w_max / lam) * r2 + fp, n_paths=K,
                                   ridge=params["ridge"], sensitivity_factor=self._sensitivity_factor)
        self.privacy_ = MulticlassGPServiceCalibration(
            epsilon=epsilon, delta=delta, n=n, lam=lam, lipschitz=L, w_error_bound=err, max_exact_queries=T_max,
            prediction_fp_error=fp, n_classes=K, **cal)
        self._rng = check_random_state(random_state)
        self.classes_ = np.asarray(m.classes_)
        self._K = K
        self._info = dict(X=X, mu=mu, n=n, lam=lam, L=L, kernel=k, w_err=float(m.w_error_bound_))
        self._radius, self._kernel, self._e_k, self._r2 = r, k, e_k, r2
        self._params = dict(params, epsilon=epsilon, delta=delta, data_norm=r, max_exact_queries=T_max,
                            ridge=params["ridge"])
        sv = np.any(mu != 0.0, axis=1)
        self._X_sv = np.ascontiguousarray(X[sv])
        self._mu_sv = np.ascontiguousarray(mu[sv])
        self._Q = np.zeros((0, d))
        self._buf = np.zeros((0, 0))
        self._s2 = 0.0
        self._xi = np.zeros((0, K))
        self._y = np.zeros((0, K))
        self._batches: list = []
        self._index: dict = {}
        self._n_answered = 0
        self._posterior = None

    # ------------------------------------------------------------------ the K paths
    def _values(self, P: np.ndarray) -> np.ndarray:
        """Non-private scores ``(m, K)`` of the model at ``P``: one pass of the kernel engine for all ``K`` classes
        (``_core.kernel_predict_many``: each kernel block evaluated once; the engine's documented accuracy, which
        ``prediction_fp_error`` covers)."""
        if not self._X_sv.shape[0]:
            return np.zeros((P.shape[0], self._K))
        mus = np.ascontiguousarray(self._mu_sv.T)
        return np.ascontiguousarray(_core.kernel_predict_many(np.ascontiguousarray(P), self._X_sv, mus,
                                                              *kernel_args(self._kernel)).T)

    def _check_xi(self, xi: np.ndarray) -> None:
        """The noise-only event of the float residual bound, per path (``xi``: ``(..., t, K)``)."""
        t = xi.shape[-2]
        bound = (math.sqrt(self.privacy_.max_exact_queries) + XI_NORM_SLACK) ** 2
        if not np.all(np.einsum("...tk,...tk->...k", xi, xi) * (1.0 + gamma_k(t + 1)) <= bound):
            raise RuntimeError("MulticlassGPService: ||xi_k|| exceeded its public bound (probability < 1e-300); "
                               "nothing released")

    def _answer_new(self, P: np.ndarray) -> np.ndarray:
        c, K, m = self.privacy_, self._K, P.shape[0]
        L21, L22 = self._extend_factor(P)
        xi_new = np.asarray(_core.analytic_release(np.zeros(m * K), 1.0, XI_GRID_EXPONENT, self._rng),
                            dtype=np.float64).reshape(m, K)
        self._check_xi(np.vstack([self._xi, xi_new]))
        noise = c.noise_scale * (L21 @ self._xi + L22 @ xi_new)
        y_new = np.asarray(_core.analytic_release(np.ascontiguousarray(self._values(P) + noise).ravel(),
                                                  c.residual_sigma, c.residual_grid_exponent, self._rng),
                           dtype=np.float64).reshape(m, K)
        self._append(P, L21, L22, xi_new, y_new)
        return y_new

    def _posterior_mean(self, P: np.ndarray) -> np.ndarray:
        if self._Q.shape[0] == 0:
            return np.zeros((P.shape[0], self._K))
        if self._posterior is None:
            A = self._kern(self._Q, self._Q)
            A = 0.5 * (A + A.T)
            A[np.diag_indices(A.shape[0])] += self.privacy_.ridge
            self._posterior = linalg.cho_solve(linalg.cho_factor(A, lower=True), self._y)
        out = np.empty((P.shape[0], self._K))
        for j in range(self._K):
            out[:, j] = _core.kernel_predict(P, self._Q, np.ascontiguousarray(self._posterior[:, j]),
                                             *kernel_args(self._kernel))
        return out

    def _sample_sessions(self, X, n_samples: int, random_state) -> np.ndarray:
        """``n_samples`` independent fresh sessions answering ``X``: shape ``(n_samples, len(X), K)`` (audits)."""
        X = self._check_queries(X)
        keys = [row.tobytes() for row in X]
        first: dict = {}
        for kb in keys:
            first.setdefault(kb, len(first))
        order = sorted(first, key=first.get)
        P = np.vstack([X[keys.index(kb)] for kb in order])[: self.privacy_.max_exact_queries]
        saved = (self._Q, self._buf)
        self._Q, self._buf = np.zeros((0, X.shape[1])), np.zeros((0, 0))
        try:
            _, L = self._extend_factor(P)
        finally:
            self._Q, self._buf = saved
        c, m, K = self.privacy_, P.shape[0], self._K
        rng = check_random_state(random_state)
        xi = np.asarray(_core.analytic_release(np.zeros(m * K), 1.0, XI_GRID_EXPONENT, rng, int(n_samples)),
                        dtype=np.float64).reshape(-1, m, K)
        self._check_xi(xi)
        y = self._values(P)[None] + c.noise_scale * np.einsum("ij,sjk->sik", L, xi)
        y = np.asarray(_core.analytic_release(np.ascontiguousarray(y).ravel(), c.residual_sigma,
                                              c.residual_grid_exponent, rng), dtype=np.float64).reshape(-1, m, K)
        return y[:, [first[kb] for kb in keys], :]

    # ------------------------------------------------------------------ public API
    @property
    def _answer_shape(self) -> tuple:
        return (self._K,)

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """Private scores ``F̂(x) + σG(x)`` of shape ``(m, K)`` (columns as ``classes_``), in order.

        Points answered before get their stored answers; new points (up to ``max_exact_queries`` distinct
        ones) extend the K released paths; beyond that, new points get their posterior mean. Thread-safe.
        (The answer loop and its durable state are :class:`GPService`'s, shared.)

        Examples
        --------
        >>> import numpy as np, dpcore
        >>> X = np.array([[0.5], [-0.5], [0.0]]); y = [0, 1, 2]
        >>> m = dpcore.MulticlassKernelLogisticRegression(lam=0.1, classes=[0, 1, 2], tol=1e-8).fit(X, y)
        >>> dpcore.MulticlassGPService(m, 1.0, 1e-6, data_norm=1.0, random_state=0).decision_function(X).shape
        (3, 3)
        """
        return self._answers(X)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Labels ``classes_[argmax_k]`` of the private scores (post-processing of :meth:`decision_function`;
        ties: the first class), scikit-learn's convention as for :class:`GPService`.

        Examples
        --------
        >>> import numpy as np, dpcore
        >>> X = np.array([[0.5], [-0.5], [0.0]]); y = ["a", "b", "c"]
        >>> m = dpcore.MulticlassKernelLogisticRegression(lam=0.1, classes=y, tol=1e-8).fit(X, y)
        >>> labels = dpcore.MulticlassGPService(m, 1.0, 1e-6, data_norm=1.0, random_state=0).predict(X)
        >>> set(labels.tolist()) <= {"a", "b", "c"}
        True
        """
        return self.classes_[np.argmax(self.decision_function(X), axis=1)]

    def calibrate_prior(self, proportion: float, points: ArrayLike) -> NoReturn:
        """Not offered for K classes (the binary threshold remedy has no K-class counterpart here yet).

        Raises
        ------
        NotImplementedError
            Always.
        """
        raise NotImplementedError("MulticlassGPService.calibrate_prior: the class-prior remedy is binary-only for "
                                  "now (GPService.calibrate_prior)")

    # ------------------------------------------------------------------ persistence (as GPService, K columns)
    def _rebuild(self, doc: dict, where: str) -> None:
        """Re-derive the K paths from a loaded document, validating every field (:meth:`load`)."""
        c, d, K = self.privacy_, self._info["X"].shape[1], self._K
        if doc.get("dim") != d:
            raise StateAuthenticationError(f"{where}: stored dim {doc.get('dim')!r} is not the model's {d}")
        batches = doc.get("batches")
        if (not isinstance(batches, list) or len(batches) > c.max_exact_queries
                or not all(type(m) is int and m > 0 for m in batches) or sum(batches) > c.max_exact_queries):
            raise StateAuthenticationError(f"{where}: stored batches are invalid")
        t = sum(batches)
        Q = unb64(doc.get("points"), "points")
        xi, y = unb64(doc.get("xi"), "xi"), unb64(doc.get("answers"), "answers")
        if Q.size != t * d or xi.size != t * K or y.size != t * K:
            raise StateAuthenticationError(f"{where}: stored points/xi/answers do not match the batches ({t} points, "
                                           f"{K} classes)")
        Q, xi, y = Q.reshape(t, d), xi.reshape(t, K), y.reshape(t, K)
        if not (np.isfinite(Q).all() and np.isfinite(xi).all() and np.isfinite(y).all()):
            raise StateAuthenticationError(f"{where}: stored points/xi/answers must be finite")
        check_in_domain(Q, self._radius, "stored points", clip=False, what="stored point(s)")
        try:
            self._check_xi(xi)
        except RuntimeError:
            raise StateAuthenticationError(f"{where}: stored normals exceed their public bound") from None
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
            gap = np.abs(y - (self._values(Q) + c.noise_scale * (self._L @ xi)))
            bound = 2.0 * c.residual_bound + _ANSWER_CHECK_SDS * c.residual_sigma \
                + 2.0 * math.ldexp(1.0, c.residual_grid_exponent)
            if not np.all(gap <= bound):
                raise StateAuthenticationError(f"{where}: {int(np.sum(~(gap <= bound)))} stored answer(s) do not "
                                               "match the model, the factor and the normals (edited answers)")

    def __repr__(self) -> str:
        c = self.privacy_
        return (f"MulticlassGPService(epsilon={c.epsilon:g}, delta={c.delta:g}, K={c.n_classes}, "
                f"sigma={c.noise_scale:.3g}, distinct={self.n_distinct}/{c.max_exact_queries})")

r"""TDDL — test-data-dependent private release of a kernel model (Jain & Thakurta 2013, Alg. 2).

See :class:`TDDL` for the mechanism, both noise calibrations, the norm bounds and the proofs.
"""

from __future__ import annotations

import hashlib
import logging
import json
import math
import numbers
import warnings
from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Any, Optional, Dict, Literal, Tuple, Union, TYPE_CHECKING

import numpy as np
from scipy import linalg, optimize

from dpcore import _core
from dpcore.kernels.evaluation import kernel_args
from dpcore.kernel_learning._model import (
    RADIUS_TOL, SLACK, UNIT_ROUNDOFF, model_info, check_in_domain, check_mu_l1, kernel_eval_error,
    prediction_fp_bound, public_error_bound,
)
from dpcore._internal.validation import check_array, check_delta, check_epsilon, check_positive, check_probability
from dpcore.accounting.calibrate import gaussian_sigma_analytic, per_step_epsilon
from dpcore.kernel_learning.gp import gp_factor as _gp_factor
from dpcore.kernel_learning.gp import GPFactor, gp_noise, gp_residual_bound
from dpcore.mechanisms.noise import grid_release, check_random_state, gaussian_plan, laplace_plan
from dpcore.kernel_learning.release import KernelRelease, ReleasingEstimator
from dpcore._internal.types import ArrayLike, Self, KernelModel, RandomState
from dpcore._internal.progress import check_verbose, progress_bar

if TYPE_CHECKING:
    from dpcore.accounting import BudgetAccountant

logger = logging.getLogger(__name__)

__all__ = ["TDDL", "TDDLCalibration", "tddl_calibration", "ball_constrained_lstsq", "loss_at_zero"]

#: ``ℓ(0; y)`` of the supported losses: bounds ``||w*|| ≤ sqrt(2 ℓ(0)/λ)`` (``J(w*) ≤ J(0)``).
_LOSS_AT_ZERO = {"hinge": 1.0, "logistic": math.log(2.0)}


#: Noise variants of :class:`TDDL`.
_NOISES = ("gp", "gaussian", "laplace")
#: Share of (ε, δ) given to the exact stage-2 release that covers the GP path's float residual.
_GP_RESIDUAL_SHARE = 1e-3


def loss_at_zero(model: KernelModel) -> Optional[float]:
    """``ℓ(0; y)`` for dpcore's kernel ERM estimators (``None`` if the loss is unknown)."""
    return _LOSS_AT_ZERO.get(getattr(model, "_loss", None))


@dataclass(frozen=True)
class TDDLCalibration:
    """Every number of a TDDL calibration (see :class:`TDDL` for the formulas).

    ``weight_sensitivity`` bounds ``||w_G − w_G'||`` for the models actually used (exact bound plus
    twice the public solver error); ``sensitivity`` is the per-coordinate sensitivity (Laplace) or
    the L2 sensitivity of the prediction vector (Gaussian) the noise is calibrated for;
    ``noise_scale`` is the Laplace scale ν or the Gaussian σ per coordinate.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import KernelSVM
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.7, 0.7, size=(2000, 2))      # every row in the unit ball
    >>> y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    >>> svm = KernelSVM(lam=1e-3, kernel="rbf", gamma=5.0, tol=1e-8).fit(X, y)
    >>> from dpcore import TDDL
    >>> Z = rng.uniform(-0.7, 0.7, size=(100, 2))
    >>> cal = TDDL(svm, 1.0, 1e-6, data_norm=1.0, noise="gaussian", random_state=0).fit(Z).privacy_
    >>> cal.noise, cal.n, cal.n_points, cal.epsilon
    ('gaussian', 2000, 100, 1.0)
    """

    noise: str
    n: int
    lam: float
    lipschitz: float
    r_phi: float
    n_points: int
    epsilon: float
    delta: float
    epsilon_predictions: float
    epsilon_norm: float
    w_error_bound: float
    fp_error: float
    weight_sensitivity: float
    lambda_max_upper: float
    sensitivity: float
    epsilon_per_point: float
    noise_scale: float
    grid_exponent: int
    noise_method: str
    norm_bound_mode: str
    norm_bound_public: float
    norm_sensitivity: float
    norm_noise_scale: float
    norm_beta: float
    gp_jitter: float = math.nan
    gp_jitter_margin: float = math.nan
    gp_residual_bound: float = math.nan
    gp_residual_sigma: float = math.nan
    epsilon_residual: float = 0.0
    delta_residual: float = 0.0


def _gaussian_lambda_max_upper(lam_max_computed: float, T: int, r_phi_sq: float, e_k: float) -> float:
    """Upper bound on ``λ_max(K_ZZ)`` from LAPACK's computed value.

    Privacy assumption named here: the symmetric eigensolver is backward stable, i.e. its
    eigenvalues are exact for ``K̂ + E`` with ``||E||₂ ≤ 16·T·u·||K̂||₂`` (LAPACK ``dsyevd``; the
    usual constant is a small multiple of T), and ``||K̂ − K||₂ ≤ T·e_K`` for the float kernel matrix
    ``K̂``. With ``||K̂||₂ ≤ T(R_φ² + e_K)`` Weyl's inequality gives the bound below.
    """
    norm_up = T * (r_phi_sq + e_k)
    return (max(lam_max_computed, 0.0) + 16.0 * T * UNIT_ROUNDOFF * norm_up + T * e_k) * (1.0 + SLACK)


def tddl_calibration(
    *,
    n: int,
    lam: float,
    lipschitz: float,
    r_phi_sq: float,
    w_error_bound: float,
    fp_error: float,
    epsilon: float,
    delta: float,
    n_points: int,
    noise: str = "gaussian",
    lambda_max_upper: Optional[float] = None,
    norm_bound: str = "public",
    norm_bound_public: float = math.inf,
    norm_epsilon_share: float = 0.1,
    norm_fp_error: float = 0.0,
    norm_beta: float = 0.01,
    sensitivity_factor: float = 1.0,
    gp_factor: Optional[GPFactor] = None,
    value_bound: float = math.inf,
) -> TDDLCalibration:
    """Calibrate TDDL (see :class:`TDDL`). Pure function of public quantities.

    ``sensitivity_factor`` exists only for tests building deliberately broken copies; it must be 1.
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"n (the model's n_samples_fit_) must be a positive integer, got {n!r}")
    if isinstance(n_points, bool) or not isinstance(n_points, numbers.Integral) or n_points < 1:
        raise ValueError(f"n_points (rows of Z) must be a positive integer, got {n_points!r}")
    if noise not in _NOISES:
        raise ValueError(f"noise must be one of {_NOISES}, got {noise!r}")
    if norm_bound not in ("public", "private", "declared"):
        raise ValueError(f"norm_bound mode must be 'public', 'private' or 'declared', got {norm_bound!r}")
    n, T = int(n), int(n_points)
    lam = check_positive(lam, "lam")
    L = check_positive(lipschitz, "lipschitz")
    r2 = check_positive(r_phi_sq, "r_phi_sq")
    for value, name in ((w_error_bound, "w_error_bound"), (fp_error, "fp_error"), (norm_fp_error, "norm_fp_error")):
        if not (isinstance(value, numbers.Real) and math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    R = math.sqrt(r2)
    dw = (2.0 * L * R / (lam * n) * (1.0 + SLACK) + 2.0 * w_error_bound) * (1.0 + SLACK)

    # -- optional private norm bound: a share of ε spent on ||w||.
    eps_norm, s_norm, b_norm = 0.0, 0.0, 0.0
    if norm_bound == "private":
        share = check_probability(norm_epsilon_share, "norm_epsilon_share")
        norm_beta = check_probability(norm_beta, "norm_beta")
    if noise == "gp":
        norm_bound = "none"  # the GP release interpolates; no norm bound is estimated or spent on
    if norm_bound == "private":
        eps_norm = epsilon * share
        s_norm = (dw + 2.0 * norm_fp_error) * (1.0 + SLACK) * sensitivity_factor
        b_norm = laplace_plan(s_norm, eps_norm).scale
    eps_pred = (epsilon - eps_norm) * (1.0 - SLACK)

    gp = {}
    if noise == "gp":
        if gp_factor is None:
            raise ValueError("the GP calibration needs the public Cholesky factor of K_ZZ (gp_factor)")
        lam_up, eps_point = math.nan, math.nan
        # stage 1: the RKHS Gaussian mechanism, sensitivity ||ŵ_D − ŵ_D'||_H ≤ Δw (dpcore.kernel_learning.gp, Lemma 2)
        eps1, delta1 = eps_pred * (1.0 - _GP_RESIDUAL_SHARE), delta * (1.0 - _GP_RESIDUAL_SHARE)
        eps2, delta2 = eps_pred * _GP_RESIDUAL_SHARE * (1.0 - SLACK), delta * _GP_RESIDUAL_SHARE * (1.0 - SLACK)
        sens = dw * sensitivity_factor
        scale = gaussian_sigma_analytic(sens, eps1, delta1)
        # stage 2: exact grid release covering the float residual ρ (dpcore.kernel_learning.gp, Lemma 3)
        rho = gp_residual_bound(T=T, sigma=scale, row_norm_max=gp_factor.row_norm_max,
                                prediction_error=fp_error, value_bound=value_bound)
        plan = gaussian_plan(2.0 * rho, eps2, delta2, dim=T)
        exponent, method = plan.grid_exponent, "gp-analytic"
        gp = dict(gp_jitter=gp_factor.tau, gp_jitter_margin=gp_factor.margin, gp_residual_bound=rho,
                  gp_residual_sigma=plan.sigma, epsilon_residual=eps2, delta_residual=delta2)
    elif noise == "laplace":
        lam_up = math.nan
        sens = (R * dw + 2.0 * fp_error) * (1.0 + SLACK) * sensitivity_factor
        eps_point = per_step_epsilon(eps_pred, T, delta) if T > 1 else eps_pred
        plan = laplace_plan(sens, eps_point, dim=1)
        scale, exponent, method = plan.scale, plan.grid_exponent, "laplace-grid"
    else:
        if lambda_max_upper is None or not (math.isfinite(lambda_max_upper) and lambda_max_upper > 0):
            raise ValueError(f"the Gaussian calibration needs lambda_max_upper > 0, got {lambda_max_upper!r}")
        lam_up = float(lambda_max_upper)
        sens = (math.sqrt(lam_up) * dw + 2.0 * math.sqrt(T) * fp_error) * (1.0 + SLACK) * sensitivity_factor
        eps_point = math.nan
        plan = gaussian_plan(sens, eps_pred, delta, dim=T)
        scale, exponent = plan.sigma, plan.grid_exponent
        method = "gaussian-" + str(getattr(plan, "method", "zcdp"))
    return TDDLCalibration(
        noise=noise, n=n, lam=lam, lipschitz=L, r_phi=R, n_points=T, epsilon=epsilon, delta=delta,
        epsilon_predictions=eps_pred, epsilon_norm=eps_norm, w_error_bound=float(w_error_bound),
        fp_error=float(fp_error), weight_sensitivity=dw, lambda_max_upper=lam_up, sensitivity=sens,
        epsilon_per_point=eps_point, noise_scale=scale, grid_exponent=exponent, noise_method=method,
        norm_bound_mode=norm_bound, norm_bound_public=float(norm_bound_public),
        norm_sensitivity=s_norm, norm_noise_scale=b_norm, norm_beta=float(norm_beta), **gp,
    )


def _tddl_event(cal: "TDDLCalibration"):
    """dp_accounting event of a TDDL release (:mod:`dpcore.accounting.events`).

    ``noise="gp"``: stage 1 (RKHS Gaussian, sensitivity Δ, σ) and stage 2 (exact analytic Gaussian on the
    float residual, sensitivity 2ρ, σ₂) compose to ``hypot(Δ/σ, 2ρ/σ₂)``-GDP (as in
    :mod:`dpcore.kernel_learning.selection`). ``"gaussian"`` with the analytic plan: one Gaussian of
    multiplier σ/Δ on T points, after the private norm bound's ε-DP Laplace if any. Otherwise (Laplace over
    T points by advanced composition, or the zCDP plan) the declared (ε, δ).
    """
    from dpcore.accounting.events import compose_events, epsilon_delta_event, gaussian_event, gdp_event

    if cal.noise == "gp":
        mu = math.hypot(cal.sensitivity / cal.noise_scale, 2.0 * cal.gp_residual_bound / cal.gp_residual_sigma)
        return gdp_event(mu * (1.0 + 1e-12))
    if cal.noise_method == "gaussian-analytic":
        event = gaussian_event(cal.noise_scale, cal.sensitivity)
        return compose_events(epsilon_delta_event(cal.epsilon_norm), event) if cal.epsilon_norm > 0 else event
    return epsilon_delta_event(cal.epsilon, cal.delta)


def ball_constrained_lstsq(K: np.ndarray, y: np.ndarray, radius: float, *,
                           eig: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> Tuple[np.ndarray, Dict[str, Any]]:
    r"""Exact ``argmin_{||w|| ≤ radius} Σ_t (<w, φ(z_t)> − y_t)²`` in representer form ``w = Σ_t α_t φ(z_t)``.

    Only the component of ``w`` in ``span φ(Z)`` changes the objective, and the orthogonal part only
    adds norm, so the minimiser lies in the span. With ``K = U Λ Uᵀ`` and ``c = Uᵀ y``, writing ``w``
    in the orthonormal basis ``e_j = Φᵀ u_j / sqrt(λ_j)`` gives coordinates ``β_j`` with objective
    ``Σ_j (sqrt(λ_j) β_j − c_j)²`` and ``||w||² = Σ β_j²``. The KKT conditions give
    ``β_j = sqrt(λ_j) c_j / (λ_j + ρ)``, i.e. ``α = U (Λ + ρ I)^{-1} c``, with ``ρ = 0`` if the
    minimum-norm least-squares solution has norm ``≤ radius`` and otherwise the unique ``ρ > 0``
    with ``Σ_j λ_j c_j² / (λ_j + ρ)² = radius²`` (strictly decreasing in ρ; solved by Brent's
    method to machine precision). Eigenvalues below ``T·u·λ_max`` are treated as zero (their
    directions carry no signal; ``numpy.linalg.lstsq``'s cut-off).

    Returns
    -------
    alpha : ndarray (T,)
    info : dict with ``rho``, ``norm`` (``||w||``), ``constrained`` (bool), ``rank``.
    """
    K = np.asarray(K, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).ravel()
    T = y.shape[0]
    if K.shape != (T, T):
        raise ValueError(f"K must be ({T}, {T}), got {K.shape}")
    if not (math.isfinite(radius) or radius == math.inf) or radius < 0:
        raise ValueError(f"radius must be >= 0, got {radius!r}")
    lam, U = eig if eig is not None else linalg.eigh(K)
    cut = max(T, 1) * UNIT_ROUNDOFF * 2.0 * max(float(lam.max()), 0.0)
    keep = lam > cut
    lam_k, U_k = lam[keep], U[:, keep]
    c = U_k.T @ y
    rank = int(keep.sum())

    def sq_norm(rho: float) -> float:
        return float(np.sum(lam_k * c * c / (lam_k + rho) ** 2))

    rho, constrained = 0.0, False
    if rank == 0 or radius == 0.0:
        return np.zeros(T), dict(rho=math.inf, norm=0.0, constrained=True, rank=rank)
    if sq_norm(0.0) > radius * radius:
        constrained = True
        f = lambda r: sq_norm(r) - radius * radius  # noqa: E731
        hi = max(float(lam_k.max()), 1e-300)
        while f(hi) > 0:
            hi *= 4.0
        rho = optimize.brentq(f, 0.0, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
        # make sure the constraint holds (Brent may land a hair below the root)
        while sq_norm(rho) > radius * radius:
            rho = rho * (1 + 1e-15) + 1e-300
    alpha = U_k @ (c / (lam_k + rho))
    return alpha, dict(rho=float(rho), norm=math.sqrt(sq_norm(rho)), constrained=constrained, rank=rank)


def _interpolate(K: np.ndarray, y: np.ndarray, ridge: float, cache: Optional[dict] = None):
    """``α = (K + ridge·I)^{-1} y``: coefficients whose kernel expansion reproduces the released ``y`` on
    ``Z`` up to the ridge (the GP posterior mean given the released path). Post-processing.

    ``cache`` (a caller's ``_factor_cache``: several releases over one public ``K``) keeps the Cholesky factor of
    ``K + ridge·I`` — a function of public values only — for the next release with this very ``K`` and ridge."""
    T = K.shape[0]
    key = ("cholesky", id(K), float(ridge))
    hit = cache.get(key) if cache is not None else None
    if hit is not None and hit[0] is K:
        cf = hit[1]
    else:
        A = 0.5 * (K + K.T)
        A[np.diag_indices(T)] += ridge
        cf = linalg.cho_factor(A, lower=True)
        if cache is not None:
            cache[key] = (K, cf)
    alpha = linalg.cho_solve(cf, np.asarray(y, dtype=np.float64))
    return alpha, dict(ridge=float(ridge), constrained=False, rho=float(ridge),
                       norm=math.sqrt(max(0.0, float(alpha @ (K @ alpha)))), rank=T)


class BatchPredictions:
    """``K(Z, X) μ_m`` of several fitted kernel models on one training set (a regularisation path), computed for all
    of them in one pass of the kernel engine the first time one is asked for: each kernel block is evaluated once
    for every ``μ_m`` (``_core.kernel_predict_many``, the engine's documented accuracy
    ``KERNEL_SUM_REL_ERROR``, which :func:`prediction_fp_bound` covers exactly as for ``kernel_predict``).

    Set as ``tddl._batch_predictions`` by :class:`~dpcore.kernel_learning.selection.PrivateGridSearch`: a
    release's clean predictions are the same deterministic function of its model and ``Z`` (up to rounding
    within the bound), computed earlier and together; nothing observable changes. A model, ``Z`` or kernel that
    is not the batch's is computed alone, as without the batch.
    """

    def __init__(self, models: list) -> None:
        self._models = list(models)
        X = self._models[0].X_fit_
        # one training set and one kernel for all (a path's models copy the same rows); else no batching
        self._shared = all(m.X_fit_ is X or np.array_equal(m.X_fit_, X) for m in self._models[1:]) and all(
            m.kernel_params_ == self._models[0].kernel_params_ for m in self._models[1:])
        self._key: Optional[tuple] = None
        self._values: Optional[np.ndarray] = None

    def predictions(self, model: Any, Z: np.ndarray, kernel: dict) -> Optional[np.ndarray]:
        """``K(Z, X) μ`` of ``model`` (one of the batch's), or ``None`` if it is not the batch's."""
        idx = next((i for i, m in enumerate(self._models) if m is model), None)
        if idx is None or not self._shared:
            return None
        key = tuple(kernel_args(kernel))
        if self._key is None or self._key[0] != key or not np.array_equal(self._key[1], Z):
            mus = np.ascontiguousarray(np.stack([m.mu_ for m in self._models]), dtype=np.float64)
            X = np.ascontiguousarray(self._models[0].X_fit_, dtype=np.float64)
            self._values = _core.kernel_predict_many(Z, X, mus, *key)
            self._key = (key, Z.copy())
        assert self._values is not None
        return np.array(self._values[idx])


_EIG_CACHE: "OrderedDict[str, tuple]" = OrderedDict()


def _gram_and_eig(Z: np.ndarray, kernel: dict):
    """``K_ZZ`` and its eigendecomposition (public data; a small LRU cache avoids recomputing the
    O(T³) decomposition when one set of public points is released at several ε)."""
    key = hashlib.sha256(Z.tobytes() + repr(Z.shape).encode() + json.dumps(kernel, sort_keys=True).encode()).hexdigest()
    hit = _EIG_CACHE.get(key)
    if hit is not None:
        _EIG_CACHE.move_to_end(key)
        return hit
    K = _core.kernel_matrix(Z, Z, *kernel_args(kernel))
    K = 0.5 * (K + K.T)
    out = (K, linalg.eigh(K))
    _EIG_CACHE[key] = out
    while len(_EIG_CACHE) > 4:
        _EIG_CACHE.popitem(last=False)
    return out


class TDDL(ReleasingEstimator):
    r"""Test-data-dependent learner: private release of a kernel model over public points (Algorithm 2).

    A trusted learner holds ``w* = Σ_i μ_i φ(x_i)`` (a fitted :class:`dpcore.KernelSVM` or
    :class:`dpcore.KernelLogisticRegression`); the user supplies ``T`` *public* points ``Z`` (e.g. a
    random sample of its unlabeled test set). ``fit(Z)`` releases ::

        ŷ = (<w*, φ(z_t)>)_{t ≤ T} + b,          b = noise (below)
        ŵ = argmin_{||w|| ≤ C} (1/T) Σ_t (<w, φ(z_t)> − ŷ_t)²  =  Σ_t α_t φ(z_t)

    as a :class:`dpcore.KernelRelease` over ``Z`` only (never over training points). The
    paper's form ``(<w − w*, φ(z_t)> − b_t)²`` is the same objective. ``ŵ`` is a deterministic
    function of ``ŷ``, ``Z`` and ``C`` (solved exactly: :func:`ball_constrained_lstsq`), so
    privacy is that of releasing ``ŷ`` (and of ``C`` when it is estimated privately).

    **Sensitivity (supplement eq. 3, with the solver and floating point accounted for).**
    ``||w*_G − w*_G'|| ≤ 2 L R_φ / (λ n)`` for training sets differing in one record (every
    training point in the declared ball). The model's ``w`` satisfies ``||w − w*|| ≤ err`` with
    ``err = sqrt(2·tol/λ)`` from the model's *public* tolerance (checked against its certificate,
    :func:`dpcore.kernel_learning._model.public_error_bound`), so the models used satisfy
    ``||w_G − w_G'|| ≤ Δw := 2 L R_φ/(λ n) + 2 err``. Predictions are computed in float64 with a
    public worst-case error ``e_fp`` (:func:`dpcore.kernel_learning._model.prediction_fp_bound`).

    ``noise="gp"`` (default: the RKHS Gaussian-process mechanism, Hall, Rinaldo & Wasserman 2013)
        ``ŷ = v + σ·G(Z)`` with ``G`` a Gaussian process whose covariance is the model's own kernel:
        the noise vector is ``σ L̂ ξ``, ``L̂ = chol(K̂_ZZ + τI)`` with a tiny public jitter ``τ`` that
        makes ``L̂L̂ᵀ ⪰ K_ZZ`` provably (so it only adds privacy). Its Mahalanobis sensitivity is at most
        ``||ŵ_G − ŵ_G'||_H ≤ Δw``, so ``σ`` is the analytic-Gaussian σ for ``(Δw, ε, δ)`` — **no**
        ``sqrt(λ_max(K_ZZ))``, no ``sqrt(T)``: the per-point noise is about ``σ R_φ`` however many
        public points there are. The float error of the computed vector is covered by an exact grid
        release with sensitivity ``2ρ`` (ρ ~ 1e-10) on 0.1 % of the budget. Full proof:
        :mod:`dpcore.kernel_learning.gp`. The released coefficients interpolate ``ŷ`` (``α = (K̂ + ridge·I)⁻¹ŷ``, the
        GP posterior mean given the released path; post-processing); ``norm_bound`` is not used.

    ``noise="laplace"`` (the paper, SPEC)
        Each coordinate ``<w, φ(z_t)>`` has sensitivity ``S = R_φ Δw + 2 e_fp`` (Cauchy–Schwarz,
        ``||φ(z_t)|| ≤ R_φ``). Each is released with the exact grid Laplace mechanism at
        ``ε0`` = the largest value with ``sqrt(2T ln(1/δ)) ε0 + T ε0 (e^{ε0} − 1) ≤ ε`` (advanced
        composition, Dwork–Rothblum–Vadhan), or ``ε/T`` (plain composition) if larger
        (:func:`dpcore.accounting.calibrate.per_step_epsilon`). Noise scale ``ν ≈ S/ε0``. (ε, δ)-DP.

    ``noise="gaussian"`` (dpcore's first improvement)
        ``Z`` is public, so the whole prediction vector ``v = Φ_Z w`` (``Φ_Z`` the T×∞ matrix of
        feature vectors) has L2 sensitivity
        ``||Φ_Z (w_G − w_G')||₂ ≤ ||Φ_Z||₂ ||w_G − w_G'|| ≤ sqrt(λ_max(K_ZZ)) · Δw``
        since ``||Φ_Z||₂² = λ_max(Φ_Z Φ_Zᵀ) = λ_max(K_ZZ)``; with float errors
        ``Δ₂ = sqrt(λ_max) Δw + 2 sqrt(T) e_fp``. ``λ_max`` is computed by LAPACK and inflated to
        a rigorous upper bound under the backward-stability assumption named in
        ``_gaussian_lambda_max_upper``. ``v`` is released once with the Gaussian mechanism
        calibrated by :func:`dpcore.mechanisms.noise.gaussian_plan` for ``(Δ₂, ε, δ)`` — a single
        (ε, δ) mechanism, no composition over the T coordinates. Since ``λ_max(K_ZZ) ≤ T R_φ²``
        this is never worse than per-coordinate calibration by more than the Gaussian-vs-Laplace
        constants, and much better when the points are spread out in feature space.

    Norm bound ``C``
        * ``norm_bound="public"`` (always valid): ``C = min(2 L R_φ/λ, sqrt(2 ℓ(0)/λ))`` — the first
          from the optimality condition, the second from ``(λ/2)||w*||² ≤ J(w*) ≤ J(0) = ℓ(0)``
          (ℓ(0) = 1 for the hinge and ln 2 for the logistic loss), plus ``err``.
        * ``norm_bound="private"``: spend ``norm_epsilon_share·ε`` on ``||w||`` (sensitivity
          ``Δw + 2 e_norm``, since ``| ||w_G|| − ||w_G'|| | ≤ ||w_G − w_G'||``; ``e_norm`` bounds the
          float error of ``sqrt(μᵀKμ)``) with the exact grid Laplace mechanism and use the upper
          confidence bound ``C = min(noisy + b ln(1/(2β)) + g, public C)``, which is ``≥ ||w||``
          with probability ``≥ 1 − β`` (``norm_beta``). The predictions get the remaining
          ``(1 − share)·ε``; basic composition gives (ε, δ) overall.
        * a number: a public bound the user vouches for (no budget spent). The paper assumes
          ``||w*||`` public "for clarity"; dpcore never reads it from the data for free.

        ``C`` affects utility only: ``ŵ`` is post-processing of the released quantities.

    Parameters
    ----------
    model : fitted kernel ERM
        Exposes ``mu_``, ``X_fit_``, ``n_samples_fit_``, ``lam``, ``lipschitz_``, ``tol``,
        ``w_error_bound_``, ``kernel_params_``, ``classes_`` (e.g. :class:`dpcore.KernelSVM`).
    epsilon, delta : float
        Privacy budget of the release (ε > 0, δ ∈ (0, 1)).
    data_norm : float
        Public bound ``r`` on the norm of every training point and every public point.
    noise : {"gp", "gaussian", "laplace"}, default "gp"
    norm_bound : {"public", "private"} or float, default "private"
        Norm constraint of the ``"gaussian"``/``"laplace"`` least squares (unused by ``"gp"``).
    norm_epsilon_share : float, default 0.1
        Share of ε spent on the private norm bound.
    norm_beta : float, default 0.01
        Failure probability of the private norm bound.
    ridge : float, optional
        ``noise="gp"`` only: ridge of the interpolation ``α = (K̂ + ridge·I)⁻¹ŷ`` (post-processing;
        default ``1e-6·mean diag K_ZZ + τ``).
    clip : bool, default False
        Project public points outside the ball onto it instead of raising ``ValueError``.
    verbose : bool or int, default=False
        Show tqdm progress bars (stderr) during long calls; ``False``/``0`` shows nothing. Progress and the
        :mod:`logging` messages are for the curator only and never part of a release.
        The bar counts the three stages of :meth:`fit` (calibration and kernel matrix of ``Z``, noisy
        predictions, reconstruction).
    random_state : None, int or ChaChaRng
        ``None`` (default): OS-seeded ChaCha20; an int: reproducible (research/tests only).
        With an int, clone k of this estimator (made by ``OneVsRestClassifier``, ``cross_val_score``, ...) gets
        the seed derived from the int and k: distinct, reproducible noise streams; ``None`` stays ``None``, a
        ``ChaChaRng`` cannot be cloned (docs/sklearn.md). Use ``None`` for private use.
    accountant : BudgetAccountant, optional
        Charged ``(ε, δ)`` in :meth:`fit` before any noise is drawn.

    Attributes
    ----------
    release_ : KernelRelease
        The private model (save it with :meth:`save`); ``predict``/``decision_function`` delegate.
    privacy_ : TDDLCalibration
    norm_bound_ : float
        The radius ``C`` used.
    lstsq_info_ : dict
        ``rho``, ``norm``, ``constrained``, ``rank`` of the constrained least squares.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import KernelSVM
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.7, 0.7, size=(2000, 2))      # every row in the unit ball
    >>> y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    >>> svm = KernelSVM(lam=1e-3, kernel="rbf", gamma=5.0, tol=1e-8).fit(X, y)
    >>> from dpcore import TDDL
    >>> Z = rng.uniform(-0.7, 0.7, size=(200, 2))       # public, unlabelled points
    >>> tddl = TDDL(svm, epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0).fit(Z)  # noise="gp"
    >>> type(tddl.release_).__name__, tddl.privacy_.noise, tddl.privacy_.n_points
    ('KernelRelease', 'gp', 200)
    >>> tddl.predict(X[:3]).shape                       # delegates to the release
    (3,)
    """

    #: Test hook for deliberately broken copies; must stay 1.0.
    _sensitivity_factor = 1.0

    def __init__(self, model: KernelModel, epsilon: float, delta: float, *, data_norm: float,
                 noise: Literal["gp", "gaussian", "laplace"] = "gp",
                 norm_bound: Union[Literal["public", "private"], float] = "private", norm_epsilon_share: float = 0.1,
                 norm_beta: float = 0.01, ridge: Optional[float] = None, clip: bool = False,
                 verbose: bool | int = False, random_state: RandomState = None,
                 accountant: Optional[BudgetAccountant] = None) -> None:
        self.model = model
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.noise = noise
        self.norm_bound = norm_bound
        self.norm_epsilon_share = norm_epsilon_share
        self.norm_beta = norm_beta
        self.ridge = ridge
        self.clip = clip
        self.verbose = verbose
        self.random_state = random_state
        self.accountant = accountant


    # -- fitting ----------------------------------------------------------------------------------
    def _norm_mode(self):
        nb = self.norm_bound
        if isinstance(nb, str):
            if nb not in ("public", "private"):
                raise ValueError(f"norm_bound must be 'public', 'private' or a positive number, got {nb!r}")
            return nb, None
        return "declared", check_positive(nb, "norm_bound")

    def prepare(self, Z: ArrayLike) -> dict[str, Any]:
        """Validate everything and compute the calibration for public points ``Z``; draws no noise.

        Returns the state :meth:`fit` uses (exposed for audits and experiments; nothing private is
        released by this method).

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import KernelSVM, TDDL
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.7, 0.7, size=(2000, 2)); y = np.where(X[:, 0] + 0.3 > 0, 1, -1)
        >>> svm = KernelSVM(lam=1e-3, kernel="rbf", gamma=5.0, tol=1e-8).fit(X, y)
        >>> Z = rng.uniform(-0.7, 0.7, size=(200, 2))
        >>> tddl = TDDL(svm, epsilon=1.0, delta=1e-6, data_norm=1.0)
        >>> _ = tddl.prepare(Z)                            # validates and calibrates; draws no noise
        >>> hasattr(tddl, "release_")
        False
        """
        info = model_info(self.model, "TDDL")
        d = info["X"].shape[1]
        r = check_positive(self.data_norm, "data_norm")
        epsilon = check_epsilon(self.epsilon)
        delta = check_delta(self.delta, allow_zero=False)
        if not isinstance(self.noise, str) or self.noise not in _NOISES:
            raise ValueError(f"noise must be one of {_NOISES}, got {self.noise!r}")
        mode, declared = self._norm_mode()
        Z = np.asarray(Z)
        if Z.ndim != 2:
            raise ValueError(f"Z must be a 2-D array of shape (T, {d}), got shape {Z.shape}")
        Z = check_in_domain(check_array(Z, "Z", n_features=d), r, "Z", clip=bool(self.clip))
        k = info["kernel"]
        r_eff = r * (1.0 + RADIUS_TOL)
        r2 = _core.feature_map_radius_sq(r_eff, *kernel_args(k))
        X = check_in_domain(info["X"], r, "model.X_fit_", clip=False)
        n, lam, L = info["n"], info["lam"], info["L"]
        err = public_error_bound(self.model, lam, "TDDL", r_phi_sq=r2, lipschitz=L)
        check_mu_l1(info["mu"], L / lam, "TDDL")
        fp = prediction_fp_bound(n=X.shape[0], mu_l1_bound=L / lam, r_phi_sq=r2, kernel=k, radius=r_eff, d=d)
        e_k = kernel_eval_error(k, r_eff, d)
        T = Z.shape[0]
        factor = None
        if self.noise == "gp":
            # K_ZZ and its certified factor are functions of the public Z and kernel only: a caller releasing
            # several models over the same Z (PrivateGridSearch) shares them through ``_factor_cache``
            cache = getattr(self, "_factor_cache", None)
            key = (tuple(kernel_args(k)), r2, e_k, Z.shape)
            if cache is not None and key in cache and np.array_equal(cache[key][0], Z):
                K, factor = cache[key][1], cache[key][2]
            else:
                K = _core.kernel_matrix(Z, Z, *kernel_args(k))
                factor = _gp_factor(K, r_phi_sq=r2, kernel_error=e_k)
                if cache is not None:
                    cache[key] = (Z, K, factor)
            eig, lam_up = None, math.nan
        else:
            K, eig = _gram_and_eig(Z, k)
            lam_up = _gaussian_lambda_max_upper(float(eig[0].max()), T, r2, e_k)
        R = math.sqrt(r2)
        ell0 = loss_at_zero(self.model)
        c_pub = 2.0 * L * R / lam
        if ell0 is not None:  # ||w*||² ≤ 2 P(0)/λ, P(0) ≤ (max_k w_k) ℓ(0) = L ℓ(0) (class weights; L = 1 without)
            c_pub = min(c_pub, math.sqrt(2.0 * L * ell0 / lam))
        c_pub = (c_pub + err) * (1.0 + SLACK)
        # float error of ||w|| = sqrt(μᵀ(Kμ)): |fl(μᵀKμ) − μᵀKμ| ≤ e_q, and |√a − √b| ≤ sqrt(|a − b|).
        mu_l1 = L / lam
        e_q = mu_l1 * (fp + 1.01 * (X.shape[0] + 2) * UNIT_ROUNDOFF * mu_l1 * r2)
        norm_fp = math.sqrt(e_q) + 2.0 * UNIT_ROUNDOFF * c_pub
        cal = tddl_calibration(
            n=n, lam=lam, lipschitz=L, r_phi_sq=r2, w_error_bound=err, fp_error=fp, epsilon=epsilon,
            delta=delta, n_points=T, noise=self.noise, lambda_max_upper=lam_up, norm_bound=mode,
            norm_bound_public=c_pub, norm_epsilon_share=self.norm_epsilon_share, norm_fp_error=norm_fp,
            norm_beta=self.norm_beta, sensitivity_factor=self._sensitivity_factor, gp_factor=factor,
            value_bound=(L / lam) * r2 + fp,
        )
        sv = info["mu"] != 0.0  # zero terms change nothing (the float bound above uses all n terms)
        return dict(info=info, Z=Z, K=K, eig=eig, cal=cal, mode=mode, declared=declared, radius=r, factor=factor,
                    X_sv=np.ascontiguousarray(X if sv.all() else X[sv]),  # no copy when every term counts
                    mu_sv=np.ascontiguousarray(info["mu"][sv]))

    def _noisy_predictions(self, prep, rng, n_samples=None):
        """The released noisy prediction vector(s) ``ŷ`` (rows = samples when ``n_samples`` is given)."""
        cal, k = prep["cal"], prep["info"]["kernel"]
        # A model without support vectors (mu all zero: possible on private data) predicts 0 everywhere; the
        # kernel engine refuses an empty X, so that case is handled here — no data-dependent exception.
        # (the clean predictions of several models of one path may come from one batched pass: BatchPredictions)
        batch = getattr(self, "_batch_predictions", None)
        if not prep["X_sv"].shape[0]:
            v = np.zeros(prep["Z"].shape[0])
        else:
            v = batch.predictions(self.model, prep["Z"], k) if batch is not None else None
            if v is None:
                v = _core.kernel_predict(prep["Z"], prep["X_sv"], prep["mu_sv"], *kernel_args(k))
        if cal.noise == "gp":
            # stage 1: v + σ L̂ ξ (exact ξ on a 2^-40 grid); stage 2: exact grid release covering the
            # float residual (dpcore.kernel_learning.gp). Each row of ``y`` is one release.
            y = v + gp_noise(prep["factor"], cal.noise_scale, rng, n_samples)
            out = _core.analytic_release(np.ascontiguousarray(y, dtype=np.float64).ravel(), cal.gp_residual_sigma,
                                         cal.grid_exponent, check_random_state(rng))
            return np.asarray(out).reshape(y.shape)
        if cal.noise == "laplace":
            plan = laplace_plan(cal.sensitivity, cal.epsilon_per_point, dim=1)
        else:
            plan = gaussian_plan(cal.sensitivity, cal.epsilon_predictions, cal.delta, dim=cal.n_points)
        return grid_release(v, plan, rng, n_samples)

    def _ridge(self, prep) -> float:
        """Ridge of the GP interpolation (post-processing): ``ridge`` or ``1e-6 · mean diag K_ZZ``."""
        if self.ridge is None:
            return 1e-6 * float(np.mean(np.diag(prep["K"]))) + prep["factor"].tau
        return check_positive(self.ridge, "ridge")

    def _norm_upper(self, prep, rng) -> float:
        cal, info = prep["cal"], prep["info"]
        if prep["mode"] == "public":
            return cal.norm_bound_public
        if prep["mode"] == "declared":
            return prep["declared"]
        k = info["kernel"]
        Xs, mus = prep["X_sv"], prep["mu_sv"]
        f = _core.kernel_predict(Xs, Xs, mus, *kernel_args(k)) \
            if Xs.shape[0] else np.zeros(0)
        w_norm = math.sqrt(max(0.0, float(mus @ f)))
        plan = laplace_plan(cal.norm_sensitivity, cal.epsilon_norm, dim=1)
        noisy = float(grid_release(np.array([w_norm]), plan, rng)[0])
        upper = noisy + plan.scale * math.log(1.0 / (2.0 * cal.norm_beta)) + plan.granularity
        if upper <= 0.0:
            warnings.warn(
                "TDDL: the private upper bound on ||w|| came out <= 0 (noise dominates at this epsilon "
                "and norm_epsilon_share); the release is the zero model. Use a larger epsilon or share, "
                "or a public/declared norm_bound.", UserWarning, stacklevel=3)
        return float(min(max(upper, 0.0), cal.norm_bound_public))

    def fit(self, Z: ArrayLike, y: object = None) -> Self:
        """Release the private model for the public points ``Z`` (``y`` is ignored).

        Charges the accountant ``(ε, δ)`` before drawing any noise.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import KernelSVM, TDDL
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.7, 0.7, size=(2000, 2)); y = np.where(X[:, 0] + 0.3 > 0, 1, -1)
        >>> svm = KernelSVM(lam=1e-3, kernel="rbf", gamma=5.0, tol=1e-8).fit(X, y)
        >>> Z = rng.uniform(-0.7, 0.7, size=(200, 2))
        >>> tddl = TDDL(svm, epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0).fit(Z)
        >>> tddl.release_.points.shape                   # the release is an expansion over Z only
        (200, 2)
        """
        return self._fit_prepared(None, Z)

    def _fit_prepared(self, prep: Optional[dict], Z: Optional[ArrayLike] = None) -> Self:
        """:meth:`fit` from ``prep``, this object's own :meth:`prepare` of the same ``Z`` (a caller that checked the
        calibration first, e.g. :class:`~dpcore.kernel_learning.selection.PrivateGridSearch`), else from ``Z``."""
        check_verbose(self.verbose)
        with progress_bar(self.verbose, total=3, desc="TDDL", unit="stage") as bar:
            bar.set_postfix_str("calibration", refresh=False)
            if prep is None:
                prep = self.prepare(Z)
            cal = prep["cal"]
            bar.update(1)
            rng = check_random_state(self.random_state)
            self.dp_event_ = _tddl_event(cal)
            if self.accountant is not None:
                self.accountant.spend(cal.epsilon, cal.delta, event=self.dp_event_, label=f"TDDL({cal.noise})")
            logger.info("TDDL(%s): charged (epsilon=%.6g, delta=%.3g) for %d public points", cal.noise,
                        cal.epsilon, cal.delta, cal.n_points)
            bar.set_postfix_str("noisy predictions", refresh=False)
            if cal.noise == "gp":
                y_hat = self._noisy_predictions(prep, rng)
                C = math.nan
                bar.update(1)
                bar.set_postfix_str("reconstruction", refresh=False)
                alpha, lsq = _interpolate(prep["K"], y_hat, self._ridge(prep),
                                              getattr(self, "_factor_cache", None))
            else:
                C = self._norm_upper(prep, rng)
                y_hat = self._noisy_predictions(prep, rng)
                bar.update(1)
                bar.set_postfix_str("reconstruction", refresh=False)
                alpha, lsq = ball_constrained_lstsq(prep["K"], y_hat, C, eig=prep["eig"])
            bar.update(1)
        self.privacy_ = cal
        self.norm_bound_ = C
        self.lstsq_info_ = lsq
        record = asdict(cal)
        record.update(norm_bound_used=C, lstsq=lsq)
        self.release_ = KernelRelease(
            prep["Z"], alpha, prep["info"]["kernel"], classes=getattr(self.model, "classes_", None),
            mechanism="TDDL", epsilon=cal.epsilon, delta=cal.delta, calibration=record,
            data_norm=prep["radius"],
        )
        return self

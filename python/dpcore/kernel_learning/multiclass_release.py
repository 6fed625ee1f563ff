r"""Joint private release of a K-class kernel model: one Gaussian process, K paths (issue 24).

:class:`MulticlassTDDL` releases the ``K`` score functions of a
:class:`~dpcore.kernel_learning.multiclass.MulticlassKernelLogisticRegression` over public points ``Z``
with the RKHS Gaussian mechanism of :mod:`dpcore.kernel_learning.gp`, with covariance ``k·I_K``.

Mechanism
---------
``Y = V + σ L̂ Ξ`` (then the exact stage-2 grid release), ``V = (f̂_k(z_t))_{t,k}`` (T × K), ``L̂`` the
certified Cholesky factor of ``K̂_ZZ + τI`` (Lemma 1 of :mod:`dpcore.kernel_learning.gp`, computed once)
and ``Ξ`` a T × K matrix of exact standard normals (``K`` independent paths).

**Sensitivity (proof sketch; docs/privacy.md, "Multi-class kernel releases").** The columns of ``Y``
are independent ``N(v_k, σ² M)`` with ``M = L̂L̂ᵀ``. Whitening each column by ``M^{-1/2}`` gives one
spherical Gaussian mechanism on ``R^{TK}`` whose mean moves between neighbours by
``(Σ_k x_kᵀ M⁻¹ x_k)^{1/2} ≤ (Σ_k ||h_k||²_H)^{1/2} = ||H||_{H^K}`` (Lemma 2 of the GP module, column by
column, ``H = F̂_D − F̂_D'``). By the replace-one bound in ``H^K`` (module docstring of
:mod:`dpcore.kernel_learning.multiclass`) and the public solver error ``err = sqrt(2 tol/λ)``,
``||H||_{H^K} ≤ Δ = 2 L R_φ'/(λ n) + 2 err`` with ``L = √2·max_k w_k``: ``σ`` is the analytic-Gaussian σ
(Balle & Wang 2018) for ``(Δ, ε₁, δ₁)`` — independent of ``K``. Per class, the noise is ``√2`` times
that of the binary release at the same λ (binary ``L = 1``).

**Floating point (stage 2).** As Lemma 3 of the GP module, column by column: each column's computed
release is within ``ρ`` (:func:`~dpcore.kernel_learning.gp.gp_residual_bound`, with the per-class
prediction error ``e_fp`` for ``Σ_i |mu_ik| ≤ max_k w_k/λ``) of its exact stage-1 value on the noise-only
event ``||ξ̂_k|| ≤ sqrt(T) + 40`` for every ``k`` (probability ``≥ 1 − K e^{−800}``); the whole ``T × K``
residual has norm ``≤ √K ρ`` and is covered by an exact analytic-Gaussian grid release with L2
sensitivity ``2√K ρ`` on ``10⁻³`` of the budget. Composition: ``hypot(Δ/σ, 2√Kρ/σ₂)``-GDP.

Everything after the release (interpolation on ``Z``, predictions, argmax) is post-processing.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Optional, TYPE_CHECKING

import numpy as np
from scipy import linalg

from dpcore import _core
from dpcore._internal.fp import auto_tol, multiclass_gap_floor
from dpcore._internal.progress import check_verbose
from dpcore._internal.types import ArrayLike, NDArray, Self, KernelModel, RandomState
from dpcore._internal.validation import check_array, check_delta, check_epsilon, check_positive
from dpcore.accounting.calibrate import gaussian_sigma_analytic
from dpcore.exceptions import NotFittedError
from dpcore.kernel_learning._model import (
    RADIUS_TOL, SLACK, check_in_domain, fitted_lam, fitted_tol, kernel_eval_error, prediction_fp_bound,
    public_error_bound,
)
from dpcore._internal.class_weight import check_max_class_weight
from dpcore._internal.defaults import DEFAULT_INTERCEPT_SCALING
from dpcore.kernel_learning.gp import auto_lam, gp_factor, gp_noise, gp_residual_bound
from dpcore.kernel_learning.multiclass import MULTINOMIAL_LIPSCHITZ, MulticlassKernelLogisticRegression
from dpcore.kernels.evaluation import kernel_args
from dpcore.mechanisms.noise import check_random_state, gaussian_plan

if TYPE_CHECKING:
    from dpcore.accounting import BudgetAccountant

logger = logging.getLogger(__name__)

__all__ = ["MulticlassTDDL", "MulticlassCalibration", "multiclass_gp_calibration", "multiclass_auto_lam",
           "multiclass_min_tol"]

#: Share of (ε, δ) given to the exact stage-2 release that covers the float residual (as TDDL's GP release).
_RESIDUAL_SHARE = 1e-3


def multiclass_min_tol(lam: float, n_classes: int, r_phi_sq: float, *, max_class_weight: float = 1.0) -> float:
    """The smallest public ``tol`` a K-class release accepts: twice the float floor of the certificate.

    The floor (``src/kernel_learning/multiclass.rs``) is the kernel-sum slack ``2·KERNEL_SUM_REL_ERROR·w²R²/λ`` plus
    the scalar slack ``γ_{4K+16}·(3|z| + log K + 1)·w`` with ``|z| ≤ √2 w R²/λ`` (``R² = R_φ'²``, ``w`` the largest
    class weight). The releases add ``2 sqrt(2 tol/λ)`` to the sensitivity ``2√2 w R_φ'/(λn)``, so ``tol`` should be
    small — a few times this value (public numbers only) — rather than a round default: at ``tol = 10⁻⁶`` and
    the auto λ of Letter-26 the solver term nearly doubles the sensitivity.

    Examples
    --------
    >>> from dpcore.kernel_learning.multiclass_release import multiclass_auto_lam, multiclass_min_tol
    >>> lam = multiclass_auto_lam(16_000, 1.0, 1e-6, data_norm=1.0)
    >>> t = multiclass_min_tol(lam, 26, 1.25)
    >>> 1e-10 < t < 1e-8
    True
    """
    lam = check_positive(lam, "lam")
    r2 = check_positive(r_phi_sq, "r_phi_sq")
    w = check_max_class_weight(max_class_weight)
    if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 2:
        raise ValueError(f"n_classes must be an integer >= 2, got {n_classes!r}")
    return auto_tol(multiclass_gap_floor(lam, int(n_classes), r2, w))


def check_multiclass_tol(model, *, w_max: float, r_phi_sq: float, lam: float, n_classes: int) -> None:
    """Refuse (public check, before any charge) a ``model.tol`` below :func:`multiclass_min_tol` on the declared
    domain."""
    t_min = multiclass_min_tol(lam, n_classes, r_phi_sq, max_class_weight=max(1.0, w_max))
    tol = fitted_tol(model)
    if isinstance(tol, (int, float)) and not isinstance(tol, bool) and math.isfinite(tol) and tol < t_min:
        raise ValueError(f"model.tol_ = {tol!r} is below what the multi-class certificate can certify on the "
                         f"declared domain (float floor {t_min / 2:.3g}); refit with tol >= {t_min:.3g}")


def multiclass_auto_lam(n_samples: int, epsilon: float, delta: float, *, data_norm: float, kernel: str = "rbf",
                        gamma: Optional[float] = None, degree: int = 3, coef0: float = 1.0,
                        n_features: Optional[int] = None, intercept_scaling: float = DEFAULT_INTERCEPT_SCALING,
                        max_class_weight: float = 1.0) -> float:
    r"""The data-independent λ of a joint K-class GP release: :func:`~dpcore.kernel_learning.gp.auto_lam` with ``L = √2``.

    The default λ for every multi-class kernel release (:class:`MulticlassTDDL`,
    :class:`dpcore.MulticlassGPService`): the binary rule ``C = ρ μ(ε, δ)/(2 L R_φ'²)``, ``λ = 1/(nC)``, with the
    multinomial loss's ``L = √2·max_k w_k`` (Lemma M1 of docs/privacy.md) and the shifted kernel's
    ``R_φ'² = R_φ² + b²``. With it the per-class noise of the release at a point, ``σ R_φ' ≈ Δ R_φ'/μ =
    2 L R_φ'² C/μ = ρ = 1/2``, is the same fraction of the unit margin as in the binary auto rule, whatever ``K``:
    C is ``1/√2`` times the binary auto C. Depends only on public numbers (``n``, ``ε``, ``δ``, the declared
    radius, the kernel and the declared weight cap), never on the data.

    Parameters
    ----------
    n_samples : int
        Training rows (public under replace-one).
    epsilon, delta : float
        The release's privacy parameters.
    data_norm : float
        Declared bound on ``||x||``.
    kernel, gamma, degree, coef0, n_features : as :func:`dpcore.kernel_learning.gp.auto_lam`
    intercept_scaling : float, default=0.5
        ``b`` of the model's regularised intercept (the default of
        :class:`~dpcore.kernel_learning.multiclass.MulticlassKernelLogisticRegression`).
    max_class_weight : float, default=1.0
        The largest declared class weight ``max_k w_k`` of the model (1 without ``class_weight``): ``L = √2 w_max``.

    Returns
    -------
    float
        ``λ``; scikit-learn's ``C`` is ``1/(λ n)``.

    Examples
    --------
    >>> from dpcore.kernel_learning.gp import auto_lam
    >>> from dpcore.kernel_learning.multiclass_release import multiclass_auto_lam
    >>> lam = multiclass_auto_lam(16_000, 1.0, 1e-6, data_norm=1.0)     # rbf, b = 0.5: R_φ'² = 1.25
    >>> round(1.0 / (16_000 * lam), 4)                                 # C = ρ μ/(2 √2 · 1.25)
    0.0335
    >>> binary = auto_lam(16_000, 1.0, 1e-6, data_norm=1.0, intercept_scaling=0.5, loss="hinge")
    >>> round(lam / binary, 6)                                         # λ is √2 times the binary (ρ = 1/2) auto λ
    1.414214
    """
    w_max = check_max_class_weight(max_class_weight)  # >= 1: an undeclared class has weight 1
    return auto_lam(n_samples, epsilon, delta, data_norm=data_norm, kernel=kernel, gamma=gamma, degree=degree,
                    coef0=coef0, n_features=n_features, lipschitz=MULTINOMIAL_LIPSCHITZ * w_max,
                    intercept_scaling=intercept_scaling, loss="multinomial")


@dataclass(frozen=True)
class MulticlassCalibration:
    """Every number of a joint K-class GP release (formulas: module docstring).

    Examples
    --------
    >>> from dpcore.kernel_learning.multiclass_release import multiclass_gp_calibration
    >>> cal = multiclass_gp_calibration(n=1000, n_classes=26, lam=1e-3, lipschitz=2 ** 0.5, r_phi_sq=1.25,
    ...                                 w_error_bound=0.0, epsilon=1.0, delta=1e-6)
    >>> round(cal.sensitivity, 4)                           # 2·√2·sqrt(1.25)/(λn)
    3.1623
    """

    n: int
    n_classes: int
    lam: float
    lipschitz: float
    r_phi: float
    epsilon: float
    delta: float
    w_error_bound: float
    sensitivity: float
    noise_scale: float
    epsilon_stage1: float
    delta_stage1: float
    epsilon_residual: float = math.nan
    delta_residual: float = math.nan
    gp_residual_bound: float = math.nan
    gp_residual_sigma: float = math.nan
    grid_exponent: int = 0
    gp_jitter: float = math.nan


def multiclass_gp_calibration(*, n: int, n_classes: int, lam: float, lipschitz: float, r_phi_sq: float,
                              w_error_bound: float, epsilon: float, delta: float,
                              sensitivity_factor: float = 1.0) -> MulticlassCalibration:
    """Stage-1 calibration of the joint release (pure function of public numbers).

    ``Δ = (2 L R_φ'/(λn)(1 + SLACK) + 2 err)(1 + SLACK)`` and ``σ`` the analytic-Gaussian σ for
    ``(Δ, ε₁, δ₁)``, ``ε₁ = ε(1 − SLACK)(1 − 10⁻³)``. ``sensitivity_factor`` exists only for tests building
    deliberately broken copies; it must be 1.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n (the model's n_samples_fit_) must be a positive integer, got {n!r}")
    if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 2:
        raise ValueError(f"n_classes must be an integer >= 2, got {n_classes!r}")
    lam = check_positive(lam, "lam")
    L = check_positive(lipschitz, "lipschitz")
    r2 = check_positive(r_phi_sq, "r_phi_sq")
    if not (math.isfinite(w_error_bound) and w_error_bound >= 0):
        raise ValueError(f"w_error_bound must be finite and >= 0, got {w_error_bound!r}")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    R = math.sqrt(r2)
    dw = (2.0 * L * R / (lam * int(n)) * (1.0 + SLACK) + 2.0 * w_error_bound) * (1.0 + SLACK)
    sens = dw * sensitivity_factor
    eps_pred = epsilon * (1.0 - SLACK)
    eps1, delta1 = eps_pred * (1.0 - _RESIDUAL_SHARE), delta * (1.0 - _RESIDUAL_SHARE)
    sigma = gaussian_sigma_analytic(sens, eps1, delta1)
    return MulticlassCalibration(n=int(n), n_classes=int(n_classes), lam=lam, lipschitz=L, r_phi=R, epsilon=epsilon,
                                 delta=delta, w_error_bound=float(w_error_bound), sensitivity=sens, noise_scale=sigma,
                                 epsilon_stage1=eps1, delta_stage1=delta1)


class MulticlassTDDL:
    """Joint private release of a K-class kernel model over public points (GP noise, one factor, K paths).

    Parameters
    ----------
    model : MulticlassKernelLogisticRegression
        Fitted, with a public ``tol`` (its certificate must be within ``sqrt(2 tol/λ)``), at the default
        ``lam = multiclass_auto_lam(n, ε, δ, data_norm=...)`` unless a λ was chosen on public grounds.
    epsilon, delta : float
        The release's privacy parameters (``δ > 0``).
    data_norm : float
        Declared bound on ``||x||`` for training rows and the public points.
    clip : bool, default=False
        Project public points outside the ball onto it instead of refusing them.
    ridge : float, optional
        Ridge of the interpolation on ``Z`` (post-processing); default ``1e-6·mean diag K_ZZ + τ``.
    random_state : None, int or ChaChaRng
        ``None``: OS-seeded ChaCha (secure); an int: reproducible (research/tests).
        Not a scikit-learn estimator: it is not cloned (an int seed is used as given; see docs/sklearn.md for the
        estimators). Use ``None`` for private use.
    accountant : BudgetAccountant, optional
        Charged ``(ε, δ)`` before any noise is drawn.
    verbose : bool or int, default=False
        Accepted for API symmetry (the release is a few dense linear-algebra steps).

    Attributes
    ----------
    privacy_ : MulticlassCalibration
    points_ : ndarray of shape (T, d)
        The public points ``Z``.
    coef_ : ndarray of shape (T, K)
        Interpolation coefficients: released score ``k`` at ``x`` is ``Σ_t coef_[t, k] K'(z_t, x)``.
    noisy_values_ : ndarray of shape (T, K)
        The released noisy scores at ``Z``.
    classes_ : ndarray of shape (K,)

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import MulticlassKernelLogisticRegression
    >>> from dpcore.kernel_learning.multiclass_release import MulticlassTDDL
    >>> rng = np.random.default_rng(0)
    >>> centers = np.array([[0.5, 0.0], [-0.25, 0.43], [-0.25, -0.43]])
    >>> y = rng.integers(0, 3, size=3000)
    >>> X = np.clip(centers[y] + 0.1 * rng.standard_normal((3000, 2)), -0.7, 0.7)
    >>> m = MulticlassKernelLogisticRegression(lam=1e-2, gamma=2.0, classes=[0, 1, 2], tol=1e-6).fit(X, y)
    >>> Z = rng.uniform(-0.7, 0.7, size=(100, 2))
    >>> rel = MulticlassTDDL(m, epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0).fit(Z)
    >>> rel.coef_.shape, float(rel.score(X, y)) > 0.9
    ((100, 3), True)
    """

    _sensitivity_factor = 1.0

    def __init__(self, model: KernelModel, epsilon: float, delta: float, *, data_norm: float, clip: bool = False,
                 ridge: Optional[float] = None, random_state: RandomState = None,
                 accountant: Optional[BudgetAccountant] = None, verbose: bool | int = False) -> None:
        self.model = model
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.clip = clip
        self.ridge = ridge
        self.random_state = random_state
        self.accountant = accountant
        self.verbose = verbose

    def prepare(self, Z: ArrayLike) -> dict[str, Any]:
        """Validate everything and calibrate for public points ``Z``; draws no noise, charges nothing.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import MulticlassKernelLogisticRegression
        >>> from dpcore.kernel_learning.multiclass_release import MulticlassTDDL
        >>> X = np.array([[0.5], [-0.5], [0.0]]); y = [0, 1, 2]
        >>> m = MulticlassKernelLogisticRegression(lam=0.1, classes=[0, 1, 2], tol=1e-8).fit(X, y)
        >>> cal = MulticlassTDDL(m, 1.0, 1e-6, data_norm=1.0).prepare(np.zeros((4, 1)))["cal"]
        >>> cal.n_classes, cal.n
        (3, 3)
        """
        m = self.model
        if not isinstance(m, MulticlassKernelLogisticRegression) and not getattr(m, "_multiclass_stand_in", False):
            raise TypeError(f"model must be a MulticlassKernelLogisticRegression, got {type(m).__name__}")
        if not hasattr(m, "mu_"):
            raise NotFittedError("MulticlassTDDL: the model is not fitted yet; call model.fit(X, y) first")
        check_verbose(self.verbose)
        r = check_positive(self.data_norm, "data_norm")
        epsilon = check_epsilon(self.epsilon)
        delta = check_delta(self.delta, allow_zero=False)
        X = np.ascontiguousarray(check_array(m.X_fit_, "model.X_fit_"), dtype=np.float64)
        d = X.shape[1]
        mu = np.ascontiguousarray(np.asarray(m.mu_, dtype=np.float64))
        if mu.ndim != 2 or mu.shape[0] != X.shape[0] or mu.shape[1] < 2 or not np.isfinite(mu).all():
            raise ValueError(f"model.mu_ must be a finite (n, K) array with K >= 2, got shape {mu.shape}")
        Z = np.asarray(Z)
        if Z.ndim != 2:
            raise ValueError(f"Z must be a 2-D array of shape (T, {d}), got shape {Z.shape}")
        Z = check_in_domain(check_array(Z, "Z", n_features=d), r, "Z", clip=bool(self.clip))
        X = check_in_domain(X, r, "model.X_fit_", clip=False)
        k = dict(m.kernel_params_)
        r_eff = r * (1.0 + RADIUS_TOL)
        r2 = _core.feature_map_radius_sq(r_eff, *kernel_args(k))
        n, lam, K = int(m.n_samples_fit_), float(fitted_lam(m)), mu.shape[1]
        w_max = float(m.lipschitz_) / math.sqrt(2.0)  # lipschitz_ = √2·max_k w_k
        L = math.sqrt(2.0) * w_max
        check_multiclass_tol(m, w_max=w_max, r_phi_sq=r2, lam=lam, n_classes=K)
        err = public_error_bound(m, lam, "MulticlassTDDL", r_phi_sq=r2, lipschitz=L)
        l1 = np.abs(mu).sum(axis=0)
        if not np.all(l1 <= (w_max / lam) * (1.0 + 1e-9)):
            raise ValueError(f"model.mu_ has a class with sum_i |mu_ik| = {float(l1.max()):.6g} > max_w/lam = "
                             f"{w_max / lam:.6g}: not the dual solution of the multinomial problem")
        fp = prediction_fp_bound(n=n, mu_l1_bound=w_max / lam, r_phi_sq=r2, kernel=k, radius=r_eff, d=d)
        e_k = kernel_eval_error(k, r_eff, d)
        KZ = _core.kernel_matrix(Z, Z, *kernel_args(k))
        factor = gp_factor(KZ, r_phi_sq=r2, kernel_error=e_k)
        cal = multiclass_gp_calibration(n=n, n_classes=K, lam=lam, lipschitz=L, r_phi_sq=r2, w_error_bound=err,
                                        epsilon=epsilon, delta=delta, sensitivity_factor=self._sensitivity_factor)
        T = Z.shape[0]
        rho = gp_residual_bound(T=T, sigma=cal.noise_scale, row_norm_max=factor.row_norm_max, prediction_error=fp,
                                value_bound=(w_max / lam) * r2 + fp) * math.sqrt(K)
        eps2 = epsilon * (1.0 - SLACK) * _RESIDUAL_SHARE * (1.0 - SLACK)
        delta2 = delta * _RESIDUAL_SHARE * (1.0 - SLACK)
        plan = gaussian_plan(2.0 * rho, eps2, delta2, dim=T * K)
        cal = MulticlassCalibration(**{**cal.__dict__, "epsilon_residual": eps2, "delta_residual": delta2,
                                       "gp_residual_bound": rho, "gp_residual_sigma": plan.sigma,
                                       "grid_exponent": plan.grid_exponent, "gp_jitter": factor.tau})
        return dict(Z=Z, KZ=KZ, factor=factor, cal=cal, X=X, mu=mu, kernel=k, classes=np.asarray(m.classes_))

    def _noisy_values(self, prep, rng, n_samples=None) -> np.ndarray:
        """The released ``T × K`` noisy scores (``n_samples`` of them stacked on a first axis when given)."""
        cal, k, Z, X, mu = prep["cal"], prep["kernel"], prep["Z"], prep["X"], prep["mu"]
        T, K = Z.shape[0], mu.shape[1]
        V = np.empty((T, K))
        for j in range(K):
            V[:, j] = _core.kernel_predict(Z, X, np.ascontiguousarray(mu[:, j]), *kernel_args(k))
        reps = 1 if n_samples is None else int(n_samples)
        # K independent paths per release, one factor: rows of gp_noise are paths
        noise = gp_noise(prep["factor"], cal.noise_scale, rng, reps * K).reshape(reps, K, T).transpose(0, 2, 1)
        Y = V[None, :, :] + noise
        out = _core.analytic_release(np.ascontiguousarray(Y, dtype=np.float64).ravel(), cal.gp_residual_sigma,
                                     cal.grid_exponent, check_random_state(rng))
        out = np.asarray(out).reshape(reps, T, K)
        return out[0] if n_samples is None else out

    def fit(self, Z: ArrayLike, y: object = None) -> Self:
        """Release the K score functions over the public points ``Z`` (``y`` ignored); charges ``(ε, δ)`` first.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import MulticlassKernelLogisticRegression
        >>> from dpcore.kernel_learning.multiclass_release import MulticlassTDDL
        >>> X = np.array([[0.5], [-0.5], [0.0]]); y = [0, 1, 2]
        >>> m = MulticlassKernelLogisticRegression(lam=0.1, classes=[0, 1, 2], tol=1e-8).fit(X, y)
        >>> MulticlassTDDL(m, 1.0, 1e-6, data_norm=1.0, random_state=0).fit(np.zeros((4, 1))).noisy_values_.shape
        (4, 3)
        """
        from dpcore.accounting.events import gdp_event

        prep = self.prepare(Z)
        cal = prep["cal"]
        rng = check_random_state(self.random_state)
        mu_gdp = math.hypot(cal.sensitivity / cal.noise_scale, 2.0 * cal.gp_residual_bound / cal.gp_residual_sigma)
        self.dp_event_ = gdp_event(mu_gdp * (1.0 + 1e-12))
        if self.accountant is not None:
            self.accountant.spend(cal.epsilon, cal.delta, event=self.dp_event_, label="MulticlassTDDL(gp)")
        logger.info("MulticlassTDDL: charged (epsilon=%.6g, delta=%.3g), K=%d, T=%d, sigma=%.4g", cal.epsilon,
                    cal.delta, cal.n_classes, prep["Z"].shape[0], cal.noise_scale)
        Y = self._noisy_values(prep, rng)
        KZ = prep["KZ"]
        ridge = (1e-6 * float(np.mean(np.diag(KZ))) + prep["factor"].tau) if self.ridge is None else \
            check_positive(self.ridge, "ridge")
        A = 0.5 * (KZ + KZ.T)
        A[np.diag_indices_from(A)] += ridge
        coef = linalg.solve(A, Y, assume_a="pos")
        self.privacy_ = cal
        self.points_ = prep["Z"]
        self.coef_ = coef
        self.noisy_values_ = Y
        self.classes_ = prep["classes"]
        self.kernel_params_ = prep["kernel"]
        return self

    # -- post-processing -------------------------------------------------------------------------
    def _scores(self, X: ArrayLike) -> np.ndarray:
        if not hasattr(self, "coef_"):
            raise NotFittedError("MulticlassTDDL: call fit(Z) first")
        X = np.ascontiguousarray(check_array(X, "X", n_features=self.points_.shape[1]), dtype=np.float64)
        out = np.empty((X.shape[0], self.coef_.shape[1]))
        for j in range(self.coef_.shape[1]):
            out[:, j] = _core.kernel_predict(X, self.points_, np.ascontiguousarray(self.coef_[:, j]),
                                             *kernel_args(self.kernel_params_))
        return out

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Released scores ``(m, K)`` (post-processing of the release)."""
        return self._scores(X)

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Argmax of the released scores."""
        return self.classes_[np.argmax(self._scores(X), axis=1)]

    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """Accuracy of :meth:`predict` on ``(X, y)``."""
        return float(np.mean(self.predict(X) == np.asarray(y)))

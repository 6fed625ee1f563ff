r"""The RKHS Gaussian-process mechanism (Hall, Rinaldo & Wasserman 2013) with exact noise.

Hall, Rinaldo & Wasserman, "Differential privacy for functions and functional data", JMLR 14
(2013), Cor. 9: a function ``f_D`` in the RKHS ``H`` of a kernel ``k`` whose sensitivity is
``sup ||f_D − f_D'||_H ≤ Δ`` is released privately by ``f_D + σ·G`` with ``G`` a zero-mean
Gaussian process with covariance ``k`` and ``σ`` the Gaussian-mechanism scale for ``Δ``. For dpcore's
certified kernel ERM (L-Lipschitz loss, ``||φ(x)|| ≤ R_φ`` on the declared ball, no bias) replace-one
neighbours give ``||w_D − w_D'||_H ≤ 2 L R_φ/(λ n)`` and the models actually used, with the public
solver error ``err = sqrt(2 tol/λ)``, satisfy ``||ŵ_D − ŵ_D'||_H ≤ Δ = 2 L R_φ/(λ n) + 2 err``.

Release over public points ``Z`` (T × d)
-----------------------------------------
The released vector is ``y = v + σ L̂ ξ`` (then rounded, stage 2 below) with ``v = (ŵ(z_t))_t``
the model's predictions, ``ξ ~ N(0, I_T)`` and ``L̂`` the float64 Cholesky factor of
``K̂_ZZ + τ I`` (``K̂`` the computed kernel matrix, ``τ`` a small public jitter).

**Lemma 1 (jitter).** If ``τ > T·e_k + u(R_φ² + e_k + τ) + γ_{T+1}·T·s²(1 + γ_T)`` with ``e_k``
the worst-case error of one kernel evaluation (:func:`dpcore.kernel_learning._model.kernel_eval_error`),
``u = 2⁻⁵³`` and ``s²`` the largest squared row norm of ``L̂``, then ``M := L̂ L̂ᵀ ⪰ K_ZZ + m·I``
with ``m > 0`` the difference (``margin``). Proof: Cholesky's backward error (Higham 2002,
Thm 10.3) gives ``L̂L̂ᵀ = A + E_c`` with ``|E_c| ≤ γ_{T+1}|L̂||L̂ᵀ|`` entrywise, hence
``||E_c||₂ ≤ ||E_c||_F ≤ γ_{T+1}·T·s²``; the stored ``A = K̂ + τI`` differs from ``K_ZZ + τI``
by the kernel errors (``||·||₂ ≤ T e_k``) and one rounding of each diagonal entry. Everything in
the condition is a function of the public ``Z`` and kernel; dpcore checks it after factorising and
doubles ``τ`` (deterministically) until it holds.

**Lemma 2 (Mahalanobis sensitivity).** For ``h ∈ H`` and ``x = (h(z_t))_t = Φᵀh`` (``Φ`` the
feature map of ``Z``), ``xᵀ M⁻¹ x ≤ xᵀ(K_ZZ + mI)⁻¹x = hᵀΦ(ΦᵀΦ + mI)⁻¹Φᵀh ≤ ||h||²_H``. So the
stage-1 mechanism ``A(D) = Φᵀŵ_D + σ L̂ ξ ~ N(Φᵀŵ_D, σ² M)`` is, after whitening by ``M^{-1/2}``,
a spherical Gaussian mechanism whose mean moves by at most ``Δ`` between neighbours: it is
(ε₁, δ₁)-DP with the analytic σ of Balle & Wang (2018) for ``(Δ, ε₁, δ₁)`` — however many points
``Z`` holds and however they were chosen (public). The per-point noise is ``σ·sqrt(M_tt) ≈ σ R_φ``.

**Lemma 3 (floating point, stage 2).** ``ξ`` is drawn exactly and rounded to the grid ``2⁻⁴⁰``
(``_core.analytic_release``: ``|ξ̂ − ξ| ≤ 2⁻⁴¹`` per coordinate); the computed
``ŷ = fl(v̂ + fl(σ·fl(L̂ ξ̂)))`` then differs from ``A(D)`` by ``δ`` with ``||δ||₂ ≤ ρ``
(:func:`gp_residual_bound`: prediction error ``e_fp``, grid rounding, matrix–vector and scalar
roundings, each a function of public quantities and of the event ``||ξ̂||₂ ≤ sqrt(T) + 40`` — an
event of the noise alone, probability ``≥ 1 − e⁻⁸⁰⁰``, checked; outside it nothing is released, with
the same probability for every dataset). Given ``A = a``, ``δ`` is a function of ``(D, a)``, so the
final output — the exact analytic-Gaussian grid release of ``ŷ`` with L2 sensitivity ``2ρ`` at
``(ε₂, δ₂)`` — is (ε₂, δ₂)-DP for each ``a`` (the residual lemma of :mod:`dpcore.glm.perturbation`). Adaptive
composition: ``(ε₁ + ε₂, δ₁ + δ₂)``, with ``ε₂ = δ₂/δ = 10⁻³`` of the budget (ρ is ~10⁻¹⁰, so the
stage-2 noise is negligible). No floating-point value that depends on the data is ever released
unrounded.

Everything after the release (interpolating coefficients, predictions) is post-processing.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Optional

import numpy as np
from scipy import linalg

from dpcore import _core
from dpcore._core import ChaChaRng
from dpcore._internal.defaults import AUTO_NOISE_RATIO, DEFAULT_INTERCEPT_SCALING
from dpcore._internal.fp import RADIUS_TOL, UNIT_ROUNDOFF, gamma_k
from dpcore._internal.validation import check_delta, check_epsilon, check_positive
from dpcore.accounting.calibrate import gaussian_sigma_analytic
from dpcore.kernels.evaluation import check_intercept_scaling

__all__ = ["GPFactor", "auto_lam", "gp_factor", "gp_residual_bound", "gp_noise", "XI_GRID_EXPONENT", "XI_NORM_SLACK"]

#: Grid of the exact standard normals ξ: ``|ξ̂ − ξ| ≤ 2^(XI_GRID_EXPONENT − 1)`` per coordinate.
XI_GRID_EXPONENT = -40
#: The noise-only event ``||ξ̂||₂ ≤ sqrt(T) + XI_NORM_SLACK`` (probability ≥ 1 − exp(−XI_NORM_SLACK²/2)).
XI_NORM_SLACK = 40.0


@dataclass(frozen=True)
class GPFactor:
    """``L̂ = chol(K̂_ZZ + τ I)`` with the public numbers of Lemma 1."""

    L: np.ndarray
    tau: float
    margin: float
    row_norm_max: float
    kernel_error: float


def gp_factor(K: np.ndarray, *, r_phi_sq: float, kernel_error: float) -> GPFactor:
    """Factor ``K̂ + τI`` with the smallest ``τ = τ₀·2^j`` satisfying Lemma 1 (module docstring).

    ``K`` is the computed (public) kernel matrix of the public points; ``kernel_error`` the
    worst-case error of one entry. Deterministic in ``K``: the same public input always gives the
    same factor.
    """
    K = np.asarray(K, dtype=np.float64)
    T = K.shape[0]
    if K.ndim != 2 or K.shape != (T, T) or not np.isfinite(K).all():
        raise ValueError("the kernel matrix of the public points could not be factorised with a certified "
                         "jitter: it must be a finite square matrix")
    u = UNIT_ROUNDOFF
    e_k = float(kernel_error) + 2.0 * u * float(r_phi_sq)  # + the symmetrisation's rounding
    g = gamma_k(T + 1)
    tau = 2.0 * (T * e_k + u * (r_phi_sq + e_k) + g * T * (r_phi_sq + e_k) * 1.01) + 1e-300
    for _ in range(200):
        A = 0.5 * (K + K.T)
        A[np.diag_indices(T)] += tau
        try:
            L = linalg.cholesky(A, lower=True, check_finite=True)
        except linalg.LinAlgError:
            tau *= 2.0
            continue
        s2 = float(np.max(np.einsum("ij,ij->i", L, L))) * (1.0 + gamma_k(T + 2))
        margin = tau - (T * e_k + u * (r_phi_sq + e_k + tau) + g * T * s2 * (1.0 + gamma_k(T)))
        if margin > 0.0:
            return GPFactor(L=L, tau=tau, margin=margin, row_norm_max=math.sqrt(s2), kernel_error=e_k)
        tau *= 2.0
    raise ValueError("the kernel matrix of the public points could not be factorised with a certified jitter "
                     "(non-finite kernel values?)")


def gp_residual_bound(*, T: int, sigma: float, row_norm_max: float, prediction_error: float,
                      value_bound: float) -> float:
    """Public ``ρ ≥ ||ŷ − A(D)||₂`` on the event ``||ξ̂|| ≤ sqrt(T) + XI_NORM_SLACK`` (Lemma 3).

    Per coordinate: prediction error ``e_fp``; ``σ·||L̂_t||·(γ_T N + sqrt(T)·2⁻⁴¹)`` for the grid
    rounding of ξ and the matrix–vector product (any summation order); ``u·σ|m_t|`` for the scalar
    product; ``u(|v_t| + |c_t|)`` for the final sum, with ``|v_t| ≤ value_bound``.
    """
    u = UNIT_ROUNDOFF
    N = math.sqrt(T) + XI_NORM_SLACK
    s = row_norm_max
    gT = gamma_k(T)
    grid = math.sqrt(T) * 2.0 ** (XI_GRID_EXPONENT - 1)
    c_max = sigma * s * N * (1.0 + 2.0 * gT)
    per = (prediction_error + sigma * s * (gT * N + grid) * (1.0 + u) + u * sigma * s * N * (1.0 + gT)
           + u * (value_bound + c_max))
    return math.sqrt(T) * per * 1.01


def gp_noise(factor: GPFactor, sigma: float, rng: ChaChaRng, n_samples: Optional[int] = None) -> np.ndarray:
    """``σ·L̂ξ̂`` (one row per sample), ``ξ̂`` exact standard normals rounded to ``2^XI_GRID_EXPONENT``.

    Refuses (``RuntimeError``) on the noise-only event ``||ξ̂|| > sqrt(T) + XI_NORM_SLACK``
    (probability below ``e⁻⁸⁰⁰``, the same for every dataset).
    """
    T = factor.L.shape[0]
    xi = np.asarray(_core.analytic_release(np.zeros(T), 1.0, XI_GRID_EXPONENT, rng, n_samples), dtype=np.float64)
    xi2 = xi.reshape(-1, T)
    # the computed squared norm is within a factor (1 + γ_{T+1}) of the exact one
    if not np.all(np.einsum("ij,ij->i", xi2, xi2) * (1.0 + gamma_k(T + 1)) <= (math.sqrt(T) + XI_NORM_SLACK) ** 2):
        raise RuntimeError("GP noise: ||xi|| exceeded its public bound (probability < 1e-300); nothing released")
    c = sigma * (xi2 @ factor.L.T)
    return c[0] if n_samples is None else c


def auto_lam(n_samples: int, epsilon: float, delta: float, *, data_norm: float, kernel: str = "rbf",
             gamma: Optional[float] = None, degree: int = 3, coef0: float = 1.0, n_features: Optional[int] = None,
             lipschitz: float = 1.0, intercept_scaling: float = DEFAULT_INTERCEPT_SCALING,
             loss: str = "logistic") -> float:
    r"""A data-independent λ for a kernel model released with the GP mechanism at ``(ε, δ)``.

    Balances the GP noise against the regularisation: the per-answer noise of the release is
    ``σ R_φ = 2 L R_φ² C/μ`` (``C = 1/(λn)`` in scikit-learn's sense, ``μ = Δ/σ`` the analytic-Gaussian
    ratio at ``(ε, δ)``), and ``C`` is chosen so that this noise is ρ times the loss's natural scale:
    half the margin for the hinge loss (ρ = :data:`dpcore._internal.defaults.AUTO_NOISE_TO_MARGIN` ``= 1/2``),
    a quarter logit for the logistic loss (ρ = :data:`dpcore._internal.defaults.AUTO_NOISE_TO_LOGIT` ``= 1/4``;
    the logistic model's signal grows with C as the noise does until it saturates, so the smaller ρ is the
    safe side), i.e.

    .. math::  C = \frac{ρ\,μ(ε, δ)}{2 L R_φ^2}, \qquad λ = \frac{1}{n C}.

    Less regularisation would drown the decision values in noise, more would shrink them towards 0
    for nothing. Depends only on public quantities (``n``, ``ε``, ``δ``, the declared radius and the
    kernel); how the constant ρ was chosen (on public benchmarks only) is in :mod:`dpcore._internal.defaults`. Measured
    against a grid of C in ``experiments/README.md`` ("C = auto"). When the data are private, this is
    the default to use instead of tuning C on them (which is not private: use
    :class:`dpcore.PrivateGridSearch`).

    Parameters
    ----------
    n_samples : int
        Number of training rows (public under replace-one).
    epsilon, delta : float
        The release's privacy parameters.
    data_norm : float
        Declared bound on ``||x||``.
    kernel, gamma, degree, coef0 : as in :class:`dpcore.KernelSVM`
        ``gamma=None`` means ``1.0``; ``"auto"`` means ``1/n_features`` (then ``n_features`` is required,
        except for ``"rbf"`` whose ``R_φ = 1`` does not depend on γ).
    lipschitz : float, default 1.0
        ``L`` of the loss (1 for the hinge and logistic losses).
    intercept_scaling : float, default 0.5
        ``b`` of the regularised intercept (kernel ``K + b²``): ``R_φ'² = R_φ² + b²`` replaces ``R_φ²`` above.
        The default is the models' default (:data:`dpcore._internal.defaults.DEFAULT_INTERCEPT_SCALING`).
    loss : {"logistic", "hinge", "multinomial"}, default "logistic"
        The model's loss (its ρ above; ``"multinomial"``: the K-class rule, ρ = 1/2). ``"logistic"`` (:class:`dpcore.KernelLogisticRegression`) is the
        recommended model for private releases (docs/choosing.md).

    Examples
    --------
    >>> from dpcore.kernel_learning.gp import auto_lam
    >>> lam = auto_lam(20_000, 1.0, 1e-6, data_norm=1.0, kernel="rbf")
    >>> round(1.0 / (20_000 * lam), 4)   # logistic: C = ρ μ/(2 R_φ'²), ρ = 1/4, μ(1, 1e-6) = 0.2367, R_φ'² = 1.25
    0.0237
    >>> lam = auto_lam(20_000, 1.0, 1e-6, data_norm=1.0, kernel="rbf", loss="hinge", intercept_scaling=0.0)
    >>> round(1.0 / (20_000 * lam), 4)   # hinge: ρ = 1/2, R_φ² = 1
    0.0592
    """

    if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    radius = check_positive(data_norm, "data_norm")
    lipschitz = check_positive(lipschitz, "lipschitz")
    r2 = feature_radius_sq(radius, kernel, gamma, degree, coef0, n_features=n_features,
                           intercept_scaling=intercept_scaling)
    mu = 1.0 / gaussian_sigma_analytic(1.0, epsilon, delta)
    C = auto_C_for_mu(mu, r2, lipschitz, loss=loss)
    return 1.0 / (int(n_samples) * C)


def auto_C_for_mu(mu: float, r_phi_sq: float, lipschitz: float = 1.0, *, loss: str = "logistic") -> float:
    """``C = ρ μ/(2 L R_φ²)`` of :func:`auto_lam` for a release that is ``μ``-GDP (public numbers; ρ of ``loss``)."""
    if not isinstance(loss, str) or loss not in AUTO_NOISE_RATIO:
        raise ValueError(f"loss must be one of {sorted(AUTO_NOISE_RATIO)}, got {loss!r:.40}")
    return AUTO_NOISE_RATIO[loss] * mu / (2.0 * lipschitz * r_phi_sq)


def feature_radius_sq(data_norm: float, kernel: str, gamma: Optional[float], degree: int, coef0: float, *,
                      n_features: Optional[int] = None, intercept_scaling: float = 0.0) -> float:
    """Public bound on ``||φ'(x)||² = k(x, x) + b²`` over ``||x|| ≤ data_norm·(1 + RADIUS_TOL)``.

    ``b`` is ``intercept_scaling`` (the regularised intercept's augmented map ``φ' = (φ, b)``; 0: none).

    ``gamma=None`` means ``1.0`` and ``"auto"`` ``1/n_features`` (as :class:`dpcore.KernelSVM`); ``n_features``
    is not needed for the kernels whose ``R_φ`` does not depend on γ (rbf, laplacian, linear).
    """

    if kernel not in ("rbf", "poly", "linear", "sigmoid", "laplacian"):
        raise ValueError(f"kernel must be 'rbf', 'poly', 'linear', 'sigmoid' or 'laplacian', got {kernel!r}")
    if gamma is None:
        gamma = 1.0
    elif isinstance(gamma, str) and gamma == "auto":
        if kernel in ("rbf", "laplacian", "linear"):
            gamma = 1.0
        elif isinstance(n_features, numbers.Integral) and not isinstance(n_features, bool) and n_features >= 1:
            gamma = 1.0 / n_features
        else:
            raise ValueError(f"gamma='auto' for kernel={kernel!r} means 1/n_features: give n_features or gamma")
    gamma = check_positive(gamma, "gamma")
    r = check_positive(data_norm, "data_norm") * (1.0 + RADIUS_TOL)
    b = check_intercept_scaling(intercept_scaling)
    if kernel == "linear":
        return r * r if b == 0.0 else math.nextafter(r * r + b * b, math.inf)
    return float(_core.feature_map_radius_sq(r, kernel, float(gamma), int(degree), float(coef0), b))

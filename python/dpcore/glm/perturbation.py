r"""Private generalised linear models by output and objective perturbation.

:class:`OutputPerturbation` and :class:`ObjectivePerturbation` implement the four mechanisms of
Jain & Thakurta (2014, "(Near) dimension independent risk bounds for differentially private
learning") — Output, Output-Gauss, Objective, Objective-Gauss — after Chaudhuri, Monteleoni &
Sarwate (2011) and Kifer, Smith & Thakurta (2012), for the objective (SPEC "GLM perturbation")

    J(θ) = (1/n) Σ_i ℓ(<θ, x_i>; y_i) + (Λ/2) ||θ||²,      ||x_i|| ≤ R,  |ℓ'| ≤ L,  |ℓ''| ≤ c,

under replace-one adjacency. Everything that enters a noise calibration is public: ``n``, the
dimension, the declared ``data_norm`` R (never derived from the data), Λ, the loss constants, the
solver tolerance ``tol`` and the privacy parameters.

Domain
    Rows must satisfy ``||x|| ≤ R`` (up to a relative ``1e-12``; calibrations use the inflated
    radius, also covering the rounding of the computed row norms); rows outside raise
    ``ValueError`` unless ``clip=True`` (projection onto the ball). With ``fit_intercept=True``
    a constant feature ``intercept_scaling`` is appended to every row and **regularised like
    every other coordinate** (an unregularised intercept makes the sensitivity unbounded); every
    calibration then uses ``R_eff = sqrt(R² + intercept_scaling²)``.

Exact mechanisms (what the privacy proofs are about)
    Output (Gamma) [C]:  ``θ* + b``, density of ``b`` ∝ ``exp(−||b||/s)``, ``s = 2LR/(nΛε₁)``
        (norm ``Gamma(d, s)``, uniform direction). ``||θ*(D) − θ*(D')|| ≤ 2LR/(Λn)`` (strong
        convexity, below) and ``| ||b|| − ||b + Δθ|| | ≤ ||Δθ||`` give ``ε₁``-DP.
    Output-Gauss [R]:  ``θ* + N(0, σ² I)`` with the analytic-Gaussian σ (Balle & Wang 2018) for
        L2 sensitivity ``2LR/(Λn)`` — released by :func:`dpcore.mechanisms.noise.gaussian_plan`'s exact grid
        sampler.
    Objective (Gamma) [C]:  ``θ = argmin J(θ) + (1/n) bᵀθ + (Δ/2)||θ||²`` with
        ``ε' = ε₁ − 2 log(1 + cR²/(nΛ))``; if ``ε' > 0``: ``Δ = 0``; else
        ``Δ = cR²/(n(e^{ε₁/4} − 1)) − Λ`` and ``ε' = ε₁/2``; density of ``b`` ∝
        ``exp(−(ε'/(2LR))||b||)``. ε₁-DP (Chaudhuri et al. 2011, Thm 9/Alg. 2, with general R:
        the Jacobian of ``θ ↦ b`` changes by a rank-2 term of size ``≤ cR²/n`` per record, and
        the gradient of one record's loss has norm ``≤ LR``). dpcore computes ``ε'`` from the
        final ``Λ + Δ`` (rounded up) so that ``ε' + 2 log(1 + cR²/(n(Λ+Δ))) ≤ ε₁`` holds in
        floating point. (diffprivlib writes ``cR`` where ``cR²`` is needed — a privacy bug for
        ``R > 1`` that the test-suite's broken copy reproduces and the audit catches.)
    Objective-Gauss [C/R]:  ``b ~ N(0, σ² I)``, ``σ = 2ζ sqrt(8 ln(4/δ₁) + 4ε₁)/ε₁``,
        ``ζ = LR``, ``Δ = 2cR²/ε₁``, ``θ = argmin J(θ) + (1/n) bᵀθ + (Δ/(2n))||θ||²``
        (Kifer et al. 2012, Thm 2, replace adjacency). (ε₁, δ₁)-DP.

    Sensitivity lemma (output perturbation, and objective perturbation with ``b`` fixed):
    ``F_D`` μ-strongly convex, ``F_D' = F_D + (1/n)(ℓ(<θ,x'>;y') − ℓ(<θ,x>;y))``. With
    ``θ₁ = argmin F_D``, ``θ₂ = argmin F_D'``: ``μ||θ₁ − θ₂||² ≤ <∇F_D(θ₂) − ∇F_D(θ₁), θ₂ − θ₁>
    = <∇F_D(θ₂), θ₂ − θ₁>`` and ``∇F_D(θ₂) = −(1/n)(ℓ'(<θ₂,x'>;y')x' − ℓ'(<θ₂,x>;y)x)``, so
    ``||θ₁ − θ₂|| ≤ 2LR/(nμ)`` where L only needs to bound ``|ℓ'|`` *at the optimum θ₂* (and,
    by symmetry, θ₁).

    Squared loss (``loss="squared"``, regression, declared ``|y| ≤ B``): ``J(θ*) ≤ J(0) ≤ B²/2``
    and ``(Λ/2)||θ*||² ≤ J(θ*)`` give ``||θ*|| ≤ B/√Λ``, so at both optima
    ``|ℓ'(<θ*, x>; y)| = |<θ*, x> − y| ≤ R·B/√Λ + B =: L``; by the lemma (which evaluates ℓ'
    only there) the sensitivity is ``2LR/(Λn)`` with this L. Objective perturbation needs
    ``|ℓ'| ≤ L`` on all of ``R^p`` (the map ``θ ↦ b`` is evaluated everywhere), which the
    squared loss violates; it is refused (a constrained variant, Kifer et al. 2012, is not
    implemented). The hinge loss is refused by objective perturbation too (no second derivative).

From the exact mechanism to floats: the residual lemma
------------------------------------------------------
A float implementation does not output the exact mechanism ``M(D)``: the solver stops at a
gradient norm ``≤ tol``, gradients are computed in floating point, and the noise ``b`` is a float
vector. dpcore's noise vectors come from :func:`dpcore.mechanisms.noise.gamma_norm_vector_coupled` /
:func:`dpcore.mechanisms.noise.normal_vector_coupled`: on the same probability space there is an exact
``b_exact`` with the target law and ``||b − b_exact|| ≤ err`` always. The computed value is
``V = M(D) + e`` where ``M(D)`` uses ``b_exact`` and the exact argmin, and ``e`` is a random
function of ``(M(D), D)`` and independent randomness: for output perturbation
``b_exact = M(D) − θ*(D)``; for objective perturbation ``b_exact = −n ∇(J + Δ-term)(M(D))``.

*Lemma.* Let ``M`` be (ε₁, δ₁)-DP and ``||e|| ≤ ρ`` always, and let ``Z`` be a mechanism that is
(ε₂, δ₂)-DP for inputs at L2 distance ``≤ 2ρ``. Then ``Z(M(D) + e)`` is
``(ε₁ + ε₂, e^{ε₂} δ₁ + δ₂)``-DP. *Proof.* ``P[Y_D ∈ S] = E_{t∼M(D)} f_D(t)`` with
``f_D(t) = E[P(Z(t + e_D) ∈ S)]`` over the randomness of ``e``. For fixed ``t`` every value
``q(e) = P[Z(t + e) ∈ S]`` with ``||e|| ≤ ρ`` satisfies ``q(e) ≤ e^{ε₂} q(e') + δ₂`` for every
``||e'|| ≤ ρ``, so ``f_D(t) ≤ sup q ≤ e^{ε₂} inf q + δ₂ ≤ e^{ε₂} f_{D'}(t) + δ₂`` (any mixing
law of ``e`` is fine), and ``E_{M(D)} f_{D'} ≤ e^{ε₁} E_{M(D')} f_{D'} + δ₁`` as
``f_{D'} ∈ [0, 1]``. ∎

``Z`` is the exact grid Laplace mechanism for L1 sensitivity ``2ρ√d`` (pure, used with Gamma
noise) or the exact analytic-Gaussian grid mechanism for L2 sensitivity ``2ρ`` (with Gaussian
noise); :func:`dpcore.mechanisms.noise.laplace_plan` / :func:`dpcore.mechanisms.noise.gaussian_plan` calibrate them.
Budget split (public ``residual_share`` = r): ``ε₂ = r ε``, ``ε₁ = ε − ε₂``; Gaussian:
``δ₂ = r δ − δ_fp``, ``δ₁ = (δ − r δ) e^{−ε₂}``. The Gamma/Gaussian mechanisms above are run with
ε₁ (δ₁) in place of ε (δ). Output-Gauss needs no split: ``ρ`` folds into the sensitivity,
``2LR/(Λn) + 2ρ``, of the exact Gaussian release of the float ``θ̂`` (the TDDL pattern).

The public bound ρ
    ``ρ`` must not depend on the data. ``||θ̂ − θ_exact|| ≤ (tol + e_fp + err/n)/μ``
    (:mod:`dpcore.glm._solver`; μ = Λ, Λ + Δ, Λ + Δ/n), plus for output-Gamma ``err`` and the
    rounding ``u(||θ̂|| + ||b||)`` of ``θ̂ + b``. ``e_fp`` grows with ``||θ̂||`` and ``||b||`` and
    ``err`` with ``||b||``, so dpcore evaluates them at public bounds: ``||θ*|| ≤ min(sqrt(2ℓ(0)/Λ),
    LR/Λ)`` (output), ``||θ|| ≤ (r/n + sqrt(r²/n² + 2μℓ(0)))/μ`` when ``||b|| ≤ r`` (objective:
    ``F(θ) ≥ (μ/2)||θ||² − ||b|| ||θ||/n`` and ``F(θ) ≤ F(0) ≤ ℓ(0)``), and a public radius
    ``r_pub`` for the noise. The noise is unbounded, so on the event ``G₁ = {||b_exact|| > r_pub}``
    the bound may fail: the implementation equals a mechanism satisfying the lemma except on
    ``G₁``, whose probability ``η₁`` does not depend on the data; this costs ``(1 + e^ε) η₁`` in δ
    (total-variation argument). ``r_pub``: Chernoff ``P[Gamma(d,1) > x] ≤ (x/d)^d e^{d−x}``;
    Gaussian concentration ``P[||g|| > √d + s] ≤ e^{−s²/2}``. For Gamma noise the coupled
    sampler's bound also involves ``1/||g||`` of the normal vector giving the direction; on
    ``G₂ = {||g|| < 2t₀}`` (small-ball bound ``P ≤ (2t₀²)^{d/2}/Γ(d/2+1)``) it may fail — ``G₂``
    is independent of ``b_exact`` (norm and direction of a standard normal are independent), so
    conditioning on its complement leaves the exact mechanism unchanged and it costs only
    ``η₂ = P[G₂]`` in δ. The actual ``err`` is checked against the public bound (a violation,
    possible only on ``G₁ ∪ G₂``, raises ``RuntimeError``; covered by the same δ). The solver must
    reach ``tol`` on every dataset (named assumption, as in :mod:`dpcore.kernel_learning.tddl`); otherwise
    :class:`ConvergenceError`.

Claims
    Output-Gauss: (ε, δ). Objective-Gauss: (ε, δ) with ``δ_fp = min(1e-12, rδ/2)`` of δ spent on
    ``G₁``. Output and Objective with Gamma noise are ε-DP in exact arithmetic; dpcore's float
    implementation is certified **(ε, δ_fp)**-DP with ``δ_fp = delta`` if given (> 0), else
    ``1e-12`` (``GAMMA_DEFAULT_DELTA``), split as ``(1 + e^ε) η₁ = η₂ = δ_fp/2``. Everything is
    recorded in ``privacy_`` and charged to ``accountant`` before the solve and before any noise.
"""

from __future__ import annotations

import logging
import math
import numbers
from dataclasses import asdict, dataclass
from typing import Any, Optional, Literal, Union, TYPE_CHECKING

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator

from dpcore._internal.cloning import PerCloneSeedMixin
from dpcore._internal.tags import binary_classifier_tags, regressor_tags
from dpcore._internal.fp import FP_ASSUMPTION, RADIUS_TOL, SLACK, UNIT_ROUNDOFF, gamma_k, round_down, round_up
from dpcore.glm._dask import BlockSpec, DaskDesign, DaskGLMObjective, dask_design
from dpcore.glm._data import encode_targets, project_rows
from dpcore.glm._losses import LOSSES, make_loss
from dpcore.accounting.events import epsilon_delta_event
from dpcore.glm._solver import (
    ConvergenceError, GLMObjective, certify_smooth, check_certifiable, gradient_fp_bound, hinge_gap_floor, resolve_tol,
    solve_hinge, solve_smooth,
)
from dpcore._internal.dask import is_dask_collection
from dpcore._internal.labels import DEFAULT_CLASSES, check_classes, default_classes
from dpcore._internal.linear import LinearPredictorMixin
from dpcore._internal.validation import (
    as_1d_target, check_X, check_delta, check_required, check_epsilon, check_feature_names, check_positive, check_scale, check_tol, record_feature_names,
)
from dpcore.mechanisms.noise import (
    grid_release, check_random_state, gamma_norm_vector_coupled, gaussian_plan, laplace_plan,
    normal_vector_coupled,
)
from dpcore._internal.validation import refuse_fit_params
from dpcore._internal.types import ArrayLike, Self, Labels, RandomState
from dpcore._internal.progress import check_verbose, progress_bar

if TYPE_CHECKING:
    from dpcore.accounting import BudgetAccountant

logger = logging.getLogger(__name__)

__all__ = [
    "OutputPerturbation",
    "ObjectivePerturbation",
    "ConvergenceError",
    "GLMPrivacy",
    "GLMCertificate",
    "FP_ASSUMPTION",
    "GAMMA_DEFAULT_DELTA",
]

_U = UNIT_ROUNDOFF
#: δ claimed by the Gamma-noise variants when ``delta`` is not given (floating-point tail events).
GAMMA_DEFAULT_DELTA = 1e-12
#: Cap on the δ spent on the noise-norm tail by the Gaussian objective variant.
GAUSS_FP_DELTA = 1e-12
_SLACK = SLACK
_NOISES = ("gaussian", "gamma")


_up = round_up
_down = round_down


# ----------------------------------------------------------------------------------------------
# records
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GLMPrivacy:
    """Every number of a GLM perturbation calibration (all public; see :mod:`dpcore.glm.perturbation`).

    Attributes
    ----------
    mechanism : ``"output"`` or ``"objective"``.
    noise, loss : as passed.
    epsilon, delta : the (ε, δ) guarantee claimed (and charged to the accountant).
    epsilon_main, delta_main : ε₁, δ₁ of the exact Gamma/Gaussian mechanism.
    epsilon_residual, delta_residual : ε₂, δ₂ of the residual release (0 for Output-Gauss).
    delta_fp : δ spent on floating-point tail events (``G₁``, ``G₂``; 0 for Output-Gauss).
    n, dim : training-set size and parameter dimension (including the intercept coordinate).
    lam : Λ.
    extra_reg : Δ in the SPEC's scaling (objective perturbation; 0 otherwise).
    strong_convexity : μ of the objective actually minimised (Λ, Λ+Δ or Λ+Δ/n).
    data_norm, data_norm_eff : the declared R and the radius used (tolerance, intercept).
    lipschitz, curvature : L and c.
    sensitivity : ``2LR_eff/(nμ)``, the L2 sensitivity of the exact minimiser (for fixed noise).
    noise_epsilon : ε' of the Gamma noise (objective), ε₁ (output Gamma), nan (Gaussian).
    noise_scale : Gamma scale s (density ∝ exp(−||b||/s)) or Gaussian σ of the main noise.
    residual_bound : public ρ (bound on ``||computed value − exact mechanism||``).
    residual_sensitivity : ``2ρ√d`` (L1, Laplace) / ``2ρ`` (L2, Gaussian) of the residual release;
        Output-Gauss: the sensitivity ``2LR/(Λn) + 2ρ`` of the single Gaussian release.
    release_scale : per-coordinate scale of the final exact grid release (Laplace b or Gaussian σ).
    release_granularity : grid spacing of the released values.
    tail_radius : public ``r_pub`` bounding ``||b_exact||`` outside ``G₁`` (0 if unused).
    small_ball_radius : ``t₀`` of ``G₂`` (Gamma noise; 0 otherwise).
    coupling_error_bound : public bound on the sampler's ``||b − b_exact||`` outside ``G₁ ∪ G₂``.
    theta_norm_bound : public bound on ``||θ̂||`` used for the floating-point bound.
    fp_bound : public floating-point bound of the gradient evaluation.
    tol : solver tolerance (gradient norm; duality gap for the hinge loss).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import OutputPerturbation
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 3)); X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    >>> y = np.where(X[:, 0] > 0, 1, -1)
    >>> rec = OutputPerturbation(epsilon=1.0, delta=1e-6, lam=0.01, data_norm=1.0, random_state=0).fit(X, y).privacy_
    >>> rec.mechanism, rec.n, rec.epsilon
    ('output', 500, 1.0)
    """

    mechanism: str
    noise: str
    loss: str
    epsilon: float
    delta: float
    epsilon_main: float
    delta_main: float
    epsilon_residual: float
    delta_residual: float
    delta_fp: float
    n: int
    dim: int
    lam: float
    extra_reg: float
    strong_convexity: float
    data_norm: float
    data_norm_eff: float
    lipschitz: float
    curvature: float
    sensitivity: float
    noise_epsilon: float
    noise_scale: float
    residual_bound: float
    residual_sensitivity: float
    release_scale: float
    release_granularity: float
    tail_radius: float
    small_ball_radius: float
    coupling_error_bound: float
    theta_norm_bound: float
    fp_bound: float
    tol: float

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class GLMCertificate:
    """Certificate of one fit. **Not private** (computed from the data): a diagnostic, not for release.

    Attributes
    ----------
    grad_norm : computed ``||∇F(θ̂)||`` rounded up (nan for the hinge loss).
    duality_gap : certified duality gap (hinge loss; nan otherwise).
    fp_bound : floating-point error bound of the gradient (or gap) evaluation.
    coupling_error : ``||b − b_exact||`` reported by the noise sampler (0 without noise).
    residual : bound on ``||computed value − exact mechanism value||`` for this fit.
    residual_bound : the public ρ it was checked against (``residual ≤ residual_bound``).
    strong_convexity : μ.
    n_iter : solver iterations.
    method : solver used.
    """

    grad_norm: float
    duality_gap: float
    fp_bound: float
    coupling_error: float
    residual: float
    residual_bound: float
    strong_convexity: float
    n_iter: int
    method: str

    def as_dict(self) -> dict:
        return asdict(self)


# ----------------------------------------------------------------------------------------------
# tails
# ----------------------------------------------------------------------------------------------
def _gamma_tail_radius(d: int, scale: float, log_eta: float) -> float:
    """``r`` with ``P[Gamma(d, scale) > r] ≤ exp(log_eta)`` (Chernoff: ``(x/d)^d e^{d−x}``, x = r/scale > d)."""
    f = lambda x: d * math.log(x / d) + d - x - log_eta  # noqa: E731  decreasing for x > d, f(d) > 0
    lo, hi = float(d), float(d) + 2.0 * (1.0 - log_eta)
    while f(hi) > 0:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    return _up(hi * scale, 1e-9)


def _gauss_tail_radius(d: int, sigma: float, log_eta: float) -> float:
    """``r`` with ``P[||N(0, σ² I_d)|| > r] ≤ exp(log_eta)`` (``P[||g|| > √d + s] ≤ e^{−s²/2}``)."""
    return _up(sigma * (math.sqrt(d) + math.sqrt(-2.0 * log_eta)), 1e-9)


def _small_ball_radius(d: int, log_eta: float) -> float:
    """``t₀`` with ``P[||g|| < 2 t₀] ≤ exp(log_eta)`` for ``g ~ N(0, I_d)``: ``P[||g|| ≤ s] ≤ (s²/2)^{d/2}/Γ(d/2+1)``."""
    log_half_s2 = (log_eta + math.lgamma(d / 2.0 + 1.0)) * 2.0 / d
    s = math.sqrt(2.0 * math.exp(log_half_s2))
    return _down(0.5 * s, 1e-9)


def _gamma_coupling_bound(d: int, scale: float, r_pub: float, t0: float) -> float:
    """Public bound on the Gamma-norm sampler's ``err`` when ``||b_exact|| ≤ r_pub`` and ``||g|| ≥ 2t₀``.

    From the error propagation of ``src/mechanisms/noise/coupled.rs`` (``gamma_norm_vector_coupled``): with
    ``r̂`` the computed Gamma(d,1) radius and ``n̂ ≥ t₀`` the computed ``||ĝ||`` (``n̂ ≥ ||g|| −
    √d·2^-63 ≥ t₀``), first-order expansion of its interval arithmetic gives
    ``err/scale ≤ 2.05·d·2^-52 + r̂ (51u + 3.1 γ_d) + 5.2 r̂ √d 2^-64 / n̂`` as long as its relative
    terms are ``≤ 1/2`` (guaranteed by ``t₀ ≥ √d·2^-60``); we use twice that with
    ``r̂ ≤ (r_pub/scale + d·2^-51)(1 + 2(5u + γ_d))``.
    """
    x = (r_pub / scale + d * 2.0**-51) * (1.0 + 2.0 * (5.0 * _U + gamma_k(d)))
    inner = 2.05 * d * 2.0**-52 + x * ((51.0 + 4.0 * d) * _U + 6.0 * math.sqrt(d) * 2.0**-64 / t0)
    return _up(2.0 * scale * inner, 1e-6)


def _gauss_coupling_bound(d: int, sigma: float, r_pub: float) -> float:
    """Public bound on ``normal_vector_coupled``'s ``err`` when ``||b_exact|| ≤ r_pub``.

    ``err ≤ (1+64u)(u σ n̂ (1+γ_{d+2}) + σ g_err)``, ``g_err ≤ (1+64u)(√d 2^-64 + 2.01 u n̂(1+γ_{d+2}))``
    and ``σ n̂ ≤ r_pub + σ √d 2^-63``; we use twice the first-order bound.
    """
    nb = r_pub + sigma * math.sqrt(d) * 2.0**-63
    inner = sigma * math.sqrt(d) * 2.0**-64 + 3.1 * _U * (1.0 + gamma_k(d + 2)) * nb
    return _up(2.0 * inner, 1e-6)


def _log_one_plus_exp(eps: float) -> float:
    return float(np.logaddexp(0.0, eps))


# ----------------------------------------------------------------------------------------------
# shared estimator
# ----------------------------------------------------------------------------------------------
def _check_int(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_bool(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a bool, got {value!r}")
    return bool(value)


class _Prepared:
    """Validated design matrix, labels and public calibration of one fit (no noise drawn)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


class _GLMPerturbation(PerCloneSeedMixin, LinearPredictorMixin, BaseEstimator):
    """Shared implementation of :class:`OutputPerturbation` and :class:`ObjectivePerturbation`."""

    _mechanism = ""
    #: Test hook for deliberately broken copies; must stay 1.0.
    _noise_scale_factor = 1.0

    #: the fitted model is a DP release (see dpcore._internal.tags.expected_failed_checks)
    _dp_release = True

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        if self.loss == "squared":
            return regressor_tags(tags, sparse=True)
        return binary_classifier_tags(tags, sparse=True)

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: Optional[float] = None,
        *,
        lam: float = 1e-3,
        data_norm: Optional[float] = None,
        loss: Literal["logistic", "huber_svm", "hinge", "squared"] = "logistic",
        noise: Literal["gaussian", "gamma"] = "gaussian",
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        huber_width: float = 0.5,
        label_bound: Optional[float] = None,
        clip: bool = False,
        classes: Labels = DEFAULT_CLASSES,
        tol: Union[float, Literal["auto"]] = "auto",
        max_iter: int = 1000,
        residual_share: float = 0.01,
        verbose: bool | int = False,
        random_state: RandomState = None,
        accountant: Optional[BudgetAccountant] = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.lam = lam
        self.data_norm = data_norm
        self.loss = loss
        self.noise = noise
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.huber_width = huber_width
        self.label_bound = label_bound
        self.clip = clip
        self.classes = classes
        self.tol = tol
        self.max_iter = max_iter
        self.residual_share = residual_share
        self.verbose = verbose
        self.random_state = random_state
        self.accountant = accountant

    # -- validation ----------------------------------------------------------------------------
    def _validate_params(self) -> dict:
        missing = []
        if self.noise == "gaussian" and self.delta is None:
            missing.append(("delta", "δ in (0, 1) for noise='gaussian', well below 1/n, e.g. 1e-6"))
        if self.data_norm is None:
            missing.append(("data_norm", "the declared bound R on ||x||, public and never derived from the data"))
        if self.loss == "squared" and self.label_bound is None:
            missing.append(("label_bound", "the declared bound B on |y| for loss='squared', public; it enters the "
                                           "sensitivity"))
        check_required(type(self).__name__, missing)
        epsilon = check_epsilon(self.epsilon)
        if not isinstance(self.loss, str) or self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        if not isinstance(self.noise, str) or self.noise not in _NOISES:
            raise ValueError(f"noise must be one of {_NOISES}, got {self.noise!r}")
        if self.noise == "gaussian":
            if self.delta is None:
                raise ValueError("delta must be given (in (0, 1)) for noise='gaussian'")
            delta = check_delta(self.delta, allow_zero=False)
        else:
            if self.delta is None:
                delta = GAMMA_DEFAULT_DELTA
            else:
                delta = check_delta(self.delta)
                if delta == 0.0:
                    raise ValueError(
                        "delta=0 is not available with noise='gamma': the Gamma mechanisms are pure ε-DP only "
                        "in exact arithmetic; dpcore's floating-point implementation is certified (ε, δ)-DP with "
                        f"a tiny δ — pass delta=None (δ = {GAMMA_DEFAULT_DELTA:g}) or a δ > 0"
                    )
        lam = check_scale(self.lam, "lam")
        if self.data_norm is None:
            raise ValueError(
                "data_norm must be given: the declared bound R on ||x|| is public and is never derived from the data"
            )
        R = check_positive(self.data_norm, "data_norm")
        fit_intercept = _check_bool(self.fit_intercept, "fit_intercept")
        scaling = check_positive(self.intercept_scaling, "intercept_scaling")
        h = check_positive(self.huber_width, "huber_width")
        clip = _check_bool(self.clip, "clip")
        tol = check_tol(self.tol, "tol")
        max_iter = _check_int(self.max_iter, "max_iter")
        share = self.residual_share
        if isinstance(share, bool) or not isinstance(share, numbers.Real) or not (0.0 < float(share) < 1.0):
            raise ValueError(f"residual_share must lie in (0, 1), got {share!r}")
        share = float(share)
        B = None
        if self.loss == "squared":
            if self.label_bound is None:
                raise ValueError(
                    "label_bound must be given for loss='squared': the declared bound B on |y| is public and "
                    "enters the sensitivity (never derived from the data)"
                )
            B = check_positive(self.label_bound, "label_bound")
        self._check_loss_allowed(self.loss)
        loss = make_loss(self.loss, huber_width=h, label_bound=B)
        return dict(epsilon=epsilon, delta=delta, lam=lam, R=R, fit_intercept=fit_intercept, scaling=scaling,
                    loss=loss, clip=clip, tol=tol, max_iter=max_iter, share=share, noise=self.noise)

    def _check_loss_allowed(self, loss: str) -> None:
        pass

    def _validate_data(self, X, y, p: dict):
        X = check_X(X, "X", accept_sparse=True)
        if sparse.issparse(X):
            X = X.copy()  # never modify the caller's matrix
            X.sum_duplicates()
            X.sort_indices()
        else:
            X = np.ascontiguousarray(X, dtype=np.float64)
        n, d = X.shape
        y = as_1d_target(y)
        if y.ndim != 1:
            raise ValueError(f"y must be a 1-D array, got shape {y.shape}")
        if y.shape[0] != n:
            raise ValueError(f"y must have length {n} (the number of rows of X), got {y.shape[0]}")
        classes, y_pm = encode_targets(y, loss=p["loss"], classes=self.classes, clip=p["clip"])
        X = project_rows(X, data_norm=p["R"], clip=p["clip"])
        return X, y_pm, classes, n, d

    def _design(self, X, p: dict):
        if not p["fit_intercept"]:
            return X
        n = X.shape[0]
        col = np.full((n, 1), p["scaling"])
        if sparse.issparse(X):
            return sparse.hstack([X, sparse.csr_matrix(col)], format="csr")
        return np.hstack([X, col])

    # -- calibration (public quantities only) ------------------------------------------------
    def _curvature_term(self, c: float, R: float) -> float:
        """``c R²``: the per-record bound on the loss Hessian (test hook; broken copies override it)."""
        return c * R * R

    def _gauss_zeta(self, L: float, R: float) -> float:
        """``ζ = L R`` of the Objective-Gauss calibration (test hook)."""
        return L * R

    def _calibrate(self, n: int, d: int, dim: int, p: dict) -> GLMPrivacy:
        raise NotImplementedError

    def _radius_eff(self, d: int, p: dict) -> float:
        # accepted computed norms ≤ R(1 + RADIUS_TOL); the computed norm of a row is within a
        # relative γ_{d+2} of its true norm (clip=True projects onto the same bound).
        R = p["R"] * (1.0 + RADIUS_TOL) * (1.0 + gamma_k(d + 4))
        if p["fit_intercept"]:
            R = math.sqrt(R * R + p["scaling"] ** 2) * (1.0 + 4.0 * _U)
        return _up(R)

    def _prepare(self, X, y) -> _Prepared:
        """Validate everything and calibrate; no noise drawn, no budget charged (used by fit and audits)."""
        p = self._validate_params()
        if is_dask_collection(X) or is_dask_collection(y):
            return self._prepare_dask(X, y, p)
        X, y_pm, classes, n, d = self._validate_data(X, y, p)
        design = self._design(X, p)
        dim = design.shape[1]
        cal = self._calibrate(n, d, dim, p)
        return _Prepared(X=design, y=y_pm, classes=classes, n=n, d=d, dim=dim, cal=cal, p=p, loss=p["loss"])

    def _prepare_dask(self, X, y, p: dict) -> _Prepared:
        """:meth:`_prepare` for Dask input: the records stay in their blocks (:mod:`dpcore.glm._dask`).

        Shapes are checked from the metadata; then one pass validates every record against the declared
        bounds (the same per-record checks and messages as in memory), before anything is charged.
        """
        loss = p["loss"]
        if not loss.smooth:
            raise ValueError(
                f"loss={loss.name!r} is not available on Dask input: its certified solver works on the n dual "
                "variables in memory; use a smooth loss ('logistic' or 'huber_svm') or in-memory X")
        if not is_dask_collection(X):
            raise TypeError(f"X must be a Dask array or DataFrame when y is a Dask collection, got {type(X).__name__}")
        spec = BlockSpec(loss=loss, classes=self.classes, data_norm=p["R"], clip=p["clip"],
                         scaling=p["scaling"] if p["fit_intercept"] else None)
        classes = None
        if loss.classification:
            classes = (check_classes(self.classes, "classes") if self.classes is not None
                       else default_classes(getattr(y, "dtype", np.asarray(y).dtype)))
        design = dask_design(X, y, spec)
        design.validate()
        n, d, dim = design.n, design.d, design.dim
        cal = self._calibrate(n, d, dim, p)
        return _Prepared(X=design, y=None, classes=classes, n=n, d=d, dim=dim, cal=cal, p=p, loss=loss)

    def _opt_residual(self, n, dim, R, loss, mu, tol, theta_star_bound, b_norm, extra=0.0, sum_terms=None):
        """Public ``(ρ_opt, θ̂ bound, e_fp, tol)``: ``ρ_opt = (tol + e_fp + extra/n)/μ`` at ``||θ̂|| ≤ θ* bound + ρ_opt``.

        ``sum_terms``: :func:`~dpcore.glm._solver.gradient_fp_bound`'s ``k`` (``None``: the blocked pairwise sums
        of both the in-memory and the Dask solver, :func:`dpcore._internal.fp.blocked_sum_terms`, a function of
        the public ``n`` only).
        """
        def at(t):
            theta_hat = theta_star_bound * (1.0 + 1e-6) + 2.0 * (t + extra / n) / mu + 1e-300
            for _ in range(4):
                fp = gradient_fp_bound(n=n, d=dim, radius=R, theta_norm=theta_hat, b_norm=b_norm, mu=mu, loss=loss,
                                       sum_terms=sum_terms)
                rho = _up((t + fp + extra / n) / mu, 1e-9)
                if theta_star_bound + rho <= theta_hat:
                    return rho, theta_hat, fp
                theta_hat = (theta_star_bound + rho) * 1.01
            raise ValueError("could not compute a public residual bound (numerically degenerate parameters)")

        tol = resolve_tol(tol, lambda t: at(t)[2])
        rho, theta_hat, fp = at(tol)
        check_certifiable(tol, fp, "certified gradient norm")
        return rho, theta_hat, fp, tol

    # -- noise ---------------------------------------------------------------------------------
    def _sample_noise(self, prep: _Prepared, rng):
        """One coupled noise vector ``(b, err)`` of the calibrated law."""
        cal = prep.cal
        if cal.noise == "gamma":
            return gamma_norm_vector_coupled(prep.dim, cal.noise_scale, random_state=rng)
        return normal_vector_coupled(prep.dim, cal.noise_scale, random_state=rng)

    def _sample_noise_many(self, prep: _Prepared, k: int, rng):
        """``k`` independent draws of :meth:`_sample_noise` as ``(B (k, dim), errs (k,))``."""
        B = np.empty((k, prep.dim))
        errs = np.empty(k)
        for i in range(k):
            B[i], errs[i] = self._sample_noise(prep, rng)
        return B, errs

    def _check_coupling(self, prep: _Prepared, err) -> None:
        bound = prep.cal.coupling_error_bound
        if not np.all(np.asarray(err) <= bound):
            raise RuntimeError(
                f"the noise sampler's coupling error {float(np.max(err)):.3e} exceeds the public bound {bound:.3e}: "
                "either an event of probability <= privacy_.delta_fp occurred (the release is withheld; refit) or "
                "the sampler's error bound changed (report this)"
            )

    def _release_plan(self, prep: _Prepared):
        cal = prep.cal
        if cal.noise == "gaussian":
            if self._mechanism == "output":
                return gaussian_plan(cal.residual_sensitivity, cal.epsilon_main, cal.delta_main, dim=prep.dim)
            return gaussian_plan(cal.residual_sensitivity, cal.epsilon_residual, cal.delta_residual, dim=prep.dim)
        return laplace_plan(cal.residual_sensitivity, cal.epsilon_residual, dim=prep.dim)

    def _release(self, prep: _Prepared, values: np.ndarray, rng) -> np.ndarray:
        """Exact grid release of each row of ``values`` (shape (k, dim)) with the calibrated plan."""
        values = np.ascontiguousarray(values, dtype=np.float64)
        k = values.shape[0]
        out = grid_release(values.reshape(-1), self._release_plan(prep), rng)
        return np.asarray(out, dtype=np.float64).reshape(k, prep.dim)

    # -- solving -------------------------------------------------------------------------------
    def _solve(self, prep: _Prepared, b: Optional[np.ndarray] = None, err: float = 0.0):
        """Certified minimiser of the objective actually used (``b``: objective perturbation noise)."""
        cal, p = prep.cal, prep.p
        name = type(self).__name__
        if prep.loss.name == "hinge":
            with progress_bar(self.verbose, total=p["max_iter"], desc=f"{name} solve", unit="it") as bar:
                theta, hc = solve_hinge(prep.X, prep.y, lam=cal.lam, tol=cal.tol, max_iter=p["max_iter"],
                                        radius=cal.data_norm_eff, bar=bar)
            logger.info("%s: hinge solver certified duality gap %.3e (tol %.1e) after %d iterations", name,
                        hc.duality_gap, cal.tol, hc.n_iter)
            cert = GLMCertificate(grad_norm=math.nan, duality_gap=hc.duality_gap, fp_bound=hc.fp_bound,
                                  coupling_error=0.0, residual=hc.residual, residual_bound=math.nan,
                                  strong_convexity=cal.lam, n_iter=hc.n_iter, method=hc.method)
            return theta, cert
        if isinstance(prep.X, DaskDesign):
            obj = DaskGLMObjective(prep.X, prep.loss, cal.strong_convexity, b)
        else:
            obj = GLMObjective(prep.X, prep.y, prep.loss, cal.strong_convexity, b)
        with progress_bar(self.verbose, total=2 * p["max_iter"], desc=f"{name} solve", unit="it") as bar:
            theta, n_iter = solve_smooth(obj, tol=cal.tol, max_iter=p["max_iter"], radius=cal.data_norm_eff,
                                         bar=bar)
        sc = certify_smooth(obj, theta, radius=cal.data_norm_eff, coupling_error=err, n_iter=n_iter)
        logger.info("%s: certified gradient norm %.3e (tol %.1e) after %d iterations%s", name, sc.grad_norm,
                    cal.tol, sc.n_iter, f" ({obj.passes} passes over the Dask blocks)"
                    if isinstance(obj, DaskGLMObjective) else "")
        if not sc.grad_norm <= cal.tol:
            raise ConvergenceError(
                f"certified gradient norm {sc.grad_norm:.3e} > tol={cal.tol:.3e}; refusing to release"
            )
        cert = GLMCertificate(grad_norm=sc.grad_norm, duality_gap=math.nan, fp_bound=sc.fp_bound,
                              coupling_error=float(err), residual=sc.residual, residual_bound=math.nan,
                              strong_convexity=sc.strong_convexity, n_iter=sc.n_iter, method=sc.method)
        return theta, cert

    # -- fitting -------------------------------------------------------------------------------
    def _reset(self):
        for attr in ("coef_", "intercept_", "classes_", "n_features_in_", "privacy_", "dp_event_", "tol_"):
            self.__dict__.pop(attr, None)

    def fit(self, X: ArrayLike, y: ArrayLike, **fit_params: Any) -> Self:
        """Fit the private model on ``(X, y)``.

        Validates everything and computes the public calibration, charges ``accountant`` the
        claimed ``(privacy_.epsilon, privacy_.delta)``, then solves and draws the noise.

        Parameters
        ----------
        X : array-like, scipy.sparse matrix, Dask array or Dask DataFrame of shape (n_samples, n_features)
            Rows with ``||x|| ≤ data_norm`` (sparse input is never densified). With Dask input the records
            stay in their blocks: the certified solver runs by map-reduce (:mod:`dpcore.glm._dask`; each
            pass sends ``θ`` to the workers and brings back one vector per block) and one extra pass
            validates every record before anything is charged. Smooth losses only (not ``"hinge"``).
            The noise is drawn here, on the client, from ``random_state``: partitioning changes
            neither the calibration nor the guarantee (docs/scaling.md).
        y : array-like, Dask array or Dask Series of shape (n_samples,)
            Two classes (classification losses) or real targets with ``|y| ≤ label_bound``
            (``loss="squared"``).

        **fit_params
            Refused with a ``TypeError`` naming them (``sample_weight`` is not supported: per-record
            weights change the sensitivity; see ``class_weight``).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Invalid parameters or data (the message names the parameter).
        ConvergenceError
            The solver did not reach ``tol`` (nothing is released).
        """
        refuse_fit_params(type(self).__name__, fit_params)
        X_in = X
        check_verbose(self.verbose)
        prep = self._prepare(X, y)
        cal = prep.cal
        rng = check_random_state(self.random_state)
        self._reset()
        # Gaussian or Gamma noise plus the exact release covering the solver/float residual ρ and the
        # noise-norm tail δ_fp: an (ε, δ) guarantee with slack terms, so EpsilonDeltaDpEvent (accounting.events)
        self.dp_event_ = epsilon_delta_event(cal.epsilon, cal.delta)
        if self.accountant is not None:
            self.accountant.spend(cal.epsilon, cal.delta, event=self.dp_event_,
                                  label=f"{type(self).__name__}({cal.noise}, {cal.loss})")
        logger.info("%s(%s, %s): charged (epsilon=%.6g, delta=%.3g)", type(self).__name__, cal.noise, cal.loss,
                    cal.epsilon, cal.delta)
        released, cert = self._fit_release(prep, rng)
        theta = released[0]
        if prep.p["fit_intercept"]:
            self.coef_ = theta[:-1].copy()
            self.intercept_ = float(theta[-1] * prep.p["scaling"])
        else:
            self.coef_ = theta.copy()
            self.intercept_ = 0.0
        if prep.classes is not None:
            self.classes_ = prep.classes
        self.n_features_in_ = prep.d
        self.privacy_ = cal
        self.tol_ = float(cal.tol)  # the resolved tolerance (tol="auto": a function of public parameters only)
        # The solver certificate (gradient norm / duality gap, iteration count) is a function of the
        # data that the proof does not cover: it was checked against the public bound
        # privacy_.residual_bound and is discarded, never stored on the released model.
        record_feature_names(self, X_in)
        return self

    def _fit_release(self, prep, rng):
        raise NotImplementedError

    # -- prediction ----------------------------------------------------------------------------
    def _decision_values(self, X) -> np.ndarray:
        """``<coef_, x> + intercept_`` for every row of ``X`` (dense or sparse)."""
        self._check_fitted()
        X_in = X
        X = check_X(X, "X", n_features=self.n_features_in_, accept_sparse=True, estimator=type(self).__name__)
        check_feature_names(self, X_in)
        return self._linear_decision(X, self.intercept_)

    # -- audit support -------------------------------------------------------------------------
    def _release_samples(self, X, y, n_samples: int, random_state=None) -> np.ndarray:
        """``n_samples`` independent releases of the mechanism on ``(X, y)`` (for audits; no budget).

        Shape ``(n_samples, dim)`` (dim includes the intercept coordinate).
        """
        raise NotImplementedError


# ----------------------------------------------------------------------------------------------
# output perturbation
# ----------------------------------------------------------------------------------------------
_COMMON_PARAMS_DOC = """
    Parameters
    ----------
    epsilon : float, default 1.0
        ε > 0 of the guarantee.
    delta : float, optional
        ``noise="gaussian"``: δ in (0, 1), required. ``noise="gamma"``: the δ of the certified
        floating-point implementation (default ``None`` → ``1e-12``; must be > 0).
    lam : float, default 1e-3
        Λ > 0 (regularisation of every coordinate, intercept included). scikit-learn's ``C`` is
        ``1/(n Λ)``.
    data_norm : float
        Declared R > 0 with ``||x|| ≤ R`` for every row (required; never derived from the data).
    loss : {"logistic", "huber_svm", "hinge", "squared"}, default "logistic"
    noise : {"gaussian", "gamma"}, default "gaussian"
    fit_intercept : bool, default True
        Append the constant feature ``intercept_scaling`` (regularised like every coordinate).
    intercept_scaling : float, default 1.0
    huber_width : float, default 0.5
        Width h of ``loss="huber_svm"`` (c = 1/(2h)).
    label_bound : float, optional
        Declared B with ``|y| ≤ B`` (required for ``loss="squared"``).
    clip : bool, default False
        Project rows outside the ball onto it (and clip labels to ``[−B, B]``) instead of raising.
    classes : sequence of two labels or None, default=None
        ``None`` (default): the fixed default rule — a label equal to 1 or True is the
        positive class, 0, −1 or False the negative one (so y in {0, 1}, {−1, 1} or {False, True}
        trains unchanged); ``classes_`` then follows the dtype of ``y`` only: ``[False, True]``
        (bool), ``[0, 1]`` (unsigned), else ``[-1, 1]``, and ``score`` compares through the rule.
        Declare ``classes=(0, 1)`` to get 0/1 predictions from a signed 0/1 ``y``.
        The declared (public) label set of the classification losses; ``classes_[1]`` is +1.
        Labels outside it are refused; a training set with only one of the two classes trains
        normally. Never inferred from ``y`` (that would leak through refusals and relabelling).
    tol : float or "auto", default "auto"
        Certified gradient-norm tolerance of the solver (duality-gap tolerance for the hinge loss). ``"auto"``:
        the smallest certifiable value, ``CERTIFY_MARGIN = 2`` times the public worst-case float floor of the
        certificate (a function of n, d, ``lam``, ``data_norm``, the loss and the noise calibration only, never of
        X or y; recorded as ``tol_`` and ``privacy_.tol``). A float below that is refused before any charge.
    max_iter : int, default 1000
        Iteration limit (L-BFGS-B and Newton each); :class:`ConvergenceError` if ``tol`` is not met.
    residual_share : float, default 0.01
        Share r of the budget spent on the residual release (see the module docstring).
    verbose : bool or int, default=False
        Show tqdm progress bars (stderr) during long calls; ``False``/``0`` shows nothing. Progress and the
        :mod:`logging` messages are for the curator only and never part of a release.
        The bar counts solver iterations (total ``max_iter``; ``2·max_iter`` for L-BFGS-B then Newton).
    random_state : None, int or ChaChaRng
        ``None`` (default): OS-seeded ChaCha20 (the only setting fit for real data); an int:
        reproducible, for research and tests only.
        With an int, clone k of this estimator (made by ``OneVsRestClassifier``, ``cross_val_score``, ...) gets
        the seed derived from the int and k: distinct, reproducible noise streams; ``None`` stays ``None``, a
        ``ChaChaRng`` cannot be cloned (docs/sklearn.md). Use ``None`` for private use.
    accountant : BudgetAccountant, optional
        Charged ``(privacy_.epsilon, privacy_.delta)`` in :meth:`fit` before the solve and the noise.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
        ``θ_last · intercept_scaling`` (0.0 without intercept).
    classes_ : ndarray of shape (2,)
        The labels; ``classes_[1]`` is +1 (classification losses only).
    n_features_in_ : int
    tol_ : float
        The solver tolerance used (``tol``, or its public value for ``tol="auto"``).
    privacy_ : GLMPrivacy
        The claimed guarantee and every calibrated number (public).

    The solver's certificate and iteration count are functions of the data that the guarantee does
    not cover; they are checked against the public ``privacy_.residual_bound`` inside ``fit`` and
    not kept (earlier versions exposed them as ``certificate_`` / ``n_iter_``).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore.glm.perturbation import OutputPerturbation, ObjectivePerturbation
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 3)); X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    >>> y = np.where(X[:, 0] > 0, "yes", "no")
    >>> clf = ObjectivePerturbation(epsilon=1.0, delta=1e-6, lam=0.01, data_norm=1.0, classes=["no", "yes"],
    ...                             random_state=0).fit(X, y)
    >>> clf.privacy_.epsilon, clf.privacy_.delta  # as calibrated: rounded down onto the budget grid (docs/privacy.md)
    (1.0, 9.999999999975306e-07)
    >>> hasattr(clf, "certificate_")  # data-dependent diagnostics are not released
    False
"""


class OutputPerturbation(_GLMPerturbation):
    __doc__ = r"""Private GLM by output perturbation: ``θ* + noise`` (Output and Output-Gauss).

    ``noise="gamma"``: Chaudhuri et al. (2011) — ``θ* + b``, density of ``b`` ∝ ``exp(−β||b||)``,
    ``β = nΛε₁/(2LR)``; the float value ``θ̂ + b`` is then released through the exact grid Laplace
    mechanism for the residual (ε₂). Claimed (ε, δ_fp).

    ``noise="gaussian"``: Jain & Thakurta (2014) — ``θ* + N(0, σ²I)`` with the analytic-Gaussian σ
    for L2 sensitivity ``2LR/(Λn) + 2ρ`` (ρ the public solver/float residual), sampled exactly on a
    grid. Claimed (ε, δ).

    Losses: ``logistic``, ``huber_svm``, ``hinge`` (certified by a duality gap:
    ``ρ = sqrt(2 tol/Λ)``), and ``squared`` (regression; ``L = R·B/√Λ + B``, see
    :mod:`dpcore.glm.perturbation` for the proof). See :mod:`dpcore.glm.perturbation` for every proof sketch.
    """ + _COMMON_PARAMS_DOC

    _mechanism = "output"

    def _calibrate(self, n, d, dim, p):
        eps, lam, loss, tol, share = p["epsilon"], p["lam"], p["loss"], p["tol"], p["share"]
        R = self._radius_eff(d, p)
        ell0 = loss.loss_at_zero()
        theta_star = math.sqrt(2.0 * ell0 / lam) * (1.0 + 4.0 * _U)
        if loss.classification:
            L = 1.0
            theta_star = min(theta_star, _up(L * R / lam))
        else:
            L = _up(R * loss.label_bound / math.sqrt(lam) + loss.label_bound, 1e-9)
        c = loss.curvature
        sens = _up(2.0 * L * R / (lam * n), 1e-9)
        if loss.smooth:
            rho_opt, theta_hat, fp, tol = self._opt_residual(n, dim, R, loss, lam, tol, theta_star, 0.0,
                                                        sum_terms=p.get("sum_terms"))
        else:
            tol = resolve_tol(tol, lambda t: hinge_gap_floor(n=n, d=dim, radius=R, lam=lam, tol=t))
            check_certifiable(tol, hinge_gap_floor(n=n, d=dim, radius=R, lam=lam, tol=tol), "certified duality gap")
            rho_opt = _up(math.sqrt(2.0 * tol / lam), 1e-9)
            theta_hat, fp = theta_star + rho_opt, 0.0
        common = dict(mechanism="output", noise=p["noise"], loss=loss.name, n=n, dim=dim, lam=lam, extra_reg=0.0,
                      strong_convexity=lam, data_norm=p["R"], data_norm_eff=R, lipschitz=L,
                      curvature=c if math.isfinite(c) else math.nan, sensitivity=sens,
                      theta_norm_bound=theta_hat, fp_bound=fp, tol=tol)
        f = self._noise_scale_factor
        if p["noise"] == "gaussian":
            delta = p["delta"]
            total_sens = _up(sens + 2.0 * rho_opt, 1e-9)
            plan = gaussian_plan(total_sens * f, eps, delta, dim=dim)
            return GLMPrivacy(
                epsilon=eps, delta=delta, epsilon_main=eps, delta_main=delta, epsilon_residual=0.0,
                delta_residual=0.0, delta_fp=0.0, noise_epsilon=math.nan, noise_scale=plan.sigma,
                residual_bound=rho_opt, residual_sensitivity=total_sens * f, release_scale=plan.sigma,
                release_granularity=plan.granularity, tail_radius=0.0, small_ball_radius=0.0,
                coupling_error_bound=0.0, **common)
        # Gamma noise
        delta_fp = p["delta"]
        eps2 = share * eps
        eps1 = eps - eps2
        scale = _up(2.0 * L * R / (n * lam * eps1), 1e-9) * f
        log_eta1 = math.log(delta_fp / 2.0) - _log_one_plus_exp(eps)
        r_pub = _gamma_tail_radius(dim, scale, log_eta1)
        t0 = _small_ball_radius(dim, math.log(delta_fp / 2.0))
        self._check_t0(t0, dim)
        err_pub = _gamma_coupling_bound(dim, scale, r_pub, t0)
        # ||fl(θ̂ + b) − (θ* + b_exact)|| ≤ ρ_opt + err + u(||θ̂|| + ||b||)
        rho = _up(rho_opt + err_pub + 1.01 * _U * (theta_hat + r_pub + err_pub), 1e-9)
        res_sens = _up(2.0 * rho * math.sqrt(dim), 1e-9)
        plan = laplace_plan(res_sens, eps2, dim=dim)
        return GLMPrivacy(
            epsilon=eps, delta=delta_fp, epsilon_main=eps1, delta_main=0.0, epsilon_residual=eps2,
            delta_residual=0.0, delta_fp=delta_fp, noise_epsilon=eps1, noise_scale=scale, residual_bound=rho,
            residual_sensitivity=res_sens, release_scale=plan.scale, release_granularity=plan.granularity,
            tail_radius=r_pub, small_ball_radius=t0, coupling_error_bound=err_pub, **common)

    @staticmethod
    def _check_t0(t0, dim):
        if not t0 >= math.sqrt(dim) * 2.0**-60:
            raise ValueError(
                "delta is too small for noise='gamma' in this dimension: the sampler's error bound cannot be made "
                "public (small-ball radius below sqrt(d)*2^-60); use a larger delta"
            )

    def _fit_release(self, prep, rng):
        cal = prep.cal
        theta, cert = self._solve(prep)
        rho_opt = cal.residual_bound if cal.noise == "gaussian" else None
        if cal.noise == "gaussian":
            if not cert.residual <= rho_opt:
                raise ConvergenceError(
                    f"certified residual {cert.residual:.3e} exceeds the public bound {rho_opt:.3e}; refusing to release"
                )
            released = self._release(prep, theta[None, :], rng)
            cert = _with(cert, residual_bound=rho_opt)
            return released, cert
        b, err = self._sample_noise(prep, rng)
        self._check_coupling(prep, err)
        value = theta + b
        residual = _up(cert.residual + err + 1.01 * _U * (_norm_up(theta) + _norm_up(b)), 1e-9)
        if not residual <= cal.residual_bound:
            raise RuntimeError(
                f"residual {residual:.3e} exceeds the public bound {cal.residual_bound:.3e} (probability <= "
                "privacy_.delta_fp event, or the solver missed tol); nothing released"
            )
        released = self._release(prep, value[None, :], rng)
        cert = _with(cert, coupling_error=float(err), residual=residual, residual_bound=cal.residual_bound)
        return released, cert

    def _release_samples(self, X, y, n_samples, random_state=None):
        prep = self._prepare(X, y)
        rng = check_random_state(random_state)
        theta, _ = self._solve(prep)
        if prep.cal.noise == "gaussian":
            out = grid_release(theta, self._release_plan(prep), rng, int(n_samples))
            return np.asarray(out, dtype=np.float64).reshape(int(n_samples), prep.dim)
        B, errs = self._sample_noise_many(prep, int(n_samples), rng)
        self._check_coupling(prep, errs)
        return self._release(prep, theta[None, :] + B, rng)


# ----------------------------------------------------------------------------------------------
# objective perturbation
# ----------------------------------------------------------------------------------------------
class ObjectivePerturbation(_GLMPerturbation):
    __doc__ = r"""Private GLM by objective perturbation (Objective and Objective-Gauss).

    Releases (a certified approximation of) ``argmin_θ J(θ) + (1/n) bᵀθ + reg(θ)`` plus a small
    exact residual release; see :mod:`dpcore.glm.perturbation`.

    ``noise="gamma"`` (Chaudhuri et al. 2011): ``ε' = ε₁ − 2 log(1 + cR²/(nΛ))``; ``Δ = 0`` if
    ``ε' > 0``, else ``Δ = cR²/(n(e^{ε₁/4} − 1)) − Λ`` and ``ε' = ε₁/2``; density of ``b`` ∝
    ``exp(−(ε'/(2LR))||b||)``; ``reg = (Δ/2)||θ||²``. Claimed (ε, δ_fp).

    ``noise="gaussian"`` (Kifer et al. 2012): ``b ~ N(0, σ²I)``, ``σ = 2LR sqrt(8 ln(4/δ₁) + 4ε₁)/ε₁``,
    ``Δ = 2cR²/ε₁``, ``reg = (Δ/(2n))||θ||²``. Claimed (ε, δ).

    Losses: ``logistic`` (c = 1/4) and ``huber_svm`` (c = 1/(2h)) only. ``hinge`` is refused
    (objective perturbation needs a twice-differentiable loss with bounded curvature) and so is
    ``squared`` (its derivative is unbounded over ``R^p``, which the unconstrained proof needs; the
    constrained variant of Kifer et al. 2012 is not implemented).
    """ + _COMMON_PARAMS_DOC

    _mechanism = "objective"

    def _check_loss_allowed(self, loss):
        if loss == "hinge":
            raise ValueError(
                "loss='hinge' is not allowed with objective perturbation: it needs a twice-differentiable loss "
                "with bounded curvature c (the privacy proof bounds the Jacobian of theta -> b by c R^2 / n); use "
                "loss='huber_svm' (a smoothed hinge) or OutputPerturbation"
            )
        if loss == "squared":
            raise ValueError(
                "loss='squared' is not allowed with objective perturbation: its derivative |z - y| is unbounded "
                "over R^p, and the (unconstrained) objective-perturbation proof needs |l'| <= L everywhere; use "
                "OutputPerturbation(loss='squared') (a constrained variant, Kifer et al. 2012, is not implemented)"
            )

    def _calibrate(self, n, d, dim, p):
        eps, delta_in, lam, loss, tol, share = p["epsilon"], p["delta"], p["lam"], p["loss"], p["tol"], p["share"]
        R = self._radius_eff(d, p)
        L = 1.0
        c = loss.curvature
        ell0 = loss.loss_at_zero()
        eps2 = share * eps
        eps1 = eps - eps2
        f = self._noise_scale_factor
        if p["noise"] == "gamma":
            delta_fp = delta_in
            cr2 = self._curvature_term(c, R)
            eps_prime = eps1 - 2.0 * math.log1p(cr2 / (n * lam))
            if eps_prime > 0.0:
                extra = 0.0
                mu = lam
            else:
                extra = _up(cr2 / (n * math.expm1(eps1 / 4.0)) - lam, 1e-9)
                mu = _up(lam + extra, 1e-9)
            noise_eps = _down(eps1 - 2.0 * math.log1p(cr2 / (n * mu)), 1e-9)
            if not noise_eps > 0.0:  # only at the float boundary of the first branch
                extra = _up(cr2 / (n * math.expm1(eps1 / 4.0)) - lam, 1e-9)
                mu = _up(lam + max(extra, 0.0), 1e-9)
                noise_eps = _down(eps1 - 2.0 * math.log1p(cr2 / (n * mu)), 1e-9)
            scale = _up(2.0 * L * R / noise_eps, 1e-9) * f
            log_eta1 = math.log(delta_fp / 2.0) - _log_one_plus_exp(eps)
            r_pub = _gamma_tail_radius(dim, scale, log_eta1)
            t0 = _small_ball_radius(dim, math.log(delta_fp / 2.0))
            OutputPerturbation._check_t0(t0, dim)
            err_pub = _gamma_coupling_bound(dim, scale, r_pub, t0)
            delta_claim, delta1, delta2 = delta_fp, 0.0, 0.0
        else:
            delta = delta_in
            delta_fp = min(GAUSS_FP_DELTA, 0.5 * share * delta)
            delta2 = share * delta - delta_fp
            delta1 = (delta - share * delta) * math.exp(-eps2)  # may underflow to 0.0 (huge ε): σ uses logs
            log_4_over_delta1 = math.log(4.0) - math.log(delta - share * delta) + eps2
            zeta = self._gauss_zeta(L, R)
            scale = _up(2.0 * zeta * math.sqrt(8.0 * log_4_over_delta1 + 4.0 * eps1) / eps1, 1e-9) * f
            extra = _up(2.0 * c * R * R / eps1, 1e-9)
            mu = _up(lam + extra / n, 1e-9)
            noise_eps = math.nan
            log_eta1 = math.log(delta_fp) - _log_one_plus_exp(eps)
            r_pub = _gauss_tail_radius(dim, scale, log_eta1)
            t0 = 0.0
            err_pub = _gauss_coupling_bound(dim, scale, r_pub)
            delta_claim = delta
        r_b = r_pub + err_pub
        theta_star = (r_b / n + math.sqrt((r_b / n) ** 2 + 2.0 * mu * ell0)) / mu * (1.0 + 8.0 * _U)
        rho, theta_hat, fp, tol = self._opt_residual(n, dim, R, loss, mu, tol, theta_star, r_b, extra=err_pub,
                                                sum_terms=p.get("sum_terms"))
        if p["noise"] == "gamma":
            res_sens = _up(2.0 * rho * math.sqrt(dim), 1e-9)
            plan = laplace_plan(res_sens, eps2, dim=dim)
            release_scale = plan.scale
        else:
            res_sens = _up(2.0 * rho, 1e-9)
            plan = gaussian_plan(res_sens, eps2, delta2, dim=dim)
            release_scale = plan.sigma
        return GLMPrivacy(
            mechanism="objective", noise=p["noise"], loss=loss.name, epsilon=eps, delta=delta_claim,
            epsilon_main=eps1, delta_main=delta1, epsilon_residual=eps2, delta_residual=delta2, delta_fp=delta_fp,
            n=n, dim=dim, lam=lam, extra_reg=extra, strong_convexity=mu, data_norm=p["R"], data_norm_eff=R,
            lipschitz=L, curvature=c, sensitivity=_up(2.0 * L * R / (n * mu), 1e-9), noise_epsilon=noise_eps,
            noise_scale=scale, residual_bound=rho, residual_sensitivity=res_sens, release_scale=release_scale,
            release_granularity=plan.granularity, tail_radius=r_pub, small_ball_radius=t0,
            coupling_error_bound=err_pub, theta_norm_bound=theta_hat, fp_bound=fp, tol=tol,
        )

    def _fit_release(self, prep, rng):
        cal = prep.cal
        b, err = self._sample_noise(prep, rng)
        self._check_coupling(prep, err)
        theta, cert = self._solve(prep, b, err)
        if not cert.residual <= cal.residual_bound:
            raise RuntimeError(
                f"certified residual {cert.residual:.3e} exceeds the public bound {cal.residual_bound:.3e} "
                "(probability <= privacy_.delta_fp event, or the solver missed tol); nothing released"
            )
        released = self._release(prep, theta[None, :], rng)
        return released, _with(cert, residual_bound=cal.residual_bound)

    def _batch_argmin(self, prep: _Prepared, B: np.ndarray) -> np.ndarray:
        """Exact minimisers ``argmin F_b`` for many noise values at once (``dim = 1`` only; audits).

        Safeguarded Newton on the strictly increasing ``F_b'(θ) = (1/n) Σ ℓ'(θ x_i; y_i) x_i + μθ + b/n``
        with a bisection bracket ``|θ| ≤ (LR + |b|/n)/μ``; same loss functions and μ as :meth:`fit`.
        The audits therefore exercise calibration, noise sampler and the exact argmin — not scipy.
        """
        if prep.dim != 1:
            raise NotImplementedError("_batch_argmin supports dim = 1 (audit problems) only")
        cal, loss = prep.cal, prep.loss
        X = prep.X.toarray() if sparse.issparse(prep.X) else prep.X
        x = np.asarray(X[:, 0], dtype=np.float64)
        y = prep.y
        n, mu = prep.n, cal.strong_convexity
        b = np.asarray(B, dtype=np.float64).reshape(-1)
        R = float(np.max(np.abs(x))) if x.size else 0.0
        bound = (cal.lipschitz * R + np.abs(b) / n) / mu * 1.01 + 1e-300
        lo, hi = -bound, bound.copy()
        theta = np.clip(-b / (n * mu), lo, hi)
        x2 = x * x
        for _ in range(200):
            z = theta[:, None] * x[None, :]
            g = (loss.deriv(z, y[None, :]) @ x) / n + mu * theta + b / n
            hi = np.where(g > 0, theta, hi)
            lo = np.where(g < 0, theta, lo)
            scale_g = np.abs(b) / n + cal.lipschitz * R + mu * np.abs(theta)
            done = (np.abs(g) <= 1e-14 * scale_g) | (hi - lo <= 4e-16 * np.abs(theta) + 1e-300)
            if done.all():
                break
            h = (loss.deriv2(z, y[None, :]) @ x2) / n + mu
            step = theta - g / h
            bad = ~((step > lo) & (step < hi))
            theta = np.where(done, theta, np.where(bad, 0.5 * (lo + hi), step))
        else:
            raise ConvergenceError("_batch_argmin did not converge")
        return theta[:, None]

    def _release_samples(self, X, y, n_samples, random_state=None):
        prep = self._prepare(X, y)
        rng = check_random_state(random_state)
        B, errs = self._sample_noise_many(prep, int(n_samples), rng)
        self._check_coupling(prep, errs)
        thetas = self._batch_argmin(prep, B[:, 0])
        return self._release(prep, thetas, rng)


def _with(cert: GLMCertificate, **kw) -> GLMCertificate:
    d = asdict(cert)
    d.update(kw)
    return GLMCertificate(**d)


def _norm_up(v) -> float:
    v = np.asarray(v, dtype=np.float64)
    return float(np.linalg.norm(v)) * (1.0 + gamma_k(v.size + 4))

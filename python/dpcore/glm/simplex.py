r"""Sampling-based private ERM over the simplex (Jain & Thakurta 2014, §5.1): :class:`SimplexERM`.

The problem (SPEC "Sampling-based private ERM over the simplex")
----------------------------------------------------------------

.. math::

    \hat\theta = \arg\min_{\theta \in \Delta_P} F(\theta), \qquad
    F(\theta) = f(\theta) + \lambda \sum_j \theta_j \log\theta_j, \qquad
    f(\theta) = \frac1n \sum_i \ell(\langle x_i, \theta\rangle; y_i),

with ``||x_i||_∞ ≤ R∞`` (the declared ``data_norm_inf``), ``ℓ`` ``L``-Lipschitz with ``L_g``-Lipschitz
derivative in its first argument. The private output draws ``m`` i.i.d. indices ``a_k ~ θ̂`` and
releases the sparse empirical distribution ``θ_priv = (1/m) Σ_k e_{a_k}`` (only the indices and
their counts).

Signed weights and the ℓ1 radius: with ``signed=True`` (default) the features are doubled,
``x ↦ s·[x, −x]`` (``s = scale``), ``θ ∈ Δ_{2p}`` and the linear model is ``w = s(θ₊ − θ₋)``
(``||w||₁ ≤ s``); with ``signed=False``, ``x ↦ s·x`` and ``w = sθ``. Every formula below uses
the **effective** bound ``R = s·R∞`` and ``P`` = number of simplex coordinates (``2p`` or ``p``).
The doubled matrix is never formed: ``<s[x, −x], θ> = <x, w>``.

Losses (``z = <x, w>``, ``|z| ≤ R`` on the simplex):

=============  ======================================  ================  =========
``loss``       ``ℓ(z; y)``                             ``L``             ``L_g``
=============  ======================================  ================  =========
squared        ``½(z − y)²``, ``|y| ≤ B``               ``R + B``         ``1``
logistic       ``log(1 + exp(−yz))``, ``y = ±1``        ``1``             ``1/4``
huber_svm      Huber-smoothed hinge of width ``h``      ``1``             ``1/(2h)``
=============  ======================================  ================  =========

Privacy proof sketch [R]
------------------------
*Optimality.* ``F`` is strictly convex and the entropy's gradient diverges at the boundary, so
``θ̂`` is interior and the KKT conditions give the fixed point ``θ̂ = T(θ̂)``,
``T(θ) := softmax(−g(θ)/λ)`` with ``g = ∇f``, ``g(θ) = (1/n) Σ_i ℓ'(<x_i, θ>) x_i``.

*Gradient sensitivity.* Replacing one record changes ``g`` at fixed ``θ`` by at most
``2LR/n`` in ∞-norm (one term ``ℓ'(·)x_i/n`` of ∞-norm ``≤ LR/n`` is swapped), and
``|g_j(θ) − g_j(θ')| ≤ (1/n)Σ_i |ℓ'(z_i) − ℓ'(z'_i)||x_ij| ≤ L_g R² ||θ − θ'||₁`` since
``|<x_i, θ − θ'>| ≤ R||θ − θ'||₁``.

*Stability of θ̂.* ``λ Σθ log θ`` is ``λ``-strongly convex w.r.t. ``||·||₁`` on the simplex
(Pinsker), so ``F_D`` and ``F_D'`` are. Adding the two strong-convexity inequalities at the two
minimisers gives ``λ||θ̂_D − θ̂_D'||₁² ≤ h(θ̂_D') − h(θ̂_D)`` with ``h = f_D − f_D'``, whose gradient
has ∞-norm ``≤ 2LR/n``; hence ``||θ̂_D − θ̂_D'||₁ ≤ 2LR/(nλ)``.

*Log-ratio.* With ``a = −g_D(θ̂_D)/λ`` and ``a' = −g_D'(θ̂_D')/λ``,
``||a − a'||_∞ ≤ (1/λ)(2LR/n + L_g R² · 2LR/(nλ))``, and since ``log softmax(a)_j = a_j − lse(a)``
with ``lse`` 1-Lipschitz in ∞-norm, ``|log θ̂_D,j − log θ̂_D',j| ≤ 2||a − a'||_∞``, i.e.

.. math::

    \varepsilon_0 = \frac{4 L R (\lambda + L_g R^2)}{\lambda^2 n}
    \quad\text{(SPEC; one draw is } \varepsilon_0\text{-DP)}.

*Composition.* The ``m`` draws are i.i.d. from one distribution, i.e. an ``m``-fold composition of
``ε_draw``-DP mechanisms (``ε_draw`` below adds the solver and floating-point slack):
``m = ⌊ε/ε_draw⌋`` gives ε-DP; with ``δ > 0`` the largest ``m`` with
``sqrt(2m ln(1/δ))·ε_draw + m·ε_draw·(e^{ε_draw} − 1) ≤ ε`` (advanced composition,
Dwork–Rothblum–Vadhan, the whole δ as its δ') gives (ε, δ)-DP; dpcore uses the larger of the two.

Certified solver [R]
--------------------
For any interior ``θ``: convexity, ``f(u) ≥ f(θ) + <g(θ), u − θ>``, gives
``F* ≥ f(θ) − <g, θ> + min_u (<g, u> + λΣu log u) = f(θ) − <g, θ> − λ log Σ_j e^{−g_j/λ}``, hence

.. math::

    F(\theta) - F(\hat\theta) \le \mathrm{gap}(\theta) := \lambda\,\mathrm{KL}(\theta \,\|\, T(\theta))

(expand ``KL`` with ``log T(θ)_j = −g_j/λ − log Σ_k e^{−g_k/λ}``), and by strong convexity
``||θ − θ̂||₁ ≤ sqrt(2 gap/λ) = sqrt(2 KL(θ||T(θ)))``. A second certificate, sharper near the
optimum and robust to rounding: ``∇F(θ) = λ(log θ − log T(θ)) + const`` and strong convexity
make ``∇F`` ``λ``-strongly monotone, so with ``r = log θ − log T(θ)`` and ``Σ(θ − θ̂) = 0``,
``λ||θ − θ̂||₁² ≤ <∇F(θ) − ∇F(θ̂), θ − θ̂> = λ<r, θ − θ̂> ≤ λ·(osc(r)/2)·||θ − θ̂||₁``, i.e.
``||θ − θ̂||₁ ≤ osc(r)/2`` (``osc = max − min``). dpcore uses the smaller of the two.

The **released distribution is** ``p = T(θ_k)``, not ``θ_k``: as ``θ̂ = T(θ̂)``,
``|log p_j − log θ̂_j| ≤ osc(g(θ_k) − g(θ̂))/λ ≤ 2 L_g R² ||θ_k − θ̂||₁/λ =: τ``. The solver runs
until the certified ``τ`` (with the floating-point terms below) is ``≤ tol``; ``tol`` is public
(default ``0.01·ε0``), so two neighbouring releases satisfy
``|log p_D,j − log p_D',j| ≤ ε0 + 2·tol``. If it cannot certify ``tol`` the fit raises
:class:`SimplexCertificationError` **before** the accountant is charged and before anything is
sampled (that refusal is a data-dependent event outside the guarantee, as for every certified
mechanism in dpcore; it does not happen for reasonable ``tol`` and ``max_iter``).

Solver: Bregman (entropic) proximal gradient / damped fixed-point iteration in log space,
``log θ_{k+1} = (1 − α) log θ_k + α(−g(θ_k)/λ) + const`` with ``α = λ/(M + λ)``. With the global
relative-smoothness constant ``M = L_g R²`` this is mirror descent with step ``1/(M + λ)`` and
converges linearly (rate ``M/(M + λ)``). dpcore backtracks on ``M`` with the sufficient-decrease
test ``(L_g/2n)||X(w₊ − w)||² ≤ M·KL(θ₊||θ)`` (the left side bounds
``f(θ₊) − f(θ) − <g, θ₊ − θ>``, exactly for the squared loss, and is computed without
cancellation; the test always holds at ``M = L_g R²``), which is much faster on real data, and
adds safeguarded Anderson acceleration on the log-space fixed-point residual (a candidate is kept
only if it shrinks the certified ``||θ − θ̂||₁`` bound by 5%). Each iteration costs a few sparse
products (``X w`` and ``Xᵀ r``), ``O(nnz(X) + P)``: ``X`` is never densified (scipy CSR input is
used as is). Only the certificate decides convergence. Typical solves (n = 4·10⁴, 10⁵ padded
zero features) take well under a second.

Floating point and sampling [R + stated assumptions]
----------------------------------------------------
Write ``u = 2^-53``. The released float vector ``p̃`` is ``fl(softmax(b))`` with ``b = fl(−ĝ/λ)``
and ``ĝ`` the float gradient at the float iterate. The certificate bounds, for the exact
normalisation ``θ°`` of the iterate,

* ``||b − (−g(θ°)/λ)||_∞ ≤ e_b`` — a worst-case bound from the standard ``γ_k = ku/(1 − ku)``
  error of sums of ``k`` terms (any order: ``X w`` has ``≤ p`` terms per row, ``Xᵀr`` ``≤ n`` per
  column), ``|ℓ'| ≤ L``, ``L_g``-Lipschitz ``ℓ'``, and the error of the float iterate; the KL and
  ``osc`` certificates are inflated by their own evaluation errors and ``τ`` gets ``+2e_b``
  (``|log softmax(b)_j − log softmax(b')_j| ≤ osc(b − b') ≤ 2||b − b'||_∞``);
* ``|log(p̃_j/Σp̃) − log softmax(b)_j| ≤ ζ_fp = 2.01·u·(range + FP_EXP_ULPS + 2)`` where
  ``range ≥ max b − min b`` is the public bound below — **assumption** (not proved here):
  numpy's ``exp`` and ``log`` are accurate to ``FP_EXP_ULPS = 4`` ulp;
* the Rust sampler (:mod:`dpcore.mechanisms.multinomial`) draws index ``j`` with probability within relative
  error ``η_s`` of ``p̃_j/Σp̃``, where ``η_s`` = :func:`dpcore.mechanisms.multinomial.probability_error_bound`
  evaluated on a *public* vector whose smallest entry is the public lower bound
  ``p_min = exp(−range)/P`` (never on the data's ``p̃``); ``ζ_s = −log(1 − η_s)``.

Public bound on the probabilities: ``|g_j| ≤ LR`` so ``−g/λ`` has range ``≤ 2LR/λ``;
``range := 2LR/λ + 10^-6`` (checked on the actual ``b``) and ``p_j ≥ exp(−range)/P``. dpcore
refuses (``ValueError`` naming ``lam``) unless ``p_min ≥ MIN_PROBABILITY = 2^-60``, where the
sampler's fixed-point quantisation (``2^-100``) is negligible.

Per-draw cost used for ``m`` (each of the two datasets contributes ``tol + ζ_fp + ζ_s``):

.. math::

    \varepsilon_{\rm draw} = \big(\varepsilon_0 + 2\,\mathrm{tol} + 2(\zeta_{fp} + \zeta_s)\big)(1 + 10^{-12}).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Optional

import numpy as np
from scipy import sparse
from scipy.special import expit, logsumexp

from dpcore._internal.exact import float_up
from dpcore._internal.fp import RANGE_SLACK, SLACK, UNIT_ROUNDOFF, gamma_k
from dpcore.glm._solver import check_certifiable
from dpcore._internal.fp import NUMPY_EXP_ULPS as FP_EXP_ULPS
from dpcore._internal.labels import DEFAULT_CLASSES, encode_binary_labels
from dpcore._internal.linear import LinearPredictorMixin
from dpcore._internal.params import ParamsMixin
from dpcore._internal.validation import check_X, check_scale, check_delta, check_epsilon, check_positive
from dpcore.accounting.calibrate import compose_advanced
from dpcore.exceptions import SimplexCertificationError

__all__ = [
    "SimplexERM",
    "SimplexCalibration",
    "SimplexCertificationError",
    "EntropicSimplexProblem",
    "SimplexSolution",
    "simplex_calibration",
    "loss_constants",
    "epsilon0",
    "n_draws",
    "MIN_PROBABILITY",
    "FP_EXP_ULPS",
]

#: Smallest admissible public lower bound on a sampling probability.
MIN_PROBABILITY = 2.0**-60
#: Default ``tol`` as a fraction of ``ε0``.
DEFAULT_TOL_FRACTION = 0.01

_LOSSES = ("squared", "logistic", "huber_svm")
_TASKS = ("auto", "regression", "classification")


_gamma = gamma_k


# ------------------------------------------------------------------------------------------------
# constants and calibration (pure functions of public quantities)
# ------------------------------------------------------------------------------------------------
def loss_constants(loss: str, r_eff: float, *, label_bound: Optional[float] = None,
                   huber_width: float = 0.5) -> tuple:
    """``(L, L_g)`` of ``loss`` on the simplex model with effective data bound ``r_eff = s·R∞``.

    ``squared``: ``L = r_eff + label_bound`` (``|z| ≤ r_eff`` on the simplex), ``L_g = 1``;
    ``logistic``: ``(1, 1/4)``; ``huber_svm``: ``(1, 1/(2h))``.
    """
    if loss == "squared":
        if label_bound is None:
            raise ValueError("label_bound is required for loss='squared' (regression targets |y| <= label_bound)")
        return float(r_eff) + float(label_bound), 1.0
    if loss == "logistic":
        return 1.0, 0.25
    if loss == "huber_svm":
        return 1.0, 1.0 / (2.0 * float(huber_width))
    raise ValueError(f"loss must be one of {_LOSSES}, got {loss!r}")


def epsilon0(*, n: int, lam: float, lipschitz: float, smoothness: float, r_eff: float) -> float:
    """SPEC per-draw cost ``ε0 = 4 L R (λ + L_g R²)/(λ² n)`` (rounded up by ``1e-12`` relative)."""
    return 4.0 * lipschitz * r_eff * (lam + smoothness * r_eff * r_eff) / (lam * lam * n) * (1.0 + SLACK)


def n_draws(epsilon: float, delta: float, per_draw: float) -> tuple:
    """Largest number of i.i.d. draws affordable at ``per_draw`` ε each; returns ``(m, composition)``.

    Pure composition: largest ``m`` with ``m·per_draw ≤ ε`` (exact rational check). With
    ``delta > 0`` also the largest ``m`` with ``sqrt(2m ln(1/δ))·per_draw + m·per_draw·(e^{per_draw}
    − 1) ≤ ε`` (advanced composition, evaluated by :func:`dpcore.accounting.calibrate.compose_advanced` with a
    ``1e-12`` relative margin); the larger wins. ``composition`` is ``"pure"`` or ``"advanced"``.
    ``m`` may be 0 (the caller refuses).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    per_draw = check_positive(per_draw, "per_draw")
    m_pure = int(math.floor(epsilon / per_draw)) + 1
    while m_pure > 0 and Fraction(m_pure) * Fraction(per_draw) > Fraction(epsilon):
        m_pure -= 1
    if delta == 0.0:
        return m_pure, "pure"
    budget = epsilon * (1.0 - SLACK)

    def ok(m: int) -> bool:
        return compose_advanced(per_draw, 0.0, m, delta)[0] <= budget

    if not ok(1):
        return m_pure, "pure"
    lo, hi = 1, 2
    while ok(hi):
        lo, hi = hi, hi * 2
        if hi > 2**62:  # pragma: no cover - absurd budgets
            break
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    if lo > m_pure:
        return lo, "advanced"
    return m_pure, "pure"


def _sampler_error_bound(p_min: float, n_coords: int) -> float:
    """Sampler's relative error bound for a public vector whose smallest entry is ``p_min``.

    The vector has ``P − 1`` entries equal to ``p_min`` and one entry holding the rest; the
    sampler's bound depends on the smallest positive entry (relative quantisation error) and on
    the number of entries (error of the total), both public here.
    """
    from dpcore.mechanisms.multinomial import probability_error_bound

    if n_coords == 1:
        return float(probability_error_bound(np.array([1.0])))
    rest = 1.0 - (n_coords - 1) * p_min
    if rest < p_min:  # p_min is within a hair of uniform: a uniform public vector
        v = np.full(n_coords, 1.0 / n_coords)
    else:
        v = np.full(n_coords, p_min)
        v[-1] = rest
    return float(probability_error_bound(v))


def softmax_fp_error(value_range: float) -> float:
    """``ζ_fp``: bound on ``|log(p̃_j/Σp̃) − log softmax(b)_j|`` for ``p̃ = fl(softmax(b))`` with
    ``max b − min b ≤ value_range`` (assumes ``exp`` within ``FP_EXP_ULPS`` ulp)."""
    return 2.01 * UNIT_ROUNDOFF * (value_range + FP_EXP_ULPS + 2.0)


@dataclass(frozen=True)
class SimplexCalibration:
    """Every public number behind a :class:`SimplexERM` release (see the module docstring).

    ``epsilon0`` is the SPEC per-draw cost, ``tol`` the public bound on the certified solver error
    ``τ`` of the released log-probabilities, ``eta_fp``/``eta_sampler`` the float-softmax and
    sampler log-error bounds ``ζ_fp``/``ζ_s``, ``per_draw_epsilon`` = ``(ε0 + 2 tol + 2(ζ_fp +
    ζ_s))(1 + 1e-12)``, ``n_draws`` = ``m``; ``composition`` says which composition theorem gave
    ``m``. ``epsilon_spent`` is the ε actually guaranteed by ``m`` draws (``≤ epsilon``);
    ``capped`` says that ``m`` was limited by ``max_draws``.
    """

    epsilon: float
    delta: float
    n: int
    n_features: int
    n_coords: int
    loss: str
    task: str
    lam: float
    data_norm_inf: float
    scale: float
    signed: bool
    r_eff: float
    label_bound: float
    lipschitz: float
    smoothness: float
    epsilon0: float
    tol: float
    exponent_range: float
    p_min: float
    eta_fp: float
    eta_sampler: float
    eta: float
    per_draw_epsilon: float
    n_draws: int
    composition: str
    epsilon_spent: float
    capped: bool = False

    def as_dict(self) -> dict:
        return asdict(self)


def simplex_calibration(*, epsilon, delta, n, n_features, lam, data_norm_inf, loss="squared",
                        task="regression", label_bound=None, huber_width=0.5, scale=1.0, signed=True,
                        tol=None, max_draws=10_000_000, epsilon0_factor: float = 1.0) -> SimplexCalibration:
    """Calibrate :class:`SimplexERM` from public quantities only (no data).

    ``max_draws`` caps ``m`` (public; fewer draws than affordable only strengthen the guarantee).

    Raises ``ValueError`` (naming the parameter) for invalid input, for ``lam`` too small for the
    sampler (public probability bound below :data:`MIN_PROBABILITY`) and when not even one draw is
    affordable (``m < 1``: the message names ``epsilon``, ``n`` and ``lam``).

    ``epsilon0_factor`` exists only for tests building deliberately broken copies; it must be 1.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"n (number of training rows) must be a positive integer, got {n!r}")
    if isinstance(n_features, bool) or not isinstance(n_features, numbers.Integral) or n_features < 1:
        raise ValueError(f"n_features must be a positive integer, got {n_features!r}")
    n, p = int(n), int(n_features)
    lam = check_scale(lam, "lam")
    r_inf = check_positive(data_norm_inf, "data_norm_inf")
    s = check_positive(scale, "scale")
    if not isinstance(signed, (bool, np.bool_)):
        raise ValueError(f"signed must be a bool, got {signed!r}")
    if loss not in _LOSSES:
        raise ValueError(f"loss must be one of {_LOSSES}, got {loss!r}")
    h = check_positive(huber_width, "huber_width")
    if task == "regression":
        if loss != "squared":
            raise ValueError(f"task='regression' needs loss='squared', got loss={loss!r}")
        B = check_positive(label_bound, "label_bound") if label_bound is not None else None
        if B is None:
            raise ValueError("label_bound is required for regression (declared bound |y| <= label_bound)")
    elif task == "classification":
        if label_bound is not None:
            raise ValueError(
                "label_bound must be None for classification (targets are mapped to -1/+1, so B = 1)"
            )
        B = 1.0
    else:
        raise ValueError(f"task must be 'regression' or 'classification' here, got {task!r}")
    P = 2 * p if signed else p
    r_eff = s * r_inf
    L, Lg = loss_constants(loss, r_eff, label_bound=B, huber_width=h)
    eps0 = epsilon0(n=n, lam=lam, lipschitz=L, smoothness=Lg, r_eff=r_eff) * float(epsilon0_factor)
    if tol is None:
        tol_v = DEFAULT_TOL_FRACTION * eps0
    else:
        tol_v = check_positive(tol, "tol")
    rng_pub = 2.0 * L * r_eff / lam * (1.0 + SLACK) + RANGE_SLACK
    log_pmin = -rng_pub - math.log(P)
    if log_pmin < math.log(MIN_PROBABILITY):
        room = math.log(1.0 / MIN_PROBABILITY) - math.log(P) - RANGE_SLACK
        if room <= 0:
            raise ValueError(f"n_features={p} gives P={P} simplex coordinates, too many for exact sampling")
        lam_min = 2.0 * L * r_eff / room
        raise ValueError(
            f"lam={lam!r} is too small for exact sampling: the public lower bound on the sampling "
            f"probabilities, exp(-2 L R/lam)/P = exp(-{rng_pub:.4g})/{P} = {math.exp(log_pmin):.3g}, is "
            f"below 2^-60 (L={L:g}, R=scale*data_norm_inf={r_eff:g}). Use lam >= {lam_min:.4g}"
        )
    p_min = math.exp(log_pmin) * (1.0 - 1e-9)
    eta_fp = softmax_fp_error(rng_pub)
    eta_rel = _sampler_error_bound(p_min, P)
    if not (0.0 <= eta_rel < 0.5):
        raise ValueError(f"the sampler's public error bound {eta_rel!r} is unusable (lam={lam!r} too small?)")
    eta_s = -math.log1p(-eta_rel) * (1.0 + SLACK)
    eta = eta_fp + eta_s
    per_draw = (eps0 + 2.0 * tol_v + 2.0 * eta) * (1.0 + SLACK)
    if isinstance(max_draws, bool) or not isinstance(max_draws, numbers.Integral) or max_draws < 1:
        raise ValueError(f"max_draws must be a positive integer, got {max_draws!r}")
    m, comp = n_draws(epsilon, delta, per_draw)
    capped = m > max_draws
    if capped:
        m = int(max_draws)
        comp = "pure" if Fraction(m) * Fraction(per_draw) <= Fraction(epsilon) else "advanced"
    if m < 1:
        raise ValueError(
            f"not even one draw is affordable: the per-draw cost {per_draw:.4g} "
            f"(eps0 = 4 L R (lam + L_g R^2)/(lam^2 n) = {eps0:.4g} with n={n}, lam={lam:g}, L={L:g}, "
            f"L_g={Lg:g}, R={r_eff:g}; plus 2*tol = {2 * tol_v:.3g}) exceeds epsilon={epsilon:g}. "
            "Increase epsilon, n or lam (or lower tol)."
        )
    eps_spent = float_up(Fraction(m) * Fraction(per_draw))
    if comp == "advanced":
        eps_spent = min(eps_spent, compose_advanced(per_draw, 0.0, m, delta)[0])
    return SimplexCalibration(
        epsilon=epsilon, delta=delta, n=n, n_features=p, n_coords=P, loss=loss, task=task, lam=lam,
        data_norm_inf=r_inf, scale=s, signed=bool(signed), r_eff=r_eff, label_bound=float(B),
        lipschitz=L, smoothness=Lg, epsilon0=eps0, tol=tol_v, exponent_range=rng_pub, p_min=p_min,
        eta_fp=eta_fp, eta_sampler=eta_s, eta=eta, per_draw_epsilon=per_draw, n_draws=int(m),
        composition=comp, epsilon_spent=min(eps_spent, epsilon), capped=bool(capped),
    )


# ------------------------------------------------------------------------------------------------
# the (non-private) problem and its certified solver
# ------------------------------------------------------------------------------------------------
@dataclass
class SimplexSolution:
    """Result of :meth:`EntropicSimplexProblem.solve` — **not private** (data-dependent).

    ``log_theta`` is the certified iterate ``log θ_k`` (normalised), ``log_release`` is
    ``log T(θ_k)`` computed from the same gradient (the distribution a mechanism releases),
    ``b = fl(−g(θ_k)/λ)`` the exponents behind it. ``l1_error`` bounds ``||θ° − θ̂||₁`` for the
    exact normalisation ``θ°`` of the iterate; ``tau`` bounds ``|log T(θ_k)_j − log θ̂_j|`` for all
    ``j`` (floating-point terms included); ``kl`` is the computed ``KL(θ_k||T(θ_k))`` and
    ``gap = λ·kl``.
    """

    log_theta: np.ndarray
    b: np.ndarray
    kl: float
    gap: float
    osc: float
    l1_error: float
    tau: float
    objective: float
    n_iter: int
    converged: bool
    grad_fp_error: float

    @property
    def theta(self) -> np.ndarray:
        return np.exp(self.log_theta)

    @property
    def log_release(self) -> np.ndarray:
        return self.b - logsumexp(self.b)

    @property
    def release(self) -> np.ndarray:
        return _softmax(self.b)


def _softmax(b: np.ndarray) -> np.ndarray:
    e = np.exp(b - np.max(b))
    return e / e.sum()


def _normalise_log(u: np.ndarray) -> np.ndarray:
    return u - logsumexp(u)


class EntropicSimplexProblem:
    r"""``min_{θ ∈ Δ_P} (1/n) Σ ℓ(<x_i, θ>; y_i) + λ Σ θ_j log θ_j`` — the non-private problem.

    A building block of :class:`SimplexERM`, exposed for diagnostics and tests. **Nothing computed
    here is private.**

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n, p)
        Features (not copied; CSR is used as is). Entries must satisfy ``|x_ij| ≤ data_norm_inf``.
    y : ndarray of shape (n,)
        Targets: real values (``squared``) or ``±1`` labels (classification losses).
    loss : {"squared", "logistic", "huber_svm"}
    lam : float
    data_norm_inf : float
        ``R∞`` (used for the certificate's constants ``L``, ``L_g R²``).
    label_bound : float, optional
        ``B`` for the squared loss.
    huber_width : float, default 0.5
    scale : float, default 1.0
        ℓ1 radius ``s``.
    signed : bool, default True
        Doubling ``x ↦ s[x, −x]`` (weights of both signs).
    """

    def __init__(self, X, y, *, loss: str, lam: float, data_norm_inf: float, label_bound=None,
                 huber_width: float = 0.5, scale: float = 1.0, signed: bool = True):
        self.X = X
        self.XT = X.T
        self.y = np.asarray(y, dtype=np.float64)
        self.n, self.p = X.shape
        self.loss = loss
        self.lam = float(lam)
        self.scale = float(scale)
        self.signed = bool(signed)
        self.h = float(huber_width)
        self.P = 2 * self.p if self.signed else self.p
        self.r_eff = self.scale * float(data_norm_inf)
        B = 1.0 if label_bound is None else float(label_bound)
        self.L, self.Lg = loss_constants(loss, self.r_eff, label_bound=B, huber_width=self.h)
        self.M = self.Lg * self.r_eff * self.r_eff  # ||g(θ) − g(θ')||_∞ ≤ M ||θ − θ'||₁

    # -- basic maps -------------------------------------------------------------------------------
    def weights(self, theta: np.ndarray) -> np.ndarray:
        """``w = s(θ₊ − θ₋)`` (signed) or ``w = sθ``."""
        theta = np.asarray(theta, dtype=np.float64)
        if self.signed:
            return self.scale * (theta[: self.p] - theta[self.p:])
        return self.scale * theta

    def _loss_and_derivative(self, z: np.ndarray):
        y = self.y
        if self.loss == "squared":
            r = z - y
            return 0.5 * float(r @ r), r
        u = y * z
        if self.loss == "logistic":
            return float(np.sum(np.logaddexp(0.0, -u))), -y * expit(-u)
        h = self.h
        t = 1.0 + h - u
        mid = (t > 0.0) & (t < 2.0 * h)
        val = np.where(t >= 2.0 * h, 1.0 - u, np.where(mid, t * t / (4.0 * h), 0.0))
        du = np.where(t >= 2.0 * h, -1.0, np.where(mid, -t / (2.0 * h), 0.0))
        return float(val.sum()), y * du

    def _eval(self, theta: np.ndarray):
        """``(f(θ), g_P(θ))`` with ``g_P`` the gradient w.r.t. the ``P`` simplex coordinates."""
        w = self.weights(theta)
        z = np.asarray(self.X @ w).ravel()
        fsum, d = self._loss_and_derivative(z)
        g = np.asarray(self.XT @ (d / self.n)).ravel()
        gs = self.scale * g
        G = np.concatenate([gs, -gs]) if self.signed else gs
        return fsum / self.n, G

    def loss_value(self, theta) -> float:
        """``f(θ) = (1/n) Σ ℓ(<x_i, w(θ)>; y_i)``."""
        return self._eval(np.asarray(theta, dtype=np.float64))[0]

    def gradient(self, theta) -> np.ndarray:
        """``∇f(θ)`` over the ``P`` simplex coordinates."""
        return self._eval(np.asarray(theta, dtype=np.float64))[1]

    def objective(self, theta) -> float:
        """``F(θ) = f(θ) + λ Σ θ log θ`` (``0 log 0 = 0``)."""
        theta = np.asarray(theta, dtype=np.float64)
        pos = theta > 0
        return self.loss_value(theta) + self.lam * float(np.sum(theta[pos] * np.log(theta[pos])))

    def fixed_point_map(self, theta) -> np.ndarray:
        """``T(θ) = softmax(−∇f(θ)/λ)`` (``θ̂ = T(θ̂)``)."""
        return _softmax(-self.gradient(theta) / self.lam)

    def gap(self, theta) -> float:
        """``λ·KL(θ || T(θ)) ≥ F(θ) − F(θ̂)`` for interior ``θ`` (see the module docstring)."""
        theta = np.asarray(theta, dtype=np.float64)
        b = -self.gradient(theta) / self.lam
        v = b - logsumexp(b)
        return self.lam * float(np.sum(theta * (np.log(theta) - v)))

    # -- certificate ------------------------------------------------------------------------------
    def _grad_fp_error(self, theta_l1_err: float) -> float:
        """Bound on ``||ĝ − g(θ°)||_∞`` (float gradient at the float iterate vs exact gradient at
        its exact normalisation), from ``γ_k`` bounds; see the module docstring."""
        u = UNIT_ROUNDOFF
        R, L, Lg = self.r_eff, self.L, self.Lg
        # w: one subtraction and one multiplication per entry
        w_err = self.scale * (theta_l1_err + 3.0 * u * (1.0 + theta_l1_err))
        # z_i = <x_i, w>: ≤ p terms; |z| ≤ R(1 + …)
        z_err = (self.r_eff / self.scale) * w_err + _gamma(self.p + 2) * R * (1.0 + w_err / self.scale)
        # ℓ'(z): Lipschitz part, rounding of the argument (e.g. 1 + h − yz for the Huber loss, where a
        # branch may flip but ℓ' is continuous) and evaluation (≤ FP_EXP_ULPS + 4 ulps of L)
        B = max(L - R, 1.0)
        d_err = Lg * (z_err + 4.0 * u * (2.0 + R + self.h + B)) + (FP_EXP_ULPS + 4.0) * u * L
        # g_j = Σ_i x_ij d_i / n: ≤ n terms, each ≤ (R/s)(L + d_err)/n
        g_err = (R / self.scale) * (d_err + _gamma(self.n + 2) * (L + d_err))
        return 1.01 * (self.scale * g_err + 2.0 * u * R * L)

    def public_tau_floor(self) -> float:
        """The floating-point floor of the certified ``τ`` at the exact optimum, from public quantities.

        :meth:`_certificate` evaluated where every optimisation term vanishes (``KL = 0``, no
        oscillation, ``d = 0``) and every magnitude takes its public worst case: ``|b_j| ≤ L R/λ``
        (``|g_j| ≤ L R``), so the log-probabilities satisfy ``|u_j| ≤ 2LR/λ + log P``. Uses only
        ``n``, ``P``, the declared bounds, λ, the loss constants and ``M = L_g R²`` — never ``X``.
        No iterate can certify a ``τ`` below this value (up to second-order terms).
        """
        ur = UNIT_ROUNDOFF
        lam = self.lam
        max_b = self.L * self.r_eff / lam * (1.0 + 1e-9)
        log_p = math.log(self.P + 1.0)
        max_u = 2.0 * max_b + log_p
        delta0 = 1.01 * (_gamma(self.P + 2) + ur * (2.0 * FP_EXP_ULPS + 6.0 + 2.0 * max_b
                                                     + FP_EXP_ULPS * log_p + 4.0 * max_u))
        theta_err = math.expm1(delta0 + 1.01 * FP_EXP_ULPS * ur)
        e_b = 1.01 * (self._grad_fp_error(theta_err) / lam + ur * max_b)
        scale_terms = 1.0 + max_u + max_b + max_b + log_p
        e_kl = 2.0 * (4.0 * _gamma(self.P + 2) + 16.0 * ur) * scale_terms
        e_osc = 8.0 * ur * (max_u + max_b)
        kl_exact = e_kl + (math.sqrt(2.0 * e_kl) + e_b) * e_b
        l1 = min(math.sqrt(2.0 * kl_exact), 0.5 * (e_osc + 2.0 * e_b))
        return (2.0 * self.M / lam * l1 + 2.0 * e_b) * (1.0 + 1e-9)

    def public_iteration_bound(self, tau_tol: float) -> int:
        """Iterations after which the un-accelerated step certifies ``tau_tol`` on every data set.

        The mirror-descent step with ``M = L_g R²`` contracts ``KL(θ̂ || θ_k)`` by ``M/(M + λ)`` per
        iteration (relative smoothness and λ-relative strong convexity; Lu, Freund & Nesterov 2018,
        Thm 3.1); the certified ``τ`` is at most ``(2M/λ)·sqrt(2 KL)`` plus the float floor, and from the
        uniform start ``KL ≤ log P + 2LR/λ``. So ``K = ⌈2κ·ln(τ_0/(tol/2))⌉ + 1`` with ``κ = (M + λ)/λ``
        and ``τ_0 = (2M/λ)·sqrt(2(log P + 2LR/λ))`` — public quantities only. (Backtracking on ``M``
        and Anderson steps are only kept when they do better, so they never slow this bound down.)
        """
        lam = self.lam
        kappa = (self.M + lam) / lam
        tau0 = 2.0 * self.M / lam * math.sqrt(2.0 * (math.log(self.P + 1.0) + 2.0 * self.L * self.r_eff / lam))
        if not tau0 > 0.5 * tau_tol:
            return 1
        return int(math.ceil(2.0 * kappa * math.log(tau0 / (0.5 * tau_tol)))) + 1

    def _certificate(self, u_log: np.ndarray, theta: np.ndarray, G: np.ndarray):
        """Certified ``(kl, osc, l1_error, tau, grad_fp_error, b)`` at the float iterate."""
        ur = UNIT_ROUNDOFF
        lam = self.lam
        b = -G / lam
        lse_b = logsumexp(b)
        v = b - lse_b
        d = u_log - v
        kl = float(np.sum(theta * d))
        osc = float(np.max(u_log - b) - np.min(u_log - b))
        max_u = float(np.max(np.abs(u_log)))
        max_b = float(np.max(np.abs(b)))
        max_d = float(np.max(np.abs(d)))
        # ||θ_f − θ°||₁: the stored log vector is normalised up to δ0; θ_f = exp(u) within FP_EXP_ULPS
        osc_u = float(np.max(u_log) - np.min(u_log))
        delta0 = 1.01 * (_gamma(self.P + 2) + ur * (2.0 * FP_EXP_ULPS + 6.0 + osc_u
                                                     + FP_EXP_ULPS * math.log(self.P + 1.0) + 4.0 * max_u))
        theta_err = math.expm1(delta0 + 1.01 * FP_EXP_ULPS * ur)
        e_g = self._grad_fp_error(theta_err)
        e_b = 1.01 * (e_g / lam + ur * max_b)
        scale_terms = 1.0 + max_d + max_u + max_b + abs(lse_b)
        e_kl = 2.0 * (theta_err * max_d + (4.0 * _gamma(self.P + 2) + 16.0 * ur) * scale_terms)
        e_osc = 8.0 * ur * (max_u + max_b + osc)
        k1 = max(kl, 0.0) + e_kl
        kl_exact = k1 + (math.sqrt(2.0 * k1) + e_b) * e_b
        l1_kl = math.sqrt(2.0 * kl_exact)
        l1_osc = 0.5 * (osc + e_osc + 2.0 * e_b)
        l1 = min(l1_kl, l1_osc) * (1.0 + 1e-9)
        tau = (2.0 * self.M / lam * l1 + 2.0 * e_b) * (1.0 + 1e-9)
        return kl, osc, l1, tau, e_g, b

    # -- solver -----------------------------------------------------------------------------------
    def _state(self, u_log: np.ndarray) -> dict:
        """Everything at the (normalised) log iterate ``u_log``: gradient, certificate, residual."""
        theta = np.exp(u_log)
        w = self.weights(theta)
        z = np.asarray(self.X @ w).ravel()
        fsum, d = self._loss_and_derivative(z)
        g = np.asarray(self.XT @ (d / self.n)).ravel()
        gs = self.scale * g
        G = np.concatenate([gs, -gs]) if self.signed else gs
        kl, osc, l1, tau, e_g, b = self._certificate(u_log, theta, G)
        resid = (b - logsumexp(b)) - u_log  # log T(θ) − log θ
        return dict(u=u_log, theta=theta, w=w, z=z, f=fsum / self.n, G=G, b=b, r=resid, kl=kl, osc=osc, l1=l1,
                    tau=tau, e_g=e_g)

    def solve(self, *, tau_tol: float, max_iter: int = 100_000, anderson: int = 5, verbose: bool = False,
              require: bool = False, desc: str = "SimplexERM solve") -> SimplexSolution:
        """Run the certified solver until the certified ``τ ≤ tau_tol`` (or ``max_iter``).

        Each iteration either accepts a safeguarded Anderson step (kept only if it shrinks the
        certified ``||θ − θ̂||₁`` bound by 5%) or takes an entropic proximal-gradient step
        ``log θ₊ = log θ + α(log T(θ) − log θ) + const``, ``α = λ/(M + λ)``, with backtracking on
        ``M`` by the exact sufficient-decrease test ``(L_g/2n)||X(w₊ − w)||² ≤ M·KL(θ₊||θ)``
        (a majorisation of ``f``; true at ``M = L_g R²``), so ``F`` decreases on these steps.

        Parameters
        ----------
        tau_tol : float
            Target for ``τ``, the certified bound on ``|log T(θ_k)_j − log θ̂_j|``.
        max_iter : int
            Maximum number of iterations.
        anderson : int
            Anderson-acceleration memory (0 disables it).
        verbose : bool
            Show a tqdm progress bar (iterations, current τ).
        require : bool
            Raise :class:`SimplexCertificationError` instead of returning an uncertified solution.

        Returns
        -------
        SimplexSolution
            Not private.
        """
        lam = self.lam
        P = self.P
        Mmax = self.M * (1.0 + 1e-6) + 1e-300
        st = self._state(np.full(P, -math.log(P)))
        Mk = Mmax / 4.0
        alpha = lam / (Mk + lam)
        hist_u: list = [st["u"]]
        hist_r: list = [st["r"]]
        bar = None
        if verbose:
            from tqdm.auto import tqdm

            bar = tqdm(total=max_iter, desc=desc, unit="it", leave=False)
        best = st
        since_best = 0
        it = 0
        try:
            while True:
                if st["tau"] < best["tau"]:
                    if st["tau"] < 0.99 * best["tau"]:
                        since_best = 0
                    best = st
                else:
                    since_best += 1
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix_str(f"tau {st['tau']:.2e} (tol {tau_tol:.1e})", refresh=False)
                if best["tau"] <= tau_tol or it >= max_iter or since_best >= 500:
                    break
                it += 1
                nxt = None
                # --- safeguarded Anderson step on the log-space fixed-point residual
                if anderson > 0 and len(hist_u) >= 2:
                    cand = self._anderson(hist_u, hist_r, alpha)
                    if cand is not None:
                        sc = self._state(cand)
                        if sc["l1"] <= 0.95 * st["l1"]:
                            nxt = sc
                        else:
                            hist_u, hist_r = hist_u[-1:], hist_r[-1:]
                # --- entropic proximal-gradient step with backtracking on M
                if nxt is None:
                    Mk = max(Mk / 2.0, Mmax * 1e-12)
                    while True:
                        alpha = lam / (Mk + lam)
                        u_new = _normalise_log(st["u"] + alpha * st["r"])
                        th_new = np.exp(u_new)
                        dz = np.asarray(self.X @ (self.weights(th_new) - st["w"])).ravel()
                        curv = 0.5 * self.Lg * float(dz @ dz) / self.n
                        kl_step = float(np.sum(th_new * (u_new - st["u"])))
                        if Mk >= Mmax or curv <= Mk * max(kl_step, 0.0):
                            break
                        Mk = min(2.0 * Mk, Mmax)
                    nxt = self._state(u_new)
                hist_u.append(nxt["u"])
                hist_r.append(nxt["r"])
                if len(hist_u) > anderson + 1:
                    hist_u.pop(0)
                    hist_r.pop(0)
                st = nxt
        finally:
            if bar is not None:
                bar.close()
        pos = best["theta"] > 0
        F_best = best["f"] + lam * float(np.sum(best["theta"][pos] * best["u"][pos]))
        sol = SimplexSolution(
            log_theta=best["u"], b=best["b"], kl=best["kl"], gap=lam * best["kl"], osc=best["osc"],
            l1_error=best["l1"], tau=best["tau"], objective=F_best, n_iter=it,
            converged=bool(best["tau"] <= tau_tol), grad_fp_error=best["e_g"],
        )
        if require and not sol.converged:
            why = (f"max_iter={max_iter} reached" if it >= max_iter
                   else "the certificate stopped improving (floating-point floor)")
            raise SimplexCertificationError(
                f"SimplexCertificationError: could not certify tau <= tol={tau_tol:.3g} ({why}; best certified "
                f"tau = {sol.tau:.3g}). Nothing was charged or released. Increase max_iter, or tol "
                "(each draw then costs 2*tol more)."
            )
        return sol

    @staticmethod
    def _anderson(hist_u, hist_r, beta: float) -> Optional[np.ndarray]:
        """Type-II Anderson extrapolation ``x̄ + β r̄`` of the log-space fixed-point iteration."""
        R = np.stack(hist_r, axis=1)
        U = np.stack(hist_u, axis=1)
        dR = np.diff(R, axis=1)
        dU = np.diff(U, axis=1)
        try:
            gamma, *_ = np.linalg.lstsq(dR, R[:, -1], rcond=1e-12)
        except np.linalg.LinAlgError:  # pragma: no cover
            return None
        x_bar = U[:, -1] - dU @ gamma
        r_bar = R[:, -1] - dR @ gamma
        cand = x_bar + beta * r_bar
        if not np.isfinite(cand).all():
            return None
        return _normalise_log(cand)


# ------------------------------------------------------------------------------------------------
# the estimator
# ------------------------------------------------------------------------------------------------
class SimplexERM(LinearPredictorMixin, ParamsMixin):
    r"""Private ERM over the (scaled) simplex by sampling from the entropy-regularised optimum.

    Jain & Thakurta (2014) §5.1. ``fit`` computes the certified minimiser ``θ̂`` of
    ``(1/n) Σ ℓ(<x_i, θ>; y_i) + λ Σ θ_j log θ_j`` over the simplex, then releases ``m`` i.i.d.
    draws from (a certified approximation of) ``θ̂`` — the sparse empirical distribution of the
    draws is the private model. The full derivation of the per-draw cost
    ``ε0 = 4 L R (λ + L_g R²)/(λ² n)``, of the solver certificate and of the floating-point and
    sampling terms is in the module docstring (:mod:`dpcore.glm.simplex`).

    Parameters
    ----------
    epsilon : float
        Privacy budget ε > 0.
    delta : float, default 0.0
        ``0``: pure ε-DP with ``m = ⌊ε/ε_draw⌋``. ``δ ∈ (0, 1)``: (ε, δ)-DP with the larger of
        that and the advanced-composition ``m`` (δ used entirely as its δ').
    lam : float
        Entropy regularisation ``λ > 0`` (required; it drives both utility and ``ε0 ∝ 1/λ²``).
    data_norm_inf : float
        Declared ``R∞ ≥ |x_ij|`` for every training entry (required). Rows outside raise
        ``ValueError`` unless ``clip=True``. Never inferred from the data.
    loss : {"squared", "logistic", "huber_svm"}, default "squared"
    task : {"auto", "regression", "classification"}, default "auto"
        ``"auto"`` is ``"regression"`` for the squared loss and ``"classification"`` otherwise
        (decided by ``loss`` alone, never by the data). ``loss="squared", task="classification"``
        is the paper's experimental setting: the two labels are mapped to ``±1``, the squared loss
        is fitted on them (``B = 1``) and :meth:`predict` thresholds ``<x, w>`` at 0.
    label_bound : float, optional
        Declared ``B ≥ |y|`` for regression (required there; ``None`` for classification).
        Targets outside raise ``ValueError`` unless ``clip=True``.
    huber_width : float, default 0.5
        Width ``h`` of the Huber-smoothed hinge (``L_g = 1/(2h)``).
    scale : float, default 1.0
        ℓ1 radius ``s``: the model is ``w = s(θ₊ − θ₋)`` (``signed``) or ``w = sθ``; the data bound
        entering every formula is ``R = s·R∞``.
    signed : bool, default True
        Allow negative weights by the standard doubling ``x ↦ s[x, −x]`` (``θ ∈ Δ_{2p}``).
    tol : float, optional
        Public bound on the certified error ``τ`` of the released log-probabilities (each draw
        costs ``2·tol`` extra). Default ``0.01·ε0``: at most 2% of the per-draw budget (so ``m``
        shrinks by at most ~2%), while the required accuracy (``||θ − θ̂||₁ ≲ 0.01·ε0 λ/(2 L_g
        R²)``) stays far above the float64 floor of the certificate for realistic ``n``.
    max_iter : int, default 100000
        Solver iterations before :class:`SimplexCertificationError`.
    max_draws : int, default 10**7
        Public cap on ``m`` (the exact sampler needs ~32 bytes per draw; beyond ~10^6 draws the
        sampling error ``O(1/sqrt(m))`` is negligible). Fewer draws than affordable only strengthen
        the guarantee; ``privacy_.epsilon_spent`` then reports the ε they actually cost (the
        accountant is still charged the declared ``(ε, δ)``).
    clip : bool, default False
        Clip entries to ``[−R∞, R∞]`` (and regression targets to ``[−B, B]``) instead of raising.
    classes : sequence of two labels, default (-1, 1)
        Classification: the declared (public) label set; ``classes_[1]`` is +1. Labels outside it
        are refused; a training set with only one class trains normally (never inferred from ``y``).
    verbose : bool, default False
        tqdm progress bar during the solve (iterations and the certified τ; shown to the curator
        only, never stored).
    random_state : None, int or ChaChaRng
        ``None`` (default): OS-seeded ChaCha20; an int: reproducible (research/tests only).
    accountant : BudgetAccountant, optional
        Checked before the solve and charged ``(ε, δ)`` after certification, before any draw.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The private linear model ``w = s(θ₊_priv − θ₋_priv)`` (or ``sθ_priv``).
    support_ : ndarray of int64
        Simplex coordinates that were drawn (ascending). With ``signed=True`` coordinate ``j < p``
        is ``+feature j`` and ``j ≥ p`` is ``−feature (j − p)``.
    counts_ : ndarray of int64
        How often each coordinate in ``support_`` was drawn (sums to ``n_draws_``).
    n_draws_ : int
        ``m``.
    privacy_ : SimplexCalibration
        Every public number of the calibration (ε, δ, ε0, tol, η terms, per-draw cost, m, ...).
    classes_ : ndarray of shape (2,)
        Classification only: ``sorted(classes)``; ``classes_[1]`` is ``+1``.
    n_features_in_ : int

    Notes
    -----
    No data-dependent diagnostic is kept on the fitted estimator: not ``θ̂``, not the released
    distribution, not the certificate values or the iteration count (they are not covered by the
    guarantee, and the fitted object is what users pickle and share). A successful fit certifies
    ``τ ≤ privacy_.tol``; curators who want the solver's numbers call
    :class:`EntropicSimplexProblem` directly (non-private) or watch ``verbose=True``.
    :meth:`predict` needs no domain check: it post-processes the private ``coef_`` only.

    A Ctrl-C (``KeyboardInterrupt``) during the solve leaves the estimator unfitted and the
    accountant uncharged.
    """

    #: Test hook for deliberately broken copies; must stay 1.0.
    _epsilon0_factor = 1.0

    _PARAMS = ("epsilon", "delta", "lam", "data_norm_inf", "loss", "task", "label_bound", "huber_width", "scale",
               "signed", "tol", "max_iter", "max_draws", "clip", "classes", "verbose", "random_state", "accountant")
    _FITTED = ("coef_", "support_", "counts_", "n_draws_", "privacy_", "classes_", "n_features_in_")

    def __init__(self, epsilon, delta=0.0, *, lam, data_norm_inf, loss="squared", task="auto", label_bound=None,
                 huber_width=0.5, scale=1.0, signed=True, tol=None, max_iter=100_000, max_draws=10_000_000,
                 clip=False, classes=DEFAULT_CLASSES, verbose=False, random_state=None, accountant=None):
        self.epsilon = epsilon
        self.delta = delta
        self.lam = lam
        self.data_norm_inf = data_norm_inf
        self.loss = loss
        self.task = task
        self.label_bound = label_bound
        self.huber_width = huber_width
        self.scale = scale
        self.signed = signed
        self.tol = tol
        self.max_iter = max_iter
        self.max_draws = max_draws
        self.clip = clip
        self.classes = classes
        self.verbose = verbose
        self.random_state = random_state
        self.accountant = accountant

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={getattr(self, k)!r}" for k in ("epsilon", "delta", "lam", "data_norm_inf", "loss"))
        return f"{type(self).__name__}({shown})"

    # -- validation ------------------------------------------------------------------------------
    def _resolved_task(self) -> str:
        if self.task not in _TASKS:
            raise ValueError(f"task must be one of {_TASKS}, got {self.task!r}")
        if self.loss not in _LOSSES:
            raise ValueError(f"loss must be one of {_LOSSES}, got {self.loss!r}")
        if self.task == "auto":
            return "regression" if self.loss == "squared" else "classification"
        if self.task == "regression" and self.loss != "squared":
            raise ValueError(f"task='regression' needs loss='squared', got loss={self.loss!r}")
        return self.task

    def calibration(self, n_samples: int, n_features: int) -> SimplexCalibration:
        """The public calibration for a training set of ``n_samples`` rows and ``n_features`` features.

        Uses no data (``n`` and ``p`` are public); raises the same ``ValueError`` as :meth:`fit`
        when no draw is affordable.
        """
        task = self._resolved_task()
        if not isinstance(self.clip, (bool, np.bool_)):
            raise ValueError(f"clip must be a bool, got {self.clip!r}")
        return simplex_calibration(
            epsilon=self.epsilon, delta=self.delta, n=n_samples, n_features=n_features, lam=self.lam,
            data_norm_inf=self.data_norm_inf, loss=self.loss, task=task, label_bound=self.label_bound,
            huber_width=self.huber_width, scale=self.scale, signed=self.signed, tol=self.tol,
            max_draws=self.max_draws, epsilon0_factor=self._epsilon0_factor,
        )

    def _check_X(self, X, r_inf: float, clip: bool, name: str = "X"):
        if sparse.issparse(X):
            if X.format != "csr":
                X = X.tocsr()
            if X.dtype != np.float64:
                X = X.astype(np.float64)
            if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
                raise ValueError(f"{name} must be a non-empty 2-D matrix, got shape {X.shape}")
            data = X.data
            if not np.isfinite(data).all():
                raise ValueError(f"{name} contains NaN or infinite values")
            if data.size and float(np.max(np.abs(data))) > r_inf:
                if not clip:
                    raise ValueError(
                        f"{name} has entries outside the declared domain |x_ij| <= data_norm_inf={r_inf:g} "
                        f"(max |x_ij| = {float(np.max(np.abs(data))):g}); pass clip=True to clip them"
                    )
                X = X.copy()
                np.clip(X.data, -r_inf, r_inf, out=X.data)
            return X
        arr = np.asarray(X)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
        arr = arr.astype(np.float64, copy=False)
        if arr.ndim != 2:
            raise ValueError(f"{name} must be a 2-D array, got shape {arr.shape}")
        if arr.size == 0:
            raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
        if not np.isfinite(arr).all():
            raise ValueError(f"{name} contains NaN or infinite values")
        mx = float(np.max(np.abs(arr)))
        if mx > r_inf:
            if not clip:
                raise ValueError(
                    f"{name} has entries outside the declared domain |x_ij| <= data_norm_inf={r_inf:g} "
                    f"(max |x_ij| = {mx:g}); pass clip=True to clip them"
                )
            arr = np.clip(arr, -r_inf, r_inf)
        return np.ascontiguousarray(arr)

    def _check_y(self, y, n: int, task: str, clip: bool):
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be a 1-D array, got shape {y.shape}")
        if y.shape[0] != n:
            raise ValueError(f"y must have length {n} (the number of rows of X), got {y.shape[0]}")
        if y.dtype.kind == "f" and not np.isfinite(y).all():
            raise ValueError("y contains NaN or infinite values")
        if task == "classification":
            # Declared label set (dpcore._internal.labels): never inferred from y, one class is fine.
            classes, y_pm = encode_binary_labels(y, self.classes, n)
            return y_pm, classes
        if y.dtype.kind not in "biuf":
            raise ValueError(f"y must be numeric for regression, got dtype {y.dtype}")
        y = y.astype(np.float64)
        B = float(self.label_bound)
        if y.size and float(np.max(np.abs(y))) > B:
            if not clip:
                raise ValueError(
                    f"y has targets outside the declared bound |y| <= label_bound={B:g} "
                    f"(max |y| = {float(np.max(np.abs(y))):g}); pass clip=True to clip them"
                )
            y = np.clip(y, -B, B)
        return y, None

    def _reset_fitted(self):
        for attr in self._FITTED:
            self.__dict__.pop(attr, None)

    def _check_max_iter(self) -> int:
        mi = self.max_iter
        if isinstance(mi, bool) or not isinstance(mi, numbers.Integral) or mi < 1:
            raise ValueError(f"max_iter must be a positive integer, got {mi!r}")
        return int(mi)

    def _prepare(self, X, y):
        """Validate, calibrate (public) and build the problem; no solve, no randomness."""
        task = self._resolved_task()
        max_iter = self._check_max_iter()
        if not isinstance(self.verbose, (bool, np.bool_)):
            raise ValueError(f"verbose must be a bool, got {self.verbose!r}")
        r_inf = check_positive(self.data_norm_inf, "data_norm_inf")
        if not isinstance(self.clip, (bool, np.bool_)):
            raise ValueError(f"clip must be a bool, got {self.clip!r}")
        if task == "regression" and self.label_bound is None:
            raise ValueError("label_bound is required for regression (declared bound |y| <= label_bound)")
        if task == "regression":
            check_positive(self.label_bound, "label_bound")
        Xc = self._check_X(X, r_inf, bool(self.clip))
        n, p = Xc.shape
        cal = self.calibration(n, p)
        yc, classes = self._check_y(y, n, task, bool(self.clip))
        prob = EntropicSimplexProblem(
            Xc, yc, loss=self.loss, lam=cal.lam, data_norm_inf=r_inf,
            label_bound=cal.label_bound, huber_width=self.huber_width, scale=cal.scale, signed=cal.signed,
        )
        # public pre-check (n, p, declared bounds, λ): a tol below the float floor of the certificate
        # used to fail on some data sets only (SimplexCertificationError after solving)
        check_certifiable(cal.tol, prob.public_tau_floor(), "certified log-probability error tau")
        need = prob.public_iteration_bound(cal.tol)
        if max_iter < need:
            raise ValueError(
                f"max_iter={max_iter} is below the public iteration bound {need} that guarantees the solver "
                f"certifies tol={cal.tol:.3g} on every data set (linear rate M/(M+lam)); raise max_iter")
        return dict(cal=cal, problem=prob, classes=classes, max_iter=max_iter, task=task)

    def _certified_release(self, prep) -> np.ndarray:
        """Solve, certify ``τ ≤ tol`` and return the float release vector ``p̃`` (not private)."""
        cal, prob = prep["cal"], prep["problem"]
        sol = prob.solve(tau_tol=cal.tol, max_iter=prep["max_iter"], verbose=bool(self.verbose), require=True,
                         desc=type(self).__name__)
        b = sol.b
        rng_b = float(np.max(b) - np.min(b))
        if not rng_b <= cal.exponent_range:  # cannot happen for valid data (|g_j| <= L R)
            raise SimplexCertificationError(
                f"SimplexCertificationError: the exponents -g/lam span {rng_b:.6g} > the public bound "
                f"{cal.exponent_range:.6g}; refusing to sample"
            )
        p = _softmax(b)
        return p

    @staticmethod
    def _draw(p: np.ndarray, m: int, rng):
        from dpcore.mechanisms.multinomial import multinomial_counts

        return multinomial_counts(p, m, random_state=rng)

    # -- fitting ---------------------------------------------------------------------------------
    def fit(self, X, y):
        """Fit on ``(X, y)`` and release the private sparse model.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            Entries in ``[−data_norm_inf, data_norm_inf]`` (sparse input is never densified).
        y : array-like of shape (n_samples,)
            Regression targets in ``[−label_bound, label_bound]``, or two class labels.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Invalid parameters or data (the message names the parameter), data outside the
            declared domain, ``lam`` too small for the sampler, or no affordable draw (``m < 1``).
        SimplexCertificationError
            The solver could not certify ``τ ≤ tol`` (nothing charged, nothing released).
        BudgetExceededError
            The accountant cannot afford ``(ε, δ)`` (checked before the solve).
        """
        from dpcore.mechanisms.noise import check_random_state

        self._reset_fitted()
        prep = self._prepare(X, y)
        cal = prep["cal"]
        if self.accountant is not None:
            self.accountant.check(cal.epsilon, cal.delta, label=type(self).__name__)
        rng = check_random_state(self.random_state)
        p_release = self._certified_release(prep)
        if self.accountant is not None:
            self.accountant.spend(cal.epsilon, cal.delta, label=f"{type(self).__name__}(m={cal.n_draws})")
        idx, counts = self._draw(p_release, cal.n_draws, rng)
        del p_release
        idx = np.asarray(idx, dtype=np.int64)
        counts = np.asarray(counts, dtype=np.int64)
        P, pdim = cal.n_coords, cal.n_features
        theta_priv = np.zeros(P)
        theta_priv[idx] = counts / float(cal.n_draws)
        if cal.signed:
            coef = cal.scale * (theta_priv[:pdim] - theta_priv[pdim:])
        else:
            coef = cal.scale * theta_priv
        self.coef_ = coef
        self.support_ = idx
        self.counts_ = counts
        self.n_draws_ = int(cal.n_draws)
        self.privacy_ = cal
        self.n_features_in_ = int(pdim)
        if prep["classes"] is not None:
            self.classes_ = prep["classes"]
        return self

    # -- prediction ------------------------------------------------------------------------------
    def decision_function(self, X) -> np.ndarray:
        """``<x, w>`` for the rows of ``X`` (dense or sparse)."""
        self._check_fitted()
        X = check_X(X, "X", n_features=self.n_features_in_, accept_sparse=True)
        return self._linear_decision(X)


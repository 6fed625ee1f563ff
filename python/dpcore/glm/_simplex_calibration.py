"""Calibration of :class:`dpcore.glm.SimplexERM` (Jain & Thakurta 2014 §5.1): per-draw cost, number of draws,
loss constants and the sampler's floating-point terms. The derivation is in :mod:`dpcore.glm.simplex`."""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Optional, Literal

import numpy as np

from dpcore._internal.exact import float_up
from dpcore._internal.fp import RANGE_SLACK, SLACK, UNIT_ROUNDOFF
from dpcore._internal.fp import NUMPY_EXP_ULPS as FP_EXP_ULPS
from dpcore._internal.validation import check_scale, check_delta, check_epsilon, check_positive
from dpcore.accounting.calibrate import compose_advanced
from dpcore.mechanisms.multinomial import probability_error_bound


__all__ = ["loss_constants", "epsilon0", "n_draws", "sampler_error_bound", "softmax_fp_error", "SimplexCalibration",
           "simplex_calibration", "simplex_auto_lam", "MIN_PROBABILITY", "DEFAULT_TOL_FRACTION", "LOSSES", "TASKS"]

#: Smallest admissible public lower bound on a sampling probability.
MIN_PROBABILITY = 2.0**-60
#: Default ``tol`` as a fraction of ``ε0``.
DEFAULT_TOL_FRACTION = 0.01

LOSSES = ("squared", "logistic", "huber_svm")
TASKS = ("auto", "regression", "classification")





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
    raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")


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


def sampler_error_bound(p_min: float, n_coords: int) -> float:
    """Sampler's relative error bound for a public vector whose smallest entry is ``p_min``.

    The vector has ``P − 1`` entries equal to ``p_min`` and one entry holding the rest; the
    sampler's bound depends on the smallest positive entry (relative quantisation error) and on
    the number of entries (error of the total), both public here.
    """

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

    Examples
    --------
    The calibration uses only public quantities (``n``, ``p`` and the declared bounds):

    >>> from dpcore import SimplexERM
    >>> cal = SimplexERM(epsilon=1.0, delta=1e-6, lam=1.0, data_norm_inf=1.0).calibration(2000, 5)
    >>> cal.n, cal.n_features, cal.epsilon
    (2000, 5, 1.0)
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


def simplex_auto_lam(*, n: int, epsilon: float, n_coords: int, lipschitz: float, smoothness: float,
                     r_eff: float) -> float:
    """``lam="auto"`` of :class:`SimplexERM`: the λ that balances the excess-risk terms of Jain–Thakurta 2014, Thm 4.

    The excess empirical risk of the released average of ``m`` draws over the exact minimiser of ``f`` is at most
    the entropy bias ``λ log P`` plus the sampling term ``L_g R²/(2m)`` (``E<x, θ_priv − θ̂>² ≤ R²/m`` for an
    ``L_g``-smooth loss). With ``m = ε/ε0`` and ``ε0 = 4LR(λ + L_g R²)/(λ²n) ≤ 8 L L_g R³/(λ²n)`` (for
    ``λ ≤ L_g R²``) the sum is ``λ log P + 4 L L_g² R⁵/(ε λ² n)``, minimised at

    ``λ = (8 L L_g² R⁵ / (ε n log P))^{1/3}`` — the paper's ``n^{-1/3}`` rate. Raised, if needed, to
    ``1.01×`` the smallest λ the exact sampler accepts (``exp(−2LR/λ)/P ≥ 2^-60``). Public quantities only
    (``n``, ``ε``, ``P`` coordinates, the loss constants, ``R = scale·data_norm_inf``); the pure-ε ``m`` is used
    for ``δ > 0`` too (advanced composition only adds draws).

    >>> round(simplex_auto_lam(n=10_000, epsilon=1.0, n_coords=20, lipschitz=4.0, smoothness=2.0, r_eff=1.0), 4)
    0.2094
    """
    L, Lg, R = float(lipschitz), float(smoothness), float(r_eff)
    log_p = math.log(max(int(n_coords), 2))
    lam = (8.0 * L * Lg * Lg * R**5 / (float(epsilon) * int(n) * log_p)) ** (1.0 / 3.0)
    room = math.log(1.0 / MIN_PROBABILITY) - math.log(int(n_coords)) - RANGE_SLACK
    if room > 0:
        lam = max(lam, 1.01 * 2.0 * L * R / room)
    return lam


def simplex_calibration(*, epsilon: float, delta: float, n: int, n_features: int, lam: float, data_norm_inf: float,
                        loss: Literal["squared", "logistic", "huber_svm"] = "squared",
                        task: Literal["regression", "classification"] = "regression",
                        label_bound: Optional[float] = None, huber_width: float = 0.5, scale: float = 1.0,
                        signed: bool = True, tol: Optional[float] = None, max_draws: int = 10_000_000,
                        epsilon0_factor: float = 1.0) -> SimplexCalibration:
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
    auto = isinstance(lam, str) and lam == "auto"
    if not auto:
        lam = check_scale(lam, "lam")
    r_inf = check_positive(data_norm_inf, "data_norm_inf")
    s = check_positive(scale, "scale")
    if not isinstance(signed, (bool, np.bool_)):
        raise ValueError(f"signed must be a bool, got {signed!r}")
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
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
    if auto:
        lam = simplex_auto_lam(n=n, epsilon=epsilon, n_coords=P, lipschitz=L, smoothness=Lg, r_eff=r_eff)
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
    eta_rel = sampler_error_bound(p_min, P)
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



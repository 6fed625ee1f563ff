r"""Private online learning over the simplex with linear costs (Jain & Thakurta 2014, §5.2).

:class:`PrivateFTRL` — follow-the-regularised-leader with the entropy regulariser, releasing one
sampled index per round instead of the iterate.

Setting
-------
Round ``t = 1, …, T`` (``T = horizon``, public): the learner plays an index ``a_t ∈ {0, …, p−1}``
(an expert), the adversary then reveals a cost vector ``x_t ∈ [−R, R]^p`` (``R = data_norm_inf``,
declared; the adversary does not see ``a_t`` beforehand), and the learner pays ``x_t[a_t]``.
Entropic FTRL plays the distribution

.. math::

    \theta_t = \arg\min_{\theta\in\Delta_p} \sum_{s<t} \langle x_s, \theta\rangle
               + \lambda \sum_j \theta_j \log\theta_j
             = \mathrm{softmax}\Big(-\frac{1}{\lambda}\sum_{s<t} x_s\Big),

and the private learner releases only ``a_t ~ θ_t`` (one draw, ``m = 1``, with the exact Rust
sampler :mod:`dpcore.mechanisms.multinomial`). The released output is the index sequence ``(a_1, …, a_T)``.

Privacy proof sketch [R]
------------------------
Neighbouring cost sequences differ in one ``x_τ``. The distributions of rounds ``t ≤ τ`` are
identical; for ``t > τ`` the exponents ``−S_{t−1}/λ`` differ by ``(x'_τ − x_τ)/λ``, whose
oscillation is ``≤ 4R/λ``, and ``|log softmax(a)_j − log softmax(a')_j| ≤ osc(a − a')``, so every
draw is ``4R/λ``-DP. The iterates do not depend on earlier draws, so the ``T`` releases are a
``T``-fold composition (the first round is data-independent; dpcore does not use that slack):
ε-DP if ``T·ε_round ≤ ε``; (ε, δ)-DP by advanced composition (the whole δ as δ'), per round
``ε_step = max(advanced, ε/T)`` (:func:`dpcore.accounting.calibrate.per_step_epsilon`). The guarantee
covers the whole horizon, so the accountant is charged the full ``(ε, δ)`` once, at the first
:meth:`~PrivateFTRL.partial_fit`.

Floating point and sampling (per round and per sequence; same conventions as
:mod:`dpcore.glm.simplex`): the cumulative sums are float sums of ``≤ T−1`` terms of size ``≤ R``, so
``||Ŝ − S||_∞ ≤ e_S = γ_T (T−1) R`` and the float exponents are within
``e_b = 1.01(e_S/λ + u(T−1)R/λ)`` of ``−S/λ`` (``u = 2^-53``); the float softmax adds
``ζ_fp`` (assumes ``exp`` within ``FP_EXP_ULPS`` ulp) and the sampler ``ζ_s = −log(1 − η_s)`` with
``η_s`` its relative error bound at the *public* lower bound ``p_min = exp(−range)/p``,
``range = 2(T−1)R/λ + 10^-6`` (cumulative sums lie in ``[−(T−1)R, (T−1)R]``). Hence

.. math::

    \varepsilon_{\rm round} = \big(4R/\lambda + 2(2e_b + \zeta_{fp} + \zeta_s)\big)(1 + 10^{-12})
    \le \varepsilon_{\rm step}.

``lam=None`` picks the smallest λ meeting this and the sampler condition ``p_min ≥ 2^-60``; an
explicit ``lam`` violating either raises ``ValueError`` naming ``lam`` (with the minimum).

Regret [Shalev-Shwartz 2011, Thm 2.11 / Cor. 2.14]
---------------------------------------------------
``λΣθ log θ`` is ``λ``-strongly convex w.r.t. ``||·||₁`` on the simplex and the costs have
``||x_t||_∞ ≤ R``, so FTRL's regret against every fixed ``u ∈ Δ_p`` after ``t`` rounds is
``≤ λ(Σu log u − min_θ Σθ log θ) + Σ_s ||x_s||²_∞/λ ≤ λ log p + tR²/λ``. Against an oblivious
adversary ``E[x_t[a_t]] = <x_t, θ_t>``, so the *expected* regret of the sampled learner obeys the
same bound (the paper's ``λ log p + T R∞²/λ``). With the privacy-minimal ``λ ≈ 4RT/ε`` (pure) this
is ``O(R T log p/ε)``; with advanced composition ``λ ≈ 4R sqrt(2T ln(1/δ))/ε`` and the regret is
``O(R sqrt(T ln(1/δ)) log p/ε)``.
"""

from __future__ import annotations

import logging
import math
import numbers
from dataclasses import asdict, dataclass
from typing import Any, Optional, TYPE_CHECKING

import numpy as np
from sklearn.base import BaseEstimator

from dpcore._internal.cloning import PerCloneSeedMixin
from dpcore._internal.validation import check_delta, check_epsilon, check_positive
from dpcore.accounting.calibrate import per_step_epsilon
from dpcore.accounting.events import epsilon_delta_event
from dpcore._internal.fp import RANGE_SLACK, SLACK, UNIT_ROUNDOFF, gamma_k
from dpcore.glm._simplex_calibration import MIN_PROBABILITY, sampler_error_bound, softmax_fp_error
from dpcore.exceptions import FTRLHorizonExceeded
from dpcore.mechanisms.noise import check_random_state
from dpcore.exceptions import NotFittedError
from dpcore.mechanisms.multinomial import multinomial_draws
from dpcore._internal.types import ArrayLike, Self, RandomState
from dpcore._internal.progress import check_verbose, progress_bar

if TYPE_CHECKING:
    from dpcore.accounting import BudgetAccountant

logger = logging.getLogger(__name__)

__all__ = ["PrivateFTRL", "FTRLCalibration", "FTRLHorizonExceeded", "ftrl_calibration", "FTRLRegret"]


@dataclass(frozen=True)
class FTRLCalibration:
    """Public calibration of :class:`PrivateFTRL` (see the module docstring for every term).

    ``epsilon_step`` is the per-round budget from the composition theorem, ``per_round_epsilon``
    the per-round cost at the chosen ``lam`` (``≤ epsilon_step``), ``lam_privacy_min`` and
    ``lam_sampler_min`` the two lower bounds on λ.

    Examples
    --------
    The calibration needs no data:

    >>> from dpcore import PrivateFTRL
    >>> cal = PrivateFTRL(horizon=100, epsilon=1.0, data_norm_inf=1.0, n_features=4).calibration()
    >>> cal.horizon, cal.n_features, cal.epsilon
    (100, 4, 1.0)
    """

    epsilon: float
    delta: float
    horizon: int
    n_features: int
    data_norm_inf: float
    lam: float
    lam_privacy_min: float
    lam_sampler_min: float
    epsilon_step: float
    per_round_epsilon: float
    composition: str
    sum_fp_error: float
    exponent_error: float
    exponent_range: float
    p_min: float
    eta_fp: float
    eta_sampler: float

    def as_dict(self) -> dict:
        return asdict(self)


def _round_terms(lam: float, T: int, R: float, p: int):
    """``(e_S, e_b, range, p_min, ζ_fp, ζ_s)`` at ``lam`` (``ζ_s = inf`` if the sampler bound fails)."""
    u = UNIT_ROUNDOFF
    k = max(T - 1, 0)
    e_S = gamma_k(T + 1) * k * R
    e_b = 1.01 * (e_S / lam + u * k * R / lam)
    rng = 2.0 * k * R / lam * (1.0 + SLACK) + RANGE_SLACK
    log_pmin = -rng - math.log(p)
    p_min = math.exp(log_pmin) * (1.0 - 1e-9)
    z_fp = softmax_fp_error(rng)
    if log_pmin < math.log(MIN_PROBABILITY):
        return e_S, e_b, rng, p_min, z_fp, math.inf
    eta_rel = sampler_error_bound(p_min, p)
    z_s = -math.log1p(-eta_rel) * (1.0 + SLACK) if eta_rel < 0.5 else math.inf
    return e_S, e_b, rng, p_min, z_fp, z_s


def _per_round(lam: float, R: float, terms) -> float:
    _, e_b, _, _, z_fp, z_s = terms
    return (4.0 * R / lam + 2.0 * (2.0 * e_b + z_fp + z_s)) * (1.0 + SLACK)


def ftrl_calibration(*, horizon: int, epsilon: float, delta: float = 0.0, data_norm_inf: float, n_features: int,
                     lam: Optional[float] = None, lam_factor: float = 1.0) -> FTRLCalibration:
    """Calibrate :class:`PrivateFTRL` from public quantities (see the module docstring).

    ``lam_factor`` exists only for tests building deliberately broken copies; it must be 1 (it
    multiplies the λ actually used *after* all checks).
    """
    if isinstance(horizon, bool) or not isinstance(horizon, numbers.Integral) or horizon < 1:
        raise ValueError(f"horizon must be a positive integer (public number of rounds T), got {horizon!r}")
    if isinstance(n_features, bool) or not isinstance(n_features, numbers.Integral) or n_features < 1:
        raise ValueError(f"n_features must be a positive integer, got {n_features!r}")
    T, p = int(horizon), int(n_features)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    R = check_positive(data_norm_inf, "data_norm_inf")
    eps_step = per_step_epsilon(epsilon, T, delta if delta > 0 else None)
    composition = "pure" if delta == 0.0 or eps_step == per_step_epsilon(epsilon, T) else "advanced"
    # sampler condition: exp(-range)/p >= 2^-60
    room = math.log(1.0 / MIN_PROBABILITY) - math.log(p) - RANGE_SLACK
    if room <= 0:
        raise ValueError(f"n_features={p} is too large for exact sampling (p >= 2^60)")
    lam_samp = 2.0 * max(T - 1, 0) * R / room * (1.0 + 1e-9)
    # privacy condition: 4R/λ + 2η(λ) <= ε_step; η is decreasing in λ, so one step from the lower
    # bound λ0 = 4R/ε_step gives a valid λ.
    lam0 = 4.0 * R / eps_step
    lam_base = max(lam0, lam_samp)
    t_base = _round_terms(lam_base, T, R, p)
    slack_base = _per_round(lam_base, R, t_base) - 4.0 * R / lam_base * (1.0 + SLACK)
    if not (eps_step - slack_base > 0):
        raise ValueError(
            f"epsilon={epsilon!r} is too small for horizon={T}: the floating-point/sampler slack alone exceeds "
            f"the per-round budget {eps_step:.3g}"
        )
    lam_priv = 4.0 * R * (1.0 + SLACK) / (eps_step - slack_base) * (1.0 + 1e-12)
    lam_min = max(lam_priv, lam_samp)
    if lam is None:
        lam_v = lam_min
    else:
        lam_v = check_positive(lam, "lam")
        if lam_v < lam_samp:
            raise ValueError(
                f"lam={lam_v!r} is too small for exact sampling over horizon={T}: the public lower bound on the "
                f"sampling probabilities exp(-2 (T-1) R/lam)/p falls below 2^-60. Use lam >= {lam_samp:.6g} "
                "(or a shorter horizon)"
            )
    terms = _round_terms(lam_v, T, R, p)
    per_round = _per_round(lam_v, R, terms)
    if not per_round <= eps_step:
        raise ValueError(
            f"lam={lam_v!r} violates the privacy condition 4 R/lam + 2 eta <= eps_step = {eps_step:.6g} "
            f"(epsilon={epsilon!r}, delta={delta!r}, horizon={T}, data_norm_inf={R!r}): per-round cost "
            f"{per_round:.6g}. Use lam >= {lam_min:.6g} or lam=None"
        )
    e_S, e_b, rng, p_min, z_fp, z_s = terms
    return FTRLCalibration(
        epsilon=epsilon, delta=delta, horizon=T, n_features=p, data_norm_inf=R, lam=lam_v * float(lam_factor),
        lam_privacy_min=lam_priv, lam_sampler_min=lam_samp, epsilon_step=eps_step, per_round_epsilon=per_round,
        composition=composition, sum_fp_error=e_S, exponent_error=e_b, exponent_range=rng, p_min=p_min,
        eta_fp=z_fp, eta_sampler=z_s,
    )


@dataclass(frozen=True)
class FTRLRegret:
    """Regret diagnostics after ``rounds`` rounds — **not private** (they read the costs).

    ``realized_cost = Σ x_t[a_t]``, ``expected_cost = Σ <x_t, θ_t>``, ``best_expert_cost =
    min_j Σ_t x_{t,j}`` (attained by ``best_expert``), ``regret_expected = expected_cost −
    best_expert_cost`` (``≤ bound`` always), ``regret_realized = realized_cost −
    best_expert_cost``, ``bound = λ log p + rounds·R²/λ``.
    """

    rounds: int
    realized_cost: float
    expected_cost: float
    best_expert_cost: float
    best_expert: int
    regret_expected: float
    regret_realized: float
    bound: float


class PrivateFTRL(PerCloneSeedMixin, BaseEstimator):
    r"""Differentially private entropic FTRL over the simplex with linear costs (one draw per round).

    See :mod:`dpcore.glm.ftrl` for the algorithm, the privacy proof, the floating-point terms and the
    regret bound.

    Parameters
    ----------
    horizon : int
        Public number of rounds ``T`` the guarantee covers; more raise :class:`FTRLHorizonExceeded`.
    epsilon : float
        Total ε over the whole horizon.
    delta : float, default 0.0
        ``0``: pure ε-DP (``T·ε_round ≤ ε``); ``δ ∈ (0, 1)``: advanced composition over ``T``
        rounds (δ used as its δ'; never worse than pure composition).
    data_norm_inf : float
        Declared ``R ≥ |x_{t,j}|`` for every cost (required). Costs outside raise ``ValueError``
        unless ``clip=True``.
    lam : float, optional
        Entropy weight λ (``1/η`` in Hedge's notation). ``None`` (default): the smallest λ meeting
        the privacy and sampler conditions. An explicit λ is checked (``ValueError`` if it
        violates either).
    n_features : int, optional
        Number of experts ``p`` (public). ``None``: taken from the first batch.
    clip : bool, default False
        Clip costs to ``[−R, R]`` instead of raising.
    verbose : bool or int, default=False
        Show tqdm progress bars (stderr) during long calls; ``False``/``0`` shows nothing. Progress and the
        :mod:`logging` messages are for the curator only and never part of a release.
        The bar of :meth:`partial_fit` counts the rounds of the batch.
    random_state : None, int or ChaChaRng
        ``None`` (default): OS-seeded ChaCha20; an int: reproducible (research/tests only).
        With an int, clone k of this estimator (made by ``OneVsRestClassifier``, ``cross_val_score``, ...) gets
        the seed derived from the int and k: distinct, reproducible noise streams; ``None`` stays ``None``, a
        ``ChaChaRng`` cannot be cloned (docs/sklearn.md). Use ``None`` for private use.
    accountant : BudgetAccountant, optional
        Charged the full ``(ε, δ)`` at the first :meth:`partial_fit`, before any data-dependent draw.

    Attributes
    ----------
    indices_ : ndarray of int64
        Released actions ``a_1, …, a_t`` of the completed rounds (the private output).
    t_ : int
        Rounds completed.
    lam_ : float
        The λ in use.
    privacy_ : FTRLCalibration
    regret_ : FTRLRegret
        Non-private diagnostics (read the costs); do not publish.
    n_features_in_ : int

    Notes
    -----
    The learner necessarily holds the cumulative cost vector (the private state); only
    ``indices_`` and the values returned by :meth:`predict` are covered by the guarantee.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import PrivateFTRL
    >>> costs = np.random.default_rng(0).uniform(0.0, 1.0, size=(50, 4))  # |cost| <= data_norm_inf
    >>> ftrl = PrivateFTRL(horizon=50, epsilon=1.0, data_norm_inf=1.0, n_features=4, random_state=0)
    >>> ftrl = ftrl.partial_fit(costs[:30]).partial_fit(costs[30:])
    >>> ftrl.indices_.shape, bool(set(ftrl.indices_.tolist()) <= {0, 1, 2, 3})
    ((50,), True)
    """

    #: Test hook for deliberately broken copies; must stay 1.0.
    _lam_factor = 1.0


    def __init__(self, horizon: int, epsilon: float, delta: float = 0.0, *, data_norm_inf: float,
                 lam: Optional[float] = None, n_features: Optional[int] = None, clip: bool = False,
                 verbose: bool | int = False, random_state: RandomState = None,
                 accountant: Optional[BudgetAccountant] = None) -> None:
        self.horizon = horizon
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm_inf = data_norm_inf
        self.lam = lam
        self.n_features = n_features
        self.clip = clip
        self.verbose = verbose
        self.random_state = random_state
        self.accountant = accountant

    def set_params(self, **params: Any) -> Self:
        """Set parameters; refused once the learner has started (the guarantee is fixed then).

        Examples
        --------
        >>> from dpcore import PrivateFTRL
        >>> ftrl = PrivateFTRL(horizon=100, epsilon=1.0, data_norm_inf=1.0, n_features=4)
        >>> ftrl.set_params(epsilon=0.5).epsilon          # allowed before the first round
        0.5
        """
        if getattr(self, "_started", False):
            raise ValueError("parameters of a started PrivateFTRL cannot change (the guarantee is fixed); clone it")
        return super().set_params(**params)


    # -- state -----------------------------------------------------------------------------------
    def calibration(self, n_features: Optional[int] = None) -> FTRLCalibration:
        """The public calibration (no data needed; ``n_features`` overrides the parameter).

        Examples
        --------
        >>> from dpcore import PrivateFTRL
        >>> ftrl = PrivateFTRL(horizon=100, epsilon=1.0, data_norm_inf=1.0)
        >>> ftrl.calibration(n_features=4).n_features      # no data needed
        4
        """
        p = n_features if n_features is not None else self.n_features
        if p is None:
            raise ValueError("n_features is unknown: pass n_features= or call partial_fit first")
        if not isinstance(self.clip, (bool, np.bool_)):
            raise ValueError(f"clip must be a bool, got {self.clip!r}")
        return ftrl_calibration(horizon=self.horizon, epsilon=self.epsilon, delta=self.delta,
                                data_norm_inf=self.data_norm_inf, n_features=p, lam=self.lam,
                                lam_factor=self._lam_factor)

    def _ensure_started(self, n_features: Optional[int]):
        if getattr(self, "_started", False):
            if n_features is not None and n_features != self.n_features_in_:
                raise ValueError(f"X has {n_features} features, expected {self.n_features_in_}")
            return
        if self.n_features is not None and n_features is not None and int(self.n_features) != n_features:
            raise ValueError(f"X has {n_features} features but n_features={self.n_features!r}")
        cal = self.calibration(n_features)

        self._rng = check_random_state(self.random_state)
        p = cal.n_features
        self.privacy_ = cal
        self.lam_ = cal.lam
        self.n_features_in_ = p
        self.t_ = 0
        self._S = np.zeros(p)
        self._indices = []
        self._pending = None
        self._realized = 0.0
        self._expected = 0.0
        self._charged = False
        self._started = True

    @property
    def indices_(self) -> np.ndarray:
        if not getattr(self, "_started", False):

            raise NotFittedError("This PrivateFTRL has not played any round yet")
        return np.asarray(self._indices, dtype=np.int64)

    def _distribution(self, S: np.ndarray) -> np.ndarray:
        """``softmax(−S/λ)`` in float64 (max subtracted): the distribution of the next draw."""
        b = -S / self.lam_
        e = np.exp(b - np.max(b))
        return e / e.sum()

    def _draw(self, p: Optional[np.ndarray] = None) -> int:
        if self._pending is None:

            if p is None:
                p = self._distribution(self._S)
            self._pending = int(multinomial_draws(p, 1, random_state=self._rng)[0])
        return self._pending

    # -- protocol --------------------------------------------------------------------------------
    def predict(self) -> int:
        """The action for the next round (drawn once from the current iterate and then played).

        Calling it any number of times returns the same index until the round is completed by
        :meth:`partial_fit`; the draw counts as that round's release (within the horizon).

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import PrivateFTRL
        >>> ftrl = PrivateFTRL(horizon=10, epsilon=1.0, data_norm_inf=1.0, n_features=3, random_state=0)
        >>> a = ftrl.predict()
        >>> a == ftrl.predict()            # the same action until the round is played
        True
        >>> _ = ftrl.partial_fit(np.array([[0.2, 0.9, 0.5]]))  # incur the cost of the action played
        """
        self._ensure_started(None)
        if self.t_ >= self.privacy_.horizon:
            raise FTRLHorizonExceeded(self.privacy_.horizon, self.t_, 1)
        return self._draw()

    def _check_costs(self, X) -> np.ndarray:
        X = np.asarray(X)
        if X.dtype.kind not in "biuf":
            raise TypeError(f"X must be a numeric array, got dtype {X.dtype}")
        X = X.astype(np.float64, copy=False)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"X must be a non-empty 2-D array of cost vectors (rows = rounds), got shape {X.shape}")
        if not np.isfinite(X).all():
            raise ValueError("X contains NaN or infinite values")
        R = check_positive(self.data_norm_inf, "data_norm_inf")
        mx = float(np.max(np.abs(X)))
        if mx > R:
            if not self.clip:
                raise ValueError(
                    f"X has costs outside the declared domain |x_tj| <= data_norm_inf={R:g} (max {mx:g}); "
                    "pass clip=True to clip them"
                )
            X = np.clip(X, -R, R)
        return X

    def partial_fit(self, X: ArrayLike, y: object = None) -> Self:
        """Play one round per row of ``X`` (successive cost vectors).

        For each row: the action ``a_t`` is drawn from the current iterate (or is the one already
        returned by :meth:`predict`) and recorded, the cost ``x_t[a_t]`` is incurred, then the
        cumulative costs are updated. The whole batch is refused (:class:`FTRLHorizonExceeded`)
        if it would exceed the horizon. The first call charges the accountant ``(ε, δ)``.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import PrivateFTRL
        >>> ftrl = PrivateFTRL(horizon=20, epsilon=1.0, data_norm_inf=1.0, n_features=3, random_state=0)
        >>> for costs in np.random.default_rng(0).uniform(size=(4, 5, 3)):    # 4 batches of 5 rounds
        ...     ftrl = ftrl.partial_fit(costs)
        >>> ftrl.indices_.shape
        (20,)
        """
        check_verbose(self.verbose)
        X = self._check_costs(X)
        self._ensure_started(X.shape[1])
        cal = self.privacy_
        k = X.shape[0]
        if self.t_ + k > cal.horizon:
            raise FTRLHorizonExceeded(cal.horizon, self.t_, k)
        if not self._charged:
            self.dp_event_ = epsilon_delta_event(cal.epsilon, cal.delta)  # whole horizon, (ε, δ) proof
        if not self._charged and self.accountant is not None:
            self.accountant.spend(cal.epsilon, cal.delta, event=self.dp_event_, label=f"PrivateFTRL(T={cal.horizon})")
        if not self._charged:
            logger.info("PrivateFTRL: charged (epsilon=%.6g, delta=%.3g) for a horizon of %d rounds", cal.epsilon,
                        cal.delta, cal.horizon)
        self._charged = True
        with progress_bar(self.verbose, total=k, desc="PrivateFTRL rounds", unit="round") as bar:
            for x in X:
                theta = self._distribution(self._S)
                a = self._draw(theta)
                self._indices.append(a)
                self._realized += float(x[a])
                self._expected += float(x @ theta)
                self._S += x
                self.t_ += 1
                self._pending = None
                bar.update(1)
        logger.debug("PrivateFTRL: %d rounds played, %d of %d left", k, cal.horizon - self.t_, cal.horizon)
        return self

    @property
    def regret_(self) -> FTRLRegret:
        """Non-private regret diagnostics (see :class:`FTRLRegret`)."""
        if not getattr(self, "_started", False):

            raise NotFittedError("This PrivateFTRL has not played any round yet")
        S = self._S
        j = int(np.argmin(S))
        best = float(S[j])
        R = float(self.privacy_.data_norm_inf)
        bound = self.lam_ * math.log(self.n_features_in_) + self.t_ * R * R / self.lam_
        return FTRLRegret(
            rounds=int(self.t_), realized_cost=self._realized, expected_cost=self._expected, best_expert_cost=best,
            best_expert=j, regret_expected=self._expected - best, regret_realized=self._realized - best, bound=bound,
        )

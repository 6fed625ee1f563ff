r"""TDIL — test-data-independent private release of a kernel model (Jain & Thakurta 2013, Alg. 3).

See :class:`TDIL` for the mechanism, the calibration (including a correction of the paper's
exponential-mechanism scale), the proof sketch and the cost model.
"""

from __future__ import annotations

import logging
import math
import numbers
from dataclasses import asdict, dataclass
from typing import Optional, Literal, TYPE_CHECKING

import numpy as np

from dpcore import _core
from dpcore.kernels.evaluation import kernel_args
from dpcore.kernel_learning._model import (
    RADIUS_TOL, SLACK, model_info, check_in_domain, check_mu_l1, feature_map_lipschitz,
    prediction_fp_bound, public_error_bound,
)
from dpcore._internal.validation import check_delta, check_epsilon, check_positive, check_probability
from dpcore.accounting.calibrate import compose_advanced, per_step_epsilon
from dpcore.accounting.events import epsilon_delta_event
from dpcore.mechanisms.noise import grid_release, check_random_state, laplace_plan
from dpcore.mechanisms import exponential as linear_em
from dpcore.kernel_learning.release import KernelRelease, ReleasingEstimator
from dpcore.kernel_learning.tddl import loss_at_zero
from dpcore.exceptions import TDILCostError
from dpcore._internal.types import Self, KernelModel, RandomState
from dpcore._internal.progress import check_verbose, progress_bar

if TYPE_CHECKING:
    from dpcore.accounting import BudgetAccountant

logger = logging.getLogger(__name__)

__all__ = ["TDIL", "TDILCalibration", "tdil_calibration", "TDILCostError"]

#: Refuse exponential-mechanism exponents above this (float keys would lose precision).
_MAX_EXPONENT = 1e12


@dataclass(frozen=True)
class TDILCalibration:
    """Every number of a TDIL calibration (see :class:`TDIL`).

    Per round the mechanism spends ``epsilon_em`` (exponential mechanism, including the
    floating-point slack ``4·key_error``) and ``epsilon_laplace`` (noisy distinguisher); the rounds
    compose to ``epsilon_spent ≤ epsilon`` at ``delta``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import KernelSVM, TDIL
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.7, 0.7, size=(2000, 2)); y = np.sign(X[:, 0])
    >>> svm = KernelSVM(lam=0.1, kernel="linear", tol=1e-8).fit(X, y)
    >>> cal = TDIL(svm, epsilon=1.0, delta=1e-6, data_norm=1.0).plan()["calibration"]
    >>> cal.mode, cal.n, cal.B
    ('paper', 2000, 1)
    """

    mode: str
    n: int
    d: int
    lam: float
    lipschitz: float
    r_phi: float
    feature_lipschitz: float
    epsilon: float
    delta: float
    beta: float
    w_error_bound: float
    fp_error: float
    sensitivity: float
    B: int
    epsilon0: float
    epsilon0_printed_em_scale: float
    kappa: float
    sigma: float
    eta: float
    net_radius: float
    net_radius_paper: float
    epsilon_laplace: float
    epsilon_em: float
    epsilon_round: float
    epsilon_spent: float
    exponent_bound: float
    key_error: float
    sampler: str
    delta_fp: float
    laplace_scale: float
    norm_bound: float


def tdil_calibration(
    *,
    n: int,
    d: int,
    lam: float,
    lipschitz: float,
    r_phi_sq: float,
    feature_lipschitz: float,
    w_error_bound: float,
    fp_error: float,
    epsilon: float,
    delta: float,
    beta: float,
    norm_bound: float,
    mode: str = "paper",
    net_radius: Optional[float] = None,
    sensitivity_factor: float = 1.0,
    printed_em_scale: bool = False,
    sampler: str = "net",
) -> TDILCalibration:
    """Calibrate TDIL (see :class:`TDIL`). Pure function of public quantities.

    ``sensitivity_factor`` (Laplace step) and ``printed_em_scale`` (the paper's EM factor
    ``ε0 n λ/(8 L R_φ²)``) exist only for tests building deliberately broken copies.
    """
    for value, name in ((n, "n"), (d, "d")):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if mode not in ("paper", "tight"):
        raise ValueError(f"calibration must be 'paper' or 'tight', got {mode!r}")
    if sampler not in ("net", "continuous"):
        raise ValueError(f"sampler must be 'net' or 'continuous', got {sampler!r}")
    n, d = int(n), int(d)
    lam = check_positive(lam, "lam")
    L = check_positive(lipschitz, "lipschitz")
    r2 = check_positive(r_phi_sq, "r_phi_sq")
    L_phi = check_positive(feature_lipschitz, "feature_lipschitz")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    beta = check_probability(beta, "beta")
    C = check_positive(norm_bound, "norm_bound")
    R = math.sqrt(r2)
    log_d = math.log(4.0 / delta)
    S = (R * (2.0 * L * R / (lam * n) + 2.0 * w_error_bound) + 2.0 * fp_error) * (1.0 + SLACK) ** 2
    S_used = S * sensitivity_factor

    B_raw = n * epsilon / (100.0 * L * R * log_d)
    if not B_raw >= 1.0:
        raise ValueError(
            f"TDIL cannot be calibrated: the number of rounds B = n*eps/(100 L R_phi log(4/delta)) = "
            f"{B_raw:.4g} < 1 (n={n}, epsilon={epsilon:g}, R_phi={R:g}, delta={delta:g}); the paper's "
            "constants need n*epsilon >= 100 R_phi log(4/delta)"
        )
    B = int(math.floor(B_raw))
    eps0_paper = n * epsilon * lam / (10.0 * L * r2 * math.sqrt(B) * log_d)

    def budgets(eps0: float, key_err: float):
        e_lap = 2.0 * eps0 * S  # Lap(1/(2 ε0)) on a query of sensitivity S
        e_em = eps0 * S / 2.0 + 4.0 * key_err  # exponent κ|score| with κ = ε0/4
        return e_lap, e_em

    # exponent bound: |score| ≤ R_φ (||w_t|| + ||w||), ||w_t|| ≤ B η R_φ, ||w|| ≤ C (all public)
    def exp_bound(eps0: float) -> float:
        sigma = 4.0 / eps0 * math.log(2.0 * B / beta)
        eta = sigma / (4.0 * r2)
        return (eps0 / 4.0) * R * (B * eta * R + C) * (1.0 + 1e-9) + 1.0

    # continuous sampler: a share of δ is reserved for its float slack, consumed round by round
    # (see TDIL.fit); each round is then (ε_round, (1 + e^{ε_em}) δ_fp,t)-DP and we require ε_em ≤ ln 2.
    fp_budget = 0.1 * delta if sampler == "continuous" else 0.0
    delta_comp = delta - 3.0 * fp_budget

    if mode == "paper":
        eps0 = eps0_paper
    else:
        e_round = per_step_epsilon(epsilon, B, delta_comp) if B > 1 else epsilon
        eps0 = e_round * (1.0 - 1e-9) / (2.5 * S)
        for _ in range(3):  # subtract the (tiny) float slack of the EM keys
            kb = float(_core.em_key_error_bound(min(exp_bound(eps0), _MAX_EXPONENT)))
            eps0 = (e_round * (1.0 - 1e-9) - 4.0 * kb) / (2.5 * S)
    xb = exp_bound(eps0)
    if printed_em_scale:
        xb *= n * lam / (2.0 * L * r2)
    if xb > _MAX_EXPONENT:
        raise ValueError(
            f"TDIL exponent bound {xb:.3g} exceeds {_MAX_EXPONENT:g}: the exponential mechanism would be "
            "degenerate in float64 (choose a smaller norm_bound or epsilon)"
        )
    key_err = float(_core.em_key_error_bound(xb)) if sampler == "net" else 0.0
    e_lap, e_em = budgets(eps0, key_err)
    e_round = e_lap + e_em
    if sampler == "continuous" and e_em > math.log(2.0):
        raise ValueError(f"sampler='continuous' needs a per-round EM budget <= ln 2, got {e_em:.3g}; use sampler='net'")
    d_fp = fp_budget
    adv, _ = compose_advanced(e_round, 0.0, B, delta_comp)
    spent = min(B * e_round, adv)
    if not spent <= epsilon * (1.0 + 1e-12):
        raise ValueError(
            f"TDIL calibration spends epsilon = {spent:.6g} > {epsilon:g} (per round {e_round:.3g} over "
            f"B = {B} rounds): the certified sensitivity {S:.3g} is too far above 2 L R_phi^2/(lam n) — "
            "refit the model with a smaller tol"
        )
    sigma = 4.0 / eps0 * math.log(2.0 * B / beta)
    eta = sigma / (4.0 * r2)
    nu_paper = d * R / (eps0 * n * L_phi)
    nu = nu_paper if net_radius is None else check_positive(net_radius, "net_radius")
    lap = laplace_plan(S_used, e_lap, dim=1)
    return TDILCalibration(
        mode=mode, n=n, d=d, lam=lam, lipschitz=L, r_phi=R, feature_lipschitz=L_phi, epsilon=epsilon,
        delta=delta, beta=beta, w_error_bound=float(w_error_bound), fp_error=float(fp_error), sensitivity=S,
        B=B, epsilon0=eps0, epsilon0_printed_em_scale=eps0 * n * lam / (8.0 * L * r2),
        kappa=eps0 * n * lam / (8.0 * L * r2) if printed_em_scale else eps0 / 4.0, sigma=sigma, eta=eta, net_radius=nu,
        net_radius_paper=nu_paper, epsilon_laplace=e_lap, epsilon_em=e_em, epsilon_round=e_round,
        epsilon_spent=spent, exponent_bound=xb, key_error=key_err, sampler=sampler, delta_fp=d_fp, laplace_scale=lap.scale, norm_bound=C,
    )


class TDIL(ReleasingEstimator):
    r"""Test-data-independent learner: non-interactive private kernel model (Algorithm 3).

    The learner holds ``w* = Σ_i μ_i φ(x_i)`` for inputs in the ball ``||z|| ≤ r`` of R^d (the
    paper takes r = 1) and releases, without seeing any test data, ``ŵ = Σ_t α_t φ(z_t)`` whose
    expansion points ``z_t`` are chosen by the exponential mechanism from a ν-net S of the ball::

        w_1 = 0
        for t = 1..B:
            z_t ~ P(z) ∝ exp(κ |<φ(z), w_t − w*>|),  z ∈ S              (exponential mechanism)
            d̂_t = <w*, φ(z_t)> − Σ_{τ<t} α_τ K(z_t, z_τ) + Lap(1/(2 ε0))
            α_t = η·sign(d̂_t) if |d̂_t| > σ else 0;   w_{t+1} = w_t + α_t φ(z_t)
        release ŵ = w_{B+1}

    (The paper also outputs a noisy answer ``â_t`` in update rounds; nothing here needs it, so it is
    not computed and costs no budget.)

    **Calibration (``calibration="paper"``, SPEC constants).**
    ``S = R_φ (2 L R_φ/(λ n) + 2 err) + 2 e_fp`` (score/distinguisher sensitivity with the solver
    certificate and float error, as in :class:`dpcore.TDDL`),
    ``B = ⌊n ε / (100 L R_φ log(4/δ))⌋``, ``ε0 = n ε λ / (10 L R_φ² √B log(4/δ))``,
    ``σ = (4/ε0) log(2B/β)``, ``η = σ/(4 R_φ²)``, ``ν = d R_φ / (ε0 n L_φ)`` (``L_φ`` the Lipschitz
    constant of the feature map on the ball: 1 linear, ``sqrt(2γ)`` RBF, see
    :func:`dpcore.kernel_learning._model.feature_map_lipschitz`; ``net_radius`` overrides ν, which only
    affects utility and cost).

    **Correction of the exponential-mechanism scale.** The paper (and SPEC) writes the exponent as
    ``ε0 n λ/(8 L R_φ²)·|<φ(z), w_t − w*>|``; since ``2 L R_φ²/(λ n) = S`` that factor is
    ``ε0/(4 S)``, and the proof sketch's "``|f(G) − f(G')| ≤ ε0/4``, hence ε0/2-DP" reads ε0 as a
    dimensionless privacy level. But ε0 is *not* dimensionless: the same algorithm adds
    ``Lap(1/(2ε0))`` to a query of sensitivity S, a privacy cost of ``2 ε0 S``, so ε0 is measured
    in units of 1/S. With the printed factor the EM's privacy loss is ``ε0/2`` *in the wrong units*,
    i.e. ``1/S`` times too large — for n = 30,000 and λ = 0.03 that is a factor ~60 beyond the
    claim. dpcore uses ``κ = ε0/4`` (the printed factor times S): the EM then costs
    ``2 κ S = ε0 S / 2``, exactly the paper's intended "ε0/2" in the same units as its Laplace step.
    ``epsilon0_printed_em_scale`` records the printed factor for reference.

    **Proof sketch.**
    (1) For neighbouring training sets ``|<φ(z), w_G − w_G'>| ≤ S`` for every z in the ball
    (supplement eq. 3, Cauchy–Schwarz, certificate, float error). The score ``κ|<φ(z), w_t − w>|``
    changes by at most ``κ S`` given the same history, so the EM step is ``2κS``-DP
    (McSherry–Talwar), and the streaming float Gumbel-max sampler adds at most ``4·key_error``
    (:mod:`dpcore.expmech`): ``ε_em = ε0 S/2 + 4·key_error``. Every candidate is in the ball, so
    the bound applies to it. (2) The distinguisher ``<w, φ(z_t)> − Σ α_τ K(z_t, z_τ)`` has
    sensitivity S given the history (the second term is a function of earlier outputs); it is
    released with the exact grid Laplace mechanism (:func:`dpcore.mechanisms.noise.laplace_plan`) at
    ``ε_lap = 2 ε0 S`` (noise scale ``≈ 1/(2ε0)``). (3) Each round is ``ε_round = ε_em + ε_lap``-DP
    and the B rounds compose adaptively: ``ε_spent = min(B ε_round, sqrt(2B ln(1/δ)) ε_round +
    B ε_round (e^{ε_round} − 1))`` at ``δ`` (advanced composition; the rounds are pure ε). The
    calibration asserts ``ε_spent ≤ ε``; with the paper's constants ``ε_round ≈ ε/(2√B log(4/δ))``
    and the margin is large. ``calibration="tight"`` instead solves for the largest ε0 with
    ``ε_spent = ε`` (same composition theorem, same proof) — more accurate, still (ε, δ)-DP.
    (4) ŵ is a function of the z_t's and the signs of d̂_t: post-processing.

    **Cost.**
    Each round scores every net point: ``|S| ≈ vol(ball)/h^d`` with ``h = 2ν/√d`` candidates, each
    costing ``d`` flops (linear kernel: ``w_t − w*`` collapses to a d-vector) or
    ``n_sv + t`` kernel evaluations (RBF/poly). :meth:`plan` reports both before anything runs, and
    ``fit`` refuses above ``max_candidates`` / ``max_kernel_evaluations`` (:class:`TDILCostError`);
    the refusal counts all ``n`` training points (public) instead of the ``n_sv`` support vectors,
    so whether it happens never depends on the private data.
    Long runs show a progress bar (``verbose=True``) and stop on Ctrl-C (``KeyboardInterrupt``;
    the estimator stays unfitted, the accountant stays charged).

    Parameters
    ----------
    model : fitted kernel ERM
        As for :class:`dpcore.TDDL` (``mu_``, ``X_fit_``, ``n_samples_fit_``, ``lam``,
        ``lipschitz_``, ``tol``, ``w_error_bound_``, ``kernel_params_``).
    epsilon, delta : float
    beta : float
        Failure probability in the calibration of σ (utility only).
    data_norm : float, default 1.0
        Public radius r of the input ball (training points must lie in it; the net covers it).
    calibration : {"paper", "tight"}, default "paper"
    sampler : {"net", "continuous"}, default "net"
        ``"net"``: the streaming Gumbel-max sampler over the ν-net (:mod:`dpcore.expmech`, any
        kernel, proven float bound). ``"continuous"`` (linear kernel only): the exponential
        mechanism over the continuous ball as a mixture of two log-concave densities
        (:mod:`dpcore.mechanisms.exponential`), O(d) per round, snapped to the same net; its float slack
        ``δ_fp`` per round (a *stated assumption*, see that module) is charged to δ. It needs a model without
        intercept (``intercept_scaling = 0``): with the augmented kernel ``K + b²`` the score gains the term
        ``b²(Σα − Σμ)`` and the density is no longer symmetric (refused in :meth:`plan`, before any charge).
        The net sampler scores the augmented feature map exactly for every kernel (for the linear kernel
        as the two-term kernel sum ``K'(z, u) + (c − 1) K'(z, 0) = <z, u> + b² c``, ``c = Σα − Σμ``).
    net_radius : float, optional
        ν; default the paper's ``d R_φ/(ε0 n L_φ)``.
    norm_bound : float, optional
        Public ``C ≥ ||w*||`` (default ``min(2 L R_φ/λ, sqrt(2 ℓ(0)/λ)) + err``); enters only the
        exponent bound used for the float analysis.
    max_candidates : float, default 2e10
        Refuse runs scoring more than this many net points in total (``B·|S|``).
    max_kernel_evaluations : float, default 2e10
        Refuse kernel-sum runs above this many kernel evaluations in total.
    verbose : bool or int, default=False
        Show tqdm progress bars (stderr) during long calls; ``False``/``0`` shows nothing. Progress and the
        :mod:`logging` messages are for the curator only and never part of a release.
        The bar counts the ``B`` rounds (public).
    random_state : None, int or ChaChaRng
        With an int, clone k of this estimator (made by ``OneVsRestClassifier``, ``cross_val_score``, ...) gets
        the seed derived from the int and k: distinct, reproducible noise streams; ``None`` stays ``None``, a
        ``ChaChaRng`` cannot be cloned (docs/sklearn.md). Use ``None`` for private use.
    accountant : BudgetAccountant, optional
        Charged ``(ε, δ)`` before the first round.

    Attributes
    ----------
    release_ : KernelRelease
    privacy_ : TDILCalibration
    n_updates_ : int
    net_size_ : int
    trace_ : list of dict
        Per round: ``round`` and ``update`` (``|d̂| > σ``), both functions of the release. The EM
        score of the chosen point, ``<z, w_t − w*>``, is not kept: it is an exact function of the
        private ``w*``, not covered by the guarantee.

    Notes
    -----
    TDIL is binary only: a model with ``K > 2`` declared ``classes`` (e.g. a
    :class:`~dpcore.MulticlassKernelLogisticRegression`) is refused with a ``ValueError`` naming ``classes``,
    before anything is charged. Why: Algorithm 3's privacy and utility proofs are about one scalar decision
    function. The exponential mechanism scores ``|<φ(z), w_t − w*>|``, the Laplace check thresholds the scalar
    ``d̂_t``, and the interpolation argument bounds the number of updates ``w_{t+1} = w_t ± η φ(z_t)`` through
    the potential ``||w_t − w*||²`` of one function in ``H``. A K-class version would need a vector-valued
    score, K updates per round and its own sensitivity analysis, and none of that is proved or calibrated here.
    For K classes use :class:`~dpcore.MulticlassTDDL` (one joint release of all K functions) or
    :class:`~dpcore.MulticlassGPService` (interactive K-class score queries).

    Examples
    --------
    Algorithm 3 scores an ε-net of the ball; a linear kernel in two dimensions keeps the net small:

    >>> import numpy as np
    >>> from dpcore import KernelSVM, TDIL
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.7, 0.7, size=(2000, 2)); y = np.sign(X[:, 0])
    >>> svm = KernelSVM(lam=0.1, kernel="linear", tol=1e-8).fit(X, y)
    >>> tdil = TDIL(svm, epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0)
    >>> plan = tdil.plan()                                # counts the work, releases nothing
    >>> rel = tdil.fit().release_
    >>> type(rel).__name__, rel.mechanism, tdil.privacy_.B
    ('KernelRelease', 'TDIL', 1)
    """

    #: Test hooks for deliberately broken copies; must stay 1.0 / False.
    _sensitivity_factor = 1.0
    _printed_em_scale = False

    def __init__(self, model: KernelModel, epsilon: float, delta: float, *, beta: float = 0.05,
                 data_norm: float = 1.0, calibration: Literal["paper", "tight"] = "paper",
                 sampler: Literal["net", "continuous"] = "net", net_radius: Optional[float] = None,
                 norm_bound: Optional[float] = None, max_candidates: float = 2e10,
                 max_kernel_evaluations: float = 2e10, verbose: bool | int = False, random_state: RandomState = None,
                 accountant: Optional[BudgetAccountant] = None) -> None:
        self.model = model
        self.epsilon = epsilon
        self.delta = delta
        self.beta = beta
        self.data_norm = data_norm
        self.calibration = calibration
        self.sampler = sampler
        self.net_radius = net_radius
        self.norm_bound = norm_bound
        self.max_candidates = max_candidates
        self.max_kernel_evaluations = max_kernel_evaluations
        self.verbose = verbose
        self.random_state = random_state
        self.accountant = accountant


    # ------------------------------------------------------------------ planning
    def plan(self) -> dict:
        """Validate, calibrate and count the work; draws no randomness and releases nothing.

        Returns a dict with ``calibration`` (:class:`TDILCalibration`), ``net_size`` (``|S|``),
        ``candidates`` (``B·|S|``), ``kernel_evaluations`` (upper bound, 0 for the linear kernel) and
        the internal state used by :meth:`fit`.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import KernelSVM, TDIL
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.7, 0.7, size=(2000, 2)); y = np.sign(X[:, 0])
        >>> svm = KernelSVM(lam=0.1, kernel="linear", tol=1e-8).fit(X, y)
        >>> plan = TDIL(svm, epsilon=1.0, delta=1e-6, data_norm=1.0).plan()
        >>> plan["calibration"].B, "candidates" in plan, "kernel_evaluations" in plan
        (1, True, True)
        """
        info = model_info(self.model, "TDIL")
        X = info["X"]
        n_pts, d = X.shape
        r = check_positive(self.data_norm, "data_norm")
        check_in_domain(X, r, "model.X_fit_", clip=False)
        k = info["kernel"]
        r_eff = r * (1.0 + RADIUS_TOL)
        r2 = _core.feature_map_radius_sq(r_eff, *kernel_args(k))
        lam, L = info["lam"], info["L"]
        if self.sampler == "continuous" and k["kernel"] != "linear":
            raise ValueError("sampler='continuous' (the log-concave mixture path) exists only for the linear kernel")
        if self.sampler == "continuous" and k["intercept_scaling"] != 0.0:
            # its density exp(κ|<z, u>|) is symmetric about the origin; the augmented score
            # <z, u> + b²(Σα − Σμ) is not, and the exact sampler for it is not implemented
            raise ValueError(
                f"sampler='continuous' needs a model without intercept (intercept_scaling = 0, got "
                f"{k['intercept_scaling']:g}): its score |<z, u>| has no intercept coordinate; use sampler='net' "
                "(the default, exact for the augmented kernel) or refit with intercept_scaling=0"
            )
        err = public_error_bound(self.model, lam, "TDIL", r_phi_sq=r2, lipschitz=L)
        check_mu_l1(info["mu"], L / lam, "TDIL")
        fp = prediction_fp_bound(n=n_pts + d, mu_l1_bound=L / lam, r_phi_sq=r2, kernel=k, radius=r_eff, d=d)
        R = math.sqrt(r2)
        if self.norm_bound is None:
            C = 2.0 * L * R / lam
            ell0 = loss_at_zero(self.model)
            if ell0 is not None:  # P(0) ≤ L ℓ(0) with class weights (L = max_k w_k; 1 without)
                C = min(C, math.sqrt(2.0 * L * ell0 / lam))
            C = (C + err) * (1.0 + SLACK)
        else:
            C = check_positive(self.norm_bound, "norm_bound")
        cal = tdil_calibration(
            n=info["n"], d=d, lam=lam, lipschitz=L, r_phi_sq=r2, feature_lipschitz=feature_map_lipschitz(k, r_eff),
            w_error_bound=err, fp_error=fp, epsilon=self.epsilon, delta=self.delta, beta=self.beta,
            norm_bound=C, mode=self.calibration, net_radius=self.net_radius,
            sensitivity_factor=self._sensitivity_factor, printed_em_scale=self._printed_em_scale,
            sampler=self.sampler,
        )
        max_c = check_positive(self.max_candidates, "max_candidates")
        max_k = check_positive(self.max_kernel_evaluations, "max_kernel_evaluations")
        est = float(_core.net_info(d, cal.net_radius, r)["count_estimate"])
        if cal.sampler == "net" and est * cal.B > 4.0 * max_c:
            raise TDILCostError(
                f"TDIL would score about {est:.3g} net points per round x B = {cal.B} rounds = {est * cal.B:.3g} "
                f"candidates (d = {d}, net radius nu = {cal.net_radius:.3g}), above max_candidates = {max_c:.3g}; "
                "use a larger net_radius (utility only), fewer dimensions, or raise the limit"
            )
        sv = info["mu"] != 0.0
        # The cost refusals below must not depend on the private data: they count all n training
        # points (public), never the number of support vectors (which a neighbour can change).
        n_pub = info["n"]
        linear = k["kernel"] == "linear"
        if cal.sampler == "continuous":
            size, cands, evals = int(est), cal.B, 0  # O(d) per round, independent of the net
        else:
            size = int(_core.net_count(d, cal.net_radius, r, int(4 * max_c) + 1))
            evals = 0 if linear else size * sum(n_pub + t for t in range(cal.B))
            cands = size * cal.B
        if cands > max_c:
            raise TDILCostError(
                f"TDIL would score |S| = {size:,} net points x B = {cal.B} rounds = {cands:.3g} candidates, "
                f"above max_candidates = {max_c:.3g}; use a larger net_radius or raise the limit"
            )
        if evals > max_k:
            raise TDILCostError(
                f"TDIL would need at most {evals:.3g} kernel evaluations ({size:,} net points x "
                f"(n = {n_pub} training points + up to {cal.B} picks) x {cal.B} rounds), above "
                f"max_kernel_evaluations = {max_k:.3g}; use a larger net_radius or raise the limit"
            )
        return dict(
            calibration=cal, net_size=size, candidates=cands, kernel_evaluations=evals, info=info, radius=r,
            X_sv=np.ascontiguousarray(X[sv]), mu_sv=np.ascontiguousarray(info["mu"][sv]), linear=linear,
        )

    # ------------------------------------------------------------------ fitting
    def fit(self, X: object = None, y: object = None) -> Self:
        """Run the B rounds and release ``ŵ`` (arguments ignored: TDIL uses no test data).

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import KernelSVM, TDIL
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.7, 0.7, size=(2000, 2)); y = np.sign(X[:, 0])
        >>> svm = KernelSVM(lam=0.1, kernel="linear", tol=1e-8).fit(X, y)
        >>> tdil = TDIL(svm, epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0).fit()
        >>> tdil.release_.mechanism, tdil.predict(X[:3]).shape
        ('TDIL', (3,))
        """
        check_verbose(self.verbose)
        plan = self.plan()
        cal, info, r = plan["calibration"], plan["info"], plan["radius"]
        k = info["kernel"]
        d = info["X"].shape[1]
        rng = check_random_state(self.random_state)
        self.dp_event_ = epsilon_delta_event(cal.epsilon, cal.delta)  # Laplace + EM rounds, (ε, δ) proof
        if self.accountant is not None:
            self.accountant.spend(cal.epsilon, cal.delta, event=self.dp_event_, label=f"TDIL({cal.mode})")
        logger.info("TDIL(%s): charged (epsilon=%.6g, delta=%.3g); %d rounds, net of %s points",
                    cal.mode, cal.epsilon, cal.delta, cal.B, plan["net_size"])
        lap = laplace_plan(cal.sensitivity * self._sensitivity_factor, cal.epsilon_laplace, dim=1)
        X_sv, mu_sv = plan["X_sv"], plan["mu_sv"]
        w_lin = (mu_sv @ X_sv) if plan["linear"] else None  # w* as a d-vector for the linear kernel
        # the regularised intercept (kernel K + b²): φ'(z) = (z, b), so <φ'(z), w_t − w*> = <z, u> + b²·c with
        # c = Σα − Σμ; the net sampler then scores the 2-term kernel sum 1·K'(z, u) + (c − 1)·K'(z, 0)
        b2 = k["intercept_scaling"] ** 2
        mu_sum = float(np.sum(mu_sv)) if plan["linear"] and b2 > 0.0 else 0.0
        picks, alphas, trace = [], [], []
        fp_used, stop = 0.0, "completed"
        bar = progress_bar(self.verbose, total=cal.B, desc="TDIL rounds", unit="round")
        try:
            for t in range(cal.B):
                if plan["linear"]:  # w_t and w* collapse to d-vectors
                    w_t = np.asarray(alphas) @ np.asarray(picks) if picks else np.zeros(d)
                    u = w_t - w_lin
                if cal.sampler == "continuous":
                    # float slack of this round from public quantities: a ≤ κ(||w_t|| + C)
                    a_t = cal.kappa * (float(np.linalg.norm(w_t)) * (1 + 1e-12) + cal.norm_bound)
                    d_t = linear_em.fp_delta(a_t, cal.net_radius, d, r)
                    if fp_used + d_t > cal.delta_fp:
                        stop = f"float-slack budget exhausted after {t} rounds"
                        break
                    fp_used += d_t
                    z_cont = linear_em.LinearBallEM(rng).sample(u, cal.kappa, r)
                    coords, z = linear_em.snap_to_net(z_cont, cal.net_radius, r)
                elif plan["linear"] and b2 > 0.0:
                    c = (float(np.sum(alphas)) if alphas else 0.0) - mu_sum
                    coords, z, _, _ = _core.em_sample_kernel(
                        d, cal.net_radius, r, np.ascontiguousarray(np.vstack([u, np.zeros(d)])),
                        np.array([1.0, c - 1.0]), *kernel_args(k), cal.kappa, cal.exponent_bound, rng)
                elif plan["linear"]:
                    coords, z, _, _ = _core.em_sample_linear(
                        d, cal.net_radius, r, np.ascontiguousarray(u), cal.kappa, cal.exponent_bound, rng)
                else:
                    pts = np.vstack([X_sv] + ([np.asarray(picks)] if picks else []))
                    coef = np.concatenate([-mu_sv, np.asarray(alphas, dtype=np.float64)])
                    coords, z, _, _ = _core.em_sample_kernel(
                        d, cal.net_radius, r, np.ascontiguousarray(pts), np.ascontiguousarray(coef),
                        *kernel_args(k), cal.kappa, cal.exponent_bound, rng)
                z = np.asarray(z, dtype=np.float64)
                zq = z[None, :]
                f_star = float(_core.kernel_predict(zq, X_sv, mu_sv, *kernel_args(k))[0]) \
                    if X_sv.shape[0] else 0.0
                cur = float(_core.kernel_predict(zq, np.asarray(picks), np.asarray(alphas, dtype=np.float64),
                                                 *kernel_args(k))[0]) if picks else 0.0
                d_hat = float(grid_release(np.array([f_star - cur]), lap, rng)[0])
                update = abs(d_hat) > cal.sigma
                if update:
                    picks.append(z)
                    alphas.append(cal.eta * math.copysign(1.0, d_hat))
                trace.append(dict(round=t, update=bool(update)))  # no EM score: it is a function of w*
                bar.update(1)
                bar.set_postfix_str(f"updates {len(picks)}", refresh=False)
        finally:
            bar.close()
        logger.info("TDIL: %s, %d of %d rounds updated the model", stop, len(picks), cal.B)
        self.privacy_ = cal
        self.net_size_ = plan["net_size"]
        self.n_updates_ = len(picks)
        self.trace_ = trace
        self.stop_reason_ = stop
        self.delta_fp_used_ = fp_used
        P = np.asarray(picks, dtype=np.float64).reshape(-1, d)
        self.release_ = KernelRelease(
            P, np.asarray(alphas, dtype=np.float64), k, classes=getattr(self.model, "classes_", None),
            mechanism="TDIL", epsilon=cal.epsilon, delta=cal.delta,
            calibration=dict(asdict(cal), net_size=plan["net_size"], stop_reason=stop, delta_fp_used=fp_used),
            data_norm=r,
        )
        return self

r"""PrivateSVM — Rubinstein, Bartlett, Huang & Taft (2009/2012), "Learning in a Large Function Space:
Privacy-Preserving Mechanisms for SVM Learning" (SPEC "PrivateSVM").

Mechanism
---------
Train the SVM in an explicit finite feature space and release its weight vector with i.i.d.
Laplace noise per coordinate:

    w* = argmin_w ½||w||² + (C/n) Σ_i ℓ(y_i, <w, φ(x_i)>),      release  w* + Lap(b)^F,

no unregularised bias (``fit_intercept=True`` appends a constant feature ``intercept_scaling``
that is **regularised like every other coordinate** and enters κ), ``k(x, x) = ||φ(x)||² ≤ κ²``,
``ℓ`` L-Lipschitz in its second argument (hinge, logistic, Huber-SVM: L = 1). Feature maps:

* ``kernel="linear"``: ``φ(x) = x`` on the declared ball ``||x|| ≤ data_norm`` (rows outside raise
  ``ValueError`` unless ``clip=True``, which projects them onto the ball); ``F = d``,
  ``κ = data_norm``.
* ``kernel="rbf" | "laplacian"``: random Fourier features (:class:`dpcore.kernels.random_features.RandomFourierFeatures`)
  ``φ̂(x) = d̂^{-1/2}[cos ρ_jᵀx, sin ρ_jᵀx]_{j ≤ d̂}``, ``F = n_components = 2d̂`` columns, κ = 1
  for every input (no domain restriction). The ρ's are public (drawn independently of the data
  and published in ``random_features_``); the mechanism is private for the random kernel they
  define, whatever they are.

(A polynomial kernel would need its explicit monomial map of dimension ``C(d+p, p)``; it is not
offered — use the RFF kernels or TDDL/PINP.)

Noise (SPEC, β = ε): ``b = 4 L C κ √F / (ε n)`` per coordinate; for RFF without intercept
(κ = 1, F = 2d̂, d̂ the SPEC's number of frequencies) this is ``2^{2.5} L C √d̂ / (ε n)`` as printed. This is ``calibration="spec"``;
``calibration="tight"`` (the default since issue 25) uses half of it, ``2 L C κ √F / (ε n)``, which the proof
below shows is enough (both plus the solver-residual term, see "Solver residual").

Sensitivity (proof sketch), the factor 2 and ``calibration``
------------------------------------------------------------
``G_D(w) = ½||w||² + (C/n) Σ ℓ(y_i, <w, φ(x_i)>)`` is 1-strongly convex. Let ``D, D'`` differ in
record ``(x, y) → (x', y')``, ``w₁ = argmin G_D``, ``w₂ = argmin G_D'``, and ``H`` the part common to
both (``½||w||²`` plus the other ``n − 1`` loss terms), so ``G_D = H + (C/n)ℓ(y, <·, φ(x)>)`` and
``G_D' = H + (C/n)ℓ(y', <·, φ(x')>)`` (sums of finite convex functions: the subdifferentials add).
``0 ∈ ∂G_D'(w₂)`` gives ``h ∈ ∂H(w₂)`` with ``h = −(C/n) s' φ(x')``, ``s' ∈ ∂ℓ(y', ·)``, hence
``g := h + (C/n) s φ(x) = (C/n)(s φ(x) − s' φ(x')) ∈ ∂G_D(w₂)`` for any ``s ∈ ∂ℓ(y, ·)``, and
``|s|, |s'| ≤ L``. Strong monotonicity of ``∂G_D`` (with ``0 ∈ ∂G_D(w₁)``) gives

    ||w₁ − w₂||² ≤ <g − 0, w₂ − w₁> ≤ ||g|| ||w₂ − w₁||,   ||g|| ≤ 2 L C κ / n,

i.e. ``Δ₂ = 2LCκ/n`` and, by Cauchy–Schwarz (``||v||₁ ≤ √F ||v||₂``), ``Δ₁ ≤ √F Δ₂ = 2LCκ√F/n``.
Both are attained (hinge, L = 1): if ``Cκ² < 1``, ``w = (C/n) Σ_i y_i φ(x_i)`` has every margin
``y_i<w, φ(x_i)> ≤ Cκ² < 1``, so every hinge is active there and ``w`` satisfies the optimality
condition: ``w* = (C/n) Σ y_i φ(x_i)`` exactly. Flipping the label of a point with
``||φ(x)|| = κ`` then moves ``w*`` by ``2(C/n)φ(x)``: L2 norm ``Δ₂``, and L1 norm ``√F Δ₂`` when
the coordinates of ``φ(x)`` have equal magnitude (the pair of the test-suite and of its privacy
audits).

The SPEC's (and the paper's) constant is ``4LCκ√F/n`` — twice this. The extra factor 2 comes from
the paper's stability argument, which bounds the change through the regulariser's strong convexity
at half strength: with the paper's normalisation ``(1/n)Σℓ + λ||w||²`` (λ = 1/(2C)) the objective
is ``2λ``-strongly convex, and using λ instead of 2λ as the modulus gives
``||Δ|| ≤ 2L κ/(λ n) = 4LCκ/n``. (The extracted paper text in ``papers/`` is illegible at that step;
the factor is reconstructed.) The parameter ``calibration`` selects the constant:

* ``"spec"``: ``4LCκ√F/n``, the SPEC value. Conservative, hence valid: the mechanism is
  in fact ``ε/2``-DP for the exact minimiser, which the privacy audit shows (honest lower bound
  ≈ ε/2 on a pair attaining ``Δ₂``).
* ``"tight"`` (default): ``2LCκ√F/n = √F Δ₂`` from the proof above — half the noise at the same ε. The audit
  on the attaining pair gives a lower bound close to ε, and catches a copy with half that noise.

Solver residual and exact release
---------------------------------
The released vector is a float approximation ``ŵ`` of ``w*``. The solver certifies
``||ŵ − w*|| ≤ ρ`` (hinge: duality gap of the dual box QP, ``ρ = sqrt(2·gap·C)`` by 1/C-strong
convexity of ``(1/n)Σℓ + (1/(2C))||w||²`` — the same minimiser; smooth losses: certified
gradient norm, ``ρ = C·(||∇|| + e_fp)``), against a **public** bound ``ρ_pub`` computed from
``tol`` alone (hinge: ``sqrt(2·tol·C)``; smooth: ``C·(tol + e_fp,pub)``); if the certificate is
worse, ``fit`` raises :class:`dpcore.glm.perturbation.ConvergenceError` and releases nothing. Then, by the
triangle inequality, ``||ŵ(D) − ŵ(D')||₂ ≤ Δ₂ + 2ρ_pub`` and ``||ŵ(D) − ŵ(D')||₁ ≤ √F(Δ₂ + 2ρ_pub)``,
and ``ŵ`` is released by dpcore's exact grid Laplace mechanism (:func:`dpcore.mechanisms.noise.laplace_plan`)
for the L1 sensitivity

    privacy_.sensitivity_l1 = Δ₁,cal + 2 ρ_pub √F,     Δ₁,cal = 4LCκ√F/n  ("spec")
                                                        Δ₁,cal = 2LCκ√F/n  ("tight"),

both ``≥ √F (2LCκ/n + 2ρ_pub)``. (``Δ₁,cal`` is ``privacy_.sensitivity_l1_spec`` rounded up, halved
exactly for ``"tight"``; every sum is rounded upwards.) The released numbers are exact
discrete-Laplace grid outputs (no floating-point noise, Mironov 2012) with per-coordinate scale
``privacy_.release_scale ≈ sensitivity_l1/ε``. The guarantee is pure ε-DP (replace-one), charged
to ``accountant`` before anything data-dependent is sampled.

The feature vector a record contributes is its *computed* ``φ̂(x)`` (Rust; each output row is a
function of its input row only). Calibrations use the public ``κ_eff`` that bounds the computed
rows: RFF rows whose computed norm exceeds ``1 + 1e-12`` are scaled back to that norm (this never
happens in practice), linear rows are checked against ``data_norm(1 + 1e-12)``; ``κ_eff`` adds the
rounding of the norm computation.

K classes (issue 24)
--------------------
With ``K ≥ 3`` declared ``classes`` and ``loss="logistic"`` the model is a ``K × F`` matrix ``W`` trained with the
multinomial logistic loss of the score vector ``z = Wφ̂(x)``,

    W* = argmin_W ½||W||²_F + (C/n) Σ_i ℓ(Wφ̂(x_i), y_i),   ℓ(z, y) = log Σ_k e^{z_k} − z_y,

released as ``W* + Lap(b)^{K·F}``; ``predict`` is the argmax of ``decision_function`` (``(n, K)``), ``predict_proba``
its softmax. *Proof sketch.* ``R^{K×F}`` with the Frobenius norm is a Hilbert space and the objective is 1-strongly
convex in it. The argument above goes through with the score vector: the subgradients of the two objectives at
``W₂ = W*(D')`` differ by ``g = (C/n)(∇ℓ(z, y)φ̂(x)ᵀ − ∇ℓ(z', y')φ̂(x')ᵀ)``, and ``∇ℓ(z, y) = softmax(z) − e_y``
has ℓ2 norm ``≤ L = √2`` whatever K (docs/privacy.md, Lemma M1), so ``||g||_F ≤ 2LCκ/n`` and
``||W₁ − W₂||_F ≤ Δ₂ = 2√2·Cκ/n``. For the L1 norm of the ``K·F`` released entries, ``||V||₁ ≤ √(KF)||V||_F``.
The solver is :class:`~dpcore.MulticlassOutputPerturbation`'s certified L-BFGS-B + Newton–CG
(:func:`dpcore.glm.multiclass.certified_residual`): a public ``ρ_pub = (tol + e_fp)/λ`` bounds ``||Ŵ − W*||_F``,
``λ = 1/(C_sklearn·n)``, a fit that does not certify it raises ``ConvergenceError``. So, as in the binary case,

    sensitivity_l1 = √(KF)·(Δ₂,cal + 2ρ_pub),   Δ₂,cal = 2√2·Cκ/n ("tight"),  4√2·Cκ/n ("spec"),

rounded upwards, released by the same exact grid Laplace mechanism (pure ε-DP, replace-one). ``C="auto"`` is the
binary rule with ``L = √2`` and ``√(KF)``. The Crammer–Singer hinge (also ``L = √2``) would give the same bound but
has no certified solver in dpcore: ``loss="hinge"`` or ``"huber_svm"`` with ``K ≥ 3`` classes is refused before any
charge. Unlike the Gaussian releases (whose Frobenius noise does not grow with K), the Laplace release pays
``√K`` through the ℓ1 norm: per-coordinate noise ``√(2K)`` times the binary one at the same C.

The certified solver (hinge)
----------------------------
A LIBLINEAR-style dual coordinate descent in Rust (``dpcore._core.rff_linear_svm_dcd``, Hsieh et
al. 2008) gives a dual point; :func:`dpcore.glm._solver` recomputes ``ŵ`` and the certified duality
gap from it (every term non-negative, with its floating-point error bound) and, unless that is
already ``≤ tol``, polishes it by its active-set step (cheapest free sets first, bounded in size
and in BVLS iterations: :func:`dpcore.glm._solver.polish`, shared with the generic solver); up to
six such rounds with a tighter DCD tolerance each, then the generic
:func:`dpcore.glm._solver.solve_hinge` is used. Only the certificate matters for
privacy: the search strategy changes the running time, never the guarantee.
"""

from __future__ import annotations

import logging
import math
import numbers
from dataclasses import asdict, dataclass
from typing import Any, Optional, Literal, Union, TYPE_CHECKING

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import ClassifierTags

from dpcore import _core
from dpcore._internal.cloning import PerCloneSeedMixin
from dpcore._internal.tags import binary_classifier_tags
from dpcore._internal.defaults import AUTO_NOISE_TO_MARGIN
from dpcore.accounting.events import epsilon_delta_event
from dpcore._internal.fp import RADIUS_TOL, SLACK, UNIT_ROUNDOFF, gamma_k, round_up
from dpcore.glm._losses import make_loss
from dpcore.glm._solver import (
    ConvergenceError, GLMObjective, hinge_point, polish, certify_smooth, check_certifiable, gradient_fp_bound,
    hinge_gap_floor, resolve_tol, solve_hinge, solve_smooth,
)
from dpcore._internal.labels import (
    DEFAULT_CLASSES, check_multiclass_classes, encode_binary_labels, encode_multiclass_labels,
)
from dpcore.glm.multiclass import MulticlassOutputPerturbation, certified_residual
from dpcore._internal.linear import LinearPredictorMixin
from dpcore._internal.validation import (
    check_array, check_epsilon, check_required, check_feature_names, check_positive, check_scale, check_tol, record_feature_names,
)
from dpcore.mechanisms.noise import grid_release, check_random_state, laplace_plan
from dpcore.kernels.random_features import RFF_KERNELS, RandomFourierFeatures, check_gamma, check_n_components
from dpcore._internal.validation import refuse_fit_params
from dpcore._internal.types import ArrayLike, Self, Labels, RandomState
from dpcore._internal.progress import check_verbose, progress_bar

if TYPE_CHECKING:
    from dpcore.accounting import BudgetAccountant

logger = logging.getLogger(__name__)

__all__ = ["PrivateSVM", "PrivateSVMPrivacy", "PrivateSVMCertificate", "KERNELS", "SVM_LOSSES", "CALIBRATIONS"]

#: Kernels of :class:`PrivateSVM`.
KERNELS = ("linear",) + RFF_KERNELS
#: Losses of :class:`PrivateSVM` (all 1-Lipschitz).
SVM_LOSSES = ("hinge", "logistic", "huber_svm")
#: Sensitivity calibrations of :class:`PrivateSVM`: the SPEC's ``4LCκ√F/n`` or the tight ``2LCκ√F/n``.
CALIBRATIONS = ("spec", "tight")
_U = UNIT_ROUNDOFF
_SLACK = SLACK


_up = round_up


@dataclass(frozen=True)
class PrivateSVMPrivacy:
    """Every number of a :class:`PrivateSVM` calibration (all public).

    Attributes
    ----------
    epsilon : ε of the pure ε-DP guarantee (charged to the accountant).
    epsilon_used : ε actually guaranteed by the exact grid sampler (ε rounded down, ≤ ε).
    kernel, loss : as passed.
    n : training-set size.
    n_features_out : F, the dimension of the released vector (intercept coordinate included).
    n_components : F for the RFF kernels (output columns of the feature map; 0 for linear).
    kappa : κ_eff, the public bound on the computed feature-vector norms (intercept included).
    data_norm : declared radius (linear) or ``nan`` (RFF).
    lipschitz : L.
    C : scikit-learn's C, as used: ``½||w||² + C Σ ℓ`` (resolved value when ``C="auto"``).
    C_auto : whether C came from the data-independent ``"auto"`` rule.
    calibration : ``"spec"`` or ``"tight"`` (the ``calibration`` parameter): which L1 bound of the
        exact minimiser enters ``sensitivity_l1``.
    sensitivity_l2 : ``2LCκ/n``, the tight L2 sensitivity of the exact minimiser (derivation above).
    sensitivity_l1_spec : ``4LCκ√F/n``, the SPEC/paper L1 bound (twice the tight ``√F·Δ₂``); kept for
        reference whatever the calibration.
    noise_scale_spec : ``sensitivity_l1_spec/ε``: the SPEC's Laplace scale per coordinate.
    residual_bound : public ρ_pub bounding ``||ŵ − w*||`` (from ``tol``).
    sensitivity_l1 : the L1 sensitivity of the released float vector actually used by the grid
        Laplace release: ``sensitivity_l1_spec + 2ρ_pub√F`` (``"spec"``) or
        ``sensitivity_l1_spec/2 + 2ρ_pub√F`` (``"tight"``, i.e. ``√F(2LCκ/n + 2ρ_pub)``).
    release_scale : effective per-coordinate Laplace scale of the release (≈ sensitivity_l1/ε).
    release_granularity : grid spacing of the released values.
    tol : solver tolerance (duality gap for the hinge loss, gradient norm otherwise).
    fp_bound : public floating-point bound entering ρ_pub (smooth losses; 0 for the hinge).
    intercept_scaling : constant feature value (0 without intercept).
    n_classes : K, the number of declared classes (2: the binary SVM, one weight vector; K >= 3: the
        multinomial ``K × F`` weight matrix, released as ``K·F`` numbers; sensitivities in the Frobenius norm).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import PrivateSVM
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 2)); y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    >>> rec = PrivateSVM(C=0.125, epsilon=5.0, n_components=100, gamma=1.0, random_state=0).fit(X, y).privacy_
    >>> rec.epsilon, rec.kernel, rec.n, rec.n_features_out
    (5.0, 'rbf', 400, 100)
    """

    epsilon: float
    epsilon_used: float
    kernel: str
    loss: str
    n: int
    n_features_out: int
    n_components: int
    kappa: float
    data_norm: float
    lipschitz: float
    C: float
    C_auto: bool
    calibration: str
    sensitivity_l2: float
    sensitivity_l1_spec: float
    noise_scale_spec: float
    residual_bound: float
    sensitivity_l1: float
    release_scale: float
    release_granularity: float
    tol: float
    fp_bound: float
    intercept_scaling: float
    n_classes: int = 2

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PrivateSVMCertificate:
    """Solver certificate of one fit. **Computed from the data and not private** — a diagnostic
    (do not publish it).

    Attributes
    ----------
    duality_gap : certified gap (hinge; nan otherwise).
    grad_norm : certified gradient norm (smooth losses; nan for the hinge).
    fp_bound : floating-point part of the certificate.
    residual : certified ``||ŵ − w*||`` for this fit.
    residual_bound : the public ρ_pub it was checked against.
    n_iter : solver iterations (epochs of the coordinate descent for the hinge).
    method : solver used.
    """

    duality_gap: float
    grad_norm: float
    fp_bound: float
    residual: float
    residual_bound: float
    n_iter: int
    method: str

    def as_dict(self) -> dict:
        return asdict(self)


class _Prepared:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def _check_bool(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a bool, got {value!r}")
    return bool(value)


def _check_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


#: Rounds of warm-started DCD (each followed by a polish unless already certified).
_DCD_ROUNDS = 6
#: ``max_iter=None``: epoch limit of each DCD round. With shrinking, DCD's epochs after the first
#: few visit only the unshrunk coordinates and are cheap, but near the optimum it can need several
#: thousand of them. Measured (tol = 1e-10, 2 cores), 1,000 → 10,000 epochs per round: full Shuttle
#: train split (n = 39,278), C = 0.1·n, RFF d̂ = 200/100/50: 9.4/4.6/2.3 s → 1.0/0.5/0.3 s (one round
#: needed 6,227/2,116/4,186 epochs, 0.1–0.4 s; with 1,000 all six rounds stopped short and the
#: generic fallback ran, its Rust start recomputing kernel rows, O(nF) each); Adult linear
#: (n = 32,561), C = 3·n / 10·n: 5.7/9.9 s → 0.6/1.2 s. Slower: Adult RFF d̂ = 200, C = n: 0.9 → 2.4 s
#: (both certified). Where nothing certifies (Adult linear C = 30·n: 45 s both; RFF d̂ = 200,
#: C = 10·n: 371 → 290 s with the new generic polish) the longer rounds add 0.5–8 s before the
#: fallback. Fits whose rounds all stop before 1,000 epochs are unchanged.
_DCD_MAX_EPOCHS = 10_000
#: ``max_iter=None``: iteration limit of L-BFGS-B/Newton (smooth losses, generic hinge fallback).
#: Not raised with the DCD limit: in the fallback its rounds are the expensive part (Adult linear
#: C = 30·n with ``max_iter=10_000`` for both: 179 s instead of 45 s, not certified either).
_SOLVER_MAX_ITER = 1_000


def _solve_hinge_fast(F: np.ndarray, y: np.ndarray, *, lam: float, tol: float, max_epochs: int, max_iter: int,
                      radius: float):
    """Certified hinge SVM ``(1/n)Σ hinge + (λ/2)||w||²``: Rust DCD, certified gap, active-set polish.

    Up to :data:`_DCD_ROUNDS` rounds: DCD (``dpcore._core.rff_linear_svm_dcd``, at most ``max_epochs``
    epochs, stopping tolerance ``1e-3, 1e-5, …`` on the projected gradient, solver stream = round
    index) warm-started from the previous round's point (its DCD output, or the polished candidate
    if that certified a smaller gap), certified by :func:`dpcore.glm._solver._hinge_gap`, then
    polished (:func:`dpcore.glm._solver.polish`) unless the certificate is already ``≤ tol``.
    Returns ``(θ̃, gap, fp, n_epochs, method)``; raises :class:`ConvergenceError` if the certified
    gap stays above ``tol`` (after the generic :func:`solve_hinge` fallback, with ``max_iter``, for
    moderate sizes). Deterministic.
    """
    n = F.shape[0]
    FT = F.T
    upper = 1.0 / (lam * n)
    beta = np.zeros(n)
    epochs_total = 0
    best = None
    eps = 1e-3
    for rnd in range(_DCD_ROUNDS):
        beta, epochs = _core.rff_linear_svm_dcd(F, y, upper, beta, eps, int(max_epochs), rnd)
        epochs_total += int(epochs)
        alpha = np.clip(np.asarray(beta) * (lam * n), 0.0, 1.0)
        point = hinge_point(F, FT, y, alpha, lam, radius)
        if point.gap > tol:
            point = polish(F, FT, y, lam, tol, radius, point)
        if best is None or point.gap < best.gap:
            best = point
        if best.gap <= tol:
            break
        # continue from this round's point (DCD progress is kept even where the gap fluctuates)
        beta = point.alpha * upper
        eps *= 1e-2
    if best.gap <= tol:
        return best.theta, best.gap, best.fp, epochs_total, "dcd+active-set"
    if n * F.shape[1] <= 20_000_000:
        theta, hc = solve_hinge(F, y, lam=lam, tol=tol, max_iter=max_iter, radius=radius)
        return theta, hc.duality_gap, hc.fp_bound, epochs_total + hc.n_iter, "dcd+" + hc.method
    raise ConvergenceError(
        f"the certified hinge solver reached duality gap {best.gap:.3e} > tol={tol:.3e}; increase tol or max_iter"
    )


class PrivateSVM(PerCloneSeedMixin, LinearPredictorMixin, ClassifierMixin, BaseEstimator):
    r"""ε-DP SVM by output perturbation in a finite feature space (Rubinstein et al. 2009).

    See :mod:`dpcore.private_svm.estimator` for the mechanism, the sensitivity derivation (and why the SPEC's
    constant 4 is twice the tight 2), the solver residual and the exact release.

    Parameters
    ----------
    C : float or "auto", default "auto"
        scikit-learn's C: the objective is ``½||w||² + C Σ ℓ`` (as LinearSVC's). ``"auto"``: the
        data-independent rule ``C = ρ ε / (√2 · 4c L κ² √F)`` (``c = 1`` for ``calibration="spec"``,
        ``½`` for ``"tight"``; ρ = :data:`dpcore._internal.defaults.AUTO_NOISE_TO_MARGIN`): the Laplace
        noise's standard deviation in a decision value, ``√2·(sensitivity_l1/ε)·κ``, is half
        the hinge margin. Depends on ε, κ, F only (public).
    epsilon : float, default 1.0
        ε > 0 (pure ε-DP, replace-one adjacency).
    kernel : {"rbf", "laplacian", "linear"}, default "rbf"
        RFF kernels (κ = 1, F = n_components) or the linear kernel (κ = data_norm, F = d).
    n_components : int, default 100
        Number of random features F (columns of the map; ⌈F/2⌉ frequencies; RFF kernels), as in
        :class:`dpcore.kernels.RandomFourierFeatures`.
    gamma : float, default 1.0
        Kernel bandwidth (RFF kernels).
    data_norm : float, optional
        Declared radius R with ``||x|| ≤ R`` (required for ``kernel="linear"``; never inferred).
    loss : {"hinge", "logistic", "huber_svm"}, default "hinge"
        All 1-Lipschitz (``huber_svm`` with width ``huber_width``).
    fit_intercept : bool, default False
        Append a constant feature ``intercept_scaling``, regularised like the others (enters κ).
    intercept_scaling : float, default 1.0
    huber_width : float, default 0.5
    tol : float or "auto", default "auto"
        Certified duality-gap (hinge) / gradient-norm (smooth) tolerance; sets the public ρ_pub. ``"auto"``: the
        smallest certifiable value, twice the public worst-case float floor of the certificate (n, the feature
        dimension, κ, C and the loss only; recorded as ``tol_`` and ``privacy_.tol``). A float below it is refused
        before any charge.
    max_iter : int or None, default None
        Iteration limit of the solvers: epochs of each coordinate-descent round (hinge loss) and
        iterations of L-BFGS-B/Newton (smooth losses, and the generic fallback of the hinge solver).
        ``None``: 10,000 epochs per round and 1,000 iterations (an int sets both; the default was
        1000 for both before — cheap shrunk epochs let more problems certify without the slow
        fallback, see ``_DCD_MAX_EPOCHS``).
    clip : bool, default False
        ``kernel="linear"``: project rows outside the ball onto it instead of raising.
    classes : sequence of labels or None, default=None
        Two labels, or ``K ≥ 3`` labels for the K-class model (``loss="logistic"``, the multinomial loss; see
        "K classes" in :mod:`dpcore.private_svm.estimator`): ``coef_`` is then ``(K, F)``, ``intercept_`` ``(K,)``,
        ``decision_function`` ``(n, K)``, ``predict`` its argmax, ``predict_proba`` its softmax.
        ``None`` (default): the fixed default rule — a label equal to 1 or True is the
        positive class, 0, −1 or False the negative one (so y in {0, 1}, {−1, 1} or {False, True}
        trains unchanged); ``classes_`` then follows the dtype of ``y`` only: ``[False, True]``
        (bool), ``[0, 1]`` (unsigned), else ``[-1, 1]``, and ``score`` compares through the rule.
        Declare ``classes=(0, 1)`` to get 0/1 predictions from a signed 0/1 ``y``.
        The declared (public) label set; ``classes_[1]`` is +1. Labels outside it are refused; a
        training set with only one of the two classes trains normally (never inferred from ``y``).
    verbose : bool or int, default=False
        Show tqdm progress bars (stderr) during long calls; ``False``/``0`` shows nothing. Progress and the
        :mod:`logging` messages are for the curator only and never part of a release.
        The bar counts the three stages of :meth:`fit` (random features and calibration, certified solve,
        noise); the solve runs in Rust without callbacks.
    random_state : None, int or ChaChaRng
        Randomness of the RFF frequencies and of the noise. ``None``: OS-seeded ChaCha20 (the only
        setting fit for real data); an int: reproducible, research/tests only.
        With an int, clone k of this estimator (made by ``OneVsRestClassifier``, ``cross_val_score``, ...) gets
        the seed derived from the int and k: distinct, reproducible noise streams; ``None`` stays ``None``, a
        ``ChaChaRng`` cannot be cloned (docs/sklearn.md). Use ``None`` for private use.
    accountant : BudgetAccountant, optional
        Charged ``(epsilon, 0)`` in :meth:`fit` before anything is solved or sampled.
    calibration : {"spec", "tight"}, default "tight"
        L1 sensitivity of the exact minimiser used for the noise. ``"spec"``: the SPEC's (and the
        paper's) ``4LCκ√F/n``, twice what is needed. ``"tight"``: ``2LCκ√F/n = √F·Δ₂`` with the tight
        ``Δ₂ = 2LCκ/n`` (proof sketch: ``G_D`` is 1-strongly convex and the two objectives' subgradients
        at ``w*(D')`` differ by ``(C/n)(sφ(x) − s'φ(x'))``, of norm ``≤ 2LCκ/n``; ``||v||₁ ≤ √F||v||₂``;
        full derivation, and why the bound is attained, in :mod:`dpcore.private_svm.estimator`) — half the
        noise at the same ε. Both add the solver-residual term ``2ρ_pub√F``; both are pure ε-DP.
        The value used is recorded in ``privacy_.calibration`` and ``privacy_.sensitivity_l1``. The
        default is ``"tight"`` (issue 25; ``"spec"`` before): with ``C="auto"`` it doubles the auto C
        (``c = ½``) at the same noise-to-margin ratio; with a fixed C it halves the Laplace noise.

    Attributes
    ----------
    coef_ : ndarray of shape (F,) or (K, F) (F without the intercept coordinate)
        The private weight vector in feature space (one row per class with K ≥ 3 classes).
    intercept_ : float or ndarray of shape (K,)
        ``w_last · intercept_scaling`` (0.0 without intercept; per class with K ≥ 3 classes).
    random_features_ : RandomFourierFeatures or None
        The fitted public feature map (None for ``kernel="linear"``).
    classes_ : ndarray of shape (2,) or (K,)
        ``classes_[1]`` is the +1 class (binary); the sorted declared classes (K ≥ 3).
    n_features_in_ : int
    privacy_ : PrivateSVMPrivacy

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore.private_svm.estimator import PrivateSVM
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 2)); y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    >>> clf = PrivateSVM(C=0.125, epsilon=5.0, n_components=100, gamma=1.0, random_state=0).fit(X, y)
    >>> clf.privacy_.n_features_out
    100

    Three classes (multinomial logistic loss, a ``3 × F`` released matrix):

    >>> y3 = rng.integers(0, 3, size=400); X3 = np.array([[1.0, 0.0], [-0.5, 0.9], [-0.5, -0.9]])[y3]
    >>> clf3 = PrivateSVM(C=1.0, epsilon=20.0, loss="logistic", classes=[0, 1, 2], n_components=50,
    ...                   random_state=0).fit(X3, y3)
    >>> clf3.coef_.shape, clf3.decision_function(X3[:4]).shape, float(clf3.score(X3, y3)) > 0.9
    ((3, 50), (4, 3), True)
    """

    #: Test hooks for deliberately broken copies; must stay as they are.
    _noise_factor = 1.0

    @staticmethod
    def _l1_from_l2_factor(F: int) -> float:
        """``√F``: ``||v||₁ ≤ √F ||v||₂`` (test hook)."""
        return math.sqrt(F)

    #: K classes: the multinomial loss's Lipschitz constant in the score vector (ℓ2), ``√2`` (test hook).
    _multiclass_lipschitz = math.sqrt(2.0)

    @staticmethod
    def _multiclass_l1_factor(K: int, F: int) -> float:
        """K classes: ``√(K·F)``, ``||V||₁ ≤ √(K·F) ||V||_F`` for a ``K × F`` matrix (test hook)."""
        return math.sqrt(K * F)

    #: the fitted model is a DP release (see dpcore._internal.tags.expected_failed_checks)
    _dp_release = True

    def _declared_k(self) -> int:
        """K of the declared ``classes`` (2 for ``None`` or a pair; not validated here)."""
        if self.classes is None or isinstance(self.classes, (str, bytes)):
            return 2
        try:
            return max(2, len(list(self.classes)))
        except TypeError:
            return 2

    def __sklearn_tags__(self):
        tags = binary_classifier_tags(super().__sklearn_tags__())
        if self._declared_k() > 2:
            tags.classifier_tags = ClassifierTags(multi_class=True, poor_score=True)
        return tags

    def __init__(self, epsilon: float = 1.0, *, C: Union[float, Literal["auto"]] = "auto",
                 kernel: Literal["rbf", "laplacian", "linear"] = "rbf", n_components: int = 100, gamma: float = 1.0,
                 data_norm: Optional[float] = None, loss: Literal["hinge", "logistic", "huber_svm"] = "hinge",
                 fit_intercept: bool = False, intercept_scaling: float = 1.0, huber_width: float = 0.5,
                 tol: Union[float, Literal["auto"]] = "auto", max_iter: Optional[int] = None, clip: bool = False,
                 classes: Labels = DEFAULT_CLASSES, verbose: bool | int = False, random_state: RandomState = None,
                 accountant: Optional[BudgetAccountant] = None, calibration: Literal["spec", "tight"] = "tight"
                ) -> None:
        self.C = C
        self.epsilon = epsilon
        self.kernel = kernel
        self.n_components = n_components
        self.gamma = gamma
        self.data_norm = data_norm
        self.loss = loss
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.huber_width = huber_width
        self.tol = tol
        self.max_iter = max_iter
        self.clip = clip
        self.classes = classes
        self.verbose = verbose
        self.random_state = random_state
        self.accountant = accountant
        self.calibration = calibration

    # -- validation ----------------------------------------------------------------------------
    def _validate_params(self) -> dict:
        if isinstance(self.C, str):
            if self.C != "auto":
                raise ValueError(f"C must be a positive number or 'auto', got {self.C!r}")
            C = "auto"
        else:
            C = check_scale(self.C, "C")
        epsilon = check_epsilon(self.epsilon)
        if not isinstance(self.kernel, str) or self.kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, got {self.kernel!r}")
        if not isinstance(self.loss, str) or self.loss not in SVM_LOSSES:
            raise ValueError(f"loss must be one of {SVM_LOSSES}, got {self.loss!r}")
        if not isinstance(self.calibration, str) or self.calibration not in CALIBRATIONS:
            raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {self.calibration!r}")
        p = dict(C=C, epsilon=epsilon, kernel=self.kernel, calibration=self.calibration, K=2)
        if self._declared_k() > 2:  # K-class PrivateSVM: declared labels, multinomial loss (module docstring)
            p["K"] = int(check_multiclass_classes(self.classes).shape[0])
            if self.loss != "logistic":
                raise ValueError(
                    f"loss={self.loss!r} with K = {p['K']} declared classes: the K-class PrivateSVM trains the "
                    "multinomial logistic loss (L = sqrt(2)) with its certified solver; pass loss='logistic' (the "
                    "Crammer-Singer hinge has no certified K-class solver in dpcore)")
        if self.kernel == "linear":
            check_required(type(self).__name__, [("data_norm", "for kernel='linear', the declared bound R on ||x||, "
                                                               "public and never derived from the data")]
                           if self.data_norm is None else [])
            p["R"] = check_positive(self.data_norm, "data_norm")
            p["D"] = 0
        else:
            p["D"] = check_n_components(self.n_components)
            p["gamma"] = check_gamma(self.gamma)
            if self.data_norm is not None:
                p["R"] = check_positive(self.data_norm, "data_norm")  # accepted, unused (κ = 1)
        p["fit_intercept"] = _check_bool(self.fit_intercept, "fit_intercept")
        p["scaling"] = check_positive(self.intercept_scaling, "intercept_scaling") if p["fit_intercept"] else 0.0
        h = check_positive(self.huber_width, "huber_width")
        p["tol"] = check_tol(self.tol, "tol")
        p["max_iter"] = None if self.max_iter is None else _check_int(self.max_iter, "max_iter")
        p["clip"] = _check_bool(self.clip, "clip")
        p["loss"] = make_loss(self.loss, huber_width=h)
        return p

    def _validate_X(self, X, name="X"):
        X = check_array(X, name)
        if X.dtype != np.float64:
            X = X.astype(np.float64)
        return X

    def _labels(self, y, n, K: int = 2):
        # Declared label set (dpcore._internal.labels): never inferred from y, one class is fine.
        if K > 2:  # class indices 0..K-1 of the sorted declared classes
            return encode_multiclass_labels(y, self.classes, n)
        return encode_binary_labels(y, self.classes, n)

    # -- features ------------------------------------------------------------------------------
    def _features(self, X, p: dict, rff: Optional[RandomFourierFeatures]):
        """Feature matrix (intercept column included) and κ_eff (public)."""
        n, d = X.shape
        if p["kernel"] == "linear":
            R = p["R"]
            norms = np.sqrt(np.einsum("ij,ij->i", X, X))
            bad = norms > R * (1.0 + RADIUS_TOL)
            if bad.any():
                if not p["clip"]:
                    i = int(np.flatnonzero(bad)[0])
                    raise ValueError(
                        f"X: {int(bad.sum())} row(s) lie outside the declared domain ||x|| <= data_norm = {R} "
                        f"(e.g. row {i}, norm {float(norms[i])!r}); pass clip=True to project them onto the ball"
                    )
                factor = np.ones(n)
                factor[bad] = R / norms[bad]
                X = X * factor[:, None]
            Phi, base, fdim = X, R, d
        else:
            Phi = rff.transform(X)
            fdim = Phi.shape[1]
            norms = np.sqrt(np.einsum("ij,ij->i", Phi, Phi))
            bad = norms > 1.0 + RADIUS_TOL
            if bad.any():  # deterministic per-row projection (never seen in practice)
                Phi = Phi * np.where(bad, 1.0 / norms, 1.0)[:, None]
            base = 1.0
        kappa = base * (1.0 + RADIUS_TOL) * (1.0 + gamma_k(fdim + 4))
        if p["fit_intercept"]:
            Phi = np.hstack([Phi, np.full((n, 1), p["scaling"])])
            kappa = math.sqrt(kappa * kappa + p["scaling"] ** 2) * (1.0 + 4.0 * _U)
        return np.ascontiguousarray(Phi), _up(kappa)

    # -- calibration ---------------------------------------------------------------------------
    def _calibrate_multiclass(self, n: int, F: int, kappa: float, p: dict) -> PrivateSVMPrivacy:
        """K ≥ 3 classes: the ``K × F`` matrix's L1 sensitivity (module docstring, "K classes")."""
        C_sk, eps, K = p["C"], p["epsilon"], p["K"]
        L = float(self._multiclass_lipschitz)
        root = self._multiclass_l1_factor(K, F)
        if C_sk == "auto":  # the binary rule with L = √2 and √(K·F): public ε, κ, K, F only
            c = 1.0 if p["calibration"] == "spec" else 0.5
            C_sk = AUTO_NOISE_TO_MARGIN * eps / (math.sqrt(2.0) * 4.0 * c * L * kappa * kappa * root)
        C = C_sk * n
        lam = 1.0 / C
        # the certified multinomial solver's public numbers (dpcore.glm.multiclass): ρ bounds ||Ŵ − W*||_F
        _, tol, _, fp, rho = certified_residual(n=n, p=F, K=K, radius=kappa, lam=lam, tol=p["tol"],
                                                loss="multinomial")
        rho = _up(rho, 1e-9)
        sens_l2 = _up(2.0 * L * C * kappa / n, 1e-9)
        spec_l1 = _up(4.0 * L * C * kappa * root / n, 1e-9)
        data_l1 = spec_l1 if p["calibration"] == "spec" else 0.5 * spec_l1
        sens_l1 = _up(data_l1 + 2.0 * rho * root, 1e-9)
        plan = laplace_plan(sens_l1 * self._noise_factor, eps, dim=K * F)
        return PrivateSVMPrivacy(
            epsilon=eps, epsilon_used=plan.epsilon_used, kernel=p["kernel"], loss="multinomial", n=n,
            n_features_out=F, n_components=p["D"], kappa=kappa,
            data_norm=p.get("R", math.nan) if p["kernel"] == "linear" else math.nan, lipschitz=L, C=C_sk,
            C_auto=p["C"] == "auto", calibration=p["calibration"], sensitivity_l2=sens_l2, sensitivity_l1_spec=spec_l1,
            noise_scale_spec=spec_l1 / eps, residual_bound=rho, sensitivity_l1=sens_l1, release_scale=plan.scale,
            release_granularity=plan.granularity, tol=tol, fp_bound=fp, intercept_scaling=p["scaling"], n_classes=K,
        )

    def _calibrate(self, n: int, F: int, kappa: float, p: dict) -> PrivateSVMPrivacy:
        if p["K"] > 2:
            return self._calibrate_multiclass(n, F, kappa, p)
        C_sk, eps, loss, tol = p["C"], p["epsilon"], p["loss"], p["tol"]
        L = 1.0
        root_f = self._l1_from_l2_factor(F)
        if C_sk == "auto":  # public: ε, κ, F (class docstring)
            c = 1.0 if p["calibration"] == "spec" else 0.5
            C_sk = AUTO_NOISE_TO_MARGIN * eps / (math.sqrt(2.0) * 4.0 * c * L * kappa * kappa * root_f)
        C = C_sk * n  # the proof's constant: ½||w||² + (C/n) Σ ℓ (module docstring)
        lam = 1.0 / C
        sens_l2 = _up(2.0 * L * C * kappa / n, 1e-9)
        spec_l1 = _up(4.0 * L * C * kappa * root_f / n, 1e-9)
        if loss.name == "hinge":
            tol = resolve_tol(tol, lambda t: hinge_gap_floor(n=n, d=F, radius=kappa, lam=lam, tol=t))
            check_certifiable(tol, hinge_gap_floor(n=n, d=F, radius=kappa, lam=lam, tol=tol), "certified duality gap")
            rho = _up(math.sqrt(2.0 * tol * C), 1e-9)
            fp = 0.0
        else:
            # ||w*|| ≤ min(sqrt(2 ℓ(0) C), L κ C); ŵ within ρ of it: e_fp at the public ||ŵ|| bound.
            theta_star = min(math.sqrt(2.0 * loss.loss_at_zero() * C) * (1.0 + 4.0 * _U), _up(L * kappa * C))

            def at(t):
                theta_hat = theta_star * (1.0 + 1e-6) + 2.0 * t * C + 1e-300
                for _ in range(4):
                    fp = gradient_fp_bound(n=n, d=F, radius=kappa, theta_norm=theta_hat, b_norm=0.0, mu=lam,
                                           loss=loss)
                    rho = _up((t + fp) * C, 1e-9)
                    if theta_star + rho <= theta_hat:
                        return rho, fp
                    theta_hat = (theta_star + rho) * 1.01
                raise ValueError(  # pragma: no cover - degenerate parameters
                    "could not compute a public residual bound (numerically degenerate parameters)")

            tol = resolve_tol(tol, lambda t: at(t)[1])
            rho, fp = at(tol)
            check_certifiable(tol, fp, "certified gradient norm")
        # "tight": exactly half the rounded-up SPEC bound (a power-of-two scaling is exact), hence an
        # upper bound on 2LCκ√F/n = √F·Δ₂ (module docstring).
        data_l1 = spec_l1 if p["calibration"] == "spec" else 0.5 * spec_l1
        sens_l1 = _up(data_l1 + 2.0 * rho * root_f, 1e-9)
        plan = laplace_plan(sens_l1 * self._noise_factor, eps, dim=F)
        return PrivateSVMPrivacy(
            epsilon=eps, epsilon_used=plan.epsilon_used, kernel=p["kernel"], loss=loss.name, n=n, n_features_out=F,
            n_components=p["D"], kappa=kappa, data_norm=p.get("R", math.nan) if p["kernel"] == "linear" else math.nan,
            lipschitz=L, C=C_sk, C_auto=p["C"] == "auto", calibration=p["calibration"], sensitivity_l2=sens_l2, sensitivity_l1_spec=spec_l1,
            noise_scale_spec=spec_l1 / eps, residual_bound=rho, sensitivity_l1=sens_l1, release_scale=plan.scale,
            release_granularity=plan.granularity, tol=tol, fp_bound=fp, intercept_scaling=p["scaling"],
        )

    def _plan(self, cal: PrivateSVMPrivacy):
        return laplace_plan(cal.sensitivity_l1 * self._noise_factor, cal.epsilon,
                            dim=cal.n_features_out * (cal.n_classes if cal.n_classes > 2 else 1))

    def _prepare(self, X, y, rng=None, random_features=None) -> _Prepared:
        """Validate, build the features and calibrate (public); no noise, no budget.

        ``random_features``: a fitted :class:`RandomFourierFeatures` to reuse (audits: the public
        weights are fixed across neighbouring datasets); otherwise they are drawn from ``rng``.
        """
        p = self._validate_params()
        X = self._validate_X(X)
        n, d = X.shape
        classes, y_pm = self._labels(y, n, p["K"])
        rff = None
        if p["kernel"] != "linear":
            if random_features is None:
                rff = RandomFourierFeatures(n_components=p["D"], kernel=p["kernel"], gamma=p["gamma"],
                                            random_state=check_random_state(rng)).fit(X)
                # The published features must not hold the generator that then draws the model's noise:
                # ChaCha's state (key + counter) would let anyone holding it regenerate that noise. The
                # fitted weights are all the features need; a refit of this copy draws fresh secure ones.
                rff.random_state = None
            else:
                rff = random_features
                if rff.n_features_in_ != d:
                    raise ValueError(f"X has {d} features, but random_features expects {rff.n_features_in_}")
        Phi, kappa = self._features(X, p, rff)
        cal = self._calibrate(n, Phi.shape[1], kappa, p)
        return _Prepared(Phi=Phi, y=y_pm, classes=classes, n=n, d=d, p=p, cal=cal, rff=rff)

    # -- solving -------------------------------------------------------------------------------
    def _solve(self, prep: _Prepared):
        """Certified ``ŵ`` (noise-free, deterministic) and its certificate, checked against ρ_pub."""
        cal, p = prep.cal, prep.p
        lam = 1.0 / (cal.C * cal.n)  # the objective ½||w||² + (C_obj/n) Σ ℓ with C_obj = n·C (scikit-learn C)
        max_iter = _SOLVER_MAX_ITER if p["max_iter"] is None else p["max_iter"]
        if cal.n_classes > 2:
            return self._solve_multiclass(prep, lam, max_iter)
        if p["loss"].name == "hinge":
            epochs = _DCD_MAX_EPOCHS if p["max_iter"] is None else p["max_iter"]
            theta, gap, fp, n_iter, method = _solve_hinge_fast(prep.Phi, prep.y, lam=lam, tol=cal.tol,
                                                               max_epochs=epochs, max_iter=max_iter,
                                                               radius=cal.kappa)
            residual = math.sqrt(2.0 * gap / lam) * (1.0 + _SLACK)
            cert = PrivateSVMCertificate(duality_gap=gap, grad_norm=math.nan, fp_bound=fp, residual=residual,
                                         residual_bound=cal.residual_bound, n_iter=n_iter, method=method)
        else:
            obj = GLMObjective(prep.Phi, prep.y, p["loss"], lam)
            theta, n_iter = solve_smooth(obj, tol=cal.tol, max_iter=max_iter, radius=cal.kappa)
            sc = certify_smooth(obj, theta, radius=cal.kappa, n_iter=n_iter)
            if not sc.grad_norm <= cal.tol:
                raise ConvergenceError(f"certified gradient norm {sc.grad_norm:.3e} > tol={cal.tol:.3e}; "
                                       "refusing to release")
            cert = PrivateSVMCertificate(duality_gap=math.nan, grad_norm=sc.grad_norm, fp_bound=sc.fp_bound,
                                         residual=sc.residual, residual_bound=cal.residual_bound,
                                         n_iter=sc.n_iter, method=sc.method)
        if not cert.residual <= cal.residual_bound:
            raise ConvergenceError(
                f"certified residual {cert.residual:.3e} exceeds the public bound {cal.residual_bound:.3e}; "
                "refusing to release"
            )
        return np.asarray(theta, dtype=np.float64), cert

    def _solve_multiclass(self, prep: _Prepared, lam: float, max_iter: int):
        """K classes: ``Ŵ`` (K × F) by :class:`~dpcore.MulticlassOutputPerturbation`'s certified multinomial
        solver (L-BFGS-B + Newton–CG on the public rows ``φ̂(x)``, intercept column included, no intercept of its
        own), certified as there: computed gradient norm ``≤ tol`` and ``||Ŵ||_F ≤`` its public bound, residual
        ``(g + e_fp)/λ ≤ ρ_pub``."""
        cal = prep.cal
        K, F = cal.n_classes, cal.n_features_out
        solver = MulticlassOutputPerturbation(lam=lam, data_norm=cal.kappa, classes=list(range(K)),
                                              loss="multinomial", fit_intercept=False, max_iter=int(max_iter))
        W, g, n_iter = solver._solve(prep.Phi, prep.y, K, lam, cal.tol)
        g_cert = g * (1.0 + gamma_k(W.size + 2))
        _, _, w_bound, e_fp, _ = certified_residual(n=cal.n, p=F, K=K, radius=cal.kappa, lam=lam, tol=cal.tol,
                                                    loss="multinomial")
        w_norm = float(np.linalg.norm(W))
        if not (g_cert <= cal.tol and w_norm <= w_bound):
            raise ConvergenceError(f"PrivateSVM: the certified multinomial solver stopped at gradient norm "
                                   f"{g_cert:.3e} (tol {cal.tol:.3e}); increase max_iter or tol; refusing to release")
        residual = (g_cert + e_fp) / lam * (1.0 + _SLACK)
        cert = PrivateSVMCertificate(duality_gap=math.nan, grad_norm=g_cert, fp_bound=e_fp, residual=residual,
                                     residual_bound=cal.residual_bound, n_iter=int(n_iter), method="lbfgs+newton-cg")
        if not cert.residual <= cal.residual_bound:
            raise ConvergenceError(
                f"certified residual {cert.residual:.3e} exceeds the public bound {cal.residual_bound:.3e}; "
                "refusing to release"
            )
        return np.asarray(W, dtype=np.float64), cert

    def _release(self, prep: _Prepared, theta: np.ndarray, rng, n_samples: Optional[int] = None) -> np.ndarray:
        """Exact grid Laplace release of ``theta`` (``n_samples`` rows if given) with the calibrated plan
        (a K × F ``theta`` is released as its ``K·F`` entries, row-major)."""
        flat = np.ascontiguousarray(np.asarray(theta, dtype=np.float64).ravel())
        out = grid_release(flat, self._plan(prep.cal), rng, n_samples)
        return np.asarray(out, dtype=np.float64)

    # -- fitting -------------------------------------------------------------------------------
    def _reset(self):
        for attr in ("coef_", "intercept_", "classes_", "n_features_in_", "privacy_",
                     "random_features_", "dp_event_", "tol_"):
            self.__dict__.pop(attr, None)

    def fit(self, X: ArrayLike, y: ArrayLike, **fit_params: Any) -> Self:
        """Fit and release the private SVM.

        Validates everything, draws the public RFF weights, computes the public calibration, charges
        ``accountant`` ``(epsilon, 0)``, then solves (certified) and samples the noise.

        Raises
        ------
        ValueError
            Invalid parameters or data (the message names the parameter).
        ConvergenceError
            The solver did not reach ``tol`` (nothing is released).

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import PrivateSVM
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(400, 2)); y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
        >>> clf = PrivateSVM(C=0.125, epsilon=5.0, n_components=100, gamma=1.0, calibration="tight",
        ...                  random_state=0).fit(X, y)
        >>> clf.coef_.shape, clf.privacy_.calibration
        ((100,), 'tight')
        """
        refuse_fit_params(type(self).__name__, fit_params)
        X_in = X
        check_verbose(self.verbose)
        with progress_bar(self.verbose, total=3, desc="PrivateSVM", unit="stage") as bar:
            bar.set_postfix_str("features and calibration", refresh=False)
            rng = check_random_state(self.random_state)
            prep = self._prepare(X, y, rng)
            cal = prep.cal
            self._reset()
            # exact grid Laplace on the weights: ε-DP, no tighter dp_accounting description (accounting.events)
            self.dp_event_ = epsilon_delta_event(cal.epsilon, 0.0)
            if self.accountant is not None:
                self.accountant.spend(cal.epsilon, 0.0, event=self.dp_event_,
                                      label=f"PrivateSVM({cal.kernel}, {cal.loss})")
            logger.info("PrivateSVM(%s, %s): charged (epsilon=%.6g, delta=0); %d released coefficients",
                        cal.kernel, cal.loss, cal.epsilon, cal.n_features_out)
            bar.update(1)
            bar.set_postfix_str("certified solve", refresh=False)
            theta, cert = self._solve(prep)
            logger.info("PrivateSVM: certified residual %.3e <= public bound %.3e (%s, %d iterations)",
                        cert.residual, cal.residual_bound, cert.method, cert.n_iter)
            bar.update(1)
            bar.set_postfix_str("noise", refresh=False)
            w = self._release(prep, theta, rng)
            bar.update(1)
        if cal.n_classes > 2:
            W = w.reshape(cal.n_classes, cal.n_features_out)
            if prep.p["fit_intercept"]:
                self.coef_ = W[:, :-1].copy()
                self.intercept_ = W[:, -1] * prep.p["scaling"]
            else:
                self.coef_ = W.copy()
                self.intercept_ = np.zeros(cal.n_classes)
        elif prep.p["fit_intercept"]:
            self.coef_ = w[:-1].copy()
            self.intercept_ = float(w[-1] * prep.p["scaling"])
        else:
            self.coef_ = w.copy()
            self.intercept_ = 0.0
        self.random_features_ = prep.rff
        self.classes_ = prep.classes
        self.n_features_in_ = prep.d
        self.privacy_ = cal
        self.tol_ = float(cal.tol)  # the resolved tolerance (tol="auto": public parameters only)
        # the certificate (data-dependent, not covered by the proof) was checked against the public
        # privacy_.residual_bound in _solve and is not kept on the released model
        record_feature_names(self, X_in)
        return self

    # -- prediction ----------------------------------------------------------------------------
    def _decision_values(self, X) -> np.ndarray:
        """``<coef_, φ(x)> + intercept_`` (post-processing of the release; queries need no domain check)."""
        self._check_fitted()
        X_in = X
        X = check_array(X, "X", n_features=self.n_features_in_, estimator=type(self).__name__)
        check_feature_names(self, X_in)
        Phi = X if self.random_features_ is None else self.random_features_.transform(X)
        if np.ndim(self.coef_) == 2:  # K classes: scores of shape (n, K)
            with np.errstate(over="ignore", invalid="ignore"):
                f = np.asarray(Phi @ self.coef_.T, dtype=np.float64) + self.intercept_
            if not np.isfinite(f).all():
                raise ValueError("X has values too large: the decision values overflow float64; "
                                 "rescale X to the declared data domain")
            return f
        return self._linear_decision(Phi, self.intercept_)

    # -- audit support -------------------------------------------------------------------------
    def _release_samples(self, X, y, n_samples: int, random_state=None, random_features=None) -> np.ndarray:
        """``n_samples`` independent releases on ``(X, y)`` (shape ``(n_samples, F)``; no budget).

        Fits once (the solve is deterministic) and reuses the calibration code path of :meth:`fit`.
        """
        rng = check_random_state(random_state)
        prep = self._prepare(X, y, rng, random_features)
        theta, _ = self._solve(prep)
        out = self._release(prep, theta, rng, int(n_samples))
        return out.reshape(int(n_samples), -1)

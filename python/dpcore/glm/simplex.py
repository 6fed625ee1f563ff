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

from typing import Any, Literal, Optional, Union, TYPE_CHECKING

import logging
import numbers

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator

from dpcore.glm._solver import check_certifiable
from dpcore._internal.cloning import PerCloneSeedMixin
from dpcore._internal.tags import binary_classifier_tags, regressor_tags
from dpcore.accounting.events import epsilon_delta_event
from dpcore._internal.fp import NUMPY_EXP_ULPS as FP_EXP_ULPS
from dpcore._internal.labels import DEFAULT_CLASSES, encode_binary_labels
from dpcore._internal.linear import LinearPredictorMixin
from dpcore._internal.validation import (
    as_1d_target, check_X, check_feature_names, check_positive, check_required, record_feature_names,
)
from dpcore.exceptions import SimplexCertificationError


from dpcore.glm._simplex_calibration import (
    LOSSES, MIN_PROBABILITY, TASKS, SimplexCalibration, epsilon0, loss_constants, n_draws, simplex_calibration,
)
from dpcore.glm._simplex_solver import EntropicSimplexProblem, SimplexSolution, softmax
from dpcore.mechanisms.multinomial import multinomial_counts
from dpcore.mechanisms.noise import check_random_state
from dpcore._internal.validation import refuse_fit_params
from dpcore._internal.types import ArrayLike, Self, Labels, RandomState
from dpcore._internal.progress import check_verbose

if TYPE_CHECKING:
    from dpcore.accounting import BudgetAccountant

logger = logging.getLogger(__name__)

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


# ------------------------------------------------------------------------------------------------
# the estimator
# ------------------------------------------------------------------------------------------------
class SimplexERM(PerCloneSeedMixin, LinearPredictorMixin, BaseEstimator):
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
    lam : float or "auto", default "auto"
        Entropy regularisation ``λ > 0`` (it drives both utility and ``ε0 ∝ 1/λ²``). ``"auto"``: the
        data-independent rule of :func:`~dpcore.glm._simplex_calibration.simplex_auto_lam`,
        ``λ = (8 L L_g² R⁵/(ε n log P))^{1/3}`` — the balance of the entropy bias ``λ log P`` and the sampling
        error of the ``m = ε/ε0`` draws in Jain–Thakurta 2014, Thm 4 (rate ``n^{-1/3}``) — raised to 1.01× the
        smallest λ the exact sampler accepts; public ``n``, ``ε``, ``P``, loss constants and ``R`` only. The value
        used is ``privacy_.lam`` (and ``lam_``).
    data_norm_inf : float
        Declared ``R∞ ≥ |x_ij|`` for every training entry (required). Rows outside raise
        ``ValueError`` unless ``clip=True``. Never inferred from the data.
    loss : {"squared", "logistic", "huber_svm"}, default "squared"
    task : {"auto", "regression", "classification"}, default "auto"
        ``"auto"`` is ``"regression"`` for the squared loss with a declared ``label_bound`` and
        ``"classification"`` otherwise (decided by the public parameters alone, never by the data),
        so the defaults fit two-class labels. ``loss="squared", task="classification"``
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
    classes : sequence of two labels or None, default=None
        ``None`` (default): the fixed default rule — a label equal to 1 or True is the
        positive class, 0, −1 or False the negative one (so y in {0, 1}, {−1, 1} or {False, True}
        trains unchanged); ``classes_`` then follows the dtype of ``y`` only: ``[False, True]``
        (bool), ``[0, 1]`` (unsigned), else ``[-1, 1]``, and ``score`` compares through the rule.
        Declare ``classes=(0, 1)`` to get 0/1 predictions from a signed 0/1 ``y``.
        Classification: the declared (public) label set; ``classes_[1]`` is +1. Labels outside it
        are refused; a training set with only one class trains normally (never inferred from ``y``).
    verbose : bool or int, default=False
        Show tqdm progress bars (stderr) during long calls; ``False``/``0`` shows nothing. Progress and the
        :mod:`logging` messages are for the curator only and never part of a release.
        The bar counts solver iterations (total ``max_iter``) and shows the certified τ.
    random_state : None, int or ChaChaRng
        ``None`` (default): OS-seeded ChaCha20; an int: reproducible (research/tests only).
        With an int, clone k of this estimator (made by ``OneVsRestClassifier``, ``cross_val_score``, ...) gets
        the seed derived from the int and k: distinct, reproducible noise streams; ``None`` stays ``None``, a
        ``ChaChaRng`` cannot be cloned (docs/sklearn.md). Use ``None`` for private use.
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

    SimplexERM is binary only: ``classes`` with ``K > 2`` labels, or a ``y`` with a label outside the declared
    pair, is refused with a ``ValueError`` naming ``classes``, before anything is charged. Why: the mechanism
    samples from the Gibbs/entropic fixed point ``θ̂ = softmax(−∇f(θ̂)/λ)`` on the simplex of **one** weight
    vector (``m`` draws of ``θ̂`` released as one sparse distribution), for a loss of the scalar margin
    ``ℓ(<x, θ>; y)`` with ``y = ±1``. The ∞-norm gradient sensitivity ``2LR/n``, the entropy bias and the
    number of draws ``m = ε/ε0`` are derived for that single distribution. K classes would need K weight
    vectors (a product of simplices or one simplex over ``K·P`` coordinates) and a vector-valued loss, and
    neither the sensitivity nor the sampling calibration is proved for that. For K classes use
    :class:`~dpcore.MulticlassOutputPerturbation` (multinomial logistic, on raw features or public random
    features).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import SimplexERM
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1.0, 1.0, size=(2000, 5)); y = np.sign(X[:, 0] + 0.1)
    >>> est = SimplexERM(epsilon=1.0, delta=1e-6, lam=1.0, data_norm_inf=1.0, random_state=0).fit(X, y)
    >>> est.coef_.shape, est.n_draws_
    ((5,), 507)
    """

    #: Test hook for deliberately broken copies; must stay 1.0.
    _epsilon0_factor = 1.0

    _FITTED = ("coef_", "support_", "counts_", "n_draws_", "privacy_", "classes_", "n_features_in_", "lam_")

    def __init__(self, epsilon: float, delta: float = 0.0, *, lam: Union[float, Literal["auto"]] = "auto",
                 data_norm_inf: float,
                 loss: Literal["squared", "logistic", "huber_svm"] = "squared",
                 task: Literal["auto", "regression", "classification"] = "auto", label_bound: Optional[float] = None,
                 huber_width: float = 0.5, scale: float = 1.0, signed: bool = True, tol: Optional[float] = None,
                 max_iter: int = 100_000, max_draws: int = 10_000_000, clip: bool = False,
                 classes: Labels = DEFAULT_CLASSES, verbose: bool | int = False, random_state: RandomState = None,
                 accountant: Optional[BudgetAccountant] = None) -> None:
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


    # -- validation ------------------------------------------------------------------------------
    #: the fitted model is a DP release (see dpcore._internal.tags.expected_failed_checks)
    _dp_release = True

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        try:
            task = self._resolved_task()
        except ValueError:  # invalid parameters are reported by fit, not by the tags
            task = "classification"
        if task == "regression":
            return regressor_tags(tags, sparse=True)
        return binary_classifier_tags(tags, sparse=True)

    def _resolved_task(self) -> str:
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        if self.task == "auto":
            # public parameters only: a declared label bound asks for regression
            return "regression" if self.loss == "squared" and self.label_bound is not None else "classification"
        if self.task == "regression" and self.loss != "squared":
            raise ValueError(f"task='regression' needs loss='squared', got loss={self.loss!r}")
        return self.task

    def calibration(self, n_samples: int, n_features: int) -> SimplexCalibration:
        """The public calibration for a training set of ``n_samples`` rows and ``n_features`` features.

        Uses no data (``n`` and ``p`` are public); raises the same ``ValueError`` as :meth:`fit`
        when no draw is affordable.

        Examples
        --------
        >>> from dpcore import SimplexERM
        >>> cal = SimplexERM(epsilon=1.0, delta=1e-6, lam=1.0, data_norm_inf=1.0).calibration(2000, 5)
        >>> cal.n, cal.n_features
        (2000, 5)
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
        X = check_X(X, name, accept_sparse=True)
        if sparse.issparse(X):
            data = X.data
            if data.size and float(np.max(np.abs(data))) > r_inf:
                if not clip:
                    raise ValueError(
                        f"{name} has entries outside the declared domain |x_ij| <= data_norm_inf={r_inf:g} "
                        f"(max |x_ij| = {float(np.max(np.abs(data))):g}); pass clip=True to clip them"
                    )
                X = X.copy()
                np.clip(X.data, -r_inf, r_inf, out=X.data)
            return X
        arr = np.asarray(X, dtype=np.float64)
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
        y = as_1d_target(y)
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
            raise ValueError(f"Unknown label type: y must be numeric for regression, got dtype {y.dtype}")
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
        check_verbose(self.verbose)
        r_inf = check_positive(self.data_norm_inf, "data_norm_inf")
        if not isinstance(self.clip, (bool, np.bool_)):
            raise ValueError(f"clip must be a bool, got {self.clip!r}")
        check_required(type(self).__name__, [("label_bound", "for regression, the declared bound |y| <= label_bound, "
                                                             "public")] if task == "regression" and self.label_bound is None else [])
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
        sol = prob.solve(tau_tol=cal.tol, max_iter=prep["max_iter"], verbose=self.verbose, require=True,
                         desc=type(self).__name__)
        b = sol.b
        rng_b = float(np.max(b) - np.min(b))
        if not rng_b <= cal.exponent_range:  # cannot happen for valid data (|g_j| <= L R)
            raise SimplexCertificationError(
                f"SimplexCertificationError: the exponents -g/lam span {rng_b:.6g} > the public bound "
                f"{cal.exponent_range:.6g}; refusing to sample"
            )
        p = softmax(b)
        return p

    @staticmethod
    def _draw(p: np.ndarray, m: int, rng):

        return multinomial_counts(p, m, random_state=rng)

    # -- fitting ---------------------------------------------------------------------------------
    def fit(self, X: ArrayLike, y: ArrayLike, **fit_params: Any) -> Self:
        """Fit on ``(X, y)`` and release the private sparse model.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            Entries in ``[−data_norm_inf, data_norm_inf]`` (sparse input is never densified).
        y : array-like of shape (n_samples,)
            Regression targets in ``[−label_bound, label_bound]``, or two class labels.

        **fit_params
            Refused with a ``TypeError`` naming them (``sample_weight`` is not supported: per-record
            weights change the sensitivity; see ``class_weight``).

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

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import SimplexERM
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-1.0, 1.0, size=(2000, 5)); y = np.sign(X[:, 0] + 0.1)
        >>> est = SimplexERM(epsilon=1.0, delta=1e-6, lam=1.0, data_norm_inf=1.0, random_state=0).fit(X, y)
        >>> est.privacy_.epsilon, est.coef_.shape
        (1.0, (5,))
        """
        refuse_fit_params(type(self).__name__, fit_params)
        X_in = X

        self._reset_fitted()
        prep = self._prepare(X, y)
        cal = prep["cal"]
        event = epsilon_delta_event(cal.epsilon, cal.delta)  # m exponential-mechanism draws, (ε, δ) proof
        if self.accountant is not None:
            self.accountant.check(cal.epsilon, cal.delta, event=event, label=type(self).__name__)
        rng = check_random_state(self.random_state)
        p_release = self._certified_release(prep)
        if self.accountant is not None:
            self.accountant.spend(cal.epsilon, cal.delta, event=event, label=f"{type(self).__name__}(m={cal.n_draws})")
        logger.info("%s: charged (epsilon=%.6g, delta=%.3g); %d multinomial draws", type(self).__name__,
                    cal.epsilon, cal.delta, cal.n_draws)
        self.dp_event_ = event
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
        self.lam_ = float(cal.lam)  # lam="auto": a function of public parameters only
        self.n_features_in_ = int(pdim)
        if prep["classes"] is not None:
            self.classes_ = prep["classes"]
        record_feature_names(self, X_in)
        return self

    # -- prediction ------------------------------------------------------------------------------
    def _decision_values(self, X) -> np.ndarray:
        """``<x, w>`` for the rows of ``X`` (dense or sparse)."""
        self._check_fitted()
        X_in = X
        X = check_X(X, "X", n_features=self.n_features_in_, accept_sparse=True, estimator=type(self).__name__)
        check_feature_names(self, X_in)
        return self._linear_decision(X)



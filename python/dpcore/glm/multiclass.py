r"""Private K-class linear models by Gaussian output perturbation of the whole ``K × p`` weight matrix (issue 24).

:class:`MulticlassOutputPerturbation` fits, on rows ``x̃_i = (x_i, b)`` (``b = intercept_scaling``, the
regularised intercept of :mod:`dpcore.glm.perturbation`; ``||x̃|| ≤ R' = sqrt(R² + b²)``),

.. math::

    W^* = \arg\min_{W \in R^{K \times p}} \frac{1}{n} \sum_i \ell(W \tilde x_i, y_i) + \frac{\lambda}{2} \|W\|_F^2

with one of two losses of the score vector ``z = W x̃ ∈ R^K``:

* ``loss="multinomial"``: ``ℓ(z, y) = log Σ_k e^{z_k} − z_y``, gradient ``softmax(z) − e_y``, ℓ2 norm ``≤ √2``
  (Lemma M1 of docs/privacy.md): ``L = √2`` whatever ``K``;
* ``loss="ovr"``: one-vs-rest, ``ℓ(z, y) = Σ_k log(1 + e^{−s_k z_k})`` with ``s_k = +1`` for ``k = y`` and
  ``−1`` otherwise — the ``K`` binary logistic problems "class k vs rest" fitted **jointly** (the objective is
  separable, so row ``k`` of ``W*`` is exactly the binary solution of problem ``k``); gradient entries in
  ``[−1, 1]``: ``L = √K``.

Privacy (replace-one; proof sketch)
-----------------------------------
*Sensitivity.* ``R^{K×p}`` with the Frobenius norm is a Hilbert space and ``W ↦ W x̃`` is linear with operator
norm ``||x̃|| ≤ R'``; ``J_D`` is λ-strongly convex. As in Lemma M2 (Chaudhuri, Monteleoni & Sarwate 2011,
Lemma 7, with a vector-valued loss): adding the two strong-convexity inequalities of ``J_D`` and ``J_D'`` at
their minimisers gives ``λ||W_D − W_D'||²_F ≤ (1/n)|G(W_D') − G(W_D)|`` with ``G`` the difference of the replaced
records' losses, which is ``2 L R'``-Lipschitz in ``W`` (Frobenius), so

.. math::  \|W^*_D - W^*_{D'}\|_F \le \frac{2 L R'}{\lambda n},
           \qquad L = \sqrt 2 \text{ (multinomial)}, \quad L = \sqrt K \text{ (one-vs-rest)}.

*Class weights* (``class_weight``, public): record ``i``'s loss is ``w_{y_i} ℓ(z, y_i)``, which is
``L·max_k w_k``-Lipschitz in ``z`` (the gradient is scaled by ``w_{y_i}``; the replaced and the new record may belong
to any classes), so ``L`` above becomes ``L·max_k w_k`` — in the sensitivity, the public ``||W*||`` bound and the float
bound of the gradient — and nothing else changes.

For one-vs-rest this is the joint accounting of the K binary problems: one replacement changes every binary
problem (the features of all K, the labels of at most two), each row moves by at most the binary ``2R'/(λn)``
and the whole matrix by ``√K`` times it — one Gaussian mechanism on all K rows at ``(ε, δ)`` (each row's noise
is that of a binary release at ``μ/√K``-GDP: GDP composition, not the ε/K split of basic composition).

*Certified solver.* L-BFGS-B then Newton–CG (scipy / :func:`dpcore.glm._solver._cg`) to a computed gradient
norm ``≤ tol``; by λ-strong convexity ``||Ŵ − W*||_F ≤ (||fl(∇J)(Ŵ)||(1 + γ) + e_fp)/λ`` with ``e_fp`` the float
error of the gradient evaluation (:func:`gradient_fp_bound`, the binary bound of :mod:`dpcore.glm._solver` with
the score vector: ``||z̃_i − z_i|| ≤ γ_p ||W||_F R'``, softmax/sigmoid ``1/2``-Lipschitz, per-entry relative
evaluation error ``(2||W|| R' + NUMPY_EXP_ULPS + LIBM_LN_ULPS + 4)u + γ_{K+2}`` (``FP_ASSUMPTION``), the
products ``γ_n``). ``tol`` and ``e_fp`` are evaluated at **public** bounds (``||W*||_F ≤ min(sqrt(2ℓ(0)/λ),
L R'/λ)``, ``ℓ(0) = log K`` resp. ``K log 2``), giving a public ``ρ = (tol + e_fp)/λ``; a fit whose certificate
exceeds it raises :class:`~dpcore.exceptions.ConvergenceError` (named assumption, as the binary GLMs: the solver
reaches ``tol`` on every dataset).

*Release.* ``W̃ = Ŵ + N(0, σ² I_{Kp})`` by the exact analytic-Gaussian grid sampler
(:func:`dpcore.mechanisms.noise.gaussian_plan`) for L2 (Frobenius) sensitivity ``Δ = 2 L R'/(λn) + 2ρ`` (the
residual folds into the sensitivity: ``||Ŵ_D − Ŵ_D'|| ≤ ||W*_D − W*_D'|| + 2ρ``): ``(ε, δ)``-DP. Everything
after (argmax, softmax) is post-processing.
"""

from __future__ import annotations

import logging
import math
import numbers
from dataclasses import dataclass
from typing import Any, Literal, Optional, Union, TYPE_CHECKING

import numpy as np
from scipy import optimize
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import ClassifierTags

from dpcore._internal.cloning import PerCloneSeedMixin
from dpcore._internal.class_weight import DEFAULT_MAX_CLASS_WEIGHT, multiclass_class_weights
from dpcore._internal.defaults import DEFAULT_INTERCEPT_SCALING
from dpcore._internal.fp import LIBM_LN_ULPS, NUMPY_EXP_ULPS, RADIUS_TOL, SLACK, UNIT_ROUNDOFF, gamma_k
from dpcore._internal.labels import encode_multiclass_labels
from dpcore._internal.progress import check_verbose
from dpcore._internal.types import ArrayLike, ClassWeight, NDArray, Self, Labels, RandomState
from dpcore._internal.validation import check_array, check_delta, check_epsilon, check_positive, check_rows, check_tol
from dpcore.exceptions import ConvergenceError, NotFittedError
from dpcore.glm._data import project_rows
from dpcore.glm._solver import _cg, _norm, check_certifiable, resolve_tol
from dpcore.mechanisms.noise import check_random_state, gaussian_plan, grid_release

if TYPE_CHECKING:
    from dpcore.accounting import BudgetAccountant

logger = logging.getLogger(__name__)

__all__ = ["MulticlassOutputPerturbation", "MulticlassGLMPrivacy", "gradient_fp_bound", "certified_residual"]

_U = UNIT_ROUNDOFF
_LOSSES = ("multinomial", "ovr")


def gradient_fp_bound(*, n: int, p: int, K: int, radius: float, w_norm: float, lam: float, lipschitz: float) -> float:
    """Worst-case float error (Frobenius) of the computed gradient at ``||W||_F ≤ w_norm`` (module docstring).

    Examples
    --------
    >>> from dpcore.glm.multiclass import gradient_fp_bound
    >>> e = gradient_fp_bound(n=1000, p=17, K=26, radius=1.2, w_norm=10.0, lam=1e-3, lipschitz=2 ** 0.5)
    >>> 0 < e < 1e-10
    True
    """
    R = float(radius)
    e_z = gamma_k(p) * w_norm * R  # ||z̃_i − z_i||₂
    rel = (2.0 * w_norm * R + NUMPY_EXP_ULPS + LIBM_LN_ULPS + 4.0) * _U + gamma_k(K + 2)  # per-entry, relative
    e_s = 0.5 * e_z + math.sqrt(K) * rel * 2.0  # softmax / sigmoid are 1/2-Lipschitz; evaluation error (×2)
    Lt = lipschitz + e_s
    e = (1.0 + 6.0 * _U) * (R * e_s + gamma_k(n) * R * Lt) + 6.0 * _U * (R * Lt + lam * w_norm)
    return e * (1.0 + 1e-12)


def certified_residual(*, n: int, p: int, K: int, radius: float, lam: float, tol: Union[float, str],
                       loss: str = "multinomial", w_max: float = 1.0) -> tuple:
    """Public numbers of the certified K-class solver: ``(L, tol, w_bound, e_fp, ρ)`` (module docstring).

    ``L`` the loss's Lipschitz constant in the score vector (``√2`` multinomial, ``√K`` one-vs-rest, times
    ``w_max``), ``tol`` resolved (``"auto"``: ``CERTIFY_MARGIN·e_fp``) and checked certifiable, ``w_bound`` the
    public bound on ``||Ŵ||_F`` at which ``e_fp`` is evaluated, ``ρ = (tol + e_fp)/λ`` the public bound on
    ``||Ŵ − W*||_F``. Inputs are public: ``n``, ``p`` (columns, intercept included), ``K``, ``radius`` (bound on
    the rows' norms, intercept included), ``λ``. Also used by :class:`dpcore.PrivateSVM` with K classes.

    Examples
    --------
    >>> from dpcore.glm.multiclass import certified_residual
    >>> L, tol, w_bound, e_fp, rho = certified_residual(n=1000, p=10, K=3, radius=1.0, lam=1e-3, tol="auto")
    >>> round(L ** 2, 12), e_fp <= tol, rho > 0
    (2.0, True, True)
    """
    r_eff = float(radius)
    L1 = math.sqrt(2.0) if loss == "multinomial" else math.sqrt(K)  # unweighted
    w_max = float(w_max)
    L = L1 * w_max  # the weighted loss w_y ℓ(z, y) is (L1·max_k w_k)-Lipschitz in z
    tol = check_tol(tol, "tol")
    loss0 = (math.log(K) if loss == "multinomial" else K * math.log(2.0)) * w_max  # J(0) ≤ max_k w_k ℓ(0)
    w_star = min(math.sqrt(2.0 * loss0 / lam), L * r_eff / lam)

    # Ŵ is within ρ = (tol + e_fp)/λ of W*, so ||Ŵ|| ≤ w_star + ρ ≤ w_bound whenever e_fp ≤ tol (the public
    # check_certifiable below; a larger ||Ŵ|| is refused after the solve); e_fp is evaluated at w_bound.
    # Weighted gradient (1/n) Σ w_{y_i} g_i x̃_i + λW: every per-record term scaled by w_{y_i} ≤ w_max (one more
    # rounding); w_max ≥ 1, so w_max·(1 + 2u) × the unweighted bound covers it
    def bounds(t):
        w_bound = (2.0 * w_star + 2.0 * t / lam) * (1.0 + 1e-6)
        return w_bound, gradient_fp_bound(n=n, p=p, K=K, radius=r_eff, w_norm=w_bound, lam=lam,
                                          lipschitz=L1) * (w_max * (1.0 + 2.0 * _U))

    tol = resolve_tol(tol, lambda t: bounds(t)[1])  # "auto": CERTIFY_MARGIN·e_fp, public quantities only
    w_bound, e_fp = bounds(tol)
    check_certifiable(tol, e_fp, "certified gradient norm")
    rho = (tol + e_fp) / lam * (1.0 + SLACK)
    return L, tol, w_bound, e_fp, rho


@dataclass(frozen=True)
class MulticlassGLMPrivacy:
    """Every public number of a :class:`MulticlassOutputPerturbation` release.

    Examples
    --------
    >>> import numpy as np, dpcore
    >>> X = np.array([[0.5, 0.0], [-0.5, 0.0], [0.0, 0.5]]); y = [0, 1, 2]
    >>> m = dpcore.MulticlassOutputPerturbation(1.0, 1e-6, lam=0.1, data_norm=1.0, classes=[0, 1, 2],
    ...                                         random_state=0).fit(X, y)
    >>> round(m.privacy_.lipschitz ** 2, 12), m.privacy_.dim
    (2.0, 9)
    """

    epsilon: float
    delta: float
    n: int
    n_classes: int
    dim: int
    lam: float
    loss: str
    lipschitz: float
    radius: float
    tol: float
    w_norm_bound: float
    fp_error: float
    residual_bound: float
    sensitivity: float
    noise_scale: float


class MulticlassOutputPerturbation(PerCloneSeedMixin, ClassifierMixin, BaseEstimator):
    """Private multinomial (or jointly accounted one-vs-rest) logistic regression by Gaussian output perturbation.

    The proof is in the module docstring: Frobenius sensitivity ``2 L R'/(λn) + 2ρ`` of the ``K × p`` weight
    matrix, ``L = √2`` (multinomial) or ``√K`` (one-vs-rest), one exact analytic-Gaussian release.

    Parameters
    ----------
    epsilon, delta : float
        Privacy of the release (``ε > 0``, ``0 < δ < 1``).
    lam : float
        Regularisation ``λ > 0`` (public; e.g. ``multiclass_auto_lam(n, ε, δ, data_norm=..., kernel="linear")``).
    data_norm : float
        Declared bound ``R`` on ``||x||`` (rows outside are refused unless ``clip=True``). Random features
        (:class:`dpcore.RandomFourierFeatures`, ``||φ(x)|| = 1``) are declared with ``data_norm=1``.
    classes : sequence of K >= 2 labels
        The declared (public) label set; labels outside it are refused.
    loss : {"multinomial", "ovr"}, default="multinomial"
        Multinomial logistic loss (``L = √2``) or K binary logistic problems fitted and released jointly
        (``L = √K``).
    class_weight : dict or None, default=None
        Public weight ``w_k`` per class (classes not in the dict get 1): record ``i``'s loss is multiplied by
        ``w_{y_i}``; each weight finite, ``> 0`` and ``<= max_class_weight``. The loss is then
        ``L·max_k w_k``-Lipschitz and the sensitivity grows by ``max_k w_k`` (pick λ with
        ``multiclass_auto_lam(..., kernel="linear", max_class_weight=max_k w_k)``). ``"balanced"`` (read off the
        data) is refused: release weights with :func:`dpcore.private_class_weights` and pass them here.
    max_class_weight : float, default=10
        Public cap on a declared weight.
    fit_intercept : bool, default=True
        Append the constant ``intercept_scaling`` to every row (regularised intercept).
    intercept_scaling : float, default=0.5
        ``b``; ``R' = sqrt(R² + b²)``.
    tol : float or "auto", default="auto"
        Certified gradient-norm target. ``"auto"``: the smallest value certifiable for the public parameters,
        ``CERTIFY_MARGIN·e_fp`` (twice the worst-case float error of the gradient, a function of n, p, K, λ and
        the declared ``data_norm`` only; recorded as ``tol_``). A float below it is refused before any charge.
    max_iter : int, default=1000
        L-BFGS-B iterations (then at most 50 Newton–CG steps).
    clip : bool, default=False
        Project rows outside the ball onto it instead of refusing them.
    random_state : None, int or ChaChaRng
        ``None``: OS-seeded ChaCha (secure); an int: reproducible (research/tests).
        With an int, clone k of this estimator (made by ``OneVsRestClassifier``, ``cross_val_score``, ...) gets
        the seed derived from the int and k: distinct, reproducible noise streams; ``None`` stays ``None``, a
        ``ChaChaRng`` cannot be cloned (docs/sklearn.md). Use ``None`` for private use.
    accountant : BudgetAccountant, optional
        Charged ``(ε, δ)`` after every validation, before the solve and any noise.
    verbose : bool or int, default=False
        Accepted for API symmetry (the solve is a few seconds).

    Attributes
    ----------
    classes_ : ndarray of shape (K,)
    coef_ : ndarray of shape (K, n_features)
        Released weights.
    intercept_ : ndarray of shape (K,)
        Released intercepts (``b ×`` the released intercept weights).
    privacy_ : MulticlassGLMPrivacy
    class_weight_ : dict
        The (public) weight of every declared class (all 1 without ``class_weight``).
    dp_event_ : the Gaussian event charged.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np, dpcore
    >>> rng = np.random.default_rng(0)
    >>> centers = np.array([[0.5, 0.0], [-0.25, 0.43], [-0.25, -0.43]])
    >>> y = rng.integers(0, 3, size=5000)
    >>> X = np.clip(centers[y] + 0.1 * rng.standard_normal((5000, 2)), -0.7, 0.7)
    >>> lam = dpcore.multiclass_auto_lam(5000, 1.0, 1e-6, data_norm=1.0, kernel="linear")
    >>> clf = dpcore.MulticlassOutputPerturbation(1.0, 1e-6, lam=lam, data_norm=1.0, classes=[0, 1, 2],
    ...                                           random_state=0).fit(X, y)
    >>> clf.coef_.shape, float(clf.score(X, y)) > 0.9
    ((3, 2), True)
    """

    #: Test hook for deliberately broken copies; must stay 1.0.
    _sensitivity_factor = 1.0

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-6, *, lam: float, data_norm: float,
                 classes: Labels = None, loss: str = "multinomial", class_weight: ClassWeight = None,
                 max_class_weight: float = DEFAULT_MAX_CLASS_WEIGHT, fit_intercept: bool = True,
                 intercept_scaling: float = DEFAULT_INTERCEPT_SCALING, tol: Union[float, Literal["auto"]] = "auto",
                 max_iter: int = 1000, clip: bool = False, random_state: RandomState = None,
                 accountant: Optional[BudgetAccountant] = None, verbose: bool | int = False) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.lam = lam
        self.data_norm = data_norm
        self.classes = classes
        self.loss = loss
        self.class_weight = class_weight
        self.max_class_weight = max_class_weight
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tol = tol
        self.max_iter = max_iter
        self.clip = clip
        self.random_state = random_state
        self.accountant = accountant
        self.verbose = verbose

    # -- calibration (public numbers only) -------------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags = ClassifierTags(multi_class=True, poor_score=True)
        tags.target_tags.required = True
        return tags

    def _calibrate(self, n: int, d: int, K: int, w_max: float = 1.0) -> MulticlassGLMPrivacy:
        epsilon = check_epsilon(self.epsilon)
        delta = check_delta(self.delta, allow_zero=False)
        lam = check_positive(self.lam, "lam")
        R = check_positive(self.data_norm, "data_norm")
        if self.loss not in _LOSSES:
            raise ValueError(f"loss must be one of {_LOSSES}, got {self.loss!r}")
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise TypeError(f"fit_intercept must be a bool, got {type(self.fit_intercept).__name__}")
        b = 0.0
        if self.fit_intercept:
            b = self.intercept_scaling
            if isinstance(b, bool) or not isinstance(b, numbers.Real) or not (math.isfinite(b) and b > 0):
                raise ValueError(f"intercept_scaling must be finite and > 0, got {self.intercept_scaling!r}")
            b = float(b)
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, numbers.Integral) or self.max_iter < 1:
            raise ValueError(f"max_iter must be an integer >= 1, got {self.max_iter!r}")
        if not isinstance(self.clip, (bool, np.bool_)):
            raise TypeError(f"clip must be a bool, got {type(self.clip).__name__}")
        check_verbose(self.verbose)
        p = d + (1 if self.fit_intercept else 0)
        r_eff = math.sqrt((R * (1.0 + RADIUS_TOL)) ** 2 + b * b) * (1.0 + SLACK)
        L, tol, w_bound, e_fp, rho = certified_residual(n=n, p=p, K=K, radius=r_eff, lam=lam, tol=self.tol,
                                                        loss=self.loss, w_max=w_max)
        sens = (2.0 * L * r_eff / (lam * n) * (1.0 + SLACK) + 2.0 * rho) * (1.0 + SLACK) * self._sensitivity_factor
        plan = gaussian_plan(sens, epsilon, delta, dim=K * p)
        self._plan, self._b = plan, b
        return MulticlassGLMPrivacy(epsilon=epsilon, delta=delta, n=n, n_classes=K, dim=K * p, lam=lam,
                                    loss=self.loss, lipschitz=L, radius=r_eff, tol=tol, w_norm_bound=w_bound,
                                    fp_error=e_fp, residual_bound=rho, sensitivity=sens, noise_scale=plan.sigma)

    # -- the certified solve ---------------------------------------------------------------------
    def _fun(self, W: np.ndarray, Xt: np.ndarray, idx: np.ndarray, lam: float, sw: Optional[np.ndarray] = None):
        """Objective, gradient and Hessian data at ``W``; ``sw``: per-record weights ``w_{y_i}`` (None: all 1)."""
        n = Xt.shape[0]
        Z = Xt @ W.T
        if self.loss == "multinomial":
            mx = Z.max(axis=1, keepdims=True)
            E = np.exp(Z - mx)
            s = E.sum(axis=1, keepdims=True)
            li = mx[:, 0] + np.log(s[:, 0]) - Z[np.arange(n), idx]
            P = E / s
            S = P.copy()
            S[np.arange(n), idx] -= 1.0
            D = P
        else:
            Y = -np.ones_like(Z)
            Y[np.arange(n), idx] = 1.0
            m = -Y * Z
            li = np.logaddexp(0.0, m).sum(axis=1)
            sig = 0.5 * (1.0 + np.tanh(0.5 * m))  # σ(−y z), stable
            S = -Y * sig
            D = sig * (1.0 - sig)
        if sw is not None:
            li = li * sw
            S = S * sw[:, None]
        f = float(np.mean(li))
        G = S.T @ Xt / n + lam * W
        return f + 0.5 * lam * float(np.sum(W * W)), G, D

    def _hessp(self, V: np.ndarray, Xt: np.ndarray, D: np.ndarray, lam: float,
               sw: Optional[np.ndarray] = None) -> np.ndarray:
        U = Xt @ V.T
        if self.loss == "multinomial":
            PU = D * U
            HU = PU - D * PU.sum(axis=1, keepdims=True)
        else:
            HU = D * U
        if sw is not None:
            HU = HU * sw[:, None]
        return HU.T @ Xt / Xt.shape[0] + lam * V

    def _solve(self, Xt: np.ndarray, idx: np.ndarray, K: int, lam: float, tol: float,
               sw: Optional[np.ndarray] = None):
        p = Xt.shape[1]
        shape = (K, p)

        def fg(w):
            f, G, _ = self._fun(w.reshape(shape), Xt, idx, lam, sw)
            return f, G.ravel()

        res = optimize.minimize(fg, np.zeros(K * p), jac=True, method="L-BFGS-B",
                                options=dict(maxiter=int(self.max_iter), gtol=tol * 1e-3, ftol=0.0, maxcor=20))
        W = res.x.reshape(shape)
        n_iter = int(res.nit)
        _, G, D = self._fun(W, Xt, idx, lam, sw)
        g = _norm(G)
        for _ in range(50):  # Newton–CG polish on the merit ||∇J|| (as dpcore.glm._solver.solve_smooth)
            if g <= 0.5 * tol:
                break
            step = _cg(lambda v: self._hessp(v.reshape(shape), Xt, D, lam, sw).ravel(), -G.ravel(), 1e-10, 200)
            step = step.reshape(shape)
            t = 1.0
            for _ in range(30):
                Wn = W + t * step
                _, Gn, Dn = self._fun(Wn, Xt, idx, lam, sw)
                gn = _norm(Gn)
                if gn < g:
                    break
                t *= 0.5
            else:
                break
            W, G, D, g = Wn, Gn, Dn, gn
            n_iter += 1
        return W, g, n_iter

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        """Validate, calibrate, charge ``(ε, δ)``, solve with a certificate, release ``W̃``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Labels, each one of the declared ``classes``.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            NaN/inf or empty ``X``, rows outside ``data_norm`` (without ``clip``), a label outside ``classes``,
            invalid ``epsilon``, ``delta``, ``lam``, ``data_norm``, ``loss``, ``intercept_scaling``, ``tol``,
            ``max_iter`` (the message names the parameter).
        ConvergenceError
            The solver did not certify its public residual bound (after the charge; see the module docstring).
        """
        X = check_array(X, "X")
        n, d = X.shape
        classes_, idx = encode_multiclass_labels(y, self.classes, n)
        K = classes_.shape[0]
        w = multiclass_class_weights(self.class_weight, classes_, self.max_class_weight)
        cal = self._calibrate(n, d, K, float(w.max()))
        X = np.asarray(project_rows(np.asarray(X, dtype=np.float64), data_norm=float(self.data_norm),
                                    clip=bool(self.clip)), dtype=np.float64)
        Xt = np.hstack([X, np.full((n, 1), self._b)]) if self.fit_intercept else np.ascontiguousarray(X)
        for attr in ("coef_", "intercept_", "classes_", "privacy_", "dp_event_", "class_weight_"):
            self.__dict__.pop(attr, None)
        rng = check_random_state(self.random_state)
        self.dp_event_ = self._plan.dp_event()
        if self.accountant is not None:
            self.accountant.spend(cal.epsilon, cal.delta, event=self.dp_event_,
                                  label=f"MulticlassOutputPerturbation({cal.loss})")
        sw = None if np.all(w == 1.0) else np.ascontiguousarray(w[idx], dtype=np.float64)
        W, g, n_iter = self._solve(Xt, idx, K, cal.lam, cal.tol, sw)
        g_cert = g * (1.0 + gamma_k(W.size + 2))
        w_norm = _norm(W)
        if not (g_cert <= cal.tol and w_norm <= cal.w_norm_bound):
            raise ConvergenceError(f"MulticlassOutputPerturbation: the certified solver stopped at gradient norm "
                                   f"{g_cert:.3e} (tol {cal.tol:.3e}), ||W|| = {w_norm:.4g} (public bound "
                                   f"{cal.w_norm_bound:.4g}); increase max_iter or tol")
        Wr = np.asarray(grid_release(np.ascontiguousarray(W).ravel(), self._plan, rng)).reshape(W.shape)
        logger.debug("MulticlassOutputPerturbation: n=%d K=%d loss=%s, %d iterations, gradient %.2e, sigma %.4g",
                    n, K, cal.loss, n_iter, g_cert, cal.noise_scale)
        self.classes_ = classes_
        self.class_weight_ = {c: float(v) for c, v in zip(classes_.tolist(), w)}
        self.n_features_in_ = d
        self.coef_ = Wr[:, :d]
        self.intercept_ = Wr[:, d] * self._b if self.fit_intercept else np.zeros(K)
        self.tol_ = float(cal.tol)
        self.privacy_ = cal  # no n_iter_: the iteration count depends on the data and is not covered by the proof
        return self

    # -- post-processing -------------------------------------------------------------------------
    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Released scores ``X coef_ᵀ + intercept_`` of shape ``(m, K)``."""
        if not hasattr(self, "coef_"):
            raise NotFittedError("MulticlassOutputPerturbation: call fit(X, y) first")
        X = check_array(check_rows(X, "X", n_features=self.n_features_in_, estimator=type(self).__name__), "X")
        return np.asarray(X, dtype=np.float64) @ self.coef_.T + self.intercept_

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """The class with the largest released score."""
        f = self.decision_function(X)
        return self.classes_[np.argmax(f, axis=1)]

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """``softmax`` of the released scores (multinomial loss; for ``"ovr"`` the normalised sigmoids)."""
        f = self.decision_function(X)
        if self.loss == "ovr":
            s = 0.5 * (1.0 + np.tanh(0.5 * f))
            return s / s.sum(axis=1, keepdims=True)
        z = np.exp(f - f.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)

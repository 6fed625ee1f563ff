r"""Multi-class kernel learning: certified multinomial kernel logistic regression in ``H^K`` (issue 24).

The model is a vector of ``K`` functions ``F = (f_1, …, f_K)`` in the RKHS ``H`` of the kernel
(shifted, ``k + b²``, for the regularised intercept), fitted by

.. math::

    F^* = \arg\min_{F \in H^K} \frac{1}{n} \sum_i s_i\,\ell(F(x_i), y_i) + \frac{\lambda}{2} \sum_k \|f_k\|_H^2,
    \qquad \ell(z, y) = \log \sum_k e^{z_k} - z_y,

with public class weights ``s_i = w_{y_i}`` (1 without). The multinomial logistic loss has gradient
``softmax(z) − e_y`` in the score vector, of ℓ2 norm at most ``√2`` whatever ``K``: the loss is
``L = √2·max_k w_k``-Lipschitz in the ℓ2 norm of ``z``.

Privacy-relevant facts (full proof: docs/privacy.md, "Multi-class kernel releases")
-----------------------------------------------------------------------------------
1. **Replace-one sensitivity in H^K.** For neighbouring ``D, D'`` (one record replaced),
   ``||F*_D − F*_D'||_{H^K} ≤ 2 L R_φ'/(λ n)`` with ``R_φ'² = R_φ² + b²``. Proof: the objective
   ``J_D`` is λ-strongly convex on the Hilbert space ``H^K`` (norm ``||F||² = Σ_k ||f_k||²``), so
   ``(λ/2)||F_D − F_D'||² ≤ J_D(F_D') − J_D(F_D)`` and the same with ``D, D'`` swapped; adding,
   ``λ||Δ||² ≤ (1/n)[g(F_D') − g(F_D)]`` with ``g(F) = s ℓ(F(x), y) − s' ℓ(F(x'), y')`` the
   difference of the replaced records' terms. ``F ↦ F(x) = (<f_k, φ(x)>)_k`` is a linear map ``H^K →
   R^K`` of operator norm ``||φ(x)|| ≤ R_φ'``, and ``s ℓ(·, y)`` is ``L``-Lipschitz in the ℓ2 norm, so
   ``|g(F) − g(G)| ≤ 2 L R_φ' ||F − G||`` and ``||Δ|| ≤ 2 L R_φ'/(λ n)``. (This is the argument of
   Chaudhuri, Monteleoni & Sarwate 2011 / Jain & Thakurta 2013 with the scalar loss replaced by a
   vector one.)
2. **Certified solver.** The fitted ``F̂`` comes with a certified duality gap (Rust,
   ``src/kernel_learning/multiclass.rs``: the Fenchel–Young gap of log-sum-exp per record, computed from the
   dual point alone), so ``||F̂ − F*|| ≤ sqrt(2 gap/λ)``; the private releases use the public
   ``sqrt(2 tol/λ)`` and add twice it to the sensitivity.
3. **One GP, K paths.** The GP mechanism with covariance ``k·I_K`` (K independent paths sharing one
   Cholesky factor) has Mahalanobis sensitivity equal to the ``H^K`` norm of the difference: the
   released ``K`` functions together cost one Gaussian mechanism at sensitivity ``Δ = 2√2 L_w R_φ'/(λn)
   + 2 err``: per class the noise is ``√2`` times a binary release at the same λ, for every ``K``.
   One-vs-rest changes all ``K`` binary problems at once (joint sensitivity ``√K`` times the binary
   one). See :class:`MulticlassTDDL`.
"""

from __future__ import annotations

import logging
import math
import numbers
import warnings
from typing import Any, Literal, Mapping, Optional, Union

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import ClassifierTags

from dpcore import _core
from dpcore._internal.class_weight import DEFAULT_MAX_CLASS_WEIGHT, multiclass_class_weights
from dpcore._internal.defaults import DEFAULT_INTERCEPT_SCALING
from dpcore._internal.labels import encode_multiclass_labels
from dpcore._internal.progress import check_verbose, progress_bar
from dpcore._internal.validation import refuse_fit_params
from dpcore._internal.types import ArrayLike, NDArray, Self, Labels
from dpcore._internal.validation import (
    check_array, check_feature_names, check_positive, check_rows, check_scale, check_tol, record_feature_names,
)
from dpcore._internal.fp import auto_tol, multiclass_gap_floor
from dpcore.exceptions import ConvergenceWarning, NotFittedError
from dpcore.kernel_learning.svm import resolve_lam, unit_ball_r_phi_sq
from dpcore.kernels.evaluation import check_intercept_scaling, check_kernel_domain, check_kernel_params, fused_predict

logger = logging.getLogger(__name__)

__all__ = ["MulticlassKernelLogisticRegression", "MULTINOMIAL_LIPSCHITZ", "MULTICLASS_EXPECTED_FAILED_CHECKS"]

#: ℓ2-Lipschitz constant of the multinomial logistic loss in the score vector: ``||softmax(z) − e_y||₂ ≤ √2``.
MULTINOMIAL_LIPSCHITZ = math.sqrt(2.0)


_DECLARED_K = ("DP-inherent: the label set is declared (classes=[0, 1, 2]) and the output shapes follow it; this "
               "check fits two of the classes and expects binary shapes ((n,) decision values), i.e. the label "
               "set read off the data")

#: scikit-learn common checks the K = 3 model is expected to fail, with the reason (used by the tests).
MULTICLASS_EXPECTED_FAILED_CHECKS = {
    "check_dtype_object": ("DP-inherent: fits labels outside the declared classes (e.g. 3), which are refused "
                           "rather than read off the data"),
    "check_classifiers_train": _DECLARED_K,
    "check_decision_proba_consistency": _DECLARED_K,
    "check_class_weight_classifiers": ("DP-inherent: the check uses class weight 1000 and the weights are capped "
                                       "by the public max_class_weight (the sensitivity grows with the largest "
                                       "weight)"),
}


def _softmax(f: np.ndarray) -> np.ndarray:
    z = f - f.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


class MulticlassKernelLogisticRegression(ClassifierMixin, BaseEstimator):
    """Multinomial kernel logistic regression on ``K >= 2`` declared classes, with a certified duality gap.

    ``min_F (1/n) Σ_i w_{y_i} [log Σ_k exp f_k(x_i) − f_{y_i}(x_i)] + (λ/2) Σ_k ||f_k||²`` over
    ``F = (f_1, …, f_K) ∈ H^K`` (module docstring), ``f_k(x) = Σ_i mu_[i, k] K'(x_i, x)`` with the
    shifted kernel ``K' = K + b²`` of the regularised intercept (``b = intercept_scaling``).
    scikit-learn's ``C`` is ``1/(λ n)``. The non-private first stage of the joint multi-class releases
    (:class:`dpcore.kernel_learning.multiclass_release.MulticlassTDDL`).

    A separate class from :class:`dpcore.KernelLogisticRegression` (binary, ``y ∈ {±1}``, scalar ``f``)
    because its solver, labels and every release built on it assume one function; the multi-class model has
    ``K`` functions and its own solver (``src/kernel_learning/multiclass.rs``).

    Parameters
    ----------
    lam : float, optional
        Regularisation ``λ > 0`` (give ``lam`` or ``C``, not both; neither: ``1e-3``; the value used is
        ``lam_``). For a model that will be released privately (:class:`dpcore.MulticlassTDDL`,
        :class:`dpcore.MulticlassGPService`) use the data-independent
        :func:`~dpcore.kernel_learning.multiclass_release.multiclass_auto_lam` ``(n, ε, δ, data_norm=...)``
        (the binary ``auto_lam`` rule with ``L = √2``): the documented default of the multi-class releases.
    C : float, optional
        scikit-learn's (SVC's) ``C``: ``lam = 1 / (C n)``, as in :class:`dpcore.KernelSVM`.
    kernel : {"rbf", "poly", "linear"}, default="rbf"
        Kernel, as in :func:`dpcore.kernel_matrix`.
    gamma : float, optional
        ``γ > 0``, default ``1.0`` (rows in the unit ball); ``"auto"`` means ``1/n_features``.
    degree, coef0 : int, float
        Of ``"poly"``.
    tol : float or "auto", default="auto"
        Target certified duality gap (absolute, ``(1/n)``-scaled objective). ``"auto"`` (recorded as ``tol_``):
        :func:`~dpcore.kernel_learning.multiclass_release.multiclass_min_tol` on the unit ball — twice the public
        float floor of the certificate (``λ``, the declared classes, the kernel, ``intercept_scaling``, the largest
        class weight; never the data), the smallest tolerance the multi-class releases accept for
        ``data_norm <= 1``.
    max_iter : int, optional
        Maximum Newton iterations (each solves its Newton system by conjugate gradients with kernel
        products); ``None`` means 200. The first starts from a Nyström warm start (the problem restricted to the
        span of a pivoted-Cholesky factor's pivots, solved without kernel products), counted in neither
        ``n_iter_`` nor ``n_kernel_products_``.
    cache_size : float, default=200
        Memory (MB) for the Gram matrix: cached when its ``8 n²`` bytes fit, otherwise kernel rows are
        recomputed in blocks at every product (never an ``n × n`` matrix beyond the budget).
    classes : sequence of K >= 2 labels
        The declared (public) label set, required; ``classes_ = sorted(classes)``. Labels outside it
        are refused; a training set missing some classes trains normally.
    class_weight : dict or None, default=None
        Public weight ``w_k`` per class (classes not in the dict get 1), each finite, ``> 0`` and
        ``<= max_class_weight``; the loss is then ``(√2 max_k w_k)``-Lipschitz (``lipschitz_``).
    max_class_weight : float, default=10
        Public cap on a declared weight.
    verbose : bool or int, default=False
        Progress bar (kernel products, current gap estimate); progress and logs go to the curator only.
    intercept_scaling : float, default=0.5
        Public ``b >= 0`` of the regularised intercept (kernel ``K + b²``).

    Attributes
    ----------
    classes_ : ndarray of shape (K,)
    mu_ : ndarray of shape (n_samples, K)
        Representer coefficients: ``f_k = Σ_i mu_[i, k] φ'(x_i)``; every row sums to 0 and has ℓ2 norm at
        most ``√2 w_{y_i}/(λ n)``.
    X_fit_ : ndarray of shape (n_samples, n_features)
    n_samples_fit_, n_features_in_ : int
    duality_gap_ : float
        Certified gap, ``sqrt(2 duality_gap_/λ) = w_error_bound_ >= ||F − F*||_{H^K}``.
    w_error_bound_ : float
    w_norm_ : float
        ``||F||_{H^K}``.
    primal_objective_, dual_objective_ : float
    lipschitz_ : float
        ``√2 · max_k w_k``.
    intercept_ : ndarray of shape (K,)
        ``b² Σ_i mu_[i, k]`` (included in every decision value).
    n_iter_ : int
        Newton iterations; ``n_kernel_products_`` counts ``n × K`` kernel products.
    converged_ : bool
    stop_reason_ : str
    class_weight_ : dict
    class_weight_public_ : bool
        Always ``True`` (``"balanced"`` is not offered: it reads weights off the data).
    kernel_params_ : dict

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import MulticlassKernelLogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> centers = np.array([[0.5, 0.0], [-0.25, 0.43], [-0.25, -0.43]])
    >>> y = rng.integers(0, 3, size=150)
    >>> X = centers[y] + 0.1 * rng.standard_normal((150, 2))
    >>> clf = MulticlassKernelLogisticRegression(lam=1e-3, gamma=2.0, classes=["a", "b", "c"], tol=1e-8)
    >>> clf = clf.fit(X, np.array(["a", "b", "c"])[y])
    >>> clf.decision_function(X[:2]).shape, clf.predict_proba(X[:2]).shape
    ((2, 3), (2, 3))
    >>> float(clf.score(X, np.array(["a", "b", "c"])[y])) > 0.95, bool(clf.duality_gap_ <= 1e-8)
    (True, True)
    """

    def __init__(self, *, lam: Optional[float] = None, C: Optional[float] = None, kernel: str = "rbf",
                 gamma: Union[float, Literal["auto"], None] = 1.0, degree: int = 3,
                 coef0: float = 1.0, tol: Union[float, Literal["auto"]] = "auto", max_iter: Optional[int] = None,
                 cache_size: float = 200.0,
                 classes: Labels = None, class_weight: Optional[Mapping[Any, float]] = None,
                 max_class_weight: float = DEFAULT_MAX_CLASS_WEIGHT, verbose: bool | int = False,
                 intercept_scaling: float = DEFAULT_INTERCEPT_SCALING) -> None:
        self.lam = lam
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.tol = tol
        self.max_iter = max_iter
        self.cache_size = cache_size
        self.classes = classes
        self.class_weight = class_weight
        self.max_class_weight = max_class_weight
        self.verbose = verbose
        self.intercept_scaling = intercept_scaling

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = "classifier"
        tags.classifier_tags = ClassifierTags(multi_class=True, poor_score=False)
        tags.regressor_tags = None
        tags.target_tags.required = True
        return tags

    # -- fitting -------------------------------------------------------------------------------

    def _class_weights(self, classes_: np.ndarray):
        return multiclass_class_weights(self.class_weight, classes_, self.max_class_weight)

    def fit(self, X: ArrayLike, y: ArrayLike, **fit_params: Any) -> Self:
        """Fit on ``(X, y)`` and certify the result.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Labels, each one of the declared ``classes`` (any subset of them may occur).

        **fit_params
            Refused with a ``TypeError`` naming them (``sample_weight`` is not supported: per-record
            weights change the sensitivity; see ``class_weight``).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            NaN/inf or empty ``X``, wrong shapes, a label outside ``classes``, invalid ``lam``, ``tol``,
            ``max_iter``, ``cache_size``, kernel parameters or class weights (the message names the parameter).
        TypeError
            ``classes`` not declared (``None``) or of mixed kinds; ``class_weight`` not a dict.
        """
        refuse_fit_params(type(self).__name__, fit_params)
        X_in = X
        X = check_array(X, "X")
        n = X.shape[0]
        classes_, idx = encode_multiclass_labels(y, self.classes, n)
        K = classes_.shape[0]
        lam = resolve_lam(self.lam, self.C, n)
        tol = check_tol(self.tol, "tol")
        cache_size = check_positive(self.cache_size, "cache_size")
        max_iter = 200 if self.max_iter is None else self.max_iter
        if isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral) or max_iter < 1:
            raise ValueError(f"max_iter must be an integer >= 1 or None, got {self.max_iter!r}")
        name, gamma, degree, coef0 = check_kernel_params(self.kernel, self.gamma, self.degree, self.coef0, X.shape[1])
        b = check_intercept_scaling(self.intercept_scaling)
        w = self._class_weights(classes_)
        if tol == "auto":  # public: λ, K (declared classes), the kernel on the unit ball, b, the largest weight
            tol = auto_tol(multiclass_gap_floor(lam, K, unit_ball_r_phi_sq(name, gamma, degree, coef0, b),
                                                max(1.0, float(w.max()))))
        check_verbose(self.verbose)
        check_kernel_domain(X, "X", name, gamma, degree, coef0, n_terms=n, intercept_scaling=b)
        X = np.array(X, dtype=np.float64, order="C", copy=True)
        s = None if np.all(w == 1.0) else np.ascontiguousarray(w[idx], dtype=np.float64)
        for attr in list(self.__dict__):
            if attr.endswith("_") and not attr.startswith("__"):
                del self.__dict__[attr]
        bar = progress_bar(self.verbose, desc=type(self).__name__, unit="Kv")

        def progress(it, gap, exact, active):
            bar.update(it - bar.n)
            bar.set_postfix_str(f"{'gap' if exact else 'gap~'} {gap:.2e} (tol {tol:.0e})", refresh=False)

        try:
            res = _core.multiclass_fit(X, np.ascontiguousarray(idx, dtype=np.int64), int(K), name, gamma, degree,
                                       coef0, b, lam, tol, int(max_iter), int(cache_size * 2**20),
                                       progress if check_verbose(self.verbose) else None,
                                       **({} if s is None else {"sample_weight": s}))
        finally:
            bar.close()
        logger.info("%s: n=%d, K=%d, %d Newton iterations, %d kernel products, gap %.3e (tol %.1e, %s)",
                    type(self).__name__, n, K, res["n_iter"], res["n_matvec"], res["gap"], tol,
                    "full Gram" if res["full_gram"] else "row blocks")
        self.classes_ = classes_
        self.lam_ = lam
        self.tol_ = float(tol)
        self.X_fit_ = X
        self.n_samples_fit_ = n
        self.n_features_in_ = X.shape[1]
        self.mu_ = np.asarray(res["mu"])
        self.dual_point_ = np.asarray(res["p"])
        self.C_ = 1.0 / (lam * n) if self.C is None else float(self.C)
        self.duality_gap_ = float(res["gap"])
        self.certificate_slack_ = float(res["slack"])
        self.primal_objective_ = float(res["primal"])
        self.dual_objective_ = float(res["dual"])
        self.w_error_bound_ = math.sqrt(2.0 * self.duality_gap_ / lam)
        self.w_norm_ = float(res["f_norm"])
        self.n_iter_ = int(res["n_iter"])
        self.n_kernel_products_ = int(res["n_matvec"])
        self.converged_ = bool(res["converged"])
        self.stop_reason_ = str(res["stop_reason"])
        self.lipschitz_ = MULTINOMIAL_LIPSCHITZ * float(w.max())
        self.class_weight_ = {c: float(v) for c, v in zip(classes_.tolist(), w)}
        self.class_weight_public_ = True
        self.kernel_params_ = {"kernel": name, "gamma": gamma, "degree": degree, "coef0": coef0,
                               "intercept_scaling": b}
        self.intercept_ = b * b * self.mu_.sum(axis=0)
        self.train_decision_ = np.asarray(res["decision"])
        if not self.converged_:
            warnings.warn(f"{type(self).__name__}: stopped ({self.stop_reason_}) with certified duality gap "
                          f"{self.duality_gap_:.3e} > tol={tol:.3e} (float slack of the certificate "
                          f"{self.certificate_slack_:.2e}); w_error_bound_ reflects the actual gap. Increase "
                          "max_iter or tol.", ConvergenceWarning, stacklevel=2)
        record_feature_names(self, X_in)
        return self

    # -- prediction ----------------------------------------------------------------------------

    def _check_fitted(self):
        if not hasattr(self, "mu_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call fit(X, y) first.")

    def _scores(self, X: ArrayLike) -> np.ndarray:
        """``(m, K)`` scores ``f_k(z)`` (fused kernel engine, one pass per class, no m × n matrix)."""
        self._check_fitted()
        X_in = X
        X = check_rows(X, "X", n_features=self.n_features_in_, estimator=type(self).__name__)
        check_feature_names(self, X_in)
        X = np.ascontiguousarray(X, dtype=np.float64)
        kp = self.kernel_params_
        check_kernel_domain(X, "X", kp["kernel"], kp["gamma"], kp["degree"], kp["coef0"], B=self.X_fit_,
                            intercept_scaling=kp["intercept_scaling"], n_terms=self.X_fit_.shape[0])
        out = np.empty((X.shape[0], self.mu_.shape[1]))
        for k in range(self.mu_.shape[1]):
            out[:, k] = fused_predict(X, self.X_fit_, np.ascontiguousarray(self.mu_[:, k]), kp)
        return out

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of shape ``(m, K)`` (``f_k(z)``, columns as ``classes_``); for ``K = 2``, ``f_1 − f_0`` of
        shape ``(m,)`` (scikit-learn's binary convention: positive predicts ``classes_[1]``)."""
        f = self._scores(X)
        return f[:, 1] - f[:, 0] if f.shape[1] == 2 else f

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """The class with the largest score (ties: the first in ``classes_``)."""
        f = self._scores(X)
        return self.classes_[np.argmax(f, axis=1)]

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """``softmax(F(z))`` of shape ``(m, K)``, columns as ``classes_``."""
        return _softmax(self._scores(X))

    def predict_log_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """``log softmax(F(z))`` of shape ``(m, K)``."""
        f = self._scores(X)
        m = f.max(axis=1, keepdims=True)
        return f - m - np.log(np.exp(f - m).sum(axis=1, keepdims=True))

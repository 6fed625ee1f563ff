"""Non-private kernel ERM with a certified duality gap: :class:`KernelSVM`, :class:`KernelLogisticRegression`.

Both estimators solve (Jain–Thakurta 2013, eq. 2; SPEC "Conventions")

.. math::

    w^* = \\arg\\min_w \\; P(w) = \\frac{1}{n} \\sum_i \\ell(y_i \\langle w, \\phi(x_i) \\rangle)
          + \\frac{\\lambda}{2} \\|w\\|^2, \\qquad w^* = \\sum_i \\mu_i \\phi(x_i),

with labels mapped to ``y in {-1, +1}``, **no unregularised bias**, and the 1-Lipschitz hinge
(``max(0, 1 - u)``) or logistic (``log(1 + exp(-u))``) loss. With ``class_weight`` the loss of
a record of class ``k`` is multiplied by ``w_k`` (scikit-learn's semantics): ``(1/n) Σ_i w_{y_i}
ℓ(...)``, a ``(max_k w_k)``-Lipschitz loss (``lipschitz_``); the dual box becomes ``[0, w_{y_i}]``
and the certificate below is computed for the weighted problem. This is ``lam`` times the
classical ``0.5 ||w||^2 + C sum_i loss_i`` objective, so **scikit-learn's / LIBSVM's ``C`` equals
``1 / (lam * n)``** (note: LIBSVM's ``SVC`` and scikit-learn's ``SVC`` additionally fit an
unregularised bias, which this problem deliberately does not have).

Why a certificate
-----------------
Every kernel mechanism of dpcore (PINP, TDDL, TDIL) derives its sensitivity from the *exact*
minimiser, ``||w*_G - w*_G'|| <= 2 L R_phi / (lam n)``. A numerical solver only returns an
approximation ``w``, so the fit reports a certified bound on its distance to ``w*``:

* ``duality_gap_ = P(w) - D(a)`` for the returned dual point ``a`` (``mu = y * a / (lam n)``),
  recomputed at the end **from ``a`` alone** with the fused kernel engine (independent of the
  gradient the solver maintained), rounded up by a floating-point error bound;
* weak duality gives ``P(w) - P(w*) <= duality_gap_`` and ``lam``-strong convexity gives
  ``w_error_bound_ = sqrt(2 duality_gap_ / lam) >= ||w - w*||``.

A mechanism must add ``2 R_phi w_error_bound_`` to its sensitivity (SPEC: ``S_eff = S + 2 R_phi
err``). ``tol`` is an **absolute** target for the gap in the ``(1/n)``-scaled objective above
(default ``"auto"``: twice the public float floor of the certificate, see :func:`kernel_auto_tol`); for the hinge loss it is the average KKT violation, i.e. LIBSVM's ``eps`` is
roughly comparable to ``tol`` (LIBSVM's default ``1e-3`` is much looser than ours). The solver
stops on the exactly recomputed gap, never on a projected-gradient heuristic; if ``max_iter`` is
reached first, the honest (larger) gap is reported and a :class:`ConvergenceWarning` is issued.

Solvers (Rust core, ``src/kernel_learning/erm.rs``): greedy dual coordinate descent with second-order coordinate
selection and LIBSVM-style shrinking for the hinge loss; for the logistic loss a damped Newton method on the primal
(the mode of a Gaussian-process classifier, Rasmussen & Williams, GPML Algorithm 3.1) whose linear systems are
solved by conjugate gradients with a pivoted-Cholesky (Nyström) preconditioner, one kernel matrix-vector product per
CG step (``src/kernel_learning/klr_newton.rs``), started from the exact optimum of the Nyström (pivoted-Cholesky)
model (no kernel product); the dual point ``a = w_{y_i} sigma(-u_i)`` of every Newton iterate is checked. Hinge: kernel rows are computed on demand (sparse-aware: ``O(nnz(x_i) n)`` per row) and kept
in an LRU cache of ``cache_size`` MB (all rows when the Gram matrix fits); rows are cached in float32 (as LIBSVM)
and the gradient kept in float64. Logistic: the Gram matrix is held when it fits ``cache_size`` (float64, else
float32: then the checks are estimated in float32 and made exact only to stop; ``cache_size="auto"`` makes room
for the float32 Gram up to 2 GiB), otherwise every product is computed by the fused kernel engine without an
``n x n`` matrix. Every exact check and the final certificate recompute the decision values in float64 from the
dual point.
"""

from __future__ import annotations

import logging
import math
import numbers
import warnings
from typing import Any, Optional, overload

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from dpcore import _core
from dpcore._internal.tags import binary_classifier_tags
from dpcore._internal.dask import compute_all
from dpcore._internal.defaults import DEFAULT_INTERCEPT_SCALING
from dpcore._internal.fp import KERNEL_SUM_REL_ERROR, RADIUS_TOL, auto_tol, kernel_gap_floor
from dpcore._internal.labels import DEFAULT_CLASSES, decision_labels, encode_binary_labels, label_agreement
from dpcore._internal.class_weight import DEFAULT_MAX_CLASS_WEIGHT, resolve_class_weight
from dpcore._internal.validation import (
    check_array, check_feature_names, check_positive, check_rows, check_scale, check_tol, map_rows,
    record_feature_names,
)
from dpcore.kernels.evaluation import check_intercept_scaling, check_kernel_params, check_kernel_domain, fused_predict
from dpcore.exceptions import ConvergenceWarning, NotFittedError
from dpcore._internal.validation import refuse_fit_params
from dpcore._internal.types import ArrayLike, DaskArray, DaskArrayLike, NDArray, Self, ClassWeight, Labels
from dpcore._internal.progress import check_verbose, progress_bar

logger = logging.getLogger(__name__)

__all__ = ["KernelSVM", "KernelLogisticRegression", "ConvergenceWarning"]


#: ``cache_size`` of the hinge solver for ``cache_size="auto"`` (MB; LIBSVM's order of magnitude).
DEFAULT_CACHE_MB = 200.0
#: Cap (MB) of ``cache_size="auto"`` for the logistic loss: room for the float32 Gram matrix (``4 n**2`` bytes)
#: up to this size, at least :data:`DEFAULT_CACHE_MB` (where the float64 Gram fits, ``n <= 5120``, it is used).
#: A rule of the public ``n`` alone: the same fit on every machine as long as the memory is there (the Rust
#: core never allocates beyond ``memory_limit_bytes()``; it then falls back to the fused products).
AUTO_CACHE_MAX_MB = 2048.0


def _check_cache_size(value):
    """``cache_size``: ``"auto"`` or a finite positive number of MB (ValueError naming it otherwise)."""
    if isinstance(value, str):
        if value != "auto":
            raise ValueError(f'cache_size must be a positive number of MB or "auto", got {value!r}')
        return value
    return check_positive(value, "cache_size")


def _cache_bytes(cache_size, loss: str, n: int) -> int:
    """The kernel memory budget in bytes of a validated ``cache_size`` for ``loss`` and ``n`` training rows.

    ``"auto"``: hinge 200 MB (the LRU row cache); logistic ``max(200 MB, min(4 n**2 bytes, 2 GiB))``, the
    float32 Gram matrix when it is at most 2 GiB (``n <= 23170``): the Newton-CG products are then dense
    matrix-vector products, about 20 times cheaper than recomputing the kernel.
    """
    if isinstance(cache_size, str):
        if loss != "logistic":
            return int(DEFAULT_CACHE_MB * 2**20)
        return int(max(DEFAULT_CACHE_MB * 2**20, min(4 * n * n, AUTO_CACHE_MAX_MB * 2**20)))
    return int(cache_size * 2**20)


#: The regularisation when neither ``C`` nor ``lam`` is given (``C = 1/(1e-3·n)``).
DEFAULT_LAM = 1e-3


def resolve_lam(lam, C, n: int) -> float:
    """The ``λ`` of a kernel learner from its ``lam`` (the papers' λ) or ``C`` (scikit-learn's SVC ``C``).

    SVC minimises ``½||f||² + C Σ_i ℓ_i``, which is ``(C n)`` times ``(1/n) Σ_i ℓ_i + (λ/2)||f||²`` at
    ``λ = 1/(C n)`` (``n`` the public number of training rows). At most one of the two may be given (a
    ``ValueError`` naming both otherwise); neither: ``λ = DEFAULT_LAM``.

    >>> resolve_lam(None, 1.0, 1000), resolve_lam(0.01, None, 1000), resolve_lam(None, None, 5)
    (0.001, 0.01, 0.001)
    """
    if lam is not None and C is not None:
        raise ValueError(f"C and lam: give one of them, not both (C is scikit-learn's SVC C, lam = 1/(C n) the "
                         f"papers' lambda); got C={C!r}, lam={lam!r}")
    if C is None:
        return check_scale(DEFAULT_LAM if lam is None else lam, "lam")
    C = check_scale(C, "C")
    return check_scale(1.0 / (C * n), f"C (lam = 1/(C n) at n={n})")


def unit_ball_r_phi_sq(kernel: str, gamma: float, degree: int, coef0: float, intercept_scaling: float) -> float:
    """``R_φ'² = sup K(x, x) + b²`` over rows of norm ``≤ 1 + RADIUS_TOL`` (the package's declared row bound).

    ``poly`` with ``coef0 < 0`` (not PSD) uses the bound ``(γ + |coef0|)**degree`` of ``|K(x, x)|``.
    """
    r = 1.0 + RADIUS_TOL
    if kernel == "poly" and coef0 < 0.0:
        return (float(gamma) * r * r + abs(float(coef0))) ** int(degree) + float(intercept_scaling) ** 2
    return float(_core.feature_map_radius_sq(r, kernel, float(gamma), int(degree), float(coef0),
                                             float(intercept_scaling)))


#: Smallest ``tol="auto"`` of the hinge loss (KernelSVM): dual coordinate descent converges only linearly on
#: degenerate problems (e.g. a one-class training set at λ = 0.1: gap 1.7e-9 after 10⁷ updates), so the hinge's
#: "auto" is ``max(CERTIFY_MARGIN·floor, 1e-8)`` (the old PrivateGridSearch default); a public constant.
HINGE_AUTO_TOL_MIN = 1e-8


def kernel_auto_tol(lam: float, kernel: str, gamma: float, degree: int, coef0: float, intercept_scaling: float,
                    lipschitz: float = 1.0, loss: str = "logistic") -> float:
    """``tol="auto"`` of the kernel ERM solvers: ``CERTIFY_MARGIN·KERNEL_SUM_REL_ERROR·R_φ'²·L²/λ``.

    ``R_φ'²`` over the unit ball (:func:`unit_ball_r_phi_sq`, the package's declared row bound), ``L`` the largest
    class weight: the smallest tolerance the private releases (TDDL, TDIL, PINP, GPService, PrivateGridSearch)
    accept for ``data_norm ≤ 1`` (:func:`dpcore._internal.fp.kernel_gap_floor`,
    :func:`~dpcore._internal.fp.auto_tol`). Public quantities only (λ, the kernel parameters, ``b``, ``L``), never
    X or y: the same for neighbouring datasets. For the hinge loss at least :data:`HINGE_AUTO_TOL_MIN`.

    >>> kernel_auto_tol(1e-3, "rbf", 1.0, 3, 1.0, 0.5), kernel_auto_tol(1e-3, "rbf", 1.0, 3, 1.0, 0.5, loss="hinge")
    (2.5e-09, 1e-08)
    """
    t = auto_tol(kernel_gap_floor(lam, unit_ball_r_phi_sq(kernel, gamma, degree, coef0, intercept_scaling),
                                  lipschitz))
    return max(t, HINGE_AUTO_TOL_MIN) if loss == "hinge" else t


def _check_int(value, name: str, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


class KernelERM(ClassifierMixin, BaseEstimator):
    """Shared implementation of the kernel ERM estimators (scikit-learn conventions)."""

    def __sklearn_tags__(self):
        return binary_classifier_tags(super().__sklearn_tags__(), private=False)

    _loss: str = ""

    def __init__(
        self,
        *,
        lam: Optional[float] = None,
        C: Optional[float] = None,
        kernel: str = "rbf",
        gamma: float | str | None = 1.0,
        degree: int = 3,
        coef0: float = 1.0,
        tol: float | str = "auto",
        max_iter: Optional[int] = None,
        cache_size: float | str = "auto",
        shrinking: bool = True,
        classes: Labels = DEFAULT_CLASSES,
        class_weight: ClassWeight = None,
        max_class_weight: float = DEFAULT_MAX_CLASS_WEIGHT,
        verbose: bool | int = False,
        intercept_scaling: float = DEFAULT_INTERCEPT_SCALING,
    ) -> None:
        self.lam = lam
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.tol = tol
        self.max_iter = max_iter
        self.cache_size = cache_size
        self.shrinking = shrinking
        self.classes = classes
        self.class_weight = class_weight
        self.max_class_weight = max_class_weight
        self.verbose = verbose
        self.intercept_scaling = intercept_scaling

    # -- fitting -----------------------------------------------------------------------------

    def _validate_params(self, n_features: int, n_samples: int):
        lam = resolve_lam(self.lam, self.C, n_samples)
        tol = check_tol(self.tol, "tol")
        cache_size = _check_cache_size(self.cache_size)
        if self.max_iter is None:
            max_iter = None
        else:
            max_iter = _check_int(self.max_iter, "max_iter")
        if not isinstance(self.shrinking, (bool, np.bool_)):
            raise ValueError(f"shrinking must be a bool, got {self.shrinking!r}")
        name, gamma, degree, coef0 = check_kernel_params(
            self.kernel, self.gamma, self.degree, self.coef0, n_features
        )
        return lam, tol, cache_size, max_iter, name, gamma, degree, coef0

    def fit(self, X: ArrayLike, y: ArrayLike, **fit_params: Any) -> Self:
        """Fit the kernel ERM on ``(X, y)`` and certify the result.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training points (finite).
        y : array-like of shape (n_samples,)
            Labels, each one of the declared ``classes``; ``classes_[1]`` is mapped to ``+1``.
            Any subset of ``classes`` (including a single class) is accepted.

        **fit_params
            Refused with a ``TypeError`` naming them (``sample_weight`` is not supported: per-record
            weights change the sensitivity; see ``class_weight``).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            NaN/inf or empty ``X``, wrong shapes, a label of ``y`` outside ``classes``, ``lam``,
            ``tol`` or ``cache_size`` not finite and positive, invalid ``max_iter`` or kernel
            parameters, a ``class_weight`` key outside ``classes`` or a weight not finite, ``<= 0`` or
            above ``max_class_weight``. The message names the parameter.
        TypeError
            ``class_weight`` neither ``None``, ``"balanced"`` nor a dict, or a non-numeric weight.
        """
        refuse_fit_params(type(self).__name__, fit_params)
        prep = self._fit_prepare(X, y)
        tol, max_iter, cache_size, n = prep["tol"], prep["max_iter"], prep["cache_size"], prep["n"]
        hinge = self._loss == "hinge"
        bar = progress_bar(self.verbose, desc=type(self).__name__ + ("" if hinge else " kernel products"),
                           unit="upd" if hinge else "Kv", unit_scale=True)

        def progress(it, gap, exact, active):
            bar.update(it - bar.n)
            kind = "exact gap" if exact else "gap~"
            tail = f", active {active}" if hinge else ""
            bar.set_postfix_str(f"{kind} {gap:.2e} (tol {tol:.0e}){tail}", refresh=False)

        try:
            res = _core.erm_fit(
                prep["X"], prep["y_pm"], self._loss, prep["name"], prep["gamma"], prep["degree"], prep["coef0"],
                prep["b"], prep["lam"], tol, int(max_iter), _cache_bytes(cache_size, self._loss, n),
                bool(self.shrinking), progress if check_verbose(self.verbose) else None,
                **({} if prep["sample_weight"] is None else {"sample_weight": prep["sample_weight"]}),
            )
        finally:
            bar.close()
        return self._fit_finish(prep, res)

    def _fit_prepare(self, X: ArrayLike, y: ArrayLike, *, shared_X: Optional[np.ndarray] = None) -> dict:
        """Everything :meth:`fit` validates and resolves before the solve (drops the fitted attributes).

        ``shared_X``: the validated, read-only copy of the same ``X`` that another model of one path owns
        (:func:`fit_logistic_path`): kept instead of a copy of its own (one copy of the training rows per path)."""
        X_in = X
        X = check_array(X, "X")
        # The label set is declared (``classes``), never read off the data: a training set with
        # one class trains like any other (see dpcore._internal.labels).
        classes, y_pm = encode_binary_labels(y, self.classes, X.shape[0])
        lam, tol, cache_size, max_iter, name, gamma, degree, coef0 = self._validate_params(
            X.shape[1], X.shape[0]
        )
        b = check_intercept_scaling(self.intercept_scaling)  # the kernel is K + b² (regularised intercept)
        class_weight_, cw_public, sample_weight, w_max = resolve_class_weight(
            self.class_weight, classes, y_pm, max_class_weight=self.max_class_weight)
        n = X.shape[0]
        if tol == "auto":
            tol = kernel_auto_tol(lam, name, gamma, degree, coef0, b, w_max, loss=self._loss)
        check_kernel_domain(X, "X", name, gamma, degree, coef0, n_terms=n, intercept_scaling=b)
        if max_iter is None:
            max_iter = max(10_000_000, 100 * n)
        # the model owns its support (a path's models share one read-only copy)
        X = shared_X if shared_X is not None else np.array(X, dtype=np.float64, order="C", copy=True)
        # A refit that is interrupted (Ctrl-C) or fails must not leave the previous model looking
        # like the fit of this data: drop every fitted attribute before solving.
        self._reset_fitted()
        return dict(X_in=X_in, X=X, y_pm=y_pm, classes=classes, lam=lam, tol=tol, cache_size=cache_size,
                    max_iter=max_iter, name=name, gamma=gamma, degree=degree, coef0=coef0, b=b,
                    class_weight_=class_weight_, cw_public=cw_public, sample_weight=sample_weight, w_max=w_max, n=n)

    def _fit_finish(self, prep: dict, res: dict) -> Self:
        """Set the fitted attributes from the solver's result ``res`` (:meth:`fit`, :func:`fit_logistic_path`)."""
        X, X_in, classes, lam, tol, n = prep["X"], prep["X_in"], prep["classes"], prep["lam"], prep["tol"], prep["n"]
        name, gamma, degree, coef0, b = prep["name"], prep["gamma"], prep["degree"], prep["coef0"], prep["b"]
        max_iter, w_max = prep["max_iter"], prep["w_max"]
        class_weight_, cw_public = prep["class_weight_"], prep["cw_public"]
        for it, gap in res["history"]:
            logger.debug("%s: iteration %d, exact duality gap %.3e", type(self).__name__, it, gap)
        logger.info("%s: n=%d, %d iterations, duality gap %.3e (tol %.1e), primal %.6g, dual %.6g (%s)",
                    type(self).__name__, n, res["n_iter"], res["gap"], tol, res["primal"], res["dual"],
                    "full Gram" if res["full_gram"] else "row cache")
        self.classes_ = classes
        self.lam_ = lam
        self.tol_ = float(tol)
        self.X_fit_ = X
        self.n_samples_fit_ = n
        self.n_features_in_ = X.shape[1]
        self.mu_ = res["mu"]
        self.box_duals_ = res["a"]
        self.C_ = 1.0 / (lam * n) if self.C is None else float(self.C)
        self.support_ = np.flatnonzero(self.mu_)
        # the logistic loss (and a hinge solution with every point a support vector) keeps all rows: no copy of X
        self.support_vectors_ = X if self.support_.shape[0] == n else X[self.support_]
        self.dual_coef_ = self.mu_[self.support_][None, :]  # scikit-learn's y_i alpha_i over the support
        self.duality_gap_ = float(res["gap"])
        self.primal_objective_ = float(res["primal"])
        self.dual_objective_ = float(res["dual"])
        self.w_error_bound_ = math.sqrt(2.0 * self.duality_gap_ / lam)
        self.w_norm_ = float(res["w_norm"])
        self.n_iter_ = int(res["n_iter"])
        self.converged_ = bool(res["converged"])
        # the weighted loss w_{y} ℓ is (max_k w_k)·1-Lipschitz: every mechanism's sensitivity uses this constant
        self.lipschitz_ = float(w_max)
        self.class_weight_ = class_weight_
        self.class_weight_public_ = bool(cw_public)
        self.kernel_params_ = {"kernel": name, "gamma": gamma, "degree": degree, "coef0": coef0,
                               "intercept_scaling": b}
        self.intercept_ = b * b * float(np.sum(self.mu_))  # the bias b·w_b = b²·Σ μ_i (part of every f(x))
        self.train_decision_ = res["decision"]
        self._X_sv = np.ascontiguousarray(self.support_vectors_)
        self._mu_sv = np.ascontiguousarray(self.mu_[self.support_])
        self.stop_reason_ = str(res["stop_reason"])
        if not self.converged_:
            if self.stop_reason_ == "max_iter":
                why = f"max_iter={max_iter} reached"
                fix = "Increase max_iter."
            else:
                why = "floating-point precision limit reached"
                slack = self._certificate_slack(X, name, gamma, degree, coef0, b)
                pd = self.primal_objective_ - self.dual_objective_
                solved = "the problem is solved, " if pd <= slack else ""
                fix = (f"tol is below what can be certified in float64 for this problem: {solved}primal - dual = "
                       f"{pd:.1e}, and the certificate adds a float slack of {slack:.3e} "
                       f"(KERNEL_SUM_REL_ERROR * mean_i sqrt(K'_ii) * sum_j sqrt(K'_jj)|mu_j| with "
                       f"K' = K + intercept_scaling**2 = K + {b * b:g}: it grows with the intercept); "
                       f"use tol >= {2.0 * self.duality_gap_:.3g}.")
            warnings.warn(
                f"{type(self).__name__}: {why} with certified duality gap "
                f"{self.duality_gap_:.3e} > tol={tol:.3e}; w_error_bound_="
                f"{self.w_error_bound_:.3e} reflects the actual gap. {fix}",
                ConvergenceWarning,
                stacklevel=3,
            )
        record_feature_names(self, X_in)
        return self

    def _certificate_slack(self, X, name, gamma, degree, coef0, b) -> float:
        """The kernel-sum part of the float slack the Rust certificate adds to the gap (``src/kernel_learning/erm.rs``,
        ``fp_slack``): ``KERNEL_SUM_REL_ERROR·mean_i sqrt(K'_ii)·Σ_j sqrt(K'_jj)|μ_j|`` with ``K' = K + b²``."""
        sd = np.sqrt(np.abs(np.asarray(_core.kernel_diag(X, name, gamma, degree, coef0, b))))
        return float(KERNEL_SUM_REL_ERROR * sd.mean() * np.sum(sd * np.abs(self.mu_)))

    _FITTED = (
        "classes_", "X_fit_", "n_samples_fit_", "n_features_in_", "mu_", "box_duals_", "dual_coef_", "C_",
        "support_", "duality_gap_", "primal_objective_", "dual_objective_", "w_error_bound_",
        "w_norm_", "n_iter_", "converged_", "lipschitz_", "kernel_params_", "intercept_", "train_decision_",
        "_X_sv", "_mu_sv", "stop_reason_", "class_weight_", "class_weight_public_", "tol_", "lam_",
    )

    def _reset_fitted(self):
        for attr in self._FITTED:
            self.__dict__.pop(attr, None)

    # -- prediction --------------------------------------------------------------------------

    def _check_fitted(self):
        if not hasattr(self, "mu_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet; call fit(X, y) first."
            )

    @overload
    def decision_function(self, X: DaskArrayLike) -> DaskArray: ...
    @overload
    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]: ...
    def decision_function(self, X: ArrayLike | DaskArrayLike) -> NDArray[np.float64] | DaskArray:
        """``f(z) = <w, phi(z)> = sum_i mu_i K(z, x_i)`` (fused kernel engine, no m x n matrix).

        Positive values predict ``classes_[1]``. ``X`` may be a Dask array or DataFrame: the result is then a
        lazy Dask array with ``X``'s row chunks, every block evaluated by the Rust engine on a worker (the support
        vectors and their coefficients are sent to each worker once), bit-for-bit the in-memory values. ``X``'s
        shape and column names are checked at the call; its values (NaN/inf, the kernel's overflow domain) block
        by block when computed, with the same errors.
        """
        self._check_fitted()
        X_in = X
        X = check_rows(X, "X", n_features=self.n_features_in_, estimator=type(self).__name__)
        check_feature_names(self, X_in)
        return map_rows(_decision_values, X, self._X_sv, self._mu_sv, self.kernel_params_, X.shape[0], name="X")

    @overload
    def predict(self, X: DaskArrayLike) -> DaskArray: ...
    @overload
    def predict(self, X: ArrayLike) -> NDArray[Any]: ...
    def predict(self, X: ArrayLike | DaskArrayLike) -> NDArray[Any] | DaskArray:
        """Predicted class labels (``classes_[1]`` where the decision value is > 0); lazy on a Dask ``X``."""
        return map_rows(decision_labels, self.decision_function(X), self.classes_, name=None,
                        dtype=self.classes_.dtype)

    def score(self, X: ArrayLike | DaskArrayLike, y: ArrayLike | DaskArrayLike) -> float:
        """Mean accuracy on ``(X, y)``. With Dask inputs the predicted labels and ``y`` (one value per row) are
        computed into this process, in one pass, and compared here."""
        pred, y = compute_all(self.predict(X), y)
        return float(np.mean(label_agreement(pred, y, self.classes_)))


#: Parameters in which the models of one :func:`fit_logistic_path` call may differ.
PATH_PARAMS = ("lam", "C", "tol")


def fit_logistic_path(models: list, X: ArrayLike, y: ArrayLike) -> list:
    """Fit several :class:`KernelLogisticRegression` models that differ only in ``lam``/``C``/``tol`` on the same
    ``(X, y)`` in one Rust call (a regularisation path; :data:`PATH_PARAMS`), as :meth:`KernelERM.fit` fits each.

    The call shares what does not depend on λ: the Gram matrix (built once), the preconditioner's pivoted Cholesky
    factor (each λ uses the prefix its own fit would compute), the passes over the kernel matrix (all λ are solved in
    lock-step: each pass computes the product every unfinished model needs, each exactly as alone) and the exact
    checks (every model's certificate comes from one pass, one vector per model: over the held float64 Gram, else
    the symmetric kernel pass, each kernel tile evaluated once, with the fused engine's pass again for a model its
    larger float slack may have cost ``tol``; with a float32 Gram a model whose certificate misses its ``tol`` goes
    on from that candidate's exact check, as a fit that never defers). The Nyström warm starts are solved along the
    path, by increasing ``C``, each from the optimum (and the Hessian) of the one before (Rust ``klr_newton``,
    "Paths"; measured on Adult, n = 20,000, 10 models: 45 → 9 Hessian builds of the Nyström solves): the model of
    the smallest ``C`` is its own fit's bit for bit (:meth:`fit` is this call with one model), the others are other
    dual points certified to the same ``tol``. Every certificate is computed from its model's dual point alone, so ``duality_gap_ <= tol_``
    certifies each model exactly as :meth:`fit` does, and a private release calibrated from ``tol_`` covers it.

    Returns the list of fitted models. Raises ``ValueError`` if the models differ in anything but
    :data:`PATH_PARAMS` (or are not :class:`KernelLogisticRegression`), and whatever :meth:`fit` raises.
    """
    models = list(models)
    if not models or not all(type(m) is KernelLogisticRegression for m in models):
        raise ValueError("models must be a non-empty list of KernelLogisticRegression")
    # one read-only copy of the training rows for the whole path (each model would copy them: 10 candidates of
    # the selection at n = 20,000, d = 108 held 10 copies and spent ~0.3 s faulting in their pages)
    p0 = models[0]._fit_prepare(X, y)
    if len(models) > 1:
        p0["X"].setflags(write=False)
    preps = [p0] + [m._fit_prepare(X, y, shared_X=p0["X"]) for m in models[1:]]

    def key(m, p):
        sw = p["sample_weight"]
        return (p["name"], p["gamma"], p["degree"], p["coef0"], p["b"], p["max_iter"],
                _cache_bytes(p["cache_size"], "logistic", p["n"]), None if sw is None else sw.tobytes(),
                repr({k: v for k, v in m.get_params().items() if k not in PATH_PARAMS + ("verbose",)}))
    k0 = key(models[0], preps[0])
    if any(key(m, p) != k0 for m, p in zip(models[1:], preps[1:])):
        raise ValueError(f"models: every model of a path must share all parameters except {PATH_PARAMS}")
    p0 = preps[0]
    sw = p0["sample_weight"]
    results = _core.erm_fit_path(
        p0["X"], p0["y_pm"], p0["name"], p0["gamma"], p0["degree"], p0["coef0"], p0["b"],
        [float(p["lam"]) for p in preps], [float(p["tol"]) for p in preps], int(p0["max_iter"]),
        _cache_bytes(p0["cache_size"], "logistic", p0["n"]), None, **({} if sw is None else {"sample_weight": sw}))
    for m, p, r in zip(models, preps, results):
        m._fit_finish(p, r)
    return models


def _decision_values(X: np.ndarray, X_sv: np.ndarray, mu_sv: np.ndarray, kernel: dict, n_rows_total: int) -> np.ndarray:
    """:meth:`KernelERM.decision_function` on validated rows ``X`` (all of them, or one block of ``n_rows_total``)."""
    if mu_sv.shape[0] == 0:
        return np.zeros(X.shape[0])
    check_kernel_domain(X, "X", kernel["kernel"], kernel["gamma"], kernel["degree"], kernel["coef0"], B=X_sv,
                        intercept_scaling=kernel.get("intercept_scaling", 0.0),
                        n_terms=X_sv.shape[0])
    return fused_predict(X, X_sv, mu_sv, kernel, n_rows_total=n_rows_total)


def _probabilities(f: np.ndarray) -> np.ndarray:
    """``[1 - sigma(f), sigma(f)]`` per row."""
    p1 = 0.5 * (1.0 + np.tanh(0.5 * f))
    return np.column_stack([1.0 - p1, p1])


class KernelSVM(KernelERM):
    """Kernel SVM with a regularised bias: hinge loss, ``min (1/n) sum max(0, 1 - y_i f(x_i)) + lam/2 ||w'||^2``.

    ``f(x) = <w', phi'(x)>`` for the augmented feature map ``phi'(x) = (phi(x), b)`` with the public
    ``b = intercept_scaling`` (LIBLINEAR's regularised intercept, for kernels): the kernel is ``K(x, x') + b**2``,
    ``w' = sum_i mu_i phi'(x_i)`` and ``f(x) = sum_i mu_i K(x_i, x) + intercept_`` with
    ``intercept_ = b**2 sum_i mu_i``. The bias ``b w_b`` is regularised with ``w``, so the problem stays
    ``lam``-strongly convex, and ``||phi'(x)||**2 = K(x, x) + b**2 <= R_phi**2 + b**2``: every private release
    built on the model (TDDL, TDIL, PINP, GPService, PrivateGridSearch) uses ``R_phi'**2 = R_phi**2 + b**2`` in its
    sensitivity ``2 L R_phi' / (lam n)`` and its proof is unchanged (docs/privacy.md, "Intercept").

    Parameters
    ----------
    lam : float, optional
        Regularisation ``lambda > 0`` of the papers (the ``(1/n)``-scaled objective above). Give ``lam`` or ``C``,
        not both; neither means ``lam = 1e-3``. The value used is ``lam_``.
    C : float, optional
        scikit-learn's (SVC's) ``C``: the same problem as ``lam = 1 / (C * n)`` (``n`` training rows), as in
        PrivateSVM and PrivateGridSearch. Fitted value ``C_``.
    kernel : {"rbf", "poly", "linear"}, default="rbf"
        Kernel, as in :func:`dpcore.kernel_matrix` (``"polynomial"`` is an alias of ``"poly"``).
    gamma : float or "auto", default=1.0
        ``gamma > 0`` of ``"rbf"`` / ``"poly"``. The default ``1.0`` suits rows in the unit ball (the package's
        declared bound: squared distances in ``[0, 4]``); ``"auto"`` is ``1 / n_features`` (scikit-learn's old
        "auto", which shrinks the kernel's range as features are added); ``None`` means ``1.0``. Always
        data-independent: scikit-learn's ``"scale"`` (the data's variance) is refused.
    degree : int, default=3
        Degree of ``"poly"``.
    coef0 : float, default=1.0
        Constant of ``"poly"``.
    tol : float or "auto", default="auto"
        Target certified duality gap, absolute, in the ``(1/n)``-scaled objective. ``"auto"`` (recorded as
        ``tol_``): ``2·1e-12·R_phi'**2·L**2/lam`` (KernelLogisticRegression; KernelSVM: at least ``1e-8``, as dual
        coordinate descent is slow on degenerate problems) with ``R_phi'**2`` the kernel's bound on the unit ball plus
        ``intercept_scaling**2`` and ``L`` the largest class weight (:func:`dpcore._internal.fp.kernel_gap_floor`):
        the smallest tolerance the private releases accept for ``data_norm <= 1``, a function of public parameters
        only (2.5e-9 for rbf at ``lam=1e-3``, ``b = 0.5``). The certificate carries a float slack
        ``KERNEL_SUM_REL_ERROR·mean_i sqrt(K'_ii)·Σ_j sqrt(K'_jj)|mu_j| <= 1e-12·R_phi'**2·L/lam``
        (``K' = K + intercept_scaling**2``): a float ``tol`` below it stops with ``stop_reason_ = "precision"`` and
        a :class:`ConvergenceWarning` naming the ``tol`` that certifies, even when the problem is solved. The
        private releases (TDDL, TDIL, PINP, GPService) calibrate with ``tol_`` (a smaller tolerance, a smaller
        solver term ``2 R_phi' sqrt(2 tol_/lam)`` in the sensitivity) and refuse a ``tol_`` below twice the public
        floor ``1e-12·R_phi'**2·L**2/lam`` of their declared domain before anything is charged.
    max_iter : int, optional
        Maximum number of iterations; ``None`` means ``max(10**7, 100 n)`` (LIBSVM's rule). For the hinge loss an
        iteration is a coordinate update; for :class:`KernelLogisticRegression` it is one product with the kernel
        matrix (an exact gap check or a conjugate-gradient step; typically 10-100 in all).
    cache_size : float or "auto", default="auto"
        Kernel memory budget in MB. Hinge: an LRU cache of float32 rows of ``4 n`` bytes, computed on demand, only
        for coordinates that move, never evicted when the Gram matrix fits; ``"auto"`` is 200 MB. Logistic: the
        whole Gram matrix when it fits (``8 n**2`` bytes, else ``4 n**2`` in float32), otherwise none (fused
        products, each as costly as evaluating the whole kernel matrix); ``"auto"`` is
        ``max(200, min(4 n**2 bytes, 2048))`` MB: the float32 Gram up to ``n = 23170`` (1.6 GB at ``n = 20000``,
        about 10 times faster there than fused products).
        Never more than the memory available (``DPCORE_MAX_MEMORY_BYTES`` lowers it): the solver then takes the
        next path. The path changes the last bits of the solution, never its certificate.
    shrinking : bool, default=True
        Temporarily remove bounded variables that are predicted to stay bounded; the full problem
        is always re-checked exactly before stopping.
    classes : sequence of two labels or None, default=None
        ``None`` (default): the fixed default rule — a label equal to 1 or True is the
        positive class, 0, −1 or False the negative one (so y in {0, 1}, {−1, 1} or {False, True}
        trains unchanged); ``classes_`` then follows the dtype of ``y`` only: ``[False, True]``
        (bool), ``[0, 1]`` (unsigned), else ``[-1, 1]``, and ``score`` compares through the rule.
        Declare ``classes=(0, 1)`` to get 0/1 predictions from a signed 0/1 ``y``.
        The declared (public) label set. ``classes_ = sorted(classes)``; ``classes_[1]`` is +1.
        Labels outside it are refused; a training set containing only one of them trains normally.
        Never inferred from ``y``: that would make the private releases built on this model
        (PINP, TDDL, TDIL) refuse or relabel depending on a single record.
    class_weight : dict, "balanced" or None, default=None
        Weight ``w_k`` of the loss of the records of class ``k`` (scikit-learn's semantics; classes
        not in the dict get 1). A dict is **public** (declared by the user, or released by
        :func:`dpcore.private_class_weights`): each weight finite, ``> 0`` and ``<= max_class_weight``
        (refused otherwise, never clipped); the private mechanisms then use the Lipschitz constant
        ``max_k w_k``. ``"balanced"`` is scikit-learn's ``n / (2 n_k)`` computed from ``y`` (a class
        absent from ``y`` gets 1; not capped): fine for this non-private model, but its weights depend on
        every record, so every private mechanism (PINP, TDDL, TDIL, GPService, PrivateGridSearch) refuses
        such a model before charging anything.
    max_class_weight : float, default=10
        Public cap ``M >= 1`` on a declared weight (the sensitivity of a private release grows linearly
        with the largest weight, so it is bounded by a data-independent constant).
    verbose : bool or int, default=False
        Show tqdm progress bars (stderr) during long calls; ``False``/``0`` shows nothing. Progress and the
        :mod:`logging` messages are for the curator only and never part of a release.
        The bar counts coordinate updates (total ``max_iter``) and shows the current gap estimate; the exact
        duality gap at every full check is logged at DEBUG, the final gap at INFO.
    intercept_scaling : float, default=0.5
        Public ``b >= 0`` of the regularised intercept (kernel ``K + b**2``); ``0`` fits the model without bias
        (as before issue 23). Trade-off: without a bias ``f(x) = <w, phi(x)>`` has no offset (on imbalanced
        data a bias-free model can predict one class everywhere); with it, ``R_phi'**2 = R_phi**2 + b**2``
        grows, so the private noise of every release grows by ``sqrt(1 + b**2/R_phi**2)`` (×1.12 for rbf at
        ``b = 0.5``, ×sqrt(2) at ``b = 1``), and a smaller ``b`` regularises the bias more
        (``lam/2 · (bias/b)**2``). Measured (``experiments/intercept_scaling.py``: imbalanced Adult, 6 %
        positives, n = 4,000, rbf, C = auto, GPService ε = 1, 2 seeds): AUC 0.770 / 0.770 / 0.769 / 0.762 for
        ``b`` = 0 / 0.25 / 0.5 / 1; ``b = 0.5`` is the largest value that costs nothing measurable under noise.

    Notes
    -----
    The solve runs in Rust without the GIL and checks for signals about every 0.1 s: Ctrl-C
    (``KeyboardInterrupt``) stops it promptly. An interrupted or failed ``fit`` leaves the
    estimator unfitted (fitted attributes of an earlier fit are removed when the solve starts).

    Attributes
    ----------
    mu_ : ndarray of shape (n_samples,)
        Representer coefficients, ``w = sum_i mu_i phi(x_i)``; ``|mu_i| <= w_{y_i} / (lam n)``.
    X_fit_ : ndarray of shape (n_samples, n_features)
        All training rows (the support of ``w``; rows with ``mu_i = 0`` are kept).
    n_samples_fit_ : int
        Training-set size ``n`` (enters the sensitivity ``2 L R_phi / (lam n)``).
    classes_ : ndarray of shape (2,)
        The two labels; ``classes_[1]`` is ``+1``.
    box_duals_ : ndarray of shape (n_samples,)
        Dual variables ``a = alpha / C in [0, w_{y_i}]`` (``[0, 1]`` without class weights; what the
        certificate is computed from).
    dual_coef_ : ndarray of shape (1, n_support)
        scikit-learn's meaning: ``y_i alpha_i`` of the support vectors (``= mu_[support_]``, with
        ``alpha_i in [0, C_]``); ``decision_function(z) = dual_coef_ @ K(support_vectors_, z) + intercept_``.
    C_ : float
        ``1 / (lam_ n)`` (scikit-learn's ``C`` of the same problem; ``C`` itself when given).
    lam_ : float
        The ``lambda`` used (``lam``, ``1 / (C n)``, or the default ``1e-3``); the private releases read it.
    support_ : ndarray
        Indices with ``mu_i != 0``.
    support_vectors_ : ndarray of shape (n_support, n_features)
        ``X_fit_[support_]``.
    duality_gap_ : float
        Certified ``P(w) - D(a) >= P(w) - P(w*)``.
    primal_objective_, dual_objective_ : float
        ``P(w)`` and ``D(a)`` in the ``(1/n)``-scaled units.
    w_error_bound_ : float
        ``sqrt(2 duality_gap_ / lam) >= ||w - w*||``.
    w_norm_ : float
        ``||w|| = sqrt(mu^T K mu)``.
    n_iter_ : int
        Coordinate updates performed.
    converged_ : bool
        ``duality_gap_ <= tol_``.
    tol_ : float
        The tolerance used: ``tol``, or its public value for ``tol="auto"``. The private releases read it.
    stop_reason_ : str
        ``"converged"``, ``"max_iter"`` or ``"precision"`` (``tol`` below the floating-point
        floor of the certificate).
    lipschitz_ : float
        Lipschitz constant of the (weighted) loss: ``max_k w_k`` (``1`` without class weights).
    class_weight_ : dict
        The weight of each declared class actually used (all 1 without class weights).
    class_weight_public_ : bool
        Whether the weights are public (``None`` or a dict); ``False`` for ``"balanced"`` (read off the data:
        refused by every private mechanism).
    kernel_params_ : dict
        Resolved ``kernel``, ``gamma``, ``degree``, ``coef0`` and ``intercept_scaling``.
    intercept_ : float
        The bias ``b**2 sum_i mu_i`` included in every decision value (0 when ``intercept_scaling=0``).
    train_decision_ : ndarray of shape (n_samples,)
        ``<w, phi(x_i)>`` on the training points (recomputed for the certificate).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import KernelSVM
    >>> X = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, -1.0], [-1.0, 0.0]])
    >>> clf = KernelSVM(lam=0.1, kernel="linear", classes=["b", "a"]).fit(X, ["a", "a", "b", "b"])
    >>> clf.predict(X).tolist()
    ['a', 'a', 'b', 'b']
    >>> bool(clf.duality_gap_ <= clf.tol_)
    True

    scikit-learn's ``C`` (SVC's) or the papers' ``lam``: the same problem at ``lam = 1 / (C n)``:

    >>> by_C = KernelSVM(C=2.5, kernel="linear").fit(X, [1, 1, -1, -1])
    >>> by_C.lam_, by_C.C_
    (0.1, 2.5)

    Class weights (public, capped by ``max_class_weight``) raise the Lipschitz constant the private
    mechanisms use:

    >>> wclf = KernelSVM(lam=0.1, kernel="linear", class_weight={1: 4.0}).fit(X, [1, -1, -1, -1])
    >>> wclf.lipschitz_, wclf.class_weight_, wclf.class_weight_public_
    (4.0, {-1: 1.0, 1: 4.0}, True)

    The regularised intercept: on imbalanced data no function through the origin separates the classes; with
    ``intercept_scaling`` (``b``, kernel ``K + b**2``) the model learns the offset ``intercept_ = b**2 sum_i mu_i``,
    part of every decision value:

    >>> X = np.linspace(0.0, 0.9, 10)[:, None]
    >>> y = np.where(X[:, 0] > 0.75, 1, -1)                  # 2 positives out of 10, all at the right end
    >>> no_bias = KernelSVM(lam=1e-3, kernel="linear", intercept_scaling=0.0).fit(X, y)
    >>> no_bias.predict(X).tolist(), no_bias.intercept_ == 0.0
    ([-1, -1, -1, -1, -1, -1, -1, -1, -1, -1], True)
    >>> clf = KernelSVM(lam=1e-3, kernel="linear", intercept_scaling=1.0).fit(X, y)
    >>> clf.predict(X).tolist()
    [-1, -1, -1, -1, -1, -1, -1, -1, 1, 1]
    >>> round(clf.intercept_, 1), clf.kernel_params_["intercept_scaling"]
    (-5.1, 1.0)
    >>> w = X.T @ clf.mu_                                     # linear kernel: f(x) = <w, x> + intercept_
    >>> bool(np.allclose(clf.decision_function(X), X @ w + clf.intercept_))
    True
    """

    _loss = "hinge"


class KernelLogisticRegression(KernelERM):
    """Kernel logistic regression with a regularised bias: ``min (1/n) sum log(1 + exp(-y_i f(x_i))) + lam/2 ||w'||^2``.

    Same parameters and attributes as :class:`KernelSVM`, including the regularised bias of
    ``intercept_scaling`` (kernel ``K + b**2``, ``R_phi'**2 = R_phi**2 + b**2`` in every private release) (here
    ``0 < box_duals_ < w_{y_i}`` and every training point has ``mu_i != 0``; with class weights the dual is the
    weighted conjugate, see ``src/kernel_learning/erm.rs``). Solved by a preconditioned Newton-CG method (GPML
    Algorithm 3.1; ``n_iter_`` counts kernel matrix-vector products), with the same certified duality gap.

    Methods ``predict_proba`` returns ``sigma(f(z))`` for ``classes_[1]``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import KernelLogisticRegression
    >>> X = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, -1.0], [-1.0, 0.0]])
    >>> clf = KernelLogisticRegression(lam=0.1, kernel="linear").fit(X, [1, 1, -1, -1])
    >>> clf.predict(X).tolist()
    [1, 1, -1, -1]
    >>> proba = clf.predict_proba(X)
    >>> proba.shape, bool(np.allclose(proba.sum(axis=1), 1.0))
    ((4, 2), True)
    """

    _loss = "logistic"

    @overload
    def predict_proba(self, X: DaskArrayLike) -> DaskArray: ...
    @overload
    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]: ...
    def predict_proba(self, X: ArrayLike | DaskArrayLike) -> NDArray[np.float64] | DaskArray:
        """Class probabilities ``[1 - sigma(f), sigma(f)]`` of shape (m, 2), columns as ``classes_``; lazy on a
        Dask ``X``.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import KernelLogisticRegression
        >>> X = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, -1.0], [-1.0, 0.0]])
        >>> clf = KernelLogisticRegression(lam=0.1, kernel="linear").fit(X, [1, 1, -1, -1])
        >>> p = clf.predict_proba(X)
        >>> bool((p[:2, 1] > 0.5).all() and (p[2:, 1] < 0.5).all())
        True
        """
        return map_rows(_probabilities, self.decision_function(X), name=None, n_cols=2)

"""Prediction shared by dpcore's released linear models (GLM perturbation, SimplexERM, PrivateSVM).

Subclasses provide ``_decision_values`` (which calls :meth:`_check_fitted`) and set ``coef_`` in
``fit``; classifiers also set ``classes_`` (two labels, ``classes_[1]`` for positive decision values).
Everything here post-processes the private release only. As in scikit-learn, ``decision_function``
exists only on classifiers and ``predict_proba`` / ``predict_log_proba`` only on classifiers fitted
with the logistic loss (whose model is ``P(y = classes_[1] | x) = σ(<coef_, x> + intercept_)``); which
of them exist depends on the public parameters only.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import expit, log_expit
from sklearn.utils.metaestimators import available_if

from dpcore._internal.dask import is_dask_collection, map_row_blocks, require_dask
from dpcore._internal.labels import label_agreement
from dpcore._internal.validation import as_dask_target, check_feature_names, check_rows
from dpcore.exceptions import NotFittedError
from dpcore._internal.types import ArrayLike, DaskArrayLike

#: scikit-learn's warning when a model fitted on named columns gets a plain array: Dask blocks are plain arrays
#: whose columns were checked on the client (:meth:`LinearPredictorMixin._map_dask`).
_UNNAMED_BLOCK_WARNING = "X does not have valid feature names"


def _call_on_block(block: np.ndarray, estimator, method: str) -> np.ndarray:
    """``estimator.method(block)``: the in-memory method on one Dask block (runs on a worker)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_UNNAMED_BLOCK_WARNING)
        return getattr(estimator, method)(block)


def _is_classifier(estimator) -> bool:
    return estimator.__sklearn_tags__().estimator_type == "classifier"


def _has_proba(estimator) -> bool:
    return _is_classifier(estimator) and getattr(estimator, "loss", None) == "logistic"


class LinearPredictorMixin:
    """``predict`` / ``score`` on top of ``decision_function``."""

    def _check_fitted(self):
        if not hasattr(self, "coef_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call fit(X, y) first.")

    def _linear_decision(self, X, intercept: float = 0.0) -> np.ndarray:
        """``X @ coef_ + intercept`` for validated ``X`` (dense or sparse); refuses rows whose
        decision value overflows float64 (finite but huge entries) instead of answering ±inf."""
        with np.errstate(over="ignore", invalid="ignore"):
            f = np.asarray(X @ self.coef_, dtype=np.float64).ravel() + intercept
        if not np.isfinite(f).all():
            raise ValueError("X has values too large: the decision value <coef_, x> overflows float64; "
                             "rescale X to the declared data domain")
        return f

    def _decision_values(self, X) -> np.ndarray:
        raise NotImplementedError

    def _map_dask(self, X, method: str, *, n_cols=None, dtype=np.float64):
        """``method`` over the row blocks of the Dask array/DataFrame ``X``, lazily (a Dask array).

        The fitted model is sent to every worker once; each block runs the in-memory method on its rows (the
        same checks and messages). Post-processing of the release: no privacy cost.
        """
        self._check_fitted()
        check_feature_names(self, X)
        X = check_rows(X, "X", n_features=self.n_features_in_, estimator=type(self).__name__)
        return map_row_blocks(_call_on_block, X, self, method, n_cols=n_cols, dtype=dtype)

    @available_if(_is_classifier)
    def decision_function(self, X: ArrayLike | DaskArrayLike) -> np.ndarray:
        """Decision values ``<coef_, x> + intercept_`` (classifiers; ``> 0`` predicts ``classes_[1]``).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
            A lazy Dask array when ``X`` is a Dask array or DataFrame (the same for every method here).
        """
        if is_dask_collection(X):
            K = np.shape(getattr(self, "coef_", np.zeros(0)))
            return self._map_dask(X, "decision_function", n_cols=K[0] if len(K) == 2 else None)
        return self._decision_values(X)

    @available_if(_has_proba)
    def predict_proba(self, X: ArrayLike | DaskArrayLike) -> np.ndarray:
        """Class probabilities of the logistic model, ``σ(decision)`` for ``classes_[1]``.

        Post-processing of the private release (no further privacy cost).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, 2)
            Columns in the order of ``classes_``.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import ObjectivePerturbation
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(2000, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> y = np.where(X[:, 0] > 0, 1, -1)
        >>> clf = ObjectivePerturbation(1.0, 1e-6, data_norm=1.0, random_state=0).fit(X, y)
        >>> proba = clf.predict_proba(X[:4])
        >>> proba.shape, bool(np.allclose(proba.sum(axis=1), 1.0))
        ((4, 2), True)
        """
        if is_dask_collection(X):
            return self._map_dask(X, "predict_proba", n_cols=len(self.classes_))
        f = self._decision_values(X)
        if f.ndim == 2:  # K classes (multinomial): softmax of the released scores
            z = np.exp(f - f.max(axis=1, keepdims=True))
            return z / z.sum(axis=1, keepdims=True)
        return np.column_stack([expit(-f), expit(f)])

    @available_if(_has_proba)
    def predict_log_proba(self, X: ArrayLike | DaskArrayLike) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`, computed stably (``log σ(±f)``).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, 2)
        """
        if is_dask_collection(X):
            return self._map_dask(X, "predict_log_proba", n_cols=len(self.classes_))
        f = self._decision_values(X)
        if f.ndim == 2:  # K classes: log-softmax
            m = f.max(axis=1, keepdims=True)
            return f - m - np.log(np.exp(f - m).sum(axis=1, keepdims=True))
        return np.column_stack([log_expit(-f), log_expit(f)])

    def predict(self, X: ArrayLike | DaskArrayLike) -> np.ndarray:
        """Classification: ``classes_[1]`` where the decision value is > 0, else ``classes_[0]``.
        Regression (no ``classes_``): the decision values. A lazy Dask array for Dask ``X``."""
        if is_dask_collection(X):
            return self._map_dask(X, "predict", dtype=getattr(self, "classes_", np.zeros(0)).dtype)
        f = self._decision_values(X)
        if not hasattr(self, "classes_"):
            return f
        if f.ndim == 2:  # K classes: the largest released score
            return self.classes_[np.argmax(f, axis=1)]
        return self.classes_[(f > 0).astype(np.intp)]

    def score(self, X: ArrayLike | DaskArrayLike, y: ArrayLike | DaskArrayLike) -> float:
        """Mean accuracy (classification) or the coefficient of determination R² (regression).

        With Dask ``X`` (and ``y`` a Dask array or Series, or in memory) the sums are reduced by Dask;
        the predictions are not gathered."""
        pred = self.predict(X)
        if is_dask_collection(pred):
            da = require_dask()
            y = as_dask_target(y, pred.chunks[0])
            if hasattr(self, "classes_"):
                agree = da.map_blocks(label_agreement, pred, y, self.classes_, dtype=bool)
                return float(da.mean(agree).compute())
            y = y.astype(np.float64)
            ss_res, ss_tot = (float(v) for v in da.compute(((y - pred) ** 2).sum(), ((y - y.mean()) ** 2).sum()))
        else:
            y = np.asarray(y)
            if hasattr(self, "classes_"):
                return float(np.mean(label_agreement(pred, y, self.classes_)))
            y = y.astype(np.float64)
            ss_res = float(np.sum((y - pred) ** 2))
            ss_tot = float(np.sum((y - y.mean()) ** 2))
        return 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res == 0 else 0.0)

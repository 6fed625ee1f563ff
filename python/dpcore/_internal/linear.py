"""Prediction shared by dpcore's released linear models (GLM perturbation, SimplexERM, PrivateSVM).

Subclasses provide ``decision_function`` (which calls :meth:`_check_fitted`) and set ``coef_`` in
``fit``; classifiers also set ``classes_`` (two labels, ``classes_[1]`` for positive decision values).
Everything here post-processes the private release only.
"""

from __future__ import annotations

import numpy as np

from dpcore.kernel_learning.svm import NotFittedError


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

    def predict(self, X) -> np.ndarray:
        """Classification: ``classes_[1]`` where the decision value is > 0, else ``classes_[0]``.
        Regression (no ``classes_``): the decision values."""
        f = self.decision_function(X)
        if not hasattr(self, "classes_"):
            return f
        return self.classes_[(f > 0).astype(np.intp)]

    def score(self, X, y) -> float:
        """Mean accuracy (classification) or the coefficient of determination R² (regression)."""
        y = np.asarray(y)
        pred = self.predict(X)
        if hasattr(self, "classes_"):
            return float(np.mean(pred == y))
        y = y.astype(np.float64)
        ss_res = float(np.sum((y - pred) ** 2))
        ss_tot = float(np.sum((y - y.mean()) ** 2))
        return 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res == 0 else 0.0)

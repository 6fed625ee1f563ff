"""Stateless, public pre-processing: row-norm clipping to a declared radius and one-hot encoding of declared categories.

Both map each row on its own, with public parameters only: a transformed record depends on that
record alone, so they cost no privacy (``dp_event_`` is ``NoOpDpEvent``) and compose freely with the
private steps of a pipeline.
"""

from __future__ import annotations

import numbers
from typing import Any, List, Optional, Sequence

import numpy as np
from dp_accounting import dp_event as _dpe
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from dpcore._internal.fp import BALL_SHRINK
from dpcore._internal.validation import check_positive
from dpcore.preprocessing._common import check_data

__all__ = ["RowNormClipper", "OneHotEncoder"]


class RowNormClipper(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    r"""Scale each row by ``scale`` and clip it to the L2 ball of the declared ``radius``.

    The last step before a dpcore model: its ``radius`` is the model's ``data_norm``. Rows with
    ``‖scale·x‖₂ ≤ radius`` are unchanged (apart from ``scale``); longer rows are shrunk onto the
    ball (by the factor ``radius·(1 − 2^-40)/‖scale·x‖``, so rounding never leaves the ball). Each
    row is mapped on its own with public parameters: no privacy cost (``dp_event_`` is a no-op), and
    ``fit`` learns nothing but the number of features.

    Parameters
    ----------
    radius : float, default=1.0
        Declared public radius R > 0 (use it as the model's ``data_norm``).
    scale : float, default=1.0
        Public factor applied before clipping (e.g. ``1/sqrt(d)`` after standardising ``d`` features).

    Attributes
    ----------
    dp_event_ : dp_accounting.NoOpDpEvent
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore.preprocessing import RowNormClipper
    >>> Z = RowNormClipper(radius=1.0).fit_transform(np.array([[3.0, 4.0], [0.3, 0.4]]))
    >>> np.linalg.norm(Z, axis=1).round(6), Z[1]
    (array([1. , 0.5]), array([0.3, 0.4]))
    """

    _parameter_constraints: dict = {"radius": ["no_validation"], "scale": ["no_validation"]}

    def __init__(self, radius: float = 1.0, *, scale: float = 1.0) -> None:
        self.radius = radius
        self.scale = scale

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        return tags

    def fit(self, X: Any, y: Any = None) -> "RowNormClipper":
        """Validate the parameters and record ``n_features_in_`` (nothing is learnt).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        check_positive(self.radius, "radius")
        check_positive(self.scale, "scale")
        check_data(self, X, reset=True)
        self.dp_event_ = _dpe.NoOpDpEvent()
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Scale and clip every row (no privacy cost).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            Every row has L2 norm ``≤ radius``.
        """
        radius = check_positive(self.radius, "radius")
        scale = check_positive(self.scale, "scale")
        X = check_data(self, X, reset=not hasattr(self, "n_features_in_"))
        # ‖scale·x‖ = scale·m·‖x/m‖ with m = max|x_j|: no overflow for any finite row
        m = np.abs(X).max(axis=1)
        safe = np.where(m > 0, m, 1.0)
        unit = X / safe[:, None]
        unit_norms = np.linalg.norm(unit, axis=1)
        with np.errstate(over="ignore"):  # an infinite product is correctly "long"
            long_rows = scale * m * unit_norms > radius
        out = np.empty_like(X)
        out[~long_rows] = X[~long_rows] * scale  # norm ≤ radius: finite
        out[long_rows] = unit[long_rows] * (radius * BALL_SHRINK / unit_norms[long_rows])[:, None]
        return out


def _key(value: Any) -> Any:
    """Lookup key of a raw value: strings are stripped (CSV fields), numbers compared as numbers."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (numbers.Number, np.generic)):
        v = value.item() if isinstance(value, np.generic) else value
        return v
    return value


class OneHotEncoder(TransformerMixin, BaseEstimator):
    r"""One-hot encoding of **declared** categories (never read off the data): no privacy cost.

    Column ``j`` of ``X`` is encoded against ``categories[j]``; a value outside the declared list
    is encoded as an all-zero block (``handle_unknown="ignore"``), in an extra ``"other"`` column of
    its block (``handle_unknown="other"``), or refused (``"error"``, a ValueError naming the column
    and the row — an input error, as for any record outside its declared domain). Strings are
    compared after stripping white space (raw CSV fields). Each row is encoded on its own with public
    parameters, so the encoding of a record does not depend on the others (``dp_event_`` is a no-op).

    Parameters
    ----------
    categories : sequence of sequences
        One list of categories per input column (public, e.g. from the data set's documentation).
    handle_unknown : {"ignore", "other", "error"}, default="ignore"
        What an undeclared value becomes (see above).

    Attributes
    ----------
    categories_ : list of ndarray
        The declared categories, as arrays.
    dp_event_ : dp_accounting.NoOpDpEvent
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore.preprocessing import OneHotEncoder
    >>> enc = OneHotEncoder(categories=[["Female", "Male"], ["a", "b", "c"]], handle_unknown="other")
    >>> enc.fit_transform(np.array([["Male", "c"], [" Female", "?"]], dtype=object))
    array([[0., 1., 0., 0., 0., 1., 0.],
           [1., 0., 0., 0., 0., 0., 1.]])
    >>> list(enc.get_feature_names_out(["sex", "x"]))
    ['sex_Female', 'sex_Male', 'sex_other', 'x_a', 'x_b', 'x_c', 'x_other']
    """

    _parameter_constraints: dict = {"categories": ["no_validation"], "handle_unknown": ["no_validation"]}

    def __init__(self, categories: Optional[Sequence[Sequence[Any]]] = None, *, handle_unknown: str = "ignore") -> None:
        self.categories = categories
        self.handle_unknown = handle_unknown

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        return tags

    def _check_params(self, d: Optional[int]) -> List[List[Any]]:
        if self.handle_unknown not in ("ignore", "other", "error"):
            raise ValueError(f"handle_unknown must be 'ignore', 'other' or 'error', got {self.handle_unknown!r}")
        cats = self.categories
        if cats is None or isinstance(cats, str):
            raise ValueError("categories must be given: one declared list per column (they are public and are never "
                             "read off the data)")
        try:
            cats = [list(c) for c in cats]
        except TypeError:
            raise TypeError(f"categories must be a sequence of sequences, got {self.categories!r}") from None
        for j, c in enumerate(cats):
            if isinstance(self.categories[j], str):
                raise TypeError(f"categories[{j}] must be a sequence of categories, got the string {c!r}")
            if not c:
                raise ValueError(f"categories[{j}] is empty")
            keys = [_key(v) for v in c]
            if len(set(keys)) != len(keys):
                raise ValueError(f"categories[{j}] has duplicate entries: {c!r}")
        if d is not None and len(cats) != d:
            raise ValueError(f"categories has {len(cats)} lists but X has {d} columns")
        return cats

    @staticmethod
    def _as_2d(X: Any) -> np.ndarray:
        if hasattr(X, "to_numpy"):
            X = X.to_numpy(dtype=object)
        arr = np.asarray(X, dtype=object)
        if arr.ndim != 2:
            raise ValueError(f"X must be a 2-D array, got shape {arr.shape}")
        if arr.shape[0] == 0:
            raise ValueError("X must not be empty: 0 sample(s)")
        return arr

    def fit(self, X: Any, y: Any = None) -> "OneHotEncoder":
        """Validate the declared categories against the number of columns (nothing is learnt).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_columns)
        y : ignored

        Returns
        -------
        self
        """
        self._check_params(None)
        arr = self._as_2d(X)
        cats = self._check_params(arr.shape[1])
        self.categories_ = [np.array(c, dtype=object) for c in cats]
        self._index = [{_key(v): i for i, v in enumerate(c)} for c in cats]
        self.n_features_in_ = arr.shape[1]
        if hasattr(X, "columns"):
            self.feature_names_in_ = np.asarray([str(c) for c in X.columns], dtype=object)
        self.dp_event_ = _dpe.NoOpDpEvent()
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Encode every row (no privacy cost).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_columns)

        Returns
        -------
        ndarray of shape (n_samples, n_output_features), float64
        """
        check_is_fitted(self, "categories_")
        arr = self._as_2d(X)
        if arr.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {arr.shape[1]} columns, but OneHotEncoder is expecting {self.n_features_in_} "
                             "columns as input")
        other = self.handle_unknown == "other"
        blocks = []
        for j, index in enumerate(self._index):
            width = len(index) + (1 if other else 0)
            block = np.zeros((arr.shape[0], width))
            for i, v in enumerate(arr[:, j]):
                try:
                    k = index.get(_key(v))
                except TypeError:  # unhashable value: never a declared category
                    k = None
                if k is None:
                    if self.handle_unknown == "error":
                        raise ValueError(f"X: column {j} has value {v!r} at row {i}, which is not among the declared "
                                         f"categories[{j}] (handle_unknown='error')")
                    if other:
                        block[i, -1] = 1.0
                    continue
                block[i, k] = 1.0
            blocks.append(block)
        return np.hstack(blocks)

    def get_feature_names_out(self, input_features: Optional[Sequence[str]] = None) -> np.ndarray:
        """Output names ``<column>_<category>`` (and ``<column>_other``).

        Parameters
        ----------
        input_features : sequence of str, optional
            Input column names (default: ``feature_names_in_`` or ``x0, x1, ...``).

        Returns
        -------
        ndarray of str
        """
        check_is_fitted(self, "categories_")
        if input_features is None:
            input_features = getattr(self, "feature_names_in_", [f"x{j}" for j in range(self.n_features_in_)])
        names = []
        for name, cats in zip(input_features, self.categories_):
            names.extend(f"{name}_{c}" for c in cats)
            if self.handle_unknown == "other":
                names.append(f"{name}_other")
        return np.asarray(names, dtype=object)

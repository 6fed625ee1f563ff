r"""Random Fourier features (Rahimi & Recht 2007) with a Rust transform.

:class:`RandomFourierFeatures` is a scikit-learn transformer for the translation-invariant kernels
used by :class:`dpcore.PrivateSVM` (Rubinstein et al. 2009, SPEC "PrivateSVM"):

===============  ===========================  =====================================
``kernel``       ``k(x, z)``                  Fourier measure of ``ρ`` (one column)
===============  ===========================  =====================================
``"rbf"``        ``exp(−γ ||x − z||²)``        ``N(0, 2γ I)``
``"laplacian"``  ``exp(−γ ||x − z||₁)``        i.i.d. Cauchy(0, γ) coordinates
===============  ===========================  =====================================

``n_components = k`` is the number of output columns, as in scikit-learn's ``RBFSampler``. With
``D = ⌈k/2⌉`` draws ``ρ_1..ρ_D`` the map is (SPEC form, ``2D`` columns, the last ``sin`` dropped
when ``k`` is odd)

    φ̂(x) = D^{-1/2} [cos ρ_1ᵀx, …, cos ρ_Dᵀx, sin ρ_1ᵀx, …, sin ρ_Dᵀx],

so for even ``k``, ``φ̂(x)·φ̂(z) = (1/D) Σ_j cos ρ_jᵀ(x − z)`` is an unbiased estimate of ``k(x, z)``
with every term in ``[−1, 1]`` (Hoeffding: ``P[|φ̂(x)·φ̂(z) − k(x, z)| > t] ≤ 2 exp(−D t²/2)``), and
``||φ̂(x)|| = 1`` exactly in exact arithmetic (``κ = 1``; computed norms are within ~1e-15). For odd
``k`` the dropped column makes ``||φ̂(x)||² = 1 − sin²(ρ_Dᵀx)/D ≤ 1`` (``κ = 1`` still bounds it) and
biases the kernel estimate by at most ``1/D``: prefer an even ``n_components``.

The weights ``random_weights_`` (``n_features × ⌈n_components/2⌉``) are **public**: they are drawn in
:meth:`fit` from dpcore's ChaCha20 generator independently of the data (``fit`` only reads the
number of features), and are published with any model built on the features. ``random_state=None``
(default) keys the generator from the OS; an int gives reproducible weights.

The transform runs in Rust (``dpcore._core.rff_transform``): zero-copy on float64 input, rayon over
fixed tiles of 128 rows with one GEMM per tile followed by ``sin_cos``; bit-for-bit identical for
any thread count, and each output row depends only on its input row. :meth:`RandomFourierFeatures.transform` also
maps a Dask array or DataFrame, block of rows by block of rows (lazily; bit-for-bit the in-memory features).
"""

from __future__ import annotations

import numbers
from typing import overload, Literal

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin

from dpcore import _core
from dpcore._internal.validation import (
    check_array, check_feature_names, check_rows, map_rows, record_feature_names,
)
from dpcore.exceptions import NotFittedError
from dpcore.mechanisms.noise import check_random_state
from dpcore._internal.types import ArrayLike, DaskArray, DaskArrayLike, NDArray, Self, RandomState

__all__ = ["RandomFourierFeatures", "RFF_KERNELS"]

#: Kernels with a random Fourier feature map.
RFF_KERNELS = ("rbf", "laplacian")


def check_n_components(value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise ValueError(f"n_components must be a positive integer, got {value!r}")
    return int(value)


def _check_kernel(value) -> str:
    if not isinstance(value, str) or value not in RFF_KERNELS:
        raise ValueError(f"kernel must be one of {RFF_KERNELS}, got {value!r}")
    return value


def check_gamma(value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
        np.isfinite(float(value)) and float(value) > 0.0
    ):
        raise ValueError(f"gamma must be a finite number > 0, got {value!r}")
    return float(value)


def rff_features(X: np.ndarray, weights: np.ndarray, n_components: int) -> np.ndarray:
    """``φ̂(X)`` for validated rows ``X`` (Rust; every output row depends only on its input row, so a block of rows
    gives exactly its rows of the whole): the first ``n_components`` of ``[cos XW, sin XW] / sqrt(D)``."""
    if X.dtype != np.float64:
        X = X.astype(np.float64)
    out = _core.rff_transform(X, weights)
    if out.shape[1] != n_components:  # odd n_components: drop the last sin column
        out = np.ascontiguousarray(out[:, :n_components])
    if not np.isfinite(out).all():
        raise ValueError(f"X has values too large for the random projection X·W (it overflows a float; "
                         f"max |X| = {float(np.abs(X).max()):.3g}); scale X to the data domain")
    return out


class RandomFourierFeatures(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Random Fourier feature map ``φ̂`` (see :mod:`dpcore.kernels.random_features`), scikit-learn transformer API.

    Parameters
    ----------
    n_components : int, default 100
        Number of output columns ``k`` (``⌈k/2⌉`` random frequencies, a cos and a sin column each;
        even values give the unbiased estimator).
    kernel : {"rbf", "laplacian"}, default "rbf"
        ``exp(−γ||x − z||²)`` or ``exp(−γ||x − z||₁)``.
    gamma : float, default 1.0
        Bandwidth γ > 0.
    random_state : None, int or ChaChaRng
        ``None`` (default): OS-seeded ChaCha20; an int: reproducible weights.
        The weights are public and data-independent (not privacy noise), so ``clone`` copies an int as it is
        (every clone draws the same weights, as scikit-learn's ``RBFSampler``); the private estimators derive a
        per-clone seed instead (docs/sklearn.md).

    Attributes
    ----------
    random_weights_ : ndarray of shape (n_features, ceil(n_components / 2))
        The public frequencies ``ρ_j`` (columns).
    n_features_in_ : int
    n_output_features_ : int
        ``n_components``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore.kernels.random_features import RandomFourierFeatures
    >>> X = np.random.default_rng(0).normal(size=(4, 3))
    >>> F = RandomFourierFeatures(n_components=50, random_state=0).fit_transform(X)
    >>> F.shape, bool(np.allclose(np.linalg.norm(F, axis=1), 1.0))
    ((4, 50), True)
    """

    def __init__(self, *, n_components: int = 100, kernel: Literal["rbf", "laplacian"] = "rbf", gamma: float = 1.0,
                 random_state: RandomState = None) -> None:
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.random_state = random_state

    def _validate_params(self):
        return check_n_components(self.n_components), _check_kernel(self.kernel), check_gamma(self.gamma)

    def fit(self, X: ArrayLike | DaskArrayLike, y: object = None) -> Self:
        """Draw the public weights; only ``X.shape[1]`` is read (never the values' content beyond
        validation: NaN/inf entries are refused). A Dask ``X`` is not loaded: only its shape (and a
        DataFrame's column names) is read; its values are checked by :meth:`transform`.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import RandomFourierFeatures
        >>> X = np.random.default_rng(0).normal(size=(5, 3))
        >>> rff = RandomFourierFeatures(n_components=10, gamma=1.0, random_state=0).fit(X)
        >>> rff.random_weights_.shape                      # (n_features, ceil(n_components / 2))
        (3, 5)
        """
        D, kernel, gamma = self._validate_params()
        Xc = check_rows(X, "X")
        record_feature_names(self, X)  # feature_names_in_ for DataFrames
        X = Xc
        rng = check_random_state(self.random_state)
        d = int(X.shape[1])
        self.random_weights_ = np.asarray(_core.rff_sample_weights(d, (D + 1) // 2, kernel, gamma, rng))
        self.n_features_in_ = d
        self.n_output_features_ = D
        return self

    def _check_fitted(self):
        if not hasattr(self, "random_weights_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet; call fit(X) first."
            )

    @overload
    def transform(self, X: DaskArrayLike) -> DaskArray: ...
    @overload
    def transform(self, X: ArrayLike) -> NDArray[np.float64]: ...
    def transform(self, X: ArrayLike | DaskArrayLike) -> NDArray[np.float64] | DaskArray:
        """``φ̂(X)`` of shape ``(n_samples, n_components)`` (Rust, parallel, zero-copy on float64).

        ``X`` may be a Dask array or DataFrame: the result is then a lazy Dask array with ``X``'s row chunks and one
        column chunk, each block of rows transformed by the Rust engine on a worker (the public weights are sent to
        each worker once), bit-for-bit the in-memory features of those rows. The number of features (and a
        DataFrame's column names) are checked at the call, the values (NaN/inf) block by block when computed.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import RandomFourierFeatures
        >>> X = np.random.default_rng(0).normal(size=(5, 3))
        >>> rff = RandomFourierFeatures(n_components=10, gamma=1.0, random_state=0).fit(X)
        >>> rff.transform(X).shape
        (5, 10)
        """
        self._check_fitted()
        X_in = X
        X = check_rows(X, "X")
        check_feature_names(self, X_in)  # the fitted feature names, if any
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} was fitted with "
                f"n_features_in_ = {self.n_features_in_}"
            )
        return map_rows(rff_features, X, self.random_weights_, self.n_output_features_, name="X",
                        n_cols=self.n_output_features_)

    @property
    def _n_features_out(self) -> int:
        """Output width for ``get_feature_names_out`` (``randomfourierfeatures0``, ...)."""
        return self.n_output_features_

    def kernel_value(self, X: ArrayLike, Z: ArrayLike) -> np.ndarray:
        """The exact kernel ``k(X, Z)`` the features approximate (reference; dense ``m × n``).

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import RandomFourierFeatures
        >>> X = np.random.default_rng(0).normal(size=(5, 3)) / 3
        >>> rff = RandomFourierFeatures(n_components=2000, gamma=1.0, random_state=0).fit(X)
        >>> F = rff.transform(X)
        >>> bool(np.abs(F @ F.T - rff.kernel_value(X, X)).max() < 0.1)   # the approximation
        True
        """
        _, kernel, gamma = self._validate_params()
        X = check_array(X, "X")
        Z = check_array(Z, "Z", n_features=X.shape[1])
        if kernel == "rbf":
            d2 = ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
            return np.exp(-gamma * d2)
        d1 = np.abs(X[:, None, :] - Z[None, :, :]).sum(-1)
        return np.exp(-gamma * d1)

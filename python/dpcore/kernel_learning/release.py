"""Released kernel models: ``ŵ = Σ_t α_t φ(z_t)`` over public (or privately chosen) points.

TDDL and TDIL both release a kernel expansion over points that are *not* training points (TDDL:
the user's public points; TDIL: net points chosen by the exponential mechanism). The release is a
:class:`KernelRelease`: it holds only public information — the points, the coefficients, the kernel
parameters, the class labels and the privacy parameters with the full calibration record — and
can be saved to / loaded from a JSON file with a checksum. It never holds training data.

Predictions of a release (``decision_function``, ``predict``, ``score``) are post-processing of the released points
and coefficients: they cost no privacy, whatever and however often they are asked. So they also run on Dask arrays
or DataFrames of query rows, lazily, every block evaluated by the Rust engine on a worker (the release is sent to
each worker once) and bit-for-bit the in-memory values (``docs/scaling.md``).
"""

from __future__ import annotations

import json
import os
from typing import Any, Optional, overload

import numpy as np

from sklearn.base import BaseEstimator

from dpcore import __version__ as _version
from dpcore import _core
from dpcore._internal.dask import compute_all
from dpcore._internal.labels import decision_labels
from dpcore._internal.state import atomic_write, checksum
from dpcore._internal.types import ArrayLike, DaskArray, DaskArrayLike, NDArray
from dpcore.kernel_learning._model import b64, unb64
from dpcore._internal.validation import check_array, check_rows, map_rows
from dpcore.kernels.evaluation import fused_predict
from dpcore.kernel_learning.svm import NotFittedError

__all__ = ["KernelRelease", "ReleasingEstimator"]

_FORMAT = "dpcore.kernel_release/1"


def _jsonable(value):
    """Recursively convert numpy scalars/arrays in calibration records to plain JSON types."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


class KernelRelease:
    """A differentially private kernel model ``f(q) = Σ_t μ_t K(q, z_t)``.

    Parameters
    ----------
    points : array of shape (T, d)
        Public expansion points ``z_t`` (never training points).
    mu : array of shape (T,)
        Expansion coefficients ``μ_t`` (the same name as :attr:`dpcore.KernelSVM.mu_`).
    kernel : dict
        ``kernel``, ``gamma``, ``degree``, ``coef0`` as in :func:`dpcore.kernel_matrix`.
    classes : array of shape (2,), optional
        Labels predicted for ``f ≤ 0`` and ``f > 0``; default ``[-1, 1]``.
    mechanism : str
        ``"TDDL"``, ``"TDIL"``, ...
    epsilon, delta : float
        The privacy guarantee of the release with respect to the training data.
    calibration : dict
        Every calibrated number (JSON-serialisable), for audit and reproducibility.
    data_norm : float
        The declared domain ``||q|| ≤ data_norm`` the guarantee and the utility analysis refer to.
    intercept : float, default 0.0
        Constant added to ``f`` (set by post-processing, e.g. :meth:`calibrate_prior`).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import KernelSVM
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.7, 0.7, size=(2000, 2))      # every row in the unit ball
    >>> y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    >>> svm = KernelSVM(lam=1e-3, kernel="rbf", gamma=5.0, tol=1e-8).fit(X, y)
    >>> from dpcore import TDDL
    >>> Z = rng.uniform(-0.7, 0.7, size=(200, 2))
    >>> rel = TDDL(svm, epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0).fit(Z).release_
    >>> rel.mechanism, rel.points.shape, rel.predict(X[:3]).shape
    ('TDDL', (200, 2), (3,))
    >>> d = rel.to_dict()                               # public: points, coefficients, privacy record
    >>> sorted(d)[:3]
    ['calibration', 'checksum', 'classes']
    """

    def __init__(self, points, mu, kernel: dict, *, classes=None, mechanism: str, epsilon: float,
                 delta: float, calibration: Optional[dict] = None, data_norm: float, intercept: float = 0.0):
        self.points = np.ascontiguousarray(np.asarray(points, dtype=np.float64))
        self.mu = np.ascontiguousarray(np.asarray(mu, dtype=np.float64).ravel())
        if self.points.ndim != 2 or self.points.shape[0] != self.mu.shape[0]:
            raise ValueError(
                f"points must be (T, d) and mu (T,); got {self.points.shape} and {self.mu.shape}"
            )
        if not (np.isfinite(self.points).all() and np.isfinite(self.mu).all()):
            raise ValueError("points and mu must be finite")
        self.kernel = dict(kernel)
        self.classes_ = np.asarray([-1, 1] if classes is None else classes)
        self.mechanism = str(mechanism)
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.calibration = _jsonable(dict(calibration or {}))
        self.data_norm = float(data_norm)
        self.intercept = float(intercept)
        if not np.isfinite(self.intercept):
            raise ValueError(f"intercept must be finite, got {intercept!r}")

    @property
    def n_features_in_(self) -> int:
        return int(self.points.shape[1])

    @overload
    def decision_function(self, X: DaskArrayLike) -> DaskArray: ...
    @overload
    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]: ...
    def decision_function(self, X: ArrayLike | DaskArrayLike) -> NDArray[np.float64] | DaskArray:
        """``f(q) = Σ_t α_t K(q, z_t)`` for the rows of ``X`` (fused kernel engine).

        Post-processing of the release: no privacy cost. ``X`` may be a Dask array or DataFrame: the result is
        then a lazy Dask array with ``X``'s row chunks, every block evaluated by the Rust engine on a worker (the
        points and coefficients are sent to each worker once), bit-for-bit the in-memory values. ``X``'s shape is
        checked at the call, its values (NaN/inf) block by block when computed.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import KernelSVM, TDDL
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.7, 0.7, size=(2000, 2)); y = np.where(X[:, 0] + 0.3 > 0, 1, -1)
        >>> svm = KernelSVM(lam=1e-3, kernel="rbf", gamma=5.0, tol=1e-8).fit(X, y)
        >>> Z = rng.uniform(-0.7, 0.7, size=(200, 2))
        >>> rel = TDDL(svm, epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0).fit(Z).release_
        >>> rel.decision_function(X[:3]).shape
        (3,)
        >>> import dask.array as da                        # lazy on Dask; the same values
        >>> f = rel.decision_function(da.from_array(X, chunks=500))
        >>> bool(np.array_equal(f.compute(scheduler="synchronous"), rel.decision_function(X)))
        True
        """
        X = check_rows(X, "X", n_features=self.n_features_in_, estimator=type(self).__name__)
        return map_rows(_release_decision, X, self.points, self.mu, self.kernel, self.intercept, X.shape[0], name="X")

    def calibrate_prior(self, proportion: float, points=None) -> "KernelRelease":
        """A copy whose decision threshold predicts ``classes_[1]`` on the fraction ``proportion`` of ``points``.

        Post-processing for imbalanced data: a private model without a bias can rank well (high AUC)
        while its noise moves every decision value to one side. Given a *privately released* class
        proportion (e.g. :func:`dpcore.mechanisms.noise.private_proportion`, whose budget the caller accounts
        for), the intercept is set to minus the ``(1 − proportion)``-quantile of the decision values
        on public points (default: the release's own public points). Costs no privacy beyond that of
        ``proportion``: the quantile is a function of released values and public points only.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import KernelSVM, TDDL
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.7, 0.7, size=(2000, 2)); y = np.where(X[:, 0] + 0.3 > 0, 1, -1)
        >>> svm = KernelSVM(lam=1e-3, kernel="rbf", gamma=5.0, tol=1e-8).fit(X, y)
        >>> Z = rng.uniform(-0.7, 0.7, size=(200, 2))
        >>> rel = TDDL(svm, epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0).fit(Z).release_
        >>> from dpcore.mechanisms import private_proportion
        >>> p = private_proportion(y, 1, 0.05, random_state=0)  # ε = 0.05 of the caller's budget
        >>> adjusted = rel.calibrate_prior(p)             # post-processing: a new release
        >>> adjusted.predict(X[:4]).shape
        (4,)
        """
        p = float(proportion)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"proportion must lie in [0, 1], got {proportion!r}")
        P = self.points if points is None else check_array(points, "points", n_features=self.n_features_in_)
        base = KernelRelease(self.points, self.mu, self.kernel, classes=self.classes_, mechanism=self.mechanism,
                             epsilon=self.epsilon, delta=self.delta, calibration=self.calibration,
                             data_norm=self.data_norm)
        f = np.sort(base.decision_function(P))
        t = float(np.quantile(f, 1.0 - p)) if f.size else 0.0
        cal = dict(self.calibration, prior_proportion=p, prior_threshold=t)
        return KernelRelease(self.points, self.mu, self.kernel, classes=self.classes_, mechanism=self.mechanism,
                             epsilon=self.epsilon, delta=self.delta, calibration=cal, data_norm=self.data_norm,
                             intercept=-t)

    @overload
    def predict(self, X: DaskArrayLike) -> DaskArray: ...
    @overload
    def predict(self, X: ArrayLike) -> NDArray[Any]: ...
    def predict(self, X: ArrayLike | DaskArrayLike) -> NDArray[Any] | DaskArray:
        """Class labels: ``classes_[1]`` where the decision value is > 0 (lazy on a Dask ``X``; post-processing).

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import KernelSVM, TDDL
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.7, 0.7, size=(2000, 2)); y = np.where(X[:, 0] + 0.3 > 0, 1, -1)
        >>> svm = KernelSVM(lam=1e-3, kernel="rbf", gamma=5.0, tol=1e-8).fit(X, y)
        >>> Z = rng.uniform(-0.7, 0.7, size=(200, 2))
        >>> rel = TDDL(svm, epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0).fit(Z).release_
        >>> set(rel.predict(X[:10]).tolist()) <= {-1, 1}
        True
        """
        return map_rows(decision_labels, self.decision_function(X), self.classes_, name=None,
                        dtype=self.classes_.dtype)

    def score(self, X: ArrayLike | DaskArrayLike, y: ArrayLike | DaskArrayLike) -> float:
        """Mean accuracy on ``(X, y)`` (post-processing). With Dask inputs the predicted labels and ``y`` (one value
        per row) are computed into this process, in one pass, and compared here.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import KernelSVM, TDDL
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.7, 0.7, size=(2000, 2)); y = np.where(X[:, 0] + 0.3 > 0, 1, -1)
        >>> svm = KernelSVM(lam=1e-3, kernel="rbf", gamma=5.0, tol=1e-8).fit(X, y)
        >>> Z = rng.uniform(-0.7, 0.7, size=(200, 2))
        >>> rel = TDDL(svm, epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0).fit(Z).release_
        >>> acc = rel.score(X, y)                         # mean accuracy
        >>> 0.0 <= acc <= 1.0
        True
        """
        pred, y = compute_all(self.predict(X), y)
        return float(np.mean(pred == np.asarray(y)))

    def norm(self) -> float:
        """``||ŵ|| = sqrt(αᵀ K_ZZ α)`` (public: a function of the release).

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import KernelSVM, TDDL
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.7, 0.7, size=(2000, 2)); y = np.where(X[:, 0] + 0.3 > 0, 1, -1)
        >>> svm = KernelSVM(lam=1e-3, kernel="rbf", gamma=5.0, tol=1e-8).fit(X, y)
        >>> Z = rng.uniform(-0.7, 0.7, size=(200, 2))
        >>> rel = TDDL(svm, epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0).fit(Z).release_
        >>> bool(rel.norm() > 0)                           # a function of the release only
        True
        """
        if self.points.shape[0] == 0:
            return 0.0
        k = self.kernel
        f = _core.kernel_predict(self.points, self.points, self.mu, k["kernel"], k["gamma"], k["degree"], k["coef0"])
        return float(np.sqrt(max(0.0, float(self.mu @ f))))

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict:
        classes = self.classes_.tolist()
        doc = dict(
            format=_FORMAT,
            dpcore_version=_version,
            mechanism=self.mechanism,
            epsilon=self.epsilon,
            delta=self.delta,
            data_norm=self.data_norm,
            kernel=self.kernel,
            classes=classes,
            shape=list(self.points.shape),
            points=b64(self.points),
            mu=b64(self.mu),
            calibration=self.calibration,
            intercept=self.intercept,
        )
        doc["checksum"] = checksum(doc)
        return doc

    def save(self, path) -> None:
        """Write the release to ``path`` (JSON with a SHA-256 checksum), atomically.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import KernelSVM, TDDL
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.7, 0.7, size=(2000, 2)); y = np.where(X[:, 0] + 0.3 > 0, 1, -1)
        >>> svm = KernelSVM(lam=1e-3, kernel="rbf", gamma=5.0, tol=1e-8).fit(X, y)
        >>> Z = rng.uniform(-0.7, 0.7, size=(200, 2))
        >>> rel = TDDL(svm, epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0).fit(Z).release_
        >>> import os, tempfile
        >>> from dpcore import KernelRelease
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = os.path.join(tmp.name, "release.json")
        >>> rel.save(path)                 # public: points, coefficients, privacy record
        >>> same = KernelRelease.load(path)
        >>> bool(np.array_equal(same.predict(X[:5]), rel.predict(X[:5])))
        True
        >>> tmp.cleanup()
        """
        atomic_write(os.fspath(path), json.dumps(self.to_dict(), sort_keys=True).encode())

    @classmethod
    def load(cls, path) -> "KernelRelease":
        """Read a release written by :meth:`save`; a modified file is refused (checksum).

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import KernelSVM, TDDL
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.7, 0.7, size=(2000, 2)); y = np.where(X[:, 0] + 0.3 > 0, 1, -1)
        >>> svm = KernelSVM(lam=1e-3, kernel="rbf", gamma=5.0, tol=1e-8).fit(X, y)
        >>> Z = rng.uniform(-0.7, 0.7, size=(200, 2))
        >>> rel = TDDL(svm, epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0).fit(Z).release_
        >>> import os, tempfile
        >>> from dpcore import KernelRelease
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = os.path.join(tmp.name, "release.json")
        >>> rel.save(path)
        >>> KernelRelease.load(path).mechanism
        'TDDL'
        >>> tmp.cleanup()
        """
        path = os.fspath(path)
        with open(path, "rb") as f:
            raw = f.read()
        try:
            doc = json.loads(raw.decode())
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path!r} is corrupted or truncated (not a complete JSON document: {exc})") from None
        if not isinstance(doc, dict):
            raise ValueError(f"{path!r} is not a dpcore kernel release")
        if doc.get("format") != _FORMAT:
            raise ValueError(f"{path!r} is not a dpcore kernel release (format {doc.get('format')!r})")
        if doc.get("checksum") != checksum(doc):
            raise ValueError(f"{path!r} is corrupted or was modified (checksum mismatch)")
        T, d = doc["shape"]
        return cls(
            unb64(doc["points"]).reshape(T, d), unb64(doc["mu"]), doc["kernel"],
            classes=np.asarray(doc["classes"]), mechanism=doc["mechanism"], epsilon=doc["epsilon"],
            delta=doc["delta"], calibration=doc["calibration"], data_norm=doc["data_norm"],
            intercept=float(doc.get("intercept", 0.0)),
        )

    def __repr__(self) -> str:
        return (f"KernelRelease(mechanism={self.mechanism!r}, epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"n_points={self.points.shape[0]}, kernel={self.kernel['kernel']!r})")


def _release_decision(X: np.ndarray, points: np.ndarray, mu: np.ndarray, kernel: dict, intercept: float,
                      n_rows_total: int) -> np.ndarray:
    """:meth:`KernelRelease.decision_function` on validated rows ``X`` (all of them, or one block of
    ``n_rows_total``)."""
    if points.shape[0] == 0:
        return np.full(X.shape[0], intercept)
    return fused_predict(X, points, mu, kernel, n_rows_total=n_rows_total) + intercept


class ReleasingEstimator(BaseEstimator):
    """Shared scikit-learn-style plumbing of the estimators that produce a :class:`KernelRelease`.

    Subclasses set ``release_`` in ``fit``; parameters follow scikit-learn (``BaseEstimator``).
    ``decision_function``, ``predict`` and ``score`` delegate to the release: post-processing, no privacy cost,
    and they accept Dask arrays or DataFrames (lazy results; see :class:`KernelRelease`).
    """


    def _check_fitted(self):
        if not hasattr(self, "release_"):

            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call fit first.")

    @overload
    def decision_function(self, X: DaskArrayLike) -> DaskArray: ...
    @overload
    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]: ...
    def decision_function(self, X: ArrayLike | DaskArrayLike) -> NDArray[np.float64] | DaskArray:
        """Decision values of the released model, ``Σ_t α_t K(q, z_t)`` (post-processing; lazy on a Dask ``X``,
        see :meth:`KernelRelease.decision_function`)."""
        self._check_fitted()
        return self.release_.decision_function(X)

    @overload
    def predict(self, X: DaskArrayLike) -> DaskArray: ...
    @overload
    def predict(self, X: ArrayLike) -> NDArray[Any]: ...
    def predict(self, X: ArrayLike | DaskArrayLike) -> NDArray[Any] | DaskArray:
        """Class labels of the released model (post-processing; lazy on a Dask ``X``)."""
        self._check_fitted()
        return self.release_.predict(X)

    def score(self, X: ArrayLike | DaskArrayLike, y: ArrayLike | DaskArrayLike) -> float:
        """Mean accuracy of the released model on ``(X, y)`` (post-processing; Dask inputs accepted)."""
        self._check_fitted()
        return self.release_.score(X, y)

    def save(self, path) -> None:
        """Save the release (points, α, kernel, privacy parameters and calibration)."""
        self._check_fitted()
        self.release_.save(path)

    @staticmethod
    def load(path) -> KernelRelease:
        """Load a saved release (a :class:`dpcore.KernelRelease`)."""
        return KernelRelease.load(path)

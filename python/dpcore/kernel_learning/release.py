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

import math
import numbers
import os
from typing import Any, Optional, overload

import numpy as np

from sklearn.base import BaseEstimator

from dpcore._core import __version__ as _version
from dpcore import _core
from dpcore._internal.cloning import PerCloneSeedMixin
from dpcore._internal.dask import compute_all
from dpcore._internal.labels import PM_CLASSES, check_classes, decision_labels, label_agreement
from dpcore._internal.sealing import StateKeyLike, resolve_key
from dpcore._internal.state import atomic_write, checksum, encode_document, parse_document
from dpcore.exceptions import NotFittedError, StateAuthenticationError
from dpcore._internal.types import ArrayLike, DaskArray, DaskArrayLike, NDArray, Labels, StrPath
from dpcore.kernel_learning._model import b64, unb64
from dpcore._internal.validation import (check_array, check_delta, check_epsilon, check_positive, check_rows,
                                         map_rows)
from dpcore.kernels.evaluation import (_check_representable, as_f64, check_intercept_scaling, check_kernel_params,
                                       fused_predict, kernel_args)

__all__ = ["KernelRelease", "ReleasingEstimator"]

_FORMAT = "dpcore.kernel_release/1"
#: A release file is at most this large (10⁶ public points in 10³ dimensions is 8 GB of base64 text).
_MAX_RELEASE_BYTES = 1 << 34


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

    def __init__(self, points: ArrayLike, mu: ArrayLike, kernel: dict, *, classes: Labels = None, mechanism: str,
                 epsilon: float, delta: float, calibration: Optional[dict] = None, data_norm: float,
                 intercept: float = 0.0) -> None:
        fields = self._validate_public(points=points, mu=mu, kernel=kernel, classes=classes, mechanism=mechanism,
                                       epsilon=epsilon, delta=delta, calibration=calibration, data_norm=data_norm,
                                       intercept=intercept)
        self.points = fields["points"]
        self.mu = fields["mu"]
        self.kernel = fields["kernel"]
        self.classes_ = fields["classes"]
        self.mechanism = fields["mechanism"]
        self.epsilon = fields["epsilon"]
        self.delta = fields["delta"]
        self.calibration = fields["calibration"]
        self.data_norm = fields["data_norm"]
        self.intercept = fields["intercept"]

    @staticmethod
    def _validate_public(*, points, mu, kernel, classes, mechanism, epsilon, delta, calibration, data_norm,
                         intercept) -> dict:
        """Every field of a release, validated and normalised: the one check of the constructor and of ``load``.

        Returns the fields as stored (float64 C-contiguous arrays, the resolved kernel, the sorted ``classes``).
        Raises ``ValueError``/``TypeError`` whose message starts with the field's name: ``points`` (2-D, finite,
        ``T ≥ 0`` rows of ``d ≥ 1`` features), ``mu`` (``T`` finite coefficients whose decision values on the
        declared domain stay representable: ``Σ|μ_t|·max K ≤ e^700``), ``kernel`` (``kernel``/``gamma``/
        ``degree``/``coef0`` as :func:`dpcore.kernel_matrix` accepts them), ``classes`` (two distinct labels in
        dpcore's order, sorted: ``classes[1]`` is predicted for ``f > 0``), ``mechanism`` (a non-empty string),
        ``epsilon`` (finite, > 0), ``delta`` (in [0, 1)), ``calibration`` (a non-empty dict: the audit record),
        ``data_norm`` (finite, > 0) and ``intercept`` (finite).
        """
        pts = np.asarray(points)
        if pts.dtype.kind not in "biuf":
            raise TypeError(f"points must be a numeric array, got dtype {pts.dtype}")
        pts = np.ascontiguousarray(pts, dtype=np.float64)
        if pts.ndim != 2 or pts.shape[1] < 1:
            raise ValueError(f"points must be a 2-D array of shape (T, d) with d >= 1, got shape {pts.shape}")
        if not np.isfinite(pts).all():
            raise ValueError("points must be finite (NaN or infinite values found)")
        coef = np.asarray(mu)
        if coef.dtype.kind not in "biuf":
            raise TypeError(f"mu must be a numeric array, got dtype {coef.dtype}")
        coef = np.ascontiguousarray(coef, dtype=np.float64).ravel()
        if coef.shape[0] != pts.shape[0]:
            raise ValueError(f"mu must have one coefficient per point: points {pts.shape}, mu {coef.shape}")
        if not np.isfinite(coef).all():
            raise ValueError("mu must be finite (NaN or infinite values found)")
        if not isinstance(kernel, dict):
            raise TypeError(f"kernel must be a dict with kernel, gamma, degree and coef0, got {type(kernel).__name__}")
        missing = [k for k in ("kernel", "gamma", "degree", "coef0") if k not in kernel]
        extra = sorted(set(kernel) - {"kernel", "gamma", "degree", "coef0", "intercept_scaling"}, key=str)
        if missing or extra or kernel.get("gamma") is None:
            raise ValueError(f"kernel must hold exactly kernel, gamma (resolved, not None), degree, coef0 and "
                             f"optionally intercept_scaling; got {kernel!r}")
        name, gamma, degree, coef0 = check_kernel_params(kernel["kernel"], kernel["gamma"], kernel["degree"],
                                                         kernel["coef0"], pts.shape[1])
        # the regularised intercept (kernel K + b²); absent (a release from before issue 23) means b = 0
        b = check_intercept_scaling(kernel.get("intercept_scaling", 0.0))
        kern = dict(kernel=name, gamma=gamma, degree=degree, coef0=coef0)
        if b != 0.0:  # stored only when used: a b = 0 release (and its file) is exactly the pre-issue-23 one
            kern["intercept_scaling"] = b
        epsilon = check_epsilon(epsilon, grid=False)  # a release records what it was calibrated for
        delta = check_delta(delta, grid=False)
        radius = check_positive(data_norm, "data_norm")
        intercept = _as_finite(intercept, "intercept")
        labels = check_classes(PM_CLASSES if classes is None else classes)
        if classes is not None and not np.array_equal(np.asarray(list(classes)), labels):
            raise ValueError(f"classes must be in dpcore's order, sorted ({labels.tolist()!r}): classes[1] is "
                             f"predicted for f > 0 (np.sort of the declared label set), got {classes!r}")
        if not isinstance(mechanism, str) or not mechanism:
            raise ValueError(f"mechanism must be a non-empty string, got {mechanism!r}")
        if calibration is None or not isinstance(calibration, dict) or not calibration:
            raise ValueError("calibration must be a non-empty dict (the release's public calibration record), got "
                             f"{calibration!r:.80}")
        # decision values on the declared domain (||q|| <= data_norm, points as released) must be representable:
        # |f(q)| <= Σ|μ_t|·max_t |K(q, z_t)| (Cauchy–Schwarz for linear/poly; |K| <= 1 for rbf)
        with np.errstate(over="ignore"):
            l1 = float(np.sum(np.abs(coef), dtype=np.float64)) if coef.size else 0.0
        if coef.size:
            with np.errstate(over="ignore"):
                rz = float(np.sqrt(np.max(np.einsum("ij,ij->i", pts, pts))))
            g, p, c = (1.0, 1, 0.0) if name == "linear" else (gamma, degree, coef0)
            base = 1.0 if name == "rbf" else g * radius * rz + abs(c)
            log_bound = (math.log(l1) if l1 > 0 else -math.inf) + (p * math.log(base) if base > 0 else -math.inf)
            if not (math.isfinite(l1) and math.isfinite(rz)) or log_bound > 700.0:
                raise ValueError(f"mu: the decision values on the declared domain ||q|| <= data_norm = {radius:g} can "
                                 f"overflow float64 (sum |mu| = {l1:.3g}, max |K| up to {base:.3g}**{p})")
        return dict(points=pts, mu=coef, kernel=kern, classes=labels, mechanism=mechanism, epsilon=epsilon,
                    delta=delta, calibration=_jsonable(dict(calibration)), data_norm=radius, intercept=intercept)

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

    def calibrate_prior(self, proportion: float, points: Optional[ArrayLike] = None) -> "KernelRelease":
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
        return self._with_prior(p, self._bare().decision_function(P))

    def _bare(self) -> "KernelRelease":
        """This release without its intercept (the decision values :meth:`calibrate_prior` thresholds)."""
        return KernelRelease(self.points, self.mu, self.kernel, classes=self.classes_, mechanism=self.mechanism,
                             epsilon=self.epsilon, delta=self.delta, calibration=self.calibration,
                             data_norm=self.data_norm)

    def _with_prior(self, p: float, values: np.ndarray) -> "KernelRelease":
        """:meth:`calibrate_prior` from the decision values ``values`` of :meth:`_bare` on the public points (e.g. from
        a :class:`ReleaseDecisions` of those points, shared by several releases)."""
        f = np.sort(np.asarray(values, dtype=np.float64))
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
        return float(np.mean(label_agreement(pred, y, self.classes_)))

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
        f = _core.kernel_predict(self.points, self.points, self.mu, *kernel_args(k))
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

    def save(self, path: StrPath, *, key: Optional[StateKeyLike] = None) -> None:
        """Write the release to ``path`` atomically: JSON with a SHA-256 checksum, or sealed under ``key``.

        A release is public (post-processing of a DP release), so by default it is written readable,
        with an unkeyed checksum that detects accidents, not forgery. With ``key`` (bytes of at least 32
        bytes, the path of a key file, or ``"keyfile"`` for ``<path>.key``, created 0600 if absent) the
        file is sealed with ChaCha20-Poly1305 (:mod:`dpcore._internal.sealing`): :meth:`load` with the
        same key refuses any edited, truncated or forged file — e.g. μ scaled by 10, whose every field
        is otherwise valid.

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
        >>> rel.save(path, key=b"0123456789abcdef0123456789abcdef")   # authenticated
        >>> KernelRelease.load(path, key=b"0123456789abcdef0123456789abcdef").mechanism
        'TDDL'
        >>> tmp.cleanup()
        """
        path = os.fspath(path)
        sealing = None if key is None else resolve_key(key, os.path.realpath(path), create=True)
        atomic_write(path, encode_document(self.to_dict(), sealing, _FORMAT))

    @classmethod
    def load(cls, path: StrPath, *, key: Optional[StateKeyLike] = None) -> "KernelRelease":
        """Read a release written by :meth:`save`; every field is validated as by the constructor.

        Without ``key`` the file must be the plain format and its checksum must match (accidents are
        detected; a forger can recompute an unkeyed checksum, so only field validation stands). With
        ``key`` the file must be sealed under it (:class:`dpcore.exceptions.StateAuthenticationError`
        otherwise).

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
        sealing = None if key is None else resolve_key(key, os.path.realpath(path), create=False)
        with open(path, "rb") as f:
            raw = f.read(_MAX_RELEASE_BYTES + 1)
        if len(raw) > _MAX_RELEASE_BYTES:
            raise StateAuthenticationError(f"{path!r} is larger than any dpcore release")
        doc = parse_document(raw, sealing, _FORMAT, repr(path), sequenced=False)
        try:
            T, d = doc["shape"]
            if type(T) is not int or type(d) is not int or T < 0 or d < 1:
                raise ValueError("shape")
            points = unb64(doc["points"], "points")
            if points.size != T * d:
                raise ValueError("points")
            intercept = doc.get("intercept", 0.0)
            if not isinstance(doc["classes"], list) or not isinstance(doc["kernel"], dict) \
                    or not isinstance(doc["calibration"], dict):
                raise ValueError("classes/kernel/calibration")
            fields = dict(classes=np.asarray(doc["classes"]), mechanism=doc["mechanism"], epsilon=doc["epsilon"],
                          delta=doc["delta"], calibration=doc["calibration"], data_norm=doc["data_norm"],
                          intercept=intercept)
            mu = unb64(doc["mu"], "mu")
        except (KeyError, TypeError, ValueError) as exc:
            raise StateAuthenticationError(f"{path!r}: a stored field is missing or malformed ({exc})") from None
        return cls(points.reshape(T, d), mu, doc["kernel"], **fields)

    def __repr__(self) -> str:
        return (f"KernelRelease(mechanism={self.mechanism!r}, epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"n_points={self.points.shape[0]}, kernel={self.kernel['kernel']!r})")


def _as_finite(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        out = float(value)
    except OverflowError:
        out = math.inf
    if not math.isfinite(out):
        raise ValueError(f"{name} must be finite, got {value!r:.40}")
    return out


def _release_decision(X: np.ndarray, points: np.ndarray, mu: np.ndarray, kernel: dict, intercept: float,
                      n_rows_total: int) -> np.ndarray:
    """:meth:`KernelRelease.decision_function` on validated rows ``X`` (all of them, or one block of
    ``n_rows_total``): the one evaluation path of every prediction of a release (``decision_function``,
    ``predict``, ``score``; in memory or block by block on Dask). Decision values that are not finite (rows so large
    that the kernel overflows, e.g. entries of 1e308) are a ``ValueError`` naming ``X``, as
    :func:`dpcore.kernel_predict` refuses them — never NaN, and never a label read off a NaN."""
    if points.shape[0] == 0:
        return np.full(X.shape[0], intercept)
    f = _check_representable(fused_predict(X, points, mu, kernel, n_rows_total=n_rows_total), kernel["kernel"], "X")
    with np.errstate(over="ignore"):
        f = f + intercept
    return _check_representable(f, "", "X")


class ReleaseDecisions:
    """Decision values of several releases on one in-memory ``X`` (validated rows): the kernel matrix
    ``K(X, points)`` is computed once for the releases that share their public points and kernel (e.g. the
    candidates of :class:`~dpcore.kernel_learning.selection.PrivateGridSearch`, all released over one ``Z``) and
    each release's values are one matrix–vector product. Post-processing: every value is its row's kernel
    expansion, as :meth:`KernelRelease.decision_function` gives it up to rounding (another summation order), and
    it depends on that row only. The matrix is kept only when it fits ``max_bytes`` (a public size: rows × points);
    otherwise, and for any other release, :meth:`KernelRelease.decision_function` is used.
    """

    def __init__(self, X: np.ndarray, *, max_bytes: int = 2**30) -> None:
        self._X = X
        self._max_bytes = int(max_bytes)
        self._cached: Optional[tuple] = None

    def decision_function(self, release: "KernelRelease") -> np.ndarray:
        X, P = self._X, release.points
        if P.shape[0] == 0 or X.shape[0] * P.shape[0] * 8 > self._max_bytes:
            return release.decision_function(X)
        args = kernel_args(release.kernel)
        c = self._cached
        if c is None or c[0] != args or not (c[1] is P or np.array_equal(c[1], P)):
            K = _check_representable(_core.kernel_matrix(as_f64(X), as_f64(P), *args), release.kernel["kernel"], "X")
            self._cached = c = (args, P, K)
        with np.errstate(over="ignore", invalid="ignore"):
            f = c[2] @ release.mu + release.intercept
        return _check_representable(f, release.kernel["kernel"], "X")


class ReleasingEstimator(PerCloneSeedMixin, BaseEstimator):
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

    def save(self, path: StrPath) -> None:
        """Save the release (points, α, kernel, privacy parameters and calibration)."""
        self._check_fitted()
        self.release_.save(path)

    @staticmethod
    def load(path: StrPath) -> KernelRelease:
        """Load a saved release (a :class:`dpcore.KernelRelease`)."""
        return KernelRelease.load(path)

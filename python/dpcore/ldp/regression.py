"""Sparse linear regression under non-interactive LDP (Zheng, Mou & Wang 2017, Algorithm 3).

Protocol. Public: projection ``Φᵀ ~ N(0, 1/m)^{m×d}`` from ``projection_seed``; the per-part budget
``(ε/2, δ/2)``; the ℓ1 radius ``Λ`` of the constraint set ``C = {||w||_1 ≤ Λ}``.

* Client (:func:`regression_report`): with ``||x||_2 ≤ 1`` and ``|y| ≤ label_bound`` the user sends
  ``z = clip_R(Φᵀx) + N(0, σ_x² I_m)`` and ``v = y + N(0, σ_y²)``, each through a Basic Private Vector
  channel at ``(ε/2, δ/2)``.
* Server (:class:`LDPSparseRegression`): ``Q = Proj_PSD(ZᵀZ − n σ_x² I_m)`` (scipy ``eigh``) and
  ``w = argmin_{||w||_1 ≤ Λ} (1/2n)(Φᵀw)ᵀQ(Φᵀw) − (1/n) vᵀZΦᵀw`` (FISTA with the exact ℓ1-ball
  projection of Duchi et al. 2008, certified by the Frank–Wolfe duality gap).

Privacy [(ε, δ)-LDP]: ``z`` is (ε/2, δ/2)-LDP (Basic Private Vector on the public map ``clip_R(Φᵀx)``,
sensitivity ``2R``), ``v`` is (ε/2, δ/2)-LDP (sensitivity ``2·label_bound``); basic composition (paper
Lemma 2) gives (ε, δ). The split is checked exactly by :meth:`SparseRegressionProtocol.check_budget`.

``σ`` in ``Q`` is the σ actually used by the x-channel (the paper's ``2 sqrt(2 ln(2.5/δ))/(ε/2)`` with
the classic calibration; the smaller analytic σ by default). ``E[zzᵀ] = x̃x̃ᵀ + σ² I`` and
``E[v z] = y x̃`` (independent noises), so the objective is unbiased before the PSD projection.
Default ``m = ⌈sqrt(n ε² ln d)⌉`` (Theorem 3's Θ with constant 1).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Optional, Tuple

import numpy as np
from sklearn.base import BaseEstimator

from dpcore.mechanisms import noise
from dpcore._internal.validation import check_positive
from dpcore.ldp._protocol import ProtocolMixin, ReleaseSpec, check_int, check_reports, projection_matrix
from dpcore.ldp._solvers import debiased_gram_from, gram_stat, l1_ball_qp
from dpcore.ldp._stats import LeafStream, feed
from dpcore.ldp.vectors import GaussianChannel, gaussian_channel, split_budget
from dpcore.ldp._records import check_record, clip_to, release
from dpcore._internal.validation import check_array
from dpcore._internal.types import ArrayLike, NDArray, Self, RandomState
from dpcore._internal.progress import check_verbose, progress_bar

logger = logging.getLogger(__name__)

__all__ = ["SparseRegressionProtocol", "regression_report", "LDPSparseRegression", "check_label"]


def check_label(y: ArrayLike, name: str, bound: float, clip: bool) -> np.ndarray:
    """One user's response as a length-1 vector, ``|y| ≤ bound`` (or clipped with ``clip=True``)."""
    arr = np.asarray(y, dtype=np.float64) if np.asarray(y).dtype.kind in "biuf" else None
    if arr is None:
        raise TypeError(f"{name} must be a real number")
    if arr.size != 1:
        raise ValueError(f"{name} must be a single number (one user's response), got shape {arr.shape}")
    val = float(arr.reshape(-1)[0])
    if not math.isfinite(val):
        raise ValueError(f"{name} must be finite, got {val!r}")
    if abs(val) > bound:
        if not clip:
            raise ValueError(f"{name}={val!r} lies outside [-{bound:g}, {bound:g}]; pass clip=True to clip it")
        val = math.copysign(bound, val)
    return np.array([val])


@dataclass(frozen=True)
class SparseRegressionProtocol(ProtocolMixin):
    """Public parameters of Algorithm 3 (shared by the clients and the server).

    Parameters
    ----------
    dim, n_users, epsilon, delta : ``d``, ``n`` and the per-user (ε, δ)-LDP.
    projection_dim : int, optional — ``m``; default ``⌈sqrt(n ε² ln d)⌉`` (Theorem 3), ≥ 1.
    l1_radius : float — radius of the constraint set ``C``.
    label_bound : float — declared bound on ``|y|`` (paper: 1).
    projection_seed : int — seed of the public ``Φ``.
    projection_radius : float — ``Φᵀx`` is clipped to this ball (paper: 1).
    calibration : "analytic" | "classic".

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import ldp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.2, 0.2, size=(500, 3)); y = X[:, 0]      # ||x||_1 <= 1, |y| <= 1
    >>> proto = ldp.SparseRegressionProtocol(dim=3, n_users=500, epsilon=2.0, delta=1e-6)
    >>> proto.budget().epsilon, proto.budget().delta
    (2.0, 1e-06)
    """

    dim: int
    n_users: int
    epsilon: float
    delta: float
    projection_dim: Optional[int] = None
    l1_radius: float = 1.0
    label_bound: float = 1.0
    projection_seed: int = 0
    projection_radius: float = 1.0
    calibration: str = "analytic"
    m: int = field(init=False)
    x_channel: GaussianChannel = field(init=False, repr=False)
    y_channel: GaussianChannel = field(init=False, repr=False)
    _A: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        s = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731
        self._check_common()
        s("l1_radius", check_positive(self.l1_radius, "l1_radius"))
        s("label_bound", check_positive(self.label_bound, "label_bound"))
        s("projection_radius", check_positive(self.projection_radius, "projection_radius"))
        check_int(self.projection_seed, "projection_seed", 0)
        m = self.projection_dim
        m = max(1, math.ceil(math.sqrt(self.n_users * self.epsilon**2 * math.log(max(self.dim, 2))))) \
            if m is None else check_int(m, "projection_dim")
        s("m", m)
        e2, d2 = split_budget(self.epsilon, Fraction(1, 2), 1), split_budget(self.delta, Fraction(1, 2), 1)
        s("x_channel", gaussian_channel(m, e2, d2, data_norm=self.projection_radius, calibration=self.calibration))
        s("y_channel", gaussian_channel(1, e2, d2, data_norm=self.label_bound, calibration=self.calibration))
        s("_A", projection_matrix(self.projection_seed, m, self.dim))
        self.check_budget()

    @property
    def projection(self) -> np.ndarray:
        """The public ``Φᵀ`` (m × d), read-only."""
        A = self._A.view()
        A.flags.writeable = False
        return A

    def releases(self) -> tuple[ReleaseSpec, ...]:
        return (ReleaseSpec("z (projected x)", "clip_R(Φᵀx)", self.x_channel, 1),
                ReleaseSpec("v (response)", "y", self.y_channel, 1))


def regression_report(x: ArrayLike, y: float, protocol: SparseRegressionProtocol, *, clip: bool = False,
                      random_state: RandomState = None) -> Tuple[np.ndarray, float]:
    """Client side of Algorithm 3: what ONE user sends, ``(z, v)`` with ``z`` shape ``(m,)``, ``v`` a float.

    ``||x||_2 ≤ 1`` and ``|y| ≤ label_bound`` are required (``ValueError`` otherwise unless ``clip=True``).
    Guarantee: (ε, δ)-LDP — (ε/2, δ/2) for ``z`` + (ε/2, δ/2) for ``v``, basic composition (module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import ldp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.2, 0.2, size=(500, 3)); y = X[:, 0]      # ||x||_1 <= 1, |y| <= 1
    >>> proto = ldp.SparseRegressionProtocol(dim=3, n_users=500, epsilon=2.0, delta=1e-6)
    >>> z, v = ldp.regression_report(X[0], y[0], proto, random_state=0)  # what one user sends
    >>> z.shape == (proto.projection.shape[0],), type(v).__name__
    (True, 'float')
    """
    if not isinstance(protocol, SparseRegressionProtocol):
        raise TypeError(f"protocol must be a SparseRegressionProtocol, got {type(protocol).__name__}")
    xv = check_record(x, "x", protocol.dim, 1.0, clip)
    yv = check_label(y, "y", protocol.label_bound, clip)
    rng = noise.check_random_state(random_state)
    z = release(clip_to(protocol._A @ xv, protocol.projection_radius), protocol.x_channel, rng)
    v = release(yv, protocol.y_channel, rng)
    return z, float(v[0])


def check_zv_reports(Z, v, n_users, m):
    Z = check_reports(Z, "Z_reports", n_users, m)
    v = np.asarray(v)
    if v.dtype.kind not in "biuf":
        raise TypeError(f"v_reports must be numeric, got dtype {v.dtype}")
    v = v.astype(np.float64).reshape(-1) if v.ndim == 2 and v.shape[1] == 1 else v.astype(np.float64)
    if v.ndim != 1 or v.shape[0] != Z.shape[0]:
        raise ValueError(f"v_reports must have shape ({Z.shape[0]},) to match Z_reports, got {np.shape(v)}")
    if not np.isfinite(v).all():
        raise ValueError("v_reports contains NaN or infinite values")
    return Z, v


class LDPSparseRegression(BaseEstimator):
    """Server side of Algorithm 3: fit from the users' reports ``(Z, v)`` only.

    Parameters
    ----------
    protocol : SparseRegressionProtocol
    tol : float — certified optimisation gap of the ℓ1-ball QP.
    max_iter : int — FISTA iterations cap.
    verbose : bool or int, default=False
        Show tqdm progress bars (stderr) during long calls; ``False``/``0`` shows nothing. Progress and the
        :mod:`logging` messages are for the curator only and never part of a release.
        The bar counts FISTA iterations (total ``max_iter``).

    Attributes: ``coef_`` (d,), ``gap_`` (certified ``f(w) − f* ≤ gap_``), ``n_iter_``, ``Q_`` (m×m).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import ldp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.2, 0.2, size=(500, 3)); y = X[:, 0]      # ||x||_1 <= 1, |y| <= 1
    >>> proto = ldp.SparseRegressionProtocol(dim=3, n_users=500, epsilon=2.0, delta=1e-6)
    >>> Z, v = ldp.simulate(X, y, proto, random_state=0)        # all users (experiments only)
    >>> model = ldp.LDPSparseRegression(proto).fit(Z, v)
    >>> model.coef_.shape, model.predict(X[:2]).shape
    ((3,), (2,))
    """

    def __init__(self, protocol: SparseRegressionProtocol, *, tol: float = 1e-9, max_iter: int = 20000,
                 verbose: bool | int = False) -> None:
        self.protocol = protocol
        self.tol = tol
        self.max_iter = max_iter
        self.verbose = verbose

    def fit(self, Z_reports: ArrayLike, v_reports: ArrayLike) -> Self:
        """Fit from the users' reports (numpy, or Dask arrays / DataFrame / Series, aggregated blockwise).

        Parameters
        ----------
        Z_reports : array_like or dask array/DataFrame, shape (n_users, m)
        v_reports : array_like or dask array/Series, shape (n_users,)

        Returns
        -------
        LDPSparseRegression
            ``self``, fitted.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import ldp
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.2, 0.2, size=(500, 3)); y = X[:, 0]
        >>> proto = ldp.SparseRegressionProtocol(dim=3, n_users=500, epsilon=2.0, delta=1e-6)
        >>> ldp.LDPSparseRegression(proto).fit(*ldp.simulate(X, y, proto, random_state=0)).coef_.shape
        (3,)
        """
        self._reset()
        return self._consume(Z_reports, v_reports, partial=False)

    def partial_fit(self, Z_reports: ArrayLike, v_reports: ArrayLike) -> Self:
        """Add a batch of reports and refit from all reports seen so far (``n`` = rows seen).

        The sufficient statistics ``ZᵀZ`` and ``Zᵀv`` are summed exactly (:mod:`dpcore.ldp._stats`), so after
        batches that together hold the ``n_users`` reports the model is bit-identical to :meth:`fit` on
        their concatenation. ``fit`` resets them.

        Parameters
        ----------
        Z_reports : array_like or dask array, shape (n_batch, m)
        v_reports : array_like or dask array, shape (n_batch,)

        Returns
        -------
        LDPSparseRegression
            ``self``.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import ldp
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.2, 0.2, size=(500, 3)); y = X[:, 0]
        >>> proto = ldp.SparseRegressionProtocol(dim=3, n_users=500, epsilon=2.0, delta=1e-6)
        >>> Z, v = ldp.simulate(X, y, proto, random_state=0)
        >>> model = ldp.LDPSparseRegression(proto)
        >>> model = model.partial_fit(Z[:200], v[:200]).partial_fit(Z[200:], v[200:])
        >>> bool(np.array_equal(model.coef_, ldp.LDPSparseRegression(proto).fit(Z, v).coef_))
        True
        """
        if getattr(self, "_stream", None) is None:
            self._reset()
        return self._consume(Z_reports, v_reports, partial=True)

    def _reset(self) -> None:
        proto = self.protocol
        if not isinstance(proto, SparseRegressionProtocol):
            raise TypeError(f"protocol must be a SparseRegressionProtocol, got {type(proto).__name__}")
        self._stream = LeafStream(gram_stat, {"gram": (proto.m + 1, proto.m + 1)})

    def _consume(self, Z_reports, v_reports, *, partial: bool) -> Self:
        proto = self.protocol
        if not isinstance(proto, SparseRegressionProtocol):
            raise TypeError(f"protocol must be a SparseRegressionProtocol, got {type(proto).__name__}")
        tol = check_positive(self.tol, "tol")
        max_iter = check_int(self.max_iter, "max_iter")
        check_verbose(self.verbose)
        feed(self._stream, (Z_reports, v_reports), ("Z_reports", "v_reports"), ((proto.m,), ()), proto.n_users,
             partial=partial)
        n = self._stream.n_rows
        G = self._stream.totals()["gram"].value()
        Q = debiased_gram_from(G[:-1, :-1], n, proto.x_channel.sigma)
        A = proto._A
        H = A.T @ (Q @ A) / n
        b = A.T @ G[:-1, -1] / n
        with progress_bar(self.verbose, total=max_iter, desc="LDPSparseRegression", unit="it") as bar:
            w, gap, it = l1_ball_qp(H, b, proto.l1_radius, tol=tol, max_iter=max_iter, bar=bar)
        logger.info("LDPSparseRegression: certified gap %.3e (tol %.1e) after %d FISTA iterations", gap, tol, it)
        self.coef_, self.gap_, self.n_iter_, self.Q_ = w, gap, it, Q
        self.n_reports_seen_ = n
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        """``X @ coef_`` (X are query points, not reports).

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import ldp
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.2, 0.2, size=(500, 3)); y = X[:, 0]
        >>> proto = ldp.SparseRegressionProtocol(dim=3, n_users=500, epsilon=2.0, delta=1e-6)
        >>> model = ldp.LDPSparseRegression(proto).fit(*ldp.simulate(X, y, proto, random_state=0))
        >>> model.predict(X[:4]).shape
        (4,)
        """
        X = check_array(X, "X", n_features=self.protocol.dim)
        return X @ self.coef_

"""ℓ1-constrained high-dimensional mean estimation under non-interactive LDP (Zheng et al. 2017, Alg. 2).

Protocol. Public: a Gaussian projection ``G ~ N(0, 1/p)^{p×d}`` drawn from ``projection_seed``,
``p = ⌈Λ ε sqrt(n)⌉`` (paper), ``m = ⌈18 ln(1/δ)⌉`` groups (paper), the recovery radius ``τ``.

* Client (:func:`mean_report`): user ``i`` with ``||x_i||_2 ≤ 1`` sends ``y_i = clip(G x_i) + N(0, σ² I_p)``
  through the Basic Private Vector channel at (ε, δ).
* Server (:class:`LDPMeanEstimator`): group means ``μ_j`` over ``m`` fixed contiguous index groups,
  median-of-means in ℓ1 (``r_j`` = smallest ℓ1 radius around ``μ_j`` containing ``⌈m/2⌉`` of the
  means, ``u = μ_{argmin r_j}``, Hsu–Sabato), then the linear program
  ``argmin ||z||_1 s.t. ||G z − u||_1 ≤ τ`` (scipy HiGHS).

Privacy [(ε, δ)-LDP]: one release of the Basic Private Vector mechanism (see :mod:`.vectors`) on the
public function ``clip_R(G x)`` of the user's record; ``G`` is public and data-independent.

Deviations from the printed algorithm (documented, each on the safe side or a practical choice):

1. The paper adds ``N(0, 2 log(1.25/δ)/ε²)`` to ``G x`` without clipping — sensitivity 1 for an
   unbounded ``G x``, which is not a valid LDP calibration. We clip ``G x`` to the ball of radius
   ``projection_radius`` (default 1, as in Algorithm 1 lines 2–4) and use sensitivity ``2R``.
2. The paper's recovery radius ``τ = 100 p log(nd/δ)/ε · sqrt(m/n)`` (``tau="paper"``) is a loose
   worst-case constant: at practical ``n`` it exceeds ``||u||_1`` and the LP returns ``z = 0``. The
   default ``tau=None`` uses the *expected* ℓ1 norm of a group mean's error, computable from public
   quantities only: ``τ = tau_scale · p · sqrt(2/π) · sqrt((σ² + R²/p)/(n/m))`` (noise variance σ²
   plus at most ``R²/p`` data variance per projected coordinate). A float sets τ directly.

Zero estimates (the radius swallowing the signal). Whenever ``τ ≥ ||u||_1``, ``z = 0`` satisfies
``||G z − u||_1 ≤ τ`` and is the unique minimiser of ``||z||_1``: the estimate is identically zero
because of the radius, whatever the users' data. :meth:`LDPMeanEstimator.fit` detects this exactly
(``||u||_1 ≤ τ``), returns ``z = 0`` without calling the LP (it is the LP's unique optimum), sets
``zero_by_radius_ = True`` and emits a :class:`RecoveryRadiusWarning`; with ``tau="paper"`` (where
this is the typical outcome at practical ``n``) the warning recommends ``tau=None``. The check reads
only the released reports (post-processing): it costs no privacy.

There is deliberately no protocol-level (pre-data) version of this check: nothing bounds ``||u||_1``
deterministically. ``u`` is one group mean of ``clip_R(G x_i) + e_i``; its signal part has
``ℓ1`` norm at most ``sqrt(p)·R``, but its noise part ``N(0, σ²/|S_j| I_p)`` is unbounded, so for
every τ the event ``τ < ||u||_1`` has positive probability. Only high-probability statements hold
(e.g. Gaussian concentration of the ``sqrt(p)σ/sqrt(|S_j|)``-Lipschitz ``ℓ1`` norm, union over the
``m`` groups), and a construction-time warning based on them could fire on a protocol whose fits
are informative, so the warning is raised where the fact is certain: at fit time.
"""

from __future__ import annotations

import logging
import math
import warnings
import functools
from dataclasses import dataclass, field
from typing import Optional, Union, Tuple

import numpy as np
from scipy import optimize, sparse
from sklearn.base import BaseEstimator

from dpcore.mechanisms import noise
from dpcore._internal.validation import check_count, check_positive
from dpcore.ldp._protocol import ProtocolMixin, ReleaseSpec, check_int, check_reports, projection_matrix
from dpcore.ldp.vectors import GaussianChannel, gaussian_channel
from dpcore.ldp._records import check_record, clip_to, release
from dpcore.ldp._stats import LeafStream, check_finite, feed
from dpcore.exceptions import RecoveryRadiusWarning
from dpcore._internal.types import ArrayLike, Self, RandomState
from dpcore._internal.progress import check_verbose, progress_bar

logger = logging.getLogger(__name__)

__all__ = ["MeanEstimationProtocol", "mean_report", "LDPMeanEstimator", "l1_recovery", "RecoveryRadiusWarning"]


def _expected_error_tau(p: int, sigma: float, radius: float, group: int, scale: float) -> float:
    """Default (``tau=None``) radius: ``scale · p · sqrt(2/π) · sqrt((σ² + R²/p)/group)`` (public)."""
    return scale * p * math.sqrt(2.0 / math.pi) * math.sqrt((sigma**2 + radius**2 / p) / group)


@dataclass(frozen=True)
class MeanEstimationProtocol(ProtocolMixin):
    """Public parameters of Algorithm 2, shared by every client and the server.

    Parameters
    ----------
    dim : int — ``d``.
    n_users : int — ``n`` (public; fixes ``p``, the groups and ``τ``).
    epsilon, delta : per-user (ε, δ)-LDP.
    l1_radius : float — ``Λ ≥ ||E x||_1`` (enters ``p``).
    projection_dim : int, optional — ``p``; default ``⌈Λ ε sqrt(n)⌉`` (paper), capped to ≥ 1.
    n_groups : int, optional — ``m``; default ``⌈18 ln(1/δ)⌉`` (paper), capped at ``n``.
    tau : None, "paper" or float — recovery radius (see module docstring).
    tau_scale : float — multiplier of the default τ rule.
    projection_seed : int — seed of the public ``G``.
    projection_radius : float — ``R``: ``G x`` is clipped to this ball before the noise.
    calibration : "analytic" (default) or "classic" (ε < 1 only).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import ldp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0.0, 1.0, size=(1000, 3)); X /= 2 * X.sum(axis=1, keepdims=True)  # ||x||_1 = 0.5
    >>> proto = ldp.MeanEstimationProtocol(dim=3, n_users=1000, epsilon=8.0, delta=1e-6, n_groups=1)
    >>> proto.budget().epsilon, proto.budget().n_releases
    (8.0, 1)
    >>> proto.projection.shape[1]                          # the public projection G: (p, dim)
    3
    """

    dim: int
    n_users: int
    epsilon: float
    delta: float
    l1_radius: float = 1.0
    projection_dim: Optional[int] = None
    n_groups: Optional[int] = None
    tau: Union[None, str, float] = None
    tau_scale: float = 1.0
    projection_seed: int = 0
    projection_radius: float = 1.0
    calibration: str = "analytic"
    p: int = field(init=False)
    m: int = field(init=False)
    tau_: float = field(init=False)
    channel: GaussianChannel = field(init=False, repr=False)
    _G: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        s = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731
        self._check_common()
        s("l1_radius", check_positive(self.l1_radius, "l1_radius"))
        s("tau_scale", check_positive(self.tau_scale, "tau_scale"))
        s("projection_radius", check_positive(self.projection_radius, "projection_radius"))
        check_int(self.projection_seed, "projection_seed", 0)
        p = self.projection_dim
        if p is None:
            pf = self.l1_radius * self.epsilon * math.sqrt(self.n_users)
            if not pf <= 2.0**40:
                raise ValueError(
                    f"epsilon={self.epsilon!r}, l1_radius={self.l1_radius!r}, n_users={self.n_users}: the default "
                    f"projection_dim ceil(l1_radius·epsilon·sqrt(n_users)) = {pf:.3g} is too large; pass projection_dim")
            p = max(1, math.ceil(pf))
        else:
            p = check_int(p, "projection_dim")
        check_count(p * self.dim, "projection_dim")  # the public p × dim projection matrix must fit in memory
        m = self.n_groups
        m = math.ceil(18.0 * math.log(1.0 / self.delta)) if m is None else check_int(m, "n_groups")
        m = min(m, self.n_users)
        s("p", p)
        s("m", m)
        ch = gaussian_channel(p, self.epsilon, self.delta, data_norm=self.projection_radius,
                              calibration=self.calibration)
        s("channel", ch)
        group = self.n_users // m
        if self.tau is None:
            tau = _expected_error_tau(p, ch.sigma, self.projection_radius, group, self.tau_scale)
        elif isinstance(self.tau, str):
            if self.tau != "paper":
                raise ValueError(f"tau must be None, 'paper' or a positive float, got {self.tau!r}")
            tau = 100.0 * p * math.log(self.n_users * self.dim / self.delta) / self.epsilon * math.sqrt(
                m / self.n_users)
        else:
            tau = check_positive(self.tau, "tau")
        s("tau_", tau)
        s("_G", projection_matrix(self.projection_seed, p, self.dim))
        self.check_budget()

    @property
    def projection(self) -> np.ndarray:
        """The public projection ``G`` (p × d), read-only."""
        G = self._G.view()
        G.flags.writeable = False
        return G

    def releases(self) -> tuple[ReleaseSpec, ...]:
        return (ReleaseSpec("y (projected x)", "clip_R(G x)", self.channel, 1),)


def mean_report(x: ArrayLike, protocol: MeanEstimationProtocol, *, clip: bool = False,
                random_state: RandomState = None) -> np.ndarray:
    """Client side of Algorithm 2: what ONE user sends — ``clip_R(G x) + N(0, σ² I_p)``, shape ``(p,)``.

    ``x`` (shape ``(d,)``) must satisfy ``||x||_2 ≤ 1`` (``ValueError`` otherwise unless ``clip=True``).
    Guarantee: (ε, δ)-LDP (one Basic Private Vector release of a public function of ``x``; the
    projected vector is always clipped to the ball of radius ``R``, so the sensitivity ``2R`` holds).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import ldp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0.0, 1.0, size=(1000, 3)); X /= 2 * X.sum(axis=1, keepdims=True)  # ||x||_1 = 0.5
    >>> proto = ldp.MeanEstimationProtocol(dim=3, n_users=1000, epsilon=8.0, delta=1e-6, n_groups=1)
    >>> report = ldp.mean_report(X[0], proto, random_state=0)   # on the user's device
    >>> report.shape == (proto.projection.shape[0],)
    True
    """
    if not isinstance(protocol, MeanEstimationProtocol):
        raise TypeError(f"protocol must be a MeanEstimationProtocol, got {type(protocol).__name__}")
    xv = check_record(x, "x", protocol.dim, 1.0, clip)
    v = clip_to(protocol._G @ xv, protocol.projection_radius)
    return release(v, protocol.channel, noise.check_random_state(random_state))


def group_bounds(n: int, m: int) -> np.ndarray:
    """Boundaries of the ``m`` contiguous groups of ``np.array_split(range(n), m)``: group ``j`` is
    ``[bounds[j], bounds[j+1])`` (public: a function of ``n_users`` and ``n_groups`` only)."""
    q, r = divmod(n, m)
    j = np.arange(m + 1)
    return j * q + np.minimum(j, r)


def _group_sum_stat(bounds: np.ndarray, acc, start: int, arrays) -> None:
    """Leaf statistic of Algorithm 2: the column sums of the leaf's rows, per group they fall in."""
    (Y,) = arrays
    check_finite((Y,), ("reports",))
    end = start + Y.shape[0]
    j = int(np.searchsorted(bounds, start, side="right")) - 1
    while j < bounds.size - 1 and bounds[j] < end:
        lo, hi = max(int(bounds[j]), start), min(int(bounds[j + 1]), end)
        acc["group_sums"].add(Y[lo - start:hi - start].sum(axis=0), index=j)
        j += 1


def median_of_means_l1(Y: np.ndarray, m: int):
    """Hsu–Sabato median-of-means in ℓ1 over ``m`` contiguous groups. Returns (u, j*, radii, means)."""
    stream = LeafStream(functools.partial(_group_sum_stat, group_bounds(Y.shape[0], m)), {"group_sums": (m, Y.shape[1])})
    stream.update(np.asarray(Y, dtype=np.float64))
    return median_of_means_from_sums(stream.totals()["group_sums"].value(), group_bounds(Y.shape[0], m))


def median_of_means_from_sums(sums: np.ndarray, bounds: np.ndarray):
    """Median-of-means in ℓ1 from the exact per-group sums (``sums[j]`` over group ``j``)."""
    m = sums.shape[0]
    means = sums / np.diff(bounds)[:, None].astype(np.float64)
    D = np.abs(means[:, None, :] - means[None, :, :]).sum(axis=2)
    need = math.ceil(m / 2)  # |B(μ_j, r) ∩ M| ≥ m/2, μ_j itself included
    radii = np.sort(D, axis=1)[:, need - 1]
    j = int(np.argmin(radii))
    return means[j], j, radii, means


def l1_recovery(G: np.ndarray, u: np.ndarray, tau: float) -> Tuple[np.ndarray, float]:
    """``argmin ||z||_1`` subject to ``||G z − u||_1 ≤ τ``, solved as an LP (HiGHS). Variables ``[z⁺, z⁻, t]``.

    If the constraint is infeasible (possible when p > d), τ is raised to the smallest feasible
    ``min ||Gz − u||_1`` (times 1 + 1e-9). Returns ``(z, tau_used)``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore.ldp import l1_recovery
    >>> z, tau = l1_recovery(np.eye(3), np.array([0.5, 0.0, 0.0]), 0.1)
    >>> np.round(z, 6), tau
    (array([0.4, 0. , 0. ]), 0.1)
    """
    p, d = G.shape
    Gs = sparse.csr_matrix(G)
    I = sparse.identity(p, format="csr")
    # G z⁺ − G z⁻ − t ≤ u ;  −G z⁺ + G z⁻ − t ≤ −u ;  Σ t ≤ τ
    A = sparse.vstack([sparse.hstack([Gs, -Gs, -I]), sparse.hstack([-Gs, Gs, -I]),
                       sparse.hstack([sparse.csr_matrix((1, 2 * d)), sparse.csr_matrix(np.ones((1, p)))])]).tocsr()
    c = np.concatenate([np.ones(2 * d), np.zeros(p)])

    def solve(tau_):
        b = np.concatenate([u, -u, [tau_]])
        return optimize.linprog(c, A_ub=A, b_ub=b, bounds=(0, None), method="highs")

    res = solve(tau)
    if res.status == 2:  # infeasible: find the smallest feasible radius
        c2 = np.concatenate([np.zeros(2 * d), np.ones(p)])
        r2 = optimize.linprog(c2, A_ub=A[:-1], b_ub=np.concatenate([u, -u]), bounds=(0, None), method="highs")
        if r2.status != 0:
            raise RuntimeError(f"l1 recovery failed: {r2.message}")
        tau = float(r2.fun) * (1 + 1e-9) + 1e-12
        res = solve(tau)
    if res.status != 0:
        raise RuntimeError(f"l1 recovery LP failed: {res.message}")
    x = res.x
    return x[:d] - x[d:2 * d], tau


class LDPMeanEstimator(BaseEstimator):
    """Server side of Algorithm 2: estimate the mean from the users' reports only.

    Parameters
    ----------
    protocol : MeanEstimationProtocol
        The public parameters the reports were produced with (``G``, ``m``, ``τ``).
    verbose : bool or int, default=False
        Show tqdm progress bars (stderr) during long calls; ``False``/``0`` shows nothing. Progress and the
        :mod:`logging` messages are for the curator only and never part of a release.
        The bar counts the two stages of :meth:`fit` (median of means, ℓ1 recovery LP).

    Attributes
    ----------
    mean_ : numpy.ndarray, shape (d,)
        The recovered mean ``z`` (also ``coef_``).
    projected_mean_ : numpy.ndarray, shape (p,)
        ``u``, the ℓ1 median-of-means in projected space.
    selected_group_ : int
        ``j*``, the index of the selected group.
    tau_used_ : float
        Recovery radius actually used (``protocol.tau_``, or the smallest feasible radius if the
        constraint was infeasible).
    zero_by_radius_ : bool
        True when ``tau_used_ ≥ ||u||_1``: ``z = 0`` is feasible, so the estimate is identically zero
        because of the radius (a :class:`RecoveryRadiusWarning` was emitted).

    Warns
    -----
    RecoveryRadiusWarning
        From :meth:`fit`, when ``zero_by_radius_`` is True (see the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import ldp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0.0, 1.0, size=(1000, 3)); X /= 2 * X.sum(axis=1, keepdims=True)  # ||x||_1 = 0.5
    >>> proto = ldp.MeanEstimationProtocol(dim=3, n_users=1000, epsilon=8.0, delta=1e-6, n_groups=1)
    >>> reports = ldp.simulate(X, None, proto, random_state=0)    # all users (experiments only)
    >>> est = ldp.LDPMeanEstimator(proto).fit(reports)
    >>> est.mean_.shape, bool(est.zero_by_radius_)
    ((3,), False)
    """

    def __init__(self, protocol: MeanEstimationProtocol, *, verbose: bool | int = False) -> None:
        self.protocol = protocol
        self.verbose = verbose

    def fit(self, reports: ArrayLike) -> Self:
        """Estimate the mean from the users' reports.

        Parameters
        ----------
        reports : array_like or dask array/DataFrame, shape (n_users, p)
            One row per user, as returned by :func:`mean_report` (or :func:`simulate`).

        Returns
        -------
        LDPMeanEstimator
            ``self``, fitted.

        Raises
        ------
        TypeError
            If ``protocol`` is not a :class:`MeanEstimationProtocol` or ``reports`` is not numeric.
        ValueError
            If ``reports`` has the wrong shape or contains NaN/inf.

        Warns
        -----
        RecoveryRadiusWarning
            If ``τ ≥ ||u||_1``, i.e. the estimate is identically zero because of the radius.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import ldp
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(0.0, 1.0, size=(1000, 3)); X /= 2 * X.sum(axis=1, keepdims=True)
        >>> proto = ldp.MeanEstimationProtocol(dim=3, n_users=1000, epsilon=8.0, delta=1e-6, n_groups=1)
        >>> est = ldp.LDPMeanEstimator(proto).fit(ldp.simulate(X, None, proto, random_state=0))
        >>> est.mean_.shape
        (3,)
        """
        self._reset()
        return self._consume(reports, partial=False)

    def partial_fit(self, reports: ArrayLike) -> Self:
        """Add a batch of reports (the next users in index order); estimate once all ``n_users`` have arrived.

        Accumulates the exact per-group sums (:mod:`dpcore.ldp._stats`); after the batches that together
        hold all ``n_users`` reports, the fitted attributes are bit-identical to :meth:`fit` on their
        concatenation. Before that only ``n_reports_seen_`` is updated (the median of means needs every
        group complete). ``fit`` resets the accumulated sums.

        Parameters
        ----------
        reports : array_like or dask array/DataFrame, shape (n_batch, p)
            The next ``n_batch`` users' reports, in the same order as in the full set (groups are
            contiguous index ranges).

        Returns
        -------
        LDPMeanEstimator
            ``self``.

        Raises
        ------
        ValueError
            If the batches together exceed ``n_users`` rows, or a batch has the wrong shape or NaN/inf.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import ldp
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(0.0, 1.0, size=(1000, 3)); X /= 2 * X.sum(axis=1, keepdims=True)
        >>> proto = ldp.MeanEstimationProtocol(dim=3, n_users=1000, epsilon=8.0, delta=1e-6, n_groups=1)
        >>> Y = ldp.simulate(X, None, proto, random_state=0)
        >>> est = ldp.LDPMeanEstimator(proto)
        >>> for batch in np.array_split(Y, 3):
        ...     est = est.partial_fit(batch)
        >>> bool(np.array_equal(est.mean_, ldp.LDPMeanEstimator(proto).fit(Y).mean_))
        True
        """
        if getattr(self, "_stream", None) is None:
            self._reset()
        return self._consume(reports, partial=True)

    def _reset(self) -> None:
        proto = self.protocol
        if not isinstance(proto, MeanEstimationProtocol):
            raise TypeError(f"protocol must be a MeanEstimationProtocol, got {type(proto).__name__}")
        self._bounds = group_bounds(proto.n_users, proto.m)
        self._stream = LeafStream(functools.partial(_group_sum_stat, self._bounds), {"group_sums": (proto.m, proto.p)})
        self.n_reports_seen_ = 0

    def _consume(self, reports, *, partial: bool) -> Self:
        proto = self.protocol
        if not isinstance(proto, MeanEstimationProtocol):
            raise TypeError(f"protocol must be a MeanEstimationProtocol, got {type(proto).__name__}")
        check_verbose(self.verbose)
        feed(self._stream, (reports,), ("reports",), ((proto.p,),), proto.n_users, partial=partial)
        self.n_reports_seen_ = self._stream.n_rows
        if self.n_reports_seen_ < proto.n_users:
            return self
        with progress_bar(self.verbose, total=2, desc="LDPMeanEstimator", unit="stage") as bar:
            u, j, _, _ = median_of_means_from_sums(self._stream.totals()["group_sums"].value(), self._bounds)
            bar.update(1)
            u_l1 = float(np.abs(u).sum())
            zero = u_l1 <= proto.tau_
            if zero:  # z = 0 is feasible, hence the LP's unique minimiser of ||z||_1
                z, tau = np.zeros(proto.dim), proto.tau_
                warnings.warn(_zero_message(proto, u_l1), RecoveryRadiusWarning, stacklevel=3)
            else:
                z, tau = l1_recovery(proto._G, u, proto.tau_)
            bar.update(1)
        logger.info("LDPMeanEstimator: group %d of %d selected, recovery radius %.4g%s", j, proto.m, tau,
                    " (estimate zero by the radius)" if zero else "")
        self.mean_ = z
        self.coef_ = z
        self.projected_mean_ = u
        self.selected_group_ = j
        self.tau_used_ = tau
        self.zero_by_radius_ = bool(zero)
        return self


def _zero_message(proto: MeanEstimationProtocol, u_l1: float) -> str:
    head = (f"LDPMeanEstimator: the recovery radius tau_={proto.tau_:.4g} is >= ||u||_1={u_l1:.4g} (the l1 norm of "
            "the median-of-means vector), so z = 0 satisfies ||G z - u||_1 <= tau and the estimate is identically "
            "zero because of the radius, whatever the data (zero_by_radius_=True). ")
    if isinstance(proto.tau, str):  # "paper"
        default = _expected_error_tau(proto.p, proto.channel.sigma, proto.projection_radius,
                                      proto.n_users // proto.m, proto.tau_scale)
        return head + ("tau='paper' is a worst-case constant far above the noise level at practical n; use tau=None "
                       f"(the default expected-error radius, here {default:.4g}).")
    if proto.tau is None:
        return head + ("Even the default expected-error radius exceeds ||u||_1: the noise of a group mean is as large "
                       "as the projected signal. More users, a larger epsilon, fewer groups (n_groups) or a smaller "
                       "tau_scale are needed for an informative estimate.")
    return head + "Use a smaller tau, or tau=None (the default expected-error radius)."

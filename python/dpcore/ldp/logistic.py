"""Smooth GLM / logistic regression under non-interactive LDP via Chebyshev expansion (Zheng et al. 2017, Alg. 5–6).

Loss ``ℓ(w; x, y) = −y h₁(r xᵀw) + h₂(r xᵀw)`` over ``w ∈ B₂(1)`` (θ = r w); logistic:
``h₁(u) = u/2``, ``h₂(u) = u/2 + ln(1 + e^{−u})``, so ``∇ℓ = r (h₂'(r s) − y h₁'(r s)) x`` with
``s = xᵀw ∈ [−1, 1]``. The magnitudes ``f_i(s) = h_i'(r s)`` are replaced by their degree-``p``
truncated Chebyshev series ``½a₀ + Σ a_k T_k(s)``, ``a_k = (2/π)∫ f T_k /sqrt(1−s²)`` (computed by
Gauss–Chebyshev quadrature with 512 nodes), rewritten in the power basis ``Σ_k c_ik s^k``.
(The paper expands in ``u = r s`` and multiplies by ``r^{k+1}``; expanding in ``s`` is the same
estimator with the Chebyshev series on the right interval.)

Collection (Algorithm 5, client :func:`logistic_report`), per user, all Basic Private Vector releases.
The paper (``terms="all"``) sends

* ``z₀ = x + noise`` at ``(ε/4, δ/4)``;
* ``p + 1`` copies ``zy_k = y + noise`` (``k = 0..p``) at ``(ε/(4(p+1)), δ/(4(p+1)))`` each;
* ``p(p+1)/2`` copies ``z_j = x + noise`` at ``(ε/(p(p+1)), δ/(p(p+1)))`` each, in blocks: block ``k``
  (``k = 1..p``, ``k`` copies) feeds the monomial ``(wᵀx)^k``.

Copies multiplied by zero (default ``terms="nonzero"``). In the estimator below, ``zy_k`` only enters
through ``c₁ₖ zy_k`` and block ``k`` only through ``(c₂ₖ − c₁ₖ zy_k) t_k``. For the logistic loss
``h₁' ≡ ½`` is constant, so ``c₁ = (½, 0, …, 0)``, and ``h₂'(rs) = ½ − 1/(1 + e^{rs}) = ½ tanh(rs/2)``
is odd, so its Chebyshev series has only odd terms: ``T_k`` is even for even ``k`` and
``∫ f T_k /sqrt(1−s²) = 0`` — these coefficients are *exactly* zero (dpcore computes only the odd ones and
sets the others to 0.0, instead of keeping quadrature round-off of order 1e-17). So ``zy_k`` for ``k ≥ 1`` and
the blocks of even ``k`` are multiplied by exactly 0 and carry no information into the estimator: at ``p = 2``
the paper spends 2 of 3 y-copies and 2 of 3 x-copies on them. With ``terms="nonzero"`` a user sends only

* ``z₀`` at ``(ε/4, δ/4)`` (unchanged);
* one copy ``zy_k`` per ``k`` in ``y_degrees = {k : c₁ₖ ≠ 0} = {0}``, sharing ``(ε/4, δ/4)`` equally;
* the blocks ``k`` in ``x_degrees = {k ≥ 1 : c₁ₖ ≠ 0 or c₂ₖ ≠ 0}`` = odd ``k ≤ p`` (``Σ k`` copies),
  sharing ``(ε/2, δ/2)`` equally.

The paper's three shares (¼, ¼, ½) are kept; only the number of copies they are divided among changes.
The estimator is the paper's estimator with the zero terms dropped, so it has the same expectation
(term-by-term identical for every non-zero term); each remaining copy simply has less noise. With
``p = 2`` this gives one y-copy at ε/4 (paper: ε/12) and one x-copy at ε/2 (paper: ε/6).

Privacy [(ε, δ)-LDP, basic composition as in the paper (Lemma 2, Theorem 4)]. ``terms="all"``:
``ε/4 + (p+1)·ε/(4(p+1)) + (p(p+1)/2)·ε/(p(p+1)) = ε/4 + ε/4 + ε/2 = ε`` and the same for δ;
``terms="nonzero"``: ``ε/4 + |y_degrees|·ε/(4|y_degrees|) + n_x·ε/(2n_x) = ε``. The per-copy budgets are
rounded down (:func:`~dpcore.ldp.vectors.split_budget`) so the exact rational sum never exceeds (ε, δ);
:meth:`LogisticProtocol.check_budget` verifies the sum over the copies actually sent (``n_x_copies``,
``n_y_copies``), so a protocol that would send one copy too many raises :class:`ProtocolBudgetError`.

Learning (Algorithm 6, server :class:`LDPLogisticRegression`): user ``s`` gives the unbiased estimate
``G̃(w) = r Σ_k (c₂ₖ − c₁ₖ zy_k) t_k z₀``, ``t₀ = 1``, ``t_k = Π_{i in block k} wᵀz_i`` over the
``k`` fresh copies of block ``k``, so ``E G̃ = r m̂(w; x, y) x`` (independent noises); terms with
``c₁ₖ = c₂ₖ = 0`` are skipped (they are 0).
Deviation: instead of SIGM (Dvurechensky & Gasnikov 2016) we run one pass of mini-batch projected
stochastic gradient on ``B₂(1)`` with iterate averaging — the same ``O(σ/√k) + γ`` guarantee for an
inexact stochastic oracle on a convex smooth objective, and simpler to certify. Each report is used once
(as in the paper, one user per iteration when ``batch_size=1``).
"""

from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Optional, Tuple, Callable

import numpy as np
from numpy.polynomial import chebyshev as C
from sklearn.base import BaseEstimator

from dpcore.mechanisms import noise
from dpcore._internal.validation import check_array, check_positive
from dpcore.ldp._protocol import ProtocolMixin, ReleaseSpec, check_int
from dpcore.ldp.regression import check_label
from dpcore.ldp.vectors import GaussianChannel, gaussian_channel, split_budget
from dpcore.ldp._records import check_record, release, release_rows
from dpcore.ldp._stats import LeafStream, check_finite, reduce_blocks
from dpcore._internal.types import ArrayLike, NDArray, Self, RandomState
from dpcore._internal.progress import check_verbose, progress_bar

logger = logging.getLogger(__name__)

__all__ = ["LogisticProtocol", "LogisticReports", "logistic_report", "LDPLogisticRegression",
           "chebyshev_coefficients", "TERMS"]


def chebyshev_coefficients(f: Callable[[np.ndarray], np.ndarray], degree: int, n_nodes: int = 512,
                           parity: Optional[str] = None) -> np.ndarray:
    """Power-basis coefficients ``c_0..c_p`` of the degree-``p`` truncated Chebyshev series of ``f`` on [−1, 1].

    ``parity="odd"`` / ``"even"`` declares ``f`` odd / even: the Chebyshev (and hence power-basis)
    coefficients of the other parity are then exactly zero and are set to ``0.0`` instead of quadrature
    round-off. ``None`` computes every coefficient.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore.ldp import chebyshev_coefficients
    >>> np.round(chebyshev_coefficients(np.exp, 3), 4)
    array([0.9946, 0.9973, 0.543 , 0.1773])
    >>> np.round(chebyshev_coefficients(lambda t: t ** 3, 3, parity="odd"), 12)
    array([0., 0., 0., 1.])
    """
    if parity not in (None, "odd", "even"):
        raise ValueError(f"parity must be None, 'odd' or 'even', got {parity!r}")
    theta = np.pi * (np.arange(n_nodes) + 0.5) / n_nodes
    fx = f(np.cos(theta))
    a = np.array([2.0 / n_nodes * np.sum(fx * np.cos(k * theta)) for k in range(degree + 1)])
    a[0] /= 2.0
    keep = np.ones(degree + 1, dtype=bool)
    if parity is not None:
        keep = (np.arange(degree + 1) % 2 == 1) == (parity == "odd")
        a[~keep] = 0.0
    c = C.cheb2poly(a)
    out = np.zeros(degree + 1)
    out[: c.size] = c
    out[~keep] = 0.0  # T_k has the parity of k, so cheb2poly keeps these 0 up to round-off
    return out


#: Values of :attr:`LogisticProtocol.terms`.
TERMS = ("nonzero", "all")


@dataclass(frozen=True)
class LogisticProtocol(ProtocolMixin):
    """Public parameters of Algorithms 5–6 for logistic regression.

    Parameters
    ----------
    dim, n_users, epsilon, delta : ``d``, ``n`` and the per-user (ε, δ)-LDP.
    degree : int — Chebyshev degree ``p``.
    r : float — parameter radius (θ = r w, ``w ∈ B₂(1)``).
    n_x_copies, n_y_copies : optional overrides of the number of x- and y-copies a user sends (for
        checks; the per-copy budgets are always computed from the required counts, so extra copies
        exceed (ε, δ) and raise :class:`ProtocolBudgetError`).
    calibration : "analytic" | "classic".
    terms : "nonzero" (default) | "all" — send copies only for the Chebyshev terms whose coefficients
        are non-zero (module docstring), or every copy of the paper's Algorithm 5.

    Attributes
    ----------
    c1, c2 : power-basis coefficients of ``h₁'(r s)`` and ``h₂'(r s)`` (exact zeros by parity).
    y_degrees : degrees ``k`` whose ``zy_k`` is sent (column ``i`` of ``zy`` is ``zy_{y_degrees[i]}``).
    x_degrees : degrees ``k ≥ 1`` whose block of ``k`` x-copies is sent, in order (columns of ``zx``).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import ldp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.5, 0.5, size=(500, 3)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> proto = ldp.LogisticProtocol(dim=3, n_users=500, epsilon=8.0, delta=1e-6)
    >>> b = proto.budget()              # what one user sends, composed
    >>> b.epsilon, b.n_releases, b.composition
    (8.0, 3, 'basic')
    """

    dim: int
    n_users: int
    epsilon: float
    delta: float
    degree: int = 2
    r: float = 1.0
    n_x_copies: Optional[int] = None
    n_y_copies: Optional[int] = None
    calibration: str = "analytic"
    terms: str = "nonzero"
    c1: np.ndarray = field(init=False, repr=False, compare=False)
    c2: np.ndarray = field(init=False, repr=False, compare=False)
    z0_channel: GaussianChannel = field(init=False, repr=False)
    y_channel: GaussianChannel = field(init=False, repr=False)
    x_channel: GaussianChannel = field(init=False, repr=False)
    y_degrees: Tuple[int, ...] = field(init=False)
    x_degrees: Tuple[int, ...] = field(init=False)

    def __post_init__(self):
        s = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731
        self._check_common()
        p = check_int(self.degree, "degree")
        s("degree", p)
        s("r", check_positive(self.r, "r"))
        if self.terms not in TERMS:
            raise ValueError(f"terms must be one of {TERMS}, got {self.terms!r}")
        r = self.r
        # h₁' ≡ ½ (constant); h₂'(rs) = ½ − 1/(1 + e^{rs}) = ½ tanh(rs/2) is odd.
        c1 = np.zeros(p + 1)
        c1[0] = 0.5
        c2 = chebyshev_coefficients(lambda t: 0.5 * np.tanh(0.5 * r * t), p, parity="odd")
        s("c1", c1)
        s("c2", c2)
        if self.terms == "all":
            yd, xd = tuple(range(p + 1)), tuple(range(1, p + 1))
        else:
            yd = tuple(k for k in range(p + 1) if c1[k] != 0.0)
            xd = tuple(k for k in range(1, p + 1) if c1[k] != 0.0 or c2[k] != 0.0)
        s("y_degrees", yd)
        s("x_degrees", xd)
        kx, ky = sum(xd), len(yd)
        nx = kx if self.n_x_copies is None else check_int(self.n_x_copies, "n_x_copies")
        ny = ky if self.n_y_copies is None else check_int(self.n_y_copies, "n_y_copies")
        if nx < kx or ny < ky:
            raise ValueError(f"n_x_copies/n_y_copies: degree {p} with terms={self.terms!r} needs {kx} x-copies "
                             f"and {ky} y-copies, got {nx} and {ny}")
        s("n_x_copies", nx)
        s("n_y_copies", ny)
        eps, dl, cal = self.epsilon, self.delta, self.calibration
        s("z0_channel", gaussian_channel(self.dim, split_budget(eps, Fraction(1, 4), 1),
                                         split_budget(dl, Fraction(1, 4), 1), calibration=cal))
        s("y_channel", gaussian_channel(1, split_budget(eps, Fraction(1, 4), ky),
                                        split_budget(dl, Fraction(1, 4), ky), calibration=cal))
        # kx ≥ 1 always: x_degrees contains k = 1 (c₂₁ = r/4·(1 − O(r²)) ≠ 0 for the logistic loss); the
        # guard keeps the split well-defined for any loss.
        s("x_channel", gaussian_channel(self.dim, split_budget(eps, Fraction(1, 2), max(kx, 1)),
                                        split_budget(dl, Fraction(1, 2), max(kx, 1)), calibration=cal))
        self.check_budget()

    def releases(self) -> tuple[ReleaseSpec, ...]:
        return (ReleaseSpec("z0 (x)", "x", self.z0_channel, 1),
                ReleaseSpec("zy (y copies)", "y", self.y_channel, self.n_y_copies),
                ReleaseSpec("z (x copies)", "x", self.x_channel, self.n_x_copies))


@dataclass
class LogisticReports:
    """Reports of ``n`` users: ``z0`` (n, d), ``zy`` (n, n_y_copies), ``zx`` (n, n_x_copies, d).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import ldp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.5, 0.5, size=(500, 3)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> proto = ldp.LogisticProtocol(dim=3, n_users=500, epsilon=8.0, delta=1e-6)
    >>> reports = ldp.simulate(X, y, proto, random_state=0)
    >>> type(reports).__name__, reports.z0.shape, reports.zx.shape
    ('LogisticReports', (500, 3), (500, 1, 3))
    """

    z0: np.ndarray
    zy: np.ndarray
    zx: np.ndarray


def logistic_report(x: ArrayLike, y: float, protocol: LogisticProtocol, *, clip: bool = False,
                    random_state: RandomState = None) -> LogisticReports:
    """Client side of Algorithm 5: what ONE user sends (a :class:`LogisticReports` with one row).

    ``||x||_2 ≤ 1`` and ``y ∈ [−1, 1]`` (labels ±1) are required (``ValueError`` otherwise unless ``clip=True``).
    Guarantee: (ε, δ)-LDP by basic composition of the ``1 + n_y_copies + n_x_copies`` Basic Private
    Vector releases, whose budgets sum to at most (ε, δ) (checked by the protocol).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import ldp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.5, 0.5, size=(500, 3)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> proto = ldp.LogisticProtocol(dim=3, n_users=500, epsilon=8.0, delta=1e-6)
    >>> one = ldp.logistic_report(X[0], y[0], proto, random_state=0)   # on the user's device
    >>> one.z0.shape, one.zy.shape, one.zx.shape
    ((1, 3), (1, 1), (1, 1, 3))
    """
    if not isinstance(protocol, LogisticProtocol):
        raise TypeError(f"protocol must be a LogisticProtocol, got {type(protocol).__name__}")
    xv = check_record(x, "x", protocol.dim, 1.0, clip)
    yv = check_label(y, "y", 1.0, clip)
    rng = noise.check_random_state(random_state)
    z0 = release(xv, protocol.z0_channel, rng)
    zy = np.array([release(yv, protocol.y_channel, rng)[0] for _ in range(protocol.n_y_copies)])
    zx = np.stack([release(xv, protocol.x_channel, rng) for _ in range(protocol.n_x_copies)])
    return LogisticReports(z0[None, :], zy[None, :], zx[None, :, :])


def simulate_logistic_reports(X, y, protocol: LogisticProtocol, rng, *, bar=None) -> LogisticReports:
    n, d = X.shape
    z0 = release_rows(X, protocol.z0_channel, rng)
    if bar is not None:
        bar.update(1)
    zy = release_rows(np.repeat(y[:, None], protocol.n_y_copies, axis=0).reshape(-1, 1),
                       protocol.y_channel, rng).reshape(n, protocol.n_y_copies)
    if bar is not None:
        bar.update(1)
    zx = release_rows(np.repeat(X, protocol.n_x_copies, axis=0), protocol.x_channel, rng)
    if bar is not None:
        bar.update(1)
    return LogisticReports(z0, zy, zx.reshape(n, protocol.n_x_copies, d))


def _check_reports(reports, proto: LogisticProtocol):
    if not isinstance(reports, LogisticReports):
        raise TypeError(f"reports must be LogisticReports, got {type(reports).__name__}")
    n, d = proto.n_users, proto.dim
    shapes = {"z0": (n, d), "zy": (n, proto.n_y_copies), "zx": (n, proto.n_x_copies, d)}
    out = {}
    for name, shape in shapes.items():
        a = np.asarray(getattr(reports, name), dtype=np.float64)
        if a.shape != shape:
            raise ValueError(f"reports.{name} must have shape {shape} for this protocol, got {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError(f"reports.{name} contains NaN or infinite values")
        out[name] = a
    return out["z0"], out["zy"], out["zx"]


def _gradients(w, z0, zy, zx, proto: LogisticProtocol) -> np.ndarray:
    """Algorithm 6 line 8 for a batch of users: unbiased ``r m̂(w; x, y) x`` estimates, shape (b, d).

    ``m̂ = Σ_k (c₂ₖ − c₁ₖ zy_k) t_k`` over the degrees with a non-zero coefficient; a degree whose
    ``zy_k`` is not sent has ``c₁ₖ = 0`` and one whose block is not sent has ``c₁ₖ = c₂ₖ = 0``."""
    proj = zx @ w  # (b, K)
    ycol = {k: i for i, k in enumerate(proto.y_degrees)}
    t = {0: 1.0}
    lo = 0
    for k in proto.x_degrees:
        t[k] = np.prod(proj[:, lo:lo + k], axis=1)
        lo += k
    mag = np.zeros(z0.shape[0])
    for k, t_k in t.items():
        coef = proto.c2[k] - proto.c1[k] * zy[:, ycol[k]] if k in ycol else proto.c2[k]
        mag = mag + coef * t_k
    return proto.r * mag[:, None] * z0


def _g0_stat(proto: LogisticProtocol, acc, start: int, arrays) -> None:
    """Leaf statistic of the step rule: ``Σ_i ||G̃_i(0)||²`` over the leaf (see :mod:`dpcore.ldp._stats`)."""
    z0, zy, zx = arrays
    check_finite(arrays, ("reports.z0", "reports.zy", "reports.zx"))
    g0 = _gradients(np.zeros(proto.dim), z0, zy, zx, proto)
    acc["g0sq"].add(np.sum(g0**2))


def _sgd_init(d: int) -> dict:
    return {"w": np.zeros(d), "w_sum": np.zeros(d), "t": 0, "seen": 0, "carry": None}


def _sgd_consume(state: dict, z0, zy, zx, *, proto: LogisticProtocol, b: int, eta: float, T: int) -> dict:
    """Projected SGD steps over the next reports in user order (Algorithm 6 as implemented here).

    Batch ``t`` is users ``[t·b, (t+1)·b)`` whatever the blocks are: rows left over at the end of a block
    (< ``b``) are carried into the next call. Pure function of ``(state, rows)``; the state is the iterate,
    the running sum of iterates, the step count and the carried rows."""
    check_finite((z0, zy, zx), ("reports.z0", "reports.zy", "reports.zx"))
    seen = state["seen"] + z0.shape[0]
    if state["carry"] is not None:
        c0, cy, cx = state["carry"]
        z0, zy, zx = np.concatenate([c0, z0]), np.concatenate([cy, zy]), np.concatenate([cx, zx])
    w, w_sum, t = state["w"].copy(), state["w_sum"].copy(), state["t"]
    k = z0.shape[0]
    steps = min(k // b, T - t)
    for s in range(steps):
        sl = slice(s * b, (s + 1) * b)
        g = _gradients(w, z0[sl], zy[sl], zx[sl], proto).mean(axis=0)
        w = w - eta * g
        nw = np.linalg.norm(w)
        if nw > 1.0:
            w /= nw
        w_sum += w
    t += steps
    rest = steps * b
    carry = (z0[rest:].copy(), zy[rest:].copy(), zx[rest:].copy()) if t < T and rest < k else None
    return {"w": w, "w_sum": w_sum, "t": t, "seen": seen, "carry": carry}


def _prepare_reports(reports, proto: LogisticProtocol, *, partial: bool, seen: int):
    """Validate a :class:`LogisticReports` (numpy or Dask fields). Returns ``(is_dask, (z0, zy, zx))``."""
    from dpcore._internal.dask import as_dask_array, is_dask_collection

    if not isinstance(reports, LogisticReports):
        raise TypeError(f"reports must be LogisticReports, got {type(reports).__name__}")
    d = proto.dim
    tails = {"z0": (d,), "zy": (proto.n_y_copies,), "zx": (proto.n_x_copies, d)}
    fields = [getattr(reports, k) for k in tails]
    if not any(is_dask_collection(f) for f in fields):
        if not partial:
            return False, _check_reports(reports, proto)
        out = []
        for name, a in zip(tails, fields):
            a = np.asarray(a, dtype=np.float64)
            if a.ndim < 1 or a.shape[1:] != tails[name]:
                raise ValueError(f"reports.{name} must have shape (n_batch, {', '.join(map(str, tails[name]))}) "
                                 f"for this protocol, got {a.shape}")
            out.append(a)
    else:
        import dask.array as da

        out = []
        for name, a in zip(tails, fields):
            a = as_dask_array(a, f"reports.{name}", ndim=1 + len(tails[name])) if is_dask_collection(a) \
                else da.from_array(np.asarray(a, dtype=np.float64))
            if a.shape[1:] != tails[name]:
                raise ValueError(f"reports.{name} must have shape (n_users, {', '.join(map(str, tails[name]))}) "
                                 f"for this protocol, got {a.shape}")
            out.append(a)
        out = [out[0]] + [a.rechunk({0: out[0].chunks[0]}) for a in out[1:]]
    rows = {int(a.shape[0]) for a in out}
    if len(rows) != 1:
        raise ValueError(f"reports.z0, reports.zy and reports.zx must have the same number of rows, got {sorted(rows)}")
    n = rows.pop()
    if n == 0:
        raise ValueError("reports must not be empty")
    if not partial and n != proto.n_users:
        raise ValueError(f"reports have {n} rows but the protocol declares n_users={proto.n_users}")
    if partial and seen + n > proto.n_users:
        raise ValueError(f"reports: {seen} already seen plus {n} in this batch exceed n_users={proto.n_users}")
    return any(is_dask_collection(f) for f in fields), tuple(out)


class LDPLogisticRegression(BaseEstimator):
    """Server side of Algorithm 6: logistic regression from the users' reports only.

    Parameters
    ----------
    protocol : LogisticProtocol
    batch_size : int — users per stochastic step (each report is used once).
    step_scale : float — step ``η = step_scale · 2 / (G_rms sqrt(T))`` (2 = diameter of ``B₂(1)``,
        ``G_rms`` the RMS norm of the oracle at ``w = 0`` over the reports — post-processing; a first
        pass over the reports, ``Σ_i ||G̃_i(0)||²`` summed exactly).
    step_size : float, optional
        A fixed step ``η`` instead of the ``step_scale`` rule. Needed by :meth:`partial_fit` (a streaming
        pass cannot know ``G_rms`` before its first step); ``fit`` with the same ``step_size`` gives the
        same model as ``partial_fit`` over the batches.
    verbose : bool or int, default=False
        Show tqdm progress bars (stderr) during long calls; ``False``/``0`` shows nothing. Progress and the
        :mod:`logging` messages are for the curator only and never part of a release.
        The bar counts the ``T = n_users // batch_size`` stochastic steps.

    Attributes: ``coef_`` (θ = r·w̄), ``w_`` (averaged iterate in ``B₂(1)``), ``n_iter_``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import ldp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.5, 0.5, size=(500, 3)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> proto = ldp.LogisticProtocol(dim=3, n_users=500, epsilon=8.0, delta=1e-6)
    >>> reports = ldp.simulate(X, y, proto, random_state=0)     # all users (experiments only)
    >>> clf = ldp.LDPLogisticRegression(proto).fit(reports)
    >>> clf.predict(X[:4]).shape, clf.predict_proba(X[:4]).shape
    ((4,), (4,))
    """

    def __init__(self, protocol: LogisticProtocol, *, batch_size: int = 100, step_scale: float = 1.0,
                 step_size: Optional[float] = None, verbose: bool | int = False) -> None:
        self.protocol = protocol
        self.batch_size = batch_size
        self.step_scale = step_scale
        self.step_size = step_size
        self.verbose = verbose

    def fit(self, reports: LogisticReports) -> Self:
        """One pass of mini-batch projected SGD over the reports, in user order.

        Parameters
        ----------
        reports : LogisticReports
            Fields ``z0`` (n_users, d), ``zy`` (n_users, n_y_copies), ``zx`` (n_users, n_x_copies, d), as numpy
            or Dask arrays. With Dask, the ``G_rms`` pass is a blockwise exact sum and the SGD consumes the
            blocks in order (one task per block, chained; only the iterate, its running sum and the
            < ``batch_size`` reports of a batch straddling two blocks move between tasks).

        Returns
        -------
        LDPLogisticRegression
            ``self``, fitted.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import ldp
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.5, 0.5, size=(500, 3)); y = np.where(X[:, 0] > 0, 1, -1)
        >>> proto = ldp.LogisticProtocol(dim=3, n_users=500, epsilon=8.0, delta=1e-6)
        >>> ldp.LDPLogisticRegression(proto).fit(ldp.simulate(X, y, proto, random_state=0)).coef_.shape
        (3,)
        """
        b, scale, step = self._check_params()
        proto = self.protocol
        is_dask, arrays = _prepare_reports(reports, proto, partial=False, seen=0)
        n = proto.n_users
        T = max(1, n // b)
        if step is None:
            stream = LeafStream(functools.partial(_g0_stat, proto), {"g0sq": ()})
            if is_dask:
                reduce_blocks(stream, arrays, finish=True)
            else:
                stream.update(*arrays)
            g_rms = float(np.sqrt(float(stream.totals()["g0sq"].value()) / n / b)) or 1.0
            step = scale * 2.0 / (g_rms * math.sqrt(T))
        self._state = _sgd_init(proto.dim)
        self._eta, self._T, self._b = step, T, b
        self._run(arrays, is_dask)
        return self

    def partial_fit(self, reports: LogisticReports) -> Self:
        """Continue the SGD pass with the next batch of users' reports (requires ``step_size``).

        After batches that together hold the ``n_users`` reports, the model is bit-identical to :meth:`fit`
        (same ``step_size``) on their concatenation; in between, ``coef_`` is the average of the iterates so
        far. ``fit`` restarts the pass.

        Parameters
        ----------
        reports : LogisticReports
            The next users' reports (numpy or Dask fields).

        Returns
        -------
        LDPLogisticRegression
            ``self``.

        Raises
        ------
        ValueError
            If ``step_size`` is None, or the batches exceed ``n_users`` reports.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import ldp
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.5, 0.5, size=(500, 3)); y = np.where(X[:, 0] > 0, 1, -1)
        >>> proto = ldp.LogisticProtocol(dim=3, n_users=500, epsilon=8.0, delta=1e-6)
        >>> R = ldp.simulate(X, y, proto, random_state=0)
        >>> clf = ldp.LDPLogisticRegression(proto, step_size=0.5)
        >>> for lo, hi in [(0, 150), (150, 500)]:
        ...     clf = clf.partial_fit(ldp.LogisticReports(R.z0[lo:hi], R.zy[lo:hi], R.zx[lo:hi]))
        >>> full = ldp.LDPLogisticRegression(proto, step_size=0.5).fit(R)
        >>> bool(np.array_equal(clf.coef_, full.coef_))
        True
        """
        b, _, step = self._check_params()
        if step is None:
            raise ValueError("step_size must be set for partial_fit: the default step rule needs the RMS oracle "
                             "norm over all reports before the first step (use fit, or pass step_size=...)")
        proto = self.protocol
        if getattr(self, "_state", None) is None or (self._eta, self._b) != (step, b):
            self._state = _sgd_init(proto.dim)
            self._eta, self._T, self._b = step, max(1, proto.n_users // b), b
        is_dask, arrays = _prepare_reports(reports, proto, partial=True, seen=self._state["seen"])
        self._run(arrays, is_dask)
        return self

    def _check_params(self):
        proto = self.protocol
        if not isinstance(proto, LogisticProtocol):
            raise TypeError(f"protocol must be a LogisticProtocol, got {type(proto).__name__}")
        b = check_int(self.batch_size, "batch_size")
        scale = check_positive(self.step_scale, "step_scale")
        step = None if self.step_size is None else check_positive(self.step_size, "step_size")
        check_verbose(self.verbose)
        return b, scale, step

    def _run(self, arrays, is_dask: bool) -> None:
        proto, eta, T, b = self.protocol, self._eta, self._T, self._b
        with progress_bar(self.verbose, total=T, desc="LDPLogisticRegression", unit="step") as bar:
            t0 = self._state["t"]
            if is_dask:
                import dask

                blocks = [a.to_delayed().reshape(-1) for a in arrays]
                state = self._state
                for i in range(len(blocks[0])):  # blocks in user order, one chained task each
                    state = dask.delayed(_sgd_consume, pure=True)(state, *[bl[i] for bl in blocks],
                                                                  proto=proto, b=b, eta=eta, T=T)
                self._state = dask.compute(state)[0]
            else:
                self._state = _sgd_consume(self._state, *arrays, proto=proto, b=b, eta=eta, T=T)
            bar.update(self._state["t"] - t0)
        t = self._state["t"]
        logger.info("LDPLogisticRegression: %d steps of %d reports, step size %.3g", t, b, eta)
        self.w_ = self._state["w_sum"] / max(t, 1)
        self.coef_ = proto.r * self.w_
        self.n_iter_ = t
        self.n_reports_seen_ = self._state["seen"]

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        return check_array(X, "X", n_features=self.protocol.dim) @ self.coef_

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Probability of the label +1 under the fitted logistic model.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore import ldp
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-0.5, 0.5, size=(500, 3)); y = np.where(X[:, 0] > 0, 1, -1)
        >>> proto = ldp.LogisticProtocol(dim=3, n_users=500, epsilon=8.0, delta=1e-6)
        >>> clf = ldp.LDPLogisticRegression(proto).fit(ldp.simulate(X, y, proto, random_state=0))
        >>> p = clf.predict_proba(X[:4])
        >>> p.shape, bool(((0 <= p) & (p <= 1)).all())
        ((4,), True)
        """
        return 1.0 / (1.0 + np.exp(-self.decision_function(X)))

    def predict(self, X: ArrayLike) -> NDArray[np.int64]:
        return np.where(self.decision_function(X) >= 0, 1, -1)

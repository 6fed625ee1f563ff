r"""Output and objective perturbation on Dask arrays: the certified solver by map-reduce (issue 16).

The records stay where Dask keeps them. Every quantity the solver of :mod:`dpcore.glm._solver`
needs is a sum over records, so each *pass* sends the current point ``θ`` (and a direction ``v``)
to every block and brings back a few sums per block:

* ``fun_grad``: ``(Σ_i ℓ(<θ, x_i>; y_i), Σ_i ℓ'(<θ, x_i>; y_i) x_i)``;
* ``hessp``: ``Σ_i ℓ''(<θ, x_i>; y_i) <v, x_i> x_i / n``;
* ``newton_pass`` (issue 26): ``fun_grad`` at several points ``θ_j`` at once and the Hessian
  ``Σ_i ℓ''(<θ_h, x_i>; y_i) x_i x_iᵀ / n`` at one of them (``dim²`` numbers per block): the damped exact
  Newton solver of :func:`dpcore.glm._solver.solve_smooth` takes one such pass per iteration, 5–10 in all
  for ``dim ≤`` :data:`~dpcore.glm._solver.NEWTON_MAX_DIM` (was one pass per L-BFGS-B evaluation and per
  Newton–CG product, 30–90).

No record, margin or per-record value leaves its block. The partial sums come back in block order and
are added pairwise in that order on the client, so the result does not depend on the scheduler, the number of
workers or the order in which blocks finish (it does depend on the chunking, through the rounding of
the partial sums).

Each block is validated against the declared bounds by the same functions as the in-memory fit
(:mod:`dpcore.glm._data`), so records outside the domain or label set are refused or clipped exactly
as there, one record at a time. The intercept column is never materialised:
``<θ, (x, s)> = <θ_{:d}, x> + s θ_d`` and its gradient coordinate is ``s Σ_i ℓ'_i``.

Certificate
-----------
:func:`dpcore.glm._solver.certify_smooth` applies unchanged, with a smaller summation constant. Its
floating-point bound (:func:`~dpcore.glm._solver.gradient_fp_bound`) takes the error of the computed dot
products as ``γ_dim Σ_j |θ_j x_ij|`` and of each coordinate of the computed ``Xᵀs`` as ``γ_k Σ_i |s_i x_ij|``,
where ``k`` bounds the roundings on any term's path (Higham 2002, §4.2: a sum evaluated by any tree of
additions has error ``≤ γ_D Σ|terms|`` with ``D`` the tree's depth). One BLAS call over all rows would need
``k = n`` (any order). Here, as in memory since issue 26 (:func:`dpcore._internal.summation.blocked_xt`, the
same code), the sums are *blocked and pairwise*: inside a block, BLAS over sub-blocks of
:data:`SUB_ROWS` rows (a term's product and at most ``SUB_ROWS − 1`` additions, any order), the sub-block
partials of a block added pairwise (``⌈log₂ n⌉`` levels at most), the block partials added pairwise on the
client (``⌈log₂ n⌉`` levels at most), and for the intercept coordinate one multiplication by
``intercept_scaling`` — so ``k = min(n, SUB_ROWS + 2⌈log₂ n⌉ + 1)`` (:func:`blocked_sum_terms`), a function
of the public ``n`` only, whatever the chunking. At ``n = 10⁷`` this is ``k = 4,145`` instead of ``10⁷``: the
public floating-point floor of the certificate drops from 1.6e-9 to 1.5e-12 (d̂ = 100, λ = 5.6e-5), so the
``tol = 1e-10`` stays certifiable (``tol="auto"``: twice the floor of the path used) and the public residual ρ (hence the residual release's noise) is
100× smaller than with the ``tol = 1e-8`` one BLAS call would force. The gradient at the certified point is the
last one computed there (:meth:`DaskGLMObjective.grad`), or recomputed by one more pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import numpy as np

from dpcore._internal.dask import as_dask_array, compute_tasks, row_offsets
from dpcore._internal.fp import SUM_BLOCK_ROWS, blocked_sum_terms
from dpcore._internal.summation import blocked_xt, pairwise_sum
from dpcore._internal.validation import as_1d_target, as_dask_target, check_X
from dpcore.glm._data import encode_targets, project_rows, row_norms
from dpcore.glm._losses import GLMLoss

__all__ = ["BlockSpec", "DaskDesign", "DaskGLMObjective", "dask_design", "blocked_sum_terms", "SUB_ROWS"]

#: Rows per BLAS call in the blocked sums (:data:`dpcore._internal.fp.SUM_BLOCK_ROWS`, shared with the in-memory path).
SUB_ROWS = SUM_BLOCK_ROWS


@dataclass(frozen=True)
class BlockSpec:
    """What a worker needs to turn a raw block ``(X_b, y_b)`` into validated records: public parameters only."""

    loss: GLMLoss
    classes: Any
    data_norm: float
    clip: bool
    #: the constant intercept feature ``intercept_scaling``, or ``None`` without an intercept
    scaling: Optional[float]


def design_block(spec: BlockSpec, Xb: np.ndarray, yb: np.ndarray, offset: int) -> Tuple[np.ndarray, np.ndarray]:
    """``(X_b, y_b)`` validated like the in-memory fit: ±1 labels (or bounded targets) and rows in the ball."""
    Xb = np.ascontiguousarray(Xb, dtype=np.float64)
    # One scan for both checks: a row norm is finite iff the row is (or the squares overflow, refused too).
    norms = row_norms(Xb)
    if not np.isfinite(norms).all():
        check_X(Xb, "X")  # raises the in-memory message for NaN / infinite entries
        raise ValueError("X has values too large: a row's squared norm overflows float64; rescale X to the "
                         "declared data domain")
    y = as_1d_target(yb)
    if y.ndim != 1 or y.shape[0] != Xb.shape[0]:
        raise ValueError(f"y must be 1-D with one label per row of X, got a block of shape {y.shape} for "
                         f"{Xb.shape[0]} rows (rows {offset}..)")
    _, y_pm = encode_targets(y, loss=spec.loss, classes=spec.classes, clip=spec.clip, offset=offset)
    return project_rows(Xb, data_norm=spec.data_norm, clip=spec.clip, offset=offset, norms=norms), y_pm


def _z(spec: BlockSpec, X: np.ndarray, theta: np.ndarray) -> np.ndarray:
    if spec.scaling is None:
        return X @ theta
    return X @ theta[:-1] + spec.scaling * theta[-1]


def _xt(spec: BlockSpec, X: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``Xᵀs`` (and ``scaling·Σ s`` for the intercept) by sub-blocks of :data:`SUB_ROWS` rows added pairwise
    (:func:`dpcore._internal.summation.blocked_xt`, the in-memory path's sum)."""
    return blocked_xt(X, s, spec.scaling)


def _hessian(spec: BlockSpec, X: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``Σ_i w_i x̃_i x̃_iᵀ`` (``x̃`` with the intercept coordinate, ``w ≥ 0``) by sub-blocks of :data:`SUB_ROWS` rows.

    Only a search direction is built from it (never a certificate), so its rounding does not matter.
    """
    dim = X.shape[1] + (spec.scaling is not None)
    H = np.zeros((dim, dim))
    for lo in range(0, X.shape[0], SUB_ROWS):
        r = np.sqrt(w[lo:lo + SUB_ROWS])
        A = X[lo:lo + SUB_ROWS] * r[:, None]
        if spec.scaling is not None:
            A = np.hstack([A, (spec.scaling * r)[:, None]])
        H += A.T @ A
    return H


def _newton_block(spec, Xb, yb, offset, thetas, hess_col, inv_n):
    """One block's share of a Newton pass at the columns of ``thetas`` (``dim × m``): the loss sums (``m``), the
    blocked sums ``Xᵀℓ'`` (``dim × m``, as :func:`_fun_grad_block` for each column) and, for the column
    ``hess_col``, ``Σ_i ℓ''_i x̃_i x̃_iᵀ / n`` (``dim × dim``)."""
    X, y = design_block(spec, Xb, yb, offset)
    Z = _z(spec, X, thetas)
    yc = y[:, None]
    values = np.sum(spec.loss.value(Z, yc), axis=0)
    G = _xt(spec, X, spec.loss.deriv(Z, yc))
    H = _hessian(spec, X, spec.loss.deriv2(Z[:, hess_col], y) * inv_n)
    return values, G, H


def _check_block(spec, Xb, yb, offset) -> int:
    return design_block(spec, Xb, yb, offset)[0].shape[0]


def _fun_grad_block(spec, Xb, yb, offset, theta) -> Tuple[float, np.ndarray]:
    X, y = design_block(spec, Xb, yb, offset)
    z = _z(spec, X, theta)
    return float(np.sum(spec.loss.value(z, y))), _xt(spec, X, spec.loss.deriv(z, y))


def _hessp_block(spec, Xb, yb, offset, theta, v, inv_n) -> np.ndarray:
    X, y = design_block(spec, Xb, yb, offset)
    w = spec.loss.deriv2(_z(spec, X, theta), y) * inv_n
    return _xt(spec, X, w * _z(spec, X, v))


@dataclass(frozen=True)
class DaskDesign:
    """The validated design of a Dask fit: one ``(X_b, y_b, offset)`` per non-empty block (lazy)."""

    blocks: List[Tuple[Any, Any, int]]
    spec: BlockSpec
    n: int
    d: int

    @property
    def dim(self) -> int:
        return self.d + (self.spec.scaling is not None)

    def map(self, fn, *args) -> list:
        """``[fn(spec, X_b, y_b, offset, *args) for every block]``, computed by Dask, in block order."""
        return compute_tasks(fn, [(self.spec, xb, yb, off, *args) for xb, yb, off in self.blocks])

    def validate(self) -> None:
        """One pass over every block: raises the in-memory fit's ``ValueError`` for a refused record."""
        counts = self.map(_check_block)
        if sum(counts) != self.n:  # cannot happen: shapes are checked blockwise
            raise RuntimeError("Dask blocks changed size between passes")


def dask_design(X, y, spec: BlockSpec) -> DaskDesign:
    """Lazy blocks of ``(X, y)`` (Dask array / DataFrame, ``y`` also in memory); shapes checked eagerly,
    values per block when computed (:meth:`DaskDesign.validate`)."""
    X = as_dask_array(X, "X", ndim=2)
    if not isinstance(getattr(X, "_meta", None), np.ndarray):
        raise TypeError(f"X: Dask arrays of {type(X._meta).__name__} blocks are not supported by the Dask fit (dense "
                        "numpy blocks only); densify the blocks or fit in memory with a scipy.sparse X")
    n, d = (int(s) for s in X.shape)
    if n == 0 or d == 0:
        raise ValueError(f"X must have at least one row and one column, got shape {X.shape}")
    chunks = tuple(int(c) for c in X.chunks[0])
    y = as_dask_target(y, chunks)
    xs, ys = X.to_delayed().ravel(), y.to_delayed().ravel()
    blocks = [(xb, yb, off) for xb, yb, off, c in zip(xs, ys, row_offsets(chunks), chunks) if c > 0]
    return DaskDesign(blocks=blocks, spec=spec, n=n, d=d)


class DaskGLMObjective:
    """:class:`dpcore.glm._solver.GLMObjective` over a :class:`DaskDesign` (same formulas, sums by map-reduce).

    ``passes`` counts the passes over the data (each reads every block once).
    """

    def __init__(self, design: DaskDesign, loss: GLMLoss, mu: float, b: Optional[np.ndarray] = None):
        self.design = design
        self.loss = loss
        self.mu = float(mu)
        self.b = None if b is None else np.asarray(b, dtype=np.float64)
        self.n, self.d = design.n, design.dim
        self.inv_n = 1.0 / self.n
        self.passes = 0
        #: ``(θ bytes, ∇F(θ))`` of the last gradient computed (see :meth:`grad`)
        self._last_grad: Optional[Tuple[bytes, np.ndarray]] = None

    def _sums(self, fn, *args) -> list:
        self.passes += 1
        return self.design.map(fn, *args)

    def fun_grad(self, theta: np.ndarray):
        theta = np.asarray(theta, dtype=np.float64)
        parts = self._sums(_fun_grad_block, theta)
        value = pairwise_sum([p[0] for p in parts])
        v = pairwise_sum([p[1] for p in parts])
        f, g = self._finish(value, v, theta)
        self._last_grad = (theta.tobytes(), g)
        return f, g

    def _finish(self, value: float, v: np.ndarray, theta: np.ndarray):
        """``(F(θ), ∇F(θ))`` from the summed loss value and ``Xᵀℓ'`` (the formulas of the in-memory objective)."""
        f = value * self.inv_n + 0.5 * self.mu * float(theta @ theta)
        if self.b is not None:
            f += float(self.b @ theta) * self.inv_n
            v = v + self.b
        return f, v * self.inv_n + self.mu * theta

    def value(self, theta: np.ndarray) -> float:
        return self.fun_grad(theta)[0]

    def grad(self, theta: np.ndarray, z: Optional[np.ndarray] = None) -> np.ndarray:
        """The gradient (``z`` is ignored: margins never leave their blocks).

        If the last gradient this objective computed (by :meth:`fun_grad` or :meth:`newton_pass`) was at these
        very bits of ``θ``, it is returned without another pass: it is the same analysed computation
        (:func:`~dpcore.glm._solver.gradient_fp_bound` holds for any order of the sums within a BLAS call, so
        for a column of :meth:`newton_pass` as for :meth:`fun_grad`).
        """
        theta = np.asarray(theta, dtype=np.float64)
        if self._last_grad is not None and self._last_grad[0] == theta.tobytes():
            return self._last_grad[1].copy()
        return self.fun_grad(theta)[1]

    def newton_pass(self, thetas: np.ndarray, hess_col: int = 0):
        """ONE pass: ``(F(θ_j), ∇F(θ_j))`` at every column ``θ_j`` of ``thetas`` (``dim × m``) and the Hessian
        ``∇²F`` at column ``hess_col``. Returns ``(values (m,), gradients (dim × m), Hessian (dim × dim))``.

        Every block returns ``m + dim·m + dim²`` numbers, added pairwise in block order on the client (as
        :meth:`fun_grad`); the gradients are the blocked sums of :meth:`fun_grad`, one GEMM per sub-block.
        """
        thetas = np.ascontiguousarray(thetas, dtype=np.float64)
        parts = self._sums(_newton_block, thetas, int(hess_col), self.inv_n)
        values = pairwise_sum([p[0] for p in parts])
        V = pairwise_sum([p[1] for p in parts])
        H = pairwise_sum([p[2] for p in parts]) + self.mu * np.eye(self.d)
        fs, G = np.empty(thetas.shape[1]), np.empty_like(thetas)
        for j in range(thetas.shape[1]):
            fs[j], G[:, j] = self._finish(float(values[j]), V[:, j], thetas[:, j])
        return fs, G, H

    def remember_grad(self, theta: np.ndarray, g: np.ndarray) -> None:
        """Record ``g`` (a column of :meth:`newton_pass`) as the computed gradient at ``θ`` (see :meth:`grad`)."""
        self._last_grad = (np.asarray(theta, dtype=np.float64).tobytes(), np.array(g, dtype=np.float64))

    def grad_hessp(self, theta: np.ndarray):
        theta = np.asarray(theta, dtype=np.float64)
        g = self.grad(theta)

        def hessp(v: np.ndarray) -> np.ndarray:
            parts = self._sums(_hessp_block, theta, np.asarray(v, dtype=np.float64), self.inv_n)
            return pairwise_sum(parts) + self.mu * v

        return g, hessp

    def row_terms(self) -> int:
        return self.d

    def sum_terms(self) -> int:
        """``k`` of :func:`~dpcore.glm._solver.gradient_fp_bound` for the blocked pairwise sums."""
        return blocked_sum_terms(self.n)

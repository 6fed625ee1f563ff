r"""Blocked pairwise sums ``Xᵀs`` with a certified error bound: one implementation for every certified GLM solver.

A certified solver's float bound takes each coordinate of the computed ``Xᵀs`` within ``γ_k Σ_i |s_i x_ij|``,
where ``k`` bounds the roundings on any term's path (Higham 2002, §4.2). One BLAS call over all ``n`` rows sums in
an unknown order, so only ``k = n`` is safe and the public floor of a certificate grows like ``n·u``. Here the
rows are cut into blocks of :data:`~dpcore._internal.fp.SUM_BLOCK_ROWS` rows, each block is one BLAS call (any
order inside: at most ``b`` roundings per term, its product included), and the block partials are added by a
balanced tree (:func:`pairwise_sum`: ``⌈log₂ #blocks⌉ ≤ ⌈log₂ n⌉`` additions per partial). The Dask solver
(:mod:`dpcore.glm._dask`) calls :func:`blocked_xt` inside every partition and adds the partition partials by
:func:`pairwise_sum` again; :func:`~dpcore._internal.fp.blocked_sum_terms` covers both, so the in-memory and the
Dask paths use the same ``k`` (a function of the public ``n`` only).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
from scipy import sparse

from dpcore._internal.fp import SUM_BLOCK_ROWS

__all__ = ["pairwise_sum", "blocked_xt"]


def pairwise_sum(parts: Sequence[Any]) -> Any:
    """``Σ parts`` by a balanced tree of additions (halves): each part passes through ``⌈log₂ len⌉`` additions.

    >>> pairwise_sum([1.0, 2.0, 3.0])
    6.0
    """
    if len(parts) == 1:
        return parts[0]
    mid = (len(parts) + 1) // 2
    return pairwise_sum(parts[:mid]) + pairwise_sum(parts[mid:])


def blocked_xt(X, s: np.ndarray, scaling: Optional[float] = None, block: int = SUM_BLOCK_ROWS) -> np.ndarray:
    """``Xᵀs`` by blocks of ``block`` rows (one BLAS / sparse product each) added pairwise (module docstring).

    ``X``: dense or CSR ``(n, d)``; ``s``: ``(n,)`` or ``(n, m)`` (``m`` vectors at once, one GEMM per block;
    every column has the bound of a single vector). ``scaling``: if given, one more coordinate ``scaling·Σ_i s_i``
    (the never-materialised intercept column of the Dask solver: block sums, pairwise, one multiplication).
    With ``n ≤ block`` this is the single product ``Xᵀs`` (bit for bit). Every coordinate is within
    ``γ_k Σ_i |s_i x_ij|`` of the exact sum, ``k = blocked_sum_terms(n, block)``.

    >>> import numpy as np
    >>> blocked_xt(np.ones((5, 2)), np.arange(5.0), block=2).tolist()
    [10.0, 10.0]
    """
    n = X.shape[0]
    parts = []
    for lo in range(0, max(n, 1), int(block)):
        xs, ss = X[lo:lo + block], s[lo:lo + block]
        v = xs.T @ ss
        if sparse.issparse(v):  # pragma: no cover - sparse @ dense is dense in scipy
            v = v.toarray()
        v = np.asarray(v, dtype=np.float64)
        if v.ndim == 2 and s.ndim == 1:
            v = v.ravel()
        if scaling is not None:
            v = np.concatenate([v, np.sum(ss, axis=0, keepdims=True)])
        parts.append(v)
    v = pairwise_sum(parts)
    if scaling is not None:
        v[-1] = scaling * v[-1]
    return v

"""Blockwise sufficient statistics of the LDP servers: exact, order-independent, mergeable (dpcore.ldp internals).

Every LDP server that is a function of sums over users (Algorithm 2's group sums, Algorithms 3–4's
``ZᵀZ`` and ``Zᵀv``, Algorithm 6's ``Σ||G̃_i(0)||²``) computes them here, in ONE way, whether the reports
are one numpy array, a sequence of :meth:`partial_fit` batches or the blocks of a Dask array:

1. **Leaves.** Rows are cut into fixed *leaves* of :data:`LEAF_ROWS` consecutive users by their global
   index (leaf ``k`` = rows ``[k·L, (k+1)·L)``; the last one may be shorter). A leaf's statistic is computed
   by one numpy call on exactly those rows (BLAS ``syrk``/``gemm``, which pack their operands, so the
   float result does not depend on where the rows sit in memory).
2. **Exact merge.** Leaf statistics are added into an :class:`ExactSum`: every float is an integer
   multiple of a power of two, so the sum is kept as Python integers times ``2**base`` — exact, hence
   independent of the order and grouping of the additions. Converting back to float rounds once
   (correctly, to nearest).

So the statistic — and every estimate computed from it — is bit-identical for any chunking whose inner
boundaries are multiples of :data:`LEAF_ROWS` (Dask arrays are re-chunked to such boundaries; at most
``LEAF_ROWS`` rows move per boundary), any number of workers, any reduction tree, and any sequence of
:meth:`partial_fit` batches (a batch ending inside a leaf keeps those < ``LEAF_ROWS`` rows until the
next batch completes the leaf). What is sent between workers is the :class:`ExactSum` of each block
(the size of the statistic, independent of the number of rows).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from dpcore._internal.dask import aligned_row_chunks, require_dask, row_offsets

__all__ = ["LEAF_ROWS", "ExactSum", "LeafStream", "reduce_blocks", "check_finite"]

#: Users per leaf of the blockwise statistics (public constant; only affects float rounding, identically
#: on every path).
LEAF_ROWS = 4096

Stat = Callable[[Dict[str, "ExactSum"], int, Tuple[np.ndarray, ...]], None]


class ExactSum:
    """Exact sum of float64 arrays of a fixed shape: Python integers ``ints`` times ``2**base``."""

    __slots__ = ("shape", "ints", "base")

    def __init__(self, shape: Tuple[int, ...]) -> None:
        self.shape = tuple(shape)
        self.ints = np.zeros(self.shape, dtype=object)
        self.base: Optional[int] = None

    def copy(self) -> "ExactSum":
        out = ExactSum(self.shape)
        out.ints = self.ints.copy()
        out.base = self.base
        return out

    def add(self, x: np.ndarray, index: Any = None) -> "ExactSum":
        """Add ``x`` (float64, finite) to the whole sum, or to ``ints[index]``."""
        x = np.asarray(x, dtype=np.float64)
        mant, ex = np.frexp(x)
        M = np.ldexp(mant, 53).astype(np.int64)  # x = M · 2**(ex − 53) exactly, |M| < 2**53
        nz = M != 0
        if not nz.any():
            return self
        b = int(ex[nz].min()) - 53
        sh = np.where(nz, ex.astype(np.int64) - 53 - b, 0)
        self._add_ints(M.astype(object) << sh.astype(object), b, index)
        return self

    def _add_ints(self, vals: Any, b: int, index: Any) -> None:
        if self.base is None:
            self.base = b
        elif b < self.base:
            self.ints = np.asarray(self.ints << (self.base - b), dtype=object)
            self.base = b
        elif b > self.base:
            vals = vals << (b - self.base)
        if index is None:
            self.ints = np.asarray(self.ints + vals, dtype=object)
        else:
            self.ints[index] = self.ints[index] + vals

    def merge(self, other: "ExactSum") -> "ExactSum":
        if other.shape != self.shape:
            raise ValueError(f"internal: merging sums of shapes {self.shape} and {other.shape}")
        if other.base is not None:
            self._add_ints(other.ints, other.base, None)
        return self

    def value(self) -> np.ndarray:
        """The sum, each entry correctly rounded to float64."""
        if self.base is None:
            return np.zeros(self.shape)
        if self.base >= 0:
            out = self.ints * (1 << self.base)
        else:
            out = self.ints / (1 << -self.base)  # int / int: correctly rounded true division
        return np.asarray(out, dtype=object).astype(np.float64).reshape(self.shape)


def merge_all(parts: Sequence[Dict[str, ExactSum]]) -> Dict[str, ExactSum]:
    """Merge per-block sums (the reduction step; exact, so any tree gives the same result)."""
    out = {k: v.copy() for k, v in parts[0].items()}
    for p in parts[1:]:
        for k, v in p.items():
            out[k].merge(v)
    return out


def check_finite(arrays: Sequence[np.ndarray], names: Sequence[str]) -> None:
    for a, name in zip(arrays, names):
        if not np.isfinite(a).all():
            raise ValueError(f"{name} contains NaN or infinite values")


class LeafStream:
    """Accumulate a leaf statistic over rows arriving in global order (numpy batches or one block).

    ``stat(acc, start, arrays)`` adds the statistic of the rows ``[start, start + len)`` of one leaf into
    ``acc`` (a dict of :class:`ExactSum`). ``start`` must be a multiple of ``leaf``.
    """

    def __init__(self, stat: Stat, shapes: Dict[str, Tuple[int, ...]], *, start: int = 0,
                 leaf: int = LEAF_ROWS) -> None:
        if start % leaf:
            raise ValueError(f"internal: stream start {start} not a multiple of the leaf size {leaf}")
        self.stat, self.leaf, self.shapes = stat, leaf, dict(shapes)
        self.acc = {k: ExactSum(s) for k, s in shapes.items()}
        self.done = start  # rows folded into complete leaves (global index of the carry's first row)
        self.carry: Optional[Tuple[np.ndarray, ...]] = None

    @property
    def n_rows(self) -> int:
        return self.done + (0 if self.carry is None else len(self.carry[0]))

    @property
    def carry_rows(self) -> int:
        return 0 if self.carry is None else len(self.carry[0])

    def update(self, *arrays: np.ndarray) -> "LeafStream":
        if self.carry is not None:
            arrays = tuple(np.concatenate([c, a]) for c, a in zip(self.carry, arrays))
        k = len(arrays[0])
        full = (k // self.leaf) * self.leaf
        for s in range(0, full, self.leaf):
            self.stat(self.acc, self.done + s, tuple(a[s:s + self.leaf] for a in arrays))
        self.done += full
        self.carry = tuple(a[full:] for a in arrays) if full < k else None
        return self

    def fold(self, sums: Dict[str, ExactSum], rows: int, tail: Optional[Tuple[np.ndarray, ...]]) -> None:
        """Fold in the sums of the next ``rows`` rows computed blockwise; ``tail`` (rows of an incomplete
        last leaf, not in ``sums``) becomes the carry."""
        if self.carry is not None:
            raise AssertionError("internal: blockwise sums must start on a leaf boundary")
        for k, v in sums.items():
            self.acc[k].merge(v)
        self.done += rows
        self.carry = tail

    def totals(self) -> Dict[str, ExactSum]:
        """The sums over every row so far, the incomplete last leaf included (the stream is unchanged)."""
        if self.carry is None:
            return self.acc
        acc = {k: v.copy() for k, v in self.acc.items()}
        self.stat(acc, self.done, self.carry)
        return acc


def _block_sums(stat: Stat, shapes: Dict[str, Tuple[int, ...]], start: int, finish: bool,
                *arrays: np.ndarray) -> Tuple[Dict[str, ExactSum], Optional[Tuple[np.ndarray, ...]]]:
    """One Dask block: its leaf sums; the incomplete last leaf is either folded in (``finish``, the final
    block of a fit) or returned as rows (the tail of a partial_fit batch, kept for the next batch)."""
    ls = LeafStream(stat, shapes, start=start)
    ls.update(*arrays)
    if finish or ls.carry is None:
        return ls.totals(), None
    return ls.acc, ls.carry


def reduce_blocks(stream: LeafStream, arrays: Sequence[Any], *, finish: bool) -> None:
    """Feed dask arrays (same row chunks, rows in global order after ``stream.n_rows``) into ``stream``.

    Map: every block computes its :class:`ExactSum` statistics where it lives. Reduce: an exact merge
    (a tree of ``merge_all`` tasks). Only sums leave a worker, except the rows of an incomplete last leaf
    when ``finish`` is False (``partial_fit``), which are returned to become the stream's carry.
    """
    require_dask()
    import dask

    n = int(arrays[0].shape[0])
    if stream.carry_rows:  # complete the pending leaf in memory with the first rows of this batch
        need = min(stream.leaf - stream.carry_rows, n)
        head = dask.compute(*[a[:need] for a in arrays])
        stream.update(*head)
        arrays = [a[need:] for a in arrays]
        n -= need
    if n == 0:
        return
    if stream.carry_rows:  # the batch ended inside the pending leaf
        return
    chunks = aligned_row_chunks(arrays[0].chunks[0], stream.leaf)
    arrays = [a.rechunk({0: chunks}) for a in arrays]
    blocks = [a.to_delayed().reshape(-1) for a in arrays]
    starts = row_offsets(chunks)
    last = len(chunks) - 1
    parts = [dask.delayed(_block_sums, pure=True)(stream.stat, stream.shapes, stream.done + o, finish and i == last,
                                                  *[b[i] for b in blocks]) for i, o in enumerate(starts)]
    sums = [p[0] for p in parts]
    while len(sums) > 1:  # binary reduction tree of exact merges
        sums = [dask.delayed(merge_all, pure=True)(sums[i:i + 2]) for i in range(0, len(sums), 2)]
    total, tail = dask.compute(sums[0], parts[-1][1])
    stream.fold(total, n - (0 if tail is None else len(tail[0])), tail)


def feed(stream: LeafStream, arrays: Sequence[Any], names: Sequence[str], tails: Sequence[Tuple[int, ...]],
         n_users: int, *, partial: bool) -> None:
    """Validate reports (numpy or Dask; one row per user, trailing shapes ``tails``) and feed them to ``stream``.

    ``fit`` (``partial=False``, fresh stream): exactly ``n_users`` rows. ``partial_fit``: any positive
    number of rows, at most ``n_users`` in total over the batches. NaN/inf are rejected per leaf."""
    from dpcore._internal.dask import as_dask_array, is_dask_collection

    if any(is_dask_collection(a) for a in arrays):
        da = require_dask()
        conv = [as_dask_array(a, name, ndim=(1, 2) if tail == () else 1 + len(tail)) if is_dask_collection(a) else a
                for a, name, tail in zip(arrays, names, tails)]
        lead = next(a for a in conv if isinstance(a, da.Array))
        out = []
        for a, name, tail in zip(conv, names, tails):
            if not isinstance(a, da.Array):
                a = np.asarray(a)
                if a.dtype.kind not in "biuf":
                    raise TypeError(f"{name} must be numeric, got dtype {a.dtype}")
                if a.shape[:1] != lead.shape[:1]:
                    raise ValueError(f"{name} must have {lead.shape[0]} rows, got shape {a.shape}")
                a = da.from_array(a.astype(np.float64), chunks=(lead.chunks[0],) + tuple((s,) for s in a.shape[1:]))
            if tail == () and a.ndim == 2:
                if a.shape[1] != 1:
                    raise ValueError(f"{name} must have shape (n_users,), got {a.shape}")
                a = a[:, 0]
            if tuple(a.shape[1:]) != tuple(tail):
                raise ValueError(f"{name} must have shape (n_users, {', '.join(map(str, tail))}) for this protocol, "
                                 f"got {a.shape}" if tail else f"{name} must have shape (n_users,), got {a.shape}")
            out.append(a)
        rows = {int(a.shape[0]) for a in out}
        if len(rows) != 1:
            raise ValueError(f"{' and '.join(names)} must have the same number of rows, got {[a.shape[0] for a in out]}")
        n = rows.pop()
        _check_rows(n, names[0], n_users, stream.n_rows, partial)
        if out[0].chunks[0] != lead.chunks[0] or any(a.chunks[0] != out[0].chunks[0] for a in out):
            out = [a.rechunk({0: out[0].chunks[0]}) for a in out]
        reduce_blocks(stream, out, finish=not partial)
        return
    out = []
    for a, name, tail in zip(arrays, names, tails):
        a = np.asarray(a)
        if a.dtype.kind not in "biuf":
            raise TypeError(f"{name} must be numeric, got dtype {a.dtype}")
        a = a.astype(np.float64, copy=False)
        if tail == () and a.ndim == 2 and a.shape[1] == 1:
            a = a.reshape(-1)
        if a.ndim != 1 + len(tail) or tuple(a.shape[1:]) != tuple(tail):
            raise ValueError(f"{name} must have shape (n_users, {', '.join(map(str, tail))}) for this protocol, "
                             f"got {a.shape}" if tail else f"{name} must have shape (n_users,), got {a.shape}")
        out.append(a)
    if len({a.shape[0] for a in out}) != 1:
        raise ValueError(f"{' and '.join(names)} must have the same number of rows, got {[a.shape[0] for a in out]}")
    _check_rows(out[0].shape[0], names[0], n_users, stream.n_rows, partial)
    stream.update(*out)


def _check_rows(n: int, name: str, n_users: int, seen: int, partial: bool) -> None:
    if n == 0:
        raise ValueError(f"{name} must not be empty")
    if not partial and n != n_users:
        raise ValueError(f"{name} has {n} rows but the protocol declares n_users={n_users}")
    if partial and seen + n > n_users:
        raise ValueError(f"{name}: {seen} reports already seen plus {n} in this batch exceed the protocol's "
                         f"n_users={n_users}")

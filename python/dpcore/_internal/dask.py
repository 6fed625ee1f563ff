"""Optional Dask support (``pip install dpcore[dask]``): detection and small helpers, importing dask lazily.

dpcore imports and works without dask: nothing here imports it at module level, and
:func:`is_dask_collection` only looks at objects whose class comes from a module named ``dask...``
(so it never triggers the import). The other helpers import dask when called, i.e. only once the caller
already holds a dask object.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["is_dask_collection", "require_dask", "as_dask_array", "aligned_row_chunks", "row_offsets",
           "map_row_blocks", "column_schema", "compute_all", "compute_tasks", "refuse_dask"]


def is_dask_collection(x: object) -> bool:
    """True if ``x`` is a Dask collection (array, DataFrame, Series, delayed), without importing dask.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore._internal.dask import is_dask_collection
    >>> is_dask_collection(np.zeros(3))
    False
    >>> import dask.array as da
    >>> is_dask_collection(da.zeros(3, chunks=2))
    True
    """
    if "dask" not in sys.modules or not type(x).__module__.split(".")[0] in ("dask", "dask_expr"):
        return False
    import dask

    return bool(dask.is_dask_collection(x))


def require_dask() -> Any:
    """Import and return :mod:`dask.array`, or raise an ``ImportError`` naming the ``dask`` extra."""
    try:
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - exercised only without dask
        raise ImportError("this dpcore feature needs dask: pip install 'dpcore[dask]'") from exc
    return da


def compute_tasks(fn: Any, arguments: Sequence[Tuple[Any, ...]]) -> List[Any]:
    """``[fn(*args) for args in arguments]``, one Dask task each, computed together; results in order.

    Arguments may be Dask objects (e.g. the blocks of ``x.to_delayed()``): each task then runs where Dask
    puts it, on the block's data, and only its result comes back.
    """
    require_dask()
    import dask

    return list(dask.compute(*(dask.delayed(fn)(*args) for args in arguments)))


def as_dask_array(x: Any, name: str, *, ndim: int | Tuple[int, ...]) -> Any:
    """``x`` (dask array, DataFrame or Series) as a dask array with known chunk sizes, float64, whose
    non-row axes are single chunks. Raises naming ``name`` on non-numeric data or a wrong ``ndim``."""
    da = require_dask()
    if not isinstance(x, da.Array):
        if hasattr(x, "to_dask_array"):  # dask DataFrame / Series: row counts are computed (lengths=True)
            x = x.to_dask_array(lengths=True)
        else:
            raise TypeError(f"{name} must be a dask array, DataFrame or Series, got {type(x).__name__}")
    if x.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {x.dtype}")
    dims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if x.ndim not in dims:
        raise ValueError(f"{name} must have {' or '.join(map(str, dims))} dimensions, got shape {x.shape}")
    if any(np.isnan(c) for c in x.chunks[0]):
        raise ValueError(f"{name} has unknown chunk sizes; call {name}.compute_chunk_sizes() first")
    x = x.astype(np.float64)
    if x.ndim > 1 and any(len(c) > 1 for c in x.chunks[1:]):
        x = x.rechunk({i: -1 for i in range(1, x.ndim)})
    return x


def row_offsets(chunks: Sequence[int]) -> List[int]:
    """Global index of the first row of every block (``[0, c0, c0 + c1, ...]``)."""
    out, o = [], 0
    for c in chunks:
        out.append(o)
        o += int(c)
    return out


def aligned_row_chunks(chunks: Sequence[int], unit: int) -> Tuple[int, ...]:
    """Row chunks whose inner boundaries are multiples of ``unit`` (each moved to the nearest multiple).

    Only the last chunk may end elsewhere (at ``n``). Returns ``chunks`` unchanged if already aligned.
    """
    n = sum(int(c) for c in chunks)
    inner = row_offsets(chunks)[1:]
    if all(b % unit == 0 for b in inner):
        return tuple(int(c) for c in chunks)
    bounds = sorted({min(n, unit * round(b / unit)) for b in inner} - {0, n})
    edges = [0, *bounds, n]
    return tuple(b - a for a, b in zip(edges[:-1], edges[1:]))


def _apply_block(block: np.ndarray, shared: tuple, *, block_func: Callable[..., np.ndarray],
                 check: Optional[Callable[[np.ndarray], np.ndarray]], out_shape: tuple, out_dtype: Any) -> np.ndarray:
    """One task of :func:`map_row_blocks`: ``block_func(check(block), *shared)``; a block without rows gives an
    empty result without calling either (a non-empty array may have empty blocks)."""
    if block.shape[0] == 0:
        return np.empty((0, *out_shape), dtype=out_dtype)
    return block_func(block if check is None else check(block), *shared)


def map_row_blocks(func: Callable[..., np.ndarray], x: Any, *shared: Any, n_cols: Optional[int] = None,
                   dtype: Any = np.float64, check: Optional[Callable[[np.ndarray], np.ndarray]] = None) -> Any:
    """Lazy ``func(block, *shared)`` over the row blocks of the Dask array ``x``: a Dask array with ``x``'s row chunks.

    ``x`` is 1-D, or 2-D with a single chunk along its columns (as :func:`as_dask_array` returns it). ``func`` maps
    a numpy block of ``r`` rows to an array of shape ``(r,)`` (``n_cols=None``) or ``(r, n_cols)`` of ``dtype``; it
    runs on the workers, once per block, so it must be picklable (a module-level function). ``check``, if given, is
    applied to every block first (the value checks the in-memory path makes up front, e.g. finiteness).

    ``shared`` are in-memory objects every block needs (a model's points and coefficients): they enter the graph
    once, as one key every task depends on, so each worker receives them once — not once per block.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> from dpcore._internal.dask import map_row_blocks
    >>> x = da.from_array(np.arange(10.0).reshape(5, 2), chunks=(2, 2))
    >>> y = map_row_blocks(lambda b, w: b @ w, x, np.array([1.0, -1.0]))
    >>> y.chunks, y.compute(scheduler="synchronous").tolist()
    (((2, 2, 1),), [-1.0, -1.0, -1.0, -1.0, -1.0])
    """
    require_dask()
    import dask

    if x.ndim not in (1, 2) or (x.ndim == 2 and len(x.chunks[1]) != 1):
        raise ValueError(f"map_row_blocks needs a 1-D array or a 2-D array with one column chunk, got chunks "
                         f"{x.chunks}")
    out_shape = () if n_cols is None else (int(n_cols),)
    chunks = (x.chunks[0], *((c,) for c in out_shape))
    axes: dict = {}
    if x.ndim == 2 and n_cols is None:
        axes["drop_axis"] = 1
    elif x.ndim == 1 and n_cols is not None:
        axes["new_axis"] = 1
    return x.map_blocks(_apply_block, dask.delayed(shared, pure=True), block_func=func, check=check,
                        out_shape=out_shape, out_dtype=np.dtype(dtype), chunks=chunks, dtype=dtype,
                        meta=np.empty((0, *out_shape), dtype=dtype), **axes)


def column_schema(x: Any) -> Any:
    """A zero-row in-memory stand-in for the columns of the Dask collection ``x`` — its pandas metadata for a Dask
    DataFrame (same column names and dtypes), ``np.empty((0, n_features))`` for a 2-D Dask array — for checks that
    look only at the columns (scikit-learn's feature names and counts) without computing anything."""
    if hasattr(x, "columns"):
        return x._meta  # Dask's "meta": the empty pandas object with x's columns and dtypes
    return np.empty((0, *x.shape[1:]))


def compute_all(*objs: Any) -> tuple:
    """``objs`` with every Dask collection among them computed; other objects are returned as they are (dask is not
    imported if there is none). The Dask arrays are computed in one ``dask.compute`` call (inputs they share are
    read once), the other collections (DataFrames, Series) in another: dask warns against mixing the two kinds."""
    if not any(is_dask_collection(o) for o in objs):
        return objs
    da = require_dask()
    import dask

    out = list(objs)
    arrays = [i for i, o in enumerate(objs) if isinstance(o, da.Array)]
    frames = [i for i, o in enumerate(objs) if is_dask_collection(o) and not isinstance(o, da.Array)]
    for group in (arrays, frames):
        for i, value in zip(group, dask.compute(*[objs[i] for i in group])):
            out[i] = value
    return tuple(out)


def refuse_dask(x: object, name: str, why: str) -> None:
    """Raise a ``TypeError`` naming ``name`` if ``x`` is a Dask collection (``why``: the reason it must be in memory)."""
    if is_dask_collection(x):
        raise TypeError(f"{name} is a Dask {type(x).__name__}, not supported here: {why}; pass an in-memory array "
                        f"(e.g. {name}.compute() if it fits)")

"""Optional Dask support (``pip install dpcore[dask]``): detection and small helpers, importing dask lazily.

dpcore imports and works without dask: nothing here imports it at module level, and
:func:`is_dask_collection` only looks at objects whose class comes from a module named ``dask...``
(so it never triggers the import). The other helpers import dask when called, i.e. only once the caller
already holds a dask object.
"""

from __future__ import annotations

import sys
from typing import Any, List, Sequence, Tuple

__all__ = ["is_dask_collection", "require_dask", "as_dask_array", "aligned_row_chunks", "row_offsets", "compute_tasks"]


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
    import numpy as np

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

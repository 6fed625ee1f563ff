"""Type aliases of the public signatures (annotations only; every module using them has
``from __future__ import annotations``, so nothing here is evaluated at run time).

``DaskArrayLike`` (a Dask array or DataFrame) and ``DaskArray`` type the methods that also run on Dask; dask is
imported for the type checker only (it is an optional extra; without it they are ``Any``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Union

from numpy.typing import ArrayLike as ArrayLike, NDArray as NDArray

if TYPE_CHECKING:
    from dask.array import Array as DaskArray
    from dask.dataframe import DataFrame as _DaskDataFrame
    from typing_extensions import Self as Self  # typing.Self needs Python 3.11; dpcore supports 3.9

    DaskArrayLike = Union[DaskArray, _DaskDataFrame]
else:
    Self = DaskArray = DaskArrayLike = Any  # run-time placeholders: annotations are strings and never evaluated

__all__ = ["ArrayLike", "NDArray", "Self", "DaskArray", "DaskArrayLike"]

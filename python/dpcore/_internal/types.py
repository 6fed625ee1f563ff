"""Type aliases of the public signatures (annotations only; every module using them has
``from __future__ import annotations``, so nothing here is evaluated at run time).

``RandomState`` is what every ``random_state`` parameter takes (``None``: OS-seeded ChaCha20, the only setting for
private use; an int: reproducible, for research and tests; a ``ChaChaRng``: used as is). ``Labels`` is a declared
label set (``classes=``): any array-like of labels, or ``None`` for the fixed default rule.

``DaskArrayLike`` (a Dask array or DataFrame) and ``DaskArray`` type the methods that also run on Dask; dask is
imported for the type checker only (it is an optional extra; without it they are ``Any``)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Literal, Mapping, Optional, Union

from numpy.typing import ArrayLike as ArrayLike, NDArray as NDArray

if TYPE_CHECKING:
    from dpcore._core import ChaChaRng
    from dask.array import Array as DaskArray
    from dask.dataframe import DataFrame as _DaskDataFrame
    from typing_extensions import Self as Self  # typing.Self needs Python 3.11; dpcore supports 3.9

    DaskArrayLike = Union[DaskArray, _DaskDataFrame]
else:
    Self = DaskArray = DaskArrayLike = Any  # run-time placeholders: annotations are strings and never evaluated

#: every ``random_state`` parameter: None (OS-seeded, secure), an int seed (research/tests) or a ChaChaRng
RandomState = Union[None, int, "ChaChaRng"]
#: a declared label set (``classes=``): an array-like of labels, or None for the default rule
Labels = Optional[ArrayLike]
#: ``class_weight=``: a public dict {label: weight}, "balanced" (where the docstring allows it) or None
ClassWeight = Union[None, Mapping[Any, float], Literal["balanced"]]
#: a file path (state files, releases, key files)
StrPath = Union[str, "os.PathLike[str]"]
#: the fitted kernel ERM a service or release is built on: a KernelSVM / KernelLogisticRegression or any object with
#: the attributes they expose after fit (``mu_``, ``X_fit_``, ``lam``, ...) -- duck-typed, hence Any
KernelModel = Any
#: the state backends of the durable services (PINP, GPService)
StateBackend = Literal["auto", "file", "sqlite"]

__all__ = ["ArrayLike", "NDArray", "Self", "DaskArray", "DaskArrayLike", "RandomState", "Labels", "StrPath",
           "ClassWeight", "KernelModel", "StateBackend"]

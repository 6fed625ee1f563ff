"""Type aliases of the public signatures (annotations only; every module using them has
``from __future__ import annotations``, so nothing here is evaluated at run time)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from numpy.typing import ArrayLike as ArrayLike, NDArray as NDArray

if TYPE_CHECKING:
    from typing_extensions import Self as Self  # typing.Self needs Python 3.11; dpcore supports 3.9
else:
    Self = Any  # run-time placeholder: annotations are strings and never evaluated

__all__ = ["ArrayLike", "NDArray", "Self"]

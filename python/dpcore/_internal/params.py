"""The scikit-learn parameter protocol shared by dpcore's estimators (no scikit-learn import needed)."""

from __future__ import annotations

import inspect
from typing import Any

from dpcore._internal.types import Self


class ParamsMixin:
    """``get_params`` / ``set_params`` over the constructor's keyword parameters.

    Subclasses either list their parameter names in ``_PARAMS`` or leave it empty, in which case the
    names are read from the signature of ``__init__``. Works with ``sklearn.base.clone``.
    """

    _PARAMS: tuple = ()

    @classmethod
    def _get_param_names(cls) -> list:
        if cls._PARAMS:
            return list(cls._PARAMS)
        sig = inspect.signature(cls.__init__)
        skip = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        return sorted(name for name, p in sig.parameters.items() if name != "self" and p.kind not in skip)

    def get_params(self, deep: bool = True) -> dict:
        """Parameters of the estimator (scikit-learn protocol; works with ``sklearn.clone``)."""
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params: Any) -> Self:
        """Set parameters (scikit-learn protocol); unknown names raise ``ValueError``."""
        valid = self._get_param_names()
        for key in params:
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for {type(self).__name__}; valid parameters are {valid}")
        for key, value in params.items():
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        """``Name(k=v, ...)`` listing the parameters that differ from the ``__init__`` defaults
        (same value *and* type), as scikit-learn does."""
        defaults = inspect.signature(type(self).__init__).parameters
        changed = []
        for k, v in self.get_params().items():
            default = defaults[k].default
            try:
                same = v is default or (type(v) is type(default) and v == default)
            except Exception:  # pragma: no cover - exotic parameter values
                same = False
            if not same:
                changed.append(f"{k}={v!r}")
        return f"{type(self).__name__}({', '.join(changed)})"

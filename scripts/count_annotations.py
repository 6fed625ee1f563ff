"""Count the unannotated parameters of dpcore's public signatures.

The public API is every name in the ``__all__`` of ``dpcore`` and of each public (non-underscore) subpackage and
module below it, except ``dpcore.demo`` (the end-to-end story, not library API). For each public class this looks at
its ``__init__`` and every public method / property it defines or inherits from a dpcore class (scikit-learn's own
methods, e.g. ``get_params``, are scikit-learn's); for each public function, its signature. Objects of the compiled
extension (``dpcore._core``) are typed by ``python/dpcore/_core.pyi`` (checked by ``tests/test_stubs.py``) and skipped.

A parameter is unannotated when it has no annotation; ``self``/``cls`` never count. ``*args``/``**kwargs`` count
like any other parameter (every one in dpcore is annotated, e.g. ``**fit_params: Any`` where fit refuses them).
Missing return annotations are counted separately.

Usage: ``python scripts/count_annotations.py [-v]`` (``-v`` lists every unannotated parameter). Used by
``tests/test_typing.py`` (``unannotated()``).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

EXCLUDED_MODULES = ("dpcore.demo", "dpcore._core")


@dataclass
class Report:
    """What :func:`unannotated` found: every public signature looked at, and the gaps."""

    #: ``(qualified callable, parameter)`` for every parameter counted (self/cls excluded)
    parameters: list[tuple[str, str]] = field(default_factory=list)
    #: the subset without an annotation
    missing: list[tuple[str, str]] = field(default_factory=list)
    #: callables without a return annotation
    missing_return: list[str] = field(default_factory=list)
    #: ``(class, parameter)`` of constructor parameters (``__init__``), and the unannotated ones
    ctor_parameters: list[tuple[str, str]] = field(default_factory=list)
    ctor_missing: list[tuple[str, str]] = field(default_factory=list)


def public_modules() -> Iterator[Any]:
    """``dpcore`` and every public module below it (no path component starting with ``_``), without importing
    ``__main__`` modules."""
    import dpcore

    yield dpcore
    for info in pkgutil.walk_packages(dpcore.__path__, "dpcore."):
        name = info.name
        if any(part.startswith("_") for part in name.split(".")[1:]):
            continue
        if name.startswith(EXCLUDED_MODULES):
            continue
        yield importlib.import_module(name)


def public_objects() -> dict[str, Any]:
    """``{canonical name: object}`` of every name in a public ``__all__`` (each object once)."""
    seen: dict[int, str] = {}
    out: dict[str, Any] = {}
    for module in public_modules():
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if inspect.ismodule(obj) or id(obj) in seen:
                continue
            if not (inspect.isclass(obj) or inspect.isfunction(obj) or callable(obj)):
                continue  # constants (e.g. __version__)
            owner = getattr(obj, "__module__", "") or ""
            if not owner.startswith("dpcore") or owner.startswith(EXCLUDED_MODULES):
                continue  # re-exports of other libraries, and the compiled core (typed by _core.pyi)
            seen[id(obj)] = f"{module.__name__}.{name}"
            out[f"{module.__name__}.{name}"] = obj
    return out


def _methods(cls: type) -> Iterator[tuple[str, Callable[..., Any]]]:
    """``__init__`` and the public methods / property getters / setters of ``cls`` from dpcore classes."""
    done: set[str] = set()
    for klass in cls.__mro__:
        if not (getattr(klass, "__module__", "") or "").startswith("dpcore"):
            continue
        for name, attr in vars(klass).items():
            if name in done or (name.startswith("_") and name not in ("__init__", "__call__")):
                continue
            done.add(name)
            if isinstance(attr, (staticmethod, classmethod)):
                yield name, attr.__func__
            elif isinstance(attr, property):
                if attr.fget is not None:
                    yield name, attr.fget
                if attr.fset is not None:
                    yield f"{name}.setter", attr.fset
            elif inspect.isfunction(attr):
                yield name, attr
            elif inspect.isfunction(getattr(attr, "fn", None)):  # scikit-learn's available_if descriptors
                yield name, attr.fn


def unannotated() -> Report:
    """Walk the public API and count its (unannotated) parameters."""
    report = Report()
    for qualname, obj in sorted(public_objects().items()):
        if inspect.isclass(obj):
            if issubclass(obj, BaseException) and "__init__" not in vars(obj):
                continue  # exception classes without their own constructor take BaseException's (*args)
            items = [(f"{qualname}.{name}", fn) for name, fn in _methods(obj)]
        elif inspect.isfunction(obj):
            items = [(qualname, obj)]
        else:
            continue
        for where, fn in items:
            sig = inspect.signature(fn)
            params = list(sig.parameters.values())
            if inspect.isclass(obj) and params and params[0].name in ("self", "cls"):
                params = params[1:]
            for p in params:
                entry = (where, p.name)
                report.parameters.append(entry)
                is_ctor = where.endswith(".__init__")
                if is_ctor:
                    report.ctor_parameters.append(entry)
                if p.annotation is inspect.Parameter.empty:
                    report.missing.append(entry)
                    if is_ctor:
                        report.ctor_missing.append(entry)
            if sig.return_annotation is inspect.Signature.empty:
                report.missing_return.append(where)
    return report


def main(argv: list[str]) -> int:
    report = unannotated()
    print(f"constructor parameters: {len(report.ctor_missing)} of {len(report.ctor_parameters)} unannotated")
    print(f"all public parameters:  {len(report.missing)} of {len(report.parameters)} unannotated")
    print(f"return annotations:     {len(report.missing_return)} public callables without one")
    if "-v" in argv:
        for where, name in report.missing:
            print(f"  {where}: {name}")
        for where in report.missing_return:
            print(f"  {where}: -> ?")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

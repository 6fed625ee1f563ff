"""Every ``Examples`` section of dpcore's docstrings runs as a doctest (numpydoc convention)."""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
import re

import pytest

import dpcore

MODULES = sorted(m.name for m in pkgutil.walk_packages(dpcore.__path__, "dpcore.")
                 if not m.name.endswith("demo") and ".__main__" not in m.name)


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name):
    module = importlib.import_module(name)
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                                  verbose=False, report=True)
    assert failures == 0, f"{failures} doctest failure(s) in {name}"


# Every public class and function (the ``__all__`` of these modules; the same list as the API
# reference, tests/test_docs.py) has an ``Examples`` section, so a new one cannot be added without.
PUBLIC_MODULES = ["dpcore", "dpcore.mechanisms", "dpcore.accounting", "dpcore.accounting.calibrate",
                  "dpcore.audit", "dpcore.preprocessing", "dpcore.kernels", "dpcore.kernel_learning", "dpcore.glm",
                  "dpcore.private_svm", "dpcore.ldp", "dpcore.datasets", "dpcore.exceptions"]
#: Objects whose docstring lives in the Rust bindings (src/bindings/), outside the Python docstrings.
RUST_DOCSTRINGS = {"dpcore._core.ChaChaRng"}


def _public_objects():
    seen = {}
    for modname in PUBLIC_MODULES:
        module = importlib.import_module(modname)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                seen.setdefault(id(obj), (f"{obj.__module__}.{obj.__qualname__}", obj))
    return sorted(seen.values(), key=lambda t: t[0])


PUBLIC_OBJECTS = _public_objects()


def test_public_objects_found():
    assert len(PUBLIC_OBJECTS) > 90


@pytest.mark.parametrize("qualname,obj", PUBLIC_OBJECTS, ids=[q for q, _ in PUBLIC_OBJECTS])
def test_public_object_has_examples(qualname, obj):
    if qualname in RUST_DOCSTRINGS:
        pytest.skip("docstring defined in the Rust bindings")
    doc = inspect.getdoc(obj) or ""
    assert re.search(r"^Examples\n--------\n", doc, re.M), f"{qualname} has no numpydoc Examples section"
    assert ">>> " in doc.split("Examples\n--------\n", 1)[1], f"{qualname}: Examples has no doctest"

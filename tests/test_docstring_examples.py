"""Every ``Examples`` section of dpcore's docstrings runs as a doctest (numpydoc convention)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

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

"""The public API is typed (issue 25 item 4): no public parameter without an annotation, ``mypy --strict`` catches
a wrongly typed argument (``ObjectivePerturbation(epsilon="one")``), and the API pages list public bases only.

The count comes from ``scripts/count_annotations.py`` (also a command-line report); the whole-API ``mypy --strict``
check of a user's script is ``tests/typing/test_mypy_strict.py``."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dpcore

ROOT = Path(__file__).resolve().parents[1]


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_public_parameter_is_annotated():
    counter = _load(ROOT / "scripts" / "count_annotations.py", "_dpcore_count_annotations")
    report = counter.unannotated()
    # the walk sees the API: every estimator constructor and the calibration dataclasses
    assert len(report.ctor_parameters) > 500, len(report.ctor_parameters)
    assert ("dpcore.ObjectivePerturbation.__init__", "epsilon") in report.ctor_parameters
    assert not report.missing, "unannotated public parameters:\n" + "\n".join(f"{w}: {p}" for w, p in report.missing)
    assert not report.missing_return, "public callables without a return annotation:\n" + "\n".join(
        report.missing_return)


# ------------------------------------------------------------------------------------------- mypy --strict
def _mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    pytest.importorskip("mypy", reason="mypy is in requirements-dev.txt and the [test] extra")
    script = tmp_path / "snippet.py"
    script.write_text(source)
    config = tmp_path / "mypy.ini"  # a private config and cache: mypy sees only the snippet and dpcore
    config.write_text(f"[mypy]\ncache_dir = {tmp_path / 'mypy_cache'}\n")
    env = dict(os.environ)
    root = str(Path(dpcore.__file__).resolve().parent.parent)  # the dpcore under test (checkout or wheel)
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--config-file", str(config), script.name],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)


SNIPPET = """\
import dpcore

bad = dpcore.ObjectivePerturbation(epsilon="one")
good = dpcore.ObjectivePerturbation(epsilon=1.0, delta=1e-6, data_norm=1.0, loss="hinge", random_state=None)
also_bad = dpcore.PrivateSVM(epsilon=1.0, kernel="sigmoid")
"""


def test_mypy_strict_refuses_a_string_epsilon_and_accepts_a_float(tmp_path):
    proc = _mypy(tmp_path, SNIPPET)
    out = proc.stdout
    assert "snippet.py:3: error: Argument \"epsilon\" to \"ObjectivePerturbation\" has incompatible type \"str\"" in out, \
        out + proc.stderr
    assert "[arg-type]" in out.splitlines()[0] or "[arg-type]" in out
    assert "snippet.py:4:" not in out, out  # the correct call type-checks
    assert "snippet.py:5: error:" in out and "kernel" in out, out  # Literal kernels: a typo is caught too
    assert proc.returncode == 1


# ------------------------------------------------------------------------------------------- API pages
def _conf():
    pytest.importorskip("sphinx")
    return _load(ROOT / "docs" / "conf.py", "_dpcore_docs_conf")


def test_api_pages_show_public_bases_only():
    conf = _conf()

    class App:
        def __init__(self):
            self.handlers = {}

        def connect(self, event, handler):
            self.handlers[event] = handler

    app = App()
    conf.setup(app)
    hook = app.handlers["autodoc-process-bases"]
    for cls in (dpcore.ObjectivePerturbation, dpcore.OutputPerturbation, dpcore.SimplexERM, dpcore.PrivateSVM,
                dpcore.PINP, dpcore.GPService, dpcore.ldp.MeanEstimationProtocol, dpcore.KernelSVM):
        bases = list(cls.__bases__)
        hook(None, cls.__qualname__, cls, {}, bases)
        assert bases, cls
        names = [f"{b.__module__}.{b.__name__}" for b in bases]
        assert not any(part.startswith("_") for n in names for part in n.split(".")), (cls, names)
    bases = list(dpcore.ObjectivePerturbation.__bases__)
    hook(None, "ObjectivePerturbation", dpcore.ObjectivePerturbation, {}, bases)
    from sklearn.base import BaseEstimator

    assert BaseEstimator in bases  # a private base is replaced by its public ancestors, not just dropped

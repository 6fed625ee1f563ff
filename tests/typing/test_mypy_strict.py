"""``mypy --strict`` on a user's script that uses every public class and function of dpcore
(``tests/typing/user_script.py``) reports nothing: the public API is fully annotated, ``py.typed`` ships, and the
script also runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import dpcore

pytest.importorskip("mypy", reason="mypy is in requirements-dev.txt (installed by scripts/test.sh)")

SCRIPT = Path(__file__).with_name("user_script.py")
#: Predictions on Dask (the optional extra): checked with --allow-untyped-calls, as dask's own API is not annotated.
DASK_SCRIPT = Path(__file__).with_name("dask_script.py")


def _env() -> dict:
    """The environment of the subprocesses: the dpcore under test first on the path (the checkout or the wheel)."""
    env = dict(os.environ)
    root = str(Path(dpcore.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def test_py_typed_ships():
    assert (Path(dpcore.__file__).parent / "py.typed").is_file()


def _mypy_strict(tmp_path, source: Path, *flags: str) -> subprocess.CompletedProcess:
    # run from a temporary directory with a private config and cache, so mypy sees only the script and the
    # installed dpcore (not the repository's files; see tests/test_stubs.py)
    script = tmp_path / source.name
    shutil.copy(source, script)
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\ncache_dir = {tmp_path / 'mypy_cache'}\n")
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", *flags, "--config-file", str(config), script.name],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, env=_env())


def test_user_script_is_clean_under_mypy_strict(tmp_path):
    proc = _mypy_strict(tmp_path, SCRIPT)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "Success: no issues found" in proc.stdout


def test_user_script_runs(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT)], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env=_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_dask_script_is_clean_under_mypy_strict_and_runs(tmp_path):
    pytest.importorskip("dask.array")
    proc = _mypy_strict(tmp_path, DASK_SCRIPT, "--allow-untyped-calls")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "Success: no issues found" in proc.stdout
    proc = subprocess.run([sys.executable, str(DASK_SCRIPT)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, env=_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.split()[-1] == "True"

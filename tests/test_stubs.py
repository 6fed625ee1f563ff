"""The type stub of the compiled extension, ``python/dpcore/_core.pyi``, matches the module at runtime:
every function and class, argument names, kinds and defaults, ``__all__`` (``mypy.stubtest``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("mypy", reason="mypy is in requirements-dev.txt (installed by scripts/test.sh)")


def test_core_stub_matches_the_extension_module(tmp_path):
    config = tmp_path / "mypy.ini"  # keeps mypy's cache out of the package directory
    config.write_text(f"[mypy]\ncache_dir = {tmp_path / 'mypy_cache'}\n")
    proc = subprocess.run([sys.executable, "-m", "mypy.stubtest", "dpcore._core", "--mypy-config-file", str(config)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Success" in proc.stdout

"""Imports point down the layers only (DEVELOPERS.md, "Layout"): every ``dpcore`` import in the package —
module level or inside a function — goes from a subpackage to one of a strictly lower rank."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "dpcore"

#: The layers, lowest first. Model families sit above the shared layers; a family may build on a lower one
#: (private_svm on glm's certified solvers, kernel_learning's selection on glm's linear candidates), never the
#: reverse, so no two families import each other.
RANK = {
    "_core": 0, "exceptions": 0,
    "_internal": 1, "datasets": 1,
    "accounting": 2,
    "mechanisms": 3, "audit": 3,
    "kernels": 4,
    "preprocessing": 5, "glm": 5, "ldp": 5,
    "private_svm": 6, "kernel_learning": 6,
    "demo": 9, "<root>": 9,
}


def _layer(module: str) -> str:
    parts = module.split(".")
    return "<root>" if len(parts) == 1 else parts[1]


def _imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("dpcore"):
            if node.module == "dpcore":
                yield from (f"dpcore.{a.name}" for a in node.names)
            else:
                yield node.module
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("dpcore."))


def _module(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.parts[-1] == "__init__" else rel.parts)


def _edges():
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module(path)
        src = _layer(module)
        for target in _imports(path):
            dst = _layer(target)
            if dst != src:
                yield module, src, target, dst


def test_every_layer_has_a_rank():
    layers = {_layer(_module(p)) for p in PACKAGE.rglob("*.py")}
    assert layers <= set(RANK), sorted(layers - set(RANK))


def test_imports_point_down():
    upward = [f"{module} imports {target} ({src} → {dst})" for module, src, target, dst in _edges()
              if dst in RANK and RANK[dst] >= RANK[src]]
    assert not upward, "\n".join(upward)


@pytest.mark.parametrize("text, expect", [("from dpcore.glm import x", ["dpcore.glm"]),
                                          ("def f():\n    from dpcore import kernels", ["dpcore.kernels"]),
                                          ("import dpcore.mechanisms.noise", ["dpcore.mechanisms.noise"])])
def test_the_scanner_sees_lazy_and_plain_imports(tmp_path, text, expect):
    p = tmp_path / "m.py"
    p.write_text(text)
    assert list(_imports(p)) == expect

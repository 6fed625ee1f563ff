"""The OpenDP example of docs/privacy.md ("OpenDP interoperability") runs verbatim."""

from __future__ import annotations

import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "privacy.md"


def _example() -> str:
    text = DOC.read_text(encoding="utf-8")
    m = re.search(r"<!-- opendp-example:start -->\s*```python\n(.*?)```\s*<!-- opendp-example:end -->", text, re.S)
    assert m, "the OpenDP example block is missing from docs/privacy.md"
    return m.group(1)


def test_opendp_example_runs():
    pytest.importorskip("opendp")
    namespace: dict = {}
    exec(compile(_example(), str(DOC), "exec"), namespace)  # noqa: S102 - our own documentation
    lap, gauss = namespace["laplace_sum"], namespace["gaussian_sum"]
    assert lap.map(1) == 0.5 and lap.map(3) == 1.5
    sigma = namespace["sigma"]
    assert gauss.map(1) == pytest.approx(1.0 / (2.0 * sigma**2))
    # the zCDP the map states is at least the (1, 1e-6) guarantee dpcore calibrated σ for
    from dpcore.accounting.calibrate import zcdp_epsilon

    assert zcdp_epsilon(gauss.map(1), 1e-6) >= 1.0
    released = namespace["released"]
    assert all(isinstance(v, float) for v in released)
    assert abs(released[0] - sum(namespace["x"])) < 100 and abs(released[1] - sum(namespace["x"])) < 100
    assert 1.0 < namespace["eps_both"] < 10.0

"""One home per language for every floating-point assumption (issue 12, part 2).

``dpcore._internal.fp`` (Python) and ``src/fp.rs`` (Rust, via ``_core.fp_constants``) must agree on the
constants both rely on, and no other module may define its own copy of them.
"""

from __future__ import annotations

import math
import pathlib
import re

import numpy as np
import pytest

from dpcore import _core

from dpcore._internal import fp as _fp

from dpcore.mechanisms import exponential as linear_em
PKG = pathlib.Path(_fp.__file__).parent.parent


def test_python_and_rust_constants_agree():
    rust = _core.fp_constants()
    assert rust["UNIT_ROUNDOFF"] == _fp.UNIT_ROUNDOFF == 2.0**-53
    assert rust["RADIUS_TOL"] == _fp.RADIUS_TOL == 2.0**-40
    assert rust["LIBM_LN_ULPS"] == _fp.LIBM_LN_ULPS == 2
    assert rust["EXP_FAST_ULPS"] == _fp.KERNEL_EXP_ULPS == 2
    assert rust["KERNEL_SUM_REL_ERROR"] == _fp.KERNEL_SUM_REL_ERROR == 1e-12


def test_gamma_k_has_one_overflow_behaviour():
    assert _fp.gamma_k(0) == 0.0
    assert _fp.gamma_k(10) == pytest.approx(10 * 2.0**-53, rel=1e-12)
    assert _fp.gamma_k(2**52) == math.inf and _fp.gamma_k(2**60) == math.inf
    from dpcore.glm import _losses as _glm_losses
    from dpcore.glm import _simplex_solver
    assert _glm_losses.gamma_k is _fp.gamma_k and _simplex_solver.gamma_k is _fp.gamma_k


# Definitions of an fp assumption outside dpcore/_internal/fp.py (a literal 2**-53 / 2**-40 / 1e-12 slack
# bound to a name). Aliases of the _fp names (``_U = UNIT_ROUNDOFF``) are allowed.
_DEFINITION = re.compile(
    r"^\s*_?(UNIT_ROUNDOFF|RADIUS_TOL|SLACK|_SLACK|_BOUND_SLACK|_SHRINK|FP_EXP_ULPS|RANGE_SLACK|"
    r"FP_REL_ERROR|FP_REJECT_ERROR|U)\s*=\s*[0-9(]", re.M)


def test_no_module_defines_its_own_fp_constant():
    offenders = []
    for path in sorted(PKG.rglob("*.py")):
        if path.relative_to(PKG).as_posix() == "_internal/fp.py":
            continue
        for m in _DEFINITION.finditer(path.read_text()):
            offenders.append(f"{path.relative_to(PKG)}: {m.group(0).strip()}")
        if re.search(r"^def (_gamma|gamma_k)\(", path.read_text(), re.M):
            offenders.append(f"{path.relative_to(PKG)}: defines gamma_k")
    assert not offenders, offenders


def test_no_rust_module_defines_its_own_fp_constant():
    src = PKG.parent.parent / "src"
    if not src.is_dir():
        pytest.skip("Rust sources not available (installed wheel)")
    pat = re.compile(r"^\s*(pub )?const (U|UNIT_ROUNDOFF|LIBM_LN_ULPS|FP_REL|RADIUS_TOL|H_SHRINK|T_SLACK|"
                     r"T_IN_SLACK|PROJ_SHRINK): f64", re.M)
    offenders = [f"{p.name}: {m.group(0).strip()}" for p in src.rglob("*.rs") if p.name != "fp.rs"
                 for m in pat.finditer(p.read_text())]
    assert not offenders, offenders


def test_net_snapping_is_the_rust_one():
    """The continuous TDIL sampler snaps onto exactly the points the Rust net enumerates."""
    d, nu, r = 2, 0.3, 1.0
    coords, points = _core.net_points(d, nu, r, 10_000)
    table = {tuple(c): p for c, p in zip(coords.tolist(), points)}
    rng = np.random.default_rng(0)
    for _ in range(300):
        z = rng.normal(size=d)
        z *= rng.uniform() * r / np.linalg.norm(z)
        c, p = linear_em.snap_to_net(z, nu, r)
        assert tuple(c.tolist()) in table, (z, c)
        np.testing.assert_array_equal(p, table[tuple(c.tolist())])
        assert np.linalg.norm(p) <= r
    with pytest.raises(ValueError, match="^z"):
        linear_em.snap_to_net(np.array([np.nan, 0.0]), nu, r)

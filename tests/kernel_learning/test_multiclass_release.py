"""Joint K-class GP release (issue 24): calibration (√2, independent of K), reproducibility, accounting,
validation, and the empirical audit on a K = 3 worst-case pair with a broken copy that uses the binary
sensitivity (L = 1 instead of √2)."""

from __future__ import annotations

import math
from pathlib import Path
import sys

import numpy as np
import pytest

import dpcore
from dpcore import MulticlassKernelLogisticRegression, MulticlassTDDL
from dpcore.accounting.calibrate import gaussian_sigma_analytic
from dpcore.audit import audit
from dpcore.kernel_learning.multiclass_release import multiclass_gp_calibration
from dpcore.mechanisms.noise import check_random_state


sys.path.insert(0, str(Path(__file__).resolve().parent))
from _multiclass_pair import PairModel  # noqa: E402


class _BinarySensitivity(MulticlassTDDL):
    """Deliberately broken copy: calibrates with the binary Lipschitz constant (L = 1, no √2)."""

    _sensitivity_factor = 1.0 / math.sqrt(2.0)


def _sampler(cls, Z, **kw):
    def sampler(model, n, seed):
        t = cls(model, random_state=seed, **kw)
        prep = t.prepare(Z)
        return t._noisy_values(prep, check_random_state(seed), n).reshape(n, -1)
    return sampler


def test_audit_k3_worst_case_pair_and_catch_binary_sensitivity():
    mA, mB = PairModel(+1), PairModel(-1)
    Z = np.full((1, 1), 0.5)
    kw = dict(epsilon=1.0, delta=1e-5, data_norm=1.0)
    cal = MulticlassTDDL(mA, **kw).prepare(Z)["cal"]
    # Δ = 2√2 R/(λn) + 2 sqrt(2 tol/λ): the pair's distance is the first term (the solver term is 2e-4 of it)
    assert cal.sensitivity == pytest.approx(2 * math.sqrt(2) / (2.0 * 40), rel=3e-4)
    u = np.array([1.0, -1.0, 0.0]) / math.sqrt(2.0)
    vA, vB = mA.mu_.sum(axis=0), mB.mu_.sum(axis=0)  # scores at z (k(z, z) = 1)
    assert float(u @ (vA - vB)) == pytest.approx(cal.sensitivity, rel=3e-4)
    sd = cal.noise_scale  # k(z, z) = 1: std of u·Y
    thresholds = sd * np.linspace(0.0, 4.0, 17)  # mid = 0; fixed before sampling
    n = 4_000_000
    res = audit(_sampler(MulticlassTDDL, Z, **kw), mA, mB, n_samples=n, direction=u, thresholds=thresholds,
                delta=1e-5, random_state=1)
    res.assert_private(1.0)
    broken = audit(_sampler(_BinarySensitivity, Z, **kw), mA, mB, n_samples=n, direction=u, thresholds=thresholds,
                   delta=1e-5, random_state=32)
    assert broken.epsilon_lower_bound > 1.0, str(broken)
    with pytest.raises(AssertionError, match="refuted"):
        broken.assert_private(1.0)


def test_per_class_noise_is_sqrt2_times_binary_for_every_k():
    """σ of the joint release / σ of the binary GP release at the same (λ, n, ε, δ): √2 for K = 2..26."""
    from dpcore.kernel_learning.tddl import tddl_calibration
    from dpcore.kernel_learning.gp import gp_factor

    fac = gp_factor(np.eye(3), r_phi_sq=1.0, kernel_error=1e-16)
    binary = tddl_calibration(n=16000, lam=1e-4, lipschitz=1.0, r_phi_sq=1.25, w_error_bound=0.0, fp_error=0.0,
                              epsilon=1.0, delta=1e-6, n_points=3, noise="gp", gp_factor=fac, value_bound=1.0)
    for K in (2, 3, 10, 26):
        cal = multiclass_gp_calibration(n=16000, n_classes=K, lam=1e-4, lipschitz=math.sqrt(2), r_phi_sq=1.25,
                                        w_error_bound=0.0, epsilon=1.0, delta=1e-6)
        assert cal.noise_scale / binary.noise_scale == pytest.approx(math.sqrt(2), rel=1e-9)
        assert cal.noise_scale == pytest.approx(gaussian_sigma_analytic(cal.sensitivity, cal.epsilon_stage1,
                                                                        cal.delta_stage1))


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    ang = 2 * np.pi * np.arange(3) / 3
    centers = 0.5 * np.column_stack([np.cos(ang), np.sin(ang)])
    y = rng.integers(0, 3, size=3000)
    X = np.clip(centers[y] + 0.1 * rng.standard_normal((3000, 2)), -0.7, 0.7)
    return MulticlassKernelLogisticRegression(lam=1e-2, gamma=2.0, classes=[0, 1, 2], tol=1e-7).fit(X, y), X, y


def test_release_reproducible_accounted_and_accurate(fitted):
    m, X, y = fitted
    Z = np.random.default_rng(1).uniform(-0.7, 0.7, size=(80, 2))
    acc = dpcore.BudgetAccountant(2.0, 1e-5)
    a = MulticlassTDDL(m, 1.0, 1e-6, data_norm=1.0, random_state=3, accountant=acc).fit(Z)
    b = MulticlassTDDL(m, 1.0, 1e-6, data_norm=1.0, random_state=3).fit(Z)
    np.testing.assert_array_equal(a.noisy_values_, b.noisy_values_)
    assert 0.0 < acc.spent[0] <= 2.0  # charged (the filter reports the GDP event at its own δ)
    assert a.score(X, y) > 0.9
    # huge ε: the release reproduces the model's scores at Z
    big = MulticlassTDDL(m, 1e6, 1e-6, data_norm=1.0, random_state=0).fit(Z)
    np.testing.assert_allclose(big.noisy_values_, m._scores(Z), atol=1e-3)


def test_validation_before_any_charge(fitted):
    m, X, y = fitted
    acc = dpcore.BudgetAccountant(1.0, 1e-5)
    Z = np.zeros((3, 2))
    for kw, match in ((dict(epsilon=0.0), "epsilon"), (dict(delta=0.0), "delta"), (dict(data_norm=-1.0), "data_norm")):
        args = dict(epsilon=1.0, delta=1e-6, data_norm=1.0, accountant=acc) | kw
        with pytest.raises(ValueError, match=match):
            MulticlassTDDL(m, **args).fit(Z)
    with pytest.raises(ValueError, match="Z"):
        MulticlassTDDL(m, 1.0, 1e-6, data_norm=1.0, accountant=acc).fit(np.full((3, 2), 5.0))
    with pytest.raises(TypeError, match="MulticlassKernelLogisticRegression"):
        MulticlassTDDL(dpcore.KernelSVM(), 1.0, 1e-6, data_norm=1.0, accountant=acc).fit(Z)
    with pytest.raises(dpcore.exceptions.NotFittedError):
        MulticlassTDDL(MulticlassKernelLogisticRegression(classes=[0, 1, 2]), 1.0, 1e-6, data_norm=1.0).fit(Z)
    assert acc.spent[0] == 0.0

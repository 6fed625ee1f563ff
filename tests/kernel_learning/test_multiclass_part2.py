"""Issue 24, second half: the multi-class auto λ rule, MulticlassGPService, the private multinomial linear
model and one-vs-rest with joint accounting."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpcore
from dpcore.kernel_learning.gp import auto_lam
from dpcore.kernel_learning.multiclass_release import multiclass_auto_lam, multiclass_gp_calibration


# ---------------------------------------------------------------- item 1: the auto λ rule with L = √2
def test_multiclass_auto_lam_is_the_binary_rule_with_sqrt2():
    for eps in (0.5, 1.0, 2.0, 5.0):
        lam = multiclass_auto_lam(16_000, eps, 1e-6, data_norm=1.0)
        ref = auto_lam(16_000, eps, 1e-6, data_norm=1.0, lipschitz=math.sqrt(2), intercept_scaling=0.5)
        assert lam == ref
        assert lam / auto_lam(16_000, eps, 1e-6, data_norm=1.0, intercept_scaling=0.5) == pytest.approx(math.sqrt(2))
    # declared class weights raise L to √2·w_max
    w = multiclass_auto_lam(1000, 1.0, 1e-6, data_norm=1.0, max_class_weight=3.0)
    assert w / multiclass_auto_lam(1000, 1.0, 1e-6, data_norm=1.0) == pytest.approx(3.0)


@pytest.mark.parametrize("K", [2, 3, 26])
def test_auto_lam_puts_per_class_noise_at_half_the_margin_for_every_k(K):
    """σ·R_φ' of the joint release at the auto λ is ρ = 1/2 (up to the 10⁻³ residual share), whatever K."""
    n, eps, delta = 16_000, 1.0, 1e-6
    lam = multiclass_auto_lam(n, eps, delta, data_norm=1.0)
    cal = multiclass_gp_calibration(n=n, n_classes=K, lam=lam, lipschitz=math.sqrt(2), r_phi_sq=1.25,
                                    w_error_bound=0.0, epsilon=eps, delta=delta)
    assert cal.noise_scale * math.sqrt(1.25) == pytest.approx(0.5, rel=2e-3)


def test_multiclass_auto_lam_validates_by_name():
    for kw, match in ((dict(epsilon=0.0), "epsilon"), (dict(delta=0.0), "delta"), (dict(data_norm=-1.0), "data_norm"),
                      (dict(max_class_weight=0.5), "max_class_weight"), (dict(n_samples=0), "n_samples"),
                      (dict(intercept_scaling=-1.0), "intercept_scaling")):
        args = dict(n_samples=100, epsilon=1.0, delta=1e-6, data_norm=1.0) | kw
        n, e, d = args.pop("n_samples"), args.pop("epsilon"), args.pop("delta")
        with pytest.raises(ValueError, match=match):
            multiclass_auto_lam(n, e, d, **args)

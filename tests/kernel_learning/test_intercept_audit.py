"""Issue 23, item 1: privacy audits of the GP releases (TDDL noise="gp", GPService) with the intercept on.

The models use the augmented kernel ``K' = K + b²`` (public ``b = intercept_scaling``), so every mechanism
must calibrate with ``R_φ'² = R_φ² + b²``. The worst-case neighbouring pair (``_pinp_worker.worst_pair``)
changes the label of one of n identical training points ``z`` with ``K(z, z) = R_φ²``: the closed-form
exact optimum ``μ = y/(λn)`` (all margins < 1 under K', asserted) moves ``w`` by exactly
``2 R_φ'/(λn)``, the sensitivity, and the mean of T public copies of ``z`` is a tight 1-D Gaussian
mechanism (GP noise is the same on every copy).

The pair uses the *linear* kernel on data of norm ``r = 0.25`` (``R_φ² = r²``): the bias is then most of the
feature-map radius (``R_φ'²/R_φ² = 5`` at ``b = 0.5``, 17 at ``b = 1``), so a broken copy that calibrates with
``R_φ`` (drops ``b²``: noise too small by ``√5`` or ``√17``) is caught. With rbf (``R_φ² = 1``) the same broken
copy has only ``√1.25`` / ``√2`` too little noise, below what 10⁶ samples at α = 1e-6 can refute (measured
lower bound 0.69 / 0.89 for a claimed 1).

Clopper–Pearson at α = 1e-6 (dpcore.audit), thresholds fixed from the honest calibration before sampling.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

import dpcore
from dpcore import GPService, TDDL
from dpcore.audit import audit
from dpcore.kernel_learning import gp_service as _gp_service_module
from dpcore.kernel_learning import tddl as _tddl_module

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("_pinp_worker", HERE / "_pinp_worker.py")
W = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(W)

R = 0.25  # data_norm of the audit pair: the linear kernel's R_φ² = R² = 1/16
T = 4  # public points / queries, all equal to the changed training point
EPS, DELTA = 1.0, 1e-5


def _pair(b):
    return W.worst_pair(n=40, lam=2.0, z=R, kernel="linear", intercept_scaling=b)


class _NoShiftCore:
    """Stand-in for the ``_core`` module whose ``feature_map_radius_sq`` ignores the shift (returns R_φ², not
    R_φ² + b²); everything else (kernel rows, predictions, noise) is the real engine, shift included."""

    def __init__(self, core):
        self._core = core

    def __getattr__(self, name):
        return getattr(self._core, name)

    def feature_map_radius_sq(self, radius, kernel, gamma, degree, coef0, shift=0.0):
        return self._core.feature_map_radius_sq(radius, kernel, gamma, degree, coef0, 0.0)


class _TDDLIgnoringBias(TDDL):
    """Broken copy: calibrates with R_φ (the bias-free radius) while releasing the model with the bias."""

    def prepare(self, Z):
        with mock.patch.object(_tddl_module, "_core", _NoShiftCore(_tddl_module._core)):
            return super().prepare(Z)


class _GPServiceIgnoringBias(GPService):
    """Broken copy of the service: calibrates with R_φ while answering with the biased model."""

    def _setup(self, model, params, random_state):
        with mock.patch.object(_gp_service_module, "_core", _NoShiftCore(_gp_service_module._core)):
            return super()._setup(model, params, random_state)


def _tddl_sampler(cls, Z):
    def sampler(model, n, seed):
        t = cls(model, EPS, DELTA, data_norm=R, noise="gp", random_state=seed)
        prep = t.prepare(Z)
        return t._noisy_predictions(prep, dpcore.mechanisms.noise.check_random_state(seed), n)
    return sampler


def _service_sampler(cls, Z):
    def sampler(model, n, seed):
        s = cls(model, EPS, DELTA, data_norm=R, max_exact_queries=T, random_state=0)
        return s._sample_sessions(Z, n, seed)  # the same query asked T times
    return sampler


def _thresholds(sigma, fa, fb, b):
    """Thresholds on u·ŷ (u = 1/√T): from the midpoint of the two means up to 4 sd of the honest noise
    (sd of u·ŷ = σ √(T K'(z, z)), K'(z, z) = R² + b²); computed from the calibration, before sampling."""
    mid = math.sqrt(T) * (fa + fb) / 2.0
    return mid + sigma * math.sqrt(T * (R * R + b * b)) * np.linspace(0.0, 4.0, 9)


def test_worst_pair_with_the_bias_is_exact_and_attains_the_sensitivity():
    for b in (0.5, 1.0):
        mA, mB = _pair(b)
        assert mA.kernel_params_["intercept_scaling"] == b
        z = np.full((1, 1), R)
        fa, fb = float(mA.decision_function(z)[0]), float(mB.decision_function(z)[0])
        # f_A(z) − f_B(z) = 2 K'(z, z)/(λn) = ⟨w_A − w_B, φ'(z)⟩ with ‖w_A − w_B‖ = 2 R_φ'/(λn), ‖φ'(z)‖ = R_φ'
        assert fa - fb == pytest.approx(2.0 * (R * R + b * b) / (2.0 * 40), rel=1e-12)
        cal = TDDL(mA, EPS, DELTA, data_norm=R, noise="gp").prepare(np.full((T, 1), R))["cal"]
        assert cal.r_phi == pytest.approx(math.sqrt(R * R + b * b), rel=1e-9)
        assert cal.weight_sensitivity == pytest.approx(2.0 * math.sqrt(R * R + b * b) / (2.0 * 40), rel=1e-6)
        assert GPService(mA, EPS, DELTA, data_norm=R).privacy_.r_phi == cal.r_phi
    # λ must exceed K'(z, z): with rbf at b = 1, λ = 2 makes the all-positive margins exactly 1 (not exact)
    with pytest.raises(AssertionError, match="closed form"):
        W.worst_pair(lam=2.0, intercept_scaling=1.0)


@pytest.mark.parametrize("b, seed", [(0.5, 41), (1.0, 51)])
def test_audit_gp_release_with_bias_and_catch_the_copy_that_ignores_it(b, seed):
    mA, mB = _pair(b)
    Z = np.full((T, 1), R)
    sigma = TDDL(mA, EPS, DELTA, data_norm=R, noise="gp").prepare(Z)["cal"].noise_scale
    fa, fb = float(mA.decision_function(Z[:1])[0]), float(mB.decision_function(Z[:1])[0])
    thresholds = _thresholds(sigma, fa, fb, b)
    u = np.ones(T) / math.sqrt(T)
    res = audit(_tddl_sampler(TDDL, Z), mA, mB, n_samples=1_000_000, direction=u, thresholds=thresholds,
                delta=DELTA, random_state=seed)
    res.assert_private(EPS)
    broken = audit(_tddl_sampler(_TDDLIgnoringBias, Z), mA, mB, n_samples=1_000_000, direction=u,
                   thresholds=thresholds, delta=DELTA, random_state=seed + 1)
    assert broken.epsilon_lower_bound > 1.1 * EPS, str(broken)
    with pytest.raises(AssertionError, match="refuted"):
        broken.assert_private(EPS)


@pytest.mark.parametrize("b, seed", [(0.5, 61), (1.0, 71)])
def test_audit_gp_service_with_bias_and_catch_the_copy_that_ignores_it(b, seed):
    mA, mB = _pair(b)
    Z = np.full((T, 1), R)
    sigma = GPService(mA, EPS, DELTA, data_norm=R, max_exact_queries=T).privacy_.noise_scale
    fa, fb = float(mA.decision_function(Z[:1])[0]), float(mB.decision_function(Z[:1])[0])
    thresholds = _thresholds(sigma, fa, fb, b)
    u = np.ones(T) / math.sqrt(T)
    res = audit(_service_sampler(GPService, Z), mA, mB, n_samples=1_000_000, direction=u, thresholds=thresholds,
                delta=DELTA, random_state=seed)
    res.assert_private(EPS)
    broken = audit(_service_sampler(_GPServiceIgnoringBias, Z), mA, mB, n_samples=1_000_000, direction=u,
                   thresholds=thresholds, delta=DELTA, random_state=seed + 1)
    assert broken.epsilon_lower_bound > 1.1 * EPS, str(broken)
    with pytest.raises(AssertionError, match="refuted"):
        broken.assert_private(EPS)

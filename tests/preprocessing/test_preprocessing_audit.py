"""Empirical privacy audits of dpcore.preprocessing (Clopper–Pearson, α = 1e-6, events fixed before sampling).

Both audits sample the production release code (``release_moments`` with the scaler's ``moments_plan``;
``em_quantile_column`` at the ``em_epsilon`` the fit uses) on a worst-case neighbouring pair chosen from the
proofs, and each is shown to catch a broken copy with half the noise (twice the ε in the exponent).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcore.audit import audit
from dpcore.preprocessing import quantiles as qmod
from dpcore.preprocessing import scalers as smod

EPS = 1.0


# ------------------------------------------------------------------------------ StandardScaler moments
# d = 1, declared bounds [0, 1] (c = h = 1/2), n = 4: A has every record at u = −1/4 (x = 0.375); B replaces
# one by u = 1 (x = 1), the pair where the L1 change of (m1, m2) is the proven maximum 25/16·1/n.
LOWER, UPPER = np.array([0.0]), np.array([1.0])
XA = np.full((4, 1), 0.375)
XB = XA.copy()
XB[0, 0] = 1.0
M_B = smod.moment_terms(XB, LOWER, UPPER)  # public: computed from the declared pair, before sampling


def _moments_sampler(plan_fn):
    def sampler(X, n, seed):
        plan = plan_fn("laplace", 4, 1, EPS, 0.0)
        return smod.release_moments(X, LOWER, UPPER, plan, seed, n)
    return sampler


def _tight(out):
    # both coordinates above B's exact moments: P_B = 1/4, P_A = e^{-ε}/4 for the calibrated Laplace noise
    return (out[:, 0] >= M_B[0]) & (out[:, 1] >= M_B[1])


def test_scaler_sensitivity_constants_are_the_maxima():
    u2 = np.linspace(-1, 1, 2001)
    U, V = np.meshgrid(u2, u2)
    l1 = np.abs(V - U) / 2 + np.abs(V**2 - U**2)
    l2 = (V - U) ** 2 / 4 + (V**2 - U**2) ** 2
    assert l1.max() <= 25 / 16 and l1.max() > 25 / 16 - 1e-6
    assert l2.max() <= (71 + 8 * math.sqrt(2)) / 64 <= 1.2863 and l2.max() > 1.2861
    np.testing.assert_allclose(M_B - smod.moment_terms(XA, LOWER, UPPER), [0.625 / 4, 0.9375 / 4])


def test_audit_standard_scaler_moments_and_catch_half_noise():
    res = audit(_moments_sampler(smod.moments_plan), XA, XB, n_samples=50_000, events={"tight": _tight},
                alpha=1e-6, random_state=11)
    res.assert_private(EPS)
    assert res.epsilon_lower_bound > 0.7, str(res)  # tight event: the audit is not vacuous

    def half_noise(noise, n, d, eps, delta):
        return smod.moments_plan(noise, n, d, 2 * eps, delta)

    broken = audit(_moments_sampler(half_noise), XA, XB, n_samples=50_000, events={"tight": _tight},
                   alpha=1e-6, random_state=12)
    assert broken.epsilon_lower_bound > 1.3, str(broken)
    with pytest.raises(AssertionError, match="refuted"):
        broken.assert_private(EPS)


# ------------------------------------------------------------------------------ quantile mechanism
# one feature on [0, 4] with 4 cells, the median of n = 4 records; A = (0.5, 1.5, 1.5, 3.5), B replaces 0.5 by 3.5:
# the exact probabilities of cell 0 are 0.215 vs 0.109 (ratio e^0.678 at ε = 1; e^1.40 at twice the ε).
QA = np.array([0.5, 1.5, 1.5, 3.5])
QB = np.array([3.5, 1.5, 1.5, 3.5])


def _quantile_sampler(factor):
    def sampler(x, n, seed):
        from dpcore.mechanisms import check_random_state
        eps_em = qmod.em_epsilon(EPS, 4) * factor
        return qmod.em_quantile_column(x, 0.0, 4.0, np.array([0.5]), eps_em, 4, check_random_state(seed), n)
    return sampler


def _cell0(out):
    return out[:, 0] == 1.0  # the released (upper) edge of cell [0, 1]


def test_audit_private_quantile_and_catch_half_noise():
    res = audit(_quantile_sampler(1.0), QA, QB, n_samples=100_000, events={"cell0": _cell0}, alpha=1e-6,
                random_state=21)
    res.assert_private(EPS)
    assert res.epsilon_lower_bound > 0.5, str(res)
    broken = audit(_quantile_sampler(2.0), QA, QB, n_samples=100_000, events={"cell0": _cell0}, alpha=1e-6,
                   random_state=22)
    assert broken.epsilon_lower_bound > 1.1, str(broken)
    with pytest.raises(AssertionError, match="refuted"):
        broken.assert_private(EPS)

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


# ---------------------------------------------------------------- item 2: MulticlassGPService
from dpcore import MulticlassGPService, MulticlassKernelLogisticRegression  # noqa: E402
from dpcore.audit import audit  # noqa: E402


class PairModel:
    """K-class model at the sensitivity bound (as tests/kernel_learning/test_multiclass_release.py): n copies of
    ``z``; the last record's coefficient row is ``c (e_a − e_b)``, ``c = 1/(λn)``; relabelling it swaps a and b,
    so ``‖F_A − F_B‖_{H^K} = 2√2 c R_φ = Δ`` exactly (rbf, R_φ = 1, b = 0)."""

    _multiclass_stand_in = True
    tol = 1e-11

    def __init__(self, sign, n=40, lam=2.0, K=3, z=0.5):
        self.X_fit_ = np.full((n, 1), z)
        self.n_samples_fit_, self.lam, self.lipschitz_ = n, lam, math.sqrt(2.0)
        c = 1.0 / (lam * n)
        self.mu_ = np.zeros((n, K))
        self.mu_[-1, 0], self.mu_[-1, 1] = sign * c, -sign * c
        self.kernel_params_ = dict(kernel="rbf", gamma=1.0, degree=3, coef0=1.0, intercept_scaling=0.0)
        self.classes_ = np.arange(K)
        self.w_error_bound_ = 0.0


class _BinarySensitivityService(MulticlassGPService):
    """Deliberately broken copy: the binary sensitivity (L = 1, no √2)."""

    _sensitivity_factor = 1.0 / math.sqrt(2.0)


def _service_sampler(cls, Z, **kw):
    def sampler(model, n, seed):
        return cls(model, random_state=seed, max_exact_queries=Z.shape[0], **kw)._sample_sessions(Z, n, seed) \
            .reshape(n, -1)
    return sampler


def test_service_audit_k3_worst_case_pair_and_catch_binary_sensitivity():
    mA, mB = PairModel(+1), PairModel(-1)
    Z = np.full((1, 1), 0.5)
    kw = dict(epsilon=1.0, delta=1e-5, data_norm=1.0)
    cal = MulticlassGPService(mA, max_exact_queries=1, **kw).privacy_
    assert cal.n_classes == 3 and cal.lipschitz == pytest.approx(math.sqrt(2))
    assert cal.weight_sensitivity == pytest.approx(2 * math.sqrt(2) / (2.0 * 40), rel=3e-4)
    u = np.array([1.0, -1.0, 0.0]) / math.sqrt(2.0)
    assert float(u @ (mA.mu_.sum(0) - mB.mu_.sum(0))) == pytest.approx(cal.weight_sensitivity, rel=3e-4)
    sd = cal.noise_scale  # k(z, z) = 1 (+ the tiny jitter): std of u·Y
    thresholds = sd * np.linspace(0.0, 4.0, 17)  # fixed before sampling
    n = 4_000_000
    res = audit(_service_sampler(MulticlassGPService, Z, **kw), mA, mB, n_samples=n, direction=u,
                thresholds=thresholds, delta=1e-5, random_state=5)
    res.assert_private(1.0)
    broken = audit(_service_sampler(_BinarySensitivityService, Z, **kw), mA, mB, n_samples=n, direction=u,
                   thresholds=thresholds, delta=1e-5, random_state=36)
    assert broken.epsilon_lower_bound > 1.0, str(broken)
    with pytest.raises(AssertionError, match="refuted"):
        broken.assert_private(1.0)


@pytest.fixture(scope="module")
def three_blobs():
    rng = np.random.default_rng(0)
    ang = 2 * np.pi * np.arange(3) / 3
    centers = 0.5 * np.column_stack([np.cos(ang), np.sin(ang)])
    y = rng.integers(0, 3, size=2000)
    X = np.clip(centers[y] + 0.1 * rng.standard_normal((2000, 2)), -0.7, 0.7)
    lam = multiclass_auto_lam(2000, 2.0, 1e-6, data_norm=1.0)
    m = MulticlassKernelLogisticRegression(lam=lam, gamma=2.0, classes=["a", "b", "c"], tol=1e-7)
    return m.fit(X, np.array(["a", "b", "c"])[y]), X, np.array(["a", "b", "c"])[y]


def test_service_consistent_reproducible_accounted_accurate(three_blobs):
    m, X, y = three_blobs
    acc = dpcore.BudgetAccountant(3.0, 1e-5)
    s = MulticlassGPService(m, 2.0, 1e-6, data_norm=1.0, random_state=3, accountant=acc)
    assert 0.0 < acc.spent[0] <= 3.0
    a = s.predict(X[:50])
    assert a.shape == (50, 3)
    np.testing.assert_array_equal(s.predict(X[:50]), a)  # stored answers
    # the same points asked in two batches by an identically seeded service: the same first batch, consistent path
    t = MulticlassGPService(m, 2.0, 1e-6, data_norm=1.0, random_state=3)
    np.testing.assert_array_equal(t.predict(X[:50]), a)
    assert s.n_distinct == 50
    assert float(np.mean(s.predict_labels(X[50:500]) == y[50:500])) > 0.85
    # ε huge: the answers are the model's scores
    big = MulticlassGPService(m, 1e6, 1e-6, data_norm=1.0, random_state=0)
    np.testing.assert_allclose(big.predict(X[:20]), m._scores(X[:20]), atol=1e-3)
    # beyond max_exact_queries: the posterior mean of the released paths (K columns)
    small = MulticlassGPService(m, 2.0, 1e-6, data_norm=1.0, max_exact_queries=30, random_state=1)
    out = small.predict(X[:40])
    assert out.shape == (40, 3) and small.n_distinct == 30 and np.isfinite(out).all()


def test_service_per_class_noise_is_sqrt2_times_binary_service():
    """Same (λ, n, ε, δ, R_φ): the K-class service's σ is √2 × the binary GPService's, for every K."""
    rng = np.random.default_rng(2)
    X = rng.uniform(-0.5, 0.5, size=(200, 2))
    yb = np.where(X[:, 0] > 0, 1, -1)
    lam = 0.05
    binary = dpcore.KernelLogisticRegression(lam=lam, gamma=1.0, tol=1e-8, intercept_scaling=0.5).fit(X, yb)
    sb = dpcore.GPService(binary, 1.0, 1e-6, data_norm=1.0, max_exact_queries=100, random_state=0).privacy_
    for K in (3, 5):
        y = rng.integers(0, K, size=200)
        mk = MulticlassKernelLogisticRegression(lam=lam, gamma=1.0, classes=list(range(K)), tol=1e-8).fit(X, y)
        sk = MulticlassGPService(mk, 1.0, 1e-6, data_norm=1.0, max_exact_queries=100, random_state=0).privacy_
        main_b = sb.weight_sensitivity - 2 * sb.w_error_bound  # the 2 L R'/(λn) terms (tol: same public floor)
        main_k = sk.weight_sensitivity - 2 * sk.w_error_bound
        assert main_k / main_b == pytest.approx(math.sqrt(2), rel=1e-9)
        assert sk.mu == pytest.approx(sb.mu, rel=1e-6)  # the same GDP μ(ε, δ): σ scales with Δ


def test_service_validation_before_any_charge(three_blobs, tmp_path):
    m, X, y = three_blobs
    acc = dpcore.BudgetAccountant(1.0, 1e-5)
    for kw, match, exc in ((dict(epsilon=0.0), "epsilon", ValueError), (dict(delta=0.0), "delta", ValueError),
                           (dict(data_norm=-1.0), "data_norm", ValueError),
                           (dict(state_path=str(tmp_path / "s.json")), "state_path", ValueError),
                           (dict(max_exact_queries=0), "max_exact_queries", ValueError)):
        args = dict(epsilon=1.0, delta=1e-6, data_norm=1.0, accountant=acc) | kw
        with pytest.raises(exc, match=match):
            MulticlassGPService(m, **args)
    with pytest.raises(TypeError, match="MulticlassKernelLogisticRegression"):
        MulticlassGPService(dpcore.KernelSVM(lam=0.1).fit(X[:20], np.where(X[:20, 0] > 0, 1, -1)), 1.0, 1e-6,
                            data_norm=1.0, accountant=acc)
    with pytest.raises(dpcore.exceptions.NotFittedError):
        MulticlassGPService(MulticlassKernelLogisticRegression(classes=[0, 1, 2]), 1.0, 1e-6, data_norm=1.0,
                            accountant=acc)
    with pytest.raises(ValueError, match="X_fit_|outside|norm"):  # training rows outside the declared ball
        MulticlassGPService(m, 1.0, 1e-6, data_norm=0.1, accountant=acc)
    assert acc.spent[0] == 0.0
    assert not (tmp_path / "s.json").exists()
    s = MulticlassGPService(m, 1.0, 1e-6, data_norm=1.0, random_state=0)
    with pytest.raises(ValueError, match="X"):
        s.predict(np.full((2, 2), 5.0))
    with pytest.raises(NotImplementedError):
        s.calibrate_prior(0.3, X[:5])
    with pytest.raises(ValueError, match="durable"):
        MulticlassGPService.load(str(tmp_path / "s.json"), m)

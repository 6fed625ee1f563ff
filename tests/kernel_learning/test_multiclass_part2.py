"""Issue 24, second half: the multi-class auto λ rule, MulticlassGPService, the private multinomial linear
model and one-vs-rest with joint accounting."""

from __future__ import annotations

import math
from pathlib import Path
import sys

import numpy as np
import pytest

import dpcore
from dpcore.kernel_learning.gp import auto_lam
from dpcore.kernel_learning.multiclass_release import multiclass_auto_lam, multiclass_gp_calibration
from dpcore import MulticlassGPService, MulticlassKernelLogisticRegression


# ---------------------------------------------------------------- item 1: the auto λ rule with L = √2
def test_multiclass_auto_lam_is_the_binary_rule_with_sqrt2():
    for eps in (0.5, 1.0, 2.0, 5.0):
        lam = multiclass_auto_lam(16_000, eps, 1e-6, data_norm=1.0)
        ref = auto_lam(16_000, eps, 1e-6, data_norm=1.0, lipschitz=math.sqrt(2), intercept_scaling=0.5,
                       loss="multinomial")
        assert lam == ref
        # the K-class rule keeps the margin constant ρ = 1/2 (what the multi-class experiments measured)
        binary = auto_lam(16_000, eps, 1e-6, data_norm=1.0, intercept_scaling=0.5, loss="hinge")
        assert lam / binary == pytest.approx(math.sqrt(2))
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


def test_min_tol_keeps_the_solver_term_small_and_is_enforced():
    """At 2 × multiclass_min_tol the solver term 2 sqrt(2 tol/λ) is < 5 % of 2√2 R'/(λn) on Letter-26's auto λ
    (tol = 1e-6 made it 62 % at ε = 1); a model below the minimum is refused before any charge."""
    from dpcore.kernel_learning.multiclass_release import multiclass_min_tol

    for eps in (0.5, 1.0, 2.0, 5.0):
        lam = multiclass_auto_lam(16_000, eps, 1e-6, data_norm=1.0)
        tol = 2 * multiclass_min_tol(lam, 26, 1.25)
        main = 2 * math.sqrt(2) * math.sqrt(1.25) / (lam * 16_000)
        assert 2 * math.sqrt(2 * tol / lam) < 0.05 * main
        assert 2 * math.sqrt(2 * 1e-6 / lam) > 0.25 * main
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(50, 2))
    y = rng.integers(0, 3, size=50)
    t_min = multiclass_min_tol(0.01, 3, 1.25)
    m = MulticlassKernelLogisticRegression(lam=0.01, classes=[0, 1, 2], tol=0.5 * t_min).fit(X, y)
    acc = dpcore.BudgetAccountant(1.0, 1e-5)
    with pytest.raises(ValueError, match="model.tol"):
        dpcore.MulticlassTDDL(m, 1.0, 1e-6, data_norm=1.0, accountant=acc).fit(X[:3])
    with pytest.raises(ValueError, match="model.tol"):
        MulticlassGPService(m, 1.0, 1e-6, data_norm=1.0, accountant=acc)
    assert acc.spent[0] == 0.0
    with pytest.raises(ValueError, match="lam"):
        multiclass_min_tol(0.0, 3, 1.0)


# ---------------------------------------------------------------- item 2: MulticlassGPService
from dpcore.audit import audit  # noqa: E402


sys.path.insert(0, str(Path(__file__).resolve().parent))
from _multiclass_pair import PairModel  # noqa: E402


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
    a = s.decision_function(X[:50])
    assert a.shape == (50, 3)
    np.testing.assert_array_equal(s.decision_function(X[:50]), a)  # stored answers
    # the same points asked in two batches by an identically seeded service: the same first batch, consistent path
    t = MulticlassGPService(m, 2.0, 1e-6, data_norm=1.0, random_state=3)
    np.testing.assert_array_equal(t.decision_function(X[:50]), a)
    assert s.n_distinct == 50
    assert float(np.mean(s.predict(X[50:500]) == y[50:500])) > 0.85
    # ε huge: the answers are the model's scores
    big = MulticlassGPService(m, 1e6, 1e-6, data_norm=1.0, random_state=0)
    np.testing.assert_allclose(big.decision_function(X[:20]), m._scores(X[:20]), atol=1e-3)
    # beyond max_exact_queries: the posterior mean of the released paths (K columns)
    small = MulticlassGPService(m, 2.0, 1e-6, data_norm=1.0, max_exact_queries=30, random_state=1)
    out = small.decision_function(X[:40])
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
    s = MulticlassGPService(m, 1.0, 1e-6, data_norm=1.0, random_state=0)
    with pytest.raises(ValueError, match="X"):
        s.decision_function(np.full((2, 2), 5.0))
    with pytest.raises(NotImplementedError):
        s.calibrate_prior(0.3, X[:5])


def test_service_durable_state_roundtrip_and_refusals(three_blobs, tmp_path):
    m, X, y = three_blobs
    path = str(tmp_path / "k.json")
    acc = dpcore.BudgetAccountant(5.0, 1e-5)
    s = MulticlassGPService(m, 1.0, 1e-6, data_norm=1.0, max_exact_queries=200, state_path=path, random_state=4,
                            accountant=acc)
    a = s.decision_function(X[:30])
    b = s.decision_function(X[30:50])
    seq = s.state_seq
    s.close()
    with pytest.raises(RuntimeError, match="closed"):
        s.decision_function(X[:2])
    r = MulticlassGPService.load(path, m, min_seq=seq, accountant=acc)
    np.testing.assert_array_equal(r.decision_function(X[:30]), a)      # the stored answers
    np.testing.assert_array_equal(r.decision_function(X[30:50]), b)
    c = r.decision_function(X[50:60])                                  # the path continues
    assert c.shape == (10, 3) and r.n_distinct == 60
    r.close()
    # a different model is refused (keyed fingerprint); a binary service cannot load a K-class state
    m2 = MulticlassKernelLogisticRegression(lam=m.lam * 2, gamma=2.0, classes=["a", "b", "c"], tol=1e-7).fit(X, y)
    with pytest.raises(ValueError):
        MulticlassGPService.load(path, m2)
    svm = dpcore.KernelSVM(lam=0.1, gamma=2.0, tol=1e-8).fit(X[:100], np.where(X[:100, 0] > 0, 1, -1))
    with pytest.raises(dpcore.exceptions.StateAuthenticationError, match="another kind of state"):
        dpcore.GPService.load(path, svm)
    # an edited answer is refused (unauthenticated state: the answer check itself catches it)
    upath = str(tmp_path / "u.json")
    u = MulticlassGPService(m, 1.0, 1e-6, data_norm=1.0, max_exact_queries=50, state_path=upath,
                            state_key="unauthenticated", random_state=5)
    u.decision_function(X[:5])
    u.close()
    import base64
    import json
    doc = json.loads(open(upath).read())
    body = doc if "answers" in doc else doc.get("doc", doc)
    ans = np.frombuffer(base64.b64decode(body["answers"]), dtype="<f8").copy()
    ans[4] += 10.0
    body["answers"] = base64.b64encode(ans.astype("<f8").tobytes()).decode()
    from dpcore._internal.state import checksum
    doc = {k: v for k, v in doc.items() if k != "checksum"}
    doc["checksum"] = checksum(doc)  # a forger who recomputes the unkeyed checksum
    open(upath, "w").write(json.dumps(doc, sort_keys=True))
    with pytest.raises(dpcore.exceptions.StateAuthenticationError, match="edited answers"):
        MulticlassGPService.load(upath, m, state_key="unauthenticated")


# ---------------------------------------------------------------- item 3: the private multinomial linear model
from dpcore import MulticlassOutputPerturbation  # noqa: E402
from dpcore.accounting.calibrate import gaussian_sigma_analytic  # noqa: E402
from dpcore.mechanisms.noise import grid_release  # noqa: E402


@pytest.mark.parametrize("loss", ["multinomial", "ovr"])
def test_linear_replace_one_sensitivity_bound_holds(loss):
    """||W*_D − W*_D'||_F ≤ 2 L R'/(λn) on adversarial neighbours (L = √2 multinomial, √K one-vs-rest)."""
    rng = np.random.default_rng(7)
    n, d, K, lam, b = 25, 3, 4, 0.3, 0.5
    worst = 0.0
    for trial in range(20):
        X = rng.normal(size=(n, d))
        X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        y = rng.integers(0, K, size=n)
        X2, y2 = X.copy(), y.copy()
        X2[-1] = -X[-1] / np.linalg.norm(X[-1])
        y2[-1] = (y[-1] + 1 + trial % (K - 1)) % K
        est = MulticlassOutputPerturbation(1.0, 1e-6, lam=lam, data_norm=1.0, classes=list(range(K)), loss=loss,
                                           tol=1e-12)
        sol = []
        for A, t in ((X, y), (X2, y2)):
            At = np.hstack([A, np.full((n, 1), b)])
            W, g, _ = est._solve(At, t, K, lam, 1e-12)
            assert g <= 1e-11
            sol.append(W)
        L = math.sqrt(2.0) if loss == "multinomial" else math.sqrt(K)
        bound = 2 * L * math.sqrt(1 + b * b) / (lam * n)
        ratio = float(np.linalg.norm(sol[0] - sol[1])) / bound
        assert ratio <= 1.0
        worst = max(worst, ratio)
    assert worst > 0.05  # the bound is not vacuous on these pairs


def test_linear_calibration_and_ovr_is_sqrt_k_over_2_times_multinomial():
    X = np.array([[0.5, 0.0], [-0.5, 0.0], [0.0, 0.5], [0.0, -0.5]])
    y = [0, 1, 2, 3]
    kw = dict(lam=0.1, data_norm=1.0, classes=[0, 1, 2, 3], random_state=0)
    m = MulticlassOutputPerturbation(1.0, 1e-6, **kw).fit(X, y).privacy_
    o = MulticlassOutputPerturbation(1.0, 1e-6, loss="ovr", **kw).fit(X, y).privacy_
    Rp = math.sqrt(1.25)
    assert m.sensitivity == pytest.approx(2 * math.sqrt(2) * Rp / (0.1 * 4) + 2 * m.residual_bound, rel=1e-9)
    assert m.residual_bound < 1e-3 * m.sensitivity
    assert m.noise_scale == pytest.approx(gaussian_sigma_analytic(m.sensitivity, 1.0, 1e-6), rel=1e-9)
    assert o.noise_scale / m.noise_scale == pytest.approx(math.sqrt(4 / 2), rel=1e-3)
    # the joint OvR release's σ is √K × the binary one (L = 1), not K × (the ε/K split is worse still)


def test_ovr_rows_are_the_binary_logistic_solutions():
    """The joint one-vs-rest objective is separable: row k is binary logistic regression 'k vs rest'."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    X = rng.uniform(-0.5, 0.5, size=(200, 2))
    y = rng.integers(0, 3, size=200)
    lam, n = 0.05, 200
    est = MulticlassOutputPerturbation(1.0, 1e-6, lam=lam, data_norm=1.0, classes=[0, 1, 2], loss="ovr", tol=1e-10)
    Xt = np.hstack([X, np.full((n, 1), 0.5)])
    W, _, _ = est._solve(Xt, y, 3, lam, 1e-10)
    for k in range(3):
        sk = LogisticRegression(C=1.0 / (lam * n), fit_intercept=False, tol=1e-12, max_iter=10000)
        sk.fit(Xt, np.where(y == k, 1, 0))
        np.testing.assert_allclose(W[k], sk.coef_[0], atol=1e-5)


class _BinarySensitivityLinear(MulticlassOutputPerturbation):
    _sensitivity_factor = 1.0 / math.sqrt(2.0)


def test_linear_release_audit_catches_binary_sensitivity():
    """Audit of calibration + exact release on two fitted matrices at Frobenius distance exactly Δ (the sensitivity
    bound is checked on real neighbours above); a copy calibrated with L = 1 (no √2) is refuted."""
    n_train, d, K = 50, 2, 3

    def sampler_for(cls):
        def sampler(W, n, seed):
            est = cls(1.0, 1e-5, lam=1.0, data_norm=1.0, classes=list(range(K)))
            est._calibrate(n_train, d, K)
            return np.asarray(grid_release(W.ravel(), est._plan, seed, n_samples=n)).reshape(n, -1)
        return sampler

    est = MulticlassOutputPerturbation(1.0, 1e-5, lam=1.0, data_norm=1.0, classes=list(range(K)))
    cal = est._calibrate(n_train, d, K)
    u = np.zeros(K * (d + 1))
    u[0], u[d + 1] = 1 / math.sqrt(2), -1 / math.sqrt(2)
    WA = np.zeros(K * (d + 1))
    WB = WA - cal.sensitivity * u
    thresholds = cal.noise_scale * np.linspace(0.0, 4.0, 17) - 0.5 * cal.sensitivity
    res = audit(sampler_for(MulticlassOutputPerturbation), WA, WB, n_samples=4_000_000, direction=u,
                thresholds=thresholds, delta=1e-5, random_state=11)
    res.assert_private(1.0)
    broken = audit(sampler_for(_BinarySensitivityLinear), WA, WB, n_samples=4_000_000, direction=u,
                   thresholds=thresholds, delta=1e-5, random_state=12)
    assert broken.epsilon_lower_bound > 1.0, str(broken)


def test_linear_validation_before_any_charge():
    X = np.array([[0.5, 0.0], [-0.5, 0.0], [0.0, 0.5]])
    y = [0, 1, 2]
    acc = dpcore.BudgetAccountant(1.0, 1e-5)
    base = dict(epsilon=1.0, delta=1e-6, lam=0.1, data_norm=1.0, classes=[0, 1, 2], accountant=acc)
    for kw, match in ((dict(epsilon=0.0), "epsilon"), (dict(delta=0.0), "delta"), (dict(lam=-1.0), "lam"),
                      (dict(data_norm=0.1), "data_norm"), (dict(loss="hinge"), "loss"), (dict(tol=-1.0), "tol"),
                      (dict(intercept_scaling=0.0), "intercept_scaling"), (dict(max_iter=0), "max_iter"),
                      (dict(classes=[0, 1]), "y")):
        with pytest.raises(ValueError, match=match):
            MulticlassOutputPerturbation(**(base | kw)).fit(X, y)
    with pytest.raises(ValueError, match="X"):
        MulticlassOutputPerturbation(**base).fit(np.array([[np.nan, 0.0]] * 3), y)
    assert acc.spent[0] == 0.0
    m = MulticlassOutputPerturbation(**(base | dict(data_norm=0.1, clip=True, random_state=0))).fit(X, y)
    assert acc.spent[0] > 0.0 and m.predict_proba(X).shape == (3, 3)
    np.testing.assert_allclose(m.predict_proba(X).sum(axis=1), 1.0)


def test_linear_sklearn_check_estimator_k3():
    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    from dpcore._internal.tags import LABEL_CHECKS, RELEASE_CHECKS, RELEASE_CLASSIFIER_CHECKS
    from dpcore.kernel_learning.multiclass import MULTICLASS_EXPECTED_FAILED_CHECKS

    est = MulticlassOutputPerturbation(1.0, 1e-5, lam=0.1, data_norm=1.0, clip=True, classes=[0, 1, 2],
                                       random_state=0)
    expected = {**LABEL_CHECKS, **MULTICLASS_EXPECTED_FAILED_CHECKS, **RELEASE_CHECKS, **RELEASE_CLASSIFIER_CHECKS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = check_estimator(est, expected_failed_checks=expected, on_fail=None)
    failed = {r["check_name"] for r in res if r["status"] == "failed"}
    assert failed == set(), failed


def test_linear_pickle_roundtrip():
    import pickle

    X = np.array([[0.5, 0.0], [-0.5, 0.0], [0.0, 0.5], [0.1, 0.1]])
    y = [0, 1, 2, 0]
    m = MulticlassOutputPerturbation(1.0, 1e-6, lam=0.1, data_norm=1.0, classes=[0, 1, 2], random_state=0).fit(X, y)
    r = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(r.decision_function(X), m.decision_function(X))
    assert not hasattr(m, "n_iter_")


def test_multiclass_service_follows_scikit_learn_predict_labels_score(three_blobs):
    """As GPService (issue 25): predict → labels, decision_function → (m, K) scores, score → accuracy;
    predict_labels is the deprecated alias; one answer loop (GPService._answers) serves both services."""
    m, X, y = three_blobs
    s = MulticlassGPService(m, 2.0, 1e-6, data_norm=1.0, random_state=3)
    scores = s.decision_function(X[:40])
    labels = s.predict(X[:40])
    np.testing.assert_array_equal(labels, m.classes_[np.argmax(scores, axis=1)])
    assert s.score(X[:40], y[:40]) == pytest.approx(float(np.mean(labels == y[:40])))
    with pytest.warns(DeprecationWarning):
        np.testing.assert_array_equal(s.predict_labels(X[:40]), labels)
    assert type(s)._answers is dpcore.GPService._answers

"""Issue 23, item 1: the regularised intercept of every kernel learner (kernel K + b², public b).

(a) for the linear kernel, the augmented model equals the bias-free model on x ↦ (x, b);
(b) on an imbalanced task the bias-free model predicts one class, the biased one does not;
(c) every private path calibrates with R_φ'² = R_φ² + b²;
plus validation, the public kernel functions and old release kernels (no intercept_scaling: b = 0).
"""

import math

import numpy as np
import pytest

import dpcore
from dpcore import GPService, KernelLogisticRegression, KernelSVM, PINP, TDDL, kernel_matrix, kernel_predict
from dpcore.kernel_learning.gp import auto_lam

ESTIMATORS = {"hinge": KernelSVM, "logistic": KernelLogisticRegression}


def _ball(n, d, seed, r=0.7):
    rng = np.random.default_rng(seed)
    return rng.uniform(-r / math.sqrt(d), r / math.sqrt(d), size=(n, d))


def balanced_accuracy(y, p):
    return 0.5 * (np.mean(p[y == 1] == 1) + np.mean(p[y == -1] == -1))


# -- (a) exact feature augmentation ------------------------------------------------------------
@pytest.mark.parametrize("loss", ["hinge", "logistic"])
@pytest.mark.parametrize("b", [0.25, 1.0, 3.0])
def test_linear_kernel_with_intercept_is_the_augmented_linear_model(loss, b):
    X = _ball(300, 3, 1)
    y = np.where(X @ np.array([1.0, -2.0, 0.5]) + 0.1 > 0, 1, -1)
    lam, tol = 1e-2, 1e-10
    aug = ESTIMATORS[loss](lam=lam, kernel="linear", tol=tol, intercept_scaling=b).fit(X, y)
    Xb = np.hstack([X, np.full((300, 1), b)])
    ref = ESTIMATORS[loss](lam=lam, kernel="linear", tol=tol, intercept_scaling=0.0).fit(Xb, y)
    Z = _ball(50, 3, 2)
    # both solve the same strongly convex problem: ||w - w'|| <= err_a + err_b and |f - f'| <= ||w - w'|| ||x'||
    bound = (aug.w_error_bound_ + ref.w_error_bound_) * math.sqrt(1.0 + b * b) + 1e-12
    f_aug = aug.decision_function(Z)
    f_ref = ref.decision_function(np.hstack([Z, np.full((50, 1), b)]))
    assert np.max(np.abs(f_aug - f_ref)) <= bound
    assert aug.primal_objective_ == pytest.approx(ref.primal_objective_, abs=2 * tol)
    # the bias the model carries: intercept_ = b² Σ μ_i = b·w_b of the augmented weight vector
    w_ref = Xb.T @ ref.mu_
    assert aug.intercept_ == pytest.approx(b * w_ref[-1], abs=bound)
    assert aug.kernel_params_["intercept_scaling"] == b


def test_intercept_scaling_zero_is_the_old_model_bit_for_bit():
    X = _ball(200, 2, 3)
    y = np.where(X[:, 0] > 0, 1, -1)
    a = KernelSVM(lam=1e-2, kernel="rbf", gamma=2.0, intercept_scaling=0.0).fit(X, y)
    assert a.intercept_ == 0.0
    Z = _ball(20, 2, 4)
    f = a.decision_function(Z)
    g = kernel_predict(Z, a.support_vectors_, a.mu_[a.support_], kernel="rbf", gamma=2.0)
    assert np.array_equal(f, g)


# -- (b) imbalanced data ------------------------------------------------------------------------
@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_imbalanced_task_needs_the_bias(loss):
    # one feature in [0, 0.9]; positives (10 %) are the points above 0.6: no line through the origin separates them
    rng = np.random.default_rng(5)
    n = 1000
    t = np.where(rng.random(n) < 0.1, rng.uniform(0.6, 0.9, n), rng.uniform(0.0, 0.45, n))
    X = t[:, None]
    y = np.where(t > 0.5, 1, -1)
    kw = dict(lam=1e-4, kernel="linear", tol=1e-8)
    p0 = ESTIMATORS[loss](intercept_scaling=0.0, **kw).fit(X, y).predict(X)
    p1 = ESTIMATORS[loss](intercept_scaling=1.0, **kw).fit(X, y).predict(X)
    assert len(np.unique(p0)) == 1 and balanced_accuracy(y, p0) == 0.5
    assert balanced_accuracy(y, p1) >= 0.9


# -- (c) every private path calibrates with R_φ'² = R_φ² + b² ------------------------------------
@pytest.fixture(scope="module")
def models():
    X = _ball(400, 2, 8)
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0.1, 1, -1)
    out = {}
    for b in (0.0, 0.5, 1.0):
        out[b] = KernelSVM(lam=0.05, kernel="rbf", gamma=1.0, tol=1e-8, intercept_scaling=b).fit(X, y)
    return out


@pytest.mark.parametrize("b", [0.5, 1.0])
def test_private_paths_use_the_augmented_radius(models, b):
    m0, mb = models[0.0], models[b]
    Z = _ball(30, 2, 9)
    r2 = 1.0 + b * b  # rbf: R_φ² = 1
    # TDDL (gp and gaussian): R_φ' enters the recorded calibration
    for noise in ("gp", "gaussian"):
        c0 = TDDL(m0, 1.0, 1e-6, data_norm=1.0, noise=noise, random_state=0).fit(Z).privacy_
        cb = TDDL(mb, 1.0, 1e-6, data_norm=1.0, noise=noise, random_state=0).fit(Z).privacy_
        assert c0.r_phi == pytest.approx(1.0, rel=1e-9)
        assert cb.r_phi == pytest.approx(math.sqrt(r2), rel=1e-9) and cb.r_phi >= math.sqrt(r2)
    # GPService
    s0 = GPService(m0, 1.0, 1e-6, data_norm=1.0, random_state=0).privacy_
    sb = GPService(mb, 1.0, 1e-6, data_norm=1.0, random_state=0).privacy_
    assert s0.r_phi == pytest.approx(1.0, rel=1e-9)
    assert sb.r_phi == pytest.approx(math.sqrt(r2), rel=1e-9)
    # PINP
    p0 = PINP(m0, 1.0, 1e-6, data_norm=1.0, n_queries=10, norm_bound=100.0, random_state=0).privacy_
    pb = PINP(mb, 1.0, 1e-6, data_norm=1.0, n_queries=10, norm_bound=100.0, random_state=0).privacy_
    assert p0.r_phi_sq == pytest.approx(1.0, rel=1e-9)
    assert pb.r_phi_sq == pytest.approx(r2, rel=1e-9) and pb.r_phi_sq >= r2
    # C = auto: C ∝ 1/R_φ'²
    l0 = auto_lam(400, 1.0, 1e-6, data_norm=1.0, kernel="rbf", intercept_scaling=0.0)
    lb = auto_lam(400, 1.0, 1e-6, data_norm=1.0, kernel="rbf", intercept_scaling=b)
    assert lb / l0 == pytest.approx(r2, rel=1e-9)


def test_release_carries_the_shift_and_old_kernels_load_with_b_zero(models, tmp_path):
    mb = models[1.0]
    Z = _ball(30, 2, 10)
    rel = TDDL(mb, 1.0, 1e-6, data_norm=1.0, noise="gp", random_state=0).fit(Z).release_
    assert rel.kernel["intercept_scaling"] == 1.0
    Q = _ball(7, 2, 11)
    want = kernel_predict(Q, rel.points, rel.mu, kernel="rbf", gamma=1.0, intercept_scaling=1.0)
    np.testing.assert_allclose(rel.decision_function(Q) - rel.intercept, want, rtol=0, atol=1e-12)
    path = tmp_path / "r.json"
    rel.save(path)
    back = dpcore.KernelRelease.load(path)
    assert back.kernel == rel.kernel
    np.testing.assert_array_equal(back.decision_function(Q), rel.decision_function(Q))


# -- the public kernel functions -----------------------------------------------------------------
def test_public_kernel_functions_take_intercept_scaling():
    A, B = _ball(5, 3, 12), _ball(4, 3, 13)
    mu = np.arange(4.0) - 1.5
    for kw in (dict(kernel="rbf", gamma=0.7), dict(kernel="poly", gamma=0.5, degree=2), dict(kernel="linear")):
        K = kernel_matrix(A, B, **kw)
        assert np.array_equal(kernel_matrix(A, B, intercept_scaling=0.0, **kw), K)
        np.testing.assert_array_equal(kernel_matrix(A, B, intercept_scaling=0.5, **kw), K + 0.25)
        f = kernel_predict(A, B, mu, intercept_scaling=0.5, **kw)
        np.testing.assert_allclose(f, (K + 0.25) @ mu, rtol=0, atol=1e-13)
    assert dpcore.feature_map_radius(1.0, kernel="rbf", intercept_scaling=2.0) == pytest.approx(math.sqrt(5.0))


@pytest.mark.parametrize("bad, exc", [(-1.0, ValueError), (float("nan"), ValueError), (float("inf"), ValueError),
                                      (1e101, ValueError), ("1", TypeError), (True, TypeError)])
def test_intercept_scaling_is_validated_by_name(bad, exc):
    X = _ball(20, 2, 14)
    y = np.where(X[:, 0] > 0, 1, -1)
    with pytest.raises(exc, match="intercept_scaling"):
        KernelSVM(intercept_scaling=bad).fit(X, y)
    with pytest.raises(exc, match="intercept_scaling"):
        kernel_matrix(X, intercept_scaling=bad)
    with pytest.raises(exc, match="intercept_scaling"):
        kernel_predict(X, X, np.ones(20), intercept_scaling=bad)


# -- TDIL with the bias (n large enough for B >= 1: n ε >= 100 L R_φ' log(4/δ)) --------------------
@pytest.fixture(scope="module")
def linear_models():
    X = _ball(3000, 2, 15, r=0.95)
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0.2, 1, -1)
    return {b: KernelSVM(lam=0.05, kernel="linear", tol=1e-9, intercept_scaling=b).fit(X, y) for b in (0.0, 0.5, 1.0)}


@pytest.mark.parametrize("b", [0.5, 1.0])
def test_tdil_calibrates_with_the_augmented_radius(linear_models, b):
    from dpcore import TDIL

    c0 = TDIL(linear_models[0.0], 1.0, 1e-6, data_norm=1.0).plan()["calibration"]
    cb = TDIL(linear_models[b], 1.0, 1e-6, data_norm=1.0).plan()["calibration"]
    r2 = 1.0 + b * b  # linear kernel on the unit ball: R_φ² = 1
    assert c0.r_phi == pytest.approx(1.0, rel=1e-9)
    assert cb.r_phi == pytest.approx(math.sqrt(r2), rel=1e-9) and cb.r_phi >= math.sqrt(r2)
    # B = ⌊n ε/(100 L R_φ' log(4/δ))⌋, η = σ/(4 R_φ'²), S ≥ 2 L R_φ'²/(λ n)
    assert cb.B == math.floor(3000 * 1.0 / (100.0 * cb.r_phi * math.log(4e6))) >= 1
    assert cb.eta == pytest.approx(cb.sigma / (4.0 * r2), rel=1e-9)
    assert cb.sensitivity >= 2.0 * r2 / (0.05 * 3000)
    # n = 400 is refused by name (B < 1) before anything is charged
    small = KernelSVM(lam=0.05, kernel="linear", tol=1e-9, intercept_scaling=b).fit(_ball(400, 2, 16), np.tile([1, -1], 200))
    with pytest.raises(ValueError, match="number of rounds B"):
        TDIL(small, 1.0, 1e-6, data_norm=1.0).plan()


class _RecordingCore:
    """Forwards to ``_core`` and records the exponential-mechanism calls (their score arguments)."""

    def __init__(self, core):
        self._core, self.calls = core, []

    def __getattr__(self, name):
        return getattr(self._core, name)

    def em_sample_linear(self, d, nu, radius, u, *rest, **kw):
        self.calls.append(("linear", np.array(u, dtype=np.float64)))
        return self._core.em_sample_linear(d, nu, radius, u, *rest, **kw)

    def em_sample_kernel(self, d, nu, radius, points, coef, kernel, gamma, degree, coef0, shift, *rest, **kw):
        self.calls.append(("kernel", (np.array(points), np.array(coef), dict(kernel=kernel, gamma=gamma, degree=degree,
                                                                             coef0=coef0, intercept_scaling=shift))))
        return self._core.em_sample_kernel(d, nu, radius, points, coef, kernel, gamma, degree, coef0, shift, *rest, **kw)


@pytest.mark.parametrize("b", [0.0, 1.0])
def test_tdil_scores_the_augmented_feature_map(linear_models, b):
    """Every round's EM score is ``<φ'(z), w_t − w*>`` with ``φ' = (φ, b)``: for the linear kernel the
    collapsed d-vector score ``<z, u>`` misses ``b²(Σα − Σμ)`` (the intercept coordinate)."""
    from dpcore import TDIL
    from dpcore.kernel_learning import tdil as tdil_module

    model = linear_models[b]
    rec = _RecordingCore(tdil_module._core)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tdil_module, "_core", rec)
        t = TDIL(model, 50.0, 1e-6, data_norm=1.0, calibration="tight", net_radius=0.05, random_state=3).fit()
    assert len(rec.calls) == t.privacy_.B >= 3  # (σ is far above |f*| here: updates are rare, rounds check both)
    Q = _ball(40, 2, 17, r=1.0)
    kw = dict(model.kernel_params_)
    f_star = kernel_predict(Q, model.X_fit_, model.mu_, **kw)
    picks, alphas, j = t.release_.points, t.release_.mu, 0
    for rnd, (kind, arg) in zip(t.trace_, rec.calls):
        cur = kernel_predict(Q, picks[:j], alphas[:j], **kw) if j else np.zeros(len(Q))
        want = cur - f_star
        got = Q @ arg if kind == "linear" else kernel_predict(Q, arg[0], arg[1], **arg[2])
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
        j += rnd["update"]
    assert j == len(picks)


def test_tdil_continuous_sampler_refuses_a_bias_before_any_charge(linear_models):
    from dpcore import TDIL, BudgetAccountant

    acc = BudgetAccountant(100.0, 1e-5)
    with pytest.raises(ValueError, match="intercept_scaling"):
        TDIL(linear_models[0.5], 50.0, 1e-6, data_norm=1.0, sampler="continuous", net_radius=0.05,
             accountant=acc).fit()
    assert acc.spent == (0.0, 0.0)
    TDIL(linear_models[0.0], 50.0, 1e-6, data_norm=1.0, sampler="continuous", net_radius=0.05, random_state=0).fit()


def test_kernel_svm_docstring_example_shows_the_intercept():
    """The KernelSVM Examples (run as doctests by tests/test_docstring_examples.py) show ``intercept_scaling``
    and ``intercept_``."""
    import doctest

    examples = KernelSVM.__doc__.split("Examples\n    --------", 1)[1]
    assert "intercept_scaling=" in examples and "clf.intercept_" in examples
    test = doctest.DocTestParser().get_doctest(KernelSVM.__doc__, {}, "KernelSVM", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_tol_below_the_certificate_float_floor_is_explained_with_the_bias():
    """Issue 23 item 4: ``KernelSVM(kernel="linear", lam=0.01, tol=1e-10)`` stops with ``"precision"`` at ``b = 1``.

    Not ill-conditioning: the dual is solved (``primal − dual`` at rounding level, fewer updates than at ``b = 0``);
    the certified gap is the certificate's float slack alone,
    ``KERNEL_SUM_REL_ERROR·mean_i sqrt(K'_ii)·Σ_j sqrt(K'_jj)|μ_j|`` with ``K'_ii = K_ii + b²``, which grows with
    ``R_φ'² = R_φ² + b²`` (6.5e-11 at b = 0, 8.2e-11 at 0.5, 1.3e-10 at 1 here). The warning says so and names
    the tolerance that certifies; the public floor the private mechanisms enforce, ``KERNEL_SUM_REL_ERROR·R_φ'²/λ``,
    bounds the slack.
    """
    from dpcore._internal.fp import KERNEL_SUM_REL_ERROR
    from dpcore.exceptions import ConvergenceWarning

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    score = X[:, 0] - 0.7 * X[:, 1] ** 2 + 0.4 * rng.normal(size=300)
    y = np.where(score > np.median(score), 1, -1)
    lam, b = 0.01, 1.0
    with pytest.warns(ConvergenceWarning, match=r"intercept_scaling") as rec:
        est = KernelSVM(lam=lam, kernel="linear", tol=1e-10, intercept_scaling=b).fit(X, y)
    assert est.stop_reason_ == "precision" and not est.converged_
    assert abs(est.primal_objective_ - est.dual_objective_) <= 1e-15  # the optimum is reached
    sd = np.sqrt(np.sum(X * X, axis=1) + b * b)
    slack = KERNEL_SUM_REL_ERROR * sd.mean() * np.sum(sd * np.abs(est.mu_)) \
        + 1e-15 * (1.0 + abs(est.primal_objective_) + abs(est.dual_objective_))
    assert est.duality_gap_ == pytest.approx(slack, rel=1e-6)
    assert slack <= 1.01 * KERNEL_SUM_REL_ERROR * (1.0 + b * b) / lam  # the public floor (R_φ'² = 1 + b², Σ|μ| ≤ 1/λ)
    msg = str(rec[0].message)
    assert "the problem is solved" in msg and f"{slack - 1e-15 * (1.0 + abs(est.primal_objective_) + abs(est.dual_objective_)):.3e}" in msg
    suggested = float(msg.split("tol >= ")[1].split()[0].rstrip(".;,"))
    assert slack < suggested <= 2.0 * KERNEL_SUM_REL_ERROR * (1.0 + b * b) / lam
    ok = KernelSVM(lam=lam, kernel="linear", tol=suggested, intercept_scaling=b).fit(X, y)
    assert ok.converged_ and ok.duality_gap_ <= suggested

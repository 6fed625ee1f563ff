"""Tests of dpcore.SimplexERM (Jain & Thakurta 2014 §5.1): certified entropic solver against scipy,
the certificate, sensitivity fuzzing on real neighbouring solves, calibration of m (pure and
advanced composition) against hand computation, a privacy audit of the sampled output that also
catches a deliberately broken copy, utility on a planted problem, validation, accountant,
reproducibility and the scikit-learn protocol."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from scipy import optimize, sparse

from dpcore._internal.cloning import derive_clone_seed
from dpcore import BudgetAccountant, BudgetExceededError
from dpcore.audit import audit
from dpcore.accounting.calibrate import compose_advanced
from dpcore.mechanisms.multinomial import multinomial_draws, probability_error_bound
from dpcore.glm.simplex import (
    MIN_PROBABILITY, EntropicSimplexProblem, SimplexCertificationError, SimplexERM, epsilon0, n_draws,
    simplex_calibration,
)

LOSSES = ("squared", "logistic", "huber_svm")


def _data(rng, n, p, loss, B=1.0, sparsity=0.0):
    X = rng.uniform(-1, 1, (n, p))
    if sparsity:
        X[rng.random((n, p)) < sparsity] = 0.0
    w = np.zeros(p)
    w[: max(1, p // 3)] = rng.normal(size=max(1, p // 3))
    w /= np.abs(w).sum()
    z = X @ w
    if loss == "squared":
        return X, np.clip(z + 0.1 * rng.normal(size=n), -B, B)
    return X, np.where(z + 0.05 * rng.normal(size=n) > 0, 1.0, -1.0)


def _problem(X, y, loss, lam, **kw):
    return EntropicSimplexProblem(X, y, loss=loss, lam=lam, data_norm_inf=1.0,
                                  label_bound=1.0 if loss == "squared" else None, **kw)


# ------------------------------------------------------------------------------ solver
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("signed", [True, False])
def test_solver_beats_scipy_and_certificate_bounds_its_distance(loss, signed):
    rng = np.random.default_rng(3)
    X, y = _data(rng, 40, 4, loss)
    for lam in (0.5, 0.1):
        pr = _problem(X, y, loss, lam, signed=signed, scale=1.5)
        sol = pr.solve(tau_tol=1e-9, max_iter=20_000, require=True)
        th = sol.theta
        assert th.sum() == pytest.approx(1.0, abs=1e-12) and th.min() > 0
        # independent solver: SLSQP on the simplex
        res = optimize.minimize(pr.objective, np.full(pr.P, 1.0 / pr.P), method="SLSQP",
                                bounds=[(1e-300, 1.0)] * pr.P,
                                constraints=[dict(type="eq", fun=lambda t: t.sum() - 1.0)],
                                options=dict(maxiter=2000, ftol=1e-15))
        th_s = res.x / res.x.sum()
        F_ours, F_s = pr.objective(th), pr.objective(th_s)
        assert F_ours <= F_s + 1e-10
        # ||θ_s − θ̂||₁ ≤ sqrt(2 (F(θ_s) − F*)/λ) with F* ≥ F(θ) − gap (weak duality)
        f_lower = F_ours - max(sol.gap, 0.0) - 1e-13
        dist_s = math.sqrt(2.0 * max(F_s - f_lower, 0.0) / lam)
        assert np.abs(th - th_s).sum() <= dist_s + sol.l1_error + 1e-9
        # the released distribution is T(θ_k), and θ̂ = T(θ̂)
        np.testing.assert_allclose(sol.release, pr.fixed_point_map(th), rtol=1e-9, atol=1e-15)
        assert sol.tau <= 1e-9


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), loss=st.sampled_from(LOSSES), lam=st.sampled_from([0.05, 0.3, 2.0]),
       conc=st.sampled_from([0.1, 1.0, 10.0]))
def test_certificate_upper_bounds_suboptimality_at_random_points(seed, loss, lam, conc):
    """gap(θ) = λ KL(θ||T(θ)) ≥ F(θ) − F(θ̂), and the two ℓ1 certificates bound ||θ − θ̂||₁."""
    rng = np.random.default_rng(seed)
    X, y = _data(rng, 12, 3, loss)
    pr = _problem(X, y, loss, lam)
    sol = pr.solve(tau_tol=1e-10, max_iter=20_000)
    th_hat = sol.theta
    theta = rng.dirichlet(np.full(pr.P, conc))
    theta = np.maximum(theta, 1e-200)
    theta /= theta.sum()
    gap = pr.gap(theta)
    subopt = pr.objective(theta) - pr.objective(th_hat)  # ≤ F(θ) − F*
    assert gap >= subopt - 1e-12 * (1 + abs(pr.objective(theta)))
    dist = np.abs(theta - th_hat).sum() - sol.l1_error
    assert dist <= math.sqrt(2.0 * max(gap, 0.0) / lam) + 1e-9
    T = pr.fixed_point_map(theta)
    osc = float(np.max(np.log(theta) - np.log(T)) - np.min(np.log(theta) - np.log(T)))
    assert dist <= osc / 2 + 1e-9


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), loss=st.sampled_from(LOSSES), lam=st.sampled_from([0.3, 1.0, 4.0]),
       n=st.integers(1, 6), p=st.integers(1, 3), signed=st.booleans(), scale=st.sampled_from([0.5, 1.0, 2.0]))
def test_sensitivity_of_real_neighbouring_solves_is_within_eps0(seed, loss, lam, n, p, signed, scale):
    """Noise-free, certified solves: max_j |log p_j(D) − log p_j(D')| ≤ ε0 + τ_D + τ_D'."""
    rng = np.random.default_rng(seed)
    B = 2.0
    X = rng.choice([-1.0, 0.0, 1.0], size=(n, p)) * rng.uniform(0.5, 1.0, (n, p))
    y = rng.uniform(-B, B, n) if loss == "squared" else rng.choice([-1.0, 1.0], n)
    X2, y2 = X.copy(), y.copy()
    j = int(rng.integers(n))
    X2[j] = rng.choice([-1.0, 1.0], p)
    y2[j] = rng.choice([-B, B]) if loss == "squared" else -y[j]
    kw = dict(loss=loss, lam=lam, data_norm_inf=1.0, label_bound=B if loss == "squared" else None, scale=scale,
              signed=signed)
    a, b = EntropicSimplexProblem(X, y, **kw), EntropicSimplexProblem(X2, y2, **kw)
    e0 = epsilon0(n=n, lam=lam, lipschitz=a.L, smoothness=a.Lg, r_eff=a.r_eff)
    sa = a.solve(tau_tol=1e-6 * e0, max_iter=50_000, require=True)
    sb = b.solve(tau_tol=1e-6 * e0, max_iter=50_000, require=True)
    diff = float(np.max(np.abs(sa.log_release - sb.log_release)))
    assert diff <= e0 + sa.tau + sb.tau


def test_sparse_input_padded_with_zero_features_is_never_densified():
    rng = np.random.default_rng(5)
    X, y = _data(rng, 300, 6, "logistic")
    Xs = sparse.hstack([sparse.csr_matrix(X), sparse.csr_matrix((300, 2_000))]).tocsr()
    pr = EntropicSimplexProblem(Xs, y, loss="logistic", lam=0.5, data_norm_inf=1.0)
    sol = pr.solve(tau_tol=1e-9, require=True)
    dense = EntropicSimplexProblem(Xs.toarray(), y, loss="logistic", lam=0.5, data_norm_inf=1.0).solve(tau_tol=1e-9)
    np.testing.assert_allclose(sol.log_release, dense.log_release, rtol=0, atol=1e-8)
    # padded coordinates all get the same probability (g_j = 0), the model weight there is 0
    lr = sol.log_release.reshape(2, -1)[:, 6:]
    assert np.ptp(lr) < 1e-12
    est = SimplexERM(10.0, lam=0.5, data_norm_inf=1.0, loss="logistic", random_state=0)
    assert est._check_X(Xs, 1.0, False) is Xs  # CSR float64 input is used as is (no copy, no densify)
    assert sparse.issparse(est._check_X(sparse.csr_array(Xs), 1.0, False))
    assert sparse.issparse(est._check_X(Xs.tocsc(), 1.0, False))
    big = sparse.hstack([sparse.csr_matrix(X), sparse.csr_matrix((300, 100_000))]).tocsr()
    est.fit(big, y)
    assert est.coef_.shape == (100_006,)
    assert est.predict(big).shape == (300,)


def test_gradient_float_error_bound_holds_against_exact_rational_arithmetic():
    """``_grad_fp_error`` bounds |ĝ − g| at the float iterate (squared loss: all operations rational)."""
    rng = np.random.default_rng(6)
    n, p = 7, 4
    X = rng.uniform(-1, 1, (n, p))
    y = rng.uniform(-1, 1, n)
    pr = EntropicSimplexProblem(X, y, loss="squared", lam=0.3, data_norm_inf=1.0, label_bound=1.0, scale=1.7)
    for _ in range(5):
        theta = rng.dirichlet(np.ones(pr.P))
        G = pr.gradient(theta)
        Fx = [[Fraction(v) for v in row] for row in X]
        s = Fraction(pr.scale)
        w = [s * (Fraction(theta[j]) - Fraction(theta[p + j])) for j in range(p)]
        d = [sum(Fx[i][j] * w[j] for j in range(p)) - Fraction(y[i]) for i in range(n)]
        g = [s * sum(Fx[i][j] * d[i] for i in range(n)) / n for j in range(p)]
        err = max(abs(Fraction(G[j]) - g[j]) for j in range(p))
        assert err <= Fraction(pr._grad_fp_error(0.0))
        assert all(Fraction(G[p + j]) == -Fraction(G[j]) for j in range(p))


# ------------------------------------------------------------------------------ calibration
def test_n_draws_pure_and_advanced_by_hand():
    assert n_draws(1.0, 0.0, 0.125) == (8, "pure")
    # 10 * Fraction(0.1) > 1 exactly: the exact check rounds the safe way
    assert n_draws(1.0, 0.0, 0.1) == (9, "pure")
    assert n_draws(0.05, 0.0, 0.1) == (0, "pure")
    c, eps, delta = 0.01, 1.0, 1e-6
    brute = max(k for k in range(1, 5000)
                if math.sqrt(2 * k * math.log(1 / delta)) * c + k * c * math.expm1(c) <= eps * (1 - 1e-12))
    m, comp = n_draws(eps, delta, c)
    assert (m, comp) == (brute, "advanced") and brute > 100  # beats pure composition (99 draws)
    # small budgets: pure composition wins and is used with delta > 0
    assert n_draws(0.5, 1e-6, 0.2) == (2, "pure")


def test_calibration_matches_hand_computation():
    kw = dict(epsilon=2.0, delta=0.0, n=1000, n_features=10, lam=0.5, data_norm_inf=0.5, loss="squared",
              task="regression", label_bound=1.0, scale=2.0, signed=True)
    cal = simplex_calibration(**kw)
    R = 2.0 * 0.5  # effective bound s·R∞
    L, Lg = R + 1.0, 1.0
    e0 = 4 * L * R * (0.5 + Lg * R * R) / (0.5**2 * 1000)
    assert cal.r_eff == R and (cal.lipschitz, cal.smoothness) == (L, Lg) and cal.n_coords == 20
    assert cal.epsilon0 == pytest.approx(e0, rel=1e-11) and cal.epsilon0 >= e0
    assert cal.tol == pytest.approx(0.01 * e0, rel=1e-11)
    assert 0 < cal.eta < 1e-9  # float + sampler terms are negligible but accounted for
    assert cal.per_draw_epsilon >= e0 + 2 * cal.tol + 2 * cal.eta
    assert cal.per_draw_epsilon == pytest.approx(1.02 * e0, rel=1e-8)
    m = math.floor(2.0 / cal.per_draw_epsilon)
    assert (cal.n_draws, cal.composition) == (m, "pure") and m == 40  # 2 / (1.02 · 0.048)
    assert Fraction(m) * Fraction(cal.per_draw_epsilon) <= 2 and cal.epsilon_spent <= 2.0
    # public probability bound and the sampler's error bound evaluated on it
    assert cal.p_min == pytest.approx(math.exp(-2 * L * R / 0.5) / 20, rel=1e-5) and cal.p_min >= MIN_PROBABILITY
    v = np.full(20, cal.p_min)
    v[-1] = 1 - 19 * cal.p_min
    assert cal.eta_sampler >= probability_error_bound(v)
    # advanced composition with delta > 0 and many draws
    adv = simplex_calibration(**{**kw, "epsilon": 20.0, "delta": 1e-6, "n": 100_000, "max_draws": 10**12})
    c = adv.per_draw_epsilon
    assert adv.composition == "advanced" and adv.n_draws > math.floor(20.0 / c)
    assert compose_advanced(c, 0.0, adv.n_draws, 1e-6)[0] <= 20.0
    assert compose_advanced(c, 0.0, adv.n_draws + 1, 1e-6)[0] > 20.0 * (1 - 1e-12)
    # losses: logistic (1, 1/4) and huber_svm (1, 1/(2h))
    lo = simplex_calibration(**{**kw, "loss": "logistic", "task": "classification", "label_bound": None})
    assert (lo.lipschitz, lo.smoothness, lo.label_bound) == (1.0, 0.25, 1.0)
    hu = simplex_calibration(**{**kw, "loss": "huber_svm", "task": "classification", "label_bound": None,
                                "huber_width": 0.25})
    assert (hu.lipschitz, hu.smoothness) == (1.0, 2.0)
    # the paper's setting: squared loss on ±1 targets (B = 1)
    sq = simplex_calibration(**{**kw, "task": "classification", "label_bound": None})
    assert sq.label_bound == 1.0 and sq.lipschitz == R + 1.0
    # explicit tol and the estimator's own calibration agree
    # a public cap on m only lowers the ε actually spent
    capped = simplex_calibration(**{**kw, "max_draws": 7})
    assert capped.n_draws == 7 and capped.capped and capped.epsilon_spent == pytest.approx(7 * cal.per_draw_epsilon)
    est = SimplexERM(2.0, lam=0.5, data_norm_inf=0.5, label_bound=1.0, scale=2.0, tol=1e-4)
    assert est.calibration(1000, 10).tol == 1e-4
    assert est.calibration(1000, 10).per_draw_epsilon == pytest.approx((e0 + 2e-4) * (1 + 1e-12), rel=1e-8)


def test_refusals_name_the_parameters():
    with pytest.raises(ValueError, match="not even one draw") as exc:
        SimplexERM(0.01, lam=1.0, data_norm_inf=1.0, label_bound=1.0).calibration(10, 3)
    msg = str(exc.value)
    assert "epsilon" in msg and "n=10" in msg and "lam" in msg
    with pytest.raises(ValueError, match="lam=0.01 is too small for exact sampling"):
        SimplexERM(1e6, lam=0.01, data_norm_inf=1.0, label_bound=1.0).calibration(10**6, 3)


# ------------------------------------------------------------------------------ privacy audit
def _worst_pair(n=4, B=20.0):
    """Signed p = 1 (two simplex coordinates ±), squared loss with a large label bound: the record
    with y = −B instead of +B moves most of the mass; the true per-draw loss is ~71% of ε0."""
    X = np.ones((n, 1))
    y = np.full(n, B)
    y2 = y.copy()
    y2[-1] = -B
    return (X, y), (X, y2)


class _BrokenSimplexERM(SimplexERM):
    """Deliberately broken copy: ε0 ten times too small (e.g. a lost factor), i.e. 10x the draws."""

    _epsilon0_factor = 0.1


def _sampler(cls, **kw):
    def sampler(data, n, seed):
        est = cls(**kw)
        prep = est._prepare(*data)
        p = est._certified_release(prep)
        m = prep["cal"].n_draws
        draws = multinomial_draws(p, n * m, shuffle=True, random_state=seed).reshape(n, m)
        return (draws == 1).sum(axis=1)  # count of the most-affected coordinate (−feature 0)
    return sampler


def test_audit_sampled_release_and_catch_ten_times_the_draws():
    D, D2 = _worst_pair()
    kw = dict(epsilon=2.3, lam=20.0, data_norm_inf=1.0, label_bound=20.0)
    cal = SimplexERM(**kw).calibration(4, 1)
    assert cal.n_draws == 2 and cal.composition == "pure"
    broken_cal = _BrokenSimplexERM(**kw).calibration(4, 1)
    assert broken_cal.n_draws == 20
    thresholds = np.arange(0, 21) - 0.5  # every count threshold, fixed before sampling
    res = audit(_sampler(SimplexERM, **kw), D, D2, n_samples=400_000, thresholds=thresholds, random_state=1)
    res.assert_private(2.3)
    assert res.epsilon_lower_bound > 1.2, str(res)  # the audit is sharp: the true loss is ~1.56
    broken = audit(_sampler(_BrokenSimplexERM, **kw), D, D2, n_samples=400_000, thresholds=thresholds,
                   random_state=2)
    assert broken.epsilon_lower_bound > 2.3 * 2, str(broken)
    with pytest.raises(AssertionError, match="refuted"):
        broken.assert_private(2.3)


# ------------------------------------------------------------------------------ behaviour
def test_utility_on_a_planted_sparse_problem_matches_non_private():
    rng = np.random.default_rng(7)
    n, p = 4000, 50
    X = rng.uniform(-1, 1, (n, p))
    w = np.zeros(p)
    w[[3, 17, 30]] = [0.5, -0.3, 0.2]
    y = np.where(X @ w + 0.05 * rng.normal(size=n) > 0, 1, 0)
    Xt = rng.uniform(-1, 1, (2000, p))
    yt = np.where(Xt @ w > 0, 1, 0)
    kw = dict(lam=0.15, data_norm_inf=1.0, loss="logistic", classes=(0, 1))
    pr = EntropicSimplexProblem(X, np.where(y == 1, 1.0, -1.0), loss="logistic", lam=0.15, data_norm_inf=1.0)
    w_np = pr.weights(pr.solve(tau_tol=1e-8, require=True).theta)
    acc_np = float(np.mean((Xt @ w_np > 0) == (yt == 1)))
    est = SimplexERM(1e4, random_state=0, **kw).fit(X, y)
    assert est.n_draws_ > 10_000
    acc = est.score(Xt, yt)
    assert acc_np > 0.9 and acc >= acc_np - 0.02
    assert set(np.unique(est.predict(Xt))) <= {0, 1} and list(est.classes_) == [0, 1]
    # moderate ε still learns (far fewer draws)
    est2 = SimplexERM(50.0, random_state=0, **kw).fit(X, y)
    assert est2.score(Xt, yt) > 0.75


def test_regression_and_the_papers_squared_loss_classifier():
    rng = np.random.default_rng(8)
    X, y = _data(rng, 3000, 8, "squared")
    pr = EntropicSimplexProblem(X, y, loss="squared", lam=0.12, data_norm_inf=1.0, label_bound=1.0)
    w_np = pr.weights(pr.solve(tau_tol=1e-8, require=True).theta)
    r2_np = 1.0 - np.sum((y - X @ w_np) ** 2) / np.sum((y - y.mean()) ** 2)
    reg = SimplexERM(500.0, lam=0.12, data_norm_inf=1.0, label_bound=1.0, random_state=0).fit(X, y)
    assert not hasattr(reg, "classes_")
    assert r2_np > 0.4 and reg.score(X, y) > r2_np - 0.03  # entropy shrinkage limits R², privacy costs little
    np.testing.assert_allclose(reg.predict(X), X @ reg.coef_)
    labels = np.where(X @ np.r_[1.0, -1.0, np.zeros(6)] > 0, "pos", "neg")
    clf = SimplexERM(500.0, lam=0.3, data_norm_inf=1.0, loss="squared", task="classification",
                     classes=("neg", "pos"), random_state=0).fit(X, labels)
    assert list(clf.classes_) == ["neg", "pos"] and clf.score(X, labels) > 0.85
    assert clf.privacy_.label_bound == 1.0


def test_fitted_model_holds_only_private_output_and_public_calibration():
    rng = np.random.default_rng(9)
    X, y = _data(rng, 200, 5, "logistic")
    est = SimplexERM(5.0, delta=1e-6, lam=0.5, data_norm_inf=1.0, loss="logistic", random_state=0).fit(X, y)
    fitted = {k for k in vars(est) if k.endswith("_")}
    assert fitted == {"coef_", "support_", "counts_", "n_draws_", "privacy_", "dp_event_", "classes_", "n_features_in_",
                      "lam_"}
    assert est.counts_.sum() == est.n_draws_ == est.privacy_.n_draws
    assert np.all(np.diff(est.support_) > 0) and est.support_.max() < 10
    theta = np.zeros(10)
    theta[est.support_] = est.counts_ / est.n_draws_
    np.testing.assert_allclose(est.coef_, theta[:5] - theta[5:])
    assert np.abs(est.coef_).sum() <= 1.0 + 1e-12
    unsigned = SimplexERM(5.0, lam=0.5, data_norm_inf=1.0, loss="logistic", signed=False, scale=3.0,
                          random_state=0).fit(X, y)
    assert np.all(unsigned.coef_ >= 0) and unsigned.coef_.sum() == pytest.approx(3.0)


def test_accountant_checked_before_solve_charged_once_before_sampling():
    rng = np.random.default_rng(10)
    X, y = _data(rng, 100, 3, "logistic")
    acc = BudgetAccountant(3.0, 1e-5)
    kw = dict(lam=0.5, data_norm_inf=1.0, loss="logistic", accountant=acc, random_state=0)
    SimplexERM(2.0, 1e-6, **kw).fit(X, y)
    assert acc.spent == pytest.approx((2.0, 1e-6)) and len(acc) == 1
    est = SimplexERM(2.0, 1e-6, **kw)
    with pytest.raises(BudgetExceededError):
        est.fit(X, y)
    assert not hasattr(est, "coef_") and len(acc) == 1
    # a tol below the certificate's public float floor is refused from public parameters only
    # (it used to be a SimplexCertificationError after solving, i.e. data-dependent), charging nothing
    acc2 = BudgetAccountant(10.0)
    bad = SimplexERM(2.0, lam=0.5, data_norm_inf=1.0, loss="logistic", accountant=acc2, tol=1e-300, max_iter=3)
    with pytest.raises(ValueError, match="^tol=1e-300 is below what float64 can certify"):
        bad.fit(X, y)
    assert len(acc2) == 0 and not hasattr(bad, "coef_")
    with pytest.raises(ValueError, match="^tol=1e-300"):  # same refusal on a neighbouring data set
        SimplexERM(2.0, lam=0.5, data_norm_inf=1.0, loss="logistic", tol=1e-300).fit(X[::-1].copy(), y)
    # an iteration cap below the public bound that guarantees certification is refused publicly too
    bad = SimplexERM(2.0, lam=0.5, data_norm_inf=1.0, loss="logistic", accountant=acc2, tol=1e-9, max_iter=1)
    with pytest.raises(ValueError, match="^max_iter=1 is below the public iteration bound"):
        bad.fit(X, y)
    assert issubclass(SimplexCertificationError, RuntimeError)
    assert len(acc2) == 0 and not hasattr(bad, "coef_")


def test_interrupt_leaves_the_estimator_unfitted_and_uncharged(monkeypatch):
    rng = np.random.default_rng(11)
    X, y = _data(rng, 100, 3, "logistic")
    acc = BudgetAccountant(10.0)
    est = SimplexERM(2.0, lam=0.5, data_norm_inf=1.0, loss="logistic", accountant=acc, random_state=0).fit(X, y)
    assert len(acc) == 1

    def interrupted(self, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(EntropicSimplexProblem, "solve", interrupted)
    with pytest.raises(KeyboardInterrupt):
        est.fit(X, y)
    assert not hasattr(est, "coef_") and len(acc) == 1


def test_reproducible_with_seed_secure_by_default_and_sparse_equals_dense():
    rng = np.random.default_rng(12)
    X, y = _data(rng, 300, 6, "huber_svm", sparsity=0.5)
    kw = dict(lam=0.5, data_norm_inf=1.0, loss="huber_svm")
    a = SimplexERM(3.0, random_state=5, **kw).fit(X, y)
    b = SimplexERM(3.0, random_state=5, **kw).fit(X, y)
    s = SimplexERM(3.0, random_state=5, **kw).fit(sparse.csr_matrix(X), y)
    assert np.array_equal(a.coef_, b.coef_) and np.array_equal(a.coef_, s.coef_)
    outs = {SimplexERM(3.0, **kw).fit(X, y).coef_.tobytes() for _ in range(3)}
    assert len(outs) > 1
    with pytest.raises(TypeError):
        SimplexERM(3.0, random_state=np.random.default_rng(0), **kw).fit(X, y)


def test_progress_bar_runs():
    rng = np.random.default_rng(13)
    X, y = _data(rng, 50, 3, "logistic")
    est = SimplexERM(5.0, lam=0.5, data_norm_inf=1.0, loss="logistic", verbose=True, random_state=0).fit(X, y)
    assert est.n_draws_ >= 1


def test_validation_matrix():
    rng = np.random.default_rng(14)
    X, y = _data(rng, 30, 3, "squared")
    base = dict(epsilon=5.0, lam=0.5, data_norm_inf=1.0, label_bound=1.0)
    cases = [
        (dict(epsilon=0.0), "epsilon"), (dict(epsilon=float("nan")), "epsilon"), (dict(delta=1.0), "delta"),
        (dict(delta=-0.1), "delta"), (dict(lam=0.0), "lam"), (dict(lam=float("inf")), "lam"),
        (dict(data_norm_inf=-1.0), "data_norm_inf"), (dict(label_bound=None, task="regression"), "label_bound"),
        (dict(label_bound=None), "classes"),  # task="auto" without label_bound is classification
        (dict(label_bound=0.0), "label_bound"), (dict(loss="hinge"), "loss"), (dict(task="ranking"), "task"),
        (dict(loss="logistic", task="regression"), "task='regression'"), (dict(scale=0.0), "scale"),
        (dict(signed="yes"), "signed"), (dict(tol=-1.0), "tol"), (dict(max_iter=0), "max_iter"),
        (dict(huber_width=0.0, loss="huber_svm", label_bound=None), "huber_width"), (dict(clip=1), "clip"),
        (dict(verbose="no"), "verbose"), (dict(max_draws=0), "max_draws"),
    ]
    for kw, name in cases:
        with pytest.raises(ValueError, match=name):
            SimplexERM(**{**base, **kw}).fit(X, y)
    with pytest.raises(ValueError, match="2-D"):
        SimplexERM(**base).fit(X[0], y)
    with pytest.raises(ValueError, match="NaN"):
        SimplexERM(**base).fit(np.full((3, 3), np.nan), y[:3])
    with pytest.raises(ValueError, match="y must have length"):
        SimplexERM(**base).fit(X, y[:-1])
    with pytest.raises(ValueError, match="y contains NaN"):
        SimplexERM(**base).fit(X, np.full(30, np.nan))
    with pytest.raises(ValueError, match="outside the declared domain"):
        SimplexERM(**base).fit(X * 3, y)
    with pytest.raises(ValueError, match="outside the declared domain"):
        SimplexERM(**base).fit(sparse.csr_matrix(X * 3), y)
    with pytest.raises(ValueError, match="label_bound"):
        SimplexERM(**base).fit(X, y * 5)
    clipped = SimplexERM(**base, clip=True, random_state=0).fit(X * 3, y * 5)
    assert clipped.n_draws_ >= 1
    with pytest.raises(ValueError, match="y contains .* outside the declared classes"):
        SimplexERM(**{**base, "label_bound": None}, loss="logistic").fit(X, np.arange(30) % 3)
    with pytest.raises(ValueError, match="label_bound must be None for classification"):
        SimplexERM(**base, loss="logistic").fit(X, np.sign(y))
    from dpcore.kernel_learning.svm import NotFittedError

    with pytest.raises(NotFittedError):
        SimplexERM(**base).predict(X)
    est = SimplexERM(**base, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(np.ones((2, 4)))


def test_get_params_set_params_and_sklearn_clone():
    sklearn_base = pytest.importorskip("sklearn.base")
    est = SimplexERM(2.0, 1e-6, lam=0.3, data_norm_inf=2.0, loss="logistic", scale=2.0, random_state=3)
    params = est.get_params()
    assert params["lam"] == 0.3 and params["scale"] == 2.0 and params["accountant"] is None
    c = sklearn_base.clone(est)  # an int seed: the clone gets its own derived seed (issue 25)
    assert c.get_params() == {**params, "random_state": derive_clone_seed(3, 0)} and c is not est
    assert est.set_params(lam=0.7).lam == 0.7
    with pytest.raises(ValueError, match="Invalid parameter"):
        est.set_params(eps=1.0)
    assert "SimplexERM(" in repr(est)

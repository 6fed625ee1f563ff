"""Private hyper-parameter selection (issue 13, part 3): exhaustive and repeat-and-select over μ-GDP runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import dpcore
from dpcore import BudgetAccountant
from dpcore.audit import audit
from dpcore.kernel_learning.selection import (PrivateGridSearch, _geometric_runs, _noisy_score, _repeat_and_select, _select_best,
                              _uniform_below, selection_epsilon, selection_mu)


def test_calibration_uses_dp_accounting():
    from dp_accounting import dp_event
    from dp_accounting.pld import PLDAccountant
    from dp_accounting.rdp import RdpAccountant

    single = 1.0 / dpcore.accounting.calibrate.gaussian_sigma_analytic(1.0, 1.0, 1e-6)  # one release at (1, 1e-6)
    # exhaustive: m runs compose to √m·μ-GDP (PLD)
    mu = selection_mu(1.0, 1e-6, n_candidates=4)
    acc = PLDAccountant()
    acc.compose(dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(1.0 / mu), 4))
    assert acc.get_epsilon(1e-6) <= 1.0
    assert mu * 2 == pytest.approx(single, rel=2e-3)
    assert selection_epsilon(mu * 1.001, 1e-6, n_candidates=4) > 1.0  # the largest such μ (to 1e-3)
    # repeat-and-select (RDP), with the prior's Laplace release composed first
    mu_rs = selection_mu(1.0, 1e-6, n_candidates=4, strategy="repeat_and_select", mean_runs=5, prior_epsilon=0.05)
    acc = RdpAccountant()
    acc.compose(dp_event.ComposedDpEvent([dp_event.LaplaceDpEvent(20.0),
                                          dp_event.RepeatAndSelectDpEvent(dp_event.GaussianDpEvent(1.0 / mu_rs), 5.0, 1.0)]))
    assert acc.get_epsilon(1e-6) <= 1.0
    assert mu_rs < selection_mu(1.0, 1e-6, n_candidates=4, strategy="repeat_and_select", mean_runs=5) < single
    with pytest.raises(ValueError, match="mean_runs"):
        selection_epsilon(0.1, 1e-6, n_candidates=3, strategy="repeat_and_select", mean_runs=0)
    with pytest.raises(ValueError, match="strategy"):
        selection_epsilon(0.1, 1e-6, n_candidates=3, strategy="best")


def test_run_count_is_exactly_geometric():
    rng = dpcore.mechanisms.noise.check_random_state(0)
    ks = np.array([_geometric_runs(rng, 4) for _ in range(20_000)])
    assert ks.min() == 1
    p = 0.25 * 0.75 ** (np.arange(1, 16) - 1)
    obs = np.array([(ks == k).sum() for k in range(1, 16)] + [(ks >= 16).sum()])
    exp = np.append(p, 1 - p.sum()) * ks.size
    assert stats.chisquare(obs, exp).pvalue > 1e-6
    u = np.array([_uniform_below(rng, 3) for _ in range(30_000)])
    assert stats.chisquare(np.bincount(u, minlength=3)).pvalue > 1e-6


# -- empirical audit of the selection layer ------------------------------------------------------------
# Worst case for the released best score: a replaced training row moves *every* candidate's accuracy by
# the sensitivity 1/n (unit 1 here), in the same direction. The runs are the real selection code
# (_select_best / _repeat_and_select / _noisy_score, exact grid Gaussian); a broken copy calibrates the
# score noise with n' = n/3.3 too many rows (sensitivity 1/n used where it is 3.3/n), i.e. σ/3.3.
_M = 3


def _selection_sampler(strategy, mu, noise_scale=1.0):
    def sampler(value, n, seed):
        rng = dpcore.mechanisms.noise.check_random_state(seed)
        sigma = noise_scale / mu

        def run(i):
            return _noisy_score(value, sigma, rng), None

        out = np.empty(n)
        for j in range(n):
            if strategy == "exhaustive":
                out[j] = _select_best(run, range(_M))[0]
            else:
                out[j] = _repeat_and_select(rng, _M, _M, run)[0]
        return out
    return sampler


@pytest.mark.parametrize("strategy", ["exhaustive", "repeat_and_select"])
def test_audit_selection_layer_and_catch_a_wrong_score_sensitivity(strategy):
    eps, delta = 1.0, 1e-6
    mu = selection_mu(eps, delta, n_candidates=_M, strategy=strategy, mean_runs=_M)
    thresholds = np.linspace(0.0, 5.0, 11) / mu  # fixed before sampling (multiples of the score's σ)
    res = audit(_selection_sampler(strategy, mu), 0.0, 1.0, n_samples=400_000, thresholds=thresholds,
                delta=delta, random_state=31)
    res.assert_private(eps)
    broken = audit(_selection_sampler(strategy, mu, 1 / 3.3), 0.0, 1.0, n_samples=400_000,
                   thresholds=thresholds / 3.3, delta=delta, random_state=32)
    assert broken.epsilon_lower_bound > eps, str(broken)


# -- the estimator -------------------------------------------------------------------------------------
def _easy(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None] * 1.0001
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)  # XOR: needs a non-linear kernel
    return X, y


@pytest.mark.parametrize("strategy", ["exhaustive", "repeat_and_select"])
def test_selection_releases_a_useful_model_and_charges_once(strategy):
    X, y = _easy(3000, 0)
    Z = _easy(300, 1)[0]
    Xt, yt = _easy(2000, 2)
    acc = BudgetAccountant(2.0, 1e-5, accounting="basic")  # the declared (ε, δ) are charged
    grid = {"lam": [1e-3, 1e-1, 10.0], "gamma": [5.0]}
    g = PrivateGridSearch(grid, 2.0, 1e-6, Z=Z, data_norm=1.0, strategy=strategy, random_state=0,
                          accountant=acc).fit(X, y)
    assert acc.spent == pytest.approx((2.0, 1e-6)) and len(acc) == 1
    assert set(g.best_params_) == {"lam", "gamma"} and g.best_params_["lam"] in grid["lam"]
    p = g.privacy_
    assert p.epsilon_accounted <= 2.0 and p.strategy == strategy and p.n_candidates == 3
    assert p.release_mu ** 2 + p.score_mu ** 2 == pytest.approx(p.mu ** 2)
    assert p.score_sigma == pytest.approx(1.0 / (3000 * p.score_mu))
    assert p.prior_epsilon == pytest.approx(0.1)
    assert g.release_.calibration["prior_proportion"] >= 0  # thresholded with the private proportion
    assert g.score(Xt, yt) > 0.8  # XOR is learnt by the selected private model
    assert not hasattr(g, "n_runs_") and not hasattr(g, "cv_results_")  # K and other scores stay hidden


def test_one_class_training_set_still_selects_and_releases():
    X, _ = _easy(400, 5)
    Z = _easy(50, 6)[0]
    g = PrivateGridSearch({"lam": [0.01, 0.1]}, 1.0, 1e-6, Z=Z, data_norm=1.0, random_state=0).fit(X, np.ones(400))
    assert g.best_params_["lam"] in (0.01, 0.1) and math.isfinite(g.best_score_)


def test_validation_and_public_tolerance_precheck():
    X, y = _easy(200, 3)
    Z = _easy(50, 4)[0]
    acc = BudgetAccountant(10.0, 1e-3)
    bad = [({}, {}, "param_grid"), ({"lam": []}, {}, "param_grid"),
           ({"lam": [0.1]}, dict(strategy="best"), "strategy"),
           ({"lam": [0.1]}, dict(strategy="repeat_and_select", mean_runs=0), "mean_runs"),
           ({"lam": [0.1]}, dict(score_share=0.0), "score_share"),
           ({"lam": [0.1]}, dict(prior_epsilon_share=1.0), "prior_epsilon_share")]
    for grid, kw, match in bad:
        with pytest.raises(ValueError, match=match):
            PrivateGridSearch(grid, 1.0, 1e-6, Z=Z, data_norm=1.0, accountant=acc, **kw).fit(X, y)
    assert len(acc) == 0  # refused before anything is charged
    with pytest.raises(ValueError, match="Z"):
        PrivateGridSearch({"lam": [0.1]}, 1.0, 1e-6, Z=np.zeros((3, 5)), data_norm=1.0).fit(X, y)
    # a tiny λ whose default tol is below the certifiable floor: tol is raised publicly, no refusal mid-run
    g = PrivateGridSearch({"lam": [1e-5]}, 1.0, 1e-6, Z=Z, data_norm=1.0, random_state=0,
                          base_params={"kernel": "rbf", "gamma": 1.0, "tol": 1e-12}).fit(X, y)
    assert math.isfinite(g.best_score_)


def test_default_grid_is_data_independent_around_auto():
    from dpcore.kernel_learning.gp import auto_C_for_mu

    X, y = _easy(1500, 7)
    Z = _easy(200, 8)[0]
    base = {"kernel": "rbf", "gamma": 5.0, "tol": 1e-6}
    g = PrivateGridSearch(None, 2.0, 1e-6, Z=Z, data_norm=1.0, base_params=base, random_state=0).fit(X, y)
    # issue 23 (item 3): the recommended KernelLogisticRegression at the logistic rule (ρ = 1/4)
    c0 = auto_C_for_mu(g.privacy_.release_mu, 1.0 + 0.5 ** 2, loss="logistic")  # R_φ'² = R_φ² + b² (b = 0.5)
    Cs = [1.0 / (1500 * c["lam"]) for c in g.candidates_]
    # issue 23 (item 4): plus one linear candidate (Output-Gauss logistic, intercept 1) at the same rule, R² + 1
    c_lin = auto_C_for_mu(g.privacy_.release_mu, 1.0 + 1.0, loss="logistic")
    assert Cs == pytest.approx([c0 / 3, c0, 3 * c0, c_lin], rel=1e-9)
    assert [c["estimator"] for c in g.candidates_] == ["KernelLogisticRegression"] * 3 + ["OutputPerturbation"]
    assert g.best_params_ in g.candidates_ and g.score(*_easy(1000, 9)) > 0.8
    # the grid is a function of public numbers only: another dataset of the same size gets the same grid
    g2 = PrivateGridSearch(None, 2.0, 1e-6, Z=Z, data_norm=1.0, base_params=base, random_state=1).fit(
        *_easy(1500, 10))
    assert g2.candidates_ == g.candidates_


# ---------------------------------------------------------------------------------------------- issue 22, item 4
def _refused_before_charging(make, X, y, exc, name):
    acc = BudgetAccountant(10.0, 1e-3, accounting="basic")
    with pytest.raises(exc) as e:
        make(acc).fit(X, y)
    assert str(e.value).startswith(name) or f" {name}" in str(e.value)[:60] or f"{name}=" in str(e.value), \
        (name, type(e.value).__name__, str(e.value))
    assert acc.spent == (0.0, 0.0) and len(acc) == 0, (name, acc.spent)


def test_public_inputs_are_refused_before_anything_is_charged():
    X, y = _easy(300, 3)
    Z = _easy(50, 4)[0]
    grid = {"lam": [0.1]}

    def pgs(**kw):
        args = dict(param_grid=grid, epsilon=1.0, delta=1e-6, Z=Z, data_norm=1.0, random_state=0)
        args.update(kw)
        return lambda acc: PrivateGridSearch(args.pop("param_grid"), args.pop("epsilon"), args.pop("delta"),
                                             accountant=acc, **args)

    # public Z outside the ball (was charged ε ≈ 1.26, then refused)
    _refused_before_charging(pgs(Z=Z * 3.0), X, y, ValueError, "Z")
    # gamma=1e308 (was charged, then "array must not contain infs or NaNs")
    _refused_before_charging(pgs(base_params={"kernel": "rbf", "gamma": 1e308}), X, y, ValueError, "gamma")
    _refused_before_charging(pgs(param_grid={"lam": [0.1], "gamma": [1e308]}), X, y, ValueError, "gamma")
    _refused_before_charging(pgs(epsilon=1e-300), X, y, ValueError, "epsilon")
    # refusals about X and y (were charged after training): domain, labels outside the classes, overflow
    _refused_before_charging(pgs(), X * 3.0, y, ValueError, "X")
    _refused_before_charging(pgs(), X, np.where(y > 0, 2, -1), ValueError, "y")
    _refused_before_charging(pgs(base_params={"kernel": "poly", "gamma": 1e10, "degree": 40}), X, y, ValueError,
                             "degree")
    # mean_runs = 10**12 was accepted, ran for ever and had charged ε = 2
    _refused_before_charging(pgs(strategy="repeat_and_select", mean_runs=10**12), X, y, ValueError, "mean_runs")
    from dpcore.kernel_learning.selection import MAX_MEAN_RUNS
    _refused_before_charging(pgs(strategy="repeat_and_select", mean_runs=MAX_MEAN_RUNS + 1), X, y, ValueError,
                             "mean_runs")


_HOSTILE = [math.nan, math.inf, -math.inf, 0.0, -1.0, 1e308, 1e-300, 5e-324, 2**70, 10**400, "1", None, [1.0]]


@pytest.mark.parametrize("param", ["epsilon", "delta", "data_norm", "score_share", "prior_epsilon_share",
                                   "mean_runs", "strategy", "Z", "param_grid", "base_params", "lam", "gamma",
                                   "degree", "coef0", "tol", "classes", "random_state", "verbose", "accountant",
                                   "X", "y"])
def test_hostile_values_are_refused_naming_the_parameter_with_nothing_charged(param):
    """Every constructor/fit parameter with hostile values: refused with a ValueError/TypeError naming it (or
    accepted and run), and the accountant unchanged whenever it is refused."""
    X, y = _easy(120, 3)
    Z = _easy(20, 4)[0]
    values = list(_HOSTILE)
    if param == "strategy":
        values += ["best", ""]
    if param in ("Z", "X"):
        values = [np.full((20, 2), v) for v in (math.nan, math.inf, 1e308, 5.0)] + [np.zeros((0, 2)), np.zeros(3),
                                                                                   np.zeros((20, 3)), "x", None]
    if param == "y":
        values = [np.full(120, math.nan), np.full(120, 3), np.ones(7), np.array(["a"] * 120), None, np.ones((120, 2))]
    if param == "classes":
        values = [[1], [1, 1], [0, 1, 2], None, "ab", [math.nan, 1.0]]
    for v in values:
        kw = dict(Z=Z, data_norm=1.0, random_state=0, base_params={"kernel": "rbf", "gamma": 1.0, "tol": 1e-6})
        grid, eps, delta, Xf, yf = {"lam": [0.1]}, 1.0, 1e-6, X, y
        if param == "epsilon":
            eps = v
        elif param == "delta":
            delta = v
        elif param == "param_grid":
            grid = v
        elif param in ("lam", "gamma", "degree", "coef0", "tol"):
            grid = {"lam": [0.1], param: [v]} if param != "lam" else {"lam": [v]}
            if param in ("degree", "coef0"):
                kw["base_params"] = {"kernel": "poly", "gamma": 1.0, "tol": 1e-6}
        elif param == "classes":
            kw["base_params"] = dict(kw["base_params"], classes=v)
        elif param == "X":
            Xf = v
        elif param == "y":
            yf = v
        elif param == "mean_runs":
            kw.update(strategy="repeat_and_select", mean_runs=v)
        elif param != "accountant":
            kw[param] = v
        acc = BudgetAccountant(10.0, 1e-3, accounting="basic")
        used = v if param == "accountant" else acc
        try:
            PrivateGridSearch(grid, eps, delta, accountant=used, **kw).fit(Xf, yf)
        except (ValueError, TypeError) as e:
            msg = str(e)
            assert param in msg, (param, v, type(e).__name__, msg)
            assert acc.spent == (0.0, 0.0) and len(acc) == 0, (param, v, acc.spent)
        else:  # accepted: a valid value (None is the documented default of these) — and then it ran
            assert (v is None and param in ("mean_runs", "param_grid", "base_params", "random_state", "accountant",
                                            "classes")  # classes=None: the default label rule (issue 25)
                    ) or param in ("verbose", "score_share", "prior_epsilon_share", "lam", "gamma", "coef0", "tol",
                                   "data_norm", "epsilon"), (param, v)


def _imbalanced(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.7, 0.7, size=(n, 2))
    return X, np.where(X[:, 0] + X[:, 1] > 0.55, "yes", "no")  # about 22% "yes"


@pytest.mark.parametrize("declared", [("yes", "no"), ("no", "yes")])
def test_class_prior_is_released_for_the_class_every_release_predicts_for_f_positive(declared):
    # classes=["yes", "no"] inverted the private prior (accuracy 0.393 instead of 0.927): the proportion was taken
    # for classes[1] in declared order, calibrate_prior predicts classes_[1] in sorted order
    X, y = _imbalanced(3000, 0)
    Z = _imbalanced(300, 1)[0]
    Xt, yt = _imbalanced(3000, 2)
    g = PrivateGridSearch({"lam": [1e-3]}, 4.0, 1e-6, Z=Z, data_norm=1.0, prior_epsilon_share=0.2,
                          base_params={"kernel": "rbf", "gamma": 5.0, "tol": 1e-8, "classes": list(declared)},
                          random_state=0).fit(X, y)
    assert g.release_.classes_.tolist() == ["no", "yes"]
    p = g.release_.calibration["prior_proportion"]
    assert abs(p - np.mean(y == "yes")) < 0.05, p  # the positive class's proportion, whatever the declared order
    assert g.score(Xt, yt) > 0.85


@pytest.mark.parametrize("epsilon, delta, kw", [
    (0.95, 1e-6, dict(n_candidates=10, prior_epsilon=0.0475)),
    (1.0, 1e-6, dict(n_candidates=4)),
    (0.3, 1e-5, dict(n_candidates=3)),
    (1.0, 1e-6, dict(n_candidates=4, strategy="repeat_and_select", mean_runs=4)),
    (8.0, 1e-6, dict(n_candidates=20)),
])
def test_selection_mu_is_the_largest_mu_to_1e_6_in_few_accountant_calls(monkeypatch, epsilon, delta, kw):
    # the contract: eps(mu) <= epsilon < eps(mu / (1 - 1e-6)) (largest mu to relative 1e-6, rounded down); the
    # bracketed false-position search needs about 8 accountant calls (bisection from [1e-6, 1] needed ~26)
    from dpcore.kernel_learning import selection as sel

    calls = []
    real = sel.selection_epsilon

    def counted(*a, **k):
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(sel, "selection_epsilon", counted)
    mu = sel.selection_mu(epsilon, delta, **kw)
    assert len(calls) <= 12
    monkeypatch.setattr(sel, "selection_epsilon", real)
    assert real(mu, delta, **kw) <= epsilon
    assert real(mu / (1.0 - 1e-6), delta, **kw) > epsilon


def test_selection_mu_refuses_an_epsilon_below_the_smallest_mu():
    from dpcore.kernel_learning.selection import selection_mu

    with pytest.raises(ValueError, match="too small for this selection"):
        selection_mu(1e-9, 1e-12, n_candidates=1000, prior_epsilon=0.0)

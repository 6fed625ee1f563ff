"""Private hyper-parameter selection (issue 13, part 3): repeat-and-select over a μ-GDP base mechanism."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import dpcore
from dpcore import BudgetAccountant
from dpcore.selection import PrivateGridSearch, _geometric_runs, _uniform_below, selection_epsilon, selection_mu


def test_calibration_uses_dp_accountings_repeat_and_select():
    from dp_accounting import dp_event
    from dp_accounting.rdp import RdpAccountant

    mu = selection_mu(1.0, 1e-6, mean_runs=5)
    acc = RdpAccountant()
    acc.compose(dp_event.RepeatAndSelectDpEvent(dp_event.GaussianDpEvent(1.0 / mu), 5.0, 1.0))
    assert acc.get_epsilon(1e-6) <= 1.0
    assert selection_epsilon(mu * 1.001, 1e-6, mean_runs=5) > 1.0  # the largest such μ (to 1e-3)
    # selection costs: the per-run μ is below a single release's
    single = 1.0 / dpcore.calibrate.gaussian_sigma_analytic(1.0, 1.0, 1e-6)
    assert mu < single and selection_mu(1.0, 1e-6, mean_runs=10) < mu
    with pytest.raises(ValueError, match="mean_runs"):
        selection_epsilon(0.1, 1e-6, mean_runs=0)


def test_run_count_is_exactly_geometric():
    rng = dpcore.noise.check_random_state(0)
    ks = np.array([_geometric_runs(rng, 4) for _ in range(20_000)])
    assert ks.min() == 1
    p = 0.25 * 0.75 ** (np.arange(1, 16) - 1)
    obs = np.array([(ks == k).sum() for k in range(1, 16)] + [(ks >= 16).sum()])
    exp = np.append(p, 1 - p.sum()) * ks.size
    assert stats.chisquare(obs, exp).pvalue > 1e-6
    u = np.array([_uniform_below(rng, 3) for _ in range(30_000)])
    assert stats.chisquare(np.bincount(u, minlength=3)).pvalue > 1e-6


def _easy(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None] * 1.0001
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)  # XOR: needs a non-linear kernel
    return X, y


def test_selection_releases_a_useful_model_and_charges_once():
    X, y = _easy(3000, 0)
    Z = _easy(300, 1)[0]
    Xt, yt = _easy(2000, 2)
    acc = BudgetAccountant(2.0, 1e-5)
    grid = {"lam": [1e-3, 1e-1, 10.0], "gamma": [5.0]}
    g = PrivateGridSearch(grid, 2.0, 1e-6, Z=Z, data_radius=1.0, random_state=0, accountant=acc).fit(X, y)
    assert acc.spent == pytest.approx((2.0, 1e-6)) and len(acc) == 1
    assert set(g.best_params_) == {"lam", "gamma"} and g.best_params_["lam"] in grid["lam"]
    assert g.privacy_.epsilon_accounted <= 2.0 and g.privacy_.mean_runs == 3
    assert g.score(Xt, yt) > 0.8  # XOR is learnt by the selected private model
    assert not hasattr(g, "n_runs_") and not hasattr(g, "cv_results_")  # K and other scores stay hidden


def test_validation_and_public_tolerance_precheck():
    X, y = _easy(200, 3)
    Z = _easy(50, 4)[0]
    with pytest.raises(ValueError, match="param_grid"):
        PrivateGridSearch({}, 1.0, 1e-6, Z=Z, data_radius=1.0).fit(X, y)
    with pytest.raises(ValueError, match="validation_fraction"):
        PrivateGridSearch({"lam": [0.1]}, 1.0, 1e-6, Z=Z, data_radius=1.0, validation_fraction=1.0).fit(X, y)
    with pytest.raises(ValueError, match="mean_runs"):
        PrivateGridSearch({"lam": [0.1]}, 1.0, 1e-6, Z=Z, data_radius=1.0, mean_runs=0).fit(X, y)
    # a tiny λ whose default tol is below the certifiable floor: tol is raised publicly, no refusal mid-run
    g = PrivateGridSearch({"lam": [1e-5]}, 1.0, 1e-6, Z=Z, data_radius=1.0, random_state=0,
                          base_params={"kernel": "rbf", "gamma": 1.0, "tol": 1e-12}).fit(X, y)
    assert math.isfinite(g.best_score_)

"""dpcore.preprocessing (issue 25, item 2): private bounds, scalers, clipping, one-hot, one budget per pipeline."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event as dpe
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler as SkStandardScaler

import dpcore
from dpcore import BudgetAccountant, BudgetExceededError
from dpcore.preprocessing import (
    MinMaxScaler, OneHotEncoder, PrivatePipeline, PrivateQuantiles, RowNormClipper, StandardScaler,
    make_private_pipeline, pipeline_dp_event,
)
from dpcore.preprocessing.quantiles import em_epsilon, quantile_em_slack


def _raw(n=2000, d=4, seed=0):
    """The issue's synthetic raw task: 4 columns, mean 3, sd 5, 2,000 rows."""
    rng = np.random.default_rng(seed)
    X = rng.normal(3.0, 5.0, size=(n, d))
    y = ((X - 3.0) @ np.array([1.0, -0.5, 0.8, 0.3]) > 0).astype(int)
    return X, y


# ------------------------------------------------------------------------------ the package
def test_exported_and_layered():
    assert dpcore.preprocessing.StandardScaler is StandardScaler
    assert "preprocessing" in dpcore.__all__
    import ast
    from pathlib import Path
    pkg = Path(dpcore.preprocessing.__file__).parent
    for f in pkg.glob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mod = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                assert not (mod or "").startswith(("dpcore.kernel_learning", "dpcore.glm", "dpcore.private_svm",
                                                   "dpcore.ldp", "dpcore.kernels")), (f.name, mod)


# ------------------------------------------------------------------------------ StandardScaler
def test_standard_scaler_estimates_mean_and_scale_and_charges():
    X, _ = _raw(n=20000)
    acc = BudgetAccountant(2.0)
    sc = StandardScaler(epsilon=1.0, bounds=(-100, 100), accountant=acc, random_state=0).fit(X)
    assert np.abs(sc.mean_ - 3.0).max() < 0.5 and np.abs(sc.scale_ - 5.0).max() < 1.0
    assert acc.spent == pytest.approx((1.0, 0.0))
    Z = sc.transform(X)
    assert np.all(np.isfinite(Z)) and abs(Z.mean()) < 0.2
    assert np.all(sc.lower_ > -100) and np.all(sc.upper_ < 100)
    g = StandardScaler(epsilon=1.0, delta=1e-6, noise="gaussian", bounds=(-100, 100), random_state=0).fit(X)
    assert isinstance(g.dp_event_, dpe.ComposedDpEvent)
    assert isinstance(g.dp_event_.events[1], dpe.GaussianDpEvent)
    assert np.abs(g.mean_ - 3.0).max() < 0.5


def test_standard_scaler_invariant_to_records_beyond_the_bounds():
    """Records outside the declared range are clipped: moving them further out changes nothing."""
    X, _ = _raw(n=500)
    X2 = X.copy()
    X2[:10] = np.where(X[:10] > 3, 1e9, -1e9)
    X3 = X.copy()
    X3[:10] = np.where(X[:10] > 3, 40.0, -40.0)
    for est in (StandardScaler(epsilon=1.0, bounds=(-20, 30), estimate_bounds=False, random_state=3),
                StandardScaler(epsilon=1.0, bounds=(-20, 30), random_state=3),
                PrivateQuantiles(bounds=(-20, 30), random_state=3)):
        # the same seed for both (a clone of an int-seeded estimator gets a derived per-clone seed, issue 25)
        a, b = clone(est).set_params(random_state=3).fit(X2), clone(est).set_params(random_state=3).fit(X3)
        for attr in ("mean_", "scale_", "lower_", "upper_", "quantiles_"):
            if hasattr(a, attr):
                np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr))
    # and the clipping holds at transform time too
    sc = StandardScaler(epsilon=1.0, bounds=(-20, 30), estimate_bounds=False, random_state=3).fit(X)
    np.testing.assert_array_equal(sc.transform(X2[:10]), sc.transform(X3[:10]))


def test_constant_and_single_class_columns():
    X = np.column_stack([np.full(300, 7.0), np.random.default_rng(1).normal(size=300)])
    sc = StandardScaler(epsilon=1.0, bounds=(-10, 10), random_state=0).fit(X)
    Z = sc.transform(X)
    assert np.all(np.isfinite(Z)) and np.all(sc.scale_ > 0)
    assert np.all(np.isfinite(PrivateQuantiles(bounds=(-10, 10), random_state=0).fit(X).quantiles_))
    # a pipeline with a single-class y trains like any other (no special case reveals it)
    y = np.ones(300, dtype=int)
    pipe = make_private_pipeline(StandardScaler(bounds=(-10, 10), random_state=0), RowNormClipper(1.0),
                                 dpcore.ObjectivePerturbation(data_norm=1.0, classes=(0, 1), random_state=0),
                                 epsilon=1.0, delta=1e-6).fit(X, y)
    assert set(np.unique(pipe.predict(X))) <= {0, 1}


@pytest.mark.parametrize("est", [
    StandardScaler(bounds=(-1, 1)), PrivateQuantiles(bounds=(-1, 1)), MinMaxScaler(bounds=(-1, 1)),
    RowNormClipper(1.0)])
def test_nan_and_inf_refused_before_any_charge(est):
    X = np.zeros((10, 2))
    X[3, 1] = np.nan
    acc = BudgetAccountant(5.0)
    with pytest.raises(ValueError, match="X contains NaN"):
        clone(est).set_params(**({"accountant": acc} if "accountant" in est.get_params() else {})).fit(X)
    X[3, 1] = np.inf
    with pytest.raises(ValueError, match="X contains NaN or infinite"):
        clone(est).fit(X)
    assert acc.spent == (0.0, 0.0)


@pytest.mark.parametrize("est,match", [
    (StandardScaler(epsilon=0.0, bounds=(-1, 1)), "epsilon must be > 0"),
    (StandardScaler(epsilon=float("nan"), bounds=(-1, 1)), "epsilon must be finite"),
    (StandardScaler(bounds=None), "bounds must be given"),
    (StandardScaler(bounds=(1, -1)), "bounds: every lower bound"),
    (StandardScaler(bounds=([0, 0, 0], [1, 1, 1])), r"bounds\[0\] \(lower\) has 3 entries"),
    (StandardScaler(bounds=(0, 1), noise="gaussian"), "delta must be given"),
    (StandardScaler(bounds=(0, 1), delta=1e-6), "delta=1e-06 is not used by noise='laplace'"),
    (StandardScaler(bounds=(0, 1), noise="cauchy"), "noise must be one of"),
    (StandardScaler(bounds=(0, 1), bounds_share=1.5), "bounds_share must lie in"),
    (StandardScaler(bounds=(0, 1), quantiles=(0.9, 0.1)), "quantiles must be strictly increasing"),
    (StandardScaler(bounds=(0, 1), estimate_bounds="yes"), "estimate_bounds must be a bool"),
    (StandardScaler(bounds=(0, 1), epsilon=1e-20), "floating-point slack"),
    (StandardScaler(bounds=(0, 1), random_state=np.random.RandomState(0)), "random_state"),
    (StandardScaler(bounds=(0, 1), accountant="acc"), "accountant must be"),
    (PrivateQuantiles((0.5, 1.5), bounds=(0, 1)), r"quantiles must lie in \[0, 1\]"),
    (PrivateQuantiles(bounds=(0, 1), n_bins=0), "n_bins must be an integer >= 1"),
    (MinMaxScaler(bounds=(0, 1), estimate_bounds=True), "epsilon must be given"),
    (MinMaxScaler(bounds=(0, 1), feature_range=(1, 0)), "feature_range: every lower bound"),
    (RowNormClipper(radius=-1.0), "radius must be"),
    (RowNormClipper(radius=1.0, scale=float("inf")), "scale must be"),
    (OneHotEncoder(), "categories must be given"),
    (OneHotEncoder(categories=[["a"], ["b"], ["c"]]), "categories has 3 lists but X has 2 columns"),
    (OneHotEncoder(categories=[["a", "a"], ["b"]]), r"categories\[0\] has duplicate"),
    (OneHotEncoder(categories=[["a"], ["b"]], handle_unknown="drop"), "handle_unknown must be"),
])
def test_bad_parameters_named_before_any_charge(est, match):
    acc = BudgetAccountant(10.0, 1e-5)
    X = np.zeros((20, 2)) if not isinstance(est, OneHotEncoder) else np.array([["a", "b"]] * 20, dtype=object)
    if "accountant" in est.get_params() and est.get_params()["accountant"] is None:
        est = clone(est).set_params(accountant=acc)
    with pytest.raises((ValueError, TypeError), match=match):
        est.fit(X)
    assert acc.spent == (0.0, 0.0)


def test_budget_refused_before_the_data_are_read():
    acc = BudgetAccountant(0.5)
    with pytest.raises(BudgetExceededError):
        StandardScaler(epsilon=1.0, bounds=(-1, 1), accountant=acc).fit(np.zeros((5, 1)))
    assert acc.spent == (0.0, 0.0)


def test_default_accountant_is_charged():
    acc = BudgetAccountant(1.0)
    with acc:
        StandardScaler(epsilon=0.25, bounds=(-1, 1), random_state=0).fit(np.zeros((50, 2)))
    assert acc.spent == pytest.approx((0.25, 0.0))


# ------------------------------------------------------------------------------ quantiles / MinMax
def test_private_quantiles_accuracy_and_point_mass():
    rng = np.random.default_rng(0)
    x = np.where(rng.random(20000) < 0.9, 0.0, rng.exponential(5000, 20000))  # mostly 0, heavy tail
    X = np.column_stack([x, rng.normal(3, 5, 20000)])
    pq = PrivateQuantiles((0.05, 0.5, 0.95), bounds=([0, -100], [99999, 100]), epsilon=1.0, random_state=0).fit(X)
    assert pq.quantiles_[0, 0] == 0.0 and pq.quantiles_[1, 0] <= 200  # the point mass at the lower end
    true = np.quantile(X[:, 1], [0.05, 0.5, 0.95])
    assert np.abs(pq.quantiles_[:, 1] - true).max() < 1.0
    assert np.all(pq.transform(X) >= pq.lower_) and np.all(pq.transform(X) <= pq.upper_)
    assert em_epsilon(0.1, 1024) == 0.1 - quantile_em_slack(1024) and quantile_em_slack(1024) < 1e-11


def test_min_max_scaler_declared_is_free_estimated_is_charged():
    X, _ = _raw(n=5000)
    acc = BudgetAccountant(1.0)
    mm = MinMaxScaler(bounds=(-20, 30), accountant=acc).fit(X)
    assert isinstance(mm.dp_event_, dpe.NoOpDpEvent) and acc.spent == (0.0, 0.0)
    Z = mm.transform(X)
    assert Z.min() >= 0.0 and Z.max() <= 1.0
    np.testing.assert_allclose(mm.transform(np.array([[-20.0] * 4, [30.0] * 4])), [[0.0] * 4, [1.0] * 4])
    est = MinMaxScaler(bounds=(-100, 100), estimate_bounds=True, epsilon=0.5, feature_range=(-1, 1),
                       accountant=acc, random_state=0).fit(X)
    assert acc.spent == pytest.approx((0.5, 0.0)) and np.all(est.lower_ > -100)
    assert est.transform(X).min() >= -1.0 and est.transform(X).max() <= 1.0


# ------------------------------------------------------------------------------ RowNormClipper / OneHot
def test_row_norm_clipper_is_stateless_and_inside_the_ball():
    rng = np.random.default_rng(0)
    X = rng.normal(0, 10, size=(200, 5))
    X[0] = 1e200
    clip = RowNormClipper(2.0, scale=0.5)
    Z = clip.fit_transform(X)
    assert np.all(np.linalg.norm(Z, axis=1) <= 2.0) and np.all(np.isfinite(Z))
    small = rng.normal(0, 0.1, size=(5, 5))
    np.testing.assert_array_equal(clip.transform(small), small * 0.5)
    assert isinstance(clip.dp_event_, dpe.NoOpDpEvent)
    # the transform of one row does not depend on the others (stateless)
    np.testing.assert_array_equal(RowNormClipper(2.0, scale=0.5).fit(X[:3]).transform(X[5:6]), Z[5:6])


def test_one_hot_declared_categories_never_read_off_the_data():
    cats = [["a", "b", "c"], [1, 2]]
    X = np.array([["a", 2], ["zzz", 1], [" c ", 3]], dtype=object)
    Z = OneHotEncoder(categories=cats).fit_transform(X)
    np.testing.assert_array_equal(Z, [[1, 0, 0, 0, 1], [0, 0, 0, 1, 0], [0, 0, 1, 0, 0]])
    Z2 = OneHotEncoder(categories=cats, handle_unknown="other").fit_transform(X)
    assert Z2.shape == (3, 7) and Z2[1, 3] == 1.0 and Z2[2, 6] == 1.0
    # the output width depends on the declaration only, not on which values occur
    assert OneHotEncoder(categories=cats).fit_transform(X[:1]).shape == (1, 5)
    with pytest.raises(ValueError, match="column 0 has value 'zzz' at row 1"):
        OneHotEncoder(categories=cats, handle_unknown="error").fit_transform(X)
    assert isinstance(OneHotEncoder(categories=cats).fit(X).dp_event_, dpe.NoOpDpEvent)


# ------------------------------------------------------------------------------ pipelines
def _model(**kw):
    return dpcore.ObjectivePerturbation(data_norm=1.0, classes=(0, 1), random_state=0, **kw)


def test_make_private_pipeline_composes_events_and_charges_one_accountant():
    X, y = _raw()
    acc = BudgetAccountant(1.0, 1e-6)
    pipe = make_private_pipeline(StandardScaler(bounds=(-50, 50), random_state=0), RowNormClipper(1.0, scale=0.5),
                                 _model(), epsilon=1.0, delta=1e-6, weights=(1, 3), accountant=acc).fit(X, y)
    assert isinstance(pipe, PrivatePipeline)
    # δ as the step calibrates it: on the 40-bit budget grid (dpcore._internal.fp.budget_grid_down)
    from dpcore._internal.fp import budget_grid_down
    assert pipe.budget_split_ == [("standardscaler", 0.25, 0.0), ("objectiveperturbation", 0.75, budget_grid_down(1e-6))]
    ev = pipe.dp_event_
    assert isinstance(ev, dpe.ComposedDpEvent) and len(ev.events) == 3
    assert ev.events[0] == pipe[0].dp_event_ and isinstance(ev.events[1], dpe.NoOpDpEvent)
    assert ev.events[2] == pipe[-1].dp_event_
    assert len(acc.log) == 2 and acc.remaining() == pytest.approx((0.0, 0.0), abs=1e-15)
    assert pipeline_dp_event(pipe) == ev
    assert pipe.score(X, y) > 0.7
    # a second fit on the same exhausted accountant is refused before any step runs
    before = len(acc.log)
    with pytest.raises(BudgetExceededError):
        pipe.fit(X, y)
    assert len(acc.log) == before
    # clone keeps the budget parameters
    assert clone(pipe).get_params()["epsilon"] == 1.0


def test_plain_sklearn_pipeline_and_column_transformer():
    X, y = _raw()
    acc = BudgetAccountant(1.0, 1e-6)
    pipe = Pipeline([("scale", StandardScaler(epsilon=0.5, bounds=(-50, 50), accountant=acc, random_state=0)),
                     ("clip", RowNormClipper(1.0, scale=0.5)),
                     ("model", _model(epsilon=0.5, delta=1e-6, accountant=acc))]).fit(X, y)
    assert acc.remaining() == pytest.approx((0.0, 0.0), abs=1e-15)
    ev = pipeline_dp_event(pipe)
    assert len(ev.events) == 3 and ev.events[0] == pipe[0].dp_event_
    # ColumnTransformer: its private leaves are found, share the budget and compose sequentially
    Xo = np.column_stack([X[:, :2], np.where(X[:, 2] > 3, "hi", "lo")]).astype(object)
    ct = ColumnTransformer([("num", StandardScaler(bounds=(-50, 50), random_state=0), [0, 1]),
                            ("cat", OneHotEncoder(categories=[["hi", "lo"]]), [2])])
    p2 = make_private_pipeline(ct, RowNormClipper(1.0, scale=0.5), _model(), epsilon=1.0, delta=1e-6).fit(Xo, y)
    assert [s[0] for s in p2.budget_split_] == ["columntransformer__num", "objectiveperturbation"]
    assert p2.accountant_.remaining() == pytest.approx((0.0, 0.0), abs=1e-15)
    assert len(p2.dp_event_.events) == 4
    # a leaky step (scikit-learn's StandardScaler) has no dp_event_: refused, never taken as free
    leaky = Pipeline([("scale", SkStandardScaler()), ("clip", RowNormClipper(1.0)),
                      ("model", _model(epsilon=1.0, delta=1e-6))]).fit(X, y)
    with pytest.raises(ValueError, match="not a private step"):
        pipeline_dp_event(leaky)


def test_pipeline_parameter_errors():
    X, y = _raw(n=200)
    with pytest.raises(ValueError, match="weights has 1 entries but the pipeline has 2 private steps"):
        make_private_pipeline(StandardScaler(bounds=(-50, 50)), _model(), epsilon=1.0, delta=1e-6,
                              weights=(1,)).fit(X, y)
    with pytest.raises(ValueError, match="delta must be > 0"):
        make_private_pipeline(StandardScaler(bounds=(-50, 50)), _model(), epsilon=1.0).fit(X, y)
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        make_private_pipeline(StandardScaler(bounds=(-50, 50)), _model(), epsilon=-1.0, delta=1e-6).fit(X, y)
    with pytest.raises(ValueError, match="no private step"):
        make_private_pipeline(RowNormClipper(1.0), epsilon=1.0).fit(X, y)


def test_synthetic_raw_task_beats_clipping_the_raw_data():
    """The issue's task (ε = 1): the private pipeline must do clearly better than clip=True on raw data."""
    X, y = _raw(n=4000, seed=1)
    Xtr, ytr, Xte, yte = X[:2000], y[:2000], X[2000:], y[2000:]
    accs = []
    for s in range(3):
        pipe = make_private_pipeline(StandardScaler(bounds=(-50, 50), random_state=s), RowNormClipper(1.0, scale=0.5),
                                     dpcore.ObjectivePerturbation(data_norm=1.0, classes=(0, 1), random_state=s),
                                     epsilon=1.0, delta=1e-6, weights=(1, 3)).fit(Xtr, ytr)
        accs.append(pipe.score(Xte, yte))
    assert np.mean(accs) > 0.8, accs

"""Predictions of kernel models and private releases on Dask (issue 16): KernelSVM / KernelLogisticRegression,
a TDDL release (``KernelRelease`` and the ``ReleasingEstimator`` delegation) — lazy, bit-for-bit the in-memory
values; the interactive services (PINP, GPService), which draw fresh noise per query, refuse Dask input.

A LocalCluster (2 workers × 1 thread, in-process) is started by the module-scoped `dask_client` fixture (tests/conftest.py); n = 200 training points.
"""

import warnings

import numpy as np
import pytest

pytest.importorskip("dask.distributed")

import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402

from dpcore import PINP, TDDL, GPService, KernelLogisticRegression, KernelRelease, KernelSVM  # noqa: E402
from dpcore._internal.dask import is_dask_collection  # noqa: E402

# the in-process scheduler's HTTP (metrics) server falls back to a free port when 8787 is taken on the host
pytestmark = pytest.mark.filterwarnings("ignore:Port .* is already in use:UserWarning")

D = 3
#: uneven blocks, some of at most 4 rows (the Rust engine's dot-product path), and even blocks
CHUNKINGS = [(1, 2, 3, 4, 5, 40, 6, 60, 4), 25]
COLUMNS = ["u", "v", "w"]


def _ball(rng, n):
    return rng.uniform(-0.5, 0.5, size=(n, D))  # ||x|| <= 0.87 < data_norm = 1


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    X = _ball(rng, 200)
    y = np.where(X[:, 0] * X[:, 1] + 0.1 * X[:, 2] > 0, 1, -1)
    Q = _ball(rng, 125)
    yq = np.where(Q[:, 0] * Q[:, 1] + 0.1 * Q[:, 2] > 0, 1, -1)
    svm = KernelSVM(lam=1e-2, kernel="rbf", gamma=2.0, tol=1e-8).fit(X, y)
    return dict(X=X, y=y, Q=Q, yq=yq, svm=svm, Z=_ball(rng, 40))


@pytest.fixture(scope="module")
def tddl(problem):
    return TDDL(problem["svm"], epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0).fit(problem["Z"])


def _dask(Q, chunks):
    return da.from_array(Q, chunks=(chunks, D))


@pytest.mark.parametrize("chunks", CHUNKINGS, ids=["uneven", "even"])
def test_kernel_svm_equals_in_memory(dask_client, problem, chunks):
    svm, Q, yq = problem["svm"], problem["Q"], problem["yq"]
    Qd = _dask(Q, chunks)
    f = svm.decision_function(Qd)
    assert is_dask_collection(f) and f.chunks == (Qd.chunks[0],)
    assert np.array_equal(f.compute(), svm.decision_function(Q))
    labels = svm.predict(Qd)
    assert is_dask_collection(labels) and labels.dtype == svm.classes_.dtype
    assert np.array_equal(labels.compute(), svm.predict(Q))
    assert svm.score(Qd, yq) == svm.score(Q, yq)
    assert svm.score(Qd, da.from_array(yq, chunks=50)) == svm.score(Q, yq)


def test_kernel_logistic_regression_proba(dask_client, problem):
    klr = KernelLogisticRegression(lam=1e-2, kernel="poly", gamma=1.0, degree=2, tol=1e-8).fit(problem["X"],
                                                                                               problem["y"])
    Qd = _dask(problem["Q"], CHUNKINGS[0])
    proba = klr.predict_proba(Qd)
    assert proba.chunks == (Qd.chunks[0], (2,))
    assert np.array_equal(proba.compute(), klr.predict_proba(problem["Q"]))
    assert np.array_equal(klr.predict(Qd).compute(), klr.predict(problem["Q"]))


def test_kernel_svm_dataframes_labels_and_feature_names(dask_client, problem):
    X, Q = pd.DataFrame(problem["X"], columns=COLUMNS), pd.DataFrame(problem["Q"], columns=COLUMNS)
    svm = KernelSVM(lam=1e-2, kernel="rbf", gamma=2.0, tol=1e-8, classes=["no", "yes"]).fit(
        X, np.where(problem["y"] > 0, "yes", "no"))
    yq = pd.Series(np.where(problem["yq"] > 0, "yes", "no"))
    Qdd = dd.from_pandas(Q, npartitions=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the fitted column names: no warning
        labels = svm.predict(Qdd)
        assert np.array_equal(labels.compute(), svm.predict(Q))
        assert svm.score(Qdd, dd.from_pandas(yq, npartitions=3)) == svm.score(Q, yq)
    with pytest.raises(ValueError, match="feature names should match"):
        svm.decision_function(dd.from_pandas(Q.rename(columns={"w": "z"}), npartitions=2))
    with pytest.warns(UserWarning, match="does not have valid feature names"):  # as for a numpy array
        svm.decision_function(_dask(problem["Q"], 25))


def test_kernel_svm_errors(dask_client, problem):
    svm, Q = problem["svm"], problem["Q"]
    with pytest.raises(ValueError, match="^X has 2 features, but KernelSVM is expecting 3"):
        svm.decision_function(da.from_array(Q[:, :2], chunks=25))  # eager
    bad = Q.copy()
    bad[60, 1] = np.inf
    f = svm.predict(_dask(bad, 25))  # lazy: the values are checked when computed
    with pytest.raises(ValueError, match="^X contains NaN or infinite values"):
        f.compute()


@pytest.mark.parametrize("chunks", CHUNKINGS, ids=["uneven", "even"])
def test_tddl_release_equals_in_memory(dask_client, problem, tddl, chunks):
    Q, yq = problem["Q"], problem["yq"]
    Qd = _dask(Q, chunks)
    rel = tddl.release_
    shifted = rel.calibrate_prior(0.3)  # post-processing with an intercept
    for model in (rel, shifted, tddl):  # the release, and the estimator delegating to it
        f = model.decision_function(Qd)
        assert is_dask_collection(f) and f.chunks == (Qd.chunks[0],)
        assert np.array_equal(f.compute(), model.decision_function(Q))
        assert np.array_equal(model.predict(Qd).compute(), model.predict(Q))
        assert model.score(Qd, yq) == model.score(Q, yq)
    df = dd.from_pandas(pd.DataFrame(Q, columns=COLUMNS), npartitions=4)
    assert np.array_equal(rel.predict(df).compute(), rel.predict(Q))


def test_release_without_points_and_errors(dask_client, problem, tddl):
    Q = problem["Q"]
    empty = KernelRelease(np.zeros((0, D)), np.zeros(0), tddl.release_.kernel, mechanism="TDDL", epsilon=1.0,
                          delta=1e-6, calibration={"test": True}, data_norm=1.0, intercept=0.25)
    assert np.array_equal(empty.decision_function(_dask(Q, 25)).compute(), empty.decision_function(Q))
    with pytest.raises(ValueError, match="^X has 4 features, but KernelRelease is expecting 3"):
        tddl.predict(da.zeros((10, 4), chunks=5))
    with pytest.raises(ValueError, match="^X must have 2 dimensions"):
        tddl.release_.predict(da.zeros(10, chunks=5))


def test_interactive_services_refuse_dask(problem):
    svm, Q = problem["svm"], problem["Q"]
    Qd = _dask(Q, 25)
    session = PINP(svm, 1.0, 1e-6, data_norm=1.0, n_queries=10, norm_bound=100.0, random_state=0)
    with pytest.raises(TypeError, match="^X is a Dask Array, not supported here: PINP answers draw fresh noise"):
        session.predict(Qd)
    assert session.remaining_queries == 10  # nothing answered, nothing spent
    session.close()
    service = GPService(svm, 1.0, 1e-6, data_norm=1.0, max_exact_queries=50, random_state=0)
    for call in (service.predict, service.decision_function):
        with pytest.raises(TypeError, match="^X is a Dask Array, not supported here: GPService answers"):
            call(Qd)
    with pytest.raises(TypeError, match="^points is a Dask Array"):
        service.calibrate_prior(0.5, Qd)
    assert service.n_answered == 0 and service.n_distinct == 0
    service.close()

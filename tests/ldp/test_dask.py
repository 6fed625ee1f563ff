"""Dask-backed LDP servers and partitioned simulation (issue 16): exact equality with the in-memory path.

A LocalCluster (2 workers × 1 thread, in-process) is started by the module-scoped `dask_client` fixture (tests/conftest.py); data are small
(a few leaves of dpcore.ldp._stats.LEAF_ROWS users) so the whole file runs in well under a minute.
"""

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("dask.distributed")

import dask  # noqa: E402
import dask.array as da  # noqa: E402
from dask.distributed import Client, LocalCluster  # noqa: E402

from dpcore import ldp  # noqa: E402
from dpcore._internal.dask import aligned_row_chunks, is_dask_collection  # noqa: E402
from dpcore.ldp._stats import LEAF_ROWS, ExactSum  # noqa: E402
from dpcore.ldp.simulation import partition_seeds  # noqa: E402

# the in-process scheduler's HTTP (metrics) server falls back to a free port when 8787 is taken on the host
pytestmark = pytest.mark.filterwarnings("ignore:Port .* is already in use:UserWarning")

N = 3 * LEAF_ROWS + 777  # three full leaves and a partial one
D = 4


@pytest.fixture(scope="module")
def X():
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, size=(N, D))
    return X / (2 * X.sum(axis=1, keepdims=True))  # ||x||_1 = 0.5 ≤ 1


def _batches(*arrays, cuts):
    edges = [0, *cuts, arrays[0].shape[0]]
    return [tuple(a[lo:hi] for a in arrays) for lo, hi in zip(edges[:-1], edges[1:])]


# ---- the exact sums --------------------------------------------------------------------------------------------

def test_exact_sum_is_order_independent():
    rng = np.random.default_rng(1)
    parts = [rng.standard_normal((3, 2)) * 10.0 ** rng.integers(-20, 20, size=(3, 2)) for _ in range(50)]
    a, b = ExactSum((3, 2)), ExactSum((3, 2))
    for p in parts:
        a.add(p)
    for i in rng.permutation(50):
        b.add(parts[i])
    halves = ExactSum((3, 2))
    for p in parts[:25]:
        halves.add(p)
    rest = ExactSum((3, 2))
    for p in parts[25:]:
        rest.add(p)
    assert np.array_equal(a.value(), b.value())
    assert np.array_equal(a.value(), halves.merge(rest).value())
    # correctly rounded: equals math.fsum entrywise
    import math
    ref = np.array([[math.fsum(p[i, j] for p in parts) for j in range(2)] for i in range(3)])
    assert np.array_equal(a.value(), ref)


def test_aligned_row_chunks():
    assert aligned_row_chunks((4096, 4096, 10), 4096) == (4096, 4096, 10)
    assert aligned_row_chunks((3000, 3000, 3000), 4096) == (4096, 4904)  # 3000 → 4096, 6000 → 4096 (nearest)
    assert aligned_row_chunks((100, 100), 4096) == (200,)


def test_is_dask_collection():
    assert is_dask_collection(da.zeros(3, chunks=2)) and not is_dask_collection(np.zeros(3))
    assert not is_dask_collection([1, 2]) and not is_dask_collection(None)


def test_dpcore_imports_without_dask():
    code = ("import sys; sys.modules['dask'] = None; sys.modules['distributed'] = None\n"
            "import numpy as np; from dpcore import ldp\n"
            "p = ldp.MeanEstimationProtocol(dim=3, n_users=500, epsilon=8.0, delta=1e-6, n_groups=1)\n"
            "Y = ldp.simulate(np.full((500, 3), 0.1), None, p, random_state=0)\n"
            "ldp.LDPMeanEstimator(p).fit(Y); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


# ---- servers: Dask == in-memory, partial_fit == fit ----------------------------------------------------------

def test_mean_dask_equals_in_memory(dask_client, X):
    proto = ldp.MeanEstimationProtocol(dim=D, n_users=N, epsilon=8.0, delta=1e-6, n_groups=3, projection_dim=6)
    Y = ldp.simulate(X, None, proto, random_state=0)
    ref = ldp.LDPMeanEstimator(proto).fit(Y)
    assert not ref.zero_by_radius_
    for chunks in (LEAF_ROWS, 3000, (N - 5, 5)):
        est = ldp.LDPMeanEstimator(proto).fit(da.from_array(Y, chunks=(chunks, -1)))
        assert np.array_equal(est.mean_, ref.mean_) and np.array_equal(est.projected_mean_, ref.projected_mean_)
        assert est.selected_group_ == ref.selected_group_
    inc = ldp.LDPMeanEstimator(proto)
    for i, (b,) in enumerate(_batches(Y, cuts=[10, 5000, 9000])):
        inc.partial_fit(da.from_array(b, chunks=(1111, -1)) if i % 2 else b)
        assert inc.n_reports_seen_ == min(N, [10, 5000, 9000, N][i])
    assert np.array_equal(inc.mean_, ref.mean_)
    with pytest.raises(ValueError, match="n_users"):
        inc.partial_fit(Y[:1])
    # fit resets the accumulated statistics
    assert np.array_equal(inc.fit(Y).mean_, ref.mean_)


def test_mean_accepts_dask_dataframe(dask_client, X):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    proto = ldp.MeanEstimationProtocol(dim=D, n_users=N, epsilon=8.0, delta=1e-6, n_groups=1, projection_dim=5)
    Y = ldp.simulate(X, None, proto, random_state=2)
    df = dd.from_pandas(pd.DataFrame(Y, columns=[f"y{j}" for j in range(5)]), npartitions=3)
    assert np.array_equal(ldp.LDPMeanEstimator(proto).fit(df).mean_, ldp.LDPMeanEstimator(proto).fit(Y).mean_)


@pytest.mark.parametrize("kind", ["sparse", "kernel"])
def test_regressions_dask_equal_in_memory(dask_client, X, kind):
    y = X[:, 0] - X[:, 1]
    if kind == "sparse":
        proto = ldp.SparseRegressionProtocol(dim=D, n_users=N, epsilon=2.0, delta=1e-6, projection_dim=6)
        make = lambda: ldp.LDPSparseRegression(proto)  # noqa: E731
    else:
        proto = ldp.KernelRidgeProtocol(dim=D, n_users=N, epsilon=2.0, delta=1e-6, n_components=8)
        make = lambda: ldp.LDPKernelRidge(proto)  # noqa: E731
    Z, v = ldp.simulate(X, y, proto, random_state=3)
    ref = make().fit(Z, v)
    for chunks in (LEAF_ROWS, 2500):
        est = make().fit(da.from_array(Z, chunks=(chunks, -1)), da.from_array(v, chunks=chunks))
        assert np.array_equal(est.coef_, ref.coef_) and np.array_equal(est.Q_, ref.Q_)
    est = make().fit(da.from_array(Z, chunks=(3000, -1)), v)  # a numpy v follows Z's chunks
    assert np.array_equal(est.coef_, ref.coef_)
    inc = make()
    for i, (zb, vb) in enumerate(_batches(Z, v, cuts=[1, 4100, 7000])):
        inc.partial_fit(*((da.from_array(zb, chunks=(2000, -1)), da.from_array(vb, chunks=2000)) if i % 2
                          else (zb, vb)))
    assert inc.n_reports_seen_ == N and np.array_equal(inc.coef_, ref.coef_)
    with pytest.raises(ValueError, match="v_reports"):
        make().fit(da.from_array(Z, chunks=(3000, -1)), da.from_array(v[:-1], chunks=3000))


def test_logistic_dask_equals_in_memory(dask_client, X):
    proto = ldp.LogisticProtocol(dim=D, n_users=N, epsilon=8.0, delta=1e-6)
    y = np.where(X[:, 0] > 0.125, 1, -1)
    R = ldp.simulate(2 * X, y, proto, random_state=4)
    ref = ldp.LDPLogisticRegression(proto, batch_size=64).fit(R)
    for chunks in (3000, 4096, 1000):
        Rd = ldp.LogisticReports(*(da.from_array(a, chunks=(chunks,) + a.shape[1:]) for a in (R.z0, R.zy, R.zx)))
        est = ldp.LDPLogisticRegression(proto, batch_size=64).fit(Rd)
        assert np.array_equal(est.coef_, ref.coef_) and est.n_iter_ == ref.n_iter_ == N // 64
    fixed = ldp.LDPLogisticRegression(proto, batch_size=64, step_size=0.4).fit(R)
    inc = ldp.LDPLogisticRegression(proto, batch_size=64, step_size=0.4)
    for i, (a, b, c) in enumerate(_batches(R.z0, R.zy, R.zx, cuts=[30, 5000, 9001])):
        parts = (a, b, c) if i % 2 == 0 else tuple(da.from_array(t, chunks=(700,) + t.shape[1:]) for t in (a, b, c))
        inc.partial_fit(ldp.LogisticReports(*parts))
    assert np.array_equal(inc.coef_, fixed.coef_) and inc.n_iter_ == fixed.n_iter_
    with pytest.raises(ValueError, match="step_size"):
        ldp.LDPLogisticRegression(proto).partial_fit(R)


def test_dask_errors_name_the_parameter(dask_client, X):
    proto = ldp.MeanEstimationProtocol(dim=D, n_users=N, epsilon=8.0, delta=1e-6, n_groups=1, projection_dim=5)
    Y = ldp.simulate(X, None, proto, random_state=0)
    Yd = da.from_array(Y, chunks=(3000, -1))
    with pytest.raises(ValueError, match="reports has 12287 rows"):
        ldp.LDPMeanEstimator(proto).fit(Yd[:12287])
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        ldp.LDPMeanEstimator(proto).fit(Yd[Yd[:, 0] > -np.inf])
    bad = Y.copy()
    bad[5000, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ldp.LDPMeanEstimator(proto).fit(da.from_array(bad, chunks=(3000, -1)))
    with pytest.raises(ValueError, match="shape"):
        ldp.LDPMeanEstimator(proto).fit(Yd[:, :3])


# ---- partitioned simulation ----------------------------------------------------------------------------------

def test_simulate_partitions_reproducible_across_workers_and_routes(dask_client, X):
    y = X[:, 0]
    proto = ldp.SparseRegressionProtocol(dim=D, n_users=N, epsilon=2.0, delta=1e-6, projection_dim=6)
    Z2, v2 = dask.compute(*ldp.simulate(X, y, proto, random_state=7, chunks=3000))  # 2 workers
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as c1, \
            Client(c1, set_as_default=False) as one:
        Z1, v1 = one.compute(list(ldp.simulate(X, y, proto, random_state=7, chunks=3000)), sync=True)
    Zs, vs = dask.compute(*ldp.simulate(X, y, proto, random_state=7, chunks=3000), scheduler="synchronous")
    # the same row boundaries reached another way: a Dask X (and y) chunked 3000
    Zd, vd = dask.compute(*ldp.simulate(da.from_array(X, chunks=(3000, -1)), da.from_array(y, chunks=3000), proto,
                                        random_state=7))
    for Z, v in ((Z1, v1), (Zs, vs), (Zd, vd)):
        assert np.array_equal(Z, Z2) and np.array_equal(v, v2)
    # another seed or other boundaries give another draw; partitions never share a stream
    assert not np.array_equal(ldp.simulate(X, y, proto, random_state=8, chunks=3000)[0].compute(), Z2)
    Zb = ldp.simulate(X, y, proto, random_state=7, chunks=(3000, 3000, 3000, N - 9000 - 100, 100))[0].compute()
    assert np.array_equal(Zb[:9000], Z2[:9000]) and not np.array_equal(Zb[9000:], Z2[9000:])
    seeds = partition_seeds(7, 1000)
    assert len(set(seeds)) == 1000 and seeds[:4] == partition_seeds(7, 4)
    # reports of a simulated partitioned run feed the Dask server exactly like their computed values
    ref = ldp.LDPSparseRegression(proto).fit(Z2, v2)
    Zl, vl = ldp.simulate(X, y, proto, random_state=7, chunks=3000)
    assert np.array_equal(ldp.LDPSparseRegression(proto).fit(Zl, vl).coef_, ref.coef_)


def test_simulate_partitioned_protocols_and_errors(dask_client, X):
    ch = ldp.gaussian_channel(D, 2.0, 1e-6)
    R = ldp.simulate(X, None, ch, random_state=1, chunks=5000)
    assert R.shape == X.shape and R.chunks[0] == (5000, 5000, N - 10000)
    lp = ldp.LogisticProtocol(dim=D, n_users=N, epsilon=8.0, delta=1e-6)
    rep = ldp.simulate(X, np.where(X[:, 0] > 0.1, 1, -1), lp, random_state=1, chunks=5000)
    assert rep.zx.shape == (N, lp.n_x_copies, D) and is_dask_collection(rep.z0)
    zx = rep.zx.compute()
    assert np.array_equal(zx[:, 0, :], rep.zx[:, 0, :].compute())
    kp = ldp.KernelRidgeProtocol(dim=D, n_users=N, epsilon=2.0, delta=1e-6, n_components=6)
    Z, v = ldp.simulate(X, X[:, 0], kp, random_state=1, chunks=5000)
    assert Z.shape == (N, 6) and v.shape == (N,)
    mp = ldp.MeanEstimationProtocol(dim=D, n_users=N, epsilon=8.0, delta=1e-6, n_groups=1, projection_dim=5)
    with pytest.raises(ValueError, match="n_users"):
        ldp.simulate(X[:-1], None, mp, random_state=0, chunks=5000)
    with pytest.raises(ValueError, match="y must be None"):
        ldp.simulate(X, X[:, 0], mp, random_state=0, chunks=5000)
    with pytest.raises(TypeError, match="random_state"):
        ldp.simulate(X, None, mp, random_state=np.random.default_rng(0), chunks=5000)
    with pytest.raises(TypeError, match="protocol"):
        ldp.simulate(X, None, object(), random_state=0, chunks=5000)
    with pytest.raises(ValueError, match="chunks"):
        ldp.simulate(X, None, mp, random_state=0, chunks=0)
    with pytest.raises(ValueError, match="chunks"):
        ldp.simulate(X, None, mp, random_state=0, chunks=(5000, 5000))
    big = X.copy()
    big[7000] = 1.0
    with pytest.raises(ValueError, match="clip=True"):
        ldp.simulate(big, None, mp, random_state=0, chunks=5000).compute()

"""kernel_predict and RandomFourierFeatures on Dask (issue 16): lazy, blockwise, bit-for-bit the in-memory result.

A LocalCluster (2 workers × 1 thread, in-process) is started by the module-scoped `dask_client` fixture (tests/conftest.py); every check compares a computed
Dask result with the numpy call on the whole array by exact equality (``np.array_equal``), over even, uneven and
tiny (≤ DIRECT_MAX_ROWS rows: the engine's dot-product path) row blocks and Dask DataFrames.
"""

import itertools
import pickle
import warnings

import numpy as np
import pytest

pytest.importorskip("dask.distributed")

import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402

from dpcore import RandomFourierFeatures, kernel_predict  # noqa: E402
from dpcore._internal.dask import is_dask_collection, map_row_blocks  # noqa: E402
from dpcore.kernels.evaluation import DIRECT_MAX_ROWS  # noqa: E402

# the in-process scheduler's HTTP (metrics) server falls back to a free port when 8787 is taken on the host
pytestmark = pytest.mark.filterwarnings("ignore:Port .* is already in use:UserWarning")

M, N, D = 203, 150, 4
KERNELS = [("rbf", dict(gamma=0.7)), ("poly", dict(gamma=0.5, degree=3, coef0=1.0)), ("linear", {})]


def _cycled(sizes, total):
    """Block sizes cycling through ``sizes`` up to ``total`` rows (the last block takes the remainder)."""
    out = []
    for s in itertools.cycle(sizes):
        if sum(out) + s >= total:
            return tuple(out) + (total - sum(out),)
        out.append(s)


#: even, uneven, tiny blocks (1..DIRECT_MAX_ROWS + 5 rows: both engine paths and the padding), one block
CHUNKINGS = {
    "even": 50,
    "uneven": (1, 60, 2, 97, 43),
    "tiny": _cycled(range(1, DIRECT_MAX_ROWS + 6), M),
    "one": M,
}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.uniform(-0.5, 0.5, size=(M, D)), rng.uniform(-0.5, 0.5, size=(N, D)), rng.normal(size=N)


def test_chunkings_cover_the_rows():
    assert all(sum(c) == M for c in CHUNKINGS.values() if isinstance(c, tuple))
    assert min(CHUNKINGS["tiny"]) == 1 and max(CHUNKINGS["tiny"]) > DIRECT_MAX_ROWS + 1


# ---- kernel_predict ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("chunking", CHUNKINGS)
@pytest.mark.parametrize("kernel,params", KERNELS, ids=[k for k, _ in KERNELS])
def test_kernel_predict_equals_in_memory(dask_client, data, kernel, params, chunking):
    Z, X, mu = data
    f = kernel_predict(da.from_array(Z, chunks=(CHUNKINGS[chunking], D)), X, mu, kernel=kernel, **params)
    assert is_dask_collection(f) and f.dtype == np.float64 and f.shape == (M,)
    assert f.chunks == (da.from_array(Z, chunks=(CHUNKINGS[chunking], D)).chunks[0],)
    assert np.array_equal(f.compute(), kernel_predict(Z, X, mu, kernel=kernel, **params))


@pytest.mark.parametrize("kernel,params", KERNELS, ids=[k for k, _ in KERNELS])
def test_kernel_predict_dataframe_float32_and_column_chunks(dask_client, data, kernel, params):
    Z, X, mu = data
    expected = kernel_predict(Z, X, mu, kernel=kernel, **params)
    df = dd.from_pandas(pd.DataFrame(Z, columns=list("abcd")), npartitions=3)
    assert np.array_equal(kernel_predict(df, X, mu, kernel=kernel, **params).compute(), expected)
    split_columns = da.from_array(Z, chunks=(70, 2))  # rechunked to one column chunk
    assert np.array_equal(kernel_predict(split_columns, X, mu, kernel=kernel, **params).compute(), expected)
    Z32 = Z.astype(np.float32)
    assert np.array_equal(kernel_predict(da.from_array(Z32, chunks=30), X, mu, kernel=kernel, **params).compute(),
                          kernel_predict(Z32, X, mu, kernel=kernel, **params))


def test_kernel_predict_few_rows_and_default_gamma(dask_client, data):
    Z, X, mu = data
    for m in range(1, DIRECT_MAX_ROWS + 3):  # whole Z on the dot-product path, then on GEMM
        assert np.array_equal(kernel_predict(da.from_array(Z[:m], chunks=1), X, mu, kernel="poly").compute(),
                              kernel_predict(Z[:m], X, mu, kernel="poly"))
    assert np.array_equal(kernel_predict(da.from_array(Z, chunks=64), X, mu).compute(), kernel_predict(Z, X, mu))


def test_kernel_predict_sends_the_model_once(data):
    # the support points enter the graph once, not once per block (each worker then receives them once)
    rng = np.random.default_rng(1)
    X, mu = rng.uniform(-0.5, 0.5, size=(2000, 64)), rng.normal(size=2000)
    f = kernel_predict(da.zeros((1000, 64), chunks=(10, 64)), X, mu)
    assert f.numblocks == (100,)
    assert len(pickle.dumps(dict(f.__dask_graph__()))) < 2 * X.nbytes


def test_kernel_predict_metadata_errors_are_eager(data):
    Z, X, mu = data
    Zd = da.from_array(Z, chunks=50)
    with pytest.raises(ValueError, match="^X has 3 features"):
        kernel_predict(Zd, X[:, :3], mu)
    with pytest.raises(ValueError, match="^mu must have length"):
        kernel_predict(Zd, X, mu[:-1])
    with pytest.raises(ValueError, match="^Z must have 2 dimensions"):
        kernel_predict(Zd[:, 0], X, mu)
    with pytest.raises(ValueError, match="^Z must not be empty"):
        kernel_predict(Zd[:0], X, mu)
    with pytest.raises(ValueError, match="^gamma"):
        kernel_predict(Zd, X, mu, gamma=-1.0)
    with pytest.raises(TypeError, match="^Z must be numeric"):
        kernel_predict(dd.from_pandas(pd.DataFrame({"a": ["x", "y"]}), npartitions=1), X[:, :1], mu)
    with pytest.raises(TypeError, match="^X is a Dask Array"):
        kernel_predict(Zd, da.from_array(X), mu)
    with pytest.raises(TypeError, match="^mu is a Dask Array"):
        kernel_predict(Z, X, da.from_array(mu))


def test_kernel_predict_value_errors_at_compute(dask_client, data):
    Z, X, mu = data
    bad = Z.copy()
    bad[120, 2] = np.nan
    f = kernel_predict(da.from_array(bad, chunks=50), X, mu)  # lazy: nothing is read yet
    with pytest.raises(ValueError, match="^Z contains NaN or infinite values"):
        f.compute()
    with pytest.raises(ValueError, match="^Z contains NaN"):
        kernel_predict(bad, X, mu)
    huge = np.vstack([Z[:4], np.full((2, D), 1e150)])  # finite, but the poly kernel values overflow float64
    with pytest.raises(ValueError, match="^degree: the polynomial kernel .* overflows"):
        kernel_predict(huge, X, mu, kernel="poly")
    with pytest.raises(ValueError, match="^degree: the polynomial kernel .* overflows"):
        kernel_predict(da.from_array(huge, chunks=3), X, mu, kernel="poly").compute()


def test_map_row_blocks_shapes(dask_client):
    x = da.from_array(np.arange(12.0).reshape(6, 2), chunks=((1, 0, 5), 2))  # an empty block too
    rows = map_row_blocks(lambda b: b.sum(axis=1), x).compute()
    assert np.array_equal(rows, np.arange(12.0).reshape(6, 2).sum(axis=1))
    wide = map_row_blocks(lambda b, k: np.repeat(b[:, :1], k, axis=1), x, 3, n_cols=3)
    assert wide.chunks == ((1, 0, 5), (3,)) and np.array_equal(wide.compute()[:, 2], np.arange(0.0, 12.0, 2))
    labels = map_row_blocks(lambda f, c: c[(f > 5).astype(np.intp)], x[:, 0], np.array(["a", "b"]), dtype="<U1")
    assert labels.compute().tolist() == ["a", "a", "a", "b", "b", "b"]
    with pytest.raises(ValueError, match="one column chunk"):
        map_row_blocks(np.sum, da.from_array(np.zeros((4, 4)), chunks=2))


# ---- RandomFourierFeatures ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("n_components", [10, 11])
@pytest.mark.parametrize("chunking", ["uneven", "tiny"])
def test_rff_transform_equals_in_memory(dask_client, data, n_components, chunking):
    Z = data[0]
    rff = RandomFourierFeatures(n_components=n_components, gamma=2.0, random_state=0).fit(Z)
    F = rff.transform(da.from_array(Z, chunks=(CHUNKINGS[chunking], D)))
    assert is_dask_collection(F) and F.shape == (M, n_components)
    assert F.chunks == (da.from_array(Z, chunks=(CHUNKINGS[chunking], D)).chunks[0], (n_components,))
    assert np.array_equal(F.compute(), rff.transform(Z))


def test_rff_fit_on_dask_reads_only_the_shape_and_fit_transform(dask_client, data):
    Z = data[0]
    bad = Z.copy()
    bad[7, 0] = np.inf
    lazy = RandomFourierFeatures(n_components=8, random_state=3).fit(da.from_array(bad, chunks=50))
    eager = RandomFourierFeatures(n_components=8, random_state=3).fit(Z)
    assert np.array_equal(lazy.random_weights_, eager.random_weights_) and lazy.n_features_in_ == D
    with pytest.raises(ValueError, match="^X contains NaN or infinite values"):
        lazy.transform(da.from_array(bad, chunks=50)).compute()
    F = RandomFourierFeatures(n_components=8, random_state=3).fit_transform(da.from_array(Z, chunks=60))
    assert np.array_equal(F.compute(), eager.transform(Z))


def test_rff_feature_names_on_dask(dask_client, data):
    Z = data[0]
    names = list("abcd")
    rff = RandomFourierFeatures(n_components=6, random_state=0).fit(pd.DataFrame(Z, columns=names))
    expected = rff.transform(pd.DataFrame(Z, columns=names))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # same names: no warning
        F = rff.transform(dd.from_pandas(pd.DataFrame(Z, columns=names), npartitions=4))
    assert np.array_equal(F.compute(), expected)
    with pytest.raises(ValueError, match="feature names should match"):
        rff.transform(dd.from_pandas(pd.DataFrame(Z, columns=list("abce")), npartitions=2))
    with pytest.warns(UserWarning, match="does not have valid feature names"):  # as for a numpy array
        rff.transform(da.from_array(Z, chunks=50))
    fitted_on_dask = RandomFourierFeatures(n_components=6, random_state=0).fit(
        dd.from_pandas(pd.DataFrame(Z, columns=names), npartitions=2))
    assert list(fitted_on_dask.feature_names_in_) == names


def test_rff_shape_errors_are_eager(data):
    Z = data[0]
    rff = RandomFourierFeatures(n_components=6, random_state=0).fit(Z)
    with pytest.raises(ValueError, match="X has 3 features"):
        rff.transform(da.from_array(Z[:, :3], chunks=50))
    with pytest.raises(ValueError, match="^X must have 2 dimensions"):
        rff.transform(da.from_array(Z[:, 0], chunks=50))

"""Predictions of the other released linear models (PrivateSVM, SimplexERM) over Dask blocks: lazy, and the
in-memory values (dpcore._internal.linear.LinearPredictorMixin._map_dask)."""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

import dask  # noqa: E402

import dpcore  # noqa: E402


@pytest.mark.parametrize("est", [
    dpcore.PrivateSVM(data_norm=1.0, clip=True, classes=(0, 1), random_state=0),
    dpcore.SimplexERM(100.0, lam=1.0, data_norm_inf=1.0, clip=True, classes=(0, 1), random_state=0),
], ids=["PrivateSVM", "SimplexERM"])
def test_linear_release_predicts_on_dask(est):
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(600, 3))
    y = (X[:, 0] > 0).astype(int)
    est.fit(X, y)
    Xd = da.from_array(X, chunks=(128, 3))
    with dask.config.set(scheduler="synchronous"):
        for method in ("decision_function", "predict"):
            lazy = getattr(est, method)(Xd)
            assert isinstance(lazy, da.Array)
            assert np.allclose(lazy.compute(), getattr(est, method)(X), rtol=0, atol=1e-12)
        assert np.array_equal(est.predict(Xd).compute(), est.predict(X))
        assert est.score(Xd, y) == est.score(X, y)

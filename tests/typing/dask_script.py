"""A user's script predicting on Dask arrays, type-checked with ``mypy --strict --allow-untyped-calls`` by
``tests/typing/test_mypy_strict.py`` (dask's own functions, ``da.from_array`` and ``.compute``, are not annotated;
dpcore's are): a Dask array in gives ``dask.array.Array`` out, a numpy array in gives ``NDArray`` out.
It also runs (a few seconds, the synchronous scheduler): ``python tests/typing/dask_script.py``.
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
from numpy.typing import NDArray

import dpcore


def main() -> None:
    rng = np.random.default_rng(3)
    X = rng.uniform(-0.5, 0.5, size=(300, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    Xd: da.Array = da.from_array(X, chunks=100)  # annotated: dask.array.from_array is untyped
    f: da.Array = dpcore.kernel_predict(Xd, X[:20], np.ones(20) / 20, gamma=1.0)
    feats: da.Array = dpcore.RandomFourierFeatures(n_components=8, random_state=0).fit(X).transform(Xd)
    svm = dpcore.KernelSVM(lam=0.01, gamma=1.0, tol=1e-8).fit(X, y)
    labels: da.Array = svm.predict(Xd)
    tddl = dpcore.TDDL(svm, 2.0, 1e-6, data_norm=1.0, random_state=0).fit(X[:30])
    dec: da.Array = tddl.release_.decision_function(Xd)
    pred: da.Array = tddl.predict(Xd)
    acc: float = tddl.score(Xd, y)
    in_memory: NDArray[np.float64] = tddl.release_.decision_function(X)  # numpy in, numpy out
    with dask.config.set(scheduler="synchronous"):
        same = bool(np.array_equal(dec.compute(), in_memory))
        print(f.compute().shape, feats.shape, labels.shape, pred.shape, acc, same)


if __name__ == "__main__":
    main()

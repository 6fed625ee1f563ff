"""Pieces shared by the bundled dataset loaders (Adult, Shuttle)."""

from __future__ import annotations

from typing import Any

import numpy as np

SUBSETS = ("train", "test", "all")


class Bunch(dict):
    """A dictionary whose keys are also attributes (as :class:`sklearn.utils.Bunch`).

    Examples
    --------
    >>> from dpcore.datasets import Bunch
    >>> b = Bunch(X=[[0.0]], y=[1.0])
    >>> b.X is b["X"]
    True
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(kwargs)

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key, value):
        self[key] = value

    def __dir__(self):
        return list(self.keys())


def split_rows(values, labels, subset: str, *, seed: int, test_fraction: float):
    """Rows of one subset of the fixed public split (a ``RandomState(seed)`` permutation of the row
    numbers; the last ``round(test_fraction·n)`` permuted rows are "test", the others "train", "all" is
    train then test). Depends on the row count and the public seed only. Returns ``(values, labels, idx)``."""
    n = values.shape[0]
    perm = np.random.RandomState(seed).permutation(n)
    n_test = int(round(test_fraction * n))
    idx = {"train": perm[: n - n_test], "test": perm[n - n_test:], "all": perm}[subset]
    return values[idx], labels[idx], idx


def check_subset(subset) -> str:
    if subset not in SUBSETS:
        raise ValueError(f"subset must be one of {SUBSETS}, got {subset!r}")
    return subset


def encoded_bunch(X, y, names, *, label_name: str, as_frame: bool, **fields) -> Bunch:
    """The loaders' return value: ``X``, ``y`` (as pandas objects when ``as_frame``), names, ``fields``."""
    if as_frame:
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("as_frame=True requires pandas (pip install pandas)") from exc
        X = pd.DataFrame(X, columns=names)
        y = pd.Series(y, name=label_name)
    return Bunch(X=X, y=y, feature_names=names, **fields)

"""Records against the declared public bounds: labels and the data domain of the GLM mechanisms.

Shared by the in-memory fit (:meth:`dpcore.glm.perturbation._GLMPerturbation._validate_data`) and the
Dask blocks (:mod:`dpcore.glm._dask`), so both refuse or clip exactly the same records with the same
messages. Everything here is a function of one record at a time and of public parameters (the
declared label set, ``label_bound``, ``data_norm``, ``clip``): whether a record is accepted, clipped
or refused never depends on the other records.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np
from scipy import sparse

from dpcore._internal.fp import RADIUS_TOL
from dpcore._internal.labels import encode_binary_labels
from dpcore.glm._losses import GLMLoss

__all__ = ["encode_targets", "project_rows", "row_norms"]


def encode_targets(y: np.ndarray, *, loss: GLMLoss, classes: Any, clip: bool,
                   offset: int = 0) -> Tuple[Optional[np.ndarray], np.ndarray]:
    """``(classes_, y_pm)``: labels mapped to ±1 through the declared ``classes`` (classification
    losses; ``classes_`` sorted) or real targets checked against ``label_bound`` (``loss="squared"``,
    ``classes_ = None``; clipped to ``[−B, B]`` when ``clip``). ``offset``: global index of ``y[0]``
    (for messages only)."""
    n = y.shape[0]
    if y.dtype.kind in "fc" and not np.isfinite(y).all():
        raise ValueError("y contains NaN or infinite values")
    if loss.classification:
        # Declared label set (dpcore._internal.labels): never inferred, one class is fine.
        return encode_binary_labels(y, classes, n)
    if y.dtype.kind not in "biuf":
        raise ValueError(f"Unknown label type: y must be numeric for loss='squared', got dtype {y.dtype}")
    y_pm = np.asarray(y, dtype=np.float64)
    B = loss.label_bound
    out = np.abs(y_pm) > B
    if out.any():
        if not clip:
            raise ValueError(
                f"y: {int(out.sum())} label(s) exceed the declared label_bound = {B} (e.g. {y_pm[out][0]!r}"
                f"{'' if offset == 0 else f', row {offset + int(np.flatnonzero(out)[0])}'}); "
                "pass clip=True to clip them to [-label_bound, label_bound]"
            )
        y_pm = np.clip(y_pm, -B, B)
    return None, y_pm


def row_norms(X) -> np.ndarray:
    """Computed Euclidean norm of every row (dense or CSR)."""
    if sparse.issparse(X):
        return np.sqrt(np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel())
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def project_rows(X, *, data_norm: float, clip: bool, offset: int = 0, norms: Optional[np.ndarray] = None):
    """``X`` with every row inside ``||x|| ≤ data_norm`` (computed norms, relative tolerance
    :data:`~dpcore._internal.fp.RADIUS_TOL`): rows outside raise ``ValueError`` naming ``X`` and
    ``data_norm``, or with ``clip`` are scaled onto the sphere (a copy; ``X`` is never modified).
    ``offset``: global index of the first row (for messages only); ``norms``: :func:`row_norms` of ``X``
    if already computed."""
    R = data_norm
    if norms is None:
        norms = row_norms(X)
    bad = norms > R * (1.0 + RADIUS_TOL)
    if not bad.any():
        return X
    if not clip:
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"X: {int(bad.sum())} row(s) lie outside the declared domain ||x|| <= data_norm = {R} "
            f"(e.g. row {offset + i}, norm {float(norms[i])!r}); pass clip=True to project them onto the ball"
        )
    factor = np.ones(X.shape[0])
    factor[bad] = R / norms[bad]
    if sparse.issparse(X):
        return sparse.csr_matrix(sparse.diags(factor) @ X)
    return X * factor[:, None]

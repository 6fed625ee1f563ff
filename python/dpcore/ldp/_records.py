"""Record checks and releases shared by every local-DP client, server and simulation (dpcore.ldp internals).

One acceptance rule for user records (:func:`into_ball`: reject beyond ``radius·(1 + RADIUS_TOL)`` unless
``clip``; rescale accepted rows outside the ball to ``radius·BALL_SHRINK``) and one release path through a
:class:`dpcore.ldp.vectors.GaussianChannel` (:func:`release`, :func:`release_rows`), so that clients and
simulations cannot drift apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import numpy as np

from dpcore._internal.fp import BALL_SHRINK as _SHRINK  # clipped vectors land this far inside the ball
from dpcore._internal.fp import RADIUS_TOL
from dpcore.mechanisms import noise

if TYPE_CHECKING:  # pragma: no cover
    from dpcore.ldp.vectors import GaussianChannel

__all__ = ["check_record", "into_ball", "clip_to", "release", "release_rows", "clip_rows"]


def check_record(x, name: str, dim: Optional[int], radius: float, clip: bool) -> np.ndarray:
    if hasattr(x, "tocsr") or hasattr(x, "todense"):
        raise TypeError(f"{name} is a sparse matrix; one user's record is a dense 1-D vector (use .toarray())")
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = np.array(arr, dtype=np.float64, copy=True).reshape(arr.shape)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D vector (one user's record), got shape {arr.shape}")
    if dim is not None and arr.size != dim:
        raise ValueError(f"{name} must have length {dim} (the protocol's dimension), got {arr.size}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return into_ball(arr[None, :], radius, clip, name)[0]


def into_ball(V: np.ndarray, radius: float, clip: bool, name: str) -> np.ndarray:
    """The one acceptance rule of every ldp client and of :func:`dpcore.ldp.simulate` for rows of ``V``.

    A row of norm ``≤ radius·(1 + RADIUS_TOL)`` is accepted (the tolerance of :mod:`dpcore._internal.fp`
    for user-side normalisation that rounds up); one beyond it is a ``ValueError`` naming ``name``
    unless ``clip=True``. Every row that is accepted or clipped and lies outside the ball is then
    rescaled to ``radius·BALL_SHRINK``, so what the channel releases is always inside its ball (the
    channel's sensitivity ``2·radius`` needs no inflation). The rule depends on the row alone.
    """
    V = np.array(V, dtype=np.float64, copy=True)
    norms = np.linalg.norm(V, axis=1)
    if not clip:
        bad = norms > radius * (1.0 + RADIUS_TOL)
        if bad.any():
            i = int(np.argmax(bad))
            where = f"{name} row {i}" if V.shape[0] > 1 else name
            raise ValueError(f"{where} has L2 norm {norms[i]:.17g} > the declared bound {radius:g} (tolerance "
                             f"RADIUS_TOL = 2^-40 relative); pass clip=True to clip it")
    over = norms > radius
    V[over] *= (radius * _SHRINK / norms[over])[:, None]
    return V


def clip_to(v: np.ndarray, radius: float) -> np.ndarray:
    """Clip ``v`` to the L2 ball of ``radius`` (part of the mechanism: Algorithm 1, lines 2–4)."""
    norm = float(np.linalg.norm(v))
    if norm > radius:
        v = v * (radius * _SHRINK / norm)  # a few ulps inside, robust to how the norm is summed
    return v


def release(v: np.ndarray, channel: "GaussianChannel", rng, n_samples: Optional[int] = None) -> np.ndarray:
    """Exact Gaussian release of ``v`` (already inside the channel's ball) through ``channel``."""
    flat = np.ascontiguousarray(v, dtype=np.float64).reshape(-1)
    if flat.size != channel.dim:
        raise ValueError(f"internal: value of length {flat.size} for a channel of dim {channel.dim}")
    if float(np.linalg.norm(flat)) > channel.data_norm:
        raise AssertionError("internal: released value outside the channel's ball")
    return noise.grid_release(flat, channel.plan, rng, n_samples)


def release_rows(V: np.ndarray, channel: "GaussianChannel", rng) -> np.ndarray:
    """Release every row of ``V`` (n × dim) through ``channel`` — for simulations only.

    The analytic grid release is coordinate-wise independent (``round_g(v_j + σ Z_j)``, i.i.d. ``Z_j``),
    so releasing the concatenated rows has exactly the joint law of ``n`` separate client calls."""
    V = np.ascontiguousarray(V, dtype=np.float64)
    if V.ndim != 2 or V.shape[1] != channel.dim:
        raise ValueError(f"internal: rows of shape {V.shape} for a channel of dim {channel.dim}")
    if (np.linalg.norm(V, axis=1) > channel.data_norm).any():
        raise AssertionError("internal: a released row lies outside the channel's ball")
    return noise.grid_release(V.reshape(-1), channel.plan, rng).reshape(V.shape)


def clip_rows(V: np.ndarray, radius: float) -> np.ndarray:
    """Row-wise :func:`clip_to` (the same arithmetic, vectorised)."""
    return into_ball(V, radius, True, "X")

"""Experiment helper: run every client of a protocol on a dataset and return the reports.

This is NOT part of the server: it touches raw data, exactly as the users' devices would, and only
exists so experiments and tests can produce reports in bulk. Each row has exactly the law of the
corresponding client function (:func:`privatize_vector` for a :class:`GaussianChannel`, i.e.
Algorithm 1; :func:`mean_report`, :func:`regression_report`, :func:`kernel_report`,
:func:`logistic_report`); the releases are batched, which is legitimate because the exact analytic
Gaussian release is coordinate-wise independent.
"""

from __future__ import annotations

import logging
import numbers
from typing import List, Sequence, Union, Any, Optional

import numpy as np

from dpcore.mechanisms import noise
from dpcore._internal.dask import is_dask_collection
from dpcore._internal.progress import NoProgress, check_verbose, progress_bar
from dpcore._internal.validation import check_array
from dpcore.ldp.vectors import GaussianChannel
from dpcore.ldp._records import clip_rows, into_ball, release_rows
from dpcore.ldp.kernel import KernelRidgeProtocol
from dpcore.ldp.logistic import LogisticProtocol, LogisticReports, simulate_logistic_reports
from dpcore.ldp.mean import MeanEstimationProtocol
from dpcore.ldp.regression import SparseRegressionProtocol
from dpcore._internal.types import ArrayLike, RandomState

logger = logging.getLogger(__name__)

__all__ = ["simulate"]


def _check_X(X, dim, clip, radius=1.0):
    X = np.array(check_array(X, "X", n_features=dim), dtype=np.float64)
    return into_ball(X, radius, clip, "X")


def _check_y(y, n, bound, clip):
    y = np.asarray(y, dtype=np.float64).reshape(-1) if np.asarray(y).dtype.kind in "biuf" else None
    if y is None:
        raise TypeError("y must be numeric")
    if y.shape[0] != n:
        raise ValueError(f"y must have length {n} (one response per row of X), got {y.shape[0]}")
    if not np.isfinite(y).all():
        raise ValueError("y contains NaN or infinite values")
    if (np.abs(y) > bound).any():
        if not clip:
            raise ValueError(f"y has entries outside [-{bound:g}, {bound:g}]; pass clip=True to clip them")
        y = np.clip(y, -bound, bound)
    return y


def _check_no_y(y, kind: str) -> None:
    if y is not None:
        raise ValueError(f"y must be None for a {kind} (only X is released), got {type(y).__name__}")


def simulate(X: ArrayLike, y: Optional[ArrayLike],
             protocol: Union[GaussianChannel, MeanEstimationProtocol, SparseRegressionProtocol, KernelRidgeProtocol,
                             LogisticProtocol],
             random_state: RandomState = None, *, clip: bool = False, verbose: bool | int = False,
             chunks: Union[None, int, Sequence[int]] = None) -> Any:
    """Run all ``n`` clients of ``protocol`` on ``X`` (and ``y``) and return their reports.

    Parameters
    ----------
    X : array_like, shape (n, d)
        One row per user. For :class:`GaussianChannel`, :class:`MeanEstimationProtocol`,
        :class:`SparseRegressionProtocol` and :class:`LogisticProtocol` every row must lie in the
        ball the client requires (the channel's ``data_norm``; the unit ball for the protocols),
        otherwise ``ValueError`` unless ``clip=True``. :class:`KernelRidgeProtocol` accepts any finite
        rows (its public feature map lands on the unit sphere).
    y : array_like, shape (n,), or None
        Responses for the regression/logistic protocols (``|y| ≤ label_bound``, resp. ``y ∈ [−1, 1]``,
        unless ``clip=True``); must be ``None`` for :class:`GaussianChannel` and
        :class:`MeanEstimationProtocol`.
    protocol : GaussianChannel or one of the protocol dataclasses
        A :class:`GaussianChannel` (from :func:`gaussian_channel`) runs Algorithm 1, the Basic
        Private Vector mechanism, for every row: each row has exactly the law of
        :func:`privatize_vector` called on it with the channel's ``(epsilon, delta, data_norm,
        calibration)``. The protocols run their client functions (:func:`mean_report`,
        :func:`regression_report`, :func:`kernel_report`, :func:`logistic_report`); their
        ``n_users`` must equal the number of rows.
    random_state : None, int or ChaChaRng
        Source of the released noise (``None``: secure OS seeding; ints for reproducible runs).
    clip : bool, default False
        Clip out-of-range rows / responses instead of rejecting them (as the clients' ``clip``).
    verbose : bool or int, default=False
        Show tqdm progress bars (stderr) during long calls; ``False``/``0`` shows nothing. Progress and the
        :mod:`logging` messages are for the curator only and never part of a release.
        The bar counts the batched releases (one per report part: 1, 2 or 3); each runs in Rust.
    chunks : None, int or sequence of int, optional
        Generate the reports partition by partition as Dask arrays (also the default when ``X`` is a
        Dask array): ``X`` is split into row blocks of ``chunks`` rows (or the given block sizes; for a
        Dask ``X``, its own row chunks when ``chunks`` is None). Partition ``i`` draws its noise from
        its own ChaCha20 generator seeded with ``SeedSequence(entropy, spawn_key=(SIMULATE_DOMAIN, i))``,
        ``entropy`` being the int ``random_state`` (or 128 bits from the OS for ``None``, or two words
        drawn from a given ``ChaChaRng``). No generator is shared between partitions and every stream is
        used once; the reports depend only on ``random_state`` and the row boundaries, not on the number
        of workers or the scheduling, and recomputing a partition gives the same reports (never fresh
        noise on the same data). Not the same draw as the in-memory path (``chunks=None``, numpy ``X``).

    Returns
    -------
    numpy.ndarray or tuple or LogisticReports (Dask arrays when partitioned)
        ``GaussianChannel``: the reports ``X + N(0, σ² I)``, shape (n, d).
        ``MeanEstimationProtocol``: ``Y``, shape (n, p).
        ``SparseRegressionProtocol`` / ``KernelRidgeProtocol``: ``(Z, v)``.
        ``LogisticProtocol``: a :class:`LogisticReports` bundle.

    Raises
    ------
    TypeError
        If ``protocol`` is none of the above, or ``X``/``y`` is not numeric.
    ValueError
        If shapes disagree with the protocol, a row or response is out of range (and ``clip`` is
        False), or ``y`` is given where it must be ``None``.

    Notes
    -----
    Experiments and tests only (it touches raw data, as the users' devices would). The rows are
    released in one batch through the exact grid sampler; the release is coordinate-wise
    independent, so the batch has the joint law of ``n`` separate client calls.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import ldp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.2, 0.2, size=(500, 3)); y = X[:, 0]      # ||x||_1 <= 1, |y| <= 1
    >>> proto = ldp.SparseRegressionProtocol(dim=3, n_users=500, epsilon=2.0, delta=1e-6)
    >>> Z, v = ldp.simulate(X, y, proto, random_state=0)   # one client call per row
    >>> Z.shape[0], v.shape
    (500, (500,))
    >>> Zd, vd = ldp.simulate(X, y, proto, random_state=0, chunks=200)   # Dask arrays, 3 partitions
    >>> Zd.chunks[0], bool(np.array_equal(Zd.compute(), ldp.simulate(X, y, proto, 0, chunks=200)[0].compute()))
    ((200, 200, 100), True)
    """
    if chunks is not None or is_dask_collection(X) or is_dask_collection(y):
        return _simulate_partitioned(X, y, protocol, random_state, clip=clip, chunks=chunks)

    check_verbose(verbose)
    rng = noise.check_random_state(random_state)
    n_parts = {GaussianChannel: 1, MeanEstimationProtocol: 1, SparseRegressionProtocol: 2, KernelRidgeProtocol: 2,
               LogisticProtocol: 3}.get(type(protocol))
    with progress_bar(verbose, total=n_parts, desc=f"simulate {type(protocol).__name__}", unit="release") as bar:
        out = _simulate(X, y, protocol, rng, clip, bar)
    logger.debug("simulate: %s reports of %s", type(protocol).__name__,
                 "x".join(str(k) for k in np.shape(X)))
    return out


#: Tag of the per-partition seed derivation of :func:`simulate` (``spawn_key=(SIMULATE_DOMAIN, i)``).
SIMULATE_DOMAIN = 0x1D9_51A


def partition_seeds(random_state, k: int) -> List[int]:
    """The seeds of the ChaCha20 generators of partitions ``0..k-1`` (see ``simulate(chunks=...)``)."""
    if random_state is None:
        entropy = np.random.SeedSequence().entropy  # 128 bits from the OS
    elif isinstance(random_state, noise.ChaChaRng):
        entropy = [random_state.next_u64(), random_state.next_u64()]
    elif isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        entropy = int(random_state)
        if not 0 <= entropy < 2**64:
            raise ValueError(f"random_state must lie in [0, 2**64), got {entropy}")
    else:
        raise TypeError("random_state must be None, an int seed or a dpcore.mechanisms.noise.ChaChaRng; got "
                        f"{type(random_state).__name__}")
    seeds = [int(np.random.SeedSequence(entropy, spawn_key=(SIMULATE_DOMAIN, i)).generate_state(1, np.uint64)[0])
             for i in range(k)]
    if len(set(seeds)) != k:  # probability ~ k²/2**65; never reuse a stream
        raise RuntimeError("two partitions derived the same seed; use another random_state")
    return seeds


def _width(protocol) -> int:
    if isinstance(protocol, GaussianChannel):
        return protocol.dim
    if isinstance(protocol, MeanEstimationProtocol):
        return protocol.p
    if isinstance(protocol, SparseRegressionProtocol):
        return protocol.m + 1
    if isinstance(protocol, KernelRidgeProtocol):
        return protocol.n_features + 1
    if isinstance(protocol, LogisticProtocol):
        return protocol.dim * (1 + protocol.n_x_copies) + protocol.n_y_copies
    raise TypeError("protocol must be a GaussianChannel or one of the dpcore.ldp protocols, "
                    f"got {type(protocol).__name__}")


def _simulate_block(Xb, *rest, protocol, seeds, clip, block_id=None):
    """One partition: its clients' reports, packed as one (rows, width) block."""
    yb = rest[0][:, 0] if rest else None
    out = _simulate(Xb, yb, protocol, noise.ChaChaRng(seeds[block_id[0]]), clip, NoProgress(), check_n=False)
    if isinstance(out, tuple):
        return np.column_stack([out[0], out[1]])
    if isinstance(out, LogisticReports):
        return np.column_stack([out.z0, out.zy, out.zx.reshape(out.zx.shape[0], -1)])
    return out


def _check_chunks(chunks, n: int):
    if isinstance(chunks, numbers.Integral) and not isinstance(chunks, bool):
        if int(chunks) < 1:
            raise ValueError(f"chunks must be a positive int or a sequence of positive ints summing to {n}, "
                             f"got {chunks!r}")
        return int(chunks)
    try:
        sizes = tuple(int(c) for c in chunks)
    except TypeError:
        raise TypeError(f"chunks must be None, an int or a sequence of ints, got {type(chunks).__name__}") from None
    if any(c < 1 for c in sizes) or sum(sizes) != n:
        raise ValueError(f"chunks must be a positive int or a sequence of positive ints summing to {n}, "
                         f"got {chunks!r}")
    return sizes


def _simulate_partitioned(X, y, protocol, random_state, *, clip: bool, chunks):
    from dpcore._internal.dask import as_dask_array, require_dask

    da = require_dask()
    width = _width(protocol)
    if is_dask_collection(X):
        X = as_dask_array(X, "X", ndim=2)
    else:
        arr = np.asarray(check_array(X, "X"), dtype=np.float64)
        X = da.from_array(arr, chunks=(arr.shape[0], -1))
    if chunks is not None:
        X = X.rechunk({0: _check_chunks(chunks, X.shape[0])})
    if X.shape[1] != protocol.dim:
        raise ValueError(f"X must have {protocol.dim} columns (the protocol's dimension), got {X.shape[1]}")
    if not isinstance(protocol, GaussianChannel) and X.shape[0] != protocol.n_users:
        raise ValueError(f"X has {X.shape[0]} rows but the protocol declares n_users={protocol.n_users}")
    args = [X]
    if isinstance(protocol, (GaussianChannel, MeanEstimationProtocol)):
        _check_no_y(y, type(protocol).__name__)
    else:
        if y is None:
            raise ValueError(f"y is required for a {type(protocol).__name__}")
        if is_dask_collection(y):
            yd = as_dask_array(y, "y", ndim=(1, 2))
            yd = yd.reshape(-1) if yd.ndim == 2 else yd
        else:
            yd = da.from_array(np.asarray(y).reshape(-1) if np.asarray(y).dtype.kind in "biuf" else
                               _check_y(y, X.shape[0], 1.0, clip), chunks=-1)
        if yd.shape[0] != X.shape[0]:
            raise ValueError(f"y must have length {X.shape[0]} (one response per row of X), got {yd.shape[0]}")
        args.append(yd.astype(np.float64).rechunk((X.chunks[0],))[:, None])
    seeds = partition_seeds(random_state, len(X.chunks[0]))
    out = da.map_blocks(_simulate_block, *args, protocol=protocol, seeds=seeds, clip=clip, dtype=np.float64,
                        chunks=(X.chunks[0], (width,)), meta=np.empty((0, width)))
    if isinstance(protocol, (GaussianChannel, MeanEstimationProtocol)):
        return out
    if isinstance(protocol, LogisticProtocol):
        d, ny, nx = protocol.dim, protocol.n_y_copies, protocol.n_x_copies
        return LogisticReports(out[:, :d], out[:, d:d + ny], out[:, d + ny:].reshape(out.shape[0], nx, d))
    return out[:, :-1], out[:, -1]


def _simulate(X, y, protocol, rng, clip, bar, check_n: bool = True):
    if isinstance(protocol, GaussianChannel):
        _check_no_y(y, "GaussianChannel")
        X = _check_X(X, protocol.dim, clip, protocol.data_norm)
        out = release_rows(X, protocol, rng)
        bar.update(1)
        return out
    if isinstance(protocol, MeanEstimationProtocol):
        _check_no_y(y, "MeanEstimationProtocol")
        X = _check_X(X, protocol.dim, clip)
        if check_n and X.shape[0] != protocol.n_users:
            raise ValueError(f"X has {X.shape[0]} rows but the protocol declares n_users={protocol.n_users}")
        V = clip_rows(X @ protocol._G.T, protocol.projection_radius)
        out = release_rows(V, protocol.channel, rng)
        bar.update(1)
        return out
    if isinstance(protocol, (SparseRegressionProtocol, KernelRidgeProtocol)):
        if isinstance(protocol, SparseRegressionProtocol):
            X = _check_X(X, protocol.dim, clip)
            V = clip_rows(X @ protocol._A.T, protocol.projection_radius)
        else:
            V = protocol.features(X)
        if check_n and V.shape[0] != protocol.n_users:
            raise ValueError(f"X has {V.shape[0]} rows but the protocol declares n_users={protocol.n_users}")
        yv = _check_y(y, V.shape[0], protocol.label_bound, clip)
        Z = release_rows(V, protocol.x_channel, rng)
        bar.update(1)
        v = release_rows(yv[:, None], protocol.y_channel, rng)[:, 0]
        bar.update(1)
        return Z, v
    if isinstance(protocol, LogisticProtocol):
        X = _check_X(X, protocol.dim, clip)
        yv = _check_y(y, X.shape[0], 1.0, clip)
        return simulate_logistic_reports(X, yv, protocol, rng, bar=bar)
    raise TypeError("protocol must be a GaussianChannel or one of the dpcore.ldp protocols, "
                    f"got {type(protocol).__name__}")

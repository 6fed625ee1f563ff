r"""Exact multinomial sampling from a probability vector.

``m`` i.i.d. draws from a probability vector ``p`` of length ``P`` (``P`` and ``m`` up to ~10⁷ and
beyond), returned as counts (:func:`multinomial_counts`) or as the draws themselves
(:func:`multinomial_draws`). Used for instance by sampling-based private ERM over the simplex
(Jain & Thakurta 2014, §5), which releases the empirical distribution of ``m`` draws from the
private iterate.

What is sampled, exactly
------------------------
Every entry is quantised to ``q_j = floor(p_j · 2**100)``, computed exactly from the bits of the
double (no floating-point rounding), and index ``j`` is drawn with probability **exactly**
``q_j / T``, ``T = sum_j q_j``: each draw is an exactly uniform integer ``u`` in ``[0, T)``
(Lemire's exact bounded integers on 128-bit ChaCha20 output) and selects the ``j`` with
``q_0 + ... + q_{j-1} <= u < q_0 + ... + q_j``. The ``m`` uniforms are sorted (expected ``O(m)``)
and merged once against the running prefix sums, in parallel over blocks of ``p``; the result is
bit-identical for any number of threads. Entries with ``p_j = 0`` are never drawn.

Error bound
-----------
With ``S = sum(p)`` (exact) and ``D = P · 2**-100 / S``, for every ``p_j > 0``

.. math::

    1 - 2^{-100}/p_j \;<\; \frac{q_j/T}{p_j/S} \;<\; 1 + \frac{D}{1 - D},

because ``q_j = p_j 2^100 (1 − δ_j)`` with ``0 ≤ δ_j < 2^-100/p_j`` and ``T = S 2^100 (1 − Δ)``
with ``0 ≤ Δ < D``, so the ratio is ``(1 − δ_j)/(1 − Δ)``. :func:`probability_error_bound` returns
the uniform bound ``1.01 · (2^-100/p_min + D + 2D²)`` (``p_min`` the smallest positive entry; valid
for ``D ≤ 1/2``, where ``D/(1 − D) ≤ D + 2D²``; the factor 1.01 covers the floating-point
evaluation), or ``inf`` when some ``0 < p_j < 2^-100`` (such entries may get probability 0). For
``sum(p) ≈ 1``, ``min p ≥ 1e-20`` and ``P ≤ 1e9`` the bound is below ``1e-9``.

Cost
----
One validating pass over ``p``, ``m`` exact uniforms sorted in expected ``O(m)``, and a second
pass over the blocks of ``p`` that received draws; about ``48·m`` bytes of working memory (an
``m`` whose memory cannot be reserved is a ``ValueError`` naming ``m``). See
``benches/bench_multinomial.py`` for timings against numpy.

Input requirements
------------------
``p`` is a non-empty 1-D array of finite, non-negative numbers with
``|sum - 1| <= sum_tol`` (default ``1e-9``; the sum checked is the exact sum of the quantised
entries, within ``P · 2**-100`` of the true one). Offending entries are named by index in the
``ValueError``. The samplers normalise by ``T`` exactly, so a sum within the tolerance changes
nothing but the target ``p / S``.

Randomness
----------
``random_state`` as everywhere in dpcore (:func:`dpcore.mechanisms.noise.check_random_state`): ``None``
(OS-seeded ChaCha20, the default), an ``int`` seed (reproducible; research and tests only) or a
:class:`dpcore.mechanisms.noise.ChaChaRng`, whose state advances by 256 bits per call.
"""

from __future__ import annotations

import math
import numbers
from typing import Tuple

import numpy as np

from dpcore import _core
from dpcore.mechanisms.noise import RandomState, check_random_state
from dpcore._internal.types import ArrayLike

__all__ = [
    "multinomial_counts",
    "multinomial_draws",
    "probability_error_bound",
    "quantized_weights",
    "QUANT_BITS",
    "DEFAULT_SUM_TOL",
]

#: Entries are quantised to multiples of ``2**-QUANT_BITS``.
QUANT_BITS = 100
#: Default tolerance on ``|sum(p) - 1|``.
DEFAULT_SUM_TOL = 1e-9

_TWO_POW_M100 = 2.0**-QUANT_BITS


def _check_p(p) -> np.ndarray:
    """``p`` as a C-contiguous, native float64, non-empty 1-D array (no copy when it already is)."""
    arr = np.asarray(p)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"p must be a numeric array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"p must be a 1-D array, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("p must be a non-empty probability vector, got length 0")
    return np.ascontiguousarray(arr, dtype=np.float64)


def _check_m(m) -> int:
    if isinstance(m, (bool, np.bool_)) or not isinstance(m, numbers.Integral):
        raise TypeError(f"m must be an integer, got {type(m).__name__}")
    m = int(m)
    if m < 0:
        raise ValueError(f"m must be an integer >= 0, got {m}")
    if m >= 2**63:
        raise ValueError(f"m must be below 2**63, got {m}")
    return m


def _check_sum_tol(sum_tol) -> float:
    if isinstance(sum_tol, (bool, np.bool_)) or not isinstance(sum_tol, numbers.Real):
        raise TypeError(f"sum_tol must be a real number, got {type(sum_tol).__name__}")
    value = float(sum_tol)
    if not (math.isfinite(value) and 0.0 <= value < 1.0):
        raise ValueError(f"sum_tol must be finite and lie in [0, 1), got {value!r}")
    return value


def multinomial_counts(
    p: ArrayLike, m: int, *, random_state: RandomState = None, sum_tol: float = DEFAULT_SUM_TOL
) -> Tuple[np.ndarray, np.ndarray]:
    """Draw ``m`` i.i.d. indices from ``p`` and return the distinct indices with their counts.

    Index ``j`` is drawn with probability exactly ``q_j / T``, ``q_j = floor(p_j * 2**100)``
    (module docstring; :func:`probability_error_bound` bounds the relative deviation from
    ``p_j / sum(p)``).

    Parameters
    ----------
    p : array_like of shape (P,)
        Probabilities: finite, ``>= 0``, summing to 1 within ``sum_tol``. Read without a copy when
        it is a C-contiguous float64 array.
    m : int
        Number of draws, ``>= 0``.
    random_state : None, int or ChaChaRng, optional
        ``None`` (default): OS-seeded ChaCha20. An ``int`` gives reproducible output (research and
        tests only). A ``ChaChaRng`` is used as is (its state advances).
    sum_tol : float, optional
        Accepted ``|sum(p) - 1|``, in ``[0, 1)``. Default ``1e-9``.

    Returns
    -------
    indices : ndarray of int64
        The distinct drawn indices, strictly increasing.
    counts : ndarray of int64
        ``counts[i] >= 1`` draws of ``indices[i]``; ``counts.sum() == m``.

    Raises
    ------
    ValueError
        Naming ``p`` (with the first offending index for NaN, infinite or negative entries, or
        the sum outside the tolerance; not 1-D; empty), ``m`` (negative, or too large for the
        memory) or ``sum_tol``.
    TypeError
        For a non-numeric ``p``, a non-integer (or bool) ``m``, or an unsupported
        ``random_state``.

    Examples
    --------
    >>> idx, cnt = multinomial_counts([0.25, 0.0, 0.75], 1000, random_state=0)
    >>> int(cnt.sum()), 1 in idx
    (1000, False)
    """
    arr = _check_p(p)
    m = _check_m(m)
    tol = _check_sum_tol(sum_tol)
    rng = check_random_state(random_state)
    return _core.multinomial_counts(arr, m, rng, tol)


def multinomial_draws(
    p: ArrayLike,
    m: int,
    *,
    shuffle: bool = False,
    random_state: RandomState = None,
    sum_tol: float = DEFAULT_SUM_TOL,
) -> np.ndarray:
    """Draw ``m`` i.i.d. indices from ``p`` and return them as an array of length ``m``.

    Same law and parameters as :func:`multinomial_counts`; for the same generator state the
    multiset of draws is identical (``np.repeat(indices, counts)``).

    Parameters
    ----------
    p : array_like of shape (P,)
        Probabilities: finite, ``>= 0``, summing to 1 within ``sum_tol``.
    m : int
        Number of draws, ``>= 0``.
    shuffle : bool, optional
        ``False`` (default): the draws in ascending order (the sorted multiset). ``True``: a
        uniformly random permutation of it (exact Fisher–Yates), which has the law of the
        sequence of ``m`` i.i.d. draws.
    random_state : None, int or ChaChaRng, optional
        As in :func:`multinomial_counts`.
    sum_tol : float, optional
        Accepted ``|sum(p) - 1|``, in ``[0, 1)``. Default ``1e-9``.

    Returns
    -------
    ndarray of int64, shape (m,)

    Raises
    ------
    ValueError, TypeError
        As in :func:`multinomial_counts`; ``TypeError`` also for a non-bool ``shuffle``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore.mechanisms import multinomial_draws
    >>> idx = multinomial_draws(np.array([0.5, 0.25, 0.25]), 8, random_state=0)
    >>> idx.shape, bool(set(idx.tolist()) <= {0, 1, 2})
    ((8,), True)
    """
    arr = _check_p(p)
    m = _check_m(m)
    if not isinstance(shuffle, (bool, np.bool_)):
        raise TypeError(f"shuffle must be a bool, got {type(shuffle).__name__}")
    tol = _check_sum_tol(sum_tol)
    rng = check_random_state(random_state)
    return _core.multinomial_draws(arr, m, rng, bool(shuffle), tol)


def probability_error_bound(p: ArrayLike) -> float:
    """Uniform bound on the relative error of the sampled probabilities.

    Returns ``eps`` with ``|(q_j/T) / (p_j/S) - 1| <= eps`` for every ``p_j > 0`` (``S = sum(p)``;
    zero entries are sampled with probability exactly 0)::

        D   = P * 2**-100 / S
        eps = 1.01 * (2**-100 / min(p[p > 0]) + D + 2 * D**2)

    (module docstring for the proof). ``inf`` when some ``0 < p_j < 2**-100`` or ``D >= 1/2``.
    The bound is relative to ``p / S`` and does not require ``S`` to be 1.

    Parameters
    ----------
    p : array_like of shape (P,)
        Finite, non-negative entries with a positive sum.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Naming ``p``: not 1-D, empty, an entry NaN/infinite/negative (first index given), or
        all entries zero.
    """
    arr = _check_p(p)
    bad = ~(np.isfinite(arr) & (arr >= 0.0))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"p: p[{i}] = {float(arr[i])!r}: every probability must be finite and >= 0")
    positive = arr[arr > 0.0]
    if positive.size == 0:
        raise ValueError("p: must have a positive entry (all entries are 0)")
    p_min = float(positive.min())
    if p_min < _TWO_POW_M100:
        return math.inf
    d = arr.size * _TWO_POW_M100 / float(np.sum(arr))
    if not d < 0.5:
        return math.inf
    return 1.01 * (_TWO_POW_M100 / p_min + d + 2.0 * d * d)


def quantized_weights(p: ArrayLike, *, sum_tol: float = DEFAULT_SUM_TOL) -> Tuple[list, int]:
    """The exact integer weights of the sampler: ``(q, T)``.

    ``q[j] = floor(p[j] * 2**100)`` (Python ints, exact) and ``T = sum(q)``; index ``j`` is drawn
    with probability exactly ``q[j] / T``. Meant for audits and tests (it builds a Python list,
    so keep ``p`` small).

    Parameters
    ----------
    p : array_like of shape (P,)
        As in :func:`multinomial_counts` (same validation).
    sum_tol : float, optional
        As in :func:`multinomial_counts`.

    Returns
    -------
    q : list of int
    T : int
    """
    arr = _check_p(p)
    tol = _check_sum_tol(sum_tol)
    return _core.multinomial_quantized(arr, tol)

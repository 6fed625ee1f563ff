r"""Private class weights: balanced weights from class counts released with exact discrete Laplace noise.

scikit-learn's ``class_weight="balanced"`` sets ``w_k = n / (K n_k)`` from the training labels. Those
weights depend on every record; a private learner needs *public* weights (its sensitivity is
``2 (max_k w_k) L R_φ / (λ n)``). :func:`private_class_weights` releases them with differential privacy.

Mechanism and proof
-------------------
The ``K`` class counts ``c = (n_1, ..., n_K)`` of ``y`` over the declared (public) ``classes`` are
released as ``c̃ = c + η`` with ``η_k`` i.i.d. exact discrete Laplace, ``P[η = z] ∝ exp(-|z| / t)``,
``t = 2 / ε'`` (``ε' ≤ ε``: ``ε`` rounded down to 30 significant bits, so that ``t`` is a small
rational the exact sampler takes; :func:`dpcore.mechanisms.discrete_laplace`). Under replace-one
adjacency (``n`` public) a neighbour moves one record from class ``k`` to class ``k'``: ``c`` changes
in at most two cells by 1, ``||c − c'||₁ ≤ 2``, so for every output ``z``

.. math::  \frac{P[c̃ = z]}{P[c̃' = z]} = \exp\Big(\frac{||z − c'||₁ − ||z − c||₁}{t}\Big) ≤ \exp(2/t) = e^{ε'} ≤ e^{ε},

i.e. the release is ``ε``-DP (pure; no floating point is involved: integers plus integer noise). The
weights ``w_k = clip(n / (K · max(c̃_k, 1)), 1/M, M)`` (``M = max_class_weight``) are post-processing of
``c̃`` and the public ``n``, ``K``, ``M``: a **public** dict, which any learner of dpcore may use as
``class_weight=``; every weight is at most ``M``, so the learner's Lipschitz factor is at most ``M``.
Audited in ``tests/mechanisms/test_class_weights.py`` (and a broken copy with half the noise is caught).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Dict, List, Sequence, Union

import numpy as np

from dpcore._internal.class_weight import DEFAULT_MAX_CLASS_WEIGHT, check_max_class_weight
from dpcore._internal.types import ArrayLike, NDArray
from dpcore._internal.validation import check_epsilon
from dpcore.accounting.events import EpsilonDeltaDpEvent
from dpcore.mechanisms.noise import (
    _EPSILON_BITS, _MAX_PARAM, RandomState, _floor_log2, check_random_state, discrete_laplace,
)

__all__ = ["PublicClassWeights", "private_class_weights", "class_count_noise_scale", "balanced_from_counts"]


class PublicClassWeights(Dict[Any, float]):
    """A ``{class: weight}`` dict released by :func:`private_class_weights` (public: pass it as ``class_weight``).

    Besides the dict entries it carries the public record of its release: ``dp_event_`` (the event charged),
    ``epsilon_`` (the ε spent), ``noisy_counts_`` (the released class counts) and ``max_class_weight``.

    Examples
    --------
    >>> from dpcore.mechanisms import private_class_weights
    >>> w = private_class_weights([1] * 90 + [-1] * 910, classes=(-1, 1), epsilon=1.0, random_state=0)
    >>> sorted(w), w.epsilon_
    ([-1, 1], 1.0)
    """

    dp_event_: EpsilonDeltaDpEvent
    epsilon_: float
    noisy_counts_: Dict[Any, int]
    max_class_weight: float


def class_count_noise_scale(epsilon: float) -> Fraction:
    """The discrete Laplace scale ``t = 2/ε'`` (``ε' ≤ ε``, 30 significant bits) of the class counts.

    Examples
    --------
    >>> from dpcore.mechanisms.class_weights import class_count_noise_scale
    >>> class_count_noise_scale(1.0)
    Fraction(2, 1)
    """
    epsilon = check_epsilon(epsilon)
    s = _EPSILON_BITS - 1 - _floor_log2(epsilon)
    eps_used = Fraction(math.floor(Fraction(epsilon) * Fraction(2) ** s)) / Fraction(2) ** s
    if eps_used <= 0:
        raise ValueError(f"epsilon={epsilon!r} is too small for the exact discrete Laplace sampler")
    t = Fraction(2) / eps_used
    if t.numerator > _MAX_PARAM or t.denominator > _MAX_PARAM:
        raise ValueError(f"epsilon={epsilon!r}: the noise scale 2/epsilon is beyond the exact sampler's range")
    return t


def balanced_from_counts(counts: Sequence[float], n: int, max_class_weight: float) -> List[float]:
    """``clip(n / (K max(c_k, 1)), 1/M, M)`` for each (noisy) count (post-processing).

    Examples
    --------
    >>> from dpcore.mechanisms.class_weights import balanced_from_counts
    >>> balanced_from_counts([900, 100], 1000, 10.0)
    [0.5555555555555556, 5.0]
    """
    K = len(counts)
    M = float(max_class_weight)
    return [min(M, max(1.0 / M, n / (K * max(float(c), 1.0)))) for c in counts]


def private_class_weights(y: ArrayLike, classes: Union[Sequence[Any], NDArray[Any]], epsilon: float, *,
                          max_class_weight: float = DEFAULT_MAX_CLASS_WEIGHT, accountant: Any = None,
                          random_state: RandomState = None) -> PublicClassWeights:
    """ε-DP balanced class weights ``n / (K ñ_k)``, clipped to ``[1/M, M]``, as a public dict.

    See :mod:`dpcore.mechanisms.class_weights` for the mechanism and its proof (class counts + exact
    discrete Laplace noise of scale ``2/ε``; a replace-one neighbour changes two counts by 1).

    Parameters
    ----------
    y : array-like of shape (n,)
        Training labels, each one of ``classes`` (``n`` is public).
    classes : sequence of labels
        The declared (public) label set, at least two distinct labels.
    epsilon : float
        Privacy budget ``ε > 0`` (pure ε-DP).
    max_class_weight : float, default 10
        Public cap ``M >= 1``: every returned weight lies in ``[1/M, M]`` (a learner using them is at most
        ``M·L``-Lipschitz).
    accountant : BudgetAccountant, optional
        Charged ``(ε, 0)`` with ``dp_event_`` after every input is validated, before the noise is drawn.
    random_state : None, int or ChaChaRng
        See :func:`dpcore.mechanisms.check_random_state` (secure by default).

    Returns
    -------
    PublicClassWeights
        ``{class: weight}`` for every declared class, with ``dp_event_``, ``epsilon_``, ``noisy_counts_``.

    Raises
    ------
    ValueError
        Empty ``y``, a label outside ``classes``, fewer than two or repeated classes, ``epsilon`` or
        ``max_class_weight`` invalid (all before any charge).

    Examples
    --------
    >>> import numpy as np
    >>> import dpcore
    >>> y = np.array([1] * 100 + [-1] * 900)
    >>> acc = dpcore.BudgetAccountant(epsilon=1.0)
    >>> w = dpcore.private_class_weights(y, (-1, 1), 0.5, accountant=acc, random_state=0)
    >>> round(w[1], 1), round(w[-1], 2), acc.remaining()[0]
    (5.1, 0.56, 0.5)
    """
    epsilon = check_epsilon(epsilon)
    M = check_max_class_weight(max_class_weight)
    t = class_count_noise_scale(epsilon)
    if isinstance(classes, (str, bytes)) or not hasattr(classes, "__len__"):
        raise TypeError(f"classes must be a sequence of at least two labels, got {type(classes).__name__}")
    labels = list(np.asarray(classes).tolist()) if isinstance(classes, np.ndarray) else list(classes)
    if len(labels) < 2 or len(set(labels)) != len(labels):
        raise ValueError(f"classes must hold at least two distinct labels, got {labels!r}")
    arr = np.asarray(y)
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise ValueError(f"y must be a non-empty 1-D array of labels, got shape {arr.shape}")
    n = arr.shape[0]
    counts = [int(np.count_nonzero(arr == c)) for c in labels]
    if sum(counts) != n:
        raise ValueError(f"y: {n - sum(counts)} label(s) are not among the declared classes {labels!r}")
    rng = check_random_state(random_state)
    event = EpsilonDeltaDpEvent(epsilon, 0.0)
    if accountant is not None:
        accountant.spend(epsilon, 0.0, event=event, label=f"private_class_weights({len(labels)} classes)")
    noise = discrete_laplace(t.numerator, t.denominator, size=len(labels), random_state=rng)
    noisy = [c + int(z) for c, z in zip(counts, noise)]
    out = PublicClassWeights(zip(labels, balanced_from_counts(noisy, n, M)))
    out.dp_event_ = event
    out.epsilon_ = epsilon
    out.noisy_counts_ = dict(zip(labels, noisy))
    out.max_class_weight = M
    return out

"""Class weights as declared (public) parameters, and the Lipschitz constant they imply.

A classifier minimising ``(1/n) Σ_i w_{y_i} ℓ(y_i f(x_i)) + (λ/2)||f||²`` with an ``L``-Lipschitz loss
has a ``(max_k w_k)·L``-Lipschitz per-record loss, so every sensitivity bound ``2 L R / (λ n)`` becomes
``2 (max_k w_k) L R / (λ n)`` — *provided the weights do not depend on the data*. Two kinds of weights:

* **public**: ``None`` (all 1), or a dict the user declares (or that a DP mechanism released, e.g.
  :func:`dpcore.mechanisms.private_class_weights`), each value finite, ``> 0`` and at most a declared
  ``max_class_weight`` (:data:`DEFAULT_MAX_CLASS_WEIGHT`); a weight above the cap is refused, never clipped;
* **data-derived**: ``"balanced"`` (scikit-learn's ``n / (K n_k)`` read off the training labels). Fine
  for a non-private model, but its weights — hence its objective and its sensitivity — depend on every
  record, so every private mechanism refuses such a model before anything is charged.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Dict, Optional, Tuple

import numpy as np

from dpcore._internal.labels import is_rule_pair

__all__ = ["DEFAULT_MAX_CLASS_WEIGHT", "check_max_class_weight", "resolve_class_weight", "check_public_weights"]

#: Default public cap on a declared class weight (the sensitivity grows linearly with the largest weight).
DEFAULT_MAX_CLASS_WEIGHT = 10.0


def check_max_class_weight(value: Any, name: str = "max_class_weight") -> float:
    """A finite real ``>= 1`` (the cap ``M`` on every declared class weight)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number >= 1, got {type(value).__name__}")
    v = float(value)
    if not (math.isfinite(v) and v >= 1.0):
        raise ValueError(f"{name} must be finite and >= 1, got {value!r}")
    return v


def _as_key(label: Any, classes_: np.ndarray) -> Optional[int]:
    for k, c in enumerate(classes_.tolist()):
        try:
            if label == c:
                return k
        except Exception:  # incomparable types: not this class
            continue
    # the default label rule (classes=None, dpcore._internal.labels): keys in the user's binary encoding
    # (0/-1/False negative, 1/True positive) name the classes of a rule pair such as [-1, 1]
    if is_rule_pair(classes_) and isinstance(label, (numbers.Real, np.number, np.bool_)) and not (
            isinstance(label, float) and math.isnan(label)):
        if label == 1:
            return 1
        if label == 0 or label == -1:
            return 0
    return None


def resolve_class_weight(class_weight: Any, classes_: np.ndarray, y_pm: Optional[np.ndarray], *,
                         max_class_weight: Any = DEFAULT_MAX_CLASS_WEIGHT,
                         name: str = "class_weight") -> Tuple[Dict[Any, float], bool, Optional[np.ndarray], float]:
    """``(class_weight_, public, sample_weight or None, max weight)`` for the declared ``classes_``.

    ``y_pm`` are the ±1-encoded labels (``classes_[1]`` is +1); ``None`` validates the parameters only
    (``"balanced"`` then has no weights yet: ``({}, False, None, nan)``). ``sample_weight`` is ``None`` when
    every weight is 1 (the unweighted problem, bit-for-bit).
    """
    M = check_max_class_weight(max_class_weight)
    labels = classes_.tolist()
    if class_weight is None:
        return {c: 1.0 for c in labels}, True, None, 1.0
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f"{name} must be None, 'balanced' or a dict {{class: weight}}, got {class_weight!r}")
        if y_pm is None:
            return {}, False, None, math.nan
        n = y_pm.shape[0]
        counts = [int(np.count_nonzero(y_pm < 0)), int(np.count_nonzero(y_pm > 0))]
        # scikit-learn's n / (K n_k) over the K = 2 declared classes; an absent class gets 1 (it has no term)
        w = [n / (2.0 * c) if c > 0 else 1.0 for c in counts]
        cw = {labels[0]: w[0], labels[1]: w[1]}
        s = np.where(y_pm > 0, w[1], w[0]).astype(np.float64)
        return cw, False, s, max(w)
    if not isinstance(class_weight, dict):
        raise TypeError(f"{name} must be None, 'balanced' or a dict {{class: weight}}, got "
                        f"{type(class_weight).__name__}")
    w = [1.0, 1.0]
    for key, value in class_weight.items():
        k = _as_key(key, classes_)
        if k is None:
            raise ValueError(f"{name}: key {key!r} is not one of the declared classes {labels!r}")
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name}[{key!r}] must be a real number, got {type(value).__name__}")
        v = float(value)
        if not (math.isfinite(v) and v > 0.0):
            raise ValueError(f"{name}[{key!r}] must be finite and > 0, got {value!r}")
        if v > M:
            raise ValueError(f"{name}[{key!r}] = {value!r} exceeds max_class_weight = {M:g}: the sensitivity of a "
                             "private release grows with the largest weight, so weights are capped by a declared "
                             "bound (raise max_class_weight explicitly if you mean it)")
        w[k] = v
    cw = {labels[0]: w[0], labels[1]: w[1]}
    if w[0] == 1.0 and w[1] == 1.0:
        return cw, True, None, 1.0
    s = None if y_pm is None else np.where(y_pm > 0, w[1], w[0]).astype(np.float64)
    return cw, True, s, max(w)


def check_public_weights(model: Any, who: str) -> None:
    """Refuse a model whose class weights were read off the data (``class_weight_public_`` false).

    Called by every private mechanism before anything is charged: such weights (``"balanced"``) depend on every
    record, so neither the objective nor the sensitivity bound ``2 (max_k w_k) L R_phi / (lam n)`` is public.
    """
    if getattr(model, "class_weight_public_", True) is False:
        raise ValueError(
            f"{who}: the model was fitted with class_weight='balanced', weights computed from the training labels; "
            "they depend on every record, so neither the model's objective nor its sensitivity is covered by a "
            "privacy proof. Refusing before anything is charged. Declare the weights (a dict, capped by "
            "max_class_weight) or release them privately with dpcore.private_class_weights(y, classes, epsilon) "
            "and pass the returned dict as class_weight")


def multiclass_class_weights(class_weight: Any, classes_: np.ndarray, max_class_weight: Any) -> np.ndarray:
    """The public weight ``w_k`` of each of the ``K`` declared classes (sorted ``classes_``) from a ``{class: weight}``
    dict or ``None`` (all 1); classes not in the dict get 1.

    Every weight must be finite, ``> 0`` and ``<= max_class_weight``; ``"balanced"`` (read off the data) is refused.
    A K-class loss weighted this way is ``L·max_k w_k``-Lipschitz (``L`` its unweighted constant: ``√2`` for the
    multinomial loss). Errors name ``class_weight`` / ``max_class_weight``.
    """
    import math
    import numbers

    M = check_max_class_weight(max_class_weight)
    labels = np.asarray(classes_).tolist()
    w = np.ones(len(labels))
    cw = class_weight
    if cw is None:
        return w
    if isinstance(cw, str):
        raise ValueError("class_weight must be None or a dict {class: weight}; 'balanced' reads the weights off "
                         "the data and is not offered by the multi-class models (use "
                         "dpcore.private_class_weights to release them privately)")
    if not isinstance(cw, dict):
        raise TypeError(f"class_weight must be None or a dict {{class: weight}}, got {type(cw).__name__}")
    for key, value in cw.items():
        hits = [i for i, c in enumerate(labels) if c == key]
        if not hits:
            raise ValueError(f"class_weight: key {key!r} is not one of the declared classes {labels!r}")
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"class_weight[{key!r}] must be a real number, got {type(value).__name__}")
        v = float(value)
        if not (math.isfinite(v) and v > 0.0):
            raise ValueError(f"class_weight[{key!r}] must be finite and > 0, got {value!r}")
        if v > M:
            raise ValueError(f"class_weight[{key!r}] = {value!r} exceeds max_class_weight = {M:g}")
        w[hits[0]] = v
    return w

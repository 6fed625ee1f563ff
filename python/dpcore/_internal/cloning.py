"""Per-clone seeds for an int ``random_state`` (``__sklearn_clone__``, issue 25 item 1).

scikit-learn's ``clone`` copies every parameter as it is, so a meta-estimator that clones one base estimator many
times (``OneVsRestClassifier``, ``MultiOutputClassifier``, ``cross_val_score``, ...) would give every clone the same
int seed and every clone would draw the same noise stream. :class:`PerCloneSeedMixin` overrides scikit-learn's clone
hook (``__sklearn_clone__``, scikit-learn >= 1.3): the clone is the default one (``_clone_parametrized``), except that
an int ``random_state`` is replaced by :func:`derive_clone_seed` ``(seed, k)``, where ``k`` counts the clones made
*of this instance* (0, 1, 2, ...). Clone ``k`` of an estimator therefore gets a seed that differs from the parent's
and from its siblings' (up to a 2⁻⁶⁴ collision chance per pair) and is reproducible: re-running a script makes the same
clones in the same order and gets the same seeds.

- ``None`` (the secure, OS-seeded default) is left as is: each clone seeds itself from the OS when it fits.
- A ``ChaChaRng`` is left to scikit-learn's clone, which deep-copies it; the generator refuses to be copied, so the
  clone raises ``TypeError`` as before.
- An int outside ``[0, 2**64)`` (or a bool) is copied unchanged, so that ``fit`` still refuses it by name.

Nothing here reads data: the derived seed is a function of the public seed and of how many clones the program made.
The counter lives outside the instance (a weak-keyed registry), so cloning leaves the estimator itself unchanged
(``get_params``, ``__dict__`` and its pickle are the same before and after). Consequence: refitting the same
meta-estimator object clones its base estimator again and so draws fresh seeds (a new, reproducible, noise stream);
a freshly constructed meta-estimator repeats the seeds of the first fit.
"""

from __future__ import annotations

import hashlib
import numbers
import threading
import weakref
from typing import Any, Optional, cast

from sklearn.base import _clone_parametrized

from dpcore._internal.types import Self

__all__ = ["PerCloneSeedMixin", "derive_clone_seed"]

_SEED_LIMIT = 2**64  # the range dpcore.mechanisms.check_random_state accepts for an int seed
_DOMAIN = b"dpcore.clone-seed.v1"
_lock = threading.Lock()
_counters: weakref.WeakKeyDictionary[object, int] = weakref.WeakKeyDictionary()
_id_counters: dict[int, tuple[weakref.ref[object], int]] = {}  # fallback for unhashable instances: id -> (weakref, count)


def derive_clone_seed(seed: int, k: int) -> int:
    """The seed of clone ``k`` of an estimator seeded with the int ``seed``: the first 8 bytes (big-endian) of
    SHA-256 over a domain tag, ``seed`` and ``k`` (each 8 bytes), an int in ``[0, 2**64)``.

    >>> derive_clone_seed(7, 0) == derive_clone_seed(7, 0) != derive_clone_seed(7, 1)
    True
    """
    h = hashlib.sha256(_DOMAIN + int(seed).to_bytes(8, "big") + int(k).to_bytes(8, "big"))
    return int.from_bytes(h.digest()[:8], "big")


def _next_clone_index(obj: object) -> int:
    with _lock:
        try:
            k = _counters.get(obj, 0)
            _counters[obj] = k + 1
            return k
        except TypeError:  # unhashable (a subclass defining __eq__ without __hash__): count by id, while alive
            key = id(obj)
            entry = _id_counters.get(key)
            k = entry[1] if entry is not None and entry[0]() is obj else 0

            def _forget(_: object, key: int = key) -> None:
                _id_counters.pop(key, None)

            _id_counters[key] = (weakref.ref(obj, _forget), k + 1)
            return k


def _int_seed(value: object) -> Optional[int]:
    """``value`` as an int if it is an int seed ``check_random_state`` accepts (``[0, 2**64)``, not a bool)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and 0 <= int(value) < _SEED_LIMIT:
        return int(value)
    return None


class PerCloneSeedMixin:
    """Give each clone of an estimator seeded with an int ``random_state`` its own derived seed.

    Put it before ``BaseEstimator`` in the bases of every private estimator (one whose ``random_state`` drives
    privacy noise). ``RandomFourierFeatures`` does not use it: its weights are public, and an int is copied as
    scikit-learn's ``RBFSampler`` does. See the module docstring for the rule and its consequences.
    """

    def __sklearn_clone__(self) -> Self:
        new: Any = _clone_parametrized(self)
        seed = _int_seed(getattr(self, "random_state", None))
        if seed is not None:
            new.set_params(random_state=derive_clone_seed(seed, _next_clone_index(self)))
        return cast("Self", new)

"""Shared machinery of the LDP protocols: what one user sends, and its composed budget."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Tuple

import numpy as np

from dpcore._internal.validation import check_delta, check_epsilon
from dpcore.accounting.calibrate import compose_basic
from dpcore.ldp.vectors import GaussianChannel
from dpcore.exceptions import ProtocolBudgetError

__all__ = ["ReleaseSpec", "LDPBudget"]


@dataclass(frozen=True)
class ReleaseSpec:
    """One kind of private copy a user sends: ``copies`` independent releases through ``channel``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import ldp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.5, 0.5, size=(500, 3)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> proto = ldp.LogisticProtocol(dim=3, n_users=500, epsilon=8.0, delta=1e-6)
    >>> spec = proto.releases()[0]
    >>> spec.name, spec.copies, spec.channel.dim
    ('z0 (x)', 1, 3)
    """

    name: str
    source: str
    channel: GaussianChannel
    copies: int = 1


@dataclass(frozen=True)
class LDPBudget:
    """Composed per-user budget (basic composition, paper Lemma 2) of everything one user sends.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import ldp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.5, 0.5, size=(500, 3)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> proto = ldp.LogisticProtocol(dim=3, n_users=500, epsilon=8.0, delta=1e-6)
    >>> b = proto.budget()
    >>> [(name, copies) for name, copies, eps, delta in b.items]
    [('z0 (x)', 1), ('zy (y copies)', 1), ('z (x copies)', 1)]
    """

    epsilon: float
    delta: float
    composition: str
    n_releases: int
    items: Tuple[Tuple[str, int, float, float], ...]  # (name, copies, eps per copy, delta per copy)


class ProtocolMixin:
    """Adds :meth:`budget` / :meth:`check_budget` on top of a ``releases()`` method."""

    def releases(self) -> Tuple[ReleaseSpec, ...]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _check_common(self) -> None:
        """Validate (in place, on the frozen dataclass) the fields every protocol has:
        ``dim``, ``n_users``, ``epsilon`` and ``delta`` (δ in (0, 1): Gaussian channels)."""
        object.__setattr__(self, "dim", check_int(self.dim, "dim"))
        object.__setattr__(self, "n_users", check_int(self.n_users, "n_users"))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, grid=False))
        object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=False, grid=False))

    def budget(self) -> LDPBudget:
        """Compose, by basic composition, every private copy one user sends (exactly the client's report)."""
        eps, dels, items = [], [], []
        for r in self.releases():
            eps += [r.channel.epsilon] * r.copies
            dels += [r.channel.delta] * r.copies
            items.append((r.name, r.copies, r.channel.epsilon, r.channel.delta))
        e, d = compose_basic(eps, dels)
        return LDPBudget(epsilon=e, delta=d, composition="basic", n_releases=len(eps), items=tuple(items))

    def check_budget(self) -> LDPBudget:
        """Raise :class:`ProtocolBudgetError` if what one user sends exceeds the declared (epsilon, delta)."""
        eps_exact = sum((Fraction(r.channel.epsilon) * r.copies for r in self.releases()), Fraction(0))
        del_exact = sum((Fraction(r.channel.delta) * r.copies for r in self.releases()), Fraction(0))
        if eps_exact > Fraction(self.epsilon) or del_exact > Fraction(self.delta):
            raise ProtocolBudgetError(
                f"{type(self).__name__}: one user sends {sum(r.copies for r in self.releases())} private copies "
                f"composing to (epsilon={float(eps_exact):.6g}, delta={float(del_exact):.3g}), exceeding the declared "
                f"(epsilon={self.epsilon:g}, delta={self.delta:g})"
            )
        return self.budget()


def check_int(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_reports(reports, name: str, n_rows, n_cols: int) -> np.ndarray:
    """Validate a server-side report matrix of shape (n_rows, n_cols) (n_rows None: any)."""
    arr = np.asarray(reports)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if arr.ndim != 2 or arr.shape[1] != n_cols:
        raise ValueError(f"{name} must have shape (n_users, {n_cols}) for this protocol, got {arr.shape}")
    if n_rows is not None and arr.shape[0] != n_rows:
        raise ValueError(f"{name} has {arr.shape[0]} rows but the protocol declares n_users={n_rows}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def projection_matrix(seed: int, rows: int, cols: int) -> np.ndarray:
    """Public Gaussian projection ``N(0, 1/rows)^{rows×cols}`` from a public seed (shared by all parties).

    numpy's generator is fine here: the matrix is public and carries no privacy (only released noise
    must come from dpcore's exact samplers)."""
    return np.random.default_rng([0x1D9, int(seed)]).standard_normal((rows, cols)) / np.sqrt(rows)

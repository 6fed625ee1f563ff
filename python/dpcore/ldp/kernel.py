"""Kernel ridge regression under non-interactive LDP with random Fourier features (Zheng et al. 2017, Alg. 4).

Protocol. Public: a random Fourier feature map ``φ̂`` (:class:`dpcore.rff.RandomFourierFeatures`,
``φ̂(x) = D^{-1/2}[cos ρᵀx, sin ρᵀx]``, ``2D`` outputs, ``||φ̂(x)||_2 = 1``) drawn from ``rff_seed``
independently of any data; the per-part budget ``(ε/2, δ/2)``.

* Client (:func:`kernel_report`): ``z = φ̂(x) + N(0, σ_x² I_{2D})`` and ``v = y + N(0, σ_y²)``, each a
  Basic Private Vector release at ``(ε/2, δ/2)`` (``φ̂(x)`` lies on the unit sphere, so no bound on
  ``x`` is needed; it is clipped to the unit ball only against floating-point rounding).
* Server (:class:`LDPKernelRidge`): ``Q = Proj_PSD(ZᵀZ − n σ_x² I)``, then the ridge objective of the
  paper's eq. (7) divided by ``C``::

      ĝ = argmin_g (1/2n) gᵀQg − (1/n) vᵀZg + (α/2)||g||²,   α = 1/C,

  i.e. ``(Q/n + α I) ĝ = Zᵀv/n`` (scipy ``solve``, positive definite). The printed Algorithm 4 drops
  the ``½||g||²`` term of eq. (7) in its step 8; we keep it (it is what Corollary 2 analyses and it
  makes the problem well-posed when ``2D`` exceeds the effective rank of ``Q``).

Privacy [(ε, δ)-LDP]: as Algorithm 3 — two Basic Private Vector releases at ``(ε/2, δ/2)``, sensitivity
2 (unit sphere) and ``2·y_bound``; basic composition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from scipy import linalg

from .. import noise
from .._params import ParamsMixin
from .._validation import check_array, check_positive
from ._protocol import ProtocolMixin, ReleaseSpec, check_int
from ._solvers import debiased_gram
from .regression import _check_zv, check_label
from .vectors import GaussianChannel, _clip_rows, _release, gaussian_channel, split_budget

__all__ = ["KernelRidgeProtocol", "kernel_report", "LDPKernelRidge"]


@dataclass(frozen=True)
class KernelRidgeProtocol(ProtocolMixin):
    """Public parameters of Algorithm 4.

    Parameters
    ----------
    dim : int — input dimension ``d``.
    n_users : int — ``n`` (checked against the number of reports).
    epsilon, delta : per-user (ε, δ)-LDP.
    n_components : int — ``D`` (``2D`` features, the paper's ``d_p``).
    kernel : "rbf" | "laplacian"; gamma : kernel width.
    rff_seed : int — seed of the public feature map.
    y_bound : float — declared bound on ``|y|``.
    calibration : "analytic" | "classic".
    """

    dim: int
    n_users: int
    epsilon: float
    delta: float
    n_components: int = 100
    kernel: str = "rbf"
    gamma: float = 1.0
    rff_seed: int = 0
    y_bound: float = 1.0
    calibration: str = "analytic"
    x_channel: GaussianChannel = field(init=False, repr=False)
    y_channel: GaussianChannel = field(init=False, repr=False)
    feature_map: object = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        from ..rff import RandomFourierFeatures

        s = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731
        self._check_common()
        s("n_components", check_int(self.n_components, "n_components"))
        s("gamma", check_positive(self.gamma, "gamma"))
        s("y_bound", check_positive(self.y_bound, "y_bound"))
        check_int(self.rff_seed, "rff_seed", 0)
        fm = RandomFourierFeatures(self.n_components, kernel=self.kernel, gamma=self.gamma,
                                   random_state=self.rff_seed).fit(np.zeros((1, self.dim)))
        s("feature_map", fm)
        e2, d2 = split_budget(self.epsilon, Fraction(1, 2), 1), split_budget(self.delta, Fraction(1, 2), 1)
        s("x_channel", gaussian_channel(2 * self.n_components, e2, d2, radius=1.0, calibration=self.calibration))
        s("y_channel", gaussian_channel(1, e2, d2, radius=self.y_bound, calibration=self.calibration))
        self.check_budget()

    @property
    def n_features(self) -> int:
        return 2 * self.n_components

    def features(self, X) -> np.ndarray:
        """Public feature map ``φ̂`` on a batch (each row clipped to the unit ball against rounding)."""
        F = self.feature_map.transform(check_array(X, "X", n_features=self.dim))
        return _clip_rows(F, 1.0)

    def releases(self):
        return (ReleaseSpec("z (random features)", "phi(x)", self.x_channel, 1),
                ReleaseSpec("v (response)", "y", self.y_channel, 1))


def kernel_report(x, y, protocol: KernelRidgeProtocol, *, clip: bool = False, random_state=None):
    """Client side of Algorithm 4: what ONE user sends, ``(z, v)``; ``z`` has shape ``(2D,)``.

    ``x``: shape ``(d,)``, finite; ``|y| ≤ y_bound`` (``ValueError`` otherwise unless ``clip=True``).
    Guarantee: (ε, δ)-LDP — (ε/2, δ/2) for ``z`` (``||φ̂(x)|| ≤ 1``, sensitivity 2) plus (ε/2, δ/2) for
    ``v``, basic composition.
    """
    if not isinstance(protocol, KernelRidgeProtocol):
        raise TypeError(f"protocol must be a KernelRidgeProtocol, got {type(protocol).__name__}")
    xv = np.asarray(x)
    if xv.ndim != 1 or xv.shape[0] != protocol.dim:
        raise ValueError(f"x must be a 1-D vector of length {protocol.dim} (one user's record), got shape {xv.shape}")
    phi = protocol.features(xv[None, :])[0]
    yv = check_label(y, "y", protocol.y_bound, clip)
    rng = noise.check_random_state(random_state)
    z = _release(phi, protocol.x_channel, rng)
    v = _release(yv, protocol.y_channel, rng)
    return z, float(v[0])


class LDPKernelRidge(ParamsMixin):
    """Server side of Algorithm 4: ridge regression in the random-feature space from reports only.

    Parameters
    ----------
    protocol : KernelRidgeProtocol
    alpha : float — ridge parameter ``α = 1/C`` of eq. (7).

    Attributes: ``coef_`` (2D,), ``Q_``.
    """

    def __init__(self, protocol: KernelRidgeProtocol, alpha: float = 1e-3):
        self.protocol = protocol
        self.alpha = alpha

    def fit(self, Z_reports, v_reports):
        proto = self.protocol
        if not isinstance(proto, KernelRidgeProtocol):
            raise TypeError(f"protocol must be a KernelRidgeProtocol, got {type(proto).__name__}")
        alpha = check_positive(self.alpha, "alpha")
        Z, v = _check_zv(Z_reports, v_reports, proto.n_users, proto.n_features)
        n = Z.shape[0]
        Q = debiased_gram(Z, proto.x_channel.sigma)
        self.coef_ = linalg.solve(Q / n + alpha * np.eye(Q.shape[0]), Z.T @ v / n, assume_a="pos")
        self.Q_ = Q
        return self

    def predict(self, X):
        """``φ̂(X) @ coef_`` for query points ``X`` (public feature map; no privacy cost)."""
        return self.protocol.features(X) @ self.coef_

r"""Losses of dpcore's private generalised linear models (:mod:`dpcore.glm.perturbation`).

Every loss is written as a function of the linear predictor ``z = <θ, x>`` and the label ``y``:
``ℓ(z; y)``. Classification losses use labels ``y ∈ {−1, +1}`` and depend on the margin
``m = y z`` only, ``ℓ(z; y) = φ(y z)``, so ``ℓ'(z; y) = y φ'(y z)`` and ``ℓ''(z; y) = φ''(y z)``.

=============  ===========================================  ===========  ===================
loss           φ(m) / ℓ(z; y)                                L = sup|ℓ'|  c = sup|ℓ''|
=============  ===========================================  ===========  ===================
logistic       ``log(1 + exp(−m))``                          1            1/4
huber_svm      0 if m > 1+h; (1+h−m)²/(4h) if |1−m| ≤ h;     1            1/(2h)
               1 − m if m < 1−h  (Chaudhuri et al. 2011)
hinge          ``max(0, 1 − m)``                              1            — (not smooth)
squared        ``½ (z − y)²``, ``|y| ≤ B``                    see below    1
=============  ===========================================  ===========  ===================

``squared`` has no global Lipschitz constant; :meth:`SquaredLoss.lipschitz` returns the bound
``θ_max·R + B`` on ``|ℓ'(z; y)| = |z − y|`` over ``||θ|| ≤ θ_max``, ``||x|| ≤ R``, ``|y| ≤ B``
(:mod:`dpcore.glm.perturbation` explains where it is evaluated).

Floating-point assumption (``FP_ASSUMPTION``)
---------------------------------------------
The certified solver of :mod:`dpcore.glm._solver` needs a bound on the error of the *computed*
derivative ``fl(ℓ'(z̃; y))`` at a computed predictor ``z̃``. Elementary operations are IEEE-754
binary64 with round-to-nearest (unit roundoff ``u = 2^-53``); the only library function used is
``scipy.special.expit`` (logistic loss), which we **assume** returns ``σ(t)`` with relative error
``≤ 4u`` (it is implemented as ``1/(1 + exp(−t))`` with a correctly-rounded-within-1-ulp ``exp``;
the assumption leaves a factor ~2 of margin). :meth:`deriv_fp_error` turns this into an absolute
bound per loss.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from dpcore._internal.fp import NUMPY_EXP_ULPS, UNIT_ROUNDOFF, gamma_k  # noqa: F401

__all__ = [
    "GLMLoss",
    "LogisticLoss",
    "HuberSVMLoss",
    "HingeLoss",
    "SquaredLoss",
    "make_loss",
    "LOSSES",
]

#: Supported loss names.
LOSSES = ("logistic", "huber_svm", "hinge", "squared")


class GLMLoss:
    """Base class: a loss ``ℓ(z; y)`` with its derivative constants and floating-point bounds."""

    name: str = ""
    #: Twice differentiable (almost everywhere) with bounded curvature ``c``: usable by objective
    #: perturbation.
    smooth: bool = True
    #: Labels are two classes mapped to ``{−1, +1}`` (else: real-valued regression targets).
    classification: bool = True
    #: ``c = sup |ℓ''|`` (``inf`` for non-smooth losses).
    curvature: float = math.inf

    def lipschitz(self, theta_norm: float, radius: float) -> float:
        """Bound on ``|ℓ'(z; y)|`` for ``|z| ≤ theta_norm·radius`` and every admissible label."""
        return 1.0

    def loss_at_zero(self) -> float:
        """``max_y ℓ(0; y)``: bounds ``J(θ*) ≤ J(0)``, hence ``||θ*|| ≤ sqrt(2 ℓ(0)/Λ)``."""
        raise NotImplementedError

    def value(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def deriv(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def deriv2(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def deriv_fp_error(self, theta_norm: float, radius: float) -> float:
        """Absolute error bound ``|fl(ℓ'(z̃; y)) − ℓ'(z̃; y)|`` for ``|z̃| ≤ theta_norm·radius`` (``FP_ASSUMPTION``)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class LogisticLoss(GLMLoss):
    """``ℓ(z; y) = log(1 + exp(−y z))``: ``L = 1``, ``c = 1/4``.

    ``ℓ'(z; y) = −y σ(−y z)`` and ``ℓ'' = σ(m) σ(−m) ≤ 1/4``. Float error: ``m = y z`` and the
    sign changes are exact (``y = ±1``), ``expit`` is within ``NUMPY_EXP_ULPS = 4`` ulp, i.e. relative
    error ``≤ 8u`` (``FP_ASSUMPTION``; one ulp is at most ``2u`` relative), and ``|ℓ'| ≤ 1``, so the
    absolute error is ``≤ 8u``.
    """

    name = "logistic"
    curvature = 0.25

    def loss_at_zero(self) -> float:
        return math.log(2.0)

    def value(self, z, y):
        return np.logaddexp(0.0, -(y * z))

    def deriv(self, z, y):
        return -y * expit(-(y * z))

    def deriv2(self, z, y):
        m = y * z
        return expit(m) * expit(-m)

    def deriv_fp_error(self, theta_norm, radius):
        return 2.0 * NUMPY_EXP_ULPS * UNIT_ROUNDOFF


class HuberSVMLoss(GLMLoss):
    """Huber-smoothed hinge of Chaudhuri et al. (2011) with width ``h``: ``L = 1``, ``c = 1/(2h)``.

    ``φ(m) = 0`` for ``m > 1 + h``; ``(1 + h − m)²/(4h)`` for ``|1 − m| ≤ h``; ``1 − m`` for
    ``m < 1 − h``. ``φ`` is C¹ with ``φ' ∈ [−1, 0]`` and piecewise-constant ``φ'' ∈ {0, 1/(2h)}``
    (twice differentiable except at two points, which Chaudhuri et al. show is enough for objective
    perturbation).

    Float error of ``φ'(m) = −(fl(1+h) − m)/(2h)`` in the middle piece: ``fl(1+h)`` is off by
    ``≤ u(1+h)``, the subtraction and the division (``2h`` is exact) add ``≤ 2.02u·|1+h−m|/(2h) ≤
    2.02u``; deciding the piece with the float breakpoints ``fl(1 ± h)`` moves a breakpoint by
    ``≤ u(1+h)``, which changes the (continuous, ``1/(2h)``-Lipschitz) ``φ'`` by ``≤ u(1+h)/(2h)``.
    Total ``≤ u(1+h)/h + 2.02u ≤ 4u(1 + (1+h)/h)``.
    """

    name = "huber_svm"

    def __init__(self, h: float = 0.5):
        self.h = float(h)
        self.curvature = 1.0 / (2.0 * self.h)

    def loss_at_zero(self) -> float:
        h = self.h
        return 1.0 if h < 1.0 else (1.0 + h) ** 2 / (4.0 * h)

    def value(self, z, y):
        h = self.h
        m = y * z
        mid = (1.0 + h - m) ** 2 / (4.0 * h)
        return np.where(m > 1.0 + h, 0.0, np.where(m < 1.0 - h, 1.0 - m, mid))

    def deriv(self, z, y):
        h = self.h
        m = y * z
        mid = -((1.0 + h) - m) / (2.0 * h)
        return y * np.where(m > 1.0 + h, 0.0, np.where(m < 1.0 - h, -1.0, mid))

    def deriv2(self, z, y):
        h = self.h
        m = y * z
        return np.where((m >= 1.0 - h) & (m <= 1.0 + h), 1.0 / (2.0 * h), 0.0)

    def deriv_fp_error(self, theta_norm, radius):
        h = self.h
        return 4.0 * UNIT_ROUNDOFF * (1.0 + (1.0 + h) / h)

    def __repr__(self) -> str:
        return f"HuberSVMLoss(h={self.h!r})"


class HingeLoss(GLMLoss):
    """``ℓ(z; y) = max(0, 1 − y z)``: ``L = 1``, not differentiable (output perturbation only)."""

    name = "hinge"
    smooth = False

    def loss_at_zero(self) -> float:
        return 1.0

    def value(self, z, y):
        return np.maximum(0.0, 1.0 - y * z)

    def deriv(self, z, y):  # a subgradient
        return np.where(y * z < 1.0, -y, 0.0)

    def deriv2(self, z, y):
        raise ValueError("the hinge loss has no second derivative")

    def deriv_fp_error(self, theta_norm, radius):
        return 0.0


class SquaredLoss(GLMLoss):
    """``ℓ(z; y) = ½ (z − y)²`` with declared label bound ``|y| ≤ B``: ``c = 1``.

    ``|ℓ'(z; y)| = |z − y| ≤ θ_max R + B`` on ``||θ|| ≤ θ_max`` (no global Lipschitz constant).
    Float error of ``fl(z̃ − y)``: ``≤ u |z̃ − y| ≤ u (θ_max R + B)``; we use 4 times that.
    """

    name = "squared"
    classification = False
    curvature = 1.0

    def __init__(self, label_bound: float):
        self.label_bound = float(label_bound)

    def lipschitz(self, theta_norm, radius):
        return float(theta_norm) * float(radius) + self.label_bound

    def loss_at_zero(self) -> float:
        return 0.5 * self.label_bound**2

    def value(self, z, y):
        return 0.5 * (z - y) ** 2

    def deriv(self, z, y):
        return z - y

    def deriv2(self, z, y):
        return np.ones_like(np.asarray(z, dtype=np.float64))

    def deriv_fp_error(self, theta_norm, radius):
        return 4.0 * UNIT_ROUNDOFF * (float(theta_norm) * float(radius) + self.label_bound)

    def __repr__(self) -> str:
        return f"SquaredLoss(label_bound={self.label_bound!r})"


def make_loss(name: str, *, huber_width: float = 0.5, label_bound=None) -> GLMLoss:
    """The loss object for a validated ``name`` (parameters validated by the caller)."""
    if name == "logistic":
        return LogisticLoss()
    if name == "huber_svm":
        return HuberSVMLoss(huber_width)
    if name == "hinge":
        return HingeLoss()
    if name == "squared":
        return SquaredLoss(label_bound)
    raise ValueError(f"loss must be one of {LOSSES}, got {name!r}")

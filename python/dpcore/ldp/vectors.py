"""Basic Private Vector mechanism (Zheng, Mou & Wang 2017, Algorithm 1) — the client-side channel.

One user holds a vector ``x`` with ``||x||_2 ≤ data_norm`` (default the unit ball) and sends

    z = x + e,   e ~ N(0, σ² I_dim),

released with dpcore's exact Gaussian sampler (``noise.grid_release`` with a ``gaussian_plan``:
``round_g(x + σZ)`` on a power-of-two grid ``σ·2**-40`` fine, ``Z`` sampled exactly) — never with
numpy's floating-point normal.

Privacy [(ε, δ)-LDP, proof sketch]. Local DP compares the outputs on *any* two values ``x, x'`` of
the one user (there is no "rest of the dataset"). Both lie in the ball of radius ``R``, so
``||x − x'||_2 ≤ 2R``: the L2 sensitivity of the identity query is ``Δ = 2R`` (the paper's "2" for
``R = 1``). The Gaussian mechanism with ``Δ = 2R`` is (ε, δ)-DP for one input, which is exactly
(ε, δ)-LDP. Two calibrations are offered and recorded on the :class:`GaussianChannel`:

* ``"analytic"`` (default, all ε): the Balle–Wang analytic σ (smallest valid σ),
  ``Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) ≤ δ``.
* ``"classic"`` (paper's Lemma 1, only ε < 1): ``σ = Δ sqrt(2 ln(1.25/δ))/ε``. For ε < 1 it is
  ≥ the analytic σ, so the exact analytic release with this larger σ is also (ε, δ)-DP.

Rounding to the grid is post-processing; the plan's ``delta_used ≤ δ`` is checked at construction.
Clipping ``x ← x·R/||x||`` (paper line 2–4) is only done when the caller asks (``clip=True``); by
default a vector outside the ball is rejected, because silently clipping user data hides bugs.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpcore.mechanisms import noise
from dpcore.accounting.calibrate import gaussian_delta, gaussian_sigma_classic
from dpcore._internal.validation import check_delta, check_epsilon, check_positive
from dpcore.ldp._records import check_record, release
from dpcore._internal.types import ArrayLike, RandomState

__all__ = ["GaussianChannel", "gaussian_channel", "privatize_vector", "sample_privatize_vector"]

CALIBRATIONS = ("analytic", "classic")


@dataclass(frozen=True)
class GaussianChannel:
    """Public calibration of one Basic-Private-Vector release.

    Attributes
    ----------
    dim : length of the released vector.
    epsilon, delta : the (ε, δ)-LDP guarantee of one release.
    data_norm : declared bound ``R`` on ``||x||_2`` (the user's value is rejected or clipped to it).
    sensitivity : ``2R`` (replacement of the user's value inside the ball).
    calibration : ``"analytic"`` or ``"classic"`` — which σ formula was used.
    sigma : the released noise standard deviation per coordinate.
    delta_used : δ actually guaranteed at ``epsilon`` by ``sigma`` (analytic criterion, ``≤ delta``).
    plan : the :class:`dpcore.mechanisms.noise.GaussianPlan` driving the exact sampler.

    Examples
    --------
    >>> from dpcore.ldp import GaussianChannel, gaussian_channel
    >>> ch = gaussian_channel(3, 1.0, 1e-6, data_norm=0.5)
    >>> isinstance(ch, GaussianChannel), ch.dim, ch.sensitivity
    (True, 3, 1.0)
    """

    dim: int
    epsilon: float
    delta: float
    data_norm: float
    sensitivity: float
    calibration: str
    sigma: float
    delta_used: float
    plan: noise.GaussianPlan = dataclasses.field(repr=False, compare=False)


def _check_dim(dim, name: str = "dim") -> int:
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or int(dim) < 1:
        raise ValueError(f"{name} must be a positive integer, got {dim!r}")
    return int(dim)


def _make_channel(dim: int, epsilon: float, delta: float, data_norm: float, sensitivity: float,
                  calibration: str) -> GaussianChannel:
    plan = noise.gaussian_plan(sensitivity, epsilon, delta, dim, method="analytic")
    if calibration == "classic":
        sigma = gaussian_sigma_classic(sensitivity, epsilon, delta)  # refuses epsilon >= 1
        if sigma < plan.sigma:  # cannot happen for epsilon < 1; never release with less than analytic
            sigma = plan.sigma
        k = noise._floor_log2(sigma) - noise.ANALYTIC_GRID_BITS
        plan = dataclasses.replace(plan, sigma=sigma, grid_exponent=k, granularity=float(Fraction(2) ** k),
                                   delta_used=gaussian_delta(sigma, sensitivity, epsilon))
    if not plan.delta_used <= delta:
        raise AssertionError(f"channel calibration failed: delta_used={plan.delta_used} > delta={delta}")
    return GaussianChannel(dim=dim, epsilon=epsilon, delta=delta, data_norm=data_norm, sensitivity=sensitivity,
                           calibration=calibration, sigma=plan.sigma, delta_used=plan.delta_used, plan=plan)


def gaussian_channel(dim: int, epsilon: float, delta: float, *, data_norm: float = 1.0, calibration: str = "analytic"
                    ) -> GaussianChannel:
    """Calibrate the Basic Private Vector mechanism for vectors of length ``dim`` with
    ``||x||_2 ≤ data_norm`` (L2 sensitivity ``2·data_norm``) at (ε, δ)-LDP. See the module docstring.

    Examples
    --------
    >>> from dpcore.ldp import gaussian_channel
    >>> ch = gaussian_channel(3, 1.0, 1e-6)           # vectors in the unit L2 ball
    >>> round(ch.sigma, 4), ch.sensitivity, ch.calibration
    (8.4494, 2.0, 'analytic')
    """
    dim = _check_dim(dim)
    epsilon = check_epsilon(epsilon, grid=False)
    delta = check_delta(delta, allow_zero=False, grid=False)
    data_norm = check_positive(data_norm, "data_norm")
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    if calibration == "classic" and not epsilon < 1.0:
        raise ValueError(f"calibration='classic' needs epsilon < 1 (got epsilon={epsilon}); use 'analytic'")
    return _make_channel(dim, epsilon, delta, data_norm, 2.0 * data_norm, calibration)


def privatize_vector(x: ArrayLike, epsilon: float, delta: float, *, clip: bool = False, data_norm: float = 1.0,
                     calibration: str = "analytic", random_state: RandomState = None) -> np.ndarray:
    """Client side: privatise ONE user's vector (Basic Private Vector mechanism, Algorithm 1).

    What leaves the device: the returned array ``z = x + N(0, σ² I)`` (exact grid release), nothing else.

    Parameters
    ----------
    x : array_like, shape (d,)
        The user's vector; ``||x||_2 ≤ data_norm`` required (``ValueError`` otherwise unless ``clip=True``).
    epsilon : float
        ε > 0.
    delta : float
        δ in (0, 1).
    clip : bool, default False
        Clip ``x`` to the ball instead of rejecting it.
    data_norm : float, default 1.0
        Declared bound on ``||x||_2``; the sensitivity is ``2·data_norm``.
    calibration : {"analytic", "classic"}
        σ formula (see module docstring); "classic" only for ε < 1.
    random_state : None, int or ChaChaRng
        ``None`` (secure OS seeding) in production; ints for tests.

    Returns
    -------
    numpy.ndarray, shape (d,)

    Guarantee: (ε, δ)-LDP — any two values of the user differ by at most ``2·data_norm`` in L2, and the
    Gaussian mechanism is calibrated for that sensitivity (proof sketch in the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore.ldp import privatize_vector
    >>> privatize_vector(np.array([0.6, 0.0, 0.8]), 1.0, 1e-6, random_state=0).shape
    (3,)
    """
    data_norm = check_positive(data_norm, "data_norm")
    xv = check_record(x, "x", None, data_norm, clip)
    channel = gaussian_channel(xv.size, epsilon, delta, data_norm=data_norm, calibration=calibration)
    return release(xv, channel, noise.check_random_state(random_state))


def sample_privatize_vector(x: ArrayLike, epsilon: float, delta: float, n_samples: int, *, data_norm: float = 1.0,
                            calibration: str = "analytic", random_state: RandomState = None) -> np.ndarray:
    """``n_samples`` independent outputs of :func:`privatize_vector` on the same ``x`` (for audits only).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore.ldp import sample_privatize_vector
    >>> sample_privatize_vector(np.array([0.6, 0.0, 0.8]), 1.0, 1e-6, 4, random_state=0).shape
    (4, 3)
    """
    data_norm = check_positive(data_norm, "data_norm")
    xv = check_record(x, "x", None, data_norm, False)
    channel = gaussian_channel(xv.size, epsilon, delta, data_norm=data_norm, calibration=calibration)
    return release(xv, channel, noise.check_random_state(random_state), int(n_samples))


def split_budget(total: float, share: Fraction, copies: int) -> float:
    """Largest float ``e`` with ``copies·e ≤ share·total`` exactly (per-copy budget of a split)."""
    target = Fraction(total) * share
    e = float(target / copies)
    while Fraction(e) * copies > target:
        e = math.nextafter(e, 0.0)
    return e



r"""Exponential mechanism over the ball for the linear kernel (Jain & Thakurta 2013, end of §6.2).

For the linear kernel the TDIL score is ``κ|<z, u>|`` with ``u = w_t − w*`` a d-vector, and the
exponential mechanism over the *continuous* ball ``{||z|| ≤ r}`` (uniform base measure) has density

    p(z) ∝ exp(a |<z, û>|),     a = κ ||u||,   û = u/||u||,

a uniform mixture of two log-concave densities: by the symmetry ``z ↦ −z`` of the ball the two
halves ``{±<z, û> ≥ 0}`` carry equal mass, and on each half the density ``exp(±a<z, û>)`` is
log-concave. Writing ``z = s·t·û + z⊥`` (s = ±1, ``t ∈ [0, r]``), the sampler is exact:

1. ``s`` a fair sign;
2. ``t`` from the log-concave marginal ``ℓ(t) = a t + ((d−1)/2) log(r² − t²)`` on ``[0, r]`` by
   rejection from a three-piece envelope (constant around the mode where ``ℓ`` is within 1 of its
   maximum, tangent exponentials outside — valid upper bounds by concavity; acceptance ≥ ~1/4);
3. ``z⊥`` uniform in the (d−1)-ball of radius ``sqrt(r² − t²)`` orthogonal to ``û``.

The cost is O(d) per draw, independent of the size of any net — the point of this path.

Release and floating point
--------------------------
The continuous sample is never released: it is *snapped* to the public ν-net used by the generic
sampler (:mod:`dpcore.expmech`): ``g = round(z/h)`` on the cubic grid of spacing ``h = 2ν/√d``,
then projected onto the ball. For an exact continuous sample this is post-processing, so the
snapped point inherits the EM's ``2κS``-DP. The sampler runs in float64, so its output ``ẑ``
differs from an exact sample ``z``; snapping maps both to the same net point unless ``z`` lies
within the float error ``η_z`` of a face of its grid cube. As ``log p`` is ``a``-Lipschitz, the
probability of that event is at most ``2d(η_z/h)·e^{a h √d}``; outside that event the released
distributions of neighbouring datasets obey the EM's ratio bound, so each round is
``(ε_em, δ_fp)``-DP with ``δ_fp = 2d(η_z/h)·e^{a h √d} + p_rej``, where ``p_rej`` bounds the
probability that a float acceptance decision differs from the exact one.

**Assumption named here (not a proof):** ``η_z ≤ 2^-45·r`` and ``p_rej ≤ 2^-40`` per draw. The
inversions ``log1p(U·expm1(x))/rate`` are accurate to a few ulp *relative* to t, the direction is
a normalised Gaussian vector (a few ulp per coordinate), so the computed point is within
~10·d·u·r of the exact point driven by the same uniforms (u = 2^-53; the assumption leaves a
factor ~1000); acceptance tests compare ``log U`` with ``ℓ(t) − env`` computed to ~1e-15, so a
decision differs from the exact one only if ``log U`` falls in an interval of that width. We do
not carry a machine-checked rounding analysis through libm. Under the assumption each round is
``(ε_em, (1 + e^{ε_em}) δ_fp)``-DP; TDIL reserves 10% of δ for these terms, evaluates ``δ_fp``
each round from public quantities (``a ≤ κ(||w_t|| + C)``) and stops early if the reserve would be
exceeded. The generic net sampler (``sampler="net"``, exact Gumbel-max with a proven float bound)
is the default for this reason.
"""

from __future__ import annotations

import math

import numpy as np

from dpcore import _core
from dpcore._core import ChaChaRng

__all__ = ["LinearBallEM", "t_logpdf", "snap_to_net", "fp_delta", "FP_REL_ERROR", "FP_REJECT_ERROR"]

from dpcore._internal.fp import EM_FP_REJECT_ERROR as FP_REJECT_ERROR
from dpcore._internal.fp import EM_FP_REL_ERROR as FP_REL_ERROR
from dpcore._internal.types import ArrayLike


def t_logpdf(t: ArrayLike, a: float, d: int, r: float) -> np.ndarray:
    """Unnormalised log-density of ``t = |<z, û>|`` under ``p(z) ∝ exp(a|<z, û>|)`` on the ball."""
    t = np.asarray(t, dtype=np.float64)
    k = (d - 1) / 2.0
    with np.errstate(divide="ignore"):
        return a * t + (k * np.log(np.maximum(r * r - t * t, 0.0)) if k > 0 else 0.0)


def snap_to_net(z: np.ndarray, nu: float, radius: float) -> tuple[np.ndarray, np.ndarray]:
    """The net point of ``z``: the Rust ``BallNet`` snapping (``dpcore._core.net_snap``), so that a
    continuous sample lands on exactly the points the exponential mechanism's net enumerates
    (same spacing ``h = 2ν/√d·(1 − 2⁻³²)``, same projection into the ball).

    Returns ``(coords, point)``: the integer grid coordinates and the net point.
    """
    z = np.ascontiguousarray(z, dtype=np.float64).reshape(-1)
    return _core.net_snap(z.shape[0], float(nu), float(radius), z)


def fp_delta(a: float, nu: float, d: int, radius: float) -> float:
    """Per-draw ``δ_fp = 2d(η_z/h)·e^{a h √d} + p_rej`` under the module's stated assumption
    (``η_z = FP_REL_ERROR·radius``, ``p_rej = FP_REJECT_ERROR``)."""
    h = 2.0 * nu / math.sqrt(d)  # the exponent uses the nominal spacing (an upper bound) ...
    h_net = float(_core.net_info(d, float(nu), float(radius))["h"])  # ... the ratio the net's (smaller) one
    return 2.0 * d * FP_REL_ERROR * radius / h_net * math.exp(min(a * h * math.sqrt(d), 700.0)) + FP_REJECT_ERROR


class LinearBallEM:
    """Exact sampler of ``p(z) ∝ exp(a|<z, û>|)`` on ``{||z|| ≤ r}`` (see the module docstring).

    Parameters
    ----------
    rng : dpcore.mechanisms.noise.ChaChaRng
        Source of randomness (64-bit words).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore.mechanisms import LinearBallEM, check_random_state
    >>> em = LinearBallEM(check_random_state(0))
    >>> z = em.sample(np.array([1.0, 0.0, 0.0]), kappa=5.0, r=1.0)
    >>> z.shape, bool(np.linalg.norm(z) <= 1.0)
    ((3,), True)
    """

    def __init__(self, rng: ChaChaRng) -> None:
        self._rng = rng

    # -- uniform variates from the ChaCha stream ------------------------------------------------
    def _u(self) -> float:
        """Uniform in the open interval (0, 1) with 53 random bits."""
        return ((int(self._rng.next_u64()) >> 11) + 0.5) * 2.0**-53

    def _normal(self) -> float:
        u1, u2 = self._u(), self._u()
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)

    def _trunc_exp(self, rate: float, length: float) -> float:
        """Density ∝ exp(rate·x) on [0, length] (any sign of rate), by inversion."""
        if length <= 0.0:
            return 0.0
        x = rate * length
        u = self._u()
        if abs(x) < 1e-12:
            return u * length
        if x > 0:  # x = length + log(u + (1-u) e^{-x}) / rate, stable for large x
            return length + math.log(u + (1.0 - u) * math.exp(-x)) / rate
        return math.log1p(u * math.expm1(x)) / rate

    # -- the t marginal ---------------------------------------------------------------------------
    def sample_t(self, a: float, d: int, r: float) -> float:
        """One draw of ``t ∈ [0, r]`` with log-density ``a t + ((d−1)/2) log(r² − t²)``.

        Examples
        --------
        >>> from dpcore.mechanisms import LinearBallEM, check_random_state
        >>> t = LinearBallEM(check_random_state(0)).sample_t(a=5.0, d=3, r=1.0)
        >>> 0.0 <= t <= 1.0
        True
        """
        if a < 0 or not math.isfinite(a):
            raise ValueError(f"a must be finite and >= 0, got {a!r}")
        k = (d - 1) / 2.0
        if k == 0.0:
            return self._trunc_exp(a, r)
        m = (-k + math.sqrt(k * k + a * a * r * r)) / a if a > 0 else 0.0
        m = min(max(m, 0.0), r)

        def ell(t):
            return a * t + k * math.log(max(r * r - t * t, 1e-300))

        def dell(t):
            return a - 2.0 * k * t / (r * r - t * t)

        top = ell(m)

        def solve(lo, hi, want_left):
            # bisection for ℓ(t) = top − 1 on [lo, hi] (ℓ monotone there)
            for _ in range(200):
                mid = 0.5 * (lo + hi)
                if (ell(mid) < top - 1.0) == want_left:
                    lo = mid
                else:
                    hi = mid
            return 0.5 * (lo + hi)

        tl = 0.0 if ell(0.0) >= top - 1.0 else solve(0.0, m, True)
        tr = solve(m, r * (1 - 1e-15), False)
        sl, sr = dell(tl), dell(tr)  # ≥ 0 and < 0
        el, er = ell(tl), ell(tr)
        # envelope pieces: [0, tl] exp(el + sl (t − tl)); [tl, tr] exp(top); [tr, r] exp(er + sr (t − tr))
        def mass_exp(e0, s, length):
            if length <= 0.0:
                return 0.0
            x = s * length
            return math.exp(e0) * (length if abs(x) < 1e-12 else math.expm1(x) / s)

        w_left = mass_exp(el - sl * tl, sl, tl)  # ∫_0^tl exp(el + sl(t − tl)) dt
        w_mid = math.exp(top) * (tr - tl)
        w_right = mass_exp(er, sr, r - tr)
        total = w_left + w_mid + w_right
        for _ in range(100_000):
            v = self._u() * total
            if v < w_left:
                t = self._trunc_exp(sl, tl)
                env = el + sl * (t - tl)
            elif v < w_left + w_mid:
                t = tl + self._u() * (tr - tl)
                env = top
            else:
                t = tr + self._trunc_exp(sr, r - tr)
                env = er + sr * (t - tr)
            if t >= r:
                continue
            if math.log(self._u()) <= ell(t) - env:
                return t
        raise RuntimeError("LinearBallEM: rejection sampler did not accept in 100000 trials")  # pragma: no cover

    def sample(self, u: np.ndarray, kappa: float, r: float) -> np.ndarray:
        """One draw of ``z`` with density ∝ ``exp(κ|<z, u>|)`` on the ball of radius ``r``.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore.mechanisms import LinearBallEM, check_random_state
        >>> em = LinearBallEM(check_random_state(0))
        >>> z = em.sample(np.array([0.0, 1.0]), kappa=10.0, r=2.0)
        >>> z.shape, bool(np.linalg.norm(z) <= 2.0)
        ((2,), True)
        """
        u = np.asarray(u, dtype=np.float64)
        d = u.shape[0]
        norm = float(np.linalg.norm(u))
        a = kappa * norm
        uhat = u / norm if norm > 0 else np.eye(d)[0]
        s = 1.0 if (int(self._rng.next_u64()) >> 63) else -1.0
        t = self.sample_t(a, d, r)
        z = s * t * uhat
        if d > 1:
            g = np.array([self._normal() for _ in range(d)])
            g -= (g @ uhat) * uhat
            gn = float(np.linalg.norm(g))
            rho = math.sqrt(max(r * r - t * t, 0.0)) * self._u() ** (1.0 / (d - 1))
            z = z + (rho / gn) * g
        return z

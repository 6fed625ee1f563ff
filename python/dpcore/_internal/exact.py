"""Directed rounding of exact rationals to floats.

Privacy bounds computed exactly (``fractions.Fraction``) must stay bounds once reported as floats:
a spent budget or a noise scale is rounded *up*, a remaining budget or a per-step ε *down*.
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = ["float_down", "float_up"]


def float_down(x: Fraction) -> float:
    """Largest float ``f`` with ``Fraction(f) <= x``."""
    f = float(x)  # round-to-nearest
    if Fraction(f) > x:
        f = math.nextafter(f, -math.inf)
    return f


def float_up(x: Fraction) -> float:
    """Smallest float ``f`` with ``Fraction(f) >= x``."""
    f = float(x)
    if Fraction(f) < x:
        f = math.nextafter(f, math.inf)
    return f

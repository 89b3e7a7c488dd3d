"""Information measures in bits (binary entropy), on arrays and on single values."""

from __future__ import annotations

import math

import numpy as np

from horcrux.belief.tables import (
    FloatArray,
)


def h2(p: FloatArray) -> FloatArray:
    q = np.clip(p, 1e-12, 1.0 - 1e-12)
    out: FloatArray = -(q * np.log2(q) + (1.0 - q) * np.log2(1.0 - q))
    return out


def binary_entropy(p: float) -> float:
    """h2(p) in bits."""
    if p <= 0.0 or p >= 1.0:
        return 0.0
    return -(p * math.log2(p) + (1.0 - p) * math.log2(1.0 - p))

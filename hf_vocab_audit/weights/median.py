"""``np.median`` of a 1-D float64 array, value for value, without importing ``numpy.ma``: np.median's NaN
check does (``np.ma.isMaskedArray``), and that import costs ``--weights`` more than a median of 128k norms."""

from __future__ import annotations

import numpy as np


def median(values: np.ndarray) -> float:
    """The median as np.median computes it: the middle value, or the mean of the two middle values; NaN
    when any value is NaN (np.median's rule) or the array is empty."""
    n = len(values)
    if n == 0 or bool(np.isnan(values).any()):
        return float("nan")
    k = n // 2
    if n % 2:
        return float(np.partition(values, k)[k])
    part = np.partition(values, (k - 1, k))
    return float(np.mean(part[k - 1 : k + 1]))

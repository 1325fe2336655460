"""Classify token rows as trained, untrained or suspect from their indicators.

* untrained: all zero (max |v| <= 1e-16), equal to the mean of the non-zero rows (what
  ``resize_token_embeddings(mean_resizing=True)`` leaves), or bitwise identical to another row;
* suspect: norm below ``threshold_norm = min(exp(m - SUSPECT_Z * s), SUSPECT_RATIO * median)``, where
  ``m`` is the median and ``s`` the scaled MAD (1.4826 x median absolute deviation) of ln(norm) over the
  token rows that are neither zero, mean nor duplicate: a robust z-score below -5 that is also under half the median norm.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .median import median
from .stats import MatrixStats
from .status import (  # noqa: F401 - re-exported: the classification's vocabulary
    DUPLICATE,
    LOW_NORM,
    MEAN,
    NOT_A_TOKEN,
    REASON_NAMES,
    STATUS_NAMES,
    SUSPECT,
    TRAINED,
    UNTRAINED,
    ZERO,
)

SUSPECT_Z = 5.0
SUSPECT_RATIO = 0.5
MAD_SCALE = 1.4826  # MAD -> standard deviation for a normal distribution



def reason_names(mask: int) -> list[str]:
    return [name for bit, name in REASON_NAMES.items() if mask & bit]


@dataclass(frozen=True)
class Classification:
    status: np.ndarray = field(repr=False)  # uint8 per row (NOT_A_TOKEN for padding rows and holes)
    reasons: np.ndarray = field(repr=False)  # uint8 bitmask per row
    threshold_norm: float
    log_norm_median: float
    log_norm_scale: float


def suspect_threshold(token_norms: np.ndarray) -> tuple[float, float, float]:
    """(threshold_norm, median ln norm, scaled MAD of ln norm) of non-zero token rows."""
    norms = token_norms[token_norms > 0]
    if len(norms) == 0:
        return 0.0, float("-inf"), 0.0
    logs = np.log(norms)
    m = median(logs)
    s = MAD_SCALE * median(np.abs(logs - m))
    return min(float(np.exp(m - SUSPECT_Z * s)), SUSPECT_RATIO * float(np.exp(m))), m, s


def classify(stats: MatrixStats, token_ids: np.ndarray) -> Classification:
    """Status and reasons for every row; only ``token_ids`` (ids the tokenizer can emit) are tokens."""
    is_token = np.zeros(stats.rows, bool)
    is_token[token_ids] = True
    reasons = np.zeros(stats.rows, np.uint8)
    reasons[stats.zero] |= ZERO
    reasons[stats.mean_like] |= MEAN
    reasons[stats.duplicate_of >= 0] |= DUPLICATE
    ordinary = is_token & (reasons == 0)
    threshold, m, s = suspect_threshold(stats.norm[ordinary])
    reasons[~stats.zero & (stats.norm < threshold)] |= LOW_NORM
    status = np.full(stats.rows, NOT_A_TOKEN, np.uint8)
    status[is_token] = TRAINED
    status[is_token & (reasons & LOW_NORM).astype(bool)] = SUSPECT
    status[is_token & (reasons & (ZERO | MEAN | DUPLICATE)).astype(bool)] = UNTRAINED
    return Classification(status, reasons, threshold, m, s)

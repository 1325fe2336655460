"""Row statuses and reasons of the weights analysis: plain constants, readable without numpy."""

from __future__ import annotations

TRAINED, UNTRAINED, SUSPECT, NOT_A_TOKEN = 0, 1, 2, 3
STATUS_NAMES = ("trained", "untrained", "suspect", "not a token")
ZERO, MEAN, DUPLICATE, LOW_NORM = 1, 2, 4, 8
REASON_NAMES = {ZERO: "zero", MEAN: "mean", DUPLICATE: "duplicate", LOW_NORM: "low-norm"}

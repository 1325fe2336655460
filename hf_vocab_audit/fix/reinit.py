"""``--fix --unsafe-fixes`` for HVA601/HVA602: set untrained token rows to the mean of the trained rows.

The mean is taken over the rows of the tokenizer's ids (padding rows past them left out) minus the rows
being re-initialised and the rows the weights analysis found untrained or low-norm (pad, reserved
placeholders), accumulated block by block (float32 within a block, float64 across blocks) and rounded
to the tensor's dtype as the growth path does. The rows are written into the shard's single rewrite.

The rows the weights analysis flagged come from the audit ``--fix`` ran on its input (the report's ``weights``
section): the matrices are not read a second time to find them (:func:`flagged_rows`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..core.report import Report
from ..errors import AuditError
from ..facts import Facts
from ..facts.vocab_geometry import as_rows
from ..io.dtypes import FLOAT_DTYPES, from_float32
from ..io.rows import mean_of_rows
from ..io.safetensors_header import TensorInfo
from .repair_plan import CheckpointRepair


def flagged_rows(report: Report, facts: Facts) -> dict[str, tuple[int, ...]]:
    """Per tensor, the token rows the weights analysis of ``report`` (the audit of ``facts``) found untrained or
    low-norm: the mean that re-initialises rows leaves them out.

    Read from the report's ``weights`` section, which lists every flagged row of a side unless there are more
    than it lists (``weights.analysis.LIST_LIMIT`` of a kind: thousands of unused placeholder tokens); only
    then, or with no section, are the matrices read again."""
    from ..weights.status import STATUS_NAMES, SUSPECT, UNTRAINED

    section = report.weights
    if section is not None:
        rows = {side.tensor: tuple(sorted({r.id for r in side.flagged_used} | set(side.flagged_other_ids)))
                for side in section.sides.values()}
        flagged = {side.tensor: side.counts.get(STATUS_NAMES[UNTRAINED], 0) + side.counts.get(STATUS_NAMES[SUSPECT], 0)
                   for side in section.sides.values()}
        if all(len(rows[name]) == count for name, count in flagged.items()):
            return rows
    from ..weights.analysis import gather_weights

    weight_facts, _skipped = gather_weights(facts)
    if weight_facts is None:
        return {}
    return {s.stats.tensor: tuple(int(i) for i in s.flagged()) for s in weight_facts.sides}


def unsupported_reinit(t: TensorInfo) -> str | None:
    if t.dtype not in FLOAT_DTYPES:
        return f"{t.name} is {t.dtype}, which --fix does not re-initialise"
    if len(t.shape) != 2:
        return f"{t.name} has shape {list(t.shape)}, which --fix does not re-initialise"
    return None


def trained_mean(path: Path, t: TensorInfo, trained: int, leave_out: np.ndarray) -> tuple[np.ndarray, int]:
    """(float32 mean, rows averaged) of the first ``trained`` rows of ``t`` except the ids in ``leave_out``."""
    rows, width = as_rows(t)
    mean, count = mean_of_rows(path, t, rows, width, trained, leave_out)
    if count == 0:
        raise AuditError(path, f"tensor {t.name} has no trained row to take the mean of")
    return mean, count


def mean_row_bytes(path: Path, t: TensorInfo, plan: CheckpointRepair) -> bytes:
    """The stored bytes of one re-initialised row of ``t``."""
    leave_out = np.asarray(plan.reinit[t.name] + plan.reinit_exclude.get(t.name, ()), np.int64)
    mean, _count = trained_mean(path, t, plan.trained_rows or as_rows(t)[0], leave_out)
    return from_float32(mean, t.dtype).tobytes()


def write_rows(fd: int, tensor_start: int, t: TensorInfo, ids: tuple[int, ...], row: bytes) -> None:
    """Overwrite rows ``ids`` of a tensor that starts ``tensor_start`` bytes into the open file ``fd``."""
    for i in ids:
        if os.pwrite(fd, row, tensor_start + i * len(row)) != len(row):
            raise OSError(f"short write to {t.name} row {i}")


def row_ranges(t: TensorInfo, ids: tuple[int, ...]) -> list[tuple[int, int]]:
    """(offset, length) within the tensor's bytes of every run of rows not in ``ids``."""
    rows, width = as_rows(t)
    row = width * np.dtype(FLOAT_DTYPES[t.dtype]).itemsize
    out, start = [], 0
    for i in sorted(set(ids)):
        if i > start:
            out.append((start * row, (i - start) * row))
        start = i + 1
    if start < rows:
        out.append((start * row, (rows - start) * row))
    return out

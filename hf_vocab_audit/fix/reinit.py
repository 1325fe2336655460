"""``--fix --unsafe-fixes`` for HVA601/HVA602: set untrained token rows to the mean of the trained rows.

The mean is taken over the rows of the tokenizer's ids (padding rows past them left out) minus the rows
being re-initialised and the rows the weights analysis found untrained or low-norm (pad, reserved
placeholders), accumulated block by block (float32 within a block, float64 across blocks) and rounded
to the tensor's dtype as the growth path does. The rows are written into the shard's single rewrite.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import AuditError
from ..facts.safetensors_header import TensorInfo
from .plan import RepairPlan, as_rows
from .surgical import FLOAT_DTYPES, MEAN_CHUNK_BYTES, from_float32, to_float32


def unsupported_reinit(t: TensorInfo) -> str | None:
    if t.dtype not in FLOAT_DTYPES:
        return f"{t.name} is {t.dtype}, which --fix does not re-initialise"
    if len(t.shape) != 2:
        return f"{t.name} has shape {list(t.shape)}, which --fix does not re-initialise"
    return None


def trained_mean(path: Path, t: TensorInfo, trained: int, leave_out: np.ndarray) -> tuple[np.ndarray, int]:
    """(float32 mean, rows averaged) of the first ``trained`` rows of ``t`` except the ids in ``leave_out``."""
    rows, width = as_rows(t)
    n = min(trained, rows)
    keep = np.ones(n, bool)
    keep[leave_out[(leave_out >= 0) & (leave_out < n)]] = False
    count = int(keep.sum())
    if count == 0:
        raise AuditError(path, f"tensor {t.name} has no trained row to take the mean of")
    mm = np.memmap(path, dtype=FLOAT_DTYPES[t.dtype], mode="r", offset=t.begin, shape=(rows, width))  # type: ignore
    step = max(1, MEAN_CHUNK_BYTES // max(width * mm.dtype.itemsize, 1))
    total = np.zeros(width, np.float64)
    for start in range(0, n, step):
        block = to_float32(np.asarray(mm[start : min(n, start + step)]), t.dtype)
        total += np.add.reduce(block[keep[start : start + len(block)]], axis=0, dtype=np.float32)
    del mm
    return (total / count).astype(np.float32), count


def mean_row_bytes(path: Path, t: TensorInfo, plan: RepairPlan) -> bytes:
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


def check_reinit_rows(src: Path, t: TensorInfo, out: Path, o: TensorInfo, plan: RepairPlan, output: Path) -> None:
    """Every re-initialised row of the output holds the finite mean of the input's trained rows."""
    from .verify import _fail

    row = mean_row_bytes(src, t, plan)
    if not np.isfinite(to_float32(np.frombuffer(row, FLOAT_DTYPES[t.dtype]), t.dtype)).all():
        _fail(output, f"tensor {t.name}: the mean of the trained rows is not finite")
    rows, width = as_rows(o)
    mm = np.memmap(out, dtype=FLOAT_DTYPES[o.dtype], mode="r", offset=o.begin, shape=(rows, width))  # type: ignore
    ids = list(plan.reinit[t.name])
    got = np.asarray(mm[ids])
    del mm
    expect = np.frombuffer(row, FLOAT_DTYPES[t.dtype])
    if not (got.view(np.uint8).reshape(len(ids), -1) == expect.view(np.uint8)).all():
        _fail(output, f"tensor {t.name}: re-initialised rows do not hold the mean of the trained rows")


def weight_audit(facts, rules) -> tuple[list, list, list[str], dict | None, dict[str, tuple[int, ...]]]:
    """The ``--weights`` rules on ``facts``: (findings, skipped, codes run, report section, and per tensor
    the token rows the analysis found untrained or low-norm, which the re-initialising mean leaves out)."""
    from ..core.findings import Skipped
    from ..weights import gather_weights

    chosen = [r for r in rules if r.scope == "weights"]
    if not chosen:
        return [], [], [], None, {}
    weights, skipped = gather_weights(facts)
    if weights is None:
        reason = skipped[0].reason if skipped else "no weights"
        return [], skipped + [Skipped(f"{r.code} {r.name}", reason) for r in chosen], [], None, {}
    findings = [f for r in chosen for f in r.findings(weights)]
    untrained = {s.stats.tensor: tuple(int(i) for i in s.flagged()) for s in weights.sides}
    return findings, skipped, [r.code for r in chosen], weights.summary(), untrained

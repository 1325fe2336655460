"""Grow the vocabulary tensors of a safetensors checkpoint in place of a full load.

Only the shards holding a tensor that grows are rewritten, and even those stream: every tensor's
bytes are copied from the input by offset (``os.copy_file_range`` where the kernel has it), and the
grown tensors get their new rows appended. The mean row is accumulated over row blocks of a memmap,
so peak memory stays far below the size of one embedding matrix.
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ..core.fixes import GrownTensor
from ..facts import Facts
from ..facts.tensors import SAFETENSORS_INDEX
from ..facts.vocab_geometry import as_rows, vocab_axis, vocab_dim, vocab_tensors
from ..facts.weight_formats.registry import format_of
from ..io import file_copy
from ..io.dtypes import FLOAT_DTYPES, from_float32
from ..io.file_copy import write_all
from ..io.rows import mean_of_rows
from ..io.safetensors_header import TensorInfo
from .repair_plan import CheckpointRepair

ZERO_FILL_SUFFIXES = ("final_logits_bias",)  # transformers pads these with zeros, not the mean


def unsupported(facts: Facts, plan: CheckpointRepair) -> str | None:
    """Why the surgical path cannot carry out ``plan`` on this checkpoint (then use transformers), or None."""
    tensors = facts.tensors
    if tensors is None or not format_of(tensors).byte_ranges:
        return "the weights are not safetensors"
    grown = [t for t in vocab_tensors(facts) if t.name in plan.grow]
    for t in grown:
        if t.dtype not in FLOAT_DTYPES:
            return f"{t.name} is {t.dtype}, which the surgical path does not grow"
        if (len(t.shape) != 2) if vocab_axis(t) == 0 else (math.prod(t.shape[:-1]) != 1):
            return f"{t.name} has shape {list(t.shape)}, which the surgical path does not grow"
    if plan.reinit:
        from .reinit import unsupported_reinit

        for name in plan.reinit:
            why = unsupported_reinit(tensors.tensors[name])
            if why:
                return why
    known = {t.name for t in vocab_tensors(facts)}
    rows = plan.rows_before
    others = _config_dims(facts)
    if rows is not None and rows not in others:
        for t in tensors.tensors.values():
            if t.name not in known and rows in t.shape:
                return f"{t.name} {list(t.shape)} has a vocabulary-sized dimension the surgical path cannot place"
    return None


def _config_dims(facts: Facts) -> set[int]:
    text = facts.config.text
    return {v for k, v in text.items() if isinstance(v, int) and not isinstance(v, bool) and k != "vocab_size"}


def mean_row(path: Path, t: TensorInfo, trained: int) -> np.ndarray:
    """float32 mean of the first ``trained`` rows (or entries) of ``t``, read in blocks of rows."""
    rows, width = as_rows(t)
    return mean_of_rows(path, t, rows, width, trained)[0]


def new_rows_bytes(path: Path, t: TensorInfo, new: int, trained: int) -> tuple[bytes, str]:
    old = vocab_dim(t)
    if vocab_axis(t) == -1 and any(t.name.endswith(s) for s in ZERO_FILL_SUFFIXES):
        row, fill = np.zeros(1, dtype=np.float32), "zeros"
    else:
        row, fill = mean_row(path, t, trained), "mean"
    return repeated_row(row, t, new - old), fill


def repeated_row(row: np.ndarray, t: TensorInfo, count: int) -> bytes:
    """``count`` copies of the float32 ``row`` in ``t``'s dtype (the appended rows of a grown tensor)."""
    block = np.broadcast_to(from_float32(row, t.dtype), (count, row.shape[0]))
    return np.ascontiguousarray(block).tobytes()


def fused_mean(t: TensorInfo) -> bool:
    """Whether ``t`` grows by rows filled with the mean, so its mean is taken while its rows are copied."""
    return vocab_axis(t) == 0 and not any(t.name.endswith(s) for s in ZERO_FILL_SUFFIXES)


def header_bytes(header: dict) -> bytes:
    raw = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw


def rewrite_shard(facts: Facts, shard: str, dst: Path, plan: CheckpointRepair) -> list[GrownTensor]:
    """Write ``shard`` to ``dst`` with its vocabulary tensors grown and the plan's rows re-initialised;
    every other byte copied."""
    from .reinit import mean_row_bytes, write_rows

    header = facts.required_tensors().headers[shard]
    src_path = header.path
    entries = sorted(header.tensors, key=lambda t: (t.begin, t.end, t.name))
    new_header: dict = {"__metadata__": header.metadata} if header.metadata else {}
    extra: dict[str, bytes] = {}
    grown: list[GrownTensor] = []
    reinit = {t.name: mean_row_bytes(src_path, t, plan) for t in entries if t.name in plan.reinit}
    starts: dict[str, int] = {}
    offset = 0
    for t in entries:
        starts[t.name] = offset
        begin, end = t.span
        size = end - begin
        shape = list(t.shape)
        if t.name in plan.grow:
            new = plan.grow[t.name]
            if t.name in plan.base_rows:  # the base's own rows, copied by offset after the fine-tune's
                size += (new - vocab_dim(t)) * (size // max(vocab_dim(t), 1))
                fill = "base"
            elif fused_mean(t):  # the mean is summed while the rows are copied
                size += (new - vocab_dim(t)) * (size // max(vocab_dim(t), 1))
                fill = "mean"
            else:
                data, fill = new_rows_bytes(src_path, t, new, plan.trained_rows or vocab_dim(t))
                extra[t.name] = data
                size += len(data)
            shape[vocab_axis(t)] = new
            grown.append(GrownTensor(t.name, shard, vocab_dim(t), new, fill))
        new_header[t.name] = {"dtype": t.dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    fused = [t for t in entries if t.name in plan.grow and t.name not in extra and t.name not in plan.base_rows]
    with ThreadPoolExecutor(max_workers=1) as pool, open(src_path, "rb") as src, open(dst, "wb", buffering=0) as out:
        # the means of the fused tensors are taken from the page cache while the kernel copies every tensor
        means = {t.name: pool.submit(mean_row, src_path, t, plan.trained_rows or vocab_dim(t)) for t in fused}
        head = header_bytes(new_header)
        write_all(out, head)
        for t in entries:
            at, (begin, end) = len(head) + starts[t.name], t.span
            file_copy.copy_range(src, out, begin, end - begin, at)
            if t.name in extra:
                write_all(out, extra[t.name], at + end - begin)
        for t in entries:  # rows given back from the base: its bytes past the fine-tune's rows, by the kernel
            if t.name in plan.base_rows:
                _copy_base_rows(plan, t, out, len(head) + starts[t.name] + t.span[1] - t.span[0])
        for t in fused:  # the new rows, after the old ones (the tensors behind them are already in place)
            row = repeated_row(means[t.name].result(), t, plan.grow[t.name] - vocab_dim(t))
            begin, end = t.span
            write_all(out, row, len(head) + starts[t.name] + end - begin)
        for t in entries:
            if t.name in reinit:
                write_rows(out.fileno(), len(head) + starts[t.name], t, plan.reinit[t.name], reinit[t.name])
    return grown


def base_row_range(plan: CheckpointRepair, t: TensorInfo) -> tuple[Path, int, int]:
    """The base's weight file, the offset and the length of the rows ``t`` gets back from it (rows
    ``vocab_dim(t)`` up to the plan's, contiguous in the base's row-major matrix)."""
    source = plan.base_rows[t.name]
    if plan.grow[t.name] != vocab_dim(source.info):  # the plan settles it (fix.plan._settle_base_rows)
        raise AssertionError(f"{t.name} grows to {plan.grow[t.name]} rows, its base has {vocab_dim(source.info)}")
    row = source.info.nbytes // max(vocab_dim(source.info), 1)
    begin, _end = source.info.span
    return source.path, begin + vocab_dim(t) * row, (plan.grow[t.name] - vocab_dim(t)) * row


def _copy_base_rows(plan: CheckpointRepair, t: TensorInfo, out: Any, at: int) -> None:
    path, offset, length = base_row_range(plan, t)
    with open(path, "rb") as base:
        file_copy.copy_range(base, out, offset, length, at)


def write_surgical(facts: Facts, dst: Path, plan: CheckpointRepair,
                   written: Callable[[Path], None] | None = None, copied: set[str] | None = None) -> list[GrownTensor]:
    """Write the whole checkpoint to ``dst``: rewritten shards, a fixed index, everything else copied
    (except the relative paths in ``copied``, already there: see fix/early.py).

    The untouched files and each rewritten shard are written by two threads at once (the kernel copies
    with the GIL released); ``written(path)`` is called for each finished weight file."""
    src = facts.model_dir
    tensors = facts.tensors
    changed = [*plan.grow, *plan.reinit]
    shards_to_rewrite = {tensors.tensors[name].file for name in changed} if tensors else set()
    skip = set(shards_to_rewrite) | plan.edited_files | (copied or set())
    if plan.grow and tensors and tensors.index_file:
        skip.add(tensors.index_file)
    done = written or (lambda _path: None)

    def rewrite(shard: str) -> list[GrownTensor]:
        grown = rewrite_shard(facts, shard, dst / shard, plan)
        done(dst / shard)
        return grown

    with ThreadPoolExecutor(max_workers=2) as pool:
        copies = pool.submit(copy_tree, src, dst, skip, written)
        rewrites = [pool.submit(rewrite, shard) for shard in sorted(shards_to_rewrite)]
        copies.result()
        grown = [g for job in rewrites for g in job.result()]
    if plan.grow and tensors and tensors.index_file == SAFETENSORS_INDEX:
        _rewrite_index(src / SAFETENSORS_INDEX, dst / SAFETENSORS_INDEX, facts, grown)
    return grown


def _rewrite_index(src: Path, dst: Path, facts: Facts, grown: list[GrownTensor]) -> None:
    data = json.loads(src.read_text(encoding="utf-8"))
    tensors = facts.required_tensors().tensors
    total = sum(t.nbytes for t in tensors.values())
    for g in grown:
        t = tensors[g.name]
        total += (g.new - g.old) * (t.nbytes // max(vocab_dim(t), 1))
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    meta["total_size"] = total
    data["metadata"] = meta
    dst.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")


def copy_tree(src: Path, dst: Path, skip: set[str], written: Callable[[Path], None] | None = None) -> None:
    """Copy every file under ``src`` to ``dst`` byte for byte, except the relative paths in ``skip``;
    ``written(path)`` is called for each copied file of 1 MB or more."""
    from ..facts.tree import SKIPPED_DIRS, regular_file_inside

    dst.mkdir(parents=True, exist_ok=True)
    for root, dirs, files in os.walk(src):  # links to folders are not followed
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        for name in files:
            path = Path(root) / name
            rel = path.relative_to(src).as_posix()
            if rel in skip:
                continue
            file_copy.copy_file(regular_file_inside(path, src), dst / rel)  # never a link out, never /dev/zero
            if written is not None and (dst / rel).stat().st_size >= 2**20:
                written(dst / rel)

"""``check FT --base BASE --weights``: the fine-tune's embedding rows against the base's, reading only the rows
that answer the question (memory-mapped byte ranges of both safetensors files, ``io.rows``).

- New tokens placed in the base's padding rows (ids at or past ``len(base tokenizer)`` but below the base's
  row count) whose fine-tune row is still, bit for bit, the base's row there: the padding row the base never
  trained, now a real token's embedding.
- Old tokens' rows (ids below ``len(base tokenizer)``) that changed while the rest of the matrix did not: a
  resize that only had to add rows touched old ones. A fine-tune that trained the embeddings changes most of
  them, so this is asked only where the matrix was evidently kept (most compared rows are identical).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.findings import Skipped
from ..facts import Facts
from ..facts.weight_formats.registry import format_of
from ..io.rows import RowReader, supported
from ..io.safetensors_header import TensorInfo

MAX_NEW = 65536  # new-token rows compared per matrix (every new token of any real fine-tune)
MAX_OLD = 8192  # old-token rows compared per matrix: evenly spaced, plus the last ones before the new tokens
OLD_TAIL = 512
KEPT = 0.9  # a matrix whose compared old rows are at least this share identical was kept, not trained


@dataclass(frozen=True)
class RowSide:
    """One matrix ("input" or "output") of the pair, compared row by row."""

    name: str
    file: str  # the fine-tune's safetensors file
    tensor: str
    base_file: str
    base_tensor: str
    padding_copies: tuple[int, ...] = ()  # new-token ids whose row is still the base's padding row
    new_in_padding: int = 0  # new-token ids that fall in the base's padding rows (compared)
    old_compared: int = 0
    old_changed: tuple[int, ...] = ()  # only where the matrix was kept (KEPT) and they are one misplaced block


@dataclass(frozen=True)
class BaseRows:
    """Both matrices of the pair; ``base_len`` is ``len(base tokenizer)``, ``base_rows`` the base's rows."""

    sides: tuple[RowSide, ...]
    base_len: int
    base_rows: int
    base_ref: str


def _same_rows(a: RowReader, b: RowReader, ids: np.ndarray) -> np.ndarray:
    """Per id: whether the two matrices hold the same values in that row (float32 values: a bf16 base and an
    fp32 fine-tune compare equal where the widening is exact)."""
    out = np.zeros(len(ids), bool)
    at = 0
    for (_part, _bits, ours), (_p, _b, theirs) in zip(a.take(ids), b.take(ids)):
        out[at : at + len(ours)] = np.all(ours == theirs, axis=1)
        at += len(ours)
    return out


def _old_sample(base_len: int) -> np.ndarray:
    if base_len <= MAX_OLD + OLD_TAIL:
        return np.arange(base_len, dtype=np.int64)
    spaced = np.linspace(0, base_len - OLD_TAIL - 1, MAX_OLD).astype(np.int64)
    return np.unique(np.concatenate([spaced, np.arange(base_len - OLD_TAIL, base_len, dtype=np.int64)]))


def compare_rows(target: Facts, base: Facts, base_ref: str) -> tuple[BaseRows | None, list[Skipped]]:
    """The pair's rows compared, or None with why (a side without readable safetensors rows, no tokenizer)."""
    why = _unreadable(target, "the fine-tune") or _unreadable(base, f"the base {base_ref}")
    if why is not None:
        return None, [Skipped("base rows", why)]
    assert target.embeddings is not None and base.embeddings is not None
    assert target.tokenizer is not None and base.tokenizer is not None
    assert target.embeddings.input is not None and base.embeddings.input is not None
    base_len, base_rows = base.tokenizer.length, base.embeddings.input.shape[0]
    ids = np.asarray(target.tokenizer.ids, dtype=np.int64)
    pairs: list[tuple[str, TensorInfo, TensorInfo]] = [("input", target.embeddings.input, base.embeddings.input)]
    if (not target.embeddings.tied and target.embeddings.output is not None and not base.embeddings.tied
            and base.embeddings.output is not None):
        pairs.append(("output", target.embeddings.output, base.embeddings.output))
    sides, skipped = [], []
    for name, ours, theirs in pairs:
        problem = supported(ours) or supported(theirs)
        if problem is not None:
            skipped.append(Skipped(f"base rows ({name} embeddings)", problem))
            continue
        if len(ours.shape) != 2 or len(theirs.shape) != 2 or ours.shape[1] != theirs.shape[1]:
            skipped.append(Skipped(f"base rows ({name} embeddings)", f"{ours.name} is {list(ours.shape)} and the "
                                   f"base's {theirs.name} is {list(theirs.shape)}: no rows to compare"))
            continue
        a, b = RowReader(target.model_dir, ours), RowReader(base.model_dir, theirs)
        limit = min(a.rows, b.rows)
        new = ids[(ids >= base_len) & (ids < limit)][:MAX_NEW]
        copies = new[_same_rows(a, b, new)] if len(new) else new
        old = _old_sample(min(base_len, limit))
        same = _same_rows(a, b, old) if len(old) else np.zeros(0, bool)
        added = int((ids >= base_len).sum())  # the fine-tune's tokens past the base's, whatever rows they have
        kept = len(old) > 0 and same.mean() >= KEPT and added > 0
        changed = old[~same] if kept else np.zeros(0, np.int64)
        if not _misplaced_block(changed, added):
            changed = np.zeros(0, np.int64)  # rows trained on the data's tokens, not a resize's misplaced write
        sides.append(RowSide(name, ours.file, ours.name, theirs.file, theirs.name, tuple(copies.tolist()),
                             len(new), len(old), tuple(changed.tolist())))
    if not sides:
        return None, skipped
    return BaseRows(tuple(sides), base_len, base_rows, base_ref), skipped


def _misplaced_block(changed: np.ndarray, added: int) -> bool:
    """Whether the old rows that changed are what a resize writing at the wrong offset leaves: one run of
    consecutive ids, no longer than the tokens added. A fine-tune that trained its untied input embeddings
    leaves the rows of exactly the tokens its data holds changed (AdamW leaves a row without gradient bit for
    bit as it was, and the Trainer's weight decay is 0 by default): scattered ids, which this is not."""
    return 0 < len(changed) <= added and bool(np.all(np.diff(changed) == 1))


def _unreadable(facts: Facts, who: str) -> str | None:
    if facts.tokenizer is None:
        return f"{who} has no tokenizer"
    emb, tensors = facts.embeddings, facts.tensors
    if tensors is None or emb is None or emb.input is None:
        return f"{who}: " + (facts.missing.get("input_embedding") or facts.missing.get("tensors", "no weights"))
    rows = format_of(tensors).rows_unreadable(tensors)
    return f"{who}: {rows}" if rows is not None else None


__all__ = ["BaseRows", "RowSide", "compare_rows"]

"""HVA58x: the data against the rows fine-tuning can change (``--weights`` and ``--dataset`` together)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.findings import Location, Severity
from ..dataset.checks import WATCHED
from .registry import Hit, Scope, rule

if TYPE_CHECKING:
    from ..dataset.scan import DatasetFacts

SIDE_WORDS = {"input": "input embedding", "output": "lm_head"}


@dataclass(frozen=True)
class _Use:
    """Where the data uses one watched id: its count and its first located use."""

    count: int
    source: str
    split: str
    column: str
    row: int | None
    position: int | None


def _uses(df: DatasetFacts) -> dict[int, _Use]:
    """id -> its uses over every split and column (counts from each violation's per-value counter, or from its
    located values once the counter was dropped); the first use by (source, split, row, position)."""
    out: dict[int, _Use] = {}
    for (source, split, column, check), v in sorted(df.summary.violations.items(), key=lambda kv: kv[0]):
        if check != WATCHED:
            continue
        counts: dict[int, int] = {}
        if v.top is not None:
            counts = {int(k): c for k, c in v.top.items()}
        else:
            for _row, _pos, value in v.locations:
                counts[int(value)] = counts.get(int(value), 0) + 1
        for token_id, count in counts.items():
            first = next(((r, p) for r, p, value in v.locations if value == token_id), (None, None))
            old = out.get(token_id)
            if old is None:
                out[token_id] = _Use(count, source, split, column, *first)
            elif old.row is None and first[0] is not None:
                out[token_id] = _Use(old.count + count, source, split, column, *first)
            else:
                out[token_id] = _Use(old.count + count, old.source, old.split, old.column, old.row, old.position)
    return out


@rule("HVA580", "dataset-uses-frozen-untrained-row", Severity.ERROR, scope=Scope.DATASET)
def dataset_uses_frozen_untrained_row(df: DatasetFacts) -> Iterator[Hit]:
    """The data uses a token whose embedding or lm_head row is untrained, and the adapter leaves that row frozen.

    Why:
    A PEFT adapter trains its own factors and freezes the base: an untrained row (all zero, or the mean of the
    others left by `resize_token_embeddings`, as found by `--weights`) of a token the data uses is read at
    every step and never updated. The model never learns the token; a chat marker of a base model (Llama-3's
    `<|eot_id|>` under the instruct template) gives the NaN or exploding losses that unsloth's "Untrained
    tokens ... causing NaNs" check refuses (unsloth #1258, axolotl #2122). Checked with `--weights` and
    `--dataset` on an adapter target: a row is trainable when `modules_to_save` or LoRA's `target_modules`
    names its module (as peft matches them), or `trainable_token_indices` holds the id. A full fine-tune
    (no adapter) trains every row and is not checked. HVA601 still warns about the row itself.

    Fix:
    Train the rows: add the embedding (and the lm_head) to `modules_to_save` (e.g. `["embed_tokens",
    "lm_head"]`), or list the ids in `trainable_token_indices`; or initialise them to the mean of the trained
    rows (`check BASE --weights --fix --unsafe-fixes`) before training; or keep the token out of the data.
    """
    frozen = df.frozen
    if frozen is None or not frozen.rows:
        return
    rows = frozen.by_id()
    for token_id, use in sorted(_uses(df).items()):
        row = rows.get(token_id)
        if row is None:
            continue
        roles = [r for r in row.roles if r != "reserved"] or list(row.roles)
        named = f"{row.token!r} (id {token_id}{', ' + ', '.join(roles) if roles else ''})"
        at = f"split {use.split!r} column {use.column!r}" + (
            f" row {use.row}" + (f" position {use.position}" if use.position is not None else "")
            if use.row is not None else "")
        sides = "; ".join(f"its {SIDE_WORDS.get(s.side, s.side)} row {s.what}" for s in row.sides)
        first = row.sides[0]
        yield Hit(
            f"{named} is used {use.count} time(s) in the data (first at {at}), but {sides}, and the adapter "
            f"never trains it ({frozen.trains})",
            Location(file=first.file, tensor=first.tensor, token=row.token, token_id=token_id, split=use.split,
                     column=use.column, row=use.row, position=use.position),
            details={"token_id": token_id, "uses": use.count, "source": use.source, "roles": list(row.roles),
                     "sides": {s.side: {"tensor": s.tensor, "row": s.what} for s in row.sides},
                     "adapter_trains": frozen.trains},
        )

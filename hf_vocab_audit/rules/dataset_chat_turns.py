"""HVA501 in a rendered chat row: each located id named with its turn and token."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .dataset_hits import dataset_hit, embedding_name
from .registry import Hit

if TYPE_CHECKING:
    from ..dataset.scan import DatasetFacts
    from ..dataset.summary import Violation


def chat_id_hit(df: DatasetFacts, source: str, split: str, column: str, v: Violation, rows: int | None) -> Hit:
    tok = df.model.tokenizer

    def token(value: Any) -> str | None:
        return tok.id_to_token(value) if tok is not None and isinstance(value, int) else None

    def describe(row: int, pos: int | None, value: Any) -> str:
        turn = df.summary.notes.get((source, split, column, row, pos)) if pos is not None else None
        name = token(value)
        return (f" ({turn}" if turn else " (") + (", " if turn else "") + \
            (f"token {name!r} id {value})" if name is not None else f"id {value})")

    fmt = next((s.format for s in df.splits if s.source == source and s.split == split), None)
    what = (f"rendered through the chat template and tokenized to ids >= the {rows} rows of {embedding_name(df)}")
    first = v.locations[0]
    return dataset_hit(source, split, column, v, what, describe=describe, token=token(first[2]),
                       embedding_rows=rows, tokenized=True, format=fmt,
                       turns=[df.summary.notes.get((source, split, column, r, p)) if p is not None else None
                              for r, p, _ in v.locations])

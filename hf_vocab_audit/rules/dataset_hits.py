"""How a dataset scan's violations become rule hits: where, the top offending values, the first locations."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..core.findings import Location
from .registry import Hit

if TYPE_CHECKING:
    from ..dataset.scan import DatasetFacts
    from ..dataset.summary import Violation

TOP = 5  # offending values named in a message


def where(split: str, column: str) -> str:
    return f"split {split!r} column {column!r}"


def top_values(v: Violation) -> list[tuple[Any, int]]:
    if not v.top:
        return []
    return sorted(v.top.items(), key=lambda kv: (-kv[1], str(kv[0])))[:TOP]


def first_locations(v: Violation, describe: Callable[[int, int | None, Any], str] | None = None) -> str:
    parts = []
    for row, pos, value in v.locations:
        at = f"row {row}" + (f" position {pos}" if pos is not None else "")
        parts.append(at + (describe(row, pos, value) if describe is not None
                           else f" (value {value})" if value is not None else ""))
    return "; ".join(parts)


def violation_details(v: Violation, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "values": v.values,
        "rows": v.rows,
        "locations": [{"row": r, "position": p, "value": val} for r, p, val in v.locations],
        "top_values": [{"value": val, "count": c} for val, c in top_values(v)],
    }
    out.update(extra)
    return out


def dataset_hit(source: str, split: str, column: str, v: Violation, what: str, hint: str | None = None,
                describe: Callable[[int, int | None, Any], str] | None = None, token: str | None = None,
                **extra: Any) -> Hit:
    """One finding: counts, the first exact locations, and the top offending values.

    ``describe`` words a location's value (a rendered chat row names its turn and token); ``token`` names
    the first location's token in the Location."""
    top = top_values(v)
    tops = ", ".join(f"{val} (x{c})" for val, c in top)
    row, pos, first = v.locations[0]
    message = (f"{where(split, column)}: {v.values} value(s) in {v.rows} row(s) {what}; first at "
               f"{first_locations(v, describe)}" + (f"; top values: {tops}" if tops else ""))
    return Hit(message, Location(file=source, split=split, column=column, row=row, position=pos, token=token,
                                 token_id=first if token is not None and isinstance(first, int) else None),
               hint=hint, details=violation_details(v, **extra))


def each_violation(df: DatasetFacts, check: str) -> Iterator[tuple[str, str, str, Violation]]:
    for (source, split, column, c), v in sorted(df.summary.violations.items(), key=lambda kv: kv[0]):
        if c == check:
            yield source, split, column, v


def column_role(df: DatasetFacts, source: str, split: str, column: str) -> str | None:
    for s in df.splits:
        if s.source == source and s.split == split:
            for p in s.columns:
                if p.name == column:
                    return p.role
    return None


def embedding_name(df: DatasetFacts) -> str:
    emb = df.model.embeddings
    return emb.input.name if emb and emb.input else "config.json vocab_size"

"""What an audit examined, and what it did not: the report's coverage record.

A CI gate is trusted for its PASS, so a report must say what that PASS covered: which tokenizer ids,
which tensors were taken as which table, which config keys, and for every dataset split how many rows and
tokens of which columns were checked. Anything the selected rules needed but could not examine is a
:class:`Gap`; a gap fails the gate (exit 2) unless the user accepts a partial audit (``--allow-partial``),
and then the verdict says PARTIAL, not PASS (:func:`hf_vocab_audit.core.outcome.decide`).

Plain frozen data with a JSON form (``core.codec``) that round-trips (``Coverage.from_dict(c.to_dict()) == c``),
so every renderer works from the report alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .codec import JsonForm, Shape, if_none, wire


@dataclass(frozen=True)
class Gap(JsonForm):
    """Something the selected rules needed that was not examined: ``what``, ``why``, and the rules it kept
    from running (empty for a dataset column, which no single rule owns)."""

    what: str
    reason: str
    rules: tuple[str, ...] = ()
    hint: str | None = field(default=None, metadata=wire(omit=if_none))  # how to cover it (a flag, a file to add)


@dataclass(frozen=True)
class TokenizerCoverage(JsonForm):
    """The tokenizer as examined: every id up to ``max_id`` (``ids`` of them), its added and special tokens
    and the chat template's control strings."""

    source: str  # the file or object it was read from
    ids: int
    max_id: int | None
    added: int
    special: int
    template_markers: int | None  # control strings of the chat template encoded; None: no template


@dataclass(frozen=True)
class TensorRole(JsonForm):
    """One tensor taken as a table the rules check: its role ("input embedding", "lm_head", "position
    table", ...), its name, file and rows."""

    role: str
    name: str
    rows: int | None
    file: str | None = None


@dataclass(frozen=True)
class ColumnCoverage(JsonForm):
    """One dataset column as scanned: its role and how many rows and values (ids or tokens) were checked."""

    name: str
    role: str
    rows: int
    values: int


@dataclass(frozen=True)
class SplitCoverage(JsonForm):
    """One dataset split: rows read (``truncated`` when ``--max-rows`` stopped the scan), the columns checked,
    the columns left alone with the reason, and the format the rows were read in."""

    source: str
    split: str
    rows: int
    truncated: bool
    columns: tuple[ColumnCoverage, ...]
    not_checked: tuple[tuple[str, str], ...] = field(default=(), metadata=wire(record=("column", "reason")))
    format: str | None = None
    _codec = Shape(order=("source", "split", "rows", "truncated", "tokens", "format", "columns", "not_checked"),
                   computed={"tokens": "tokens"})

    @property
    def tokens(self) -> int:
        return sum(c.values for c in self.columns if c.role in ("text", "input_ids", "chat"))


@dataclass(frozen=True)
class Coverage(JsonForm):
    """What one audit examined (tokenizer, tensors by role, config keys, dataset splits, rules) and the
    gaps: what the selected rules needed and did not get."""

    tokenizer: TokenizerCoverage | None = None
    tensors: tuple[TensorRole, ...] = ()
    tensors_read: int = 0  # tensor headers read (names, dtypes, shapes)
    config_keys: tuple[str, ...] = ()
    datasets: tuple[SplitCoverage, ...] = ()
    rules_run: int = 0
    rules_selected: int = 0
    not_examined: tuple[Gap, ...] = ()

    @property
    def partial(self) -> bool:
        return bool(self.not_examined)

    def summary_lines(self) -> list[str]:
        """Two or three short lines: what was examined, the data scanned, what was not (text, markdown)."""
        parts = []
        if self.tokenizer is not None:
            t = self.tokenizer
            markers = f", {t.template_markers} template marker(s)" if t.template_markers else ""
            parts.append(f"tokenizer {t.ids} ids ({t.added} added, {t.special} special{markers})")
        else:
            parts.append("no tokenizer")
        if self.tensors:
            roles = ", ".join(r.role + (f" {r.rows} rows" if r.rows is not None else "") for r in self.tensors)
            parts.append(f"{self.tensors_read} tensor(s): {roles}")
        else:
            parts.append(f"{self.tensors_read} tensor(s), no vocabulary table recognised")
        parts.append(f"{len(self.config_keys)} config key(s)")
        lines = [f"examined: {'; '.join(parts)}; {self.rules_run}/{self.rules_selected} rules ran"]
        if self.datasets:
            splits = []
            for s in self.datasets:
                cols = ", ".join(f"{c.name} ({c.role})" for c in s.columns) or "no column"
                more = "+" if s.truncated else ""
                fmt = f" [{s.format}]" if s.format else ""
                splits.append(f"{s.source}:{s.split}{fmt} {s.rows}{more} row(s), {s.tokens} token(s): {cols}")
            lines.append("scanned: " + "; ".join(splits))
        if self.not_examined:
            lines.append("NOT examined: " + "; ".join(f"{g.what} ({g.reason})" for g in self.not_examined))
        return lines

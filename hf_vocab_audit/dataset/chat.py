"""One batch of a chat or instruction split: rendered as TRL renders it, its ids through the scan kernel,
and the chat checks (rows the template refuses, empty assistant masks, completions cut away by
truncation, prompts that are not a prefix, turns whose end is never learned).

``summarize`` is the kernel's entry point for every engine: a split without a chat format goes to
:func:`kernel.summarize` unchanged; a chat split's other columns do too, and its rendered sequences are
checked as ``input_ids`` columns named after the sequence (``messages``, ``completion``, ``chosen``,
``rejected``), so HVA501/HVA504/HVA505 fire on them with the row and position, and the turn of each
located id is recorded in ``Summary.notes``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa

from .arrays import row_violation, violation
from .chat_budget import RowMeter, input_chars, over_budget_message, split_spend
from .chat_content import content_violations
from .chat_render import RenderedRow, Renderer, Sequence, prepare, render_text
from .checks import (
    CHAT_EOS_NOT_LEARNED,
    CHAT_MASK_EMPTY,
    CHAT_NOT_PREFIX,
    CHAT_NOT_RENDERED,
    CHAT_OVER_BUDGET,
    CHAT_REFUSED,
    CHAT_TRUNCATED,
    ID_TOO_LARGE,
    INPUT_IDS,
    TEXT_TOO_LONG,
)
from .kernel import summarize as kernel_summarize
from .summary import ColumnRole, ScanContext, Summary, merge

SEQUENCE_NAMES = ("messages", "completion", "chosen", "rejected")


def sequence_columns(renderer: Renderer) -> tuple[str, ...]:
    """The names the rendered sequences are reported under."""
    fmt = renderer.fmt
    if fmt.kind == "language-modeling":
        return (fmt.messages or "messages",)
    if fmt.kind == "preference":
        return ("chosen", "rejected")
    return ("completion",)


def summarize(batch: pa.Table | pa.RecordBatch, row_offset: int, ctx: ScanContext) -> Summary:
    """The kernel's summary of ``batch``, with a chat split's rows rendered and checked first."""
    renderer: Renderer | None = ctx.chat
    if renderer is None:
        return kernel_summarize(batch, row_offset, ctx)
    rows = batch.select([c for c in renderer.fmt.columns if c in batch.column_names]).to_pylist()
    rendered = prepare(renderer, rows, ctx.tokenizer, ctx.tokenizer_file or ctx.source)
    plain = kernel_summarize(batch, row_offset, ctx) if ctx.columns else Summary(
        {(ctx.source, ctx.split): batch.num_rows})
    chat = _chat_summary(renderer, rendered, row_offset, ctx)
    if renderer.media is not None:  # a vision split: placeholders against media, expanded lengths (chat_media)
        from .chat_media import media_violations

        media = media_violations(renderer, batch, rendered, sequence_columns(renderer)[0], row_offset, ctx)
        chat = replace(chat, violations={**chat.violations, **media})
    return merge(plain, chat)


def _ids_table(names: tuple[str, ...], rendered: list[RenderedRow]) -> pa.Table:
    columns = {}
    for name in names:
        columns[name] = pa.array([r.sequences[name].ids if name in r.sequences else [] for r in rendered],
                                 type=pa.list_(pa.int64()))
    return pa.table(columns)


def _chat_summary(r: Renderer, rendered: list[RenderedRow], row_offset: int, ctx: ScanContext) -> Summary:
    names = sequence_columns(r)
    table = _ids_table(names, rendered)
    kctx = replace(ctx, columns=tuple(ColumnRole(n, INPUT_IDS) for n in names), chat=None,
                   limits=replace(ctx.limits, eos_id=None))  # TRL's labels keep eos: the pad == eos check is below
    ids_summary = kernel_summarize(table, row_offset, kctx)
    violations = dict(ids_summary.violations)
    n = ctx.max_locations

    def add(column: str, check: str, v: Any) -> None:
        if v is not None:
            violations[(ctx.source, ctx.split, column, check)] = v

    too_long = np.array([row.too_long for row in rendered], dtype=np.int64)
    if too_long.any():
        add(names[0], TEXT_TOO_LONG, row_violation(too_long > 0, too_long, row_offset, n))
    errors = np.array([row.error is not None for row in rendered], dtype=bool)
    if errors.any():
        messages = np.array([row.error or "" for row in rendered], dtype=object)
        add(names[0], CHAT_REFUSED, row_violation(errors, messages, row_offset, n))
    over = np.array([row.over_budget is not None for row in rendered], dtype=bool)
    if over.any():
        what = np.array([row.over_budget or "" for row in rendered], dtype=object)
        add(names[0], CHAT_OVER_BUDGET, row_violation(over, what, row_offset, n))
    skipped = np.array([row.not_rendered for row in rendered], dtype=bool)
    if skipped.any():
        add(names[0], CHAT_NOT_RENDERED, row_violation(skipped, np.zeros(len(rendered), dtype=np.int64), row_offset, n))
    for name in names:
        seqs = [row.sequences.get(name) for row in rendered]
        _sequence_checks(r, name, seqs, row_offset, n, add)
    bos = r.special.get("bos_token")
    bos_id = ctx.tokenizer.token_to_id(bos) if bos and ctx.tokenizer is not None else None
    for column, check, v in content_violations(r, names, rendered, bos_id, row_offset, n):  # HVA556, HVA557
        add(column, check, v)
    notes = _turn_notes(r, rendered, violations, row_offset, ctx)
    rows_summary = Summary({(ctx.source, ctx.split): 0}, ids_summary.stats, violations, notes)
    return rows_summary


def _sequence_checks(r: Renderer, name: str, seqs: list[Sequence | None], row_offset: int, n: int,
                     add: Any) -> None:
    count = len(seqs)
    empty_mask = np.zeros(count, dtype=bool)
    dropped = np.zeros(count, dtype=bool)
    not_prefix = np.zeros(count, dtype=bool)
    no_stop = np.zeros(count, dtype=bool)
    lengths = np.zeros(count, dtype=np.int64)
    cut = np.zeros(count, dtype=np.int64)
    last = np.full(count, -1, dtype=np.int64)
    for i, seq in enumerate(seqs):
        if seq is None:
            continue
        lengths[i] = len(seq.ids)
        if r.settings.assistant_only_loss and r.fmt.kind in ("language-modeling", "prompt-completion") \
                and seq.truncated_from == 0 and not seq.any_loss():
            empty_mask[i] = True
            continue
        if seq.dropped:
            dropped[i] = True
            cut[i] = seq.truncated_from
            continue
        if seq.prompt_ids_len > seq.prompt_len:
            not_prefix[i] = True
        stop = _last_span_has_stop(seq, r.stop_ids)
        if stop is not None:
            no_stop[i] = True
            last[i] = stop
    add(name, CHAT_MASK_EMPTY, row_violation(empty_mask, lengths, row_offset, n))
    add(name, CHAT_TRUNCATED, row_violation(dropped, cut, row_offset, n))
    prompt_gap = np.array([(s.prompt_ids_len - s.prompt_len) if s is not None else 0 for s in seqs], dtype=np.int64)
    add(name, CHAT_NOT_PREFIX, row_violation(not_prefix, prompt_gap, row_offset, n))
    add(name, CHAT_EOS_NOT_LEARNED, row_violation(no_stop, last, row_offset, n))


def _last_span_has_stop(seq: Sequence, stop_ids: frozenset[int]) -> int | None:
    """None when the last run of tokens that get a loss holds an end-of-turn token (eos or a template
    control token); else the last token with a loss (the model is never trained to stop there)."""
    if not stop_ids:
        return None
    ids = seq.ids
    if seq.mask is None:  # every token from loss_start on: one run to the end
        if seq.loss_start >= len(ids) or not stop_ids.isdisjoint(ids[seq.loss_start:]):
            return None
        return ids[-1]
    mask = seq.mask
    end = len(mask)
    while end > seq.loss_start and not mask[end - 1]:
        end -= 1
    if end <= seq.loss_start:
        return None
    start = end
    while start > seq.loss_start and mask[start - 1]:
        start -= 1
    if not stop_ids.isdisjoint(ids[start:end]):
        return None
    return ids[end - 1]


def _turn_notes(r: Renderer, rendered: list[RenderedRow], violations: dict, row_offset: int,
                ctx: ScanContext) -> dict[tuple[str, str, str, int, int], str]:
    """For each located out-of-range id, the turn it belongs to (rendering the conversation turn by turn)."""
    notes: dict[tuple[str, str, str, int, int], str] = {}
    for (source, split, column, check), v in violations.items():
        if check != ID_TOO_LARGE:
            continue
        for row, position, _ in v.locations:
            if row - row_offset < 0 or row - row_offset >= len(rendered) or position is None:
                continue
            seq = rendered[row - row_offset].sequences.get(column)
            if seq is not None:
                notes[(source, split, column, row, position)] = describe_turn(r, seq, position, ctx.tokenizer)
    return notes


def describe_turn(r: Renderer, seq: Sequence, position: int, tokenizer: Any) -> str:
    """Which turn of the row token ``position`` belongs to, as "turn 1 (assistant, completion)"."""
    if seq.turns is None:
        part = "prompt" if position < seq.prompt_len else "completion"
        if position == len(seq.ids) - 1 and r.eos_id is not None and seq.ids[position] == r.eos_id:
            part = "eos appended to the completion"
        return part
    turns = seq.turns
    lengths: dict[int, int | None] = {}  # turns rendered -> tokens (None: the template refuses that prefix)

    def tokens(k: int) -> int | None:
        if k not in lengths:
            try:
                text, _ = render_text(r, turns[:k], seq.tools, seq.kwargs)
                lengths[k] = len(tokenizer.encode(text, add_special_tokens=False).ids)
            except Exception as exc:  # noqa: BLE001 - a template may refuse a partial conversation
                if over_budget_message(exc) is not None:
                    raise
                lengths[k] = None
        return lengths[k]

    try:
        with RowMeter(split_spend(r.budget_key), lambda: input_chars(turns)):
            k = _first_prefix_past(len(turns), position, tokens)
    except Exception as exc:  # noqa: BLE001 - the budget, or what the budget stops (MemoryError, RecursionError)
        if over_budget_message(exc) is None:
            raise
        return "turn unknown (rendering the turns went past the budget)"
    if k is None:
        return "after the last turn (generation prompt or end of sequence)"
    role = turns[k - 1].get("role") if isinstance(turns[k - 1], dict) else None
    part = ", prompt" if k <= seq.prompt_turns else (", completion" if seq.prompt_turns else "")
    return f"turn {k - 1} ({role}{part})"


def _first_prefix_past(n: int, position: int, tokens: Any) -> int | None:
    """The fewest turns k (1..n) whose render has more than ``position`` tokens, skipping the prefixes the
    template refuses, as trying k = 1, 2, ... would find it, in O(log n) renders: a conversation's prefix
    renders to no more tokens than the conversation (the templates' loops render turn after turn).

    A bisection over the prefixes that render; a refused prefix is stepped over to the next one that
    renders (each probe renders once: ``tokens`` caches)."""

    def probe(k: int, hi: int) -> tuple[int, int] | None:
        """The first prefix at or after k (before hi) that renders, and its tokens."""
        while k < hi:
            length = tokens(k)
            if length is not None:
                return k, length
            k += 1
        return None

    lo, hi = 1, n + 1  # the answer, if any, is in [lo, hi)
    found: int | None = None
    while lo < hi:
        mid = (lo + hi) // 2
        hit = probe(mid, hi)
        if hit is None:  # nothing renders in [mid, hi): the answer is before mid
            hi = mid
            continue
        k, length = hit
        if length > position:
            found, hi = k, mid
        else:
            lo = k + 1
    return found


__all__ = ["SEQUENCE_NAMES", "sequence_columns", "summarize", "violation"]

"""``--show-mask N``: the first rows of a chat/instruction split as the trainer gets them, token by token,
with the tokens it computes a loss on marked (their labels are not -100).

The rows are rendered, tokenized, masked and truncated by :func:`chat_render.prepare`, the scan's own
preparation, under the settings the split is scanned with; a token is trained where ``Sequence.labels_mask``
holds it: the completion under completion-only loss, the ``{% generation %}`` spans under assistant-only loss,
every token otherwise (one row alone has no padding for the collator to mask). The rows are the split's first
batch, read when the split was opened, so every engine previews the same rows; they render under a budget of
their own (the scan's may be spent by then), at most ``MAX_PREVIEW_ROWS`` rows of at most
``MAX_PREVIEW_TOKENS`` tokens each, and each token's text at most ``MAX_TOKEN_CHARS`` characters.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pyarrow as pa

from ..core.sections import MAX_PREVIEW_ROWS, MAX_PREVIEW_TOKENS, MaskPreview, PreviewRow, PreviewToken
from .chat_budget import new_key
from .chat_render import RenderedRow, Renderer, Sequence, prepare

MAX_TOKEN_CHARS = 200  # a token's text in the preview (a vocabulary entry can be long; the report stays small)
_PARTIAL = "\ufffd"  # what decoding part of a multi-byte character gives


def mask_preview(renderer: Renderer, batch: pa.Table | None, tokenizer: Any, n: int,
                 tokenizer_file: str = "") -> MaskPreview:
    """The first ``n`` rows of ``batch`` (the split's first batch) as the trainer gets them."""
    from .chat import sequence_columns

    n = min(n, MAX_PREVIEW_ROWS)
    if batch is None or batch.num_rows == 0:
        return MaskPreview((), "the split has no rows")
    head = batch.slice(0, n).select([c for c in renderer.fmt.columns if c in batch.column_names])
    fresh = replace(renderer, budget_key=new_key())  # its own budget: the scan's may be spent on later rows
    rendered = prepare(fresh, head.to_pylist(), tokenizer, tokenizer_file)
    rows: list[PreviewRow] = []
    for i, r in enumerate(rendered):
        names = sequence_columns(renderer)
        problem = _problem(r)
        if problem is not None:
            rows.append(PreviewRow(i, names[0], (), 0, problem=problem))
            continue
        for name in names:
            seq = r.sequences.get(name)
            if seq is not None:
                rows.append(_row(i, name, seq, tokenizer))
    note = None if head.num_rows == n else (f"the preview is read from the split's first batch: {head.num_rows} "
                                             "row(s) (--batch-size)")
    return MaskPreview(tuple(rows), note)


def _problem(r: RenderedRow) -> str | None:
    if r.error is not None:
        return f"the template refuses the row: {r.error}"
    if r.over_budget is not None:
        return f"rendering the row went past the budget: {r.over_budget}"
    if r.too_long:
        return f"the rendered row is {r.too_long} characters: not tokenized"
    if r.not_rendered:
        return "not rendered: the rendering budget was spent"
    return None


def _row(i: int, name: str, seq: Sequence, tokenizer: Any) -> PreviewRow:
    ids = seq.ids[:MAX_PREVIEW_TOKENS]
    trained = seq.labels_mask[:MAX_PREVIEW_TOKENS]
    texts = token_texts(tokenizer, ids)
    tokens = tuple(PreviewToken(t if len(t) <= MAX_TOKEN_CHARS else t[:MAX_TOKEN_CHARS - 3] + "...", int(tid), bool(m))
                   for t, tid, m in zip(texts, ids, trained, strict=True))
    return PreviewRow(i, name, tokens, len(seq.ids), seq.truncated_from, seq.dropped)


def token_texts(tokenizer: Any, ids: list[int]) -> list[str]:
    """Each token's share of the decoded text: decoding ``ids[:i+1]`` and ``ids[:i]`` (from the token before
    the first one not yet given, so a leading space survives decoders that strip it at the start) and taking
    the difference. A token that ends in part of a multi-byte character gives "" and its bytes show with the
    token that completes the character (up to 4 tokens on)."""

    def decode(part: list[int]) -> str:
        return str(tokenizer.decode(part, skip_special_tokens=False)) if part else ""

    texts: list[str] = []
    start = 0  # the first token whose text is not given yet
    for i in range(len(ids)):
        ctx = max(0, start - 1)
        full = decode(ids[ctx:i + 1])
        if full.endswith(_PARTIAL) and i + 1 < len(ids) and i - start < 3:
            texts.append("")
            continue
        before = decode(ids[ctx:start])
        texts.append(full[len(before):] if full.startswith(before) else decode(ids[start:i + 1]))
        start = i + 1
    return texts

"""HVA5xx: a dataset streamed against the model (``check MODEL_DIR --dataset SPEC``).

Each check is a pure function of :class:`hf_vocab_audit.dataset.scan.DatasetFacts`: the merged scan
summary (violations with their first exact locations, per-column stats) and the model's limits.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..core.findings import Location, Severity
from ..dataset import checks as k
from .dataset_hits import column_role, dataset_hit, each_violation, embedding_name, where
from .registry import Hit, Scope, rule

if TYPE_CHECKING:
    from ..dataset.scan import DatasetFacts

@rule("HVA501", "dataset-token-id-out-of-range", Severity.ERROR, scope=Scope.DATASET)
def dataset_token_id_out_of_range(df: DatasetFacts) -> Iterator[Hit]:
    """Token ids in the dataset (id columns or tokenized text) are >= the input-embedding rows.

    Why:
    `nn.Embedding` raises `IndexError: index out of range in self` on CPU and `device-side assert
    triggered` (`srcIndex < srcSelectDimSize`) on a GPU for one such id, however rare: one bad row in
    fifty thousand is enough, and it fails only when that row's batch is reached.

    Fix:
    Re-tokenize with the model's own tokenizer, or grow the embeddings to cover every id the data holds
    (`model.resize_token_embeddings(n)` when the tokenizer is larger).
    """
    rows = df.limits.input_rows
    for source, split, column, v in each_violation(df, k.ID_TOO_LARGE):
        role = column_role(df, source, split, column)
        text = role in (k.TEXT, k.CHAT)
        if role == k.CHAT:
            from .dataset_chat_turns import chat_id_hit

            yield chat_id_hit(df, source, split, column, v, rows)
            continue
        what = (f"tokenized to ids >= the {rows} rows of {embedding_name(df)}" if text
                else f">= the {rows} rows of {embedding_name(df)}")
        yield dataset_hit(source, split, column, v, what, embedding_rows=rows, tokenized=text)


@rule("HVA502", "dataset-negative-id", Severity.ERROR, scope=Scope.DATASET)
def dataset_negative_id(df: DatasetFacts) -> Iterator[Hit]:
    """A non-label id column (input_ids, token_type_ids, attention_mask, position_ids) holds negative values.

    Why:
    `-100` is the ignore index of the loss and only valid in `labels`; `-1` is often used as padding
    by hand. Embedding lookups of a negative id raise `index out of range in self` (a device-side
    assert on a GPU).

    Fix:
    Pad input_ids with the tokenizer's `pad_token_id` (and 0 in attention_mask); put `-100` only in labels.
    """
    for source, split, column, v in each_violation(df, k.NEGATIVE):
        yield dataset_hit(source, split, column, v, "are negative (-100 is only valid in labels)")


@rule("HVA503", "dataset-token-type-out-of-range", Severity.ERROR, scope=Scope.DATASET)
def dataset_token_type_out_of_range(df: DatasetFacts) -> Iterator[Hit]:
    """token_type_ids in the dataset are >= the model's `type_vocab_size`.

    Why:
    RoBERTa-style models have one token type; data tokenized as sentence pairs by a BERT tokenizer has
    type 1, which raises `index out of range in self` (a device-side assert on a GPU).

    Fix:
    Drop the token_type_ids column (`return_token_type_ids=False`) or re-tokenize with the model's tokenizer.
    """
    n = df.limits.type_vocab_size
    for source, split, column, v in each_violation(df, k.TYPE_TOO_LARGE):
        yield dataset_hit(source, split, column, v, f">= type_vocab_size {n}", type_vocab_size=n)


@rule("HVA504", "dataset-sequence-too-long", Severity.ERROR, scope=Scope.DATASET)
def dataset_sequence_too_long(df: DatasetFacts) -> Iterator[Hit]:
    """Sequences (or position_ids) in the dataset go past the positions an absolute-position model has.

    Why:
    Learned position embeddings have one row per position: BERT fails with `The expanded size of the
    tensor (N) must match the existing size (512)`, RoBERTa with `index out of range in self`
    (a device-side assert on a GPU).

    Fix:
    Tokenize with `truncation=True, max_length=<usable positions>` or split long documents into chunks.
    """
    n = df.limits.positions
    for source, split, column, v in each_violation(df, k.TOO_LONG):
        yield dataset_hit(source, split, column, v, f"are sequences longer than the {n} usable positions "
                   "(value = length, position = first position past the limit)", usable_positions=n)
    for source, split, column, v in each_violation(df, k.POSITION_TOO_LARGE):
        yield dataset_hit(source, split, column, v, f">= the {n} usable positions", usable_positions=n)


@rule("HVA505", "dataset-sequence-beyond-rotary-positions", Severity.INFO, scope=Scope.DATASET)
def dataset_sequence_beyond_rotary(df: DatasetFacts) -> Iterator[Hit]:
    """Sequences are longer than a rotary model's `max_position_embeddings`.

    Why:
    Rotary positions do not crash past the trained length, but quality usually drops there unless the
    model was trained or scaled (rope_scaling) for it.

    Fix:
    Truncate or chunk to `max_position_embeddings`, or configure rope scaling deliberately.
    """
    n = df.limits.rotary_positions
    for source, split, column, v in each_violation(df, k.BEYOND_ROTARY):
        yield dataset_hit(source, split, column, v, f"are sequences longer than max_position_embeddings {n}",
                   max_position_embeddings=n)


# ----------------------------------------------------------------------------------- bad columns


@rule("HVA530", "dataset-column-unchecked", Severity.ERROR, scope=Scope.DATASET)
def dataset_column_unchecked(df: DatasetFacts) -> Iterator[Hit]:
    """A column the model reads (ids, labels, text by flag) has a type that cannot be checked or trained on.

    Why:
    Mixed types in a label column, nested or non-integer id lists, or numbers where text was
    expected fail in the collator or the model, and hide any out-of-range value they contain.

    Fix:
    Give the column one type: integer ids as a list per row, labels as integers (or one string type).
    """
    for s in df.splits:
        for u in s.unchecked:
            yield Hit(f"{where(s.split, u.column)} ({u.role}): not checked: {u.reason}",
                      Location(file=s.source, split=s.split, column=u.column),
                      details={"role": u.role, "reason": u.reason})


@rule("HVA531", "dataset-null-values", Severity.ERROR, scope=Scope.DATASET)
def dataset_null_values(df: DatasetFacts) -> Iterator[Hit]:
    """A checked column has missing (null) values.

    Why:
    Collators and tokenizers fail on None (`TypeError`), at the batch that holds the row.

    Fix:
    Drop or fill those rows when the dataset is built (`ds.filter(lambda x: x["col"] is not None)`).
    """
    for source, split, column, v in each_violation(df, k.NULL):
        yield dataset_hit(source, split, column, v, "are null")


@rule("HVA532", "dataset-text-too-long-to-scan", Severity.WARNING, scope=Scope.DATASET)
def dataset_text_too_long_to_scan(df: DatasetFacts) -> Iterator[Hit]:
    """A text row is longer than the scan tokenizes at once (1,000,000 characters): it was not checked.

    Why:
    Tokenizing one multi-megabyte row can make the tokenizers library abort the whole process (one
    32 MB word without spaces asks for gigabytes), so such rows are skipped and their ids unknown. A
    training script that tokenizes them meets the same cost, and any id they hold is unchecked.

    Fix:
    Split long documents into chunks before tokenizing (the usual preprocessing), or drop those rows.
    """
    from ..facts.tokenizer.bounded_calls import MAX_TEXT_CHARS

    for source, split, column, v in each_violation(df, k.TEXT_TOO_LONG):
        yield dataset_hit(source, split, column, v, f"are texts over {MAX_TEXT_CHARS:,} characters, not tokenized "
                          "(value = characters)", max_characters=MAX_TEXT_CHARS)


@rule("HVA533", "dataset-line-not-json", Severity.ERROR, scope=Scope.DATASET)
def dataset_line_not_json(df: DatasetFacts) -> Iterator[Hit]:
    """A line of a JSON Lines data file is not a JSON row: reported at its line, and the other lines are
    scanned (after 100 such lines the file is not read further, and the finding says where it stopped).

    Why:
    `load_dataset("json", ...)` refuses the whole file at the first such line (`JSON parse error`), so the
    training script stops before its first step; a truncated write, a merge marker or a stray log line is
    enough. Stopping the scan there would also hide what the rest of the file holds.

    Fix:
    Repair or drop those lines (`python -c 'import json,sys; [json.loads(l) for l in sys.stdin if l.strip()]'
    < data.jsonl` finds the first); regenerate a file cut off mid-write.
    """
    from ..io.jsonlines import MAX_BAD_LINES

    stops = {(source, split): v.locations[0][0] for source, split, _, v in each_violation(df, k.READ_STOPPED)}
    for source, split, _, v in each_violation(df, k.UNREADABLE_LINE):
        line, _, message = v.locations[0]
        shown = "; ".join(f"line {n}: {m}" for n, _, m in v.locations)
        stopped = stops.get((source, split))
        tail = (f"; reading stopped after line {stopped} ({MAX_BAD_LINES} lines that are not JSON rows): the rest "
                "of the file was not scanned") if stopped is not None else "; the other lines were scanned"
        yield Hit(f"split {split!r}: {v.values} line(s) are not JSON rows (the JSON builder refuses the file): "
                  f"{shown}{tail}", Location(file=source, split=split, line=line),
                  details={"lines": [{"line": n, "error": m} for n, _, m in v.locations], "count": v.values,
                           "stopped_after_line": stopped})

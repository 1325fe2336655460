"""HVA5xx: a dataset streamed against the model (``check MODEL_DIR --dataset SPEC``).

Each check is a pure function of :class:`hf_vocab_audit.dataset.scan.DatasetFacts`: the merged scan
summary (violations with their first exact locations, per-column stats) and the model's limits.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..dataset import checks as k
from ..findings import Location, Severity
from .registry import Hit, rule

if TYPE_CHECKING:
    from ..dataset.kernel import Violation
    from ..dataset.scan import DatasetFacts

TOP = 5  # offending values named in a message


def _where(split: str, column: str) -> str:
    return f"split {split!r} column {column!r}"


def _top(v: Violation) -> list[tuple[Any, int]]:
    if not v.top:
        return []
    return sorted(v.top.items(), key=lambda kv: (-kv[1], str(kv[0])))[:TOP]


def _locs(v: Violation) -> str:
    parts = []
    for row, pos, value in v.locations:
        at = f"row {row}" + (f" position {pos}" if pos is not None else "")
        parts.append(at + (f" (value {value})" if value is not None else ""))
    return "; ".join(parts)


def _details(v: Violation, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "values": v.values,
        "rows": v.rows,
        "locations": [{"row": r, "position": p, "value": val} for r, p, val in v.locations],
        "top_values": [{"value": val, "count": c} for val, c in _top(v)],
    }
    out.update(extra)
    return out


def _hit(source: str, split: str, column: str, v: Violation, what: str, hint: str | None = None,
         **extra: Any) -> Hit:
    """One finding: counts, the first exact locations, and the top offending values."""
    top = _top(v)
    tops = ", ".join(f"{val} (x{c})" for val, c in top)
    row, pos, _ = v.locations[0]
    message = (f"{_where(split, column)}: {v.values} value(s) in {v.rows} row(s) {what}; first at {_locs(v)}"
               + (f"; top values: {tops}" if tops else ""))
    return Hit(message, Location(file=source, split=split, column=column, row=row, position=pos), hint=hint,
               details=_details(v, **extra))


def _each(df: DatasetFacts, check: str) -> Iterator[tuple[str, str, str, Violation]]:
    for (source, split, column, c), v in sorted(df.summary.violations.items(), key=lambda kv: kv[0]):
        if c == check:
            yield source, split, column, v


def _role(df: DatasetFacts, source: str, split: str, column: str) -> str | None:
    for s in df.splits:
        if s.source == source and s.split == split:
            for p in s.columns:
                if p.name == column:
                    return p.role
    return None


def _embedding_name(df: DatasetFacts) -> str:
    emb = df.model.embeddings
    return emb.input.name if emb and emb.input else "config.json vocab_size"


@rule("HVA501", "dataset-token-id-out-of-range", Severity.ERROR, scope="dataset")
def dataset_token_id_out_of_range(df: DatasetFacts):
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
    for source, split, column, v in _each(df, k.ID_TOO_LARGE):
        text = _role(df, source, split, column) == k.TEXT
        what = (f"tokenized to ids >= the {rows} rows of {_embedding_name(df)}" if text
                else f">= the {rows} rows of {_embedding_name(df)}")
        yield _hit(source, split, column, v, what, embedding_rows=rows, tokenized=text)


@rule("HVA502", "dataset-negative-id", Severity.ERROR, scope="dataset")
def dataset_negative_id(df: DatasetFacts):
    """A non-label id column (input_ids, token_type_ids, attention_mask, position_ids) holds negative values.

    Why:
    `-100` is the ignore index of the loss and only valid in `labels`; `-1` is often used as padding
    by hand. Embedding lookups of a negative id raise `index out of range in self` (a device-side
    assert on a GPU).

    Fix:
    Pad input_ids with the tokenizer's `pad_token_id` (and 0 in attention_mask); put `-100` only in labels.
    """
    for source, split, column, v in _each(df, k.NEGATIVE):
        yield _hit(source, split, column, v, "are negative (-100 is only valid in labels)")


@rule("HVA503", "dataset-token-type-out-of-range", Severity.ERROR, scope="dataset")
def dataset_token_type_out_of_range(df: DatasetFacts):
    """token_type_ids in the dataset are >= the model's `type_vocab_size`.

    Why:
    RoBERTa-style models have one token type; data tokenized as sentence pairs by a BERT tokenizer has
    type 1, which raises `index out of range in self` (a device-side assert on a GPU).

    Fix:
    Drop the token_type_ids column (`return_token_type_ids=False`) or re-tokenize with the model's tokenizer.
    """
    n = df.limits.type_vocab_size
    for source, split, column, v in _each(df, k.TYPE_TOO_LARGE):
        yield _hit(source, split, column, v, f">= type_vocab_size {n}", type_vocab_size=n)


@rule("HVA504", "dataset-sequence-too-long", Severity.ERROR, scope="dataset")
def dataset_sequence_too_long(df: DatasetFacts):
    """Sequences (or position_ids) in the dataset go past the positions an absolute-position model has.

    Why:
    Learned position embeddings have one row per position: BERT fails with `The expanded size of the
    tensor (N) must match the existing size (512)`, RoBERTa with `index out of range in self`
    (a device-side assert on a GPU).

    Fix:
    Tokenize with `truncation=True, max_length=<usable positions>` or split long documents into chunks.
    """
    n = df.limits.positions
    for source, split, column, v in _each(df, k.TOO_LONG):
        yield _hit(source, split, column, v, f"are sequences longer than the {n} usable positions "
                   "(value = length, position = first position past the limit)", usable_positions=n)
    for source, split, column, v in _each(df, k.POSITION_TOO_LARGE):
        yield _hit(source, split, column, v, f">= the {n} usable positions", usable_positions=n)


@rule("HVA505", "dataset-sequence-beyond-rotary-positions", Severity.INFO, scope="dataset")
def dataset_sequence_beyond_rotary(df: DatasetFacts):
    """Sequences are longer than a rotary model's `max_position_embeddings`.

    Why:
    Rotary positions do not crash past the trained length, but quality usually drops there unless the
    model was trained or scaled (rope_scaling) for it.

    Fix:
    Truncate or chunk to `max_position_embeddings`, or configure rope scaling deliberately.
    """
    n = df.limits.rotary_positions
    for source, split, column, v in _each(df, k.BEYOND_ROTARY):
        yield _hit(source, split, column, v, f"are sequences longer than max_position_embeddings {n}",
                   max_position_embeddings=n)


# ------------------------------------------------------------------------------ class labels


def _label_values(df: DatasetFacts, source: str, column: str, split: str | None = None) -> dict[Any, list]:
    """value -> [count, (split, first row, first position)] over the splits of ``source`` (one split if given)."""
    out: dict[Any, list] = {}
    for (src, sp, col), stats in df.summary.stats.items():
        if src != source or col != column or (split is not None and sp != split) or not stats.uniques:
            continue
        if _role(df, src, sp, col) != k.CLASS_LABEL:
            continue
        for value, (count, row, pos) in stats.uniques.items():
            entry = out.setdefault(value, [0, (sp, row, pos)])
            entry[0] += count
    return out


def _label_columns(df: DatasetFacts) -> list[tuple[str, str]]:
    return sorted({(s.source, p.name) for s in df.splits for p in s.columns if p.role == k.CLASS_LABEL})


def _classes(values: dict[Any, list]) -> list[int]:
    return sorted(v for v in values if isinstance(v, int) and v >= 0)


def _one_based(df: DatasetFacts, source: str, column: str) -> bool:
    n = df.limits.num_labels
    classes = _classes(_label_values(df, source, column))
    return n is not None and bool(classes) and classes[0] == 1 and classes[-1] == n


@rule("HVA510", "dataset-label-out-of-range", Severity.ERROR, scope="dataset")
def dataset_label_out_of_range(df: DatasetFacts):
    """Class labels outside `0..num_labels-1` (other than the ignore index -100).

    Why:
    Cross entropy raises `IndexError: Target N is out of bounds` on CPU and `t >= 0 && t < n_classes`
    (a device-side assert) on a GPU, at the first batch that holds such a label.

    Fix:
    Encode labels as 0..num_labels-1 once, when the dataset is built, or load the model with the
    right `num_labels` (and `id2label`/`label2id`).
    """
    n = df.limits.num_labels
    for source, split, column, v in _each(df, k.LABEL_OUT_OF_RANGE):
        if _one_based(df, source, column):
            continue  # HVA511 says it better
        yield _hit(source, split, column, v, f"outside 0..{n - 1} (num_labels {n}: {df.num_labels_source})",
                   num_labels=n)


@rule("HVA511", "dataset-labels-one-based", Severity.ERROR, scope="dataset")
def dataset_labels_one_based(df: DatasetFacts):
    """Class labels run 1..num_labels instead of 0..num_labels-1 (the 1-based pattern).

    Why:
    The highest class equals num_labels, which cross entropy rejects (`Target N is out of bounds`), and
    every other class is shifted by one: the model learns the wrong names even where it does not crash.

    Fix:
    Shift once, in the dataset: `ds = ds.map(lambda x: {"label": x["label"] - 1})`.
    """
    n = df.limits.num_labels
    for source, split, column, v in _each(df, k.LABEL_OUT_OF_RANGE):
        if not _one_based(df, source, column):
            continue
        hint = f'shift the labels once in the dataset: ds.map(lambda x: {{"{column}": x["{column}"] - 1}})'
        yield _hit(source, split, column, v, f"equal to num_labels {n}: labels run 1..{n}, not 0..{n - 1}",
                   hint=hint, num_labels=n)


@rule("HVA512", "dataset-label-minus-one", Severity.ERROR, scope="dataset")
def dataset_label_minus_one(df: DatasetFacts):
    """Class labels are -1, a common marker for "unknown" or "unlabelled".

    Why:
    Cross entropy ignores only -100; -1 raises `Target -1 is out of bounds` (a device-side assert on a
    GPU). Test splits of public datasets (GLUE) use -1 for hidden labels.

    Fix:
    Drop the unlabelled rows (`ds.filter(lambda x: x["label"] != -1)`), or use -100 where a row must
    stay but contribute no loss (token classification).
    """
    for source, split, column, v in _each(df, k.LABEL_MINUS_ONE):
        if df.limits.num_labels is None:
            continue
        yield _hit(source, split, column, v, "are -1 (not the ignore index -100)")


@rule("HVA513", "dataset-label-holes", Severity.WARNING, scope="dataset")
def dataset_label_holes(df: DatasetFacts):
    """The label encoding has holes: some classes between 0 and the largest label never occur.

    Why:
    Holes usually mean an encoder fitted on another subset, labels filtered after encoding, or ids
    taken from an external table. The model still reserves a logit for each missing class.

    Fix:
    Re-encode the labels densely (`ds.class_encode_column(...)`) and set num_labels/id2label to match.
    """
    for source, column in _label_columns(df):
        values = _label_values(df, source, column)
        classes = _classes(values)
        if not classes or _one_based(df, source, column):
            continue
        missing = sorted(set(range(classes[-1] + 1)) - set(classes))
        if not missing:
            continue
        shown = ", ".join(map(str, missing[:10])) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        yield Hit(f"column {column!r}: classes {shown} never occur between 0 and the largest label {classes[-1]} "
                  f"({len(classes)} distinct classes in all splits)",
                  Location(file=source, column=column),
                  details={"missing": missing[:100], "classes": classes[:100]})


@rule("HVA514", "dataset-label-unseen-in-train", Severity.WARNING, scope="dataset")
def dataset_label_unseen_in_train(df: DatasetFacts):
    """A validation/test split has labels that never occur in the train split.

    Why:
    The classic label-encoder-fitted-on-train bug: classes first met at evaluation were encoded
    differently (or past num_labels), and the model never learned them.

    Fix:
    Build the label mapping from all splits (or a fixed list) before encoding any of them.
    """
    for source, column in _label_columns(df):
        train_splits = [s.split for s in df.splits if s.source == source and s.split == "train"]
        if not train_splits:
            continue
        train = _label_values(df, source, column, "train")
        others = sorted({s.split for s in df.splits if s.source == source and s.split != "train"})
        for split in others:
            values = _label_values(df, source, column, split)
            unseen = sorted((v for v in values if v not in train and v != k.IGNORE_INDEX), key=str)
            if not unseen:
                continue
            rows = sum(values[v][0] for v in unseen)
            first = min((values[v][1][1], values[v][1][2] or 0, v) for v in unseen)
            listed = ", ".join(f"{v!r} (x{values[v][0]}, first at row {values[v][1][1]})" for v in unseen[:TOP])
            yield Hit(
                f"{_where(split, column)}: {len(unseen)} label(s) in {rows} row(s) never occur in split 'train': "
                f"{listed}",
                Location(file=source, split=split, column=column, row=first[0]),
                details={"labels": [{"value": v, "count": values[v][0], "first_row": values[v][1][1]}
                                    for v in unseen[:100]]},
            )


@rule("HVA515", "dataset-label-not-in-label2id", Severity.ERROR, scope="dataset")
def dataset_label_not_in_label2id(df: DatasetFacts):
    """String labels that `config.label2id` does not map to a class id.

    Why:
    A string label must be encoded with the model's own mapping; a name missing from `label2id` has
    no class (a KeyError in the encoding step, or a class silently mis-encoded by an ad-hoc mapping).

    Fix:
    Add the class to `id2label`/`label2id` (and the head), or fix the spelling in the data.
    """
    label2id = df.model.config.label2id
    for source, column in _label_columns(df):
        values = _label_values(df, source, column)
        strings = [v for v in values if isinstance(v, str)]
        if not strings:
            continue
        known = label2id or {}
        missing = sorted(v for v in strings if v not in known)
        if not missing:
            continue
        first = min(values[v][1] for v in missing)
        rows = sum(values[v][0] for v in missing)
        listed = ", ".join(f"{v!r} (x{values[v][0]}, first at split {values[v][1][0]!r} row {values[v][1][1]})"
                           for v in missing[:TOP])
        where = "config.json has no label2id" if label2id is None else f"label2id has {sorted(known)[:10]}"
        yield Hit(f"column {column!r}: {len(missing)} string label(s) in {rows} row(s) missing from "
                  f"config.label2id ({where}): {listed}",
                  Location(file=source, split=first[0], column=column, row=first[1]),
                  details={"missing": missing[:100], "label2id": known})


@rule("HVA516", "dataset-label-count-mismatch", Severity.WARNING, scope="dataset")
def dataset_label_count_mismatch(df: DatasetFacts):
    """The number of classes in the data differs from the model's `num_labels`.

    Why:
    More classes than logits crash (see HVA510); fewer usually means a head sized for another dataset,
    or a config left at transformers' default `num_labels=2`.

    Fix:
    Load the model with `num_labels=<classes in the data>` and matching `id2label`/`label2id`.
    """
    n = df.limits.num_labels
    if n is None:
        return
    for source, column in _label_columns(df):
        values = _label_values(df, source, column)
        classes = [v for v in values if isinstance(v, str) or (isinstance(v, int) and v >= 0)]
        if not classes or len(classes) == n:
            continue
        shown = sorted(classes, key=str)[:10]
        yield Hit(f"column {column!r}: {len(classes)} distinct classes in the data ({shown}) but num_labels is "
                  f"{n} ({df.num_labels_source})",
                  Location(file=source, column=column),
                  details={"classes": len(classes), "num_labels": n})


# ------------------------------------------------------------------------- language-model labels


@rule("HVA520", "dataset-lm-label-out-of-range", Severity.ERROR, scope="dataset")
def dataset_lm_label_out_of_range(df: DatasetFacts):
    """Language-model `labels` hold ids >= the output-embedding (lm_head) rows, or negatives other than -100.

    Why:
    Cross entropy over the vocabulary logits raises `IndexError: Target N is out of bounds` on CPU and
    `t >= 0 && t < n_classes` (a device-side assert) on a GPU.

    Fix:
    Build labels from input_ids of the model's own tokenizer and mask with -100 only.
    """
    rows = df.limits.output_rows
    for source, split, column, v in _each(df, k.LM_LABEL_TOO_LARGE):
        yield _hit(source, split, column, v, f">= the {rows} output-embedding rows or negative other than -100",
                   output_rows=rows)


@rule("HVA521", "dataset-lm-labels-all-masked", Severity.WARNING, scope="dataset")
def dataset_lm_labels_all_masked(df: DatasetFacts):
    """Rows whose `labels` are all -100: nothing to learn from them.

    Why:
    Every target is ignored; a batch made only of such rows gives a `nan` loss. Usual causes: prompts
    longer than max_length so the completion was truncated away, or a masking template that matched
    nothing.

    Fix:
    Drop those rows (`ds.filter(lambda x: any(l != -100 for l in x["labels"]))`) or raise max_length.
    """
    for source, split, column, v in _each(df, k.ALL_MASKED):
        yield _hit(source, split, column, v, "with every label -100 (value = row length)")


@rule("HVA522", "dataset-eos-label-masked", Severity.WARNING, scope="dataset")
def dataset_eos_label_masked(df: DatasetFacts):
    """End-of-sequence tokens get no loss because pad == eos and padding is masked.

    Why:
    With `pad_token = eos_token`, collators (DataCollatorForLanguageModeling) set every pad position,
    hence every eos, to -100: the model never learns to stop (transformers #23530, trl #976).

    Fix:
    Use a distinct pad token (`tokenizer.pad_token = "<|pad|>"` or an unused reserved token), or keep the
    eos label when masking padding.
    """
    eos = df.limits.eos_id
    for source, split, column, v in _each(df, k.EOS_MASKED):
        role = _role(df, source, split, column)
        what = (f"are eos (id {eos}) labelled -100" if role == k.LM_LABELS
                else f"are eos (id {eos}) that a collator will label -100 because pad == eos")
        yield _hit(source, split, column, v, what, eos_token_id=eos)


# ----------------------------------------------------------------------------------- bad columns


@rule("HVA530", "dataset-column-unchecked", Severity.ERROR, scope="dataset")
def dataset_column_unchecked(df: DatasetFacts):
    """A column the model reads (ids, labels, text by flag) has a type that cannot be checked or trained on.

    Why:
    Mixed types in a label column, nested or non-integer id lists, or numbers where text was
    expected fail in the collator or the model, and hide any out-of-range value they contain.

    Fix:
    Give the column one type: integer ids as a list per row, labels as integers (or one string type).
    """
    for s in df.splits:
        for u in s.unchecked:
            yield Hit(f"{_where(s.split, u.column)} ({u.role}): not checked: {u.reason}",
                      Location(file=s.source, split=s.split, column=u.column),
                      details={"role": u.role, "reason": u.reason})


@rule("HVA531", "dataset-null-values", Severity.ERROR, scope="dataset")
def dataset_null_values(df: DatasetFacts):
    """A checked column has missing (null) values.

    Why:
    Collators and tokenizers fail on None (`TypeError`), at the batch that holds the row.

    Fix:
    Drop or fill those rows when the dataset is built (`ds.filter(lambda x: x["col"] is not None)`).
    """
    for source, split, column, v in _each(df, k.NULL):
        yield _hit(source, split, column, v, "are null")


@rule("HVA532", "dataset-text-too-long-to-scan", Severity.WARNING, scope="dataset")
def dataset_text_too_long_to_scan(df: DatasetFacts):
    """A text row is longer than the scan tokenizes at once (1,000,000 characters): it was not checked.

    Why:
    Tokenizing one multi-megabyte row can make the tokenizers library abort the whole process (one
    32 MB word without spaces asks for gigabytes), so such rows are skipped and their ids unknown. A
    training script that tokenizes them meets the same cost, and any id they hold is unchecked.

    Fix:
    Split long documents into chunks before tokenizing (the usual preprocessing), or drop those rows.
    """
    from ..facts.tokenizer_guard import MAX_TEXT_CHARS

    for source, split, column, v in _each(df, k.TEXT_TOO_LONG):
        yield _hit(source, split, column, v, f"are texts over {MAX_TEXT_CHARS:,} characters, not tokenized "
                   "(value = characters)", max_characters=MAX_TEXT_CHARS)

"""HVA21x: token ids and attention heads that ``generate()`` indexes with (generation ids).

Severities follow what transformers 5.24's ``generate()`` does on CPU with an out-of-range value
(the tests run it): an exception is an error, a value silently dropped or wrapped is a warning.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..core.findings import Location, Severity
from ..facts import Facts
from ..facts.generation_ids import WRAPS_WHEN_NEGATIVE, GenerationId, read_generation_ids
from ..facts.requirements import Requirement
from .registry import Hit, rule

CRASH_MESSAGE = {
    "bad_words_ids": "generate() raises ValueError",
    "sequence_bias": "generate() raises ValueError",
    "task_to_id": "generate(task=...) raises IndexError",
}


def _vocab_rows(facts: Facts) -> int:
    """Rows both the embedding lookup and the logits have: an id must be below both."""
    emb = facts.embeddings
    assert emb is not None and emb.input_rows is not None
    out = emb.output_rows
    return min(emb.input_rows, out) if out is not None else emb.input_rows


def _family(key: str) -> str:
    return key.split("[")[0].split(".")[0]


def _bad(facts: Facts) -> Iterator[tuple[GenerationId, int, bool]]:
    """(id, rows, crashes) for every generation id outside ``0..rows-1``."""
    rows = _vocab_rows(facts)
    for gid in read_generation_ids(facts.config, facts.generation).ids:
        if 0 <= gid.value < rows:
            continue
        wraps = -rows <= gid.value < 0 and _family(gid.key) in WRAPS_WHEN_NEGATIVE  # -2**63 does not wrap
        yield gid, rows, gid.effect == "crash" and not wraps


@rule("HVA210", "generation-id-out-of-range", Severity.ERROR, requires=(Requirement.INPUT_EMBEDDING,))
def generation_id_out_of_range(facts: Facts) -> Iterator[Hit]:
    """A token id that `generate()` indexes with (forced bos/eos, Whisper language/task/timestamp ids,
    forced decoder ids, bad words) has no row in the vocabulary.

    Why:
    The logits processors and Whisper's prompt builder index the scores or the embeddings with these ids:
    transformers 5 raises `IndexError` (`index 60 is out of bounds for dimension 1 with size 50`,
    `index out of range in self`; a device-side assert on a GPU) on the first `generate()` call, and
    `bad_words_ids` raises `ValueError`. Only generation_config.json is read when it exists; otherwise the
    same keys in config.json are.

    Fix:
    Point the key at the right token of this tokenizer (usually a language or task token that was renamed
    or never added), or grow the embeddings if the token is real.
    """
    for gid, rows, crashes in _bad(facts):
        if not crashes:
            continue
        effect = CRASH_MESSAGE.get(_family(gid.key), "generate() raises IndexError")
        yield Hit(
            f"{gid.file} {gid.key} = {gid.value} is outside the {rows} vocabulary rows: {effect}",
            Location(file=gid.file, key=gid.key, token_id=gid.value),
            details={"file": gid.file, "key": gid.key, "value": gid.value, "rows": rows},
        )


@rule("HVA211", "generation-id-ignored", Severity.WARNING, requires=(Requirement.INPUT_EMBEDDING,))
def generation_id_ignored(facts: Facts) -> Iterator[Hit]:
    """A `suppress_tokens` / `begin_suppress_tokens` id is outside the vocabulary (silently not suppressed),
    or a negative forced bos/eos id silently forces another token.

    Why:
    transformers 5 drops out-of-range suppress ids without a word, so the token the config meant to
    suppress is generated anyway (Whisper's timestamp and blank suppression); a negative
    `forced_bos_token_id` indexes the scores from the end and forces the last token instead.

    Fix:
    Use this tokenizer's ids (`tokenizer.convert_tokens_to_ids(...)`), or drop the entries.
    """
    for gid, rows, crashes in _bad(facts):
        if crashes:
            continue
        what = ("is negative: generate() wraps it and forces the token at row " f"{rows + gid.value}"
                if gid.value < 0 and _family(gid.key) in WRAPS_WHEN_NEGATIVE
                else "is outside the vocabulary: generate() silently does not suppress it")
        yield Hit(
            f"{gid.file} {gid.key} = {gid.value} ({rows} vocabulary rows) {what}",
            Location(file=gid.file, key=gid.key, token_id=gid.value),
            details={"file": gid.file, "key": gid.key, "value": gid.value, "rows": rows},
        )


@rule("HVA212", "generation-key-shadowed", Severity.INFO)
def generation_key_shadowed(facts: Facts) -> Iterator[Hit]:
    """config.json sets a generation key that `generate()` never reads, because generation_config.json
    exists and says otherwise.

    Why:
    transformers 5 builds the generation settings from generation_config.json alone when the file exists;
    the same key in config.json (`forced_bos_token_id`, `suppress_tokens`, ...) is ignored. Editing
    config.json then changes nothing, and the value that generation really uses is the other one.

    It is an info note, not a warning: official checkpoints (Whisper, BART) keep such leftovers in config.json,
    and what generation uses is audited by HVA210/211 in the file it really reads.

    Fix:
    Put the value in generation_config.json (and remove it from config.json to avoid the confusion).
    """
    for s in read_generation_ids(facts.config, facts.generation).shadowed:
        other = (f"generation_config.json has {s.generation_value!r}" if s.generation_value is not None
                 else "generation_config.json does not set it")
        yield Hit(
            f"config.json {s.key} = {s.config_value!r} is never read by generate(): {other}"[:500],
            Location(file="config.json", key=s.key),
            details={"key": s.key, "config_value": s.config_value, "generation_value": s.generation_value},
        )


@rule("HVA213", "alignment-heads-out-of-range", Severity.ERROR)
def alignment_heads_out_of_range(facts: Facts) -> Iterator[Hit]:
    """An `alignment_heads` entry names a decoder layer or attention head the model does not have.

    Why:
    Whisper's word-level timestamps (`generate(return_token_timestamps=True)`, the pipeline's
    `return_timestamps="word"`) read the cross-attention of these heads: a layer past `decoder_layers`
    raises `IndexError: list index out of range`, a head past `decoder_attention_heads` raises
    `IndexError: index 5 is out of bounds for dimension 1`.

    Fix:
    Use the alignment heads published for this exact checkpoint, or remove the key (no word timestamps).
    """
    gen = read_generation_ids(facts.config, facts.generation)
    raw = facts.config.raw
    layers, heads = raw.get("decoder_layers"), raw.get("decoder_attention_heads")
    for i, (layer, head) in enumerate(gen.alignment_heads):
        bad = []
        if isinstance(layers, int) and not 0 <= layer < layers:
            bad.append(f"layer {layer} (decoder_layers = {layers})")
        if isinstance(heads, int) and not 0 <= head < heads:
            bad.append(f"head {head} (decoder_attention_heads = {heads})")
        if bad:
            yield Hit(
                f"{gen.file} alignment_heads[{i}] = [{layer}, {head}] names a missing {' and '.join(bad)}: "
                "generate(return_token_timestamps=True) raises IndexError",
                Location(file=gen.file, key=f"alignment_heads[{i}]"),
                details={"layer": layer, "head": head, "decoder_layers": layers, "decoder_attention_heads": heads},
            )

"""HVA7xx: multimodal placeholders (image/video/audio token ids) and the nested text config's vocabulary.

Verdicts follow what transformers 5.24 does on CPU (the tests run the forward): Llava raises
"Image features and image tokens do not match" when the config's image id is not the token the processor
inserts, and `index out of range` for an id past the text rows; Gemma-3 `...ForConditionalGeneration`
replaces an out-of-vocabulary image id before the lookup (healthy), its text-only `...ForCausalLM` does not.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..core.findings import Location, Severity
from ..facts import Facts
from ..facts.placeholders import COUNTED, DEFAULT_TOKENS, PlaceholderId, read_placeholders, replacing_classes
from ..facts.requirements import Requirement
from .registry import Hit, rule


def _ids(facts: Facts) -> Iterator[PlaceholderId]:
    tok_folder = facts.tokenizer.folder if facts.tokenizer else None
    yield from read_placeholders(facts.model_dir, facts.config, tok_folder).ids


def _describe(facts: Facts, token_id: int) -> str:
    tok = facts.tokenizer
    assert tok is not None
    content = tok.id_to_token(token_id) if token_id >= 0 else None
    if content is None:
        return "no token"
    roles = [role for role, (c, i) in sorted(tok.special_tokens.items()) if i == token_id]
    return f"{content!r}" + (f" (the tokenizer's {'/'.join(roles)} token)" if roles else "")


@rule("HVA701", "placeholder-token-mismatch", Severity.ERROR, requires=(Requirement.TOKENIZER,))
def placeholder_token_mismatch(facts: Facts) -> Iterator[Hit]:
    """A multimodal placeholder id (`image_token_index`, `image_token_id`, `video_token_id`, ...) is not the id
    of the placeholder token the processor inserts (`<image>`), or the tokenizer lacks that token.

    Why:
    The processor expands each image into N copies of its placeholder token; the model finds them by comparing
    `input_ids` with the config's id and scatters the image features there. When the id points at another
    token (often the pad token), the counts differ and both the forward and `generate()` raise
    `ValueError: Image features and image tokens do not match, tokens: 0, features: 64`.

    Fix:
    Set the config key to `tokenizer.convert_tokens_to_ids("<image>")` (or the processor's image token), or
    add the placeholder token to the tokenizer as a special token and grow the embeddings.
    """
    tok = facts.tokenizer
    assert tok is not None
    placeholders = read_placeholders(facts.model_dir, facts.config, tok.folder)
    for p in placeholders.ids:
        if p.kind not in COUNTED:
            continue
        named = placeholders.token_for(p.kind)
        if named is not None:
            content, where = named.content, f"{named.file} {named.key}"
        else:
            default = next((c for c in DEFAULT_TOKENS[p.kind] if tok.backend.token_to_id(c) is not None), None)
            if default is None:
                continue
            content, where = default, "the tokenizer"
        expected = tok.backend.token_to_id(content)
        if expected == p.value:
            continue
        if expected is None:
            message = (f"{where} names the {p.kind} placeholder {content!r}, which the tokenizer does not have: "
                       f"the processor's text is split into pieces and {p.file} {p.key} = {p.value} never appears")
        else:
            message = (f"{p.file} {p.key} = {p.value} is {_describe(facts, p.value)}, but the {p.kind} placeholder "
                       f"{content!r} is id {expected}: the forward raises 'Image features and image tokens do not "
                       "match'")
        yield Hit(
            message,
            Location(file=p.file, key=p.key, token=content, token_id=p.value),
            details={"kind": p.kind, "key": p.key, "value": p.value, "token": content, "token_id": expected},
        )


def _out_of_range(facts: Facts) -> Iterator[tuple[PlaceholderId, int]]:
    rows = facts.input_rows
    assert rows is not None
    for p in _ids(facts):
        if not 0 <= p.value < rows:
            yield p, rows


@rule("HVA702", "placeholder-id-out-of-range", Severity.ERROR, requires=(Requirement.INPUT_EMBEDDING,))
def placeholder_id_out_of_range(facts: Facts) -> Iterator[Hit]:
    """A multimodal placeholder id has no row in the text embeddings, and the architecture looks it up.

    Why:
    Llava-style models embed every input id, placeholders included, before scattering the image features:
    an id >= the text rows raises `IndexError: index out of range in self` (a device-side assert on a GPU)
    on the first image prompt.

    Fix:
    Point the key at the placeholder token's id, or grow the embeddings so the token has a row.
    """
    replacing = replacing_classes(facts.config)
    for p, rows in _out_of_range(facts):
        if replacing is not None and p.kind == "image" and p.value >= rows:
            continue  # HVA703
        yield Hit(
            f"{p.file} {p.key} = {p.value} is outside the {rows} text embedding rows: the embedding lookup of "
            f"every {p.kind} prompt raises IndexError",
            Location(file=p.file, key=p.key, token_id=p.value),
            details={"kind": p.kind, "key": p.key, "value": p.value, "rows": rows},
        )


@rule("HVA703", "placeholder-replaced-before-lookup", Severity.WARNING, requires=(Requirement.INPUT_EMBEDDING,))
def placeholder_replaced_before_lookup(facts: Facts) -> Iterator[Hit]:
    """An image placeholder id is past the text rows in an architecture that replaces it before the lookup:
    healthy for the multimodal class, a crash for its text-only class.

    Why:
    Gemma-3 and PaliGemma `...ForConditionalGeneration` swap an out-of-vocabulary image id for a valid one
    before embedding, so images work. Loading the same weights as the text-only `...ForCausalLM` (a common way
    to fine-tune the language model alone) embeds the id as is: `IndexError: index out of range in self`.

    Fix:
    Nothing to fix for the multimodal class. For text-only use, keep image placeholders out of the text, or
    grow the embeddings to cover the id.
    """
    replacing = replacing_classes(facts.config)
    if replacing is None:
        return
    multimodal, text_only = replacing
    for p, rows in _out_of_range(facts):
        if p.kind != "image" or p.value < rows:
            continue
        yield Hit(
            f"{p.file} {p.key} = {p.value} is past the {rows} text embedding rows: {multimodal} replaces it before "
            f"the lookup (healthy), but {text_only} on the same weights raises IndexError on it",
            Location(file=p.file, key=p.key, token_id=p.value),
            details={"key": p.key, "value": p.value, "rows": rows, "multimodal_class": multimodal,
                     "text_only_class": text_only},
        )


@rule("HVA704", "text-config-vocab-size-disagreement", Severity.WARNING)
def text_config_vocab_size_disagreement(facts: Facts) -> Iterator[Hit]:
    """config.json has a top-level `vocab_size` and a nested `text_config.vocab_size` that differ.

    Why:
    transformers builds the language model, hence its embeddings and lm_head, from `text_config.vocab_size`;
    the top-level value is a leftover that code reading `config.vocab_size` (collators, custom heads, other
    tools) takes as the vocabulary and gets wrong.

    Fix:
    Make the top-level value equal to `text_config.vocab_size` (the one the model uses), or remove it.
    """
    raw, cfg = facts.config.raw, facts.config
    top, nested = raw.get("vocab_size"), cfg.vocab_size
    if cfg.text_prefix != "text_config." or not isinstance(top, int) or isinstance(top, bool) or top == nested:
        return
    rows = f" ({facts.input_rows} embedding rows)" if facts.input_rows is not None else ""
    yield Hit(
        f"config.json vocab_size = {top} but text_config.vocab_size = {nested}: the model is built from "
        f"text_config.vocab_size{rows}",
        Location(file="config.json", key="vocab_size"),
        details={"top_level": top, "text_config": nested, "rows": facts.input_rows},
    )

"""HVA8xx: a PEFT adapter against its base (``check ADAPTER_DIR [--base DIR]``).

Verdicts follow what peft 0.21 and transformers 5.24 do on CPU (the tests run them):
``PeftModel.from_pretrained`` on a base with fewer rows than the adapter saved fails with a size mismatch
and works once the base is resized to the saved rows; ``AutoPeftModelForCausalLM`` resizes the base to
``len(tokenizer)`` (only when the tokenizer is larger), which is not the saved row count after a
``pad_to_multiple_of`` resize.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..core.findings import Location, Severity
from ..facts import Facts
from ..facts.sources.adapter import AdapterFacts
from ..facts.tokenizer import TokenizerFacts
from ..facts.trainable_rows import trained_tokens
from .registry import Hit, rule

SHOW = 5


def _adapter(facts: Facts) -> tuple[AdapterFacts, int] | None:
    a, rows = facts.adapter, facts.input_rows
    return (a, rows) if a is not None and rows is not None else None


def _adapter_with_tokenizer(facts: Facts) -> tuple[AdapterFacts, TokenizerFacts, int] | None:
    """The adapter, its own tokenizer and the base's rows, when all three are known."""
    got = _adapter(facts)
    if got is None or got[0].tokenizer is None:
        return None
    return got[0], got[0].tokenizer, got[1]


def _saved_name(a: AdapterFacts) -> str:
    t = a.saved_input or a.saved_output
    assert t is not None
    return t.name


def _named(a: AdapterFacts, ids: list[int]) -> str:
    tok = a.tokenizer
    assert tok is not None
    text = ", ".join(f"{tok.id_to_token(i)!r} ({i})" for i in ids[:SHOW])
    return text + (f" and {len(ids) - SHOW} more" if len(ids) > SHOW else "")


@rule("HVA801", "adapter-base-resize-needed", Severity.WARNING)
def adapter_base_resize_needed(facts: Facts) -> Iterator[Hit]:
    """The adapter saves embedding / lm_head matrices with another row count than the base: the base must be
    resized to that count before `PeftModel.from_pretrained`.

    Why:
    peft saves the whole embedding and lm_head when the vocabulary was resized for training. Loading it onto
    the plain base raises `size mismatch for base_model.model.model.embed_tokens.weight` (RuntimeError: Error(s)
    in loading state_dict for PeftModel); after `base.resize_token_embeddings(N)` it loads.

    Fix:
    `base.resize_token_embeddings(N)` with the adapter's row count, then `PeftModel.from_pretrained(base, DIR)`.
    `AutoPeftModelForCausalLM` does it from the adapter's tokenizer when `len(tokenizer)` equals N.
    """
    got = _adapter(facts)
    if got is None:
        return
    a, rows = got
    saved = a.saved_rows
    if saved is None or saved == rows:
        return
    yield Hit(
        f"{a.weights_file} {_saved_name(a)} has {saved} rows, the base has {rows}: resize the base to {saved} rows "
        f"(base.resize_token_embeddings({saved})) before PeftModel.from_pretrained, which otherwise fails with a "
        "size mismatch",
        Location(file=a.weights_file, tensor=_saved_name(a)),
        details={"saved_rows": saved, "base_rows": rows, "resize_to": saved},
    )


@rule("HVA802", "adapter-rows-not-reproducible", Severity.ERROR)
def adapter_rows_not_reproducible(facts: Facts) -> Iterator[Hit]:
    """The adapter saved more rows than its tokenizer has tokens (a `pad_to_multiple_of` resize in training):
    resizing the base to `len(tokenizer)`, as `AutoPeftModelForCausalLM` and most scripts do, cannot load it.

    Why:
    `resize_token_embeddings(len(tokenizer), pad_to_multiple_of=8)` in training gave, e.g., 112 rows for 106
    tokens; a plain `resize_token_embeddings(len(tokenizer))` at load time gives 106, and the adapter's
    112-row matrices raise a size mismatch.

    Fix:
    Resize the base to the saved row count (`resize_token_embeddings(len(tokenizer), pad_to_multiple_of=8)`,
    or the number directly) before `PeftModel.from_pretrained`; `AutoPeftModelForCausalLM` cannot load it.
    """
    got = _adapter_with_tokenizer(facts)
    if got is None:
        return
    a, tok, rows = got
    saved = a.saved_rows
    if saved is None or tok.length <= rows or tok.length == saved or tok.max_id >= saved:
        return
    yield Hit(
        f"{a.weights_file} {_saved_name(a)} has {saved} rows but the adapter's tokenizer has {tok.length} tokens: "
        f"resize_token_embeddings(len(tokenizer)) (AutoPeftModelForCausalLM) gives {tok.length} rows and the load "
        f"fails; resize the base to {saved} rows",
        Location(file=a.weights_file, tensor=_saved_name(a)),
        details={"saved_rows": saved, "tokenizer_length": tok.length, "base_rows": rows},
    )


@rule("HVA803", "adapter-tokens-without-rows", Severity.ERROR)
def adapter_tokens_without_rows(facts: Facts) -> Iterator[Hit]:
    """The adapter's tokenizer has tokens past the base's rows, and the adapter saved no rows for them.

    Why:
    The tokens were added for training but their embeddings were not saved (no resize before training, or
    `save_embedding_layers=False`). On the plain base the ids raise `index out of range in self`; resizing the
    base to make them fit creates rows at load time that were never trained: the adapter was trained without
    them, and the model sees noise for every such token.

    Fix:
    Retrain with the embeddings saved: resize before `get_peft_model`, and add `modules_to_save=["embed_tokens",
    "lm_head"]` or `trainable_token_indices=[...]` for the new ids; or use the base's own tokenizer.
    """
    got = _adapter_with_tokenizer(facts)
    if got is None:
        return
    a, tok, rows = got
    ids = tok.ids_at_or_above(rows)
    if not ids or a.saved_rows is not None:
        return
    yield Hit(
        f"the adapter's tokenizer has {len(ids)} id(s) >= the base's {rows} rows and the adapter saved no rows for "
        f"them: {_named(a, ids)}",
        Location(file="tokenizer.json", token=tok.id_to_token(ids[0]), token_id=ids[0]),
        details={"ids": ids[:100], "base_rows": rows, "tokenizer_length": tok.length},
    )


@rule("HVA804", "adapter-tokenizer-beyond-saved-rows", Severity.ERROR)
def adapter_tokenizer_beyond_saved_rows(facts: Facts) -> Iterator[Hit]:
    """The adapter's tokenizer emits ids past the embedding rows the adapter saved.

    Why:
    Tokens were added after the adapter's embeddings were sized (or the tokenizer of another run was saved
    with it): those ids have no row in the loaded model and raise `index out of range in self`.

    Fix:
    Save the tokenizer the adapter was trained with, or retrain after resizing to the final tokenizer.
    """
    got = _adapter_with_tokenizer(facts)
    if got is None:
        return
    a, tok, _rows = got
    saved = a.saved_rows
    if saved is None:
        return
    ids = tok.ids_at_or_above(saved)
    if not ids:
        return
    yield Hit(
        f"the adapter's tokenizer has {len(ids)} id(s) >= the {saved} rows of {_saved_name(a)}: {_named(a, ids)}",
        Location(file=a.weights_file, tensor=_saved_name(a), token=tok.id_to_token(ids[0]), token_id=ids[0]),
        details={"ids": ids[:100], "saved_rows": saved},
    )


@rule("HVA805", "adapter-trainable-token-out-of-range", Severity.ERROR)
def adapter_trainable_token_out_of_range(facts: Facts) -> Iterator[Hit]:
    """`trainable_token_indices` names ids past the rows the adapter (or, without saved rows, the base) has.

    Why:
    peft gathers these rows when it builds the adapter: `IndexError: index 104 is out of bounds for dimension
    0 with size 104` in `PeftModel.from_pretrained`.

    Fix:
    Keep only ids of real tokens, and resize the base to cover them before loading.
    """
    got = _adapter(facts)
    if got is None:
        return
    a, rows = got
    limit = a.saved_rows or rows
    bad = [i for i in a.trainable_token_indices if not 0 <= i < limit]
    if not bad:
        return
    yield Hit(
        f"adapter_config.json trainable_token_indices has {len(bad)} id(s) outside the {limit} rows: {bad[:SHOW]}",
        Location(file="adapter_config.json", key="trainable_token_indices", token_id=bad[0]),
        details={"ids": bad[:100], "rows": limit},
    )


def _new_input_ids(a: AdapterFacts, rows: int) -> list[int]:
    """Ids past the base's ``rows`` whose input-embedding rows the adapter carries: a whole saved embedding
    with more rows, or input-side ``trainable_token_indices``."""
    saved = a.saved_input.rows if a.saved_input is not None else None
    ids = set(range(rows, saved)) if saved is not None else set()
    ids.update(i for i in trained_tokens(a, "model.embed_tokens.weight", True) if i >= rows)
    return sorted(ids)


@rule("HVA806", "adapter-new-token-lm-head-unsaved", Severity.ERROR)
def adapter_new_token_lm_head_unsaved(facts: Facts) -> Iterator[Hit]:
    """The adapter carries embedding rows for new tokens but no lm_head rows for them, on a base whose lm_head
    is not tied to its embeddings.

    Why:
    The base must be resized to load the adapter, and `resize_token_embeddings` creates the lm_head rows of
    the new ids at load time: they are not the rows the model was trained with, and they change from one load
    to the next. Measured with peft 0.21: an adapter saved with `modules_to_save=["embed_tokens"]` or
    `trainable_token_indices` and `save_embedding_layers=False`, loaded twice onto the resized untied base,
    gets different lm_head rows for the new ids each time, none equal to the rows it was trained with. The
    model's logits for those tokens are noise: it emits them at random, or never ends a turn it should end.

    Fix:
    Save the lm_head with the embedding: `modules_to_save=["embed_tokens", "lm_head"]` (or
    `trainable_token_indices={"embed_tokens": [...], "lm_head": [...]}`), and keep peft's default
    `save_embedding_layers="auto"`, which saves both matrices after a resize.
    """
    got = _adapter(facts)
    emb = facts.embeddings
    if got is None or emb is None or emb.tied:
        return
    a, rows = got
    if a.saved_output is not None:
        return
    output = emb.output.name if emb.output is not None else "lm_head.weight"
    covered = trained_tokens(a, output, False)
    ids = [i for i in _new_input_ids(a, rows) if i not in covered]
    if not ids:
        return
    tok = a.tokenizer
    names = _named(a, ids) if tok is not None else ", ".join(map(str, ids[:SHOW])) + (
        f" and {len(ids) - SHOW} more" if len(ids) > SHOW else "")
    yield Hit(
        f"the adapter saves embedding rows for {len(ids)} new id(s) past the base's {rows} rows but no lm_head "
        f"rows for them, and the base's {output} is not tied: resizing the base makes those lm_head rows up at "
        f"load (untrained, different on every load): {names}",
        Location(file=a.weights_file, token_id=ids[0]),
        details={"ids": ids[:100], "base_rows": rows, "lm_head": output},
    )

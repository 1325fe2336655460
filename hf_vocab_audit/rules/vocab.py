"""HVA1xx: the tokenizer's ids against the embedding matrices and ``config.vocab_size``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..core.findings import Location, Severity
from ..core.fixes import Applicability, Fix, FixAvailability, GrowRows, SetConfigVocabSize
from ..dataset.chat_processor import processor_class
from ..facts import Facts
from ..facts.class_shapes import extra_input_rows
from ..facts.embeddings import EXTRA_INPUT_ROWS
from ..facts.limits import INPUT_IDS, LabelKind, input_limits
from ..facts.placeholders import LoadTimeToken, load_time_tokens, read_placeholders, replaced_image_ids
from ..facts.requirements import Requirement
from .registry import Hit, rule

SHOW = 5  # offending tokens named in a message


def _tokens(facts: Facts, ids: list[int]) -> tuple[str, list[dict[str, Any]]]:
    tok = facts.required_tokenizer()
    assert tok is not None
    listed = [{"id": i, "token": tok.id_to_token(i)} for i in ids[:SHOW]]
    text = ", ".join(f"{t['token']!r} ({t['id']})" for t in listed)
    if len(ids) > SHOW:
        text += f" and {len(ids) - SHOW} more"
    return text, listed


def _grow_fix(rows: int, tensor: str) -> Fix:
    return Fix(
        f"grow the vocabulary matrices to {rows} rows (old rows kept; new rows = mean of the trained rows)",
        Applicability.SAFE,
        (GrowRows(rows, tensor),),
    )


@rule("HVA101", "token-id-beyond-embedding", Severity.ERROR, requires=(Requirement.TOKENIZER, Requirement.INPUT_EMBEDDING),
      fix=FixAvailability.ALWAYS)
def token_id_beyond_embedding(facts: Facts) -> Iterator[Hit]:
    """The tokenizer can emit an id that has no row in the input-embedding matrix.

    Why:
    `nn.Embedding` indexes its weight with every input id. An id >= its rows raises
    `IndexError: index out of range in self` on CPU and `device-side assert triggered`
    (`srcIndex < srcSelectDimSize`) on a GPU. Usual cause: tokens were added to the tokenizer
    (`add_tokens`, `add_special_tokens`) and the model was never resized, or the checkpoint is
    paired with another model's tokenizer. Tokens a processor adds to the tokenizer at load time count
    too: `PaliGemmaProcessor` adds `<image>`, 1024 `<locXXXX>` and 128 `<segXXX>` when the tokenizer's
    files lack them, at ids from `len(tokenizer)` on.

    Fix:
    Grow the embeddings to cover every id: `model.resize_token_embeddings(len(tokenizer))` only when
    the tokenizer is larger (never shrink: padded rows are trained), or `hf-vocab-audit check DIR --fix`.
    """
    tok = facts.required_tokenizer()
    bound = input_limits(facts)[0].bound(INPUT_IDS)  # the one limits model: the input embedding's rows
    assert bound is not None  # Requirement.INPUT_EMBEDDING
    rows = bound.below
    ids = tok.ids_at_or_above(rows)
    later = [t for t in _processor_tokens(facts) if t.token_id >= rows]
    replaced = replaced_image_ids(facts.config, rows)
    # an image placeholder the architecture replaces before the lookup is HVA703's (a warning)
    ids = [i for i in ids if i not in replaced]
    later = [t for t in later if t.token_id not in replaced]
    if not ids and not later:
        return
    name = facts.required_input().name
    named, listed = _tokens(facts, ids) if ids else ("", [])
    parts = [f"the tokenizer can emit {len(ids)} id(s) >= the {rows} rows of {name}: {named}"] if ids else []
    if later:
        listed = listed or [{"id": t.token_id, "token": t.content} for t in later[:SHOW]]
        shown = ", ".join(repr(t.content) for t in later[:SHOW]) + (f" and {len(later) - SHOW} more" if len(later) > SHOW else "")
        parts.append(f"the processor adds {len(later)} token(s) to the tokenizer at load time with ids >= the {rows} "
                     f"rows of {name} (ids {later[0].token_id}..{later[-1].token_id}, not in the tokenizer's files): {shown}")
    count = len(ids) + len(later)
    top = max([tok.max_id, *(t.token_id for t in later)])
    yield Hit(
        "; ".join(parts),
        Location(file=facts.required_input().file, tensor=facts.required_input().name, token=listed[0]["token"],
                 token_id=listed[0]["id"]),
        fix=_grow_fix(top + 1, facts.required_input().name),
        details={"rows": rows, "tokenizer_length": tok.length, "max_id": tok.max_id,
                 "count": count, "tokens": listed, **({"processor_added": len(later)} if later else {})},
    )


def _processor_tokens(facts: Facts) -> tuple[LoadTimeToken, ...]:
    """Tokens the processor ``AutoProcessor`` loads from the folder adds to the tokenizer at load time (PaliGemma's
    ``<image>``, ``<locXXXX>`` and ``<segXXX>``) when the tokenizer's files lack them, with the ids they get."""
    tok = facts.required_tokenizer()
    assert tok is not None
    processor = processor_class(tok.folder, facts.config.model_type)
    if processor is None:
        return ()
    backend = tok.backend
    has_token: Callable[[str], bool] = lambda content: backend.token_to_id(content) is not None  # noqa: E731
    named = read_placeholders(facts.model_dir, facts.config, tok.folder).token_for("image")
    return load_time_tokens(processor, has_token, tok.length, named is not None and named.file == "tokenizer_config.json")


@rule("HVA102", "token-id-beyond-lm-head", Severity.ERROR, requires=(Requirement.TOKENIZER, Requirement.UNTIED_OUTPUT),
      fix=FixAvailability.SOMETIMES)  # not on a CTC head: --fix grows token embeddings, and a CTC model has none
def token_id_beyond_lm_head(facts: Facts) -> Iterator[Hit]:
    """The tokenizer can emit an id that has no row in the untied output projection (lm_head).

    Why:
    Language-model labels are token ids; cross entropy over logits of lm_head's rows raises
    `IndexError: Target N is out of bounds` on CPU and `t >= 0 && t < n_classes` on a GPU for any
    label id >= lm_head rows. Generation can also never produce those tokens. A CTC speech model
    (`...ForCTC`) has no token embedding: its tokenizer's ids are the CTC head's classes, and a transcript
    holding an id past them fails training (`ValueError: Label values must be <= vocab_size`), as does a
    blank (`pad_token_id`) outside the head (`blank must be in label range`).

    Fix:
    Resize the embeddings (transformers resizes an untied lm_head together with the input side) or run
    `hf-vocab-audit check DIR --fix`. A CTC head is grown by reloading with `vocab_size=len(tokenizer)`
    and `ignore_mismatched_sizes=True` (not by `--fix`).
    """
    tok = facts.required_tokenizer()
    out = facts.required_output()
    if facts.embeddings is not None and facts.embeddings.ctc_head:
        yield from _beyond_ctc_head(facts)
        return
    bound = input_limits(facts)[0].label_bound(LabelKind.LM)  # language-model labels: the output rows
    assert bound is not None  # Requirement.UNTIED_OUTPUT
    ids = tok.ids_at_or_above(bound.below)
    if ids:
        input_only = _input_only_ids(facts, out.rows)
        ids = [i for i in ids if i not in input_only]
    if not ids:
        return
    named, listed = _tokens(facts, ids)
    yield Hit(
        f"the tokenizer can emit {len(ids)} id(s) >= the {out.rows} rows of {out.name}: {named}",
        Location(file=out.file, tensor=out.name, token=listed[0]["token"], token_id=ids[0]),
        fix=_grow_fix(tok.max_id + 1, out.name),
        details={"rows": out.rows, "count": len(ids), "tokens": listed},
    )


CTC_FIX = ("grow the CTC head to the tokenizer before fine-tuning: `AutoModelForCTC.from_pretrained(DIR, "
           "vocab_size=len(tokenizer), ignore_mismatched_sizes=True)` (the head is re-initialised), or drop the tokens")


def _beyond_ctc_head(facts: Facts) -> Iterator[Hit]:
    """A CTC model (Wav2Vec2/HuBERT/WavLM ``ForCTC``): the tokenizer's ids are the CTC classes. Measured on
    CPU: a transcript holding an id >= ``config.vocab_size`` makes ``forward(labels=...)`` raise
    ``ValueError: Label values must be <= vocab_size``, and a blank (``config.pad_token_id``) outside the head
    makes the loss raise ``blank must be in label range``; the head can never predict such a token."""
    tok = facts.required_tokenizer()
    out = facts.required_output()
    bound = input_limits(facts)[0].label_bound(LabelKind.CTC)  # config.vocab_size, else the head's rows
    below = min(out.rows, bound.below) if bound is not None else out.rows
    ids = tok.ids_at_or_above(below)
    if ids:
        named, listed = _tokens(facts, ids)
        yield Hit(
            f"the CTC tokenizer can emit {len(ids)} id(s) >= the {below} classes of the CTC head {out.name}: "
            f"{named}; a transcript holding one fails training (`ValueError: Label values must be <= vocab_size: "
            f"{below}`) and the head can never predict it",
            Location(file=out.file, tensor=out.name, token=listed[0]["token"], token_id=ids[0]),
            hint=CTC_FIX,
            details={"rows": below, "count": len(ids), "tokens": listed, "head": "ctc"},
        )
    blank = facts.config.special.ids.get("pad_token_id") or ()
    bad = [i for i in blank if isinstance(i, int) and not 0 <= i < below]
    if bad:
        yield Hit(
            f"config.json pad_token_id {bad[0]} (the CTC blank) is outside the {below} classes of the CTC head "
            f"{out.name}: the CTC loss raises `blank must be in label range`",
            Location(file="config.json", key="pad_token_id"),
            hint="set pad_token_id to the tokenizer's pad id (the blank), which must be below vocab_size",
            details={"rows": below, "ids": bad, "head": "ctc"},
        )


def _input_only_ids(facts: Facts, output_rows: int) -> range:
    """Ids the config's class embeds but never predicts: the input rows it builds beyond ``vocab_size`` by
    design (Mllama's ``embed_tokens`` has vocab_size + 8 rows, the ``<|image|>`` token at vocab_size among
    them; its lm_head has vocab_size rows) when the output projection has exactly ``vocab_size`` rows. Such
    an id is an input-only special: the model's logits never cover it, so it is no lm_head bug (a label of
    it is the dataset's to mask). Empty when the class builds no extra rows or the output side differs."""
    vocab = facts.config.vocab_size
    rows = facts.embeddings.input_rows if facts.embeddings else None
    extra = _extra_rows(facts)
    if vocab is None or rows is None or not extra or output_rows != vocab:
        return range(0)
    return range(vocab, min(vocab + extra, rows))


def _extra_rows(facts: Facts) -> int:
    """Input rows the config's class builds beyond vocab_size (derived from transformers' classes); 0 when
    that cannot be decided here, which keeps the header-only comparison (never a silent pass)."""
    mtype = facts.config.model_type or ""
    if mtype in EXTRA_INPUT_ROWS:
        return EXTRA_INPUT_ROWS[mtype]
    return extra_input_rows(facts.config) or 0


@rule("HVA103", "config-vocab-size-mismatch", Severity.ERROR, requires=(Requirement.INPUT_EMBEDDING, Requirement.CONFIG_VOCAB_SIZE),
      fix=FixAvailability.ALWAYS)
def config_vocab_size_mismatch(facts: Facts) -> Iterator[Hit]:
    """`config.json`'s `vocab_size` differs from the rows of the input-embedding matrix.

    Why:
    transformers builds the model from `vocab_size`, then loads the weights: a different shape
    stops `from_pretrained` with a size-mismatch error, and `ignore_mismatched_sizes=True`
    re-initialises the embeddings randomly (every trained row lost). Code that sizes heads or masks
    from `config.vocab_size` is wrong too.

    Fix:
    Set `vocab_size` to the real number of rows (`resize_token_embeddings` does this), or `--fix`.
    """
    cfg = facts.config
    rows = facts.required_input().rows
    extra = _extra_rows(facts)
    if facts.required_vocab_size() + extra == rows:
        return
    key = cfg.text_prefix + "vocab_size"
    yield Hit(
        f"config.json {key} is {cfg.vocab_size} but {facts.required_input().name} has {rows} rows",
        Location(file="config.json", key=key, tensor=facts.required_input().name),
        fix=Fix(f"set {key} to {rows - extra}", Applicability.SAFE, (SetConfigVocabSize(key, rows - extra),)),
        details={"config_vocab_size": cfg.vocab_size, "rows": rows, **({"extra_rows": extra} if extra else {})},
    )


@rule("HVA104", "lm-head-rows-mismatch", Severity.ERROR, requires=(Requirement.UNTIED_OUTPUT,), fix=FixAvailability.ALWAYS)
def lm_head_rows_mismatch(facts: Facts) -> Iterator[Hit]:
    """An untied lm_head has a different number of rows than the input embeddings.

    Why:
    Input ids and label ids are the same vocabulary. When the two matrices differ, one side accepts ids
    the other rejects: a fine-tune crashes in the loss (`Target N is out of bounds`) or in the embedding
    lookup, and generation can emit ids the input side cannot read back.

    Fix:
    Resize both to the same number of rows: grow the smaller one (`--fix`), never shrink the larger.
    """
    emb = facts.embeddings
    inp, out = (emb.input, emb.output) if emb is not None else (None, None)
    if inp is None or out is None or inp.rows is None or out.rows is None:  # Requirement.UNTIED_OUTPUT
        return
    if inp.rows == out.rows + _extra_rows(facts):
        return
    small = out if out.rows < inp.rows else inp
    rows = max(inp.rows, out.rows)
    yield Hit(
        f"{out.name} has {out.rows} rows but {inp.name} has {inp.rows}",
        Location(file=small.file, tensor=small.name),
        fix=_grow_fix(rows, small.name),
        details={"input_rows": inp.rows, "output_rows": out.rows},
    )


def _pad_multiple(rows: int) -> int | None:
    """The largest power of two >= 8 that divides ``rows`` (a deliberate pad), or None."""
    if rows <= 0:
        return None
    multiple = rows & -rows
    return multiple if multiple >= 8 else None


@rule("HVA105", "padded-embedding-rows", Severity.INFO, requires=(Requirement.TOKENIZER, Requirement.INPUT_EMBEDDING))
def padded_embedding_rows(facts: Facts) -> Iterator[Hit]:
    """The embedding matrix has more rows than the tokenizer has ids: padding, not a bug.

    Why:
    Qwen, T5, Gemma-3, Phi-3, DeepSeek-V3 and gpt-oss round their vocabulary up (often to a multiple of
    64 or 128) for faster matrix multiplies. No token maps to the extra rows, so nothing can index past
    the end. Resizing such a model to `len(tokenizer)` shrinks it and deletes trained rows.

    Fix:
    Nothing to fix. Never call `resize_token_embeddings(len(tokenizer))` on such a model: it shrinks.
    """
    tok = facts.required_tokenizer()
    rows = facts.required_input().rows
    used = tok.max_id + 1
    if rows is None or rows <= used:
        return
    multiple = _pad_multiple(rows)
    pad = f", a multiple of {multiple}" if multiple and multiple >= 32 else ""
    yield Hit(
        f"{rows - used} of the {rows} rows of {facts.required_input().name} (ids {used}..{rows - 1}) are padding "
        f"no token maps to (tokenizer emits ids up to {used - 1}{pad})",
        Location(file=facts.required_input().file, tensor=facts.required_input().name),
        details={"rows": rows, "used": used, "unused": rows - used, "multiple_of": multiple},
    )


@rule("HVA208", "token-id-gap", Severity.WARNING, requires=(Requirement.TOKENIZER,))
def token_id_gap(facts: Facts) -> Iterator[Hit]:
    """Some ids between 0 and the tokenizer's largest id belong to no token.

    Why:
    `len(tokenizer)` then undercounts the ids the tokenizer emits, so code that sizes the embeddings
    with `len(tokenizer)` (including `resize_token_embeddings(len(tokenizer))`) leaves the highest ids
    without rows. Holes usually come from added tokens saved with explicit ids past the vocabulary.

    Fix:
    Size the embeddings from the largest id + 1, not `len(tokenizer)`; or re-create the added tokens so
    their ids are contiguous.
    """
    tok = facts.required_tokenizer()
    if not tok.ids or tok.ids[-1] + 1 == len(tok.ids):
        return  # contiguous: the common case, decided without numpy
    import numpy as np

    ids = np.asarray(tuple(tok.ids), dtype=np.int64)
    starts = np.flatnonzero(np.diff(np.concatenate(([-1], ids))) > 1)
    ranges = []
    for s in starts[:SHOW]:
        lo = int(ids[s - 1]) + 1 if s > 0 else 0
        hi = int(ids[s]) - 1
        ranges.append([lo, hi])
    missing = int(ids[-1]) + 1 - int(ids.size)
    text = ", ".join(f"{lo}" if lo == hi else f"{lo}..{hi}" for lo, hi in ranges)
    yield Hit(
        f"{missing} id(s) below the largest id {int(ids[-1])} belong to no token ({text}); "
        f"len(tokenizer) is {tok.length} but ids reach {tok.max_id}",
        Location(file="tokenizer.json"),
        details={"missing": missing, "ranges": ranges, "length": tok.length, "max_id": tok.max_id},
    )

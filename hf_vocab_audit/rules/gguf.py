"""HVA90x-HVA93x: what only a GGUF file (llama.cpp's format) can get wrong, in llama.cpp's own words.

The GGUF facts that mean what a checkpoint's facts mean (ids past ``token_embd``/``output`` rows, special ids
out of range, chat-template markers, duplicate token strings) are checked by the existing rules with a GGUF
location (``audit.audit_gguf``). The messages quoted here are llama.cpp's (``src/llama-model-loader.cpp``,
``src/llama-vocab.cpp``), as vendored by llama-cpp-python 0.3.36; ``scripts/gguf_verdicts.py`` records what
that llama.cpp does with each case (``tests/data/gguf_verdicts.json``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..core.findings import Location, Severity
from ..facts import Facts
from ..facts.gguf_facts import GGUFFacts
from ..facts.gguf_source import GGUFSourceFacts
from ..facts.llama_cpp_tables import (
    BPE_MODELS,
    KNOWN_PRE_TOKENIZERS,
    NORMAL,
    SPECIAL_ID_KEYS,
    TOKENIZER_MODELS,
)
from .registry import Hit, Scope, rule

SHOW = 5


def _gguf(facts: Facts) -> GGUFFacts | None:
    return facts.gguf


def _shape(info_shape: tuple[int, ...]) -> str:
    """A shape as llama.cpp prints it (``llama_format_tensor_shape``: ggml order, width 5)."""
    return ", ".join(f"{d:5d}" for d in reversed(info_shape))


@rule("HVA901", "gguf-token-count-mismatch", Severity.ERROR, scope=Scope.GGUF)
def gguf_token_count_mismatch(facts: Facts) -> Iterator[Hit]:
    """The GGUF's token list and its `token_embd` / `output` rows differ in length.

    Why:
    llama.cpp sizes the vocabulary matrices from the token count and refuses any other shape at load:
    `check_tensor_dims: tensor 'token_embd.weight' has wrong shape` ("Failed to load model"). Unlike a
    transformers checkpoint, a GGUF has no room for padding rows: the converter fills them with `[PAD{i}]`
    tokens. A vocabulary-only load still succeeds, so tokenizing works and the break shows at inference.

    Fix:
    Resize the HF checkpoint's embeddings to cover every token (`hf-vocab-audit check HF_DIR --fix`), set
    `vocab_size` to the rows, and convert again.
    """
    gf = _gguf(facts)
    if gf is None or not gf.tokens:
        return
    for info in (gf.token_embd, gf.output):
        if info is None or len(info.shape) != 2 or info.shape[0] == gf.n_tokens:
            continue
        expected = (gf.n_tokens, info.shape[1])
        yield Hit(
            f"{gf.n_tokens} tokens but {info.name} has {info.shape[0]} rows; llama.cpp refuses the file: "
            f"\"check_tensor_dims: tensor '{info.name}' has wrong shape; expected {_shape(expected)}, "
            f"got {_shape(info.shape)},     1,     1\"",
            Location(file=info.file, key="tokenizer.ggml.tokens", tensor=info.name),
            details={"tokens": gf.n_tokens, "rows": info.shape[0], "tensor": info.name},
        )


def _marker_ids(facts: Facts, gf: GGUFFacts) -> list[tuple[str, str, int]]:
    """(what, key, id) for every declared special id and every chat-template marker that is one token."""
    out = [(f"{role} token", SPECIAL_ID_KEYS[role], i) for role, i in sorted(gf.special_ids.items())
           if role != "unk" and 0 <= i < gf.n_tokens]
    tok = facts.tokenizer
    if tok is not None and gf.chat_template:
        for text, _ids in tok.template_markers:
            found = tok.backend.token_to_id(text)
            if found is not None:
                out.append(("chat template marker", "tokenizer.chat_template", found))
    return out


@rule("HVA902", "gguf-control-token-typed-normal", Severity.WARNING, scope=Scope.GGUF)
def gguf_control_token_typed_normal(facts: Facts) -> Iterator[Hit]:
    """A special token (bos, eos, eot, pad, ...) or a chat-template marker is typed NORMAL in the GGUF.

    Why:
    llama.cpp matches only control, user-defined and unknown tokens as whole strings when it tokenizes a
    prompt with special tokens on: a NORMAL `<|im_start|>` in the chat template is split into ordinary
    pieces, so the served model sees a different sequence than in training; and detokenizing prints it
    as text. The usual cause is a converter that did not see the token as special (an added token missing
    from `added_tokens_decoder`, or `special: false`). llama.cpp overrides a few well-known end-of-turn
    strings at load ("control-looking token ... was not control-type; this is probably a bug in the model").

    Fix:
    Mark the token special in the HF tokenizer (`tokenizer_config.json` `added_tokens_decoder`,
    `"special": true`) and convert again.
    """
    gf = _gguf(facts)
    if gf is None or gf.token_types is None:
        return
    seen: set[int] = set()
    for what, key, i in _marker_ids(facts, gf):
        if i in seen or gf.token_type(i) != NORMAL:
            continue
        seen.add(i)
        token = gf.tokens[i]
        yield Hit(
            f"{what} {token!r} (id {i}, {key}) is typed NORMAL in tokenizer.ggml.token_type: llama.cpp will not "
            "match it as one token in a prompt, and prints it when detokenizing",
            Location(file=gf.file, key="tokenizer.ggml.token_type", token=token, token_id=i),
            details={"id": i, "token": token, "declared_by": key},
        )


@rule("HVA903", "gguf-unknown-pre-tokenizer", Severity.ERROR, scope=Scope.GGUF)
def gguf_unknown_pre_tokenizer(facts: Facts) -> Iterator[Hit]:
    """The GGUF names a BPE pre-tokenizer (`tokenizer.ggml.pre`) that llama.cpp does not know.

    Why:
    llama.cpp refuses to load the vocabulary (even `vocab_only`): "unknown pre-tokenizer type: '<pre>'".
    The name is written by `convert_hf_to_gguf.py` from a hash of how the tokenizer splits a test text;
    a GGUF written by a newer converter, or edited by hand, can carry a name this llama.cpp lacks.

    Fix:
    Use a llama.cpp that knows the pre-tokenizer, or convert again with a converter whose
    `get_vocab_base_pre()` recognises the tokenizer (never rename it to one whose splitting differs).
    """
    gf = _gguf(facts)
    if gf is None or gf.tokenizer_model not in BPE_MODELS or gf.pre is None or gf.pre in KNOWN_PRE_TOKENIZERS:
        return
    yield Hit(
        f"tokenizer.ggml.pre is {gf.pre!r}: llama.cpp refuses the vocabulary (\"unknown pre-tokenizer type: "
        f"'{gf.pre}'\")",
        Location(file=gf.file, key="tokenizer.ggml.pre"),
        details={"pre": gf.pre, "tokenizer_model": gf.tokenizer_model},
    )


@rule("HVA904", "gguf-missing-pre-tokenizer", Severity.WARNING, scope=Scope.GGUF)
def gguf_missing_pre_tokenizer(facts: Facts) -> Iterator[Hit]:
    """A BPE GGUF has no `tokenizer.ggml.pre`: llama.cpp splits text with its default pre-tokenizer.

    Why:
    llama.cpp loads it with "missing pre-tokenizer type, using: 'default'" and "GENERATION QUALITY WILL BE
    DEGRADED! CONSIDER REGENERATING THE MODEL": text is split into words differently from the HF tokenizer,
    so prompts become different ids than in training.

    Fix:
    Convert again with a current `convert_hf_to_gguf.py`, which writes the pre-tokenizer's name.
    """
    gf = _gguf(facts)
    if gf is None or gf.tokenizer_model not in BPE_MODELS or gf.pre is not None:
        return
    yield Hit(
        "no tokenizer.ggml.pre in a BPE vocabulary: llama.cpp warns \"missing pre-tokenizer type, using: "
        "'default'\" and splits text differently from the HF tokenizer",
        Location(file=gf.file, key="tokenizer.ggml.pre"),
        details={"tokenizer_model": gf.tokenizer_model},
    )


@rule("HVA905", "gguf-unknown-tokenizer-model", Severity.ERROR, scope=Scope.GGUF)
def gguf_unknown_tokenizer_model(facts: Facts) -> Iterator[Hit]:
    """`tokenizer.ggml.model` names a tokenizer llama.cpp does not have.

    Why:
    llama.cpp refuses the vocabulary at load: "unknown tokenizer: '<model>'".

    Fix:
    Convert again with llama.cpp's `convert_hf_to_gguf.py` (it writes `llama`, `gpt2`, `bert`, `t5`, ...).
    """
    gf = _gguf(facts)
    if gf is None or gf.tokenizer_model is None or gf.tokenizer_model in TOKENIZER_MODELS:
        return
    yield Hit(
        f"tokenizer.ggml.model is {gf.tokenizer_model!r}: llama.cpp refuses the vocabulary (\"unknown "
        f"tokenizer: '{gf.tokenizer_model}'\")",
        Location(file=gf.file, key="tokenizer.ggml.model"),
        details={"tokenizer_model": gf.tokenizer_model},
    )


@rule("HVA906", "gguf-token-array-length-mismatch", Severity.ERROR, scope=Scope.GGUF)
def gguf_token_array_length_mismatch(facts: Facts) -> Iterator[Hit]:
    """`tokenizer.ggml.scores` or `tokenizer.ggml.token_type` has another length than `tokenizer.ggml.tokens`.

    Why:
    llama.cpp indexes both arrays by token id (`llama_vocab::impl::load` in `src/llama-vocab.cpp`, as vendored
    by llama-cpp-python 0.3.36): a shorter array stops the load, even `vocab_only` ("Index out of array bounds
    for scores (63 < 64)", the same for toktypes). A longer one loads, its tail ignored, but the converter
    writes the three arrays from one loop: another length means the file was edited (tokens removed or
    inserted) without its scores and types, so they may no longer belong to the tokens at their ids.

    Fix:
    Convert again from the HF checkpoint; never edit the token list of a GGUF without its scores and types.
    """
    gf = _gguf(facts)
    if gf is None or not gf.tokens:
        return
    n = gf.n_tokens
    for key, what, count in (("tokenizer.ggml.scores", "scores", gf.n_scores),
                             ("tokenizer.ggml.token_type", "toktypes",
                              len(gf.token_types) if gf.token_types is not None else None)):
        if count is None or count == n:
            continue
        effect = (f"llama.cpp refuses the vocabulary (\"Index out of array bounds for {what} ({count} < {n})\")"
                  if count < n else "llama.cpp ignores the tail, but the array is out of step with the token list")
        yield Hit(f"{key} has {count} entries for {n} tokens: {effect}", Location(file=gf.file, key=key),
                  details={"key": key, "entries": count, "tokens": n})


@rule("HVA907", "gguf-special-id-past-tokens", Severity.ERROR, scope=Scope.GGUF)
def gguf_special_id_past_tokens(facts: Facts) -> Iterator[Hit]:
    """A vocabulary-only GGUF declares a special id (bos, eos, pad, unk, ...) past its token list.

    Why:
    llama.cpp ignores the id and keeps its default for the model type ("bad special token:
    'tokenizer.ggml.eos_token_id' = 99, using default id 2", `src/llama-vocab.cpp`): generation stops at,
    or prompts start with, another token than the file says. A GGUF with weights reports this as HVA201
    against its rows; a vocabulary-only file (no tensors) is checked against its token list here.

    Fix:
    Set the id to the token's position in `tokenizer.ggml.tokens` (convert again from the HF checkpoint).
    """
    gf = _gguf(facts)
    if gf is None or not gf.vocab_only:
        return
    for role, i in sorted(gf.special_ids.items()):
        if 0 <= i < gf.n_tokens:
            continue
        key = SPECIAL_ID_KEYS[role]
        yield Hit(f"{key} is {i} but the vocabulary-only GGUF has {gf.n_tokens} tokens: llama.cpp ignores it "
                  f"(\"bad special token: '{key}' = {i}, using default id ...\")",
                  Location(file=gf.file, key=key, token_id=i), details={"role": role, "id": i, "tokens": gf.n_tokens})


# --- a GGUF against its HF source (check model.gguf --source HF_DIR) ---------------------------------


def _listed(items: list[str]) -> str:
    return ", ".join(items[:SHOW]) + (f" and {len(items) - SHOW} more" if len(items) > SHOW else "")


@rule("HVA910", "gguf-source-token-dropped", Severity.ERROR, scope=Scope.GGUF_SOURCE)
def gguf_source_token_dropped(src: GGUFSourceFacts) -> Iterator[Hit]:
    """A token of the HF tokenizer is not at its id in the GGUF: dropped, replaced by a `[PAD{i}]` filler,
    or renumbered.

    Why:
    llama.cpp's converter reads added tokens from `added_tokens.json` and `tokenizer_config.json`'s
    `added_tokens_decoder` (SentencePiece models), and fills every id it found no token for with
    `[PAD{i}]`; tokens past `vocab_size` are dropped. transformers 5 writes added tokens to
    `tokenizer.json` only, so tokens added after training are silently lost in the GGUF (measured with
    llama-cpp-python 0.3.36's converter). The GGUF then tokenizes text differently from the HF tokenizer
    the model was trained with (ggml-org/llama.cpp#5838, #3583, #23252).

    Fix:
    Make the converter see the tokens: resize the embeddings to cover them (`--fix` on the HF folder),
    list them in `added_tokens_decoder`, and convert again; `check HF_DIR --target gguf` says it first.
    """
    bad = list(src.dropped)
    if not bad:
        return
    def what(d: Any) -> str:
        if d.now is None:
            return f"{d.token!r} ({d.id}): past the GGUF's {src.gf.n_tokens} tokens"
        if d.moved_to is not None:
            return f"{d.token!r} ({d.id}): at GGUF id {d.moved_to}"
        return f"{d.token!r} ({d.id}): GGUF has {d.now!r}"
    first = bad[0]
    yield Hit(
        f"{len(bad)} HF token(s) are not at their id in the GGUF: {_listed([what(d) for d in bad])}",
        Location(file=src.gf.file, key="tokenizer.ggml.tokens", token=first.token, token_id=first.id),
        details={"count": len(bad), "tokens": [{"id": d.id, "token": d.token, "gguf": d.now, "moved_to": d.moved_to}
                                               for d in bad[:SHOW]]},
    )


@rule("HVA911", "gguf-source-special-id-changed", Severity.ERROR, scope=Scope.GGUF_SOURCE)
def gguf_source_special_id_changed(src: GGUFSourceFacts) -> Iterator[Hit]:
    """A special-token id (bos, eos, pad, ...) of the GGUF differs from the HF tokenizer's, or is missing.

    Why:
    llama.cpp stops generating at the GGUF's eos/eot ids and adds its bos: a different id makes the
    served model run past the end of its answers or start prompts with the wrong token.

    Fix:
    Set the id in the HF checkpoint (tokenizer and generation_config agree, see HVA202) and convert again.
    """
    for role, hf_id, gguf_id in src.special_changes:
        key = SPECIAL_ID_KEYS.get(role, role)
        got = "missing" if gguf_id is None else str(gguf_id)
        yield Hit(
            f"{role} id: HF tokenizer {hf_id}, GGUF {key} {got}",
            Location(file=src.gf.file, key=key, token_id=gguf_id),
            details={"role": role, "hf": hf_id, "gguf": gguf_id},
        )


@rule("HVA912", "gguf-source-chat-template-lost", Severity.WARNING, scope=Scope.GGUF_SOURCE)
def gguf_source_chat_template_lost(src: GGUFSourceFacts) -> Iterator[Hit]:
    """The HF tokenizer has a chat template and the GGUF has none, or a different one.

    Why:
    llama.cpp (and the servers built on it) format chats with `tokenizer.chat_template`; without it
    they fall back to a generic template the model was not trained with.

    Fix:
    Convert again from a folder whose `tokenizer_config.json` / `chat_template.jinja` holds the template.
    """
    if src.template not in ("lost", "changed"):
        return
    text = "has no tokenizer.chat_template" if src.template == "lost" else "has a different tokenizer.chat_template"
    yield Hit(f"the HF tokenizer has a chat template; the GGUF {text}",
              Location(file=src.gf.file, key="tokenizer.chat_template"), details={"template": src.template})


@rule("HVA913", "gguf-source-shape-mismatch", Severity.ERROR, scope=Scope.GGUF_SOURCE)
def gguf_source_shape_mismatch(src: GGUFSourceFacts) -> Iterator[Hit]:
    """A GGUF vocabulary matrix has another shape than the HF tensor it was converted from.

    Why:
    The converter copies `embed_tokens` / `lm_head` as they are: another shape means the GGUF came from
    another checkpoint (or an older copy of this one), so its rows do not hold this model's tokens.

    Fix:
    Convert the GGUF again from this checkpoint.
    """
    for gguf_name, hf_name, hf_shape, gguf_shape in src.shape_changes:
        yield Hit(f"{gguf_name} is {list(gguf_shape)} but the HF {hf_name} is {list(hf_shape)}",
                  Location(file=src.gf.file, tensor=gguf_name),
                  details={"gguf": list(gguf_shape), "hf": list(hf_shape), "hf_tensor": hf_name})


@rule("HVA914", "gguf-source-pad-fillers", Severity.INFO, scope=Scope.GGUF_SOURCE)
def gguf_source_pad_fillers(src: GGUFSourceFacts) -> Iterator[Hit]:
    """The GGUF holds `[PAD{i}]` filler tokens for embedding rows no HF token maps to: padding, not a bug.

    Why:
    llama.cpp needs one token per row, so the converter names every padding row `[PAD{i}]` (type UNUSED).
    They are never produced by tokenizing text; a model that samples one prints `[PAD{i}]`.

    Fix:
    Nothing to fix. See `--target vllm` for suppressing ids a model should never sample.
    """
    ids = list(src.fillers)
    if not ids:
        return
    yield Hit(f"{len(ids)} id(s) are [PAD{{i}}] fillers for padding rows ({ids[0]}..{ids[-1]})",
              Location(file=src.gf.file, key="tokenizer.ggml.tokens", token_id=ids[0]),
              details={"count": len(ids), "first": ids[0], "last": ids[-1]})

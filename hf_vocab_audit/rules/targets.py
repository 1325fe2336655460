"""HVA92x (what llama.cpp's converter will do) and HVA95x (what a serving engine will do): predictions for
``check HF_DIR --target gguf|vllm``, each quoting what the converter or engine says.

The converter is ``convert_hf_to_gguf.py`` as vendored by llama-cpp-python 0.3.36 (its ``conversion/base.py``:
``get_vocab_base``, ``_create_vocab_sentencepiece``, ``get_vocab_base_pre``); ``scripts/gguf_verdicts.py``
records what it did with tiny checkpoints (``tests/data/gguf_verdicts.json``, key ``converter``).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..core.findings import Location, Severity
from ..core.fixes import Applicability, Fix, FixAvailability, SuppressTokens
from ..facts.targets import TargetFacts, base_vocab_size, undecodable_ids
from .registry import Hit, Scope, rule

SHOW = 5


def _ids(ids: list[int]) -> str:
    return ", ".join(map(str, ids[:SHOW])) + (f" and {len(ids) - SHOW} more" if len(ids) > SHOW else "")


@rule("HVA920", "gguf-convert-vocab-assertion", Severity.ERROR, scope=Scope.TARGET)
def gguf_convert_vocab_assertion(t: TargetFacts) -> Iterator[Hit]:
    """llama.cpp's converter will stop: the tokenizer has ids at or past `config.json`'s `vocab_size`.

    Why:
    For a BPE tokenizer `convert_hf_to_gguf.py` runs `assert max(tokenizer.vocab.values()) < vocab_size`
    and fails with a bare `AssertionError` (hiyouga/LlamaFactory#4195, ggml-org/llama.cpp#3633). Under
    transformers 5 `tokenizer.vocab` holds the model's own tokens, not added ones, so this is a vocabulary
    larger than `vocab_size` (a tokenizer paired with a smaller model). Read from the converter's source:
    a BPE tokenizer built here stops the converter earlier (HVA923), so this one is not executed.

    Fix:
    Resize the embeddings to cover every id and set `vocab_size` (`hf-vocab-audit check HF_DIR --fix`).
    """
    tok = t.facts.tokenizer
    if t.target != "gguf" or t.path != "bpe" or tok is None or t.vocab_size is None or tok.max_id < t.vocab_size:
        return
    added = {a.id for a in tok.added_tokens}  # not in transformers 5's `tokenizer.vocab`: they are not asserted on
    ids = [i for i in tok.ids_at_or_above(t.vocab_size) if i not in added]
    if not ids:
        return
    yield Hit(
        f"convert_hf_to_gguf.py will fail \"assert max(tokenizer.vocab.values()) < vocab_size\": the tokenizer "
        f"has {len(ids)} id(s) >= vocab_size {t.vocab_size} ({_ids(ids)})",
        Location(file="config.json", key=t.facts.config.text_prefix + "vocab_size", token_id=ids[0]),
        details={"vocab_size": t.vocab_size, "max_id": tok.max_id, "count": len(ids)},
    )


@rule("HVA921", "gguf-convert-drops-tokens", Severity.ERROR, scope=Scope.TARGET)
def gguf_convert_drops_tokens(t: TargetFacts) -> Iterator[Hit]:
    """llama.cpp's converter will leave tokens of this tokenizer out of the GGUF (SentencePiece models).

    Why:
    With a `tokenizer.model`, `convert_hf_to_gguf.py` reads added tokens from `added_tokens.json` and
    `tokenizer_config.json`'s `added_tokens_decoder` only: tokens at or past `vocab_size` are skipped
    ("ignore token N: id is out of range, max=V-1"), and a token listed only in `tokenizer.json` (where
    transformers 5 saves `add_tokens`) is never read: its id becomes `[PAD{i}]`, or nothing when past
    `vocab_size`. The conversion "succeeds" and the GGUF tokenizes differently (ggml-org/llama.cpp#5838).

    Fix:
    Resize the embeddings to cover the tokens, list them in `added_tokens_decoder` (re-save the
    tokenizer), and convert again.
    """
    tok = t.facts.tokenizer
    if t.target != "gguf" or t.path != "sentencepiece" or tok is None:
        return
    vocab = t.vocab_size if t.vocab_size is not None else base_vocab_size(t.facts)
    base = base_vocab_size(t.facts)
    past = [a for a in tok.added_tokens if a.id >= vocab]
    unread = [a for a in tok.added_tokens if base <= a.id < vocab and a.id not in t.declared_added]
    if past:
        declared = [a for a in past if a.id in t.declared_added]
        said = (f"\"ignore token {declared[0].id}: id is out of range, max={vocab - 1}\"" if declared
                else "nothing (they are only in tokenizer.json)")
        yield Hit(
            f"{len(past)} added token(s) at ids >= vocab_size {vocab} will be dropped from the GGUF: "
            f"{', '.join(f'{a.content!r} ({a.id})' for a in past[:SHOW])}; the converter says {said}",
            Location(file="tokenizer.json", token=past[0].content, token_id=past[0].id),
            details={"vocab_size": vocab, "dropped": [{"id": a.id, "token": a.content} for a in past[:SHOW]],
                     "count": len(past)},
        )
    if unread:
        yield Hit(
            f"{len(unread)} added token(s) only in tokenizer.json will become [PAD{{i}}] fillers in the GGUF: "
            f"{', '.join(f'{a.content!r} ({a.id}) -> [PAD{a.id}]' for a in unread[:SHOW])}",
            Location(file="tokenizer.json", token=unread[0].content, token_id=unread[0].id),
            details={"replaced": [{"id": a.id, "token": a.content} for a in unread[:SHOW]], "count": len(unread)},
        )


@rule("HVA922", "gguf-convert-pad-fillers", Severity.INFO, scope=Scope.TARGET)
def gguf_convert_pad_fillers(t: TargetFacts) -> Iterator[Hit]:
    """llama.cpp's converter will name the padding rows `[PAD{i}]` (one token per row, type UNUSED).

    Why:
    A GGUF needs one token per embedding row; ids below `vocab_size` without a token become `[PAD{i}]`.
    That is expected for padded vocabularies (Qwen, `pad_to_multiple_of`); a model that samples one
    prints the filler's text.

    Fix:
    Nothing to fix.
    """
    tok = t.facts.tokenizer
    if t.target != "gguf" or tok is None or t.vocab_size is None:
        return
    if t.path == "sentencepiece":
        have = set(range(min(base_vocab_size(t.facts), t.vocab_size))) | set(t.declared_added)
    else:
        have = set(tok.ids)
    fillers = [i for i in range(t.vocab_size) if i not in have]
    if fillers:
        yield Hit(f"{len(fillers)} id(s) will be [PAD{{i}}] fillers in the GGUF ({_ids(fillers)})",
                  Location(file="config.json", key=t.facts.config.text_prefix + "vocab_size", token_id=fillers[0]),
                  details={"count": len(fillers), "first": fillers[0], "last": fillers[-1]})


@rule("HVA923", "gguf-convert-unknown-pre-tokenizer", Severity.ERROR, scope=Scope.TARGET)
def gguf_convert_unknown_pre_tokenizer(t: TargetFacts) -> Iterator[Hit]:
    """llama.cpp's converter will not recognise this BPE tokenizer's pre-tokenizer and stop.

    Why:
    `convert_hf_to_gguf.py` names the pre-tokenizer by the sha256 of how the tokenizer splits a fixed
    test text; an unknown hash raises `NotImplementedError: BPE pre-tokenizer was not recognized - update
    get_vocab_base_pre()`. A changed pre-tokenizer or normalizer (or a tokenizer trained from scratch)
    has a new hash.

    Fix:
    Use the base model's tokenizer unchanged, or add the tokenizer to llama.cpp's
    `convert_hf_to_gguf_update.py` (and its pre-tokenizer to llama.cpp) before converting.
    """
    if t.target != "gguf" or t.path != "bpe" or t.facts.tokenizer is None or t.pre_name is not None:
        return
    why = f"chkhsh {t.pre_hash}" if t.pre_hash else f"the tokenizer failed on the test text ({t.hash_error})"
    yield Hit(
        "convert_hf_to_gguf.py will fail \"NotImplementedError: BPE pre-tokenizer was not recognized - update "
        f"get_vocab_base_pre()\" ({why})",
        Location(file="tokenizer.json"),
        details={"chkhsh": t.pre_hash},
    )


@rule("HVA950", "vllm-undecodable-ids", Severity.WARNING, scope=Scope.TARGET, fix=FixAvailability.ALWAYS)
def vllm_undecodable_ids(t: TargetFacts) -> Iterator[Hit]:
    """An engine that samples the whole lm_head (vLLM, SGLang) can emit ids the tokenizer cannot decode.

    Why:
    vLLM samples from every row of lm_head, padding rows included, and detokenizes with the HF tokenizer,
    which has no token for them (vllm-project/vllm#13175 and its kin in NVIDIA-NeMo/RL and verl: an RL
    rollout whose sampled id, fed back as a prompt, fails vLLM's check "Token id X is out of vocabulary"
    in `Processor._validate_model_input`, vLLM 0.8-0.10, `vllm/v1/engine/processor.py`). The ids are in
    the report (`extra.vllm.suppress_token_ids`), ready for a logits processor or `bad_words_ids`.

    Fix:
    Mask the listed ids at sampling time (the JSON list in the report), or train/keep them at very low
    logits; never shrink the embeddings (HVA105). `check DIR --target vllm --fix OUT --unsafe-fixes` adds
    them to generation_config.json's `suppress_tokens` (unsafe: it changes what generation can emit).
    """
    if t.target != "vllm":
        return
    ids = undecodable_ids(t.facts)
    if not ids:
        return
    emb = t.facts.embeddings
    name = emb.output.name if emb is not None and emb.output is not None else (emb.input.name if emb and emb.input else "")
    yield Hit(
        f"the model can sample {len(ids)} id(s) the tokenizer cannot decode ({_ids(ids)}): vLLM fails \"Token id "
        f"{ids[0]} is out of vocabulary\" when such an id comes back as a prompt",
        Location(tensor=name, token_id=ids[0]),
        fix=Fix(f"add the {len(ids)} id(s) to generation_config.json suppress_tokens (generate() never samples them)",
                Applicability.UNSAFE, (SuppressTokens(tuple(ids)),)),
        details={"count": len(ids), "first": ids[0], "last": ids[-1]},
    )


@rule("HVA951", "vllm-adapter-refused", Severity.ERROR, scope=Scope.TARGET)
def vllm_adapter_refused(t: TargetFacts) -> Iterator[Hit]:
    """vLLM will refuse this LoRA adapter: it saves whole embedding / lm_head matrices, `modules_to_save`
    copies or trainable-token deltas, which vLLM's LoRA loader does not take.

    Why:
    vLLM serves LoRA adapters as low-rank deltas on the base's modules. Its PEFT config check refuses
    `modules_to_save` ("vLLM only supports modules_to_save being None.", `PEFTHelper` in
    `vllm/lora/peft_helper.py`, vLLM 0.7-0.10), and a saved tensor that is not a LoRA pair on an expected
    module fails `LoRAModel.from_local_checkpoint` ("While loading ..., expected target modules in ... but
    received ..."; vllm-project/vllm#9280). Cited from vLLM's source as known, not run here.

    Fix:
    Merge the adapter into its base and serve the merged checkpoint: `PeftModel.from_pretrained(base,
    ADAPTER).merge_and_unload().save_pretrained(OUT)` (resize the base first if HVA801 says so), then
    `hf-vocab-audit check OUT --target vllm`.
    """
    adapter = t.facts.adapter
    if t.target != "vllm" or adapter is None:
        return
    reasons = []
    if adapter.modules_to_save:
        reasons.append(f"modules_to_save {list(adapter.modules_to_save)}: \"vLLM only supports modules_to_save being None.\"")
    for saved in (adapter.saved_input, adapter.saved_output):
        if saved is not None:
            reasons.append(f"a whole {saved.name} ({saved.rows} rows, a resized vocabulary) is not a LoRA module")
    if adapter.trainable_token_indices:
        reasons.append(f"trainable_token_indices ({len(adapter.trainable_token_indices)} ids) save a "
                       "trainable_tokens_delta, not a LoRA module")
    if not reasons:
        return
    yield Hit(
        "vLLM will refuse this adapter: " + "; ".join(reasons) + ". Merge it first: PeftModel.from_pretrained(base, "
        f"'{adapter.folder.name}').merge_and_unload().save_pretrained(OUT)",
        Location(file="adapter_config.json"),
        details={"reasons": reasons},
    )

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
from ..core.options import TargetKind
from ..facts.targets import TargetFacts, base_vocab_size, control_looking_not_control, undecodable_ids
from .registry import Hit, Scope, rule

SHOW = 5


def _ids(ids: list[int]) -> str:
    return ", ".join(map(str, ids[:SHOW])) + (f" and {len(ids) - SHOW} more" if len(ids) > SHOW else "")


@rule("HVA920", "gguf-convert-vocab-assertion", Severity.ERROR, scope=Scope.TARGET)
def gguf_convert_vocab_assertion(t: TargetFacts) -> Iterator[Hit]:
    """llama.cpp's converter will stop: the tokenizer has ids at or past `config.json`'s `vocab_size`.

    Why:
    For a BPE tokenizer `convert_hf_to_gguf.py` runs `assert max(tokenizer.vocab.values()) < vocab_size`
    and fails with a bare `AssertionError` (hiyouga/LlamaFactory#4195, ggml-org/llama.cpp#3633).
    `tokenizer.vocab` holds the added tokens too, so tokens added without a resize stop it as surely as a
    tokenizer paired with a smaller model or a hand-edited `vocab_size`. Decided by execution: the
    converter of llama-cpp-python 0.3.36 on a tiny GPT-2 whose tokenizer it recognises ("gpt-2") raised
    `AssertionError` for 3 tokens added without a resize and for `vocab_size` edited below the tokenizer,
    and converted the healthy and the resized folders (tests/data/gguf_verdicts.json, `bpe_gpt2_*`).

    Fix:
    Resize the embeddings to cover every id and set `vocab_size` (`hf-vocab-audit check HF_DIR --fix`).
    """
    tok = t.facts.tokenizer
    if t.target is not TargetKind.GGUF or t.path != "bpe" or tok is None or t.vocab_size is None or tok.max_id < t.vocab_size:
        return
    ids = list(tok.ids_at_or_above(t.vocab_size))  # added tokens included: `tokenizer.vocab` has them
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
    `vocab_size` (Phi-3's own reader, `Phi3MiniModel` in `conversion/phi.py`, also reads tokenizer.json's).
    The conversion "succeeds" and the GGUF tokenizes differently (ggml-org/llama.cpp#5838).

    Fix:
    Resize the embeddings to cover the tokens, list them in `added_tokens_decoder` (re-save the
    tokenizer), and convert again.
    """
    tok = t.facts.tokenizer
    if t.target is not TargetKind.GGUF or t.path != "sentencepiece" or tok is None:
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
    if t.target is not TargetKind.GGUF or tok is None or t.vocab_size is None or t.path in ("llama_hf", "none"):
        return  # LlamaHfVocab writes no fillers (HVA926); "none": nothing is written (HVA925)
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
    `convert_hf_to_gguf.py` names the pre-tokenizer by the sha256 of the ids `AutoTokenizer` gives for a
    fixed test text; an unknown hash raises `NotImplementedError: BPE pre-tokenizer was not recognized -
    update get_vocab_base_pre()`. A changed pre-tokenizer, normalizer or vocabulary (a tokenizer trained
    from scratch) has a new hash, and so has a tokenizer under a config whose transformers 5 class puts its
    own pre-tokenizer in place of tokenizer.json's (measured: GPT-2's split under a Qwen2 config). The
    audit hashes what `AutoTokenizer` gives, as the converter does; its hash equals the converter's own on
    every case of tests/data/gguf_verdicts.json. Only where the converter takes the BPE path: its model
    class chooses (`facts/gguf_converter_paths.py`), and a Llama-family folder with `tokenizer.model`, or
    with a SentencePiece-converted `tokenizer.json` (`LlamaHfVocab`), is never hashed.

    Fix:
    Use the base model's tokenizer unchanged, or add the tokenizer to llama.cpp's
    `convert_hf_to_gguf_update.py` (and its pre-tokenizer to llama.cpp) before converting.
    """
    if t.target is not TargetKind.GGUF or t.path != "bpe" or t.facts.tokenizer is None or t.pre_name is not None:
        return
    why = f"chkhsh {t.pre_hash}" if t.pre_hash else f"the tokenizer failed on the test text ({t.hash_error})"
    yield Hit(
        "convert_hf_to_gguf.py will fail \"NotImplementedError: BPE pre-tokenizer was not recognized - update "
        f"get_vocab_base_pre()\" ({why})",
        Location(file="tokenizer.json"),
        details={"chkhsh": t.pre_hash},
    )


@rule("HVA924", "gguf-convert-control-looking-token", Severity.WARNING, scope=Scope.TARGET)
def gguf_convert_control_looking_token(t: TargetFacts) -> Iterator[Hit]:
    """A token llama.cpp treats as an end-of-turn / end-of-generation marker (`<end_of_turn>`, `<|eot_id|>`,
    `</s>`, ...) is not special in the HF tokenizer: the GGUF will not type it CONTROL.

    Why:
    `convert_hf_to_gguf.py` types an added token CONTROL only when `added_tokens_decoder` marks it
    `"special": true` or its text looks special (`<|...|>`, `does_token_look_special` in
    `conversion/base.py`); otherwise it writes USER_DEFINED (a token of the model's own vocabulary: NORMAL).
    llama.cpp's vocabulary loader (`src/llama-vocab.cpp`) then prints at every load "control-looking token:
    ... was not control-type; this is probably a bug in the model. its type will be overridden", and stops
    generating at it: the GGUF treats the token unlike the HF tokenizer, which decodes it as text and keeps
    it with `skip_special_tokens=True`.

    Fix:
    Mark the token special in the HF tokenizer (`tokenizer_config.json` `added_tokens_decoder`,
    `"special": true`; `tokenizer.json` `added_tokens`), then convert.
    """
    for c in control_looking_not_control(t):
        kind = "USER_DEFINED (an added token with special: false)" if c.added else "NORMAL (not an added token)"
        yield Hit(
            f"{c.token!r} (id {c.id}) will be typed {kind} in the GGUF; llama.cpp warns at every load "
            f"\"control-looking token: {c.id:6d} '{c.token}' was not control-type; this is probably a bug in the "
            "model. its type will be overridden\"",
            Location(file="tokenizer_config.json", key="added_tokens_decoder", token=c.token, token_id=c.id),
            details={"id": c.id, "token": c.token, "added": c.added},
        )


@rule("HVA925", "gguf-convert-no-vocabulary-path", Severity.ERROR, scope=Scope.TARGET)
def gguf_convert_no_vocabulary_path(t: TargetFacts) -> Iterator[Hit]:
    """llama.cpp's converter has no vocabulary reader for this folder under this architecture and will stop.

    Why:
    `convert_hf_to_gguf.py` picks the vocabulary reader by the model class of `config.json`'s architecture,
    not by the files present: `GemmaModel`, `Gemma2Model`, `BaichuanModel`, `OrionModel` and `MiniCPMModel`
    read `tokenizer.model` only (`_set_vocab_sentencepiece` raises `FileNotFoundError: File not found:
    .../tokenizer.model`), `Phi3MiniModel` needs it unless `tokenizer_class` is `GPT2Tokenizer`, `JambaModel`
    falls back to `LlamaHfVocab` only (llama-cpp-python 0.3.36, `conversion/*.py`; the table is
    `facts/gguf_converter_paths.py`). A folder saved with `tokenizer.json` alone (transformers 5 writes no
    `tokenizer.model` unless asked) cannot be converted. Decided by execution: a tiny Gemma folder without
    `tokenizer.model` (tests/data/gguf_verdicts.json, `converter_paths`).

    Fix:
    Copy the base model's `tokenizer.model` into the folder (or save the slow tokenizer), then convert.
    """
    if t.target is not TargetKind.GGUF or t.path != "none" or t.facts.tokenizer is None:
        return
    yield Hit(
        f"convert_hf_to_gguf.py will stop: {t.path_why} (\"FileNotFoundError: File not found: tokenizer.model\" "
        "or \"Missing tokenizer.model\")",
        Location(file="config.json", key="architectures"),
        details={"converter_class": t.converter_class},
    )


@rule("HVA926", "gguf-convert-llama-hf-rows", Severity.ERROR, scope=Scope.TARGET)
def gguf_convert_llama_hf_rows(t: TargetFacts) -> Iterator[Hit]:
    """llama.cpp's converter will write a Llama vocabulary from tokenizer.json whose token count is not the
    embedding's rows: llama.cpp refuses the GGUF.

    Why:
    Without `tokenizer.model`, `LlamaModel.set_vocab` reads a SentencePiece-converted `tokenizer.json`
    through `gguf.LlamaHfVocab` (`_set_vocab_llama_hf`, llama-cpp-python 0.3.36): the tokenizer's own ids,
    then the added tokens past them, one after another. Nothing pads the list to `config.json`'s
    `vocab_size` (no `[PAD{i}]`) and nothing compares it with the rows, so tokens added without a resize
    give more tokens than `token_embd` rows, and a resize to a multiple gives fewer; the conversion
    "succeeds" and llama.cpp refuses the full load (`check_tensor_dims: tensor 'token_embd.weight' has
    wrong shape`). Decided by execution: tiny Llama-2 folders with tokenizer.json only
    (tests/data/gguf_verdicts.json, `converter_paths`).

    Fix:
    Resize the embeddings to the tokenizer's length exactly (`resize_token_embeddings(len(tokenizer))`, no
    `pad_to_multiple_of`), or keep `tokenizer.model` in the folder so the converter pads with `[PAD{i}]`.
    """
    h, emb = t.llama_hf, t.facts.embeddings
    rows = emb.input_rows if emb is not None and emb.input_rows is not None else t.vocab_size
    if t.target is not TargetKind.GGUF or t.path != "llama_hf" or h is None or rows is None:
        return
    if h.tokens != rows:
        more = h.tokens > rows
        yield Hit(
            f"the GGUF will have {h.tokens} tokens (tokenizer.json's {h.base} + {len(h.appended)} added, read by "
            f"LlamaHfVocab: no [PAD{{i}}] fillers) over {rows} embedding rows: llama.cpp will refuse it "
            "(\"check_tensor_dims: tensor 'token_embd.weight' has wrong shape\")"
            + (f"; the tokens past the rows: {', '.join(repr(x) for _, x in h.appended[rows - h.tokens:][:SHOW])}"
               if more else ""),
            Location(file="config.json", key=t.facts.config.text_prefix + "vocab_size", token_id=min(h.tokens, rows)),
            details={"tokens": h.tokens, "rows": rows, "base": h.base, "added": len(h.appended)},
        )


@rule("HVA950", "vllm-undecodable-ids", Severity.WARNING, scope=Scope.TARGET, fix=FixAvailability.ALWAYS)
def vllm_undecodable_ids(t: TargetFacts) -> Iterator[Hit]:
    """An engine that samples the whole lm_head (vLLM, SGLang) can emit ids the tokenizer cannot decode.

    Why:
    vLLM samples from every row of lm_head, padding rows included, and detokenizes with the HF tokenizer,
    which has no token for them (vllm-project/vllm#13175 and its kin in NVIDIA-NeMo/RL#237 and verl#1398:
    an RL rollout feeds a sampled id back as a prompt). vLLM's prompt check, read in the released wheels:
    up to 0.10.1.1 `Processor._validate_model_input` raises "Token id X is out of vocabulary" when the
    prompt's largest id is above `tokenizer.max_token_id` (`vllm/v1/engine/processor.py:385-387`), which is
    `max(max(tokenizer.get_vocab().values()), tokenizer.vocab_size)` (`vllm/transformers_utils/tokenizer.py:
    105-112`; `vocab_size` counts the model's own tokens, so the first refused id can be one past the first
    padding row); from 0.10.2 it compares with `max(tokenizer.max_token_id, model vocab_size - 1)`
    (`processor.py:485-488`, vllm-project/vllm#22471): padding rows pass and decode to no text (the
    detokenizer's `DecodeStream.step`, `vllm/v1/engine/detokenizer.py:230` in 0.10.2, returns nothing for an id the
    tokenizer lacks: measured with the tokenizers library here). The ids are
    in the report (`vllm.suppress_token_ids` in the JSON, `Report.vllm`), ready for a logits processor or `bad_words_ids`.

    Fix:
    Mask the listed ids at sampling time (the JSON list in the report), or train/keep them at very low
    logits; never shrink the embeddings (HVA105). `check DIR --target vllm --fix OUT --unsafe-fixes` adds
    them to generation_config.json's `suppress_tokens` (unsafe: it changes what generation can emit).
    """
    if t.target is not TargetKind.VLLM:
        return
    ids = undecodable_ids(t.facts)
    if not ids:
        return
    emb, tok = t.facts.embeddings, t.facts.tokenizer
    name = emb.output.name if emb is not None and emb.output is not None else (emb.input.name if emb and emb.input else "")
    max_token_id = max(tok.max_id, base_vocab_size(t.facts)) if tok is not None else -1  # vLLM's, up to 0.10.1.1
    refused = [i for i in ids if i > max_token_id]
    engine = (f"vLLM up to 0.10.1.1 refuses such an id fed back as a prompt (\"Token id {refused[0]} is out of "
              f"vocabulary\", above its max_token_id {max_token_id}); from 0.10.2 it accepts ids below the model's "
              "vocab_size and they decode to no text" if refused
              else "they decode to no text (vLLM's prompt check accepts them: none is above its max_token_id "
                   f"{max_token_id})")
    yield Hit(
        f"the model can sample {len(ids)} id(s) the tokenizer cannot decode ({_ids(ids)}): {engine}",
        Location(tensor=name, token_id=ids[0]),
        fix=Fix(f"add the {len(ids)} id(s) to generation_config.json suppress_tokens (generate() never samples them)",
                Applicability.UNSAFE, (SuppressTokens(tuple(ids)),)),
        details={"count": len(ids), "first": ids[0], "last": ids[-1], "vllm_max_token_id": max_token_id,
                 "refused_as_prompt_up_to_0_10_1": len(refused)},
    )


def _vllm_lora_weight(name: str) -> bool:
    """Whether vLLM's ``parse_fine_tuned_lora_name`` takes this tensor name (``vllm/lora/utils.py:137-150``,
    0.10.1.1 and 0.10.2): a ``lora_A``/``lora_B`` weight, a ``lora_embedding_A``/``_B`` or a bias."""
    parts = name.split(".")
    return ((parts[-1] == "weight" and len(parts) > 1 and parts[-2] in ("lora_A", "lora_B"))
            or parts[-1] in ("lora_embedding_A", "lora_embedding_B", "bias"))


@rule("HVA951", "vllm-adapter-refused", Severity.ERROR, scope=Scope.TARGET)
def vllm_adapter_refused(t: TargetFacts) -> Iterator[Hit]:
    """vLLM will refuse this LoRA adapter: `modules_to_save`, or saved tensors that are not LoRA factors (whole
    embedding / lm_head matrices after a resize, `modules_to_save` copies, trainable-token deltas).

    Why:
    vLLM serves LoRA adapters as low-rank deltas on the base's modules. Read in the released wheels 0.10.1.1
    and 0.10.2: `WorkerLoRAManager._load_adapter` first runs `PEFTHelper.validate_legal`
    (`vllm/lora/worker_manager.py:103-109`), which refuses `modules_to_save` ("vLLM only supports
    modules_to_save being None.", `vllm/lora/peft_helper.py:47-48`); then `LoRAModel.from_local_checkpoint`
    parses every saved tensor name (`vllm/lora/models.py:217-220` in 0.10.1.1, `218-221` in 0.10.2), and
    `parse_fine_tuned_lora_name` raises "<name> is unsupported LoRA weight" for any tensor that is not a
    `lora_A`/`lora_B` weight, a `lora_embedding_A`/`_B` or a bias (`vllm/lora/utils.py:150`):
    `...embed_tokens.weight` saved after `resize_token_embeddings`, `...trainable_tokens_delta`
    (`trainable_token_indices`); vllm-project/vllm#9280. vLLM's own extra-vocabulary path
    (`new_embeddings.safetensors`, `--lora-extra-vocab-size`) is not what PEFT writes. vLLM does not run
    here: the rule follows that code, not an execution.

    Fix:
    Merge the adapter into its base and serve the merged checkpoint: `PeftModel.from_pretrained(base,
    ADAPTER).merge_and_unload().save_pretrained(OUT)` (resize the base first if HVA801 says so), then
    `hf-vocab-audit check OUT --target vllm`.
    """
    adapter = t.facts.adapter
    if t.target is not TargetKind.VLLM or adapter is None:
        return
    reasons = []
    if adapter.modules_to_save:
        reasons.append(f"modules_to_save {list(adapter.modules_to_save)}: \"vLLM only supports modules_to_save being "
                       "None.\"")
    unsupported = [n for n in sorted(adapter.tensors) if not _vllm_lora_weight(n)]
    if unsupported:
        more = f" (and {len(unsupported) - 1} more tensor(s) that are not LoRA factors)" if len(unsupported) > 1 else ""
        reasons.append(f"\"{unsupported[0]} is unsupported LoRA weight\"{more}")
    if not reasons:
        return
    yield Hit(
        "vLLM will refuse this adapter: " + "; then ".join(reasons) + ". Merge it first: PeftModel.from_pretrained("
        f"base, '{adapter.folder.name}').merge_and_unload().save_pretrained(OUT)",
        Location(file="adapter_config.json" if adapter.modules_to_save else adapter.weights_file or "adapter_config.json",
                 tensor=None if adapter.modules_to_save or not unsupported else unsupported[0]),
        details={"reasons": reasons, "unsupported_tensors": unsupported[:SHOW], "unsupported_count": len(unsupported)},
    )

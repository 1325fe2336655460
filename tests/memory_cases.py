"""The rule fixtures of tests/rules/ as live (model, tokenizer) objects, for in-memory audits.

Each case builds what a training script would hold: a transformers model and tokenizer, changed the way
users change them (``add_special_tokens`` without a resize, a config edited in code, a head replaced).
``fires`` and ``quiet`` name the rules each case is a fixture for; ``FILE_ONLY`` names the rules whose
fixtures exist only as files (a live object cannot hold them), with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from builders import CHATML, STYLE_IDS, TINY, build_config, new_model, new_tokenizer

from hf_vocab_audit.rules.memory_locations import details_on_objects, spoken

# Rules a live model and tokenizer can never trigger: their causes exist only in files.
FILE_ONLY = {
    "HVA001": "a pickle that torch.load(weights_only=True) refuses is a file; a live model was already loaded",
    "HVA207": "conflicting added-token declarations are two files disagreeing; a live tokenizer has one backend",
}
LABELS = {0: "neg", 1: "neu", 2: "pos"}
FILE_KEYS = ("weights_format", "weight_files", "tokenizer_source")  # facts only a folder has


def comparable_findings(found: Any) -> list[dict[str, Any]]:
    """Findings as dicts, without the file names, lines and folder advice a live pair lacks."""
    findings = []
    for f in found:
        d = f.to_dict()
        d["location"].pop("file", None)
        d["location"].pop("line", None)  # a line in a file: objects in memory have none
        # Wording differs by design: a live pair's messages name the objects, its advice is a call on them,
        # and it carries no --fix edit (no folder to run it on): the same text once the files are spoken.
        d["message"] = spoken(d["message"])
        d["details"] = details_on_objects(d["details"])
        d.pop("hint", None)
        d.pop("fix", None)
        findings.append(d)
    return findings


def comparable(report: Any) -> dict[str, Any]:
    """A report's findings, rules run and skipped, and facts, without the file names in-memory lacks."""
    findings = comparable_findings(report.findings)
    facts = {k: v for k, v in report.facts.items() if k not in FILE_KEYS}
    for side in ("input_embedding", "output_embedding"):
        if facts.get(side):
            facts[side] = {k: v for k, v in facts[side].items() if k != "file"}
    return {"findings": findings, "rules_run": report.rules_run, "facts": facts,
            "skipped": sorted(s.what for s in report.skipped)}


_LOADED: dict[tuple[str, str], tuple[Any, Any]] = {}


def loaded(folder: Path, tokenizer: Path | None = None) -> tuple[Any, Any]:
    """The live model and tokenizer ``from_pretrained`` makes of a folder (each folder loaded once)."""
    key = (str(folder), str(tokenizer or folder))
    if key not in _LOADED:
        import transformers

        arch = json.loads((folder / "config.json").read_text())["architectures"][0]
        _LOADED[key] = (getattr(transformers, arch).from_pretrained(folder),
                        transformers.AutoTokenizer.from_pretrained(tokenizer or folder))
    return _LOADED[key]


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], tuple[Any, Any]]
    fires: tuple[str, ...] = ()
    quiet: tuple[str, ...] = ()


def _pair(kind: str, rows: int, tok_vocab: int | None = None, *, style: str | None = None,
          model: dict[str, Any] | None = None, **tok: Any) -> tuple[Any, Any]:
    from builders import style_of

    return (new_model(kind, rows, **(model or {})),
            new_tokenizer(tok_vocab if tok_vocab is not None else rows, style=style or style_of(kind), **tok))


def _bert(**tok: Any) -> dict[str, Any]:
    return {"cls": "BertTokenizer", **tok}


def _roberta(**tok: Any) -> dict[str, Any]:
    return {"cls": "RobertaTokenizer", **tok}


def _with(pair: tuple[Any, Any], change: Callable[[Any, Any], None]) -> tuple[Any, Any]:
    change(*pair)
    return pair


def _set_config(**values: Any) -> Callable[[Any, Any], None]:
    def change(model: Any, _tok: Any) -> None:
        for key, value in values.items():
            setattr(model.config, key, value)

    return change


def _set_generation(**values: Any) -> Callable[[Any, Any], None]:
    def change(model: Any, _tok: Any) -> None:
        for key, value in values.items():
            setattr(model.generation_config, key, value)

    return change


def _grow_lm_head(model: Any, _tok: Any) -> None:
    model.lm_head = torch.nn.Linear(model.lm_head.in_features, 108, bias=False)


def _labels(id2label: dict[int, str], label2id: dict[str, int]) -> Callable[[Any, Any], None]:
    def change(model: Any, _tok: Any) -> None:
        model.config.id2label = dict(id2label)
        model.config.label2id = dict(label2id)

    return change


def _llava(rows: int) -> Any:
    """A tiny Llava: transformers 5 renames its weights on load and back on save."""
    import transformers

    text = build_config("llama", rows)
    vision = transformers.CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                           num_attention_heads=2, image_size=8, patch_size=4)
    torch.manual_seed(0)
    return transformers.LlavaForConditionalGeneration(
        transformers.LlavaConfig(text_config=text, vision_config=vision, image_token_index=rows - 1))


def _processor(tok: Any, template: str) -> Any:
    """A LlavaProcessor around ``tok``: a multimodal model's tokenizer and chat template come in one object."""
    import transformers

    images = transformers.CLIPImageProcessorPil(size={"shortest_edge": 8}, crop_size=8)  # no torchvision needed
    return transformers.LlavaProcessor(image_processor=images,
                                       tokenizer=tok, chat_template=template, patch_size=4)


def _mixtral(rows: int) -> Any:
    """A tiny Mixtral: its experts are fused in memory and saved one tensor per expert."""
    import transformers

    torch.manual_seed(0)
    return transformers.MixtralForCausalLM(transformers.MixtralConfig(
        vocab_size=rows, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, **TINY,
        **STYLE_IDS["llama"]))


def _set_pad(token: str) -> Callable[[Any, Any], None]:
    def change(_model: Any, tok: Any) -> None:
        tok.pad_token = token  # not added: it encodes as unk now, and is added at load after a save

    return change


def _resize(model: Any, tok: Any) -> None:
    model.resize_token_embeddings(len(tok))


def _add_chat_tokens(_model: Any, tok: Any) -> None:
    """What a notebook user does: new chat tokens and a template, and no resize."""
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tok.chat_template = CHATML


def _clip(**kwargs: Any) -> tuple[Any, Any]:
    from family_builders import new_clip_text

    return new_clip_text(**kwargs)


CASES: tuple[Case, ...] = (
    # HVA1xx
    Case("healthy-llama", lambda: _pair("llama", 104),
         quiet=("HVA101", "HVA102", "HVA103", "HVA104", "HVA105", "HVA201", "HVA202", "HVA203", "HVA204", "HVA208",
                "HVA002", "HVA401")),
    Case("add-special-tokens-no-resize", lambda: _with(_pair("llama", 104), _add_chat_tokens),
         fires=("HVA101", "HVA102", "HVA206"), quiet=("HVA205",)),
    Case("add-special-tokens-then-resize", lambda: _with(_with(_pair("llama", 104), _add_chat_tokens), _resize),
         quiet=("HVA101", "HVA102", "HVA103", "HVA104", "HVA205", "HVA206")),
    Case("gpt2-tied-added-tokens", lambda: _pair("gpt2", 100, added=[f"tok{i}" for i in range(8)]),
         fires=("HVA101",), quiet=("HVA102", "HVA104")),
    Case("config-vocab-size-128", lambda: _with(_pair("llama", 104), _set_config(vocab_size=128)),
         fires=("HVA103",)),
    Case("lm-head-108-rows", lambda: _with(_pair("llama", 104), _grow_lm_head), fires=("HVA104",),
         quiet=("HVA102",)),
    Case("qwen2-padded", lambda: _pair("qwen2", 128, 104), fires=("HVA105",), quiet=("HVA101", "HVA208")),
    Case("padded-with-chat-tokens", lambda: _with(_pair("qwen2", 128, 104), _add_chat_tokens),
         fires=("HVA105",), quiet=("HVA101", "HVA205", "HVA206")),
    Case("token-id-gap", lambda: _pair("llama", 120, 104, vocab_edit={"w99": 110}), fires=("HVA208",)),
    Case("added-tokens-contiguous", lambda: _pair("llama", 106, 104, added=["x1", "x2"]), quiet=("HVA208",)),
    # HVA2xx
    Case("special-ids-out-of-range", lambda: _with(_with(_pair("llama", 104), _set_config(eos_token_id=[2, 200])),
                                                   _set_generation(pad_token_id=150)),
         fires=("HVA201", "HVA202")),
    Case("generation-eos-disagrees", lambda: _with(_pair("llama", 104), _set_generation(eos_token_id=[5, 6])),
         fires=("HVA202",), quiet=("HVA201",)),
    Case("eos-list-includes-tokenizer-id", lambda: _with(_with(_pair("llama", 104), _set_config(eos_token_id=[2, 7])),
                                                         _set_generation(eos_token_id=[2, 7])),
         quiet=("HVA202",)),
    Case("no-pad-token", lambda: _pair("llama", 103, pad=None, model={"pad_token_id": None}),
         fires=("HVA203",), quiet=("HVA204",)),
    Case("pad-is-eos", lambda: _pair("llama", 103, pad="</s>", model={"pad_token_id": 2}),
         fires=("HVA204",), quiet=("HVA203",)),
    Case("template-markers-split", lambda: _pair("llama", 104, chat_template=CHATML), fires=("HVA205",),
         quiet=("HVA206",)),
    Case("template-markers-resized", lambda: _pair("llama", 106, 104, added_special=["<|im_start|>", "<|im_end|>"],
                                                   chat_template=CHATML),
         quiet=("HVA101", "HVA205", "HVA206")),
    Case("special-token-not-in-vocab", lambda: _pair("llama", 104, pad="<newpad>"), fires=("HVA101",)),
    Case("pad-set-to-unknown-string", lambda: _with(_pair("llama", 104), _set_pad("<newpad>")),
         fires=("HVA101", "HVA201", "HVA202")),
    Case("added-special-tokens-consistent", lambda: _pair("llama", 110, 104, added_special=["<x>"]),
         quiet=("HVA207",)),
    # HVA3xx
    Case("bert-max-length-above-positions", lambda: _pair("bert", 104, **_bert(model_max_length=128)),
         fires=("HVA301",), quiet=("HVA302", "HVA303")),
    Case("roberta-off-by-two", lambda: _pair("roberta", 104, **_roberta(model_max_length=66)), fires=("HVA301",)),
    Case("roberta-within-positions", lambda: _pair("roberta", 104, **_roberta(model_max_length=64)),
         quiet=("HVA301", "HVA302", "HVA303")),
    Case("rotary-long-max-length", lambda: _pair("llama", 104, model_max_length=100000), quiet=("HVA301", "HVA303")),
    Case("bert-no-max-length", lambda: _pair("bert", 104, **_bert()), fires=("HVA303",), quiet=("HVA301",)),
    Case("bert-tokenizer-on-roberta", lambda: _pair("roberta", 104, style="bert",
                                                    model={"pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 3},
                                                    **_bert(model_max_length=64)),
         fires=("HVA302",)),
    Case("bert-tokenizer-without-token-types", lambda: _pair(
        "roberta", 104, style="bert", model={"pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 3},
        **_bert(model_max_length=64, model_input_names=["input_ids", "attention_mask"])), quiet=("HVA302",)),
    # HVA4xx
    Case("classifier-consistent", lambda: _with(_pair("bert-cls", 104, model={"num_labels": 3},
                                                      **_bert(model_max_length=64)),
                                                _labels(LABELS, {v: k for k, v in LABELS.items()})),
         quiet=("HVA401",)),
    Case("classifier-rows-differ", lambda: _with(_pair("bert-cls", 104, model={"num_labels": 3},
                                                       **_bert(model_max_length=64)),
                                                 _labels({i: f"L{i}" for i in range(5)}, {f"L{i}": i for i in range(5)})),
         fires=("HVA401",)),
    Case("label2id-not-inverse", lambda: _with(_pair("roberta-cls", 104, model={"num_labels": 3},
                                                     **_roberta(model_max_length=64)),
                                               _labels({0: "neg", 1: "neu", 3: "pos"}, {"neg": 0, "neu": 2, "pos": 3})),
         fires=("HVA401",)),
    Case("causal-score-head", lambda: _with(_pair("llama-cls", 104, model={"num_labels": 4}),
                                            _labels({0: "a", 1: "b"}, {"a": 0, "b": 1})),
         fires=("HVA401",)),
    # Architectures whose saved tensor names differ from the live ones, and encoder-decoders
    Case("llava-image-token-no-resize", lambda: (_llava(104), new_tokenizer(104, added_special=["<image>"])),
         fires=("HVA101", "HVA102")),
    Case("llava-processor-template-split",
         lambda: (_llava(106), _processor(new_tokenizer(104, added_special=["<image>"]), CHATML)),
         fires=("HVA205",), quiet=("HVA101", "HVA102")),
    Case("mixtral-healthy", lambda: (_mixtral(104), new_tokenizer(104)), quiet=("HVA101", "HVA102", "HVA104")),
    Case("t5-added-token", lambda: _pair("t5", 104, added=["extra"]), fires=("HVA101",), quiet=("HVA102",)),
    Case("bart-healthy", lambda: _pair("bart", 104, **_roberta(model_max_length=64)),
         quiet=("HVA101", "HVA201", "HVA202", "HVA301")),
    # HVA209: CLIP text towers pooling by eos_token_id (tests/rules/test_clip_pooling.py runs them)
    Case("clip-legacy-eos-token-added-after", lambda: _clip(eos_token_id=2, added=["<cat-toy>"]), fires=("HVA209",)),
    Case("clip-eos-largest-id", lambda: _clip(eos_token_id=2), quiet=("HVA209", "HVA101")),
    # HVA0xx
    Case("remote-code-reference", lambda: _with(
        _pair("llama", 104), _set_config(auto_map={"AutoModelForCausalLM": "modeling_evil.EvilModel"})),
         fires=("HVA002",)),
)


# Families beyond decoder-only LLMs (tests/rules/test_generation.py, test_vocab_biases.py, test_multimodal.py)
FILE_ONLY.update({
    **{code: "tie_word_embeddings disagreeing with the saved tensors is a file; a live model was built from one of "
             "them (tied: one shared matrix; untied: its own lm_head)" for code in ("HVA960", "HVA961")},
    "HVA212": "a config.json key shadowed by generation_config.json is two files; a live model has one generation_config",
    **{code: "a PEFT adapter is audited as an adapter folder against its base; audit(model=...) takes the model itself"
       for code in ("HVA801", "HVA802", "HVA803", "HVA804", "HVA805", "HVA806")},
})


def _whisper() -> Any:
    import transformers

    torch.manual_seed(0)
    return transformers.WhisperForConditionalGeneration(transformers.WhisperConfig(
        vocab_size=60, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, num_mel_bins=8, max_source_positions=8,
        max_target_positions=32, pad_token_id=3, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
        suppress_tokens=[], begin_suppress_tokens=[]))


def _gemma3(rows: int, image: int) -> Any:
    import transformers

    torch.manual_seed(0)
    vision = transformers.SiglipVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                             num_attention_heads=2, image_size=8, patch_size=4)
    text = transformers.Gemma3TextConfig(vocab_size=rows, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=1, head_dim=8, pad_token_id=3,
                                         bos_token_id=1, eos_token_id=2, sliding_window=8)
    return transformers.Gemma3ForConditionalGeneration(transformers.Gemma3Config(
        vision_config=vision, text_config=text, mm_tokens_per_image=4, image_token_index=image, boi_token_index=102,
        eoi_token_index=103))


def _short_final_logits_bias(model: Any, _tok: Any) -> None:
    model.register_buffer("final_logits_bias", torch.zeros(1, 100))


GEMMA_TOKENS = ["<start_of_image>", "<end_of_image>", "<image_soft_token>"]
FAMILY_QUIET = ("HVA106", "HVA210", "HVA211", "HVA213", "HVA701", "HVA702", "HVA703", "HVA704")

CASES = CASES + (
    Case("bart-forced-bos-out-of-range", lambda: _with(
        _pair("bart", 104, **_roberta(model_max_length=64)), _set_generation(forced_bos_token_id=150)),
         fires=("HVA210",), quiet=("HVA211", "HVA106")),
    Case("bart-suppress-out-of-range", lambda: _with(
        _pair("bart", 104, **_roberta(model_max_length=64)), _set_generation(suppress_tokens=[200])),
         fires=("HVA211",), quiet=("HVA210",)),
    Case("bart-short-final-logits-bias", lambda: _with(
        _pair("bart", 104, **_roberta(model_max_length=64)), _short_final_logits_bias), fires=("HVA106",)),
    Case("whisper-alignment-heads", lambda: _with(
        (_whisper(), new_tokenizer(60)), _set_generation(alignment_heads=[[3, 0]])), fires=("HVA213",)),
    Case("llava-healthy-placeholders", lambda: (_llava(104), new_tokenizer(103, added_special=["<image>"])),
         quiet=FAMILY_QUIET),
    Case("llava-image-index-at-pad", lambda: _with(
        (_llava(104), new_tokenizer(103, added_special=["<image>"])), _set_config(image_token_index=3)),
         fires=("HVA701",), quiet=("HVA702",)),
    Case("llava-image-index-past-rows", lambda: _with(
        (_llava(104), new_tokenizer(103, added_special=["<image>"])), _set_config(image_token_index=200)),
         fires=("HVA701", "HVA702"), quiet=("HVA703",)),
    Case("gemma3-oov-image-token", lambda: (_gemma3(104, 104), new_tokenizer(102, added_special=GEMMA_TOKENS)),
         fires=("HVA703",), quiet=("HVA101", "HVA702")),
    Case("gemma3-healthy", lambda: (_gemma3(105, 104), new_tokenizer(102, added_special=GEMMA_TOKENS)),
         quiet=FAMILY_QUIET),
    Case("llava-top-level-vocab-size", lambda: _with(
        (_llava(104), new_tokenizer(103, added_special=["<image>"])), _set_config(vocab_size=200)),
         fires=("HVA704",)),
)

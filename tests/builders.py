"""Build tiny, real checkpoints and tokenizers in temporary folders (transformers' own classes).

Every test builds what it audits: nothing is downloaded (HF_HUB_OFFLINE=1 is set in conftest).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors

TINY = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2)

# model kind -> (config class, model class, extra config)
ARCHS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {"num_key_value_heads": 2, "max_position_embeddings": 128}),
    "llama-cls": ("LlamaConfig", "LlamaForSequenceClassification", {"num_key_value_heads": 2}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {"num_key_value_heads": 2}),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", {}),
    "bert": ("BertConfig", "BertForMaskedLM", {"max_position_embeddings": 64}),
    "bert-base": ("BertConfig", "BertModel", {"max_position_embeddings": 64}),
    "bert-cls": ("BertConfig", "BertForSequenceClassification", {"max_position_embeddings": 64}),
    "bert-tok": ("BertConfig", "BertForTokenClassification", {"max_position_embeddings": 64}),
    "roberta": ("RobertaConfig", "RobertaForMaskedLM", {"max_position_embeddings": 66, "type_vocab_size": 1}),
    "roberta-cls": ("RobertaConfig", "RobertaForSequenceClassification",
                    {"max_position_embeddings": 66, "type_vocab_size": 1}),
    "t5": ("T5Config", "T5ForConditionalGeneration", {"d_model": 16, "d_ff": 32, "num_layers": 1, "num_heads": 2,
                                                      "d_kv": 8}),
    "bart": ("BartConfig", "BartForConditionalGeneration", {"d_model": 16, "encoder_layers": 1, "decoder_layers": 1,
                                                            "encoder_attention_heads": 2, "decoder_attention_heads": 2,
                                                            "encoder_ffn_dim": 32, "decoder_ffn_dim": 32,
                                                            "max_position_embeddings": 64}),
}


# Special-token ids of each tokenizer style, written into the config so a default pair is healthy.
STYLE_IDS = {
    "llama": {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 3},
    "bert": {"pad_token_id": 0},
    "roberta": {"bos_token_id": 0, "pad_token_id": 1, "eos_token_id": 2},
    "t5": {"pad_token_id": 0, "eos_token_id": 1, "decoder_start_token_id": 0},
}


def style_of(kind: str) -> str:
    if kind.startswith("bert"):
        return "bert"
    if kind.startswith(("roberta", "bart")):
        return "roberta"
    if kind.startswith("t5"):
        return "t5"
    return "llama"


def build_config(kind: str, vocab: int, **overrides: Any):
    import transformers

    config_cls, _model_cls, extra = ARCHS[kind]
    params: dict[str, Any] = {}
    if kind.startswith(("llama", "qwen2", "bert", "roberta")):
        params.update(TINY)
    if kind == "gpt2":
        params.update(n_embd=16, n_layer=1, n_head=2, n_positions=64)
    params.update(extra)
    params.update(STYLE_IDS[style_of(kind)])
    params.update(vocab_size=vocab)
    params.update(overrides)
    return getattr(transformers, config_cls)(**params)


def make_model(
    folder: Path,
    kind: str = "llama",
    vocab: int = 100,
    *,
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
    **config: Any,
) -> Path:
    """Save a tiny randomly-initialised model of ``kind`` with ``vocab`` embedding rows."""
    model = new_model(kind, vocab, dtype=dtype, seed=seed, **config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    return folder


def new_model(kind: str = "llama", vocab: int = 100, *, dtype: torch.dtype = torch.float32, seed: int = 0,
              **config: Any):
    """A tiny randomly-initialised model of ``kind`` with ``vocab`` embedding rows, in memory."""
    import transformers

    torch.manual_seed(seed)
    cfg = build_config(kind, vocab, **config)
    return getattr(transformers, ARCHS[kind][1])(cfg).to(dtype)


def word_vocab(n: int, specials: list[str]) -> dict[str, int]:
    vocab = {tok: i for i, tok in enumerate(specials)}
    for i in range(n - len(specials)):
        vocab[f"w{i}"] = len(vocab)
    return vocab


def make_tokenizer(
    folder: Path,
    vocab: int = 100,
    *,
    style: str = "llama",
    added: list[str] | None = None,
    added_special: list[str] | None = None,
    chat_template: str | None = None,
    model_max_length: int | None = None,
    pad: str | None = "default",
    tokenizer_class: str | None = None,
) -> Path:
    """A word-level tokenizer saved through transformers (v5 files). ``vocab`` is the base size.

    Styles (special tokens first, then words w0, w1, ...): "llama" <unk> <s> </s> (+ <pad> unless
    pad=None); "bert" [PAD] [UNK] [CLS] [SEP] [MASK], pair template with token_type_ids 0/1,
    BertTokenizer; "roberta" <s> <pad> </s> <unk> <mask>, RobertaTokenizer; "t5" <pad> </s> <unk>.
    The files name ``tokenizer_class`` (default: the style's class) while the object saved is a
    PreTrainedTokenizerFast, as many Hub folders are.
    """
    tok = new_tokenizer(vocab, style=style, added=added, added_special=added_special, chat_template=chat_template,
                        model_max_length=model_max_length, pad=pad)
    folder.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(folder)
    cls = tokenizer_class or {"bert": "BertTokenizer", "roberta": "RobertaTokenizer"}.get(style)
    if cls:
        edit_json(folder / "tokenizer_config.json", tokenizer_class=cls)
    return folder


def new_tokenizer(
    vocab: int = 100,
    *,
    style: str = "llama",
    added: list[str] | None = None,
    added_special: list[str] | None = None,
    chat_template: str | None = None,
    model_max_length: int | None = None,
    pad: str | None = "default",
    cls: str = "PreTrainedTokenizerFast",
    vocab_edit: dict[str, int] | None = None,
    **kwargs: Any,
):
    """The tokenizer ``make_tokenizer`` saves, in memory, as an instance of transformers' ``cls``.

    ``vocab_edit`` moves words to other ids (``{"w99": 110}`` leaves a gap); ``kwargs`` go to ``cls``.
    """
    import transformers

    if style == "bert":
        specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        tk = Tokenizer(models.WordLevel(_vocab(vocab, specials, vocab_edit), unk_token="[UNK]"))
        tk.pre_tokenizer = pre_tokenizers.Whitespace()
        tk.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
        )
        options: dict[str, Any] = dict(unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
                                       mask_token="[MASK]", pad_token="[PAD]" if pad else None)
    elif style == "roberta":
        specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
        tk = Tokenizer(models.WordLevel(_vocab(vocab, specials, vocab_edit), unk_token="<unk>"))
        tk.pre_tokenizer = pre_tokenizers.Whitespace()
        tk.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
        options = dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>", sep_token="</s>", cls_token="<s>",
                       mask_token="<mask>", pad_token="<pad>" if pad else None)
    elif style == "t5":
        specials = ["<pad>", "</s>", "<unk>"]
        tk = Tokenizer(models.WordLevel(_vocab(vocab, specials, vocab_edit), unk_token="<unk>"))
        tk.pre_tokenizer = pre_tokenizers.Whitespace()
        tk.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>",
                                                          special_tokens=[("</s>", 1)])
        options = dict(eos_token="</s>", unk_token="<unk>", pad_token="<pad>" if pad else None)
    else:
        specials = ["<unk>", "<s>", "</s>"] + (["<pad>"] if pad == "default" else [])
        tk = Tokenizer(models.WordLevel(_vocab(vocab, specials, vocab_edit), unk_token="<unk>"))
        tk.pre_tokenizer = pre_tokenizers.Whitespace()
        options = dict(unk_token="<unk>", bos_token="<s>", eos_token="</s>")
        if pad == "default":
            options["pad_token"] = "<pad>"
        elif pad:
            options["pad_token"] = pad
    tok = getattr(transformers, cls)(tokenizer_object=tk, **(options | kwargs))
    if model_max_length is not None:
        tok.model_max_length = model_max_length
    if added:
        tok.add_tokens(added)
    if added_special:
        tok.add_special_tokens({"additional_special_tokens": added_special})
    if chat_template:
        tok.chat_template = chat_template
    return tok


def _vocab(n: int, specials: list[str], vocab_edit: dict[str, int] | None) -> dict[str, int]:
    return word_vocab(n, specials) | (vocab_edit or {})


def edit_json(path: Path, **changes: Any) -> None:
    data = json.loads(path.read_text()) if path.exists() else {}
    for key, value in changes.items():
        if value is DELETE:
            data.pop(key, None)
        else:
            data[key] = value
    path.write_text(json.dumps(data, indent=2))


DELETE = object()

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def checkpoint(folder: Path, kind: str = "llama", rows: int = 104, tokenizer_vocab: int | None = None,
               **tok: Any) -> Path:
    """Model with ``rows`` embedding rows plus a tokenizer; a healthy pair by default."""
    make_model(folder, kind, rows, **tok.pop("model", {}))
    make_tokenizer(folder, tokenizer_vocab if tokenizer_vocab is not None else rows, style=style_of(kind), **tok)
    return folder

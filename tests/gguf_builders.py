"""Build GGUF files with llama.cpp's own writer (``gguf.GGUFWriter``), and the cases whose verdicts
``scripts/gguf_verdicts.py`` records by loading the same edits with llama.cpp itself.

A case is a set of edits to a healthy tiny Llama GGUF (SentencePiece-style vocabulary, rows == tokens).
Fast tests write the metadata and the two vocabulary matrices only; the script applies the same edits to a
complete GGUF converted by llama.cpp's ``convert_hf_to_gguf.py`` so that llama.cpp can load and run it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

N_EMBD = 16
BASE_TOKENS = ["<unk>", "<s>", "</s>"] + [f"▁w{i}" for i in range(61)]  # 64 tokens
BASE_TYPES = [2, 3, 3] + [1] * 61
BPE_TOKENS = ["<|endoftext|>", "<s>", "</s>", "a", "b", "c", "ab", "abc", "Ġ", "Ġa"] + [f"x{i}" for i in range(54)]
BPE_MERGES = ["a b", "ab c", "Ġ a"]


@dataclass(frozen=True)
class Case:
    """Edits to the healthy GGUF: what llama.cpp is asked to load, and the rule codes the audit must report."""

    name: str
    add: tuple[tuple[str, int], ...] = ()  # (token, type) appended to the token list
    drop: int = 0  # tokens removed from the end of the list (rows unchanged)
    retype: tuple[tuple[int, int], ...] = ()  # (id, type)
    rename: tuple[tuple[int, str], ...] = ()  # (id, new text)
    model: str | None = None  # tokenizer.ggml.model (None: keep "llama")
    pre: str | None = "keep"  # tokenizer.ggml.pre ("keep": as converted; None: removed)
    specials: tuple[tuple[str, int], ...] = ()  # (GGUF key suffix, id), e.g. ("eos_token_id", 999)
    expect: tuple[str, ...] = ()  # error/warning codes the audit must report
    probe: str | None = None  # text llama.cpp tokenizes (special=True) for the verdict
    copy: tuple[tuple[int, int], ...] = ()  # (from id, to id): the token text listed twice
    probe_token: int | None = None  # probe with this token's text (after the edits; "▁" as a space)
    template: str | None = None  # tokenizer.chat_template


MARKER = "<|imst|>"  # made of characters the verdict script's SentencePiece vocabulary lacks (listed below)
TEMPLATE = "{% for m in messages %}" + MARKER + "{{ m['content'] }}{% endfor %}"
# llama.cpp's SentencePiece tokenizer aborts (std::out_of_range) on a character that is neither a piece nor a
# byte token, so every character of a probe must be a piece: ids 52..59 become "▁" (the space it prefixes)
# and the marker's characters.
MARKER_CHARS = tuple((52 + i, c) for i, c in enumerate("\u2581<|imst>"))

CASES = (
    Case("healthy"),
    Case("tokens_over_rows", add=(("<|im_start|>", 3), ("<|im_end|>", 3), ("<tool>", 4)),
         expect=("HVA101", "HVA102", "HVA901")),
    Case("rows_over_tokens", drop=3, expect=("HVA901",)),
    Case("bpe_known_pre", model="gpt2", pre="llama-bpe"),
    Case("bpe_unknown_pre", model="gpt2", pre="no-such-pre", expect=("HVA903",)),
    Case("bpe_missing_pre", model="gpt2", pre=None, expect=("HVA904",)),
    Case("unknown_tokenizer_model", model="sentencepiece2", expect=("HVA905",)),
    Case("control_marker_typed_control", rename=MARKER_CHARS + ((60, MARKER),), retype=((60, 3),), probe=MARKER,
         template=TEMPLATE, expect=("HVA928",)),  # a template llama.cpp's built-in engine does not know
    Case("control_marker_typed_normal", rename=MARKER_CHARS + ((60, MARKER),), retype=((60, 1),), probe=MARKER,
         template=TEMPLATE, expect=("HVA205", "HVA902", "HVA928")),
    Case("eos_id_out_of_range", specials=(("eos_token_id", 99),), expect=("HVA201",)),
    Case("duplicate_token_string", rename=MARKER_CHARS, copy=((5, 60),), probe_token=5, expect=("HVA207",)),
)
CASE = {c.name: c for c in CASES}


@dataclass
class Vocab:
    """The metadata a case ends with."""

    model: str
    pre: str | None
    tokens: list[str]
    types: list[int]
    scores: list[float] | None
    merges: list[str] | None
    specials: dict[str, int] = field(default_factory=dict)


def apply_case(case: Case, vocab: Vocab) -> Vocab:
    tokens, types = list(vocab.tokens), list(vocab.types)
    model, pre, merges = vocab.model, vocab.pre, vocab.merges
    if case.model == "gpt2":  # a byte-level BPE vocabulary of the same length, with a few merges
        tokens, types, merges, model = list(BPE_TOKENS[: len(tokens)]), [1] * len(tokens), list(BPE_MERGES), "gpt2"
        types[:3] = [3, 3, 3]
    elif case.model is not None:
        model = case.model
    if case.pre != "keep":
        pre = case.pre
    for i, text in case.rename:
        tokens[i] = text
    for src, dst in case.copy:
        tokens[dst] = tokens[src]
    for i, kind in case.retype:
        types[i] = kind
    for text, kind in case.add:
        tokens.append(text)
        types.append(kind)
    if case.drop:
        tokens, types = tokens[: -case.drop], types[: -case.drop]
    scores = None if vocab.scores is None or model == "gpt2" else (list(vocab.scores) + [-1000.0] * len(tokens))[: len(tokens)]
    specials = dict(vocab.specials) | dict(case.specials)
    return Vocab(model, pre, tokens, types, scores, merges if model == "gpt2" else None, specials)


def probe_of(case: Case, vocab: Vocab) -> str | None:
    """The text llama.cpp is asked to tokenize for ``case`` (over the edited ``vocab``)."""
    if case.probe_token is not None:
        return vocab.tokens[case.probe_token].replace("\u2581", " ").lstrip(" ")
    return case.probe


def base_vocab() -> Vocab:
    return Vocab("llama", "default", list(BASE_TOKENS), list(BASE_TYPES), [0.0] * len(BASE_TOKENS), None,
                 {"bos_token_id": 1, "eos_token_id": 2, "unknown_token_id": 0})


def write_vocab(writer: Any, vocab: Vocab) -> None:
    """The tokenizer keys of ``vocab`` through GGUFWriter's own methods."""
    writer.add_tokenizer_model(vocab.model)
    if vocab.pre is not None:
        writer.add_tokenizer_pre(vocab.pre)
    writer.add_token_list(vocab.tokens)
    writer.add_token_types(vocab.types)
    if vocab.scores is not None:
        writer.add_token_scores(vocab.scores)
    if vocab.merges is not None:
        writer.add_token_merges(vocab.merges)
    for key, value in vocab.specials.items():
        writer.add_uint32(f"tokenizer.ggml.{key}", value)


def write_gguf(path: Path, *, vocab: Vocab | None = None, rows: int | None = None, output_rows: int | None = None,
               chat_template: str | None = None, extra: dict[str, Any] | None = None, tensors: bool = True,
               arch: str = "llama") -> Path:
    """A GGUF with ``vocab`` (default: the healthy base), ``token_embd.weight`` of ``rows`` rows (default: one
    per token) and an untied ``output.weight`` of ``output_rows`` rows (None: tied, no output tensor)."""
    import gguf
    import numpy as np

    vocab = vocab or base_vocab()
    writer = gguf.GGUFWriter(path, arch)
    writer.add_context_length(128)
    writer.add_embedding_length(N_EMBD)
    write_vocab(writer, vocab)
    if chat_template is not None:
        writer.add_chat_template(chat_template)
    for key, value in (extra or {}).items():
        writer.add_string(key, value) if isinstance(value, str) else writer.add_uint32(key, value)
    if tensors:
        n = rows if rows is not None else len(vocab.tokens)
        writer.add_tensor("token_embd.weight", np.zeros((n, N_EMBD), dtype=np.float32))
        if output_rows is not None:
            writer.add_tensor("output.weight", np.zeros((output_rows, N_EMBD), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def case_gguf(path: Path, case: Case) -> Path:
    """The fast tests' GGUF of ``case``: its vocabulary over the healthy base's 64 rows (tied and untied)."""
    vocab = apply_case(case, base_vocab())
    return write_gguf(path, vocab=vocab, rows=len(BASE_TOKENS), output_rows=len(BASE_TOKENS),
                      chat_template=case.template)


# --- tiny HF checkpoints that llama.cpp's converter reads (scripts/gguf_verdicts.py converts them) ------


def train_spm(folder: Path) -> Path:
    import sentencepiece as spm

    words = [a + b for a in "abcdefgh" for b in "abcdefgh"]
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(" ".join(words[i:] + words[:i]) for i in range(64)), encoding="utf-8")
    prefix = folder / "sp"
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(prefix), vocab_size=64, model_type="bpe", character_coverage=1.0,
        bos_id=1, eos_id=2, unk_id=0, pad_id=-1, hard_vocab_limit=True, minloglevel=2,
    )
    return prefix.with_suffix(".model")


def hf_checkpoint(folder: Path, spm_model: Path, *, added: list[str] = (), resize: int | None = None,
                  arch: str = "llama", keep_model: bool = True, added_special: bool = False,
                  architecture: str | None = None) -> Path:
    """A tiny Llama-2 style checkpoint over the SentencePiece model (64 pieces): ``added`` tokens (special with
    ``added_special``) without a resize unless ``resize`` (rows); ``arch`` "mistral" / "gemma" / "phi3": the same
    under that architecture; ``architecture``: config.json's ``architectures`` rewritten to it (another name the
    converter registers for the same class); ``keep_model=False``: ``tokenizer.model`` removed afterwards,
    leaving the ``tokenizer.json`` transformers converted it to (a byte-fallback BPE with a Sequence decoder)."""
    import shutil

    import torch
    import transformers

    folder.mkdir(parents=True)
    shutil.copy(spm_model, folder / "tokenizer.model")
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}))
    tok = transformers.AutoTokenizer.from_pretrained(folder)  # the SentencePiece model, converted by transformers
    if added:
        tok.add_tokens(list(added), special_tokens=added_special)
    tok.save_pretrained(folder)
    rows = resize or 64
    config_class, model_class = {"llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
                                 "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM),
                                 "gemma": (transformers.GemmaConfig, transformers.GemmaForCausalLM),
                                 "phi3": (transformers.Phi3Config, transformers.Phi3ForCausalLM)}[arch]
    extra = {"head_dim": 8} if arch == "gemma" else {"pad_token_id": None} if arch == "phi3" else {}  # Phi-3's is 32000
    config = config_class(vocab_size=rows, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                          num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128,
                          bos_token_id=1, eos_token_id=2, tie_word_embeddings=False, **extra)
    torch.manual_seed(0)
    model_class(config).save_pretrained(folder)
    if architecture is not None:
        raw = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        (folder / "config.json").write_text(json.dumps(raw | {"architectures": [architecture]}), encoding="utf-8")
    if not keep_model:
        (folder / "tokenizer.model").unlink()
    return folder


# The converter-path cases scripts/gguf_verdicts.py converts (key "converter_paths" of gguf_verdicts.json):
# which reader each model class's set_vocab takes (hf_vocab_audit/facts/gguf_converter_paths.py).
PATH_ADDED = ["<t1>", "<t2>", "<t3>"]
PATH_SETUPS: dict[str, dict[str, Any]] = {
    "llama_tokenizer_json_only_healthy": {"keep_model": False},
    "llama_tokenizer_json_only_added_3_tokens_without_resize": {"keep_model": False, "added": PATH_ADDED},
    "llama_tokenizer_json_only_resized_to_72_rows": {"keep_model": False, "resize": 72},
    "llama_tokenizer_json_only_added_3_tokens_resized_to_67_rows": {"keep_model": False, "added": PATH_ADDED,
                                                                    "resize": 67},
    "llama_with_tokenizer_model_healthy": {},
    "mistral_tokenizer_json_only_healthy": {"keep_model": False, "arch": "mistral"},
    "llama_tokenizer_json_only_im_end_added_resized_to_65_rows": {"keep_model": False, "added": ["<|im_end|>"],
                                                                  "resize": 65},
    "llama_with_tokenizer_model_im_end_added_resized_to_65_rows": {"added": ["<|im_end|>"], "resize": 65},
    "gemma_tokenizer_json_only_healthy": {"keep_model": False, "arch": "gemma"},
    "gemma_with_tokenizer_model_healthy": {"arch": "gemma"},
    # LlamaModel registered under another name (the audit once guessed BPE for it, and failed it with HVA923)
    "vllama3_tokenizer_json_only_healthy": {"keep_model": False, "architecture": "VLlama3ForCausalLM"},
    # Phi3MiniModel's SentencePiece reader also takes tokenizer.json's added tokens (the audit once said [PAD64]).
    # Not named "phi3": llama.cpp gives a GGUF whose general.name (the folder's) holds "phi3" or "phi-3" Phi-3's
    # token attributes by name (src/llama-vocab.cpp), and this 64-piece vocabulary has no "<|endoftext|>" for them
    "phi_mini_with_tokenizer_model_im_end_special_added_resized_to_65_rows": {
        "arch": "phi3", "added": ["<|im_end|>"], "added_special": True, "resize": 65},
}
PATH_GPT2_SETUPS: dict[str, dict[str, Any]] = {"llama_gpt2_style_bpe_tokenizer_json": {"arch": "llama"}}


def bpe_checkpoint(folder: Path, *, added: list[str] = ()) -> Path:
    """A Qwen2-style checkpoint with a byte-level BPE tokenizer trained here (300 ids, 300 rows): its
    pre-tokenizer hash is one the converter cannot know."""
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    folder.mkdir(parents=True)
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator(["the quick brown fox jumps over the lazy dog " * 20], trainer)
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|endoftext|>")
    if added:
        tok.add_tokens(list(added))
    tok.save_pretrained(folder)
    config = transformers.Qwen2Config(vocab_size=300, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128)
    torch.manual_seed(0)
    transformers.Qwen2ForCausalLM(config).save_pretrained(folder)
    return folder


# --- a BPE checkpoint whose pre-tokenizer the converter recognises (GPT-2's hash) ---------------------------

GPT2_SUBSET = Path(__file__).resolve().parent / "data" / "gpt2_chktxt_subset.json"
GPT2_CHKHSH = "3ce83efda5659b07b1ad37ca97ca5797ea4285d9b9ab0dc679e4a720c9da7454"  # "gpt-2" in get_vocab_base_pre
GPT2_ROWS = 50257
GPT2_ADDED = ["<t1>", "<t2>", "<t3>"]
# The BPE cases scripts/gguf_verdicts.py converts with llama.cpp (key "converter" of gguf_verdicts.json).
GPT2_SETUPS: dict[str, dict[str, Any]] = {
    "bpe_gpt2_healthy": {},
    "bpe_gpt2_added_3_tokens_without_resize": {"added": GPT2_ADDED},
    "bpe_gpt2_vocab_size_edited_to_50200": {"vocab_size": 50200},
    "bpe_gpt2_added_3_tokens_resized_to_50264_rows": {"added": GPT2_ADDED, "resize": 50264},
    "bpe_gpt2_tokenizer_under_qwen2_config": {"arch": "qwen2"},
}


def gpt2_tokenizer() -> Any:
    """A byte-level BPE tokenizer that splits the converter's test text exactly as GPT-2's does, so
    ``convert_hf_to_gguf.py`` names its pre-tokenizer "gpt-2" and goes on: the converter hashes the token ids
    of that text, so the pre-tokenizer alone is not enough; the ids, the tokens and the merges that text
    needs must be GPT-2's. ``tests/data/gpt2_chktxt_subset.json`` holds those (extracted by
    scripts/gguf_verdicts.py from GPT-2's vocabulary); every other id of GPT-2's 50257 is a token no merge
    can produce (``<f{id}>``), so the vocabulary has GPT-2's size and no holes."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    subset = json.loads(GPT2_SUBSET.read_text(encoding="utf-8"))
    kept = {int(i): t for i, t in subset["tokens"].items()}
    vocab = {kept.get(i, f"<f{i}>"): i for i in range(subset["n_vocab"])}
    assert len(vocab) == subset["n_vocab"], "a filler collides with a kept token"
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m.split(" ", 1)) for m in subset["merges"]]))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.post_processor = processors.ByteLevel(trim_offsets=False)
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<|endoftext|>",
                                                eos_token="<|endoftext|>", unk_token="<|endoftext|>")


def gpt2_checkpoint(folder: Path, *, added: list[str] = (), resize: int | None = None,
                    vocab_size: int | None = None, arch: str = "gpt2") -> Path:
    """A tiny GPT-2 (1 layer, 16 wide, tied lm_head) over :func:`gpt2_tokenizer`: ``added`` tokens added
    without a resize unless ``resize`` (rows); ``vocab_size`` edits config.json afterwards (rows unchanged).
    ``arch="qwen2"``: the same tokenizer under a Qwen2 config, which transformers 5's ``AutoTokenizer`` loads
    as ``Qwen2Tokenizer`` with Qwen2's pre-tokenizer in place of tokenizer.json's; ``arch="llama"``: under a
    Llama config (a Llama-3 style folder: byte-level BPE, no byte fallback, so LlamaHfVocab refuses it)."""
    import torch
    import transformers

    folder.mkdir(parents=True)
    tok = gpt2_tokenizer()
    if added:
        tok.add_tokens(list(added))
    tok.save_pretrained(folder)
    rows = resize or GPT2_ROWS
    if arch == "qwen2":
        config = transformers.Qwen2Config(vocab_size=rows, hidden_size=N_EMBD, intermediate_size=32,
                                          num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                          max_position_embeddings=128, bos_token_id=GPT2_ROWS - 1,
                                          eos_token_id=GPT2_ROWS - 1)
        model = transformers.Qwen2ForCausalLM
    elif arch == "llama":
        config = transformers.LlamaConfig(vocab_size=rows, hidden_size=N_EMBD, intermediate_size=32,
                                          num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                          max_position_embeddings=128, bos_token_id=GPT2_ROWS - 1,
                                          eos_token_id=GPT2_ROWS - 1, tie_word_embeddings=False)
        model = transformers.LlamaForCausalLM
    else:
        config = transformers.GPT2Config(vocab_size=rows, n_embd=N_EMBD, n_layer=1, n_head=2, n_positions=128,
                                         bos_token_id=GPT2_ROWS - 1, eos_token_id=GPT2_ROWS - 1)
        model = transformers.GPT2LMHeadModel
    torch.manual_seed(0)
    model(config).save_pretrained(folder)
    path = folder / "config.json"
    edits: dict[str, int] = {"vocab_size": vocab_size} if vocab_size is not None else {}
    if arch == "gpt2":
        edits["n_ctx"] = 128  # GPT-2's own config.json has it; the converter reads it (transformers 5 omits it)
    path.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8")) | edits), encoding="utf-8")
    return folder


# --- chat templates for llama.cpp's built-in template engine (key "chat_templates" of gguf_verdicts.json) --------

# Real templates, as llama.cpp ships them for its own tests (``models/templates/<name>.jinja`` of the sdist;
# scripts/gguf_verdicts.py copies their text into the verdicts file), and hand-written ones.
REAL_TEMPLATES = ("meta-llama-Llama-3.1-8B-Instruct", "Qwen-Qwen2.5-7B-Instruct", "Qwen-Qwen3-0.6B",
                  "google-gemma-2-2b-it", "mistralai-Mistral-Nemo-Instruct-2407", "google-gemma-4-31B-it",
                  "HuggingFaceTB-SmolLM3-3B")
WRITTEN_TEMPLATES = {
    # none of the built-in engine's markers: refused
    "alpaca_style": "{% for m in messages %}### {{ m['role'] | capitalize }}:\n{{ m['content'] }}\n\n{% endfor %}"
                    "{% if add_generation_prompt %}### Assistant:\n{% endif %}",
    # <|im_start|> with another layout: ChatML to the built-in engine
    "im_start_with_bracketed_roles": "{% for m in messages %}<|im_start|>[{{ m['role'] | upper }}] {{ m['content'] }}"
                                     "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>[ASSISTANT] "
                                     "{% endif %}",
    # plain ChatML, written by hand
    "chatml_by_hand": "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + "
                      "'\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
}
# What the tests require of each: quiet, refused, or misread as ChatML.
TEMPLATE_EXPECT = {
    "meta-llama-Llama-3.1-8B-Instruct": "quiet", "Qwen-Qwen2.5-7B-Instruct": "quiet", "Qwen-Qwen3-0.6B": "quiet",
    "google-gemma-2-2b-it": "quiet", "mistralai-Mistral-Nemo-Instruct-2407": "quiet", "chatml_by_hand": "quiet",
    "google-gemma-4-31B-it": "refused", "alpaca_style": "refused",
    "HuggingFaceTB-SmolLM3-3B": "chatml", "im_start_with_bracketed_roles": "chatml",
}


# --- end-of-generation sets (key "eog" of gguf_verdicts.json; rules/gguf_stops.py) ---------------------------------

CHATML = ("{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + '\\n' }}"
          "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
LLAMA3 = ("{{ bos_token }}{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\\n\\n' + "
          "m['content'] | trim + '<|eot_id|>' }}{% endfor %}{% if add_generation_prompt %}"
          "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}")
GEMMA = ("{{ bos_token }}{% for m in messages %}{{ '<start_of_turn>' + ('model' if m['role'] == 'assistant' else "
         "m['role']) + '\\n' + m['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}"
         "{{ '<start_of_turn>model\\n' }}{% endif %}")
TURN_END = ("{% for m in messages %}{{ '<|turn|>' + m['role'] + ': ' + m['content'] + '<|turn_end|>' }}{% endfor %}"
            "{% if add_generation_prompt %}{{ '<|turn|>assistant: ' }}{% endif %}")
HARMONY = ("{% for m in messages %}{{ '<|start|>' + m['role'] + '<|message|>' + m['content'] + '<|end|>' }}{% endfor %}"
           "{% if add_generation_prompt %}{{ '<|start|>assistant' }}{% endif %}")


@dataclass(frozen=True)
class EogSetup:
    """A GGUF over the healthy base vocabulary with ``add`` appended (text, type) and ``specials`` (role key ->
    the text of the token it names), carrying ``template``; ``stops``: what the tests require (llama.cpp stops
    at the token the template closes an assistant turn with)."""

    add: tuple[tuple[str, int], ...]
    specials: tuple[tuple[str, str], ...]
    template: str
    stops: bool


EOG_SETUPS = {
    "llama3_eot_id": EogSetup((("<|begin_of_text|>", 3), ("<|end_of_text|>", 3), ("<|start_header_id|>", 3),
                               ("<|end_header_id|>", 3), ("<|eot_id|>", 3)),
                              (("bos", "<|begin_of_text|>"), ("eos", "<|end_of_text|>")), LLAMA3, True),
    "chatml_im_end_control": EogSetup((("<|endoftext|>", 3), ("<|im_start|>", 3), ("<|im_end|>", 3)),
                                      (("eos", "<|endoftext|>"),), CHATML, True),
    "gemma_end_of_turn": EogSetup((("<start_of_turn>", 3), ("<end_of_turn>", 3)), (), GEMMA, True),
    # <|im_end|> NORMAL or USER_DEFINED: llama.cpp retypes it CONTROL ("control-looking token") and stops at it
    "chatml_im_end_normal": EogSetup((("<|endoftext|>", 3), ("<|im_start|>", 3), ("<|im_end|>", 1)),
                                     (("eos", "<|endoftext|>"),), CHATML, True),
    "chatml_im_end_user_defined": EogSetup((("<|endoftext|>", 3), ("<|im_start|>", 3), ("<|im_end|>", 4)),
                                           (("eos", "<|endoftext|>"),), CHATML, True),
    # a made-up closer that is neither eos nor eot, nor on llama.cpp's list: generation runs on
    "custom_turn_end": EogSetup((("<|turn|>", 3), ("<|turn_end|>", 3)), (), TURN_END, False),
    "custom_turn_end_user_defined": EogSetup((("<|turn|>", 4), ("<|turn_end|>", 4)), (), TURN_END, False),
    # the fix: the closer named as eot (or eos)
    "custom_turn_end_as_eot": EogSetup((("<|turn|>", 3), ("<|turn_end|>", 3)), (("eot", "<|turn_end|>"),),
                                       TURN_END, True),
    "custom_turn_end_as_eos": EogSetup((("<|turn|>", 3), ("<|turn_end|>", 3)), (("eos", "<|turn_end|>"),),
                                       TURN_END, True),
    # gpt-oss: <|end|> is taken out of the set when <|return|> and <|call|> are in it
    "harmony_end_with_return_and_call": EogSetup((("<|start|>", 3), ("<|message|>", 3), ("<|end|>", 3),
                                                  ("<|return|>", 3), ("<|call|>", 3)), (), HARMONY, False),
    "harmony_end_alone": EogSetup((("<|start|>", 3), ("<|message|>", 3), ("<|end|>", 3)), (), HARMONY, True),
}


BYTES = tuple((f"<0x{b:02X}>", 6) for b in range(256))  # SentencePiece byte fallback: llama.cpp tokenizes any text


def eog_vocab(setup: EogSetup) -> Vocab:
    vocab = base_vocab()
    tokens = list(vocab.tokens) + [t for t, _ in setup.add] + [t for t, _ in BYTES]
    types = list(vocab.types) + [k for _, k in setup.add] + [k for _, k in BYTES]
    specials = dict(vocab.specials)
    for role, text in setup.specials:
        specials[f"{role}_token_id"] = tokens.index(text)
    return Vocab(vocab.model, vocab.pre, tokens, types, [0.0] * len(tokens), None, specials)


def eog_gguf(path: Path, setup: EogSetup) -> Path:
    """The GGUF of ``setup``: vocabulary-only (llama.cpp's EOG set is built at vocabulary load)."""
    return write_gguf(path, vocab=eog_vocab(setup), chat_template=setup.template, tensors=False)


# Real templates (``models/templates`` of the sdist) over a vocabulary of their markers, with the eos their model's
# tokenizer_config.json declares (None: the tokenizer model's default, "</s>"); each must stay quiet.
REAL_EOG_TEMPLATES = {
    "meta-llama-Llama-3.1-8B-Instruct": "<|eot_id|>", "meta-llama-Llama-3.3-70B-Instruct": "<|eot_id|>",
    "Qwen-Qwen2.5-7B-Instruct": "<|im_end|>", "Qwen-Qwen3-0.6B": "<|im_end|>", "google-gemma-2-2b-it": "<eos>",
    "google-gemma-4-31B-it": "<turn|>", "mistralai-Mistral-Nemo-Instruct-2407": None,
    "microsoft-Phi-3.5-mini-instruct": "<|endoftext|>", "openai-gpt-oss-120b": "<|return|>",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": "<\uff5cend\u2581of\u2581sentence\uff5c>",
    "ibm-granite-granite-3.3-2B-Instruct": "<|end_of_text|>",
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use": "<|END_OF_TURN_TOKEN|>", "ByteDance-Seed-OSS": "<seed:eos>",
    "HuggingFaceTB-SmolLM3-3B": "<|im_end|>",
}
MARKER_RE = (r"<[|\uff5c][^\s<>'\"]{1,40}?[|\uff5c]>|<[a-z_]{1,20}[|]>|<[|][a-z_]{1,20}>|<seed:[a-z_]{1,20}>"
             r"|<(?:start_of_turn|end_of_turn|eos|bos)>|\[/?[A-Z_]{2,20}\]")


def template_vocab(template: str, eos: str | None) -> Vocab:
    """The healthy base vocabulary with every marker-looking string of ``template`` appended as a CONTROL token
    (its real tokenizer has them as special tokens), and ``eos`` (appended when not among them) as eos."""
    import re

    vocab = base_vocab()
    marks = sorted(set(re.findall(MARKER_RE, template)) - set(vocab.tokens))
    if eos is not None and eos not in marks and eos not in vocab.tokens:
        marks.append(eos)
    tokens = list(vocab.tokens) + marks + [t for t, _ in BYTES]
    specials = dict(vocab.specials)
    if eos is not None:
        specials["eos_token_id"] = tokens.index(eos)
    types = list(vocab.types) + [3] * len(marks) + [k for _, k in BYTES]
    return Vocab(vocab.model, vocab.pre, tokens, types, [0.0] * len(tokens), None, specials)


# HF folders for ``--target gguf`` (a tiny GPT-2 over gpt2_tokenizer(), resized by 8 rows, with these special tokens
# added, this eos_token, chat template and generation_config.json eos list of texts); scripts/gguf_verdicts.py
# converts each and loads the GGUF in llama.cpp.
@dataclass(frozen=True)
class EogFolder:
    added: tuple[str, ...]
    eos: str
    template: str
    generation_eos: tuple[str, ...] = ()
    config_eos: str | None = None
    stops: bool = True


EOG_FOLDERS = {
    "chatml_eos_im_end": EogFolder(("<|im_start|>", "<|im_end|>"), "<|im_end|>", CHATML),
    "chatml_eos_endoftext": EogFolder(("<|im_start|>", "<|im_end|>"), "<|endoftext|>", CHATML),
    "turn_end_eos_endoftext": EogFolder(("<|turn|>", "<|turn_end|>"), "<|endoftext|>", TURN_END, stops=False),
    # vLLM stops at generation_config.json's list; the converter never reads that file
    "turn_end_in_generation_config": EogFolder(("<|turn|>", "<|turn_end|>"), "<|endoftext|>", TURN_END,
                                               generation_eos=("<|endoftext|>", "<|turn_end|>"), stops=False),
    # config.json's eos_token_id is read only when tokenizer_config.json's eos_token is not found
    "turn_end_config_eos_only": EogFolder(("<|turn|>", "<|turn_end|>"), "<|endoftext|>", TURN_END,
                                          config_eos="<|turn_end|>", stops=False),
    "turn_end_as_eos": EogFolder(("<|turn|>", "<|turn_end|>"), "<|turn_end|>", TURN_END),
}


def eog_folder(folder: Path, setup: EogFolder) -> Path:
    import transformers

    gpt2_checkpoint(folder, resize=GPT2_ROWS + 8)
    tok = transformers.AutoTokenizer.from_pretrained(str(folder))
    tok.add_special_tokens({"additional_special_tokens": list(setup.added)})
    tok.eos_token = setup.eos
    tok.chat_template = setup.template
    tok.save_pretrained(folder, save_jinja_files=False)
    ids = {t: tok.convert_tokens_to_ids(t) for t in (*setup.added, "<|endoftext|>")}
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config["eos_token_id"] = ids[setup.config_eos] if setup.config_eos else ids[setup.eos]
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    generation = folder / "generation_config.json"
    if setup.generation_eos:
        (generation).write_text(json.dumps({"eos_token_id": [ids[t] for t in setup.generation_eos]}), encoding="utf-8")
    elif generation.exists():
        generation.unlink()
    return folder

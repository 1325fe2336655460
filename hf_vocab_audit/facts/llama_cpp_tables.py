"""What llama.cpp accepts, as tables: the tokenizer models and BPE pre-tokenizers its vocabulary loader knows
(``src/llama-vocab.cpp``, ``llama_vocab::impl::load``), the token types of ``llama_token_type``, and the GGUF
keys of the special-token ids it reads. They are the llama.cpp vendored by llama-cpp-python 0.3.36;
``scripts/gguf_verdicts.py`` extracts the pre-tokenizer list from that source into
``tests/data/gguf_verdicts.json`` and a test keeps this table equal to it.
"""

from __future__ import annotations

LLAMA_CPP_SOURCE = "llama.cpp as vendored by llama-cpp-python 0.3.36"

# tokenizer.ggml.model values llama.cpp loads; others: "unknown tokenizer: '<model>'".
TOKENIZER_MODELS = frozenset(
    {"no_vocab", "none", "llama", "bert", "gpt2", "hybriddna", "whitespace", "t5", "rwkv", "test", "plamo2", "gemma4"}
)
# Models whose vocabulary is BPE: only they read tokenizer.ggml.pre.
BPE_MODELS = frozenset({"gpt2", "hybriddna", "whitespace"})

# tokenizer.ggml.pre values llama.cpp knows for a BPE vocabulary; another is refused at load:
# "unknown pre-tokenizer type: '<pre>'". A missing one loads with a warning ("using: 'default'").
KNOWN_PRE_TOKENIZERS = frozenset({
    "a.x-4.0", "afmoe", "bailingmoe", "bailingmoe2", "bloom", "chameleon", "chatglm-bpe", "codeshell",
    "cohere2moe", "command-r", "dbrx", "deepseek-coder", "deepseek-llm", "deepseek-r1-qwen", "deepseek-v3",
    "default", "exaone", "exaone-moe", "exaone4", "f2llmv2", "falcon", "falcon-h1", "falcon3", "gemma4",
    "gigachat", "glm4", "glm5", "gpt-2", "gpt-4o", "gpt3-finnish", "granite-docling", "granite-embed-multi-311m",
    "granite-embed-multi-97m", "grok-2", "hunyuan", "hunyuan-dense", "hy_v4", "jais", "jais-2", "jina-de",
    "jina-es", "jina-v1-en", "jina-v2-code", "jina-v2-de", "jina-v2-es", "jina-v5-nano", "joyai-llm", "kanana2",
    "kimi-k2", "kormo", "laguna", "lfm2", "llada-moe", "llama-bpe", "llama-v3", "llama3", "llama4", "megrez",
    "mellum", "mellum2", "midm-2.0", "minerva-7b", "minicpm5", "minimax-m2", "modern-bert", "mpt", "olmo",
    "phi-2", "pixtral", "poro-chat", "qwen2", "qwen35", "refact", "roberta-bpe", "sarvam-moe", "seed-coder",
    "smaug-bpe", "smollm", "solar-open", "spark2_5", "stablelm2", "starcoder", "superbpe", "talkie", "tekken",
    "tiny_aya", "trillion", "ufakzeka", "viking", "whitespace", "youtu",
})  # fmt: skip

# llama_token_type (gguf.TokenType).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
TOKEN_TYPE_NAMES = {1: "normal", 2: "unknown", 3: "control", 4: "user_defined", 5: "unused", 6: "byte"}
# Types llama.cpp's tokenizer matches as whole strings in text when parse_special is on (cache_special_tokens).
MATCHED_WHOLE = frozenset({CONTROL, USER_DEFINED, UNKNOWN})

# role -> GGUF key of its id (llama.cpp's special_token_types; note the key's spelling "seperator").
SPECIAL_ID_KEYS = {
    "bos": "tokenizer.ggml.bos_token_id", "eos": "tokenizer.ggml.eos_token_id",
    "eot": "tokenizer.ggml.eot_token_id", "eom": "tokenizer.ggml.eom_token_id",
    "unk": "tokenizer.ggml.unknown_token_id", "sep": "tokenizer.ggml.seperator_token_id",
    "pad": "tokenizer.ggml.padding_token_id", "cls": "tokenizer.ggml.cls_token_id",
    "mask": "tokenizer.ggml.mask_token_id",
    "fim_pre": "tokenizer.ggml.fim_pre_token_id", "fim_suf": "tokenizer.ggml.fim_suf_token_id",
    "fim_mid": "tokenizer.ggml.fim_mid_token_id", "fim_pad": "tokenizer.ggml.fim_pad_token_id",
    "fim_rep": "tokenizer.ggml.fim_rep_token_id", "fim_sep": "tokenizer.ggml.fim_sep_token_id",
}  # fmt: skip

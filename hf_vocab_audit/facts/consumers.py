"""The consumers of an HF checkpoint (transformers, vLLM, SGLang, TGI, llama.cpp, mlx-lm), one entry each: what it
reads of the vocabulary matrices and of the model's shape, and what it refuses, with the version and source file
it was taken from. Adding a consumer is one :class:`Consumer` and one line in :data:`CONSUMERS`.

transformers was executed here (5.24 on CPU, the verdicts below). The engines were not installed and do not run
on the project's CPU machines: their entries follow their published source at the version named, not a run.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .checkpoint import Facts
from .tensors import TensorInfo


class HeadUse(str, enum.Enum):
    """What a consumer does with the checkpoint's lm_head for one layout of ``tie_word_embeddings``."""

    USES_EMBEDDING = "uses the input embedding"  # the saved lm_head is dropped (tied by the flag)
    USES_SAVED_IF_DIFFERENT = "uses the saved lm_head when it differs from the embedding"  # transformers 5
    RANDOM_INIT = "initialises lm_head randomly"  # untied and absent: a model that emits noise
    REFUSES = "refuses to load"
    NOT_READ = "not read here"


@dataclass(frozen=True)
class HeadsRule:
    """How a tensor-parallel engine splits attention heads across ``tp`` ranks."""

    heads_divisible: bool = True  # num_attention_heads % tp == 0
    kv_replicates: bool = True  # fewer KV heads than ranks: tp % num_key_value_heads == 0 (each rank a replica)


@dataclass(frozen=True)
class Consumer:
    """One consumer of a checkpoint, as read at ``version`` in ``source``."""

    name: str
    version: str
    source: str  # the file(s) each verdict was read in
    tied_with_saved_head: HeadUse  # tie_word_embeddings true and an lm_head tensor saved anyway
    untied_without_head: HeadUse  # tie_word_embeddings false and no lm_head tensor
    untied_refusal: str = ""  # what it says when it refuses an untied checkpoint without lm_head
    vocab_padding: int | None = None  # tensor parallelism: the vocabulary is padded to a multiple of this
    heads: HeadsRule | None = None  # tensor parallelism: None when the consumer has none
    executed: bool = False  # decided by running it here, not by reading its source
    # serving a chat: the files it reads a chat template from (any of them), and where it reads it
    template_files: tuple[str, ...] = ()
    template_source: str = ""


TRANSFORMERS = Consumer(
    "transformers", "5.24 (executed on CPU)", "modeling_utils.py (PreTrainedModel.from_pretrained, tie_weights)",
    HeadUse.USES_SAVED_IF_DIFFERENT, HeadUse.RANDOM_INIT, executed=True,
)
VLLM = Consumer(
    "vllm", "0.10.2",
    "vllm/model_executor/models/llama.py (LlamaForCausalLM.__init__ ties lm_head when tie_word_embeddings; "
    "load_weights skips 'lm_head.' then); vllm/model_executor/model_loader/default_loader.py (load_weights); "
    "vllm/model_executor/layers/vocab_parallel_embedding.py (DEFAULT_VOCAB_PADDING_SIZE = 64, pad_vocab_size, "
    "divide); vllm/config/__init__.py (ModelConfig.verify_with_parallel_config); vllm/distributed/utils.py "
    "(ensure_divisibility)",
    HeadUse.USES_EMBEDDING, HeadUse.REFUSES,
    untied_refusal="ValueError: Following weights were not initialized from checkpoint: {'lm_head.weight'}",
    vocab_padding=64, heads=HeadsRule(),
    template_files=("chat_template.json", "chat_template.jinja", "tokenizer_config.json"),
    template_source="vllm/entrypoints/chat_utils.py (resolve_hf_chat_template: the processor's template, then "
    "the tokenizer's as transformers loads it; none: \"As of transformers v4.44, default chat template is no longer "
    "allowed, so you must provide a chat template if the tokenizer does not define one.\"); vllm/sampling_params.py "
    "(SamplingParams.update_from_generation_config: stop ids = the tokenizer's eos_token_id and generation_config's "
    "eos_token_id); vllm/transformers_utils/config.py (try_get_generation_config: generation_config.json, else "
    "config.json)",
)
SGLANG = Consumer(
    "sglang", "0.4.10",
    "python/sglang/srt/models/llama.py (LlamaForCausalLM: lm_head = embed_tokens when tie_word_embeddings; "
    "load_weights skips lm_head.weight then); python/sglang/srt/layers/vocab_parallel_embedding.py "
    "(DEFAULT_VOCAB_PADDING_SIZE = 64, as vLLM's it was taken from)",
    HeadUse.USES_EMBEDDING, HeadUse.NOT_READ, vocab_padding=64, heads=HeadsRule(),
)
MLX_LM = Consumer(
    "mlx-lm", "0.26.3",
    "mlx_lm/models/llama.py (Model.sanitize pops lm_head.weight when tie_word_embeddings; no lm_head module "
    "then); mlx_lm/utils.py (load_model: model.load_weights(..., strict=True))",
    HeadUse.USES_EMBEDDING, HeadUse.REFUSES, untied_refusal="ValueError: Missing parameters: lm_head.weight.",
)
TGI = Consumer(
    "tgi", "3.3.4",
    "server/text_generation_server/models/custom_modeling/flash_llama_modeling.py (lm_head loaded from "
    "embed_tokens when tie_word_embeddings)",
    HeadUse.USES_EMBEDDING, HeadUse.NOT_READ, template_files=("tokenizer_config.json",),
    template_source="router/src/config.rs and router/src/lib.rs (HubTokenizerConfig: chat_template from "
    "tokenizer_config.json only)",
)
LLAMA_CPP = Consumer(
    "llama.cpp", "as vendored by llama-cpp-python 0.3.36",
    "src/llama-model.cpp (LLM_ARCH_LLAMA: output.weight optional, token_embd duplicated when absent)",
    HeadUse.NOT_READ, HeadUse.USES_EMBEDDING,
)
TRANSFORMERS4 = Consumer(  # --target 'transformers<5': its verdicts are in rules/transformers4.py (HVA97x)
    "transformers<5", "4.57.6 with tokenizers 0.22.2 (configs and tokenizers executed on CPU, no torch)",
    "models/auto/tokenization_auto.py (AutoTokenizer.from_pretrained: tokenizer_class must name a 4.x class); "
    "tokenization_utils_base.py (_set_model_specific_special_tokens: extra_special_tokens.keys(); "
    "CHAT_TEMPLATE_FILE from 4.47); models/auto/configuration_auto.py (CONFIG_MAPPING_NAMES); "
    "models/llama/configuration_llama.py (rope_theta=10000.0, rope_scaling=None at the top level)",
    HeadUse.NOT_READ, HeadUse.NOT_READ, executed=True,
    template_files=("chat_template.jinja", "tokenizer_config.json"),
    template_source="tokenization_utils_base.py (PreTrainedTokenizerBase.from_pretrained: chat_template.jinja, "
    "else tokenizer_config.json's chat_template)",
)

# The consumers, by name: a new engine is one ``Consumer`` above and one line here.
CONSUMERS: dict[str, Consumer] = {c.name: c for c in (TRANSFORMERS, VLLM, SGLANG, MLX_LM, TGI, LLAMA_CPP,
                                                      TRANSFORMERS4)}
# The engines whose verdict the lm_head rules quote beside transformers' (read in their source).
HEAD_ENGINES = (VLLM, MLX_LM)


def causal_lm(facts: Facts) -> bool:
    """Whether the checkpoint is a text generator the engines serve (a ``...ForCausalLM`` class)."""
    return any(a.endswith("ForCausalLM") for a in facts.config.architectures)


def saved_lm_head(facts: Facts) -> TensorInfo | None:
    """The ``lm_head.weight`` tensor the weight files hold, whatever ``tie_word_embeddings`` says (the embedding
    facts hide it when the flag ties it): a top-level ``lm_head.weight`` or a prefixed one beside the input."""
    tensors, emb = facts.tensors, facts.embeddings
    if tensors is None or emb is None or emb.input is None:
        return None
    found = tensors.tensors.get("lm_head.weight")
    if found is None:  # the first prefixed one by name, without sorting every tensor of a large checkpoint
        name = min((n for n in tensors.tensors if n.endswith(".lm_head.weight")), default=None)
        found = tensors.tensors[name] if name is not None else None
    return found if found is not None and len(found.shape) == 2 and found.name != emb.input.name else None


@dataclass(frozen=True)
class HeadLayout:
    """The lm_head layout a checkpoint's files give, when the flag and the tensors disagree."""

    tied_with_saved_head: TensorInfo | None = None  # the saved lm_head of a checkpoint that says tied
    untied_without_head: bool = False  # says untied, holds no lm_head


def head_layout(facts: Facts) -> HeadLayout:
    emb = facts.embeddings
    if emb is None or emb.input is None or emb.ctc_head or facts.adapter is not None or facts.gguf is not None:
        return HeadLayout()
    if not causal_lm(facts):
        return HeadLayout()
    saved = saved_lm_head(facts)
    if emb.tied:
        return HeadLayout(tied_with_saved_head=saved)
    return HeadLayout(untied_without_head=emb.output is None and saved is None)


def initializer_range(facts: Facts) -> float:
    """``initializer_range`` of the text config (transformers' default 0.02): the std a fresh lm_head has."""
    value = facts.config.text.get("initializer_range", facts.config.raw.get("initializer_range"))
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0.02


def head_verdicts(use: str) -> str:
    """What each engine of :data:`HEAD_ENGINES` does for one layout (``use``: a field of :class:`Consumer`)."""
    parts = []
    for c in HEAD_ENGINES:
        said: HeadUse = getattr(c, use)
        detail = f" ({c.untied_refusal})" if said is HeadUse.REFUSES and c.untied_refusal else ""
        parts.append(f"{c.name} {c.version} {said.value}{detail}")
    return "; ".join(parts)


def serving_stop_ids(facts: Facts) -> dict[int, str]:
    """The ids vLLM stops generating at by default, each with where it came from: the tokenizer's eos and
    ``eos_token_id`` of generation_config.json (of config.json when there is no generation_config.json, as
    ``try_get_generation_config`` falls back)."""
    stops: dict[int, str] = {}
    tok = facts.tokenizer
    if tok is not None:
        content, eos = tok.special_tokens.get("eos", (None, None))
        if eos is not None:
            stops[eos] = f"the tokenizer's eos_token {content!r}"
    source = facts.generation.special if facts.generation is not None else facts.config.special
    where = "generation_config.json" if facts.generation is not None else "config.json"
    for i in source.ids.get("eos_token_id", ()):
        stops[i] = f"{stops[i]} and {where} eos_token_id" if i in stops else f"{where} eos_token_id"
    return stops



class ParserKind(str, enum.Enum):
    """Which vLLM flag names a parser: ``--tool-call-parser`` or ``--reasoning-parser``."""

    TOOL = "tool-call-parser"
    REASONING = "reasoning-parser"


@dataclass(frozen=True)
class VllmParser:
    """One of vLLM's output parsers: the strings it looks up in the tokenizer, and what it does with them.

    ``raises``: the parser's constructor takes each string's id with ``vocab.get(...)`` and raises when one is
    None; vLLM builds the parser for each chat request that uses it, so every such request fails.
    ``strips``: the parser matches the strings in the decoded text and nothing in vLLM turns
    ``skip_special_tokens`` off for it, so a string saved as a *special* added token is removed from the text
    before the parser reads it (vLLM#9304) and nothing is parsed, silently."""

    name: str
    kind: ParserKind
    file: str
    tokens: tuple[str, ...]
    raises: str  # the words of the RuntimeError its constructor raises when a string is not in the vocabulary
    strips: bool


# vLLM 0.10.2, read in its source (vLLM does not run here). Only parsers whose look-ups were read are listed.
# hermes and mistral set ``request.skip_special_tokens = False`` in ``adjust_request`` when tools are in play
# (mistral: for a non-Mistral tokenizer), so a special <tool_call> or [TOOL_CALLS] survives decoding. The
# reasoning parsers adjust nothing: their non-streaming ``extract_reasoning_content`` searches the text.
VLLM_PARSERS = (
    VllmParser("hermes", ParserKind.TOOL, "vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py",
               ("<tool_call>", "</tool_call>"),
               "could not locate tool call start/end tokens in the tokenizer", strips=False),
    VllmParser("mistral", ParserKind.TOOL, "vllm/entrypoints/openai/tool_parsers/mistral_tool_parser.py",
               ("[TOOL_CALLS]",), "could not locate the tool call token in the tokenizer",
               strips=False),
    VllmParser("deepseek_r1", ParserKind.REASONING, "vllm/reasoning/deepseek_r1_reasoning_parser.py",
               ("<think>", "</think>"),
               "could not locate think start/end tokens in the tokenizer", strips=True),
    VllmParser("qwen3", ParserKind.REASONING, "vllm/reasoning/qwen3_reasoning_parser.py", ("<think>", "</think>"),
               "could not locate think start/end tokens in the tokenizer", strips=True),
)


def vllm_parser(kind: ParserKind, name: str) -> VllmParser | None:
    """The parser ``--{kind} name`` selects, or None for a name not in :data:`VLLM_PARSERS`."""
    return next((p for p in VLLM_PARSERS if p.kind is kind and p.name == name), None)


def vllm_parser_names(kind: ParserKind) -> tuple[str, ...]:
    return tuple(p.name for p in VLLM_PARSERS if p.kind is kind)


# The keys a config class maps to ``num_attention_heads`` / ``num_key_value_heads`` (its ``attribute_map``: GPT-2's
# ``n_head``, Falcon's ``num_kv_heads``), in the order they are tried.
HEADS_KEYS = ("num_attention_heads", "n_head", "num_heads", "n_heads")
KV_HEADS_KEYS = ("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num")


def _positive_int(section: dict[str, object], keys: tuple[str, ...]) -> tuple[str, int] | None:
    """The first of ``keys`` that holds a positive integer, with its key (anything else is not read)."""
    for key in keys:
        value = section.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return key, value
    return None


def pad_vocab(rows: int, multiple: int) -> int:
    """vLLM's ``pad_vocab_size``: ``rows`` rounded up to a multiple of ``multiple``."""
    return (rows + multiple - 1) // multiple * multiple


@dataclass(frozen=True)
class TensorParallel:
    """What an engine makes of the checkpoint split ``tp`` ways, and what it refuses (each a message it says)."""

    tp: int
    heads: int | None
    kv_heads: int | None
    vocab: int | None
    padded_vocab: int | None  # the vocabulary rows after the engine's padding (None: it does not pad)
    refusals: tuple[tuple[str, str], ...]  # (config key, what the engine says)


def tensor_parallel(consumer: Consumer, facts: Facts, tp: int) -> TensorParallel:
    """``consumer``'s checks of a ``tp``-way split, from ``config.json`` (text config first).

    vLLM 0.10.2: ``ModelConfig.verify_with_parallel_config`` (``vllm/config/__init__.py``) raises "Total number
    of attention heads (H) must be divisible by tensor parallel size (T)."; ``LlamaAttention.__init__``
    (``vllm/model_executor/models/llama.py``) asserts ``total_num_kv_heads % tp_size == 0`` when there are at
    least ``tp`` KV heads, else ``tp_size % total_num_kv_heads == 0`` (each rank holds a replica); the
    vocabulary is padded to a multiple of ``DEFAULT_VOCAB_PADDING_SIZE`` = 64 (``pad_vocab_size`` in
    ``vllm/model_executor/layers/vocab_parallel_embedding.py``) and ``VocabParallelEmbedding`` then splits the
    padded rows with ``divide(num_embeddings_padded, tp_size)``, whose ``ensure_divisibility``
    (``vllm/distributed/utils.py``) asserts "P is not divisible by T"."""
    text, prefix = facts.config.text, facts.config.text_prefix
    found, found_kv = _positive_int(text, HEADS_KEYS), _positive_int(text, KV_HEADS_KEYS)
    heads_key, heads = found if found is not None else ("num_attention_heads", None)
    kv_key, kv = found_kv if found_kv is not None else (heads_key, heads)
    vocab = facts.config.vocab_size
    padded = pad_vocab(vocab, consumer.vocab_padding) if vocab is not None and consumer.vocab_padding else None
    refusals: list[tuple[str, str]] = []
    rule = consumer.heads
    if rule is not None and rule.heads_divisible and heads is not None and heads % tp:
        refusals.append((prefix + heads_key, f"ValueError: Total number of attention heads ({heads}) must be "
                         f"divisible by tensor parallel size ({tp})."))
    if rule is not None and kv is not None and kv != heads:  # kv == heads: the heads check above says it
        replicated = rule.kv_replicates and kv < tp
        if (tp % kv) if replicated else (kv % tp):
            need = (f"tp_size % total_num_kv_heads == 0 ({tp} % {kv}: a replica per rank)" if replicated
                    else f"total_num_kv_heads % tp_size == 0 ({kv} % {tp})")
            refusals.append((prefix + kv_key, f"AssertionError: {need}"))
    if padded is not None and padded % tp:
        refusals.append((prefix + "vocab_size", f"AssertionError: {padded} is not divisible by {tp} (vocab_size {vocab} "
                         f"padded to a multiple of {consumer.vocab_padding})"))
    return TensorParallel(tp, heads, kv, vocab, padded, tuple(refusals))


__all__ = ["CONSUMERS", "Consumer", "HeadLayout", "HeadUse", "HeadsRule", "ParserKind", "VLLM_PARSERS", "VllmParser",
           "causal_lm", "head_layout", "head_verdicts",
           "initializer_range", "pad_vocab", "serving_stop_ids", "saved_lm_head", "tensor_parallel", "TensorParallel", "VLLM",
           "vllm_parser", "vllm_parser_names"]

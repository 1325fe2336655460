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
    UNINITIALISED = "serves lm_head as allocated, uninitialised memory (torch.empty), without an error"
    NOT_READ = "not read here"

    @property
    def fails(self) -> bool:
        """Whether this use leaves no working model: a refusal, or a head that was never the trained one."""
        return self in (HeadUse.REFUSES, HeadUse.RANDOM_INIT, HeadUse.UNINITIALISED)


@dataclass(frozen=True)
class HeadsRule:
    """How a tensor-parallel engine splits attention heads across ``tp`` ranks, and what it says when it cannot
    (format strings over ``heads``, ``kv``, ``tp`` and ``need``: the condition that failed, as its source words it)."""

    heads_divisible: bool = True  # num_attention_heads % tp == 0
    kv_replicates: bool = True  # fewer KV heads than ranks: tp % num_key_value_heads == 0 (each rank a replica)
    heads_refusal: str = ("ValueError: Total number of attention heads ({heads}) must be divisible by tensor "
                          "parallel size ({tp}).")
    kv_refusal: str = "AssertionError: {need}"
    flag: str = "--tensor-parallel-size"  # the engine's own flag for the size
    # model types whose attention says ``kv_refusal`` (empty: every one); the others fail as ``kv_refusal_other``
    kv_refusal_types: tuple[str, ...] = ()
    kv_refusal_other: str = ""


class TemplateLoad(str, enum.Enum):
    """Where a serving engine takes the chat template from (the files: ``Consumer.template_files``)."""

    # vLLM: the processor's template (chat_template.json / .jinja), else the tokenizer's as transformers loads it
    PROCESSOR_THEN_TOKENIZER = "the processor's template, else the tokenizer's"
    # SGLang, mlx-lm: the tokenizer's, as transformers loads it (chat_template.jinja first, then tokenizer_config.json)
    TOKENIZER = "the tokenizer's, as transformers loads it"
    # TGI's router parses the JSON files itself: chat_template.json's, else tokenizer_config.json's, else
    # processor_config.json's; a list of named templates gives its "default"; never chat_template.jinja
    ROUTER_JSON = "the JSON files its router parses"


class ConfigEos(str, enum.Enum):
    """Whether an engine stops at ``config.json``'s ``eos_token_id``."""

    ALWAYS = "always"
    WITHOUT_GENERATION_CONFIG = "when there is no generation_config.json"
    NEVER = "never"


class GenerationEos(str, enum.Enum):
    """Whether an engine stops at ``generation_config.json``'s ``eos_token_id``."""

    ADDED = "added to the others"
    LIST_REPLACES_TOKENIZER = "only a list, which then replaces the tokenizer's eos"  # TGI
    NEVER = "never"


@dataclass(frozen=True)
class StopIds:
    """The ids a serving engine stops generating at by default, read in its source (``source``)."""

    config_eos: ConfigEos
    generation_eos: GenerationEos
    source: str
    tokenizer_eos: bool = True  # the tokenizer's eos_token
    added_tokens: tuple[str, ...] = ()  # added tokens it also stops at when the tokenizer holds them


class DraftCheck(str, enum.Enum):
    """One comparison an engine makes between a speculative-decoding draft's vocabulary and its target's."""

    ADD_BOS = "whether both add a bos token, and the same one"
    ADD_EOS = "whether both add an eos token, and the same one"
    SIZE = "the two vocabulary sizes"
    TOKENS = "the token text at each shared id"


@dataclass(frozen=True)
class DraftVocabRule:
    """What an engine checks of a draft's vocabulary before it speculates with it, as read in ``source``.

    ``checks`` are in the engine's order, each with the message it logs (a format string over ``add_t``/``add_d``,
    ``id_t``/``id_d``, ``n_t``/``n_d``, ``diff``, ``max``, ``id``, ``t``/``d``); the first that fails is what it
    says, then it raises ``refusal``. An engine with no check says in ``unchecked`` what it does instead."""

    source: str
    checks: tuple[tuple[DraftCheck, str], ...] = ()
    refusal: str = ""
    max_size_difference: int = 0  # DraftCheck.SIZE: the largest difference it accepts
    compare_from: int = 0  # DraftCheck.TOKENS: the first id it compares
    unchecked: str = ""
    eagle3_checked: bool = False  # whether an EAGLE-3 draft (d2t/t2d maps) goes through the same checks


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
    template_load: TemplateLoad | None = None  # how it resolves the template (None: it serves no chat here)
    without_template: str = ""  # what a chat request gets when it resolves none
    stops: StopIds | None = None  # the ids it stops at by default
    tp_source: str = ""  # where its tensor-parallel checks were read
    untied_source: str = ""  # where its verdict on an untied checkpoint without lm_head was read
    draft_vocab: DraftVocabRule | None = None  # speculative decoding: its check of a draft's vocabulary


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
    untied_source="vllm/model_executor/model_loader/default_loader.py (load_weights)",
    draft_vocab=DraftVocabRule(
        "vllm/config/__init__.py (SpeculativeConfig.__post_init__:2110-2186: the draft's ModelConfig is built with "
        "the target's tokenizer; a draft that is not EAGLE, EAGLE-3, Medusa, MLPSpeculator or an MTP head raises "
        "NotImplementedError \"Speculative decoding with draft model is not supported yet.\"); "
        "vllm/v1/spec_decode/eagle.py (EagleProposer.load_model:612-657: the target's embed_tokens replaces the "
        "draft's when their shapes are equal, else the draft keeps its own; EAGLE takes the target's lm_head)",
        unchecked="compares nothing of the draft's vocabulary: the draft runs on the target's tokenizer and its "
        "proposed ids are verified as the target's"),
    template_files=("chat_template.json", "chat_template.jinja", "tokenizer_config.json"),
    template_source="vllm/entrypoints/chat_utils.py (resolve_hf_chat_template: the processor's template, then "
    "the tokenizer's as transformers loads it; none: \"As of transformers v4.44, default chat template is no longer "
    "allowed, so you must provide a chat template if the tokenizer does not define one.\"); vllm/sampling_params.py "
    "(SamplingParams.update_from_generation_config: stop ids = the tokenizer's eos_token_id and generation_config's "
    "eos_token_id); vllm/transformers_utils/config.py (try_get_generation_config: generation_config.json, else "
    "config.json)",
    template_load=TemplateLoad.PROCESSOR_THEN_TOKENIZER,
    without_template="its chat endpoint refuses every request (\"As of transformers v4.44, default chat template is no "
    "longer allowed, so you must provide a chat template if the tokenizer does not define one.\")",
    stops=StopIds(ConfigEos.WITHOUT_GENERATION_CONFIG, GenerationEos.ADDED,
                  "vllm/sampling_params.py (SamplingParams.update_from_generation_config); "
                  "vllm/transformers_utils/config.py (try_get_generation_config)"),
)
SGLANG = Consumer(
    "sglang", "0.4.10",
    "python/sglang/srt/models/llama.py (LlamaForCausalLM.__init__:414-424: lm_head = embed_tokens when "
    "tie_word_embeddings, else a ParallelLMHead; load_weights:604 skips lm_head.weight when tied and never checks "
    "that every parameter was loaded); python/sglang/srt/layers/quantization/unquant.py (UnquantizedEmbeddingMethod."
    "create_weights:47-62 allocates the head with torch.empty); python/sglang/srt/model_loader/loader.py "
    "(load_weights_and_postprocess:444-445)",
    HeadUse.USES_EMBEDDING, HeadUse.UNINITIALISED, vocab_padding=64,
    heads=HeadsRule(heads_refusal="AssertionError: self.total_num_heads % tp_size == 0 ({heads} % {tp})",
                    flag="--tp-size"),
    template_files=("chat_template.jinja", "tokenizer_config.json"),
    template_source="python/sglang/srt/managers/template_manager.py (TemplateManager.load_chat_template:73-106, "
    "_resolve_hf_chat_template:254-268: tokenizer.get_chat_template(), else a built-in template guessed from the "
    "model path by get_conv_template_by_model_path); python/sglang/srt/entrypoints/openai/serving_chat.py (:142-145: "
    "without a built-in template, tokenizer.apply_chat_template); transformers 4.54.1, its pin "
    "(tokenization_utils_base.py:2083-2090: chat_template.jinja over tokenizer_config.json's chat_template)",
    template_load=TemplateLoad.TOKENIZER,
    without_template="its chat endpoint fails every request unless the model's path matches one of its built-in "
    "templates (\"ValueError: Cannot use chat template functions because tokenizer.chat_template is not set and no "
    "template argument was passed!\")",
    stops=StopIds(ConfigEos.ALWAYS, GenerationEos.ADDED,
                  "python/sglang/srt/configs/model_config.py (ModelConfig.get_hf_eos_token_id:484-502: config.json's "
                  "eos_token_id and generation_config.json's); python/sglang/srt/hf_transformers_utils.py "
                  "(get_generation_config:161-172; attach_additional_stop_token_ids:335-342: <|eom_id|> when it is "
                  "an added token); python/sglang/srt/managers/schedule_batch.py (Req.check_finished:702-716: "
                  "those, and the tokenizer's eos_token_id)",
                  added_tokens=("<|eom_id|>",)),
    tp_source="python/sglang/srt/models/llama.py (LlamaAttention.__init__:119-132: assert total_num_heads % tp_size "
    "== 0; total_num_kv_heads % tp_size == 0, or tp_size % total_num_kv_heads == 0 when fewer); "
    "python/sglang/srt/layers/vocab_parallel_embedding.py (DEFAULT_VOCAB_PADDING_SIZE = 64:27, pad_vocab_size:35, "
    "divide(num_embeddings_padded, tp_size):274); python/sglang/srt/distributed/utils.py (ensure_divisibility:21-25)",
    untied_source="python/sglang/srt/layers/quantization/unquant.py:47-62 (torch.empty), "
    "python/sglang/srt/models/llama.py (load_weights)",
    draft_vocab=DraftVocabRule(
        "python/sglang/srt/speculative/spec_info.py (SpeculativeAlgorithm: EAGLE and EAGLE3 only); "
        "python/sglang/srt/speculative/eagle_worker.py (EAGLEWorker.__init__:134-157: set_embed for EAGLE-3, "
        "set_embed_and_head with the target's tensors for EAGLE); python/sglang/srt/models/llama.py "
        "(LlamaForCausalLM.set_embed_and_head:717-723 assigns them, no shape check)",
        unchecked="compares nothing of the draft's vocabulary: the draft's embedding and lm_head are replaced by the "
        "target's (EAGLE) and its proposed ids are verified as the target's"),
)
MLX_LM = Consumer(
    "mlx-lm", "0.26.3",
    "mlx_lm/models/llama.py (Model.sanitize pops lm_head.weight when tie_word_embeddings; no lm_head module "
    "then); mlx_lm/utils.py (load_model: model.load_weights(..., strict=True))",
    HeadUse.USES_EMBEDDING, HeadUse.REFUSES, untied_refusal="ValueError: Missing parameters: lm_head.weight.",
    template_files=("chat_template.jinja", "tokenizer_config.json"),
    template_source="mlx_lm/server.py (ModelProvider.load:180-214 loads the tokenizer through transformers; "
    "APIHandler.handle_chat_completions:836-847: tokenizer.apply_chat_template when the tokenizer has a template, "
    "else convert_chat:95-116 joins the messages as 'USER: ...' / 'ASSISTANT: ' text)",
    template_load=TemplateLoad.TOKENIZER,
    without_template="it joins the messages as plain 'USER: ...' / 'ASSISTANT: ' text (convert_chat), not the format "
    "the model was trained on",
    stops=StopIds(ConfigEos.ALWAYS, GenerationEos.NEVER,
                  "mlx_lm/utils.py (load:258-260: eos_token_ids = config.json's eos_token_id); "
                  "mlx_lm/tokenizer_utils.py (TokenizerWrapper.__init__:262-270: those, else the tokenizer's "
                  "eos_token_id); mlx_lm/generate.py (stream_generate:693); mlx_lm/server.py (:724-726: "
                  "stopping_criteria with the tokenizer's eos_token_id)"),
    untied_source="mlx_lm/utils.py:215 (load_model: model.load_weights(..., strict=True)); mlx_lm/models/llama.py:185-208",
)
TGI = Consumer(
    "tgi", "3.3.4",
    "server/text_generation_server/models/custom_modeling/flash_llama_modeling.py (FlashLlamaForCausalLM.__init__:"
    "636-651: lm_head loaded from model.embed_tokens when tie_word_embeddings, else from lm_head); "
    "server/text_generation_server/utils/weights.py (Weights.get_filename:192 raises for a tensor the files lack)",
    HeadUse.USES_EMBEDDING, HeadUse.REFUSES, untied_refusal="RuntimeError: weight lm_head.weight does not exist",
    heads=HeadsRule(kv_replicates=False,
                    heads_refusal="ValueError: `num_heads` must be divisible by `num_shards` (got `num_heads`: "
                    "{heads} and `num_shards`: {tp}",
                    kv_refusal="ValueError: `num_key_value_heads` must be divisible by `num_shards` (got "
                    "`num_key_value_heads`: {kv} and `num_shards`: {tp}",
                    flag="--num-shard",
                    # models/__init__.py: FlashLlamaForCausalLM serves these; only flash_llama_modeling.py checks
                    kv_refusal_types=("llama", "phi3", "granite", "baichuan", "phimoe"),
                    kv_refusal_other="{model_type}'s attention divides num_key_value_heads ({kv}) by the {tp} "
                    "shards unchecked (0 per shard; only TGI's Llama attention refuses it): the shard's q/k/v "
                    "weights do not match that count and the server fails while starting"),
    template_files=("chat_template.json", "tokenizer_config.json", "processor_config.json"),
    template_source="router/src/server.rs (:1598-1688: chat_template.json's chat_template replaces "
    "tokenizer_config.json's; HubTokenizerConfig::from_file drops the whole file when a field does not parse); "
    "router/src/lib.rs (ChatTemplateVersions:129, HubTokenizerConfig:137-146, ChatTemplateStandalone:156); "
    "router/src/infer/mod.rs (Infer::new:71-81: the tokenizer config's template, else processor_config.json's; a "
    "list of named templates gives its \"default\"; apply_chat_template:227-240). chat_template.jinja is not read",
    template_load=TemplateLoad.ROUTER_JSON,
    without_template="its chat endpoint fails every request (TemplateError: template not found, "
    "router/src/infer/mod.rs:234)",
    stops=StopIds(ConfigEos.NEVER, GenerationEos.LIST_REPLACES_TOKENIZER,
                  "server/text_generation_server/models/flash_causal_lm.py (FlashCausalLM.__init__:1239-1247: a "
                  "list eos_token_id of generation_config.json becomes tokenizer._eos_token_ids); "
                  "server/text_generation_server/utils/tokens.py (StoppingCriteria.from_pb:199-206: those ids, else "
                  "the tokenizer's eos_token_id)"),
    tp_source="server/text_generation_server/models/custom_modeling/flash_llama_modeling.py (FlashLlamaAttention."
    "__init__:167-176, no replication of KV heads); server/text_generation_server/layers/tensor_parallel.py "
    "(TensorParallelHead.load:56-64 loads the whole lm_head when the vocabulary does not split; "
    "TensorParallelEmbedding:223-228 blocks of ceil(vocab / tp)): the vocabulary is never refused",
    untied_source="server/text_generation_server/utils/weights.py:192",
)
LLAMA_CPP = Consumer(
    "llama.cpp", "as vendored by llama-cpp-python 0.3.36",
    "src/llama-model.cpp (LLM_ARCH_LLAMA: output.weight optional, token_embd duplicated when absent)",
    HeadUse.NOT_READ, HeadUse.USES_EMBEDDING,
    draft_vocab=DraftVocabRule(
        "common/speculative.cpp (common_speculative_are_compatible:67-130, SPEC_VOCAB_MAX_SIZE_DIFFERENCE = 128 and "
        "SPEC_VOCAB_CHECK_START_TOKEN_ID = 5 at :30-31; the size and token messages are logged at debug level; "
        "common_speculative_impl_draft_simple:242-249, the speculation of a plain --model-draft, throws when it "
        "returns false, no retokenising fallback; common_speculative_impl_draft_eagle3 does not call it); "
        "gguf-py/gguf/vocab.py (SpecialVocab._try_load_from_tokenizer_json:235-346: add_bos/add_eos from "
        "tokenizer.json's post_processor, else tokenizer_config.json)",
        checks=((DraftCheck.ADD_BOS, "draft model bos tokens must match target model to use speculation. add: {add_t} - "
                 "{add_d}, id: {id_t} - {id_d})"),
                (DraftCheck.ADD_EOS, "draft model eos tokens must match target model to use speculation. add: {add_t} - "
                 "{add_d}, id: {id_t} - {id_d})"),
                (DraftCheck.SIZE, "draft model vocab must closely match target model to use speculation but target "
                 "vocab size {n_t} does not match draft vocab size {n_d} - difference {diff}, max allowed {max}"),
                (DraftCheck.TOKENS, "draft model vocab must match target model to use speculation but token {id} "
                 "content differs - target '{t}', draft '{d}'")),
        refusal="\"the target and draft vocabs are not compatible\", then std::runtime_error: draft model vocab type "
        "must match target model to use speculation",
        max_size_difference=128, compare_from=5),
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
# The serving engines ``--target`` names, by its value (``TargetKind``): a new engine target is one line here.
ENGINE_TARGETS: dict[str, Consumer] = {"vllm": VLLM, "sglang": SGLANG, "tgi": TGI, "mlx-lm": MLX_LM}
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
    return stop_ids(VLLM, facts)


def _raw_eos_is_list(raw: dict[str, object]) -> bool:
    value = raw.get("eos_token_id")
    return isinstance(value, list)


def stop_ids(consumer: Consumer, facts: Facts) -> dict[int, str]:
    """The ids ``consumer`` stops generating at by default (its :class:`StopIds`), each with where it came from."""
    rule = consumer.stops
    if rule is None:
        return {}
    stops: dict[int, str] = {}

    def add(i: int, why: str) -> None:
        stops[i] = f"{stops[i]} and {why}" if i in stops else why

    tok, generation = facts.tokenizer, facts.generation
    tokenizer_eos = rule.tokenizer_eos
    if (rule.generation_eos is GenerationEos.LIST_REPLACES_TOKENIZER and generation is not None
            and _raw_eos_is_list(generation.raw)):
        tokenizer_eos = False
    if tok is not None and tokenizer_eos:
        content, eos = tok.special_tokens.get("eos", (None, None))
        if eos is not None:
            add(eos, f"the tokenizer's eos_token {content!r}")
    if rule.config_eos is ConfigEos.ALWAYS or (rule.config_eos is ConfigEos.WITHOUT_GENERATION_CONFIG
                                               and generation is None):
        for i in facts.config.special.ids.get("eos_token_id", ()):
            add(i, "config.json eos_token_id")
    if generation is not None and (rule.generation_eos is GenerationEos.ADDED or (
            rule.generation_eos is GenerationEos.LIST_REPLACES_TOKENIZER and _raw_eos_is_list(generation.raw))):
        for i in generation.special.ids.get("eos_token_id", ()):
            add(i, "generation_config.json eos_token_id")
    if tok is not None:
        added = {a.content: a.id for a in tok.added_tokens}
        for text in rule.added_tokens:
            if text in added:
                add(added[text], f"the added token {text!r}")
    return stops


class ParserKind(str, enum.Enum):
    """Which vLLM flag names a parser: ``--tool-call-parser`` or ``--reasoning-parser``."""

    TOOL = "tool-call-parser"
    REASONING = "reasoning-parser"


@dataclass(frozen=True)
class VllmParser:
    """One of vLLM's output parsers: the strings it looks up in the tokenizer, and what it does with them.

    ``raises``: the parser's constructor takes each string's id with ``vocab.get(...)`` and raises when one is
    None; vLLM builds the parser for each chat request that uses it, so every such request fails ("": it looks
    nothing up that can raise).
    ``strips``: the parser matches the strings in the decoded text and nothing in vLLM turns
    ``skip_special_tokens`` off for it, so a string saved as a *special* added token is removed from the text
    before the parser reads it (vLLM#9304) and nothing is parsed, silently: ``reads`` is the method that searches
    the text, ``unparsed`` what it returns then."""

    name: str
    kind: ParserKind
    file: str
    tokens: tuple[str, ...]
    raises: str  # the words of the RuntimeError its constructor raises when a string is not in the vocabulary
    strips: bool
    reads: str = ""
    unparsed: str = ""


# vLLM 0.10.2, read in its released wheel (vLLM does not run here). Only parsers whose look-ups were read are listed.
# mistral sets ``request.skip_special_tokens = False`` in ``adjust_request`` when tools are in play and the
# tokenizer is not a MistralTokenizer (mistral_tool_parser.py:90-101), so a special [TOOL_CALLS] survives decoding;
# its constructor raises without the token (:77-88). hermes overrides no ``adjust_request`` (the base's returns the
# request unchanged, abstract_tool_parser.py:41-46) and looks nothing up with ``vocab.get``: it encodes
# <tool_call> / </tool_call> (hermes_tool_parser.py:55-58, nothing raises), and its non-streaming
# ``extract_tool_calls`` searches the decoded text (:108-111). The reasoning parsers raise in their constructors
# (deepseek_r1_reasoning_parser.py:40-45, qwen3_reasoning_parser.py:39-45), adjust nothing, and their non-streaming
# ``extract_reasoning_content`` partitions the decoded text on <think> / </think> (deepseek_r1:156-172: without
# </think> the whole output is reasoning; qwen3:133-135: without both the whole output is content).
VLLM_PARSERS = (
    VllmParser("hermes", ParserKind.TOOL, "vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py",
               ("<tool_call>", "</tool_call>"), "", strips=True, reads="extract_tool_calls",
               unparsed="reports no tool call and returns the whole output as content"),
    VllmParser("mistral", ParserKind.TOOL, "vllm/entrypoints/openai/tool_parsers/mistral_tool_parser.py",
               ("[TOOL_CALLS]",), "could not locate the tool call token in the tokenizer",
               strips=False),
    VllmParser("deepseek_r1", ParserKind.REASONING, "vllm/reasoning/deepseek_r1_reasoning_parser.py",
               ("<think>", "</think>"),
               "could not locate think start/end tokens in the tokenizer", strips=True,
               reads="extract_reasoning_content", unparsed="returns the whole output as reasoning and no content"),
    VllmParser("qwen3", ParserKind.REASONING, "vllm/reasoning/qwen3_reasoning_parser.py", ("<think>", "</think>"),
               "could not locate think start/end tokens in the tokenizer", strips=True,
               reads="extract_reasoning_content", unparsed="returns the whole output as content"),
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
    (``vllm/distributed/utils.py``) asserts "P is not divisible by T". The other engines' checks are the data of
    their entry (``HeadsRule``, ``vocab_padding``), read where their ``tp_source`` says."""
    text, prefix = facts.config.text, facts.config.text_prefix
    found, found_kv = _positive_int(text, HEADS_KEYS), _positive_int(text, KV_HEADS_KEYS)
    heads_key, heads = found if found is not None else ("num_attention_heads", None)
    kv_key, kv = found_kv if found_kv is not None else (heads_key, heads)
    vocab = facts.config.vocab_size
    padded = pad_vocab(vocab, consumer.vocab_padding) if vocab is not None and consumer.vocab_padding else None
    refusals: list[tuple[str, str]] = []
    rule = consumer.heads
    if rule is not None and rule.heads_divisible and heads is not None and heads % tp:
        refusals.append((prefix + heads_key, rule.heads_refusal.format(heads=heads, kv=kv, tp=tp, need="")))
    if rule is not None and kv is not None and kv != heads:  # kv == heads: the heads check above says it
        replicated = rule.kv_replicates and kv < tp
        if (tp % kv) if replicated else (kv % tp):
            need = (f"tp_size % total_num_kv_heads == 0 ({tp} % {kv}: a replica per rank)" if replicated
                    else f"total_num_kv_heads % tp_size == 0 ({kv} % {tp})")
            model_type = facts.config.text.get("model_type", facts.config.model_type)
            said = (rule.kv_refusal_other if rule.kv_refusal_types and model_type not in rule.kv_refusal_types
                    else rule.kv_refusal)
            refusals.append((prefix + kv_key, said.format(heads=heads, kv=kv, tp=tp, need=need,
                                                          model_type=str(model_type)[:80])))
    if padded is not None and padded % tp:
        refusals.append((prefix + "vocab_size", f"AssertionError: {padded} is not divisible by {tp} (vocab_size {vocab} "
                         f"padded to a multiple of {consumer.vocab_padding})"))
    return TensorParallel(tp, heads, kv, vocab, padded, tuple(refusals))


__all__ = ["CONSUMERS", "ConfigEos", "Consumer", "ENGINE_TARGETS", "GenerationEos", "HeadLayout", "HeadUse", "HeadsRule",
           "DraftCheck", "DraftVocabRule", "ParserKind", "StopIds", "TemplateLoad", "VLLM_PARSERS", "VllmParser", "stop_ids",
           "causal_lm", "head_layout", "head_verdicts",
           "initializer_range", "pad_vocab", "serving_stop_ids", "saved_lm_head", "tensor_parallel", "TensorParallel", "VLLM",
           "vllm_parser", "vllm_parser_names"]

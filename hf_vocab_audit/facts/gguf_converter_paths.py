"""Which vocabulary path llama.cpp's converter takes for a checkpoint: its own choice, per architecture.

``convert_hf_to_gguf.py`` (as vendored by llama-cpp-python 0.3.36) picks the model class from
``config.json``'s ``architectures[0]`` (``text_config.architectures[0]`` when present;
``get_model_architecture`` and ``ModelBase.from_model_architecture`` in ``conversion/base.py``), and each
class's ``set_vocab`` tries the vocabulary readers in its own order. The order is the class's, not the
files': ``LlamaModel`` (``conversion/llama.py``) tries ``_set_vocab_sentencepiece`` (``tokenizer.model``), on
``FileNotFoundError`` ``_set_vocab_llama_hf`` (``gguf.LlamaHfVocab`` over a SentencePiece-converted
``tokenizer.json``), on ``FileNotFoundError`` / ``TypeError`` ``_set_vocab_gpt2`` (the BPE path that hashes
the pre-tokenizer); ``GemmaModel`` knows only the first and stops without ``tokenizer.model``; the classes
that keep ``TextModel.set_vocab`` take the BPE path even beside a ``tokenizer.model``. So a Llama-2 folder
saved with only ``tokenizer.json`` (a byte-fallback BPE, what transformers writes for a SentencePiece
tokenizer) is never hashed: the converter writes it as a ``llama`` vocabulary and llama.cpp loads it.

:data:`CONVERTER_CLASSES` is that choice as a table, read from the vendored source (the file and class are
cited per entry); an architecture it does not list keeps the old guess (``tokenizer.model`` present:
SentencePiece, else BPE). Not modelled: ``LlamaModel``'s earlier exits (a Mistral-format folder, or
``tekken.json`` without ``tokenizer.json``: ``_set_vocab_mistral``; ``tokenizer_class`` "HybridDNATokenizer";
a ``GlmasrModel`` origin), each for a tokenizer this audit does not read anyway. ``scripts/gguf_verdicts.py``
runs the converter on tiny checkpoints of each path and records what it did (``converter_paths`` in ``tests/data/gguf_verdicts.json``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from ..errors import AuditError
from ..io.jsonfile import read_json_object


class VocabStep(Enum):
    """One vocabulary reader of ``conversion/base.py``, and what it needs to be taken."""

    SENTENCEPIECE = "sentencepiece"  # _set_vocab_sentencepiece: needs tokenizer.model, else FileNotFoundError
    LLAMA_HF = "llama_hf"  # _set_vocab_llama_hf: a byte-fallback BPE tokenizer.json with a Sequence decoder
    BPE = "bpe"  # _set_vocab_gpt2: AutoTokenizer, the pre-tokenizer hash; always taken when reached
    BPE_IF_GPT2_CLASS = "bpe_if_gpt2_class"  # Phi3MiniModel: tokenizer_class "GPT2Tokenizer" -> _set_vocab_gpt2


@dataclass(frozen=True)
class ConverterClass:
    """A model class of the converter and the order its ``set_vocab`` tries the readers in."""

    name: str
    source: str  # the file of convert_hf_to_gguf.py's conversion package that defines its set_vocab
    steps: tuple[VocabStep, ...]
    # its own SentencePiece reader also takes tokenizer.json's ``added_tokens`` (Phi3MiniModel.set_vocab), where
    # ``_create_vocab_sentencepiece`` reads added_tokens.json and ``added_tokens_decoder`` only
    spm_reads_tokenizer_json: bool = False


S, H, B, G = VocabStep.SENTENCEPIECE, VocabStep.LLAMA_HF, VocabStep.BPE, VocabStep.BPE_IF_GPT2_CLASS
_LLAMA = ConverterClass("LlamaModel", "conversion/llama.py", (S, H, B))
_GEMMA = ConverterClass("GemmaModel", "conversion/gemma.py", (S,))
_GEMMA2 = ConverterClass("Gemma2Model", "conversion/gemma.py", (S,))
_GEMMA3 = ConverterClass("Gemma3Model", "conversion/gemma.py", (S, B))
_QWEN2 = ConverterClass("Qwen2Model", "conversion/qwen.py", (S, B))
_DEEPSEEK = ConverterClass("DeepseekModel", "conversion/deepseek.py", (S, B))
_JAMBA = ConverterClass("JambaModel", "conversion/jamba.py", (S, H))
_PHI3 = ConverterClass("Phi3MiniModel", "conversion/phi.py", (G, S), spm_reads_tokenizer_json=True)
_SPM_ONLY = {name: ConverterClass(name, source, (S,)) for name, source in (
    ("BaichuanModel", "conversion/baichuan.py"), ("OrionModel", "conversion/orion.py"),
    ("MiniCPMModel", "conversion/minicpm.py"))}
_TEXT = ConverterClass("TextModel (set_vocab not overridden)", "conversion/base.py", (B,))
_GPT2_OWN = {name: ConverterClass(name, source, (B,)) for name, source in (
    ("GptOssModel", "conversion/gpt_oss.py"), ("Qwen2MoeModel", "conversion/qwen.py"))}

# HF architecture (config.json ``architectures[0]``) -> the converter's class, llama-cpp-python 0.3.36. The
# ``@ModelBase.register(...)`` lists of each class; subclasses that inherit ``set_vocab`` share its entry.
CONVERTER_CLASSES: dict[str, ConverterClass] = {
    **dict.fromkeys(("LLaMAForCausalLM", "LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM",
                     "LlamaModel", "IQuestCoderForCausalLM", "GraniteForCausalLM", "GraniteMoeForCausalLM",
                     "GraniteMoeSharedForCausalLM",
                     # registered on LlamaModel itself, or by subclasses that keep its set_vocab (llama.py,
                     # granite.py, arcee.py, smollm3.py, ...): a Llava / SmolLM3 folder takes the same readers
                     "VLlama3ForCausalLM", "LlavaForConditionalGeneration", "VoxtralForConditionalGeneration",
                     "LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM", "Eagle3Speculator", "Eagle3DraftModel",
                     "AfmoeForCausalLM", "CogVLMForCausalLM", "GraniteSWAForCausalLM", "GraniteMoeSWAForCausalLM",
                     "GraniteSwitchForCausalLM", "JanusForConditionalGeneration", "ArceeForCausalLM",
                     "LlamaBidirectionalModel", "SmolLM3ForCausalLM", "ApertusForCausalLM", "NanbeigeForCausalLM",
                     "Sarashina2VisionForCausalLM"), _LLAMA),
    "GemmaForCausalLM": _GEMMA,
    "Gemma2ForCausalLM": _GEMMA2,
    **dict.fromkeys(("Gemma3ForCausalLM", "Gemma3ForConditionalGeneration", "Gemma3TextModel"), _GEMMA3),
    **dict.fromkeys(("Qwen2ForCausalLM", "Qwen2Model", "Qwen3ForCausalLM", "Qwen3Model",
                     "Qwen2AudioForConditionalGeneration", "KORMoForCausalLM", "AudioFlamingo3ForConditionalGeneration",
                     "DotsOCRForCausalLM", "Qwen3VLForConditionalGeneration"), _QWEN2),
    "DeepseekForCausalLM": _DEEPSEEK,
    "JambaForCausalLM": _JAMBA,
    **dict.fromkeys(("Phi3ForCausalLM", "PhiMoEForCausalLM", "Phi4ForCausalLMV"), _PHI3),
    **dict.fromkeys(("BaichuanForCausalLM", "BaiChuanForCausalLM"), _SPM_ONLY["BaichuanModel"]),
    "OrionForCausalLM": _SPM_ONLY["OrionModel"],
    "MiniCPMForCausalLM": _SPM_ONLY["MiniCPMModel"],
    "GptOssForCausalLM": _GPT2_OWN["GptOssModel"],
    **dict.fromkeys(("Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM"), _GPT2_OWN["Qwen2MoeModel"]),
    **dict.fromkeys(("GPT2LMHeadModel", "GPTNeoXForCausalLM", "OlmoForCausalLM", "Olmo2ForCausalLM",
                     "PhiForCausalLM", "Starcoder2ForCausalLM", "GPTBigCodeForCausalLM", "FalconForCausalLM",
                     "BloomForCausalLM", "CohereForCausalLM", "Cohere2ForCausalLM", "ExaoneForCausalLM"), _TEXT),
}


# ``get_model_architecture`` keeps these top-level architectures for a text conversion even where
# ``text_config.architectures`` names another (conversion/base.py).
TOP_LEVEL_ROUTED = frozenset({"StepVLForConditionalGeneration", "Sarashina2VisionForCausalLM",
                              "Exaone4_5_ForConditionalGeneration", "Step3p7ForConditionalGeneration",
                              "KimiK3ForConditionalGeneration"})


@dataclass(frozen=True)
class PathChoice:
    """The reader the converter will take (None: every reader of the class refuses the folder)."""

    step: VocabStep | None
    converter_class: ConverterClass | None  # None: the architecture is not in the table (the old guess)
    architecture: str | None
    why: str  # one sentence: what decided it

    @property
    def path(self) -> str:
        """``TargetFacts.path``: "sentencepiece", "llama_hf", "bpe", or "none" (the converter stops)."""
        if self.step is None:
            return "none"
        return VocabStep.BPE.value if self.step is VocabStep.BPE_IF_GPT2_CLASS else self.step.value


def llama_hf_refusal(folder: Path, backend: Any = None) -> str | None:
    """Why ``gguf.LlamaHfVocab`` (``gguf-py/gguf/vocab.py``) refuses ``folder``'s tokenizer.json, or None when
    it takes it. It raises ``FileNotFoundError`` unless ``model.type`` is "BPE" with ``byte_fallback`` true and
    the ``decoder`` is a "Sequence" (a Llama-3 style BPE with ``ignore_merges`` and no byte fallback raises
    ``TypeError``): the converter then goes on to the BPE path. ``backend``: the tokenizers library's object the
    audit already loaded from that file, read instead of parsing the file again (a 256k-piece tokenizer.json is
    over a config file's 16 MiB bound, and a second parse of it in Python costs its size many times over)."""
    path = folder / "tokenizer.json"
    if not path.is_file():
        return "no tokenizer.json"
    found = _backend_model(backend)
    if found is None:
        try:
            raw = read_json_object(path)
        except AuditError:
            return "tokenizer.json is not a JSON object"
        model, decoder = raw.get("model"), raw.get("decoder")
        if not isinstance(model, dict):
            return "tokenizer.json has no model"
        kind, ignore_merges = model.get("type"), model.get("ignore_merges", False)
        byte_fallback = model.get("byte_fallback")  # absent: the converter's two checks default differently
        decoder_type = decoder.get("type") if isinstance(decoder, dict) else None
    else:
        kind, byte_fallback, ignore_merges, decoder_type = found
    if kind == "BPE" and ignore_merges and not (True if byte_fallback is None else byte_fallback):
        return "a Llama-3 style BPE (ignore_merges, no byte_fallback): \"Llama 3 must be converted with BpeVocab\""
    if kind != "BPE" or not byte_fallback:
        return f"its model is {kind!r} without byte_fallback, not a SentencePiece-converted BPE"
    if decoder_type != "Sequence":
        return "its decoder is not a Sequence"
    return None


def _backend_model(backend: Any) -> tuple[str, bool, bool, str | None] | None:
    """(model type, byte_fallback, ignore_merges, decoder type) of a ``tokenizers.Tokenizer``, or None (not one)."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return None
    if not isinstance(backend, Tokenizer):
        return None
    model, decoder = backend.model, backend.decoder
    kind = type(model).__name__
    if kind != "BPE":
        return kind, False, False, None
    return kind, bool(model.byte_fallback), bool(model.ignore_merges), type(decoder).__name__ if decoder else None


def _tokenizer_class(folder: Path) -> str | None:
    path = folder / "tokenizer_config.json"
    if not path.is_file():
        return None
    try:
        value = read_json_object(path).get("tokenizer_class")
    except AuditError:
        return None
    return value if isinstance(value, str) else None


def choose_path(folder: Path, architectures: tuple[str, ...], text_architectures: tuple[str, ...] = (),
                backend: Any = None) -> PathChoice:
    """The converter's own choice for ``folder`` (the tokenizer's folder) under these architectures; ``backend``:
    the tokenizer already loaded from its tokenizer.json (:func:`llama_hf_refusal`)."""
    top = architectures[0] if architectures else None
    arch = top if top in TOP_LEVEL_ROUTED else (text_architectures or architectures or (None,))[0]
    spm = (folder / "tokenizer.model").is_file()
    cls = CONVERTER_CLASSES.get(arch) if arch is not None else None
    if cls is None:
        step = VocabStep.SENTENCEPIECE if spm else VocabStep.BPE
        return PathChoice(step, None, arch, f"architecture {arch!r} is not in the table: tokenizer.model "
                                            f"{'present' if spm else 'absent'}")
    tried: list[str] = []
    for step in cls.steps:
        if step is VocabStep.SENTENCEPIECE:
            if spm:
                return PathChoice(step, cls, arch, f"{cls.name}.set_vocab reads tokenizer.model")
            tried.append("no tokenizer.model")
        elif step is VocabStep.LLAMA_HF:
            refusal = llama_hf_refusal(folder, backend)
            if refusal is None:
                return PathChoice(step, cls, arch, f"{cls.name}.set_vocab: no tokenizer.model, and LlamaHfVocab "
                                                   "takes tokenizer.json (a byte-fallback BPE)")
            tried.append(f"LlamaHfVocab refuses it ({refusal})")
        elif step is VocabStep.BPE_IF_GPT2_CLASS:
            if _tokenizer_class(folder) == "GPT2Tokenizer":
                return PathChoice(step, cls, arch, f"{cls.name}.set_vocab: tokenizer_class is GPT2Tokenizer")
            tried.append("tokenizer_class is not GPT2Tokenizer")
        else:
            return PathChoice(step, cls, arch, f"{cls.name}.set_vocab takes the BPE path"
                                               + (f" ({'; '.join(tried)})" if tried else ""))
    return PathChoice(None, cls, arch, f"{cls.name}.set_vocab has no reader for this folder: {'; '.join(tried)}")


def text_architectures(raw: dict[str, object]) -> tuple[str, ...]:
    """``text_config.architectures``, which the converter prefers for a text model (``get_model_architecture``)."""
    text = raw.get("text_config")
    archs = text.get("architectures") if isinstance(text, dict) else None
    return tuple(a for a in archs if isinstance(a, str)) if isinstance(archs, list) else ()


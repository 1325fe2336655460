"""What a converter or a serving engine will make of an HF checkpoint (``check HF_DIR --target KIND``: gguf, vllm,
sglang, tgi, mlx-lm), predicted from the facts alone.

``gguf``: llama.cpp's ``convert_hf_to_gguf.py`` (as vendored by llama-cpp-python 0.3.36) takes the vocabulary
path its model class's ``set_vocab`` chooses (``facts/gguf_converter_paths.py``: the table per architecture).
On the SentencePiece path (``tokenizer.model``) it reads the SentencePiece model, then added tokens from
``added_tokens.json`` and ``tokenizer_config.json``'s ``added_tokens_decoder`` only; ids past ``vocab_size``
are dropped ("ignore token N: id is out of range"), and every id it found no token for becomes ``[PAD{i}]``.
On the ``llama_hf`` path (``LlamaModel`` without ``tokenizer.model``, a byte-fallback BPE ``tokenizer.json``)
it writes the tokenizer's ids as a ``llama`` vocabulary without hashing anything (:class:`LlamaHfVocabFacts`).
On the BPE path it loads ``AutoTokenizer``, asserts ``max(tokenizer.vocab.values()) < vocab_size``, names the
pre-tokenizer from a hash of how the tokenizer splits a test text, and fills missing ids with ``[PAD{i}]``.

``vllm``: an engine samples from every lm_head row; the ids past the tokenizer cannot be detokenized.

``sglang``, ``tgi``, ``mlx-lm``: what the engine's entry in ``facts.consumers`` says it reads (its chat template,
its stop ids, its lm_head, its tensor-parallel checks), applied by the HVA98x rules.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.options import TargetKind
from ..errors import AuditError
from ..io.jsonfile import read_json_object
from .checkpoint import Facts
from .consumers import VLLM, ParserKind, VllmParser, vllm_parser, vllm_parser_names
from .llama_cpp_tables import CHKTXT, PRE_TOKENIZER_HASHES
from .tokenizer.bounded_calls import library_call
from .tokenizer.folder import has_tokenizer
from .tokenizer.slow_files import check_slow_folder
from .tree import check_tree

if TYPE_CHECKING:
    from .transformers4 import Transformers4Files

TARGETS = tuple(kind.value for kind in TargetKind)
TARGET_ALIASES = {"transformers4": TargetKind.TRANSFORMERS4}  # a spelling without a shell metacharacter


@dataclass(frozen=True)
class TargetFacts:
    """The checkpoint's facts and what the target will do with them."""

    facts: Facts
    target: TargetKind
    path: str = ""  # "sentencepiece", "llama_hf", "bpe", or "none": the converter stops (gguf)
    vocab_size: int | None = None  # what the converter sizes the vocabulary by
    declared_added: frozenset[int] = frozenset()  # ids the SentencePiece path reads as added tokens
    pre_hash: str | None = None
    pre_name: str | None = None
    hash_error: str | None = None
    extra: dict[str, object] = field(default_factory=dict)
    tp: int | None = None  # --tp (vllm): the tensor-parallel size the engine runs with
    parsers: tuple[VllmParser, ...] = ()  # --tool-call-parser / --reasoning-parser (vllm): the parsers it runs
    transformers4: Transformers4Files | None = None  # transformers<5 (its module is imported for that target alone)
    converter_class: str | None = None  # gguf: the converter's model class whose set_vocab chose the path
    path_why: str = ""  # gguf: what decided the path (facts/gguf_converter_paths.py)
    llama_hf: LlamaHfVocabFacts | None = None  # gguf, path "llama_hf": the vocabulary LlamaHfVocab writes


@dataclass(frozen=True)
class LlamaHfVocabFacts:
    """What ``gguf.LlamaHfVocab`` (``gguf-py/gguf/vocab.py``, llama-cpp-python 0.3.36) writes: the tokenizer's
    ``vocab_size`` base ids in order, then the added tokens at or past it, sorted by id and appended one after
    another. Nothing pads the list to ``config.json``'s ``vocab_size`` and nothing checks it against the
    embedding rows: the token count is ``base + len(appended)``."""

    base: int
    appended: tuple[tuple[int, str], ...]  # (HF id, text) of the added tokens at or past base, by id

    @property
    def tokens(self) -> int:
        return self.base + len(self.appended)


def _declared_added(folder: Path) -> frozenset[int]:
    """Ids of the added tokens the SentencePiece path reads (added_tokens.json, added_tokens_decoder)."""
    ids: set[int] = set()
    for name, key in (("added_tokens.json", None), ("tokenizer_config.json", "added_tokens_decoder")):
        path = folder / name
        if not path.is_file():
            continue
        raw = read_json_object(path)
        table = raw if key is None else raw.get(key) or {}
        if not isinstance(table, dict):
            continue
        values = table.values() if key is None else table.keys()
        for value in values:
            try:
                ids.add(int(value))
            except (TypeError, ValueError, OverflowError):  # 1e999 parses as infinity: no id (the converter skips it)
                continue
    return frozenset(ids)


def vllm_parsers(tool_call_parser: str | None, reasoning_parser: str | None) -> tuple[VllmParser, ...]:
    """The parsers named by ``--tool-call-parser`` / ``--reasoning-parser``; an unknown name is one line, exit 2."""
    found = []
    for kind, name in ((ParserKind.TOOL, tool_call_parser), (ParserKind.REASONING, reasoning_parser)):
        if name is None:
            continue
        parser = vllm_parser(kind, name)
        if parser is None:
            raise AuditError(None, f"--{kind.value} must be one of {', '.join(vllm_parser_names(kind))} (the vLLM "
                             f"{VLLM.version} parsers checked here), not {name!r}")
        found.append(parser)
    return tuple(found)


def predict(facts: Facts, kind: str, tp: int | None = None, tool_call_parser: str | None = None,
            reasoning_parser: str | None = None) -> TargetFacts:
    try:
        target = TARGET_ALIASES.get(kind) or TargetKind(kind)
    except ValueError:
        raise AuditError(None, f"--target must be one of {', '.join(TARGETS)} (or transformers4), "
                         f"not {kind!r}") from None
    if target is TargetKind.TRANSFORMERS4:
        from .transformers4 import read_transformers4

        return TargetFacts(facts, target, transformers4=read_transformers4(facts))
    if target is TargetKind.VLLM:
        return TargetFacts(facts, target, tp=tp, parsers=vllm_parsers(tool_call_parser, reasoning_parser))
    if target is not TargetKind.GGUF:  # another serving engine: its entry in facts.consumers is the prediction
        return TargetFacts(facts, target, tp=tp)
    from .gguf_converter_paths import choose_path, text_architectures

    tok = facts.tokenizer
    folder = tok.folder if tok is not None else facts.model_dir
    config = facts.config
    choice = choose_path(folder, config.architectures, text_architectures(config.raw),
                         tok.backend if tok is not None else None)
    vocab_size = config.vocab_size
    chosen = TargetFacts(facts, target, choice.path, vocab_size, path_why=choice.why,
                         converter_class=choice.converter_class.name if choice.converter_class else None)
    if tok is None or choice.path == "none":
        return chosen
    if choice.path == "sentencepiece":
        declared = _declared_added(folder)
        if choice.converter_class is not None and choice.converter_class.spm_reads_tokenizer_json:
            declared |= {a.id for a in tok.added_tokens}  # its reader writes tokenizer.json's added tokens too
        return replace(chosen, declared_added=declared)
    if choice.path == "llama_hf":
        base = base_vocab_size(facts)
        appended = tuple(sorted((a.id, a.content) for a in tok.added_tokens if a.id >= base))
        return replace(chosen, llama_hf=LlamaHfVocabFacts(base, appended))
    try:
        ids = _converter_split(folder, tok.backend)
        digest = hashlib.sha256(str(list(ids)).encode()).hexdigest()
        return replace(chosen, vocab_size=vocab_size if vocab_size is not None else tok.length, pre_hash=digest,
                       pre_name=PRE_TOKENIZER_HASHES.get(digest))
    except Exception as exc:  # noqa: BLE001 - the tokenizer library on an untrusted tokenizer
        return replace(chosen, hash_error=f"{exc.__class__.__name__}: {exc}"[:200])


def _converter_split(folder: Path, backend: Any) -> list[int]:
    """The ids of ``CHKTXT`` as the converter gets them: ``AutoTokenizer.from_pretrained(folder).encode``.

    Not tokenizer.json's own split: transformers 5 loads a tokenizer through the class the folder's
    ``config.json`` names (a Qwen2 config gives ``Qwen2Tokenizer``, which puts Qwen2's pre-tokenizer in place
    of tokenizer.json's), and the converter hashes that (measured: a GPT-2 tokenizer under a Qwen2 config is
    refused, ``bpe_gpt2_tokenizer_under_qwen2_config`` in tests/data/gguf_verdicts.json). Without
    transformers, tokenizer.json's split is the best guess."""
    try:
        import transformers  # noqa: F401
    except ImportError:
        return list(backend.encode(CHKTXT).ids)
    if not folder.is_dir() or not has_tokenizer(folder):  # a tokenizer object audited in memory
        return list(backend.encode(CHKTXT).ids)
    check_tree(folder, "tokenizer folder")  # transformers opens files by names we do not control
    check_slow_folder(folder)  # vocab.json / merges.txt it may read: sizes and counts bounded first
    with library_call(folder, "the tokenizer cannot be loaded by transformers"):
        from transformers import AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        tok = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False, local_files_only=True)
        return [int(i) for i in tok.encode(CHKTXT)]


def base_vocab_size(facts: Facts) -> int:
    """Ids of the tokenizer's model before added tokens (the SentencePiece pieces)."""
    tok = facts.tokenizer
    if tok is None:
        return 0
    try:
        return int(tok.backend.get_vocab_size(with_added_tokens=False))
    except Exception:  # noqa: BLE001 - a shim without the option
        return tok.length


def undecodable_ids(facts: Facts) -> list[int]:
    """Ids the model can sample (lm_head rows) that the tokenizer has no token for: the padding rows past
    its largest id, and the holes below it."""
    tok, emb = facts.tokenizer, facts.embeddings
    rows = emb.output_rows if emb is not None else None
    if tok is None or rows is None:
        return []
    have = set(tok.ids)
    return [i for i in range(rows) if i not in have]


# Token texts llama.cpp's vocabulary loader treats as control / end-of-generation whatever their type in the
# GGUF (``llama_vocab::impl::load`` in ``src/llama-vocab.cpp`` of llama-cpp-python 0.3.36: the EOT, EOM and
# EOG lists); one not typed CONTROL is retyped at every load with "control-looking token: ... was not
# control-type; this is probably a bug in the model. its type will be overridden".
CONTROL_LOOKING = (
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>",
    "[EOT]", "<\uff5cend\u2581of\u2581sentence\uff5c>", "<end_of_utterance>", "<|eom_id|>", "<|return|>",
    "<|call|>", "<|flush|>", "<|calls|>", "</s>", "[EOS]", "<eos>", "<turn|>", "<|tool_response>", "[e~[",
)
# What the converter types CONTROL although the tokenizer does not mark it special
# (``does_token_look_special`` in ``conversion/base.py``), for the added tokens it reads.
LOOKS_SPECIAL = ("<pad>", "<mask>", "<2mass>", "[@BOS@]")


def converter_looks_special(text: str) -> bool:
    return (text in LOOKS_SPECIAL or (text.startswith("<|") and text.endswith("|>"))
            or (text.startswith("<\uff5c") and text.endswith("\uff5c>"))
            or (text.startswith("<unused") and text.endswith(">")))


@dataclass(frozen=True)
class ControlLooking:
    """A token whose text llama.cpp treats as control but which the converter will not type CONTROL."""

    id: int
    token: str
    added: bool  # an added token (typed USER_DEFINED by the converter) or one of the model's own (NORMAL)


def control_looking_not_control(t: TargetFacts) -> list[ControlLooking]:
    """The tokens of :data:`CONTROL_LOOKING` that the converter will write with another type than CONTROL: an
    added token marked ``special: false`` (unless ``does_token_look_special``), or a token of a BPE model's own
    vocabulary (NORMAL; a SentencePiece piece keeps the model's type, not known here)."""
    tok = t.facts.tokenizer
    if t.target is not TargetKind.GGUF or tok is None:
        return []
    added = {a.id: a for a in tok.added_tokens}
    out = []
    for text in CONTROL_LOOKING:
        found = tok.backend.token_to_id(text)
        if found is None:
            continue
        info = added.get(found)
        if info is not None and (info.special or (t.path != "llama_hf" and converter_looks_special(text))):
            continue  # LlamaHfVocab types by all_special_tokens alone (no does_token_look_special)
        if t.path == "sentencepiece" and (info is None or found not in t.declared_added):
            continue  # a piece of the model keeps its SentencePiece type; an undeclared added token is dropped (HVA921)
        out.append(ControlLooking(found, text, info is not None))
    return sorted(out, key=lambda c: c.id)

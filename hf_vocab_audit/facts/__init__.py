"""Facts: what a checkpoint says about itself, gathered cheaply (headers and JSON, no weights), from a
folder or from the live model and tokenizer objects of a running script (``facts_from_memory``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import AuditError
from ..findings import Skipped
from .adapter import AdapterFacts
from .config import ConfigFacts, GenerationFacts, load_config, load_generation_config
from .embeddings import EmbeddingFacts, find_embeddings
from .memory import is_path, model_facts, model_label, tokenizer_facts
from .tensors import CheckpointTensors, load_tensors
from .tokenizer import TokenizerFacts, has_tokenizer, load_tokenizer

__all__ = ["Facts", "facts_from_memory", "gather"]


@dataclass(frozen=True)
class Facts:
    model_dir: Path
    config: ConfigFacts
    generation: GenerationFacts | None
    tokenizer: TokenizerFacts | None
    tensors: CheckpointTensors | None
    embeddings: EmbeddingFacts | None
    missing: dict[str, str] = field(default_factory=dict)  # fact name -> why it is absent
    adapter: AdapterFacts | None = None  # set when auditing a PEFT adapter against these (base) facts

    @property
    def input_rows(self) -> int | None:
        return self.embeddings.input_rows if self.embeddings else None

    def summary(self) -> dict[str, object]:
        """The facts a person wants at the top of a report."""
        emb, tok, cfg = self.embeddings, self.tokenizer, self.config
        out: dict[str, object] = {
            "model_type": cfg.model_type,
            "architectures": list(cfg.architectures),
            "config_vocab_size": cfg.vocab_size,
            "tokenizer_length": tok.length if tok else None,
            "tokenizer_max_id": tok.max_id if tok else None,
            "tokenizer_source": tok.source if tok else None,
            "weights_format": self.tensors.format if self.tensors else None,
            "weight_files": list(self.tensors.files) if self.tensors else [],
            "input_embedding": _tensor(emb.input if emb else None),
            "output_embedding": _tensor(emb.output if emb else None),
            "tied_embeddings": emb.tied if emb else None,
            "max_position_embeddings": cfg.max_position_embeddings,
            "model_max_length": tok.model_max_length if tok else None,
            "special_token_ids": {role: i for role, (_c, i) in sorted(tok.special_tokens.items())} if tok else {},
        }
        if self.adapter is not None:
            out["adapter"] = self.adapter.summary(self.model_dir)
        return out


def _tensor(info: object) -> dict[str, object] | None:
    if info is None:
        return None
    return {"name": info.name, "shape": list(info.shape), "dtype": info.dtype, "file": info.file}  # type: ignore[attr-defined]


def _folder(path: Path, what: str) -> Path:
    if not path.exists():
        raise AuditError(path, f"{what} does not exist")
    if not path.is_dir():
        raise AuditError(path, f"{what} must be a folder, not a file")
    return path


def gather(
    model_dir: str | Path,
    tokenizer_dir: str | Path | None = None,
    *,
    tensors_from: Callable[[Path], CheckpointTensors | None] = load_tensors,
    tokenizer_facts: TokenizerFacts | None = None,
) -> Facts:
    """Read every fact the static rules need from ``model_dir`` (and a separate tokenizer folder).

    ``tensors_from`` supplies the tensor headers (the Hub source reads them remotely); ``tokenizer_facts``
    reuses facts already read from byte-identical tokenizer files (``--fix`` re-reading its output).
    """
    folder = _folder(Path(model_dir), "model folder")
    config_path = folder / "config.json"
    if not config_path.exists():
        raise AuditError(config_path, "missing: a transformers checkpoint folder needs config.json")
    config = load_config(config_path)
    missing: dict[str, str] = {}
    gen_path = folder / "generation_config.json"
    generation = load_generation_config(gen_path) if gen_path.exists() else None
    if generation is None:
        missing["generation_config"] = "no generation_config.json"

    tok_folder = _folder(Path(tokenizer_dir), "tokenizer folder") if tokenizer_dir else folder
    tokenizer = tokenizer_facts
    if tokenizer is not None:
        pass
    elif has_tokenizer(tok_folder):
        tokenizer = load_tokenizer(tok_folder, config.model_type)
    elif tokenizer_dir:
        raise AuditError(tok_folder, "has no tokenizer files (tokenizer.json, vocab.txt, tokenizer.model, ...)")
    else:
        missing["tokenizer"] = f"no tokenizer files in {folder} (pass --tokenizer DIR)"

    tensors = tensors_from(folder)
    embeddings = None
    if tensors is None:
        missing["tensors"] = "no model.safetensors, sharded index or pytorch_model.bin"
    elif not tensors.tensors:
        missing["tensors"] = "the weight files could not be read safely"
    else:
        embeddings = find_embeddings(tensors, config)
        if embeddings.input is None:
            missing["input_embedding"] = "no tensor recognised as the input embeddings"
    return Facts(folder, config, generation, tokenizer, tensors, embeddings, missing)


def facts_from_memory(model: object, tokenizer: str | Path | object | None = None) -> Facts:
    """The facts of a live ``PreTrainedModel`` and tokenizer (an object, or a tokenizer folder), unsaved.

    ``model_dir`` is the label ``<in-memory LlamaForCausalLM>``; tensors have format ``"memory"``.
    """
    config, generation, tensors, embeddings = model_facts(model)
    missing: dict[str, str] = {}
    if generation is None:
        missing["generation_config"] = "the model has no generation_config (it cannot generate)"
    tok: TokenizerFacts | None = None
    if tokenizer is None:
        missing["tokenizer"] = "no tokenizer was passed (audit(model=..., tokenizer=...))"
    elif is_path(tokenizer):
        folder = _folder(Path(tokenizer), "tokenizer folder")
        tok = load_tokenizer(folder, config.model_type)
    else:
        tok = tokenizer_facts(tokenizer)
    if not tensors.tensors:
        missing["tensors"] = "the model has no parameters"
    elif embeddings.input is None:
        missing["input_embedding"] = "no module recognised as the input embeddings"
    return Facts(Path(model_label(model)), config, generation, tok, tensors, embeddings, missing)


def skipped_for(facts: Facts, requires: tuple[str, ...]) -> Skipped | None:
    """Why a rule needing ``requires`` cannot run on these facts, or None."""
    for need in requires:
        reason = _why_missing(facts, need)
        if reason:
            return Skipped(need, reason)
    return None


def _why_missing(facts: Facts, need: str) -> str | None:
    emb = facts.embeddings
    if need == "tokenizer":
        return None if facts.tokenizer else facts.missing.get("tokenizer", "no tokenizer")
    if need == "tensors":
        return None if facts.tensors else facts.missing.get("tensors", "no weights")
    if need == "input_embedding":
        if facts.tensors is None or not facts.tensors.tensors:
            return facts.missing.get("tensors", "no weights")
        return None if emb and emb.input else facts.missing.get("input_embedding", "no input embeddings")
    if need == "untied_output":
        if not emb or emb.input is None:
            return facts.missing.get("input_embedding", facts.missing.get("tensors", "no weights"))
        if emb.tied:
            return "output embeddings are tied to the input embeddings (HVA101 covers them)"
        return None if emb.output else "no separate output-embedding (lm_head) tensor"
    if need == "chat_template":
        if not facts.tokenizer:
            return facts.missing.get("tokenizer", "no tokenizer")
        return None if facts.tokenizer.chat_template else "the tokenizer has no chat template"
    if need == "config_vocab_size":
        return None if facts.config.vocab_size is not None else "config.json has no vocab_size"
    raise ValueError(f"unknown fact requirement {need!r}")

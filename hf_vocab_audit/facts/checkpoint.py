"""The facts of one checkpoint, whichever source gathered them (folder, Hub commit, objects in memory)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..io.safetensors_header import TensorInfo
from .config import ConfigFacts, GenerationFacts
from .embeddings import EmbeddingFacts
from .sentence_transformers import SentenceTransformerFacts
from .sources.adapter import AdapterFacts
from .tensors import CheckpointTensors
from .tokenizer import TokenizerFacts

if TYPE_CHECKING:
    from .gguf_facts import GGUFFacts


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
    gguf: GGUFFacts | None = None  # set when the facts come from a GGUF file (facts.sources.gguf)
    sentence_transformers: SentenceTransformerFacts | None = None  # a modules.json folder: its Transformer module
    # The other checkpoints the target folder loads as, audited with the same rules: the top-level checkpoint
    # (what ``AutoModel.from_pretrained(folder)`` loads) beside a sentence-transformers module in a sub-folder.
    entry_points: tuple[Facts, ...] = ()

    @property
    def input_rows(self) -> int | None:
        return self.embeddings.input_rows if self.embeddings else None

    # Narrowed facts for rules: the runner skips a rule whose requirement is missing
    # (facts.requirements), so inside a rule these never raise.

    def required_tensors(self) -> CheckpointTensors:
        """The weight files' tensors, for code that runs only on a checkpoint that has them (--fix)."""
        if self.tensors is None:
            raise MissingFact("tensors")
        return self.tensors

    def required_vocab_size(self) -> int:
        """``config.vocab_size`` (text config first), for a rule that requires ``CONFIG_VOCAB_SIZE``."""
        if self.config.vocab_size is None:
            raise MissingFact("config_vocab_size")
        return self.config.vocab_size

    def required_tokenizer(self) -> TokenizerFacts:
        """The tokenizer, for a rule that requires ``Requirement.TOKENIZER`` or ``CHAT_TEMPLATE``."""
        if self.tokenizer is None:
            raise MissingFact("tokenizer")
        return self.tokenizer

    def required_input(self) -> RowsTensor:
        """The input embedding matrix (with its row count), for ``Requirement.INPUT_EMBEDDING``."""
        return _rows_tensor(self.embeddings.input if self.embeddings else None, "input_embedding")

    def required_output(self) -> RowsTensor:
        """The untied output embedding matrix, for ``Requirement.UNTIED_OUTPUT``."""
        return _rows_tensor(self.embeddings.output if self.embeddings else None, "untied_output")

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
        if self.gguf is not None:
            out["gguf"] = self.gguf.summary()
        return out


class MissingFact(RuntimeError):
    """A rule ran without a fact its requirements promise: a bug in the rule's ``requires``."""


@dataclass(frozen=True)
class RowsTensor:
    """A vocabulary matrix known to have rows: name, file and row count, typed for the rules."""

    name: str
    file: str
    rows: int


def _rows_tensor(info: TensorInfo | None, what: str) -> RowsTensor:
    if info is None or info.rows is None:
        raise MissingFact(what)
    return RowsTensor(info.name, info.file, info.rows)


def _tensor(info: TensorInfo | None) -> dict[str, object] | None:
    if info is None:
        return None
    return {"name": info.name, "shape": list(info.shape), "dtype": info.dtype, "file": info.file}

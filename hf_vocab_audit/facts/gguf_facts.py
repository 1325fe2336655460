"""What a GGUF file says about its vocabulary, in llama.cpp's terms (read by :mod:`.gguf`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..io.safetensors_header import TensorInfo


@dataclass(frozen=True)
class GGUFFacts:
    """What a GGUF says about its vocabulary, in llama.cpp's terms."""

    file: str  # the (first) file's name, the location of every metadata finding
    files: tuple[str, ...]
    version: int
    arch: str | None
    tokenizer_model: str | None
    pre: str | None
    tokens: tuple[str, ...] = field(repr=False)
    token_types: tuple[int, ...] | None = field(repr=False)
    n_scores: int | None
    n_merges: int | None
    special_ids: dict[str, int]  # role -> id as declared (SPECIAL_ID_KEYS)
    chat_template: str | None
    vocab_size: int | None  # {arch}.vocab_size, when written
    context_length: int | None
    token_embd: TensorInfo | None
    output: TensorInfo | None
    n_tensors: int = 0  # tensor infos of every part: none in a vocabulary-only file

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    @property
    def vocab_only(self) -> bool:
        """A tokenizer and no tensors, as llama.cpp's ``vocab_only`` files (``models/ggml-vocab-*.gguf``): no
        weights by design, so the rules about rows do not apply rather than miss something."""
        return self.n_tensors == 0 and bool(self.tokens)

    def token_type(self, token_id: int) -> int | None:
        types = self.token_types
        return types[token_id] if types is not None and 0 <= token_id < len(types) else None

    def summary(self) -> dict[str, object]:
        return {
            "file": self.file, "files": list(self.files), "version": self.version, "arch": self.arch,
            "tokenizer_model": self.tokenizer_model, "pre": self.pre, "tokens": self.n_tokens,
            "token_types": len(self.token_types) if self.token_types is not None else None,
            "merges": self.n_merges, "scores": self.n_scores, "vocab_size": self.vocab_size,
            "context_length": self.context_length,
            "special_ids": dict(sorted(self.special_ids.items())),
            "token_embd": list(self.token_embd.shape) if self.token_embd else None,
            "output": list(self.output.shape) if self.output else None, "vocab_only": self.vocab_only,
            "chat_template": self.chat_template is not None,
        }  # fmt: skip

"""GGUF vocabularies whose arrays disagree with their token list, and vocabulary-only GGUFs (no tensors): a
shorter scores / token-type array stops llama.cpp's vocabulary load, so the gate must FAIL such a file, not
pass it; a vocabulary-only file is audited against its own token list.

Registered in the catalogue of ``tests/malformed.py`` (run by ``tests/test_untrusted_cli.py``)."""

from __future__ import annotations

import struct
from pathlib import Path

from malformed import GGUF_TOKENS, _gkv, _gs, _gtokens, case, gguf_bytes

N = len(GGUF_TOKENS)


def _header() -> list[bytes]:
    return [_gkv("general.architecture", 8, _gs(b"llama")), _gkv("tokenizer.ggml.model", 8, _gs(b"llama")),
            _gtokens()]


def _scores(n: int) -> bytes:
    return _gkv("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, n) + struct.pack(f"<{n}f", *([0.0] * n)))


def _types(n: int) -> bytes:
    return _gkv("tokenizer.ggml.token_type", 9, struct.pack("<IQ", 5, n) + struct.pack(f"<{n}i", *([1] * n)))


def _write(folder: Path, kvs: list[bytes], tensors: bool = True) -> list[str]:
    path = folder / "model.gguf"
    path.write_bytes(gguf_bytes(kvs) if tensors else gguf_bytes(kvs, [], data=b""))
    return [str(path)]


@case("gguf vocab", exit_codes=(1,))
def gguf_scores_shorter_than_tokens(folder: Path) -> list[str]:
    """llama.cpp: "Index out of array bounds for scores (7 < 8)": the vocabulary does not load."""
    return _write(folder, _header() + [_scores(N - 1)])


@case("gguf vocab", exit_codes=(1,))
def gguf_token_types_shorter_than_tokens(folder: Path) -> list[str]:
    return _write(folder, _header() + [_types(N - 2)])


@case("gguf vocab", exit_codes=(1,))
def gguf_vocab_only_eos_past_tokens(folder: Path) -> list[str]:
    """No tensors: the eos id is checked against the 8 tokens, not skipped as a weights gap."""
    return _write(folder, _header() + [_gkv("tokenizer.ggml.eos_token_id", 4, struct.pack("<I", 99))], tensors=False)


@case("gguf vocab", exit_codes=(0,))
def gguf_vocab_only_healthy(folder: Path) -> list[str]:
    return _write(folder, _header() + [_scores(N), _types(N)], tensors=False)

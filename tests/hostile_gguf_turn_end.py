"""GGUF chat templates whose assistant turns end with a token llama.cpp does not stop at (HVA985): the gate must
FAIL such a file (llama-server generates to n_predict); a template that writes a flood after the answer is cut to
a few hundred characters, not matched whole.

Registered in the catalogue of ``tests/malformed.py`` (run by ``tests/test_untrusted_cli.py``)."""

from __future__ import annotations

import struct
from pathlib import Path

from malformed import GGUF_TOKENS, _gkv, _gs, _gtokens, case, gguf_bytes

TURN_END = (b"{% for m in messages %}<|turn|>{{ m['role'] }}: {{ m['content'] }}<|turn_end|>{% endfor %}"
            b"{% if add_generation_prompt %}<|turn|>assistant: {% endif %}")
TOKENS = [*GGUF_TOKENS, b"<|turn|>", b"<|turn_end|>"]


def _write(folder: Path, template: bytes, extra: list[bytes] = ()) -> list[str]:
    n = len(TOKENS)
    kvs = [_gkv("general.architecture", 8, _gs(b"llama")), _gkv("tokenizer.ggml.model", 8, _gs(b"llama")),
           _gtokens(TOKENS),
           _gkv("tokenizer.ggml.token_type", 9, struct.pack("<IQ", 5, n) + struct.pack(f"<{n}i", 2, 3, 3, *[1] * (n - 5), 3, 3)),
           _gkv("tokenizer.ggml.eos_token_id", 4, struct.pack("<I", 2)), _gkv("tokenizer.chat_template", 8, _gs(template)),
           *extra]
    path = folder / "model.gguf"
    path.write_bytes(gguf_bytes(kvs, [], data=b""))
    return [str(path)]


@case("gguf turn end", exit_codes=(1,))
def gguf_turn_end_not_end_of_generation(folder: Path) -> list[str]:
    """<|turn_end|> is neither eos nor eot nor on llama.cpp's list: generation never stops."""
    return _write(folder, TURN_END)


@case("gguf turn end", exit_codes=(0,))
def gguf_turn_end_named_as_eot(folder: Path) -> list[str]:
    """The same file with <|turn_end|> as tokenizer.ggml.eot_token_id: llama.cpp stops at it."""
    return _write(folder, TURN_END, [_gkv("tokenizer.ggml.eot_token_id", 4, struct.pack("<I", len(TOKENS) - 1))])


@case("gguf turn end", exit_codes=(0,))
def gguf_turn_end_flood_after_answer(folder: Path) -> list[str]:
    """A template that writes 4 MB after each answer: the render is budgeted, the match bounded."""
    return _write(folder, TURN_END.replace(b"<|turn_end|>", b"<|turn_end|>{{ 'x' * 4000000 }}"))

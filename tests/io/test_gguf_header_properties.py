"""Properties of the GGUF reader (hypothesis), against llama.cpp's own Python package where both answer.

- any bytes after the magic: a header or an AuditError naming the file on one line, nothing else;
- a valid GGUF with bytes overwritten anywhere in its header (counts, lengths, types, offsets): the same;
  and when gguf.GGUFReader also reads the mutated file, the tensor shapes agree.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

gguf = pytest.importorskip("gguf")

from gguf_builders import write_gguf  # noqa: E402

from hf_vocab_audit.errors import AuditError  # noqa: E402
from hf_vocab_audit.io.gguf_header import read_gguf  # noqa: E402

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_DIR = Path(tempfile.mkdtemp(prefix="gguf-props-"))
VALID = write_gguf(_DIR / "valid.gguf", chat_template="{{ x }}").read_bytes()
HEADER_END = read_gguf(_DIR / "valid.gguf", "valid.gguf").data_start


def _read(data: bytes):
    path = _DIR / "model.gguf"
    path.write_bytes(data)
    try:
        return path, read_gguf(path, "model.gguf", frozenset({"tokenizer.ggml.tokens"}))
    except AuditError as exc:
        text = str(exc)
        assert "model.gguf" in text and "\n" not in text, text
        return path, None


@SETTINGS
@given(st.binary(max_size=512))
def test_any_bytes_after_the_magic(data: bytes) -> None:
    _read(b"GGUF\x03\x00\x00\x00" + data)


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, HEADER_END - 1), st.binary(min_size=1, max_size=8)), min_size=1, max_size=4))
def test_mutated_header(edits: list[tuple[int, bytes]]) -> None:
    raw = bytearray(VALID)
    for at, patch in edits:
        raw[at : at + len(patch)] = patch
    path, ours = _read(bytes(raw[: len(VALID)]))
    if ours is None:
        return
    try:
        theirs = gguf.GGUFReader(path)
    except Exception:  # noqa: BLE001 - the reference reader refusing is fine; ours may be more lenient
        return
    assert {t.name: t.shape for t in ours.tensors} == {
        t.name: tuple(int(d) for d in reversed(t.shape)) for t in theirs.tensors
    }

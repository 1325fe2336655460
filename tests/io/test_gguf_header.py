"""io.gguf_header against llama.cpp's own Python package: the same metadata and tensor shapes as
``gguf.GGUFReader`` on files written by ``gguf.GGUFWriter``, and the same block sizes as its table."""

from __future__ import annotations

from pathlib import Path

import pytest

gguf = pytest.importorskip("gguf")

from gguf_builders import base_vocab, write_gguf  # noqa: E402

from hf_vocab_audit.errors import AuditError  # noqa: E402
from hf_vocab_audit.io.gguf_header import CHUNK, GGML_TYPES, GGUFArray, read_gguf  # noqa: E402


def test_ggml_type_table_matches_gguf_package() -> None:
    ours = {t: (block, size) for t, (_name, block, size) in GGML_TYPES.items()}
    theirs = {int(t): tuple(gguf.GGML_QUANT_SIZES[t]) for t in gguf.GGMLQuantizationType}
    assert {t: ours[t] for t in theirs if t in ours} == {t: theirs[t] for t in theirs if t in ours}
    assert set(theirs) <= set(ours), "a ggml type the gguf package knows is missing here"


def test_same_metadata_as_gguf_reader(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "m.gguf", rows=64, output_rows=64, chat_template="{{ x }}",
                      extra={"general.name": "tiny", "tiny.answer": 42})
    ours = read_gguf(path, "m.gguf", frozenset({"tokenizer.ggml.tokens", "tokenizer.ggml.token_type"}))
    reader = gguf.GGUFReader(path)
    assert list(ours.metadata) == [k for k in reader.fields if not k.startswith("GGUF.")]
    assert ours.metadata["general.name"] == "tiny" and ours.metadata["tiny.answer"] == 42
    tokens = ours.metadata["tokenizer.ggml.tokens"]
    assert isinstance(tokens, GGUFArray) and list(tokens.values or ()) == base_vocab().tokens
    theirs = {t.name: (tuple(int(d) for d in reversed(t.shape)), int(t.data_offset), int(t.n_bytes))
              for t in reader.tensors}
    assert {t.name: (t.shape, t.begin, t.end - t.begin) for t in ours.tensors} == theirs


def test_metadata_across_many_read_windows(tmp_path: Path) -> None:
    """Keys spread over several read windows (CHUNK bytes each) parse as written."""
    extra = {f"k.{i:06d}": "v" * 50 for i in range(3 * CHUNK // 64)}
    path = write_gguf(tmp_path / "m.gguf", extra=extra)
    header = read_gguf(path, "m.gguf")
    assert sum(k.startswith("k.") for k in header.metadata) == len(extra)
    assert header.metadata[f"k.{len(extra) - 1:06d}"] == "v" * 50


def test_string_arrays_not_kept_are_counted(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "m.gguf")
    tokens = read_gguf(path, "m.gguf").metadata["tokenizer.ggml.tokens"]
    assert isinstance(tokens, GGUFArray) and tokens.values is None and tokens.count == len(base_vocab().tokens)


def test_every_truncation_is_refused_in_one_line(tmp_path: Path) -> None:
    """Cut anywhere in the header, the file is refused with an AuditError naming it (never another error)."""
    whole = write_gguf(tmp_path / "m.gguf").read_bytes()
    header_end = read_gguf(tmp_path / "m.gguf", "m.gguf").data_start
    cut = tmp_path / "cut.gguf"
    for n in range(0, header_end + 8, 7):
        cut.write_bytes(whole[:n])
        with pytest.raises(AuditError) as err:
            read_gguf(cut, "cut.gguf")
        assert "cut.gguf" in str(err.value) and "\n" not in str(err.value)

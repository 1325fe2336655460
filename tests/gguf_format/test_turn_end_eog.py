"""HVA984 (``check HF_DIR --target gguf``) and HVA985 (``check model.gguf``): the token a chat template closes an
assistant turn with must be one llama.cpp stops at (``llama_vocab_is_eog``), against llama.cpp's own answers
(``eog`` in tests/data/gguf_verdicts.json: its end-of-generation ids and its tokens of the text after the answer,
recorded by scripts/gguf_verdicts.py with llama-cpp-python 0.3.36 for the GGUFs of ``gguf_builders.EOG_SETUPS``
and ``REAL_EOG_TEMPLATES``, and for the folders of ``EOG_FOLDERS`` converted by its ``convert_hf_to_gguf.py``).

Measured there: a ``<|im_end|>`` typed NORMAL or USER_DEFINED still stops generation (llama.cpp retypes it
CONTROL); a template's own ``<|turn_end|>`` stops it only as eos or eot; gpt-oss's ``<|end|>`` is no stop when
``<|return|>`` and ``<|call|>`` are in the vocabulary; the converter never reads generation_config.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("gguf")

from gguf_builders import (  # noqa: E402
    EOG_FOLDERS,
    EOG_SETUPS,
    REAL_EOG_TEMPLATES,
    Vocab,
    eog_folder,
    eog_vocab,
    template_vocab,
    write_gguf,
)

from hf_vocab_audit.audit import audit, audit_gguf  # noqa: E402
from hf_vocab_audit.facts.llama_cpp_eog import eog_ids, llama_cpp_eog  # noqa: E402
from hf_vocab_audit.facts.sources.gguf import read_gguf_facts  # noqa: E402

VERDICTS = json.loads((Path(__file__).resolve().parent.parent / "data" / "gguf_verdicts.json").read_text("utf-8"))
GGUFS = VERDICTS["eog"]["gguf"]
FOLDERS = VERDICTS["eog"]["folders"]
NAMES = sorted(GGUFS)


def _vocab_and_template(name: str) -> tuple[Vocab, str]:
    if name in EOG_SETUPS:
        return eog_vocab(EOG_SETUPS[name]), EOG_SETUPS[name].template
    template = GGUFS[name]["template"]  # the real template's text, copied by scripts/gguf_verdicts.py
    return template_vocab(template, REAL_EOG_TEMPLATES[name]), template


def _gguf(tmp_path: Path, name: str) -> Path:
    vocab, template = _vocab_and_template(name)
    return write_gguf(tmp_path / f"{name}.gguf", vocab=vocab, chat_template=template, tensors=False)


def _stops(record: dict, types: list[int] | None = None) -> bool:
    """llama.cpp stops at the turn's close: the first of its tokens of the text after the answer, or one of the
    special tokens (``types`` CONTROL / USER_DEFINED) right after it, is end-of-generation."""
    ids = record["after_ids"]
    leading = [ids[0]]
    for i in ids[1:]:
        if types is None or types[i] not in (3, 4):
            break
        leading.append(i)
    return any(i in set(record["eog"]) for i in leading)


def test_every_setup_has_a_verdict() -> None:
    assert set(GGUFS) == set(EOG_SETUPS) | set(REAL_EOG_TEMPLATES)
    assert set(FOLDERS) == set(EOG_FOLDERS)
    assert all(r["loaded"] for r in GGUFS.values()) and all(r["converted"] and r["loaded"] for r in FOLDERS.values())


@pytest.mark.parametrize("name", sorted(EOG_SETUPS))
def test_expectations_are_llama_cpps(name: str) -> None:
    """What the tests require of each hand-made GGUF is what llama.cpp did with it."""
    vocab = eog_vocab(EOG_SETUPS[name])
    assert _stops(GGUFS[name], vocab.types) == EOG_SETUPS[name].stops


@pytest.mark.parametrize("name", NAMES)
def test_eog_table_equals_llama_cpp(tmp_path: Path, name: str) -> None:
    """facts.llama_cpp_eog builds the set llama.cpp built, id for id."""
    gf = read_gguf_facts(_gguf(tmp_path, name))[0]
    assert sorted(eog_ids(gf.tokens, gf.special_ids, gf.tokenizer_model)) == GGUFS[name]["eog"]


@pytest.mark.parametrize("name", NAMES)
def test_gguf_file(tmp_path: Path, name: str) -> None:
    """HVA985 fires exactly where llama.cpp does not stop; it names the token llama.cpp's tokenizer reads first;
    every real template (with its model's eos) stays quiet."""
    vocab, _ = _vocab_and_template(name)
    record = GGUFS[name]
    hits = [f for f in audit_gguf(_gguf(tmp_path, name)).findings if f.code == "HVA985"]
    assert bool(hits) == (not _stops(record, vocab.types)), hits
    if name in REAL_EOG_TEMPLATES:
        assert not hits
    if hits:
        (hit,) = hits
        assert hit.details["turn_end_id"] == record["after_ids"][0]
        assert hit.details["eog_ids"] == record["eog"]
        assert hit.location.key == "tokenizer.ggml.eot_token_id" and "n_predict" in hit.message


def test_gguf_without_template_is_quiet(tmp_path: Path) -> None:
    vocab = eog_vocab(EOG_SETUPS["custom_turn_end"])
    path = write_gguf(tmp_path / "m.gguf", vocab=vocab, tensors=False)
    assert not [f for f in audit_gguf(path).findings if f.code == "HVA985"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    pytest.importorskip("transformers")
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("eog")
    return {name: eog_folder(root / name, setup) for name, setup in EOG_FOLDERS.items()}


@pytest.mark.parametrize("name", sorted(EOG_FOLDERS))
def test_target_gguf(folders: dict[str, Path], name: str) -> None:
    """HVA984 predicts from the HF folder what llama.cpp did with the GGUF its converter wrote: the same
    end-of-generation ids, and a finding exactly where it did not stop."""
    record = FOLDERS[name]
    assert _stops(record) == EOG_FOLDERS[name].stops
    hits = [f for f in audit(folders[name], target_kind="gguf").findings if f.code == "HVA984"]
    assert bool(hits) == (not EOG_FOLDERS[name].stops), hits
    if hits:
        (hit,) = hits
        assert hit.details["eog_ids"] == record["eog"]
        assert hit.details["turn_end_id"] == record["after_ids"][0]
        assert hit.location.file == "tokenizer_config.json" and "convert_hf_to_gguf.py" in hit.message


def test_plain_check_does_not_predict(folders: dict[str, Path]) -> None:
    """No work for a plain check: HVA984 is a --target gguf prediction."""
    assert not [f for f in audit(folders["turn_end_eos_endoftext"]).findings if f.code == "HVA984"]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_llama_cpp_itself(tmp_path: Path, name: str) -> None:
    """Where llama-cpp-python is installed: llama.cpp still builds the set the table builds."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (the recorded verdicts are used)")
    path = _gguf(tmp_path, name)
    gf = read_gguf_facts(path)[0]
    live = llama_cpp_eog(path)
    assert live is not None
    assert sorted(live) == sorted(eog_ids(gf.tokens, gf.special_ids, gf.tokenizer_model)) == GGUFS[name]["eog"]

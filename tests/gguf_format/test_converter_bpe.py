"""`check HF_DIR --target gguf` on the converter's BPE path against what llama.cpp's converter did with the same
tiny checkpoints (``converter`` in tests/data/gguf_verdicts.json, keys ``bpe_*``, recorded by
scripts/gguf_verdicts.py with llama-cpp-python 0.3.36's convert_hf_to_gguf.py and loaded by its llama.cpp).

The converter names a BPE tokenizer's pre-tokenizer by the sha256 of the ids it gets for a fixed text, so a
tokenizer trained here stops it there (HVA923). ``gguf_builders.gpt2_tokenizer`` splits that text exactly as
GPT-2 does, so the converter goes on to its vocabulary: these cases are decided by execution, not read from
its source.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from gguf_builders import GPT2_ADDED, GPT2_CHKHSH, GPT2_ROWS, GPT2_SETUPS, bpe_checkpoint, gpt2_checkpoint, gpt2_tokenizer

from hf_vocab_audit.audit import audit
from hf_vocab_audit.facts import gather
from hf_vocab_audit.facts.llama_cpp_tables import CHKTXT, PRE_TOKENIZER_HASHES
from hf_vocab_audit.facts.targets import predict

VERDICTS = json.loads((Path(__file__).resolve().parent.parent / "data" / "gguf_verdicts.json").read_text("utf-8"))
CONVERTER = VERDICTS["converter"]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bpe")
    return {name: gpt2_checkpoint(root / name, **kw) for name, kw in GPT2_SETUPS.items()}


def codes(report) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in report.findings:
        out.setdefault(f.code, []).append(f)
    return out


def said(name: str, text: str) -> bool:
    return any(text in line for line in CONVERTER[name]["log"])


def test_every_bpe_case_has_a_verdict() -> None:
    assert set(GPT2_SETUPS) <= set(CONVERTER)
    assert CONVERTER["bpe_gpt2_healthy"]["chkhsh"] == GPT2_CHKHSH


def test_the_tokenizer_splits_the_test_text_as_gpt2() -> None:
    """The converter's table maps this hash to "gpt-2"; the tokenizer has GPT-2's 50257 ids, no holes."""
    tok = gpt2_tokenizer()
    assert hashlib.sha256(str(tok.encode(CHKTXT)).encode()).hexdigest() == GPT2_CHKHSH
    assert PRE_TOKENIZER_HASHES[GPT2_CHKHSH] == "gpt-2" and len(tok) == GPT2_ROWS


@pytest.mark.parametrize("name", sorted(GPT2_SETUPS))
def test_predicted_hash_is_the_converters(checkpoints, name: str) -> None:
    """Where the converter reached its hash (it asserts on the vocabulary first), the audit computed the same."""
    recorded = CONVERTER[name]["chkhsh"]
    if recorded is None:
        assert said(name, "AssertionError")
        return
    assert predict(gather(checkpoints[name]), "gguf").pre_hash == recorded


def test_trained_tokenizer_hash_is_the_converters(tmp_path: Path) -> None:
    recorded = CONVERTER["bpe_trained_here"]["chkhsh"]
    assert recorded and predict(gather(bpe_checkpoint(tmp_path / "bpe")), "gguf").pre_hash == recorded


@pytest.mark.parametrize("name", sorted(GPT2_SETUPS))
def test_target_gguf_predicts_the_bpe_converter(checkpoints, name: str) -> None:
    """HVA920 <=> the converter's AssertionError; HVA923 <=> its "not recognized"; HVA922's count is its
    [PAD{i}] count; HVA921 never fires on this path: every added token below vocab_size was kept at its id."""
    verdict = CONVERTER[name]
    found = codes(audit(checkpoints[name], target_kind="gguf"))
    asserted, unrecognised = said(name, "AssertionError"), said(name, "BPE pre-tokenizer was not recognized")
    assert verdict["converted"] == (not asserted and not unrecognised)
    assert ("HVA920" in found) == asserted, found
    assert ("HVA923" in found) == unrecognised, found
    assert "HVA921" not in found
    if asserted:
        assert "AssertionError" in " ".join(verdict["log"]) and "max(tokenizer.vocab.values())" in found["HVA920"][0].message
    if not verdict["converted"]:
        return
    rows = GPT2_SETUPS[name].get("resize") or GPT2_ROWS
    assert verdict["tokens"] == rows == verdict["shapes"]["token_embd.weight"][0]
    added = GPT2_SETUPS[name].get("added") or []
    assert verdict["added_ids"] == {t: GPT2_ROWS + i for i, t in enumerate(added)}
    assert ("HVA922" in found) == bool(verdict["pad_fillers"])
    if verdict["pad_fillers"]:
        assert found["HVA922"][0].details["count"] == verdict["pad_fillers"]
    assert verdict["llama_cpp"]["vocab_only"]["n_vocab"] == rows


def test_converted_healthy_gpt2_loads_and_runs_in_llama_cpp() -> None:
    full = CONVERTER["bpe_gpt2_healthy"]["llama_cpp"]["full"]
    assert full["loads"] and full["forward"] and full["n_vocab"] == GPT2_ROWS


def test_vocab_size_edit_names_the_ids(checkpoints) -> None:
    (hit,) = codes(audit(checkpoints["bpe_gpt2_vocab_size_edited_to_50200"], target_kind="gguf"))["HVA920"]
    assert hit.details["count"] == GPT2_ROWS - 50200 and hit.location.token_id == 50200
    (hit,) = codes(audit(checkpoints["bpe_gpt2_added_3_tokens_without_resize"], target_kind="gguf"))["HVA920"]
    assert hit.details["count"] == len(GPT2_ADDED) and hit.location.token_id == GPT2_ROWS


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bpe_gpt2_healthy", "bpe_gpt2_added_3_tokens_without_resize"])
def test_converter_itself(tmp_path: Path, name: str) -> None:
    """Where an unpacked llama-cpp-python sdist is named by HVA_LLAMA_CPP_SDIST: the converter still does
    what the recorded verdict says with a checkpoint built here."""
    sdist = os.environ.get("HVA_LLAMA_CPP_SDIST")
    if not sdist:
        pytest.skip("HVA_LLAMA_CPP_SDIST names no unpacked llama-cpp-python sdist")
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    import gguf_verdicts

    got = gguf_verdicts.convert(Path(sdist), gpt2_checkpoint(tmp_path / name, **GPT2_SETUPS[name]),
                                tmp_path / "out.gguf", verbose=True)
    assert (got["converted"], got["chkhsh"]) == (CONVERTER[name]["converted"], CONVERTER[name]["chkhsh"])

"""The GGUF rules against llama.cpp's own verdicts.

``scripts/gguf_verdicts.py`` loaded every case of ``gguf_builders.CASES`` with llama.cpp (llama-cpp-python
0.3.36, a CPU build) and recorded what happened in ``tests/data/gguf_verdicts.json``. The fast tests replay
those verdicts against the GGUFs the tests build with ``gguf.GGUFWriter``: where llama.cpp refused a file,
the audit reports an error naming the same cause; where it loaded and ran it, the audit's llama.cpp rules
stay quiet. The slow test runs llama.cpp itself where ``llama_cpp`` is importable.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("gguf")

from gguf_builders import CASE, CASES, case_gguf  # noqa: E402

from hf_vocab_audit.audit import audit_gguf  # noqa: E402
from hf_vocab_audit.core.findings import Severity  # noqa: E402
from hf_vocab_audit.facts.llama_cpp_tables import KNOWN_PRE_TOKENIZERS  # noqa: E402

VERDICTS_FILE = Path(__file__).resolve().parent.parent / "data" / "gguf_verdicts.json"
VERDICTS = json.loads(VERDICTS_FILE.read_text(encoding="utf-8"))
VOCAB_REFUSALS = {"HVA903", "HVA905", "HVA207"}  # llama.cpp refuses (or aborts on) the vocabulary itself
LOAD_REFUSALS = VOCAB_REFUSALS | {"HVA901"}  # rules that say "llama.cpp cannot load this file"


def loads(verdict: dict, mode: str) -> bool:
    """Whether llama.cpp loaded the file in ``mode``; a child that aborted loaded nothing."""
    return bool(verdict.get(mode, {}).get("loads"))


def report_of(tmp_path: Path, name: str):
    return audit_gguf(case_gguf(tmp_path / f"{name}.gguf", CASE[name]))


def test_every_case_has_a_verdict() -> None:
    assert set(VERDICTS["cases"]) == {c.name for c in CASES}
    assert "0.3.36" in VERDICTS["llama_cpp"]


def test_pre_tokenizer_table_is_llama_cpps() -> None:
    assert sorted(KNOWN_PRE_TOKENIZERS) == VERDICTS["known_pre_tokenizers"]


@pytest.mark.parametrize("name", sorted(VERDICTS["cases"]))
def test_refusal_rules_agree_with_llama_cpp_loading(tmp_path: Path, name: str) -> None:
    """llama.cpp refused the full load <=> the audit reports a load-refusal error (HVA901/903/905);
    it refused even the vocabulary <=> the refusal is about the vocabulary (HVA903/905)."""
    verdict = VERDICTS["cases"][name]
    codes = {f.code for f in report_of(tmp_path, name).findings if f.severity is Severity.ERROR}
    assert (not loads(verdict, "full")) == bool(codes & LOAD_REFUSALS), (verdict, codes)
    assert (not loads(verdict, "vocab_only")) == bool(codes & VOCAB_REFUSALS), (verdict, codes)
    if loads(verdict, "full"):
        assert verdict["full"].get("forward"), "a file llama.cpp loads must also run a forward pass"


def test_token_count_mismatch_is_llama_cpps_check_tensor_dims(tmp_path: Path) -> None:
    for name in ("tokens_over_rows", "rows_over_tokens"):
        logged = " ".join(VERDICTS["cases"][name]["log"])
        assert "check_tensor_dims" in logged and "token_embd.weight" in logged, logged
        assert VERDICTS["cases"][name]["vocab_only"]["loads"], "the vocabulary alone still loads"


def test_unknown_pre_tokenizer_message_is_llama_cpps(tmp_path: Path) -> None:
    logged = " ".join(VERDICTS["cases"]["bpe_unknown_pre"]["log"])
    (hit,) = [f for f in report_of(tmp_path, "bpe_unknown_pre").findings if f.code == "HVA903"]
    assert "unknown pre-tokenizer type: 'no-such-pre'" in logged and "unknown pre-tokenizer type: 'no-such-pre'" in hit.message
    assert "missing pre-tokenizer type" in " ".join(VERDICTS["cases"]["bpe_missing_pre"]["log"])


def test_normal_typed_marker_is_split_by_llama_cpp(tmp_path: Path) -> None:
    """HVA902/HVA205: llama.cpp tokenizes a NORMAL-typed <|im_start|> into pieces, a CONTROL one into one id."""
    control = VERDICTS["cases"]["control_marker_typed_control"]["vocab_only"]["probe_ids"]
    normal = VERDICTS["cases"]["control_marker_typed_normal"]["vocab_only"]["probe_ids"]
    assert control == [60] and len(normal) > 1
    quiet = {f.code for f in report_of(tmp_path, "control_marker_typed_control").findings}
    loud = {f.code for f in report_of(tmp_path, "control_marker_typed_normal").findings}
    assert not {"HVA205", "HVA902"} & quiet and {"HVA205", "HVA902"} <= loud


def test_special_id_out_of_range_is_ignored_by_llama_cpp(tmp_path: Path) -> None:
    """HVA201 on a GGUF: llama.cpp warns "bad special token" and keeps its default eos, not the declared one."""
    verdict = VERDICTS["cases"]["eos_id_out_of_range"]
    assert "bad special token" in " ".join(verdict["log"]) and verdict["vocab_only"]["eos"] != 99
    (hit,) = [f for f in report_of(tmp_path, "eos_id_out_of_range").findings if f.code == "HVA201"]
    assert hit.location.key == "tokenizer.ggml.eos_token_id"


def test_duplicate_token_text_aborts_llama_cpp(tmp_path: Path) -> None:
    """HVA207 on a GGUF: llama.cpp's vocabulary loader asserts one id per text; the process aborts."""
    verdict = VERDICTS["cases"]["duplicate_token_string"]
    assert verdict.get("crashed") and "GGML_ASSERT(id_to_token.size() == token_to_id.size())" in " ".join(verdict["log"])
    (hit,) = [f for f in report_of(tmp_path, "duplicate_token_string").findings if f.code == "HVA207"]
    assert "GGML_ASSERT(id_to_token.size() == token_to_id.size())" in hit.message
    assert hit.location.key == "tokenizer.ggml.tokens"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["healthy", "tokens_over_rows", "bpe_unknown_pre"])
def test_llama_cpp_itself(tmp_path: Path, name: str) -> None:
    """Where llama-cpp-python is installed: the recorded verdicts still hold for a file converted here."""
    pytest.importorskip("llama_cpp")
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    import gguf_verdicts

    base = tmp_path / "base.gguf"
    gguf_verdicts.write_complete_base(base)
    probe = gguf_verdicts.rewrite(base, CASE[name], tmp_path / "case.gguf")
    got = gguf_verdicts.load(tmp_path / "case.gguf", probe)
    want = VERDICTS["cases"][name]
    assert (got["vocab_only"]["loads"], got["full"]["loads"]) == (want["vocab_only"]["loads"], want["full"]["loads"])

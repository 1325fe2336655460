"""`check model.gguf`: each case's GGUF (built with gguf.GGUFWriter) reports exactly the codes the case
expects; the healthy GGUF reports none. What llama.cpp does with the same edits is replayed from
tests/data/gguf_verdicts.json by test_gguf_verdicts.py."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("gguf")

from gguf_builders import CASES, Case, base_vocab, case_gguf, write_gguf  # noqa: E402

from hf_vocab_audit.audit import audit_gguf  # noqa: E402
from hf_vocab_audit.core.findings import Severity  # noqa: E402


def codes(path: Path) -> set[str]:
    report = audit_gguf(path)
    return {f.code for f in report.findings if f.severity is not Severity.INFO}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_each_case_reports_its_codes(tmp_path: Path, case: Case) -> None:
    assert codes(case_gguf(tmp_path / f"{case.name}.gguf", case)) == set(case.expect)


def test_findings_carry_gguf_locations(tmp_path: Path) -> None:
    from gguf_builders import CASE

    report = audit_gguf(case_gguf(tmp_path / "m.gguf", CASE["eos_id_out_of_range"]))
    (hit,) = [f for f in report.findings if f.code == "HVA201"]
    assert hit.location.file == "m.gguf"
    assert hit.location.key == "tokenizer.ggml.eos_token_id"
    assert hit.location.token_id == 99
    assert hit.fix is None  # --fix repairs HF folders, never a GGUF


def test_token_count_mismatch_quotes_llama_cpp(tmp_path: Path) -> None:
    from gguf_builders import CASE

    report = audit_gguf(case_gguf(tmp_path / "m.gguf", CASE["tokens_over_rows"]))
    messages = [f.message for f in report.findings if f.code == "HVA901"]
    assert len(messages) == 2  # token_embd and output
    assert "check_tensor_dims: tensor 'token_embd.weight' has wrong shape; expected    16,    67, got    16,    64" \
        in messages[0] + messages[1]


def test_padding_rules_do_not_call_gguf_rows_padding(tmp_path: Path) -> None:
    """HVA105 (padding is fine) does not hold for a GGUF: llama.cpp needs rows == tokens, so it is skipped."""
    from gguf_builders import CASE

    report = audit_gguf(case_gguf(tmp_path / "m.gguf", CASE["rows_over_tokens"]))
    assert "HVA105" not in {f.code for f in report.findings}
    assert any(s.rule == "HVA105" for s in report.skipped)


def test_chat_template_marker_not_a_control_token(tmp_path: Path) -> None:
    template = "{% for m in messages %}<|im_start|>{{ m['content'] }}<|im_end|>{% endfor %}"
    vocab = base_vocab()
    vocab.tokens[60], vocab.types[60] = "<|im_start|>", 3
    path = write_gguf(tmp_path / "m.gguf", vocab=vocab, chat_template=template)
    report = audit_gguf(path)
    split = [f for f in report.findings if f.code == "HVA205"]
    assert [f.location.token for f in split] == ["<|im_end|>"]  # <|im_start|> is one control token
    assert split[0].location.key == "tokenizer.chat_template"


def test_vocab_only_gguf_runs_vocabulary_rules(tmp_path: Path) -> None:
    """A GGUF without tensors (``--vocab-only``) still has its vocabulary checked; row rules are skipped."""
    path = write_gguf(tmp_path / "v.gguf", tensors=False)
    report = audit_gguf(path)
    assert not [f for f in report.findings if f.severity is Severity.ERROR]
    assert any(s.rule == "HVA101" for s in report.skipped)


def test_cli_checks_a_gguf_and_a_folder_holding_one(tmp_path: Path, run_cli) -> None:
    from gguf_builders import CASE

    case_gguf(tmp_path / "m.gguf", CASE["tokens_over_rows"])
    code, out, _ = run_cli("check", tmp_path / "m.gguf")
    assert code == 1 and "HVA901" in out
    code, out, _ = run_cli("check", tmp_path)
    assert code == 1 and "HVA901" in out
    healthy = tmp_path / "ok"
    healthy.mkdir()
    case_gguf(healthy / "ok.gguf", CASE["healthy"])
    code, out, _ = run_cli("check", healthy / "ok.gguf")
    assert code == 0, out


def test_folder_with_two_ggufs_is_refused(tmp_path: Path, run_cli) -> None:
    from gguf_builders import CASE

    case_gguf(tmp_path / "a.gguf", CASE["healthy"])
    case_gguf(tmp_path / "b.gguf", CASE["healthy"])
    code, _out, err = run_cli("check", tmp_path)
    assert code == 2 and "holds 2 GGUF files" in err and len(err.strip().splitlines()) == 1


def test_sharded_gguf_is_read_by_its_first_part(tmp_path: Path) -> None:
    """Tensors of the second part are found; a missing part is one line naming it."""
    import gguf
    import numpy as np

    vocab = base_vocab()
    for no, tensor in ((1, None), (2, "token_embd.weight")):
        writer = gguf.GGUFWriter(tmp_path / f"m-{no:05d}-of-00002.gguf", "llama")
        writer.add_uint16("split.no", no - 1)
        writer.add_uint16("split.count", 2)
        if no == 1:
            from gguf_builders import write_vocab

            write_vocab(writer, vocab)
        if tensor:
            writer.add_tensor(tensor, np.zeros((70, 16), dtype=np.float32))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
    report = audit_gguf(tmp_path / "m-00001-of-00002.gguf")
    assert "HVA901" in {f.code for f in report.findings}
    (tmp_path / "m-00002-of-00002.gguf").unlink()
    from hf_vocab_audit.errors import AuditError

    with pytest.raises(AuditError, match="part m-00002-of-00002.gguf is missing"):
        audit_gguf(tmp_path / "m-00001-of-00002.gguf")

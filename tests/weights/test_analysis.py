"""check --weights on tiny Llama checkpoints built with transformers (HVA601-603)."""

from __future__ import annotations

import json

import pytest
import torch
from weights_builders import llama_with_rows

from hf_vocab_audit import audit
from hf_vocab_audit.core.fixes import ReinitRows


def _codes(report, prefix="HVA6"):
    return [f.code for f in report.findings if f.code.startswith(prefix)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_zeroed_chat_tokens_are_named(tmp_path, dtype, tied):
    folder = llama_with_rows(tmp_path, zero=["<|im_start|>", "<|im_end|>"], tied=tied, dtype=dtype)
    report = audit(folder, weights=True)
    hits = [f for f in report.findings if f.code == "HVA601"]
    assert [(f.location.token, f.location.token_id) for f in hits] == [("<|im_start|>", 100), ("<|im_end|>", 101)]
    msg = hits[1].message
    assert "'<|im_end|>' (id 101" in msg and "chat template" in msg
    assert "input embedding row is all zero (norm 0, max |v| 0" in msg
    assert ("lm_head row is all zero" in msg) is (not tied)
    assert isinstance(hits[1].fix.edits[0], ReinitRows) and hits[1].fix.edits[0].ids == (101,)
    assert hits[1].fix.applicability.value == "unsafe"
    sides = report.to_dict()["weights"]["sides"]
    assert set(sides) == ({"input"} if tied else {"input", "output"})
    assert sides["input"]["dtype"] == ("BF16" if dtype == torch.bfloat16 else "F32")
    assert [e["id"] for e in sides["input"]["flagged_used"]] == [100, 101]


@pytest.mark.parametrize("cut", ["model.embed_tokens.weight", "lm_head.weight"])
def test_sides_of_different_lengths_each_speak_for_their_rows(tmp_path, cut):
    """An untied lm_head shorter or longer than the embedding (HVA101/HVA102's case): the token past the
    short side's rows is judged on the side that has it, and the audit does not crash."""
    from safetensors.torch import load_file, save_file

    folder = llama_with_rows(tmp_path, zero=["<|im_end|>"])  # id 101, the last row
    path = next(folder.glob("*.safetensors"))
    tensors = load_file(path)
    tensors[cut] = tensors[cut][:101].clone()
    save_file(tensors, path, metadata={"format": "pt"})
    report = audit(folder, weights=True)
    hits = [f for f in report.findings if f.code == "HVA601"]
    kept = "lm_head" if cut.startswith("model") else "embed_tokens"
    assert [(f.location.token_id, kept in f.location.tensor) for f in hits] == [(101, True)]
    assert "row is all zero" in hits[0].message


def test_mean_resized_rows_are_untrained(tmp_path):
    folder = llama_with_rows(tmp_path, mean_resizing=True)
    report = audit(folder, weights=True)
    hits = [f for f in report.findings if f.code == "HVA601"]
    assert [f.location.token_id for f in hits] == [100, 101]
    assert "input embedding row equals the mean of the other rows" in hits[0].message
    assert "lm_head row equals the mean" in hits[0].message
    # Already at the mean: re-initialising them to the mean would change nothing, so no fix is offered.
    assert all(f.fix is None and "already set to the mean" in f.hint for f in hits)
    assert report.to_dict()["weights"]["sides"]["input"]["flagged_used"][0]["reasons"][:1] == ["mean"]


def test_rows_grown_by_fix_are_recognised_as_its_own(tmp_path, run_cli):
    """--fix grows the rows to the mean; --weights on its output must not send the user back to --fix."""
    from builders import CHATML, checkpoint

    src = checkpoint(tmp_path / "m", "llama", 104, added_special=["<|im_start|>", "<|im_end|>"], chat_template=CHATML)
    code, _, err = run_cli("check", src, "--fix", "--output", tmp_path / "out", "--verify-load", "never")
    assert code == 0, err
    code, out, _ = run_cli("check", tmp_path / "out", "--weights", "--format", "json")
    hits = [f for f in json.loads(out)["findings"] if f["code"] == "HVA601"]
    assert [f["location"]["token_id"] for f in hits] == [104, 105]
    assert all(f["fix"] is None and "already set to the mean" in f["hint"] for f in hits)


def test_low_norm_row_is_suspect(tmp_path):
    folder = llama_with_rows(tmp_path, scale={"<|im_end|>": 0.05})
    report = audit(folder, weights=True)
    hits = [f for f in report.findings if f.code == "HVA602"]
    assert [f.location.token for f in hits] == ["<|im_end|>"]
    assert "norm far below the ordinary tokens'" in hits[0].message
    assert _codes(report) == ["HVA602"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_healthy_padded_checkpoint_has_no_warnings(tmp_path, dtype):
    # 102 tokens in 128 rows: 26 padding rows are not tokens; pad's row is zero by design (padding_idx).
    folder = llama_with_rows(tmp_path, pad_to_multiple_of=64, dtype=dtype)
    report = audit(folder, weights=True)
    assert _codes(report) == []
    side = report.to_dict()["weights"]["sides"]["input"]
    assert (side["rows"], side["token_rows"], side["padding_rows"]) == (128, 102, 26)
    assert "HVA601" in report.rules_run


def test_reserved_tokens_are_an_info_count(tmp_path):
    reserved = [f"<|reserved_special_token_{i}|>" for i in range(4)]
    folder = llama_with_rows(tmp_path, added=["<|im_start|>", "<|im_end|>", *reserved], zero=reserved)
    report = audit(folder, weights=True)
    assert _codes(report) == ["HVA603"]
    info = report.findings[-1]
    assert info.severity.value == "info"
    assert info.message.startswith("4 token rows not emitted in normal use are untrained or low-norm "
                                   "(4 reserved placeholders): input embedding 4 untrained, 0 low-norm; "
                                   "lm_head 4 untrained, 0 low-norm")
    assert info.details["ids"] == [102, 103, 104, 105]


def test_reserved_token_used_by_the_template_warns(tmp_path):
    template = "{% for m in messages %}<|reserved_special_token_0|>{{ m['content'] }}{% endfor %}"
    folder = llama_with_rows(tmp_path, added=["<|reserved_special_token_0|>"], zero=["<|reserved_special_token_0|>"],
                             chat_template=template)
    report = audit(folder, weights=True)
    assert [f.location.token for f in report.findings if f.code == "HVA601"] == ["<|reserved_special_token_0|>"]


def test_default_check_reads_no_weights(tmp_path):
    folder = llama_with_rows(tmp_path, zero=["<|im_end|>"])
    report = audit(folder)
    assert _codes(report) == [] and report.weights is None
    assert not any(c.startswith("HVA6") for c in report.rules_run)


def test_minilm_audits_clean_with_weights(minilm_dir):
    report = audit(minilm_dir, weights=True)
    assert [f for f in report.findings if f.severity.value != "info"] == []
    side = report.to_dict()["weights"]["sides"]["input"]
    assert (side["rows"], side["token_rows"]) == (30522, 30522)
    # [unusedN] placeholders and rare pieces are counted, not warned about.
    assert _codes(report) == ["HVA603"]


def test_cli_weights_flag(tmp_path, run_cli):
    folder = llama_with_rows(tmp_path, zero=["<|im_end|>"])
    code, out, _err = run_cli("check", folder, "--weights", "--fail-on", "warning")
    assert code == 1
    assert "HVA601 untrained-token-row" in out and "'<|im_end|>' (id 101" in out
    code, out, _err = run_cli("check", folder)
    assert code == 0 and "HVA601" not in out


def test_bin_checkpoint_is_skipped_with_a_reason(tmp_path):
    from builders import checkpoint
    from safetensors.torch import load_file

    folder = checkpoint(tmp_path)
    torch.save(load_file(folder / "model.safetensors"), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    report = audit(folder, weights=True)
    reasons = [s.reason for s in report.skipped if s.what.startswith(("weights", "HVA6"))]
    assert reasons and "safetensors only" in reasons[0]
    assert _codes(report) == []

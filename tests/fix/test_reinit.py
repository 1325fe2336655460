"""--fix --unsafe-fixes --weights: untrained token rows set to the mean of the trained rows (HVA601/HVA602)."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoTokenizer
from weights_builders import llama_with_rows

from hf_vocab_audit.fix import fix_checkpoint
from hf_vocab_audit.fix.verify import VerificationError

from .fixkit import state

CHAT = ["<|im_start|>", "<|im_end|>"]
EMB, HEAD = "model.embed_tokens.weight", "lm_head.weight"


def _with_loud_padding(folder, tokens: int):
    """Make the padding rows past the tokenizer huge: a mean that took them in would be far off."""
    path = folder / "model.safetensors"
    tensors = load_file(str(path))
    for name in (EMB, HEAD):
        tensors[name][tokens:] = 100.0
    save_file(tensors, str(path), metadata={"format": "pt"})
    return folder


def _expected_mean(matrix: torch.Tensor, tokens: int, skip: list[int]) -> torch.Tensor:
    """Mean of the token rows that are not zero and not in ``skip`` (computed independently, float64)."""
    rows = matrix[:tokens].double()
    keep = rows.abs().amax(dim=1) > 0
    keep[skip] = False
    return rows[keep].mean(dim=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_unsafe_fix_sets_untrained_rows_to_the_trained_mean(tmp_path, guard_input, dtype):
    src = llama_with_rows(tmp_path / "m", zero=CHAT, dtype=dtype, pad_to_multiple_of=64)
    _with_loud_padding(src, 102)
    guard_input(src)
    report = fix_checkpoint(src, output=tmp_path / "out", weights=True, unsafe_fixes=True, verify_load="always")

    fixes = [(f.code, f.action, f.applicability.value) for f in report.fixes]
    assert fixes == [("HVA601", "reinit-untrained-rows", "unsafe")] * 2
    assert {f.description for f in report.fixes} == {
        f"set row {i} of {EMB}, {HEAD} to the mean of the trained rows" for i in (100, 101)}
    assert report.to_dict()["fix"]["reinit"] == {HEAD: [100, 101], EMB: [100, 101]}
    assert report.to_dict()["fix"]["method"] == "surgical"
    assert [u["code"] for u in report.to_dict()["fix"]["unfixed"]] == ["HVA105"]  # padding rows: info, nothing to fix
    before, after = state(src), state(tmp_path / "out")
    assert before.keys() == after.keys()
    for name in (EMB, HEAD):
        a, b = after[name], before[name]
        assert a.dtype == dtype and a.shape == b.shape == (128, 16)
        assert torch.equal(a[100], a[101]) and a[100].abs().max() > 0
        expect = _expected_mean(b.float(), 102, [100, 101]).to(dtype).float()
        # one rounding step of the dtype at most (float32 and float64 accumulate in different orders)
        assert torch.allclose(a[100].float(), expect, rtol=2 ** -7 if dtype == torch.bfloat16 else 1e-6,
                              atol=1e-7)
        others = [i for i in range(128) if i not in (100, 101)]
        assert torch.equal(a[others].view(torch.uint8), b[others].view(torch.uint8))
    assert all(torch.equal(after[k].view(torch.uint8), v.view(torch.uint8)) for k, v in before.items()
               if k not in (EMB, HEAD))
    # The rows now hold the mean, yet were still never trained: the audit of the output says so.
    remaining = [f for f in report.findings if f.code == "HVA601"]
    # (the two rows are identical; the analysis' own mean takes in the loud padding rows, ours does not)
    assert [f.details["token_id"] for f in remaining] == [100, 101]
    assert all("identical to row" in f.message and "all zero" not in f.message for f in remaining)
    assert report.weights is not None and report.to_dict()["fix"]["verification"]["load"].startswith("ok")


def test_reinit_and_growth_share_one_rewrite(tmp_path, guard_input):
    src = llama_with_rows(tmp_path / "m", zero=CHAT)
    tok = AutoTokenizer.from_pretrained(src)
    tok.add_special_tokens({"additional_special_tokens": [*CHAT, "<tool>"]})
    tok.save_pretrained(src)
    guard_input(src)
    report = fix_checkpoint(src, output=tmp_path / "out", weights=True, unsafe_fixes=True)

    assert sorted({f.code for f in report.fixes}) == ["HVA101", "HVA102", "HVA601"]
    assert report.to_dict()["fix"]["reinit"] == {HEAD: [100, 101], EMB: [100, 101]}
    before, after = state(src), state(tmp_path / "out")
    for name in (EMB, HEAD):
        a, b = after[name], before[name]
        assert a.shape == (103, 16)
        assert torch.allclose(a[100].double(), _expected_mean(b, 102, [100, 101]), rtol=1e-6, atol=1e-7)
        assert torch.equal(a[:100], b[:100]) and torch.equal(a[100], a[101])
        assert torch.isfinite(a[102]).all()


def test_without_unsafe_fixes_nothing_is_reinitialised(tmp_path, run_cli, guard_input):
    src = guard_input(llama_with_rows(tmp_path / "m", zero=CHAT))
    code, out, _ = run_cli("check", src, "--fix", "--weights", "--output", tmp_path / "out", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["fixes"] == [] and data["fix"]["method"] == "copy"
    assert [(u["code"], u["reason"]) for u in data["fix"]["unfixed"]] == [
        ("HVA601", "its fix changes the model's behaviour: rerun with --unsafe-fixes to apply it")] * 2
    assert (tmp_path / "out" / "model.safetensors").read_bytes() == (src / "model.safetensors").read_bytes()

    code, out, _ = run_cli("check", src, "--fix", "--weights", "--unsafe-fixes", "--output", tmp_path / "out2",
                           "--format", "json")
    data = json.loads(out)
    assert code == 0 and [f["action"] for f in data["fixes"]] == ["reinit-untrained-rows"] * 2
    assert state(tmp_path / "out2")[EMB][100].abs().max() > 0


def test_transformers_route_lists_the_rows_unfixed(tmp_path, guard_input):
    src = guard_input(llama_with_rows(tmp_path / "m", zero=CHAT))
    report = fix_checkpoint(src, output=tmp_path / "out", weights=True, unsafe_fixes=True, method="transformers")
    assert report.fixes == ()
    assert [u["reason"] for u in report.to_dict()["fix"]["unfixed"]] == [
        "the transformers route does not re-initialise rows"] * 2
    assert torch.equal(state(tmp_path / "out")[EMB][100:], torch.zeros(2, 16))


def test_low_norm_row_is_reinitialised_on_its_side_only(tmp_path, guard_input):
    src = guard_input(llama_with_rows(tmp_path / "m", scale={"<|im_end|>": 1e-3}))
    report = fix_checkpoint(src, output=tmp_path / "out", weights=True, unsafe_fixes=True)
    assert [f.code for f in report.fixes] == ["HVA602"]
    assert report.to_dict()["fix"]["reinit"] == {HEAD: [101], EMB: [101]}
    before, after = state(src), state(tmp_path / "out")
    assert torch.allclose(after[EMB][101].double(), _expected_mean(before[EMB], 102, [101]), rtol=1e-6, atol=1e-7)


def test_a_misplaced_row_fails_verification(tmp_path, guard_input, monkeypatch):
    from hf_vocab_audit.fix import reinit

    real = reinit.write_rows
    monkeypatch.setattr(reinit, "write_rows", lambda fd, start, t, ids, row: real(fd, start, t, (99,), row))
    src = guard_input(llama_with_rows(tmp_path / "m", zero=CHAT))
    with pytest.raises(VerificationError, match="verification failed, nothing written: tensor .*"):
        fix_checkpoint(src, output=tmp_path / "out", weights=True, unsafe_fixes=True)
    assert not (tmp_path / "out").exists()

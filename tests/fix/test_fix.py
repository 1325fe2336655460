"""fix_checkpoint end to end: the real MiniLM checkpoint, a separate tokenizer folder, the CLI."""

from __future__ import annotations

import json
import shutil

import torch
from transformers import AutoModel, AutoTokenizer

from hf_vocab_audit.fix import fix_checkpoint

from .fixkit import broken, state


def test_real_minilm_with_added_tokens(tmp_path, minilm_dir, guard_input):
    src = tmp_path / "minilm"
    shutil.copytree(minilm_dir, src)
    tok = AutoTokenizer.from_pretrained(src)
    tok.add_tokens(["<tool_call>", "</tool_call>", "hf-vocab-audit"])
    tok.save_pretrained(src)
    guard_input(src)
    ids = tok("<tool_call> hf-vocab-audit </tool_call>", return_tensors="pt")
    assert ids["input_ids"].max() == 30524

    report = fix_checkpoint(src, output=tmp_path / "out", verify_load="always")

    assert [f.code for f in report.fixes] == ["HVA101"]
    assert report.exit_code() == 0
    assert report.to_dict()["fix"]["verification"]["load"].startswith("ok")
    before, after = state(src), state(tmp_path / "out")
    emb = "embeddings.word_embeddings.weight"
    assert after[emb].shape == (30525, 384)
    assert torch.equal(after[emb][:30522], before[emb])
    assert all(torch.equal(after[k], v) for k, v in before.items() if k != emb)
    model = AutoModel.from_pretrained(tmp_path / "out")
    out = model(**ids).last_hidden_state
    assert out.shape == (1, ids["input_ids"].shape[1], 384) and torch.isfinite(out).all()


def test_cli_fix_exit_code_is_the_audit_of_the_output(tmp_path, run_cli, guard_input):
    src = guard_input(broken(tmp_path / "m"))
    code, out, _ = run_cli("check", src, "--fix", "--output", tmp_path / "out", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["target"] == str(tmp_path / "out")
    assert [f["code"] for f in data["fixes"]] == ["HVA101", "HVA102"]
    assert data["fix"]["rows_after"] == 106 and data["fix"]["unfixed"] == []
    code, _, err = run_cli("check", src, "--fix", "--output", tmp_path / "out")
    assert code == 2
    assert err.strip() == f"hf-vocab-audit: error: {tmp_path / 'out'}: exists and is not empty " \
                          "(pass --force to replace it)"
    code, out, _ = run_cli("check", src, "--fix", "--output", tmp_path / "out", "--force", "--pad-to-multiple-of",
                           "8", "--method", "transformers", "--verify-load", "never")
    assert code == 0 and "written to" in out and "(transformers)" in out
    assert "transformers load: skipped: --verify-load never" in out
    assert state(tmp_path / "out")["model.embed_tokens.weight"].shape == (112, 16)


def test_cli_fix_says_what_verification_ran_and_what_it_cost(tmp_path, run_cli, guard_input):
    """With torch installed, --fix loads the small output with transformers (seconds): the report says so."""
    src = guard_input(broken(tmp_path / "m"))
    code, out, _ = run_cli("check", src, "--fix", "--output", tmp_path / "out")
    assert code == 0
    verified = next(line for line in out.splitlines() if "verified:" in line)
    assert "bytes of weights compared with the input" in verified
    load = next(line for line in out.splitlines() if "transformers load:" in line)
    assert "ok: transformers loads it" in load and " s; --verify-load never skips it)" in load


def test_cli_fix_fails_when_an_unfixed_finding_remains(tmp_path, run_cli, guard_input):
    src = broken(tmp_path / "m")
    cfg = json.loads((src / "config.json").read_text())
    cfg["eos_token_id"] = 500
    (src / "config.json").write_text(json.dumps(cfg))
    guard_input(src)
    code, out, _ = run_cli("check", src, "--fix", "--output", tmp_path / "out")
    assert code == 1
    assert "NOT FIXED" in out and "rerun with --unsafe-fixes" in out
    code, out, _ = run_cli("check", src, "--fix", "--output", tmp_path / "out2", "--unsafe-fixes")
    assert code == 0, out

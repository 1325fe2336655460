"""``check DIR --target vllm --fix OUT --unsafe-fixes`` writes HVA950's ids into generation_config.json's
``suppress_tokens``; decided by execution: transformers' ``generate()`` on CPU emits a padding id from the
input and never from the output."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from builders import edit_json, make_tokenizer, new_model
from transformers import AutoModelForCausalLM

ROWS, TOKENS = 72, 64  # 8 padding rows (64..71) the tokenizer cannot decode
PADDING = set(range(TOKENS, ROWS))


def padded_model_that_samples_padding(folder: Path) -> Path:
    """A tiny Llama whose lm_head makes a padding row win every step: the final norm keeps one hidden unit,
    and padding rows 64..71 are +/-100 on it (whatever its sign, one of them tops the zero logits of the rest)."""
    model = new_model("llama", ROWS, tie_word_embeddings=False)
    with torch.no_grad():
        model.model.norm.weight.zero_()
        model.model.norm.weight[0] = 1.0
        model.lm_head.weight.zero_()
        for i in range(TOKENS, ROWS):
            model.lm_head.weight[i, 0] = 100.0 if i % 2 else -100.0
    folder.mkdir(parents=True)
    model.save_pretrained(folder)
    make_tokenizer(folder, TOKENS)
    return folder


def generated(folder: Path) -> set[int]:
    """The ids greedy and sampled generation produce from ``folder`` (its generation_config.json included)."""
    model = AutoModelForCausalLM.from_pretrained(folder)
    prompt = torch.tensor([[1, 5, 9, 13]])
    torch.manual_seed(0)
    ids: set[int] = set()
    for sample in (False, True):
        out = model.generate(prompt, max_new_tokens=6, do_sample=sample, pad_token_id=0)
        ids |= set(out[0, prompt.shape[1]:].tolist())
    return ids


def test_suppressed_ids_are_never_generated(tmp_path, guard_input, run_cli):
    src = guard_input(padded_model_that_samples_padding(tmp_path / "m"))
    assert generated(src) & PADDING  # before the fix: generate() emits ids the tokenizer cannot decode
    code, out, err = run_cli("check", src, "--target", "vllm", "--fix", "--output", tmp_path / "out",
                             "--unsafe-fixes", "--format", "json")
    report = json.loads(out)
    assert code == 0, err
    assert [(f["code"], f["action"], f["applicability"]) for f in report["fixes"]] == [
        ("HVA950", "suppress-tokens", "unsafe")]
    config = json.loads((tmp_path / "out" / "generation_config.json").read_text())
    assert config["suppress_tokens"] == sorted(PADDING)
    assert not generated(tmp_path / "out") & PADDING  # after: never
    # an engine that ignores generation_config can still sample them: HVA950 stays, with the same ids
    assert sorted(f["code"] for f in report["findings"]) == ["HVA105", "HVA950"]
    assert report["vllm"]["suppress_token_ids"] == sorted(PADDING)


def test_existing_suppress_tokens_are_kept_and_a_missing_file_is_created(tmp_path, guard_input, run_cli):
    src = padded_model_that_samples_padding(tmp_path / "m")
    edit_json(src / "generation_config.json", suppress_tokens=[70, 3])
    guard_input(src)
    code, _out, err = run_cli("check", src, "--target", "vllm", "--fix", "--output", tmp_path / "out",
                              "--unsafe-fixes")
    assert code == 0, err
    assert json.loads((tmp_path / "out" / "generation_config.json").read_text())["suppress_tokens"] == \
        [70, 3, 64, 65, 66, 67, 68, 69, 71]
    bare = padded_model_that_samples_padding(tmp_path / "bare")
    (bare / "generation_config.json").unlink()
    guard_input(bare)
    code, _out, err = run_cli("check", bare, "--target", "vllm", "--fix", "--output", tmp_path / "out2",
                              "--unsafe-fixes")
    assert code == 0, err
    assert json.loads((tmp_path / "out2" / "generation_config.json").read_text()) == {
        "suppress_tokens": sorted(PADDING)}


def test_without_unsafe_fixes_the_ids_are_left_with_the_reason(tmp_path, guard_input, run_cli):
    src = guard_input(padded_model_that_samples_padding(tmp_path / "m"))
    code, out, _err = run_cli("check", src, "--target", "vllm", "--fix", "--output", tmp_path / "out",
                              "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["fixes"] == []
    assert [(u["code"], u["reason"]) for u in report["fix"]["unfixed"] if u["code"] == "HVA950"] == [
        ("HVA950", "its fix changes the model's behaviour: rerun with --unsafe-fixes to apply it")]
    config = json.loads((tmp_path / "out" / "generation_config.json").read_text())
    assert "suppress_tokens" not in config


def test_a_healthy_checkpoint_gets_no_suppress_tokens(tmp_path, run_cli):
    src = tmp_path / "m"
    new_model("llama", TOKENS, tie_word_embeddings=False).save_pretrained(src)
    make_tokenizer(src, TOKENS)
    code, out, _err = run_cli("check", src, "--target", "vllm", "--fix", "--output", tmp_path / "out",
                              "--unsafe-fixes", "--format", "json")
    assert code == 0 and json.loads(out)["fixes"] == []
    assert "suppress_tokens" not in json.loads((tmp_path / "out" / "generation_config.json").read_text())

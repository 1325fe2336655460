"""HVA968-HVA969 and ``--tool-call-parser`` / ``--reasoning-parser``: the strings vLLM 0.10.2's parsers look up
(read in its source; vLLM does not run here), against tokenizers built with the tokenizers library."""

from __future__ import annotations

import subprocess
import sys

import pytest
from builders import checkpoint

from hf_vocab_audit import audit
from hf_vocab_audit.errors import AuditError


def codes(report, code):
    return [f for f in report.findings if f.code == code]


def test_hermes_without_tool_call_tokens_is_quiet(tmp_path):
    # vLLM 0.10.2's hermes encodes <tool_call> (hermes_tool_parser.py:55-58) and raises nothing without it
    folder = checkpoint(tmp_path / "m", "llama", 104)
    report = audit(folder, target_kind="vllm", tool_call_parser="hermes")
    assert codes(report, "HVA968") == [] and codes(report, "HVA969") == []


def test_hermes_special_tool_call_tokens_are_stripped(tmp_path):
    # hermes overrides no adjust_request in vLLM 0.10.2: a special <tool_call> is gone before extract_tool_calls
    folder = checkpoint(tmp_path / "m", "llama", 104, added_special=["<tool_call>", "</tool_call>"])
    report = audit(folder, target_kind="vllm", tool_call_parser="hermes")
    assert codes(report, "HVA968") == []
    (f,) = codes(report, "HVA969")
    assert f.details["stripped"] == ["<tool_call>", "</tool_call>"] and "extract_tool_calls" in f.message


def test_hermes_plain_tool_call_tokens_are_quiet(tmp_path):
    folder = checkpoint(tmp_path / "m", "llama", 104, added=["<tool_call>", "</tool_call>"])
    report = audit(folder, target_kind="vllm", tool_call_parser="hermes")
    assert codes(report, "HVA968") == [] and codes(report, "HVA969") == []


def test_mistral_needs_tool_calls_token(tmp_path):
    folder = checkpoint(tmp_path / "m", "llama", 104, added=["<tool_call>"])
    (f,) = codes(audit(folder, target_kind="vllm", tool_call_parser="mistral"), "HVA968")
    assert f.details["missing"] == ["[TOOL_CALLS]"]
    folder = checkpoint(tmp_path / "ok", "llama", 104, added_special=["[TOOL_CALLS]"])
    assert codes(audit(folder, target_kind="vllm", tool_call_parser="mistral"), "HVA968") == []


@pytest.mark.parametrize("parser", ["qwen3", "deepseek_r1"])
def test_reasoning_parser_without_think_tokens_is_an_error(tmp_path, parser):
    folder = checkpoint(tmp_path / "m", "llama", 104, added=["<think>"])
    (f,) = codes(audit(folder, target_kind="vllm", reasoning_parser=parser), "HVA968")
    assert f.details["missing"] == ["</think>"] and "could not locate think start/end tokens" in f.message


@pytest.mark.parametrize("parser", ["qwen3", "deepseek_r1"])
def test_special_think_tokens_are_stripped_before_the_reasoning_parser(tmp_path, parser):
    folder = checkpoint(tmp_path / "m", "llama", 104, added_special=["<think>", "</think>"])
    report = audit(folder, target_kind="vllm", reasoning_parser=parser)
    assert codes(report, "HVA968") == []
    (f,) = codes(report, "HVA969")
    assert f.severity.value == "warning" and f.details["stripped"] == ["<think>", "</think>"]


def test_the_premise_decoding_drops_special_think_keeps_plain_think(tmp_path):
    """What HVA969 rests on, run with transformers: skip_special_tokens removes a special added token from the
    text and keeps a non-special one, which is how Qwen3 saves <think>."""
    from transformers import AutoTokenizer

    special = AutoTokenizer.from_pretrained(checkpoint(tmp_path / "s", "llama", 104, added_special=["<think>"]))
    plain = AutoTokenizer.from_pretrained(checkpoint(tmp_path / "p", "llama", 104, added=["<think>"]))
    for tok, kept in ((special, False), (plain, True)):
        ids = tok.encode("<think> w1", add_special_tokens=False)
        assert ("<think>" in tok.decode(ids, skip_special_tokens=True)) is kept


def test_plain_think_tokens_are_quiet(tmp_path):
    folder = checkpoint(tmp_path / "m", "llama", 104, added=["<think>", "</think>"])
    report = audit(folder, target_kind="vllm", reasoning_parser="qwen3", tool_call_parser=None)
    assert codes(report, "HVA968") == [] and codes(report, "HVA969") == []


def test_unknown_parser_name_is_refused(tmp_path):
    folder = checkpoint(tmp_path / "m", "llama", 104)
    with pytest.raises(AuditError, match="--tool-call-parser must be one of hermes, mistral"):
        audit(folder, target_kind="vllm", tool_call_parser="hermes2")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "hf_vocab_audit", "check", *args], capture_output=True, text=True,
                          timeout=120)


def test_cli_parsers_need_target_vllm_and_a_known_name(tmp_path):
    folder = checkpoint(tmp_path / "m", "llama", 104)
    done = _cli(str(folder), "--tool-call-parser", "hermes")
    assert done.returncode == 2 and "--tool-call-parser needs --target vllm" in done.stderr
    done = _cli(str(folder), "--target", "gguf", "--reasoning-parser", "qwen3")
    assert done.returncode == 2 and "--reasoning-parser needs --target vllm" in done.stderr
    done = _cli(str(folder), "--target", "vllm", "--reasoning-parser", "qwen")
    assert done.returncode == 2 and "--reasoning-parser must be one of deepseek_r1, qwen3" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    done = _cli(str(folder), "--target", "vllm", "--tool-call-parser", "mistral")
    assert done.returncode == 1 and "HVA968" in done.stdout

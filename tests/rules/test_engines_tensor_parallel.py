"""HVA965 and ``--tp``: the tensor-parallel splits vLLM 0.10.2 refuses (read in its source; vLLM does not run here)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from builders import checkpoint, edit_json

from hf_vocab_audit import audit
from hf_vocab_audit.facts.consumers import pad_vocab


def codes(report, code):
    return [f for f in report.findings if f.code == code]


@pytest.fixture
def gqa(tmp_path):
    """A tiny Llama with 8 attention heads, 2 KV heads and 104 rows (vLLM pads them to 128)."""
    return checkpoint(tmp_path / "m", "llama", 104, model={"num_attention_heads": 8, "num_key_value_heads": 2})


def test_vllm_pads_the_vocabulary_to_a_multiple_of_64():
    assert (pad_vocab(104, 64), pad_vocab(128, 64), pad_vocab(151665, 64)) == (128, 128, 151680)


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_splits_vllm_takes_are_quiet(gqa, tp):
    # 8 heads / tp, 2 KV heads split (tp 2) or replicated (4, 8), 128 padded rows / tp: all exact
    assert codes(audit(gqa, target_kind="vllm", tp=tp), "HVA965") == []


def test_heads_not_divisible_fire_with_vllms_message(gqa):
    edit_json(gqa / "config.json", num_attention_heads=6, num_key_value_heads=6, hidden_size=24)
    (f,) = codes(audit(gqa, target_kind="vllm", tp=4), "HVA965")
    assert "Total number of attention heads (6) must be divisible by tensor parallel size (4)." in f.message
    assert f.location.key == "num_attention_heads" and f.severity.value == "error"


def test_kv_heads_neither_divisible_nor_replicable_fire(gqa):
    edit_json(gqa / "config.json", num_attention_heads=12, num_key_value_heads=3, hidden_size=24)
    found = codes(audit(gqa, target_kind="vllm", tp=2), "HVA965")  # 3 KV heads over 2 ranks: 3 >= 2, 3 % 2
    assert [f.location.key for f in found] == ["num_key_value_heads"]
    assert "total_num_kv_heads % tp_size == 0 (3 % 2)" in found[0].message
    found = codes(audit(gqa, target_kind="vllm", tp=4), "HVA965")  # fewer KV heads than ranks: 4 % 3
    assert [f.location.key for f in found] == ["num_key_value_heads"]
    assert "tp_size % total_num_kv_heads == 0 (4 % 3" in found[0].message


def test_padded_vocabulary_not_divisible_fires(gqa):
    edit_json(gqa / "config.json", num_attention_heads=6, num_key_value_heads=3, hidden_size=24)
    (f,) = codes(audit(gqa, target_kind="vllm", tp=3), "HVA965")  # heads split 3 ways; 128 padded rows do not
    assert f.location.key == "vocab_size" and "128 is not divisible by 3" in f.message
    assert f.details["padded_vocab_size"] == 128


def test_one_finding_per_refused_split_in_vllms_order(gqa):
    """vLLM stops at its first check (the heads, before any layer is built): one error, the later refusals
    in its details and message, not three errors for one refusal."""
    edit_json(gqa / "config.json", num_attention_heads=32, num_key_value_heads=8, hidden_size=64)
    (f,) = codes(audit(gqa, target_kind="vllm", tp=3), "HVA965")
    assert f.location.key == "num_attention_heads" and "Total number of attention heads (32)" in f.message
    assert [a["key"] for a in f.details["also"]] == ["num_key_value_heads", "vocab_size"]
    assert "128 is not divisible by 3" in f.message


def test_no_tp_no_finding(gqa):
    edit_json(gqa / "config.json", num_attention_heads=6, num_key_value_heads=6, hidden_size=24)
    assert codes(audit(gqa, target_kind="vllm"), "HVA965") == []


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "hf_vocab_audit", "check", *args], capture_output=True, text=True,
                          timeout=120)


def test_cli_tp_needs_target_vllm_and_a_positive_size(gqa):
    done = _cli(str(gqa), "--tp", "2")
    assert done.returncode == 2 and "--tp needs --target vllm" in done.stderr
    done = _cli(str(gqa), "--target", "vllm", "--tp", "0")
    assert done.returncode == 2 and "'--tp': 0 is not in the range x>=1" in done.stderr
    edit_json(gqa / "config.json", num_attention_heads=6, num_key_value_heads=6, hidden_size=24)
    done = _cli(str(gqa), "--target", "vllm", "--tp", "4")
    assert done.returncode == 1 and "HVA965" in done.stdout


def test_gpt2_head_count_is_read_under_its_own_key(tmp_path):
    folder = checkpoint(tmp_path / "g", "gpt2", 128)  # GPT-2 names its heads n_head (2 here)
    (f,) = codes(audit(folder, target_kind="vllm", tp=4), "HVA965")
    assert f.location.key == "n_head" and "Total number of attention heads (2)" in f.message
    assert codes(audit(folder, target_kind="vllm", tp=2), "HVA965") == []

"""HVA924 (`check HF_DIR --target gguf`): a token llama.cpp treats as end-of-turn (`<end_of_turn>`, ...) that
the HF tokenizer does not mark special. The converter's typing is ``conversion/base.py``'s (added tokens:
CONTROL when special or ``does_token_look_special``, else USER_DEFINED), and llama.cpp's retyping with its
warning is ``src/llama-vocab.cpp``'s (llama-cpp-python 0.3.36)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("gguf")

from gguf_builders import bpe_checkpoint  # noqa: E402

from hf_vocab_audit.audit import audit  # noqa: E402


def hva924(folder: Path) -> list:
    return [f for f in audit(folder, target_kind="gguf").findings if f.code == "HVA924"]


def with_tokens(folder: Path, normal: list[str] = (), special: list[str] = ()) -> Path:
    """A BPE checkpoint with ``normal`` added as plain added tokens and ``special`` as special ones."""
    from transformers import AutoTokenizer

    bpe_checkpoint(folder)
    tok = AutoTokenizer.from_pretrained(folder)
    if normal:
        tok.add_tokens(list(normal))
    if special:
        tok.add_special_tokens({"additional_special_tokens": list(special)})
    tok.save_pretrained(folder)
    return folder


def test_end_of_turn_added_as_a_normal_token_is_named(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    folder = with_tokens(tmp_path / "m", normal=["<end_of_turn>"])
    tok = AutoTokenizer.from_pretrained(folder)
    i = tok.convert_tokens_to_ids("<end_of_turn>")
    assert "<end_of_turn>" not in tok.all_special_tokens  # what the converter reads as special: nothing
    (hit,) = hva924(folder)
    assert hit.severity.value == "warning" and hit.location.token_id == i
    assert f"control-looking token: {i:6d} '<end_of_turn>' was not control-type" in hit.message
    assert "USER_DEFINED" in hit.message


def test_end_of_turn_marked_special_is_quiet(tmp_path: Path) -> None:
    folder = with_tokens(tmp_path / "m", special=["<end_of_turn>"])
    report = audit(folder, target_kind="gguf")
    assert not [f for f in report.findings if f.code == "HVA924"] and "HVA924" in report.rules_run


def test_pipe_marker_the_converter_types_control_itself_is_quiet(tmp_path: Path) -> None:
    # "<|im_end|>" looks special to does_token_look_special: the converter writes it CONTROL, llama.cpp is silent
    assert not hva924(with_tokens(tmp_path / "m", normal=["<|im_end|>"]))


def test_without_target_the_rule_does_not_run(tmp_path: Path) -> None:
    folder = with_tokens(tmp_path / "m", normal=["<end_of_turn>"])
    assert "HVA924" not in audit(folder).rules_run

"""Inputs that once crashed the audit (found by the hostile-input battery, hypothesis or the atheris
fuzzers in fuzz/), replayed through the fuzz harness: a report or one AuditError line, nothing else.

Add a crash: copy libFuzzer's ``fuzz/crashes/<target>-crash-*`` into ``tests/facts/regressions/<target>/``
under a name that says what it is.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent / "regressions"
ROOT = HERE.parent.parent.parent
TARGETS = {"headers": "model.safetensors", "config": "config.json",
           "tokenizer_config": "tokenizer_config.json", "tokenizer": "tokenizer.json"}
STRUCTURED = ("tokenizer_library",)  # fuzz_tokenizer_library.py: bytes steer a whole tokenizer, then a scan
INPUTS = sorted(p for p in HERE.glob("*/*") if p.is_file() and p.parent.name in (*TARGETS, *STRUCTURED))


def _harness():
    spec = importlib.util.spec_from_file_location("fuzz_harness", ROOT / "fuzz" / "_harness.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.fixture(scope="module")
def harness():
    return _harness()


def test_every_target_has_regressions():
    assert {p.parent.name for p in INPUTS} >= {"headers", "config", "tokenizer_config", "tokenizer_library"}


@pytest.mark.parametrize("path", INPUTS, ids=[f"{p.parent.name}/{p.name}" for p in INPUTS])
def test_former_crash_is_handled(path: Path, harness):
    if path.parent.name == "tokenizer_library":  # panics and aborts of the tokenizers library
        harness.check_tokenizer_library(harness.prepare("tokenizer.json"), path.read_bytes())
        return
    target = TARGETS[path.parent.name]
    folder = harness.prepare(target)
    data = path.read_bytes()
    if target == "model.safetensors":
        data = harness.with_header_length(data)  # as fuzz_headers.py feeds it
    harness.check(folder, target, data)

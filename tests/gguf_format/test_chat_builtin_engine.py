"""HVA927 (``check HF_DIR --target gguf``) and HVA928 (``check model.gguf``): what llama.cpp's built-in
chat-template engine makes of the template the GGUF carries, against llama.cpp's own answers
(``chat_templates`` in tests/data/gguf_verdicts.json: ``llama_chat_apply_template`` of llama-cpp-python 0.3.36
for each test template, recorded by scripts/gguf_verdicts.py where llama_cpp was importable).

Healthy families (Llama-3, ChatML/Qwen, Gemma, Mistral) are recognised and stay quiet; a template with none
of the engine's markers is refused; one that contains ``<|im_start|>`` with another layout is written as
ChatML silently.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("gguf")
pytest.importorskip("sentencepiece")

from gguf_builders import TEMPLATE_EXPECT, hf_checkpoint, train_spm, write_gguf  # noqa: E402

from hf_vocab_audit.audit import audit, audit_gguf  # noqa: E402
from hf_vocab_audit.facts.llama_cpp_chat import CHATML, UNKNOWN, builtin_chatml, detect, llama_cpp_apply  # noqa: E402
from hf_vocab_audit.rules.gguf_chat import MESSAGES  # noqa: E402

VERDICTS = json.loads((Path(__file__).resolve().parent.parent / "data" / "gguf_verdicts.json").read_text("utf-8"))
TEMPLATES = VERDICTS["chat_templates"]
NAMES = sorted(TEMPLATE_EXPECT)
SAYS = {"refused": "recognises none of its formats", "chatml": "takes this chat template for ChatML"}


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("chat")
    return hf_checkpoint(root / "base", train_spm(root))


def with_template(base: Path, tmp_path: Path, template: str | None) -> Path:
    folder = tmp_path / "m"
    shutil.copytree(base, folder)
    path = folder / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    if template is not None:
        config["chat_template"] = template
    path.write_text(json.dumps(config), encoding="utf-8")
    return folder


def found(report, code: str) -> list:
    return [f for f in report.findings if f.code == code]


def test_every_template_has_a_verdict() -> None:
    assert set(TEMPLATES) == set(TEMPLATE_EXPECT)


@pytest.mark.parametrize("name", NAMES)
def test_target_gguf(base: Path, tmp_path: Path, name: str) -> None:
    hits = found(audit(with_template(base, tmp_path, TEMPLATES[name]["template"]), target_kind="gguf"), "HVA927")
    expect = TEMPLATE_EXPECT[name]
    if expect == "quiet":
        assert not hits, hits
    else:
        (hit,) = hits
        assert SAYS[expect] in hit.message and hit.location.file == "tokenizer_config.json"


@pytest.mark.parametrize("name", NAMES)
def test_gguf_file(tmp_path: Path, name: str) -> None:
    report = audit_gguf(write_gguf(tmp_path / "m.gguf", chat_template=TEMPLATES[name]["template"]))
    hits = found(report, "HVA928")
    expect = TEMPLATE_EXPECT[name]
    assert bool(hits) == (expect != "quiet"), hits
    if hits:
        assert SAYS[expect] in hits[0].message and hits[0].location.key == "tokenizer.chat_template"


def test_plain_check_and_no_template_stay_quiet(base: Path, tmp_path: Path) -> None:
    """No work for a plain check (HVA927 is a --target gguf prediction); a base model without a template is not
    a chat model."""
    folder = with_template(base, tmp_path, TEMPLATES["alpaca_style"]["template"])
    assert not found(audit(folder), "HVA927")
    assert not found(audit(base, target_kind="gguf"), "HVA927")


@pytest.mark.parametrize("name", [n for n in NAMES if "llama_cpp" in TEMPLATES[n]])
def test_table_agrees_with_llama_cpp(name: str) -> None:
    """The detection table (used where llama_cpp is not installed) refuses what llama.cpp refused, and its
    ChatML is what llama.cpp wrote."""
    got, fmt = TEMPLATES[name]["llama_cpp"], detect(TEMPLATES[name]["template"])
    assert (got["result"] < 0) == (fmt == UNKNOWN)
    assert (got["result"] < 0) == (TEMPLATE_EXPECT[name] == "refused")
    if fmt == CHATML:
        assert got["text"] == builtin_chatml([dict(m) for m in MESSAGES], False)


def test_the_table_decides_the_expectations() -> None:
    """Without llama.cpp the table alone gives each expectation: refused <=> unknown, misread <=> ChatML."""
    for name in NAMES:
        fmt = detect(TEMPLATES[name]["template"])
        assert (fmt == UNKNOWN) == (TEMPLATE_EXPECT[name] == "refused"), name
        if TEMPLATE_EXPECT[name] == "chatml":
            assert fmt == CHATML


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_llama_cpp_itself(name: str) -> None:
    """Where llama-cpp-python is installed: llama.cpp still answers as recorded."""
    pytest.importorskip("llama_cpp")
    applied = llama_cpp_apply(TEMPLATES[name]["template"], [dict(m) for m in MESSAGES], False)
    assert applied is not None
    want = TEMPLATES[name].get("llama_cpp")
    if want is None:
        pytest.skip("no llama.cpp verdict was recorded for this template")
    assert (applied.result, applied.text) == (want["result"], want["text"])

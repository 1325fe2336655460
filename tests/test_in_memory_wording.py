"""A live pair's report names the objects, never files or a folder it does not have (issue 38).

``audit(model=..., tokenizer=...)`` and the guard's preflight in a Trainer audit objects in memory: there is no
``tokenizer_config.json`` to edit and no ``DIR`` to run ``check --fix`` on. Locations, messages, causes and fix
advice name the objects and the calls to make on them, in every format a user reads.
"""

from __future__ import annotations

import json
import re

import pytest
from memory_cases import CASES, Case

from hf_vocab_audit import audit
from hf_vocab_audit.formats import render

# What only a folder has: its files by name, the command that rewrites them, a folder placeholder.
FOLDER_TEXT = re.compile(r"--fix|check DIR|\bDIR\b|(?<![\w.])(?:tokenizer_config|tokenizer|special_tokens_map|"
                         r"added_tokens|config|generation_config)\.json|chat_template\.jinja")
RULE_DOCS = re.compile(r"\*\*Why it matters:\*\*.*")  # markdown's rule explanation: general facts, not advice


def _reports(case: Case) -> dict[str, str]:
    model, tok = case.build()
    report = audit(model=model, tokenizer=tok)
    return {fmt: render(report, fmt) for fmt in ("text", "json", "html", "markdown")}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_live_pair_report_names_no_file_and_no_folder_command(case: Case):
    for fmt, text in _reports(case).items():
        if fmt == "markdown":
            text = RULE_DOCS.sub("", text)
        leaks = sorted({m.group(0) for m in FOLDER_TEXT.finditer(text)})
        assert not leaks, f"{case.name} {fmt} report names {leaks}"


def _case(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def test_fix_advice_is_the_call_on_the_objects():
    findings = {f["code"]: f for f in json.loads(_reports(_case("add-special-tokens-no-resize"))["json"])["findings"]}
    assert "`model.resize_token_embeddings(len(tokenizer))`" in findings["HVA101"]["hint"]
    assert "fix" not in findings["HVA101"] or findings["HVA101"]["fix"] is None  # no folder to apply edits to
    pad = json.loads(_reports(_case("no-pad-token"))["json"])["findings"]
    hint = next(f["hint"] for f in pad if f["code"] == "HVA203")
    assert "tokenizer.add_special_tokens({'pad_token': '<pad>'})" in hint
    assert "model.config.pad_token_id = tokenizer.pad_token_id" in hint
    ids = json.loads(_reports(_case("special-ids-out-of-range"))["json"])
    by_key = {f["location"]["key"]: f for f in ids["findings"] if f["code"] == "HVA201"}
    assert by_key["eos_token_id"]["location"]["file"] == "<model>.config"
    assert by_key["eos_token_id"]["message"].startswith("model.config eos_token_id = [2, 200]")
    assert "`model.config.eos_token_id = tokenizer.eos_token_id`" in by_key["eos_token_id"]["hint"]
    assert "`model.generation_config.pad_token_id = tokenizer.pad_token_id`" in by_key["pad_token_id"]["hint"]
    causes = render(audit(model=_case("config-vocab-size-128").build()[0],
                          tokenizer=_case("config-vocab-size-128").build()[1]), "text")
    assert "CAUSE: model.config.vocab_size (128) differs from the 104 embedding rows" in causes


def test_a_saved_folder_keeps_the_folder_advice(tmp_path):
    """The control: the same pair saved is a folder, and its report does name its files and `--fix`."""
    model, tok = _case("add-special-tokens-no-resize").build()
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    text = render(audit(tmp_path), "text")
    assert "check DIR --fix" in text and "--fix: grow the vocabulary matrices" in text


def test_the_guard_preflight_in_a_training_script_names_the_objects():
    """The Trainer callback's preflight prints the same memory report: the calls to make, not files."""
    import io

    from builders import new_model, new_tokenizer

    import hf_vocab_audit as hva

    model, tok = new_model("llama", 104), new_tokenizer(104)
    tok.add_special_tokens({"pad_token": "<newpad>"})  # the script's bug: no resize
    printed = io.StringIO()
    with pytest.raises(hva.PreflightError):
        hva.guard(model, tok, evidence_dir=False).preflight(stream=printed)
    text = printed.getvalue()
    assert "HVA101" in text and "`model.resize_token_embeddings(len(tokenizer))`" in text
    leaks = sorted({m.group(0) for m in FOLDER_TEXT.finditer(text)})
    assert not leaks, leaks

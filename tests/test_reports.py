"""The report contract in reports/: the JSON schema, the examples, and the CLI reference are current."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import jsonschema
import pytest
from builders import CHATML, checkpoint

from hf_vocab_audit import audit
from hf_vocab_audit.formats import render

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "reports" / "schema" / "report.schema.json").read_text())


def _regenerate_module():
    spec = importlib.util.spec_from_file_location("regenerate", ROOT / "scripts" / "regenerate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def validate(data):
    jsonschema.Draft202012Validator(SCHEMA).validate(data)


def test_schema_is_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("name", ["healthy-padded-qwen2.json", "broken-llama-chatml.json"])
def test_examples_match_schema(name):
    validate(json.loads((ROOT / "reports" / "examples" / name).read_text()))


def test_examples_are_current():
    for path, text in _regenerate_module().example_reports().items():
        assert path.read_text() == text, f"stale {path.name}: run `python scripts/regenerate.py`"


def test_cli_reference_is_current():
    assert (ROOT / "cli" / "reference.md").read_text() == _regenerate_module().cli_reference(), (
        "stale cli/reference.md: run `python scripts/regenerate.py`"
    )


def test_readme_rule_table_is_current():
    from hf_vocab_audit.rules import all_rules

    text = (ROOT / "README.md").read_text()
    assert text == _regenerate_module().readme(), "stale README rule table: run `python scripts/regenerate.py`"
    for r in all_rules():
        assert f"| {r.code} | {r.name} | {r.severity.value} |" in text


def test_docs_generated_parts_are_current():
    """The rule table of docs/reference.md, the settings table of docs/ci-gate.md, the module table of
    docs/architecture.md and docs/cli-reference.md are what scripts/regenerate.py builds now."""
    from hf_vocab_audit.core.options import SETTINGS_KEYS

    pages = _regenerate_module().docs_pages()
    for path, text in pages.items():
        assert path.read_text() == text, f"stale {path.relative_to(ROOT)}: run `python scripts/regenerate.py`"
    assert "| HVA101 | token-id-beyond-embedding | error |" in pages[ROOT / "docs" / "reference.md"]
    assert all(f"| `{o.key}` |" in pages[ROOT / "docs" / "ci-gate.md"] for o in SETTINGS_KEYS)
    modules = pages[ROOT / "docs" / "architecture.md"]
    package = ROOT / "hf_vocab_audit"
    for module in package.rglob("*.py"):
        assert f"| `{module.relative_to(package).as_posix()}` |" in modules
    assert "| `gate.py` | The CI gate:" in modules  # the first sentence of the module's docstring


def test_live_reports_match_schema(tmp_path):
    checkpoint(tmp_path / "a", "llama", 104, added_special=["<|im_start|>"], chat_template=CHATML)
    checkpoint(tmp_path / "b", "bert-cls", 104)
    for folder in (tmp_path / "a", tmp_path / "b"):
        data = json.loads(render(audit(folder), "json"))
        validate(data)


def test_schema_rejects_a_malformed_finding():
    data = json.loads((ROOT / "reports" / "examples" / "broken-llama-chatml.json").read_text())
    data["findings"][0]["severity"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        validate(data)

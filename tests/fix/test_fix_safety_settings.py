"""The settings file can mark a rule's fix safe or unsafe (ruff's ``extend-safe-fixes`` / ``extend-unsafe-fixes``):
``--fix`` applies a fix marked safe without ``--unsafe-fixes``, and leaves one marked unsafe without it."""

from __future__ import annotations

import json

import pytest
from builders import edit_json, make_model, make_tokenizer

from hf_vocab_audit.core.fixes import Applicability
from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.settings import Settings, fix_safety, load_settings

from .fixkit import broken


def _eos_disagreement(folder):
    """generation_config's eos is not the tokenizer's: HVA202, whose fix (sync the ids) is unsafe."""
    make_model(folder, "llama", 104, tie_word_embeddings=False)
    make_tokenizer(folder, 104)
    edit_json(folder / "generation_config.json", eos_token_id=7)
    return folder


def test_extend_safe_fixes_applies_an_unsafe_fix_without_the_flag(tmp_path, guard_input, run_cli):
    src = _eos_disagreement(tmp_path / "m")
    settings = tmp_path / "gate.toml"  # the project's settings: a checkpoint cannot relax --fix for itself
    settings.write_text('extend-safe-fixes = ["HVA202"]\n')
    guard_input(src)
    code, out, err = run_cli("check", src, "--fix", "--output", tmp_path / "out", "--format", "json",
                             "--config", settings)
    assert code == 0, err
    assert [(f["code"], f["applicability"]) for f in json.loads(out)["fixes"]] == [("HVA202", "safe")]
    assert json.loads((tmp_path / "out" / "generation_config.json").read_text())["eos_token_id"] == 2
    # without the key the same fix waits for --unsafe-fixes
    (tmp_path / "plain").mkdir()
    plain = _eos_disagreement(tmp_path / "plain" / "m")
    code, out, _err = run_cli("check", plain, "--fix", "--output", tmp_path / "plain-out", "--format", "json")
    assert json.loads(out)["fixes"] == [] and [u["code"] for u in json.loads(out)["fix"]["unfixed"]] == ["HVA202"]


def test_extend_unsafe_fixes_holds_a_safe_fix_back(tmp_path, guard_input, run_cli):
    src = broken(tmp_path / "m", tie_word_embeddings=False)
    (src / "hf-vocab-audit.toml").write_text('extend-unsafe-fixes = ["token-id-beyond-embedding", "HVA102"]\n')
    guard_input(src)
    code, out, _err = run_cli("check", src, "--fix", "--output", tmp_path / "out", "--format", "json")
    report = json.loads(out)
    assert code == 1 and report["fixes"] == []  # the grow is held back: the output still fails
    assert {u["code"] for u in report["fix"]["unfixed"]} >= {"HVA101", "HVA102"}
    code, out, _err = run_cli("check", src, "--fix", "--output", tmp_path / "out2", "--unsafe-fixes",
                              "--format", "json")
    assert code == 0 and {(f["code"], f["applicability"]) for f in json.loads(out)["fixes"]} == {
        ("HVA101", "unsafe"), ("HVA102", "unsafe")}


def test_a_rule_in_both_lists_stays_unsafe_and_display_only_stays() -> None:
    decide = fix_safety(Settings(extend_safe_fixes=("HVA2",), extend_unsafe_fixes=("HVA202",)))
    assert decide is not None
    assert decide("HVA202", Applicability.SAFE) is Applicability.UNSAFE
    assert decide("HVA201", Applicability.UNSAFE) is Applicability.SAFE
    assert decide("HVA101", Applicability.UNSAFE) is Applicability.UNSAFE  # not named: as declared
    assert decide("HVA203", Applicability.DISPLAY_ONLY) is Applicability.DISPLAY_ONLY
    assert fix_safety(Settings()) is None


@pytest.mark.parametrize(("text", "message"), [
    ('extend-safe-fixes = "HVA202"', "extend-safe-fixes: must be a list of rule codes, prefixes or names, not a string"),
    ('extend-unsafe-fixes = ["HVA999"]', "extend-unsafe-fixes: unknown rule code or name 'HVA999'"),
])
def test_bad_fix_safety_keys_name_the_key(tmp_path, text, message) -> None:
    (tmp_path / "gate.toml").write_text(text + "\n")
    with pytest.raises(AuditError, match=message):
        load_settings(tmp_path, cwd=tmp_path, config=tmp_path / "gate.toml")


def test_a_checkpoints_own_file_cannot_make_a_fix_safe(tmp_path) -> None:
    """A downloaded checkpoint brings its hf-vocab-audit.toml: it may hold a fix back, never let one through."""
    (tmp_path / "hf-vocab-audit.toml").write_text('extend-safe-fixes = ["HVA202"]\n')
    settings = load_settings(tmp_path, cwd=tmp_path)
    assert settings.extend_safe_fixes == () and settings.ignored[0].keys == ("extend-safe-fixes",)
    (tmp_path / "hf-vocab-audit.toml").write_text('extend-unsafe-fixes = ["HVA102"]\n')
    settings = load_settings(tmp_path, cwd=tmp_path)
    assert settings.extend_unsafe_fixes == ("HVA102",) and settings.ignored == ()
    # added to the operator's list, never replacing it
    (tmp_path / "gate.toml").write_text('extend-unsafe-fixes = ["HVA101"]\n')
    assert load_settings(tmp_path, cwd=tmp_path, config=tmp_path / "gate.toml").extend_unsafe_fixes == ("HVA101",)
    # run from inside the checkpoint, a file there is still the checkpoint's
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "hf-vocab-audit.toml").write_text('extend-safe-fixes = ["HVA202"]\n')
    settings = load_settings(tmp_path, cwd=tmp_path / "sub")
    assert settings.extend_safe_fixes == () and settings.extend_unsafe_fixes == ("HVA102",)
    assert [(i.file, i.keys) for i in settings.ignored] == [("sub/hf-vocab-audit.toml", ("extend-safe-fixes",))]

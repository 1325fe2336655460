"""The rule registry loads rule modules by scope: each module's line in ``RULE_MODULES`` states the scopes of the
rules it registers, and a plain ``check DIR`` imports only the static ones (the gate's speed)."""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict

from malformed import tiny_checkpoint

from hf_vocab_audit.core.scope import Scope
from hf_vocab_audit.rules import registry
from hf_vocab_audit.rules.registry import RULE_MODULES, all_rules, get_rule, selected


def test_every_module_declares_exactly_the_scopes_of_its_rules() -> None:
    held: dict[str, set[Scope]] = defaultdict(set)
    for r in all_rules():
        module = r.check.__module__
        assert module.startswith("hf_vocab_audit.rules."), (r.code, module)
        held[module.rsplit(".", 1)[1]].add(r.scope)
    assert {name: frozenset(scopes) for name, scopes in held.items()} == RULE_MODULES


def test_selected_by_scope_returns_only_those_scopes_and_the_same_rules_as_all() -> None:
    everything = selected()
    for scope in Scope:
        some = selected(scopes=(scope,))
        assert some == [r for r in everything if r.scope is scope]
    assert [r.code for r in selected(["HVA1"], scopes=(Scope.STATIC,))] == \
        [r.code for r in everything if r.code.startswith("HVA1") and r.scope is Scope.STATIC]


def test_get_rule_finds_a_rule_whose_module_is_not_loaded_yet() -> None:
    code = "import sys; from hf_vocab_audit.rules import get_rule; print(get_rule('HVA923').name, get_rule('hva923').code)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["gguf-convert-unknown-pre-tokenizer", "HVA923"]
    assert get_rule("no-such-rule") is None and get_rule("HVA923") is registry.RULES["HVA923"]


def test_a_plain_check_imports_only_the_static_rule_modules(tmp_path) -> None:
    """`check DIR` without --dataset/--target/--base/--draft/--weights never imports the other scopes' rules, nor
    the facts modules they read; the report still counts every static rule it set out to run."""
    folder = tiny_checkpoint(tmp_path / "m")
    code = (
        "import sys, json\n"
        "from hf_vocab_audit.audit import audit\n"
        f"report = audit({str(folder)!r})\n"
        "from hf_vocab_audit.rules.registry import RULE_MODULES\n"
        "mods = sorted(n for n in RULE_MODULES if 'hf_vocab_audit.rules.' + n in sys.modules)\n"
        "print(json.dumps([mods, report.coverage.rules_selected, 'hf_vocab_audit.facts.targets' in sys.modules,"
        " 'hf_vocab_audit.dataset.engines' in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    import json

    mods, counted, targets, engines = json.loads(out.strip().splitlines()[-1])
    static = sorted(n for n, scopes in RULE_MODULES.items() if Scope.STATIC in scopes)
    assert mods == static
    assert counted == sum(1 for r in all_rules() if r.scope is Scope.STATIC)
    assert not targets and not engines

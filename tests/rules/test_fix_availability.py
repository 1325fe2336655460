"""Every rule declares whether its findings can carry a fix (``@rule(..., fix=...)``, ruff's FIX_AVAILABILITY),
and the declaration is true: a rule that builds a :class:`Fix` says so, a rule that says so builds one, and a
rule declared ``always`` offers a fix on every finding it lists."""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap

from builders import edit_json, make_model, make_tokenizer

from hf_vocab_audit import audit
from hf_vocab_audit.core.fixes import FixAvailability
from hf_vocab_audit.rules import all_rules


def _builds_fix(module_tree: ast.Module, func: ast.FunctionDef) -> bool:
    """Whether ``func`` constructs a ``Fix(...)``, itself or through the module's own helpers it calls."""
    helpers = {n.name: n for n in module_tree.body if isinstance(n, ast.FunctionDef)}
    seen: set[str] = set()
    todo = [func]
    while todo:
        node = todo.pop()
        for call in (n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)):
            if call.func.id == "Fix":
                return True
            if call.func.id in helpers and call.func.id not in seen:
                seen.add(call.func.id)
                todo.append(helpers[call.func.id])
    return False


def test_a_rule_builds_a_fix_exactly_when_it_declares_one() -> None:
    wrong = []
    trees: dict[str, ast.Module] = {}
    for r in all_rules():
        module = sys.modules[r.check.__module__]
        tree = trees.setdefault(module.__name__, ast.parse(inspect.getsource(module)))
        func = ast.parse(textwrap.dedent(inspect.getsource(r.check))).body[0]
        assert isinstance(func, ast.FunctionDef)
        builds = _builds_fix(tree, func)
        if builds != (r.fix_availability is not FixAvailability.NEVER):
            wrong.append(f"{r.code}: declared {r.fix_availability.value}, {'builds' if builds else 'builds no'} Fix")
    assert not wrong, wrong


def test_findings_agree_with_the_declarations(tmp_path) -> None:
    """Broken checkpoints that make the fixable rules fire: a fix only from a rule that declares one, and one on
    every finding of a rule declared ``always``."""
    broken = tmp_path / "broken"
    make_model(broken, "llama", 104, tie_word_embeddings=False)
    make_tokenizer(broken, 104, added_special=["<|im_start|>", "<|im_end|>"])
    edit_json(broken / "generation_config.json", eos_token_id=500)
    padded = tmp_path / "padded"
    make_model(padded, "llama", 128, tie_word_embeddings=False)
    make_tokenizer(padded, 100)
    edit_json(padded / "config.json", vocab_size=100)
    rules = {r.code: r for r in all_rules()}
    findings = [*audit(broken).findings, *audit(padded, target_kind="vllm").findings]
    with_fix = {f.code for f in findings if f.fix is not None}
    assert {"HVA101", "HVA102", "HVA103", "HVA201", "HVA950"} <= with_fix  # the corpus reaches them
    for f in findings:
        declared = rules[f.code].fix_availability
        assert f.fix is None or declared is not FixAvailability.NEVER, f.code
        assert f.fix is not None or declared is not FixAvailability.ALWAYS, f.code

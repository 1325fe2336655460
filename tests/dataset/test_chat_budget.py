"""A chat template's work bounded per row and per split (dataset/chat_budget.py, HVA555): hostile templates are
one finding at their row, the rows after it are still scanned, public templates render as transformers renders
them and stay under the budget, and naming the turn of an id renders O(log turns) prefixes."""

from __future__ import annotations

from pathlib import Path

import pytest
from chat_builders import CHATML, chat_checkpoint
from dataset_builders import write_jsonl

from hf_vocab_audit import audit
from hf_vocab_audit.dataset import chat as chat_module
from hf_vocab_audit.dataset import chat_budget, chat_render
from hf_vocab_audit.dataset.chat_budget import RowMeter, SplitSpend, compiled, render_with_spans

# ChatML, except for a conversation whose first turn is "w9": then the template's hostile part runs.
HOSTILE = {
    "doubling": "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"
                "{{ ns.s }}",
    "nested loops": "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}",
    "generated join": "{{ range(99999)|join('x' * 99999) }}",
    "recursive macro": "{% macro f(n) %}{{ f(n) }}{{ f(n) }}{% endmacro %}{{ f(1) }}",
    "repeat": "{{ 'a' * 10 ** 10 }}",
}


def _turns(*pairs):
    return [{"role": r, "content": c} for r, c in pairs]


def _sometimes(hostile: str) -> str:
    return "{% if messages[0]['content'] == 'w9' %}" + hostile + "{% endif %}" + CHATML


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_render_is_one_finding_at_its_row_and_later_rows_are_still_scanned(tmp_path, name, monkeypatch):
    monkeypatch.setattr(chat_budget, "ROW_SECONDS", 0.5)  # the nested loops run until the deadline
    model = chat_checkpoint(tmp_path / "model", _sometimes(HOSTILE[name]), resized=False)  # markers: ids 104, 105
    rows = [{"messages": _turns(("user", w), ("assistant", "w2"))} for w in ("w1", "w9", "w3")]
    report = audit(model, datasets=[write_jsonl(tmp_path / "c.jsonl", rows)], select=["HVA5"])
    over = [f for f in report.findings if f.code == "HVA555"]
    assert len(over) == 1 and "in 1 row(s)" in over[0].message and "row 1 " in over[0].message, over
    assert not [f for f in report.findings if f.code == "HVA550"]  # not "the template refuses the row"
    bad_ids = next(f for f in report.findings if f.code == "HVA501")
    assert "in 2 row(s)" in bad_ids.message and "row 2 position 0" in bad_ids.message  # the row after it


def test_a_healthy_checkpoint_and_template_raise_no_budget_finding(tmp_path):
    model = chat_checkpoint(tmp_path / "model", _sometimes(HOSTILE["doubling"]), resized=True)
    rows = [{"messages": _turns(("user", "w1"), ("assistant", "w2"))}] * 3
    report = audit(model, datasets=[write_jsonl(tmp_path / "c.jsonl", rows)], select=["HVA5"])
    assert not report.findings


def test_memory_error_in_a_render_is_the_budget_finding_not_a_refusal(tmp_path, monkeypatch):
    class Exhausting:
        def render(self, **_):
            raise MemoryError

    monkeypatch.setattr(chat_render, "compiled", lambda template: Exhausting())
    model = chat_checkpoint(tmp_path / "model", CHATML, resized=True)
    rows = [{"messages": _turns(("user", "w1"), ("assistant", "w2"))}]
    report = audit(model, datasets=[write_jsonl(tmp_path / "c.jsonl", rows)], select=["HVA5"])
    assert [f.code for f in report.findings] == ["HVA555"]
    assert "out of memory" in report.findings[0].message


def test_past_the_split_budget_the_rest_is_a_coverage_gap(tmp_path, monkeypatch, run_cli):
    monkeypatch.setattr(chat_budget, "SPLIT_SECONDS", 0.0)
    monkeypatch.setattr(chat_budget, "SPLIT_SECONDS_PER_ROW", 0.0)  # spent after the first row
    model = chat_checkpoint(tmp_path / "model", CHATML, resized=True)
    rows = [{"messages": _turns(("user", "w1"), ("assistant", "w2"))}] * 4
    data = write_jsonl(tmp_path / "c.jsonl", rows)
    code, out, _ = run_cli("check", model, "--dataset", data, "--select", "HVA5")
    assert code == 2 and "3 rows were not rendered" in out, out  # fail closed
    assert run_cli("check", model, "--dataset", data, "--select", "HVA5", "--allow-partial")[0] == 0


def _trl_template(name: str) -> str:
    import trl

    return (Path(trl.__file__).parent / "chat_templates" / f"{name}.jinja").read_text(encoding="utf-8")


def _long_row(turns: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Be brief."}] + [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}: " + "how are you today " * 10}
        for i in range(turns)]


@pytest.mark.parametrize("name", ["llama3", "llama3_training", "qwen3", "qwen3_training", "gemma3",
                                  "gemma3_training", "qwen2_5", "phi3"])
def test_public_templates_render_as_transformers_renders_them_within_the_budget(name):
    """The text (and the generation spans) of TRL's copies of public templates on a 300-turn row are
    transformers' own, rendered without hitting the budget (it would raise)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    template = _trl_template(name)
    chat = _long_row(300)
    mask = "{% generation %}" in template
    expected_texts, expected_spans = render_jinja_template(
        [chat], chat_template=template, return_assistant_tokens_mask=mask, bos_token="<s>", eos_token="</s>")
    spend = SplitSpend()
    with RowMeter(spend, lambda: 0):
        context = dict(messages=chat, tools=None, documents=None, add_generation_prompt=False, bos_token="<s>",
                       eos_token="</s>")
        text, spans = render_with_spans(compiled(template), **context) if mask else \
            (compiled(template).render(**context), [])
    assert text == expected_texts[0]
    assert spans == (list(expected_spans[0]) if mask else [])


def test_naming_the_turn_of_an_id_renders_log_many_prefixes(tmp_path, monkeypatch):
    """A 2,000-turn row: the turn of a late id is found with O(log turns) renders (it used to render every
    prefix: quadratic), and the answer is the one trying every prefix gives."""
    from hf_vocab_audit.dataset.chat_formats import LM, ChatFormat
    from hf_vocab_audit.dataset.chat_render import Renderer, Sequence
    from hf_vocab_audit.facts import gather

    model = chat_checkpoint(tmp_path / "model", CHATML, resized=True)
    tokenizer = gather(model).tokenizer.backend
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"w{i % 100}"} for i in range(2000)]
    r = Renderer(ChatFormat(LM, True, messages="messages"), CHATML, {}, None, None, frozenset())
    seq = Sequence([], None, 0, 0, 0, turns)
    renders = []
    real = chat_module.render_text

    def counted(*args, **kwargs):
        renders.append(len(args[1]))
        return real(*args, **kwargs)

    def tokens(k):
        with RowMeter(SplitSpend(), lambda: 0):
            return len(tokenizer.encode(real(r, turns[:k], None, {})[0], add_special_tokens=False).ids)

    first_of_1500, total = tokens(1500), tokens(2000)  # the first token of turn 1500 (0-based), and the end
    monkeypatch.setattr(chat_module, "render_text", counted)
    assert chat_module.describe_turn(r, seq, first_of_1500, tokenizer) == "turn 1500 (user)"
    assert len(renders) <= 2 * 12  # log2(2000) is 11: every prefix would be 1,501 renders
    renders.clear()
    assert chat_module.describe_turn(r, seq, first_of_1500 - 1, tokenizer) == "turn 1499 (assistant)"
    renders.clear()
    assert chat_module.describe_turn(r, seq, total, tokenizer).startswith("after the last turn")
    assert len(renders) <= 2 * 12


def test_bisection_finds_what_trying_every_prefix_finds_with_refused_prefixes():
    lengths = {1: 5, 2: None, 3: 9, 4: None, 5: None, 6: 20, 7: 21, 8: None}

    def linear(position):
        return next((k for k in range(1, 9) if lengths[k] is not None and lengths[k] > position), None)

    for position in range(-1, 23):
        assert chat_module._first_prefix_past(8, position, lengths.get) == linear(position), position


@pytest.mark.parametrize("name", ["llama3", "llama3_training", "qwen3", "qwen3_training", "gemma3",
                                  "gemma3_training", "qwen2_5", "phi3"])
@pytest.mark.parametrize("generation_prompt", [False, True])
def test_the_plain_environment_renders_what_transformers_renders(name, generation_prompt):
    """The environment a GGUF's template renders in (no transformers import) gives transformers' own text on
    public templates, `{% generation %}` tags, tool calls and the generation prompt included."""
    from transformers.utils.chat_template_utils import render_jinja_template

    template = _trl_template(name)
    chat = _long_row(5)  # ends on a user turn: the templates that check alternation accept both forms
    if not generation_prompt:
        chat.append({"role": "assistant", "content": "done"})
    expected, _ = render_jinja_template([chat], chat_template=template, add_generation_prompt=generation_prompt,
                                        bos_token="<s>", eos_token="</s>")
    with RowMeter(SplitSpend(), lambda: 0):
        text = compiled(template, plain=True).render(messages=chat, tools=None, documents=None,
                                                     add_generation_prompt=generation_prompt, bos_token="<s>",
                                                     eos_token="</s>")
    assert text == expected[0]


def test_the_plain_environment_keeps_transformers_guards():
    """`namespace()` refuses underscore attributes and `raise_exception` raises, as in transformers."""
    from jinja2.exceptions import SecurityError, TemplateError

    with RowMeter(SplitSpend(), lambda: 0):
        with pytest.raises(SecurityError):
            compiled("{% set ns = namespace(_x=1) %}{{ ns._x }}", plain=True).render()
        with pytest.raises(TemplateError, match="no system role"):
            compiled("{{ raise_exception('no system role') }}", plain=True).render()
        assert compiled("{{ {'a': 'é'} | tojson }}", plain=True).render() == '{"a": "é"}'


def test_a_gguf_check_does_not_import_transformers(tmp_path):
    """`check model.gguf` renders its template (HVA928, HVA985) without importing transformers (about a second
    of a check that reads the file's metadata in a fraction of it)."""
    import subprocess
    import sys

    from gguf_builders import base_vocab, write_gguf

    chatml = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
              "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    path = write_gguf(tmp_path / "m.gguf", vocab=base_vocab(), chat_template=chatml)
    code = ("import sys\nfrom hf_vocab_audit.audit import audit_gguf\n"
            f"report = audit_gguf({str(path)!r})\n"
            "print(sorted(report.rules_run), 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "HVA985" in out and out.strip().endswith("False")

"""Hostile catalogue group "chat template work": a checkpoint whose chat template asks for minutes or gigabytes
per row, audited with ``--dataset`` of a small JSON Lines chat file. Each is one HVA555 finding (exit 1) well
inside the catalogue's time and memory limits; a harmless template over a 300-turn row stays inside the
budget (exit 0)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from malformed import TOKENIZER_CONFIG, case, write_json

GROUP = "chat template work"
# The tiny checkpoint's words are a b c d: every rendered token is in range, so only the budget can fail it.
PLAIN = "{% for m in messages %}{{ m['content'] }} {% endfor %}"


def _chat(folder: Path, template: str, rows: list[list[dict[str, str]]], *flags: str) -> list[str]:
    write_json(folder / "tokenizer_config.json", TOKENIZER_CONFIG | {"chat_template": template})
    data = folder.parent / "chat.jsonl"
    data.write_text("".join(json.dumps({"messages": turns}) + "\n" for turns in rows), encoding="utf-8")
    return [str(folder), "--dataset", str(data), *flags]


def _turns(n: int, content: str = "a b") -> list[dict[str, Any]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": content} for i in range(n)]


SHORT = [_turns(2)]


@case(GROUP, exit_codes=(1,))
def chat_template_nested_loops(folder: Path) -> list[str]:
    """10^10 empty iterations: no call, no output, only the loops."""
    return _chat(folder, "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}" + PLAIN,
                 SHORT)


@case(GROUP, exit_codes=(1,))
def chat_template_string_doubling(folder: Path) -> list[str]:
    """A string doubled 64 times: 2^64 characters."""
    return _chat(folder, "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
                         "{% endfor %}{{ ns.s }}" + PLAIN, SHORT)


@case(GROUP, exit_codes=(1,))
def chat_template_join_of_generated_list(folder: Path) -> list[str]:
    """99,999 items joined with a 99,999-character separator: 10 GB in one C call."""
    return _chat(folder, "{{ range(99999)|join('x' * 99999) }}" + PLAIN, SHORT)


@case(GROUP, exit_codes=(1,))
def chat_template_range_10_pow_8_join(folder: Path) -> list[str]:
    return _chat(folder, "{{ range(10**8)|join }}" + PLAIN, SHORT)


@case(GROUP, exit_codes=(1,))
def chat_template_tojson_of_generated_list(folder: Path) -> list[str]:
    """A list of one 99,999-character string doubled 30 times, then serialized."""
    return _chat(folder, "{% set ns = namespace(l=['x' * 99999]) %}{% for i in range(30) %}"
                         "{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|tojson }}" + PLAIN, SHORT)


@case(GROUP, exit_codes=(1,))
def chat_template_repeat_10_pow_10(folder: Path) -> list[str]:
    """A constant a compiler would fold: 10 GB at compile time unless the operator is intercepted."""
    return _chat(folder, "{{ 'a' * 10 ** 10 }}" + PLAIN, SHORT)


@case(GROUP, exit_codes=(1,))
def chat_template_recursive_macro(folder: Path) -> list[str]:
    """A macro that calls itself twice: RecursionError, the budget's finding, not the template's refusal."""
    return _chat(folder, "{% macro f(n) %}{{ f(n) }}{{ f(n) }}{% endmacro %}{{ f(1) }}" + PLAIN, SHORT)


@case(GROUP, exit_codes=(0,))
def chat_template_harmless_over_300_turns(folder: Path) -> list[str]:
    """A normal template over a 300-turn row: inside the budget, audited and passed."""
    return _chat(folder, PLAIN, [_turns(300, "a b c d " * 20)])


@case(GROUP, exit_codes=(1,))
def chat_template_generation_block_per_character(folder: Path) -> list[str]:
    """Assistant-only loss: transformers' tracker joins everything rendered so far at each ``{% generation %}``
    block; one block per character of a 300-turn row is 240,000 joins of up to 240,000 pieces."""
    template = ("{% for m in messages %}{% for c in m['content'] %}{% generation %}{{ c }}{% endgeneration %}"
                "{% endfor %}{% endfor %}")
    return _chat(folder, template, [_turns(300, "a b c d " * 100)], "--assistant-only-loss")


@case(GROUP, exit_codes=(1,))
def chat_template_nested_loops_on_every_row(folder: Path) -> list[str]:
    """Every row at the row budget: after the split's budget the rest is a coverage gap (fail closed), not
    minutes per row."""
    return _chat(folder, "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}" + PLAIN,
                 SHORT * 50)


@case(GROUP, exit_codes=(1,))
def chat_template_nested_loops_under_assistant_only_loss(folder: Path) -> list[str]:
    """TRL renders the template to decide whether to swap it (HVA551's path): that render is budgeted too,
    where it once ran in transformers' unbudgeted sandbox and the audit never ended."""
    return _chat(folder, "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}" + PLAIN,
                 SHORT, "--assistant-only-loss")


@case(GROUP, exit_codes=(1,))
def chat_template_constant_folding_in_a_dead_branch_under_assistant_only_loss(folder: Path) -> list[str]:
    """A constant that transformers' compiler would fold, in a branch no render takes, on TRL's path."""
    return _chat(folder, "{% if false %}{{ 'a' * 10 ** 10 }}{% endif %}" + PLAIN, SHORT, "--assistant-only-loss")

"""Chat rows built to make the dropped-content check (HVA556) do unbounded work: a tool call with tens of
thousands of distinct argument values, all rendered, and ten thousand reasoning turns the template drops.
Each is audited (exit 0 or 1) within the catalogue's memory and time limits."""

from __future__ import annotations

import json
from pathlib import Path

from malformed import TOKENIZER_CONFIG, case, write_json

# Renders every turn's role, content and tool calls (as JSON): nothing is dropped, so every piece is searched.
KEEPS_CALLS = ("{% for m in messages %}{{ m['role'] }} {{ m['content'] }}"
               "{% if m['tool_calls'] %}{{ m['tool_calls'] | tojson }}{% endif %}\n{% endfor %}")


def _rows(folder: Path, rows: list[dict]) -> list[str]:
    write_json(folder / "tokenizer_config.json", TOKENIZER_CONFIG | {"chat_template": KEEPS_CALLS})
    data = folder / "data"
    data.mkdir()
    (data / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return [str(folder), "--dataset", str(data / "train.jsonl"), "--select", "HVA5"]


@case("chat content", exit_codes=(0, 1))
def chat_tool_call_with_80k_distinct_argument_values(folder: Path) -> list[str]:
    """Each value is found near the end of a 700 KB rendered text: unbudgeted, 80,000 searches of it."""
    call = {"type": "function", "function": {"name": "f", "arguments": {"items": [f"v{i:06d}" for i in range(80_000)]}}}
    turns = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "", "tool_calls": [call]}]
    return _rows(folder, [{"messages": turns}] * 3)


@case("chat content", exit_codes=(0, 1))
def chat_10k_reasoning_turns_the_template_drops(folder: Path) -> list[str]:
    """Every turn's reasoning is lost: the finding names four and counts the rest."""
    turns = [{"role": "user", "content": "x"}] + [{"role": "assistant", "content": "a", "reasoning_content": f"r{i}"}
                                                  for i in range(10_000)]
    return _rows(folder, [{"messages": turns}] * 3)

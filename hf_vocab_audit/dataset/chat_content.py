"""What a rendered chat row silently loses: trained content the template drops, and a doubled BOS.

**Dropped content.** A template renders only the fields it knows, in the forms it knows: Llama-3's drops an
assistant turn's ``tool_calls``, Llama-3.1's renders the tool call and drops the ``content`` beside it,
Qwen3's strips the reasoning (``reasoning_content``, or a ``<think>`` block in the content) of turns before
the last user query, DeepSeek-R1's (distills) the ``<think>`` block of every turn, and most drop
``reasoning_content`` altogether. The row trains on an empty or different answer than the data holds, with no
error and a healthy loss (axon-rl/gem#44, THUDM/slime#330, huggingface/trl#6363, unslothai/unsloth#3437). A
template may legitimately reformat what it keeps (tool calls as JSON, trimmed whitespace), so what is checked
is the substance, not the bytes: each trained assistant turn's answer text and reasoning text (stripped), each
tool call's function name, argument names and scalar argument values (raw, or as JSON or Python would escape
them), and each tool's name, must occur in the rendered text. Only rows that carry such a field are looked at
(``tool_calls``, a reasoning field, a ``<think>`` tag, ``tools``): rows of plain turns cost one scan of their
turn keys.

The trained turns are the assistant turns of the completion when the prompt gets no loss (prompt-completion
with completion-only loss, preference, unpaired), else every assistant turn of the conversation (what
assistant-only loss keeps; without it every turn is trained, and the answers are what the data is about).

**Double BOS.** The ids a rendered row starts with are TRL 1.16's own (see ``chat_render.prepare``): for
turn lists ``trl/data_utils.py`` ``_tokenize`` calls ``processing_class.apply_chat_template(input,
tokenize=True)``, which in transformers 5.x tokenizes the rendered text with ``add_special_tokens=False``
(``PreTrainedTokenizerBase.apply_chat_template``), so the template's ``{{ bos_token }}`` is the only BOS
unless the template renders it twice; for strings (prompt-completion, preference and unpaired strings, and
the ``text`` column of ``SFTTrainer._prepare_dataset``'s language-modeling case) ``_tokenize`` calls
``processing_class(text=input)``, special tokens added, so a text that already starts with the BOS string
(rendered by a chat template beforehand: open-r1#462, huggingface/trl#1668) gets a second one from the
tokenizer's post-processor. The check reads the first two ids of each sequence: it fires exactly where
that path yields two BOS, whatever made them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np

REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")  # transformers' aliases (chat_template_utils)
TRAINED_ROLES = ("assistant", "gpt")  # ShareGPT turns keep their roles as written (TRL converts keys only)
MAX_PIECE_CHARS = 100_000  # a piece longer than this is checked by its first and last 1,000 characters
EDGE = 1_000
# Searches per sequence: at least MIN_SEARCHES, else about SEARCH_CHARS characters of text scanned. The data
# decides how many pieces a row holds (a tool call with a million arguments): past the budget the rest of
# the row is taken as present, so a hostile row costs a bounded multiple of its text and never a false alarm.
MIN_SEARCHES = 64
SEARCH_CHARS = 4_000_000
MAX_NAMED = 4  # fields named per row (the report's value); the rest are counted


class _Text:
    """A rendered text and what is left of its search budget."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.left = max(MIN_SEARCHES, SEARCH_CHARS // max(len(text), 1))

    def has(self, piece: str) -> bool:
        piece = piece.strip()
        if not piece or self.left <= 0:
            return True
        self.left -= 1
        if len(piece) > MAX_PIECE_CHARS:
            return piece[:EDGE] in self.text and piece[-EDGE:] in self.text
        return piece in self.text


def _scalars(value: Any, depth: int = 0) -> Iterator[Any]:
    """The keys and scalar leaves of a tool call's arguments (bounded depth: data controls it)."""
    if depth > 8:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if item is None:
                continue  # Arrow structs carry every key of every row, None where a row lacks it
            yield key
            yield from _scalars(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            yield from _scalars(item, depth + 1)
    elif value is not None:
        yield value


def _forms(value: Any) -> tuple[str, ...]:
    """How a template may write a scalar: as it is, as JSON (``tojson``), or as Python's repr."""
    if isinstance(value, bool):
        return ("true", "True") if value else ("false", "False")
    if isinstance(value, (int, float)):
        return (json.dumps(value), str(value))
    text = str(value)
    return (text, json.dumps(text, ensure_ascii=False)[1:-1], json.dumps(text)[1:-1], repr(text)[1:-1])


def _arguments(call: dict[str, Any]) -> Any:
    args = call.get("arguments")
    if isinstance(args, str):
        try:
            return json.loads(args)
        except ValueError:
            return args  # rendered as written by any template that keeps it
    return args


def _function(entry: dict[str, Any]) -> dict[str, Any]:
    """The ``function`` part of a tool call or tool (OpenAI's shape), or the entry itself (flat shape)."""
    inner = entry.get("function")
    return inner if isinstance(inner, dict) else entry


def _tool_call_lost(calls: Any, text: _Text) -> bool:
    seen: set[tuple[str, Any]] = set()  # a value repeated a million times is searched once
    for call in calls if isinstance(calls, list) else [calls]:
        if not isinstance(call, dict):
            continue
        fn = _function(call)
        name = fn.get("name")
        if isinstance(name, str) and not text.has(name):
            return True
        for leaf in _scalars(_arguments(fn)):
            if text.left <= 0:
                return False
            key = (type(leaf).__name__, leaf)
            if key in seen:
                continue
            seen.add(key)
            if not any(text.has(form) for form in _forms(leaf)):
                return True
    return False


def _content_texts(content: Any) -> list[str]:
    """The text of a turn's content: a string, or the ``text`` of its typed parts."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return []


def _split_think(content: str) -> tuple[str, str]:
    """(reasoning, answer) of a content that holds a ``</think>`` tag, as Qwen3's template splits it."""
    head, _, answer = content.rpartition("</think>")
    reasoning = head.split("<think>")[-1] if "<think>" in head else head
    return reasoning, answer


def triggered(turn: Any) -> bool:
    """Whether a turn carries a field some template drops (the only turns worth checking). Written out:
    it runs on every turn of every row, most of which carry none."""
    if type(turn) is not dict:
        return False
    get = turn.get
    if get("tool_calls") or get("reasoning_content") or get("thinking") or get("reasoning"):
        return True
    content = get("content")
    return type(content) is str and "</think>" in content


def lost_fields(turn: dict[str, Any], text: _Text) -> list[str]:
    """The fields of one trained turn whose substance the rendered ``text`` does not hold."""
    lost = []
    reasoning = next((turn[f] for f in REASONING_FIELDS if isinstance(turn.get(f), str) and turn[f].strip()), None)
    if reasoning is not None and not text.has(reasoning):
        lost.append(next(f for f in REASONING_FIELDS if turn.get(f) == reasoning))
    for part in _content_texts(turn.get("content")):
        if "</think>" in part:
            think, answer = _split_think(part)
            if not text.has(think):
                lost.append("<think> block of content")
            part = answer
        if not text.has(part):
            lost.append("content")
    if turn.get("tool_calls") and _tool_call_lost(turn["tool_calls"], text):
        lost.append("tool_calls")
    return lost


def _tool_names(tools: Any) -> list[str]:
    names = []
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict):
            fn = _function(tool)
            if isinstance(fn.get("name"), str):
                names.append(fn["name"])
    return names


def dropped_content(turns: list[Any] | None, first_trained: int, tools: Any, text: str) -> str | None:
    """What the rendered ``text`` of one sequence lost, as "tool_calls (turn 1)"; None when nothing.

    ``first_trained``: the first turn whose tokens get a loss (the completion's first turn, or 0)."""
    if not turns or not text:
        return None
    checked = [k for k in range(first_trained, len(turns)) if triggered(turns[k])]
    if not checked and not tools:
        return None
    lost: list[str] = []
    rendered = _Text(text)
    names = _tool_names(tools)
    if names and not any(rendered.has(n) for n in names):
        lost.append("tools")
    for k in checked:
        if turns[k].get("role") in TRAINED_ROLES:
            lost.extend(f"{field} (turn {k})" for field in lost_fields(turns[k], rendered))
    if not lost:
        return None
    more = f" and {len(lost) - MAX_NAMED} more" if len(lost) > MAX_NAMED else ""
    return ", ".join(lost[:MAX_NAMED]) + more


def double_bos(sequences: list[Any], bos_id: int | None) -> np.ndarray:
    """True for each sequence whose ids start with two BOS (``None`` entries: no sequence)."""
    out = np.zeros(len(sequences), dtype=bool)
    if bos_id is None:
        return out
    for i, ids in enumerate(sequences):
        if ids and ids[0] == bos_id and len(ids) > 1 and ids[1] == bos_id:
            out[i] = True
    return out


def prepended_id(tokenizer: Any) -> int | None:
    """The id the tokenizer's post-processor puts before every text (BOS), or None when it adds none
    before the text (a suffix-only processor, as T5's ``$A </s>``, adds nothing in front)."""
    try:
        plain = tokenizer.encode("a", add_special_tokens=False).ids
        added = tokenizer.encode("a", add_special_tokens=True).ids
    except Exception:  # noqa: BLE001 - a tokenizer that cannot encode one letter adds nothing we can check
        return None
    if len(added) > len(plain) and added[1:1 + len(plain)] == plain:
        return int(added[0])
    return None


def double_bos_texts(tokenizer: Any, texts: list[str], encodings: list[Any]) -> tuple[np.ndarray, int | None]:
    """For a text column tokenized with special tokens: which rows start with two of the BOS the
    post-processor prepends, and that id. Only rows whose text starts with the BOS string are read."""
    out = np.zeros(len(texts), dtype=bool)
    bos_id = prepended_id(tokenizer)
    bos = tokenizer.id_to_token(bos_id) if bos_id is not None else None
    if not bos:
        return out, None
    for i, t in enumerate(texts):
        if t.startswith(bos):
            ids = encodings[i].ids
            out[i] = len(ids) > 1 and ids[0] == bos_id and ids[1] == bos_id
    return out, bos_id


def content_violations(r: Any, names: tuple[str, ...], rendered: list[Any], bos_id: int | None, row_offset: int,
                       n: int) -> Iterator[tuple[str, str, Any]]:
    """(column, check, violation or None) of a chat batch: dropped content per sequence, doubled BOS."""
    from .arrays import row_violation
    from .chat_formats import PREFERENCE, PROMPT_COMPLETION, UNPAIRED
    from .checks import CHAT_CONTENT_DROPPED, DOUBLE_BOS

    # The prompt's turns get no loss where TRL masks the prompt (chat_render.prepare's rule), whatever
    # keep_end truncation later leaves of it.
    masked_prompt = r.fmt.kind in (PREFERENCE, UNPAIRED) or (
        r.fmt.kind == PROMPT_COMPLETION and r.settings.completion_only_loss is not False)
    for name in names:
        seqs = [row.sequences.get(name) for row in rendered]
        lost = [None if s is None or s.turns is None else
                dropped_content(s.turns, s.prompt_turns if masked_prompt else 0, s.tools, s.text) for s in seqs]
        if any(lost):
            yield name, CHAT_CONTENT_DROPPED, row_violation(np.array([x is not None for x in lost], dtype=bool),
                                                             np.array([x or "" for x in lost], dtype=object),
                                                             row_offset, n)
        doubled = double_bos([s.ids if s is not None else None for s in seqs], bos_id)
        if doubled.any():
            yield name, DOUBLE_BOS, row_violation(doubled, np.full(len(seqs), bos_id, dtype=np.int64), row_offset, n,
                                                  position=1)

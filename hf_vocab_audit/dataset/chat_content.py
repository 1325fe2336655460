"""What a rendered chat row silently loses: trained content the template drops, and a doubled BOS.

**Dropped content.** A template renders only the fields it knows, in the forms it knows: Llama-3's drops an
assistant turn's ``tool_calls``, Llama-3.1's renders the tool call and drops the ``content`` beside it,
Qwen3's and DeepSeek-R1's strip the reasoning (``reasoning_content``, or a ``<think>`` block in the content)
of turns before the last user query, and most drop ``reasoning_content`` altogether. The row trains on an
empty or different answer than the data holds, with no error and a healthy loss (axon-rl/gem#44,
THUDM/slime#330, huggingface/trl#6363, unslothai/unsloth#3437). A template may legitimately reformat what it
keeps (tool calls as JSON, trimmed whitespace), so what is checked is the substance, not the bytes: each
trained assistant turn's answer text and reasoning text (stripped), each tool call's function name, argument
names and scalar argument values (raw, or as JSON or Python would escape them), and each tool's name, must
occur in the rendered text. Only rows that carry such a field are looked at (``tool_calls``, a reasoning
field, a ``<think>`` tag, ``tools``): rows of plain turns cost one scan of their turn keys.

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
(rendered by a chat template beforehand, as open-r1#462 and huggingface/trl#1668 did) gets a second one from
the tokenizer's post-processor. The check reads the first two ids of each sequence: it fires exactly where
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


def _present(piece: str, text: str) -> bool:
    piece = piece.strip()
    if not piece:
        return True
    if len(piece) > MAX_PIECE_CHARS:
        return piece[:EDGE] in text and piece[-EDGE:] in text
    return piece in text


def _arguments(call: dict[str, Any]) -> Any:
    args = call.get("arguments")
    if isinstance(args, str):
        try:
            return json.loads(args)
        except ValueError:
            return args  # rendered as written by any template that keeps it
    return args


def _tool_call_lost(calls: Any, text: str) -> bool:
    for call in calls if isinstance(calls, list) else [calls]:
        if not isinstance(call, dict):
            continue
        fn = call.get("function") if isinstance(call.get("function"), dict) else call
        name = fn.get("name")
        if isinstance(name, str) and not _present(name, text):
            return True
        for leaf in _scalars(_arguments(fn)):
            if not any(_present(form, text) for form in _forms(leaf)):
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
    """Whether a turn carries a field some template drops (the only turns worth checking)."""
    if not isinstance(turn, dict):
        return False
    if turn.get("tool_calls") or any(turn.get(f) for f in REASONING_FIELDS):
        return True
    content = turn.get("content")
    return isinstance(content, str) and "</think>" in content


def lost_fields(turn: dict[str, Any], text: str) -> list[str]:
    """The fields of one trained turn whose substance the rendered ``text`` does not hold."""
    lost = []
    reasoning = next((turn[f] for f in REASONING_FIELDS if isinstance(turn.get(f), str) and turn[f].strip()), None)
    if reasoning is not None and not _present(reasoning, text):
        lost.append(next(f for f in REASONING_FIELDS if turn.get(f) == reasoning))
    for part in _content_texts(turn.get("content")):
        if "</think>" in part:
            think, answer = _split_think(part)
            if not _present(think, text):
                lost.append("<think> block of content")
            part = answer
        if not _present(part, text):
            lost.append("content")
    if turn.get("tool_calls") and _tool_call_lost(turn["tool_calls"], text):
        lost.append("tool_calls")
    return lost


def _tool_names(tools: Any) -> list[str]:
    names = []
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict):
            fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
            if isinstance(fn.get("name"), str):
                names.append(fn["name"])
    return names


def dropped_content(turns: list[Any] | None, first_trained: int, tools: Any, text: str) -> str | None:
    """What the rendered ``text`` of one sequence lost, as "tool_calls (turn 1)"; None when nothing.

    ``first_trained``: the first turn whose tokens get a loss (the completion's first turn, or 0)."""
    if not turns or not text:
        return None
    lost: list[str] = []
    names = _tool_names(tools)
    if names and not any(_present(n, text) for n in names):
        lost.append("tools")
    for k in range(first_trained, len(turns)):
        turn = turns[k]
        if not triggered(turn) or turn.get("role") not in TRAINED_ROLES:
            continue
        lost.extend(f"{field} (turn {k})" for field in lost_fields(turn, text))
    return ", ".join(lost) if lost else None


def double_bos(sequences: list[Any], bos_id: int | None) -> np.ndarray:
    """True for each sequence whose ids start with two BOS (``None`` entries: no sequence)."""
    out = np.zeros(len(sequences), dtype=bool)
    if bos_id is None:
        return out
    for i, ids in enumerate(sequences):
        if ids is not None and len(ids) > 1 and ids[0] == bos_id and ids[1] == bos_id:
            out[i] = True
    return out


def prepended_id(tokenizer: Any) -> int | None:
    """The id the tokenizer's post-processor puts before every text (BOS), or None when it adds none."""
    try:
        added = tokenizer.encode("", add_special_tokens=True).ids
    except Exception:  # noqa: BLE001 - a tokenizer that cannot encode the empty string adds nothing we can check
        return None
    return int(added[0]) if added else None


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
    from .checks import CHAT_CONTENT_DROPPED, DOUBLE_BOS

    for name in names:
        seqs = [row.sequences.get(name) for row in rendered]
        lost = [None if s is None or s.turns is None else
                dropped_content(s.turns, s.prompt_turns if s.loss_start > 0 else 0, s.tools, s.text) for s in seqs]
        if any(lost):
            yield name, CHAT_CONTENT_DROPPED, row_violation(np.array([x is not None for x in lost], dtype=bool),
                                                             np.array([x or "" for x in lost], dtype=object),
                                                             row_offset, n)
        doubled = double_bos([s.ids if s is not None else None for s in seqs], bos_id)
        if doubled.any():
            yield name, DOUBLE_BOS, row_violation(doubled, np.full(len(seqs), bos_id, dtype=np.int64), row_offset, n,
                                                  position=1)

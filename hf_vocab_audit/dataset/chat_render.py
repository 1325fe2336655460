"""Rows of TRL's formats rendered and tokenized exactly as TRL's dataset preparation does it.

The rendering is transformers' own (``render_jinja_template``: the same sandboxed Jinja environment,
``raise_exception``, ``{% generation %}`` tracking, the template compiled once and cached), in a sandbox that
counts the template's work against a budget per row and per split (chat_budget.py), called with the
arguments ``apply_chat_template`` passes (the tokenizer's special-token strings, the row's ``tools`` and
``chat_template_kwargs``, the generation prompt after a prompt). Tokenizing is the ``tokenizers`` backend
with ``add_special_tokens=False`` for rendered conversations (``apply_chat_template``) and True for
plain strings (``tokenizer(text)``), after TRL's eos is appended to a string completion. What TRL does
with the ids next (the completion mask from the common prefix, assistant masks, labels, truncation) is in
:func:`prepare`; trl itself is not imported here (chat_trl.py asks it for its training template).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import first_line
from ..facts.tokenizer.bounded_calls import library_call
from .chat_budget import RowMeter, compiled, input_chars, new_key, over_budget_message, render_with_spans, split_spend
from .chat_formats import LM, PREFERENCE, UNPAIRED, ChatFormat

IGNORE = -100


@dataclass(frozen=True)
class ChatSettings:
    """The trainer settings that change what reaches the model, and where they came from."""

    max_length: int | None = None  # None: no truncation (TRL's default is 1024: say it in a config file)
    truncation_mode: str = "keep_start"
    assistant_only_loss: bool = False
    completion_only_loss: bool | None = None  # None: TRL's default (True for prompt-completion)
    packing: bool = False
    source: str = "defaults"


@dataclass(frozen=True)
class Renderer:
    """Everything a worker needs to render a split's rows (picklable: no tokenizer object, no template cache)."""

    fmt: ChatFormat
    template: str | None
    special: dict[str, str]  # the tokenizer's special_tokens_map: the template sees bos_token, eos_token, ...
    eos_token: str | None
    eos_id: int | None
    stop_ids: frozenset[int]  # eos and the template's single-token control strings: what ends a turn
    settings: ChatSettings = field(default_factory=ChatSettings)
    tool_template: str | None = None  # the named "tool_use" template, which transformers picks when tools are given
    template_note: str | None = None  # which template, when not simply the tokenizer's (a processor's own)
    budget_key: str = field(default_factory=new_key, compare=False)  # the split's rendering budget (chat_budget)
    media: Any = None  # chat_media.MediaSpec for a vision split (images/videos columns), else None


@dataclass
class Sequence:
    """One training sequence of a row as TRL builds it (a preference row has two)."""

    ids: list[int]
    mask: list[bool] | None  # the assistant mask (None: every token), before ``loss_start`` applies
    loss_start: int  # tokens before it get no loss (the prompt under completion-only loss)
    prompt_len: int  # tokens of the prompt part (the common prefix; 0 without a prompt)
    prompt_ids_len: int  # tokens of the prompt rendered alone (> prompt_len: the prefix does not hold)
    turns: list[dict[str, Any]] | None  # the conversation rendered (to name turns), None for strings
    prompt_turns: int = 0  # how many of ``turns`` belong to the prompt
    dropped: bool = False  # TRL drops the row after truncation: no token left with a loss
    truncated_from: int = 0  # the length before truncation (0: not truncated)
    tools: Any = None  # what the template saw besides the turns (to render them again turn by turn)
    kwargs: dict[str, Any] = field(default_factory=dict)
    text: str = ""  # the rendered text tokenized (what chat_content checks the turns' fields against)

    @property
    def labels_mask(self) -> list[bool]:
        """True where the token gets a loss after TRL's masks (built only when asked: the checks use the
        compact form)."""
        mask = self.mask if self.mask is not None else [True] * len(self.ids)
        return [False] * min(self.loss_start, len(mask)) + mask[self.loss_start:]

    def any_loss(self) -> bool:
        if self.mask is None:
            return self.loss_start < len(self.ids)
        return any(self.mask[self.loss_start:])


@dataclass
class RenderedRow:
    sequences: dict[str, Sequence]  # sequence name ("messages", "chosen", ...) -> sequence
    error: str | None = None  # the template's (or TRL's) refusal, in one line
    too_long: int = 0  # characters of a rendered text over MAX_TEXT_CHARS: not tokenized (HVA532)
    over_budget: str | None = None  # the render went past the row's budget (chat_budget.py): what it asked for
    not_rendered: bool = False  # the split's rendering budget was spent before this row


def _normalize(conversation: list[Any]) -> list[Any]:
    from transformers.utils import chat_template_utils as ctu

    normalize = getattr(ctu, "_normalize_chat_messages", None)  # transformers 5.x: what apply_chat_template runs
    return normalize(conversation) if normalize is not None else conversation


def _fast_path() -> tuple[Any, Any] | None:
    """transformers' template compiler (cached per template) and its reasoning-field aliasing, when the
    installed version has them: for JSON data (what Arrow rows are) ``render_jinja_template`` reduces to
    them, without the per-row conversions of arbitrary Python objects."""
    from transformers.utils import chat_template_utils as ctu

    compile_template = getattr(ctu, "_compile_jinja_template", None)
    alias = getattr(ctu, "_alias_reasoning_fields", None)
    normalize = getattr(ctu, "_normalize_chat_messages", None)
    if compile_template is None or alias is None or normalize is None:
        return None
    return compile_template, alias


def render_text(r: Renderer, conversation: list[Any], tools: Any, kwargs: dict[str, Any], *,
                generation_prompt: bool = False, mask: bool = False) -> tuple[str, list[tuple[int, int]]]:
    """The template's text for one conversation (and the character spans of ``{% generation %}``).

    The rows are Arrow's Python values (dicts, lists, strings, numbers, None): without a mask the render
    is the compiled template called as ``render_jinja_template`` calls it, after the same None-dropping and
    reasoning-field aliasing; otherwise ``render_jinja_template``'s steps (:func:`_render_jinja`). Either way
    on the budgeted template: call it under a ``chat_budget.RowMeter``."""
    if not conversation:
        raise ValueError("Cannot apply chat template to an empty conversation. Provide at least one message.")
    template = r.tool_template if tools is not None and r.tool_template else r.template
    fast = None if mask else _fast_path()
    if fast is not None and all(type(m) is dict for m in conversation):
        _, alias = fast
        chat = alias([{k: v for k, v in m.items() if v is not None} for m in conversation])
        text = compiled(template).render(messages=chat, tools=tools, documents=None,
                                         add_generation_prompt=generation_prompt, **{**r.special, **kwargs})
        return text, []
    return _render_jinja(template, _normalize(conversation), tools, generation_prompt, mask, {**r.special, **kwargs})


def _render_jinja(template: Any, chat: list[Any], tools: Any, generation_prompt: bool, mask: bool,
                  kwargs: dict[str, Any]) -> tuple[str, list[tuple[int, int]]]:
    """``render_jinja_template`` for one conversation (its conversions of the template's data, its errors),
    on the budgeted template (chat_budget.py)."""
    from transformers.utils import chat_template_utils as ctu

    def plain(value: Any) -> Any:
        convert = getattr(ctu, "_plain_template_data", None)
        return convert(value) if convert is not None else value

    if tools is not None and any(not isinstance(t, dict) for t in tools):
        raise ValueError("Tools should either be a JSON schema, or a callable function with type hints "
                         "and a docstring suitable for auto-conversion to a schema.")
    chat = plain(chat)
    for message in chat:
        if not isinstance(message, dict):
            raise TypeError(f"Chat messages should be dicts, dataclasses or pydantic models, but got {message!r}.")
    alias = getattr(ctu, "_alias_reasoning_fields", None)
    chat = alias(chat) if alias is not None else chat
    context = dict(messages=chat, tools=plain(tools), documents=None, add_generation_prompt=generation_prompt,
                   **plain(kwargs))
    if mask:
        return render_with_spans(compiled(template), **context)
    return compiled(template).render(**context), []


def _mask_from_spans(offsets: Any, spans: list[tuple[int, int]]) -> list[bool]:
    """transformers' assistant mask: a token is in when its characters overlap a generation span."""
    out = [False] * len(offsets)
    k = 0
    for i, (start, end) in enumerate(offsets):
        while k < len(spans) and start >= spans[k][1]:
            k += 1
        if k == len(spans):
            break
        if end > spans[k][0]:
            out[i] = True
    return out


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def extract_prompt(chosen: Any, rejected: Any) -> tuple[Any, Any, Any]:
    """TRL's implicit prompt: the longest common start of chosen and rejected (turns or characters; a
    string's boundary moves back before a space)."""
    idx = 0
    for idx in range(min(len(chosen), len(rejected))):
        if chosen[idx] != rejected[idx]:
            if chosen[idx - 1] == " ":
                idx -= 1
            break
    return chosen[:idx], chosen[idx:], rejected[idx:]


@dataclass
class _Job:
    """One sequence to tokenize: the prompt alone (may be None) and the whole text."""

    row: int
    name: str
    prompt_text: str | None
    full_text: str
    spans: list[tuple[int, int]] | None
    turns: list[dict[str, Any]] | None
    prompt_turns: int
    tools: Any = None
    kwargs: dict[str, Any] = field(default_factory=dict)


def to_chatml(turns: Any) -> Any:
    """TRL's ``maybe_convert_to_chatml`` on one conversation: ``from`` becomes ``role`` and ``value``
    ``content`` (moved to the end of each turn, as its pop-and-set does); the roles themselves are kept."""
    if not isinstance(turns, list):
        return turns
    out = []
    for turn in turns:
        if isinstance(turn, dict):
            turn = dict(turn)
            if "from" in turn:
                turn["role"] = turn.pop("from")
            if "value" in turn:
                turn["content"] = turn.pop("value")
        out.append(turn)
    return out


def _conversation_jobs(r: Renderer, i: int, row: dict[str, Any], tools: Any, kwargs: dict[str, Any]) -> list[_Job]:
    fmt, s = r.fmt, r.settings
    if fmt.kind == LM:
        turns = row[fmt.messages or "messages"]
        if fmt.sharegpt:
            turns = to_chatml(turns)
        text, spans = render_text(r, turns, tools, kwargs, mask=s.assistant_only_loss)
        return [_Job(i, fmt.messages or "messages", None, text, spans if s.assistant_only_loss else None, turns, 0)]
    if fmt.kind == PREFERENCE:
        if fmt.implicit_prompt:
            prompt, chosen, rejected = extract_prompt(row["chosen"], row["rejected"])
        else:
            prompt, chosen, rejected = row["prompt"], row["chosen"], row["rejected"]
        prompt_text, _ = render_text(r, prompt, tools, kwargs, generation_prompt=True)
        jobs = []
        for name, completion in (("chosen", chosen), ("rejected", rejected)):
            text, _ = render_text(r, prompt + completion, tools, kwargs)
            jobs.append(_Job(i, name, prompt_text, text, None, prompt + completion, len(prompt)))
        return jobs
    prompt, completion = row["prompt"], row["completion"]
    mask = s.assistant_only_loss and fmt.kind != UNPAIRED
    prompt_text, _ = render_text(r, prompt, tools, kwargs, generation_prompt=True)
    text, spans = render_text(r, prompt + completion, tools, kwargs, mask=mask)
    return [_Job(i, "completion", prompt_text, text, spans if mask else None, prompt + completion, len(prompt))]


def _string_jobs(r: Renderer, i: int, row: dict[str, Any]) -> list[_Job]:
    """Plain strings: TRL appends eos to each completion that does not end with it, then tokenizes."""
    eos = r.eos_token or ""

    def with_eos(text: str) -> str:
        return text if text.endswith(eos) else text + eos

    fmt = r.fmt
    if fmt.kind == PREFERENCE:
        if fmt.implicit_prompt:
            prompt, chosen, rejected = extract_prompt(row["chosen"], row["rejected"])
        else:
            prompt, chosen, rejected = row["prompt"], row["chosen"], row["rejected"]
        return [_Job(i, name, prompt, prompt + with_eos(c), None, None, 0)
                for name, c in (("chosen", chosen), ("rejected", rejected))]
    return [_Job(i, "completion", row["prompt"], row["prompt"] + with_eos(row["completion"]), None, None, 0)]


def _tools(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else _decoded(value)


def _decoded(value: Any) -> Any:
    """A list whose items are JSON texts (``datasets``' Json feature in Arrow) as the decoded values the
    trainer gets from the dataset."""
    if isinstance(value, list) and any(isinstance(v, str) for v in value):
        return [json.loads(v) if isinstance(v, str) else v for v in value]
    return value


def _row_jobs(r: Renderer, i: int, row: dict[str, Any], turn_columns: list[str]) -> list[_Job]:
    """The sequences of one row to tokenize (its renders: raises what the template raises)."""
    fmt = r.fmt
    if fmt.conversational:
        for c in turn_columns:
            row[c] = _decoded(row.get(c))
    if any(row.get(c) is None for c in fmt.columns if c not in (fmt.tools, fmt.template_kwargs)):
        raise ValueError("a column of the row is null")
    if not fmt.conversational:
        return _string_jobs(r, i, row)
    kwargs = row.get(fmt.template_kwargs) if fmt.template_kwargs else None
    tools = _tools(row.get(fmt.tools)) if fmt.tools else None
    extra = dict(kwargs) if isinstance(kwargs, dict) else {}
    jobs = _conversation_jobs(r, i, row, tools, extra)
    for job in jobs:
        job.tools, job.kwargs = tools, extra
    return jobs


def prepare(r: Renderer, rows: list[dict[str, Any]], tokenizer: Any, tokenizer_file: str = "") -> list[RenderedRow]:
    """Each row as TRL's preparation leaves it: ids, which tokens get a loss, the prompt boundary; a row the
    template refuses carries the template's message instead (and no sequence)."""
    fmt, s = r.fmt, r.settings
    out: list[RenderedRow] = []
    jobs: list[_Job] = []
    turn_columns = [c for c in fmt.columns if c not in ("label", fmt.tools, fmt.template_kwargs)]
    spend = split_spend(r.budget_key)
    for i, row in enumerate(rows):
        if not spend.allows():  # the split's rendering budget is spent: the rest is a coverage gap
            out.append(RenderedRow({}, not_rendered=True))
            continue
        try:
            with RowMeter(spend, lambda row=row: sum(input_chars(row.get(c)) for c in turn_columns)):
                row_jobs = _row_jobs(r, i, row, turn_columns)
            jobs.extend(row_jobs)
            spend.chars += sum(len(j.full_text) + len(j.prompt_text or "") for j in row_jobs)
            out.append(RenderedRow({}))
        except Exception as exc:  # noqa: BLE001 - a template raises whatever its author wrote (TemplateError mostly)
            budget = over_budget_message(exc)  # MemoryError, RecursionError: work it asked for, not a refusal
            out.append(RenderedRow({}, over_budget=budget) if budget is not None else
                       RenderedRow({}, f"{exc.__class__.__name__}: {first_line(exc)}"[:300]))
    from ..facts.tokenizer.bounded_calls import MAX_TEXT_CHARS

    kept = []
    for job in jobs:  # never hand the library unbounded work (one 32 MB word aborts it), as for text columns
        chars = max(len(job.full_text), len(job.prompt_text or ""))
        if chars > MAX_TEXT_CHARS:
            out[job.row].too_long = max(out[job.row].too_long, chars)
        else:
            kept.append(job)
    jobs = [j for j in kept if not out[j.row].too_long]
    special = not fmt.conversational  # tokenizer(text) adds bos/eos; apply_chat_template does not
    fast = getattr(tokenizer, "encode_batch_fast", None)
    need_offsets = any(j.spans is not None for j in jobs)
    encode = tokenizer.encode_batch if need_offsets or fast is None else fast
    prompts = [j for j in jobs if j.prompt_text is not None]
    with library_call(tokenizer_file or "the tokenizer", "the tokenizers library failed on a rendered row"):
        full = encode([j.full_text for j in jobs], add_special_tokens=special) if jobs else []
        prompt_enc = iter(encode([j.prompt_text for j in prompts], add_special_tokens=special) if prompts else ())
    completion_loss = s.completion_only_loss is not False  # TRL: None means True for prompt-completion
    for job, enc in zip(jobs, full):
        ids = enc.ids
        prompt_ids = next(prompt_enc).ids if job.prompt_text is not None else []
        prompt_len = _common_prefix(prompt_ids, ids) if job.prompt_text is not None else 0
        mask = _mask_from_spans(enc.offsets, job.spans) if job.spans is not None else None
        masked_prompt = job.prompt_text is not None and (completion_loss or fmt.kind in (PREFERENCE, UNPAIRED))
        seq = Sequence(ids, mask, prompt_len if masked_prompt else 0, prompt_len, len(prompt_ids), job.turns,
                       job.prompt_turns, tools=job.tools, kwargs=job.kwargs, text=job.full_text)
        _truncate(seq, r)
        out[job.row].sequences[job.name] = seq
    return out


def _truncate(seq: Sequence, r: Renderer) -> None:
    """TRL's truncation to ``max_length`` (not when packing), and whether it then drops the row."""
    s = r.settings
    n = s.max_length
    if n is None or s.packing or len(seq.ids) <= n:
        return
    seq.truncated_from = len(seq.ids)
    if r.fmt.kind == PREFERENCE:  # DPOTrainer drops a row whose prompt alone fills max_length (keep_start)
        seq.dropped = s.truncation_mode == "keep_start" and seq.prompt_len >= n
    if s.truncation_mode == "keep_start":
        seq.ids = seq.ids[:n]
        seq.mask = seq.mask[:n] if seq.mask is not None else None
    else:
        gone = len(seq.ids) - n
        seq.ids = seq.ids[gone:]
        seq.mask = seq.mask[gone:] if seq.mask is not None else None
        seq.loss_start = max(0, seq.loss_start - gone)
    if r.fmt.kind != PREFERENCE:
        seq.dropped = not seq.any_loss()

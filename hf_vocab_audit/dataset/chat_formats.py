"""Which of TRL's dataset formats a split holds, recognised from its columns as TRL's trainers recognise them.

TRL reads fixed column names: ``messages`` (conversational language modelling), ``prompt`` + ``completion``
(prompt-completion, as strings or turn lists), ``prompt`` + ``chosen`` + ``rejected`` (preference; without
``prompt`` the shared leading turns are the implicit prompt), ``prompt`` + ``completion`` + a boolean
``label`` (unpaired preference: whether the completion is desirable, not a class id), with an optional
``tools`` column. The scan renders those rows through the chat template (:mod:`.chat_render`) instead of
skipping them as columns with no role.

ShareGPT's ``conversations`` column (turns of ``from``/``value``, roles ``human``/``gpt``/``system``) is
what TRL's SFTTrainer converts itself (``maybe_convert_to_chatml``, when the first row holds such turns): the
keys become ``role``/``content`` and the column ``messages``, but the roles are kept as written, so the
template sees ``human`` and ``gpt``. It is read as language modelling with that same conversion.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from ..errors import AuditError

LM, PROMPT_COMPLETION, PREFERENCE, UNPAIRED = "language-modeling", "prompt-completion", "preference", "unpaired-preference"
FORMATS = (LM, PROMPT_COMPLETION, PREFERENCE, UNPAIRED)
SHAREGPT = "conversations"  # the column TRL's SFTTrainer converts from ShareGPT turns
OFF = "off"  # --chat-format off: treat the columns as before (strings by name, the rest skipped)
TRAINERS = {LM: "sft", PROMPT_COMPLETION: "sft", PREFERENCE: "dpo", UNPAIRED: "kto"}


@dataclass(frozen=True)
class ChatFormat:
    """One split's format: the columns read, whether its turns are message lists, and the extras."""

    kind: str  # one of FORMATS
    conversational: bool  # message lists (rendered through the chat template) or plain strings
    messages: str | None = None  # the language-modeling column (``messages`` unless named by flag)
    implicit_prompt: bool = False  # preference rows without a prompt column
    tools: str | None = None
    template_kwargs: str | None = None  # TRL's per-row ``chat_template_kwargs`` column
    sharegpt: bool = False  # ShareGPT turns (from/value), converted as TRL's SFTTrainer converts them

    @property
    def columns(self) -> tuple[str, ...]:
        """The data columns this format reads (the trainer drops or ignores the others)."""
        if self.kind == LM:
            main: tuple[str, ...] = (self.messages or "messages",)
        elif self.kind == PREFERENCE:
            main = ("chosen", "rejected") if self.implicit_prompt else ("prompt", "chosen", "rejected")
        elif self.kind == UNPAIRED:
            main = ("prompt", "completion", "label")
        else:
            main = ("prompt", "completion")
        return main + tuple(c for c in (self.tools, self.template_kwargs) if c)

    def describe(self) -> str:
        shape = "turn lists" if self.conversational else "strings"
        if self.sharegpt:
            shape = "ShareGPT turns: from/value renamed role/content as TRL's SFTTrainer does, roles kept as written"
        extra = ", implicit prompt" if self.implicit_prompt else ""
        extra += f", tools from {self.tools!r}" if self.tools else ""
        return f"{self.kind} ({', '.join(self.columns)}; {shape}{extra})"


def is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def is_json(t: pa.DataType) -> bool:
    """``datasets``' Json feature (``extension<arrow.json>``): what its JSON builder makes of turns whose
    fields vary in shape (tool calls with arguments); each item is a JSON text, decoded for the trainer."""
    return str(t).startswith("extension<arrow.json")


def is_turns(t: pa.DataType) -> bool:
    """A list of structs with ``role`` and ``content`` fields (or of JSON values): one conversation per row."""
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
        return False
    item = t.value_type
    if is_json(item):
        return True
    if not pa.types.is_struct(item):
        return False
    names = {item.field(i).name for i in range(item.num_fields)}
    return "role" in names and ("content" in names or "tool_calls" in names)


def is_sharegpt(t: pa.DataType) -> bool:
    """A list of structs with ``from`` and ``value`` fields: ShareGPT's turns."""
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)) or not pa.types.is_struct(t.value_type):
        return False
    item = t.value_type
    names = {item.field(i).name for i in range(item.num_fields)}
    return {"from", "value"} <= names


def _text_or_turns(t: pa.DataType | None) -> bool | None:
    """True for turn lists, False for strings, None for anything else (or a missing column)."""
    if t is None:
        return None
    if is_turns(t):
        return True
    return False if is_string(t) else None


def detect(schema: pa.Schema, requested: str | None = None, messages_column: str | None = None) -> ChatFormat | None:
    """The split's format, or None when it holds none of TRL's formats (or ``requested`` is ``off``).

    ``requested`` (``--chat-format``) settles a schema that fits more than one format; a format that the
    columns cannot hold is refused in one line naming the columns."""
    if requested == OFF:
        return None
    if requested is not None and requested not in FORMATS:
        raise AuditError(None, f"--chat-format {requested!r}: use one of {', '.join((*FORMATS, OFF))}")
    types = {f.name: f.type for f in schema}
    tools = "tools" if "tools" in types else None
    kwargs = "chat_template_kwargs" if "chat_template_kwargs" in types else None
    prompt, completion = _text_or_turns(types.get("prompt")), _text_or_turns(types.get("completion"))
    chosen, rejected = _text_or_turns(types.get("chosen")), _text_or_turns(types.get("rejected"))
    label = types.get("label")
    found: list[ChatFormat] = []
    if chosen is not None and chosen == rejected and ("prompt" not in types or prompt == chosen):
        found.append(ChatFormat(PREFERENCE, bool(chosen), implicit_prompt="prompt" not in types, tools=tools,
                                template_kwargs=kwargs))
    if prompt is not None and completion is not None and prompt == completion:
        if label is not None and pa.types.is_boolean(label):
            found.append(ChatFormat(UNPAIRED, bool(prompt), tools=tools, template_kwargs=kwargs))
        else:
            found.append(ChatFormat(PROMPT_COMPLETION, bool(prompt), tools=tools, template_kwargs=kwargs))
    name = messages_column or "messages"
    if messages_column in (None, SHAREGPT) and SHAREGPT in types and is_sharegpt(types[SHAREGPT]):
        found.append(ChatFormat(LM, True, messages=SHAREGPT, tools=tools, template_kwargs=kwargs, sharegpt=True))
    elif name in types and is_turns(types[name]):
        found.append(ChatFormat(LM, True, messages=name, tools=tools, template_kwargs=kwargs))
    elif messages_column is not None:
        raise AuditError(None, f"--messages-column {messages_column!r}: not a column of role/content turns "
                               f"(columns: {', '.join(sorted(types)) or 'none'})")
    if requested is None:
        return found[0] if found else None  # TRL's own order: preference, prompt-completion, messages
    for fmt in found:
        if fmt.kind == requested:
            return fmt
    raise AuditError(None, f"--chat-format {requested}: the columns ({', '.join(sorted(types)) or 'none'}) do not "
                           f"hold that format")

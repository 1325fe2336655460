"""The trainer settings a chat scan renders with: flags first, then a TRL config saved beside the data.

TRL's ``SFTConfig`` / ``DPOConfig`` / ``KTOConfig`` saved as JSON (``args.to_json_string()``) or YAML (a TRL
CLI recipe) under the name ``sft_config.json`` (``.yaml``, ``.yml``; ``dpo_config``, ``kto_config`` for those
trainers) next to a data file, or in a data folder, or named by ``--trl-config``. Only the keys that change
what reaches the model are read: ``max_length``, ``truncation_mode``, ``assistant_only_loss``,
``completion_only_loss``, ``packing``. Without a file or flag nothing is truncated (TRL's own default is
1024 tokens: the scan does not guess which trainer version runs).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import AuditError, first_line
from ..io.jsonfile import MAX_CONFIG_BYTES, read_bytes
from .chat_formats import TRAINERS, ChatFormat
from .chat_render import ChatSettings, Renderer

KEYS = ("max_length", "truncation_mode", "assistant_only_loss", "completion_only_loss", "packing")
SUFFIXES = (".json", ".yaml", ".yml")
# What TRL's SFTTrainer does with assistant_only_loss and ShareGPT turns (measured with trl 1.16): it asks
# whether the dataset is conversational before it converts the turns, and refuses the split.
SHAREGPT_ASSISTANT_ONLY = (
    "assistant-only loss is on and the turns are ShareGPT's (conversations of from/value): TRL refuses the split "
    "before rendering a row (ValueError: You set `assistant_only_loss=True`, but the dataset is not "
    "conversational), since it checks the format before it converts the turns; convert them first (column "
    "messages, keys role/content, roles user/assistant) or train on whole sequences")


NOT_CONVERSATIONAL = (
    "assistant-only loss is on and the rows are strings, not turns: TRL refuses the split before preparing a row "
    "(ValueError: You set `assistant_only_loss=True`, but the dataset is not conversational); assistant masks "
    "come from a chat template's {% generation %} blocks, which strings never pass through")


def read_config(path: Path) -> dict[str, Any]:
    """The relevant keys of one saved TRL config (bounded read; a bad file is one line, exit 2)."""
    try:
        text = read_bytes(path, MAX_CONFIG_BYTES).decode("utf-8")
        if path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            import yaml  # type: ignore[import-untyped]  # PyYAML ships no type stubs

            data = yaml.safe_load(text)
    except (OSError, ValueError) as exc:
        raise AuditError(path, f"cannot read the TRL config: {first_line(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - yaml's errors
        raise AuditError(path, f"cannot read the TRL config: {exc.__class__.__name__}: {first_line(exc)}") from None
    if not isinstance(data, dict):
        raise AuditError(path, "a TRL config must be a mapping of settings")
    out: dict[str, Any] = {}
    for key in KEYS:
        value = data.get(key)
        if value is None:
            continue
        if key == "max_length" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise AuditError(path, f'"max_length" must be a positive integer, not {value!r}'[:200])
        if key == "truncation_mode" and value not in ("keep_start", "keep_end"):
            raise AuditError(path, f'"truncation_mode" must be keep_start or keep_end, not {value!r}'[:200])
        if key in ("assistant_only_loss", "completion_only_loss", "packing") and not isinstance(value, bool):
            raise AuditError(path, f'"{key}" must be true or false, not {value!r}'[:200])
        out[key] = value
    return out


def config_beside(spec: str, trainer: str) -> Path | None:
    """``<trainer>_config.{json,yaml,yml}`` in the data folder, or beside a data file; None if none."""
    path = Path(os.path.expanduser(spec))
    if not path.exists():
        return None
    folder = path if path.is_dir() else path.parent
    for suffix in SUFFIXES:
        candidate = folder / f"{trainer}_config{suffix}"
        if candidate.is_file():
            return candidate
    return None


def settings_for(fmt: ChatFormat, spec: str, flags: dict[str, Any], trl_config: str | None) -> ChatSettings:
    """Flags win over the config file; the file is ``--trl-config`` or the trainer's file beside the data."""
    path = Path(trl_config) if trl_config else config_beside(spec, TRAINERS[fmt.kind])
    values: dict[str, Any] = read_config(path) if path is not None else {}
    given = {k: v for k, v in flags.items() if v is not None}
    values.update(given)
    sources = [str(path)] if path is not None else []
    sources += ["flags"] if given else []
    return ChatSettings(**values, source=", ".join(sources) or "defaults")


def has_generation_block(template: str | None) -> bool:
    import re

    return bool(template and re.search(r"\{%-?\s*generation\s*-?%\}", template))


def renderer_for(fmt: ChatFormat, facts: Any, settings: ChatSettings) -> Renderer:
    """The split's renderer from the tokenizer's facts (template, special-token strings, stop ids)."""
    return _renderer_and_choice(fmt, facts, settings)[0]


def _stops(tok: Any, template: str | None) -> set[int]:
    """The single-token control strings of a template other than the tokenizer's own: what ends its turns."""
    from ..facts.chat_template import control_strings

    return {ids[0] for ids in tok.encode_many(control_strings(template or "")) if len(ids) == 1}


def _renderer_and_choice(fmt: ChatFormat, facts: Any, settings: ChatSettings) -> tuple[Renderer, Any]:
    from .chat_processor import choose_template

    tok = facts.tokenizer
    special = {f"{role}_token": content for role, (content, _) in tok.special_tokens.items() if content}
    eos_token, eos_id = tok.special_tokens.get("eos", (None, None))
    choice = choose_template(tok.folder, facts.config.model_type, tok.chat_template, tok.chat_template_file)
    if choice.template == tok.chat_template:
        stops = {ids[0] for _, ids in tok.template_markers if len(ids) == 1} if tok.chat_template else set()
    else:  # a processor's own template: its control strings end turns
        stops = _stops(tok, choice.template)
    tool_template = tool_use_template(tok.folder) if fmt.tools else None
    if tool_template:
        stops |= _stops(tok, tool_template)
    if eos_id is not None:
        stops.add(eos_id)
    return Renderer(fmt, choice.template, special, eos_token, eos_id, frozenset(stops), settings,
                    tool_template=tool_template, template_note=choice.note), choice


@dataclass(frozen=True)
class ChatPlan:
    """How a split's rows are rendered (``renderer`` None: they cannot be, HVA550 says why) and the split-wide
    findings, (check, message) each."""

    renderer: Renderer | None
    problems: tuple[tuple[str, str], ...]


def plan(fmt: ChatFormat, facts: Any, settings: ChatSettings) -> ChatPlan:
    """The renderer TRL's preparation amounts to for this split, and what is wrong before any row is read: no
    template at all, a processor class AutoProcessor cannot build (reported once, rows rendered with the
    tokenizer's template), and assistant-only loss that TRL refuses or answers with its training template."""
    from .chat_formats import LM, PROMPT_COMPLETION
    from .checks import CHAT_MASK_EMPTY, CHAT_NO_TEMPLATE, CHAT_PROCESSOR_UNBUILT

    renderer, choice = _renderer_and_choice(fmt, facts, settings)
    problems: list[tuple[str, str]] = []
    if fmt.conversational and not renderer.template:  # first: the coverage gap names the first problem
        problems.append((CHAT_NO_TEMPLATE, renderer.template_note or "the tokenizer has no chat template: "
                                           "apply_chat_template (and TRL) refuse every row"))
    if choice.unbuilt:
        problems.append((CHAT_PROCESSOR_UNBUILT, choice.unbuilt))
    if problems and problems[0][0] == CHAT_NO_TEMPLATE:
        return ChatPlan(None, tuple(problems))
    if not settings.assistant_only_loss:
        return ChatPlan(renderer, tuple(problems))
    refusal: str | None = None
    if fmt.kind not in (LM, PROMPT_COMPLETION):
        pass  # DPO and KTO have no assistant-only loss: the setting changes nothing there
    elif fmt.sharegpt:  # TRL checks the format before it converts ShareGPT
        refusal = SHAREGPT_ASSISTANT_ONLY
    elif not fmt.conversational:
        refusal = NOT_CONVERSATIONAL
    elif not has_generation_block(renderer.template):
        from .chat_trl import training_template

        decided = training_template(renderer.template or "", renderer.special, facts.tokenizer.backend)
        if decided.template is None:
            refusal = decided.message
        else:  # TRL renders every row with its training template (the named tool_use one is not used then)
            stops = _stops(facts.tokenizer, decided.template) | ({renderer.eos_id} if renderer.eos_id is not None
                                                                 else set())
            note = "; ".join(n for n in (renderer.template_note, decided.message) if n)
            renderer = replace(renderer, template=decided.template, tool_template=None, template_note=note,
                               stop_ids=frozenset(stops))
    if refusal is not None:  # the ids are still checked, the refusal reported once
        problems.append((CHAT_MASK_EMPTY, refusal))
        renderer = replace(renderer, settings=replace(settings, assistant_only_loss=False))
    return ChatPlan(renderer, tuple(problems))


def tool_use_template(folder: Path) -> str | None:
    """The named ``tool_use`` template (``additional_chat_templates/tool_use.jinja``, or a named entry of
    ``tokenizer_config.json``'s list): ``apply_chat_template`` renders with it when tools are given."""
    from ..facts.tree import regular_file_inside

    path = folder / "additional_chat_templates" / "tool_use.jinja"
    if path.is_file():
        try:
            return read_bytes(regular_file_inside(path, folder, "tokenizer folder"), 16 * 1024 * 1024).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise AuditError(path, f"cannot read the tool_use template: {first_line(exc)}") from None
    config = folder / "tokenizer_config.json"
    if config.is_file():
        try:
            data = json.loads(read_bytes(config, MAX_CONFIG_BYTES).decode("utf-8"))
        except (OSError, ValueError):
            return None  # the tokenizer facts already refused a bad file
        named = data.get("chat_template") if isinstance(data, dict) else None
        if isinstance(named, list):
            for entry in named:
                if isinstance(entry, dict) and entry.get("name") == "tool_use" and isinstance(entry.get("template"), str):
                    return str(entry["template"])
    return None

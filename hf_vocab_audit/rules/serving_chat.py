"""HVA966-HVA967 (``--target vllm``) and HVA980-HVA981 (``--target sglang|tgi|mlx-lm``): whether a serving engine
can hold a chat with the checkpoint: a chat template where THAT engine reads it, and the token that closes an
assistant turn among the ids THAT engine stops at. What each engine reads is the data of its entry in
``facts.consumers`` (``template_load``, ``template_files``, ``stops``); vLLM keeps its own codes, so a filter by
code means what it meant before the other engines were added.

The template is untrusted: it is rendered only in the project's budgeted sandbox (``dataset.chat_budget``),
one user turn with the generation prompt and one user + assistant conversation, never with transformers'
unbudgeted ``apply_chat_template``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.findings import Location, Severity
from ..core.fixes import AddStopId, Applicability, Fix, FixAvailability, SetJsonKey, WriteChatTemplate
from ..core.options import TargetKind
from ..facts.consumers import (
    ENGINE_TARGETS,
    VLLM,
    ConfigEos,
    Consumer,
    GenerationEos,
    TemplateLoad,
    causal_lm,
    serving_stop_ids,
    stop_ids,
)
from .registry import Hit, Scope, rule

if TYPE_CHECKING:
    from ..facts.checkpoint import Facts
    from ..facts.targets import TargetFacts

USER = "What is six times seven?"
ANSWER = "Six times seven is 42."


@dataclass(frozen=True)
class TurnEnd:
    """What the template writes after an assistant's words: its text, the first token of it, or why unknown."""

    template_file: str | None
    text: str = ""
    token_id: int | None = None
    token: str | None = None
    error: str | None = None


def _template(facts: Facts) -> tuple[str | None, str | None]:
    """The template vLLM renders (the processor's, else the tokenizer's as transformers loads it) and its file."""
    from ..dataset.chat_processor import choose_template

    tok = facts.tokenizer
    if tok is None:
        return None, None
    choice = choose_template(tok.folder, facts.config.model_type, tok.chat_template, tok.chat_template_file)
    if choice.template:
        return choice.template, choice.file
    return tok.chat_template, tok.chat_template_file


def _served(consumer: Consumer, facts: Facts) -> tuple[str | None, str | None, tuple[str, ...], str]:
    """The template ``consumer`` renders and its file, with the template files it leaves unread and why."""
    if consumer is VLLM:
        template, file = _template(facts)
        return template, file, (), ""
    from ..facts.served_template import served_template

    found = served_template(consumer, facts)
    return found.template, found.file, found.unread, found.why_unread


def turn_end(facts: Facts, consumer: Consumer = VLLM, chosen: tuple[str, str] | None = None) -> TurnEnd | None:
    """The text and first token after an assistant turn's words in the template ``consumer`` renders, rendered in
    the budgeted sandbox; None when there is no tokenizer or template (HVA966 / HVA980 say so). ``chosen``:
    (template, file) to render instead (the template ``--fix`` would move where the engine reads it)."""
    tok = facts.tokenizer
    template, file = chosen if chosen is not None else _served(consumer, facts)[:2]
    if tok is None or not template:
        return None
    return _render(facts, template, file)


def _render(facts: Facts, template: str, file: str | None) -> TurnEnd:
    from ..dataset.chat_budget import RowMeter, compiled, input_chars, new_key, over_budget_message, split_spend

    tok = facts.tokenizer
    assert tok is not None
    special = {f"{role}_token": content for role, (content, _) in tok.special_tokens.items() if content}
    user = [{"role": "user", "content": USER}]
    chat = [*user, {"role": "assistant", "content": ANSWER}]
    try:
        with RowMeter(split_spend(new_key()), lambda: input_chars(chat)):
            tmpl: Any = compiled(template)
            prompt = str(tmpl.render(messages=user, tools=None, documents=None, add_generation_prompt=True, **special))
            full = str(tmpl.render(messages=chat, tools=None, documents=None, add_generation_prompt=False, **special))
    except Exception as exc:  # noqa: BLE001 - an untrusted template: its refusal or its budget, as one line
        said = over_budget_message(exc) or f"{exc.__class__.__name__}: {exc}"
        return TurnEnd(file, error=said.splitlines()[0][:200] if said else exc.__class__.__name__)
    start = len(prompt) if full.startswith(prompt) else 0
    at = full.rfind(ANSWER, start)
    if at < 0:
        return TurnEnd(file, error="the assistant's words are not in the rendered conversation")
    after = full[at + len(ANSWER):].lstrip()
    if not after:
        return TurnEnd(file)
    ids = tok.encode_many([after])[0]
    if not ids:
        return TurnEnd(file, after)
    return TurnEnd(file, after, ids[0], tok.id_to_token(ids[0]))


def _turn_end_once(t: TargetFacts, consumer: Consumer = VLLM) -> TurnEnd | None:
    """:func:`turn_end` rendered once per audit for both rules of an engine (kept in the prediction's ``extra``)."""
    key = "turn_end" if consumer is VLLM else f"turn_end:{consumer.name}"
    if key not in t.extra:
        t.extra[key] = turn_end(t.facts, consumer)
    found = t.extra[key]
    return found if isinstance(found, TurnEnd) else None


@rule("HVA966", "vllm-chat-template-unusable", Severity.WARNING, scope=Scope.TARGET, fix=FixAvailability.SOMETIMES)
def vllm_chat_template_unusable(t: TargetFacts) -> Iterator[Hit]:
    """vLLM's chat endpoint cannot use this checkpoint's chat template: it is saved where vLLM does not take it,
    or it fails on one user turn and one assistant turn.

    Why:
    vLLM 0.10.2 (`resolve_hf_chat_template` in `vllm/entrypoints/chat_utils.py`) renders the
    processor's template (`chat_template.json` / `chat_template.jinja`), else the tokenizer's as
    transformers loads it (`chat_template.jinja` first, then `tokenizer_config.json` `chat_template`);
    with none, every `/v1/chat/completions` request fails: "As of transformers v4.44, default chat
    template is no longer allowed, so you must provide a chat template if the tokenizer does not define
    one." A `chat_template.json` beside a tokenizer with no processor class is not read (the other
    engines read other files: HVA980 under their own `--target`). A template that raises on a plain
    conversation fails every request the same way. The render here runs in the budgeted sandbox. A checkpoint with no template at
    all (a base model, served through the completions endpoint) is not reported.

    Fix:
    Save the template with the tokenizer (`tokenizer.chat_template = ...; tokenizer.save_pretrained`),
    or pass `--chat-template` to `vllm serve`. `--fix` writes the one template a `chat_template.json` holds to
    `chat_template.jinja`, where the tokenizer loads it; a template that fails is left to you.
    """
    facts = t.facts
    if t.target is not TargetKind.VLLM or facts.tokenizer is None or not causal_lm(facts) or facts.adapter is not None:
        return
    end = _turn_end_once(t)
    present = [name for name in VLLM.template_files[:2] if (facts.tokenizer.folder / name).is_file()]
    if end is None and present:  # a template saved where vLLM does not take it (no chat at all: a base model)
        fix, why = _move_fix(facts, present)
        yield Hit(
            f"{', '.join(present)} is in the folder but vLLM {VLLM.version} resolves no chat template from it "
            "(the tokenizer has none and no processor loads it): its chat endpoint refuses every request (\"As of "
            "transformers v4.44, default chat template is no longer allowed, so you must provide a chat template if "
            "the tokenizer does not define one.\")",
            Location(file=present[0]),
            hint=why, fix=fix,
            details={"present": present, "read_from": list(VLLM.template_files)},
        )
    elif end is not None and end.error is not None:
        yield Hit(
            f"the chat template ({end.template_file}) fails on one user turn and one assistant turn: {end.error}",
            Location(file=end.template_file or "tokenizer_config.json"),
            hint="the template itself fails: --fix does not rewrite a template; correct it, or pass --chat-template "
                 "to `vllm serve`",
            details={"error": end.error},
        )


def _move_fix(facts: Facts, present: list[str]) -> tuple[Fix | None, str | None]:
    """The fix that writes ``chat_template.json``'s template to ``chat_template.jinja`` (and makes the special token
    that closes its assistant turns a stop id, else HVA967 fires on the output), or why there is none."""
    from ..dataset.chat_processor import _legacy_template
    from ..errors import AuditError

    if present != ["chat_template.json"] or facts.tokenizer is None:
        return None, ("Save the template with the tokenizer, or pass --chat-template to `vllm serve` (--fix moves a "
                      "template from chat_template.json only, and not over a chat_template.jinja)")
    try:
        template = _legacy_template(facts.tokenizer.folder / "chat_template.json")
    except AuditError as exc:
        return None, f"Save the template with the tokenizer (--fix cannot move it: {exc.problem})"
    end = turn_end(facts, chosen=(template, "chat_template.jinja"))
    if end is None or end.error is not None:
        return None, ("Correct the template and save it with the tokenizer (the one in chat_template.json fails too: "
                      "--fix does not rewrite a template)")
    edits: tuple[WriteChatTemplate | AddStopId, ...] = (WriteChatTemplate("chat_template.json", "chat_template.jinja"),)
    said = "write the template of chat_template.json to chat_template.jinja, where the tokenizer loads it"
    if end.token_id is not None and end.token_id not in serving_stop_ids(facts):
        if not _special(facts, end.token_id):
            return None, (f"its turns end with {end.token!r}, not a special token, which --fix cannot make a stop id; "
                          "write the template to chat_template.jinja and end its turns with a special token")
        edits += (AddStopId(end.token_id),)
        said += f", and add {end.token!r} (id {end.token_id}) to generation_config.json eos_token_id"
    return Fix(said, Applicability.SAFE, edits), None


def _special(facts: Facts, token_id: int) -> bool:
    """Whether ``token_id`` is a special token (one that ordinary text never encodes to)."""
    tok = facts.tokenizer
    return tok is not None and any(a.id == token_id and a.special for a in tok.added_tokens)


@rule("HVA967", "vllm-turn-end-not-a-stop-id", Severity.ERROR, scope=Scope.TARGET, fix=FixAvailability.SOMETIMES)
def vllm_turn_end_not_a_stop_id(t: TargetFacts) -> Iterator[Hit]:
    """The token the chat template closes an assistant turn with is not one vLLM stops at: generation runs on
    past the answer until `max_tokens`.

    Why:
    A chat model is trained to end its turn with the template's closing token (`<|im_end|>`,
    `<|eot_id|>`, `<end_of_turn>`). vLLM 0.10.2 stops at the tokenizer's `eos_token_id` and the ids of
    `generation_config.json`'s `eos_token_id` (`SamplingParams.update_from_generation_config`;
    config.json's when there is no generation_config.json): when the closing token is neither, the
    model writes it and keeps going, inventing the user's next turn (vllm-project/vllm#4180:
    Llama-3-Instruct's `<|eot_id|>` was not in its eos). The template is rendered in the budgeted
    sandbox (one user turn + an assistant answer) and the first token after the answer is checked.

    Fix:
    Add the closing token's id to `generation_config.json` `eos_token_id` (a list may hold several), or
    make it the tokenizer's `eos_token`. `--fix` adds it (creating `generation_config.json` from config.json's
    ids when absent) when it is a special token: an ordinary token also occurs inside answers.
    """
    facts = t.facts
    if t.target is not TargetKind.VLLM or facts.tokenizer is None or not causal_lm(facts) or facts.adapter is not None:
        return
    end = _turn_end_once(t)
    if end is None or end.error is not None or end.token_id is None:
        return
    stops = serving_stop_ids(facts)
    if end.token_id in stops:
        return
    listed = ", ".join(f"{i} ({why})" for i, why in stops.items()) or "none"
    special = _special(facts, end.token_id)
    yield Hit(
        f"the chat template ({end.template_file}) closes an assistant turn with {end.token!r} (id {end.token_id}), "
        f"which vLLM {VLLM.version} does not stop at: its stop ids are {listed}; generation runs past the answer",
        Location(file="generation_config.json" if facts.generation is not None else "config.json",
                 key="eos_token_id", token=end.token, token_id=end.token_id),
        hint=None if special else (f"{end.token!r} is not a special token, so it also occurs inside answers: --fix "
                                   "adds only a special token as a stop id; end the template's turns with one, or "
                                   "add the id to generation_config.json eos_token_id by hand if answers never hold "
                                   "it"),
        fix=Fix(f"add {end.token!r} (id {end.token_id}) to generation_config.json eos_token_id", Applicability.SAFE,
                (AddStopId(end.token_id),)) if special else None,
        details={"turn_end_id": end.token_id, "turn_end_token": end.token, "stop_ids": sorted(stops),
                 "template_file": end.template_file},
    )


def _engine(t: TargetFacts) -> Consumer | None:
    """The serving engine ``--target`` names when it is one of the HVA98x engines (vLLM has HVA966/HVA967) and the
    checkpoint is a text generator it serves with a chat."""
    consumer = ENGINE_TARGETS.get(t.target.value)
    facts = t.facts
    if (consumer is None or consumer is VLLM or consumer.template_load is None or facts.tokenizer is None
            or not causal_lm(facts) or facts.adapter is not None):
        return None
    return consumer


@rule("HVA980", "serving-chat-template-unusable", Severity.WARNING, scope=Scope.TARGET, fix=FixAvailability.SOMETIMES)
def serving_chat_template_unusable(t: TargetFacts) -> Iterator[Hit]:
    """The engine `--target` names (sglang, tgi, mlx-lm) cannot use this checkpoint's chat template: it is saved
    where that engine does not read it, or it fails on one user turn and one assistant turn.

    Why:
    Each engine reads the template from its own places (read in its source, the versions in
    `facts.consumers`; `hf-vocab-audit check --target vllm` has the same check as HVA966). SGLang 0.4.10
    (`managers/template_manager.py`) and mlx-lm 0.26.3 (`server.py`) take the tokenizer's template as
    transformers loads it (`chat_template.jinja`, then `tokenizer_config.json`), never the processor's
    `chat_template.json`. TGI 3.3.4's router parses the JSON files itself (`router/src/server.rs`,
    `router/src/infer/mod.rs`): `chat_template.json`, else `tokenizer_config.json` (dropped whole when one
    of its typed fields does not parse, e.g. `add_bos_token: "yes"`), else `processor_config.json`; a
    list of named templates gives only its "default"; `chat_template.jinja`, where transformers'
    `save_pretrained` writes the template, is never read. Without a template SGLang and TGI fail every
    chat request and mlx-lm joins the messages as plain "USER: ..." text. The render here runs in the
    budgeted Jinja2 sandbox (TGI renders with minijinja, whose few differences are not modelled). A
    checkpoint with no template at all (a base model) is not reported.

    Fix:
    Save the template where the engine reads it (for TGI: `tokenizer_config.json`'s `chat_template`, e.g.
    `tokenizer.save_pretrained(OUT, save_jinja_files=False)`), or pass the engine's `--chat-template`.
    `--fix` (with the same `--target`) writes the one template the engine leaves unread where it reads it
    (TGI: `chat_template.jinja` into `tokenizer_config.json`; SGLang, mlx-lm: `chat_template.json` to
    `chat_template.jinja`), with its turn-closing token as a stop id when it needs one (HVA981 otherwise).
    """
    consumer = _engine(t)
    if consumer is None:
        return
    template, file, unread, why = _served(consumer, t.facts)
    name = f"{consumer.name} {consumer.version}"
    if template is None and unread:
        how = why or f"it reads {consumer.template_load.value if consumer.template_load else 'none'}: " + \
            ", ".join(consumer.template_files)
        fix, hint = _engine_move_fix(consumer, t.facts, unread, why)
        yield Hit(
            f"{', '.join(unread)} is in the folder but {name} resolves no chat template from it ({how}): "
            f"{consumer.without_template}",
            Location(file=unread[0]), hint=hint, fix=fix,
            details={"engine": consumer.name, "version": consumer.version, "present": list(unread),
                     "read_from": list(consumer.template_files), "source": consumer.template_source},
        )
        return
    end = _turn_end_once(t, consumer)
    if end is not None and end.error is not None:
        yield Hit(
            f"the chat template {name} renders ({end.template_file}) fails on one user turn and one assistant turn: "
            f"{end.error}",
            Location(file=end.template_file or "tokenizer_config.json"),
            details={"engine": consumer.name, "error": end.error},
        )


def _engine_move_fix(consumer: Consumer, facts: Facts, unread: tuple[str, ...],
                     why: str) -> tuple[Fix | None, str | None]:
    """The fix that writes the one template ``consumer`` leaves unread to where it reads it (TGI's router:
    ``tokenizer_config.json``'s ``chat_template``; the tokenizer: ``chat_template.jinja``), with the stop id its
    turns need, or why there is none."""
    from ..dataset.chat_processor import _legacy_template
    from ..errors import AuditError
    from ..facts.served_template import JINJA_FILE, PROCESSOR_FILE

    router = consumer.template_load is TemplateLoad.ROUTER_JSON
    source, dest = (JINJA_FILE, "tokenizer_config.json") if router else (PROCESSOR_FILE, JINJA_FILE)
    tok = facts.tokenizer
    if why or unread != (source,) or tok is None:
        return None, (f"Save the template where {consumer.name} reads it ({', '.join(consumer.template_files)}), or "
                      f"pass its --chat-template (--fix moves a template from {source} to {dest} only)")
    if router and not (tok.folder / dest).is_file():
        return None, f"Save the template in {dest} (--fix edits a {dest} that exists, and there is none)"
    if router:  # the tokenizer's own template, read (bounded) from chat_template.jinja with its facts
        if tok.chat_template_file != JINJA_FILE or not isinstance(tok.chat_template, str):
            return None, f"Save the template in {dest} (the tokenizer's facts hold no template of {source})"
        template = tok.chat_template
    else:
        try:
            template = _legacy_template(tok.folder / source)
        except AuditError as exc:
            return None, f"Save the template where {consumer.name} reads it (--fix cannot move it: {exc.problem})"
    end = turn_end(facts, consumer, chosen=(template, dest))
    if end is None or end.error is not None:
        return None, ("Correct the template and save it where the engine reads it (it fails as it is: --fix does "
                      "not rewrite a template)")
    # TGI's router reads tokenizer_config.json's key, which SetJsonKey sets (as HVA973's fix does); the tokenizer
    # reads chat_template.jinja, a file of its own
    edits: tuple[SetJsonKey | WriteChatTemplate | AddStopId, ...] = (
        (SetJsonKey(dest, "chat_template", template),) if router else (WriteChatTemplate(source, dest),))
    said = f"write the template of {source} to {dest}, where {consumer.name} reads it"
    if end.token_id is not None and end.token_id not in stop_ids(consumer, facts):
        stops, why_not = _stop_fix(consumer, facts, end.token_id, end.token)
        if stops is None:
            return None, why_not
        edits += stops
        said += f", and make {end.token!r} (id {end.token_id}) a stop id in generation_config.json"
    return Fix(said, Applicability.SAFE, edits), None


def _stop_fix(consumer: Consumer, facts: Facts, token_id: int,
              token: str | None) -> tuple[tuple[AddStopId, ...] | None, str | None]:
    """The edits that make ``token_id`` one of ``consumer``'s stop ids through generation_config.json's
    ``eos_token_id`` list, or why --fix cannot: an ordinary token (it also occurs inside answers), or an engine
    that never reads that file (mlx-lm). Where a list there REPLACES the tokenizer's eos (TGI), the tokenizer's
    eos goes into the list too, so the fix takes no stop away."""
    rule = consumer.stops
    if not _special(facts, token_id):
        return None, (f"{token!r} is not a special token, so it also occurs inside answers: --fix adds only a special "
                      "token as a stop id; end the template's turns with one")
    if rule is None or rule.generation_eos is GenerationEos.NEVER:
        return None, (f"{consumer.name} {consumer.version} never reads generation_config.json, where --fix adds stop "
                      "ids: add the id to config.json's eos_token_id, or make it the tokenizer's eos_token")
    edits: tuple[AddStopId, ...] = (AddStopId(token_id),)
    tok = facts.tokenizer
    if rule.generation_eos is GenerationEos.LIST_REPLACES_TOKENIZER and tok is not None:
        eos = tok.special_tokens.get("eos", (None, None))[1]
        listed = facts.generation.special.ids.get("eos_token_id", ()) if facts.generation is not None else ()
        if eos is not None and eos != token_id and eos not in listed:
            edits += (AddStopId(eos),)
    return edits, None


def _fix_file(consumer: Consumer, facts: Facts) -> str:
    """Where the engine's stop ids are added: generation_config.json when it reads that file and there is one, else
    config.json when it reads that, else generation_config.json."""
    stops = consumer.stops
    reads_generation = stops is not None and stops.generation_eos is not GenerationEos.NEVER
    reads_config = stops is not None and stops.config_eos is not ConfigEos.NEVER
    if reads_generation and (facts.generation is not None or not reads_config):
        return "generation_config.json"
    return "config.json" if reads_config else "generation_config.json"


def _unread_eos(consumer: Consumer, facts: Facts, token_id: int) -> str:
    """Why a file that lists ``token_id`` as an eos does not make ``consumer`` stop at it ("" when none does)."""
    stops = consumer.stops
    if stops is None:
        return ""
    notes = []
    generation = facts.generation
    if generation is not None and token_id in generation.special.ids.get("eos_token_id", ()):
        notes.append(f"generation_config.json's eos_token_id holds it, but {consumer.name} reads that field: "
                     f"{stops.generation_eos.value}")
    if token_id in facts.config.special.ids.get("eos_token_id", ()):
        notes.append(f"config.json's eos_token_id holds it, but {consumer.name} reads that field: "
                     f"{stops.config_eos.value}")
    return f" ({'; '.join(notes)})" if notes else ""


@rule("HVA981", "serving-turn-end-not-a-stop-id", Severity.ERROR, scope=Scope.TARGET, fix=FixAvailability.SOMETIMES)
def serving_turn_end_not_a_stop_id(t: TargetFacts) -> Iterator[Hit]:
    """The token the chat template (as the engine `--target` names resolves it) closes an assistant turn with is
    not one that engine stops at: generation runs on past the answer until `max_tokens`.

    Why:
    The engines do not stop at the same ids (read in their source, the versions in `facts.consumers`;
    `--target vllm` has the same check as HVA967). SGLang 0.4.10 stops at config.json's and
    generation_config.json's `eos_token_id`, the tokenizer's eos and an added `<|eom_id|>`
    (`configs/model_config.py` `get_hf_eos_token_id`, `managers/schedule_batch.py` `check_finished`).
    TGI 3.3.4 stops at generation_config.json's `eos_token_id` only when it is a list, which then
    REPLACES the tokenizer's eos; an integer there is ignored and the tokenizer's eos alone is used
    (`models/flash_causal_lm.py`, `utils/tokens.py`). mlx-lm 0.26.3 stops at config.json's `eos_token_id`
    and the tokenizer's eos, never generation_config.json's (`utils.py`, `tokenizer_utils.py`,
    `server.py`). A closing token the engine does not stop at is written and generation goes on,
    inventing the user's next turn (vllm-project/vllm#4180 for vLLM). The template is rendered in the
    budgeted sandbox and the first token after the answer is checked.

    Fix:
    Add the closing token's id to the eos the engine reads: generation_config.json's `eos_token_id` as a
    list (TGI reads nothing else; SGLang reads it too), config.json's `eos_token_id` for mlx-lm; or make
    it the tokenizer's `eos_token`. `--fix` (with the same `--target`) adds a special closing token to
    generation_config.json's list (for TGI with the tokenizer's eos, which the list replaces); not for
    mlx-lm, which never reads that file.
    """
    consumer = _engine(t)
    if consumer is None:
        return
    end = _turn_end_once(t, consumer)
    if end is None or end.error is not None or end.token_id is None:
        return
    stops = stop_ids(consumer, t.facts)
    if end.token_id in stops:
        return
    listed = ", ".join(f"{i} ({why})" for i, why in stops.items()) or "none"
    edits, why_not = _stop_fix(consumer, t.facts, end.token_id, end.token)
    yield Hit(
        f"the chat template ({end.template_file}) closes an assistant turn with {end.token!r} (id {end.token_id}), "
        f"which {consumer.name} {consumer.version} does not stop at{_unread_eos(consumer, t.facts, end.token_id)}: its "
        f"stop ids are {listed}; generation runs past the answer",
        Location(file=_fix_file(consumer, t.facts), key="eos_token_id", token=end.token, token_id=end.token_id),
        hint=why_not,
        fix=Fix(f"add {end.token!r} (id {end.token_id}) to generation_config.json eos_token_id, where "
                f"{consumer.name} reads it", Applicability.SAFE, edits) if edits is not None else None,
        details={"engine": consumer.name, "version": consumer.version, "turn_end_id": end.token_id,
                 "turn_end_token": end.token, "stop_ids": sorted(stops), "template_file": end.template_file,
                 "source": consumer.stops.source if consumer.stops is not None else ""},
    )


__all__ = ["TurnEnd", "serving_chat_template_unusable", "serving_turn_end_not_a_stop_id", "turn_end",
           "vllm_chat_template_unusable", "vllm_turn_end_not_a_stop_id"]

"""Turn the findings' typed fixes into one deduplicated :class:`CheckpointRepair` (what to grow, which keys to set).

Edits are merged by their class, never by a name: two grows (rows or a bias) become the larger; a
config ``vocab_size`` set and a grow settle on the rows the output will have; ``suppress_tokens`` ids
are united; the last JSON edit of a (file, key) wins. Edits then apply in one order: weights first
(grow, re-initialise), then the JSON files and the tokenizer.

The plan is made once per run: a re-initialisation is kept in its own slots (:class:`ReinitSlot`) so the
route that cannot re-initialise narrows the plan (``CheckpointRepair.without_reinit``) instead of planning
again, and the rows the weights analysis flagged are asked for only when rows are re-initialised.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from ..core.findings import AppliedFix, Finding
from ..core.fixes import (
    AddStopId,
    Applicability,
    CopyBaseChatTemplate,
    CopyBaseRows,
    Edit,
    Fix,
    GrowBias,
    GrowRows,
    ReinitRows,
    SetConfigVocabSize,
    SetJsonKey,
    SetPadToken,
    SetSpecialTokenId,
    SuppressTokens,
    WriteChatTemplate,
)
from ..errors import AuditError
from ..facts import Facts
from ..facts.pad_candidate import pad_candidate
from ..facts.vocab_geometry import vocab_axis, vocab_dim, vocab_tensors
from ..io.safetensors_header import TensorInfo
from .pad_token import new_pad, tokenizer_config
from .paired_edits import BaseReader, chat_template_bytes, json_key_of, stop_id_edits
from .repair_plan import BaseRowSource, CheckpointRepair, JsonEdit, LeftAlone, ReinitSlot

# The JSON files --fix edits (SetJsonKey on any other file is left unfixed, with the reason).
EDITABLE_FILES = ("config.json", "generation_config.json", "tokenizer_config.json", "special_tokens_map.json")
TOKENIZER_FILES = ("tokenizer_config.json", "special_tokens_map.json")
TEMPLATE_FILES = ("chat_template.jinja", "tokenizer_config.json")  # where --fix writes a chat template

# What a settings file can do to a rule's fix: its code -> the applicability to use instead of the rule's.
ApplicabilityOverride = Callable[[str, Applicability], Applicability]


def _fix(f: Finding) -> Fix:
    """The fix a finding the planner acts on carries (it only acts on findings with one)."""
    if f.fix is None:
        raise AssertionError(f"{f.code} has no fix to plan")
    return f.fix


def _edits(f: Finding) -> tuple[Edit, ...]:
    return _fix(f).edits


def _round_up(n: int, multiple: int | None) -> int:
    return n if not multiple else -(-n // multiple) * multiple


class _Builder:
    def __init__(self, facts: Facts, unsafe: bool, tokenizer_editable: bool, base_rows_refusal: str | None = None):
        self.facts, self.unsafe, self.tokenizer_editable = facts, unsafe, tokenizer_editable
        self.base_rows_refusal = base_rows_refusal  # why the route cannot copy a base's rows (None: it can)
        self.bases = BaseReader()
        self.base_rows: dict[str, BaseRowSource] = {}  # tensor -> the base's rows it grows back from
        self.base_want = 0  # the rows the base's matrices have (a grow from the base goes exactly there)
        self.files: dict[str, bytes] = {}
        self.stop_ids: list[int] = []
        self.edits: dict[tuple[str, str], JsonEdit] = {}
        self.applied: dict[tuple[str, str, str], AppliedFix] = {}
        self.left: list[LeftAlone | ReinitSlot] = []
        self.notes: list[str] = []
        self.want_rows = 0
        self.grow_codes: list[Finding] = []
        self.new_tokens: list[str] = []
        self.reinit: dict[str, set[int]] = {}
        self.suppress: set[int] = set()
        self.unverified: set[tuple[str, str]] = set()  # (code, description) of fixes whose finding stays (reinit)

    def edit(self, edit: JsonEdit) -> None:
        self.edits[(edit.file, edit.key)] = edit

    def done(self, f: Finding, description: str | None = None) -> AppliedFix:
        fix = f.fix
        assert fix is not None
        desc = description or fix.description
        label = "+".join(e.kind for e in fix.edits)  # the report's name for what was done (never dispatched on)
        applied = self.applied[(f.code, label, desc)] = AppliedFix(f.code, label, desc, fix.applicability)
        return applied

    def skip(self, f: Finding, reason: str) -> None:
        self.left.append(LeftAlone(f, reason))


def make_plan(
    facts: Facts,
    findings: list[Finding],
    *,
    unsafe: bool = False,
    pad_to_multiple_of: int | None = None,
    tokenizer_editable: bool = True,
    untrained_rows: Callable[[], Mapping[str, tuple[int, ...]]] | None = None,
    applicability: ApplicabilityOverride | None = None,
    base_rows_refusal: str | None = None,
) -> CheckpointRepair:
    """One repair plan from the active findings; unsafe fixes only when ``unsafe``.

    ``untrained_rows()``: per tensor, the rows the weights analysis found untrained (left out of the mean that
    re-initialises rows), called once and only when rows are re-initialised;
    ``applicability(code, declared)``: the applicability the settings give a rule's fix (``extend-safe-fixes``,
    ``extend-unsafe-fixes``), applied before the unsafe fixes are set aside; ``base_rows_refusal``: why the
    route that will write the plan cannot copy rows from a base checkpoint (``Route.base_rows_refusal``).
    """
    if pad_to_multiple_of is not None and pad_to_multiple_of < 1:
        raise AuditError(None, f"--pad-to-multiple-of must be >= 1, not {pad_to_multiple_of}")
    b = _Builder(facts, unsafe, tokenizer_editable, base_rows_refusal)
    pad_findings: list[Finding] = []
    for f in findings:
        if f.allowed is not None:
            continue
        if f.fix is None:
            b.skip(f, "no automatic fix: " + (f.hint or "see `hf-vocab-audit explain " + f.code + "`"))
            continue
        fix = f.fix
        how = applicability(f.code, fix.applicability) if applicability is not None else fix.applicability
        if how is not fix.applicability:
            f = replace(f, fix=fix.with_applicability(how))
        if how is Applicability.DISPLAY_ONLY:
            b.skip(f, "its fix is shown, never applied: " + fix.description)
            continue
        if how is Applicability.UNSAFE and not unsafe:
            b.skip(f, "its fix changes the model's behaviour: rerun with --unsafe-fixes to apply it")
            continue
        edits = _edits(f)
        if any(isinstance(e, SetPadToken) for e in edits):
            pad_findings.append(f)  # one pad token for all of them, chosen once
            continue
        _plan_edits(b, f, edits)
    if pad_findings:
        _set_pad(b, pad_findings)
    plan = _finish(b, pad_to_multiple_of)
    if not b.reinit:
        return plan
    reinit = {name: tuple(sorted(ids)) for name, ids in sorted(b.reinit.items())}
    flagged = untrained_rows() if untrained_rows is not None else {}
    exclude = {name: tuple(sorted(set(flagged.get(name, ())) - set(ids))) for name, ids in reinit.items()}
    return replace(plan, reinit=reinit, reinit_exclude=exclude)


def _plan_edits(b: _Builder, f: Finding, edits: tuple[Edit, ...]) -> None:
    """Fold one finding's edits into the plan, by their type. A fix of several edits is applied whole or
    left unfixed whole (the first edit that cannot be applied says why). A re-initialisation is a fix of its
    own, kept in its slot among the findings left alone (a route that does not re-initialise withdraws it)."""
    reinit = any(isinstance(e, ReinitRows) for e in edits)
    if reinit and len(edits) > 1:
        raise AssertionError(f"{f.code}: a ReinitRows edit is a fix of its own, not one of several edits")
    why = next((w for w in (_refusal(b, e) for e in edits) if w), None)
    if why is not None:
        if reinit:
            b.left.append(ReinitSlot(f, refused=why))
        else:
            b.skip(f, why)
        return
    settled_later = False
    for edit in edits:
        match edit:
            case GrowRows(rows=rows) | GrowBias(rows=rows):
                b.want_rows = max(b.want_rows, int(rows))  # two grows: the larger
                settled_later = True
            case SetConfigVocabSize():
                settled_later = True  # settled once the final row count is known (consistent with any grow)
            case SetJsonKey(file=file, key=key, value=value):
                b.edit(JsonEdit(file, key, value))
            case SetSpecialTokenId(role=role, value=value):
                _sync_role(b, role, int(value))
            case ReinitRows():
                _reinit(b, edit)
                b.unverified.add((f.code, _fix(f).description))  # the rows stay untrained to HVA601
            case CopyBaseRows():
                source = b.bases.rows(edit, facts=b.facts)
                assert not isinstance(source, str)  # refused above otherwise
                b.base_rows[edit.tensor] = source
                b.base_want = max(b.base_want, edit.rows)
                settled_later = True
            case CopyBaseChatTemplate(file=file):
                data = b.bases.template(edit)
                assert not isinstance(data, str)  # refused above otherwise
                if file == "tokenizer_config.json":
                    b.edit(JsonEdit(file, "chat_template", json_key_of(data, "chat_template")))
                else:
                    b.files[file] = data
            case WriteChatTemplate(file=file):
                data = chat_template_bytes(b.facts, edit)
                assert not isinstance(data, str)  # refused above otherwise
                b.files[file] = data
            case AddStopId(token_id=token_id):
                b.stop_ids.append(int(token_id))
                for stop in stop_id_edits(b.facts, b.stop_ids):
                    b.edit(stop)
            case SuppressTokens(ids=ids):
                b.suppress.update(int(i) for i in ids)
                b.unverified.add((f.code, _fix(f).description))  # an engine may still sample them: HVA950 stays
                b.edit(JsonEdit("generation_config.json", "suppress_tokens", tuple(sorted(b.suppress)),
                                include=True))
            case _:
                raise AssertionError(f"{type(edit).__name__}: an edit the planner does not know")
    if settled_later:
        b.grow_codes.append(f)
    elif reinit:
        b.left.append(ReinitSlot(f, b.done(f)))
    else:
        b.done(f)


def _refusal(b: _Builder, edit: Edit) -> str | None:
    """Why ``edit`` cannot be applied to this checkpoint, or None."""
    match edit:
        case SetJsonKey(file=file):
            if file not in EDITABLE_FILES:
                return f"--fix does not edit {file}"
            if file in TOKENIZER_FILES and not b.tokenizer_editable:
                return "the tokenizer is outside MODEL_DIR (--tokenizer): --fix edits only MODEL_DIR"
        case ReinitRows(tensors=tensors):
            if not _reinit_names(b, edit):
                return f"none of {', '.join(tensors)} is an embedding matrix --fix can rewrite"
        case CopyBaseRows():
            if b.base_rows_refusal is not None:
                return b.base_rows_refusal
            found = b.bases.rows(edit, facts=b.facts)
            return found if isinstance(found, str) else None
        case CopyBaseChatTemplate(file=file) | WriteChatTemplate(file=file):
            if not b.tokenizer_editable:
                return "the tokenizer is outside MODEL_DIR (--tokenizer): --fix edits only MODEL_DIR"
            if file not in TEMPLATE_FILES:
                return f"--fix writes a chat template to {' or '.join(TEMPLATE_FILES)} only, not {file}"
            found_bytes = (b.bases.template(edit) if isinstance(edit, CopyBaseChatTemplate)
                           else chat_template_bytes(b.facts, edit))
            return found_bytes if isinstance(found_bytes, str) else None
    return None


def _reinit_names(b: _Builder, edit: ReinitRows) -> list[str]:
    """The flagged tensors (and a stored copy of a tied input matrix) whose rows are set to the mean."""
    known = {t.name: t for t in vocab_tensors(b.facts)}
    names = [n for n in edit.tensors if n in known and vocab_axis(known[n]) == 0]
    emb = b.facts.embeddings
    if emb is not None and emb.tied and emb.input is not None and emb.input.name in names:
        names += [n for n, t in known.items() if n != emb.input.name and vocab_axis(t) == 0
                  and t.shape == emb.input.shape]
    return names


def _reinit(b: _Builder, edit: ReinitRows) -> None:
    for name in _reinit_names(b, edit):
        b.reinit.setdefault(name, set()).update(int(i) for i in edit.ids)


def _config_key(facts: Facts, file: str, id_key: str) -> str | None:
    part = facts.config if file == "config.json" else facts.generation
    if part is None:
        return None
    if id_key in part.special.keys:
        return part.special.keys[id_key]
    return (facts.config.text_prefix if file == "config.json" else "") + id_key


def _sync_role(b: _Builder, role: str, value: int) -> None:
    """Set the ``role`` id wherever config.json and generation_config.json declare one."""
    for file in ("config.json", "generation_config.json"):
        part = b.facts.config if file == "config.json" else b.facts.generation
        id_key = f"{role}_token_id"
        if part is not None and id_key in part.special.ids:
            b.edit(JsonEdit(file, part.special.keys[id_key], value, include=role == "eos"))


def _set_pad(b: _Builder, findings: list[Finding]) -> None:
    facts = b.facts
    if not b.tokenizer_editable:
        for f in findings:
            b.skip(f, "the tokenizer is outside MODEL_DIR (--tokenizer): --fix edits only MODEL_DIR")
        return
    choice = pad_candidate(facts)
    added = False
    if choice is None:
        new = new_pad(facts)
        if isinstance(new, str):
            for f in findings:
                b.skip(f, new)
            return
        choice, added = new, True
    content, token_id = choice
    tok = facts.tokenizer
    assert tok is not None
    b.edit(JsonEdit("tokenizer_config.json", "pad_token", content))
    if (tok.folder / "special_tokens_map.json").exists():
        b.edit(JsonEdit("special_tokens_map.json", "pad_token", content))
    if added:
        b.new_tokens.append(content)
        config = tokenizer_config(facts)
        if isinstance(config.get("added_tokens_decoder"), dict):
            entry = {"content": content, "lstrip": False, "normalized": False, "rstrip": False,
                     "single_word": False, "special": True}
            b.edit(JsonEdit("tokenizer_config.json", f"added_tokens_decoder.{token_id}", entry))
        b.want_rows = max(b.want_rows, token_id + 1)
    for file in ("config.json", "generation_config.json"):
        key = _config_key(facts, file, "pad_token_id")
        if key is not None:
            b.edit(JsonEdit(file, key, token_id))
    how = f"a new special token {content!r} (id {token_id})" if added else f"{content!r} (id {token_id})"
    for f in findings:
        b.done(f, f"pad token set to {how}; config and generation_config pad_token_id follow")


def _settle_base_rows(b: _Builder, tensors: list[TensorInfo], pad_to_multiple_of: int | None) -> None:
    """Keep the grow from the base only when it grows every short vocabulary tensor, to the base's rows exactly
    (one fill for every new row); otherwise leave its findings alone with the reason."""
    short = [t.name for t in tensors if vocab_dim(t) < b.base_want and t.name not in b.base_rows]
    tok = b.facts.tokenizer
    others = max([b.want_rows, *(vocab_dim(t) for t in tensors)])  # the rows the rest asks for (as _finish counts)
    if tok is not None and b.want_rows:
        others = max(others, tok.max_id + 1 + len(b.new_tokens))
    why = None
    if others > b.base_want:
        why = f"another fix, or another matrix, needs more rows than the base's {b.base_want}"
    elif short:
        why = f"{', '.join(short)} would grow too, and the base has no rows named for it"
    elif pad_to_multiple_of and b.base_want % pad_to_multiple_of:
        why = f"--pad-to-multiple-of {pad_to_multiple_of} would grow past the base's {b.base_want} rows"
    if why is None:
        return
    for f in [f for f in b.grow_codes if any(isinstance(e, CopyBaseRows) for e in _edits(f))]:
        b.grow_codes.remove(f)
        b.skip(f, why)
    b.base_rows, b.base_want = {}, 0


def _finish(b: _Builder, pad_to_multiple_of: int | None) -> CheckpointRepair:
    facts = b.facts
    rows_before = facts.input_rows
    tensors = vocab_tensors(facts)
    grow: dict[str, int] = {}
    rows_after = rows_before
    tok = facts.tokenizer
    trained = None
    if b.base_rows:
        _settle_base_rows(b, tensors, pad_to_multiple_of)
    if rows_before is not None:
        needed = max([b.want_rows, b.base_want, rows_before, *(vocab_dim(t) for t in tensors)])
        if tok is not None and b.want_rows:
            needed = max(needed, tok.max_id + 1 + len(b.new_tokens))
        target = needed
        if any(vocab_dim(t) < needed for t in tensors):
            target = needed if b.base_rows else _round_up(needed, pad_to_multiple_of)
            grow = {t.name: target for t in tensors if vocab_dim(t) < target}
        rows_after = target
        used = (tok.max_id + 1) if tok is not None else rows_before
        trained = max(1, min(rows_before, used))
    sets_vocab_size = False
    for f in b.grow_codes:
        config_set = next((e for e in _edits(f) if isinstance(e, SetConfigVocabSize)), None)
        from_base = next((e for e in _edits(f) if isinstance(e, CopyBaseRows)), None)
        if from_base is not None:
            b.done(f, f"grew {from_base.tensor} from {rows_before} to {rows_after} rows: its own rows kept, rows "
                      f"{rows_before}..{(rows_after or 1) - 1} copied from the base's {from_base.base_tensor}")
        elif config_set is not None:
            sets_vocab_size = True
            b.done(f, f"set {config_set.key} to {rows_after}")
        elif grow:
            fill = "copied from the base" if b.base_rows else f"= mean of the {trained} trained rows"
            b.done(f, f"grew {', '.join(sorted(grow))} from {rows_before} to {rows_after} rows "
                      f"(old rows kept; new rows {fill})")
        else:
            b.skip(f, "no tensor needs to grow")
    if facts.config.vocab_size is not None and rows_after is not None and (
        grow or sets_vocab_size
    ) and facts.config.vocab_size != rows_after:
        b.edit(JsonEdit("config.json", facts.config.text_prefix + "vocab_size", rows_after))
    if tok is not None and rows_before is not None and not grow and tok.max_id + 1 + len(b.new_tokens) <= rows_before:
        spare = rows_before - tok.max_id - 1
        b.notes.append(f"the {rows_before} embedding rows already cover every token id (up to {tok.max_id}"
                       f"{f', {spare} padding rows spare' if spare else ''}): no resize needed")
    return CheckpointRepair(
        rows_before=rows_before,
        rows_after=rows_after,
        grow=grow,
        trained_rows=trained,
        json_edits=tuple(b.edits.values()),
        new_tokens=tuple(b.new_tokens),
        applied=tuple(b.applied.values()),
        suppress=tuple(sorted(b.suppress)),
        base_rows=dict(b.base_rows),
        files=tuple(sorted(b.files.items())),
        verify_gone=tuple(a for a in b.applied.values() if (a.code, a.description) not in b.unverified),
        left=tuple(b.left),
        notes=tuple(b.notes),
    )

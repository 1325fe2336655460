"""Turn the findings' FixPlans into one deduplicated :class:`CheckpointRepair` (what to grow, which keys to set)."""

from __future__ import annotations

from dataclasses import replace

from ..core.findings import Applicability, AppliedFix, Finding, FixPlan
from ..errors import AuditError
from ..facts import Facts
from ..facts.vocab_geometry import vocab_axis, vocab_dim, vocab_tensors
from .pad_token import new_pad, pad_candidate, tokenizer_config
from .repair import REINIT, CheckpointRepair, JsonEdit, Unfixed


def _fix(f: Finding) -> FixPlan:
    """The fix a finding the planner acts on carries (it only acts on findings with one)."""
    if f.fix is None:
        raise AssertionError(f"{f.code} has no fix to plan")
    return f.fix


def _round_up(n: int, multiple: int | None) -> int:
    return n if not multiple else -(-n // multiple) * multiple


class _Builder:
    def __init__(self, facts: Facts, unsafe: bool, tokenizer_editable: bool):
        self.facts, self.unsafe, self.tokenizer_editable = facts, unsafe, tokenizer_editable
        self.edits: dict[tuple[str, str], JsonEdit] = {}
        self.applied: dict[tuple[str, str, str], AppliedFix] = {}
        self.unfixed: list[Unfixed] = []
        self.notes: list[str] = []
        self.want_rows = 0
        self.grow_codes: list[Finding] = []
        self.new_tokens: list[str] = []
        self.reinit: dict[str, set[int]] = {}

    def edit(self, edit: JsonEdit) -> None:
        self.edits[(edit.file, edit.key)] = edit

    def done(self, f: Finding, description: str | None = None) -> None:
        fix = f.fix
        assert fix is not None
        desc = description or fix.description
        self.applied[(f.code, fix.action, desc)] = AppliedFix(f.code, fix.action, desc, fix.applicability)

    def skip(self, f: Finding, reason: str) -> None:
        self.unfixed.append(Unfixed(f.code, f.message, reason))


def make_plan(
    facts: Facts,
    findings: list[Finding],
    *,
    unsafe: bool = False,
    pad_to_multiple_of: int | None = None,
    tokenizer_editable: bool = True,
    reinit_exclude: dict[str, tuple[int, ...]] | None = None,
    no_reinit: str | None = None,
) -> CheckpointRepair:
    """One repair plan from the active findings; unsafe fixes only when ``unsafe``.

    ``reinit_exclude``: per tensor, the rows the weights analysis found untrained (left out of the mean that
    re-initialises rows); ``no_reinit``: why rows cannot be re-initialised here (they are then listed unfixed).
    """
    if pad_to_multiple_of is not None and pad_to_multiple_of < 1:
        raise AuditError(None, f"--pad-to-multiple-of must be >= 1, not {pad_to_multiple_of}")
    b = _Builder(facts, unsafe, tokenizer_editable)
    pad_findings: list[Finding] = []
    for f in findings:
        if f.allowed is not None:
            continue
        if f.fix is None:
            b.skip(f, "no automatic fix: " + (f.hint or "see `hf-vocab-audit explain " + f.code + "`"))
            continue
        if f.fix.applicability is Applicability.UNSAFE and not unsafe:
            b.skip(f, "its fix changes the model's behaviour: rerun with --unsafe-fixes to apply it")
            continue
        action, params = f.fix.action, f.fix.params
        if action == "grow-embeddings":
            b.want_rows = max(b.want_rows, int(params["rows"]))
            b.grow_codes.append(f)
        elif action == "set-config-vocab-size":
            b.grow_codes.append(f)  # settled once the final row count is known
        elif action == "set-model-max-length":
            if not tokenizer_editable:
                b.skip(f, "the tokenizer is outside MODEL_DIR (--tokenizer): --fix edits only MODEL_DIR")
                continue
            b.edit(JsonEdit("tokenizer_config.json", "model_max_length", int(params["value"])))
            b.done(f)
        elif action == "sync-special-token-id":
            _sync_ids(b, f)
        elif action == "set-pad-token":
            pad_findings.append(f)
        elif action == REINIT:
            _reinit(b, f, no_reinit)
        else:
            b.skip(f, f"unknown fix action {action!r}")
    if pad_findings:
        _set_pad(b, pad_findings)
    plan = _finish(b, pad_to_multiple_of)
    if not b.reinit:
        return plan
    reinit = {name: tuple(sorted(ids)) for name, ids in sorted(b.reinit.items())}
    exclude = {name: tuple(sorted(set((reinit_exclude or {}).get(name, ())) - set(ids)))
               for name, ids in reinit.items()}
    return replace(plan, reinit=reinit, reinit_exclude=exclude)


def _reinit(b: _Builder, f: Finding, no_reinit: str | None) -> None:
    """Rows of the flagged tensors (and of a stored copy of a tied input matrix) to set to the mean."""
    if no_reinit:
        b.skip(f, no_reinit)
        return
    params = _fix(f).params
    known = {t.name: t for t in vocab_tensors(b.facts)}
    names = [n for n in params["tensors"] if n in known and vocab_axis(known[n]) == 0]
    emb = b.facts.embeddings
    if emb is not None and emb.tied and emb.input is not None and emb.input.name in names:
        names += [n for n, t in known.items() if n != emb.input.name and vocab_axis(t) == 0
                  and t.shape == emb.input.shape]
    if not names:
        b.skip(f, f"none of {', '.join(params['tensors'])} is an embedding matrix --fix can rewrite")
        return
    for name in names:
        b.reinit.setdefault(name, set()).update(int(i) for i in params["ids"])
    b.done(f)


def _config_key(facts: Facts, file: str, id_key: str) -> str | None:
    part = facts.config if file == "config.json" else facts.generation
    if part is None:
        return None
    if id_key in part.special.keys:
        return part.special.keys[id_key]
    return (facts.config.text_prefix if file == "config.json" else "") + id_key


def _sync_ids(b: _Builder, f: Finding) -> None:
    params = _fix(f).params
    value = int(params["value"])
    if "file" in params:
        if params["file"] not in ("config.json", "generation_config.json"):
            b.skip(f, f"--fix does not edit {params['file']}")
            return
        b.edit(JsonEdit(params["file"], params["key"], value))
    else:
        role = params["role"]
        for file in ("config.json", "generation_config.json"):
            part = b.facts.config if file == "config.json" else b.facts.generation
            id_key = f"{role}_token_id"
            if part is not None and id_key in part.special.ids:
                b.edit(JsonEdit(file, part.special.keys[id_key], value, include=role == "eos"))
    b.done(f)


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


def _finish(b: _Builder, pad_to_multiple_of: int | None) -> CheckpointRepair:
    facts = b.facts
    rows_before = facts.input_rows
    tensors = vocab_tensors(facts)
    grow: dict[str, int] = {}
    rows_after = rows_before
    tok = facts.tokenizer
    trained = None
    if rows_before is not None:
        needed = max([b.want_rows, rows_before, *(vocab_dim(t) for t in tensors)])
        if tok is not None and b.want_rows:
            needed = max(needed, tok.max_id + 1 + len(b.new_tokens))
        target = needed
        if any(vocab_dim(t) < needed for t in tensors):
            target = _round_up(needed, pad_to_multiple_of)
            grow = {t.name: target for t in tensors if vocab_dim(t) < target}
        rows_after = target
        used = (tok.max_id + 1) if tok is not None else rows_before
        trained = max(1, min(rows_before, used))
    for f in b.grow_codes:
        if _fix(f).action == "set-config-vocab-size":
            b.done(f, f"set {_fix(f).params['key']} to {rows_after}")
        elif grow:
            b.done(f, f"grew {', '.join(sorted(grow))} from {rows_before} to {rows_after} rows "
                      f"(old rows kept; new rows = mean of the {trained} trained rows)")
        else:
            b.skip(f, "no tensor needs to grow")
    if facts.config.vocab_size is not None and rows_after is not None and (
        grow or any(_fix(f).action == "set-config-vocab-size" for f in b.grow_codes)
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
        unfixed=tuple(b.unfixed),
        notes=tuple(b.notes),
    )

"""The ``--fix`` pipeline: audit -> write -> audit. The auditor is a parameter (the gate passes the audit
``check`` runs, allowlist included), so ``--fix`` judges its input and its output exactly as ``check`` would;
this module plans, writes to a temporary folder, proves the output, and renames it into place."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from ..core.findings import Applicability, AppliedFix, Finding, FixResult, Skipped
from ..core.fixes import Compared, Verification
from ..core.report import Report
from ..errors import AuditError
from ..facts import Facts, gather
from ..facts.weight_formats.registry import format_of, load_tensors
from .early import EarlyCopies
from .early import start as start_early
from .edits import apply_edits
from .growth import check_growth
from .plan import ApplicabilityOverride, make_plan
from .repair_plan import CheckpointRepair, Unfixed
from .surgical import unsupported, write_surgical
from .transformers_route import write_transformers
from .verify import (
    VerificationError,
    check_fixed,
    check_suppressed,
    compare_files,
    compare_safetensors,
    compare_state_dicts,
    load_check,
    reread,
)
from .writer import Flusher, atomic_folder, check_output, default_output

METHODS = ("surgical", "transformers")
VERIFY_LOAD = ("auto", "always", "never")


class Auditor(Protocol):
    """The audit ``--fix`` runs on its input and on its output: ``check``'s own (its rules, ``--weights``,
    ``--target``, the allowlist). ``facts`` are the folder's files as the pipeline read them (the output is
    read in its temporary folder); ``folder`` names the target in the report."""

    def __call__(self, folder: Path, *, facts: Facts | None = None) -> Report: ...


def repair(
    target: str | Path,
    output: str | Path | None = None,
    *,
    audit: Auditor,
    tokenizer: str | Path | None = None,
    unsafe_fixes: bool = False,
    applicability: ApplicabilityOverride | None = None,
    pad_to_multiple_of: int | None = None,
    force: bool = False,
    method: str = "surgical",
    verify_load: str = "auto",
    mean_resizing: bool = True,
    allow_large_growth: bool = False,
) -> Report:
    """Apply the fixes ``audit`` finds on ``target`` to a copy and return ``audit``'s report of that copy.

    The copy is written to a temporary sibling of ``output`` (default ``<target>-fixed``), proved (every
    input tensor compared, the audit of the copy run, no fixed finding left, no new error, transformers
    loads it when small enough), then renamed into place; ``Report.fixes`` lists what was applied and
    ``Report.fix`` (a :class:`FixResult`) what was not, the notes and the :class:`Verification`. Findings the
    auditor marks allowed are left alone; unsafe fixes only with ``unsafe_fixes``; ``applicability(code,
    declared)`` is the settings' say on a rule's fix. Growth past :func:`check_growth`'s bound needs
    ``allow_large_growth``. Raises :class:`AuditError` on bad input or a failed proof (nothing written).
    """
    start = time.perf_counter()
    if method not in METHODS:
        raise AuditError(None, f"--method must be one of {', '.join(METHODS)}, not {method!r}")
    if verify_load not in VERIFY_LOAD:
        raise AuditError(None, f"--verify-load must be one of {', '.join(VERIFY_LOAD)}, not {verify_load!r}")
    src = Path(target)
    tok_path = Path(tokenizer) if tokenizer is not None else None
    out_path = Path(output) if output is not None else default_output(src)
    # the shards no surgical fix rewrites are copied while the tokenizer is read and audited (fix/early.py)
    early = start_early(src, out_path, force, tok_path) if method == "surgical" else None
    try:
        pre_read = early.tensors if early is not None else None
        facts = gather(src, tokenizer, tensors_from=(lambda _folder: pre_read) if pre_read is not None else load_tensors)
        check_output(src, out_path, force, tok_path)
        if facts.tensors is not None and facts.tensors.refused:
            refused = facts.tensors.refused[0]
            raise AuditError(src / refused.file, f"refused to load ({refused.reason}); --fix cannot rewrite it")
        before = sorted(audit(src, facts=facts).findings, key=lambda f: f.code)
        tokenizer_editable = tok_path is None or tok_path.resolve() == src.resolve()

        def plan_for(no_reinit: str | None = None, untrained: dict[str, tuple[int, ...]] | None = None) -> CheckpointRepair:
            return make_plan(facts, before, unsafe=unsafe_fixes, pad_to_multiple_of=pad_to_multiple_of,
                             tokenizer_editable=tokenizer_editable, reinit_exclude=untrained, no_reinit=no_reinit,
                             applicability=applicability)

        plan = plan_for()
        if plan.reinit:  # the mean that re-initialises rows leaves out every row the weights analysis flags
            plan = plan_for(untrained=flagged_rows(facts))
        if not allow_large_growth:
            check_growth(src, plan)
        used = method
        reason = unsupported(facts, plan) if plan.changes_weights and method == "surgical" else None
        if reason:
            used = "transformers"
        if used == "transformers" and early is not None:
            early.close()  # the transformers route writes every weight file itself
            early = None
        if used == "transformers" and plan.reinit:
            plan = plan_for(no_reinit="the transformers route does not re-initialise rows"
                                      + (f" (it is used because {reason})" if reason else ""))
            if not plan.changes_weights:
                used = "surgical"
        notes = list(plan.notes)
        if reason and plan.changes_weights:
            notes.append(f"used the transformers route: {reason}")
        if plan.reinit:
            notes.append("re-initialised rows equal the mean of the trained rows but are still untrained: "
                         "--weights reports them as such (HVA601) until training updates them")
        try:
            after, verification = _write(facts, src, out_path, plan, used, audit, before, force=force,
                                         tokenizer=None if tokenizer_editable else tok_path,
                                         mean_resizing=mean_resizing, verify_load=verify_load, early=early)
        except VerificationError as exc:
            raise VerificationError(out_path, exc.problem) from None
        except OSError as exc:
            why = exc.strerror or str(exc)
            raise AuditError(out_path, f"cannot be written ({why}); nothing was written there") from exc
        fixes, unfixed = _settle(plan, before, list(after.findings))
        load_skip = (Skipped("--verify-load", verification.load),) if verification.load.startswith("skipped") else ()
        result = FixResult(str(src), str(out_path), used if plan.changes_weights else "copy", plan.rows_before,
                           plan.rows_after, tuple(unfixed), tuple(notes), verification, dict(plan.reinit) or None)
        return replace(after, skipped=after.skipped + load_skip, fixes=fixes, fix=result,
                       duration_s=round(time.perf_counter() - start, 3))
    finally:
        if early is not None:
            early.close()


def fix_checkpoint(
    model_dir: str | Path,
    *,
    output: str | Path | None = None,
    tokenizer: str | Path | None = None,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    weights: bool = False,
    target_kind: str | None = None,
    accept: Callable[[list[Finding]], list[Finding]] | None = None,
    **options: Any,
) -> Report:
    """``--fix`` from Python: :func:`repair` with :func:`hf_vocab_audit.audit` (``select``, ``ignore``,
    ``weights``, ``target_kind``) as the auditor; ``accept`` marks the findings an allowlist accepts
    (``Finding.allowed``: left alone, not "fixed"). ``options`` are :func:`repair`'s (``unsafe_fixes``,
    ``pad_to_multiple_of``, ``force``, ``method``, ``verify_load``, ``mean_resizing``, ``allow_large_growth``,
    ``applicability``). With ``weights=True`` and ``unsafe_fixes`` untrained token rows are set to the mean
    of the trained rows (they stay untrained: HVA601 reports them as equal to the mean). A PEFT adapter is
    refused, finding by finding (nothing is written)."""
    from ..audit import audit as run_audit
    from ..facts.sources.adapter import is_adapter

    src = Path(model_dir)
    if is_adapter(src):  # a PEFT adapter: nothing is written, each finding says why (fix/adapter_refusal.py)
        from .adapter_refusal import refuse_adapter_fix

        return refuse_adapter_fix(src, tokenizer=tokenizer, select=select, ignore=ignore)

    def check(folder: Path, *, facts: Facts | None = None) -> Report:
        report = run_audit(folder, tokenizer=tokenizer, select=select, ignore=ignore, weights=weights,
                           target_kind=target_kind, facts=facts)
        return replace(report, findings=tuple(accept(list(report.findings)))) if accept is not None else report

    return repair(src, output, audit=check, tokenizer=tokenizer, **options)


def flagged_rows(facts: Facts) -> dict[str, tuple[int, ...]]:
    """Per tensor, the token rows the weights analysis finds untrained or low-norm (the re-initialising
    mean leaves them out)."""
    from ..weights.analysis import gather_weights

    weight_facts, _skipped = gather_weights(facts)
    if weight_facts is None:
        return {}
    return {s.stats.tensor: tuple(int(i) for i in s.flagged()) for s in weight_facts.sides}


def _write(facts: Facts, src: Path, out_path: Path, plan: CheckpointRepair, used: str, audit: Auditor,
           before: list[Finding], *, force: bool, tokenizer: Path | None, mean_resizing: bool,
           verify_load: str, early: EarlyCopies | None = None) -> tuple[Report, Verification]:
    """Write the fixed checkpoint to a temporary folder, prove it, then rename it to ``out_path``."""
    flusher = Flusher()  # the disk writes the weights while they are verified
    grown = resized = None
    with atomic_folder(out_path, force) as tmp, contextlib.closing(flusher):
        if used == "surgical" or not plan.changes_weights:
            copied = early.move_into(tmp) if early is not None else set()
            grown = tuple(write_surgical(facts, tmp, plan, flusher.add, copied))
        else:
            resized = write_transformers(facts, tmp, plan, mean_resizing=mean_resizing)
        apply_edits(src, tmp, plan)
        out_facts = reread(tmp, tokenizer, _unchanged_tokenizer(facts, src, tmp, tokenizer))
        compared: Compared | None
        if used == "surgical" or not plan.changes_weights:
            if facts.tensors is None:
                compared = None
            elif format_of(facts.tensors).byte_ranges:
                compared = compare_safetensors(facts, out_facts, plan, tmp)
            else:
                compared = compare_files(facts, tmp)
        else:
            compared = compare_state_dicts(facts, tmp, plan)
        after = audit(out_path, facts=out_facts)
        # Re-initialised rows stay untrained (HVA601 "equals the mean"): compare_safetensors proved their bytes;
        # suppressed ids stay sampleable by an engine that ignores generation_config: check_suppressed reads them.
        check_fixed(before, after.findings, plan.verify_gone, tmp)
        check_suppressed(plan, tmp)
        load = load_check(tmp, out_facts, verify_load) if facts.tensors else "skipped: no weights"
        flusher.finish(tmp)  # durable before the rename
    if out_facts.tensors is not None:
        after = replace(after, facts=after.facts | {"weight_files": list(out_facts.tensors.files)})
    return after, Verification(load, compared, grown, resized)


def _unchanged_tokenizer(facts: Any, src: Path, out: Path, tokenizer: str | Path | None) -> Any:
    """The input's tokenizer facts when the output's tokenizer files are byte-identical to what was read."""
    import filecmp

    tok = facts.tokenizer
    if tok is None or tok.source != "tokenizers":
        return None
    if tokenizer is not None:
        return tok  # a separate tokenizer folder: --fix never writes it
    same = all((out / name).is_file() and filecmp.cmp(src / name, out / name, shallow=False) for name in tok.files)
    return tok if same else None


def _settle(plan: CheckpointRepair, before: list[Finding], after: list[Finding]) -> tuple[tuple[AppliedFix, ...], list[Unfixed]]:
    """Findings without a fix of their own that the other fixes resolved count as fixed; the rest stay unfixed."""
    remaining = {(f.code, f.message) for f in after}
    keys = {(f.code, f.location.file, f.location.key, f.location.tensor, f.location.token) for f in after}
    fixes = list(plan.applied)
    unfixed = []
    safe = any(a.applicability is Applicability.SAFE for a in plan.applied)
    by_message = {(f.code, f.message): f for f in before}
    for u in plan.unfixed:
        f = by_message.get((u.code, u.message))
        gone = f is not None and (f.code, f.location.file, f.location.key, f.location.tensor, f.location.token) \
            not in keys and (u.code, u.message) not in remaining
        if gone and plan.applied:
            fixes.append(AppliedFix(u.code, "resolved", f"resolved by the fixes above: {u.message}",
                                    Applicability.SAFE if safe else Applicability.UNSAFE))
        else:
            unfixed.append(u)
    return tuple(sorted(fixes, key=lambda a: a.code)), unfixed

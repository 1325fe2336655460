"""The ``--fix`` pipeline: audit -> write -> audit. The auditor is a parameter (the gate passes the audit
``check`` runs, allowlist included; both callers make it with :func:`.auditor.folder_auditor`), so ``--fix``
judges its input and its output exactly as ``check`` would; this module plans once, lets the route chosen once
(:mod:`.route`) write to a temporary folder, proves the output, and renames it into place."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core.findings import Finding, FixResult, Skipped
from ..core.fixes import Verification
from ..core.options import AuditOptions
from ..core.report import Report
from ..errors import AuditError
from ..facts import Facts, gather
from ..facts.weight_formats.registry import load_tensors
from .auditor import Auditor, folder_auditor
from .early import EarlyCopies
from .early import start as start_early
from .edits import apply_edits
from .growth import check_growth
from .plan import ApplicabilityOverride, make_plan
from .reinit import flagged_rows
from .route import ROUTES, Choice, Route, choose, route_named
from .settle import settle
from .verify import VerificationError, check_fixed, check_suppressed, load_check, reread
from .writer import Flusher, atomic_folder, check_output, default_output

METHODS = tuple(ROUTES)
VERIFY_LOAD = ("auto", "always", "never")

__all__ = ["METHODS", "VERIFY_LOAD", "Auditor", "fix_checkpoint", "repair"]


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
    method: str | Route = "surgical",
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
    declared)`` is the settings' say on a rule's fix. ``method`` names a route of :data:`.route.ROUTES` (or is
    one). Growth past :func:`check_growth`'s bound needs ``allow_large_growth``. Raises :class:`AuditError`
    on bad input or a failed proof (nothing written).
    """
    start = time.perf_counter()
    requested = route_named(method)
    if verify_load not in VERIFY_LOAD:
        raise AuditError(None, f"--verify-load must be one of {', '.join(VERIFY_LOAD)}, not {verify_load!r}")
    src = Path(target)
    tok_path = Path(tokenizer) if tokenizer is not None else None
    out_path = Path(output) if output is not None else default_output(src)
    # the shards no surgical fix rewrites are copied while the tokenizer is read and audited (fix/early.py)
    early = start_early(src, out_path, force, tok_path) if requested.copies_early else None
    try:
        pre_read = early.tensors if early is not None else None
        facts = gather(src, tokenizer, tensors_from=(lambda _folder: pre_read) if pre_read is not None else load_tensors)
        check_output(src, out_path, force, tok_path)
        if facts.tensors is not None and facts.tensors.refused:
            refused = facts.tensors.refused[0]
            raise AuditError(src / refused.file, f"refused to load ({refused.reason}); --fix cannot rewrite it")
        audited = audit(src, facts=facts)
        before = sorted(audited.findings, key=lambda f: f.code)
        tokenizer_editable = tok_path is None or tok_path.resolve() == src.resolve()
        # the one plan; the mean that re-initialises rows leaves out every row the input's weights analysis flagged
        plan = make_plan(facts, before, unsafe=unsafe_fixes, pad_to_multiple_of=pad_to_multiple_of,
                         tokenizer_editable=tokenizer_editable, untrained_rows=lambda: flagged_rows(audited, facts),
                         applicability=applicability, base_rows_refusal=requested.base_rows_refusal)
        if not allow_large_growth:
            check_growth(src, plan)
        choice = choose(requested, facts, plan)
        if early is not None and not choice.route.copies_early:
            early.close()  # the transformers route writes every weight file itself
            early = None
        plan = choice.plan
        notes = [*plan.notes, *choice.notes]
        if plan.reinit:
            notes.append("re-initialised rows equal the mean of the trained rows but are still untrained: "
                         "--weights reports them as such (HVA601) until training updates them")
        try:
            after, verification = _write(facts, src, out_path, choice, audit, before, force=force,
                                         tokenizer=None if tokenizer_editable else tok_path,
                                         mean_resizing=mean_resizing, verify_load=verify_load, early=early)
        except VerificationError as exc:
            raise VerificationError(out_path, exc.problem) from None
        except OSError as exc:
            why = exc.strerror or str(exc)
            raise AuditError(out_path, f"cannot be written ({why}); nothing was written there") from exc
        fixes, unfixed = settle(plan, after.findings)
        load_skip = (Skipped("--verify-load", verification.load),) if verification.load.startswith("skipped") else ()
        result = FixResult(str(src), str(out_path), choice.method, plan.rows_before, plan.rows_after, unfixed,
                           tuple(notes), verification, dict(plan.reinit) or None)
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
    base: str | Path | None = None,
    accept: Callable[[list[Finding]], list[Finding]] | None = None,
    **options: Any,
) -> Report:
    """``--fix`` from Python: :func:`repair` with the audit of :func:`hf_vocab_audit.audit` (``select``, ``ignore``,
    ``weights``, ``target_kind``, ``base``: the checkpoint a fine-tune came from) as the auditor; ``accept``
    marks the findings an allowlist accepts (``Finding.allowed``: left alone, not "fixed"). ``options`` are
    :func:`repair`'s (``unsafe_fixes``, ``pad_to_multiple_of``, ``force``, ``method``, ``verify_load``,
    ``mean_resizing``, ``allow_large_growth``, ``applicability``). With ``weights=True`` and ``unsafe_fixes``
    untrained token rows are set to the mean of the trained rows (they stay untrained: HVA601 reports them as
    equal to the mean). A PEFT adapter is refused, finding by finding (nothing is written)."""
    from ..facts.sources.adapter import is_adapter

    src = Path(model_dir)
    if is_adapter(src):  # a PEFT adapter: nothing is written, each finding says why (fix/adapter_refusal.py)
        from .adapter_refusal import refuse_adapter_fix

        return refuse_adapter_fix(src, tokenizer=tokenizer, select=select, ignore=ignore)
    if base is not None:  # as the CLI does: --force would replace the base the rows are copied from
        from ..io.output_path import check_output_folder

        check_output_folder(Path(output) if output is not None else default_output(src), (base,))
    audit_options = AuditOptions(tokenizer=tokenizer, select=_tuple(select), ignore=_tuple(ignore), weights=weights,
                                  target_kind=target_kind, base=str(base) if base is not None else None)
    marks = (lambda report: replace(report, findings=tuple(accept(list(report.findings))))) if accept else None
    return repair(src, output, audit=folder_auditor(audit_options, marks), tokenizer=tokenizer, **options)


def _tuple(values: Iterable[str] | None) -> tuple[str, ...] | None:
    return None if values is None else tuple(values)


def _write(facts: Facts, src: Path, out_path: Path, choice: Choice, audit: Auditor, before: list[Finding], *,
           force: bool, tokenizer: Path | None, mean_resizing: bool, verify_load: str,
           early: EarlyCopies | None = None) -> tuple[Report, Verification]:
    """Write the fixed checkpoint to a temporary folder with the chosen route, prove it, then rename it to
    ``out_path``."""
    route, plan = choice.route, choice.plan
    flusher = Flusher()  # the disk writes the weights while they are verified
    with atomic_folder(out_path, force) as tmp, contextlib.closing(flusher):
        grown, resized = route.write(facts, tmp, plan, early=early, written=flusher.add, mean_resizing=mean_resizing)
        apply_edits(src, tmp, plan)
        unchanged = _unchanged_tokenizer(facts, src, tmp, tokenizer) if not plan.files else None  # a new file
        out_facts = reread(tmp, tokenizer, unchanged)
        compared = route.compare(facts, out_facts, plan, tmp)
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

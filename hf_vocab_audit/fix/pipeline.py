"""The ``--fix`` pipeline: audit the input, plan the repair, write it to a temporary folder, verify it,
rename it into place, and report the audit of the output with what was fixed and what was not."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..audit import make_report
from ..core.findings import Applicability, AppliedFix, Finding, FixResult, Skipped
from ..core.report import Report
from ..errors import AuditError
from ..facts import Facts, gather
from ..facts.tensors import load_tensors
from ..rules import selected
from ..rules.runner import RuleRun, run_static, run_weights
from .early import EarlyCopies
from .early import start as start_early
from .edits import apply_edits
from .growth import check_growth
from .plan import make_plan
from .repair import CheckpointRepair, Unfixed
from .surgical import unsupported, write_surgical
from .transformers_route import write_transformers
from .verify import (
    VerificationError,
    check_fixed,
    compare_safetensors,
    compare_state_dicts,
    load_check,
    reread,
)
from .writer import Flusher, atomic_folder, check_output, default_output

METHODS = ("surgical", "transformers")
VERIFY_LOAD = ("auto", "always", "never")


def fix_checkpoint(
    model_dir: str | Path,
    *,
    output: str | Path | None = None,
    tokenizer: str | Path | None = None,
    unsafe_fixes: bool = False,
    pad_to_multiple_of: int | None = None,
    force: bool = False,
    method: str = "surgical",
    verify_load: str = "auto",
    mean_resizing: bool = True,
    allow_large_growth: bool = False,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    weights: bool = False,
    accept: Callable[[list[Finding]], list[Finding]] | None = None,
) -> Report:
    """Apply the fixes the audit offers to a copy of ``model_dir`` and return the audit of that copy.

    The copy is written to a temporary sibling of ``output`` (default ``<model_dir>-fixed``), verified,
    then renamed into place; ``Report.fixes`` lists what was applied and ``Report.fix`` (a :class:`FixResult`) the
    unfixed findings, notes and verification. ``accept`` marks the input's findings an allowlist accepts
    (``Finding.allowed``): those are left alone, not "fixed". ``weights=True`` also runs the ``--weights`` rules on the
    input and the output; with ``unsafe_fixes`` their untrained token rows are set to the mean of the
    trained rows (they stay untrained: HVA601 reports them as equal to the mean). Growth past
    :func:`check_growth`'s bound needs ``allow_large_growth``.
    Raises :class:`AuditError` on bad input or a failed check.
    """
    start = time.perf_counter()
    if method not in METHODS:
        raise AuditError(None, f"--method must be one of {', '.join(METHODS)}, not {method!r}")
    if verify_load not in VERIFY_LOAD:
        raise AuditError(None, f"--verify-load must be one of {', '.join(VERIFY_LOAD)}, not {verify_load!r}")
    src = Path(model_dir)
    from ..facts.adapter import is_adapter

    if is_adapter(src):  # a PEFT adapter: nothing is written, each finding says why (fix/adapter_refusal.py)
        from .adapter_refusal import refuse_adapter_fix

        return refuse_adapter_fix(src, tokenizer=tokenizer, select=select, ignore=ignore)
    out_path = Path(output) if output is not None else default_output(src)
    # the shards no surgical fix rewrites are copied while the tokenizer is read and audited (fix/early.py)
    early = start_early(src, out_path, force, Path(tokenizer) if tokenizer is not None else None) \
        if method == "surgical" else None
    try:
        pre_read = early.tensors if early is not None else None
        facts = gather(src, tokenizer, tensors_from=(lambda _folder: pre_read) if pre_read is not None else load_tensors)
        check_output(src, out_path, force, Path(tokenizer) if tokenizer is not None else None)
        if facts.tensors is not None and facts.tensors.refused:
            refused = facts.tensors.refused[0]
            raise AuditError(src / refused.file, f"refused to load ({refused.reason}); --fix cannot rewrite it")
        rules = selected(select, ignore)
        before = list(run_static(facts, rules).findings)
        untrained: dict[str, tuple[int, ...]] = {}
        if weights:
            w_run, weight_facts = run_weights(facts, rules)
            before += w_run.findings
            untrained = flagged_rows(weight_facts)
        tokenizer_editable = tokenizer is None or Path(tokenizer).resolve() == src.resolve()
        options: dict[str, Any] = dict(unsafe=unsafe_fixes, pad_to_multiple_of=pad_to_multiple_of,
                                       tokenizer_editable=tokenizer_editable, reinit_exclude=untrained)
        if accept is not None:
            before = accept(before)
        plan = make_plan(facts, sorted(before, key=lambda f: f.code), **options)
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
            plan = make_plan(facts, sorted(before, key=lambda f: f.code), **options,
                             no_reinit="the transformers route does not re-initialise rows"
                                       + (f" (it is used because {reason})" if reason else ""))
            if not plan.changes_weights:
                used = "surgical"
        notes = list(plan.notes)
        if reason and plan.changes_weights:
            notes.append(f"used the transformers route: {reason}")
        if plan.reinit:
            notes.append("re-initialised rows equal the mean of the trained rows but are still untrained: "
                         "--weights reports them as such (HVA601) until training updates them")
        info: dict[str, Any] = {}
        try:
            after, out_facts = _write(facts, src, out_path, plan, used, info, rules, before,
                                      force=force, tokenizer=None if tokenizer_editable else tokenizer,
                                      mean_resizing=mean_resizing, verify_load=verify_load, weights=weights,
                                      early=early)
        except VerificationError as exc:
            raise VerificationError(out_path, exc.problem) from None
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise AuditError(out_path, f"cannot be written ({reason}); nothing was written there") from exc
        weights_section = info.pop("weights", None)
        fixes, unfixed = _settle(plan, before, list(after.findings))
        load_skip = (Skipped("--verify-load", info["load"]),) if info["load"].startswith("skipped") else ()
        result = FixResult(str(src), str(out_path), used if plan.changes_weights else "copy", plan.rows_before,
                           plan.rows_after, tuple(unfixed), tuple(notes), info, dict(plan.reinit) or None)
        return make_report(str(out_path), out_facts, after, start,
                           {"weights": weights_section} if weights_section else {},
                           skipped=load_skip, fixes=fixes, fix=result,
                           facts_update={"weight_files": list(out_facts.tensors.files) if out_facts.tensors else []})
    finally:
        if early is not None:
            early.close()


def flagged_rows(weight_facts: Any) -> dict[str, tuple[int, ...]]:
    """Per tensor, the token rows the weights analysis found untrained or low-norm (the re-initialising
    mean leaves them out)."""
    if weight_facts is None:
        return {}
    return {s.stats.tensor: tuple(int(i) for i in s.flagged()) for s in weight_facts.sides}


def _write(facts: Any, src: Path, out_path: Path, plan: CheckpointRepair, used: str, info: dict[str, Any], rules: Any,
           before: list[Finding], *, force: bool, tokenizer: str | Path | None, mean_resizing: bool,
           verify_load: str, weights: bool = False, early: EarlyCopies | None = None) -> tuple[RuleRun, Facts]:
    """Write the fixed checkpoint to a temporary folder, prove it, then rename it to ``out_path``."""
    flusher = Flusher()  # the disk writes the weights while they are verified
    with atomic_folder(out_path, force) as tmp, contextlib.closing(flusher):
        if used == "surgical" or not plan.changes_weights:
            copied = early.move_into(tmp) if early is not None else set()
            grown = write_surgical(facts, tmp, plan, flusher.add, copied)
            info["grown"] = [g.__dict__ for g in grown]
        else:
            info["transformers"] = write_transformers(facts, tmp, plan, mean_resizing=mean_resizing)
        apply_edits(src, tmp, plan)
        out_facts = reread(tmp, Path(tokenizer) if tokenizer is not None else None,
                           _unchanged_tokenizer(facts, src, tmp, tokenizer))
        if used == "surgical" or not plan.changes_weights:
            if facts.tensors is None:
                info["compared"] = {}
            elif facts.tensors.format == "safetensors":
                info["compared"] = compare_safetensors(facts, out_facts, plan, tmp)
            else:
                info["compared"] = _same_files(facts, tmp)
        else:
            info["compared"] = compare_state_dicts(facts, tmp, plan)
        after = run_static(out_facts, rules)
        if weights:
            w_after, weight_facts = run_weights(out_facts, rules)
            after += w_after
            info["weights"] = weight_facts.summary() if weight_facts is not None else None
        # Re-initialised rows stay untrained (HVA601 "equals the mean"): compare_safetensors proved their bytes.
        check_fixed(before, after.findings, plan.verify_gone, tmp)
        info["load"] = load_check(tmp, out_facts, verify_load) if facts.tensors else "skipped: no weights"
        flusher.finish(tmp)  # durable before the rename
    return after, out_facts


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


def _same_files(facts: Any, tmp: Path) -> dict[str, int]:
    """Weights that were only copied (.bin with no growth): compare them byte for byte."""
    from .verify import _fail, same_bytes

    n = 0
    for file in facts.tensors.files:
        a, b = facts.model_dir / file, tmp / file
        size = a.stat().st_size
        if b.stat().st_size != size or not same_bytes(a, 0, b, 0, size):
            _fail(tmp, f"{file} differs from the input")
        n += size
    return {"files_compared": len(facts.tensors.files), "bytes_compared": n}



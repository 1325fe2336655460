"""The CI gate: resolve a target's facts source, load settings, build the typed options, audit or fix, apply the
allowlist.

    from hf_vocab_audit.gate import run_gate
    outcome = run_gate("models/my-model")           # or "org/name@revision"
    sys.exit(outcome.exit_code)
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .audit import audit_source
from .core.options import GateOptions, OptionValues, build_gate_options
from .core.outcome import Outcome
from .errors import AuditError
from .facts.sources import FactsSource, Repair
from .facts.sources.registry import resolve_source
from .settings import AllowEntry, Settings, apply_allowlist, fix_safety, load_settings

if TYPE_CHECKING:
    from .core.report import Report


@dataclass(frozen=True)
class GateOutcome:
    """The judged report (``report.outcome`` holds the verdict), the settings used, allowlist entries unused."""

    report: Report
    settings: Settings
    unused_allow: tuple[AllowEntry, ...]
    options: GateOptions = GateOptions()

    @property
    def outcome(self) -> Outcome:
        return self.report.verdict()

    @property
    def exit_code(self) -> int:
        return self.outcome.exit_code




def run_gate(
    target: str,
    *,
    cwd: Path | None = None,
    options: OptionValues | None = None,
    progress: bool = False,
    **keywords: Any,
) -> GateOutcome:
    """Audit ``target`` (a local folder or GGUF, else ``org/name[@revision]`` on the Hub) under the merged settings.

    ``options`` are the command line's values (:meth:`OptionValues.from_flags`); ``keywords`` the same by
    ``core.options.Option.attr`` (``config``, ``tokenizer``, ``select``, ``fail_on``, ``weights``,
    ``datasets``, ``fix``, ``output``...; None = not given), for the Python API; keywords win over
    ``options``, and both over the settings files. Clashing options are refused before any file is read;
    options the target's kind cannot take, before anything of it is read.
    Raises :class:`AuditError` for bad input, bad configuration or an unreachable Hub.
    """
    given = (options or OptionValues()).merged(OptionValues(keywords))
    first = build_gate_options(given, target, complete=False)  # clashes among the flags: before any read
    source = resolve_source(target)
    with ExitStack() as stack:
        source.refuse(first.audit, fixing=first.fix is not None)
        settings_dir = source.open(stack)
        config = given.get("config")
        settings = load_settings(settings_dir, cwd=cwd, config=Path(config) if config is not None else None,
                                 overrides=given)
        chosen = build_gate_options(settings.values, target, progress=progress)
        source.refuse(chosen.audit, fixing=chosen.fix is not None)
        if chosen.audit.scan is not None:
            from .dataset.engines.registry import check_scan

            check_scan(chosen.audit.scan)
        report = _fix(source, chosen, settings) if chosen.fix is not None else audit_source(source, chosen.audit)
    report = _ignored_settings(report, settings, chosen)
    report, unused = apply_allowlist(report, settings.allow)
    return GateOutcome(report.judged(chosen.fail_on, chosen.exit_zero, chosen.allow_partial), settings,
                       tuple(unused), chosen)


def _ignored_settings(report: Report, settings: Settings, options: GateOptions) -> Report:
    """The report with HVA003 added: what the target's own settings file asked and the gate did not obey."""
    if not settings.ignored:
        return report
    from .core.report import sort_findings
    from .rules import Scope, selected
    from .rules.runner import run_scope

    run = run_scope(selected(options.audit.select, options.audit.ignore, scopes=(Scope.SETTINGS,)), Scope.SETTINGS,
                    settings.ignored)
    return replace(report, findings=sort_findings([*report.findings, *run.findings])) if run.findings else report


def _fix(source: FactsSource, options: GateOptions, settings: Settings) -> Report:
    """``--fix``: a repaired copy of a folder, audited; an adapter's audit that says why nothing is written."""
    assert options.fix is not None
    audit_options = options.audit
    src = Path(str(source.target))
    if source.repair is Repair.EXPLAIN:  # an adapter: the audit says why nothing is written
        from .fix.adapter_refusal import refuse_adapter_fix

        return refuse_adapter_fix(src, base=audit_options.base, tokenizer=audit_options.tokenizer_path,
                                  select=audit_options.select, ignore=audit_options.ignore)
    from .fix import folder_auditor, repair
    from .fix.writer import default_output
    from .io.output_path import check_output_folder

    keywords = options.fix.keywords()
    output = keywords.pop("output")
    scan = audit_options.scan
    check_output_folder(Path(output) if output is not None else default_output(src), (
        audit_options.base, audit_options.draft, audit_options.source, *(scan.specs if scan is not None else ()),
        scan.trl_config if scan is not None else None, *settings.sources))  # before --force deletes anything

    # the audit check runs (the same options, the allowlist applied once), on --fix's input and output
    check = folder_auditor(audit_options, lambda report: apply_allowlist(report, settings.allow)[0])
    return repair(src, output, audit=check, tokenizer=audit_options.tokenizer_path,
                  applicability=fix_safety(settings), **keywords)


__all__ = ["AuditError", "GateOutcome", "run_gate"]

"""The public entry point: ``audit(model_dir) -> Report``."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path

from . import __version__
from .errors import AuditError
from .facts import Facts, gather, skipped_for
from .findings import Finding, Skipped
from .report import Report, sort_findings
from .rules import Rule, selected


def run_rules(facts: Facts, rules: Iterable[Rule]) -> tuple[list[Finding], list[Skipped], list[str]]:
    findings: list[Finding] = []
    skipped: list[Skipped] = []
    ran: list[str] = []
    for r in rules:
        if r.scope != "static":
            continue
        skip = skipped_for(facts, r.requires)
        if skip is not None:
            skipped.append(Skipped(f"{r.code} {r.name}", skip.reason))
            continue
        findings.extend(r.findings(facts))
        ran.append(r.code)
    return findings, skipped, ran


def audit(
    model_dir: str | Path,
    *,
    tokenizer: str | Path | None = None,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    weights: bool = False,
    datasets: Iterable[str] | None = None,
    dataset_config: str | None = None,
    splits: Iterable[str] | None = None,
    text_columns: Iterable[str] | None = None,
    label_columns: Iterable[str] | None = None,
    max_rows: int | None = None,
    batch_size: int = 1000,
    num_proc: int = 1,
    progress: bool = False,
    engine: str = "local",
    ray_address: str | None = None,
    dataset_histograms: bool = False,
    base: str | Path | None = None,
) -> Report:
    """Audit a local checkpoint folder from its files alone (no weights are loaded).

    ``weights=True`` also reads the embedding matrices (only them) to find untrained token rows (HVA6xx).
    With ``datasets`` (SPECs: data files, globs, folders, ``save_to_disk`` folders, Hub ids), every
    selected split is also streamed against the model (HVA5xx); ``Report.extra["dataset"]`` holds
    per-column stats (``dataset_histograms=True`` adds the id and length histograms the HTML report plots);
    ``engine="ray"`` scans on Ray Data (at ``ray_address`` or on a local instance).
    A PEFT adapter folder (``adapter_config.json``, no ``config.json``) is audited against its base
    (``base``, else its ``base_model_name_or_path``: a local folder or a Hub id) with the HVA8xx rules.
    Raises :class:`hf_vocab_audit.AuditError` when the audit cannot run.
    """
    start = time.perf_counter()
    from .facts.adapter import is_adapter

    if is_adapter(Path(model_dir)):
        from .facts.adapter_base import gather_adapter

        facts = gather_adapter(Path(model_dir), base, tokenizer)
    elif base is not None:
        raise AuditError(Path(model_dir), "--base applies to a PEFT adapter folder (adapter_config.json) only")
    else:
        facts = gather(model_dir, tokenizer)
    rules = selected(select, ignore)
    findings, skipped, ran = run_rules(facts, rules)
    extra: dict = {}
    if weights:
        from .weights import run_weight_rules

        w_findings, w_skipped, w_ran, section = run_weight_rules(facts, rules)
        findings, skipped, ran = findings + w_findings, skipped + w_skipped, ran + w_ran
        if section is not None:
            extra["weights"] = section
    if datasets:
        from .dataset.report import dataset_section, run_dataset_rules
        from .dataset.scan import Options, scan

        specs = tuple(str(d) for d in datasets)
        df = scan(facts, Options(specs, dataset_config, tuple(splits or ()), tuple(text_columns or ()),
                                 tuple(label_columns or ()), max_rows, batch_size, num_proc, progress,
                                 engine=engine, ray_address=ray_address, histograms=dataset_histograms))
        more, more_skipped, more_ran = run_dataset_rules(df, rules)
        findings, skipped, ran = findings + more, skipped + more_skipped, ran + more_ran
        extra["dataset"] = dataset_section(df, specs)
    if facts.adapter is not None:
        from .facts.adapter_base import relocate_base_findings

        findings = relocate_base_findings(findings, facts)
    return make_report(str(model_dir), facts, findings, skipped, ran, start, extra)


def make_report(target: str, facts: Facts, findings: list[Finding], skipped: list[Skipped], ran: list[str],
                start: float, extra: dict | None = None) -> Report:
    """The report of one audit: findings sorted, facts summarised, timed from ``start``."""
    return Report(
        target=target,
        tool_version=__version__,
        findings=sort_findings(findings),
        skipped=tuple(skipped),
        facts=facts.summary(),
        rules_run=tuple(ran),
        duration_s=time.perf_counter() - start,
        extra=extra or {},
    )

"""The public entry point: ``audit(model_dir) -> Report``, or ``audit(model=model, tokenizer=tokenizer)``."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path

from . import __version__
from .errors import AuditError
from .facts import Facts, facts_from_memory, gather, skipped_for
from .facts.memory import MEMORY_FORMAT, is_path, tokenizer_facts
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


def gather_for_audit(model_dir: str | Path | None, model: object | None,
                     tokenizer: str | Path | object | None) -> tuple[str, Facts]:
    """(report target, facts) for a folder or a live model, with a tokenizer folder or object."""
    if model is not None:
        if model_dir is not None:
            raise TypeError("audit() takes a model folder or model=<live model>, not both")
        if is_path(model):
            raise TypeError("model= takes a live PreTrainedModel; pass a folder as audit(model_dir)")
        facts = facts_from_memory(model, tokenizer)
        return str(facts.model_dir), facts
    if model_dir is None:
        raise TypeError("audit() needs a model folder (audit(model_dir)) or a live model (audit(model=...))")
    if not is_path(model_dir):
        raise TypeError(f"model_dir must be a folder path, not {type(model_dir).__name__}: "
                        "pass a live model as audit(model=..., tokenizer=...)")
    if tokenizer is None or is_path(tokenizer):
        return str(model_dir), gather(os.fspath(model_dir), os.fspath(tokenizer) if tokenizer is not None else None)
    return str(model_dir), gather(os.fspath(model_dir), tokenizer_facts=tokenizer_facts(tokenizer))


def audit(
    model_dir: str | Path | None = None,
    *,
    model: object | None = None,
    tokenizer: str | Path | object | None = None,
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
    """Audit a local checkpoint folder from its files alone (no weights are loaded), or live objects.

    ``model=`` takes a live transformers ``PreTrainedModel`` instead of a folder, and ``tokenizer`` a live
    tokenizer as well as a folder: the facts come from the objects as they are now (nothing is saved),
    so a tokenizer changed by ``add_special_tokens`` is audited as ``save_pretrained`` would write it.

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

    if model is None and is_path(model_dir) and is_adapter(Path(os.fspath(model_dir))):
        from .facts.adapter_base import gather_adapter

        if tokenizer is not None and not is_path(tokenizer):
            raise TypeError("a PEFT adapter folder is audited with its own tokenizer files, not a live tokenizer")
        target = str(model_dir)
        facts = gather_adapter(Path(os.fspath(model_dir)), base, os.fspath(tokenizer) if tokenizer is not None else None)
    elif base is not None:
        raise AuditError(Path(os.fspath(model_dir)) if is_path(model_dir) else None,
                         "--base applies to a PEFT adapter folder (adapter_config.json) only")
    else:
        target, facts = gather_for_audit(model_dir, model, tokenizer)
    rules = selected(select, ignore)
    findings, skipped, ran = run_rules(facts, rules)
    extra: dict = {}
    if weights and facts.tensors is not None and facts.tensors.format == MEMORY_FORMAT:
        skipped += [Skipped(f"{r.code} {r.name}", "the weight statistics read safetensors files; a live model has "
                            "none here (audit its saved folder with weights=True)") for r in rules if r.scope == "weights"]
    elif weights:
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
    return make_report(target, facts, findings, skipped, ran, start, extra)


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

"""The public entry point: ``audit(model_dir) -> Report``."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .core.findings import AppliedFix, FixResult, Skipped, Source
from .core.report import Report, sort_findings
from .facts import Facts, gather
from .rules import selected
from .rules.runner import RuleRun, run_dataset, run_static, run_weights
from .version import __version__


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
) -> Report:
    """Audit a local checkpoint folder from its files alone (no weights are loaded).

    ``weights=True`` also reads the embedding matrices (only them) to find untrained token rows (HVA6xx).
    With ``datasets`` (SPECs: data files, globs, folders, ``save_to_disk`` folders, Hub ids), every
    selected split is also streamed against the model (HVA5xx); ``Report.extra["dataset"]`` holds
    per-column stats (``dataset_histograms=True`` adds the id and length histograms the HTML report plots);
    ``engine="ray"`` scans on Ray Data (at ``ray_address`` or on a local instance).
    Raises :class:`hf_vocab_audit.AuditError` when the audit cannot run.
    """
    start = time.perf_counter()
    rules = selected(select, ignore)  # bad selectors fail before any file is read
    facts = gather(model_dir, tokenizer)
    run = run_static(facts, rules)
    extra: dict[str, Any] = {}
    if weights:
        more, weight_facts = run_weights(facts, rules)
        run += more
        if weight_facts is not None:
            extra["weights"] = weight_facts.summary()
    if datasets:
        from .dataset.report import dataset_section
        from .dataset.scan import Options, scan

        specs = tuple(str(d) for d in datasets)
        df = scan(facts, Options(specs, dataset_config, tuple(splits or ()), tuple(text_columns or ()),
                                 tuple(label_columns or ()), max_rows, batch_size, num_proc, progress,
                                 engine=engine, ray_address=ray_address, histograms=dataset_histograms))
        run += run_dataset(df, rules)
        extra["dataset"] = dataset_section(df, specs)
    return make_report(str(model_dir), facts, run, start, extra)


def make_report(target: str, facts: Facts, run: RuleRun, start: float, extra: dict[str, Any] | None = None, *,
                skipped: tuple[Skipped, ...] = (), fixes: tuple[AppliedFix, ...] = (), fix: FixResult | None = None,
                source: Source = Source.FOLDER, facts_update: dict[str, Any] | None = None) -> Report:
    """The report of one audit: findings sorted, facts summarised, timed from ``start``.

    ``skipped`` is further work not done, ``fixes`` what ``--fix`` applied, ``facts_update`` overrides summary facts.
    """
    return Report(
        target=target,
        tool_version=__version__,
        findings=sort_findings(list(run.findings)),
        skipped=run.skipped + skipped,
        errors=run.errors,
        facts=facts.summary() | (facts_update or {}),
        fixes=fixes,
        fix=fix,
        rules_run=run.ran,
        duration_s=time.perf_counter() - start,
        extra=extra or {},
        source=source,
    )

"""The public entry point: ``audit(model_dir) -> Report``, or ``audit(model=model, tokenizer=tokenizer)``."""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .core.options import AUDIT_KEYWORDS, AuditKeywords, AuditOptions, OptionValues, build_audit_options
from .core.source import Source
from .facts import Facts
from .facts.sources import FactsSource
from .facts.sources.folder import ReadFolderSource
from .facts.sources.memory import is_path
from .facts.sources.registry import resolve_source
from .version import __version__

# The report model, the rules and their runner are imported inside the functions, after the facts are read:
# `check` parses the tokenizer first, and these imports overlap the proof of its ids (on other threads).
if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .core.report import Report
    from .facts.requirements import GapKind
    from .rules import Rule, Scope
    from .rules.analyses import AnalysisResult
    from .rules.runner import RuleRun


def _target(model_dir: str | Path | None, model: object | None) -> object:
    """What ``audit()`` was given to read: a folder, or a live model (``model=``), never both."""
    if model is not None:
        if model_dir is not None:
            raise TypeError("audit() takes a model folder or model=<live model>, not both")
        if is_path(model):
            raise TypeError("model= takes a live PreTrainedModel; pass a folder as audit(model_dir)")
        return model
    if model_dir is None:
        raise TypeError("audit() needs a model folder (audit(model_dir)) or a live model (audit(model=...))")
    if not is_path(model_dir):
        raise TypeError(f"model_dir must be a folder path, not {type(model_dir).__name__}: "
                        "pass a live model as audit(model=..., tokenizer=...)")
    return model_dir


def audit(
    model_dir: str | Path | None = None,
    *,
    model: object | None = None,
    options: AuditOptions | None = None,
    progress: bool = False,
    dataset_histograms: bool = False,
    facts: Facts | None = None,
    **keywords: Unpack[AuditKeywords],
) -> Report:
    """Audit a local checkpoint folder from its files alone (no weights are loaded), or live objects.

    ``model=`` takes a live transformers ``PreTrainedModel`` instead of a folder, and ``tokenizer`` a live
    tokenizer as well as a folder: the facts come from the objects as they are now (nothing is saved),
    so a tokenizer changed by ``add_special_tokens`` is audited as ``save_pretrained`` would write it.

    ``weights=True`` also reads the embedding matrices (only them) to find untrained token rows (HVA6xx).
    With ``datasets`` (SPECs: data files, globs, folders, ``save_to_disk`` folders, Hub ids), every
    selected split is also streamed against the model (HVA5xx); ``Report.dataset`` holds
    per-column stats (``dataset_histograms=True`` adds the id and length histograms the HTML report plots);
    ``engine="ray"`` scans on Ray Data (at ``ray_address`` or on a local instance).
    Splits in one of TRL's formats (``messages``; ``prompt``/``completion``; ``prompt``/``chosen``/``rejected``;
    ``completion`` with a boolean ``label``) are rendered through the chat template as TRL renders them
    (``chat_format`` settles an ambiguous split, ``"off"`` disables it; ``messages_column`` names the turns
    column); ``max_length``, ``assistant_only_loss``, ``completion_only_loss`` and ``packing`` are the
    trainer's settings (else read from ``trl_config`` or a ``sft_config.json``/``.yaml`` beside the data).
    ``show_mask=N`` (1 to 20) keeps the first N rows of each such split, token by token, with whether the
    trainer computes a loss on each (``SplitSection.mask_preview``).
    ``datasets`` may also hold live ``datasets.Dataset``/``DatasetDict``/``IterableDataset``/
    ``IterableDatasetDict`` objects, read batch by batch (a streaming one is consumed once).
    ``target_kind="gguf"`` / ``"vllm"`` adds what llama.cpp's converter / a serving engine will do (HVA92x, HVA95x).
    A PEFT adapter folder (``adapter_config.json``, no ``config.json``) is audited against its base
    (``base``, else its ``base_model_name_or_path``: a local folder or a Hub id) with the HVA8xx rules.
    The report's ``coverage`` says what was examined; anything the selected rules needed that was not
    (a missing tokenizer or weights, a dataset column the model reads left unchecked) fails the default
    verdict (exit 2) unless it is judged with ``allow_partial=True`` (``report.exit_code(allow_partial=True)``).
    ``facts``: the folder's files already read (``--fix`` audits its input and its output with the facts it
    read to plan and verify them); ``model_dir`` then only names the target in the report.
    ``options``: the typed options instead of the keywords (one or the other): the keywords are the options'
    ``attr`` names (``core.options.OPTIONS``) of the audit and the dataset scan, mapped through the same
    declarations as the command line's flags and the settings files' keys.
    Raises :class:`hf_vocab_audit.AuditError` when the audit cannot run, or when the target has nothing to
    examine (no tokenizer, no vocabulary matrix, no model config).
    """
    if options is None:
        options = _keyword_options(keywords, progress=progress, histograms=dataset_histograms)
    elif keywords:
        raise TypeError("audit() takes options=AuditOptions(...) or option keywords, not both")
    if options.scan is not None:
        from .dataset.engines.registry import check_scan

        check_scan(options.scan)
    target = _target(model_dir, model)
    source = ReadFolderSource(target, facts) if facts is not None else resolve_source(target, remote=False)
    source.refuse(options)
    return audit_source(source, options)


def _keyword_options(keywords: Mapping[str, Any], *, progress: bool, histograms: bool) -> AuditOptions:
    """``audit()``'s option keywords as its typed options, through the declarations (``AUDIT_KEYWORDS``)."""
    from .rules import selected

    unknown = [k for k in keywords if k not in AUDIT_KEYWORDS]
    if unknown:
        raise TypeError(f"audit() got an unexpected keyword argument {unknown[0]!r}")
    values = OptionValues(keywords)
    select, ignore = values.get("select"), values.get("ignore")
    if select or ignore:
        selected(select, ignore)  # bad selectors fail before any file is read
    live: dict[str, Any] = {}
    if values.get("datasets"):
        from .dataset.live import spec_names

        specs, live = spec_names(values.get("datasets"))
        values = values.merged({"datasets": specs})
    return build_audit_options(values, progress=progress, histograms=histograms, live=live)


def _tuple(values: Iterable[str] | None) -> tuple[str, ...] | None:
    return None if values is None else tuple(values)


def audit_source(source: FactsSource, options: AuditOptions) -> Report:
    """Audit what ``source`` reads (opened already, where it needs opening) under ``options``.

    One pipeline for every source, which never asks what kind of target it holds: the source declares the rule
    scopes its facts take, the rules it cannot support, the analyses it cannot feed and whether an empty
    target is refused (``facts.sources.FactsSource``); its locator places the findings (``rules.locators``);
    the analyses the options ask for (``rules.analyses.registry.ANALYSES``) add their rules, sections and gaps.
    """
    start = time.perf_counter()
    if options.select or options.ignore:
        from .rules import selected

        selected(options.select, options.ignore)  # an unknown selector fails before anything is read
    facts = source.gather(options)
    # Imported after the facts are read: meanwhile other threads prove the tokenizer's ids
    # (``facts.tokenizer.vocab_ids``), and these imports overlap them.
    from .rules import Scope, selected
    from .rules.analyses import AuditContext
    from .rules.analyses.registry import ANALYSES, run_analyses
    from .rules.coverage import ensure_auditable
    from .rules.entry_points import run_entry_points
    from .rules.locators import locator_of
    from .rules.runner import RuleRun, run_scope

    # only the rule modules of the scopes this audit runs are imported (a plain check: the static ones)
    asked = [a.scope for a in ANALYSES if a.scope is not None and a.wanted(options)]
    rules = selected(options.select, options.ignore, scopes={Scope.STATIC, *source.scopes, *asked})
    if source.refuse_empty:
        ensure_auditable(facts)
    # each checkpoint the folder loads as, then the source's own scopes (a GGUF's HVA90x)
    run = run_entry_points(facts, rules, lines=source.lines, unsupported=source.unsupported)
    for scope in source.scopes:
        run += run_scope(rules, scope, facts)
    done = run_analyses(AuditContext(facts, rules, options), source.cannot)
    elsewhere = RuleRun()  # findings of analyses that lie outside the target (a GGUF's --source)
    for analysis, result in done:
        if analysis.located:
            run += result.run
        else:
            elsewhere += result.run
    run = replace(run, findings=tuple(locator_of(source)(facts, run.findings))) + elsewhere
    scopes = {Scope.STATIC, *source.scopes, *(analysis.scope for analysis, _ in done if analysis.scope is not None)}
    return make_report(source.label, facts, run, start, [result for _, result in done], source=source.origin,
                       rules_selected=auditable(rules, scopes), by_design=source.by_design(facts))


def auditable(rules: list[Rule], scopes: Iterable[Scope]) -> int:
    """How many of the selected rules this audit set out to run: those of the ``scopes`` it ran (the static
    ones, the source's own, and the analyses' asked for; batch rules belong to the runtime guard)."""
    wanted = set(scopes)
    return sum(1 for r in rules if r.scope in wanted)


def make_report(target: str, facts: Facts, run: RuleRun, start: float, analyses: Sequence[AnalysisResult] = (), *,
                source: Source = Source.FOLDER, rules_selected: int | None = None,
                by_design: Collection[GapKind] = ()) -> Report:
    """The report of one audit: findings sorted, facts summarised, coverage recorded, timed from ``start``.

    ``run`` holds every rule run (the analyses' included, placed by the source's locator); ``analyses`` give
    the report sections, the dataset splits covered and the gaps they left; ``rules_selected`` is how many
    rules were selected (default: those that ran or were skipped), ``by_design`` what the source lacks by
    design (``FactsSource.by_design``: not gaps).
    """
    from .core.report import Report, sort_findings
    from .rules.analyses import Sections
    from .rules.causes import explain
    from .rules.coverage import coverage_of

    if rules_selected is None:
        rules_selected = len(set(run.ran) | {s.rule for s in run.skipped if s.rule})
    sections = Sections()
    for result in analyses:
        sections |= result.sections
    ordered = sort_findings(list(run.findings))
    findings, causes = explain(facts, ordered, target, in_memory=source is Source.MEMORY)
    return Report(
        target=target,
        tool_version=__version__,
        findings=tuple(findings),
        causes=causes,
        skipped=run.skipped,
        errors=run.errors,
        facts=facts.summary(),
        rules_run=run.ran,
        duration_s=round(time.perf_counter() - start, 3),  # as the JSON states it: reports round-trip
        **sections.report_fields(),
        source=source,
        coverage=coverage_of(facts, run, rules_selected, tuple(s for r in analyses for s in r.splits),
                             tuple(g for r in analyses for g in r.gaps), by_design),
    )


def audit_gguf(path: str | Path, *, select: Iterable[str] | None = None,
               ignore: Iterable[str] | None = None, source: str | Path | None = None,
               tokenizer: str | Path | None = None) -> Report:
    """Audit a GGUF file (or a folder holding one, or the first part of a sharded one) from its metadata and
    tensor infos: the checkpoint rules that mean the same on a GGUF, located in it (file + metadata key),
    and the GGUF rules (HVA90x). ``source``: the HF checkpoint folder it was converted from, compared id by
    id (HVA91x). Raises :class:`AuditError` for a file that cannot be read safely."""
    from .facts.sources.gguf import GGUFSource
    from .rules import selected

    selected(select, ignore)
    options = AuditOptions(tokenizer=tokenizer, select=_tuple(select), ignore=_tuple(ignore), source=source)
    gguf = GGUFSource(path)
    gguf.refuse(options)
    return audit_source(gguf, options)

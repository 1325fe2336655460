"""The public entry point: ``audit(model_dir) -> Report``, or ``audit(model=model, tokenizer=tokenizer)``."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .core.options import AUDIT_KEYWORDS, AuditOptions, OptionValues, build_audit_options
from .core.source import Source
from .facts import Facts, gather
from .facts.sources import FactsSource
from .facts.sources.folder import ReadFolderSource
from .facts.sources.memory import is_path
from .facts.sources.registry import resolve_source
from .version import __version__

# The report model, the rules and their runner are imported inside the functions, after the facts are read:
# `check` parses the tokenizer first, and these imports overlap the proof of its ids (on other threads).
if TYPE_CHECKING:
    from .core.findings import AppliedFix, FixResult, Skipped
    from .core.report import Report
    from .dataset.scan import DatasetFacts
    from .facts.trainable_rows import FrozenRows
    from .rules import Rule
    from .rules.runner import RuleRun
    from .weights.analysis import WeightFacts


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
    **keywords: Any,
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
    from .dataset.engines.registry import check_scan

    if options is None:
        options = _keyword_options(keywords, progress=progress, histograms=dataset_histograms)
    elif keywords:
        raise TypeError("audit() takes options=AuditOptions(...) or option keywords, not both")
    if options.scan is not None:
        check_scan(options.scan)
    target = _target(model_dir, model)
    source = ReadFolderSource(target, facts) if facts is not None else resolve_source(target, remote=False)
    source.refuse(options)
    return audit_source(source, options)


def _keyword_options(keywords: dict[str, Any], *, progress: bool, histograms: bool) -> AuditOptions:
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
    """Audit what ``source`` reads (opened already, where it needs opening) under ``options``."""
    start = time.perf_counter()
    if options.select or options.ignore:
        from .rules import selected

        selected(options.select, options.ignore)  # an unknown selector fails before anything is read
    facts = source.gather(options)
    # Imported after the facts are read: meanwhile other threads prove the tokenizer's ids
    # (``facts.tokenizer.vocab_ids``), and these imports overlap them.
    from .core.sections import VllmSection
    from .rules import Scope, selected
    from .rules.coverage import ensure_auditable
    from .rules.entry_points import run_entry_points
    from .rules.runner import run_dataset, run_scope, run_weights

    rules = selected(options.select, options.ignore)
    if facts.gguf is not None:  # llama.cpp's format: its own rules, located in the file
        return _gguf_report(source.label, facts, rules, options, start)
    ensure_auditable(facts)
    in_memory = source.origin is Source.MEMORY
    run = run_entry_points(facts, rules, lines=source.lines)  # each checkpoint the folder loads as
    extra: dict[str, Any] = {}
    df = None
    weight_facts = None
    weights, target_kind = options.weights, options.target_kind
    if weights and in_memory:
        run += run_scope(rules, Scope.WEIGHTS, None, lambda _r: "the weight statistics read safetensors files; a live "
                         "model has none here (audit its saved folder with weights=True)")
    elif weights:
        more, weight_facts = run_weights(facts, rules)
        run += more
        if weight_facts is not None:
            extra["weights"] = weight_facts.summary()
    if options.scan is not None:
        from .dataset.engines.registry import scan
        from .dataset.report import dataset_section

        df = scan(facts, options.scan, _frozen_rows(weight_facts, rules))
        run += run_dataset(df, rules)
        extra["dataset"] = dataset_section(df, options.scan.specs)
    if target_kind is not None:
        from .facts.targets import predict, undecodable_ids

        run += run_scope(rules, Scope.TARGET, predict(facts, target_kind))
        if target_kind == "vllm":
            suppress = undecodable_ids(facts)
            extra["vllm"] = VllmSection(tuple(suppress))
            if weight_facts is not None:  # --weights: untrained rows of tokens not in normal use (reserved)
                reserved = [i for i in weight_facts.flagged_ids() if not weight_facts.used(i)]
                extra["vllm"] = VllmSection(tuple(sorted(set(suppress) | set(reserved))), tuple(reserved))
    if facts.adapter is not None:
        from .facts.sources.adapter_base import relocate_base_findings

        run = replace(run, findings=tuple(relocate_base_findings(list(run.findings), facts)))
    return make_report(source.label, facts, run, start, extra,
                       source=source.origin, rules_selected=auditable(rules, weights=weights,
                                                datasets=options.scan is not None,
                                                target=target_kind is not None), dataset=df)


def _frozen_rows(weight_facts: WeightFacts | None, rules: list[Rule]) -> FrozenRows | None:
    """The untrained rows an adapter leaves frozen, for the scan to watch, when HVA580 is selected."""
    from .rules.dataset_frozen import dataset_uses_frozen_untrained_row

    if weight_facts is None or not any(r.check is dataset_uses_frozen_untrained_row for r in rules):
        return None
    from .weights.frozen import frozen_untrained

    return frozen_untrained(weight_facts)


def auditable(rules: list[Rule], *, weights: bool = False, datasets: bool = False, target: bool = False) -> int:
    """How many of the selected rules this audit set out to run: the static ones, and the weights, dataset and
    --target rules when those were asked for (batch rules belong to the runtime guard)."""
    from .rules import Scope

    scopes = {Scope.STATIC} | ({Scope.WEIGHTS} if weights else set()) | ({Scope.DATASET} if datasets else set())
    scopes |= {Scope.TARGET} if target else set()
    return sum(1 for r in rules if r.scope in scopes)


def make_report(target: str, facts: Facts, run: RuleRun, start: float, extra: dict[str, Any] | None = None, *,
                skipped: tuple[Skipped, ...] = (), fixes: tuple[AppliedFix, ...] = (), fix: FixResult | None = None,
                source: Source = Source.FOLDER, facts_update: dict[str, Any] | None = None,
                rules_selected: int | None = None, dataset: DatasetFacts | None = None) -> Report:
    """The report of one audit: findings sorted, facts summarised, coverage recorded, timed from ``start``.

    ``skipped`` is further work not done, ``fixes`` what ``--fix`` applied, ``facts_update`` overrides summary
    facts, ``rules_selected`` how many rules were selected (default: those that ran or were skipped),
    ``dataset`` the dataset scan, whose splits and gaps the coverage records.
    """
    from .core.report import SECTIONS, Report, sort_findings
    from .rules.causes import explain
    from .rules.coverage import coverage_of

    if rules_selected is None:
        rules_selected = len(set(run.ran) | {s.rule for s in run.skipped if s.rule})
    ordered = sort_findings(list(run.findings))
    if source is Source.MEMORY:
        from .rules.memory_locations import on_objects

        ordered = tuple(on_objects(ordered))
    findings, causes = explain(facts, ordered, target, in_memory=source is Source.MEMORY)
    return Report(
        target=target,
        tool_version=__version__,
        findings=tuple(findings),
        causes=causes,
        skipped=run.skipped + skipped,
        errors=run.errors,
        facts=facts.summary() | (facts_update or {}),
        fixes=fixes,
        fix=fix,
        rules_run=run.ran,
        duration_s=round(time.perf_counter() - start, 3),  # as the JSON states it: reports round-trip
        # the typed sections by name (weights, dataset, vllm, gguf_source); anything else stays in extra
        **{k: v for k, v in (extra or {}).items() if k in SECTIONS},
        extra={k: v for k, v in (extra or {}).items() if k not in SECTIONS},
        source=source,
        coverage=coverage_of(facts, run, rules_selected, dataset),
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


def _gguf_report(target: str, facts: Facts, rules: list[Rule], options: AuditOptions, start: float) -> Report:
    """The GGUF audit: the static rules that mean the same on a GGUF, the GGUF rules, and the comparison
    with ``options.source`` (the HF checkpoint it was converted from)."""
    from .facts.requirements import missing_fact
    from .facts.sources.gguf import relocate_gguf_findings
    from .rules import Scope
    from .rules.gguf import NOT_FOR_GGUF
    from .rules.runner import run_scope

    assert facts.gguf is not None
    run = run_scope(rules, Scope.STATIC, facts, lambda r: NOT_FOR_GGUF.get(r.code) or missing_fact(facts, r.requires))
    run += run_scope(rules, Scope.GGUF, facts)
    run = replace(run, findings=tuple(relocate_gguf_findings(list(run.findings), facts.gguf)))
    extra: dict[str, Any] = {}
    if options.source is not None:
        from .facts.gguf_source import compare

        source = options.source
        hf = gather(os.fspath(source), options.tokenizer_path)
        why = None if hf.tokenizer is not None else hf.missing.get("tokenizer", "the source has no tokenizer")
        run += run_scope(rules, Scope.GGUF_SOURCE, compare(facts, hf, str(source)), lambda _r: why)
        extra["gguf_source"] = str(source)
    return make_report(target, facts, run, start, extra)

"""Stream every split of the given datasets through the kernel and merge the batch summaries."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from ..core.options import ScanOptions
from ..core.sections import MaskPreview
from ..errors import AuditError, first_line
from ..facts import Facts
from ..facts.limits import InputLimits, head_label_kind, input_limits
from ..facts.trainable_rows import FrozenRows
from ..io.jsonlines import BadLines
from .chat import summarize
from .checks import CHAT
from .expansion import check_batch
from .kernel import bad_lines_summary
from .progress import ProgressBar
from .roles import SplitColumns, Unchecked, head_kind, plan_columns
from .spec import Split, open_spec
from .summary import ColumnRole, ScanContext, Summary, merge

Options = ScanOptions  # the typed scan options (core.options) by their old name


@dataclass(frozen=True)
class SplitScan:
    source: str
    split: str
    rows: int
    columns: tuple[ColumnRole, ...]
    unchecked: tuple[Unchecked, ...]
    skipped: tuple[tuple[str, str], ...]
    truncated: bool  # stopped at --max-rows
    format: str | None = None  # the chat/instruction format read (chat_formats.ChatFormat.describe())
    chat_settings: str | None = None  # where the trainer settings came from, and what they are
    chat_problems: tuple[tuple[str, str], ...] = ()  # (check, message): split-wide chat findings
    mask_preview: MaskPreview | None = None  # --show-mask


@dataclass(frozen=True)
class DatasetFacts:
    """What the dataset rules read: the model's facts, its limits, and the merged scan summary."""

    model: Facts
    limits: InputLimits
    head: str | None  # "classification", "lm" or None
    num_labels_source: str | None
    splits: tuple[SplitScan, ...]
    summary: Summary
    seconds: float = 0.0
    missing: dict[str, str] = field(default_factory=dict)  # limit -> why it is unknown
    frozen: FrozenRows | None = None  # untrained rows an adapter leaves frozen, watched by the scan (HVA580)


def limits_for(facts: Facts) -> tuple[InputLimits, str | None, str | None, dict[str, str]]:
    """The model's limits (the one limits model, ``facts.limits``), its head kind, where num_labels came from,
    and what is unknown."""
    limits, missing = input_limits(facts)
    return limits, head_kind(facts.config.architectures), limits.source("num_labels"), missing


def _causal(facts: Facts) -> bool:
    names = " ".join(facts.config.architectures)
    return ("ForCausalLM" in names or "LMHeadModel" in names) and not facts.config.is_encoder_decoder


def _tokenizer(facts: Facts) -> Any:
    if facts.tokenizer is None:
        return None
    backend = facts.tokenizer.backend
    backend.no_padding()  # a training script's default call: no padding, no truncation
    backend.no_truncation()
    return backend


@dataclass
class _Opened:
    split: Split
    first: pa.Table | None
    rest: Iterator[pa.Table]
    plan: SplitColumns | None = None
    chat: Any = None  # chat_render.Renderer when the split holds one of TRL's formats
    chat_problems: tuple[tuple[str, str], ...] = ()
    chat_format: Any = None  # chat_formats.ChatFormat


def _peek(split: Split, batch_size: int) -> _Opened:
    it = _guard(split, split.batches(batch_size), 0)
    first = next(it, None)
    return _Opened(split, first, it)


def _guard(split: Split, batches: Iterator[pa.Table | BadLines], start: int) -> Iterator[pa.Table | BadLines]:
    """Turn read errors into one-line AuditErrors naming the dataset, split and row; validate every batch
    in full (offsets past a buffer would make the kernel read foreign memory), whichever reader made it.
    Lines the reader skipped (BadLines) pass through to be reported."""
    row = start
    while True:
        try:
            batch = next(batches)
            if isinstance(batch, BadLines):
                yield batch
                continue
            batch.validate(full=True)
            check_batch(batch, split.source, split.name, row)  # columns, and dictionaries decoded, bounded
        except StopIteration:
            return
        except AuditError:
            raise
        except Exception as exc:  # noqa: BLE001 - readers raise many kinds for bad data
            text = first_line(exc)
            raise AuditError(split.source, f"split {split.name!r}: cannot read rows after {row}: {text}") from None
        row += batch.num_rows
        yield batch


def _check_flags(opened: list[_Opened], opts: Options) -> None:
    present: set[str] = set()
    for o in opened:
        if o.first is not None:
            present.update(o.first.column_names)
    for flag, names in (("--text-column", opts.text_columns), ("--label-column", opts.label_columns)):
        for name in names:
            if name not in present:
                listing = ", ".join(sorted(present)) or "none"
                raise AuditError(", ".join(opts.specs), f"{flag} {name!r}: no split has that column "
                                                        f"(columns: {listing})")


def _open_all(opts: Options, facts: Facts) -> list[_Opened]:
    splits: list[Split] = []
    for spec in opts.specs:
        if spec in opts.live:
            from .live import live_splits

            splits.extend(live_splits(spec, opts.live[spec]))
        else:
            splits.extend(open_spec(spec, opts.config))
    if opts.splits:  # a split of several configs is named config/split; --split train takes it in each config
        names = {s.name for s in splits} | {s.split_name for s in splits}
        unknown = [s for s in opts.splits if s not in names]
        if unknown:
            raise AuditError(", ".join(opts.specs), f"no split named {', '.join(map(repr, unknown))} "
                                                    f"(splits: {', '.join(sorted({s.name for s in splits}))})")
        splits = [s for s in splits if s.name in opts.splits or s.split_name in opts.splits]
    opened = [_peek(s, opts.batch_size) for s in splits]
    _check_flags(opened, opts)
    for o in opened:
        schema = o.first.schema if o.first is not None else pa.schema([])
        o.plan = plan_columns(schema, o.split.features, facts.config.architectures,
                              text_columns=opts.text_columns, label_columns=opts.label_columns,
                              label_kind=head_label_kind(facts))
        _plan_chat(o, schema, opts, facts)
    return opened


def _plan_chat(o: _Opened, schema: pa.Schema, opts: Options, facts: Facts) -> None:
    """Recognise TRL's formats: their columns are rendered (chat.py) instead of planned one by one."""
    from .chat_formats import detect

    try:
        fmt = detect(schema, opts.chat_format, opts.messages_column)
    except AuditError as exc:
        raise AuditError(o.split.source, f"split {o.split.name!r}: {exc.problem}") from None
    if fmt is None:
        return
    o.chat_format = fmt
    from .chat import sequence_columns
    from .chat_settings import plan, settings_for

    if facts.tokenizer is None:
        raise AuditError(facts.model_dir, f"split {o.split.name!r} holds {fmt.kind} rows: rendering them needs a "
                                          "tokenizer (pass --tokenizer DIR)")
    settings = settings_for(fmt, o.split.source, dict(opts.chat_flags), opts.trl_config)
    chat = plan(fmt, facts, settings)
    renderer = chat.renderer
    if renderer is not None and fmt.conversational:  # a vision split: its media are checked too (chat_media)
        from .chat_media import media_spec

        renderer = replace(renderer, media=media_spec(schema, facts, o.split.source))
    planned = _plan(o)
    used = set(fmt.columns)
    if renderer is not None and renderer.media is not None:  # read with the rows (chat_media), not skipped
        used.update(c for c in (renderer.media.images, renderer.media.videos) if c)
    columns = tuple(p for p in planned.columns if p.name not in used)
    if renderer is not None:
        columns += tuple(ColumnRole(name, CHAT) for name in sequence_columns(renderer))
        o.chat = renderer
    o.plan = SplitColumns(columns, tuple(u for u in planned.unchecked if u.column not in used),
                          tuple(sk for sk in planned.skipped if sk[0] not in used))
    o.chat_problems = chat.problems


def _plan(o: _Opened) -> SplitColumns:
    """The column plan of an opened split (made by ``_open`` before any scan)."""
    if o.plan is None:
        raise RuntimeError(f"split {o.split.name!r} was scanned before its columns were planned")
    return o.plan


def _scan_one(o: _Opened, ctx: ScanContext, opts: Options, bar: Any) -> tuple[Summary, int, bool]:
    summary = Summary()
    rows = 0
    truncated = False
    batches = itertools.chain([o.first] if o.first is not None else [], o.rest)
    for batch in batches:
        if isinstance(batch, BadLines):  # lines of a JSON Lines file that are not rows: HVA533 at each line
            summary = merge(summary, bad_lines_summary(batch, ctx))
            continue
        if opts.max_rows is not None and rows + batch.num_rows >= opts.max_rows:
            truncated = rows + batch.num_rows > opts.max_rows
            batch = batch.slice(0, opts.max_rows - rows)
        summary = merge(summary, summarize(batch, rows, ctx))
        rows += batch.num_rows
        if bar is not None:
            bar.advance(batch.num_rows, summary)
        if opts.max_rows is not None and rows >= opts.max_rows:
            truncated = truncated or next(batches, None) is not None
            break
    return summary, rows, truncated


def _worker(spec: str, config: str | None, split_name: str, ctx: ScanContext, opts: Options,
            plan: SplitColumns) -> tuple[Summary, int, bool]:
    """Scan one split in a worker process (it reopens the dataset: open splits cannot be pickled)."""
    split = next(s for s in open_spec(spec, config) if s.name == split_name)
    o = _peek(split, opts.batch_size)
    o.plan = plan
    return _scan_one(o, ctx, opts, None)





@dataclass(frozen=True)
class ResolvedScan:
    """The dataset resolved once, before any engine runs: every selected split opened (its first batch read
    and its columns planned), the scan context of each, and the model's limits."""

    facts: Facts
    opened: tuple[Any, ...]  # _Opened, one per split
    contexts: tuple[ScanContext, ...]
    limits: InputLimits
    head: str | None
    num_labels_source: str | None
    missing: dict[str, str]
    start: float
    show_mask: int | None = None  # --show-mask N
    frozen: FrozenRows | None = None


def resolve(facts: Facts, opts: Options, frozen: FrozenRows | None = None) -> ResolvedScan:
    """Open every selected split of ``opts.specs`` and plan its columns against ``facts``' model; the ids of
    ``frozen`` rows are counted where the data uses them."""
    start = time.perf_counter()
    limits, head, num_labels_source, missing = limits_for(facts)
    opened = _open_all(opts, facts)
    tokenizer = _tokenizer(facts)
    if tokenizer is None and any(p.role == "text" for o in opened for p in _plan(o).columns):
        raise AuditError(facts.model_dir, "text columns need a tokenizer: pass --tokenizer DIR")
    tok = facts.tokenizer
    tokenizer_file = str(tok.folder / (tok.files[0] if tok.files else "")) if tok is not None else ""
    contexts = [ScanContext(o.split.source, o.split.name, tuple(p for p in _plan(o).columns if p.role != CHAT),
                            limits, tokenizer, causal_lm=_causal(facts), histograms=opts.histograms,
                            tokenizer_file=tokenizer_file, chat=o.chat, watch=frozen.ids if frozen else ())
                for o in opened]
    return ResolvedScan(facts, tuple(opened), tuple(contexts), limits, head, num_labels_source, missing, start,
                        opts.show_mask, frozen)


def scan_local(resolved: ResolvedScan, opts: Options) -> list[tuple[Summary, int, bool]]:
    """The local engine: split after split here, or up to ``num_proc`` splits in spawned processes."""
    opened, contexts = resolved.opened, resolved.contexts
    results: list[tuple[Summary, int, bool]]
    if opts.num_proc > 1 and len(opened) > 1 and not opts.live:  # a live object cannot be reopened elsewhere
        import multiprocessing

        spawn = multiprocessing.get_context("spawn")  # no fork after the tokenizer's threads started
        with ProcessPoolExecutor(max_workers=min(opts.num_proc, len(opened)), mp_context=spawn) as pool:
            futures = [pool.submit(_worker, o.split.source, opts.config, o.split.name, ctx, opts, _plan(o))
                       for o, ctx in zip(opened, contexts)]
            results = [f.result() for f in futures]
    else:
        results = []
        for o, ctx in zip(opened, contexts):
            if opts.progress:
                with ProgressBar(f"{o.split.name}", o.split.num_rows) as bar:
                    results.append(_scan_one(o, ctx, opts, bar))
            else:
                results.append(_scan_one(o, ctx, opts, None))
    return results


def collect(resolved: ResolvedScan, results: Sequence[tuple[Summary, int, bool]]) -> DatasetFacts:
    """The engine's per-split results merged into what the dataset rules read."""
    summary = Summary()
    splits = []
    for o, ctx, (s, rows, truncated) in zip(resolved.opened, resolved.contexts, results):
        summary = merge(summary, s)
        plan = _plan(o)
        preview = _preview(o, ctx, min(resolved.show_mask, rows or 1)) if resolved.show_mask else None
        splits.append(SplitScan(o.split.source, o.split.name, rows, plan.columns, plan.unchecked, plan.skipped,
                                truncated, **_chat_fields(o), mask_preview=preview))
    return DatasetFacts(resolved.facts, resolved.limits, resolved.head, resolved.num_labels_source, tuple(splits),
                        summary, time.perf_counter() - resolved.start, resolved.missing, resolved.frozen)


def _preview(o: _Opened, ctx: ScanContext, n: int) -> MaskPreview:
    """``--show-mask``: the split's first rows with the trained tokens marked, or why there are none."""
    from .checks import CHAT_MASK_EMPTY, CHAT_NO_TEMPLATE
    from .mask_preview import mask_preview

    if o.chat_format is None:
        return MaskPreview((), "not one of TRL's chat/instruction formats: nothing is rendered to preview")
    for check, message in o.chat_problems:
        if check in (CHAT_NO_TEMPLATE, CHAT_MASK_EMPTY):  # TRL refuses the split, or trains no token of it
            return MaskPreview((), message)
    if o.chat is None:
        return MaskPreview((), "the split is not rendered")
    return mask_preview(o.chat, o.first, ctx.tokenizer, n, ctx.tokenizer_file)


def _chat_fields(o: _Opened) -> dict[str, Any]:
    if o.chat_format is None:
        return {}
    out: dict[str, Any] = {"chat_problems": o.chat_problems}
    if o.chat_format is not None:
        out["format"] = o.chat_format.describe()
    if o.chat is not None:
        s = o.chat.settings
        out["chat_settings"] = (f"max_length {s.max_length}, truncation {s.truncation_mode}, assistant-only loss "
                                f"{s.assistant_only_loss}, completion-only loss {s.completion_only_loss}, packing "
                                f"{s.packing} (from {s.source})")
        if o.chat.media is not None:  # a vision split (chat_media.py)
            out["chat_settings"] += f"; {o.chat.media.describe()}"
        if o.chat.template_note:  # a processor's own template, or a chat_template.json nothing reads
            out["chat_settings"] += f"; template: {o.chat.template_note}"
    return out

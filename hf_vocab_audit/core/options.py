"""Typed options: what one audit, dataset scan, fix and output were asked to do, as frozen objects.

The command line, the settings files and the library call all build the same objects (``OPTIONS`` names
every option once: its settings key, which is its flag without ``--``, its kind and its group), so a flag
cannot mean one thing on the command line and another in ``hf-vocab-audit.toml``. Flag clashes are refused
here, when the options are built and before any file is read (:func:`refuse_clashes`); clashes that depend
on what the target is (a Hub id, a GGUF file, an adapter) are refused by its facts source, from the path
alone, before anything is gathered.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AuditError
from .outcome import FailOn
from .sections import MAX_PREVIEW_ROWS

DEFAULT_BATCH_SIZE = 1000


class OutputFormat(str, enum.Enum):
    """The report formats (``formats.RENDERERS`` holds one renderer per value)."""

    TEXT = "text"
    JSON = "json"
    MARKDOWN = "markdown"
    SARIF = "sarif"
    JUNIT = "junit"
    GITHUB = "github"
    HTML = "html"


class Method(str, enum.Enum):
    """How ``--fix`` writes the repaired copy: only the changed tensors, or through transformers."""

    SURGICAL = "surgical"
    TRANSFORMERS = "transformers"


class VerifyLoad(str, enum.Enum):
    """Whether ``--fix`` loads the result with transformers to verify it (``auto``: when it is small)."""

    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"


class TargetKind(str, enum.Enum):
    """``--target``: the consumer whose view of the checkpoint is added (llama.cpp's converter, vLLM)."""

    GGUF = "gguf"
    VLLM = "vllm"


@dataclass(frozen=True)
class ScanOptions:
    """``--dataset``: the specs to stream and how (the engine is named; ``dataset.engines`` runs it)."""

    specs: tuple[str, ...]
    config: str | None = None
    splits: tuple[str, ...] = ()
    text_columns: tuple[str, ...] = ()
    label_columns: tuple[str, ...] = ()
    max_rows: int | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    num_proc: int = 1
    progress: bool = False
    engine: str = "local"  # a name in dataset.engines.ENGINES
    ray_address: str | None = None
    histograms: bool = False  # id/length histograms for the HTML report's plots (an extra pass over the ids)
    chat_format: str | None = None  # --chat-format: one of chat_formats.FORMATS, "off", or None (recognised)
    messages_column: str | None = None  # --messages-column
    chat_flags: tuple[tuple[str, Any], ...] = ()  # --max-length, --assistant-only-loss, ... (chat_settings.KEYS)
    trl_config: str | None = None  # --trl-config: a saved SFTConfig/DPOConfig/KTOConfig
    show_mask: int | None = None  # --show-mask N: the first N rows of chat splits with the trained tokens marked
    live: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)  # SPEC name -> datasets object

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise AuditError(None, f"--batch-size must be >= 1, not {self.batch_size}")
        if self.max_rows is not None and self.max_rows < 1:
            raise AuditError(None, f"--max-rows must be >= 1, not {self.max_rows}")
        if self.show_mask is not None and not 1 <= self.show_mask <= MAX_PREVIEW_ROWS:
            raise AuditError(None, f"--show-mask must be 1 to {MAX_PREVIEW_ROWS} (rows per split), not {self.show_mask}")
        if self.engine != "local" and self.live:
            raise AuditError(", ".join(self.live), f"--engine {self.engine} reads data files and Hub datasets: "
                             "scan live datasets objects with the local engine (or save_to_disk them)")


@dataclass(frozen=True)
class AuditOptions:
    """One audit: the tokenizer (a folder or a live object), the rules selected, and what else to read."""

    tokenizer: Any = None  # a folder (str | Path) or a live tokenizer
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    weights: bool = False
    base: str | Path | None = None  # a PEFT adapter's base checkpoint
    source: str | Path | None = None  # a GGUF target's HF checkpoint
    target_kind: str | None = None  # --target (TargetKind's values)
    scan: ScanOptions | None = None  # --dataset
    hub_timeout: int | None = None  # seconds for a Hub target's requests (None: the environment, else 30)

    @property
    def tokenizer_path(self) -> str | None:
        """The tokenizer folder as a string, or None (no tokenizer option, or a live tokenizer)."""
        import os

        return os.fspath(self.tokenizer) if isinstance(self.tokenizer, (str, os.PathLike)) else None


@dataclass(frozen=True)
class FixOptions:
    """``--fix``: where the repaired copy goes and which repairs are allowed."""

    output: Path | None = None
    unsafe_fixes: bool = False
    pad_to_multiple_of: int | None = None
    force: bool = False
    method: Method = Method.SURGICAL
    verify_load: VerifyLoad = VerifyLoad.AUTO
    allow_large_growth: bool = False

    def keywords(self) -> dict[str, Any]:
        """The fix entry point's keywords (``fix.fix_checkpoint``)."""
        return dict(output=self.output, unsafe_fixes=self.unsafe_fixes, pad_to_multiple_of=self.pad_to_multiple_of,
                    force=self.force, method=self.method.value, verify_load=self.verify_load.value,
                    allow_large_growth=self.allow_large_growth)


@dataclass(frozen=True)
class OutputOptions:
    """What is written: the formats, the files they go to, the ids ``--target vllm`` says to suppress."""

    formats: tuple[OutputFormat, ...] = ()
    output_files: tuple[Path, ...] = ()
    suppress_ids_file: Path | None = None
    debug: bool = False


@dataclass(frozen=True)
class GateOptions:
    """Everything one ``check`` was asked: the audit, the fix (None: no ``--fix``), the output, the verdict."""

    audit: AuditOptions = AuditOptions()
    fix: FixOptions | None = None
    output: OutputOptions = OutputOptions()
    fail_on: FailOn = FailOn.ERROR
    exit_zero: bool = False
    allow_partial: bool = False


# ------------------------------------------------------------------------------------------ the options


_STRICTEST_FIRST = (FailOn.INFO, FailOn.WARNING, FailOn.ERROR, FailOn.NEVER)


def _lower_threshold(operator: Any, target: Any) -> str | None:
    """The target's ``fail-on`` where it is at least as strict as the operator's (a lower severity fails the
    gate on more findings), else None."""
    rank = _STRICTEST_FIRST.index
    return target if rank(FailOn(target)) <= rank(FailOn(operator or FailOn.ERROR.value)) else None


def _union(operator: Any, target: Any) -> tuple[str, ...]:
    """The operator's list and the target's entries added (``extend-unsafe-fixes``: more fixes held back)."""
    return tuple(dict.fromkeys((*(operator or ()), *target)))


@dataclass(frozen=True)
class Option:
    """One option of ``check``: its settings key (its flag without ``--``), value kind, and group.

    ``stricter``: what a target's own settings file (the checkpoint's ``hf-vocab-audit.toml``; the target is
    untrusted: CI audits pull requests) may do with the option. None: nothing; the key is not obeyed and is
    reported (HVA003). Otherwise a function of the operator's value (None: not set) and the target's that
    returns the value to use where the target's tightens the gate (``fail-on``: a lower threshold;
    ``extend-unsafe-fixes``: more fixes held back), and None where it would relax it (not obeyed)."""

    key: str
    kind: str  # bool, int, str, strs, path, paths, specs (paths or Hub ids), or choice / choices (of ``choices``)
    group: str  # gate, audit, scan, fix, output
    help: str
    choices: tuple[str, ...] = ()
    stricter: Callable[[Any, Any], Any] | None = field(default=None, compare=False, repr=False)

    @property
    def attr(self) -> str:
        return ATTRS.get(self.key, self.key.replace("-", "_"))


ATTRS = {"dataset": "datasets", "split": "splits", "text-column": "text_columns", "label-column": "label_columns",
         "target": "target_kind", "format": "formats", "output-file": "output_files"}

_FAIL_ON = tuple(f.value for f in FailOn)

OPTIONS: tuple[Option, ...] = (
    Option("select", "strs", "gate", "only these rules (codes, prefixes or names)"),
    Option("ignore", "strs", "gate", "skip these rules"),
    Option("fail-on", "choice", "gate", "lowest severity that fails the gate", _FAIL_ON, stricter=_lower_threshold),
    Option("exit-zero", "bool", "gate", "exit 0 even when findings fail the gate"),
    Option("allow-partial", "bool", "gate", "accept an audit with gaps (verdict PARTIAL)"),
    Option("tokenizer", "path", "audit", "tokenizer folder"),
    Option("base", "path", "audit", "base checkpoint of a PEFT adapter"),
    Option("weights", "bool", "audit", "also read the embedding matrices"),
    Option("source", "path", "audit", "a GGUF target's HF checkpoint"),
    Option("target", "choice", "audit", "consumer to predict (gguf, vllm)", tuple(t.value for t in TargetKind)),
    Option("hub-timeout", "int", "audit", "seconds a Hub target's requests may take in all (default 30)"),
    Option("dataset", "specs", "scan", "datasets to stream (data files, folders, Hub ids)"),
    Option("dataset-config", "str", "scan", "dataset configuration name"),
    Option("split", "strs", "scan", "only these splits"),
    Option("text-column", "strs", "scan", "tokenize these columns"),
    Option("label-column", "strs", "scan", "check these columns as labels"),
    Option("max-rows", "int", "scan", "scan at most N rows per split"),
    Option("batch-size", "int", "scan", "rows per scanned batch"),
    Option("num-proc", "int", "scan", "splits scanned in parallel processes"),
    Option("engine", "str", "scan", "scan engine (local, ray)"),
    Option("ray-address", "str", "scan", "Ray cluster to run on"),
    Option("chat-format", "str", "scan", "TRL format of the splits, or off"),
    Option("messages-column", "str", "scan", "the column of role/content turns"),
    Option("max-length", "int", "scan", "the trainer's max_length"),
    Option("assistant-only-loss", "bool", "scan", "loss on assistant turns only"),
    Option("completion-only-loss", "bool", "scan", "loss on the completion only"),
    Option("packing", "bool", "scan", "the trainer packs rows"),
    Option("trl-config", "path", "scan", "a saved TRL config to read the trainer's settings from"),
    Option("show-mask", "int", "scan", f"show N rows (<= {MAX_PREVIEW_ROWS}) of chat splits, trained tokens marked"),
    Option("fix", "bool", "fix", "write a repaired copy"),
    Option("output", "path", "fix", "folder for the repaired copy"),
    Option("pad-to-multiple-of", "int", "fix", "round grown rows up to this"),
    Option("unsafe-fixes", "bool", "fix", "also apply fixes that change behaviour"),
    Option("force", "bool", "fix", "replace a non-empty output folder"),
    Option("allow-large-growth", "bool", "fix", "allow growing the embeddings past twice their rows"),
    Option("method", "choice", "fix", "surgical or transformers", tuple(m.value for m in Method)),
    Option("verify-load", "choice", "fix", "load the result with transformers", tuple(v.value for v in VerifyLoad)),
    Option("format", "choices", "output", "output formats", tuple(f.value for f in OutputFormat)),
    Option("output-file", "paths", "output", "files the formats are written to"),
    Option("suppress-ids-file", "path", "output", "with target vllm: where the ids to suppress go"),
    Option("debug", "bool", "output", "show tracebacks for errors"),
)
# Keys of the settings files only, as in ruff (no flag): which rules' fixes --fix may apply without asking.
SETTINGS_ONLY: tuple[Option, ...] = (
    Option("extend-safe-fixes", "strs", "fix", "apply these rules' unsafe fixes as safe"),
    Option("extend-unsafe-fixes", "strs", "fix", "hold these rules' safe fixes back for --unsafe-fixes",
           stricter=_union),
)
BY_KEY = {o.key: o for o in OPTIONS}
BY_ATTR = {o.attr: o for o in OPTIONS}
POSITIVE = frozenset({"max_rows", "batch_size", "num_proc", "max_length", "pad_to_multiple_of", "hub_timeout",
                      "show_mask"})


def _tuple(value: Any) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


def refuse_clashes(values: Mapping[str, Any], target: object = None, *, complete: bool = True) -> None:
    """Refuse options that cannot go together, from the values alone (no file is read): one line, exit 2.

    ``values`` are option attributes (``OPTIONS``' ``attr``) as given; None or absent = not given.
    ``complete=False``: the flags alone, before the settings files are read: an option one needs
    (``--target vllm`` for ``--suppress-ids-file``) may still come from them, so only clashes are refused."""
    def given(attr: str) -> bool:
        v = values.get(attr)
        return v is not None and v is not False and v != () and v != []

    where = target if isinstance(target, (str, Path)) else None
    if complete and given("suppress_ids_file") and values.get("target_kind") != TargetKind.VLLM.value:
        raise AuditError(values["suppress_ids_file"], "--suppress-ids-file needs --target vllm")
    if given("fix") and given("datasets"):
        raise AuditError(where, "--dataset cannot be combined with --fix: fix the checkpoint, then audit "
                         "the dataset against the fixed copy")
    if given("source"):
        hf_only = [flag for attr, flag in (("fix", "--fix"), ("weights", "--weights"), ("datasets", "--dataset"),
                                           ("base", "--base"), ("target_kind", "--target")) if given(attr)]
        if hf_only:
            raise AuditError(where, f"--source HF_DIR names a GGUF target's checkpoint: a GGUF is checked from its "
                             f"metadata only, and {', '.join(hf_only)} apply to a transformers checkpoint folder")
    for attr in POSITIVE:
        v = values.get(attr)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise AuditError(None, f"--{BY_ATTR[attr].key} must be >= 1, not {v!r}")
    if given("show_mask") and values["show_mask"] > MAX_PREVIEW_ROWS:
        raise AuditError(None, f"--show-mask shows at most {MAX_PREVIEW_ROWS} rows per split, not {values['show_mask']}")
    if complete and given("show_mask") and not given("datasets"):
        raise AuditError(where, "--show-mask previews the rows of a chat dataset: it needs --dataset")


def build_gate_options(values: Mapping[str, Any], target: object = None, *, progress: bool = False,
                       live: Mapping[str, Any] | None = None, complete: bool = True) -> GateOptions:
    """The typed options of one ``check`` from merged option values (attr -> value; absent = default).

    Clashes are refused first (:func:`refuse_clashes`), so nothing is read for options that cannot run."""
    refuse_clashes(values, target, complete=complete)
    v = dict(values)
    datasets = _tuple(v.get("datasets"))
    formats = tuple(OutputFormat(f) for f in v.get("formats") or ())
    scan = None
    if datasets:
        chat_flags = tuple((k, v.get(k)) for k in ("max_length", "assistant_only_loss", "completion_only_loss",
                                                   "packing"))
        trl = v.get("trl_config")
        scan = ScanOptions(
            tuple(str(d) for d in datasets), v.get("dataset_config"), _tuple(v.get("splits")) or (),
            _tuple(v.get("text_columns")) or (), _tuple(v.get("label_columns")) or (), v.get("max_rows"),
            v.get("batch_size") or DEFAULT_BATCH_SIZE, v.get("num_proc") or 1, progress,
            engine=v.get("engine") or "local", ray_address=v.get("ray_address"),
            histograms=OutputFormat.HTML in formats, chat_format=v.get("chat_format"),
            messages_column=v.get("messages_column"), chat_flags=chat_flags,
            trl_config=str(trl) if trl is not None else None, show_mask=v.get("show_mask"), live=dict(live or {}))
    audit = AuditOptions(
        tokenizer=v.get("tokenizer"), select=_tuple(v.get("select")), ignore=_tuple(v.get("ignore")),
        weights=bool(v.get("weights")), base=v.get("base"), source=v.get("source"),
        target_kind=v.get("target_kind"), scan=scan, hub_timeout=v.get("hub_timeout"))
    fix = None
    if v.get("fix"):
        fix = FixOptions(output=v.get("output"), unsafe_fixes=bool(v.get("unsafe_fixes")),
                         pad_to_multiple_of=v.get("pad_to_multiple_of"), force=bool(v.get("force")),
                         method=Method(v.get("method") or Method.SURGICAL.value),
                         verify_load=VerifyLoad(v.get("verify_load") or VerifyLoad.AUTO.value),
                         allow_large_growth=bool(v.get("allow_large_growth")))
    output = OutputOptions(formats, tuple(Path(p) for p in v.get("output_files") or ()),
                           v.get("suppress_ids_file"), bool(v.get("debug")))
    return GateOptions(audit, fix, output, FailOn(v.get("fail_on") or FailOn.ERROR.value),
                       bool(v.get("exit_zero")), bool(v.get("allow_partial")))

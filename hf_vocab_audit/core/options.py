"""Typed options: every option of ``check`` declared once, and what one audit, dataset scan, fix and output
were asked to do, as frozen objects.

``OPTIONS`` declares each option once (as ruff's ``options.rs``): its flag and settings key, its kind, its
default, its help, its panel, what a target's own settings file may do with it. The command line's
parameters (``cli``), the settings-file validation (``settings``), the keywords of ``run_gate`` and
``audit`` and the reference (``scripts/regenerate.py``) are generated from it, so a flag cannot mean one thing
on the command line and another in ``hf-vocab-audit.toml``. Values travel as :class:`OptionValues` (flags,
settings files, keywords: only declared options) and become the typed objects in :func:`build_gate_options`.
Flag clashes are refused there, before any file is read (:func:`refuse_clashes`); clashes that depend on
what the target is (a Hub id, a GGUF file, an adapter) are refused by its facts source, from the path alone,
before anything is gathered.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypedDict

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
    """``--target``: the consumer whose view of the checkpoint is added (llama.cpp's converter, a serving engine)."""

    GGUF = "gguf"
    VLLM = "vllm"
    SGLANG = "sglang"
    TGI = "tgi"
    MLX_LM = "mlx-lm"
    TRANSFORMERS4 = "transformers<5"  # a transformers 4.x reader (the last 4.x release); alias "transformers4"


# The targets that serve with tensor parallelism (``--tp``): the engines whose entry in ``facts.consumers`` has a
# ``HeadsRule`` (tests/rules/test_engine_targets.py holds the two to each other).
TP_TARGETS = (TargetKind.VLLM, TargetKind.SGLANG, TargetKind.TGI)


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
    base: str | Path | None = None  # a PEFT adapter's base checkpoint, or the one a full checkpoint is compared with
    source: str | Path | None = None  # a GGUF target's HF checkpoint
    draft: str | Path | None = None  # a speculative-decoding draft compared with the target
    target_kind: str | None = None  # --target (TargetKind's values)
    scan: ScanOptions | None = None  # --dataset
    hub_timeout: int | None = None  # seconds for a Hub target's requests (None: the environment, else 30)
    tp: int | None = None  # --tp: the tensor-parallel size the serving engine of --target runs with
    tool_call_parser: str | None = None  # --tool-call-parser: the vLLM tool-call parser --target vllm serves with
    reasoning_parser: str | None = None  # --reasoning-parser: the vLLM reasoning parser --target vllm serves with

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


class Kind(enum.Enum):
    """How an option's value is written: its type on the command line and its form in a settings file."""

    BOOL = "bool"
    INT = "int"  # every whole number an option takes counts something: below 1 is refused everywhere
    STR = "str"
    RULES = "rules"  # rule codes, prefixes or names, checked against the registry
    STRS = "strs"
    PATH = "path"  # in a settings file: relative to the file's folder
    PATHS = "paths"
    SPECS = "specs"  # data files, globs, folders or Hub ids: a path where one exists beside the settings file
    CHOICE = "choice"  # one of ``Option.choices``
    CHOICES = "choices"  # a list of them

    @property
    def many(self) -> bool:
        """A repeatable flag, a list in a settings file."""
        return self in (Kind.RULES, Kind.STRS, Kind.PATHS, Kind.SPECS, Kind.CHOICES)

    @property
    def words(self) -> str:
        """How the settings table describes a value of this kind (choices: the choices themselves)."""
        return _KIND_WORDS[self]


_KIND_WORDS = {Kind.BOOL: "true/false", Kind.INT: "integer >= 1", Kind.STR: "string", Kind.RULES: "list of strings",
               Kind.STRS: "list of strings", Kind.PATH: "path", Kind.PATHS: "list of paths",
               Kind.SPECS: "list of paths or Hub ids", Kind.CHOICE: "one of", Kind.CHOICES: "list of"}


class Group(str, enum.Enum):
    """Which typed object an option ends up in (the gate's verdict, the audit, the scan, the fix, the output)."""

    GATE = "gate"
    AUDIT = "audit"
    SCAN = "scan"
    FIX = "fix"
    OUTPUT = "output"


DATASET_PANEL = "Dataset audit"
CHAT_PANEL = "Chat and instruction data"
GGUF_PANEL = "GGUF and serving engines"

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
    """One option, declared once: the flag of ``check`` (``--`` + ``key``), the settings-file key, the keyword
    of ``run_gate`` and ``audit`` (``attr``), and everything the command line, the settings validation and
    the reference are generated from.

    ``help`` is the ``check --help`` line, ``summary`` the settings table's. ``default`` is the value when
    neither a flag nor a settings file sets the option, as a settings file writes it (a choice's value).
    ``negatable``: a ``--x/--no-x`` pair (a flag can turn off what a settings file turned on). ``flag``
    False: a key of the settings files only (ruff's ``extend-safe-fixes``); ``settable`` False: a flag only
    (``--config`` names the settings file). ``flag_checks_choice`` False: the command line takes any string
    and the value is checked where it is used (``--target``'s message names the targets).

    ``stricter``: what a target's own settings file (the checkpoint's ``hf-vocab-audit.toml``; the target is
    untrusted: CI audits pull requests) may do with the option. None: nothing; the key is not obeyed and is
    reported (HVA003). Otherwise a function of the operator's value (None: not set) and the target's that
    returns the value to use where the target's tightens the gate (``fail-on``: a lower threshold;
    ``extend-unsafe-fixes``: more fixes held back), and None where it would relax it (not obeyed)."""

    key: str
    kind: Kind
    group: Group
    summary: str
    help: str = ""
    attr: str = ""  # default: the key with underscores
    choices: type[enum.Enum] | None = None
    default: Any = None
    negatable: bool = False
    panel: str | None = None
    flag: bool = True
    settable: bool = True
    flag_checks_choice: bool = True
    stricter: Callable[[Any, Any], Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.attr:
            object.__setattr__(self, "attr", self.key.replace("-", "_"))

    @property
    def choice_values(self) -> tuple[str, ...]:
        return tuple(c.value for c in self.choices) if self.choices is not None else ()


_FIX = "--fix: "

OPTIONS: tuple[Option, ...] = (
    # ---- the gate's verdict
    Option("select", Kind.RULES, Group.GATE, "only these rules (codes, prefixes or names)",
           "Only these rules (code, prefix or name; repeatable)."),
    Option("ignore", Kind.RULES, Group.GATE, "skip these rules", "Skip these rules (code, prefix or name; repeatable)."),
    Option("fail-on", Kind.CHOICE, Group.GATE, "lowest severity that fails the gate",
           "Exit 1 when a finding is at or above this severity (default: error).", choices=FailOn,
           default=FailOn.ERROR.value, stricter=_lower_threshold),
    Option("exit-zero", Kind.BOOL, Group.GATE, "exit 0 even when findings fail the gate",
           "Exit 0 even when findings fail the gate.", default=False, negatable=True),
    Option("allow-partial", Kind.BOOL, Group.GATE, "accept an audit with gaps (verdict PARTIAL)",
           "Accept an audit that could not examine everything (no tokenizer, no weights, a dataset column left "
           "unchecked): exit 0 with the verdict PARTIAL instead of exit 2. The report says what was not examined "
           "either way.", default=False, negatable=True),
    Option("config", Kind.PATH, Group.GATE, "", "Settings file to use instead of the working directory's and the "
           "model's hf-vocab-audit.toml.", settable=False),
    # ---- the audit
    Option("tokenizer", Kind.PATH, Group.AUDIT, "tokenizer folder", "Tokenizer folder, when not in the checkpoint."),
    Option("base", Kind.PATH, Group.AUDIT, "base checkpoint (a PEFT adapter's, or a fine-tune's to compare)",
           "Base checkpoint of TARGET, a local folder or a Hub id. A PEFT adapter is audited against it (default: "
           "its base_model_name_or_path); a full fine-tuned checkpoint is compared with it: rows cut, special ids "
           "nulled or changed, the chat template lost (and with --weights, new tokens left in the base's padding "
           "rows)."),
    Option("draft", Kind.PATH, Group.AUDIT, "a speculative-decoding draft to compare",
           "Draft model of TARGET for speculative decoding (a local folder or a Hub id): the same tokens at the "
           "same ids, the same special ids, and an EAGLE-3 draft's d2t/t2d maps within the target's vocabulary."),
    Option("weights", Kind.BOOL, Group.AUDIT, "also read the embedding matrices",
           "Also read the embedding matrices to find untrained token rows.", default=False),
    Option("source", Kind.PATH, Group.AUDIT, "a GGUF target's HF checkpoint", "GGUF TARGET: the HF checkpoint "
           "folder it was converted from, compared id by id.", panel=GGUF_PANEL),
    Option("target", Kind.CHOICE, Group.AUDIT, "consumer to predict (gguf, vllm, sglang, tgi, mlx-lm, transformers<5)",
           "Also say what this consumer will do with the checkpoint: gguf (llama.cpp's converter), a serving "
           "engine: vllm (engines sampling the whole lm_head), sglang, tgi or mlx-lm (its chat template, stop ids "
           "and lm_head), or 'transformers<5' (alias transformers4: a transformers 4.x reader of files "
           "transformers 5 wrote).",
           attr="target_kind", choices=TargetKind, panel=GGUF_PANEL, flag_checks_choice=False),
    Option("tp", Kind.INT, Group.AUDIT, "with target vllm, sglang or tgi: the tensor-parallel size to serve with",
           "With --target vllm, sglang or tgi: the tensor-parallel size the engine will run with; say whether it "
           "can split the attention heads and the padded vocabulary that many ways.", panel=GGUF_PANEL),
    Option("tool-call-parser", Kind.STR, Group.AUDIT, "with target vllm: the tool-call parser to serve with",
           "With --target vllm: vLLM's --tool-call-parser NAME (hermes, mistral); say whether the tokenizer holds "
           "the strings it looks up, each as one token that survives decoding.", panel=GGUF_PANEL),
    Option("reasoning-parser", Kind.STR, Group.AUDIT, "with target vllm: the reasoning parser to serve with",
           "With --target vllm: vLLM's --reasoning-parser NAME (deepseek_r1, qwen3); say whether the tokenizer "
           "holds the strings it looks up, each as one token that survives decoding.", panel=GGUF_PANEL),
    Option("hub-timeout", Kind.INT, Group.AUDIT, "seconds a Hub target's requests may take in all (default 30)",
           "Org/name TARGET: seconds all Hub requests may take together (default: HF_VOCAB_AUDIT_HUB_TIMEOUT, "
           "else 30)."),
    # ---- the dataset scan
    Option("dataset", Kind.SPECS, Group.SCAN, "datasets to stream (data files, folders, Hub ids)", "Also stream "
           "this dataset (data file, glob, folder, save_to_disk folder or Hub id; repeatable).", attr="datasets",
           panel=DATASET_PANEL),
    Option("dataset-config", Kind.STR, Group.SCAN, "dataset configuration name",
           "Dataset configuration name (Hub datasets).", panel=DATASET_PANEL),
    Option("split", Kind.STRS, Group.SCAN, "only these splits", "Only this split (repeatable; default all).",
           attr="splits", panel=DATASET_PANEL),
    Option("text-column", Kind.STRS, Group.SCAN, "tokenize these columns",
           "Tokenize this column (repeatable; overrides detection).", attr="text_columns", panel=DATASET_PANEL),
    Option("label-column", Kind.STRS, Group.SCAN, "check these columns as labels", "Check this column as labels "
           "(repeatable; overrides detection).", attr="label_columns", panel=DATASET_PANEL),
    Option("max-rows", Kind.INT, Group.SCAN, "scan at most N rows per split", "Scan at most N rows per split.",
           panel=DATASET_PANEL),
    Option("batch-size", Kind.INT, Group.SCAN, "rows per scanned batch", "Rows per scanned batch (default 1000).",
           default=DEFAULT_BATCH_SIZE, panel=DATASET_PANEL),
    Option("num-proc", Kind.INT, Group.SCAN, "splits scanned in parallel processes",
           "Scan up to N splits in parallel processes (default 1).", default=1, panel=DATASET_PANEL),
    Option("engine", Kind.STR, Group.SCAN, "scan engine (local, ray)", "Scan here (local, the default) or on Ray "
           "(ray; pip install 'hf-vocab-audit\\[ray]').", default="local", panel=DATASET_PANEL),  # \\[: not rich markup
    Option("ray-address", Kind.STR, Group.SCAN, "Ray cluster to run on", "Ray cluster to run on (default: "
           "RAY_ADDRESS, else a local instance).", panel=DATASET_PANEL),
    Option("chat-format", Kind.STR, Group.SCAN, "TRL format of the splits, or off", "Read the splits as this TRL "
           "format: language-modeling, prompt-completion, preference, unpaired-preference, or off (default: "
           "recognised from the columns).", panel=CHAT_PANEL),
    Option("messages-column", Kind.STR, Group.SCAN, "the column of role/content turns",
           "The column of role/content turns (default messages).", panel=CHAT_PANEL),
    Option("max-length", Kind.INT, Group.SCAN, "the trainer's max_length", "The trainer's max_length: rows are "
           "truncated as TRL truncates them (default: a TRL config beside the data, else none).", panel=CHAT_PANEL),
    Option("assistant-only-loss", Kind.BOOL, Group.SCAN, "loss on assistant turns only",
           "Loss on assistant turns only ({% generation %} masks).", negatable=True, panel=CHAT_PANEL),
    Option("completion-only-loss", Kind.BOOL, Group.SCAN, "loss on the completion only",
           "Loss on the completion only (TRL's default for prompt-completion data).", negatable=True,
           panel=CHAT_PANEL),
    Option("packing", Kind.BOOL, Group.SCAN, "the trainer packs rows", "The trainer packs rows (no truncation).",
           negatable=True, panel=CHAT_PANEL),
    Option("trl-config", Kind.PATH, Group.SCAN, "a saved TRL config to read the trainer's settings from",
           "A saved TRL SFTConfig/DPOConfig/KTOConfig (JSON or YAML) to read max_length and the loss settings from.",
           panel=CHAT_PANEL),
    Option("show-mask", Kind.INT, Group.SCAN, f"show N rows (<= {MAX_PREVIEW_ROWS}) of chat splits, trained tokens "
           "marked", f"Show the first N rows (at most {MAX_PREVIEW_ROWS}) of each chat split as the trainer gets "
           "them, the tokens with a loss marked (text and html formats; json carries them).", panel=CHAT_PANEL),
    # ---- the fix
    Option("fix", Kind.BOOL, Group.FIX, "write a repaired copy",
           "Write a repaired copy of MODEL_DIR (see --output); audit the copy.", default=False),
    Option("output", Kind.PATH, Group.FIX, "folder for the repaired copy",
           "Folder for --fix (default: MODEL_DIR-fixed)."),
    Option("pad-to-multiple-of", Kind.INT, Group.FIX, "round grown rows up to this",
           _FIX + "round grown rows up to this."),
    Option("unsafe-fixes", Kind.BOOL, Group.FIX, "also apply fixes that change behaviour",
           _FIX + "also apply fixes that change behaviour (special ids, pad).", default=False),
    Option("force", Kind.BOOL, Group.FIX, "replace a non-empty output folder",
           _FIX + "replace a non-empty --output folder.", default=False),
    Option("allow-large-growth", Kind.BOOL, Group.FIX, "allow growing the embeddings past twice their rows",
           _FIX + "allow growing the embeddings past twice their rows or 4,194,304 rows.", default=False),
    Option("method", Kind.CHOICE, Group.FIX, "surgical or transformers", _FIX + "rewrite only the changed tensors "
           "(surgical, the default), or load with transformers.", choices=Method, default=Method.SURGICAL.value),
    Option("verify-load", Kind.CHOICE, Group.FIX, "load the result with transformers",
           _FIX + "load the result with transformers (auto, the default: if small).", choices=VerifyLoad,
           default=VerifyLoad.AUTO.value),
    # ---- the output
    Option("format", Kind.CHOICES, Group.OUTPUT, "output formats", "Output format (repeatable; default text).",
           attr="formats", choices=OutputFormat),
    Option("output-file", Kind.PATHS, Group.OUTPUT, "files the formats are written to", "Write a format here "
           "(repeatable; pairs with --format in order, the first format goes to standard output when there is "
           "one file fewer).", attr="output_files"),
    Option("suppress-ids-file", Kind.PATH, Group.OUTPUT, "with target vllm: where the ids to suppress go",
           "With --target vllm: write the ids to suppress at sampling time here, as a JSON list.", panel=GGUF_PANEL),
    Option("debug", Kind.BOOL, Group.OUTPUT, "show tracebacks for errors", "Show tracebacks for errors.",
           default=False),
    # ---- keys of the settings files only, as in ruff: which rules' fixes --fix may apply without asking
    Option("extend-safe-fixes", Kind.RULES, Group.FIX, "apply these rules' unsafe fixes as safe", default=(),
           flag=False),
    Option("extend-unsafe-fixes", Kind.RULES, Group.FIX, "hold these rules' safe fixes back for --unsafe-fixes",
           default=(), flag=False, stricter=_union),
)
# The order of ``check --help`` (and of the command reference): the everyday flags first, then each panel.
HELP_ORDER = ("tokenizer", "base", "draft", "format", "fail-on", "exit-zero", "allow-partial", "select", "ignore",
              "output-file", "config", "weights", "debug", "fix", "output", "pad-to-multiple-of", "unsafe-fixes",
              "force", "allow-large-growth", "method", "verify-load", "hub-timeout", "dataset", "dataset-config",
              "split", "text-column", "label-column", "max-rows", "batch-size", "num-proc", "engine", "ray-address",
              "chat-format", "messages-column", "max-length", "assistant-only-loss", "completion-only-loss",
              "packing", "trl-config", "show-mask", "source", "target", "tp", "tool-call-parser", "reasoning-parser",
              "suppress-ids-file")
BY_KEY = {o.key: o for o in OPTIONS}
BY_ATTR = {o.attr: o for o in OPTIONS}
FLAGS = tuple(BY_KEY[key] for key in HELP_ORDER)  # the options of ``check``, in its help's order
SETTINGS_KEYS = tuple(o for o in OPTIONS if o.settable)  # the keys of a settings file, in the table's order
# ``audit()``'s option keywords: the options its typed object and the scan's hold
AUDIT_KEYWORDS = frozenset(o.attr for o in OPTIONS if o.group is Group.SCAN or o.attr in {f.name for f in fields(AuditOptions)})


class AuditKeywords(TypedDict, total=False):
    """``audit()``'s option keywords for type checkers and editors (``**keywords: Unpack[AuditKeywords]``);
    None means not given.

    Not a declaration: the options are declared once, in ``OPTIONS``; this is their static face, which
    ``tests/core/test_options.py`` holds to ``AUDIT_KEYWORDS`` key by key and to each option's kind."""

    select: Iterable[str] | None
    ignore: Iterable[str] | None
    tokenizer: str | os.PathLike[str] | object | None  # a folder, or a live tokenizer
    base: str | os.PathLike[str] | None
    draft: str | os.PathLike[str] | None
    tp: int | None
    tool_call_parser: str | None
    reasoning_parser: str | None
    weights: bool | None
    source: str | os.PathLike[str] | None
    target_kind: str | TargetKind | None
    hub_timeout: int | None
    datasets: Iterable[Any] | None  # SPECs, or live ``datasets`` objects
    dataset_config: str | None
    splits: Iterable[str] | None
    text_columns: Iterable[str] | None
    label_columns: Iterable[str] | None
    max_rows: int | None
    batch_size: int | None
    num_proc: int | None
    engine: str | None
    ray_address: str | None
    chat_format: str | None
    messages_column: str | None
    max_length: int | None
    assistant_only_loss: bool | None
    completion_only_loss: bool | None
    packing: bool | None
    trl_config: str | os.PathLike[str] | None
    show_mask: int | None


@dataclass(frozen=True)
class OptionValues:
    """Option values as given, by ``Option.attr``: one ``check``'s flags, what the settings files set, or both
    merged (a later layer wins). Absent: not given (a lower layer or the declared default applies); None is
    never stored. Only declared options are taken (TypeError otherwise, as for an unknown keyword).

    Values are as the settings files write them: a choice is its string, a list a list or tuple, a path a
    path. The typed objects (:class:`GateOptions`) are built from them by :func:`build_gate_options`."""

    given: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = [k for k in self.given if k not in BY_ATTR]
        if unknown:
            raise TypeError(f"unknown option {unknown[0]!r} (the options are core.options.OPTIONS' attrs)")
        object.__setattr__(self, "given", {k: v for k, v in self.given.items() if v is not None})

    @classmethod
    def from_flags(cls, flags: Mapping[str, Any]) -> OptionValues:
        """The values of ``check``'s parsed flags: enum members as their values, a flag not given absent (a
        plain ``--x`` flag that is off was not given: a settings file may still turn it on)."""
        values: dict[str, Any] = {}
        for attr, value in flags.items():
            option = BY_ATTR[attr]
            if value is None or (option.kind is Kind.BOOL and not option.negatable and not value):
                continue
            if option.kind.many:
                value = tuple(v.value if isinstance(v, enum.Enum) else v for v in value) or None
            elif isinstance(value, enum.Enum):
                value = value.value
            values[attr] = value
        return cls(values)

    def __contains__(self, attr: object) -> bool:
        return attr in self.given

    def __iter__(self) -> Iterator[str]:
        return iter(self.given)

    def get(self, attr: str) -> Any:
        """The value given, else the option's declared default (KeyError: no such option)."""
        return self.given[attr] if attr in self.given else BY_ATTR[attr].default

    def merged(self, later: OptionValues | Mapping[str, Any]) -> OptionValues:
        """These values with ``later``'s on top (``later`` wins where it gives one)."""
        top = later.given if isinstance(later, OptionValues) else later
        return OptionValues({**self.given, **{k: v for k, v in top.items() if v is not None}})


def _tuple(value: Any) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


# Options that only mean something to ``--target vllm``, in the order they are refused without it, each with why.
_NEEDS_VLLM = (("suppress_ids_file", ""), ("tool_call_parser", " (the engine whose parser is checked)"),
               ("reasoning_parser", " (the engine whose parser is checked)"))


def refuse_clashes(values: OptionValues, target: object = None, *, complete: bool = True) -> None:
    """Refuse options that cannot go together, from the values alone (no file is read): one line, exit 2.

    ``complete=False``: the flags alone, before the settings files are read: an option one needs
    (``--target vllm`` for ``--suppress-ids-file``) may still come from them, so only clashes are refused."""
    v = values.given

    def given(attr: str) -> bool:
        value = v.get(attr)
        return value is not None and value is not False and value != () and value != []

    where = target if isinstance(target, (str, Path)) else None
    if complete and v.get("target_kind") != TargetKind.VLLM.value:
        for attr, why in _NEEDS_VLLM:
            if given(attr):  # a file option's error names the file
                at = v[attr] if BY_ATTR[attr].kind is Kind.PATH else where
                raise AuditError(at, f"--{BY_ATTR[attr].key} needs --target vllm{why}")
    if complete and given("tp") and v.get("target_kind") not in {k.value for k in TP_TARGETS}:
        raise AuditError(where, f"--tp needs --target {', '.join(k.value for k in TP_TARGETS[:-1])} or "
                         f"{TP_TARGETS[-1].value} (the engine whose tensor parallelism is checked)")
    if given("fix") and given("datasets"):
        raise AuditError(where, "--dataset cannot be combined with --fix: fix the checkpoint, then audit "
                         "the dataset against the fixed copy")
    if given("source"):
        hf_only = [f"--{BY_ATTR[attr].key}" for attr in ("fix", "weights", "datasets", "base", "draft", "target_kind")
                   if given(attr)]
        if hf_only:
            raise AuditError(where, f"--source HF_DIR names a GGUF target's checkpoint: a GGUF is checked from its "
                             f"metadata only, and {', '.join(hf_only)} apply to a transformers checkpoint folder")
    for option in OPTIONS:
        value = v.get(option.attr)
        if option.kind is Kind.INT and value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise AuditError(None, f"--{option.key} must be >= 1, not {value!r}")
    if given("show_mask") and v["show_mask"] > MAX_PREVIEW_ROWS:
        raise AuditError(None, f"--show-mask shows at most {MAX_PREVIEW_ROWS} rows per split, not {v['show_mask']}")
    if complete and given("show_mask") and not given("datasets"):
        raise AuditError(where, "--show-mask previews the rows of a chat dataset: it needs --dataset")


def build_audit_options(values: OptionValues, *, progress: bool = False, histograms: bool = False,
                        live: Mapping[str, Any] | None = None) -> AuditOptions:
    """The audit's typed options (the scan's when ``datasets`` is given); ``live``: datasets objects by SPEC."""
    v = values
    datasets = _tuple(v.get("datasets"))
    scan = None
    if datasets:
        trl = v.get("trl_config")
        scan = ScanOptions(
            tuple(str(d) for d in datasets), v.get("dataset_config"), _tuple(v.get("splits")) or (),
            _tuple(v.get("text_columns")) or (), _tuple(v.get("label_columns")) or (), v.get("max_rows"),
            v.get("batch_size"), v.get("num_proc"), progress, engine=v.get("engine"),
            ray_address=v.get("ray_address"), histograms=histograms, chat_format=v.get("chat_format"),
            messages_column=v.get("messages_column"),
            chat_flags=tuple((k, v.get(k)) for k in ("max_length", "assistant_only_loss", "completion_only_loss",
                                                     "packing")),
            trl_config=str(trl) if trl is not None else None, show_mask=v.get("show_mask"), live=dict(live or {}))
    return AuditOptions(
        tokenizer=v.get("tokenizer"), select=_tuple(v.get("select")), ignore=_tuple(v.get("ignore")),
        weights=bool(v.get("weights")), base=v.get("base"), source=v.get("source"), draft=v.get("draft"),
        target_kind=v.get("target_kind"), scan=scan, hub_timeout=v.get("hub_timeout"),
        tp=v.get("tp"), tool_call_parser=v.get("tool_call_parser"), reasoning_parser=v.get("reasoning_parser"))


def build_gate_options(values: OptionValues, target: object = None, *, progress: bool = False,
                       live: Mapping[str, Any] | None = None, complete: bool = True) -> GateOptions:
    """The typed options of one ``check`` from its option values (absent: the declared default).

    Clashes are refused first (:func:`refuse_clashes`), so nothing is read for options that cannot run."""
    refuse_clashes(values, target, complete=complete)
    v = values
    formats = tuple(OutputFormat(f) for f in v.get("formats") or ())
    audit = build_audit_options(v, progress=progress, histograms=OutputFormat.HTML in formats, live=live)
    fix = None
    if v.get("fix"):
        fix = FixOptions(output=v.get("output"), unsafe_fixes=bool(v.get("unsafe_fixes")),
                         pad_to_multiple_of=v.get("pad_to_multiple_of"), force=bool(v.get("force")),
                         method=Method(v.get("method")), verify_load=VerifyLoad(v.get("verify_load")),
                         allow_large_growth=bool(v.get("allow_large_growth")))
    output = OutputOptions(formats, tuple(Path(p) for p in v.get("output_files") or ()),
                           v.get("suppress_ids_file"), bool(v.get("debug")))
    return GateOptions(audit, fix, output, FailOn(v.get("fail_on")), bool(v.get("exit_zero")),
                       bool(v.get("allow_partial")))

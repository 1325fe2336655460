"""The command line: a thin layer over :func:`hf_vocab_audit.audit` and the renderers.

``check``'s options are not written here: its parameters are generated from their one declaration each
(``core.options.OPTIONS``), as the settings validation and the reference are. No ``from __future__ import
annotations``: typer reads every option's annotation on each run, and string annotations cost it an ``eval``
each (about 10 ms of a 0.5 s gate); evaluated once at import they cost nothing more.
"""

import inspect
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Optional

import typer
import typer.core

from .core.options import FLAGS, Kind, Option, OutputFormat
from .core.outcome import EXIT_ERROR
from .errors import AuditError, one_line
from .version import __version__

if TYPE_CHECKING:
    from .core.sections import VllmSection

app = typer.Typer(
    name="hf-vocab-audit",
    help="Find the vocabulary, embedding, label and position bugs behind CUDA device-side asserts "
    "before a GPU sees them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)



class _Command(typer.core.TyperCommand):
    """A command whose usage line names a required argument as its help does (``TARGET``): typer writes it
    ``{TARGET}``, which reads as a placeholder left unfilled."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [p[1:-1] if p.startswith("{") and p.endswith("}") else p for p in super().collect_usage_pieces(ctx)]


def _fail(message: str, debug: bool) -> NoReturn:
    if debug:
        raise
    typer.echo(f"hf-vocab-audit: error: {one_line(message)}", err=True)
    raise typer.Exit(EXIT_ERROR)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"hf-vocab-audit {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Audit Hugging Face checkpoints for out-of-range token ids, labels and positions."""


_FLAG_TYPES: dict[Kind, type] = {Kind.INT: int, Kind.PATH: Path, Kind.PATHS: Path}  # the other kinds: strings


def _flag(option: Option) -> inspect.Parameter:
    """``check``'s parameter for one declared option: its flag (a ``--x/--no-x`` pair when negatable), type,
    help and panel. A flag not given is None (a plain ``--x`` flag: False), so the settings files can set it."""
    if option.kind is Kind.BOOL:
        decl = f"--{option.key}/--no-{option.key}" if option.negatable else f"--{option.key}"
        annotation: Any = Optional[bool] if option.negatable else bool
        default: Any = None if option.negatable else False
    else:
        decl, default = f"--{option.key}", None
        one = option.choices if option.choices is not None and option.flag_checks_choice else \
            _FLAG_TYPES.get(option.kind, str)
        annotation = Optional[list[one]] if option.kind.many else Optional[one]  # type: ignore[valid-type]
    info = typer.Option(decl, help=option.help, rich_help_panel=option.panel,
                        min=1 if option.kind is Kind.INT else None)
    return inspect.Parameter(option.attr, inspect.Parameter.KEYWORD_ONLY, default=default,
                             annotation=Annotated[annotation, info])


_TARGET = inspect.Parameter("target", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Annotated[
    str, typer.Argument(metavar="TARGET", help="Checkpoint folder (config.json, tokenizer, weights), or org/name "
                        "(org/name@revision) on the Hub.")])


def check(target: str, **flags: Any) -> None:
    """Audit TARGET from its files alone: no weights are loaded, no code is executed.

    Settings come from the tool.hf-vocab-audit table of pyproject.toml and hf-vocab-audit.toml in the working
    directory (or --config); flags win. The model's own hf-vocab-audit.toml may only make the gate stricter.
    Exit codes: 0 no finding at or above --fail-on (or --exit-zero); 1 at least one; 2 the audit could not run.
    With --dataset, also stream the dataset and find every out-of-range id and label (HVA5xx).
    With --fix, write a repaired copy (see --output) and report the audit of that copy.
    TARGET may be a GGUF file (llama.cpp's format); --source HF_DIR compares it with its HF checkpoint.
    """
    from .core.options import OptionValues, refuse_clashes
    from .formats.outputs import pair_outputs, write_outputs
    from .gate import run_gate
    from .io.output_path import check_output_file

    given = OptionValues.from_flags(flags)  # flags not given are absent: the settings files fill them, then defaults
    debug = bool(given.get("debug"))
    if not debug:  # a library's warning (torch.load's TorchScript notice) must not add lines to stderr
        warnings.simplefilter("ignore")
    formats, output_files = list(given.get("formats") or ()), list(given.get("output_files") or ())
    try:
        select, ignore = given.get("select"), given.get("ignore")
        if select or ignore:  # (the rule modules are imported only to check selectors that were given)
            from .rules.registry import parse_selectors

            parse_selectors([*(select or []), *(ignore or [])], "--select/--ignore")
        refuse_clashes(given, target, complete=False)  # no read
    except AuditError as exc:
        _fail(str(exc), False)
    try:
        inputs = [target, given.get("tokenizer"), given.get("base"), given.get("draft"), given.get("config"),
                  *(given.get("datasets") or [])]
        for _, out_path in pair_outputs(formats, output_files):
            if out_path is not None:  # a planted link or a path into the checkpoint: refused before the audit
                check_output_file(out_path, inputs)
        outcome = run_gate(target, options=given, progress=all(
            f == OutputFormat.TEXT.value for f in formats) and not output_files and sys.stderr.isatty())
        out = outcome.options.output
        debug = out.debug
        for entry in outcome.unused_allow:
            typer.echo(f"hf-vocab-audit: warning: {entry.where} ({entry.code}) matched no finding", err=True)
        pairs = pair_outputs([f.value for f in out.formats], list(out.output_files))
        for _, out_path in pairs:  # again: the audit took a while (and the settings may name more)
            if out_path is not None:
                check_output_file(out_path, inputs)
        write_outputs(outcome.report, pairs)
        if out.suppress_ids_file is not None:
            _write_suppress_ids(Path(out.suppress_ids_file), outcome.report.vllm)
    except AuditError as exc:
        _fail(str(exc), debug)
    except RecursionError:
        _fail(f"{target}: input nested too deeply to audit", debug)
    except Exception as exc:  # noqa: BLE001 - never a traceback without --debug
        _fail(f"{target}: unexpected {exc.__class__.__name__}: {exc}", debug)
    except BaseException as exc:  # a Rust panic (pyo3's PanicException) that no reader turned into a line
        from .facts.tokenizer.bounded_calls import is_panic

        if not is_panic(exc):
            raise
        _fail(f"{target}: a library panicked: {str(exc).strip()[:300]}", debug)
    raise typer.Exit(outcome.exit_code)


check.__signature__ = inspect.Signature([_TARGET, *map(_flag, FLAGS)])  # type: ignore[attr-defined]
app.command(cls=_Command)(check)  # typer reads the parameters from the signature: one per declared flag


@app.command("rules", cls=_Command)
def rules_cmd(
    fmt: Annotated[OutputFormat, typer.Option("--format", help="Output format.")] = OutputFormat.TEXT,
) -> None:
    """List every rule: code, name, severity and summary."""
    import json

    from .rules import all_rules

    rules = all_rules()
    if fmt is OutputFormat.JSON:
        data = [
            {"code": r.code, "name": r.name, "severity": r.severity.value, "scope": r.scope, "summary": r.summary}
            for r in rules
        ]
        typer.echo(json.dumps(data, indent=2))
        return
    for r in rules:
        typer.echo(f"{r.code}  {r.name:<36} {r.severity.value:<8} {r.summary}")


@app.command(cls=_Command)
def explain(code: Annotated[str, typer.Argument(metavar="CODE", help="Rule code (HVA101) or name.")]) -> None:
    """Explain a rule: what it checks, why it matters, how to fix it."""
    from .rules import get_rule

    r = get_rule(code)
    if r is None:
        _fail(f"unknown rule {code!r} (see `hf-vocab-audit rules`)", False)
    typer.echo(r.explain())


@app.command(cls=_Command)
def repro(
    batch_file: Annotated[Path, typer.Argument(metavar="BATCH_FILE", help="A batch the guard saved (batch-*.safetensors; its .json sidecar "
                                               "next to it).")],
    model_dir: Annotated[
        Optional[Path], typer.Argument(metavar="[MODEL_DIR]", help="The checkpoint to check and replay against (default: the live model "
                                       "described in the sidecar).")
    ] = None,
    weights: Annotated[
        bool, typer.Option("--weights", help="Load MODEL_DIR's real weights instead of a shape twin.")
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    """Replay a saved bad batch on CPU: check it against MODEL_DIR, then run the forward for the real traceback.

    By default the forward runs on a shape twin (the model class with the real row counts and tiny hidden
    sizes: no weights are loaded, no code from the checkpoint runs). Exit codes: 1 the CPU forward fails
    (reproduced); 0 it runs clean (a GPU-only cause); 2 the replay could not run.
    """
    from .repro import run_repro

    try:
        code = run_repro(batch_file, model_dir, weights=weights, out=sys.stdout)
    except AuditError as exc:
        _fail(str(exc), debug)
    except Exception as exc:  # noqa: BLE001 - never a traceback without --debug
        _fail(f"{batch_file}: unexpected {exc.__class__.__name__}: {exc}", debug)
    raise typer.Exit(code)


@app.command(cls=_Command)
def demo(
    keep: Annotated[
        Optional[Path], typer.Option("--keep", help="Build the demo checkpoint in this folder and keep it.")
    ] = None,
    guard: Annotated[
        bool, typer.Option("--guard", help="Show the training-time guard catching a pad token added without a "
                           "resize, and repro replaying the saved batch.")
    ] = False,
) -> None:
    """Build a tiny broken checkpoint (tokens added, embeddings never resized) and audit it.

    With --guard: a healthy checkpoint, a training script that adds a pad token without a resize, and the
    guard stopping the first padded batch (then `repro` replays it on CPU).
    """
    from .demo import run_demo, run_guard_demo

    if keep is not None and keep.exists() and (not keep.is_dir() or any(keep.iterdir())):
        _fail(f"{keep}: --keep needs a new or empty folder (the demo writes a checkpoint there)", False)
    try:
        code = run_guard_demo(keep) if guard else run_demo(keep)
    except AuditError as exc:  # demo --guard without the torch extra
        _fail(str(exc), False)
    except OSError as exc:
        _fail(f"{exc.filename or keep}: cannot write the demo checkpoint: {exc.strerror or exc}", False)
    raise typer.Exit(code)


def main() -> None:
    """Run the command line. A usage error (a mistyped flag, a missing argument) is one line on stderr and
    exit 2, like every other error, instead of click's boxed usage block."""
    import os

    import typer.core

    # stderr is for the one error line: transformers' import-time advice ("PyTorch was not found. Models won't
    # be available...", on every chat-data run of the base install, which never needs torch) is not ours to print.
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    # typer 0.28 vendors click as typer._click; earlier releases use the click package.
    click_exceptions = (getattr(typer.core, "_click", None) or typer.core.click).exceptions  # type: ignore[attr-defined]
    try:
        code = app(standalone_mode=False)
    except click_exceptions.NoArgsIsHelpError as exc:  # a bare command: its help, as before
        exc.show()
        raise SystemExit(EXIT_ERROR) from None
    except click_exceptions.UsageError as exc:
        command = exc.ctx.command_path if exc.ctx is not None else "hf-vocab-audit"
        typer.echo(f"hf-vocab-audit: error: {one_line(exc.format_message())} (see '{command} --help')", err=True)
        raise SystemExit(EXIT_ERROR) from None
    except typer.Abort:  # typer's own in 0.28 (typer.exceptions), click's re-exported before
        typer.echo("Aborted.", err=True)
        raise SystemExit(1) from None
    raise SystemExit(code if isinstance(code, int) else 0)


def run() -> NoReturn:
    """The installed command: :func:`main`, then an exit that does not free what the audit read (the
    parsed tokenizer), once the report is written and the exit handlers have run."""
    from .core.lifetime import exit_code_of, exit_now, keep_for_the_process

    keep_for_the_process()
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exit_code_of(exc)
    exit_now(code)


if __name__ == "__main__":
    run()


def _write_suppress_ids(path: Path, section: "VllmSection | None") -> None:
    """The JSON list of ids a --target vllm audit says to suppress (a logits processor's or bad_words_ids' input)."""
    import json

    ids = list(section.suppress_token_ids) if section is not None else []
    try:
        path.write_text(json.dumps(ids) + "\n", encoding="utf-8")
    except OSError as exc:
        raise AuditError(path, f"cannot be written: {exc.strerror or exc}") from None

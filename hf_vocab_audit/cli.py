"""The command line: a thin layer over :func:`hf_vocab_audit.audit` and the renderers."""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import __version__
from .errors import AuditError, one_line

app = typer.Typer(
    name="hf-vocab-audit",
    help="Find the vocabulary, embedding, label and position bugs behind CUDA device-side asserts "
    "before a GPU sees them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class Format(str, enum.Enum):
    text = "text"
    json = "json"


class FailOn(str, enum.Enum):
    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


def _fail(message: str, debug: bool) -> None:
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


@app.command()
def check(
    model_dir: Annotated[Path, typer.Argument(help="Checkpoint folder (config.json, tokenizer, weights).")],
    tokenizer: Annotated[
        Optional[Path], typer.Option("--tokenizer", help="Tokenizer folder, when not in MODEL_DIR.")
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", help="Output format.")] = Format.text,
    fail_on: Annotated[
        FailOn, typer.Option("--fail-on", help="Exit 1 when a finding is at or above this severity.")
    ] = FailOn.error,
    select: Annotated[
        Optional[list[str]], typer.Option("--select", help="Only these rules (code, prefix or name; repeatable).")
    ] = None,
    ignore: Annotated[
        Optional[list[str]], typer.Option("--ignore", help="Skip these rules (code, prefix or name; repeatable).")
    ] = None,
    output_file: Annotated[
        Optional[Path], typer.Option("--output-file", help="Write the report here instead of standard output.")
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    """Audit MODEL_DIR from its files alone: no weights are loaded, no code is executed.

    Exit codes: 0 no finding at or above --fail-on; 1 at least one; 2 the audit could not run.
    """
    from .audit import audit
    from .formats import render
    from .rules.registry import validate_selectors

    unknown = validate_selectors([*(select or []), *(ignore or [])])
    if unknown:
        _fail(f"unknown rule code or name: {', '.join(unknown)} (see `hf-vocab-audit rules`)", False)
    try:
        report = audit(model_dir, tokenizer=tokenizer, select=select, ignore=ignore)
        text = render(report, fmt.value, fail_on.value)
    except AuditError as exc:
        _fail(str(exc), debug)
    except RecursionError:
        _fail(f"{model_dir}: input nested too deeply to audit", debug)
    except Exception as exc:  # noqa: BLE001 - never a traceback without --debug
        _fail(f"{model_dir}: unexpected {exc.__class__.__name__}: {exc}", debug)
    if output_file is not None:
        try:
            output_file.write_text(text, encoding="utf-8", errors="backslashreplace")
        except OSError as exc:
            _fail(f"{output_file}: cannot write the report: {exc.strerror}", debug)
    else:
        _write_utf8(text)
    raise typer.Exit(report.exit_code(fail_on.value))


def _write_utf8(text: str) -> None:
    """Reports are UTF-8 whatever the locale (LC_ALL=C must not turn a token into an encoding error)."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(text)
        return
    try:
        sys.stdout.flush()
        buffer.write(text.encode("utf-8", "backslashreplace"))
        buffer.flush()
    except BrokenPipeError:  # `hf-vocab-audit check m | head`: the reader left; keep the exit code, no traceback
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


@app.command("rules")
def rules_cmd(
    fmt: Annotated[Format, typer.Option("--format", help="Output format.")] = Format.text,
) -> None:
    """List every rule: code, name, severity and summary."""
    import json

    from .rules import all_rules

    rules = all_rules()
    if fmt is Format.json:
        data = [
            {"code": r.code, "name": r.name, "severity": r.severity.value, "scope": r.scope, "summary": r.summary}
            for r in rules
        ]
        typer.echo(json.dumps(data, indent=2))
        return
    for r in rules:
        typer.echo(f"{r.code}  {r.name:<36} {r.severity.value:<8} {r.summary}")


@app.command()
def explain(code: Annotated[str, typer.Argument(help="Rule code (HVA101) or name.")]) -> None:
    """Explain a rule: what it checks, why it matters, how to fix it."""
    from .rules import get_rule

    r = get_rule(code)
    if r is None:
        _fail(f"unknown rule {code!r} (see `hf-vocab-audit rules`)", False)
    typer.echo(r.explain())  # type: ignore[union-attr]


@app.command()
def demo(
    keep: Annotated[
        Optional[Path], typer.Option("--keep", help="Build the demo checkpoint in this folder and keep it.")
    ] = None,
) -> None:
    """Build a tiny broken checkpoint (tokens added, embeddings never resized) and audit it."""
    from .demo import run_demo

    raise typer.Exit(run_demo(keep))


def main() -> None:
    app()


if __name__ == "__main__":
    main()

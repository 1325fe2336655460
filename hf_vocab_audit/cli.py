"""The command line: a thin layer over :func:`hf_vocab_audit.audit` and the renderers.

No ``from __future__ import annotations`` here: typer reads every option's annotation on each run, and
string annotations cost it an ``eval`` each (about 10 ms of a 0.5 s gate); evaluated once at import
they cost nothing more.
"""

import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, Optional

import typer

from .core.options import Method, OutputFormat, VerifyLoad
from .core.outcome import EXIT_ERROR, FailOn
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


@app.command()
def check(
    target: Annotated[
        str, typer.Argument(metavar="TARGET", help="Checkpoint folder (config.json, tokenizer, weights), or "
                            "org/name (org/name@revision) on the Hub.")
    ],
    tokenizer: Annotated[
        Optional[Path], typer.Option("--tokenizer", help="Tokenizer folder, when not in the checkpoint.")
    ] = None,
    base: Annotated[
        Optional[Path], typer.Option("--base", help="Base checkpoint folder of a PEFT adapter TARGET (default: its "
                                     "base_model_name_or_path, a local folder or a Hub id).")
    ] = None,
    fmt: Annotated[
        Optional[list[OutputFormat]], typer.Option("--format", help="Output format (repeatable; default text).")
    ] = None,
    fail_on: Annotated[
        Optional[FailOn],
        typer.Option("--fail-on", help="Exit 1 when a finding is at or above this severity (default: error)."),
    ] = None,
    exit_zero: Annotated[
        Optional[bool], typer.Option("--exit-zero/--no-exit-zero", help="Exit 0 even when findings fail the gate.")
    ] = None,
    allow_partial: Annotated[
        Optional[bool], typer.Option("--allow-partial/--no-allow-partial",
                                     help="Accept an audit that could not examine everything (no tokenizer, no "
                                     "weights, a dataset column left unchecked): exit 0 with the verdict PARTIAL "
                                     "instead of exit 2. The report says what was not examined either way.")
    ] = None,
    select: Annotated[
        Optional[list[str]], typer.Option("--select", help="Only these rules (code, prefix or name; repeatable).")
    ] = None,
    ignore: Annotated[
        Optional[list[str]], typer.Option("--ignore", help="Skip these rules (code, prefix or name; repeatable).")
    ] = None,
    output_file: Annotated[
        Optional[list[Path]],
        typer.Option("--output-file", help="Write a format here (repeatable; pairs with --format in order, "
                     "the first format goes to standard output when there is one file fewer)."),
    ] = None,
    config: Annotated[
        Optional[Path], typer.Option("--config", help="Settings file to use instead of the working directory's "
                                     "and the model's hf-vocab-audit.toml.")
    ] = None,
    weights: Annotated[
        bool, typer.Option("--weights", help="Also read the embedding matrices to find untrained token rows.")
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
    fix: Annotated[
        bool, typer.Option("--fix", help="Write a repaired copy of MODEL_DIR (see --output); audit the copy.")
    ] = False,
    output: Annotated[
        Optional[Path], typer.Option("--output", help="Folder for --fix (default: MODEL_DIR-fixed).")
    ] = None,
    pad_to_multiple_of: Annotated[
        Optional[int], typer.Option("--pad-to-multiple-of", min=1, help="--fix: round grown rows up to this.")
    ] = None,
    unsafe_fixes: Annotated[
        bool, typer.Option("--unsafe-fixes", help="--fix: also apply fixes that change behaviour (special ids, pad).")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="--fix: replace a non-empty --output folder.")] = False,
    allow_large_growth: Annotated[
        bool, typer.Option("--allow-large-growth", help="--fix: allow growing the embeddings past twice their "
                           "rows or 4,194,304 rows.")
    ] = False,
    method: Annotated[
        Optional[Method], typer.Option("--method", help="--fix: rewrite only the changed tensors (surgical, the "
                                       "default), or load with transformers.")
    ] = None,
    verify_load: Annotated[
        Optional[VerifyLoad], typer.Option("--verify-load", help="--fix: load the result with transformers (auto, "
                                           "the default: if small).")
    ] = None,
    hub_timeout: Annotated[
        Optional[int], typer.Option("--hub-timeout", min=1, help="Org/name TARGET: seconds all Hub requests may "
                                    "take together (default: HF_VOCAB_AUDIT_HUB_TIMEOUT, else 30).")
    ] = None,
    dataset: Annotated[
        Optional[list[str]],
        typer.Option("--dataset", help="Also stream this dataset (data file, glob, folder, save_to_disk folder "
                     "or Hub id; repeatable).", rich_help_panel="Dataset audit"),
    ] = None,
    dataset_config: Annotated[
        Optional[str], typer.Option("--dataset-config", help="Dataset configuration name (Hub datasets).",
                                    rich_help_panel="Dataset audit")
    ] = None,
    split: Annotated[
        Optional[list[str]], typer.Option("--split", help="Only this split (repeatable; default all).",
                                          rich_help_panel="Dataset audit")
    ] = None,
    text_column: Annotated[
        Optional[list[str]], typer.Option("--text-column", help="Tokenize this column (repeatable; "
                                          "overrides detection).", rich_help_panel="Dataset audit")
    ] = None,
    label_column: Annotated[
        Optional[list[str]], typer.Option("--label-column", help="Check this column as labels (repeatable; "
                                          "overrides detection).", rich_help_panel="Dataset audit")
    ] = None,
    max_rows: Annotated[
        Optional[int], typer.Option("--max-rows", min=1, help="Scan at most N rows per split.",
                                    rich_help_panel="Dataset audit")
    ] = None,
    batch_size: Annotated[
        Optional[int], typer.Option("--batch-size", min=1, help="Rows per scanned batch (default 1000).",
                                    rich_help_panel="Dataset audit")
    ] = None,
    num_proc: Annotated[
        Optional[int], typer.Option("--num-proc", min=1, help="Scan up to N splits in parallel processes "
                                    "(default 1).", rich_help_panel="Dataset audit")
    ] = None,
    engine: Annotated[
        Optional[str], typer.Option("--engine", help="Scan here (local, the default) or on Ray (ray; pip install "
                                    "'hf-vocab-audit\\[ray]').", rich_help_panel="Dataset audit")  # \\[: not rich markup
    ] = None,
    ray_address: Annotated[
        Optional[str], typer.Option("--ray-address", help="Ray cluster to run on (default: RAY_ADDRESS, "
                                    "else a local instance).", rich_help_panel="Dataset audit")
    ] = None,
    chat_format: Annotated[
        Optional[str], typer.Option("--chat-format", help="Read the splits as this TRL format: language-modeling, "
                                    "prompt-completion, preference, unpaired-preference, or off (default: "
                                    "recognised from the columns).", rich_help_panel="Chat and instruction data")
    ] = None,
    messages_column: Annotated[
        Optional[str], typer.Option("--messages-column", help="The column of role/content turns (default "
                                    "messages).", rich_help_panel="Chat and instruction data")
    ] = None,
    max_length: Annotated[
        Optional[int], typer.Option("--max-length", min=1, help="The trainer's max_length: rows are truncated "
                                    "as TRL truncates them (default: a TRL config beside the data, else none).",
                                    rich_help_panel="Chat and instruction data")
    ] = None,
    assistant_only_loss: Annotated[
        Optional[bool], typer.Option("--assistant-only-loss/--no-assistant-only-loss", help="Loss on assistant "
                                     "turns only ({% generation %} masks).", rich_help_panel="Chat and instruction data")
    ] = None,
    completion_only_loss: Annotated[
        Optional[bool], typer.Option("--completion-only-loss/--no-completion-only-loss", help="Loss on the "
                                     "completion only (TRL's default for prompt-completion data).",
                                     rich_help_panel="Chat and instruction data")
    ] = None,
    packing: Annotated[
        Optional[bool], typer.Option("--packing/--no-packing", help="The trainer packs rows (no truncation).",
                                     rich_help_panel="Chat and instruction data")
    ] = None,
    trl_config: Annotated[
        Optional[Path], typer.Option("--trl-config", help="A saved TRL SFTConfig/DPOConfig/KTOConfig (JSON or "
                                     "YAML) to read max_length and the loss settings from.",
                                     rich_help_panel="Chat and instruction data")
    ] = None,
    show_mask: Annotated[
        Optional[int], typer.Option("--show-mask", min=1, help="Show the first N rows (at most 20) of each chat "
                                    "split as the trainer gets them, the tokens with a loss marked (text and "
                                    "html formats; json carries them).", rich_help_panel="Chat and instruction data")
    ] = None,
    source: Annotated[
        Optional[Path], typer.Option("--source", help="GGUF TARGET: the HF checkpoint folder it was converted "
                                     "from, compared id by id.", rich_help_panel="GGUF and serving engines")
    ] = None,
    target_kind: Annotated[
        Optional[str], typer.Option("--target", help="Also say what this consumer will do with the checkpoint: "
                                    "gguf (llama.cpp's converter) or vllm (engines sampling the whole lm_head).",
                                    rich_help_panel="GGUF and serving engines")
    ] = None,
    suppress_ids_file: Annotated[
        Optional[Path], typer.Option("--suppress-ids-file", help="With --target vllm: write the ids to suppress "
                                     "at sampling time here, as a JSON list.", rich_help_panel="GGUF and serving engines")
    ] = None,
) -> None:
    """Audit TARGET from its files alone: no weights are loaded, no code is executed.

    Settings come from the tool.hf-vocab-audit table of pyproject.toml and hf-vocab-audit.toml in the working
    directory (or --config); flags win. The model's own hf-vocab-audit.toml may only make the gate stricter.
    Exit codes: 0 no finding at or above --fail-on (or --exit-zero); 1 at least one; 2 the audit could not run.
    With --dataset, also stream the dataset and find every out-of-range id and label (HVA5xx).
    With --fix, write a repaired copy (see --output) and report the audit of that copy.
    TARGET may be a GGUF file (llama.cpp's format); --source HF_DIR compares it with its HF checkpoint.
    """
    from .core.options import build_gate_options
    from .formats.outputs import pair_outputs, write_outputs
    from .gate import run_gate
    from .io.output_path import check_output_file

    if not debug:  # a library's warning (torch.load's TorchScript notice) must not add lines to stderr
        warnings.simplefilter("ignore")
    given = dict(
        tokenizer=tokenizer, base=base, formats=[f.value for f in fmt] if fmt else None,
        fail_on=fail_on.value if fail_on else None, exit_zero=exit_zero, allow_partial=allow_partial,
        select=select, ignore=ignore, output_files=output_file, weights=weights or None, debug=debug or None,
        fix=fix or None, output=output, pad_to_multiple_of=pad_to_multiple_of, unsafe_fixes=unsafe_fixes or None,
        force=force or None, allow_large_growth=allow_large_growth or None,
        method=method.value if method else None, verify_load=verify_load.value if verify_load else None,
        datasets=dataset, dataset_config=dataset_config, splits=split, text_columns=text_column,
        label_columns=label_column, max_rows=max_rows, batch_size=batch_size, num_proc=num_proc, engine=engine,
        ray_address=ray_address, chat_format=chat_format, messages_column=messages_column, max_length=max_length,
        assistant_only_loss=assistant_only_loss, completion_only_loss=completion_only_loss, packing=packing,
        trl_config=trl_config, source=source, target_kind=target_kind, suppress_ids_file=suppress_ids_file,
        hub_timeout=hub_timeout, show_mask=show_mask,
    )  # flags not given are None: the settings files fill them, then the defaults
    try:
        if select or ignore:  # (the rule modules are imported only to check selectors that were given)
            from .rules.registry import parse_selectors

            parse_selectors([*(select or []), *(ignore or [])], "--select/--ignore")
        build_gate_options({k: v for k, v in given.items() if v is not None}, target, complete=False)  # no read
    except AuditError as exc:
        _fail(str(exc), False)
    try:
        inputs = [target, tokenizer, base, config, *(dataset or [])]
        for _, out_path in pair_outputs([f.value for f in fmt or []], list(output_file or [])):
            if out_path is not None:  # a planted link or a path into the checkpoint: refused before the audit
                check_output_file(out_path, inputs)
        outcome = run_gate(target, config=config, options=given, progress=all(
            f is OutputFormat.TEXT for f in fmt or []) and not output_file and sys.stderr.isatty())
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


@app.command("rules")
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


@app.command()
def explain(code: Annotated[str, typer.Argument(metavar="CODE", help="Rule code (HVA101) or name.")]) -> None:
    """Explain a rule: what it checks, why it matters, how to fix it."""
    from .rules import get_rule

    r = get_rule(code)
    if r is None:
        _fail(f"unknown rule {code!r} (see `hf-vocab-audit rules`)", False)
    typer.echo(r.explain())


@app.command()
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


@app.command()
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
    except click_exceptions.Abort:
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

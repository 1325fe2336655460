"""``hf-vocab-audit-pre-commit FILE...``: audit every model folder that a commit touches (pre-commit hook).

A changed file belongs to the nearest folder at or above it that holds ``config.json`` (a checkpoint) or
``adapter_config.json`` (a PEFT adapter, audited against its base); each such folder is audited once,
with the same settings files and exit codes as ``hf-vocab-audit check``: the repository's
``pyproject.toml`` or ``hf-vocab-audit.toml`` where the hook runs (or ``--config FILE``). A model folder's own
settings file, or the repository's when the repository is the model, may only make the gate stricter.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .core.options import BY_KEY, Kind, Option
from .errors import AuditError

# The gate's options the hook takes, with check's declarations (flag, choices, help): declared once.
HOOK_OPTIONS = ("fail-on", "exit-zero", "config")


def model_folders(files: list[str], root: Path | None = None) -> list[Path]:
    """The distinct model or adapter folders (config.json, adapter_config.json) that contain ``files``, in
    first-seen order."""
    top = (root or Path.cwd()).resolve()
    seen: dict[Path, None] = {}
    for name in files:
        path = Path(name)
        start = path.parent if not path.is_dir() else path
        for folder in (start, *start.parents):
            if (folder / "config.json").is_file() or (folder / "adapter_config.json").is_file():
                seen.setdefault(folder, None)
                break
            if folder.resolve() == top or folder == Path("."):
                break
    return list(seen)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hf-vocab-audit-pre-commit", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="changed files (pre-commit passes them)")
    for key in HOOK_OPTIONS:
        _add(parser, BY_KEY[key])
    args = parser.parse_args(argv)
    from .formats import render
    from .gate import run_gate

    worst = 0
    for folder in model_folders(args.files):
        try:
            outcome = run_gate(str(folder), config=args.config, fail_on=args.fail_on, exit_zero=args.exit_zero)
        except AuditError as exc:
            print(f"hf-vocab-audit: error: {exc}", file=sys.stderr)
            worst = 2
            continue
        sys.stdout.write(render(outcome.report, "text"))
        worst = max(worst, outcome.exit_code)
    return worst


def _add(parser: argparse.ArgumentParser, option: Option) -> None:
    """``option`` as an argparse flag, as ``check`` declares it (None when not given: the settings decide)."""
    flag = f"--{option.key}"
    if option.kind is Kind.BOOL:
        action = argparse.BooleanOptionalAction if option.negatable else "store_true"
        parser.add_argument(flag, dest=option.attr, action=action, default=None, help=option.help)
    elif option.kind is Kind.CHOICE:
        parser.add_argument(flag, dest=option.attr, choices=option.choice_values, default=None, help=option.help)
    elif option.kind is Kind.PATH:
        parser.add_argument(flag, dest=option.attr, type=Path, default=None, help=option.help)
    else:  # pragma: no cover - HOOK_OPTIONS holds only the kinds above
        raise TypeError(f"the pre-commit hook cannot take {flag} ({option.kind.value})")


if __name__ == "__main__":
    raise SystemExit(main())

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

from .core.outcome import FAIL_ON
from .errors import AuditError


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
    parser.add_argument("--fail-on", choices=FAIL_ON, default=None)
    parser.add_argument("--exit-zero", action="store_true", default=None)
    parser.add_argument("--config", type=Path, default=None,
                        help="settings file to use instead of the working directory's and the models' own")
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


if __name__ == "__main__":
    raise SystemExit(main())

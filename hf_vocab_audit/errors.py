"""The one exception that means "the audit could not run" (exit code 2)."""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any


def one_line(text: str, limit: int = 1000) -> str:
    """``text`` on one line: control and line-separator characters escaped, at most ``limit`` characters.

    File names, JSON keys and token strings come from untrusted checkpoints; an error must stay one line
    (and encodable: lone surrogates from JSON ``"\\ud800"`` are escaped too).
    """
    out = "".join(
        repr(ch)[1:-1] if unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp") else ch for ch in text[: limit * 2]
    )
    return out if len(out) <= limit else out[: limit - 3] + "..."


def first_line(exc: BaseException, limit: int = 300, *, default: str | None = None) -> str:
    """The first line of ``str(exc)`` (else ``default``, else the exception's class name), at most ``limit``
    characters: third-party errors carry tracebacks and dumps that must not reach a one-line message."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else (exc.__class__.__name__ if default is None else default)
    return line[:limit]


class AuditError(Exception):
    """Bad input: names the file and the problem in one line."""

    def __init__(self, path: str | Path | None, problem: str):
        self.path = str(path) if path is not None else None
        self.problem = problem
        super().__init__(one_line(f"{self.path}: {problem}" if self.path else problem))


def install_extra(extra: str) -> str:
    """The command that installs ``extra`` the way this copy was installed.

    From a source checkout (an editable install, or run from a clone) ``pip install 'hf-vocab-audit[x]'``
    would fetch the released package beside the clone and ignore the pinned versions: there the command
    installs the checkout itself with its ``constraints.txt``.
    """
    import shlex

    root = Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() and (root / "constraints.txt").is_file():
        return f"pip install -c {shlex.quote(str(root / 'constraints.txt'))} -e {shlex.quote(f'{root}[{extra}]')}"
    return f"pip install 'hf-vocab-audit[{extra}]'"


def torch_extra() -> str:
    """How to install PyTorch for this copy (see :func:`install_extra`)."""
    return install_extra("torch")


class MissingExtra(AuditError):
    """A command needs an optional dependency that is not installed: one line naming the extra to install
    (exit 2 like any input the audit cannot read), never an ImportError traceback and never a pass."""


def import_torch(path: str | Path | None, needed_for: str) -> Any:
    """``torch``, or :class:`MissingExtra` saying what needed it and which extra installs it.

    torch is an extra (as in ``transformers[torch]``): the static check, ``--dataset``, ``--weights`` and
    ``--fix`` on safetensors never import it, so every path that does asks here first.
    """
    try:
        import torch
    except ImportError:
        raise MissingExtra(path, f"{needed_for} needs PyTorch, which is not installed: {torch_extra()}") from None
    return torch

"""The one exception that means "the audit could not run" (exit code 2)."""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

# Characters that act on the display instead of showing: controls (ESC drives a terminal, CR rewrites a
# line), format characters (bidi overrides and isolates U+202A-202E/U+2066-2069 reorder the rest of the line,
# "Trojan source"; zero-width spaces and joiners, U+FEFF and U+061C hide text), line and paragraph
# separators (U+2028/2029 end a line in editors and JavaScript), and lone surrogates (not encodable).
HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def hidden(ch: str) -> bool:
    """Whether ``ch`` is invisible or changes how the text around it is displayed (:data:`HIDDEN`)."""
    return unicodedata.category(ch) in HIDDEN


def printable(text: str, keep: str = "") -> str:
    """``text`` with every hidden character (:func:`hidden`) but those in ``keep`` written as its Python
    escape (``\\x1b``, ``\\n``, ``\\u202e``, ``\\u200b``): what a checkpoint wrote stays legible and
    cannot drive a terminal, end a line, or reorder what a reader sees. The one escaping every output uses
    (error lines, the text, Markdown and GitHub reports, SARIF messages, JUnit XML)."""
    if text.isascii() and text.isprintable() and not keep:
        return text
    return "".join(repr(ch)[1:-1] if ch not in keep and hidden(ch) else ch for ch in text)


def one_line(text: str, limit: int = 1000) -> str:
    """``text`` on one line: hidden characters escaped (:func:`printable`), at most ``limit`` characters.

    File names, JSON keys and token strings come from untrusted checkpoints; an error must stay one line
    (and encodable: lone surrogates from JSON ``"\\ud800"`` are escaped too).
    """
    out = printable(text[: limit * 2])
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


# jinja2 is a base dependency (pyproject.toml): transformers renders chat templates with it but does not
# depend on it. An install that lacks it gets this line (exit 2) rather than every conversation reported as
# refused by its template, or an ImportError.
JINJA_MISSING = ("the dataset scan renders chat templates with jinja2, which is not installed: pip install "
                 "'jinja2>=3.1' (a dependency of hf-vocab-audit: reinstalling it installs jinja2)")


def jinja_missing() -> MissingExtra:
    return MissingExtra(None, JINJA_MISSING)

"""The audit ``--fix`` runs on its input and on its output, made in one place for both callers.

The gate passes ``check``'s own options and its allowlist; :func:`..pipeline.fix_checkpoint` passes the ones
it was given. Either way the two audits of one run are the same audit: the folder's files as the pipeline
read them (``facts``), the same options, the same findings accepted.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from ..audit import audit_source
from ..core.options import AuditOptions
from ..core.report import Report
from ..facts import Facts
from ..facts.sources.folder import FolderSource, ReadFolderSource


class Auditor(Protocol):
    """The audit ``--fix`` runs on its input and on its output: ``check``'s own (its rules, ``--weights``,
    ``--target``, the allowlist). ``facts`` are the folder's files as the pipeline read them (the output is
    read in its temporary folder); ``folder`` names the target in the report."""

    def __call__(self, folder: Path, *, facts: Facts | None = None) -> Report: ...


def folder_auditor(options: AuditOptions, accept: Callable[[Report], Report] | None = None) -> Auditor:
    """An :class:`Auditor` that audits a folder under ``options``; ``accept`` marks the findings an allowlist
    accepts (``Finding.allowed``: ``--fix`` leaves them alone and does not count them fixed)."""

    def audit(folder: Path, *, facts: Facts | None = None) -> Report:
        read = ReadFolderSource(folder, facts) if facts is not None else FolderSource(folder)
        report = audit_source(read, options)
        return accept(report) if accept is not None else report

    return audit

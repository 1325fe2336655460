"""``--fix``: repair a checkpoint into a new folder, never shrinking, never touching the input.

    from hf_vocab_audit.fix import fix_checkpoint
    report = fix_checkpoint("path/to/model", output="path/to/model-fixed")
    report.fixes      # what was applied;  report.fix.unfixed: what was not, and why

``repair(target, output, audit=...)`` is the pipeline itself: audit -> write -> audit, with the auditor as a
parameter (the gate passes the audit ``check`` runs); ``fix_checkpoint`` wraps it with ``audit()``.

Modules: ``pipeline`` (the steps in order), ``plan`` (findings -> one :class:`CheckpointRepair`, in
``repair_plan``),
``pad_token`` (choosing a pad token), ``surgical`` / ``transformers_route`` (two ways to write it),
``reinit`` (mean rows), ``edits`` (JSON and tokenizer edits), ``verify`` (proof), ``writer`` (atomic folder).
"""

from __future__ import annotations

from ..core.findings import FixResult, Unfixed
from .pipeline import METHODS, VERIFY_LOAD, Auditor, fix_checkpoint, repair
from .plan import make_plan
from .repair_plan import CheckpointRepair

__all__ = ["METHODS", "VERIFY_LOAD", "Auditor", "CheckpointRepair", "FixResult", "Unfixed", "fix_checkpoint", "make_plan",
           "repair"]

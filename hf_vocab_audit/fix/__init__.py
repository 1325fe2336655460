"""``--fix``: repair a checkpoint into a new folder, never shrinking, never touching the input.

    from hf_vocab_audit.fix import fix_checkpoint
    report = fix_checkpoint("path/to/model", output="path/to/model-fixed")
    report.fixes      # what was applied;  report.fix.unfixed: what was not, and why

``repair(target, output, audit=...)`` is the pipeline itself: audit -> write -> audit, with the auditor as a
parameter (``folder_auditor(options, accept)`` makes it, for the gate and for ``fix_checkpoint`` alike).

Modules: ``pipeline`` (the steps in order), ``auditor`` (the audit of the input and of the output), ``plan``
(findings -> one :class:`CheckpointRepair`, in ``repair_plan``), ``route`` (the surgical and transformers
routes, chosen once), ``settle`` (which findings left alone were resolved: by code and location),
``pad_token`` (choosing a pad token), ``surgical`` / ``transformers_route`` (the two writers),
``reinit`` (mean rows), ``edits`` (JSON and tokenizer edits), ``paired_edits`` (what a base checkpoint or a
serving target's fixes read: the base's rows and chat template, a template to move, the stop ids), ``verify``
(proof), ``writer`` (atomic folder).
"""

from __future__ import annotations

from ..core.findings import FixResult, Unfixed
from .auditor import Auditor, folder_auditor
from .pipeline import METHODS, VERIFY_LOAD, fix_checkpoint, repair
from .plan import make_plan
from .repair_plan import CheckpointRepair
from .route import ROUTES, Route

__all__ = ["METHODS", "ROUTES", "VERIFY_LOAD", "Auditor", "CheckpointRepair", "FixResult", "Route", "Unfixed",
           "fix_checkpoint", "folder_auditor", "make_plan", "repair"]

"""A Hub commit (``org/name[@revision]``): its small files checked out into a temporary folder, its tensor
headers read with HTTP range requests."""

from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...core.findings import Source
from ...core.options import AuditOptions
from ..checkpoint import Facts
from . import FactsSource, SourceError


class HubSource(FactsSource):
    name = "hub"
    origin = Source.HUB
    lines = False  # the checkout is removed after the audit
    remote = True

    def __init__(self, target: object) -> None:
        super().__init__(target)
        self.checkout: Any = None

    @classmethod
    def accepts(cls, target: object) -> bool:
        from ..hub import parse_hub_ref

        return isinstance(target, str) and not Path(target).exists() and parse_hub_ref(target) is not None

    def refuse(self, options: AuditOptions, fixing: bool = False) -> None:
        if fixing:
            raise SourceError(str(self.target), "--fix needs a local checkpoint folder, not a Hub id")
        flags = (("--weights", options.weights), ("--dataset", options.scan is not None),
                 ("--base", options.base is not None), ("--source", options.source is not None),
                 ("--target", options.target_kind is not None))
        local_only = [flag for flag, given in flags if given]
        if local_only:
            raise SourceError(str(self.target), f"{', '.join(local_only)} need a local checkpoint folder (Hub "
                              "targets are audited from their small files and headers only)")

    def open(self, stack: ExitStack) -> Path | None:
        from ...errors import AuditError
        from ..hub import checkout, parse_hub_ref

        ref = parse_hub_ref(str(self.target))
        assert ref is not None
        try:
            self.checkout = stack.enter_context(checkout(ref))
        except AuditError as exc:  # say so when the user meant a local folder
            raise SourceError(exc.path, f"{exc.problem} (and no local folder {self.target!r} exists)") from None
        return Path(self.checkout.folder)

    def gather(self, options: AuditOptions) -> Facts:
        from ..folder import gather

        co = self.checkout
        if co is None:
            raise RuntimeError("HubSource.gather before open")
        facts = gather(co.folder, options.tokenizer_path, tensors_from=lambda _folder: co.tensors)
        if co.tensors is None and co.tensors_missing:
            facts = replace(facts, missing={**facts.missing, "tensors": co.tensors_missing})
        return facts

    @property
    def path(self) -> Path | None:
        return None

    @property
    def label(self) -> str:
        if self.checkout is None:
            return os.fspath(str(self.target))
        return f"{self.checkout.ref.repo_id}@{self.checkout.commit}"

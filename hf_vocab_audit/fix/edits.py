"""Apply a plan's JSON edits and new tokens to the output folder (the input is only read)."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import AuditError
from .repair_plan import CheckpointRepair


def apply_edits(src: Path, dst: Path, plan: CheckpointRepair) -> None:
    by_file: dict[str, list] = {}
    for edit in plan.json_edits:
        by_file.setdefault(edit.file, []).append(edit)
    for file, edits in by_file.items():
        base = dst / file if (dst / file).exists() else src / file
        data = json.loads(base.read_text(encoding="utf-8")) if base.exists() else {}
        if not isinstance(data, dict):
            raise AuditError(base, "must hold a JSON object")
        for edit in edits:
            edit.apply(data)
        (dst / file).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for name, data in plan.files:
        (dst / name).write_bytes(data)
    if plan.new_tokens:
        from tokenizers import AddedToken, Tokenizer

        from ..facts.tokenizer.bounded_calls import library_call

        with library_call(src / "tokenizer.json", "the tokenizers library cannot add the new tokens"):
            backend = Tokenizer.from_file(str(src / "tokenizer.json"))
            backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in plan.new_tokens])
            backend.save(str(dst / "tokenizer.json"))

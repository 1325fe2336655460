"""Frozen untrained rows (group "frozen rows"): ``--weights --dataset`` on a PEFT adapter, with an adapter
config written to make the audit believe the rows train, or to make the scan's watch expensive. The healthy
base's matrices are all zero (every row untrained), so each case must fail (exit 1, HVA580) or refuse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from malformed import _data, _jsonl, case, write_json

GROUP = "frozen rows"


def _adapter(folder: Path, **config: Any) -> Path:
    adapter = folder.parent / "adapter"
    adapter.mkdir()
    write_json(adapter / "adapter_config.json", {"base_model_name_or_path": str(folder), "peft_type": "LORA", "r": 4,
                                                 **config})
    return adapter


@case(GROUP, exit_codes=(1,))
def adapter_names_that_match_everything(folder: Path) -> list[str]:
    """Empty module names (``"".endswith`` is true of every module) and a regular expression that backtracks
    for ever if run (and names embed_tokens): neither may make the frozen rows count as trained."""
    adapter = _adapter(folder, target_modules="(e|em|emb|embe|embed_tokens|.)*+$x", modules_to_save=[""],
                       trainable_token_indices={"": [4, 5, 6, 7]})
    data = _data(folder)
    _jsonl(data / "train.jsonl", [{"input_ids": [1, 4, 5, 2]}])
    return [str(adapter), "--weights", "--dataset", str(data / "train.jsonl")]


@case(GROUP, exit_codes=(1,))
def dataset_ids_far_past_the_watched_rows(folder: Path) -> list[str]:
    """Ids of 2**62 and negatives beside the watched ones: the per-batch lookup table spans the watched ids only."""
    adapter = _adapter(folder, target_modules=["q_proj"], trainable_token_indices=[4])
    data = _data(folder)
    _jsonl(data / "train.jsonl", [{"input_ids": [1, 2**62, -5, 5, 2]}, {"input_ids": [-(2**62), 6, 7, 4]}])
    return [str(adapter), "--weights", "--dataset", str(data / "train.jsonl")]

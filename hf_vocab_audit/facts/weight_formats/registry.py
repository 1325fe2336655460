"""The weight formats, in the order a folder is read: the first that finds tensors reads them (safetensors is
preferred to a ``.bin`` beside it). A new format is a :class:`~hf_vocab_audit.facts.weight_formats.WeightFormat`
subclass and one line in ``WEIGHT_FORMATS``."""

from __future__ import annotations

from pathlib import Path

from ..tensors import CheckpointTensors
from . import WeightFormat
from .gguf import GGUFTensors
from .live import LiveTensors
from .pickle_free import PickleFreeBin
from .safetensors import Safetensors

WEIGHT_FORMATS: list[WeightFormat] = [
    Safetensors(),
    PickleFreeBin(),
    GGUFTensors(),  # read by the GGUF source
    LiveTensors(),  # read by the memory source
]


class _Unlisted(WeightFormat):
    """A format no registered reader claims (tensors built by hand): nothing is assumed of its files."""

    def __init__(self, name: str) -> None:
        self.name = name  # type: ignore[misc]


def format_of(tensors: CheckpointTensors) -> WeightFormat:
    """The format that read ``tensors``: what may be done with their files is asked of it, not of its name."""
    return next((f for f in WEIGHT_FORMATS if f.name == tensors.format), None) or _Unlisted(tensors.format)


def load_tensors(folder: Path) -> CheckpointTensors | None:
    """The checkpoint's tensors, read by the first format that finds any in ``folder``; None when it has none."""
    for fmt in WEIGHT_FORMATS:
        found = fmt.load(folder)
        if found is not None:
            return found
    return None


__all__ = ["WEIGHT_FORMATS", "format_of", "load_tensors"]

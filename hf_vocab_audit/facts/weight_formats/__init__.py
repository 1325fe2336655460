"""How a checkpoint stores its tensors: one small interface (:class:`WeightFormat`) per weight format.

A format says its ``name`` (``CheckpointTensors.format``, the report's ``facts.weights_format``), reads the
tensor headers of a folder stored its way (``load``: None when the folder holds none; a format read by its own
facts source, a GGUF file or a live model, finds nothing in a folder), and declares what the rest of the
tool may do with its files (``byte_ranges``). Callers ask the format (:func:`.registry.format_of`), never
compare its name. The formats are listed once, in :mod:`.registry`; a new one (ONNX, MLX) is a class here
and one line in ``WEIGHT_FORMATS``.
"""

from __future__ import annotations

from abc import ABC
from pathlib import Path
from typing import ClassVar

from ..tensors import CheckpointTensors


class WeightFormat(ABC):
    """One way of storing a checkpoint's tensors (safetensors, a pickle-free ``.bin``, GGUF, live tensors)."""

    name: ClassVar[str]
    # Its files are raw tensor bytes at offsets its header gives: --weights reads embedding rows from them
    # (io.rows), and --fix grows them in place and compares them range by range (fix.surgical, fix.verify).
    byte_ranges: ClassVar[bool] = False
    # Why --weights cannot read its rows ({file}: its first weight file), when ``byte_ranges`` is False.
    no_rows: ClassVar[str] = "weight statistics read safetensors only; {file} is stored as {format}"

    def load(self, folder: Path) -> CheckpointTensors | None:
        """The tensors of the checkpoint stored this way in ``folder`` (headers only), or None."""
        return None

    def rows_unreadable(self, tensors: CheckpointTensors) -> str | None:
        """Why ``--weights`` cannot read the embedding rows of ``tensors``, or None when it can."""
        if self.byte_ranges:
            return None
        return self.no_rows.format(file=tensors.files[0] if tensors.files else "the checkpoint", format=self.name)


__all__ = ["WeightFormat"]

"""A live model's tensors (``audit(model=...)``): named from the module's parameters by the memory facts source;
there are no files to read rows from or to grow."""

from __future__ import annotations

from typing import ClassVar

from . import WeightFormat


class LiveTensors(WeightFormat):
    name: ClassVar[str] = "memory"
    no_rows = ("the weight statistics read safetensors files; a live model has none here (audit its saved folder "
               "with weights=True)")


__all__ = ["LiveTensors"]

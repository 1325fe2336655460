"""llama.cpp's GGUF: its tensor infos are read with its metadata by the GGUF facts source (one file, not a folder
of a transformers checkpoint), so ``load`` finds nothing; its data is quantised blocks, never read here."""

from __future__ import annotations

from typing import ClassVar

from . import WeightFormat


class GGUFTensors(WeightFormat):
    name: ClassVar[str] = "gguf"


__all__ = ["GGUFTensors"]

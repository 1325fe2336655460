"""How a report shows itself (``str(report)``, a notebook cell): filled by the renderers' package when it is
imported (``hf_vocab_audit`` imports it), since the report model cannot import the layer that renders it.
A module of its own so that registering costs no import of the report model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

DISPLAY: dict[str, Callable[[Any], str]] = {}  # format name -> renderer of a core.report.Report

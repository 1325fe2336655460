"""The machine-readable report (``reports/schema/report.schema.json``)."""

from __future__ import annotations

import json

from ..core.report import Report
from .escape import finite


def render(report: Report) -> str:
    data = report.to_dict()  # the verdict fields come from report.verdict()
    return json.dumps(finite(data), indent=2, ensure_ascii=False, allow_nan=False) + "\n"

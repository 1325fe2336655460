"""The machine-readable report (``reports/schema/report.schema.json``)."""

from __future__ import annotations

import json

from ..core.report import Report


def render(report: Report) -> str:
    data = report.to_dict()  # the verdict fields come from report.verdict()
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

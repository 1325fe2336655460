"""The machine-readable report (``reports/schema/report.schema.json``)."""

from __future__ import annotations

import json

from ..report import Report


def render(report: Report, fail_on: str = "error") -> str:
    data = report.to_dict()
    data["exit_code"] = report.exit_code(fail_on)
    data["fail_on"] = fail_on
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

"""The machine-readable report (``reports/schema/report.schema.json``)."""

from __future__ import annotations

import json

from ..report import Report
from .escape import finite


def render(report: Report, fail_on: str = "error") -> str:
    data = report.to_dict()
    data["exit_code"] = report.exit_code(fail_on)
    data["fail_on"] = fail_on
    return json.dumps(finite(data), indent=2, ensure_ascii=False, allow_nan=False) + "\n"

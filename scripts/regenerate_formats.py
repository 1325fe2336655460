"""Regenerate the golden report of every output format in ``reports/formats/``.

    python scripts/regenerate_formats.py [OUT_DIR]

The checkpoint is the demo's (tokens added, embeddings never resized) at the relative path
``models/broken-llama``, audited from a working directory whose ``hf-vocab-audit.toml`` accepts one finding, so every format
shows errors, a warning-level allowed finding and the allowlist reason. Timing is normalised to 0.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hf_vocab_audit.demo import build_demo_checkpoint  # noqa: E402 - after the sys.path entry above
from hf_vocab_audit.formats import render, text  # noqa: E402
from hf_vocab_audit.gate import run_gate  # noqa: E402

OUT_DIR = ROOT / "reports" / "formats"
TARGET = "models/broken-llama"
EXTENSIONS = {"text": "txt", "json": "json", "markdown": "md", "sarif": "sarif", "junit": "junit.xml",
              "github": "github.txt", "html": "html"}
ALLOWLIST = """\
# Accepted findings (hf-vocab-audit reads this file in the working directory the gate runs from).
fail-on = "error"

[[allow]]
code = "HVA202"
key = "eos_token_id"
reason = "config.json keeps the pretraining eos (</s>); chat generation stops on the tokenizer's <|im_end|>"
"""


def golden_outputs() -> dict[str, str]:
    """File name -> content of each format's golden report."""
    cwd = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="hf-vocab-audit-golden-") as tmp:
        build_demo_checkpoint(Path(tmp) / TARGET)
        (Path(tmp) / "hf-vocab-audit.toml").write_text(ALLOWLIST, encoding="utf-8")
        os.chdir(tmp)
        try:
            outcome = run_gate(TARGET, cwd=Path(tmp))
            report = dataclasses.replace(outcome.report, duration_s=0.0)
            out = {}
            for fmt, ext in EXTENSIONS.items():
                body = text.render(report, color=False) if fmt == "text" else render(report, fmt)
                out[f"broken.{ext}"] = body
            return out
        finally:
            os.chdir(cwd)


def main(argv: list[str]) -> int:
    out_dir = Path(argv[0]) if argv else OUT_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, body in golden_outputs().items():
        (out_dir / name).write_text(body, encoding="utf-8")
        print(out_dir / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

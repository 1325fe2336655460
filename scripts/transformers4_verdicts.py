#!/usr/bin/env python
"""Record what transformers 4.x does with checkpoints transformers 5 saved, into
tests/data/transformers4_verdicts.json (the fast tests replay these verdicts; the live test reruns them).

    python -m venv V4 && V4/bin/pip install 'transformers==4.57.6' jinja2 protobuf   # no torch needed
    python scripts/transformers4_verdicts.py --python V4/bin/python [--out tests/data/transformers4_verdicts.json]

For every case of tests/transformers4_builders.py: build it here with transformers 5; read it with
tests/transformers4_probe.py under transformers 5 and under the 4.x interpreter (AutoConfig, AutoTokenizer,
the special tokens, the ids of a probe text, apply_chat_template); run ``check --target 'transformers<5' --fix``
and read the fixed copy with both again. Also writes the model types 4.x's AutoConfig knows
(``CONFIG_MAPPING_NAMES``), which hf_vocab_audit/facts/transformers4_tables.py must equal. Nothing of
transformers is copied into the project: only these observations.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
PROBE = ROOT / "tests" / "transformers4_probe.py"
MODEL_TYPES = ("from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES as m; "
               "import json; print(json.dumps(sorted(m)))")


def probe(python: str, folder: Path) -> dict:
    done = subprocess.run([python, str(PROBE), str(folder)], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        return {"crashed": done.stderr.strip().splitlines()[-1:] or ["?"]}
    reading = json.loads(done.stdout)
    for key in ("config_error", "tokenizer_error"):
        if key in reading:  # the first line: a 4.x ValueError goes on with upgrade advice
            reading[key] = reading[key].splitlines()[0]
    return reading


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--python", required=True, help="the interpreter of a venv with transformers 4.x")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "transformers4_verdicts.json")
    args = parser.parse_args()
    from transformers4_builders import CASES, build

    v4 = probe(args.python, Path("/nonexistent"))
    out: dict = {
        "reader": f"transformers {v4.get('transformers')} with tokenizers {v4.get('tokenizers')}",
        "writer": None,
        "how": "python scripts/transformers4_verdicts.py --python <venv with transformers 4.x>/bin/python",
        "model_types": json.loads(subprocess.run([args.python, "-c", MODEL_TYPES], capture_output=True, text=True,
                                                 check=True).stdout),
        "cases": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            folder = build(Path(tmp) / case.name, case.name)
            fixed = Path(tmp) / f"{case.name}-fixed"
            v5_reading = probe(sys.executable, folder)
            out["writer"] = f"transformers {v5_reading.get('transformers')} with tokenizers {v5_reading.get('tokenizers')}"
            check = subprocess.run([sys.executable, "-m", "hf_vocab_audit", "check", str(folder), "--target",
                                    "transformers<5", "--fix", "--output", str(fixed), "--select", "HVA97"],
                                   capture_output=True, text=True, cwd=ROOT, timeout=600)
            record = {"v5": v5_reading, "v4": probe(args.python, folder), "fix_exit_code": check.returncode}
            if fixed.is_dir():
                record["fixed_v5"] = probe(sys.executable, fixed)
                record["fixed_v4"] = probe(args.python, fixed)
            for reading in record.values():
                if isinstance(reading, dict):
                    reading.pop("transformers", None)
                    reading.pop("tokenizers", None)
            out["cases"][case.name] = record
    args.out.write_text(json.dumps(out, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python
"""Record what transformers 4.x does with checkpoints transformers 5 saved, into
tests/data/transformers4_verdicts.json (the fast tests replay these verdicts; the live test reruns them).

    python -m venv V4 && V4/bin/pip install 'transformers==4.57.6' jinja2 protobuf   # no torch needed
    python scripts/transformers4_verdicts.py --python V4/bin/python [--out tests/data/transformers4_verdicts.json]

For every case of tests/transformers4_builders.py: build it here with transformers 5; read it with
tests/transformers4_probe.py under transformers 5 and under the 4.x interpreter (AutoConfig, AutoTokenizer,
the special tokens, the ids of a probe text, apply_chat_template); run ``check --target 'transformers<5' --fix``
and read the fixed copy with both again. Also records, and writes as hf_vocab_audit/facts/transformers4_tables.py,
the model types 4.x's AutoConfig knows (``CONFIG_MAPPING_NAMES``) and each configuration class's default
``rope_theta`` / ``rope_local_base_freq`` / ``partial_rotary_factor`` / ``rope_scaling``. Nothing of
transformers is copied into the project: only these observations.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
PROBE = ROOT / "tests" / "transformers4_probe.py"
TABLES = """
import json, warnings
warnings.filterwarnings("ignore")
from transformers import logging
from transformers.models.auto.configuration_auto import CONFIG_MAPPING, CONFIG_MAPPING_NAMES
logging.set_verbosity_error()
theta, local, partial, scaling = {}, {}, {}, {}
for model_type in sorted(CONFIG_MAPPING_NAMES):
    try:
        config = CONFIG_MAPPING[model_type]()
    except Exception:
        continue
    for table, key in ((theta, "rope_theta"), (local, "rope_local_base_freq"), (partial, "partial_rotary_factor")):
        value = getattr(config, key, None)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            table[model_type] = float(value)
    if isinstance(getattr(config, "rope_scaling", None), dict):
        scaling[model_type] = config.rope_scaling
print(json.dumps({"model_types": sorted(CONFIG_MAPPING_NAMES), "rope_theta_defaults": theta,
                  "rope_local_base_freq_defaults": local, "partial_rotary_factor_defaults": partial,
                  "rope_scaling_defaults": scaling}))
"""
TABLES_MODULE = ROOT / "hf_vocab_audit" / "facts" / "transformers4_tables.py"


def _table(name: str, comment: str, value: object) -> str:
    import pprint

    return f"{comment}\n{name} = {pprint.pformat(value, width=116, compact=True)}\n"


def write_tables_module(version: str, tables: dict) -> None:
    """hf_vocab_audit/facts/transformers4_tables.py from what 4.x's own classes say."""
    TABLES_MODULE.write_text(
        f'''"""What transformers {version} (the last 4.x release) knows, as tables: the ``model_type`` values its
``AutoConfig`` maps to a configuration class (``models/auto/configuration_auto.py``, ``CONFIG_MAPPING_NAMES``),
and the ``rope_theta`` / ``rope_local_base_freq`` / ``partial_rotary_factor`` / ``rope_scaling`` each configuration
class defaults to (what 4.x runs with when
config.json has no such key). Written by ``scripts/transformers4_verdicts.py`` from that release; a test keeps
it equal to the recorded verdicts (tests/data/transformers4_verdicts.json).
"""

from __future__ import annotations

TRANSFORMERS4_VERSION = "{version}"

''' + _table("MODEL_TYPES", "# model types AutoConfig knows; another is refused with \"ValueError: The checkpoint "
                "you are trying to load\n# has model type `X` but Transformers does not recognize this architecture. ...\" "
                "(unless auto_map names remote code).", frozenset(tables["model_types"]))
        + "\n" + _table("ROPE_THETA_DEFAULTS", "# model type -> its configuration class's default rope_theta",
                        tables["rope_theta_defaults"])
        + "\n" + _table("ROPE_LOCAL_BASE_FREQ_DEFAULTS", "# model type -> the default rope_local_base_freq (the "
                        "sliding-window layers' theta)", tables["rope_local_base_freq_defaults"])
        + "\n" + _table("PARTIAL_ROTARY_FACTOR_DEFAULTS", "# model type -> the default partial_rotary_factor (the "
                        "fraction of each head's dimensions rotated)", tables["partial_rotary_factor_defaults"])
        + "\n" + _table("ROPE_SCALING_DEFAULTS", "# model type -> the rope_scaling its configuration class defaults to "
                        "(gpt-oss's yarn, Apertus' llama3)", tables["rope_scaling_defaults"]),
        encoding="utf-8")


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
        "cases": {},
    }
    tables = json.loads(subprocess.run([args.python, "-c", TABLES], capture_output=True, text=True, check=True,
                                       env={**os.environ, "HF_HUB_OFFLINE": "1"}).stdout)
    out.update(tables)
    write_tables_module(out["reader"].split()[1], tables)
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

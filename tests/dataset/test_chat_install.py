"""What the base install (``pip install -c constraints.txt -e .``, no extras) needs to check chat data: jinja2,
which transformers renders chat templates with but does not depend on. Without it a dataset scan stops with one
line naming it (exit 2) instead of reporting every row as refused by its template. ``.ci/run`` runs
``scripts/base_install_smoke.py`` in a clean base install."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import chat_builders
from dataset_builders import write_jsonl

ROOT = Path(__file__).resolve().parents[2]
ROWS = [{"messages": [{"role": "user", "content": "w1"}, {"role": "assistant", "content": "w2"}]}] * 3
# The CLI in a child where ``import jinja2`` fails, as in an install without it.
WITHOUT_JINJA = "import sys; sys.modules['jinja2'] = None; from hf_vocab_audit.cli import run; sys.argv[0] = 'hf-vocab-audit'; run()"


def _child(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", WITHOUT_JINJA, *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120, check=False)


def test_a_missing_jinja2_is_one_line_not_a_refusal_per_row(tmp_path):
    model = chat_builders.chat_checkpoint(tmp_path / "m", chat_builders.CHATML, resized=True)
    data = write_jsonl(tmp_path / "chat.jsonl", ROWS)
    proc = _child("check", str(model), "--dataset", str(data))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "with jinja2, which is not installed" in lines[0] and "pip install 'jinja2" in lines[0]
    assert "HVA550" not in proc.stdout and "Traceback" not in proc.stderr
    # The static check renders nothing: it runs without jinja2.
    assert _child("check", str(model)).returncode == 0


def test_the_base_dependencies_include_jinja2_pinned_as_installed():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    assert any(d.split(">")[0].split("=")[0].strip().lower() == "jinja2" for d in deps)
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    assert pins["jinja2"] == metadata.version("jinja2")


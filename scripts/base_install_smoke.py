"""The README's first command alone (``pip install -c constraints.txt -e .``, no extras) checks chat data.

Run by ``.ci/run`` in a fresh virtual environment holding only the base install. It builds two tiny
checkpoints with numpy, safetensors and tokenizers (the demo's builder: no torch, no trl), writes a
conversational JSON Lines file, and runs the real CLI on them:

- ``hf-vocab-audit demo`` exits 0 (it catches the defect it plants);
- the healthy checkpoint, given a chat template that uses its own tokens, passes the chat data (exit 0):
  every row rendered through the template and tokenized, none reported as refused (a base install without
  jinja2 used to report every row as HVA550);
- the demo's broken checkpoint (ChatML markers without embedding rows) fails the same data with HVA501
  (exit 1): the rows really are rendered;
- no ``--dataset`` run prints transformers' import-time advice "PyTorch was not found. Models won't be
  available..." (the base install never needs torch; the command silences that advice, and stderr is for
  the one error line).

    python scripts/base_install_smoke.py               # in any environment
    python scripts/base_install_smoke.py --expect-base # also assert that torch and trl are not installed
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

# A template that uses only the healthy checkpoint's own tokens (its eos), as a text-only model's does.
PLAIN = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}{{ eos_token }}\n{% endfor %}"
ROWS = [
    {"messages": [{"role": "user", "content": "the model reads a token"}, {"role": "assistant", "content": "its row"}]},
    {"messages": [{"role": "user", "content": "an id has no row"}, {"role": "assistant", "content": "the kernel asserts"},
                  {"role": "user", "content": "when"}, {"role": "assistant", "content": "the process dies"}]},
]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hf_vocab_audit", *args], capture_output=True, text=True,
                          timeout=300, check=False)


# What transformers prints at import without torch (transformers 5.x), unless its advisory warnings are off.
NO_TORCH_ADVICE = "PyTorch was not found"


def _expect(what: str, proc: subprocess.CompletedProcess[str], code: int, *needles: str,
            absent: tuple[str, ...] = ()) -> None:
    out = proc.stdout + proc.stderr
    missing = [n for n in needles if n not in out]
    present = [n for n in absent if n in out]
    if proc.returncode != code or missing or present:
        sys.exit(f"base install smoke: {what}: exit {proc.returncode} (expected {code})"
                 + (f", output lacks {missing}" if missing else "")
                 + (f", output has {present}" if present else "") + f"\n{out[-3000:]}")
    print(f"ok  {what} (exit {code})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--expect-base", action="store_true", help="fail unless torch and trl are absent")
    args = ap.parse_args(argv)
    if args.expect_base:
        extra = [name for name in ("torch", "trl") if importlib.util.find_spec(name) is not None]
        if extra:
            sys.exit(f"base install smoke: not a base install: {', '.join(extra)} importable")
    from hf_vocab_audit.demo import build_demo_checkpoint

    with tempfile.TemporaryDirectory(prefix="hva-base-smoke-") as tmp:
        root = Path(tmp)
        _expect("demo", _cli("demo"), 0, "HVA101")
        healthy = build_demo_checkpoint(root / "healthy", broken=False)
        config_path = healthy / "tokenizer_config.json"
        config = json.loads(config_path.read_text(encoding="utf-8"))
        config_path.write_text(json.dumps({**config, "chat_template": PLAIN}), encoding="utf-8")
        broken = build_demo_checkpoint(root / "broken", broken=True)
        data = root / "chat.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
        _expect("healthy chat data passes", _cli("check", str(healthy), "--dataset", str(data), "--select", "HVA5"),
                0, "language-modeling", absent=(NO_TORCH_ADVICE,))
        _expect("chat tokens without rows fail", _cli("check", str(broken), "--dataset", str(data), "--select", "HVA5"),
                1, "HVA501", absent=(NO_TORCH_ADVICE,))
    return 0


if __name__ == "__main__":
    sys.exit(main())

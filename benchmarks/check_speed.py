#!/usr/bin/env python
"""How fast is `hf-vocab-audit check`, against the physical limit and a from_pretrained baseline?

    python benchmarks/check_speed.py [--repeat 3] [--skip-baseline]

Generates (once, cached in .bench-cache/) a ~1.2 B-parameter sharded bf16 Llama-style checkpoint and a
header-only Llama-3.1-405B layout (sparse shards), both with a 128k-token tokenizer. Every measurement
is a fresh process (interpreter start included, as a user would run it); wall time is the median of
--repeat runs, peak RSS the largest seen (from wait4's rusage).

- limit:    read every safetensors header (struct + json) and parse tokenizer.json with `tokenizers`
- check:    `python -m hf_vocab_audit check DIR --format json`
- baseline: `AutoModelForCausalLM.from_pretrained(DIR, dtype=bfloat16)` just to read the shapes
Targets: check <= 3x limit, 405B no slower than 1.2B, < 700 MB RSS, >= 3x faster than the baseline.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _checkpoints  # noqa: E402

LIMIT = """
import json, struct, sys
from pathlib import Path
from tokenizers import Tokenizer
folder = Path(sys.argv[1])
for shard in sorted(folder.glob("*.safetensors")):
    with open(shard, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        json.loads(fh.read(n))
Tokenizer.from_file(str(folder / "tokenizer.json"))
"""
BASELINE = """
import sys, torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.bfloat16)
shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
"""


def measure(cmd: list[str], repeat: int) -> tuple[float, float]:
    """(median wall seconds, peak RSS MB) over ``repeat`` fresh processes."""
    walls, peak = [], 0.0
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"}
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        walls.append(time.perf_counter() - start)
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):
            raise SystemExit(f"{cmd} failed with {code}: {proc.stderr.read().decode()[-2000:]}")
        peak = max(peak, usage.ru_maxrss / 1024)
    return statistics.median(walls), peak


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-baseline", action="store_true")
    args = parser.parse_args()
    small, large = _checkpoints.llama_1b(), _checkpoints.llama_405b_headers()
    py = sys.executable
    rows = []
    for label, folder in (("1.2B", small), ("405B headers", large)):
        rows.append((f"limit    {label}", *measure([py, "-c", LIMIT, str(folder)], args.repeat)))
        rows.append((f"check    {label}", *measure([py, "-m", "hf_vocab_audit", "check", str(folder),
                                                     "--format", "json"], args.repeat)))
    if not args.skip_baseline:
        rows.append(("baseline 1.2B (from_pretrained)", *measure([py, "-c", BASELINE, str(small)], 1)))
    print(f"{'measurement':<34} {'wall s':>8} {'peak RSS MB':>12}")
    for name, wall, rss in rows:
        print(f"{name:<34} {wall:>8.2f} {rss:>12.0f}")
    r = {name.split()[0] + " " + name.split()[1]: wall for name, wall, _ in rows}
    print()
    print(f"check / limit (1.2B):        {r['check 1.2B'] / r['limit 1.2B']:.2f}x  (target <= 3x)")
    print(f"check / limit (405B):        {r['check 405B'] / r['limit 405B']:.2f}x  (target <= 3x)")
    print(f"check 405B / check 1.2B:     {r['check 405B'] / r['check 1.2B']:.2f}x  (target <= ~1x)")
    print(f"peak RSS of check:           {max(rss for n, _, rss in rows if n.startswith('check')):.0f} MB "
          "(target < 700 MB)")
    if not args.skip_baseline:
        print(f"baseline / check (1.2B):     {r['baseline 1.2B'] / r['check 1.2B']:.1f}x  (target >= 3x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

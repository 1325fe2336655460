#!/usr/bin/env python
"""How fast is `hf-vocab-audit check`, against the physical limit and a from_pretrained baseline?

    python benchmarks/check_speed.py [--repeat 5] [--skip-baseline]

Generates (once, cached in .bench-cache/) a ~1.2 B-parameter sharded bf16 Llama-style checkpoint and a
header-only Llama-3.1-405B layout (sparse shards), both with a 128k-token tokenizer. Every measurement
is a fresh process (interpreter start included, as a user would run it), the limit and the check taking
turns; wall and CPU time (user + system) are medians of --repeat runs, peak RSS the largest seen (wait4's
rusage). On a shared machine the CPU ratio is the steadier figure; the load average is printed. On an idle
one the wall ratio is the figure: the check proves the tokenizer's ids on other threads while it goes on,
so its CPU time is above its wall time.

- limit:    read every safetensors header (struct + json) and parse tokenizer.json with `tokenizers`
- check:    `python -m hf_vocab_audit check DIR --format json`
- baseline: `AutoModelForCausalLM.from_pretrained(DIR, dtype=bfloat16)` just to read the shapes
Targets: check <= 1.3x limit (issue 28; was 3x), 405B no slower than 1.2B, < 700 MB RSS, >= 3x faster than the baseline.
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


def _env(code: Path | None = None) -> dict[str, str]:
    """The children's environment: offline, quiet, and free to cache bytecode as an installed package has it
    (PYTHONDONTWRITEBYTECODE would make every run recompile the package, which no user's install does).
    ``code``: another copy of the package to run (``--before``), first on the path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(code), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def run_once(cmd: list[str], code: Path | None = None) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds user + system, peak RSS MB) of one fresh process (``code``: run in that copy,
    whose folder ``python -m`` puts first on the path)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(code),
                            cwd=str(code) if code is not None else None)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    exit_code = os.waitstatus_to_exitcode(status)
    if exit_code not in (0, 1):
        raise SystemExit(f"{cmd} failed with {exit_code}: {proc.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def interleaved(cmds: dict[str, list[str]], repeat: int,
                code: dict[str, Path] | None = None) -> dict[str, tuple[float, float, float]]:
    """Each command ``repeat`` times, taking turns (a load that comes and goes hits all alike after one
    warm-up run each); (median wall, median CPU, peak RSS MB) per command. ``code``: per command name, the
    copy of the package it runs (default: this one)."""
    code = code or {}
    for name, cmd in cmds.items():
        run_once(cmd, code.get(name))  # warm-up: page cache, bytecode
    seen: dict[str, list[tuple[float, float, float]]] = {name: [] for name in cmds}
    for _ in range(repeat):
        for name, cmd in cmds.items():
            seen[name].append(run_once(cmd, code.get(name)))
    return {name: (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs),
                   max(r[2] for r in runs)) for name, runs in seen.items()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--before", type=Path, help="another copy of the code (git archive REV | tar -x -C DIR), "
                        "run in the same rounds; a different typer for it goes into DIR too "
                        "(pip install --no-deps --target DIR typer==X)")
    args = parser.parse_args()
    small, large = _checkpoints.llama_1b(), _checkpoints.llama_405b_headers()
    py = sys.executable
    cmds: dict[str, list[str]] = {}
    for label, folder in (("1.2B", small), ("405B", large)):
        cmds[f"limit {label}"] = [py, "-c", LIMIT, str(folder)]
        cmds[f"check {label}"] = [py, "-m", "hf_vocab_audit", "check", str(folder), "--format", "json"]
        if args.before is not None:
            cmds[f"before {label}"] = cmds[f"check {label}"]
    code = {name: args.before.resolve() for name in cmds if name.startswith("before")} if args.before else {}
    load_before = os.getloadavg()[0]
    r = interleaved(cmds, args.repeat, code)
    load_after = os.getloadavg()[0]
    if not args.skip_baseline:
        r["baseline 1.2B"] = interleaved({"b": [py, "-c", BASELINE, str(small)]}, 1)["b"]
    print(f"{'measurement':<34} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>12}")
    for name, (wall, cpu, rss) in r.items():
        print(f"{name:<34} {wall:>8.2f} {cpu:>8.2f} {rss:>12.0f}")
    print(f"\nmedian of {args.repeat} interleaved runs; load average {load_before:.1f} before, {load_after:.1f} after "
          "(2 cores: above ~1.5 the wall ratios are noisy, the CPU ratios less so)")
    for label in ("1.2B", "405B"):
        wall = r[f"check {label}"][0] / r[f"limit {label}"][0]
        cpu = r[f"check {label}"][1] / r[f"limit {label}"][1]
        print(f"check / limit ({label}):  wall {wall:.2f}x  CPU {cpu:.2f}x  (target <= 1.3x)")
        if args.before is not None:
            wall = r[f"before {label}"][0] / r[f"limit {label}"][0]
            cpu = r[f"before {label}"][1] / r[f"limit {label}"][1]
            print(f"before / limit ({label}): wall {wall:.2f}x  CPU {cpu:.2f}x")
    print(f"check 405B / check 1.2B:  wall {r['check 405B'][0] / r['check 1.2B'][0]:.2f}x  (target <= ~1x)")
    print(f"peak RSS of check:        {max(v[2] for n, v in r.items() if n.startswith('check')):.0f} MB "
          "(target < 700 MB)")
    if not args.skip_baseline:
        print(f"baseline / check (1.2B):  {r['baseline 1.2B'][0] / r['check 1.2B'][0]:.1f}x  (target >= 3x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

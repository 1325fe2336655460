"""The base install's size on disk and time, against the same install of another revision, in one run.

    python benchmarks/install_size.py --before REV [--rounds 1] [--keep DIR]

For the working tree and for ``--before`` (a git revision, e.g. the last commit before torch became an extra;
exported with ``git archive``):
a fresh ``python -m venv``, then ``pip install --no-cache-dir -c constraints.txt .`` timed, then
``du -s`` of the venv. Rounds alternate before/after so both see the same load. Then, in the working tree's
venv, the base install must run ``check`` on a safetensors checkpoint (``demo --keep``), ``--dataset`` and
``--fix`` without torch installed. Targets: size <= 400 MB, time >= 3x faster than before.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZE_TARGET_MB = 400
SPEED_TARGET = 3.0


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"


def source(rev: str | None, into: Path) -> Path:
    """The tree to install: ``rev`` exported by git archive, or the working tree (tracked and untracked files)."""
    into.mkdir(parents=True)
    if rev is not None:
        archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    else:
        files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                               capture_output=True, text=True).stdout.split()
        for name in files:
            if (ROOT / name).is_file():
                (into / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, into / name)
    return into


def install(src: Path, venv: Path) -> tuple[float, float]:
    """Seconds for ``pip install -c constraints.txt .`` into a fresh venv, and the venv's size in MB."""
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    start = time.perf_counter()
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-cache-dir", "-c", "constraints.txt", "."],
                   cwd=src, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    kb = int(subprocess.run(["du", "-sk", str(venv)], check=True, capture_output=True, text=True).stdout.split()[0])
    return seconds, kb / 1024


def smoke(venv: Path, work: Path) -> list[str]:
    """check, --dataset and --fix in the base install; returns what failed (empty: all ran)."""
    cli = str(venv / "bin" / "hf-vocab-audit")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    failed = []
    has_torch = subprocess.run([str(venv / "bin" / "python"), "-c", "import torch"], capture_output=True).returncode == 0
    if has_torch:
        failed.append("torch is installed in the base install")
    model = work / "demo"
    data = work / "train.jsonl"
    data.write_text("".join(f'{{"input_ids": [1, 2, {i}], "labels": [1, 2, 3]}}\n' for i in range(100)))
    runs = {
        "demo": ([cli, "demo", "--keep", str(model)], {0}),
        "check": ([cli, "check", str(model)], {1}),
        "check --dataset": ([cli, "check", str(model), "--dataset", str(data)], {1}),
        "check --fix": ([cli, "check", str(model), "--fix", "--output", str(work / "fixed")], {0}),
    }
    for name, (cmd, ok) in runs.items():
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode not in ok or "Traceback" in proc.stderr:
            failed.append(f"{name}: exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="git revision to compare against")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="build the venvs here and keep them")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="hva-install-"))
    work.mkdir(parents=True, exist_ok=True)
    trees = {"before": source(args.before, work / "src-before"), "after": source(None, work / "src-after")}
    times: dict[str, list[float]] = {"before": [], "after": []}
    sizes: dict[str, float] = {}
    for r in range(args.rounds):
        for label in ("before", "after") if r % 2 == 0 else ("after", "before"):
            before_load = load()
            seconds, mb = install(trees[label], work / f"venv-{label}")
            times[label].append(seconds)
            sizes[label] = mb
            print(f"round {r + 1} {label:6}: {seconds:6.1f} s, {mb:6.0f} MB (load {before_load} -> {load()})", flush=True)
    t_before, t_after = statistics.median(times["before"]), statistics.median(times["after"])
    speed = t_before / t_after
    print(f"\nbase install size: {sizes['after']:.0f} MB (before {sizes['before']:.0f} MB); "
          f"{sizes['after'] / SIZE_TARGET_MB:.2f} of the {SIZE_TARGET_MB} MB limit: "
          f"{'met' if sizes['after'] <= SIZE_TARGET_MB else 'MISSED'}")
    print(f"install time: {t_after:.1f} s vs {t_before:.1f} s before = {speed:.2f}x faster; "
          f"{speed / SPEED_TARGET:.2f} of the {SPEED_TARGET:.0f}x target: {'met' if speed >= SPEED_TARGET else 'MISSED'}")
    failed = smoke(work / "venv-after", work)
    print("base install runs demo, check, --dataset, --fix without torch: " + ("yes" if not failed else "NO"))
    for line in failed:
        print("  " + line)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

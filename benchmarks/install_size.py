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


SIZES = """
import importlib.metadata as md, json, os
out = {}
for d in md.distributions():
    total = 0
    for f in d.files or []:
        try:
            total += os.path.getsize(d.locate_file(f))
        except OSError:
            pass
    out.setdefault(d.metadata["Name"].lower().replace("_", "-"), [d.version, total])
print(json.dumps(out))
"""
# What the issue keeps in the base install whatever else moves: these and what they pull in.
KEPT = ("transformers", "tokenizers", "datasets")


def package_sizes(venv: Path) -> dict[str, tuple[str, int]]:
    """name -> (version, bytes on disk) of every distribution in ``venv`` (its RECORD files, as pip lists them)."""
    import json

    out = subprocess.run([str(venv / "bin" / "python"), "-c", SIZES], check=True, capture_output=True, text=True)
    return {name: (version, size) for name, (version, size) in json.loads(out.stdout).items()}


def requires_closure(venv: Path, roots: tuple[str, ...]) -> set[str]:
    """The distributions ``roots`` pull in (their Requires-Dist without extras, markers as evaluated there)."""
    code = (
        "import importlib.metadata as md, json, sys\n"
        "from packaging.requirements import Requirement\n"
        "seen, stack = set(), list(sys.argv[1:])\n"
        "while stack:\n"
        "    name = stack.pop().lower().replace('_', '-')\n"
        "    if name in seen: continue\n"
        "    seen.add(name)\n"
        "    try: reqs = md.requires(name) or []\n"
        "    except md.PackageNotFoundError: continue\n"
        "    for r in map(Requirement, reqs):\n"
        "        if r.marker is None or r.marker.evaluate({'extra': ''}): stack.append(r.name)\n"
        "print(json.dumps(sorted(seen)))\n"
    )
    import json

    out = subprocess.run([str(venv / "bin" / "python"), "-c", code, *roots], capture_output=True, text=True)
    return set(json.loads(out.stdout)) if out.returncode == 0 else set()


def report_sizes(venv: Path) -> None:
    """The largest packages of the base install, and how much of it the kept dependencies alone take."""
    sizes = package_sizes(venv)
    total = sum(size for _, size in sizes.values())
    print(f"\npackages in the base install: {len(sizes)}, {total / 1e6:.0f} MB of files (pip's RECORDs); largest:")
    for name, (version, size) in sorted(sizes.items(), key=lambda kv: -kv[1][1])[:15]:
        print(f"  {size / 1e6:7.1f} MB  {name} {version}")
    kept = requires_closure(venv, KEPT)
    if kept:
        kept_mb = sum(size for name, (_, size) in sizes.items() if name in kept) / 1e6
        print(f"{' + '.join(KEPT)} and what they pull in: {kept_mb:.0f} MB "
              f"({kept_mb / SIZE_TARGET_MB:.2f} of the {SIZE_TARGET_MB} MB limit by themselves)")
        others = sorted(((size, name) for name, (_, size) in sizes.items() if name not in kept), reverse=True)
        print("the rest: " + ", ".join(f"{name} {size / 1e6:.1f} MB" for size, name in others[:10]))


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
    report_sizes(work / "venv-after")
    failed = smoke(work / "venv-after", work)
    print("base install runs demo, check, --dataset, --fix without torch: " + ("yes" if not failed else "NO"))
    for line in failed:
        print("  " + line)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

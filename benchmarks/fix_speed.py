"""Benchmark `check --fix` against `cp -r` and the transformers route on a 1B-class checkpoint.

    python benchmarks/fix_speed.py [--cache .bench-cache] [--rounds 3] [--keep]

The Llama-3.2-1B-shaped checkpoint (untied, bf16, 3 shards, vocab 128256) is generated once under
--cache; its tokenizer gets 2 special tokens, so the fix grows embed_tokens and lm_head to 128258
rows. Each step runs as its own process, timed until its writes are on the disk (``sync`` before,
untimed, and after, timed); the steps run interleaved (cp -r, fix, transformers) --rounds times and
the medians are compared; peak RSS comes from os.wait4. Targets: fix <= 1.5x cp -r, fix >= 4x faster
than the transformers route, fix peak RSS < 400 MB.
Afterwards our output is loaded with transformers and compared with the transformers route's.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

_checkpoints = importlib.import_module("_checkpoints")
HIDDEN, VOCAB, llama_1b = _checkpoints.HIDDEN, _checkpoints.VOCAB, _checkpoints.llama_1b

ADDED = ["<|im_start|>", "<|im_end|>"]
TRANSFORMERS_ROUTE = """
import sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
src, dst = sys.argv[1], sys.argv[2]
tok = AutoTokenizer.from_pretrained(src)
model = AutoModelForCausalLM.from_pretrained(src, dtype=torch.bfloat16)
model.resize_token_embeddings(len(tok))
model.save_pretrained(dst)
tok.save_pretrained(dst)
"""


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds to the disk, peak RSS in MiB) of one child process.

    Dirty pages are flushed first (`sync`, not timed): otherwise the kernel throttles a step's writes
    while it writes back the previous step's 2.5 GB. The trailing `sync` is timed: without it the
    figures swing with page-cache writeback (a step "ends" before its bytes are written).
    """
    subprocess.run(["sync"], check=True)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    subprocess.run(["sync"], check=True)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{cmd[:4]} failed with exit code {code}:\n{err[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def make_input(cache: Path) -> Path:
    """The cached checkpoint, hard-linked into a folder whose tokenizer has 2 more special tokens."""
    from tokenizers import AddedToken, Tokenizer

    base = llama_1b(cache / "llama-1.2b-bf16")  # the same checkpoint as benchmarks/check_speed.py
    src = cache / "fix-input"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir()
    for f in base.iterdir():
        if f.name not in ("tokenizer.json", "tokenizer_config.json"):
            os.link(f, src / f.name)
    tok = Tokenizer.from_file(str(base / "tokenizer.json"))
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ADDED])
    tok.save(str(src / "tokenizer.json"))
    config = json.loads((base / "tokenizer_config.json").read_text())
    config["extra_special_tokens"] = ADDED
    (src / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    return src


def compare(ours: Path, theirs: Path) -> int:
    """Load our output with transformers; every pre-existing row and other parameter must equal theirs."""
    import torch
    from safetensors import safe_open
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(ours, dtype=torch.bfloat16)
    files = sorted(theirs.glob("*.safetensors"))
    handles = [safe_open(str(f), framework="pt") for f in files]
    where = {name: h for h in handles for name in h.keys()}  # noqa: SIM118 - safe_open is not a dict
    checked = 0
    for name, value in model.state_dict().items():
        if name not in where:
            continue
        ref = where[name].get_tensor(name)
        if ref.shape[0] == VOCAB + len(ADDED):
            assert value.shape == ref.shape, name
            value, ref = value[:VOCAB], ref[:VOCAB]
        assert torch.equal(value, ref), f"{name} differs from the transformers route"
        checked += 1
    return checked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=ROOT / ".bench-cache")
    parser.add_argument("--keep", action="store_true", help="keep the three outputs")
    parser.add_argument("--skip-transformers", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cache = args.cache.resolve()
    t0 = time.perf_counter()
    src = make_input(cache)
    print(f"input ready in {time.perf_counter() - t0:.1f} s: {src}")
    size = sum(f.stat().st_size for f in src.glob("*.safetensors"))
    out = {k: cache / f"out-{k}" for k in ("copy", "fix", "transformers")}
    for path in out.values():
        shutil.rmtree(path, ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
    subprocess.run(["cat", *map(str, src.glob("*.safetensors"))], stdout=subprocess.DEVNULL, check=True)

    fix_cmd = [sys.executable, "-m", "hf_vocab_audit", "check", str(src), "--fix", "--output", str(out["fix"]),
               "--format", "json", "--output-file", str(cache / "fix-report.json")]
    steps = {"cp -r": ("copy", ["cp", "-r", str(src), str(out["copy"])]), "hf-vocab-audit --fix": ("fix", fix_cmd)}
    if not args.skip_transformers:
        steps["transformers route"] = ("transformers", [sys.executable, "-c", TRANSFORMERS_ROUTE, str(src),
                                                         str(out["transformers"])])
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in steps}
    for _ in range(args.rounds):
        for name, (key, cmd) in steps.items():
            shutil.rmtree(out[key], ignore_errors=True)  # the last round's outputs stay for the comparison
            runs[name].append(measure(cmd, env))
    rows = {name: (statistics.median(w for w, _ in r), max(m for _, m in r)) for name, r in runs.items()}
    emb_bytes = 2 * VOCAB * HIDDEN * 2
    print(f"\ncheckpoint: {size / 1e9:.2f} GB in 3 shards; embedding + lm_head {emb_bytes / 1e9:.2f} GB")
    print(f"load average {os.getloadavg()[0]:.1f}; median of {args.rounds}, timed to the disk")
    print(f"{'step':<24}{'wall s':>10}{'peak RSS MiB':>15}   runs")
    for name, (wall, rss) in rows.items():
        print(f"{name:<24}{wall:>10.2f}{rss:>15.0f}   {' '.join(f'{w:.1f}' for w, _ in runs[name])}")
    fix_wall, fix_rss = rows["hf-vocab-audit --fix"]
    copy_wall = rows["cp -r"][0]
    print(f"\nfix / copy        = {fix_wall / copy_wall:.2f}x   (target <= 1.5x)")
    if "transformers route" in rows:
        print(f"transformers / fix = {rows['transformers route'][0] / fix_wall:.2f}x   (target >= 4x)")
    print(f"fix peak RSS      = {fix_rss * 2**20 / 1e6:.0f} MB (target < 400 MB)")
    report = json.loads((cache / "fix-report.json").read_text())
    print(f"fix report: {len(report['fixes'])} fixes, {report['summary']['error']} errors left, "
          f"verification {report['fix']['verification'].get('compared')}")
    if "transformers route" in rows:
        print(f"same tensors as the transformers route: {compare(out['fix'], out['transformers'])} checked")
    if not args.keep:
        for path in out.values():
            shutil.rmtree(path, ignore_errors=True)
        shutil.rmtree(src, ignore_errors=True)


if __name__ == "__main__":
    main()

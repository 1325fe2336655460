"""Time the --weights indicator pass against plainly reading the same bytes.

    PYTHONPATH=. python benchmarks/weights_speed.py [--rows 128256] [--cols 2048] [--dtype BF16] [--repeat 9]

Writes a matrix (bf16, Llama-3 size by default) into .bench-cache/weights_speed/ once,
then reports the median and the best of --repeat rounds, each round running the three in turn
(interleaved, so a busy machine slows the limit and the tool alike):
  read-file   : sequential readinto() of the tensor's bytes in 64 MiB blocks
  read-memmap : numpy memmap of the tensor, summed in row chunks (touching every page)
  indicators  : hf_vocab_audit.weights.stats.scan (norms, row keys, column sums, then the exact checks:
                zero rows, duplicates, rows equal to the mean)
The target is indicators <= 1.5 x read-file (the limit: every byte read once), as the median of the
per-round ratios (each against the read-file of its own round).
The file is in the page cache after the first run (warm timings).

    PYTHONPATH=. python benchmarks/weights_speed.py --command [--repeat 7]

times the whole command instead, on the 1.2 B bf16 checkpoint of benchmarks/_checkpoints.py (an embedding
and an untied lm_head of 128256 x 2048): `check DIR --weights` minus `check DIR` (fresh processes, median
of the rounds) against reading both matrices' bytes once (read-file of each).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

CACHE = Path(__file__).resolve().parent.parent / ".bench-cache" / "weights_speed"
NAME = "model.embed_tokens.weight"


def build(rows: int, cols: int, dtype: str) -> Path:
    path = CACHE / f"{dtype.lower()}-{rows}x{cols}" / "model.safetensors"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    nbytes = rows * cols * (4 if dtype == "F32" else 2)
    header = json.dumps({NAME: {"dtype": dtype, "shape": [rows, cols], "data_offsets": [0, nbytes]}}).encode()
    header += b" " * (-len(header) % 8)
    rng = np.random.default_rng(0)
    with open(path, "wb") as fh:  # safetensors layout, written block by block (bounded memory)
        fh.write(len(header).to_bytes(8, "little") + header)
        for start in range(0, rows, 8192):
            n = min(8192, rows - start)
            block = rng.normal(0, 0.02, (n, cols)).astype(np.float32)
            if dtype == "BF16":
                bits = (block.view(np.uint32) >> 16).astype(np.uint16)
            else:
                bits = block.astype(np.float16 if dtype == "F16" else np.float32)
            if start + n > rows - 256:  # reserved rows left at zero, as in Llama-3 base
                bits[max(0, rows - 256 - start) :] = 0
            fh.write(bits.tobytes())
    return path


def read_file(path: Path, begin: int, end: int) -> None:
    """Sequential readinto() of bytes [begin, end) in 64 MiB blocks: the limit."""
    buf = bytearray(64 * 1024 * 1024)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        fh.seek(begin)
        left = end - begin
        while left > 0:
            left -= fh.readinto(view[: min(len(buf), left)])


def command(repeat: int) -> None:
    """The whole `check --weights` minus `check`, against reading the two matrices."""
    from hf_vocab_audit.io.safetensors_header import read_header

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    folder = importlib.import_module("_checkpoints").llama_1b()
    index = json.loads((folder / "model.safetensors.index.json").read_text())["weight_map"]
    spans = []
    for name in ("model.embed_tokens.weight", "lm_head.weight"):
        path = folder / index[name]
        info = next(t for t in read_header(path, path.name).tensors if t.name == name)
        spans.append((path, info.begin, info.end))

    def read_both() -> None:
        for span in spans:
            read_file(*span)

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # cached bytecode, as installed

    def run(*extra: str) -> None:
        subprocess.run([sys.executable, "-m", "hf_vocab_audit", "check", str(folder), *extra],
                       check=True, stdout=subprocess.DEVNULL, env=env)

    read_both()
    run("--weights")  # warm: page cache, imports, bytecode
    times: dict[str, list[float]] = {"check": [], "weights": [], "read": []}
    load_before = os.getloadavg()[0]
    for _ in range(repeat):
        for key, fn in (("check", run), ("weights", lambda: run("--weights")), ("read", read_both)):
            start = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - start)
    check, weights, read = (statistics.median(times[k]) for k in ("check", "weights", "read"))
    # each round's marginal against its own read (a load that comes and goes hits the three alike)
    rounds = sorted((w - c) / r for c, w, r in zip(times["check"], times["weights"], times["read"]))
    mb = sum(end - begin for _, begin, end in spans) / 1e6
    print(f"{folder}: embedding + untied lm_head, {mb:.0f} MB; CPUs {os.cpu_count()}, "
          f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after; median of {repeat}")
    print(f"check             {check:7.3f} s")
    print(f"check --weights   {weights:7.3f} s  marginal {weights - check:.3f} s")
    print(f"read both         {read:7.3f} s  (limit)")
    print(f"marginal --weights / read = {(weights - check) / read:.2f}x (medians); per round: median "
          f"{rounds[len(rounds) // 2]:.2f}x, best {rounds[0]:.2f}x, worst {rounds[-1]:.2f}x  (target <= 1.5x)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=128256)
    ap.add_argument("--cols", type=int, default=2048)
    ap.add_argument("--dtype", choices=["BF16", "F16", "F32"], default="BF16")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--command", action="store_true", help="time the whole check --weights command instead")
    args = ap.parse_args()
    if args.command:
        command(args.repeat)
        return

    from hf_vocab_audit.io.rows import RowReader
    from hf_vocab_audit.io.safetensors_header import read_header
    from hf_vocab_audit.weights.stats import scan

    path = build(args.rows, args.cols, args.dtype)
    info = next(t for t in read_header(path, path.name).tensors if t.name == NAME)
    assert info.dtype == args.dtype

    def read_limit() -> None:
        read_file(path, info.begin, info.end)

    def read_memmap() -> None:
        reader = RowReader(path.parent, info)
        step = reader.chunk_rows()
        total = 0
        for start in range(0, reader.rows, step):
            total += int(np.asarray(reader.raw[start : start + step]).sum(dtype=np.uint64))

    def indicators() -> None:
        stats = scan(RowReader(path.parent, info))
        assert int(stats.zero.sum()) == 256

    read_limit()  # warm the page cache
    times: dict[str, list[float]] = {"file": [], "memmap": [], "indicators": []}
    for _ in range(args.repeat):
        for key, fn in (("file", read_limit), ("memmap", read_memmap), ("indicators", indicators)):
            start = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - start)
    t_file, t_mm, t_ind = (min(times[k]) for k in ("file", "memmap", "indicators"))
    ratios = sorted(i / f for i, f in zip(times["indicators"], times["file"]))
    median = ratios[len(ratios) // 2]
    mb = (info.end - info.begin) / 1e6
    print(f"matrix {args.rows} x {args.cols} {args.dtype}, {mb:.0f} MB ({path}); CPUs {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f}; best of {args.repeat}")
    print(f"read-file    {t_file:7.3f} s  {mb / t_file:8.0f} MB/s  (limit)")
    print(f"read-memmap  {t_mm:7.3f} s  {mb / t_mm:8.0f} MB/s")
    print(f"indicators   {t_ind:7.3f} s  {mb / t_ind:8.0f} MB/s  = {t_ind / t_file:.2f} x read-file, "
          f"{t_ind / t_mm:.2f} x read-memmap")
    print(f"indicators / read-file per round: median {median:.2f}x, best {ratios[0]:.2f}x, worst {ratios[-1]:.2f}x "
          f"(target <= 1.5x)")


if __name__ == "__main__":
    main()

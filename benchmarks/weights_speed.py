"""Time the --weights indicator pass against plainly reading the same bytes.

    PYTHONPATH=. python benchmarks/weights_speed.py [--rows 128256] [--cols 2048] [--repeat 3]

Writes a bf16 matrix (Llama-3 size by default) into .bench-cache/weights_speed/model.safetensors once,
then reports the median and the best of --repeat rounds, each round running the three in turn
(interleaved, so a busy machine slows the limit and the tool alike):
  read-file   : sequential readinto() of the tensor's bytes in 64 MiB blocks
  read-memmap : numpy memmap of the tensor, summed in row chunks (touching every page)
  indicators  : hf_vocab_audit.weights.stats.scan (norms, max |v|, hashes, column sum, exact checks)
The target is indicators <= 1.5 x read-file (the limit: every byte read once), as the median of the
per-round ratios (each against the read-file of its own round).
The file is in the page cache after the first run (warm timings).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

CACHE = Path(__file__).resolve().parent.parent / ".bench-cache" / "weights_speed"
NAME = "model.embed_tokens.weight"


def build(rows: int, cols: int) -> Path:
    path = CACHE / f"bf16-{rows}x{cols}" / "model.safetensors"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    nbytes = rows * cols * 2
    header = json.dumps({NAME: {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [0, nbytes]}}).encode()
    header += b" " * (-len(header) % 8)
    rng = np.random.default_rng(0)
    with open(path, "wb") as fh:  # safetensors layout, written block by block (bounded memory)
        fh.write(len(header).to_bytes(8, "little") + header)
        for start in range(0, rows, 8192):
            n = min(8192, rows - start)
            block = rng.normal(0, 0.02, (n, cols)).astype(np.float32)
            bits = (block.view(np.uint32) >> 16).astype(np.uint16)
            if start + n > rows - 256:  # reserved rows left at zero, as in Llama-3 base
                bits[max(0, rows - 256 - start) :] = 0
            fh.write(bits.tobytes())
    return path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=128256)
    ap.add_argument("--cols", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()

    from hf_vocab_audit.io.rows import RowReader
    from hf_vocab_audit.io.safetensors_header import read_header
    from hf_vocab_audit.weights.stats import scan

    path = build(args.rows, args.cols)
    info = next(t for t in read_header(path, path.name).tensors if t.name == NAME)
    assert info.dtype == "BF16"

    def read_file() -> None:
        buf = bytearray(64 * 1024 * 1024)
        view = memoryview(buf)
        with open(path, "rb", buffering=0) as fh:
            fh.seek(info.begin)
            left = info.end - info.begin
            while left > 0:
                left -= fh.readinto(view[: min(len(buf), left)])

    def read_memmap() -> None:
        reader = RowReader(path.parent, info)
        step = reader.chunk_rows()
        total = 0
        for start in range(0, reader.rows, step):
            total += int(np.asarray(reader.raw[start : start + step]).sum(dtype=np.uint64))

    def indicators() -> None:
        stats = scan(RowReader(path.parent, info))
        assert int(stats.zero.sum()) == 256

    read_file()  # warm the page cache
    times: dict[str, list[float]] = {"file": [], "memmap": [], "indicators": []}
    for _ in range(args.repeat):
        for key, fn in (("file", read_file), ("memmap", read_memmap), ("indicators", indicators)):
            start = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - start)
    t_file, t_mm, t_ind = (min(times[k]) for k in ("file", "memmap", "indicators"))
    ratios = sorted(i / f for i, f in zip(times["indicators"], times["file"]))
    median = ratios[len(ratios) // 2]
    mb = (info.end - info.begin) / 1e6
    print(f"matrix {args.rows} x {args.cols} bf16, {mb:.0f} MB ({path}); CPUs {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f}; best of {args.repeat}")
    print(f"read-file    {t_file:7.3f} s  {mb / t_file:8.0f} MB/s  (limit)")
    print(f"read-memmap  {t_mm:7.3f} s  {mb / t_mm:8.0f} MB/s")
    print(f"indicators   {t_ind:7.3f} s  {mb / t_ind:8.0f} MB/s  = {t_ind / t_file:.2f} x read-file, "
          f"{t_ind / t_mm:.2f} x read-memmap")
    print(f"indicators / read-file per round: median {median:.2f}x, best {ratios[0]:.2f}x, worst {ratios[-1]:.2f}x "
          f"(target <= 1.5x)")


if __name__ == "__main__":
    main()

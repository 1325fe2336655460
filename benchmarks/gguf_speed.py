#!/usr/bin/env python
"""How fast is `hf-vocab-audit check model.gguf`, against gguf's own reader listing the same metadata?

    python benchmarks/gguf_speed.py [--repeat 3]

Writes (once, cached in .bench-cache/) two GGUFs with gguf.GGUFWriter whose tensor data is a sparse hole:
an 8B shape (Llama-3-8B: 128,256 tokens, 280,147 merges, 32 layers, 291 Q4_K/Q6_K tensors, 4.9 GB) and a
70B shape (80 layers, 723 tensors, 42 GB). Every measurement is a fresh process (interpreter start
included); wall time is the median of --repeat runs, peak RSS the largest seen (wait4's rusage).

- check:    `python -m hf_vocab_audit check FILE --format json` (every rule, the report written)
- reader:   `gguf.GGUFReader(FILE)` and a walk over its fields (llama.cpp's Python reader: memory-maps
            the file and builds numpy views of every field)
Targets (issue 23): check under 1 s and 200 MB on the 8B shape, the same on the 70B shape.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".bench-cache"
SHAPES = {"8b": dict(layers=32, n_embd=4096, n_ff=14336, n_kv=1024),
          "70b": dict(layers=80, n_embd=8192, n_ff=28672, n_kv=1024)}
N_VOCAB, N_MERGES = 128_256, 280_147

READER = """
import sys, gguf
r = gguf.GGUFReader(sys.argv[1])
n = sum(len(f.data) for f in r.fields.values()) + len(r.tensors)
"""


def build(name: str, layers: int, n_embd: int, n_ff: int, n_kv: int) -> Path:
    import gguf
    import numpy as np

    path = CACHE / f"llama-{name}.gguf"
    if path.exists():
        return path
    CACHE.mkdir(exist_ok=True)
    w = gguf.GGUFWriter(path, "llama")
    w.add_context_length(131072)
    w.add_embedding_length(n_embd)
    w.add_block_count(layers)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_embd // 128)
    w.add_head_count_kv(n_kv // 128)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list([f"tok{i}" for i in range(N_VOCAB - 256)] + [f"<|reserved_special_token_{i}|>" for i in range(256)])
    w.add_token_types([1] * (N_VOCAB - 256) + [3] * 256)
    w.add_token_merges([f"t{i} o{i}" for i in range(N_MERGES)])
    w.add_bos_token_id(128000)
    w.add_eos_token_id(128009)
    w.add_chat_template("{% for m in messages %}<|reserved_special_token_1|>{{ m['content'] }}"
                        "<|reserved_special_token_2|>{% endfor %}")
    q4, q6 = gguf.GGMLQuantizationType.Q4_K, gguf.GGMLQuantizationType.Q6_K
    sizes = gguf.GGML_QUANT_SIZES
    total = 0

    def tensor(tname: str, shape: tuple[int, ...], qtype) -> None:
        nonlocal total
        block, size = sizes[qtype]
        row_bytes = shape[-1] // block * size
        nbytes = row_bytes * (shape[0] if len(shape) == 2 else 1)
        byte_shape = (*shape[:-1], row_bytes)  # GGUFWriter takes a quantized tensor's shape in bytes
        w.add_tensor_info(tname, byte_shape, np.dtype(np.uint8), nbytes, raw_dtype=qtype)
        total += -(-nbytes // 32) * 32

    tensor("token_embd.weight", (N_VOCAB, n_embd), q6)
    tensor("output.weight", (N_VOCAB, n_embd), q6)
    for i in range(layers):
        for part, shape in (("attn_q", (n_embd, n_embd)), ("attn_k", (n_kv, n_embd)), ("attn_v", (n_kv, n_embd)),
                            ("attn_output", (n_embd, n_embd)), ("ffn_gate", (n_ff, n_embd)),
                            ("ffn_up", (n_ff, n_embd)), ("ffn_down", (n_embd, n_ff))):
            tensor(f"blk.{i}.{part}.weight", shape, q4)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.truncate(-(-size // 32) * 32 + total)  # the data section: a hole
    return path


def measure(args: list[str], repeat: int) -> tuple[float, float, int, float]:
    """Median wall time, peak RSS (MB), exit code, median CPU time (user + system: what a loaded machine's
    wall time hides)."""
    times, cpus, rss, code = [], [], 0.0, 0
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        times.append(time.perf_counter() - start)
        cpus.append(usage.ru_utime + usage.ru_stime)
        rss = max(rss, usage.ru_maxrss / 1024)
        code = os.waitstatus_to_exitcode(status)
    return statistics.median(times), rss, code, statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| shape | file | tensors | check: wall (s) | check: CPU (s) | check: peak RSS (MB) | exit "
          "| gguf.GGUFReader: wall (s) | reader: CPU (s) | reader: peak RSS (MB) | our reader in-process (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    sys.path.insert(0, str(ROOT))
    from hf_vocab_audit.io.gguf_header import read_gguf

    for name, shape in SHAPES.items():
        path = build(name, **shape)
        start = time.perf_counter()
        header = read_gguf(path, path.name, frozenset({"tokenizer.ggml.tokens", "tokenizer.ggml.token_type"}))
        inproc = time.perf_counter() - start
        check = measure([sys.executable, "-m", "hf_vocab_audit", "check", str(path), "--format", "json"], args.repeat)
        reader = measure([sys.executable, "-c", READER, str(path)], args.repeat)
        print(f"| {name} | {path.stat().st_size / 1e9:.1f} GB | {len(header.tensors)} | {check[0]:.2f} | {check[3]:.2f} "
              f"| {check[1]:.0f} | {check[2]} | {reader[0]:.2f} | {reader[3]:.2f} | {reader[1]:.0f} | {inproc:.2f} |")


if __name__ == "__main__":
    main()

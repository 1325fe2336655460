"""Ray scaling: the same ~50 MB text scan with the local engine and with ``--engine ray`` on 1 and 2 CPUs.

    python benchmarks/ray_scale.py [--mb 50] [--vocab 32000] [--shards 8]

Reuses scan_speed.py's English-like text and byte-level BPE tokenizer (cached under .bench-cache/).
Each run is a fresh subprocess; the Ray runs time the scan alone (``ray.init`` is reported apart).
Also measures what the driver spends per batch summary (unpickle + shift + merge), the bound on
how many batches per second one driver can fold. Prints tokens/s per run and per CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scan_speed import CACHE, ROOT, generate_text, make_checkpoint, read_texts, train_tokenizer


def shard(data: Path, shards: int) -> Path:
    """The same rows split into ``shards`` JSON-lines files (a folder: one split, several files)."""
    folder = CACHE / f"{data.stem}-{shards}shards" / "train"
    if folder.exists():
        return folder.parent
    lines = data.read_text(encoding="utf-8").splitlines(keepends=True)
    tmp = folder.with_name("train.tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    step = -(-len(lines) // shards)
    for i in range(shards):
        (tmp / f"part-{i:03d}.jsonl").write_text("".join(lines[i * step:(i + 1) * step]), encoding="utf-8")
    tmp.rename(folder)
    return folder.parent


def child(engine: str, cpus: int, model: str, data: str) -> None:
    """One scan in this process; prints seconds, tokens and rows as JSON."""
    sys.path.insert(0, str(ROOT))
    from hf_vocab_audit.dataset.scan import Options, scan
    from hf_vocab_audit.facts import gather

    facts = gather(model)
    init = 0.0
    if engine == "ray":
        import ray

        start = time.perf_counter()
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        init = time.perf_counter() - start
    else:
        scan(facts, Options((data,), text_columns=("text",), max_rows=1))  # warm-up: imports, caches
    start = time.perf_counter()
    df = scan(facts, Options((data,), text_columns=("text",), engine=engine))
    seconds = time.perf_counter() - start
    tokens = sum(s.tokens for s in df.summary.stats.values())
    print(json.dumps({"seconds": seconds, "init": init, "tokens": tokens, "rows": sum(s.rows for s in df.splits)}))


def run(engine: str, cpus: int, model: Path, data: Path) -> dict:
    cmd = [sys.executable, __file__, "--child", engine, str(cpus), str(model), str(data)]
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def driver_cost(model: Path, data: Path, batches: int = 200) -> tuple[float, float]:
    """(seconds per batch summary on the driver, rows per batch) for text batches of 1000 rows."""
    sys.path.insert(0, str(ROOT))
    import pyarrow as pa

    from hf_vocab_audit.dataset.kernel import summarize
    from hf_vocab_audit.dataset.ray_engine import shift
    from hf_vocab_audit.dataset.scan import _tokenizer, limits_for
    from hf_vocab_audit.dataset.summary import ColumnRole, ScanContext, Summary, merge
    from hf_vocab_audit.facts import gather

    facts = gather(model)
    limits = limits_for(facts)[0]
    ctx = ScanContext(str(data), "train", (ColumnRole("text", "text"),), limits, _tokenizer(facts))
    texts = read_texts(data if data.is_file() else next(data.rglob("*.jsonl")))[: batches * 1000]
    blobs = [pickle.dumps(summarize(pa.table({"text": texts[i:i + 1000]}), 0, ctx))
             for i in range(0, len(texts), 1000)]
    start = time.perf_counter()
    summary, rows = Summary(), 0
    for blob in blobs:
        summary = merge(summary, shift(pickle.loads(blob), rows))
        rows += 1000
    return (time.perf_counter() - start) / len(blobs), 1000.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=50.0)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--shards", type=int, default=8, help="also scan the text split into this many files")
    ap.add_argument("--child", nargs=4)
    args = ap.parse_args()
    if args.child:
        engine, cpus, model, data = args.child
        child(engine, int(cpus), model, data)
        return
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    CACHE.mkdir(exist_ok=True)
    data = generate_text(CACHE / f"text-{args.mb:g}mb.jsonl", args.mb)
    texts = read_texts(data)
    model = make_checkpoint(train_tokenizer(args.vocab, texts[: max(1, len(texts) // 10)]))
    del texts
    print(f"text: {data.stat().st_size / 1e6:.1f} MB; CPUs: {os.cpu_count()}, load average "
          f"{os.getloadavg()[0]:.1f} (a shared machine: figures are under that load)")
    inputs = [("1 file", data)] + ([(f"{args.shards} files", shard(data, args.shards))] if args.shards > 1 else [])
    for label, path in inputs:
        for engine, cpus in (("local", 0), ("ray", 1), ("ray", 2)):
            r = run(engine, cpus, model, path)
            tps = r["tokens"] / r["seconds"]
            name = "local engine" if engine == "local" else f"ray, {cpus} CPU{'s' if cpus > 1 else ''}"
            per = f", {tps / cpus / 1e6:.2f} M tok/s per CPU" if cpus else ""
            init = f" (+ ray.init {r['init']:.1f} s)" if engine == "ray" else ""
            print(f"[{label}] {name:<14} {r['tokens']:,} tokens in {r['seconds']:.1f} s{init} -> "
                  f"{tps / 1e6:.2f} M tok/s{per}")
    per_batch, rows = driver_cost(model, data)
    print(f"[driver] unpickle + shift + merge: {per_batch * 1e3:.2f} ms per {rows:.0f}-row batch summary "
          f"-> at most {1 / per_batch:,.0f} batches/s ({rows / per_batch / 1e6:.2f} M rows/s) per driver")


if __name__ == "__main__":
    main()

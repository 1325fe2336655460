"""Ray scaling: the same ~50 MB text scan with the local engine and with ``--engine ray`` on 1 and 2 CPUs.

    python benchmarks/ray_scale.py [--mb 50] [--vocab 32000] [--shards 8] [--rounds 3] [--before DIR]

Reuses scan_speed.py's English-like text and byte-level BPE tokenizer (cached under .bench-cache/).
Each run is a fresh subprocess that scans one row first (imports, caches; for Ray its workers' imports)
and then times the scan alone (``ray.init`` is reported apart).
The runs are interleaved, --rounds times, and medians compared: ray on 2 CPUs / local engine on the
same 2 cores (target >= 0.8). Start-up: the wall time of the CLI (``check MODEL --dataset tiny.jsonl``)
with ``--engine ray`` minus ``--engine local``, also interleaved.

``--before DIR``: a copy of the code to compare with (``git archive COMMIT | tar -x -C DIR``); its
ray scan on 2 CPUs and its CLI start-up are measured in the same rounds.
Also measures what the driver spends per batch summary (unpickle + shift + merge), the bound on
how many batches per second one driver can fold.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import pickle
import statistics
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
    sys.path.insert(0, os.environ.get("HVA_CODE", str(ROOT)))
    from hf_vocab_audit.core.options import ScanOptions as Options
    from hf_vocab_audit.dataset.engines.registry import scan
    from hf_vocab_audit.facts import gather

    facts = gather(model)
    init = 0.0
    if engine == "ray":
        import ray

        start = time.perf_counter()
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
        init = time.perf_counter() - start
    # warm-up, both engines: imports and caches (Ray: its workers' imports), as start-up is excluded here
    scan(facts, Options((data,), text_columns=("text",), max_rows=1, engine=engine))
    start = time.perf_counter()
    df = scan(facts, Options((data,), text_columns=("text",), engine=engine))
    seconds = time.perf_counter() - start
    tokens = sum(s.tokens for s in df.summary.stats.values())
    print(json.dumps({"seconds": seconds, "init": init, "tokens": tokens, "rows": sum(s.rows for s in df.splits)}))


def _env(code: Path) -> dict[str, str]:
    return dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HVA_CODE=str(code), PYTHONPATH=str(code))


def run(engine: str, cpus: int, model: Path, data: Path, code: Path = ROOT) -> dict:
    cmd = [sys.executable, __file__, "--child", engine, str(cpus), str(model), str(data)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=_env(code))
    return json.loads(out.stdout.strip().splitlines()[-1])


def cli_seconds(engine: str, model: Path, data: Path, code: Path = ROOT) -> float:
    """Wall time of one ``check MODEL --dataset DATA --engine ENGINE`` (a fresh process, as a user runs it)."""
    cmd = [sys.executable, "-m", "hf_vocab_audit", "check", str(model), "--dataset", str(data), "--engine", engine,
           "--select", "HVA5"]
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, text=True, env=_env(code), cwd=str(code))
    return time.perf_counter() - start


def paired(got: dict[str, list[dict]], name: str) -> list[float]:
    """Per round, the local engine's seconds over ``name``'s: runs seconds apart share the machine's load."""
    return [local["seconds"] / r["seconds"] for local, r in zip(got["local engine"], got[name])]


def driver_cost(model: Path, data: Path, batches: int = 200) -> tuple[float, float]:
    """(seconds per batch summary on the driver, rows per batch) for text batches of 1000 rows."""
    sys.path.insert(0, str(ROOT))
    import pyarrow as pa

    from hf_vocab_audit.dataset.engines.ray import shift
    from hf_vocab_audit.dataset.kernel import summarize
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
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians are reported")
    ap.add_argument("--before", help="a checkout of the code to compare with, measured in the same rounds")
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
    before = Path(args.before).resolve() if args.before else None
    runs = [("local engine", "local", 0, ROOT), ("ray, 1 CPU", "ray", 1, ROOT), ("ray, 2 CPUs", "ray", 2, ROOT)]
    if before is not None:
        runs.append(("before: ray, 2 CPUs", "ray", 2, before))
    for label, path in inputs:
        got: dict[str, list[dict]] = {name: [] for name, *_ in runs}
        for _ in range(args.rounds):  # interleaved: each round runs every engine once
            for name, engine, cpus, code in runs:
                got[name].append(run(engine, cpus, model, path, code))
        rate = {}
        for name, engine, cpus, _code in runs:
            rs = got[name]
            seconds = statistics.median(r["seconds"] for r in rs)
            rate[name] = rs[0]["tokens"] / seconds
            per = f", {rate[name] / cpus / 1e6:.2f} M tok/s per CPU" if cpus else ""
            init = f" (+ ray.init {statistics.median(r['init'] for r in rs):.1f} s)" if engine == "ray" else ""
            spread = "/".join(f"{r['seconds']:.1f}" for r in rs)
            print(f"[{label}] {name:<20} {rs[0]['tokens']:,} tokens in {seconds:.1f} s (runs {spread}){init} -> "
                  f"{rate[name] / 1e6:.2f} M tok/s{per}")
        ratios = paired(got, "ray, 2 CPUs")
        ratio = statistics.median(ratios)
        print(f"[{label}] ray 2 CPUs / local engine, median of the rounds' ratios "
              f"({'/'.join(f'{r:.2f}' for r in ratios)}): {ratio:.2f} (target >= 0.8: "
              f"{'met' if ratio >= 0.8 else 'MISSED'})"
              + (f"; before: {statistics.median(paired(got, 'before: ray, 2 CPUs')):.2f}" if before else ""))
    tiny = CACHE / "tiny-200.jsonl"
    if not tiny.exists():
        with open(data, encoding="utf-8") as fh:
            tiny.write_text("".join(fh.readline() for _ in range(200)), encoding="utf-8")
    codes = [("after", ROOT)] + ([("before", before)] if before is not None else [])
    walls: dict[tuple[str, str], list[float]] = {(c, e): [] for c, _ in codes for e in ("local", "ray")}
    for _ in range(args.rounds):
        for name, code in codes:
            for engine in ("local", "ray"):
                walls[(name, engine)].append(cli_seconds(engine, model, tiny, code))
    for name, _code in codes:
        local_s, ray_s = (statistics.median(walls[(name, e)]) for e in ("local", "ray"))
        print(f"[start-up, {name}] CLI on 200 rows: --engine local {local_s:.1f} s, --engine ray {ray_s:.1f} s "
              f"-> Ray start-up {ray_s - local_s:.1f} s")
    per_batch, rows = driver_cost(model, data)
    print(f"load average after the runs: {os.getloadavg()[0]:.1f}")
    print(f"[driver] unpickle + shift + merge: {per_batch * 1e3:.2f} ms per {rows:.0f}-row batch summary "
          f"-> at most {1 / per_batch:,.0f} batches/s ({rows / per_batch / 1e6:.2f} M rows/s) per driver")


if __name__ == "__main__":
    main()

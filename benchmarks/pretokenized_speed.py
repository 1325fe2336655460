"""Pre-tokenized corpora against the speed of reading Arrow, measured side by side in one run.

    python benchmarks/pretokenized_speed.py [--mids 100] [--rounds 3] [--before DIR]

Generates (cached under .bench-cache/) ``--mids`` million token ids as ``input_ids`` + ``labels``
(``list<int32>``, rows of 2048, labels = the ids with a masked prompt of -100), saved with
``Dataset.save_to_disk`` and as a parquet file of 8192-row groups, and a header-only Llama-3-sized
checkpoint (128256 rows) for them. Then, interleaved ``--rounds`` times, each a fresh process:

  * the Arrow limit: memory-map the ``save_to_disk`` file and take ``pyarrow.compute.min_max`` of every
    list column's flat values (start-up and imports included);
  * the parquet limit: read the file with pyarrow (row groups decoded on every core) and the same min_max;
  * ``hf-vocab-audit check MODEL`` and ``check MODEL --dataset DATA`` for each format.

ratio = limit / (check --dataset - check), medians of the rounds (target >= 0.8 for both formats). Peak RSS of
the ``--dataset`` runs at 1x and 2x the corpus (target: flat). ``--before DIR``: also time the package in DIR
(another checkout) the same way, interleaved. The timed processes may write ``.pyc`` files (as an installed
package has them), whatever ``PYTHONDONTWRITEBYTECODE`` says; the first round warms them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".bench-cache"
ROWS_VOCAB = 128256
SEQ = 2048

ARROW_LIMIT = """
import sys
import pyarrow as pa, pyarrow.compute as pc
from pathlib import Path
for path in sorted(Path(sys.argv[1]).glob("*.arrow")):
    with pa.memory_map(str(path)) as source:
        table = pa.ipc.open_stream(source).read_all()
        for column in table.columns:
            for chunk in column.chunks:
                pc.min_max(chunk.flatten())
"""

PARQUET_LIMIT = """
import sys
import pyarrow.parquet as pq, pyarrow.compute as pc
table = pq.read_table(sys.argv[1], use_threads=True)
for column in table.columns:
    for chunk in column.chunks:
        pc.min_max(chunk.flatten())
"""


def make_data(mids: int) -> tuple[Path, Path]:
    """(save_to_disk folder, parquet file) with ``mids`` million ids in two list<int32> columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder, parquet = CACHE / f"ids-{mids}m-disk", CACHE / f"ids-{mids}m.parquet"
    if folder.exists() and parquet.exists():
        return folder, parquet
    import datasets

    rows = mids * 1_000_000 // 2 // SEQ
    rng = np.random.default_rng(0)
    tables = []
    for start in range(0, rows, 4096):
        n = min(4096, rows - start)
        ids = rng.integers(0, ROWS_VOCAB, size=(n, SEQ), dtype=np.int32)
        labels = ids.copy()
        prompt = rng.integers(16, 512, size=n)
        labels[np.arange(SEQ)[None, :] < prompt[:, None]] = -100
        offsets = pa.array(np.arange(n + 1, dtype=np.int32) * SEQ)
        tables.append(pa.table({"input_ids": pa.ListArray.from_arrays(offsets, pa.array(ids.ravel())),
                                "labels": pa.ListArray.from_arrays(offsets, pa.array(labels.ravel()))}))
    table = pa.concat_tables(tables)
    datasets.Dataset(table).save_to_disk(str(folder))
    pq.write_table(table, str(parquet), row_group_size=SEQ * 4)  # 8192 rows: 67 MB of ids per column
    return folder, parquet


def make_checkpoint() -> Path:
    """A header-only Llama-3-sized checkpoint (128256 rows, 8192 rotary positions) with a word-level tokenizer."""
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models

    folder = CACHE / "model-llama3-rows"
    if (folder / "config.json").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    save_file({"model.embed_tokens.weight": np.zeros((ROWS_VOCAB, 2), dtype=np.float16),
               "lm_head.weight": np.zeros((ROWS_VOCAB, 2), dtype=np.float16)}, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": ROWS_VOCAB,
        "max_position_embeddings": 8192, "hidden_size": 2, "bos_token_id": 0, "eos_token_id": 1,
        "tie_word_embeddings": False}))
    vocab = {"<s>": 0, "</s>": 1, **{f"w{i}": i for i in range(2, ROWS_VOCAB)}}
    Tokenizer(models.WordLevel(vocab, unk_token="</s>")).save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<s>", "eos_token": "</s>"}))
    return folder


def timed(cmd: list[str], pythonpath: Path = ROOT) -> tuple[float, float]:
    """Seconds and peak RSS (MB) of ``cmd`` in a fresh process."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONPATH=str(pythonpath))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its .pyc files: so do the timed runs
    wrapper = ("import resource, subprocess, sys, time; s = time.perf_counter(); "
               "p = subprocess.run(sys.argv[1:], capture_output=True); e = time.perf_counter() - s; "
               "print(e, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, p.returncode); "
               "sys.stderr.write(p.stderr.decode()[-2000:])")
    # cwd: ``python -m`` puts the working directory first on sys.path, before PYTHONPATH
    out = subprocess.run([sys.executable, "-c", wrapper, *cmd], check=True, capture_output=True, text=True, env=env,
                         cwd=pythonpath)
    seconds, rss, rc = out.stdout.split()
    if int(rc) not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {rc}: {out.stderr}")
    return float(seconds), float(rss)


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mids", type=int, default=100, help="million ids in all (both columns)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", type=Path, help="another checkout of the package, timed the same way")
    ap.add_argument("--skip-rss", action="store_true")
    args = ap.parse_args()
    CACHE.mkdir(exist_ok=True)
    folder, parquet = make_data(args.mids)
    model = make_checkpoint()
    py = sys.executable
    cli = [py, "-m", "hf_vocab_audit", "check", str(model)]
    trees = {"after": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    runs: dict[str, list[float]] = {}
    rss: dict[str, float] = {}

    def record(name: str, cmd: list[str], tree: Path = ROOT) -> None:
        seconds, peak = timed(cmd, tree)
        runs.setdefault(name, []).append(seconds)
        rss[name] = max(rss.get(name, 0.0), peak)

    print(f"{args.mids} M ids ({folder.name}, {parquet.name}); CPUs {os.cpu_count()}; load {load()}", flush=True)
    for tree in trees.values():  # warm-up, not recorded: .pyc files, the page cache
        timed(cli + ["--dataset", str(folder)], tree)
        timed(cli + ["--dataset", str(parquet)], tree)
    for r in range(args.rounds):
        record("arrow limit", [py, "-c", ARROW_LIMIT, str(folder)])
        record("parquet limit", [py, "-c", PARQUET_LIMIT, str(parquet)])
        for label, tree in trees.items():
            record(f"{label} check", cli, tree)
            record(f"{label} arrow", cli + ["--dataset", str(folder)], tree)
            record(f"{label} parquet", cli + ["--dataset", str(parquet)], tree)
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f}" for k, v in runs.items()) + f"; load {load()}",
              flush=True)
    med = {k: statistics.median(v) for k, v in runs.items()}
    for label in trees:
        for fmt in ("arrow", "parquet"):
            marginal = med[f"{label} {fmt}"] - med[f"{label} check"]
            limit = med[f"{fmt} limit"]
            print(f"[{label}] {fmt}: limit {limit:.3f} s, marginal check --dataset {marginal:.3f} s "
                  f"({args.mids / marginal:.0f} M ids/s) -> ratio {limit / marginal:.2f} (target >= 0.8); "
                  f"peak RSS {rss[f'{label} {fmt}']:.0f} MB")
    print(f"load average after: {load()}")
    if args.skip_rss:
        return
    big_folder, _ = make_data(args.mids * 2)
    _, big = timed(cli + ["--dataset", str(big_folder)])
    one = rss["after arrow"]
    print(f"[peak RSS, arrow] {args.mids} M ids {one:.0f} MB, {2 * args.mids} M ids {big:.0f} MB "
          f"({big / one - 1:+.0%}; target flat, within 10%)")


if __name__ == "__main__":
    main()

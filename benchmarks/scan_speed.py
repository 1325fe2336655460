"""Dataset-scan speed against its limits, measured side by side in one run.

    python benchmarks/scan_speed.py [--mb 20] [--vocab 32000] [--rounds 3] [--skip-rss]

Generates English-like text (Zipf-distributed pseudo-words), trains byte-level BPE tokenizers on it
(cached under .bench-cache/), builds header-only checkpoints for them, and measures:
  * text: the marginal time of ``hf-vocab-audit check MODEL --dataset corpus.jsonl`` over ``check MODEL``
    against a process that only loads the tokenizer, reads the same JSON lines and runs
    ``encode_batch_fast`` on them in batches of 1000 (the limit); the three commands run interleaved,
    --rounds times, medians compared: ratio = limit / marginal (target >= 0.9);
  * ids/s on an already tokenized ``input_ids`` parquet column (target >= 70 M ids/s);
  * peak RSS of a scan in a fresh subprocess: ids at 1x and 10x (within 20%), text at 5 and 50 MB (within 10%).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".bench-cache"
SYLLABLES = (
    "ta ke ro mi an en in on er th st re de li ve co la pe si ma ne tu ga fo bi sh ch pr tr al or ar ic ul us um at "
    "es ed ing ly ion"
).split()


def words(n: int, rng: np.random.Generator) -> list[str]:
    out = set()
    while len(out) < n:
        k = rng.integers(1, 5, size=n)
        for size in k:
            out.add("".join(rng.choice(SYLLABLES, size=int(size))))
    return sorted(out)[:n]


def generate_text(path: Path, mb: float, seed: int = 0) -> Path:
    """JSONL rows of 1-6 sentences of Zipf-distributed pseudo-words, ``mb`` megabytes in all."""
    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    vocab = np.array(words(300_000, rng), dtype=object)
    target = int(mb * 1e6)
    size = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".tmp"), "w", encoding="utf-8") as f:
        while size < target:
            ranks = np.minimum(rng.zipf(1.15, size=20_000) - 1, len(vocab) - 1)
            chunk = vocab[ranks]
            pos = 0
            lines = []
            while pos < len(chunk) - 200:
                n_sent = int(rng.integers(1, 7))
                sents = []
                for _ in range(n_sent):
                    n = int(rng.integers(5, 25))
                    s = " ".join(chunk[pos:pos + n])
                    pos += n
                    sents.append(s[:1].upper() + s[1:] + rng.choice([".", ".", ".", "?", "!", ","]))
                lines.append(json.dumps({"text": " ".join(sents)}) + "\n")
            text = "".join(lines)
            f.write(text)
            size += len(text.encode())
    path.with_suffix(".tmp").rename(path)
    return path


def read_texts(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def train_tokenizer(vocab_size: int, texts: list[str]) -> Path:
    path = CACHE / f"bpe-{vocab_size}.json"
    if path.exists():
        return path
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<s>", "</s>", "<pad>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0),
                                                                                            ("</s>", 1)])
    tok.save(str(path))
    return path


def make_checkpoint(tokenizer_path: Path) -> Path:
    """config.json + a header-sized safetensors file + tokenizer.json (GPT-2 style: 1024 absolute positions)."""
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer

    rows = Tokenizer.from_file(str(tokenizer_path)).get_vocab_size(with_added_tokens=True)
    folder = CACHE / f"model-{tokenizer_path.stem}"
    if (folder / "config.json").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    save_file({"transformer.wte.weight": np.zeros((rows, 4), dtype=np.float16),
               "transformer.wpe.weight": np.zeros((1024, 4), dtype=np.float16)}, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({
        "model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": rows, "n_positions": 1024,
        "n_embd": 4, "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2, "tie_word_embeddings": True}))
    (folder / "tokenizer.json").write_text(tokenizer_path.read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<s>", "eos_token": "</s>",
                                                              "pad_token": "<pad>", "model_max_length": 1024}))
    return folder


def raw_encode(tokenizer_path: Path, texts: list[str], batch: int = 1000) -> tuple[float, int, list]:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_path))
    tok.no_padding()
    tok.no_truncation()
    tokens = 0
    ids = []
    start = time.perf_counter()
    for i in range(0, len(texts), batch):
        enc = tok.encode_batch(texts[i:i + batch], add_special_tokens=True)
        tokens += sum(len(e) for e in enc)
    seconds = time.perf_counter() - start
    return seconds, tokens, ids


def write_ids(tokenizer_path: Path, texts: list[str], path: Path, copies: int = 1) -> tuple[Path, int]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_path))
    total = 0
    if not path.exists():
        with pq.ParquetWriter(str(path.with_suffix(".tmp")), pa.schema([("input_ids", pa.list_(pa.int32()))])) as w:
            batches = []
            for i in range(0, len(texts), 5000):
                rows = [e.ids for e in tok.encode_batch(texts[i:i + 5000])]
                batches.append(pa.table({"input_ids": pa.array(rows, type=pa.list_(pa.int32()))}))
            for _ in range(copies):
                for t in batches:
                    w.write_table(t)
        path.with_suffix(".tmp").rename(path)
    meta = pq.ParquetFile(str(path)).metadata
    total = sum(meta.row_group(i).column(0).statistics.num_values for i in range(meta.num_row_groups))
    return path, total


def child_scan(model: str, data: str, text: bool) -> None:
    """Run one scan in this process and print seconds, stats and peak RSS as JSON (for subprocess use)."""
    sys.path.insert(0, str(ROOT))
    from hf_vocab_audit.core.options import ScanOptions as Options
    from hf_vocab_audit.dataset.engines.registry import scan
    from hf_vocab_audit.facts import gather

    facts = gather(model)
    scan(facts, Options((data,), text_columns=("text",) if text else (), max_rows=1))  # warm-up: imports, caches
    seconds = float("inf")
    for _ in range(1 if text else 3):  # id scans take a fraction of a second: best of 3
        start = time.perf_counter()
        df = scan(facts, Options((data,), text_columns=("text",) if text else (), batch_size=1000))
        seconds = min(seconds, time.perf_counter() - start)
    stats = next(iter(df.summary.stats.values()))
    print(json.dumps({"seconds": seconds, "rows": sum(s.rows for s in df.splits), "tokens": stats.tokens,
                      "ids": stats.values if not text else 0, "findings_checks": len(df.summary.violations),
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def run_child(model: Path, data: Path, text: bool) -> dict:
    cmd = [sys.executable, __file__, "--child", str(model), str(data)] + (["--text"] if text else [])
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


LIMIT = """
import json, sys
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
tok.no_padding()
tok.no_truncation()
encode = getattr(tok, "encode_batch_fast", tok.encode_batch)
tokens, batch = 0, []
with open(sys.argv[2], encoding="utf-8") as f:
    for line in f:
        batch.append(json.loads(line)["text"])
        if len(batch) == 1000:
            tokens += sum(len(e) for e in encode(batch, add_special_tokens=True))
            batch = []
if batch:
    tokens += sum(len(e) for e in encode(batch, add_special_tokens=True))
print(tokens)
"""


def timed(cmd: list[str]) -> float:
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def text_ratio(model: Path, tokenizer: Path, data: Path, rounds: int) -> tuple[float, float, float, float]:
    """(limit, check, check --dataset, ratio) medians over ``rounds`` interleaved rounds."""
    cli = [sys.executable, "-m", "hf_vocab_audit", "check", str(model)]
    runs: dict[str, list[float]] = {"limit": [], "check": [], "dataset": []}
    for _ in range(rounds):
        runs["limit"].append(timed([sys.executable, "-c", LIMIT, str(tokenizer), str(data)]))
        runs["check"].append(timed(cli))
        runs["dataset"].append(timed(cli + ["--dataset", str(data)]))
    limit, check, dataset = (float(np.median(runs[k])) for k in ("limit", "check", "dataset"))
    return limit, check, dataset, limit / (dataset - check)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=20.0)
    ap.add_argument("--vocab", type=int, nargs="+", default=[32000])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-rss", action="store_true")
    ap.add_argument("--child", nargs=2)
    ap.add_argument("--text", action="store_true")
    args = ap.parse_args()
    if args.child:
        child_scan(args.child[0], args.child[1], args.text)
        return
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    CACHE.mkdir(exist_ok=True)
    data = generate_text(CACHE / f"text-{args.mb:g}mb.jsonl", args.mb)
    texts = read_texts(data)
    print(f"text: {data.stat().st_size / 1e6:.1f} MB, {len(texts):,} rows; CPUs: {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    for vocab in args.vocab:
        tok = train_tokenizer(vocab, texts[: max(1, len(texts) // 10)])
        model = make_checkpoint(tok)
        limit, check, dataset, ratio = text_ratio(model, tok, data, args.rounds)
        print(f"[{tok.stem}] limit (load tokenizer, read lines, encode_batch_fast) {limit:.2f} s; check {check:.2f} s; "
              f"check --dataset {dataset:.2f} s -> marginal {dataset - check:.2f} s, ratio {ratio:.2f} "
              "(target >= 0.9)")
        raw_s, raw_tokens, _ = raw_encode(tok, texts)
        scan_run = run_child(model, data, text=True)
        assert scan_run["tokens"] == raw_tokens, "the scan must count exactly the tokens encode_batch gives"
    ids_path, _ = write_ids(tok, texts, CACHE / f"ids-{args.mb:g}mb-{tok.stem}.parquet")
    ids10, _ = write_ids(tok, texts, CACHE / f"ids-{args.mb:g}mb-{tok.stem}-x10.parquet", copies=10)
    ten = run_child(model, ids10, text=False)  # 10x: long enough to time (best of 3)
    print(f"[input_ids] {ten['ids']:,} ids in {ten['seconds']:.2f} s -> {ten['ids'] / ten['seconds'] / 1e6:.0f} M ids/s "
          "(target >= 70 M ids/s)")
    if args.skip_rss:
        return
    one = run_child(model, ids_path, text=False)
    print(f"[peak RSS, input_ids] 1x {one['peak_rss_mb']:.0f} MB, 10x {ten['peak_rss_mb']:.0f} MB "
          f"({ten['peak_rss_mb'] / one['peak_rss_mb'] - 1:+.0%}; target within 20%)")
    small = generate_text(CACHE / "text-5mb.jsonl", 5, seed=1)
    big = generate_text(CACHE / "text-50mb.jsonl", 50, seed=2)
    t1, t10 = run_child(model, small, text=True), run_child(model, big, text=True)
    print(f"[peak RSS, text] 5 MB {t1['peak_rss_mb']:.0f} MB, 50 MB "
          f"{t10['peak_rss_mb']:.0f} MB ({t10['peak_rss_mb'] / t1['peak_rss_mb'] - 1:+.0%}; target within 10%)")


if __name__ == "__main__":
    main()

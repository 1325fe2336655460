"""Chat-data scan speed against its limit, measured side by side in one run.

    python benchmarks/chat_speed.py [--mb 20] [--vocab 32000] [--rounds 3] [--skip-rss]

Turns scan_speed.py's English-like text into conversations (a ``messages`` column of 2-6 alternating
user/assistant turns, some with a system turn first), adds ChatML markers and a ChatML template to its
byte-level BPE tokenizer (resized: a healthy checkpoint, so the scan does all its work and finds nothing),
and measures:
  * the marginal time of ``hf-vocab-audit check MODEL --dataset chat.jsonl --select HVA5`` over
    ``check MODEL --select HVA5`` against the limit: a process that loads the tokenizer, reads the same JSON
    lines, renders each conversation with the compiled chat template (transformers' compiled Jinja template,
    ``tokenize=False``) and runs ``encode_batch_fast`` on the strings in batches of 1000. The three commands
    run interleaved, --rounds times; medians compared: ratio = limit / marginal (target >= 0.8);
  * peak RSS of a scan in a fresh subprocess at 5 MB and 50 MB of conversations (within 10%).
The machine may be shared: the load average is printed with each round.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scan_speed import CACHE, ROOT, generate_text, make_checkpoint, read_texts, timed, train_tokenizer

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
MARKERS = ["<|im_start|>", "<|im_end|>"]


def conversations(text_path: Path, mb: float) -> Path:
    """JSON lines of ``messages``: each text row cut at sentence ends into alternating turns."""
    path = CACHE / f"chat-{mb:g}mb.jsonl"
    if path.exists():
        return path
    rng = np.random.default_rng(1)
    target = int(mb * 1e6)
    size = 0
    with open(path.with_suffix(".tmp"), "w", encoding="utf-8") as out, open(text_path, encoding="utf-8") as f:
        for line in f:
            parts = [p.strip() for p in json.loads(line)["text"].replace("?", "?|").replace(".", ".|").split("|")]
            parts = [p for p in parts if p] or ["hello"]
            turns = []
            if rng.random() < 0.3:
                turns.append({"role": "system", "content": "You are a helpful assistant."})
            for i, p in enumerate(parts[:6]):
                turns.append({"role": "user" if i % 2 == 0 else "assistant", "content": p})
            if turns[-1]["role"] != "assistant":
                turns.append({"role": "assistant", "content": "Sure."})
            row = json.dumps({"messages": turns}) + "\n"
            out.write(row)
            size += len(row.encode())
            if size >= target:
                break
    if size < target:
        raise SystemExit(f"{text_path} holds too little text for {mb} MB of conversations")
    path.with_suffix(".tmp").rename(path)
    return path


def chat_checkpoint(tokenizer_path: Path) -> Path:
    """scan_speed's header-only checkpoint with the ChatML markers added and its rows grown to cover them."""
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer

    folder = CACHE / f"chat-model-{tokenizer_path.stem}"
    if (folder / "config.json").exists():
        return folder
    base = make_checkpoint(tokenizer_path)
    tok = Tokenizer.from_file(str(tokenizer_path))
    tok.add_special_tokens(MARKERS)
    rows = tok.get_vocab_size(with_added_tokens=True)
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    save_file({"transformer.wte.weight": np.zeros((rows, 4), dtype=np.float16),
               "transformer.wpe.weight": np.zeros((1024, 4), dtype=np.float16)}, str(folder / "model.safetensors"))
    config = json.loads((base / "config.json").read_text())
    config.update(vocab_size=rows, n_positions=8192)
    (folder / "config.json").write_text(json.dumps(config))
    tc = json.loads((base / "tokenizer_config.json").read_text())
    tc.update(chat_template=CHATML, model_max_length=8192)
    (folder / "tokenizer_config.json").write_text(json.dumps(tc))
    return folder


LIMIT = """
import json, sys
from tokenizers import Tokenizer
from transformers.utils.chat_template_utils import _compile_jinja_template
tok = Tokenizer.from_file(sys.argv[1] + "/tokenizer.json")
tok.no_padding()
tok.no_truncation()
template = _compile_jinja_template(json.load(open(sys.argv[1] + "/tokenizer_config.json"))["chat_template"])
special = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>"}
tokens, batch = 0, []
with open(sys.argv[2], encoding="utf-8") as f:
    for line in f:
        batch.append(template.render(messages=json.loads(line)["messages"], add_generation_prompt=False, **special))
        if len(batch) == 1000:
            tokens += sum(len(e) for e in tok.encode_batch_fast(batch, add_special_tokens=False))
            batch = []
if batch:
    tokens += sum(len(e) for e in tok.encode_batch_fast(batch, add_special_tokens=False))
print(tokens)
"""


def ratio(model: Path, data: Path, rounds: int) -> tuple[float, float, float, float, list[float]]:
    """(limit, check, check --dataset, limit / marginal) medians over ``rounds`` interleaved rounds, and the
    per-round ratios."""
    cli = [sys.executable, "-m", "hf_vocab_audit", "check", str(model), "--select", "HVA5"]
    runs: dict[str, list[float]] = {"limit": [], "check": [], "dataset": []}
    per_round = []
    for r in range(rounds):
        runs["limit"].append(timed([sys.executable, "-c", LIMIT, str(model), str(data)]))
        runs["check"].append(timed(cli))
        runs["dataset"].append(timed(cli + ["--dataset", str(data)]))
        per_round.append(runs["limit"][-1] / (runs["dataset"][-1] - runs["check"][-1]))
        print(f"  round {r + 1}: limit {runs['limit'][-1]:.2f} s, check {runs['check'][-1]:.2f} s, "
              f"check --dataset {runs['dataset'][-1]:.2f} s, ratio {per_round[-1]:.2f} "
              f"(load {os.getloadavg()[0]:.1f})", flush=True)
    limit, check, dataset = (float(np.median(runs[k])) for k in ("limit", "check", "dataset"))
    return limit, check, dataset, limit / (dataset - check), per_round


def child_rss(model: str, data: str) -> None:
    """One scan in this process; prints seconds, rows, tokens and peak RSS as JSON."""
    sys.path.insert(0, str(ROOT))
    from hf_vocab_audit.core.options import ScanOptions as Options
    from hf_vocab_audit.dataset.engines.registry import scan
    from hf_vocab_audit.facts import gather

    facts = gather(model)
    start = time.perf_counter()
    df = scan(facts, Options((data,)))
    seconds = time.perf_counter() - start
    stats = next(iter(df.summary.stats.values()))
    print(json.dumps({"seconds": seconds, "rows": sum(s.rows for s in df.splits), "tokens": stats.values,
                      "checks": len(df.summary.violations),
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def run_child(model: Path, data: Path) -> dict:
    cmd = [sys.executable, __file__, "--child", str(model), str(data)]
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=20.0)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-rss", action="store_true")
    ap.add_argument("--child", nargs=2)
    args = ap.parse_args()
    if args.child:
        child_rss(*args.child)
        return
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    CACHE.mkdir(exist_ok=True)
    text = generate_text(CACHE / f"text-{max(args.mb, 50):g}mb.jsonl", max(args.mb, 50))
    tokenizer = train_tokenizer(args.vocab, read_texts(generate_text(CACHE / "text-20mb.jsonl", 20)))
    model = chat_checkpoint(tokenizer)
    data = conversations(text, args.mb)
    rows = sum(1 for _ in open(data, encoding="utf-8"))
    print(f"conversations: {data.stat().st_size / 1e6:.1f} MB, {rows:,} rows; CPUs: {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    limit, check, dataset, r, rounds = ratio(model, data, args.rounds)
    print(f"limit {limit:.2f} s; check {check:.2f} s; check --dataset {dataset:.2f} s; marginal "
          f"{dataset - check:.2f} s; ratio limit/marginal {r:.2f} (target >= 0.8); per round "
          f"{', '.join(f'{x:.2f}' for x in rounds)}")
    if args.skip_rss:
        return
    small, large = conversations(text, 5), conversations(text, 50)
    a, b = run_child(model, small), run_child(model, large)
    print(f"peak RSS: 5 MB {a['peak_rss_mb']:.0f} MB ({a['rows']:,} rows, {a['tokens']:,} tokens), 50 MB "
          f"{b['peak_rss_mb']:.0f} MB ({b['rows']:,} rows, {b['tokens']:,} tokens): "
          f"{(b['peak_rss_mb'] / a['peak_rss_mb'] - 1) * 100:+.1f}% (target within 10%)")


if __name__ == "__main__":
    main()

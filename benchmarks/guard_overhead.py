"""What the batch guard costs: per-batch microbenchmarks, a DataLoader A/B, and a device-work count.

    PYTHONPATH=. python benchmarks/guard_overhead.py [--repeat 200] [--rounds 15]

1. Microbenchmarks (warm, one thread, median and p90) of the host check of a language-model batch
   (input_ids, attention_mask, labels with -100 on the padding) at 8x2048, 16x4096 and 64x8192 tokens.
   Targets: < 200 us per 8x2048 batch; <= 10 ns per token at 64x8192.
2. An interleaved A/B of a DataLoader over pre-tokenized rows with a real collator
   (DataCollatorForLanguageModeling; DataCollatorForSeq2Seq), plain vs guarded, alternating every round.
   Target: the guard adds <= 2% of the collator's own time.
3. Device work in host mode: a TorchFunctionMode counts every torch call while the guarded collator
   returns meta tensors (stand-ins for tensors already on an accelerator): no reduction and no host read
   (item, int, tolist) may run; on CPU tensors one zero-copy numpy view per checked tensor and no torch
   reduction (the range proof is a numpy max over the values read as unsigned: see guard/checks.py).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

VOCAB = 32000


def tiny_lm() -> Any:
    import transformers

    cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                                   num_attention_heads=2, num_key_value_heads=2)
    return transformers.LlamaForCausalLM(cfg)


def tokenizer() -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "<pad>": 3, **{f"w{i}": i + 4 for i in range(VOCAB - 4)}}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>")


def lm_batch(b: int, n: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(4, VOCAB, (b, n), generator=g)
    lengths = torch.randint(n // 2, n + 1, (b,), generator=g)
    mask = (torch.arange(n)[None, :] < lengths[:, None]).long()
    ids = ids.masked_fill(mask == 0, 3)
    labels = ids.masked_fill(mask == 0, -100)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def micro(checker: Any, repeat: int) -> list[tuple[str, float, float, float]]:
    rows = []
    for b, n in ((8, 2048), (16, 4096), (64, 8192)):
        batch = lm_batch(b, n)
        for _ in range(5):  # warm
            checker.verdict(batch, batch_number=0, worker=None, host_only=True)
        times = []
        for _ in range(repeat if b * n <= 65536 else max(20, repeat // 10)):
            t0 = time.perf_counter_ns()
            assert checker.verdict(batch, batch_number=0, worker=None, host_only=True) is None
            times.append((time.perf_counter_ns() - t0) / 1000)
        med, p90 = statistics.median(times), percentile(times, 0.9)
        rows.append((f"{b}x{n}", med, p90, med * 1000 / (b * n)))
    return rows


def ab(checker: Any, rounds: int, which: str) -> tuple[float, float, float, float, float]:
    from torch.utils.data import DataLoader
    from transformers import DataCollatorForLanguageModeling, DataCollatorForSeq2Seq

    from hf_vocab_audit.guard.core import GuardedCollator

    tok = tokenizer()
    g = torch.Generator().manual_seed(1)
    rows: list[dict[str, Any]] = [{"input_ids": torch.randint(4, VOCAB, (int(n),), generator=g).tolist()}
                                  for n in torch.randint(256, 2048, (256,), generator=g)]
    plain: Any
    if which == "lm":
        plain = DataCollatorForLanguageModeling(tok, mlm=False)
    else:  # causal-LM fine-tuning: labels = ids, padded with -100 by the collator
        rows = [{"input_ids": r["input_ids"], "attention_mask": [1] * len(r["input_ids"]),
                 "labels": r["input_ids"]} for r in rows]
        plain = DataCollatorForSeq2Seq(tok, label_pad_token_id=-100, return_tensors="pt")
    guarded = GuardedCollator(plain, checker)
    times: dict[str, list[float]] = {"plain": [], "guarded": []}
    for r in range(rounds + 1):
        order = ("plain", "guarded") if r % 2 else ("guarded", "plain")
        for name in order:
            loader = DataLoader(rows, batch_size=8, num_workers=0, collate_fn=plain if name == "plain" else guarded)
            t0 = time.perf_counter()
            for _ in loader:
                pass
            if r:  # round 0 warms both
                times[name].append(time.perf_counter() - t0)
    p, q = statistics.median(times["plain"]), statistics.median(times["guarded"])
    # The same batches, timed call by call: the check's time as a share of the collator's own time
    # (robust to a busy machine, where whole-loader timings drift by a few percent between rounds).
    collate_ns = check_ns = 0
    shares = []
    for _ in range(3):
        for start in range(0, len(rows), 8):
            t0 = time.perf_counter_ns()
            batch = plain(rows[start:start + 8])
            t1 = time.perf_counter_ns()
            checker.verdict(batch, batch_number=0, worker=None, host_only=True)
            t2 = time.perf_counter_ns()
            collate_ns, check_ns = collate_ns + t1 - t0, check_ns + t2 - t1
            shares.append((t2 - t1) / (t1 - t0) * 100)
    return p, q, (q - p) / p * 100, statistics.median(shares), check_ns / collate_ns * 100


class Count(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.calls.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


def device_work(checker: Any) -> tuple[list[str], int, int]:
    from hf_vocab_audit.guard.core import GuardedCollator

    batch = lm_batch(8, 2048)
    meta = {k: v.to("meta") for k, v in batch.items()}
    with Count() as on_meta:
        GuardedCollator(lambda _f: meta, checker)([])
    with Count() as on_cpu:
        GuardedCollator(lambda _f: batch, checker)([])
    reads = ("item", "__int__", "tolist", "__bool__", "__float__")
    reductions = ("aminmax", "min", "max", "sum", "any", "all", "nonzero")
    bad_meta = [c for c in on_meta.calls if c in reads + reductions]
    return bad_meta, on_cpu.calls.count("numpy"), sum(on_cpu.calls.count(c) for c in reductions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from hf_vocab_audit.guard.core import BatchChecker
    from hf_vocab_audit.guard.limits import limits_of

    checker = BatchChecker(limits_of(tiny_lm(), tokenizer()), None, None)
    print(f"torch {torch.__version__}, 1 thread; batch: input_ids + attention_mask + labels (-100 on padding)")
    print(f"{'batch':<10} {'median us':>10} {'p90 us':>10} {'ns/token':>9}")
    results = micro(checker, args.repeat)
    for name, med, p90, per in results:
        print(f"{name:<10} {med:>10.1f} {p90:>10.1f} {per:>9.2f}")
    pcts = []
    for which, name in (("lm", "DataCollatorForLanguageModeling"), ("s2s", "DataCollatorForSeq2Seq")):
        plain, guarded, pct, share, total = ab(checker, args.rounds, which)
        pcts.append(share)
        print(f"DataLoader A/B ({name}, 32 batches of 8 rows of 256-2047 ids, {args.rounds} interleaved rounds): "
              f"plain {plain * 1000:.1f} ms, guarded {guarded * 1000:.1f} ms, overhead {pct:+.2f}%; "
              f"check / collator time, batch by batch (the check reads the fresh batch cold): median {share:.2f}%, "
              f"total {total:.2f}%")
    pct = max(pcts)
    bad_meta, aminmax, reductions = device_work(checker)
    print(f"host mode on meta (device) tensors: {len(bad_meta)} reductions or host reads {bad_meta}; "
          f"on CPU: {aminmax} numpy views for 2 checked tensors, {reductions} torch reductions")
    small, big = results[0][1], results[-1][3]
    print(f"targets: 8x2048 {small:.0f} us < 200 us: {'met' if small < 200 else 'MISSED'}; "
          f"64x8192 {big:.2f} ns/token <= 10: {'met' if big <= 10 else 'MISSED'}; "
          f"check <= 2% of the collator (median per batch): {pct:.2f}% {'met' if pct <= 2 else 'MISSED'}; "
          f"no device work: {'met' if not bad_meta else 'MISSED'}")


if __name__ == "__main__":
    main()

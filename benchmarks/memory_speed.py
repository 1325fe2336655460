#!/usr/bin/env python
"""How long does `audit(model=model, tokenizer=tokenizer)` take on live objects of real size?

    python benchmarks/memory_speed.py [--repeat 5]

Builds Llama-3.1-8B and -405B layouts on torch's meta device (real shapes, no memory) and loads the
128k-token tokenizer of benchmarks/_checkpoints.py with AutoTokenizer, then times, in this process
(median of --repeat):

- facts:  ``facts_from_memory(model, tokenizer)`` (config JSON, parameter table, tokenizer copy)
- audit:  ``audit(model=model, tokenizer=tokenizer)`` (facts + every static rule)
- copy:   ``Tokenizer.from_str(backend.to_str())``, the tokenizer copy the audit makes (the floor)
- save:   ``tokenizer.save_pretrained(tmp)`` alone, what auditing the saved pair would cost first
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _checkpoints  # noqa: E402

LAYOUTS = {
    "8B": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
               num_key_value_heads=8),
    "405B": dict(hidden_size=16384, intermediate_size=53248, num_hidden_layers=126, num_attention_heads=128,
                 num_key_value_heads=8),
}


def timed(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import torch
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from hf_vocab_audit import audit, facts_from_memory

    folder = Path(tempfile.mkdtemp(prefix="memory-speed-"))
    _checkpoints.write_tokenizer(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    print(f"tokenizer: {len(tokenizer)} tokens ({type(tokenizer).__name__})")
    copy = timed(lambda: Tokenizer.from_str(tokenizer.backend_tokenizer.to_str()), args.repeat)
    save = timed(lambda: tokenizer.save_pretrained(tempfile.mkdtemp(dir=folder)), args.repeat)
    print(f"tokenizer copy {copy * 1000:.0f} ms; tokenizer save_pretrained {save * 1000:.0f} ms")
    for name, shape in LAYOUTS.items():
        config = LlamaConfig(vocab_size=_checkpoints.VOCAB, max_position_embeddings=131072, **shape)
        with torch.device("meta"):
            model = LlamaForCausalLM(config)
        params = sum(p.numel() for p in model.parameters()) / 1e9
        facts = timed(lambda m=model: facts_from_memory(m, tokenizer), args.repeat)
        report = audit(model=model, tokenizer=tokenizer)
        whole = timed(lambda m=model: audit(model=m, tokenizer=tokenizer), args.repeat)
        print(f"{name} ({params:.1f} B parameters, {len(list(model.parameters()))} tensors): "
              f"facts {facts * 1000:.0f} ms, audit {whole * 1000:.0f} ms, findings {[f.code for f in report.findings]}")


if __name__ == "__main__":
    main()

"""Regenerate reports/example-report.html: the HTML report of a broken chat checkpoint.

    PYTHONPATH=. python reports/make_example.py

The checkpoint (built in a temporary folder) is a small Llama whose tokenizer gained ChatML markers
and eight reserved tokens, mean-resized with padding to a multiple of 64 rows: `<|im_end|>`'s rows were left
at zero, `<|im_start|>`'s at the mean (a mean resize never trained), the reserved rows at zero, and
one added tool token trained to only 3% of the usual norm.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "example-report.html"
TARGET = "example/broken-chat-llama"


def build(folder: Path, base: int = 3000, hidden: int = 64) -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    from builders import CHATML, make_tokenizer
    from safetensors.numpy import save_file

    reserved = [f"<|reserved_special_token_{i}|>" for i in range(8)]
    make_tokenizer(folder, base, added_special=["<|im_start|>", "<|im_end|>", "<tool_call>", *reserved],
                   chat_template=CHATML)
    n_tok = base + 3 + len(reserved)
    rows = -(-n_tok // 64) * 64
    rng = np.random.default_rng(7)

    def matrix() -> np.ndarray:
        m = rng.normal(0.003, 0.02, (rows, hidden)) * np.exp(rng.normal(0, 0.25, (rows, 1)))
        m[3] = 0  # <pad>: padding_idx row
        m[base] = m[n_tok:] = m[:base].mean(axis=0)  # <|im_start|> and the padding rows: a mean resize
        m[base + 1] = 0  # <|im_end|>
        m[base + 2] *= 0.03  # <tool_call>
        m[base + 3 : n_tok] = 0  # reserved
        return m.astype(np.float32)

    save_file({"model.embed_tokens.weight": matrix(), "lm_head.weight": matrix(),
               "model.norm.weight": np.ones(hidden, np.float32)}, str(folder / "model.safetensors"))
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": rows,
              "hidden_size": hidden, "intermediate_size": 2 * hidden, "num_hidden_layers": 1,
              "num_attention_heads": 2, "num_key_value_heads": 2, "max_position_embeddings": 2048,
              "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 3}
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    return folder


def regenerate(out: Path = OUT) -> Path:
    """Build the checkpoint, audit it with --weights and write the HTML report to ``out``."""
    from hf_vocab_audit import audit
    from hf_vocab_audit.formats import render

    with tempfile.TemporaryDirectory() as tmp:
        report = audit(build(Path(tmp) / "broken-chat-llama"), weights=True)
    report = dataclasses.replace(report, target=TARGET)
    out.write_text(render(report.judged("warning"), "html"), encoding="utf-8")
    return out


if __name__ == "__main__":
    print(regenerate())

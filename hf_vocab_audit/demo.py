"""``hf-vocab-audit demo``: the classic bug, built in a temporary folder and caught.

A tiny Llama-style checkpoint gets ChatML special tokens added to its tokenizer, and the model is
never resized: exactly what crashes with `device-side assert triggered` on the first chat batch.
Built with numpy, safetensors and tokenizers only, so it runs offline in about a second.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

WORDS = (
    "the model reads a token id and looks up its row in the embedding matrix when an id has no row "
    "the kernel asserts and the process dies with a message that names the wrong line"
).split()
CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_demo_checkpoint(folder: Path, *, vocab: int = 256, hidden: int = 16, broken: bool = True) -> Path:
    """Write the demo checkpoint to ``folder`` and return it: broken (chat tokens without a resize) or
    healthy and without a pad token (for ``demo --guard``, where the training script adds one)."""
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    folder.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator([" ".join(WORDS)] * 20, trainer=trainer)
    base = tok.get_vocab_size()
    if broken:
        # The defect: chat tokens added to the tokenizer, the model never resized.
        tok.add_special_tokens(["<|im_start|>", "<|im_end|>"])
    tok.save(str(folder / "tokenizer.json"))
    tok_config: dict[str, object] = {
        "tokenizer_class": "TokenizersBackend", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
        "model_max_length": 2048,
    }
    if broken:
        tok_config.update({"eos_token": "<|im_end|>", "pad_token": "<unk>",
                           "extra_special_tokens": ["<|im_start|>", "<|im_end|>"], "chat_template": CHATML})
    (folder / "tokenizer_config.json").write_text(json.dumps(tok_config, indent=2))
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": base,
        "hidden_size": hidden, "intermediate_size": 2 * hidden, "num_hidden_layers": 1,
        "num_attention_heads": 2, "num_key_value_heads": 2, "max_position_embeddings": 2048,
        "rope_theta": 10000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
        "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32",
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    rng = np.random.default_rng(0)
    h, i = hidden, 2 * hidden
    tensors = {
        "model.embed_tokens.weight": rng.normal(0, 0.02, (base, h)),
        "lm_head.weight": rng.normal(0, 0.02, (base, h)),
        "model.norm.weight": np.ones(h),
        "model.layers.0.input_layernorm.weight": np.ones(h),
        "model.layers.0.post_attention_layernorm.weight": np.ones(h),
        "model.layers.0.self_attn.q_proj.weight": rng.normal(0, 0.02, (h, h)),
        "model.layers.0.self_attn.k_proj.weight": rng.normal(0, 0.02, (h, h)),
        "model.layers.0.self_attn.v_proj.weight": rng.normal(0, 0.02, (h, h)),
        "model.layers.0.self_attn.o_proj.weight": rng.normal(0, 0.02, (h, h)),
        "model.layers.0.mlp.gate_proj.weight": rng.normal(0, 0.02, (i, h)),
        "model.layers.0.mlp.up_proj.weight": rng.normal(0, 0.02, (i, h)),
        "model.layers.0.mlp.down_proj.weight": rng.normal(0, 0.02, (h, i)),
    }
    save_file({k: v.astype(np.float32) for k, v in tensors.items()}, str(folder / "model.safetensors"),
              metadata={"format": "pt"})
    return folder


NEXT_STEPS = """
What happened: {story}

What to do next:
  * {fix}
  * see the details of a rule:  hf-vocab-audit explain {code}
  * gate uploads in CI:         hf-vocab-audit check MODEL_DIR --format json
"""
TRY_IT = """  * try the fix on this demo:   hf-vocab-audit demo --keep DIR   (the checkpoint above is deleted on exit)
"""


def run_demo(keep: Path | None = None) -> int:
    from .audit import audit
    from .formats import render

    with tempfile.TemporaryDirectory(prefix="hf-vocab-audit-demo-") as tmp:
        folder = build_demo_checkpoint(keep or Path(tmp) / "tiny-llama-chatml")
        print(f"$ hf-vocab-audit check {folder}\n")
        report = audit(folder)
        sys.stdout.write(render(report, "text"))
        hit = next((f for f in report.findings if f.code == "HVA101"), None)
        cause = next((c for c in report.causes if hit is not None and c.id == hit.cause), None)
        if hit is not None and cause is not None:  # the report's own cause: the same story as check tells
            # A folder about to be deleted is named DIR in the advice: a next command must work when typed.
            fix = cause.fix if keep else cause.fix.replace(str(folder), "DIR")
            print(NEXT_STEPS.format(story=cause.story, fix=fix, code=hit.code) + ("" if keep else TRY_IT))
        if keep:
            print(f"The demo checkpoint is kept in {folder}")
        # The demo succeeds when it catches the defect it planted.
        return 0 if hit is not None else 1


GUARD_SCRIPT = """\
model = AutoModelForCausalLM.from_pretrained("{folder}")
tokenizer = AutoTokenizer.from_pretrained("{folder}")
tokenizer.add_special_tokens({{"pad_token": "<pad>"}})   # the bug: no model.resize_token_embeddings
g = hva.guard(model, tokenizer, evidence_dir="{evidence}")
collate = g.wrap(DataCollatorWithPadding(tokenizer))
batch = collate([tokenizer(t) for t in texts])          # the first padded batch
"""


def run_guard_demo(keep: Path | None = None) -> int:
    """``demo --guard``: a training script adds a pad token without a resize; the guard stops the first
    padded batch, saves it, and ``repro`` replays it on CPU."""
    import io

    from .errors import import_torch

    import_torch(None, "demo --guard (a training loop)")

    import transformers

    from .guard import BatchIndexError, guard
    from .guard.errors import MARKER
    from .repro import run_repro

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    with tempfile.TemporaryDirectory(prefix="hf-vocab-audit-demo-") as tmp:
        folder = build_demo_checkpoint(keep or Path(tmp) / "tiny-llama", broken=False)
        evidence = folder / "guard-evidence"
        print("A training script (the checkpoint itself is healthy):\n")
        print("    " + GUARD_SCRIPT.format(folder=folder, evidence=evidence).replace("\n", "\n    "))
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=False)
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
        tokenizer.add_special_tokens({"pad_token": "<pad>"})
        g = guard(model, tokenizer, evidence_dir=evidence)
        collate = g.wrap(transformers.DataCollatorWithPadding(tokenizer))
        texts = [" ".join(WORDS[:12]), " ".join(WORDS[12:18])]
        try:
            collate([tokenizer(t) for t in texts])
        except BatchIndexError as err:
            caught = err
        else:
            print("the guard did not catch the bug")
            return 1
        print("The guard stops that batch on the host, before .to(device):\n")
        print(f"BatchIndexError: {str(caught).split(MARKER)[0].rstrip()}\n")
        print(f"$ hf-vocab-audit repro {caught.evidence} {folder}\n")
        out = io.StringIO()
        code = run_repro(Path(caught.evidence or ""), folder, weights=False, out=out)
        text = out.getvalue()
        head, _, trace = text.partition("\n\nTraceback")
        print(head)
        frames = [line.strip() for line in trace.splitlines() if line.strip().startswith("File ")]
        if frames:
            print(f"  (raised in {frames[-1]})")
        print(f"(exit {code}: reproduced on CPU in a shape twin: no weights loaded)")
        if keep:
            print(f"\nThe demo checkpoint is kept in {folder}, the bad batch in {evidence}")
        print("\nFix: model.resize_token_embeddings(len(tokenizer)) after adding the pad token.")
        return 0 if code == 1 else 1

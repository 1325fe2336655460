"""Chat fixtures: tiny Llama checkpoints with ChatML markers (resized or not), chat templates, and a harness
that runs TRL's own dataset preparation and one loss step on CPU to decide what a test expects."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from builders import checkpoint

MARKERS = ["<|im_start|>", "<|im_end|>"]
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# ChatML with tools in a system block and {% generation %} around each assistant answer and its <|im_end|>.
CHATML_GEN = (
    "{% if tools %}<|im_start|>system\n{% for t in tools %}{{ t['function']['name'] }} {% endfor %}<|im_end|>\n"
    "{% endif %}"
    "{% for m in messages %}{% if m['role'] == 'system' and not loop.first %}"
    "{{ raise_exception('System message must be first') }}{% endif %}"
    "{% if m['role'] == 'assistant' %}<|im_start|>assistant\n{% generation %}{{ m['content'] }}<|im_end|>"
    "{% endgeneration %}\n{% else %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# The same, but the generation block ends before <|im_end|>: the end of the turn is never learned.
CHATML_GEN_OPEN_END = CHATML_GEN.replace("{{ m['content'] }}<|im_end|>{% endgeneration %}",
                                         "{{ m['content'] }}{% endgeneration %}<|im_end|>")


def chat_checkpoint(folder: Path, template: str, *, resized: bool) -> Path:
    """104 words + specials; the two markers are ids 104 and 105: covered by the rows only when ``resized``."""
    return checkpoint(folder, "llama", rows=106 if resized else 104, tokenizer_vocab=104, added_special=MARKERS,
                      chat_template=template)


def chat_models(root: Path) -> dict[str, Path]:
    """Healthy (resized) and broken checkpoints, and templates without a generation block or ending it early."""
    return {
        "good": chat_checkpoint(root / "good", CHATML_GEN, resized=True),
        "bad": chat_checkpoint(root / "bad", CHATML_GEN, resized=False),
        "plain": chat_checkpoint(root / "plain", CHATML, resized=True),
        "open_end": chat_checkpoint(root / "open_end", CHATML_GEN_OPEN_END, resized=True),
    }


def trl_outcome(model_dir: Path, rows: list[dict[str, Any]], trainer: str, out: Path, *, processor: bool = False,
                **config: Any) -> dict[str, Any]:
    """What TRL does with ``rows``: {"stage": "prepare"|"forward"|"ok", "error": str|None, "dataset": prepared}.

    Builds the trainer (which prepares the dataset: render, tokenize, mask, truncate, drop), collates the
    first rows and computes the loss once on CPU. ``processor``: no processing class is passed, so TRL loads
    its default (``AutoProcessor.from_pretrained`` of the model), as a script that names only the model does."""
    trl = pytest.importorskip("trl")
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer

    classes = {"sft": (trl.SFTTrainer, trl.SFTConfig), "dpo": (trl.DPOTrainer, trl.DPOConfig),
               "kto": (trl.KTOTrainer, trl.KTOConfig)}
    trainer_cls, config_cls = classes[trainer]
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    args = config_cls(output_dir=str(out), report_to=[], per_device_train_batch_size=2, use_cpu=True,
                      dataset_num_proc=None, **config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tr = trainer_cls(model=model, args=args, train_dataset=Dataset.from_list(rows),
                             processing_class=None if processor else tok)
        except Exception as exc:
            return {"stage": "prepare", "error": f"{type(exc).__name__}: {exc}", "dataset": None}
        ds = tr.train_dataset
        if len(ds) == 0:
            return {"stage": "ok", "error": None, "dataset": ds}
        batch = tr.data_collator([ds[i] for i in range(min(2, len(ds)))])
        try:
            tr.compute_loss(tr.model, tr._prepare_inputs(batch))
        except Exception as exc:
            return {"stage": "forward", "error": f"{type(exc).__name__}: {exc}", "dataset": ds}
    return {"stage": "ok", "error": None, "dataset": ds}


def trl_template(name: str) -> str:
    """A real public chat template as TRL ships it for identity comparison (``trl/chat_templates/<name>.jinja``:
    the model repos' own files, e.g. ``qwen3``, ``llama3``, ``llama3_1``, and TRL's patched ``*_training``)."""
    trl = pytest.importorskip("trl")
    return (Path(trl.__file__).parent / "chat_templates" / f"{name}.jinja").read_text(encoding="utf-8")

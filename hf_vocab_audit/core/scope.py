"""The scopes rules are grouped by: what a rule reads. In ``core`` (not beside the rule registry) because a facts
source declares which scopes its facts can feed (``facts.sources.FactsSource.cannot``), and the facts layer
sits below the rules."""

from __future__ import annotations

import enum


class Scope(str, enum.Enum):
    """What a rule reads: the checkpoint's files (static), a streamed dataset, the embedding matrices, or a
    live training batch (the guard)."""

    STATIC = "static"
    DATASET = "dataset"
    WEIGHTS = "weights"
    BATCH = "batch"  # checked by the runtime guard on live batches, never by an audit
    GGUF = "gguf"  # facts only a GGUF file has (llama.cpp's format): run by `check model.gguf`
    GGUF_SOURCE = "gguf-source"  # a GGUF against its HF checkpoint: `check model.gguf --source HF_DIR`
    TARGET = "target"  # what a converter or engine will do with a checkpoint: `check DIR --target gguf|vllm`
    BASE = "base"  # a full checkpoint against the one it was fine-tuned from: `check DIR --base BASE`
    BASE_ROWS = "base-rows"  # the same pair's embedding rows, read with `--weights`
    DRAFT = "draft"  # a target against its speculative-decoding draft: `check DIR --draft DRAFT`
    SETTINGS = "settings"  # what the target's own settings file asked and the gate did not obey: run by the gate

    def __str__(self) -> str:
        return self.value


__all__ = ["Scope"]

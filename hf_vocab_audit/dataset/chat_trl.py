"""The template TRL's SFTTrainer renders with under assistant-only loss, decided by the installed TRL itself.

With ``assistant_only_loss=True`` and a chat template without ``{% generation %}`` markers, SFTTrainer (trl
1.16) calls ``trl.chat_template_utils.get_training_chat_template(processing_class)``: for a stock template it
knows (Llama-3, Gemma, Gemma-3, gpt-oss, Qwen, Phi-3, ...) that returns TRL's training template, which it
renders every row with (prompt, completion and mask alike); for any other it raises (``ValueError: The chat
template is not training-compatible ...``) before a row is prepared. Older TRL versions did no swap and
stopped at the first row whose assistant mask was empty (``RuntimeError: ... no assistant tokens``).

So the scan asks the installed TRL (its own entry point, never a copy of its templates): the verdict is the
trainer's for the TRL that is installed where the scan runs. Where TRL is not installed the verdict assumes
a TRL that does not patch the template, and the finding says so. Importing trl costs seconds (it imports
transformers' tokenizer classes and torch): only a split with assistant-only loss and a template without
markers pays it, once per process.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import first_line
from .chat_budget import RowMeter, SplitSpend, compiled, over_budget_message, transformers_environment

ENTRY_POINT = "trl.chat_template_utils.get_training_chat_template"
NOT_INSTALLED = (
    "assistant-only loss is on and the chat template has no {% generation %} block, so every assistant mask "
    "is empty; decided without TRL (not installed here), assuming a TRL that does not patch this template: "
    "TRL >= 1.x swaps in its own training template for the stock templates it knows (Llama-3, Gemma, gpt-oss, "
    "Qwen, ...) and trains, refuses any other template, and older TRL stops at the first row without assistant "
    "tokens; install the trl the training runs with (pip install trl) to decide as it does")
# The special-token roles a tokenizer's constructor takes (the template sees them as bos_token, ...).
SPECIAL_ARGS = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")


@dataclass(frozen=True)
class TrainingTemplate:
    """What TRL renders with: its training template (``template``), or nothing (``template`` None: it refuses,
    or TRL is not there to ask); ``message`` says which, naming the TRL version."""

    template: str | None
    message: str


def trl_version() -> str | None:
    """The installed trl's version, None when it is not installed (nothing imported)."""
    if importlib.util.find_spec("trl") is None:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trl")
    except PackageNotFoundError:
        return "unknown"


def training_template(template: str, special: dict[str, str], backend: Any) -> TrainingTemplate:
    """Ask the installed TRL what it trains ``template`` (no generation markers) with under assistant-only
    loss. ``backend``: the tokenizer (a ``tokenizers.Tokenizer``) TRL's processing class wraps."""
    found = trl_version()
    if found is None:
        return TrainingTemplate(None, NOT_INSTALLED)
    return _ask_trl(template, tuple(sorted((k, v) for k, v in special.items() if k in SPECIAL_ARGS)),
                    _serialized(backend), found)


@contextlib.contextmanager
def _budgeted_renders() -> Iterator[None]:
    """TRL decides the swap by rendering the checkpoint's template (``supports_tool_calling``,
    ``is_chat_template_prefix_preserving``) through transformers, whose sandbox has no budget: a template that
    loops without end would stall the gate there. For the call, transformers compiles templates in the scan's
    budgeted sandbox (``chat_budget.compiled``: every render goes through ``_compile_jinja_template``) and they
    render under one row's budget. The plan runs before the scan's threads and processes start."""
    from transformers.utils import chat_template_utils as ctu

    transformers_environment()  # compiled() builds on it: taken before the swap
    original = ctu._compile_jinja_template
    ctu._compile_jinja_template = compiled
    try:
        with RowMeter(SplitSpend(), lambda: 0):
            yield
    finally:
        ctu._compile_jinja_template = original


def _serialized(backend: Any) -> str | None:
    to_str = getattr(backend, "to_str", None)
    return to_str() if callable(to_str) else None


@functools.lru_cache(maxsize=8)
def _ask_trl(template: str, special: tuple[tuple[str, str], ...], tokenizer_json: str | None,
             version: str) -> TrainingTemplate:
    try:
        from tokenizers import Tokenizer, models
        from transformers import PreTrainedTokenizerFast
        from trl.chat_template_utils import get_training_chat_template
    except Exception as exc:  # noqa: BLE001 - a broken trl install: say so rather than guess
        return TrainingTemplate(None, f"{NOT_INSTALLED} (importing {ENTRY_POINT} failed: "
                                      f"{exc.__class__.__name__}: {first_line(exc)})")
    # The tokenizer's own vocabulary where it has one: the swap is decided by the template text (and by what
    # rendering it raises); a tokenizer without tokenizer.json gets a stand-in vocabulary.
    backend = Tokenizer.from_str(tokenizer_json) if tokenizer_json else Tokenizer(models.WordLevel({"<unk>": 0}, "<unk>"))
    processing_class = PreTrainedTokenizerFast(tokenizer_object=backend, **dict(special))
    processing_class.chat_template = template
    try:
        with _budgeted_renders():
            patched = get_training_chat_template(processing_class)
    except Exception as exc:  # noqa: BLE001 - what TRL raises is the verdict: its trainer raises the same at start
        budget = over_budget_message(exc)
        if budget is not None:  # the checkpoint's template, not TRL: bounded like every render of the scan
            return TrainingTemplate(None, f"assistant-only loss is on and the chat template has no {{% generation %}} "
                                          f"block; TRL {version} renders it to decide whether to swap it, and that "
                                          f"render went past the scan's budget ({budget})")
        return TrainingTemplate(None, f"assistant-only loss is on and the chat template has no {{% generation %}} "
                                      f"block; TRL {version} refuses it before preparing a row "
                                      f"({exc.__class__.__name__}: {first_line(exc)})")
    if patched is None:  # TRL found markers after all: it renders with the template as it is
        return TrainingTemplate(template, f"TRL {version} trains with the tokenizer's template as it is")
    return TrainingTemplate(str(patched), f"assistant-only loss: TRL {version} swaps in its training template "
                                          f"for this stock template ({ENTRY_POINT}); rows rendered with it")

"""HVA556/HVA557: what a rendered chat row silently loses (``dataset/chat_content.py`` decides it).

Neither stops a run: the template renders without error and the loss looks healthy, but the model trains on
a different answer than the data holds, or on sequences that start with a BOS it never sees at inference.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..core.findings import Severity
from ..dataset import checks as k
from .dataset_hits import dataset_hit, each_violation
from .registry import Hit, Scope, rule

if TYPE_CHECKING:
    from ..dataset.scan import DatasetFacts


@rule("HVA556", "dataset-chat-content-dropped", Severity.WARNING, scope=Scope.DATASET)
def dataset_chat_content_dropped(df: DatasetFacts) -> Iterator[Hit]:
    """The chat template does not render part of a trained assistant turn (its `tool_calls`, its
    `reasoning_content`, the `<think>` block or the `content` beside a tool call) or the row's `tools`: the
    model trains on an empty or different answer than the data holds.

    Why:
    A template renders only the fields it knows, in the forms it knows, and drops the rest without a word:
    Llama-3's drops `tool_calls` (a tool-call turn trains as an empty answer); Llama-3.1's renders the tool call
    and drops the `content` beside it; Qwen3's strips the reasoning of every assistant turn before the last user
    query, DeepSeek-R1's (distills) the `<think>` block of every assistant turn; most drop `reasoning_content`
    altogether. TRL renders the row that way and trains on it with a healthy loss (axon-rl/gem#44,
    THUDM/slime#330, huggingface/trl#6363, unslothai/unsloth#3437). The check looks for the substance of each
    trained field in the rendered text (the answer and reasoning text, each tool call's name, argument names and
    values, each tool's name), so a template that reformats what it keeps (tool calls as JSON, trimmed
    whitespace) is not flagged.

    Fix:
    Use a template that renders the fields the data holds (a training variant: TRL ships patched Qwen3
    templates that keep every turn's reasoning), split multi-turn reasoning conversations into one row per
    assistant turn, move the text into the field the template renders, or drop the field from the data if
    losing it is intended.
    """
    for source, split, column, v in each_violation(df, k.CHAT_CONTENT_DROPPED):
        yield dataset_hit(source, split, column, v, "whose trained turns hold content the chat template does "
                          "not render (value = the fields lost and their turns)")


@rule("HVA557", "dataset-double-bos", Severity.WARNING, scope=Scope.DATASET)
def dataset_double_bos(df: DatasetFacts) -> Iterator[Hit]:
    """A training sequence starts with two BOS tokens: the text already holds the BOS string (a chat
    template's `{{ bos_token }}`) and the tokenizer's post-processor adds another.

    Why:
    TRL 1.16 tokenizes turn lists with `apply_chat_template(tokenize=True)`, which adds no special tokens,
    but plain strings (a `text` column, prompt-completion and preference strings) with `tokenizer(text)`,
    which does. Text rendered by a chat template beforehand (or by a formatting function) then starts with
    two BOS: the model trains on a prefix it never sees at inference, and generation quality degrades
    quietly (open-r1#462, deepseek-ai/DeepSeek-R1#151, vllm-project/vllm#27515, huggingface/trl#1668).

    Fix:
    Keep the data as turns (`messages` or prompt/completion turn lists) so TRL renders and tokenizes them
    itself, or strip the leading BOS string from the pre-rendered text (or tokenize it with
    `add_special_tokens=False` in your own pipeline).
    """
    for source, split, column, v in each_violation(df, k.DOUBLE_BOS):
        yield dataset_hit(source, split, column, v, "whose ids start with two BOS tokens (value = the BOS id)")

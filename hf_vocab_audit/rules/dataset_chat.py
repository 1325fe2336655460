"""HVA55x: chat and instruction splits rendered as TRL renders them (``--dataset`` with TRL's formats).

Ids past the embedding rows in a rendered row stay HVA501 (with the turn); these rules are what only a
rendered conversation shows: the template refusing a row, assistant masks that leave nothing to learn,
truncation that cuts the whole answer, a prompt that is not a prefix of prompt+completion, and a trained
span that never ends with an end-of-turn token.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..core.findings import Location, Severity
from ..dataset import checks as k
from .dataset_hits import dataset_hit, each_violation, where
from .registry import Hit, Scope, rule

if TYPE_CHECKING:
    from ..dataset.scan import DatasetFacts


def _split_problems(df: DatasetFacts, check: str) -> Iterator[Hit]:
    for s in df.splits:
        for c, message in s.chat_problems:
            if c == check:
                yield Hit(f"split {s.split!r} ({s.format}): {message}", Location(file=s.source, split=s.split),
                          details={"format": s.format})


@rule("HVA550", "dataset-chat-template-refuses-row", Severity.ERROR, scope=Scope.DATASET)
def dataset_chat_template_refuses_row(df: DatasetFacts) -> Iterator[Hit]:
    """The chat template raises on rows of the dataset (its `raise_exception`, an unknown role, a system
    turn that is not first, turns that do not alternate), or the tokenizer has no chat template at all.

    Why:
    TRL renders every row with `apply_chat_template` while preparing the dataset; the first such row stops
    the run with the template's own `TemplateError` (or, with no template, `ValueError: Cannot use chat
    template functions because tokenizer.chat_template is not set`), after the model has loaded.

    Fix:
    Drop or repair those rows (merge consecutive turns of one role, move the system turn first, map the
    roles to those the template knows), or give the tokenizer the template the data was written for.
    """
    yield from _split_problems(df, k.CHAT_NO_TEMPLATE)
    for source, split, column, v in each_violation(df, k.CHAT_REFUSED):
        yield dataset_hit(source, split, column, v, "that the chat template refuses (value = its message)")


@rule("HVA551", "dataset-chat-assistant-mask-empty", Severity.ERROR, scope=Scope.DATASET)
def dataset_chat_assistant_mask_empty(df: DatasetFacts) -> Iterator[Hit]:
    """Assistant-only loss is asked for, but the assistant mask is empty: the template has no
    `{% generation %}` block, or a row has no assistant turn.

    Why:
    `apply_chat_template(..., return_assistant_tokens_mask=True)` returns an all-zero mask (with only a
    warning) when the template has no `{% generation %}` block: every label is -100, the run trains on
    nothing while its loss looks healthy (marin-community/marin#7237: the stock Llama-3.1, Qwen3, Gemma-3 and
    gpt-oss templates; huggingface/trl#4147). TRL's SFTTrainer (1.16) then calls its own
    `get_training_chat_template`: for a stock template it knows (Llama-3, Gemma-3, gpt-oss, Qwen, ...) it
    trains with TRL's training template, and the scan renders the rows with that same template (no finding);
    any other template is refused (`ValueError: The chat template is not training-compatible`), and the
    finding quotes what the installed TRL says. Without TRL installed the scan cannot know which templates it
    patches: it reports the template and says so. TRL stops at the first row without assistant tokens
    (`RuntimeError: ... at least one example has no assistant tokens`). ShareGPT turns (`conversations` of
    `from`/`value`) and rows of plain strings are refused outright under assistant-only loss (`ValueError:
    ... the dataset is not conversational`): TRL checks the format before it converts ShareGPT turns.

    Fix:
    Wrap each assistant turn of the template (its end-of-turn token included) in `{% generation %}` ...
    `{% endgeneration %}`, or train on whole sequences (`assistant_only_loss=False`); drop rows without an
    assistant turn; convert ShareGPT turns to `messages` of role/content (user/assistant) first; install the
    TRL the training uses where the scan runs, so a stock template is decided as it patches it.
    """
    yield from _split_problems(df, k.CHAT_MASK_EMPTY)
    for source, split, column, v in each_violation(df, k.CHAT_MASK_EMPTY):
        yield dataset_hit(source, split, column, v, "with no token in the assistant mask (value = row length)")


@rule("HVA552", "dataset-chat-completion-truncated-away", Severity.WARNING, scope=Scope.DATASET)
def dataset_chat_completion_truncated_away(df: DatasetFacts) -> Iterator[Hit]:
    """Truncation to `max_length` leaves no token that gets a loss: the whole completion or assistant answer
    is cut away.

    Why:
    With `truncation_mode="keep_start"` a prompt that fills `max_length` keeps only prompt tokens, all
    labelled -100. TRL drops those rows silently (SFT after truncation, DPO when the prompt alone fills
    `max_length`); a pipeline that keeps them gets `nan` losses from batches made only of such rows. Either
    way the data you meant to train on is not trained on.

    Fix:
    Raise `max_length`, shorten the prompts (system prompt, few-shot examples), or use
    `truncation_mode="keep_end"`.
    """
    for source, split, column, v in each_violation(df, k.CHAT_TRUNCATED):
        yield dataset_hit(source, split, column, v, "whose tokens with a loss are all cut by max_length truncation "
                          "(value = length before truncation)")


@rule("HVA553", "dataset-chat-prompt-not-a-prefix", Severity.WARNING, scope=Scope.DATASET)
def dataset_chat_prompt_not_a_prefix(df: DatasetFacts) -> Iterator[Hit]:
    """The prompt's tokens are not a prefix of the prompt+completion tokens (the template renders the prompt
    alone differently, or tokens merge across the boundary).

    Why:
    TRL starts the completion where the two token lists diverge, so the end of the prompt is left out of
    the training sequence: the model is trained on a context that differs from the one it sees at
    inference (TRL warns once, for the whole dataset).

    Fix:
    End prompts on a token boundary (a trailing space or newline usually merges), or use a chat template
    that renders the generation prompt exactly as the start of the assistant turn.
    """
    for source, split, column, v in each_violation(df, k.CHAT_NOT_PREFIX):
        yield dataset_hit(source, split, column, v, "whose prompt tokens are not a prefix of prompt+completion "
                          "(value = prompt tokens left out)")


@rule("HVA554", "dataset-chat-eos-not-learned", Severity.WARNING, scope=Scope.DATASET)
def dataset_chat_eos_not_learned(df: DatasetFacts) -> Iterator[Hit]:
    """The last span of tokens that get a loss holds no eos or end-of-turn token: the model is never trained
    to stop after that answer.

    Why:
    A `{% generation %}` block that ends before the end-of-turn token, a completion cut by truncation, or an
    eos that is masked out all leave the stop token without a label; the loss looks healthy and the model
    rambles at inference (transformers #23530, trl #976).

    Fix:
    Put the end-of-turn token inside `{% generation %}`; keep eos in the labels (a pad token distinct from
    eos); raise `max_length` so answers are not cut.
    """
    for source, split, column, v in each_violation(df, k.CHAT_EOS_NOT_LEARNED):
        yield dataset_hit(source, split, column, v, "whose trained span ends without eos or an end-of-turn token "
                          "(value = the last trained token id)")


@rule("HVA555", "dataset-chat-template-render-over-budget", Severity.ERROR, scope=Scope.DATASET)
def dataset_chat_template_render_over_budget(df: DatasetFacts) -> Iterator[Hit]:
    """Rendering a row through the chat template went past the scan's budget: too long, too large a string,
    too deep (the rows after it are still scanned; past the split's own budget the rest is a coverage gap).

    Why:
    A chat template is code that ships with the checkpoint. Jinja's sandbox stops it from reaching Python,
    not from working: nested loops, a string doubled in a loop, a joined generated list, a recursive macro,
    or thousands of `{% generation %}` blocks make `apply_chat_template` run for hours or ask for gigabytes
    on one row. TRL renders every row while preparing the dataset, so the training job hangs or is killed
    before its first step, and this scan would too. Budget per row: 5 s, 4,000,000 characters in any one
    string (or 16 characters per character of the row's turns, when more), counts of at most 100,000;
    per split: 20 s plus 50 ms per row, 256,000,000 characters plus 64,000 per row.

    Fix:
    Use the template the model was released with (or one of TRL's training templates); a template that
    loops over the whole conversation inside a loop over it, or builds strings in a loop, needs rewriting.
    Split conversations of thousands of turns into shorter rows.
    """
    for source, split, column, v in each_violation(df, k.CHAT_OVER_BUDGET):
        yield dataset_hit(source, split, column, v, "whose render through the chat template went past the budget "
                          "(value = what it asked for)")


@rule("HVA558", "dataset-chat-processor-not-buildable", Severity.WARNING, scope=Scope.DATASET)
def dataset_chat_processor_not_buildable(df: DatasetFacts) -> Iterator[Hit]:
    """The tokenizer files name a processor class that `AutoProcessor` cannot build from the folder (no
    processor config of its own): reported once, and the rows are rendered with the tokenizer's template.

    Why:
    `processor_class` in `tokenizer_config.json`, and none of `processor_config.json`,
    `preprocessor_config.json`, `video_preprocessor_config.json` to build the image or audio part from.
    Text-only checkpoints of multimodal families ship so (Gemma-3's `tokenizer_config.json` names
    `Gemma3Processor`). A trainer given no processing class loads `AutoProcessor.from_pretrained(model)`,
    which raises (`OSError: Can't load image processor ...`) before any row is read; passing the tokenizer
    (`processing_class=tokenizer`) is the usual call, and then the tokenizer's template renders the rows.
    The rows are not at fault, so they are checked as the tokenizer renders them.

    Fix:
    Pass the tokenizer as the processing class (`SFTTrainer(..., processing_class=tokenizer)`), or remove
    `processor_class` from `tokenizer_config.json` in a text-only upload, or add the processor's config files.
    """
    tok = df.model.tokenizer
    folder = str(tok.folder if tok is not None else df.model.model_dir)
    splits: dict[str, list[str]] = {}  # message -> the splits it was found for (one folder: one message)
    for s in df.splits:
        for c, message in s.chat_problems:
            if c == k.CHAT_PROCESSOR_UNBUILT:
                splits.setdefault(message, []).append(s.split)
    for message, names in splits.items():
        yield Hit(message, Location(file=folder), details={"splits": names})


__all__ = ["where"]

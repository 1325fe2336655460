"""HVA57x: vision chat splits (TRL's ``images`` / ``videos`` columns): placeholders against the media of each row,
and the expanded placeholders against ``max_length`` (dataset/chat_media.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..core.findings import Severity
from ..dataset import checks as k
from .dataset_hits import dataset_hit, each_violation
from .registry import Hit, Scope, rule

if TYPE_CHECKING:
    from ..dataset.scan import DatasetFacts


@rule("HVA570", "dataset-chat-media-placeholder-mismatch", Severity.ERROR, scope=Scope.DATASET)
def dataset_chat_media_placeholder_mismatch(df: DatasetFacts) -> Iterator[Hit]:
    """A row of a vision chat split renders a number of image (or video) placeholders that differs from the
    images (videos) the row carries: image parts that do not match the `images` column, or a placeholder
    string (`<image>`, `<|image_pad|>`) written into the text.

    Why:
    TRL's vision collator prepares each batch during training: `prepare_multimodal_messages` raises
    `ValueError: Number of images provided (2) does not match number of image placeholders (1)`, or the
    processor raises `ValueError: The total number of <image> tokens in the prompts should be the same as
    the number of images passed` (the model's "Image features and image tokens do not match" where no
    processor checks): at the first batch that holds the row, hours into the run (LlamaFactory#5964). A
    template that refuses the row once its image parts are in is the same crash, and reported here with its
    message. Counted for the processors whose check is known (Llava, Llava-NeXT, Llava-OneVision, Qwen2-VL,
    Qwen2.5-VL, Qwen3-VL: the image token; Gemma-3: its `<start_of_image>`); video placeholders against the
    row's `videos` (a video placeholder in a row without videos makes the processor raise "no videos were
    passed").

    Fix:
    Give each row one `{"type": "image"}` part per entry of its `images` (or plain string contents, into which
    TRL inserts them), and remove placeholder strings from the text.
    """
    for source, split, column, v in each_violation(df, k.CHAT_MEDIA_MISMATCH):
        yield dataset_hit(source, split, column, v, "whose placeholders do not match the row's media (value = "
                          "placeholders for media, or the error)")


@rule("HVA571", "dataset-chat-media-truncated", Severity.ERROR, scope=Scope.DATASET)
def dataset_chat_media_truncated(df: DatasetFacts) -> Iterator[Hit]:
    """Truncation to `max_length` cuts a row's expanded image placeholders: the row needs a longer
    `max_length` than the trainer's.

    Why:
    The processor expands each image placeholder into the image's tokens (a fixed count for Llava, one per
    merged patch of the resized image for Qwen2-VL) before TRL's collator truncates to `max_length`. Cutting
    into them leaves fewer image tokens than image features: `ValueError: Mismatch in 'image' token count
    between text and 'input_ids'` from the processor, or "Image features and image tokens do not match" from
    the model, at the first batch holding the row (LlamaFactory#7376, Qwen3-VL#556). The length is computed
    from the processor's files and each image's header; where an image cannot be read, from the
    `max_pixels` bound (the value says which).

    Fix:
    Raise `max_length` to the length the row needs (or `max_length=None`), lower `max_pixels`, or drop or
    shorten the rows.
    """
    for source, split, column, v in each_violation(df, k.CHAT_MEDIA_TRUNCATED):
        yield dataset_hit(source, split, column, v, "whose expanded image placeholders are cut by max_length "
                          "truncation (value = the max_length the row needs)")

"""Rows of a vision chat split (TRL's ``images`` / ``videos`` columns): placeholders against the media each row
carries, and the expanded length against ``max_length``.

TRL's vision collator (``DataCollatorForVisionLanguageModeling``) works per batch, during training: it
inserts one ``{"type": "image"}`` part per image before the first user turn whose content is a string
(``prepare_multimodal_messages``; a row whose image parts do not match its images raises there), renders
the row through the processor's template, and the processor expands each placeholder string (``<image>``,
``<|image_pad|>``) into the image's tokens, then truncates to ``max_length``. A row whose placeholders do not
match its images raises ``ValueError: The total number of <image> tokens ... should be the same as the
number of images``; truncation that cuts an expanded placeholder raises ``Mismatch in `image` token count
between text and `input_ids``` (the model's "Image features and image tokens do not match" without the
processor's check): either way hours into training, at the first batch holding the row. Measured with
transformers 5.24 (LlavaProcessor, Qwen2VLProcessor) in tests/dataset/test_chat_media.py.

The expansion is computed from the processor's files without decoding pixels: fixed for Llava (the crop
size over the patch size), from the image header for Qwen2-VL's dynamic resolution (``PIL.Image.open`` reads
the size only), or its ``max_pixels`` bound when the image cannot be read (the report says which). Only rows
that carry media (or a placeholder string without media) do this work.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import AuditError
from ..facts.tokenizer.bounded_calls import MAX_TEXT_CHARS, library_call
from ..io.jsonfile import read_json_object
from .arrays import row_violation
from .chat_budget import RowMeter, input_chars, over_budget_message, split_spend
from .chat_formats import LM, PROMPT_COMPLETION
from .checks import CHAT_MEDIA_MISMATCH, CHAT_MEDIA_TRUNCATED
from .summary import ScanContext, Violation

IMAGE_COLUMNS = ("images", "image")  # TRL's vision columns: a list of images, or one image
VIDEO_COLUMNS = ("videos", "video")
QWEN2_VL = ("Qwen2VLProcessor", "Qwen2_5_VLProcessor")
GEMMA3 = "Gemma3Processor"
# The processors whose placeholder check is known (each raises on a count that differs from the images):
# the kind of placeholder string each counts in the text. Others (PaliGemma inserts its own) are not counted.
COUNTED_PLACEHOLDER = {"LlavaProcessor": "image", "LlavaNextProcessor": "image", "LlavaOnevisionProcessor": "image",
                       "Qwen2VLProcessor": "image", "Qwen2_5_VLProcessor": "image", "Qwen3VLProcessor": "image",
                       GEMMA3: "boi"}
QWEN2_VL_IMAGE = ("Qwen2VLImageProcessor", "Qwen2VLImageProcessorFast", "Qwen2VLImageProcessorPil")
MAX_HEADER_BYTES = 64 * 1024 * 1024  # an image file past this is not opened (its size stays unknown)
MAX_HEADERS_PER_ROW = 1024  # images of a row past this are not opened: the max_pixels bound stands for them


@dataclass(frozen=True)
class Expansion:
    """How many tokens one image placeholder becomes: ``fixed`` for every image, or Qwen2-VL's dynamic
    resolution (``smart_resize`` to multiples of patch * merge within [min_pixels, max_pixels]); ``framed``
    (Gemma-3): the placeholder becomes ``"\\n\\n" boi, the image tokens, eoi "\\n\\n"``, ``lead`` tokens each
    ``"\\n\\n"``."""

    source: str  # the files and keys it comes from, for the report
    fixed: int | None = None
    framed: bool = False
    lead: int = 0
    patch: int = 14
    merge: int = 2
    min_pixels: int = 56 * 56
    max_pixels: int = 28 * 28 * 1280

    def tokens(self, size: tuple[int, int] | None) -> tuple[int, bool]:
        """(tokens, exact) for an image of ``size`` (width, height); unknown size: the max_pixels bound."""
        if self.fixed is not None:
            return self.fixed, True
        unit = self.patch * self.merge
        if size is None or min(size) < 1 or max(size) / min(size) > 200:  # the processor refuses past 200:1
            return max(1, self.max_pixels // (unit * unit)), False
        width, height = size
        h, w = _smart_resize(height, width, unit, self.min_pixels, self.max_pixels)
        return (h // unit) * (w // unit), True

    def block(self, size: tuple[int, int] | None) -> tuple[int, int, bool]:
        """(tokens that replace the placeholder, offset of its last image token in them, exact)."""
        n, exact = self.tokens(size)
        if self.framed:
            return 2 * self.lead + n + 2, self.lead + n, exact
        return n, n - 1, exact


def _smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """transformers' ``qwen2_vl.smart_resize``: both sides multiples of ``factor``, the area within bounds."""
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


@dataclass(frozen=True)
class MediaSpec:
    """What a vision split's rows are checked with (picklable: travels to the scan's workers)."""

    images: str | None  # the image column ("images" or "image")
    videos: str | None
    image_token: str | None  # the placeholder string the processor expands
    video_token: str | None
    expansion: Expansion | None  # None: not computed for this processor (only counts are checked)
    folder: str | None  # image paths are read (headers only) inside this folder (resolved), never outside it
    processor: str | None = None  # the processor class AutoProcessor loads

    def describe(self) -> str:
        """What the split's media are checked with, for the report's settings line."""
        columns = " and ".join(repr(c) for c in (self.images, self.videos) if c)
        marks = ", ".join(f"{t!r}" for t in (self.image_token, self.video_token) if t) or \
            f"not counted ({self.processor or 'no processor class'}: not one whose placeholder check is known)"
        tokens = (f"{self.expansion.fixed} tokens per image" if self.expansion and self.expansion.fixed is not None
                  else "tokens per image from each image's header" if self.expansion else
                  "expansion not computed for this processor")
        source = f" ({self.expansion.source})" if self.expansion else ""
        return f"media: {columns}, placeholders {marks}, {tokens}{source}"


MAX_CONFIG_INT = 2**31  # a size, count or pixel bound past this is no processor's: its float arithmetic overflows


def _int(raw: dict[str, Any], key: str, default: int | None) -> int | None:
    """A positive integer setting of the processor's config, else ``default`` (also for one past MAX_CONFIG_INT:
    the file is untrusted, and ``min_pixels`` of 10**400 made the size arithmetic raise OverflowError)."""
    value = raw.get(key, default)
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_CONFIG_INT
    return value if ok else default


def _config(folder: Path, name: str) -> dict[str, Any]:
    from ..facts.tree import regular_file_inside

    path = folder / name
    if not path.is_file():
        return {}
    return read_json_object(regular_file_inside(path, folder, "processor folder"))


def expansion_for(folder: Path | None, processor: str | None, lead: int = 0) -> Expansion | None:
    """The processor's expansion from its files: processor_config.json, and the image processor's settings in
    preprocessor_config.json or (transformers 5) under processor_config.json's ``image_processor``."""
    if folder is None or not folder.is_dir():
        return None
    proc = _config(folder, "processor_config.json")
    nested = proc.get("image_processor")  # transformers 5 saves the image processor inside processor_config.json
    pre = _config(folder, "preprocessor_config.json") or (nested if isinstance(nested, dict) else {})
    image_type = pre.get("image_processor_type")
    if processor in QWEN2_VL or image_type in QWEN2_VL_IMAGE:
        found = pre.get("size")
        size: dict[str, Any] = found if isinstance(found, dict) else {}
        min_pixels = _int(pre, "min_pixels", _int(size, "shortest_edge", 56 * 56))
        max_pixels = _int(pre, "max_pixels", _int(size, "longest_edge", 28 * 28 * 1280))
        return Expansion("the image processor's patch_size, merge_size, min/max pixels (Qwen2-VL dynamic resolution)",
                         patch=_int(pre, "patch_size", 14) or 14, merge=_int(pre, "merge_size", 2) or 2,
                         min_pixels=min_pixels or 56 * 56, max_pixels=max_pixels or 28 * 28 * 1280)
    if processor == "LlavaProcessor":
        patch = _int(proc, "patch_size", None)
        crop = pre.get("crop_size") if pre.get("do_center_crop", True) else pre.get("size")
        if patch is None or not isinstance(crop, dict):
            return None
        height, width = _int(crop, "height", None), _int(crop, "width", None)
        if height is None or width is None:
            return None
        extra = _int(proc, "num_additional_image_tokens", 0) or 0
        drop = 1 if proc.get("vision_feature_select_strategy", "default") == "default" else 0
        fixed = (height // patch) * (width // patch) + extra - drop
        return Expansion("processor_config.json patch_size and the image processor's crop_size (Llava)",
                         fixed=max(fixed, 1))
    if processor == GEMMA3:
        return Expansion("processor_config.json image_seq_length (Gemma-3: boi, image tokens, eoi)",
                         fixed=_int(proc, "image_seq_length", 256), framed=True, lead=lead)
    return None


def media_spec(schema: pa.Schema, facts: Any, source: str) -> MediaSpec | None:
    """The split's media columns and the processor's placeholders, or None for a text-only split."""
    from ..facts.placeholders import DEFAULT_TOKENS, read_placeholders
    from .chat_processor import processor_class

    names = set(schema.names)
    images = next((c for c in IMAGE_COLUMNS if c in names), None)
    videos = next((c for c in VIDEO_COLUMNS if c in names), None)
    if images is None and videos is None:
        return None
    tok = facts.tokenizer
    placeholders = read_placeholders(facts.model_dir, facts.config, tok.folder)
    cls = processor_class(tok.folder, facts.config.model_type)
    counted = COUNTED_PLACEHOLDER.get(cls or "")

    def token(kind: str | None) -> str | None:
        if kind is None:
            return None
        named = placeholders.token_for(kind)
        if named is not None:
            return named.content
        return next((c for c in DEFAULT_TOKENS[kind] if tok.backend.token_to_id(c) is not None), None)

    lead = len(tok.backend.encode("\n\n", add_special_tokens=False).ids) if cls == GEMMA3 else 0
    path = Path(source)
    folder = str((path if path.is_dir() else path.parent).resolve()) if path.exists() else None
    return MediaSpec(images, videos, token(counted), token("video" if counted else None),
                     expansion_for(tok.folder, cls, lead), folder, cls)


def _items(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def image_size(item: Any, folder: str | None) -> tuple[int, int] | None:
    """(width, height) from the image's header (never decoded): a path inside the data folder, or the
    ``bytes`` of ``datasets``' Image feature; None when neither can be read."""
    import warnings

    try:
        from PIL import Image
    except ImportError:  # Pillow is not a dependency of the base install: the bound stands for every image
        return None
    try:
        with warnings.catch_warnings():  # DecompressionBombWarning: the header is all that is read
            warnings.simplefilter("ignore")
            return _header_size(Image, item, folder)
    except Exception:  # noqa: BLE001 - an unreadable image (or a header past PIL's bomb limit): size unknown
        return None


def _header_size(image: Any, item: Any, folder: str | None) -> tuple[int, int] | None:
    """``PIL.Image.open`` reads the header only; a path is opened only as a regular file inside ``folder``
    (after resolving links), never past MAX_HEADER_BYTES."""
    if isinstance(item, dict) and isinstance(item.get("bytes"), bytes):
        with image.open(io.BytesIO(item["bytes"])) as im:
            width, height = im.size
            return width, height
    path_value = item.get("path") if isinstance(item, dict) else item
    if not isinstance(path_value, str) or folder is None:
        return None
    root = Path(folder)  # resolved once (media_spec)
    path = (root / path_value).resolve()
    if not path.is_relative_to(root) or not path.is_file() or path.stat().st_size > MAX_HEADER_BYTES:
        return None
    with image.open(path) as im:
        width, height = im.size
        return width, height


def prepare_multimodal(turns: list[Any], images: int) -> list[Any]:
    """TRL's ``prepare_multimodal_messages`` without the image objects: one image part per image before the
    text of the first user turn whose content is a string; raises TRL's ValueError when the image parts of
    the row do not match its images."""
    out: list[Any] = []
    included = False
    for turn in turns:
        if not isinstance(turn, dict):
            out.append(turn)
            continue
        content = turn.get("content")
        if turn.get("role") == "user" and isinstance(content, str) and not included:
            turn = {**turn, "content": [*({"type": "image"} for _ in range(images)), {"type": "text", "text": content}]}
            included = True
        elif isinstance(content, str):
            turn = {**turn, "content": [{"type": "text", "text": content}]}
        out.append(turn)
    parts = sum(1 for t in out if isinstance(t, dict) and t.get("role") != "tool" and isinstance(t.get("content"), list)
                for p in t["content"] if isinstance(p, dict) and p.get("type") == "image" and p.get("image") is None)
    if parts != images:
        raise ValueError(f"Number of images provided ({images}) does not match number of image placeholders "
                         f"({parts}).")
    return out


@dataclass
class _Pending:
    """A row whose placeholders match its media, waiting for its ids (tokenized with the batch's others)."""

    row: int
    text: str
    images: list[Any]


def _render_row(r: Any, spec: MediaSpec, row: dict[str, Any]) -> tuple[str | None, str]:
    """(the mismatch, or None; the text the collator renders): raises what TRL or the template raises."""
    from .chat_render import _decoded, render_text, to_chatml

    fmt = r.fmt
    images = _items(row.get(spec.images)) if spec.images else []
    videos = _items(row.get(spec.videos)) if spec.videos else []
    if fmt.kind == LM:
        turns = _decoded(row.get(fmt.messages or "messages"))
        turns = to_chatml(turns) if fmt.sharegpt else turns
        if not isinstance(turns, list):
            return None, ""
        conversation = prepare_multimodal(turns, len(images))
    else:
        prompt, completion = _decoded(row.get("prompt")), _decoded(row.get("completion"))
        if not isinstance(prompt, list) or not isinstance(completion, list):
            return None, ""
        conversation = prepare_multimodal(prompt, len(images)) + prepare_multimodal(completion, 0)
    text, _ = render_text(r, conversation, None, {})
    for placeholder, media, kind in ((spec.image_token, len(images), "image"), (spec.video_token, len(videos), "video")):
        found = text.count(placeholder) if placeholder else 0
        if placeholder and found != media:
            return f"{found} {placeholder} for {media} {kind}(s)", text
    return None, text


def _needed(spec: MediaSpec, ids: list[int], image_id: int, images: list[Any], limit: int) -> str:
    """The row's verdict against ``limit``: "" when every expanded image token fits, else what it needs."""
    expansion = spec.expansion
    assert expansion is not None
    root = spec.folder
    blocks = [expansion.block(image_size(item, root) if expansion.fixed is None and k < MAX_HEADERS_PER_ROW
                              else None) for k, item in enumerate(images)]
    positions = [i for i, t in enumerate(ids) if t == image_id]
    if len(positions) != len(blocks):  # the placeholder string does not tokenize to one token each
        return ""
    grown = [size - 1 for size, _, _ in blocks]
    needed = positions[-1] + sum(grown[:-1]) + blocks[-1][1] + 1
    if needed <= limit:
        return ""
    how = "exact" if all(e for _, _, e in blocks) else "max_pixels bound: image size unknown"
    return f"needs max_length {needed} of {len(ids) + sum(grown)} tokens ({how})"


def _placeholders_without_media(spec: MediaSpec, seq: Any, tokenizer: Any) -> str | None:
    """A row with no media whose rendered ids hold a placeholder token (the processor expands it all the
    same; the model then finds tokens but no features)."""
    for placeholder, kind in ((spec.image_token, "image"), (spec.video_token, "video")):
        pid = tokenizer.token_to_id(placeholder) if placeholder else None
        if pid is not None and seq is not None and pid in seq.ids:
            return f"{seq.ids.count(pid)} {placeholder} for 0 {kind}(s)"
    return None


def media_violations(r: Any, batch: pa.Table | pa.RecordBatch, rendered: list[Any], column: str, row_offset: int,
                     ctx: ScanContext) -> dict[tuple[str, str, str, str], Violation]:
    """HVA570/HVA571's violations for one batch of a vision split (conversational LM and prompt-completion,
    the formats TRL's vision collator takes); only rows with media are rendered again."""
    spec: MediaSpec | None = r.media
    if spec is None or not r.fmt.conversational or r.fmt.kind not in (LM, PROMPT_COMPLETION):
        return {}
    media_columns = [c for c in (spec.images, spec.videos) if c]
    rows = batch.select([c for c in (*r.fmt.columns, *media_columns) if c in batch.column_names]).to_pylist()
    count = len(rows)
    mismatch = np.full(count, "", dtype=object)
    needed = np.full(count, "", dtype=object)
    spend = split_spend(r.budget_key)
    pending: list[_Pending] = []
    for i, row in enumerate(rows):
        done = rendered[i] if i < len(rendered) else None
        if done is None or done.error is not None or done.over_budget is not None or done.not_rendered:
            continue  # HVA550/HVA555 already say why the row does not render
        if not any(_items(row.get(c)) for c in media_columns):
            seq = next(iter(done.sequences.values()), None)
            mismatch[i] = _placeholders_without_media(spec, seq, ctx.tokenizer) or ""
            continue
        try:
            with RowMeter(spend, lambda row=row: sum(input_chars(row.get(c)) for c in r.fmt.columns)):
                found, text = _render_row(r, spec, row)
        except AuditError:
            raise
        except Exception as exc:  # noqa: BLE001 - TRL's own count check, or what the template raises
            if over_budget_message(exc) is not None:
                continue
            found, text = f"{exc.__class__.__name__}: {exc}"[:300], ""
        mismatch[i] = found or ""
        if found is None and text and len(text) <= MAX_TEXT_CHARS:  # longer: not tokenized (HVA532 on the row)
            pending.append(_Pending(i, text, _items(row.get(spec.images)) if spec.images else []))
    limit = r.settings.max_length
    image_id = ctx.tokenizer.token_to_id(spec.image_token) if spec.image_token else None
    pending = [p for p in pending if p.images]
    if limit is not None and spec.expansion is not None and image_id is not None and pending:
        encode = getattr(ctx.tokenizer, "encode_batch_fast", None) or ctx.tokenizer.encode_batch
        with library_call(ctx.tokenizer_file or "the tokenizer", "the tokenizers library failed on a rendered row"):
            encodings = encode([p.text for p in pending], add_special_tokens=False)
        for p, enc in zip(pending, encodings):
            needed[p.row] = _needed(spec, enc.ids, image_id, p.images, limit)
    out: dict[tuple[str, str, str, str], Violation] = {}
    n = ctx.max_locations
    for check, values in ((CHAT_MEDIA_MISMATCH, mismatch), (CHAT_MEDIA_TRUNCATED, needed)):
        hit = values != ""
        if hit.any():
            v = row_violation(hit, values, row_offset, n)
            if v is not None:
                out[(ctx.source, ctx.split, column, check)] = v
    return out

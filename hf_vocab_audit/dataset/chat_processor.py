"""Which chat template TRL renders a split with: the tokenizer's, or a processor's own.

TRL's trainers load ``AutoProcessor.from_pretrained(model)`` when they are given no processing class. For a
processor checkpoint (a processor class named by ``processor_config.json``, ``preprocessor_config.json``,
``video_preprocessor_config.json`` or ``tokenizer_config.json``, else a model type with a processor) that
is a ``ProcessorMixin`` whose template comes from the processor's own files, not the tokenizer's:
``chat_template.json`` (the legacy ``{"chat_template": ...}``) first, else ``chat_template.jinja``. With
neither, its ``apply_chat_template`` refuses every row ("this processor does not have a chat template")
even when ``tokenizer_config.json`` holds one. A folder without a processor class is loaded as a tokenizer
by both AutoTokenizer and AutoProcessor, and neither reads ``chat_template.json``: the report says so. A
processor class named with none of the processor's own configs beside it (a text-only Gemma-3 checkpoint's
``tokenizer_config.json`` names ``Gemma3Processor``) cannot be built: AutoProcessor raises, so the trainer
is given the tokenizer, whose template renders the rows; the folder gets one warning (HVA558).
Measured with transformers 5.24 (tests/dataset/test_chat_processor.py runs both loaders and TRL).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AuditError
from ..facts.tree import regular_file_inside
from ..io.jsonfile import read_bytes, read_json_object

LEGACY_FILE = "chat_template.json"
JINJA_FILE = "chat_template.jinja"
# Where AutoProcessor looks for a processor class, in its order (tokenizer_config.json last).
CLASS_FILES = ("processor_config.json", "preprocessor_config.json", "video_preprocessor_config.json",
               "tokenizer_config.json")
MAX_TEMPLATE_BYTES = 16 * 1024 * 1024
NO_TEMPLATE = ("the processor has no chat template of its own ({legacy} or {jinja}): AutoProcessor's "
               "apply_chat_template refuses every row")


# What AutoProcessor needs besides the tokenizer: a processor's own config (an image processor, feature
# extractor or video processor is built from one of these; transformers 5.x).
PROCESSOR_FILES = CLASS_FILES[:3]
UNBUILT = ("{cls} is named by {named}, but AutoProcessor cannot build it from this folder: it has none of "
           "{files} (a text-only checkpoint), so a trainer given no processing class stops at "
           "AutoProcessor.from_pretrained; the usual call passes the tokenizer (processing_class=tokenizer), "
           "whose template ({template}) the rows are rendered with")


@dataclass(frozen=True)
class TemplateChoice:
    """The template rows are rendered with, the file it came from, and what the report says about it."""

    template: str | None
    file: str | None
    note: str | None = None  # None: the tokenizer's template, as before (nothing to say)
    processor: str | None = None  # the processor class AutoProcessor loads, when it loads one
    unbuilt: str | None = None  # a processor class is named but cannot be built: what the report warns (HVA558)


def _inside(folder: Path, name: str) -> Path | None:
    path = folder / name
    if not path.is_file():
        return None
    return regular_file_inside(path, folder, "tokenizer folder")


def processor_class(folder: Path, model_type: str | None) -> str | None:
    """The processor class AutoProcessor would load from ``folder`` (None: it loads a tokenizer)."""
    named = _named_class(folder)
    if named is not None:
        return named[0]
    # The model type's processor: only where a processor's own config is there to load (without it the
    # processor cannot be built).
    if model_type and any(_inside(folder, name) is not None for name in CLASS_FILES[:3]):
        mapped: Any = _processor_names().get(model_type)
        return mapped if isinstance(mapped, str) else None
    return None


def _named_class(folder: Path) -> tuple[str, str] | None:
    """The processor class a file names, and the file (AutoProcessor's order)."""
    for name in CLASS_FILES:
        path = _inside(folder, name)
        if path is None:
            continue
        found = read_json_object(path).get("processor_class")
        if isinstance(found, str) and found:
            return found, name
    return None


def _processor_names() -> Any:
    """transformers' model type -> processor class table, from its light module (``auto_mappings``, 5.x):
    ``processing_auto`` imports torch (13 s and 320 MB, measured), which a scan must not pay for a table."""
    try:
        from transformers.models.auto.auto_mappings import PROCESSOR_MAPPING_NAMES
    except ImportError:  # older transformers: the table lives in processing_auto only
        from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES
    return PROCESSOR_MAPPING_NAMES


def _read_template(path: Path) -> str:
    try:
        return read_bytes(path, MAX_TEMPLATE_BYTES).decode("utf-8")
    except UnicodeDecodeError:
        raise AuditError(path, "is not valid UTF-8") from None


def _legacy_template(path: Path) -> str:
    template = read_json_object(path, MAX_TEMPLATE_BYTES).get("chat_template")
    if not isinstance(template, str):
        raise AuditError(path, "has no chat_template string (AutoProcessor reads {\"chat_template\": \"...\"})")
    return template


def choose_template(folder: Path | None, model_type: str | None, tokenizer_template: str | None,
                    tokenizer_file: str | None) -> TemplateChoice:
    """The template TRL's default processing class renders with (see the module docstring)."""
    if folder is None or not folder.is_dir():  # live objects: the memory source already took the processor's
        return TemplateChoice(tokenizer_template, tokenizer_file)
    legacy = _inside(folder, LEGACY_FILE)
    cls = processor_class(folder, model_type)
    if cls is not None and not any(_inside(folder, name) is not None for name in PROCESSOR_FILES):
        # Only tokenizer_config.json names it (Gemma-3's text checkpoints: Gemma3Processor): AutoProcessor
        # raises (OSError: Can't load image processor), a fact about the folder, not about the rows.
        named = _named_class(folder)
        return TemplateChoice(tokenizer_template, tokenizer_file, unbuilt=UNBUILT.format(
            cls=cls, named=named[1] if named else "the model type", files=", ".join(PROCESSOR_FILES),
            template=tokenizer_file or "none"))
    if cls is None:
        if legacy is None:
            return TemplateChoice(tokenizer_template, tokenizer_file)
        return TemplateChoice(tokenizer_template, tokenizer_file,
                              f"{LEGACY_FILE} is not read: no processor class, so AutoTokenizer and AutoProcessor "
                              f"both load the tokenizer and its template ({tokenizer_file or 'none'})")
    if legacy is not None:
        return TemplateChoice(_legacy_template(legacy), LEGACY_FILE,
                              f"the processor's {LEGACY_FILE} ({cls}: AutoProcessor renders with it)", cls)
    jinja = _inside(folder, JINJA_FILE)
    if jinja is not None:
        note = None if tokenizer_file == JINJA_FILE else f"the processor's {JINJA_FILE} ({cls}: AutoProcessor " \
                                                         "renders with it)"
        return TemplateChoice(_read_template(jinja), JINJA_FILE, note, cls)
    return TemplateChoice(None, None, f"{cls}: " + NO_TEMPLATE.format(legacy=LEGACY_FILE, jinja=JINJA_FILE), cls)

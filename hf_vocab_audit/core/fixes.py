"""A finding's fix as data: a :class:`Fix` is a tuple of typed edits with one :class:`Applicability`.

The model is ruff's: each kind of change a rule can offer is a frozen dataclass (grow the vocabulary
rows, grow a vocabulary bias, set a JSON key, set a special token id, set a pad token, re-initialise
rows, suppress ids at generation), so an unknown edit is a type error when a rule is written, not a
surprise when a plan runs, and the planner (``fix/plan.py``) merges and orders edits by their class.
Each edit serialises with a ``kind`` (its stable, readable name in the report's JSON); ``kind`` is read
only by the codec (``core.codec``, the tag of :class:`Edit`), to turn JSON back into edits: nothing else
dispatches on it (``tests/test_layers.py``).
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .codec import JsonForm, Shape, decode, if_none, wire


class Applicability(str, enum.Enum):
    """Whether applying a fix keeps the model's behaviour (``safe``), may change it (``unsafe``: only with
    ``--unsafe-fixes``), or is shown but never applied (``display-only``)."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


class FixAvailability(str, enum.Enum):
    """Whether a rule's findings can carry a fix (ruff's ``FIX_AVAILABILITY``), declared by ``@rule``."""

    NEVER = "never"
    SOMETIMES = "sometimes"
    ALWAYS = "always"


@dataclass(frozen=True)
class Edit(JsonForm):
    """One typed change to the output checkpoint. Subclasses set ``kind`` (the JSON name)."""

    kind: ClassVar[str] = ""
    _codec = Shape(tag="kind", noun="fix edit")  # written first; read to pick the subclass


@dataclass(frozen=True)
class GrowRows(Edit):
    """Grow the vocabulary matrices to ``rows`` (``tensor``: the one found short); old rows kept, new rows
    the mean of the trained rows. Never shrinks."""

    kind: ClassVar[str] = "grow-embeddings"
    rows: int
    tensor: str


@dataclass(frozen=True)
class GrowBias(Edit):
    """Grow a vocabulary-sized bias (``final_logits_bias``, an lm_head bias) to ``rows`` entries."""

    kind: ClassVar[str] = "grow-bias"
    rows: int
    tensor: str


@dataclass(frozen=True)
class SetConfigVocabSize(Edit):
    """Set ``key`` (config.json's vocab_size) to the rows the output will have (``value``: today's rows)."""

    kind: ClassVar[str] = "set-config-vocab-size"
    key: str
    value: int


@dataclass(frozen=True)
class SetJsonKey(Edit):
    """Set ``key`` (a dotted path) in the JSON file ``file`` of the checkpoint to ``value``."""

    kind: ClassVar[str] = "set-json-key"
    file: str
    key: str
    value: Any


@dataclass(frozen=True)
class SetSpecialTokenId(Edit):
    """Set the ``role`` (bos, eos, pad...) token id in config.json and generation_config.json to ``value``
    (generation_config's eos list keeps its other ids)."""

    kind: ClassVar[str] = "sync-special-token-id"
    role: str
    value: int


@dataclass(frozen=True)
class SetPadToken(Edit):
    """Give the tokenizer a pad token distinct from eos: a reserved special token, else a new ``<pad>``
    (which grows the rows by one); config and generation_config ``pad_token_id`` follow."""

    kind: ClassVar[str] = "set-pad-token"


@dataclass(frozen=True)
class ReinitRows(Edit):
    """Set rows ``ids`` of ``tensors`` to the mean of their trained rows (``all_tensors``: every vocabulary
    matrix the weights analysis read)."""

    kind: ClassVar[str] = "reinit-untrained-rows"
    ids: tuple[int, ...]
    tensors: tuple[str, ...]
    all_tensors: tuple[str, ...] = ()


@dataclass(frozen=True)
class SuppressTokens(Edit):
    """Add ``ids`` to generation_config.json's ``suppress_tokens`` (merged with the ids there; the file is
    created when absent): ``generate()`` then never samples them."""

    kind: ClassVar[str] = "suppress-tokens"
    ids: tuple[int, ...]


@dataclass(frozen=True)
class CopyBaseRows(Edit):
    """Grow ``tensor`` back to ``rows`` (its base's ``base_tensor`` rows): its own rows kept bit for bit, the rows
    past them copied bit for bit from the base checkpoint (the folder ``base``): the rows a fine-tune cut,
    given back from the checkpoint it came from (``check FT --base BASE``)."""

    kind: ClassVar[str] = "copy-base-rows"
    base: str
    tensor: str
    base_tensor: str
    rows: int


@dataclass(frozen=True)
class CopyBaseChatTemplate(Edit):
    """Copy the base checkpoint's (the folder ``base``) chat template into the same file of the fine-tune
    (``file``: ``chat_template.jinja`` whole, or ``tokenizer_config.json``'s ``chat_template``)."""

    kind: ClassVar[str] = "copy-base-chat-template"
    base: str
    file: str


@dataclass(frozen=True)
class AddStopId(Edit):
    """Add ``token_id`` to generation_config.json's ``eos_token_id`` (a list: the ids there kept; the file is
    created with config.json's bos/eos/pad ids when absent), so a serving engine stops at it."""

    kind: ClassVar[str] = "add-stop-id"
    token_id: int


@dataclass(frozen=True)
class WriteChatTemplate(Edit):
    """Write the chat template held in ``source`` (``chat_template.json``'s ``chat_template``) to ``file``
    (``chat_template.jinja``), where the tokenizer loads it."""

    kind: ClassVar[str] = "write-chat-template"
    source: str
    file: str


EDIT_TYPES: tuple[type[Edit], ...] = (GrowRows, GrowBias, SetConfigVocabSize, SetJsonKey, SetSpecialTokenId,
                                      SetPadToken, ReinitRows, SuppressTokens, CopyBaseRows, CopyBaseChatTemplate,
                                      AddStopId, WriteChatTemplate)
EDIT_KINDS: dict[str, type[Edit]] = {cls.kind: cls for cls in EDIT_TYPES}


def edit_from_dict(d: dict[str, Any]) -> Edit:
    """The edit a ``to_dict`` wrote (its ``kind`` names the class); ValueError for an unknown kind."""
    return decode(Edit, d)


@dataclass(frozen=True)
class Fix(JsonForm):
    """A machine-applicable repair offered by a finding: what ``--fix`` does (``edits``), said in one line
    (``description``), with one applicability for the whole fix."""

    description: str
    applicability: Applicability
    edits: tuple[Edit, ...] = ()

    def with_applicability(self, applicability: Applicability) -> Fix:
        return dataclasses.replace(self, applicability=applicability)


FixPlan = Fix  # the name before fixes were typed (public API: hf_vocab_audit.FixPlan)


# ---- what --fix proved about its output (the report's fix.verification) ----


@dataclass(frozen=True)
class GrownTensor(JsonForm):
    """A vocabulary tensor the surgical writer grew: from ``old`` to ``new`` rows, filled with ``fill``
    (``mean`` of the trained rows, or ``zeros`` for a logits bias)."""

    name: str
    file: str
    old: int
    new: int
    fill: str


@dataclass(frozen=True)
class Resized(JsonForm):
    """What the transformers route did: ``resize_token_embeddings`` from ``rows_before`` to ``rows_after``."""

    rows_before: int | None
    rows_after: int | None
    mean_resizing: bool


@dataclass(frozen=True)
class Compared(JsonForm):
    """How the output's weights were compared with the input's: tensors (or whole files) and bytes compared,
    and the bytes of shards copied whole (checked by offsets and size, not read again)."""

    bytes_compared: int = 0
    tensors_compared: int | None = None
    files_compared: int | None = None
    bytes_copied_whole: int | None = None
    _codec = Shape(order=("tensors_compared", "files_compared", "bytes_compared", "bytes_copied_whole"), omit_none=True)


@dataclass(frozen=True)
class Verification(JsonForm):
    """The proof ``--fix`` ran on its output before renaming it into place: what was written (``grown`` by
    the surgical route, ``resized`` by transformers), how the weights were compared with the input's
    (``compared``: None when there were no weights), and whether transformers loads it (``load``)."""

    load: str
    compared: Compared | None = field(default=None, metadata=wire(none_as={}))
    grown: tuple[GrownTensor, ...] | None = field(default=None, metadata=wire(omit=if_none))
    resized: Resized | None = field(default=None, metadata=wire(key="transformers", omit=if_none))
    _codec = Shape(order=("grown", "resized", "compared", "load"))

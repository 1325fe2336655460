"""HVA97x: what a transformers 4.x reader will do with the files a transformers 5 save wrote (``check HF_DIR
--target 'transformers<5'``, alias ``transformers4``), each quoting what 4.x said or read instead.

The reader is transformers 4.57.6 (the last 4.x release) with tokenizers 0.22.2, executed on CPU by
``scripts/transformers4_verdicts.py`` on tiny checkpoints saved by transformers 5.24: the verdicts are in
tests/data/transformers4_verdicts.json. ``--fix`` writes the form both read alike (loaded by both after the fix).
The facts come from ``facts/transformers4.py``, imported only for this target.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..core.findings import Location, Severity
from ..core.fixes import Applicability, Fix, FixAvailability, SetJsonKey
from ..core.options import TargetKind
from ..facts.consumers import TRANSFORMERS4
from .registry import Hit, Scope, rule

if TYPE_CHECKING:
    from ..facts.targets import TargetFacts
    from ..facts.transformers4 import Transformers4Files

READER = "transformers " + TRANSFORMERS4.version.split()[0]  # "transformers 4.57.6"
TOKENIZER_CONFIG = "tokenizer_config.json"


def _files(t: TargetFacts) -> Transformers4Files | None:
    return t.transformers4 if t.target is TargetKind.TRANSFORMERS4 else None


def _short(value: object, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit - 3] + "..."


@rule("HVA970", "transformers4-tokenizer-class", Severity.ERROR, scope=Scope.TARGET, fix=FixAvailability.SOMETIMES)
def transformers4_tokenizer_class(t: TargetFacts) -> Iterator[Hit]:
    """A transformers 4.x reader cannot load the tokenizer: `tokenizer_config.json` names a transformers 5 class.

    Why:
    transformers 5 saves `tokenizer_class: "TokenizersBackend"` (and `SentencePieceBackend`, `PythonBackend`,
    `MistralCommonBackend` for other backends), classes 4.x does not have. Executed: transformers 4.57.6's
    `AutoTokenizer.from_pretrained` on a tokenizer saved by transformers 5.24 raised
    `ValueError: Tokenizer class TokenizersBackend does not exist or is not currently imported.`; so does every
    consumer pinned to `transformers<5` (mlx-lm#661, open-instruct#738).

    Fix:
    `--fix` writes `"tokenizer_class": "PreTrainedTokenizerFast"` for a `TokenizersBackend` folder (its
    `tokenizer.json` is read the same by both: measured, same ids and special tokens); for the other
    backends, re-save the tokenizer with transformers 4.x.
    """
    files = _files(t)
    if files is None or files.tokenizer_class is None:
        return
    from ..facts.transformers4 import V5_ONLY_TOKENIZER_CLASSES

    replacement = V5_ONLY_TOKENIZER_CLASSES.get(files.tokenizer_class)
    fix = None
    if replacement is not None:
        fix = Fix(f"set {TOKENIZER_CONFIG} tokenizer_class to {replacement!r} (read alike by 4.x and 5)",
                  Applicability.SAFE, (SetJsonKey(TOKENIZER_CONFIG, "tokenizer_class", replacement),))
    yield Hit(
        f"{TOKENIZER_CONFIG} tokenizer_class {files.tokenizer_class!r} is a transformers 5 class: {READER} says "
        f"\"ValueError: Tokenizer class {files.tokenizer_class} does not exist or is not currently imported.\"",
        Location(file=TOKENIZER_CONFIG, key="tokenizer_class"),
        fix=fix, details={"tokenizer_class": files.tokenizer_class, "replacement": replacement},
    )


@rule("HVA971", "transformers4-extra-special-tokens-list", Severity.ERROR, scope=Scope.TARGET,
      fix=FixAvailability.ALWAYS)
def transformers4_extra_special_tokens_list(t: TargetFacts) -> Iterator[Hit]:
    """A transformers 4.x reader cannot load the tokenizer: `extra_special_tokens` is a list.

    Why:
    transformers 5 saves the added special tokens as a list under `extra_special_tokens`; 4.x reads that key
    as a mapping from attribute names to tokens (its list is `additional_special_tokens`). Executed:
    transformers 4.57.6 raised `AttributeError: 'list' object has no attribute 'keys'` in
    `_set_model_specific_special_tokens` (without `protobuf` installed the same failure is reported as an
    `ImportError` asking for protobuf) (mlx-lm#661, transformers PR #45566).

    Fix:
    `--fix` writes the tokens as `additional_special_tokens` (the list 4.x reads, and 5 reads as its extra
    special tokens) and `extra_special_tokens` as `{}`: measured, both then give the same special tokens.
    """
    files = _files(t)
    if files is None or files.extra_list is None:
        return
    merged = tuple(dict.fromkeys(files.additional + files.extra_list))
    fix = Fix(f"move {TOKENIZER_CONFIG} extra_special_tokens into additional_special_tokens",
              Applicability.SAFE, (SetJsonKey(TOKENIZER_CONFIG, "additional_special_tokens", list(merged)),
                                   SetJsonKey(TOKENIZER_CONFIG, "extra_special_tokens", {})))
    yield Hit(
        f"{TOKENIZER_CONFIG} extra_special_tokens is a list ({len(files.extra_list)} token(s): "
        f"{_short(list(files.extra_list[:3]))}): {READER} says \"AttributeError: 'list' object has no attribute "
        f"'keys'\"",
        Location(file=TOKENIZER_CONFIG, key="extra_special_tokens",
                 token=files.extra_list[0] if files.extra_list else None),
        fix=fix, details={"tokens": list(files.extra_list[:20]), "count": len(files.extra_list)},
    )


@rule("HVA972", "transformers4-rope-parameters", Severity.ERROR, scope=Scope.TARGET, fix=FixAvailability.ALWAYS)
def transformers4_rope_parameters(t: TargetFacts) -> Iterator[Hit]:
    """A transformers 4.x reader will run the model with other rotary positions: `rope_parameters` only.

    Why:
    transformers 5 saves `rope_theta` and the RoPE scaling inside `rope_parameters` (one entry per layer type for
    Gemma-3, and `partial_rotary_factor`); 4.x reads `rope_theta`, `rope_scaling`, `partial_rotary_factor` (and
    `rope_local_base_freq`) at the top of the config and, not finding them, silently uses its class defaults (the
    table of 4.57.6's defaults is in `facts/transformers4_tables.py`). Executed: a Llama config saved by
    transformers 5.24 with `rope_theta` 500000 and llama3 scaling was read by transformers 4.57.6 as `rope_theta`
    10000.0 and `rope_scaling` None, a Gemma-3 text config's linear scaling (factor 8) as `rope_scaling` None, and a
    Phi-2 config's `partial_rotary_factor` 0.4 as 0.5, without a warning: positions
    are encoded differently from training (transformers PR #45566, onnxruntime-genai PR #2609).

    Fix:
    `--fix` writes `rope_theta`, `rope_scaling`, `partial_rotary_factor` (and `rope_local_base_freq`) beside
    `rope_parameters` (5 reads the same values from `rope_parameters`: measured), `rope_scaling` in the form
    4.x's config class accepts (Phi-3's longrope: `type`, `short_factor`, `long_factor` only).
    """
    files = _files(t)
    if files is None or files.rope is None:
        return
    gap = files.rope
    said, edits = [], []
    if gap.theta is not None:
        said.append(f"rope_theta {gap.default_theta} (its default) instead of {gap.theta}")
        edits.append(SetJsonKey("config.json", gap.prefix + "rope_theta", gap.theta))
    if gap.scaling is not None:
        said.append(f"rope_scaling None instead of {_short(gap.scaling)}")
        edits.append(SetJsonKey("config.json", gap.prefix + "rope_scaling", gap.scaling))
    if gap.local_theta is not None:
        said.append(f"rope_local_base_freq {gap.default_local_theta} (its default) instead of {gap.local_theta}")
        edits.append(SetJsonKey("config.json", gap.prefix + "rope_local_base_freq", gap.local_theta))
    if gap.partial is not None:
        said.append(f"{gap.partial_key} {gap.default_partial} (its default) instead of {gap.partial}")
        edits.append(SetJsonKey("config.json", gap.prefix + gap.partial_key, gap.partial))
    yield Hit(
        f"config.json {gap.key} has no top-level rope_theta/rope_scaling beside it: {READER} silently reads "
        + " and ".join(said),
        Location(file="config.json", key=gap.key),
        fix=Fix("write rope_theta / rope_scaling beside rope_parameters in config.json", Applicability.SAFE,
                tuple(edits)),
        details={"rope_theta": gap.theta, "rope_scaling": gap.scaling, "rope_local_base_freq": gap.local_theta,
                 "partial_rotary_factor": gap.partial},
    )


@rule("HVA973", "transformers4-template-only-in-jinja", Severity.INFO, scope=Scope.TARGET,
      fix=FixAvailability.ALWAYS)
def transformers4_template_only_in_jinja(t: TargetFacts) -> Iterator[Hit]:
    """The chat template is only in `chat_template.jinja`: transformers before 4.47 read no template.

    Why:
    transformers 5 saves the template to `chat_template.jinja` and no longer into `tokenizer_config.json`.
    transformers 4.57.6 reads the file (executed: same template, same rendering), but 4.x before 4.47 does
    not (`CHAT_TEMPLATE_FILE` first appears in 4.47.1's `tokenization_utils_base.py`; 4.46.3 has none) and
    nor do consumers that read `tokenizer_config.json` only (TGI's router): `apply_chat_template` then
    fails for want of a template, or a server formats chats without one. Information only: 4.57.6's own
    `save_pretrained` writes the template the same way (measured).

    Fix:
    `--fix` also writes the template as `chat_template` in `tokenizer_config.json` (the `.jinja` file stays and
    wins in the readers that know it: the same text).
    """
    files = _files(t)
    if files is None or files.jinja_only_template is None:
        return
    from ..facts.transformers4 import FIRST_4X_READING_JINJA

    yield Hit(
        f"the chat template is only in chat_template.jinja ({len(files.jinja_only_template)} chars), not in "
        f"{TOKENIZER_CONFIG}: {READER} reads it, transformers before {FIRST_4X_READING_JINJA} and "
        f"tokenizer_config-only readers see no chat template",
        Location(file="chat_template.jinja"),
        fix=Fix(f"copy the template into {TOKENIZER_CONFIG} chat_template", Applicability.SAFE,
                (SetJsonKey(TOKENIZER_CONFIG, "chat_template", files.jinja_only_template),)),
    )


@rule("HVA974", "transformers4-unknown-model-type", Severity.ERROR, scope=Scope.TARGET)
def transformers4_unknown_model_type(t: TargetFacts) -> Iterator[Hit]:
    """A transformers 4.x reader cannot load the config: its `model_type` is newer than the last 4.x release.

    Why:
    transformers 4.57.6's `AutoConfig` knows 421 model types (`CONFIG_MAPPING_NAMES`, the table in
    `facts/transformers4_tables.py`); an architecture added in transformers 5 is refused: executed, a
    `model_type` of `gemma4` gave `ValueError: The checkpoint you are trying to load has model type `gemma4`
    but Transformers does not recognize this architecture.` No file edit makes 4.x run such a model.

    Fix:
    Serve or convert it with transformers 5 (and consumers built on it), or a remote-code (`auto_map`) port.
    """
    files = _files(t)
    if files is None or files.unknown_model_type is None:
        return
    yield Hit(
        f"config.json model_type {files.unknown_model_type!r} is unknown to {READER}: it says \"ValueError: The "
        f"checkpoint you are trying to load has model type `{files.unknown_model_type}` but Transformers does not "
        f"recognize this architecture.\"",
        Location(file="config.json", key="model_type"),
        details={"model_type": files.unknown_model_type},
    )

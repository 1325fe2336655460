"""What a transformers 4.x reader makes of the files a transformers 5 save writes (``check --target
'transformers<5'``), read from the JSON files alone (never the weights, never a library call).

The reader is transformers 4.57.6 (the last 4.x release) with tokenizers 0.22.2, the pair ``pip install
'transformers<5'`` installs; ``scripts/transformers4_verdicts.py`` saved tiny checkpoints with transformers 5,
loaded them with that 4.x in a child process and recorded what it did (tests/data/transformers4_verdicts.json).
The rules that read these facts are in ``rules/transformers4.py``; this module is imported only for that target.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .checkpoint import Facts
from .tokenizer.added_tokens import token_content
from .tokenizer.config import read_config
from .transformers4_tables import (
    MODEL_TYPES,
    PARTIAL_ROTARY_FACTOR_DEFAULTS,
    ROPE_LOCAL_BASE_FREQ_DEFAULTS,
    ROPE_SCALING_DEFAULTS,
    ROPE_THETA_DEFAULTS,
)

TOKENIZERS4_VERSION = "0.22.2"  # what pip installs beside transformers 4.57.6 (it requires >=0.22.0,<=0.23.0)
# transformers 5's tokenizer classes that 4.x has no class for, and what 4.x reads the same files with (None:
# no class of 4.x reads them the same way). Measured: "TokenizersBackend" -> "ValueError: Tokenizer class
# TokenizersBackend does not exist or is not currently imported."; "PreTrainedTokenizerFast" loads in both.
V5_ONLY_TOKENIZER_CLASSES: dict[str, str | None] = {
    "TokenizersBackend": "PreTrainedTokenizerFast",
    "SentencePieceBackend": None,
    "PythonBackend": None,
    "MistralCommonBackend": None,
}
FIRST_4X_READING_JINJA = "4.47"  # tokenization_utils_base.py: CHAT_TEMPLATE_FILE in 4.47.1, absent in 4.46.3
MAX_VALUE_CHARS = 80  # a value quoted in a message


@dataclass(frozen=True)
class RopeGap:
    """``rope_parameters`` (the transformers 5 key) whose meaning 4.x cannot find: it reads ``rope_theta``,
    ``rope_scaling`` (and Gemma-3's ``rope_local_base_freq``) at the top of the (text) config and falls back to
    its class defaults. Per layer type (``{"full_attention": {...}, "sliding_attention": {...}}``) the full
    attention entry is what 4.x's top-level keys meant."""

    key: str  # the dotted key of rope_parameters in config.json
    theta: float | None  # the rope_theta 4.x will not read (None: nothing lost)
    default_theta: float | None  # what 4.x uses instead (its class default)
    scaling: dict[str, Any] | None  # the scaling 4.x will not read (None: nothing lost)
    local_theta: float | None  # the sliding-window layers' theta 4.x will not read (rope_local_base_freq)
    default_local_theta: float | None
    prefix: str
    partial: float | None = None  # the partial_rotary_factor 4.x will not read (5 keeps it in rope_parameters)
    default_partial: float | None = None
    partial_key: str = "partial_rotary_factor"  # the top-level key 4.x reads it from  # where the top-level keys go ("" or "text_config.")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _v4_scaling(params: dict[str, Any], text: dict[str, Any]) -> dict[str, Any]:
    """The ``rope_scaling`` 4.x reads for ``params``: without ``rope_theta`` and ``partial_rotary_factor`` (a config
    attribute in 4.x, never a scaling key: :class:`RopeGap` ``partial``), without an
    ``original_max_position_embeddings`` the config also holds at its top level (where 4.x's Phi-3 reads it), and
    with one type key (5 writes both ``type`` and ``rope_type`` for a checkpoint that had ``type``; 4.x reads
    either). Measured: 4.57.6's Phi3Config refuses any other rope_scaling than type, short_factor and long_factor
    ("ValueError: `rope_scaling` must be a dictionary with three fields, ...")."""
    scaling = {k: v for k, v in params.items() if k not in ("rope_theta", "partial_rotary_factor")
               and not (k == "original_max_position_embeddings" and k in text)}
    if "type" in scaling and scaling.get("rope_type") == scaling["type"]:
        del scaling["rope_type"]
    return scaling


# The model types whose 4.x modeling reads the rotary fraction under another key (4.57.6's
# modeling_gpt_neox.py and modeling_gpt_neox_japanese.py: ``config.rotary_pct``; their configuration classes set
# ``partial_rotary_factor`` from it, so a written ``partial_rotary_factor`` is overridden).
V4_PARTIAL_KEYS = {"gpt_neox": "rotary_pct", "gpt_neox_japanese": "rotary_pct"}


# Composite configs whose 4.x class fills the text config's missing keys from its own defaults before building it
# (4.57.6 configuration_voxtral.py: ``{**_default_text_config_kwargs, **text_config}``, rope_theta 100000000.0):
# there 4.x reads that value, not the text class's default. The only such class in 4.57.6.
MERGED_TEXT_THETA_DEFAULTS = {"voxtral": 100000000.0}

# rope types 4.57.6 has no init function for (modeling_rope_utils.py ROPE_INIT_FUNCTIONS: default, linear, dynamic,
# yarn, longrope, llama3) and whose models read no rope_scaling there: transformers 5 names the 2D rope of the
# vision models that compute it themselves "axial" (pixtral, sam2_video, edgetam_video, mlcd): nothing is lost.
V5_ONLY_ROPE_TYPES = ("axial",)


def _same_scaling(scaling: dict[str, Any], default: object) -> bool:
    """Whether ``scaling`` is what 4.x's configuration class defaults to anyway (gpt-oss's yarn, Apertus' llama3:
    4.x reads the same scaling without the key), ``type`` and ``rope_type`` being one key."""
    def norm(value: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in value.items() if k not in ("type", "rope_type")}
        out["rope_type"] = value.get("rope_type", value.get("type"))
        return out

    return isinstance(default, dict) and norm(scaling) == norm(default)


def _rope_gap(facts: Facts) -> RopeGap | None:
    cfg = facts.config
    text, prefix = cfg.text, cfg.text_prefix
    params = text.get("rope_parameters")
    if not isinstance(params, dict):
        return None
    model_type = text.get("model_type", cfg.raw.get("model_type"))
    model_type = model_type if isinstance(model_type, str) else ""
    local = None
    if isinstance(params.get("full_attention"), dict):
        local_params = params.get("sliding_attention")
        local = _number(local_params.get("rope_theta")) if isinstance(local_params, dict) else None
        params = params["full_attention"]
    elif not ("rope_type" in params or "rope_theta" in params):
        return None  # not a form transformers 5 writes
    default = ROPE_THETA_DEFAULTS.get(model_type)
    outer = cfg.raw.get("model_type")
    if prefix and isinstance(outer, str) and outer in MERGED_TEXT_THETA_DEFAULTS:
        default = MERGED_TEXT_THETA_DEFAULTS[outer]
    theta = _number(params.get("rope_theta"))
    lost_theta = theta if theta is not None and default is not None and "rope_theta" not in text \
        and theta != default else None
    rope_type = params.get("rope_type")
    scaling = _v4_scaling(params, text)
    # a scaling type, or keys the model code reads in rope_scaling whatever the type (Qwen2.5-VL's mrope_section
    # under rope_type "default": 4.57.6's model indexes rope_scaling["mrope_section"] and fails on None)
    meant = (isinstance(rope_type, str) and rope_type not in ("default", *V5_ONLY_ROPE_TYPES)) or any(
        k not in ("rope_type", "type") for k in scaling)
    lost_scaling = (scaling if meant and text.get("rope_scaling") is None
                    and not _same_scaling(scaling, ROPE_SCALING_DEFAULTS.get(model_type)) else None)
    default_local = ROPE_LOCAL_BASE_FREQ_DEFAULTS.get(model_type)
    lost_local = local if local is not None and default_local is not None and "rope_local_base_freq" not in text \
        and local != default_local else None
    default_partial = PARTIAL_ROTARY_FACTOR_DEFAULTS.get(model_type)
    partial = _number(params.get("partial_rotary_factor"))
    partial_key = V4_PARTIAL_KEYS.get(model_type, "partial_rotary_factor")
    lost_partial = partial if partial is not None and default_partial is not None \
        and partial_key not in text and partial != default_partial else None
    if lost_theta is None and lost_scaling is None and lost_local is None and lost_partial is None:
        return None
    return RopeGap(prefix + "rope_parameters", lost_theta, default, lost_scaling, lost_local, default_local, prefix,
                   lost_partial, default_partial, partial_key)


@dataclass(frozen=True)
class Transformers4Files:
    """The transformers 5 forms a 4.x reader refuses or reads differently, as found in the files."""

    tokenizer_class: str | None = None  # a v5-only class named by tokenizer_config.json
    extra_list: tuple[str, ...] | None = None  # tokenizer_config.json's extra_special_tokens when it is a list
    additional: tuple[str, ...] = ()  # tokenizer_config.json's additional_special_tokens (4.x's list form)
    jinja_only_template: str | None = None  # the template, when only chat_template.jinja holds it
    rope: RopeGap | None = None
    unknown_model_type: str | None = None  # a config.json model_type 4.57.6's AutoConfig does not know


def _strings(value: list[Any]) -> tuple[str, ...]:
    out = []
    for item in value:
        content = token_content(item)
        if content is not None:
            out.append(content)
    return tuple(out)


def _unknown_model_type(facts: Facts) -> str | None:
    raw = facts.config.raw
    model_type = raw.get("model_type")
    if not isinstance(model_type, str) or not model_type or "auto_map" in raw:
        return None
    return None if model_type in MODEL_TYPES else model_type[:MAX_VALUE_CHARS]


def read_transformers4(facts: Facts) -> Transformers4Files:
    """The files' transformers 5 forms that transformers 4.57.6 refuses or reads differently."""
    tok = facts.tokenizer
    found = Transformers4Files(rope=_rope_gap(facts), unknown_model_type=_unknown_model_type(facts))
    if tok is None or not isinstance(tok.folder, Path) or not tok.folder.is_dir():
        return found
    config = read_config(tok.folder, "tokenizer_config.json")
    cls = config.get("tokenizer_class")
    extra = config.get("extra_special_tokens")
    additional = config.get("additional_special_tokens")
    jinja_only = (tok.chat_template if tok.chat_template_file == "chat_template.jinja"
                  and not isinstance(config.get("chat_template"), (str, list)) else None)
    return Transformers4Files(
        tokenizer_class=cls if isinstance(cls, str) and cls in V5_ONLY_TOKENIZER_CLASSES else None,
        extra_list=_strings(extra) if isinstance(extra, list) else None,
        additional=_strings(additional) if isinstance(additional, list) else (),
        jinja_only_template=jinja_only,
        rope=found.rope,
        unknown_model_type=found.unknown_model_type,
    )

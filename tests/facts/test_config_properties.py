"""Properties of the config.json reader, on generated configs (hypothesis).

Any JSON value under any key the rules read gives typed facts or one AuditError line naming config.json;
typed facts are what the file says (ints stay ints, nothing negative where a size is meant); key order
does not matter.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.facts.config import load_config, load_generation_config

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEYS = [
    "model_type", "architectures", "vocab_size", "tie_word_embeddings", "max_position_embeddings", "n_positions",
    "type_vocab_size", "position_embedding_type", "rope_theta", "bos_token_id", "eos_token_id", "pad_token_id",
    "decoder_start_token_id", "num_labels", "id2label", "label2id", "auto_map", "is_encoder_decoder",
    "text_config", "decoder", "generator",
]
scalars = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=8)
)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
plausible = {
    "vocab_size": st.integers(-2, 300_000) | json_values,
    "eos_token_id": st.integers(-2, 10) | st.lists(st.integers(-2, 10), max_size=3) | json_values,
    "id2label": st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=3) | json_values,
    "label2id": st.dictionaries(st.text(max_size=3), st.integers(-1, 5) | st.text(max_size=2), max_size=3)
    | json_values,
}
text_sections = st.dictionaries(st.sampled_from(KEYS[:12]), json_values, max_size=5)


@st.composite
def configs(draw):
    keys = draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=10))
    out = {}
    for k in keys:
        if k in ("text_config", "decoder", "generator"):
            out[k] = draw(text_sections | json_values)
        else:
            out[k] = draw(plausible.get(k, json_values))
    return out


_DIR = Path(tempfile.mkdtemp(prefix="config-props-"))


def _load(data: bytes, loader=load_config):
    path = _DIR / "config.json"
    path.write_bytes(data)
    try:
        return loader(path)
    except AuditError as exc:
        text = str(exc)
        assert "\n" not in text and text.startswith(str(path)), text
        return exc


@SETTINGS
@given(configs())
def test_any_config_gives_typed_facts_or_one_line_error(config):
    facts = _load(json.dumps(config).encode())
    if isinstance(facts, AuditError):
        return
    for value in (facts.vocab_size, facts.max_position_embeddings, facts.num_labels):
        assert value is None or (type(value) is int and value >= 1)
    assert facts.type_vocab_size is None or (type(facts.type_vocab_size) is int and facts.type_vocab_size >= 0)
    assert facts.tie_word_embeddings in (None, True, False)
    assert all(isinstance(a, str) for a in facts.architectures)
    for ids in facts.special.ids.values():
        assert ids and all(type(i) is int for i in ids)
    if facts.id2label is not None:
        assert all(type(k) is int and isinstance(v, str) for k, v in facts.id2label.items())
    if "vocab_size" in config and not facts.text_prefix and config["vocab_size"] is not None:
        assert facts.vocab_size == config["vocab_size"]


@SETTINGS
@given(configs(), st.randoms(use_true_random=False))
def test_key_order_does_not_matter(config, rnd):
    keys = list(config)
    rnd.shuffle(keys)
    a = _load(json.dumps(config).encode())
    b = _load(json.dumps({k: config[k] for k in keys}).encode())
    if isinstance(a, AuditError) or isinstance(b, AuditError):
        # the same file is refused either way (the message may name whichever bad key comes first)
        assert isinstance(a, AuditError) and isinstance(b, AuditError)
        return
    fields = ("vocab_size", "max_position_embeddings", "type_vocab_size", "tie_word_embeddings", "num_labels",
              "id2label", "label2id", "text_prefix", "model_type", "architectures")
    assert {f: getattr(a, f) for f in fields} == {f: getattr(b, f) for f in fields}
    assert a.special.ids == b.special.ids


@SETTINGS
@given(st.binary(max_size=200))
def test_any_bytes_give_facts_or_one_line_error(data):
    _load(data)
    _load(data, load_generation_config)


@SETTINGS
@given(configs())
def test_generation_config_is_typed_or_refused(config):
    facts = _load(json.dumps(config).encode(), load_generation_config)
    if not isinstance(facts, AuditError):
        assert all(ids and all(type(i) is int for i in ids) for ids in facts.special.ids.values())


def test_non_ascii_digits_in_label2id_are_a_one_line_error(tmp_path):
    # "²".isdigit() is True but int("²") fails: found by the property test above.
    import json

    from hf_vocab_audit.errors import AuditError
    from hf_vocab_audit.facts.config import load_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"label2id": {"a": "²"}}))
    try:
        load_config(path)
    except AuditError as exc:
        assert "label2id.a" in str(exc) and "\n" not in str(exc)
    else:
        raise AssertionError("a non-integer label id must be refused")


def test_null_label_id_is_a_one_line_error_not_a_none_in_the_facts(tmp_path):
    import json

    import pytest

    from hf_vocab_audit.errors import AuditError
    from hf_vocab_audit.facts.config import load_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"label2id": {"a": 0, "b": None}}))
    with pytest.raises(AuditError, match=r'"label2id.b" must be an integer, not NoneType None'):
        load_config(path)
    path.write_text(json.dumps({"label2id": {"a": 0}, "eos_token_id": None}))
    assert load_config(path).special.ids.get("eos_token_id") is None  # a null id field is unset, as before

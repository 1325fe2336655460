"""HVA3xx: sequence positions and token types."""

from __future__ import annotations

from collections.abc import Iterator

from ..core.findings import Location, Severity
from ..core.fixes import Applicability, Fix, FixAvailability, SetJsonKey
from ..facts import Facts
from ..facts.limits import TOKEN_TYPE_IDS, input_limits, type_rows_of
from ..facts.requirements import Requirement
from .registry import Hit, rule


def _usable(facts: Facts) -> tuple[int, str] | None:
    """(usable positions, how they were derived) from the one limits model (``facts.limits``)."""
    limits = input_limits(facts)[0]
    if limits.positions is None:
        return None
    return limits.positions, limits.source("positions") or ""


@rule("HVA301", "model-max-length-exceeds-positions", Severity.ERROR, requires=(Requirement.TOKENIZER,), fix=FixAvailability.SOMETIMES)
def model_max_length_exceeds_positions(facts: Facts) -> Iterator[Hit]:
    """The tokenizer's `model_max_length` is above the positions an absolute-position model can use.

    Why:
    Learned position embeddings have one row per position. `truncation=True` cuts sequences at
    `model_max_length`; when that is larger, longer inputs reach the model and crash: BERT with
    `The expanded size of the tensor (N) must match the existing size (512)`, RoBERTa with
    `index out of range` (its first `padding_idx + 1` rows are reserved: 514 rows give 512 positions).
    Rotary and relative-position models have no such table and are not checked. A sentence-transformers
    folder truncates to `max_seq_length` (sentence_bert_config.json), or without it to `model_max_length`
    capped at `max_position_embeddings`, 2 past a RoBERTa-style table's usable positions: that is compared too.

    Fix:
    Set `model_max_length` in tokenizer_config.json to the usable positions (`--fix` does).
    """
    tok = facts.required_tokenizer()
    usable = _usable(facts)
    st = facts.sentence_transformers
    tokenizer_hit = usable is not None and tok.model_max_length is not None and tok.model_max_length > usable[0]
    if usable is not None and st is not None:
        # sentence-transformers truncates to max_seq_length, else to model_max_length capped at
        # max_position_embeddings; transformers, reading the same files, to model_max_length (below)
        effective = st.effective_length(tok.model_max_length, facts.config.max_position_embeddings)
        if effective is not None and effective[0] > usable[0] and (st.max_seq_length is not None or not tokenizer_hit):
            length, how = effective
            limit = usable[0]
            yield Hit(
                f"sentence-transformers {how} > the {limit} positions the model can use ({usable[1]})",
                Location(file="sentence_bert_config.json", key="max_seq_length"),
                hint=f"set max_seq_length to {limit} in sentence_bert_config.json",
                fix=None if st.max_seq_length is not None else Fix(
                    f"set model_max_length to {limit} (sentence-transformers caps it no further)", Applicability.SAFE,
                    (SetJsonKey("tokenizer_config.json", "model_max_length", limit),)),
                details={"max_seq_length": st.max_seq_length, "effective_length": length, "usable_positions": limit},
            )
    if usable is None or tok.model_max_length is None:
        return
    limit, source = usable
    if tok.model_max_length <= limit:
        return
    yield Hit(
        f"tokenizer model_max_length {tok.model_max_length} > the {limit} positions the model can use "
        f"({source})",
        Location(file="tokenizer_config.json", key="model_max_length"),
        fix=Fix(f"set model_max_length to {limit}", Applicability.SAFE,
                (SetJsonKey("tokenizer_config.json", "model_max_length", limit),)),
        details={"model_max_length": tok.model_max_length, "usable_positions": limit},
    )


@rule("HVA303", "model-max-length-unset", Severity.WARNING, requires=(Requirement.TOKENIZER,), fix=FixAvailability.ALWAYS)
def model_max_length_unset(facts: Facts) -> Iterator[Hit]:
    """An absolute-position model's tokenizer sets no `model_max_length`.

    Why:
    Without it, `truncation=True` does not cap sequences at the model's positions, so one long
    document crashes the position lookup (see HVA301).

    Fix:
    Set `model_max_length` in tokenizer_config.json to the usable positions (`--fix` does).
    """
    tok = facts.required_tokenizer()
    usable = _usable(facts)
    if usable is None or tok.model_max_length is not None:
        return
    yield Hit(
        f"the tokenizer sets no model_max_length; the model can use {usable[0]} positions ({usable[1]})",
        Location(file="tokenizer_config.json", key="model_max_length"),
        fix=Fix(f"set model_max_length to {usable[0]}", Applicability.SAFE,
                (SetJsonKey("tokenizer_config.json", "model_max_length", usable[0]),)),
        details={"usable_positions": usable[0]},
    )


@rule("HVA302", "token-type-id-out-of-range", Severity.ERROR, requires=(Requirement.TOKENIZER,))
def token_type_id_out_of_range(facts: Facts) -> Iterator[Hit]:
    """The tokenizer returns `token_type_ids` the model's token-type embeddings have no row for.

    Why:
    Sentence pairs get segment ids 0 and 1; RoBERTa-style models have `type_vocab_size` 1. Feeding a
    BERT-style tokenizer's output to such a model raises `index out of range in self` (a device-side
    assert on a GPU).

    Fix:
    Use the model's own tokenizer, or drop `token_type_ids` (`return_token_type_ids=False`; set
    `model_input_names` without it in tokenizer_config.json).
    """
    tok = facts.required_tokenizer()
    if not tok.returns_token_type_ids or not tok.pair_type_ids:
        return
    types = type_rows_of(facts)  # where the token-type rows come from
    bound = input_limits(facts)[0].bound(TOKEN_TYPE_IDS)  # and the bound the one limits model derives from them
    if types is None or bound is None:
        return
    rows, (_, source, where) = bound.below, types
    loc = Location(**where)
    top = max(tok.pair_type_ids)
    if top < rows:
        return
    yield Hit(
        f"the tokenizer gives sentence pairs token_type_ids up to {top}, but {source} has {rows} row(s)",
        loc,
        details={"token_type_ids": list(tok.pair_type_ids), "type_vocab_size": rows},
    )

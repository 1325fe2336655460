"""HVA3xx: sequence positions and token types."""

from __future__ import annotations

from ..core.findings import Applicability, FixPlan, Location, Severity
from ..facts import Facts
from .registry import Hit, rule

# Learned-position families whose first rows are reserved: RoBERTa-style models start positions at
# padding_idx + 1; BART/OPT-style models carry an offset of 2.
PADDING_OFFSET_TYPES = frozenset(
    {"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "longformer", "roberta-prelayernorm", "xmod",
     "data2vec-text", "ibert", "mpnet", "esm", "bros", "layoutlmv3", "markuplm", "lilt", "luke", "mluke", "nezha"}
)  # fmt: skip
OFFSET_TWO_TYPES = frozenset({"bart", "mbart", "opt", "plbart", "blenderbot", "blenderbot-small", "biogpt"})
# Learned absolute positions, for checkpoints whose weights are not at hand.
ABSOLUTE_TYPES = frozenset(
    {"bert", "distilbert", "electra", "albert", "gpt2", "gpt_neo", "xlm", "ernie", "megatron-bert",
     "mobilebert", "squeezebert", "convbert", "layoutlm", "splinter", "roc_bert", "funnel", "canine"}
) | PADDING_OFFSET_TYPES | OFFSET_TWO_TYPES  # fmt: skip


def usable_positions(facts: Facts) -> tuple[int, str] | None:
    """(positions a sequence may use, how that was derived) for learned-absolute models, else None."""
    cfg = facts.config
    mtype = cfg.model_type or ""
    pos = facts.embeddings.position if facts.embeddings else None
    if cfg.has_rotary or (cfg.position_embedding_type not in (None, "absolute")):
        return None
    if pos is not None:
        rows, source = pos.rows, f"{pos.name} has {pos.rows} rows"
    elif mtype in ABSOLUTE_TYPES and cfg.max_position_embeddings:
        rows, source = cfg.max_position_embeddings, f"max_position_embeddings is {cfg.max_position_embeddings}"
        if mtype in OFFSET_TWO_TYPES:
            rows += 2
    else:
        return None
    if mtype in PADDING_OFFSET_TYPES:
        pad = (cfg.special.ids.get("pad_token_id") or (1,))[0]
        return rows - pad - 1, f"{source}, minus padding_idx {pad} + 1 reserved"  # type: ignore[operator]
    if mtype in OFFSET_TWO_TYPES and pos is not None:
        return rows - 2, f"{source}, minus the 2 reserved offset rows"  # type: ignore[operator]
    return rows, source  # type: ignore[return-value]


@rule("HVA301", "model-max-length-exceeds-positions", Severity.ERROR, requires=("tokenizer",))
def model_max_length_exceeds_positions(facts: Facts):
    """The tokenizer's `model_max_length` is above the positions an absolute-position model can use.

    Why:
    Learned position embeddings have one row per position. `truncation=True` cuts sequences at
    `model_max_length`; when that is larger, longer inputs reach the model and crash: BERT with
    `The expanded size of the tensor (N) must match the existing size (512)`, RoBERTa with
    `index out of range` (its first `padding_idx + 1` rows are reserved: 514 rows give 512 positions).
    Rotary and relative-position models have no such table and are not checked.

    Fix:
    Set `model_max_length` in tokenizer_config.json to the usable positions (`--fix` does).
    """
    tok = facts.tokenizer
    usable = usable_positions(facts)
    if usable is None or tok.model_max_length is None:  # type: ignore[union-attr]
        return
    limit, source = usable
    if tok.model_max_length <= limit:  # type: ignore[union-attr,operator]
        return
    yield Hit(
        f"tokenizer model_max_length {tok.model_max_length} > the {limit} positions the model can use "  # type: ignore
        f"({source})",
        Location(file="tokenizer_config.json", key="model_max_length"),
        fix=FixPlan("set-model-max-length", f"set model_max_length to {limit}", Applicability.SAFE, {"value": limit}),
        details={"model_max_length": tok.model_max_length, "usable_positions": limit},  # type: ignore[union-attr]
    )


@rule("HVA303", "model-max-length-unset", Severity.WARNING, requires=("tokenizer",))
def model_max_length_unset(facts: Facts):
    """An absolute-position model's tokenizer sets no `model_max_length`.

    Why:
    Without it, `truncation=True` does not cap sequences at the model's positions, so one long
    document crashes the position lookup (see HVA301).

    Fix:
    Set `model_max_length` in tokenizer_config.json to the usable positions (`--fix` does).
    """
    tok = facts.tokenizer
    usable = usable_positions(facts)
    if usable is None or tok.model_max_length is not None:  # type: ignore[union-attr]
        return
    yield Hit(
        f"the tokenizer sets no model_max_length; the model can use {usable[0]} positions ({usable[1]})",
        Location(file="tokenizer_config.json", key="model_max_length"),
        fix=FixPlan("set-model-max-length", f"set model_max_length to {usable[0]}", Applicability.SAFE,
                    {"value": usable[0]}),
        details={"usable_positions": usable[0]},
    )


@rule("HVA302", "token-type-id-out-of-range", Severity.ERROR, requires=("tokenizer",))
def token_type_id_out_of_range(facts: Facts):
    """The tokenizer returns `token_type_ids` the model's token-type embeddings have no row for.

    Why:
    Sentence pairs get segment ids 0 and 1; RoBERTa-style models have `type_vocab_size` 1. Feeding a
    BERT-style tokenizer's output to such a model raises `index out of range in self` (a device-side
    assert on a GPU).

    Fix:
    Use the model's own tokenizer, or drop `token_type_ids` (`return_token_type_ids=False`; set
    `model_input_names` without it in tokenizer_config.json).
    """
    tok = facts.tokenizer
    emb = facts.embeddings
    if not tok.returns_token_type_ids or not tok.pair_type_ids:  # type: ignore[union-attr]
        return
    if emb is not None and emb.token_type is not None:
        rows, source = emb.token_type.rows, emb.token_type.name
        loc = Location(file=emb.token_type.file, tensor=emb.token_type.name)
    elif facts.config.type_vocab_size is not None and not (emb and emb.input):
        rows, source = facts.config.type_vocab_size, "config.json type_vocab_size"
        loc = Location(file="config.json", key="type_vocab_size")
    else:
        return
    top = max(tok.pair_type_ids)  # type: ignore[union-attr]
    if top < rows:  # type: ignore[operator]
        return
    yield Hit(
        f"the tokenizer gives sentence pairs token_type_ids up to {top}, but {source} has {rows} row(s)",
        loc,
        details={"token_type_ids": list(tok.pair_type_ids), "type_vocab_size": rows},  # type: ignore[union-attr]
    )

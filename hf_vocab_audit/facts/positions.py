"""How many positions a sequence may use: the learned position table minus reserved rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .class_shapes import position_table, runs_past_table

if TYPE_CHECKING:
    from .checkpoint import Facts

# Learned-position families whose first rows are reserved: RoBERTa-style models start positions at
# padding_idx + 1; BART/OPT-style models carry an offset of 2.
PADDING_OFFSET_TYPES = frozenset(
    {"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "longformer", "roberta-prelayernorm", "xmod",
     "data2vec-text", "ibert", "mpnet", "esm", "bros", "layoutlmv3", "markuplm", "lilt", "luke", "mluke", "nezha"}
)  # fmt: skip
# Families whose embeddings fix padding_idx in code instead of reading pad_token_id (MPNetEmbeddings: 1).
FIXED_PADDING_IDX = {"mpnet": 1}
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
    if runs_past_table(cfg) is not None:
        return None  # positions clamped to the table (derived by running the class): any length runs
    if (pos is None or pos.rows is None) and mtype not in ABSOLUTE_TYPES and cfg.position_embedding_type in (
            None, "absolute"):
        # A table the checkpoint does not store, sized by a config key (a sinusoidal buffer, a table the head
        # drops on save): transformers builds it from the config, and a position past it fails the forward.
        derived = position_table(cfg)
        if derived is not None:
            return derived
    if cfg.has_rotary or (cfg.position_embedding_type not in (None, "absolute")):
        return None
    rows: int
    from_tensor = pos is not None and pos.rows is not None
    if pos is not None and pos.rows is not None:
        rows, source = pos.rows, f"{pos.name} has {pos.rows} rows"
    elif mtype in ABSOLUTE_TYPES and cfg.max_position_embeddings:
        rows, source = cfg.max_position_embeddings, f"max_position_embeddings is {cfg.max_position_embeddings}"
        if mtype in OFFSET_TWO_TYPES:
            rows += 2
    else:
        return None
    if mtype in PADDING_OFFSET_TYPES:
        pad = FIXED_PADDING_IDX.get(mtype) or (cfg.special.ids.get("pad_token_id") or (1,))[0]
        return rows - pad - 1, f"{source}, minus padding_idx {pad} + 1 reserved"
    if mtype in OFFSET_TWO_TYPES and from_tensor:
        # BART and OPT build max_position_embeddings + 2 rows and offset positions by 2; Blenderbot builds
        # max_position_embeddings rows with no offset: the reserved rows are what the table has beyond the config.
        mpe = cfg.max_position_embeddings
        reserved = rows - mpe if mpe is not None and 0 <= rows - mpe <= 2 else 2
        return rows - reserved, f"{source}, minus the {reserved} reserved offset rows" if reserved else source
    return rows, source

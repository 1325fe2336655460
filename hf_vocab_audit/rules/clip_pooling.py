"""HVA209: CLIP-family text towers whose pooled output is taken at another token than the eos.

transformers' ``CLIPTextModel`` (and GroupViT's, X-CLIP's and CLIPSeg's text models, which copy it) pools the
text at one position chosen from ``config.eos_token_id``: with the legacy value 2 at the largest id of each
sequence (``input_ids.argmax(-1)``: right only while the tokenizer's eos is its largest id), else at the first
position holding that id (position 0 when the sequence has none). Nothing raises either way; the pooled
embedding (``pooler_output``, ``text_embeds``, what CLIP scores and SDXL conditions on) is simply another
token's hidden state. Measured on a tiny ``CLIPTextModel`` on CPU in ``tests/rules/test_clip_pooling.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..core.findings import Location, Severity
from ..facts import Facts
from ..facts.requirements import Requirement
from .registry import Hit, rule

# Model types whose text model has CLIPTextTransformer's pooling (``if self.eos_token_id == 2: argmax``).
CLIP_POOLING_TYPES = frozenset({"clip", "clip_text_model", "groupvit", "groupvit_text_model", "xclip",
                                "xclip_text_model", "clipseg", "clipseg_text_model"})
LEGACY_EOS = 2  # the value transformers keeps for configs saved before it pooled by the eos id (PR #24773)


@dataclass(frozen=True)
class Pooling:
    """Where the text tower pools, and the token it should pool at."""

    config_eos: int  # config.json's (text_config's) eos_token_id
    key: str  # the JSON key it came from
    tokenizer_eos: int  # the tokenizer's eos id
    tokenizer_bos: int | None
    above_eos: tuple[int, ...]  # ids the tokenizer can emit above its eos (the first few)

    def wrong(self) -> str | None:
        """Why the pooled position is not the eos's, or None when it is."""
        if self.config_eos == LEGACY_EOS:
            if not self.above_eos:
                return None  # the eos is the largest id: argmax finds it (openai/clip-vit-* ship this way)
            shown = ", ".join(map(str, self.above_eos))
            return (f"{self.key} is the legacy value {LEGACY_EOS}, so the text model pools at the largest id of "
                    f"each sequence, and the tokenizer emits ids above its eos {self.tokenizer_eos} ({shown}"
                    f"{', ...' if len(self.above_eos) == 5 else ''}): any text holding one is pooled at that token")
        if self.config_eos != self.tokenizer_eos:
            return (f"{self.key} = {self.config_eos}, but the tokenizer's eos is {self.tokenizer_eos}: the text "
                    f"model pools at the first {self.config_eos} of each sequence, and at position 0 when there "
                    "is none")
        if self.config_eos == self.tokenizer_bos:
            return (f"{self.key} = {self.config_eos} is also the tokenizer's bos: the text model pools at the "
                    "first one, position 0, whose hidden state (causal attention) is the same for every text")
        return None


def clip_pooling(facts: Facts) -> Pooling | None:
    """The pooling facts of a CLIP-family text tower with a tokenizer, or None (another model, no ids)."""
    cfg, tok = facts.config, facts.tokenizer
    types = {cfg.model_type, cfg.text.get("model_type") if cfg.text_prefix else None}
    if tok is None or not types & CLIP_POOLING_TYPES:
        return None
    config_eos = cfg.special.ids.get("eos_token_id")
    eos = tok.special_tokens.get("eos", (None, None))[1]
    if config_eos is None or len(config_eos) != 1 or eos is None:
        return None  # a list of eos ids is no int: transformers' comparison and mask then differ (not decided)
    bos = tok.special_tokens.get("bos", (None, None))[1]
    return Pooling(config_eos[0], cfg.special.keys["eos_token_id"], eos, bos,
                   tuple(tok.ids_at_or_above(eos + 1)[:5]))


@rule("HVA209", "clip-pooled-token-not-eos", Severity.ERROR, requires=(Requirement.TOKENIZER,))
def clip_pooled_token_not_eos(facts: Facts) -> Iterator[Hit]:
    """A CLIP-family text tower pools its text embedding at another token than the tokenizer's eos.

    Why:
    `CLIPTextModel` takes the pooled output at one position picked from `eos_token_id` in config.json:
    with the legacy value 2, at the largest id of each sequence (right only while the tokenizer's eos is
    its largest id: tokens added after it, as textual inversion does, win the argmax); otherwise at the
    first position holding that id (position 0 when the tokenizer never emits it, and always position 0
    when it is also the bos). Nothing raises: `pooler_output` / `text_embeds`, what CLIP's similarity and
    SDXL's conditioning read, silently come from the wrong token, for some texts or for all of them.

    Fix:
    Set `eos_token_id` in config.json (`text_config` for a CLIPModel) to the tokenizer's eos id, which
    must differ from its bos; with the legacy value 2, move it there before adding tokens.
    """
    pooling = clip_pooling(facts)
    if pooling is None:
        return
    why = pooling.wrong()
    if why is None:
        return
    yield Hit(
        f"the pooled text embedding is not taken at the eos: {why}",
        Location(file="config.json", key=pooling.key),
        hint=f"set {pooling.key} to the tokenizer's eos id {pooling.tokenizer_eos}"
        + (" and give the tokenizer an eos of its own (not its bos)" if pooling.tokenizer_eos == pooling.tokenizer_bos
           else "") + (f" (an eos of {LEGACY_EOS} selects the legacy argmax: re-number the eos)"
                        if pooling.tokenizer_eos == LEGACY_EOS else ""),
        details={"config_eos_token_id": pooling.config_eos, "tokenizer_eos_id": pooling.tokenizer_eos,
                 "tokenizer_bos_id": pooling.tokenizer_bos, "ids_above_eos": list(pooling.above_eos)},
    )

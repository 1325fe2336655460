"""A GGUF against the HF checkpoint it was converted from (``check model.gguf --source HF_DIR``): the two
vocabularies id by id, the special ids, the chat template, and the vocabulary matrices' shapes.

Token texts are compared as llama.cpp's converter writes them: a SentencePiece user-defined token has its
"▁" written as a space, so "▁" and " " are the same character here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .checkpoint import Facts
from .gguf_facts import GGUFFacts

PAD_FILLER = re.compile(r"^\[PAD\d+\]$")
# HF tokenizer roles -> GGUF roles (facts.llama_cpp_tables.SPECIAL_ID_KEYS)
ROLES = {"bos": "bos", "eos": "eos", "unk": "unk", "pad": "pad", "sep": "sep", "cls": "cls", "mask": "mask"}


def _same(a: str, b: str) -> bool:
    return a == b or a.replace("\u2581", " ") == b.replace("\u2581", " ")


@dataclass(frozen=True)
class Dropped:
    """An HF token the GGUF does not have at its id: ``now`` is what the GGUF holds there (None: past its end)."""

    id: int
    token: str
    now: str | None
    moved_to: int | None  # the GGUF id of the same text, when it is elsewhere


@dataclass(frozen=True)
class GGUFSourceFacts:
    """What differs between a GGUF and its HF source; ``gguf`` and ``hf`` are the two sides' facts."""

    gguf: Facts
    hf: Facts
    source: str  # the HF folder as given
    dropped: tuple[Dropped, ...] = ()
    fillers: tuple[int, ...] = ()  # GGUF ids holding "[PAD{i}]" where the HF tokenizer has no token
    special_changes: tuple[tuple[str, int | None, int | None], ...] = ()  # role, HF id, GGUF id
    template: str = "same"  # "same", "lost", "changed", "added", "none"
    shape_changes: tuple[tuple[str, str, tuple[int, ...], tuple[int, ...]], ...] = field(default=())

    @property
    def gf(self) -> GGUFFacts:
        assert self.gguf.gguf is not None
        return self.gguf.gguf


def compare(gguf: Facts, hf: Facts, source: str) -> GGUFSourceFacts:
    gf = gguf.gguf
    tok = hf.tokenizer
    assert gf is not None
    dropped: list[Dropped] = []
    fillers: list[int] = []
    where: dict[str, int] = {}
    for i, text in enumerate(gf.tokens):
        where.setdefault(text.replace("\u2581", " "), i)
    hf_ids = set(tok.ids) if tok is not None else set()
    if tok is not None:
        for i in tok.ids:
            hf_text = tok.id_to_token(i)
            if hf_text is None:
                continue
            now = gf.tokens[i] if i < gf.n_tokens else None
            if now is not None and _same(now, hf_text):
                continue
            dropped.append(Dropped(i, hf_text, now, where.get(hf_text.replace("\u2581", " "))))
    for i, text in enumerate(gf.tokens):
        if i not in hf_ids and PAD_FILLER.match(text):
            fillers.append(i)
    specials: list[tuple[str, int | None, int | None]] = []
    if tok is not None:
        for role, (_content, hf_id) in sorted(tok.special_tokens.items()):
            gguf_role = ROLES.get(role)
            if gguf_role is None or hf_id is None:
                continue
            got = gf.special_ids.get(gguf_role)
            if got != hf_id:
                specials.append((role, hf_id, got))
    hf_template = tok.chat_template if tok is not None else None
    if hf_template is None:
        template = "none" if gf.chat_template is None else "added"
    elif gf.chat_template is None:
        template = "lost"
    else:
        template = "same" if gf.chat_template == hf_template else "changed"
    shapes = []
    emb = hf.embeddings
    if emb is not None:
        pairs = (("token_embd.weight", gf.token_embd, emb.input),
                 ("output.weight", gf.output if gf.output is not None else gf.token_embd,
                  emb.output if emb.output is not None else emb.input))
        for name, ours, theirs in pairs:
            if ours is not None and theirs is not None and ours.shape != theirs.shape:
                shapes.append((name, theirs.name, theirs.shape, ours.shape))
    return GGUFSourceFacts(gguf, hf, source, tuple(dropped), tuple(fillers), tuple(specials), template, tuple(shapes))

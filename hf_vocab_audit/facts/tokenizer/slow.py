"""A slow (Python, SentencePiece) transformers tokenizer seen through the few ``tokenizers.Tokenizer`` methods
the audit calls, for checkpoints that have no fast tokenizer (Marian / opus-mt and other SentencePiece-only
folders without ``tokenizer.json``). It is loaded with ``trust_remote_code=False``: no checkpoint code runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SlowAddedToken:
    content: str
    special: bool


@dataclass(frozen=True)
class SlowEncoding:
    ids: list[int]
    type_ids: list[int]

    def __len__(self) -> int:
        return len(self.ids)


class SlowBackend:
    """The subset of ``tokenizers.Tokenizer`` used by the facts, rules and dataset scan, over a slow tokenizer."""

    def __init__(self, tokenizer: Any) -> None:
        self._tok = tokenizer
        self._vocab: dict[str, int] = {str(k): int(v) for k, v in tokenizer.get_vocab().items()}
        self._tokens = {i: t for t, i in self._vocab.items()}

    def get_vocab(self, with_added_tokens: bool = True) -> dict[str, int]:
        return dict(self._vocab)

    def get_vocab_size(self, with_added_tokens: bool = True) -> int:
        return len(self._tok)

    def get_added_tokens_decoder(self) -> dict[int, SlowAddedToken]:
        return {int(i): SlowAddedToken(str(t.content), bool(t.special))
                for i, t in self._tok.added_tokens_decoder.items()}

    def token_to_id(self, token: str) -> int | None:
        return self._vocab.get(token)

    def id_to_token(self, token_id: int) -> str | None:
        return self._tokens.get(token_id)

    def no_padding(self) -> None:
        """The slow tokenizer pads and truncates only when asked: nothing to turn off."""

    def no_truncation(self) -> None:
        """See :meth:`no_padding`."""

    def encode(self, text: str, pair: str | None = None, add_special_tokens: bool = True) -> SlowEncoding:
        enc = self._tok(text, pair, add_special_tokens=add_special_tokens, return_token_type_ids=True)
        ids = list(enc["input_ids"])
        return SlowEncoding(ids, list(enc.get("token_type_ids") or [0] * len(ids)))

    def encode_batch(self, texts: list[str], add_special_tokens: bool = True) -> list[SlowEncoding]:
        return [self.encode(t, add_special_tokens=add_special_tokens) for t in texts]

    encode_batch_fast = encode_batch

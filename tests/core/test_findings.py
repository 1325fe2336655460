"""How a finding's location reads in the text report and the one-line formats."""

from __future__ import annotations

from hf_vocab_audit.core.findings import Location


def test_an_id_without_a_token_never_reads_token_none():
    """An id past the vocabulary has no token string: the location names the id alone."""
    where = Location(file="generation_config.json", key="forced_bos_token_id", token_id=5000)
    assert str(where) == "generation_config.json key=forced_bos_token_id token_id=5000"
    assert "None" not in str(where)


def test_a_token_and_its_id_read_together():
    where = Location(file="tokenizer_config.json", key="pad_token", token="<pad>", token_id=3)
    assert str(where) == "tokenizer_config.json key=pad_token token='<pad>' (id 3)"

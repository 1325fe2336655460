"""The stored per-architecture table matches the installed transformers."""

from __future__ import annotations

from hf_vocab_audit.facts import transformers_tables


def test_table_is_current():
    stored = transformers_tables.tables()
    fresh = transformers_tables.generate()
    assert stored == fresh, "stale table: run `python scripts/regenerate.py`"


def test_table_answers():
    assert transformers_tables.default_tie_word_embeddings("llama") is False
    assert transformers_tables.default_tie_word_embeddings("bert") is True
    assert "token_type_ids" in transformers_tables.model_input_names("BertTokenizer")
    assert transformers_tables.model_input_names("RobertaTokenizer") == ["input_ids", "attention_mask"]

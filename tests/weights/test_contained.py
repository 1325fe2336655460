"""``contained``: which added-token contents occur in the chat template, in linear passes (--weights)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hf_vocab_audit.weights import usage

alphabet = st.sampled_from("ab<|>")


@settings(max_examples=200, deadline=None)
@given(st.sets(st.text(alphabet, min_size=1, max_size=4), max_size=30), st.text(alphabet, max_size=60),
       st.integers(1, 8))
def test_same_answer_as_one_scan_per_content(contents, text, group):
    old = usage.WINDOW_GROUP
    usage.WINDOW_GROUP = group  # exercise both the per-content scans and the window passes
    try:
        assert usage.contained(contents, text) == {c for c in contents if c in text}
    finally:
        usage.WINDOW_GROUP = old

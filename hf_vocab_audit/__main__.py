"""``python -m hf_vocab_audit``: the same command line as ``hf-vocab-audit``."""

from .cli import run

run()

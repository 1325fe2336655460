"""``check --weights``: find token rows of the embedding matrices that were never trained.

Reads only the input-embedding and (untied) lm_head matrices, memory-mapped in row chunks
(:mod:`.analysis`); the rules are in :mod:`hf_vocab_audit.rules.weights`. Nothing is imported here, so
that reading a constant of this package does not import numpy.
"""

"""Dataset audit: stream a ``datasets`` corpus against the model (``check MODEL_DIR --dataset SPEC``).

spec (open SPEC as splits) -> roles (column roles) -> kernel (per-batch summary + merge) -> scan
(stream, merge) -> rules/dataset.py (HVA5xx findings) -> report (``Report.dataset``).
"""

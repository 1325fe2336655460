"""Bounded readers of untrusted bytes: JSON files, safetensors headers, embedding rows, dtypes."""

"""Bounded JSON reading: integer-digit cap, and the process-wide limit restored under interleaving."""

from __future__ import annotations

import sys

import pytest

from hf_vocab_audit.errors import AuditError
from hf_vocab_audit.io.jsonfile import read_json_object, short_integers


def test_interleaved_users_restore_the_digit_limit():
    """Two threads' parses overlapping (A enters, B enters, A leaves, B leaves) leave the limit as found."""
    before = sys.get_int_max_str_digits()
    a, b = short_integers(), short_integers()
    a.__enter__()
    b.__enter__()
    assert sys.get_int_max_str_digits() == 640
    a.__exit__(None, None, None)
    assert sys.get_int_max_str_digits() == 640  # B is still parsing
    b.__exit__(None, None, None)
    assert sys.get_int_max_str_digits() == before


def test_long_integer_is_one_line_error_naming_the_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"vocab_size": 1' + "0" * 700 + "}")
    with pytest.raises(AuditError) as info:
        read_json_object(path)
    assert str(info.value).startswith(str(path)) and "640 digits" in str(info.value)
    assert sys.get_int_max_str_digits() != 640

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


def test_a_file_named_in_the_folder_is_inside_and_a_link_out_of_it_is_not(tmp_path):
    """check_inside's short path (one lstat for a plain file named in the folder) must not let a link through."""
    from hf_vocab_audit.io.jsonfile import check_inside

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"x")
    check_inside(folder / "model.safetensors", folder)  # a plain file: inside
    outside = tmp_path / "secret.safetensors"
    outside.write_bytes(b"x")
    (folder / "shard.safetensors").symlink_to(outside)
    with pytest.raises(AuditError, match="points outside the model folder"):
        check_inside(folder / "shard.safetensors", folder)
    (folder / "inner.safetensors").symlink_to(folder / "model.safetensors")
    check_inside(folder / "inner.safetensors", folder)  # a link that stays inside
    with pytest.raises(AuditError, match="points outside"):
        check_inside(folder / "..", folder)  # a name that climbs is resolved, never taken as a plain entry

"""A Hub server that ignores Range (issue 24, class 5): the safetensors header is read, the rest is not."""

from __future__ import annotations

import json

import pytest
from hub_server import HubServer, Repo

from hf_vocab_audit.demo import build_demo_checkpoint

from .test_hub import run


@pytest.mark.parametrize("tail_mib", [0, 256])
def test_a_server_that_ignores_range_is_read_only_up_to_the_header(tmp_path, tail_mib: int):
    """The same findings as an honest server gives, and the socket read stops near the first 100 KB, not at
    the end of a 256 MiB body (huggingface_hub's metadata call buffered the whole response)."""
    folder = build_demo_checkpoint(tmp_path / "model")
    honest = Repo.from_folder(folder)
    liar = Repo.from_folder(folder)
    liar.files["model.safetensors"] += bytes(tail_mib * 2**20)
    liar.ignores_range = frozenset({"model.safetensors"})
    reports = {}
    with HubServer({"org/honest": honest, "org/liar": liar}) as server:
        server.home = tmp_path / "hf-home"  # type: ignore[attr-defined]
        for name in ("honest", "liar"):
            code, out, err = run(server, f"org/{name}", "--format", "json")
            assert code in (0, 1), err
            reports[name] = sorted((f["code"], f["message"].replace(name, "")) for f in json.loads(out)["findings"])
        sent = server.bytes_sent["model.safetensors"]
    assert reports["liar"] == reports["honest"]
    assert sent < 16 * 2**20

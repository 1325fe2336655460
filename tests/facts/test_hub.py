"""Hub targets through a loopback server set as HF_ENDPOINT (the real Hub is unreachable in tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hub_server import HubServer, Repo
from safetensors.numpy import load_file, save_file

from hf_vocab_audit.demo import build_demo_checkpoint
from hf_vocab_audit.facts.sources.hub import HubRef, parse_hub_ref

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "hf_test_s3cret"


def shard(folder: Path) -> Path:
    """Split model.safetensors into two shards with an index (as save_pretrained does for big models)."""
    tensors = load_file(folder / "model.safetensors")
    names = sorted(tensors)
    parts = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    weight_map = {}
    for file, part in parts.items():
        save_file({n: np.ascontiguousarray(tensors[n]) for n in part}, str(folder / file), metadata={"format": "pt"})
        weight_map.update({n: file for n in part})
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return folder


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hub")
    public = build_demo_checkpoint(tmp / "public", hidden=256)  # ~3 MB of weights: headers are a fraction
    private = shard(build_demo_checkpoint(tmp / "private", hidden=256))
    repos = {"org/broken": Repo.from_folder(public), "org/secret": Repo.from_folder(private, token=TOKEN)}
    with HubServer(repos) as server:
        server.home = tmp / "hf-home"  # type: ignore[attr-defined]
        yield server


def run(hub, *args: str, **env: str):
    full = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HOME": str(hub.home), "HF_HUB_OFFLINE": "0",
            "PYTHONPATH": str(ROOT), "HF_HUB_DISABLE_TELEMETRY": "1", **env}
    if "HF_TOKEN" not in env:
        full.pop("HF_TOKEN", None)
    proc = subprocess.run([sys.executable, "-m", "hf_vocab_audit", "check", *args], env=full,
                          capture_output=True, text=True, timeout=120, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def test_hub_ref_parsing():
    assert parse_hub_ref("org/name") == HubRef("org/name", None)
    assert parse_hub_ref("org/name@v1.0") == HubRef("org/name", "v1.0")
    assert parse_hub_ref("/abs/path") is None
    assert parse_hub_ref("a/b/c") is None
    assert parse_hub_ref("../x") is None


def test_public_repo_is_audited_from_headers_without_downloading_weights(hub):
    code, out, err = run(hub, "org/broken", "--format", "json")
    assert code == 1, err
    report = json.loads(out)
    commit = hub.repos["org/broken"].commit
    assert report["target"] == f"org/broken@{commit}"
    assert report["facts"]["input_embedding"]["shape"] == [259, 256]
    hva101 = next(f for f in report["findings"] if f["code"] == "HVA101")
    assert "2 id(s) >= the 259 rows of model.embed_tokens.weight" in hva101["message"]
    weights = len(hub.repos["org/broken"].files["model.safetensors"])
    assert 0 < hub.bytes_sent["model.safetensors"] < weights / 10  # header range requests only


def test_private_repo_needs_the_token(hub):
    code, out, err = run(hub, "org/secret")
    assert code == 2
    assert "org/secret" in err and "HF_TOKEN" in err and "Traceback" not in err
    code, out, err = run(hub, "org/secret", "--format", "json", HF_TOKEN=TOKEN)
    assert code == 1, err
    report = json.loads(out)
    assert report["facts"]["weight_files"] == ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    assert {"HVA101", "HVA102"} <= {f["code"] for f in report["findings"]}


def test_offline_run_uses_the_cache(hub):
    code, online, _ = run(hub, "org/broken", "--format", "json")
    assert code == 1
    before = len(hub.requests)
    code, offline, err = run(hub, "org/broken", "--format", "json", HF_HUB_OFFLINE="1")
    assert code == 1, err
    assert len(hub.requests) == before  # nothing asked of the server
    def strip(raw):
        return {k: v for k, v in json.loads(raw).items() if k != "duration_s"}

    assert strip(offline) == strip(online)


def test_offline_run_of_an_uncached_repo_fails_cleanly(hub):
    code, _, err = run(hub, "org/never-fetched", HF_HUB_OFFLINE="1")
    assert code == 2
    assert "org/never-fetched" in err and "HF_HUB_OFFLINE=1" in err and "Traceback" not in err


def test_unknown_revision_fails_cleanly(hub):
    code, _, err = run(hub, "org/broken@v9")
    assert code == 2
    assert "no revision 'v9'" in err


def _hostile_repo(tmp_path, **files: bytes) -> Repo:
    folder = build_demo_checkpoint(tmp_path / "model")
    repo = Repo.from_folder(folder)
    repo.files.update(files)
    return repo


@pytest.mark.parametrize("shard_name", ["../../../../x.safetensors", "/etc/x.safetensors", "a/b.safetensors",
                                        "..", "a\\b.safetensors"])
def test_hub_index_shard_names_are_checked_before_any_request(tmp_path, shard_name):
    """A remote index is as untrusted as a local one: a shard name with a folder would be a request to
    another path on the endpoint, carrying HF_TOKEN."""
    index = json.dumps({"metadata": {}, "weight_map": {"model.embed_tokens.weight": shard_name}}).encode()
    repo = _hostile_repo(tmp_path, **{"model.safetensors.index.json": index})
    del repo.files["model.safetensors"]
    with HubServer({"org/evil": repo}) as server:
        server.home = tmp_path / "hf-home"  # type: ignore[attr-defined]
        code, out, err = run(server, "org/evil", HF_TOKEN=TOKEN)
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "model.safetensors.index.json" in err and "not a plain file name" in err
    assert not any("x.safetensors" in path or "b.safetensors" in path for _, path in server.requests)


def test_hub_file_over_the_limit_is_refused_before_downloading(tmp_path):
    """config.json declared at 17 MiB (limit 16 MiB): refused from the HEAD answer; no body is sent."""
    repo = _hostile_repo(tmp_path, **{"config.json": b"{" + b" " * (17 * 2**20) + b"}"})
    with HubServer({"org/big": repo}) as server:
        server.home = tmp_path / "hf-home"  # type: ignore[attr-defined]
        code, out, err = run(server, "org/big")
        sent = server.bytes_sent["config.json"]
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "config.json" in err and "over the 16777216-byte limit" in err
    assert sent == 0


@pytest.mark.parametrize("name", ["config.json", "tokenizer_config.json"])
def test_hub_file_longer_than_declared_is_cut_off_at_the_limit(tmp_path, name):
    """A server that declares 100 bytes (HEAD) and then streams 64 MiB: the download stops at the 16 MiB
    limit while it streams (huggingface_hub alone would write it all to the cache before its size check)."""
    body = b"{" + b" " * (64 * 2**20) + b"}"
    repo = _hostile_repo(tmp_path, **{name: body})
    repo.declared[name] = 100
    with HubServer({"org/liar": repo}) as server:
        server.home = tmp_path / "hf-home"  # type: ignore[attr-defined]
        code, out, err = run(server, "org/liar")
        sent = server.bytes_sent[name]
    assert code == 2, err
    assert err.count("\n") == 1 and f"org/liar/{name}" in err and "16777216-byte limit" in err, err
    assert "download stopped" in err and "Traceback" not in err
    assert sent < 32 * 2**20  # the limit plus socket buffers and one chunk, not the 64 MiB body
    assert not [p for p in (tmp_path / "hf-home").rglob("*") if p.is_file() and p.stat().st_size > 2**20]


def test_hub_server_declaring_its_true_size_is_audited(tmp_path):
    """The cap keeps quiet on an honest server whose file is just under the limit."""
    config = json.loads(_hostile_repo(tmp_path).files["config.json"])
    padded = json.dumps(config).encode()[:-1] + b" " * (15 * 2**20) + b"}"
    repo = _hostile_repo(tmp_path / "honest", **{"config.json": padded})
    with HubServer({"org/honest": repo}) as server:
        server.home = tmp_path / "hf-home"  # type: ignore[attr-defined]
        code, out, err = run(server, "org/honest", "--format", "json")
    assert code in (0, 1), err
    assert json.loads(out)["facts"]["input_embedding"]["shape"][0] > 0

"""Hub targets through a loopback server set as HF_ENDPOINT (the real Hub is unreachable in tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hub_server import API, Act, HubServer, Misbehaviour, Repo
from safetensors.numpy import load_file, save_file

from hf_vocab_audit.demo import build_demo_checkpoint
from hf_vocab_audit.facts.sources.hub import HubRef, parse_hub_ref
from hf_vocab_audit.facts.sources.hub_client import HubPolicy, shown

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


def run(hub, *args: str, cwd: Path | None = None, **env: str):
    full = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HOME": str(hub.home), "HF_HUB_OFFLINE": "0",
            "PYTHONPATH": str(ROOT), "HF_HUB_DISABLE_TELEMETRY": "1", **env}
    for name in ("HF_TOKEN", "HF_VOCAB_AUDIT_HUB_TIMEOUT"):
        if name not in env:
            full.pop(name, None)
    proc = subprocess.run([sys.executable, "-m", "hf_vocab_audit", "check", *args], env=full, cwd=cwd,
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


# --- a misbehaving endpoint: one deadline for the whole Hub part, redirects kept on the endpoint ------------


def _misbehaving(tmp_path, key: str, how: Misbehaviour, **files: bytes) -> HubServer:
    repo = _hostile_repo(tmp_path, **files)
    repo.misbehave[key] = how
    server = HubServer({"org/stall": repo})
    server.home = tmp_path / "hf-home"  # type: ignore[attr-defined]
    return server


@pytest.mark.parametrize(("key", "how", "where", "says"), [
    (API, Misbehaviour(Act.HANG), "/api/models/org/stall", "no complete answer within the 2-second Hub deadline"),
    (API, Misbehaviour(Act.DRIP), "/api/models/org/stall", "no complete answer within the 2-second Hub deadline"),
    ("config.json", Misbehaviour(Act.RETRY_LATER, methods=frozenset({"GET"})), "/org/stall/resolve/",
     "answered HTTP 429 and a retry would wait 1000000 s"),
    ("config.json", Misbehaviour(Act.LONG_LENGTH, methods=frozenset({"GET"})), "/org/stall/resolve/",
     "no complete answer within the 2-second Hub deadline"),
    ("config.json", Misbehaviour(Act.CUT, methods=frozenset({"GET"})), "/org/stall/resolve/",
     "RemoteProtocolError (peer closed connection without sending complete message body"),
], ids=["no-answer", "drip", "retry-after-999999", "content-length-above-body", "cut-on-every-try"])
def test_a_stalling_hub_ends_within_the_deadline(tmp_path, key, how, where, says):
    """Each of these held the gate for hours (no timeout, Retry-After slept, reads waited forever, a download
    cut after one byte resumed without end); now the whole Hub part shares one deadline (2 s here), no retry
    may sleep past it, and the error names the request and the problem."""
    with _misbehaving(tmp_path, key, how) as server:
        start = time.monotonic()
        code, out, err = run(server, "org/stall", "--hub-timeout", "2")
        took = time.monotonic() - start
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{server.url}{where}" in err and says in err, err
    assert took < 30  # the interpreter's start-up and the 2 s deadline (the server would stall for 120 s)


def test_retries_go_on_while_time_is_left_and_stay_quiet(tmp_path):
    """With 10 s, huggingface_hub resumes a cut download (after 1 s each) until less than its longest
    backoff (8 s) is left, then the audit ends: one line, none of huggingface_hub's retry warnings."""
    with _misbehaving(tmp_path, "config.json", Misbehaviour(Act.CUT, methods=frozenset({"GET"}))) as server:
        code, _, err = run(server, "org/stall", "--hub-timeout", "10")
        tries = sum(1 for method, path in server.requests if method == "GET" and path.endswith("/config.json"))
    assert code == 2, err
    assert err.count("\n") == 1 and "no time to retry" in err and "10-second Hub deadline" in err, err
    assert tries >= 2


def test_an_endless_answer_is_cut_off(tmp_path):
    """A model-info answer without a Content-Length that never ends: huggingface_hub reads it whole into
    memory; it is stopped past the largest file an audit reads (257 MiB), well before the deadline."""
    with _misbehaving(tmp_path, API, Misbehaviour(Act.FLOOD)) as server:
        code, _, err = run(server, "org/stall")
        sent = server.bytes_sent[API]
    assert code == 2, err
    assert err.count("\n") == 1 and f"{server.url}/api/models/org/stall" in err
    assert "answered more than 269484032 bytes" in err and "stopped" in err
    assert sent < 2**30


def test_the_deadline_comes_from_the_environment(tmp_path):
    with _misbehaving(tmp_path, API, Misbehaviour(Act.HANG)) as server:
        code, _, err = run(server, "org/stall", HF_VOCAB_AUDIT_HUB_TIMEOUT="2")
    assert code == 2 and "2-second Hub deadline" in err and err.count("\n") == 1


@pytest.mark.parametrize("value", ["0", "soon", "-5"])
def test_a_bad_deadline_in_the_environment_is_refused(hub, value):
    code, _, err = run(hub, "org/broken", HF_VOCAB_AUDIT_HUB_TIMEOUT=value)
    assert code == 2 and "HF_VOCAB_AUDIT_HUB_TIMEOUT must be a whole number" in err and err.count("\n") == 1


def test_the_deadline_cannot_come_from_a_settings_file(hub, tmp_path):
    """pyproject.toml is read after the Hub files are fetched: a hub-timeout there could not apply (refused);
    a checkpoint's own hf-vocab-audit.toml may never set it (it would let the target stall the gate)."""
    (tmp_path / "pyproject.toml").write_text("[tool.hf-vocab-audit]\nhub-timeout = 600\n")
    code, _, err = run(hub, "org/broken", cwd=tmp_path)
    assert code == 2 and "hub-timeout: a settings file cannot set it" in err and err.count("\n") == 1
    code, _, err = run(hub, "org/broken", "--hub-timeout", "600", "--format", "json", cwd=tmp_path)
    assert code == 1, err  # the flag and the file agree


def test_a_checkpoints_own_settings_cannot_set_the_deadline(tmp_path):
    repo = _hostile_repo(tmp_path, **{"hf-vocab-audit.toml": b"hub-timeout = 100000\n"})
    with HubServer({"org/slow": repo}) as server:
        server.home = tmp_path / "hf-home"  # type: ignore[attr-defined]
        code, out, err = run(server, "org/slow", "--format", "json")
    # The demo checkpoint is broken (exit 1); its own file's hub-timeout is not obeyed but reported (HVA003).
    assert code == 1, err
    ignored = [f for f in json.loads(out)["findings"] if f["code"] == "HVA003"]
    assert len(ignored) == 1 and "hub-timeout" in ignored[0]["message"]


@pytest.mark.parametrize("location", ["http://169.254.169.254/latest/meta-data/", "file:///etc/passwd",
                                      "{elsewhere}/org/stall/resolve/main/config.json"],
                         ids=["link-local", "file", "other-loopback-port"])
@pytest.mark.parametrize("methods", [frozenset({"GET", "HEAD"}), frozenset({"GET"})], ids=["head-and-get", "get"])
def test_a_redirect_off_the_endpoint_is_refused(tmp_path, location, methods):
    """The size check (HEAD) and the download (GET, where redirects are followed) both refuse a redirect to
    another origin, and the other origin never sees a request, let alone HF_TOKEN."""
    with _misbehaving(tmp_path, "config.json", Misbehaviour(Act.REDIRECT, location, methods)) as server:
        code, _, err = run(server, "org/stall", HF_TOKEN=TOKEN)
        target = location.replace("{elsewhere}", server.elsewhere_url)
        seen = list(server.elsewhere)
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{server.url}/org/stall/resolve/" in err and f"redirect to {target} refused" in err, err
    assert seen == []


def test_a_redirect_within_the_endpoint_is_followed(tmp_path):
    """A mirror that moves a file within its own origin (a relative Location) is audited as usual."""
    config = _hostile_repo(tmp_path / "plain").files["config.json"]
    how = Misbehaviour(Act.REDIRECT, "/org/stall/resolve/main/moved-config.json", frozenset({"GET"}))
    with _misbehaving(tmp_path, "config.json", how, **{"moved-config.json": config}) as server:
        code, out, err = run(server, "org/stall", "--format", "json", HF_TOKEN=TOKEN)
        moved = [p for _, p in server.requests if p.endswith("moved-config.json")]
    assert code in (0, 1), err
    assert json.loads(out)["facts"]["input_embedding"]["shape"][0] > 0
    assert moved


def test_the_redirect_policy():
    public, mirror = HubPolicy("https://huggingface.co"), HubPolicy("http://127.0.0.1:8080")
    assert public.allows("https://huggingface.co/api/models/x/y")
    assert public.allows("https://cas-bridge.xethub.hf.co/xet-bridge-us/abc")
    assert public.allows("https://cdn-lfs-us-1.hf.co/repos/ab/cd")
    assert not public.allows("http://cdn-lfs.huggingface.co/repos/ab")  # no downgrade to plain HTTP
    assert not public.allows("https://evilhf.co/x") and not public.allows("https://hf.co.evil.example/x")
    assert not public.allows("http://169.254.169.254/latest/meta-data/")
    assert mirror.allows("http://127.0.0.1:8080/org/x/resolve/main/config.json")
    assert not mirror.allows("http://127.0.0.1:8081/x") and not mirror.allows("https://127.0.0.1:8080/x")
    assert not mirror.allows("https://cdn-lfs.hf.co/x")  # a mirror's files stay on the mirror
    assert not mirror.allows("file:///etc/passwd")


def test_an_error_line_shows_no_credentials_or_signatures():
    """The endpoint may carry a user and password, a CDN URL a signature: neither goes to the CI log."""
    assert shown("https://user:hf_s3cret@mirror.example:8443/api/models/x?token=1") == (
        "https://mirror.example:8443/api/models/x")
    assert shown("https://cas-bridge.xethub.hf.co/xet/abc?X-Amz-Signature=deadbeef#f") == (
        "https://cas-bridge.xethub.hf.co/xet/abc")
    assert shown("http://[::1]:8080/a") == "http://[::1]:8080/a"

"""Facts source for a Hub model (``org/name[@revision]``): small files through the cache, shapes from headers.

Config, generation config, tokenizer files and ``hf-vocab-audit.toml`` are fetched with
``hf_hub_download``, declared size checked first and the body capped while it streams (so ``HF_TOKEN``,
``HF_ENDPOINT``, ``HF_HUB_OFFLINE`` and the cache behave as
everywhere else); tensor shapes come from ``HfApi.parse_safetensors_file_metadata`` (HTTP range requests
for the headers: no weights are downloaded). The headers are kept in huggingface_hub's assets cache
per commit, so an offline run (``HF_HUB_OFFLINE=1``) of a revision audited before needs no network.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from ...core.options import AuditOptions
from ...core.source import Source
from ...errors import AuditError, first_line
from ...io.jsonfile import MAX_CONFIG_BYTES, MAX_TOKENIZER_BYTES, read_bytes
from ...io.safetensors_header import MAX_HEADER_BYTES, TensorInfo, _tensor
from ..checkpoint import Facts
from ..tensors import SAFETENSORS, SAFETENSORS_INDEX, CheckpointTensors, check_shard_names
from ..weight_formats.safetensors import Safetensors
from . import FactsSource, Repair, SourceError

HUB_ID = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<revision>[^\s@]+))?$")
SMALL_FILES = (
    "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
    "special_tokens_map.json", "added_tokens.json", "chat_template.jinja", "chat_template.json",
    "vocab.txt", "vocab.json", "merges.txt", "tokenizer.model", "spiece.model", "spm.model", "sentencepiece.bpe.model",
    "hf-vocab-audit.toml",
)  # fmt: skip
MANIFEST_VERSION = 1


@dataclass(frozen=True)
class HubRef:
    repo_id: str
    revision: str | None = None

    def __str__(self) -> str:
        return f"{self.repo_id}@{self.revision}" if self.revision else self.repo_id


def parse_hub_ref(target: str) -> HubRef | None:
    """``org/name[@revision]`` as a :class:`HubRef`, or None when ``target`` is not shaped like one."""
    m = HUB_ID.match(target)
    if not m or ".." in m["repo"]:
        return None
    return HubRef(m["repo"], m["revision"])


@dataclass(frozen=True)
class HubCheckout:
    """The small files of one Hub commit copied into a local folder, and the tensors read from its headers."""

    ref: HubRef
    commit: str
    folder: Path
    tensors: CheckpointTensors | None
    tensors_missing: str | None  # why there are no tensors


def _offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def _hub_error(ref: HubRef, exc: Exception) -> AuditError:
    from huggingface_hub import constants
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, GatedRepoError):
        return AuditError(str(ref), "is a gated repository: accept its terms on the Hub and set HF_TOKEN")
    if isinstance(exc, RepositoryNotFoundError):
        return AuditError(str(ref), "no such local folder, and no model repository on the Hub that this token "
                                    "can read (private? set HF_TOKEN)")
    if isinstance(exc, RevisionNotFoundError):
        return AuditError(str(ref), f"the Hub repository has no revision {ref.revision!r}")
    if isinstance(exc, LocalEntryNotFoundError):
        if _offline():
            return AuditError(str(ref), "is not in the Hugging Face cache and HF_HUB_OFFLINE=1 forbids downloading")
        return AuditError(str(ref), f"cannot reach the Hub at {constants.ENDPOINT} and it is not in the cache")
    if isinstance(exc, HfHubHTTPError):
        status = exc.response.status_code if exc.response is not None else "?"
        return AuditError(str(ref), f"the Hub at {constants.ENDPOINT} answered HTTP {status}")
    first = first_line(exc, 400, default="")
    return AuditError(str(ref), f"cannot reach the Hub at {constants.ENDPOINT}: {exc.__class__.__name__} {first}"[:400])


def _manifest_path(repo_id: str, commit: str) -> Path:
    from huggingface_hub import cached_assets_path

    return cached_assets_path("hf-vocab-audit", namespace=repo_id.replace("/", "--"), subfolder="headers") / (
        f"{commit}.json"
    )


def _tensors_from_headers(headers: dict[str, dict[str, Any]], index_file: str | None) -> CheckpointTensors:
    """Validated tensor infos from each shard's header entries (dtype, shape, data_offsets)."""
    tensors: dict[str, TensorInfo] = {}
    for shard, entries in sorted(headers.items()):
        data_len = max((e.get("data_offsets", [0, 0])[1] for e in entries.values() if isinstance(e, dict)), default=0)
        for name, entry in entries.items():
            info = _tensor(Path(shard), shard, name, entry, 0, data_len)
            if name in tensors:
                raise AuditError(shard, f"tensor {name!r} is also in {tensors[name].file}")
            tensors[name] = TensorInfo(info.name, info.dtype, info.shape, shard)  # remote: no byte offsets
    return CheckpointTensors(Safetensors.name, tuple(sorted(headers)), index_file, tensors)


def _limit(name: str) -> int:
    return MAX_TOKENIZER_BYTES if name == "tokenizer.json" else MAX_CONFIG_BYTES


def _check_declared_size(ref: HubRef, name: str, commit: str) -> None:
    """Refuse a file whose size, as the Hub declares it (HEAD), is over the limit for its kind: checked
    before the download, which would otherwise fetch 2 GiB to find it is over 16 MiB."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    limit = _limit(name)
    meta = get_hf_file_metadata(hf_hub_url(ref.repo_id, name, revision=commit or ref.revision))
    if meta.size is not None and meta.size > limit:
        raise AuditError(f"{ref}/{name}", f"is {meta.size} bytes on the Hub, over the {limit}-byte limit "
                                          "for this kind of file (not downloaded)")


def _byte_cap(where: str, limit: int) -> type[Any]:
    """A progress-bar class for ``hf_hub_download(tqdm_class=...)`` that stops the download past ``limit``.

    huggingface_hub reports every chunk of the response body to its progress bar before writing it to the
    cache, so raising there caps the stream itself: a server that declares a small size and then sends
    gigabytes is cut off at the limit (plus one chunk in memory), not after the whole body is on disk.
    """
    from huggingface_hub.utils import tqdm

    class ByteCap(tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.received = int(kwargs.get("initial") or 0)
            super().__init__(*args, **kwargs)

        def update(self, n: float | None = 1) -> bool | None:
            self.received += int(n or 0)
            if self.received > limit:
                raise AuditError(where, f"the Hub sent more than the {limit}-byte limit for this kind of file "
                                        "(more than it declared): download stopped")
            return super().update(n)

    return ByteCap


def _download(ref: HubRef, name: str, revision: str | None) -> Path:
    """``hf_hub_download`` (token, endpoint, cache and refs as usual) with the body capped at the file's limit."""
    from huggingface_hub import hf_hub_download

    where, limit = f"{ref}/{name}", _limit(name)
    path = Path(hf_hub_download(ref.repo_id, name, revision=revision, tqdm_class=_byte_cap(where, limit)))
    if path.stat().st_size > limit:  # a transfer that bypasses the progress bar (Xet), or an earlier cache entry
        raise AuditError(where, f"is {path.stat().st_size} bytes, over the {limit}-byte limit for this kind of file")
    return path


FIRST_RANGE = 100_000  # bytes asked for first, as huggingface_hub asks: most headers fit


def _ranged(url: str, headers: dict[str, str], start: int, end: int, where: str) -> bytes:
    """Bytes [start, end] of ``url``, never more than that read off the socket (plus one chunk): a server
    that ignores ``Range`` and answers 200 with the whole file is read only as far as ``end`` and hung up
    on (``HfApi.parse_safetensors_file_metadata`` buffered the whole body: 16.8 GB)."""
    from huggingface_hub.utils import get_session, hf_raise_for_status

    want = end + 1
    parts: list[bytes] = []
    got = 0
    with get_session().stream("GET", url, headers={**headers, "range": f"bytes={start}-{end}"},
                              timeout=10) as response:
        if response.status_code >= 400:
            response.read()  # an error page: hf_raise_for_status reads its message
            hf_raise_for_status(response)
        whole = response.status_code != 206  # Range ignored: the body starts at byte 0
        limit = want if whole else want - start
        for chunk in response.iter_bytes():
            parts.append(chunk)
            got += len(chunk)
            if got >= limit:
                break
    data = b"".join(parts)[:limit]
    return data[start:] if whole else data


def _remote_header(api: Any, ref: HubRef, shard: str, commit: str) -> Any:
    """A shard's safetensors header from two range requests at most, each read with a cap."""
    from huggingface_hub import hf_hub_url
    from huggingface_hub.hf_api import _parse_safetensors_header

    where = f"{ref}/{shard}"
    url = hf_hub_url(ref.repo_id, shard, revision=commit, endpoint=api.endpoint)
    headers = api._build_hf_headers()
    first = _ranged(url, headers, 0, FIRST_RANGE, where)
    if len(first) < 8:
        raise AuditError(where, f"truncated safetensors file: {len(first)} bytes, no 8-byte header length")
    (n,) = struct.unpack("<Q", first[:8])
    if n > MAX_HEADER_BYTES:
        raise AuditError(where, f"safetensors header length {n} exceeds the {MAX_HEADER_BYTES}-byte limit")
    raw = first[8 : 8 + n] if n <= len(first) - 8 else _ranged(url, headers, 8, n + 7, where)
    if len(raw) != n:
        raise AuditError(where, "truncated safetensors header")
    return _parse_safetensors_header(raw, shard, f"repo '{ref.repo_id}', revision '{commit}'")


def _fetch_online(ref: HubRef, dest: Path) -> tuple[str, list[str], dict[str, Any] | None, str | None]:
    """Download the small files; returns (commit, files, headers or None, why no tensors)."""
    from huggingface_hub import HfApi

    api = HfApi()
    info = api.model_info(ref.repo_id, revision=ref.revision)
    commit = info.sha or ""
    present = {s.rfilename for s in (info.siblings or [])}
    if "config.json" not in present:
        raise AuditError(str(ref), "has no config.json: not a transformers model repository")
    files = [f for f in SMALL_FILES if f in present]
    for name in [*files, *([SAFETENSORS_INDEX] if SAFETENSORS_INDEX in present else [])]:
        _check_declared_size(ref, name, commit)  # before any byte of any file is downloaded
    for name in files:
        # revision=ref.revision records refs/<revision> in the cache, for later offline runs.
        path = _download(ref, name, ref.revision)
        commit = path.parent.name
        shutil.copyfile(path, dest / name)
    if SAFETENSORS_INDEX in present:
        index_path = _download(ref, SAFETENSORS_INDEX, commit)
        where = f"{ref}/{SAFETENSORS_INDEX}"
        try:
            weight_map = json.loads(read_bytes(Path(index_path), MAX_CONFIG_BYTES)).get("weight_map", {})
        except (ValueError, AttributeError):
            raise AuditError(where, "is not a valid safetensors index") from None
        if not isinstance(weight_map, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
        ):
            raise AuditError(where, '"weight_map" must map tensor names to shard file names')
        check_shard_names(where, weight_map)  # before any request for a shard
        shards, index_file = sorted(set(weight_map.values())), SAFETENSORS_INDEX
    elif SAFETENSORS in present:
        shards, index_file = [SAFETENSORS], None
    else:
        why = "the Hub repository has no safetensors weights"
        if any(p.startswith("pytorch_model") for p in present):
            why += " (pytorch_model.bin cannot be read without downloading it)"
        return commit, files, None, why
    headers: dict[str, Any] = {}
    for shard in shards:
        meta = _remote_header(api, ref, shard, commit)
        headers[shard] = {
            name: {"dtype": t.dtype, "shape": list(t.shape), "data_offsets": list(t.data_offsets)}
            for name, t in meta.tensors.items()
        }
    return commit, files, {"index_file": index_file, "shards": headers}, None


def _fetch_offline(ref: HubRef, dest: Path) -> tuple[str, list[str], dict[str, Any] | None, str | None]:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    config = hf_hub_download(ref.repo_id, "config.json", revision=ref.revision)
    commit = Path(config).parent.name
    manifest_path = _manifest_path(ref.repo_id, commit)
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.is_file() else None
    names = manifest["files"] if manifest else list(SMALL_FILES)
    files = []
    for name in names:
        try:
            path = hf_hub_download(ref.repo_id, name, revision=commit)
        except (EntryNotFoundError, LocalEntryNotFoundError):
            if manifest:
                raise AuditError(str(ref), f"{name} of commit {commit} is missing from the cache") from None
            continue
        shutil.copyfile(path, dest / name)
        files.append(name)
    if manifest is None:
        return commit, files, None, f"offline: the safetensors headers of commit {commit} are not in the cache"
    return commit, files, manifest["weights"], manifest["weights_missing"]


@contextmanager
def checkout(ref: HubRef, timeout: int | None = None) -> Iterator[HubCheckout]:
    """Fetch ``ref``'s small files into a temporary folder (removed afterwards) and read its tensor headers.

    Online, every request shares one deadline of ``timeout`` seconds (None: ``hub_client.hub_timeout``'s
    default) and stays on the endpoint (``hub_client.bounded_hub``)."""
    from huggingface_hub import constants
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled

    from .hub_client import bounded_hub, hub_timeout

    seconds = hub_timeout(timeout)
    with TemporaryDirectory(prefix="hf-vocab-audit-hub-") as tmp:
        dest = Path(tmp) / ref.repo_id.split("/")[-1]
        dest.mkdir()
        try:
            if _offline():
                commit, files, weights, missing = _fetch_offline(ref, dest)
            else:
                with bounded_hub(seconds, constants.ENDPOINT):
                    commit, files, weights, missing = _fetch_online(ref, dest)
                manifest = {"version": MANIFEST_VERSION, "repo_id": ref.repo_id, "commit": commit,
                            "files": files, "weights": weights, "weights_missing": missing}
                path = _manifest_path(ref.repo_id, commit)
                path.write_text(json.dumps(manifest), encoding="utf-8")
        except AuditError:
            raise
        except (HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled, OSError, ValueError) as exc:
            raise _hub_error(ref, exc) from None
        except Exception as exc:  # noqa: BLE001 - httpx connection errors and the like
            raise _hub_error(ref, exc) from None
        tensors = None
        if weights is not None:
            tensors = _tensors_from_headers(weights["shards"], weights["index_file"])
        yield HubCheckout(ref, commit, dest, tensors, missing)


class HubSource(FactsSource):
    name = "hub"
    origin = Source.HUB
    lines = False  # the checkout is removed after the audit
    remote = True
    repair = Repair.REFUSED

    def __init__(self, target: object) -> None:
        super().__init__(target)
        self.checkout: Any = None
        self.timeout: int | None = None  # --hub-timeout, from the flags (the settings are read after the fetch)
        self.refused = False

    @classmethod
    def accepts(cls, target: object) -> bool:
        return isinstance(target, str) and not Path(target).exists() and parse_hub_ref(target) is not None

    def refuse(self, options: AuditOptions, fixing: bool = False) -> None:
        """Also takes ``--hub-timeout``: the first call (the flags, before the fetch) sets the deadline; a
        value that appears later came from a settings file, read after the fetch, and is refused."""
        if not self.refused:
            self.refused, self.timeout = True, options.hub_timeout
        elif options.hub_timeout != self.timeout:
            raise SourceError(str(self.target), "hub-timeout: a settings file cannot set it (the Hub files are "
                              "fetched before the settings are read): give --hub-timeout or "
                              "HF_VOCAB_AUDIT_HUB_TIMEOUT")
        if fixing:
            raise SourceError(str(self.target), "--fix needs a local checkpoint folder, not a Hub id")
        flags = (("--weights", options.weights), ("--dataset", options.scan is not None),
                 ("--base", options.base is not None), ("--source", options.source is not None),
                 ("--target", options.target_kind is not None))
        local_only = [flag for flag, given in flags if given]
        if local_only:
            raise SourceError(str(self.target), f"{', '.join(local_only)} need a local checkpoint folder (Hub "
                              "targets are audited from their small files and headers only)")

    def open(self, stack: ExitStack) -> Path | None:
        ref = parse_hub_ref(str(self.target))
        assert ref is not None
        from .hub_client import HubClientError

        try:
            self.checkout = stack.enter_context(checkout(ref, self.timeout))
        except HubClientError:  # the endpoint misbehaved: the target was a Hub id
            raise
        except AuditError as exc:  # say so when the user meant a local folder
            raise SourceError(exc.path, f"{exc.problem} (and no local folder {self.target!r} exists)") from None
        return Path(self.checkout.folder)

    def gather(self, options: AuditOptions) -> Facts:
        from .folder import gather

        co = self.checkout
        if co is None:
            raise RuntimeError("HubSource.gather before open")
        facts = gather(co.folder, options.tokenizer_path, tensors_from=lambda _folder: co.tensors)
        if co.tensors is None and co.tensors_missing:
            facts = replace(facts, missing={**facts.missing, "tensors": co.tensors_missing})
        return facts

    @property
    def path(self) -> Path | None:
        return None

    @property
    def label(self) -> str:
        if self.checkout is None:
            return os.fspath(str(self.target))
        return f"{self.checkout.ref.repo_id}@{self.checkout.commit}"

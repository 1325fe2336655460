"""A loopback HTTP server speaking the few Hub endpoints huggingface_hub calls (for HF_ENDPOINT in tests).

Serves model repositories from memory: ``GET /api/models/{repo}[/revision/{rev}]`` (model info) and
``HEAD``/``GET /{repo}/resolve/{rev}/{file}`` with ``Range`` support. A private repository answers 401
without its token, as the Hub does. Every request is logged, with the bytes sent per file (counted as
they are written, so a client that hangs up mid-body is seen). ``Repo.declared`` makes it lie: HEAD
declares those sizes, GET sends the real body.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse


@dataclass
class Repo:
    files: dict[str, bytes]
    commit: str
    token: str | None = None  # private when set
    declared: dict[str, int] = field(default_factory=dict)  # a lying server: HEAD's size for these files
    ignores_range: frozenset[str] = frozenset()  # files sent whole (200) whatever Range asks

    @classmethod
    def from_folder(cls, folder: Path, token: str | None = None) -> Repo:
        files = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}
        commit = hashlib.sha1(b"".join(files[k] for k in sorted(files))).hexdigest()
        return cls(files, commit, token)


@dataclass
class HubServer:
    repos: dict[str, Repo]
    requests: list[tuple[str, str]] = field(default_factory=list)
    bytes_sent: Counter = field(default_factory=Counter)
    url: str = ""

    def __enter__(self) -> HubServer:  # noqa: PYI034
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_HEAD(self):
                hub.handle(self, head=True)

            def do_GET(self):
                hub.handle(self, head=False)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- request handling -------------------------------------------------------------------------
    def _send(self, h, status: int, body: bytes = b"", headers: dict[str, str] | None = None, head=False,
              file: str | None = None, declared: int | None = None):
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(declared if head and declared is not None else len(body)))
        h.end_headers()
        if head:
            return
        step = 1 << 20
        for start in range(0, len(body), step):
            try:
                h.wfile.write(body[start : start + step])
            except (BrokenPipeError, ConnectionResetError):  # the client stopped reading
                return
            if file is not None:
                self.bytes_sent[file] += len(body[start : start + step])

    def _error(self, h, status: int, code: str, head: bool):
        body = json.dumps({"error": code}).encode()
        self._send(h, status, body, {"X-Error-Code": code, "Content-Type": "application/json"}, head)

    def _repo(self, h, repo_id: str, head: bool) -> Repo | None:
        repo = self.repos.get(repo_id)
        auth = h.headers.get("Authorization", "")
        if repo is None or (repo.token and auth != f"Bearer {repo.token}"):
            self._error(h, 401, "RepoNotFound", head)
            return None
        return repo

    def handle(self, h: BaseHTTPRequestHandler, head: bool) -> None:
        path = unquote(urlparse(h.path).path)
        self.requests.append((h.command, path))
        m = re.match(r"^/api/models/([^/]+/[^/]+)(?:/revision/(.+))?$", path)
        if m:
            repo = self._repo(h, m[1], head)
            if repo is None:
                return
            if m[2] not in (None, "main", repo.commit):
                return self._error(h, 404, "RevisionNotFound", head)
            info = {"id": m[1], "modelId": m[1], "sha": repo.commit, "private": bool(repo.token),
                    "siblings": [{"rfilename": name} for name in repo.files]}
            return self._send(h, 200, json.dumps(info).encode(), {"Content-Type": "application/json"}, head)
        m = re.match(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", path)
        if not m:
            return self._error(h, 404, "NotFound", head)
        repo = self._repo(h, m[1], head)
        if repo is None:
            return
        if m[2] not in ("main", repo.commit):
            return self._error(h, 404, "RevisionNotFound", head)
        data = repo.files.get(m[3])
        if data is None:
            return self._error(h, 404, "EntryNotFound", head)
        headers = {"X-Repo-Commit": repo.commit, "ETag": f'"{hashlib.sha256(data).hexdigest()}"',
                   "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
        rng = re.match(r"bytes=(\d+)-(\d*)$", h.headers.get("Range", "") or "")
        if rng and not head and m[3] not in repo.ignores_range:
            start, end = int(rng[1]), int(rng[2]) if rng[2] else len(data) - 1
            end = min(end, len(data) - 1)
            chunk = data[start : end + 1]
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            return self._send(h, 206, chunk, headers, file=m[3])
        self._send(h, 200, data, headers, head, file=m[3], declared=repo.declared.get(m[3]))

"""A loopback HTTP server speaking the few Hub endpoints huggingface_hub calls (for HF_ENDPOINT in tests).

Serves model repositories from memory: ``GET /api/models/{repo}[/revision/{rev}]`` (model info) and
``HEAD``/``GET /{repo}/resolve/{rev}/{file}`` with ``Range`` support. A private repository answers 401
without its token, as the Hub does. Every request is logged, with the bytes sent per file (counted as
they are written, so a client that hangs up mid-body is seen). ``Repo.declared`` makes it lie: HEAD
declares those sizes, GET sends the real body. ``Repo.misbehave`` makes it stall or send the client
elsewhere (:class:`Act`); ``HubServer.elsewhere`` is a second loopback server, on another port, that
records what reaches it (``{elsewhere}`` in a redirect's location is its URL).
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse


class Act(enum.Enum):
    """How a misbehaving endpoint answers."""

    HANG = "hang"  # reads the request, never answers
    DRIP = "drip"  # the whole answer (status line and headers too), one byte a second
    RETRY_LATER = "retry-later"  # 429 with Retry-After: 999999
    LONG_LENGTH = "long-length"  # Content-Length of 1 GB, the real body, then silence (the connection held open)
    REDIRECT = "redirect"  # 302 to ``location``
    CUT = "cut"  # the headers and the first byte of the body, then the connection closed (on every try)
    FLOOD = "flood"  # 200 without a Content-Length, then zeros until the client hangs up (1 GiB at most)


@dataclass(frozen=True)
class Misbehaviour:
    act: Act
    location: str = ""  # REDIRECT: where to ("{elsewhere}" is replaced by the second server's URL)
    methods: frozenset[str] = frozenset({"GET", "HEAD"})


API = "api"  # Repo.misbehave's key for the model-info request (other keys are file names)


@dataclass
class Repo:
    files: dict[str, bytes]
    commit: str
    token: str | None = None  # private when set
    declared: dict[str, int] = field(default_factory=dict)  # a lying server: HEAD's size for these files
    ignores_range: frozenset[str] = frozenset()  # files sent whole (200) whatever Range asks
    misbehave: dict[str, Misbehaviour] = field(default_factory=dict)  # API or a file name -> how it misbehaves

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
    elsewhere: list[tuple[str, str, str]] = field(default_factory=list)  # (method, path, Authorization) seen there
    elsewhere_url: str = ""

    def __enter__(self) -> HubServer:  # noqa: PYI034
        hub = self
        self._stop = threading.Event()

        class Elsewhere(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                hub.elsewhere.append((self.command, self.path, self.headers.get("Authorization", "")))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            do_HEAD = do_GET

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
        self._other = HTTPServer(("127.0.0.1", 0), Elsewhere)
        self.elsewhere_url = f"http://127.0.0.1:{self._other.server_address[1]}"
        threading.Thread(target=self._other.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()  # the stalled answers end
        for server in (self._server, self._other):
            server.shutdown()
            server.server_close()

    def _misbehave(self, h, how: Misbehaviour, body: bytes, headers: dict[str, str]) -> None:
        """Answer as ``how`` says (the request has been read)."""
        try:
            if how.act is Act.HANG:
                self._stop.wait(120)
            elif how.act is Act.RETRY_LATER:
                self._send(h, 429, b"{}", {"Retry-After": "999999", "Content-Type": "application/json"})
            elif how.act is Act.REDIRECT:
                h.send_response(302)
                h.send_header("Location", how.location.replace("{elsewhere}", self.elsewhere_url))
                h.send_header("Content-Length", "0")
                h.end_headers()
            elif how.act is Act.LONG_LENGTH:
                h.send_response(200)
                for k, v in headers.items():
                    h.send_header(k, v)
                h.send_header("Content-Length", str(10**9))
                h.end_headers()
                h.wfile.write(body)
                h.wfile.flush()
                self._stop.wait(120)
            elif how.act is Act.CUT:
                h.send_response(200)
                for k, v in headers.items():
                    h.send_header(k, v)
                h.send_header("Content-Length", str(len(body)))
                h.end_headers()
                h.wfile.write(body[:1])
                h.wfile.flush()
                h.close_connection = True
            elif how.act is Act.FLOOD:
                h.send_response(200)
                h.send_header("Content-Type", "application/json")
                h.end_headers()
                for _ in range(1024):
                    h.wfile.write(bytes(2**20))
                    self.bytes_sent[API] += 2**20
            elif how.act is Act.DRIP:
                head = "".join(f"{k}: {v}\r\n" for k, v in {**headers, "Content-Length": str(len(body))}.items())
                raw = f"HTTP/1.1 200 OK\r\n{head}\r\n".encode() + body
                for i in range(len(raw)):
                    h.wfile.write(raw[i : i + 1])
                    h.wfile.flush()
                    if self._stop.wait(1):
                        return
        except (BrokenPipeError, ConnectionResetError):  # the client gave up
            return

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
            how = repo.misbehave.get(API)
            if how is not None and h.command in how.methods:
                return self._misbehave(h, how, json.dumps(info).encode(), {"Content-Type": "application/json"})
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
        how = repo.misbehave.get(m[3])
        if how is not None and h.command in how.methods:
            return self._misbehave(h, how, data, headers)
        rng = re.match(r"bytes=(\d+)-(\d*)$", h.headers.get("Range", "") or "")
        if rng and not head and m[3] not in repo.ignores_range:
            start, end = int(rng[1]), int(rng[2]) if rng[2] else len(data) - 1
            end = min(end, len(data) - 1)
            chunk = data[start : end + 1]
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            return self._send(h, 206, chunk, headers, file=m[3])
        self._send(h, 200, data, headers, head, file=m[3], declared=repo.declared.get(m[3]))

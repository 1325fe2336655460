"""The HTTP client of a Hub audit: one deadline for all its requests, and redirects kept on the endpoint.

A Hub target is audited from whatever the endpoint (``HF_ENDPOINT``: the Hub, a mirror, a proxy) answers,
and the gate must end whatever that is. huggingface_hub's client has no timeout, retries with backoff and
sleeps as long as ``Retry-After`` says, so a request never answered, an answer dripped a byte a second,
``429 Retry-After: 999999`` or a ``Content-Length`` far above the body each held the gate for hours; and it
follows every redirect, so a response could send the audit (and, on the same host, the token) anywhere:
``169.254.169.254``, another local service, a ``file://`` URL.

So for the time of one Hub checkout huggingface_hub's shared client is replaced (``set_client_factory``)
by one whose every socket operation (connect, TLS, each read and write) waits at most the time left of one
:class:`HubClock`; whose answers are cut off past the largest file an audit reads; whose responses asking
for a retry (408, 429, 5xx) end the audit at once when the wait would pass the deadline; whose transport
errors do the same when too little time is left for a retry's backoff; and whose redirects are refused
unless they stay on the endpoint's scheme, host and port (or, for the public Hub, go to its own HTTPS
hosts, where its files are served from). Each refusal is one :class:`HubClientError` line naming the URL
(without its query, which may be signed) and the problem.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpcore2
import httpx2

from ...errors import AuditError, first_line
from ...io.jsonfile import MAX_TOKENIZER_BYTES

DEFAULT_HUB_TIMEOUT = 30  # seconds for the whole Hub part of an audit
TIMEOUT_ENV = "HF_VOCAB_AUDIT_HUB_TIMEOUT"
TIMEOUT_HINT = f"--hub-timeout or {TIMEOUT_ENV}"
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})  # those huggingface_hub retries
LONGEST_BACKOFF = 8.0  # huggingface_hub's longest wait before a retry that names no Retry-After
PUBLIC_HUB_DOMAINS = ("huggingface.co", "hf.co")  # the public Hub and the hosts it serves files from
MAX_RESPONSE_BYTES = MAX_TOKENIZER_BYTES + 2**20  # no answer a Hub audit asks for is longer (the largest file)
_PORTS = {"http": 80, "https": 443}


class HubClientError(AuditError):
    """The Hub part of an audit ran out of time, or a response tried to send it elsewhere (exit 2)."""


def hub_timeout(given: int | None) -> int:
    """The deadline in seconds: the option when given, else ``HF_VOCAB_AUDIT_HUB_TIMEOUT``, else 30."""
    if given is not None:
        return given
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_HUB_TIMEOUT
    if not raw.isdigit() or int(raw) < 1:
        raise AuditError(None, f"{TIMEOUT_ENV} must be a whole number of seconds >= 1, not {raw[:40]!r}")
    return int(raw)


def shown(url: object) -> str:
    """``url`` for an error line: no user and password (an endpoint may carry them), no query or fragment
    (a CDN URL's query is a signature), at most 200 characters."""
    parts = urlsplit(str(url))
    if not parts.scheme:
        return str(url).split("?")[0][:200]
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    port = parts.netloc.rpartition("@")[2].rpartition("]")[2].partition(":")[2]
    return f"{parts.scheme}://{host}{':' + port if port else ''}{parts.path}"[:200]


def _origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # a port out of range or not a number: matches nothing
        port = -1
    return parts.scheme.lower(), (parts.hostname or "").lower(), port or _PORTS.get(parts.scheme.lower(), 0)


@dataclass(frozen=True)
class HubPolicy:
    """Where requests of a Hub audit may go: the endpoint's own origin; for the public Hub, its HTTPS hosts."""

    endpoint: str

    @property
    def public(self) -> bool:
        scheme, host, _ = _origin(self.endpoint)
        return scheme == "https" and host in ("huggingface.co", "hf.co", "hub-ci.huggingface.co")

    def same_origin(self, url: str) -> bool:
        return _origin(url) == _origin(self.endpoint)

    def allows(self, url: str) -> bool:
        if self.same_origin(url):
            return True
        scheme, host, port = _origin(url)
        return self.public and scheme == "https" and port == 443 and any(
            host == domain or host.endswith("." + domain) for domain in PUBLIC_HUB_DOMAINS)


class HubClock:
    """The one deadline of a Hub audit, shared by all its requests (and the request now in flight, for errors).

    Mutable on purpose, and only in ``current``: the requests of a checkout are made one after another, and
    a read that runs out of time is the latest request's."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.current = ""

    def remaining(self) -> float:
        return self.end - time.monotonic()

    def expired(self, url: object = None) -> HubClientError:
        where = shown(url) if url is not None else self.current or None
        return HubClientError(where, f"no complete answer within the {self.seconds}-second Hub deadline "
                                     f"(set {TIMEOUT_HINT} to wait longer)")

    def bound(self, timeout: float | None) -> float:
        """``timeout`` cut to the time left; the deadline error when none is left."""
        left = self.remaining()
        if left <= 0:
            raise self.expired()
        return left if timeout is None else min(timeout, left)

    def failed(self, url: object, exc: Exception) -> Exception:
        """A transport error of ``url``: itself while a retry's backoff still fits, else the deadline error."""
        left = self.remaining()
        if left > LONGEST_BACKOFF:
            return exc
        why = first_line(exc, 160, default="")
        return HubClientError(shown(url), f"{exc.__class__.__name__}{f' ({why})' if why else ''} with "
                                          f"{max(left, 0):.1f} s of the {self.seconds}-second Hub deadline left: "
                                          f"no time to retry (set {TIMEOUT_HINT} to wait longer)")


# --------------------------------------------------------------------------------- the network layer


class _BoundedStream(httpcore2.NetworkStream):
    """A connection whose every read and write waits at most the time left (a drip cannot outlast it)."""

    def __init__(self, inner: httpcore2.NetworkStream, clock: HubClock) -> None:
        self._inner = inner
        self._clock = clock

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            return self._inner.read(max_bytes, self._clock.bound(timeout))
        except httpcore2.ReadTimeout:
            if self._clock.remaining() <= 0:
                raise self._clock.expired() from None
            raise

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        try:
            self._inner.write(buffer, self._clock.bound(timeout))
        except httpcore2.WriteTimeout:
            if self._clock.remaining() <= 0:
                raise self._clock.expired() from None
            raise

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> _BoundedStream:
        return _BoundedStream(self._inner.start_tls(ssl_context, server_hostname, self._clock.bound(timeout)),
                              self._clock)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


def _bounded_backend(inner: httpcore2.NetworkBackend, clock: HubClock) -> httpcore2.NetworkBackend:
    class BoundedBackend(httpcore2.NetworkBackend):
        """Connections opened within the time left, each a :class:`_BoundedStream`."""

        def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                        socket_options: Iterable[Any] | None = None) -> httpcore2.NetworkStream:
            try:
                stream = inner.connect_tcp(host, port, clock.bound(timeout), local_address, socket_options)
            except httpcore2.ConnectTimeout:
                if clock.remaining() <= 0:
                    raise clock.expired() from None
                raise
            return _BoundedStream(stream, clock)

        def sleep(self, seconds: float) -> None:
            inner.sleep(min(seconds, max(clock.remaining(), 0)))

    return BoundedBackend()


# ------------------------------------------------------------------------------ the transport and hooks


def _transport(inner: httpx2.BaseTransport, clock: HubClock) -> httpx2.BaseTransport:
    pool = getattr(inner, "_pool", None)
    if pool is None or not hasattr(pool, "_network_backend"):  # a pinned httpx2 keeps its pool there
        raise RuntimeError("httpx2's transport has no connection pool to bound")
    pool._network_backend = _bounded_backend(pool._network_backend, clock)

    class Body(httpx2.SyncByteStream):
        def __init__(self, stream: Any, url: object) -> None:
            self._stream, self._url = stream, url

        def __iter__(self) -> Iterator[bytes]:
            got = 0
            try:
                for chunk in self._stream:
                    got += len(chunk)
                    if got > MAX_RESPONSE_BYTES:  # huggingface_hub reads a JSON answer whole, into memory
                        raise HubClientError(shown(self._url), f"answered more than {MAX_RESPONSE_BYTES} bytes, "
                                                               "more than any file an audit reads: stopped")
                    yield chunk
            except httpx2.TransportError as exc:
                err = clock.failed(self._url, exc)
                if err is exc:
                    raise
                raise err from None

        def close(self) -> None:
            self._stream.close()

    class BoundedTransport(httpx2.BaseTransport):
        """A transport error near the deadline ends the audit: huggingface_hub would sleep, then retry."""

        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            try:
                response = inner.handle_request(request)
            except httpx2.TransportError as exc:
                err = clock.failed(request.url, exc)
                if err is exc:
                    raise
                raise err from None
            response.stream = Body(response.stream, request.url)
            return response

        def close(self) -> None:
            inner.close()

    return BoundedTransport()


def _retry_wait(headers: Any) -> float:
    """How long huggingface_hub would sleep before retrying this response (at most, when it does not say)."""
    from huggingface_hub.utils import parse_ratelimit_headers

    ratelimit = parse_ratelimit_headers(headers)
    if ratelimit is not None and ratelimit.remaining == 0:
        return float(ratelimit.reset_in_seconds) + 1
    raw = (headers.get("retry-after") or "").strip()
    return float(raw) + 1 if raw.isdigit() else LONGEST_BACKOFF


def bounded_client(clock: HubClock, policy: HubPolicy) -> httpx2.Client:
    """huggingface_hub's client (its request hook, redirects followed, proxies from the environment) with
    every socket operation bounded by ``clock`` and every redirect checked against ``policy``."""
    from huggingface_hub.utils._http import hf_request_event_hook

    def on_request(request: httpx2.Request) -> None:
        clock.current = shown(request.url)
        if not policy.allows(str(request.url)):
            raise HubClientError(shown(request.url), f"a request off the Hub endpoint {shown(policy.endpoint)} "
                                                     "refused")
        if not policy.same_origin(str(request.url)):
            request.headers.pop("authorization", None)  # HF_TOKEN stays with the endpoint
        timeout = request.extensions.get("timeout") or {}
        request.extensions["timeout"] = {k: clock.bound(timeout.get(k)) for k in ("connect", "read", "write", "pool")}

    def on_response(response: httpx2.Response) -> None:
        url = response.request.url
        if response.has_redirect_location:
            target = urljoin(str(url), response.headers["location"])
            if not policy.allows(target):
                raise HubClientError(shown(url), f"redirect to {shown(target)} refused: the Hub client follows "
                                                 f"redirects only within {shown(policy.endpoint)}"
                                                 f"{' and the Hub' if policy.public else ''}")
        if response.status_code in RETRY_STATUSES:
            wait, left = _retry_wait(response.headers), clock.remaining()
            if wait > left:
                raise HubClientError(shown(url), f"the Hub answered HTTP {response.status_code} and a retry would "
                                                 f"wait {wait:.0f} s, past the {clock.seconds}-second Hub deadline "
                                                 f"({max(left, 0):.0f} s left; set {TIMEOUT_HINT} to wait longer)")

    client = httpx2.Client(event_hooks={"request": [hf_request_event_hook, on_request], "response": [on_response]},
                           follow_redirects=True, timeout=None)
    client._transport = _transport(client._transport, clock)
    client._mounts = {pattern: None if t is None else _transport(t, clock) for pattern, t in client._mounts.items()}
    return client


@contextmanager
def bounded_hub(seconds: int, endpoint: str) -> Iterator[HubClock]:
    """huggingface_hub's requests inside the block go through :func:`bounded_client`, under one clock.

    Xet transfers are turned off for the block: hf_xet downloads through its own client, which neither the
    deadline nor the redirect check would see (the Hub serves the same files over HTTPS). huggingface_hub's
    warnings about retries are kept off stderr: an audit that fails says so in one line."""
    from huggingface_hub import constants
    from huggingface_hub.utils import _http, close_session, set_client_factory

    clock, policy = HubClock(seconds), HubPolicy(endpoint)
    before, xet = _http._GLOBAL_CLIENT_FACTORY, constants.HF_HUB_DISABLE_XET
    log = logging.getLogger("huggingface_hub")
    level = log.level
    set_client_factory(lambda: bounded_client(clock, policy))  # a factory: a ConnectError closes the session
    constants.HF_HUB_DISABLE_XET = True
    log.setLevel(logging.ERROR)  # "Retrying in 1s" and the like: the audit's one error line says what failed
    try:
        yield clock
    finally:
        log.setLevel(level)
        constants.HF_HUB_DISABLE_XET = xet
        close_session()
        set_client_factory(before)

"""Catalogue cases: a Hub endpoint that stalls the gate or sends it elsewhere.

Each case serves the healthy tiny checkpoint from ``tests/hub_server.py`` with one request misbehaving
(``Misbehaviour``): no answer, a byte a second, ``429 Retry-After: 999999``, a ``Content-Length`` far above
the body, or a redirect off the endpoint. The stalling ones run with ``--hub-timeout 2``: the whole Hub part
of the audit must end at that deadline with one line naming the request, where it used to wait for hours.
"""

from __future__ import annotations

from pathlib import Path

from hub_server import API, Act, Misbehaviour
from malformed import HUB_ARGS, HUB_MISBEHAVE, case

DEADLINE = "within the 2-second Hub deadline"
GET = frozenset({"GET"})  # the HEAD answers honestly (the declared size passes), the download misbehaves


def _serve(name: str, key: str, how: Misbehaviour, *args: str) -> None:
    HUB_MISBEHAVE[f"org/{name}"] = {key: how}
    HUB_ARGS[f"org/{name}"] = list(args)


@case("hub client", "/api/models/org/hub_model_info_never_answered", hub=True, says=DEADLINE)
def hub_model_info_never_answered(folder: Path) -> None:
    """The first request is read and never answered: huggingface_hub's client has no timeout."""
    _serve("hub_model_info_never_answered", API, Misbehaviour(Act.HANG), "--hub-timeout", "2")


@case("hub client", "/api/models/org/hub_model_info_drips", hub=True, says=DEADLINE)
def hub_model_info_drips(folder: Path) -> None:
    """Status line, headers and body one byte a second: every read returns in time, the answer never ends."""
    _serve("hub_model_info_drips", API, Misbehaviour(Act.DRIP), "--hub-timeout", "2")


@case("hub client", "config.json", hub=True, says="answered HTTP 429 and a retry would wait 1000000 s")
def hub_retry_after_999999(folder: Path) -> None:
    """huggingface_hub sleeps as long as Retry-After says before it retries a download: 11.6 days."""
    _serve("hub_retry_after_999999", "config.json", Misbehaviour(Act.RETRY_LATER, methods=GET), "--hub-timeout", "2")


@case("hub client", "config.json", hub=True, says=DEADLINE)
def hub_content_length_above_body(folder: Path) -> None:
    """The download declares 1 GB, sends the real config and holds the connection open."""
    _serve("hub_content_length_above_body", "config.json", Misbehaviour(Act.LONG_LENGTH, methods=GET),
           "--hub-timeout", "2")


@case("hub client", "config.json", hub=True, says="no time to retry")
def hub_download_cut_on_every_try(folder: Path) -> None:
    """One byte, then the connection closed: huggingface_hub resumes after a second, and resets its count of
    tries whenever a byte arrived, so it resumed without end."""
    _serve("hub_download_cut_on_every_try", "config.json", Misbehaviour(Act.CUT, methods=GET), "--hub-timeout", "2")


@case("hub client", "config.json", hub=True, says="redirect to http://169.254.169.254/latest/meta-data/ refused")
def hub_redirect_to_link_local(folder: Path) -> None:
    """A cloud's metadata service: the answer would become the audited config."""
    _serve("hub_redirect_to_link_local", "config.json",
           Misbehaviour(Act.REDIRECT, "http://169.254.169.254/latest/meta-data/"))


@case("hub client", "config.json", hub=True, says="refused: the Hub client follows redirects only within")
def hub_redirect_to_another_loopback_port(folder: Path) -> None:
    """Only the download redirects, to another local service (tests/hub_server.py's second server)."""
    _serve("hub_redirect_to_another_loopback_port", "config.json",
           Misbehaviour(Act.REDIRECT, "{elsewhere}/org/x/resolve/main/config.json", GET))


@case("hub client", "config.json", hub=True, says="redirect to file:///etc/passwd refused")
def hub_redirect_to_a_local_file(folder: Path) -> None:
    _serve("hub_redirect_to_a_local_file", "config.json", Misbehaviour(Act.REDIRECT, "file:///etc/passwd", GET))

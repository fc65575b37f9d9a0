"""DIGEST 7.4: GET and DELETE on the endpoint SHOULD get 405 (SL-11).

Why a rule of its own: a modern server has no GET stream (replaced by `subscriptions/listen`)
and no session to DELETE, so either on the MCP endpoint is a leftover of the 2025 transport;
answering it 2xx keeps a second, unaudited way into the server open. The digest states the
duty in 7.4 without a row id; it is filed as SL-11, next to SL-10 (the same section's "no
session ids"). Read from the send the HTTP driver recorded ("GET /mcp": `Sent.kind` "endpoint",
no frame at all, so no frame rule judges it) and the status of the response that answers it.

7.4 is how a modern-only server treats legacy traffic. A dual-era server still serves the 2025
transport, where a GET opens the server's SSE stream (or is refused for want of a session, 400)
and a DELETE ends a session (or finds none to end: 400, 404): from it such an answer is the
legacy transport doing its job, a HEURISTIC (the endpoint stays open), not the SHOULD. SL-11
applies this era policy itself (`stateless.OWN_ERA_POLICY`).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from mcp_tempest.fuzz.oracle.exchange import Exchange, Pair
from mcp_tempest.fuzz.oracle.facts import header, http_verb
from mcp_tempest.fuzz.oracle.model import Strength, Violation, rule

PROBED_METHODS = ("GET", "DELETE")
#: What a 2025-11-25 Streamable HTTP endpoint answers a bodiless GET or DELETE with, besides 405.
LEGACY_ANSWERS = {"GET": frozenset({200, 400}), "DELETE": frozenset({400, 404})}


def _on_endpoint(x: Exchange, pair: Pair) -> bool:
    """Whether the request went to the MCP endpoint itself (its process's spawn note is the
    endpoint URL), not to another path such as the protected resource metadata (AUTH-14)."""
    path = urlsplit(pair.event.note.split(" ", 1)[-1]).path
    spawn = next((e for e in x.events if e.kind == "spawn" and e.proc == pair.proc), None)
    url = spawn.note.split(" ", 1)[0] if spawn is not None else ""
    return not url.startswith("http") or urlsplit(url).path == path


def _legacy_answer(x: Exchange, pair: Pair, verb: str, status: int) -> bool:
    if status not in LEGACY_ANSWERS[verb]:
        return False
    if verb == "GET" and status == 200:
        media = header(x.response_headers(pair), "Content-Type") or ""
        return media.split(";", 1)[0].strip().lower() == "text/event-stream"
    return True


@rule("SL-11", "SHOULD", "GET and DELETE on the MCP endpoint get 405 Method Not Allowed")
def sl_11(x: Exchange) -> list[Violation]:
    if not x.transport.http_semantics:
        return []
    out: list[Violation] = []
    for pair in x.pairs:
        verb = http_verb(pair.event.note)
        if pair.sent.kind != "endpoint" or verb not in PROBED_METHODS or not _on_endpoint(x, pair):
            continue
        status = x.status_of(pair)
        if status is None or status == 405:
            continue  # (no HTTP response at all: the transport rules report a dropped connection)
        answer = next(i for i in (*pair.responses, *pair.stream, *pair.http) if x.events[i].status is not None)
        strength: Strength = "SHOULD"
        why = "a modern server has no GET stream and no session to delete"
        if x.dual and _legacy_answer(x, pair, verb, status):
            strength = "HEURISTIC"
            why = "a dual-era server's 2025 transport answered it (that way in stays open)"
        out.append(Violation("SL-11", strength, f"{verb} on the MCP endpoint was not refused with 405",
                             f"HTTP {status}; {why}", None, answer))
    return out

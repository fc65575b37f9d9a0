"""DIGEST 7.4: GET and DELETE on the endpoint SHOULD get 405 (SL-11).

Why a rule of its own: a modern server has no GET stream (replaced by `subscriptions/listen`)
and no session to DELETE, so either on the MCP endpoint is a leftover of the 2025 transport;
answering it 2xx keeps a second, unaudited way into the server open. The digest states the
duty in 7.4 without a row id; it is filed as SL-11, next to SL-10 (the same section's "no
session ids"). Read from the send event the HTTP driver recorded ("GET /mcp") and the status
of the response that answers it.
"""

from __future__ import annotations

from mcp_tempest.fuzz.oracle.exchange import Exchange
from mcp_tempest.fuzz.oracle.model import Violation, rule

PROBED_METHODS = ("GET", "DELETE")


@rule("SL-11", "SHOULD", "GET and DELETE on the MCP endpoint get 405 Method Not Allowed")
def sl_11(x: Exchange) -> list[Violation]:
    if not x.transport.http_semantics:
        return []
    out: list[Violation] = []
    for i, event in enumerate(x.events):
        verb = event.note.split(" ", 1)[0] if event.kind == "send" and event.note else ""
        if verb not in PROBED_METHODS:
            continue
        answer = next((j for j, e in enumerate(x.events) if e.ref == i and e.status is not None), None)
        if answer is None:
            continue  # no HTTP response at all: the transport rules report a dropped connection
        status = x.events[answer].status
        if status != 405:
            out.append(Violation("SL-11", "SHOULD", f"{verb} on the MCP endpoint was not refused with 405",
                                 f"HTTP {status}; a modern server has no GET stream and no session to delete",
                                 None, answer))
    return out

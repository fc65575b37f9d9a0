"""The scripted server: one client frame in, the frames the case says to write back out.

Pure and transport-free, so the stdio stub and the loopback HTTP server play a case the same
way. It answers every request (a frame with a method and an id) once per its case, answers
unknown methods with -32601, and never answers notifications or responses: a client that sends
a response (STDIO-04, HTTP-04) gets nothing back, as a stateless server would do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from mcp_tempest.fuzz.client.case import DEFAULT_RESULTS, ClientCase, Play, legacy_result
from mcp_tempest.targets.wire import METHOD_NOT_FOUND

NOTE_REPLY = "reply"  # the note of a frame that answers a request ("reply:<probe>" when the play has one)
NOTE_HOSTILE = "hostile:"  # prefix of a frame written ahead of or after the answer


@dataclass(slots=True)
class Outgoing:
    raw: bytes  # the exact line (stdio: written followed by one newline), or one SSE data payload
    message: Any  # the parsed frame, None when `raw` is not JSON
    note: str  # NOTE_REPLY, or NOTE_HOSTILE + the probe name
    sse: bool = False  # HTTP: the play asked for an SSE response
    hold: float = 0.0  # seconds to keep this answer back while the client may send more (0: at once)


class ScriptedServer:
    """Plays one case; keeps only the per-method request counts (state of the script, not of MCP)."""

    def __init__(self, case: ClientCase) -> None:
        self.case = case
        self.counts: dict[str, int] = {}

    def answer(self, message: Any) -> list[Outgoing]:
        if not (isinstance(message, dict) and isinstance(message.get("method"), str) and "id" in message):
            return []
        method = message["method"]
        if self.case.era == "legacy":
            result = legacy_result(method)
            if result is None:
                return [_out({"jsonrpc": "2.0", "id": message["id"], "error": {
                    "code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"}}, NOTE_REPLY)]
            return [_out({"jsonrpc": "2.0", "id": message["id"], "result": result}, NOTE_REPLY + ":legacy-server")]
        n = self.counts.get(method, 0)
        self.counts[method] = n + 1
        play = self.case.play_for(method, n)
        rid = message["id"]
        if play is None:
            default = DEFAULT_RESULTS.get(method)
            if default is None:
                return [_out({"jsonrpc": "2.0", "id": rid, "error": {
                    "code": METHOD_NOT_FOUND, "message": f"method not found: {method}"}}, NOTE_REPLY)]
            return [_out({"jsonrpc": "2.0", "id": rid, "result": default}, NOTE_REPLY)]
        out = [hostile_frame(kind, rid) for kind in play.before]
        reply = _out(reply_frame(play, rid), NOTE_REPLY + (f":{play.probe}" if play.probe else ""))
        out.append(reply)
        if play.duplicate:
            out.append(Outgoing(reply.raw, reply.message, NOTE_HOSTILE + "response-duplicate"))
        for o in out:
            o.sse = play.sse
            o.hold = play.hold
        return out


def reply_frame(play: Play, rid: Any) -> dict[str, Any]:
    if play.kind == "result":
        return {"jsonrpc": "2.0", "id": rid, "result": play.result}
    error: dict[str, Any] = {"code": play.code, "message": play.message or "error"}
    if play.data is not None:
        error["data"] = play.data
    return {"jsonrpc": "2.0", "id": rid, "error": error}


def hostile_frame(kind: str, rid: Any) -> Outgoing:
    note = NOTE_HOSTILE + kind
    if kind == "response-null-id":
        return _out({"jsonrpc": "2.0", "id": None, "result": {"resultType": "complete", "content": []}}, note)
    if kind == "response-unknown-id":
        other = f"tempest-{rid}" if isinstance(rid, int) else 987654321
        return _out({"jsonrpc": "2.0", "id": other, "result": {"resultType": "complete", "content": []}}, note)
    if kind == "stdout-noise":
        return Outgoing(b"mcp-tempest: this line is not JSON", None, note)
    if kind == "frame-split":
        whole = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                              "params": {"progressToken": "tempest", "progress": 1}})
        return Outgoing(whole[:20] + b"\n" + whole[20:], None, note)
    if kind == "server-request":
        return _out({"jsonrpc": "2.0", "id": "tempest-server-request", "method": "elicitation/create",
                     "params": {"mode": "form", "message": "legacy-style request",
                                "requestedSchema": {"type": "object", "properties": {}}}}, note)
    raise ValueError(f"unknown hostile frame {kind!r}")


def _out(message: dict[str, Any], note: str) -> Outgoing:
    return Outgoing(orjson.dumps(message), message, note)

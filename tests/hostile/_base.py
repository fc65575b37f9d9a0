"""The small correct stdio server every hostile one bends: one JSON-RPC message per line, a
DiscoverResult with no optional capabilities, -32601 for anything else (ping included: 2026-07-28
removed it), -32602 for a logLevel that is no LoggingLevel, and the id-less
-32700/-32600 that JSON-RPC 2.0 (RPC-01, RPC-07) demands for a frame it cannot read.

Each hostile server overrides `reply` (what to write for one line) or `write`; stdlib only, so
the corpus runs wherever the tests do.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

MODERN = "2026-07-28"
SERVER_INFO = {"name": "hostile", "version": "0.0.1"}
LOG_LEVELS = frozenset({"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"})


def result(rid: Any, body: dict[str, Any]) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/serverInfo": SERVER_INFO}
    return {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete", **body, "_meta": meta}}


def error(rid: Any, code: int, message: str) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "error": {"code": code, "message": message}}
    if rid is not None:
        out["id"] = rid
    return out


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def reply(line: bytes) -> dict[str, Any] | None:
    """What a correct server writes for one input line (None: nothing)."""
    if not line.strip():
        return None
    try:
        msg = json.loads(line)
    except ValueError:
        return error(None, -32700, "Parse error")
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str):
        rid = msg.get("id") if isinstance(msg, dict) and _valid_id(msg.get("id")) else None
        if isinstance(msg, dict) and "method" not in msg and ("result" in msg or "error" in msg):
            return None  # a response from the client: nothing to answer
        return error(rid, -32600, "Invalid Request")
    if "id" not in msg:
        return None  # a notification
    rid = msg["id"]
    if not _valid_id(rid):
        return error(None, -32600, "Invalid Request: bad id")
    params = msg.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("io.modelcontextprotocol/protocolVersion"), str) \
            or not isinstance(meta.get("io.modelcontextprotocol/clientCapabilities"), dict):
        return error(rid, -32602, "Invalid params: _meta protocolVersion and clientCapabilities are required")
    level = meta.get("io.modelcontextprotocol/logLevel")
    if level is not None and level not in LOG_LEVELS:
        return error(rid, -32602, "Invalid params: logLevel is not a LoggingLevel")
    version = meta["io.modelcontextprotocol/protocolVersion"]
    if version != MODERN:
        out = error(rid, -32022, "Unsupported protocol version")
        out["error"]["data"] = {"supported": [MODERN], "requested": version}
        return out
    method = msg["method"]
    if method == "server/discover":
        return result(rid, {"supportedVersions": [MODERN], "capabilities": {}, "ttlMs": 0, "cacheScope": "public"})
    return error(rid, -32601, "Method not found")


def reply_with(line: bytes, answer: Callable[[str, dict[str, Any]], dict[str, Any] | None],
               discover: dict[str, Any]) -> dict[str, Any] | None:
    """The reply of a server with more methods than this one: the correct reply, except that a
    method it answers -32601 is answered with the result body `answer(method, params)` gives
    (None: still -32601), and server/discover's result takes the `discover` members."""
    out = reply(line)
    if out is None:
        return None
    try:
        msg = json.loads(line)
    except ValueError:
        return out
    if not isinstance(msg, dict):
        return out
    if out.get("error", {}).get("code") == -32601:
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        body = answer(str(msg.get("method")), params)
        if body is not None:
            out = result(msg.get("id"), body)
    elif msg.get("method") == "server/discover" and "result" in out:
        out["result"].update(discover)
    return out


def tool_called(params: dict[str, Any]) -> dict[str, Any]:
    """A tools/call result naming the tool: what the hostile list servers' tools do."""
    return {"content": [{"type": "text", "text": f"called {params.get('name')}"}]}


def write(msg: dict[str, Any]) -> None:
    sys.stdout.buffer.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")
    sys.stdout.buffer.flush()


def serve(handle: Any = None) -> None:
    """Read lines until EOF; `handle(line, n)` (n = 0-based line count) replaces the correct reaction."""
    n = 0
    for line in sys.stdin.buffer:
        if handle is not None:
            handle(line, n)
        else:
            out = reply(line)
            if out is not None:
                write(out)
        n += 1


if __name__ == "__main__":
    serve()

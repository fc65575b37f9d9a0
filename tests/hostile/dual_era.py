"""A dual-era server shaped like phocinae-mcp 0.2.6 (PyPI): it completes the 2025-11-25
`initialize` handshake and serves 2026-07-28 requests, choosing the era per frame: a request
whose `_meta` claims a protocolVersion is served by modern rules (results carry `resultType`),
one without the claim by 2025-era rules (no `resultType`). It never pins a process to an era.

Its bugs (all three SHOULD deviations; `--strict` makes it the correct dual-era server):
  - `params` that is not an object (`params: []`) is read as a claim-less 2025-era request and
    served, though no revision's schema accepts it (RPC-13, filed under META-04);
  - so is a `_meta` that is not an object (`_meta: "x"`; META-04);
  - a modern request's invalid `logLevel` ("warn") is ignored, not refused with -32602 (LOG-03).

Usage: python dual_era.py [--strict]   (stdlib only; over HTTP: http_front.py PORT dual_era, with
HOSTILE_STRICT=1 for --strict)
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import _base

STRICT = "--strict" in sys.argv[1:] or os.environ.get("HOSTILE_STRICT") == "1"
LEGACY = "2025-11-25"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
DISCOVER = {"capabilities": {"tools": {}}}


def _modern_answer(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    if method == "tools/list":
        return {"tools": [], "ttlMs": 0, "cacheScope": "public"}
    return None


def _legacy(rid: Any, method: str) -> dict[str, Any]:
    """The 2025-era reading: the handshake, ping and the tools (none), results without resultType."""
    if method == "initialize":
        body: dict[str, Any] = {"protocolVersion": LEGACY, "capabilities": {"tools": {}}, "serverInfo": _base.SERVER_INFO}
    elif method == "tools/list":
        body = {"tools": []}
    elif method == "ping":
        body = {}
    elif method == "tools/call":
        return _base.error(rid, -32602, "Unknown tool")  # it lists none
    else:
        return _base.error(rid, -32601, "Method not found")
    return {"jsonrpc": "2.0", "id": rid, "result": body}


def reply(line: bytes) -> dict[str, Any] | None:
    try:
        msg = json.loads(line)
    except ValueError:
        return _base.reply(line)
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str) \
            or "id" not in msg or not _base._valid_id(msg["id"]):
        return _base.reply(line)  # a bad envelope, a notification: as the correct base
    rid, method = msg["id"], msg["method"]
    params = msg.get("params", {})
    if not isinstance(params, dict) or not isinstance(params.get("_meta", {}), dict):
        if STRICT:
            return _base.error(rid, -32602, "Invalid params: params and _meta must be objects")
        return _legacy(rid, method)  # the bug: read as a request without a protocolVersion claim
    meta = params.get("_meta") or {}
    if not isinstance(meta.get(VERSION_KEY), str):
        return _legacy(rid, method)
    if not STRICT and LOG_LEVEL_KEY in meta:
        # the bug: the level is never checked (the correct base refuses a bad one with -32602)
        msg = {**msg, "params": {**params, "_meta": {k: v for k, v in meta.items() if k != LOG_LEVEL_KEY}}}
        line = json.dumps(msg).encode()
    out = _base.reply_with(line, _modern_answer, DISCOVER)
    if method == "tools/call" and out is not None and out.get("error", {}).get("code") == -32601:
        return _base.error(rid, -32602, "Unknown tool")  # it lists none
    return out


def handle(line: bytes, n: int) -> None:
    out = reply(line)
    if out is not None:
        _base.write(out)


if __name__ == "__main__":
    _base.serve(handle)

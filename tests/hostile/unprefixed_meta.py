"""Speaks neither era: it reads `_meta` keys without their `io.modelcontextprotocol/` prefix (as
mcp-agent-kit 0.1.0 does), so it refuses server/discover and initialize alike with a -32602 of its
own words. Verdict: unusable target (exit 2), and the harness quotes that refusal, code and
message, instead of saying only "speaks no known MCP era". REFUSAL is the message, bent with an
escape sequence and a bidi override the quote must show escaped."""

from __future__ import annotations

import json
from typing import Any

import _base

REFUSAL = "params._meta.protocolVersion must be a non-empty string"
HOSTILE_TAIL = "\x1b[2J\u202e"


def handle(line: bytes, n: int) -> None:
    try:
        msg: Any = json.loads(line)
    except ValueError:
        _base.write(_base.error(None, -32700, "Parse error"))
        return
    if not isinstance(msg, dict) or "id" not in msg:
        return
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    if not isinstance(meta.get("protocolVersion"), str) or not meta["protocolVersion"]:
        _base.write(_base.error(msg["id"], -32602, REFUSAL + HOSTILE_TAIL))
        return
    _base.write(_base.error(msg["id"], -32601, "Method not found"))


if __name__ == "__main__":
    _base.serve(handle)

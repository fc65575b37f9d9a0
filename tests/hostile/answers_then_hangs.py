"""A correct server with one tool that answers its first HOSTILE_ANSWERS requests (default 5),
then reads on and never answers again: over HTTP (http_front.py) every later request keeps its
connection open without a byte, as a wedged server that still accepts connections does.

once_then_hang.py is the same wedge on a server with no tools, whose every tools/list is a -32601;
here the requests before the wedge all succeed, so a load run's only failures are the requests
the server never answered. The tool is named like a real server's long one
(`search_repositories_by_topic`), so the tables show it at its realistic width.

Verdict: `load` fails (exit 1), the requests in flight at the stop counted as timeouts of their
names, with "the server stopped answering at t=...s" on the last line.
Usage: HOSTILE_ANSWERS=K python http_front.py PORT answers_then_hangs
"""

from __future__ import annotations

import os
import threading
from typing import Any

import _base

TOOL = {
    "name": "search_repositories_by_topic",
    "description": "Repositories tagged with a topic.",
    "inputSchema": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]},
}
_left = int(os.environ.get("HOSTILE_ANSWERS", "5"))
_lock = threading.Lock()  # http_front.py calls `handle` from one thread per connection


def answer(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        return _base.tool_called(params)
    return None


def handle(line: bytes, n: int) -> None:
    global _left
    out = _base.reply_with(line, answer, {"capabilities": {"tools": {}}})
    if out is None:
        return
    with _lock:
        if _left <= 0:
            return  # wedged: read, never answered
        _left -= 1
    _base.write(out)


if __name__ == "__main__":
    _base.serve(handle)

"""A server correct in everything but its `tools/list`, which is as hostile as its options say:
the catalogue cases of issue 30, one server so each test names its case on the command line.

    python hostile_list.py [--tools N] [--page N] [--desc-bytes N] [--depth N]
                           [--cursor endless|repeat] [--name TEXT] [--description TEXT] [--drift]

--tools N        tools listed in all (default 3); --page N per page (default: all on one page)
--desc-bytes N   every description padded to N bytes
--depth N        every inputSchema nested N objects deep (a chain of `properties.x`)
--cursor endless nextCursor never ends: every page has a fresh cursor (tools are numbered on)
--cursor repeat  every page answers nextCursor "again" (a pagination loop)
--name TEXT      the first tool's name (escapes, bidi characters, fake lines)
--description    the first tool's description
--drift          each process lists a description of its own (its pid): TOOL-02 drift

tools/call answers a text result naming the tool; stdlib only.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import _base


def _options() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--tools", type=int, default=3)
    p.add_argument("--page", type=int, default=0)
    p.add_argument("--desc-bytes", type=int, default=0)
    p.add_argument("--depth", type=int, default=0)
    p.add_argument("--cursor", choices=("endless", "repeat"), default=None)
    p.add_argument("--name", default=None)
    p.add_argument("--description", default=None)
    p.add_argument("--drift", action="store_true")
    return p.parse_args()


OPTS = _options()


def _schema(depth: int) -> dict[str, Any]:
    inner: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        inner = {"type": "object", "properties": {"x": inner}}
    return {"type": "object", "properties": {"x": inner}} if depth else {"type": "object"}


SCHEMA = _schema(OPTS.depth)


def tool(i: int) -> dict[str, Any]:
    name = OPTS.name if (i == 0 and OPTS.name is not None) else f"tool_{i}"
    text = OPTS.description if (i == 0 and OPTS.description is not None) else f"Tool number {i}."
    if OPTS.drift:
        text = f"{text} Served by process {os.getpid()}."
    if OPTS.desc_bytes > len(text):
        text = text + "." * (OPTS.desc_bytes - len(text))
    return {"name": name, "description": text, "inputSchema": SCHEMA}


def tools_page(cursor: Any) -> dict[str, Any]:
    start = int(cursor) if isinstance(cursor, str) and cursor.isdigit() else 0
    size = OPTS.page or OPTS.tools
    if OPTS.cursor is None:
        end = min(start + size, OPTS.tools)
        body: dict[str, Any] = {"tools": [tool(i) for i in range(start, end)]}
        if end < OPTS.tools:
            body["nextCursor"] = str(end)
        return body
    body = {"tools": [tool(i) for i in range(start, start + size)]}
    body["nextCursor"] = str(start + size) if OPTS.cursor == "endless" else "again"
    return body


def handle(line: bytes, n: int) -> None:
    out = _base.reply(line)
    if out is None:
        return
    try:
        msg = json.loads(line)
    except ValueError:
        msg = None
    if isinstance(msg, dict) and out.get("error", {}).get("code") == -32601:
        rid = msg.get("id")
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        if msg.get("method") == "tools/list":
            out = _base.result(rid, tools_page(params.get("cursor")))
        elif msg.get("method") == "tools/call":
            out = _base.result(rid, {"content": [{"type": "text", "text": f"called {params.get('name')}"}]})
    elif isinstance(msg, dict) and msg.get("method") == "server/discover" and "result" in out:
        out["result"]["capabilities"] = {"tools": {}}
    _base.write(out)


if __name__ == "__main__":
    _base.serve(handle)

"""A server correct in everything but its `tools/list`, which is as hostile as its options say:
the catalogue cases of issue 30, one server so each test names its case on the command line.

    python hostile_list.py [--tools N] [--page N] [--desc-bytes N] [--depth N] [--schemas FILE]
                           [--cursor endless|repeat] [--name TEXT] [--description TEXT] [--drift]

--tools N        tools listed in all (default 3); --page N per page (default: all on one page)
--desc-bytes N   every description padded to N bytes
--depth N        every inputSchema nested N objects deep (a chain of `properties.x`), any N
--schemas FILE   one JSON schema a line: tool i lists line i modulo their number, as written
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
import sys
from typing import Any

import _base


def _options() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--tools", type=int, default=3)
    p.add_argument("--page", type=int, default=0)
    p.add_argument("--desc-bytes", type=int, default=0)
    p.add_argument("--depth", type=int, default=0)
    p.add_argument("--schemas", default=None)
    p.add_argument("--cursor", choices=("endless", "repeat"), default=None)
    p.add_argument("--name", default=None)
    p.add_argument("--description", default=None)
    p.add_argument("--drift", action="store_true")
    return p.parse_args()


OPTS = _options()


def _schema_text(depth: int) -> str:
    """The --depth chain as JSON text, built as text: json.dumps (and json.loads) of a value
    nested near 1,000 levels ends in a RecursionError, and a server may list one."""
    if not depth:
        return '{"type":"object"}'
    return '{"type":"object","properties":{"x":' * (depth + 1) + '{"type":"string"}' + "}}" * (depth + 1)


def _schema_texts() -> list[str]:
    if OPTS.schemas is None:
        return [_schema_text(OPTS.depth)]
    with open(OPTS.schemas, encoding="utf-8") as fh:
        return [line.strip() for line in fh if line.strip()]


# Each tool lists a marker string; `write_out` puts the schema's text in its place.
SCHEMA_TEXTS = _schema_texts()
MARKS = [f"\u0000schema {k}\u0000" for k in range(len(SCHEMA_TEXTS))]
# Schemas written as text only where they must be (deep, or given): stdio only, then
AS_TEXT = bool(OPTS.depth or OPTS.schemas)


def tool(i: int) -> dict[str, Any]:
    name = OPTS.name if (i == 0 and OPTS.name is not None) else f"tool_{i}"
    text = OPTS.description if (i == 0 and OPTS.description is not None) else f"Tool number {i}."
    if OPTS.drift:
        text = f"{text} Served by process {os.getpid()}."
    if OPTS.desc_bytes > len(text):
        text = text + "." * (OPTS.desc_bytes - len(text))
    schema: Any = MARKS[i % len(MARKS)] if AS_TEXT else {"type": "object"}
    return {"name": name, "description": text, "inputSchema": schema}


def write_out(msg: dict[str, Any]) -> None:
    if not AS_TEXT:  # through _base.write, which tests/hostile/http_front.py takes over for HTTP
        _base.write(msg)
        return
    text = json.dumps(msg, separators=(",", ":"))
    for mark, schema in zip(MARKS, SCHEMA_TEXTS, strict=True):
        text = text.replace(json.dumps(mark), schema)
    sys.stdout.buffer.write(text.encode() + b"\n")
    sys.stdout.buffer.flush()


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


def answer(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    if method == "tools/list":
        return tools_page(params.get("cursor"))
    return _base.tool_called(params) if method == "tools/call" else None


def handle(line: bytes, n: int) -> None:
    out = _base.reply_with(line, answer, {"capabilities": {"tools": {}}})
    if out is not None:
        write_out(out)


if __name__ == "__main__":
    _base.serve(handle)

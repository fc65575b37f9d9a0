"""DIGEST 9.1: the tool rules the oracle left out, TOOL-03, TOOL-06 and TOOL-12.

TOOL-03  tools/list order SHOULD be deterministic when the set is unchanged: two answers with
         the same names (for requests declaring the same capabilities and cursor) in another
         order are a SHOULD deviation, however the set may legitimately vary (TOOL-02's job).
TOOL-06  tool names SHOULD be 1-128 characters of [A-Za-z0-9_.-] and unique within the server.
TOOL-12  a tool returning structuredContent SHOULD also return its serialised JSON in a
         TextContent block. The spec's own example (CallToolResult/result-with-array-structured-
         content.json) renders it as prose instead, so only a result with no text block at all
         is flagged: a client without structured output then gets nothing to read.
Every result a campaign sees is judged, so these need no probe of their own: any valid
tools/list or tools/call exercises them.
"""

from __future__ import annotations

import re
from typing import Any, Final

import orjson

from mcp_tempest.fuzz.oracle.exchange import Exchange
from mcp_tempest.fuzz.oracle.facts import describe
from mcp_tempest.fuzz.oracle.model import Violation, rule
from mcp_tempest.fuzz.oracle.results import cacheable_complete, modern_results

_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_.\-]{1,128}\Z")


def _tool_lists(x: Exchange) -> list[tuple[Any, int, list[Any]]]:
    return [(pair, i, result["tools"]) for pair, i, result in cacheable_complete(x)
            if pair.method == "tools/list" and isinstance(result.get("tools"), list)]


@rule("TOOL-03", "SHOULD", "tools/list order is deterministic when the set of tools is unchanged",
      scope="transcript")
def tool_03(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    seen: dict[tuple[str, bytes, frozenset[str]], tuple[list[str], int]] = {}
    for pair, i, tools in _tool_lists(x):
        names = [str(t.get("name")) for t in tools if isinstance(t, dict)]
        cursor = describe(pair.sent.params.get("cursor") if pair.sent.params else None)
        caps = orjson.dumps(pair.sent.capabilities, option=orjson.OPT_SORT_KEYS)
        key = (cursor, caps, frozenset(names))
        if key in seen and seen[key][0] != names:
            out.append(Violation("TOOL-03", "SHOULD", "tools/list gave the same tools in another order",
                                 f"event {seen[key][1]}: {seen[key][0][:6]}, now {names[:6]}", "tools/list", i))
            continue
        seen.setdefault(key, (names, i))
    return out


@rule("TOOL-06", "SHOULD", "tool names are 1-128 characters of [A-Za-z0-9_.-], unique within the server")
def tool_06(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for _pair, i, tools in _tool_lists(x):
        names = [t.get("name") for t in tools if isinstance(t, dict)]
        bad = [n for n in names if isinstance(n, str) and not _TOOL_NAME.match(n)]
        if bad:
            out.append(Violation("TOOL-06", "SHOULD", "tool name outside [A-Za-z0-9_.-]{1,128}",
                                 ", ".join(describe(n) for n in bad[:5]), "tools/list", i))
        dupes = sorted({n for n in names if isinstance(n, str) and names.count(n) > 1})
        if dupes:
            out.append(Violation("TOOL-06", "SHOULD", "tools/list names a tool twice",
                                 ", ".join(describe(n) for n in dupes[:5]), "tools/list", i))
    return out


@rule("TOOL-12", "SHOULD", "a tool returning structuredContent also returns its JSON in a TextContent block")
def tool_12(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for pair, i, _said, result in modern_results(x):
        if pair.method != "tools/call" or "structuredContent" not in result:
            continue
        if result.get("resultType", "complete") != "complete":
            continue
        content = result.get("content")
        texts = [c.get("text") for c in content if isinstance(c, dict) and c.get("type") == "text"] \
            if isinstance(content, list) else []
        if not any(isinstance(t, str) for t in texts):
            name = pair.sent.params.get("name") if pair.sent.params else None
            out.append(Violation("TOOL-12", "SHOULD", "structuredContent without a TextContent block",
                                 f"tool {describe(name)}: the result's content has no text block for clients "
                                 "without structured output", "tools/call", i))
    return out

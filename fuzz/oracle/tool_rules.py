"""DIGEST 9.1: the tool rules the oracle left out: TOOL-03, TOOL-06 and TOOL-12 on what a server
lists and returns, TOOL-09, TOOL-10 and TOOL-15 on what runs inside a tool call.

TOOL-03  tools/list order SHOULD be deterministic when the set is unchanged: two answers with
         the same names (for requests declaring the same capabilities and cursor) in another
         order are a SHOULD deviation, however the set may legitimately vary (TOOL-02's job).
TOOL-06  tool names SHOULD be 1-128 characters of [A-Za-z0-9_.-] and unique within the server.
TOOL-12  a tool returning structuredContent SHOULD also return its serialised JSON in a
         TextContent block. The spec's own example (CallToolResult/result-with-array-structured-
         content.json) renders it as prose instead, so only a result with no text block at all
         is flagged: a client without structured output then gets nothing to read.
TOOL-09  a tool the server did not list is a protocol error, never a result (see `tool_09`).
TOOL-10  a tool's own failure on arguments its inputSchema accepts is an isError result, never a
         JSON-RPC error or an HTTP 5xx (see `tool_10`).
TOOL-15  (heuristic) an error message or an isError result carries a stack trace (see `tool_15`).

TOOL-09 and TOOL-10 need to know what the server offers, and the oracle knows only the
transcript: like TOOL-11 they read the tools/list answers of the same transcript, so a call is
judged only when that transcript also listed the tools. The valid property's coverage probes
`unknown-tool` and `tools-after-list` make every default campaign send such a transcript; every
other rule here needs no probe of its own, any valid tools/list or tools/call exercises them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime
from functools import lru_cache
from typing import Any, Final

import orjson

from mcp_tempest.fuzz.oracle.exchange import Exchange, Pair
from mcp_tempest.fuzz.oracle.facts import Said, describe, header, same_id_value
from mcp_tempest.fuzz.oracle.http import header_defects
from mcp_tempest.fuzz.oracle.list_facts import (
    all_objects,
    input_schema_at,
    list_fact,
    names_all_strings,
    names_of,
    schema_position,
    string_names,
)
from mcp_tempest.fuzz.oracle.model import Violation, rule
from mcp_tempest.fuzz.oracle.results import cacheable_complete, modern_results
from mcp_tempest.fuzz.oracle.schemas import request_validator
from mcp_tempest.strategies.json_bounds import MAX_WRITTEN_DEPTH, RECEIVED_SLACK, nesting_depth
from mcp_tempest.targets import wire

_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_.\-]{1,128}\Z")


def _tool_lists(x: Exchange) -> list[tuple[Any, int, list[Any]]]:
    return [(pair, i, result["tools"]) for pair, i, result in cacheable_complete(x)
            if pair.method == "tools/list" and isinstance(result.get("tools"), list)]


@rule("TOOL-03", "SHOULD", "tools/list order is deterministic when the set of tools is unchanged",
      scope="transcript")
def tool_03(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    seen: dict[tuple[str, bytes, frozenset[str]], tuple[tuple[str, ...], int]] = {}
    for pair, i, tools in _tool_lists(x):
        names, name_set = list_fact(x, tools, "names:name", names_of("name"))
        cursor = describe(pair.sent.params.get("cursor") if pair.sent.params else None)
        caps = orjson.dumps(pair.sent.capabilities, option=orjson.OPT_SORT_KEYS)
        key = (cursor, caps, name_set)
        if key in seen and seen[key][0] is not names and seen[key][0] != names:
            out.append(Violation("TOOL-03", "SHOULD", "tools/list gave the same tools in another order",
                                 f"event {seen[key][1]}: {list(seen[key][0][:6])}, now {list(names[:6])}",
                                 "tools/list", i))
            continue
        seen.setdefault(key, (names, i))
    return out


@rule("TOOL-06", "SHOULD", "tool names are 1-128 characters of [A-Za-z0-9_.-], unique within the server")
def tool_06(x: Exchange) -> list[Violation]:
    return [Violation("TOOL-06", "SHOULD", title, detail, "tools/list", i)
            for _pair, i, tools in _tool_lists(x)
            for title, detail in list_fact(x, tools, "tool-06", _name_defects)]


def _name_defects(tools: list[Any]) -> tuple[tuple[str, str], ...]:
    """TOOL-06's (title, detail) for one page: names outside the pattern, names listed twice."""
    out: list[tuple[str, str]] = []
    names = [t.get("name") for t in tools if isinstance(t, dict)]
    bad = [n for n in names if isinstance(n, str) and not _TOOL_NAME.match(n)]
    if bad:
        out.append(("tool name outside [A-Za-z0-9_.-]{1,128}", ", ".join(describe(n) for n in bad[:5])))
    # counted once, not `names.count` per name: that is quadratic, hours on 100,000 tools
    dupes = sorted(n for n, k in Counter(n for n in names if isinstance(n, str)).items() if k > 1)
    if dupes:
        out.append(("tools/list names a tool twice", ", ".join(describe(n) for n in dupes[:5])))
    return tuple(out)


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


# --- what runs inside a tool call: TOOL-09, TOOL-10, TOOL-15 ---

MRTR_PARAMS: Final = ("requestState", "inputResponses")
# Errors that are the protocol's own answer to a request, whatever the tool would have done: the
# request could not be read or routed (-32700, -32600, -32601), its params or headers are wrong
# (-32602, -32020), it needs a capability or version the client lacks (-32021, -32022; the MRTR
# refusals). The pre-release numbers of the last three and the retired URL-elicitation code are
# kept out as well: ERR-DRAFT and ERR-RETIRED report them, and they are refusals, not crashes.
PROTOCOL_CODES: Final = frozenset({
    wire.PARSE_ERROR, wire.INVALID_REQUEST, wire.METHOD_NOT_FOUND, wire.INVALID_PARAMS,
    wire.HEADER_MISMATCH, wire.MISSING_CLIENT_CAPABILITY, wire.UNSUPPORTED_PROTOCOL_VERSION,
    -32001, -32003, -32004, -32042,
})
# HTTP refusals before the tool runs: the authorization layer (401, 403) and rate limiting (429).
REFUSAL_STATUSES: Final = frozenset({401, 403, 429})
_LOG_LEVELS: Final = frozenset({"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"})


def call_summary(method: Any, params: Any) -> str:
    """A tools/call as a person fixing the server wants it named ("" for any other request): the
    tool and its arguments, so a finding about the call says which input to try."""
    if method != "tools/call" or not isinstance(params, dict):
        return ""
    args = describe(params["arguments"], 240) if "arguments" in params else "(none)"
    return f"tools/call of tool {describe(params.get('name'))} with arguments {args}"


def _tool_calls(x: Exchange) -> Iterator[Pair]:
    """tools/call requests that are sound 2026-07-28 requests in themselves: well formed, of a
    supported version, not a probe frame (whose reaction its expectation judges), not an MRTR
    retry (a bad requestState's code is UNSPEC, MRTR-15), not cancelled (CAN-04: any answer is a
    race), with headers that mirror the body over HTTP, and valid against CallToolRequest."""
    for pair in x.pairs:
        sent = pair.sent
        if pair.method != "tools/call" or not sent.well_formed_request or not sent.modern:
            continue
        if pair.index in x.expectations or sent.params is None or not isinstance(sent.params.get("name"), str):
            continue
        if any(k in sent.params for k in MRTR_PARAMS) or _cancelled(x, pair):
            continue
        if x.supported_versions is not None and sent.version not in x.supported_versions:
            continue
        level = (sent.meta or {}).get(wire.META_LOG_LEVEL)
        if level is not None and level not in _LOG_LEVELS:
            continue
        if header_defects(pair):
            continue
        validate = request_validator("tools/call")
        if validate is not None and validate(sent.message):
            continue
        yield pair


def _cancelled(x: Exchange, pair: Pair) -> bool:
    return any(other.index > pair.index and other.proc == pair.proc
               and other.method == "notifications/cancelled" and other.sent.params is not None
               and same_id_value(other.sent.params.get("requestId"), pair.sent.id)
               for other in x.pairs)


def _listing_key(pair: Pair) -> tuple[bytes, str]:
    """Who asked: a server MAY list tools by authorization, and may hide a tool from a client that
    lacks a capability it needs, so a listing speaks only for requests that declared the same
    capabilities with the same credentials."""
    caps = orjson.dumps(pair.sent.capabilities, option=orjson.OPT_SORT_KEYS)
    return caps, header(pair.headers, "Authorization") or ""


class Listing:
    """The tool names of one or more complete listings (their union), kept as each page's own set
    (list_facts: one per distinct page) rather than copied into one."""

    __slots__ = ("pages",)

    def __init__(self, pages: tuple[frozenset[str], ...] = ()) -> None:
        self.pages = pages

    def __contains__(self, name: object) -> bool:
        return any(name in page for page in self.pages)

    def __len__(self) -> int:
        return len(self.pages[0]) if len(self.pages) == 1 else len(frozenset().union(*self.pages))

    def __or__(self, other: Listing) -> Listing:
        return Listing(self.pages + tuple(p for p in other.pages if all(p is not q for q in self.pages)))


def _string_names(x: Exchange, items: list[Any]) -> frozenset[str]:
    """A page's names that are strings: TOOL-03's set of its names when they all are (one set a
    page held in the oracle's cache, not two)."""
    if list_fact(x, items, "names-all-strings", names_all_strings):
        return list_fact(x, items, "names:name", names_of("name"))[1]
    return list_fact(x, items, "string-names", string_names)


def _complete_listings(x: Exchange) -> dict[tuple[bytes, str], tuple[Listing, int]]:
    """Tool names per listing key, from tools/list pages followed from the first (no cursor) to
    one without nextCursor; the union when several complete listings were seen (a set that changed
    within the transcript makes a name known, never unknown), with the event of the last page."""
    pending: dict[tuple[tuple[bytes, str], str], Listing] = {}
    complete: dict[tuple[bytes, str], tuple[Listing, int]] = {}
    for pair, i, result in cacheable_complete(x):
        if pair.method != "tools/list" or not isinstance(result.get("tools"), list):
            continue
        key = _listing_key(pair)
        cursor = pair.sent.params.get("cursor") if pair.sent.params else None
        if cursor is None:
            names = Listing()
        elif isinstance(cursor, str) and (key, cursor) in pending:
            names = pending[(key, cursor)]
        else:
            continue  # a page of a listing whose start this transcript does not hold
        names = names | Listing((_string_names(x, result["tools"]),))
        after = result.get("nextCursor")
        if isinstance(after, str):
            pending[(key, after)] = names
        else:
            known = complete.get(key, (Listing(), i))[0]
            complete[key] = (known | names, i)
    return complete


@rule("TOOL-09", "SHOULD", "a tool the server did not list is answered with a JSON-RPC error, not a result",
      scope="transcript")
def tool_09(x: Exchange) -> list[Violation]:
    """Unknown tool: a JSON-RPC error (the spec's example is -32602), never a result.

    SHOULD, not MUST: tools.mdx files unknown tools under protocol errors in prose, and the schema's
    CallToolResult.isError says errors in finding the tool "should be reported as an MCP error
    response", in lower case (no BCP 14 keyword), next to the SHOULD that sends tool-originated
    errors to isError. A client that reads isError as "the tool ran and failed" shows the model a
    tool that does not exist as one that merely failed, so it is more than an observation.

    "Unknown" is judged only against a complete listing in the same transcript (every page, up to
    one without nextCursor) made with the same capabilities and credentials as the call: a server
    may list by authorization, and a name missing from a first page may be on the next.
    """
    listings = _complete_listings(x)
    if not listings:
        return []
    out: list[Violation] = []
    for pair in _tool_calls(x):
        listed = listings.get(_listing_key(pair))
        name = pair.sent.params["name"] if pair.sent.params else None
        if listed is None or name in listed[0]:
            continue
        for i, said in x.answers(pair):
            if said.kind != "result" or not isinstance(said.result, dict):
                continue
            is_error = said.result.get("isError") is True
            title = "unknown tool answered with an isError result" if is_error else "unknown tool served with a result"
            out.append(Violation("TOOL-09", "SHOULD", title,
                                 f"tool {describe(name)} is not among the {len(listed[0])} tools tools/list gave "
                                 f"(event {listed[1]}); an unknown tool is a JSON-RPC error such as -32602",
                                 pair.method, i))
    return out


class ToolSchemas:
    """Each listed tool's inputSchema, looked up by name; None for a tool listed with two different
    schemas or one that is not an object. Each page is read once per distinct content (list_facts),
    and only the tools called are looked up: a 100,000-tool listing is neither copied nor indexed
    name by name per transcript (`schema_position` scans the page's cached names)."""

    __slots__ = ("pages",)

    def __init__(self, pages: list[tuple[list[Any], Callable[[str], int | None]]]) -> None:
        self.pages = pages

    def __bool__(self) -> bool:
        return any(tools for tools, _ in self.pages)

    def get(self, name: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = None
        for tools, position in self.pages:
            j = position(name)
            if j is None:
                continue
            if j < 0:
                return None
            schema = tools[j]["inputSchema"]
            if found is not None and found != schema:
                return None
            found = schema
        return found


def _schema_lookup(x: Exchange, tools: list[Any]) -> Callable[[str], int | None]:
    if list_fact(x, tools, "all-objects", all_objects):
        names = list_fact(x, tools, "names:name", names_of("name"))[0]
        return lambda name: schema_position(tools, names, name)
    return list_fact(x, tools, "input-schemas", input_schema_at).get


def _tool_schemas(x: Exchange) -> ToolSchemas:
    return ToolSchemas([(result["tools"], _schema_lookup(x, result["tools"]))
                        for pair, _i, result in cacheable_complete(x)
                        if pair.method == "tools/list" and isinstance(result.get("tools"), list)])


_RFC3339: Final = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})\Z")
_URI: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:\S*\Z")


def _date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not _RFC3339.match(value):
        return False
    try:
        datetime.fromisoformat(value.upper().replace("Z", "+00:00").replace(" ", "T"))
    except ValueError:
        return False
    return True


def _uri(value: object) -> bool:
    return not isinstance(value, str) or bool(_URI.match(value))


@lru_cache(maxsize=256)
def _arguments_validator(schema_json: bytes) -> Any:
    """A validator for one tool's inputSchema that also asserts formats (date-time and uri
    included), or None when the schema cannot be used as given. Asserting formats keeps TOOL-10
    silent on a bad date: DIGEST 18.2 lets a schema-invalid argument draw -32602 or isError, and
    it is not for this rule to say which other answers it may draw."""
    try:
        from jsonschema import Draft202012Validator, FormatChecker
        from jsonschema.validators import validator_for
        from referencing import Registry

        schema = orjson.loads(schema_json)
        cls = validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)
        checker = FormatChecker()
        checker.checks("date-time")(_date_time)
        checker.checks("uri")(_uri)
        return cls(schema, registry=Registry(), format_checker=checker)
    except Exception:  # an unusable schema is the server's problem, not a finding we can prove here
        return None


def _arguments_valid(schema: dict[str, Any], args: Any) -> bool:
    """Whether `args` are provably valid: never for a schema as deep as a received message may be
    cut to (`wire.loads`), whose cut parts accept anything the server's schema may refuse."""
    if nesting_depth(schema, stop=MAX_WRITTEN_DEPTH - RECEIVED_SLACK) >= MAX_WRITTEN_DEPTH - RECEIVED_SLACK:
        return False
    validator = _arguments_validator(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))
    if validator is None:
        return False
    try:
        return not any(True for _ in validator.iter_errors(args))
    except Exception:  # an unresolvable $ref surfaces only while validating: not provably valid
        return False


def _error_text(said: Said) -> str:
    err = said.error if isinstance(said.error, dict) else {}
    message = err.get("message")
    return f"{said.code}" + (f" {describe(message, 120)}" if isinstance(message, str) else "")


@rule("TOOL-10", "SHOULD", "a tool's failure on arguments its inputSchema accepts is an isError result, "
      "not a JSON-RPC error or HTTP 5xx", scope="transcript")
def tool_10(x: Exchange) -> list[Violation]:
    """Execution errors go in the result with isError (tools.mdx; CallToolResult.isError SHOULD),
    so the model sees them and can try again. Judged only where that is beyond doubt: a sound
    request (`_tool_calls`) for a tool this transcript listed, whose arguments its inputSchema
    accepts, formats included; so -32602 is never judged (DIGEST 18.2 accepts it for arguments the
    server finds invalid), and neither is any protocol refusal (`PROTOCOL_CODES`), an
    authorization or rate-limit status, nor an MRTR retry. What is left is the tool's own failure
    sent as a JSON-RPC error (typically -32603 from an exception nobody caught) or an HTTP 5xx,
    which some clients show as a broken server and none as a result the model can read.
    """
    schemas = _tool_schemas(x)
    if not schemas:
        return []
    out: list[Violation] = []
    for pair in _tool_calls(x):
        params = pair.sent.params or {}
        schema = schemas.get(params["name"])
        args = params.get("arguments", {})
        if schema is None or not isinstance(args, dict) or not _arguments_valid(schema, args):
            continue
        status = x.status_of(pair) if x.transport.http_semantics else None
        if status in REFUSAL_STATUSES:
            continue
        call = call_summary(pair.method, params)
        found = False
        for i, said in x.answers(pair):
            if said.kind == "error" and said.code is not None and said.code not in PROTOCOL_CODES:
                out.append(Violation("TOOL-10", "SHOULD", f"valid tool call answered with JSON-RPC error {said.code}",
                                     f"{call}, valid against its inputSchema, got error {_error_text(said)}"
                                     + (f" (HTTP {status})" if status is not None else "")
                                     + "; a tool's failure belongs in a result with isError: true", pair.method, i))
                found = True
        if not found and status is not None and status >= 500:
            at = next(iter((*pair.responses, *pair.http)), pair.index)
            out.append(Violation("TOOL-10", "SHOULD", f"valid tool call answered with HTTP {status}",
                                 f"{call}, valid against its inputSchema, got HTTP {status}; a tool's failure "
                                 "belongs in a result with isError: true", pair.method, at))
    return out


# Stack traces as runtimes print them, one frame per line. A frame must name a source file by a
# path (a traceback of code the tool ran from a string, 'File "<string>"', is the user's, and a
# code-running tool returns it by design) and a trace needs two frames, or Python's header and one.
_PY_HEADER: Final = re.compile(r"^Traceback \(most recent call last\):$", re.M)
_PY_FRAME: Final = re.compile(r'^[ \t]+File "[^"<>\n]+\.pyw?", line \d+, in [^\n]+$', re.M)
_NODE_FRAME: Final = re.compile(
    r"^[ \t]+at (?:[^\n()]+ \()?(?:file://|/|[A-Za-z]:\\)[^\n()]*\.(?:[cm]?js|[cm]?ts|jsx|tsx):\d+:\d+\)?$", re.M)
_JAVA_FRAME: Final = re.compile(
    r"^[ \t]+at [\w$]+(?:\.[\w$<>]+)+\((?:[\w$-]+\.(?:java|kt|scala|groovy):\d+|Native Method|Unknown Source)\)$",
    re.M)


def stack_trace(text: str) -> str | None:
    """Which runtime's stack trace `text` carries (with its first frame), or None."""
    py = _PY_FRAME.findall(text)
    if py and (len(py) >= 2 or _PY_HEADER.search(text)):
        return f"a Python traceback ({py[0].strip()[:120]})"
    node = _NODE_FRAME.findall(text)
    if len(node) >= 2:
        return f"a Node.js stack trace ({node[0].strip()[:120]})"
    java = _JAVA_FRAME.findall(text)
    if len(java) >= 2:
        return f"a JVM stack trace ({java[0].strip()[:120]})"
    return None


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif depth < 6 and isinstance(value, dict):
        for item in value.values():
            yield from _strings(item, depth + 1)
    elif depth < 6 and isinstance(value, list):
        for item in value[:100]:
            yield from _strings(item, depth + 1)


def _trace_in(texts: Iterator[str]) -> str | None:
    for text in texts:
        found = stack_trace(text[:65536])
        if found is not None:
            return found
    return None


@rule("TOOL-15", "HEURISTIC", "errors and isError results carry no stack trace (sanitise outputs)", scope="pair")
def tool_15(x: Exchange) -> list[Violation]:
    """Servers must sanitise outputs (TOOL-15): a stack trace hands the client, and the model, the
    server's file layout, library versions and sometimes the values in play. HEURISTIC: the spec
    names no form of leak, and a trace proves only that internals reached the wire.

    Read: the message and data of every JSON-RPC error, and the text blocks of a tools/call result
    with isError: true. A successful result is left alone: a tool that reads log files or runs
    code returns traces as its content by design.
    """
    out: list[Violation] = []
    for pair in x.pairs:
        if pair.sent.kind != "request" or pair.sent.legacy:
            continue
        for i, said in x.answers(pair):
            if said.kind == "error" and isinstance(said.error, dict):
                found = _trace_in(_strings([said.error.get("message"), said.error.get("data")]))
                where = "error message or data"
            elif said.kind == "result" and pair.method == "tools/call" and isinstance(said.result, dict) \
                    and said.result.get("isError") is True and isinstance(said.result.get("content"), list):
                found = _trace_in(c["text"] for c in said.result["content"]
                                  if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str))
                where = "isError result"
            else:
                continue
            if found is not None:
                call = call_summary(pair.method, pair.sent.params)
                out.append(Violation("TOOL-15", "HEURISTIC", f"stack trace in an {where}",
                                     f"{found}" + (f" for {call}" if call else ""), pair.method, i))
    return out

"""Every oracle rule fires on a crafted exchange that breaks it, and stays silent on its fixed twin.

Each case builds a small transcript by hand (`Crafter`), the way a driver would record it, and
names the rule that must fire. The twin differs only in the one thing that makes it conformant,
so a rule that fires on everything fails here as surely as a rule that fires on nothing.
A final test proves every registered rule has at least one such case.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mcp_tempest.fuzz.oracle import RULES, Expectation, Violation, judge
from mcp_tempest.fuzz.oracle.craft import Crafter
from mcp_tempest.fuzz.oracle.exchange import TRAILER_WINDOW
from mcp_tempest.fuzz.oracle.model import server_duty
from mcp_tempest.targets import wire

MODERN = wire.MODERN_VERSION
INFO = {wire.META_SERVER_INFO: {"name": "srv", "version": "1"}}
DISCOVER = {"resultType": "complete", "supportedVersions": [MODERN], "ttlMs": 0, "cacheScope": "public",
            "capabilities": {"tools": {}, "resources": {}}}
TOOL_OK = {"resultType": "complete", "content": [{"type": "text", "text": "hi"}]}
LIST_OK = {"resultType": "complete", "tools": [{"name": "echo", "inputSchema": {"type": "object"}}],
           "ttlMs": 1000, "cacheScope": "public"}
ELICIT = {"method": "elicitation/create", "params": {
    "message": "who?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}
SSE = {"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}


def req(rid: Any, method: str, params: dict[str, Any] | None = None, *, caps: dict[str, Any] | None = None,
        version: str = MODERN) -> dict[str, Any]:
    return wire.build_request(rid, method, params or {}, capabilities=caps or {}, version=version)


def bare(rid: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """A request without _meta (META-04)."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def ok(rid: Any, result: dict[str, Any]) -> dict[str, Any]:
    return wire.build_result(rid, result)


def err(rid: Any, code: int, data: Any = None) -> dict[str, Any]:
    return wire.build_error(rid, code, "nope", data)


def call(rid: Any = 1, caps: dict[str, Any] | None = None, **params: Any) -> dict[str, Any]:
    return req(rid, "tools/call", {"name": "echo", "arguments": {}, **params}, caps=caps)


def ir(**fields: Any) -> dict[str, Any]:
    return {"resultType": "input_required", **fields}


def stdio() -> Crafter:
    c = Crafter("stdio")
    c.spawn()
    return c


def http() -> Crafter:
    c = Crafter("http")
    c.spawn("http://127.0.0.1:1/mcp")
    return c


# --- the cases: rule id -> [(name, build breaking transcript, build fixed twin)] -------------------

Build = Callable[[], tuple[Crafter, dict[str, Any]]]
CASES: dict[str, list[tuple[str, Build, Build | None]]] = {}


def case(rule_id: str, name: str, fixed: bool = True) -> Callable[[Callable[[bool], Any]], Callable[[bool], Any]]:
    """Register `fn(broken: bool)` returning a Crafter (or (Crafter, judge kwargs))."""
    def register(fn: Callable[[bool], Any]) -> Callable[[bool], Any]:
        def build(broken: bool) -> Callable[[], tuple[Crafter, dict[str, Any]]]:
            def run() -> tuple[Crafter, dict[str, Any]]:
                got = fn(broken)
                return got if isinstance(got, tuple) else (got, {})
            return run
        CASES.setdefault(rule_id, []).append((name, build(True), build(False) if fixed else None))
        return fn
    return register


# RPC-01
@case("RPC-01", "wrong jsonrpc version")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(call(), {"jsonrpc": "1.0" if broken else "2.0", "id": 1, "result": TOOL_OK})
    return c


@case("RPC-01", "result and error together")
def _(broken: bool) -> Crafter:
    c = stdio()
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "result": TOOL_OK}
    if broken:
        body["error"] = {"code": -32603, "message": "x"}
    c.exchange(call(), body)
    return c


@case("RPC-01", "HTTP body that is not an object")
def _(broken: bool) -> Crafter:
    c = http()
    c.exchange(call(), 42 if broken else ok(1, TOOL_OK))
    return c


# RPC-02
@case("RPC-02", "stdout line not UTF-8")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(call(), ok(1, TOOL_OK))
    if broken:
        c.noise(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"\xff\xfe"}}', "not JSON: utf-8")
    return c


# RPC-05: the server's reaction to a duplicate in-flight id is UNSPEC, so nothing it does is a finding.
def test_rpc_05_two_requests_sharing_an_id_in_flight_both_served_is_no_finding() -> None:
    c = stdio()
    c.send(req(7, "tools/list"))
    c.send(req(7, "server/discover"))
    c.recv(ok(7, LIST_OK))
    c.recv(ok(7, DISCOVER))
    assert judge(c.transcript) == []
    assert "RPC-05" not in RULES


def test_rpc_05_ignores_an_id_reused_after_its_answer() -> None:
    c = stdio()
    c.exchange(req(7, "tools/list"), ok(7, LIST_OK))
    c.exchange(req(7, "server/discover"), ok(7, DISCOVER))
    assert judge(c.transcript) == []


# RPC-06
@case("RPC-06", "HTTP result with another id")
def _(broken: bool) -> Crafter:
    c = http()
    c.exchange(call(1), ok(2 if broken else 1, TOOL_OK))
    return c


@case("RPC-06", "id 1 answered as \"1\"")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(call(1))
    c.recv(ok("1" if broken else 1, TOOL_OK))
    return c


@case("RPC-06", "result is not an object")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(call(), ok(1, TOOL_OK) if not broken else {"jsonrpc": "2.0", "id": 1, "result": [1]})
    return c


@case("RPC-06", "answered twice")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(call(), ok(1, TOOL_OK))
    if broken:
        c.recv(ok(1, TOOL_OK))
    return c


@case("RPC-06", "result without id")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(call(1))
    c.recv({"jsonrpc": "2.0", "result": TOOL_OK} if broken else ok(1, TOOL_OK))
    return c


@case("RPC-01", "process died with a request outstanding")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(call(1))
    if not broken:
        c.recv(ok(1, TOOL_OK))
    c.closed()
    c.exit(1 if broken else 0, "exited by itself" if broken else "exited after stdin was closed")
    return c


@case("RPC-06", "a lenient reading of trailing garbage may answer with the id it found")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(None, raw=wire.encode_line(call(7))[:-1] + b"garbage\n")
    c.recv(ok(8 if broken else 7, TOOL_OK))
    return c


# RPC-07
@case("RPC-07", "HTTP error with another id")
def _(broken: bool) -> Crafter:
    c = http()
    c.exchange(call(5), err(6 if broken else 5, wire.INVALID_PARAMS), status=400)
    return c


@case("RPC-07", "error omits a readable id")
def _(broken: bool) -> Crafter:
    c = http()
    c.exchange(call(5), err(None if broken else 5, wire.INVALID_PARAMS), status=400)
    return c


@case("RPC-07", "id-less error while no malformed frame is outstanding")
def _(broken: bool) -> Crafter:
    c = stdio()
    if not broken:
        c.send(None, raw=b"{not json\n")
    c.send(call(1))
    c.recv(err(None, wire.PARSE_ERROR))
    c.recv(ok(1, TOOL_OK))
    return c


# RPC-08
@case("RPC-08", "error code is a string")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(call(), {"jsonrpc": "2.0", "id": 1, "error": {"code": "-32602" if broken else -32602, "message": "x"}})
    return c


@case("RPC-08", "error without message")
def _(broken: bool) -> Crafter:
    c = stdio()
    error: dict[str, Any] = {"code": -32602} if broken else {"code": -32602, "message": "bad"}
    c.exchange(call(), {"jsonrpc": "2.0", "id": 1, "error": error})
    return c


# RPC-10
@case("RPC-10", "stdio notification answered")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(wire.build_notification("notifications/cancelled", {"requestId": 99}))
    c.send(call(1))
    if broken:
        c.recv(err(None, wire.METHOD_NOT_FOUND))
    c.recv(ok(1, TOOL_OK))
    return c


@case("RPC-10", "HTTP notification answered with a result")
def _(broken: bool) -> Crafter:
    c = http()
    c.send(wire.build_notification("notifications/initialized"))
    if broken:
        c.recv({"jsonrpc": "2.0", "id": None, "result": {}}, status=200)
    else:
        c.http_reply(202)
    return c


# RPC-12
@case("RPC-12", "server request on stdout")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(call(1))
    method = {"jsonrpc": "2.0", "id": "s1", "method": "elicitation/create", "params": {}}
    if broken:
        c.recv(method)
    c.recv(ok(1, TOOL_OK))
    return c


# META-02
@case("META-02", "capability remembered from an earlier request")
def _(broken: bool) -> Crafter:
    c = stdio()
    # The baseline: before anything declared elicitation, the same call was refused.
    c.exchange(call(1), err(1, wire.MISSING_CLIENT_CAPABILITY, {"requiredCapabilities": {"elicitation": {}}}))
    c.exchange(req(2, "server/discover", caps={"elicitation": {}}), ok(2, DISCOVER))
    c.exchange(call(3, caps={} if broken else {"elicitation": {}}), ok(3, ir(inputRequests={"q": ELICIT})))
    return c


def test_meta_02_needs_a_baseline_else_it_is_mrtr_05() -> None:
    """A server that asks whatever was declared never checked at all: that is MRTR-05, not inheritance."""
    c = stdio()
    c.exchange(req(1, "server/discover", caps={"elicitation": {}}), ok(1, DISCOVER))
    c.exchange(call(2), ok(2, ir(inputRequests={"q": ELICIT})))
    assert sorted(v.rule for v in judge(c.transcript)) == ["MRTR-05"]


# META-04
@case("META-04", "missing _meta served")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(bare(1, "tools/list"), ok(1, LIST_OK) if broken else err(1, wire.INVALID_PARAMS))
    return c


@case("META-04", "missing _meta on discover answered -32601")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(bare(1, "server/discover", {}), err(1, wire.METHOD_NOT_FOUND if broken else wire.INVALID_PARAMS))
    return c


@case("META-04", "missing clientCapabilities on an advertised method answered -32601")
def _(broken: bool) -> tuple[Crafter, dict[str, Any]]:
    c = stdio()
    msg = req(1, "tools/list")
    del msg["params"]["_meta"][wire.META_CLIENT_CAPABILITIES]
    c.exchange(msg, err(1, wire.METHOD_NOT_FOUND if broken else wire.INVALID_PARAMS))
    return c, {"discover": DISCOVER}


@case("META-04", "-32602 for missing _meta with HTTP 200 (version header present)")
def _(broken: bool) -> Crafter:
    c = http()
    msg = bare(1, "tools/list", {})
    c.send(msg, headers={**wire.http_headers(msg), "MCP-Protocol-Version": MODERN})
    c.recv(err(1, wire.INVALID_PARAMS), status=200 if broken else 400)
    return c


@case("META-04", "no MCP-Protocol-Version header: HDR-02 lets the server read it as 2025-03-26")
def _(broken: bool) -> Crafter:
    c = http()
    msg = bare(1, "tools/list", {})
    headers = wire.http_headers(msg)
    if broken:
        headers["MCP-Protocol-Version"] = MODERN
    c.send(msg, headers=headers)
    c.recv(ok(1, {"tools": []}))  # served the legacy way
    return c


@case("META-04", "missing body version, header present: -32020 is fine (18.3), -32603 is not")
def _(broken: bool) -> Crafter:
    c = http()
    msg = req(1, "tools/list")
    del msg["params"]["_meta"][wire.META_PROTOCOL_VERSION]
    headers = wire.http_headers(msg)
    headers["MCP-Protocol-Version"] = MODERN
    c.send(msg, headers=headers)
    c.recv(err(1, wire.INTERNAL_ERROR if broken else wire.HEADER_MISMATCH), status=400)
    return c


# META-05
@case("META-05", "-32021 without requiredCapabilities")
def _(broken: bool) -> Crafter:
    c = stdio()
    data = {"missing": "elicitation"} if broken else {"requiredCapabilities": {"elicitation": {}}}
    c.exchange(call(), err(1, wire.MISSING_CLIENT_CAPABILITY, data))
    return c


@case("META-05", "-32021 with HTTP 200")
def _(broken: bool) -> Crafter:
    c = http()
    c.exchange(call(), err(1, wire.MISSING_CLIENT_CAPABILITY, {"requiredCapabilities": {"sampling": {}}}),
               status=200 if broken else 400)
    return c


# META-06
@case("META-06", "-32022 without data")
def _(broken: bool) -> Crafter:
    c = stdio()
    data = None if broken else {"supported": [MODERN], "requested": "1900-01-01"}
    c.exchange(req(1, "tools/list", version="1900-01-01"), err(1, wire.UNSUPPORTED_PROTOCOL_VERSION, data))
    return c


@case("META-06", "unsupported version served")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(req(1, "tools/list", version="1900-01-01" if broken else MODERN), ok(1, LIST_OK))
    return c


@case("META-06", "version outside discovered supportedVersions served")
def _(broken: bool) -> tuple[Crafter, dict[str, Any]]:
    c = stdio()
    c.exchange(req(1, "tools/list", version=wire.LEGACY_VERSION), ok(1, LIST_OK))
    supported = [MODERN] if broken else [MODERN, wire.LEGACY_VERSION]
    return c, {"discover": {**DISCOVER, "supportedVersions": supported}}


@case("META-06", "-32022 with HTTP 200")
def _(broken: bool) -> Crafter:
    c = http()
    c.exchange(req(1, "tools/list", version="1900-01-01"),
               err(1, wire.UNSUPPORTED_PROTOCOL_VERSION, {"supported": [MODERN], "requested": "1900-01-01"}),
               status=200 if broken else 400)
    return c


# META-07
@case("META-07", "serverInfo on some results only")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(req(1, "server/discover"), ok(1, {**DISCOVER, "_meta": INFO}))
    c.exchange(call(2), ok(2, TOOL_OK if broken else {**TOOL_OK, "_meta": INFO}))
    return c


# DISC-01
@case("DISC-01", "discover answered -32601")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(req(1, "server/discover"), err(1, wire.METHOD_NOT_FOUND) if broken else ok(1, DISCOVER))
    return c


# DISC-04
@case("DISC-04", "serverInfo as a discover body field")
def _(broken: bool) -> Crafter:
    c = stdio()
    result = {**DISCOVER, "serverInfo": {"name": "x", "version": "1"}} if broken else {**DISCOVER, "_meta": INFO}
    c.exchange(req(1, "server/discover"), ok(1, result))
    return c


# DISC-07
@case("DISC-07", "prompts served without the prompts capability")
def _(broken: bool) -> Crafter:
    c = stdio()
    caps = DISCOVER["capabilities"] if broken else {**DISCOVER["capabilities"], "prompts": {}}
    c.exchange(req(1, "server/discover"), ok(1, {**DISCOVER, "capabilities": caps}))
    c.exchange(req(2, "prompts/list"), ok(2, {"resultType": "complete", "prompts": [], "ttlMs": 0,
                                              "cacheScope": "public"}))
    return c


@case("DISC-07", "advertised tools answered -32601")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(req(1, "server/discover"), ok(1, DISCOVER))
    c.exchange(req(2, "tools/list"), err(2, wire.METHOD_NOT_FOUND) if broken else ok(2, LIST_OK))
    return c


# DISC-08
@case("DISC-08", "-32022 lists other versions than discover")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(req(1, "server/discover"), ok(1, DISCOVER))
    supported = [MODERN, "2025-11-25"] if broken else [MODERN]
    c.exchange(req(2, "tools/list", version="1900-01-01"),
               err(2, wire.UNSUPPORTED_PROTOCOL_VERSION, {"supported": supported, "requested": "1900-01-01"}))
    return c


# RT-01
@case("RT-01", "result without resultType")
def _(broken: bool) -> Crafter:
    c = stdio()
    result = {k: v for k, v in TOOL_OK.items() if k != "resultType"} if broken else TOOL_OK
    c.exchange(call(), ok(1, result))
    return c


@case("RT-01", "legacy-version request is not judged")
def _(broken: bool) -> Crafter:
    c = stdio()
    version = MODERN if broken else wire.LEGACY_VERSION
    c.exchange(req(1, "tools/call", {"name": "echo"}, version=version), ok(1, {"content": []}))
    return c


# RT-04
@case("RT-04", "unknown resultType")
def _(broken: bool) -> Crafter:
    c = stdio()
    caps = {} if broken else {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    c.exchange(call(1, caps=caps), ok(1, {**TOOL_OK, "resultType": "partial"}))
    return c


# RT-06
@case("RT-06", "CallToolResult without content")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(call(), ok(1, {"resultType": "complete"} if broken else TOOL_OK))
    return c


@case("RT-06", "tools with a non-object inputSchema")
def _(broken: bool) -> Crafter:
    c = stdio()
    tools = [{"name": "echo", "inputSchema": {"type": "array"} if broken else {"type": "object"}}]
    c.exchange(req(1, "tools/list"), ok(1, {**LIST_OK, "tools": tools}))
    return c


# CACHE-01..04
@case("CACHE-01", "tools/list without ttlMs")
def _(broken: bool) -> Crafter:
    c = stdio()
    result = {k: v for k, v in LIST_OK.items() if k != "ttlMs"} if broken else LIST_OK
    c.exchange(req(1, "tools/list"), ok(1, result))
    return c


@case("CACHE-02", "negative ttlMs")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(req(1, "tools/list"), ok(1, {**LIST_OK, "ttlMs": -5 if broken else 0}))
    return c


@case("CACHE-02", "ttlMs as a string")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(req(1, "tools/list"), ok(1, {**LIST_OK, "ttlMs": "1000" if broken else 1000}))
    return c


@case("CACHE-03", "cacheScope shared")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(req(1, "tools/list"), ok(1, {**LIST_OK, "cacheScope": "shared" if broken else "private"}))
    return c


@case("CACHE-04", "pages with different cacheScope")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(req(1, "tools/list"), ok(1, {**LIST_OK, "nextCursor": "p2"}))
    c.exchange(req(2, "tools/list", {"cursor": "p2"}), ok(2, {**LIST_OK, "tools": [],
                                                              "cacheScope": "private" if broken else "public"}))
    return c


# TOOL-02 / PR-01
@case("TOOL-02", "tools/list changes after a call")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(req(1, "tools/list"), ok(1, LIST_OK))
    c.exchange(call(2), ok(2, TOOL_OK))
    tools = LIST_OK["tools"] + ([{"name": "extra", "inputSchema": {"type": "object"}}] if broken else [])
    c.exchange(req(3, "tools/list"), ok(3, {**LIST_OK, "tools": tools}))
    return c


@case("TOOL-02", "different declared capabilities may see different tools")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(req(1, "tools/list"), ok(1, LIST_OK))
    caps = {} if broken else {"elicitation": {}}
    tools = LIST_OK["tools"] + [{"name": "ask", "inputSchema": {"type": "object"}}]
    c.exchange(req(2, "tools/list", caps=caps), ok(2, {**LIST_OK, "tools": tools}))
    return c


@case("PR-01", "prompts/list changes")
def _(broken: bool) -> Crafter:
    c = stdio()
    base = {"resultType": "complete", "prompts": [{"name": "a"}], "ttlMs": 0, "cacheScope": "public"}
    c.exchange(req(1, "prompts/list"), ok(1, base))
    c.exchange(req(2, "prompts/list"), ok(2, {**base, "prompts": [{"name": "b" if broken else "a"}]}))
    return c


# TOOL-11
OUT_TOOL = {"name": "weather", "inputSchema": {"type": "object"}, "outputSchema": {
    "type": "object", "properties": {"temp": {"type": "number"}}, "required": ["temp"]}}


@case("TOOL-11", "structuredContent fails the outputSchema")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(req(1, "tools/list"), ok(1, {**LIST_OK, "tools": [OUT_TOOL]}))
    content = {"temp": "warm"} if broken else {"temp": 21.5}
    c.exchange(req(2, "tools/call", {"name": "weather"}), ok(2, {**TOOL_OK, "structuredContent": content}))
    return c


@case("TOOL-11", "outputSchema but no structuredContent")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(req(1, "tools/list"), ok(1, {**LIST_OK, "tools": [OUT_TOOL]}))
    result = TOOL_OK if broken else {**TOOL_OK, "isError": True}  # with isError the shape is UNSPEC
    c.exchange(req(2, "tools/call", {"name": "weather"}), ok(2, result))
    return c


@case("TOOL-11", "a remote $ref is never fetched; the schema is skipped")
def _(broken: bool) -> Crafter:
    c = stdio()
    tool = OUT_TOOL if broken else {**OUT_TOOL, "outputSchema": {"$ref": "https://example.invalid/s.json"}}
    c.exchange(req(1, "tools/list"), ok(1, {**LIST_OK, "tools": [tool]}))
    c.exchange(req(2, "tools/call", {"name": "weather"}), ok(2, {**TOOL_OK, "structuredContent": {"t": 1}}))
    return c


# MRTR-01..07
@case("MRTR-01", "tools/list returns input_required")
def _(broken: bool) -> Crafter:
    c = stdio()
    if broken:
        c.exchange(req(1, "tools/list"), ok(1, ir(requestState="s")))
    else:
        c.exchange(call(1), ok(1, ir(requestState="s")))
    return c


@case("MRTR-02", "input_required with nothing to do")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(call(), ok(1, ir() if broken else ir(requestState="s")))
    return c


@case("MRTR-03", "duplicate inputRequests keys in the raw JSON")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(call(1, caps={"elicitation": {}, "roots": {}}))
    second = '"q"' if broken else '"r"'
    raw = ('{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{'
           '"q":{"method":"roots/list"},' + second + ':{"method":"roots/list"}}}}').encode()
    c.recv(wire.loads(raw), raw=raw)
    return c


@case("MRTR-04", "unknown input request kind")
def _(broken: bool) -> Crafter:
    c = stdio()
    request = {"method": "ping"} if broken else {"method": "roots/list"}
    c.exchange(call(1, caps={"roots": {}}), ok(1, ir(inputRequests={"q": request})))
    return c


@case("MRTR-04", "elicitation without message")
def _(broken: bool) -> Crafter:
    c = stdio()
    params = {k: v for k, v in ELICIT["params"].items() if k != "message"} if broken else ELICIT["params"]
    c.exchange(call(1, caps={"elicitation": {}}),
               ok(1, ir(inputRequests={"q": {"method": "elicitation/create", "params": params}})))
    return c


@case("MRTR-05", "elicitation to a client without it")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(call(1, caps={} if broken else {"elicitation": {}}), ok(1, ir(inputRequests={"q": ELICIT})))
    return c


@case("MRTR-05", "roots to a client without it")
def _(broken: bool) -> Crafter:
    c = stdio()
    caps = {"sampling": {}} if broken else {"roots": {}}
    c.exchange(call(1, caps=caps), ok(1, ir(inputRequests={"r": {"method": "roots/list"}})))
    return c


@case("MRTR-06", "url mode to a form-only client")
def _(broken: bool) -> Crafter:
    c = stdio()
    url = {"method": "elicitation/create", "params": {"mode": "url", "message": "go", "url": "https://x.example/",
                                                      "elicitationId": "e1"}}
    caps = {"elicitation": {}} if broken else {"elicitation": {"url": {}}}
    c.exchange(call(1, caps=caps), ok(1, ir(inputRequests={"u": url})))
    return c


@case("MRTR-06", "form mode to a url-only client")
def _(broken: bool) -> Crafter:
    c = stdio()
    caps = {"elicitation": {"url": {}}} if broken else {"elicitation": {"url": {}, "form": {}}}
    c.exchange(call(1, caps=caps), ok(1, ir(inputRequests={"f": ELICIT})))
    return c


SAMPLING = {"method": "sampling/createMessage", "params": {
    "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}}


@case("MRTR-07", "tool-enabled sampling without sampling.tools")
def _(broken: bool) -> Crafter:
    c = stdio()
    params = {**SAMPLING["params"], "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
    caps = {"sampling": {}} if broken else {"sampling": {"tools": {}}}
    c.exchange(call(1, caps=caps), ok(1, ir(inputRequests={"s": {"method": "sampling/createMessage",
                                                                  "params": params}})))
    return c


@case("MRTR-07", "includeContext without sampling.context")
def _(broken: bool) -> Crafter:
    c = stdio()
    params = {**SAMPLING["params"], "includeContext": "thisServer" if broken else "none"}
    c.exchange(call(1, caps={"sampling": {}}), ok(1, ir(inputRequests={"s": {"method": "sampling/createMessage",
                                                                             "params": params}})))
    return c


# STDIO-02 / STDIO-03
@case("STDIO-02", "pretty-printed response")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(call(1))
    if broken:
        for line in (b"{", b'  "jsonrpc": "2.0",', b'  "id": 1,', b'  "result": {"resultType": "complete", "content": []}',
                     b"}"):
            c.noise(line)
    else:
        c.recv(ok(1, TOOL_OK))
    return c


@case("STDIO-03", "banner on stdout")
def _(broken: bool) -> Crafter:
    c = stdio()
    if broken:
        c.noise(b"Server listening on stdio")
    c.exchange(call(), ok(1, TOOL_OK))
    return c


@case("STDIO-03", "JSON log object on stdout")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(call(), ok(1, TOOL_OK))
    if broken:
        c.recv({"level": "info", "msg": "handled tools/call"})
    return c


# HTTP-05 / 06 / 09, SL-10
@case("HTTP-05", "notification answered 200")
def _(broken: bool) -> Crafter:
    c = http()
    c.send(wire.build_notification("notifications/cancelled", {"requestId": 1}))
    c.http_reply(200 if broken else 202)
    return c


@case("HTTP-05", "202 with a body")
def _(broken: bool) -> Crafter:
    c = http()
    c.send(wire.build_notification("notifications/cancelled", {"requestId": 1}))
    c.http_reply(202, body=b"accepted" if broken else b"")
    return c


@case("HTTP-06", "text/plain response")
def _(broken: bool) -> Crafter:
    c = http()
    c.exchange(call(), ok(1, TOOL_OK), headers={"Content-Type": "text/plain" if broken else "application/json"})
    return c


@case("HTTP-09", "SSE without X-Accel-Buffering")
def _(broken: bool) -> Crafter:
    c = http()
    headers = {"Content-Type": "text/event-stream"} if broken else SSE
    c.exchange(call(), ok(1, TOOL_OK), headers=headers)
    return c


@case("SL-10", "session id minted")
def _(broken: bool) -> Crafter:
    c = http()
    headers = {"Content-Type": "application/json", **({"mcp-session-id": "abc"} if broken else {})}
    c.exchange(call(), ok(1, TOOL_OK), headers=headers)
    return c


# SL-2: the era lock (a bad frame switches the process out of the modern era)
ERA_LOCK = "this connection serves the handshake protocol era"


def _locked(broken: bool, *, opener: bool = False) -> Crafter:
    c = stdio()
    if opener:
        c.exchange({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}},
            ok(0, {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}))
    c.exchange({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": "x"}},
               err(1, wire.INVALID_PARAMS))
    c.exchange(req(2, "server/discover"),
               wire.build_error(2, wire.INVALID_REQUEST, ERA_LOCK) if broken else ok(2, {**DISCOVER, "_meta": INFO}))
    return c


@case("SL-2", "valid discover refused with an era error after a malformed _meta")
def _(broken: bool) -> tuple[Crafter, dict[str, Any]]:
    return _locked(broken), {"discover": DISCOVER}


def test_sl_2_needs_proof_that_a_fresh_process_serves_it() -> None:
    """Without a DiscoverResult (given or seen) the refusal may be the server's answer anywhere."""
    assert "SL-2" not in {v.rule for v in judge(_locked(True).transcript)}
    found = [v for v in judge(_locked(True).transcript, discover=DISCOVER) if v.rule == "SL-2"]
    assert [(v.strength, v.method) for v in found] == [("MUST", "server/discover")], found


def test_sl_2_excuses_a_process_opened_with_initialize() -> None:
    """VER-05: a dual-era server may keep a process opened by the handshake in the old era."""
    assert "SL-2" not in {v.rule for v in judge(_locked(True, opener=True).transcript, discover=DISCOVER)}


def test_sl_2_holds_on_a_dual_era_target_unless_the_process_was_served_by_2025_rules() -> None:
    """A refused bad frame opens no era, so the broad dual-era excuse does not cover the lock; a
    claim-less request served with a legacy result does pin the process (META-04's heuristic)."""
    assert "SL-2" in {v.rule for v in judge(_locked(True).transcript, discover=DISCOVER, dual=True)}
    c = stdio()
    c.exchange(bare(1, "tools/list"), ok(1, {"tools": []}))
    c.exchange(req(2, "server/discover"), wire.build_error(2, wire.INVALID_REQUEST, ERA_LOCK))
    assert "SL-2" not in {v.rule for v in judge(c.transcript, discover=DISCOVER, dual=True)}


def test_sl_2_is_silent_when_the_first_request_was_valid_and_reports_a_locked_process_once() -> None:
    c = stdio()
    c.exchange(req(1, "tools/list"), ok(1, LIST_OK))
    c.exchange(req(2, "server/discover"), wire.build_error(2, wire.INVALID_REQUEST, ERA_LOCK))
    assert "SL-2" not in {v.rule for v in judge(c.transcript, discover=DISCOVER)}
    c = _locked(True)
    c.exchange(req(3, "server/discover"), wire.build_error(3, wire.INVALID_REQUEST, ERA_LOCK))
    assert [v.rule for v in judge(c.transcript, discover=DISCOVER)].count("SL-2") == 1


def test_sl_2_does_not_judge_requests_that_shared_an_id_in_flight() -> None:
    """Recorded from the reference server (fuzz seed 1): after a frame with an embedded newline,
    two discovers under one id in flight got one result and one -32600 "this id is in flight".
    That refusal is RPC-05's right answer, not an era lock."""
    c = stdio()
    c.send(raw=b'{"jsonrpc":"2.0","id":0,"method":"\nserver/discover"}\n')
    c.recv(err(None, wire.PARSE_ERROR))
    c.recv(err(None, wire.PARSE_ERROR))
    first, second = req(0, "server/discover"), req(0, "server/discover")
    c.send(first)
    c.send(second)
    c.recv(ok(0, {**DISCOVER, "_meta": INFO}))
    c.recv(wire.build_error(0, wire.INVALID_REQUEST, "a request with this id is in flight"))
    assert "SL-2" not in {v.rule for v in judge(c.transcript, discover=DISCOVER)}
    c.exchange(req(3, "server/discover"), wire.build_error(3, wire.INVALID_REQUEST, ERA_LOCK))
    assert "SL-2" in {v.rule for v in judge(c.transcript, discover=DISCOVER)}


# HDR-01 / 02 / 03 / 05
def _with_headers(msg: dict[str, Any], **changes: str | None) -> dict[str, str]:
    headers = wire.http_headers(msg)
    for name, value in changes.items():
        name = name.replace("_", "-")
        if value is None:
            headers.pop(name, None)
        else:
            headers[name] = value
    return headers


@case("HDR-01", "version header mismatch served")
def _(broken: bool) -> Crafter:
    c = http()
    msg = call(1)
    c.send(msg, headers=_with_headers(msg, **{"MCP_Protocol_Version": wire.LEGACY_VERSION}))
    c.recv(ok(1, TOOL_OK) if broken else err(1, wire.HEADER_MISMATCH), status=200 if broken else 400)
    return c


@case("HDR-01", "-32020 for a version mismatch with HTTP 200")
def _(broken: bool) -> Crafter:
    c = http()
    msg = call(1)
    c.send(msg, headers=_with_headers(msg, **{"MCP_Protocol_Version": wire.LEGACY_VERSION}))
    c.recv(err(1, wire.HEADER_MISMATCH), status=200 if broken else 400)
    return c


@case("HDR-02", "missing Mcp-Name served")
def _(broken: bool) -> Crafter:
    c = http()
    msg = call(1)
    c.send(msg, headers=_with_headers(msg, Mcp_Name=None))
    c.recv(ok(1, TOOL_OK) if broken else err(1, wire.HEADER_MISMATCH), status=200 if broken else 400)
    return c


@case("HDR-03", "Mcp-Method differs from the body")
def _(broken: bool) -> Crafter:
    c = http()
    msg = call(1)
    c.send(msg, headers=_with_headers(msg, Mcp_Method="tools/list" if broken else "tools/call"))
    c.recv(ok(1, TOOL_OK))
    return c


@case("HDR-03", "base64 sentinel decoded before comparing")
def _(broken: bool) -> Crafter:
    c = http()
    msg = req(1, "tools/call", {"name": "héllo"})
    value = wire.encode_header_value("hello" if broken else "héllo")
    c.send(msg, headers=_with_headers(msg, Mcp_Name=value))
    c.recv(ok(1, TOOL_OK))
    return c


@case("HDR-03", "-32020 with HTTP 200")
def _(broken: bool) -> Crafter:
    c = http()
    c.exchange(call(1), err(1, wire.HEADER_MISMATCH), status=200 if broken else 400)
    return c


@case("HDR-05", "-32601 with HTTP 200")
def _(broken: bool) -> Crafter:
    c = http()
    c.exchange(req(1, "ping"), err(1, wire.METHOD_NOT_FOUND), status=200 if broken else 404)
    return c


# Error codes
@case("RES-04", "retired -32002")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(req(1, "resources/read", {"uri": "file:///nope"}), err(1, -32002 if broken else wire.INVALID_PARAMS))
    return c


@case("ERR-RETIRED", "retired -32042")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(call(), err(1, -32042 if broken else wire.MISSING_CLIENT_CAPABILITY,
                           {"requiredCapabilities": {"elicitation": {"url": {}}}}))
    return c


@case("ERR-DRAFT", "draft -32001")
def _(broken: bool) -> Crafter:
    c = http()
    c.exchange(call(), err(1, -32001 if broken else wire.HEADER_MISMATCH), status=400)
    return c


@case("ERR-LEGACY", "legacy-range -32000")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(call(), err(1, -32000 if broken else 1000))
    return c


@case("ERR-RESERVED", "undefined reserved code")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(call(), err(1, -32050 if broken else wire.INTERNAL_ERROR))
    return c


@case("ERR-RESERVED", "-32020 on stdio")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(call(), err(1, wire.HEADER_MISMATCH if broken else wire.INVALID_PARAMS))
    return c


# Expectations
def _probe(exp: Expectation, reply: Any, transport: str = "stdio", status: int | None = None) -> tuple[Crafter, dict[str, Any]]:
    c = stdio() if transport == "stdio" else http()
    s = c.send(bare(7, "tools/list", {}))
    if reply is not None:
        c.recv(reply, **({"status": status} if status else {}))
    elif status is not None:
        c.http_reply(status)
    c.exchange(req(8, "server/discover"), ok(8, DISCOVER))
    return c, {"expectations": {s: exp}}


META04 = Expectation("error", "META-04", codes=frozenset({-32602}), statuses=frozenset({400}), mutation="drop-meta")


@case("EXPECT-REACTION", "expected error, got a result")
def _(broken: bool) -> tuple[Crafter, dict[str, Any]]:
    return _probe(META04, ok(7, LIST_OK) if broken else err(7, -32602))


@case("EXPECT-REACTION", "expected code differs")
def _(broken: bool) -> tuple[Crafter, dict[str, Any]]:
    return _probe(META04, err(7, -32600 if broken else -32602))


@case("EXPECT-REACTION", "expected status differs")
def _(broken: bool) -> tuple[Crafter, dict[str, Any]]:
    return _probe(META04, err(7, -32602), "http", status=422 if broken else 400)


@case("EXPECT-REACTION", "invalid tool arguments silently accepted (-32602 and isError both fine)")
def _(broken: bool) -> tuple[Crafter, dict[str, Any]]:
    c = stdio()
    s1, _ = c.exchange(call(1, arguments={"when": "yesterday"}),
                       ok(1, TOOL_OK) if broken else ok(1, {**TOOL_OK, "isError": True}))
    s2, _ = c.exchange(call(2, arguments={"when": 5}), err(2, wire.INVALID_PARAMS))
    exp = Expectation("rejected", "TOOL-10", codes=frozenset({-32602}), strength="SHOULD")
    return c, {"expectations": {s1: exp, s2: exp}}


ENVELOPE = Expectation("error-or-refusal", "RPC-04", codes=frozenset({-32600}), strength="SHOULD",
                      served_strength="MUST", mutation="id-null")


def _null_id(broken_reply: Any, transport: str = "stdio", status: int | None = None) -> tuple[Crafter, dict[str, Any]]:
    c = stdio() if transport == "stdio" else http()
    s = c.send({"jsonrpc": "2.0", "id": None, "method": "tools/list", "params": req(1, "tools/list")["params"]})
    if broken_reply is not None:
        c.recv(broken_reply, **({"status": status} if status else {}))
    elif status is not None:
        c.http_reply(status)
    c.exchange(req(8, "server/discover"), ok(8, DISCOVER))
    return c, {"expectations": {s: ENVELOPE}}


@case("EXPECT-REACTION", "null id dropped silently on stdio (error-or-refusal: SHOULD)")
def _(broken: bool) -> tuple[Crafter, dict[str, Any]]:
    return _null_id(None if broken else err(None, wire.INVALID_REQUEST))


@case("EXPECT-REACTION", "null id served (error-or-refusal: served_strength MUST)")
def _(broken: bool) -> tuple[Crafter, dict[str, Any]]:
    return _null_id(ok(None, LIST_OK) if broken else err(None, wire.INVALID_REQUEST))


def test_error_or_refusal_strengths_and_http_refusal() -> None:
    # RPC-04 binds the client; the server's duty toward the frame is JSON-RPC 2.0's error (RPC-01).
    silent = [v for v in _run(lambda: _null_id(None)) if v.probe_rule == "RPC-04"]
    assert [(v.rule, v.strength, v.title, v.probe) for v in silent] == [
        ("RPC-01", "SHOULD", "malformed frame (id-null) got no reply", "id-null")]
    served = [v for v in _run(lambda: _null_id(ok(None, LIST_OK))) if v.probe_rule == "RPC-04"]
    assert served and {v.strength for v in served} == {"MUST"} and {v.rule for v in served} == {"RPC-01"}
    # Over HTTP a 400 without a JSON-RPC body refuses the frame as clearly as an error does.
    assert [v for v in _run(lambda: _null_id(None, "http", status=400)) if v.probe_rule == "RPC-04"] == []
    assert ENVELOPE == Expectation.from_json(ENVELOPE.to_json())


@case("META-04", "a dual-era server serves a claim-less request by 2025-era rules (HEURISTIC)")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(bare(3, "tools/list", {}), ok(3, {"tools": []}) if broken else err(3, wire.INVALID_PARAMS))
    c.exchange(req(4, "server/discover"), err(4, wire.METHOD_NOT_FOUND) if broken else ok(4, DISCOVER))
    return c


def test_claimless_request_served_legacy_is_a_heuristic_and_pins_the_process() -> None:
    c, _ = CASES["META-04"][-1][1]()
    found = judge(c.transcript)
    # Only the heuristic: no RT-01 for the legacy-shaped result, no modern rule for what follows.
    assert [(v.rule, v.strength) for v in found] == [("META-04", "HEURISTIC")], found


@case("EXPECT-REACTION", "expected silence, got a reply")
def _(broken: bool) -> tuple[Crafter, dict[str, Any]]:
    c = stdio()
    s = c.send(wire.build_notification("notifications/bogus"))
    if broken:
        c.recv(err(None, wire.METHOD_NOT_FOUND))
    c.exchange(req(8, "server/discover"), ok(8, DISCOVER))
    return c, {"expectations": {s: Expectation("no-reply", "RPC-10")}}


@case("EXPECT-REACTION", "tampered requestState completed")
def _(broken: bool) -> tuple[Crafter, dict[str, Any]]:
    c = stdio()
    s, _ = c.exchange(call(1, requestState="tampered"),
                      ok(1, TOOL_OK) if broken else ok(1, ir(requestState="fresh")))
    return c, {"expectations": {s: Expectation("not-complete", "MRTR-13")}}


@case("EXPECT-REACTION", "retry on another process must succeed")
def _(broken: bool) -> tuple[Crafter, dict[str, Any]]:
    c = stdio()
    s, _ = c.exchange(call(1, requestState="s"), err(1, wire.INVALID_PARAMS) if broken else ok(1, TOOL_OK))
    return c, {"expectations": {s: Expectation("result", "MRTR-18", strength="HEURISTIC")}}


@case("EXPECT-LIVENESS", "server dies after a malformed frame")
def _(broken: bool) -> tuple[Crafter, dict[str, Any]]:
    c = stdio()
    s = c.send(None, raw=b'{"jsonrpc":"2.0","id":1,\n"method":"tools/list"}\n')
    c.recv(err(None, wire.PARSE_ERROR))
    c.send(req(2, "server/discover"))
    if broken:
        c.closed()
        c.exit(1, "exited by itself")
    else:
        c.recv(ok(2, DISCOVER))
        c.exit(0)
    return c, {"expectations": {s: Expectation("error-or-ignore", "STDIO-02", mutation="raw-newline")}}


@case("EXPECT-LIVENESS", "sentinel rejected as a parse error (desynchronised framing)")
def _(broken: bool) -> tuple[Crafter, dict[str, Any]]:
    c = stdio()
    s = c.send(None, raw=b'{"jsonrpc":"2.0",')
    c.send(req(2, "server/discover"))
    c.recv(err(None, wire.PARSE_ERROR) if broken else ok(2, DISCOVER))
    if broken:
        c.timeout("response to id 2")
    return c, {"expectations": {s: Expectation("error-or-ignore", "STDIO-02", mutation="no-newline")}}


@case("EXPECT-LIVENESS", "server exits on a malformed frame with no sentinel sent")
def _(broken: bool) -> tuple[Crafter, dict[str, Any]]:
    c = stdio()
    c.exchange(req(1, "server/discover"), ok(1, DISCOVER))
    s = c.send(None, raw=b"\n")
    c.closed()
    c.exit(1 if broken else 0, "exited by itself" if broken else "exited after stdin was closed")
    return c, {"expectations": {s: Expectation("error-or-ignore", "STDIO-02", mutation="empty-line")}}


# --- rules of the coverage issue's new modules (fuzz/oracle/http_methods.py, tool_rules.py) ---


@case("SL-11", "GET on the endpoint answered 200")
def _(broken: bool) -> Crafter:
    c = http()
    sent = c._add("send", raw=b"", headers={"Accept": "text/event-stream"}, note="GET /mcp")
    c.http_reply(200 if broken else 405, ref=sent,
                 headers={"Content-Type": "text/event-stream"} if broken else {"Allow": "POST"})
    return c


def _tools(*names: str) -> dict[str, Any]:
    return {**LIST_OK, "tools": [{"name": n, "inputSchema": {"type": "object"}} for n in names]}


@case("TOOL-03", "same tools, another order")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(req(1, "tools/list"), ok(1, _tools("a", "b", "c")))
    c.exchange(req(2, "tools/list"), ok(2, _tools(*(("c", "b", "a") if broken else ("a", "b", "c")))))
    return c


@case("TOOL-06", "tool name with a space")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(req(1, "tools/list"), ok(1, _tools("echo", "echo text" if broken else "echo_text")))
    return c


@case("TOOL-06", "tool listed twice")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(req(1, "tools/list"), ok(1, _tools("echo", "echo" if broken else "other")))
    return c


@case("TOOL-12", "structuredContent without a text block")
def _(broken: bool) -> Crafter:
    c = stdio()
    content = [] if broken else [{"type": "text", "text": '{"n": 1}'}]
    c.exchange(call(), ok(1, {"resultType": "complete", "content": content, "structuredContent": {"n": 1}}))
    return c


# --- request-scoped notifications, DIGEST §12 and §13 (fuzz/oracle/request_notifications.py) ---


def _progress(token: Any, value: float) -> dict[str, Any]:
    return wire.build_notification("notifications/progress", {"progressToken": token, "progress": value})


def _log(level: str) -> dict[str, Any]:
    return wire.build_notification("notifications/message", {"level": level, "data": "x"})


def _with(rid: Any, *, token: Any = None, level: str | None = None) -> dict[str, Any]:
    return wire.build_request(rid, "tools/call", {"name": "echo", "arguments": {}}, log_level=level,
                              progress_token=token)


@case("PROG-01", "progress for a request without a progressToken (stdio)")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(_with(1, token=None if broken else "t1"))
    c.recv(_progress(1 if broken else "t1", 1))
    c.recv(ok(1, TOOL_OK))
    return c


@case("PROG-01", "progress with another token on the request's stream (HTTP)")
def _(broken: bool) -> Crafter:
    c = http()
    s = c.send(_with(1, token="t1"))
    c.recv(_progress("t2" if broken else "t1", 1), ref=s, headers=SSE)
    c.recv(ok(1, TOOL_OK), ref=s, headers=SSE)
    return c


@case("PROG-01", "progress token 1 for a request whose token is \"1\" (type kept)")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(_with(5, token="1"))
    c.recv(_progress(1 if broken else "1", 1))
    c.recv(ok(5, TOOL_OK))
    return c


@case("PROG-02", "progress repeats its value")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(_with(1, token=7))
    c.recv(_progress(7, 0.5))
    c.recv(_progress(7, 0.5 if broken else 0.75))
    c.recv(ok(1, TOOL_OK))
    return c


@case("PROG-02", "progress goes backwards on an SSE stream")
def _(broken: bool) -> Crafter:
    c = http()
    s = c.send(_with(1, token="t"))
    c.recv(_progress("t", 2), ref=s, headers=SSE)
    c.recv(_progress("t", 1 if broken else 3), ref=s, headers=SSE)
    c.recv(ok(1, TOOL_OK), ref=s, headers=SSE)
    return c


@case("PROG-03", "progress after the response (stdio)")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(_with(1, token="t"))
    c.recv(_progress("t", 1))
    if not broken:
        c.recv(_progress("t", 2))
    c.recv(ok(1, TOOL_OK))
    if broken:
        c.recv(_progress("t", 2))
    c.exchange(req(2, "server/discover"), ok(2, DISCOVER))
    return c


@case("PROG-03", "progress after the response on the SSE stream")
def _(broken: bool) -> Crafter:
    c = http()
    s = c.send(_with(1, token="t"))
    if not broken:
        c.recv(_progress("t", 2), ref=s, headers=SSE)
    c.recv(ok(1, TOOL_OK), ref=s, headers=SSE)
    if broken:
        c.recv(_progress("t", 2), ref=s, headers=SSE)
    return c


@case("LOG-01", "a log message for a request without logLevel (stdio)")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(_with(1, level=None if broken else "info"))
    c.recv(_log("info"))
    c.recv(ok(1, TOOL_OK))
    return c


@case("LOG-01", "a log message on the stream of a request without logLevel (HTTP)")
def _(broken: bool) -> Crafter:
    c = http()
    s = c.send(_with(1, level=None if broken else "debug"))
    c.recv(_log("error"), ref=s, headers=SSE)
    c.recv(ok(1, TOOL_OK), ref=s, headers=SSE)
    return c


@case("LOG-02", "a log message below the requested level")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(_with(1, level="warning"))
    c.recv(_log("info" if broken else "warning"))
    c.recv(ok(1, TOOL_OK))
    return c


@case("LOG-02", "debug on the stream of a request that asked for error (HTTP)")
def _(broken: bool) -> Crafter:
    c = http()
    s = c.send(_with(1, level="error"))
    c.recv(_log("debug" if broken else "critical"), ref=s, headers=SSE)
    c.recv(ok(1, TOOL_OK), ref=s, headers=SSE)
    return c


def test_a_log_message_is_judged_only_when_every_request_in_flight_breaks_the_rule() -> None:
    """Over stdio a log message names no request: with one request that asked for logs in flight,
    it may be that request's, so no LOG-01; with two that asked for warning and info, an info
    message is fine for the second (LOG-02 silent)."""
    c = stdio()
    c.send(_with(1))
    c.send(_with(2, level="info"))
    c.recv(_log("info"))
    c.send(_with(3, level="warning"))
    c.recv(_log("info"))
    c.recv(ok(1, TOOL_OK))
    c.recv(ok(2, TOOL_OK))
    c.recv(ok(3, TOOL_OK))
    assert [v for v in judge(c.transcript) if v.rule.startswith(("LOG-", "PROG-"))] == []


def test_progress_of_an_earlier_example_on_a_reused_process_is_not_attributed() -> None:
    c = Crafter("stdio")
    c.spawn("spawned (reused)")
    c.recv(_progress("old", 3))  # nothing of this transcript is in flight: not ours to judge
    c.exchange(req(1, "server/discover"), ok(1, DISCOVER))
    assert [v for v in judge(c.transcript) if v.rule.startswith("PROG-")] == []
    c.send(_with(2))
    c.recv(_progress("old", 4))  # while request 2 (no token) is in flight: PROG-01
    c.recv(ok(2, TOOL_OK))
    assert {v.rule for v in judge(c.transcript)} == {"PROG-01"}


# --- cancellation, DIGEST §11 (fuzz/oracle/cancellation.py) ---


def _cancel(rid: Any) -> dict[str, Any]:
    return wire.build_notification("notifications/cancelled", {"requestId": rid})


@case("CAN-06", "the server echoes a client's cancellation")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.exchange(_with(1), ok(1, TOOL_OK))
    c.send(_cancel(1))
    if broken:
        c.recv(_cancel(1))
    c.exchange(req(2, "server/discover"), ok(2, DISCOVER))
    return c


@case("CAN-06", "notifications/cancelled on a tools/call stream (HTTP)")
def _(broken: bool) -> Crafter:
    c = http()
    s = c.send(_with(1))
    if broken:
        c.recv(_cancel(1), ref=s, headers=SSE)
    c.recv(ok(1, TOOL_OK), ref=s, headers=SSE)
    return c


def test_can_06_accepts_a_cancelled_notification_that_ends_a_listen_stream() -> None:
    c = stdio()
    c.send(req("L", "subscriptions/listen", {"notifications": {"toolsListChanged": True}}))
    c.recv(wire.build_notification("notifications/subscriptions/acknowledged", {
        "_meta": {wire.META_SUBSCRIPTION_ID: "L"}, "notifications": {}}))
    c.recv(_cancel("L"))
    assert [v for v in judge(c.transcript) if v.rule == "CAN-06"] == []


@case("CAN-04", "progress for a cancelled request after a later request was answered")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(_with(1, token="t"))
    c.recv(_progress("t", 1))
    c.send(_cancel(1))
    c.exchange(req(2, "server/discover"), ok(2, DISCOVER))
    if broken:
        c.recv(_progress("t", 2))
    return c


def test_can_04_allows_output_in_the_race_window_and_a_late_response() -> None:
    c = stdio()
    c.send(_with(1, token="t", level="info"))
    c.send(_cancel(1))
    c.recv(_progress("t", 1))  # written before the server read the cancellation: the race
    c.recv(ok(1, TOOL_OK))  # a response already under way may still arrive (CAN-07)
    c.exchange(req(2, "server/discover"), ok(2, DISCOVER))
    assert [v for v in judge(c.transcript) if v.rule.startswith("CAN-")] == []


# --- subscriptions/listen, DIGEST §10 (fuzz/oracle/subscriptions.py) ---


def _listen(rid: Any, **wanted: Any) -> dict[str, Any]:
    return req(rid, "subscriptions/listen", {"notifications": wanted})


def _ack(sub: Any, honoured: dict[str, Any] | None = None) -> dict[str, Any]:
    return wire.build_notification("notifications/subscriptions/acknowledged", {
        "_meta": {wire.META_SUBSCRIPTION_ID: sub}, "notifications": honoured or {}})


def _updated(sub: Any, uri: str = "calendar://week") -> dict[str, Any]:
    return wire.build_notification("notifications/resources/updated",
                                   {"uri": uri, "_meta": {wire.META_SUBSCRIPTION_ID: sub}})


@case("SUB-03", "an update before the acknowledgement (stdio)")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(_listen(1, resourceSubscriptions=["calendar://week"]))
    if broken:
        c.recv(_updated(1))
    c.recv(_ack(1, {"resourceSubscriptions": ["calendar://week"]}))
    c.recv(_updated(1))
    c.send(_cancel(1))
    return c


@case("SUB-04", "subscriptionId \"1\" for listen id 1 (stdio)")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(_listen(1, toolsListChanged=True))
    c.recv(_ack("1" if broken else 1))
    c.send(_cancel(1))
    return c


@case("SUB-04", "an update without subscriptionId on the listen stream (HTTP)")
def _(broken: bool) -> Crafter:
    c = http()
    s = c.send(_listen("L", resourceSubscriptions=["calendar://week"]))
    c.recv(_ack("L"), ref=s, headers=SSE)
    note = _updated("L")
    if broken:
        del note["params"]["_meta"]
    c.recv(note, ref=s, headers=SSE)
    return c


@case("SUB-05", "a log message on the listen stream (HTTP)")
def _(broken: bool) -> Crafter:
    c = http()
    s = c.send(_listen("L", resourceSubscriptions=["calendar://week"]))
    c.recv(_ack("L"), ref=s, headers=SSE)
    if broken:
        c.recv(_log("info"), ref=s, headers=SSE)
    return c


@case("SUB-02", "tools/list_changed that the filter did not ask for")
def _(broken: bool) -> Crafter:
    c = http()
    s = c.send(_listen("L", **({"promptsListChanged": True} if broken else {"toolsListChanged": True})))
    c.recv(_ack("L"), ref=s, headers=SSE)
    c.recv(wire.build_notification("notifications/tools/list_changed", {"_meta": {wire.META_SUBSCRIPTION_ID: "L"}}),
           ref=s, headers=SSE)
    return c


@case("SUB-02", "an update for a URI nobody subscribed to (a sub-resource is fine)")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(_listen(3, resourceSubscriptions=["file:///project"]))
    c.recv(_ack(3, {"resourceSubscriptions": ["file:///project"]}))
    c.recv(_updated(3, "file:///other" if broken else "file:///project/src/main.rs"))
    c.send(_cancel(3))
    return c


def _listen_end(sub: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 4, "result": {"resultType": "complete", "_meta": {wire.META_SUBSCRIPTION_ID: sub}}}


@case("SUB-08", "stdin closed with a listen open: the closing result names the id as text (stdio)")
def _(broken: bool) -> Crafter:
    c = stdio()
    c.send(_listen(4, resourceSubscriptions=["calendar://week"]))
    c.recv(_ack(4, {"resourceSubscriptions": ["calendar://week"]}))
    c.recv(_listen_end("4" if broken else 4))
    c.exit()
    return c


@case("SUB-08", "the closing result names the subscription by the id's text (HTTP)")
def _(broken: bool) -> Crafter:
    c = http()
    s = c.send(_listen(4, resourceSubscriptions=["calendar://week"]))
    c.recv(_ack(4), ref=s, headers=SSE)
    c.recv(_listen_end("4" if broken else 4), ref=s, headers=SSE)
    return c


def test_sub_08_accepts_either_signal_and_only_suspects_silence() -> None:
    """The server's notifications/cancelled for the listen is the other accepted end (SUB-08); no
    signal at all when the harness closed stdin is a HEURISTIC (SUB-09: the client closed the
    transport); a listen the harness cancelled itself, or that was still open when the transcript
    ends without an exit, is not judged."""
    def shut(signal: Any) -> list[Violation]:
        c = stdio()
        c.send(_listen(4, toolsListChanged=True))
        c.recv(_ack(4))
        if signal is not None:
            c.recv(signal)
        c.exit()
        return [v for v in judge(c.transcript) if v.rule == "SUB-08"]

    assert shut(wire.build_notification("notifications/cancelled", {"requestId": 4})) == []
    assert [v.strength for v in shut(None)] == ["HEURISTIC"]
    assert shut(_listen_end(4)) == []
    c = stdio()
    c.send(_listen(4, toolsListChanged=True))
    c.recv(_ack(4))
    c.send(_cancel(4))
    c.exit()
    assert [v for v in judge(c.transcript) if v.rule == "SUB-08"] == []


# --- the tests -------------------------------------------------------------------------------------

ALL = [pytest.param(rule_id, name, broken, fixed, id=f"{rule_id}: {name}")
       for rule_id, cases in CASES.items() for name, broken, fixed in cases]


def _run(build: Build) -> list[Violation]:
    c, kwargs = build()
    return judge(c.transcript, **kwargs)


def _rule_of(v: Violation) -> str:
    return v.rule


@pytest.mark.parametrize(("rule_id", "name", "broken", "fixed"), ALL)
def test_rule_fires_on_broken_exchange(rule_id: str, name: str, broken: Build, fixed: Build | None) -> None:
    found = _run(broken)
    expected_rule = {"EXPECT-REACTION": None, "EXPECT-LIVENESS": None}.get(rule_id, rule_id)
    if expected_rule is None:  # expectation violations: the server's duty as rule, the probed rule apart
        c, kwargs = broken()
        probed = {e.rule for e in kwargs["expectations"].values()}
        assert any(v.probe_rule in probed and v.rule == server_duty(v.probe_rule) for v in found), f"{name}: {found}"
    else:
        assert expected_rule in {v.rule for v in found}, f"{rule_id} did not fire on {name}: {found}"


@pytest.mark.parametrize(("rule_id", "name", "broken", "fixed"), [p for p in ALL if p.values[3] is not None])
def test_rule_silent_on_fixed_twin(rule_id: str, name: str, broken: Build, fixed: Build) -> None:
    found = _run(fixed)
    assert found == [], f"{name} (fixed) drew: " + "; ".join(f"{v.rule} {v.title}: {v.detail}" for v in found)


def test_every_rule_has_a_firing_case() -> None:
    # AUTH-* rules judge only requests sent with a token case (--auth): their cases, crafted and on
    # real answers from the auth mutants and the SDK resource server, are in tests/test_auth.py.
    # TOOL-09, TOOL-10 and TOOL-15 (what runs inside tool bodies) have theirs in tests/test_tool_body_rules.py.
    from test_tool_body_rules import FIRES

    judged_here = {r for r in RULES if not r.startswith("AUTH-")}
    tested = set(CASES) | set(FIRES)
    assert tested == judged_here, f"untested: {judged_here - tested}; unknown: {tested - judged_here}"


def test_violation_json_round_trip() -> None:
    c, _ = CASES["RT-01"][0][1]()
    for v in judge(c.transcript):
        assert Violation.from_json(v.to_json()) == v
        assert v.strength in ("MUST", "SHOULD", "HEURISTIC")


def test_an_idless_error_trailing_the_answer_of_a_cancelled_request_is_not_a_reply_to_the_cancel() -> None:
    """Request 1 in flight, its cancellation sent, then its answer and an id-less error: the error
    may trail the answer (a stray error) or answer the cancellation (RPC-10); no guess. So may the
    same error when the answer was read just before the cancellation went out (a second write of
    the server's, recorded in CI). After the answer and a quiet TRAILER_WINDOW it is RPC-10."""
    c = stdio()
    c.send(_with(1))
    c.send(_cancel(1))
    c.recv(ok(1, TOOL_OK))
    c.recv(wire.build_error(None, -32601, "stray"))
    c.exchange(req(2, "server/discover"), ok(2, DISCOVER))
    assert "RPC-10" not in {v.rule for v in judge(c.transcript)}
    for quiet, found in ((0.0, False), (TRAILER_WINDOW, True)):
        d = stdio()
        d.exchange(_with(1), ok(1, TOOL_OK))
        d.pause(quiet)
        d.send(_cancel(1))
        d.recv(wire.build_error(None, -32601, "answered the notification"))
        d.exchange(req(2, "server/discover"), ok(2, DISCOVER))
        assert ("RPC-10" in {v.rule for v in judge(d.transcript)}) is found, quiet


@pytest.mark.parametrize(("head", "silent"), [
    (b'{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","description":"xxxx', [2]),  # names id 1
    (b'{"jsonrpc": "2.0", "id": 2, "result": {"tools": [', [1]),
    (b'{"result":{"tools":[{"name":"t","id":1,"description":"xxxx', []),  # no id where a response opens
])
def test_a_line_over_the_cap_may_be_an_answer_and_is_never_silence(head: bytes, silent: list[int]) -> None:
    """A 50 MB tools/list page is discarded unread by the driver, its head kept: it answered a
    request, so no RPC-01 "no reply" for it (once filed against a correct server). A head that
    opens with an id says which; one that does not may answer any request outstanding. A request
    the line cannot be the answer of is still judged."""
    c = stdio()
    sends = [c.send(req(1, "tools/list")), c.send(req(2, "tools/list"))]
    c.oversize(head)
    for send in sends:
        c.timeout(ref=send)
    unanswered = [v for v in judge(c.transcript) if v.rule == "RPC-01" and v.title == "request never answered"]
    assert sorted(c.transcript.events[v.event_index].message["id"] for v in unanswered) == silent

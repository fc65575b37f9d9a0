"""The false-positive test: every official 2026-07-28 example, wrapped into a realistic exchange,
draws no violation from the oracle, over stdio and over HTTP.

Each example is placed where it belongs: a result as the answer to a request of its method, an
error as the answer to a request having that defect, a client-side value (request, params,
capabilities, input responses) inside a request answered by a valid result, a server notification
on the stream of the request it belongs to. The requests declare the capabilities the example
needs, as a conformant client would.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import require_spec_dir

from mcp_tempest.fuzz.oracle import judge
from mcp_tempest.fuzz.oracle.craft import Crafter
from mcp_tempest.targets import wire

RESULT_METHOD = {
    "DiscoverResult": "server/discover",
    "ListToolsResult": "tools/list",
    "CallToolResult": "tools/call",
    "ListResourcesResult": "resources/list",
    "ListResourceTemplatesResult": "resources/templates/list",
    "ReadResourceResult": "resources/read",
    "ListPromptsResult": "prompts/list",
    "GetPromptResult": "prompts/get",
    "CompleteResult": "completion/complete",
    "SubscriptionsListenResult": "subscriptions/listen",
    "InputRequiredResult": "tools/call",
}
ALL_CAPS = {"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}, "context": {}}, "roots": {}}
PARAMS = {
    "tools/call": {"name": "get_weather", "arguments": {"location": "New York"}},
    "resources/read": {"uri": "file:///project/src/main.rs"},
    "prompts/get": {"name": "code_review"},
    "completion/complete": {"ref": {"type": "ref/prompt", "name": "code_review"},
                            "argument": {"name": "language", "value": "py"}},
    "subscriptions/listen": {"notifications": {"toolsListChanged": True}},
}
MINIMAL_RESULT = {
    "server/discover": {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {
        "tools": {}, "resources": {}, "prompts": {}, "completions": {}}, "ttlMs": 0, "cacheScope": "public"},
    "tools/list": {"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "public"},
    "tools/call": {"resultType": "complete", "content": []},
    "resources/list": {"resultType": "complete", "resources": [], "ttlMs": 0, "cacheScope": "public"},
    "resources/templates/list": {"resultType": "complete", "resourceTemplates": [], "ttlMs": 0,
                                 "cacheScope": "public"},
    "resources/read": {"resultType": "complete", "contents": [], "ttlMs": 0, "cacheScope": "public"},
    "prompts/list": {"resultType": "complete", "prompts": [], "ttlMs": 0, "cacheScope": "public"},
    "prompts/get": {"resultType": "complete", "messages": []},
    "completion/complete": {"resultType": "complete", "completion": {"values": []}},
}
SERVER_INFO = {wire.META_SERVER_INFO: {"name": "example", "version": "1.0.0"}}


def _examples() -> list[tuple[str, str, Any]]:
    spec = require_spec_dir()
    root = spec / "2026-07-28" / "examples"
    found = sorted(root.glob("*/*.json"))
    if not found:
        pytest.fail(f"no examples under {root}")
    return [(p.parent.name, p.name, orjson.loads(p.read_bytes())) for p in found]


def _request(method: str, rid: Any = "req-1", *, caps: dict[str, Any] | None = None,
             params: dict[str, Any] | None = None, version: str = wire.MODERN_VERSION) -> dict[str, Any]:
    body = copy.deepcopy(params if params is not None else PARAMS.get(method, {}))
    return wire.build_request(rid, method, body, capabilities=ALL_CAPS if caps is None else caps,
                              version=version)


def _with_info(result: dict[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(result)
    meta = result.setdefault("_meta", {})
    if isinstance(meta, dict):
        for key, value in SERVER_INFO.items():
            meta.setdefault(key, value)
    return result


def wrap(type_name: str, example: Any, transport: str) -> Crafter:
    """Place one official example in the exchange it belongs to."""
    c = Crafter(transport)
    c.spawn()
    if type_name.endswith("ResultResponse") or type_name in RESULT_METHOD:
        result_type = type_name.removesuffix("Response")
        method = RESULT_METHOD.get(result_type, "tools/call")
        envelope = example if type_name.endswith("ResultResponse") else wire.build_result("req-1", example)
        rid = envelope.get("id", "req-1")
        request = _request(method, rid)
        if method == "subscriptions/listen":
            envelope = copy.deepcopy(envelope)
            meta = envelope["result"].get("_meta", {})
            rid = meta.get("io.modelcontextprotocol/subscriptionId", rid)
            envelope["id"] = rid
            request = _request(method, rid)
        c.exchange(request, envelope)
        return c
    if type_name == "HeaderMismatchError":
        request = _request("tools/call", example["id"], params={"name": "bar"})
        headers = wire.http_headers(request)
        headers["Mcp-Name"] = "foo"
        c.send(request, headers=headers) if c.http else c.send(request)
        if c.http:
            c.recv(example, status=400)
        else:  # -32020 is HTTP-only; on stdio the same defect cannot exist, so answer it properly
            c.recv(wire.build_result(example["id"], _with_info(MINIMAL_RESULT["tools/call"])))
        return c
    if type_name == "MissingRequiredClientCapabilityError":
        c.exchange(_request("tools/call", example["id"], caps={}), example, **_status(c, 400))
        return c
    if type_name == "UnsupportedProtocolVersionError":
        requested = example["error"]["data"]["requested"]
        c.exchange(_request("server/discover", example["id"], version=requested), example, **_status(c, 400))
        return c
    if type_name in ("InvalidParamsError", "MethodNotFoundError", "ParseError", "InternalError", "InvalidRequestError"):
        return _wrap_error(c, type_name, example)
    if type_name.endswith("Notification"):
        return _wrap_notification(c, type_name, example)
    if type_name.endswith("Request") and isinstance(example, dict) and example.get("jsonrpc") == "2.0":
        method = example["method"]
        request = copy.deepcopy(example)
        if method == "subscriptions/listen":  # the graceful-close result names its subscription
            result = {"resultType": "complete", "_meta": {wire.META_SUBSCRIPTION_ID: request["id"]}}
        else:
            result = MINIMAL_RESULT[method]
        c.exchange(request, wire.build_result(request["id"], _with_info(result)))
        return c
    # A client-side value (params, capabilities, input responses, content, schema...): inside a request.
    request = _client_value_request(type_name, example)
    c.exchange(request, wire.build_result(request["id"], _with_info(MINIMAL_RESULT[request["method"]])))
    return c


def _status(c: Crafter, status: int) -> dict[str, Any]:
    return {"status": status} if c.http else {}


def _wrap_error(c: Crafter, type_name: str, error: dict[str, Any]) -> Crafter:
    if type_name == "ParseError":
        c.send(None, raw=b'{"jsonrpc": "2.0", "id": 1, "method": \n')
        c.recv({"jsonrpc": "2.0", "error": error}, **_status(c, 400))
        return c
    message = error.get("message", "")
    if type_name == "MethodNotFoundError":
        request = _request("prompts/list")
        c.exchange(request, wire.build_error(request["id"], error["code"], message, error.get("data")),
                   **_status(c, 404))
        return c
    method = "tools/call"
    params: dict[str, Any] | None = None
    if "cursor" in message.lower():
        method, params = "tools/list", {"cursor": "not-a-cursor"}
    elif "prompt" in message.lower():
        method, params = "prompts/get", {"name": "invalid_prompt_name"}
    request = _request(method, params=params)
    c.exchange(request, wire.build_error(request["id"], error["code"], message, error.get("data")),
               **_status(c, 400 if error["code"] == wire.INVALID_PARAMS else 500))
    return c


def _wrap_notification(c: Crafter, type_name: str, note: dict[str, Any]) -> Crafter:
    method = note.get("method", "")
    if method == "notifications/cancelled" and "requestId" in note.get("params", {}):
        # Client -> server on stdio: cancel an in-flight request; no answer to either is required.
        if not c.http:
            request = _request("tools/call", note["params"]["requestId"])
            c.send(request)
            c.send(note)
        return c
    listen_id = (note.get("params", {}).get("_meta", {}) or {}).get(wire.META_SUBSCRIPTION_ID)
    if listen_id is not None or method.endswith("list_changed") or method == "notifications/resources/updated":
        rid = listen_id if listen_id is not None else "listen-1"
        uri = note.get("params", {}).get("uri", "file:///project/config.json")
        wanted = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True,
                  "resourceSubscriptions": [uri]}
        request = _request("subscriptions/listen", rid, params={"notifications": wanted})
        s = c.send(request)
        sse = {"headers": {"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}} if c.http else {}
        if method != "notifications/subscriptions/acknowledged":
            # SUB-03: a stream opens with its acknowledgement; the example is what comes after it.
            c.recv(wire.build_notification("notifications/subscriptions/acknowledged", {
                "_meta": {wire.META_SUBSCRIPTION_ID: rid}, "notifications": wanted}), ref=s if c.http else None, **sse)
        c.recv(note, ref=s if c.http else None, **sse)
        return c
    token = note.get("params", {}).get("progressToken")
    request = _request("tools/call", "req-1", params={
        **PARAMS["tools/call"], "_meta": {**({"progressToken": token} if token is not None else {}),
                                          wire.META_LOG_LEVEL: "debug"}})
    s = c.send(request)
    sse = {"headers": {"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}} if c.http else {}
    c.recv(note, ref=s if c.http else None, **sse)
    c.recv(wire.build_result("req-1", _with_info(MINIMAL_RESULT["tools/call"])), ref=s if c.http else None, **sse)
    return c


def _client_value_request(type_name: str, value: Any) -> dict[str, Any]:
    if type_name == "ClientCapabilities":
        return _request("server/discover", caps=value)
    if type_name.endswith("RequestParams") and isinstance(value, dict) and "_meta" in value:
        method = {"CallToolRequestParams": "tools/call", "CompleteRequestParams": "completion/complete",
                  "GetPromptRequestParams": "prompts/get", "ReadResourceRequestParams": "resources/read",
                  "PaginatedRequestParams": "tools/list"}.get(type_name, "tools/call")
        return {"jsonrpc": "2.0", "id": "req-1", "method": method, "params": copy.deepcopy(value)}
    if type_name == "InputResponses":
        return _request("tools/call", params={**PARAMS["tools/call"], "inputResponses": value,
                                              "requestState": "opaque"})
    # Content, schemas, embedded input requests/responses...: carried as a tool argument.
    return _request("tools/call", params={"name": "echo", "arguments": {"value": value}})


def _cases() -> list[Any]:
    try:
        examples = _examples()
    except pytest.skip.Exception as exc:  # collected without the spec: one skipping case says why
        return [pytest.param(None, None, None, marks=pytest.mark.skip(reason=str(exc)))]
    return [pytest.param(t, n, e, id=f"{t}/{n}") for t, n, e in examples]


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize(("type_name", "name", "example"), _cases())
def test_official_example_draws_no_violation(type_name: str, name: str, example: Any, transport: str) -> None:
    c = wrap(type_name, example, transport)
    found = judge(c.transcript)
    assert found == [], f"{type_name}/{name} over {transport}: " + "; ".join(
        f"{v.rule} {v.title}: {v.detail}" for v in found)


def test_examples_are_all_placed() -> None:
    """Every example directory is one this test knows how to place (new types get a conscious decision)."""
    spec = require_spec_dir()
    types = sorted(p.name for p in (spec / "2026-07-28" / "examples").iterdir() if p.is_dir())
    assert len(types) >= 80
    assert Path(spec / "2026-07-28" / "examples" / "ReadResourceResultResponse").is_dir()

"""Client rules on crafted client-mode transcripts: each fires on the bug and stays silent on the
correct exchange (strengths as DIGEST states them)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tempest.fuzz.oracle.client_rules import CLIENT_RULES, judge_client
from mcp_tempest.fuzz.oracle.registry import rules_for
from mcp_tempest.targets import wire
from mcp_tempest.targets.transcript import Event, Transcript

CAPS = {"elicitation": {}, "sampling": {}, "roots": {}}
_IR = {"resultType": "input_required", "inputRequests": {"q": {"method": "roots/list"}}, "requestState": "s-1"}


class Script:
    """A client-mode transcript by hand: `client` frames (recv) and `server` answers (send, ref)."""

    def __init__(self, transport: str = "stdio") -> None:
        self.t = Transcript("crafted-client", transport)  # type: ignore[arg-type]
        self.t.events.append(Event("spawn", 0.0, proc=0, note="client"))
        self.t.events.append(Event("spawn", 0.0, proc=1, note="server"))

    def client(self, message: Any, *, raw: bytes | None = None, headers: dict[str, str] | None = None) -> int:
        if headers is None and self.t.transport == "http" and isinstance(message, dict) and "method" in message:
            headers = {**wire.http_headers(message), "Accept": "application/json, text/event-stream"}
        kind = "recv" if message is not None else "noise"
        self.t.events.append(Event(kind, 0.0, proc=1, message=message, raw=raw or wire.dumps(message),
                                   headers=headers))
        return len(self.t.events) - 1

    def server(self, ref: int, message: Any, note: str = "reply") -> int:
        self.t.events.append(Event("send", 0.0, proc=1, message=message, raw=wire.dumps(message), ref=ref,
                                   note=note))
        return len(self.t.events) - 1

    def call(self, rid: Any, method: str, params: dict[str, Any] | None = None, *, result: Any = None,
             error: Any = None, note: str = "reply", meta: bool = True) -> int:
        body = dict(params or {})
        if meta:
            body["_meta"] = wire.request_meta(CAPS)
        i = self.client({"jsonrpc": "2.0", "id": rid, "method": method, "params": body})
        if result is not None:
            self.server(i, {"jsonrpc": "2.0", "id": rid, "result": result}, note)
        elif error is not None:
            self.server(i, {"jsonrpc": "2.0", "id": rid, "error": error}, note)
        return i

    def reading(self, step: str, outcome: str) -> None:
        self.t.events.append(Event("reading", 0.0, proc=0, message={"step": step, "outcome": outcome}))

    def exit(self, status: int | None = 0, *, timeout: bool = False) -> None:
        if timeout:
            self.t.events.append(Event("timeout", 0.0, proc=0, note="hung"))
        self.t.events.append(Event("exit", 0.0, proc=0, status=status))

    def rules(self) -> list[tuple[str, str]]:
        return [(v.rule, v.strength) for v in judge_client(self.t)]


OK = {"resultType": "complete", "content": []}
TOOL = {"name": "echo", "arguments": {}}


def mrtr(retry_id: Any = 2, *, state: Any = "s-1", responses: Any = None, retry_meta: bool = True,
         given: dict[str, Any] | None = None) -> Script:
    s = Script()
    s.call(1, "tools/call", TOOL, result=given or _IR)
    params = dict(TOOL)
    if responses is not None:
        params["inputResponses"] = responses
    if state is not None:
        params["requestState"] = state
    s.call(retry_id, "tools/call", params, result=OK, meta=retry_meta)
    s.exit()
    return s


def test_the_correct_exchange_breaks_nothing() -> None:
    assert mrtr(responses={"q": {"roots": []}}).rules() == []


def test_client_rules_are_never_run_by_server_campaigns() -> None:
    server_ids = {id(r.check) for era in ("modern", "legacy") for r in rules_for(era)}
    assert CLIENT_RULES and not any(id(r.check) in server_ids for r in CLIENT_RULES.values())


@pytest.mark.parametrize(("rule", "strength"), [
    ("RPC-01", "MUST"), ("RPC-02", "MUST"), ("RPC-03", "MUST"), ("RPC-04", "MUST"), ("RPC-05", "MUST"),
    ("RPC-11", "MUST"), ("STDIO-04", "MUST"), ("HTTP-04", "MUST"), ("META-04", "MUST"), ("RT-04", "MUST"),
    ("RT-05", "MUST"), ("MRTR-09", "MUST"), ("MRTR-10", "MUST"), ("MRTR-11", "MUST"), ("MRTR-12", "MUST"),
    ("VER-03", "SHOULD"), ("CAN-03", "MUST"), ("HTTP-03", "MUST"), ("HDR-06", "MUST"),
    ("CLIENT-LIVENESS", "HEURISTIC"),
])
def test_strengths_are_digests(rule: str, strength: str) -> None:
    assert CLIENT_RULES[rule].strength == strength


# --- framing ---


def test_rpc_01_fires_on_a_non_json_line_and_a_missing_jsonrpc() -> None:
    s = Script()
    s.client(None, raw=b"hello from the client")
    s.client({"id": 1, "method": "tools/list", "params": {"_meta": wire.request_meta(CAPS)}})
    assert [r for r, _ in s.rules()].count("RPC-01") == 2


def test_rpc_01_silent_on_requests_and_notifications() -> None:
    s = Script()
    s.call(1, "tools/list", result=OK)
    s.client({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    assert s.rules() == []


def test_rpc_02_fires_on_bytes_that_are_not_utf8() -> None:
    s = Script()
    s.client(None, raw=b"\xff\xfe")
    assert ("RPC-02", "MUST") in s.rules()


@pytest.mark.parametrize(("rid", "rule"), [(1.5, "RPC-03"), (True, "RPC-03"), (None, "RPC-04")])
def test_rpc_03_04_fire_on_bad_ids(rid: Any, rule: str) -> None:
    s = Script()
    s.call(rid, "tools/list", result=OK)
    assert [r for r, _ in s.rules()] == [rule]


@pytest.mark.parametrize("rid", ["a", 0, -3])
def test_rpc_03_04_silent_on_string_and_integer_ids(rid: Any) -> None:
    s = Script()
    s.call(rid, "tools/list", result=OK)
    assert s.rules() == []


def test_rpc_05_fires_on_an_id_reused_while_in_flight() -> None:
    s = Script()
    a = s.call(1, "resources/list")
    b = s.call(1, "prompts/list")
    s.server(b, {"jsonrpc": "2.0", "id": 1, "result": OK})
    s.server(a, {"jsonrpc": "2.0", "id": 1, "result": OK})
    assert s.rules() == [("RPC-05", "MUST")]


def test_rpc_05_silent_when_the_first_was_answered_or_the_ids_differ_in_type() -> None:
    s = Script()
    s.call(1, "resources/list", result=OK)
    s.call(1, "prompts/list", result=OK)  # reuse after the answer: allowed
    a = s.call(2, "tools/list")
    s.call("2", "prompts/list", result=OK)  # "2" is not 2
    s.server(a, {"jsonrpc": "2.0", "id": 2, "result": OK})
    assert s.rules() == []


def test_rpc_11_fires_on_a_batch() -> None:
    s = Script()
    s.client([{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": wire.request_meta(CAPS)}}])
    assert s.rules() == [("RPC-11", "MUST")]


@pytest.mark.parametrize(("transport", "rule"), [("stdio", "STDIO-04"), ("http", "HTTP-04")])
def test_a_response_frame_fires_its_transports_rule(transport: str, rule: str) -> None:
    s = Script(transport)
    s.client({"jsonrpc": "2.0", "id": 1, "result": {}},
             headers={"Accept": "application/json, text/event-stream"})
    assert s.rules() == [(rule, "MUST")]


def test_a_response_to_a_server_sent_request_names_the_probe() -> None:
    s = Script()
    i = s.call(1, "tools/list")
    s.server(i, {"jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create", "params": {}},
             note="hostile:server-request")
    s.server(i, {"jsonrpc": "2.0", "id": 1, "result": OK})
    s.client({"jsonrpc": "2.0", "id": "srv-1", "error": {"code": -32601, "message": "Method not found"}})
    assert [(v.rule, v.probe) for v in judge_client(s.t)] == [("STDIO-04", "server-request")]


# --- _meta ---


def test_meta_04_fires_on_a_request_without_meta_or_capabilities() -> None:
    s = Script()
    s.call(1, "tools/list", result=OK, meta=False)
    s.client({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
              "params": {"_meta": {wire.META_PROTOCOL_VERSION: wire.MODERN_VERSION}}})
    assert [r for r, _ in s.rules()] == ["META-04", "META-04"]


def test_meta_04_silent_on_notifications_without_meta() -> None:
    s = Script()
    s.call(1, "tools/list", result=OK)
    s.client({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    assert s.rules() == []


# --- readings ---


def legacy() -> Script:
    """A client that fell back to the 2025-11-25 handshake: what follows carries no _meta."""
    s = Script()
    s.call(1, "server/discover", error={"code": -32601, "message": "Method not found"})
    s.call(2, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}, meta=False,
           result={"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}})
    s.client({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return s


def test_meta_04_silent_on_a_fallback_initialize_the_server_refused() -> None:
    s = Script()
    s.call(1, "server/discover", error={"code": -32602, "message": "Invalid params"})
    s.call(2, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}, meta=False,
           error={"code": -32601, "message": "Method not found"})
    s.call(3, "tools/list", result=OK)
    assert s.rules() == []


def test_rt_05_fires_when_a_legacy_result_is_read_as_an_error() -> None:
    s = legacy()
    s.call(3, "tools/list", result={"tools": []}, note="reply:legacy-server", meta=False)
    s.reading("tools/list", "error")
    s.exit()
    got = judge_client(s.t)
    assert [(v.rule, v.strength, v.probe) for v in got] == [("RT-05", "MUST", "legacy-server")]


def test_rt_05_silent_when_a_legacy_result_is_read_as_complete() -> None:
    s = legacy()
    s.call(3, "tools/list", result={"tools": []}, meta=False)  # and no META-04 in the legacy era
    s.reading("tools/list", "complete")
    assert s.rules() == []


def test_rt_05_silent_on_a_modern_result_without_resulttype_refused() -> None:
    """DIGEST RT-05 binds only results of earlier-revision servers; a 2026-07-28 server that omits
    resultType breaks RT-01, and a client may refuse the result (the TypeScript SDK does)."""
    s = Script()
    s.call(1, "tools/list", result={"tools": []}, note="reply:result-missing-resulttype")
    s.reading("tools/list", "invalid")
    assert s.rules() == []


def test_rt_04_fires_when_an_unknown_resulttype_is_read_as_complete() -> None:
    s = Script()
    s.call(1, "tools/call", TOOL, result={"resultType": "partial", "content": []})
    s.reading("tools/call", "complete")
    assert s.rules() == [("RT-04", "MUST")]


@pytest.mark.parametrize("outcome", ["invalid", "error"])
def test_rt_04_silent_when_an_unknown_resulttype_is_refused(outcome: str) -> None:
    s = Script()
    s.call(1, "tools/call", TOOL, result={"resultType": "partial", "content": []})
    s.reading("tools/call", outcome)
    assert s.rules() == []


# --- MRTR ---


def test_mrtr_09_fires_on_a_retry_under_the_same_id() -> None:
    assert ("MRTR-09", "MUST") in mrtr(retry_id=1, responses={"q": {"roots": []}}).rules()


def test_mrtr_10_fires_on_a_dropped_or_changed_state() -> None:
    assert mrtr(state=None, responses={"q": {"roots": []}}).rules() == [("MRTR-10", "MUST")]
    assert mrtr(state="s-2", responses={"q": {"roots": []}}).rules() == [("MRTR-10", "MUST")]


def test_mrtr_10_fires_on_a_state_never_given_and_is_silent_on_an_echoed_empty_one() -> None:
    given = {"resultType": "input_required", "inputRequests": {"q": {"method": "roots/list"}}}
    assert mrtr(state="x", responses={"q": {"roots": []}}, given=given).rules() == [("MRTR-10", "MUST")]
    empty = {"resultType": "input_required", "requestState": ""}
    assert mrtr(state="", given=empty).rules() == []


def test_mrtr_11_fires_when_an_input_request_is_left_unanswered() -> None:
    assert mrtr(responses={}).rules() == [("MRTR-11", "MUST")]


def test_mrtr_11_silent_on_an_undeclared_kind_and_on_state_only_results() -> None:
    s = Script()
    s.client({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
              "params": {**TOOL, "_meta": wire.request_meta({})}})
    s.server(2, {"jsonrpc": "2.0", "id": 1, "result": _IR})
    s.client({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {**TOOL, "requestState": "s-1", "_meta": wire.request_meta({})}})
    assert s.rules() == []
    assert mrtr(given={"resultType": "input_required", "requestState": "s-1"}).rules() == []


def test_mrtr_12_fires_when_a_state_travels_on_another_call() -> None:
    s = Script()
    s.call(1, "tools/call", TOOL, result=_IR)
    s.call(2, "prompts/get", {"name": "p", "requestState": "s-1"}, result=OK)
    assert ("MRTR-12", "MUST") in s.rules()


# --- versions, cancellation ---


def _refused(supported: Any) -> dict[str, Any]:
    data = {"supported": supported, "requested": wire.MODERN_VERSION} if supported is not None else None
    return {"code": -32022, "message": "unsupported", **({"data": data} if data else {})}


def test_ver_03_fires_on_a_retry_with_an_unlisted_version() -> None:
    s = Script()
    s.call(1, "server/discover", error=_refused(["2025-11-25"]))
    s.call(2, "server/discover", result=OK)
    assert s.rules() == [("VER-03", "SHOULD")]


def test_ver_03_silent_on_a_listed_version_and_on_giving_up() -> None:
    s = Script()
    s.call(1, "server/discover", error=_refused([wire.MODERN_VERSION]))
    s.call(2, "server/discover", result=OK)
    s.call(3, "tools/list", error=_refused(None))
    assert s.rules() == []


def test_ver_03_reads_only_the_very_next_request_as_the_retry() -> None:
    """A -32022 without data, surfaced; the job moves on and lists tools again later (the Python
    SDK does so inside call_tool): no retry, no VER-03. Retrying at once with the refused version
    is one."""
    s = Script()
    s.call(1, "tools/list", error=_refused(None))
    s.call(2, "tools/call", result=OK)
    s.call(3, "tools/list", result=OK)
    assert s.rules() == []
    s = Script()
    s.call(1, "tools/list", error=_refused(None))
    s.call(2, "tools/list", result=OK)
    assert s.rules() == [("VER-03", "SHOULD")]


def test_can_03_fires_on_cancelling_a_request_never_sent() -> None:
    s = Script()
    s.call(1, "tools/list", result=OK)
    s.client({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}})
    assert s.rules() == [("CAN-03", "MUST")]


# --- HTTP ---


def test_http_03_fires_without_both_media_types() -> None:
    s = Script("http")
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": wire.request_meta(CAPS)}}
    s.client(msg, headers={**wire.http_headers(msg), "Accept": "application/json"})
    assert s.rules() == [("HTTP-03", "MUST")]
    ok = Script("http")
    ok.client(msg)
    assert ok.rules() == []


def test_hdr_06_fires_on_a_raw_non_ascii_name_and_is_silent_on_the_sentinel() -> None:
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "héllo", "arguments": {}, "_meta": wire.request_meta(CAPS)}}
    bad = Script("http")
    bad.client(msg, headers={"Accept": "application/json, text/event-stream", "Mcp-Method": "tools/call",
                             "Mcp-Name": "héllo"})
    assert bad.rules() == [("HDR-06", "MUST")]
    good = Script("http")
    good.client(msg)
    assert good.rules() == []


# --- liveness ---


def test_liveness_fires_on_a_crash_or_a_hang_and_names_the_last_probe() -> None:
    s = Script()
    i = s.call(1, "tools/list")
    s.server(i, {"jsonrpc": "2.0", "id": None, "result": OK}, note="hostile:response-null-id")
    s.exit(1)
    got = judge_client(s.t)
    assert [(v.rule, v.strength, v.probe) for v in got] == [("CLIENT-LIVENESS", "HEURISTIC", "response-null-id")]
    hung = Script()
    hung.exit(None, timeout=True)
    assert hung.rules() == [("CLIENT-LIVENESS", "HEURISTIC")]

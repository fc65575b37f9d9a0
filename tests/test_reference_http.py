"""The reference server over Streamable HTTP, as real processes: statuses, header checks,
Origin/Host protection, SSE, listen streams, cross-process state, clean shutdown."""

from __future__ import annotations

import http.client
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reference_support import HttpServer, StdioServer, complete_mrtr_params, req

from mcp_tempest.targets import wire
from mcp_tempest.targets.reference.catalog import TOOLS

LIST_EVENTS_SCHEMA = next(t["inputSchema"] for t in TOOLS if t["name"] == "list_events")
STARTS = "2026-08-03T09:00:00Z"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("http") / "store.sqlite3"


@pytest.fixture(scope="module")
def server(db: Path) -> Iterator[HttpServer]:
    with HttpServer(db) as srv:
        yield srv
        assert srv.stop() == 0


def test_statuses_of_results_and_errors(server: HttpServer) -> None:
    ok = server.post(req(1, "server/discover"))
    assert ok.status == 200 and ok.headers["content-type"] == "application/json"
    assert ok.message["result"]["_meta"][wire.META_SERVER_INFO]["name"] == "mcp-tempest-reference"
    cases: list[tuple[dict[str, Any], int, int]] = [
        ({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}, 400, wire.INVALID_PARAMS),
        ({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
          "params": {"_meta": {wire.META_PROTOCOL_VERSION: "2026-07-28"}}}, 400, wire.INVALID_PARAMS),
        (req(4, "ping"), 404, wire.METHOD_NOT_FOUND),
        (req(5, "no/such/method"), 404, wire.METHOD_NOT_FOUND),
        (wire.build_request(6, "tools/list", version="v999.0.0"), 400, wire.UNSUPPORTED_PROTOCOL_VERSION),
        (req(7, "tools/call", {"name": "create_event", "arguments": {"title": "x"}}), 400,
         wire.MISSING_CLIENT_CAPABILITY),
        (req(8, "tools/call", {"name": "test_missing_capability", "arguments": {}}), 400,
         wire.MISSING_CLIENT_CAPABILITY),
        (req(9, "resources/read", {"uri": "test://nonexistent"}), 400, wire.INVALID_PARAMS),
    ]
    for msg, status, code in cases:
        resp = server.post(msg)
        assert (resp.status, resp.message["error"]["code"]) == (status, code), msg
        assert resp.message["id"] == msg["id"]
    unsupported = server.post(wire.build_request(10, "server/discover", version="v999.0.0"))
    assert unsupported.message["error"]["data"] == {"supported": ["2026-07-28"], "requested": "v999.0.0"}
    needs_sampling = server.post(req(11, "tools/call", {"name": "test_missing_capability", "arguments": {}}))
    assert needs_sampling.message["error"]["data"]["requiredCapabilities"] == {"sampling": {}}
    initialize = server.post(wire.legacy_initialize(12), headers={"MCP-Protocol-Version": "2025-11-25"})
    assert initialize.status == 404 and initialize.message["error"]["data"]["supported"] == ["2026-07-28"]


def test_framing_errors_are_400(server: HttpServer) -> None:
    for raw, code in [(b"{nope", wire.PARSE_ERROR), (b"", wire.PARSE_ERROR),
                      (wire.dumps([req(1, "server/discover")]), wire.INVALID_REQUEST),
                      (wire.dumps({**req(1, "server/discover"), "id": None}), wire.INVALID_REQUEST),
                      (wire.dumps({**req(1, "server/discover"), "id": 2.5}), wire.INVALID_REQUEST)]:
        resp = server.post(raw=raw, headers={"Content-Type": "application/json"})
        assert resp.status == 400 and resp.message["error"]["code"] == code and "id" not in resp.message


def test_headers_must_mirror_the_body(server: HttpServer) -> None:
    call = req(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert server.post(call).message["result"]["content"][0]["text"] == "hi"
    bad_headers = [
        {"MCP-Protocol-Version": None},
        {"MCP-Protocol-Version": "2025-11-25"},
        {"Mcp-Method": None},
        {"Mcp-Method": "tools/list"},
        {"Mcp-Name": None},
        {"Mcp-Name": "Echo"},
        {"Mcp-Name": "=?base64?ZWNobw?="},  # malformed sentinel (no padding)
        {"Mcp-Name": "=?base64?ZWNobyA=?="},  # decodes to "echo " (trailing space)
    ]
    for override in bad_headers:
        resp = server.post(call, headers=override)
        assert (resp.status, resp.message["error"]["code"]) == (400, wire.HEADER_MISMATCH), override
    sentinel = server.post(call, headers={"Mcp-Name": "=?base64?ZWNobw==?="})
    assert sentinel.status == 200, "a base64 sentinel must be decoded before comparing (HDR-06)"
    odd = req(2, "tools/call", {"name": " caf\u00e9\n", "arguments": {}})
    resp = server.post(odd)
    assert resp.headers and resp.message["error"]["code"] == wire.INVALID_PARAMS, "decoded name matched"
    mismatch_body = server.post(wire.build_request(3, "server/discover", version="v999.0.0"),
                                headers={"MCP-Protocol-Version": "2026-07-28"})
    assert mismatch_body.message["error"]["code"] == wire.HEADER_MISMATCH


def test_param_headers_compare_numerically(server: HttpServer) -> None:
    call = req(1, "tools/call", {"name": "list_events", "arguments": {"calendarId": "cal_chapter", "limit": 5}})
    ok = server.post(call, input_schema=LIST_EVENTS_SCHEMA)
    assert ok.status == 200 and ok.message["result"]["structuredContent"]["calendarId"] == "cal_chapter"
    assert server.post(call, input_schema=LIST_EVENTS_SCHEMA,
                       headers={"Mcp-Param-Limit": "5.0"}).status == 200, "42.0 equals 42 (HDR-07)"
    for override in ({"Mcp-Param-Limit": "6"}, {"Mcp-Param-Limit": None}, {"Mcp-Param-Calendar": "cal_other"},
                     {"Mcp-Param-Calendar": "=?base64?Y2FsX2NoYXB0ZXI=?="}):
        resp = server.post(call, input_schema=LIST_EVENTS_SCHEMA, headers=override)
        if override.get("Mcp-Param-Calendar", "").startswith("=?base64?"):
            assert resp.status == 200, "sentinel-encoded param header decodes to the body value"
            continue
        assert (resp.status, resp.message["error"]["code"]) == (400, wire.HEADER_MISMATCH), override
    no_limit = req(2, "tools/call", {"name": "list_events", "arguments": {"calendarId": "cal_chapter"}})
    stray = server.post(no_limit, input_schema=LIST_EVENTS_SCHEMA, headers={"Mcp-Param-Limit": "5"})
    assert stray.message["error"]["code"] == wire.HEADER_MISMATCH


def test_origin_host_and_http_methods(server: HttpServer) -> None:
    msg = req(1, "server/discover")
    assert server.post(msg, headers={"Origin": "http://evil.example.com"}).status == 403
    assert server.post(msg, headers={"Origin": "null"}).status == 403
    assert server.post(msg, headers={"Host": "evil.example.com", "Origin": "http://evil.example.com"}).status == 403
    assert server.post(msg, headers={"Host": "evil.example.com"}).status == 403
    assert server.post(msg, headers={"Origin": f"http://localhost:{server.port}"}).status == 200
    assert server.post(msg, headers={"Origin": "http://127.0.0.1", "Host": f"localhost:{server.port}"}).status == 200
    for verb in ("GET", "DELETE", "PUT"):
        resp = server.post(None, method=verb, validate=False)
        assert resp.status == 405 and resp.headers["allow"] == "POST", verb
    assert server.post(msg, path="/other").status == 404


def test_notifications_get_202_and_no_session_is_minted(server: HttpServer) -> None:
    accepted = server.post(wire.build_notification("notifications/cancelled", {"requestId": 1}))
    assert accepted.status == 202 and accepted.body == b""
    unknown = server.post(wire.build_notification("notifications/whatever"))
    assert unknown.status == 202 and unknown.body == b""
    rejected = server.post(raw=b'{"jsonrpc":"1.0","method":"notifications/x"}')
    assert rejected.status == 400 and "id" not in rejected.message
    echoed = server.post(req(1, "server/discover"), headers={"Mcp-Session-Id": "abc"})
    for resp in (accepted, unknown, rejected, echoed):
        assert "mcp-session-id" not in resp.headers, "SL-10"


def test_logs_travel_as_sse_before_the_result(server: HttpServer) -> None:
    resp = server.post(req(1, "tools/call", {"name": "test_logging_tool", "arguments": {}}, log_level="info"))
    assert resp.headers["content-type"] == "text/event-stream" and resp.headers["x-accel-buffering"] == "no"
    kinds = [m.get("method", "result") for m in resp.messages]
    assert kinds == ["notifications/message"] * 4 + ["result"]
    quiet = server.post(req(2, "tools/call", {"name": "test_logging_tool", "arguments": {}}))
    assert quiet.headers["content-type"] == "application/json"


def test_mrtr_across_http_instances_and_stdio(db: Path, server: HttpServer) -> None:
    first = req(1, "tools/call", {"name": "create_event", "arguments": {"title": "Across"}},
                caps={"elicitation": {}})
    asked = server.post(first).message["result"]
    assert asked["resultType"] == "input_required"
    with HttpServer(db) as other:
        done = other.post(req(2, "tools/call", complete_mrtr_params(first, asked, STARTS)))
        event = done.message["result"]["structuredContent"]
        assert event["title"] == "Across"
        tampered = complete_mrtr_params(first, asked, STARTS)
        tampered["requestState"] = asked["requestState"][:-2] + ("AA" if asked["requestState"][-2:] != "AA" else "BB")
        refused = other.post(req(3, "tools/call", tampered))
        assert refused.message["error"]["code"] == wire.INVALID_PARAMS
        assert other.stop() == 0
    with StdioServer(db) as fresh:
        listed, _ = fresh.call(req(4, "tools/call", {"name": "list_events",
                                                     "arguments": {"calendarId": "cal_chapter", "limit": 100}}))
        assert event["eventId"] in [e["eventId"] for e in listed["result"]["structuredContent"]["events"]]


def _open_listen(server: HttpServer, rid: Any, uris: list[str]) -> tuple[http.client.HTTPConnection,
                                                                          http.client.HTTPResponse]:
    msg = req(rid, "subscriptions/listen", {"notifications": {"resourceSubscriptions": uris}})
    conn = http.client.HTTPConnection(server.host, server.port, timeout=5)
    conn.request("POST", "/mcp", body=wire.dumps(msg), headers=wire.http_headers(msg))
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("content-type") == "text/event-stream"
    return conn, resp


def _next_messages(resp: http.client.HTTPResponse, parser: wire.SseParser, want: int) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + 5
    while len(got) < want and time.monotonic() < deadline:
        chunk = resp.read1(65536)
        if not chunk:
            break
        got += [wire.loads(e.data) for e in parser.feed(chunk)]
    return got


def test_listen_stream_ack_update_disconnect_and_shutdown(db: Path) -> None:
    with HttpServer(db) as srv, StdioServer(db) as writer:
        conn, resp = _open_listen(srv, "sub-1", ["calendar://week"])
        parser = wire.SseParser()
        ack = _next_messages(resp, parser, 1)[0]
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["_meta"][wire.META_SUBSCRIPTION_ID] == "sub-1"
        writer.call(req(1, "tools/call", {"name": "create_event", "arguments": {"title": "w", "startsAt": STARTS}}))
        update = _next_messages(resp, parser, 1)[0]
        assert update["method"] == "notifications/resources/updated"
        assert update["params"] == {"uri": "calendar://week", "_meta": {wire.META_SUBSCRIPTION_ID: "sub-1"}}
        conn.close()  # closing the stream is the cancellation (HTTP-11)
        assert srv.post(req(2, "server/discover")).status == 200
        conn2, resp2 = _open_listen(srv, 42, [])
        parser2 = wire.SseParser()
        assert _next_messages(resp2, parser2, 1)[0]["params"]["notifications"] == {}
        srv.proc.send_signal(signal.SIGTERM)
        final = _next_messages(resp2, parser2, 1)
        assert final and final[0]["id"] == 42 and final[0]["result"]["_meta"][wire.META_SUBSCRIPTION_ID] == 42
        assert srv.proc.wait(5) == 0
        conn2.close()


def test_garbage_http_gets_400_and_the_server_lives_on(server: HttpServer) -> None:
    with socket.create_connection((server.host, server.port), timeout=5) as sock:
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 400")
    assert server.post(req(1, "server/discover")).status == 200


def _recv_all(sock: socket.socket, seconds: float) -> bytes:
    """What the server sends until it closes the connection or `seconds` pass."""
    sock.settimeout(0.2)
    data = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data


def test_a_huge_header_is_refused_with_431_and_does_not_stall_other_clients(server: HttpServer) -> None:
    with socket.create_connection((server.host, server.port), timeout=5) as hog:
        hog.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
        sent = 0
        refused = False
        block = b"a" * 65536
        start = time.monotonic()
        while sent < 128 * 2**20 and time.monotonic() - start < 20:
            try:
                hog.sendall(block)
            except OSError:  # the server closed the connection after its 431
                refused = True
                break
            sent += len(block)
            if sent % (4 * 2**20) == 0:  # meanwhile another client is served at once
                began = time.monotonic()
                reply = server.post(req(sent, "server/discover"), fresh=True)
                assert reply.status == 200 and time.monotonic() - began < 5
        answer = _recv_all(hog, 2.0)
    assert refused or answer.startswith(b"HTTP/1.1 431"), answer[:100]
    assert sent < 16 * 2**20, f"{sent} bytes of header were accepted"


def test_headers_sent_too_slowly_get_the_connection_closed(db: Path) -> None:
    with HttpServer(db, extra=("--header-timeout", "1")) as srv:
        with socket.create_connection((srv.host, srv.port), timeout=5) as slow:
            start = time.monotonic()
            slow.sendall(b"POST /mcp HTTP/1.1\r\n")
            answer = b""
            for byte in b"Host: 127.0.0.1\r\nX-Slow: " + b"a" * 100:
                try:
                    slow.sendall(bytes([byte]))
                except OSError:
                    break
                time.sleep(0.1)
                if time.monotonic() - start > 3:
                    break
            answer = _recv_all(slow, 3.0)
            assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
            assert time.monotonic() - start < 8
        # a request that is merely large but arrives at once is still served
        big = srv.post(req(1, "server/discover"), headers={"X-Padding": "p" * 30000}, fresh=True)
        assert big.status == 200
        assert srv.stop() == 0

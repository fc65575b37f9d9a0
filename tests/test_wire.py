"""The wire codec: what the harness sends must be exactly what the spec describes."""

from __future__ import annotations

import base64

import pytest

from mcp_tempest.targets import wire
from mcp_tempest.targets.transcript import Transcript


def test_request_restates_version_and_capabilities() -> None:
    msg = wire.build_request(7, "tools/list", capabilities={"elicitation": {}})
    meta = msg["params"]["_meta"]
    assert msg["jsonrpc"] == "2.0" and msg["id"] == 7
    assert meta[wire.META_PROTOCOL_VERSION] == "2026-07-28"
    assert meta[wire.META_CLIENT_CAPABILITIES] == {"elicitation": {}}
    assert meta[wire.META_CLIENT_INFO]["name"] == "mcp-tempest"


def test_explicit_meta_in_params_wins() -> None:
    msg = wire.build_request(1, "server/discover", {"_meta": {wire.META_PROTOCOL_VERSION: "1900-01-01"}})
    assert msg["params"]["_meta"][wire.META_PROTOCOL_VERSION] == "1900-01-01"
    assert wire.META_CLIENT_CAPABILITIES in msg["params"]["_meta"]


def test_encoded_line_never_contains_a_raw_newline() -> None:
    line = wire.encode_line(wire.build_request(1, "tools/call", {"name": "a\nb\r\u2028"}))
    assert line.endswith(b"\n") and line.count(b"\n") == 1 and b"\r" not in line
    assert wire.parse_line(line)["params"]["name"] == "a\nb\r\u2028"


def test_parse_line_rejects_garbage_with_a_reason() -> None:
    with pytest.raises(wire.DecodeError) as info:
        wire.parse_line(b"{not json\n")
    assert "not JSON" in info.value.reason


@pytest.mark.parametrize(
    ("value", "plain"),
    [("get_weather", True), ("calendar://week", True), (" lead", False), ("trail ", False),
     ("caf\u00e9", False), ("a\tb", False), ("", False), ("=?base64?Zm9v?=", False)],
)
def test_base64_sentinel_round_trips(value: str, plain: bool) -> None:
    encoded = wire.encode_header_value(value)
    assert (encoded == value) is plain
    assert wire.decode_header_value(encoded) == value


def test_sentinel_uses_exact_lowercase_markers() -> None:
    encoded = wire.encode_header_value("\u65e5\u672c")
    assert encoded.startswith("=?base64?") and encoded.endswith("?=")
    assert base64.b64decode(encoded[9:-2]).decode() == "\u65e5\u672c"


def test_malformed_sentinel_is_refused() -> None:
    with pytest.raises(ValueError):
        wire.decode_header_value("=?base64?***?=")


def test_headers_mirror_the_body() -> None:
    msg = wire.build_request(3, "tools/call", {"name": "create_event", "arguments": {"region": "eu", "n": 4}})
    schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"},
                                               "n": {"type": "integer", "x-mcp-header": "N"}}}
    headers = wire.http_headers(msg, input_schema=schema)
    assert headers["MCP-Protocol-Version"] == "2026-07-28"
    assert headers["Mcp-Method"] == "tools/call"
    assert headers["Mcp-Name"] == "create_event"
    assert headers["Mcp-Param-Region"] == "eu" and headers["Mcp-Param-N"] == "4"
    assert "text/event-stream" in headers["Accept"] and "application/json" in headers["Accept"]


def test_notifications_carry_no_method_header() -> None:
    headers = wire.http_headers(wire.build_notification("notifications/cancelled", {"requestId": 1}))
    assert "Mcp-Method" not in headers


def test_sse_parser_is_incremental_and_handles_all_line_ends() -> None:
    parser = wire.SseParser()
    stream = b": keep-alive\r\nevent: message\r\ndata: {\"a\":1}\r\n\r\ndata: {\"b\"\rdata: :2}\n\n"
    events = []
    for i in range(len(stream)):
        events += parser.feed(stream[i : i + 1])
    events += parser.close()
    assert [e.data for e in events] == ['{"a":1}', '{"b"\n:2}']


def test_response_messages_reads_json_and_sse() -> None:
    msg = {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}}
    assert wire.response_messages("application/json", wire.dumps(msg)) == [msg]
    assert wire.response_messages("text/event-stream; charset=utf-8", wire.encode_sse(msg)) == [msg]
    assert wire.response_messages("application/json", b"") == []


def test_error_without_readable_id_omits_it() -> None:
    assert "id" not in wire.build_error(None, wire.PARSE_ERROR, "Parse error")


def test_transcript_round_trips_raw_bytes_and_pairs_by_id() -> None:
    t = Transcript(target="stdio:x", transport="stdio")
    i = t.add("send", message={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, raw=b"\xff\xfe")
    t.add("recv", message={"jsonrpc": "2.0", "id": "1", "result": {}})
    t.add("recv", message={"jsonrpc": "2.0", "id": 1, "result": {}})
    back = Transcript.from_json(t.to_json())
    assert back.events[0].raw == b"\xff\xfe"
    assert [e.message["id"] for e in back.responses_to(i)] == [1]

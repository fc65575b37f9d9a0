"""The reference server's pure core, driven in-process: the API the fuzzer and load code reuse.

`build_core(db, bugs=...)` then `core.handle_message(frame_bytes, http=HttpInfo(headers) | None)`
returns a `Reply` (body bytes or None, HTTP status, notifications to send first, an opened listen).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcp_tempest.targets import wire
from mcp_tempest.targets.reference.core import Core, HttpInfo, build_core
from mcp_tempest.targets.reference.request_state import StateError, StateSealer


@pytest.fixture
def core(tmp_path: Path) -> Core:
    return build_core(tmp_path / "core.sqlite3")


def _call(core: Core, msg: Any, http: HttpInfo | None = None) -> tuple[int, Any]:
    reply = core.handle_message(orjson.dumps(msg), http)
    return reply.status, (orjson.loads(reply.body) if reply.body is not None else None)


def test_reply_carries_status_body_and_notes(core: Core) -> None:
    msg = wire.build_request(1, "tools/call", {"name": "test_logging_tool", "arguments": {}}, log_level="error")
    reply = core.handle_message(orjson.dumps(msg))
    assert reply.status == 200 and reply.listen is None
    assert [orjson.loads(n)["params"]["level"] for n in reply.notes or []] == ["error"]
    assert orjson.loads(reply.body or b"")["result"]["content"][0]["text"] == "logged"
    note = core.handle_message(orjson.dumps(wire.build_notification("notifications/x")), HttpInfo({}))
    assert (note.status, note.body) == (202, None)
    status, body = _call(core, wire.build_request(2, "nope"), HttpInfo(wire.http_headers(wire.build_request(2, "nope"))))
    assert (status, body["error"]["code"]) == (404, wire.METHOD_NOT_FOUND)


def test_http_headers_are_checked_only_when_http_info_is_given(core: Core) -> None:
    msg = wire.build_request(1, "server/discover")
    assert "result" in _call(core, msg)[1]
    status, body = _call(core, msg, HttpInfo({}))
    assert (status, body["error"]["code"]) == (400, wire.HEADER_MISMATCH)
    headers = {k.lower(): v for k, v in wire.http_headers(msg).items()}
    assert _call(core, msg, HttpInfo(headers))[0] == 200


def test_listen_reply_opens_a_stream(core: Core) -> None:
    reply = core.handle_message(orjson.dumps(wire.build_request(
        "s", "subscriptions/listen", {"notifications": {"resourceSubscriptions": ["calendar://week"]}})))
    assert reply.body is None and reply.listen is not None and reply.listen.request_id == "s"
    assert orjson.loads((reply.notes or [b""])[0])["method"] == "notifications/subscriptions/acknowledged"


def test_sealed_state_binds_method_name_arguments_and_expiry() -> None:
    sealer = StateSealer(b"k" * 32, ttl_s=60)
    token = sealer.seal("tools/call", "create_event", {"title": "a", "x": [1, {"b": 2, "a": 1}]}, now_ms=1000)
    claims = sealer.open(token, "tools/call", "create_event", {"x": [1, {"a": 1, "b": 2}], "title": "a"}, now_ms=2000)
    assert claims.name == "create_event" and claims.expires_ms == 61_000
    bad = [
        (token, "tools/call", "create_event", {"title": "b"}, 2000),  # other arguments
        (token, "prompts/get", "create_event", {"title": "a", "x": [1, {"b": 2, "a": 1}]}, 2000),
        (token, "tools/call", "echo", {"title": "a", "x": [1, {"b": 2, "a": 1}]}, 2000),
        (token, "tools/call", "create_event", {"title": "a", "x": [1, {"b": 2, "a": 1}]}, 61_001),  # expired
        (StateSealer(b"j" * 32).seal("tools/call", "create_event", {}), "tools/call", "create_event", {}, None),
        (token + "A", "tools/call", "create_event", {"title": "a", "x": [1, {"b": 2, "a": 1}]}, 2000),
    ]
    for tok, method, name, args, now in bad:
        with pytest.raises(StateError):
            sealer.open(tok, method, name, args, now_ms=now)


def test_deep_or_odd_input_never_escapes_as_an_exception(core: Core) -> None:
    deep = b"[" * 300 + b'"x"' + b"]" * 300  # parses, but is too deep for orjson to serialise again
    meta = orjson.dumps(wire.request_meta({"elicitation": {}}))
    odd = (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_event",'
           b'"arguments":{"title":"t","deep":' + deep + b'},"_meta":' + meta + b"}}")
    reply = core.handle_message(odd)
    assert (reply.status, orjson.loads(reply.body or b"")["error"]["code"]) == (400, wire.INVALID_PARAMS)
    cursor = b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":' + deep + b',"_meta":' + meta + b"}}"
    body = orjson.loads(core.handle_message(cursor).body or b"")
    assert body["error"]["code"] == wire.INVALID_PARAMS and "data" not in body["error"]


def test_mutated_frames_always_get_a_well_formed_answer_or_none(core: Core) -> None:
    """A fixed-seed smoke test: random byte and value mutations of valid frames (not the fuzzer)."""
    rng = random.Random(1234)
    seeds = [wire.dumps(wire.build_request(i, m, p, capabilities={"elicitation": {}})) for i, (m, p) in enumerate([
        ("server/discover", {}), ("tools/list", {}), ("tools/call", {"name": "create_event", "arguments": {"title": "z"}}),
        ("resources/read", {"uri": "calendar://week"}), ("prompts/get", {"name": "prepare_week",
                                                                      "arguments": {"focus": "demos"}}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "prepare_week"},
                                 "argument": {"name": "focus", "value": "d"}}),
    ])]
    junk = [b"", b"null", b"{", b"\xff", b'"', b"[]", b"{}", b"0", b"1e999", b'{"id":[]}']
    for _ in range(1500):
        frame = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(len(frame))
            action = rng.random()
            if action < 0.4:
                frame[pos] = rng.randrange(256)
            elif action < 0.7:
                del frame[pos: pos + rng.randint(1, 8)]
            else:
                frame[pos:pos] = rng.choice(junk)
        for http in (None, HttpInfo({})):
            reply = core.handle_message(bytes(frame), http)
            if reply.body is not None:
                msg = orjson.loads(reply.body)
                assert msg["jsonrpc"] == "2.0" and ("result" in msg) != ("error" in msg)
                if "error" in msg:
                    assert msg["error"]["code"] != wire.INTERNAL_ERROR, (bytes(frame), msg)

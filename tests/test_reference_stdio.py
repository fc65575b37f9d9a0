"""The reference server over stdio, as real processes: protocol answers, MRTR across processes,
requestState refusal, shared store, listen streams, clean shutdown."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from reference_support import SERVE, StdioServer, complete_mrtr_params, req

from mcp_tempest.targets import wire
from mcp_tempest.targets.mutants import MUTANTS
from mcp_tempest.targets.reference.request_state import StateSealer

ELICIT = {"elicitation": {}}
STARTS = "2026-08-03T09:00:00Z"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "store.sqlite3"


def _begin(server: StdioServer, rid: Any, title: str, **extra: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    first = req(rid, "tools/call", {"name": "create_event", "arguments": {"title": title, **extra}}, caps=ELICIT)
    resp, _ = server.call(first)
    return first, resp["result"]


def test_discover_names_itself_in_meta_and_gives_cache_hints(db: Path) -> None:
    with StdioServer(db) as server:
        resp, notes = server.call(req(1, "server/discover"))
        result = resp["result"]
        assert notes == []
        assert result["supportedVersions"] == ["2026-07-28"]
        assert result["_meta"][wire.META_SERVER_INFO]["name"] == "mcp-tempest-reference"
        assert "serverInfo" not in result
        assert result["ttlMs"] >= 0 and result["cacheScope"] in ("public", "private")
        assert set(result["capabilities"]) >= {"tools", "resources", "prompts", "completions", "logging"}
        assert server.close() == 0


def test_tools_list_pages_with_an_opaque_cursor(db: Path) -> None:
    with StdioServer(db) as server:
        first, _ = server.call(req(1, "tools/list"))
        page1 = first["result"]
        assert [t["name"] for t in page1["tools"]] == ["echo", "open_calendar", "create_event", "list_events"]
        second, _ = server.call(req(2, "tools/list", {"cursor": page1["nextCursor"]}))
        names = [t["name"] for t in second["result"]["tools"]]
        assert "test_missing_capability" in names and "nextCursor" not in second["result"]
        again, _ = server.call(req(3, "tools/list"))
        assert again["result"] == page1, "tools/list must not vary with history (TOOL-02)"
        for bad in ["", "tools:4", page1["nextCursor"] + "x", 7]:
            resp, _ = server.call(req(4, "tools/list", {"cursor": bad}))
            assert resp["error"]["code"] == wire.INVALID_PARAMS, bad


def test_mrtr_started_in_one_process_completes_in_a_fresh_one(db: Path) -> None:
    with StdioServer(db) as a:
        first, result = _begin(a, 1, "Chapter sync")
        assert a.close() == 0
    assert result["resultType"] == "input_required"
    ask = result["inputRequests"]["startsAt"]
    assert ask["method"] == "elicitation/create"
    assert ask["params"]["requestedSchema"]["properties"]["startsAt"]["format"] == "date-time"
    with StdioServer(db) as b:
        done, _ = b.call(req(2, "tools/call", complete_mrtr_params(first, result, STARTS)))
        event = done["result"]["structuredContent"]
        assert done["result"]["resultType"] == "complete" and not done["result"].get("isError")
        assert event["title"] == "Chapter sync" and event["startsAt"] == STARTS
        replay, _ = b.call(req(3, "tools/call", complete_mrtr_params(first, result, STARTS)))
        assert replay["error"]["code"] == wire.INVALID_PARAMS and "already used" in replay["error"]["message"]
    with StdioServer(db) as c:
        listed, _ = c.call(req(4, "tools/call", {"name": "list_events",
                                                 "arguments": {"calendarId": event["calendarId"]}}))
        assert event["eventId"] in [e["eventId"] for e in listed["result"]["structuredContent"]["events"]]
        week, _ = c.call(req(5, "resources/read", {"uri": "calendar://week"}))
        assert f"{STARTS} Chapter sync" in week["result"]["contents"][0]["text"]


def test_event_created_by_one_process_is_seen_by_another(db: Path) -> None:
    with StdioServer(db) as b:
        opened, _ = b.call(req(1, "tools/call", {"name": "open_calendar", "arguments": {"name": "board"}}))
        cal = opened["result"]["structuredContent"]["calendarId"]
        made, _ = b.call(req(2, "tools/call", {"name": "create_event", "arguments": {
            "title": "Board meeting", "startsAt": "2026-09-01T10:00:00+02:00", "calendarId": cal}}))
        assert made["result"]["structuredContent"]["calendarId"] == cal
    with StdioServer(db) as c:
        reopened, _ = c.call(req(3, "tools/call", {"name": "open_calendar", "arguments": {"name": "board"}}))
        assert reopened["result"]["structuredContent"]["calendarId"] == cal
        read, _ = c.call(req(4, "resources/read", {"uri": f"calendar://calendars/{cal}"}))
        assert "Board meeting" in read["result"]["contents"][0]["text"]


def _tamper(token: str) -> str:
    head, payload, mac = token.split(".")
    flipped = payload[:10] + ("A" if payload[10] != "A" else "B") + payload[11:]
    return ".".join([head, flipped, mac])


def test_bad_request_state_is_refused(db: Path) -> None:
    with StdioServer(db) as server:
        first, result = _begin(server, 1, "Review")
        token = result["requestState"]
        key = sqlite3.connect(db).execute("SELECT value FROM settings WHERE key='state_key'").fetchone()[0]
        expired = StateSealer(bytes(key), ttl_s=-1).seal("tools/call", "create_event", first["params"]["arguments"])
        _, other = _begin(server, 2, "Something else")
        forged_payload = token.split(".")[1]
        cases = {
            "tampered": _tamper(token),
            "truncated": token[:-6],
            "forged": f"rs1.{forged_payload}.{'A' * 43}",
            "expired": expired,
            "foreign": other["requestState"],
            "not a string": 12,
        }
        for n, (label, bad) in enumerate(cases.items(), start=10):
            params = complete_mrtr_params(first, result, STARTS)
            params["requestState"] = bad
            resp, _ = server.call(req(n, "tools/call", params))
            assert "error" in resp, label
            assert resp["error"]["code"] == wire.INVALID_PARAMS, label
        foreign_tool = dict(first["params"], name="echo", arguments={"text": "hi"}, requestState=token)
        resp, _ = server.call(req(30, "tools/call", foreign_tool))
        assert resp["error"]["code"] == wire.INVALID_PARAMS
        ok, _ = server.call(req(31, "tools/call", complete_mrtr_params(first, result, STARTS)))
        assert ok["result"]["structuredContent"]["title"] == "Review"


def test_elicitation_needs_the_declared_capability(db: Path) -> None:
    with StdioServer(db) as server:
        plain, _ = server.call(req(1, "tools/call", {"name": "create_event", "arguments": {"title": "x"}}))
        assert plain["error"]["code"] == wire.MISSING_CLIENT_CAPABILITY
        assert plain["error"]["data"]["requiredCapabilities"] == {"elicitation": {}}
        url_only, _ = server.call(req(2, "tools/call", {"name": "create_event", "arguments": {"title": "x"}},
                                      caps={"elicitation": {"url": {}}}))
        assert url_only["error"]["data"]["requiredCapabilities"] == {"elicitation": {"form": {}}}
        direct, _ = server.call(req(3, "tools/call", {"name": "create_event",
                                                      "arguments": {"title": "x", "startsAt": STARTS}}))
        assert direct["result"]["resultType"] == "complete"
        # META-02: a capability declared earlier is not remembered.
        server.call(req(4, "tools/call", {"name": "create_event", "arguments": {"title": "y"}}, caps=ELICIT))
        again, _ = server.call(req(5, "tools/call", {"name": "create_event", "arguments": {"title": "y"}}))
        assert again["error"]["code"] == wire.MISSING_CLIENT_CAPABILITY


def test_declined_elicitation_creates_nothing_and_missing_answer_asks_again(db: Path) -> None:
    with StdioServer(db) as server:
        first, result = _begin(server, 1, "Declined")
        params = complete_mrtr_params(first, result, STARTS)
        params["inputResponses"] = {"startsAt": {"action": "decline"}}
        declined, _ = server.call(req(2, "tools/call", params))
        assert declined["result"]["isError"] is True
        params["inputResponses"] = {"unrelated": {"action": "accept", "content": {}}}
        asked, _ = server.call(req(3, "tools/call", params))
        assert asked["result"]["resultType"] == "input_required"
        params["inputResponses"] = {"startsAt": {"action": "accept", "content": {"startsAt": "tomorrow"}}}
        bad_date, _ = server.call(req(4, "tools/call", params))
        assert bad_date["result"]["isError"] is True
        params["inputResponses"] = {"startsAt": "yes"}
        malformed, _ = server.call(req(5, "tools/call", params))
        assert malformed["error"]["code"] == wire.INVALID_PARAMS
        week, _ = server.call(req(6, "resources/read", {"uri": "calendar://week"}))
        assert "Declined" not in week["result"]["contents"][0]["text"]


ERROR_CASES: list[tuple[bytes, int, Any]] = [
    (b"{not json", wire.PARSE_ERROR, "absent"),
    (b"\xff\xfe{}", wire.PARSE_ERROR, "absent"),
    (b"[]", wire.INVALID_REQUEST, "absent"),
    (wire.dumps([req(1, "server/discover")]), wire.INVALID_REQUEST, "absent"),
    (b"42", wire.INVALID_REQUEST, "absent"),
    (wire.dumps({**req(1, "server/discover"), "id": None}), wire.INVALID_REQUEST, "absent"),
    (wire.dumps({**req(1, "server/discover"), "id": 1.5}), wire.INVALID_REQUEST, "absent"),
    (wire.dumps({**req(1, "server/discover"), "id": True}), wire.INVALID_REQUEST, "absent"),
    (wire.dumps({**req(7, "server/discover"), "jsonrpc": "1.0"}), wire.INVALID_REQUEST, 7),
    (wire.dumps({"jsonrpc": "2.0", "id": 8, "result": {}}), wire.INVALID_REQUEST, 8),
    (wire.dumps({"jsonrpc": "2.0", "id": 9, "method": 5}), wire.INVALID_REQUEST, 9),
    (wire.dumps(req(10, "ping")), wire.METHOD_NOT_FOUND, 10),
    (wire.dumps(req(11, "logging/setLevel", {"level": "info"})), wire.METHOD_NOT_FOUND, 11),
    (wire.dumps(req(12, "resources/subscribe", {"uri": "calendar://week"})), wire.METHOD_NOT_FOUND, 12),
    (wire.dumps(wire.legacy_initialize(13)), wire.METHOD_NOT_FOUND, 13),
    (wire.dumps({"jsonrpc": "2.0", "id": 14, "method": "tools/list"}), wire.INVALID_PARAMS, 14),
    (wire.dumps({"jsonrpc": "2.0", "id": "s", "method": "tools/list", "params": {"_meta": {
        wire.META_CLIENT_CAPABILITIES: {}}}}), wire.INVALID_PARAMS, "s"),
    (wire.dumps({"jsonrpc": "2.0", "id": 16, "method": "tools/list", "params": {"_meta": {
        wire.META_PROTOCOL_VERSION: "2026-07-28"}}}), wire.INVALID_PARAMS, 16),
    (wire.dumps(wire.build_request(17, "tools/list", version="1900-01-01")), wire.UNSUPPORTED_PROTOCOL_VERSION, 17),
    (wire.dumps(req(18, "tools/list", log_level="loud")), wire.INVALID_PARAMS, 18),
    (wire.dumps(req(19, "tools/call", {"name": "no_such_tool"})), wire.INVALID_PARAMS, 19),
    (wire.dumps(req(20, "tools/call", {"name": "echo", "arguments": [1]})), wire.INVALID_PARAMS, 20),
    (wire.dumps(req(21, "prompts/get", {"name": "nope"})), wire.INVALID_PARAMS, 21),
    (wire.dumps(req(22, "prompts/get", {"name": "prepare_week", "arguments": {}})), wire.INVALID_PARAMS, 22),
    (wire.dumps(req(23, "resources/read", {"uri": "calendar://nope"})), wire.INVALID_PARAMS, 23),
    (wire.dumps(req(24, "subscriptions/listen", {})), wire.INVALID_PARAMS, 24),
    (wire.dumps(req(25, "completion/complete", {"ref": {"type": "ref/prompt", "name": "x"},
                                                "argument": {"name": "a", "value": ""}})), wire.INVALID_PARAMS, 25),
    (wire.dumps(req(26, "resources/list", {"cursor": "x"})), wire.INVALID_PARAMS, 26),
]


def test_every_error_code_and_id_rule(db: Path) -> None:
    with StdioServer(db) as server:
        for raw, code, rid in ERROR_CASES:
            server.send_raw(raw + b"\n")
            resp = server.recv()
            assert resp["error"]["code"] == code, (raw, resp)
            if rid == "absent":
                assert "id" not in resp, "an unreadable id is omitted (RPC-07)"
            else:
                assert resp["id"] == rid and type(resp["id"]) is type(rid)
        unsupported = orjson.loads(wire.dumps(wire.build_request(1, "server/discover", version="1900-01-01")))
        resp, _ = server.call(unsupported)
        assert resp["error"]["data"] == {"supported": ["2026-07-28"], "requested": "1900-01-01"}
        missing, _ = server.call(req(2, "resources/read", {"uri": "test://nowhere"}))
        assert missing["error"]["data"] == {"uri": "test://nowhere"}
        assert server.close() == 0


def test_notifications_get_no_reply_and_blank_lines_are_ignored(db: Path) -> None:
    with StdioServer(db) as server:
        server.send(wire.build_notification("notifications/cancelled", {"requestId": 99}))
        server.send(wire.build_notification("notifications/unknown"))
        server.send_raw(b'{"jsonrpc":"1.0","method":"notifications/x"}\n{"method":"x"}\n\n   \n')
        server.send_raw(orjson.dumps(req("after", "server/discover")) + b"\r\n")
        resp = server.recv()
        assert resp["id"] == "after" and "result" in resp, "notifications got a reply (RPC-10)"
        assert server.quiet(0.2)


def test_logging_only_when_asked_and_only_at_or_above_the_level(db: Path) -> None:
    with StdioServer(db) as server:
        _, silent = server.call(req(1, "tools/call", {"name": "test_logging_tool", "arguments": {}}))
        assert silent == []
        _, loud = server.call(req(2, "tools/call", {"name": "test_logging_tool", "arguments": {}},
                                  log_level="warning"))
        assert [n["params"]["level"] for n in loud] == ["warning", "error"]
        assert all(n["method"] == "notifications/message" for n in loud)


def test_listen_ack_updates_cancel_and_close_result(db: Path) -> None:
    with StdioServer(db) as server, StdioServer(db) as other:
        server.send(req("L1", "subscriptions/listen",
                        {"notifications": {"resourceSubscriptions": ["calendar://week", "calendar://nope"],
                                           "toolsListChanged": True}}))
        ack = server.recv()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["_meta"][wire.META_SUBSCRIPTION_ID] == "L1"
        assert ack["params"]["notifications"] == {"resourceSubscriptions": ["calendar://week"]}
        server.send(req(7, "subscriptions/listen", {"notifications": {"resourceSubscriptions": ["calendar://week"]}}))
        ack7 = server.recv()
        assert ack7["params"]["_meta"][wire.META_SUBSCRIPTION_ID] == 7
        other.call(req(1, "tools/call", {"name": "create_event", "arguments": {"title": "t", "startsAt": STARTS}}))
        got = {server.recv(2.0)["params"]["_meta"][wire.META_SUBSCRIPTION_ID] for _ in range(2)}
        assert got == {"L1", 7}, "an event made by another process reaches this process's listeners"
        server.send(wire.build_notification("notifications/cancelled", {"requestId": "L1"}))
        resp, _ = server.call(req(8, "server/discover"))
        assert "result" in resp
        other.call(req(2, "tools/call", {"name": "create_event", "arguments": {"title": "u", "startsAt": STARTS}}))
        upd = server.recv(2.0)
        assert upd["params"]["_meta"][wire.META_SUBSCRIPTION_ID] == 7
        assert server.quiet(0.4), "a cancelled listen must get nothing more (STDIO-09)"
        server.proc.stdin.close()  # type: ignore[union-attr]
        closing = server.recv()
        assert closing == {"jsonrpc": "2.0", "id": 7, "result": {"resultType": "complete", "_meta": {
            wire.META_SUBSCRIPTION_ID: 7, wire.META_SERVER_INFO: closing["result"]["_meta"][wire.META_SERVER_INFO]}}}
        assert server.proc.wait(5) == 0


def test_prompt_completion_and_templates(db: Path) -> None:
    with StdioServer(db) as server:
        prompts, _ = server.call(req(1, "prompts/list"))
        assert prompts["result"]["prompts"][0]["arguments"][0] == {
            "name": "focus", "description": "What the week should favour", "required": True}
        got, _ = server.call(req(2, "prompts/get", {"name": "prepare_week", "arguments": {"focus": "hiring"}}))
        assert "hiring" in got["result"]["messages"][0]["content"]["text"]
        done, _ = server.call(req(3, "completion/complete", {"ref": {"type": "ref/prompt", "name": "prepare_week"},
                                                             "argument": {"name": "focus", "value": "re"}}))
        assert done["result"]["completion"]["values"] == ["reviews"]
        templates, _ = server.call(req(4, "resources/templates/list"))
        assert templates["result"]["resourceTemplates"][0]["uriTemplate"] == "calendar://calendars/{calendarId}"
        ids, _ = server.call(req(5, "completion/complete", {
            "ref": {"type": "ref/resource", "uri": "calendar://calendars/{calendarId}"},
            "argument": {"name": "calendarId", "value": "cal_ch"}}))
        assert ids["result"]["completion"]["values"] == ["cal_chapter"]
        listed, _ = server.call(req(6, "resources/list"))
        assert [r["uri"] for r in listed["result"]["resources"]] == ["calendar://week"]


def test_exits_zero_promptly_on_eof_and_on_sigterm(db: Path) -> None:
    server = StdioServer(db)
    started = time.monotonic()
    assert server.close() == 0 and time.monotonic() - started < 3
    with StdioServer(db) as other:
        other.call(req(1, "server/discover"))
        other.proc.send_signal(signal.SIGTERM)
        assert other.proc.wait(5) == 0


def test_cli_usage_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    for argv in (["--transport", "carrier-pigeon"], ["--bug", "no-such-bug"], ["--port", "70000"], ["--what"]):
        run = subprocess.run([*SERVE, *argv], capture_output=True, text=True, timeout=20)
        assert run.returncode == 2, argv
        assert run.stderr.count("\n") == 1 and "error" in run.stderr and "Traceback" not in run.stderr
        assert run.stdout == ""
    listed = subprocess.run([*SERVE, "--list-bugs"], capture_output=True, text=True, timeout=20)
    lines = listed.stdout.splitlines()
    assert listed.returncode == 0 and len(lines) == len(MUTANTS)
    # name, rule ids, the transport it shows over, what it does
    assert any(line.startswith("null-id-accepted\tRPC-01\tboth\ta request with id null") for line in lines)
    assert any(line.startswith("cross-wired-ids\tRPC-06\thttp\t") for line in lines)


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_a_declined_or_cancelled_request_state_cannot_create_the_event_later(db: Path, action: str) -> None:
    with StdioServer(db) as server:
        first, result = _begin(server, 1, "Declined sync")
        declined = complete_mrtr_params(first, result, STARTS)
        declined["inputResponses"] = {"startsAt": {"action": action}}
        answer, _ = server.call(req(2, "tools/call", declined))
        assert answer["result"]["isError"] is True and action in answer["result"]["content"][0]["text"]
        again, _ = server.call(req(3, "tools/call", complete_mrtr_params(first, result, STARTS)))
        assert again["error"]["code"] == wire.INVALID_PARAMS and "already used" in again["error"]["message"]
        listed, _ = server.call(req(4, "tools/call", {"name": "list_events",
                                                     "arguments": {"calendarId": "cal_chapter"}}))
    titles = [e["title"] for e in listed["result"].get("structuredContent", {}).get("events", [])]
    assert "Declined sync" not in titles

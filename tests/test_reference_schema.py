"""Every result the reference server produces validates against the official schema.

The helper clients validate each message on arrival (dispatching on `resultType` first, DIGEST
RT-06) and record it in `reference_support.SEEN`; this tour makes sure every method, the
input_required result, the listen result, every notification kind and the error envelope are
among what was checked, on both transports.
"""

from __future__ import annotations

from pathlib import Path

import reference_support as support
from reference_support import HttpServer, StdioServer, complete_mrtr_params, req


def _tour(call: object) -> None:
    """Reach every method and result kind with `call(msg) -> response message`."""
    assert callable(call)
    first = req(10, "tools/call", {"name": "create_event", "arguments": {"title": "Tour"}},
                caps={"elicitation": {}})
    calls = [
        req(1, "server/discover"),
        req(2, "tools/list"),
        req(3, "resources/list"),
        req(4, "resources/templates/list"),
        req(5, "resources/read", {"uri": "calendar://week"}),
        req(6, "resources/read", {"uri": "calendar://calendars/cal_chapter"}),
        req(7, "prompts/list"),
        req(8, "prompts/get", {"name": "prepare_week", "arguments": {"focus": "demos"}}),
        req(9, "completion/complete", {"ref": {"type": "ref/prompt", "name": "prepare_week"},
                                       "argument": {"name": "focus", "value": ""}}),
        req(11, "tools/call", {"name": "echo", "arguments": {"text": "x"}}),
        req(12, "tools/call", {"name": "open_calendar", "arguments": {"name": "tour"}}),
        req(13, "tools/call", {"name": "list_events", "arguments": {"calendarId": "cal_chapter", "limit": 3}}),
        req(14, "tools/call", {"name": "list_events", "arguments": {"calendarId": "nope"}}),
        req(15, "tools/call", {"name": "test_logging_tool", "arguments": {}}, log_level="debug"),
        req(16, "tools/call", {"name": "test_streaming_elicitation", "arguments": {}}, caps={"elicitation": {}}),
        req(17, "tools/call", {"name": "test_missing_capability", "arguments": {}}, caps={"sampling": {}}),
        req(18, "no/such/method"),
    ]
    for msg in calls:
        call(msg)
    asked = call(first)["result"]
    call(req(19, "tools/call", complete_mrtr_params(first, asked, "2026-08-03T09:00:00Z")))


def test_every_result_kind_validates_on_both_transports(tmp_path: Path, spec_dir: Path) -> None:
    assert support.SCHEMA_PATH == spec_dir / "2026-07-28" / "schema.json"
    db = tmp_path / "store.sqlite3"
    support.SEEN.clear()
    with StdioServer(db) as stdio:
        _tour(lambda msg: stdio.call(msg)[0])
        stdio.send(req("listen", "subscriptions/listen", {"notifications": {"resourceSubscriptions": [
            "calendar://week"]}}))
        stdio.recv()
        stdio.call(req(30, "tools/call", {"name": "create_event", "arguments": {"title": "t",
                                                                                "startsAt": "2026-08-03T10:00:00Z"}}))
        stdio.proc.stdin.close()  # type: ignore[union-attr]
        while stdio.recv() is not None:
            pass
    stdio_seen = {name for name, _ in support.SEEN}
    expected = set(support.RESULT_DEFS.values()) | {"InputRequiredResult", "JSONRPCErrorResponse",
                                                     "ServerNotification"}
    assert stdio_seen == expected
    notes = {label for name, label in support.SEEN if name == "ServerNotification"}
    assert notes == {"notifications/message", "notifications/subscriptions/acknowledged",
                     "notifications/resources/updated"}
    support.SEEN.clear()
    with HttpServer(db) as http:
        _tour(lambda msg: http.post(msg, input_schema={"type": "object", "properties": {
            "calendarId": {"type": "string", "x-mcp-header": "Calendar"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"}}}).message)
        assert http.stop() == 0
    assert {name for name, _ in support.SEEN} == expected - {"SubscriptionsListenResult"}

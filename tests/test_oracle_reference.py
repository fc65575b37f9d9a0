"""The oracle on real traffic: silent on the reference server, loud on its one-bug mutants.

One scenario (valid requests of every method, an MRTR round trip, and a few malformed frames
each followed by a liveness sentinel) is recorded with the project's own drivers from
`mcp-tempest serve`, over stdio and over Streamable HTTP (`--port 0`). The reference server
must draw no violation at all, in either era's rule set; each mutant must draw the rule it is
labelled with, which proves the rules fire on real bytes and not only on crafted ones.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mcp_tempest.fuzz.oracle import Expectation, Violation, judge
from mcp_tempest.fuzz.properties.executor import settle_before
from mcp_tempest.targets import wire
from mcp_tempest.targets.connection import Connection, is_response_to
from mcp_tempest.targets.http_driver import HttpConnection
from mcp_tempest.targets.stdio_driver import start_stdio
from mcp_tempest.targets.transcript import Transcript

SERVE = [sys.executable, "-m", "mcp_tempest.fuzz.cli", "serve"]
STARTUP_TIMEOUT = 15.0
TIMEOUT = 5.0
ELICIT_CAPS = {"elicitation": {}}
MALFORMED_EXPECTATIONS = {
    "missing-meta": Expectation("error", "META-04", codes=frozenset({-32602}), statuses=frozenset({400}),
                                mutation="drop-meta"),
    "unknown-method": Expectation("error", "HDR-05", codes=frozenset({-32601}), statuses=frozenset({404}),
                                  mutation="unknown-method"),
    "bad-version": Expectation("error", "META-06", codes=frozenset({-32022}), statuses=frozenset({400}),
                               mutation="unsupported-version"),
    # Ignoring a null-id request is common (SDKs) and not forbidden; serving it is the bug.
    "null-id": Expectation("not-complete", "RPC-04", mutation="null-id"),
    "not-json": Expectation("error-or-ignore", "RPC-01", mutation="not-json"),
    "batch": Expectation("error-or-ignore", "RPC-11", mutation="batch"),
    "raw-newline": Expectation("error-or-ignore", "STDIO-02", mutation="raw-newline"),
    "blank-line": Expectation("error-or-ignore", "STDIO-02", mutation="blank-line"),
    "notification": Expectation("no-reply", "RPC-10", mutation="unknown-notification"),
    "header-mismatch": Expectation("error", "HDR-01", codes=frozenset({-32020}), statuses=frozenset({400}),
                                   mutation="version-header-mismatch"),
}


def rq(rid: Any, method: str, params: dict[str, Any] | None = None, *, caps: dict[str, Any] | None = None,
       **kw: Any) -> dict[str, Any]:
    return wire.build_request(rid, method, params or {}, capabilities=caps or {}, **kw)


class Recorder:
    """Sends through a real driver and keeps the send indices the expectations refer to."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.expectations: dict[int, Expectation] = {}
        self.http = conn.transport == "http"

    def ask(self, msg: Any, *, headers: dict[str, str] | None = None, expect: str | None = None) -> Any:
        settle_before(self.conn, msg)  # as the executor does
        index = self.conn.send(msg, headers=headers)
        if expect is not None:
            self.expectations[index] = MALFORMED_EXPECTATIONS[expect]
        if isinstance(msg, dict) and wire.is_request(msg) and isinstance(msg["id"], str | int):
            rid = msg["id"]
            if not self.http:
                self.conn.read_until(lambda e: is_response_to(e, rid), TIMEOUT, since=index,
                                     awaited=f"response to id {rid!r}")
            for event in self.conn.transcript.events[index:]:
                if is_response_to(event, rid) and (not self.http or event.ref == index):
                    return event.message
        return None

    def probe(self, frame: Any, expect: str, *, headers: dict[str, str] | None = None) -> None:
        """A malformed frame, then the liveness sentinel the oracle looks for."""
        self.ask(frame, headers=headers, expect=expect)
        self.ask(rq(f"sentinel-{len(self.expectations)}", "server/discover"))


def scenario(rec: Recorder, *, malformed: bool = True) -> None:
    discover = rec.ask(rq(1, "server/discover"))
    assert discover is not None and "result" in discover, discover
    tools = rec.ask(rq(2, "tools/list"))["result"]
    cursor = tools.get("nextCursor")
    if cursor is not None:
        rec.ask(rq(3, "tools/list", {"cursor": cursor}))
    resources = rec.ask(rq(4, "resources/list"))["result"]["resources"]
    rec.ask(rq(5, "resources/templates/list"))
    rec.ask(rq(6, "prompts/list"))
    # Before any request declares elicitation: the baseline META-02 needs (-32021 here, so a later
    # elicitation asked of a client that did not declare it is inheritance, not a missing check).
    rec.ask(rq(22, "tools/call", {"name": "create_event", "arguments": {"title": "baseline"}}))
    rec.ask(rq(7, "tools/call", {"name": "echo", "arguments": {"text": "héllo\nworld"}}))
    opened = rec.ask(rq(8, "tools/call", {"name": "open_calendar", "arguments": {"name": "oracle"}}))
    calendar_id = opened["result"]["structuredContent"]["calendarId"]
    # MRTR: create_event without startsAt asks for it; the retry (new id) carries the answer.
    first = rq(9, "tools/call", {"name": "create_event", "arguments": {"title": "standup", "calendarId": calendar_id}},
               caps=ELICIT_CAPS)
    pending = rec.ask(first)["result"]
    assert pending["resultType"] == "input_required", pending
    retry_params = dict(first["params"])
    key = next(iter(pending["inputRequests"]))
    retry_params["inputResponses"] = {key: {"action": "accept", "content": {"startsAt": "2026-08-03T09:00:00Z"}}}
    retry_params["requestState"] = pending["requestState"]
    done = rec.ask({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": retry_params})
    assert done["result"]["resultType"] == "complete", done
    list_events = rq(11, "tools/call", {"name": "list_events", "arguments": {"calendarId": calendar_id, "limit": 5}})
    schema = next(t["inputSchema"] for t in tools["tools"] if t["name"] == "list_events") \
        if any(t["name"] == "list_events" for t in tools["tools"]) else None
    rec.ask(list_events, headers=wire.http_headers(list_events, input_schema=schema) if rec.http else None)
    rec.ask(rq(12, "tools/call", {"name": "test_missing_capability", "arguments": {}}))  # -32021
    rec.ask(rq(13, "tools/call", {"name": "create_event", "arguments": {"title": "no caps"}}))  # -32021
    rec.ask(rq(14, "resources/read", {"uri": resources[0]["uri"]}))
    rec.ask(rq(15, "resources/read", {"uri": "calendar://nope/none"}))  # -32602
    rec.ask(rq(16, "prompts/get", {"name": "prepare_week", "arguments": {"focus": "demos"}}))
    rec.ask(rq(17, "completion/complete", {"ref": {"type": "ref/prompt", "name": "prepare_week"},
                                           "argument": {"name": "focus", "value": "de"}}))
    rec.ask(rq(18, "tools/call", {"name": "test_logging_tool", "arguments": {}}, log_level="info"))
    rec.ask(rq(19, "tools/call", {"name": "no_such_tool", "arguments": {}}))  # -32602
    # Request-scoped notifications (DIGEST §12, §13): progress under each token type, logs only
    # at or above the level asked (the fixture logs info, warning and error).
    rec.ask(rq(23, "tools/call", {"name": "echo", "arguments": {"text": "p"}}, progress_token="p-23",
               log_level="debug"))
    rec.ask(rq(24, "tools/call", {"name": "test_logging_tool", "arguments": {}}, progress_token=24,
               log_level="warning"))
    if rec.http:
        rec.conn.send_concurrently([rq(20, "tools/list"), rq(21, "resources/list")])
    if malformed:
        bare = {"jsonrpc": "2.0", "id": 30, "method": "tools/list"}
        # Over HTTP the version header stays: without it HDR-02 lets a server read the request
        # as 2025-03-26, and nothing is owed in 2026-07-28 terms.
        rec.probe(bare, "missing-meta",
                  headers={**wire.http_headers(bare), "MCP-Protocol-Version": wire.MODERN_VERSION} if rec.http else None)
        rec.probe(rq(31, "ping"), "unknown-method")
        rec.probe(rq(32, "tools/list", version="1900-01-01"), "bad-version")
        rec.probe({**rq(0, "tools/list"), "id": None}, "null-id")
        rec.probe(wire.build_notification("notifications/bogus", {}), "notification")
        rec.probe(b'{"jsonrpc": "2.0", "id": 33, "method": ' + (b"" if rec.http else b"\n"), "not-json")
        rec.probe(wire.encode_line([rq(34, "tools/list")]), "batch")
        if rec.http:
            msg = rq(35, "tools/list")
            headers = wire.http_headers(msg)
            headers["MCP-Protocol-Version"] = wire.LEGACY_VERSION
            rec.probe(msg, "header-mismatch", headers=headers)
        else:
            rec.probe(b'{"jsonrpc":"2.0","id":36,\n"method":"tools/list"}\n', "raw-newline")
            rec.probe(b"\n", "blank-line")
    rec.ask(rq(40, "tools/list"))
    if cursor is not None:  # the same page again, after all those calls: it must not have changed
        rec.ask(rq(41, "tools/list", {"cursor": cursor}))


@contextmanager
def stdio_conn(transcript: Transcript, db: Path, *bugs: str) -> Iterator[Connection]:
    argv = [*SERVE, "--db", str(db), *(a for b in bugs for a in ("--bug", b))]
    conn = start_stdio(transcript, argv, timeout=TIMEOUT)
    try:
        yield conn
    finally:
        conn.close()


@contextmanager
def http_conn(transcript: Transcript, db: Path, *bugs: str) -> Iterator[Connection]:
    argv = [*SERVE, "--transport", "http", "--port", "0", "--db", str(db),
            *(a for b in bugs for a in ("--bug", b))]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        url = _listening_url(proc)
        conn = HttpConnection(transcript, [url], timeout=TIMEOUT)
        try:
            yield conn
        finally:
            conn.close()
    finally:
        with _suppress():
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            with _suppress():
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        if proc.stderr is not None:
            proc.stderr.close()


@contextmanager
def _suppress() -> Iterator[None]:
    try:
        yield
    except ProcessLookupError:
        pass


def _listening_url(proc: subprocess.Popen[bytes]) -> str:
    assert proc.stderr is not None
    buf = b""
    fd = proc.stderr.fileno()
    import time

    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
            found = re.search(rb"listening on (http://\S+)", buf)
            if found:
                return found.group(1).decode()
        elif proc.poll() is not None:
            break
    raise AssertionError(f"reference server did not report its URL: {buf.decode(errors='replace')!r}")


def record(transport: str, db: Path, *bugs: str, malformed: bool = True) -> tuple[Transcript, dict[int, Expectation]]:
    transcript = Transcript("mcp-tempest serve", transport)  # type: ignore[arg-type]
    opener = stdio_conn if transport == "stdio" else http_conn
    with opener(transcript, db, *bugs) as conn:
        rec = Recorder(conn)
        try:
            scenario(rec, malformed=malformed)
        except (AssertionError, KeyError, TypeError, StopIteration, IndexError):
            if not bugs:
                raise  # the reference server must get through the whole scenario
            # A bug may derail the scenario (a result without the expected shape): judge what was recorded.
        if transport == "stdio":
            conn.drain(quiet=0.2, timeout=1.0)
    return transcript, rec.expectations


def show(found: list[Violation], transcript: Transcript) -> str:
    lines = []
    for v in found:
        ev = transcript.events[v.event_index] if v.event_index is not None else None
        lines.append(f"{v.rule} [{v.strength}] {v.title}: {v.detail} @ {ev.to_json() if ev else '-'}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Transcript, dict[int, Expectation]]]:
    db = tmp_path_factory.mktemp("oracle-ref") / "reference.sqlite3"
    return {t: record(t, db) for t in ("stdio", "http")}


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_reference_server_draws_no_violation(recorded: dict[str, Any], transport: str) -> None:
    transcript, expectations = recorded[transport]
    assert len(transcript.sent()) > 30 and len(transcript.received()) > 25
    found = judge(transcript, expectations=expectations)
    assert found == [], show(found, transcript)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_reference_server_silent_under_legacy_rules(recorded: dict[str, Any], transport: str) -> None:
    transcript, expectations = recorded[transport]
    assert judge(transcript, era="legacy", expectations=expectations) == []

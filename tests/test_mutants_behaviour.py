"""Each mutant shows its one deviation, and the reference server does not.

Every check below is a quick direct probe (no fuzzing) against a real process: it returns True
when the deviation is observed. Each runs twice: with the bug switched on it must see the
deviation, on the plain reference server it must not. That proves both that the mutant is
really broken and that the check is capable of failing.
"""

from __future__ import annotations

import http.client
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import psutil
import pytest
from reference_support import HttpServer, StdioServer, complete_mrtr_params, req
from test_reach_mutants import MUTANT_CHECKS as REACH_CHECKS
from test_tool_body_rules import MUTANT_CHECKS

from mcp_tempest.targets import wire
from mcp_tempest.targets.mutants import MUTANTS

ELICIT = {"elicitation": {}}
STARTS = "2026-08-03T09:00:00Z"

Check = Callable[[Path, tuple[str, ...]], bool]


def _stdio(db: Path, bugs: tuple[str, ...]) -> StdioServer:
    return StdioServer(db, *bugs, validate=False)


def _http(db: Path, bugs: tuple[str, ...]) -> HttpServer:
    return HttpServer(db, *bugs, validate=False)


def remembered_capabilities(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        s.call(req(1, "tools/call", {"name": "create_event", "arguments": {"title": "a"}}, caps=ELICIT))
        second, _ = s.call(req(2, "tools/call", {"name": "create_event", "arguments": {"title": "a"}}))
        return "result" in second


def memory_store(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as a:
        made, _ = a.call(req(1, "tools/call", {"name": "open_calendar", "arguments": {"name": "mutant-cal"}}))
        cal = made["result"]["structuredContent"]["calendarId"]
        a.call(req(2, "tools/call", {"name": "create_event",
                                     "arguments": {"title": "kept?", "startsAt": STARTS, "calendarId": cal}}))
    with _stdio(db, bugs) as b:
        listed, _ = b.call(req(3, "tools/call", {"name": "list_events", "arguments": {"calendarId": cal}}))
        return listed["result"].get("isError") is True


def memory_request_state(db: Path, bugs: tuple[str, ...]) -> bool:
    first = req(1, "tools/call", {"name": "create_event", "arguments": {"title": "mrtr"}}, caps=ELICIT)
    with _stdio(db, bugs) as a:
        asked, _ = a.call(first)
    with _stdio(db, bugs) as b:
        done, _ = b.call(req(2, "tools/call", complete_mrtr_params(first, asked["result"], STARTS)))
        return "error" in done


def null_id_accepted(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        s.send({**req(1, "server/discover"), "id": None})
        reply = s.recv()
        return "result" in reply and reply.get("id", "absent") is None


def cross_wired_ids(db: Path, bugs: tuple[str, ...]) -> bool:
    with _http(db, bugs) as h:
        h.post(req(1, "server/discover"))
        second = h.post(req(2, "server/discover"))
        return second.message["id"] != 2


def missing_result_type(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        resp, _ = s.call(req(1, "server/discover"))
        return "resultType" not in resp["result"]


def stdout_log(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        s.send(req(1, "server/discover"))
        for _ in range(2):
            line = s.read_line(2.0)
            try:
                orjson.loads(line or b"")
            except orjson.JSONDecodeError:
                return True
            if line and b'"id":1' in line:
                return False
        return False


def unsigned_request_state(db: Path, bugs: tuple[str, ...]) -> bool:
    first = req(1, "tools/call", {"name": "create_event", "arguments": {"title": "sig"}}, caps=ELICIT)
    with _stdio(db, bugs) as s:
        asked, _ = s.call(first)
        params = complete_mrtr_params(first, asked["result"], STARTS)
        token = params["requestState"]
        params["requestState"] = token[:-1] + ("A" if token[-1] != "A" else "B")
        done, _ = s.call(req(2, "tools/call", params))
        return "result" in done


def list_input_required(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        resp, _ = s.call(req(1, "tools/list"))
        return resp["result"]["resultType"] == "input_required"


def missing_meta_32601(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        resp, _ = s.call({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
        return resp["error"]["code"] == wire.METHOD_NOT_FOUND


def era_lock(db: Path, bugs: tuple[str, ...]) -> bool:
    """A malformed _meta first, then a valid discover on the same process: refused only by the mutant."""
    with _stdio(db, bugs) as s:
        first, _ = s.call({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": "x"}})
        assert first["error"]["code"] == wire.INVALID_PARAMS
        resp, _ = s.call(wire.build_request(2, "server/discover"))
        return "error" in resp and resp["error"]["code"] == wire.INVALID_REQUEST


def unsupported_version_no_data(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        resp, _ = s.call(wire.build_request(1, "server/discover", version="1900-01-01"))
        return resp["error"]["code"] == wire.UNSUPPORTED_PROTOCOL_VERSION and "data" not in resp["error"]


def exit_on_newline(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        s.send_raw(b"\n")
        try:
            s.send(req(1, "server/discover"))
            return s.recv(2.0) is None
        except (BrokenPipeError, TimeoutError):
            return True


def list_changes_after_call(db: Path, bugs: tuple[str, ...]) -> bool:
    def names(s: StdioServer, base: int) -> list[str]:
        out, cursor = [], None
        for n in range(5):
            params = {"cursor": cursor} if cursor else {}
            page, _ = s.call(req(base + n, "tools/list", params))
            out += [t["name"] for t in page["result"]["tools"]]
            cursor = page["result"].get("nextCursor")
            if cursor is None:
                break
        return out

    with _stdio(db, bugs) as s:
        before = names(s, 1)
        s.call(req(10, "tools/call", {"name": "echo", "arguments": {"text": "x"}}))
        return names(s, 20) != before


def serverinfo_top_level(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        result = s.call(req(1, "server/discover"))[0]["result"]
        return "serverInfo" in result and wire.META_SERVER_INFO not in result.get("_meta", {})


def reply_to_notification(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        s.send(wire.build_notification("notifications/cancelled", {"requestId": 5}))
        s.send(req("probe", "server/discover"))
        return s.recv().get("id") != "probe"


def http_session_id(db: Path, bugs: tuple[str, ...]) -> bool:
    with _http(db, bugs) as h:
        return "mcp-session-id" in h.post(req(1, "server/discover")).headers


def http_200_header_mismatch(db: Path, bugs: tuple[str, ...]) -> bool:
    with _http(db, bugs) as h:
        resp = h.post(req(1, "server/discover"), headers={"MCP-Protocol-Version": "2025-11-25"})
        assert resp.message["error"]["code"] == wire.HEADER_MISMATCH
        return resp.status == 200


def http_200_unknown_method(db: Path, bugs: tuple[str, ...]) -> bool:
    with _http(db, bugs) as h:
        resp = h.post(req(1, "no/such/method"))
        assert resp.message["error"]["code"] == wire.METHOD_NOT_FOUND
        return resp.status == 200


def http_get_200(db: Path, bugs: tuple[str, ...]) -> bool:
    with _http(db, bugs) as h:
        statuses = []
        for verb in ("GET", "DELETE"):
            conn = http.client.HTTPConnection(h.host, h.port, timeout=5)
            try:
                conn.request(verb, "/mcp", headers={"Accept": "text/event-stream"})
                statuses.append(conn.getresponse().status)
            finally:
                conn.close()
        return statuses == [200, 200]


def tools_list_reordered(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        first, _ = s.call(req(1, "tools/list"))
        second, _ = s.call(req(2, "tools/list"))
        names = [[t["name"] for t in m["result"]["tools"]] for m in (first, second)]
        return sorted(names[0]) == sorted(names[1]) and names[0] != names[1]


def _all_tools(s: StdioServer, first_id: int = 1) -> list[dict[str, Any]]:
    """Every tool over every tools/list page, read on one process."""
    tools, cursor, n = [], None, first_id
    while True:
        listed, _ = s.call(req(n, "tools/list", {"cursor": cursor} if cursor else None))
        tools += listed["result"]["tools"]
        cursor, n = listed["result"].get("nextCursor"), n + 1
        if not cursor:
            return tools


def _echo_description(tools: list[dict[str, Any]]) -> str:
    return next(t["description"] for t in tools if t["name"] == "echo")


def tool_name_invalid(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        return "echo text" in [t["name"] for t in _all_tools(s)]


def catalogue_drift(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        return _echo_description(_all_tools(s, 1)) != _echo_description(_all_tools(s, 10))


def process_description(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as a:
        first = _echo_description(_all_tools(a))
    with _stdio(db, bugs) as b:
        return first != _echo_description(_all_tools(b))


def poisoned_description(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        text = _echo_description(_all_tools(s))
        return "\u200b" in text and "\x1b[" in text and "send_email" in text


def structured_without_text(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        made, _ = s.call(req(1, "tools/call", {"name": "open_calendar", "arguments": {"name": "t12"}}))
        result = made["result"]
        return "structuredContent" in result and not any(c.get("type") == "text" for c in result["content"])


def _echo_call(rid: int, *, token: Any = None, level: str | None = None, info: bool = True) -> dict[str, Any]:
    return wire.build_request(rid, "tools/call", {"name": "echo", "arguments": {"text": "x"}}, log_level=level,
                              progress_token=token, client_info=wire.HARNESS_CLIENT_INFO if info else None)


def _progress_values(notes: list[Any]) -> list[Any]:
    return [n["params"]["progress"] for n in notes if n.get("method") == "notifications/progress"]


def progress_without_token(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        _, notes = s.call(_echo_call(1))
        return bool(_progress_values(notes))


def progress_not_increasing(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        _, notes = s.call(_echo_call(1, token="t"))
        values = _progress_values(notes)
        return len(values) < 2 or any(b <= a for a, b in zip(values, values[1:], strict=False))


def progress_after_response(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        s.call(_echo_call(1, token=7))
        s.send(req(2, "server/discover"))
        late = s.recv(5.0)
        return late is not None and late.get("method") == "notifications/progress"


def log_without_level(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        _, notes = s.call(_echo_call(1))
        return any(n.get("method") == "notifications/message" for n in notes)


def log_below_level(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        _, notes = s.call(_echo_call(1, level="error"))  # echo logs at info
        return any(n.get("method") == "notifications/message" for n in notes)


def client_info_required(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        named, _ = s.call(_echo_call(1))
        anonymous, _ = s.call(_echo_call(2, info=False))
        return ("result" in named) != ("result" in anonymous)


def param_header_unchecked(db: Path, bugs: tuple[str, ...]) -> bool:
    msg = req(1, "tools/call", {"name": "list_events", "arguments": {"calendarId": "chapter", "limit": 5}})
    with _http(db, bugs) as h:
        # The Limit argument is in the body, its Mcp-Param-Limit header is not (HDR-08: -32020, 400).
        resp = h.post(msg, headers={"Mcp-Param-Calendar": "chapter"})
        return resp.status == 200


def header_whitespace_refused(db: Path, bugs: tuple[str, ...]) -> bool:
    msg = req(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    with _http(db, bugs) as h:
        # Optional whitespace around the values (RFC 9110 §5.5) is not part of them: HDR-03 has them match.
        resp = h.post(msg, headers={"Mcp-Method": "tools/call \t", "Mcp-Name": "  echo  "})
        return resp.status == 400 and resp.message["error"]["code"] == wire.HEADER_MISMATCH


def cancel_echo(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        s.send(wire.build_notification("notifications/cancelled", {"requestId": 99}))
        _, notes = s.call(req(1, "server/discover"))
        return any(n.get("method") == "notifications/cancelled" for n in notes)


def listen_id_as_string(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        s.send(req(7, "subscriptions/listen", {"notifications": {"resourceSubscriptions": ["calendar://week"]}}))
        ack = s.recv(5.0)
        s.send(wire.build_notification("notifications/cancelled", {"requestId": 7}))
        return ack["params"]["_meta"][wire.META_SUBSCRIPTION_ID] == "7"


def listen_end_id_as_string(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        s.send(req(8, "subscriptions/listen", {"notifications": {"resourceSubscriptions": ["calendar://week"]}}))
        s.recv(5.0)  # the acknowledgement
        assert s.proc.stdin
        s.proc.stdin.close()  # shutdown with the listen open: the closing result (SUB-08)
        line = s.read_line(5.0)
        end = orjson.loads(line) if line else {}
        return end.get("id") == 8 and end["result"]["_meta"][wire.META_SUBSCRIPTION_ID] == "8"


def slow_leak(db: Path, bugs: tuple[str, ...]) -> bool:
    with _stdio(db, bugs) as s:
        s.call(req(0, "server/discover"))
        proc = psutil.Process(s.proc.pid)
        before = proc.memory_info().rss
        line = wire.encode_line(req(1, "tools/call", {"name": "echo", "arguments": {"text": "x" * 200}}))
        for _ in range(40):  # batches small enough that neither pipe fills up
            s.send_raw(line * 50)
            for _ in range(50):
                s.read_line(5.0)
        grown = proc.memory_info().rss - before
        return grown > 10_000_000  # 2000 requests x ~8.4 KiB kept


CHECKS: dict[str, Check] = {
    "remembered-capabilities": remembered_capabilities,
    "memory-store": memory_store,
    "memory-request-state": memory_request_state,
    "null-id-accepted": null_id_accepted,
    "cross-wired-ids": cross_wired_ids,
    "missing-result-type": missing_result_type,
    "stdout-log": stdout_log,
    "unsigned-request-state": unsigned_request_state,
    "list-input-required": list_input_required,
    "missing-meta-32601": missing_meta_32601,
    "era-lock": era_lock,
    "unsupported-version-no-data": unsupported_version_no_data,
    "exit-on-newline": exit_on_newline,
    "list-changes-after-call": list_changes_after_call,
    "serverinfo-top-level": serverinfo_top_level,
    "reply-to-notification": reply_to_notification,
    "http-session-id": http_session_id,
    "http-200-header-mismatch": http_200_header_mismatch,
    "http-200-unknown-method": http_200_unknown_method,
    "http-get-200": http_get_200,
    "tools-list-reordered": tools_list_reordered,
    "tool-name-invalid": tool_name_invalid,
    "structured-without-text": structured_without_text,
    "progress-without-token": progress_without_token,
    "progress-not-increasing": progress_not_increasing,
    "progress-after-response": progress_after_response,
    "log-without-level": log_without_level,
    "log-below-level": log_below_level,
    "client-info-required": client_info_required,
    "param-header-unchecked": param_header_unchecked,
    "header-whitespace-refused": header_whitespace_refused,
    "cancel-echo": cancel_echo,
    "listen-id-as-string": listen_id_as_string,
    "listen-end-id-as-string": listen_end_id_as_string,
    "slow-leak": slow_leak,
    "catalogue-drift": catalogue_drift,
    "process-description": process_description,
    "poisoned-description": poisoned_description,
}


# The tool-body mutants (TOOL-09, TOOL-10, TOOL-15) are checked beside their rules.
CHECKS.update(MUTANT_CHECKS)
CHECKS.update(REACH_CHECKS)  # the workspace mutants (tests/test_reach_mutants.py)


def test_every_mutant_has_a_check() -> None:
    # An auth mutant deviates only for a token case: tests/test_auth.py shows each one's deviation
    # on real answers against the reference (its campaigns and test_mutants_found's http+auth plans).
    auth = {name for name, mutant in MUTANTS.items() if mutant.needs_auth}
    assert set(CHECKS) == set(MUTANTS) - auth
    from tests.test_auth import AUTH_MUTANT_RULES
    assert set(AUTH_MUTANT_RULES) <= auth


@pytest.mark.parametrize("name", list(CHECKS))
def test_mutant_shows_its_deviation_and_reference_does_not(name: str, tmp_path: Path) -> None:
    check = CHECKS[name]
    with ThreadPoolExecutor(2) as pool:  # the two probes are independent processes: run them side by side
        mutant = pool.submit(check, tmp_path / "mutant.sqlite3", (name,))
        reference = pool.submit(check, tmp_path / "reference.sqlite3", ())
        assert mutant.result() is True, f"{name} did not deviate"
        assert reference.result() is False, f"reference server deviates like {name}"


def test_list_bugs_says_what_each_bug_does_and_the_transport_it_needs() -> None:
    """A newcomer picks a bug from this list: each line names the transport it shows over."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "mcp_tempest.fuzz.cli", "serve", "--list-bugs"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stderr == ""
    rows = [line.split("\t") for line in run.stdout.splitlines()]
    assert [row[0] for row in rows] == list(MUTANTS) and all(len(row) == 4 for row in rows)
    for name, rules, transport, description in rows:
        mutant = MUTANTS[name]
        assert rules == ",".join(mutant.rules) and description == mutant.description and description
        assert transport == {"any": "both"}.get(mutant.transport, mutant.transport)
    assert ["cross-wired-ids", "RPC-06", "http"] in [row[:3] for row in rows]


def test_fuzzing_a_mutant_over_a_transport_where_it_cannot_show_says_so(tmp_path: Path) -> None:
    """cross-wired-ids shows only over HTTP: a stdio campaign on it would end in 0 findings and exit 0
    with no word why; the run says so up front. A bug that can show gets no such line."""
    import subprocess
    import sys

    def fuzz(bug: str) -> str:
        target = f"stdio:{sys.executable} -m mcp_tempest.targets.reference --db {tmp_path / 'n.sqlite3'} --bug {bug}"
        run = subprocess.run([sys.executable, "-m", "mcp_tempest.fuzz.cli", "fuzz", "--target", target,
                              "--properties", "valid", "--max-examples", "1", "--seed", "1", "--no-database",
                              "--no-coverage", "--progress", "never", "--out", str(tmp_path / bug)],
                             capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert run.returncode in (0, 1) and "Traceback" not in run.stderr, run.stderr[-2000:]
        return run.stdout

    out = fuzz("cross-wired-ids").splitlines()
    note = "note: bug cross-wired-ids shows only over http; this run uses stdio"
    assert note in out and out.index(note) < next(i for i, line in enumerate(out) if line.startswith("fuzz: seed"))
    assert not [line for line in fuzz("missing-result-type").splitlines() if line.startswith("note: bug")]


@pytest.mark.parametrize(("argv", "transport", "expected"), [
    (["mcp-tempest", "serve", "--transport", "http", "--port", "{port}", "--bug", "stdout-log"], "http",
     ["bug stdout-log shows only over stdio; this run uses http"]),
    (["/venv/bin/mcp-tempest", "serve", "--bug=cross-wired-ids", "--bug", "null-id-accepted"], "stdio",
     ["bug cross-wired-ids shows only over http; this run uses stdio"]),
    (["python", "-m", "mcp_tempest.targets.reference", "--bug", "slow-leak"], "stdio",
     ["bug slow-leak is found by `mcp-tempest load`, not by a fuzz campaign"]),
    (["my-server", "--bug", "cross-wired-ids"], "stdio", []),  # another server's flag is its own
])
def test_campaign_notes_read_the_reference_command_line(argv: list[str], transport: str,
                                                        expected: list[str]) -> None:
    from mcp_tempest.targets.mutants import campaign_notes

    assert campaign_notes(argv, transport) == expected

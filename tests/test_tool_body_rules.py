"""TOOL-09, TOOL-10 and TOOL-15 (fuzz/oracle/tool_rules.py): what runs inside a tool call.

Each rule fires on a crafted exchange that breaks it and stays silent on near-identical twins that
do not (the cases a false finding would come from: invalid arguments, protocol refusals, an
incomplete listing, a trace in a successful result); silent on the official examples placed next
to a listing; and on real processes it fires on the mutant built for it and stays silent on the
reference server. The RPC-01 "never answered" finding of a tools/call names the tool and its
arguments (the detail only: the bucket is unchanged).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import require_spec_dir
from fuzz_support import reference_http, reference_stdio, run_cli
from reference_support import StdioServer, req

from mcp_tempest.fuzz.oracle import Expectation, Violation, judge
from mcp_tempest.fuzz.oracle.craft import Crafter
from mcp_tempest.fuzz.oracle.tool_rules import stack_trace
from mcp_tempest.targets import wire

RULES = ("TOOL-09", "TOOL-10", "TOOL-15")
SCHEMA = {"type": "object", "properties": {"location": {"type": "string"}, "when": {"type": "string",
                                                                                    "format": "date-time"}},
          "required": ["location"]}
TOOLS = [{"name": "get_weather", "inputSchema": SCHEMA}, {"name": "calculate", "inputSchema": {
    "type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}}]
ARGS = {"location": "New York"}
OK = {"resultType": "complete", "content": [{"type": "text", "text": "sunny"}]}
PY_TRACE = ('Traceback (most recent call last):\n  File "/srv/app/tools.py", line 12, in get_weather\n'
            '    raise KeyError(key)\nKeyError: \'limit\'')
NODE_TRACE = ("TypeError: x is undefined\n    at getWeather (/srv/app/dist/tools.js:12:5)\n"
              "    at async Server.handle (/srv/app/node_modules/sdk/dist/server.js:88:17)")
JAVA_TRACE = ("java.lang.NullPointerException: boom\n\tat com.example.Tools.weather(Tools.java:42)\n"
              "\tat com.example.Server.call(Server.java:17)")


def rq(rid: Any, method: str, params: dict[str, Any] | None = None, *, caps: dict[str, Any] | None = None,
       **meta: Any) -> dict[str, Any]:
    return wire.build_request(rid, method, copy.deepcopy(params or {}), capabilities=caps or {}, **meta)


def listing(rid: Any, tools: list[dict[str, Any]], cursor: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"resultType": "complete", "tools": tools, "ttlMs": 0, "cacheScope": "public"}
    if cursor is not None:
        result["nextCursor"] = cursor
    return wire.build_result(rid, result)


def crafted(transport: str = "stdio", *, listed: bool = True, caps: dict[str, Any] | None = None) -> Crafter:
    c = Crafter(transport)
    c.spawn("http://127.0.0.1:1/mcp" if transport == "http" else "crafted")
    if listed:
        c.exchange(rq(1, "tools/list", caps=caps), listing(1, TOOLS))
    return c


def tool_call(rid: Any = 2, name: str = "get_weather", args: Any = None, **extra: Any) -> dict[str, Any]:
    return rq(rid, "tools/call", {"name": name, "arguments": ARGS if args is None else args, **extra})


def error(rid: Any, code: int, message: str = "Internal error", data: Any = None) -> dict[str, Any]:
    return wire.build_error(rid, code, message, data)


def is_error(rid: Any, text: str) -> dict[str, Any]:
    return wire.build_result(rid, {"resultType": "complete", "content": [{"type": "text", "text": text}],
                                   "isError": True})


def found(c: Crafter, rule: str, **kwargs: Any) -> list[Violation]:
    return [v for v in judge(c.transcript, **kwargs) if v.rule == rule]


# --- crafted cases: rule -> (name, build) that must fire, and twins that must not ---------------

Build = Callable[[], Crafter]


def _call_answered(answer: Callable[[int], dict[str, Any]], transport: str = "stdio", status: int | None = None,
                   request: dict[str, Any] | None = None, listed: bool = True) -> Build:
    def build() -> Crafter:
        c = crafted(transport, listed=listed)
        msg = request or tool_call()
        extra = {"status": status} if status is not None else {}
        c.exchange(msg, answer(msg["id"]), **extra)
        return c
    return build


def _http_500_no_body() -> Crafter:
    c = crafted("http")
    c.send(tool_call())
    c.http_reply(500, body=b"Internal Server Error", headers={"Content-Type": "text/plain"})
    return c


def _cancelled_call() -> Crafter:
    c = crafted()
    c.send(tool_call())
    c.send(wire.build_notification("notifications/cancelled", {"requestId": 2}))
    c.recv(error(2, -32603))
    return c


def _unknown_after(pages: list[list[dict[str, Any]]], answer: dict[str, Any], caps: dict[str, Any] | None = None,
                   complete: bool = True) -> Crafter:
    c = Crafter("stdio")
    c.spawn()
    rid = 10
    for n, page in enumerate(pages):
        last = n == len(pages) - 1
        params = {"cursor": f"p{n}"} if n else None
        c.exchange(rq(rid, "tools/list", params, caps=caps),
                   listing(rid, page, None if last and complete else f"p{n + 1}"))
        rid += 1
    c.exchange(tool_call(2, "invalid_tool_name", {}), {**answer, "id": 2})
    return c


FIRES: dict[str, list[tuple[str, Build]]] = {
    "TOOL-10": [
        ("valid arguments answered -32603 (stdio)", _call_answered(lambda i: error(i, -32603))),
        ("valid arguments answered -32603 with HTTP 500", _call_answered(lambda i: error(i, -32603), "http", 500)),
        ("valid arguments answered with an application code", _call_answered(lambda i: error(i, 1, "boom"))),
        ("valid arguments answered -32602 with HTTP 500",
         _call_answered(lambda i: error(i, -32602, "bad"), "http", 500)),
        ("valid arguments answered HTTP 500 without a JSON-RPC body", _http_500_no_body),
        ("a valid date-time answered -32603", _call_answered(
            lambda i: error(i, -32603), request=tool_call(args={**ARGS, "when": "2026-08-03T09:00:00Z"}))),
    ],
    "TOOL-09": [
        ("unknown tool answered with an isError result",
         lambda: _unknown_after([TOOLS], is_error(2, "Unknown tool: invalid_tool_name"))),
        ("unknown tool served with a result", lambda: _unknown_after([TOOLS], wire.build_result(2, OK))),
        ("unknown tool after a listing of two complete pages",
         lambda: _unknown_after([TOOLS[:1], TOOLS[1:]], is_error(2, "Unknown tool"))),
    ],
    "TOOL-15": [
        ("Python traceback in an isError result", _call_answered(lambda i: is_error(i, PY_TRACE))),
        ("Node.js stack in error data",
         _call_answered(lambda i: error(i, -32603, "boom", {"stack": NODE_TRACE}), listed=False)),
        ("JVM stack in an error message", _call_answered(lambda i: error(i, -32603, JAVA_TRACE), listed=False)),
        ("Python traceback in a -32602 message", _call_answered(lambda i: error(i, -32602, PY_TRACE))),
    ],
}

SILENT: dict[str, list[tuple[str, Build]]] = {
    "TOOL-10": [
        ("valid arguments answered with an isError result", _call_answered(lambda i: is_error(i, "no such city"))),
        ("valid arguments answered -32602", _call_answered(lambda i: error(i, -32602, "bad"), "http", 400)),
        ("missing client capability -32021", _call_answered(
            lambda i: error(i, -32021, "needs sampling", {"requiredCapabilities": {"sampling": {}}}), "http", 400)),
        ("invalid arguments (a required one missing) answered -32603",
         _call_answered(lambda i: error(i, -32603), request=tool_call(args={}))),
        ("arguments of the wrong type answered -32603",
         _call_answered(lambda i: error(i, -32603), request=tool_call(args={"location": 5}))),
        ("an invalid date-time answered -32603", _call_answered(
            lambda i: error(i, -32603), request=tool_call(args={**ARGS, "when": "tomorrow"}))),
        ("no listing in the transcript", _call_answered(lambda i: error(i, -32603), listed=False)),
        ("unlisted tool answered -32603", _call_answered(lambda i: error(i, -32603),
                                                          request=tool_call(name="other"))),
        ("an MRTR retry answered -32603", _call_answered(
            lambda i: error(i, -32603), request=tool_call(requestState="opaque", inputResponses={}))),
        ("a cancelled call answered -32603", _cancelled_call),
        ("an authorization refusal", _call_answered(lambda i: error(i, -32603, "unauthorized"), "http", 401)),
        ("an invalid logLevel answered -32603", _call_answered(
            lambda i: error(i, -32603), request=rq(2, "tools/call", {"name": "get_weather", "arguments": ARGS},
                                                   log_level="loud"))),
        ("a successful result", _call_answered(lambda i: wire.build_result(i, OK), "http", 200)),
    ],
    "TOOL-09": [
        ("unknown tool answered -32602",
         lambda: _unknown_after([TOOLS], error(2, -32602, "Unknown tool: invalid_tool_name"))),
        ("only the first page of two was listed",
         lambda: _unknown_after([TOOLS], is_error(2, "Unknown tool"), complete=False)),
        ("listed with other capabilities than the call",
         lambda: _unknown_after([TOOLS], is_error(2, "Unknown tool"), caps={"sampling": {}})),
        ("a listed tool answered with an isError result", _call_answered(lambda i: is_error(i, "no such city"))),
        ("no listing in the transcript", _call_answered(lambda i: is_error(i, "Unknown tool"), listed=False,
                                                         request=tool_call(name="invalid_tool_name"))),
    ],
    "TOOL-15": [
        ("a traceback in a successful result (a log-reading tool)",
         _call_answered(lambda i: wire.build_result(i, {**OK, "content": [{"type": "text", "text": PY_TRACE}]}))),
        ("a code runner's traceback of code from a string", _call_answered(lambda i: is_error(i, (
            'Traceback (most recent call last):\n  File "<string>", line 1, in <module>\nZeroDivisionError')))),
        ("prose naming a traceback", _call_answered(lambda i: is_error(i, (
            "the script failed; see the 'Traceback (most recent call last)' section of the log")))),
        ("a single Node.js frame",
         _call_answered(lambda i: error(i, -32603, "failed at fn (/srv/x.js:1:2)"), listed=False)),
        ("one frame-like line in prose", _call_answered(lambda i: is_error(
            i, "Error reading config:\n    at line 12 of settings.json"))),
        ("a plain execution error", _call_answered(lambda i: is_error(i, "Unknown city 'Atlantis'"))),
    ],
}


@pytest.mark.parametrize(("rule", "name", "build"),
                         [pytest.param(r, n, b, id=f"{r}: {n}") for r, cases in FIRES.items() for n, b in cases])
def test_rule_fires(rule: str, name: str, build: Build) -> None:
    got = judge(build().transcript)
    assert rule in {v.rule for v in got}, f"{rule} did not fire on {name}: {got}"
    assert {v.rule for v in got} <= {rule, "ERR-LEGACY", "ERR-RESERVED"}, got


@pytest.mark.parametrize(("rule", "name", "build"),
                         [pytest.param(r, n, b, id=f"{r}: {n}") for r, cases in SILENT.items() for n, b in cases])
def test_rule_silent_on_near_twin(rule: str, name: str, build: Build) -> None:
    got = [v for v in judge(build().transcript) if v.rule in RULES]
    assert got == [], f"{name} drew: " + "; ".join(f"{v.rule} {v.title}: {v.detail}" for v in got)


def test_tool_10_says_which_call_and_answer() -> None:
    v, = found(_call_answered(lambda i: error(i, -32603))(), "TOOL-10")
    assert v.strength == "SHOULD" and v.method == "tools/call"
    assert "'get_weather'" in v.detail and "'New York'" in v.detail and "-32603" in v.detail
    assert "get_weather" not in v.title  # one bucket per behaviour, whichever tool showed it


def test_tool_10_skips_a_probe_frame_its_expectation_judges() -> None:
    c = crafted()
    s, _ = c.exchange(tool_call(), error(2, -32603))
    expect = Expectation("as-valid", "TOOL-07", mutation="crafted")
    assert found(c, "TOOL-10", expectations={s: expect}) == []
    assert len(found(c, "TOOL-10")) == 1


def test_stack_trace_patterns() -> None:
    assert (stack_trace(PY_TRACE) or "").startswith("a Python traceback")
    assert (stack_trace(NODE_TRACE) or "").startswith("a Node.js stack trace")
    assert (stack_trace(JAVA_TRACE) or "").startswith("a JVM stack trace")
    two_py_frames = '  File "/a/b.py", line 1, in f\n  File "/a/c.py", line 2, in g\n'
    assert stack_trace(two_py_frames) is not None
    assert stack_trace('  File "/a/b.py", line 1, in f') is None  # one frame, no header
    assert stack_trace("Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>") is None
    assert stack_trace("    at fn (/a/x.js:1:2)") is None  # one Node frame
    assert stack_trace("\tat com.x.Y(Y.java:12)") is None  # one JVM frame


# --- RPC-01: a tools/call never answered names its tool and arguments (detail only) ---------------


def test_rpc_01_unanswered_tools_call_names_the_tool_and_its_arguments() -> None:
    c = crafted()
    c.send(tool_call(args={"location": "Atlantis"}))
    c.exit(1, "exited by itself")
    v, = [v for v in judge(c.transcript) if v.rule == "RPC-01"]
    assert v.title == "request never answered" and v.reaction == "the process exited before answering"
    assert "the process exited by itself before answering" in v.detail
    assert "tools/call of tool 'get_weather' with arguments {'location': 'Atlantis'}" in v.detail
    d = crafted()
    d.send(rq(2, "server/discover"))
    d.exit(1, "exited by itself")
    w, = [v for v in judge(d.transcript) if v.rule == "RPC-01"]
    assert w.detail == "the process exited by itself before answering"  # other methods as before
    assert w.signature() == v.signature()  # the bucket does not depend on the tool


# --- official examples next to a listing --------------------------------------------------------


def _examples(kind: str) -> list[tuple[str, Any]]:
    root = require_spec_dir() / "2026-07-28" / "examples" / kind
    return [(p.name, orjson.loads(p.read_bytes())) for p in sorted(root.glob("*.json"))]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_silent_on_official_examples_after_a_listing(transport: str) -> None:
    """Each CallToolResult example answers a valid call of the tool a ListToolsResult example
    listed; the unknown-tool and invalid-arguments errors answer what their messages name."""
    listed = _examples("ListToolsResult")
    assert listed
    results = _examples("CallToolResult") + [(n, e["result"]) for n, e in _examples("CallToolResultResponse")]
    for name, result in results:
        for _, page in listed:
            c = Crafter(transport)
            c.spawn()
            c.exchange(rq(1, "tools/list"), wire.build_result(1, page))
            c.exchange(tool_call(), wire.build_result(2, result))
            got = [v for v in judge(c.transcript) if v.rule in RULES]
            assert got == [], f"{name}: {got}"
    errors = dict(_examples("InvalidParamsError"))
    for name, args, tool in (("unknown-tool.json", {}, "invalid_tool_name"), ("invalid-tool-arguments.json", {},
                                                                               "calculate")):
        c = Crafter(transport)
        c.spawn()
        c.exchange(rq(1, "tools/list"), listing(1, TOOLS))
        example = errors[name]
        c.exchange(tool_call(name=tool, args=args), error(2, example["code"], example["message"]),
                   **({"status": 400} if transport == "http" else {}))
        got = [v for v in judge(c.transcript) if v.rule in RULES]
        assert got == [], f"{name}: {got}"


# --- real processes: each mutant, and the reference server ---------------------------------------


def _campaign(tmp_path: Path, target: str) -> tuple[int, list[dict[str, Any]]]:
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--target", target, "--properties", "valid", "--max-examples", "15", "--seed", "8",
                   "--shrink-time", "5", "--out", str(out), "--progress", "never", "--fail-on", "heuristic")
    return proc.returncode, orjson.loads((out / "findings.json").read_bytes())["findings"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_reference_server_draws_none_of_these_rules(transport: str, tmp_path: Path) -> None:
    """The valid property's coverage lists the tools, calls each listed one and an unknown one:
    the reference answers the unknown tool -32602, and its tools' own failures in isError results
    without a trace."""
    make = reference_stdio if transport == "stdio" else reference_http
    status, findings = _campaign(tmp_path, make(tmp_path / "s.sqlite3"))
    assert [f for f in findings if f["rule"] in RULES] == []
    assert status == 0, findings


# The direct probes of each mutant's one deviation (the style of tests/test_mutants_behaviour.py):
# True when the deviation is seen; the reference must give False.


def optional_argument_required(db: Path, bugs: tuple[str, ...]) -> bool:
    with StdioServer(db, *bugs, validate=False) as s:
        reply, _ = s.call(req(1, "tools/call", {"name": "list_events", "arguments": {"calendarId": "nope"}}))
        return reply.get("error", {}).get("code") == wire.INTERNAL_ERROR


def unknown_tool_is_error(db: Path, bugs: tuple[str, ...]) -> bool:
    with StdioServer(db, *bugs, validate=False) as s:
        reply, _ = s.call(req(1, "tools/call", {"name": "no_such_tool", "arguments": {}}))
        return reply.get("result", {}).get("isError") is True


def traceback_in_error(db: Path, bugs: tuple[str, ...]) -> bool:
    with StdioServer(db, *bugs, validate=False) as s:
        reply, _ = s.call(req(1, "tools/call", {"name": "echo", "arguments": {"text": 5}}))
        content = reply.get("result", {}).get("content") or [{}]
        return stack_trace(str(content[0].get("text", ""))) is not None


MUTANT_CHECKS: dict[str, Callable[[Path, tuple[str, ...]], bool]] = {
    "optional-argument-required": optional_argument_required,
    "unknown-tool-is-error": unknown_tool_is_error,
    "traceback-in-error": traceback_in_error,
}


@pytest.mark.parametrize("bug", list(MUTANT_CHECKS))
def test_mutant_shows_its_deviation_and_reference_does_not(bug: str, tmp_path: Path) -> None:
    check = MUTANT_CHECKS[bug]
    assert check(tmp_path / "mutant.sqlite3", (bug,)) is True
    assert check(tmp_path / "reference.sqlite3", ()) is False

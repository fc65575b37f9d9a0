"""Optional whitespace around MCP header values (RFC 9110 §5.5; issue 32 item 7).

The padding around a field value is not part of it, so `Mcp-Name:  echo ` names `echo` and a
server comparing it with the body must trim it first (HDR-03 refuses only a value that differs).
Here, on real processes: the reference trims it on every mirrored header and still refuses a
value that differs; the `hdr-value-whitespace` probe is silent on the reference and fires under
HDR-03 on the `header-whitespace-refused` mutant.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from reference_support import HttpServer, req
from test_oracle_reference import TIMEOUT, show

from mcp_tempest.fuzz.oracle import Violation, judge
from mcp_tempest.strategies.malformed import MUTATIONS, base_methods, malformed_case
from mcp_tempest.strategies.sampling import draw_examples
from mcp_tempest.targets import wire
from mcp_tempest.targets.http_driver import HttpConnection
from mcp_tempest.targets.reference.catalog import TOOLS
from mcp_tempest.targets.transcript import Transcript

PROBE = "hdr-value-whitespace"
LIST_EVENTS = next(t["inputSchema"] for t in TOOLS if t["name"] == "list_events")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with HttpServer(tmp_path_factory.mktemp("ows") / "reference.sqlite3") as server:
        yield server


@pytest.fixture(scope="module")
def mutant(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with HttpServer(tmp_path_factory.mktemp("ows") / "mutant.sqlite3", "header-whitespace-refused") as server:
        yield server


def _list_events(calendar: str = "chapter") -> dict:
    return req(1, "tools/call", {"name": "list_events", "arguments": {"calendarId": calendar, "limit": 5}})


@pytest.mark.parametrize("headers", [
    {"Mcp-Name": "  echo  "},
    {"Mcp-Name": "echo\t"},
    {"Mcp-Method": "tools/call "},
    {"MCP-Protocol-Version": wire.MODERN_VERSION + " \t "},
    {"Mcp-Name": " =?base64?ZWNobw==?= "},  # a sentinel padded too: trimmed, then decoded (HDR-06)
], ids=["name-both-sides", "name-tab", "method", "version", "name-sentinel"])
def test_reference_trims_optional_whitespace(reference: HttpServer, headers: dict[str, str]) -> None:
    resp = reference.post(req(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}), headers=headers)
    assert resp.status == 200 and "result" in resp.message, (resp.status, resp.message)


def test_reference_trims_mcp_param_values(reference: HttpServer) -> None:
    resp = reference.post(_list_events(), input_schema=LIST_EVENTS,
                          headers={"Mcp-Param-Calendar": "chapter \t", "Mcp-Param-Limit": " 5  "})
    assert resp.status == 200 and "result" in resp.message, (resp.status, resp.message)


@pytest.mark.parametrize(("msg", "headers"), [
    (req(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}), {"Mcp-Name": " echo x "}),
    (req(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}), {"Mcp-Method": " tools/list\t"}),
    (_list_events(), {"Mcp-Param-Calendar": " chapters ", "Mcp-Param-Limit": "5"}),
    (_list_events(), {"Mcp-Param-Calendar": "chapter", "Mcp-Param-Limit": " 6 "}),
], ids=["name", "method", "param-text", "param-number"])
def test_reference_still_refuses_a_padded_value_that_differs(reference: HttpServer, msg: dict,
                                                             headers: dict[str, str]) -> None:
    resp = reference.post(msg, headers=headers, input_schema=LIST_EVENTS)
    assert resp.status == 400 and resp.message["error"]["code"] == wire.HEADER_MISMATCH, resp.message


def _probe(url: str) -> list[Violation]:
    """The probe on every base method it applies to, each case judged by the oracle as a campaign would."""
    found: list[Violation] = []
    methods = [m for m in base_methods(PROBE) if m != "subscriptions/listen"]  # answered only when it ends
    assert "tools/call" in methods and "server/discover" in methods
    for k, method in enumerate(methods):
        for case in draw_examples(malformed_case(PROBE, method=method), 2, seed=k):
            headers = case.http_headers[0]
            assert any(v != v.strip(wire.OWS) for v in headers.values())  # it really is padded
            transcript = Transcript(f"{PROBE} {method}", "http")
            conn = HttpConnection(transcript, [url], timeout=TIMEOUT)
            try:
                index = conn.send(case.lines[0], headers=headers)
            finally:
                conn.close()
            violations = judge(transcript, expectations={index: case.expect.for_transport("http")})
            found += violations
            assert all(v.rule == "HDR-03" for v in violations), show(violations, transcript)
    return found


def test_probe_is_silent_on_the_reference(reference: HttpServer) -> None:
    assert MUTATIONS[PROBE].rule == "HDR-03" and MUTATIONS[PROBE].transport == "http"
    assert _probe(reference.url) == []


def test_probe_fires_on_a_server_refusing_padded_values(mutant: HttpServer) -> None:
    found = _probe(mutant.url)
    assert found and {(v.rule, v.strength) for v in found} == {("HDR-03", "MUST")}

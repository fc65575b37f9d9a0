"""Every malformed-frame mutation of `strategies.malformed`, sent to the reference server, judged
through its own `Expectation` (`case.expect`): the reference's reactions must satisfy every expectation and every
rule, and it must answer the liveness sentinel after each one.

This is where the oracle, the strategies' expectations and the reference server are held against
each other on real bytes. One server process per transport serves the whole module (stdio: the
process is rebound to a fresh transcript per case), so a case costs milliseconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_oracle_reference import SERVE, TIMEOUT, _listening_url, show

from mcp_tempest.fuzz.oracle import Expectation, judge
from mcp_tempest.strategies.malformed import (
    MUTATIONS,
    base_methods,
    malformed_case,
    malformed_retry,
    mutation_names,
)
from mcp_tempest.targets import wire
from mcp_tempest.targets.connection import Connection, is_response_to
from mcp_tempest.targets.http_driver import HttpConnection
from mcp_tempest.targets.stdio_driver import StdioConnection, start_stdio
from mcp_tempest.targets.transcript import Transcript

LONG_LIVED = {"subscriptions/listen"}  # answered only when the subscription ends


def _names(transport: str) -> list[str]:
    return [n for n in mutation_names(transport=transport) if MUTATIONS[n].base != "retry"]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("oracle-catalogue") / "reference.sqlite3"


@pytest.fixture(scope="module")
def stdio_server(db: Path) -> Iterator[StdioConnection]:
    conn = start_stdio(Transcript("setup", "stdio"), [*SERVE, "--db", str(db)], timeout=TIMEOUT)
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def http_url(db: Path) -> Iterator[str]:
    proc = subprocess.Popen([*SERVE, "--transport", "http", "--port", "0", "--db", str(db)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        yield _listening_url(proc)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(5)
        if proc.stderr is not None:
            proc.stderr.close()


def _send_case(conn: Connection, case: Any, transport: str) -> list[int]:
    if case.level == "pair" and transport == "stdio":
        # A pair is in flight at once: one write, as the fuzz properties send it (the reference
        # refuses a second request whose id is still unanswered in what it read, RPC-05).
        return conn.send_concurrently([line + case.terminator for line in case.lines])
    indices = []
    for k, line in enumerate(case.lines):
        if transport == "stdio":
            indices.append(conn.send(line + case.terminator))
        else:
            headers = case.http_headers[k] if case.http_headers else None
            indices.append(conn.send(line, headers=headers))
    return indices


def _sentinel(conn: Connection, rid: str) -> None:
    msg = wire.build_request(rid, "server/discover")
    index = conn.send(msg)
    if conn.transport == "stdio":
        conn.read_until(lambda e: is_response_to(e, rid), TIMEOUT, since=index, awaited=f"response to id {rid!r}")


def _run(conn: Connection, case: Any, transport: str) -> tuple[Transcript, dict[int, Expectation]]:
    indices = _send_case(conn, case, transport)
    _sentinel(conn, "sentinel")
    if transport == "stdio":
        conn.drain(quiet=0.05, timeout=0.5)
    return conn.transcript, {indices[0]: case.expect.for_transport(transport)}


def _case_strategy(name: str) -> st.SearchStrategy[Any]:
    methods = [m for m in base_methods(name) if m not in LONG_LIVED]
    return st.sampled_from(methods).flatmap(lambda m: malformed_case(name, method=m))


CASE_SETTINGS = settings(max_examples=2, derandomize=True, database=None, deadline=None,
                         suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("name", _names("stdio"))
def test_stdio_reaction_to_every_mutation(stdio_server: StdioConnection, name: str) -> None:
    @CASE_SETTINGS
    @given(case=_case_strategy(name))
    def check(case: Any) -> None:
        if not stdio_server.alive():
            pytest.fail(f"the reference server died before {name}")
        transcript = Transcript(f"reference ({name})", "stdio")
        stdio_server.rebind(transcript)
        transcript, expectations = _run(stdio_server, case, "stdio")
        found = judge(transcript, expectations=expectations)
        assert found == [], f"{name}: {case.lines!r}\n" + show(found, transcript)

    check()


@pytest.mark.parametrize("name", _names("http"))
def test_http_reaction_to_every_mutation(http_url: str, name: str) -> None:
    @CASE_SETTINGS
    @given(case=_case_strategy(name))
    def check(case: Any) -> None:
        transcript = Transcript(f"reference ({name})", "http")
        conn = HttpConnection(transcript, [http_url], timeout=TIMEOUT)
        try:
            transcript, expectations = _run(conn, case, "http")
        finally:
            conn.close()
        found = judge(transcript, expectations=expectations)
        assert found == [], f"{name}: {case.lines!r} {case.http_headers!r}\n" + show(found, transcript)

    check()


RETRY_NAMES = [n for n in mutation_names() if MUTATIONS[n].base == "retry"]


def _first_leg(conn: Connection, rid: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A real MRTR first leg on the reference: create_event without startsAt asks for it."""
    request = wire.build_request(rid, "tools/call", {"name": "create_event", "arguments": {"title": "standup"}},
                                 capabilities={"elicitation": {}})
    index = conn.send(request)
    if conn.transport == "stdio":
        conn.read_until(lambda e: is_response_to(e, rid), TIMEOUT, since=index, awaited=f"response to id {rid!r}")
    reply = next(e.message for e in conn.transcript.events[index:] if is_response_to(e, rid))
    assert reply["result"]["resultType"] == "input_required", reply
    return request, reply["result"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("name", RETRY_NAMES)
def test_reaction_to_every_retry_mutation(stdio_server: StdioConnection, http_url: str, transport: str,
                                          name: str) -> None:
    @CASE_SETTINGS
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        transcript = Transcript(f"reference ({name})", transport)  # type: ignore[arg-type]
        if transport == "stdio":
            stdio_server.rebind(transcript)
            conn: Connection = stdio_server
        else:
            conn = HttpConnection(transcript, [http_url], timeout=TIMEOUT)
        try:
            request, result = _first_leg(conn, "first-leg")
            case = data.draw(malformed_retry(name, request, result))
            transcript, expectations = _run(conn, case, transport)
        finally:
            if transport == "http":
                conn.close()
        found = judge(transcript, expectations=expectations)
        assert found == [], f"{name}: {case.lines!r}\n" + show(found, transcript)

    check()

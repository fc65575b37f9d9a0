"""The stdio and HTTP drivers against real processes and real sockets.

Small inline Python servers play the misbehaving parts (banner printers, sleepers, a 100 MB line
writer, a process that dies mid-frame, an SSE stream that never ends); the reference server
plays the well-behaved one. Every test asserts on what the transcript recorded, since that is
what the oracle and the replay files see.
"""

from __future__ import annotations

import http.server
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from process_support import default_sigint

from mcp_tempest.targets import wire
from mcp_tempest.targets.connect import Target
from mcp_tempest.targets.connection import is_response_to
from mcp_tempest.targets.http_driver import HttpConnection
from mcp_tempest.targets.processes import group_members, spawn
from mcp_tempest.targets.spawn_pool import SpawnPool, free_ports
from mcp_tempest.targets.stdio_driver import StdioConnection, StdioPool, start_stdio
from mcp_tempest.targets.target_spec import TargetSpec, default_target, parse_target
from mcp_tempest.targets.transcript import Transcript

PY = sys.executable
ROOT = Path(__file__).resolve().parent.parent

ECHO = textwrap.dedent(
    """
    import json, sys
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            print(json.dumps({"jsonrpc": "2.0", "error": {"code": -32700, "message": "parse"}}), flush=True)
            continue
        if isinstance(msg, dict) and "id" in msg:
            out = {"jsonrpc": "2.0", "id": msg["id"], "result": {"resultType": "complete", "method": msg.get("method")}}
            print(json.dumps(out), flush=True)
    """
)


def stdio(code: str, *args: str) -> list[str]:
    return [PY, "-c", code, *args]


def transcript(target: str = "test", transport: str = "stdio") -> Transcript:
    return Transcript(target=target, transport=transport)  # type: ignore[arg-type]


def kinds(tr: Transcript) -> list[str]:
    return [e.kind for e in tr.events]


def wait_gone(pgid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not group_members(pgid):
            return True
        time.sleep(0.02)
    return not group_members(pgid)


# --- target specs ---


def test_parse_target_forms() -> None:
    spec = parse_target("stdio:python -m srv --flag 'a b'")
    assert spec.kind == "stdio" and spec.argv == ("python", "-m", "srv", "--flag", "a b")
    assert spec.transport == "stdio"
    spec = parse_target("http://127.0.0.1:8123/mcp")
    assert spec.kind == "http" and spec.url == "http://127.0.0.1:8123/mcp" and spec.transport == "http"
    assert parse_target("http://[::1]:9/x").kind == "http"
    assert parse_target("http://localhost:9/x").kind == "http"
    spec = parse_target("http+spawn:srv --port {port} --json '{\"a\": 1}'")
    assert spec.command_for_port(4242) == ["srv", "--port", "4242", "--json", '{"a": 1}']
    assert parse_target(None).is_default and parse_target("").kind == "stdio"
    assert parse_target(None).argv[:3] == (PY, "-m", "mcp_tempest.targets.reference")


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("http://10.0.0.5:80/mcp", "non-loopback"),
        ("http://example.com/mcp", "non-loopback"),
        ("stdio:", "needs a command"),
        ("stdio:'unclosed", "does not parse"),
        ("http+spawn:srv --port 80", "{port}"),
        ("tcp://127.0.0.1:1", "unknown target"),
        ("http://127.0.0.1:0/mcp", "port 0"),
    ],
)
def test_parse_target_refuses(text: str, fragment: str) -> None:
    from mcp_tempest.targets.target_spec import TargetError

    with pytest.raises(TargetError) as info:
        parse_target(text)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_remote_host_allowed_only_on_request() -> None:
    assert parse_target("http://10.0.0.5:80/mcp", allow_remote=True).kind == "http"


# --- stdio ---


def test_stdio_request_and_clean_exit() -> None:
    tr = transcript()
    with start_stdio(tr, stdio(ECHO)) as conn:
        reply = conn.request(wire.build_request(7, "tools/list"), timeout=10)
        assert reply == {"jsonrpc": "2.0", "id": 7, "result": {"resultType": "complete", "method": "tools/list"}}
        pgid = conn.pgid
    assert kinds(tr) == ["spawn", "send", "recv", "closed", "exit"]
    send, recv, exit_ = tr.events[1], tr.events[2], tr.events[4]
    assert send.raw is not None and send.raw.endswith(b"\n") and send.raw.count(b"\n") == 1
    assert tr.responses_to(1) == [recv]
    assert exit_.status == 0 and exit_.note == "exited after stdin was closed"
    assert wait_gone(pgid)


def test_stdio_raw_bytes_go_out_unchanged_and_ids_match_by_type() -> None:
    tr = transcript()
    with start_stdio(tr, stdio(ECHO)) as conn:
        conn.send(b'{"jsonrpc":"2.0","id":"1","method":"x"}\n')
        got = conn.read_until(lambda e: e.kind == "recv", 10)
        assert got is not None and got.message["id"] == "1"
        # The string id "1" must not satisfy a wait for the integer id 1.
        assert conn.read_until(lambda e: is_response_to(e, 1), 0.3, since=0) is None
    assert tr.events[1].raw == b'{"jsonrpc":"2.0","id":"1","method":"x"}\n'
    assert any(e.kind == "timeout" for e in tr.events)


def test_stdio_noise_and_unterminated_frame_at_death() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.stdout.write("Server v1 starting...\\n\\n")
        sys.stdout.write('{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}\\n')
        sys.stdout.write('{"jsonrpc":"2.0","id":2,"res')
        sys.stdout.flush()
        sys.stderr.write("fatal: out of cheese\\n")
        sys.exit(7)
        """
    )
    tr = transcript()
    conn = start_stdio(tr, stdio(code))
    started = time.monotonic()
    assert conn.read_until(lambda e: is_response_to(e, 2), 10) is None
    assert time.monotonic() - started < 5, "EOF must end the wait, not the deadline"
    assert not conn.alive()
    conn.close()
    noise = [e for e in tr.events if e.kind == "noise"]
    assert [n.raw for n in noise] == [b"Server v1 starting...", b"", b'{"jsonrpc":"2.0","id":2,"res']
    assert noise[1].note == "empty line"
    assert "unterminated line at EOF" in noise[2].note
    assert [e.message["id"] for e in tr.received()] == [1]
    exit_ = next(e for e in tr.events if e.kind == "exit")
    assert exit_.status == 7 and exit_.note == "exited by itself"
    stderr = next(e for e in tr.events if e.kind == "stderr")
    assert b"out of cheese" in (stderr.raw or b"")


HUGE_LINE = textwrap.dedent(
    """
    import sys
    out = sys.stdout.buffer
    block = b"x" * (1 << 20)
    for _ in range(256):
        out.write(block)
    out.write(b"\\n")
    out.write(b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}\\n')
    out.flush()
    sys.stdin.read()
    """
)

MEASURE = textwrap.dedent(
    """
    import json, sys
    from mcp_tempest.targets.stdio_driver import start_stdio
    from mcp_tempest.targets.transcript import Transcript
    from mcp_tempest.targets.connection import is_response_to
    tr = Transcript(target="t", transport="stdio")
    with start_stdio(tr, [sys.executable, "-c", sys.argv[1]], timeout=30) as conn:
        got = conn.read_until(lambda e: is_response_to(e, 1), 30)
    print(json.dumps({
        "kinds": [e.kind for e in tr.events],
        "oversize": [e.note for e in tr.events if e.kind == "oversize"],
        "got": got is not None,
        "peak_kb": next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")),
    }))
    """
)


def test_stdio_256mb_line_is_counted_not_buffered() -> None:
    out = subprocess.run(
        [PY, "-c", MEASURE, HUGE_LINE], capture_output=True, timeout=120, check=True, cwd=ROOT
    )
    report = json.loads(out.stdout)
    assert report["got"], report
    assert report["oversize"] == [f"{256 * (1 << 20)} bytes (cap {16 * (1 << 20)})"]
    assert report["kinds"][:2] == ["spawn", "oversize"] and "recv" in report["kinds"]
    # 256 MiB went through; the harness held at most the 16 MiB cap and its read buffer, far below
    # the line itself. The peak is VmHWM, this process's own high-water mark: ru_maxrss would not
    # do, since Linux carries the peak of the process that spawned it (pytest, 270-330 MB late in
    # a CI run) across fork and exec into the child's ru_maxrss.
    assert report["peak_kb"] < 96 * 1024, report["peak_kb"]


def test_stdio_small_cap_and_unterminated_oversize() -> None:
    code = 'import sys; sys.stdout.write("y" * 5000); sys.stdout.flush()'
    tr = transcript()
    with start_stdio(tr, stdio(code), line_cap=1000) as conn:
        conn.drain(quiet=0.5, timeout=5)
    over = [e for e in tr.events if e.kind == "oversize"]
    assert len(over) == 1 and over[0].note.startswith("5000 bytes (cap 1000)")
    assert "unterminated" in over[0].note and over[0].raw == b"y" * 256


def test_stdio_timeout_then_sigterm_reaps_the_whole_group() -> None:
    code = textwrap.dedent(
        """
        import subprocess, sys, time
        child = subprocess.Popen(["sleep", "300"])
        print(child.pid, file=sys.stderr, flush=True)
        time.sleep(300)
        """
    )
    tr = transcript()
    conn = start_stdio(tr, stdio(code), close_grace=0.3)
    started = time.monotonic()
    assert conn.request(wire.build_request(1, "tools/list"), timeout=0.5) is None
    assert 0.45 < time.monotonic() - started < 3
    deadline = time.monotonic() + 5
    while len(group_members(conn.pgid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(group_members(conn.pgid)) == 2  # the server and its grandchild
    conn.close()
    assert wait_gone(conn.pgid, 3)
    timeout = next(e for e in tr.events if e.kind == "timeout")
    assert timeout.note == "response to id 1"
    exit_ = next(e for e in tr.events if e.kind == "exit")
    assert exit_.status == -signal.SIGTERM and "SIGTERM" in exit_.note


def test_stdio_sigterm_ignored_escalates_to_sigkill() -> None:
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('{}', flush=True); time.sleep(300)"
    tr = transcript()
    conn = start_stdio(tr, stdio(code), close_grace=0.2)
    assert conn.read_until(lambda e: e.kind == "recv", 10) is not None  # handler installed
    started = time.monotonic()
    conn.close()
    assert time.monotonic() - started < 5
    exit_ = next(e for e in tr.events if e.kind == "exit")
    assert exit_.status == -signal.SIGKILL and exit_.note == "ended by SIGKILL to its group"
    assert wait_gone(conn.pgid, 2)


def test_stdio_broken_pipe_and_stalled_write_are_recorded() -> None:
    closes_stdin = "import os, sys, time; os.close(0); print('{}', flush=True); time.sleep(300)"
    tr = transcript()
    with start_stdio(tr, stdio(closes_stdin), close_grace=0.1) as conn:
        conn.read_until(lambda e: e.kind == "recv", 10)
        conn.send(wire.build_request(1, "tools/list"))
    assert any(e.kind == "error" and "broken pipe" in e.note for e in tr.events)

    never_reads = "import time; time.sleep(300)"
    tr = transcript()
    with start_stdio(tr, stdio(never_reads), timeout=0.5, close_grace=0.1) as conn:
        started = time.monotonic()
        conn.send(b"z" * (4 << 20))
        assert time.monotonic() - started < 3
    stalled = next(e for e in tr.events if e.kind == "timeout")
    assert stalled.note.startswith("write stalled")


def test_stdio_send_concurrently_puts_both_in_flight() -> None:
    tr = transcript()
    with start_stdio(tr, stdio(ECHO)) as conn:
        first, second = conn.send_concurrently([wire.build_request(1, "a"), wire.build_request(1, "b")])
        assert conn.read_until(lambda e: e.kind == "recv" and e.message["result"]["method"] == "b", 10)
    assert tr.events[first].kind == tr.events[second].kind == "send"
    assert [e.message["result"]["method"] for e in tr.received()] == ["a", "b"]


def test_two_processes_in_one_transcript_get_their_own_numbers() -> None:
    tr = transcript()
    with start_stdio(tr, stdio(ECHO)) as a, start_stdio(tr, stdio(ECHO)) as b:
        assert (a.proc, b.proc) == (0, 1)
        a.request(wire.build_request(1, "x"), timeout=10)
        b.request(wire.build_request(1, "y"), timeout=10)
    assert tr.processes() == [0, 1]
    by_proc = {e.proc: e.message["result"]["method"] for e in tr.received()}
    assert by_proc == {0: "x", 1: "y"}


def test_stdio_pool_hides_start_up_cost() -> None:
    slow_start = "import time; time.sleep(2.0)\n" + ECHO  # wide margins: a loaded CI machine
    spec = parse_target(f"stdio:{PY} -c {shlex.quote(slow_start)}")

    def first_answer(conn: StdioConnection) -> float:
        started = time.monotonic()
        assert conn.request(wire.build_request(1, "x"), timeout=10) is not None
        return time.monotonic() - started

    with StdioPool(spec, size=1) as pool:
        cold = pool.take(transcript())
        cold_latency = first_answer(cold)
        cold.close()
        time.sleep(2.5)  # the spare started while the first one worked
        warm = pool.take(transcript())
        warm_latency = first_answer(warm)
        warm.close()
        spare_pids = [p.pid for p in pool._spares]
    assert cold_latency >= 1.0 and warm_latency < 1.0, (cold_latency, warm_latency)
    assert pool.taken == 2
    assert all(wait_gone(pid, 3) for pid in spare_pids)


def test_target_shared_process_is_reused_and_rebound() -> None:
    spec = parse_target(f"stdio:{PY} -c {shlex.quote(ECHO)}")
    with Target(spec, prestart=0) as target:
        t1, t2 = transcript(), transcript()
        c1 = target.connect(t1, fresh=False)
        c1.request(wire.build_request(1, "x"), timeout=10)
        c1.close()  # detaches only
        c2 = target.connect(t2, fresh=False)
        assert c2 is c1 and c2.alive()
        assert c2.request(wire.build_request(2, "y"), timeout=10)["id"] == 2
        pgid = c2.pgid
    assert [e.kind for e in t2.events][:1] == ["spawn"] and "reused" in t2.events[0].note
    assert not any(e.kind == "recv" and e.message["id"] == 1 for e in t2.events)
    assert wait_gone(pgid, 3)


def test_a_rebound_process_says_when_an_earlier_case_sent_it_a_frame_without_a_modern_claim() -> None:
    """The spawn note of a warm process carries "era-open" once any earlier case sent it a request
    claiming no 2026-07-28 version (a dual-era server may have opened it in the 2025 era; the later
    transcript cannot show why), and keeps it for every later case; modern frames never set it."""
    spec = parse_target(f"stdio:{PY} -c {shlex.quote(ECHO)}")
    claimless = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    with Target(spec, prestart=0) as target:
        notes = []
        for frame in (wire.build_request(1, "x"), claimless, wire.build_request(3, "y"), wire.build_request(4, "z")):
            t = transcript()
            conn = target.connect(t, fresh=False)
            assert conn.request(frame, timeout=10) is not None
            conn.close()
            notes.append(t.events[0].note)
    assert "(reused)" not in notes[0]
    assert "(reused) outstanding=" in notes[1]  # after one modern request: no era question
    assert all("(reused) era-open outstanding=" in n for n in notes[2:]), notes


HARNESS = textwrap.dedent(
    """
    import sys, time
    from mcp_tempest.targets.stdio_driver import start_stdio
    from mcp_tempest.targets.transcript import Transcript
    code = "import subprocess, time; subprocess.Popen(['sleep', '300']); time.sleep(300)"
    conn = start_stdio(Transcript(target="t", transport="stdio"), [sys.executable, "-c", code])
    print(conn.pgid, flush=True)
    time.sleep(300)
    """
)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_harness_leaves_no_process(sig: int) -> None:
    # SIGINT's disposition is set for the child: a suite started as a background job inherits it ignored.
    harness = subprocess.Popen(
        [PY, "-c", HARNESS], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, preexec_fn=default_sigint
    )
    try:
        assert harness.stdout is not None
        pgid = int(harness.stdout.readline())
        deadline = time.monotonic() + 10
        while len(group_members(pgid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(group_members(pgid)) == 2
        harness.send_signal(sig)
        harness.wait(timeout=15)
        assert wait_gone(pgid, 5), group_members(pgid)
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()


def test_spawn_of_missing_command_is_one_line() -> None:
    from mcp_tempest.targets.processes import SpawnError

    with pytest.raises(SpawnError, match=r"^command not found: /no/such/server$"):
        spawn(["/no/such/server"])


def test_reference_server_over_stdio() -> None:
    spec = default_target()
    with Target(spec) as target:
        tr = target.new_transcript()
        with target.connect(tr) as conn:
            reply = conn.request(wire.build_request(1, "server/discover"), timeout=20)
            assert reply is not None and reply["result"]["resultType"] == "complete"
            assert wire.MODERN_VERSION in reply["result"]["supportedVersions"]
    assert not any(e.kind == "noise" for e in tr.events)
    assert next(e for e in tr.events if e.kind == "exit").status == 0


# --- HTTP against a small in-process server ---


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[dict] = []
    in_flight_barrier: threading.Barrier

    def log_message(self, *args: object) -> None:
        pass

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def _send(self, status: int, body: bytes, ctype: str | None = "application/json") -> None:
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _sse_start(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def do_GET(self) -> None:
        self._send(405, b"", None)

    def do_DELETE(self) -> None:
        self._send(405, b"", None)

    def do_POST(self) -> None:
        body = self._body()
        type(self).seen.append({"path": self.path, "headers": dict(self.headers.items()),
                                "port": self.client_address[1], "body": body})
        msg = orjson.loads(body) if body.strip().startswith(b"{") else None
        rid = msg.get("id") if isinstance(msg, dict) else None
        result = {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete"}}
        if self.path == "/json":
            if isinstance(msg, dict) and "id" not in msg:
                self._send(202, b"", None)
            else:
                self._send(200, orjson.dumps(result))
        elif self.path == "/sse":
            self._sse_start()
            progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}
            self._chunk(wire.encode_sse(progress) + b": keep-alive\n\n" + b"data: not json\n\n")
            self._chunk(wire.encode_sse(result, "e1"))
            self._chunk(b"")
        elif self.path == "/sse-open":
            self._sse_start()
            self._chunk(wire.encode_sse(result))
            time.sleep(3)
        elif self.path == "/listen":
            self._sse_start()
            ack = {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                   "params": {"_meta": {wire.META_SUBSCRIPTION_ID: rid}, "notifications": {}}}
            try:
                self._chunk(wire.encode_sse(ack))
                for _ in range(200):
                    time.sleep(0.05)
                    self._chunk(b": ping\n\n")
            except OSError:
                type(self).seen.append({"path": "/listen", "disconnected": True})
        elif self.path == "/pair":
            try:
                type(self).in_flight_barrier.wait()
                self._send(200, orjson.dumps(result))
            except threading.BrokenBarrierError:
                self._send(500, b'{"error": "only one request was in flight"}')
        elif self.path == "/big":
            self._send(200, b'"' + b"a" * (3 << 20) + b'"')
        else:
            self._send(404, b"<html>not here</html>", "text/html")


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # resets from the sockets the tests drop on purpose


@pytest.fixture
def http_server() -> Iterator[str]:
    _Handler.seen = []
    _Handler.in_flight_barrier = threading.Barrier(2, timeout=1.0)
    server = _QuietServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_http_json_keepalive_and_exact_headers(http_server: str) -> None:
    tr = transcript(http_server, "http")
    with HttpConnection(tr, [http_server + "/json"]) as conn:
        for i in range(3):
            assert conn.request(wire.build_request(i, "tools/list"))["id"] == i
        wrong = {"Content-Type": "text/plain", "Mcp-Method": "not/the/method", "X-Odd": "ünï"}
        index = conn.send(wire.build_request(9, "tools/list"), headers=wrong)
        note = conn.send(wire.build_notification("notifications/cancelled", {"requestId": 1}))
    ports = {s["port"] for s in _Handler.seen}
    assert len(ports) == 1, "sequential requests should reuse one keep-alive socket"
    last = _Handler.seen[3]["headers"]
    assert last["Content-Type"] == "text/plain" and last["Mcp-Method"] == "not/the/method"
    assert "Accept" not in last and "MCP-Protocol-Version" not in last
    assert last["X-Odd"].encode("latin-1") == "ünï".encode()
    sent = tr.events[index]
    assert sent.headers["Mcp-Method"] == "not/the/method" and sent.note == "POST /json"
    first = _Handler.seen[0]["headers"]
    assert first["Mcp-Method"] == "tools/list" and first["MCP-Protocol-Version"] == wire.MODERN_VERSION
    recv = conn.events_for(index)
    assert [e.kind for e in recv] == ["recv"] and recv[0].status == 200
    assert recv[0].headers["content-type"] == "application/json"
    assert [(e.kind, e.status) for e in conn.events_for(note)] == [("http", 202)]


def test_http_sse_is_read_incrementally(http_server: str) -> None:
    tr = transcript(http_server, "http")
    with HttpConnection(tr, [http_server + "/sse"]) as conn:
        index = conn.send(wire.build_request(5, "tools/call", {"name": "x"}))
    events = conn.events_for(index)
    assert [e.kind for e in events] == ["recv", "noise", "recv"]
    assert events[0].message["method"] == "notifications/progress"
    assert events[1].raw == b"not json"
    assert events[2].message["id"] == 5 and events[2].note == "sse id=e1"
    assert all(e.status == 200 and e.ref == index for e in events)


def test_http_sse_left_open_after_response_costs_only_the_linger(http_server: str) -> None:
    tr = transcript(http_server, "http")
    with HttpConnection(tr, [http_server + "/sse-open"], sse_linger=0.2) as conn:
        started = time.monotonic()
        reply = conn.request(wire.build_request(3, "tools/list"), timeout=10)
        elapsed = time.monotonic() - started
    assert reply is not None and reply["id"] == 3
    assert elapsed < 1.5
    assert any(e.kind == "timeout" and "still open" in e.note for e in tr.events)


def test_http_listen_stream_in_background_and_cancel(http_server: str) -> None:
    tr = transcript(http_server, "http")
    with HttpConnection(tr, [http_server + "/listen"]) as conn:
        stream = conn.open_stream(wire.build_request("L1", "subscriptions/listen", {"notifications": {}}))
        ack = stream.wait_for(lambda e: e.kind == "recv", 5)
        assert ack is not None and ack.message["params"]["_meta"][wire.META_SUBSCRIPTION_ID] == "L1"
        assert not stream.done
        started = time.monotonic()
        stream.close()
        assert stream.done and time.monotonic() - started < 2
    assert any(e.kind == "closed" and "cancellation" in e.note for e in stream.events())
    deadline = time.monotonic() + 5
    while not any(s.get("disconnected") for s in _Handler.seen) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any(s.get("disconnected") for s in _Handler.seen), "the server must see the disconnect"


def test_http_send_concurrently_has_both_in_flight(http_server: str) -> None:
    tr = transcript(http_server, "http")
    with HttpConnection(tr, [http_server + "/pair"]) as conn:
        # Sequential sends cannot meet at the server's barrier: the first one gets a 500.
        conn.send(wire.build_request(1, "tools/list"), timeout=5)
        assert tr.events[-1].status == 500
        _Handler.in_flight_barrier = threading.Barrier(2, timeout=5.0)
        a, b = conn.send_concurrently([wire.build_request(1, "tools/list"), wire.build_request(1, "tools/list")])
    assert [e.status for e in conn.events_for(a)] == [200]
    assert [e.status for e in conn.events_for(b)] == [200]


def test_http_405_html_oversize_and_refused(http_server: str) -> None:
    tr = transcript(http_server, "http")
    with HttpConnection(tr, [http_server + "/json"], body_cap=1 << 20) as conn:
        get = conn.send(None, http_method="GET")
        delete = conn.send(None, http_method="DELETE")
        html = conn.send(wire.build_request(1, "x"), path="/nowhere")
        big = conn.send(wire.build_request(2, "x"), path="/big")
    assert [(e.kind, e.status) for e in conn.events_for(get)] == [("http", 405)]
    assert tr.events[get].headers == {"Host": http_server.removeprefix("http://"), "Accept": "text/event-stream"}
    assert [(e.kind, e.status) for e in conn.events_for(delete)] == [("http", 405)]
    (page,) = conn.events_for(html)
    assert page.kind == "http" and page.status == 404 and "not JSON (text/html)" in page.note
    (over,) = conn.events_for(big)
    assert over.kind == "oversize" and "cap 1048576" in over.note

    port = free_ports(1)[0]
    tr = transcript("refused", "http")
    with HttpConnection(tr, [f"http://127.0.0.1:{port}/mcp"]) as conn:
        assert conn.request(wire.build_request(1, "x")) is None
        assert not conn.alive()
    assert [e.kind for e in tr.events] == ["spawn", "send", "error"]
    assert tr.events[-1].note.startswith("connection refused")


def test_http_bare_cr_lf_header_is_refused_not_sent(http_server: str) -> None:
    tr = transcript(http_server, "http")
    with HttpConnection(tr, [http_server + "/json"]) as conn:
        index = conn.send(wire.build_request(1, "x"), headers={"Mcp-Method": "a\r\nInjected: 1"})
    (err,) = conn.events_for(index)
    assert err.kind == "error" and err.note.startswith("request not sent")
    assert _Handler.seen == []


# --- HTTP against the reference server on spawned instances ---


def test_spawn_pool_reference_instances_round_robin_and_stop() -> None:
    spec = default_target("http")
    assert spec.kind == "http+spawn"
    with SpawnPool(spec, instances=2, ready_timeout=30) as pool:
        pgids = [p.pgid for p in pool.processes if p is not None]
        assert len(set(pool.urls)) == 2
        tr = Transcript(target=spec.text, transport="http")
        conn = HttpConnection(tr, pool.urls)
        for i in range(4):
            reply = conn.request(wire.build_request(i, "tools/list"))
            assert reply is not None and reply["result"]["resultType"] == "complete"
        assert [e.proc for e in tr.sent()] == [0, 1, 0, 1]
        # The same endpoint through a plain http:// target.
        plain = Target(parse_target(pool.urls[1]))
        with plain.connect() as c2:
            assert c2.request(wire.build_request(1, "server/discover")) is not None
        conn.close()
    assert all(wait_gone(pgid, 3) for pgid in pgids)


def test_target_http_spawn_connect_and_close() -> None:
    spec = default_target("http")
    with Target(spec, instances=1) as target:
        with target.connect() as conn:
            assert isinstance(conn, HttpConnection)
            reply = conn.request(wire.build_request(1, "server/discover"))
            assert reply is not None and "supportedVersions" in reply["result"]
        assert target.pool is not None
        pgids = [p.pgid for p in target.pool.processes if p is not None]
    assert pgids and all(wait_gone(pgid, 3) for pgid in pgids)


def test_spec_is_hashable_and_transcript_is_made_for_it() -> None:
    spec = TargetSpec("stdio", "stdio:x", argv=("x",))
    assert {spec: 1}[spec] == 1
    tr = spec.new_transcript()
    assert tr.target == "stdio:x" and tr.transport == "stdio"


def test_stdio_exit_status_visible_without_reaping() -> None:
    proc = spawn(stdio("import sys; sys.exit(4)"))
    try:
        assert proc.wait_exit(10) == 4
        assert os.path.exists(f"/proc/{proc.pid}")  # still a zombie: the group id stays ours
    finally:
        assert proc.reap() == 4
    assert not os.path.exists(f"/proc/{proc.pid}") or not group_members(proc.pgid)


def test_loopback_socket_helper_gives_distinct_ports() -> None:
    ports = free_ports(3)
    assert len(set(ports)) == 3
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_http_10_server_that_closes_after_each_response_is_always_read_whole() -> None:
    """http.client closes a "will close" connection before its body is read; the deadline reader
    must keep the fd open until the body is (it raced into EBADF on about one request in four)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from mcp_tempest.targets.http_driver import HttpConnection

    class Handler(BaseHTTPRequestHandler):  # HTTP/1.0: the connection closes after each response
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
    try:
        missing = 0
        for _ in range(40):
            conn = HttpConnection(Transcript(url, "http"), [url], timeout=10)
            try:
                missing += conn.request({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                                        timeout=10) is None
            finally:
                conn.close()
        assert missing == 0
    finally:
        server.shutdown()
        server.server_close()

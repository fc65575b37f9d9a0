"""`--header 'NAME: VALUE'`: sent on every HTTP request, `${VAR}` expanded at send time, and the
secret never written: not in transcripts, reports or repro files."""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
import pytest
from fuzz_support import reference_http, run_cli

from mcp_tempest.targets import extra_headers
from mcp_tempest.targets.http_driver import HttpConnection
from mcp_tempest.targets.transcript import Transcript

SECRET = "s3cret-7f1d"


@pytest.fixture
def recording_server():
    seen: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            seen.append(dict(self.headers))
            body = b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp", seen
    finally:
        server.shutdown()
        server.server_close()


def test_the_header_is_sent_expanded_and_recorded_as_its_template(recording_server, monkeypatch):
    url, seen = recording_server
    monkeypatch.setenv("TEMPEST_TEST_TOKEN", SECRET)
    monkeypatch.delenv(extra_headers.HEADERS_ENV, raising=False)
    extra_headers.configure(["Authorization: Bearer ${TEMPEST_TEST_TOKEN}", "X-Api-Key: literal-key",
                             "X-Tenant: blue"])
    transcript = Transcript(url, "http")
    conn = HttpConnection(transcript, [url], timeout=10)
    try:
        answer = conn.request({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, timeout=10)
    finally:
        conn.close()
    assert answer is not None and answer["result"]["resultType"] == "complete"
    assert seen and seen[0]["Authorization"] == f"Bearer {SECRET}" and seen[0]["X-Api-Key"] == "literal-key"
    sent = next(e for e in transcript.to_json()["events"] if e["kind"] == "send")
    assert sent["headers"]["Authorization"] == "Bearer ${TEMPEST_TEST_TOKEN}"
    assert sent["headers"]["X-Api-Key"] == extra_headers.REDACTED and sent["headers"]["X-Tenant"] == "blue"
    assert SECRET.encode() not in orjson.dumps(transcript.to_json())


def test_bad_headers_are_one_line_errors(monkeypatch):
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    for text, message in [("no colon", "expected 'NAME: VALUE'"), ("Host: x", "sets this header itself"),
                          ("Authorization: Bearer ${NOT_SET_ANYWHERE}", "NOT_SET_ANYWHERE is not set")]:
        with pytest.raises(extra_headers.HeaderError, match=message):
            extra_headers.configure([text], environ={})


def test_a_campaign_with_a_bearer_token_writes_it_nowhere(tmp_path: Path):
    target = reference_http(tmp_path / "db.sqlite3", "cross-wired-ids")
    proc = run_cli("fuzz", "--target", target, "--properties", "ids", "--max-examples", "12", "--seed", "4",
                   "--no-database", "--out", str(tmp_path / "out"), "--progress", "never",
                   "--header", "Authorization: Bearer ${TEMPEST_TEST_TOKEN}",
                   env={"TEMPEST_TEST_TOKEN": SECRET})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert any(p.suffix == ".json" and "repro" in p.parts for p in written)
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), f"the token leaked into {path.name}"
    repro = next(p for p in written if "repro" in p.parts)
    assert b"Bearer ${TEMPEST_TEST_TOKEN}" in repro.read_bytes()
    replay = run_cli("replay", str(repro), "--header", "Authorization: Bearer ${TEMPEST_TEST_TOKEN}",
                     env={"TEMPEST_TEST_TOKEN": SECRET}, timeout=120)
    assert replay.returncode == 1 and "still fails" in replay.stdout, replay.stdout + replay.stderr
    assert SECRET not in replay.stdout + replay.stderr


# --- probe and load: a recording proxy in front of a real reference server ---

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def recording_proxy(tmp_path: Path) -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A real reference HTTP server behind a proxy that records every request's headers: the
    proxy answers exactly what the server answered, so probe and load see a correct server."""
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "mcp_tempest.targets.reference", "--transport", "http", "--port", str(port),
                               "--db", str(tmp_path / "ref.sqlite3")], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    seen: list[dict[str, str]] = []

    class Proxy(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
            seen.append(dict(self.headers))
            upstream = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
            try:
                upstream.request(self.command, self.path, body=body or None,
                                 headers={k: v for k, v in self.headers.items() if k.lower() != "connection"})
                resp = upstream.getresponse()
                data = resp.read()
            finally:
                upstream.close()
            self.send_response(resp.status)
            for name, value in resp.getheaders():
                if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_POST = do_GET = do_DELETE = _forward  # noqa: N815 - http.server's names

        def log_message(self, *args: object) -> None:
            pass

    proxy = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    proxy.daemon_threads = True
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{proxy.server_address[1]}/mcp", seen
    finally:
        proxy.shutdown()
        proxy.server_close()
        server.terminate()
        server.wait(timeout=10)


def test_probe_sends_the_header_and_prints_no_secret(recording_proxy, tmp_path: Path) -> None:
    url, seen = recording_proxy
    proc = run_cli("probe", "--target", url, "--json", "--header", "Authorization: Bearer ${TEMPEST_TEST_TOKEN}",
                   "--header", "X-Tenant: blue", env={"TEMPEST_TEST_TOKEN": SECRET}, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert orjson.loads(proc.stdout)["era"], proc.stdout
    sent = seen  # every request the target got, whatever its method
    assert sent and all(h.get("Authorization") == f"Bearer {SECRET}" and h.get("X-Tenant") == "blue" for h in sent), seen
    assert SECRET not in proc.stdout + proc.stderr


def test_probe_without_the_header_sends_none(recording_proxy) -> None:
    url, seen = recording_proxy
    proc = run_cli("probe", "--target", url, "--json", env={"TEMPEST_TEST_TOKEN": SECRET}, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert seen and not any("Authorization" in h for h in seen)


def test_load_sends_the_header_on_every_request_and_writes_it_nowhere(recording_proxy, tmp_path: Path) -> None:
    url, seen = recording_proxy
    out = tmp_path / "out"
    proc = run_cli("load", "--target", url, "--users", "2", "--run-time", "2s", "--check-every", "1",
                   "--out", str(out), "--header", "Authorization: Bearer ${TEMPEST_TEST_TOKEN}",
                   env={"TEMPEST_TEST_TOKEN": SECRET}, timeout=120)
    written = [p for p in out.rglob("*") if p.is_file()]
    assert proc.returncode == 0, proc.stdout + proc.stderr + "".join(
        p.read_text(errors="replace")[-2000:] for p in written if p.name == "locust.log")
    sent = seen  # every request the target got, whatever its method
    assert len(sent) > 20, len(sent)  # the probe's and every Locust user's requests
    missing = [h for h in sent if h.get("Authorization") != f"Bearer {SECRET}"]
    assert not missing, missing[:3]
    assert written and (out / "summary.json").is_file()
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), f"the token leaked into {path.name}"
    assert SECRET not in proc.stdout + proc.stderr


@pytest.mark.parametrize("command", ["probe", "load"])
def test_a_bad_header_is_one_line_and_exit_2(command: str) -> None:
    proc = run_cli(command, "--target", "http://127.0.0.1:9/mcp", "--header", "Authorization: Bearer ${NOT_SET_X1}",
                   timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "NOT_SET_X1 is not set" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


CRLF_SECRET = "s3cr3t-crlf-value"


@pytest.mark.parametrize("command", ["probe", "fuzz", "load", "replay"])
@pytest.mark.parametrize("how", ["literal", "variable", "no-colon"])
def test_a_header_with_a_line_break_is_one_line_exit_2_naming_the_header_never_the_value(
        command: str, how: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TEMPEST_CRLF_TOKEN", f"Bearer {CRLF_SECRET}\r\nX-Evil: 1")
    header = {"literal": f"Authorization: Bearer {CRLF_SECRET}\r\nX-Evil: 1",
              "variable": "Authorization: ${TEMPEST_CRLF_TOKEN}",
              "no-colon": f"Bearer {CRLF_SECRET}"}[how]
    args = ["--target", "http://127.0.0.1:9/mcp", "--header", header]
    if command == "replay":
        repro = tmp_path / "r.json"
        repro.write_text('{"target": "http://127.0.0.1:9/mcp", "case": {"property": "framing", "steps": []}}')
        args = [str(repro), *args]
    if command == "fuzz":
        args += ["--out", str(tmp_path / "out"), "--max-examples", "1"]
    proc = run_cli(command, *args, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert CRLF_SECRET not in proc.stdout + proc.stderr
    if how != "no-colon":
        assert "Authorization" in lines[0] and "CR, LF or NUL" in lines[0], lines[0]
        assert ("TEMPEST_CRLF_TOKEN" in lines[0]) == (how == "variable"), lines[0]

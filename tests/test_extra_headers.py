"""`--header 'NAME: VALUE'`: sent on every HTTP request, `${VAR}` expanded at send time, and the
secret never written: not in transcripts, reports or repro files."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
import pytest
from fuzz_support import reference_http, run_cli

from targets import extra_headers
from targets.http_driver import HttpConnection
from targets.transcript import Transcript

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
    monkeypatch.setenv("GAUNTLET_TEST_TOKEN", SECRET)
    monkeypatch.delenv(extra_headers.HEADERS_ENV, raising=False)
    extra_headers.configure(["Authorization: Bearer ${GAUNTLET_TEST_TOKEN}", "X-Api-Key: literal-key",
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
    assert sent["headers"]["Authorization"] == "Bearer ${GAUNTLET_TEST_TOKEN}"
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
                   "--header", "Authorization: Bearer ${GAUNTLET_TEST_TOKEN}",
                   env={"GAUNTLET_TEST_TOKEN": SECRET})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert any(p.suffix == ".json" and "repro" in p.parts for p in written)
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), f"the token leaked into {path.name}"
    repro = next(p for p in written if "repro" in p.parts)
    assert b"Bearer ${GAUNTLET_TEST_TOKEN}" in repro.read_bytes()
    replay = run_cli("replay", str(repro), "--header", "Authorization: Bearer ${GAUNTLET_TEST_TOKEN}",
                     env={"GAUNTLET_TEST_TOKEN": SECRET}, timeout=120)
    assert replay.returncode == 1 and "still fails" in replay.stdout, replay.stdout + replay.stderr
    assert SECRET not in replay.stdout + replay.stderr

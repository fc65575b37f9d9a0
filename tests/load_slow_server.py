"""A tiny, deliberately slow MCP server (2026-07-28, Streamable HTTP, JSON replies) for load tests.

Why a server of its own: the load harness must be shown to count real timeouts exactly and to
see a stall in its percentiles, and the reference server is fast and correct by design. This one
is correct too (one tool, `echo`), but its timing is scripted from the command line:

- `--delay-ms D`: every reply waits D ms (so the waits of a user add up past its timeout);
- `--slow-first N --slow-ms M`: the first N `tools/call` requests wait M ms instead (a load run
  with a shorter `--timeout` must report exactly N timeouts);
- `--workers W`: at most W requests are served at once (the rest queue), so with `--delay-ms D`
  the server's capacity is W * 1000 / D requests per second: a knee the capacity search must find;
- `--stall-after N --stall-s S`: once N `tools/call` requests have arrived, every request
  arriving in the next S seconds is held until that window ends (a whole-server stall).

`GET /stats` answers the counters as JSON. Standard library only; a thread per connection.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOL = {
    "name": "echo",
    "description": "Returns its text.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


class State:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.lock = threading.Lock()
        self.calls = 0
        self.slow = 0
        self.stall_until = 0.0
        self.stalled = 0
        self.workers = threading.Semaphore(args.workers) if args.workers else None

    def wait_for(self, method: str) -> float:
        """Seconds this request must wait, by the script."""
        a = self.args
        now = time.monotonic()
        with self.lock:
            if method == "tools/call":
                self.calls += 1
                if a.stall_after and self.calls == a.stall_after:
                    self.stall_until = now + a.stall_s
                if self.calls <= a.slow_first:
                    self.slow += 1
                    return a.slow_ms / 1000.0
            if now < self.stall_until:
                self.stalled += 1
                return self.stall_until - now
        return a.delay_ms / 1000.0


def result_for(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    cache = {"ttlMs": 0, "cacheScope": "public"}
    if method == "server/discover":
        # serverInfo lives in _meta, not in the body (DISC-04)
        return {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "load-slow-server", "version": "1"}},
                **cache}
    if method == "tools/list":
        return {"tools": [TOOL], **cache}
    if method == "tools/call" and params.get("name") == "echo":
        text = str((params.get("arguments") or {}).get("text", ""))
        return {"content": [{"type": "text", "text": text}]}
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # head and body are two writes: no 40 ms delayed-ACK stalls
    state: State

    def log_message(self, *_args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        s = self.state
        with s.lock:
            stats = {"tools_calls": s.calls, "slow": s.slow, "stalled": s.stalled}
        self._send(200, json.dumps(stats).encode())

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            msg = json.loads(body)
            method, params = msg["method"], msg.get("params") or {}
        except (ValueError, KeyError, TypeError):
            self._send(400, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}')
            return
        if self.state.workers is not None:
            with self.state.workers:
                time.sleep(self.state.wait_for(method))
        else:
            time.sleep(self.state.wait_for(method))
        result = result_for(method, params)
        if result is None:
            reply = {"jsonrpc": "2.0", "id": msg.get("id"), "error": {"code": -32601, "message": "no such method"}}
        else:
            reply = {"jsonrpc": "2.0", "id": msg.get("id"), "result": {"resultType": "complete", **result}}
        try:
            self._send(200, json.dumps(reply).encode())
        except OSError:
            pass  # the client gave up (timed out) and closed the connection


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--delay-ms", type=float, default=0.0)
    p.add_argument("--slow-first", type=int, default=0)
    p.add_argument("--slow-ms", type=float, default=0.0)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--stall-after", type=int, default=0)
    p.add_argument("--stall-s", type=float, default=0.0)
    args = p.parse_args()
    Handler.state = State(args)
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()

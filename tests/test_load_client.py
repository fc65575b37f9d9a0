"""The load users' HTTP client against a scripted raw HTTP server: every failure kind, both bodies.

The server is a real socket in a thread that answers each request with bytes chosen by the test
(a JSON body, an SSE stream, a chunked body, a 500, silence, a closed connection), so the
client's parsing, timing and failure classification are checked on the wire without needing a
misbehaving MCP server. The client runs on gevent sockets in this process; gevent is not
monkey-patched here, so the server thread is a plain OS thread.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import orjson
import pytest

pytest.importorskip("gevent")

from mcp_tempest.load.mcp_client import McpHttp  # noqa: E402
from mcp_tempest.targets import wire  # noqa: E402

Responder = Callable[[dict], bytes | None]  # request message -> raw response bytes (None: stay silent)


def http_json(body: bytes, status: str = "200 OK", extra: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
            .encode() + body)


def result_for(msg: dict, result: dict | None = None) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result or {"resultType": "complete"}})


class ScriptedServer:
    def __init__(self, respond: Responder) -> None:
        self.respond = respond
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/mcp"
        self.connections = 0
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        buf = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, rest = buf.partition(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                while len(rest) < length:
                    rest += conn.recv(65536)
                body, buf = rest[:length], rest[length:]
                answer = self.respond(orjson.loads(body))
                if answer is None:
                    self.stop.wait(5)
                    return
                conn.sendall(answer)
                if b"Connection: close" in answer:
                    return


@pytest.fixture
def serve() -> Iterator[Callable[[Responder], ScriptedServer]]:
    servers: list[ScriptedServer] = []

    def start(respond: Responder) -> ScriptedServer:
        servers.append(ScriptedServer(respond))
        return servers[-1]

    yield start
    for s in servers:
        s.stop.set()
        s.sock.close()


def request(i: int, method: str = "tools/list", params: dict | None = None) -> dict:
    return wire.build_request(i, method, params or {}, capabilities={"elicitation": {"form": {}}})


def test_json_replies_reuse_one_connection(serve) -> None:
    server = serve(lambda m: http_json(result_for(m)))
    client = McpHttp([server.url], timeout=2)
    for i in range(5):
        reply = client.post(request(i))
        assert reply.failure is None and reply.status == 200 and reply.result == {"resultType": "complete"}
        assert reply.first_event_us is None and reply.elapsed_us > 0
    assert server.connections == 1


def test_a_request_larger_than_one_send_arrives_whole(serve) -> None:
    """A request is written with one send(); what the kernel did not take goes after it (8 MiB is
    more than a loopback socket buffers, so the rest is written as the server reads)."""
    server = serve(lambda m: http_json(result_for(m, {"resultType": "complete",
                                                       "length": len(m["params"]["arguments"]["text"])})))
    client = McpHttp([server.url], timeout=10)
    text = "x" * (8 << 20)
    for i in range(2):
        reply = client.post(request(i, "tools/call", {"name": "echo", "arguments": {"text": text}}))
        assert reply.failure is None, reply.detail
        assert reply.result == {"resultType": "complete", "length": len(text)}
    assert server.connections == 1


def test_connection_close_is_honoured(serve) -> None:
    server = serve(lambda m: http_json(result_for(m), extra="Connection: close\r\n"))
    client = McpHttp([server.url], timeout=2)
    for i in range(3):
        assert client.post(request(i)).failure is None
    assert server.connections == 3


def test_sse_reply_times_the_first_event(serve) -> None:
    def respond(m: dict) -> bytes:
        note = wire.encode_sse({"jsonrpc": "2.0", "method": "notifications/message",
                                "params": {"level": "info", "data": "x"}})
        final = wire.encode_sse(orjson.loads(result_for(m)))
        body = b": keep-alive\n\n" + note + final
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:20], body[20:])) + b"0\r\n\r\n"
        return b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks

    server = serve(respond)
    client = McpHttp([server.url], timeout=2)
    for i in range(3):
        reply = client.post(request(i))
        assert reply.failure is None, reply.detail
        assert reply.is_sse and len(reply.messages) == 2
        assert reply.first_event_us is not None and reply.first_event_us <= reply.elapsed_us
    assert server.connections == 1  # the stream ended cleanly, so the connection was kept


@pytest.mark.parametrize(
    ("respond", "kind"),
    [
        (lambda m: http_json(b"", status="500 Internal Server Error"), "http 500"),
        (lambda m: http_json(b"not json"), "protocol"),
        (lambda m: http_json(orjson.dumps({"jsonrpc": "2.0", "id": "other", "result": {}})), "protocol"),
        (lambda m: http_json(orjson.dumps({"jsonrpc": "2.0", "id": m["id"],
                                           "error": {"code": -32602, "message": "bad"}}), status="400 Bad Request"),
         "rpc -32602"),
        (lambda m: None, "timeout"),
    ],
)
def test_failure_kinds(serve, respond: Responder, kind: str) -> None:
    server = serve(respond)
    client = McpHttp([server.url], timeout=0.5)
    reply = client.post(request(1))
    assert reply.failure == kind, (reply.failure, reply.detail)


def test_refused_connection_and_round_robin(serve) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    dead = f"http://127.0.0.1:{closed.getsockname()[1]}/mcp"
    closed.close()
    server = serve(lambda m: http_json(result_for(m)))
    client = McpHttp([dead, server.url], timeout=1)
    first, second = client.post(request(1)), client.post(request(2))
    assert first.endpoint == dead and first.failure == "connection"
    assert second.endpoint == server.url and second.failure is None
    # avoid= skips an endpoint: an MRTR retry goes to the other process
    assert client.post(request(3), avoid=dead).endpoint == server.url


def test_each_request_has_its_own_deadline(serve) -> None:
    """Waits add up to several times the timeout, yet no reply times out: the deadline is per
    request (a single re-armed timer kept only its remaining time, so this used to fail after
    `timeout` seconds of waiting in total). A request the server leaves unanswered still times
    out, once, and the next one is fine again."""
    import time

    def respond(m: dict) -> bytes | None:
        if m["id"] == 13:
            return None  # silence: this connection is dropped by the client after its timeout
        time.sleep(0.03)
        return http_json(result_for(m))

    server = serve(respond)
    client = McpHttp([server.url], timeout=0.25)
    kinds = [client.post(request(i)).failure for i in range(1, 25)]
    assert kinds.count("timeout") == 1 and kinds[12] == "timeout", kinds
    assert all(k is None for i, k in enumerate(kinds) if i != 12), kinds

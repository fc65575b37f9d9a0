"""Raw JSON-RPC over Streamable HTTP on Locust's geventhttpclient, timed to the microsecond.

Why not `FastHttpSession.post`: it times a request its own way and reports it under one name
when it returns, but a load user here must decide the name after the reply (a `tools/call` that
came back `input_required` becomes an MRTR leg `#1`), must know when the first SSE event arrived,
not only the last byte, and must classify failures by JSON-RPC code. So the caller records the
sample (exactly) and fires Locust's request event itself.

Requests are built with `targets.wire` (the `_meta`, the headers that mirror the body, the base64
sentinel), so a load user sends byte for byte what the fuzzer's driver sends. No asyncio here:
everything blocks a greenlet, which is what gevent and Locust expect.

The transport is geventhttpclient's, trimmed: one keep-alive gevent socket per endpoint and
user, the request head written here, the response parsed by geventhttpclient's C parser
(`HTTPSocketResponse`). `HTTPClient.request` and its pool cost ~200 us of CPU per request on top
(every header re-validated and re-merged through a generic `Headers` class, a `select()` per
checkout to probe the pooled socket), more than everything else a load user does together; with
them the load generator, not the server, was the bottleneck (tests/benchmarks/bench_load.py).
Our header values are safe by construction (`wire.encode_header_value`).
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import gevent
import gevent.socket
import gevent.ssl
from geventhttpclient._parser import HTTPParseError
from geventhttpclient.response import HTTPConnectionClosed, HTTPSocketResponse

from mcp_tempest.load.recorder import CONNECTION, TIMEOUT
from mcp_tempest.targets import auth_client, extra_headers, wire

# Failure kinds (the prefix before any detail); summary.json reports them verbatim. TIMEOUT and
# CONNECTION (no answer at all) live in the recorder, which counts the requests the stop caught.
PROTOCOL = "protocol"
__all__ = ["CONNECTION", "PROTOCOL", "TIMEOUT", "McpHttp", "Reply"]


@dataclass(slots=True)
class Reply:
    """One POST and what came back; `failure` is None when a JSON-RPC result arrived."""

    request: dict[str, Any]
    endpoint: str
    request_headers: dict[str, str] = field(default_factory=dict)
    status: int | None = None
    raw_headers: Any = None
    content_type: str = ""
    messages: list[Any] = field(default_factory=list)
    response: dict[str, Any] | None = None
    started_ns: int = 0  # perf_counter_ns() when the request was written
    elapsed_ns: int = 0  # to the final response (or to the failure)
    first_event_ns: int | None = None  # to the first SSE event, for SSE replies
    length: int = 0
    failure: str | None = None
    detail: str = ""

    @property
    def result(self) -> dict[str, Any] | None:
        if self.response is not None and isinstance(self.response.get("result"), dict):
            return self.response["result"]
        return None

    @property
    def headers(self) -> dict[str, str]:
        """Response headers, names lower-cased (a repeated header keeps its last value)."""
        if self.raw_headers is None:
            return {}
        return {k.lower(): v for k, v in self.raw_headers.items()}

    @property
    def elapsed_us(self) -> int:
        return (self.elapsed_ns + 500) // 1000

    @property
    def first_event_us(self) -> int | None:
        return None if self.first_event_ns is None else (self.first_event_ns + 500) // 1000

    @property
    def is_sse(self) -> bool:
        return self.content_type == "text/event-stream"


_LINGER_S = 0.5  # how long a stream may stay open after its final response
_BLOCK = 64 * 1024  # socket read size


def _since(started_ns: int) -> int:
    return time.perf_counter_ns() - started_ns


def _same_id(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


class McpHttp:
    """Posts JSON-RPC requests to one or more endpoints, round-robin, over keep-alive sockets.

    One instance per Locust user: it sends one request at a time, so one socket per endpoint
    is all it needs, and the connections are the user's own, as a real client's would be.
    """

    def __init__(self, endpoints: list[str], *, timeout: float = 10.0, start: int = 0) -> None:
        if not endpoints:
            raise ValueError("no endpoint")
        self._endpoints = [(url, urlsplit(url)) for url in endpoints]
        self._heads = {url: _request_head(split) for url, split in self._endpoints}
        self._socks: dict[str, Any] = {}
        self._next = start % len(endpoints)
        self.timeout = timeout
        # `load --header`: read once per user; ${VAR}s are still expanded per request, at send time
        self._extra = extra_headers.templates()
        # `load --auth`: a valid token of the harness's issuer on every request (minted, cached)
        self._auth = auth_client.active_issuer() is not None

    @property
    def endpoints(self) -> list[str]:
        return [url for url, _ in self._endpoints]

    def _pick(self, avoid: str | None = None) -> tuple[str, Any]:
        """Next endpoint round-robin; `avoid` skips one, so an MRTR retry lands on another process."""
        chosen = self._endpoints[self._next]
        self._next = (self._next + 1) % len(self._endpoints)
        if avoid is not None and chosen[0] == avoid and len(self._endpoints) > 1:
            chosen = self._endpoints[self._next]
            self._next = (self._next + 1) % len(self._endpoints)
        return chosen

    def _connect(self, split: Any) -> Any:
        host = split.hostname or "127.0.0.1"
        port = split.port or (443 if split.scheme == "https" else 80)
        # the socket's own timeout only backs up the per-request timer, which fires first
        sock = gevent.socket.create_connection((host, port), timeout=self.timeout + 1.0)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if split.scheme == "https":
            sock = gevent.ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        return sock

    def _discard(self, url: str) -> None:
        """Close the connection to `url` after a failure: a half-read response must not be reused."""
        sock = self._socks.pop(url, None)
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def close(self) -> None:
        for url in list(self._socks):
            self._discard(url)

    def post(self, msg: dict[str, Any], *, input_schema: Any = None, avoid: str | None = None) -> Reply:
        url, split = self._pick(avoid)
        reply = Reply(request=msg, endpoint=url)
        body = wire.dumps(msg)
        headers = wire.http_headers(msg, input_schema=input_schema)
        sent = headers
        if self._extra:  # the wire gets the values, what the oracle (and any report) sees the templates
            sent = headers | extra_headers.expanded(self._extra)
            headers = headers | extra_headers.shown(self._extra)
        if self._auth:  # the wire gets the token, the oracle sees its case and placeholder
            sent = auth_client.apply_auth(sent, url).wire
            headers = auth_client.apply_auth(headers, url).recorded
        reply.request_headers = headers
        data = b"".join((
            self._heads[url],
            f"Content-Length: {len(body)}\r\n".encode(),
            "".join(f"{k}: {v}\r\n" for k, v in sent.items()).encode("latin-1"),
            b"\r\n",
            body,
        ))
        started = reply.started_ns = time.perf_counter_ns()
        # A fresh deadline per request. Never one timer re-armed: a stopped libev timer keeps only
        # the time it had left, so re-arming it made every request of a user eat into the same
        # budget, and after `timeout` seconds of waiting in total everything "timed out" at once.
        timer = gevent.Timeout(self.timeout)
        timer.start()
        try:
            self._exchange(url, split, data, reply, started)
        except gevent.Timeout as exc:
            if exc is not timer:
                raise
            reply.failure, reply.detail = TIMEOUT, f"no complete reply within {self.timeout:g}s"
            self._discard(url)
        except TimeoutError:
            reply.failure, reply.detail = TIMEOUT, f"socket timed out after {self.timeout + 1.0:g}s"
            self._discard(url)
        except (HTTPParseError, OSError) as exc:  # HTTPConnectionClosed is an HTTPParseError
            reply.failure, reply.detail = CONNECTION, f"{type(exc).__name__}: {exc}"[:200]
            self._discard(url)
        except wire.DecodeError as exc:
            reply.failure, reply.detail = PROTOCOL, exc.reason[:200]
        finally:
            timer.close()
        if not reply.elapsed_ns:
            reply.elapsed_ns = _since(started)
        if reply.failure is None:
            self._judge_envelope(reply)
        return reply

    def _send(self, url: str, split: Any, data: bytes) -> tuple[Any, bytes]:
        """Write one request on the kept-alive socket; the socket and the first bytes back.

        A kept-alive socket the server has meanwhile closed answers nothing at all; that is
        retried once on a fresh connection (as HTTPClient.request does).
        """
        for attempt in (0, 1):
            sock = self._socks.get(url)
            fresh = sock is None
            if sock is None:
                sock = self._socks[url] = self._connect(split)
            try:
                # One send() holds a request (a few hundred bytes): gevent's sendall() asks the
                # kernel for the send buffer size first, a second system call per request.
                sent = sock.send(data)
                if sent < len(data):
                    sock.sendall(memoryview(data)[sent:])
                first = sock.recv(_BLOCK)
            except ConnectionError:
                first = b""
            if first:
                return sock, first
            self._discard(url)
            if fresh or attempt:
                raise HTTPConnectionClosed("connection closed before a response")
        raise HTTPConnectionClosed("connection closed")  # not reached

    def _exchange(self, url: str, split: Any, data: bytes, reply: Reply, started: int) -> None:
        sock, first = self._send(url, split, data)
        if self._plain_reply(url, sock, first, reply, started):
            return
        resp = HTTPSocketResponse(sock, block_size=_BLOCK, method="POST", pre_buffered=first)
        try:
            reply.status = resp.status_code
            reply.raw_headers = resp.info()  # turned into a dict only when someone asks
            ctype = resp.get("content-type") or ""
            reply.content_type = ctype.split(";", 1)[0].strip().lower()
            if reply.content_type == "text/event-stream":
                self._read_sse(resp, reply, started)
            else:
                body = resp.read()
                reply.elapsed_ns = _since(started)
                reply.length = len(body)
                reply.messages = wire.response_messages(ctype, body)
        finally:
            if resp.should_close():
                self._discard(url)  # not reusable: incomplete, or the server said Connection: close
            resp.release()

    def _plain_reply(self, url: str, sock: Any, buf: bytes, reply: Reply, started: int) -> bool:
        """The common reply, read here in a few microseconds: a complete head, a final status, a
        Content-Length body, no chunking, not a stream. Anything else returns False and goes to
        geventhttpclient's parser, with the bytes read so far."""
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            return False
        lines = buf[:end].decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        if version not in ("HTTP/1.1", "HTTP/1.0") or not rest[:3].isdigit() or int(rest[:3]) < 200:
            return False
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                return False
            headers[name.strip().lower()] = value.strip()
        ctype = headers.get("content-type", "")
        length_text = headers.get("content-length", "")
        if "transfer-encoding" in headers or not length_text.isdigit():
            return False
        media = ctype.split(";", 1)[0].strip().lower()
        if media == "text/event-stream":
            return False
        length = int(length_text)
        body = buf[end + 4 :]
        while len(body) < length:
            chunk = sock.recv(max(_BLOCK, length - len(body)))
            if not chunk:
                raise HTTPConnectionClosed("connection closed inside the body")
            body += chunk
        reply.elapsed_ns = _since(started)
        reply.status = int(rest[:3])
        reply.raw_headers = headers
        reply.content_type = media
        reply.length = length
        if len(body) != length or version != "HTTP/1.1" or headers.get("connection", "").lower() == "close":
            self._discard(url)  # extra bytes, HTTP/1.0 or Connection: close: do not reuse
        reply.messages = wire.response_messages(ctype, body[:length])
        return True

    def _read_sse(self, resp: Any, reply: Reply, started: int) -> None:
        """Read the stream line by line, so the first event is timed when it arrives.

        The time of the final response is taken when its event is parsed, not when the stream
        ends: the final response SHOULD end the stream (HTTP-07) but a server that lingers must
        not inflate the latency. A stream still open shortly after the final response is cut,
        and its connection is not reused.
        """
        parser = wire.SseParser()
        want = reply.request.get("id")
        while True:
            line = resp.readline(b"\n")
            events = parser.feed(line) if line else parser.close()
            reply.length += len(line)
            for event in events:
                if reply.first_event_ns is None:
                    reply.first_event_ns = _since(started)
                if not event.data.strip():
                    continue
                msg = wire.loads(event.data)
                reply.messages.append(msg)
                if wire.is_response(msg) and _same_id(msg.get("id"), want):
                    reply.elapsed_ns = _since(started)
                    self._finish_stream(resp, reply)
                    return
            if not line:
                return

    def _finish_stream(self, resp: Any, reply: Reply) -> None:
        if resp.message_complete:
            return
        try:
            with gevent.Timeout(_LINGER_S):
                while resp.readline(b"\n"):
                    pass
        except gevent.Timeout:
            self._discard(reply.endpoint)

    def _judge_envelope(self, reply: Reply) -> None:
        """Find the response to our request and name the failure, if any, by its kind."""
        want = reply.request.get("id")
        for msg in reply.messages:
            if wire.is_response(msg) and _same_id(msg.get("id"), want):
                reply.response = msg
                break
        status = reply.status or 0
        if reply.response is not None:
            error = reply.response.get("error")
            if isinstance(error, dict):
                code = error.get("code")
                reply.failure = f"rpc {code}"
                reply.detail = str(error.get("message", ""))[:200]
            elif not isinstance(reply.response.get("result"), dict):
                reply.failure, reply.detail = PROTOCOL, "result is not an object"
            elif not 200 <= status < 300:
                reply.failure, reply.detail = f"http {status}", "result with a non-2xx status"
            return
        if not 200 <= status < 300:
            reply.failure, reply.detail = f"http {status}", "no JSON-RPC response"
        elif any(wire.is_response(m) for m in reply.messages):
            reply.failure, reply.detail = PROTOCOL, "response id does not match the request id"
        else:
            reply.failure, reply.detail = PROTOCOL, "no JSON-RPC response in the body"


def _request_head(split: Any) -> bytes:
    """Request line and Host header of an endpoint, computed once."""
    path = split.path or "/"
    if split.query:
        path += "?" + split.query
    host = split.hostname or "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    if split.port:
        host += f":{split.port}"
    return f"POST {path} HTTP/1.1\r\nHost: {host}\r\n".encode("latin-1")

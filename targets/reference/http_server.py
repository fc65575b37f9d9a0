"""The Streamable HTTP adapter: a raw asyncio HTTP/1.1 server on httptools around the Core.

No framework on purpose: the per-request work is parse headers, hand the body to the Core, write
one response, so a request costs little more than the Core itself (the benchmark compares this
with the Python SDK server). One endpoint, `/mcp`, POST only (GET/DELETE -> 405, DIGEST 7.4).
A present, non-loopback `Origin` gets 403 (HTTP-12), and so does a non-loopback `Host` while we
are bound to loopback (DNS rebinding). No `Mcp-Session-Id` is ever sent (SL-10).

Responses: a JSON body; an SSE body when the request produced notifications before its result
(request-scoped logs, HTTP-07); an open chunked SSE stream for `subscriptions/listen`, whose
close by the client is its cancellation (HTTP-11) and which gets a SubscriptionsListenResult when
the server shuts down (SUB-08).
"""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import TYPE_CHECKING, Any, Final

import httptools
import orjson

from mcp_tempest.strategies.auth_tokens import PRM_PATH
from mcp_tempest.targets.reference.core import Core, HttpInfo, Reply
from mcp_tempest.targets.reference.subscriptions import POLL_INTERVAL_S, Listen

if TYPE_CHECKING:  # joserfc is imported only by a server started with --auth-issuer
    from mcp_tempest.targets.reference.auth import ResourceGuard

MAX_BODY: Final = 4 << 20
# Request line plus headers: more is refused with 431 before it is buffered (a 128 MB header
# used to stall every other client), and they must all arrive within HEADER_DEADLINE_S of the
# request's first byte, or the connection is closed (a slow sender cannot hold it open).
MAX_HEAD: Final = 64 * 1024
HEADER_DEADLINE_S: Final = 10.0
ENDPOINT: Final = b"/mcp"
_REASONS: Final = {200: "OK", 202: "Accepted", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
                   405: "Method Not Allowed", 408: "Request Timeout", 413: "Content Too Large",
                   431: "Request Header Fields Too Large", 500: "Internal Server Error"}
_LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
_SSE_HEADERS: Final = b"Content-Type: text/event-stream\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no\r\n"
_FORBIDDEN: Final = b'{"jsonrpc":"2.0","error":{"code":-32600,"message":"Forbidden: %s"}}'


def _host_part(hostport: str) -> str:
    """`host` of `host[:port]`, keeping the brackets of an IPv6 literal."""
    hostport = hostport.strip().lower()
    if hostport.startswith("["):
        end = hostport.find("]")
        return hostport[: end + 1] if end > 0 else hostport
    return hostport.rsplit(":", 1)[0] if hostport.count(":") == 1 else hostport


def origin_allowed(origin: str) -> bool:
    scheme, sep, rest = origin.partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        return False
    return _host_part(rest.split("/", 1)[0]) in _LOOPBACK_HOSTS


def host_allowed(host: str) -> bool:
    return _host_part(host) in _LOOPBACK_HOSTS


def sse_event(message: bytes) -> bytes:
    return b"event: message\ndata: " + message + b"\n\n"


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _is_tool_call(body: list[bytes]) -> bool:
    try:
        msg = orjson.loads(b"".join(body))
    except orjson.JSONDecodeError:
        return False
    return isinstance(msg, dict) and msg.get("method") == "tools/call"


class _Shared:
    guard: ResourceGuard | None = None
    """Per-process server state the connections share."""

    def __init__(self, core: Core, check_host: bool, header_timeout: float = HEADER_DEADLINE_S) -> None:
        self.core = core
        self.check_host = check_host
        self.header_timeout = header_timeout
        self.conns: set[_Conn] = set()


class _Conn(asyncio.Protocol):
    """One TCP connection: parses requests with httptools and answers them in order."""

    def __init__(self, shared: _Shared) -> None:
        self.shared = shared
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.url = b""
        self.headers: dict[str, str] = {}
        self.body: list[bytes] = []
        self.body_len = 0
        self.listen: Listen | None = None
        self.closing = False
        self.in_head = False  # between a request's first byte and the end of its headers
        self.in_body = False  # between the end of the headers and the end of the message
        self.head_bytes = 0
        self.head_tail = b""  # last 3 bytes seen in the head, to find a CRLFCRLF split across reads
        self.head_timer: asyncio.TimerHandle | None = None

    # --- asyncio.Protocol ---

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.shared.conns.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.shared.conns.discard(self)
        self._stop_head_timer()
        if self.listen is not None:
            self.shared.core.hub.remove(self)  # the client closed the stream: cancellation
            self.listen = None

    def data_received(self, data: bytes) -> None:
        if self.listen is not None or self.closing:
            return
        if not self._head_within_limits(data):
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._plain(400, b"upgrades are not supported", close=True)
        except httptools.HttpParserError:
            self._plain(400, b"malformed HTTP request", close=True)

    # --- header limits ---

    def _head_within_limits(self, data: bytes) -> bool:
        """Count head bytes before the parser buffers them; False (and 431 sent) when over MAX_HEAD."""
        if not self.in_head:
            if self.in_body or not data.strip(b"\r\n"):
                return True  # stray CRLF between keep-alive requests
            self.in_head = True
            self.head_bytes = 0
            self.head_tail = b""
            self.head_timer = asyncio.get_running_loop().call_later(self.shared.header_timeout, self._head_too_slow)
        room = MAX_HEAD - self.head_bytes
        if len(data) <= room:
            self.head_bytes += len(data)
            self.head_tail = (self.head_tail + data[-3:])[-3:]
            return True
        if b"\r\n\r\n" in self.head_tail + data[: room + 4]:
            return True  # the head ends within the limit; the rest is body, limited elsewhere
        self._stop_head_timer()
        self._plain(431, b"request headers too large", close=True)
        return False

    def _head_too_slow(self) -> None:
        self.head_timer = None
        if self.in_head and not self.closing:
            self._plain(408, b"request headers not received in time", close=True)

    def _stop_head_timer(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    # --- httptools callbacks ---

    def on_message_begin(self) -> None:
        self.url = b""
        self.headers = {}
        self.body = []
        self.body_len = 0

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        old = self.headers.get(key)
        self.headers[key] = text if old is None else old + ", " + text

    def on_headers_complete(self) -> None:
        self.in_head = False
        self.in_body = True
        self._stop_head_timer()
        if self.headers.get("expect", "").lower() == "100-continue" and self.transport is not None:
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, body: bytes) -> None:
        self.body_len += len(body)
        if self.body_len <= MAX_BODY:
            self.body.append(body)

    def on_message_complete(self) -> None:
        self.in_body = False
        if self.listen is not None or self.closing:
            return
        delay = self.shared.core.tool_delay_s
        if delay and self.transport is not None and _is_tool_call(self.body):
            # `serve --tool-delay-ms` (a test aid): this tools/call is answered `delay` later, the
            # loop serving everyone else meanwhile, as a build waiting on something slower would.
            # The connection reads nothing more until then, so its answers stay in order (a client
            # that pipelines requests into one packet is not served correctly by this aid).
            self.transport.pause_reading()
            asyncio.get_running_loop().call_later(delay, self._dispatch_later)
            return
        try:
            self._dispatch()
        except Exception:  # one broken request must not take the connection's loop down silently
            self._plain(500, b"internal error", close=True)

    def _dispatch_later(self) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        try:
            self._dispatch()
        except Exception:  # as in on_message_complete
            self._plain(500, b"internal error", close=True)
        if not self.closing and not transport.is_closing():
            transport.resume_reading()

    # --- request handling ---

    def _dispatch(self) -> None:
        headers = self.headers
        path = self.url.split(b"?", 1)[0]
        if path != ENDPOINT:
            guard = self.shared.guard
            if guard is not None and path in (PRM_PATH.encode(), PRM_PATH.encode() + ENDPOINT) \
                    and self.parser.get_method() == b"GET":
                self._write(200, b"application/json", orjson.dumps(guard.metadata()))  # RFC 9728
                return
            self._plain(404, b"not found")
            return
        origin = headers.get("origin")
        if origin is not None and not origin_allowed(origin):
            self._write(403, b"application/json", _FORBIDDEN % b"Origin not allowed")
            return
        host = headers.get("host")
        if self.shared.check_host and host is not None and not host_allowed(host):
            self._write(403, b"application/json", _FORBIDDEN % b"Host not allowed")
            return
        guard = self.shared.guard
        if guard is not None:
            refusal = guard.check(headers.get("authorization"))
            if refusal is not None:
                extra = b"" if refusal.www_authenticate is None else \
                    b"WWW-Authenticate: %s\r\n" % refusal.www_authenticate.encode("latin-1")
                self._write(refusal.status, b"application/json", refusal.body, extra=extra)
                return
        if self.parser.get_method() != b"POST":
            if "http-get-200" in self.shared.core.bugs:  # the mutant (targets/mutants)
                self._write(200, b"text/event-stream", b"")
                return
            self._write(405, None, b"", extra=b"Allow: POST\r\n")
            return
        if self.body_len > MAX_BODY:
            self._plain(413, b"request body too large", close=True)
            return
        core = self.shared.core
        reply = core.handle_message(b"".join(self.body), HttpInfo(headers))
        extra = b"" if reply.session_id is None else b"Mcp-Session-Id: %s\r\n" % reply.session_id.encode()
        if reply.listen is not None:
            self._open_stream(reply, extra)
        elif reply.notes or reply.after:
            parts = [sse_event(n) for n in reply.notes or ()]
            if reply.body is not None:
                parts.append(sse_event(reply.body))
            parts.extend(sse_event(n) for n in reply.after or ())
            self._write(reply.status, None, b"".join(parts), extra=_SSE_HEADERS + extra)
        elif reply.body is not None:
            self._write(reply.status, b"application/json", reply.body, extra=extra)
        else:
            self._write(202 if reply.status == 200 else reply.status, None, b"", extra=extra)
        if core.hub.active:
            core.hub.poll()

    def _write(self, status: int, ctype: bytes | None, body: bytes, *, extra: bytes = b"",
               close: bool = False) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        keep = not close and self.parser.should_keep_alive()
        head = b"HTTP/1.1 %d %s\r\n" % (status, _REASONS.get(status, "Error").encode())
        if ctype is not None:
            head += b"Content-Type: " + ctype + b"\r\n"
        head += b"Content-Length: %d\r\n" % len(body) + extra
        if not keep:
            head += b"Connection: close\r\n"
        transport.write(head + b"\r\n" + body)
        if not keep:
            self.closing = True
            transport.close()

    def _plain(self, status: int, text: bytes, *, close: bool = False) -> None:
        self._write(status, b"text/plain; charset=utf-8", text, close=close)

    def _open_stream(self, reply: Reply, extra: bytes) -> None:
        transport = self.transport
        assert transport is not None and reply.listen is not None
        listen = reply.listen
        head = b"HTTP/1.1 200 OK\r\n" + _SSE_HEADERS + b"Transfer-Encoding: chunked\r\n" + extra + b"\r\n"
        transport.write(head + b"".join(_chunk(sse_event(n)) for n in reply.notes or ()))
        listen.send = self._send_event
        self.listen = listen
        self.shared.core.hub.add(self, listen)

    def _send_event(self, message: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(_chunk(sse_event(message)))

    def shutdown(self) -> None:
        """Server is stopping: end an open listen stream gracefully, close anything else."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if self.listen is not None:
            listen, self.listen = self.listen, None
            self.shared.core.hub.remove(self)
            transport.write(_chunk(sse_event(listen.closing_result())) + b"0\r\n\r\n")
        transport.close()


async def _serve(core: Core, host: str, port: int, ready: Any, header_timeout: float,
                 guard: ResourceGuard | None = None) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    shared = _Shared(core, check_host=host_allowed(host) or host.startswith("127."), header_timeout=header_timeout)
    server = await loop.create_server(lambda: _Conn(shared), host, port, backlog=1024)
    bound = server.sockets[0].getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    if guard is not None:
        guard.bind(f"http://{shown}:{bound}{ENDPOINT.decode()}")
        shared.guard = guard
    ready(f"listening on http://{shown}:{bound}/mcp")

    def tick() -> None:
        if core.hub.active:
            core.hub.poll()
        loop.call_later(POLL_INTERVAL_S, tick)

    loop.call_later(POLL_INTERVAL_S, tick)
    await stop.wait()
    server.close()
    for conn in list(shared.conns):
        conn.shutdown()
    for _ in range(50):
        if not shared.conns:
            break
        await asyncio.sleep(0.02)
    return 0


def _announce(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def serve_http(core: Core, host: str = "127.0.0.1", port: int = 0, *, ready: Any = _announce,
               header_timeout: float = HEADER_DEADLINE_S, guard: ResourceGuard | None = None) -> int:
    """Serve until SIGTERM/SIGINT; `ready` gets the one `listening on ...` line. Returns 0.
    `header_timeout`: seconds from a request's first byte to the end of its headers."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a declared dependency via uvicorn[standard]
        factory = None
    else:
        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(_serve(core, host, port, ready, header_timeout, guard))

"""Raw JSON-RPC over Streamable HTTP on Locust's geventhttpclient, timed to the microsecond.

Why not `FastHttpSession.post`: it times a request its own way and reports it under one name
when it returns, but a load user here must decide the name after the reply (a `tools/call` that
came back `input_required` becomes an MRTR leg `#1`), must know when the first SSE event arrived,
not only the last byte, and must classify failures by JSON-RPC code. So the user takes the
per-host `HTTPClient` out of its FastHttpSession's pool and speaks to it directly; the caller
records the sample (exactly) and fires Locust's request event itself.

Requests are built with `targets.wire` (the `_meta`, the headers that mirror the body, the base64
sentinel), so a load user sends byte for byte what the fuzzer's driver sends. No asyncio here:
everything blocks a greenlet, which is what gevent and Locust expect.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import gevent
from geventhttpclient._parser import HTTPParseError
from geventhttpclient.client import HTTPClient, HTTPClientPool

from targets import wire

# Failure kinds (the prefix before any detail); summary.json reports them verbatim.
TIMEOUT = "timeout"
CONNECTION = "connection"
PROTOCOL = "protocol"


@dataclass(slots=True)
class Reply:
    """One POST and what came back; `failure` is None when a JSON-RPC result arrived."""

    request: dict[str, Any]
    endpoint: str
    request_headers: dict[str, str] = field(default_factory=dict)
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = ""
    messages: list[Any] = field(default_factory=list)
    response: dict[str, Any] | None = None
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
    def elapsed_us(self) -> int:
        return (self.elapsed_ns + 500) // 1000

    @property
    def first_event_us(self) -> int | None:
        return None if self.first_event_ns is None else (self.first_event_ns + 500) // 1000

    @property
    def is_sse(self) -> bool:
        return self.content_type == "text/event-stream"


_LINGER_S = 0.5  # how long a stream may stay open after its final response


def _since(started_ns: int) -> int:
    return time.perf_counter_ns() - started_ns


def _same_id(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


class McpHttp:
    """Posts JSON-RPC requests to one or more endpoints, round-robin, over keep-alive sockets.

    `pool` is the FastHttpSession's HTTPClientPool (one per Locust user), so the connections are
    the user's own, exactly as with `self.client.post`.
    """

    def __init__(
        self,
        pool: HTTPClientPool,
        endpoints: list[str],
        *,
        timeout: float = 10.0,
        start: int = 0,
    ) -> None:
        if not endpoints:
            raise ValueError("no endpoint")
        self._pool = pool
        self._endpoints = [(url, urlsplit(url)) for url in endpoints]
        self._next = start % len(endpoints)
        self.timeout = timeout

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

    def _client(self, url: str) -> HTTPClient:
        return self._pool.get_client(url)

    def _discard(self, url: str) -> None:
        """Drop the connection(s) to `url` after a failure: a half-read response must not be reused."""
        split = urlsplit(url)
        key_port = split.port or (443 if split.scheme == "https" else 80)
        for key in list(self._pool.clients):
            host, port = key
            if host == split.hostname and (port or key_port) == key_port:
                client = self._pool.clients.pop(key)
                try:
                    client.close()
                except Exception:  # noqa: BLE001 - closing a broken socket may fail again; ignore
                    pass

    def post(self, msg: dict[str, Any], *, input_schema: Any = None, avoid: str | None = None) -> Reply:
        url, split = self._pick(avoid)
        reply = Reply(request=msg, endpoint=url)
        body = wire.dumps(msg)
        headers = wire.http_headers(msg, input_schema=input_schema)
        reply.request_headers = headers
        path = split.path or "/"
        if split.query:
            path += "?" + split.query
        started = time.perf_counter_ns()
        timer = gevent.Timeout(self.timeout)
        timer.start()
        try:
            self._exchange(url, path, body, headers, reply, started)
        except gevent.Timeout as exc:
            if exc is not timer:
                raise
            reply.failure, reply.detail = TIMEOUT, f"no complete reply within {self.timeout:g}s"
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

    def _exchange(
        self, url: str, path: str, body: bytes, headers: dict[str, str], reply: Reply, started: int
    ) -> None:
        resp = self._client(url).request("POST", path, body=body, headers=headers)
        try:
            reply.status = resp.status_code
            reply.headers = {k.lower(): v for k, v in resp.items()}
            ctype = reply.headers.get("content-type", "")
            reply.content_type = ctype.split(";", 1)[0].strip().lower()
            if reply.content_type == "text/event-stream":
                self._read_sse(resp, reply, started)
            else:
                data = resp.read()
                reply.elapsed_ns = _since(started)
                reply.length = len(data)
                reply.messages = wire.response_messages(ctype, data)
        finally:
            resp.release()

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


def make_pool(*, timeout: float, concurrency: int = 1) -> HTTPClientPool:
    """A pool for use outside a Locust user (tests, benchmarks)."""
    return HTTPClientPool(
        concurrency=concurrency,
        connection_timeout=timeout,
        network_timeout=timeout,
    )

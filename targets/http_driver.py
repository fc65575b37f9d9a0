"""The Streamable HTTP driver: POSTs with exactly the headers asked for, JSON or SSE answers.

Headers are never "fixed": a fuzzer that sends a wrong `Mcp-Method` or no `Accept` gets exactly
that on the wire (only `Host` and `Content-Length` are added, and only when the caller did not
give them). SSE bodies are parsed as they arrive, with a deadline, so a stream that never ends
(`subscriptions/listen`, or a server that forgets to close) costs a bounded wait. Sockets are
kept alive between requests for speed; concurrent requests each get their own socket.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from mcp_tempest.strategies.auth_tokens import AUTH_DIRECTIVE, ISSUER_HEADER, RESOURCE_HEADER
from mcp_tempest.targets import auth_client, extra_headers, stop_request, wire
from mcp_tempest.targets.connection import (
    DEFAULT_LINE_CAP,
    DEFAULT_TIMEOUT,
    NOISE_KEEP_BYTES,
    Connection,
    Event,
    Frame,
    Predicate,
    frame_bytes_and_message,
    is_response_to,
)
from mcp_tempest.targets.http_deadline import deadline_connection
from mcp_tempest.targets.transcript import Transcript, parse_received
from mcp_tempest.targets.transports import HTTP

READ_CHUNK: Final = 64 * 1024
DEFAULT_SSE_LINGER: Final = 0.25
CONNECT_TIMEOUT: Final = 5.0
MAX_IDLE_PER_INSTANCE: Final = 8


@dataclass(frozen=True, slots=True)
class Endpoint:
    url: str
    scheme: str
    host: str
    port: int
    path: str

    @classmethod
    def parse(cls, url: str) -> Endpoint:
        parts = urlsplit(url)
        scheme = parts.scheme or "http"
        port = parts.port or (443 if scheme == "https" else 80)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return cls(url, scheme, parts.hostname or "127.0.0.1", port, path)

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"

    def new_connection(self, deadline: float) -> http.client.HTTPConnection:
        """A connection whose connect, send and every read end by `deadline` (set anew per exchange)."""
        return deadline_connection(self.scheme, self.host, self.port, deadline)


# What the transcript records of a request's token case: its directive and what it is judged by.
auth_recorded: Final = frozenset(h.lower() for h in (AUTH_DIRECTIVE, ISSUER_HEADER, RESOURCE_HEADER))


def default_headers(message: Any, http_method: str) -> dict[str, str]:
    """What a conformant client sends when the caller gave no headers (DIGEST 7.2)."""
    if http_method == "POST":
        return wire.http_headers(message)
    if http_method == "GET":
        return {"Accept": "text/event-stream"}
    return {}


def _header_text(value: str | bytes) -> str:
    return value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else str(value)


def _header_bytes(value: str | bytes | int) -> bytes:
    """Header values go out as UTF-8 bytes (bytes exactly as given), so a fuzzer can put
    non-ASCII on the wire; http.client itself still refuses a bare CR or LF."""
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


class HttpStream:
    """An SSE response read in the background (e.g. `subscriptions/listen`); events land in the
    transcript as they arrive. `close()` drops the socket, which on HTTP is cancellation (HTTP-11)."""

    def __init__(self, conn: HttpConnection, send_index: int) -> None:
        self._conn = conn
        self.send_index = send_index
        self._sock: socket.socket | None = None
        self._sock_lock = threading.Lock()
        self._cancelled = False
        self.thread: threading.Thread | None = None

    def _attach(self, sock: socket.socket | None) -> None:
        with self._sock_lock:
            self._sock = sock
            if self._cancelled and sock is not None:
                _shutdown(sock)

    @property
    def done(self) -> bool:
        return self.thread is None or not self.thread.is_alive()

    def events(self) -> list[Event]:
        return [e for e in self._conn.transcript.events if e.ref == self.send_index]

    def wait_for(self, predicate: Predicate, timeout: float) -> Event | None:
        """The first event of this stream matching `predicate`, waiting up to `timeout` (no event recorded on timeout)."""
        deadline = time.monotonic() + timeout
        seen = 0
        with self._conn._cond:
            while True:
                events = self.events()
                for event in events[seen:]:
                    if predicate(event):
                        return event
                seen = len(events)
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.done:
                    if self.done:
                        for event in self.events()[seen:]:
                            if predicate(event):
                                return event
                    return None
                self._conn._cond.wait(min(remaining, 0.1))

    def close(self, timeout: float = 5.0) -> None:
        with self._sock_lock:
            self._cancelled = True
            if self._sock is not None:
                _shutdown(self._sock)
        if self.thread is not None:
            self.thread.join(timeout)
        self._conn._streams.discard(self)

    def __enter__(self) -> HttpStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class HttpConnection(Connection):
    """Talks to one or more Streamable HTTP endpoints (instance i is process number i).

    Records per exchange: `send` (raw body, the exact headers, note "VERB path"); then, each
    with `ref` = the send index, `status` and lowercased response `headers`: `recv` per JSON-RPC
    message (JSON body or SSE data), `http` when the response carried none (202, 405, empty or
    non-JSON 4xx), `noise` per non-JSON SSE data field, `oversize` for a body over the cap,
    `timeout` when the deadline passed (or an SSE stream stayed open after its final response),
    `closed` when an SSE stream ended without the response, `error` for transport failures.
    """

    transport = HTTP

    def __init__(
        self,
        transcript: Transcript,
        urls: Sequence[str],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        body_cap: int = DEFAULT_LINE_CAP,
        sse_linger: float = DEFAULT_SSE_LINGER,
        first_instance: int = 0,
    ) -> None:
        super().__init__(transcript, timeout=timeout)
        if not urls:
            raise ValueError("an HTTP connection needs at least one URL")
        self.endpoints = [Endpoint.parse(u) for u in urls]
        self.body_cap = body_cap
        self.sse_linger = sse_linger
        self._rr = first_instance % len(self.endpoints)
        self._idle: list[list[http.client.HTTPConnection]] = [[] for _ in self.endpoints]
        self._announced: set[int] = set()
        self._lock = threading.Lock()
        self._streams: set[HttpStream] = set()
        self._closed = False

    @property
    def instances(self) -> int:
        return len(self.endpoints)

    def url(self, instance: int = 0) -> str:
        return self.endpoints[instance].url

    # --- sending ---

    def send(
        self,
        frame: Frame | None,
        *,
        headers: dict[str, Any] | None = None,
        instance: int | None = None,
        timeout: float | None = None,
        http_method: str = "POST",
        path: str | None = None,
    ) -> int:
        """One HTTP exchange; returns the send index after the response is recorded.

        `headers=None` means the conformant headers for `frame`; a dict is sent exactly (plus
        Host/Content-Length when absent). `instance` picks the endpoint (default: round-robin).
        `path` overrides the endpoint path; `http_method` allows GET/DELETE checks (frame None).
        """
        index, plan = self._prepare(frame, headers, instance, http_method, path)
        self._exchange(plan, index, self._deadline(self.timeout if timeout is None else timeout))
        return index

    def request(
        self,
        msg: dict[str, Any],
        *,
        timeout: float | None = None,
        headers: dict[str, Any] | None = None,
        instance: int | None = None,
    ) -> dict[str, Any] | None:
        index = self.send(msg, headers=headers, instance=instance, timeout=timeout)
        if not isinstance(msg, dict) or "id" not in msg:
            return None
        for event in self.events_for(index):
            if is_response_to(event, msg["id"]):
                return event.message
        return None

    def send_concurrently(
        self,
        frames: Sequence[Frame],
        *,
        headers: Sequence[dict[str, Any] | None] | None = None,
        timeout: float | None = None,
        instances: Sequence[int | None] | None = None,
    ) -> list[int]:
        """POST every frame at once, each on its own socket, released together by a barrier so
        that all are in flight before any is answered; returns after every exchange is recorded."""
        if not frames:
            return []
        deadline = self._deadline(self.timeout if timeout is None else timeout)
        plans = []
        for i, frame in enumerate(frames):
            plans.append(
                self._prepare(
                    frame, headers[i] if headers else None, instances[i] if instances else None, "POST", None
                )
            )
        barrier = threading.Barrier(len(plans), timeout=max(deadline - time.monotonic(), 0.1))
        threads = []
        for index, plan in plans:
            thread = threading.Thread(
                target=self._exchange, args=(plan, index, deadline), kwargs={"barrier": barrier},
                name=f"mcp-tempest-http-{index}", daemon=True,
            )
            threads.append(thread)
            thread.start()
        for thread in threads:
            thread.join(max(deadline - time.monotonic(), 0.0) + 5.0)
        indices = [index for index, _ in plans]
        self._last_send = indices[0]
        return indices

    def open_stream(
        self,
        frame: Frame,
        *,
        headers: dict[str, Any] | None = None,
        instance: int | None = None,
        max_duration: float = 60.0,
    ) -> HttpStream:
        """POST `frame` and read its SSE answer in the background until it ends, `close()` is
        called, or `max_duration` passes. For `subscriptions/listen`, which never ends by itself."""
        index, plan = self._prepare(frame, headers, instance, "POST", None)
        stream = HttpStream(self, index)
        self._streams.add(stream)
        stream.thread = threading.Thread(
            target=self._exchange, args=(plan, index, self._deadline(max_duration)),
            kwargs={"stream": stream}, name=f"mcp-tempest-sse-{index}", daemon=True,
        )
        stream.thread.start()
        return stream

    # --- reading ---

    def read_until(
        self, predicate: Predicate, timeout: float, *, since: int | None = None, awaited: str = ""
    ) -> Event | None:
        """Over HTTP only open streams add events after a `send` returns; without any this
        looks once and, finding nothing, records `timeout` and returns None at once."""
        start = self._start_index(since)
        deadline = self._deadline(timeout)
        with self._cond:
            while True:
                event, start = self._scan(predicate, start)
                if event is not None:
                    return event
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._active_streams():
                    break
                self._cond.wait(min(remaining, 0.1))
                stop_request.wait_point()  # a stop asked for by a signal: not after the whole timeout
        # `ref`: the send this wait was for, so the oracle reads the timeout, not its note.
        waited_for = since if since is not None else self._last_send
        self._record("timeout", proc=min(self._procs, default=0), ref=waited_for,
                     note=awaited or "an event matching the predicate")
        return None

    def drain(self, quiet: float = 0.2, timeout: float = 2.0) -> list[Event]:
        start = len(self.transcript.events)
        deadline = self._deadline(timeout)
        with self._cond:
            while self._active_streams() and time.monotonic() < deadline:
                before = len(self.transcript.events)
                self._cond.wait(min(quiet, max(deadline - time.monotonic(), 0.0)))
                if len(self.transcript.events) == before:
                    break
        return [e for e in self.transcript.events[start:] if self.mine(e)]

    def _active_streams(self) -> bool:
        return any(not s.done for s in list(self._streams))

    # --- state ---

    def alive(self) -> bool:
        """Whether every endpoint accepts a TCP connection now."""
        for ep in self.endpoints:
            try:
                with socket.create_connection((ep.host, ep.port), timeout=1.0):
                    pass
            except OSError:
                return False
        return True

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for stream in list(self._streams):
            stream.close()
        with self._lock:
            for idle in self._idle:
                for conn in idle:
                    conn.close()
                idle.clear()

    # --- internals ---

    def _pick(self, instance: int | None) -> int:
        with self._lock:
            if instance is None:
                instance = self._rr
                self._rr = (self._rr + 1) % len(self.endpoints)
        if not 0 <= instance < len(self.endpoints):
            raise IndexError(f"instance {instance} out of range (0..{len(self.endpoints) - 1})")
        if instance not in self._announced:
            self._announced.add(instance)
            self._record("spawn", proc=instance, note=self.endpoints[instance].url)
        return instance

    def _prepare(
        self,
        frame: Frame | None,
        headers: dict[str, Any] | None,
        instance: int | None,
        http_method: str,
        path: str | None,
    ) -> tuple[int, _Plan]:
        i = self._pick(instance)
        ep = self.endpoints[i]
        body, message = frame_bytes_and_message(frame)
        given = default_headers(message, http_method) if headers is None else dict(headers)
        given.update(extra_headers.expanded())  # --header, ${VAR}s expanded now, at send time
        # --auth: the request's token case, minted now; recorded as its directive and placeholder
        applied = auth_client.apply_auth(given, ep.url)
        given, shown_auth = applied.wire, applied.recorded
        path = applied.path or path
        names = {k.lower() for k in given}
        wire_headers: list[tuple[str, str | bytes]] = list(given.items())
        if "host" not in names:
            wire_headers.insert(0, ("Host", ep.host_header))
        if "content-length" not in names and (body or http_method in ("POST", "PUT", "PATCH")):
            wire_headers.append(("Content-Length", str(len(body))))
        target = path or ep.path
        recorded = {k: _header_text(v) for k, v in wire_headers} | extra_headers.shown()  # never the secret
        if shown_auth is not given:
            recorded = {k: v for k, v in recorded.items() if k.lower() != "authorization"} | {
                k: v for k, v in shown_auth.items() if k.lower() in auth_recorded or k.lower() == "authorization"}
        note = f"{http_method} {target}"
        if applied.sent_query:
            sep = "&" if "?" in target else "?"
            target, note = f"{target}{sep}{applied.sent_query}", f"{note}{sep}{applied.shown_query}"
        index = self._record(
            "send", proc=i, message=message, raw=body, headers=recorded, note=note
        )
        self._last_send = index
        request_id = message.get("id") if isinstance(message, dict) and "method" in message else None
        has_id = isinstance(message, dict) and "method" in message and "id" in message
        plan = _Plan(i, http_method, target, wire_headers, body, request_id, has_id, "content-length" in names)
        return index, plan

    def _checkout(self, i: int, deadline: float) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            if self._idle[i]:
                conn = self._idle[i].pop()
                conn.set_deadline(deadline)  # type: ignore[attr-defined]
                return conn, True
        return self.endpoints[i].new_connection(min(deadline, time.monotonic() + CONNECT_TIMEOUT)), False

    def _checkin(self, i: int, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if not self._closed and len(self._idle[i]) < MAX_IDLE_PER_INSTANCE:
                self._idle[i].append(conn)
                return
        conn.close()

    def _exchange(
        self,
        plan: _Plan,
        index: int,
        deadline: float,
        *,
        barrier: threading.Barrier | None = None,
        stream: HttpStream | None = None,
    ) -> None:
        i = plan.instance
        ep = self.endpoints[i]
        attempts = 2
        while attempts:
            attempts -= 1
            conn, reused = self._checkout(i, deadline)
            if barrier is not None and conn.sock is None:
                with contextlib.suppress(OSError):
                    conn.connect()
            if barrier is not None:
                with contextlib.suppress(threading.BrokenBarrierError):
                    barrier.wait()
                barrier = None
            try:
                if conn.sock is None:
                    conn.connect()
                conn.set_deadline(deadline)  # type: ignore[attr-defined]  # connect had CONNECT_TIMEOUT at most
                conn.putrequest(plan.verb, plan.path, skip_host=True, skip_accept_encoding=True)
                for name, value in plan.headers:
                    conn.putheader(name, _header_bytes(value))
                conn.endheaders(plan.body if plan.body or plan.verb == "POST" else None)
                if stream is not None:
                    stream._attach(conn.sock.raw)
                response = conn.getresponse()
            except ValueError as exc:  # http.client refused a header (CR/LF in a value, bad name)
                conn.close()
                self._record("error", proc=i, ref=index, note=f"request not sent: {exc}")
                return
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                conn.close()
                if reused and attempts:
                    continue  # the server had closed an idle keep-alive socket; retry once on a new one
                self._record("error", proc=i, ref=index, note=f"{type(exc).__name__}: {exc} ({ep.url})")
                return
            except TimeoutError:
                conn.close()
                self._record("timeout", proc=i, ref=index, note=f"no response headers from {ep.url} before the deadline")
                return
            except ConnectionRefusedError:
                conn.close()
                self._record("error", proc=i, ref=index, note=f"connection refused: {ep.url}")
                return
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                self._record("error", proc=i, ref=index, note=f"{type(exc).__name__}: {exc} ({ep.url})")
                return
            keep = self._read_response(conn, response, plan, index, deadline, stream)
            if keep and not response.will_close and not plan.custom_length and stream is None:
                self._checkin(i, conn)
            else:
                conn.close()
            return

    def _read_response(
        self,
        conn: http.client.HTTPConnection,
        response: http.client.HTTPResponse,
        plan: _Plan,
        index: int,
        deadline: float,
        stream: HttpStream | None,
    ) -> bool:
        """Record what the response says; True when the socket may be reused."""
        status = response.status
        headers: dict[str, str] = {}
        for name, value in response.getheaders():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        common = {"proc": plan.instance, "status": status, "headers": headers, "ref": index}
        media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media == "text/event-stream":
            return self._read_sse(conn, response, plan, deadline, common, stream)
        body = bytearray()
        while True:
            try:
                chunk = response.read1(READ_CHUNK)
            except TimeoutError:
                self._record("timeout", note=f"response body incomplete at the deadline ({len(body)} bytes)", **common)
                return False
            except (OSError, http.client.HTTPException) as exc:
                self._record("error", note=f"reading the body failed: {type(exc).__name__}: {exc}", **common)
                return False
            if not chunk:
                break
            body += chunk
            if response.length == 0:  # read1(n) never signals the end of a Content-Length body itself
                break
            if len(body) > self.body_cap:
                self._record(
                    "oversize", raw=bytes(body[:256]), note=f"body over the cap ({len(body)}+ bytes, cap {self.body_cap})",
                    **common,
                )
                return False
        response.close()  # releases the socket for the next request on this keep-alive connection
        raw = bytes(body)
        del body  # not held through the parse: a 16 MiB page costs its bytes once, not twice
        if not raw.strip():
            self._record("http", raw=raw, **common)
            return True
        try:
            message = parse_received(raw)  # a list page held already is not parsed again
        except wire.DecodeError as exc:
            self._record("http", raw=raw[:NOISE_KEEP_BYTES], note=f"body is not JSON ({media or 'no content-type'}): {exc.reason}", **common)
            return True
        self._record("recv", message=message, raw=raw, **common)
        return True

    def _read_sse(
        self,
        conn: http.client.HTTPConnection,
        response: http.client.HTTPResponse,
        plan: _Plan,
        deadline: float,
        common: dict[str, Any],
        stream: HttpStream | None,
    ) -> bool:
        parser = wire.SseParser()
        total = 0
        got_final = False
        recorded = 0
        final_at = 0.0

        def handle(events: list[wire.SseEvent]) -> None:
            nonlocal got_final, recorded, final_at
            for ev in events:
                if not ev.data.strip():
                    continue
                data = ev.data.encode("utf-8")
                note = "; ".join(
                    part for part in (
                        f"sse event={ev.event}" if ev.event != "message" else "",
                        f"sse id={ev.id}" if ev.id is not None else "",
                    ) if part
                )
                try:
                    message = parse_received(data)
                except wire.DecodeError as exc:
                    why = f"SSE data is not JSON: {exc.reason}"
                    self._record("noise", raw=data[:NOISE_KEEP_BYTES], note="; ".join(p for p in (note, why) if p), **common)
                    recorded += 1
                    continue
                self._record("recv", message=message, raw=data, note=note, **common)
                recorded += 1
                if plan.has_id and not got_final and wire.is_response(message) and "id" in message and _same(message["id"], plan.request_id):
                    got_final = True
                    final_at = time.monotonic()

        while True:
            now = time.monotonic()
            limit = deadline if not got_final else min(deadline, final_at + self.sse_linger)
            if now >= limit:
                self._sse_timeout(got_final, recorded, common)
                return False
            try:
                conn.set_deadline(limit)  # type: ignore[attr-defined]
                chunk = response.read1(READ_CHUNK)
            except TimeoutError:
                handle(parser.close())
                self._sse_timeout(got_final, recorded, common)
                return False
            except (OSError, http.client.HTTPException) as exc:
                handle(parser.close())
                if stream is not None and stream._cancelled:
                    self._record("closed", note="SSE stream closed by the harness (cancellation)", **common)
                else:
                    self._record("error", note=f"SSE stream broke: {type(exc).__name__}: {exc}", **common)
                return False
            if not chunk:
                handle(parser.close())
                response.close()
                if stream is not None and stream._cancelled:
                    self._record("closed", note="SSE stream closed by the harness (cancellation)", **common)
                elif plan.has_id and not got_final:
                    self._record("closed", note="SSE stream ended without the response", **common)
                elif recorded == 0:
                    self._record("http", note="SSE stream with no events", **common)
                return True
            total += len(chunk)
            if total > self.body_cap:
                self._record("oversize", note=f"SSE body over the cap ({total}+ bytes, cap {self.body_cap})", **common)
                return False
            handle(parser.feed(chunk))

    def _sse_timeout(self, got_final: bool, recorded: int, common: dict[str, Any]) -> None:
        if got_final:
            note = f"SSE stream still open {self.sse_linger:g} s after the final response"
        else:
            note = f"SSE stream still open at the deadline ({recorded} events, no final response)"
        self._record("timeout", note=note, **common)


@dataclass(frozen=True, slots=True)
class _Plan:
    instance: int
    verb: str
    path: str
    headers: list[tuple[str, str | bytes]]
    body: bytes
    request_id: Any
    has_id: bool
    custom_length: bool


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


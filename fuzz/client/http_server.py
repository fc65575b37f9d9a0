"""The scripted server over Streamable HTTP: one fresh loopback instance per client run.

`serve_case(case)` binds 127.0.0.1 on a free port and serves POST /mcp from a `ScriptedServer`;
each POST body is recorded with its request headers (what HTTP-03/HDR-06 judge), each answer
with its status and headers, `ref` pointing at the POST it answers, as the stdio stub logs them.
Answers are a JSON body, or an SSE stream (the play's `sse`) carrying the stray frames first.
MCP errors get the statuses DIGEST gives them (400 for -32020/-32021/-32022/-32602, 404 for
-32601), since a client must read the body of a 4xx; GET and DELETE get 405, as for a modern server.

Why anyio: everything the server does at once (the listener, each connection, each answer held
back while the client may send more) is a task of one task group, run on one thread through a
blocking portal. Leaving `serve_case` cancels that group: no connection, timer or thread of a
run outlives it, whatever the client left open. Why bounded: a client is as hostile as a server
may be; a request head over HEAD_CAP gets 431, a body over BODY_CAP 413, and what is recorded
is held to the stub's caps (`stub.Recording`, the same budget as over stdio): a body that is not
JSON is kept as an excerpt with its length and digest, and past a cap requests are answered and
counted, the count recorded last.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

import anyio
import orjson
from anyio.abc import ByteStream, SocketAttribute, TaskStatus

from mcp_tempest.fuzz.client.case import ClientCase
from mcp_tempest.fuzz.client.script import NOTE_REPLY, Outgoing, ScriptedServer
from mcp_tempest.fuzz.client.stub import LINE_CAP, Recording, noise_excerpt
from mcp_tempest.targets.transcript import Event

PATH = "/mcp"
HEAD_CAP = 64 * 1024
BODY_CAP = LINE_CAP  # the longest client frame kept, as over stdio
_STATUS_FOR_CODE = {-32020: 400, -32021: 400, -32022: 400, -32602: 400, -32601: 404}


@dataclass(slots=True)
class Served:
    url: str
    events: list[tuple[Event, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    seq: int = 0
    recording: Recording = field(default_factory=Recording)  # the stub's caps: the same budget as over stdio
    recorded: set[int] = field(default_factory=set)  # client frames recorded: their answers are too
    frames_in: int = 0  # client bodies received so far, recorded or not: what releases a held answer
    answering: int = 0  # requests received whose answer is not sent yet (one event loop: no lock)

    def add(self, kind: str, **fields: Any) -> int:
        """Record an event within the caps (see `stub._Log.add`); its sequence number either way."""
        with self.lock:
            self.seq += 1
            sent = len(fields.get("raw") or b"")
            if kind == "noise" and fields.get("raw"):
                fields["raw"], cut = noise_excerpt(fields["raw"])
                fields["note"] = "; ".join(n for n in (fields.get("note"), cut) if n)
            headers = fields.get("headers") or {}
            size = len(fields.get("raw") or b"") + sum(len(k) + len(v) for k, v in headers.items())
            if kind in ("recv", "noise", "oversize"):
                self.frames_in += 1
                admitted = self.recording.frame(kind, size, sent)
                if isinstance(admitted, str):
                    self.events.append((Event("error", time.monotonic(), proc=1, note=admitted), self.seq))
                if admitted is not True:
                    return self.seq
                self.recorded.add(self.seq)
            elif (fields.get("ref") is not None and fields["ref"] not in self.recorded) \
                    or not self.recording.other(size):
                return self.seq
            self.events.append((Event(kind, time.monotonic(), proc=1, **fields), self.seq))  # type: ignore[arg-type]
            return self.seq

    def finished(self) -> list[tuple[Event, int]]:
        """Every event recorded, and last what was cut (`Recording.summary`): the run is over."""
        with self.lock:
            summary = self.recording.summary()
            if summary:
                self.seq += 1
                self.events.append((Event("error", time.monotonic(), proc=1, note=summary), self.seq))
                self.recording.cut_frames = 0
            return list(self.events)


def _status(message: Any) -> int:
    if isinstance(message, dict) and isinstance(message.get("error"), dict):
        return _STATUS_FOR_CODE.get(message["error"].get("code"), 200)
    return 200


class _Closed(Exception):
    """The connection ended (or must end) before a whole request came in."""


class _Reader:
    """Bytes from one connection, read on demand with the caps above."""

    def __init__(self, stream: ByteStream) -> None:
        self.stream = stream
        self.buf = bytearray()

    async def _more(self) -> None:
        try:
            data = await self.stream.receive(65536)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise _Closed() from None
        self.buf += data

    async def head(self) -> bytes | None:
        """The request head (through the blank line), None when it is over HEAD_CAP."""
        while (end := self.buf.find(b"\r\n\r\n")) < 0:
            if len(self.buf) > HEAD_CAP:
                return None
            await self._more()
        if end > HEAD_CAP:
            return None
        head = bytes(self.buf[:end])
        del self.buf[:end + 4]
        return head

    async def exactly(self, n: int) -> bytes:
        while len(self.buf) < n:
            await self._more()
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    async def line(self) -> bytes:
        while (end := self.buf.find(b"\r\n")) < 0:
            if len(self.buf) > HEAD_CAP:
                raise _Closed()
            await self._more()
        out = bytes(self.buf[:end])
        del self.buf[:end + 2]
        return out

    async def chunked(self) -> bytes | None:
        """A chunked body, None when it grows past BODY_CAP."""
        body = bytearray()
        while True:
            size_text = (await self.line()).split(b";")[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise _Closed() from None
            if size == 0:
                while await self.line():  # trailers
                    pass
                return bytes(body)
            if len(body) + size > BODY_CAP:
                return None
            body += await self.exactly(size)
            await self.line()


def _parse_head(head: bytes) -> tuple[str, str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        raise _Closed()
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip()] = value.strip()
    return parts[0], parts[1], parts[2], headers


def _header(headers: dict[str, str], name: str) -> str | None:
    return next((v for k, v in headers.items() if k.lower() == name), None)


async def _send(stream: ByteStream, status: int, body: bytes, ctype: str | None) -> dict[str, str]:
    headers = {"Content-Length": str(len(body))}
    if ctype:
        headers["Content-Type"] = ctype
    head = f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    await stream.send(head.encode("latin-1") + body)
    return headers


async def _connection(stream: ByteStream, script: ScriptedServer, served: Served) -> None:
    """One keep-alive connection, request after request, until the client closes it."""
    reader = _Reader(stream)
    async with stream:
        try:
            while True:
                head = await reader.head()
                if head is None:
                    served.add("oversize", note=f"a request head over {HEAD_CAP} bytes: 431")
                    await _send(stream, 431, b"", None)
                    return
                method, target, version, headers = _parse_head(head)
                if (_header(headers, "transfer-encoding") or "").lower() == "chunked":
                    body = await reader.chunked()
                else:
                    try:
                        length = int(_header(headers, "content-length") or 0)
                    except ValueError:
                        length = -1
                    body = await reader.exactly(length) if 0 <= length <= BODY_CAP else None
                if body is None:
                    served.add("oversize", note=f"a request body over {BODY_CAP} bytes: 413", headers=headers)
                    await _send(stream, 413, b"", None)
                    return
                await _answer(stream, method, target, headers, body, script, served)
                if version == "HTTP/1.0" or (_header(headers, "connection") or "").lower() == "close":
                    return
        except (_Closed, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return


async def _held(served: Served, seconds: float) -> None:
    """Keep an answer back until the client has another request in flight, or `seconds` pass.

    Another request is in flight when one arrives after this one, or was already waiting for its
    answer when this one came. A fixed sleep was a race: a client's two requests sent together
    (each on its own thread and connection) can arrive in either order and far apart on a loaded
    machine, and then RPC-05's two-in-flight case went unseen.
    """
    if served.answering > 1:
        return
    seen = served.frames_in
    deadline = time.monotonic() + seconds
    while served.frames_in == seen and time.monotonic() < deadline:
        await anyio.sleep(0.005)


async def _answer(stream: ByteStream, method: str, target: str, headers: dict[str, str], body: bytes,
                  script: ScriptedServer, served: Served) -> None:
    def recorded(status: int, sent: dict[str, str], raw: bytes, ref: int | None) -> None:
        served.add("http", status=status, headers=sent, raw=raw, ref=ref)

    if method != "POST":
        recorded(405, await _send(stream, 405, b"", None), b"", None)
        return
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        message = None
    ref = served.add("recv" if message is not None else "noise", message=message, raw=body, headers=headers)
    if target.split("?")[0] != PATH:
        recorded(404, await _send(stream, 404, b"", None), b"", ref)
        return
    outs: list[Outgoing] = script.answer(message)
    if not outs:
        recorded(202, await _send(stream, 202, b"", None), b"", ref)
        return
    served.answering += 1
    try:
        await _reply(stream, outs, ref, served)
    finally:
        served.answering -= 1


async def _reply(stream: ByteStream, outs: list[Outgoing], ref: int, served: Served) -> None:
    if outs[0].hold > 0:
        await _held(served, outs[0].hold)
    if outs[0].sse:
        chunks = b"".join(b"data: " + o.raw.replace(b"\n", b"\ndata: ") + b"\n\n" for o in outs)
        sent = await _send(stream, 200, chunks, "text/event-stream")
        for o in outs:
            served.add("send", message=o.message, raw=o.raw, note=o.note, ref=ref, status=200, headers=sent)
        return
    reply = next(o for o in outs if o.note.startswith(NOTE_REPLY))
    status = _status(reply.message)
    await _send(stream, status, reply.raw, "application/json")
    served.add("send", message=reply.message, raw=reply.raw, note=reply.note, ref=ref, status=status,
               headers={"Content-Type": "application/json"})


async def _serve(script: ScriptedServer, served: Served, *, task_status: TaskStatus[str]) -> None:
    """The listener and every connection's task, in one task group (cancelled as one)."""
    async with await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0) as listener:
        port = listener.extra(SocketAttribute.local_port)
        async with anyio.create_task_group() as group:
            task_status.started(f"http://127.0.0.1:{port}{PATH}")

            async def handle(stream: ByteStream) -> None:
                await _connection(stream, script, served)

            await listener.serve(handle, task_group=group)


@contextmanager
def serve_case(case: ClientCase) -> Iterator[Served]:
    served = Served(url="")
    with anyio.from_thread.start_blocking_portal() as portal:
        future, served.url = portal.start_task(_serve, ScriptedServer(case), served)
        try:
            yield served
        finally:
            future.cancel()  # the listener, every connection, every held answer: one scope ends

"""The scripted server over Streamable HTTP: one fresh loopback instance per client run.

`serve_case(case)` binds 127.0.0.1 on a free port and serves POST /mcp from a `ScriptedServer`;
each POST body is recorded with its request headers (what HTTP-03/HDR-06 judge), each answer
with its status and headers, `ref` pointing at the POST it answers, as the stdio stub logs them.
Answers are a JSON body, or an SSE stream (the play's `sse`) carrying the stray frames first.
MCP errors get the statuses DIGEST gives them (400 for -32020/-32021/-32022/-32602, 404 for
-32601), since a client must read the body of a 4xx; GET and DELETE get 405, as for a modern server.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from fuzz.client.case import ClientCase
from fuzz.client.script import NOTE_REPLY, ScriptedServer
from targets.transcript import Event

PATH = "/mcp"
_STATUS_FOR_CODE = {-32020: 400, -32021: 400, -32022: 400, -32602: 400, -32601: 404}


@dataclass(slots=True)
class Served:
    url: str
    events: list[tuple[Event, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    seq: int = 0

    def add(self, kind: str, **fields: Any) -> int:
        with self.lock:
            self.seq += 1
            self.events.append((Event(kind, time.monotonic(), proc=1, **fields), self.seq))  # type: ignore[arg-type]
            return self.seq


def _status(message: Any) -> int:
    if isinstance(message, dict) and isinstance(message.get("error"), dict):
        return _STATUS_FOR_CODE.get(message["error"].get("code"), 200)
    return 200


@contextmanager
def serve_case(case: ClientCase) -> Iterator[Served]:
    script = ScriptedServer(case)
    script_lock = threading.Lock()
    served = Served(url="")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
            pass

        def _send(self, status: int, body: bytes, ctype: str | None, ref: int | None, kind: str = "http",
                  message: Any = None, note: str = "") -> None:
            self.send_response(status)
            headers = {"Content-Length": str(len(body))}
            if ctype:
                headers["Content-Type"] = ctype
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
            if kind == "http":
                served.add("http", status=status, headers=headers, raw=body, ref=ref)

        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            self._send(405, b"", None, None)

        do_DELETE = do_GET  # noqa: N815

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            try:
                message = orjson.loads(body)
            except orjson.JSONDecodeError:
                message = None
            ref = served.add("recv" if message is not None else "noise", message=message, raw=body,
                             headers=dict(self.headers.items()))
            if self.path.split("?")[0] != PATH:
                self._send(404, b"", None, ref)
                return
            with script_lock:
                outs = script.answer(message)
            if not outs:
                self._send(202, b"", None, ref)
                return
            if outs[0].hold > 0:
                time.sleep(outs[0].hold)  # the client may send more while this one is in flight
            if outs[0].sse:
                chunks = b"".join(b"data: " + o.raw.replace(b"\n", b"\ndata: ") + b"\n\n" for o in outs)
                headers = {"Content-Type": "text/event-stream", "Content-Length": str(len(chunks))}
                self._send(200, chunks, "text/event-stream", ref, kind="sse")
                for o in outs:
                    served.add("send", message=o.message, raw=o.raw, note=o.note, ref=ref, status=200,
                               headers=headers)
                return
            reply = next(o for o in outs if o.note.startswith(NOTE_REPLY))
            status = _status(reply.message)
            self._send(status, reply.raw, "application/json", ref, kind="json")
            served.add("send", message=reply.message, raw=reply.raw, note=reply.note, ref=ref, status=status,
                       headers={"Content-Type": "application/json"})

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    served.url = f"http://127.0.0.1:{httpd.server_address[1]}{PATH}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)

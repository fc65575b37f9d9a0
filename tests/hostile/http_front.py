"""The hostile corpus over Streamable HTTP: serves one hostile stdio module's reactions on
`POST /mcp` at 127.0.0.1:PORT, so each wrong behaviour is tried on both transports.

Each POST body is handed to the module's `handle` (or the correct `_base.reply`) as one line;
what the module writes becomes the response (a JSON-RPC error gets the status DIGEST gives its
code: HDR-05, HDR-01/-04). A request the module leaves unanswered keeps its connection open
without a byte, as a wedged worker would, until the client gives up; a notification or a
response that draws nothing gets 202 (HTTP-05). GET and DELETE get 405 (section 7.4).
Usage: python http_front.py PORT MODULE   (MODULE: _base, once_then_hang, other_id, slow, ...)
"""

from __future__ import annotations

import base64
import binascii
import importlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import _base

LIFETIME = 300.0
STATUS_BY_CODE = {-32601: 404, -32700: 400, -32600: 400, -32602: 400, -32020: 400, -32022: 400}
_local = threading.local()
_lock = threading.Lock()  # the modules keep counters (answered once, ...): one line at a time
_count = 0


def _collect(msg: dict[str, Any]) -> None:
    _local.out.append(msg)


_base.write = _collect  # the module writes through _base.write; here that is the response
module = importlib.import_module(sys.argv[2])
handle = getattr(module, "handle", None)


LOOPBACK_ORIGINS = ("http://127.0.0.1", "http://localhost", "http://[::1]")
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def decoded(value: str | None) -> str | None:
    """A header value with HDR-06's base64 sentinel undone (None: absent or undecodable), and
    the optional whitespace around it dropped (RFC 9110 §5.5: a correct server accepts it)."""
    if value is not None:
        value = value.strip(" \t")
    if value is None or not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    try:
        return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def header_defect(headers: Any, body: bytes) -> dict[str, Any] | None:
    """The -32020 a correct server gives a request whose headers do not mirror its body (HDR-01..03)."""
    try:
        msg = json.loads(body)
    except ValueError:
        return None
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str) \
            or not _base._valid_id(msg.get("id")):
        return None  # not a valid request (the body's own error comes first); notifications: undefined
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    want = {"MCP-Protocol-Version": meta.get("io.modelcontextprotocol/protocolVersion"), "Mcp-Method": msg["method"]}
    if msg["method"] in NAMED:
        want["Mcp-Name"] = params.get(NAMED[msg["method"]])
    for name, value in want.items():
        got = decoded(headers.get(name))
        if got is None or (isinstance(value, str) and got != value):
            return _base.error(msg["id"], -32020, f"Header mismatch: {name}")
    return None


def _is_request(body: bytes) -> bool:
    try:
        msg = json.loads(body)
    except ValueError:
        return False
    return isinstance(msg, dict) and isinstance(msg.get("method"), str) and "id" in msg


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes = b"", content_type: str | None = None) -> None:
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self.send_response(405)
        self.send_header("Allow", "POST")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_DELETE = do_GET

    def do_POST(self) -> None:  # noqa: N802
        global _count
        if self.path.split("?", 1)[0] != "/mcp":
            self._send(404)
            return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        origin = self.headers.get("Origin")
        if origin is not None and not origin.startswith(LOOPBACK_ORIGINS):
            self._send(403)
            return
        defect = header_defect(self.headers, body)
        if defect is not None:
            self._send(400, json.dumps(defect).encode(), "application/json")
            return
        _local.out = []
        with _lock:
            n, _count = _count, _count + 1
        if handle is not None:
            handle(body, n)
        else:
            out = _base.reply(body)
            if out is not None:
                _collect(out)
        if not _local.out:
            if _is_request(body):
                time.sleep(max(0.0, LIFETIME - (time.monotonic() - STARTED)))  # wedged: never a byte
                self.close_connection = True
                return
            self._send(202)
            return
        msg = _local.out[0]
        code = msg.get("error", {}).get("code") if isinstance(msg.get("error"), dict) else None
        self._send(STATUS_BY_CODE.get(code, 200), json.dumps(msg).encode(), "application/json")


STARTED = time.monotonic()


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.daemon_threads = True
    threading.Timer(LIFETIME, server.shutdown).start()
    server.serve_forever()


if __name__ == "__main__":
    main()

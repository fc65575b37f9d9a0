"""A client of the scripted HTTP server that is hostile over the wire, for LIFETIME seconds at most.

Mode `body`: one POST that announces 1 GiB and keeps sending it. Mode `head`: a request head that
never ends. Mode `idle`: a proper request, then a second connection left open, half a head sent,
while the client exits (its socket stays with a daemon-free process: the harness must not wait)."""

import json
import socket
import sys
import time
from urllib.parse import urlsplit

LIFETIME = 30.0
mode, url = sys.argv[1], sys.argv[2]
where = urlsplit(url)
sock = socket.create_connection((where.hostname, where.port))
started = time.monotonic()
try:
    if mode == "body":
        sock.sendall(f"POST {where.path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {2**30}\r\n\r\n".encode())
        while time.monotonic() - started < LIFETIME:
            sock.sendall(b"x" * 65536)
    elif mode == "head":
        sock.sendall(f"POST {where.path} HTTP/1.1\r\n".encode())
        while time.monotonic() - started < LIFETIME:
            sock.sendall(b"X-Pad: " + b"y" * 4000 + b"\r\n")
    else:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
        sock.sendall(f"POST {where.path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                     + body)
        sock.recv(65536)
        other = socket.create_connection((where.hostname, where.port))
        other.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\n")
        print('{"step": "server/discover", "outcome": "complete", "resultType": "complete", "code": null}',
              flush=True)
except OSError:
    pass

"""A client that sends 64 KiB junk frames to its server in a loop, for LIFETIME seconds at most
(or COUNT frames, when a number comes first): `junk_bodies.py [COUNT] {url}` POSTs each as a
request body and reads each answer; `junk_bodies.py [COUNT] {server}` writes each as a line to
the server it launches. Every frame is one the server must read (well under the caps on one
request or line), so what bounds the harness is what it keeps of them all."""

import socket
import subprocess
import sys
import time
from urllib.parse import urlsplit

LIFETIME = 60.0
SIZE = 64 * 1024
args = sys.argv[1:]
count = int(args.pop(0)) if args[0].isdigit() else None
started = time.monotonic()


def junk(n: int) -> bytes:
    """Not JSON, not UTF-8 (bytes up to 250), and different every time."""
    return bytes((n * 7 + i) % 251 for i in range(256)).replace(b"\n", b" ") * (SIZE // 256)


def going(sent: int) -> bool:
    return time.monotonic() - started < LIFETIME and (count is None or sent < count)


sent = 0
try:
    if args[0].startswith("http"):
        where = urlsplit(args[0])
        head = (f"POST {where.path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Accept: application/json, text/event-stream\r\nContent-Length: {SIZE}\r\n\r\n").encode()
        sock = socket.create_connection((where.hostname, where.port))
        reader = sock.makefile("rb")
        while going(sent):
            sock.sendall(head + junk(sent))
            sent += 1
            length = 0
            while (line := reader.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            if not line:
                break
            reader.read(length)
    else:
        server = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        assert server.stdin is not None
        while going(sent):
            server.stdin.write(junk(sent) + b"\n")
            sent += 1
        server.stdin.close()
        server.wait()
except OSError:
    pass

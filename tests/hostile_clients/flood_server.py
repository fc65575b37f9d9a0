"""A client that floods the server it launched for LIFETIME seconds (bounded).

Mode `lines` (the default): valid requests, one after another, never waiting for an answer.
Mode `line`: one line that never ends."""

import sys
import time

import _peer

LIFETIME = 30.0
mode, argv = (sys.argv[1], sys.argv[2:]) if sys.argv[1] in ("lines", "line") else ("lines", sys.argv[1:])
proc = _peer.start(argv)
_peer.send(proc, _peer.request(1, "server/discover"))
_peer.read_one(proc)
assert proc.stdin is not None
started = time.monotonic()
try:
    if mode == "line":
        proc.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"pad":"')
        chunk = b"x" * 65536
        while time.monotonic() - started < LIFETIME:
            proc.stdin.write(chunk)
    else:
        line = b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"pad":"' + b"y" * 4000 + b'"}}\n'
        while time.monotonic() - started < LIFETIME:
            proc.stdin.write(line * 16)
except BrokenPipeError:
    pass

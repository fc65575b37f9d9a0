"""A client that asks one thing and then floods its own stdout for LIFETIME seconds (bounded)."""

import sys
import time

import _peer

LIFETIME = 30.0
proc = _peer.start(sys.argv[1:])
_peer.send(proc, _peer.request(1, "server/discover"))
_peer.read_one(proc)
print('{"step": "server/discover", "outcome": "complete", "resultType": "complete", "code": null}', flush=True)
block = b"flood: this is not a reading " * 2000 + b"\n"
started = time.monotonic()
try:
    while time.monotonic() - started < LIFETIME:
        sys.stdout.buffer.write(block)
except BrokenPipeError:
    pass

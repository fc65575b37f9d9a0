"""A stdio server that writes without end (bounded by LIFETIME) and answers nothing.

Mode `noise` (the default): non-JSON log lines. Mode `notifications`: valid JSON-RPC notifications,
which a driver parses and would keep, one event each, without a cap.
Usage: python noisy_stdio.py [noise|notifications]
"""

import sys
import time

LIFETIME = 60.0
started = time.monotonic()
if sys.argv[1:] == ["notifications"]:
    line = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n'
else:
    line = b"this is not JSON, it is a log line that goes on for a while " * 2 + b"\n"
block = line * 1000
out = sys.stdout.buffer
try:
    while time.monotonic() - started < LIFETIME:
        out.write(block)
        out.flush()
except BrokenPipeError:
    pass

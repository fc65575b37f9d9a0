"""A stdio server that prints non-JSON noise without end (bounded by LIFETIME) and answers nothing."""

import sys
import time

LIFETIME = 60.0
started = time.monotonic()
line = b"this is not JSON, it is a log line that goes on for a while " * 2 + b"\n"
block = line * 1000
out = sys.stdout.buffer
try:
    while time.monotonic() - started < LIFETIME:
        out.write(block)
        out.flush()
except BrokenPipeError:
    pass

"""A server whose start-up tries to reach a listener on the harness's loopback, then becomes the
reference server: `reach_out.py PORT LOGFILE [reference server args...]`.

Each start appends "reached" or "unreachable <reason>" to LOGFILE, which is how the tests see
whether `--isolate-network` kept it in a namespace of its own.
"""

import os
import socket
import sys

port, log = int(sys.argv[1]), sys.argv[2]
try:
    with socket.create_connection(("127.0.0.1", port), timeout=2.0):
        outcome = "reached"
except OSError as exc:
    outcome = f"unreachable {type(exc).__name__}"
with open(log, "a") as f:
    f.write(outcome + "\n")
os.execv(sys.executable, [sys.executable, "-m", "mcp_tempest.targets.reference", *sys.argv[3:]])

"""The reference server (stdio, or HTTP with `--port N`), after leaving a classic daemon behind:
fork, setsid, fork again, and the grandchild sleeps in a session of its own (no group of ours)."""

import os
import sys
import time

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        time.sleep(300)
    os._exit(0)
os.wait()
args = sys.argv[1:]
transport = ["--transport", "http", "--host", "127.0.0.1"] if "--port" in args else ["--transport", "stdio"]
os.execv(sys.executable, [sys.executable, "-m", "mcp_tempest.targets.reference", *transport, *args])

"""The reference stdio server, behind a process of its group that floods stderr (STDERR_MB, default 200)."""

import os
import sys

megabytes = int(os.environ.get("STDERR_MB", "200"))
if os.fork() == 0:
    chunk = b"E" * 1023 + b"\n"
    try:
        for _ in range(megabytes * 1024):
            os.write(2, chunk)
    finally:
        os._exit(0)
os.execv(sys.executable, [sys.executable, "-m", "mcp_tempest.targets.reference", "--transport", "stdio", *sys.argv[1:]])

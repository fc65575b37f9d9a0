"""A stdio "server" with module-level state: it answers every line with how many lines this
process has read and the pid it started as, so a test sees whether state leaks between processes."""

import json
import os
import sys

STARTED_AS = os.getpid()
SEEN: list[str] = []

for line in sys.stdin:
    SEEN.append(line)
    print(json.dumps({"jsonrpc": "2.0", "id": len(SEEN), "result": {"seen": len(SEEN), "pid": STARTED_AS}}),
          flush=True)

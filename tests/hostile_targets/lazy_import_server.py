"""A stdio "server" that imports a module only once it runs (argv[1], from this directory), the
way servers import inside functions: every answer says whether that module was already loaded
when the script started (a fork server learned it), how many times this process bumped its
module-level counter, and how many threads the process has."""

import importlib
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
NAME = sys.argv[1]
PRELOADED = NAME in sys.modules

for n, _line in enumerate(sys.stdin, 1):
    module = importlib.import_module(NAME)
    module.BUMPS = getattr(module, "BUMPS", 0) + 1
    print(json.dumps({"jsonrpc": "2.0", "id": n, "result": {
        "preloaded": PRELOADED, "bumps": module.BUMPS, "threads": threading.active_count()}}), flush=True)

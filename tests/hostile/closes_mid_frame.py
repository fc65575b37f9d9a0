"""Answers its first request, then writes half of the next reply and exits. Verdict: the
request whose reply was cut off is never answered (a finding, never a pass)."""

from __future__ import annotations

import json
import sys

import _base

answered = 0


def handle(line: bytes, n: int) -> None:
    global answered
    out = _base.reply(line)
    if out is None:
        return
    if answered == 0:
        answered = 1
        _base.write(out)
        return
    data = json.dumps(out).encode()
    sys.stdout.buffer.write(data[: len(data) // 2])
    sys.stdout.buffer.flush()
    sys.exit(3)


if __name__ == "__main__":
    _base.serve(handle)

"""Answers its first request (its first HOSTILE_ANSWERS requests), then reads on and never answers
again (a wedged worker). Verdict: `fuzz --properties valid` fails within bounded time (the target
stopped answering)."""

from __future__ import annotations

import os

import _base

left = int(os.environ.get("HOSTILE_ANSWERS", "1"))


def handle(line: bytes, n: int) -> None:
    global left
    out = _base.reply(line)
    if out is not None and left > 0:
        left -= 1
        _base.write(out)


if __name__ == "__main__":
    _base.serve(handle)

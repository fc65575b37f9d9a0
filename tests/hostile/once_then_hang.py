"""Answers its first request, then reads on and never answers again (a wedged worker).
Verdict: `fuzz --properties valid` fails within bounded time (the target stopped answering)."""

from __future__ import annotations

import _base

answered = False


def handle(line: bytes, n: int) -> None:
    global answered
    out = _base.reply(line)
    if out is not None and not answered:
        answered = True
        _base.write(out)


if __name__ == "__main__":
    _base.serve(handle)

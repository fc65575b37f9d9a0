"""A correct server that takes 2 s over every reply. Verdict: clean within a deadline that
allows it (--timeout 5), every request unanswered within one that does not (--timeout 1)."""

from __future__ import annotations

import time

import _base


def handle(line: bytes, n: int) -> None:
    out = _base.reply(line)
    if out is not None:
        time.sleep(2.0)
        _base.write(out)


if __name__ == "__main__":
    _base.serve(handle)

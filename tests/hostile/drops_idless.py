"""Correct, except that it never writes an error without an id: a frame it cannot read gets
no answer. Verdict: RPC-01 (JSON-RPC 2.0's error response), a malformed frame got no reply."""

from __future__ import annotations

import _base


def handle(line: bytes, n: int) -> None:
    out = _base.reply(line)
    if out is not None and "id" in out:
        _base.write(out)


if __name__ == "__main__":
    _base.serve(handle)

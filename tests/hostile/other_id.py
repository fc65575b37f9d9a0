"""Answers server/discover correctly (so it probes as a modern server), every other request
under another id (a cross-wired router). Verdict: RPC-06 MUST, a response id that matches no
request sent."""

from __future__ import annotations

import _base


def handle(line: bytes, n: int) -> None:
    out = _base.reply(line)
    if out is None:
        return
    if "id" in out and b'"server/discover"' not in line:
        rid = out["id"]
        out["id"] = f"{rid}-other" if isinstance(rid, str) else rid + 7919
    _base.write(out)


if __name__ == "__main__":
    _base.serve(handle)

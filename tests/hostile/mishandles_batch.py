"""Correct, except for three frames the framing property's coverage phase sends together in its
last batch (unknown-notification, cancelled-missing-request-id, blank-line), each mishandled its
own way, so only a failing batch split probe by probe tells them apart:

- an unknown notification is answered with -32601 (RPC-10: a notification gets no reply);
- a notifications/cancelled without requestId is answered with -32602 (CAN-05: an invalid
  cancellation is ignored silently);
- a blank line is served a result (RPC-01: what is no valid request is never served).

Verdict: three findings, one per rule, each naming its own probe and no other.

`--slow-blank SECONDS`: the blank line is served that much later, so a campaign's time can run
out while the failing batch is played, before its probes are judged alone.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import _base

KNOWN_NOTIFICATIONS = frozenset({"notifications/initialized", "notifications/progress"})


def _mishandled(line: bytes, msg: Any) -> dict[str, Any] | None:
    """What this server writes instead of the correct reply; None when it replies correctly."""
    if not line.strip():
        return {"jsonrpc": "2.0", "id": None, "result": {"resultType": "complete"}}
    if not isinstance(msg, dict) or "id" in msg or not isinstance(msg.get("method"), str):
        return None
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    if msg["method"] == "notifications/cancelled":
        return None if "requestId" in params else _base.error(None, -32602, "Invalid params: no requestId")
    return None if msg["method"] in KNOWN_NOTIFICATIONS else _base.error(None, -32601, "Method not found")


SLOW_BLANK = 0.0


def handle(line: bytes, n: int) -> None:
    if not line.strip():
        time.sleep(SLOW_BLANK)
    try:
        msg = json.loads(line)
    except ValueError:
        msg = None
    out = _mishandled(line, msg) or _base.reply(line)
    if out is not None:
        _base.write(out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--slow-blank", type=float, default=0.0)
    SLOW_BLANK = parser.parse_args().slow_blank
    _base.serve(handle)

"""Correct, except that its one MRTR tool completes a retry whatever requestState and answers it
carries: a state it never minted, or answers keyed by names it did not ask. Verdicts: the mrtr
property's catalogue rows state-forged (MRTR-13, HEURISTIC: the spec leaves the reaction open)
and responses-wrong-key (MRTR-16, SHOULD)."""

from __future__ import annotations

from typing import Any

import _base

TOOL = {"name": "ask", "description": "asks one yes/no question", "inputSchema": {"type": "object"}}
QUESTION = {"method": "elicitation/create",
            "params": {"mode": "form", "message": "ok?",
                       "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}


def _result(rid: Any, body: dict[str, Any]) -> dict[str, Any]:
    out = _base.result(rid, body)
    out["result"]["resultType"] = body.get("resultType", "complete")
    return out


def handle(line: bytes, n: int) -> None:
    out = _base.reply(line)
    try:
        msg = _base.json.loads(line)
    except ValueError:
        msg = None
    if isinstance(out, dict) and isinstance(msg, dict) and out.get("error", {}).get("code") == -32601:
        rid, method = msg["id"], msg["method"]
        params = msg.get("params") or {}
        caps = params["_meta"]["io.modelcontextprotocol/clientCapabilities"]
        if method == "tools/list":
            out = _result(rid, {"tools": [TOOL]})
        elif method == "tools/call" and params.get("name") != TOOL["name"]:
            out = _base.error(rid, -32602, "Unknown tool")
        elif method == "tools/call" and "requestState" in params:
            out = _result(rid, {"content": [{"type": "text", "text": "done"}]})  # never looks at the state
        elif method == "tools/call" and not isinstance(caps.get("elicitation"), dict):
            out = _base.error(rid, -32021, "Missing required client capability: elicitation")
            out["error"]["data"] = {"requiredCapabilities": {"elicitation": {}}}
        elif method == "tools/call":
            out = _result(rid, {"resultType": "input_required", "inputRequests": {"q": QUESTION},
                                "requestState": "state-1"})
    elif isinstance(out, dict) and "result" in out and isinstance(msg, dict) and msg.get("method") == "server/discover":
        out["result"]["capabilities"] = {"tools": {}}
    if out is not None:
        _base.write(out)


if __name__ == "__main__":
    _base.serve(handle)

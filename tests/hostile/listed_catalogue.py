"""A correct modern server that lists whatever catalogue a JSON file holds: a release whose
definitions a test writes (tests/test_catalogue_compare.py changes the reference server's in each
way `catalogue --compare` classifies).

    python listed_catalogue.py FILE

FILE: {"tools": [...], "resources": [...], "resourceTemplates": [...], "prompts": [...],
"instructions": "..."} (every key optional; `catalogue --json`'s `definitions` is one). Each list
on one page; tools/call answers a text result naming the tool; stdlib only.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import _base

with open(sys.argv[1], encoding="utf-8") as fh:
    CATALOGUE: dict[str, Any] = json.load(fh)

LISTS = {"tools/list": "tools", "resources/list": "resources", "resources/templates/list": "resourceTemplates",
         "prompts/list": "prompts"}


def handle(line: bytes, n: int) -> None:
    out = _base.reply(line)
    if out is None:
        return
    try:
        msg = json.loads(line)
    except ValueError:
        msg = None
    if isinstance(msg, dict) and out.get("error", {}).get("code") == -32601:
        rid, method = msg.get("id"), msg.get("method")
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        if method in LISTS:
            out = _base.result(rid, {LISTS[method]: CATALOGUE.get(LISTS[method], [])})
        elif method == "tools/call":
            out = _base.result(rid, {"content": [{"type": "text", "text": f"called {params.get('name')}"}]})
    elif isinstance(msg, dict) and msg.get("method") == "server/discover" and "result" in out:
        out["result"]["capabilities"] = {"tools": {}, "resources": {}, "prompts": {}}
        if isinstance(CATALOGUE.get("instructions"), str):
            out["result"]["instructions"] = CATALOGUE["instructions"]
    _base.write(out)


if __name__ == "__main__":
    _base.serve(handle)

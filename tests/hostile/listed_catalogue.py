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


def answer(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    if method in LISTS:
        return {LISTS[method]: CATALOGUE.get(LISTS[method], [])}
    return _base.tool_called(params) if method == "tools/call" else None


DISCOVER: dict[str, Any] = {"capabilities": {"tools": {}, "resources": {}, "prompts": {}}}
if isinstance(CATALOGUE.get("instructions"), str):
    DISCOVER["instructions"] = CATALOGUE["instructions"]


def handle(line: bytes, n: int) -> None:
    out = _base.reply_with(line, answer, DISCOVER)
    if out is not None:
        _base.write(out)


if __name__ == "__main__":
    _base.serve(handle)

"""Comparing two answers "after normalising ids, handles and opaque states".

Two processes that both behave correctly still differ in what they mint: request ids, event ids,
requestState, timestamps. What must not differ is the kind of answer: error or result, which
error code, which resultType, whether the tool failed, which questions an input_required asks,
which members the result has. That is the *shape*, and statelessness is judged on it.

List results are the exception: a list is the same list (TOOL-02, RES-01, PR-01), so items are
compared exactly, with only `_meta` left out.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from mcp_tempest.fuzz.properties.executor import Run


def shape(msg: Any) -> tuple[Any, ...]:
    if msg is None:
        return ("no answer",)
    if not isinstance(msg, dict):
        return ("not an object",)
    if isinstance(msg.get("error"), dict):
        return ("error", msg["error"].get("code"))
    result = msg.get("result")
    if not isinstance(result, dict):
        return ("other",)
    kind = result.get("resultType")
    out: tuple[Any, ...] = ("result", kind, bool(result.get("isError", False)))
    if kind == "input_required":
        requests = result.get("inputRequests") if isinstance(result.get("inputRequests"), dict) else {}
        out += (tuple(sorted(str(r.get("method")) for r in requests.values() if isinstance(r, dict))),)
    else:
        out += (tuple(sorted(k for k in result if k not in ("_meta", "requestState", "inputRequests"))),)
    return out


def describe_shape(s: tuple[Any, ...]) -> str:
    if s[0] == "error":
        return f"error {s[1]}"
    if s[0] == "result":
        text = f"result {s[1]}"
        if s[2]:
            text += " (isError)"
        if s[1] == "input_required" and len(s) > 3:
            text += f" asking {', '.join(s[3]) or 'nothing'}"
        return text
    return s[0]


def log_count(run: Run, step: int) -> int:
    """notifications/message the server sent for this step's request (stdio: between the send
    and the response on the same process; HTTP: on the response stream)."""
    idx = run.sends.get(step)
    if idx is None:
        return 0
    events = run.transcript.events
    if run.transcript.transport.pairs_by_request:
        pair = run.pair(step)
        return sum(1 for i in (pair.stream if pair is not None else ())
                   if isinstance(events[i].message, dict) and events[i].message.get("method") == "notifications/message")
    sent = events[idx]
    end = run.response_events.get(step, len(events))
    count = 0
    for event in events[idx + 1 : end + 1 if end >= 0 else len(events)]:
        msg = event.message
        if not (event.kind == "recv" and isinstance(msg, dict) and msg.get("method") == "notifications/message"):
            continue
        count += event.proc == sent.proc
    return count


class Listed:
    """One list result's items and whether more pages follow, compared as JSON (keys sorted).

    Why not their encoding: a page of 100,000 tools is 9 MB encoded, and a `lists` example compares
    three to five of them. Equal pages received in one transcript are one list object
    (targets.transcript.SharedItems), so they compare equal at once; others by a digest of their
    canonical encoding, made once each, never kept."""

    __slots__ = ("_digest", "items", "more")

    def __init__(self, items: Any, more: bool) -> None:
        self.items = items
        self.more = more
        self._digest: bytes | None = None

    def digest(self) -> bytes:
        if self._digest is None:
            encoded = orjson.dumps({"items": self.items, "more": self.more}, option=orjson.OPT_SORT_KEYS)
            self._digest = hashlib.blake2b(encoded, digest_size=16).digest()
        return self._digest

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Listed):
            return NotImplemented
        if self.items is other.items and self.more == other.more:
            return True
        return self.digest() == other.digest()

    def __hash__(self) -> int:
        return hash(self.digest())

    def item_list(self) -> list[Any]:
        return self.items if isinstance(self.items, list) else []


def list_items(msg: Any, key: str) -> Listed | None:
    """The list's items and whether more pages follow; None for a non-result."""
    if not isinstance(msg, dict) or not isinstance(msg.get("result"), dict):
        return None
    result = msg["result"]
    return Listed(result.get(key), isinstance(result.get("nextCursor"), str))


def same_items_in_any_split(a: list[Any], b: list[Any]) -> bool:
    """Whether two runs of items hold the same items, each as often, in any order (keys sorted)."""
    if len(a) != len(b):
        return False

    def encoded(items: list[Any]) -> list[bytes]:
        return sorted(orjson.dumps(i, option=orjson.OPT_SORT_KEYS) for i in items)

    return encoded(a) == encoded(b)


def list_diff(a: Listed | None, b: Listed | None, key: str) -> str:
    """A short description of how two lists differ (names added/removed when possible)."""
    if a is None or b is None:
        return "one of the answers is not a list result"
    ia, ib = a.item_list(), b.item_list()

    def names(items: Any) -> list[str]:
        return [str(i.get("name") or i.get("uri") or i.get("uriTemplate")) for i in items if isinstance(i, dict)]

    na, nb = names(ia), names(ib)
    known_a, known_b = set(na), set(nb)  # `n not in na` on lists is quadratic: hours on 100,000 tools
    added = [n for n in nb if n not in known_a]
    removed = [n for n in na if n not in known_b]
    if added or removed:
        parts = []
        if added:
            parts.append(f"extra {key}: {', '.join(added[:5])}")
        if removed:
            parts.append(f"missing {key}: {', '.join(removed[:5])}")
        return "; ".join(parts)
    if na != nb:
        return f"same {key} in a different order"
    return f"{key} differ in their definitions"

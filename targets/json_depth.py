"""JSON of any depth, handled without recursion: measured, cut, written, compared and parsed.

Why here, under `targets`: a server's message can nest as deep as it likes, and everything that
walks one (orjson, which writes nothing deeper than 254 levels and reads nothing deeper than
1,024; Python's `==`, `json` and `copy`, which stop near 1,000) is recursive. The wire codec cuts
what it parses with these helpers, so they sit beside it where `targets` (which may not import
`strategies`) can use them; `strategies.json_bounds` applies the same ones to the schemas it
compiles. Every function here is a loop over an explicit stack, so no depth is too deep for it.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

import orjson

#: Deepest nesting a written JSON document (a repro, findings.json) keeps, and the depth a received
#: message too deep for orjson to write back is cut to (`cut_received`): orjson writes nothing
#: deeper than 254, and a message is written inside an envelope (a transcript event, a repro).
MAX_WRITTEN_DEPTH: Final = 240

#: orjson's own bound on writing (levels), and the start of its error when reading past its
#: bound on reading (1,024 levels): the one refusal `parse_deep` takes over.
ORJSON_WRITE_DEPTH: Final = 254
ORJSON_DEPTH_REFUSAL: Final = "depth limit exceeded"


def nesting_depth(value: Any, *, stop: int | None = None) -> int:
    """How deep `value` nests (a scalar 0, `{}` 1, `{"a": []}` 2), walked without recursion;
    with `stop`, the walk ends as soon as that depth is seen (and returns it)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if stop is not None and deepest >= stop:
                return deepest
        stack.extend((child, depth) for child in children if isinstance(child, dict | list | tuple))
    return deepest


def cut_deep(value: Any, limit: int, *, max_items: int | None = None) -> tuple[Any, int]:
    """`value` with every container that would sit deeper than `limit` replaced by an empty one
    of its kind (`{}`, which as a schema allows anything; `[]`), and with `max_items`, every list
    past that many items cut to its first `max_items`; and how many parts were cut. The value
    itself when nothing was (no copy survives); a copy otherwise, the input untouched. Only the
    part kept is walked: a list of 100,000 items cut to 256 costs 256."""
    if not isinstance(value, dict | list | tuple):
        return value, 0
    cut = 0
    top = _empty_like(value)
    stack: list[tuple[Any, Any, int]] = [(value, top, 1)]
    while stack:
        source, target, depth = stack.pop()
        if isinstance(source, dict):
            items: Any = source.items()
        else:
            if max_items is not None and len(source) > max_items:
                cut += 1
                source = source[:max_items]
            items = enumerate(source)
        for key, child in items:
            if isinstance(child, dict | list | tuple):
                copy: Any = _empty_like(child)
                if depth + 1 >= limit:  # the child sits at the limit: only an empty one fits there
                    cut += bool(child)
                else:
                    stack.append((child, copy, depth + 1))
            else:
                copy = child
            if isinstance(target, dict):
                target[key] = copy
            else:
                target.append(copy)
    return (top, cut) if cut else (value, 0)


def _empty_like(value: Any) -> Any:
    return {} if isinstance(value, dict) else []


_END: Final = object()


def json_text(value: Any, *, separators: tuple[str, str] = (", ", ": ")) -> str:
    """`json.dumps(value, ensure_ascii=False, separators=separators)` for a value of any depth:
    the same text, written without recursion (the standard encoder stops near 1,000 levels)."""
    item_sep, key_sep = separators
    out: list[str] = []
    stack: list[list[Any]] = []  # [iterator, is_object, first]

    def start(v: Any) -> None:
        if isinstance(v, dict):
            out.append("{")
            stack.append([iter(v.items()), True, True])
        elif isinstance(v, list | tuple):
            out.append("[")
            stack.append([iter(v), False, True])
        else:
            out.append(json.dumps(v, ensure_ascii=False))

    start(value)
    while stack:
        frame = stack[-1]
        nxt = next(frame[0], _END)
        if nxt is _END:
            out.append("}" if frame[1] else "]")
            stack.pop()
            continue
        if not frame[2]:
            out.append(item_sep)
        frame[2] = False
        if frame[1]:
            key, child = nxt
            out.append(json.dumps(key if isinstance(key, str) else str(key), ensure_ascii=False) + key_sep)
            start(child)
        else:
            start(nxt)
    return "".join(out)


def same_json(a: Any, b: Any) -> bool:
    """`a == b` for JSON values of any depth, compared without recursion (Python's own `==`
    raises RecursionError near 1,000 levels)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, dict) and isinstance(y, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list | tuple) and isinstance(y, list | tuple):
            if len(x) != len(y) or type(x) is not type(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif isinstance(x, dict | list | tuple) or isinstance(y, dict | list | tuple):
            return False
        elif x != y:
            return False
    return True


def cut_received(value: Any, raw: bytes | str) -> Any:
    """`value` (parsed from `raw`) cut to `MAX_WRITTEN_DEPTH` when it nests deeper than orjson can
    write, so everything downstream (the oracle's encodings, `==`, a repro) may take it as it is;
    the raw bytes, kept by the transcript, still say what the server sent. A cheap test first:
    a message with fewer brackets than that depth cannot be that deep (almost every one), and
    orjson writing a big one back (milliseconds a megabyte) is far cheaper than walking it."""
    count = raw.count(b"{" if isinstance(raw, bytes) else "{") + raw.count(b"[" if isinstance(raw, bytes) else "[")
    if count <= ORJSON_WRITE_DEPTH:
        return value
    try:
        for piece in _pieces(value):
            orjson.dumps(piece)
    except orjson.JSONEncodeError:
        return cut_deep(value, MAX_WRITTEN_DEPTH)[0]
    return value


#: Items of a long list written at a time by `cut_received`'s test (see `_pieces`).
WRITE_TEST_ITEMS: Final = 1024


def _pieces(value: Any) -> list[Any]:
    """`value` as pieces orjson writes one at a time, each at the depth it has in `value`, so that
    every piece writes if and only if the whole does: a response's long result lists (a 12 MB
    tools/list page) go a slice at a time inside copies of their envelope, and the rest of the
    response whole, without them. Writing the whole page back made a 13 to 26 MB buffer for
    every page received, beside the parsed page."""
    result = value.get("result") if isinstance(value, dict) else None
    if not isinstance(result, dict):
        return [value]
    long = {k: v for k, v in result.items() if isinstance(v, list) and len(v) > WRITE_TEST_ITEMS}
    if not long:
        return [value]
    rest = {k: v for k, v in value.items() if k != "result"}
    pieces: list[Any] = [{**rest, "result": {k: v for k, v in result.items() if k not in long}}]
    for key, items in long.items():
        pieces += [{"result": {key: items[at:at + WRITE_TEST_ITEMS]}} for at in range(0, len(items), WRITE_TEST_ITEMS)]
    return pieces


_WS: Final = re.compile(rb"[ \t\n\r]*")
_STRING: Final = re.compile(rb'"(?:[^"\\\x00-\x1f]+|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"')
_NUMBER: Final = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS: Final = ((b"true", True), (b"false", False), (b"null", None))
_SKIPPED: Final = object()  # the container a value goes into was cut: the value is checked, not kept


class DeepJSONError(ValueError):
    """`parse_deep` found the text is not JSON (what and where, as orjson would say it)."""


def parse_deep(data: bytes | str, limit: int = MAX_WRITTEN_DEPTH) -> Any:
    """The JSON value of `data`, of any depth, read without recursion, with every container that
    would sit deeper than `limit` cut as `cut_deep` cuts it (an empty one of its kind at `limit`,
    nothing below); what is cut is still read, so a text that is not JSON anywhere is refused
    (DeepJSONError). For the messages orjson refuses for their depth alone: a server may send
    one, and a correct message must not be taken for a broken frame. Scalars are decoded by
    orjson itself, so a string or number means here what it means everywhere else."""
    if isinstance(data, str):
        try:
            data = data.encode("utf-8")
        except UnicodeEncodeError:
            raise DeepJSONError("str is not valid UTF-8: surrogates not allowed") from None
    n = len(data)
    # One frame per open container: [what its items go into (None when cut), whether an object,
    # the key waiting for its value].
    stack: list[list[Any]] = []
    root: Any = _SKIPPED
    pos = _WS.match(data, 0).end()  # type: ignore[union-attr]

    def fail(what: str, at: int) -> DeepJSONError:
        return DeepJSONError(f"{what}: char {at}")

    def key_at(at: int) -> tuple[str, int]:
        m = _STRING.match(data, at)
        if m is None:
            raise fail("unexpected end of data" if at >= n else "expected a string key", at)
        try:
            key = orjson.loads(m.group())
        except orjson.JSONDecodeError as exc:
            raise fail(str(exc).split(":", 1)[0], at) from None
        at = _WS.match(data, m.end()).end()  # type: ignore[union-attr]
        if data[at:at + 1] != b":":
            raise fail("expected ':'", at)
        return key, _WS.match(data, at + 1).end()  # type: ignore[union-attr]

    def put(value: Any) -> None:
        nonlocal root
        if not stack:
            root = value
            return
        frame = stack[-1]
        if frame[0] is None:
            return
        if frame[1]:
            frame[0][frame[2]] = value
        else:
            frame[0].append(value)

    while True:
        # a value starts at pos
        c = data[pos:pos + 1]
        if c in (b"{", b"["):
            is_object = c == b"{"
            depth = len(stack) + 1
            live = not stack or stack[-1][0] is not None
            container: Any = ({} if is_object else []) if live and depth <= limit else None
            if container is not None:
                put(container)
            stack.append([container if depth < limit else None, is_object, None])
            pos = _WS.match(data, pos + 1).end()  # type: ignore[union-attr]
            if data[pos:pos + 1] == (b"}" if is_object else b"]"):
                stack.pop()
                pos += 1
            else:
                if is_object:
                    stack[-1][2], pos = key_at(pos)
                continue
        else:
            m = _STRING.match(data, pos) if c == b'"' else _NUMBER.match(data, pos)
            if m is not None:
                try:
                    put(orjson.loads(m.group()))
                except orjson.JSONDecodeError as exc:
                    raise fail(str(exc).split(":", 1)[0], pos) from None
                pos = m.end()
            else:
                for word, literal in _LITERALS:
                    if data.startswith(word, pos):
                        put(literal)
                        pos += len(word)
                        break
                else:
                    raise fail("unexpected end of data" if pos >= n else "expected a JSON value", pos)
        # a value ended at pos: what follows it
        while True:
            pos = _WS.match(data, pos).end()  # type: ignore[union-attr]
            if not stack:
                if pos != n:
                    raise fail("trailing characters after the value", pos)
                return root
            frame = stack[-1]
            c = data[pos:pos + 1]
            if c == b",":
                pos = _WS.match(data, pos + 1).end()  # type: ignore[union-attr]
                if frame[1]:
                    frame[2], pos = key_at(pos)
                break
            if c == (b"}" if frame[1] else b"]"):
                stack.pop()
                pos += 1
                continue
            raise fail("unexpected end of data" if pos >= n else "expected ',' or a closing bracket", pos)

"""How deep a schema the harness follows: one bound, applied where a server's schema comes in.

Why a bound at all: every walker of a JSON Schema here is recursive (the strategy compiler, the
jsonschema validators the oracle and the compiler's filters use, `sample_value`, the load
generator, `dataclasses.asdict` when a surface goes to a worker) and so is orjson, which refuses
to write a value nested deeper than 254. A server that lists an `inputSchema` nested 500 deep
would otherwise end the campaign with a RecursionError, or lose a finding when its repro is
written. Generated values nest no deeper than the schema they come from, so a bounded schema
keeps the frames, transcripts and repro files bounded too.

Why cut the document rather than teach each walker to stop: one cut, made once where a tool
enters the surface, is counted and reported once (which tool, how deep, where it was cut); each
walker still guards its own recursion against schemas that arrive another way (`$ref` cycles
are the compiler's, see `Limits.max_ref_depth`), but none of them has to report.

The unit is JSON nesting (objects and arrays), the one orjson and the validators count: a chain
of `properties.x` costs two levels per property, an `items` chain one per array.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

#: Deepest JSON nesting of a schema document the harness keeps (and of values it generates from
#: one). Real tool schemas stay well under 20; 64 leaves every walker far from Python's recursion
#: limit and every generated frame far from orjson's 254, with the envelope around it.
MAX_SCHEMA_DEPTH: Final = 64


#: Items of one list the harness works on for each example (tools exercised, a result's items
#: validated): a server's list can be any length, the work done per example must not be.
MAX_ITEMS: Final = 256

#: Deepest nesting a written JSON document (a repro, findings.json) keeps: orjson writes nothing
#: deeper than 254, and what a server said can be (its schemas are cut only where the harness
#: uses them, not in the transcript that records them).
MAX_WRITTEN_DEPTH: Final = 240


@dataclass(frozen=True, slots=True)
class DepthCut:
    """One schema that was cut: whose, how deep it was, where it was cut, how many parts went."""

    where: str  # e.g. "tool tool_0 inputSchema"
    depth: int  # its nesting as listed (counted up to `CUT_COUNT_LIMIT`); 0 when reached through $ref
    limit: int
    parts: int  # subtrees replaced by an empty container, or (through $ref) left as any value

    def text(self) -> str:
        plural = "s" if self.parts != 1 else ""
        if not self.depth:
            return (f"{self.where} reaches deeper than {self.limit} schemas through $ref: generated to that "
                    f"depth ({self.parts} sub-schema{plural} below it left as any value)")
        deep = f"{self.depth}" if self.depth < CUT_COUNT_LIMIT else f"more than {CUT_COUNT_LIMIT}"
        return (f"{self.where} is nested {deep} levels deep: cut at {self.limit} "
                f"({self.parts} part{plural} replaced by an empty schema)")

    def to_json(self) -> dict[str, Any]:
        return {"where": self.where, "depth": self.depth, "limit": self.limit, "parts": self.parts,
                "text": self.text()}


#: How far a too-deep document's depth is counted for the report (the walk is iterative, so this
#: only bounds the time a pathological document costs, not the stack).
CUT_COUNT_LIMIT: Final = 1_000_000


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


def cut_deep(value: Any, limit: int = MAX_SCHEMA_DEPTH, *, max_items: int | None = None) -> tuple[Any, int]:
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


def bounded_schema(schema: Any, where: str, limit: int = MAX_SCHEMA_DEPTH) -> tuple[Any, DepthCut | None]:
    """A schema the harness can walk, and the record of its cut (None when none was needed)."""
    kept, parts = cut_deep(schema, limit)
    if not parts:
        return schema, None
    return kept, DepthCut(where, nesting_depth(schema, stop=CUT_COUNT_LIMIT), limit, parts)


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

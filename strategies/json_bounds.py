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

from dataclasses import dataclass
from typing import Any, Final

# The depth helpers live with the wire codec, which cuts what a server sends with them; re-exported
# here for the schema side (one definition).
from mcp_tempest.targets.json_depth import (
    MAX_WRITTEN_DEPTH,
    cut_deep,
    json_text,
    nesting_depth,
    same_json,
)

__all__ = ["CUT_COUNT_LIMIT", "MAX_ITEMS", "MAX_SCHEMA_DEPTH", "MAX_WRITTEN_DEPTH", "DepthCut", "bounded_schema",
           "cut_deep", "json_text", "nesting_depth", "same_json"]

#: Deepest JSON nesting of a schema document the harness keeps (and of values it generates from
#: one). Real tool schemas stay well under 20; 64 leaves every walker far from Python's recursion
#: limit and every generated frame far from orjson's 254, with the envelope around it.
MAX_SCHEMA_DEPTH: Final = 64


#: Items of one list the harness works on for each example (tools exercised, a result's items
#: validated): a server's list can be any length, the work done per example must not be.
MAX_ITEMS: Final = 256

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
        if self.depth >= MAX_WRITTEN_DEPTH - RECEIVED_SLACK:  # it may have been cut when received
            deep = f"at least {self.depth}"
        return (f"{self.where} is nested {deep} levels deep: cut at {self.limit} "
                f"({self.parts} part{plural} replaced by an empty schema)")

    def to_json(self) -> dict[str, Any]:
        return {"where": self.where, "depth": self.depth, "limit": self.limit, "parts": self.parts,
                "text": self.text()}


#: How far inside a message a schema can sit (a tool's inputSchema is 4 levels down a tools/list
#: response): a schema about `MAX_WRITTEN_DEPTH` deep may have been cut when its message was
#: received (`wire.loads`), so its depth as listed is only known to be at least that.
RECEIVED_SLACK: Final = 16

#: How far a too-deep document's depth is counted for the report (the walk is iterative, so this
#: only bounds the time a pathological document costs, not the stack).
CUT_COUNT_LIMIT: Final = 1_000_000


def bounded_schema(schema: Any, where: str, limit: int = MAX_SCHEMA_DEPTH) -> tuple[Any, DepthCut | None]:
    """A schema the harness can walk, and the record of its cut (None when none was needed)."""
    kept, parts = cut_deep(schema, limit)
    if not parts:
        return schema, None
    return kept, DepthCut(where, nesting_depth(schema, stop=CUT_COUNT_LIMIT), limit, parts)

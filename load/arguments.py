"""One load user's tool arguments: the same pools fuzz draws from, and the values its results returned.

Why: a server whose tools take a handle minted by another tool (list_events takes the calendarId
open_calendar returned) refuses every call made with an invented handle. A load run that invents
them measures the refusal path ten thousand times and calls a correct server broken. So a user's
arguments come from `strategies.value_sources.ValueSources`, as the fuzz campaign's do: the
user's `--tool-args`, the target's command line (path-like arguments), and what this user's own
earlier results returned, by field name; the schema's generator (load/schema_values.py) fills in
the rest. The order is `ValueSources.preferred`'s: a load exercises the normal path, so the most
specific known value always wins, and within that source the value is drawn at random (calls
spread over every calendar the user opened).

A handle-named argument (`calendarId`, `event_id`) is never invented: a tool that requires one
nobody returned yet waits, an optional one is left out.

Per-request cost matters here (load is a benchmarked hot path): the known values of an argument
are cached until a harvest adds something, and a tool whose results stopped adding anything is
no longer harvested.
"""

from __future__ import annotations

import contextlib
import operator
import random
from typing import Any

import orjson

from mcp_tempest.load.schema_values import is_handle_name, resolve, value_for
from mcp_tempest.strategies.value_sources import ValueSources, harvest

#: The sources a load call takes a value from before generating one (ValueSources.preferred's).
KNOWN_SOURCES = ("user", "command line", "returned")
#: Harvests of one tool's results in a row that added nothing, after which its results are no
#: longer harvested (its fields' pools are full, or it returns what the user already knows).
SATURATED = 16
#: A text block longer than this is not parsed for JSON values.
MAX_JSON_TEXT = 65_536
#: Field names kept per user: results keyed by ids (`{"cal_1": {...}}`) would otherwise add a
#: name per call for the whole run, and this runs for hours at thousands of calls a second.
MAX_FIELDS = 256


_BOUNDS = (("minimum", operator.ge), ("maximum", operator.le),
           ("exclusiveMinimum", operator.gt), ("exclusiveMaximum", operator.lt))


def _within(value: Any, schema: Any) -> bool:
    """The bounds `ValueSources.fits` does not check (lengths, ranges): a returned value of the
    right type can still be one the argument refuses, and a load wants calls that succeed."""
    if not isinstance(schema, dict):
        return True
    if isinstance(value, str):
        low, high = schema.get("minLength"), schema.get("maxLength")
        return not (isinstance(low, int) and len(value) < low) and not (isinstance(high, int) and len(value) > high)
    if isinstance(value, int | float) and not isinstance(value, bool):
        for key, ok in _BOUNDS:
            bound = schema.get(key)
            if isinstance(bound, int | float) and not isinstance(bound, bool) and not ok(value, bound):
                return False
    return True


class _Plan:
    """A tool's schema read once: its properties (resolved), required names, the user's names."""

    __slots__ = ("handles", "props", "required", "root", "user_named")

    def __init__(self, tool: str, schema: Any, values: ValueSources) -> None:
        self.root = schema
        resolved = resolve(schema, schema)
        props = resolved.get("properties") if isinstance(resolved, dict) else None
        self.props: list[tuple[str, Any, Any]] = [
            (key, sub, resolve(sub, schema)) for key, sub in (props.items() if isinstance(props, dict) else ())
        ]
        required = resolved.get("required") if isinstance(resolved, dict) else None
        self.required = frozenset(r for r in required if isinstance(r, str)) if isinstance(required, list) else frozenset()
        self.user_named = frozenset(n for scope in (tool, "*") for n in values.user.get(scope, {}))
        self.handles = tuple(k for k in sorted(self.required) if is_handle_name(k))


class Arguments:
    """The argument values of one simulated user (or, in the open model, of a process's slots)."""

    __slots__ = ("_idle", "_known", "_missing", "_plans", "values", "version")

    def __init__(self, values: ValueSources) -> None:
        self.values = values
        self.version = 0  # bumped when a harvest added a value: the caches below are then stale
        self._known: dict[tuple[str, str], tuple[int, list[Any]]] = {}
        self._missing: dict[str, tuple[int, tuple[str, ...]]] = {}
        self._plans: dict[str, _Plan] = {}
        self._idle: dict[str, int] = {}

    @classmethod
    def for_user(cls, base: ValueSources | None) -> Arguments:
        """A user's own pools: the run's command line and --tool-args (shared, read-only), and an
        empty `returned` pool of its own (value flows stay within one user's calls)."""
        if base is None:
            return cls(ValueSources())
        return cls(ValueSources(command_line=base.command_line, user=base.user))

    def _plan(self, tool: str, schema: Any) -> _Plan:
        plan = self._plans.get(tool)
        if plan is None or plan.root is not schema:
            plan = self._plans[tool] = _Plan(tool, schema, self.values)
        return plan

    def known(self, tool: str, arg: str, schema: Any) -> list[Any]:
        """The values of the most specific source that has any for this argument ([] when none)."""
        key = (tool, arg)
        hit = self._known.get(key)
        if hit is not None and hit[0] == self.version:
            return hit[1]
        by_source: dict[str, list[Any]] = {}
        for source, value in self.values.candidates(tool, arg, schema):
            if source in KNOWN_SOURCES and (source == "user" or _within(value, schema)):
                by_source.setdefault(source, []).append(value)
        found = next((by_source[s] for s in KNOWN_SOURCES if s in by_source), [])
        self._known[key] = (self.version, found)
        return found

    def by_name(self, name: str) -> list[Any]:
        """Values known for a name outside any tool (a resource template's variable)."""
        return self.values.user.get("*", {}).get(name) or self.values.returned.get(name) or []

    def missing(self, tool: str, schema: Any) -> tuple[str, ...]:
        """The required handle arguments of `tool` no source has a value for yet."""
        hit = self._missing.get(tool)
        if hit is not None and hit[0] == self.version:
            return hit[1]
        plan = self._plan(tool, schema)
        subs = {key: sub for key, _, sub in plan.props}
        out = tuple(k for k in plan.handles if not self.known(tool, k, subs.get(k)))
        self._missing[tool] = (self.version, out)
        return out

    def arguments(self, tool: str, schema: Any, rng: random.Random, *, optional: bool = True) -> dict[str, Any]:
        """Arguments for one call: the required ones, the optional ones too when `optional`, and
        always those the user named for this tool."""
        plan = self._plan(tool, schema)
        out: dict[str, Any] = {}
        for key, sub, resolved in plan.props:
            required = key in plan.required
            if not (required or optional or key in plan.user_named):
                continue
            known = self.known(tool, key, resolved)
            if known:
                out[key] = known[0] if len(known) == 1 else rng.choice(known)
            elif required or not is_handle_name(key):
                out[key] = value_for(sub, rng, name=key, root=plan.root, optional=optional, depth=1)
        for key in plan.required:
            if key not in out:
                out[key] = f"load {key}"
        return out

    def harvest(self, tool: str, result: dict[str, Any]) -> None:
        """A successful result's fields into this user's `returned` pool, by field name: its
        structuredContent, or JSON in a text block when it has none (most servers that send both
        send the same values twice)."""
        idle = self._idle.get(tool, 0)
        pools = self.values.returned
        if idle >= SATURATED or len(pools) >= MAX_FIELDS:
            return
        before = sum(map(len, pools.values()))
        structured = result.get("structuredContent")
        if isinstance(structured, dict | list):
            harvest(structured, pools)
        elif structured is None:
            for block in result.get("content") or ():
                text = block.get("text") if isinstance(block, dict) else None
                if isinstance(text, str) and text[:1] in ("{", "[") and len(text) <= MAX_JSON_TEXT:
                    with contextlib.suppress(orjson.JSONDecodeError):
                        harvest(orjson.loads(text), pools)
        if sum(map(len, pools.values())) != before:
            self.version += 1
            self._idle[tool] = 0
        else:
            self._idle[tool] = idle + 1

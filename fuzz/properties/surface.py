"""The target's surface: what it offers, learned once before fuzzing, so cases can be valid.

Random tool names mostly earn "unknown tool"; a fuzzer that only ever sees that error tests one
code path. So before the campaign the runner asks the target what it has (discover and every
list, all pages) and which calls lead into MRTR (a call that answers `input_required` when the
client declares every capability). Properties draw from this; when the target offers nothing of
a kind, the properties that need it say so instead of pretending.
"""

from __future__ import annotations

import contextlib
import itertools
from dataclasses import dataclass, field
from typing import Any

from mcp_tempest.targets import wire
from mcp_tempest.targets.connection import Connection

ALL_CLIENT_CAPABILITIES: dict[str, Any] = {
    "elicitation": {"form": {}, "url": {}},
    "sampling": {"context": {}, "tools": {}},
    "roots": {},
}
MAX_PAGES = 10


@dataclass(slots=True)
class MrtrTrigger:
    """A call that answered `input_required` when every client capability was declared."""

    method: str
    params: dict[str, Any]
    capabilities: dict[str, Any]
    kinds: list[str] = field(default_factory=list)  # inputRequests methods seen in the first round

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "params": self.params, "capabilities": self.capabilities,
                "kinds": self.kinds}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MrtrTrigger:
        return cls(data["method"], dict(data["params"]), dict(data["capabilities"]), list(data.get("kinds", [])))


@dataclass(slots=True)
class HandleFlow:
    """Open a handle, write through it, read it back: how cross-process state is exercised.

    `open_tool(name=...)` returns the handle in structuredContent[`handle_field`]; `write_tool`
    takes the handle in argument `handle_arg`; `read_tool` lists what was written.
    """

    open_tool: str
    write_tool: str
    read_tool: str
    handle_field: str
    handle_arg: str

    def to_json(self) -> dict[str, Any]:
        return {"open_tool": self.open_tool, "write_tool": self.write_tool, "read_tool": self.read_tool,
                "handle_field": self.handle_field, "handle_arg": self.handle_arg}


@dataclass(slots=True)
class Surface:
    tools: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)
    capabilities: dict[str, Any] = field(default_factory=dict)
    versions: list[str] = field(default_factory=lambda: [wire.MODERN_VERSION])
    triggers: list[MrtrTrigger] = field(default_factory=list)
    handles: HandleFlow | None = None
    notes: list[str] = field(default_factory=list)
    withheld_tools: list[str] = field(default_factory=list)  # listed, but the tool policy forbids calling them

    @classmethod
    def reference(cls) -> Surface:
        """The embedded reference server's surface, from its catalogue (no process needed)."""
        from mcp_tempest.targets.reference import catalog

        tools = [dict(t) for t in catalog.TOOLS]
        return cls(
            tools=tools,
            resources=[dict(r) for r in catalog.RESOURCES],
            templates=[dict(t) for t in catalog.RESOURCE_TEMPLATES],
            prompts=[dict(p) for p in catalog.PROMPTS],
            capabilities=dict(catalog.CAPABILITIES),
            versions=list(catalog.SUPPORTED_VERSIONS),
            triggers=[MrtrTrigger("tools/call", {"name": "create_event", "arguments": {"title": "tempest"}},
                                  {"elicitation": {}}, ["elicitation/create"])],
            handles=_handle_flow(tools),
        )

    def tool(self, name: str) -> dict[str, Any] | None:
        return next((t for t in self.tools if t.get("name") == name), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "tools": [t.get("name") for t in self.tools], "resources": [r.get("uri") for r in self.resources],
            "prompts": [p.get("name") for p in self.prompts], "capabilities": self.capabilities,
            "versions": self.versions, "triggers": [t.to_json() for t in self.triggers],
            "handles": self.handles.to_json() if self.handles else None,
        }


# --- learning the surface from a live target ---


class _Ids:
    def __init__(self) -> None:
        self._n = itertools.count(1)

    def __call__(self) -> str:
        return f"surface-{next(self._n)}"


def learn_surface(conn: Connection, *, version: str = wire.MODERN_VERSION, timeout: float = 10.0,
                  may_call: Any = None) -> Surface:
    """Ask a modern target what it offers; missing pieces stay empty (and are noted).

    `may_call(tool) -> bool` (the campaign's tool policy): tools it refuses are left out of the
    surface before anything is called, so no property and no trigger search ever calls them."""
    ids = _Ids()
    surface = Surface(versions=[version])

    def call(method: str, params: dict[str, Any] | None = None, caps: dict[str, Any] | None = None) -> Any:
        msg = wire.build_request(ids(), method, params, capabilities=caps or {}, version=version)
        return conn.request(msg, timeout=timeout)

    reply = call("server/discover")
    result = reply.get("result") if isinstance(reply, dict) else None
    if isinstance(result, dict):
        if isinstance(result.get("capabilities"), dict):
            surface.capabilities = result["capabilities"]
        if isinstance(result.get("supportedVersions"), list):
            surface.versions = [v for v in result["supportedVersions"] if isinstance(v, str)] or [version]
    for method, key, into in (
        ("tools/list", "tools", surface.tools),
        ("resources/list", "resources", surface.resources),
        ("resources/templates/list", "resourceTemplates", surface.templates),
        ("prompts/list", "prompts", surface.prompts),
    ):
        cursor: Any = None
        for _ in range(MAX_PAGES):
            reply = call(method, {"cursor": cursor} if cursor is not None else None)
            page = reply.get("result") if isinstance(reply, dict) else None
            if not isinstance(page, dict) or not isinstance(page.get(key), list):
                break
            into.extend(x for x in page[key] if isinstance(x, dict))
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str):
                break
    if may_call is not None:
        surface.withheld_tools = [str(t.get("name")) for t in surface.tools if not may_call(t)]
        surface.tools[:] = [t for t in surface.tools if may_call(t)]
        if surface.withheld_tools:
            surface.notes.append(f"{len(surface.withheld_tools)} tool(s) withheld by the tool policy, never called: "
                                 + ", ".join(surface.withheld_tools[:10]))
    surface.handles = _handle_flow(surface.tools)
    surface.triggers = _find_triggers(surface, call)
    if not surface.triggers:
        surface.notes.append("no call answered input_required: MRTR properties exercise only refusals")
    return surface


def _find_triggers(surface: Surface, call: Any) -> list[MrtrTrigger]:
    """Try each tool (minimal arguments) and prompt with every capability declared; keep those
    that answer input_required, with the capabilities their first round asked for."""
    found: list[MrtrTrigger] = []
    candidates: list[tuple[str, dict[str, Any]]] = []
    for tool in surface.tools[:20]:
        args = minimal_arguments(tool.get("inputSchema"))
        if args is not None and isinstance(tool.get("name"), str):
            candidates.append(("tools/call", {"name": tool["name"], "arguments": args}))
    for prompt in surface.prompts[:10]:
        if isinstance(prompt.get("name"), str):
            args = {a["name"]: "tempest" for a in prompt.get("arguments", []) or []
                    if isinstance(a, dict) and a.get("required") and isinstance(a.get("name"), str)}
            candidates.append(("prompts/get", {"name": prompt["name"], "arguments": args}))
    for resource in surface.resources[:10]:
        if isinstance(resource.get("uri"), str):
            candidates.append(("resources/read", {"uri": resource["uri"]}))
    for method, params in candidates:
        with contextlib.suppress(Exception):
            reply = call(method, params, ALL_CLIENT_CAPABILITIES)
            result = reply.get("result") if isinstance(reply, dict) else None
            if isinstance(result, dict) and result.get("resultType") == "input_required":
                requests = result.get("inputRequests") if isinstance(result.get("inputRequests"), dict) else {}
                kinds = sorted({r.get("method") for r in requests.values()
                                if isinstance(r, dict) and isinstance(r.get("method"), str)})
                found.append(MrtrTrigger(method, params, capabilities_for(kinds), kinds))
        if len(found) >= 4:
            break
    return found


def capabilities_for(kinds: list[str]) -> dict[str, Any]:
    """The client capabilities that input requests of these kinds need (MRTR-05)."""
    caps: dict[str, Any] = {}
    for kind in kinds:
        if kind == "elicitation/create":
            caps["elicitation"] = {"form": {}, "url": {}}
        elif kind == "sampling/createMessage":
            caps["sampling"] = {"context": {}, "tools": {}}
        elif kind == "roots/list":
            caps["roots"] = {}
    return caps or dict(ALL_CLIENT_CAPABILITIES)


def minimal_arguments(schema: Any) -> dict[str, Any] | None:
    """Arguments that satisfy the required properties of a simple object schema, or None."""
    if not isinstance(schema, dict):
        return {}
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    out: dict[str, Any] = {}
    for name in schema.get("required", []) or []:
        sub = props.get(name, {})
        value = sample_value(sub)
        if value is _NO_VALUE:
            return None
        out[name] = value
    return out


_NO_VALUE: Any = object()


def sample_value(schema: Any, *, text: str = "tempest") -> Any:
    """One plausible value for a simple schema (the shapes tool and elicitation schemas use)."""
    if not isinstance(schema, dict):
        return text
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            first = schema[key][0]
            if isinstance(first, dict) and "const" in first:
                return first["const"]
            return sample_value(first, text=text)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "string" or kind is None:
        fmt = schema.get("format")
        if fmt == "date-time":
            return "2026-08-03T09:00:00Z"
        if fmt == "date":
            return "2026-08-03"
        if fmt in ("uri", "url"):
            return "https://example.com/tempest"
        if fmt == "email":
            return "tempest@example.com"
        low = int(schema.get("minLength", 0) or 0)
        return (text * (low // len(text) + 1))[: max(low, len(text))]
    if kind == "integer":
        return int(schema.get("minimum", 1) if isinstance(schema.get("minimum"), int | float) else 1)
    if kind == "number":
        return float(schema.get("minimum", 1) if isinstance(schema.get("minimum"), int | float) else 1)
    if kind == "boolean":
        return True
    if kind == "array":
        low = int(schema.get("minItems", 0) or 0)
        return [sample_value(schema.get("items", {}), text=text) for _ in range(low)]
    if kind == "object":
        return minimal_arguments(schema) or {}
    return _NO_VALUE


def _handle_flow(tools: list[dict[str, Any]]) -> HandleFlow | None:
    """The reference surface's calendar: open_calendar -> calendarId -> create_event / list_events."""
    names = {t.get("name") for t in tools}
    if {"open_calendar", "create_event", "list_events"} <= names:
        return HandleFlow("open_calendar", "create_event", "list_events", "calendarId", "calendarId")
    return None

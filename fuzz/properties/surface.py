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

from mcp_tempest.fuzz.reach import Reach
from mcp_tempest.fuzz.safe_text import NAME_WIDTH, visible
from mcp_tempest.strategies.json_bounds import MAX_ITEMS, MAX_SCHEMA_DEPTH, DepthCut, bounded_schema
from mcp_tempest.strategies.value_sources import ValueSources, harvest, harvest_text, schema_values
from mcp_tempest.targets import wire
from mcp_tempest.targets.connection import Connection
from mcp_tempest.targets.list_reader import ListBudget, read_connection_list

ALL_CLIENT_CAPABILITIES: dict[str, Any] = {
    "elicitation": {"form": {}, "url": {}},
    "sampling": {"context": {}, "tools": {}},
    "roots": {},
}
MAX_PAGES = 10
# The capability that offers each list: a list not offered is not read, and its error is no news.
_LIST_CAPABILITY = {"tools/list": "tools", "resources/list": "resources", "resources/templates/list": "resources",
                    "prompts/list": "prompts"}


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
    # Argument value pools (strategies.value_sources.ValueSources as JSON, so workers get it too):
    # the target's command line, the user's --tool-args, values its results returned, its literals.
    values: dict[str, Any] = field(default_factory=dict)
    # fuzz.reach.Reach as JSON: how the search calls made here were answered (each tool's first call)
    reach: dict[str, Any] = field(default_factory=dict)
    # tool -> the arguments of its first success in the surface search: the call generation
    # starts from (what the minimal call of a tool is, once one is known to reach its body)
    good_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    search_stopped: bool = False  # a search call went unanswered: later search calls would be too
    # list -> how many items the server listed, when more than MAX_SURFACE_ITEMS (the rest is a sample)
    listed: dict[str, int] = field(default_factory=dict)
    # strategies.json_bounds.DepthCut as JSON: each tool schema cut at MAX_SCHEMA_DEPTH
    cuts: list[dict[str, Any]] = field(default_factory=list)
    # tools/list as the surface read it: its pages (0: not read here), and why it stopped before
    # the last page ("" when it ended): a probe that lists the tools again reads no further
    tool_pages: int = 0
    tools_cut: str = ""

    @property
    def sources(self) -> ValueSources:
        return ValueSources.from_json(self.values)

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
                  may_call: Any = None, sources: ValueSources | None = None, seed: int = 0) -> Surface:
    """Ask a modern target what it offers; missing pieces stay empty (and are noted).

    `may_call(tool) -> bool` (the campaign's tool policy): tools it refuses are left out of the
    surface before anything is called, so no property and no trigger search ever calls them.
    `sources`: argument values known before the run (command line, --tool-args); the calls made
    here use them, and what those calls return is added to them (value flows). `seed` chooses
    the sample of a list longer than MAX_SURFACE_ITEMS (see `bound_surface`)."""
    ids = _Ids()
    surface = Surface(versions=[version])
    sources = sources if sources is not None else ValueSources()

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
    list_budget = ListBudget(pages=MAX_PAGES, options=False)  # fuzz has no list-budget options
    list_spend = list_budget.spend()
    for method, key, into in (
        ("tools/list", "tools", surface.tools),
        ("resources/list", "resources", surface.resources),
        ("resources/templates/list", "resourceTemplates", surface.templates),
        ("prompts/list", "prompts", surface.prompts),
    ):
        # Bounded like every list read (targets/list_reader.py): pages, bytes and time; a list cut
        # short is noted with why, so a surface learned from part of a list says so.
        read = read_connection_list(
            conn, lambda cursor, m=method: wire.build_request(
                ids(), m, {"cursor": cursor} if cursor is not None else None, capabilities={}, version=version),
            key, method, key, timeout=timeout, budget=list_budget, spend=list_spend)
        into.extend(x for x in read.items if isinstance(x, dict))
        if method == "tools/list":
            surface.tool_pages, surface.tools_cut = read.pages, read.cut or read.failed
        offered = _LIST_CAPABILITY[method] in surface.capabilities
        if read.cut or (read.failed and offered):
            surface.notes.append(visible(read.describe()))
    if may_call is not None:
        surface.withheld_tools = [str(t.get("name")) for t in surface.tools if not may_call(t)]
        surface.tools[:] = [t for t in surface.tools if may_call(t)]
        if surface.withheld_tools:
            surface.notes.append(f"{len(surface.withheld_tools)} tool(s) withheld by the tool policy, never called: "
                                 + ", ".join(surface.withheld_tools[:10]))
    bound_surface(surface, seed)
    surface.handles = _handle_flow(surface.tools)
    surface.values = sources.to_json()
    reach = Reach()
    surface.triggers = _find_triggers(surface, call, sources, reach)
    _reach_search(surface, call, sources, reach)
    surface.values = sources.to_json()
    surface.reach = reach.to_json()
    if not surface.triggers:
        surface.notes.append("no call answered input_required: MRTR properties exercise only refusals")
    return surface


#: Tools the surface search calls once each (to find MRTR triggers and harvest returned values).
SEARCH_TOOLS = 50

#: The most items of one list a campaign exercises. A server that lists more gets a sample, chosen
#: by the campaign's seed (the same seed, the same sample), so that what each example costs, what a
#: worker is sent and what a repro records never grows with the list.
MAX_SURFACE_ITEMS = MAX_ITEMS


def bound_surface(surface: Surface, seed: int = 0) -> None:
    """Make what was listed safe to fuzz, in place, saying what was left out: a sample of each
    list longer than MAX_SURFACE_ITEMS (in listing order), and each tool schema cut to
    MAX_SCHEMA_DEPTH (a deeper one, or one whose `$ref`s lead deeper, is recorded in `cuts`)."""
    import random

    for label, items in (("tools", surface.tools), ("resources", surface.resources),
                         ("resource templates", surface.templates), ("prompts", surface.prompts)):
        if len(items) <= MAX_SURFACE_ITEMS:
            continue
        surface.listed[label] = len(items)
        keep = sorted(random.Random(f"{seed}|{label}").sample(range(len(items)), MAX_SURFACE_ITEMS))
        items[:] = [items[i] for i in keep]
        surface.notes.append(f"{label}: {MAX_SURFACE_ITEMS} of {surface.listed[label]} listed {label} exercised "
                             "(a sample chosen by the seed)")
    for i, tool in enumerate(surface.tools):
        bounded = dict(tool)
        for key in ("inputSchema", "outputSchema"):
            if key not in tool:
                continue
            where = f"tool {visible(tool.get('name'), NAME_WIDTH)} {key}"
            bounded[key], cut = bounded_schema(tool[key], where)
            cut = cut or _ref_cut(bounded[key], where)
            if cut is not None:
                surface.cuts.append(cut.to_json())
                surface.notes.append(cut.text())
        surface.tools[i] = bounded


def _ref_cut(schema: Any, where: str) -> DepthCut | None:
    """A schema shallow as written whose `$ref`s lead deeper than MAX_SCHEMA_DEPTH (a long chain
    of `$defs`): the compiler bounds it, and this records that it did."""
    import orjson

    from mcp_tempest.strategies.compiler import SchemaCompiler

    compiler = SchemaCompiler(schema)
    with contextlib.suppress(Exception):  # an unusable schema is the generators' to handle
        if isinstance(schema, dict) and b'"$ref"' in orjson.dumps(schema):  # dumps: it was cut already
            compiler.strategy()
    return DepthCut(where, 0, MAX_SCHEMA_DEPTH, compiler.depth_cuts) if compiler.depth_cuts else None


def _find_triggers(surface: Surface, call: Any, sources: ValueSources, reach: Reach) -> list[MrtrTrigger]:
    """Try each tool (minimal arguments, informed by `sources`) and prompt with every capability
    declared; keep those that answer input_required, with the capabilities their first round
    asked for. What the tools return feeds `sources` (a later call's argument of the same name)."""
    found: list[MrtrTrigger] = []
    candidates: list[tuple[str, dict[str, Any]]] = []
    for tool in surface.tools[:SEARCH_TOOLS]:
        args = minimal_arguments(tool.get("inputSchema"), tool=str(tool.get("name")), sources=sources)
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
    listed = frozenset(str(t.get("name")) for t in surface.tools)
    for method, params in candidates:
        with contextlib.suppress(Exception):
            try:
                reply = call(method, params, ALL_CLIENT_CAPABILITIES)
            except Exception:  # noqa: BLE001 - judged below as no answer
                reply = None
            if not isinstance(reply, dict):
                if method == "tools/call":
                    reach.add_answer(params["name"], params["arguments"], None, listed)
                    surface.good_args[params["name"]] = dict(params["arguments"])
                surface.notes.append(f"the surface search stopped: {method} {params.get('name', '')} got no "
                                     "answer (the campaign plays that call first)")
                surface.search_stopped = True
                break
            result = reply.get("result") if isinstance(reply, dict) else None
            if method == "tools/call":
                reach.add_answer(params["name"], params["arguments"], reply, listed,
                                 attribute=lambda tool, args: _attribute(surface, sources, tool, args))
                if failed_inside(reply):
                    surface.good_args.setdefault(params["name"], dict(params["arguments"]))
            if method == "tools/call" and isinstance(result, dict) and result.get("isError") is not True:
                harvest_result(result, sources)
                if result.get("resultType") != "input_required":
                    surface.good_args.setdefault(params["name"], dict(params["arguments"]))
            if isinstance(result, dict) and result.get("resultType") == "input_required":
                requests = result.get("inputRequests") if isinstance(result.get("inputRequests"), dict) else {}
                kinds = sorted({r.get("method") for r in requests.values()
                                if isinstance(r, dict) and isinstance(r.get("method"), str)})
                found.append(MrtrTrigger(method, params, capabilities_for(kinds), kinds))
    return found[:4]


#: The reach search: informed argument combinations tried on each tool that has not succeeded yet,
#: in passes (a success's returned values can open another tool), bounded in calls and time.
SEARCH_TRIES_PER_TOOL = 32
SEARCH_TRIES = 400
SEARCH_SECONDS = 30.0
SEARCH_VALUES_PER_ARG = 8
SEARCH_PASSES = 2


#: After a success, each tool still without one is tried again this many ways at once: the
#: success may have made the state it needs (git_add stages what git_commit records).
SEARCH_RETRY_AFTER_SUCCESS = 4
#: Calls per tool at its schema's own values once a call of it gets through.
SEARCH_EDGES_PER_TOOL = 6


def _reach_search(surface: Surface, call: Any, sources: ValueSources, reach: Reach) -> None:
    """Give every tool its best shot before the campaign: combinations of the pools' values for
    its arguments, the most specific first, until one succeeds (or fails inside the body). The
    first call that goes unanswered ends the search: that call is where the campaign starts."""
    import time

    if surface.search_stopped:
        return
    listed = frozenset(str(t.get("name")) for t in surface.tools)
    triggers = {t.params.get("name") for t in surface.triggers}
    deadline = time.monotonic() + SEARCH_SECONDS
    budget = [SEARCH_TRIES]

    def send(name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """One search call, tallied; None when the search must end: out of calls or time, or no
        answer (the process died or hangs on it: every later call would go unanswered too, so the
        campaign starts from this call instead)."""
        if budget[0] <= 0 or time.monotonic() > deadline:
            return None
        budget[0] -= 1
        try:
            reply = call("tools/call", {"name": name, "arguments": args}, ALL_CLIENT_CAPABILITIES)
        except Exception:  # noqa: BLE001 - judged below as no answer
            reply = None
        if not isinstance(reply, dict):
            reach.add_answer(name, args, None, listed)
            surface.good_args[name] = args
            surface.notes.append(f"the surface search stopped: {name} got no answer to {_short(args)} "
                                 "(the campaign plays that call first)")
            surface.search_stopped = True
            return None
        reach.add_answer(name, args, reply, listed, attribute=lambda tl, a: _attribute(surface, sources, tl, a))
        return reply

    def attempt(tool: dict[str, Any], tries: int) -> str:
        """"ok", "inside" (failed in the body), "stop" (no answer, or out of budget) or "" (refused)."""
        name = str(tool.get("name"))
        for args in _combinations(name, tool.get("inputSchema"), sources)[:tries]:
            reply = send(name, args)
            if reply is None:
                return "stop"
            result = reply.get("result")
            if isinstance(result, dict) and result.get("isError") is not True \
                    and result.get("resultType") != "input_required":
                surface.good_args[name] = args
                harvest_result(result, sources)
                return edges(tool, args) or "ok"
            if failed_inside(reply):  # past the argument check, failing in the body: a lead, not a refusal
                surface.good_args[name] = args
                return "inside"
        return ""

    def edges(tool: dict[str, Any], good: dict[str, Any]) -> str:
        """A call that gets through, again with one argument at a time at its schema's own values
        (exact boundaries, examples, enum members): off-by-one bugs live there. A call among them
        that fails inside the body or goes unanswered becomes the tool's starting call."""
        name = str(tool.get("name"))
        schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), dict) else {}
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        tries = [{**good, arg: value} for arg, sub in list(props.items())[:16]
                 for value in schema_values(sub) if good.get(arg) != value][:SEARCH_EDGES_PER_TOOL]
        for args in tries:
            reply = send(name, args)
            if reply is None:
                return "stop"
            if failed_inside(reply):
                surface.good_args[name] = args
                return "ok"
        return ""

    tools = [t for t in surface.tools[:SEARCH_TOOLS]
             if isinstance(t.get("name"), str) and t["name"] not in triggers]
    for tool in tools:  # a tool whose first (minimal) call got through: its schema's own values too
        if tool["name"] in surface.good_args and edges(tool, dict(surface.good_args[tool["name"]])) == "stop":
            return
    for _ in range(SEARCH_PASSES):
        progress = False
        for tool in tools:
            if tool["name"] in surface.good_args:
                continue
            outcome = attempt(tool, SEARCH_TRIES_PER_TOOL)
            if outcome == "stop":
                return
            if outcome == "ok":
                progress = True
                for other in tools:  # what this success made or returned may open another tool now
                    if other["name"] not in surface.good_args and attempt(other, SEARCH_RETRY_AFTER_SUCCESS) == "stop":
                        return
        if not progress:
            break
    # A tool may need the state another one makes (git_commit records what git_add staged): each
    # tool still without a success is tried right after each tool that has one.
    done = [t for t in tools if t["name"] in surface.good_args]
    for tool in tools:
        for maker in done:
            if tool["name"] in surface.good_args:
                break
            if send(maker["name"], surface.good_args[maker["name"]]) is None or attempt(tool, 2) == "stop":
                return


def _short(args: dict[str, Any]) -> str:
    text = repr(args)
    return text if len(text) <= 80 else text[:77] + "..."


def _attribute(surface: Surface, sources: ValueSources, tool: str, arguments: dict[str, Any]) -> str:
    schema = (surface.tool(tool) or {}).get("inputSchema")
    props = schema.get("properties") if isinstance(schema, dict) else None
    return sources.attribute(tool, arguments, props if isinstance(props, dict) else None, plain=sample_value)


#: JSON-RPC codes that refuse a request before a tool body runs (parse, request, method, params;
#: the 2026-07-28 header, capability and version refusals; MRTR's URL elicitation).
REFUSALS = frozenset({-32700, -32600, -32601, -32602, -32020, -32021, -32022, -32042})


def failed_inside(reply: Any) -> bool:
    """An error answer that is not a refusal of the request itself: the tool's body ran and failed
    (-32603 and the like). The campaign starts from such a call, so the oracle judges it."""
    error = reply.get("error") if isinstance(reply, dict) else None
    return isinstance(error, dict) and isinstance(error.get("code"), int) and error["code"] not in REFUSALS


def _combinations(tool: str, schema: Any, sources: ValueSources) -> list[dict[str, Any]]:
    """Argument sets for a tool from the pools: each required argument's candidates in source
    order (plus a plain sample), combined by increasing rank, so the first tries use every
    argument's most specific value and later ones vary one or two of them."""
    if not isinstance(schema, dict):
        return []
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    names = [n for n in schema.get("required", []) or [] if isinstance(n, str)]
    names += [n for scope in (tool, "*") for n in sources.user.get(scope, {}) if n in props and n not in names]
    choices: list[list[Any]] = []
    for name in names:
        sub = props.get(name, {})
        by_source: dict[str, list[Any]] = {}
        for source, value in sources.candidates(tool, name, sub):
            by_source.setdefault(source, []).append(value)
        values: list[Any] = []
        for rank in range(SEARCH_VALUES_PER_ARG):  # round-robin: sixty tokens of a text answer must not
            for pool in by_source.values():         # crowd out the source's three literals
                if rank < len(pool) and pool[rank] not in values:
                    values.append(pool[rank])
        plain = sample_value(sub)
        if plain is not _NO_VALUE and plain not in values:
            values.append(plain)
        if not values:
            return []
        choices.append(values[:SEARCH_VALUES_PER_ARG])
    if not choices:
        return []
    ranked = sorted(itertools.product(*(range(len(c)) for c in choices)), key=lambda idx: (sum(idx), idx))
    return [{n: choices[k][i] for k, (n, i) in enumerate(zip(names, idx, strict=True))}
            for idx in ranked[: SEARCH_TRIES_PER_TOOL]]


def harvest_result(result: dict[str, Any], sources: ValueSources) -> None:
    """A tool result's values into the returned pool: its structuredContent, and text content
    that is itself JSON (many servers serialise their structured answer into a text block)."""
    import orjson

    if "structuredContent" in result:
        harvest(result["structuredContent"], sources.returned)
    for block in result.get("content") or []:
        text = block.get("text") if isinstance(block, dict) else None
        if isinstance(text, str) and text[:1] in "{[" and len(text) < 1_000_000:
            with contextlib.suppress(orjson.JSONDecodeError):
                harvest(orjson.loads(text), sources.returned)
                continue
        if isinstance(text, str):
            harvest_text(text, sources.returned_text)


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


def minimal_arguments(schema: Any, *, tool: str = "", sources: ValueSources | None = None,
                      _depth: int = 0) -> dict[str, Any] | None:
    """Arguments that satisfy the required properties of a simple object schema, or None; a value
    the user, the command line or an earlier result gave for an argument is preferred."""
    if not isinstance(schema, dict):
        return {}
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    out: dict[str, Any] = {}
    for name in schema.get("required", []) or []:
        sub = props.get(name, {})
        known = sources.preferred(tool, name, sub) if sources is not None else None
        value = known if known is not None else sample_value(sub, _depth=_depth + 1)
        if value is _NO_VALUE:
            return None
        out[name] = value
    if sources is not None:  # what the user named for this tool goes in, required or not
        for scope in (tool, "*"):
            for name, values in sources.user.get(scope, {}).items():
                if values and name in props and name not in out:
                    out[name] = values[0]
    return out


_NO_VALUE: Any = object()


def sample_value(schema: Any, *, text: str = "tempest", _depth: int = 0) -> Any:
    """One plausible value for a simple schema (the shapes tool and elicitation schemas use).
    Below MAX_SCHEMA_DEPTH (an elicitation schema comes from the server uncut) the walk ends
    with an empty container or `text`: a deep schema costs a shallow value, never a RecursionError."""
    if not isinstance(schema, dict):
        return text
    if _depth >= MAX_SCHEMA_DEPTH:
        return {} if schema.get("type") == "object" else [] if schema.get("type") == "array" else text
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
            return sample_value(first, text=text, _depth=_depth + 1)
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
        return [sample_value(schema.get("items", {}), text=text, _depth=_depth + 1) for _ in range(low)]
    if kind == "object":
        return minimal_arguments(schema, _depth=_depth + 1) or {}
    return _NO_VALUE


def _handle_flow(tools: list[dict[str, Any]]) -> HandleFlow | None:
    """The reference surface's calendar: open_calendar -> calendarId -> create_event / list_events."""
    names = {t.get("name") for t in tools}
    if {"open_calendar", "create_event", "list_events"} <= names:
        return HandleFlow("open_calendar", "create_event", "list_events", "calendarId", "calendarId")
    return None

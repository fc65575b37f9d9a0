"""Target-aware requests: calls that reach the target's real handlers, mixed with misses.

Why: frames generated from the schema alone name tools, prompts and resources the target does
not have, so they only ever exercise the "unknown name" path. Given what the target listed
(`server/discover`, `tools/list`, `resources/list`, `resources/templates/list`,
`prompts/list`), this module calls real tools with arguments generated from each tool's
`inputSchema`, reads listed resource URIs (and URIs expanded from listed templates), gets real
prompts with their declared arguments, asks for completions of real prompt arguments, and
mixes in names the target does not have (which must fail cleanly: TOOL-09, RES-04, PR-04).

HTTP note: a tool whose inputSchema marks properties with `x-mcp-header` needs
`Mcp-Param-{Name}` headers on `tools/call` (HDR-08); `mcp_param_headers(inventory, frame)`
computes them, the driver must add them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from hypothesis import strategies as st

from mcp_tempest.strategies import formats
from mcp_tempest.strategies import http_headers as hh
from mcp_tempest.strategies.compiler import CompileError, SchemaCompiler, constant, record
from mcp_tempest.strategies.frames import request_ids, request_meta, valid_request
from mcp_tempest.strategies.hjs_inputs import hjs_arguments, only_valid
from mcp_tempest.strategies.schema_source import SchemaSource, default_source

_TEMPLATE_VAR = re.compile(r"\{[+#./;?&]?([^{}]+)\}")
MISSING_PREFIX = "tempest-missing-"


def _items(result: Any, key: str) -> list[dict[str, Any]]:
    """Items of a list result, a list of pages, or a bare list."""
    if result is None:
        return []
    if isinstance(result, Mapping):
        value = result.get(key, [])
        return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []
    if isinstance(result, list):
        out: list[dict[str, Any]] = []
        for entry in result:
            if isinstance(entry, Mapping) and key in entry:
                out.extend(_items(entry, key))
            elif isinstance(entry, dict):
                out.append(entry)
        return out
    return []


@dataclass(frozen=True)
class Inventory:
    """What the target says it has."""

    tools: tuple[dict[str, Any], ...] = ()
    resources: tuple[dict[str, Any], ...] = ()
    resource_templates: tuple[dict[str, Any], ...] = ()
    prompts: tuple[dict[str, Any], ...] = ()
    capabilities: dict[str, Any] = field(default_factory=dict)
    supported_versions: tuple[str, ...] = ()

    @classmethod
    def from_results(
        cls,
        *,
        discover: Mapping[str, Any] | None = None,
        tools: Any = None,
        resources: Any = None,
        templates: Any = None,
        prompts: Any = None,
    ) -> Inventory:
        """Build from raw `result` objects (a single page, a list of pages, or item lists)."""
        disc = dict(discover or {})
        return cls(
            tools=tuple(t for t in _items(tools, "tools") if isinstance(t.get("name"), str)),
            resources=tuple(r for r in _items(resources, "resources") if isinstance(r.get("uri"), str)),
            resource_templates=tuple(
                t for t in _items(templates, "resourceTemplates") if isinstance(t.get("uriTemplate"), str)
            ),
            prompts=tuple(x for x in _items(prompts, "prompts") if isinstance(x.get("name"), str)),
            capabilities=dict(disc.get("capabilities") or {}),
            supported_versions=tuple(v for v in disc.get("supportedVersions", []) if isinstance(v, str)),
        )

    @property
    def tool_names(self) -> frozenset[str]:
        return frozenset(t["name"] for t in self.tools)

    @property
    def prompt_names(self) -> frozenset[str]:
        return frozenset(x["name"] for x in self.prompts)

    @property
    def resource_uris(self) -> frozenset[str]:
        return frozenset(r["uri"] for r in self.resources)

    def tool(self, name: str) -> dict[str, Any] | None:
        return next((t for t in self.tools if t["name"] == name), None)

    def knows(self, frame: Mapping[str, Any]) -> bool | None:
        """Whether the frame names a listed tool/prompt/resource (None: method names nothing).

        A resources/read of a URI that matches a listed template counts as known.
        """
        params = frame.get("params") if isinstance(frame.get("params"), Mapping) else {}
        method = frame.get("method")
        if method == "tools/call":
            return params.get("name") in self.tool_names
        if method == "prompts/get":
            return params.get("name") in self.prompt_names
        if method == "resources/read":
            uri = params.get("uri")
            if uri in self.resource_uris:
                return True
            return isinstance(uri, str) and any(_template_regex(t["uriTemplate"]).fullmatch(uri) for t in self.resource_templates)
        return None


@functools.lru_cache(maxsize=256)
def _template_regex(template: str) -> re.Pattern[str]:
    parts = _TEMPLATE_VAR.split(template)
    pattern = "".join(re.escape(part) if i % 2 == 0 else "[^/?#]*" for i, part in enumerate(parts))
    return re.compile(pattern)


def expand_template(template: str, values: Mapping[str, str]) -> str:
    """Level-1 RFC 6570 expansion (`{var}` replaced by the value, other operators by the value too)."""
    return _TEMPLATE_VAR.sub(lambda m: values.get(m.group(1).split(",")[0].rstrip("*"), ""), template)


@functools.lru_cache(maxsize=512)
def _arguments_for(schema_key: bytes) -> tuple[st.SearchStrategy[dict[str, Any]], bool]:
    schema = orjson.loads(schema_key)
    via_hjs = hjs_arguments(schema)  # not/if/dependentRequired/pattern: hypothesis-jsonschema, when it works
    if via_hjs is not None:
        return via_hjs, True
    try:
        compiler = SchemaCompiler(schema)
        return only_valid(schema, compiler.object_strategy(schema, sparse=False)), True
    except (CompileError, RecursionError, TypeError, ValueError, KeyError):
        fallback = st.dictionaries(formats.identifier(), SchemaCompiler(True).any_json(), max_size=3)
        return fallback, False


def tool_arguments(tool: Mapping[str, Any]) -> tuple[st.SearchStrategy[dict[str, Any]], bool]:
    """(strategy of arguments, exact): exact is False when the inputSchema could not be
    compiled and arguments are generic JSON objects instead."""
    schema = tool.get("inputSchema")
    if not isinstance(schema, Mapping):
        schema = {"type": "object"}
    try:
        key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        key = b'{"type":"object"}'
    return _arguments_for(key)


def _prompt_arguments(prompt: Mapping[str, Any]) -> st.SearchStrategy[dict[str, str]]:
    declared = [a for a in prompt.get("arguments") or [] if isinstance(a, Mapping) and isinstance(a.get("name"), str)]
    value = st.text(max_size=16)
    required = {a["name"]: value for a in declared if a.get("required")}
    optional = {a["name"]: value for a in declared if not a.get("required")}
    return record(required, optional, sparse=False)


def _missing_name(known: frozenset[str]) -> st.SearchStrategy[str]:
    return formats.identifier(1, 10).map(lambda s: MISSING_PREFIX + s).filter(lambda s: s not in known)


def targeted_request(
    inventory: Inventory,
    *,
    schema_source: SchemaSource | None = None,
    capabilities: Mapping[str, Any] | None = None,
    include_unknown: bool = True,
    include_lists: bool = True,
) -> st.SearchStrategy[dict[str, Any]]:
    """Requests aimed at the target's real handlers, mixed with names it does not have.

    capabilities: pin clientCapabilities (e.g. declare elicitation so MRTR paths are reached).
    Build it once per inventory and reuse it: tool schemas are compiled when it is built.
    """
    source = schema_source if schema_source is not None else default_source()
    meta = request_meta(schema_source=source, capabilities=capabilities)

    def frame(method: str, fields: Mapping[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
        # One record for the params, `_meta` a member of it: each nested record is filled inside
        # the frame's draw (compiler.record), so a frame costs few Hypothesis draws.
        params = record({**fields, "_meta": meta})
        return record({"jsonrpc": constant("2.0"), "id": request_ids(), "method": constant(method), "params": params})

    known: list[st.SearchStrategy[dict[str, Any]]] = []
    misses: list[st.SearchStrategy[dict[str, Any]]] = []
    for tool in inventory.tools:
        args, _exact = tool_arguments(tool)
        known.append(frame("tools/call", {"name": constant(tool["name"]), "arguments": args}))
    uris = sorted(inventory.resource_uris)
    if uris:
        known.append(frame("resources/read", {"uri": st.sampled_from(uris)}))
    for template in inventory.resource_templates:
        names = [m.group(1).split(",")[0].rstrip("*") for m in _TEMPLATE_VAR.finditer(template["uriTemplate"])]
        values = record({n: formats.identifier(1, 8) for n in names})
        uri = values.map(lambda v, t=template["uriTemplate"]: expand_template(t, v))
        known.append(frame("resources/read", {"uri": uri}))
        if names:
            complete = {
                "ref": constant(None).map(lambda _, t=template["uriTemplate"]: {"type": "ref/resource", "uri": t}),
                "argument": record({"name": st.sampled_from(names), "value": st.text(max_size=8)}),
            }
            known.append(frame("completion/complete", complete))
    for prompt in inventory.prompts:
        known.append(frame("prompts/get", {"name": constant(prompt["name"]), "arguments": _prompt_arguments(prompt)}))
        arg_names = [a["name"] for a in prompt.get("arguments") or [] if isinstance(a, Mapping) and isinstance(a.get("name"), str)]
        if arg_names:
            complete = {
                "ref": constant(None).map(lambda _, n=prompt["name"]: {"type": "ref/prompt", "name": n}),
                "argument": record({"name": st.sampled_from(arg_names), "value": st.text(max_size=8)}),
            }
            known.append(frame("completion/complete", complete))
    if include_unknown:
        any_args = st.dictionaries(formats.identifier(), st.integers(0, 9), max_size=2)
        misses.append(frame("tools/call", {"name": _missing_name(inventory.tool_names), "arguments": any_args}))
        misses.append(
            frame(
                "resources/read",
                {"uri": formats.identifier(1, 8).map(lambda s: f"file:///{MISSING_PREFIX}{s}").filter(
                    lambda uri: uri not in inventory.resource_uris
                )},
            )
        )
        misses.append(frame("prompts/get", {"name": _missing_name(inventory.prompt_names)}))
    plain: list[st.SearchStrategy[dict[str, Any]]] = []
    if include_lists:
        for method in ("server/discover", "tools/list", "resources/list", "resources/templates/list", "prompts/list"):
            if method in source.requests:
                plain.append(valid_request(method, schema_source=source, capabilities=capabilities))
    branches = known + misses + plain
    if not branches:
        raise ValueError("the inventory is empty and lists/unknown names were excluded: nothing to generate")
    return st.one_of(branches)


def mcp_param_headers(inventory: Inventory, frame: Mapping[str, Any]) -> dict[str, str]:
    """`Mcp-Param-*` headers a `tools/call` frame needs for its tool (HDR-08); {} otherwise."""
    if frame.get("method") != "tools/call":
        return {}
    params = frame.get("params") if isinstance(frame.get("params"), Mapping) else {}
    tool = inventory.tool(params.get("name")) if isinstance(params.get("name"), str) else None
    if tool is None:
        return {}
    return hh.mcp_param_headers(tool.get("inputSchema"), params.get("arguments"))


def tools_from_schemas(schemas: Iterable[tuple[str, Mapping[str, Any]]]) -> Inventory:
    """A tools-only inventory from (name, inputSchema) pairs: handy for tests and benchmarks."""
    return Inventory(tools=tuple({"name": n, "inputSchema": dict(s)} for n, s in schemas))

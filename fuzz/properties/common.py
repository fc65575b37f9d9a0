"""Pieces every property uses: building a case step by step, sentinels, target-aware calls.

"Target-aware" means valid in the way that reaches code: a tool the target lists with arguments
drawn from its own inputSchema, a resource it has, a prompt with its required arguments. Frames
drawn from the message schema alone are valid too, but a random tool name earns "unknown tool"
and nothing more; both kinds are used.
"""

from __future__ import annotations

import copy
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from mcp_tempest.fuzz.oracle.model import Expectation
from mcp_tempest.fuzz.properties.case import Binding, Case, Step
from mcp_tempest.fuzz.properties.surface import (
    ALL_CLIENT_CAPABILITIES,
    Surface,
    minimal_arguments,
    sample_value,
)
from mcp_tempest.strategies.value_sources import ValueSources
from mcp_tempest.targets import wire

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
CAPABILITY_CHOICES: tuple[dict[str, Any], ...] = (
    {},
    {"elicitation": {}},
    {"elicitation": {"form": {}}},
    {"sampling": {}},
    {"roots": {}},
    ALL_CLIENT_CAPABILITIES,
)
SENTINEL_METHOD = "server/discover"
# Whether a generated tools/call asks for progress, and with which token type (DIGEST §12).
PROGRESS_CHOICES: st.SearchStrategy[str | None] = st.sampled_from([None, "str", "int"])


@dataclass(slots=True)
class Call:
    """A request before it has an id: method, params, and what its `_meta` should say."""

    method: str
    params: dict[str, Any] = field(default_factory=dict)
    capabilities: dict[str, Any] = field(default_factory=dict)
    version: str = wire.MODERN_VERSION
    log_level: str | None = None
    input_schema: dict[str, Any] | None = None  # the tool's, so HTTP Mcp-Param-* headers are right
    progress: str | None = None  # "str" or "int": ask for progress with a token of that type (DIGEST §12)
    client_info: dict[str, Any] | None = field(default_factory=lambda: dict(wire.HARNESS_CLIENT_INFO))

    def frame(self, rid: int | str) -> dict[str, Any]:
        return wire.build_request(
            rid, self.method, copy.deepcopy(self.params), capabilities=self.capabilities,
            version=self.version, log_level=self.log_level, progress_token=progress_token_for(self.progress, rid),
            client_info=self.client_info,
        )


def progress_token_for(style: str | None, rid: int | str) -> str | int | None:
    """A progressToken derived from the request id, so tokens are unique among the requests in
    flight, as the client must keep them (DIGEST §12); None when `style` asks for no progress."""
    if style == "str":
        return f"progress-{rid}"
    if style == "int":
        return rid if isinstance(rid, int) else zlib.crc32(str(rid).encode())
    return None


class CaseBuilder:
    """Appends steps with fresh ids; ids are ints or strings as the drawn style says."""

    def __init__(self, prop: str, *, id_style: str = "int", first_id: int = 1) -> None:
        self.prop = prop
        self.id_style = id_style
        self._next = first_id
        self.steps: list[Step] = []

    def rid(self) -> int | str:
        n = self._next
        self._next += 1
        return n if self.id_style == "int" else f"g{n}"

    def add(self, step: Step) -> int:
        self.steps.append(step)
        return len(self.steps) - 1

    def call(
        self, proc: int, call: Call, *, label: str = "", bind: list[Binding] | None = None,
        expect: Expectation | None = None, mutation: str | None = None, rid: int | str | None = None,
        group: int | None = None,
    ) -> int:
        frame = call.frame(self.rid() if rid is None else rid)
        return self.add(Step(
            proc=proc, frame=frame, label=label or call.method, bind=list(bind or []),
            expect=expect, mutation=mutation,
            input_schema=call.input_schema, group=group,
        ))

    def sentinel(self, proc: int) -> int:
        return self.call(proc, Call(SENTINEL_METHOD), label="sentinel")

    def build(self, *, warm: list[int] | None = None, params: Mapping[str, Any] | None = None) -> Case:
        return Case(property=self.prop, steps=list(self.steps), warm=list(warm or []),
                    params=dict(params or {}))


def id_styles() -> st.SearchStrategy[str]:
    return st.sampled_from(["int", "str"])


# --- target-aware valid calls ---


def _tool_args(tool: Mapping[str, Any], sources: ValueSources | None = None,
               good_args: dict[str, Any] | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """A tool's arguments three ways: a call known to succeed (the surface search's) or the
    minimal one, the schema alone, and each property drawn from the pools or its own schema."""
    schema = tool.get("inputSchema")
    name = str(tool.get("name"))
    fallback = good_args or minimal_arguments(schema, tool=name, sources=sources) or {}
    try:
        from mcp_tempest.strategies.compiler import compile_schema

        strat = compile_schema(schema if isinstance(schema, dict) else {"type": "object"})
        options = [st.just(fallback), strat.filter(lambda v: isinstance(v, dict))]
        informed = _informed_args(name, schema, sources, compile_schema)
        if informed is not None:
            options.insert(1, informed)
        return st.one_of(options)
    except Exception:  # noqa: BLE001 - an exotic schema must not stop the campaign
        return st.just(fallback)


def _informed_args(tool: str, schema: Any, sources: ValueSources | None,
                   compile_schema: Callable[[Any], st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]] | None:
    """Each of an object schema's properties from the value pools (and the schema's own
    boundaries) mixed with its generated values; required ones always, optional ones maybe.
    None for a schema without plain properties (the whole-schema strategy covers it)."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict) or not schema["properties"]:
        return None
    pools = sources if sources is not None else ValueSources()
    required = {n for n in schema.get("required", []) or [] if isinstance(n, str)}
    fixed: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for arg, sub in list(schema["properties"].items())[:64]:
        if not isinstance(arg, str):
            continue
        try:
            base = compile_schema(sub if isinstance(sub, dict) else {})
        except Exception:  # noqa: BLE001 - an exotic sub-schema: its pools alone, or a sample
            base = st.just(sample_value(sub))
        (fixed if arg in required else optional)[arg] = pools.argument(tool, arg, sub, base)
    return st.fixed_dictionaries(fixed, optional=optional)


def _short_text() -> st.SearchStrategy[str]:
    return st.text(min_size=1, max_size=24)


def surface_calls(surface: Surface, *, mrtr: bool = True) -> st.SearchStrategy[Call]:
    """A valid call to something the target offers (or to a method that needs nothing)."""
    caps = st.sampled_from(CAPABILITY_CHOICES)
    levels = st.one_of(st.none(), st.sampled_from(LOG_LEVELS))
    options: list[st.SearchStrategy[Call]] = [
        st.builds(Call, st.just("server/discover"), st.just({}), caps, st.just(wire.MODERN_VERSION), levels),
    ]
    offered = surface.capabilities or {}
    for method, cap in (("tools/list", "tools"), ("prompts/list", "prompts"), ("resources/list", "resources"),
                        ("resources/templates/list", "resources")):
        if cap in offered:
            options.append(st.builds(Call, st.just(method), st.just({}), caps, st.just(wire.MODERN_VERSION), levels))
    tools = [t for t in surface.tools if isinstance(t.get("name"), str)]
    sources = surface.sources
    if tools:
        # One strategy per tool, built on its first draw and kept: compiling a tool's inputSchema
        # again for every example cost each example the whole schema (and the list is sampled to
        # at most surface.MAX_SURFACE_ITEMS tools, so this stays bounded too).
        built: dict[int, st.SearchStrategy[Call]] = {}

        def tool_call(tool: dict[str, Any]) -> st.SearchStrategy[Call]:
            found = built.get(id(tool))
            if found is None:
                found = built[id(tool)] = st.builds(
                    lambda args, c, lv, pg, t=tool: Call("tools/call", {"name": t["name"], "arguments": args}, c,
                                                         log_level=lv, input_schema=t.get("inputSchema"), progress=pg),
                    _tool_args(tool, sources, surface.good_args.get(str(tool["name"]))), caps, levels,
                    PROGRESS_CHOICES,
                )
            return found

        options.append(st.sampled_from(tools).flatmap(tool_call))
    uris = [r["uri"] for r in surface.resources if isinstance(r.get("uri"), str)]
    if uris:
        options.append(st.builds(lambda u, c, lv: Call("resources/read", {"uri": u}, c, log_level=lv),
                                 st.sampled_from(uris), caps, levels))
    prompts = [p for p in surface.prompts if isinstance(p.get("name"), str)]
    if prompts:
        def prompt_call(prompt: dict[str, Any]) -> st.SearchStrategy[Call]:
            names = [a["name"] for a in prompt.get("arguments", []) or []
                     if isinstance(a, dict) and isinstance(a.get("name"), str) and a.get("required")]
            args = st.fixed_dictionaries({n: _short_text() for n in names})
            return st.builds(lambda a, c, lv, p=prompt: Call("prompts/get", {"name": p["name"], "arguments": a}, c,
                                                             log_level=lv), args, caps, levels)

        options.append(st.sampled_from(prompts).flatmap(prompt_call))
        if "completions" in offered:
            def completion(prompt: dict[str, Any]) -> st.SearchStrategy[Call]:
                names = [a["name"] for a in prompt.get("arguments", []) or []
                         if isinstance(a, dict) and isinstance(a.get("name"), str)] or ["q"]
                return st.builds(
                    lambda n, v, p=prompt: Call("completion/complete", {
                        "ref": {"type": "ref/prompt", "name": p["name"]}, "argument": {"name": n, "value": v}}),
                    st.sampled_from(names), st.text(max_size=8))

            options.append(st.sampled_from(prompts).flatmap(completion))
    if mrtr and surface.triggers:
        options.append(st.sampled_from(surface.triggers).map(
            lambda t: Call(t.method, copy.deepcopy(t.params), dict(t.capabilities),
                           input_schema=_schema_for(surface, t.params))))
    return st.one_of(options)


def _schema_for(surface: Surface, params: Mapping[str, Any]) -> dict[str, Any] | None:
    tool = surface.tool(params.get("name")) if isinstance(params.get("name"), str) else None
    return tool.get("inputSchema") if tool else None


def tool_schema(surface: Surface, name: str) -> dict[str, Any] | None:
    tool = surface.tool(name)
    return tool.get("inputSchema") if tool else None

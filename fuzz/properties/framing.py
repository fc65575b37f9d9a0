"""Framing and robustness: a malformed frame, then a liveness sentinel on the same process.

Each example sends one to three malformed frames, each followed by a sentinel (a well-formed
`server/discover`). The reaction to each malformed frame is judged against the expectation its
mutation carries (answer with an error, or ignore, as the rule says); the sentinel's answer is
judged like any answer (the server is alive, wrote only JSON-RPC, and answers correctly). The
frames go to the warm process, one example after another: start-up is paid once, not per frame.

Mutations come from the strategies' malformed catalogue (`strategies.malformed`, each with its
expected reaction), except those that need a live MRTR state (the mrtr property plays them for
real), plus a blank line on stdio, which the catalogue does not have.
"""

from __future__ import annotations

import fnmatch
from dataclasses import replace
from typing import Any

from hypothesis import strategies as st

from mcp_tempest.fuzz.oracle.model import Expectation
from mcp_tempest.fuzz.properties.base import Context, Probe, Property
from mcp_tempest.fuzz.properties.case import Await, Case, Step
from mcp_tempest.fuzz.properties.common import CaseBuilder, id_styles
from mcp_tempest.fuzz.properties.surface import Surface, minimal_arguments, sample_value
from mcp_tempest.targets import wire
from mcp_tempest.targets.transports import transport_named

LONG_LIVED_METHODS = frozenset({"subscriptions/listen"})


#: How long to wait for the reply to a malformed frame with a readable id before the sentinel
#: goes out (a server may answer it with a null id, which only the oracle can pair).
MALFORMED_REPLY_TIMEOUT = 1.0


def probe_step(name: str, frame: dict[str, Any] | None, raw: bytes | None, headers: dict[str, str] | None,
               expect: Expectation, *, wait: Await = "none", http_method: str = "POST") -> Step:
    """One malformed frame as the step that sends it: the mutation's name, its bytes and the
    reaction it must get (the catalogue's own Expectation, resolved for the transport)."""
    return Step(proc=0, frame=frame, raw=raw, headers=headers, wait=wait, label=name, expect=expect,
                mutation=name, timeout=MALFORMED_REPLY_TIMEOUT, http_method=http_method)


def blank_line(rid: int | str) -> list[Step]:
    """A line that is only its terminator: nothing to answer, nothing to die of (STDIO-02)."""
    return [probe_step("blank-line", None, b"\n", None,
                       Expectation("error-or-ignore", "STDIO-02", mutation="blank-line"))]


#: HTTP methods other than POST on the endpoint itself (DIGEST 7.4: SHOULD get 405, SL-11).
ENDPOINT_METHODS = {"http-get": "GET", "http-delete": "DELETE"}
#: Probes the framing property sends that the catalogue has no row for: name -> (rule, transport).
EXTRAS: dict[str, tuple[str, str]] = {"blank-line": ("STDIO-02", "stdio"), "http-get": ("SL-11", "http"),
                                      "http-delete": ("SL-11", "http"), "hdr-param-missing": ("HDR-08", "http"),
                                      "hdr-param-mismatch": ("HDR-08", "http")}
#: The HDR-08 probes need a tool of the target that declares `x-mcp-header` (so they are drawn
#: from the surface, not the catalogue): a tools/call with the argument in the body and its
#: `Mcp-Param-*` header left out, or holding another value. Either MUST get -32020 with 400.
PARAM_PROBES = ("hdr-param-missing", "hdr-param-mismatch")


def param_header_frames(name: str, surface: Surface) -> list[Step] | None:
    """The HDR-08 probe `name` for the first callable tool with an `x-mcp-header` argument, or
    None when the target lists none (then the probe cannot apply)."""
    for tool in surface.tools:
        schema = tool.get("inputSchema")
        paths = wire.param_header_paths(schema)
        args = minimal_arguments(schema)
        if not paths or args is None or not isinstance(tool.get("name"), str):
            continue
        header, path = next(iter(paths.items()))
        node: Any = schema
        for key in path:
            node = (node.get("properties") or {}).get(key) if isinstance(node, dict) else None
        target = args
        for key in path[:-1]:
            target = target.setdefault(key, {})
        if target.get(path[-1]) is None:
            target[path[-1]] = sample_value(node)
        if wire.header_scalar(target[path[-1]]) is None:
            continue
        frame = wire.build_request(1, "tools/call", {"name": tool["name"], "arguments": args})
        headers = wire.http_headers(frame, input_schema=schema)
        wire_name = f"Mcp-Param-{header}"
        if name == "hdr-param-missing":
            headers.pop(wire_name, None)
        else:
            headers[wire_name] = wire.encode_header_value(_other_value(target[path[-1]]))
        expect = Expectation("error", "HDR-08", codes=frozenset({wire.HEADER_MISMATCH}), statuses=frozenset({400}),
                             mutation=name)
        return [probe_step(name, frame, wire.dumps(frame), headers, expect, wait="response")]
    return None


def _other_value(value: Any) -> str:
    """A header value that differs from the body's `value` whichever way a server compares."""
    if isinstance(value, bool):
        return "false" if value else "true"
    if isinstance(value, int | float):
        return str(int(value) + 1)
    return f"{value}-not-this"


def endpoint_method(name: str) -> list[Step]:
    """A GET or DELETE on the endpoint, no body: judged by SL-11 (405), then the sentinel."""
    return [probe_step(name, None, b"", None, Expectation("any", "SL-11", mutation=name),
                       http_method=ENDPOINT_METHODS[name])]


#: Mutations sent as the first frame of a fresh process (see FramingProperty._build): a `_meta`
#: that is not an object is how a client without the 2026-07-28 envelope opens, and a server that
#: then serves the process in the handshake era refuses the sentinel (SL-2).
FIRST_FRAME_PROBES = frozenset({"meta-not-object"})


_CATALOGUE_CACHE: dict[tuple[str, tuple[str, ...]], st.SearchStrategy[list[Step]]] = {}
#: Malformed frames that need a live server's state; the mrtr property plays those for real.
_SKIP_LEVELS = frozenset({"retry"})


def mutation_names(transport: str) -> list[str]:
    """Every mutation the framing property can send over `transport`."""
    from mcp_tempest.strategies import malformed as catalogue

    names = [n for n in catalogue.mutation_names(transport=transport)
             if catalogue.get_mutation(n).level not in _SKIP_LEVELS]
    return names + (["blank-line"] if transport_named(transport).line_framed else [*ENDPOINT_METHODS, *PARAM_PROBES])


def select_mutations(transport: str, patterns: tuple[str, ...]) -> list[str]:
    """The mutation names matching any of `patterns` (shell globs); all of them for ()."""
    names = mutation_names(transport)
    if not patterns:
        return names
    return [n for n in names if any(fnmatch.fnmatchcase(n, pat) for pat in patterns)]


def malformed_frames(transport: str, patterns: tuple[str, ...] = (),
                     ) -> st.SearchStrategy[list[Step]]:
    """One malformed transmission (one or more frames) from the strategies' catalogue, or an extra."""
    key = (transport, tuple(patterns))
    cached = _CATALOGUE_CACHE.get(key)
    if cached is not None:
        return cached
    from mcp_tempest.strategies import malformed as catalogue

    names = select_mutations(transport, patterns)
    options: list[st.SearchStrategy[list[Step]]] = []
    listed = [n for n in names if n not in EXTRAS]
    if listed:
        # A listen request (however malformed around the edges) opens a stream that answers only
        # when cancelled; one per warm process would leak notifications into later examples.
        options.append(catalogue.any_malformed_case(transport=transport, names=listed).filter(
            lambda c: c.method not in LONG_LIVED_METHODS).map(lambda c: _from_catalogue(c, transport)))
    if "blank-line" in names:
        options.append(st.builds(blank_line, st.integers(1, 10_000)))
    verbs = [n for n in names if n in ENDPOINT_METHODS]
    if verbs:
        options.append(st.sampled_from(verbs).map(endpoint_method))
    strategy = st.one_of(options) if options else st.nothing()
    _CATALOGUE_CACHE[key] = strategy
    return strategy


_PROBE_CACHE: dict[str, dict[str, list[Step] | None]] = {}


def probe_frames(name: str, transport: str) -> list[Step] | None:
    """The frames the coverage phase sends for mutation `name`: the same ones in every campaign
    (drawn with a fixed seed), or None when the mutation makes only long-lived listen frames.
    All of a transport's probes are drawn as one example: one Hypothesis run, not one per name."""
    key = transport
    if key not in _PROBE_CACHE:
        from mcp_tempest.strategies import malformed as catalogue
        from mcp_tempest.strategies.sampling import draw_examples

        names = [n for n in mutation_names(transport) if n not in EXTRAS]
        one = [catalogue.malformed_case(n).filter(lambda c: c.method not in LONG_LIVED_METHODS) for n in names]
        drawn = draw_examples(st.tuples(*one), 1, seed=0)
        frames: dict[str, list[Step] | None] = {"blank-line": blank_line(1),
                                                     **{n: endpoint_method(n) for n in ENDPOINT_METHODS}}
        for n, case in zip(names, drawn[0] if drawn else [None] * len(names), strict=True):
            frames[n] = _from_catalogue(case, transport) if case is not None else None
        _PROBE_CACHE[key] = frames
    return _PROBE_CACHE[key].get(name)


def _from_catalogue(case: Any, transport: str) -> list[Step]:
    """A `strategies.malformed.MalformedCase` as the steps that send it, the first carrying its
    expectation (what a dual-era server may do instead is the oracle's one policy, not decided here)."""
    expect = case.expect.for_transport(transport)
    out: list[Step] = []
    for i, line in enumerate(case.lines):
        frame = case.frames[i] if case.frames is not None else None
        raw = line + case.terminator if transport_named(transport).line_framed else line
        headers = dict(case.http_headers[i]) if transport_named(transport).http_semantics and case.http_headers else None
        readable = isinstance(frame, dict) and "method" in frame and _plain_id(frame.get("id"))
        out.append(probe_step(case.mutation, frame if readable else None, raw, headers,
                              expect if i == 0 else Expectation("any", case.rule, mutation=case.mutation),
                              wait="response" if readable else "none"))
    return out


def _plain_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class FramingProperty(Property):
    name = "framing"
    title = "malformed frames are answered or ignored as the rule says, and the server lives on"
    fresh_per_example = 0
    eras = frozenset({"modern"})
    coverage_batch = 3  # as many malformed transmissions as a random example sends at most

    def combine(self, probes: list[Probe]) -> Case:
        # An era-lock probe goes first, so its frame is the first its (fresh) process reads.
        ordered = sorted(probes, key=lambda p: p.name not in FIRST_FRAME_PROBES)
        return self._build("int", [p.parts for p in ordered])

    def cases(self, ctx: Context) -> st.SearchStrategy[Case]:
        frames = malformed_frames(ctx.transport, ctx.mutations)
        chosen = set(select_mutations(ctx.transport, ctx.mutations))
        params = [f for f in (param_header_frames(n, ctx.surface) for n in PARAM_PROBES if n in chosen) if f]
        if params:  # the HDR-08 probes come from the target's own tools: one draw in twenty
            catalogue_frames = frames
            frames = st.integers(0, 19).flatmap(lambda k: st.sampled_from(params) if k == 0 else catalogue_frames)
        return st.builds(self._build, id_styles(), st.lists(frames, min_size=1, max_size=3))

    def coverage(self, ctx: Context) -> list[Probe]:
        """Every catalogue mutation below the retry level, once, in catalogue order; the ones that
        cannot go over this transport (or that --mutations leaves out) say so."""
        from mcp_tempest.strategies import malformed as catalogue

        chosen = set(select_mutations(ctx.transport, ctx.mutations))
        probes: list[Probe] = []
        names = [n for n in catalogue.mutation_names() if catalogue.get_mutation(n).level not in _SKIP_LEVELS]
        for name in [*names, *EXTRAS]:
            rule = EXTRAS[name][0] if name in EXTRAS else catalogue.get_mutation(name).rule
            if name not in mutation_names(ctx.transport):
                where = EXTRAS[name][1] if name in EXTRAS else catalogue.get_mutation(name).transport
                probes.append(Probe(name, rule, None, f"needs the {where} transport"))
            elif name not in chosen:
                probes.append(Probe(name, rule, None, "left out by --mutations"))
            elif name in PARAM_PROBES:
                frames = param_header_frames(name, ctx.surface)
                probes.append(Probe(name, rule, self._build("int", [frames]) if frames else None,
                                    "" if frames else "no callable tool declares an x-mcp-header argument",
                                    parts=frames))
            else:
                frames = probe_frames(name, ctx.transport)
                probes.append(Probe(name, rule, self._build("int", [frames]) if frames else None,
                                    "" if frames else "every frame it makes opens a long-lived listen stream",
                                    parts=frames))
        return probes

    def applicable(self, ctx: Context) -> str | None:
        base = super().applicable(ctx)
        if base is None and ctx.mutations and not select_mutations(ctx.transport, ctx.mutations):
            return f"no mutation named by --mutations applies over {ctx.transport}"
        return base

    def _build(self, id_style: str, items: list[list[Step]]) -> Case:
        b = CaseBuilder(self.name, id_style=id_style, first_id=1_000_001)
        for group_no, frames in enumerate(items):
            group = group_no if len(frames) > 1 else None  # a pair goes out together (in flight at once)
            for step in frames:
                b.add(replace(step, group=group, bind=list(step.bind)))
            b.sentinel(0)
        # SL-2 (the era lock): a server that picks a process's era from its first request can only
        # show it when a malformed _meta is that first request, so such a case takes a fresh process.
        first = items[0][0].mutation if items and items[0] else None
        return b.build(warm=[] if first in FIRST_FRAME_PROBES else [0])


PROPERTY = FramingProperty()

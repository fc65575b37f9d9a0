"""Every valid frame: whatever a conformant client may send, the answer passes the whole oracle.

Frames come from two sources, mixed in one example: target-aware calls (a tool the target lists
with arguments from its own schema, its resources and prompts, the MRTR trigger) and frames
generated from the message schema alone (any of the ten request methods, and the client
notification). Many frames share one warm process; a sentinel closes each example, so a frame
that kills the process or draws a late reply to a notification is caught in its own example.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from mcp_tempest.fuzz.properties.base import Context, Probe, Property
from mcp_tempest.fuzz.properties.case import Binding, Case, Step
from mcp_tempest.fuzz.properties.common import Call, CaseBuilder, id_styles, surface_calls
from mcp_tempest.fuzz.properties.surface import MAX_PAGES, Surface, minimal_arguments
from mcp_tempest.targets import wire
from mcp_tempest.targets.transports import transport_named

_SCHEMA_FRAMES: Any = None


def schema_frames() -> st.SearchStrategy[dict[str, Any]]:
    """Valid frames of every short-lived request method and the client notification."""
    global _SCHEMA_FRAMES
    if _SCHEMA_FRAMES is None:
        from mcp_tempest.strategies import frames

        methods = [m for m in frames.client_methods() if m not in frames.LONG_LIVED_METHODS]
        _SCHEMA_FRAMES = st.one_of([frames.valid_frame(m) for m in methods])
    return _SCHEMA_FRAMES


# The coverage probes: request-scoped notifications a valid request may draw (DIGEST §12, §13).
# name: (rule, progress token type, logLevel). The level asked is the highest, so any message
# at all below it breaks LOG-02; without a level, any message at all breaks LOG-01.
NOTIFICATION_PROBES: dict[str, tuple[str, str | None, str | None]] = {
    "progress-none": ("PROG-01", None, None),
    "progress-token-str": ("PROG-02", "str", None),
    "progress-token-int": ("PROG-03", "int", None),
    "log-level-none": ("LOG-01", None, None),
    "log-level-emergency": ("LOG-02", None, "emergency"),
}


def probe_call(surface: Surface) -> Call:
    """The request the notification probes send: a call of the first tool that needs no MRTR
    round (a tool call is the long-running operation progress and logs report on), else
    server/discover, which every server answers."""
    triggers = {t.params.get("name") for t in surface.triggers}
    for tool in surface.tools:
        name = tool.get("name")
        args = minimal_arguments(tool.get("inputSchema"))
        if isinstance(name, str) and name not in triggers and args is not None:
            return Call("tools/call", {"name": name, "arguments": args}, input_schema=tool.get("inputSchema"))
    return Call("server/discover")


# Cancellation probes (DIGEST §11), stdio only: on HTTP a client cancels by closing the stream
# and sends no notification (CAN-02). name: (rule, whether a request is in flight to cancel).
CANCEL_PROBES: dict[str, tuple[str, bool]] = {
    "cancel-in-flight": ("CAN-04", True),
    "cancel-unknown-request": ("CAN-06", False),
}
UNKNOWN_REQUEST_ID = "tempest-never-sent"


@dataclass(frozen=True, slots=True)
class Cancel:
    """Send `call` without waiting for its answer (when given), then `notifications/cancelled`
    naming it (or naming a request that was never sent, which CAN-05 says to ignore silently)."""

    call: Call | None


@dataclass(frozen=True, slots=True)
class Listen:
    """Open `subscriptions/listen` with `notifications` as filter, let the acknowledgement come
    (a server/discover answered after it), then cancel it as a stdio client does (SUB-07), or
    (`shutdown`) close the server's stdin with the listen open and read how it ends (SUB-08)."""

    notifications: dict[str, Any]
    shutdown: bool = False
    stream: bool = False  # over HTTP: the listen's SSE stream, closed by the harness after its first message


def listen_filter(surface: Surface) -> dict[str, Any]:
    """The listen probe's filter: the first resource the target lists, and tools list changes."""
    uris = [r["uri"] for r in surface.resources if isinstance(r.get("uri"), str)][:1]
    return {"toolsListChanged": True, **({"resourceSubscriptions": uris} if uris else {})}


# Tool-call probes (DIGEST 9.1): the oracle judges a call against the tools the same transcript
# listed (TOOL-09, TOOL-10), so each lists every page first, then calls.
UNKNOWN_TOOL_PROBE = ("unknown-tool", "TOOL-09")
TOOLS_AFTER_LIST_PROBE = ("tools-after-list", "TOOL-10")
UNKNOWN_TOOL_NAME = "tempest-no-such-tool"
MAX_PROBED_TOOLS = 8


@dataclass(frozen=True, slots=True)
class AfterList:
    """List the tools, following nextCursor for up to `pages` pages (a page past the last one is
    skipped: its cursor binding finds none), then send `calls`."""

    pages: int
    calls: tuple[Call, ...]


def _pages(surface: Surface) -> int:
    """Enough tools/list steps to reach the last page: the pages the surface read (a page past
    the last is skipped), or at most one per tool plus an empty last page when it read none. A
    list the surface's budget cut short (an endless nextCursor) is read no further than it was,
    so that one example never receives more of it than the surface did."""
    if surface.tool_pages:
        return max(1, min(MAX_PAGES, surface.tool_pages + (0 if surface.tools_cut else 1)))
    return max(1, min(MAX_PAGES, len(surface.tools) + len(surface.withheld_tools) + 1))


def unknown_tool(surface: Surface) -> AfterList | None:
    """A call of a tool the target does not list (DIGEST TOOL-09: a JSON-RPC error, not a result).
    None when the tools list was cut short: TOOL-09 judges only after a complete listing."""
    if surface.tools_cut:
        return None
    known = {t.get("name") for t in surface.tools} | set(surface.withheld_tools)
    name = UNKNOWN_TOOL_NAME
    while name in known:
        name += "-x"
    return AfterList(_pages(surface), (Call("tools/call", {"name": name, "arguments": {}}),))


def tools_after_list(surface: Surface) -> AfterList | None:
    """Each listed tool (up to MAX_PROBED_TOOLS, MRTR triggers left to the mrtr property) called
    once with the minimal arguments its inputSchema accepts: a tool that fails on them must say so
    in an isError result (TOOL-10). None when no tool has arguments we can make."""
    triggers = {t.params.get("name") for t in surface.triggers}
    calls = []
    sources = surface.sources
    for tool in surface.tools:
        name = tool.get("name")
        args = surface.good_args.get(str(name)) or minimal_arguments(tool.get("inputSchema"), tool=str(name),
                                                                     sources=sources)
        if isinstance(name, str) and name not in triggers and args is not None:
            calls.append(Call("tools/call", {"name": name, "arguments": args}, input_schema=tool.get("inputSchema")))
    return AfterList(_pages(surface), tuple(calls[:MAX_PROBED_TOOLS])) if calls else None


def _not_listed_why(surface: Surface, rule: str, tools: bool) -> str:
    """Why a tool-call probe was not built (the report's "not tried")."""
    if not tools:
        return "the target offers no tools"
    if rule == UNKNOWN_TOOL_PROBE[1] and surface.tools_cut:
        return f"tools/list was not read to its end ({surface.tools_cut}): TOOL-09 judges a call only after a " \
               "complete listing"
    return "no listed tool has arguments the harness can make"


LISTEN_PROBE = ("listen-then-cancel", "SUB-03")
SHUTDOWN_PROBE = ("listen-then-shutdown", "SUB-08")


class ValidProperty(Property):
    name = "valid"
    title = "every valid frame is answered as the spec says"
    fresh_per_example = 0
    coverage_batch = len(NOTIFICATION_PROBES) + len(CANCEL_PROBES) + 4

    def coverage(self, ctx: Context) -> list[Probe]:
        """Each notification probe once: the same call with and without a progressToken (of
        both types) and logLevel, so PROG-* and LOG-* are exercised on every campaign; and the
        tool-call probes, which list the tools before calling, since TOOL-09 and TOOL-10 judge a
        call only against a listing in the same transcript."""
        base = probe_call(ctx.surface)
        probes = []
        for name, (rule, progress, level) in NOTIFICATION_PROBES.items():
            call = Call(base.method, base.params, base.capabilities, log_level=level,
                        input_schema=base.input_schema, progress=progress)
            probes.append(Probe(name, rule, self._build("int", [call]), parts=call))
        # Before the cancellations: a notification carries no protocolVersion, and after one a
        # dual-era stdio server may serve the process by 2025-era rules (VER-05), which excuses
        # the modern-only TOOL-09/TOOL-10 on everything that follows it in the combined case.
        tools = "tools" in (ctx.surface.capabilities or {}) or bool(ctx.surface.tools)
        for (name, rule), after in ((UNKNOWN_TOOL_PROBE, unknown_tool(ctx.surface)),
                                    (TOOLS_AFTER_LIST_PROBE, tools_after_list(ctx.surface))):
            if not tools or after is None:
                probes.append(Probe(name, rule, None, _not_listed_why(ctx.surface, rule, tools)))
            else:
                probes.append(Probe(name, rule, self._build("int", [after]), parts=after))
        for name, (rule, in_flight) in CANCEL_PROBES.items():
            if not transport_named(ctx.transport).line_framed:
                probes.append(Probe(name, rule, None, "on HTTP a client cancels by closing the stream (CAN-02)"))
                continue
            cancel = Cancel(Call(base.method, base.params, base.capabilities, log_level="debug",
                                 input_schema=base.input_schema, progress="str") if in_flight else None)
            probes.append(Probe(name, rule, self._build("int", [cancel]), parts=cancel))
        name, rule = LISTEN_PROBE
        listen = Listen(listen_filter(ctx.surface), stream=not transport_named(ctx.transport).line_framed)
        probes.append(Probe(name, rule, self._build("int", [listen]), parts=listen))
        name, rule = SHUTDOWN_PROBE
        if not transport_named(ctx.transport).line_framed:
            probes.append(Probe(name, rule, None, "an HTTP server is not shut down by the client"))
        else:
            listen = Listen(listen_filter(ctx.surface), shutdown=True)
            probes.append(Probe(name, rule, self._build("int", [listen]), parts=listen))
        return probes

    def combine(self, probes: list[Probe]) -> Case:
        return self._build("int", [p.parts for p in probes])

    def cases(self, ctx: Context) -> st.SearchStrategy[Case]:
        item = st.one_of(surface_calls(ctx.surface), schema_frames())
        return st.builds(self._build, id_styles(), st.lists(item, min_size=1, max_size=4))

    def _build(self, id_style: str, items: list[Any]) -> Case:
        b = CaseBuilder(self.name, id_style=id_style)
        # A shutdown ends the process: it goes last, and nothing (no sentinel) follows it.
        shutdown = [item for item in items if isinstance(item, Listen) and item.shutdown]
        items = [item for item in items if item not in shutdown] + shutdown[:1]
        for item in items:
            if isinstance(item, Listen) and item.stream:
                # Over HTTP the listen's own SSE stream: read until the acknowledgement, then
                # closed by the harness, which is how an HTTP client ends it (SUB-07).
                b.add(Step(proc=0, frame=wire.build_request(b.rid(), "subscriptions/listen",
                                                            {"notifications": dict(item.notifications)}),
                           wait="stream", label="listen (stream closed after its first message)"))
            elif isinstance(item, Listen):
                rid = b.rid()
                b.add(Step(proc=0, frame=wire.build_request(rid, "subscriptions/listen",
                                                            {"notifications": dict(item.notifications)}),
                           wait="none", label="listen"))
                b.call(0, Call("server/discover"), label="while listening")
                if item.shutdown:
                    b.add(Step(proc=0, wait="exit", label="shutdown"))
                else:
                    b.add(Step(proc=0, frame=wire.build_notification("notifications/cancelled", {
                        "requestId": rid, "reason": "tempest listen probe"}), wait="none", label="end listen"))
            elif isinstance(item, Cancel):
                rid: Any = UNKNOWN_REQUEST_ID
                if item.call is not None:
                    rid = b.rid()
                    b.add(Step(proc=0, frame=item.call.frame(rid), wait="none", label=f"{item.call.method} (cancelled)",
                               input_schema=item.call.input_schema))
                b.add(Step(proc=0, frame=wire.build_notification("notifications/cancelled", {
                    "requestId": rid, "reason": "tempest cancellation probe"}), wait="none", label="cancel"))
            elif isinstance(item, AfterList):
                page = b.call(0, Call("tools/list"), label="tools/list (page 1)")
                for n in range(2, item.pages + 1):
                    page = b.call(0, Call("tools/list", {"cursor": ""}), label=f"tools/list (page {n})",
                                  bind=[Binding(("params", "cursor"), page, ("result", "nextCursor"))])
                for call in item.calls:
                    b.call(0, call)
            elif isinstance(item, Call):
                b.call(0, item)
            elif "id" in item:
                frame = dict(item)
                frame["id"] = b.rid()  # unique in the example: ids in flight never collide (RPC-05)
                b.add(Step(proc=0, frame=frame, label=str(frame.get("method"))))
            else:
                b.add(Step(proc=0, frame=dict(item), wait="none", label=str(item.get("method"))))
        if shutdown:
            return b.build()
        b.sentinel(0)
        return b.build(warm=[0])


PROPERTY = ValidProperty()

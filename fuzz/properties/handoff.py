"""State lives in explicit handles and requestState, never in the process (SL-3, SL-5, MRTR-18).

One example, three processes:
  A (warm)   opens a handle (when the target has a handle flow) and begins an MRTR round-trip;
  B (fresh)  completes the round-trip: echoes A's requestState and answers A's inputRequests,
             writing through the handle;
  C (fresh)  reads through the handle and must see what B wrote.
Without a handle flow only the round-trip is played; without an MRTR trigger, only the handle.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from mcp_tempest.fuzz.oracle.model import Violation
from mcp_tempest.fuzz.properties.base import Context, Property
from mcp_tempest.fuzz.properties.case import RUN_SOURCE, Binding, Case
from mcp_tempest.fuzz.properties.common import Call, CaseBuilder, id_styles, tool_schema
from mcp_tempest.fuzz.properties.executor import Run
from mcp_tempest.fuzz.properties.surface import MrtrTrigger, Surface, sample_value

MAX_EXTRA_ROUNDS = 2


class HandoffProperty(Property):
    name = "handoff"
    title = "an MRTR round-trip and a handle work across processes"
    fresh_per_example = 2

    def applicable(self, ctx: Context) -> str | None:
        base = super().applicable(ctx)
        if base is not None:
            return base
        if not ctx.surface.triggers and ctx.surface.handles is None:
            if ctx.surface.withheld_tools:
                return ("no call that may be made answers input_required or opens a handle (the tool policy "
                        f"withholds {len(ctx.surface.withheld_tools)} tool(s))")
            return "the target has neither a call that answers input_required nor a handle flow"
        return None

    def cases(self, ctx: Context) -> st.SearchStrategy[Case]:
        surface = ctx.surface
        return st.builds(
            self._build, st.just(surface), id_styles(),
            st.sampled_from(surface.triggers) if surface.triggers else st.none(),
            st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12),
        )

    def _build(self, surface: Surface, id_style: str, trigger: MrtrTrigger | None, title: str) -> Case:
        b = CaseBuilder(self.name, id_style=id_style)
        flow = surface.handles
        params: dict[str, Any] = {"title": title}
        handle_bind: list[Binding] = []
        if flow is not None:
            opened = b.call(0, Call("tools/call", {"name": flow.open_tool, "arguments": {"name": ""}},
                                    input_schema=tool_schema(surface, flow.open_tool)),
                            label="open-handle",
                            bind=[Binding(("params", "arguments", "name"), RUN_SOURCE, ("nonce",), "format",
                                          "tempest-{}")])
            params["open"] = opened
            handle_bind = [Binding(("params", "arguments", flow.handle_arg), opened,
                                   ("result", "structuredContent", flow.handle_field))]
        if trigger is not None:
            # The round-trip: begun on A, every retry on B (a fresh process).
            schema = tool_schema(surface, str(trigger.params.get("name", "")))
            first = Call(trigger.method, dict(trigger.params), dict(trigger.capabilities), input_schema=schema)
            begin = b.call(0, first, label="mrtr-begin")
            params["begin"] = begin
            previous = begin
            retries = []
            for round_no in range(1 + MAX_EXTRA_ROUNDS):
                bind = [
                    Binding(("params", "requestState"), previous, ("result", "requestState")),
                    Binding(("params", "inputResponses"), previous, ("result", "inputRequests"), "answers",
                            {"mode": "accept"}),
                ]
                retries.append(b.call(1, first, label=f"mrtr-retry-{round_no + 1}", bind=bind))
                previous = retries[-1]
            params["retries"] = retries
        if flow is not None:
            # The handle: opened on A, written through on B, read through on C.
            schema = tool_schema(surface, flow.write_tool) or {}
            args = {k: sample_value(v) for k, v in (schema.get("properties") or {}).items()
                    if k in (schema.get("required") or []) or k == "startsAt"}
            args["title"] = title
            args[flow.handle_arg] = ""
            params["write"] = b.call(1, Call("tools/call", {"name": flow.write_tool, "arguments": args},
                                             input_schema=schema), label="write", bind=handle_bind)
        if flow is not None:
            params["read"] = b.call(2, Call("tools/call", {"name": flow.read_tool,
                                                           "arguments": {flow.handle_arg: "", "limit": 100}},
                                            input_schema=tool_schema(surface, flow.read_tool)),
                                    label="read-handle", bind=handle_bind)
        return b.build(warm=[0], params=params)

    def check(self, run: Run, ctx: Context) -> list[Violation]:
        p = run.case.params
        out: list[Violation] = []
        for i in p.get("retries") or []:
            if i in run.skipped:
                break
            result = run.result(i)
            if result is None:
                out.append(Violation(
                    "SL-3", "SHOULD", "an MRTR retry sent to another process was refused",
                    f"{_what(run, i)}; the round-trip began on process A and its retry went to a fresh "
                    "process (MRTR-18: any instance can serve a retry)", run.case.steps[i].method,
                    run.response_events.get(i, run.sends.get(i))))
                break
            if result.get("resultType") != "input_required":
                break
        write = p.get("write")
        if write is None or write in run.skipped:
            return out
        result = run.result(write)
        if result is None or result.get("isError") is True:
            out.append(Violation(
                "SL-5", "MUST", "a handle minted by one process is unusable on another",
                f"writing through the handle on a fresh process failed: {_what(run, write)}", "tools/call",
                run.response_events.get(write, run.sends.get(write))))
            return out
        read = p.get("read")
        if read is None or read in run.skipped:
            return out
        at = run.response_events.get(read, run.sends.get(read))
        result = run.result(read)
        title = p.get("title")
        if result is None or result.get("isError") is True:
            out.append(Violation(
                "SL-5", "MUST", "a handle is unusable on a fresh process",
                f"reading through the handle failed: {_what(run, read)}", "tools/call", at))
        elif title is not None and title not in _strings(result):
            out.append(Violation(
                "SL-5", "MUST", "what one process wrote through a handle is not seen by another",
                f"process B wrote {title!r} through the handle; a fresh process C reading it does not see it",
                "tools/call", at))
        return out


def _what(run: Run, step: int) -> str:
    err = run.error(step)
    if err is not None:
        return f"error {err.get('code')}: {str(err.get('message'))[:120]}"
    result = run.result(step)
    if result is not None:
        texts = [c.get("text") for c in result.get("content") or [] if isinstance(c, dict)]
        return f"isError result: {str(texts[:1])[:160]}"
    return "no answer"


def _strings(value: Any) -> set[str]:
    out: set[str] = set()
    if isinstance(value, str):
        out.add(value)
        if value.startswith(("{", "[")):
            try:
                import orjson

                out |= _strings(orjson.loads(value))
            except ValueError:
                pass
    elif isinstance(value, dict):
        for v in value.values():
            out |= _strings(v)
    elif isinstance(value, list):
        for v in value:
            out |= _strings(v)
    return out


PROPERTY = HandoffProperty()

"""Multi round-trip requests, played right and wrong (DIGEST §8).

Every example begins a round-trip with a call that the target answers `input_required` (found
when the surface was learned), then continues in one of these ways, and ends with a sentinel:

  rounds          answer every round correctly, up to 3 retries (the oracle judges each answer)
  decline/cancel  the user says no: any well-formed answer, but the server must stay well
  tamper-*        retry with a tampered requestState (flip a character, truncate, or change a
                  value inside a readable state keeping its signature): must not complete (MRTR-13)
  foreign         retry a *different* request (other arguments) with this one's state: must not
                  complete (MRTR-14, the state binds its originating request)
  replay          complete the round-trip, then retry again with the same state (judged for shape
                  and liveness only: single use is the server's choice)
  missing         retry with the state but no inputResponses: SHOULD ask again, not fail (MRTR-16)
  extra           answers plus an unknown key: SHOULD be ignored (MRTR-16)
  wrong-shape     one answer of the wrong shape: SHOULD be a JSON-RPC error, not success (MRTR-16)
  same-id         the retry reuses the original request's id (already answered, so legal):
                  judged for shape and liveness
  forged          retry with a requestState the server never minted (catalogue row state-forged)
  state-missing   retry with the answers but without the requestState it was given (state-missing)
  wrong-key       answers keyed by names the server did not ask (responses-wrong-key)
                  These three are judged by their catalogue row's own expectation (the row's
                  `Expectation`, as the framing property judges its rows): an error or a fresh
                  input_required, never a complete result served on that state or those answers.
  undeclared      the same call again from a client that declared none of the capabilities its
                  questions need: -32021 (META-05), or an answer that asks nothing of those kinds;
                  the oracle reports an input request of an undeclared kind (MRTR-05). First in
                  the list, so the simplest example (the one Hypothesis tries first) probes it
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from mcp_tempest.fuzz.oracle.model import Violation
from mcp_tempest.fuzz.properties.base import Context, Probe, Property
from mcp_tempest.fuzz.properties.case import Binding, Case, _b64_json
from mcp_tempest.fuzz.properties.common import Call, CaseBuilder, id_styles, tool_schema
from mcp_tempest.fuzz.properties.executor import Run
from mcp_tempest.fuzz.properties.surface import MrtrTrigger, Surface
from mcp_tempest.strategies import malformed as catalogue

SCENARIOS = ("undeclared", "rounds", "tamper-flip", "tamper-truncate", "tamper-structured", "foreign", "decline", "cancel",
             "replay", "missing", "extra", "wrong-shape", "same-id", "forged", "state-missing", "wrong-key")
TAMPER = {"tamper-flip": "flip", "tamper-truncate": "truncate", "tamper-structured": "structured"}
#: What each scenario probes, as the coverage report names it: the catalogue's name where the
#: scenario plays a catalogue row (`frames --list`), else the scenario's own.
PROBES: dict[str, tuple[str, str]] = {
    "undeclared": ("undeclared-capability", "META-05"), "rounds": ("rounds", "MRTR-11"),
    "tamper-flip": ("state-tampered", "MRTR-13"), "tamper-truncate": ("state-truncated", "MRTR-13"),
    "tamper-structured": ("state-tampered-structured", "MRTR-13"), "foreign": ("state-foreign", "MRTR-14"),
    "decline": ("decline", "MRTR-17"), "cancel": ("cancel", "MRTR-17"), "replay": ("state-replayed", "MRTR-14"),
    "missing": ("input-responses-missing", "MRTR-16"), "extra": ("input-responses-extra-key", "MRTR-16"),
    "wrong-shape": ("responses-wrong-shape", "MRTR-16"), "same-id": ("retry-reuses-id", "MRTR-09"),
    "forged": ("state-forged", "MRTR-13"), "state-missing": ("state-missing", "MRTR-10"),
    "wrong-key": ("responses-wrong-key", "MRTR-16"),
}
#: Scenarios whose retry is judged by the catalogue row's expectation (`strategies.malformed`).
ROW_JUDGED = frozenset({"forged", "state-missing", "wrong-key"})


class MrtrProperty(Property):
    name = "mrtr"
    title = "MRTR conversations, right and wrong"
    fresh_per_example = 0

    def applicable(self, ctx: Context) -> str | None:
        base = super().applicable(ctx)
        if base is not None:
            return base
        if not ctx.surface.triggers:
            if ctx.surface.withheld_tools:
                return ("no call that may be made answered input_required (the tool policy withholds "
                        f"{len(ctx.surface.withheld_tools)} tool(s)), so there is no round-trip to play")
            return "no call of the target answered input_required, so there is no round-trip to play"
        return None

    def coverage(self, ctx: Context) -> list[Probe]:
        """Every scenario once, in order, on the first round-trip the target offers."""
        triggers = ctx.surface.triggers
        why = "" if triggers else ("no call that may be made answered input_required (tool policy)"
                                   if ctx.surface.withheld_tools else
                                   "no call of the target answered input_required (no MRTR tool)")
        return [Probe(name, rule, self._build(ctx.surface, "int", scenario, triggers[0], 0, "probe", ctx.transport)
                      if triggers else None, why)
                for scenario, (name, rule) in PROBES.items()]

    def cases(self, ctx: Context) -> st.SearchStrategy[Case]:
        surface = ctx.surface
        return st.builds(
            self._build, st.just(surface), id_styles(), st.sampled_from(SCENARIOS),
            st.sampled_from(surface.triggers), st.integers(0, 1_000), st.text(
                alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8), st.just(ctx.transport),
        )

    def _build(self, surface: Surface, id_style: str, scenario: str, trigger: MrtrTrigger, knob: int,
               other: str, transport: str = "stdio") -> Case:
        b = CaseBuilder(self.name, id_style=id_style)
        schema = tool_schema(surface, str(trigger.params.get("name", "")))
        first = Call(trigger.method, copy.deepcopy(trigger.params), dict(trigger.capabilities), input_schema=schema)
        begin_id = b.rid()
        begin = b.call(0, first, label="mrtr-begin", rid=begin_id)
        params: dict[str, Any] = {"scenario": scenario, "begin": begin}

        def state(source: int, transform: str = "echo", arg: Any = None) -> Binding:
            return Binding(("params", "requestState"), source, ("result", "requestState"), transform, arg)

        def answers(source: int, mode: str = "accept", **extra: Any) -> Binding:
            return Binding(("params", "inputResponses"), source, ("result", "inputRequests"), "answers",
                           {"mode": mode, **extra})

        if scenario == "rounds":
            previous = begin
            retries = []
            for n in range(3):
                retries.append(b.call(0, first, label=f"retry-{n + 1}", bind=[state(previous), answers(previous)]))
                previous = retries[-1]
            params["retries"] = retries
        elif scenario in TAMPER:
            params["retry"] = b.call(0, first, label=scenario, mutation=PROBES[scenario][0],
                                     bind=[state(begin, TAMPER[scenario], knob), answers(begin)])
        elif scenario == "foreign":
            changed = _other_request(first, other)
            if changed is None:
                params["scenario"] = "rounds"
                params["retries"] = [b.call(0, first, label="retry-1", bind=[state(begin), answers(begin)])]
            else:
                params["retry"] = b.call(0, changed, label="foreign-state", mutation="state-foreign",
                                         bind=[state(begin), answers(begin)])
        elif scenario in ("decline", "cancel"):
            params["retry"] = b.call(0, first, label=scenario, bind=[state(begin), answers(begin, scenario)])
        elif scenario == "replay":
            done = b.call(0, first, label="retry", bind=[state(begin), answers(begin)])
            params["retry"] = b.call(0, first, label="replayed-state", mutation="state-replayed",
                                     bind=[state(begin), answers(begin)])
            params["done"] = done
        elif scenario == "missing":
            params["retry"] = b.call(0, first, label="no-answers", mutation="input-responses-missing",
                                     bind=[state(begin)])
        elif scenario == "extra":
            params["retry"] = b.call(0, first, label="extra-answer", mutation="input-responses-extra-key",
                                     bind=[state(begin), answers(begin, "extra")])
        elif scenario == "wrong-shape":
            params["retry"] = b.call(0, first, label="wrong-answer", mutation="responses-wrong-shape",
                                     bind=[state(begin), answers(begin, "wrong-shape", index=knob)])
        elif scenario == "undeclared":
            params["retry"] = b.call(0, Call(first.method, copy.deepcopy(first.params), {}, input_schema=schema),
                                     label="undeclared-capability")
        elif scenario in ROW_JUDGED:
            name = PROBES[scenario][0]
            row = catalogue.get_mutation(name)
            expect = row.expect.for_transport(transport)
            binds = {"forged": [state(begin, "forge", knob), answers(begin)], "state-missing": [answers(begin)],
                     "wrong-key": [state(begin), answers(begin, "wrong-key")]}[scenario]
            params["retry"] = b.call(0, first, label=name, mutation=name, expect=expect, bind=binds)
        elif scenario == "same-id":
            params["retry"] = b.call(0, first, label="retry-same-id", mutation="retry-reuses-id", rid=begin_id,
                                     bind=[state(begin), answers(begin)])
        b.sentinel(0)
        return b.build(warm=[0], params=params)

    def check(self, run: Run, ctx: Context) -> list[Violation]:
        p = run.case.params
        scenario = p.get("scenario")
        retry = p.get("retry")
        if retry is None or retry in run.skipped or run.response(retry) is None:
            return []
        result = run.result(retry)
        error = run.error(retry)
        method = run.case.steps[retry].method
        at = run.response_events.get(retry, run.sends.get(retry))
        completed = result is not None and result.get("resultType") == "complete"
        succeeded = completed and result.get("isError") is not True
        if scenario in TAMPER and completed:
            original = (run.result(p["begin"]) or {}).get("requestState")
            readable = isinstance(original, str) and any(
                isinstance(_b64_json(seg), dict | list) for seg in original.split("."))
            strong = scenario == "tamper-structured" and readable
            return [Violation(
                "MRTR-13", "MUST" if strong else "HEURISTIC",
                f"{method}: a tampered requestState was accepted",
                ("a value inside the (readable) state was changed and the signature left as it was; "
                 if strong else f"the state was altered ({TAMPER[scenario]}); ")
                + "the retry completed instead of being refused (integrity not verified)", method, at)]
        if scenario == "foreign" and succeeded:
            return [Violation(
                "MRTR-14", "SHOULD", f"{method}: requestState of another request was accepted",
                "the state was minted for a request with other arguments; the retry completed, so the state "
                "is not bound to its originating request", method, at)]
        if scenario == "missing" and error is not None:
            return [Violation(
                "MRTR-16", "SHOULD", f"{method}: a retry without the needed answers got an error",
                f"error {error.get('code')}; the server SHOULD ask again with a new input_required", method, at)]
        if scenario == "extra" and error is not None:
            return [Violation(
                "MRTR-16", "SHOULD", f"{method}: an unknown inputResponses key was not ignored",
                f"error {error.get('code')}: {str(error.get('message'))[:120]}", method, at)]
        if scenario == "wrong-shape" and succeeded:
            return [Violation(
                "MRTR-16", "SHOULD", f"{method}: a malformed inputResponses entry was accepted",
                "an answer of the wrong shape was taken as valid; protocol problems SHOULD get a JSON-RPC error",
                method, at)]
        return []


def _other_request(call: Call, other: str) -> Call | None:
    """The same call with one argument changed (or None when it has no argument to change)."""
    params = copy.deepcopy(call.params)
    args = params.get("arguments")
    if isinstance(args, dict) and args:
        key = sorted(args)[0]
        value = args[key]
        args[key] = (value + "-" + other) if isinstance(value, str) else other
    elif isinstance(params.get("uri"), str):
        params["uri"] = params["uri"] + "?" + other
    else:
        return None
    return Call(call.method, params, dict(call.capabilities), call.version, call.log_level, call.input_schema)


PROPERTY = MrtrProperty()

"""Statelessness: a request is answered the same by a fresh process and by one with a history.

Each example plays a generated history on the warm process (calls with assorted capabilities,
log levels, tool calls), then sends one probe request three times: to a fresh process, to the
warm one, and to the fresh one again. The two fresh answers bracket the warm one: when they
disagree with each other the shared state moved under us (another worker, a clock) and the
example says nothing; when they agree and the warm answer differs, the history leaked.

Probe variants aim at what DIGEST §2 and §15 name:
  same        any call; answers must have the same shape (SL-1, HEURISTIC: a DERIVED invariant)
  caps        the MRTR trigger without the capability an earlier request declared: the warm
              process must not use the earlier declaration (META-02)
  no-version  a request whose `_meta` lacks protocolVersion, after requests that had one (META-01)
  bad-version a request with an unsupported version after supported ones (META-01)
  no-loglevel a call without logLevel after calls with one: no notifications/message (META-01)
  client-info the same call, then again with another self-reported clientInfo (none at all, a
              known client's name, made-up fields), then once more as first: on one process, so
              the first and third bracket the second; the answers must agree (META-08, SHOULD
              NOT: "varying clientInfo should not change results")
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from hypothesis import strategies as st

from mcp_tempest.fuzz.oracle.model import Violation
from mcp_tempest.fuzz.properties.base import Context, Probe, Property
from mcp_tempest.fuzz.properties.case import Case, Step
from mcp_tempest.fuzz.properties.common import Call, CaseBuilder, id_styles, surface_calls
from mcp_tempest.fuzz.properties.compare import describe_shape, log_count, shape
from mcp_tempest.fuzz.properties.executor import Run
from mcp_tempest.fuzz.properties.valid import probe_call
from mcp_tempest.targets import wire

VARIANT_RULES: dict[str, tuple[str, str]] = {
    "same": ("SL-1", "HEURISTIC"),
    "caps": ("META-02", "MUST"),
    "no-version": ("META-01", "MUST"),
    "bad-version": ("META-01", "MUST"),
    "no-loglevel": ("META-01", "MUST"),
    "client-info": ("META-08", "SHOULD"),
}
UNSUPPORTED_VERSION = "1900-01-01"
# Other self-reported identities (schema: Implementation, name and version required, the rest
# optional); None sends no clientInfo at all, which the schema allows (clients SHOULD send it).
CLIENT_INFOS: tuple[dict[str, Any] | None, ...] = (
    None,
    {"name": "claude-ai", "version": "0.1.0"},
    {"name": "mcp-inspector", "version": "0.17.0", "title": "MCP Inspector"},
    {"name": "x", "version": "0", "websiteUrl": "https://example.invalid/", "description": "made up"},
)
# The coverage probes of META-08: which CLIENT_INFOS entry the second request carries.
CLIENT_INFO_PROBES: dict[str, int] = {"client-info-absent": 0, "client-info-other": 2}


def client_infos() -> st.SearchStrategy[dict[str, Any] | None]:
    names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=16)
    made_up = st.builds(lambda n, v: {"name": n, "version": v}, names, names)
    return st.one_of(st.sampled_from(CLIENT_INFOS), made_up)


class HistoryProperty(Property):
    name = "history"
    title = "answers do not depend on what the process served before"
    fresh_per_example = 1
    weight = 1.0

    def cases(self, ctx: Context) -> st.SearchStrategy[Case]:
        surface = ctx.surface
        variants = ["same", "no-version", "bad-version", "no-loglevel", "client-info"]
        if ctx.dual:
            # A dual-era server may read a claim-less first request on a fresh process as legacy
            # traffic (VER-05), so "fresh" is no baseline for it; the oracle judges such requests.
            variants.remove("no-version")
        if surface.triggers:
            variants.insert(1, "caps")
        return st.builds(
            self._build, id_styles(), st.lists(surface_calls(surface), min_size=1, max_size=5),
            st.sampled_from(variants), surface_calls(surface, mrtr=False),
            st.sampled_from(surface.triggers) if surface.triggers else st.none(),
            st.sampled_from(["debug", "info", "warning"]), client_infos(),
        )

    def coverage(self, ctx: Context) -> list[Probe]:
        """META-08 once per identity kind: no clientInfo, and another client's, on a plain call."""
        call = probe_call(ctx.surface)
        return [Probe(name, "META-08", self._build("int", [], "client-info", call, None, "info", CLIENT_INFOS[k]))
                for name, k in CLIENT_INFO_PROBES.items()]

    def _build(self, id_style: str, history: list[Call], variant: str, probe_call: Call,
               trigger: Any, level: str, client_info: dict[str, Any] | None = None) -> Case:
        b = CaseBuilder(self.name, id_style=id_style)
        if variant == "client-info":
            return self._build_client_info(b, history, probe_call, client_info)
        history = list(history)
        if variant == "caps" and trigger is not None:
            history.append(Call(trigger.method, copy.deepcopy(trigger.params), dict(trigger.capabilities)))
            probe = Call(trigger.method, copy.deepcopy(trigger.params), {})
        elif variant == "no-loglevel":
            history = [dataclasses.replace(c, log_level=level) for c in history]
            probe = dataclasses.replace(probe_call, log_level=None)
        elif variant == "bad-version":
            probe = Call(probe_call.method, probe_call.params, probe_call.capabilities, UNSUPPORTED_VERSION,
                         None, probe_call.input_schema)
        else:
            probe = probe_call
        for call in history:
            b.call(0, call, label="history")
        probes = []
        for proc, label in ((1, "probe-fresh"), (0, "probe-warm"), (1, "probe-fresh-again")):
            frame = probe.frame(b.rid())
            if variant == "no-version":
                frame["params"]["_meta"].pop(wire.META_PROTOCOL_VERSION, None)
            probes.append(b.add(Step(proc=proc, frame=frame, label=label, input_schema=probe.input_schema)))
        return b.build(warm=[0], params={"variant": variant, "probes": probes})

    def _build_client_info(self, b: CaseBuilder, history: list[Call], probe: Call,
                           client_info: dict[str, Any] | None) -> Case:
        """The history on the warm process, then the probe on the fresh one three times: as the
        harness, as another client, as the harness again (META-08)."""
        for call in history:
            b.call(0, call, label="history")
        other = dataclasses.replace(probe, client_info=client_info)
        probes = [b.call(1, call, label=label) for call, label in
                  ((probe, "probe-as-harness"), (other, "probe-as-other-client"), (probe, "probe-as-harness-again"))]
        return b.build(warm=[0], params={"variant": "client-info", "probes": probes,
                                         "client_info": client_info})

    def check(self, run: Run, ctx: Context) -> list[Violation]:
        variant = run.case.params.get("variant", "same")
        probes = run.case.params.get("probes") or []
        if len(probes) != 3 or any(p in run.skipped for p in probes):
            return []
        fresh, warm, again = probes
        sf, sw, sa = (shape(run.response(p)) for p in probes)
        lf, lw, la = (log_count(run, p) for p in probes)
        if sf != sa or (lf > 0) != (la > 0) or sf == ("no answer",):
            return []  # inconclusive: the fresh process disagrees with itself, or did not answer
        rule, strength = VARIANT_RULES.get(variant, ("SL-1", "HEURISTIC"))
        method = run.case.steps[warm].method
        at = run.response_events.get(warm, run.sends.get(warm))
        out: list[Violation] = []
        if sw != sf:
            what = {
                "caps": "served with a capability only an earlier request declared",
                "no-version": "accepted a request without protocolVersion after requests that had one",
                "bad-version": "accepted an unsupported protocolVersion after requests with a supported one",
                "client-info": "answered differently when the request named another client",
            }.get(variant, "answered differently after serving a history")
            if variant == "client-info":
                info = run.case.params.get("client_info")
                detail = (f"as {wire.HARNESS_CLIENT_INFO['name']!r} (twice): {describe_shape(sf)}; with clientInfo "
                          f"{'absent' if info is None else repr(info)[:80]}: {describe_shape(sw)}")
            else:
                detail = f"fresh process: {describe_shape(sf)}; process with history: {describe_shape(sw)}"
            # the method is where it was seen, not what the bug is: one finding groups every method
            out.append(Violation(rule, strength, what, detail, method, at))
        elif variant == "no-loglevel" and lw > 0 and lf == 0:
            out.append(Violation(
                rule, strength, "logged without a logLevel after earlier requests set one",
                f"{lw} notifications/message for a request without logLevel; a fresh process sent none",
                method, at))
        return out


PROPERTY = HistoryProperty()

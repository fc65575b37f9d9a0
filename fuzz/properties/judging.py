"""Judging a run: the oracle on the whole transcript, plus the property's own relational check.

The same function judges a campaign's example and a replay, so "still fails" means exactly what
"failed" meant. It also turns violations into the campaign's evidence: which one is the primary
(what Hypothesis shrinks towards), and for each, the method and mutation it is bucketed under.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_tempest.fuzz.findings import Evidence, strength_rank
from mcp_tempest.fuzz.oracle.model import Violation
from mcp_tempest.fuzz.oracle.tool_rules import call_summary
from mcp_tempest.fuzz.properties.base import Context, Property, expectations_of, violation_json
from mcp_tempest.fuzz.properties.executor import Run
from mcp_tempest.targets import wire


def oracle_judge(run: Run, ctx: Context) -> list[Violation]:
    from mcp_tempest.fuzz.oracle import judge

    return list(judge(run.transcript, era=_oracle_era(ctx.era), expectations=expectations_of(run),
                      dual=bool(getattr(ctx, "dual", False)), discover=getattr(ctx, "discover", None)))


def _oracle_era(era: str) -> str:
    return "legacy" if era == "legacy" else "modern"


def judge_run(prop: Property, run: Run, ctx: Context) -> list[Violation]:
    """Every violation of the run: the property's own first (it is what the property is for)."""
    own = rpc_01_target_stopped_answering(run) + rpc_01_answered_late(run) + list(prop.check(run, ctx))
    run.own = set(own)
    seen = {(v.rule, v.event_index) for v in own}
    rest = [v for v in oracle_judge(run, ctx) if (v.rule, v.event_index) not in seen]
    rest.sort(key=lambda v: strength_rank(v.strength))
    return own + rest


def rpc_01_target_stopped_answering(run: Run) -> list[Violation]:
    """RPC-01 (JSON-RPC 2.0: every request gets a response), judged over the whole run: the
    executor saw a request go unanswered and then a server/discover on the same live process go
    unanswered too. SHOULD, as any deadline-based silence (the deadline is ours). One violation
    per run, at the first unanswered step, so the campaign reports it once and stops the property."""
    why = run.stopped_answering
    if why is None:
        return []
    proc = next(iter(run.stalled))
    steps = [k for k in sorted(run.sends) if run.case.steps[k].proc == proc and k not in run.responses
             and run.case.steps[k].wait == "response"]
    at = run.sends[steps[0]] if steps else None
    frame = run.frames.get(steps[0]) if steps else None
    method = frame.get("method") if isinstance(frame, dict) and isinstance(frame.get("method"), str) else None
    call = call_summary(method, frame.get("params")) if isinstance(frame, dict) else ""
    return [Violation("RPC-01", "SHOULD", "target stopped answering", f"{why}; {call}" if call else why, method, at)]


def answer_latencies(run: Run) -> list[tuple[int, float, float]]:
    """(step, seconds to its answer, its deadline) for every request step that got an answer:
    the deadline is the campaign's --timeout, plus the start-up allowance for the first answer of
    a fresh stdio process (the clock liveness is judged on; a step's own shorter wait before a
    sentinel is not a deadline)."""
    events = run.transcript.events
    answered_procs: set[int] = set()
    out: list[tuple[int, float, float]] = []
    for k in sorted(run.sends, key=run.sends.__getitem__):
        pair = run.pair(k)
        if pair is None or not pair.responses or run.case.steps[k].wait != "response":
            continue
        proc = pair.proc
        fresh = (run.transcript.transport.line_framed and proc not in answered_procs
                 and not any(e.kind == "recv" and e.proc == proc for e in events[: pair.index])
                 and not any(run.proc_of.get(p) == proc for p in run.reused))
        deadline = run.step_timeout + (run.start_allowance if fresh else 0.0)
        out.append((k, events[pair.responses[0]].t - events[pair.index].t, deadline))
        answered_procs.add(proc)
    return out


def rpc_01_answered_late(run: Run) -> list[Violation]:
    """RPC-01, SHOULD (the deadline is the user's --timeout, not the spec's): a request answered,
    but only after its deadline. The target is slow, not dead: the figure is in the account, and
    the property goes on (only `rpc_01_target_stopped_answering` stops it)."""
    out: list[Violation] = []
    for k, latency, deadline in answer_latencies(run):
        if latency <= deadline:
            continue
        frame = run.frames.get(k)
        method = frame.get("method") if isinstance(frame, dict) and isinstance(frame.get("method"), str) else None
        out.append(Violation("RPC-01", "SHOULD", "request answered after the deadline",
                             f"step {k} was answered {latency:.1f} s after it was sent, past its "
                             f"{deadline:g} s deadline (--timeout {run.step_timeout:g} s): a slow target",
                             method, run.sends[k]))
    return out


def slowest_in_allowance(run: Run) -> tuple[float, str] | None:
    """The slowest answer past --timeout but inside its start-up allowance (seconds, which step):
    slow, said in the property's note with the figure, never a finding."""
    slow = [(latency, f"step {k}") for k, latency, deadline in answer_latencies(run)
            if run.step_timeout < latency <= deadline]
    return max(slow) if slow else None


def slow_note(slowest: tuple[float, str] | None, timeout: float) -> str:
    """The property's note for its slowest answer inside a start-up allowance ("" when none was)."""
    if slowest is None:
        return ""
    return (f"slow target: {slowest[1]} was answered {slowest[0]:.1f} s after it was sent "
            f"(--timeout {timeout:g} s; a fresh process's first answer gets its start-up allowance)")


def primary(violations: Sequence[Violation], run: Run | None = None) -> Violation:
    """The violation an example is filed under: the strongest; among equals the property's own,
    then one of a rule a malformed frame of the case probes (the death after a blank line is
    STDIO-02's, not the unanswered sentinel's), then the earliest."""
    probed: set[str] = set()
    if run is not None:
        for step in run.case.steps:
            if step.expect is not None:
                probed.add(step.expect.rule)
    own = run.own if run is not None else set()

    def rank(i: int) -> tuple[int, int, int, int]:
        v = violations[i]
        return (strength_rank(v.strength), 0 if v in own else 1,
                0 if v.rule in probed or v.probe_rule in probed else 1, i)

    return violations[min(range(len(violations)), key=rank)]


def locate(run: Run, v: Violation) -> tuple[str | None, str | None]:
    """The method and mutation a violation belongs to: those of the step whose frame it is about
    (the send at its event index, or the latest send before it on the same process)."""
    probing = _probing_step(run, v)
    step = probing if probing is not None else _step_of(run, v.event_index)
    # A violation of the rule a malformed frame probes belongs to that frame (a death after a
    # blank line is the blank line's, even though the unanswered sentinel is what shows it).
    method = None if probing is not None else v.method
    mutation = None
    if step is not None:
        s = run.case.steps[step]
        # A mutation explains a violation of the rule it probes, or of the property's own
        # check; an unrelated rule broken on the same frame belongs to no mutation.
        probed = s.expect.rule if s.expect is not None else None
        if s.mutation is not None and (v in run.own or probed in (v.rule, v.probe_rule)):
            mutation = s.mutation
        if method is None:
            frame = run.frames.get(step)
            if isinstance(frame, dict) and isinstance(frame.get("method"), str):
                method = frame["method"]
            else:
                method = s.method
    return _bucket_method(method), mutation


#: Methods a finding is bucketed under by name; any other name (fuzzers invent many) is one bucket.
KNOWN_METHODS = frozenset({
    *wire.MODERN_METHODS,
    "notifications/cancelled", "initialize", "notifications/initialized", "ping", "logging/setLevel",
    "resources/subscribe", "resources/unsubscribe",
})
UNKNOWN_METHOD = "(unknown method)"


def _bucket_method(method: str | None) -> str | None:
    if method is None or method in KNOWN_METHODS:
        return method
    return UNKNOWN_METHOD


def _probing_step(run: Run, v: Violation) -> int | None:
    """The latest step at or before the violation whose malformed frame probes its rule."""
    if v in run.own:
        return None
    limit = v.event_index if v.event_index is not None else len(run.transcript.events)
    best: int | None = None
    for k, step in enumerate(run.case.steps):
        probed = step.expect.rule if step.expect is not None else None
        idx = run.sends.get(k)
        matches = probed == v.probe_rule and step.mutation == v.probe if v.probe_rule else probed == v.rule
        if matches and idx is not None and idx <= limit:
            best = k
    return best


def _step_of(run: Run, event_index: int | None) -> int | None:
    if not run.sends:
        return None
    by_send = {idx: k for k, idx in run.sends.items()}
    if event_index is None:
        return None
    if event_index in by_send:
        return by_send[event_index]
    events = run.transcript.events
    if 0 <= event_index < len(events):
        ev = events[event_index]
        if ev.ref is not None and ev.ref in by_send:
            return by_send[ev.ref]
        for idx in sorted(by_send, reverse=True):
            if idx < event_index and events[idx].proc == ev.proc:
                return by_send[idx]
    return None


def evidence_for(
    run: Run,
    violations: Sequence[Violation],
    v: Violation,
    *,
    prop: Property,
    transport: str,
    blob: str | None = None,
    hypothesis_version: str | None = None,
    note: str = "",
    confirmed: bool = True,
) -> Evidence:
    method, mutation = locate(run, v)
    return Evidence.of_transcript(
        run.transcript,
        rule=v.rule, strength=v.strength, title=v.title, method=method, transport=transport,
        mutation=mutation, property=prop.name, case=run.case.to_json(),
        violations=[violation_json(x) for x in violations], reproduce_blob=blob,
        hypothesis_version=hypothesis_version, note=note, target=run.transcript.target, confirmed=confirmed,
        probe=v.probe, probe_rule=v.probe_rule, reaction=v.reaction,
    )


def bucket_of(run: Run, v: Violation, transport: str) -> tuple[str, str, str, str]:
    method, mutation = locate(run, v)
    return (v.rule, method or "", mutation or "", transport)


def describe(violations: Sequence[Violation]) -> list[dict[str, Any]]:
    return [violation_json(v) for v in violations]

"""The load package's pure parts: exact histograms, exact merging, gates, baselines, generated values.

These run without a server because they are arithmetic; everything that touches a server is in
the other test_load_* files and runs real processes.
"""

from __future__ import annotations

import math
import random

import jsonschema
import pytest

from mcp_tempest.load.arguments import Arguments
from mcp_tempest.load.gates import (
    GateError,
    compare_baseline,
    evaluate,
    parse_gate,
    parse_gates,
    parse_margin,
)
from mcp_tempest.load.histogram import ExactHistogram, nearest_rank
from mcp_tempest.load.operations import MixError, answer_input_requests, parse_mix
from mcp_tempest.load.recorder import OPERATION, Recorder
from mcp_tempest.load.summary import build_summary, summary_counts
from mcp_tempest.strategies.value_sources import ValueSources


def exact_percentile(samples: list[int], percent: float) -> int:
    """Nearest rank over the sorted raw samples: the definition the histogram must reproduce."""
    ordered = sorted(samples)
    return ordered[math.ceil(len(ordered) * percent / 100.0 - 1e-9) - 1]


@pytest.mark.parametrize("size", [1, 2, 7, 100, 999, 1000, 12345])
def test_histogram_percentiles_equal_those_of_the_raw_samples(size: int) -> None:
    rng = random.Random(size)
    samples = [int(rng.lognormvariate(7, 1.2)) for _ in range(size)]  # microseconds, long tail
    hist = ExactHistogram.from_samples(samples)
    for percent in (50, 90, 95, 99, 99.9, 100):
        assert hist.percentile_us(percent) == exact_percentile(samples, percent), percent
    assert hist.max_us == max(samples)
    assert hist.count == size
    got = hist.percentiles_us([99.9, 50, 99])
    assert got == [exact_percentile(samples, p) for p in (99.9, 50, 99)]


def test_nearest_rank_edges() -> None:
    assert nearest_rank(1000, 99.9) == 999
    assert nearest_rank(1000, 99) == 990
    assert nearest_rank(3, 50) == 2
    assert nearest_rank(1, 99.9) == 1


def test_merging_split_histograms_is_exact() -> None:
    rng = random.Random(3)
    samples = [rng.randrange(50, 50_000) for _ in range(5000)]
    parts = [ExactHistogram.from_samples(samples[i::3]) for i in range(3)]
    merged = ExactHistogram()
    for part in parts:
        merged.merge(ExactHistogram.from_wire(part.to_wire()))  # through the wire form, as workers do
    whole = ExactHistogram.from_samples(samples)
    assert merged.items() == whole.items()
    assert merged.summary_ms() == whole.summary_ms()


def test_recorder_drain_and_merge_count_every_sample_once() -> None:
    worker = Recorder()
    master = Recorder()
    worker.record("tools/list", 1200)
    worker.record("tools/call create_event #1", 900, failure="rpc -32602")
    master.merge_wire(worker.drain(), source="w1")
    worker.record("tools/list", 1300)
    worker.record("MRTR create_event", 5000, kind=OPERATION, failure="leg rpc -32602", count_failure=False)
    worker.violation("RT-01", "tools/list: missing resultType")
    master.merge_wire(worker.drain(), source="w1")
    master.merge_wire(worker.drain(), source="w1")  # an empty report changes nothing
    assert master.names["tools/list"].latency.items() == [(1200, 1), (1300, 1)]
    assert master.requests == 3  # the operation is not a request
    assert master.failure_total == 1  # the operation's failure was already counted at its leg
    assert master.violations == {"RT-01": 1}
    summary = build_summary(master, target="t", duration_s=2.0, check_every=1, oracle="x")
    assert summary["requests"] == 3 and summary["failures"] == 1 and summary["violations"] == 1
    assert summary["operations"]["tools/list"]["p50_ms"] == 1.2
    assert summary["operations"]["tools/list"]["max_ms"] == 1.3
    assert summary_counts(summary) == "3 requests, 1 failure, 1.5 rps, 0 MRTR operations, 1 violation"


def test_gates_parse_and_cross() -> None:
    summary = {
        "requests": 100, "failures": 2, "rps": 50.0, "violations": 0,
        "overall": {"p99_ms": 12.0, "p50_ms": 3.0},
        "operations": {"MRTR create_event": {"count": 10, "failures": 0, "p99_ms": 60.0},
                       "resources/read calendar://week": {"count": 5, "failures": 0, "p99_ms": 4.0}},
        "mrtr": {"operations": 10},
    }
    gates = parse_gates(["p99_ms>50,failures>0", "rps<1000", "MRTR create_event:p99_ms>50",
                         "resources/read calendar://week:p99_ms>5", "MRTR nothing:count<1"])
    assert [g.name for g in gates] == [None, None, None, "MRTR create_event", "resources/read calendar://week",
                                       "MRTR nothing"]
    crossed = [r.crossed for r in evaluate(gates, summary)]
    assert crossed == [False, True, True, True, False, True]  # the last has no samples: crossed
    with pytest.raises(GateError):
        parse_gate("p99>50")
    with pytest.raises(GateError):
        parse_gate("latency is high")
    assert parse_margin("20%") == pytest.approx(0.2)
    assert parse_margin("5") == pytest.approx(0.05)


def test_is_error_answers_travel_from_workers_exactly_and_are_no_failures() -> None:
    worker, master = Recorder(), Recorder()
    for i in range(5):
        worker.record("tools/call list_events", 100 + i, is_error="unknown calendarId")
    worker.record("tools/call echo", 90)
    master.merge_wire(worker.drain(), source="w1")
    worker.record("tools/call list_events", 100, is_error="unknown   calendarId\n")  # shortened to one line
    master.merge_wire(worker.drain(), source="w1")
    summary = build_summary(master, target="t", duration_s=1.0, check_every=0, oracle="-")
    entry = summary["operations"]["tools/call list_events"]
    assert entry["failures"] == 0 and entry["is_error"] == 6
    assert entry["answers"] == [{"text": "unknown calendarId", "count": 6}]
    assert summary["failures"] == 0 and summary["is_error"] == summary["responses"]["tool_errors"] == 6
    assert summary["overall"]["is_error"] == 6 and summary["operations"]["tools/call echo"]["is_error"] == 0


def test_is_error_is_no_failure_but_can_be_gated() -> None:
    summary = {"requests": 100, "failures": 0, "is_error": 10, "refused_handles": {"calendarId": 3},
               "operations": {"tools/call list_events": {"count": 20, "failures": 0, "is_error": 10}}}
    gates = parse_gates(["failures>0", "is_error>0", "is_error>20%", "tools/call list_events:is_error>20%",
                         "refused_handles>0"])
    assert [g.metric for g in gates] == ["failures", "is_error", "is_error_rate", "is_error_rate", "refused_handles"]
    assert [(r.value, r.crossed) for r in evaluate(gates, summary)] == [
        (0.0, False), (10.0, True), (10.0, False), (50.0, True), (3.0, True)]
    with pytest.raises(GateError):
        parse_gate("rps>5%")


def test_baseline_flags_regressions_beyond_the_margin_only() -> None:
    before = {"rps": 1000.0, "overall": {"count": 4000, "p50_ms": 2.0, "p99_ms": 10.0},
              "operations": {"tools/list": {"count": 2000, "p50_ms": 1.0, "p99_ms": 5.0},
                             "echo": {"count": 2000, "p50_ms": 0.1, "p99_ms": 0.2}}}
    after = {"rps": 700.0, "overall": {"count": 4000, "p50_ms": 2.1, "p99_ms": 11.0},
             "operations": {"tools/list": {"count": 2000, "p50_ms": 1.0, "p99_ms": 9.0},
                            "echo": {"count": 2000, "p50_ms": 0.1, "p99_ms": 0.4}}}
    changes = compare_baseline(after, before, margin=0.2, floor_ms=0.5)
    flagged = {(c.name, c.metric) for c in changes if c.regression}
    # echo doubled but by 0.2 ms, under the floor; overall p99 grew 10%, within the margin
    assert flagged == {("all requests", "rps"), ("tools/list", "p99_ms")}
    # the same jump read from too few samples is shown but never gated
    few = compare_baseline(after, before, margin=0.2, floor_ms=0.5, min_samples=5000)
    assert {(c.name, c.metric) for c in few if c.regression} == {("all requests", "rps")}
    assert all(c.not_gated for c in few if c.metric == "p99_ms")


def test_mix_parsing() -> None:
    assert parse_mix("tools/list=2, mrtr=1") == [("tools/list", 2.0), ("mrtr", 1.0)]
    assert parse_mix("tools/call") == [("tools/call", 1.0)]
    for bad in ("nope=1", "tools/list=x", "tools/list=0", ""):
        with pytest.raises(MixError):
            parse_mix(bad)


SCHEMAS = [
    {"type": "object", "properties": {"title": {"type": "string", "minLength": 1, "maxLength": 200},
                                      "startsAt": {"type": "string", "format": "date-time"},
                                      "calendarId": {"type": "string"}}, "required": ["title"]},
    {"type": "object", "properties": {"n": {"type": "integer", "minimum": 3, "exclusiveMaximum": 5},
                                      "x": {"type": "number", "maximum": -2},
                                      "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]},
                                               "minItems": 2, "uniqueItems": True},
                                      "mode": {"anyOf": [{"type": "null"}, {"enum": ["fast", "slow"]}]},
                                      "flag": {"type": "boolean"},
                                      "nested": {"$ref": "#/$defs/Inner"}},
     "required": ["n", "tags", "nested"],
     "$defs": {"Inner": {"type": "object", "properties": {"email": {"type": "string", "format": "email"}},
                         "required": ["email"]}}},
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_generated_arguments_are_valid(schema: dict) -> None:
    rng = random.Random(0)
    for _ in range(50):
        for optional in (True, False):
            args = Arguments(ValueSources()).arguments("t", schema, rng, optional=optional)
            jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(args)


def test_handles_are_harvested_and_reused_never_invented() -> None:
    schema = {"type": "object", "properties": {"calendarId": {"type": "string"}, "limit": {"type": "integer"}},
              "required": ["calendarId"]}
    args = Arguments(ValueSources())
    assert args.missing("list_events", schema) == ("calendarId",)
    args.arguments("list_events", schema, random.Random(1))  # cached plans and known values ...
    args.harvest("open_calendar", {"structuredContent": {"calendarId": "cal-7", "name": "x",
                                                          "events": [{"eventId": "e1"}]}})
    assert args.values.returned == {"calendarId": ["cal-7"], "name": ["x"], "eventId": ["e1"]}
    assert args.missing("list_events", schema) == ()  # ... are stale once a harvest adds a value
    assert args.arguments("list_events", schema, random.Random(1))["calendarId"] == "cal-7"
    optional = {"type": "object", "properties": {"title": {"type": "string"}, "calendarId": {"type": "string"}}}
    assert "calendarId" not in Arguments(ValueSources()).arguments("create_event", optional, random.Random(1))


def test_arguments_take_the_users_values_then_the_command_line_then_what_results_returned() -> None:
    schema = {"type": "object", "properties": {"repo_path": {"type": "string"}, "branch": {"type": "string"},
                                               "limit": {"type": "integer", "maximum": 10},
                                               "token": {"type": "string"}},
              "required": ["repo_path", "branch", "limit"]}
    base = ValueSources(command_line=["/srv/repo"], user={"git_log": {"token": ["t-1"]}, "*": {"branch": ["dev"]}})
    args = Arguments.for_user(base)
    got = args.arguments("git_log", schema, random.Random(3), optional=False)
    assert got["repo_path"] == "/srv/repo" and got["branch"] == "dev" and got["token"] == "t-1"  # named: always in
    # a JSON text answer feeds later calls too; a returned value out of the argument's bounds does not
    args.harvest("git_status", {"content": [{"type": "text", "text": '{"limit": 500, "branch": "main"}'}]})
    assert args.values.returned == {"limit": [500], "branch": ["main"]}
    assert args.arguments("git_log", schema, random.Random(3))["limit"] <= 10
    assert args.arguments("git_log", schema, random.Random(3))["branch"] == "dev"  # the user's word wins
    assert Arguments.for_user(base).values.returned == {}  # each user's flows are its own


def test_a_tool_whose_results_stop_adding_values_is_no_longer_harvested() -> None:
    from mcp_tempest.load.arguments import SATURATED

    args = Arguments(ValueSources())
    for _ in range(1 + SATURATED):  # one harvest that adds, then SATURATED that add nothing
        args.harvest("open_calendar", {"structuredContent": {"calendarId": "cal-1"}})
    version = args.version
    args.harvest("open_calendar", {"structuredContent": {"calendarId": "cal-2"}})
    assert args.version == version and args.values.returned == {"calendarId": ["cal-1"]}
    args.harvest("create_event", {"structuredContent": {"calendarId": "cal-2"}})
    assert args.values.returned == {"calendarId": ["cal-2", "cal-1"]}  # the latest first


def test_elicitation_answers_fit_the_requested_schema() -> None:
    requested = {"type": "object", "properties": {
        "startsAt": {"type": "string", "format": "date-time"},
        "size": {"type": "integer", "minimum": 1, "maximum": 3},
        "colour": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
        "ok": {"type": "boolean"}}, "required": ["startsAt", "size", "colour"]}
    answers = answer_input_requests({
        "a": {"method": "elicitation/create", "params": {"mode": "form", "message": "?", "requestedSchema": requested}},
        "b": {"method": "elicitation/create", "params": {"mode": "url", "message": "?", "url": "https://x"}},
        "c": {"method": "roots/list"},
    }, random.Random(2))
    assert answers["a"]["action"] == "accept"
    jsonschema.Draft202012Validator(requested, format_checker=jsonschema.FormatChecker()).validate(
        answers["a"]["content"])
    assert answers["b"] == {"action": "decline"}  # URL mode was never declared
    assert answers["c"] == {"roots": []}


def test_pacer_schedules_arrivals_at_the_rate_whatever_happened_before() -> None:
    from mcp_tempest.load.pacing import Pacer

    pacer = Pacer(100.0)
    slots = [pacer.next_slot() for _ in range(5)]
    assert [b - a for a, b in zip(slots, slots[1:], strict=False)] == [10_000_000] * 4
    t0 = slots[0]
    # 1 s later 101 arrivals were due; 5 were taken, so 96 wait (a stalled server's backlog)
    assert pacer.due(t0 + 1_000_000_000) - pacer.issued == 96 and pacer.due(t0 + 1_000_000_000) == 101
    # and the next arrival is still the 6th slot: late arrivals are not skipped, they are late
    assert pacer.next_slot() == t0 + 50_000_000


def test_recorder_timeline_merges_exactly_and_ignores_samples_after_stop() -> None:
    from mcp_tempest.load.recorder import Recorder

    worker, master = Recorder(), Recorder()
    for us in (1000, 2000, 3000):
        worker.record("tools/list", us)
    worker.record("tools/list", 9000, failure="timeout")
    master.merge_wire(worker.drain(), source="w1")
    hist, failures = master.window(min(master.timeline), max(master.timeline))
    assert hist.count == 4 and failures == 1 and hist.max_us == 9000
    worker.closed = True
    worker.record("tools/list", 5000)
    worker.count("mrtr_started")
    assert worker.requests == 0 and not worker.counters and not worker.timeline

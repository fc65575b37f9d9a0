"""The pieces properties are built from: cases as data, bindings, tampering, answers, budgets.

Pure tests (no process); the properties' judgements against real servers are exercised by
test_mutants_found.py (each mutant is caught by the property aimed at it) and by the
reference-server campaign in test_fuzz_campaign.py (no false positives).
"""

from __future__ import annotations

import base64

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_tempest.fuzz.campaign import Prepared, job_seed, plan_jobs
from mcp_tempest.fuzz.oracle import Expectation
from mcp_tempest.fuzz.properties.answers import answer_input_requests
from mcp_tempest.fuzz.properties.base import Context, all_properties
from mcp_tempest.fuzz.properties.case import (
    RUN_SOURCE,
    Binding,
    BindingError,
    Case,
    Step,
    build_frame,
    tamper_flip,
    tamper_structured,
)
from mcp_tempest.fuzz.properties.compare import shape
from mcp_tempest.fuzz.properties.surface import Surface, minimal_arguments, sample_value
from mcp_tempest.targets.target_spec import default_target

STATE = "rs1." + base64.urlsafe_b64encode(orjson.dumps({"m": "tools/call", "x": 5, "p": {"a": "b"}})).decode().rstrip("=") + ".c2lnbmF0dXJl"


def test_case_round_trips_through_json_with_raw_bytes_and_bindings() -> None:
    case = Case("mrtr", [
        Step(proc=0, frame={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}, label="begin"),
        Step(proc=1, raw=b"\xff\xfe not utf-8\n", wait="none", mutation="invalid-utf8",
             expect=Expectation("error-or-ignore", "RPC-02")),
        Step(proc=1, frame={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {}},
             bind=[Binding(("params", "requestState"), 0, ("result", "requestState"), "flip", 3)], group=4),
    ], warm=[0], params={"scenario": "tamper-flip"})
    again = Case.from_json(orjson.loads(orjson.dumps(case.to_json())))
    assert again == case
    assert again.procs() == [0, 1] and "p1:invalid-utf8" in again.describe()


def test_bindings_take_live_values_and_fail_cleanly_when_missing() -> None:
    step = Step(proc=0, frame={"params": {"requestState": "", "name": "x"}}, bind=[
        Binding(("params", "requestState"), 0, ("result", "requestState")),
        Binding(("params", "name"), RUN_SOURCE, ("nonce",), "format", "cal-{}"),
    ])
    frame = build_frame(step, {0: {"result": {"requestState": "abc"}}, RUN_SOURCE: {"nonce": "n1"}})
    assert frame == {"params": {"requestState": "abc", "name": "cal-n1"}}
    assert step.frame == {"params": {"requestState": "", "name": "x"}}  # the case itself is untouched
    with pytest.raises(BindingError):
        build_frame(step, {0: {"error": {"code": -32602}}, RUN_SOURCE: {"nonce": "n"}})
    with pytest.raises(BindingError):
        build_frame(step, {RUN_SOURCE: {"nonce": "n"}})


@given(st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=60),
       st.integers(0, 10_000))
def test_a_flip_always_changes_the_state_but_never_a_segments_last_character(state: str, seed: int) -> None:
    tampered = tamper_flip(state, seed)
    assert tampered != state
    if len(tampered) == len(state):
        changed = [i for i, (a, b) in enumerate(zip(state, tampered, strict=True)) if a != b]
        assert len(changed) == 1
        i = changed[0]
        # A segment's last character may only carry base64 padding bits: never changed.
        assert i + 1 < len(state) and state[i + 1] != "."


@settings(max_examples=50)
@given(st.integers(0, 50))
def test_structured_tamper_changes_the_payload_and_keeps_the_signature(seed: int) -> None:
    tampered = tamper_structured(STATE, seed)
    prefix, payload, signature = tampered.split(".")
    assert prefix == "rs1" and signature == "c2lnbmF0dXJl" and tampered != STATE
    decoded = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert decoded != {"m": "tools/call", "x": 5, "p": {"a": "b"}} and set(decoded) == {"m", "x", "p"}


def test_answers_follow_the_policy() -> None:
    requests = {
        "when": {"method": "elicitation/create", "params": {"mode": "form", "message": "?", "requestedSchema": {
            "type": "object", "properties": {"startsAt": {"type": "string", "format": "date-time"},
                                             "n": {"type": "integer", "minimum": 3}}}}},
        "llm": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}},
        "dirs": {"method": "roots/list"},
    }
    accept = answer_input_requests(requests, {"mode": "accept"})
    assert accept["when"] == {"action": "accept", "content": {"startsAt": "2026-08-03T09:00:00Z", "n": 3}}
    assert accept["llm"]["role"] == "assistant" and accept["dirs"]["roots"][0]["uri"].startswith("file://")
    assert answer_input_requests(requests, {"mode": "decline"})["when"] == {"action": "decline"}
    assert set(answer_input_requests(requests, {"mode": "drop", "index": 0})) == {"llm", "when"}
    assert "mcp-tempest-unknown-key" in answer_input_requests(requests, {"mode": "extra"})
    assert answer_input_requests(requests, {"mode": "wrong-shape", "index": 2})["when"] == {"action": 42}


def test_minimal_arguments_and_sample_values() -> None:
    schema = {"type": "object", "required": ["title", "limit", "when"], "properties": {
        "title": {"type": "string", "minLength": 12}, "limit": {"type": "integer", "minimum": 2},
        "when": {"type": "string", "format": "date"}, "optional": {"type": "boolean"}}}
    args = minimal_arguments(schema)
    assert args is not None and set(args) == {"title", "limit", "when"}
    assert len(args["title"]) >= 12 and args["limit"] == 2 and args["when"] == "2026-08-03"
    assert sample_value({"enum": ["a", "b"]}) == "a" and sample_value({"const": 7}) == 7
    assert minimal_arguments({"type": "object", "required": ["x"], "properties": {"x": {"type": "null"}}}) is None


def test_shapes_ignore_minted_values_but_not_the_kind_of_answer() -> None:
    a = {"id": 1, "result": {"resultType": "complete", "content": [{"text": "evt_1"}], "_meta": {"x": 1}}}
    b = {"id": 2, "result": {"resultType": "complete", "content": [{"text": "evt_2"}]}}
    asked = {"id": 3, "result": {"resultType": "input_required", "requestState": "s1",
                                  "inputRequests": {"k": {"method": "elicitation/create"}}}}
    assert shape(a) == shape(b)
    assert shape(a) != shape(asked) != shape({"id": 4, "error": {"code": -32021}})
    assert shape({"error": {"code": -32021}}) != shape({"error": {"code": -32602}})


def test_every_property_draws_cases_for_both_transports() -> None:
    surface = Surface.reference()
    for name, prop in all_properties().items():
        for transport in ("stdio", "http"):
            ctx = Context(transport=transport, surface=surface)
            assert prop.applicable(ctx) is None, name
            drawn: list[Case] = []

            @settings(max_examples=5, database=None, deadline=None)
            @given(prop.cases(ctx))
            def collect(case: Case) -> None:
                drawn.append(case)  # noqa: B023 - run at once, inside this iteration

            collect()
            assert drawn and all(c.property == name and c.steps for c in drawn), name
            assert all(orjson.loads(orjson.dumps(c.to_json())) == c.to_json() for c in drawn)


def test_properties_that_need_mrtr_say_why_they_are_skipped() -> None:
    ctx = Context(transport="stdio", surface=Surface())
    props = all_properties()
    assert "input_required" in (props["mrtr"].applicable(ctx) or "")
    assert props["handoff"].applicable(ctx) is not None
    assert props["framing"].applicable(ctx) is None


def test_budget_split_is_exact_and_seeds_do_not_depend_on_workers() -> None:
    props = list(all_properties().values())
    prepared = [Prepared(default_target("stdio"), "modern", Surface.reference(), True),
                Prepared(default_target("http"), "modern", Surface.reference(), True)]
    jobs = plan_jobs(props, prepared, max_examples=1000, duration=None, workers=1, shrink_seconds=30, seed=5)
    assert len(jobs) == 14 and sum(j.max_examples for j in jobs) == 1000
    assert all(j.seconds is None for j in jobs)
    timed = plan_jobs(props, prepared, max_examples=None, duration=70, workers=2, shrink_seconds=30, seed=5)
    assert sum(j.seconds or 0 for j in timed) == pytest.approx(140)
    assert [j.seed for j in jobs] == [j.seed for j in timed]
    assert job_seed(5, "ids", "stdio") != job_seed(6, "ids", "stdio") != job_seed(5, "ids", "http")

"""MRTR building blocks: input_required results, and answers that fit each input request."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from mcp_tempest.strategies.frames import valid_request
from mcp_tempest.strategies.mrtr import (
    ELICIT,
    build_retry,
    form_field,
    fulfil,
    fulfil_all,
    input_required_result,
    input_responses_for,
    minimal_field_value,
    next_request_id,
    retry_for,
)
from mcp_tempest.strategies.schema_source import load_schema_source

SPEC = Path(__file__).resolve().parents[2] / "shared" / "spec" / "2026-07-28"
SCHEMA = SPEC / "schema.json"
GENERATE = dict(database=None, deadline=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))


def _official():
    if not SCHEMA.is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{SCHEMA} is missing (CI must have ../shared beside the checkout)")
        pytest.skip(f"{SCHEMA} not found: the official spec files live in ../shared beside the checkout")
    return load_schema_source(SCHEMA)


def test_form_fields_are_primitive_schema_definitions():
    official = _official()

    @settings(max_examples=150, **GENERATE)
    @given(form_field())
    def check(field):
        assert official.validator("PrimitiveSchemaDefinition").is_valid(field), field
        Draft202012Validator.check_schema(field)
        # the deterministic minimal answer satisfies the field
        assert Draft202012Validator(field).is_valid(minimal_field_value(field)), field

    check()


def test_input_required_results_are_valid_and_never_empty():
    official = _official()
    mcp_types = load_schema_source()

    @settings(max_examples=120, **GENERATE)
    @given(input_required_result())
    def check(result):
        assert result["resultType"] == "input_required"
        assert "inputRequests" in result or "requestState" in result  # MRTR-02
        assert official.validator("InputRequiredResult").is_valid(result)
        assert mcp_types.validator("InputRequiredResult").is_valid(result)
        for req in result.get("inputRequests", {}).values():
            # stricter than InputRequiredResult, which accepts any extra members (RT-06)
            assert official.validator(official.input_requests[req["method"]]).is_valid(req), req

    check()


def test_answers_fit_their_input_requests():
    official = _official()
    actions = set()

    @settings(max_examples=150, **GENERATE)
    @given(input_required_result(with_requests=True).flatmap(lambda r: st.tuples(st.just(r), input_responses_for(r))))
    def check(pair):
        result, answers = pair
        assert set(answers) == set(result["inputRequests"])  # MRTR-11
        for key, req in result["inputRequests"].items():
            answer = answers[key]
            kind = req["method"]
            assert official.validator(official.input_responses[kind]).is_valid(answer), (kind, answer)
            assert "resultType" not in answer  # inner responses carry none
            if kind == ELICIT:
                actions.add(answer["action"])
                if answer["action"] == "accept" and req["params"].get("mode", "form") == "form":
                    assert Draft202012Validator(req["params"]["requestedSchema"]).is_valid(answer["content"])
                if answer["action"] != "accept":
                    assert "content" not in answer

    check()
    assert actions == {"accept", "decline", "cancel"}


def test_retry_has_a_new_id_the_same_params_and_the_exact_state():
    official = _official()

    @settings(max_examples=60, **GENERATE)
    @given(valid_request("prompts/get", schema_source=official), input_required_result(), st.data())
    def check(request, result, data):
        retry = data.draw(retry_for(request, result))
        assert retry["method"] == request["method"]
        assert not (type(retry["id"]) is type(request["id"]) and retry["id"] == request["id"])  # MRTR-09
        if "requestState" in result:
            assert retry["params"]["requestState"] == result["requestState"]  # MRTR-10
        else:
            assert "requestState" not in retry["params"]
        kept = {k: v for k, v in retry["params"].items() if k not in ("inputResponses", "requestState")}
        assert kept == request["params"]
        assert official.validator("GetPromptRequest").is_valid(retry)

    check()


def test_deterministic_answers_and_retry():
    official = _official()
    form = {
        "method": ELICIT,
        "params": {
            "message": "who?",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 3},
                    "age": {"type": "integer", "minimum": 18, "maximum": 99},
                    "mail": {"type": "string", "format": "email"},
                    "size": {"type": "string", "oneOf": [{"const": "s", "title": "S"}, {"const": "m", "title": "M"}]},
                    "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 1},
                    "ok": {"type": "boolean"},
                },
                "required": ["name", "age", "mail", "size", "tags", "ok"],
            },
        },
    }
    answer = fulfil(form)
    assert answer == {
        "action": "accept",
        "content": {"name": "aaa", "age": 18, "mail": "tempest@example.com", "size": "s", "tags": ["a"], "ok": False},
    }
    assert Draft202012Validator(form["params"]["requestedSchema"]).is_valid(answer["content"])
    assert fulfil(form, action="decline") == {"action": "decline"}
    result = {
        "resultType": "input_required",
        "inputRequests": {"f": form, "r": {"method": "roots/list"},
                          "s": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}},
        "requestState": "opaque-state",
    }
    answers = fulfil_all(result)
    assert set(answers) == {"f", "r", "s"}
    request = {"jsonrpc": "2.0", "id": 41, "method": "tools/call",
               "params": {"name": "t", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                                 "io.modelcontextprotocol/clientCapabilities": {}}}}
    retry = build_retry(request, result)
    assert retry["id"] == 42 and retry["params"]["requestState"] == "opaque-state"
    assert official.validator("CallToolRequest").is_valid(retry)
    assert next_request_id("a") != "a" and next_request_id(2**53 - 1) != 2**53 - 1

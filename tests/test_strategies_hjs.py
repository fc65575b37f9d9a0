"""Tool arguments for inputSchemas with not / if-then-else / dependentRequired / pattern.

Both paths must give only valid arguments: hypothesis-jsonschema where it works (CI's
.venv-lowest, Hypothesis 6.140.2 with the hjs extra), our compiler everywhere else (the newest
Hypothesis, where hjs 0.23.1 is broken). The routing itself is checked in both directions.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from jsonschema import Draft202012Validator

from mcp_tempest.strategies.hjs_inputs import hjs_arguments, hjs_works, wants_hjs
from mcp_tempest.strategies.targeted import tool_arguments

HARD_SCHEMAS = {
    "pattern": {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$"}},
                "required": ["code"], "additionalProperties": False},
    "not": {"type": "object", "properties": {"n": {"type": "integer", "not": {"multipleOf": 2}}}, "required": ["n"]},
    "if-then-else": {
        "type": "object",
        "properties": {"kind": {"enum": ["count", "name"]}, "value": {}},
        "required": ["kind", "value"],
        "if": {"properties": {"kind": {"const": "count"}}},
        "then": {"properties": {"value": {"type": "integer", "minimum": 0}}},
        "else": {"properties": {"value": {"type": "string", "minLength": 1}}},
    },
    "dependentRequired": {
        "type": "object",
        "properties": {"card": {"type": "string"}, "billing": {"type": "string"}},
        "dependentRequired": {"card": ["billing"]},
    },
}
PLAIN = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
RECURSIVE = {"type": "object", "properties": {"t": {"$ref": "#/$defs/T"}},
             "$defs": {"T": {"type": "array", "items": {"$ref": "#/$defs/T"}}}, "not": {"required": ["x"]}}


def _all_valid(strategy, schema, n: int = 40) -> list:
    seen: list = []
    validator = Draft202012Validator(schema)

    @settings(max_examples=n, database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def check(value):
        errors = list(validator.iter_errors(value))
        assert not errors, f"{value!r}: {errors[0].message}"
        seen.append(value)

    check()
    return seen


@pytest.mark.parametrize("name", sorted(HARD_SCHEMAS))
def test_tool_arguments_are_valid_whichever_path_draws_them(name: str):
    schema = HARD_SCHEMAS[name]
    strategy, exact = tool_arguments({"name": name, "inputSchema": schema})
    assert exact
    values = _all_valid(strategy, schema)
    assert len(values) >= 15


def test_routing_picks_hjs_only_for_its_keywords_and_never_for_recursive_refs():
    assert all(wants_hjs(s) for s in HARD_SCHEMAS.values())
    assert not wants_hjs(PLAIN)
    assert not wants_hjs(RECURSIVE)
    assert not wants_hjs({"type": "object", "properties": {"not": {"type": "string"}}})  # a property named "not"
    assert hjs_arguments(PLAIN) is None and hjs_arguments(RECURSIVE) is None


def test_hjs_path_is_taken_when_hjs_works_and_skipped_when_it_does_not():
    strategy = hjs_arguments(HARD_SCHEMAS["not"])
    if hjs_works():
        assert strategy is not None
        _all_valid(strategy, HARD_SCHEMAS["not"], n=30)
    else:
        assert strategy is None  # the compiler path above covered this schema


def test_dependent_required_both_branches_appear():
    values = _all_valid(tool_arguments({"name": "pay", "inputSchema": HARD_SCHEMAS["dependentRequired"]})[0],
                        HARD_SCHEMAS["dependentRequired"], n=100)
    assert any("card" in v for v in values) and any("card" not in v for v in values)

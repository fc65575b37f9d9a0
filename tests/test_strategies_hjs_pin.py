"""Canary for hypothesis-jsonschema beside any Hypothesis we support: fails the day the bridge is wrong.

hypothesis-jsonschema 0.23.1 (the newest release) calls `many.more()`, which Hypothesis removed
in 6.170.10. The `hjs` extra does not cap Hypothesis (a cap would downgrade our users'); instead
strategies/hjs_inputs.adapt_hjs hands hjs a `many` with `more()` where Hypothesis lacks one.
This checks the installed pair: the extra declares no Hypothesis bound, the adapter is in use
exactly where Hypothesis' own `many` has no `more`, and hjs then draws valid objects (and its
`reject()` path ends a collection). It also keeps the reason our compiler owns the MCP message
schema: recursive `$ref` stays unresolvable. CI runs this file on the newest Hypothesis (.venv,
the `test` extra carries hjs) and on the lowest (.venv-lowest, Hypothesis 6.140.2).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis.internal.conjecture import utils as cu
from jsonschema import Draft202012Validator
from packaging.requirements import Requirement

from mcp_tempest.strategies.hjs_inputs import adapt_hjs, hjs_works

hjs = pytest.importorskip("hypothesis_jsonschema", reason="hypothesis-jsonschema not installed (the hjs extra)")
HYPOTHESIS_LACKS_MORE = not hasattr(cu.many, "more")


def _draw_once(strategy) -> None:
    @settings(max_examples=3, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(_value):
        pass

    draw()


def test_no_extra_bounds_hypothesis() -> None:
    extras = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    for name in ("hjs", "hypofuzz"):
        bounded = [r for r in extras["project"]["optional-dependencies"][name]
                   if Requirement(r).name == "hypothesis"]
        assert not bounded, f"the {name} extra pins Hypothesis: {bounded}"


def test_the_adapter_is_used_exactly_where_hypothesis_lacks_more_and_hjs_then_draws() -> None:
    assert adapt_hjs() is HYPOTHESIS_LACKS_MORE
    assert hjs_works()
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^x+$"}, "b": {"type": "integer"}},
              "required": ["a"], "maxProperties": 3, "additionalProperties": {"type": "boolean"}}
    sizes: set[int] = set()
    validator = Draft202012Validator(schema)

    @settings(max_examples=200, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(hjs.from_schema(schema))
    def draw(value: dict) -> None:
        assert validator.is_valid(value), value
        sizes.add(len(value))

    draw()
    assert sizes == {1, 2, 3}, sizes  # min (required), max and between: the size bounds hold both ways


def test_a_failing_hjs_draw_still_shrinks_to_the_smallest_object() -> None:
    adapt_hjs()
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    seen: list[dict] = []

    @settings(max_examples=300, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(hjs.from_schema(schema))
    def at_most_one_key(value: dict) -> None:
        seen.append(value)
        assert len(value) < 2

    with pytest.raises(AssertionError):
        at_most_one_key()
    assert len(seen[-1]) == 2 and all(v == 0 for v in seen[-1].values()), seen[-1]


def test_hypothesis_jsonschema_still_cannot_resolve_recursive_refs():
    adapt_hjs()
    schema = {
        "$defs": {"J": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/J"}}]}},
        "$ref": "#/$defs/J",
    }
    with pytest.raises(Exception, match="[Rr]ecursive"):
        _draw_once(hjs.from_schema(schema))

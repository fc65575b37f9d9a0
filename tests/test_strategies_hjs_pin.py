"""Canary for the decision in strategies/compiler.py: our compiler, not hypothesis-jsonschema.

hypothesis-jsonschema 0.23.1 calls `many.more()`, which Hypothesis removed in 6.170.10, so on
the Hypothesis this project pins every object schema fails with AttributeError; it also cannot
resolve the recursive `$ref` every MCP request reaches (JSONValue). When either stops being
true, this test fails so that someone revisits the choice (and the benchmark's comparison).
"""

from __future__ import annotations

from importlib.metadata import version

import pytest
from hypothesis import HealthCheck, given, settings

hjs = pytest.importorskip("hypothesis_jsonschema")

PINNED_HYPOTHESIS = "6.170.17"
KNOWN_BROKEN_HJS = "0.23.1"


def _draw_once(strategy) -> None:
    @settings(max_examples=3, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(_value):
        pass

    draw()


def test_the_pins_still_match():
    assert version("hypothesis") == PINNED_HYPOTHESIS, "Hypothesis pin changed: re-check hypothesis-jsonschema"
    assert version("hypothesis-jsonschema") == KNOWN_BROKEN_HJS, "hypothesis-jsonschema changed: re-check it"


def test_hypothesis_jsonschema_still_breaks_on_object_schemas():
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    try:
        _draw_once(hjs.from_schema(schema))
    except AttributeError as exc:
        assert "more" in str(exc)
    else:
        pytest.fail(
            "hypothesis-jsonschema now generates object schemas on the pinned Hypothesis: "
            "revisit strategies/compiler.py (we compile tool arguments ourselves because it did not)"
        )


def test_hypothesis_jsonschema_still_cannot_resolve_recursive_refs():
    schema = {
        "$defs": {"J": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/J"}}]}},
        "$ref": "#/$defs/J",
    }
    with pytest.raises(Exception, match="[Rr]ecursive"):
        _draw_once(hjs.from_schema(schema))

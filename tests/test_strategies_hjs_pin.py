"""Canary for the caps around hypothesis-jsonschema: fails the day they are wrong in either direction.

hypothesis-jsonschema 0.23.1 calls `many.more()`, which Hypothesis removed in 6.170.10, so the
`hjs` extra caps Hypothesis below that and strategies/hjs_inputs.py switches itself off above it.
This checks the installed pair: below the cap hjs must work (else the extra's range is wrong),
at or above it hjs must still break (else lift the cap and let the newest Hypothesis use it). It
also keeps the reason our compiler owns the MCP message schema: recursive `$ref` stays
unresolvable. CI runs this file in both environments: the newest (hjs absent or broken) and
.venv-lowest (Hypothesis 6.140.2 with hjs).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import hypothesis
import pytest
from hypothesis import HealthCheck, given, settings
from packaging.requirements import Requirement
from packaging.version import Version

from strategies.hjs_inputs import HJS_BREAKS_AT, hjs_works

hjs = pytest.importorskip("hypothesis_jsonschema", reason="hypothesis-jsonschema not installed (the hjs extra)")
BROKEN_ON_THIS_HYPOTHESIS = Version(hypothesis.__version__) >= Version(HJS_BREAKS_AT)


def _draw_once(strategy) -> None:
    @settings(max_examples=3, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(_value):
        pass

    draw()


def test_the_extra_caps_hypothesis_where_hjs_breaks():
    extras = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    hyp = next(Requirement(r) for r in extras["project"]["optional-dependencies"]["hjs"] if r.startswith("hypothesis>"))
    assert Version(HJS_BREAKS_AT) not in hyp.specifier
    assert all(Version(HJS_BREAKS_AT) <= Version(s.version) for s in hyp.specifier if s.operator == "<")


def test_hjs_works_exactly_below_the_cap():
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    if BROKEN_ON_THIS_HYPOTHESIS:
        with pytest.raises(AttributeError, match="more"):
            _draw_once(hjs.from_schema(schema))
        assert not hjs_works(), "hjs_inputs must switch itself off where hjs breaks"
        return
    _draw_once(hjs.from_schema(schema))
    assert hjs_works()


def test_hypothesis_jsonschema_still_cannot_resolve_recursive_refs():
    if BROKEN_ON_THIS_HYPOTHESIS:
        pytest.skip("hjs does not run at all on this Hypothesis")
    schema = {
        "$defs": {"J": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/J"}}]}},
        "$ref": "#/$defs/J",
    }
    with pytest.raises(Exception, match="[Rr]ecursive"):
        _draw_once(hjs.from_schema(schema))

"""Tool arguments from hypothesis-jsonschema, for the inputSchemas where it beats our compiler.

Why two generators: our compiler (strategies/compiler.py) is built for the MCP message schema,
recursive `$ref` and all, where it is 25-90x faster than hypothesis-jsonschema. Servers also
publish tool inputSchemas with keywords the compiler only *filters* on (`not`, `if`/`then`/`else`,
`dependentRequired`, `dependentSchemas`, `pattern` beside other constraints); hypothesis-jsonschema
rewrites such schemas into ones it generates from directly, so its values are shaped by them
rather than sieved. Measured (tests/benchmarks/bench_strategies.py, valid arguments per
CPU-second, both paths behind the same validity filter): the compiler is still 2.7-15x faster on
these schemas, so this path is opt-in (the `hjs` extra) for the different values it draws, not
for speed.

When it is used: only for a tool schema that names one of `HJS_KEYWORDS`, has no `$ref` cycle
(hypothesis-jsonschema cannot resolve recursive references), and only when hypothesis-jsonschema
is installed (`pip install "mcp-gauntlet[hjs]"`) *and* works on the installed Hypothesis: 0.23.1
calls `many.more()`, which Hypothesis removed in 6.170.10 (`HJS_BREAKS_AT`), so on newer
Hypothesis this module says no and the compiler handles every schema, as before.
tests/test_strategies_hjs_pin.py fails when that changes.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

HJS_KEYWORDS = frozenset({"not", "if", "then", "else", "dependentRequired", "dependentSchemas", "pattern"})
HJS_BREAKS_AT = "6.170.10"  # first Hypothesis release hypothesis-jsonschema 0.23.1 fails on


def _keywords(node: Any) -> set[str]:
    """Every keyword used anywhere in a schema (property names of `properties` excluded)."""
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            for key, value in item.items():
                found.add(key)
                if key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"):
                    if isinstance(value, Mapping):
                        stack.extend(value.values())
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return found


def uses_hard_keywords(schema: Any) -> bool:
    """Does this inputSchema use a keyword that neither generator honours everywhere by construction?"""
    return isinstance(schema, Mapping) and bool(_keywords(schema) & HJS_KEYWORDS)


def wants_hjs(schema: Any) -> bool:
    """Hard keywords and no `$ref` (hypothesis-jsonschema cannot resolve recursive ones)."""
    return uses_hard_keywords(schema) and "$ref" not in _keywords(schema)


def only_valid(schema: Any, strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Keep only values a real 2020-12 validator accepts, for schemas with hard keywords.

    Why for both paths: hypothesis-jsonschema 0.23.1 knows draft 4-7 and ignores 2019-09's
    `dependentRequired`; our compiler drops a top-level `if`/`then`/`else`. An argument the
    schema rejects would make the server's correct refusal look like a finding.
    """
    if not uses_hard_keywords(schema):
        return strategy
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(dict(schema))
    return strategy.filter(validator.is_valid)


@functools.cache
def hjs_works() -> bool:
    """hypothesis-jsonschema is importable and draws an object on the installed Hypothesis."""
    try:
        import hypothesis_jsonschema
    except ImportError:
        return False
    from hypothesis import HealthCheck, given, settings

    drawn: list[Any] = []

    @settings(max_examples=2, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(hypothesis_jsonschema.from_schema(
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}))
    def probe(value: Any) -> None:
        drawn.append(value)

    try:
        probe()
    except Exception:  # noqa: BLE001 - any failure means: not usable here, use the compiler
        return False
    return bool(drawn) and all(isinstance(v, dict) and "n" in v for v in drawn)


def hjs_arguments(schema: Any) -> st.SearchStrategy[dict[str, Any]] | None:
    """A strategy of arguments for `schema` from hypothesis-jsonschema, or None (use the compiler)."""
    if not wants_hjs(schema) or not hjs_works():
        return None
    from hypothesis.errors import InvalidArgument
    from hypothesis_jsonschema import from_schema

    try:
        strategy = from_schema(dict(schema))
    except (InvalidArgument, ValueError, TypeError, RecursionError):
        return None  # unsatisfiable or beyond it: the compiler decides what to do
    return only_valid(schema, strategy.filter(lambda v: isinstance(v, dict)))

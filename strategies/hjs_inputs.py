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
is installed (`pip install "mcp-tempest[hjs]"`) and draws on the installed Hypothesis.

Why an adapter rather than a cap: 0.23.1 (the newest release) drives Hypothesis' private
`conjecture.utils.many` through `more()`/`reject()`; Hypothesis 6.170.10 turned
`many` into a context manager iterated with `for`, so every object schema raises AttributeError.
Capping Hypothesis in the extra would downgrade our users' Hypothesis by a dozen minor versions
just to install it. Instead, where `many` has no `more`, `adapt_hjs` hands hypothesis-jsonschema
(its module only, never Hypothesis itself) `_MoreMany`: the same continue-or-stop decisions, one
weighted boolean per element on the running ConjectureData, so the choice sequence stays
shrinkable. It is the one place outside fuzz/hypothesis_compat.py that meets a Hypothesis
internal (only through the handle hjs already holds; strategies may not import fuzz).
tests/test_strategies_hjs_pin.py checks on each installed Hypothesis that the adapter is used
exactly where it is needed and that hjs then draws.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

HJS_KEYWORDS = frozenset({"not", "if", "then", "else", "dependentRequired", "dependentSchemas", "pattern"})


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


def _p_continue(extra: float, room: float) -> float:
    """The chance to draw one more element so that, beyond the minimum, `extra` more are expected
    on average when at most `room` more fit: with continue-chance p and a cap of n the expected
    count is p(1 - p^n)/(1 - p), which grows with p, so bisect for it (unbounded: p/(1 - p))."""
    if extra <= 0 or room <= 0:
        return 0.0
    if room == float("inf"):
        return extra / (1 + extra)
    if extra >= room:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(60):
        p = (lo + hi) / 2
        expected = p * (1 - p ** room) / (1 - p)
        lo, hi = (p, hi) if expected < extra else (lo, p)
    return lo


class _MoreMany:
    """`many` as hypothesis-jsonschema 0.23.1 calls it: `while elements.more(): ... reject()`.

    Each `more()` is one boolean, weighted so the expected size is the requested average, forced
    where the bounds decide it; a run of rejections ends the collection (or, below `min_size`,
    the example), so a filter that keeps failing cannot loop for ever.
    """

    def __init__(self, data: Any, min_size: int, max_size: float, average_size: float, *,
                 observe: bool = True) -> None:
        self.data, self.min_size, self.max_size, self.observe = data, min_size, max_size, observe
        self.p_continue = _p_continue(average_size - min_size, max_size - min_size)
        self.count = 0
        self.rejections = 0
        self.force_stop = False

    def more(self) -> bool:
        if self.min_size == self.max_size:
            go = self.count < self.min_size
        else:
            forced: bool | None = None
            if self.force_stop or self.count >= self.max_size:
                forced = False
            elif self.count < self.min_size:
                forced = True
            if (forced is True and self.p_continue <= 0) or (forced is False and self.p_continue >= 1):
                go = forced  # a draw cannot be forced against certainty; the bounds decide
            else:
                go = self.data.draw_boolean(self.p_continue, forced=forced, observe=self.observe)
        if go:
            self.count += 1
        return go

    def reject(self, why: str | None = None) -> None:
        self.count -= 1
        self.rejections += 1
        if self.rejections > max(3, 2 * self.count):
            if self.count < self.min_size:
                self.data.mark_invalid(why)
            self.force_stop = True


def adapt_hjs() -> bool:
    """Give hypothesis-jsonschema a `many` with `more()` where Hypothesis no longer has one.
    Returns whether the adapter is in use (False: hjs missing, or Hypothesis' own `many` fits)."""
    try:
        from hypothesis_jsonschema import _from_schema
    except ImportError:
        return False
    current = _from_schema.cu
    if isinstance(current, _AdaptedUtils):
        return True
    if hasattr(current.many, "more"):
        return False
    _from_schema.cu = _AdaptedUtils(current)
    return True


class _AdaptedUtils:
    """Hypothesis' `conjecture.utils` as hypothesis-jsonschema sees it: `many` replaced, the rest its own."""

    def __init__(self, utils: Any) -> None:
        self._utils = utils
        self.many = _MoreMany

    def __getattr__(self, name: str) -> Any:
        return getattr(self._utils, name)


@functools.cache
def hjs_works() -> bool:
    """hypothesis-jsonschema is importable and draws an object on the installed Hypothesis."""
    try:
        import hypothesis_jsonschema
    except ImportError:
        return False
    adapt_hjs()
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

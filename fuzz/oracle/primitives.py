"""DIGEST section 9.1-9.3: tools, resources and prompts (TOOL-*, PR-*).

TOOL-11 validates structuredContent against the outputSchema the same server listed for that
tool in this transcript. Tool schemas are the server's own documents: they are compiled with an
empty reference registry, so a `$ref` to anywhere else is never fetched (no I/O), and a schema
the validator cannot use is skipped rather than guessed at.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Final

import orjson

from mcp_tempest.fuzz.oracle.exchange import Exchange
from mcp_tempest.fuzz.oracle.facts import describe
from mcp_tempest.fuzz.oracle.list_facts import list_fact, names_of, output_schema_at
from mcp_tempest.fuzz.oracle.model import Violation, rule
from mcp_tempest.fuzz.oracle.results import cacheable_complete, modern_results

_LIST_KEYS: Final = {"tools/list": ("tools", "name"), "prompts/list": ("prompts", "name")}


def _list_stability(x: Exchange, method: str, rule_id: str) -> list[Violation]:
    seen: dict[Any, tuple[frozenset[str], int]] = {}
    out: list[Violation] = []
    field, key = _LIST_KEYS[method]
    for pair, i, result in cacheable_complete(x):
        if pair.method != method or not isinstance(result.get(field), list):
            continue
        cursor = pair.sent.params.get("cursor") if pair.sent.params else None
        names = list_fact(x, result[field], f"names:{key}", names_of(key))[1]
        # The list MAY depend on what this request declared (a server may hide tools that need a
        # capability the client lacks), so only requests declaring the same thing are compared.
        token = (describe(cursor), orjson.dumps(pair.sent.capabilities, option=orjson.OPT_SORT_KEYS))
        if token in seen and seen[token][0] != names:
            before = seen[token][0]
            diff = sorted(before ^ names)[:5]
            out.append(Violation(rule_id, "HEURISTIC", f"{method} result changed within one run",
                                 f"differs from event {seen[token][1]} in {diff}", method, i))
            continue
        seen.setdefault(token, (names, i))
    return out


@rule("TOOL-02", "HEURISTIC", "tools/list does not vary per connection or as a side effect of other requests",
      scope="transcript")
def tool_02(x: Exchange) -> list[Violation]:
    return _list_stability(x, "tools/list", "TOOL-02")


@rule("PR-01", "HEURISTIC", "prompts/list does not vary per connection or as a side effect of other requests",
      scope="transcript")
def pr_01(x: Exchange) -> list[Violation]:
    return _list_stability(x, "prompts/list", "PR-01")


@lru_cache(maxsize=256)
def _output_validator(schema_json: bytes) -> Any:
    """A validator for one tool's outputSchema, or None when the schema cannot be used as given."""
    try:
        from jsonschema.validators import validator_for
        from referencing import Registry

        schema = orjson.loads(schema_json)
        cls = validator_for(schema, default=_draft_2020_12())
        cls.check_schema(schema)
        return cls(schema, registry=Registry())
    except Exception:  # an unusable schema is the server's problem, not a finding we can prove here
        return None


def _draft_2020_12() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator


def _output_errors(schema: dict[str, Any], value: Any) -> list[str] | None:
    validator = _output_validator(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))
    if validator is None:
        return None
    try:
        return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:120]}"
                for e in validator.iter_errors(value)]
    except Exception:  # an unresolvable $ref surfaces only while validating
        return None


@rule("TOOL-11", "MUST", "structuredContent conforms to the tool's outputSchema", scope="transcript")
def tool_11(x: Exchange) -> list[Violation]:
    # The pages listed so far, each with where its tools' outputSchemas are: a call is judged by
    # the latest listing that gave its tool one (list_facts: once per distinct page, not per page).
    listed: list[tuple[list[Any], dict[str, int]]] = []
    out: list[Violation] = []
    for pair, i, _, result in modern_results(x):
        if pair.method == "tools/list" and isinstance(result.get("tools"), list):
            at = list_fact(x, result["tools"], "output-schemas", output_schema_at)
            if at:
                listed.append((result["tools"], at))
            continue
        if pair.method != "tools/call" or result.get("resultType", "complete") != "complete":
            continue
        name = pair.sent.params.get("name") if pair.sent.params else None
        schema = _latest_output_schema(listed, name) if isinstance(name, str) else None
        if schema is None or result.get("isError") is True:
            continue  # with isError the behaviour is UNSPEC
        if "structuredContent" not in result:
            out.append(Violation("TOOL-11", "MUST", f"tool {name!r} has an outputSchema but no structuredContent",
                                 "", pair.method, i))
            continue
        errors = _output_errors(schema, result["structuredContent"])
        if errors:
            out.append(Violation("TOOL-11", "MUST", f"structuredContent of {name!r} fails its outputSchema",
                                 "; ".join(errors[:3]) + (f" (+{len(errors) - 3} more)" if len(errors) > 3 else ""),
                                 pair.method, i))
    return out


def _latest_output_schema(listed: list[tuple[list[Any], dict[str, int]]], name: str) -> dict[str, Any] | None:
    for tools, at in reversed(listed):
        if name in at:
            return tools[at[name]]["outputSchema"]  # type: ignore[no-any-return]
    return None

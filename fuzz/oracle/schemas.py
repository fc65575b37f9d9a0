"""Result schemas for the oracle: one compiled validator per (method, resultType), built once.

RT-06: schema.json types `resultType` as a plain string and `InputRequiredResult` accepts extra
properties, so validating against a `*ResultResponse` anyOf would pass almost anything. The
oracle therefore picks the schema type from the `resultType` value first, then validates.

Source of the schemas: the strategies package's schema source (`strategies.schema_source`, the
`mcp-types` wire types with the errata table applied), else `mcp-types` directly. Validators
are compiled lazily and cached, so a Locust user pays once per type, not per response. An
instance is judged to MAX_SCHEMA_DEPTH levels and MAX_ITEMS items a list (strategies.json_bounds):
never a RecursionError, never minutes for one huge list.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

from mcp_tempest.strategies.json_bounds import MAX_ITEMS, MAX_SCHEMA_DEPTH, cut_deep

COMPLETE_RESULT_TYPES: Final[dict[str, str]] = {
    "server/discover": "DiscoverResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "completion/complete": "CompleteResult",
    "subscriptions/listen": "SubscriptionsListenResult",
}
INPUT_REQUEST_TYPES: Final[dict[str, str]] = {
    "elicitation/create": "ElicitRequest",
    "sampling/createMessage": "CreateMessageRequest",
    "roots/list": "ListRootsRequest",
}


@dataclass(frozen=True, slots=True)
class SchemaError:
    path: tuple[str | int, ...]
    validator: str
    message: str

    def where(self) -> str:
        return "/".join(str(p) for p in self.path) or "(root)"


Validate = Callable[[Any], list[SchemaError]]
_LOCK = threading.Lock()


def type_name_for(method: str, result_type: Any) -> str | None:
    """The `$defs` type a result of `method` must satisfy, chosen by its resultType (RT-06)."""
    source = _strategies_source()
    if source is not None:
        if method not in source.results:
            return None
        return source.result_def(method, result_type) if isinstance(result_type, str) else None
    if result_type == "input_required":
        return "InputRequiredResult"
    if result_type == "complete":
        return COMPLETE_RESULT_TYPES.get(method)
    return None


def result_validator(method: str, result_type: Any) -> Validate | None:
    """A validator for a result of `method` with this resultType; None when there is no schema."""
    name = type_name_for(method, result_type)
    return type_validator(name) if name else None


@lru_cache(maxsize=32)
def request_validator(method: str) -> Validate | None:
    """A validator for a whole request frame of `method` (None when the method has no schema)."""
    source = _strategies_source()
    if source is not None:
        name = source.requests.get(method)
        return type_validator(name) if name else None
    name = {m: t.removesuffix("Result") + "Request" for m, t in COMPLETE_RESULT_TYPES.items()}.get(method)
    return type_validator(name) if name else None


@lru_cache(maxsize=128)
def type_validator(name: str) -> Validate | None:
    """A cached validator for one `$defs` type of the 2026-07-28 schema; None if the type is unknown."""
    with _LOCK:
        validator = _compile(name)
    if validator is None:
        return None

    def validate(instance: Any) -> list[SchemaError]:
        # jsonschema descends recursively (JSONValue: about five frames a level), so an answer
        # nested hundreds deep would raise RecursionError mid-judgement: what lies deeper than
        # MAX_SCHEMA_DEPTH is judged as an empty container, which every schema here allows there.
        # And a list is judged by its first MAX_ITEMS items: a tools/list of 100,000 tools took
        # minutes to validate, on every example that listed them.
        instance = cut_deep(instance, MAX_SCHEMA_DEPTH, max_items=MAX_ITEMS)[0]
        return [
            SchemaError(tuple(err.absolute_path), str(err.validator), err.message)
            for err in validator.iter_errors(instance)
        ]

    return validate


@lru_cache(maxsize=1)
def _strategies_source() -> Any:
    """The strategies package's schema source (mcp-types with its errata table applied), so the
    oracle validates against exactly the schema the generators draw from; None if unusable.
    Imported on first use: it pulls in Hypothesis, which a Locust user that never validates a
    result should not pay for."""
    try:
        from mcp_tempest.strategies.schema_source import default_source

        return default_source()
    except Exception:  # an unusable source must not stop judging: fall back to mcp-types below
        return None


def _compile(name: str) -> Any:
    source = _strategies_source()
    if source is not None:
        if name not in source.defs:
            return None
        return source.validator(name)  # a Draft 2020-12 validator without a format checker
    schema = _fallback_type_schema(name)
    if schema is None:
        return None
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema)


def _fallback_type_schema(name: str) -> dict[str, Any] | None:
    """JSON Schema of one type straight from the generated wire models of `mcp-types`.

    Used only when the strategies source cannot be built. Pydantic renders optional fields as
    `anyOf [T, null]`, which only makes validation more lenient, never stricter.
    """
    try:
        import mcp_types._v2026_07_28 as v2026
        from pydantic import TypeAdapter
    except ImportError:  # pragma: no cover - mcp-types is a dependency
        return None
    model = getattr(v2026, name, None)
    if model is None:
        return None
    return TypeAdapter(model).json_schema(by_alias=True, mode="validation")


def warm_up() -> None:
    """Build the schema source and compile every result validator now (a few seconds, once per
    process), so that the first judged response does not pay for it: call it from a Locust
    user's `on_start` or before a timed run."""
    for method in COMPLETE_RESULT_TYPES:
        for result_type in ("complete", "input_required"):
            result_validator(method, result_type)
    for name in INPUT_REQUEST_TYPES.values():
        type_validator(name)

"""Plausible values for a JSON Schema: tool arguments and elicitation answers under load.

The fuzzer draws from schemas with Hypothesis to find edge cases; a load user wants the
opposite: cheap, valid, boring values that exercise the server's normal path thousands of times a
second, and varied ones (fuzz's `sample_value` gives one fixed value per schema; a load that
opens the same calendar ten thousand times measures one row). So this is a small deterministic
generator driven by a `random.Random`, which covers the
keywords tool input schemas and elicitation forms actually use (types, required, enum/const,
anyOf/oneOf with the Pydantic `anyOf [T, null]` idiom, formats, bounds, local `$ref`), and
prefers a realistic value when a property name says it holds a time.
"""

from __future__ import annotations

import math
import random
import re
import uuid
from typing import Any

from mcp_tempest.strategies.json_bounds import MAX_SCHEMA_DEPTH

_MAX_DEPTH = 6  # below this, optional properties and array items are left out (values stay small)
_TIME_WORDS = frozenset(
    {"date", "time", "datetime", "when", "start", "starts", "end", "ends", "deadline", "due", "timestamp"}
)
# A property that names a server-minted handle (TOOL-14): only a value the server handed out (or
# the user gave) is valid, so load/arguments.py never invents one (it waits, or leaves it out).
_HANDLE_NAME = re.compile(r"(?:^id$|[a-z0-9]Id$|_id$|^ID$)")
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _is_null_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and (schema.get("type") == "null" or schema.get("const", 1) is None)


def resolve(schema: Any, root: Any) -> Any:
    """Follow a local `$ref` (#/$defs/X or #/definitions/X); anything else is left as it is."""
    seen = 0
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < 16:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            return {}
        node: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return {}
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**node, **rest} if rest else node
        seen += 1
    return schema


def _looks_like_time(name: str) -> bool:
    words = {w.lower() for w in _WORDS.findall(name)}
    return bool(words & _TIME_WORDS) or name.endswith("At") or name.lower().endswith("_at")


def is_handle_name(name: str) -> bool:
    return bool(_HANDLE_NAME.search(name))


def _string(schema: dict[str, Any], rng: random.Random, name: str) -> str:
    fmt = schema.get("format")
    day = 1 + rng.randrange(28)
    hour = 8 + rng.randrange(10)
    if fmt == "date-time" or (fmt is None and _looks_like_time(name)):
        text = f"2026-08-{day:02d}T{hour:02d}:00:00Z"
    elif fmt == "date":
        text = f"2026-08-{day:02d}"
    elif fmt == "time":
        text = f"{hour:02d}:00:00"
    elif fmt == "email":
        text = f"load{rng.randrange(10_000)}@example.com"
    elif fmt in ("uri", "url", "iri"):
        text = f"https://example.com/load/{rng.randrange(10_000)}"
    elif fmt == "uuid":
        text = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    else:
        text = f"load {name or 'value'} {rng.randrange(100_000)}"
    min_len = schema.get("minLength")
    max_len = schema.get("maxLength")
    if isinstance(min_len, int) and len(text) < min_len:
        text = text + "x" * (min_len - len(text))
    if isinstance(max_len, int) and max_len >= 0 and len(text) > max_len:
        text = text[:max_len]
    return text


def _number(schema: dict[str, Any], rng: random.Random, integer: bool) -> int | float:
    low = schema.get("minimum")
    high = schema.get("maximum")
    ex_low = schema.get("exclusiveMinimum")
    ex_high = schema.get("exclusiveMaximum")
    if isinstance(ex_low, int | float) and not isinstance(ex_low, bool):
        low = ex_low + (1 if integer else 1e-6) if low is None else max(low, ex_low + (1 if integer else 1e-6))
    if isinstance(ex_high, int | float) and not isinstance(ex_high, bool):
        cap = ex_high - (1 if integer else 1e-6)
        high = cap if high is None else min(high, cap)
    if low is None:
        low = 1 if high is None or high >= 1 else high - 10
    if high is None:
        high = low + 100
    if high < low:
        high = low
    if integer:
        lo, hi = math.ceil(low), math.floor(high)
        return rng.randint(lo, hi) if hi >= lo else int(lo)
    return round(rng.uniform(float(low), float(high)), 2) if high > low else float(low)


def value_for(
    schema: Any,
    rng: random.Random,
    *,
    name: str = "",
    root: Any = None,
    optional: bool = True,
    depth: int = 0,
    _walk: int = 0,
) -> Any:
    """A value valid for `schema` (as far as the keywords above go). `depth` counts objects and
    arrays (deep ones get fewer members), `_walk` every step of the walk, anyOf and allOf too."""
    if root is None:
        root = schema
    schema = resolve(schema, root)
    if schema is True or not isinstance(schema, dict) or not schema or _walk >= MAX_SCHEMA_DEPTH:
        # past MAX_SCHEMA_DEPTH (a schema that deep, or anyOf/$ref that lead back into themselves)
        # a plain value ends the walk: a RecursionError would end the load run instead
        return f"load {name}".strip() if name else "load"
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        choices = [v for v in enum if v is not None] or enum
        return rng.choice(choices)
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return rng.choice(examples)  # the schema's own valid values (strategies.value_sources offers them too)
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            usable = [o for o in options if not _is_null_schema(resolve(o, root))] or options
            # Titled single-select enums are oneOf/anyOf of consts: any of them is a valid answer.
            merged = {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf")}
            pick = resolve(rng.choice(usable), root)
            if isinstance(pick, dict):
                merged = {**merged, **pick}
            return value_for(merged, rng, name=name, root=root, optional=optional, depth=depth, _walk=_walk + 1)
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and all_of:
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in all_of:
            part = resolve(part, root)
            if isinstance(part, dict):
                merged.update(part)
        return value_for(merged, rng, name=name, root=root, optional=optional, depth=depth, _walk=_walk + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
    if kind == "object":
        return object_for(schema, rng, root=root, optional=optional, depth=depth, _walk=_walk)
    if kind == "array":
        return _array(schema, rng, name, root, depth, _walk)
    if kind == "integer":
        return _number(schema, rng, True)
    if kind == "number":
        return _number(schema, rng, False)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    return _string(schema, rng, name)


def _array(schema: dict[str, Any], rng: random.Random, name: str, root: Any, depth: int, _walk: int = 0) -> list[Any]:
    items = resolve(schema.get("items", {}), root)
    low = schema.get("minItems") if isinstance(schema.get("minItems"), int) else 0
    high = schema.get("maxItems") if isinstance(schema.get("maxItems"), int) else low + 2
    size = max(low, min(high, low + 1))
    if depth >= _MAX_DEPTH:
        size = low
    # Multi-select enums want distinct members.
    members = None
    if isinstance(items, dict):
        if isinstance(items.get("enum"), list):
            members = list(items["enum"])
        elif isinstance(items.get("anyOf") or items.get("oneOf"), list):
            options = items.get("anyOf") or items.get("oneOf")
            consts = [o.get("const") for o in options if isinstance(o, dict) and "const" in o]
            members = consts or None
    if members is not None:
        return rng.sample(members, min(size, len(members)))
    return [value_for(items, rng, name=name, root=root, depth=depth + 1, _walk=_walk + 1) for _ in range(size)]


def object_for(
    schema: Any,
    rng: random.Random,
    *,
    root: Any = None,
    optional: bool = True,
    depth: int = 0,
    _walk: int = 0,
) -> dict[str, Any]:
    """An object with every required property, and the optional ones too when `optional`."""
    if root is None:
        root = schema
    schema = resolve(schema, root)
    if not isinstance(schema, dict):
        return {}
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = [r for r in schema.get("required", []) if isinstance(r, str)] if isinstance(
        schema.get("required"), list
    ) else []
    out: dict[str, Any] = {}
    for key, sub in props.items():
        if key not in required and (not optional or depth >= _MAX_DEPTH):
            continue
        out[key] = value_for(sub, rng, name=key, root=root, optional=optional, depth=depth + 1, _walk=_walk + 1)
    for key in required:
        if key not in out:
            out[key] = f"load {key}"
    return out


def required_only_differs(input_schema: Any) -> bool:
    """Whether the schema has optional properties, i.e. whether a required-only call omits something."""
    if not isinstance(input_schema, dict):
        return False
    props = input_schema.get("properties")
    if not isinstance(props, dict):
        return False
    required = input_schema.get("required") if isinstance(input_schema.get("required"), list) else []
    return any(key not in required for key in props)

"""The one visible table of known schema artifacts and errata, and the code that applies them.

Why a table: both schema sources are generated from the same TypeScript definitions by two
different generators, and each generator loses something. A silent fix buried in the loader
would be invisible to whoever reads a finding; here every correction has a name, the source
it applies to, what is wrong, and what we do about it. `SchemaSource.errata_applied` lists
the ids that actually changed the document, and a test pins that list so that a new release
of `mcp-types` or of the official file that fixes (or adds) an artifact gets noticed.

Facts, not text, carried over from the spec: which fields are URIs, that JSON values include
fractional numbers and null, that a NumberSchema field may be answered with a fraction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MCP_TYPES = "mcp-types"
SCHEMA_JSON = "schema.json"
BOTH = "both"

_NULL = {"type": "null"}


@dataclass(frozen=True)
class Erratum:
    id: str
    source: str  # MCP_TYPES or SCHEMA_JSON
    where: str
    problem: str
    fix: str
    apply: Callable[[dict[str, Any]], bool] | None  # mutates `$defs`, returns True when it changed something


# -- fixes for mcp-types (pydantic TypeAdapter(...).json_schema()) ------------------------------


def _drop_null_arms(defs: dict[str, Any]) -> bool:
    """Remove every `{"type": "null"}` arm (and the `default: null` that goes with it)."""
    changed = False

    def walk(node: Any) -> Any:
        nonlocal changed
        if isinstance(node, list):
            return [walk(x) for x in node]
        if not isinstance(node, dict):
            return node
        out = {k: walk(v) for k, v in node.items()}
        if "anyOf" in out and any(arm == _NULL for arm in out["anyOf"]):
            arms = [arm for arm in out["anyOf"] if arm != _NULL]
            changed = True
            if "default" in out and out["default"] is None:
                del out["default"]
            if len(arms) == 1:
                del out["anyOf"]
                single = arms[0]
                if isinstance(single, dict):
                    for key, value in single.items():
                        out.setdefault(key, value)
            else:
                out["anyOf"] = arms
        elif out.get("default", 0) is None:
            del out["default"]
            changed = True
        return out

    for name in list(defs):
        defs[name] = walk(defs[name])
    return changed


# (definition, property) -> format, as the spec types these fields. mcp-types carries no format.
URI_FORMATS: tuple[tuple[str, str, str], ...] = (
    ("AudioContent", "data", "byte"),
    ("ImageContent", "data", "byte"),
    ("BlobResourceContents", "blob", "byte"),
    ("BlobResourceContents", "uri", "uri"),
    ("TextResourceContents", "uri", "uri"),
    ("ResourceContents", "uri", "uri"),
    ("ElicitRequestURLParams", "url", "uri"),
    ("Icon", "src", "uri"),
    ("Implementation", "websiteUrl", "uri"),
    ("ReadResourceRequestParams", "uri", "uri"),
    ("ResourceRequestParams", "uri", "uri"),
    ("Resource", "uri", "uri"),
    ("ResourceLink", "uri", "uri"),
    ("ResourceUpdatedNotificationParams", "uri", "uri"),
    ("Root", "uri", "uri"),
    ("ResourceTemplate", "uriTemplate", "uri-template"),
    ("ResourceTemplateReference", "uri", "uri-template"),
)


def _add_formats(defs: dict[str, Any]) -> bool:
    changed = False
    for def_name, prop, fmt in URI_FORMATS:
        node = defs.get(def_name, {}).get("properties", {}).get(prop)
        if isinstance(node, dict) and node.get("type") == "string" and "format" not in node:
            node["format"] = fmt
            changed = True
    return changed


def _type_server_info(defs: dict[str, Any]) -> bool:
    if "Implementation" not in defs:
        return False
    changed = False
    for name, node in defs.items():
        if not name.endswith(("ResultMetaObject", "ResultMeta")):
            continue
        prop = node.get("properties", {}).get("io.modelcontextprotocol/serverInfo")
        if isinstance(prop, dict) and not (set(prop) - {"title", "description"}):
            node["properties"]["io.modelcontextprotocol/serverInfo"] = {"$ref": "#/$defs/Implementation"}
            changed = True
    return changed


# -- fixes for the official schema.json ----------------------------------------------------------


def _json_value_number_null(defs: dict[str, Any]) -> bool:
    node = defs.get("JSONValue")
    if not isinstance(node, dict):
        return False
    changed = False
    for arm in node.get("anyOf", []):
        types = arm.get("type") if isinstance(arm, dict) else None
        if isinstance(types, list) and "string" in types:
            for extra in ("number", "null"):
                if extra not in types:
                    types.append(extra)
                    changed = True
    return changed


def _elicit_content_number(defs: dict[str, Any]) -> bool:
    content = defs.get("ElicitResult", {}).get("properties", {}).get("content", {})
    values = content.get("additionalProperties", {}) if isinstance(content, dict) else {}
    changed = False
    for arm in values.get("anyOf", []) if isinstance(values, dict) else []:
        types = arm.get("type") if isinstance(arm, dict) else None
        if isinstance(types, list) and "integer" in types and "number" not in types:
            types.append("number")
            changed = True
    return changed


def _number_schema_bounds(defs: dict[str, Any]) -> bool:
    props = defs.get("NumberSchema", {}).get("properties", {})
    changed = False
    for key in ("minimum", "maximum", "default"):
        node = props.get(key)
        if isinstance(node, dict) and node.get("type") == "integer":
            node["type"] = "number"
            changed = True
    return changed


def _read_resource_cache_hints(defs: dict[str, Any]) -> bool:
    node = defs.get("ReadResourceResult")
    if not isinstance(node, dict) or not {"ttlMs", "cacheScope"} & set(node.get("required", [])):
        return False
    node["required"] = [r for r in node["required"] if r not in ("ttlMs", "cacheScope")]
    return True


ERRATA: tuple[Erratum, ...] = (
    Erratum(
        "mcp-types/optional-null",
        MCP_TYPES,
        "every optional field and union with a Python `None` member",
        "pydantic renders `T | None = None` as `anyOf [T, {type: null}]` with `default: null`",
        "drop the null arm: the field may be omitted but is not nullable (sending null is the "
        "`null-optional-field` mutation); `structuredContent`, `{}`-typed, still admits null",
        _drop_null_arms,
    ),
    Erratum(
        "mcp-types/uri-formats",
        MCP_TYPES,
        ", ".join(f"{d}.{p}" for d, p, _ in URI_FORMATS),
        "no `format` anywhere: URI, URI-template and base64 fields are bare strings",
        "add `format` uri / uri-template / byte to those fields so generated values are plausible",
        _add_formats,
    ),
    Erratum(
        "mcp-types/server-info-untyped",
        MCP_TYPES,
        "ResultMetaObject / SubscriptionsListenResultMeta `io.modelcontextprotocol/serverInfo`",
        "typed as `Any` (`{}`)",
        "point it at `Implementation`, as the spec types it",
        _type_server_info,
    ),
    Erratum(
        "mcp-types/requested-schema-untyped",
        MCP_TYPES,
        "ElicitRequestFormParams.requestedSchema.properties",
        "values are untyped (`additionalProperties: true`), PrimitiveSchemaDefinition is absent",
        "not patched: elicitation forms are generated from the PrimitiveSchemaDefinition "
        "vocabulary in strategies/mrtr.py, whichever source is active",
        None,
    ),
    Erratum(
        "schema.json/jsonvalue-number-null",
        SCHEMA_JSON,
        "$defs/JSONValue",
        "the scalar arm is `[string, integer, boolean]`: fractional numbers and null are missing",
        "add `number` and `null` (the TypeScript JSONValue has both)",
        _json_value_number_null,
    ),
    Erratum(
        "schema.json/elicit-content-number",
        SCHEMA_JSON,
        "$defs/ElicitResult.content values",
        "`[string, integer, boolean]`: an answer to a NumberSchema field of type number (a "
        "fraction) would be rejected",
        "add `number`",
        _elicit_content_number,
    ),
    Erratum(
        "both/read-resource-cache-hints",
        BOTH,
        "ReadResourceResult.required",
        "requires ttlMs and cacheScope, but the official example "
        "ReadResourceResultResponse/read-resource-example.json omits both (schema.json only accepts "
        "it because any result also matches InputRequiredResult, RT-06)",
        "make the two hints optional for resources/read so an official example is never rejected; "
        "their absence is CACHE-01's business, judged by the oracle on its own, not by schema validation",
        _read_resource_cache_hints,
    ),
    Erratum(
        "schema.json/numberschema-bounds-integer",
        SCHEMA_JSON,
        "$defs/NumberSchema minimum / maximum / default",
        "reported as typed `integer`, which would reject fractional bounds",
        "retype as `number` when so typed (the bundled 2026-07-28 file already types them "
        "`number`, so this one is a no-op there; kept so another file is corrected too)",
        _number_schema_bounds,
    ),
)


def apply_errata(defs: dict[str, Any], source: str) -> tuple[str, ...]:
    """Apply every erratum of `source` to `defs` in place; return the ids that changed something."""
    applied: list[str] = []
    for erratum in ERRATA:
        if erratum.source in (source, BOTH) and erratum.apply is not None and erratum.apply(defs):
            applied.append(erratum.id)
    return tuple(applied)


def errata_table() -> list[dict[str, str]]:
    """The table as rows, for reports and `frames --list`-style printing."""
    return [
        {"id": e.id, "source": e.source, "where": e.where, "problem": e.problem, "fix": e.fix}
        for e in ERRATA
    ]

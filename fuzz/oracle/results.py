"""DIGEST sections 3, 4, 9.6: resultType, result schemas, caching hints, discover (RT-*, CACHE-*, DISC-*).

Every rule here judges only results of requests that carried a modern protocolVersion: a result
to a legacy-version request has no resultType by design (RT-05), and a JSON-RPC error is not a
result at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from mcp_tempest.fuzz.oracle.exchange import Exchange, Pair
from mcp_tempest.fuzz.oracle.facts import METHOD_CAPABILITY, Said, describe, is_integer
from mcp_tempest.fuzz.oracle.http import header_defects
from mcp_tempest.fuzz.oracle.list_facts import list_fact
from mcp_tempest.fuzz.oracle.model import Violation, rule
from mcp_tempest.fuzz.oracle.schemas import SchemaError, result_validator, type_validator
from mcp_tempest.strategies.json_bounds import MAX_ITEMS
from mcp_tempest.targets import wire

CORE_RESULT_TYPES: Final = frozenset({"complete", "input_required"})
LIST_METHODS: Final = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})
# Official example ReadResourceResultResponse/read-resource-result-response.json omits ttlMs and
# cacheScope that the schema requires: the spec contradicts itself (like DIGEST 18), so for
# resources/read an absent caching field is accepted; a present one must still be valid.
CACHING_OPTIONAL_BY_EXAMPLE: Final = frozenset({"resources/read"})
# Errors other rules own, so one defect gives one finding (RT-01, CACHE-*, MRTR-04).
_OWNED_REQUIRED: Final = ("'resultType'", "'ttlMs'", "'cacheScope'")
_OWNED_PATHS: Final = frozenset({"resultType", "ttlMs", "cacheScope"})


def modern_results(x: Exchange) -> list[tuple[Pair, int, Said, dict[str, Any]]]:
    """(pair, recv index, said, result) for every object result of a modern-version request."""
    found = x.memo.get("modern_results")
    if found is None:
        found = [
            (pair, i, said, said.result)
            for pair in x.pairs
            if pair.sent.kind == "request" and pair.sent.modern
            for i, said in x.answers(pair)
            if said.kind == "result" and isinstance(said.result, dict)
        ]
        x.memo["modern_results"] = found
    return found


@rule("RT-01", "MUST", "every result of a modern request has a resultType string")
def rt_01(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for pair, i, _, result in modern_results(x):
        if "resultType" not in result:
            out.append(Violation("RT-01", "MUST", "result without resultType",
                                 f"request carried protocolVersion {pair.sent.version}", pair.method, i))
        elif not isinstance(result["resultType"], str):
            out.append(Violation("RT-01", "MUST", "resultType is not a string",
                                 f"resultType is {describe(result['resultType'])}", pair.method, i))
    return out


@rule("RT-04", "MUST", "resultType is complete or input_required unless an extension defines more")
def rt_04(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    server_ext = x.server_capabilities.get("extensions") if x.server_capabilities else None
    for pair, i, _, result in modern_results(x):
        value = result.get("resultType")
        if not isinstance(value, str) or value in CORE_RESULT_TYPES:
            continue
        client_ext = pair.sent.capabilities.get("extensions")
        if client_ext or server_ext:
            continue  # an extension in play may define this value (RT-03)
        out.append(Violation("RT-04", "MUST", f"unknown resultType {value!r}",
                             "no extension was declared by the request or advertised by the server",
                             pair.method, i))
    return out


def _owned(err: SchemaError, result_type: Any) -> bool:
    if err.validator == "required" and not err.path and err.message.startswith(_OWNED_REQUIRED):
        return True
    if err.path and err.path[0] in _OWNED_PATHS:
        return True
    return result_type == "input_required" and bool(err.path) and err.path[0] == "inputRequests"


@rule("RT-06", "MUST", "a result validates against the schema its resultType selects (TOOL-04/08, RES-02/03, "
      "PR-02/03, DISC-03, completion)")
def rt_06(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for pair, i, _, result in modern_results(x):
        value = result.get("resultType", "complete")
        if value not in CORE_RESULT_TYPES or pair.method is None:
            continue
        if value == "input_required" and pair.method not in wire.INPUT_REQUIRED_METHODS:
            continue  # MRTR-01
        validate = result_validator(pair.method, value)
        if validate is None:
            continue
        errors = [e for e in [*validate(result), *_items_past_the_first(x, pair.method, value, result)]
                  if not _owned(e, value)]
        if errors:
            shown = "; ".join(f"{e.where()}: {e.message[:120]}" for e in errors[:3])
            more = f" (+{len(errors) - 3} more)" if len(errors) > 3 else ""
            out.append(Violation("RT-06", "MUST", f"{value} result of {pair.method} fails its schema",
                                 shown + more, pair.method, i))
    return out


# Each list result's item type (DIGEST 9.1-9.3), for the items a result's validator leaves out.
LIST_ITEM_TYPES: Final = {"tools/list": ("tools", "Tool"), "prompts/list": ("prompts", "Prompt"),
                          "resources/list": ("resources", "Resource"),
                          "resources/templates/list": ("resourceTemplates", "ResourceTemplate")}
# Items of one list page RT-06 validates: a validator judges a result's lists by their first
# MAX_ITEMS items (schemas.type_validator); the items after them, up to this many, are validated
# here, once per distinct page (list_facts), so a list of a few thousand is judged whole and
# 100,000 tools cost their first JUDGED_ITEMS once per campaign, not on every example.
JUDGED_ITEMS: Final = 10_000


def _items_past_the_first(x: Exchange, method: str, result_type: Any, result: dict[str, Any]) -> list[SchemaError]:
    """Schema errors of a complete list result's items past the first MAX_ITEMS (the result's own
    validator judged those), each at its place in the result ("tools/300/name")."""
    key, type_name = LIST_ITEM_TYPES.get(method, ("", ""))
    items = result.get(key) if key and result_type == "complete" else None
    if not isinstance(items, list) or len(items) <= MAX_ITEMS:
        return []
    validate = type_validator(type_name)
    if validate is None:
        return []

    def errors(page: list[Any]) -> tuple[SchemaError, ...]:
        return tuple(SchemaError((key, j, *e.path), e.validator, e.message)
                     for j in range(MAX_ITEMS, min(len(page), JUDGED_ITEMS)) for e in validate(page[j]))

    return list(list_fact(x, items, f"item-errors:{type_name}", errors))


def cacheable_complete(x: Exchange) -> Iterator[tuple[Pair, int, dict[str, Any]]]:
    for pair, i, _, result in modern_results(x):
        if pair.method in wire.CACHEABLE_METHODS and result.get("resultType", "complete") == "complete":
            yield pair, i, result


@rule("CACHE-01", "MUST", "complete results of cacheable methods carry ttlMs and cacheScope")
def cache_01(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for pair, i, result in cacheable_complete(x):
        if pair.method in CACHING_OPTIONAL_BY_EXAMPLE:
            continue
        missing = [k for k in ("ttlMs", "cacheScope") if k not in result]
        if missing:
            out.append(Violation("CACHE-01", "MUST", f"cacheable result without {' and '.join(missing)}",
                                 "", pair.method, i))
    return out


@rule("CACHE-02", "MUST", "ttlMs is an integer >= 0")
def cache_02(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for pair, i, result in cacheable_complete(x):
        if "ttlMs" in result:
            ttl = result["ttlMs"]
            if not is_integer(ttl) or ttl < 0:
                out.append(Violation("CACHE-02", "MUST", "ttlMs is not an integer >= 0",
                                     f"ttlMs is {describe(ttl)}", pair.method, i))
    return out


@rule("CACHE-03", "MUST", 'cacheScope is "public" or "private"')
def cache_03(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for pair, i, result in cacheable_complete(x):
        if "cacheScope" in result and result["cacheScope"] not in ("public", "private"):
            out.append(Violation("CACHE-03", "MUST", "cacheScope is not public or private",
                                 f"cacheScope is {describe(result['cacheScope'])}", pair.method, i))
    return out


@rule("CACHE-04", "MUST", "all pages of one list share the same cacheScope", scope="transcript")
def cache_04(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    scope_after: dict[tuple[str, str], Any] = {}  # (method, cursor it handed out) -> that page's scope
    for pair, i, result in cacheable_complete(x):
        if pair.method not in LIST_METHODS:
            continue
        scope = result.get("cacheScope")
        cursor = pair.sent.params.get("cursor") if pair.sent.params else None
        if isinstance(cursor, str) and (pair.method, cursor) in scope_after:
            before = scope_after[(pair.method, cursor)]
            if before in ("public", "private") and scope in ("public", "private") and before != scope:
                out.append(Violation("CACHE-04", "MUST", "pages of one list differ in cacheScope",
                                     f"previous page {before!r}, this page {scope!r}", pair.method, i))
        next_cursor = result.get("nextCursor")
        if isinstance(next_cursor, str):
            scope_after[(pair.method, next_cursor)] = scope
    return out


@rule("DISC-04", "SHOULD", "serverInfo lives in result._meta, not in the discover body")
def disc_04(x: Exchange) -> list[Violation]:
    return [
        Violation("DISC-04", "SHOULD", "server/discover result has a top-level serverInfo",
                  f"serverInfo belongs in _meta[{wire.META_SERVER_INFO!r}]", pair.method, i)
        for pair, i, _, result in modern_results(x)
        if pair.method == "server/discover" and "serverInfo" in result
    ]


@rule("DISC-01", "MUST", "every server implements server/discover")
def disc_01(x: Exchange) -> list[Violation]:
    out: list[Violation] = []
    for pair in x.pairs:
        if pair.method != "server/discover" or not pair.sent.well_formed_request or not pair.sent.modern:
            continue
        if header_defects(pair):
            continue
        for i, said in x.answers(pair):
            if said.code == wire.METHOD_NOT_FOUND:
                out.append(Violation("DISC-01", "MUST", "server/discover answered -32601",
                                     "every 2026-07-28 server implements server/discover", pair.method, i))
    return out


# Methods a server with the capability may well not implement (no templates, no subscriptions):
# -32601 for them is no finding at all.
OPTIONAL_WITHIN_CAPABILITY: Final = frozenset({"resources/templates/list", "resources/subscribe",
                                              "resources/unsubscribe"})


@rule("DISC-07", "MUST", "methods are served exactly when their server capability is advertised")
def disc_07(x: Exchange) -> list[Violation]:
    if x.server_capabilities is None:
        return []
    out: list[Violation] = []
    for pair in x.pairs:
        capability = METHOD_CAPABILITY.get(pair.method or "")
        if capability is None or not pair.sent.modern or pair.sent.kind != "request":
            continue
        strength = "SHOULD" if capability == "completions" else "MUST"
        advertised = x.advertised(capability)
        for i, said in x.answers(pair):
            if said.kind == "result" and not advertised:
                out.append(Violation("DISC-07", strength, f"{pair.method} served without the {capability!r} capability",
                                     "server/discover did not advertise it; expected -32601", pair.method, i))
            elif said.code == wire.METHOD_NOT_FOUND and advertised and pair.sent.well_formed_request \
                    and not header_defects(pair) and pair.method not in OPTIONAL_WITHIN_CAPABILITY:
                # DISC-07 states the converse only (no capability: -32601); that every method of an
                # advertised capability exists is a reading, not a rule: a heuristic.
                out.append(Violation("DISC-07", "HEURISTIC",
                                     f"{pair.method} answered -32601 though {capability!r} is advertised",
                                     "a method of an advertised capability is expected to exist", pair.method, i))
    return out

"""What the oracle's list rules read of one page of a list, computed once per distinct content.

Why: a transcript of the `lists` property holds the same tools/list page three to five times, and
every example of a campaign receives it again. Six rules (TOOL-02/03/06/09/10/11, PR-01, RT-06)
each walked every item of every page: for 100,000 tools that was the oracle's share of every
example, proportional to the whole list. Here each rule's facts of a page (its names, where each
tool's schemas are, its items' schema errors) are computed from the first page with that content
and reused, within a transcript and across examples, for every page with the same content:

- a page `Transcript.add` shared (targets.transcript.SharedItems: big list results, by a digest
  of their JSON) is known by that digest, in a small process-wide cache;
- any other page (a small one, a transcript loaded from a file) by its list object, for the one
  judgement (`Exchange.memo`).

Facts are positions and names, never copies of items: a cached fact applied to another page with
the same digest points at the same items, since equal digests are equal JSON.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final, TypeVar

from mcp_tempest.fuzz.oracle.exchange import Exchange

T = TypeVar("T")

# Distinct (fact, content) pairs kept across judgements. A fact of 100,000 tools is a few MB (a
# name index); a campaign rarely sees more than a couple of distinct big pages at a time.
CACHE_ENTRIES: Final = 16
_CACHE: OrderedDict[tuple[str, bytes], Any] = OrderedDict()
_LOCK = threading.Lock()


def list_fact(x: Exchange, items: list[Any], fact: str, compute: Callable[[list[Any]], T]) -> T:
    """`compute(items)`, made once per distinct content of `items` (see the module's docstring).
    `fact` names what `compute` computes; it must depend on nothing but the items."""
    digest = x.transcript.shared.digest(items)
    if digest is None:
        key = ("list-fact", fact, id(items))
        held = x.memo.get(key)
        if held is not None and held[0] is items:
            return held[1]  # type: ignore[no-any-return]
        value = compute(items)
        x.memo[key] = (items, value)  # the items held with it: the id stays theirs while judging
        return value
    with _LOCK:
        if (fact, digest) in _CACHE:
            _CACHE.move_to_end((fact, digest))
            return _CACHE[(fact, digest)]  # type: ignore[no-any-return]
    value = compute(items)
    with _LOCK:
        _CACHE[(fact, digest)] = value
        while len(_CACHE) > CACHE_ENTRIES:
            _CACHE.popitem(last=False)
    return value


def clear_cache() -> None:
    """Forget every cached fact (tests that judge the same content with another rule set)."""
    with _LOCK:
        _CACHE.clear()


# --- the facts ---


def names_of(field: str) -> Callable[[list[Any]], tuple[tuple[str, ...], frozenset[str]]]:
    """`str(item[field])` of each object item, in order, and as a set (TOOL-02, TOOL-03, PR-01)."""

    def compute(items: list[Any]) -> tuple[tuple[str, ...], frozenset[str]]:
        names = tuple(str(item.get(field)) for item in items if isinstance(item, dict))
        return names, frozenset(names)

    compute.__name__ = f"names_of_{field}"
    return compute


def names_all_strings(items: list[Any]) -> bool:
    """Whether every object item is named by a string: then `string_names` is `names_of("name")`'s
    set, and one cached set serves both (150,000 names are 8 MB a set)."""
    return all(isinstance(t.get("name"), str) for t in items if isinstance(t, dict))


def string_names(items: list[Any]) -> frozenset[str]:
    """The names that are strings, of the object items (a complete listing, TOOL-09)."""
    return frozenset(t["name"] for t in items if isinstance(t, dict) and isinstance(t.get("name"), str))


def input_schema_at(items: list[Any]) -> dict[str, int]:
    """Per tool name: where its inputSchema is, or -1 when the page lists the name with a schema
    that is not an object, or twice with different schemas (TOOL-10 then judges none of its calls)."""
    at: dict[str, int] = {}
    for j, tool in enumerate(items):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            continue
        name, schema = tool["name"], tool.get("inputSchema")
        if not isinstance(schema, dict):
            at[name] = -1
            continue
        k = at.get(name)
        if k is None:
            at[name] = j
        elif k >= 0 and items[k]["inputSchema"] != schema:
            at[name] = -1
    return at


def all_objects(items: list[Any]) -> bool:
    """Whether every item is an object: then `names_of`'s tuple is indexed like the items."""
    return all(isinstance(t, dict) for t in items)


def schema_position(items: list[Any], names: tuple[str, ...], name: str) -> int | None:
    """`input_schema_at(items).get(name)` for one name, by C-level scans of the page's names
    (`names_of("name")` of a page whose items are all objects), so that no index of every name
    of a 150,000-tool page is built and held for the few tools a transcript calls."""
    found: int | None = None
    k = -1
    while True:
        try:
            k = names.index(name, k + 1)
        except ValueError:
            return found
        tool = items[k]
        if not isinstance(tool.get("name"), str):
            continue  # a name that only prints the same (str(5) == "5"): not this tool
        schema = tool.get("inputSchema")
        if not isinstance(schema, dict):
            return -1
        if found is None:
            found = k
        elif items[found]["inputSchema"] != schema:
            return -1


def output_schema_at(items: list[Any]) -> dict[str, int]:
    """Per tool name: where its last object outputSchema is (TOOL-11)."""
    return {t["name"]: j for j, t in enumerate(items)
            if isinstance(t, dict) and isinstance(t.get("name"), str) and isinstance(t.get("outputSchema"), dict)}

"""A list page is parsed once and held once, however often it is received (issue 30, item 3).

Against tests/hostile/hostile_list.py (a real server): the campaign's era probe measures the
catalogue a page at a time and keeps no item, and what it measures is what `catalogue` measures
of the lists held whole, to the byte; a page received again (another process, another id) is
taken from the one held, not parsed again, and its bytes are shared, while every message and
every byte a transcript writes is the same as before.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import orjson
import pytest
from fuzz_support import PYTHON

from mcp_tempest.fuzz.catalogue import LIST_CHUNK_CHARS, Catalogue, Definitions, Meter
from mcp_tempest.fuzz.catalogue_compare import saved_definitions
from mcp_tempest.targets import wire
from mcp_tempest.targets.endpoints import open_endpoint
from mcp_tempest.targets.probe import CATALOGUE_LISTS, probe
from mcp_tempest.targets.target_spec import parse_target
from mcp_tempest.targets.transcript import (
    DIGEST_ITEMS,
    SHARE_BYTES,
    Spliced,
    Transcript,
    content_digest,
    parse_received,
)
from mcp_tempest.targets.wire import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, MODERN_VERSION

HOSTILE_LIST = Path(__file__).resolve().parent / "hostile" / "hostile_list.py"


def hostile(*options: str) -> str:
    return "stdio:" + shlex.join([PYTHON, str(HOSTILE_LIST), *options])


def list_pages(t: Transcript) -> list[Any]:
    """The events that received a tools/list page (told from their bytes: a page let go has no message)."""
    def page(raw: bytes) -> bool:
        result = wire.parse_line(raw).get("result")
        return isinstance(result, dict) and isinstance(result.get("tools"), list)

    return [e for e in t.events if e.kind == "recv" and e.raw is not None and page(e.raw)]


# --- the campaign's era probe: page by page, nothing kept ---


def test_a_probe_that_takes_pages_keeps_no_item_and_its_transcript_writes_the_same() -> None:
    spec = parse_target(hostile("--tools", "3000", "--page", "700"))
    taken: list[tuple[str, list[Any]]] = []
    t = spec.new_transcript()
    result = probe(spec, timeout=20, lists=CATALOGUE_LISTS, transcript=t, check_dual=False,
                   take=lambda name, items: taken.append((name, list(items))))
    kept = probe(spec, timeout=20, lists=CATALOGUE_LISTS, check_dual=False)
    (read,) = result.list_reads[0].values()
    assert read.items == [] and read.count == 3000 and read.pages == 5 and read.complete
    assert [name for name, _ in taken] == ["tools"] * 5
    assert [item for _, items in taken for item in items] == kept.list_reads[0]["tools"].items
    pages = list_pages(t)
    assert len(pages) == 5 and all(e.message is None for e in pages)  # the bytes alone are held
    loaded = Transcript.from_json(orjson.loads(orjson.dumps(t.to_json())))
    assert [e.message["result"]["tools"] for e in list_pages(loaded)] == [items for _, items in taken]


def test_the_catalogue_measured_page_by_page_is_the_one_measured_whole() -> None:
    """Five pages whose tools, as one list, are longer than LIST_CHUNK_CHARS: the pieces counted cut
    across pages as across items; every figure and the definitions' bytes are the same."""
    spec = parse_target(hostile("--tools", "13000", "--page", "3000"))
    meter = Meter()
    result = probe(spec, timeout=30, lists=CATALOGUE_LISTS, check_dual=False, take=meter.take)
    paged = meter.catalogue(result)
    whole = Catalogue.from_probe(probe(spec, timeout=30, lists=CATALOGUE_LISTS, check_dual=False))
    items = whole.items["tools"]
    assert len(items) == 13000 and len(orjson.dumps(items)) > LIST_CHUNK_CHARS
    assert paged.to_json() == whole.to_json()
    assert paged.tools_list_cost == whole.tools_list_cost and paged.turn_tokens == whole.turn_tokens
    definitions = meter.saved_definitions(result.instructions)
    assert definitions == orjson.dumps({**whole.items, "instructions": whole.instructions})
    assert orjson.dumps({"d": saved_definitions(whole)}) == b'{"d":' + definitions + b"}"


def test_definitions_orjson_cannot_write_are_written_by_the_standard_encoder() -> None:
    tools = [{"name": "a", "description": "lone \ud800 surrogate"}, {"name": "b", "n": 2**70}]
    out = Definitions(["tools", "prompts"])
    out.add("tools", tools[:1])
    out.add("tools", tools[1:])
    assert json.loads(out.encoded("hi")) == {"tools": tools, "prompts": [], "instructions": "hi"}


# --- a page received again ---


def list_request(i: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/list",
            "params": {"_meta": {META_PROTOCOL_VERSION: MODERN_VERSION, META_CLIENT_CAPABILITIES: {}}}}


def test_a_page_received_again_is_taken_from_the_one_held_and_shares_its_bytes() -> None:
    endpoint = open_endpoint(parse_target(hostile("--tools", "2000")), timeout=20)
    t = endpoint.new_transcript()
    try:
        for n in range(3):  # three processes: three ids, one page
            with endpoint.fresh(t) as conn:
                assert conn.request(list_request(n + 1), timeout=20) is not None
    finally:
        endpoint.close()
    first, *again = list_pages(t)
    assert first.raw_size() >= SHARE_BYTES and isinstance(first.held, bytes) and len(again) == 2
    for e in again:
        assert isinstance(e.held, Spliced) and e.held.base is first.held  # the bytes held once
        assert e.message["result"]["tools"] is first.message["result"]["tools"]  # the list parsed once
        assert e.message == wire.parse_line(e.raw) and e.raw_size() == len(e.raw)  # what parsing makes
    assert [e.message["id"] for e in (first, *again)] == [1, 2, 3]
    loaded = Transcript.from_json(orjson.loads(orjson.dumps(t.to_json())))
    assert [(e.raw, e.message) for e in loaded.events] == [(e.raw, e.message) for e in t.events]


def line(rid: int, tools: list[Any], *, id_last: bool = False, meta: Any = None) -> bytes:
    result = orjson.dumps({"resultType": "complete", "tools": tools, "_meta": meta or {"x": 1}})
    if id_last:
        return b'{"jsonrpc": "2.0", "result": ' + result + b', "id": ' + str(rid).encode() + b"}\r"
    return b'{"jsonrpc":"2.0","id":' + str(rid).encode() + b',"result":' + result + b"}"


TOOLS = [{"name": f"tool_{i}", "description": f"Tool number {i}.", "inputSchema": {"type": "object"}} for i in range(2000)]


@pytest.mark.parametrize("id_last", [False, True], ids=["id-first", "id-last"])
def test_only_the_very_same_result_is_taken(id_last: bool) -> None:
    t = Transcript("t", "stdio")
    r1 = line(1, TOOLS, id_last=id_last)
    t.add("recv", message=parse_received(r1, line=True), raw=r1)
    same, other_meta, other_item = (line(7, TOOLS, id_last=id_last),
                                    line(8, TOOLS, id_last=id_last, meta={"x": 2}),
                                    line(9, [*TOOLS[:-1], {"name": "x"}], id_last=id_last))
    for raw in (same, other_meta, other_item):
        message = parse_received(raw, line=True)
        assert message == wire.parse_line(raw)
        t.add("recv", message=message, raw=raw)
        assert t.events[-1].raw == raw
    held = t.events[0].message["result"]["tools"]
    assert [isinstance(e.held, Spliced) for e in t.events] == [False, True, False, False]
    # parsed whole, an equal list is still shared (SharedItems), a different one item by item
    assert [e.message["result"]["tools"] is held for e in t.events[1:]] == [True, True, False]
    assert t.events[3].message["result"]["tools"][0] is held[0]


def test_a_digest_written_in_pieces_is_the_digest_of_the_whole() -> None:
    import hashlib

    for n in (0, 1, DIGEST_ITEMS, DIGEST_ITEMS + 1, 3 * DIGEST_ITEMS + 5):
        value = TOOLS[:n] if n <= len(TOOLS) else TOOLS * (n // len(TOOLS)) + TOOLS[:n % len(TOOLS)]
        assert content_digest(value) == hashlib.blake2b(orjson.dumps(value), digest_size=16).digest()
    assert content_digest(["\ud800"] * (DIGEST_ITEMS + 1)) is None

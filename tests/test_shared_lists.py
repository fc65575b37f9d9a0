"""A big list received again and again is held once, judged once per content, and reported in
excerpt (issue 30, items 1-2).

Against tests/hostile/hostile_list.py (a real server): the pages of one list received on several
processes, and in two transcripts, are one parsed list; the oracle judges a 300-tool list whole
(RT-06 used to stop at MAX_ITEMS) and its facts of a page are the same from the cache as from the
page; a finding's report shows a big received message as an excerpt, its size and digest, while
its repro keeps it whole.
"""

from __future__ import annotations

import hashlib
import shlex
from pathlib import Path
from typing import Any

import orjson
import pytest
from fuzz_support import PYTHON

from mcp_tempest.fuzz.findings import (
    COUNTED_TEXT,
    Evidence,
    FindingStore,
    encode_document,
    encoded_size,
    load_repro,
)
from mcp_tempest.fuzz.oracle import list_facts
from mcp_tempest.fuzz.oracle.list_facts import input_schema_at, names_of, schema_position
from mcp_tempest.fuzz.oracle.registry import judge
from mcp_tempest.fuzz.properties.compare import Listed, list_diff, same_items_in_any_split
from mcp_tempest.fuzz.reports import REPORT_BODY_CHARS, write_reports
from mcp_tempest.strategies.json_bounds import MAX_ITEMS
from mcp_tempest.targets.endpoints import open_endpoint
from mcp_tempest.targets.target_spec import parse_target
from mcp_tempest.targets.transcript import SHARE_BYTES, Transcript
from mcp_tempest.targets.wire import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, MODERN_VERSION

HOSTILE_LIST = Path(__file__).resolve().parent / "hostile" / "hostile_list.py"


def hostile(*options: str) -> str:
    return "stdio:" + shlex.join([PYTHON, str(HOSTILE_LIST), *options])


def list_request(i: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/list",
            "params": {"_meta": {META_PROTOCOL_VERSION: MODERN_VERSION, META_CLIENT_CAPABILITIES: {}}}}


def received_pages(target: str, processes: int, transcript: Transcript | None = None) -> Transcript:
    """tools/list asked once on each of `processes` fresh processes, all in one transcript."""
    endpoint = open_endpoint(parse_target(target), timeout=20)
    transcript = transcript if transcript is not None else endpoint.new_transcript()
    try:
        for n in range(processes):
            with endpoint.fresh(transcript) as conn:
                assert conn.request(list_request(n + 1), timeout=20) is not None
    finally:
        endpoint.close()
    return transcript


def pages(t: Transcript) -> list[list[Any]]:
    return [e.message["result"]["tools"] for e in t.events
            if e.kind == "recv" and isinstance(e.message, dict) and "tools" in e.message.get("result", {})]


# --- one parsed copy ---


def test_equal_big_pages_are_one_list_across_processes_and_transcripts() -> None:
    """Was: each page its own parse (57 MB for 100,000 tools), five of them in one lists example."""
    first = received_pages(hostile("--tools", "3000"), 3)
    got = pages(first)
    assert len(got) == 3 and len(got[0]) == 3000
    assert got[1] is got[0] and got[2] is got[0]
    assert first.shared.digest(got[0]) is not None
    second = received_pages(hostile("--tools", "3000"), 1)  # another transcript, while the first lives
    assert pages(second)[0] is got[0]


def test_a_drifting_big_page_shares_its_equal_items_and_keeps_its_own() -> None:
    t = received_pages(hostile("--tools", "3000", "--drift"), 2)  # each process its own descriptions
    a, b = pages(t)
    assert a is not b and a != b
    assert [x["description"] for x in a] != [x["description"] for x in b]
    assert t.shared.digest(a) != t.shared.digest(b)


def test_small_pages_are_left_alone() -> None:
    t = received_pages(hostile("--tools", "3"), 2)
    a, b = pages(t)
    assert a is not b and a == b and t.shared.digest(a) is None
    assert all(len(e.raw or b"") < SHARE_BYTES for e in t.events if e.kind == "recv")


# --- the oracle: whole lists, once per content ---


def tool(i: int, bad: bool = False) -> dict[str, Any]:
    return {"name": f"tool_{i}", "description": "d", "inputSchema": {"type": "object"} if not bad else "oops"}


def list_transcript(tools: list[Any], copies: int = 2) -> Transcript:
    """A transcript of `copies` tools/list exchanges answered with `tools`, recorded as a driver records."""
    t = Transcript("t", "stdio")
    t.add("spawn", proc=0, note="server")
    for n in range(copies):
        req = list_request(n + 1)
        t.add("send", proc=0, message=req, raw=orjson.dumps(req))
        reply = {"jsonrpc": "2.0", "id": n + 1,
                 "result": {"resultType": "complete", "ttlMs": 0, "cacheScope": "public", "tools": list(tools)}}
        t.add("recv", proc=0, message=orjson.loads(orjson.dumps(reply)), raw=orjson.dumps(reply))
    return t


def rt_06(t: Transcript) -> list[str]:
    return [v.detail for v in judge(t) if v.rule == "RT-06"]


@pytest.mark.parametrize("count", [300, 3000])
def test_a_list_longer_than_max_items_is_judged_whole(count: int) -> None:
    """Was: RT-06 validated a result's first MAX_ITEMS items, so tool 290 of 300 went unjudged."""
    bad = count - 10
    tools = [tool(i, bad=i == bad) for i in range(count)]
    list_facts.clear_cache()
    found = rt_06(list_transcript(tools))
    assert bad > MAX_ITEMS and any(f"tools/{bad}/inputSchema" in m for m in found), found
    again = rt_06(list_transcript(tools))  # the same content: from the cache, the same verdict
    assert again == found


def test_facts_from_the_cache_are_the_facts_of_the_page() -> None:
    """TOOL-06 on a big page with a duplicate and a bad name: the same violations judged fresh, from
    the cache, and on a transcript whose pages are not shared (loaded from its JSON)."""
    tools = [tool(i) for i in range(2000)] + [tool(5), {"name": "bad name!", "inputSchema": {"type": "object"}}]
    t = list_transcript(tools)
    assert t.shared.digest(pages(t)[0]) is not None

    def tool_06(x: Transcript) -> list[tuple[str, str, int | None]]:
        return sorted((v.title, v.detail, v.event_index) for v in judge(x) if v.rule == "TOOL-06")

    list_facts.clear_cache()
    fresh = tool_06(t)
    assert {title for title, _, _ in fresh} == {"tool name outside [A-Za-z0-9_.-]{1,128}",
                                                 "tools/list names a tool twice"}
    assert tool_06(t) == fresh
    assert tool_06(Transcript.from_json(orjson.loads(orjson.dumps(t.to_json())))) == fresh


# --- lists compared by content ---


def test_listed_pages_compare_by_content_and_split() -> None:
    a, b = [{"name": "ab"}, {"name": "c"}], [{"name": "ba"}, {"name": "c"}]
    assert Listed(a, False) == Listed(orjson.loads(orjson.dumps(a)), False)
    assert Listed(a, False) != Listed(a, True) and Listed(a, False) != Listed(b, False)
    assert same_items_in_any_split(a, list(reversed(a)))
    # Was: the characters of the encodings were compared, and "ab" passed for "ba".
    assert not same_items_in_any_split(a, b)
    assert list_diff(Listed(a, False), Listed(b, False), "tools") == "extra tools: ba; missing tools: ab"


# --- findings and reports ---


@pytest.mark.parametrize("text", [
    "x" * COUNTED_TEXT,
    '{"a":"q\\"uote \\\\ back"}\n' * 4000,  # quotes and backslashes escaped, the newline too
    "".join(chr(i) for i in range(32)) * 3000,  # every control character, short and long escapes
    "é\u2028\U0001f600 ascii" * 8000,  # multi-byte UTF-8, written as is
])
def test_a_big_raw_text_is_sized_in_place_exactly_as_it_is_written(text: str) -> None:
    """The store sizes every failing example's evidence: a 12 MB page is counted where it lies,
    never encoded a second time, and the count is what the repro file will hold."""
    doc = {"target": "t", "events": [{"kind": "recv", "t": 0.5, "proc": 0, "raw": text, "note": "n"},
                                     {"kind": "send", "t": 0.1, "proc": 0, "raw": "{}"}]}
    assert len(text) >= COUNTED_TEXT
    assert encoded_size(doc) == len(encode_document(doc, indent=False)[0])


def test_evidence_the_store_does_not_keep_is_sized_from_the_live_transcript_and_never_made(tmp_path: Path) -> None:
    """Most failing examples repeat a finding filed with a smaller reproduction: their transcript
    JSON (a decoded copy of every big page) is never made, and the size that decides it is the
    one the JSON would have."""
    tools = [tool(i) for i in range(40_000)]
    fields = {"rule": "CACHE-01", "strength": "MUST", "title": "t", "method": "tools/list", "transport": "stdio",
              "mutation": None, "property": "lists", "case": {"steps": []}}
    store = FindingStore(tmp_path, target="t", seed=1)
    small, big = list_transcript(tools, copies=1), list_transcript(tools, copies=3)
    first = Evidence.of_transcript(small, **fields)
    assert first.size()[2] == len(encode_document(small.to_json(), indent=False)[0])
    found, _ = store.record(first)
    assert first.source is None and len(first.transcript["events"]) == 3  # kept: made
    larger = Evidence.of_transcript(big, **fields)
    store.record(larger)
    assert larger.transcript == {} and larger.source is None and found.evidence is first and found.count == 2
    again = Evidence.of_transcript(small, **fields)
    store.record(again)  # no larger (the same exchange): kept, made, and its repro written
    assert found.evidence is again and len(again.transcript["events"]) == 3
    assert load_repro(tmp_path / found.repro)["transcript"] == again.transcript


def test_a_schema_found_by_scanning_the_names_is_the_one_the_index_gives() -> None:
    """TOOL-10 looks up only the tools a transcript calls: by scans of the page's cached names,
    not an index of every name (10 MB at 150,000 tools), with the index's answers."""
    obj = {"type": "object"}
    page = [{"name": "a", "inputSchema": obj}, {"name": "dup", "inputSchema": obj},
            {"name": "dup", "inputSchema": dict(obj)}, {"name": "clash", "inputSchema": obj},
            {"name": "clash", "inputSchema": {"type": "object", "required": ["x"]}},
            {"name": "bad", "inputSchema": obj}, {"name": "bad", "inputSchema": "nope"},
            {"name": 5, "inputSchema": obj}, {"name": "5", "inputSchema": {"type": "object", "title": "five"}},
            {"name": "none"}, {"inputSchema": obj}]
    names = names_of("name")(page)[0]
    index = input_schema_at(page)
    for name in ("a", "dup", "clash", "bad", "5", "None", "none", "missing"):
        assert schema_position(page, names, name) == index.get(name), name
    assert [schema_position(page, names, n) for n in ("a", "dup", "clash", "bad", "5", "none")] == [0, 1, -1, -1, 8, -1]


def test_a_big_received_message_is_an_excerpt_in_the_report_and_whole_in_the_repro(tmp_path: Path) -> None:
    tools = [tool(i) for i in range(40_000)]  # about 2.6 MB: stored as its raw bytes alone
    t = list_transcript(tools, copies=1)
    raw = next(e.raw for e in t.events if e.kind == "recv")
    doc = t.to_json()
    ev = Evidence(rule="CACHE-01", strength="MUST", title="t", method="tools/list", transport="stdio",
                  mutation=None, property="valid", case={"steps": []}, transcript=doc)
    assert ev.size()[2] == len(encode_document(doc, indent=False)[0])
    store = FindingStore(tmp_path, target="t", seed=1)
    found, _ = store.record(ev)
    write_reports(tmp_path, [], store.findings, target="t", seed=1, examples=1, seconds=1.0)
    html = (tmp_path / "report.html").read_text()
    assert len(html) < 4 * REPORT_BODY_CHARS + 20_000
    assert f"{len(raw):,} bytes in all, sha256 {hashlib.sha256(raw).hexdigest()[:16]}" in html
    junit = (tmp_path / "junit.xml").read_text()
    assert len(junit) < 20_000 and f"{len(raw):,} bytes in all" in junit
    repro = load_repro(tmp_path / found.repro)
    (kept,) = [e for e in repro["transcript"]["events"] if e["kind"] == "recv"]
    assert kept["raw"].encode() == raw

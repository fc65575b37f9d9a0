"""A message of any depth is read, judged and reported without a harness error (issue 30, item 2).

orjson reads nothing deeper than 1,024 levels and writes nothing deeper than 254; Python's `==`
and `json` stop near 1,000. What a server sends is cut where it is parsed (`wire.loads`) to
MAX_WRITTEN_DEPTH, by `parse_deep` when orjson refuses it for its depth: a deep valid line is a
message (never STDIO-03 noise), a line that is not JSON still is not. The campaign-level checks
(a real server listing a schema 500 and 1,500 deep) are in test_hostile_catalogue_fuzz.py.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcp_tempest.fuzz.findings import Evidence, FindingStore
from mcp_tempest.fuzz.regression import write_regressions
from mcp_tempest.fuzz.text_flags import catalogue_texts
from mcp_tempest.targets import wire
from mcp_tempest.targets.json_depth import (
    MAX_WRITTEN_DEPTH,
    DeepJSONError,
    cut_deep,
    nesting_depth,
    parse_deep,
)


def deep_line(depth: int, leaf: str = '"leaf"') -> bytes:
    """A tools/list-shaped response whose first tool's inputSchema nests `depth` objects deep."""
    schema = '{"type":"object","properties":{"x":' * depth + leaf + "}}" * depth
    return (b'{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"t","inputSchema":'
            + schema.encode() + b'}],"nextCursor":"2"}}\n')


@pytest.mark.parametrize("depth", [150, 600])  # 300 and 1,200 levels: past orjson's writer, its reader
def test_a_valid_deep_message_is_parsed_with_its_top_levels_whole(depth: int) -> None:
    msg = wire.parse_line(deep_line(depth))
    assert msg["jsonrpc"] == "2.0" and msg["id"] == 7 and msg["result"]["nextCursor"] == "2"
    assert msg["result"]["tools"][0]["name"] == "t"
    assert nesting_depth(msg) == MAX_WRITTEN_DEPTH
    orjson.dumps(msg)  # everything downstream may encode it, and compare it
    assert msg == wire.parse_line(deep_line(depth))


@pytest.mark.parametrize(("at", "depth"), [(3000, 126), (3000, 125), (0, 126), (None, 0)])
def test_a_long_list_is_tested_for_depth_a_slice_at_a_time_and_cut_exactly_as_whole(at: int | None,
                                                                                      depth: int) -> None:
    """A 12 MB page is not written back whole to learn whether orjson can write it (a 13 to 26 MB
    buffer a page): its long result list is tried in slices inside copies of its envelope, and a
    message is cut if and only if orjson refuses the whole. Tool `at` of 5,000 nests `depth` * 2
    levels under its inputSchema: 126 is one level past what orjson writes, 125 is within."""
    tools = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(5000)]
    if at is not None:
        schema: Any = "leaf"
        for _ in range(depth):
            schema = {"properties": {"x": schema}}
        tools[at]["inputSchema"] = schema
    line = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools, "nextCursor": "n"}}) \
        if at is None or depth <= 125 else json.dumps(
            {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools, "nextCursor": "n"}}).encode()
    whole: Any = json.loads(line)
    try:
        orjson.dumps(whole)
        writable = True
    except orjson.JSONEncodeError:
        writable = False
    msg = wire.parse_line(line + b"\n")
    assert (msg == whole) is writable  # cut exactly when the whole cannot be written
    orjson.dumps(msg)
    assert msg["result"]["nextCursor"] == "n" and len(msg["result"]["tools"]) == 5000


def test_a_deep_line_that_is_not_json_is_still_refused() -> None:
    line = deep_line(600)
    for broken in (line[:-3], line.replace(b'"x":', b'"x"', 1), line.replace(b"}}", b"},}", 1)):
        with pytest.raises(wire.DecodeError) as info:
            wire.parse_line(broken)
        assert info.value.reason.startswith("not JSON")


def test_a_shallow_message_is_not_copied() -> None:
    raw = deep_line(20)
    assert wire.loads(raw.strip()) == orjson.loads(raw)


def random_json(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth > 7 or r < 0.3:
        return rng.choice([0, -1, 2.5e-10, 12345678901234567890, "", "a\u00e9\"\\\n\u2028", True, False, None])
    if r < 0.65:
        return {f"k{i}": random_json(rng, depth + 1) for i in range(rng.randint(0, 3))}
    return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def test_parse_deep_reads_what_orjson_reads_and_cuts_as_cut_deep() -> None:
    rng = random.Random(1)
    for _ in range(500):
        value = random_json(rng)
        for text in (orjson.dumps(value), json.dumps(value, indent=rng.choice([None, 2])).encode()):
            for limit in (2, 3, 5, MAX_WRITTEN_DEPTH):
                assert parse_deep(text, limit) == cut_deep(orjson.loads(text), limit)[0]


@pytest.mark.parametrize("text", [b"", b"[1,]", b"{", b"[1 2]", b'{"a" 1}', b'{"a":1,}', b"nul", b"01", b'"\\x"',
                                  b'"\xff"', b"[1]]", b"{1:2}", b'"\\ud800"', b"NaN", b"[-]", b'"a\nb"', b"1.", b"["])
def test_parse_deep_refuses_what_orjson_refuses(text: bytes) -> None:
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(text)
    with pytest.raises(DeepJSONError):
        parse_deep(text)


def test_catalogue_texts_take_any_depth() -> None:
    """Was: RecursionError in text_flags._strings on a definition about 1,000 levels deep."""
    deep: Any = "hidden\u202e"
    for _ in range(3000):
        deep = {"a": [deep]}
    texts = list(catalogue_texts({"tools": [{"name": "t", "inputSchema": deep}]}, None))
    assert texts[-1].text == "hidden\u202e" and texts[-1].where == "tool t: inputSchema" + ".a.0" * 3000


def evidence(rule: str) -> Evidence:
    return Evidence(rule=rule, strength="MUST", title="no answer", method="tools/list", transport="stdio",
                    mutation=None, property="valid", case={"steps": []},
                    transcript={"target": "t", "transport": "stdio", "events": []})


def test_write_regressions_skips_a_finding_without_a_repro(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Was: a finding with `repro_missing` ended `--write-regressions` with a traceback."""
    out = tmp_path / "out"
    store = FindingStore(out, target="t", seed=1)
    lost, _ = store.record(evidence("RPC-01"))
    (out / lost.repro).unlink()
    (out / lost.repro).mkdir()  # the repro's path is taken: the rewrite below fails
    store.record(evidence("RPC-01"))
    kept, _ = store.record(evidence("RPC-02"))
    assert "repro_missing" in orjson.loads((out / "findings.json").read_bytes())["findings"][0]
    dest = tmp_path / "tests"
    dest.mkdir()
    written = write_regressions(out, dest)
    assert [p.name for p in written] == [f"test_mcp_tempest_{kept.id.lower().replace('-', '_')}.py"]
    assert f"no regression test for finding {lost.id}: its repro could not be written" in capsys.readouterr().err

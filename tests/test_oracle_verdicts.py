"""Verdicts of issue 9, each with its firing and its silent twin: pairing of id-less replies,
timeouts as structured events, the server's duty as the rule, UNSPEC reactions, two defects."""

from __future__ import annotations

from typing import Any

from mcp_tempest.fuzz.oracle import Expectation, judge
from mcp_tempest.fuzz.oracle.craft import Crafter
from mcp_tempest.fuzz.oracle.exchange import build_exchange
from mcp_tempest.strategies.malformed import MUTATIONS
from mcp_tempest.targets import wire

DISCOVER = {"resultType": "complete", "supportedVersions": [wire.MODERN_VERSION], "ttlMs": 0,
            "cacheScope": "public", "capabilities": {"tools": {}, "resources": {}},
            "_meta": {wire.META_SERVER_INFO: {"name": "t", "version": "1"}}}
LIST = {"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "public",
        "_meta": {wire.META_SERVER_INFO: {"name": "t", "version": "1"}}}


def _exp(name: str, transport: str = "stdio") -> Expectation:
    if name == "blank-line":  # the framing property's own probe (fuzz/properties/framing.py)
        return Expectation("error-or-ignore", "STDIO-02", mutation="blank-line")
    return MUTATIONS[name].expect.for_transport(transport)


def _parse_error() -> dict[str, Any]:
    return {"jsonrpc": "2.0", "error": {"code": wire.PARSE_ERROR, "message": "Parse error"}}


def _framing_case(*, blank_first: bool, answered: bool) -> tuple[Crafter, dict[int, Expectation]]:
    """[blank line,] discover, truncated JSON, discover: what the framing property sends."""
    c = Crafter("stdio")
    c.spawn()
    exps: dict[int, Expectation] = {}
    if blank_first:
        exps[c.send(None, raw=b"\n")] = _exp("blank-line")
    c.exchange(wire.build_request(1, "server/discover"), wire.build_result(1, DISCOVER))
    exps[c.send(None, raw=b'{"jsonrpc":"2.0","id":2,"me\n')] = _exp("truncated-json")
    c.send(wire.build_request(3, "server/discover"))
    if answered:
        c.recv(_parse_error())
    c.recv(wire.build_result(3, DISCOVER))
    return c, exps


def test_an_idless_error_two_frames_could_have_drawn_is_attributed_to_neither() -> None:
    c, exps = _framing_case(blank_first=True, answered=True)
    x = build_exchange(c.transcript, expectations=exps)
    assert len(x.ambiguous) == 1 and all(x.pair_at[i].maybe_answered for i in x.ambiguous[0][1])
    assert judge(c.transcript, expectations=exps) == []


def test_one_candidate_frame_takes_the_idless_error_and_its_silence_is_seen() -> None:
    c, exps = _framing_case(blank_first=False, answered=True)
    assert judge(c.transcript, expectations=exps) == []
    c, exps = _framing_case(blank_first=False, answered=False)
    found = judge(c.transcript, expectations=exps)
    assert [(v.rule, v.strength, v.probe, v.probe_rule) for v in found] == [
        ("RPC-01", "SHOULD", "truncated-json", "RPC-01")], found


def test_silence_after_a_blank_line_and_a_malformed_frame_is_still_seen() -> None:
    """Ambiguity needs a reply: with none at all, both frames are provably unanswered."""
    c, exps = _framing_case(blank_first=True, answered=False)
    found = judge(c.transcript, expectations=exps)
    assert [(v.rule, v.probe) for v in found] == [("RPC-01", "truncated-json")], found


def test_a_huge_frame_refused_at_once_without_its_id_is_allowed() -> None:
    c = Crafter("stdio")
    c.spawn()
    huge = wire.build_request(5, "tools/list", {"_meta": {"pad": "x" * (11 << 20)}})
    s = c.send(huge)
    c.recv({"jsonrpc": "2.0", "error": {"code": wire.INVALID_REQUEST, "message": "line too long"}})
    c.exchange(wire.build_request(6, "server/discover"), wire.build_result(6, DISCOVER))
    assert judge(c.transcript, expectations={s: _exp("huge-frame")}) == []
    # The same id-less error for a small valid request is still an error that omits a readable id.
    c = Crafter("stdio")
    c.spawn()
    c.send(wire.build_request(5, "tools/list"))
    c.recv({"jsonrpc": "2.0", "error": {"code": wire.INVALID_REQUEST, "message": "no"}})
    assert "RPC-07" in {v.rule for v in judge(c.transcript)}


def test_a_process_that_exits_on_a_huge_frame_is_a_heuristic_a_small_one_a_must() -> None:
    """DIGEST sets no frame size limit: dying on an 11 MiB line is robustness (HEURISTIC); dying
    on a small valid request provably leaves it unanswered (MUST)."""
    for pad, strength in ((11 << 20, "HEURISTIC"), (10, "MUST")):
        c = Crafter("stdio")
        c.spawn()
        c.send(wire.build_request(5, "tools/list", {"_meta": {"pad": "x" * pad}}))
        c.closed()
        c.exit(0, "exited by itself")
        found = [(v.rule, v.strength, v.title, v.reaction) for v in judge(c.transcript)]
        assert found == [("RPC-01", strength, "request never answered", "the process exited before answering")], (
            pad, found)


def test_a_timeout_is_read_by_its_ref_never_by_its_note() -> None:
    for transport in ("stdio", "http"):
        c = Crafter(transport)
        c.spawn()
        c.exchange(wire.build_request(1, "server/discover"), wire.build_result(1, DISCOVER), **(
            {"status": 200} if transport == "http" else {}))
        s = c.send(wire.build_request(2, "tools/list"))
        c.timeout("whatever the driver wrote", ref=s)
        found = judge(c.transcript)
        assert [(v.rule, v.strength, v.title, v.reaction, v.event_index) for v in found] == [
            ("RPC-01", "SHOULD", "request never answered", "no reply before the deadline", s)], (transport, found)
        # A timeout that waited for another frame says nothing about this one.
        c = Crafter(transport)
        c.spawn()
        first = c.send(wire.build_request(1, "server/discover"))
        c.send(wire.build_request(2, "tools/list"))
        c.recv(wire.build_result(2, LIST), **({"status": 200} if transport == "http" else {}))
        c.timeout("response to id 2", ref=first)
        assert [v.event_index for v in judge(c.transcript) if v.title == "request never answered"] == [first]


def test_a_process_that_exits_with_a_request_outstanding_is_a_must() -> None:
    c = Crafter("stdio")
    c.spawn()
    s = c.send(wire.build_request(1, "server/discover"))
    c.closed()
    c.exit(1, "exited by itself")
    assert [(v.rule, v.strength, v.event_index) for v in judge(c.transcript)] == [("RPC-01", "MUST", s)]


def test_a_batch_reaction_is_unspec_and_never_judged() -> None:
    c = Crafter("stdio")
    c.spawn()
    s = c.send([])
    c.exchange(wire.build_request(2, "server/discover"), wire.build_result(2, DISCOVER))
    assert judge(c.transcript, expectations={s: _exp("batch-empty")}) == []


def test_templates_list_answered_32601_is_no_finding_but_an_advertised_core_method_is_a_heuristic() -> None:
    c = Crafter("stdio")
    c.spawn()
    c.exchange(wire.build_request(1, "server/discover"), wire.build_result(1, DISCOVER))
    c.exchange(wire.build_request(2, "resources/templates/list"),
               wire.build_error(2, wire.METHOD_NOT_FOUND, "Method not found"))
    assert judge(c.transcript) == []
    c.exchange(wire.build_request(3, "tools/list"), wire.build_error(3, wire.METHOD_NOT_FOUND, "Method not found"))
    assert [(v.rule, v.strength) for v in judge(c.transcript)] == [("DISC-07", "HEURISTIC")]


def _completion_with_mismatched_header(status: int) -> tuple[Crafter, dict[int, Expectation]]:
    c = Crafter("http")
    c.spawn("http://127.0.0.1:1/mcp")
    c.exchange(wire.build_request(1, "server/discover"), wire.build_result(1, DISCOVER), status=200)
    msg = wire.build_request(2, "completion/complete", {"ref": {"type": "ref/prompt", "name": "p"},
                                                        "argument": {"name": "a", "value": ""}})
    headers = {**wire.http_headers(msg), "MCP-Protocol-Version": "2025-06-18"}
    s = c.send(msg, headers=headers)
    c.recv(wire.build_error(2, wire.METHOD_NOT_FOUND, "Method not found"), status=status)
    return c, {s: _exp("hdr-version-mismatch", "http")}


def test_a_request_with_two_defects_answered_for_the_other_defect_stands() -> None:
    """DIGEST 2: no completions capability and a mismatched header; -32601 with 404 answers the
    first defect as listed, so neither HDR-01 nor its status is owed."""
    c, exps = _completion_with_mismatched_header(404)
    assert judge(c.transcript, expectations=exps) == []
    c, exps = _completion_with_mismatched_header(200)  # -32601 with 200 breaks HDR-05 still
    assert "HDR-05" in {v.rule for v in judge(c.transcript, expectations=exps)}


def test_an_unexplained_reply_on_a_reused_process_is_late_never_a_finding() -> None:
    """A warm process (spawn note "(reused)") may still be answering an earlier example: a reply
    with an id this transcript never sent is unattributable there, and an RPC-06 MUST on a fresh one."""
    for note, expected in (("python server.py (reused)", []), ("python server.py", ["RPC-06"])):
        c = Crafter("stdio")
        c.spawn(note)
        c.send(wire.build_request(1, "server/discover"))
        c.recv(wire.build_result("g1", LIST))
        c.recv(wire.build_result(1, DISCOVER))
        assert [v.rule for v in judge(c.transcript)] == expected, note


def test_a_dual_era_process_opened_by_a_legacy_readable_frame_may_keep_to_that_era() -> None:
    """VER-05: a dual-era server picks the era from how the client opens, scoped to the process.
    Opened by a request with no protocolVersion claim, the TypeScript SDK answered a later modern
    server/discover -32601 on that process: a 2025-era reading, never DISC-01 against a dual-era
    target; the same transcript from a modern-only target is the MUST."""
    c = Crafter("stdio")
    c.spawn()
    c.exchange({"jsonrpc": "2.0", "id": 0, "method": "server/discover"},
               wire.build_error(0, wire.METHOD_NOT_FOUND, "Method not found"))
    _, answer = c.exchange(wire.build_request(1, "server/discover"),
                           wire.build_error(1, wire.METHOD_NOT_FOUND, "Method not found"))
    assert ("DISC-01", "MUST", answer) in [(v.rule, v.strength, v.event_index) for v in judge(c.transcript)]
    assert [v.rule for v in judge(c.transcript, dual=True) if v.rule == "DISC-01"] == []
    # a fresh process opened by the modern frame has no such excuse
    d = Crafter("stdio")
    d.spawn()
    d.exchange(wire.build_request(1, "server/discover"), wire.build_error(1, wire.METHOD_NOT_FOUND, "Method not found"))
    assert [v.rule for v in judge(d.transcript, dual=True) if v.rule == "DISC-01"] == ["DISC-01"]


def test_a_warm_process_an_earlier_example_opened_without_a_modern_claim_may_keep_to_that_era() -> None:
    """The same -32601 on a warm process: the earlier example that sent the claim-less frame is in
    another transcript, and only the driver's spawn note ("(reused) era-open") carries it over.
    Without that note (every earlier frame claimed 2026-07-28) the warm process has no excuse."""
    for note, expected in (("node server.js (reused) era-open outstanding=[]", []),
                           ("node server.js (reused) outstanding=[]", ["DISC-01"])):
        c = Crafter("stdio")
        c.spawn(note)
        c.exchange(wire.build_request(1, "server/discover"), wire.build_error(1, wire.METHOD_NOT_FOUND, "Method not found"))
        assert [v.rule for v in judge(c.transcript, dual=True) if v.rule == "DISC-01"] == expected, note
        assert [v.rule for v in judge(c.transcript) if v.rule == "DISC-01"] == ["DISC-01"], note  # modern-only target

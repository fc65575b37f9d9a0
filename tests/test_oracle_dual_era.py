"""The dual-era verdicts of issue 32 (item 9), each with its firing and its silent twin, on
crafted transcripts shaped like what phocinae-mcp 0.2.6 and the SDK servers wrote.

A dual-era target (`judge(..., dual=True)`) may read a frame without a 2026-07-28 claim by
2025-era rules (VER-05), but: a frame no revision's schema accepts is judged in every era; a
later frame the server answered by modern rules is judged by them; an invalid logLevel is LOG-03;
a GET or DELETE on the endpoint is no frame (never "an empty line"), and the legacy GET stream of
a dual-era server is a HEURISTIC."""

from __future__ import annotations

from typing import Any

from mcp_tempest.fuzz.oracle import Expectation, judge
from mcp_tempest.fuzz.oracle.craft import Crafter
from mcp_tempest.fuzz.oracle.exchange import build_exchange
from mcp_tempest.fuzz.oracle.facts import classify_sent, frame_class
from mcp_tempest.strategies.malformed import MUTATIONS
from mcp_tempest.targets import wire

INFO = {wire.META_SERVER_INFO: {"name": "d", "version": "1"}}
DISCOVER = {"resultType": "complete", "supportedVersions": [wire.MODERN_VERSION], "capabilities": {"tools": {}},
            "ttlMs": 0, "cacheScope": "public", "_meta": INFO}
MODERN_LIST = {"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "public", "_meta": INFO}
LEGACY_LIST = {"tools": []}


def _exp(name: str) -> Expectation:
    return MUTATIONS[name].expect.for_transport("stdio")


def _found(c: Crafter, exps: dict[int, Expectation], *, dual: bool) -> set[tuple[str, str, str | None]]:
    return {(v.rule, v.strength, v.probe) for v in judge(c.transcript, expectations=exps, dual=dual)}


def _one(frame: dict[str, Any], answer: dict[str, Any], mutation: str) -> tuple[Crafter, dict[int, Expectation]]:
    c = Crafter("stdio")
    c.spawn()
    s, _ = c.exchange(frame, answer)
    return c, {s: _exp(mutation)}


def test_which_frames_are_malformed_in_every_era() -> None:
    """Both schemas type params and _meta as objects; the 2025 _meta takes any key and needs none."""
    bad = [{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": []},
           {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": "x"}},
           {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": None}}]
    fine = [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            wire.build_request(1, "server/discover", log_level="warn"),
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {"progressToken": 1}}}]
    assert [classify_sent(m).malformed_in_every_era for m in bad] == [True] * len(bad)
    assert [classify_sent(m).malformed_in_every_era for m in fine] == [False] * len(fine)


def test_params_not_an_object_served_by_a_dual_era_server_is_judged() -> None:
    frame = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": []}
    c, exps = _one(frame, wire.build_result(3, LEGACY_LIST), "params-non-object")
    assert _found(c, exps, dual=True) == {("META-04", "SHOULD", "params-non-object")}
    assert _found(c, exps, dual=False) == {("META-04", "SHOULD", "params-non-object")}
    # refused: nothing, in either era
    c, exps = _one(frame, wire.build_error(3, wire.INVALID_PARAMS, "params must be an object"), "params-non-object")
    assert _found(c, exps, dual=True) == set() == _found(c, exps, dual=False)


def test_meta_not_an_object_served_by_a_dual_era_server_is_the_probes_should_not_meta_04s_own() -> None:
    """META-04's own verdict on the missing protocolVersion is a 2026-07-28 duty: a modern-only
    server that served the frame the 2025 way gets it (a heuristic), a dual-era one reading the
    frame as 2025 owes only the refusal both schemas ask for (the probe's SHOULD)."""
    frame = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": "x"}}
    c, exps = _one(frame, wire.build_result(2, LEGACY_LIST), "meta-not-object")
    assert _found(c, exps, dual=True) == {("META-04", "SHOULD", "meta-not-object")}
    assert _found(c, exps, dual=False) == {("META-04", "SHOULD", "meta-not-object"), ("META-04", "HEURISTIC", None)}


def test_a_frame_valid_in_2025_stays_excused_on_a_dual_era_server() -> None:
    """params without _meta is a well-formed 2025 request: serving it the 2025 way is no finding there."""
    frame = {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}}
    c, exps = _one(frame, wire.build_result(4, LEGACY_LIST), "meta-missing")
    assert _found(c, exps, dual=True) == set()
    assert ("META-04", "MUST", "meta-missing") in _found(c, exps, dual=False)


def test_server_discover_unknown_in_the_2025_reading_of_a_frame_malformed_in_every_era() -> None:
    """A dual-era server reading `params: []` by 2025 rules may stop at the method (-32601: no
    server/discover before 2026-07-28): one of the frame's defects there (DIGEST 2). A modern-only
    server has no such reading: server/discover exists (DISC-01)."""
    frame = {"jsonrpc": "2.0", "id": 5, "method": "server/discover", "params": []}
    c, exps = _one(frame, wire.build_error(5, wire.METHOD_NOT_FOUND, "Method not found"), "params-non-object")
    assert _found(c, exps, dual=True) == set()
    assert ("META-04", "SHOULD", "params-non-object") in _found(c, exps, dual=False)


def _after_a_legacy_read(answer: dict[str, Any]) -> tuple[Crafter, dict[int, Expectation], int]:
    """phocinae's process: `_meta: "x"` served the 2025 way, then server/discover with logLevel "warn"."""
    c = Crafter("stdio")
    c.spawn()
    c.exchange({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, wire.build_result(1, LEGACY_LIST))
    s, _ = c.exchange(wire.build_request(2, "server/discover", log_level="warn"), answer)
    return c, {s: _exp("meta-log-level-invalid")}, s


def test_a_later_modern_frame_answered_by_modern_rules_is_judged_and_an_invalid_log_level_is_log_03() -> None:
    c, exps, s = _after_a_legacy_read(wire.build_result(2, DISCOVER))
    assert _found(c, exps, dual=True) == {("LOG-03", "SHOULD", "meta-log-level-invalid")}
    x = build_exchange(c.transcript, expectations=exps, dual=True)
    assert x.pair_at[s].sent.modern and not x.pair_at[s].sent.legacy
    # refused with -32602: nothing; a modern-only server is judged the same way
    c, exps, _ = _after_a_legacy_read(wire.build_error(2, wire.INVALID_PARAMS, "bad logLevel"))
    assert _found(c, exps, dual=True) == set()
    c, exps, _ = _after_a_legacy_read(wire.build_result(2, DISCOVER))
    assert ("LOG-03", "SHOULD", "meta-log-level-invalid") in _found(c, exps, dual=False)


def test_a_later_modern_frame_answered_the_2025_way_keeps_the_process_excuse() -> None:
    """VER-05: legacy semantics scoped to the process; the answer says the server kept to them."""
    legacy_discover = {k: v for k, v in DISCOVER.items() if k != "resultType"}
    for answer in (wire.build_result(2, legacy_discover), wire.build_error(2, wire.METHOD_NOT_FOUND, "nf")):
        c, exps, _ = _after_a_legacy_read(answer)
        assert _found(c, exps, dual=True) == set(), answer


def test_every_modern_rule_judges_a_later_frame_answered_by_modern_rules() -> None:
    """Not only the probe: a modern tools/list result without cacheScope breaks CACHE-01 although
    an earlier frame of the process was served by 2025 rules."""
    c = Crafter("stdio")
    c.spawn()
    c.exchange({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": []}, wire.build_result(1, LEGACY_LIST))
    no_scope = {k: v for k, v in MODERN_LIST.items() if k != "cacheScope"}
    c.exchange(wire.build_request(2, "tools/list"), wire.build_result(2, no_scope))
    assert "CACHE-01" in {v.rule for v in judge(c.transcript, dual=True)}
    c = Crafter("stdio")
    c.spawn()
    c.exchange({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": []}, wire.build_result(1, LEGACY_LIST))
    c.exchange(wire.build_request(2, "tools/list"), wire.build_result(2, MODERN_LIST))
    assert judge(c.transcript, dual=True) == []


def test_log_level_duty_survives_the_replay_file() -> None:
    exp = _exp("meta-log-level-invalid")
    assert (exp.rule, exp.duty) == ("RPC-13", "LOG-03")
    assert Expectation.from_json(exp.to_json()) == exp
    assert Expectation.from_json({**exp.to_json(), "duty": 7}).duty is None


# --- GET and DELETE on the endpoint (SL-11) ---------------------------------------------------


def _endpoint(verb: str, status: int, *, headers: dict[str, str] | None = None,
              body: dict[str, Any] | None = None) -> tuple[Crafter, dict[int, Expectation]]:
    """A bodiless GET or DELETE as the framing property sends it, then the sentinel."""
    c = Crafter("http")
    c.spawn("http://127.0.0.1:9/mcp")
    s = c.send(None, raw=b"", headers={"Host": "127.0.0.1:9"}, note=f"{verb} /mcp")
    if body is not None:
        c.recv(body, ref=s, status=status, headers=headers or {"Content-Type": "application/json"})
    else:
        c.http_reply(status, ref=s, headers=headers)
    c.exchange(wire.build_request(1000001, "server/discover"), wire.build_result(1000001, DISCOVER))
    return c, {s: Expectation("any", "SL-11", mutation=f"http-{verb.lower()}")}


def _verdicts(c: Crafter, exps: dict[int, Expectation], *, dual: bool) -> set[tuple[str, str, str]]:
    return {(v.rule, v.strength, v.reaction or v.title) for v in judge(c.transcript, expectations=exps, dual=dual)}


def test_a_delete_refused_with_405_and_an_error_body_is_no_empty_line() -> None:
    """The Python SDK answers DELETE 405 with a -32600 body: correct (DIGEST 7.4), never the
    blank-line class's "empty line answered with HTTP 405"."""
    refusal = {"jsonrpc": "2.0", "id": None, "error": {"code": wire.INVALID_REQUEST, "message": "Method Not Allowed"}}
    for dual in (False, True):
        c, exps = _endpoint("DELETE", 405, body=refusal)
        assert _verdicts(c, exps, dual=dual) == set(), dual
    sent = build_exchange(c.transcript).pairs[0].sent
    assert sent.kind == "endpoint" and frame_class(sent) == "request that is not a POST"
    # answered 200, it is SL-11 on either target, and still no frame verdict
    c, exps = _endpoint("DELETE", 200)
    assert _verdicts(c, exps, dual=False) == _verdicts(c, exps, dual=True) == {
        ("SL-11", "SHOULD", "DELETE on the MCP endpoint was not refused with 405")}


def test_a_get_stream_is_a_should_from_a_modern_only_server_and_a_heuristic_from_a_dual_era_one() -> None:
    sse = {"Content-Type": "text/event-stream"}
    c, exps = _endpoint("GET", 200, headers=sse)
    title = "GET on the MCP endpoint was not refused with 405"
    assert _verdicts(c, exps, dual=False) == {("SL-11", "SHOULD", title)}
    assert _verdicts(c, exps, dual=True) == {("SL-11", "HEURISTIC", title)}
    # a 200 that is no SSE stream is no legacy transport either
    c, exps = _endpoint("GET", 200, headers={"Content-Type": "text/html"})
    assert _verdicts(c, exps, dual=True) == {("SL-11", "SHOULD", title)}
    # a DELETE that finds no session to end (404) is the legacy transport's answer too
    c, exps = _endpoint("DELETE", 404)
    assert _verdicts(c, exps, dual=True) == {("SL-11", "HEURISTIC", "DELETE on the MCP endpoint was not refused with 405")}


def test_a_get_to_another_path_is_not_sl_11() -> None:
    """The protected resource metadata fetch (AUTH-14) is a GET too, but not on the endpoint."""
    c = Crafter("http")
    c.spawn("http://127.0.0.1:9/mcp")
    c.send(None, raw=b"", headers={"Host": "127.0.0.1:9"}, note="GET /.well-known/oauth-protected-resource/mcp")
    c.http_reply(200, headers={"Content-Type": "application/json"})
    assert [v for v in judge(c.transcript) if v.rule == "SL-11"] == []

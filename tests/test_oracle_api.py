"""The oracle's public surface: eras, rule selection, the Locust fast path, replay round trips,
and what importing it drags in (Locust users import it under gevent)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from mcp_tempest.fuzz.oracle import (
    BOTH_ERAS,
    RULES,
    Expectation,
    OracleUsageError,
    Violation,
    judge,
    judge_response,
    rules_for,
    warm_up,
)
from mcp_tempest.fuzz.oracle.craft import Crafter
from mcp_tempest.targets import wire
from mcp_tempest.targets.transcript import Transcript

INFO = {wire.META_SERVER_INFO: {"name": "srv", "version": "1"}}
TOOL_OK = {"resultType": "complete", "content": [{"type": "text", "text": "hi"}], "_meta": INFO}


def call(rid: int = 1) -> dict:
    return wire.build_request(rid, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})


def _modern_breakage() -> Crafter:
    """A transcript breaking modern-only rules (RT-01, MRTR-01, RES-04, SL-10) and one rule of
    both eras (RPC-06: an answer with an unknown id)."""
    c = Crafter("http")
    c.spawn()
    c.exchange(call(1), wire.build_result(1, {"content": []}), headers={"Content-Type": "application/json",
                                                                        "Mcp-Session-Id": "s"})
    c.exchange(wire.build_request(2, "tools/list"), wire.build_result(2, {"resultType": "input_required",
                                                                           "requestState": "x"}))
    c.exchange(wire.build_request(3, "resources/read", {"uri": "file:///x"}), wire.build_error(3, -32002, "gone"),
               status=404)
    c.exchange(call(4), wire.build_result(5, TOOL_OK))
    return c


def test_legacy_campaign_never_reports_a_modern_rule() -> None:
    c = _modern_breakage()
    modern = {v.rule for v in judge(c.transcript)}
    assert {"RT-01", "MRTR-01", "RES-04", "SL-10", "RPC-06"} <= modern
    legacy = judge(c.transcript, era="legacy")
    assert {v.rule for v in legacy} == {"RPC-06"}
    assert all("legacy" in RULES[v.rule].eras for v in legacy)


def test_every_rule_declares_its_eras_and_strength() -> None:
    for rule in RULES.values():
        assert rule.eras and rule.eras <= BOTH_ERAS
        assert rule.strength in ("MUST", "SHOULD", "HEURISTIC")
        assert rule.check.__name__ == rule.id.lower().replace("-", "_"), rule.id  # named by its rule id
        assert rule.description
    assert rules_for("legacy") and set(rules_for("legacy")) < set(rules_for("modern"))


def test_expectation_of_modern_era_is_not_applied_in_legacy() -> None:
    c = Crafter("stdio")
    c.spawn()
    s, _ = c.exchange({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, wire.build_result(1, {"tools": []}))
    exp = {s: Expectation("error", "META-04", codes=frozenset({-32602}))}
    assert "META-04" in {v.rule for v in judge(c.transcript, expectations=exp)}
    assert judge(c.transcript, era="legacy", expectations=exp) == []
    both = {s: Expectation("error", "RPC-01", eras=BOTH_ERAS)}
    assert "RPC-01" in {v.rule for v in judge(c.transcript, era="legacy", expectations=both)}


def test_modern_only_expectation_judges_survival_only_on_a_dual_era_target() -> None:
    """A dual-era server may serve a legacy method or a request without MCP-Protocol-Version by
    2025-era rules (VER-05, HDR-02's exception): the expectation only marks itself modern-only,
    and the oracle's one dual-era policy (`judge(..., dual=True)`) keeps only the liveness check."""
    from mcp_tempest.strategies.malformed import MUTATIONS

    for name in ("hdr-version-missing", "legacy-ping", "meta-version-legacy"):
        mutation = MUTATIONS[name]
        exp = mutation.expect.for_transport("http")
        assert exp.rule == mutation.rule and exp.mutation == name
        assert exp.kind == "error" and exp.strength == "MUST" and exp.modern_only
        assert Expectation.from_json(exp.to_json()) == exp
        # Served by legacy rules (a result without resultType): a finding for a modern-only
        # server, nothing for a dual-era one.
        c = Crafter("http")
        c.spawn()
        s = c.send(wire.build_request(1, "tools/list"))
        c.recv({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}})
        assert judge(c.transcript, expectations={s: exp}) != []
        assert [v for v in judge(c.transcript, expectations={s: exp}, dual=True) if v.probe == name] == []
    envelope = MUTATIONS["id-null"]
    assert not envelope.expect.for_transport("stdio").modern_only


def test_dual_era_policy_excuses_a_request_without_params_the_same_way_for_every_rule() -> None:
    """A dual-era server serving `tools/list` without params by 2025-era rules: no MUST (neither
    the probe's expectation nor META-04), and no claim that the process switched era."""
    c = Crafter("stdio")
    c.spawn()
    s = c.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    c.recv({"jsonrpc": "2.0", "id": 3, "result": {"tools": []}})
    c.exchange(wire.build_request(4, "server/discover"), wire.build_result(4, {
        "resultType": "complete", "supportedVersions": [wire.MODERN_VERSION], "capabilities": {"tools": {}},
        "ttlMs": 0, "cacheScope": "public", "_meta": {wire.META_SERVER_INFO: {"name": "d", "version": "1"}}}))
    exp = {s: Expectation("error", "RPC-13", codes=frozenset({-32602}), mutation="no-params")}
    modern_only_server = judge(c.transcript, expectations=exp)
    assert {v.rule for v in modern_only_server} >= {"META-04"}  # the duty RPC-13 falls under
    assert all("switched" not in v.detail for v in modern_only_server)
    assert judge(c.transcript, expectations=exp, dual=True) == []


    # A request without the version header over HTTP: open by HDR-02, so the answer is not judged
    # by modern rules (here a legacy -32601 with HTTP 200 would otherwise break HDR-05).
    c = Crafter("http")
    c.spawn()
    msg = wire.build_request(1, "server/discover")
    headers = {k: v for k, v in wire.http_headers(msg).items() if k != "MCP-Protocol-Version"}
    c.send(msg, headers=headers)
    c.recv(wire.build_error(1, wire.METHOD_NOT_FOUND, "Method not found"), status=200)
    assert judge(c.transcript) == []


def test_rule_selection_and_usage_errors() -> None:
    c = _modern_breakage()
    assert {v.rule for v in judge(c.transcript, rules=["RT-01"])} == {"RT-01"}
    with pytest.raises(OracleUsageError, match="unknown rule"):
        judge(c.transcript, rules=["RT-99"])
    with pytest.raises(OracleUsageError, match="unknown era"):
        judge(c.transcript, era="ancient")  # type: ignore[arg-type]


def test_judgement_survives_the_replay_file_round_trip() -> None:
    c = _modern_breakage()
    c.noise(b"\xff banner")
    again = Transcript.from_json(c.transcript.to_json())
    assert judge(again) == judge(c.transcript) != []
    for v in judge(again):
        assert Violation.from_json(v.to_json()) == v
    exp = Expectation("error", "META-04", codes=frozenset({-32602}), statuses=frozenset({400}), mutation="m")
    assert Expectation.from_json(exp.to_json()) == exp


def test_judge_response_fast_path() -> None:
    request, good = call(1), wire.build_result(1, TOOL_OK)
    assert judge_response(request, good) == []
    assert judge_response(request, good, http_status=200, headers={"content-type": "application/json"}) == []
    no_type = wire.build_result(1, {"content": []})
    assert {v.rule for v in judge_response(request, no_type)} == {"RT-01"}
    unknown = wire.build_error(1, wire.METHOD_NOT_FOUND, "no")
    ping = wire.build_request(1, "ping")
    assert {v.rule for v in judge_response(ping, unknown, http_status=200)} == {"HDR-05"}
    assert judge_response(ping, unknown, http_status=404) == []
    note = wire.build_notification("notifications/cancelled", {"requestId": 1})
    assert judge_response(note, None, http_status=202) == []
    assert {v.rule for v in judge_response(note, None, http_status=200)} == {"HTTP-05"}
    # Header rules need the request headers.
    headers = wire.http_headers(request)
    headers["Mcp-Name"] = "other"
    assert {v.rule for v in judge_response(request, good, http_status=200, request_headers=headers)} == {"HDR-03"}
    # A legacy-era judgement of a legacy answer.
    assert judge_response(request, no_type, era="legacy") == []
    assert judge_response(request, no_type, rules=["RPC-06"]) == []


def test_judge_response_is_cheap() -> None:
    warm_up()
    request, good = call(1), wire.build_result(1, TOOL_OK)
    hot = [r for r in RULES if r != "RT-06" and RULES[r].scope == "pair"]
    n = 300
    start = time.perf_counter()
    for _ in range(n):
        judge_response(request, good, http_status=200, headers={"content-type": "application/json"})
    full = (time.perf_counter() - start) / n
    start = time.perf_counter()
    for _ in range(n):
        judge_response(request, good, http_status=200, headers={"content-type": "application/json"}, rules=hot)
    light = (time.perf_counter() - start) / n
    # Generous bounds for a loaded 2-core CI machine; typical: ~1 ms and ~0.3 ms.
    assert full < 0.02 and light < 0.005, (full, light)
    assert light < full


def test_import_is_light_and_gevent_safe() -> None:
    code = (
        "import sys, fuzz.oracle as o\n"
        "from targets import wire\n"
        "r = wire.build_request(1, 'tools/list')\n"
        "o.judge_response(r, wire.build_result(1, {'resultType': 'complete', 'tools': [], 'ttlMs': 0,"
        " 'cacheScope': 'public'}))\n"
        "bad = [m for m in ('locust', 'gevent', 'asyncio', 'anyio', 'trio') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "", f"importing/using the oracle pulled in {out.stdout.strip()}"


def test_a_dual_era_server_that_reads_a_versionless_frame_as_legacy_is_not_called_dead() -> None:
    """Seen on the TypeScript SDK: a fresh process whose first frame is a notification without a
    protocolVersion answers the sentinel server/discover with -32601, as a 2025-era process does.
    Dual-era: that is the legacy reading (VER-05), no liveness finding. Modern-only: it stands."""
    c2 = Crafter("stdio")
    c2.spawn()
    s = c2.send(wire.build_notification("notifications/x-0", {"requestId": ""}))
    c2.exchange(wire.build_request(1000001, "server/discover"), wire.build_error(1000001, wire.METHOD_NOT_FOUND, "nf"))
    exp = {s: Expectation("no-reply", "RPC-10", mutation="unknown-notification", eras=BOTH_ERAS)}
    assert [v for v in judge(c2.transcript, expectations=exp, dual=True) if v.probe] == []
    assert [v.strength for v in judge(c2.transcript, expectations=exp) if v.probe] == ["HEURISTIC"]

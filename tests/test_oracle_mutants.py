"""The oracle reports each one-bug mutant of the reference server under the rule it is labelled with.

The same recorded scenario as `test_oracle_reference.py` (which proves the reference itself draws
nothing) is played against `mcp-tempest serve --bug NAME`: a rule that stays silent on a real
server with that exact bug would be a rule that only fires on hand-made transcripts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_oracle_reference import Recorder, record, show, stdio_conn

from mcp_tempest.fuzz.oracle import judge
from mcp_tempest.targets import wire
from mcp_tempest.targets.transcript import Transcript

# Each mutant, the transport its bug lives on, and the rule the oracle must report for it.
MUTANTS = [
    ("missing-result-type", "stdio", "RT-01"),
    ("stdout-log", "stdio", "STDIO-03"),
    ("serverinfo-top-level", "stdio", "DISC-04"),
    ("reply-to-notification", "stdio", "RPC-10"),
    ("missing-meta-32601", "stdio", "META-04"),
    ("unsupported-version-no-data", "stdio", "META-06"),
    ("list-input-required", "stdio", "MRTR-01"),
    ("remembered-capabilities", "stdio", "META-02"),
    # A wrong reaction to a probe frame is the server's duty (RPC-01, JSON-RPC 2.0's error
    # response); the rule the probe frame broke is the violation's probe_rule.
    ("null-id-accepted", "stdio", "RPC-01<RPC-04"),
    ("exit-on-newline", "stdio", "RPC-01<STDIO-02"),
    ("list-changes-after-call", "stdio", "TOOL-02"),
    ("http-session-id", "http", "SL-10"),
    ("http-200-header-mismatch", "http", "HDR-01"),
    ("http-200-unknown-method", "http", "HDR-05"),
    ("cross-wired-ids", "http", "RPC-06"),
    # Request-scoped notifications (DIGEST §12, §13): the scenario asks for progress and logs.
    ("progress-without-token", "stdio", "PROG-01"),
    ("progress-not-increasing", "http", "PROG-02"),
    ("progress-after-response", "stdio", "PROG-03"),
    ("progress-after-response", "http", "PROG-03"),
    ("log-without-level", "http", "LOG-01"),
    ("log-below-level", "stdio", "LOG-02"),
]


@pytest.mark.parametrize(("bug", "transport", "rule_id"), MUTANTS,
                         ids=[f"{m[0]}-{m[1]}" for m in MUTANTS])
def test_mutant_is_reported_under_its_rule(tmp_path: Path, bug: str, transport: str, rule_id: str) -> None:
    transcript, expectations = record(transport, tmp_path / "m.sqlite3", bug)
    found = judge(transcript, expectations=expectations)
    duty, _, probe_rule = rule_id.partition("<")
    hits = [v for v in found if v.rule == duty and (not probe_rule or v.probe_rule == probe_rule)]
    assert hits, f"--bug {bug}: expected {rule_id}, got:\n" + show(found, transcript)


@pytest.mark.parametrize("bug", ["era-lock", None])
def test_era_lock_is_sl_2_on_the_mutant_and_silent_on_the_reference(tmp_path: Path, bug: str | None) -> None:
    """A malformed _meta, then valid discovers on the same real process, judged with the DiscoverResult
    a fresh process gave (as a campaign's start-of-run probe does): SL-2 once on the mutant, nothing
    on the reference."""
    fresh = Transcript("mcp-tempest serve", "stdio")
    with stdio_conn(fresh, tmp_path / "f.sqlite3") as conn:
        discover = Recorder(conn).ask(wire.build_request(1, "server/discover"))["result"]
    transcript = Transcript("mcp-tempest serve", "stdio")
    with stdio_conn(transcript, tmp_path / "m.sqlite3", *([bug] if bug else [])) as conn:
        rec = Recorder(conn)
        rec.ask({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": "x"}})
        rec.ask(wire.build_request(2, "server/discover"))
        rec.ask(wire.build_request(3, "tools/list"))
    found = [v for v in judge(transcript, discover=discover) if v.rule == "SL-2"]
    assert [(v.strength, v.method) for v in found] == ([("MUST", "server/discover")] if bug else []), \
        show(found, transcript)

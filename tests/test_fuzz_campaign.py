"""`mcp-tempest fuzz` as users run it: the command line, its files, its exit codes, Ctrl-C.

Real campaigns against the reference server (its own private store per test), through the
console script in a subprocess, so exit codes, stdout's last line and leftover processes are
exactly what a CI job would see.
"""

from __future__ import annotations

import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import orjson
import pytest
from fuzz_support import (
    CLI,
    PYTHON,
    last_line,
    processes_mentioning,
    reference_http,
    reference_stdio,
    run_cli,
)
from process_support import default_sigint, interrupt_when

from mcp_tempest.fuzz.verdict_line import parse_final_line

PROPERTIES = ("framing", "ids", "valid", "history", "lists", "handoff", "mrtr")


def _summary(stdout: str) -> tuple[int, int, int]:
    """The last line's counts (fuzz/verdict_line.py `final_line`): examples, properties, findings."""
    line = parse_final_line(last_line(stdout))
    assert line is not None and line.command == "fuzz", last_line(stdout)
    parts = line.counts.split(", ")
    assert len(parts) in (3, 4), line  # `, O observation(s)` when any
    assert len(parts) == 3 or parts[3].split()[1].startswith("observation"), line
    return tuple(int(p.split()[0]) for p in parts[:3])  # type: ignore[return-value]


def test_reference_server_has_no_findings_over_every_property_and_both_transports(tmp_path: Path) -> None:
    db = tmp_path / "server.sqlite3"
    out = tmp_path / "out"
    # The default target is the reference server over both transports; a private store is given
    # through explicit targets, so run them as one campaign each transport would: stdio + http.
    for transport, target in (("stdio", reference_stdio(db)), ("http", reference_http(db))):
        run_out = out / transport
        proc = run_cli("fuzz", "--target", target, "--max-examples", "42", "--seed", "7", "--out", str(run_out),
                       "--no-database", "--progress", "never", timeout=240)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        examples, properties, findings = _summary(proc.stdout)
        assert (properties, findings) == (len(PROPERTIES), 0) and examples >= 42

        index = orjson.loads((run_out / "findings.json").read_bytes())
        assert index["revision"] == "2026-07-28" and index["seed"] == 7 and index["target"] == target
        assert index["findings"] == [] and index["examples"] == examples

        suite = ET.parse(run_out / "junit.xml").getroot()
        cases = suite.findall(".//testcase")
        assert sorted(c.get("name") for c in cases) == sorted(f"{p}[{transport}]" for p in PROPERTIES)
        assert suite.get("failures") == "0" and not suite.findall(".//failure")

        html = (run_out / "report.html").read_text()
        assert "no findings" in html and "<script" not in html and "src=" not in html
    assert not processes_mentioning(str(db))


def test_a_finding_is_filed_with_its_files(tmp_path: Path) -> None:
    db = tmp_path / "server.sqlite3"
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--target", reference_stdio(db, "missing-result-type"), "--properties", "valid,ids",
                   "--max-examples", "20", "--seed", "3", "--out", str(out), "--no-database",
                   "--shrink-time", "5", "--first-finding", "--progress", "never",
                   "--write-regressions", str(tmp_path / "regressions"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    index = orjson.loads((out / "findings.json").read_bytes())
    assert index["findings"], index
    written = sorted((tmp_path / "regressions").glob("test_mcp_tempest_*.py"))
    assert len(written) == len(index["findings"])
    for finding in index["findings"]:
        assert {"id", "rule", "strength", "title", "method", "transport", "mutation", "count", "repro"} <= set(finding)
        assert finding["strength"] in ("MUST", "SHOULD", "HEURISTIC") and finding["count"] >= 1
        repro = orjson.loads((out / finding["repro"]).read_bytes())
        # A Hypothesis example carries its blob; a coverage probe (valid now has some) is its own case.
        assert repro["revision"] == "2026-07-28" and repro["seed"] == 3
        assert repro["reproduce_blob"] or "coverage phase" in repro.get("note", ""), repro.get("note")
        assert repro["property"] in ("valid", "ids") and repro["case"]["steps"]
        kinds = [e["kind"] for e in repro["transcript"]["events"]]
        assert kinds[0] == "spawn" and "send" in kinds and "recv" in kinds
    assert any(f["rule"] == "RT-01" for f in index["findings"])
    suite = ET.parse(out / "junit.xml").getroot()
    # One <failure> per failed test case (property and transport), naming every finding seen there.
    failed_cases = {(s["property"], s["transport"]) for f in index["findings"] if f["verdict"] == "failure"
                    for s in f["seen"]}
    assert len(suite.findall(".//failure")) == len(failed_cases)
    html = (out / "report.html").read_text()
    assert "RT-01" in html and "resultType" in html


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--properties", "framing,nonsense"], "unknown property nonsense"),
        (["--max-examples", "0"], "--max-examples must be at least 1"),
        (["--max-examples", "5", "--duration", "5"], "not allowed with argument"),
        (["--workers", "0"], "--workers must be between 1 and 64"),
        (["--target", "ftp://example.com"], "unknown target"),
        (["--target", "http://example.com/mcp"], "refusing non-loopback host"),
        (["--mutations", "no-such-mutation"], "names no mutation"),
        (["--frobnicate"], "unrecognized arguments"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args: list[str], message: str) -> None:
    proc = run_cli("fuzz", *args, timeout=60)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_unusable_target_exits_2(tmp_path: Path) -> None:
    proc = run_cli("fuzz", "--target", "stdio:/nonexistent/mcp-server --flag", "--out", str(tmp_path / "out"),
                   "--no-database", timeout=60)
    assert proc.returncode == 2
    assert "unusable target" in proc.stderr and "Traceback" not in proc.stderr
    assert _summary(proc.stdout)[2] == 0


def test_duration_budget_is_kept(tmp_path: Path) -> None:
    db = tmp_path / "server.sqlite3"
    started = time.monotonic()
    # 15 s: the target's probe and the generators' first warm-up (a few seconds on a busy
    # machine) come out of the campaign's time, and both properties must still get examples.
    proc = run_cli("fuzz", "--target", reference_stdio(db), "--duration", "15", "--properties", "framing,history",
                   "--seed", "1", "--out", str(tmp_path / "out"), "--no-database", "--progress", "never")
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _summary(proc.stdout)[0] > 0
    assert took < 15 * 1.05 + 3, f"a 15 s campaign took {took:.1f} s"


def test_workers_share_the_example_database(tmp_path: Path) -> None:
    db = tmp_path / "server.sqlite3"
    hypothesis_db = tmp_path / "hypothesis-db"
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--target", reference_stdio(db, "null-id-accepted"), "--properties", "ids,valid",
                   "--max-examples", "30", "--seed", "11", "--out", str(out), "--database", str(hypothesis_db),
                   "--workers", "2", "--shrink-time", "5", "--progress", "lines")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    index = orjson.loads((out / "findings.json").read_bytes())
    # a served null id: the server's duty (RPC-01, JSON-RPC 2.0 refuses it), probed by id-null (RPC-04)
    assert any(f["rule"] == "RPC-01" and f["mutation"] == "id-null" for f in index["findings"]), index["findings"]
    # The failing example was saved where every worker (and the next campaign) looks first.
    assert any(hypothesis_db.rglob("*")), "nothing was written to the shared example database"
    assert not processes_mentioning(str(db))


def test_ctrl_c_stops_cleanly_with_what_was_found(tmp_path: Path) -> None:
    db = tmp_path / "server.sqlite3"
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [*CLI, "fuzz", "--target", reference_stdio(db, "missing-result-type"), "--duration", "120",
         "--properties", "valid,history", "--seed", "5", "--out", str(out), "--no-database", "--progress", "lines"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=default_sigint,  # a suite started as a background job inherits SIGINT ignored
    )
    # Ctrl-C once the first finding is on disk (it must be kept), and a little later.
    stdout, stderr = interrupt_when(proc, lambda: any((out / "repro").glob("*.json")), settle=1.0)
    assert proc.returncode == 1, stdout + stderr
    assert "interrupted" in stdout and "Traceback" not in stderr
    examples, _, findings = _summary(stdout)
    assert findings >= 1 and examples >= 1
    said = parse_final_line(last_line(stdout))
    assert said is not None and said.word == "FAIL" and "interrupted" in said.why, last_line(stdout)
    index = orjson.loads((out / "findings.json").read_bytes())
    assert index["interrupted"] is True and index["failures"] == findings
    assert len([f for f in index["findings"] if f["verdict"] == "failure"]) == findings
    assert (out / "junit.xml").exists() and (out / "report.html").exists()
    time.sleep(0.5)
    assert not processes_mentioning(str(db)), "Ctrl-C left a server process running"


def test_list_properties() -> None:
    proc = run_cli("fuzz", "--list-properties", timeout=60)
    assert proc.returncode == 0
    assert [line.split()[0] for line in proc.stdout.splitlines()] == list(PROPERTIES)


LEGACY_SERVER = r'''
import json, sys
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if "id" not in msg:
        continue
    if msg.get("method") == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "legacy", "version": "1"}}
        reply = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
    else:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
'''


def test_a_legacy_only_server_is_not_judged_by_modern_rules(tmp_path: Path) -> None:
    script = tmp_path / "legacy_server.py"
    script.write_text(LEGACY_SERVER)
    proc = run_cli("fuzz", "--target", f"stdio:{PYTHON} {script}", "--out", str(tmp_path / "out"),
                   "--no-database", "--max-examples", "7", timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "legacy era" in proc.stderr and "Traceback" not in proc.stderr
    assert _summary(proc.stdout)[2] == 0
    assert not processes_mentioning(str(script))

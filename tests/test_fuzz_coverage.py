"""Campaigns that cover instead of sample (issue 10, items 1 and 4).

- every campaign sends each named probe once, before random generation, and reports the
  counts (probes tried N of N, rules exercised M of M) with why the others could not apply;
- the default 200-example campaign finds HTTP-12 and HDR-01 on the Python SDK behind a route
  that hides the client's headers from it (tests/servers/sdk_route_server.py);
- after a failure a property explores on, so two planted bugs are both found in one run
  (`--stop-on-first` finds one); the example database's failures come back as known; a
  `--known` baseline fails the run only on new groups and says which known ones are gone.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from fuzz_support import PYTHON, property_row, reference_stdio, run_cli

from mcp_tempest.fuzz.properties.framing import EXTRAS, mutation_names
from mcp_tempest.fuzz.properties.mrtr import PROBES
from mcp_tempest.strategies import malformed as catalogue

ROUTE_SERVER = Path(__file__).parent / "servers" / "sdk_route_server.py"


def _index(out: Path) -> dict:
    return orjson.loads((out / "findings.json").read_bytes())


def test_coverage_phase_tries_every_probe_and_reports_the_counts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--target", reference_stdio(tmp_path / "s.sqlite3"), "--properties", "framing,mrtr",
                   "--max-examples", "60", "--seed", "4", "--out", str(out), "--progress", "never")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    coverage = _index(out)["coverage"]
    framing_all = [n for n in catalogue.mutation_names() if catalogue.get_mutation(n).level != "retry"]
    stdio = set(mutation_names("stdio"))
    expected_tried = len(stdio) + len(PROBES)
    assert coverage["probes"] == len(framing_all) + len(EXTRAS) + len(PROBES)
    assert coverage["tried"] == expected_tried, coverage
    why = {item["probe"]: item["why"] for item in coverage["not_applied"]}
    assert why["hdr-origin-foreign"] == "stdio: needs the http transport"
    assert set(why) == (set(framing_all) | set(EXTRAS)) - stdio
    assert why["http-get"] == "stdio: needs the http transport"
    assert coverage["rules_exercised"] <= coverage["rules"] and "HTTP-12" in coverage["rules_not_exercised"]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("coverage: "))
    assert line == (f"coverage: {expected_tried} of {coverage['probes']} probes tried, "
                    f"{coverage['rules_exercised']} of {coverage['rules']} rules exercised")
    # the coverage phase is inside the budget, and the random phase still got examples
    assert _index(out)["examples"] <= 60


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def route_server() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(ROUTE_SERVER), "--port", str(port)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, "the SDK route server exited before listening"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the SDK route server is not listening"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


@pytest.mark.slow  # a third-party server and the full default budget: about 90 s
def test_default_campaign_finds_http_12_and_hdr_01_on_the_sdk_behind_a_route(tmp_path: Path,
                                                                               route_server: str) -> None:
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--target", route_server, "--seed", "1", "--out", str(out), "--progress", "never",
                   timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    index = _index(out)
    found = {(f["rule"], f["strength"], f["mutation"]) for f in index["findings"]}
    assert ("HTTP-12", "MUST", "hdr-origin-foreign") in found, found
    assert ("HDR-01", "MUST", "hdr-version-mismatch") in found, found
    assert index["budget"]["generated"] <= 200


def test_two_planted_bugs_in_one_property_are_both_found_in_one_run(tmp_path: Path) -> None:
    target = reference_stdio(tmp_path / "s.sqlite3", "list-input-required", "serverinfo-top-level")
    rules = {}
    for mode in ("--stop-on-first", None):
        out = tmp_path / f"out-{mode or 'default'}"
        proc = run_cli("fuzz", "--target", target, "--properties", "valid", "--max-examples", "30", "--seed", "2",
                       "--shrink-time", "5", "--out", str(out), "--progress", "never", *([mode] if mode else []))
        assert proc.returncode == 1, proc.stdout + proc.stderr
        rules[mode] = {f["rule"] for f in _index(out)["findings"]}
    assert rules[None] == {"MRTR-01", "DISC-04"}
    assert len(rules["--stop-on-first"]) == 1


def test_database_failures_come_back_as_known_and_a_baseline_fails_only_on_new_groups(tmp_path: Path) -> None:
    db = tmp_path / "hypothesis-db"
    first = tmp_path / "first"
    both = reference_stdio(tmp_path / "s.sqlite3", "list-input-required", "serverinfo-top-level")
    proc = run_cli("fuzz", "--target", both, "--properties", "valid", "--max-examples", "30", "--seed", "2",
                   "--shrink-time", "5", "--database", str(db), "--out", str(first), "--progress", "never")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    baseline = _index(first)
    ids = {f["id"]: f["rule"] for f in baseline["findings"]}
    assert set(ids.values()) == {"MRTR-01", "DISC-04"}

    # The same bugs again, the baseline given: they are known, nothing is new, the run passes;
    # the example database brings its failures back first and says so.
    second = tmp_path / "second"
    proc = run_cli("fuzz", "--target", both, "--properties", "valid", "--max-examples", "30", "--seed", "9",
                   "--shrink-time", "5", "--database", str(db), "--known", str(first / "findings.json"),
                   "--out", str(second), "--progress", "never")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    known = _index(second)["known"]
    assert known["new"] == [] and known["replayed"], known
    assert "replayed from the example database" in proc.stdout

    # One bug fixed: its group is reported gone; a list of ids with reasons works as a baseline too.
    listed = tmp_path / "known.txt"
    listed.write_text("".join(f"{gid} {rule}: planted\n" for gid, rule in ids.items()))
    third = tmp_path / "third"
    one = reference_stdio(tmp_path / "s2.sqlite3", "serverinfo-top-level")
    proc = run_cli("fuzz", "--target", one, "--properties", "valid", "--max-examples", "30", "--seed", "2",
                   "--shrink-time", "5", "--no-database", "--known", str(listed), "--out", str(third),
                   "--progress", "never")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    gone = {item["id"] for item in _index(third)["known"]["gone"]}
    assert gone == {gid for gid, rule in ids.items() if rule == "MRTR-01"}
    assert "gone: " in proc.stdout


def test_a_bad_baseline_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    proc = run_cli("fuzz", "--known", str(bad), timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "--known" in proc.stderr
    assert PYTHON


def test_tool_policy_withholds_tools_and_the_properties_that_need_one_say_so(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--target", reference_stdio(tmp_path / "s.sqlite3"), "--tools", "read-only",
                   "--deny-tool", "list_*", "--max-examples", "40", "--seed", "1", "--out", str(out),
                   "--progress", "never")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("fuzz: tools: "))
    assert "--tools read-only --deny-tool list_*" in line and "create_event" in line and "list_events" in line
    index = _index(out)
    assert set(index["tools"]["withheld"]) >= {"create_event", "open_calendar", "list_events"}
    assert "echo" not in index["tools"]["withheld"]  # annotated readOnlyHint: still called
    for prop in ("mrtr", "handoff"):
        row = property_row(proc.stdout, prop)
        assert "tool policy withholds" in row, row
    # no withheld tool was ever called: open_calendar and create_event would have left rows behind
    # (the server seeds one calendar of its own when it starts)
    with sqlite3.connect(tmp_path / "s.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM calendars").fetchone()[0] == 1
        assert db.execute("SELECT count(*) FROM events").fetchone()[0] == 0
    assert index["examples"] == 40  # the skipped properties' shares went to the others


def test_tools_none_calls_no_tool_at_all(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--target", reference_stdio(tmp_path / "s.sqlite3"), "--tools", "none",
                   "--properties", "valid,mrtr", "--max-examples", "20", "--seed", "2", "--out", str(out),
                   "--progress", "never")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tool policy withholds" in proc.stdout and _index(out)["tools"]["policy"] == "--tools none"

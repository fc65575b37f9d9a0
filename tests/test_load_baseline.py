"""`--baseline` on real runs: identical runs pass, a server twice as slow fails, and it says why.

Open model (a fixed --rate), so throughput is the schedule's and the verdict rests on latency.
The identical pair runs the embedded reference server twice; the slower pair runs the slow test
server (tests/load_slow_server.py) at 40 ms and then 80 ms per reply (long enough that
scheduling noise on a busy machine, tens of ms at the tail, cannot hide the doubling), so its p99 doubles while
every arrival is still delivered. Each run is 5 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_tempest.load import capacity
from tests.test_load_timeouts import start_slow_server


def run(out: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    proc = subprocess.run([sys.executable, "-m", "mcp_tempest.load", "--rate", "300", "--run-time", "5s", "--check-every", "0",
                           "--progress-every", "0", "--out", str(out), *args],
                          cwd=out.parent, capture_output=True, text=True, timeout=90)
    path = out / "summary.json"
    return proc, (json.loads(path.read_text()) if path.is_file() else {})


# Nightly, where it runs alone: on a loaded machine (two test files at once, or helpers beside the
# suite) the overall p99 of 2,000 samples moved by more than the default 20% between two identical
# runs (the p99 of a 5 s run is scheduling noise there); the comparison is not yet noise-aware.
@pytest.mark.nightly
def test_two_identical_runs_pass_against_each_other(tmp_path: Path) -> None:
    first, _ = run(tmp_path / "a")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr
    proc, summary = run(tmp_path / "b", "--baseline", str(tmp_path / "a" / "summary.json"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    base = summary["baseline"]
    assert base["regressions"] == 0 and summary["verdict"]["reasons"] == []
    # what it tolerates is stated, in the output and in summary.json
    assert "grows by more than 20% and by more than 0.5 ms" in base["tolerates"]
    assert base["tolerates"] in " ".join(proc.stdout.split())  # wrapped within the terminal's 100 columns
    # the overall percentiles (over 1000 samples) were gated; the per-name ones of a 5 s run were shown, not gated
    overall = next(c for c in base["changes"] if c["name"] == "all requests" and c["metric"] == "p99_ms")
    assert overall["not_gated"] == ""
    assert any("fewer than 1000" in c["not_gated"] for c in base["changes"])


def test_a_server_twice_as_slow_fails(tmp_path: Path) -> None:
    args = ("--mix", "tools/call=1", "--timeout", "5")
    server, url = start_slow_server("--delay-ms", "40")
    try:
        first, _ = run(tmp_path / "a", "--target", url + "/mcp", *args)
    finally:
        server.kill()
        server.wait()
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr
    server, url = start_slow_server("--delay-ms", "80")
    try:
        proc, summary = run(tmp_path / "b", "--target", url + "/mcp", *args,
                            "--baseline", str(tmp_path / "a" / "summary.json"))
    finally:
        server.kill()
        server.wait()
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr
    regressed = {(c["name"], c["metric"]) for c in summary["baseline"]["changes"] if c["regression"]}
    # the median doubled; the tail of a busy machine's scheduling may hide it, the median cannot
    assert ("all requests", "p50_ms") in regressed
    assert ("all requests", "rps") not in regressed  # the rate was delivered: only latency regressed
    overall = next(c for c in summary["baseline"]["changes"] if c["name"] == "all requests" and c["metric"] == "p50_ms")
    assert 1.6 <= overall["after"] / overall["before"] <= 2.5, overall  # it really was about 2x slower
    assert summary["verdict"]["reasons"][0].startswith("regressions against the baseline")


def test_a_capacity_step_breaks_on_latency_or_on_an_undelivered_rate() -> None:
    slos = capacity.parse_slos(["p99_ms<50"])

    def step(p99: float, due: int, sent: int) -> dict:
        return {"requests": sent, "failures": 0, "rps": sent / 10, "overall": {"p99_ms": p99},
                "model": {"kind": "open", "rate": due / 10, "arrivals_due": due, "arrivals_sent": sent,
                          "max_in_flight": 64, "slots_busy_peak": 64, "not_started_at_stop": due - sent}}

    held, _, why = capacity.judge_step(slos, step(10.0, 10_000, 9_950), 0.01)  # 0.5% short: tolerated
    assert held and why is None
    held, results, why = capacity.judge_step(slos, step(80.0, 10_000, 10_000), 0.01)  # latency broke
    assert not held and why is None and results[0].value == 80.0
    held, _, why = capacity.judge_step(slos, step(10.0, 10_000, 5_000), 0.01)  # served half the rate
    assert not held and why is not None
    assert "5000 of 10000 arrivals due were not sent" in why and "all 64 slots" in why
    held, _, why = capacity.judge_step(slos, step(80.0, 10_000, 5_000), 0.01)  # both
    assert not held and why is not None

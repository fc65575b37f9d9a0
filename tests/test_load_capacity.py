"""`--find-capacity` finds a knee that exists, and the objectives read the right way round.

The slow test server serves one request at a time in 14 ms (`--workers 1 --delay-ms 14`), so it
cannot take more than about 70 requests per second: the search from 25/s must hold at a rate below
100/s and break at or below 200/s, and report the highest rate that held. (At 10 ms the capacity
sat at the 100/s step itself, and whether that step held was chance.) Short steps (2 s) and
one refining step keep the test bounded (about half a minute).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mcp_tempest.load import capacity
from tests.test_load_timeouts import start_slow_server


def test_capacity_search_finds_the_knee_of_a_server_with_known_capacity(tmp_path: Path) -> None:
    server, url = start_slow_server("--workers", "1", "--delay-ms", "14")
    out = tmp_path / "out"
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "mcp_tempest.load", "--target", url + "/mcp", "--find-capacity", "--slo", "p95_ms<100",
             "--slo", "failures<1%", "--start-rate", "25", "--step-time", "2s", "--refine", "1",
             "--mix", "tools/call=1", "--check-every", "0", "--max-in-flight", "200", "--timeout", "5",
             "--out", str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=180)
    finally:
        server.kill()
        server.wait()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((out / "capacity.json").read_text())
    rates = [s["rate"] for s in report["steps"]]
    assert rates[:2] == [25, 50], rates
    assert 25 <= report["capacity_rate"] < 100, report
    assert report["first_broken_rate"] <= 200
    broke = next(s for s in report["steps"] if s["rate"] == report["first_broken_rate"])
    assert not broke["held"] and broke["p99_ms"] >= 100  # it broke on latency: a queue built up
    assert all(s["held"] == (s["rate"] <= report["capacity_rate"]) for s in report["steps"])
    assert f"capacity: {report['capacity_rate']:g} arrivals/s held" in proc.stdout
    page = (out / "capacity.html").read_text()
    assert page.count('class="series"') >= 3 and "<script" not in page


def test_objectives_hold_while_their_comparison_is_true() -> None:
    slos = capacity.parse_slos(["p99_ms<50", "failures<0.1%"])
    assert [s.metric for s in slos] == ["p99_ms", "failure_rate"]
    ok = {"requests": 10000, "failures": 5, "overall": {"p99_ms": 49.0}}
    assert capacity.judge(slos, ok)[0]
    assert not capacity.judge(slos, {**ok, "failures": 11})[0]  # 0.11% of requests failed
    assert not capacity.judge(slos, {**ok, "overall": {"p99_ms": 50.0}})[0]
    assert not capacity.judge(slos, {"requests": 0, "failures": 0, "overall": {}})[0]  # no samples


def test_search_steps_up_then_bisects() -> None:
    """A synthetic server whose p99 jumps past 50 ms above 300/s: 100, 200, 400 (broke), 300, 350 ..."""
    slos = capacity.parse_slos(["p99_ms<50"])

    def run_step(rate: float) -> dict:
        return {"requests": 1000, "failures": 0, "overall": {"p99_ms": 10.0 if rate <= 300 else 500.0}}

    found = capacity.search(run_step, slos, start=100, refine=3)
    assert [s.rate for s in found.steps] == [100, 200, 400, 300, 350, 325]
    assert found.held == 300 and found.broke == 325

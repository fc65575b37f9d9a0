"""Timeouts are real and counted exactly, at any run length.

A deliberately slow server (tests/load_slow_server.py) answers every request after 20 ms, so each
user's waits add up to many times its 0.3 s timeout, and holds exactly the first 5 `tools/call`
requests for 0.8 s: the run must report exactly 5 timeouts, and nothing else failed. The soak
run (marked slow) keeps the embedded reference server busy for 150 s with 0 failures.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from mcp_tempest.targets.spawn_pool import free_ports

ROOT = Path(__file__).resolve().parent.parent
SLOW_SERVER = ROOT / "tests" / "load_slow_server.py"


def start_slow_server(*args: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_ports(1)[0]
    proc = subprocess.Popen([sys.executable, str(SLOW_SERVER), "--port", str(port), *args])
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(url + "/stats", timeout=1).read()
            return proc, url
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("slow server did not start")


def stats(url: str) -> dict:
    return json.loads(urllib.request.urlopen(url + "/stats", timeout=5).read())


def run_load(args: list[str], out: Path, timeout: float) -> tuple[subprocess.CompletedProcess[str], dict]:
    proc = subprocess.run([sys.executable, "-m", "mcp_tempest.load", "--out", str(out), *args], cwd=out.parent,
                          capture_output=True, text=True, timeout=timeout)
    path = out / "summary.json"
    return proc, (json.loads(path.read_text()) if path.is_file() else {})


def test_slow_server_timeouts_are_real_and_counted_exactly(tmp_path: Path) -> None:
    server, url = start_slow_server("--delay-ms", "20", "--slow-first", "5", "--slow-ms", "800")
    try:
        proc, summary = run_load(["--target", url + "/mcp", "--timeout", "0.3", "--users", "2", "--run-time", "6s",
                                  "--mix", "tools/call=1", "--check-every", "0"], tmp_path / "out", 90)
        seen = stats(url)
    finally:
        server.kill()
        server.wait()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert seen["slow"] == 5
    assert summary["failures_by_kind"] == {"timeout": 5}, summary["failures_by_kind"]
    assert summary["failures"] == 5
    # each user waited far longer than its timeout in total, and only the held requests timed out
    assert summary["requests"] * 0.020 / 2 > 3 * 0.3
    timed_out = sum(e["failures"] for e in summary["operations"].values())
    assert timed_out == 5
    # live progress, one line per update (stdout is not a terminal here)
    progress = re.findall(r"^\[\s*[0-9.]+s\] (\d+) requests, [0-9.]+ rps, (\d+) failures, \d+ MRTR in flight, "
                          r"p99 [0-9.]+ ms$", proc.stdout, flags=re.M)
    assert progress, proc.stdout
    assert all(int(f) <= 5 for _, f in progress)


@pytest.mark.slow
def test_soak_150s_on_the_reference_server_has_no_failures(tmp_path: Path) -> None:
    proc, summary = run_load(["--run-time", "150s", "--users", "4"], tmp_path / "out", 150 + 120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert summary["failures"] == 0 and summary["violations"] == 0
    assert summary["duration_s"] >= 149
    assert summary["requests"] > 150 * 50  # far more than one request per second per user
    assert summary["mrtr"]["operations"] > 0


def test_a_stall_shows_in_the_open_model_and_hides_in_the_closed_one(tmp_path: Path) -> None:
    """The server holds every request for 2 s once 150 calls have arrived. The open model keeps
    sending at 50/s and times each arrival from its intended start: a quarter of the arrivals
    wait behind the stall, so p99 and max show it. The closed model's 2 users simply stop sending
    while they wait, so only their 2 requests were slow: max shows the stall, p99 does not."""
    stall = ("--stall-after", "150", "--stall-s", "2")
    common = ["--mix", "tools/call=1", "--check-every", "0", "--run-time", "8s", "--progress-every", "0"]
    server, url = start_slow_server(*stall)
    try:
        proc, open_run = run_load(["--target", url + "/mcp", "--rate", "50", "--max-in-flight", "150", *common],
                                  tmp_path / "open", 90)
        assert stats(url)["stalled"] > 50
    finally:
        server.kill()
        server.wait()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    server, url = start_slow_server(*stall)
    try:
        proc, closed_run = run_load(["--target", url + "/mcp", "--users", "2", *common], tmp_path / "closed", 90)
        assert stats(url)["stalled"] >= 1
    finally:
        server.kill()
        server.wait()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert open_run["model"]["kind"] == "open" and closed_run["model"]["kind"] == "closed"
    opened, closed = open_run["overall"], closed_run["overall"]
    assert opened["p99_ms"] >= 1000 and opened["max_ms"] >= 1500, opened
    assert closed["max_ms"] >= 1500, closed  # the stall happened to the closed run too ...
    assert closed["p99_ms"] < opened["p99_ms"] / 4, (closed, opened)  # ... but its percentiles hide it
    # the open run's timeline shows the stall where it happened: a second whose p99 is over a second
    assert max(s["p99_ms"] or 0 for s in open_run["timeline"]) >= 1000

"""Release gates on a real run: a crossed --fail-on and a --baseline regression each exit 1.

The first run crosses a gate nobody could meet (p99 under a microsecond) while keeping one it
meets; the second compares against a baseline made from the first run's summary.json with
every latency a hundred times better and ten times the throughput, so the regressions are
certain and the run must fail on them alone (the server itself is clean).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from load_support import last_line


def run_load(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_tempest.load", "--users", "4", "--run-time", "3s", "--check-every", "0",
                           *args],
                          cwd=cwd, capture_output=True, text=True, timeout=90)


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    tmp = tmp_path_factory.mktemp("gates")
    proc = run_load(["--out", str(tmp / "a"), "--fail-on", "p99_ms>0.001", "--fail-on", "MRTR create_event:count<1"],
                    tmp)
    return proc, tmp / "a" / "summary.json"


def test_a_crossed_gate_exits_1(gated: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    proc, summary_path = gated
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr
    assert "gate 'p99_ms>0.001': CROSSED" in proc.stdout
    assert "gate 'MRTR create_event:count<1': ok" in proc.stdout
    summary = json.loads(summary_path.read_text())
    assert summary["failures"] == 0  # the server was fine: only the gate failed the run
    assert [g["crossed"] for g in summary["gates"]] == [True, False]
    (reason,) = summary["verdict"]["reasons"]  # the gate crossed, with the value that crossed it
    shown = re.fullmatch(r"gates crossed: p99_ms>0\.001 \(p99_ms = ([0-9.]+)\)", reason)
    assert shown and abs(float(shown[1]) - summary["gates"][0]["value"]) < 0.001, reason
    line = last_line(proc.stdout)  # the last line says FAIL, and why, in the same words
    assert line["failures"] == "0" and line["verdict"] == "FAIL" and line["why"] == reason, line[0]


def test_a_baseline_regression_exits_1(gated: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path) -> None:
    _, summary_path = gated
    baseline = json.loads(summary_path.read_text())
    baseline["rps"] *= 10
    for entry in [baseline["overall"], *baseline["operations"].values()]:
        for key in ("p50_ms", "p99_ms"):
            entry[key] /= 100
    (tmp_path / "baseline.json").write_text(json.dumps(baseline))
    proc = run_load(["--out", str(tmp_path / "b"), "--baseline", str(tmp_path / "baseline.json"),
                     "--baseline-margin", "20%",
                     # a 3 s run: every name gated, whatever its count (the minimum has its own test)
                     "--baseline-min-samples", "1"], tmp_path)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr
    assert "REGRESSION" in proc.stdout
    assert "all requests: rps" in proc.stdout
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["failures"] == 0 and summary["baseline"]["regressions"] > 0
    regressed = {(c["name"], c["metric"]) for c in summary["baseline"]["changes"] if c["regression"]}
    assert ("all requests", "rps") in regressed and ("MRTR create_event", "p99_ms") in regressed
    assert summary["verdict"]["reasons"][0].startswith("regressions against the baseline")

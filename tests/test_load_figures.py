"""Every figure of a load run comes from one set of samples, per mix and per load model.

Real Locust runs against the embedded reference server. Discovery and the tool probe are setup:
their samples carry names of their own (`setup tools/list`), so a method that is both setup and
workload is two names, and every workload arrival is in the overall figures. The run checks its
own figures (summary.json `consistency`); here they are recomputed independently from the
per-name rows, Locust's CSV and the printed table, and a --fail-on gate must read the same p99 as
the overall row. With `--mix tools/list=1` the overall row was once all zeros (every arrival filed
under the discovery's kind); it must now hold every tools/list arrival.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_tempest.load.recorder import KindClash, Recorder
from mcp_tempest.load.summary import build_summary, consistency

MIXES = {
    "tools-list-only": "tools/list=1",
    "default": "tools/list=2,tools/call=3,resources/read=2,prompts/get=1,mrtr=4",
    "mrtr-and-calls": "tools/call=1,mrtr=1",
}
# every mix on both models; the first two combinations run in the default suite
CASES = [
    pytest.param("tools-list-only", "open", id="tools-list-only-open"),
    pytest.param("default", "closed", id="default-closed"),
    pytest.param("tools-list-only", "closed", id="tools-list-only-closed", marks=pytest.mark.slow),
    pytest.param("default", "open", id="default-open", marks=pytest.mark.slow),
    pytest.param("mrtr-and-calls", "open", id="mrtr-and-calls-open", marks=pytest.mark.slow),
    pytest.param("mrtr-and-calls", "closed", id="mrtr-and-calls-closed", marks=pytest.mark.slow),
]


def run_load(tmp: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp / "out"
    proc = subprocess.run([sys.executable, "-m", "mcp_tempest.load", "--run-time", "3s", "--check-every", "0",
                           "--progress-every", "0", "--out", str(out), *args],
                          cwd=tmp, capture_output=True, text=True, timeout=120)
    path = out / "summary.json"
    return proc, (json.loads(path.read_text()) if path.is_file() else {})


@pytest.mark.parametrize(("mix", "model"), CASES)
def test_every_figure_is_read_from_the_same_samples(tmp_path: Path, mix: str, model: str) -> None:
    load_model = ["--rate", "150"] if model == "open" else ["--users", "4"]
    # a gate that holds (p99 under a minute) so the run passes and its value can be compared
    proc, s = run_load(tmp_path, "--mix", MIXES[mix], *load_model, "--fail-on", "p99_ms>60000")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert s["consistency"] == []
    ops = s["operations"]
    by_kind: dict[str, int] = {}
    for entry in ops.values():
        by_kind[entry["kind"]] = by_kind.get(entry["kind"], 0) + entry["count"]
    setup = by_kind.get("setup", 0)
    assert setup >= 2 and s["setup_requests"] == setup  # server/discover and tools/list at least
    assert all(name.startswith("setup ") == (e["kind"] == "setup") for name, e in ops.items())
    # overall count = the requests reported minus what is labelled setup (plus backlog arrivals)
    assert s["overall"]["count"] == s["requests"] - setup + by_kind.get("backlog", 0)
    assert s["requests"] == by_kind.get("request", 0) + setup
    assert sum(t["requests"] for t in s["timeline"]) == s["overall"]["count"]
    assert s["gates"][0]["value"] == s["overall"]["p99_ms"]
    if mix == "tools-list-only":
        assert ops["tools/list"]["kind"] == "request" and ops["setup tools/list"]["kind"] == "setup"
        assert ops["tools/list"]["count"] == s["overall"]["count"] > 100
        assert ops["tools/list"]["p99_ms"] == s["overall"]["p99_ms"]
    if model == "open":
        m = s["model"]
        assert m["delivered"] is True, m
        assert m["arrivals_sent"] >= 0.99 * m["arrivals_due"] > 300
        # every arrival due is accounted for: sent, taken too late, or never begun
        assert m["arrivals_due"] == m["arrivals_sent"] + m["backlog_timeouts"] + m["not_started_at_stop"]
        if mix == "tools-list-only":  # one request an arrival: each sent one is a sample, or was cut in flight
            assert ops["tools/list"]["count"] + m["in_flight_at_stop"] == m["arrivals_sent"], m
    # Locust's own report counts the same requests, setup included
    with open(tmp_path / "out" / "locust_stats.csv", newline="") as fh:
        rows = {(r["Type"], r["Name"]): int(r["Request Count"]) for r in csv.DictReader(fh)}
    assert sum(c for (kind, name), c in rows.items() if kind == "POST") == s["requests"]
    # the table's overall row prints the overall count, not the requests total
    row = next(line for line in proc.stdout.splitlines() if line.startswith("all requests"))
    assert row.split()[2] == str(s["overall"]["count"])


def test_a_rate_that_was_not_delivered_fails_and_says_why(tmp_path: Path) -> None:
    proc, s = run_load(tmp_path, "--rate", "1000000", "--mix", "tools/list=1", "--run-time", "2s")
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("FAIL: rate not delivered"))
    model = s["model"]
    missing = model["arrivals_due"] - model["arrivals_sent"]
    assert missing > 0.9 * model["arrivals_due"] and f"{missing} of {model['arrivals_due']} arrivals due" in line
    assert "slots (--max-in-flight) were busy" in line or "CPU-bound" in line
    assert s["failures"] == 0 and model["delivered"] is False
    assert any(r.startswith("rate not delivered") for r in s["verdict"]["reasons"])


def test_a_name_keeps_one_kind_and_a_tampered_summary_is_caught() -> None:
    rec = Recorder()
    rec.record("setup tools/list", 100, kind="setup")
    rec.record("tools/list", 200)
    with pytest.raises(KindClash):
        rec.record("tools/list", 300, kind="setup")
    s = build_summary(rec, target="t", duration_s=1.0, check_every=0, oracle="-")
    assert consistency(s) == [] and s["overall"]["count"] == 1 and s["requests"] == 2
    assert consistency({**s, "requests": 1}) and consistency({**s, "overall": {**s["overall"], "count": 2}})

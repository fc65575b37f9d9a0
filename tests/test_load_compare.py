"""`load --compare-target OLD`: both builds in one run, in alternating rounds, and a verdict.

Real runs: the candidate is the embedded reference server (or one started with the test aid
`serve --tool-delay-ms 10`, a build 10 ms slower per tool call), the baseline the reference server
started as `http+spawn:`, each on a store of its own. The identical pair runs beside two
CPU-burning processes (on the 2-core machine the suite runs on, that is the whole machine): it
must not be called a regression. Rounds are 1 s here so that each test stays within a minute;
the release-length sweep is tests/benchmarks/bench_load_compare.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mcp_tempest.load import compare
from mcp_tempest.load.gates import Change
from mcp_tempest.load.runner import baseline_hint


def reference(db: Path, *extra: str) -> str:
    return (f"http+spawn:{sys.executable} -m mcp_tempest.targets.reference --transport http --port {{port}} "
            f"--db {db} {' '.join(extra)}").strip()


def load(out: Path, *args: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess[str], dict]:
    proc = subprocess.run([sys.executable, "-m", "mcp_tempest.load", "--progress-every", "0", "--check-every", "0",
                           "--out", str(out), *args], cwd=out.parent, capture_output=True, text=True, timeout=timeout)
    path = out / "summary.json"
    return proc, (json.loads(path.read_text()) if path.is_file() else {})


@contextmanager
def cpu_burners(count: int = 2) -> Iterator[list[int]]:
    """`count` processes spinning on a core each, for the length of the block; killed by pid."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()


def test_identical_builds_pass_beside_two_cpu_burners(tmp_path: Path) -> None:
    with cpu_burners(2):
        proc, summary = load(tmp_path / "out", "--compare-target", reference(tmp_path / "old.sqlite3"),
                             "--run-time", "20s", "--round-time", "1s")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr
    comparison = summary["comparison"]
    assert comparison["verdict"] in (compare.NO_REGRESSION, compare.INCONCLUSIVE, compare.IMPROVEMENT), comparison
    assert comparison["regressions"] == []
    assert comparison["rounds"]["count"] == 16 and comparison["pairs"] == 8
    assert [r["build"] for r in comparison["per_round"][:4]] == ["baseline", "candidate", "candidate", "baseline"]
    for metric in ("p50_ms", "p99_ms", "rps"):
        m = comparison["metrics"][metric]
        assert m["low"] <= m["ratio"] <= m["high"], m
    # the burners were seen, and both builds ran in every round they were due
    assert comparison["machine"]["others_cores"] > 0.5, comparison["machine"]
    assert all(r["requests"] > 0 for r in comparison["per_round"])
    assert "verdict: " in proc.stdout and "B C C B" in proc.stdout


def test_a_build_10ms_slower_per_tool_call_fails(tmp_path: Path) -> None:
    slow = reference(tmp_path / "new.sqlite3", "--tool-delay-ms", "10")
    proc, summary = load(tmp_path / "out", "--target", slow, "--compare-target", reference(tmp_path / "old.sqlite3"),
                         "--run-time", "10s", "--round-time", "1s")
    assert proc.returncode == 1, proc.stdout[-4000:] + proc.stderr
    comparison = summary["comparison"]
    assert comparison["verdict"] == compare.REGRESSION
    # every tool call got slower: the overall median, and tools/call by name
    assert "all requests p50_ms" in comparison["regressions"]
    assert any(r.startswith("tools/call ") and r.endswith(" p50_ms") for r in comparison["regressions"])
    p50 = comparison["metrics"]["p50_ms"]
    assert p50["low"] > 1.1 and set(p50) >= {"ratio", "low", "high"}
    assert summary["verdict"]["exit_status"] == 1
    assert any("regression against the baseline build" in r for r in summary["verdict"]["reasons"])
    assert "verdict: REGRESSION" in proc.stdout
    # both builds side by side: the page names both, the baseline's merged figures are kept
    page = (tmp_path / "out" / "report.html").read_text()
    assert "Candidate against baseline" in page and "--tool-delay-ms 10" in page and "old.sqlite3" in page
    baseline = json.loads((tmp_path / "out" / "baseline-summary.json").read_text())
    assert baseline["requests"] > 0 and baseline["target"].endswith("old.sqlite3")
    assert len(list((tmp_path / "out" / "rounds").glob("round-*.json"))) == 8


def test_a_baseline_run_on_a_busy_machine_points_to_compare_target(tmp_path: Path) -> None:
    first, _ = load(tmp_path / "a", "--run-time", "3s")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr
    with cpu_burners(2):
        proc, summary = load(tmp_path / "b", "--run-time", "3s", "--baseline", str(tmp_path / "a" / "summary.json"))
    assert summary["machine"]["busy"], summary["machine"]
    assert "--compare-target" in summary["baseline"]["hint"]
    assert "note: the machine was busy" in proc.stdout


def test_a_large_baseline_change_on_a_quiet_machine_also_points_to_compare_target() -> None:
    quiet = {"busy": False}
    assert baseline_hint([Change("all requests", "p50_ms", 1.0, 1.2, False)], quiet) == ""
    hint = baseline_hint([Change("all requests", "rps", 1000.0, 430.0, True)], quiet)
    assert "-57%" in hint and "--compare-target OLD" in hint
    # a figure that was not gated (too few samples) is no evidence either way
    assert baseline_hint([Change("x", "p99_ms", 1.0, 9.0, False, "12 -> 10 samples")], quiet) == ""


def _round(p50: float, rps: float, names: dict[str, float] | None = None) -> dict:
    ops = {n: {"kind": "request", "count": 500, "p50_ms": v, "p99_ms": 4 * v} for n, v in (names or {}).items()}
    return {"duration_s": 1.0, "overall": {"count": rps, "p50_ms": p50, "p99_ms": 4 * p50}, "operations": ops}


def test_the_verdict_follows_the_interval_against_the_margin() -> None:
    order = compare.round_order(8)
    # a machine that drifts (x1.5 over the run) but two identical builds: no regression, ratio 1
    same = [_round(1.0 + 0.07 * i, 1000.0 - 20 * i, {"tools/call a": 1.0 + 0.07 * i}) for i in range(8)]
    for i in (1, 2):  # and one noisy pair either way
        same[i] = _round(same[i]["overall"]["p50_ms"] * (1.03 if i == 1 else 0.97), 1000.0 - 20 * i,
                         {"tools/call a": 1.0 + 0.07 * i})
    result = compare.compare(order, same, margin=0.1, confidence=0.95)
    assert result["verdict"] == compare.NO_REGRESSION, result
    # the candidate's rounds 30% slower on one name, everything else equal
    slower = [_round(1.0, 1000.0, {"tools/call a": (1.3 if side == compare.CANDIDATE else 1.0) * (1 + 0.01 * i)})
              for i, side in enumerate(order)]
    result = compare.compare(order, slower, margin=0.1, confidence=0.95)
    assert result["verdict"] == compare.REGRESSION
    assert result["regressions"] == ["tools/call a p50_ms", "tools/call a p99_ms"]  # overall did not move
    assert result["names"]["tools/call a"]["p50_ms"]["low"] > 1.1
    # the same slowdown inside noise as large as itself: inconclusive, with how many more rounds
    noisy = [_round(1.0 * (1.4 if i % 3 == 0 else 0.8), 1000.0) for i in range(8)]
    result = compare.compare(order, noisy, margin=0.1, confidence=0.95)
    assert result["verdict"] == compare.INCONCLUSIVE
    assert "more rounds" in compare.verdict_line({**result, "rounds": {"round_s": 1, "warmup_s": 0.25, "run_s": 10}})


def test_student_t_quantiles() -> None:
    assert abs(compare.t_quantile(0.975, 1) - 12.706) < 1e-3
    assert abs(compare.t_quantile(0.975, 7) - 2.365) < 1e-3
    assert abs(compare.t_quantile(0.95, 30) - 1.697) < 1e-3


def test_bad_compare_options_are_one_line(tmp_path: Path) -> None:
    for args, words in ((["--run-time", "5s"], "at least 8"),
                        (["--processes", "2"], "drop --processes"),
                        (["--compare-margin", "ten"], "--compare-margin"),
                        (["--compare-confidence", "100%"], "--compare-confidence")):
        proc, _ = load(tmp_path / "out", "--compare-target", "http://127.0.0.1:9/mcp", *args, timeout=30)
        assert proc.returncode == 2, proc.stderr
        assert words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    proc = subprocess.run([sys.executable, "-m", "mcp_tempest.targets.reference", "--tool-delay-ms", "10"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "--transport http" in proc.stderr

"""`mcp-tempest load` end to end on the embedded default: real servers, a real Locust run.

One short run does the work of several checks (its cost is Locust's start-up plus a few seconds
of load): two reference instances so MRTR retries land on the other process, a logLevel so the
server streams SSE and the time to the first event is measured, every response judged by the
oracle. The usage and unusable-target cases never start Locust.
"""

from __future__ import annotations

import contextlib
import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from load_support import TABLE_WIDTH, last_line

from mcp_tempest.load.runner import load_main


def run_load(args: list[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_tempest.load", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    tmp = tmp_path_factory.mktemp("load-clean")
    out = tmp / "out"
    proc = run_load(["--run-time", "4s", "--users", "6", "--instances", "2", "--log-level", "info",
                     "--check-every", "1", "--memory-threshold-mb", "16", "--out", str(out)], tmp)
    return proc, out


def test_clean_run_exits_0_with_a_summary_line(clean_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    proc, out = clean_run
    assert proc.returncode == 0, proc.stdout + proc.stderr + (out / "locust.log").read_text()[-3000:]
    line = last_line(proc.stdout)
    assert int(line["requests"]) > 100 and line["failures"] == "0" and int(line["mrtr"]) > 10
    assert line["violations"] == "0" and line["verdict"] == "PASS" and line["why"] is None, line[0]
    assert "p99.9" in proc.stdout and "MRTR create_event" in proc.stdout  # the table
    # the table fits the terminal, with the streamed-event column (--log-level) and every name
    table = proc.stdout[proc.stdout.index("name (latency in ms)"):proc.stdout.index("all requests")]
    assert "1st-ev p99" in table and max(len(row) for row in table.splitlines()) <= TABLE_WIDTH, table


def test_summary_json_follows_the_cli_contract(clean_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    _, out = clean_run
    summary = json.loads((out / "summary.json").read_text())
    for key in ("target", "duration_s", "requests", "failures", "rps", "operations", "violations"):
        assert key in summary, key
    ops = summary["operations"]
    for name in ("MRTR create_event", "tools/call create_event #1", "tools/call create_event #2", "tools/list"):
        assert name in ops, sorted(ops)
        for key in ("count", "failures", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms"):
            assert key in ops[name], (name, key)
        assert ops[name]["count"] > 0 and ops[name]["failures"] == 0
        entry = ops[name]
        assert entry["p50_ms"] <= entry["p90_ms"] <= entry["p95_ms"] <= entry["p99_ms"] <= entry["p999_ms"] <= entry["max_ms"]
    # every completed operation had a first leg and a retry
    assert ops["tools/call create_event #2"]["count"] >= ops["MRTR create_event"]["count"]
    assert summary["mrtr"]["operations"] == sum(e["count"] for n, e in ops.items() if n.startswith("MRTR "))
    # round-robin over two instances: retries were served by the other process (MRTR-18)
    assert summary["mrtr"]["retries_on_another_instance"] > 0
    assert summary["mrtr"]["max_in_flight"] > 1  # interleaved, not one operation at a time
    # with a logLevel the server streams logs before the result: SSE, timed at its first event
    assert summary["responses"]["sse"] > 0
    streamed = ops["tools/call create_event #2"]["first_event"]
    assert 0 < streamed["p50_ms"] <= ops["tools/call create_event #2"]["max_ms"]
    # the oracle judged every response (check-every 1) and found nothing
    assert summary["checks"]["checked"] >= summary["requests"] - 50
    assert summary["violations"] == 0
    # the harness started the servers, so it sampled their memory; no growth on a clean server
    assert summary["memory"]["sampled"] and not summary["memory"]["exceeded"]
    assert summary["verdict"] == {"exit_status": 0, "reasons": []}


def test_locust_reports_agree_with_the_exact_counts(clean_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    _, out = clean_run
    assert (out / "locust.html").stat().st_size > 1000
    rows = {(r["Type"], r["Name"]): r for r in csv.DictReader((out / "locust_stats.csv").open())}
    summary = json.loads((out / "summary.json").read_text())
    for name, entry in summary["operations"].items():
        kind = "MRTR" if entry["kind"] == "operation" else "POST"
        assert int(rows[(kind, name)]["Request Count"]) == entry["count"], name
        assert int(rows[(kind, name)]["Failure Count"]) == entry["failures"], name


def test_usage_errors_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [
        ["--mix", "tools/list=1,bogus=2"],
        ["--fail-on", "p99>5"],
        ["--run-time", "soon"],
        ["--target", "stdio:python -m mcp_tempest.targets.reference"],
        ["--target", "http://example.com/mcp"],
        ["--target", "http://127.0.0.1:9/mcp", "--instances", "2"],
        ["--baseline", str(tmp_path / "missing.json")],
        ["--timeout", "nan"], ["--timeout", "inf"], ["--timeout", "1e12"], ["--timeout", "0"],
        ["--run-time", "99999999999h"], ["--run-time", "0s"],
        ["--rate", "nan"], ["--rate", "-5"], ["--rate", "inf"], ["--rate", "1e300"],
        ["--rate", "10", "--users", "5"], ["--max-in-flight", "0", "--rate", "5"],
        ["--spawn-rate", "nan"], ["--memory-threshold-mb", "inf"],
        ["--find-capacity"], ["--find-capacity", "--slo", "p99_ms>5"], ["--find-capacity", "--slo", "p99>5"],
        ["--find-capacity", "--slo", "p99_ms<5", "--rate", "10"], ["--slo", "p99_ms<5"],
        ["--find-capacity", "--slo", "p99_ms<5", "--step-time", "never"],
        ["--fail-on", "p99_ms>5%"],
    ]
    for args in cases:
        # in-process: the runner never imports Locust or gevent, and usage errors stop before any spawn
        try:
            status = load_main([*args, "--out", str(tmp_path / "o")])
        except SystemExit as exc:
            status = exc.code
        err = capsys.readouterr().err
        assert status == 2, (args, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "error" in lines[0], (args, err)


def test_unusable_target_exits_2(tmp_path: Path) -> None:
    proc = run_load(["--target", "http://127.0.0.1:9/mcp", "--run-time", "2s", "--out", str(tmp_path / "o")],
                    tmp_path, timeout=30)
    assert proc.returncode == 2
    assert "unusable target" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_load(["--target", "http+spawn:python -c 'import sys; sys.exit(3)' {port}", "--run-time", "2s",
                     "--out", str(tmp_path / "o")], tmp_path, timeout=30)
    assert proc.returncode == 2 and "unusable target" in proc.stderr, proc.stderr


def test_an_unwritable_out_directory_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os

    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who may write anywhere; the file-in-the-way case still runs")
        assert load_main(["--out", str(locked), "--run-time", "1s"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "cannot write" in err[0], err
    finally:
        locked.chmod(0o700)


def test_an_out_path_that_is_a_file_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert load_main(["--out", str(blocker / "sub"), "--run-time", "1s"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--out" in err[0] and "is a file" in err[0], err


def test_sigterm_stops_locust_and_the_servers(tmp_path: Path) -> None:
    """`load` killed by a CI timeout (SIGTERM) must not leave Locust or the reference server behind."""
    import signal
    import time

    import psutil

    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "mcp_tempest.load", "--run-time", "120s", "--users", "2", "--out", str(out),
                             "--progress-every", "1"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # a progress line: Locust is running and load is being made
            if " rps, " in line and line.startswith("["):
                break
        family = psutil.Process(proc.pid).children(recursive=True)
        assert len(family) >= 2  # the reference server and Locust
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 143, err
        assert time.monotonic() - started < 20
        assert "terminated" in err and "Traceback" not in err
        _, alive = psutil.wait_procs(family, timeout=10)
        assert not alive, alive
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigkill_leaves_no_locust_worker_server_or_temporary_directory(tmp_path: Path) -> None:
    """A SIGKILLed `load` runs nothing of its own cleanup: Locust (and its forked workers) must
    die with it, as its servers do (targets/ownership.py), and its temporary directory goes at
    the next run."""
    import signal
    import tempfile
    import time

    import psutil

    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "mcp_tempest.load", "--run-time", "120s", "--users", "2", "--processes", "2",
                             "--out", str(out), "--progress-every", "1"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    family: list[psutil.Process] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if " rps, " in line and line.startswith("["):
                break
        family = psutil.Process(proc.pid).children(recursive=True)
        assert sum("locust" in " ".join(p.cmdline()) for p in family) >= 3  # master and two workers
        stale = list(Path(tempfile.gettempdir()).glob(f"mcp-tempest-load-{proc.pid}-*"))
        assert stale
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 15
        while any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in family) and time.monotonic() < deadline:
            time.sleep(0.1)
        alive = [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert not alive, [p.cmdline() for p in alive]
        # the next run removes the dead run's temporary directory before it starts
        again = subprocess.run([sys.executable, "-m", "mcp_tempest.load", "--run-time", "1s", "--users", "1",
                                "--out", str(tmp_path / "again")], cwd=tmp_path, capture_output=True, timeout=120)
        assert again.returncode == 0, again.stderr
        assert not any(p.exists() for p in stale)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for p in family:
            with contextlib.suppress(psutil.Error):
                p.kill()

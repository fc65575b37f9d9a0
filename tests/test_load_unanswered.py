"""Requests the server never answers are failures, whenever the run stops; answers are never.

A server that answers its first requests and then holds every request open
(tests/hostile/answers_then_hangs.py over http_front.py) used to pass `load` with `0 failures,
p99 0.00 ms`: the requests in flight at the stop were in no figure. Now each is a timeout of its
name, and the run fails saying when the server stopped answering. The other side of the same
rule: a healthy server's requests in flight at the stop, even slow ones, are answered within
their --timeout and never count (runs of the reference server, and of a server that takes
1.2 s per reply, end with 0 failures). The tables' width is measured here too.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest
from load_support import TABLE_WIDTH, last_line, run_load

from mcp_tempest.load import capacity, compare, gates
from mcp_tempest.load.recorder import NEVER_ANSWERED, REQUEST, SETUP, TIMEOUT, Recorder
from mcp_tempest.load.runner import format_progress
from mcp_tempest.load.summary import build_summary, format_table

TESTS = Path(__file__).resolve().parent
HANGS = "http+spawn:" + shlex.join([sys.executable, str(TESTS / "hostile" / "http_front.py"), "{port}",
                                    "answers_then_hangs"])
SLOW = "http+spawn:" + shlex.join([sys.executable, str(TESTS / "load_slow_server.py"), "--port", "{port}",
                                   "--delay-ms", "1200"])
# the widest names a real run shows: a long tool's legs, its probe, an MRTR tool's operation
LONG_NAMES = ("tools/call search_repositories_by_topic", "tools/call search_repositories_by_topic #1",
              "tools/call search_repositories_by_topic #2", "setup probe tools/call search_repositories_by_topic",
              "MRTR search_repositories_by_topic", "tools/call test_streaming_elicitation #2",
              "setup probe tools/call test_streaming_elicitation", "MRTR test_streaming_elicitation")


def _wide(text: str) -> list[str]:
    return [line for line in text.splitlines() if len(line) > TABLE_WIDTH]


def _table(stdout: str) -> str:
    """The end-of-run table of a load run's output: its head to its 'all requests' row."""
    start = stdout.index("name (latency in ms)")
    return stdout[start:stdout.index("\n", stdout.index("\nall requests", start) + 1)]


# --- a server that stops answering ---


@pytest.fixture(scope="module")
def wedged(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict, Path]:
    """2 users against a server that answers 12 requests (the harness's readiness check and
    preflight, each user's discovery and the tool probe, then a few calls) and never again, well
    within the run's first second. --timeout 5 outlasts the 4 s run: each user's last request is
    still waiting at the stop, and the progress windows of seconds 2 and 3 have no answer."""
    tmp = tmp_path_factory.mktemp("wedged")
    proc, summary = run_load(["--target", HANGS, "--users", "2", "--run-time", "4s", "--timeout", "5",
                              "--progress-every", "1", "--check-every", "0"], tmp, env={"HOSTILE_ANSWERS": "12"})
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr
    return proc.stdout, summary, tmp / "out"


def test_requests_in_flight_at_the_stop_are_timeouts_of_their_names(wedged: tuple[str, dict, Path]) -> None:
    _, summary, _ = wedged
    assert summary["never_answered"] == 2  # one per user: each waits for one answer at a time
    assert summary["failures"] == 2 and summary["failures_by_kind"] == {TIMEOUT: 2}, summary["failures_by_kind"]
    by_name = {n: e["failures_by_kind"] for n, e in summary["operations"].items() if e.get("failures")}
    assert sum(k[TIMEOUT] for k in by_name.values()) == 2, by_name
    assert all(summary["operations"][n]["kind"] == REQUEST for n in by_name), by_name  # workload, not setup
    # each timed to when the run gave up on it: at least the seconds it waited before the stop
    assert summary["overall"]["max_ms"] > 3000, summary["overall"]
    assert summary["overall"]["failures"] == 2 and summary["consistency"] == []
    # the server answered early in the run, then nothing
    assert summary["last_answer_s"] is not None and summary["last_answer_s"] < 2.0, summary["last_answer_s"]


def test_the_run_fails_saying_the_server_stopped_answering(wedged: tuple[str, dict, Path]) -> None:
    stdout, summary, out = wedged
    reason = summary["verdict"]["reasons"][0]
    assert re.fullmatch(r"2 requests never answered; the server stopped answering at t=[01]\.\ds", reason), reason
    assert summary["verdict"]["exit_status"] == 1
    line = last_line(stdout)
    assert line["verdict"] == "FAIL" and line["failures"] == "2" and line["why"].startswith(reason), line[0]
    assert reason in (out / "report.html").read_text()


def test_progress_without_answers_shows_no_latency(wedged: tuple[str, dict, Path]) -> None:
    stdout, _, _ = wedged
    progress = [line for line in stdout.splitlines() if line.startswith("[")]
    assert any(line.endswith(", 0 answered") for line in progress), progress  # the windows after the wedge
    assert not any("p99 0.00 ms" in line for line in progress), progress
    assert any("stopping: 2 requests in flight unanswered" in line for line in progress), progress


def test_the_table_of_a_long_tool_name_fits(wedged: tuple[str, dict, Path]) -> None:
    stdout, summary, _ = wedged
    assert "tools/call search_repositories_by_topic" in summary["operations"]
    table = _table(stdout)
    assert "setup probe tools/call search_repositories_by_topic" in table and _wide(table) == [], table


# --- healthy servers: requests in flight at the stop are answered, never failures ---


@pytest.mark.parametrize("attempt", [1, 2, 3])
def test_a_healthy_run_has_no_failures_at_the_stop(tmp_path: Path, attempt: int) -> None:
    """10 users always have requests in flight when the run stops; the reference server answers
    them, so none may count (a run that counted them would fail here every time)."""
    proc, summary = run_load(["--run-time", "4s", "--progress-every", "0"], tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert summary["failures"] == 0 and summary["never_answered"] == 0, summary["failures_by_kind"]
    assert summary["last_answer_s"] >= summary["duration_s"] - 1.0
    line = last_line(proc.stdout)
    assert line["verdict"] == "PASS" and line["why"] is None and line["failures"] == "0", line[0]
    assert _wide(_table(proc.stdout)) == []


def test_a_slow_answer_at_the_stop_is_waited_for_not_failed(tmp_path: Path) -> None:
    """Every reply takes 1.2 s (under the 10 s --timeout): the requests in flight at the stop
    take up to 1.2 s more to be answered, longer than any short fixed grace, and are answered."""
    proc, summary = run_load(["--target", SLOW, "--users", "2", "--run-time", "5s", "--progress-every", "0",
                              "--check-every", "0", "--mix", "tools/call=1"], tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert summary["failures"] == 0 and summary["never_answered"] == 0, summary["failures_by_kind"]
    assert last_line(proc.stdout)["verdict"] == "PASS"


# --- the recorder's accounting, exactly ---


def test_the_recorder_counts_what_the_stop_caught_and_nothing_else() -> None:
    rec = Recorder()
    answered_before = rec.sent("tools/list", REQUEST, 0)
    rec.ended(answered_before, None)  # answered while measuring: recorded by its caller, not here
    late = rec.sent("tools/call a", REQUEST, 0)
    timed_out = rec.sent("tools/call b", REQUEST, 0)
    stuck = rec.sent("setup tools/list", SETUP, 0)
    rec.forget(rec.sent("tools/call c", REQUEST, 0))  # the harness's own error: no one's silence
    rec.close()
    after = rec.sent("tools/list", REQUEST, 0)  # begun while stopping: in no figure
    rec.ended(late, "rpc -32603")  # an answer (an error is one), after the stop: not timed, not failed
    rec.ended(timed_out, TIMEOUT)  # its own --timeout fired while the stop waited
    assert rec.give_up() == 1  # `stuck` was still waiting; `after` is not the stop's
    assert rec.counters[NEVER_ANSWERED] == 2 and rec.failures == {TIMEOUT: 2}
    assert rec.names["tools/call b"].failures == {TIMEOUT: 1} and rec.names["setup tools/list"].kind == SETUP
    assert set(rec.names) == {"tools/call b", "setup tools/list"} and after in rec.waiting
    assert stuck not in rec.waiting  # given up on: a timeout sample now, not waiting any more
    assert rec.last_answer is not None
    # a worker's count and last answer reach the master
    master = Recorder()
    master.merge_wire(rec.drain(), source="w1")
    assert master.counters[NEVER_ANSWERED] == 2 and master.last_answer == rec.last_answer
    master.started = rec.last_answer - 5.0
    summary = build_summary(master, target="t", duration_s=10.0, check_every=0, oracle="x")
    assert summary["never_answered"] == 2 and summary["last_answer_s"] == 5.0 and summary["failures"] == 2


# --- no samples, no latency; every table within 100 columns ---


def _entry(count: int, kind: str = REQUEST, first: bool = False) -> dict:
    figures = {k: 12345.678 * (i + 1) for i, k in enumerate(("p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms",
                                                              "max_ms", "mean_ms"))}
    entry = {"kind": kind, "count": count, "failures": count // 3, "is_error": count // 7, "rps": count / 3.0,
             **(figures if count else dict.fromkeys(figures, 0.0))}
    if first:
        entry["first_event"] = {"count": count, "p99_ms": 999.5}
    return entry


def test_the_table_fits_100_columns_with_the_widest_names_and_figures() -> None:
    ops = {name: _entry(9_876_543, "operation" if name.startswith("MRTR") else
                        "setup" if name.startswith("setup") else REQUEST, first=True) for name in LONG_NAMES}
    summary = {"operations": ops, "overall": _entry(0), "duration_s": 3.0, "requests": 5, "failures": 0,
               "setup_requests": 1}
    table = format_table(summary)
    assert _wide(table) == [], _wide(table)
    for name in LONG_NAMES:  # every name in full, never cut
        assert any(line == name or line.startswith(name + " ") for line in table.splitlines()), name
    overall = next(line for line in table.splitlines() if line.startswith("all requests"))
    assert overall.split()[-5:] == ["-"] * 5 and "0.000" not in overall  # no samples: no latency


def test_a_latency_gate_without_samples_is_crossed_not_passed_by_a_zero() -> None:
    summary = {"requests": 4, "overall": {"count": 0, "p99_ms": 0.0}, "operations": {}}
    (result,) = gates.evaluate(gates.parse_gates(["p99_ms>2"]), summary)
    assert result.value is None and result.crossed and result.why() == "p99_ms>2 (no samples)"
    (result,) = gates.evaluate(gates.parse_gates(["p99_ms>2"]), {**summary, "overall": {"count": 9, "p99_ms": 3.25}})
    assert result.crossed and result.why() == "p99_ms>2 (p99_ms = 3.25)"


def test_progress_lines_without_answers_say_so() -> None:
    assert format_progress({"t": 4.0, "requests": 9, "rps": 0.0, "answered": 0, "p99_ms": None}).endswith(
        ", 0 answered")
    assert format_progress({"t": 4.0, "requests": 9, "rps": 3.0, "answered": 3, "p99_ms": 1.5}).endswith(
        "p99 1.50 ms")
    rounds = format_progress({"round": 1, "rounds": 8, "build": "baseline", "requests": 0, "p99_ms": None})
    assert "0 answered" in rounds and "0.000 ms" not in rounds


def _comparison() -> dict:
    order = compare.round_order(8)
    rounds = []
    for i, side in enumerate(order):
        slower = 1.3 if side == compare.CANDIDATE else 1.0
        drift = slower * (1 + 0.01 * i)
        ops = {name: {"kind": REQUEST, "count": 150 if name.startswith("MRTR") else 500, "p50_ms": 1000.0 * drift,
                      "p99_ms": 4000.0 * drift} for name in LONG_NAMES}
        rounds.append({"duration_s": 1.0, "overall": {"count": 99_999, "p50_ms": 1.0, "p99_ms": 4.0},
                       "operations": ops})
    result = compare.compare(order, rounds, margin=0.1, confidence=0.95)
    result.update(rounds={"count": 8, "round_s": 1, "warmup_s": 0.25, "run_s": 10},
                  candidate={"target": "embedded reference server"}, baseline={"target": "http+spawn:old {port}"},
                  machine={"text": "2 cores; others used 0.1 core"})
    return result


def test_the_compare_and_capacity_tables_fit_100_columns() -> None:
    comparison = _comparison()
    assert comparison["verdict"] == compare.REGRESSION  # every long name is a row of the table
    text = compare.format_comparison(comparison)
    assert _wide(text) == [], _wide(text)
    assert all(name in text for name in LONG_NAMES)
    assert "not gated (150 samples)" in text  # each figure's own count in its cell, the rule once below
    assert text.count("not gated (N samples): N samples in a round, fewer than 200") == 1
    row = {"rate": 20000.0, "rps": 19876.5, "requests": 9_876_543, "failure_rate": 12.345, "p50_ms": 12345.6,
           "p99_ms": 999999.0, "max_ms": None, "held": False, "objectives": {"p99_ms": 999999.0, "failure_rate": None},
           "undelivered": "rate not delivered: 123 of 5000 arrivals due were not sent (12 due but never begun by "
                          "a slot), 2.5% > the 1% tolerated; all 64 slots (--max-in-flight) were busy"}
    assert _wide(capacity.HEADER + "\n" + capacity.format_row(row, 12)) == []

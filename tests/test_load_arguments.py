"""Load arguments come from fuzz's pools, values flow within a user, and isError is an answer.

Real servers and real Locust runs (a few seconds each):

- the reference server started by command (http+spawn): list_events requires a calendarId that
  only open_calendar mints, and create_event takes one; every call of theirs succeeds, and the
  events land in the calendars the users opened, not only the default one;
- `--tool-args` (here from pyproject.toml, as fuzz reads it) makes every list_events refuse an
  unknown calendar: isError answers, counted and shown apart, and the run passes;
- the memory-store mutant with two instances refuses on one instance the calendarId the other
  minted: shown as refused handles, and failing the run when the user gates on them.
"""

from __future__ import annotations

import shlex
import sqlite3
from pathlib import Path

from load_support import run_load

from mcp_tempest.load.runner import load_main
from mcp_tempest.targets.target_spec import reference_command


def test_tools_that_take_a_minted_handle_succeed_under_load(tmp_path: Path) -> None:
    db = tmp_path / "reference.sqlite3"
    target = "http+spawn:" + shlex.join(reference_command("--transport", "http", "--host", "127.0.0.1",
                                                          "--port", "{port}", "--db", str(db)))
    proc, summary = run_load(["--target", target, "--users", "4", "--run-time", "4s", "--check-every", "1",
                              "--mix", "tools/call=3,mrtr=1", "--tools", "open_calendar,create_event,list_events"],
                             tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert summary["failures"] == 0 and summary["violations"] == 0
    assert summary["is_error"] == 0 and summary["responses"]["tool_errors"] == 0, summary["answers"]
    ops = summary["operations"]
    for name in ("tools/call open_calendar", "tools/call create_event", "tools/call list_events",
                 "MRTR create_event"):
        assert ops[name]["count"] > 20 and ops[name]["failures"] == 0 and ops[name]["is_error"] == 0, (name, ops[name])
    # the target's own command line was read as an argument source (its --db path, its host)
    assert summary["config"]["argument_sources"]["command_line"] >= 2
    # create_event took the calendarIds open_calendar returned to its user: events outside the default calendar
    with sqlite3.connect(db) as conn:
        opened = conn.execute("SELECT COUNT(*) FROM events WHERE calendar_id != 'cal_chapter'").fetchone()[0]
    assert opened > 20


def test_an_is_error_answer_is_counted_apart_and_fails_nothing(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.mcp-tempest.tool-args.list_events]\ncalendarId = "no-such-calendar"\n', encoding="utf-8")
    proc, summary = run_load(["--users", "3", "--run-time", "3s", "--check-every", "2",
                              "--mix", "tools/call=1", "--tools", "echo,list_events"], tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert summary["failures"] == 0 and summary["violations"] == 0 and summary["failures_by_kind"] == {}
    refused = summary["operations"]["tools/call list_events"]
    assert refused["failures"] == 0 and refused["is_error"] == refused["count"] > 20
    assert refused["answers"] == [{"text": "unknown calendarId; call open_calendar first", "count": refused["count"]}]
    assert summary["operations"]["tools/call echo"]["is_error"] == 0
    # the run's total counts every request's isError (the probe's too), and the old key agrees
    assert summary["is_error"] == summary["responses"]["tool_errors"] == refused["count"] + 1
    assert summary["answers"][0] == {"name": "tools/call list_events", "text": refused["answers"][0]["text"],
                                     "count": refused["count"]}
    assert summary["refused_handles"] == {}  # the user's calendarId, not one the server returned
    assert summary["config"]["argument_sources"]["tool_args"] == {"list_events": ["calendarId"]}
    assert summary["verdict"] == {"exit_status": 0, "reasons": []}
    table = proc.stdout
    assert "isError" in table.splitlines()[next(i for i, line in enumerate(table.splitlines())
                                                if line.startswith("name"))]
    assert f"isError results: {summary['is_error']} (answers, not failures" in table
    assert "tools/call list_events x" in table and "unknown calendarId" in table
    # Locust's own report counts no failure either
    assert "unknown calendarId" not in (tmp_path / "out" / "locust_failures.csv").read_text()
    assert "isError results" in (tmp_path / "out" / "report.html").read_text()


def test_refused_handles_of_instances_that_do_not_share_state_are_shown_and_can_fail(tmp_path: Path) -> None:
    proc, summary = run_load(["--bug", "memory-store", "--instances", "2", "--users", "3", "--run-time", "3s",
                              "--check-every", "0", "--mix", "tools/call=1", "--tools", "open_calendar,list_events",
                              "--fail-on", "refused_handles>0"], tmp_path)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr
    assert summary["failures"] == 0  # every answer was a well-formed isError result
    assert summary["refused_handles"]["calendarId"] > 0
    refused = sum(summary["refused_handles"].values())  # the gate's reason says the value that crossed it
    assert summary["verdict"]["reasons"] == [f"gates crossed: refused_handles>0 (refused_handles = {refused})"]
    assert "refused a handle this server had returned" in proc.stdout


def test_an_unusable_tool_args_file_exits_2_with_one_line(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "args.json"
    bad.write_text("{not json", encoding="utf-8")
    assert load_main(["--tool-args", str(bad), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"mcp-tempest load: error: --tool-args {bad}: not valid JSON"), err

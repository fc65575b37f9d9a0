"""What a replay file may make `mcp-tempest replay` do (issue 32): a repro is input, and a shared
one is a script.

- Every wait the file carries (recorded timeouts, a step's timeout, a client play's hold) is held
  to the range `--timeout` takes: one line, exit 2, before anything runs (1e9 was a traceback).
- The command line a file records is said before it runs, with the way to run another
  (`--target`, `--client`); given another target, nothing recorded runs and nothing is said.
- A recorded working directory that does not exist here is said, and the target runs from the
  current directory (a colleague's checkout path, the usual case: see `fuzz.replay.RunPlace`).

One real finding is made once for the module (the `exit-on-newline` mutant dies on a blank line).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from fuzz_support import PYTHON, last_line, reference_stdio, run_cli

from mcp_tempest.fuzz.cli import main as cli_main
from mcp_tempest.fuzz.client.case import ClientCase, Play
from mcp_tempest.targets.validate import MAX_SECONDS

RECORDED = "replay: running the recorded target: "


@pytest.fixture(scope="module")
def repro(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    base = tmp_path_factory.mktemp("replay-inputs")
    mutant = reference_stdio(base / "mutant.sqlite3", "exit-on-newline")
    out = base / "out"
    assert cli_main(["fuzz", "--target", mutant, "--properties", "framing", "--mutations", "blank-line",
                     "--max-examples", "10", "--seed", "1", "--out", str(out), "--no-database",
                     "--shrink-time", "3", "--first-finding", "--progress", "never", "--fail-on", "heuristic"]) == 1
    index = orjson.loads((out / "findings.json").read_bytes())
    doc = orjson.loads((out / index["findings"][0]["repro"]).read_bytes())
    return {"doc": doc, "mutant": mutant, "reference": reference_stdio(base / "reference.sqlite3")}


def _write(tmp_path: Path, doc: dict, name: str = "edited.json") -> Path:
    path = tmp_path / name
    path.write_bytes(orjson.dumps(doc))
    return path


def _with(doc: dict, **changes: object) -> dict:
    return orjson.loads(orjson.dumps({**doc, **changes}))


# --- waits out of range ---


@pytest.mark.parametrize(("edit", "field", "shown"), [
    (lambda d: d["timeouts"].update(answer=1e9), "timeouts.answer", "1000000000.0"),
    (lambda d: d["timeouts"].update(answer=1e6), "timeouts.answer", "1000000.0"),
    (lambda d: d["timeouts"].update(start=MAX_SECONDS + 1), "timeouts.start", "604801.0"),
    (lambda d: d["timeouts"].update(answer=0), "timeouts.answer", "0"),
    (lambda d: d["timeouts"].update(start=-3), "timeouts.start", "-3"),
    (lambda d: d["case"]["steps"][0].update(timeout=1e9), "case.steps[0].timeout", "1000000000.0"),
], ids=["answer-1e9", "answer-1e6", "start-over-a-week", "answer-zero", "start-negative", "step-1e9"])
def test_a_wait_out_of_the_timeout_range_is_refused_in_one_line(repro: dict, tmp_path: Path, edit, field: str,
                                                               shown: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Against the reference server, which answers at once: without the check these replayed
    (0 and -3 fell back to the default silently, 1e6 armed an eleven-day wait, 1e9 overflowed)."""
    doc = _with(repro["doc"], target=repro["reference"])
    edit(doc)
    path = _write(tmp_path, doc)
    assert cli_main(["replay", str(path)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert err == [f"mcp-tempest replay: {path}: {field} must be a number of seconds from more than 0 to 604800, "
                   f"not {shown}"], err
    assert RECORDED not in captured.out  # refused before anything ran


def test_the_file_is_held_to_the_same_words_as_the_option(repro: dict, tmp_path: Path) -> None:
    """The real command: the option's refusal and the file's differ only in what they name."""
    doc = _with(repro["doc"], target=repro["reference"])
    doc["timeouts"]["answer"] = 1e9
    path = _write(tmp_path, doc)
    by_file = run_cli("replay", str(path), timeout=60)
    by_option = run_cli("replay", str(path), "--timeout", "1e9", timeout=60)
    for proc in (by_file, by_option):
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert by_option.stderr.split("--timeout ", 1)[1] == by_file.stderr.split("timeouts.answer ", 1)[1]


@pytest.mark.parametrize("timeouts", ["fast", [5], {"answer": "5"}, {"answer": True}])
def test_mistyped_timeouts_are_one_line(repro: dict, tmp_path: Path, timeouts: object,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, _with(repro["doc"], target=repro["reference"], timeouts=timeouts))
    assert cli_main(["replay", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "timeouts" in err[0], err


def test_a_null_timeout_is_one_the_file_leaves_out(repro: dict, tmp_path: Path) -> None:
    path = _write(tmp_path, _with(repro["doc"], target=repro["reference"], timeouts={"answer": None, "start": None}))
    assert cli_main(["replay", str(path)]) == 0


def test_a_client_plays_hold_is_range_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = ClientCase(plays={"tools/call": [Play("result", result={"resultType": "complete", "content": []},
                                                 hold=1e9)]})
    doc = {"id": "c", "rule": "RPC-05", "target": f"{PYTHON} -c pass {{server}}", "case": case.to_json(),
           "transcript": {"target": "t", "transport": "stdio", "events": []}}
    path = _write(tmp_path, doc)
    assert cli_main(["replay", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"mcp-tempest replay: {path}: case.plays['tools/call'][0].hold must be a number of seconds "
                   "from 0 to 604800, not 1000000000.0"], err


# --- the recorded command line is said before it runs ---


def test_the_recorded_target_is_said_before_it_runs(repro: dict, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, repro["doc"])
    assert cli_main(["replay", str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (f"{RECORDED}{repro['mutant']} (cwd {repro['doc']['cwd']}); "
                        "pass --target TARGET to replay against another"), lines
    assert "still fails" in last_line("\n".join(lines))
    # --target: another server runs instead, and nothing recorded is announced.
    assert cli_main(["replay", str(path), "--target", repro["reference"]]) == 0
    out = capsys.readouterr().out
    assert RECORDED not in out and "no longer fails" in last_line(out)


def test_the_notice_shows_control_characters_escaped(repro: dict, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A target text is the file's: an escape sequence in it must not reach the terminal raw."""
    doc = _with(repro["doc"], target="stdio:/nonexistent/\x1b[2Jserver")
    assert cli_main(["replay", str(_write(tmp_path, doc))]) == 2
    captured = capsys.readouterr()
    assert "\x1b" not in captured.out and RECORDED in captured.out and "could not run" in captured.err


def test_a_recorded_cwd_that_does_not_exist_here_is_said_and_the_target_runs_from_here(
        repro: dict, tmp_path: Path) -> None:
    """A colleague's repro: their checkout path does not exist here; run from ours, where the
    relative command means the same thing, and say so."""
    project = tmp_path / "checkout"
    project.mkdir()
    (project / "server.py").write_text(
        "import runpy, sys\n"
        f"sys.argv = ['reference', '--transport', 'stdio', '--db', {str(tmp_path / 'm.db')!r}, '--bug', 'exit-on-newline']\n"
        "runpy.run_module('mcp_tempest.targets.reference', run_name='__main__')\n")
    alice = "/nonexistent/home/alice/project"
    path = _write(tmp_path, _with(repro["doc"], target=f"stdio:{PYTHON} server.py", cwd=alice))
    proc = subprocess.run([sys.executable, "-m", "mcp_tempest.fuzz.cli", "replay", str(path)], cwd=project,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1 and "still fails" in last_line(proc.stdout), proc.stdout + proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith(f"{RECORDED}stdio:{PYTHON} server.py (cwd {project}: the recorded cwd {alice} "
                            "does not exist here)"), first
    # Elsewhere the command cannot start: "could not run" (exit 2), after the line that says where it ran.
    proc = subprocess.run([sys.executable, "-m", "mcp_tempest.fuzz.cli", "replay", str(path)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and "could not run the target" in proc.stderr, proc.stdout + proc.stderr
    assert f"cwd {tmp_path}: the recorded cwd {alice} does not exist here" in proc.stdout


def test_the_recorded_client_is_said_before_it_runs(tmp_path: Path) -> None:
    client = f"{PYTHON} -c pass {{server}}"
    doc = {"id": "c", "rule": "MRTR-10", "target": client, "case": ClientCase().to_json(),
           "transcript": {"target": "t", "transport": "stdio", "events": []}}
    path = _write(tmp_path, doc)
    recorded = run_cli("replay", str(path), timeout=60)
    assert recorded.returncode == 2, recorded.stdout + recorded.stderr  # it never starts its server
    assert recorded.stdout.splitlines()[0] == (f"replay: running the recorded client: {client}; "
                                               "pass --client CMD to replay against another")
    other = run_cli("replay", str(path), "--client", f"{PYTHON} -c 'pass' {{server}}", timeout=60)
    assert other.returncode == 2 and "running the recorded client" not in other.stdout

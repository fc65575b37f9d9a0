"""`mcp-tempest replay` and the regression tests written from findings.

One real finding is made once for the module (the `exit-on-newline` mutant dies on a blank
line), then replayed: against the mutant it still fails, against the reference it does not,
from its case or from its transcript alone, and as a generated pytest file; with its recorded
signature edited, or on a mutant with another bug, it fails differently (exit 3).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import orjson
import pytest
from fuzz_support import PYTHON, last_line, processes_mentioning, reference_stdio, run_cli

from mcp_tempest.fuzz.cli import main as cli_main
from mcp_tempest.fuzz.regression import write_regressions
from mcp_tempest.fuzz.replay import recorded_timeouts, replay_document


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | str]:
    base = tmp_path_factory.mktemp("replay")
    mutant = reference_stdio(base / "mutant.sqlite3", "exit-on-newline")
    out = base / "out"
    status = cli_main(["fuzz", "--target", mutant, "--properties", "framing", "--mutations", "blank-line",
                       "--max-examples", "10", "--seed", "1", "--out", str(out), "--no-database",
                       "--shrink-time", "3", "--first-finding", "--progress", "never", "--fail-on", "heuristic"])
    assert status == 1
    index = orjson.loads((out / "findings.json").read_bytes())
    repro = out / index["findings"][0]["repro"]
    return {"base": base, "out": out, "repro": repro, "mutant": mutant,
            "reference": reference_stdio(base / "reference.sqlite3")}


def test_replay_still_fails_on_the_mutant(campaign: dict) -> None:
    proc = run_cli("replay", str(campaign["repro"]), timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # Filed under the server's duty (the request after the blank line was never answered,
    # RPC-01); the probe that provoked it, a blank line (STDIO-02), is named beside it.
    assert "still fails" in last_line(proc.stdout) and "RPC-01" in last_line(proc.stdout)
    repro = orjson.loads(Path(campaign["repro"]).read_bytes())
    assert any(v.get("probe") == "blank-line" and v.get("probe_rule") == "STDIO-02" for v in repro["violations"])


def test_replay_passes_on_the_reference(campaign: dict, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["replay", str(campaign["repro"]), "--target", campaign["reference"]]) == 0
    assert "no longer fails" in last_line(capsys.readouterr().out)
    assert not processes_mentioning(str(campaign["base"]))


def test_replay_from_the_transcript_alone(campaign: dict, tmp_path: Path) -> None:
    """Without its case a file replays its recorded frames and any violation counts. The blank-line
    finding above is no such file: its transcript ends at the death, with no request the server
    left unanswered (the case's expectation carried the verdict), so a bug visible in the frames
    themselves is used: results without resultType."""
    mutant = reference_stdio(tmp_path / "mrt.sqlite3", "missing-result-type")
    out = tmp_path / "out"
    assert cli_main(["fuzz", "--target", mutant, "--properties", "valid", "--max-examples", "10", "--seed", "1",
                     "--out", str(out), "--no-database", "--shrink-time", "3", "--stop-on-first",
                     "--progress", "never"]) == 1
    index = orjson.loads((out / "findings.json").read_bytes())
    doc = orjson.loads((out / index["findings"][0]["repro"]).read_bytes())
    doc.pop("case")
    bare = tmp_path / "bare.json"
    bare.write_bytes(orjson.dumps(doc))
    assert cli_main(["replay", str(bare)]) == 1
    assert cli_main(["replay", str(bare), "--target", campaign["reference"]]) == 0


def test_replay_json_and_show(campaign: dict, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["replay", str(campaign["repro"]), "--json", "--show"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert any("-> send" in line for line in lines)
    outcome = orjson.loads(next(line for line in lines if line.startswith("{")))
    assert outcome["still_fails"] is True and outcome["same_rule"] is True
    assert {(v["rule"], v.get("probe_rule")) for v in outcome["violations"]} >= {("RPC-01", "STDIO-02")}


def _edited(campaign: dict, tmp_path: Path, **changes: object) -> Path:
    doc = orjson.loads(Path(campaign["repro"]).read_bytes())
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    path = tmp_path / "edited.json"
    path.write_bytes(orjson.dumps(doc))
    return path


def test_replay_still_fails_only_on_the_recorded_signature(campaign: dict, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The mutant breaks RPC-01 again, but not in the way this file now records: the recorded bug
    did not recur, a different violation did (exit 3), in every attempt; then under another probe."""
    doc = orjson.loads(Path(campaign["repro"]).read_bytes())
    assert doc["reaction"] and doc["probe"] == "blank-line"
    edited = _edited(campaign, tmp_path, reaction="JSON that is not a valid request got no reply")
    assert cli_main(["replay", str(edited), "--attempts", "2", "--json"]) == 3
    lines = capsys.readouterr().out.splitlines()
    outcome = orjson.loads(next(line for line in lines if line.startswith("{")))
    assert outcome["outcome"] == "fails differently" and outcome["same_rule"] and not outcome["same_bug"]
    assert outcome["recorded"] == ["RPC-01", "JSON that is not a valid request got no reply", "blank-line"]
    assert re.search(r"the recorded bug did not recur; a different violation did: \w+ RPC-01 .+ \(2 of 2 attempts\)$",
                     lines[-2]), lines[-2]
    assert re.fullmatch(r"replay: \S+, 2 attempts: FAIL \(the recorded bug did not recur; a different violation did: "
                        r"\w+ RPC-01, 2 of 2 attempts\)", lines[-1]), lines[-1]
    assert cli_main(["replay", str(_edited(campaign, tmp_path, probe="nul-byte", mutation="nul-byte"))]) == 3
    assert "did not recur" in last_line(capsys.readouterr().out)


def test_replay_on_another_bug_says_it_is_a_different_violation(campaign: dict, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The blank-line case on a server that survives blank lines but drops resultType (a real
    mutant): not this finding, yet not a pass either."""
    other = reference_stdio(tmp_path / "mrt.sqlite3", "missing-result-type")
    assert cli_main(["replay", str(campaign["repro"]), "--target", other]) == 3
    said = last_line(capsys.readouterr().out)
    assert "the recorded bug did not recur; a different violation did: MUST RT-01" in said, said
    assert not processes_mentioning(str(tmp_path))


def test_a_file_without_a_recorded_reaction_is_matched_by_its_rule(campaign: dict, tmp_path: Path) -> None:
    """Files written before reactions were recorded keep their meaning: the rule alone."""
    assert cli_main(["replay", str(_edited(campaign, tmp_path, reaction=None, title="an older title"))]) == 1
    wrong_rule = _edited(campaign, tmp_path, reaction=None, rule="RT-01")
    assert cli_main(["replay", str(wrong_rule)]) == 3


@pytest.mark.parametrize(
    ("make_args", "message"),
    [
        (lambda d: [str(d / "missing.json")], "cannot read"),
        (lambda d: [str(d / "garbage.json")], "is not JSON"),
        (lambda d: [str(d / "repro.json"), "--target", "stdio:/nonexistent/server"], "command not found"),
        (lambda d: [str(d / "repro.json"), "--target", "gopher://x"], "unknown target"),
    ],
)
def test_unusable_file_or_target_exits_2(campaign: dict, tmp_path: Path, make_args, message: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "garbage.json").write_text("not json at all")
    (tmp_path / "repro.json").write_bytes(Path(campaign["repro"]).read_bytes())
    assert cli_main(["replay", *make_args(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_written_regression_test_fails_on_the_mutant_and_passes_on_the_reference(campaign: dict, tmp_path: Path) -> None:
    written = write_regressions(Path(campaign["out"]), tmp_path)
    assert len(written) == 1 and written[0].name.startswith("test_mcp_tempest_")
    source = written[0].read_text()
    compile(source, str(written[0]), "exec")
    for target, expected in ((campaign["mutant"], 1), (campaign["reference"], 0)):
        proc = subprocess.run([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(written[0])],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path,
                              env={**os.environ, "MCP_TEMPEST_TARGET": target})
        assert proc.returncode == expected, proc.stdout + proc.stderr


# --- replays that tell the truth: recorded conditions, unusable targets, attempts ---

SLOW_WRAPPER = """
import subprocess, sys, threading, time
delay, argv = float(sys.argv[1]), sys.argv[2:]
child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def pump_in():
    for line in sys.stdin.buffer:
        child.stdin.write(line); child.stdin.flush()
    child.stdin.close()
threading.Thread(target=pump_in, daemon=True).start()
for line in child.stdout:
    time.sleep(delay)
    sys.stdout.buffer.write(line); sys.stdout.buffer.flush()
sys.exit(child.wait())
"""

# The reference server behind a proxy that dies on every other blank line it is sent (a mode file
# it toggles itself, so the schedule does not depend on how many processes a replay starts): a
# target whose verdict depends on the run, for --attempts.
ALTERNATING = """
import os, pathlib, subprocess, sys, threading
mode, argv = pathlib.Path(sys.argv[1]), sys.argv[2:]
child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def pump_out():
    for line in child.stdout:
        sys.stdout.buffer.write(line); sys.stdout.buffer.flush()
    os._exit(child.wait())
threading.Thread(target=pump_out, daemon=True).start()
first = True  # only a process's first blank line flips the mode: a case may hold several
for line in sys.stdin.buffer:
    if not line.strip() and first:
        first = False
        die = mode.exists() and mode.read_text() == "die"
        mode.write_text("live" if die else "die")
        if die:
            child.kill()
            os._exit(0)
    child.stdin.write(line); child.stdin.flush()
child.stdin.close()
child.wait()
"""


def _repro_doc(campaign: dict) -> dict:
    return orjson.loads(Path(campaign["repro"]).read_bytes())


def test_the_repro_records_the_campaigns_conditions(campaign: dict) -> None:
    doc = _repro_doc(campaign)
    assert doc["timeouts"] == {"answer": 5.0, "start": 5.0}
    assert doc["cwd"] == os.getcwd() and doc["command"][0] == PYTHON
    assert doc["context"]["era"] == "modern" and doc["context"]["dual"] is False and doc["context"]["surface"]
    assert doc["probe"] == "blank-line" and doc["confirmed"] and doc["label"] == doc["strength"]


def test_replay_judges_with_the_recorded_timeouts(campaign: dict, tmp_path: Path) -> None:
    """A reference server answering each line after 1.5 s: with the 0.5 s answer timeout recorded
    in the file the request after the blank line is given up on; with 5 s it is answered and the
    replay no longer fails. The same file, only the recorded timeout differs. (That an unanswered
    request is then a finding, exit 1, is the oracle's verdict: see fuzz/oracle/framing.py.)"""
    wrapper = tmp_path / "slow.py"
    wrapper.write_text(SLOW_WRAPPER)
    slow = f"stdio:{PYTHON} {wrapper} 1.5 {PYTHON} -m mcp_tempest.targets.reference --transport stdio --db {tmp_path / 'r.db'}"
    doc = _repro_doc(campaign)
    doc["target"] = slow
    # A fresh process's first answer is held to the start-up allowance, not the answer timeout:
    # a first request, answered, makes the one after the blank line a warm process's.
    steps = doc["case"]["steps"]
    first = next(step for step in steps if step.get("frame"))
    steps.insert(0, {**first, "frame": {**first["frame"], "id": 999}})
    kinds = {}
    for answer in (0.5, 5.0):
        doc["timeouts"] = {"answer": answer, "start": 10.0}
        outcome = replay_document(doc)
        assert outcome.transcript is not None
        kinds[answer] = [e.kind for e in outcome.transcript.events]
        if answer == 5.0:
            assert not outcome.still_fails, outcome.describe()
    assert "timeout" in kinds[0.5] and kinds[0.5].count("recv") == 1, kinds  # only the warm-up's
    assert "timeout" not in kinds[5.0] and kinds[5.0].count("recv") == 2, kinds
    assert recorded_timeouts({"timeouts": {"answer": 20, "start": 20}}) == (20.0, 20.0)
    assert recorded_timeouts({"timeouts": {"answer": 20, "start": 20}}, 2.0) == (2.0, 5.0)  # --timeout wins
    assert recorded_timeouts({}) == (5.0, 5.0)  # a file from before timeouts were recorded


def test_replay_runs_the_recorded_target_from_its_working_directory(campaign: dict, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "server.py").write_text(
        "import runpy, sys\n"
        f"sys.argv = ['reference', '--transport', 'stdio', '--db', {str(tmp_path / 'm.db')!r}, '--bug', 'exit-on-newline']\n"
        "runpy.run_module('mcp_tempest.targets.reference', run_name='__main__')\n")
    doc = _repro_doc(campaign)
    doc["target"] = f"stdio:{PYTHON} server.py"  # relative: means something only in `project`
    doc["cwd"] = str(project)
    absolute = tmp_path / "abs.json"
    absolute.write_bytes(orjson.dumps(doc))
    doc["cwd"] = "project"  # relative to the file's folder, as the committed real-server files say
    relative = tmp_path / "rel.json"
    relative.write_bytes(orjson.dumps(doc))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for path in (absolute, relative):
        proc = subprocess.run([PYTHON, "-m", "mcp_tempest.fuzz.cli", "replay", str(path)], cwd=elsewhere, capture_output=True,
                              text=True, timeout=120, check=False)
        assert proc.returncode == 1 and doc["rule"] in last_line(proc.stdout), proc.stdout + proc.stderr
    # Without the directory the command cannot start: that is "could not run", never "still fails".
    doc.pop("cwd")
    bare = tmp_path / "bare.json"
    bare.write_bytes(orjson.dumps(doc))
    proc = subprocess.run([PYTHON, "-m", "mcp_tempest.fuzz.cli", "replay", str(bare)], cwd=elsewhere, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 2 and "could not run the target" in proc.stderr, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("target", [f"stdio:{PYTHON} /nonexistent.py", "stdio:python /nonexistent.py"])
def test_a_target_that_cannot_start_exits_2_not_1(campaign: dict, target: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["replay", str(campaign["repro"]), "--target", target]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "could not run the target" in err[0]


def test_attempts_agree_or_the_finding_is_flaky(campaign: dict, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["replay", str(campaign["repro"]), "--attempts", "3", "--json"]) == 1
    out = capsys.readouterr().out
    outcome = orjson.loads(next(line for line in out.splitlines() if line.startswith("{")))
    assert (outcome["attempts"], outcome["failed_attempts"], outcome["flaky"]) == (3, 3, False)
    assert "3 of 3 attempts" in last_line(out)
    assert cli_main(["replay", str(campaign["repro"]), "--attempts", "2", "--target", campaign["reference"]]) == 0
    assert "2 of 2 attempts" in last_line(capsys.readouterr().out)

    script = tmp_path / "alternating.py"
    script.write_text(ALTERNATING)
    target = (f"stdio:{PYTHON} {script} {tmp_path / 'mode'} {PYTHON} -m mcp_tempest.targets.reference --transport stdio "
              f"--db {tmp_path / 'alt.db'}")
    assert cli_main(["replay", str(campaign["repro"]), "--attempts", "4", "--target", target, "--json"]) == 1
    out = capsys.readouterr().out
    outcome = orjson.loads(next(line for line in out.splitlines() if line.startswith("{")))
    assert outcome["flaky"] is True and 0 < outcome["failed_attempts"] < 4, out
    assert "is flaky: failed" in last_line(out)


def test_the_printed_replay_hint_works_from_the_project_root_and_the_reports_folder(campaign: dict) -> None:
    out = Path(campaign["out"])
    html = (out / "report.html").read_text()
    hints = set(re.findall(r"<code>(mcp-tempest replay [^<]+)</code>", html))
    junit = (out / "junit.xml").read_text()
    assert len(hints) == 1 and next(iter(hints)) in junit
    argv = shlex.split(next(iter(hints)))
    for cwd in (Path(__file__).resolve().parents[1], out):
        proc = subprocess.run([PYTHON, "-m", "mcp_tempest.fuzz.cli", *argv[1:]], cwd=cwd, capture_output=True, text=True,
                              timeout=120, check=False)
        assert proc.returncode == 1 and "still fails" in last_line(proc.stdout), (cwd, proc.stdout, proc.stderr)

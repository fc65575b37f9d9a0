"""Every command's words agree with its exit status (issue 32): the last line of fuzz, replay,
fuzz-client, probe, catalogue (stdout) and frames (stderr) is fuzz/verdict_line.py's
`final_line`, whose word is the exit status in words, on every exit path: a pass, a finding, a
finding a --known baseline names, an unusable target (one that quotes its own refusal included),
a stop by Ctrl-C. Under --json (probe, catalogue) stdout is exactly one JSON object carrying the
same verdict. `fuzz --out` holds findings.json, junit.xml and summary.md whatever the status.

Real processes against the reference server, a mutant, `stdio:/nonexistent` and
tests/hostile/unprefixed_meta.py, each run small and seeded.
"""

from __future__ import annotations

import itertools
import shlex
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import orjson
import pytest
from fuzz_support import CLI, PYTHON, last_line, processes_mentioning, reference_stdio, run_cli
from process_support import default_sigint, interrupt_when

from mcp_tempest.fuzz.verdict_line import VERDICTS, FinalLine, parse_final_line

HOSTILE = Path(__file__).resolve().parent / "hostile"
REF_CLIENT = Path(__file__).resolve().parent / "clients" / "ref_client.py"
UNUSABLE = "stdio:/nonexistent"
# The hostile server's refusal, as the harness must quote it: code, message, escapes shown.
REFUSAL = '-32602 "params._meta.protocolVersion must be a non-empty string\\x1b[2J\\u202e"'
QUICK = ("--no-coverage", "--progress", "never", "--no-database", "--shrink-time", "1", "--seed", "1")
LEGACY_SERVER = r"""
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg.get("method") == "initialize":
        reply = {"result": {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "old"}}}
    else:
        reply = {"error": {"code": -32601, "message": "Method not found"}}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], **reply}) + "\n")
    sys.stdout.flush()
"""


def hostile() -> str:
    return "stdio:" + shlex.join([PYTHON, str(HOSTILE / "unprefixed_meta.py")])


def ended(proc: subprocess.CompletedProcess[str], status: int, command: str) -> FinalLine:
    """The last stdout line taken apart, after checking that its word is the exit status's."""
    said = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode == status, said
    line = parse_final_line(last_line(proc.stdout))
    assert line is not None and line.command == command, said
    assert line.word == VERDICTS[status], said
    assert "Traceback" not in proc.stderr and "\x1b" not in proc.stdout + proc.stderr, said
    return line


def one_json(proc: subprocess.CompletedProcess[str], status: int) -> dict[str, Any]:
    """--json: stdout is exactly one JSON object, its verdict the exit status's."""
    assert proc.returncode == status, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout.count("\n") == 1, proc.stdout
    doc = orjson.loads(proc.stdout)
    assert doc["verdict"]["status"] == status and doc["verdict"]["verdict"] == VERDICTS[status], doc
    assert parse_final_line(doc["verdict"]["summary"]).word == VERDICTS[status]  # type: ignore[union-attr]
    return doc


def fuzz(out: Path, target: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("fuzz", "--target", target, "--out", str(out), *QUICK, *args, timeout=180)


def index(out: Path) -> dict[str, Any]:
    return orjson.loads((out / "findings.json").read_bytes())


# --- fuzz ---


def test_fuzz_passes_on_the_reference_in_words_and_in_findings_json(tmp_path: Path) -> None:
    proc = fuzz(tmp_path / "out", reference_stdio(tmp_path / "db"), "--properties", "ids", "--max-examples", "2")
    line = ended(proc, 0, "fuzz")
    assert line.counts.endswith(" 1 property, 0 findings") and line.why == "", line
    assert index(tmp_path / "out")["verdict"] == {"status": 0, "verdict": "PASS", "reasons": [],
                                                  "summary": last_line(proc.stdout)}


@pytest.fixture(scope="module")
def mutant(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A campaign on a mutant that drops resultType: its --out (findings.json, repro/)."""
    work = tmp_path_factory.mktemp("mutant")
    proc = fuzz(work / "out", reference_stdio(work / "db", "missing-result-type"), "--properties", "valid",
                "--max-examples", "2", "--first-finding")
    line = ended(proc, 1, "fuzz")
    assert line.counts.endswith(" 1 property, 1 finding") and line.why == "1 finding: RT-01", line
    assert index(work / "out")["verdict"]["summary"] == last_line(proc.stdout)
    return work / "out"


def test_fuzz_fails_naming_the_rule_of_a_finding(mutant: Path) -> None:
    verdict = index(mutant)["verdict"]
    assert (verdict["status"], verdict["verdict"], verdict["reasons"]) == (1, "FAIL", ["1 finding: RT-01"])


def test_known_findings_pass_and_a_new_one_fails_by_its_rule(mutant: Path, tmp_path: Path) -> None:
    target = reference_stdio(tmp_path / "db", "missing-result-type")
    args = ("--properties", "valid", "--max-examples", "2", "--first-finding")
    known = ended(fuzz(tmp_path / "known", target, *args, "--known", str(mutant / "findings.json")), 0, "fuzz")
    assert known.counts.endswith(" 1 finding (1 known)") and known.why == "every finding is in --known", known
    baseline = tmp_path / "baseline.txt"
    baseline.write_text("RT-01-00000000 another group, not this one\n")
    new = ended(fuzz(tmp_path / "new", target, *args, "--known", str(baseline)), 1, "fuzz")
    assert new.why == "1 new finding: RT-01", new


def test_an_unusable_target_is_an_error_and_still_leaves_the_ci_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    line = ended(fuzz(out, UNUSABLE, "--max-examples", "2"), 2, "fuzz")
    assert line.counts == "0 examples, 7 properties, 0 findings", line
    assert line.why.startswith(f"unusable target: {UNUSABLE}: ") and "command not found" in line.why, line
    doc = index(out)
    assert doc["findings"] == [] and doc["error"] == line.why and doc["verdict"]["verdict"] == "ERROR"
    suite = ET.parse(out / "junit.xml").getroot()
    [case] = suite.findall(".//testcase")
    [error] = case.findall("error")
    assert suite.get("errors") == "1" and line.why in (error.get("message") or "") and error.text == line.why
    assert (out / "summary.md").read_text().startswith(f"## mcp-tempest fuzz: 0 findings: ERROR ({line.why})\n")
    assert orjson.loads((out / "results.sarif").read_bytes())["runs"][0]["results"] == []


def test_a_server_that_refuses_both_eras_is_quoted_by_every_command(tmp_path: Path) -> None:
    """mcp-agent-kit 0.1.0's shape: `-32602 "params._meta.protocolVersion must be a non-empty
    string"` to discover and initialize alike. Its words, escaped, are the reason."""
    fuzzed = ended(fuzz(tmp_path / "out", hostile(), "--max-examples", "2"), 2, "fuzz")
    assert fuzzed.why.endswith(f"speaks no known MCP era): server/discover and initialize answered {REFUSAL}"), fuzzed
    assert index(tmp_path / "out")["error"] == fuzzed.why
    probed = ended(run_cli("probe", "--target", hostile(), "--no-dual"), 2, "probe")
    assert probed.why.startswith("unusable target: ") and probed.why.endswith(REFUSAL), probed
    assert one_json(run_cli("probe", "--target", hostile(), "--json"), 2)["error"] == probed.why
    read = ended(run_cli("catalogue", "--target", hostile(), "--no-drift"), 2, "catalogue")
    assert read.why.endswith(REFUSAL) and read.counts == "not read, 0 findings", read


def test_a_legacy_server_is_refused_by_fuzz_and_probed_by_probe(tmp_path: Path) -> None:
    script = tmp_path / "legacy.py"
    script.write_text(LEGACY_SERVER)
    target = f"stdio:{PYTHON} {script}"
    refused = ended(fuzz(tmp_path / "out", target, "--max-examples", "2"), 2, "fuzz")
    assert "speaks only the legacy era (2025-11-25" in refused.why and index(tmp_path / "out")["error"] == refused.why
    probed = ended(run_cli("probe", "--target", target), 0, "probe")
    assert probed.counts.startswith("legacy 2025-11-25, ") and probed.why == "", probed
    assert one_json(run_cli("probe", "--target", target, "--json"), 0)["era"] == "legacy"


_RUNS = itertools.count()


def _interrupted(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """The command run against a server that starts and never answers, Ctrl-C once it has started."""
    mark = tmp_path / f"started-{next(_RUNS)}"  # one per run: each waits for its own server
    target = "stdio:" + shlex.join(["sh", "-c", f'touch "{mark}"; exec sleep 120'])
    proc = subprocess.Popen([*CLI, *args, "--target", target], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=default_sigint)
    stdout, stderr = interrupt_when(proc, mark.exists, settle=0.3)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), str(mark)


def test_ctrl_c_before_the_campaign_is_interrupted_in_words_and_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc, mark = _interrupted(tmp_path, "fuzz", "--out", str(out), *QUICK, "--max-examples", "2")
    line = ended(proc, 130, "fuzz")
    assert line.why == "interrupted before the campaign started", line
    assert index(out)["interrupted"] is True and index(out)["verdict"]["verdict"] == "INTERRUPTED"
    assert (out / "junit.xml").is_file() and (out / "summary.md").is_file()
    time.sleep(0.3)
    assert not processes_mentioning(mark), "Ctrl-C left the server running"


def test_ctrl_c_during_a_probe_is_interrupted_in_words_and_json(tmp_path: Path) -> None:
    proc, _ = _interrupted(tmp_path, "probe", "--timeout", "60")
    assert ended(proc, 130, "probe").why == "interrupted"
    proc, _ = _interrupted(tmp_path, "probe", "--timeout", "60", "--json")
    assert one_json(proc, 130)["error"] == "interrupted"


# --- probe, catalogue ---


def test_probe_ends_in_a_verdict_and_json_is_one_object_on_every_path(tmp_path: Path) -> None:
    assert ended(run_cli("probe", "--no-dual"), 0, "probe").counts.startswith("modern 2026-07-28, ")
    assert one_json(run_cli("probe", "--json", "--no-dual"), 0)["era"] == "modern"
    gone = one_json(run_cli("probe", "--target", UNUSABLE, "--json"), 2)
    assert gone["era"] is None and gone["error"].startswith("unusable target: cannot start"), gone
    silent = "stdio:" + shlex.join(["sh", "-c", "exec sleep 30"])
    timed_out = one_json(run_cli("probe", "--target", silent, "--json", "--timeout", "0.5"), 2)
    assert "no answer from the target within 0.5 s" in timed_out["error"], timed_out
    assert "unrecognized arguments" in one_json(run_cli("probe", "--json", "--bogus"), 2)["error"]


def test_catalogue_over_budget_fails_in_words_and_json(tmp_path: Path) -> None:
    proc = run_cli("catalogue", "--no-drift", "--out", str(tmp_path / "ok"))
    passed = ended(proc, 0, "catalogue")
    assert passed.counts.endswith(", 0 findings, 0 observations") and passed.why == ""
    assert index(tmp_path / "ok")["verdict"]["summary"] == last_line(proc.stdout)
    over = ended(run_cli("catalogue", "--no-drift", "--max-tokens", "50"), 1, "catalogue")
    assert over.why.endswith(" tokens every turn over --max-tokens 50") and over.counts == passed.counts, over
    doc = one_json(run_cli("catalogue", "--no-drift", "--max-tokens", "50", "--json"), 1)
    assert doc["verdict"]["reasons"] == [over.why] and doc["over_budget"]
    assert ended(run_cli("catalogue", "--target", UNUSABLE), 2, "catalogue").why.startswith("unusable target: ")
    assert one_json(run_cli("catalogue", "--target", UNUSABLE, "--json"), 2)["error"].startswith("unusable target: ")


# --- replay, fuzz-client, frames ---


def test_replay_ends_in_the_verdict_of_each_exit_status(mutant: Path, tmp_path: Path) -> None:
    [repro] = sorted((mutant / "repro").glob("RT-01-*.json"))
    still = ended(run_cli("replay", str(repro)), 1, "replay")
    assert still.counts == f"{repro.stem}, 1 attempt" and still.why == "still fails: MUST RT-01", still
    fixed = ended(run_cli("replay", str(repro), "--target", reference_stdio(tmp_path / "db")), 0, "replay")
    assert fixed.why == "no longer fails", fixed
    gone = ended(run_cli("replay", str(repro), "--target", UNUSABLE), 2, "replay")
    assert gone.counts == f"{repro.stem}, not replayed" and gone.why.startswith("could not run the target"), gone


def test_fuzz_client_ends_in_the_verdict_of_each_exit_status(tmp_path: Path) -> None:
    def client(out: str, command: str, *args: str) -> subprocess.CompletedProcess[str]:
        return run_cli("fuzz-client", "--client", command, "--max-examples", "3", "--seed", "7", "--shrink-time", "1",
                       "--timeout", "10", "--out", str(tmp_path / out), *args, timeout=180)

    ref = f"{shlex.quote(PYTHON)} {shlex.quote(str(REF_CLIENT))}"
    assert ended(client("ok", f"{ref} {{server}}"), 0, "fuzz-client").counts == "3 examples, 0 findings"
    failed = ended(client("bug", f"{ref} --bug retry-same-id {{server}}", "--max-examples", "10"), 1, "fuzz-client")
    assert failed.why.endswith(": MRTR-09"), failed
    broken = ended(client("broken", "true {server}"), 2, "fuzz-client")
    assert broken.why.startswith("unusable client: the client never sent a frame"), broken
    assert index(tmp_path / "broken")["error"] == broken.why and (tmp_path / "broken" / "junit.xml").is_file()


@pytest.mark.parametrize(("argv", "status"), [(["--count", "2"], 0), (["--malformed", "bogus"], 2)])
def test_frames_ends_its_stderr_with_the_verdict(argv: list[str], status: int) -> None:
    proc = run_cli("frames", *argv, env={"NO_COLOR": "1"})
    assert proc.returncode == status
    line = parse_final_line(proc.stderr.strip().splitlines()[-1])
    assert line is not None and line.command == "frames" and line.word == VERDICTS[status], proc.stderr
    assert proc.stdout.count("\n") == (2 if status == 0 else 0)


def test_the_line_keeps_its_shape_whatever_the_counts() -> None:
    from mcp_tempest.fuzz.verdict_line import final_line, findings_reason, plural

    class F:
        def __init__(self, rule: str) -> None:
            self.rule = rule

    assert (plural(1, "finding"), plural(2, "finding"), plural(1, "property", "properties")) == (
        "1 finding", "2 findings", "1 property")
    line = final_line("fuzz", "20 examples, 7 properties, 2 findings", 1,
                      [findings_reason([F("RT-01"), F("RPC-04"), F("RT-01")], new=True)], colour=False)
    assert line == "fuzz: 20 examples, 7 properties, 2 findings: FAIL (3 new findings: RT-01, RPC-04)"
    assert parse_final_line(line) == ("fuzz", "20 examples, 7 properties, 2 findings", "FAIL",
                                      "3 new findings: RT-01, RPC-04")
    assert parse_final_line("fuzz: 20 examples, 7 properties, 2 findings") is None  # the old line: no verdict

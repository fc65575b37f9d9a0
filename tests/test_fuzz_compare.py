"""`fuzz --compare-target OTHER`: every case played on both targets, each answer compared by its
meaning (fuzz/differences.py). Both ways, on real servers:

- the reference over stdio against the reference over HTTP, each with a store of its own: a
  transport is framing and delivery, not meaning, so no difference (two seeds);
- the reference against a build that answers an unknown tool with an isError result: that
  difference, listed apart from the protocol findings in every report, replayed against both
  targets, and no longer failing once the other build is the same;
- the buggy build fuzzed against the reference: its own protocol finding (TOOL-09), which
  explains its answers, not a difference.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from fuzz_support import PYTHON, run_cli


def _reference(transport: str, db: Path, *bugs: str) -> str:
    args = [PYTHON, "-m", "mcp_tempest.targets.reference", "--transport", transport, "--db", str(db)]
    if transport == "http":
        args[5:5] = ["--port", "{port}"]
    for bug in bugs:
        args += ["--bug", bug]
    return ("stdio:" if transport == "stdio" else "http+spawn:") + shlex.join(args)


def _fuzz(tmp: Path, target: str, other: str, *extra: str) -> tuple[int, str, dict]:
    out = tmp / "out"
    proc = run_cli("fuzz", "--target", target, "--compare-target", other, "--out", str(out), "--progress", "never",
                   "--no-coverage", *extra, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    index = json.loads((out / "findings.json").read_text())
    return proc.returncode, proc.stdout, index


@pytest.mark.parametrize("seed", ["1", "2"])
def test_one_server_over_two_transports_answers_alike(tmp_path: Path, seed: str) -> None:
    code, stdout, index = _fuzz(tmp_path, _reference("stdio", tmp_path / "a.sqlite3"),
                                _reference("http", tmp_path / "b.sqlite3"), "--max-examples", "120", "--seed", seed)
    assert code == 0 and index["differences"] == [], stdout[-3000:]
    assert "fuzz: compared with http+spawn:" in stdout


def test_a_changed_answer_is_a_difference_listed_apart_and_replayed(tmp_path: Path) -> None:
    other = _reference("stdio", tmp_path / "b.sqlite3", "unknown-tool-is-error")
    code, stdout, index = _fuzz(tmp_path, _reference("stdio", tmp_path / "a.sqlite3"), other,
                                "--max-examples", "60", "--seed", "1", "--properties", "valid")
    assert code == 1, stdout[-3000:]
    assert [f["rule"] for f in index["findings"]] == ["DIFF"], index["findings"]
    (diff,) = index["differences"]
    assert diff["method"] == "tools/call" and diff["a"] == "error -32602"
    assert diff["b"] == "result complete (isError)" and diff["other"] == other
    assert f"  difference {diff['id']}:" in stdout
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "### Differences between targets" in summary
    assert "Differences between targets (1)" in (tmp_path / "out" / "report.html").read_text()
    repro = str(tmp_path / "out" / diff["repro"])
    again = run_cli("replay", repro)
    assert again.returncode == 1 and "still fails" in again.stdout, again.stdout + again.stderr
    assert "comparing with the recorded other target" in again.stdout
    same = run_cli("replay", repro, "--compare-target", _reference("stdio", tmp_path / "c.sqlite3"))
    assert same.returncode == 0 and "no longer fails" in same.stdout, same.stdout + same.stderr


def test_a_protocol_finding_of_the_target_is_not_a_difference(tmp_path: Path) -> None:
    code, stdout, index = _fuzz(tmp_path, _reference("stdio", tmp_path / "a.sqlite3", "unknown-tool-is-error"),
                                _reference("stdio", tmp_path / "b.sqlite3"),
                                "--max-examples", "60", "--seed", "1", "--properties", "valid")
    assert code == 1, stdout[-3000:]
    assert "TOOL-09" in {f["rule"] for f in index["findings"]} and index["differences"] == [], index["findings"]


def test_compare_target_is_refused_beside_the_built_in_pair(tmp_path: Path) -> None:
    proc = run_cli("fuzz", "--compare-target", _reference("stdio", tmp_path / "b.sqlite3"), "--max-examples", "5")
    assert proc.returncode == 2 and "--compare-target" in proc.stderr and "Traceback" not in proc.stderr

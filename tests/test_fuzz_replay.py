"""`mcp-gauntlet replay` and the regression tests written from findings.

One real finding is made once for the module (the `exit-on-newline` mutant dies on a blank
line), then replayed: against the mutant it still fails, against the reference it does not,
from its case or from its transcript alone, and as a generated pytest file.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import orjson
import pytest
from fuzz_support import PYTHON, last_line, processes_mentioning, reference_stdio, run_cli

from fuzz.cli import main as cli_main
from fuzz.regression import write_regressions


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | str]:
    base = tmp_path_factory.mktemp("replay")
    mutant = reference_stdio(base / "mutant.sqlite3", "exit-on-newline")
    out = base / "out"
    status = cli_main(["fuzz", "--target", mutant, "--properties", "framing", "--mutations", "blank-line",
                       "--max-examples", "10", "--seed", "1", "--out", str(out), "--no-database",
                       "--shrink-time", "3", "--first-finding", "--progress", "never"])
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
    doc = orjson.loads(Path(campaign["repro"]).read_bytes())
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
    assert len(written) == 1 and written[0].name.startswith("test_mcp_gauntlet_")
    source = written[0].read_text()
    compile(source, str(written[0]), "exec")
    for target, expected in ((campaign["mutant"], 1), (campaign["reference"], 0)):
        proc = subprocess.run([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(written[0])],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path,
                              env={**os.environ, "MCP_GAUNTLET_TARGET": target})
        assert proc.returncode == expected, proc.stdout + proc.stderr

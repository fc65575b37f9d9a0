"""results.sarif and summary.md beside junit.xml, from real campaigns: a mutant and the reference.

SARIF is checked for what code-scanning uploaders require (version, runs[].tool.driver.name,
results with ruleId, level, message.text, a location, a stable fingerprint) and agrees with
findings.json one to one; the Markdown summary names every finding with its replay command.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from fuzz_support import reference_stdio, run_cli


@pytest.fixture(scope="module")
def mutant_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("sarif")
    proc = run_cli("fuzz", "--target", reference_stdio(tmp / "db.sqlite3", "null-id-accepted"), "--properties", "ids",
                   "--max-examples", "10", "--seed", "1", "--no-database", "--out", str(tmp / "out"),
                   "--progress", "never")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return tmp / "out"


def test_sarif_lists_every_finding_with_level_location_and_fingerprint(mutant_out: Path):
    sarif = orjson.loads((mutant_out / "results.sarif").read_bytes())
    findings = orjson.loads((mutant_out / "findings.json").read_bytes())["findings"]
    assert sarif["version"] == "2.1.0" and len(sarif["runs"]) == 1
    run = sarif["runs"][0]
    assert run["tool"]["driver"]["name"] == "mcp-tempest"
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} == {f["rule"] for f in findings}
    assert [r["partialFingerprints"]["mcpTempestFinding/v1"] for r in run["results"]] == [f["id"] for f in findings]
    for result, finding in zip(run["results"], findings, strict=True):
        # the server's duty (a served null id: JSON-RPC 2.0 via RPC-01), a MUST
        assert result["ruleId"] == finding["rule"] == "RPC-01" and result["level"] == "error"
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert uri == finding["repro"] and (mutant_out / uri).is_file()
        assert finding["title"] in result["message"]["text"]
        assert result["baselineState"] == "new" and "suppressions" not in result  # no --known: every one is new


def test_markdown_summary_names_each_finding_and_its_replay(mutant_out: Path):
    text = (mutant_out / "summary.md").read_text()
    index = orjson.loads((mutant_out / "findings.json").read_bytes())
    findings, failing = index["findings"], index["failures"]
    assert text.startswith(f"## mcp-tempest fuzz: {failing} finding{'s' * (failing != 1)}")
    assert text.splitlines()[0].split(": ")[2].startswith("FAIL (")  # the verdict of exit status 1
    for f in findings:
        assert f"`mcp-tempest replay {f['repro']}`" in text
    assert "| ids | stdio |" in text


def test_a_clean_campaign_has_empty_sarif_results_and_says_no_findings(tmp_path: Path):
    proc = run_cli("fuzz", "--target", reference_stdio(tmp_path / "db.sqlite3"), "--properties", "ids",
                   "--max-examples", "6", "--seed", "2", "--no-database", "--out", str(tmp_path / "out"),
                   "--progress", "never")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sarif = orjson.loads((tmp_path / "out" / "results.sarif").read_bytes())
    assert sarif["runs"][0]["results"] == [] and sarif["runs"][0]["tool"]["driver"]["rules"] == []
    assert (tmp_path / "out" / "summary.md").read_text().startswith("## mcp-tempest fuzz: 0 findings: PASS\n")

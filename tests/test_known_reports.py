"""The report files agree with the exit status, end to end (issue 32): a mutant's campaign fails
(exit 1) and every file says FAIL/new; the same campaign with its own findings.json as --known
passes (exit 0) and every file says so: no <failure> in junit.xml, SARIF results "unchanged" and
suppressed with the baseline's reason, summary.md PASS. report.html says what was tested, from
the findings.json sections it shares with the terminal (coverage, budget, reach).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import orjson
import pytest
from fuzz_support import reference_stdio, run_cli

from mcp_tempest.fuzz.safe_text import html_text
from mcp_tempest.fuzz.verdict_line import VERDICTS

# valid and ids both meet this mutant's bug at once, and mrtr's probes outnumber its share of the
# 6 examples (some not tried, with a reason); the framing property's extra fresh processes
# are left out so that a loaded machine cannot add a group to one run and not the other.
ARGS = ("--properties", "valid,ids,mrtr", "--max-examples", "6", "--seed", "1", "--shrink-time", "5",
        "--progress", "never")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, Path]]:
    tmp = tmp_path_factory.mktemp("known")
    target = reference_stdio(tmp / "db.sqlite3", "missing-result-type")
    first = run_cli("fuzz", "--target", target, "--out", str(tmp / "A"), *ARGS)
    again = run_cli("fuzz", "--target", target, "--out", str(tmp / "B"), "--known", str(tmp / "A" / "findings.json"),
                    *ARGS)
    return {"A": (first.returncode, tmp / "A"), "B": (again.returncode, tmp / "B")}


def _index(out: Path) -> dict:
    return orjson.loads((out / "findings.json").read_bytes())


def _summary_verdict(out: Path) -> str:
    """The word after the counts in summary.md's heading: `## mcp-tempest fuzz: 1 finding: PASS (...)`."""
    return (out / "summary.md").read_text().splitlines()[0].split(": ")[2].split(" ")[0]


def test_without_a_baseline_the_finding_is_new_everywhere(runs: dict[str, tuple[int, Path]]) -> None:
    status, out = runs["A"]
    index = _index(out)
    assert status == 1 and index["failures"] >= 1, index["findings"]
    suite = ET.parse(out / "junit.xml").getroot()
    assert int(suite.get("failures", "0")) >= 1 and suite.findall(".//failure")
    results = orjson.loads((out / "results.sarif").read_bytes())["runs"][0]["results"]
    assert {r["baselineState"] for r in results} == {"new"} and not any("suppressions" in r for r in results)
    assert _summary_verdict(out) == VERDICTS[status] == "FAIL"
    found_in = {s["property"] for f in index["findings"] for s in f["seen"]}
    assert "valid" in found_in
    rows = [line for line in (out / "summary.md").read_text().splitlines()
            if line.startswith(("| valid | stdio |", "| ids | stdio |", "| mrtr | stdio |"))]
    assert len(rows) == 3, rows
    for line in rows:  # a property's status is what was found in it: never "ok" with a new finding
        prop = line.split(" | ")[0].lstrip("| ")
        assert ("FAIL: 1 new finding" in line) == (prop in found_in) != line.endswith("| ok |"), line
    assert '<span class="bad">FAIL (' in (out / "report.html").read_text()


def test_with_its_own_findings_as_baseline_every_file_says_pass(runs: dict[str, tuple[int, Path]]) -> None:
    status, out = runs["B"]
    baseline = {f["id"]: f for f in _index(runs["A"][1])["findings"]}
    index = _index(out)
    assert status == 0, index
    assert index["known"]["new"] == [] and index["known"]["known"]
    for item in index["known"]["known"]:  # each known group carries the baseline's reason
        f = baseline[item["id"]]
        assert item["reason"] == f"{f['strength']} {f['rule']} {f['title']}"
    reasons = {k["id"]: k["reason"] for k in index["known"]["known"]}

    suite = ET.parse(out / "junit.xml").getroot()
    assert not suite.findall(".//failure") and not suite.findall(".//error")
    assert (suite.get("failures"), suite.get("errors")) == ("0", "0")
    skipped = [s.get("message", "") for s in suite.findall(".//skipped")]
    for gid, reason in reasons.items():
        assert any(f"known {gid}: {reason}" in m for m in skipped), skipped

    results = orjson.loads((out / "results.sarif").read_bytes())["runs"][0]["results"]
    assert results and len(results) == len(index["findings"])
    for r in results:
        gid = r["partialFingerprints"]["mcpTempestFinding/v1"]
        assert r["baselineState"] == "unchanged", r
        assert r["suppressions"] == [{"kind": "external", "status": "accepted", "justification": reasons[gid]}]

    md = (out / "summary.md").read_text()
    assert _summary_verdict(out) == VERDICTS[status] == "PASS"
    assert "every finding is in --known" in md.splitlines()[0]
    assert any(line.startswith("| valid | stdio |") and "known: " in line for line in md.splitlines()), md
    html = (out / "report.html").read_text()
    assert '<span class="ok">PASS (' in html and "<h2>Known findings" in html and "<h2>Findings" not in html


def test_report_html_says_what_was_tested(runs: dict[str, tuple[int, Path]]) -> None:
    _, out = runs["B"]
    index = _index(out)
    html = (out / "report.html").read_text()
    assert '<h2 id="tested">What was tested</h2>' in html
    tested = html[html.index('<h2 id="tested">'):]
    cov, budget, reach = index["coverage"], index["budget"], index["reach"]
    assert f"Probes: <b>{cov['tried']} of {cov['probes']}</b> tried" in tested
    assert f"rules: <b>{cov['rules_exercised']} of {cov['rules']}</b> exercised" in tested
    assert cov["tried"] < cov["probes"] and cov["not_applied"]  # this small budget leaves some out
    assert f"Rules exercised: {', '.join(cov['exercised'])}." in tested
    for item in cov["not_applied"]:
        assert f"{item['probe']} ({item['rule']})" in tested and html_text(item["why"]) in tested
    for rule in cov["rules_not_exercised"]:
        assert f"<tr><td>{rule}</td>" in tested
    assert f"--max-examples 6: {budget['generated']} examples generated" in tested
    never = len(reach["never_ok"])
    assert f"Tools reached: {len(reach['tools']) - never} of {len(reach['tools'])} returned" in tested
    code = reach["code"]
    if code.get("measured"):
        assert f"Server code coverage: {code['percent']:.1f}%" in tested
    else:
        assert html_text(code["reason"]) in tested
    assert f'<a href="#tested">{cov["tried"]} of {cov["probes"]} probes tried</a>' in html

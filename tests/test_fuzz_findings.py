"""Findings, their files and the reports: one finding per bug, "on disk at once", smaller evidence
wins, --fail-on and observations, unconfirmed labels, JUnit counts as a JUnit parser reads them.

These are pure data tests (the campaign tests cover the same files produced by real runs):
the transcripts here are built event by event, the way the drivers record them.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import orjson
from fuzz_support import PYTHON
from junitparser import Error, Failure, JUnitXml, Skipped

from mcp_tempest.fuzz.findings import (
    Evidence,
    FindingStore,
    PropertyRun,
    ReplayConditions,
    finding_id,
    load_repro,
    probe_text,
    resolved_command,
)
from mcp_tempest.fuzz.reports import junit_xml, render_transcript_text, report_html, write_reports
from mcp_tempest.targets import wire
from mcp_tempest.targets.transcript import Transcript


def transcript(frames: int, *, noise: bytes = b"") -> dict:
    t = Transcript(target="stdio:server", transport="stdio")
    t.add("spawn", proc=0, note="server")
    for i in range(frames):
        msg = wire.build_request(i, "tools/list")
        t.add("send", proc=0, message=msg, raw=wire.encode_line(msg))
        reply = {"jsonrpc": "2.0", "id": i, "result": {"tools": []}}
        t.add("recv", proc=0, message=reply, raw=wire.dumps(reply))
    if noise:
        t.add("noise", proc=0, raw=noise, note="not JSON")
    t.add("exit", proc=0, status=0, note="exited after stdin was closed")
    return t.to_json()


def evidence(frames: int = 2, *, rule: str = "RT-01", method: str | None = "tools/list",
             mutation: str | None = None, transport: str = "stdio", confirmed: bool = True, **kw) -> Evidence:
    title = kw.pop("title", "result without resultType")
    strength = kw.pop("strength", "MUST")
    return Evidence(
        rule=rule, strength=strength, title=title,
        method=method, transport=transport, mutation=mutation, property=kw.pop("prop", "valid"),
        case={"property": "valid", "steps": []}, transcript=kw.pop("transcript", transcript(frames)),
        violations=[{"rule": rule, "strength": strength, "title": title, "event": 2}],
        reproduce_blob="AXicY2BgAAAABAAB", hypothesis_version="6.170.17", target="stdio:server",
        confirmed=confirmed, probe=kw.pop("probe", mutation), probe_rule=kw.pop("probe_rule", None),
        reaction=kw.pop("reaction", ""),
    )


def sends(repro: dict) -> int:
    return len([e for e in repro["transcript"]["events"] if e["kind"] == "send"])


def test_a_finding_is_on_disk_as_soon_as_it_is_recorded(tmp_path: Path) -> None:
    store = FindingStore(tmp_path, target="stdio:server", seed=42)
    assert orjson.loads((tmp_path / "findings.json").read_bytes())["findings"] == []
    finding, is_new = store.record(evidence(3))
    assert is_new
    index = orjson.loads((tmp_path / "findings.json").read_bytes())
    assert index["target"] == "stdio:server" and index["revision"] == "2026-07-28" and index["seed"] == 42
    [entry] = index["findings"]
    assert entry["id"] == finding.id and entry["count"] == 1 and entry["repro"] == f"repro/{finding.id}.json"
    assert {"id", "rule", "strength", "title", "method", "transport", "mutation", "count", "repro"} <= set(entry)
    repro = load_repro(tmp_path / entry["repro"])
    assert repro["seed"] == 42 and repro["reproduce_blob"] and repro["property"] == "valid"
    assert repro["reproduce_decorator"].startswith("@reproduce_failure('6.170.17', b'")
    assert sends(repro) == 3


def test_one_finding_per_bug_whatever_the_method_or_transport(tmp_path: Path) -> None:
    store = FindingStore(tmp_path, target="t", seed=1)
    # One missing resultType, seen on nine methods over two transports and two properties.
    methods = ["server/discover", "tools/list", "tools/call", "resources/list", "resources/read",
               "resources/templates/list", "prompts/list", "prompts/get", "completion/complete"]
    for i, m in enumerate(methods):
        store.record(evidence(3 + i % 3, method=m, transport="stdio" if i % 2 else "http",
                              prop="valid" if i % 3 else "lists"))
    store.record(evidence(1, method="tools/list", transport="stdio"))  # the smallest: kept
    # One silent drop of null ids, seen on five methods: one finding, apart from the first.
    silent = "JSON that is not a valid request got no reply"
    for m in methods[:5]:
        store.record(evidence(2, rule="RPC-01", method=m, mutation="id-null", probe_rule="RPC-04",
                              strength="SHOULD", title="malformed frame (id-null) got no reply", prop="framing",
                              reaction=silent))
    # Another probe meeting the same reaction on the same class of frame is the same behaviour,
    # listed inside it with its own count and its own smallest reproduction ...
    for frames in (4, 3):
        store.record(evidence(frames, rule="RPC-01", method="tools/list", mutation="id-float", probe_rule="RPC-03",
                              strength="SHOULD", title="malformed frame (id-float) got no reply", prop="framing",
                              reaction=silent))
    # ... but the same silence toward bytes that are not JSON at all is another code path, and
    # another behaviour under the same rule is another finding.
    store.record(evidence(2, rule="RPC-01", method=None, mutation="truncated-json", strength="SHOULD",
                          title="malformed frame (truncated-json) got no reply", prop="framing",
                          reaction="frame that is not JSON got no reply"))
    store.record(evidence(2, title="result without resultType on an error page"))
    findings = store.findings
    assert len(findings) == 4, [(f.rule, f.title) for f in findings]
    rt = next(f for f in findings if f.rule == "RT-01" and f.title == "result without resultType")
    assert rt.count == 10 and rt.methods == sorted(methods) and rt.transports == ["http", "stdio"]
    assert sorted(rt.properties) == ["lists", "valid"]
    assert sends(load_repro(tmp_path / rt.repro)) == 1 and rt.method == "tools/list"
    drop = next(f for f in findings if f.title == silent)
    assert drop.count == 7 and len(drop.methods) == 5 and drop.rule == "RPC-01"
    assert {n: p.count for n, p in drop.probes.items()} == {"id-null": 5, "id-float": 2}
    index = orjson.loads((tmp_path / "findings.json").read_bytes())["findings"]
    row = next(e for e in index if e["id"] == drop.id)
    assert row["reaction"] == silent and [p["probe"] for p in row["probes"]] == ["id-float", "id-null"]
    for p in row["probes"]:  # each probe's own smallest reproduction, replayable, of that probe
        repro = load_repro(tmp_path / p["repro"])
        assert repro["probe"] == p["probe"] and repro["rule"] == "RPC-01"
        assert sends(repro) == {"id-float": 3, "id-null": 2}[p["probe"]]
    assert "id-null (breaks RPC-04) x5, id-float (breaks RPC-03) x2" == probe_text(drop)
    entry = next(e for e in index if e["id"] == rt.id)
    assert entry["methods"] == sorted(methods) and entry["transports"] == ["http", "stdio"]
    assert sum(s["count"] for s in entry["seen"]) == 10 and len(entry["seen"]) == 9  # per-method detail kept
    assert {s["method"] for s in entry["seen"]} == set(methods)
    assert finding_id("RT-01", "behaviour:result without resultType") == rt.id  # stable across campaigns


def test_the_probe_is_carried_apart_from_the_rule(tmp_path: Path) -> None:
    store = FindingStore(tmp_path, target="t", seed=1)
    found, _ = store.record(evidence(2, rule="RPC-01", mutation="id-null", probe_rule="RPC-04", strength="SHOULD",
                                     title="malformed frame (id-null) got no reply", prop="framing"))
    [entry] = orjson.loads((tmp_path / "findings.json").read_bytes())["findings"]
    assert (entry["rule"], entry["probe"], entry["probe_rule"], entry["mutation"]) == ("RPC-01", "id-null", "RPC-04",
                                                                                       "id-null")
    repro = load_repro(tmp_path / found.repro)
    assert (repro["rule"], repro["probe"], repro["probe_rule"]) == ("RPC-01", "id-null", "RPC-04")
    # A violation without `probe` (older oracle output) falls back to the mutation.
    ev = evidence(2, rule="RPC-01", mutation="nul-byte", strength="SHOULD", title="x")
    ev.probe = None
    assert ev.probe_name == "nul-byte" and ev.group_key() == ("RPC-01", "behaviour:x")


def test_fail_on_decides_failures_and_the_rest_are_observations(tmp_path: Path) -> None:
    def store_with(fail_on: str) -> FindingStore:
        store = FindingStore(tmp_path / fail_on, target="t", seed=1, fail_on=fail_on)
        store.record(evidence(2, rule="RT-01", strength="MUST"))
        store.record(evidence(2, rule="META-07", strength="SHOULD", title="result without _meta serverInfo"))
        store.record(evidence(2, rule="RPC-11", strength="HEURISTIC", title="batch dropped", mutation="batch-array"))
        return store

    for fail_on, failing in (("must", {"RT-01"}), ("should", {"RT-01", "META-07"}),
                             ("heuristic", {"RT-01", "META-07", "RPC-11"})):
        store = store_with(fail_on)
        assert {f.rule for f in store.failures} == failing
        index = orjson.loads((tmp_path / fail_on / "findings.json").read_bytes())
        assert index["fail_on"] == fail_on and index["failures"] == len(failing)
        verdicts = {e["rule"]: e["verdict"] for e in index["findings"]}
        assert {r for r, v in verdicts.items() if v == "failure"} == failing
        assert [e["verdict"] for e in index["findings"]] == sorted(verdicts.values())  # failures first


def test_an_unconfirmed_finding_is_labelled_so_everywhere_and_never_fails(tmp_path: Path) -> None:
    store = FindingStore(tmp_path, target="t", seed=1)
    found, _ = store.record(evidence(2, confirmed=False))
    assert found.label == "unconfirmed MUST" and not found.fails("heuristic")
    [entry] = orjson.loads((tmp_path / "findings.json").read_bytes())["findings"]
    assert entry["label"] == "unconfirmed MUST" and entry["confirmed"] is False and entry["verdict"] == "observation"
    runs = [PropertyRun("valid", "stdio", 10, 1.0)]
    write_reports(tmp_path, runs, store.findings, target="t", seed=1, examples=10, seconds=1.0)
    html = (tmp_path / "report.html").read_text()
    assert "unconfirmed MUST" in html and "no findings" in html
    suite = next(iter(JUnitXml.fromfile(str(tmp_path / "junit.xml"))))
    assert suite.failures == 0
    [case] = list(suite)
    assert case.is_passed and "unconfirmed MUST" in (case.system_out or "")
    # Confirmed evidence, once seen, is kept and makes the finding a plain failure.
    found, _ = store.record(evidence(4, confirmed=True))
    assert found.label == "MUST" and found.fails() and sends(load_repro(tmp_path / found.repro)) == 4
    store.record(evidence(1, confirmed=False))
    assert load_repro(tmp_path / found.repro)["confirmed"] is True


def test_the_repro_records_what_the_verdict_depended_on(tmp_path: Path) -> None:
    conditions = ReplayConditions(timeout=20.0, start_timeout=20.0, cwd=str(tmp_path),
                                  commands={"stdio:server": ["/usr/bin/server"]},
                                  contexts={"stdio:server": {"era": "modern", "dual": True}})
    store = FindingStore(tmp_path, target="stdio:server", seed=1, conditions=conditions)
    found, _ = store.record(evidence(2))
    repro = load_repro(tmp_path / found.repro)
    assert repro["timeouts"] == {"answer": 20.0, "start": 20.0} and repro["cwd"] == str(tmp_path)
    assert repro["command"] == ["/usr/bin/server"] and repro["context"] == {"era": "modern", "dual": True}
    assert resolved_command(["python", "x.py"])[0].endswith("python") and resolved_command([]) == []


def test_load_repro_rejects_what_is_not_one(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    for path, message in ((bad, "is not JSON"), (tmp_path / "missing.json", "cannot read")):
        try:
            load_repro(path)
        except ValueError as exc:
            assert message in str(exc)
        else:
            raise AssertionError("no error")
    bad.write_text('{"id": 1}')
    try:
        load_repro(bad)
    except ValueError as exc:
        assert "not an mcp-tempest reproduction" in str(exc)


def test_junit_counts_read_by_a_junit_parser(tmp_path: Path) -> None:
    store = FindingStore(tmp_path, target="t", seed=1)
    store.record(evidence(2))  # valid[stdio]
    store.record(evidence(2, method="prompts/list"))  # the same bug: still one failure in valid[stdio]
    store.record(evidence(2, rule="RPC-06", prop="ids", title="result without a request id"))
    store.record(evidence(2, rule="META-07", prop="ids", strength="SHOULD", title="no serverInfo"))  # ids again
    store.record(evidence(2, rule="RPC-11", prop="framing", strength="HEURISTIC", title="batch dropped"))
    runs = [PropertyRun("valid", "stdio", 10, 1.5), PropertyRun("ids", "stdio", 10, 0.5),
            PropertyRun("framing", "stdio", 10, 0.5),
            PropertyRun("mrtr", "stdio", skipped=True, note="no call answered input_required"),
            PropertyRun("lists", "stdio", 0, 0.1, note="stopped at its time share"),
            PropertyRun("history", "stdio", 3, 0.1, error="harness broke")]
    path = tmp_path / "junit.xml"
    path.write_bytes(junit_xml(runs, store.findings, target="t", seed=1, seconds=2.0, out_dir=tmp_path))
    xml = JUnitXml.fromfile(str(path))
    [suite] = list(xml)
    cases = {c.name: c for c in suite}
    assert set(cases) == {"valid[stdio]", "ids[stdio]", "framing[stdio]", "mrtr[stdio]", "lists[stdio]",
                          "history[stdio]"}
    assert (suite.tests, suite.failures, suite.skipped, suite.errors) == (6, 2, 2, 1)
    for name in ("valid[stdio]", "ids[stdio]"):
        [result] = cases[name].result
        assert isinstance(result, Failure), name
    assert "2 findings" in cases["ids[stdio]"].result[0].message
    assert cases["framing[stdio]"].is_passed and "observation" in (cases["framing[stdio]"].system_out or "")
    for name, reason in (("mrtr[stdio]", "no call answered input_required"), ("lists[stdio]", "ran 0 examples")):
        [result] = cases[name].result
        assert isinstance(result, Skipped) and reason in result.message, name
    assert isinstance(cases["history[stdio]"].result[0], Error)
    text = cases["valid[stdio]"].result[0].text or ""
    assert f"mcp-tempest replay {(tmp_path / 'repro').resolve()}/" in text and "prompts/list, tools/list" in text


def test_the_printed_replay_hint_works_from_the_project_root_and_the_reports_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    store = FindingStore(out, target="t", seed=1)
    store.record(evidence(2))
    write_reports(out, [PropertyRun("valid", "stdio", 5, 1.0)], store.findings, target="t", seed=1,
                  examples=5, seconds=1.0)
    html = (out / "report.html").read_text()
    hint = re.search(r"<code>(mcp-tempest replay [^<]+)</code>", html)
    assert hint is not None
    command = shlex.split(hint.group(1))
    junit_text = (out / "junit.xml").read_text()
    assert hint.group(1) in junit_text
    for cwd in (Path(__file__).resolve().parents[1], out):
        # The file's target does not start: exit 2 says the hint found the file and could not run it.
        proc = subprocess.run([PYTHON, "-m", "mcp_tempest.fuzz.cli", *command[1:]], cwd=cwd, capture_output=True, text=True,
                              timeout=60, check=False)
        assert proc.returncode == 2 and "could not run the target" in proc.stderr, (cwd, proc.stderr)


def test_html_report_is_self_contained_and_escapes_what_the_server_said(tmp_path: Path) -> None:
    store = FindingStore(tmp_path, target="t", seed=1)
    store.record(evidence(2, transcript=transcript(1, noise=b"<script>alert(1)</script>")))
    write_reports(tmp_path, [PropertyRun("valid", "stdio", 5, 1.0)], store.findings, target="t", seed=1,
                  examples=5, seconds=1.0)
    html = (tmp_path / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "<style>" in html
    assert "<script" not in html and "&lt;script&gt;" in html
    assert " src=" not in html and "<link" not in html
    assert "RT-01" in html and "process 0 started" in html and "repro/" in html
    assert (tmp_path / "junit.xml").exists()


def test_text_transcript_marks_direction_and_status() -> None:
    t = Transcript(target="http://x", transport="http")
    t.add("spawn", proc=0, note="http://x")
    i = t.add("send", proc=0, message={"jsonrpc": "2.0", "method": "notifications/cancelled"}, raw=b"{}",
              headers={"Content-Type": "application/json"})
    t.add("http", proc=0, status=202, ref=i, headers={"content-length": "0"})
    lines = render_transcript_text(t.to_json())
    assert lines[1].startswith("[  1] p0 -> send") and "HTTP 202" in lines[2]


def test_report_html_without_findings_says_so() -> None:
    html = report_html([PropertyRun("framing", "stdio", 3, 0.2)], [], target="t", seed=9, examples=3, seconds=0.2)
    assert "no findings" in html and "framing" in html


def test_a_heuristic_is_an_observation_unless_fail_on_asks(tmp_path: Path) -> None:
    """End to end: a server that follows every result with a stray id-less error breaks a
    HEURISTIC (RPC-07) only. Under the default --fail-on should the campaign exits 0 and reports
    one observation everywhere; under --fail-on heuristic the same campaign fails."""
    from fuzz_support import last_line, run_cli, stray_error_target

    target = stray_error_target(tmp_path)
    args = ["--properties", "valid", "--max-examples", "10", "--seed", "1", "--no-database", "--shrink-time", "3",
            "--first-finding", "--progress", "never"]
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--target", target, "--out", str(out), *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The RPC-07 heuristic is the one observation that stands; the valid property's cancellation
    # probe may add an unconfirmed one (a stray error pinned on the notification, not seen again
    # on a fresh process), which is labelled so and never fails a run either.
    index = orjson.loads((out / "findings.json").read_bytes())
    assert (index["fail_on"], index["failures"]) == ("should", 0)
    from mcp_tempest.fuzz.verdict_line import plural

    assert last_line(proc.stdout).endswith(f" property, 0 findings, {plural(index['observations'], 'observation')}: "
                                           "PASS"), proc.stdout
    assert "observation RPC-07-" in proc.stdout
    [entry] = [f for f in index["findings"] if f["rule"] == "RPC-07"]
    assert entry["verdict"] == "observation" and entry["strength"] == "HEURISTIC"
    assert all(f.get("confirmed") is False for f in index["findings"] if f["rule"] != "RPC-07"), index["findings"]
    [suite] = list(JUnitXml.fromfile(str(out / "junit.xml")))
    assert suite.failures == 0 and suite.tests == 1
    [case] = list(suite)
    assert case.is_passed and "observation RPC-07-" in (case.system_out or "")
    html = (out / "report.html").read_text()
    assert f"Observations ({index['observations']})" in html and "no findings" in html and "<h2>Findings" not in html

    strict = tmp_path / "strict"
    proc = run_cli("fuzz", "--target", target, "--out", str(strict), "--fail-on", "heuristic", *args)
    # (an unconfirmed observation, as above, may follow the count: never a failure)
    assert proc.returncode == 1 and " property, 1 finding" in last_line(proc.stdout), proc.stdout
    assert last_line(proc.stdout).endswith(": FAIL (1 finding: RPC-07)"), proc.stdout
    [suite] = list(JUnitXml.fromfile(str(strict / "junit.xml")))
    assert suite.failures == 1


def test_fail_on_takes_only_the_three_strengths() -> None:
    from fuzz_support import run_cli

    proc = run_cli("fuzz", "--fail-on", "sometimes", "--max-examples", "1")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "--fail-on" in proc.stderr


def test_html_report_stays_readable_with_dozens_of_findings(tmp_path: Path) -> None:
    store = FindingStore(tmp_path, target="t", seed=1)
    for i in range(40):
        store.record(evidence(2, rule=f"RT-{i:02d}", title=f"behaviour {i}"))
    runs = [PropertyRun("valid", "stdio", 50, 1.0)]
    html = report_html(runs, store.findings, target="t", seed=1, examples=50, seconds=1.0, out_dir=tmp_path)
    assert html.count("<details id=") == 40 and "<details id=\"RT-00" in html and " open>" not in html
    assert html.index("<h2>Findings (40)") < html.index("<h2>Property runs")  # the findings lead


def test_every_report_agrees_with_the_exit_status_under_a_known_baseline(tmp_path: Path) -> None:
    """junit.xml's failures, SARIF's baselineState and summary.md's verdict follow the exit status:
    a group the --known baseline knew is skipped (with the baseline's reason) and suppressed, a new
    one fails; interrupted and harness-error runs say so (issue 32)."""
    from junitparser import JUnitXml

    from mcp_tempest.fuzz.coverage import known_report
    from mcp_tempest.fuzz.report_status import report_status
    from mcp_tempest.fuzz.verdict_line import VERDICTS

    store = FindingStore(tmp_path / "store", target="t", seed=1)
    old, _ = store.record(evidence(2, rule="RT-01", prop="valid"))
    new, _ = store.record(evidence(2, rule="RPC-06", prop="ids", title="result without a request id"))
    store.record(evidence(2, rule="RPC-11", prop="framing", strength="HEURISTIC", title="batch dropped"))
    runs = [PropertyRun("valid", "stdio", 10, 1.0), PropertyRun("ids", "stdio", 10, 1.0),
            PropertyRun("framing", "stdio", 10, 1.0)]
    scenarios = {  # name: (baseline, interrupted, run error) -> expected exit status
        "one new": ({old.id: "tracked in #12"}, False, "", 1),
        "all known": ({old.id: "tracked in #12", new.id: "tracked in #13"}, False, "", 0),
        "interrupted": ({old.id: "tracked in #12", new.id: "tracked in #13"}, True, "", 130),
        "harness error": ({old.id: "tracked in #12", new.id: "tracked in #13"}, False, "broke", 2),
    }
    for name, (baseline, interrupted, error, status) in scenarios.items():
        out = tmp_path / name.replace(" ", "-")
        these = [*runs[:2], PropertyRun("framing", "stdio", 10, 1.0, error=error)]
        extra = {"known": known_report(store.findings, baseline, [])}
        write_reports(out, these, store.findings, target="t", seed=1, examples=30, seconds=3.0,
                      interrupted=interrupted, extra=extra)
        assert report_status(these, store.findings, interrupted=interrupted, known=baseline).status == status

        [suite] = list(JUnitXml.fromfile(str(out / "junit.xml")))
        cases = {c.name: c for c in suite}
        assert (suite.failures, suite.errors) == ({1: 1}.get(status, 0), {2: 1}.get(status, 0)), name
        [skip] = cases["valid[stdio]"].result  # the known group: listed, not red, with the baseline's reason
        assert isinstance(skip, Skipped) and f"known {old.id}: tracked in #12" in skip.message, name
        [ids_result] = cases["ids[stdio]"].result
        assert isinstance(ids_result, Failure if status == 1 else Skipped), name
        assert "observation RPC-11-" in (cases["framing[stdio]"].system_out or "")

        results = {r["partialFingerprints"]["mcpTempestFinding/v1"]: r
                   for r in orjson.loads((out / "results.sarif").read_bytes())["runs"][0]["results"]}
        assert results[old.id]["baselineState"] == "unchanged" and results[old.id]["level"] == "error"
        assert results[old.id]["suppressions"] == [{"kind": "external", "status": "accepted",
                                                    "justification": "tracked in #12"}]
        assert results[new.id]["baselineState"] == ("new" if status == 1 else "unchanged"), name
        assert ("suppressions" in results[new.id]) == (status != 1), name
        [observed] = [r for r in results.values() if r["ruleId"] == "RPC-11"]
        assert observed["baselineState"] == "new" and observed["level"] == "note"

        md = (out / "summary.md").read_text()
        head = md.splitlines()[0]
        assert head.startswith(f"## mcp-tempest fuzz: 2 findings, 1 observation: {VERDICTS[status]}"), (name, head)
        rows = {line.split(" | ")[0].lstrip("| "): line for line in md.splitlines() if " | stdio | " in line}
        assert f"known: {old.id}" in rows["valid"] and " ok |" not in rows["valid"], rows
        assert ("FAIL: 1 new finding" in rows["ids"]) == (status == 1), rows
        assert ("harness error: broke" in rows["framing"]) == (status == 2), rows
        html = (out / "report.html").read_text()
        assert f'<span class="{"ok" if status == 0 else "bad"}">{VERDICTS[status]}' in html, name
        assert ("<h2>Findings (1)" in html) == (status == 1) and "<h2>Known findings" in html, name

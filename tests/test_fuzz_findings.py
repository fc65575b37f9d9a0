"""Findings, their files and the reports: bucketing, "on disk at once", smaller evidence wins.

These are pure data tests (the campaign tests cover the same files produced by real runs):
the transcripts here are built event by event, the way the drivers record them.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import orjson

from fuzz.findings import Evidence, FindingStore, PropertyRun, finding_id, load_repro
from fuzz.reports import junit_xml, render_transcript_text, report_html, write_reports
from targets import wire
from targets.transcript import Transcript


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
    return Evidence(
        rule=rule, strength=kw.pop("strength", "MUST"), title=kw.pop("title", "result without resultType"),
        method=method, transport=transport, mutation=mutation, property=kw.pop("prop", "valid"),
        case={"property": "valid", "steps": []}, transcript=kw.pop("transcript", transcript(frames)),
        violations=[{"rule": rule, "strength": "MUST", "title": "result without resultType", "event": 2}],
        reproduce_blob="AXicY2BgAAAABAAB", hypothesis_version="6.170.17", target="stdio:server",
        confirmed=confirmed,
    )


def test_a_finding_is_on_disk_as_soon_as_it_is_recorded(tmp_path: Path) -> None:
    store = FindingStore(tmp_path, target="stdio:server", seed=42)
    assert orjson.loads((tmp_path / "findings.json").read_bytes())["findings"] == []
    finding, is_new = store.record(evidence(3))
    assert is_new
    index = orjson.loads((tmp_path / "findings.json").read_bytes())
    assert index["target"] == "stdio:server" and index["revision"] == "2026-07-28" and index["seed"] == 42
    [entry] = index["findings"]
    assert entry["id"] == finding.id and entry["count"] == 1 and entry["repro"] == f"repro/{finding.id}.json"
    repro = load_repro(tmp_path / entry["repro"])
    assert repro["seed"] == 42 and repro["reproduce_blob"] and repro["property"] == "valid"
    assert repro["reproduce_decorator"].startswith("@reproduce_failure('6.170.17', b'")
    assert len([e for e in repro["transcript"]["events"] if e["kind"] == "send"]) == 3


def test_bucketing_by_rule_method_mutation_and_transport(tmp_path: Path) -> None:
    store = FindingStore(tmp_path, target="t", seed=1)
    store.record(evidence(3))
    store.record(evidence(2))  # same bucket, smaller: replaces the evidence
    store.record(evidence(4))  # same bucket, larger: only counted
    store.record(evidence(2, mutation="id-null"))
    store.record(evidence(2, method="prompts/list"))
    store.record(evidence(2, transport="http"))
    store.record(evidence(2, rule="RPC-06"))
    findings = store.findings
    assert len(findings) == 5
    first = next(f for f in findings if (f.rule, f.method, f.mutation, f.transport) == ("RT-01", "tools/list", None, "stdio"))
    assert first.count == 3
    repro = load_repro(tmp_path / first.repro)
    assert len([e for e in repro["transcript"]["events"] if e["kind"] == "send"]) == 2
    assert len({f.id for f in findings}) == 5
    assert finding_id("RT-01", "tools/list", None, "stdio") == first.id  # stable across campaigns


def test_confirmed_evidence_beats_smaller_unconfirmed(tmp_path: Path) -> None:
    store = FindingStore(tmp_path, target="t", seed=1)
    found, _ = store.record(evidence(4, confirmed=True))
    store.record(evidence(1, confirmed=False))
    assert load_repro(tmp_path / found.repro)["confirmed"] is True
    assert len([e for e in load_repro(tmp_path / found.repro)["transcript"]["events"] if e["kind"] == "send"]) == 4


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
        assert "not an mcp-gauntlet reproduction" in str(exc)


def test_junit_has_one_case_per_property_and_transport_and_one_failure_per_finding(tmp_path: Path) -> None:
    store = FindingStore(tmp_path, target="t", seed=1)
    store.record(evidence(2))
    store.record(evidence(2, rule="RPC-06", prop="ids"))
    runs = [PropertyRun("valid", "stdio", 10, 1.5), PropertyRun("ids", "stdio", 10, 0.5),
            PropertyRun("mrtr", "stdio", skipped=True, note="no call answered input_required")]
    root = ET.fromstring(junit_xml(runs, store.findings, target="t", seed=1, seconds=2.0))
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {"valid[stdio]", "ids[stdio]", "mrtr[stdio]"}
    assert len(cases["valid[stdio]"].findall("failure")) == 1 and len(cases["ids[stdio]"].findall("failure")) == 1
    assert cases["mrtr[stdio]"].find("skipped") is not None
    assert root.get("failures") == "2" and root.get("tests") == "3"
    failure = cases["valid[stdio]"].find("failure")
    assert failure is not None and failure.get("type") == "RT-01" and "mcp-gauntlet replay repro/" in (failure.text or "")


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

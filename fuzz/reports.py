"""The campaign's reports for machines (junit.xml) and for people (report.html).

Both are rendered from the same two inputs, the findings and the property runs, so they cannot
disagree. The HTML page is one file with inline CSS and no script or external resource: it is
attached to CI artefacts and opened from disk, often without network.
"""

from __future__ import annotations

import datetime as _dt
import html
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson

from fuzz.findings import Finding, PropertyRun, atomic_write
from fuzz.markdown_summary import summary_bytes
from fuzz.sarif import sarif_bytes
from targets.wire import MODERN_VERSION

# --- junit.xml ---


def junit_xml(
    runs: Sequence[PropertyRun],
    findings: Sequence[Finding],
    *,
    target: str,
    seed: int | None,
    seconds: float,
) -> bytes:
    """One test case per property and transport; one <failure> per finding inside its case."""
    cases: dict[tuple[str, str], PropertyRun] = {(r.property, r.transport): r for r in runs}
    by_case: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        key = (f.property, f.transport)
        by_case.setdefault(key, []).append(f)
        cases.setdefault(key, PropertyRun(property=f.property, transport=f.transport))

    skipped = sum(1 for r in cases.values() if r.skipped)
    errors = sum(1 for r in cases.values() if r.error)
    root = ET.Element(
        "testsuites", name="mcp-gauntlet fuzz", tests=str(len(cases)), failures=str(len(findings)),
        errors=str(errors), skipped=str(skipped), time=f"{seconds:.3f}",
    )
    suite = ET.SubElement(
        root, "testsuite", name=f"mcp-gauntlet fuzz {target}", tests=str(len(cases)),
        failures=str(len(findings)), errors=str(errors), skipped=str(skipped), time=f"{seconds:.3f}",
        timestamp=_dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
    )
    props = ET.SubElement(suite, "properties")
    for name, value in (("target", target), ("revision", MODERN_VERSION), ("seed", str(seed))):
        ET.SubElement(props, "property", name=name, value=value)
    for key in sorted(cases):
        run = cases[key]
        case = ET.SubElement(
            suite, "testcase", classname=f"mcp_gauntlet.fuzz.{run.property}",
            name=f"{run.property}[{run.transport}]", time=f"{run.seconds:.3f}",
        )
        for f in by_case.get(key, []):
            failure = ET.SubElement(
                case, "failure", type=f.rule, message=f"{f.strength} {f.rule}: {f.title}"[:500],
            )
            failure.text = _failure_text(f)
        if run.error:
            err = ET.SubElement(case, "error", message=run.error[:500])
            err.text = run.error
        elif run.skipped:
            ET.SubElement(case, "skipped", message=run.note or "skipped")
        out = ET.SubElement(case, "system-out")
        out.text = f"{run.examples} examples" + (f"; {run.note}" if run.note else "")
    ET.indent(root)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8") + b"\n"


def _failure_text(f: Finding) -> str:
    lines = [
        f"finding {f.id}: {f.strength} {f.rule}",
        f"title: {f.title}",
        f"method: {f.method or '-'}  transport: {f.transport}  mutation: {f.mutation or '-'}",
        f"seen {f.count} time(s); reproduction: {f.repro}",
        f"replay: mcp-gauntlet replay {f.repro}",
        "",
        "transcript:",
        *render_transcript_text(f.evidence.transcript),
    ]
    return "\n".join(lines)


def render_transcript_text(transcript: dict[str, Any], *, limit: int = 400) -> list[str]:
    """A plain-text transcript: one line per event, for junit and the terminal."""
    out: list[str] = []
    for i, ev in enumerate(transcript.get("events", [])[:limit]):
        out.append(f"[{i:3d}] p{ev.get('proc', 0)} {_event_summary(ev)}")
    extra = len(transcript.get("events", [])) - limit
    if extra > 0:
        out.append(f"... {extra} more events")
    return out


def _event_summary(ev: dict[str, Any], *, width: int = 300) -> str:
    kind = ev.get("kind", "?")
    arrow = {"send": "->", "recv": "<-", "http": "<-"}.get(kind, "--")
    parts = [arrow, kind]
    if ev.get("status") is not None:
        parts.append(f"HTTP {ev['status']}")
    body = _event_body(ev)
    if body:
        parts.append(body if len(body) <= width else body[:width] + " ...")
    if ev.get("note"):
        parts.append(f"({ev['note']})")
    return " ".join(parts)


def _event_body(ev: dict[str, Any]) -> str:
    if "message" in ev:
        return orjson.dumps(ev["message"]).decode()
    if "raw" in ev:
        return repr(ev["raw"])
    if "raw_b64" in ev:
        return f"<bytes, base64 {ev['raw_b64']}>"
    return ""


# --- report.html ---

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1100px;color:#1d1d1f;padding:0 1rem}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
.sub{color:#666;margin-top:0}table{border-collapse:collapse;width:100%;margin:.5rem 0}
th,td{border:1px solid #e2e2e2;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f5f5f7}.ok{color:#137333;font-weight:600}.bad{color:#b3261e;font-weight:600}
.MUST{background:#fce8e6}.SHOULD{background:#fef7e0}.HEURISTIC{background:#e8f0fe}
.badge{display:inline-block;border-radius:4px;padding:0 .4rem;font-size:.8rem;font-weight:600}
details{border:1px solid #e2e2e2;border-radius:6px;margin:.8rem 0;padding:.4rem .8rem}
summary{cursor:pointer;font-weight:600}code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
pre{white-space:pre-wrap;word-break:break-all;margin:0}
.tx td{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
.k-send{background:#f1f8ff}.k-recv{background:#f3fbf4}.k-http{background:#f3fbf4}
.k-spawn td{background:#eee;font-weight:600}.k-noise,.k-oversize,.k-timeout,.k-closed,.k-exit,.k-error{background:#fff4e5}
.k-stderr{background:#fafafa;color:#555}.hl{outline:2px solid #b3261e}
"""


def report_html(
    runs: Sequence[PropertyRun],
    findings: Sequence[Finding],
    *,
    target: str,
    seed: int | None,
    examples: int,
    seconds: float,
    interrupted: bool = False,
    notes: Iterable[str] = (),
) -> str:
    e = html.escape
    verdict = (
        f'<span class="bad">{len(findings)} finding{"s" if len(findings) != 1 else ""}</span>'
        if findings else '<span class="ok">no findings</span>'
    )
    head = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>mcp-gauntlet fuzz: {e(target)}</title>",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<style>{_CSS}</style></head><body>",
        "<h1>mcp-gauntlet fuzz report</h1>",
        f'<p class="sub">target <code>{e(target)}</code> &middot; revision {MODERN_VERSION} '
        f"&middot; seed {e(str(seed))} &middot; {examples} examples in {seconds:.1f} s &middot; {verdict}"
        + (" &middot; <b>interrupted</b>" if interrupted else "") + "</p>",
    ]
    for note in notes:
        head.append(f"<p>{e(note)}</p>")

    body: list[str] = ["<h2>Summary</h2>"]
    body.append("<table><tr><th>property</th><th>transport</th><th>examples</th><th>seconds</th>"
                "<th>findings</th><th>note</th></tr>")
    per_case: dict[tuple[str, str], int] = {}
    for f in findings:
        per_case[(f.property, f.transport)] = per_case.get((f.property, f.transport), 0) + 1
    for r in runs:
        n = per_case.get((r.property, r.transport), 0)
        cls = "bad" if n else "ok"
        note = r.error or r.note or ("skipped" if r.skipped else "")
        body.append(
            f"<tr><td>{e(r.property)}</td><td>{e(r.transport)}</td><td>{r.examples}</td>"
            f"<td>{r.seconds:.1f}</td><td class=\"{cls}\">{n}</td><td>{e(note)}</td></tr>"
        )
    body.append("</table>")

    if findings:
        body.append("<h2>Findings</h2><table><tr><th>id</th><th>rule</th><th>strength</th><th>title</th>"
                    "<th>method</th><th>transport</th><th>mutation</th><th>count</th></tr>")
        for f in findings:
            body.append(
                f'<tr><td><a href="#{e(f.id)}">{e(f.id)}</a></td><td>{e(f.rule)}</td>'
                f'<td class="{e(f.strength)}">{e(f.strength)}</td><td>{e(f.title)}</td>'
                f"<td>{e(f.method or '-')}</td><td>{e(f.transport)}</td><td>{e(f.mutation or '-')}</td>"
                f"<td>{f.count}</td></tr>"
            )
        body.append("</table>")
        for f in findings:
            body.append(_finding_section(f))
    body.append("</body></html>")
    return "\n".join(head + body) + "\n"


def _finding_section(f: Finding) -> str:
    e = html.escape
    ev = f.evidence
    hl = {v.get("event") for v in ev.violations if isinstance(v.get("event"), int)}
    parts = [
        f'<details id="{e(f.id)}" open><summary><span class="badge {e(f.strength)}">{e(f.strength)}</span> '
        f"{e(f.rule)}: {e(f.title)}</summary>",
        f"<p>property <code>{e(ev.property)}</code> over <code>{e(f.transport)}</code>; method "
        f"<code>{e(f.method or '-')}</code>; mutation <code>{e(f.mutation or '-')}</code>; seen {f.count} "
        f"time(s). Replay: <code>mcp-gauntlet replay {e(f.repro)}</code></p>",
    ]
    if ev.note:
        parts.append(f"<p>{e(ev.note)}</p>")
    if ev.violations:
        parts.append("<table><tr><th>rule</th><th>strength</th><th>what</th><th>event</th></tr>")
        for v in ev.violations:
            parts.append(
                f"<tr><td>{e(str(v.get('rule')))}</td><td>{e(str(v.get('strength')))}</td>"
                f"<td>{e(str(v.get('message') or v.get('title') or ''))}</td>"
                f"<td>{e(str(v.get('event', '')))}</td></tr>"
            )
        parts.append("</table>")
    parts.append(transcript_html(ev.transcript, highlight=hl))
    if ev.reproduce_blob:
        parts.append(
            f"<p>Hypothesis {e(str(ev.hypothesis_version))} reproduce blob: <code>{e(ev.reproduce_blob)}</code></p>"
        )
    parts.append("</details>")
    return "\n".join(parts)


def transcript_html(transcript: dict[str, Any], *, highlight: set[int] | None = None, limit: int = 600) -> str:
    """Every event in order; a process start is a full-width divider, so boundaries stand out."""
    e = html.escape
    highlight = highlight or set()
    rows = ['<table class="tx"><tr><th>#</th><th>t (s)</th><th>proc</th><th></th><th>content</th></tr>']
    events = transcript.get("events", [])
    for i, ev in enumerate(events[:limit]):
        kind = str(ev.get("kind", "?"))
        cls = f"k-{kind}" + (" hl" if i in highlight else "")
        if kind == "spawn":
            rows.append(
                f'<tr class="{cls}"><td>{i}</td><td>{ev.get("t", 0):.3f}</td><td>{ev.get("proc", 0)}</td>'
                f'<td colspan="2">process {ev.get("proc", 0)} started: {e(ev.get("note", ""))}</td></tr>'
            )
            continue
        arrow = {"send": "&rarr;", "recv": "&larr;", "http": "&larr;"}.get(kind, "&middot;")
        content: list[str] = []
        if ev.get("status") is not None:
            content.append(f"<b>HTTP {e(str(ev['status']))}</b>")
        if ev.get("headers"):
            hdrs = "\n".join(f"{k}: {v}" for k, v in ev["headers"].items())
            content.append(f"<details><summary>headers</summary><pre>{e(hdrs)}</pre></details>")
        body = _event_body(ev)
        if body:
            if "message" in ev:
                body = orjson.dumps(ev["message"], option=orjson.OPT_INDENT_2).decode()
            content.append(f"<pre>{e(body)}</pre>")
        if ev.get("note"):
            content.append(f"<i>{e(str(ev['note']))}</i>")
        rows.append(
            f'<tr class="{cls}"><td>{i}</td><td>{ev.get("t", 0):.3f}</td><td>{ev.get("proc", 0)}</td>'
            f"<td>{arrow} {e(kind)}</td><td>{''.join(content)}</td></tr>"
        )
    if len(events) > limit:
        rows.append(f'<tr><td colspan="5">... {len(events) - limit} more events</td></tr>')
    rows.append("</table>")
    return "\n".join(rows)


def write_reports(
    out_dir: Path,
    runs: Sequence[PropertyRun],
    findings: Sequence[Finding],
    *,
    target: str,
    seed: int | None,
    examples: int,
    seconds: float,
    interrupted: bool = False,
    notes: Iterable[str] = (),
) -> None:
    atomic_write(
        out_dir / "junit.xml", junit_xml(runs, findings, target=target, seed=seed, seconds=seconds)
    )
    notes = list(notes)
    atomic_write(out_dir / "results.sarif", sarif_bytes(findings, target=target, seed=seed))
    atomic_write(out_dir / "summary.md", summary_bytes(runs, findings, target=target, seed=seed, examples=examples,
                                                       seconds=seconds, interrupted=interrupted, notes=notes))
    atomic_write(
        out_dir / "report.html",
        report_html(
            runs, findings, target=target, seed=seed, examples=examples, seconds=seconds,
            interrupted=interrupted, notes=notes,
        ).encode("utf-8"),
    )

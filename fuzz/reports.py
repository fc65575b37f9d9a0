"""The campaign's reports for machines (junit.xml) and for people (report.html).

Both are rendered from the same two inputs, the findings (grouped by root cause, see
fuzz/findings.py) and the property runs, so they cannot disagree; `replay_command`, `where_seen`,
`probe_text` and `run_skip_reason` say the same thing in every format (reuse them for new ones). The HTML page is one file with inline CSS and no script or external resource: it is
attached to CI artefacts and opened from disk, often without network.
"""

from __future__ import annotations

import base64 as _base64
import datetime as _dt
import hashlib
import shlex
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import orjson

from mcp_tempest.fuzz.differences import is_difference
from mcp_tempest.fuzz.findings import DEFAULT_FAIL_ON, Finding, PropertyRun, atomic_write, probe_text
from mcp_tempest.fuzz.markdown_summary import summary_bytes
from mcp_tempest.fuzz.report_status import known_groups, report_status
from mcp_tempest.fuzz.safe_text import NAME_WIDTH, html_text, visible
from mcp_tempest.fuzz.sarif import sarif_bytes
from mcp_tempest.targets.frame_recipe import describe
from mcp_tempest.targets.wire import MODERN_VERSION

if TYPE_CHECKING:
    from mcp_tempest.fuzz.catalogue import Catalogue

# --- what both reports say of a finding ---


def replay_command(f: Finding, out_dir: Path | None) -> str:
    """The replay hint as printed: with the repro file's absolute path, so the command works as
    printed from any directory (the project root, the report's folder, a CI workspace)."""
    path = (out_dir / f.repro).resolve() if out_dir is not None else Path(f.repro)
    return f"mcp-tempest replay {shlex.quote(str(path))}"


def where_seen(f: Finding) -> str:
    methods = ", ".join(f.methods) or "-"
    return f"methods {methods}; transports {', '.join(f.transports)}; properties {', '.join(sorted(f.properties))}"


def run_skip_reason(run: PropertyRun) -> str | None:
    """Why a property run counts as skipped, or None when it ran: a run of 0 examples is never a
    pass, whatever stopped it."""
    if run.error:
        return None
    if run.skipped:
        return run.note or "skipped"
    if run.examples == 0:
        return f"ran 0 examples ({run.note})" if run.note else "ran 0 examples"
    return None


# --- junit.xml ---


def junit_xml(
    runs: Sequence[PropertyRun],
    findings: Sequence[Finding],
    *,
    target: str,
    seed: int | None,
    seconds: float,
    fail_on: str = DEFAULT_FAIL_ON,
    out_dir: Path | None = None,
    known: Mapping[str, str] | None = None,
) -> bytes:
    """One test case per property and transport. A case where a new finding (at or above
    `fail_on`, confirmed, not in the `known` baseline) was seen has exactly one <failure> naming
    every such finding, so `failures` counts failed cases as JUnit readers expect and is 0
    exactly when the findings leave the exit status 0; a case whose only findings the baseline
    knew is <skipped> with the baseline's reason (still listed, never red); observations go to
    the case's system-out; a case that ran 0 examples is <skipped> with its reason."""
    cases: dict[tuple[str, str], PropertyRun] = {(r.property, r.transport): r for r in runs}
    judged = report_status(runs, findings, fail_on=fail_on, known=known)
    failing = list(judged.new)
    accepted = [f for f in findings if f.fails(fail_on) and judged.reason(f) is not None]
    for f in findings:
        for s in f.sightings.values():
            cases.setdefault((s.property, s.transport), PropertyRun(property=s.property, transport=s.transport))

    results: dict[tuple[str, str], str] = {}
    for key, run in cases.items():
        if any(f.seen_in(*key) for f in failing):
            results[key] = "failure"
        elif run.error:
            results[key] = "error"
        elif run_skip_reason(run) is not None or any(f.seen_in(*key) for f in accepted):
            results[key] = "skipped"
        else:
            results[key] = "passed"
    counts = {kind: str(sum(1 for r in results.values() if r == kind)) for kind in ("failure", "error", "skipped")}
    root = ET.Element(
        "testsuites", name="mcp-tempest fuzz", tests=str(len(cases)), failures=counts["failure"],
        errors=counts["error"], skipped=counts["skipped"], time=f"{seconds:.3f}",
    )
    suite = ET.SubElement(
        root, "testsuite", name=f"mcp-tempest fuzz {visible(target)}", tests=str(len(cases)),
        failures=counts["failure"], errors=counts["error"], skipped=counts["skipped"], time=f"{seconds:.3f}",
        timestamp=_dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
    )
    props = ET.SubElement(suite, "properties")
    for name, value in (("target", visible(target)), ("revision", MODERN_VERSION), ("seed", str(seed)),
                        ("fail-on", fail_on)):
        ET.SubElement(props, "property", name=name, value=value)
    for key in sorted(cases):
        run = cases[key]
        case = ET.SubElement(
            suite, "testcase", classname=f"mcp_tempest.fuzz.{run.property}",
            name=f"{run.property}[{run.transport}]", time=f"{run.seconds:.3f}",
        )
        here = [f for f in failing if f.seen_in(*key)]
        seen = [f for f in findings if f.seen_in(*key) and not f.fails(fail_on)]
        if results[key] == "failure":
            head = "; ".join(f"{f.label} {f.rule}: {visible(f.title, 500)}" for f in here)
            failure = ET.SubElement(
                case, "failure", type=here[0].rule,
                message=f"{len(here)} finding{'s' * (len(here) != 1)}: {head}"[:500],
            )
            texts = [_failure_text(f, out_dir) for f in here]
            if run.error:
                texts.append(f"the harness also stopped with an error: {visible(run.error, multiline=True)}")
            failure.text = "\n\n".join(texts)
        elif results[key] == "error":
            err = ET.SubElement(case, "error", message=visible(run.error, 500))
            err.text = visible(run.error, multiline=True)
        elif results[key] == "skipped":
            why = [f"known {f.id}: {judged.reason(f)}" for f in accepted if f.seen_in(*key)]
            why += [r for r in [run_skip_reason(run)] if r]
            ET.SubElement(case, "skipped", message=visible("; ".join(why), 500))
        out = ET.SubElement(case, "system-out")
        lines = [f"{run.examples} examples" + (f"; {visible(run.note)}" if run.note else "")]
        lines += [f"known {f.id} (in the --known baseline: {visible(judged.reason(f) or '')}): {f.label} {f.rule}: "
                  f"{visible(f.title)} ({where_seen(f)}); replay: {replay_command(f, out_dir)}"
                  for f in accepted if f.seen_in(*key)]
        lines += [f"observation {f.id}: {f.label} {f.rule}: {visible(f.title)} ({where_seen(f)}); "
                  f"replay: {replay_command(f, out_dir)}" for f in seen]
        out.text = "\n".join(lines)
    ET.indent(root)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8") + b"\n"


def _failure_text(f: Finding, out_dir: Path | None) -> str:
    lines = [
        f"finding {f.id}: {f.label} {f.rule}",
        f"title: {visible(f.title)}",
        f"seen in: {where_seen(f)}",
        f"probe: {visible(probe_text(f))}",
        f"seen {f.count} time(s); reproduction: {f.repro}",
        f"replay: {replay_command(f, out_dir)}",
        "",
        f"transcript (smallest, {f.evidence.property} over {f.transport}):",
        *render_transcript_text(f.evidence.transcript),
    ]
    return "\n".join(lines)


def render_transcript_text(transcript: dict[str, Any], *, limit: int = 400) -> list[str]:
    """A plain-text transcript: one line per event, for junit and the terminal (what the server
    sent is in it: every line goes through `visible`, orjson leaves bidi and U+2028 raw)."""
    out: list[str] = []
    for i, ev in enumerate(transcript.get("events", [])[:limit]):
        out.append(visible(f"[{i:3d}] p{ev.get('proc', 0)} {_event_summary(ev)}"))
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
    body = _event_body(ev, width)
    if body:
        parts.append(body)
    if ev.get("note"):
        parts.append(f"({ev['note']})")
    return " ".join(parts)


#: Characters of one event's content report.html shows; a longer one is shown as its start, its
#: size and a digest (a 9 MB tools/list page, rendered whole per finding, made a 21 MB report and
#: 150 MB of the campaign's peak). The repro file keeps every event whole.
REPORT_BODY_CHARS: Final = 16 * 1024


def _event_body(ev: dict[str, Any], limit: int = REPORT_BODY_CHARS, *, indent: bool = False) -> str:
    """The event's content as text, at most about `limit` characters of it: past that, the start,
    then how big the whole is and its digest. Only what is shown is rendered (a big message is
    stored as its raw text alone, so nothing bigger than RAW_ONLY_BYTES is encoded here)."""
    if "message" in ev:
        text = orjson.dumps(ev["message"], option=orjson.OPT_INDENT_2 if indent else 0).decode()
        return text if len(text) <= limit else text[:limit] + _whole(text)
    if "raw" in ev:
        raw = ev["raw"]
        return repr(raw) if len(raw) <= limit else repr(raw[:limit]) + _whole(raw)
    if "raw_b64" in ev:
        b64 = ev["raw_b64"]
        shown = b64 if len(b64) <= limit else b64[:limit] + _whole(b64, base64=True)
        return f"<bytes, base64 {shown}>"
    if isinstance(ev.get("raw_made"), dict):
        return describe(ev["raw_made"])
    return ""


def _whole(text: str, *, base64: bool = False) -> str:
    """What an excerpt of `text` leaves out: the whole's size and sha256 (of the bytes it stands for)."""
    data = _b64decode(text) if base64 else text.encode("utf-8", "surrogatepass")
    return (f" ... ({len(data):,} bytes in all, sha256 {hashlib.sha256(data).hexdigest()[:16]}; "
            "the repro file holds it whole)")


def _b64decode(text: str) -> bytes:
    try:
        return _base64.b64decode(text)
    except ValueError:
        return text.encode("ascii", "replace")


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
    fail_on: str = DEFAULT_FAIL_ON,
    out_dir: Path | None = None,
    catalogues: Sequence[Catalogue] = (),
    reach: dict[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> str:
    """The page leads with the verdict and the new findings, one collapsed block per bug (a
    campaign with dozens of findings stays one screen of summaries), then the ones a --known
    baseline knew, the observations, the property runs and what was tested. `extra` is
    findings.json's campaign sections (coverage, budget, tools, reach, known): shown, not
    recomputed."""
    e = html_text
    reach = reach if reach is not None else (extra or {}).get("reach")
    judged = report_status(runs, findings, fail_on=fail_on, interrupted=interrupted, known=known_groups(extra))
    failing = list(judged.new)
    accepted = [f for f in findings if f.fails(fail_on) and judged.reason(f) is not None]
    observed = [f for f in findings if not f.fails(fail_on)]
    verdict = (
        f'<span class="bad">{len(failing)} finding{"s" if len(failing) != 1 else ""}</span>'
        if failing else f'<span class="ok">no {"new " if accepted else ""}findings</span>'
    )
    verdict = f'<span class="{"ok" if judged.status == 0 else "bad"}">{e(judged.verdict)}</span> &middot; {verdict}'
    if accepted:
        verdict += f" &middot; {len(accepted)} known"
    if observed:
        verdict += f" &middot; {len(observed)} observation{'s' if len(observed) != 1 else ''}"
    head = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>mcp-tempest fuzz: {html_text(target, mark=False)}</title>",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<style>{_CSS}</style></head><body>",
        "<h1>mcp-tempest fuzz report</h1>",
        f'<p class="sub">target <code>{e(target)}</code> &middot; revision {MODERN_VERSION} '
        f"&middot; seed {e(str(seed))} &middot; {examples} examples in {seconds:.1f} s &middot; {verdict}"
        f" &middot; fail-on {e(fail_on)}"
        + (" &middot; <b>interrupted</b>" if interrupted else "")
        + (f' &middot; <a href="#tested">{cov["tried"]} of {cov["probes"]} probes tried</a>'
           if (cov := (extra or {}).get("coverage")) and cov.get("probes") else "") + "</p>",
    ]
    for note in notes:
        head.append(f"<p>{e(note)}</p>")

    body: list[str] = []
    for title, group, intro in (
        ("Findings", [f for f in failing if not is_difference(f)], ""),
        ("Differences between targets", [f for f in failing if is_difference(f)],
         "<p>Answers that differ in meaning between the target and the one it was compared with "
         "(--compare-target): error or result, error code, resultType, isError, list items.</p>"),
        ("Known findings", accepted,
         "<p>In the --known baseline: seen again, reported, not failures. " + "; ".join(
             f'<a href="#{e(f.id)}">{e(f.id)}</a>: {e(judged.reason(f) or "")}' for f in accepted) + "</p>"),
        ("Observations", observed,
         f"<p>Below --fail-on {e(fail_on)}, or not confirmed on fresh processes: shown, not failures.</p>"),
    ):
        if not group:
            continue
        body.append(f"<h2>{title} ({len(group)})</h2>{intro}")
        body.append("<table><tr><th>finding</th><th>strength</th><th>rule</th><th>title</th><th>probe</th>"
                    "<th>methods</th><th>transports</th><th>count</th></tr>")
        for f in group:
            body.append(
                f'<tr><td><a href="#{e(f.id)}">{e(f.id)}</a></td><td class="{e(f.strength)}">{e(f.label)}</td>'
                f"<td>{e(f.rule)}</td><td>{e(f.title)}</td><td>{e(probe_text(f))}</td>"
                f"<td>{e(', '.join(f.methods) or '-')}</td><td>{e(', '.join(f.transports))}</td>"
                f"<td>{f.count}</td></tr>"
            )
        body.append("</table>")
        for f in group:
            body.append(_finding_section(f, out_dir))

    body.append("<h2>Property runs</h2>")
    body.append("<table><tr><th>property</th><th>transport</th><th>examples</th><th>seconds</th>"
                "<th>findings</th><th>known</th><th>observations</th><th>note</th></tr>")
    for r in runs:
        n = sum(1 for f in failing if f.seen_in(r.property, r.transport))
        k = sum(1 for f in accepted if f.seen_in(r.property, r.transport))
        o = sum(1 for f in observed if f.seen_in(r.property, r.transport))
        cls = "bad" if n else "ok"
        note = r.error or run_skip_reason(r) or r.note
        body.append(
            f"<tr><td>{e(r.property)}</td><td>{e(r.transport)}</td><td>{r.examples}</td>"
            f"<td>{r.seconds:.1f}</td><td class=\"{cls}\">{n}</td><td>{k}</td><td>{o}</td><td>{e(note)}</td></tr>"
        )
    body.append("</table>")
    body += tested_html(extra, reach)
    body += reach_html(reach)
    if catalogues:
        from mcp_tempest.fuzz.catalogue import report_html as catalogue_html

        body += catalogue_html(list(catalogues))
    body.append("</body></html>")
    return "\n".join(head + body) + "\n"


def tested_html(extra: Mapping[str, Any] | None, reach: Mapping[str, Any] | None) -> list[str]:
    """What the campaign tried, from findings.json's own sections: a page with no findings says
    little until it says which probes went out, which rules they exercised, which did not go out
    and why, the tools it could call and the budget it had (the terminal's coverage lines)."""
    extra = extra or {}
    budget, cov, tools = extra.get("budget"), extra.get("coverage"), extra.get("tools")
    if not (budget or cov or tools or reach):
        return []
    e = html_text
    out = ['<h2 id="tested">What was tested</h2>']
    if budget:
        limit = (f"--duration {budget['duration']:g} s" if budget.get("duration")
                 else f"--max-examples {budget.get('max_examples')}")
        out.append(f"<p>Budget: {e(limit)}: {budget.get('generated', 0)} examples generated, "
                   f"{budget.get('shrinks', 0)} executions shrinking and confirming failures "
                   f"(--shrink-time {budget.get('shrink_time', 0):g} s per property), {budget.get('replays', 0)} "
                   f"failures replayed from the example database; {budget.get('seconds', 0):.1f} s in all.</p>")
    if cov and cov.get("probes"):
        out.append(f"<p>Probes: <b>{cov['tried']} of {cov['probes']}</b> tried; rules: "
                   f"<b>{cov['rules_exercised']} of {cov['rules']}</b> exercised by them.</p>")
        if cov.get("exercised"):
            out.append(f"<p>Rules exercised: {e(', '.join(cov['exercised']))}.</p>")
        by_why: dict[str, list[str]] = {}
        for item in cov.get("not_applied", []):
            by_why.setdefault(item["why"], []).append(f"{item['probe']} ({item['rule']})")
        if by_why:
            out.append("<table><tr><th>probes not tried (rule)</th><th>why not</th></tr>")
            out += [f"<tr><td>{e(', '.join(names))}</td><td>{e(why)}</td></tr>" for why, names in by_why.items()]
            out.append("</table>")
        if cov.get("rules_not_exercised"):
            out.append("<table><tr><th>rule not exercised</th><th>its probes, none tried because</th></tr>")
            for rule in cov["rules_not_exercised"]:
                whys = sorted({i["why"] for i in cov.get("not_applied", []) if i["rule"] == rule})
                out.append(f"<tr><td>{e(rule)}</td><td>{e('; '.join(whys) or '-')}</td></tr>")
            out.append("</table>")
    if tools:
        withheld = ", ".join(html_text(n, NAME_WIDTH) for n in tools.get("withheld", [])) or "none"
        out.append(f"<p>Tools: {e(tools.get('policy', ''))}; withheld (never called): {withheld}.</p>")
    if reach and reach.get("tools"):
        never = reach.get("never_ok", [])
        out.append(f"<p>Tools reached: {len(reach['tools']) - len(never)} of {len(reach['tools'])} returned a "
                   "successful result (table below).</p>")
    code = (reach or {}).get("code")
    if code and code.get("measured"):
        what = "functions" if code.get("kind") == "functions" else "lines and branches"
        out.append(f"<p>Server code coverage: {code['percent']:.1f}% of its {what} (table below).</p>")
    return out  # then reach_html: the tools' table, and the code coverage's (or why it was not measured)


def reach_html(reach: dict[str, Any] | None) -> list[str]:
    """The tools least reached first, and the server's files least covered first."""
    if not reach:
        return []
    e = html_text
    out: list[str] = []
    tools = sorted(reach.get("tools", []), key=lambda r: (r["ok"] > 0, r["ok"], r["name"]))
    if tools:
        out.append(f"<h2>Reach: {len(tools) - len(reach.get('never_ok', []))} of {len(tools)} tools returned a "
                   "successful result</h2>")
        out.append("<table><tr><th>tool</th><th>calls</th><th>ok</th><th>isError</th><th>protocol error</th>"
                   "<th>no answer</th><th>first success from</th><th>most common answer</th></tr>")
        for r in tools:
            answer = r.get("never_called") or (r["answers"][0]["text"] if r.get("answers") and not r["ok"] else "")
            cls = "ok" if r["ok"] else "bad"
            out.append(f"<tr><td>{e(r['name'], NAME_WIDTH)}</td><td>{r['calls']}</td>"
                       f"<td class=\"{cls}\">{r['ok']}</td>"
                       f"<td>{r['is_error']}</td><td>{r['protocol_error']}</td><td>{r['unanswered']}</td>"
                       f"<td>{e(r.get('first_ok_source', ''))}</td><td>{e(answer)}</td></tr>")
        out.append("</table>")
    code = reach.get("code")
    if code and code.get("measured") and code.get("kind") == "functions":
        out.append(f"<h2>Server code coverage: {code['percent']:.1f}% of functions</h2>"
                   "<p>Functions of the server's own code, measured with V8's coverage (NODE_V8_COVERAGE); a "
                   "function nested in one that never ran is not listed.</p>")
        out.append("<table><tr><th>file (least covered first)</th><th>percent</th><th>functions</th>"
                   "<th>reached</th><th>never reached</th></tr>")
        for f in sorted(code.get("files", []), key=lambda f: (f["percent"], f["path"]))[:20]:
            out.append(f"<tr><td>{e(f['path'])}</td><td>{f['percent']:.1f}</td><td>{f['functions']}</td>"
                       f"<td>{len(f['reached'])}</td><td>{e(', '.join(f['never_reached']))}</td></tr>")
        out.append("</table>")
        out += [f"<p>{e(note)}</p>" for note in code.get("notes", [])]
    elif code and code.get("measured"):
        out.append(f"<h2>Server code coverage: {code['percent']:.1f}%</h2>"
                   "<p>Lines and branches of the server's own code, measured with coverage.py "
                   "(<a href=\"coverage_html/index.html\">coverage_html/</a>, coverage.xml).</p>")
        out.append("<table><tr><th>file (least covered first)</th><th>percent</th><th>lines</th><th>covered</th></tr>")
        for f in sorted(code.get("files", []), key=lambda f: (f["percent"], f["path"]))[:20]:
            out.append(f"<tr><td>{e(f['path'])}</td><td>{f['percent']:.1f}</td><td>{f['lines']}</td>"
                       f"<td>{f['covered']}</td></tr>")
        out.append("</table>")
        if code.get("contexts"):
            out.append("<p>What each property contributed (a process is credited to the property during which "
                       "it started):</p><table><tr><th>property</th><th>lines run</th><th>lines no other ran</th></tr>")
            out += [f"<tr><td>{e(c['context'])}</td><td>{c['lines']}</td><td>{c['only']}</td></tr>"
                    for c in code["contexts"]]
            out.append("</table>")
    elif code:
        out.append(f"<p>{e(code.get('reason', 'code coverage: not measured'))}</p>")
    return out


def _finding_section(f: Finding, out_dir: Path | None) -> str:
    e = html_text
    ev = f.evidence
    hl = {v.get("event") for v in ev.violations if isinstance(v.get("event"), int)}
    parts = [
        f'<details id="{e(f.id)}"><summary><span class="badge {e(f.strength)}">{e(f.label)}</span> '
        f"{e(f.rule)}: {e(f.title)} <small>({e(', '.join(f.methods) or '-')}; "
        f"{e(', '.join(f.transports))}; x{f.count})</small></summary>",
        f"<p>Probe: <code>{e(probe_text(f))}</code>. Replay: <code>{e(replay_command(f, out_dir))}</code></p>",
    ]
    if not f.confirmed:
        parts.append("<p><b>unconfirmed</b>: fresh processes did not show it; a replay may pass.</p>")
    parts.append("<table><tr><th>method</th><th>transport</th><th>property</th><th>strength</th><th>title</th>"
                 "<th>count</th></tr>")
    for _, s in sorted(f.sightings.items()):
        parts.append(
            f"<tr><td>{e(s.method or '-')}</td><td>{e(s.transport)}</td><td>{e(s.property)}</td>"
            f'<td class="{e(s.strength)}">{e(s.strength if s.confirmed else "unconfirmed " + s.strength)}</td>'
            f"<td>{e(s.title)}</td><td>{s.count}</td></tr>"
        )
    parts.append("</table>")
    if len(f.probes) > 1:
        parts.append("<table><tr><th>probe</th><th>breaks</th><th>count</th><th>smallest reproduction</th></tr>")
        for name, p in sorted(f.probes.items()):
            path = (out_dir / p.repro).resolve() if out_dir is not None else p.repro
            parts.append(f"<tr><td>{e(name)}</td><td>{e(p.probe_rule or '-')}</td><td>{p.count}</td>"
                         f"<td><code>mcp-tempest replay {e(str(path))}</code></td></tr>")
        parts.append("</table>")
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
    parts.append(f"<p>Smallest transcript: property <code>{e(ev.property)}</code> over <code>{e(ev.transport)}</code>"
                 f", method <code>{e(ev.method or '-')}</code>.</p>")
    parts.append(transcript_html(ev.transcript, highlight=hl))
    if ev.reproduce_blob:
        parts.append(
            f"<p>Hypothesis {e(str(ev.hypothesis_version))} reproduce blob: <code>{e(ev.reproduce_blob)}</code></p>"
        )
    parts.append("</details>")
    return "\n".join(parts)


def transcript_html(transcript: dict[str, Any], *, highlight: set[int] | None = None, limit: int = 600) -> str:
    """Every event in order; a process start is a full-width divider, so boundaries stand out."""
    e = html_text
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
            hdrs = "\n".join(e(f"{k}: {v}") for k, v in ev["headers"].items())
            content.append(f"<details><summary>headers</summary><pre>{hdrs}</pre></details>")
        body = _event_body(ev, indent=True)
        if body:
            content.append(f"<pre>{e(body, multiline=True)}</pre>")
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
    fail_on: str = DEFAULT_FAIL_ON,
    catalogues: Sequence[Catalogue] = (),
    reach: dict[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Every report file, agreeing with each other and with the exit status: `extra` is
    findings.json's campaign sections (store.extra), whose `known` section says which groups a
    --known baseline knew (fuzz/report_status.py)."""
    known = known_groups(extra)
    reach = reach if reach is not None else (extra or {}).get("reach")
    atomic_write(
        out_dir / "junit.xml",
        junit_xml(runs, findings, target=target, seed=seed, seconds=seconds, fail_on=fail_on, out_dir=out_dir,
                  known=known),
    )
    notes = list(notes)
    atomic_write(out_dir / "results.sarif", sarif_bytes(findings, target=target, seed=seed, known=known))
    atomic_write(out_dir / "summary.md", summary_bytes(runs, findings, target=target, seed=seed, examples=examples,
                                                       seconds=seconds, interrupted=interrupted, notes=notes,
                                                       catalogues=catalogues, reach=reach, fail_on=fail_on,
                                                       known=known))
    atomic_write(
        out_dir / "report.html",
        report_html(
            runs, findings, target=target, seed=seed, examples=examples, seconds=seconds,
            interrupted=interrupted, notes=notes, fail_on=fail_on, out_dir=out_dir, catalogues=catalogues, reach=reach,
            extra=extra,
        ).encode("utf-8"),
    )


# --- a run that ended without a campaign ---


def write_error_reports(out_dir: Path, *, command: str, target: str, seed: int | None, status: int,
                        reason: str) -> None:
    """The files a CI job reads after a run that ended before its campaign (an unusable or refused
    target, a stop before the first case): a job that uploads junit.xml, results.sarif and
    summary.md always finds them, and the JUnit reporter shows why in one test case in error.
    findings.json is the FindingStore's own (with its `verdict`); `reason` is already escaped."""
    from mcp_tempest.fuzz.safe_text import markdown_cell, markdown_code
    from mcp_tempest.fuzz.verdict_line import VERDICTS, final_line

    verdict = VERDICTS.get(status, "ERROR")
    root = ET.Element("testsuites", name=f"mcp-tempest {command}", tests="1", failures="0", errors="1",
                      skipped="0", time="0.000")
    suite = ET.SubElement(root, "testsuite", name=f"mcp-tempest {command} {visible(target)}", tests="1",
                          failures="0", errors="1", skipped="0", time="0.000",
                          timestamp=_dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat())
    props = ET.SubElement(suite, "properties")
    for name, value in (("target", visible(target)), ("revision", MODERN_VERSION), ("seed", str(seed))):
        ET.SubElement(props, "property", name=name, value=value)
    case = ET.SubElement(suite, "testcase", classname=f"mcp_tempest.{command.replace('-', '_')}", name="target",
                         time="0.000")
    ET.SubElement(case, "error", type=verdict, message=f"{verdict}: {reason}"[:500]).text = reason
    ET.indent(root)
    atomic_write(out_dir / "junit.xml",
                 b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8") + b"\n")
    atomic_write(out_dir / "results.sarif", sarif_bytes([], target=target, seed=seed))
    head = final_line(f"mcp-tempest {command}", "0 findings", status, [markdown_cell(reason)], colour=False)
    summary = f"## {head}\n\nTarget {markdown_code(target)}, seed {seed}: no campaign ran.\n"
    atomic_write(out_dir / "summary.md", summary.encode("utf-8"))

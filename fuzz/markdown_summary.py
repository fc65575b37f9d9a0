"""`summary.md`: a short Markdown page for `$GITHUB_STEP_SUMMARY` (and any CI that shows Markdown).

Why: the job page is where people look first; junit.xml needs a plugin and report.html an
artifact download. This is one table of findings with the replay command for each, then one line
per property run, and it stays small (findings are capped) so a step summary never overflows.
Its heading is the run's verdict, the one its exit status carries (fuzz/report_status.py), and a
property's status comes from what was found in it: a property with a new finding is never "ok".
`cat tempest-report/summary.md >> "$GITHUB_STEP_SUMMARY"` publishes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from mcp_tempest.fuzz.differences import is_difference
from mcp_tempest.fuzz.findings import DEFAULT_FAIL_ON, Finding, PropertyRun, probe_text
from mcp_tempest.fuzz.report_status import ReportStatus, report_status
from mcp_tempest.fuzz.safe_text import markdown_cell, markdown_code
from mcp_tempest.fuzz.verdict_line import final_line, plural

if TYPE_CHECKING:
    from mcp_tempest.fuzz.catalogue import Catalogue

MAX_ROWS = 50
CELL_WIDTH = 500  # characters shown per cell; findings.json has the whole text


def _cell(text: object) -> str:
    """Titles, notes, tool names and answers quote the server (see fuzz/safe_text.py); each cell
    is bounded so a hostile name cannot push the page past a step summary's size limit."""
    return markdown_cell(text, CELL_WIDTH)


def markdown_summary(
    runs: Sequence[PropertyRun], findings: Sequence[Finding], *, target: str, seed: int | None,
    examples: int, seconds: float, interrupted: bool = False, notes: Iterable[str] = (),
    catalogues: Sequence[Catalogue] = (), reach: dict | None = None, fail_on: str = DEFAULT_FAIL_ON,
    known: Mapping[str, str] | None = None,
) -> str:
    judged = report_status(runs, findings, fail_on=fail_on, interrupted=interrupted, known=known)
    failing = sum(1 for f in findings if f.fails(fail_on))
    counts = plural(failing, "finding") + (f", {plural(len(findings) - failing, 'observation')}"
                                           if len(findings) > failing else "")
    lines = [
        f"## {final_line('mcp-tempest fuzz', counts, judged.status, judged.reasons, colour=False)}",  # a file
        "",
        f"Target {markdown_code(target)}, seed {seed}, {examples} examples in {seconds:.0f} s"
        + (" (interrupted)" if interrupted else "") + ".",
        "",
    ]
    lines += [f"> note: {_cell(n)}" for n in notes]
    protocol = [f for f in findings if not is_difference(f)]
    if protocol:
        lines += ["| verdict | strength | rule | finding | probes | method | transport | seen | reproduce |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for f in protocol[:MAX_ROWS]:
            lines.append(f"| {_cell(_finding_verdict(f, judged, fail_on))} | {f.label} | {f.rule} | {_cell(f.title)}"
                         f" | {_cell(probe_text(f))} | {_cell(f.method or '-')}"
                         f" | {f.transport} | {f.count} | `mcp-tempest replay {_cell(f.repro)}` |")
        if len(protocol) > MAX_ROWS:
            lines.append(f"\n{len(protocol) - MAX_ROWS} more in findings.json and report.html.")
        lines.append("")
    differences = [f for f in findings if is_difference(f)]
    if differences:
        lines += ["### Differences between targets", "", "| difference | method | seen | reproduce |",
                  "| --- | --- | --- | --- |"]
        lines += [f"| {_cell(f.title)} | {_cell(f.method or '-')} | {f.count} | `mcp-tempest replay {_cell(f.repro)}` |"
                  for f in differences[:MAX_ROWS]]
        lines.append("")
    lines += ["| property | transport | examples | seconds | status |", "| --- | --- | --- | --- | --- |"]
    for r in runs:
        status = run_status(r, findings, judged, fail_on)
        lines.append(f"| {r.property} | {r.transport} | {r.examples} | {r.seconds:.1f} | {_cell(status)} |")
    lines += reach_markdown(reach)
    if catalogues:
        from mcp_tempest.fuzz.catalogue import report_markdown

        lines += ["", *report_markdown(list(catalogues))]
    return "\n".join(lines).rstrip("\n") + "\n"


def _finding_verdict(f: Finding, judged: ReportStatus, fail_on: str) -> str:
    """new, known (the baseline's reason) or observation: what the finding did to the exit status."""
    if not f.fails(fail_on):
        return "observation"
    reason = judged.reason(f)
    return "new" if reason is None else f"known: {reason}"


def run_status(r: PropertyRun, findings: Sequence[Finding], judged: ReportStatus, fail_on: str) -> str:
    """A property run's status from what was found in it: its new findings first (then it is not
    ok, whatever its note), then the baseline's known ones, then why it stopped or was skipped."""
    here = [f for f in findings if f.seen_in(r.property, r.transport)]
    new_ids = {f.id for f in judged.new}
    new = [f.id for f in here if f.id in new_ids]
    old = [f.id for f in here if f.fails(fail_on) and judged.reason(f) is not None]
    observed = sum(1 for f in here if not f.fails(fail_on))
    parts = [f"harness error: {r.error}"] if r.error else []
    if new:
        parts.append(f"FAIL: {plural(len(new), 'new finding')} ({', '.join(new)})")
    if old:
        parts.append(f"known: {', '.join(old)}")
    if not parts:
        parts.append(r.note or ("skipped" if r.skipped else "ok"))
    elif r.note:
        parts.append(r.note)
    if observed:
        parts.append(plural(observed, "observation"))
    return "; ".join(parts)


def reach_markdown(reach: dict | None) -> list[str]:
    """What the campaign reached: each tool's answers (least reached first) and the server's code."""
    if not reach:
        return []
    lines: list[str] = []
    tools = sorted(reach.get("tools", []), key=lambda r: (r["ok"] > 0, r["ok"], r["name"]))
    if tools:
        never = reach.get("never_ok", [])
        lines += ["", f"### Reach: {len(tools) - len(never)} of {len(tools)} tools returned a successful result", "",
                  "| tool | calls | ok | isError | protocol error | no answer | most common answer |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in tools[:MAX_ROWS]:
            answer = r.get("never_called") or (r["answers"][0]["text"] if r.get("answers") and not r["ok"] else "")
            lines.append(f"| {_cell(r['name'])} | {r['calls']} | {r['ok']} | {r['is_error']} | {r['protocol_error']}"
                         f" | {r['unanswered']} | {_cell(answer)} |")
    code = reach.get("code")
    if code:
        if code.get("measured") and code.get("kind") == "functions":
            lines += ["", f"Server code coverage: {code['percent']:.1f}% of functions (V8, Node.js).", "",
                      "| file | functions | reached | never reached |", "| --- | --- | --- | --- |"]
            for f in sorted(code.get("files", []), key=lambda f: (f["percent"], f["path"]))[:MAX_ROWS]:
                never = ", ".join(f["never_reached"][:20]) + (" ..." if len(f["never_reached"]) > 20 else "")
                lines.append(f"| {_cell(f['path'])} | {f['functions']} | {len(f['reached'])} | {_cell(never or '-')} |")
            lines += [f"{_cell(note)}." for note in code.get("notes", [])]
        elif code.get("measured"):
            lines += ["", f"Server code coverage: {code['percent']:.1f}% (lines and branches, coverage.py)."]
            if code.get("contexts"):
                lines += ["", "| property | lines run | lines no other ran |", "| --- | --- | --- |"]
                lines += [f"| {_cell(c['context'])} | {c['lines']} | {c['only']} |" for c in code["contexts"]]
        else:
            lines += ["", f"{_cell(code.get('reason', 'code coverage: not measured'))}."]
    return lines


def summary_bytes(runs: Sequence[PropertyRun], findings: Sequence[Finding], **kwargs: object) -> bytes:
    return markdown_summary(runs, findings, **kwargs).encode("utf-8")  # type: ignore[arg-type]

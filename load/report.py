"""report.html: the load run as one self-contained page (inline SVG, no script, no CDN).

Why our own page beside Locust's: Locust's shows its rounded percentiles and knows nothing of
MRTR operations, gates, baselines or server memory. This one is drawn from summary.json alone
(exact percentiles per request name, leg and whole operation; the per-second timeline; the
latency distribution; memory series), and every series is capped in points, so the page of a
10-minute run stays a few hundred kilobytes.
"""

from __future__ import annotations

import math
from typing import Any

from mcp_tempest.fuzz.safe_text import html_text
from mcp_tempest.load.charts import STYLE, Chart, Series, svg
from mcp_tempest.load.compare import html_section as compare_section
from mcp_tempest.load.recorder import OPERATION
from mcp_tempest.load.summary import describe_model, describe_never_answered

_COLS = ("count", "failures", "is_error", "rps", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms",
         "mean_ms")
_HEAD = ("name", "count", "fail", "isError", "rps", "p50", "p90", "p95", "p99", "p99.9", "max", "mean",
         "1st event p99")


def _e(text: Any) -> str:
    """Names, isError texts and violation examples quote the server: see fuzz/safe_text.py."""
    return html_text(text)


def _cell(key: str, value: Any) -> str:
    if isinstance(value, float) and key.endswith("_ms"):
        return f"{value:.3f}" if value < 100 else f"{value:.1f}"
    if isinstance(value, float):
        return f"{value:.1f}"
    return _e(value)


def _table(rows: list[tuple[str, dict[str, Any]]]) -> str:
    head = "".join(f"<th>{h}</th>" for h in _HEAD)
    body = []
    for name, e in rows:
        first = e.get("first_event")
        # no sample, no latency: '-', never a latency of 0
        cells = "".join(f"<td>{'-' if k.endswith('_ms') and not e.get('count') else _cell(k, e.get(k, 0))}</td>"
                        for k in _COLS)
        bad = ' class="bad"' if e.get("failures") else ""
        body.append(f"<tr><td{bad}>{_e(name)}</td>{cells}<td>{_cell('p99_ms', first['p99_ms']) if first else '-'}"
                    "</td></tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _nines(p: float) -> float:
    """x position of a percentile on the percentile plot: 90 -> 1, 99 -> 2, 99.9 -> 3 ..."""
    return -math.log10(max(1e-5, 1.0 - p / 100.0))


def charts(summary: dict[str, Any]) -> list[Chart]:
    timeline = summary.get("timeline") or []
    out = [
        Chart("latency over time (every request, per second)", "seconds into the run", "ms", log_y=True, series=[
            Series("p50", [(t["t"], t["p50_ms"]) for t in timeline if t.get("p50_ms")]),
            Series("p99", [(t["t"], t["p99_ms"]) for t in timeline if t.get("p99_ms")]),
            Series("max", [(t["t"], t["max_ms"]) for t in timeline if t.get("max_ms")]),
        ]),
        Chart("throughput over time", "seconds into the run", "per second", series=[
            Series("requests/s", [(t["t"], float(t["requests"])) for t in timeline]),
            Series("failures/s", [(t["t"], float(t["failures"])) for t in timeline]),
        ]),
    ]
    dist = [(p, ms) for p, ms in summary.get("distribution") or [] if p < 100]
    ticks = [(_nines(p), label) for p, label in ((0, "0"), (90, "90"), (99, "99"), (99.9, "99.9"), (99.99, "99.99"))]
    out.append(Chart("latency distribution (percentile plot, every request)", "percentile", "ms", log_y=True,
                     x_ticks=ticks, series=[Series("latency", [(_nines(p), ms) for p, ms in dist], dots=True)]))
    memory = summary.get("memory") or {}
    out.append(Chart("server memory over time (RSS)", "seconds into the run", "MB", series=[
        Series(f"instance #{inst['instance']}", [(t, mb) for t, mb in inst.get("series") or []])
        for inst in memory.get("instances") or []
    ]))
    return out


def _verdicts(summary: dict[str, Any]) -> str:
    parts = []
    gates = summary.get("gates") or []
    if gates:
        rows = "".join(
            f"<tr><td>{_e(g['gate'])}</td><td>{'-' if g['value'] is None else _e(round(g['value'], 3))}</td>"
            f"<td class=\"{'bad' if g['crossed'] else 'ok'}\">{'CROSSED' if g['crossed'] else 'ok'}</td></tr>"
            for g in gates)
        parts.append(f"<h2>Gates</h2><table><tr><th>gate</th><th>value</th><th>verdict</th></tr>{rows}</table>")
    baseline = summary.get("baseline")
    if baseline:
        rows = "".join(
            f"<tr><td>{_e(c['name'])}</td><td>{_e(c['metric'])}</td><td>{c['before']:g}</td><td>{c['after']:g}</td>"
            f"<td class=\"{'bad' if c['regression'] else 'ok'}\">{'REGRESSION' if c['regression'] else 'ok'}"
            f"{_e(' (not gated: ' + c['not_gated'] + ')') if c.get('not_gated') else ''}</td></tr>"
            for c in baseline.get("changes") or [])
        parts.append(f"<h2>Baseline {_e(baseline.get('file', ''))} (margin {baseline.get('margin', 0) * 100:g}%)</h2>"
                     + (f"<p>{_e(baseline['tolerates'])}</p>" if baseline.get("tolerates") else "")
                     + (f"<p class=\"bad\">{_e(baseline['hint'])}</p>" if baseline.get("hint") else "")
                     + f"<table><tr><th>name</th><th>metric</th><th>before</th><th>after</th><th>verdict</th></tr>"
                     f"{rows}</table>")
    return "".join(parts)


def render(summary: dict[str, Any], baseline: dict[str, Any] | None = None) -> str:
    """The page; with `--compare-target`, `summary` is the candidate's rounds merged and
    `baseline` the baseline's, and the comparison comes first."""
    ops = summary.get("operations") or {}
    requests = [(n, e) for n, e in ops.items() if e.get("kind") != OPERATION]
    operations = [(n, e) for n, e in ops.items() if e.get("kind") == OPERATION]
    overall = dict(summary.get("overall") or {})
    # the row's count and rps are those of the samples its percentiles are read from (setup is not)
    overall.update(rps=round(overall.get("count", 0) / max(float(summary.get("duration_s") or 0), 1e-9), 1))
    verdict = summary.get("verdict") or {}
    reasons = verdict.get("reasons") or []
    status = ('<span class="ok">PASS</span>' if not reasons
              else '<span class="bad">FAIL</span>: ' + _e("; ".join(reasons)))
    mrtr = summary.get("mrtr") or {}
    kinds = summary.get("failures_by_kind") or {}
    failures = ("<table><tr><th>kind</th><th>count</th></tr>"
                + "".join(f"<tr><td>{_e(k)}</td><td>{v}</td></tr>" for k, v in kinds.items()) + "</table>"
                if kinds else "<p>none</p>")
    never = describe_never_answered(summary)
    if never:
        failures += (f"<p class=\"bad\">{_e(never)}: in flight when the run stopped and not answered within "
                     "--timeout, each counted as a timeout of its name (timed to when the run gave up on it)</p>")
    answers = summary.get("answers") or []
    is_error = ("<p>Answers, not failures: the tool ran and said it could not (a correct server refuses an "
                "unknown handle this way). Most frequent:</p><table><tr><th>name</th><th>text</th><th>count</th></tr>"
                + "".join(f"<tr><td>{_e(a['name'])}</td><td>{_e(a['text'])}</td><td>{a['count']}</td></tr>"
                          for a in answers) + "</table>"
                if summary.get("is_error") else "<p>none</p>")
    refused = summary.get("refused_handles") or {}
    if refused:
        is_error += (f"<p class=\"bad\">{sum(refused.values())} of them refused a handle the server had returned to the "
                     f"same user ({_e(', '.join(f'{k} x{n}' for k, n in refused.items()))}): deleted since, or "
                     "instances that do not share state (SL-5)?</p>")
    rules = summary.get("violations_by_rule") or {}
    violations = "".join(f"<li><b>{_e(r)}</b> x{v['count']}: {_e(v.get('example', ''))}</li>" for r, v in rules.items())
    memory = summary.get("memory") or {}
    mem_text = ("not sampled (the harness did not start the server)" if not memory.get("sampled") else
                f"growth after warm-up {memory.get('growth_mb')} MB (threshold {memory.get('threshold_mb')} MB)")
    return "".join([
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>mcp-tempest load report</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>Load run against {_e(summary.get('target', ''))}</h1>",
        compare_section(summary["comparison"], baseline, summary) if summary.get("comparison") else "",
        "<h2>The candidate (all its rounds)</h2>" if summary.get("comparison") else "",
        f"<p>{status}</p><p>{_e(describe_model(summary.get('model') or {}))}</p>",
        f"<p>{summary.get('requests', 0)} requests in {summary.get('duration_s', 0):g} s "
        f"({summary.get('rps', 0)} rps; {summary.get('setup_requests', 0)} of them setup, shown by name and "
        "not in 'all requests'), "
        f"{summary.get('failures', 0)} failures, {summary.get('is_error', 0)} isError results (not failures), "
        f"{summary.get('violations', 0)} oracle violations; MRTR: {mrtr.get('operations', 0)} operations completed, "
        f"{mrtr.get('failed', 0)} failed, {mrtr.get('legs', 0)} legs, up to {mrtr.get('max_in_flight', 0)} in flight</p>",
        *(svg(c) for c in charts(summary)[:3]),
        "<h2>Requests and MRTR legs (exact percentiles, ms)</h2>", _table(requests + [("all requests", overall)]),
        "<h2>MRTR operations as units (first leg to complete result, ms)</h2>",
        _table(operations) if operations else "<p>no MRTR operation</p>",
        "<h2>Failures by kind</h2>", failures,
        f"<h2>isError results ({summary.get('is_error', 0)})</h2>", is_error,
        f"<h2>Oracle violations</h2>{'<ul>' + violations + '</ul>' if violations else '<p>none</p>'}",
        # a target the harness did not start has no memory series: no empty chart for it
        f"<h2>Server memory</h2><p>{_e(mem_text)}</p>", svg(charts(summary)[3]) if memory.get("sampled") else "",
        _verdicts(summary),
        "</body></html>\n",
    ])

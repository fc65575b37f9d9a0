"""summary.json and the terminal table: the run's exact numbers in the shape CLI.md promises.

The promised keys (`target`, `duration_s`, `requests`, `failures`, `rps`, `operations` with
count/failures/p50..max per name, `violations`) are always present; everything else is added
beside them, never instead of them, so scripts written against the contract keep working.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

import orjson

from mcp_tempest.fuzz.reach import TOP_TEXTS, shorten
from mcp_tempest.fuzz.safe_text import NAME_WIDTH, visible
from mcp_tempest.fuzz.verdict_line import plural
from mcp_tempest.load.histogram import PERCENTILES, ExactHistogram
from mcp_tempest.load.recorder import (
    BACKLOG,
    NEVER_ANSWERED,
    OPERATION,
    OVERALL_KINDS,
    REFUSED_HANDLE,
    REQUEST,
    SETUP,
    Recorder,
)

REVISION = "2026-07-28"
ANSWERS_KEPT = 8  # the run's most frequent isError texts kept in summary.json (per name: TOP_TEXTS)


def _hist_entry(hist: ExactHistogram) -> dict[str, float]:
    stats = hist.summary_ms()
    return {name: stats[name] for name, _ in PERCENTILES} | {"max_ms": stats["max_ms"], "mean_ms": stats["mean_ms"]}


# Points of the latency distribution (percentile plot): dense near the tail, where stalls show.
DISTRIBUTION_POINTS = (0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 75.0, 80.0, 85.0, 90.0, 92.5, 95.0,
                       96.0, 97.0, 98.0, 99.0, 99.5, 99.9, 99.95, 99.99, 100.0)


def distribution(hist: ExactHistogram) -> list[list[float]]:
    """[percentile, ms] pairs of the exact histogram (nearest rank), for the percentile plot."""
    if not hist.count:
        return []
    values = hist.percentiles_us(max(p, 1e-9) for p in DISTRIBUTION_POINTS)
    return [[p, v / 1000.0] for p, v in zip(DISTRIBUTION_POINTS, values, strict=True)]


def timeline(rec: Recorder) -> list[dict[str, Any]]:
    """One entry per second of the run (requests completed in it, failures, p50/p99/max)."""
    if not rec.timeline:
        return []
    first, last = min(rec.timeline), max(rec.timeline)
    out = []
    for sec in range(first, last + 1):
        second = rec.timeline.get(sec)
        if second is None:
            out.append({"t": sec - first, "requests": 0, "failures": 0, "p50_ms": None, "p99_ms": None,
                        "max_ms": None})
            continue
        p50, p99 = second.latency.percentiles_us((50.0, 99.0))
        out.append({"t": sec - first, "requests": second.latency.count, "failures": second.failures,
                    "p50_ms": p50 / 1000.0, "p99_ms": p99 / 1000.0, "max_ms": second.latency.max_us / 1000.0})
    return out


def build_summary(
    rec: Recorder,
    *,
    target: str,
    duration_s: float,
    check_every: int,
    oracle: str,
    model: dict[str, Any] | None = None,
) -> dict[str, Any]:
    duration = max(duration_s, 1e-9)
    operations: dict[str, Any] = {}
    for name in sorted(rec.names):
        stats = rec.names[name]
        entry: dict[str, Any] = {
            "kind": stats.kind,
            "count": stats.count,
            "failures": stats.failure_count,
            **_hist_entry(stats.latency),
            "rps": round(stats.count / duration, 2),
        }
        if stats.failures:
            entry["failures_by_kind"] = dict(sorted(stats.failures.items()))
        entry["is_error"] = stats.is_error
        if stats.answers:
            entry["answers"] = [{"text": t, "count": n} for t, n in stats.answers.most_common(TOP_TEXTS)]
        if stats.first_event.count:
            entry["first_event"] = {"count": stats.first_event.count, **_hist_entry(stats.first_event)}
        operations[name] = entry
    requests = rec.requests
    counters = rec.counters
    overall = rec.merged_requests()
    overall_failures = sum(s.failure_count for s in rec.names.values() if s.kind in OVERALL_KINDS)
    setup = sum(s.count for s in rec.names.values() if s.kind == SETUP)
    is_error = rec.is_error_total
    # the most frequent isError texts of the run, each with the name it was answered to
    answers = sorted(((n, name, text) for name, s in rec.names.items() if s.kind in (REQUEST, SETUP)
                      for text, n in s.answers.items()), key=lambda a: (-a[0], a[1], a[2]))[:ANSWERS_KEPT]
    return {
        "target": target,
        "revision": REVISION,
        "duration_s": round(duration_s, 3),
        "started_at": rec.started,
        "stopped_at": rec.stopped,
        "requests": requests,
        "failures": rec.failure_total,
        "rps": round(requests / duration, 1),
        "operations": operations,
        "violations": sum(rec.violations.values()),
        # isError results: answers of a tool that ran and said it could not, never failures
        "is_error": is_error,
        "answers": [{"name": name, "text": text, "count": n} for n, name, text in answers],
        # of those, answers refusing a handle the server itself had returned (argument -> count)
        "refused_handles": {k[len(REFUSED_HANDLE):]: n for k, n in sorted(counters.items())
                            if k.startswith(REFUSED_HANDLE)},
        "model": model or {"kind": "closed"},
        "overall": {"count": overall.count, "failures": overall_failures,
                    "is_error": sum(s.is_error for s in rec.names.values() if s.kind in OVERALL_KINDS),
                    **_hist_entry(overall)},
        "setup_requests": setup,
        "distribution": distribution(overall),
        "timeline": timeline(rec),
        # the epoch second the timeline's t=0 stands for (memory growth per request uses it)
        "timeline_origin": min(rec.timeline) if rec.timeline else None,
        "failures_by_kind": dict(sorted(rec.failures.items())),
        # requests in flight at the stop that got no answer within their --timeout: timeouts of
        # their names (in the failures above), and when the last answer of the run came
        "never_answered": counters.get(NEVER_ANSWERED, 0),
        "last_answer_s": (round(max(0.0, rec.last_answer - rec.started), 1)
                          if rec.last_answer is not None and rec.started is not None else None),
        "violations_by_rule": {
            rule: {"count": count, "example": rec.violation_examples.get(rule, "")}
            for rule, count in sorted(rec.violations.items())
        },
        "mrtr": {
            "operations": counters.get("mrtr_completed", 0),
            "started": counters.get("mrtr_started", 0),
            "failed": counters.get("mrtr_failed", 0),
            # Open when the run stopped: a stopped user's operations are simply left (MRTR-17).
            "abandoned": max(
                0,
                counters.get("mrtr_started", 0) - counters.get("mrtr_completed", 0) - counters.get("mrtr_failed", 0),
            ),
            "legs": counters.get("mrtr_legs", 0),
            "retries_on_another_instance": counters.get("mrtr_cross_instance_legs", 0),
            "max_in_flight": rec.max_in_flight_total(),
        },
        "responses": {
            "json": counters.get("json_responses", 0),
            "sse": counters.get("sse_responses", 0),
            "tool_errors": is_error,
        },
        "checks": {"every": check_every, "checked": counters.get("checked", 0), "oracle": oracle},
        "mrtr_tools": sorted(rec.mrtr_tools),
        "excluded_tools": dict(sorted(rec.excluded_tools.items())),
        "list_cuts": dict(sorted(rec.list_cuts.items())),
    }


def consistency(summary: dict[str, Any]) -> list[str]:
    """Whether the run's figures describe one set of samples; each problem is one line.

    Recomputed from the per-name rows as written: the requests total is every request and setup
    sample, the overall figures (percentiles, timeline, gates, objectives) every request and
    backlog sample, so overall count = requests - setup + backlog, and the timeline holds
    exactly the overall samples. A mismatch is a harness bug, and it fails the run: a gate read
    from a set other than the one counted would be a verdict nobody can trust.
    """
    by_kind: dict[str, int] = {}
    for entry in (summary.get("operations") or {}).values():
        kind = entry.get("kind", REQUEST)
        by_kind[kind] = by_kind.get(kind, 0) + int(entry.get("count", 0))
    request, setup, backlog = by_kind.get(REQUEST, 0), by_kind.get(SETUP, 0), by_kind.get(BACKLOG, 0)
    overall = int((summary.get("overall") or {}).get("count", 0))
    problems = []
    if summary.get("requests") != request + setup:
        problems.append(f"requests {summary.get('requests')} != {request} request + {setup} setup samples by name")
    if summary.get("setup_requests", setup) != setup:
        problems.append(f"setup_requests {summary.get('setup_requests')} != {setup} setup samples by name")
    if overall != request + backlog:
        problems.append(f"overall count {overall} != {request} request + {backlog} backlog samples by name")
    seconds = summary.get("timeline")
    if seconds is not None and sum(int(s.get("requests", 0)) for s in seconds) != overall:
        problems.append(f"timeline holds {sum(int(s.get('requests', 0)) for s in seconds)} samples, "
                        f"overall count {overall}")
    return problems


def write_json(path: Path, data: Any) -> None:
    """Write atomically, so a reader never sees half a summary."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n")
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    return orjson.loads(path.read_bytes())


def format_ms(value: float) -> str:
    """A latency in ms, at most 7 characters up to 1000 s, so the tables' columns stay narrow."""
    return f"{value:.3f}" if value < 100 else f"{value:.1f}" if value < 10_000 else f"{value:.0f}"


# Every table `load` prints fits a terminal this wide (summary.json and report.html hold every
# figure, p90 and p95 included, that the terminal table leaves out).
TABLE_WIDTH = 100
_LATENCIES = ("p50_ms", "p99_ms", "p999_ms", "max_ms")


def wrap_lines(text: str, indent: str = "", hanging: str = "  ") -> list[str]:
    """A line of prose beside a table, within TABLE_WIDTH (later lines indented by `hanging`);
    never broken inside a word or at an option's hyphens."""
    return textwrap.wrap(text, TABLE_WIDTH, initial_indent=indent, subsequent_indent=hanging,
                         break_long_words=False, break_on_hyphens=False) or [text]


def fit_table(head: list[str], rows: list[tuple[str, list[str] | None]], width: int = TABLE_WIDTH, *,
              indent: str = "", align: str = "") -> list[str]:
    """A name column and columns of cells (aligned as `align` says, one `<` or `>` a column;
    right by default), within `width` characters with `indent` before each line: the cells'
    columns as narrow as their widest cell, the name column what is left; a longer name (a leg
    of `search_repositories_by_topic`) gets a line of its own above its cells. A row with no
    cells is a blank line, one with None a rule."""
    widths = [max([len(h), *(len(cells[i]) for _, cells in rows if cells)]) for i, h in enumerate(head[1:])]
    numbers = sum(w + 1 for w in widths)
    name_width = max(0, min(max([len(head[0]), *(len(n) for n, _ in rows)]), width - len(indent) - numbers))
    aligns = [align[i] if i < len(align) else ">" for i in range(len(widths))]

    def line(name: str, cells: list[str]) -> str:
        return (f"{indent}{name:<{name_width}}"
                + "".join(f" {c:{a}{w}}" for c, a, w in zip(cells, aligns, widths, strict=True))).rstrip()

    out = [line(head[0], head[1:]), indent + "-" * (name_width + numbers)]
    for name, cells in rows:
        if cells is None:
            out.append(out[1])
        elif not cells:
            out.append("")
        elif len(name) > name_width:
            out += [indent + name, line("", cells)]
        else:
            out.append(line(name, cells))
    return out


def format_table(summary: dict[str, Any]) -> str:
    """The end-of-run table: one row per name, exact percentiles in milliseconds; a row with no
    samples shows `-`, not a latency of 0."""
    ops = summary.get("operations") or {}
    overall = dict(summary.get("overall") or {})
    duration = max(float(summary.get("duration_s") or 0.0), 1e-9)
    # the row's count, failures and rps are those of the samples its percentiles are read from
    overall.update(rps=round(overall.get("count", 0) / duration, 1))
    streamed = any(e.get("first_event") for e in ops.values())
    head = ["name (latency in ms)", "count", "fail", "isError", "rps", "p50", "p99", "p99.9", "max",
            *(["1st-ev p99"] if streamed else [])]

    def row(name: str, e: dict[str, Any]) -> tuple[str, list[str]]:
        answered = bool(e.get("count"))
        first = e.get("first_event")
        cells = [str(e.get("count", 0)), str(e.get("failures", 0)), str(e.get("is_error", 0)),
                 f"{e.get('rps', 0):.1f}", *(format_ms(e.get(k, 0.0)) if answered else "-" for k in _LATENCIES)]
        if streamed:
            cells.append(format_ms(first["p99_ms"]) if first else "-")
        return visible(name, NAME_WIDTH), cells  # names carry the server's tool names

    requests = [row(n, e) for n, e in ops.items() if e.get("kind") != OPERATION]
    operations = [row(n, e) for n, e in ops.items() if e.get("kind") == OPERATION]
    lines = fit_table(head, [*requests, *([("", [])] if operations else []), *operations, ("", None),
                             row("all requests", overall)])
    setup = summary.get("setup_requests") or 0
    lines.append(f"{summary.get('requests', 0)} requests, {summary.get('failures', 0)} failures in all"
                 + (f" ({setup} setup requests, shown by name, not in 'all requests')" if setup else ""))
    kinds = summary.get("failures_by_kind") or {}
    if kinds:
        lines.append("failures: " + ", ".join(f"{visible(k)} x{v}" for k, v in kinds.items()))
    never = describe_never_answered(summary)
    if never:
        lines.append(f"{never} (timeouts of their names, timed to when the run gave up on them)")
    lines.extend(describe_answers(summary))
    rules = summary.get("violations_by_rule") or {}
    if rules:
        lines.append("violations: " + ", ".join(f"{r} x{v['count']}" for r, v in rules.items()))
        for rule, v in rules.items():
            lines.append(f"  {rule}: {visible(v.get('example', ''))}")
    mrtr = summary.get("mrtr") or {}
    if mrtr.get("started"):
        lines.append(
            f"MRTR: {mrtr.get('operations', 0)} completed, {mrtr.get('failed', 0)} failed, "
            f"{mrtr.get('abandoned', 0)} abandoned at stop, {mrtr.get('legs', 0)} legs, "
            f"up to {mrtr.get('max_in_flight', 0)} in flight"
        )
    lines.append(describe_model(summary.get("model") or {}))
    excluded = summary.get("excluded_tools") or {}
    for tool, why in excluded.items():
        lines.append(f"left out of the mix: {visible(tool, NAME_WIDTH)} ({visible(why)})")
    for why in (summary.get("list_cuts") or {}).values():  # the mix drew on what was read
        lines.append(f"discovery: {visible(why)}")
    return "\n".join(lines)


def describe_answers(summary: dict[str, Any]) -> list[str]:
    """The isError results in words: how many, and what the tools answered most, so a run whose
    every list_events was refused says why without being a failed run."""
    total = summary.get("is_error") or 0
    if not total:
        return []
    out = [f"isError results: {total} (answers, not failures: the tool ran and said it could not)"]
    for a in summary.get("answers") or []:
        out.append(f"  {visible(a['name'], NAME_WIDTH)} x{a['count']}: {shorten(a['text'], 100)!r}")
    refused = summary.get("refused_handles") or {}
    if refused:
        which = ", ".join(f"{visible(k, NAME_WIDTH)} x{n}" for k, n in refused.items())
        out.append(f"  {sum(refused.values())} of them refused a handle this server had returned to the same user "
                   f"({which}): deleted since, or instances that do not share state (SL-5)? "
                   "--fail-on 'refused_handles>0' fails the run on it")
    return out


def describe_model(model: dict[str, Any]) -> str:
    """Which load model ran, in words: the closed one hides stalls, the open one does not."""
    if model.get("kind") == "open":
        text = (f"model: open, {model.get('rate', 0):g} arrivals/s, up to {model.get('max_in_flight')} in flight; "
                "latency timed from each arrival's intended start")
        if "arrivals_sent" in model:
            text += f"; {model['arrivals_sent']} of {model.get('arrivals_due', 0)} arrivals due were sent"
        if model.get("in_flight_at_stop"):
            text += (f" ({model['in_flight_at_stop']} still in flight at stop: not timed if answered, "
                     "a timeout if never answered)")
        if model.get("backlog_timeouts"):
            text += f"; {model['backlog_timeouts']} arrivals waited past --timeout and were not sent"
        if model.get("not_started_at_stop"):
            text += f"; {model['not_started_at_stop']} due but not started at stop"
        return text
    users = model.get("users")
    return (f"model: closed, {users} users" if users else "model: closed") + \
        " (each waits for its answer before the next request; a stall hides in the percentiles)"


def summary_counts(summary: dict[str, Any]) -> str:
    """The counts of the last line (fuzz/verdict_line.py adds the verdict and why)."""
    mrtr = summary.get("mrtr") or {}
    return (f"{plural(summary.get('requests', 0), 'request')}, {plural(summary.get('failures', 0), 'failure')}, "
            f"{summary.get('rps', 0.0):.1f} rps, {plural(mrtr.get('operations', 0), 'MRTR operation')}, "
            f"{plural(summary.get('violations', 0), 'violation')}")


# A last answer this long before the stop, with requests left waiting: the server stopped answering.
STOPPED_GAP_S = 1.0


def describe_never_answered(summary: dict[str, Any]) -> str | None:
    """Why a run whose requests were left unanswered at the stop failed, or None."""
    n = int(summary.get("never_answered") or 0)
    if not n:
        return None
    last = summary.get("last_answer_s")
    if last is None:
        return f"{plural(n, 'request')} never answered; the server answered none of the run's requests"
    if float(last) < float(summary.get("duration_s") or 0.0) - STOPPED_GAP_S:
        return f"{plural(n, 'request')} never answered; the server stopped answering at t={float(last):.1f}s"
    return f"{plural(n, 'request')} in flight at the stop never answered (waited for up to their --timeout)"

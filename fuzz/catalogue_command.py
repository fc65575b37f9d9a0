"""`mcp-tempest catalogue`: the token cost of a server's catalogue, its drift, its untrusted text.

Exit status: 0 within budget and no failing finding; 1 over `--max-tokens`/`--max-tool-tokens`,
or under such a gate a catalogue that could not be read whole (a list cut short or unreadable: its
count is a lower bound, so the gate cannot pass), or a failing finding (catalogue drift is MUST; untrusted-text flags are HEURISTIC observations
and fail only under `--fail-on heuristic`), or under `--compare OLD` a change of a kind `--fail-on`
names (breaking by default), growth past `--max-token-growth`, or a side read incomplete
(fuzz/catalogue_compare.py); 2 bad input or an unusable target (OLD too), one line.

The last stdout line (past the options) is fuzz/verdict_line.py's `final_line`: the measurement
and the findings, then the status in words and why, e.g. `catalogue: 1619 tokens every turn (...),
0 findings, 0 observations: FAIL (1,619 tokens every turn over --max-tokens 500)`; under `--json`
stdout is one JSON object whose `verdict` holds the same words (and `error`, when nothing was read).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any, NoReturn

import orjson

from mcp_tempest.fuzz import catalogue_compare
from mcp_tempest.fuzz.safe_text import visible
from mcp_tempest.fuzz.verdict_line import (
    REASON_WIDTH,
    final_line,
    findings_reason,
    plural,
    unusable,
    verdict_json,
)
from mcp_tempest.targets import extra_headers, validate
from mcp_tempest.targets.list_reader import add_budget_options, budget_from_args
from mcp_tempest.targets.probe import DEFAULT_PROBE_TIMEOUT, ProbeFailure
from mcp_tempest.targets.target_spec import TargetError, parse_target

TITLE_WIDTH = 300  # a finding's title names the item: bounded on the terminal, whole in findings.json


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"catalogue: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    from mcp_tempest.fuzz.findings import DEFAULT_FAIL_ON, FAIL_ON_CHOICES

    p = _Parser(prog="mcp-tempest catalogue",
                description="What a server's catalogue costs the model before it is used (o200k_base tokens), "
                            "whether it drifts between reads, and text in it that is not a description.")
    p.add_argument("--target", help="stdio:<cmd>, http://127.0.0.1:PORT/PATH or http+spawn:<cmd with {port}> "
                   "(default: the built-in reference server)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--max-tokens", type=int, metavar="N", help="exit 1 when what the model pays every turn (the tool "
                   "definitions as one list + the instructions) is more than N tokens")
    p.add_argument("--max-tool-tokens", type=int, metavar="N", help="exit 1 when one tool definition costs more than N")
    p.add_argument("--no-drift", action="store_true", help="read the catalogue once (no drift check)")
    p.add_argument("--fail-on", action=catalogue_compare.FailOnAction, default=DEFAULT_FAIL_ON, metavar="LIST",
                   help=f"findings at or above this strength ({'|'.join(FAIL_ON_CHOICES)}) exit 1 (default should: "
                        "drift fails, untrusted-text flags are observations); with --compare also the kinds of "
                        "change that do (default breaking), e.g. breaking,description")
    p.add_argument("--out", metavar="DIR", help="where findings.json, repro/ and catalogue.json go "
                   "(default: none, nothing is written)")
    p.add_argument("--timeout", type=float, default=DEFAULT_PROBE_TIMEOUT, help="seconds to wait for each answer")
    add_budget_options(p)  # --max-pages, --max-list-mib, --list-seconds: each pass over the lists is bounded
    p.add_argument("--allow-remote", action="store_true", help="allow a non-loopback host")
    extra_headers.add_option(p)
    catalogue_compare.add_options(p)  # --compare OLD, --max-token-growth N
    return p


def catalogue_main(argv: list[str]) -> int:
    from mcp_tempest.fuzz.catalogue import Catalogue, catalogue_evidence, over_budget, read
    from mcp_tempest.fuzz.findings import FindingStore, atomic_write
    from mcp_tempest.fuzz.terminal_style import RED, colour_on, paint, severity

    args = build_parser().parse_args(argv)
    try:
        validate.seconds(args.timeout, "--timeout")
        budget = budget_from_args(args)
        compare_gate = catalogue_compare.gate_from_args(args)  # None without --compare
        for name, value in (("--max-tokens", args.max_tokens), ("--max-tool-tokens", args.max_tool_tokens)):
            if value is not None and value < 0:
                raise validate.InputError(f"{name} must be zero or more")
        extra_headers.configure(args.header)
        spec = parse_target(args.target, allow_remote=args.allow_remote)
        old = None if compare_gate is None else catalogue_compare.load_old(
            args.compare, timeout=args.timeout, budget=budget, allow_remote=args.allow_remote)
        reading = read(spec, timeout=args.timeout, budget=budget, drift=not args.no_drift)
    except (validate.InputError, extra_headers.HeaderError, TargetError) as exc:
        print(f"catalogue: {visible(exc)}", file=sys.stderr)
        return 2
    except ProbeFailure as exc:  # may quote the server: escaped
        print(f"catalogue: {visible(exc)}", file=sys.stderr)
        return _ended(args.json, args.target, 2, unusable(visible(exc)))
    except KeyboardInterrupt:
        return _ended(args.json, args.target, 130, "interrupted before the catalogue was read")
    cat = Catalogue.from_probe(reading.first)
    # --compare: judged, and the definitions kept as text for a later --compare, before the items go.
    comparison = None if old is None else catalogue_compare.compare(args.compare, old, cat, compare_gate)
    definitions = catalogue_compare.saved_definitions(cat)
    # A report folder only when asked for (--out, or `out` configured): without one the findings
    # are judged in a scratch folder, removed when this function returns (its finalizer).
    scratch = None if args.out else tempfile.TemporaryDirectory(prefix="mcp-tempest-catalogue-")
    out_dir = Path(args.out) if scratch is None else Path(scratch.name)
    try:
        store = FindingStore(out_dir, target=spec.text, seed=None, fail_on=args.fail_on)
    except OSError as exc:
        print(f"catalogue: cannot create {out_dir}: {exc.strerror or exc}", file=sys.stderr)
        return _ended(args.json, spec.text, 2, f"cannot create {out_dir}: {exc.strerror or exc}",
                      _counts(cat))
    for ev in catalogue_evidence(reading, cat):
        store.record(ev)
    fresh_note = reading.fresh_note
    # Measured and judged: the parsed lists and their pages go before the reports are written
    # (150,000 tools are about 80 MB parsed, and the reports need only their costs).
    reading.drop_items()
    cat.items.clear()
    if old is not None:  # --compare: compared; only its costs are reported now
        old.items.clear()
    del reading
    doc = cat.to_json()
    doc["definitions"] = definitions
    # Each finding with its detail: the changed definition or the offending span, escaped.
    doc["findings"] = [{**f.to_json(args.fail_on), "detail": _detail(f)} for f in store.findings]
    doc["drift_checked"] = None if args.no_drift else f"two reads on one process; {fresh_note}"
    gate = over_budget(cat, args.max_tokens, args.max_tool_tokens)
    doc["over_budget"] = gate or None
    # The same measurement as `doc`, without the findings (findings.json holds them): shared, not
    # made twice, since a catalogue of 100,000 tools is 100,000 rows.
    store.extra["catalogue"] = {k: v for k, v in doc.items() if k not in ("findings", "drift_checked", "over_budget")}
    if comparison is not None:
        doc["comparison"] = comparison.to_json()
    failing = store.failures
    compare_failed = comparison.failed if comparison is not None else ""
    counts = _counts(cat, len(failing), len(store.observations))
    reasons = _gate_reasons(cat, args, gate) + ([findings_reason(failing)] if failing else [])
    reasons += [visible(compare_failed, REASON_WIDTH)] if compare_failed else []
    status = 1 if reasons else 0
    store.extra["verdict"] = doc["verdict"] = verdict_json("catalogue", counts, status, reasons)
    store.write_index()
    try:
        if scratch is None:
            atomic_write(out_dir / "catalogue.json", orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    except OSError as exc:
        store.write_error = store.write_error or f"cannot write {out_dir}: {exc.strerror or exc}"
    if store.write_error:  # the files may be partial: the run is an error, whatever was measured
        status, reasons = 2, [visible(store.write_error), *reasons]
        doc["verdict"] = verdict_json("catalogue", counts, status, reasons)
    if args.json:
        sys.stdout.write(orjson.dumps(doc).decode() + "\n")
    else:
        print(f"target: {visible(spec.text)} ({cat.era_label})")
        for line in cat.table_lines() if comparison is None else comparison.lines():
            print(line)
        on = colour_on(sys.stdout)
        for f in store.findings:
            verdict = "FINDING" if f.fails(args.fail_on) else "observation"
            print(f"{verdict} {severity(f.label, on)} {f.rule}: {visible(f.title, TITLE_WIDTH)}")
            detail = _detail(f)
            if detail:
                print(f"    {visible(detail)}")
        if scratch is None:
            print(f"output in {out_dir}")
        elif store.findings:
            print("no report folder: --out DIR keeps findings.json, catalogue.json and repro/ for replay")
    if store.write_error:
        print(f"catalogue: {visible(store.write_error)}", file=sys.stderr)
    if gate:  # the budget's verdict: escaped where built (catalogue.over_budget), red on a terminal
        print(paint(gate, RED, colour_on(sys.stderr)), file=sys.stderr)
    if compare_failed:
        print(f"catalogue: {visible(compare_failed)}", file=sys.stderr)
    if not args.json:
        if comparison is not None:
            print(comparison.summary_line())
        print(final_line("catalogue", counts, status, reasons))
    return status


NOT_READ = "not read, 0 findings"  # the counts of a run that measured nothing


def _counts(cat: Any, findings: int | None = None, observations: int = 0) -> str:
    """The measurement (Catalogue.summary_line's, without its `catalogue: `), then the findings:
    the last line's counts."""
    measured = visible(cat.summary_line().removeprefix("catalogue: "))  # a legacy era's version is the server's
    if findings is None:
        return measured
    return f"{measured}, {plural(findings, 'finding')}, {plural(observations, 'observation')}"


def _gate_reasons(cat: Any, args: argparse.Namespace, gate: str) -> list[str]:
    """Why the budget fails the run, short (catalogue.over_budget's line on stderr names the costliest)."""
    reasons = []
    if args.max_tokens is not None and cat.turn_tokens > args.max_tokens:
        reasons.append(f"{cat.turn_tokens:,} tokens every turn over --max-tokens {args.max_tokens}")
    if args.max_tool_tokens is not None:
        over = sum(1 for c in cat.costs.get("tools", []) if c.tokens > args.max_tool_tokens)
        if over:
            reasons.append(f"{plural(over, 'tool')} over --max-tool-tokens {args.max_tool_tokens}")
    if gate and not reasons:
        reasons.append("the catalogue is incomplete, so the budget cannot be checked")
    return reasons


def _ended(as_json: bool, target: str | None, status: int, reason: str, counts: str = NOT_READ) -> int:
    """The end of a run with nothing measured to report (an unusable target, a stop, no folder):
    the last line, or under --json the one object, with the reason."""
    if as_json:
        sys.stdout.write(orjson.dumps({"target": target, "error": reason,
                                       "verdict": verdict_json("catalogue", counts, status, [reason])}).decode() + "\n")
    else:
        print(final_line("catalogue", counts, status, [reason]))
    return status


def _detail(finding: Any) -> str:
    violations = finding.evidence.violations
    return str(violations[0].get("detail") or "") if violations else ""

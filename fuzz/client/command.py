"""`mcp-tempest fuzz-client --client "CMD with {server} or {url}"`: a client campaign.

Exit status as `fuzz` (CLI.md): 0 no findings at or above --fail-on, 1 such findings, 2 usage
error or a client that cannot run; 130 when interrupted before anything was found. The last
stdout line of every run that got past its options is fuzz/verdict_line.py's `final_line`:
`fuzz-client: N examples, F findings: WORD (why)`, the exit status in words (PASS, FAIL naming
the findings' rules, ERROR, INTERRUPTED); findings.json's `verdict` holds the same words.
"""

from __future__ import annotations

import argparse
import secrets
import sys
from pathlib import Path
from typing import NoReturn

from mcp_tempest.fuzz.client.runner import ClientCommand, ClientCommandError
from mcp_tempest.fuzz.safe_text import visible
from mcp_tempest.fuzz.verdict_line import (
    REASON_WIDTH,
    end_without_campaign,
    final_line,
    findings_reason,
    plural,
    verdict_json,
)

FAIL_ON = ("must", "should", "heuristic")


class UsageError(Exception):
    """Bad command line; the message is one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mcp-tempest fuzz-client",
                description="Play a scripted, sometimes hostile MCP 2026-07-28 server and fuzz an MCP client.",
                epilog="Exit status: 0 no findings (at or above --fail-on), 1 findings, 2 usage error or the "
                       "client cannot run.")
    p.add_argument("--client", required=True, metavar="CMD",
                   help="the client command line; {server} is replaced by the server command it must launch "
                        "(stdio), {url} by a loopback Streamable HTTP URL served for each run")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--max-examples", type=int, default=50, metavar="N", help="client runs (default 50)")
    budget.add_argument("--duration", type=float, metavar="SECONDS", help="a wall-time budget instead")
    p.add_argument("--seed", type=int, help="campaign seed (default: random, printed)")
    p.add_argument("--out", metavar="DIR", help="output directory (default ./tempest-out/fuzz-client-<timestamp>/)")
    p.add_argument("--timeout", type=float, default=20.0, metavar="SECONDS",
                   help="how long one client run may take before it counts as hung (default 20)")
    p.add_argument("--shrink-time", type=float, default=30.0, metavar="SECONDS",
                   help="at most this long shrinking the failures (default 30)")
    p.add_argument("--database", metavar="DIR", help="Hypothesis example database directory (default: none)")
    p.add_argument("--fail-on", choices=FAIL_ON, default="should",
                   help="the weakest finding strength that makes the exit status 1 (default should)")
    return p


def preflight(command: ClientCommand, *, timeout: float) -> str:
    """One run against the plain default server: a client that cannot start, or never reaches the
    server it was given, is a usage problem (exit 2), not a campaign of findings. Empty: usable."""
    from mcp_tempest.fuzz.client.case import ClientCase
    from mcp_tempest.fuzz.client.runner import run_case

    try:
        transcript = run_case(command, ClientCase(), timeout=timeout)
    except ClientCommandError as exc:
        return str(exc)
    if any(e.proc > 0 and e.kind in ("recv", "noise") for e in transcript.events):
        return ""
    tail = next((e.raw for e in transcript.events if e.kind == "stderr" and e.raw), b"")
    last = tail.decode("utf-8", "replace").strip().splitlines()[-1:] if tail else []
    where = "the server command ({server})" if command.transport.line_framed else "the URL ({url})"
    return (f"the client never sent a frame to {where}; is the placeholder where the client takes its server?"
            + (f" Its stderr ends: {last[0][:200]}" if last else ""))


def fuzz_client_main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
        command = ClientCommand.parse(args.client)
        if args.max_examples is not None and args.max_examples < 1:
            raise UsageError("--max-examples must be at least 1")
        for name in ("duration", "timeout", "shrink_time"):
            value = getattr(args, name)
            if value is not None and not value > 0:
                raise UsageError(f"--{name.replace('_', '-')} must be positive")
    except (UsageError, ClientCommandError) as exc:
        print(f"mcp-tempest fuzz-client: {exc} (see --help)", file=sys.stderr)
        return 2
    from mcp_tempest.fuzz.client.campaign import ClientCampaign, out_dir_default, run_client_campaign
    from mcp_tempest.fuzz.findings import FindingStore, strength_rank
    from mcp_tempest.fuzz.reports import write_reports

    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    out_dir = Path(args.out) if args.out else out_dir_default()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"mcp-tempest fuzz-client: cannot create {out_dir}: {exc.strerror or exc}", file=sys.stderr)
        print(final_line("fuzz-client", _counts(0, 0), 2, [f"cannot create {out_dir}: {exc.strerror or exc}"]))
        return 2
    try:
        problem = preflight(command, timeout=args.timeout)
    except KeyboardInterrupt:
        print(final_line("fuzz-client", _counts(0, 0), 130, ["interrupted before the campaign started"]))
        return 130
    if problem:
        print(f"mcp-tempest fuzz-client: {visible(problem)}", file=sys.stderr)
        return end_without_campaign("fuzz-client", _counts(0, 0), 2, f"unusable client: {visible(problem, REASON_WIDTH)}",
                                    out_dir=out_dir, target=command.template, seed=seed, fail_on=args.fail_on)
    store = FindingStore(out_dir, target=command.template, seed=seed)
    print(f"fuzz-client: client {command.template} ({command.transport})")
    print(f"fuzz-client: seed {seed}, output in {out_dir}")
    config = ClientCampaign(command, seed=seed, max_examples=args.max_examples, duration=args.duration,
                            timeout=args.timeout, shrink_seconds=args.shrink_time, database=args.database)
    try:
        result = run_client_campaign(config, store)
    except ClientCommandError as exc:
        print(f"mcp-tempest fuzz-client: {visible(exc)}", file=sys.stderr)
        return end_without_campaign("fuzz-client", _counts(store.examples, len(store.findings)), 2,
                                    f"unusable client: {visible(exc, REASON_WIDTH)}", out_dir=out_dir,
                                    target=command.template, seed=seed, store=store)
    store.interrupted = result.interrupted
    findings = store.findings
    threshold = strength_rank(args.fail_on.upper())
    failing = [f for f in findings if strength_rank(f.strength) <= threshold]
    broken = bool(result.runs and result.runs[0].error and result.examples == 0)
    status = 1 if failing else 130 if result.interrupted else 2 if broken else 0
    reasons = [findings_reason(failing)] if failing else []
    reasons += [f"the client could not be run: {visible(result.runs[0].error, REASON_WIDTH)}"] if broken else []
    reasons += ["interrupted before the budget was spent"] if result.interrupted else []
    counts = _counts(result.examples, len(failing), len(findings) - len(failing))
    store.extra["verdict"] = verdict_json("fuzz-client", counts, status, reasons)
    store.write_index()
    try:
        write_reports(out_dir, result.runs, findings, target=command.template, seed=seed, examples=result.examples,
                      seconds=result.seconds, interrupted=result.interrupted)
    except OSError as exc:
        store.write_error = store.write_error or f"cannot write the reports in {out_dir}: {exc.strerror or exc}"
    for run in result.runs:
        note = run.error and f"harness error: {run.error}" or run.note
        print(f"  {run.property}[{run.transport}] {run.examples} examples {run.seconds:.1f} s"
              + (f"  {visible(note)}" if note else ""))
    for f in findings:
        print(f"  finding {f.id}: {f.strength} {f.rule} {f.title} [{f.method or '-'}, {f.transport}"
              f"{', ' + f.mutation if f.mutation else ''}] x{f.count} -> {f.repro}")
    if store.write_error:
        print(f"mcp-tempest fuzz-client: {visible(store.write_error)}", file=sys.stderr)
        status, reasons = 2, [visible(store.write_error), *reasons]
    print(final_line("fuzz-client", counts, status, reasons))
    return status


def _counts(examples: int, findings: int, observations: int = 0) -> str:
    """`20 examples, 1 finding, 2 observations`: the last line's counts; as in `fuzz`, a finding
    below --fail-on is an observation, so the counts never say "finding" under a PASS."""
    line = f"{plural(examples, 'example')}, {plural(findings, 'finding')}"
    return line + (f", {plural(observations, 'observation')}" if observations else "")

"""`mcp-tempest fuzz`: parse the command line, run a campaign, write its files, say what happened.

Exit status (a promise, see CLI.md): 0 no findings, 1 findings, 2 usage error or unusable target;
130 when interrupted before anything was found. A finding counts when it is confirmed and at or
above `--fail-on` (default should); weaker or unconfirmed ones are observations: printed and in
every report, never exit status 1. A finding whose group a `--known` baseline names is known:
counted, never exit status 1.

The last stdout line of every run that got past its options (fuzz/verdict_line.py `final_line`),
also after Ctrl-C, an unusable target or a full disk, is the counts and then the exit status in
words: `fuzz: N examples, P properties, F findings[ (K known)][, O observations]: WORD (why)`,
WORD one of PASS (0), FAIL (1, naming the new findings' rules), ERROR (2), INTERRUPTED (130),
e.g. `fuzz: 20 examples, 7 properties, 1 finding: FAIL (1 finding: RT-01)`. findings.json's
`verdict` holds the same words; `--out` gets findings.json, junit.xml, results.sarif and
summary.md whatever the status, so a CI job always has its files (a run that never reached its
campaign: one junit test case in error giving the reason, findings.json's `error`).
"""

from __future__ import annotations

import argparse
import atexit
import datetime as _dt
import os
import re
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NoReturn

from mcp_tempest.fuzz.findings import DEFAULT_FAIL_ON, FAIL_ON_CHOICES
from mcp_tempest.fuzz.safe_text import NAME_WIDTH, visible
from mcp_tempest.fuzz.verdict_line import (
    REASON_WIDTH,
    end_without_campaign,
    final_line,
    plural,
    unusable,
    verdict_json,
)
from mcp_tempest.targets import auth_client, extra_headers, fork_server, stop_request, validate
from mcp_tempest.targets.mutants import campaign_notes
from mcp_tempest.targets.target_spec import TargetError, TargetSpec, default_target, isolated, parse_target


def property_names() -> tuple[str, ...]:
    """Every registered property, in campaign order: derived from fuzz/properties/base.py's registry."""
    from mcp_tempest.fuzz.properties.base import all_properties

    return tuple(all_properties())


def __getattr__(name: str) -> tuple[str, ...]:  # PROPERTY_NAMES, kept for importers, now derived
    if name == "PROPERTY_NAMES":
        return property_names()
    raise AttributeError(name)
DEFAULT_DATABASE = os.path.join(".hypothesis", "mcp-tempest")


class UsageError(Exception):
    """Bad command line; the message is one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="mcp-tempest fuzz",
        description="Run a property-based fuzz campaign against an MCP 2026-07-28 server.",
        epilog="Exit status: 0 no findings, 1 findings (at or above --fail-on), 2 usage error or unusable target.",
    )
    p.add_argument("--target", help="stdio:<command>, http://127.0.0.1:PORT/PATH or http+spawn:<command with {port}> "
                                    "(default: the built-in reference server over stdio and HTTP)")
    p.add_argument("--compare-target", metavar="OTHER",
                   help="play every case on OTHER too (any target form: another build of the server, or the "
                        "same server over another transport) and report each answer that differs in meaning "
                        "(error or result, code, resultType, isError, list items) as a difference")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--max-examples", type=int, metavar="N",
                        help="examples for the whole campaign, split across properties and transports (default 200)")
    budget.add_argument("--duration", type=float, metavar="SECONDS",
                        help="wall-time budget for the whole campaign instead of an example count")
    p.add_argument("--seed", type=int, help="campaign seed (default: random, printed)")
    p.add_argument("--out", metavar="DIR", help="output directory (default ./tempest-out/fuzz-<timestamp>/)")
    p.add_argument("--properties", metavar="P,...",
                   help=f"comma-separated subset of: {', '.join(property_names())} (default: all)")
    p.add_argument("--database", metavar="DIR|redis://...",
                   help=f"Hypothesis example database, shared between runs and workers (default {DEFAULT_DATABASE}; "
                        "none when --seed is given, so that a seeded run is reproducible)")
    p.add_argument("--no-database", action="store_true", help="do not read or write an example database")
    p.add_argument("--workers", type=int, default=1, metavar="K", help="worker processes (default 1)")
    p.add_argument("--transports", metavar="stdio,http",
                   help="with the built-in target: which transports to fuzz (default both)")
    p.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS",
                   help="how long to wait for each answer (default 5)")
    p.add_argument("--fail-on", choices=FAIL_ON_CHOICES, default=DEFAULT_FAIL_ON, type=str.lower,
                   help="the weakest strength that makes a finding fail the campaign (exit 1); weaker ones "
                        "are reported as observations (default should)")
    p.add_argument("--shrink-time", type=float, default=30.0, metavar="SECONDS",
                   help="at most this long shrinking the failures of one property (default 30)")
    p.add_argument("--mutations", metavar="NAME,...",
                   help="the framing property sends only these malformed frames (names or globs such as "
                        "'hdr-*'; `mcp-tempest frames --list` names them, plus blank-line, http-get, http-delete, "
                        "hdr-param-missing and hdr-param-mismatch)")
    p.add_argument("--stop-on-first", "--first-finding", dest="stop_on_first", action="store_true",
                   help="stop each property at its first failure (shrunk), then go on to the next property "
                        "(default: keep exploring with that failure's group known)")
    p.add_argument("--stop-on-rule", metavar="RULE,...", default="",
                   help="end the campaign at the first finding of one of these rule ids (its rule, or the rule "
                        "its probe tests); until then it is the same campaign, seed for seed; --workers 1 only")
    p.add_argument("--tools", choices=("all", "read-only", "none"), default="all",
                   help="which tools the campaign may call with generated arguments: all, read-only (the tools "
                        "annotated readOnlyHint and not destructiveHint) or none (default all)")
    p.add_argument("--allow-tool", action="append", default=[], metavar="PATTERN",
                   help="call only tools whose name matches one of these globs (repeatable)")
    p.add_argument("--deny-tool", action="append", default=[], metavar="PATTERN",
                   help="never call tools whose name matches this glob (repeatable)")
    p.add_argument("--tool-args", metavar="FILE",
                   help="argument values per tool that no fuzzer can guess (an account id, a path that exists): "
                        "JSON or TOML, tool -> argument -> value or list of values, '*' for any tool "
                        "(default: [tool.mcp-tempest.tool-args] in pyproject.toml, if any)")
    p.add_argument("--no-coverage", action="store_true",
                   help="do not measure the server's own code coverage (default: measured for stdio: and "
                        "http+spawn: targets, with coverage.py for Python ones (reach.code, coverage.xml, "
                        "coverage_html/) and with V8's NODE_V8_COVERAGE for Node ones (functions reached))")
    p.add_argument("--coverage-source", action="append", default=[], metavar="PKG_OR_PATH",
                   help="also measure this package or path (repeatable), e.g. the SDK the server is built on")
    p.add_argument("--guidance", default="corpus", metavar="corpus[,target]|none",
                   help="corpus: keep examples that drew a new kind of answer in the example database and play "
                        "them first next run; target: also steer generation towards them (default corpus)")
    p.add_argument("--known", metavar="FILE",
                   help="a findings baseline (a findings.json, or one group id per line with a reason): "
                        "those groups are reported as known and only new ones fail the run")
    p.add_argument("--write-regressions", metavar="DIR",
                   help="also write each finding as a standalone pytest regression test into DIR")
    p.add_argument("--progress", choices=("auto", "bar", "lines", "never"), default="auto",
                   help="progress on stderr: a live bar on a terminal, else one line per property (default auto)")
    extra_headers.add_option(p)
    auth_client.add_options(p)
    p.add_argument("--allow-remote", action="store_true", help="allow a non-loopback HTTP target")
    p.add_argument("--isolate-network", action="store_true",
                   help="start each server in a network namespace of its own with only a loopback, so a tool that "
                        "fetches a generated URL reaches nothing (stdio: and http+spawn: targets; Linux, root)")
    p.add_argument("--no-fork-server", action="store_true",
                   help="start every fresh process of a Python stdio target by plain spawning (default: fork it "
                        "from a process that imported the server's dependencies once)")
    p.add_argument("--list-properties", action="store_true", help="print each property and what it checks")
    return p


def _properties(text: str | None) -> list[str]:
    known = property_names()
    if not text or text.strip() in ("all", "*"):
        return list(known)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"unknown propert{'ies' if len(unknown) > 1 else 'y'} {', '.join(unknown)} "
                         f"(choose from {', '.join(known)})")
    return list(dict.fromkeys(names))


def _mutations(text: str | None, specs: list[TargetSpec]) -> tuple[str, ...]:
    if not text:
        return ()
    from mcp_tempest.fuzz.properties.framing import select_mutations

    patterns = tuple(p.strip() for p in text.split(",") if p.strip())
    for pattern in patterns:
        if not any(select_mutations(spec.transport, (pattern,)) for spec in specs):
            raise UsageError(f"--mutations: {pattern!r} names no mutation for this target "
                             "(see `mcp-tempest frames --list`)")
    return patterns


def _targets(args: argparse.Namespace) -> list[TargetSpec]:
    if args.target:
        if args.transports:
            raise UsageError("--transports applies only to the built-in target; --target already names one")
        return [parse_target(args.target, allow_remote=args.allow_remote, isolate_network=args.isolate_network)]
    wanted = ["stdio", "http"] if not args.transports else [t.strip() for t in args.transports.split(",") if t.strip()]
    bad = [t for t in wanted if t not in ("stdio", "http")]
    if bad or not wanted:
        raise UsageError(f"--transports takes stdio, http or both, not {args.transports!r}")
    specs = [default_target(t) for t in dict.fromkeys(wanted)]  # type: ignore[arg-type]
    return [isolated(s) for s in specs] if args.isolate_network else specs


def _guidance(text: str) -> tuple[str, ...]:
    from mcp_tempest.fuzz.job import GUIDANCE_CHOICES

    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    if modes == ("none",):
        return ()
    bad = [m for m in modes if m not in GUIDANCE_CHOICES]
    if bad or not modes:
        raise UsageError(f"--guidance takes none or {','.join(GUIDANCE_CHOICES)} (comma-separated), not {text!r}")
    return modes


def _validate(args: argparse.Namespace) -> None:
    if args.max_examples is not None and args.max_examples < 1:
        raise UsageError("--max-examples must be at least 1")
    if args.duration is not None and not args.duration > 0:
        raise UsageError("--duration must be a positive number of seconds")
    if args.workers < 1 or args.workers > 64:
        raise UsageError("--workers must be between 1 and 64")
    if args.no_database and args.database:
        raise UsageError("--database and --no-database exclude each other")
    try:  # finite, in range, writable, loopback: the shared checks of every command (targets/validate.py)
        validate.seconds(args.timeout, "--timeout")
        validate.seconds(args.duration, "--duration")
        validate.seconds(args.shrink_time, "--shrink-time", zero_ok=True)
        validate.database_url(args.database, allow_remote=args.allow_remote)
        if args.out:
            validate.writable_dir(args.out, "--out")
        if args.write_regressions:
            validate.writable_dir(args.write_regressions, "--write-regressions")
    except validate.InputError as exc:
        raise UsageError(str(exc)) from None


def _known(path: str | None) -> dict[str, str]:
    """The groups of a --known baseline, each with its reason: a findings.json of an earlier run
    (every finding of it), or a text file with one group id per line, a reason after it."""
    if not path:
        return {}
    import orjson

    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"--known: cannot read {path}: {exc.strerror or exc}") from None
    if raw.lstrip().startswith(b"{"):
        try:
            data = orjson.loads(raw)
            return {str(f["id"]): f"{f.get('strength', '')} {f.get('rule', '')} {f.get('title', '')}".strip()
                    for f in data["findings"]}
        except (orjson.JSONDecodeError, KeyError, TypeError):
            raise UsageError(f"--known: {path} is not a findings.json (no findings list with ids)") from None
    out: dict[str, str] = {}
    for line in raw.decode("utf-8", "replace").splitlines():
        text = line.split("#", 1)[0].strip() if line.lstrip().startswith("#") else line.strip()
        if not text:
            continue
        gid, _, reason = text.partition(" ")
        out[gid] = reason.strip(" \t-:") or "known"
    return out


_RULE_ID = re.compile(r"[A-Z][A-Z0-9]*-[0-9]+")


def _stop_rules(text: str, workers: int) -> frozenset[str]:
    """--stop-on-rule's rule ids (DIGEST ids such as RPC-04, upper case); one worker only, because
    the campaign ends from the process that files the finding."""
    rules = frozenset(r.strip().upper() for r in text.split(",") if r.strip())
    bad = sorted(r for r in rules if not _RULE_ID.fullmatch(r))
    if bad:
        raise UsageError(f"--stop-on-rule: {', '.join(bad)} is not a rule id (such as RPC-04)")
    if rules and workers > 1:
        raise UsageError("--stop-on-rule needs --workers 1")
    return rules


def _default_out() -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("tempest-out") / f"fuzz-{stamp}"


def fuzz_main(argv: list[str]) -> int:
    opened: list[auth_client.Session] = []  # --auth's authorization server, closed however the run ends
    try:
        return _fuzz_main(argv, opened)
    finally:
        for session in opened:
            session.close()


def _fuzz_main(argv: list[str], opened: list[auth_client.Session]) -> int:
    started = time.monotonic()  # --duration counts from here
    try:
        args = build_parser().parse_args(argv)
        if args.list_properties:
            return _list_properties()
        _validate(args)
        auth = auth_client.start(args.auth, args.auth_issuer, announce=lambda line: print(line, file=sys.stderr))
        opened.extend([auth] if auth is not None else [])
        props = _properties(args.properties)
        specs = _targets(args)
        args.compare_spec = (parse_target(args.compare_target, allow_remote=args.allow_remote,
                                          isolate_network=args.isolate_network) if args.compare_target else None)
        if args.compare_spec is not None and len(specs) > 1:
            raise UsageError("--compare-target compares one target with another: name the first with --target")
        args.mutation_patterns = _mutations(args.mutations, specs)
        extra_headers.configure(args.header)
        args.known_groups = _known(args.known)
        args.stop_rules = _stop_rules(args.stop_on_rule, args.workers)
        args.guidance_modes = _guidance(args.guidance)
        if not args.auth and auth_client.needs_issuer([a for s in specs for a in s.argv]):
            raise UsageError("the target command names {issuer}: add --auth")
    except (UsageError, extra_headers.HeaderError) as exc:
        print(f"mcp-tempest fuzz: {exc} (see --help)", file=sys.stderr)
        return 2
    except auth_client.AuthServerError as exc:
        print(f"mcp-tempest fuzz: {exc}", file=sys.stderr)
        return 2
    except TargetError as exc:
        print(f"mcp-tempest fuzz: {exc}", file=sys.stderr)
        return 2
    if args.no_fork_server:  # an environment variable, so that --workers processes see it too
        os.environ[fork_server.DISABLE_VAR] = "1"
    with stop_request.honoured():  # SIGINT and SIGTERM stop the campaign where it can stop cleanly
        return _run(args, props, specs, started)


def _run(args: argparse.Namespace, props: list[str], specs: list[TargetSpec], started: float | None = None) -> int:
    from mcp_tempest.fuzz.campaign import (
        CampaignConfig,
        Progress,
        UnusableTarget,
        prepare_target,
        run_campaign,
    )
    from mcp_tempest.fuzz.findings import FindingStore, ReplayConditions, resolved_command
    from mcp_tempest.fuzz.reports import write_reports

    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    out_dir = Path(args.out) if args.out else _default_out()
    # A --seed run is reproducible: it reads no example database unless one is named.
    database = None if args.no_database or (args.seed is not None and not args.database) else (
        args.database or DEFAULT_DATABASE)
    config = CampaignConfig(
        targets=specs, properties=props, seed=seed,
        max_examples=args.max_examples if args.duration is None else None, duration=args.duration,
        database=database, workers=args.workers, timeout=args.timeout, shrink_seconds=args.shrink_time,
        stop_on_first=args.stop_on_first, mutations=args.mutation_patterns,
        known=frozenset(args.known_groups), started=started, stop_on_rules=frozenset(args.stop_rules),
        guidance=args.guidance_modes, compare_target=args.compare_spec,
    )
    target_text = specs[0].text if len(specs) == 1 else " + ".join(s.text for s in specs)
    from mcp_tempest.fuzz.tool_policy import ToolPolicy

    policy = ToolPolicy(args.tools, tuple(args.allow_tool), tuple(args.deny_tool))
    from mcp_tempest.fuzz.tool_args import ToolArgsError, load_tool_args

    try:
        tool_args = load_tool_args(args.tool_args)
    except ToolArgsError as exc:
        print(f"mcp-tempest fuzz: {exc}", file=sys.stderr)
        print(final_line("fuzz", _counts(0, len(props), [], []), 2, [visible(exc, REASON_WIDTH)]))
        return 2
    plans = _plan_code_coverage(specs, args)
    config.teardown_seconds = sum(p.teardown_seconds() if hasattr(p, "teardown_seconds") else 4.0
                                  for p in plans if hasattr(p, "spec"))
    try:
        # A measured target is prepared measured too: the surface search's calls are often a
        # tool's first success, and run code the campaign's own examples may not.
        prepared = [prepare_target(getattr(plan, "spec", spec), timeout=args.timeout, tools=policy,
                                   tool_args=tool_args, literals=_literals(plan, args.coverage_source), seed=seed)
                    for spec, plan in zip(specs, plans, strict=True)]
        # --compare-target: probed as the target is (an unusable or legacy one is said at once)
        compared = prepare_target(args.compare_spec, timeout=args.timeout, seed=seed) if args.compare_spec else None
    except UnusableTarget as exc:
        print(f"mcp-tempest fuzz: unusable target: {visible(exc)}", file=sys.stderr)
        return end_without_campaign("fuzz", _counts(0, len(props), [], []), 2, unusable(visible(exc)),
                                    out_dir=out_dir, target=target_text, seed=seed, fail_on=args.fail_on)
    except KeyboardInterrupt:
        print("mcp-tempest fuzz: interrupted before the campaign started", file=sys.stderr)
        return end_without_campaign("fuzz", _counts(0, len(props), [], []), 130,
                                    "interrupted before the campaign started", out_dir=out_dir, target=target_text,
                                    seed=seed, fail_on=args.fail_on)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"mcp-tempest fuzz: cannot create {out_dir}: {exc.strerror or exc}", file=sys.stderr)
        print(final_line("fuzz", _counts(0, len(props), [], []), 2,
                         [f"cannot create {out_dir}: {exc.strerror or exc}"]))
        return 2
    cwd = os.getcwd()
    conditions = ReplayConditions(
        timeout=args.timeout, start_timeout=max(args.timeout, 5.0), cwd=cwd,
        commands={p.spec.text: resolved_command(p.spec.argv, cwd)
                  for p in [*prepared, *([compared] if compared else [])] if p.spec.argv},
        contexts={p.spec.text: {k: v for k, v in p.dump().items() if k != "spec"} for p in prepared},
    )
    store = FindingStore(out_dir, target=target_text, seed=seed, conditions=conditions, fail_on=args.fail_on)
    for prep in prepared:
        print(f"fuzz: target {visible(prep.spec.text)} ({visible(prep.detail)})")
        for note in campaign_notes(prep.spec.argv, prep.spec.transport.name):  # a --bug this run cannot show
            print(f"note: {visible(note)}")
    if compared is not None:
        print(f"fuzz: compared with {visible(compared.spec.text)} ({visible(compared.detail)}): every case is "
              "played on both, and an answer that differs in meaning is a difference")
    print(f"fuzz: seed {seed}, output in {out_dir}, example database {database or 'none'}")
    if not policy.unrestricted:
        withheld = sorted({name for prep in prepared for name in prep.surface.withheld_tools})
        print(f"fuzz: tools: {policy.describe()}; withheld (never called): "
              f"{', '.join(visible(n, NAME_WIDTH) for n in withheld) or 'none'}")
    progress = Progress("auto" if args.progress == "auto" else args.progress)
    for prep in prepared:  # what the era probe's catalogue read broke: on disk before any case runs
        for ev in prep.probe_findings:
            finding, _new = store.record(ev)
            progress.finding(finding)
    try:
        result = run_campaign(config, store, progress=progress, prepared=prepared)
    except UnusableTarget as exc:
        progress.close()
        print(f"mcp-tempest fuzz: {visible(exc)}", file=sys.stderr)
        counts = _counts(store.examples, len(props), store.failures, store.observations)
        return end_without_campaign("fuzz", counts, 2, unusable(visible(exc)), out_dir=out_dir, target=target_text,
                                    seed=seed, store=store)
    finally:
        progress.close()
    from mcp_tempest.fuzz.coverage import coverage_report, known_report

    store.extra["coverage"] = coverage_report(result.probes)
    store.extra["tools"] = {"policy": policy.describe(),
                            "withheld": sorted({n for prep in prepared for n in prep.surface.withheld_tools})}
    tools_report = _tools_report(result, prepared)
    store.extra["reach"] = tools_report.to_json()
    code_lines = _collect_code_coverage(plans, out_dir, store.extra["reach"])
    store.extra["budget"] = {
        "max_examples": config.max_examples, "duration": config.duration, "shrink_time": config.shrink_seconds,
        "generated": result.examples, "shrinks": sum(r.shrinks for r in result.runs),
        "replays": sum(r.replays for r in result.runs),
        "seconds": round(time.monotonic() - started if started is not None else result.seconds, 3),
    }
    # What each target's catalogue costs, measured from the era probe's lists (prepare_target).
    catalogues = [p.catalogue for p in prepared if p.catalogue is not None]
    store.extra["catalogue"] = [{**p.catalogue.to_json(), "definitions": p.definitions}
                                for p in prepared if p.catalogue is not None]
    if config.compare_target is not None:
        from mcp_tempest.fuzz.differences import differences_json

        store.extra["differences"] = differences_json(store.findings)
    known = known_report(store.findings, args.known_groups, result.replayed)
    store.extra["known"] = known
    findings = store.findings
    failures = store.failures
    from mcp_tempest.fuzz.report_status import report_status

    # the exit status every report file states too (errors: a property not tested is no pass)
    judged = report_status(result.runs, findings, fail_on=args.fail_on, interrupted=result.interrupted,
                           known=args.known_groups)
    status, new = judged.status, list(judged.new)
    errors = [r for r in result.runs if r.error]
    counts = _counts(result.examples, len(props), failures, store.observations, len(failures) - len(new))
    reasons = list(judged.reasons)
    store.extra["verdict"] = verdict_json("fuzz", counts, status, reasons)
    store.write_index()
    try:  # a full disk: one line, exit 2; every file already written stays valid (atomic writes)
        write_reports(out_dir, result.runs, findings, target=target_text, seed=seed, examples=result.examples,
                      seconds=result.seconds, interrupted=result.interrupted, notes=result.notes,
                      fail_on=args.fail_on, catalogues=catalogues, extra=store.extra)
        if args.write_regressions and findings:
            from mcp_tempest.fuzz.regression import write_regressions

            written = write_regressions(out_dir, Path(args.write_regressions))
            print(f"fuzz: {len(written)} regression test(s) written to {args.write_regressions}")
    except OSError as exc:
        store.write_error = store.write_error or f"cannot write the reports in {out_dir}: {exc.strerror or exc}"
    if store.write_error:
        print(f"mcp-tempest fuzz: {visible(store.write_error)}", file=sys.stderr)
        reasons = [visible(store.write_error), *reasons]
        store.extra["verdict"] = verdict_json("fuzz", counts, 2, reasons)
        store.write_index()  # where the disk still takes it: the file says why the run failed
        print(final_line("fuzz", counts, 2, reasons))
        return 2
    _print_summary(result, findings, args.fail_on)
    from mcp_tempest.fuzz.coverage import print_coverage, print_known

    print_coverage(store.extra["coverage"])
    for line in tools_report.lines() if tools_report.listed else []:
        print(line)
    print(tools_report.headline())
    for line in code_lines:
        print(line)
    print_known(known)
    for run in errors:
        print(f"fuzz: error: {run.property}[{run.transport}]: {visible(run.error)}")
    print(final_line("fuzz", counts, status, reasons))
    return status


def _plan_code_coverage(specs: list[TargetSpec], args: argparse.Namespace) -> list[Any]:
    """Per target: a coverage plan (the first target that can be measured; its spec then starts
    every server process under coverage.py) or the reason it is not measured."""
    from mcp_tempest.targets.code_coverage import CoveragePlan, NotMeasured, plan_coverage
    from mcp_tempest.targets.node_coverage import NodeCoveragePlan

    plans: list[Any] = []
    data: Path | None = None
    for i, spec in enumerate(specs):
        if args.no_coverage:  # planned all the same: the plan's sources are where the literals come from
            with tempfile.TemporaryDirectory(prefix="mcp-tempest-plan-") as scratch:
                plan = plan_coverage(spec, tuple(args.coverage_source), Path(scratch))
            plans.append(NotMeasured("code coverage: not measured (--no-coverage)", getattr(plan, "sources", ())))
        elif any(isinstance(p, CoveragePlan | NodeCoveragePlan) for p in plans):
            plans.append(NotMeasured("code coverage: measured on the first target only"))
        else:
            if data is None:
                # Per-process data files are scratch: a temporary folder (removed at exit), so a full
                # or read-only --out cannot break the servers' writes; only the reports land in --out.
                # Made only when something is measured (--no-coverage campaigns left one behind each).
                data = Path(tempfile.mkdtemp(prefix="mcp-tempest-coverage-"))
                atexit.register(shutil.rmtree, data, True)
            plans.append(plan_coverage(spec, tuple(args.coverage_source), data / str(i)))
    return plans


def _literals(plan: Any, extra: list[str]) -> tuple[dict[str, list[Any]], list[Any]]:
    """The measured code's literals (the server's own, not the --coverage-source additions)."""
    from mcp_tempest.fuzz.source_literals import literals_of

    sources = getattr(plan, "sources", ())
    return literals_of([s for s in sources if s not in extra]) if sources else ({}, [])


def _collect_code_coverage(plans: list[Any], out_dir: Path, reach: dict[str, Any]) -> list[str]:
    """reach.code in findings.json, coverage.xml and coverage_html/ in --out, and the summary's line."""
    from mcp_tempest.targets.code_coverage import CoveragePlan, collect
    from mcp_tempest.targets.node_coverage import NodeCoveragePlan, collect_node

    lines: list[str] = []
    for plan in plans:
        if not isinstance(plan, CoveragePlan | NodeCoveragePlan):
            if "code" not in reach and not plan.reason.endswith("first target only"):
                reach["code"] = {"measured": False, "reason": plan.reason}
                lines.append(plan.reason)
            continue
        try:
            code = collect_node(plan) if isinstance(plan, NodeCoveragePlan) else collect(plan, out_dir)
        except Exception as exc:  # noqa: BLE001 - a measurement that failed must not lose the campaign's reports
            reach["code"] = {"measured": False, "reason": f"code coverage: could not be combined ({exc})"}
            lines.append(reach["code"]["reason"])
            continue
        reach["code"] = {"measured": True, **code.to_json()}
        if code.kind == "functions":
            lines.append(_node_code_line(code))
            continue
        least = sorted(code.files, key=lambda f: (f["percent"], f["path"]))[:3]
        lines.append(f"code coverage: {code.percent:.1f}% of the server's own code (lines and branches, "
                     f"{len(code.files)} files, {code.processes} processes); least reached: "
                     + ", ".join(f"{Path(f['path']).name} {f['percent']:.0f}%" for f in least))
        if code.contexts:
            lines.append("code coverage by property (lines run; lines no other ran): " + ", ".join(
                f"{c['context']} {c['lines']} ({c['only']})" for c in code.contexts))
    return lines


def _node_code_line(code: Any) -> str:
    """The summary's line for a Node target: functions reached, and the first never reached."""
    # function names are the server's own text: shown escaped (fuzz/safe_text.py)
    never = [visible(f"{Path(f['path']).name}: {name}", NAME_WIDTH) for f in code.files for name in f["never_reached"]]
    line = (f"code coverage: {code.percent:.1f}% of the server's own functions ({len(code.files)} files, "
            f"{code.processes} processes, V8)")
    if never:
        line += f"; never reached: {', '.join(never[:5])}" + (f" and {len(never) - 5} more" if len(never) > 5 else "")
    return line + "".join(f"; {note}" for note in code.notes)


def _tools_report(result: Any, prepared: list[Any]) -> Any:
    """Every job's tally merged, against every tool the targets listed (withheld ones included)."""
    from mcp_tempest.fuzz.reach import Reach, ToolsReport, merged

    listed: list[str] = []
    withheld: list[str] = []
    for prep in prepared:
        for name in [str(t.get("name")) for t in prep.surface.tools] + list(prep.surface.withheld_tools):
            if name not in listed:
                listed.append(name)
        withheld += [n for n in prep.surface.withheld_tools if n not in withheld]
    tallies = [Reach.from_json(p.surface.reach) for p in prepared if p.surface.reach]  # the surface search's calls
    tallies += [Reach.from_json(r.reach) for r in result.runs if r.reach]
    unread = "; ".join(f"tools/list could not be read ({p.surface.tools_cut})" for p in prepared
                       if p.surface.tools_cut and not p.surface.tools and not p.surface.withheld_tools)
    return ToolsReport(merged(tallies), listed, withheld, unread)


def _counts(examples: int, props: int, failures: list[Any], observations: list[Any], known: int = 0) -> str:
    """`20 examples, 7 properties, 2 findings (2 known), 1 observation`: the last line's counts."""
    line = (f"{plural(examples, 'example')}, {plural(props, 'property', 'properties')}, "
            f"{plural(len(failures), 'finding')}" + (f" ({known} known)" if known else ""))
    return line + (f", {plural(len(observations), 'observation')}" if observations else "")


def _print_summary(result: Any, findings: list[Any], fail_on: str) -> None:
    from mcp_tempest.fuzz import terminal_style

    on = terminal_style.colour_on(sys.stdout)
    for note in result.notes:
        print(f"note: {visible(note)}")
    for run in result.runs:
        status = run.error and f"harness error: {run.error}" or run.note or ("skipped" if run.skipped else "")
        aside = ", ".join(part for part in (f"{run.shrinks} shrinking" if run.shrinks else "",
                                            f"{run.replays} replayed" if run.replays else "") if part)
        row = (f"  {run.property + '[' + run.transport + ']':<18} {run.examples:>6} examples {run.seconds:>7.1f} s"
               + (" " + terminal_style.aside(f"(+{aside})", on) if aside else ""))
        # within terminal_style.COLUMNS: a long status goes under its row (the error again below, whole)
        for line in terminal_style.with_status(row, visible(status, terminal_style.STATUS_WIDTH).split("; ")):
            print(line)
    if result.interrupted:
        print("fuzz: interrupted; what was found so far is on disk")
    from mcp_tempest.fuzz.differences import is_difference

    # differences between targets after the protocol findings: another kind of news
    for f in sorted(findings, key=is_difference):
        kind = "finding" if f.fails(fail_on) else "observation"
        if is_difference(f):
            compare = f.evidence.case.get("compare") or {}
            print(f"  difference {f.id}: {visible(f.title)} [other: {visible(compare.get('target', ''), NAME_WIDTH)}] "
                  f"x{f.count} -> {f.repro}")
            continue
        where = ", ".join(f.methods or ["-"]) + "; " + ", ".join(f.transports)
        from mcp_tempest.fuzz.findings import probe_text

        probe = f"; probes {probe_text(f)}" if f.probe else ""
        print(f"  {kind} {f.id}: {terminal_style.severity(f.label, on)} {f.rule} {visible(f.title)} "
              f"[{visible(where + probe)}] x{f.count} -> {f.repro}")


def _list_properties() -> int:
    from mcp_tempest.fuzz.properties.base import all_properties

    for name, prop in all_properties().items():
        fresh = f"{prop.fresh_per_example} fresh process(es) per example" if prop.fresh_per_example else "warm process"
        print(f"{name:<10} {prop.title} ({fresh})")
    return 0

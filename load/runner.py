"""`mcp-tempest load`: start the target, run Locust on load/users.py, judge the result.

This process never imports Locust or gevent: it parses the options, starts the server instances
(the embedded reference server by default, or an `http+spawn:` command), checks each answers
`server/discover`, samples their memory from a thread, and runs Locust headless in a subprocess
(with `--processes K`, Locust's own master and forked workers). The Locust side writes the exact
summary.json; this side adds the memory report, the gates and the baseline comparison, prints
the table and exits 0 (clean), 1 (failures, violations, memory growth, a crossed gate or a
regression) or 2 (usage error or unusable target).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import itertools
import math
import os
import re
import shlex
import signal
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

import orjson

from mcp_tempest.fuzz.safe_text import visible
from mcp_tempest.fuzz.verdict_line import final_line, plural
from mcp_tempest.load import capacity
from mcp_tempest.load import compare as compare_mod
from mcp_tempest.load import gates as gates_mod
from mcp_tempest.load import report as report_mod
from mcp_tempest.load.machine import MachineWatch
from mcp_tempest.load.memory import MemorySampler, analyse, describe
from mcp_tempest.load.operations import CAPABILITIES, DEFAULT_MIX, MixError, parse_mix
from mcp_tempest.load.recorder import STOP_GRACE_S
from mcp_tempest.load.summary import (
    consistency,
    describe_never_answered,
    format_table,
    read_json,
    summary_counts,
    wrap_lines,
    write_json,
)
from mcp_tempest.targets import auth_client, extra_headers, ownership, processes, validate, wire
from mcp_tempest.targets.http_deadline import deadline_connection, read_capped
from mcp_tempest.targets.spawn_pool import SpawnPool, free_ports
from mcp_tempest.targets.target_spec import TargetError, TargetSpec, isolated, parse_target, reference_command

USERS_FILE = Path(__file__).with_name("users.py")
PROGRESS_FILE = "progress.jsonl"
LOCUST_BOOT_GRACE_S = 60.0
DEFAULT_MEMORY_THRESHOLD_MB = 64.0


class UsageError(Exception):
    """One line for the user; exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"mcp-tempest load: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="mcp-tempest load",
        description="A Locust load run with interleaved MRTR operations against a Streamable HTTP MCP server.",
    )
    p.add_argument("--target", default=None,
                   help="http://127.0.0.1:PORT/PATH or http+spawn:<command with {port}> "
                        "(default: the embedded reference server)")
    p.add_argument("--users", type=int, default=None,
                   help="closed model: concurrent simulated clients, each waits for its answer (default 10)")
    p.add_argument("--rate", type=float, default=None,
                   help="open model: arrivals per second (requests and whole MRTR operations, by the mix), "
                        "latency timed from each arrival's intended start")
    p.add_argument("--max-in-flight", type=int, default=64,
                   help="open model: cap on arrivals being served at once (default 64)")
    p.add_argument("--find-capacity", action="store_true",
                   help="search the highest open-model rate at which every --slo holds (steps of --step-time)")
    p.add_argument("--slo", action="append", default=[], metavar="OBJECTIVE",
                   help="with --find-capacity: METRIC < VALUE that must hold, e.g. 'p99_ms<50', 'failures<0.1%%'")
    p.add_argument("--start-rate", type=float, default=50.0, help="--find-capacity: first step's rate (default 50)")
    p.add_argument("--rate-factor", type=float, default=2.0, help="--find-capacity: rate multiplier per step (default 2)")
    p.add_argument("--max-rate", type=float, default=20000.0, help="--find-capacity: highest rate tried (default 20000)")
    p.add_argument("--refine", type=int, default=3, help="--find-capacity: bisection steps around the knee (default 3)")
    p.add_argument("--step-time", default="10s", help="--find-capacity: length of each step (default 10s)")
    p.add_argument("--progress-every", type=float, default=3.0,
                   help="seconds between live progress lines (default 3; 0: none)")
    p.add_argument("--spawn-rate", type=float, default=None, help="users started per second (default: all at once)")
    p.add_argument("--run-time", default=None,
                   help="run length, e.g. 20s, 2m, 1m30s (default 30s; with --compare-target 2m, split into rounds)")
    p.add_argument("--mix", default=DEFAULT_MIX, help=f"weighted request mix NAME=W,... (default {DEFAULT_MIX})")
    p.add_argument("--instances", type=int, default=1, help="server instances to start, used round-robin (default 1)")
    p.add_argument("--processes", type=int, default=1,
                   help="Locust processes generating load (>1: Locust master + that many workers)")
    p.add_argument("--out", default=None, help="output directory (default ./tempest-out/load-<timestamp>/)")
    p.add_argument("--check-every", type=int, default=10, help="judge every K-th response with the oracle (0: never)")
    p.add_argument("--fail-on", action="append", default=[], metavar="GATE",
                   help="fail (exit 1) when [NAME:]METRIC OP VALUE holds, e.g. 'p99_ms>50'; repeatable")
    p.add_argument("--baseline", default=None, metavar="FILE", help="an earlier summary.json to compare with")
    p.add_argument("--baseline-margin", default="20%", help="regression margin against --baseline (default 20%%)")
    p.add_argument("--baseline-floor-ms", type=float, default=0.5,
                   help="latency changes smaller than this are never regressions (default 0.5)")
    p.add_argument("--baseline-min-samples", type=int, default=gates_mod.DEFAULT_MIN_SAMPLES,
                   help="a name's p99 is gated against --baseline only with this many samples in both runs "
                        f"(default {gates_mod.DEFAULT_MIN_SAMPLES})")
    p.add_argument("--compare-target", default=None, metavar="OLD",
                   help="the baseline build (any --target form): --target (the candidate) and OLD take turns in "
                        "rounds of --round-time within this run, and the verdict is on candidate/baseline ratios")
    p.add_argument("--compare-margin", default="10%",
                   help="--compare-target: a slowdown (or throughput loss) beyond this fails the run (default 10%%)")
    p.add_argument("--compare-confidence", default="95%",
                   help="--compare-target: confidence of the intervals the verdict rests on (default 95%%)")
    p.add_argument("--round-time", default="2s",
                   help="--compare-target: measured length of each round (default 2s; each round also has a "
                        "warm-up of a quarter of it, at most 1s, that is not measured)")
    p.add_argument("--rate-tolerance", default=f"{gates_mod.DEFAULT_RATE_TOLERANCE * 100:g}%",
                   help="open model: share of the arrivals due that may go unsent before the run fails "
                        f"(default {gates_mod.DEFAULT_RATE_TOLERANCE * 100:g}%%)")
    p.add_argument("--memory-threshold-mb", type=float, default=DEFAULT_MEMORY_THRESHOLD_MB,
                   help=f"server RSS growth that fails the run (default {DEFAULT_MEMORY_THRESHOLD_MB:g})")
    p.add_argument("--allow-remote", action="store_true", help="allow a non-loopback http:// target")
    extra_headers.add_option(p)  # every Locust user's request carries them (load/mcp_client.py)
    auth_client.add_options(p)  # every request carries a valid token of the harness's issuer
    p.add_argument("--isolate-network", action="store_true",
                   help="start each server (the default or http+spawn:) in a network namespace of its own, "
                        "reached through a relay on its loopback port (Linux, root)")
    p.add_argument("--bug", action="append", default=[], metavar="NAME",
                   help="embedded default only: start the reference server with this mutant bug")
    p.add_argument("--path", default="/mcp", help="MCP endpoint path of http+spawn instances (default /mcp)")
    p.add_argument("--timeout", type=float, default=10.0,
                   help="seconds per request, and for each started server to answer (default 10)")
    p.add_argument("--log-level", default="", help="send this logLevel in _meta (servers may stream logs over SSE)")
    p.add_argument("--mrtr-in-flight", type=int, default=4, help="open MRTR operations per user (default 4)")
    p.add_argument("--mrtr-gap", type=int, default=1, help="other requests between two legs (default 1)")
    p.add_argument("--mrtr-tools", default="", help="comma-separated tools to use for MRTR operations")
    p.add_argument("--tools", default="", help="comma-separated tools the users may call (default: every tool)")
    p.add_argument("--seed", type=int, default=0, help="seed of the argument generators (default 0)")
    p.add_argument("--tool-args", metavar="FILE",
                   help="argument values per tool that no generator can guess (an account id, a path that exists): "
                        "JSON or TOML, tool -> argument -> value or list of values, '*' for any tool, as for fuzz "
                        "(default: [tool.mcp-tempest.tool-args] in pyproject.toml, if any)")
    p.add_argument("--raw-samples", default="", metavar="DIR",
                   help="also write every raw request sample here, one file per Locust process (benchmarks)")
    return p


_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_SPANS = re.compile(r"(?:\d+(?:\.\d+)?\s*[hms]\s*)+")
_SPAN = re.compile(r"(\d+(?:\.\d+)?)\s*([hms])")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0}


def parse_duration(text: str, option: str = "--run-time") -> float:
    """'20s', '2m', '1h30m', '1m30s' or plain seconds -> seconds."""
    raw = text.strip().lower()
    if _NUMBER.fullmatch(raw):
        value = float(raw)
    elif raw and _SPANS.fullmatch(raw):
        value = sum(float(n) * _UNIT[u] for n, u in _SPAN.findall(raw))
    else:
        raise UsageError(f"{option} {text!r}: expected e.g. 20s, 2m or 1m30s")
    if value <= 0:
        raise UsageError(f"{option} {text!r} must be positive")
    if not math.isfinite(value) or value > MAX_RUN_S:
        raise UsageError(f"{option} {text!r}: at most {MAX_RUN_S / 86400:g} days")
    return value


def _target(args: argparse.Namespace, workdir: Path) -> TargetSpec:
    spec = _named_target(args, workdir)
    if not getattr(args, "isolate_network", False):
        return spec
    try:
        return isolated(spec)
    except TargetError as exc:
        raise UsageError(str(exc)) from None


def _named_target(args: argparse.Namespace, workdir: Path) -> TargetSpec:
    if args.target is None or not args.target.strip():
        bug_args = [a for name in args.bug for a in ("--bug", name)]
        db = workdir / "reference.sqlite3"
        argv = tuple(reference_command("--transport", "http", "--host", "127.0.0.1", "--port", "{port}",
                                       "--db", str(db), *bug_args))
        return TargetSpec("http+spawn", "embedded reference server" + (f" (--bug {' '.join(args.bug)})"
                          if args.bug else ""), argv=argv, is_default=True)
    if args.bug:
        raise UsageError("--bug applies to the embedded default only (name the mutant in your own --target)")
    try:
        spec = parse_target(args.target, allow_remote=args.allow_remote, spawn_path=args.path)
    except TargetError as exc:
        raise UsageError(str(exc)) from None
    if spec.kind == "stdio":
        raise UsageError("load needs a Streamable HTTP target: http://127.0.0.1:PORT/PATH or http+spawn:<command>")
    if spec.kind == "http" and args.instances != 1:
        raise UsageError("--instances needs a target the harness starts (the default or http+spawn:)")
    return spec


def discover_ok(url: str, timeout: float) -> str | None:
    """None when `url` answers server/discover with a result; otherwise why it is unusable."""
    parts = urlsplit(url)
    msg = wire.build_request("load-preflight", "server/discover", capabilities=CAPABILITIES)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    conn = deadline_connection(parts.scheme, parts.hostname or "127.0.0.1", port, time.monotonic() + timeout)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        headers = auth_client.apply_auth(wire.http_headers(msg) | extra_headers.expanded(), url).wire
        conn.request("POST", path, body=wire.dumps(msg), headers=headers)
        resp = conn.getresponse()
        body = read_capped(resp)  # bounded in bytes and, through the connection, in time
        messages = wire.response_messages(resp.getheader("content-type"), body)
    except (OSError, http.client.HTTPException) as exc:
        return f"{url}: {type(exc).__name__}: {exc}"
    except wire.DecodeError as exc:
        return f"{url}: server/discover answered HTTP {resp.status} with {exc.reason}"
    finally:
        conn.close()
    for m in messages:
        if wire.is_response(m) and isinstance(m.get("result"), dict):
            return None
        if wire.is_response(m) and isinstance(m.get("error"), dict):
            err = m["error"]
            return f"{url}: server/discover failed: HTTP {resp.status}, {err.get('code')} {err.get('message', '')}"
    return f"{url}: server/discover got HTTP {resp.status} without a JSON-RPC result (not a 2026-07-28 server?)"


def _locust_command(args: argparse.Namespace, urls: list[str], out: Path, run_s: float, label: str,
                    rounds: dict[str, Any] | None = None) -> list[str]:
    """Locust's command line; with `rounds` (--compare-target), the rounds loop of load/users.py
    ends the run itself, and Locust's own CSV and HTML (which would hold the last round) are not
    written."""
    users = args.max_in_flight if args.rate else args.users
    spawn_rate = args.spawn_rate if args.spawn_rate else max(1.0, float(users))
    cmd = [
        sys.executable, "-m", "locust", "-f", str(USERS_FILE), "--headless",
        "-u", str(users), "-r", f"{spawn_rate:g}",
        "--host", urls[0], "--mcp-endpoints", ",".join(urls), "--mcp-target-label", label,
        "--mix", args.mix, "--check-every", str(args.check_every), "--mcp-timeout", f"{args.timeout:g}",
        "--mrtr-in-flight", str(args.mrtr_in_flight), "--mrtr-gap", str(args.mrtr_gap),
        "--mcp-seed", str(args.seed), "--mcp-summary", str(out / "summary.json"),
        "--mcp-values", str(args.values_file), "--only-summary",
    ]
    if rounds is None:
        cmd += ["-t", f"{max(1, round(run_s))}s", "--csv", str(out / "locust"), "--html", str(out / "locust.html")]
    else:
        cmd += ["--mcp-rounds", str(rounds["rounds"]), "--mcp-round-time", f"{rounds['round_s']:g}",
                "--mcp-round-warmup", f"{rounds['warmup_s']:g}", "--mcp-rounds-dir", str(out / "rounds"),
                "--mcp-baseline-endpoints", ",".join(rounds["baseline_urls"]),
                "--mcp-baseline-label", rounds["baseline_label"]]
    if args.mrtr_tools:
        cmd += ["--mrtr-tools", args.mrtr_tools]
    if args.tools:
        cmd += ["--mcp-tools", args.tools]
    if args.raw_samples:
        cmd += ["--mcp-raw-samples", str(Path(args.raw_samples).resolve())]
    if args.log_level:
        cmd += ["--mcp-log-level", args.log_level]
    if args.rate:
        cmd += ["--mcp-rate", f"{args.rate / args.processes:g}", "--mcp-rate-total", f"{args.rate:g}"]
    if args.progress_every > 0 or rounds is not None:
        cmd += ["--mcp-progress", str(out / PROGRESS_FILE), "--mcp-progress-every", f"{args.progress_every:g}"]
    if args.processes > 1:
        port = free_ports(1)[0]
        # the master listens on loopback only: its workers are forked here, nobody else may join
        cmd += ["--processes", str(args.processes), "--master-bind-host", "127.0.0.1", "--master-host", "127.0.0.1",
                "--master-bind-port", str(port), "--master-port", str(port), "--expect-workers-max-wait", "30"]
    return cmd


class Terminated(Exception):
    """SIGTERM (or SIGHUP) reached `load`: stop Locust and the servers, then exit 143."""


def _raise_terminated(signum: int, _frame: Any) -> None:
    raise Terminated(signum)


def format_progress(line: dict[str, Any]) -> str:
    """One live progress update, from a line Locust's side appended to progress.jsonl. A window
    with no answer has no latency: it says `0 answered`, never `p99 0.00 ms`."""
    if "round" in line:  # --compare-target: one line per round
        latency = (f"p50 {line['p50_ms']:.3f} ms, p99 {line['p99_ms']:.3f} ms"
                   if isinstance(line.get("p99_ms"), int | float) and line.get("requests") else "0 answered")
        return (f"round {line.get('round')}/{line.get('rounds')} {line.get('build', ''):<9}: "
                f"{line.get('requests', 0)} requests, {line.get('rps', 0):.1f} rps, {latency}, "
                f"{line.get('failures', 0)} failures")
    if "stopping" in line:  # the stop waits for requests still in flight
        return (f"[{line.get('t', 0):>6.1f}s] stopping: {line['stopping']} requests in flight unanswered; "
                f"waiting up to {line.get('wait_s', 0):g}s more (their --timeout) before counting them as timeouts")
    answered = line.get("answered", 1)  # a line without the key predates it: it had answers
    latency = (f"p99 {line['p99_ms']:.2f} ms" if answered and isinstance(line.get("p99_ms"), int | float)
               else "0 answered")
    return (f"[{line.get('t', 0):>6.1f}s] {line.get('requests', 0)} requests, {line.get('rps', 0):.1f} rps, "
            f"{line.get('failures', 0)} failures, {line.get('mrtr_in_flight', 0)} MRTR in flight, {latency}")


class _ProgressTail:
    """Prints the new lines of progress.jsonl: rewritten in place on a terminal, one per line else."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.tty = sys.stdout.isatty()
        self.shown = False

    def poll(self) -> None:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except OSError:
            return
        end = data.rfind(b"\n")
        if end < 0:
            return
        self.offset += end + 1
        for raw in data[: end + 1].splitlines():
            try:
                text = format_progress(orjson.loads(raw))
            except (ValueError, TypeError, AttributeError):
                continue
            if self.tty:
                sys.stdout.write("\r\x1b[2K" + text)
                self.shown = True
            else:
                sys.stdout.write(text + "\n")
            sys.stdout.flush()

    def done(self) -> None:
        self.poll()
        if self.shown:
            sys.stdout.write("\n")
            sys.stdout.flush()


def _run_locust(cmd: list[str], log_path: Path, deadline_s: float, progress: _ProgressTail | None = None) -> int | None:
    """Run Locust as the harness runs servers (`targets.processes.spawn`: its own group, an owner
    tag its forked workers inherit, the parent-death signal, the guardian), so that even a
    SIGKILLed `load` leaves no Locust behind; shows its progress; None when it had to be killed
    at the deadline. A `Terminated` raised meanwhile stops Locust first, then propagates."""
    with open(log_path, "wb") as log:
        try:
            proc = processes.spawn(cmd, pipes=False, output=log.fileno())
        except processes.SpawnError as exc:
            log.write(f"mcp-tempest load: cannot start Locust: {exc}\n".encode())
            return 2
        deadline = time.monotonic() + deadline_s
        try:
            while True:
                status = proc.wait_exit(min(0.5, max(0.0, deadline - time.monotonic())))
                if status is not None:
                    if progress is not None:
                        progress.done()
                    return status
                if progress is not None:
                    progress.poll()
                if time.monotonic() >= deadline:
                    return None
        finally:
            proc.reap(grace=0.0, term_grace=5.0)  # SIGTERM, then SIGKILL, the group and its tagged strays
            proc.close_log()


MAX_TIMEOUT_S = 3600.0
MAX_RUN_S = 7 * 24 * 3600.0
MAX_RATE = 1_000_000.0
MAX_USERS = 100_000


def _finite(name: str, value: float | None, low: float, high: float, *, low_ok: bool = False) -> None:
    """A numeric option must be a finite number in its range: NaN, inf and absurd values are usage errors."""
    if value is None:
        return
    if not math.isfinite(value) or value > high or value < low or (value == low and not low_ok):
        bound = f">= {low:g}" if low_ok else f"> {low:g}"
        raise UsageError(f"{name} {value!r}: expected a finite number {bound} and <= {high:g}")


def _validate(args: argparse.Namespace) -> tuple[float, list[gates_mod.Gate], float, dict[str, Any] | None]:
    """Every option checked before anything starts (sets args.tolerance, the parsed --rate-tolerance)."""
    users_given = args.users is not None
    if args.rate is not None and args.users is not None:
        raise UsageError("--users is the closed model and --rate the open one: give one of them "
                         "(with --rate, --max-in-flight caps the arrivals served at once)")
    if args.users is None:
        args.users = 10
    if not 1 <= args.users <= MAX_USERS:
        raise UsageError(f"--users must be between 1 and {MAX_USERS}")
    if not 1 <= args.max_in_flight <= MAX_USERS:
        raise UsageError(f"--max-in-flight must be between 1 and {MAX_USERS}")
    if not 1 <= args.instances <= 64:
        raise UsageError("--instances must be between 1 and 64")
    if not 1 <= args.processes <= 64:
        raise UsageError("--processes must be between 1 and 64")
    _finite("--spawn-rate", args.spawn_rate, 0.0, MAX_RATE)
    _finite("--timeout", args.timeout, 0.0, MAX_TIMEOUT_S)
    _finite("--rate", args.rate, 0.0, MAX_RATE)
    _finite("--progress-every", args.progress_every, 0.0, 3600.0, low_ok=True)
    _finite("--memory-threshold-mb", args.memory_threshold_mb, 0.0, 1e7)
    _finite("--baseline-floor-ms", args.baseline_floor_ms, 0.0, 1e7, low_ok=True)
    if not 1 <= args.baseline_min_samples <= 10**9:
        raise UsageError("--baseline-min-samples must be between 1 and 10^9")
    if args.run_time is None:
        args.run_time = "2m" if args.compare_target else "30s"
    run_s = parse_duration(args.run_time)
    args.compare_plan = _compare_plan(args, run_s) if args.compare_target is not None else None
    from mcp_tempest.fuzz.tool_args import ToolArgsError, load_tool_args

    try:  # fuzz's loader, so that one file (or pyproject table) serves both commands
        args.tool_args_values = load_tool_args(args.tool_args)
    except ToolArgsError as exc:
        raise UsageError(str(exc)) from None
    try:  # before any process starts: the Locust processes inherit them through the environment
        extra_headers.configure(args.header)
    except extra_headers.HeaderError as exc:
        raise UsageError(str(exc)) from None
    if args.find_capacity:
        if args.rate is not None or users_given:
            raise UsageError("--find-capacity chooses the rates itself: drop --rate and --users")
        if not args.slo:
            raise UsageError("--find-capacity needs at least one --slo, e.g. --slo 'p99_ms<50'")
        _finite("--start-rate", args.start_rate, 0.0, MAX_RATE)
        _finite("--max-rate", args.max_rate, 0.0, MAX_RATE)
        if not (math.isfinite(args.rate_factor) and 1.05 <= args.rate_factor <= 100):
            raise UsageError("--rate-factor must be between 1.05 and 100")
        if not 0 <= args.refine <= 20:
            raise UsageError("--refine must be between 0 and 20")
        try:
            capacity.parse_slos(args.slo)
        except gates_mod.GateError as exc:
            raise UsageError(str(exc).replace("--fail-on", "--slo")) from None
        args.run_time = args.step_time
        parse_duration(args.step_time, "--step-time")
    elif args.slo:
        raise UsageError("--slo needs --find-capacity (gates for one run are --fail-on)")
    try:
        parse_mix(args.mix)
    except MixError as exc:
        raise UsageError(f"--mix: {exc}") from None
    try:
        gates = gates_mod.parse_gates(args.fail_on)
        margin = gates_mod.parse_margin(args.baseline_margin)
        args.tolerance = gates_mod.parse_tolerance(args.rate_tolerance)
    except gates_mod.GateError as exc:
        raise UsageError(str(exc)) from None
    baseline = None
    if args.baseline:
        try:
            baseline = read_json(Path(args.baseline))
        except (OSError, ValueError) as exc:
            raise UsageError(f"--baseline {args.baseline}: cannot read a summary.json ({exc})") from None
        if not isinstance(baseline, dict) or "operations" not in baseline:
            raise UsageError(f"--baseline {args.baseline}: not a load summary.json")
    return run_s, gates, margin, baseline


MIN_ROUNDS = 8
MAX_ROUND_WARMUP_S = 1.0
# Seconds per round for Locust to stop one build's users and start the other's, and to wait for the
# requests in flight at each round's stop (the deadline only)
ROUND_SWITCH_S = 3.0 + STOP_GRACE_S


def _compare_plan(args: argparse.Namespace, run_s: float) -> dict[str, Any]:
    """--compare-target's rounds: how many fit in --run-time, each --round-time plus its warm-up."""
    if not args.compare_target.strip():
        raise UsageError("--compare-target needs the baseline build: http://127.0.0.1:PORT/PATH or http+spawn:<command>")
    clashes = [opt for opt, on in (("--baseline", args.baseline), ("--find-capacity", args.find_capacity),
                                   ("--processes", args.processes > 1)) if on]
    if clashes:
        raise UsageError(f"--compare-target measures both builds in one run of one Locust process: "
                         f"drop {', '.join(clashes)}")
    round_s = parse_duration(args.round_time, "--round-time")
    warmup = min(MAX_ROUND_WARMUP_S, round_s / 4.0)
    rounds = int(run_s // (round_s + warmup)) // 4 * 4  # whole B C C B blocks: each order equally often
    if rounds < MIN_ROUNDS:
        raise UsageError(f"--run-time {args.run_time} holds {rounds} rounds of {round_s:g}s (+{warmup:g}s warm-up); "
                         f"--compare-target needs at least {MIN_ROUNDS} (B C C B twice): raise --run-time to "
                         f"{math.ceil(MIN_ROUNDS * (round_s + warmup))}s or lower --round-time")
    try:
        margin = gates_mod.parse_margin(args.compare_margin, "--compare-margin")
        confidence = gates_mod.parse_margin(args.compare_confidence, "--compare-confidence")
    except gates_mod.GateError as exc:
        raise UsageError(str(exc)) from None
    if margin >= 1.0:
        raise UsageError(f"--compare-margin {args.compare_margin!r}: must be below 100%")
    if not 0.5 <= confidence < 1.0:
        raise UsageError(f"--compare-confidence {args.compare_confidence!r}: expected 50% to 99.9%")
    return {"rounds": rounds, "round_s": round_s, "warmup_s": warmup, "run_s": run_s, "margin": margin,
            "confidence": confidence, "order": compare_mod.round_order(rounds)}


TMP_PREFIX = "mcp-tempest-load-"


def load_main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        run_s, gates, margin, baseline = _validate(args)
        if not args.auth and auth_client.needs_issuer([args.target or ""]):
            raise UsageError("the target command names {issuer}: add --auth")
        # before any process starts: the Locust processes find the issuer through the environment
        auth = auth_client.start(args.auth, args.auth_issuer, announce=lambda line: print(line, file=sys.stderr))
    except (UsageError, auth_client.AuthServerError) as exc:
        print(f"mcp-tempest load: error: {exc}", file=sys.stderr)
        return 2
    try:
        return _load_main(args, run_s, gates, margin, baseline)
    finally:
        if auth is not None:
            auth.close()


def _load_main(args: argparse.Namespace, run_s: float, gates: list[gates_mod.Gate], margin: float,
               baseline: dict[str, Any] | None) -> int:
    with ownership.owned_tempdir(TMP_PREFIX) as tmp:
        try:
            spec = _target(args, Path(tmp))
        except UsageError as exc:
            print(f"mcp-tempest load: error: {exc}", file=sys.stderr)
            return 2
        out = Path(args.out) if args.out else Path("tempest-out") / f"load-{datetime.now():%Y%m%d-%H%M%S}"
        try:  # the one writability check every command shares (targets/validate.py)
            validate.writable_dir(out, "--out")
            out.mkdir(parents=True, exist_ok=True)
        except (validate.InputError, OSError) as exc:
            print(f"mcp-tempest load: error: {exc}", file=sys.stderr)
            return 2
        # in the temporary directory, never under --out: tool args may hold an account id or a token
        args.values_file = Path(tmp) / "values.json"
        args.argument_sources = write_values(args.values_file, spec, getattr(args, "tool_args_values", {}))
        previous = {sig: signal.signal(sig, _raise_terminated) for sig in (signal.SIGTERM, signal.SIGHUP)}
        try:
            if getattr(args, "compare_plan", None) is not None:
                try:
                    old = _target(argparse.Namespace(**{**vars(args), "target": args.compare_target, "bug": []}),
                                  Path(tmp) / "baseline")
                except UsageError as exc:
                    print(f"mcp-tempest load: error: --compare-target: {exc}", file=sys.stderr)
                    return 2
                return _run_compare(args, spec, old, out, gates)
            return _run(args, spec, out, run_s, gates, margin, baseline)
        except Terminated:
            print("mcp-tempest load: terminated; Locust and the servers were stopped", file=sys.stderr)
            return 143
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def write_values(path: Path, spec: TargetSpec, tool_args: dict[str, dict[str, list[Any]]]) -> dict[str, Any]:
    """The users' argument pools, as the fuzz campaign builds them (strategies.value_sources): the
    values the target is started with (an http+spawn command's `--repository /srv/repo`, and a
    folder's first entries) and the user's tool args. Returns what the summary says of them (names
    and counts, no values)."""
    from mcp_tempest.fuzz.campaign import command_line_entries
    from mcp_tempest.strategies.value_sources import ValueSources, command_line_values

    command_line = command_line_entries(command_line_values(spec.argv or (), os.getcwd())) if spec.argv else []
    values = ValueSources(command_line=command_line, user=dict(tool_args))
    write_json(path, values.to_json())
    return {"command_line": len(command_line),
            "tool_args": {tool: sorted(names) for tool, names in sorted(tool_args.items())}}


def _locust_run(args: argparse.Namespace, urls: list[str], out: Path, run_s: float, label: str, *,
                show_progress: bool, rounds: dict[str, Any] | None = None) -> int | None:
    """One Locust run into `out` (its exit status; None when it had to be killed)."""
    with contextlib.suppress(FileNotFoundError):
        (out / "summary.json").unlink()
    with contextlib.suppress(FileNotFoundError):
        (out / PROGRESS_FILE).unlink()
    cmd = _locust_command(args, urls, out, run_s, label, rounds)
    (out / "locust-command.txt").write_text(shlex.join(cmd) + "\n", encoding="utf-8")
    progress = _ProgressTail(out / PROGRESS_FILE) if show_progress and (args.progress_every > 0 or rounds) else None
    return _run_locust(cmd, out / "locust.log", run_s + LOCUST_BOOT_GRACE_S, progress)


def _find_capacity(args: argparse.Namespace, urls: list[str], out: Path, label: str) -> int:
    """Steps of the open model against the same running servers, until an objective breaks."""
    slos = capacity.parse_slos(args.slo)
    step_s = parse_duration(args.step_time)
    print(f"find-capacity: objectives {', '.join(s.text for s in slos)}; steps of {step_s:g}s from "
          f"{args.start_rate:g} arrivals/s (x{args.rate_factor:g}, then {args.refine} refining steps), "
          f"up to {args.max_in_flight} in flight, against {', '.join(urls)}", flush=True)
    print(capacity.HEADER, flush=True)

    def run_step(rate: float) -> dict[str, Any] | None:
        step_out = out / "steps" / f"rate-{rate:g}"
        step_out.mkdir(parents=True, exist_ok=True)
        step_args = argparse.Namespace(**{**vars(args), "rate": rate})
        status = _locust_run(step_args, urls, step_out, step_s, label, show_progress=False)
        if status is None or not (step_out / "summary.json").is_file():
            print(f"mcp-tempest load: error: the step at {rate:g}/s did not finish; see {step_out / 'locust.log'}",
                  file=sys.stderr)
            return None
        summary = read_json(step_out / "summary.json")
        summary["config"] = {"processes": args.processes}  # read by the delivered-rate check
        return summary

    failed: list[float] = []
    numbers = itertools.count(1)

    def run_or_note(rate: float) -> dict[str, Any] | None:
        summary = run_step(rate)
        if summary is None:
            failed.append(rate)
        return summary

    found = capacity.search(run_or_note, slos, tolerance=args.tolerance, start=args.start_rate, factor=args.rate_factor,
                            max_rate=args.max_rate, refine=args.refine,
                            on_step=lambda step: print(capacity.format_row(step.row(), next(numbers)), flush=True))
    report = capacity.report(found, slos, urls=urls, step_s=step_s, incomplete=bool(failed))
    write_json(out / "capacity.json", report)
    (out / "capacity.html").write_text(capacity.html(report), encoding="utf-8")
    print(capacity.conclusion(report))
    print(f"reports: {out / 'capacity.json'}, {out / 'capacity.html'}, {out / 'steps'}/")
    counts = (f"capacity {report['capacity_rate']:g} arrivals/s" if report["capacity_rate"] is not None
              else "capacity not found") + f", {plural(len(found.steps), 'step')}"
    if not found.steps or report["incomplete"]:
        status, reasons = 2, [f"steps at {', '.join(f'{r:g}/s' for r in failed)} did not finish" if failed
                              else "no step ran"]
    elif report["capacity_rate"] is None:
        status, reasons = 1, [f"no step held {', '.join(s.text for s in slos)}"]
    else:
        status, reasons = 0, []
    print(final_line("load", counts, status, reasons))
    return status


def _run(
    args: argparse.Namespace,
    spec: TargetSpec,
    out: Path,
    run_s: float,
    gates: list[gates_mod.Gate],
    margin: float,
    baseline: dict[str, Any] | None,
) -> int:
    pool: SpawnPool | None = None
    sampler: MemorySampler | None = None
    summary_path = out / "summary.json"
    with contextlib.suppress(FileNotFoundError):
        summary_path.unlink()
    try:
        if spec.kind == "http+spawn":
            print(f"starting {args.instances} instance(s) of {spec.text}", flush=True)
            # a started server has --timeout to answer, like any request (not a fixed wait)
            pool = SpawnPool(spec, args.instances, ready_timeout=max(args.timeout, 1.0))
            try:
                pool.start()
            except TargetError as exc:
                return _error(f"unusable target: {exc}")
            urls = pool.urls
        else:
            urls = [spec.url]
        for url in urls:
            problem = discover_ok(url, args.timeout)
            if problem is not None:
                return _error(f"unusable target: {problem}")
        if pool is not None:
            sampler = MemorySampler([p.pid for p in pool.processes if p is not None]).start()
        if args.find_capacity:
            return _find_capacity(args, urls, out, spec.text)
        model = (f"open model, {args.rate:g} arrivals/s, up to {args.max_in_flight} in flight" if args.rate
                 else f"closed model, {args.users} users")
        print(f"load: {model}, for {run_s:g}s against {', '.join(urls)}"
              + (f" with {args.processes} Locust processes" if args.processes > 1 else ""), flush=True)
        watch = MachineWatch().start()
        t_start = time.time()
        status = _locust_run(args, urls, out, run_s, spec.text, show_progress=True)
        t_end = time.time()
        machine = watch.stop()
        if sampler is not None:
            sampler.stop()
    finally:
        if sampler is not None:
            sampler.stop()
        if pool is not None:
            pool.stop()
    if status is None:
        return _error(f"error: Locust did not finish in time; see {out / 'locust.log'}")
    if not summary_path.is_file():
        return _error(f"error: Locust exited with status {status} without a summary; see {out / 'locust.log'}")
    summary = read_json(summary_path)
    summary["config"] = {
        "users": args.users if not args.rate else None, "rate": args.rate, "max_in_flight": args.max_in_flight,
        "run_time_s": run_s, "mix": args.mix, "instances": len(urls),
        "processes": args.processes, "check_every": args.check_every, "endpoints": urls,
        "argument_sources": getattr(args, "argument_sources", {}),
    }
    if sampler is not None:
        load_start = summary.get("started_at") or t_start
        load_end = summary.get("stopped_at") or t_end
        summary["memory"] = analyse(sampler.samples, load_start=load_start, load_end=load_end,
                                    threshold_mb=args.memory_threshold_mb, requests=summary.get("requests", 0),
                                    timeline=summary.get("timeline"), timeline_origin=summary.get("timeline_origin"))
    else:
        summary["memory"] = {"sampled": False}
    results = gates_mod.evaluate(gates, summary)
    summary["gates"] = [{"gate": r.gate.text, "value": r.value, "crossed": r.crossed} for r in results]
    changes = []
    if baseline is not None:
        changes = gates_mod.compare_baseline(summary, baseline, margin=margin, floor_ms=args.baseline_floor_ms,
                                             min_samples=args.baseline_min_samples)
        summary["baseline"] = {
            "file": str(args.baseline), "margin": margin, "floor_ms": args.baseline_floor_ms,
            "min_samples": args.baseline_min_samples,
            "tolerates": gates_mod.describe_noise(margin, args.baseline_floor_ms, args.baseline_min_samples),
            "changes": [{"name": c.name, "metric": c.metric, "before": c.before, "after": c.after,
                         "regression": c.regression, "not_gated": c.not_gated} for c in changes],
            "regressions": sum(c.regression for c in changes),
        }
        hint = baseline_hint(changes, machine)
        if hint:
            summary["baseline"]["hint"] = hint
    summary["machine"] = machine
    summary["consistency"] = consistency(summary)
    delivery = gates_mod.undelivered(summary, args.tolerance)
    if (summary.get("model") or {}).get("kind") == "open":
        summary["model"]["tolerance"] = args.tolerance
        summary["model"]["delivered"] = delivery is None
    reasons = _verdict(summary, results, changes, delivery)
    summary["verdict"] = {"exit_status": 1 if reasons else 0, "reasons": reasons}
    write_json(summary_path, summary)
    (out / "report.html").write_text(report_mod.render(summary), encoding="utf-8")

    print(format_table(summary))
    print(describe(summary["memory"]))
    for r in results:
        print(r.describe())
    if changes:
        print("\n".join(wrap_lines(f"baseline {args.baseline}: "
                                    + gates_mod.describe_noise(margin, args.baseline_floor_ms,
                                                               args.baseline_min_samples))))
        for c in changes:
            print("\n".join(wrap_lines(c.describe(), "  ", "      ")))
        if (summary.get("baseline") or {}).get("hint"):
            print("note: " + summary["baseline"]["hint"])
    for reason in reasons:
        print(f"FAIL: {reason}")
    print(f"reports: {out / 'report.html'}, {summary_path}, {out / 'locust_stats.csv'}, {out / 'locust.html'}")
    status = 1 if reasons else 0
    print(final_line("load", summary_counts(summary), status, reasons))
    return status


def _error(message: str) -> int:
    """A run that could not be made or judged: the one line on stderr, and the verdict line last
    on stdout (exit 2). The message may quote the server (an error's text): shown through safe_text."""
    print(f"mcp-tempest load: {visible(message)}", file=sys.stderr)
    print(final_line("load", "0 requests", 2, [visible(message.removeprefix("error: "))]))
    return 2


def _start_side(spec: TargetSpec, instances: int, timeout: float, pools: list[SpawnPool]) -> list[str]:
    """The URLs of one build: started (and kept in `pools`, to stop) or as given."""
    if spec.kind != "http+spawn":
        return [spec.url]
    print(f"starting {instances} instance(s) of {spec.text}", flush=True)
    pool = SpawnPool(spec, instances, ready_timeout=max(timeout, 1.0))
    pools.append(pool)
    pool.start()
    return pool.urls


def _run_compare(args: argparse.Namespace, spec: TargetSpec, old: TargetSpec, out: Path,
                 gates: list[gates_mod.Gate]) -> int:
    """--compare-target: both builds up for the whole run, taking turns in rounds (one Locust
    process, load/users.py's rounds loop), then the verdict on their ratios (load/compare.py)."""
    plan = dict(args.compare_plan)
    pools: list[SpawnPool] = []
    sampler: MemorySampler | None = None
    rounds_dir = out / "rounds"
    for stale in (out / "summary.json", out / "baseline-summary.json", *rounds_dir.glob("round-*.json")):
        stale.unlink(missing_ok=True)
    watch = MachineWatch()
    try:
        try:
            urls = _start_side(spec, args.instances, args.timeout, pools)
            old_urls = _start_side(old, args.instances, args.timeout, pools)
        except TargetError as exc:
            return _error(f"unusable target: {exc}")
        for url in (*urls, *old_urls):
            problem = discover_ok(url, args.timeout)
            if problem is not None:
                return _error(f"unusable target: {problem}")
        if pools and spec.kind == "http+spawn":
            sampler = MemorySampler([p.pid for p in pools[0].processes if p is not None]).start()
        plan.update(baseline_urls=old_urls, baseline_label=old.text)
        model = (f"open model, {args.rate:g} arrivals/s" if args.rate else f"closed model, {args.users} users")
        print(f"compare: {plan['rounds']} rounds of {plan['round_s']:g}s (+{plan['warmup_s']:g}s warm-up), "
              f"B C C B ..., {model}; candidate (C) {', '.join(urls)}, baseline (B) {', '.join(old_urls)}",
              flush=True)
        watch.start()
        t_start = time.time()
        deadline_s = plan["rounds"] * (plan["round_s"] + plan["warmup_s"] + ROUND_SWITCH_S)
        status = _locust_run(args, urls, out, deadline_s, spec.text, show_progress=True, rounds=plan)
        t_end = time.time()
        machine = watch.stop()
    finally:
        if sampler is not None:
            sampler.stop()
        for pool in pools:
            pool.stop()
    files = sorted(rounds_dir.glob("round-*.json"))
    if status is None or not (out / "summary.json").is_file() or len(files) != plan["rounds"]:
        why = "did not finish in time" if status is None else f"exited with status {status}"
        return _error(f"error: Locust {why} after {len(files)} of {plan['rounds']} rounds; see {out / 'locust.log'}")
    rounds = [read_json(f) for f in files]
    summary = read_json(out / "summary.json")
    baseline = read_json(rounds_dir / "baseline-summary.json") if (rounds_dir / "baseline-summary.json").is_file() \
        else {}
    if (rounds_dir / "baseline-summary.json").is_file():
        (rounds_dir / "baseline-summary.json").replace(out / "baseline-summary.json")
    comparison = compare_mod.compare(plan["order"], rounds, margin=plan["margin"], confidence=plan["confidence"])
    comparison["rounds"] = {"count": plan["rounds"], "round_s": plan["round_s"], "warmup_s": plan["warmup_s"],
                            "run_s": plan["run_s"], "order": plan["order"]}
    comparison["candidate"] = {"target": spec.text, "endpoints": urls, "requests": summary.get("requests", 0),
                               "failures": summary.get("failures", 0), "violations": summary.get("violations", 0)}
    comparison["baseline"] = {"target": old.text, "endpoints": old_urls, "requests": baseline.get("requests", 0),
                              "failures": baseline.get("failures", 0), "violations": baseline.get("violations", 0),
                              "summary": "baseline-summary.json"}
    comparison["machine"] = machine
    comparison["method"] = compare_mod.METHOD
    notes = []
    thin = [r["round"] for r in comparison["per_round"] if r["requests"] < compare_mod.MIN_ROUND_REQUESTS]
    if thin:
        notes.append(f"rounds {', '.join(map(str, thin))} served fewer than {compare_mod.MIN_ROUND_REQUESTS} "
                     "requests: too short to be steady, raise --round-time")
    if machine["busy"]:
        notes.append(f"the machine was busy ({machine['why']}); both builds shared it alike, turn by turn")
    comparison["notes"] = notes
    summary["comparison"] = comparison
    summary["config"] = {
        "users": args.users if not args.rate else None, "rate": args.rate, "max_in_flight": args.max_in_flight,
        "run_time_s": plan["run_s"], "mix": args.mix, "instances": len(urls), "processes": args.processes,
        "check_every": args.check_every, "endpoints": urls, "compare_endpoints": old_urls,
        "argument_sources": getattr(args, "argument_sources", {}),
    }
    if sampler is not None:
        summary["memory"] = analyse(sampler.samples, load_start=summary.get("started_at") or t_start,
                                    load_end=summary.get("stopped_at") or t_end,
                                    threshold_mb=args.memory_threshold_mb, requests=summary.get("requests", 0),
                                    timeline=summary.get("timeline"), timeline_origin=summary.get("timeline_origin"))
    else:
        summary["memory"] = {"sampled": False}
    results = gates_mod.evaluate(gates, summary)
    summary["gates"] = [{"gate": r.gate.text, "value": r.value, "crossed": r.crossed} for r in results]
    summary["consistency"] = consistency(summary)
    delivery = gates_mod.undelivered(summary, args.tolerance)
    reasons = _verdict(summary, results, [], delivery)
    if comparison["verdict"] == compare_mod.REGRESSION:
        reasons.append(f"regression against the baseline build beyond {plan['margin'] * 100:g}% at "
                       f"{plan['confidence'] * 100:g}% confidence: " + ", ".join(comparison["regressions"]))
    summary["verdict"] = {"exit_status": 1 if reasons else 0, "reasons": reasons}
    write_json(out / "summary.json", summary)
    (out / "report.html").write_text(report_mod.render(summary, baseline), encoding="utf-8")
    print(compare_mod.format_comparison(comparison))
    print(describe(summary["memory"]))
    for r in results:
        print(r.describe())
    for reason in reasons:
        print(f"FAIL: {reason}")
    print(f"reports: {out / 'report.html'}, {out / 'summary.json'}, {out / 'baseline-summary.json'}, {rounds_dir}/")
    ratios = ", ".join(f"{label} x{comparison['metrics'][key]['ratio']}"
                       for label, key in (("p50", "p50_ms"), ("p99", "p99_ms"), ("rps", "rps")))
    status = 1 if reasons else 0
    print(final_line("load", f"compare {comparison['verdict']}, {plural(plan['rounds'], 'round')}, {ratios}; "
                     + summary_counts(summary), status, reasons))
    return status


# A --baseline change this large (either way) is more often the machine than the build.
LARGE_CHANGE = 0.5


def baseline_hint(changes: list[gates_mod.Change], machine: dict[str, Any]) -> str:
    """Why a --baseline verdict may be the machine's and not the build's, and what to run instead."""
    why = []
    if machine.get("busy"):
        why.append(f"the machine was busy during this run ({machine['why']})")
    large = [c for c in changes if not c.not_gated and c.before > 0
             and abs(c.after / c.before - 1.0) >= LARGE_CHANGE]
    if large:
        shown = ", ".join(f"{c.name} {c.metric} {c.percent:+.0f}%" for c in large[:3])
        why.append(f"{len(large)} figure(s) changed by {LARGE_CHANGE * 100:g}% or more ({shown})")
    if not why:
        return ""
    return ("; ".join(why) + ". A baseline run made at another time (or on another machine) cannot tell a slower "
            "build from a busier machine: run both builds in the same run with --compare-target OLD "
            "(--target is the candidate), which alternates them in rounds and gives each ratio an interval")


def _verdict(summary: dict[str, Any], results: list[gates_mod.GateResult], changes: list[gates_mod.Change],
             delivery: str | None = None) -> list[str]:
    """Why the run fails (none: it passes), in the words of the last line and summary.json."""
    reasons = []
    if summary.get("consistency"):
        reasons.append("inconsistent figures (a harness bug): " + "; ".join(summary["consistency"]))
    never = describe_never_answered(summary)
    if never:
        reasons.append(never)
    if delivery is not None:
        reasons.append(delivery)
    if summary.get("failures"):
        reasons.append(f"{plural(summary['failures'], 'failed request or operation', 'failed requests or operations')}")
    if summary.get("violations"):
        reasons.append(plural(summary["violations"], "oracle violation"))
    memory = summary.get("memory") or {}
    if memory.get("exceeded"):
        reasons.append(f"server memory grew {memory['growth_mb']:.1f} MB "
                       f"(threshold {memory.get('threshold_mb', 0):g} MB)")
    crossed = [r.why() for r in results if r.crossed]
    if crossed:
        reasons.append("gates crossed: " + ", ".join(crossed))
    regressions = [f"{c.name} {c.metric}" for c in changes if c.regression]
    if regressions:
        reasons.append("regressions against the baseline: " + ", ".join(regressions))
    if not summary.get("requests"):
        reasons.append("no request was made")
    return reasons

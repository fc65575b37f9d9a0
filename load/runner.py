"""`mcp-gauntlet load`: start the target, run Locust on load/users.py, judge the result.

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
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from load import gates as gates_mod
from load.memory import MemorySampler, analyse, describe
from load.operations import CAPABILITIES, DEFAULT_MIX, MixError, parse_mix
from load.summary import format_table, read_json, summary_line, write_json
from targets import validate, wire
from targets.http_deadline import deadline_connection, read_capped
from targets.spawn_pool import SpawnPool, free_ports
from targets.target_spec import TargetError, TargetSpec, parse_target, reference_command

USERS_FILE = Path(__file__).with_name("users.py")
LOCUST_BOOT_GRACE_S = 60.0
DEFAULT_MEMORY_THRESHOLD_MB = 64.0


class UsageError(Exception):
    """One line for the user; exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"mcp-gauntlet load: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="mcp-gauntlet load",
        description="A Locust load run with interleaved MRTR operations against a Streamable HTTP MCP server.",
    )
    p.add_argument("--target", default=None,
                   help="http://127.0.0.1:PORT/PATH or http+spawn:<command with {port}> "
                        "(default: the embedded reference server)")
    p.add_argument("--users", type=int, default=10, help="concurrent simulated clients (default 10)")
    p.add_argument("--spawn-rate", type=float, default=None, help="users started per second (default: all at once)")
    p.add_argument("--run-time", default="30s", help="run length, e.g. 20s, 2m, 1m30s (default 30s)")
    p.add_argument("--mix", default=DEFAULT_MIX, help=f"weighted request mix NAME=W,... (default {DEFAULT_MIX})")
    p.add_argument("--instances", type=int, default=1, help="server instances to start, used round-robin (default 1)")
    p.add_argument("--processes", type=int, default=1,
                   help="Locust processes generating load (>1: Locust master + that many workers)")
    p.add_argument("--out", default=None, help="output directory (default ./gauntlet-out/load-<timestamp>/)")
    p.add_argument("--check-every", type=int, default=10, help="judge every K-th response with the oracle (0: never)")
    p.add_argument("--fail-on", action="append", default=[], metavar="GATE",
                   help="fail (exit 1) when [NAME:]METRIC OP VALUE holds, e.g. 'p99_ms>50'; repeatable")
    p.add_argument("--baseline", default=None, metavar="FILE", help="an earlier summary.json to compare with")
    p.add_argument("--baseline-margin", default="20%", help="regression margin against --baseline (default 20%%)")
    p.add_argument("--baseline-floor-ms", type=float, default=0.5,
                   help="latency changes smaller than this are never regressions (default 0.5)")
    p.add_argument("--memory-threshold-mb", type=float, default=DEFAULT_MEMORY_THRESHOLD_MB,
                   help=f"server RSS growth that fails the run (default {DEFAULT_MEMORY_THRESHOLD_MB:g})")
    p.add_argument("--allow-remote", action="store_true", help="allow a non-loopback http:// target")
    p.add_argument("--bug", action="append", default=[], metavar="NAME",
                   help="embedded default only: start the reference server with this mutant bug")
    p.add_argument("--path", default="/mcp", help="MCP endpoint path of http+spawn instances (default /mcp)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per request (default 10)")
    p.add_argument("--log-level", default="", help="send this logLevel in _meta (servers may stream logs over SSE)")
    p.add_argument("--mrtr-in-flight", type=int, default=4, help="open MRTR operations per user (default 4)")
    p.add_argument("--mrtr-gap", type=int, default=1, help="other requests between two legs (default 1)")
    p.add_argument("--mrtr-tools", default="", help="comma-separated tools to use for MRTR operations")
    p.add_argument("--tools", default="", help="comma-separated tools the users may call (default: every tool)")
    p.add_argument("--seed", type=int, default=0, help="seed of the argument generators (default 0)")
    p.add_argument("--raw-samples", default="", metavar="DIR",
                   help="also write every raw request sample here, one file per Locust process (benchmarks)")
    return p


_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_SPANS = re.compile(r"(?:\d+(?:\.\d+)?\s*[hms]\s*)+")
_SPAN = re.compile(r"(\d+(?:\.\d+)?)\s*([hms])")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0}


def parse_duration(text: str) -> float:
    """'20s', '2m', '1h30m', '1m30s' or plain seconds -> seconds."""
    raw = text.strip().lower()
    if _NUMBER.fullmatch(raw):
        value = float(raw)
    elif raw and _SPANS.fullmatch(raw):
        value = sum(float(n) * _UNIT[u] for n, u in _SPAN.findall(raw))
    else:
        raise UsageError(f"--run-time {text!r}: expected e.g. 20s, 2m or 1m30s")
    if value <= 0:
        raise UsageError(f"--run-time {text!r} must be positive")
    return value


def _target(args: argparse.Namespace, workdir: Path) -> TargetSpec:
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
        conn.request("POST", path, body=wire.dumps(msg), headers=wire.http_headers(msg))
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


def _locust_command(args: argparse.Namespace, urls: list[str], out: Path, run_s: float, label: str) -> list[str]:
    spawn_rate = args.spawn_rate if args.spawn_rate else max(1.0, float(args.users))
    cmd = [
        sys.executable, "-m", "locust", "-f", str(USERS_FILE), "--headless",
        "-u", str(args.users), "-r", f"{spawn_rate:g}", "-t", f"{max(1, round(run_s))}s",
        "--host", urls[0], "--mcp-endpoints", ",".join(urls), "--mcp-target-label", label,
        "--mix", args.mix, "--check-every", str(args.check_every), "--mcp-timeout", f"{args.timeout:g}",
        "--mrtr-in-flight", str(args.mrtr_in_flight), "--mrtr-gap", str(args.mrtr_gap),
        "--mcp-seed", str(args.seed), "--mcp-summary", str(out / "summary.json"),
        "--csv", str(out / "locust"), "--html", str(out / "locust.html"), "--only-summary",
    ]
    if args.mrtr_tools:
        cmd += ["--mrtr-tools", args.mrtr_tools]
    if args.tools:
        cmd += ["--mcp-tools", args.tools]
    if args.raw_samples:
        cmd += ["--mcp-raw-samples", str(Path(args.raw_samples).resolve())]
    if args.log_level:
        cmd += ["--mcp-log-level", args.log_level]
    if args.processes > 1:
        port = free_ports(1)[0]
        # Loopback only: Locust's master would otherwise listen on every interface.
        cmd += ["--processes", str(args.processes), "--master-bind-host", "127.0.0.1", "--master-host", "127.0.0.1",
                "--master-bind-port", str(port), "--master-port", str(port),
                "--expect-workers-max-wait", "30"]
    return cmd


def _run_locust(cmd: list[str], log_path: Path, deadline_s: float) -> int | None:
    """Run Locust in its own process group; None when it had to be killed at the deadline.
    SIGTERM of `load` ends Locust's group too (the `finally` below), instead of leaving it to
    hammer a port whose server is gone."""
    try:
        previous = signal.signal(signal.SIGTERM, _terminated)
    except ValueError:  # not the main thread (load_main called from a test's thread)
        return _wait_locust(cmd, log_path, deadline_s)
    try:
        return _wait_locust(cmd, log_path, deadline_s)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _terminated(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _wait_locust(cmd: list[str], log_path: Path, deadline_s: float) -> int | None:
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            return proc.wait(timeout=deadline_s)
        except subprocess.TimeoutExpired:
            for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, sig)
                try:
                    proc.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
            return None
        finally:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _validate(args: argparse.Namespace) -> tuple[float, list[gates_mod.Gate], float, dict[str, Any] | None]:
    if args.users < 1:
        raise UsageError("--users must be at least 1")
    if args.instances < 1:
        raise UsageError("--instances must be at least 1")
    if args.processes < 1:
        raise UsageError("--processes must be at least 1")
    if args.spawn_rate is not None and args.spawn_rate <= 0:
        raise UsageError("--spawn-rate must be positive")
    try:  # shared checks (targets/validate.py): finite and in range, writable before the run
        validate.seconds(args.timeout, "--timeout")
        validate.seconds(args.spawn_rate, "--spawn-rate", maximum=1e6)
        if args.out:
            validate.writable_dir(args.out, "--out")
    except validate.InputError as exc:
        raise UsageError(str(exc)) from None
    run_s = parse_duration(args.run_time)
    try:
        parse_mix(args.mix)
    except MixError as exc:
        raise UsageError(f"--mix: {exc}") from None
    try:
        gates = gates_mod.parse_gates(args.fail_on)
        margin = gates_mod.parse_margin(args.baseline_margin)
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


def load_main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        run_s, gates, margin, baseline = _validate(args)
    except UsageError as exc:
        print(f"mcp-gauntlet load: error: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="mcp-gauntlet-load-") as tmp:
        try:
            spec = _target(args, Path(tmp))
        except UsageError as exc:
            print(f"mcp-gauntlet load: error: {exc}", file=sys.stderr)
            return 2
        out = Path(args.out) if args.out else Path("gauntlet-out") / f"load-{datetime.now():%Y%m%d-%H%M%S}"
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            print(f"mcp-gauntlet load: error: cannot create {out}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        return _run(args, spec, out, run_s, gates, margin, baseline)


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
            pool = SpawnPool(spec, args.instances)
            try:
                pool.start()
            except TargetError as exc:
                print(f"mcp-gauntlet load: unusable target: {exc}", file=sys.stderr)
                return 2
            urls = pool.urls
        else:
            urls = [spec.url]
        for url in urls:
            problem = discover_ok(url, args.timeout)
            if problem is not None:
                print(f"mcp-gauntlet load: unusable target: {problem}", file=sys.stderr)
                return 2
        if pool is not None:
            sampler = MemorySampler([p.pid for p in pool.processes if p is not None]).start()
        cmd = _locust_command(args, urls, out, run_s, spec.text)
        (out / "locust-command.txt").write_text(shlex.join(cmd) + "\n", encoding="utf-8")
        print(f"load: {args.users} users for {run_s:g}s against {', '.join(urls)}"
              + (f" with {args.processes} Locust processes" if args.processes > 1 else ""), flush=True)
        t_start = time.time()
        status = _run_locust(cmd, out / "locust.log", run_s + LOCUST_BOOT_GRACE_S)
        t_end = time.time()
        if sampler is not None:
            sampler.stop()
    finally:
        if pool is not None:
            pool.stop()
    if status is None:
        print(f"mcp-gauntlet load: error: Locust did not finish in time; see {out / 'locust.log'}", file=sys.stderr)
        return 2
    if not summary_path.is_file():
        print(f"mcp-gauntlet load: error: Locust exited with status {status} without a summary; "
              f"see {out / 'locust.log'}", file=sys.stderr)
        return 2
    summary = read_json(summary_path)
    summary["config"] = {
        "users": args.users, "run_time_s": run_s, "mix": args.mix, "instances": len(urls),
        "processes": args.processes, "check_every": args.check_every, "endpoints": urls,
    }
    if sampler is not None:
        load_start = summary.get("started_at") or t_start
        load_end = summary.get("stopped_at") or t_end
        summary["memory"] = analyse(sampler.samples, load_start=load_start, load_end=load_end,
                                    threshold_mb=args.memory_threshold_mb, requests=summary.get("requests", 0))
    else:
        summary["memory"] = {"sampled": False}
    results = gates_mod.evaluate(gates, summary)
    summary["gates"] = [{"gate": r.gate.text, "value": r.value, "crossed": r.crossed} for r in results]
    changes = []
    if baseline is not None:
        changes = gates_mod.compare_baseline(summary, baseline, margin=margin, floor_ms=args.baseline_floor_ms)
        summary["baseline"] = {
            "file": str(args.baseline), "margin": margin,
            "changes": [{"name": c.name, "metric": c.metric, "before": c.before, "after": c.after,
                         "regression": c.regression} for c in changes],
            "regressions": sum(c.regression for c in changes),
        }
    reasons = _verdict(summary, results, changes)
    summary["verdict"] = {"exit_status": 1 if reasons else 0, "reasons": reasons}
    write_json(summary_path, summary)

    print(format_table(summary))
    print(describe(summary["memory"]))
    for r in results:
        print(r.describe())
    if changes:
        print(f"baseline {args.baseline} (margin {margin * 100:g}%):")
        for c in changes:
            print("  " + c.describe())
    for reason in reasons:
        print(f"FAIL: {reason}")
    print(f"reports: {summary_path}, {out / 'locust_stats.csv'}, {out / 'locust.html'}")
    print(summary_line(summary))
    return 1 if reasons else 0


def _verdict(summary: dict[str, Any], results: list[gates_mod.GateResult], changes: list[gates_mod.Change]) -> list[str]:
    reasons = []
    if summary.get("failures"):
        reasons.append(f"{summary['failures']} failed requests or operations")
    if summary.get("violations"):
        reasons.append(f"{summary['violations']} oracle violations")
    if (summary.get("memory") or {}).get("exceeded"):
        reasons.append(f"server memory grew {summary['memory']['growth_mb']:.1f} MB")
    crossed = [r.gate.text for r in results if r.crossed]
    if crossed:
        reasons.append("gates crossed: " + ", ".join(crossed))
    regressions = [f"{c.name} {c.metric}" for c in changes if c.regression]
    if regressions:
        reasons.append("regressions against the baseline: " + ", ".join(regressions))
    if not summary.get("requests"):
        reasons.append("no request was made")
    return reasons

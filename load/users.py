"""Locust users for MCP 2026-07-28 servers over Streamable HTTP, with interleaved MRTR operations.

Use it with plain Locust:

    locust -f load/users.py --host http://127.0.0.1:PORT/mcp --headless -u 20 -r 20 -t 30s \\
        --mix tools/list=2,tools/call=3,mrtr=4 --mcp-summary out/summary.json

or through `mcp-tempest load`, which starts the target, runs this file in a Locust subprocess and
turns the result into a verdict. Distributed runs use Locust's own modes (`--processes K`, or
`--master` plus `--worker` processes on other machines); the exact statistics of every worker
reach the master in Locust's periodic worker reports and in one final flush when the test stops,
so summary.json on the master holds every sample exactly once.

`--mcp-rate R` switches a process to the open model (load/pacing.py): the users become slots
serving R arrivals per second, each timed from its intended start; `-u` is then the cap on
arrivals in flight. `--mcp-progress FILE` appends a JSON progress line every few seconds.

Everything here runs under gevent: no asyncio, no MCP SDK. The protocol logic is in
`load.operations`, the HTTP exchange in `load.mcp_client`, the numbers in `load.recorder`.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import gevent
import gevent.lock
import orjson
from locust import User, events, task
from locust.runners import MasterRunner, WorkerRunner

from mcp_tempest.load.compare import BASELINE, CANDIDATE, round_order
from mcp_tempest.load.mcp_client import TIMEOUT, McpHttp
from mcp_tempest.load.operations import (
    DEFAULT_MIX,
    Checker,
    MixError,
    Options,
    Session,
    parse_mix,
    warmup_exchanges,
)
from mcp_tempest.load.pacing import Pacer
from mcp_tempest.load.recorder import BACKLOG, BACKLOG_NAME, STOP_GRACE_S, Recorder
from mcp_tempest.load.summary import build_summary, format_table, write_json
from mcp_tempest.strategies.value_sources import ValueSources

log = logging.getLogger("mcp-tempest.load")

FLUSH_MESSAGE = "mcp_tempest_flush"
FINAL_MESSAGE = "mcp_tempest_final"
REPORT_KEY = "mcp_tempest"
STOP_SLACK_S = 0.25  # past a request's own --timeout: its client timer fires first, with its own kind
STOP_NOTICE_S = 0.5  # a wait this long at the stop is said on the progress line
FLUSH_TIMEOUT_S = 15.0 + STOP_GRACE_S + STOP_SLACK_S
CSV_SETTLE_S = 1.2
# Open model: how often _watch_loop notes that the event loop runs, and how long without a note
# counts as the loop being held (Locust's stop() holds it for tens of milliseconds).
LOOP_TICK_NS = 5_000_000
LOOP_HELD_NS = 20_000_000


def _load_judge(warm: bool) -> tuple[Any, str]:
    """The fuzz oracle's pure judge, if it is importable here; the load run works without it.

    The oracle compiles its schema validators on first use, which takes a second or more of
    CPU. Under gevent that would freeze every user mid-request and show up as a latency spike
    in the first seconds of the run, so a process that runs users warms it before any starts.
    """
    try:
        from mcp_tempest.fuzz.oracle import judge_response  # pure rule functions, no asyncio, no locust
    except Exception as exc:  # noqa: BLE001 - a missing or broken oracle only disables checking
        return None, f"unavailable ({type(exc).__name__}: {exc})"
    if not warm:
        return judge_response, "mcp_tempest.fuzz.oracle.judge_response"
    try:
        for request, response in warmup_exchanges():
            judge_response(request, response, http_status=200, headers={"content-type": "application/json"})
    except Exception as exc:  # noqa: BLE001
        return None, f"unusable ({type(exc).__name__}: {exc})"
    return judge_response, "mcp_tempest.fuzz.oracle.judge_response"


def _checking_disabled(argv: list[str]) -> bool:
    """`--check-every 0` on the command line: skip importing and warming the oracle (seconds)."""
    for i, arg in enumerate(argv):
        if arg == "--check-every" and i + 1 < len(argv):
            return argv[i + 1].strip() == "0"
        if arg.startswith("--check-every="):
            return arg.split("=", 1)[1].strip() == "0"
    return False


class _Process:
    """Per-process state shared by the users of one Locust process."""

    def __init__(self) -> None:
        self.recorder = Recorder()
        # Warmed at import: before Locust's runner exists (a worker blocked for seconds misses
        # its heartbeats) and before `--processes` forks (the children inherit the validators).
        # An explicit master runs no users and only needs to know the oracle is importable.
        if _checking_disabled(sys.argv):
            judge, self.oracle = None, "disabled (--check-every 0)"
        else:
            judge, self.oracle = _load_judge(warm="--master" not in sys.argv)
        self.checker = Checker(10, judge)
        self.mrtr_lock = gevent.lock.Semaphore()
        self.probes: dict[str, tuple[list[dict[str, Any]], dict[str, str]]] = {}
        self.user_numbers = itertools.count()
        self.finals: set[str] = set()
        self.raw: list[tuple[str, int]] | None = None
        self.pacer: Pacer | None = None  # open model only (--mcp-rate)
        self.pacer_noted = False  # its arrivals were counted when the run started stopping
        self.busy = 0  # open model: slots serving an arrival now, and their peak
        self.busy_peak = 0
        self.sent = 0  # open model: arrivals a slot began while the run was measured
        self.late = 0  # open model: arrivals taken past --timeout, never sent (backlog timeouts)
        self.loop_seen = 0  # open model: perf_counter_ns when _watch_loop last ran
        self.watch: Any = None  # the greenlet of _watch_loop
        self.cpu_start: tuple[float, float] | None = None  # (process CPU s, wall s) at test start
        self.shared: Any = None  # open model: the session that discovered for all (catalog, argument values)
        self.values: Any = None  # the run's ValueSources (command line, tool args), read once per process
        self.progress: Any = None  # the greenlet writing --mcp-progress
        # --mcp-rounds (`load --compare-target`): the endpoints of the build whose round runs now
        # (None: --mcp-endpoints), the greenlet taking the turns, and each build's rounds merged
        self.endpoints: list[str] | None = None
        self.rounds: Any = None
        self.totals: dict[str, Recorder] = {}
        self.durations: dict[str, float] = {}
        self.due_offset = 0  # open model: arrivals due during the round's warm-up (not measured)


STATE = _Process()


@events.init_command_line_parser.add_listener
def _options(parser: Any) -> None:
    group = parser.add_argument_group("mcp-tempest", "MCP load options (load/users.py)")
    group.add_argument("--mix", default=DEFAULT_MIX,
                       help=f"weighted request mix NAME=W,... (default {DEFAULT_MIX})")
    group.add_argument("--check-every", type=int, default=10,
                       help="judge every K-th response with the fuzz oracle (0: never)")
    group.add_argument("--mcp-endpoints", default="",
                       help="comma-separated MCP endpoint URLs used round-robin (default: --host)")
    group.add_argument("--mcp-summary", default="", help="write the exact summary.json here at the end")
    group.add_argument("--mcp-target-label", default="", help="the target as the user named it")
    group.add_argument("--mcp-timeout", type=float, default=10.0, help="seconds per request")
    group.add_argument("--mrtr-in-flight", type=int, default=4, help="open MRTR operations per user")
    group.add_argument("--mrtr-gap", type=int, default=1, help="other requests between two legs")
    group.add_argument("--mrtr-tools", default="", help="comma-separated tools to use for MRTR operations")
    group.add_argument("--mcp-tools", default="", help="comma-separated tools the users may call (default: all)")
    group.add_argument("--mcp-seed", type=int, default=0, help="seed of the argument generators")
    group.add_argument("--mcp-values", default="",
                       help="argument value pools as JSON (ValueSources: command line, tool args), written by "
                            "`mcp-tempest load`")
    group.add_argument("--mcp-tool-args", default="",
                       help="argument values per tool, JSON or TOML, as fuzz's --tool-args")
    group.add_argument("--mcp-log-level", default="", help="logLevel to send in _meta (may make servers stream SSE)")
    group.add_argument("--mcp-raw-samples", default="",
                       help="directory for every raw sample (benchmarks only)")
    group.add_argument("--mcp-rate", type=float, default=0.0,
                       help="open model: arrivals per second in this process (0: closed model, users loop)")
    group.add_argument("--mcp-rate-total", type=float, default=0.0,
                       help="open model: the whole run's rate, as reported in summary.json (default: --mcp-rate)")
    group.add_argument("--mcp-progress", default="", help="append a JSON progress line to this file every few s")
    group.add_argument("--mcp-progress-every", type=float, default=2.0, help="seconds between progress lines")
    group.add_argument("--mcp-rounds", type=int, default=0,
                       help="alternate two builds in this many rounds, B C C B ... (0: one target, no rounds); "
                            "--mcp-endpoints is the candidate C, --mcp-baseline-endpoints the baseline B")
    group.add_argument("--mcp-baseline-endpoints", default="", help="with --mcp-rounds: the baseline's endpoints")
    group.add_argument("--mcp-baseline-label", default="", help="with --mcp-rounds: the baseline as the user named it")
    group.add_argument("--mcp-round-time", type=float, default=5.0, help="with --mcp-rounds: measured seconds per round")
    group.add_argument("--mcp-round-warmup", type=float, default=1.0,
                       help="with --mcp-rounds: seconds at the start of each round that are not measured")
    group.add_argument("--mcp-rounds-dir", default="",
                       help="with --mcp-rounds: write each round's summary and the baseline's merged one here")


def _opts(environment: Any) -> Any:
    return environment.parsed_options


class ValuesError(ValueError):
    """An argument values file the users cannot read; one line, and the run stops (exit 2)."""


def _values(opts: Any) -> ValueSources:
    """The run's argument pools, read once per process: what `mcp-tempest load` wrote (the target's
    command line, --tool-args), and under plain Locust --mcp-tool-args (fuzz's loader, so one
    file serves both commands)."""
    if STATE.values is not None:
        return STATE.values
    values = ValueSources()
    if opts is not None and opts.mcp_values:
        try:
            values = ValueSources.from_json(orjson.loads(Path(opts.mcp_values).read_bytes()))
        except (OSError, ValueError) as exc:
            raise ValuesError(f"--mcp-values {opts.mcp_values}: {exc}") from None
    if opts is not None and opts.mcp_tool_args:
        from mcp_tempest.fuzz.tool_args import ToolArgsError, load_tool_args

        try:
            values.user = {**values.user, **load_tool_args(opts.mcp_tool_args)}
        except ToolArgsError as exc:
            raise ValuesError(str(exc)) from None
    STATE.values = values
    return values


@events.init.add_listener
def _on_init(environment: Any, **_kw: Any) -> None:
    runner = environment.runner
    opts = _opts(environment)
    # gevent's loop caches "now" and has not run since it was created, before seconds of imports
    # (and the oracle's warm-up); Locust arms its --run-time timer right after this event, and
    # from a stale clock it would fire that many seconds too early.
    gevent.get_hub().loop.update_now()
    if opts is not None:
        try:
            parse_mix(opts.mix)
            _values(opts)
        except (MixError, ValuesError) as exc:
            STATE.values = STATE.values or ValueSources()  # the users started before the quit need none
            sys.stderr.write(f"load: {exc}\n")
            environment.process_exit_code = 2
            if runner is not None:
                gevent.spawn_later(0, runner.quit)
    if opts is not None and opts.mcp_rounds > 0:
        STATE.endpoints = _round_endpoints(opts, round_order(opts.mcp_rounds)[0])
    if isinstance(runner, MasterRunner):
        environment.events.worker_report.add_listener(_on_worker_report)
        runner.register_message(FINAL_MESSAGE, _on_final)
    elif isinstance(runner, WorkerRunner):
        environment.events.report_to_master.add_listener(_on_report_to_master)
        runner.register_message(FLUSH_MESSAGE, _on_flush)


# --- worker side: periodic deltas, then a final flush on request ---


def _on_report_to_master(client_id: str, data: dict[str, Any]) -> None:
    data[REPORT_KEY] = STATE.recorder.drain()


def _on_flush(environment: Any, msg: Any, **_kw: Any) -> None:
    """Stop this worker's users first, so no sample can arrive after the final report."""
    environment.runner.stop()
    _note_backlog()
    _write_raw(environment)
    environment.runner.send_message(FINAL_MESSAGE, STATE.recorder.drain())


# --- master side ---


def _on_worker_report(client_id: str, data: dict[str, Any]) -> None:
    part = data.get(REPORT_KEY)
    if part:
        STATE.recorder.merge_wire(part, source=client_id)


def _on_final(environment: Any, msg: Any, **_kw: Any) -> None:
    STATE.recorder.merge_wire(msg.data or {}, source=msg.node_id)
    STATE.finals.add(msg.node_id)


def _note_backlog() -> None:
    """Open model, when the run starts stopping: the arrivals due, those a slot began (sent) and
    those of them still in flight, how busy the slots got and how much CPU this process spent, so
    every arrival is accounted for and the runner can tell a rate that was delivered from one that
    was not, and say why (CLI: the delivered-rate check). Counted once, at the moment the
    measuring ends, not after the users' teardown (which takes a while, and would count its own
    time as arrivals not sent)."""
    pacer = STATE.pacer
    if pacer is None or STATE.pacer_noted:
        return
    STATE.pacer_noted = True
    counters = STATE.recorder.counters
    now = time.perf_counter_ns()
    if STATE.watch is not None:
        STATE.watch.kill(block=False)
        STATE.watch = None
    # Locust's stop() holds the event loop before it fires test_stopping: arrivals that fell due
    # while it did could not be begun by any slot, so the schedule ends where the loop last ran.
    end = now if now - STATE.loop_seen <= LOOP_HELD_NS else STATE.loop_seen + LOOP_TICK_NS
    counters["open_due"] += max(pacer.due(end) - STATE.due_offset, STATE.sent + STATE.late)
    counters["open_sent"] += STATE.sent
    # sent, their answers cut by the stop: in no figure, so counted here
    counters["open_in_flight"] += STATE.busy
    counters["open_slots_peak"] += STATE.busy_peak
    if STATE.cpu_start is not None:
        cpu, wall = STATE.cpu_start
        counters["open_cpu_ms"] += round((time.process_time() - cpu) * 1000)
        counters["open_wall_ms"] += round((time.monotonic() - wall) * 1000)


def _watch_loop() -> None:
    """Open model: note when the event loop runs. Locust's stop() reads the source of every frame
    of its stack before it fires test_stopping, which holds the loop for tens of milliseconds; an
    arrival that fell due meanwhile could not be begun by any slot, and _note_backlog ends the
    schedule where the loop last ran rather than count it as not sent. A loop busy with our own
    users still runs this every few milliseconds (each unit yields on its socket)."""
    while True:
        STATE.loop_seen = time.perf_counter_ns()
        gevent.sleep(LOOP_TICK_NS / 1e9)


def _progress_loop(path: Path, every: float) -> None:
    """One JSON line per tick: the numbers of the last complete seconds, for the live display."""
    rec = STATE.recorder
    every = max(0.5, every)
    with open(path, "ab", buffering=0) as fh:
        while True:
            gevent.sleep(every)
            now = int(time.time())
            span = max(1, round(every))
            hist, failures = rec.window(now - span, now - 1)
            line = {
                "t": round(time.time() - (rec.started or time.time()), 1),
                "requests": rec.requests,
                "failures": rec.failure_total,
                "rps": round(hist.count / span, 1),
                "answered": hist.count,  # in the window: no answer, no latency (never a p99 of 0)
                "window_failures": failures,
                "mrtr_in_flight": rec.in_flight_total(),
                "p99_ms": hist.percentile_us(99.0) / 1000.0 if hist.count else None,
            }
            fh.write(orjson.dumps(line) + b"\n")


@events.test_start.add_listener
def _on_test_start(environment: Any, **_kw: Any) -> None:
    opts = _opts(environment)
    if not isinstance(environment.runner, WorkerRunner):
        STATE.recorder.started = time.time()
        if opts is not None and opts.mcp_rounds > 0:
            if STATE.rounds is None:  # the first round, started by Locust itself; the others by the loop
                STATE.rounds = gevent.spawn(_rounds_loop, environment)
        elif opts is not None and opts.mcp_progress and STATE.progress is None:
            STATE.progress = gevent.spawn(_progress_loop, Path(opts.mcp_progress), opts.mcp_progress_every)
    if opts is not None and opts.mcp_rate > 0 and not isinstance(environment.runner, MasterRunner):
        STATE.pacer = Pacer(opts.mcp_rate)
        STATE.pacer_noted = False
        STATE.busy = STATE.busy_peak = STATE.sent = STATE.late = STATE.due_offset = 0
        STATE.loop_seen = time.perf_counter_ns()
        STATE.watch = gevent.spawn(_watch_loop)
        STATE.cpu_start = (time.process_time(), time.monotonic())
    STATE.checker.every = opts.check_every if opts is not None else 10
    if opts is not None and opts.mcp_raw_samples:
        STATE.raw = []
        STATE.recorder.raw = STATE.raw


@events.test_stopping.add_listener
def _on_test_stopping(environment: Any, **_kw: Any) -> None:
    runner = environment.runner
    if not isinstance(runner, MasterRunner):
        rec = STATE.recorder
        rec.stopped = rec.stopped or time.time()  # the grace below is not part of the run
        rec.close()  # a worker's or a local run's users are being torn down
        _note_backlog()
        if STATE.progress is not None:  # the windows are over; the wait below says itself
            STATE.progress.kill(block=False)
            STATE.progress = None
        _settle(environment, rec)
        return
    # the measuring ends now; the workers' flush (and their wait for what was in flight) is not in it
    STATE.recorder.stopped = STATE.recorder.stopped or time.time()
    workers = [c.id for c in runner.clients.all]
    for worker in workers:
        runner.send_message(FLUSH_MESSAGE, None, client_id=worker)
    deadline = time.monotonic() + FLUSH_TIMEOUT_S
    while time.monotonic() < deadline and not set(workers) <= STATE.finals:
        gevent.sleep(0.05)
    missing = set(workers) - STATE.finals
    if missing:
        log.warning("no final statistics from %d worker(s): %s", len(missing), ", ".join(sorted(missing)))


def _settle(environment: Any, rec: Recorder) -> None:
    """Wait for the requests the stop caught in flight (each up to its --timeout, all within
    STOP_GRACE_S), while the users still run; then every one still unanswered is a timeout of its
    name. A healthy server answers them in milliseconds, so a clean run loses nothing here."""
    if not rec.at_stop:
        return
    opts = _opts(environment)
    timeout = float(opts.mcp_timeout) if opts is not None else 10.0
    begun = time.perf_counter_ns()
    deadline = rec.stop_deadline_ns(int((timeout + STOP_SLACK_S) * 1e9), int(STOP_GRACE_S * 1e9))
    noticed = False
    while rec.at_stop and time.perf_counter_ns() < deadline:
        if not noticed and time.perf_counter_ns() - begun >= STOP_NOTICE_S * 1e9:
            noticed = True
            _progress_note(environment, {"t": round(time.time() - (rec.started or time.time()), 1),
                                         "stopping": len(rec.at_stop),
                                         "wait_s": round((deadline - time.perf_counter_ns()) / 1e9, 1)})
        gevent.sleep(0.01)
    rec.give_up()


def _progress_note(environment: Any, line: dict[str, Any]) -> None:
    """One extra line on the live progress (a local run's only: a worker's would go nowhere)."""
    opts = _opts(environment)
    if opts is None or not opts.mcp_progress or isinstance(environment.runner, WorkerRunner):
        return
    with contextlib.suppress(OSError), open(opts.mcp_progress, "ab", buffering=0) as fh:
        fh.write(orjson.dumps(line) + b"\n")


@events.test_stop.add_listener
def _on_test_stop(environment: Any, **_kw: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    if STATE.recorder.stopped is None:
        STATE.recorder.stopped = time.time()
    if STATE.progress is not None:
        STATE.progress.kill(block=False)
        STATE.progress = None
    _note_backlog()
    _write_raw(environment)


def _write_raw(environment: Any) -> None:
    opts = _opts(environment)
    if not STATE.raw or opts is None or not opts.mcp_raw_samples:
        return
    folder = Path(opts.mcp_raw_samples)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"raw-{os.getpid()}.tsv", "a", encoding="utf-8") as fh:
        fh.writelines(f"{name}\t{ns}\n" for name, ns in STATE.raw)
    STATE.raw.clear()


@events.quitting.add_listener
def _on_quitting(environment: Any, **_kw: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    opts = _opts(environment)
    rec = STATE.recorder
    if rec.stopped is None:
        rec.stopped = time.time()
    if opts is not None and opts.mcp_rounds > 0:
        _write_totals(environment)
        return
    duration = (rec.stopped - rec.started) if rec.started else 0.0
    label = (opts.mcp_target_label if opts is not None else "") or environment.host or ""
    summary = build_summary(
        rec,
        target=label,
        duration_s=duration,
        check_every=STATE.checker.every,
        oracle=STATE.oracle,
        model=_model(environment),
    )
    if opts is not None and opts.mcp_summary:
        write_json(Path(opts.mcp_summary), summary)
    if opts is None or not opts.mcp_summary:
        print(format_table(summary))
    if opts is not None and getattr(opts, "csv_prefix", None):
        # Locust rewrites its CSV once a second and not again at shutdown; give its writer one more
        # pass so the CSV holds the final numbers, the same ones as summary.json.
        gevent.sleep(CSV_SETTLE_S)


def _model(environment: Any, rec: Recorder | None = None) -> dict[str, Any]:
    """Which load model ran, for the summary: closed (users loop) or open (a fixed arrival rate)."""
    opts = _opts(environment)
    users = getattr(opts, "num_users", None) if opts is not None else None
    if opts is None or opts.mcp_rate <= 0:
        return {"kind": "closed", "users": users}
    counters = (rec or STATE.recorder).counters
    due, sent = counters.get("open_due", 0), counters.get("open_sent", 0)
    backlog = counters.get("open_backlog_timeouts", 0)
    # Every arrival due is in one of these: sent (and then answered in the figures, or in flight
    # at the stop), taken past --timeout (a backlog sample in the figures), or never begun.
    return {
        "kind": "open",
        "rate": opts.mcp_rate_total or opts.mcp_rate,
        "max_in_flight": users,
        "arrivals_due": due,
        "arrivals_sent": sent,
        "in_flight_at_stop": counters.get("open_in_flight", 0),
        "not_started_at_stop": max(0, due - sent - backlog),
        "backlog_timeouts": backlog,
        "slots_busy_peak": counters.get("open_slots_peak", 0),
        "generator_cpu_s": counters.get("open_cpu_ms", 0) / 1000.0,
        "generator_wall_s": counters.get("open_wall_ms", 0) / 1000.0,
    }


# --- rounds: two builds taking turns in one Locust process (`load --compare-target`) ---


def _round_endpoints(opts: Any, side: str) -> list[str]:
    text = opts.mcp_baseline_endpoints if side == BASELINE else opts.mcp_endpoints
    return [u.strip() for u in text.split(",") if u.strip()]


def _fresh_round(opts: Any, side: str) -> None:
    """What one round must not inherit from the one before: its numbers, the other build's
    discovery and probes, and the users' numbering (so every round draws the same arguments:
    the same seed for both builds)."""
    STATE.recorder = Recorder()
    STATE.probes = {}
    STATE.shared = None
    STATE.user_numbers = itertools.count()
    STATE.endpoints = _round_endpoints(opts, side)


def _rounds_loop(environment: Any) -> None:
    """Take the turns: each round starts fresh users against one build, forgets its first
    `--mcp-round-warmup` seconds (connections, discovery, the first calls), measures
    `--mcp-round-time` seconds, stops, and writes its summary; then the other build. Both builds'
    servers stay up throughout (the harness started them once). Quits Locust at the end, so the
    run stops by itself; a round that cannot be written still ends the run."""
    opts = _opts(environment)
    runner = environment.runner
    order = round_order(opts.mcp_rounds)
    folder = Path(opts.mcp_rounds_dir or ".")
    labels = {CANDIDATE: opts.mcp_target_label or opts.mcp_endpoints, BASELINE: opts.mcp_baseline_label
              or opts.mcp_baseline_endpoints}
    STATE.totals = {BASELINE: Recorder(), CANDIDATE: Recorder()}
    STATE.durations = {BASELINE: 0.0, CANDIDATE: 0.0}
    progress = open(opts.mcp_progress, "ab", buffering=0) if opts.mcp_progress else None  # noqa: SIM115
    try:
        for i, side in enumerate(order):
            if i:
                _fresh_round(opts, side)
                runner.start(opts.num_users, opts.spawn_rate)
            gevent.sleep(max(0.0, opts.mcp_round_warmup))
            rec = STATE.recorder
            rec.drain()  # the warm-up's samples and counters, discarded
            rec.started = time.time()
            if STATE.pacer is not None:
                STATE.due_offset = STATE.pacer.due(time.perf_counter_ns())
                STATE.sent = STATE.late = 0
                STATE.busy_peak = STATE.busy
            gevent.sleep(opts.mcp_round_time)
            runner.stop()
            rec.stopped = rec.stopped or time.time()
            duration = rec.stopped - rec.started
            summary = build_summary(rec, target=labels[side], duration_s=duration, check_every=STATE.checker.every,
                                    oracle=STATE.oracle, model=_model(environment, rec))
            summary["round"] = {"index": i + 1, "of": len(order), "build": side}
            write_json(folder / f"round-{i + 1:02d}-{side}.json", summary)
            if progress is not None:
                overall = summary["overall"]
                answered = overall["count"] > 0  # no samples, no latency (never a p99 of 0)
                progress.write(orjson.dumps({"round": i + 1, "rounds": len(order), "build": side,
                                             "requests": overall["count"], "failures": summary["failures"],
                                             "rps": round(overall["count"] / max(duration, 1e-9), 1),
                                             "p50_ms": overall["p50_ms"] if answered else None,
                                             "p99_ms": overall["p99_ms"] if answered else None}) + b"\n")
            total = STATE.totals[side]
            total.started = total.started or rec.started
            total.stopped = rec.stopped
            total.merge_wire(rec.drain())
            STATE.durations[side] += duration
    except Exception as exc:  # noqa: BLE001 - reported, and the run still ends (exit 2 from the harness)
        sys.stderr.write(f"load: the rounds stopped: {type(exc).__name__}: {exc}\n")
        environment.process_exit_code = 2
    finally:
        if progress is not None:
            progress.close()
        gevent.spawn_later(0, runner.quit)


def _write_totals(environment: Any) -> None:
    """Each build's rounds merged (exactly: the recorders' histograms add up): the candidate's as
    --mcp-summary, the baseline's beside the rounds."""
    opts = _opts(environment)
    labels = {CANDIDATE: opts.mcp_target_label or opts.mcp_endpoints, BASELINE: opts.mcp_baseline_label
              or opts.mcp_baseline_endpoints}
    paths = {CANDIDATE: Path(opts.mcp_summary) if opts.mcp_summary else None,
             BASELINE: Path(opts.mcp_rounds_dir or ".") / "baseline-summary.json"}
    for side, total in STATE.totals.items():
        path = paths[side]
        if path is None or total.started is None:
            continue
        summary = build_summary(total, target=labels[side], duration_s=STATE.durations.get(side, 0.0),
                                check_every=STATE.checker.every, oracle=STATE.oracle,
                                model=_model(environment, total))
        write_json(path, summary)


# --- the user ---


class McpUser(User):
    """One simulated MCP client: discovers the target, then runs the weighted mix with MRTR.

    A plain `User`: its HTTP is `McpHttp` (load/mcp_client.py), so no Locust HTTP client is built.
    Closed model: it loops, one step after another. Open model (`--mcp-rate`): it is one of the
    slots that serve the process's arrival schedule, so the users are the cap on units in flight.
    """

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        self.session: Session | None = None
        self.http: McpHttp | None = None
        self.ready = False

    def on_start(self) -> None:
        opts = _opts(self.environment)
        number = next(STATE.user_numbers)
        worker = getattr(self.environment.runner, "worker_index", 0) or 0
        endpoints = [u.strip() for u in (opts.mcp_endpoints.split(",") if opts else []) if u.strip()]
        endpoints = STATE.endpoints or endpoints or [self.host]
        timeout = float(opts.mcp_timeout) if opts else 10.0
        self.timeout_ns = int(timeout * 1e9)
        http = self.http = McpHttp(endpoints, timeout=timeout, start=number + worker)
        options = Options(
            mix=parse_mix(opts.mix if opts else DEFAULT_MIX),
            max_in_flight=max(1, opts.mrtr_in_flight) if opts else 4,
            gap=max(0, opts.mrtr_gap) if opts else 1,
            mrtr_tools=tuple(t.strip() for t in opts.mrtr_tools.split(",") if t.strip()) if opts else (),
            log_level=(opts.mcp_log_level or None) if opts else None,
            tools=tuple(t.strip() for t in opts.mcp_tools.split(",") if t.strip()) if opts else (),
        )
        seed = (opts.mcp_seed if opts else 0) * 1_000_003 + worker * 10_007 + number
        self.session = Session(
            http.post, STATE.recorder, options, rng=random.Random(seed), fire=self._fire, checker=STATE.checker,
            values=_values(opts),
        )
        self._discover()

    def _discover(self) -> None:
        session = self.session
        assert session is not None
        opts = _opts(self.environment)
        if opts is not None and opts.mcp_rate > 0:
            # Open model: the users are slots serving one arrival schedule, not separate clients,
            # so one of them discovers for all; a burst of every slot's discovery at the start
            # would otherwise be the run's worst second.
            with STATE.mrtr_lock:
                if STATE.shared is None and self._discover_own(session, locked=True):
                    STATE.shared = session
                if STATE.shared is None:
                    self.ready = False
                    return
            session.catalog, session.args = STATE.shared.catalog, STATE.shared.args
            session.set_mix()
            self.ready = True
            return
        self.ready = self._discover_own(session)

    def _discover_own(self, session: Session, *, locked: bool = False) -> bool:
        if not session.discover():
            return False
        key = ",".join(sorted(t["name"] for t in session.catalog.tools))
        # one probe per process; the other users wait for its answer (`locked`: we hold the lock)
        with contextlib.nullcontext() if locked else STATE.mrtr_lock:
            if key not in STATE.probes:
                STATE.probes[key] = session.probe_tools()
        session.catalog.mrtr_tools, session.catalog.excluded = STATE.probes[key]
        STATE.recorder.excluded_tools.update(session.catalog.excluded)
        STATE.recorder.list_cuts.update(session.catalog.cuts)
        STATE.recorder.mrtr_tools.update(t["name"] for t in session.catalog.mrtr_tools)
        session.set_mix()
        return True

    def _fire(self, request_type: str, name: str, ms: float, length: int, exc: Exception | None) -> None:
        if STATE.recorder.closed:
            return  # not recorded either: Locust's reports and summary.json count the same samples
        self.environment.events.request.fire(
            request_type=request_type,
            name=name,
            response_time=ms,
            response_length=length,
            exception=exc,
            context={},
        )

    @task
    def step(self) -> None:
        if not self.ready:
            gevent.sleep(1.0)  # the target did not answer discovery; try again, slowly
            self._discover()
            return
        assert self.session is not None
        pacer = STATE.pacer
        if pacer is None:
            self.session.step()
            return
        slot = pacer.next_slot()
        now = time.perf_counter_ns()
        if slot > now:
            gevent.sleep((slot - now) / 1e9)
        elif now - slot > self.timeout_ns:
            # behind schedule by more than a client would wait: a timeout, without sending
            late_us = (now - slot) // 1000
            STATE.recorder.record(BACKLOG_NAME, late_us, kind=BACKLOG, failure=TIMEOUT)
            if not STATE.recorder.closed:
                STATE.recorder.count("open_backlog_timeouts")
                STATE.late += 1
            return
        if not STATE.recorder.closed:  # begun after the stop: in no count (its samples are not kept)
            STATE.sent += 1
        STATE.busy += 1
        STATE.busy_peak = max(STATE.busy_peak, STATE.busy)
        try:
            self.session.run_unit(slot)
        finally:
            STATE.busy -= 1

    def on_stop(self) -> None:
        if self.session is not None:
            self.session.abandon()
        if self.http is not None:
            self.http.close()

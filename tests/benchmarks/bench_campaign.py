"""Benchmark: how much of a fresh process's start-up does a fresh-process campaign still pay?

Measured in one run, on the same server command:
  bare loop   N times: spawn the server, send one request, read the reply, end the process;
  spawned     a fresh-process property (`history`: every example talks to a process that
              has served nothing, next to a warm one) for N examples through the campaign
              runner, with the oracle judging every example, every process spawned
              (`--no-fork-server`: the pool only overlaps each start-up with an example);
  forked      the same with the fork server (targets/fork_server.py), where it applies.
The ratios against the bare loop are the figures of merit: spawned >= 1.0 means the pool hides
start-up behind the examples; forked >= 10 on the Python SDK server is the fork server's aim.
Why 200 examples by default: a server with a bug pays once for shrinking it (on the Python SDK
server about 40 executions, each on fresh processes), and at 60 examples that one shrink made
two fifths of the forked run's executions (9.4x forked, 0.80x spawned per example, against 16.0x
and 1.12x at 200); a nightly campaign runs thousands of examples, so the longer run is the one
that says what a user gets. The bare loop's rate does not depend on the length, so it is timed
over at most 60 rounds.
Each run also says where its time went per example (executions, fresh processes, harness CPU,
server CPU) and per fresh process: a bare round is one process, while an example of a server
whose bug fires often takes two or three (each failure is confirmed on fresh processes), so the
per-process ratio is what the pool and the fork server themselves achieve; exit 0 needs the
spawned pool at >= 1.0 per example and per process, and the same findings forked and spawned.

    python tests/benchmarks/bench_campaign.py [--examples N] [--bare-rounds N] [--target T] [--nightly]
    python tests/benchmarks/bench_campaign.py --target "stdio:python tests/servers/sdk_server.py"

--nightly also runs the 2,000-example campaign over every property and both transports on the
reference server and requires that it finds nothing. The last line is the one-line summary.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from mcp_tempest.fuzz.campaign import StoreSink, prepare_target
from mcp_tempest.fuzz.findings import FindingStore
from mcp_tempest.fuzz.job import Job, run_job
from mcp_tempest.fuzz.properties.base import all_properties
from mcp_tempest.targets import fork_server, wire
from mcp_tempest.targets.endpoints import StdioEndpoint, open_endpoint
from mcp_tempest.targets.stdio_driver import start_stdio
from mcp_tempest.targets.target_spec import parse_target
from mcp_tempest.targets.transcript import Transcript


def bare_loop(argv: list[str], n: int) -> float:
    """Examples per second of spawn -> one request -> reply -> end, n times, one at a time."""
    started = time.monotonic()
    for i in range(n):
        conn = start_stdio(Transcript("bare", "stdio"), argv, timeout=60.0)
        try:
            reply = conn.request(wire.build_request(i, "server/discover"))
            if reply is None:
                raise SystemExit(f"bare loop: no reply from {argv!r}")
        finally:
            conn.close()
    return n / (time.monotonic() - started)


@dataclass
class Spent:
    """Where one campaign's time went: counted over the timed run only."""

    examples: int
    findings: int
    executions: int  # examples plus shrink candidates, confirmations and replays
    processes: int  # fresh processes the pool handed out
    wall: float
    harness_cpu: float  # this process, every thread
    server_cpu: float  # the server processes reaped during the run (forked or spawned)

    def per_example(self) -> str:
        n = max(self.examples, 1)
        per_proc = self.server_cpu / max(self.processes, 1) * 1e3
        return (f"per example {self.wall / n * 1e3:.0f} ms wall: {self.executions / n:.2f} executions, "
                f"{self.processes / n:.2f} fresh processes, harness CPU {self.harness_cpu / n * 1e3:.0f} ms, "
                f"server CPU {self.server_cpu / n * 1e3:.0f} ms ({per_proc:.0f} ms per process)")


def campaign(target: str, n: int, out: Path, *, fork: bool) -> Spent:
    """The `history` property for n examples, and where its time went."""
    if fork:
        os.environ.pop(fork_server.DISABLE_VAR, None)
    else:
        os.environ[fork_server.DISABLE_VAR] = "1"
    spec = parse_target(target)
    prepared = prepare_target(spec, timeout=20.0)  # start-up on a busy machine
    store = FindingStore(out, target=spec.text, seed=1)
    endpoint = open_endpoint(spec, timeout=20.0)
    assert isinstance(endpoint, StdioEndpoint), "a stdio: target"
    prop = all_properties()["history"]
    job = Job("history", spec.transport, spec.text, n, None, 10.0, 1)
    try:
        # Warm-up outside the clock: the oracle's schemas and the strategies compile once per process.
        warm = Job("history", spec.transport, spec.text, 2, None, 1.0, 2)
        run_job(warm, prop, endpoint, prepared.context(), StoreSink(FindingStore(out / "warmup", target=spec.text,
                                                                             seed=2), None),
                database=None, timeout=20.0)
        taken = endpoint.fresh_taken
        cpu0, children0, started = time.process_time(), _children_cpu(), time.monotonic()
        run = run_job(job, prop, endpoint, prepared.context(), StoreSink(store, None), database=None, timeout=20.0)
        took, cpu = time.monotonic() - started, time.process_time() - cpu0
        taken = endpoint.fresh_taken - taken
    finally:
        endpoint.close()  # reaps what the run started, so their CPU is counted below
    return Spent(run.examples, len(store.findings), run.examples + run.shrinks + run.replays, taken, took, cpu,
                 _children_cpu() - children0)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def nightly(out: Path) -> tuple[int, int]:
    """The 2,000-example campaign over every property and both transports on the reference server."""
    from mcp_tempest.fuzz.cli import main

    status = main(["fuzz", "--max-examples", "2000", "--seed", "20260728", "--out", str(out), "--no-database",
                   "--progress", "never"])
    index = (out / "findings.json").read_bytes()
    import orjson

    data = orjson.loads(index)
    return status, len(data["findings"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200, help="examples per campaign (default 200)")
    parser.add_argument("--bare-rounds", type=int, default=60, help="rounds of the bare loop (default 60)")
    parser.add_argument("--target", default=None, help="a stdio: target (default: the reference server)")
    parser.add_argument("--nightly", action="store_true", help="also run the 2,000-example reference campaign")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-campaign-") as tmp:
        tmp_path = Path(tmp)
        target = args.target or "stdio:" + " ".join(
            [sys.executable, "-m", "mcp_tempest.targets.reference", "--transport", "stdio", "--db", str(tmp_path / "db.sqlite3")])
        argv = list(parse_target(target).argv)
        rounds = max(1, min(args.bare_rounds, args.examples))
        bare = bare_loop(argv, rounds)
        print(f"bare loop: {bare:.2f} spawns+requests per second ({rounds} rounds)")
        spawned = campaign(target, args.examples, tmp_path / "out-spawned", fork=False)
        print(f"spawned:   {spawned.examples / spawned.wall:.2f} fresh-process examples per second "
              f"({spawned.examples} examples of `history`, {spawned.findings} findings)\n    {spawned.per_example()}")
        forked = campaign(target, args.examples, tmp_path / "out-forked", fork=True)
        print(f"forked:    {forked.examples / forked.wall:.2f} fresh-process examples per second "
              f"({forked.examples} examples of `history`, {forked.findings} findings)\n    {forked.per_example()}")
        eps, spawned_eps = forked.examples / forked.wall, spawned.examples / spawned.wall
        findings, forked_findings = spawned.findings, forked.findings
        ratio = eps / bare
        # A bare round is one process; an example of a server whose bug fires often takes two or
        # three (a failure is confirmed on fresh ones), so per fresh process is the pool's own figure.
        per_proc = {k: r.processes / r.wall / bare for k, r in (("forked", forked), ("spawned", spawned))}
        print(f"per fresh process: bare {1e3 / bare:.0f} ms, spawned {spawned.wall / spawned.processes * 1e3:.0f} ms "
              f"({per_proc['spawned']:.2f}x), forked {forked.wall / forked.processes * 1e3:.0f} ms "
              f"({per_proc['forked']:.2f}x)")
        night = ""
        ok = per_proc["spawned"] >= 1.0 and spawned_eps / bare >= 1.0 and findings == forked_findings
        if args.target is None:
            ok = ok and findings == 0
        if args.nightly:
            status, nightly_findings = nightly(tmp_path / "nightly")
            night = f", nightly 2000-example campaign: exit {status}, {nightly_findings} findings"
            ok = ok and status == 0
        print(f"bench_campaign: per example forked/bare = {ratio:.2f}, spawned/bare = {spawned_eps / bare:.2f} "
              f"({eps:.2f}, {spawned_eps:.2f} vs {bare:.2f} examples/s; aim forked >= 10 on the SDK server, "
              f"spawned >= 1.0); per fresh process {per_proc['forked']:.1f}x forked, {per_proc['spawned']:.2f}x spawned "
              f"({forked.processes / max(forked.examples, 1):.2f} processes per example, server CPU "
              f"{forked.server_cpu / max(forked.processes, 1) * 1e3:.0f} ms per forked process); findings "
              f"{forked_findings} forked vs {findings} spawned{night}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

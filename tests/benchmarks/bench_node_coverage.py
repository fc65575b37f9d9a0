"""Benchmark: what measuring a Node target's function coverage (NODE_V8_COVERAGE) costs a campaign.

The same `mcp-tempest fuzz --max-examples N --seed 1 --no-database` (every property) on the same
Node server, once with `--no-coverage` and once as the default (every server process writes V8's
coverage; the harness parses it after the campaign), timed wall to wall as separate commands,
alternating so a machine growing busier weighs on both alike. The figure of merit is
measured / plain; the aim is at most 1.3x. Then, apart from the campaign, what the parsing alone
costs: `--processes` fresh stdio processes ended by closing stdin, their data parsed once, in
milliseconds per process (V8 writes every script a process ran, node internals and
node_modules included, so each file is large).

    python tests/benchmarks/bench_node_coverage.py [--examples 100] [--rounds 1] [--processes 20]
           [--target "stdio:node tests/servers/ts_server.mjs"]

Needs `bash .ci/install-servers.sh` (Node >= 22, the npm packages). The last line is the one-line summary.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from servers.catalog import TS_SDK, node_binary, npm_packages_installed  # noqa: E402 - after the path tweak

from mcp_tempest.targets import wire  # noqa: E402
from mcp_tempest.targets.code_coverage import plan_coverage  # noqa: E402
from mcp_tempest.targets.endpoints import coverage_env  # noqa: E402
from mcp_tempest.targets.node_coverage import NodeCoveragePlan, collect_node  # noqa: E402
from mcp_tempest.targets.stdio_driver import StdioPool  # noqa: E402
from mcp_tempest.targets.target_spec import parse_target  # noqa: E402
from mcp_tempest.targets.transcript import Transcript  # noqa: E402


def one_campaign(target: str, examples: int, out: Path, measured: bool) -> tuple[float, int, dict]:
    """Seconds, wall to wall, examples run, and reach.code."""
    argv = [sys.executable, "-m", "mcp_tempest.fuzz.cli", "fuzz", "--target", target, "--max-examples",
            str(examples), "--seed", "1", "--no-database", "--out", str(out), "--progress", "never"]
    if not measured:
        argv.append("--no-coverage")
    t0 = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=3600, cwd=ROOT)
    seconds = time.monotonic() - t0
    if done.returncode not in (0, 1):
        raise SystemExit(f"bench_node_coverage: campaign exit {done.returncode}: {done.stderr[-600:]}")
    index = json.loads((out / "findings.json").read_text())
    return seconds, int(index["examples"]), index.get("reach", {}).get("code", {})


def parse_cost(target: str, processes: int, tmp: Path) -> tuple[float, float, int]:
    """Milliseconds to parse one process's data, its size in MB, and how many processes wrote."""
    plan = plan_coverage(parse_target(target), [], tmp / "parse")
    if not isinstance(plan, NodeCoveragePlan):
        raise SystemExit(f"bench_node_coverage: not a Node target: {target}")
    with StdioPool(plan.spec, 1, env=coverage_env(plan.spec)) as pool:
        for rid in range(processes):
            conn = pool.take(Transcript("bench", "stdio"), refill=rid + 1 < processes)
            try:
                conn.request(wire.build_request(rid, "tools/list"), timeout=30)
            finally:
                conn.close()
    size = sum(p.stat().st_size for p in plan.data_dir.glob("*.json")) / 1e6
    t0 = time.monotonic()
    reach = collect_node(plan)
    seconds = time.monotonic() - t0
    wrote = max(reach.processes, 1)
    return 1000 * seconds / wrote, size / wrote, reach.processes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="")
    ap.add_argument("--examples", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--processes", type=int, default=20)
    args = ap.parse_args()
    if not args.target:
        if node_binary() is None or not npm_packages_installed():
            raise SystemExit("bench_node_coverage: run bash .ci/install-servers.sh first (Node >= 22, npm packages)")
        args.target = TS_SDK.stdio_target()
    plain: list[float] = []
    measured: list[float] = []
    code: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            seconds, n, _ = one_campaign(args.target, args.examples, Path(tmp) / f"plain-{r}", False)
            plain.append(seconds)
            print(f"round {r + 1}: plain {seconds:.1f} s ({n} examples)", flush=True)
            seconds, n, code = one_campaign(args.target, args.examples, Path(tmp) / f"measured-{r}", True)
            measured.append(seconds)
            print(f"round {r + 1}: measured {seconds:.1f} s ({n} examples), function coverage "
                  f"{code.get('percent', 'n/a')}% {code.get('reason', '')}", flush=True)
        per_process_ms, per_process_mb, wrote = parse_cost(args.target, args.processes, Path(tmp))
    print(f"parsing: {per_process_ms:.0f} ms and {per_process_mb:.2f} MB of V8 data per process "
          f"({wrote} of {args.processes} processes wrote)")
    ratio = statistics.median(measured) / statistics.median(plain)
    print(f"bench_node_coverage: measured/plain wall time {ratio:.2f}x (aim <= 1.3x) over {args.rounds} round(s) of "
          f"{args.examples} examples; function coverage {code.get('percent', 'n/a')}%; parsing "
          f"{per_process_ms:.0f} ms/process")
    return 0 if ratio <= 1.3 else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark of the load generator, measured in one run (not collected by pytest).

(a) Our Locust users against `wrk` on the same endpoint and payload: tools/list on one reference
    server instance, the same number of connections, the same duration. The ratio says how much
    of the server's capacity a Python load generator can drive (aim: >= 0.5).
(b) The reference server against the official Python SDK server (`mcp==2.3.0`,
    tests/servers/sdk_server.py), one instance each, under the same mix with MRTR operations:
    throughput and p99 (aim: >= 3x the throughput at a lower p99).
(c) Our p99 per operation against the exact p99 of the raw samples of the same run (aim: within
    1%), with Locust's own p99 for the same names beside it, to show why we keep our own.

The machine is shared with whatever else runs on it, so (a) alternates wrk and ours for several
rounds and compares medians. `--pin` puts the servers on CPU 0 and every generator (wrk and
ours alike) on the other CPUs.

Usage: python tests/benchmarks/bench_load.py [--duration 10] [--users 10] [--rounds 3] [--pin]
Needs `wrk` on PATH (Debian: apt-get install wrk). Ends with one summary line.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from targets import wire  # noqa: E402
from targets.spawn_pool import SpawnPool  # noqa: E402
from targets.target_spec import parse_target  # noqa: E402

SDK_SERVER = ROOT / "tests" / "servers" / "sdk_server.py"
STATE_KEY = "mcp-gauntlet-bench-shared-state-key-0123456789"
MIX = "tools/list=2,tools/call=3,resources/read=2,prompts/get=1,mrtr=4"
COMMON_TOOLS = "create_event,echo"  # the tools both servers offer


def lua_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def wrk_rps(url: str, seconds: int, connections: int, workdir: Path) -> float:
    """wrk POSTing the very request our users send for tools/list (body and headers)."""
    msg = wire.build_request(1, "tools/list", {}, capabilities={"elicitation": {"form": {}}})
    headers = wire.http_headers(msg)
    script = workdir / "tools_list.lua"
    lines = ['wrk.method = "POST"', f"wrk.body = {lua_string(wire.dumps(msg).decode())}"]
    lines += [f"wrk.headers[{lua_string(k)}] = {lua_string(v)}" for k, v in headers.items()]
    script.write_text("\n".join(lines) + "\n")
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", str(script), url],
                         capture_output=True, text=True, timeout=seconds + 30, check=True).stdout
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        raise SystemExit(f"wrk got {non2xx.group(1)} error responses:\n{out}")
    return float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))


def load_run(url: str, out: Path, seconds: int, users: int, extra: list[str]) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "load", "--target", url, "--users", str(users), "--run-time", f"{seconds}s",
         "--out", str(out), *extra],
        cwd=out.parent, capture_output=True, text=True, timeout=seconds + 120,
    )
    if proc.returncode != 0:
        raise SystemExit(f"load run against {url} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr}")
    return json.loads((out / "summary.json").read_text())


def pin(pool: SpawnPool, enabled: bool) -> None:
    """Server processes on CPU 0, this process (and so every generator it starts) on the rest."""
    cpus = sorted(os.sched_getaffinity(0))
    if not enabled or len(cpus) < 2:
        return
    for proc in pool.processes:
        if proc is not None:
            os.sched_setaffinity(proc.pid, {cpus[0]})
    os.sched_setaffinity(0, set(cpus[1:]))


def unpin() -> None:
    os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))


def exact_p99_ms(samples_ns: list[int]) -> float:
    ordered = sorted(samples_ns)
    return ordered[math.ceil(len(ordered) * 0.99 - 1e-9) - 1] / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per measurement (default 10)")
    parser.add_argument("--users", type=int, default=10, help="users / connections (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating wrk/ours rounds for (a) (default 3)")
    parser.add_argument("--pin", action="store_true", help="pin servers to CPU 0, generators to the others")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("bench_load: wrk not found (apt-get install wrk)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp_name:
        tmp = Path(tmp_name)
        ref_spec = parse_target(f"http+spawn:{sys.executable} -m targets.reference --transport http "
                                f"--port {{port}} --db {tmp / 'ref.sqlite3'}")
        sdk_spec = parse_target(f"http+spawn:{sys.executable} {SDK_SERVER} --transport http --port {{port}} "
                                f"--state-key {STATE_KEY}")

        with SpawnPool(ref_spec, 1) as ref:
            pin(ref, args.pin)
            url = ref.urls[0]
            # (a) wrk and our users on tools/list, same endpoint, same connections, alternating
            # (a single-threaded Python client serialises its users' work, so the same generator
            # with 3x the users is measured too: more requests in flight while it works)
            wrks, ourss, ours3 = [], [], []
            for i in range(args.rounds):
                wrks.append(wrk_rps(url, args.duration, args.users, tmp))
                for users, into in ((args.users, ourss), (3 * args.users, ours3)):
                    run = load_run(url, tmp / f"a{i}-{users}", args.duration, users,
                                   ["--mix", "tools/list=1", "--check-every", "0"])
                    into.append(run["operations"]["tools/list"]["rps"])
            wrk, ours, ours_more = statistics.median(wrks), statistics.median(ourss), statistics.median(ours3)
            print(f"(a) tools/list, {args.rounds} rounds x {args.duration}s, rps per round:")
            print(f"    wrk, {args.users} connections:  {' '.join(f'{x:6.0f}' for x in wrks)}  median {wrk:.0f}")
            print(f"    ours, {args.users} users:       {' '.join(f'{x:6.0f}' for x in ourss)}  median {ours:.0f}"
                  f"  ratio {ours / wrk:.2f} (aim >= 0.5)")
            print(f"    ours, {3 * args.users} users:       {' '.join(f'{x:6.0f}' for x in ours3)}  median "
                  f"{ours_more:.0f}  ratio {ours_more / wrk:.2f}")
            # (b, reference half) + (c): the mix, with every raw sample kept
            raw = tmp / "raw"
            ref_mix = load_run(url, tmp / "b-ref", args.duration, args.users,
                               ["--mix", MIX, "--tools", COMMON_TOOLS, "--mrtr-tools", "create_event",
                                "--check-every", "0", "--raw-samples", str(raw)])
        unpin()
        with SpawnPool(sdk_spec, 1, ready_timeout=60) as sdk:
            pin(sdk, args.pin)
            sdk_mix = load_run(sdk.urls[0], tmp / "b-sdk", args.duration, args.users,
                               ["--mix", MIX, "--tools", COMMON_TOOLS, "--mrtr-tools", "create_event",
                                "--check-every", "0"])
        unpin()
        speedup = ref_mix["rps"] / sdk_mix["rps"]
        ref_p99, sdk_p99 = ref_mix["overall"]["p99_ms"], sdk_mix["overall"]["p99_ms"]
        print(f"(b) mix {MIX} (tools {COMMON_TOOLS}), {args.users} users, one instance each:")
        for label, s in (("reference", ref_mix), ("python-sdk", sdk_mix)):
            print(f"    {label:<10} {s['rps']:8.1f} rps  p50 {s['overall']['p50_ms']:7.2f} ms  "
                  f"p99 {s['overall']['p99_ms']:7.2f} ms  MRTR ops {s['mrtr']['operations']}  "
                  f"failures {s['failures']}")
        print(f"    throughput {speedup:.1f}x, p99 {ref_p99:.2f} vs {sdk_p99:.2f} ms (aim >= 3x at a lower p99)")

        # (c) exactness: summary p99 vs the raw samples' p99, and Locust's p99 vs the same
        samples: dict[str, list[int]] = defaultdict(list)
        for f in raw.glob("raw-*.tsv"):
            for line in f.read_text().splitlines():
                name, ns = line.split("\t")
                samples[name].append(int(ns))
        locust = {r["Name"]: r for r in csv.DictReader((tmp / "b-ref" / "locust_stats.csv").open())
                  if r["Type"] == "POST"}
        ours_err = locust_err = 0.0
        print("(c) p99 per name (>= 200 samples): exact from raw samples / ours / Locust's")
        for name, values in sorted(samples.items()):
            if len(values) < 200:
                continue
            exact = exact_p99_ms(values)
            mine = ref_mix["operations"][name]["p99_ms"]
            theirs = float(locust[name]["99%"]) if name in locust else float("nan")
            e1, e2 = abs(mine - exact) / exact, abs(theirs - exact) / exact
            ours_err, locust_err = max(ours_err, e1), max(locust_err, e2)
            print(f"    {name:<34} {exact:9.3f} {mine:9.3f} ({e1 * 100:.3f}%) {theirs:7.0f} ({e2 * 100:.1f}%)")
        print(f"    max error: ours {ours_err * 100:.3f}% (aim <= 1%), Locust's {locust_err * 100:.1f}%")

    ok = ours / wrk >= 0.5 and speedup >= 3 and ref_p99 < sdk_p99 and ours_err <= 0.01
    print(f"bench_load: wrk ratio {ours / wrk:.2f} ({ours_more / wrk:.2f} with 3x users), reference vs sdk {speedup:.1f}x rps at p99 "
          f"{ref_p99:.1f} vs {sdk_p99:.1f} ms, p99 error {ours_err * 100:.3f}% (Locust {locust_err * 100:.1f}%)"
          f" -> {'all aims met' if ok else 'SOME AIMS MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

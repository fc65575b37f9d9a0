"""Benchmark of the load generator, measured in one run (not collected by pytest).

(a) Our Locust users against `wrk` on the same endpoint and payload: tools/list on one reference
    server instance, the same number of connections, the same duration. The ratio says how much
    of the server's capacity a Python load generator can drive (aim: >= 0.5).
(b) The reference server against the official Python SDK server (`mcp==2.3.0`,
    tests/servers/sdk_server.py), one instance each, under the same mix with MRTR operations:
    throughput and p99 (aim: >= 3x the throughput at a lower p99).
(d) CPU per request of the generator, on tools/list against the same reference instance with the
    same connections: our Locust users (`load/users.py`), plain Locust `FastHttpUser` posting the
    same body and headers, and `wrk`. Locust's CPU is read from /proc while it runs and its request
    count from its per-second history, over the steady middle of the run (start-up excluded); wrk's
    from its rusage. Aim: ours <= plain FastHttpUser.
(c) Our p99 per operation against the exact p99 of the raw samples of the same run (aim: within
    1%), with Locust's own p99 for the same names beside it, to show why we keep our own.

The machine is shared with whatever else runs on it, so (a) alternates wrk and ours for several
rounds and compares medians. `--pin` puts the servers on CPU 0 and every generator (wrk and
ours alike) on the other CPUs.

Usage: python tests/benchmarks/bench_load.py [--duration 10] [--users 10] [--rounds 3] [--pin]
Needs `wrk` on PATH: as root on Debian it installs it (apt-get install wrk), otherwise it names it
and exits 2. Ends with one summary line.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mcp_tempest.targets import wire  # noqa: E402
from mcp_tempest.targets.spawn_pool import SpawnPool  # noqa: E402
from mcp_tempest.targets.target_spec import parse_target  # noqa: E402

SDK_SERVER = ROOT / "tests" / "servers" / "sdk_server.py"
STATE_KEY = "mcp-tempest-bench-shared-state-key-0123456789"
MIX = "tools/list=2,tools/call=3,resources/read=2,prompts/get=1,mrtr=4"
COMMON_TOOLS = "create_event,echo"  # the tools both servers offer
CPU_MIN_SECONDS = 8  # (d) reads a steady middle: 2 s after the first request to 1 s before the end


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


PLAIN_LOCUSTFILE = """
from locust import FastHttpUser, task

BODY = {body!r}
HEADERS = {headers!r}


class PlainUser(FastHttpUser):
    @task
    def tools_list(self):
        self.client.post("", data=BODY, headers=HEADERS)
"""


def ensure_wrk() -> bool:
    """wrk on PATH, installed with apt-get when we are root on Debian; False when it is not there."""
    if shutil.which("wrk"):
        return True
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("bench_load: installing wrk (apt-get install wrk)", file=sys.stderr)
        subprocess.run(["apt-get", "update", "-qq"], check=False)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=False,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    return shutil.which("wrk") is not None


def wrk_cpu(url: str, seconds: int, connections: int, workdir: Path) -> tuple[float, float]:
    """(CPU microseconds per request, rps) of wrk, from its rusage and its request count."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    msg = wire.build_request(1, "tools/list", {}, capabilities={"elicitation": {"form": {}}})
    script = workdir / "tools_list.lua"
    lines = ['wrk.method = "POST"', f"wrk.body = {lua_string(wire.dumps(msg).decode())}"]
    lines += [f"wrk.headers[{lua_string(k)}] = {lua_string(v)}" for k, v in wire.http_headers(msg).items()]
    script.write_text("\n".join(lines) + "\n")
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", str(script), url],
                         capture_output=True, text=True, timeout=seconds + 30, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu * 1e6 / max(1, requests), float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))


def locust_cpu(locustfile: Path, url: str, seconds: int, users: int, out: Path, extra: list[str]) -> tuple[float, float]:
    """(CPU microseconds per request, rps) of one Locust process over the steady middle of its run."""
    import psutil

    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "-u", str(users), "-r", str(users),
           "-t", f"{seconds}s", "--host", url, "--csv", str(out / "l"), "--csv-full-history", "--only-summary",
           *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=out)
    ps = psutil.Process(proc.pid)
    cpu: list[tuple[float, float]] = []  # (epoch, cpu seconds)
    while proc.poll() is None:
        try:
            t = ps.cpu_times()
            cpu.append((time.time(), t.user + t.system))
        except psutil.Error:
            break
        time.sleep(0.2)
    history = [r for r in csv.DictReader((out / "l_stats_history.csv").open()) if r["Name"] == "Aggregated"]
    points = [(float(r["Timestamp"]), int(r["Total Request Count"])) for r in history if int(r["Total Request Count"])]
    # the steady middle: from 2 s after the first request to 1 s before the last history line
    first, last = points[0][0] + 2, points[-1][0] - 1
    window = [(t, n) for t, n in points if first <= t <= last]
    if len(window) < 2:
        raise SystemExit(f"bench_load: run too short to measure CPU ({locustfile.name})")
    (t0, n0), (t1, n1) = window[0], window[-1]

    def cpu_at(t: float) -> float:
        return min(cpu, key=lambda c: abs(c[0] - t))[1]

    return (cpu_at(t1) - cpu_at(t0)) * 1e6 / max(1, n1 - n0), (n1 - n0) / (t1 - t0)


def cpu_per_request(url: str, seconds: int, users: int, workdir: Path) -> dict[str, tuple[float, float]]:
    msg = wire.build_request(1, "tools/list", {}, capabilities={"elicitation": {"form": {}}})
    plain = workdir / "plain_locustfile.py"
    plain.write_text(PLAIN_LOCUSTFILE.format(body=wire.dumps(msg).decode(), headers=wire.http_headers(msg)))
    users_file = ROOT / "load" / "users.py"
    return {
        "ours": locust_cpu(users_file, url, seconds, users, workdir / "d-ours",
                           ["--mix", "tools/list=1", "--check-every", "0"]),
        "FastHttpUser": locust_cpu(plain, url, seconds, users, workdir / "d-plain", []),
        "wrk": wrk_cpu(url, seconds, users, workdir),
    }


def load_run(url: str, out: Path, seconds: int, users: int, extra: list[str]) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_tempest.load", "--target", url, "--users", str(users), "--run-time", f"{seconds}s",
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


def sdk_unavailable() -> str:
    """Why (b) cannot run the official Python SDK server here, or "" when it can."""
    probe = subprocess.run([sys.executable, "-c", "import mcp.server"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        return (f"the official Python SDK (`mcp`) is not importable by {sys.executable} "
                "(pip install -e '.[test]' installs it)")
    return ""


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
    if not ensure_wrk():
        print("bench_load: needs wrk on PATH (Debian: apt-get install wrk; https://github.com/wg/wrk)",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp_name:
        tmp = Path(tmp_name)
        ref_spec = parse_target(f"http+spawn:{sys.executable} -m mcp_tempest.targets.reference --transport http "
                                f"--port {{port}} --db {tmp / 'ref.sqlite3'}")
        sdk_spec = parse_target(f"http+spawn:{sys.executable} {SDK_SERVER} --transport http --port {{port}} "
                                f"--state-key {STATE_KEY}")

        with SpawnPool(ref_spec, 1) as ref:
            pin(ref, args.pin)
            url = ref.urls[0]
            # (a) wrk and our users on tools/list, same endpoint, same connections, alternating
            # (a single-threaded Python client serialises its users' work, so the same generator
            # with 3x the users is measured too: more requests in flight while it works)
            # (and with a Locust worker per CPU, as `--processes` lets a user run it)
            procs = len(os.sched_getaffinity(0))
            wrks, ourss, ours3, oursp = [], [], [], []
            for i in range(args.rounds):
                wrks.append(wrk_rps(url, args.duration, args.users, tmp))
                for users, into, extra in ((args.users, ourss, []), (3 * args.users, ours3, []),
                                           (args.users, oursp, ["--processes", str(procs)])):
                    if into is oursp and procs < 2:
                        continue
                    run = load_run(url, tmp / f"a{i}-{users}-{len(extra)}", args.duration, users,
                                   ["--mix", "tools/list=1", "--check-every", "0", *extra])
                    into.append(run["operations"]["tools/list"]["rps"])
            wrk, ours, ours_more = statistics.median(wrks), statistics.median(ourss), statistics.median(ours3)
            ours_procs = statistics.median(oursp) if oursp else math.nan
            print(f"(a) tools/list, {args.rounds} rounds x {args.duration}s, rps per round:")
            print(f"    wrk, {args.users} connections:  {' '.join(f'{x:6.0f}' for x in wrks)}  median {wrk:.0f}")
            print(f"    ours, {args.users} users:       {' '.join(f'{x:6.0f}' for x in ourss)}  median {ours:.0f}"
                  f"  ratio {ours / wrk:.2f} (aim >= 0.5)")
            print(f"    ours, {3 * args.users} users:       {' '.join(f'{x:6.0f}' for x in ours3)}  median "
                  f"{ours_more:.0f}  ratio {ours_more / wrk:.2f}")
            if oursp:
                print(f"    ours, {args.users} users, {procs} processes: {' '.join(f'{x:6.0f}' for x in oursp)}  median "
                      f"{ours_procs:.0f}  ratio {ours_procs / wrk:.2f}")
            # (d) CPU per request: ours, plain FastHttpUser, wrk; same endpoint, payload, connections
            # the steady middle leaves out 3 s of each run, so (d) needs a few seconds more than that
            cpu_seconds = max(args.duration, CPU_MIN_SECONDS)
            cpu = cpu_per_request(url, cpu_seconds, args.users, tmp)
            print(f"(d) CPU per request on tools/list, {args.users} connections, {cpu_seconds}s runs "
                  "(steady middle of each):")
            for label, (us, rps) in cpu.items():
                print(f"    {label:<13} {us:7.1f} us CPU/request at {rps:7.0f} rps")
            ours_cpu, plain_cpu, wrk_cpu_us = cpu["ours"][0], cpu["FastHttpUser"][0], cpu["wrk"][0]
            print(f"    ours / FastHttpUser {ours_cpu / plain_cpu:.2f} (aim <= 1), ours / wrk {ours_cpu / wrk_cpu_us:.1f}")
            # (b, reference half) + (c): the mix, with every raw sample kept
            raw = tmp / "raw"
            ref_mix = load_run(url, tmp / "b-ref", args.duration, args.users,
                               ["--mix", MIX, "--tools", COMMON_TOOLS, "--mrtr-tools", "create_event",
                                "--check-every", "0", "--raw-samples", str(raw)])
        unpin()
        ref_p99 = ref_mix["overall"]["p99_ms"]
        print(f"(b) mix {MIX} (tools {COMMON_TOOLS}), {args.users} users, one instance each:")
        sdk_missing = sdk_unavailable()
        if sdk_missing:
            print(f"    python-sdk skipped: {sdk_missing}")
            speedup, sdk_p99, peer = math.nan, math.nan, f"reference vs sdk skipped ({sdk_missing})"
            rows = [("reference", ref_mix)]
        else:
            with SpawnPool(sdk_spec, 1, ready_timeout=60) as sdk:
                pin(sdk, args.pin)
                sdk_mix = load_run(sdk.urls[0], tmp / "b-sdk", args.duration, args.users,
                                   ["--mix", MIX, "--tools", COMMON_TOOLS, "--mrtr-tools", "create_event",
                                    "--check-every", "0"])
            unpin()
            speedup, sdk_p99 = ref_mix["rps"] / sdk_mix["rps"], sdk_mix["overall"]["p99_ms"]
            peer = f"reference vs sdk {speedup:.1f}x rps at p99 {ref_p99:.1f} vs {sdk_p99:.1f} ms"
            rows = [("reference", ref_mix), ("python-sdk", sdk_mix)]
        for label, s in rows:
            print(f"    {label:<10} {s['rps']:8.1f} rps  p50 {s['overall']['p50_ms']:7.2f} ms  "
                  f"p99 {s['overall']['p99_ms']:7.2f} ms  MRTR ops {s['mrtr']['operations']}  "
                  f"failures {s['failures']}")
        if not sdk_missing:
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

    peer_ok = bool(sdk_missing) or (speedup >= 3 and ref_p99 < sdk_p99)
    ok = ours / wrk >= 0.5 and peer_ok and ours_err <= 0.01 and ours_cpu <= plain_cpu
    print(f"bench_load: CPU/request ours {ours_cpu:.0f} us, FastHttpUser {plain_cpu:.0f} us, wrk {wrk_cpu_us:.0f} us; "
          f"wrk ratio {ours / wrk:.2f} ({ours_more / wrk:.2f} with 3x users), {peer}, "
          f"p99 error {ours_err * 100:.3f}% (Locust {locust_err * 100:.1f}%)"
          f" -> {'all aims met' if ok else 'SOME AIMS MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

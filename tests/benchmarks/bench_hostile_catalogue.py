"""Harness peak memory and time for `catalogue` and a 10-example `fuzz` against each hostile list
of issue 30, next to the 300 MB the harness may use whatever a server lists.

Why: a catalogue is the server's to write. An endless `nextCursor` with 12,000 tools of 1 KB a
page once took `catalogue` to 2.7 GB; 150,000 tiny tools in one page to 592 MB. Each case runs
tests/hostile/hostile_list.py as the target, once under `mcp-tempest catalogue` and once under
`mcp-tempest fuzz --max-examples 10 --seed 1 --properties valid,lists --no-coverage` (the two
properties that receive the whole list in every example, three to six times in a `lists` one;
with the default properties ten examples all go to framing), each in a fresh process. The
harness's peak is its own (ru_maxrss of the process running the CLI, read as it exits; a fuzz
worker process, if any, is sampled from /proc), never the target's. Exit status 0 or 1 is an
answer; 2 or more, or a timeout, is marked.

Usage: python tests/benchmarks/bench_hostile_catalogue.py [--quick]
(--quick: the same cases at a tenth of the size, where a size is what the case is about.)
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOSTILE_LIST = ROOT / "tests" / "hostile" / "hostile_list.py"
BUDGET_MB = 300
TIMEOUT_S = 900
NAME = "a\x1b[2Jb\x1b]0;pwned\x07c\r\nFAKE LINE: 0 findings\u202ed\u200be"

# The CLI in this process, then its own peak, written where the benchmark reads it.
RUN = textwrap.dedent(
    """
    import os, resource, sys
    from mcp_tempest.fuzz.cli import main
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    with open(os.environ["BENCH_PEAK_FILE"], "w") as f:
        f.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
    sys.exit(code)
    """
)


def cases(quick: bool) -> list[tuple[str, list[str], list[str]]]:
    """(name, hostile_list.py options, extra catalogue options) for each hostile list."""
    k = 10 if quick else 1
    return [
        ("endless cursor, 12,000 x 1 KB a page", ["--tools", str(12000 // k), "--page", str(12000 // k),
                                                  "--desc-bytes", "1000", "--cursor", "endless"], []),
        ("endless cursor, --max-pages 10000", ["--tools", str(12000 // k), "--page", str(12000 // k),
                                               "--desc-bytes", "1000", "--cursor", "endless"],
         ["--max-pages", "10000"]),
        ("cursor repeats forever", ["--tools", "3", "--cursor", "repeat"], []),
        (f"{100_000 // k:,} tools", ["--tools", str(100_000 // k)], []),
        (f"{150_000 // k:,} tiny tools, one page", ["--tools", str(150_000 // k)], []),
        (f"one {15 // k if k == 1 else 1.5} MB description", ["--tools", "1", "--desc-bytes", str(15_000_000 // k)], []),
        # over the 16 MiB frame cap either way: the case is the cap, not the size
        ("one 50 MB description (over the cap)" if not quick else "one 17 MiB description (over the cap)",
         ["--tools", "1", "--desc-bytes", str(50_000_000 if not quick else 17 * 2**20)], []),
        ("inputSchema nested 500 deep", ["--tools", "3", "--depth", "500"], []),
        ("inputSchema nested 200 deep", ["--tools", "3", "--depth", "200"], []),
        ("names with ESC[2J / OSC / CRLF / bidi", ["--tools", "3", "--name", NAME, "--description", NAME], []),
        ("drifting catalogue", ["--tools", "3", "--drift"], []),
    ]


def _worker_peak(pid: int, stop: threading.Event, found: list[float]) -> None:
    """The largest VmHWM of the CLI's multiprocessing workers (the harness's, not the targets')."""
    while not stop.is_set():
        for child in _children(pid):
            try:
                cmd = Path(f"/proc/{child}/cmdline").read_bytes()
                if b"multiprocessing" not in cmd:
                    continue
                for line in Path(f"/proc/{child}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        found.append(int(line.split()[1]) / 1024)
            except OSError:
                continue
        stop.wait(0.05)


def _children(pid: int) -> list[int]:
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(k) for k in kids]


def run_case(args: list[str], out: Path) -> tuple[float, float, str]:
    """(peak MB, seconds, exit status as text) of one CLI run."""
    peak_file = out.with_suffix(".peak")
    env = {**os.environ, "BENCH_PEAK_FILE": str(peak_file)}
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", RUN, *args, "--out", str(out)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stop, workers = threading.Event(), []
    sampler = threading.Thread(target=_worker_peak, args=(proc.pid, stop, workers), daemon=True)
    sampler.start()
    try:
        code = str(proc.wait(timeout=TIMEOUT_S))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        code = f"timeout {TIMEOUT_S}s"
    seconds = time.monotonic() - started
    stop.set()
    sampler.join()
    own = int(peak_file.read_text()) / 1024 if peak_file.exists() else 0.0
    return max([own, *workers]), seconds, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the cases at a tenth of their size")
    quick = parser.parse_args().quick
    rows: list[tuple[str, str, float, float, str]] = []
    print(f"{'case':42} {'command':9} {'peak MB':>8} {'seconds':>8}  exit", flush=True)
    with tempfile.TemporaryDirectory(prefix="tempest-bench-hostile-") as tmp:
        for i, (name, options, extra) in enumerate(cases(quick)):
            target = "stdio:" + shlex.join([sys.executable, str(HOSTILE_LIST), *options])
            for command, args in (
                ("catalogue", ["catalogue", "--target", target, *extra]),
                ("fuzz", ["fuzz", "--target", target, "--max-examples", "10", "--seed", "1", "--progress", "never",
                          "--properties", "valid,lists", "--no-coverage"]),
            ):
                peak, seconds, code = run_case(args, Path(tmp) / f"{i}-{command}")
                rows.append((name, command, peak, seconds, code))
                flag = "" if code in ("0", "1") else "  <- not an answer"
                print(f"{name:42} {command:9} {peak:8.0f} {seconds:8.1f}  {code}{flag}", flush=True)
    worst = max(rows, key=lambda r: r[2])
    within = sum(1 for r in rows if r[2] <= BUDGET_MB)
    answered = sum(1 for r in rows if r[4] in ("0", "1"))
    print(f"bench_hostile_catalogue{' --quick' if quick else ''}: {within}/{len(rows)} runs within {BUDGET_MB} MB, "
          f"worst peak {worst[2]:.0f} MB = {worst[2] / BUDGET_MB:.2f}x the bound ({worst[1]}: {worst[0]}), "
          f"{answered}/{len(rows)} answered with exit 0 or 1, slowest {max(r[3] for r in rows):.0f} s")


if __name__ == "__main__":
    main()

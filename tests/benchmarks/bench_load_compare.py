"""Release-length sweep of `load --compare-target` (not collected by pytest; minutes).

(a) K runs of two identical builds (the reference server against itself, each on its own store),
    beside two CPU-burning processes: how often is one called a regression (aim: never), and how
    often settled ("no regression") rather than inconclusive.
(b) S runs of a build 10 ms slower per tool call (`serve --tool-delay-ms 10`) against the
    reference: how often is it caught (aim: every time).

Both measured in this one run, on this machine, with the options a release check would use.

Usage: python tests/benchmarks/bench_load_compare.py [--runs 5] [--slow-runs 2] [--run-time 60s]
       [--round-time 2s] [--burners 2]. Ends with one summary line.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def reference(db: Path, *extra: str) -> str:
    return (f"http+spawn:{sys.executable} -m mcp_tempest.targets.reference --transport http --port {{port}} "
            f"--db {db} {' '.join(extra)}").strip()


def one_run(folder: Path, candidate: str, opts: argparse.Namespace) -> tuple[int, dict]:
    out = folder / "out"
    proc = subprocess.run([sys.executable, "-m", "mcp_tempest.load", "--progress-every", "0", "--out", str(out),
                           "--target", candidate, "--compare-target", reference(folder / "old.sqlite3"),
                           "--run-time", opts.run_time, "--round-time", opts.round_time],
                          capture_output=True, text=True, timeout=3600)
    summary = out / "summary.json"
    if not summary.is_file():
        sys.exit(f"bench_load_compare: the run failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return proc.returncode, json.loads(summary.read_text())["comparison"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--slow-runs", type=int, default=2)
    parser.add_argument("--run-time", default="60s")
    parser.add_argument("--round-time", default="2s")
    parser.add_argument("--burners", type=int, default=2)
    opts = parser.parse_args()
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(opts.burners)]
    same: list[tuple[int, dict]] = []
    slow: list[tuple[int, dict]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-load-compare-") as tmp:
            for i in range(opts.runs):
                folder = Path(tmp) / f"same-{i}"
                folder.mkdir()
                same.append(one_run(folder, reference(folder / "new.sqlite3"), opts))
                c = same[-1][1]
                print(f"identical #{i + 1}: exit {same[-1][0]}, {c['verdict']}, p50 x{c['metrics']['p50_ms']['ratio']} "
                      f"[{c['metrics']['p50_ms']['low']}, {c['metrics']['p50_ms']['high']}], "
                      f"machine: {c['machine']['text']}", flush=True)
            for i in range(opts.slow_runs):
                folder = Path(tmp) / f"slow-{i}"
                folder.mkdir()
                slow.append(one_run(folder, reference(folder / "new.sqlite3", "--tool-delay-ms", "10"), opts))
                c = slow[-1][1]
                print(f"10 ms slower #{i + 1}: exit {slow[-1][0]}, {c['verdict']}, "
                      f"p50 x{c['metrics']['p50_ms']['ratio']} [{c['metrics']['p50_ms']['low']}, "
                      f"{c['metrics']['p50_ms']['high']}]", flush=True)
    finally:
        for b in burners:
            os.kill(b.pid, signal.SIGKILL)
            b.wait()
    false_regressions = sum(c["verdict"] == "regression" or rc != 0 for rc, c in same)
    settled = sum(c["verdict"] == "no regression" for _, c in same)
    caught = sum(c["verdict"] == "regression" and rc == 1 for rc, c in slow)
    same_p50 = statistics.median(c["metrics"]["p50_ms"]["ratio"] for _, c in same) if same else float("nan")
    slow_p50 = statistics.median(c["metrics"]["p50_ms"]["ratio"] for _, c in slow) if slow else float("nan")
    print(f"bench_load_compare: identical builds beside {opts.burners} burners: {false_regressions}/{len(same)} "
          f"false regressions, {settled}/{len(same)} settled as no regression (median p50 ratio x{same_p50:.3f}); "
          f"10 ms slower per tool call: caught {caught}/{len(slow)} (median p50 ratio x{slow_p50:.2f}); "
          f"--run-time {opts.run_time} --round-time {opts.round_time}")
    return 0 if false_regressions == 0 and caught == len(slow) else 1


if __name__ == "__main__":
    sys.exit(main())

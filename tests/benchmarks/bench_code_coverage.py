"""Benchmark: what measuring the target's code coverage costs a campaign, as a user runs it.

The same `mcp-tempest fuzz --max-examples N --seed 1 --no-database` (every property) on the same
target, once with `--no-coverage` and once as the default (every server process under
coverage.py), timed wall to wall as separate commands; the measured run's time includes
combining the data and writing coverage.py's HTML and XML reports, which a user waits for too.
The runs alternate (plain, measured, plain, ...) so that a machine growing busier during the
benchmark weighs on both alike. The figure of merit is measured / plain of each round's pair, run
back to back (the median over rounds); the aim is at most 1.3x.
The CPU seconds of each campaign (the harness and every server process it reaped) are shown too:
on a shared machine they vary less from run to run than wall time does.
Measuring must not change verdicts: both runs of a round must file the same failures (by id);
observations (heuristics, some of them timing-dependent) that differ are shown, not counted.

    python tests/benchmarks/bench_code_coverage.py [--examples 200] [--rounds 1]
           [--target "stdio:python tests/servers/sdk_server.py"]

The last line is the one-line summary.
"""

from __future__ import annotations

import argparse
import json
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TARGET = "stdio:" + shlex.join([sys.executable, str(ROOT / "tests" / "servers" / "sdk_server.py")])


def one_campaign(target: str, examples: int, out: Path, measured: bool) -> tuple[float, float, int, dict, set[str]]:
    """Seconds, wall to wall, CPU seconds, examples run, reach.code, and the ids of the findings
    filed (observations marked with a leading "~")."""
    argv = [sys.executable, "-m", "mcp_tempest.fuzz.cli", "fuzz", "--target", target, "--max-examples",
            str(examples), "--seed", "1", "--no-database", "--out", str(out), "--progress", "never"]
    if not measured:
        argv.append("--no-coverage")
    t0, cpu0 = time.monotonic(), _children_cpu()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=3600, cwd=ROOT)
    seconds, cpu = time.monotonic() - t0, _children_cpu() - cpu0
    if done.returncode not in (0, 1):
        raise SystemExit(f"bench_code_coverage: campaign exit {done.returncode}: {done.stderr[-600:]}")
    index = json.loads((out / "findings.json").read_text())
    found = {("~" if f.get("verdict") == "observation" else "") + str(f.get("id")) for f in index.get("findings", [])}
    return seconds, cpu, int(index["examples"]), index.get("reach", {}).get("code", {}), found


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=DEFAULT_TARGET)
    ap.add_argument("--examples", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    plain: list[float] = []
    measured: list[float] = []
    cpu: dict[bool, list[float]] = {False: [], True: []}
    code: dict = {}
    differing = 0
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            seconds, used, n, _, plain_found = one_campaign(args.target, args.examples, Path(tmp) / f"plain-{r}",
                                                            False)
            plain.append(seconds)
            cpu[False].append(used)
            print(f"round {r + 1}: plain {seconds:.1f} s, {used:.1f} CPU s ({n} examples, {len(plain_found)} "
                  "findings)", flush=True)
            seconds, used, n, code, found = one_campaign(args.target, args.examples, Path(tmp) / f"measured-{r}",
                                                         True)
            measured.append(seconds)
            cpu[True].append(used)
            print(f"round {r + 1}: measured {seconds:.1f} s, {used:.1f} CPU s ({n} examples, {len(found)} findings), "
                  f"code coverage {code.get('percent', 'n/a')}%", flush=True)
            if found != plain_found:
                differing += any(not f.startswith("~") for f in found ^ plain_found)
                print(f"round {r + 1}: findings differ: only plain {sorted(plain_found - found)}, "
                      f"only measured {sorted(found - plain_found)}", flush=True)
    ratio = statistics.median(m / p for m, p in zip(measured, plain, strict=True))
    cpu_ratio = statistics.median(m / p for m, p in zip(cpu[True], cpu[False], strict=True))
    verdicts = "same findings" if not differing else f"findings differ in {differing} round(s)"
    print(f"bench_code_coverage: measured/plain wall time {ratio:.2f}x (aim <= 1.3x), CPU {cpu_ratio:.2f}x, over "
          f"{args.rounds} round(s) of {args.examples} examples; code coverage {code.get('percent', 'n/a')}%; {verdicts}")
    return 0 if ratio <= 1.3 and not differing else 1


if __name__ == "__main__":
    raise SystemExit(main())

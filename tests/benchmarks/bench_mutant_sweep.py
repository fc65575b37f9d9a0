"""Benchmark (nightly): every mutant is found by a default-budget campaign, for several seeds.

For each bug `mcp-tempest serve --list-bugs` names that a campaign is to find (Mutant.found_by) and
each seed, one plain campaign as a user runs it:

    mcp-tempest fuzz --target <the reference server with --bug NAME> --max-examples 200 --seed S \
        --stop-on-rule <the bug's rule ids>

over the transport the mutant lives on (stdio for "any"), with no example database. The mutant
counts as found when a finding is filed under one of the rule ids the registry gives it (the
duty broken: a null id served is filed under RPC-01, the duty to answer a bad frame with an
error, and the registry lists RPC-01, not the RPC-04 its probe breaks). This is what the split of the budget
across properties is for: at the default budget every property gets enough examples to find the
visible mutants, whichever seed is drawn.

Where a mutant campaign's time went (measured with cProfile, one campaign as a fresh CLI process
on a busy 2-core machine: ~30 s wall): ~8 s importing and building the message schema from
mcp-types (pydantic models), ~5 s compiling and drawing the coverage phase's malformed probes, the
rest the properties' examples, which keep going after the mutant's bug is found until all 200 are
spent. Hence two things, neither of which changes the campaign up to its finding:
- `--stop-on-rule` ends the campaign at the first finding of one of the mutant's rules (the
  examples before it are the default campaign's, seed for seed; `--full` runs them to the end);
- the campaigns run in-process through the CLI's own entry point (`fuzz_main(argv)`, what
  `mcp-tempest fuzz` calls), a few per worker process (`--jobs`), so imports, the schema and the
  coverage probes are built once per worker instead of once per campaign. `--subprocess` runs each
  as its own `python -m mcp_tempest.fuzz.cli` process, as a user would.

    python tests/benchmarks/bench_mutant_sweep.py [--seeds 1,2,3,4,5] [--bugs A,B] [--examples 200]
                                                  [--jobs 2] [--full] [--subprocess]

Prints one line per campaign, then one summary line: found/total, and the ratio.
Exit status 0 when every mutant was found for every seed, else 1.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import orjson

PROJECT = Path(__file__).resolve().parents[2]
if str(PROJECT) not in sys.path:
    sys.path.insert(0, str(PROJECT))

from mcp_tempest.targets.mutants import MUTANTS, found_by  # noqa: E402 - after the path fix for a direct run


def target_for(bug: str, db: Path) -> str:
    transport = "http" if MUTANTS[bug].transport == "http" else "stdio"
    argv = [sys.executable, "-m", "mcp_tempest.targets.reference", "--transport", transport, "--db", str(db), "--bug", bug]
    if MUTANTS[bug].needs_auth:
        argv += ["--auth-issuer", "{issuer}"]
    if transport == "http":
        return "http+spawn:" + shlex.join([*argv, "--port", "{port}"])
    return "stdio:" + shlex.join(argv)


def campaign_argv(bug: str, seed: int, examples: int, work: Path, *, stop: bool = True) -> list[str]:
    """The `mcp-tempest fuzz` arguments of one sweep campaign (after the `fuzz` subcommand)."""
    argv = ["--target", target_for(bug, work / f"{bug}-{seed}.sqlite3"), "--max-examples", str(examples),
            "--seed", str(seed), "--no-database", "--out", str(work / f"{bug}-{seed}"), "--progress", "never"]
    if MUTANTS[bug].needs_auth:  # the default campaign under --auth: the harness is the issuer
        argv.append("--auth")
    return [*argv, "--stop-on-rule", ",".join(MUTANTS[bug].rules)] if stop else argv


def found_rules(out: Path) -> set[str]:
    """Every duty the campaign's findings are filed under (a probe's own rule does not count: the
    registry lists the duty a finding names)."""
    index = out / "findings.json"
    if not index.exists():
        return set()
    return {f["rule"] for f in orjson.loads(index.read_bytes())["findings"]}


def sweep_one(bug: str, seed: int, examples: int, work: Path, *, stop: bool = True,
              subprocess_run: bool = False) -> tuple[bool, set[str], float, str]:
    """One campaign against one mutant; (found, rules reported, seconds, last stdout line)."""
    argv = campaign_argv(bug, seed, examples, work, stop=stop)
    started = time.monotonic()
    if subprocess_run:
        proc = subprocess.run([sys.executable, "-m", "mcp_tempest.fuzz.cli", "fuzz", *argv], capture_output=True, text=True,
                              timeout=1800, cwd=PROJECT)
        stdout = proc.stdout
    else:
        from mcp_tempest.fuzz.campaign_command import fuzz_main

        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(io.StringIO()):
            fuzz_main(argv)
        stdout = buffer.getvalue()
    took = time.monotonic() - started
    rules = found_rules(work / f"{bug}-{seed}")
    last = (stdout.strip().splitlines() or [""])[-1]
    return bool(rules & set(MUTANTS[bug].rules)), rules, took, last


def _sweep_worker(task: tuple[str, int, int, str, bool, bool]) -> tuple[str, int, bool, list[str], float, str]:
    bug, seed, examples, work, stop, subprocess_run = task
    found, rules, took, last = sweep_one(bug, seed, examples, Path(work), stop=stop, subprocess_run=subprocess_run)
    return bug, seed, found, sorted(rules), took, last


def sweep(bugs: list[str], seeds: list[int], examples: int, work: Path, *, jobs: int = 2, stop: bool = True,
          subprocess_run: bool = False):  # -> Iterator[(bug, seed, found, rules, seconds, last line)]
    """Every (bug, seed) campaign, `jobs` at a time (each worker process runs its share in-process),
    yielded as they finish."""
    tasks = [(bug, seed, examples, str(work), stop, subprocess_run) for bug in bugs for seed in seeds]
    if jobs <= 1:
        yield from map(_sweep_worker, tasks)
        return
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        yield from pool.map(_sweep_worker, tasks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,2,3,4,5")
    parser.add_argument("--bugs", default="")
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2, help="campaigns at once (worker processes; default 2)")
    parser.add_argument("--full", action="store_true", help="run every campaign to its end (no --stop-on-rule)")
    parser.add_argument("--subprocess", action="store_true", help="each campaign as its own CLI process")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    bugs = [b for b in (args.bugs.split(",") if args.bugs else found_by("fuzz")) if b]
    unknown = sorted(set(bugs) - set(MUTANTS))
    if unknown:
        print(f"bench_mutant_sweep: unknown bug {', '.join(unknown)} (see mcp-tempest serve --list-bugs)")
        return 2
    missed: list[str] = []
    total = 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tempest-sweep-") as tmp:
        for bug, seed, found, rules, took, last in sweep(bugs, seeds, args.examples, Path(tmp), jobs=args.jobs,
                                                         stop=not args.full, subprocess_run=args.subprocess):
            total += 1
            if not found:
                missed.append(f"{bug}@{seed}")
            print(f"{'found ' if found else 'MISSED'} {bug:<28} seed {seed}  {took:6.1f} s  "
                  f"rules {','.join(rules) or '-'}  ({last})", flush=True)
    found_n = total - len(missed)
    print(f"bench_mutant_sweep: {found_n}/{total} mutant campaigns found their bug "
          f"(ratio {found_n / max(total, 1):.2f}, {len(bugs)} mutants x {len(seeds)} seeds, "
          f"{args.examples} examples each{'' if args.full else ', stopped at the bug'}, "
          f"{time.monotonic() - started:.0f} s with {args.jobs} jobs)"
          + (f"; missed {', '.join(missed)}" if missed else ""))
    return 0 if not missed else 1


if __name__ == "__main__":
    sys.exit(main())

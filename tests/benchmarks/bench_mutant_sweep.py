"""Benchmark (nightly): every mutant is found by a default-budget campaign, for several seeds.

For each bug `mcp-gauntlet serve --list-bugs` names (except the load-test-only slow leak) and
each seed, one plain campaign as a user runs it:

    mcp-gauntlet fuzz --target <the reference server with --bug NAME> --max-examples 200 --seed S

over the transport the mutant lives on (stdio for "any"), with no example database, and the
mutant counts as found when a finding carries one of the rule ids the registry gives it. This
is what the split of the budget across properties is for: at the default budget every
property gets enough examples to find the visible mutants, whichever seed is drawn.

    python tests/benchmarks/bench_mutant_sweep.py [--seeds 1,2,3,4,5] [--bugs A,B] [--examples 200]

Prints one line per campaign, then one summary line: found/total, and the ratio.
Exit status 0 when every mutant was found for every seed, else 1.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from targets.mutants import MUTANTS

LOAD_ONLY = {"slow-leak"}


def target_for(bug: str, db: Path) -> str:
    transport = "http" if MUTANTS[bug].transport == "http" else "stdio"
    argv = [sys.executable, "-m", "targets.reference", "--transport", transport, "--db", str(db), "--bug", bug]
    if transport == "http":
        return "http+spawn:" + shlex.join([*argv, "--port", "{port}"])
    return "stdio:" + shlex.join(argv)


def sweep_one(bug: str, seed: int, examples: int, work: Path) -> tuple[bool, set[str], float, str]:
    """One campaign against one mutant; (found, rules reported, seconds, last stdout line)."""
    out = work / f"{bug}-{seed}"
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "fuzz.cli", "fuzz", "--target", target_for(bug, work / f"{bug}-{seed}.sqlite3"),
         "--max-examples", str(examples), "--seed", str(seed), "--no-database", "--out", str(out),
         "--progress", "never"],
        capture_output=True, text=True, timeout=1800,
    )
    took = time.monotonic() - started
    rules: set[str] = set()
    index = out / "findings.json"
    if index.exists():
        rules = {f["rule"] for f in orjson.loads(index.read_bytes())["findings"]}
    last = (proc.stdout.strip().splitlines() or [""])[-1]
    return bool(rules & set(MUTANTS[bug].rules)), rules, took, last


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,2,3,4,5")
    parser.add_argument("--bugs", default="")
    parser.add_argument("--examples", type=int, default=200)
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    bugs = [b for b in (args.bugs.split(",") if args.bugs else MUTANTS) if b and b not in LOAD_ONLY]
    missed: list[str] = []
    total = 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gauntlet-sweep-") as tmp:
        for bug in bugs:
            for seed in seeds:
                found, rules, took, last = sweep_one(bug, seed, args.examples, Path(tmp))
                total += 1
                if not found:
                    missed.append(f"{bug}@{seed}")
                print(f"{'found ' if found else 'MISSED'} {bug:<28} seed {seed}  {took:6.1f} s  "
                      f"rules {','.join(sorted(rules)) or '-'}  ({last})", flush=True)
    found_n = total - len(missed)
    print(f"bench_mutant_sweep: {found_n}/{total} mutant campaigns found their bug "
          f"(ratio {found_n / max(total, 1):.2f}, {len(bugs)} mutants x {len(seeds)} seeds, "
          f"{args.examples} examples each, {time.monotonic() - started:.0f} s)"
          + (f"; missed {', '.join(missed)}" if missed else ""))
    return 0 if not missed else 1


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: the long seed sweep. Every property over both transports on the reference server,
one `mcp-tempest fuzz` per seed, at the nightly budget; a correct server must draw 0 findings.

    python tests/benchmarks/bench_seed_sweep.py [--seeds 100] [--first 1] [--max-examples 300]

Prints one line per seed (with every finding kind when there are some), then one summary line:
seeds, examples, false findings, and the share of seeds that were clean. Exit 1 on any finding.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from seed_sweep import describe, sweep_seed  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--first", type=int, default=1)
    parser.add_argument("--max-examples", type=int, default=300)
    args = parser.parse_args()
    started = time.monotonic()
    examples = findings = clean = 0
    for seed in range(args.first, args.first + args.seeds):
        result = sweep_seed(seed, args.max_examples)
        print(describe(result), flush=True)
        if result.exit_code not in (0, 1):
            print(result.tail, flush=True)
        examples += result.examples
        findings += len(result.findings)
        clean += result.exit_code == 0 and not result.findings
    elapsed = time.monotonic() - started
    print(f"seed sweep: {args.seeds} seeds, {examples} examples, {findings} false findings, "
          f"clean seeds {clean}/{args.seeds} ({clean / max(args.seeds, 1):.2f}), {elapsed:.0f} s")
    return 1 if findings or clean < args.seeds else 0


if __name__ == "__main__":
    raise SystemExit(main())

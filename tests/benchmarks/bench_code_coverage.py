"""Benchmark: what measuring the target's code coverage (targets/code_coverage.py) costs a campaign.

The same campaign as `mcp-tempest fuzz --max-examples N --seed 1 --no-database` (every property)
on the same target, once plain and once with the target's processes under coverage.py, timed
wall to wall; the measured run's time includes combining the data and writing coverage.py's
HTML and XML reports, which a user waits for too. The runs alternate (plain, measured, plain,
...) so that a machine growing busier during the benchmark weighs on both alike. The figure of
merit is measured / plain; the aim is at most 1.3x.

Until `fuzz` has a flag for it, this drives the API around `run_campaign` directly: plan, run the
planned spec, collect.

    python tests/benchmarks/bench_code_coverage.py [--examples 200] [--rounds 1]
           [--target "stdio:python tests/servers/sdk_server.py"]

The last line is the one-line summary.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp_tempest.fuzz.campaign import CampaignConfig, run_campaign
from mcp_tempest.fuzz.findings import FindingStore
from mcp_tempest.fuzz.properties.base import all_properties
from mcp_tempest.targets.code_coverage import CodeReach, CoveragePlan, collect, plan_coverage
from mcp_tempest.targets.target_spec import TargetSpec, parse_target

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TARGET = "stdio:" + shlex.join([sys.executable, str(ROOT / "tests" / "servers" / "sdk_server.py")])


def one_campaign(spec: TargetSpec, examples: int, out: Path) -> tuple[float, int]:
    """Seconds, wall to wall, and examples run."""
    config = CampaignConfig(targets=[spec], properties=list(all_properties()), seed=1, max_examples=examples,
                            database=None)
    store = FindingStore(out, target=spec.text, seed=1)
    started = time.monotonic()
    result = run_campaign(config, store)
    return time.monotonic() - started, result.examples


def measured_campaign(spec: TargetSpec, examples: int, out: Path) -> tuple[float, int, CodeReach]:
    started = time.monotonic()
    plan = plan_coverage(spec, [], out / "coverage-data")
    if not isinstance(plan, CoveragePlan):
        raise SystemExit(plan.reason)
    _, ran = one_campaign(plan.spec, examples, out)
    reach = collect(plan, out)
    return time.monotonic() - started, ran, reach


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1, help="plain/measured pairs (the median ratio is reported)")
    parser.add_argument("--target", default=DEFAULT_TARGET)
    args = parser.parse_args(argv)
    spec = parse_target(args.target)
    ratios: list[float] = []
    reach: CodeReach | None = None
    with tempfile.TemporaryDirectory(prefix="bench-code-coverage-") as tmp:
        for i in range(args.rounds):
            plain, plain_n = one_campaign(spec, args.examples, Path(tmp) / f"plain-{i}")
            print(f"round {i + 1}: plain    {plain:7.1f} s  {plain_n} examples", flush=True)
            measured, measured_n, reach = measured_campaign(spec, args.examples, Path(tmp) / f"measured-{i}")
            print(f"round {i + 1}: measured {measured:7.1f} s  {measured_n} examples  ({reach.line()})", flush=True)
            ratios.append(measured / plain)
        assert reach is not None
        for f in reach.files:
            print(f"  {f['path']}: {f['percent']:.1f}% ({f['covered']}/{f['lines']} lines, "
                  f"{f['covered_branches']}/{f['branches']} branches)")
    ratio = statistics.median(ratios)
    verdict = "ok" if ratio <= 1.3 else "over the 1.3x aim"
    print(f"bench_code_coverage: {args.examples} examples on {spec.text}: measured/plain wall time "
          f"{ratio:.2f}x (median of {len(ratios)}; {verdict}), code coverage {reach.percent:.1f}%")
    return 0 if ratio <= 1.3 else 1


if __name__ == "__main__":
    sys.exit(main())

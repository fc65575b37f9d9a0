"""Benchmark: the seed sweep on the example servers we did not write (tests/servers/).

    python tests/benchmarks/bench_example_sweep.py [--seeds 10] [--first 1] [--max-examples 100]
        [--servers python-sdk,fastmcp,typescript-sdk] [--transports stdio]

Each run is the default campaign (every property) that a user points at a server, one per server,
transport and seed. A third-party server has real deviations, so the question is not "zero
findings" but "nothing we have not read against DIGEST": every finding's kind (rule, strength,
probe) must be one of the known deviations that tests/real_servers/regenerate.py documents (its
WHY table, each entry checked against the spec). A kind outside it is either a new real deviation
(check it against DIGEST, then add it there and regenerate) or a false finding of ours (fix it).

Prints one line per campaign, then one summary line: campaigns, examples, findings, known kinds,
unknown kinds. Exit 1 when a kind is unknown or a campaign could not run.
Needs the example servers installed (`bash .ci/install-servers.sh`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "real_servers"))

import regenerate  # noqa: E402 - the known deviations and the servers' portable command lines


def kind_of(finding: dict) -> tuple[str, str, str | None]:
    return finding.get("rule", ""), finding.get("strength", ""), regenerate.probe_of(finding)


def run(server: str, transport: str, seed: int, max_examples: int) -> tuple[int, int, list[dict], str]:
    spec = regenerate.catalog.ALL[server]
    extra = ("--state-key", regenerate.TS_STATE_KEY) if server == "typescript-sdk" else ()
    target = spec.portable_stdio_target(*extra) if transport == "stdio" else spec.portable_http_spawn_target(*extra)
    with tempfile.TemporaryDirectory(prefix="example-sweep-") as tmp:
        out = Path(tmp) / "out"
        done = subprocess.run(
            [sys.executable, "-m", "mcp_tempest.fuzz.cli", "fuzz", "--target", target, "--max-examples", str(max_examples),
             "--seed", str(seed), "--out", str(out), "--no-database", "--progress", "never",
             "--timeout", f"{regenerate.CAMPAIGN_TIMEOUT:g}"],
            cwd=ROOT, env=regenerate.child_env(), capture_output=True, text=True, timeout=3600, check=False)
        index = json.loads((out / "findings.json").read_text()) if (out / "findings.json").is_file() else {}
    return done.returncode, int(index.get("examples", 0)), list(index.get("findings", [])), \
        (done.stdout + done.stderr)[-600:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first", type=int, default=1)
    parser.add_argument("--max-examples", type=int, default=100)
    parser.add_argument("--servers", default="python-sdk,fastmcp,typescript-sdk")
    parser.add_argument("--transports", default="stdio")
    args = parser.parse_args()
    known = set(regenerate.WHY)
    started = time.monotonic()
    campaigns = examples = findings = broken = 0
    seen_known: set[tuple] = set()
    unknown: dict[tuple, list[str]] = {}
    for server in args.servers.split(","):
        for transport in args.transports.split(","):
            for seed in range(args.first, args.first + args.seeds):
                code, n, found, tail = run(server, transport, seed, args.max_examples)
                campaigns += 1
                examples += n
                findings += len(found)
                kinds = {kind_of(f) for f in found}
                seen_known |= kinds & known
                for kind in kinds - known:
                    unknown.setdefault(kind, []).append(f"{server}/{transport}/seed {seed}")
                label = ", ".join(f"{s} {r} {m or '-'}{'' if (r, s, m) in known else ' (UNKNOWN)'}"
                                  for r, s, m in sorted(kinds, key=str))
                print(f"{server} {transport} seed {seed}: exit {code}, {n} examples, {len(found)} findings"
                      + (f": {label}" if label else ""), flush=True)
                if code not in (0, 1):
                    broken += 1
                    print(tail, flush=True)
    for kind, where in sorted(unknown.items(), key=str):
        print(f"unknown kind {kind}: {', '.join(where)}")
    print(f"example sweep: {campaigns} campaigns, {examples} examples, {findings} findings, "
          f"{len(seen_known)} known kinds, {len(unknown)} unknown kinds, {broken} campaigns could not run, "
          f"{time.monotonic() - started:.0f} s")
    return 1 if unknown or broken else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Which --guidance reaches most of a server's code over two nightly runs sharing a database.

    python tests/benchmarks/bench_guidance.py                       # the reference server, stdio
    python tests/benchmarks/bench_guidance.py --target "stdio:mcp-server-git --repository /tmp/r"
    python tests/benchmarks/bench_guidance.py --examples 300 --seeds 11,12

For each mode (none, corpus, corpus+target) a fresh example database, then two campaigns on it
with different seeds (a first night and a second). Reported per mode: the server code coverage
each night reached (coverage.py, lines and branches: a measure the guidance signal does not use,
so it cannot flatter itself), tools with a success, and the corpus entries the second night
played first. A mode wins when its second night reaches the most code. Ends with one summary line.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODES = {"none": "none", "corpus": "corpus", "corpus+target": "corpus,target"}


def night(target: str | None, examples: int, seed: int, database: Path, guidance: str, out: Path) -> dict:
    argv = [sys.executable, "-m", "mcp_tempest.fuzz.cli", "fuzz", "--max-examples", str(examples), "--seed", str(seed),
            "--database", str(database), "--guidance", guidance, "--out", str(out), "--progress", "never"]
    if target:
        argv += ["--target", target]
    else:
        argv += ["--transports", "stdio"]
    t0 = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    seconds = time.monotonic() - t0
    if done.returncode not in (0, 1):
        raise SystemExit(f"bench_guidance: campaign exit {done.returncode}: {done.stderr[-600:]}")
    findings = json.loads((out / "findings.json").read_text())
    reach = findings.get("reach", {})
    code = reach.get("code", {})
    played = sum(int(line.split("reach corpus: ")[1].split(" played")[0])
                 for line in done.stdout.splitlines() if "reach corpus: " in line)
    return {"percent": code.get("percent") if code.get("measured") else None,
            "tools_ok": sum(1 for t in reach.get("tools", []) if t["ok"]), "played": played, "seconds": seconds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", help="the target (default: the built-in reference server over stdio)")
    ap.add_argument("--examples", type=int, default=200)
    ap.add_argument("--seeds", default="11,12", help="the first and the second night's seeds")
    args = ap.parse_args()
    first, second = (int(s) for s in args.seeds.split(","))
    results: dict[str, tuple[dict, dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode, guidance in MODES.items():
            db = Path(tmp) / f"db-{mode}"
            one = night(args.target, args.examples, first, db, guidance, Path(tmp) / f"{mode}-1")
            two = night(args.target, args.examples, second, db, guidance, Path(tmp) / f"{mode}-2")
            results[mode] = (one, two)
            print(f"{mode:<14} night 1: {one['percent']}% code, {one['tools_ok']} tools ok, {one['seconds']:.0f} s; "
                  f"night 2: {two['percent']}% code, {two['tools_ok']} tools ok, {two['played']} corpus entries "
                  f"played first, {two['seconds']:.0f} s", flush=True)
    best = max(results, key=lambda m: (results[m][1]["percent"] or 0.0, results[m][1]["tools_ok"]))
    base = results["none"][1]["percent"] or 0.0
    won = results[best][1]["percent"] or 0.0
    print(f"bench_guidance: best second night {best} at {won}% of the server's code vs {base}% without guidance "
          f"({won - base:+.1f} points), {args.examples} examples a night")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

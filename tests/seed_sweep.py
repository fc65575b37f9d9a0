"""The seed sweep shared by tests/test_seed_sweep.py and tests/benchmarks/bench_seed_sweep.py:
every property over both transports on the built-in reference server, one `mcp-tempest fuzz`
per seed, exactly as a user runs it. A correct server must draw zero findings at every seed."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent


@dataclass(slots=True)
class SeedResult:
    seed: int
    exit_code: int
    examples: int
    findings: list[dict] = field(default_factory=list)
    tail: str = ""


def sweep_seed(seed: int, max_examples: int, *, timeout: float = 900.0) -> SeedResult:
    """One campaign at `seed`; its findings (each with rule, strength, title, mutation)."""
    with tempfile.TemporaryDirectory(prefix=f"seed-sweep-{seed}-") as tmp:
        out = Path(tmp) / "out"
        proc = subprocess.run(
            [sys.executable, "-m", "mcp_tempest.fuzz.cli", "fuzz", "--max-examples", str(max_examples), "--seed", str(seed),
             "--out", str(out)],
            cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False,
        )
        data = orjson.loads((out / "findings.json").read_bytes()) if (out / "findings.json").exists() else {}
    return SeedResult(seed, proc.returncode, int(data.get("examples", 0)), list(data.get("findings", [])),
                      (proc.stdout + proc.stderr)[-2000:])


def describe(result: SeedResult) -> str:
    kinds = ", ".join(f"{f.get('strength')} {f.get('rule')} {f.get('title')} ({f.get('mutation')})"
                      for f in result.findings)
    return f"seed {result.seed}: exit {result.exit_code}, {result.examples} examples, {len(result.findings)} findings" \
        + (f": {kinds}" if kinds else "")

"""Harness peak memory per property, with the 11 MiB `huge-frame` mutation in the catalogue.

Why: the huge frame once cost the harness about 1 GB whenever the framing property found
anything (a backtracking regex over the frame); the budget is 300 MB in any campaign, whatever
the target does. Each property runs as its own `mcp-tempest fuzz` process against the reference
server, a server with a bug (so findings are filed and shrunk), and two noisy stdio servers
(one writing log lines around every answer, one echoing every request back, huge frames too).
The harness's own peak (VmHWM of its process alone, not the targets') is read from /proc while
it runs. The baseline, measured in the same run, is the framing property without `huge-frame`.

Usage: python tests/benchmarks/bench_harness_memory.py [EXAMPLES]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp_tempest.fuzz.properties.base import all_properties
from mcp_tempest.fuzz.properties.framing import mutation_names

ROOT = Path(__file__).resolve().parents[2]
BUDGET_MB = 300
NOISY = str(ROOT / "tests" / "hostile_targets" / "noisy_answers.py")
TARGETS = {
    "reference": None,
    "null-id-accepted": "stdio:mcp-tempest serve --bug null-id-accepted",
    "noisy": f"stdio:{sys.executable} {NOISY} noise",
    "echo": f"stdio:{sys.executable} {NOISY} echo",
}


def _hwm_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def peak_of(args: list[str], out: Path) -> tuple[float, int]:
    """The harness process's peak RSS in MB (sampled high-water mark) and its exit status."""
    proc = subprocess.Popen([shutil.which("mcp-tempest") or "mcp-tempest", *args, "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0.0
    while proc.poll() is None:
        hwm = _hwm_mb(proc.pid)
        if hwm is not None:
            peak = max(peak, hwm)
        time.sleep(0.02)
    return peak, proc.returncode


def main() -> None:
    examples = sys.argv[1] if len(sys.argv) > 1 else "60"
    props = [n for n, p in all_properties().items() if "modern" in p.eras]
    worst = (0.0, "")
    with tempfile.TemporaryDirectory(prefix="tempest-bench-mem-") as tmp:
        runs = 0
        for target_name, target in TARGETS.items():
            for prop in props:
                args = ["fuzz", "--properties", prop, "--max-examples", examples, "--seed", "1", "--timeout", "5"]
                if target is not None:
                    args += ["--target", target]
                peak, status = peak_of(args, Path(tmp) / f"{target_name}-{prop}")
                runs += 1
                print(f"{target_name:18} {prop:10} peak {peak:6.0f} MB  (exit {status})", flush=True)
                if peak > worst[0]:
                    worst = (peak, f"{prop} against {target_name}")
        without = ",".join(n for n in mutation_names("stdio") if n != "huge-frame")
        base, _ = peak_of(["fuzz", "--properties", "framing", "--max-examples", examples, "--seed", "1",
                           "--target", TARGETS["null-id-accepted"], "--mutations", without], Path(tmp) / "base")
        print(f"{'null-id-accepted':18} framing without huge-frame: peak {base:.0f} MB")
    print(f"bench_harness_memory: {runs} campaigns of {examples} examples, worst peak {worst[0]:.0f} MB "
          f"({worst[1]}), {worst[0] / base:.2f}x the framing run without huge-frame, "
          f"{'within' if worst[0] <= BUDGET_MB else 'OVER'} the {BUDGET_MB} MB budget")


if __name__ == "__main__":
    main()

"""Running `mcp-tempest load` in tests the way a user does: its own process, its own --out."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

# load's last line (fuzz/verdict_line.py): its counts, then the verdict word and why
LAST_LINE = re.compile(r"^load: (?P<requests>\d+) requests?, (?P<failures>\d+) failures?, (?P<rps>[0-9.]+) rps, "
                       r"(?P<mrtr>\d+) MRTR operations?, (?P<violations>\d+) violations?: "
                       r"(?P<verdict>PASS|FAIL|ERROR|INTERRUPTED)(?: \((?P<why>.*)\))?$")
# every table load prints fits a terminal this wide (load/summary.py TABLE_WIDTH)
TABLE_WIDTH = 100


def last_line(stdout: str) -> re.Match[str]:
    """load's last stdout line, parsed; fails the test when it is not one."""
    lines = stdout.strip().splitlines()
    match = LAST_LINE.match(lines[-1]) if lines else None
    assert match is not None, stdout[-3000:]
    return match


def run_load(args: Sequence[str], cwd: Path, *, timeout: float = 120,
             env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], dict]:
    """One load run with --out CWD/out; its summary.json ({} when the run wrote none). `env`:
    variables added to this process's environment (the started servers inherit them)."""
    out = cwd / "out"
    proc = subprocess.run([sys.executable, "-m", "mcp_tempest.load", "--out", str(out), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **env} if env else None)
    summary_path = out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    return proc, summary

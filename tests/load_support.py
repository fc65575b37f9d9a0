"""Running `mcp-tempest load` in tests the way a user does: its own process, its own --out."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def run_load(args: Sequence[str], cwd: Path, *, timeout: float = 120) -> tuple[subprocess.CompletedProcess[str], dict]:
    """One load run with --out CWD/out; its summary.json ({} when the run wrote none)."""
    out = cwd / "out"
    proc = subprocess.run([sys.executable, "-m", "mcp_tempest.load", "--out", str(out), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)
    summary_path = out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    return proc, summary

"""`mcp-tempest load --processes 2`: Locust's own multi-process mode (a master and forked
workers on loopback), started by the runner, produces one exact summary like a single process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_processes_option_uses_locust_multiprocess_mode(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_tempest.load", "--run-time", "3s", "--users", "4", "--processes", "2",
         "--out", str(tmp_path / "out")],
        cwd=tmp_path, capture_output=True, text=True, timeout=90,
    )
    log = (tmp_path / "out" / "locust.log").read_text()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr + log[-3000:]
    assert "2 Locust processes" in proc.stdout
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["config"]["processes"] == 2
    assert summary["mrtr"]["operations"] > 0 and summary["failures"] == 0
    assert "worker" in log.lower()  # Locust's master saw its forked workers
    # its master listened on loopback only, not on every interface
    command = (tmp_path / "out" / "locust-command.txt").read_text()
    assert "--master-bind-host 127.0.0.1" in command

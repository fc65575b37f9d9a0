"""The load run on a server we did not write: a stateless HTTP server on the official Python SDK
(`mcp==2.3.0`, tests/servers/sdk_server.py), two instances sharing a requestState key. MRTR
operations complete with their retries served by the other process, and nothing fails.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from load_support import run_load

ROOT = Path(__file__).resolve().parent.parent
SDK_SERVER = ROOT / "tests" / "servers" / "sdk_server.py"
STATE_KEY = "mcp-tempest-load-test-shared-key-0123456789"


@pytest.mark.slow
def test_python_sdk_server_two_instances(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    target = f"http+spawn:{sys.executable} {SDK_SERVER} --transport http --port {{port}} --state-key {STATE_KEY}"
    proc, summary = run_load(["--target", target, "--instances", "2", "--users", "4", "--run-time", "4s",
                              "--check-every", "2"], tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert summary["failures"] == 0 and summary["violations"] == 0
    assert summary["mrtr"]["operations"] > 0
    assert summary["operations"]["MRTR create_event"]["count"] > 0
    assert summary["operations"]["tools/call create_event #2"]["failures"] == 0
    assert summary["mrtr"]["retries_on_another_instance"] > 0  # the shared key makes this work
    assert summary["memory"]["sampled"]

"""The official MCP conformance suite passes against `mcp-tempest serve --transport http`.

The scenarios the project relies on (server-stateless, caching, dns-rebinding-protection,
sep-2164-resource-not-found, http-header-validation) run through `tests/conformance.py`. The fixture tools they call
(`test_missing_capability`, `test_streaming_elicitation`, `test_logging_tool`) are part of the
reference server's tool list. Slow (a Node process per scenario), but CI runs it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conformance import FOUNDATION_SCENARIOS, ConformanceUnavailable, run_conformance

pytestmark = pytest.mark.slow

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def _serve_command() -> list[str]:
    """`mcp-tempest serve` from this interpreter's environment (console script, else the module)."""
    script = Path(sys.executable).with_name("mcp-tempest")
    return [str(script), "serve"] if script.exists() else [sys.executable, "-m", "mcp_tempest.fuzz.cli", "serve"]


@pytest.fixture(scope="module")
def reference_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("conformance") / "store.sqlite3"
    proc = subprocess.Popen([*_serve_command(), "--transport", "http", "--port", "0", "--db", str(db)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            cwd=PROJECT_ROOT, start_new_session=True)
    assert proc.stderr is not None
    line = proc.stderr.readline().decode()
    try:
        assert line.startswith("listening on http://127.0.0.1:"), line
        yield line.removeprefix("listening on ").strip()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0, "the server must exit 0 on SIGTERM"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        proc.stderr.close()


@pytest.mark.parametrize("scenario", FOUNDATION_SCENARIOS)
def test_official_scenario_passes(reference_url: str, scenario: str) -> None:
    try:
        results = run_conformance(reference_url, [scenario], timeout=60)
    except ConformanceUnavailable as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    passed, output = results[scenario]
    assert passed, output

"""SL-11 (DIGEST 7.4): GET and DELETE on the endpoint SHOULD get 405; a firing and a silence test.

Both against real servers through the command a user runs: the reference server answers 405
(silence), the `http-get-200` mutant answers 200 (firing), and the coverage phase sends both
probes in every HTTP campaign, so no `--mutations` is needed to reach them.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from fuzz_support import reference_http, run_cli
from servers.catalog import SDK


def _campaign(tmp_path: Path, *bugs: str) -> tuple[int, dict]:
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--target", reference_http(tmp_path / "s.sqlite3", *bugs), "--properties", "framing",
                   "--max-examples", "25", "--seed", "6", "--out", str(out), "--progress", "never")
    return proc.returncode, orjson.loads((out / "findings.json").read_bytes())


def test_sl_11_fires_on_a_server_that_answers_get_and_delete(tmp_path: Path) -> None:
    status, index = _campaign(tmp_path, "http-get-200")
    assert status == 1
    found = {(f["rule"], f["strength"], f["mutation"]) for f in index["findings"]}
    assert found == {("SL-11", "SHOULD", "http-get"), ("SL-11", "SHOULD", "http-delete")}, found


@pytest.mark.slow  # a real third-party server; its GET stream holds each example to the deadline
def test_a_dual_era_sdk_servers_get_stream_is_a_heuristic_and_its_delete_405_no_finding(tmp_path: Path) -> None:
    """The Python SDK serves both eras: its GET opens the 2025 transport's SSE stream (a heuristic
    from a dual-era server; the SHOULD stands for a modern-only one, above), and its DELETE gets
    405 with a -32600 body, which is correct and no "empty line answered with HTTP 405"."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("the Python SDK (mcp==2.3.0) is not installed (CI must install it)")
        pytest.skip("the Python SDK (mcp==2.3.0) is not installed")
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--target", SDK.http_spawn_target(), "--properties", "framing", "--mutations", "http-*",
                   "--max-examples", "4", "--seed", "6", "--timeout", "2", "--no-coverage", "--out", str(out),
                   "--progress", "never")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "dual era" in proc.stdout, proc.stdout
    index = orjson.loads((out / "findings.json").read_bytes())
    seen = {(f["verdict"], f["rule"], f["strength"], f["mutation"], f["title"]) for f in index["findings"]}
    assert seen == {("observation", "SL-11", "HEURISTIC", "http-get", "GET on the MCP endpoint was not refused with 405")}


def test_sl_11_is_silent_on_the_reference_server(tmp_path: Path) -> None:
    status, index = _campaign(tmp_path)
    assert status == 0 and index["findings"] == []
    tried = {(o["probe"]) for o in index["coverage"]["not_applied"]}
    assert not tried & {"http-get", "http-delete"}  # both were sent

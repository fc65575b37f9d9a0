"""Code coverage of a Node.js target (targets/node_coverage.py): V8's own, per function.

The servers are the real Node ones of tests/servers (the TypeScript SDK server, server-everything
behind its loopback launcher), started through the real drivers or the real `mcp-tempest fuzz`,
and ended the way the harness ends them. Function names and lines come from the servers' source,
so an edit there moves nothing. Needs `bash .ci/install-servers.sh` (Node >= 22 and the npm
packages): skipped without it, failed under CI=true.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from servers.catalog import EVERYTHING, SERVERS_DIR, TS_SDK, node_binary, npm_packages_installed

from mcp_tempest.targets import wire
from mcp_tempest.targets.code_coverage import NotMeasured, plan_coverage
from mcp_tempest.targets.endpoints import coverage_env
from mcp_tempest.targets.node_coverage import V8_VAR, NodeCoveragePlan, collect_node, node_command
from mcp_tempest.targets.spawn_pool import SpawnPool
from mcp_tempest.targets.stdio_driver import StdioPool
from mcp_tempest.targets.target_spec import parse_target
from mcp_tempest.targets.transcript import Transcript
from tests.fuzz_support import CLI, PYTHON

pytestmark = pytest.mark.slow  # starts real third-party servers (the marker's stated purpose)

TS_SERVER = SERVERS_DIR / "ts_server.mjs"
LOOPBACK = SERVERS_DIR / "everything_loopback.mjs"


@pytest.fixture(autouse=True)
def _npm_side() -> None:
    if node_binary() is None or not npm_packages_installed():
        reason = "third-party npm servers not installed: run bash .ci/install-servers.sh"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def line_of(path: Path, pattern: str) -> int:
    """The 1-based line of the first match of `pattern` in `path`."""
    for n, text in enumerate(path.read_text().splitlines(), 1):
        if re.search(pattern, text):
            return n
    raise AssertionError(f"{pattern!r} not in {path}")


def node_plan(target: str, tmp_path: Path, sources: tuple[str, ...] = ()) -> NodeCoveragePlan:
    plan = plan_coverage(parse_target(target), list(sources), tmp_path / "data")
    assert isinstance(plan, NodeCoveragePlan), plan
    return plan


def fuzz(tmp_path: Path, target: str, *args: str) -> tuple[subprocess.CompletedProcess[str], dict, str]:
    out = tmp_path / "out"
    proc = subprocess.run([*CLI, "fuzz", "--no-database", "--out", str(out), "--target", target, "--seed", "5",
                           "--max-examples", "6", "--properties", "valid", "--shrink-time", "2", *args],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    findings = json.loads((out / "findings.json").read_text())
    return proc, findings, (out / "summary.md").read_text()


# --- which commands are Node runs ---


def test_node_commands_are_recognised_with_their_entry_script(tmp_path: Path) -> None:
    node = node_binary()
    assert node_command([node, "--require", "x.cjs", "--no-warnings", str(TS_SERVER), "--port", "1"]).entry == str(
        TS_SERVER)
    assert node_command(["env", "PORT=1", node, str(LOOPBACK)]).entry == str(LOOPBACK)
    assert node_command(["node", "-e", "1"]).entry == ""
    script = tmp_path / "server-bin"
    script.write_text("#!/usr/bin/env node\nconsole.log(1)\n")
    script.chmod(0o755)
    assert node_command([str(script), "--flag"]).entry == str(script)
    assert node_command([PYTHON, "-m", "mcp_tempest.targets.reference"]) is None
    assert node_command(["sh", "-c", "node x.mjs"]) is None


# --- the drivers: stdin closed, SIGTERM ---


def test_stdio_processes_ended_by_closing_stdin_report_their_functions(tmp_path: Path) -> None:
    """ts_server.mjs over stdio: buildServer and the echo tool ran; the HTTP branch's `stop` did not."""
    plan = node_plan(TS_SDK.stdio_target(), tmp_path, sources=("@modelcontextprotocol/server",))
    assert plan.roots == ()  # the entry is outside node_modules: everything outside it is the server's
    pids = []
    with StdioPool(plan.spec, 1, env=coverage_env(plan.spec)) as pool:
        for rid in (1, 2):
            conn = pool.take(Transcript("t", "stdio"))
            try:
                answer = conn.request(wire.build_request(rid, "tools/call", {"name": "echo",
                                                                             "arguments": {"text": "hi"}}), timeout=30)
                assert answer["result"]["content"][0]["text"] == "hi", answer
            finally:
                conn.close()
            pids.append(conn.process.pid)
            assert conn.process.ended_by in ("eof", "self")
    reach = collect_node(plan)
    assert reach.processes >= 2 and reach.kind == "functions"
    own = [f for f in reach.files if f["path"] == str(TS_SERVER)]
    assert own, [f["path"] for f in reach.files]
    ts = own[0]
    assert f"buildServer (line {line_of(TS_SERVER, r'^function buildServer')})" in ts["reached"]
    echo_line = line_of(TS_SERVER, r"async \(\{ text \}\) =>")
    assert f"(anonymous) (line {echo_line})" in ts["reached"]
    assert f"stop (line {line_of(TS_SERVER, r'const stop = ')})" in ts["never_reached"]
    assert ts["functions"] == len(ts["reached"]) + len(ts["never_reached"])
    assert 0 < ts["percent"] < 100
    # --coverage-source by package name: the SDK's files, wherever npm put them
    sdk = [f for f in reach.files if "/node_modules/@modelcontextprotocol/server/" in f["path"]]
    assert sdk and any(f["reached"] for f in sdk)
    assert not any("/node_modules/zod/" in f["path"] for f in reach.files)


def _loopback_http(plan: NodeCoveragePlan, env: dict[str, str] | None, count: int) -> list[int | None]:
    """Start `count` server-everything instances in turn and stop each (SIGTERM); their exit statuses."""
    statuses = []
    for _ in range(count):
        with SpawnPool(plan.spec, 1, env=env) as pool:
            process = pool.processes[0]
        assert process is not None
        statuses.append(process.exit_status())
    return statuses


def test_sigterm_still_writes_and_the_exit_status_is_unchanged(tmp_path: Path) -> None:
    """server-everything's HTTP entry has no SIGTERM handler: a plain NODE_V8_COVERAGE loses every
    instance the harness stops; with the plan's preload each one writes and still dies of SIGTERM."""
    target = EVERYTHING.http_spawn_target()
    plan = node_plan(target, tmp_path / "with")
    measured = _loopback_http(plan, coverage_env(plan.spec), 2)
    reach = collect_node(plan)
    assert reach.processes == 2, reach.notes
    loopback = [f for f in reach.files if f["path"] == str(LOOPBACK)]
    assert loopback and f"listenOnLoopback (line {line_of(LOOPBACK, 'function listenOnLoopback')})" in loopback[0][
        "reached"]

    bare = node_plan(target, tmp_path / "without")
    plain = _loopback_http(bare, {**os.environ, V8_VAR: str(bare.data_dir)}, 2)
    assert collect_node(bare).processes == 0
    assert measured == plain == [-15, -15]


def test_an_entry_inside_node_modules_measures_its_own_package(tmp_path: Path) -> None:
    plan = node_plan(EVERYTHING.stdio_target(), tmp_path)
    root = SERVERS_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything"
    assert plan.roots == (str(root),)
    with StdioPool(plan.spec, 1, env=coverage_env(plan.spec)) as pool:
        conn = pool.take(Transcript("t", "stdio"))
        try:
            conn.request(wire.build_request(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                              "clientInfo": {"name": "t", "version": "0"}}),
                         timeout=30)
        finally:
            conn.close()
    reach = collect_node(plan)
    assert reach.files and all(f["path"].startswith(str(root) + "/") for f in reach.files)
    assert any(f["reached"] for f in reach.files) and any(f["never_reached"] for f in reach.files)


# --- the campaign: findings.json, the summary, summary.md, report.html ---


def test_a_campaign_on_a_node_server_reports_reached_and_never_reached_functions(tmp_path: Path) -> None:
    proc, findings, summary_md = fuzz(tmp_path, TS_SDK.stdio_target())
    code = findings["reach"]["code"]
    assert code["measured"] is True and code["kind"] == "functions", code
    ts = next(f for f in code["files"] if f["path"] == str(TS_SERVER))
    build = f"buildServer (line {line_of(TS_SERVER, r'^function buildServer')})"
    stop = f"stop (line {line_of(TS_SERVER, r'const stop = ')})"
    assert build in ts["reached"] and stop in ts["never_reached"]
    assert code["percent"] == ts["percent"] and 0 < ts["percent"] < 100  # the only file outside node_modules
    line = next(x for x in proc.stdout.splitlines() if x.startswith("code coverage:"))
    assert f"{code['percent']:.1f}% of the server's own functions" in line
    assert f"ts_server.mjs: {stop}" in line
    assert "of functions (V8, Node.js)" in summary_md and stop in summary_md
    report = (tmp_path / "out" / "report.html").read_text()
    assert "of functions</h2>" in report and stop in report


def test_no_coverage_turns_it_off_for_a_node_server(tmp_path: Path) -> None:
    proc, findings, summary_md = fuzz(tmp_path, TS_SDK.stdio_target(), "--no-coverage")
    code = findings["reach"]["code"]
    assert code == {"measured": False, "reason": "code coverage: not measured (--no-coverage)"}
    assert "code coverage: not measured (--no-coverage)" in proc.stdout
    assert "code coverage: not measured (--no-coverage)." in summary_md


def test_a_target_neither_python_nor_node_says_not_measured(tmp_path: Path) -> None:
    """A shell wrapper around the reference server: what it runs cannot be told from the command."""
    inner = shlex.join([PYTHON, "-m", "mcp_tempest.targets.reference", "--transport", "stdio",
                        "--db", str(tmp_path / "db.sqlite3")])
    proc, findings, summary_md = fuzz(tmp_path, "stdio:" + shlex.join(["sh", "-c", f"exec {inner}"]))
    reason = "code coverage: not measured for this target (sh is neither a Python nor a Node.js program)"
    assert findings["reach"]["code"] == {"measured": False, "reason": reason}
    assert reason in proc.stdout.splitlines()
    assert reason + "." in summary_md
    endpoint = plan_coverage(parse_target("http://127.0.0.1:8123/mcp"), [], tmp_path / "e")
    assert isinstance(endpoint, NotMeasured) and endpoint.reason.startswith(
        "code coverage: not measured for this target (http://127.0.0.1:8123/mcp is a running endpoint")


def test_a_data_file_cut_short_is_counted_not_fatal(tmp_path: Path) -> None:
    """A process killed while V8 wrote leaves half a JSON file: noted, and the others still count."""
    plan = node_plan(TS_SDK.stdio_target(), tmp_path)
    (plan.data_dir / "coverage-1-2-0.json").write_text('{"result": [{"url": "file:///x.mjs", "functions": [')
    script = {"url": TS_SERVER.as_uri(), "functions": [
        {"functionName": "", "ranges": [{"startOffset": 0, "endOffset": 10, "count": 1}]},
        {"functionName": "buildServer", "ranges": [{"startOffset": 1, "endOffset": 5, "count": 1}]}]}
    (plan.data_dir / "coverage-3-4-0.json").write_text(json.dumps({"result": [script]}))
    reach = collect_node(plan)
    assert reach.processes == 1 and any("1 V8 coverage file(s) could not be read" in n for n in reach.notes)
    assert reach.files == [{"path": str(TS_SERVER), "percent": 100.0, "functions": 1,
                            "reached": ["buildServer (line 1)"], "never_reached": []}]

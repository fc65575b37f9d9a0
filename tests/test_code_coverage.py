"""Code coverage of a target's own code (targets/code_coverage.py), measured in real server processes.

Each test runs a real server through the real drivers (spawned, fork-served, HTTP instances),
sends a few requests, ends the processes the way the harness does, and checks the combined data:
the code those requests had to run is there, the code they could not reach is not. Line numbers
come from the servers' source (the body of a named function), so an edit there moves nothing.
"""

from __future__ import annotations

import ast
import json
import os
import shlex
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mcp_tempest.targets import code_coverage, wire
from mcp_tempest.targets.code_coverage import CoveragePlan, NotMeasured, collect, plan_coverage
from mcp_tempest.targets.endpoints import coverage_env, open_endpoint
from mcp_tempest.targets.stdio_driver import StdioPool
from mcp_tempest.targets.target_spec import default_target, parse_target
from mcp_tempest.targets.transcript import Transcript

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "targets" / "reference"
SDK_SERVER = ROOT / "tests" / "servers" / "sdk_server.py"
PY = sys.executable


def body_lines(path: Path, name: str) -> set[int]:
    """The statement lines of the body of function `name` in `path` (docstring left out)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]
            return {n.lineno for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.stmt)}
    raise AssertionError(f"no function {name} in {path}")


def def_line(path: Path, name: str) -> int:
    tree = ast.parse(path.read_text())
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)
    return node.lineno + len(node.decorator_list)


def measured_plan(spec_text: str | None, tmp_path: Path, sources: tuple[str, ...] = ()) -> CoveragePlan:
    spec = parse_target(spec_text) if spec_text else default_target()
    plan = plan_coverage(spec, list(sources), tmp_path / "data")
    assert isinstance(plan, CoveragePlan), plan
    return plan


def tool_call(rid: int, name: str, **arguments: object) -> dict:
    return wire.build_request(rid, "tools/call", {"name": name, "arguments": arguments})


# --- the reference server over stdio: fork-served and spawned ---


@pytest.mark.parametrize("fork", [True, False], ids=["fork-served", "spawned"])
def test_reference_stdio_lines_run_are_measured_and_others_not(tmp_path: Path, fork: bool) -> None:
    plan = measured_plan(None, tmp_path)
    assert plan.sources == (str(REFERENCE),)
    with StdioPool(plan.spec, 1, env=coverage_env(plan.spec), fork_server=fork) as pool:
        for rid in (1, 2):
            conn = pool.take(Transcript("t", "stdio"))
            try:
                answer = conn.request(wire.build_request(rid, "tools/list"), timeout=30)
                assert "tools" in answer["result"], answer
            finally:
                conn.close()  # stdin closed: the server exits and saves
            assert conn.process.ended_by in ("eof", "self")
        assert pool.forking is fork, pool.fork_note
    reach = collect(plan, tmp_path / "out")

    core = reach.executed_lines(REFERENCE / "core.py")
    assert body_lines(REFERENCE / "core.py", "_tools_list") & core  # the request ran the handler
    assert not body_lines(REFERENCE / "core.py", "_resources_read") & core  # no request reached it
    assert def_line(REFERENCE / "core.py", "_resources_read") in core  # its `def` ran when imported
    assert body_lines(REFERENCE / "stdio_server.py", "serve_stdio") & reach.executed_lines(REFERENCE / "stdio_server.py")
    assert not body_lines(REFERENCE / "http_server.py", "_serve") & reach.executed_lines(REFERENCE / "http_server.py")
    # fork-served: one data file per child and one for the zygote's imports; spawned: one per process
    # (the pool's spare included)
    assert reach.processes >= 3
    assert 0 < reach.percent < 100
    paths = {f["path"] for f in reach.files}
    assert {"targets/reference/core.py", "targets/reference/http_server.py"} <= paths  # never run: 0%
    assert all(Path(p).name != "sdk_server.py" for p in paths)
    assert next(f for f in reach.files if f["path"].endswith("auth.py"))["covered"] == 0
    # the reports coverage.py writes
    assert (tmp_path / "out" / "coverage_html" / "index.html").is_file()
    root = ET.parse(tmp_path / "out" / "coverage.xml").getroot()
    assert root.tag == "coverage" and float(root.get("line-rate", "0")) > 0
    as_json = json.loads(json.dumps(reach.to_json()))
    assert (as_json["percent"], as_json["files"]) == (reach.percent, reach.files)


def test_fork_served_children_do_not_carry_the_zygotes_data(tmp_path: Path) -> None:
    """The zygote's imports are saved once, in its own file; a child's file has only what it ran."""
    from coverage import CoverageData

    plan = measured_plan(None, tmp_path)
    with StdioPool(plan.spec, 1, env=coverage_env(plan.spec)) as pool:
        conn = pool.take(Transcript("t", "stdio"), refill=False)
        child = conn.process.pid
        conn.request(wire.build_request(1, "tools/list"), timeout=30)
        conn.close()
        assert pool.forking, pool.fork_note
    files = sorted((tmp_path / "data").glob(".coverage.*"))
    mine = [f for f in files if f".pid{child}." in f.name or f".{child}." in f.name]
    assert len(mine) == 1, files

    def lines_in(data_file: Path, path: Path) -> set[int]:
        data = CoverageData(basename=str(data_file))
        data.read()
        return set(data.lines(str(path)) or ())

    cli = REFERENCE / "cli.py"  # imported by the zygote (__main__ imports it at the top)
    child_cli = lines_in(mine[0], cli)
    assert body_lines(cli, "serve_main") & child_cli  # what the child ran
    assert def_line(cli, "serve_main") not in child_cli  # what only the zygote ran
    zygote_cli = set().union(*(lines_in(f, cli) for f in files if f != mine[0]))
    assert def_line(cli, "serve_main") in zygote_cli
    assert not body_lines(cli, "serve_main") & zygote_cli
    reach = collect(plan)
    assert def_line(cli, "serve_main") in reach.executed_lines(cli)
    assert body_lines(REFERENCE / "core.py", "_tools_list") & reach.executed_lines(REFERENCE / "core.py")


PROBE_MODULE = """
import coverage

AT_IMPORT = coverage.Coverage.current()  # imported by the zygote, under the Coverage it started
"""

PROBE_SERVER = """
import json
import sys

import coverage
import probe_module


def main():
    for line in sys.stdin:
        message = json.loads(line)
        now = coverage.Coverage.current()
        same = now is not None and now is probe_module.AT_IMPORT
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"same": same}}) + "\\n")
        sys.stdout.flush()


main()
"""


def test_fork_served_children_restart_the_zygotes_coverage(tmp_path: Path) -> None:
    """A child measures with the Coverage the zygote started (restarted, with a data file of its
    own), not a new one: constructing one costs a child 10-150 ms before its first answer."""
    from coverage import CoverageData

    (tmp_path / "probe_module.py").write_text(PROBE_MODULE)
    script = tmp_path / "probe_server.py"
    script.write_text(PROBE_SERVER)
    plan = measured_plan("stdio:" + shlex.join([PY, str(script)]), tmp_path)
    pids = []
    with StdioPool(plan.spec, 0, env=coverage_env(plan.spec)) as pool:
        for rid in (1, 2):  # the second child is forked after the zygote learned the first's imports
            conn = pool.take(Transcript("t", "stdio"), refill=False)
            try:
                assert conn.request({"jsonrpc": "2.0", "id": rid, "method": "x"}, timeout=30)["result"] == {"same": True}
            finally:
                conn.close()
            pids.append(conn.process.pid)
        assert pool.forking, pool.fork_note
    loop = {i + 1 for i, text in enumerate(PROBE_SERVER.splitlines()) if "same = now" in text}
    for pid in pids:  # each child's file, of branch data, has what it ran
        mine = [f for f in (tmp_path / "data").glob(".coverage.*") if f".pid{pid}." in f.name or f".{pid}." in f.name]
        assert len(mine) == 1
        data = CoverageData(basename=str(mine[0]))
        data.read()
        assert data.has_arcs()
        assert loop <= set(data.lines(str(script)) or ())


def test_collect_parses_each_file_once_and_reports_what_coverage_py_computes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The three reports share one parse per file; the numbers are coverage.py's own, as its CLI
    computes them from the same combined data."""
    from coverage.parser import PythonParser

    plan = measured_plan(None, tmp_path)
    with StdioPool(plan.spec, 0, env=coverage_env(plan.spec)) as pool:
        conn = pool.take(Transcript("t", "stdio"), refill=False)
        try:
            assert "tools" in conn.request(wire.build_request(1, "tools/list"), timeout=30)["result"]
        finally:
            conn.close()
    parsed: list[str] = []
    parse_source = PythonParser.parse_source

    def counted(self: PythonParser) -> None:
        parsed.append(self.filename)
        parse_source(self)

    monkeypatch.setattr(PythonParser, "parse_source", counted)
    reach = collect(plan, tmp_path / "out")
    monkeypatch.undo()
    assert len(reach.files) >= 10
    assert sorted(parsed) == sorted(set(parsed)) and len(parsed) == len(reach.files)

    data_file = str(plan.data_dir / code_coverage.DATA_NAME)
    own = tmp_path / "cli.json"
    subprocess.run([PY, "-m", "coverage", "json", f"--rcfile={plan.rcfile}", f"--data-file={data_file}",
                    "-o", str(own)], check=True, capture_output=True, cwd=ROOT)
    summary = json.loads(own.read_text())
    assert reach.percent == round(summary["totals"]["percent_covered"], 2)
    assert {f["path"]: f["percent"] for f in reach.files} == {
        path: round(entry["summary"]["percent_covered"], 2) for path, entry in summary["files"].items()}
    own_xml = tmp_path / "cli.xml"
    subprocess.run([PY, "-m", "coverage", "xml", f"--rcfile={plan.rcfile}", f"--data-file={data_file}",
                    "-o", str(own_xml)], check=True, capture_output=True, cwd=ROOT)
    ours, theirs = ET.parse(tmp_path / "out" / "coverage.xml").getroot(), ET.parse(own_xml).getroot()
    for root in (ours, theirs):
        root.attrib.pop("timestamp", None)
    assert ET.tostring(ours) == ET.tostring(theirs)


def test_the_teardown_reserve_grows_with_the_files_collect_parses(tmp_path: Path) -> None:
    """What a --duration campaign keeps for `collect`: a little for one script, more for a package."""
    script = measured_plan("stdio:" + shlex.join([PY, str(SDK_SERVER)]), tmp_path / "a")
    package = measured_plan(None, tmp_path / "b")
    files = len(list(REFERENCE.rglob("*.py")))
    assert script.teardown_seconds() < 1.0
    assert package.teardown_seconds() == pytest.approx(script.teardown_seconds() + 0.1 * (files - 1))


# --- the official Python SDK server ---


@pytest.mark.parametrize("fork", [True, False], ids=["fork-served", "spawned"])
def test_sdk_server_saves_its_data_on_sigterm(tmp_path: Path, fork: bool) -> None:
    """A server still running when the harness escalates to SIGTERM (here sent while it is idle):
    coverage's handler saves first (`sigterm = true`), then the process dies of the signal as it
    would have without coverage."""
    plan = measured_plan("stdio:" + shlex.join([PY, str(SDK_SERVER)]), tmp_path)
    assert plan.sources == (str(SDK_SERVER),)
    with StdioPool(plan.spec, 1, env=coverage_env(plan.spec), fork_server=fork) as pool:
        conn = pool.take(Transcript("t", "stdio"), refill=False)
        try:
            answer = conn.request(tool_call(1, "echo", text="hi"), timeout=60)
            assert answer["result"]["content"][0]["text"] == "hi"
            conn.process.signal_group(signal.SIGTERM)
            status = conn.process.wait_exit(10)
        finally:
            conn.close()
        assert status == -signal.SIGTERM, conn.process.stderr_tail()
        assert pool.forking is fork, pool.fork_note
    reach = collect(plan)
    ran = reach.executed_lines(SDK_SERVER)
    assert body_lines(SDK_SERVER, "echo") <= ran
    assert not body_lines(SDK_SERVER, "week") & ran  # resources/read was never asked
    assert [f["path"] for f in reach.files] == ["tests/servers/sdk_server.py"]


def test_sdk_server_through_the_campaigns_endpoint(tmp_path: Path) -> None:
    """The endpoint the campaign opens (fresh processes from its pool, ended in the background)."""
    plan = measured_plan("stdio:" + shlex.join([PY, str(SDK_SERVER)]), tmp_path)
    endpoint = open_endpoint(plan.spec, timeout=30)
    try:
        for rid in (1, 2):
            transcript = Transcript("t", "stdio")
            conn = endpoint.fresh(transcript)
            assert conn.request(tool_call(rid, "echo", text="x"), timeout=60)["result"]["content"][0]["text"] == "x"
            endpoint.retire(conn, reusable=False)
    finally:
        endpoint.close()
    reach = collect(plan)
    assert body_lines(SDK_SERVER, "echo") <= reach.executed_lines(SDK_SERVER)
    assert not body_lines(SDK_SERVER, "create_event_body") & reach.executed_lines(SDK_SERVER)
    assert reach.processes >= 2


# --- HTTP instances ---


def test_reference_http_spawn_instances_are_measured(tmp_path: Path) -> None:
    plan = measured_plan(None, tmp_path)
    plan = plan_coverage(default_target("http"), [], tmp_path / "data")
    assert isinstance(plan, CoveragePlan)
    endpoint = open_endpoint(plan.spec, timeout=30)
    try:
        conn = endpoint.fresh(Transcript("t", "http"))
        conn.send(wire.build_request(1, "tools/list"))
        endpoint.retire(conn, reusable=False)
    finally:
        endpoint.close()  # SIGTERM to each instance: the server's own handler ends it cleanly
    reach = collect(plan)
    core = reach.executed_lines(REFERENCE / "core.py")
    assert body_lines(REFERENCE / "core.py", "_tools_list") & core
    assert body_lines(REFERENCE / "http_server.py", "_serve") & reach.executed_lines(REFERENCE / "http_server.py")
    assert not body_lines(REFERENCE / "stdio_server.py", "serve_stdio") & reach.executed_lines(REFERENCE / "stdio_server.py")


# --- what is measured ---

TINY_SERVER = '''
import json, sys


def main():
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("method") == "tools/list":
            result = {"tools": []}
        else:
            result = {"unknown": message.get("method")}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\\n")
        sys.stdout.flush()
    return 0


def never_called():
    return "not run"
'''

PIP_WRAPPER = '''#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from {module} import main
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(main())
'''


def test_console_script_resolves_its_package_and_is_measured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "site" / "tinyserver"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "serve.py").write_text(TINY_SERVER)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    script = tmp_path / "bin" / "tiny-server"
    script.parent.mkdir()
    script.write_text(PIP_WRAPPER.format(python=PY, module="tinyserver.serve"))
    script.chmod(0o755)

    plan = measured_plan("stdio:" + shlex.join([str(script), "--flag"]), tmp_path)
    assert plan.sources == (str(package),)
    command = code_coverage.python_command(plan.spec.argv)
    assert command is not None and command.kind == "console" and command.python == PY
    with StdioPool(plan.spec, 0, env=coverage_env(plan.spec)) as pool:
        conn = pool.take(Transcript("t", "stdio"), refill=False)
        try:
            assert conn.request({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=30)["result"] == {"tools": []}
        finally:
            conn.close()
    reach = collect(plan)
    ran = reach.executed_lines(package / "serve.py")
    assert {ln for ln in body_lines(package / "serve.py", "main") if "tools" in TINY_SERVER.splitlines()[ln - 1]} <= ran
    assert not body_lines(package / "serve.py", "never_called") & ran
    unknown_branch = next(i + 1 for i, text in enumerate(TINY_SERVER.splitlines()) if '"unknown"' in text)
    assert unknown_branch not in ran
    assert {f["path"].rsplit("/", 1)[-1] for f in reach.files} == {"__init__.py", "serve.py"}


def test_the_harness_own_console_script_measures_the_reference_server_only(tmp_path: Path) -> None:
    """`mcp-tempest serve` runs the reference server: that (and its mutants) is the server's code,
    not the harness the same console script holds (measured whole, it read "1% of the server")."""
    from mcp_tempest.targets import mutants, reference

    exe = Path(sys.executable).with_name("mcp-tempest")
    plan = measured_plan("stdio:" + shlex.join([str(exe), "serve", "--bug", "null-id-accepted"]), tmp_path)
    assert plan.sources == (str(Path(reference.__file__).parent), str(Path(mutants.__file__).parent))


def test_console_script_below_a_namespace_package_measures_the_first_regular_package(tmp_path: Path) -> None:
    script = tmp_path / "ref-server"
    script.write_text(PIP_WRAPPER.format(python=PY, module="mcp_tempest.targets.reference.cli"))
    script.chmod(0o755)
    plan = plan_coverage(parse_target("stdio:" + shlex.join([str(script)])), [], tmp_path / "data")
    assert isinstance(plan, CoveragePlan), plan
    assert plan.sources == (str(ROOT / "targets"),)  # mcp_tempest is a namespace package


def test_extra_sources_are_added_and_unknown_ones_noted(tmp_path: Path) -> None:
    plan = measured_plan("stdio:" + shlex.join([PY, str(SDK_SERVER)]), tmp_path,
                         sources=("mcp_tempest.targets.wire", "no_such_module_anywhere"))
    assert plan.sources == (str(SDK_SERVER), str(ROOT / "targets"))
    assert any("no_such_module_anywhere" in n for n in plan.notes)


def test_targets_that_cannot_be_measured_say_why_in_one_line(tmp_path: Path) -> None:
    node = plan_coverage(parse_target("stdio:sh -c 'exec node tests/servers/ts_server.mjs'"), [], tmp_path)
    assert isinstance(node, NotMeasured)  # node itself is measured (tests/test_node_coverage.py); a shell is not
    assert node.reason == "code coverage: not measured for this target (sh is neither a Python nor a Node.js program)"
    endpoint = plan_coverage(parse_target("http://127.0.0.1:8123/mcp"), [], tmp_path)
    assert isinstance(endpoint, NotMeasured) and "running endpoint" in endpoint.reason
    assert "\n" not in node.reason + endpoint.reason


def test_an_interpreter_without_coverage_is_not_measured(tmp_path: Path) -> None:
    bare = Path("/usr/bin/python3")
    if not bare.is_file() or subprocess.run([str(bare), "-c", "import coverage"], capture_output=True).returncode == 0:
        pytest.skip("needs a Python without coverage at /usr/bin/python3")
    result = plan_coverage(parse_target(f"stdio:{bare} {SDK_SERVER}"), [], tmp_path)
    assert isinstance(result, NotMeasured)
    assert result.reason.startswith(f"code coverage: not measured for this target ({bare} cannot import coverage")


def test_without_a_plan_commands_are_left_alone() -> None:
    argv = [PY, "-m", "mcp_tempest.targets.reference"]
    assert code_coverage.measured(argv, dict(os.environ, **{code_coverage.RC_VAR: ""})) == argv
    assert coverage_env(default_target()) is None
    wrapped = code_coverage.measured(argv, {code_coverage.RC_VAR: "/x/rc"})
    assert wrapped == [PY, "-m", "coverage", "run", "--rcfile=/x/rc", "-m", "mcp_tempest.targets.reference"]
    assert code_coverage.measured(["node", "x.mjs"], {code_coverage.RC_VAR: "/x/rc"}) == ["node", "x.mjs"]

"""`--isolate-network`: the server of a stdio: or http+spawn: target runs in a network namespace
of its own. The test holds a listener on this machine's loopback, outside that namespace; the
server tries to connect to it when it starts (tests/hostile_targets/reach_out.py). Isolated, no
attempt may arrive and the campaign still works; not isolated, the same server reaches it (so
the check can fail). Nothing here sends to an address outside the machine.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from process_support import default_sigint

from mcp_tempest.targets import netns, wire

PY = sys.executable
ROOT = Path(__file__).resolve().parent.parent
REACH = ROOT / "tests" / "hostile_targets" / "reach_out.py"
CLI = [PY, "-m", "mcp_tempest.fuzz.cli"]

needs_netns = pytest.mark.skipif(not netns.available()[0], reason=f"no network namespace here: {netns.available()[1]}")


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A listener on 127.0.0.1 outside any namespace the harness makes."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    sock.setblocking(False)
    yield sock
    sock.close()


def arrivals(sock: socket.socket) -> int:
    count = 0
    while True:
        try:
            conn, _ = sock.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


def target(kind: str, port: int, log: Path) -> str:
    reach = [PY, str(REACH), str(port), str(log)]
    if kind == "stdio":
        return "stdio:" + shlex.join([*reach, "--transport", "stdio"])
    return "http+spawn:" + shlex.join([*reach, "--transport", "http", "--host", "127.0.0.1", "--port", "{port}"])


def run(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout,
                          preexec_fn=default_sigint)


@needs_netns
@pytest.mark.parametrize("kind", ["stdio", "http+spawn"])
def test_an_isolated_target_reaches_nothing_and_the_campaign_still_works(
    kind: str, listener: socket.socket, tmp_path: Path
) -> None:
    log = tmp_path / "reach.log"
    port = listener.getsockname()[1]
    done = run("fuzz", "--isolate-network", "--target", target(kind, port, log), "--max-examples", "8",
               "--seed", "1", "--properties", "valid,handoff", "--out", str(tmp_path / "out"), "--no-database",
               "--progress", "never")
    assert done.returncode == 0, done.stdout + done.stderr
    outcomes = log.read_text().splitlines()
    assert len(outcomes) >= 2  # the probe's server and the campaign's fresh ones
    assert all(o.startswith("unreachable") for o in outcomes), outcomes
    assert arrivals(listener) == 0


@pytest.mark.parametrize("kind", ["stdio", "http+spawn"])
def test_without_isolation_the_same_server_reaches_the_listener(
    kind: str, listener: socket.socket, tmp_path: Path
) -> None:
    log = tmp_path / "reach.log"
    done = run("probe", "--target", target(kind, listener.getsockname()[1], log))
    assert done.returncode == 0, done.stdout + done.stderr
    assert log.read_text().splitlines()[0] == "reached"
    assert arrivals(listener) >= 1


@needs_netns
@pytest.mark.parametrize("kind", ["stdio", "http+spawn"])
def test_an_isolated_probe_works(kind: str, listener: socket.socket, tmp_path: Path) -> None:
    log = tmp_path / "reach.log"
    done = run("probe", "--isolate-network", "--target", target(kind, listener.getsockname()[1], log))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "modern 2026-07-28" in done.stdout
    outcomes = log.read_text().splitlines()
    assert outcomes and all(o.startswith("unreachable") for o in outcomes), outcomes
    assert arrivals(listener) == 0


def test_a_running_endpoint_cannot_be_isolated() -> None:
    done = run("probe", "--isolate-network", "--target", "http://127.0.0.1:9/mcp", timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "--isolate-network" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv to drop CAP_SYS_ADMIN")
@pytest.mark.parametrize("command", ["probe", "fuzz"])
def test_where_the_machine_does_not_allow_it_one_line_and_exit_2(command: str, tmp_path: Path) -> None:
    extra = ["--out", str(tmp_path / "out"), "--no-database", "--max-examples", "1"] if command == "fuzz" else []
    done = subprocess.run(["setpriv", "--bounding-set=-sys_admin", "--", *CLI, command, "--isolate-network",
                           *extra], capture_output=True, text=True, cwd=ROOT, timeout=120, preexec_fn=default_sigint)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "network namespace" in lines[0], done.stderr
    assert "Traceback" not in done.stderr


@needs_netns
def test_load_runs_against_an_isolated_http_spawn_target(listener: socket.socket, tmp_path: Path) -> None:
    log = tmp_path / "reach.log"
    out = tmp_path / "load"
    done = subprocess.run([PY, "-m", "mcp_tempest.load", "--isolate-network", "--target", target("http+spawn", listener.getsockname()[1], log),
                           "--run-time", "3s", "--users", "2", "--out", str(out)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, preexec_fn=default_sigint)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = orjson.loads((out / "summary.json").read_bytes())
    assert summary["requests"] > 0 and summary["failures"] == 0
    outcomes = log.read_text().splitlines()
    assert outcomes and all(o.startswith("unreachable") for o in outcomes), outcomes
    assert arrivals(listener) == 0


@needs_netns
@pytest.mark.parametrize("fork_server", [True, False])
def test_every_fresh_process_has_a_namespace_of_its_own(fork_server: bool) -> None:
    from mcp_tempest.targets.stdio_driver import StdioPool
    from mcp_tempest.targets.target_spec import default_target, isolated
    from mcp_tempest.targets.transcript import Transcript

    spec = isolated(default_target("stdio"))
    pool = StdioPool(spec, size=0, fork_server=fork_server)
    try:
        conns = [pool.take(Transcript(spec.text, "stdio")) for _ in range(2)]
        assert pool.forking is fork_server
        for conn in conns:  # answered: past its start-up, so in the namespace it runs in
            idx = conn.send(wire.build_request("ns", "server/discover"))
            assert conn.read_until(lambda e: e.kind == "recv", 20.0, since=idx, awaited="discover") is not None
        spaces = {os.readlink(f"/proc/{c.process.pid}/ns/net") for c in conns}
        assert len(spaces) == 2 and os.readlink("/proc/self/ns/net") not in spaces
        for conn in conns:
            conn.close()
    finally:
        pool.close()

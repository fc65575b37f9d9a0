"""The fork server (targets/fork_server.py): fresh processes forked from a zygote behave like
spawned ones (state starts anew, nothing leaks between them), it steps aside with a note where
forking would differ, and nothing it forked outlives the harness."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from mcp_tempest.targets import fork_server, wire
from mcp_tempest.targets.ownership import tagged_processes
from mcp_tempest.targets.processes import group_members
from mcp_tempest.targets.stdio_driver import StdioPool
from mcp_tempest.targets.target_spec import default_target
from mcp_tempest.targets.transcript import Transcript

PY = sys.executable
ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "hostile_targets"
COUNTING = [PY, str(HOSTILE / "counting_server.py")]


def ask(pool: StdioPool, lines: int) -> list[dict]:
    tr = Transcript("t", "stdio")
    conn = pool.take(tr)
    try:
        return [conn.request(wire.build_request(i + 1, "ping"), timeout=20)["result"] for i in range(lines)]
    finally:
        conn.close()


def test_applies_to_python_scripts_and_modules_only() -> None:
    assert fork_server.applies([PY, "x.py"]) is None  # no such file
    assert fork_server.applies([PY, str(HOSTILE / "counting_server.py"), "--a"])[0] == "script"
    assert fork_server.applies([PY, "-m", "mcp_tempest.targets.reference", "--transport", "stdio"])[:2] == ("module", "mcp_tempest.targets.reference")
    assert fork_server.applies(["node", "server.js"]) is None
    assert fork_server.applies([PY, "-X", "dev", "-m", "x"]) is None


def test_every_forked_process_starts_with_fresh_module_state() -> None:
    with StdioPool(COUNTING, 1) as pool:
        first = ask(pool, 3)
        second = ask(pool, 1)
        assert pool.forking, pool.fork_note
    assert [r["seen"] for r in first] == [1, 2, 3]
    assert second[0]["seen"] == 1  # nothing the first process did is seen by the next
    assert first[0]["pid"] != second[0]["pid"]


def test_forked_and_spawned_processes_answer_alike() -> None:
    spec = default_target()
    replies = []
    for fork in (True, False):
        with StdioPool(spec, 1, fork_server=fork) as pool:
            tr = Transcript("t", "stdio")
            conn = pool.take(tr)
            try:
                reply = conn.request(wire.build_request(1, "server/discover"), timeout=30)
            finally:
                conn.close()
            assert pool.forking is fork
            replies.append((reply["result"]["supportedVersions"], next(e for e in tr.events if e.kind == "exit").status))
    assert replies[0] == replies[1] == (["2026-07-28"], 0)


def test_threads_started_at_import_turn_it_off_with_a_note() -> None:
    with StdioPool([PY, str(HOSTILE / "threaded_server.py")], 1) as pool:
        assert ask(pool, 2)[1]["seen"] == 2
        assert not pool.forking
        assert "threads" in pool.fork_note


def test_the_environment_switch_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fork_server.DISABLE_VAR, "1")
    with StdioPool(COUNTING, 1) as pool:
        ask(pool, 1)
        assert not pool.forking and pool.fork_note == ""


HARNESS = """
import sys, time
from mcp_tempest.targets.stdio_driver import StdioPool
from mcp_tempest.targets.transcript import Transcript
from mcp_tempest.targets import wire
pool = StdioPool([sys.executable, sys.argv[1]], 1)
conn = pool.take(Transcript("t", "stdio"))
assert conn.request(wire.build_request(1, "ping"), timeout=20)["result"]["seen"] == 1
print(conn.pid, pool._forker._zygote.pid, flush=True)
time.sleep(120)
"""


def test_forked_servers_and_the_zygote_die_with_a_killed_harness() -> None:
    tag = uuid.uuid4().hex
    env = {**os.environ, "FORK_TEST_TAG": tag}
    harness = subprocess.Popen([PY, "-c", HARNESS, str(HOSTILE / "counting_server.py")], stdout=subprocess.PIPE,
                               cwd=ROOT, env=env)
    try:
        assert harness.stdout is not None
        child, zygote = (int(p) for p in harness.stdout.readline().split())
        assert group_members(child) and group_members(zygote)
        harness.send_signal(signal.SIGKILL)
        harness.wait(timeout=10)
        deadline = time.monotonic() + 10
        while (tagged_processes(tag, var="FORK_TEST_TAG")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not tagged_processes(tag, var="FORK_TEST_TAG")
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()


def test_a_closed_pool_leaves_no_process() -> None:
    tag = uuid.uuid4().hex
    env = {**os.environ, "FORK_TEST_TAG": tag}
    with StdioPool(COUNTING, 2, env=env) as pool:
        ask(pool, 1)
        ask(pool, 1)
        assert pool.forking
        assert tagged_processes(tag, var="FORK_TEST_TAG")  # zygote and spares, while open
    deadline = time.monotonic() + 5
    while tagged_processes(tag, var="FORK_TEST_TAG") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not tagged_processes(tag, var="FORK_TEST_TAG")


LAZY = [PY, str(HOSTILE / "lazy_import_server.py")]


def _one_process(pool: StdioPool) -> dict:
    """One fresh process asked twice, then ended by closing its stdin (so it reports its imports)."""
    conn = pool.take(Transcript("t", "stdio"), refill=False)
    try:
        conn.request(wire.build_request(1, "ping"), timeout=20)
        return conn.request(wire.build_request(2, "ping"), timeout=20)["result"]
    finally:
        conn.close()


def test_what_a_child_imports_once_running_is_preloaded_for_the_next_with_fresh_state() -> None:
    with StdioPool([*LAZY, "lazy_helper"], 0) as pool:
        first, second, third = (_one_process(pool) for _ in range(3))
        assert pool.forking, pool.fork_note
    assert first["preloaded"] is False  # nothing learned yet
    assert second["preloaded"] is True and third["preloaded"] is True  # the zygote imported it
    # the module's state is the import-time one in every process: nothing carries over
    assert first["bumps"] == second["bumps"] == third["bumps"] == 2


def test_a_learned_import_that_starts_a_thread_is_refused_and_forking_goes_on() -> None:
    with StdioPool([*LAZY, "thread_at_import"], 0) as pool:
        answers = [_one_process(pool) for _ in range(3)]
        assert pool.forking, pool.fork_note
    assert [a["preloaded"] for a in answers] == [False, False, False]
    assert all(a["threads"] == 2 for a in answers)  # each process started the thread itself


def test_orders_never_taken_end_with_the_fork_server() -> None:
    tag = uuid.uuid4().hex
    env = {**os.environ, "FORK_TEST_TAG": tag}
    server = fork_server.ForkServer(COUNTING, env)
    orders = [server.order() for _ in range(3)]  # forked, their pids never read
    server.close()
    for order in orders:
        with pytest.raises(fork_server.SpawnError):
            order.process()
    deadline = time.monotonic() + 5
    while tagged_processes(tag, var="FORK_TEST_TAG") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not tagged_processes(tag, var="FORK_TEST_TAG")

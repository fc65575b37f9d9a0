"""Servers written to break the harness (tests/hostile_targets/): bounded memory, bounded time,
nothing left running, and one line with exit 2 where the target is unusable.

Memory is the harness process's peak RSS, sampled while it runs (generous bounds: the failures
these guard against were gigabytes). Leftover processes are found by the environment tag each
test gives the harness, which every server and daemon below it inherits.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest
from process_support import default_sigint, end_test_processes, marked, run_measured

from mcp_tempest.targets import cgroups, wire
from mcp_tempest.targets.ownership import tagged_processes
from mcp_tempest.targets.processes import group_members, spawn
from mcp_tempest.targets.spawn_pool import SpawnPool, free_ports
from mcp_tempest.targets.stdio_driver import NOISE_EVENT_CAP, StdioConnection
from mcp_tempest.targets.target_spec import parse_target
from mcp_tempest.targets.transcript import NOTIFICATION_KEEP, Transcript

PY = sys.executable
ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "hostile_targets"
CLI = [PY, "-m", "mcp_tempest.fuzz.cli"]
RSS_BOUND_MB = 300
TAG_VAR = "HOSTILE_TEST_TAG"


def hostile(name: str, *args: str) -> str:
    return shlex.join([PY, str(HOSTILE / name), *args])


def tagged_env() -> tuple[dict[str, str], str]:
    tag = uuid.uuid4().hex
    return {**os.environ, TAG_VAR: tag}, tag


def wait_untagged(tag: str, seconds: float = 10.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while True:
        left = tagged_processes(tag, var=TAG_VAR)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)


@pytest.fixture
def http_server() -> object:
    """Start tests/hostile_targets/slow_http.py in MODE on a free port; yields a starter."""
    started: list[subprocess.Popen[bytes]] = []

    def start(mode: str) -> str:
        port = free_ports(1)[0]
        proc = subprocess.Popen([PY, str(HOSTILE / "slow_http.py"), str(port), mode])
        started.append(proc)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with __import__("socket").create_connection(("127.0.0.1", port), timeout=0.5):
                    return f"http://127.0.0.1:{port}/mcp"
            except OSError:
                time.sleep(0.05)
        raise AssertionError("slow_http.py did not listen")

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


# --- waits without bound ---


@pytest.mark.parametrize("command", ["probe", "fuzz"])
def test_headers_one_byte_every_half_second_do_not_outlast_the_timeout(http_server, command: str, tmp_path: Path) -> None:
    url = http_server("slow-headers")
    if command == "probe":
        argv = [*CLI, "probe", "--target", url, "--timeout", "2"]
    else:
        argv = [*CLI, "fuzz", "--target", url, "--timeout", "2", "--max-examples", "3", "--seed", "1",
                "--out", str(tmp_path / "out"), "--no-database", "--progress", "never"]
    status, _out, err, seconds, _rss = run_measured(argv, timeout=120, cwd=ROOT)
    assert status == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert seconds < 60, f"{command} took {seconds:.1f} s with --timeout 2"


def test_a_server_answering_in_two_seconds_is_ready_under_a_longer_timeout() -> None:
    spec = parse_target(f"http+spawn:{hostile('slow_http.py', '{port}', 'delay=2')}")
    start = time.monotonic()
    with SpawnPool(spec, 1, ready_timeout=20) as pool:
        assert pool.alive()
    assert time.monotonic() - start >= 2.0


# --- memory without bound ---


@pytest.mark.parametrize("mode", ["chunked", "sse"])
def test_endless_body_costs_bounded_memory_when_spawned(mode: str) -> None:
    target = f"http+spawn:{hostile('slow_http.py', '{port}', mode)}"
    env, tag = tagged_env()
    status, _out, err, seconds, rss = run_measured(
        [*CLI, "probe", "--target", target, "--timeout", "3"], timeout=120, env=env, cwd=ROOT
    )
    assert status == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert rss < RSS_BOUND_MB, f"peak RSS {rss:.0f} MB"
    assert seconds < 60
    assert not wait_untagged(tag)


def test_endless_body_costs_bounded_memory_in_load_discovery(http_server) -> None:
    url = http_server("chunked")
    status, _out, err, _seconds, rss = run_measured(
        [PY, "-m", "mcp_tempest.load", "--target", url, "--run-time", "2s", "--timeout", "3", "--users", "1"], timeout=120,
        cwd=ROOT,
    )
    assert status == 2, err
    assert "Traceback" not in err, err
    assert rss < RSS_BOUND_MB, f"peak RSS {rss:.0f} MB"


def test_stdout_noise_is_capped_and_reported_once() -> None:
    tr = Transcript("noisy", "stdio")
    conn = StdioConnection(tr, spawn([PY, str(HOSTILE / "noisy_stdio.py")]))
    try:
        conn.send(wire.build_request(1, "server/discover"))
        assert conn.read_until(lambda e: e.kind == "recv", 2.0) is None
    finally:
        conn.terminate()
    noise = [e for e in tr.events if e.kind == "noise"]
    assert len(noise) == NOISE_EVENT_CAP + 1, len(noise)
    assert "not recorded" in noise[-1].note and "cap" in noise[-1].note
    assert sum(len(e.raw or b"") for e in tr.events) < 1024 * 1024


def test_a_flood_of_valid_notifications_is_counted_not_kept() -> None:
    tr = Transcript("flood", "stdio")
    conn = StdioConnection(tr, spawn([PY, str(HOSTILE / "noisy_stdio.py"), "notifications"]))
    try:
        conn.send(wire.build_request(1, "server/discover"))
        assert conn.read_until(lambda e: e.kind == "recv" and "id" in e.message, 3.0) is None
    finally:
        conn.terminate()
    kept = [e for e in tr.events if e.kind == "recv"]
    assert len(kept) == NOTIFICATION_KEEP, len(kept)
    assert tr.dropped > NOTIFICATION_KEEP  # the flood went on, and was read (the server never blocked)
    marks = [e for e in tr.events if e.kind == "oversize"]
    assert len(marks) == 1 and "counted, not kept" in marks[0].note
    assert Transcript.from_json(tr.to_json()).dropped == tr.dropped


def test_stderr_is_a_bounded_ring_in_memory_not_a_file() -> None:
    env = {**os.environ, "STDERR_MB": "20"}
    tr = Transcript("chatty", "stdio")
    process = spawn([PY, str(HOSTILE / "chatty_stderr.py")], env=env)
    fds = [os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd") if _is_link(fd)]
    assert not any("mcp-tempest-stderr" in path for path in fds)
    conn = StdioConnection(tr, process)
    try:
        reply = conn.request(wire.build_request(1, "server/discover"), timeout=20)
        assert reply is not None and "result" in reply
        deadline = time.monotonic() + 30
        while process._log.total < 20 * 2**20 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process._log.total >= 20 * 2**20  # all of it was read (the writer never blocked)
    finally:
        conn.terminate()
    tail = next(e for e in tr.events if e.kind == "stderr").raw
    assert tail is not None and 0 < len(tail) <= 8192 and tail.endswith(b"E\n")


def _is_link(fd: str) -> bool:
    try:
        os.readlink(f"/proc/self/fd/{fd}")
        return True
    except OSError:
        return False


# --- processes left behind ---


@pytest.mark.parametrize("transport", ["stdio", "http+spawn"])
def test_double_forking_daemons_leave_no_process_after_a_campaign(transport: str, tmp_path: Path) -> None:
    env, tag = tagged_env()
    db = tmp_path / "server.sqlite3"
    if transport == "stdio":
        target = f"stdio:{hostile('daemonizing.py', '--db', str(db))}"
    else:
        target = f"http+spawn:{hostile('daemonizing.py', '--db', str(db), '--port', '{port}')}"
    status, out, err, _seconds, rss = run_measured(
        [*CLI, "fuzz", "--target", target, "--max-examples", "12", "--seed", "3", "--properties", "valid,handoff",
         "--out", str(tmp_path / "out"), "--no-database", "--progress", "never", "--timeout", "5"],
        timeout=300, env=env, cwd=ROOT,
    )
    assert status in (0, 1), out + err
    assert "Traceback" not in err
    left = wait_untagged(tag)
    assert not left, [psutil.Process(p).cmdline() for p in left if psutil.pid_exists(p)]


HARNESS_HOLDING_SERVERS = """
import os, sys
from mcp_tempest.targets.connect import Target
from mcp_tempest.targets.target_spec import default_target
target = Target(default_target("http"), instances=2).start()
print(" ".join(str(p.pgid) for p in target.pool.processes), flush=True)
import time; time.sleep(120)
"""


def test_sigkill_of_the_harness_leaves_no_http_spawn_server() -> None:
    env, tag = tagged_env()
    harness = subprocess.Popen([PY, "-c", HARNESS_HOLDING_SERVERS], stdout=subprocess.PIPE, cwd=ROOT, env=env)
    try:
        assert harness.stdout is not None
        pgids = [int(p) for p in harness.stdout.readline().split()]
        assert len(pgids) == 2 and all(group_members(g) for g in pgids)
        harness.send_signal(signal.SIGKILL)
        harness.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(group_members(g) for g in pgids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(group_members(g) for g in pgids)
        assert not wait_untagged(tag)
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()


# A harness holding one stdio server behind a `sh -c` wrapper: the wrapper's child `sleep` (the
# grandchild) is not reached by the parent-death signal, which only the wrapper gets. With
# `escape`, the grandchild also leaves the session and drops its environment (no tag left).
HARNESS_HOLDING_A_WRAPPER = """
import shlex, sys
from mcp_tempest.targets.connect import Target
from mcp_tempest.targets.target_spec import reference_command
escape = sys.argv[1] == "escape"
child = f"setsid env -i sh -c 'sleep 300; : {sys.argv[2]}'" if escape else f"sleep 300 # {sys.argv[2]}"
server = shlex.join(reference_command("--transport", "stdio"))
target = Target(f"stdio:sh -c {shlex.quote(child + ' & exec ' + server)}", prestart=0)
conn = target.connect()
print(conn.process.pgid, flush=True)
import time; time.sleep(120)
"""




@pytest.mark.parametrize("escape", ["tagged", "escape"])
def test_sigkill_of_the_harness_leaves_no_grandchild_of_a_wrapper(escape: str) -> None:
    if escape == "escape" and not cgroups.available()[0]:
        pytest.skip(f"no cgroup per server here: {cgroups.available()[1]}")
    env, tag = tagged_env()
    marker = f"tempest-grandchild-{uuid.uuid4().hex}"
    harness = subprocess.Popen([PY, "-c", HARNESS_HOLDING_A_WRAPPER, escape, marker], stdout=subprocess.PIPE,
                               cwd=ROOT, env=env)
    try:
        assert harness.stdout is not None
        pgid = int(harness.stdout.readline())
        deadline = time.monotonic() + 10
        while not marked(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marked(marker), "the wrapper's child never started"
        assert group_members(pgid)
        harness.send_signal(signal.SIGKILL)
        harness.wait(timeout=10)
        def leftover() -> list[Path]:
            return [p for p in Path("/sys/fs/cgroup").rglob(f"mcp-tempest-{harness.pid}") if p.is_dir()]

        # The guardian kills first and removes the cgroups after: wait for both (on a loaded machine
        # the directory goes a little after the last process).
        deadline = time.monotonic() + 15
        while (marked(marker) or group_members(pgid) or leftover()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not marked(marker), "the wrapper's grandchild outlived the harness"
        assert not group_members(pgid)
        assert not wait_untagged(tag)
        assert not leftover(), leftover()
    finally:
        end_test_processes(harness, marker)


def test_each_server_gets_a_cgroup_of_its_own_removed_when_it_ends() -> None:
    if not cgroups.available()[0]:
        pytest.skip(f"no cgroup per server here: {cgroups.available()[1]}")
    proc = spawn(["sh", "-c", "setsid env -i sleep 300 & exec sleep 300"])
    try:
        assert proc.cgroup is not None and proc.cgroup.path.is_dir()
        # The background child is in the cgroup from its fork on, and in the process group until its
        # setsid() runs a moment later: wait for both, or a busy machine catches it between the two.
        deadline = time.monotonic() + 5
        while (len(proc.cgroup.members()) < 2 or group_members(proc.pgid, exclude=proc.pid)) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.02)
        members = proc.cgroup.members()
        assert proc.pid in members and len(members) == 2, members
        escaped = next(p for p in members if p != proc.pid)
        assert not group_members(proc.pgid, exclude=proc.pid)  # it left the group: only the cgroup holds it
    finally:
        proc.reap(grace=0.1, term_grace=0.1)
    assert not psutil.pid_exists(escaped) or psutil.Process(escaped).status() == psutil.STATUS_ZOMBIE
    assert not proc.cgroup.path.exists()


def test_a_gone_harness_leaves_no_empty_cgroup_behind() -> None:
    """A harness killed together with its guardian leaves empty directories; the next one removes
    them (only empty ones of harnesses that are gone)."""
    root = cgroups.harness_root()
    if root is None:
        pytest.skip(f"no cgroup per server here: {cgroups.available()[1]}")
    gone = subprocess.run([PY, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    stale = root.parent / f"mcp-tempest-{gone}"
    (stale / f"{gone}.1").mkdir(parents=True)
    cgroups._sweep_stale(root.parent)
    assert not stale.exists()
    assert root.is_dir()  # ours: this harness is alive


@pytest.mark.slow
def test_peak_memory_of_a_300_example_campaign_against_a_correct_stdio_server(tmp_path: Path) -> None:
    """The bound the issue sets (300 MB); measured 270 MB without and 66 MB with an example database."""
    status, out, err, _seconds, rss = run_measured(
        [*CLI, "fuzz", "--transports", "stdio", "--max-examples", "300", "--seed", "1", "--out", str(tmp_path / "o"),
         "--no-database", "--progress", "never"],
        timeout=900, cwd=ROOT,
    )
    assert status == 0, out + err
    assert rss < RSS_BOUND_MB, f"peak RSS {rss:.0f} MB"


def test_sigterm_of_load_stops_locust_and_the_servers(tmp_path: Path) -> None:
    env, tag = tagged_env()
    out = tmp_path / "load"
    load = subprocess.Popen([PY, "-m", "mcp_tempest.load", "--run-time", "60s", "--users", "2", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env,
                            preexec_fn=default_sigint)
    try:
        deadline = time.monotonic() + 60
        locust_running = False
        while time.monotonic() < deadline and load.poll() is None and not locust_running:
            time.sleep(0.2)
            locust_running = any("locust" in " ".join(_cmdline(p)) for p in tagged_processes(tag, var=TAG_VAR))
        assert locust_running, "Locust never started"
        load.send_signal(signal.SIGTERM)
        load.communicate(timeout=30)
        assert not wait_untagged(tag), "SIGTERM of load left processes running"
    finally:
        if load.poll() is None:
            load.kill()
            load.communicate()


def _cmdline(pid: int) -> list[str]:
    try:
        return psutil.Process(pid).cmdline()
    except psutil.Error:
        return []

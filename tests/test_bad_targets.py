"""Unusable targets: one line on stderr, exit status 2, no traceback, and no process left behind.

Each misbehaving server writes its pid (and its child's, when it has one) to a file, so the
test can check afterwards that the whole group is gone, not merely that the probe returned.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mcp_tempest.fuzz.probe_command import probe_main
from mcp_tempest.fuzz.verdict_line import parse_final_line
from mcp_tempest.targets.processes import group_members
from mcp_tempest.targets.spawn_pool import free_ports

PY = sys.executable
ROOT = Path(__file__).resolve().parent.parent

# argv[1] = where to write pids; argv[2] = behaviour.
BAD = textwrap.dedent(
    """
    import os, subprocess, sys, time
    pidfile, mode = sys.argv[1], sys.argv[2]
    pids = [os.getpid()]
    if mode in ("silent", "banner", "not-ready"):
        pids.append(subprocess.Popen(["sleep", "300"]).pid)  # a grandchild in the same group
    with open(pidfile, "a") as f:  # append: the probe may start a spare process too
        f.write(" ".join(map(str, pids)) + "\\n")
    if mode == "exit":
        sys.stderr.write("bad-server: cannot open config.toml\\n")
        sys.exit(3)
    if mode == "banner":
        print("*** Acme MCP server v2 ***", flush=True)
    if mode == "gibberish":
        for line in sys.stdin:
            print('{"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "go away"}}', flush=True)
    time.sleep(300)
    """
)


def bad(tmp_path: Path, mode: str, kind: str = "stdio") -> tuple[str, Path]:
    pidfile = tmp_path / f"{mode}.pids"
    cmd = f"{PY} -c {shlex.quote(BAD)} {pidfile} {mode}"
    return (f"http+spawn:{cmd} {{port}}" if kind == "http+spawn" else f"stdio:{cmd}"), pidfile


def read_pids(pidfile: Path) -> list[int]:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if pidfile.exists() and pidfile.read_text().strip():
            return [int(p) for p in pidfile.read_text().split()]
        time.sleep(0.02)
    raise AssertionError(f"{pidfile} was never written")


def gone(pid: int) -> bool:
    """Not running: no /proc entry, or a zombie waiting for a parent that is not us."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2] in "ZX"


def assert_nothing_left(pids: list[int], pidfile: Path | None = None) -> None:
    if pidfile is not None:  # every process that started, including any spare
        pids = sorted(set(pids) | {int(p) for p in pidfile.read_text().split()})
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and not all(gone(p) for p in pids):
        time.sleep(0.02)
    assert all(gone(p) for p in pids), [p for p in pids if not gone(p)]
    assert all(group_members(p) == [] for p in pids)


def run(capsys: pytest.CaptureFixture[str], target: str, *extra: str) -> tuple[int, str, float]:
    started = time.monotonic()
    code = probe_main(["--target", target, "--timeout", "1", *extra])
    elapsed = time.monotonic() - started
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("probe: "), err
    said = parse_final_line(out)  # stdout: the last line alone, the same reason in its verdict
    assert out.count("\n") == 1 and said is not None and said.word == "ERROR", out
    assert said.why.removeprefix("unusable target: ") == err.strip().removeprefix("probe: "), (said, err)
    return code, err.strip(), elapsed


def test_missing_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, err, _ = run(capsys, "stdio:/definitely/not/a/server --stdio")
    assert code == 2
    assert err == "probe: cannot start 'stdio:/definitely/not/a/server --stdio': command not found: /definitely/not/a/server"


def test_server_that_exits_at_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target, pidfile = bad(tmp_path, "exit")
    code, err, elapsed = run(capsys, target)
    assert code == 2
    assert err == "probe: target exited with status 3 before answering (stderr: bad-server: cannot open config.toml)"
    assert elapsed < 5
    assert_nothing_left(read_pids(pidfile), pidfile)


def test_server_that_never_answers(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target, pidfile = bad(tmp_path, "silent")
    code, err, elapsed = run(capsys, target)
    assert code == 2
    assert err == "probe: no answer from the target within 1 s to server/discover or initialize"
    assert elapsed < 8  # discover 1 s + initialize 1 s + reaping
    assert_nothing_left(read_pids(pidfile), pidfile)


def test_server_that_prints_a_banner_and_never_answers(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target, pidfile = bad(tmp_path, "banner")
    code, err, _ = run(capsys, target)
    assert code == 2
    assert err == (
        "probe: target wrote non-JSON on stdout and never answered: '*** Acme MCP server v2 ***' "
        "(STDIO-03: stdout must carry only MCP messages)"
    )
    assert_nothing_left(read_pids(pidfile), pidfile)


def test_server_that_answers_in_no_known_era(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target, pidfile = bad(tmp_path, "gibberish")
    code, err, _ = run(capsys, target)
    assert code == 2
    assert "speaks no known MCP era" in err
    assert_nothing_left(read_pids(pidfile), pidfile)


def test_http_url_with_nothing_listening(capsys: pytest.CaptureFixture[str]) -> None:
    port = free_ports(1)[0]
    code, err, elapsed = run(capsys, f"http://127.0.0.1:{port}/mcp")
    assert code == 2
    assert err == f"probe: cannot reach the target: connection refused: http://127.0.0.1:{port}/mcp"
    assert elapsed < 3


def test_spawned_http_instance_that_exits(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target, pidfile = bad(tmp_path, "exit", "http+spawn")
    code, err, _ = run(capsys, target)
    assert code == 2
    assert "exited with status 3 before it was ready" in err and "cannot open config.toml" in err
    assert_nothing_left(read_pids(pidfile), pidfile)


def test_spawned_http_instance_that_never_listens(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target, pidfile = bad(tmp_path, "not-ready", "http+spawn")
    code, err, elapsed = run(capsys, target)
    assert code == 2
    assert "not ready at http://127.0.0.1:" in err and "after 1 s" in err
    assert elapsed < 6
    assert_nothing_left(read_pids(pidfile), pidfile)


@pytest.mark.parametrize(
    "target, fragment",
    [
        ("http://192.0.2.7:8080/mcp", "refusing non-loopback host '192.0.2.7'"),
        ("mcp://127.0.0.1/", "unknown target"),
        ("http+spawn:server --no-port", "must contain {port}"),
    ],
)
def test_bad_target_text(capsys: pytest.CaptureFixture[str], target: str, fragment: str) -> None:
    code, err, _ = run(capsys, target)
    assert code == 2 and fragment in err


def test_as_a_real_process_no_traceback_and_nothing_left(tmp_path: Path) -> None:
    """The same contract seen from outside: the probe's own process exits 2 with one line."""
    target, pidfile = bad(tmp_path, "silent")
    out = subprocess.run(
        [PY, "-m", "mcp_tempest.fuzz.probe_command", "--target", target, "--timeout", "1"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )
    assert out.returncode == 2
    assert out.stdout == ("probe: no era: ERROR (unusable target: no answer from the target within 1 s to "
                          "server/discover or initialize)\n")
    assert out.stderr.splitlines() == ["probe: no answer from the target within 1 s to server/discover or initialize"]
    assert_nothing_left(read_pids(pidfile), pidfile)

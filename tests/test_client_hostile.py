"""Hostile clients under client mode (tests/hostile_clients/): what they print, send or leave
behind is bounded and owned as a server's would be (fuzz/client/runner.py, targets/processes.py)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

import psutil
import pytest
from process_support import end_test_processes, marked

from mcp_tempest.fuzz.client import stub
from mcp_tempest.fuzz.client.case import ClientCase
from mcp_tempest.fuzz.client.runner import STDOUT_CAP, ClientCommand, run_case
from mcp_tempest.fuzz.client.stub import LINE_CAP
from mcp_tempest.fuzz.oracle.client_rules import judge_client

PY = sys.executable
ROOT = Path(__file__).resolve().parent.parent
CLIENTS = ROOT / "tests" / "hostile_clients"


def command(name: str, *mode: str) -> ClientCommand:
    return ClientCommand.parse(" ".join([PY, str(CLIENTS / name), *mode, "{server}"]))




def _wait_gone(marker: str, seconds: float = 15.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while marked(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return marked(marker)


def _bounded_run(cmd: ClientCommand, timeout: float) -> tuple[list, int, float]:
    tracemalloc.start()
    try:
        started = time.monotonic()
        transcript = run_case(cmd, ClientCase(), timeout=timeout)
        took = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return transcript.events, peak, took


def test_a_client_flooding_its_stdout_costs_a_bounded_read_and_its_readings_are_kept() -> None:
    events, peak, took = _bounded_run(command("flood_stdout.py"), timeout=3)
    assert took < 10, took
    assert peak < 4 * STDOUT_CAP + 64 * 2**20, peak  # imports included; unbounded it was GBs
    over = [e for e in events if e.kind == "oversize"]
    assert over and "printed" in over[0].note
    assert [e.message["step"] for e in events if e.kind == "reading"] == ["server/discover"]
    assert any(e.kind == "timeout" for e in events)


@pytest.mark.parametrize("mode", ["lines", "line"])
def test_a_client_flooding_its_server_is_logged_within_the_caps(mode: str) -> None:
    events, peak, took = _bounded_run(command("flood_server.py", mode), timeout=4)
    assert took < 12, took
    assert peak < 2 * (stub.LOG_CAP + stub.LINE_CAP) + 64 * 2**20, peak
    kept = sum(len(e.raw or b"") for e in events if e.proc > 0)
    assert kept <= stub.LOG_CAP, kept
    if mode == "line":
        assert not any(e.kind == "recv" and e.message and e.message.get("id") == 2 for e in events)
        assert any(e.kind == "oversize" for e in events if e.proc > 0)
    else:  # a client that never reads its answers is throttled by its own full pipe
        assert sum(1 for e in events if e.kind == "recv") > 16


def test_a_client_that_leaves_a_daemon_holding_its_stdout_does_not_hold_the_run() -> None:
    marker = f"tempest-client-daemon-{uuid.uuid4().hex}"
    os.environ["HOSTILE_MARKER"] = marker
    try:
        events, _, took = _bounded_run(command("daemonizing.py", "leave"), timeout=5)
    finally:
        del os.environ["HOSTILE_MARKER"]
    assert took < 5, took  # the client exits at once; its daemon's stdout is not waited for
    assert not any(e.kind == "timeout" for e in events)
    assert not _wait_gone(marker, 5), "the client's daemon outlived its run"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killing_the_harness_leaves_neither_the_client_nor_its_daemon(tmp_path: Path, sig: int) -> None:
    marker = f"tempest-client-daemon-{uuid.uuid4().hex}"
    env = {**os.environ, "HOSTILE_MARKER": marker}
    harness = subprocess.Popen(
        [PY, "-m", "mcp_tempest.fuzz.cli", "fuzz-client", "--client", f"{PY} {CLIENTS / 'daemonizing.py'} stay {{server}}",
         "--max-examples", "3", "--seed", "1", "--timeout", "60", "--out", str(tmp_path / "out")],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not marked(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marked(marker), "the client's daemon never started"
        client = [p for p in marked(str(CLIENTS / "daemonizing.py"))]
        harness.send_signal(sig)
        harness.wait(timeout=15)
        assert not _wait_gone(marker), "the client's daemon outlived the harness"
        assert not [p for p in client if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
        # its stub's directory, which a killed harness cannot remove, goes with the next run
        run_case(command("careless.py"), ClientCase(), timeout=10)
        assert not list(Path(tempfile.gettempdir()).glob(f"tempest-client-{harness.pid}-*"))
    finally:
        end_test_processes(harness, marker)
    assert b"Traceback" not in (harness.stderr.read() if harness.stderr else b"")


def test_a_careless_client_is_found_for_every_missing_meta_field_and_its_null_id() -> None:
    transcript = run_case(command("careless.py"), ClientCase(), timeout=10)
    found = {(v.rule, v.title) for v in judge_client(transcript)}
    assert ("RPC-04", "a request with a null id") in found
    assert {t for r, t in found if r == "META-04"} == {
        "a request without params._meta", "a request without _meta protocolVersion",
        "a request without _meta clientCapabilities"}


def test_a_careless_client_campaign_files_meta_04_beside_rpc_04(tmp_path: Path) -> None:
    out = subprocess.run(
        [PY, "-m", "mcp_tempest.fuzz.cli", "fuzz-client", "--client", f"{PY} {CLIENTS / 'careless.py'} {{server}}",
         "--max-examples", "2", "--seed", "1", "--timeout", "10", "--out", str(tmp_path / "out")],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr
    rules = [line.split()[2:4] for line in out.stdout.splitlines() if line.strip().startswith("finding ")]
    assert ["MUST", "RPC-04"] in rules and rules.count(["MUST", "META-04"]) == 3, out.stdout


@pytest.mark.parametrize(("mode", "note"), [("body", "413"), ("head", "431"), ("idle", None)])
def test_a_hostile_http_client_is_refused_within_the_caps_and_leaves_no_task_behind(mode: str, note: str | None) -> None:
    import threading

    cmd = ClientCommand.parse(f"{PY} {CLIENTS / 'http_flood.py'} {mode} {{url}}")
    def ours() -> list[str]:  # the harness's own long-lived threads (spawner, stderr pump) excepted
        return [t.name for t in threading.enumerate() if not t.name.startswith("mcp-tempest-")]

    before = ours()
    events, peak, took = _bounded_run(cmd, timeout=10)
    assert took < 10, took  # refused at the cap, not read for the client's whole lifetime
    assert peak < 2 * LINE_CAP + 64 * 2**20, peak
    if note is not None:
        assert any(e.kind == "oversize" and note in e.note for e in events), [e.kind for e in events]
    else:
        assert [e.message["step"] for e in events if e.kind == "reading"] == ["server/discover"]
        assert any(e.kind == "send" and e.note.startswith("reply") for e in events)
    deadline = time.monotonic() + 5
    while len(ours()) > len(before) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ours() == before  # the portal's thread ended, and with it every connection task


# --- a client that sends junk in a loop (issue 32): what is kept of it is bounded, and the cut is said ---

JUNK = CLIENTS / "junk_bodies.py"


@pytest.mark.parametrize("placeholder", ["{url}", "{server}"])
def test_a_client_sending_junk_in_a_loop_is_recorded_as_bounded_excerpts_and_the_cut_is_said(placeholder: str) -> None:
    """200 bodies of 64 KiB (12.5 MiB): the first NOISE_EVENT_CAP are kept as excerpts with their
    length and digest, the rest counted; unbounded, all of it was kept up to the 16 MiB log cap,
    which every finding's repro file and the report then carried (--out 98 MB)."""
    transcript = run_case(ClientCommand.parse(f"{PY} {JUNK} 200 {placeholder}"), ClientCase(), timeout=20)
    events = transcript.events
    assert not any(e.kind == "timeout" for e in events)  # all 200 read and answered: the client finished
    junk = [e for e in events if e.proc > 0 and e.kind == "noise"]
    assert len(junk) == stub.NOISE_EVENT_CAP, len(junk)
    assert all(len(e.raw or b"") <= stub.NOISE_KEEP_BYTES + 4 for e in junk)
    assert re.fullmatch(r"65536 bytes, sha256 [0-9a-f]{16}\.\.\.; the first \d+ kept", junk[0].note), junk[0].note
    assert len({e.note for e in junk}) == len(junk)  # the digests tell the bodies apart
    kept = sum(len(e.raw or b"") for e in events if e.proc > 0)
    assert kept < 2 * stub.NOISE_EVENT_CAP * stub.NOISE_KEEP_BYTES, kept
    cut = [e.note for e in events if e.kind == "error" and e.note.startswith("not recorded:")]
    assert cut == [f"not recorded: 136 more client frames ({136 * 65536} bytes as sent), read and answered as usual: "
                   f"136 of them not JSON, past the {stub.NOISE_EVENT_CAP} such frames recorded"], cut
    # the excerpts keep each body's verdicts: not JSON (RPC-01) and not UTF-8 (RPC-02)
    assert {"RPC-01", "RPC-02"} <= {v.rule for v in judge_client(transcript)}


def test_an_excerpt_keeps_the_frames_utf8_verdict() -> None:
    """RPC-02 reads the excerpt: a cut inside a character must not make UTF-8 look broken, and a
    broken byte past the cut must not be lost."""
    for raw in (b"a" * (stub.NOISE_KEEP_BYTES - 1) + "é".encode() * 10, "é".encode() * stub.NOISE_KEEP_BYTES,
                b"a" * 2 * stub.NOISE_KEEP_BYTES + b"\xff" + b"b" * 5, b"\xff" * 2 * stub.NOISE_KEEP_BYTES,
                b"b" * (stub.NOISE_KEEP_BYTES - 1) + b"\xe9\x80" + b"c" * 100):
        head, note = stub.noise_excerpt(raw)
        assert len(head) <= stub.NOISE_KEEP_BYTES + 4 and note.startswith(f"{len(raw)} bytes, sha256 ")
        assert _utf8(head) == _utf8(raw), (raw[:8], note)
    assert stub.noise_excerpt(b"short junk") == (b"short junk", "")


def test_the_client_caps_are_the_ones_a_servers_noise_is_held_to() -> None:
    from mcp_tempest.targets import connection, stdio_driver

    assert stub.NOISE_KEEP_BYTES == connection.NOISE_KEEP_BYTES
    assert stub.NOISE_EVENT_CAP == stdio_driver.NOISE_EVENT_CAP


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pytest.mark.nightly  # about 70 s: ten 5-second runs of a client flooding its server with junk
def test_a_junk_flood_campaign_stays_under_300_mb_and_writes_a_few_mb(tmp_path: Path) -> None:
    """The issue's measurement: `fuzz-client` against a client POSTing 64 KiB junk bodies in a
    loop was 340 MB resident with a 98 MB --out (408 MB and 130 MB here before the fix)."""
    out = tmp_path / "out"
    harness = subprocess.Popen(
        [PY, "-m", "mcp_tempest.fuzz.cli", "fuzz-client", "--client", f"{PY} {JUNK} {{url}}", "--max-examples", "10",
         "--seed", "1", "--timeout", "5", "--shrink-time", "5", "--out", str(out)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while harness.poll() is None:
        try:
            status = Path(f"/proc/{harness.pid}/status").read_text()
            peak = max(peak, int(next(line for line in status.splitlines() if line.startswith("VmRSS:")).split()[1]))
        except (OSError, ValueError, StopIteration):
            pass
        time.sleep(0.05)
    stdout, stderr = harness.communicate()
    assert harness.returncode == 1 and "Traceback" not in stderr, stdout + stderr
    written = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    assert peak < 300 * 1024, f"peak RSS {peak // 1024} MB"
    assert written < 8 * 2**20, f"--out {written / 2**20:.1f} MB"
    assert "not recorded:" in (out / "report.html").read_text()

"""SIGTERM and SIGINT always stop a campaign within seconds, keeping what it found: the handler
only records the request and the harness stops where it can (targets/stop_request.py). Before,
the handler raised KeyboardInterrupt into whatever ran, and one in nine SIGTERMs landed in
Hypothesis' gc callback, which drops exceptions: the campaign ran on until killed."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from fuzz_support import CLI, processes_mentioning, reference_http
from process_support import default_sigint

HANG = Path(__file__).parent / "hostile" / "once_then_hang.py"

# A signal that arrives while a gc callback runs (Hypothesis installs one): raised from the
# handler, KeyboardInterrupt is dropped there ("Exception ignored in: ..."); recorded, it stops.
IN_GC_CALLBACK = """
import gc, os, signal, time
from mcp_tempest.targets import stop_request

def callback(phase, info):
    if phase == "start" and not fired:
        fired.append(1)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler runs here, inside the callback

fired = []
with stop_request.honoured():
    gc.callbacks.append(callback)
    gc.collect()
    gc.callbacks.remove(callback)
    try:
        stop_request.stop_point()
        print("ran on")
    except KeyboardInterrupt:
        print("stopped")
"""


def test_a_signal_inside_a_gc_callback_still_stops() -> None:
    proc = subprocess.run([sys.executable, "-c", IN_GC_CALLBACK], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "stopped", proc.stdout + proc.stderr
    assert "Exception ignored" not in proc.stderr


def _start(target: str, out: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, "fuzz", "--target", target, "--duration", "300", "--seed", "3", "--out", str(out),
         "--no-database", "--no-coverage", "--progress", "lines", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint,
    )


def _stop(proc: subprocess.Popen[str], sig: int, *, within: float) -> tuple[str, str, float]:
    began = time.monotonic()
    proc.send_signal(sig)
    try:
        stdout, stderr = proc.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        raise AssertionError(f"still running {within:.0f} s after the signal:\n{stdout[-2000:]}{stderr[-2000:]}") \
            from None
    return stdout, stderr, time.monotonic() - began


@pytest.mark.parametrize("delay", [1.0, 2.2, 3.4, 4.6])
def test_sigterm_stops_an_http_spawn_campaign_every_time(tmp_path: Path, delay: float) -> None:
    db = tmp_path / "s.sqlite3"
    out = tmp_path / "out"
    proc = _start(reference_http(db, "missing-result-type"), out, "--properties", "valid,framing,history")
    try:
        time.sleep(delay)  # the signal lands at a different point of the campaign each time
        stdout, stderr, took = _stop(proc, signal.SIGTERM, within=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode in (1, 130), stdout + stderr  # 1: findings; 130: interrupted before any
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    if (out / "findings.json").exists():
        assert orjson.loads((out / "findings.json").read_bytes())["interrupted"] is True
    time.sleep(0.5)
    assert not processes_mentioning(str(db)), "the stop left a server process running"


def test_a_stop_does_not_wait_out_a_long_timeout(tmp_path: Path) -> None:
    """A target that stopped answering, a --timeout of 120 s: the stop comes within seconds."""
    out = tmp_path / "out"
    target = "stdio:" + shlex.join([sys.executable, str(HANG)])
    proc = _start(target, out, "--properties", "valid", "--timeout", "120")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "fuzz: seed" not in (proc.stdout.readline() if proc.stdout else ""):
            pass
        time.sleep(1.5)  # now waiting for an answer that never comes
        stdout, stderr, took = _stop(proc, signal.SIGINT, within=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert took < 10, f"the stop took {took:.1f} s"
    assert "Traceback" not in stderr, stderr

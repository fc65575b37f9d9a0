"""Helpers for tests that start a harness process and signal it, and look for what it left.

Why: a suite started as a background job (`pytest &`, some CI runners) inherits SIGINT as
ignored, and a Python started with SIGINT ignored never raises KeyboardInterrupt. Tests that
send SIGINT therefore set the disposition of what they start themselves.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable

import psutil


def default_sigint() -> None:
    """`preexec_fn` for a child that must react to SIGINT (and SIGTERM) as a foreground one would."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def marked(marker: str) -> list[int]:
    """Pids of running processes (not this one) with `marker` in their command line: how a test
    finds a daemon it planted, whatever session or environment the daemon gave itself."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            if any(marker in part for part in proc.info["cmdline"] or ()) and proc.pid != os.getpid():
                found.append(proc.pid)
    return found


def end_test_processes(harness: subprocess.Popen[bytes] | subprocess.Popen[str], marker: str) -> None:
    """A test's `finally`: the harness it started, and any marked daemon a failed check left."""
    if harness.poll() is None:
        harness.kill()
        harness.wait()
    for pid in marked(marker):
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()


def run_measured(argv: list[str], *, timeout: float, env: dict[str, str] | None = None,
                 cwd: str | os.PathLike[str] | None = None) -> tuple[int, str, str, float, float]:
    """Run `argv`; its exit status, stdout, stderr, seconds taken and peak RSS in MB (sampled)."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                            env=env, preexec_fn=default_sigint)
    peak = 0
    ps = psutil.Process(proc.pid)
    try:
        while proc.poll() is None and time.monotonic() - start < timeout:
            try:
                peak = max(peak, ps.memory_info().rss)
            except psutil.Error:
                break
            time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err, time.monotonic() - start, peak / 2**20


def interrupt_when(proc: subprocess.Popen[str], ready: Callable[[], bool], *, settle: float,
                   wait: float = 60.0) -> tuple[str, str]:
    """Ctrl-C `proc` once `ready()` holds (or `wait` seconds passed, or it ended) and `settle`
    more seconds went by, as a user presses it mid-run; its output. Killed if it will not end."""
    try:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and proc.poll() is None and not ready():
            time.sleep(0.05)
        time.sleep(settle)
        proc.send_signal(signal.SIGINT)
        return proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


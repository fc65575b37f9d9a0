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
